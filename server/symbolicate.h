/* Symbolication of a parsed backtrace against the store, written as the
 * /v1/symbolicate response. Shared by the HTTP route and the fuzz target. */
#ifndef SYMD_SYMBOLICATE_H
#define SYMD_SYMBOLICATE_H

#include "../parser/backtrace.h"
#include "../store/store.h"
#include "../util/dynbuf.h"
#include "../util/err.h"
#include "../util/jsonw.h"

typedef struct {
    uint64_t symbolicated, missing_image, unknown_image, no_symbol;
} symbolicate_counts;

/* ---- the answer as data ---- */

typedef enum {
    SYM_SYMBOLICATED,  /* a stored image answered */
    SYM_NO_SYMBOL,     /* stored image, no symbol there */
    SYM_MISSING_IMAGE, /* the frame's image was never uploaded */
    SYM_UNKNOWN_IMAGE, /* the address lies in no listed image */
} sym_status;

/* One output frame of /v1/symbolicate: a request frame gives one level, or
 * with line data one per inlined level (innermost first, inlined true) and
 * then the function's. Strings (NULL when absent) point into the result's
 * images and names, or into the request: both must outlive the level. */
typedef struct {
    sym_status status;
    uint64_t address;          /* as sent */
    const char *image, *uuid, *arch;
    bool has_vmaddr, has_sym_addr;
    uint64_t vmaddr, sym_addr, offset;
    const char *symbol, *mangled; /* both or neither */
    const char *file;
    uint32_t line, column;
    bool inlined;
} sym_level;

/* A request image as answered. */
typedef struct {
    char uuid[37];
    const char *arch, *name; /* NULL when neither the store nor the request says */
    bool found, placed;
    uint64_t load_address;   /* when placed */
} sym_image;

typedef struct {
    sym_level *levels;
    size_t nlevels;
    size_t *frame_first;  /* per request frame (threads in order): its first level */
    size_t *frame_count;  /* and how many */
    sym_image *images;    /* per request image */
    size_t nimages;
    /* private */
    struct store *st;
    store_loaded **loaded;
    char **made;          /* names demangled for this answer */
    size_t nmade, made_cap, levels_cap;
} sym_result;

/* Symbolicates req into out: every frame's levels and every image's
 * status, with the images it found held until sym_result_free. Errors as
 * symbolicate's. counts may be NULL. */
symd_status symbolicate_levels(store *s, const bt_request *req, sym_result *out,
                               symbolicate_counts *counts, symd_err *err);
void sym_result_free(sym_result *r);

/* What symbolicate_write_level leaves out (the caller writes its own). */
#define SYM_OMIT_NAMES 1u  /* symbol, mangled */
#define SYM_OMIT_OFFSET 2u /* offset */
#define SYM_OMIT_PLACE 4u  /* file, line, column */
#define SYM_OMIT_INLINED 8u /* inlined (the caller writes its own) */
/* A level's members as /v1/symbolicate writes them, without the braces:
 * "address" first (no comma before it), "inlined" last. */
void symbolicate_write_level(jsonw *w, const sym_level *l, unsigned omit);

/* Writes the response JSON for req into out. Errors: SYMD_E_INVALID for a
 * request the store cannot answer as asked (an arch needed), SYMD_E_TOO_LARGE
 * when out's limit is hit, store errors otherwise. counts may be NULL. */
symd_status symbolicate(store *s, const bt_request *req, dynbuf *out,
                        symbolicate_counts *counts, symd_err *err);

/* The address a lookup uses for a frame address as sent (answers keep the
 * address as sent). arch is the image's ("arm64e", "x86_64", ...), else the
 * report's or request's; NULL or "" when not known.
 *   - kernel addresses (>= 0xFFFF000000000000) are left alone;
 *   - arm64, arm64e, arm64_32: pointer-authentication bits are stripped,
 *     addr & 0x0000007FFFFFFFFF (39-bit user VA: every Mach-O image of iOS
 *     and of macOS on Apple Silicon is loaded below 2^39);
 *   - any other arch: a non-canonical address (bits 47..63 not all zero)
 *     becomes addr & 0x00007FFFFFFFFFFF;
 *   - arch unknown: a non-canonical address is taken for a PAC-signed arm64
 *     one (no other platform Apple ships puts bits there in user space) and
 *     masked to 39 bits; a canonical one is left alone (x86_64 loads the
 *     shared cache at 0x7fff...);
 *   - 32-bit ARM (arm, armv6, armv7*, thumb*): bit 0, the Thumb state bit of
 *     return addresses, is cleared. */
uint64_t symbolicate_lookup_address(uint64_t addr, const char *arch);

/* bt_parse + symbolicate; full_names: Swift names in their full form
 * (symbol), instead of the simplified one Xcode shows. */
symd_status symbolicate_json(store *s, const char *body, size_t len, bool full_names,
                             dynbuf *out, symbolicate_counts *counts, symd_err *err);

#endif

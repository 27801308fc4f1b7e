/* Mach-O reader: fat headers, thin slices, load commands, symbols.
 *
 * Everything here reads untrusted bytes: callers pass (buf, len), nothing
 * does I/O, and every offset, size and count from the file is checked against
 * the bytes that hold it before it is used or allocated for. */
#ifndef SYMD_MACHO_H
#define SYMD_MACHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

#define MACHO_MAX_SLICES 64

/* One architecture inside a file: the whole file for a thin Mach-O. */
typedef struct {
    uint32_t cputype, cpusubtype;
    uint64_t offset, size; /* byte range in the file, validated */
} macho_slice;

/* Splits a file into its slices. A thin file yields one slice covering it
 * all. Fat headers are checked as a table: every slice inside the file, past
 * the header, not overlapping another, no architecture twice.
 * Returns SYMD_E_NOT_MACHO when the magic is neither fat nor Mach-O. */
symd_status macho_parse_slices(const uint8_t *buf, size_t len,
                               macho_slice out[MACHO_MAX_SLICES], size_t *n,
                               symd_err *err);

typedef struct {
    char segname[17], sectname[17];
    uint64_t addr, size;
    uint32_t offset, flags;
} macho_section;

typedef struct {
    char segname[17];
    uint64_t vmaddr, vmsize, fileoff, filesize;
} macho_segment;

typedef enum {
    MACHO_KIND_OBJECT, MACHO_KIND_EXECUTABLE, MACHO_KIND_DYLIB,
    MACHO_KIND_BUNDLE, MACHO_KIND_DSYM, MACHO_KIND_DYLINKER,
    MACHO_KIND_KEXT, MACHO_KIND_OTHER,
} macho_kind;

/* A parsed thin slice. Points into the caller's buffer, which must outlive
 * it; owns only segs, sects, fstarts and dylib_id. */
typedef struct {
    const uint8_t *buf;
    size_t len;
    bool is64;
    uint32_t cputype, cpusubtype, filetype;
    macho_kind kind;
    bool has_uuid;
    uint8_t uuid[16];
    char *dylib_id; /* LC_ID_DYLIB install name, or NULL */

    macho_segment *segs;
    size_t nsegs;
    macho_section *sects; /* in load-command order: n_sect 1 is sects[0] */
    size_t nsects;
    size_t segs_cap, sects_cap;
    int text_seg; /* index of __TEXT (or the first segment), -1 if none */

    bool has_symtab;
    uint32_t symoff, nsyms, stroff, strsize; /* validated against len */

    uint64_t *fstarts; /* LC_FUNCTION_STARTS as vmaddrs, ascending */
    size_t nfstarts;
} macho_image;

/* Parses one thin slice. On failure img holds nothing to free. */
symd_status macho_parse_image(const uint8_t *buf, size_t len, macho_image *img,
                              symd_err *err);
void macho_image_free(macho_image *img);

/* "arm64", "arm64e", "x86_64", "armv7", "i386", … or NULL when unknown. */
const char *macho_arch_name(uint32_t cputype, uint32_t cpusubtype);
const char *macho_kind_name(macho_kind k);

uint64_t macho_text_vmaddr(const macho_image *img);
uint64_t macho_text_vmsize(const macho_image *img);

/* A function symbol: a non-stab N_SECT entry inside an executable section. */
typedef struct {
    uint64_t addr;
    const char *name; /* points into the image's string table, NUL-terminated;
                         one leading '_' already skipped */
    bool external;
    uint32_t index;    /* position in the symbol table */
    uint64_t sect_end; /* end of the section holding it: no symbol runs past */
} macho_symbol;

/* Collects the function symbols of img, unsorted. The caller frees *out. */
symd_status macho_function_symbols(const macho_image *img, macho_symbol **out,
                                   size_t *n, symd_err *err);

/* True for sections holding code (S_ATTR_PURE_INSTRUCTIONS or
 * S_ATTR_SOME_INSTRUCTIONS). */
bool macho_section_is_code(const macho_section *s);

#endif

/* A crash report symbolicated against the store, and its renderings: the
 * /v1/crashes JSON and Apple's text layout (as Xcode shows a symbolicated
 * log). */
#ifndef SYMD_CRASHSYM_H
#define SYMD_CRASHSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../parser/crash.h"
#include "../util/dynbuf.h"
#include "../util/err.h"

/* One output level of a frame: an inlined call, or the function holding the
 * address (the last level). */
typedef struct {
    const char *symbol, *mangled; /* NULL when unknown */
    bool has_offset;
    uint64_t offset;              /* from the function's start (last level only) */
    const char *file;             /* NULL when unknown */
    uint32_t line, column;        /* 0 when unknown */
    bool inlined;
} crash_level;

typedef enum {
    CSYM_SYMBOLICATED,   /* an uploaded image answered */
    CSYM_NO_SYMBOL,      /* uploaded image, no symbol there */
    CSYM_MISSING_IMAGE,  /* the image was never uploaded: levels are the report's own */
    CSYM_UNKNOWN_IMAGE,  /* the address lies in no image */
} crash_sym_status;

typedef struct {
    crash_sym_status status;
    const char *image;    /* image name, NULL when unknown */
    crash_level *levels;  /* innermost first; nlevels 0 when nothing is known */
    size_t nlevels;
} crash_symframe;

typedef struct {
    crash_symframe *frames; /* every frame of the report, thread after thread,
                               in report order (report->total_frames) */
    bool *image_found;      /* per report image: uploaded */
    bool *image_debug_info; /* per report image: its dSYM was uploaded */
    char *signature;        /* the group key (see crash_symbolicate) */
    /* private: strings and arrays the above point into */
    void *arena;
} crash_symbolication;

struct store;

/* Symbolicates every frame of r through the /v1/symbolicate core (adjust
 * auto: each thread's first frame exact, the rest return addresses). Frames
 * of images never uploaded keep the report's own symbol, offset and
 * file:line (status CSYM_MISSING_IMAGE); uploaded images win over the
 * report's text. The signature is the first symbolicated frame of the app's
 * own image in the crashed thread (its outer function), else the first
 * frame with a symbol, else "image + 0xoffset" of the first frame. Free with
 * crash_symbolication_free. */
symd_status crash_symbolicate(struct store *st, const crash_report *r,
                              crash_symbolication *out, symd_err *err);
void crash_symbolication_free(crash_symbolication *s);

/* The /v1/crashes JSON of a symbolicated report; id < 0 writes "id": null
 * (not stored). */
symd_status crash_write_json(const crash_report *r, const crash_symbolication *s,
                             int64_t id, dynbuf *out, symd_err *err);

/* Writes the report in Apple's text layout into out: the header (a text
 * report's own header lines; for a JSON .ips, the same fields in the text
 * layout), every thread with its frames, the crashed thread's state when
 * known, and "Binary Images:". With s, each frame with levels is written
 * "N  image  0xPC symbol + offset (file:line)" and each inlined level on a
 * line of its own before it, the way Xcode prints a symbolicated log; with s
 * NULL (or a frame without levels) frames keep what the report said.
 * Errors: SYMD_E_TOO_LARGE when out's limit is hit. */
symd_status crash_render_text(const crash_report *r, const crash_symbolication *s,
                              dynbuf *out, symd_err *err);

#endif

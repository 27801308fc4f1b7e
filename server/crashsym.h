/* A crash report symbolicated against the store, and its renderings: the
 * /v1/crashes JSON and Apple's text layout (as Xcode shows a symbolicated
 * log). */
#ifndef SYMD_CRASHSYM_H
#define SYMD_CRASHSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../parser/crash.h"
#include "../store/store.h"
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

/* Why an image of a report is or is not symbolicated. */
typedef enum {
    CIMG_MISSING,          /* never uploaded (or no UUID to find it by) */
    CIMG_FOUND,            /* uploaded, every frame of it within its __TEXT */
    CIMG_FOUND_OTHER_ARCH, /* its UUID is stored, but only under another arch */
    CIMG_OUTSIDE_TEXT,     /* uploaded, but a frame of it lies beyond its __TEXT */
} crash_image_status;

/* "missing", "found", "found_other_arch", "outside_text". */
const char *crash_image_status_name(crash_image_status s);

typedef struct {
    crash_symframe *frames; /* every frame of the report, thread after thread,
                               in report order (report->total_frames) */
    bool *image_found;      /* per report image: uploaded (found or outside_text) */
    crash_image_status *image_status; /* per report image */
    bool *image_debug_info; /* per report image: its dSYM was uploaded */
    bool *image_system;     /* per report image: the OS's (the report says so,
                               crash_classify_images, or symd import stored it) */
    /* per report image of a minidump holding a walked frame: why the stack
     * walker had no unwind rows for it (store_unwind_missing: "binary
     * needed for unwinding" when only its dSYM is stored), NULL when it had
     * them, is not stored, or the report is no minidump (its threads came
     * walked). Static strings. */
    const char **image_unwind;
    char *signature;        /* the group key (see crash_symbolicate) */
    char *grouping_rule;    /* the grouping rule that made signature (its text), NULL
                               when the default rule did */
    /* private: strings and arrays the above point into */
    void *arena;
} crash_symbolication;

struct store;

/* The images a stored crash needs, for the missing-images list: those with
 * a UUID one of its frames lies in, and the app's own (strings borrowed
 * from r), each said the OS's as sym says (sym NULL: as the report says);
 * the app's own image is marked app unless it is the OS's (a system
 * process's binary is imported, not uploaded). *n of them; NULL when out of
 * memory. Free with free(). */
store_crash_image *crash_needed_images(const crash_report *r, const crash_symbolication *sym,
                                       size_t *n);

/* What the store keeps of a posted report: its header fields, kind and
 * bug_type, sym's signature and the original bytes (NULL: none). Every
 * string and the bytes are borrowed from r, sym and original. */
store_crash crash_store_record(const crash_report *r, const crash_symbolication *sym,
                               const uint8_t *original, size_t len);

/* The index of the app's own image in r->images: the image named like the
 * process that the report marks as the app's, else one named so that is
 * not the OS's, else the first the report marks ('+' in a text report
 * marks every image that is not the OS's: tweaks and frameworks too), else
 * any named like the process; -1 when none. */
long crash_app_image(const crash_report *r);

/* Symbolicates every frame of r through the /v1/symbolicate core. Each
 * distinct (image, address, adjustment) is looked up once, so a call tree of
 * 100,000 nodes costs its distinct addresses. Adjustment: a plain thread's
 * first frame is exact and the rest return addresses; every frame of an
 * exception or application-specific backtrace and of a kernel backtrace is
 * a return address (they come from backtrace() and frame-pointer walks);
 * in a call tree, a node with children is a return address and a leaf the
 * sampled PC. Addresses are stripped of PAC (and Thumb) bits for lookups
 * only (symbolicate_lookup_address: the image's arch, else the report's
 * code type); answers keep them as sent. A frame at address 0 is not looked
 * up (unknown_image). A frame without an image in a multi-process report is
 * placed among its own process's images. Frames of images never uploaded
 * keep the report's own symbol, offset and file:line (CSYM_MISSING_IMAGE);
 * uploaded images win over the report's text. Levels point into the
 * symbolication or into r: both must outlive their use.
 *
 * The signature (the group key; groups are per kind) by kind:
 *   - crash, fragment: the top app frame and the exception type,
 *     "-[Crasher doAbort] | EXC_CRASH (SIGABRT)": the first frame of the
 *     app's own images that is no crash machinery, in the exception
 *     backtraces and the crashed thread, by its function name or, unnamed,
 *     its "image + 0xoffset"; else the first named frame that is no
 *     machinery; else "image + 0xoffset" of the crashed thread's first
 *     frame (server/signature.c: the rule, its order and its list);
 *   - sample, spindump, hang, resource: the heaviest app frame (the app
 *     image's node with the highest count, the deepest on ties, the first in
 *     report order after that), else the heaviest frame with a name, else
 *     as a crash;
 *   - jetsam: "jetsam: " + the largest process (the report's process, else
 *     the process with the most rpages its detail names), else the reason;
 *   - panic: the first kernel frame's name, else the panic string's first
 *     line (at most 200 bytes), else as a crash.
 * full_names: Swift names of uploaded images in their full form instead of
 * Xcode's simplified one (a signature is then made of full names: groups
 * are keyed by symbolications with full_names false).
 * Free with crash_symbolication_free. */
symd_status crash_symbolicate(struct store *st, const crash_report *r, bool full_names,
                              crash_symbolication *out, symd_err *err);
void crash_symbolication_free(crash_symbolication *s);

/* The /v1/crashes JSON of a symbolicated report (s from crash_symbolicate);
 * id < 0 writes "id": null (not stored). Written as a stream: a call tree's
 * "tree" nests at most CRASH_TREE_JSON_DEPTH levels (so that readers with a
 * nesting limit, jansson's 2048 among them, can read it); deeper nodes are
 * listed under their ancestor at that level, their depth is in "frames",
 * and a warning says so. Errors: SYMD_E_TOO_LARGE at out's limit. */
#define CRASH_TREE_JSON_DEPTH 960
symd_status crash_write_json(const crash_report *r, const crash_symbolication *s,
                             int64_t id, dynbuf *out, symd_err *err);

/* The short answer of a posted report (Prefer: return=minimal): id (null
 * when not stored), format, kind, bug_type, process, bundle_id,
 * app_version, os_version, hardware_model, incident_id, exception_type,
 * crashed_thread and signature as in crash_write_json; "frames": the total
 * and the count of each status; "needs_upload": the app's own image when it
 * was never uploaded, else null; warnings and warnings_dropped as in
 * crash_write_json. Errors: SYMD_E_TOO_LARGE at out's limit. */
symd_status crash_write_summary(const crash_report *r, const crash_symbolication *s,
                                int64_t id, dynbuf *out, symd_err *err);

/* Writes the report as text into out, the way Xcode shows a symbolicated
 * log:
 *   - a report read from text (r->text_body; input is the buffer crash_parse
 *     read): the input itself, every byte as written (invalid UTF-8 and
 *     control characters aside, see crashtext.c), but for the frames an
 *     uploaded image named, whose lines are rewritten in the layout of their
 *     section: a .crash frame line "N  image  0xPC outer + off (file:line)"
 *     with a line of its own before it for each inlined level; a sample or
 *     spindump call-tree node in that tool's own layout, inlined levels in
 *     brackets on the same line; a panic backtrace line with the symbol
 *     after it. An address list "(0x1 0x2 ...)" with a symbolicated frame
 *     becomes frame lines. Frames of images never uploaded keep the report's
 *     words.
 *   - a report read from JSON (or input NULL): the fields the model holds in
 *     the text layout: header, Application Specific Information, the panic
 *     string, every section under its title (Last Exception Backtrace,
 *     Application Specific Backtrace N, Thread N Attributed, kernel
 *     backtraces; a process line before each process's threads), the
 *     crashed thread's state, processes without threads (jetsam) and the
 *     Binary Images; frames as above.
 * With s NULL every frame keeps what the report said. Only s->frames is
 * read. Errors: SYMD_E_TOO_LARGE when out's limit is hit (out unchanged). */
symd_status crash_render_text(const crash_report *r, const crash_symbolication *s,
                              const uint8_t *input, size_t input_len, dynbuf *out,
                              symd_err *err);

#endif

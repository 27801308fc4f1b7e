/* Private to parser/: the parse context and the helpers every reader of a
 * report form (text, .ips JSON, sample/spindump) shares. Every append is
 * bounded by the CRASH_MAX_* limits of crash.h, never by a count the report
 * declares. */
#ifndef SYMD_CRASH_INT_H
#define SYMD_CRASH_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "crash.h"

typedef struct {
    crash_report *r;
    symd_err *err;
    const char *in;  /* crash_parse's buf, in_len bytes: frame positions are offsets into it */
    size_t in_len;
    size_t cap_threads, cap_images, cap_regs, cap_warnings, cap_procs, cap_blocks, cap_annotations;
    size_t *cap_frames; /* per thread, parallel to r->threads (cap_threads of them) */
} cp;

symd_status cp_nomem(cp *p);
/* A NUL-terminated copy of s[0..n) into *dst (freeing what was there). */
symd_status cp_set_str(cp *p, char **dst, const char *s, size_t n);
/* Records a warning (where: "line 37", a JSON path); past CRASH_MAX_WARNINGS
 * only counted. Fails only for memory. */
symd_status cp_warn(cp *p, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "line N" warning. */
symd_status cp_warn_line(cp *p, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
symd_status cp_add_register(cp *p, const char *name, size_t nlen, const char *val, size_t vlen,
                            const char *where);
/* A zeroed thread (number -1, process -1) appended; *out points at it until
 * the next cp_new_thread. SYMD_E_TOO_LARGE past CRASH_MAX_THREADS. */
symd_status cp_new_thread(cp *p, crash_thread **out, const char *where);
/* A zeroed frame (image -1) appended to threads[t]; counts total_frames.
 * SYMD_E_TOO_LARGE past CRASH_MAX_FRAMES. */
symd_status cp_new_frame(cp *p, size_t t, crash_frame **out, const char *where);
/* A zeroed image (process -1) appended. SYMD_E_TOO_LARGE past CRASH_MAX_IMAGES. */
symd_status cp_new_image(cp *p, crash_image **out, const char *where);
/* A zeroed process (pid -1) appended. SYMD_E_TOO_LARGE past CRASH_MAX_PROCESSES. */
symd_status cp_new_process(cp *p, crash_process **out, const char *where);
/* Appends s[0..n) to the verbatim block at (at, thread), starting a new one
 * when the last block stands elsewhere; a '\n' is added after it. */
symd_status cp_add_verbatim(cp *p, crash_place at, size_t thread, const char *s, size_t n);

/* For text reports: each frame whose image is -1 gets its image by name
 * among the images (the first of that name), else the image whose range
 * holds the PC. O((F + I) log I). */
symd_status cp_resolve_text_images(cp *p);

/* The readers. */
/* A text report body[0..n) whose first line is line first_line of the input
 * (.crash, a fragment, panic text, the text body of an .ips). */
symd_status crash_parse_text(cp *p, const char *body, size_t n, size_t first_line);
/* A JSON .ips body (root) under its header line (hdr); root NULL reads the
 * header alone. */
symd_status crash_parse_ips_body(cp *p, json_t *root, json_t *hdr);
/* The top-level keys of an .ips body crash_parse_ips_body reads: values of
 * other keys are only shown, and a large one is skipped unread
 * (jsonbig_load_members). */
bool crash_ips_reads_key(const char *key);
/* Bytes of values of unknown top-level keys read (and shown) at most. */
#define IPS_UNKNOWN_BUDGET (256u << 10)
/* A body body[0..n) that does not parse as JSON (the caller has warned):
 * the header, and from the text the panic string and the fields that name
 * the report, where they can still be found. */
symd_status crash_parse_ips_broken(cp *p, const char *body, size_t n, json_t *hdr);
/* PLCrashReporter's .plcrash: "plcrash", version byte PLCRASH_VERSION, then
 * a protobuf CrashReport (crash_plcrash.c). buf starts with the magic;
 * another version is refused (SYMD_E_NOT_CRASH_REPORT). */
#define PLCRASH_MAGIC "plcrash"
#define PLCRASH_HEADER_LEN 8
#define PLCRASH_VERSION 1
symd_status crash_parse_plcrash(cp *p, const uint8_t *buf, size_t len);
/* Minidumps (crash_minidump.c): buf starts with "MDMP", or is a
 * multipart/form-data body (as Crashpad uploads) naming an
 * upload_file_minidump part. The reader: the dump's threads walked (the
 * walker crash_set_minidump_walker set), its modules, exception, system
 * and annotations, and the form fields kept as annotations. */
bool crash_looks_like_minidump(const uint8_t *buf, size_t len);
symd_status crash_parse_minidump(cp *p, const uint8_t *buf, size_t len);

/* KSCrash JSON (crash_kscrash.c): whether a parsed document has KSCrash's
 * shape (a "report" object with "id" and "version", and "crash",
 * "binary_images" or "system"; never an .ips, whose header has bug_type),
 * and the reader of one. */
bool crash_looks_like_kscrash(const json_t *root);
/* The top-level keys the KSCrash reader models (report, system, crash,
 * binary_images, recrash_report); values of the others (user, process,
 * debug...) are only kept as text, and past KSCRASH_UNKNOWN_BUDGET bytes
 * they are skipped unread (jsonbig_load_members) with a warning. */
bool crash_kscrash_reads_key(const char *key);
#define KSCRASH_UNKNOWN_BUDGET (256u << 10)
symd_status crash_parse_kscrash(cp *p, const json_t *root);
/* macOS sample / spindump / microstackshot text (call trees). */
bool crash_looks_like_sample(const char *s, size_t n);
symd_status crash_parse_sample(cp *p, const char *body, size_t n, size_t first_line);

/* MetricKit payloads, diagnostics and call-stack trees, and App Store
 * Connect diagnosticLogs (crash_metrickit.c). looks_like: the input's first
 * character is '{' or '[', its first line is no .ips header, and it names a
 * callStackTree, callStacks or diagnosticLogs. parse: want == SIZE_MAX reads
 * every diagnostic into *out (*n reports, calloc'd), else diagnostic want
 * alone (*n == 1); SYMD_E_NOT_FOUND when want is past the last. */
bool crash_looks_like_metrickit(const char *s, size_t n);
symd_status crash_parse_metrickit(const char *s, size_t n, size_t want, crash_report **out,
                                  size_t *nout, symd_err *err);

/* Kernel panics as text: a .panic file, the panic string of an .ips 151/210
 * (where is "line N" of the input or a JSON path). Reads the panic string,
 * kernel backtrace frames and kexts (UUIDs, load addresses) where given. */
bool crash_looks_like_panic(const char *s, size_t n);
symd_status crash_parse_panic_text(cp *p, const char *s, size_t n, size_t first_line);

/* Marks f as standing at line [ls, le) of the input, its replaceable part
 * [ds, de), written in style; nothing when the line is not in the input (a
 * decoded JSON string). */
void cp_frame_src(const cp *p, crash_frame *f, crash_src_style style, const char *ls,
                  const char *le, const char *ds, const char *de);
/* Whether [s, s + n) lies within the input. */
static inline bool cp_in_input(const cp *p, const char *s, size_t n)
{
    return p->in && s >= p->in && n <= p->in_len && (size_t)(s - p->in) <= p->in_len - n;
}

/* ---- text helpers ---- */

static inline bool cp_is_ws(char c) { return c == ' ' || c == '\t'; }
static inline bool cp_is_digit(char c) { return c >= '0' && c <= '9'; }
static inline bool cp_is_hex(char c)
{
    return cp_is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline void cp_trim(const char **s, const char **e)
{
    while (*s < *e && cp_is_ws(**s))
        (*s)++;
    while (*e > *s && cp_is_ws((*e)[-1]))
        (*e)--;
}

static inline bool cp_starts(const char *s, const char *e, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(e - s) >= n && memcmp(s, lit, n) == 0;
}

/* For [s, e) ending in ')': the '(' that opens it (nesting counted), or
 * NULL when the parentheses do not balance. */
const char *cp_open_paren(const char *s, const char *e);

/* Decimal digits [s, e) → *v; false when empty, not digits or > max. */
bool cp_dec_parse(const char *s, const char *e, uint64_t max, uint64_t *v);

/* The end of the run of digits starting at s. */
static inline const char *cp_digits_end(const char *s, const char *e)
{
    while (s < e && cp_is_digit(*s))
        s++;
    return s;
}

/* A hex token "0x..." ending at whitespace or e; its end, or NULL. */
const char *cp_hex_token(const char *s, const char *e);

/* Checks one line [s, e) for UTF-8 validity and NUL; false with *col (1-based)
 * at the first bad byte. */
bool cp_line_valid(const char *s, const char *e, size_t *col);

#endif

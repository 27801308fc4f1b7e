/* Apple crash reports (text .crash, .ips with a JSON or text body) in, one
 * crash model out. (buf, len) in, no I/O; every string the model holds is
 * its own copy (owned by the report, freed by crash_report_free). */
#ifndef SYMD_CRASH_H
#define SYMD_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

#define CRASH_MAX_THREADS 4096
#define CRASH_MAX_FRAMES 100000 /* over all threads */
#define CRASH_MAX_IMAGES 10000
#define CRASH_MAX_LINE 65536    /* bytes in one line of a text report */
#define CRASH_MAX_REGISTERS 256 /* in crash_report.registers */

typedef enum { CRASH_FORMAT_CRASH, CRASH_FORMAT_IPS } crash_format;

/* One frame as the report gives it. */
typedef struct {
    uint64_t address;      /* the PC */
    long image;            /* index into images, -1 when not known */
    char *image_name;      /* name on the frame line (text) or of usedImages[i]; may be NULL */
    bool has_load;         /* "0xPC 0xLOAD + off" (text) or imageOffset (ips) */
    uint64_t load_address; /* the image's load address as the frame line says */
    char *symbol;          /* the report's own symbol, NULL when none */
    bool has_symbol_offset;
    uint64_t symbol_offset;
    char *file;            /* the report's own file, NULL when none */
    uint32_t line;
} crash_frame;

typedef struct {
    long number;         /* "Thread N", or the index in threads[] (ips) */
    char *name, *queue;  /* NULL when absent */
    bool crashed;
    crash_frame *frames;
    size_t nframes;
} crash_thread;

typedef struct {
    bool has_uuid;
    uint8_t uuid[16];
    char *name;          /* NULL or "???" as written */
    char *arch;          /* "arm64", "x86_64", "armv7", ...; NULL when not given */
    char *bundle_id, *version, *path; /* NULL when absent */
    uint64_t load_address;
    bool has_end;
    uint64_t end_address; /* last byte (text) or base + size - 1 (ips) */
    bool is_app;         /* '+' prefix (macOS text), or the main binary */
} crash_image;

typedef struct {
    char *name, *value;
} crash_kv;

typedef struct {
    crash_format format;
    int bug_type;          /* ips header's bug_type, 0 for plain .crash */
    char *header_json;     /* .ips: the first line as written (owned), else NULL */
    /* What the header says (NULL when absent). */
    char *process, *bundle_id, *app_version, *os_version, *hardware_model,
        *incident_id, *code_type, *report_version, *date;
    char *exception_type, *exception_signal, *exception_codes, *termination;
    long crashed_thread;   /* index into threads, -1 when unknown */
    crash_thread *threads;
    size_t nthreads;
    crash_image *images;
    size_t nimages;
    crash_kv *registers;   /* crashed thread's state, in order; may be empty */
    size_t nregisters;
    /* Text reports: the header (everything before the first thread) and any
     * sections the model does not hold, kept verbatim for rendering. */
    char *text_header;
    size_t total_frames;
} crash_report;

/* Detects the format from the content and parses it. Errors:
 * SYMD_E_NOT_CRASH_REPORT (HTTP 415 not_a_crash_report) when the bytes are
 * not a crash report at all; SYMD_E_CORRUPT (HTTP 400
 * malformed_crash_report) for one that breaks part way, the message saying
 * where ("line 42: ..." or "threads[3].frames[7]: ..."); SYMD_E_TOO_LARGE
 * past the limits above; SYMD_E_NOMEM. On error r holds nothing.
 * format is CRASH_FORMAT_IPS whenever a JSON header line with bug_type comes
 * first (text_header is then set for a text body, NULL for a JSON one). Text
 * that is not valid UTF-8, or holds a NUL, is SYMD_E_CORRUPT ("line N:
 * invalid UTF-8 at column C"); JSON bodies are checked by jansson. */
symd_status crash_parse(const uint8_t *buf, size_t len, crash_report *r, symd_err *err);
void crash_report_free(crash_report *r);

#endif

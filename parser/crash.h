/* Apple crash reports (text .crash, .ips with a JSON or text body) in, one
 * crash model out. (buf, len) in, no I/O; every string the model holds is
 * its own copy (owned by the report, freed by crash_report_free). */
#ifndef SYMD_CRASH_H
#define SYMD_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../minidump/walk.h"
#include "../util/err.h"

#define CRASH_MAX_THREADS 4096
#define CRASH_MAX_FRAMES 100000 /* over all threads */
#define CRASH_MAX_IMAGES 10000
#define CRASH_MAX_LINE 65536    /* bytes in one line of a text report */
#define CRASH_MAX_REGISTERS 256 /* in crash_report.registers */

#define CRASH_MAX_WARNINGS 200   /* more are counted, not kept (see nwarnings_dropped) */
#define CRASH_MAX_DEPTH 4096     /* call-tree depth (sample, spindump) */
#define CRASH_MAX_PROCESSES 4096 /* stackshots, spindumps */

/* How the report is written: text (.crash, sample, spindump, panic text),
 * .ips (a JSON header line, then a JSON or text body), KSCrash JSON (an
 * in-app reporter's report: parser/crash_kscrash.c), PLCrashReporter's
 * binary .plcrash ("plcrash", a version byte, a protobuf CrashReport),
 * MetricKit and App Store Connect JSON (parser/crash_metrickit.c), or a
 * minidump (Breakpad's and Crashpad's "MDMP", raw or as Crashpad uploads
 * it in a multipart/form-data body: parser/crash_minidump.c). */
typedef enum {
    CRASH_FORMAT_CRASH,
    CRASH_FORMAT_IPS,
    CRASH_FORMAT_KSCRASH,
    CRASH_FORMAT_PLCRASH,
    CRASH_FORMAT_METRICKIT, /* MetricKit MXDiagnosticPayload JSON, a diagnostic, a callStackTree */
    CRASH_FORMAT_ASC,       /* App Store Connect diagnosticLogs JSON */
    CRASH_FORMAT_MINIDUMP,  /* a minidump, raw or in Crashpad's multipart upload */
    CRASH_FORMAT_COUNT
} crash_format;

/* "crash", "ips", "kscrash", "plcrash", "metrickit", "asc", "minidump". */
const char *crash_format_name(crash_format f);
/* crash_format_name's inverse; false for a name it does not give. */
bool crash_format_parse(const char *s, crash_format *out);

/* What the report is about. Groups and listings are per kind. */
typedef enum {
    CRASH_KIND_CRASH,    /* a process crashed (.crash, .ips 309/109) */
    CRASH_KIND_HANG,     /* stackshot / hang (.ips 288, legacy 188) */
    CRASH_KIND_RESOURCE, /* microstackshot resource report (145, 202, 206, 185) */
    CRASH_KIND_JETSAM,   /* memory pressure kill (298): processes, no frames */
    CRASH_KIND_PANIC,    /* kernel or coprocessor panic (151, 210, .panic) */
    CRASH_KIND_SAMPLE,   /* macOS `sample` output */
    CRASH_KIND_SPINDUMP, /* spindump text (incl. sleep/wake failures) */
    CRASH_KIND_FRAGMENT, /* thread sections and/or Binary Images pasted without a header */
    CRASH_KIND_LAUNCH,   /* a slow app launch (MetricKit appLaunchDiagnostics) */
    CRASH_KIND_MINIDUMP, /* a minidump: threads walked from their registers and stacks */
    CRASH_KIND_COUNT
} crash_kind;

/* "crash", "hang", ...; crash_kind_parse is its inverse (false when unknown). */
const char *crash_kind_name(crash_kind k);
bool crash_kind_parse(const char *s, crash_kind *out);

/* The kind an .ips bug_type stands for (CRASH_KIND_CRASH when unknown). */
crash_kind crash_kind_of_bug_type(int bug_type);

/* Why a thread section is there. */
typedef enum {
    CRASH_THREAD_NORMAL,        /* "Thread N:" / threads[] / a stackshot thread */
    CRASH_THREAD_LAST_EXCEPTION,/* "Last Exception Backtrace:" / lastExceptionBacktrace */
    CRASH_THREAD_APP_SPECIFIC,  /* "Application Specific Backtrace N:" */
    CRASH_THREAD_ATTRIBUTED,    /* "Thread N Attributed:" (EXC_RESOURCE reports) */
    CRASH_THREAD_HEAVIEST,      /* "Heaviest stack for the target process:" */
    CRASH_THREAD_KERNEL,        /* a panic's kernel backtrace */
    CRASH_THREAD_RECRASH,       /* KSCrash recrash_report: a crash inside the crash handler */
} crash_thread_role;

/* Something of the report that was skipped or could not be read. where is
 * "line 37" (text, 1-based over the whole input) or a JSON path
 * ("threads[3].frames[7]"); both strings owned. */
typedef struct {
    char *where, *message;
} crash_warning;

/* A process of a multi-process report (stackshot, spindump, jetsam). */
typedef struct {
    long pid;            /* -1 when not given */
    char *name, *path;   /* NULL when absent */
    char *detail;        /* one line of what else the report says of it (jetsam: reason,
                            pages...), NULL when nothing */
} crash_process;

/* Where a verbatim block of a text report stands, for rendering. */
typedef enum {
    CRASH_AT_THREAD, /* before threads[thread] (== nthreads: after the last thread) */
    CRASH_AT_IMAGES, /* just before "Binary Images:" */
    CRASH_AT_END,    /* after the Binary Images */
    CRASH_AT_HEADER, /* JSON .ips: header lines after "Code Type:" (Role, Parent Process...) */
    CRASH_AT_DATE,   /* JSON .ips: header lines after "OS Version:" (Launch Time, Sleep/Wake...) */
} crash_place;

/* Lines of the input the model does not hold, kept as written (every line
 * ends in '\n'). The header before the first section is text_header. */
typedef struct {
    crash_place at;
    size_t thread;
    char *text;
    size_t len; /* strlen(text) */
    size_t cap; /* private */
} crash_block;

/* How a frame's line is written, for the text rendering that keeps the
 * input as written and rewrites only symbolicated frames (crashsym.h). */
typedef enum {
    CRASH_SRC_NONE,     /* no line of its own: JSON, an address list, a decoded string */
    CRASH_SRC_FRAME,    /* "N  image  0xPC rest": rest is replaced, inlined levels get lines */
    CRASH_SRC_SAMPLE,   /* sample's "COUNT name  (in Image) + off  [0xPC]": the name part */
    CRASH_SRC_SPINDUMP, /* spindump's "COUNT name + off (Image + off) [0xPC]": the name part */
    CRASH_SRC_PANIC,    /* a panic's "lr: 0x... fp: 0x...": the symbol is appended */
} crash_src_style;

/* How a frame of a walked stack (a minidump's) was found, best first;
 * CRASH_TRUST_NONE for frames a report lists itself. Names as md_trust's. */
typedef enum {
    CRASH_TRUST_NONE = MD_TRUST_NONE,
    CRASH_TRUST_CONTEXT = MD_TRUST_CONTEXT,
    CRASH_TRUST_CFI = MD_TRUST_CFI,
    CRASH_TRUST_FRAME_POINTER = MD_TRUST_FRAME_POINTER,
    CRASH_TRUST_SCAN = MD_TRUST_SCAN,
} crash_trust;

/* One frame as the report gives it. */
typedef struct {
    uint64_t address;      /* the PC */
    long image;            /* index into images, -1 when not known */
    char *image_name;      /* name on the frame line (text) or of usedImages[i]; may be NULL */
    bool has_load;         /* "0xPC 0xLOAD + off" (text) or imageOffset (ips) */
    uint64_t load_address; /* the image's load address as the frame line says */
    char *symbol;          /* the report's own symbol, NULL when none */
    bool inlined;          /* .ips "inline": true: an inlined call, a level of the next
                              frame (same address), as Apple lists them */
    bool has_symbol_offset;
    uint64_t symbol_offset;
    char *file;            /* the report's own file, NULL when none */
    uint32_t line;
    /* Call trees (sample, spindump, microstackshots): a tree is its frames
     * in pre-order, depth 0 for the roots; count is the node's samples. */
    uint32_t depth;
    uint64_t count;
    /* Where the frame stands in the input (src != CRASH_SRC_NONE): its line
     * [line_off, line_end) without newline or CR, and the part of it a
     * symbolication replaces, [desc_off, desc_end) (empty at line_end when
     * the symbol is appended). Byte offsets into crash_parse's buf. */
    crash_src_style src;
    size_t line_off, line_end, desc_off, desc_end;
    crash_trust trust;     /* minidumps: how the walker found it */
} crash_frame;

typedef struct {
    long number;         /* "Thread N", or the index in threads[] (ips), -1 for a
                            section that is no thread (exception backtraces) */
    char *name, *queue;  /* NULL when absent */
    bool crashed;
    crash_thread_role role;
    char *title;         /* the section's own heading as written, e.g.
                            "Application Specific Backtrace 1:"; NULL for plain threads */
    long process;        /* index into processes, -1 when the report has one process */
    bool is_tree;        /* frames are a call tree (depth, count) */
    bool truncated;      /* a spindump "<truncated backtrace>" node: the stack walk was cut */
    uint64_t count;      /* samples of the thread (trees), 0 when not given */
    crash_frame *frames;
    size_t nframes;
    /* The frames came from an address list of the input, "(0x1a2b 0x3c4d
     * ...)" of a Last Exception Backtrace: [list_off, list_end) is the list
     * from '(' to past ')' (byte offsets into crash_parse's buf). */
    bool has_list;
    size_t list_off, list_end;
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
    long process;        /* index into processes when the image belongs to one, else -1 */
    /* What the report says of where the image comes from, read as written:
     * source is an .ips image's "source" (usedImages[].source, a stackshot's
     * binaryImages[i][2]: 'P' a file on disk, 'S' the dyld shared cache,
     * 'T' kernel text, 'A' an address outside any image...; 0 when not
     * given); plus is a '+' before its name in a text report's Binary
     * Images or a sample's, which macOS writes for images that are not part
     * of the OS. */
    char source;
    bool plus;
    /* The OS's image (Apple's system libraries, the kernel, its extensions),
     * else the app's: decided once by crash_classify_images when the report
     * is read. */
    bool system;
} crash_image;

typedef struct {
    char *name, *value;
} crash_kv;

/* A measurement a report states as text with its unit, as Apple writes it
 * ("20 secs.", "2,000 byte", "20000 ms", "1073.76 MB"): kept as written,
 * and parsed into ms or bytes when it reads. */
typedef enum { CRASH_UNIT_NONE, CRASH_UNIT_MS, CRASH_UNIT_BYTES } crash_unit;
typedef struct {
    char *name, *value; /* the metadata key ("hangDuration") and its value as written */
    crash_unit unit;    /* CRASH_UNIT_NONE: not parsed (not a measurement, or unreadable) */
    uint64_t amount;    /* in unit (rounded down) */
} crash_metric;

typedef struct {
    crash_format format;
    crash_kind kind;
    bool text_body;        /* the report (or the body under its .ips header) is text:
                              its rendering is the input, frames rewritten */
    int bug_type;          /* ips header's bug_type, 0 for plain .crash */
    char *header_json;     /* .ips: the first line as written (owned), else NULL */
    /* What the header says (NULL when absent). */
    char *process, *bundle_id, *app_version, *os_version, *hardware_model,
        *incident_id, *code_type, *report_version, *date;
    char *exception_type, *exception_signal, *exception_codes, *termination;
    bool has_pid;          /* .ips "pid": the process's pid, for "Process: name [pid]" */
    long pid;
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
    crash_block *blocks;   /* other unread sections of a text report, in order */
    size_t nblocks;
    char *app_specific;    /* Application Specific Information (text or .ips asi), NULL when none */
    char *panic_string;    /* panics: the panic string, NULL when none */
    crash_process *processes;
    size_t nprocesses;
    crash_warning *warnings;
    size_t nwarnings, nwarnings_dropped;
    size_t total_frames;
    /* MetricKit / App Store Connect diagnostics (NULL / 0 otherwise). */
    size_t part, nparts;   /* this report is diagnostic part of nparts of its input */
    char *app_build;       /* appBuildVersion / buildVersion */
    char *vm_region_info;  /* virtualMemoryRegionInfo */
    crash_metric *metrics; /* the diagnostic's and payload's other metadata, in order */
    size_t nmetrics;
    /* .ips "sharedCache": where the dyld shared cache was mapped (an image
     * loaded inside it is the OS's). */
    bool has_shared_cache;
    uint64_t shared_cache_base, shared_cache_size;
    /* Minidumps: Crashpad's annotations (process, then per module as
     * "module: key") and the form fields of a Crashpad upload, in order;
     * also written as "key: value" lines of app_specific. */
    crash_kv *annotations;
    size_t nannotations;
} crash_report;

/* Detects the format and kind from the content and parses it. A report is
 * refused only when it is no report at all (SYMD_E_NOT_CRASH_REPORT, HTTP
 * 415) or past a limit above (SYMD_E_TOO_LARGE, 413); SYMD_E_NOMEM. Any
 * part that cannot be read (a broken frame line, a JSON body that does not
 * parse, a value of the wrong type) is skipped and recorded in warnings,
 * saying where ("line 42" or "threads[3].frames[7]") and why. On error r
 * holds nothing. format is CRASH_FORMAT_IPS whenever a JSON header line with
 * bug_type comes first (text_header is then set for a text body, NULL for a
 * JSON one), CRASH_FORMAT_PLCRASH when the bytes start with "plcrash"
 * (PLCrashReporter's binary report; warnings then name protobuf fields,
 * "CrashReport.threads[0].frames[2]"). JSON is read with util/jsonbig (integers up to 2^64-1 and
 * negative ones exact). */
symd_status crash_parse(const uint8_t *buf, size_t len, crash_report *r, symd_err *err);
void crash_report_free(crash_report *r);

/* Every report of the input, in order: one for every format but a MetricKit
 * payload or App Store Connect logs holding several diagnostics, which give
 * one report per diagnostic (part = its index, nparts = their number).
 * crash_parse of such an input reads part 0 and warns of the others. *out
 * (n of them) is freed with crash_reports_free. Errors as crash_parse's. */
symd_status crash_parse_all(const uint8_t *buf, size_t len, crash_report **out, size_t *n,
                            symd_err *err);
void crash_reports_free(crash_report *r, size_t n);

/* Report part of the input alone (part 0 for inputs of one report); past
 * the last part: SYMD_E_NOT_FOUND. */
symd_status crash_parse_part(const uint8_t *buf, size_t len, size_t part, crash_report *out,
                             symd_err *err);

/* Sets every image's system flag: the OS's, else the app's. The first rule
 * that speaks decides:
 *   1. an image loaded at a kernel address (0xFFFF000000000000 and up), or
 *      whose .ips source is 'T' (kernel text): the kernel or a kext, the OS's;
 *   2. .ips source 'S', or loaded inside the report's sharedCache: the dyld
 *      shared cache, the OS's;
 *   3. a path inside a simulator runtime's root (".../RuntimeRoot",
 *      ".../<platform>Simulator.sdk"): the OS's when it goes on under one of
 *      the OS folders below, else the app's;
 *   4. a path under /System/, /usr/lib/, /usr/libexec/, /bin/, /sbin/,
 *      /usr/bin/, /usr/sbin/, /Library/Apple/, /private/preboot/Cryptexes/
 *      or /AppleInternal/: the OS's, unless the report marks it '+' (not
 *      the OS's: a jailbreak's tweaks in /usr/lib);
 *   5. marked '+', or given a source (a file on disk: 'P'; 'A'): the app's;
 *   6. loaded inside the arm64 shared region [0x180000000, 0x300000000),
 *      where iOS and macOS map the dyld shared cache and nothing else: the
 *      OS's, unless the image's (else the report's) arch is known and not
 *      arm64. This names the system images of reports that give no paths
 *      (MetricKit) or hide them ("/Volumes/VOLUME/<*>/libobjc.A.dylib");
 *   7. anything else (the app's bundle, its frameworks, a third party's
 *      library, a stackshot's 'P' images, which carry no path): the app's.
 *      An image is the OS's only on what the report gives of it.
 * The main executable is the app's unless a rule above says otherwise (an
 * OS process: ReportCrash, a daemon in /usr/libexec). The readers call it;
 * it is public for tests. Images the store holds as imported system
 * libraries are the OS's too: the server adds that. */
void crash_classify_images(crash_report *r);

/* The stack walker minidump threads are walked with (md_walk_fn, see
 * minidump/walk.h), and its state; NULL: the built-in frame-pointer walker.
 * Set once at start, before any report is read (the server sets the one
 * that reads its stored unwind tables); fn must be safe to call from
 * several threads at once. */
void crash_set_minidump_walker(md_walk_fn fn, void *self);

#endif

/* Minidumps (Breakpad's and Crashpad's, macOS and iOS) read into one model:
 * (buf, len) in, no I/O. The model borrows buf (stack and memory bytes
 * point into it): buf must outlive it. Strings are the model's own copies. */
#ifndef SYMD_MINIDUMP_H
#define SYMD_MINIDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

#define MD_MAGIC "MDMP"
/* What one dump may hold; past these a stream is read up to the limit and
 * a warning says what was left out. */
#define MD_MAX_STREAMS 1024
#define MD_MAX_THREADS 4096
#define MD_MAX_MODULES 10000
#define MD_MAX_REGIONS 65536
#define MD_MAX_ANNOTATIONS 4096
#define MD_MAX_STRING 65536 /* bytes of one string (UTF-16 or UTF-8) */
#define MD_MAX_WARNINGS 200

typedef enum { MD_CPU_UNKNOWN, MD_CPU_X86_64, MD_CPU_ARM64 } md_cpu;
typedef enum { MD_OS_UNKNOWN, MD_OS_MACOS, MD_OS_IOS, MD_OS_OTHER } md_os;

/* "x86_64", "arm64", NULL for unknown. */
const char *md_cpu_name(md_cpu c);

/* Registers of one thread, in the order md_reg_names gives. */
#define MD_AMD64_NREGS 17 /* rax rbx rcx rdx rdi rsi rbp rsp r8..r15 rip */
#define MD_AMD64_RBP 6
#define MD_AMD64_RSP 7
#define MD_AMD64_RIP 16
#define MD_ARM64_NREGS 34 /* x0..x28 fp lr sp pc cpsr */
#define MD_ARM64_FP 29
#define MD_ARM64_LR 30
#define MD_ARM64_SP 31
#define MD_ARM64_PC 32
#define MD_MAX_REGS 34

typedef struct {
    md_cpu cpu;        /* MD_CPU_UNKNOWN: no registers */
    uint32_t flags;    /* context_flags as written (the low 32 bits) */
    size_t nregs;
    uint64_t regs[MD_MAX_REGS];
} md_context;

/* The names of cpu's registers (nregs of them), NULL for an unknown cpu. */
const char *const *md_reg_names(md_cpu cpu, size_t *nregs);
/* The pc, stack pointer and frame pointer of a context (0 when it has none). */
uint64_t md_context_pc(const md_context *c);
uint64_t md_context_sp(const md_context *c);
uint64_t md_context_fp(const md_context *c);

/* Bytes of the target's memory the dump holds: [base, base + len). */
typedef struct {
    uint64_t base;
    const uint8_t *bytes; /* into the dump's buffer */
    size_t len;
} md_memory;

typedef struct {
    uint32_t id;
    char *name;          /* ThreadNamesStream, NULL when none */
    bool has_context;
    md_context ctx;      /* the thread list's; the crashed thread's state at the
                            crash is the exception's (md_exception.ctx) */
    bool has_stack;
    md_memory stack;
} md_thread;

typedef struct {
    uint64_t base, size;
    char *path;          /* NULL when unreadable */
    bool has_uuid;
    uint8_t uuid[16];    /* the Mach-O LC_UUID (CodeView RSDS GUID, first three
                            fields swapped from little-endian) */
    uint32_t age;
    char *version;       /* "a.b.c.d" from the file version, NULL when none */
} md_module;

typedef struct {
    bool present;
    uint32_t thread_id;
    uint32_t code;       /* macOS/iOS: the Mach exception type (EXC_BAD_ACCESS = 1) */
    uint32_t flags;      /* macOS/iOS: the first Mach code (KERN_INVALID_ADDRESS = 1) */
    uint64_t address;    /* the faulting address (the Mach subcode) */
    uint32_t nparams;
    uint64_t params[15];
    bool has_context;
    md_context ctx;      /* the thread's state at the exception */
} md_exception;

typedef struct {
    bool present;
    uint16_t arch;       /* ProcessorArchitecture as written */
    md_cpu cpu;
    uint32_t platform;   /* PlatformId as written (0x8101 macOS, 0x8102 iOS) */
    md_os os;
    uint32_t major, minor, build;
    char *csd;           /* the OS build ("16G29"), NULL when none */
    uint8_t ncpus;
    char *cpu_vendor;    /* "GenuineIntel", NULL when not x86 */
} md_system;

/* A Crashpad annotation: of the process (module -1) or of modules[module]. */
typedef struct {
    long module;
    char *key, *value;
} md_annotation;

typedef struct {
    char *where, *message;
} md_warning;

typedef struct {
    uint32_t version;
    uint32_t time;       /* TimeDateStamp: seconds since 1970, 0 when not given */
    md_system system;
    md_thread *threads;
    size_t nthreads;
    md_module *modules;  /* the main executable first, as the writers order them */
    size_t nmodules;
    md_exception exception;
    bool has_pid;
    uint32_t pid;
    bool has_process_time;
    uint32_t process_create_time;
    bool has_breakpad;   /* BreakpadInfoStream */
    bool has_dump_thread, has_requesting_thread;
    uint32_t dump_thread, requesting_thread;
    bool has_crashpad;   /* CrashpadInfoStream */
    uint8_t report_id[16], client_id[16];
    md_annotation *annotations;
    size_t nannotations;
    md_memory *regions;  /* every memory range (MemoryList, Memory64List), sorted
                            by base, none overlapping */
    size_t nregions;
    md_warning *warnings;
    size_t nwarnings, nwarnings_dropped;
} minidump;

/* Reads buf[0..len). Refused only when buf is no minidump at all: no "MDMP"
 * magic (SYMD_E_NOT_CRASH_REPORT) or a stream directory wholly outside the
 * buffer (SYMD_E_CORRUPT); SYMD_E_NOMEM. The stream directory is checked
 * like a table of contents first (every entry within the buffer, no two
 * overlapping, one of each type); a stream that fails a check, or any
 * record in it, is left out with a warning naming the stream and the
 * offset (where) and why. On error d holds nothing. */
symd_status minidump_read(const uint8_t *buf, size_t len, minidump *d, symd_err *err);
void minidump_free(minidump *d);

/* Copies len bytes of the target's memory at addr into out when one range
 * of the dump holds them all; false otherwise (out untouched). */
bool minidump_read_memory(const minidump *d, uint64_t addr, size_t len, void *out);

/* The index of the module whose [base, base + size) holds addr, -1 when
 * none. O(n). */
long minidump_module_at(const minidump *d, uint64_t addr);

/* The names of the streams, for warnings ("ThreadListStream", or
 * "stream 0x%x" for one symd does not know, written into buf). */
const char *md_stream_name(uint32_t type, char *buf, size_t cap);

#endif

/* Minidump reader (see minidump.h): header, stream directory, and the
 * streams Breakpad and Crashpad write on macOS and iOS.
 *
 * Every offset (an RVA) and size is checked against the buffer before a
 * byte is read (in_buf), every count against the bytes its stream has left
 * before anything is allocated for it, and sums are done in 64 bits from
 * 32-bit fields, so none overflows. The directory is read first like a
 * table of contents (check_directory): an entry outside the buffer, two
 * overlapping, or a second stream of one type is left out with a warning;
 * the readers of the streams then trust only an entry's own range.
 *
 * Layouts are Microsoft's (MINIDUMP_*, all little-endian and packed) with
 * Breakpad's and Crashpad's extensions; offsets below are named where used. */
#include "minidump.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"
#include "../util/metered.h" /* last: counts this file's allocations */

/* ---- stream types ---- */

enum {
    ST_THREAD_LIST = 3,
    ST_MODULE_LIST = 4,
    ST_MEMORY_LIST = 5,
    ST_EXCEPTION = 6,
    ST_SYSTEM_INFO = 7,
    ST_MEMORY64_LIST = 9,
    ST_MISC_INFO = 15,
    ST_THREAD_NAMES = 24,
    ST_BREAKPAD_INFO = 0x47670001,
    ST_CRASHPAD_INFO = 0x43500001,
};

const char *md_stream_name(uint32_t type, char *buf, size_t cap)
{
    switch (type) {
    case ST_THREAD_LIST: return "ThreadListStream";
    case ST_MODULE_LIST: return "ModuleListStream";
    case ST_MEMORY_LIST: return "MemoryListStream";
    case ST_EXCEPTION: return "ExceptionStream";
    case ST_SYSTEM_INFO: return "SystemInfoStream";
    case ST_MEMORY64_LIST: return "Memory64ListStream";
    case ST_MISC_INFO: return "MiscInfoStream";
    case ST_THREAD_NAMES: return "ThreadNamesStream";
    case ST_BREAKPAD_INFO: return "BreakpadInfoStream";
    case ST_CRASHPAD_INFO: return "CrashpadInfoStream";
    default:
        snprintf(buf, cap, "stream 0x%x", type);
        return buf;
    }
}

const char *md_cpu_name(md_cpu c)
{
    return c == MD_CPU_X86_64 ? "x86_64" : c == MD_CPU_ARM64 ? "arm64" : NULL;
}

/* ---- registers ---- */

static const char *const amd64_names[MD_AMD64_NREGS] = {
    "rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "rsp", "r8",
    "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip",
};
/* Byte offsets of those in MDRawContextAMD64 (CONTEXT_AMD64): rax at 0x78
 * after the home slots, flags, segments and debug registers. */
static const uint16_t amd64_offs[MD_AMD64_NREGS] = {
    0x78, 0x90, 0x80, 0x88, 0xb0, 0xa8, 0xa0, 0x98, 0xb8,
    0xc0, 0xc8, 0xd0, 0xd8, 0xe0, 0xe8, 0xf0, 0xf8,
};
#define AMD64_FLAGS_OFF 0x30
#define AMD64_MIN_SIZE 0x100 /* through rip; the whole record is 1232 bytes */
#define CTX_AMD64 0x00100000u

static const char *const arm64_names[MD_ARM64_NREGS] = {
    "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10", "x11",
    "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23",
    "x24", "x25", "x26", "x27", "x28", "fp",  "lr",  "sp",  "pc",  "cpsr",
};
/* Both ARM64 layouts keep x0..x28, fp, lr, sp, pc at 8 + 8 * i: Crashpad's
 * and Windows' (u32 flags, u32 cpsr, then the registers) and Breakpad's
 * older one (u64 flags, the registers, then cpsr at 0x110). Only the flags
 * tell them apart. */
#define ARM64_REGS_OFF 8
#define ARM64_OLD_CPSR_OFF 0x110
#define ARM64_MIN_SIZE 0x114
#define CTX_ARM64 0x00400000u
#define CTX_ARM64_OLD 0x80000000u

const char *const *md_reg_names(md_cpu cpu, size_t *nregs)
{
    switch (cpu) {
    case MD_CPU_X86_64: *nregs = MD_AMD64_NREGS; return amd64_names;
    case MD_CPU_ARM64: *nregs = MD_ARM64_NREGS; return arm64_names;
    default: *nregs = 0; return NULL;
    }
}

uint64_t md_context_pc(const md_context *c)
{
    return c->cpu == MD_CPU_X86_64 ? c->regs[MD_AMD64_RIP]
           : c->cpu == MD_CPU_ARM64 ? c->regs[MD_ARM64_PC] : 0;
}

uint64_t md_context_sp(const md_context *c)
{
    return c->cpu == MD_CPU_X86_64 ? c->regs[MD_AMD64_RSP]
           : c->cpu == MD_CPU_ARM64 ? c->regs[MD_ARM64_SP] : 0;
}

uint64_t md_context_fp(const md_context *c)
{
    return c->cpu == MD_CPU_X86_64 ? c->regs[MD_AMD64_RBP]
           : c->cpu == MD_CPU_ARM64 ? c->regs[MD_ARM64_FP] : 0;
}

/* ---- the reading context ---- */

typedef struct {
    const uint8_t *b;
    size_t n;
    minidump *d;
    symd_err *err;
    size_t cap_warn, cap_ann;
    bool nomem;
    md_cpu cpu_hint; /* from SystemInfoStream, for telling contexts apart */
} rd;

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

/* Whether [off, off + len) lies within the buffer (64-bit sums of 32-bit
 * fields cannot overflow; 64-bit ones are compared without adding). */
static bool in_buf(const rd *r, uint64_t off, uint64_t len)
{
    return off <= r->n && len <= r->n - off;
}

/* Records a warning; false only when memory ran out (r->nomem). */
__attribute__((format(printf, 3, 4))) static bool warn(rd *r, const char *where,
                                                        const char *fmt, ...)
{
    minidump *d = r->d;
    if (r->nomem)
        return false;
    if (d->nwarnings >= MD_MAX_WARNINGS) {
        d->nwarnings_dropped++;
        return true;
    }
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!array_grow((void **)&d->warnings, &r->cap_warn, d->nwarnings + 1,
                    sizeof *d->warnings)) {
        r->nomem = true;
        return false;
    }
    md_warning *w = &d->warnings[d->nwarnings];
    w->where = strdup(where);
    w->message = strdup(msg);
    if (!w->where || !w->message) {
        free(w->where);
        free(w->message);
        r->nomem = true;
        return false;
    }
    d->nwarnings++;
    return true;
}

/* Appends a UTF-8 sequence of code point c to out (at least 4 bytes room). */
static size_t put_utf8(char *out, uint32_t c)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | c >> 12);
        out[1] = (char)(0x80 | (c >> 6 & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | c >> 18);
    out[1] = (char)(0x80 | (c >> 12 & 0x3f));
    out[2] = (char)(0x80 | (c >> 6 & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* A MINIDUMP_STRING at rva (u32 byte length, UTF-16LE) as UTF-8: unpaired
 * surrogates and NULs become U+FFFD. NULL with a warning at where when it
 * does not fit in the buffer or is over MD_MAX_STRING. */
static char *utf16_string(rd *r, uint32_t rva, const char *where)
{
    if (!in_buf(r, rva, 4)) {
        warn(r, where, "its string at 0x%x lies past the end of the dump (%zu bytes)", rva, r->n);
        return NULL;
    }
    uint32_t bytes = le32(r->b + rva);
    if (bytes > MD_MAX_STRING || !in_buf(r, (uint64_t)rva + 4, bytes)) {
        warn(r, where, "its string at 0x%x of %u bytes lies past the end of the dump or over %d "
             "bytes", rva, bytes, MD_MAX_STRING);
        return NULL;
    }
    const uint8_t *p = r->b + rva + 4;
    size_t units = bytes / 2;
    char *s = malloc(units * 3 + 1); /* a unit gives at most 3 bytes; a pair 4 for 2 units */
    if (!s) {
        r->nomem = true;
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < units; i++) {
        uint32_t c = le16(p + 2 * i);
        if (c >= 0xd800 && c < 0xdc00 && i + 1 < units) {
            uint32_t lo = le16(p + 2 * i + 2);
            if (lo >= 0xdc00 && lo < 0xe000) {
                c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                i++;
            } else {
                c = 0xfffd;
            }
        } else if ((c >= 0xd800 && c < 0xe000) || c == 0) {
            c = 0xfffd;
        }
        o += put_utf8(s + o, c);
    }
    s[o] = 0;
    return s;
}

/* n bytes as a NUL-terminated UTF-8 copy: invalid sequences and NULs
 * become U+FFFD. */
static char *utf8_copy(rd *r, const uint8_t *p, size_t n)
{
    char *s = malloc(n * 3 + 1);
    if (!s) {
        r->nomem = true;
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = p[i] ? utf8_seq_len(p + i, p + n) : 0;
        if (k) {
            memcpy(s + o, p + i, k);
            o += k;
            i += k;
        } else {
            o += put_utf8(s + o, 0xfffd);
            i++;
        }
    }
    s[o] = 0;
    return s;
}

/* Crashpad's MinidumpUTF8String at rva (u32 length, bytes, NUL). */
static char *utf8_string(rd *r, uint32_t rva, const char *where)
{
    if (!in_buf(r, rva, 4)) {
        warn(r, where, "its string at 0x%x lies past the end of the dump (%zu bytes)", rva, r->n);
        return NULL;
    }
    uint32_t len = le32(r->b + rva);
    if (len > MD_MAX_STRING || !in_buf(r, (uint64_t)rva + 4, len)) {
        warn(r, where, "its string at 0x%x of %u bytes lies past the end of the dump or over %d "
             "bytes", rva, len, MD_MAX_STRING);
        return NULL;
    }
    return utf8_copy(r, r->b + rva + 4, len);
}

/* A 16-byte GUID (u32, u16, u16 little-endian, then 8 bytes) as the UUID
 * bytes it stands for. */
static void guid_to_uuid(const uint8_t *g, uint8_t u[16])
{
    u[0] = g[3], u[1] = g[2], u[2] = g[1], u[3] = g[0];
    u[4] = g[5], u[5] = g[4];
    u[6] = g[7], u[7] = g[6];
    memcpy(u + 8, g + 8, 8);
}

/* ---- the directory ---- */

typedef struct {
    uint32_t type, size, rva;
    size_t index; /* in the directory as written */
} dir_entry;

static int cmp_rva(const void *a, const void *b)
{
    const dir_entry *x = a, *y = b;
    if (x->rva != y->rva)
        return x->rva < y->rva ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_index(const void *a, const void *b)
{
    const dir_entry *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Keeps the entries that can be trusted, in directory order, in *out (n of
 * them): within the buffer, not overlapping an earlier-placed one, the
 * first of their type. Empty entries (size 0, type 0: unused) are dropped
 * silently. */
static symd_status check_directory(rd *r, uint32_t count, uint32_t dir_rva, dir_entry **out,
                                   size_t *nout)
{
    *out = NULL;
    *nout = 0;
    char where[64], nb[32];
    uint64_t fit = dir_rva <= r->n ? (r->n - dir_rva) / 12 : 0;
    if (fit == 0 && count > 0)
        return SYMD_CORRUPT(r->err, "not readable as a minidump: its stream directory of %u "
                            "entries at 0x%x lies past the end of the dump (%zu bytes)",
                            count, dir_rva, r->n);
    if (count > fit) {
        snprintf(where, sizeof where, "stream directory (0x%x)", dir_rva);
        warn(r, where, "declares %u streams; the dump holds only %llu of them: those read",
             count, (unsigned long long)fit);
        count = (uint32_t)fit;
    }
    if (count > MD_MAX_STREAMS) {
        snprintf(where, sizeof where, "stream directory (0x%x)", dir_rva);
        warn(r, where, "declares %u streams; the first %d are read", count, MD_MAX_STREAMS);
        count = MD_MAX_STREAMS;
    }
    dir_entry *e = malloc((count ? count : 1) * sizeof *e);
    if (!e)
        return symd_fail(r->err, SYMD_E_NOMEM, "out of memory reading the minidump");
    size_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *p = r->b + dir_rva + 12 * (size_t)i;
        dir_entry x = {le32(p), le32(p + 4), le32(p + 8), i};
        if (x.type == 0 || x.size == 0)
            continue; /* UnusedStream, or nothing to read */
        snprintf(where, sizeof where, "stream directory[%u] (%s)", i,
                 md_stream_name(x.type, nb, sizeof nb));
        if (!in_buf(r, x.rva, x.size)) {
            warn(r, where, "%u bytes at 0x%x lie past the end of the dump (%zu bytes): "
                 "stream not read", x.size, x.rva, r->n);
            continue;
        }
        if ((uint64_t)x.rva < 32 || ((uint64_t)x.rva < (uint64_t)dir_rva + 12 * (uint64_t)count &&
                                     (uint64_t)x.rva + x.size > dir_rva)) {
            warn(r, where, "its bytes at 0x%x overlap the header or the directory: stream not read",
                 x.rva);
            continue;
        }
        e[n++] = x;
    }
    /* overlaps: sorted by offset, each against the furthest end before it */
    qsort(e, n, sizeof *e, cmp_rva);
    size_t k = 0;
    uint64_t end = 0;
    size_t end_owner = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && e[i].rva < end) {
            snprintf(where, sizeof where, "stream directory[%zu] (%s)", e[i].index,
                     md_stream_name(e[i].type, nb, sizeof nb));
            warn(r, where, "its bytes at 0x%x overlap those of directory entry %zu: stream not "
                 "read", e[i].rva, end_owner);
            continue;
        }
        e[k++] = e[i];
        end = (uint64_t)e[i].rva + e[i].size;
        end_owner = e[i].index;
    }
    n = k;
    qsort(e, n, sizeof *e, cmp_index);
    /* duplicates: the first of a type is read */
    k = 0;
    for (size_t i = 0; i < n; i++) {
        bool dup = false;
        for (size_t j = 0; j < k && !dup; j++)
            dup = e[j].type == e[i].type;
        if (dup) {
            snprintf(where, sizeof where, "stream directory[%zu] (%s)", e[i].index,
                     md_stream_name(e[i].type, nb, sizeof nb));
            warn(r, where, "a second stream of this type: not read");
            continue;
        }
        e[k++] = e[i];
    }
    *out = e;
    *nout = k;
    return r->nomem ? symd_fail(r->err, SYMD_E_NOMEM, "out of memory reading the minidump")
                    : SYMD_OK;
}

/* Where a list stream's records start: after its count, or after the count
 * and 4 bytes of padding some writers put there (Breakpad's module and
 * memory lists); SIZE_MAX when count records of rec bytes fit neither way. */
static size_t list_start(const dir_entry *s, size_t head, uint64_t count, size_t rec)
{
    uint64_t body = (uint64_t)s->size >= head ? s->size - head : 0;
    if (count <= body / rec) {
        uint64_t left = body - count * rec;
        if (left == 4 && count)
            return head + 4; /* padded: 8 + rec * n bytes */
        return head;
    }
    return SIZE_MAX;
}

/* The count and first record of a list stream (a u32 count, then count
 * records of rec bytes; Breakpad's writers pad the count to 8): false,
 * with the warning, when the stream cannot hold them. noun names one
 * record ("thread", "module", "range"). */
static bool list_header(rd *r, const dir_entry *s, const char *where, const char *noun,
                        size_t rec, uint32_t *count, size_t *start)
{
    if (s->size < 4) {
        warn(r, where, "%u bytes: no %s count", s->size, noun);
        return false;
    }
    *count = le32(r->b + s->rva);
    *start = list_start(s, 4, *count, rec);
    if (*start == SIZE_MAX) {
        warn(r, where, "declares %u %ss of %zu bytes; its %u bytes hold at most %u: not read",
             *count, noun, rec, s->size, (unsigned)((s->size - 4) / rec));
        return false;
    }
    return true;
}

/* ---- contexts ---- */

/* Reads a thread context at loc (size, rva) into c. cpu: the system info's,
 * else told by the flags. Registers are trusted whatever the CONTROL and
 * INTEGER bits of the flags say: writers leave them out of flags they fill
 * the registers of all the same (a context without them would give no pc). */
static bool read_context(rd *r, uint32_t size, uint32_t rva, md_context *c, const char *where)
{
    memset(c, 0, sizeof *c);
    if (!size || !in_buf(r, rva, size)) {
        warn(r, where, "its context (%u bytes at 0x%x) lies past the end of the dump", size, rva);
        return false;
    }
    const uint8_t *p = r->b + rva;
    uint32_t f0 = size >= 4 ? le32(p) : 0;
    uint32_t famd = size >= AMD64_FLAGS_OFF + 4 ? le32(p + AMD64_FLAGS_OFF) : 0;
    md_cpu cpu = r->cpu_hint;
    if (cpu == MD_CPU_UNKNOWN) {
        if ((famd & 0xffff0000u) == CTX_AMD64)
            cpu = MD_CPU_X86_64;
        else if ((f0 & 0xffff0000u) == CTX_ARM64 || (f0 & CTX_ARM64_OLD))
            cpu = MD_CPU_ARM64;
    }
    if (cpu == MD_CPU_X86_64) {
        if (size < AMD64_MIN_SIZE || (famd & 0xffff0000u) != CTX_AMD64) {
            warn(r, where, "its context at 0x%x (%u bytes, flags 0x%x) is no AMD64 context",
                 rva, size, famd);
            return false;
        }
        c->cpu = cpu;
        c->flags = famd;
        c->nregs = MD_AMD64_NREGS;
        for (size_t i = 0; i < MD_AMD64_NREGS; i++)
            c->regs[i] = le64(p + amd64_offs[i]);
        return true;
    }
    if (cpu == MD_CPU_ARM64) {
        bool modern = (f0 & 0xffff0000u) == CTX_ARM64, old = (f0 & CTX_ARM64_OLD) != 0;
        if (size < ARM64_MIN_SIZE || (!modern && !old)) {
            warn(r, where, "its context at 0x%x (%u bytes, flags 0x%x) is no ARM64 context",
                 rva, size, f0);
            return false;
        }
        c->cpu = cpu;
        c->flags = f0;
        c->nregs = MD_ARM64_NREGS;
        for (size_t i = 0; i < 33; i++)
            c->regs[i] = le64(p + ARM64_REGS_OFF + 8 * i);
        c->regs[33] = modern ? le32(p + 4) : le32(p + ARM64_OLD_CPSR_OFF);
        return true;
    }
    warn(r, where, "its context at 0x%x (%u bytes) is of a CPU symd does not read", rva, size);
    return false;
}

/* ---- streams ---- */

static void read_system_info(rd *r, const dir_entry *s)
{
    md_system *sy = &r->d->system;
    char where[64];
    snprintf(where, sizeof where, "SystemInfoStream (0x%x)", s->rva);
    if (s->size < 56) {
        warn(r, where, "%u bytes, fewer than the 56 of MINIDUMP_SYSTEM_INFO: not read", s->size);
        return;
    }
    const uint8_t *p = r->b + s->rva;
    sy->present = true;
    sy->arch = le16(p);
    sy->ncpus = p[6];
    sy->major = le32(p + 8);
    sy->minor = le32(p + 12);
    sy->build = le32(p + 16);
    sy->platform = le32(p + 20);
    /* 9: AMD64; 12: ARM64; 0x8003: Breakpad's ARM64 before Windows had one */
    sy->cpu = sy->arch == 9 ? MD_CPU_X86_64
              : sy->arch == 12 || sy->arch == 0x8003 ? MD_CPU_ARM64 : MD_CPU_UNKNOWN;
    sy->os = sy->platform == 0x8101 ? MD_OS_MACOS
             : sy->platform == 0x8102 ? MD_OS_IOS : MD_OS_OTHER;
    if (sy->cpu == MD_CPU_UNKNOWN)
        warn(r, where, "processor architecture %u: neither AMD64 nor ARM64", sy->arch);
    if (sy->os == MD_OS_OTHER)
        warn(r, where, "platform 0x%x: neither macOS (0x8101) nor iOS (0x8102)", sy->platform);
    uint32_t csd = le32(p + 24);
    if (csd) {
        char w2[80];
        snprintf(w2, sizeof w2, "%s CSDVersion", where);
        sy->csd = utf16_string(r, csd, w2);
    }
    if (sy->arch == 0 || sy->arch == 9) { /* x86 CPU_INFORMATION: the vendor id */
        char v[13];
        memcpy(v, p + 32, 12);
        v[12] = 0;
        bool printable = true;
        for (int i = 0; i < 12; i++)
            printable &= v[i] >= 0x20 && v[i] < 0x7f;
        if (printable && v[0])
            sy->cpu_vendor = strdup(v);
    }
    r->cpu_hint = sy->cpu;
}

static void read_thread_list(rd *r, const dir_entry *s)
{
    minidump *d = r->d;
    char where[96];
    snprintf(where, sizeof where, "ThreadListStream (0x%x)", s->rva);
    uint32_t count;
    size_t start;
    if (!list_header(r, s, where, "thread", 48, &count, &start))
        return;
    if (count > MD_MAX_THREADS) {
        warn(r, where, "declares %u threads; the first %d are read", count, MD_MAX_THREADS);
        count = MD_MAX_THREADS;
    }
    d->threads = calloc(count ? count : 1, sizeof *d->threads);
    if (!d->threads) {
        r->nomem = true;
        return;
    }
    for (uint32_t i = 0; i < count && !r->nomem; i++) {
        const uint8_t *p = r->b + s->rva + start + 48 * (size_t)i;
        md_thread *t = &d->threads[d->nthreads++];
        t->id = le32(p);
        snprintf(where, sizeof where, "ThreadListStream[%u] (thread 0x%x)", i, t->id);
        uint64_t sbase = le64(p + 24);
        uint32_t ssize = le32(p + 32), srva = le32(p + 36);
        if (ssize && in_buf(r, srva, ssize) && sbase <= UINT64_MAX - ssize) {
            t->has_stack = true;
            t->stack = (md_memory){sbase, r->b + srva, ssize};
        } else if (ssize) {
            warn(r, where, "its stack of %u bytes at 0x%x lies past the end of the dump "
                 "(%zu bytes): not read", ssize, srva, r->n);
        }
        t->has_context = read_context(r, le32(p + 40), le32(p + 44), &t->ctx, where);
    }
}

static void read_module_list(rd *r, const dir_entry *s)
{
    minidump *d = r->d;
    char where[96];
    snprintf(where, sizeof where, "ModuleListStream (0x%x)", s->rva);
    uint32_t count;
    size_t start;
    if (!list_header(r, s, where, "module", 108, &count, &start))
        return;
    if (count > MD_MAX_MODULES) {
        warn(r, where, "declares %u modules; the first %d are read", count, MD_MAX_MODULES);
        count = MD_MAX_MODULES;
    }
    d->modules = calloc(count ? count : 1, sizeof *d->modules);
    if (!d->modules) {
        r->nomem = true;
        return;
    }
    for (uint32_t i = 0; i < count && !r->nomem; i++) {
        const uint8_t *p = r->b + s->rva + start + 108 * (size_t)i;
        md_module *m = &d->modules[d->nmodules++];
        snprintf(where, sizeof where, "ModuleListStream[%u]", i);
        m->base = le64(p);
        m->size = le32(p + 8);
        if (m->base > UINT64_MAX - m->size) {
            warn(r, where, "base 0x%llx and size 0x%llx pass the end of the address space: "
                 "size taken as 0", (unsigned long long)m->base, (unsigned long long)m->size);
            m->size = 0;
        }
        m->path = utf16_string(r, le32(p + 20), where);
        /* VS_FIXEDFILEINFO at 24: signature 0xfeef04bd, then the file version */
        if (le32(p + 24) == 0xfeef04bdu) {
            uint32_t ms = le32(p + 32), ls = le32(p + 36);
            char v[48];
            snprintf(v, sizeof v, "%u.%u.%u.%u", ms >> 16, ms & 0xffff, ls >> 16, ls & 0xffff);
            if (ms || ls)
                m->version = strdup(v);
        }
        uint32_t cvsize = le32(p + 76), cvrva = le32(p + 80);
        if (!cvsize)
            continue;
        if (!in_buf(r, cvrva, cvsize) || cvsize < 4) {
            warn(r, where, "its CodeView record (%u bytes at 0x%x) lies past the end of the "
                 "dump: no UUID", cvsize, cvrva);
            continue;
        }
        const uint8_t *cv = r->b + cvrva;
        if (memcmp(cv, "RSDS", 4) == 0 && cvsize >= 24) {
            guid_to_uuid(cv + 4, m->uuid);
            m->age = le32(cv + 20);
            m->has_uuid = true;
        } else {
            warn(r, where, "a CodeView record of signature 0x%08x, not RSDS: no UUID", le32(cv));
        }
    }
}

static int cmp_region(const void *a, const void *b)
{
    const md_memory *x = a, *y = b;
    return x->base < y->base ? -1 : x->base > y->base;
}

/* Adds [base, base + size) at file offset rva to the regions (checked). */
static void add_region(rd *r, size_t *cap, uint64_t base, uint64_t size, uint64_t rva,
                       const char *where)
{
    minidump *d = r->d;
    if (!size)
        return;
    if (!in_buf(r, rva, size) || base > UINT64_MAX - size) {
        warn(r, where, "%llu bytes at 0x%llx lie past the end of the dump (%zu bytes) or of the "
             "address space: not read", (unsigned long long)size, (unsigned long long)rva, r->n);
        return;
    }
    if (d->nregions >= MD_MAX_REGIONS) {
        warn(r, where, "more than %d memory ranges: not read", MD_MAX_REGIONS);
        return;
    }
    if (!array_grow((void **)&d->regions, cap, d->nregions + 1, sizeof *d->regions)) {
        r->nomem = true;
        return;
    }
    d->regions[d->nregions++] = (md_memory){base, r->b + rva, (size_t)size};
}

static void read_memory_list(rd *r, const dir_entry *s, size_t *cap)
{
    char where[96];
    snprintf(where, sizeof where, "MemoryListStream (0x%x)", s->rva);
    uint32_t count;
    size_t start;
    if (!list_header(r, s, where, "range", 16, &count, &start))
        return;
    for (uint32_t i = 0; i < count && !r->nomem; i++) {
        const uint8_t *p = r->b + s->rva + start + 16 * (size_t)i;
        snprintf(where, sizeof where, "MemoryListStream[%u]", i);
        add_region(r, cap, le64(p), le32(p + 8), le32(p + 12), where);
    }
}

static void read_memory64_list(rd *r, const dir_entry *s, size_t *cap)
{
    char where[96];
    snprintf(where, sizeof where, "Memory64ListStream (0x%x)", s->rva);
    if (s->size < 16) {
        warn(r, where, "%u bytes: no range count and base", s->size);
        return;
    }
    uint64_t count = le64(r->b + s->rva), rva = le64(r->b + s->rva + 8);
    if (count > (s->size - 16) / 16) {
        warn(r, where, "declares %llu ranges of 16 bytes; its %u bytes hold at most %u: not read",
             (unsigned long long)count, s->size, (s->size - 16) / 16);
        return;
    }
    /* the ranges' bytes follow one another from the base */
    for (uint64_t i = 0; i < count && !r->nomem; i++) {
        const uint8_t *p = r->b + s->rva + 16 + 16 * (size_t)i;
        uint64_t size = le64(p + 8);
        snprintf(where, sizeof where, "Memory64ListStream[%llu]", (unsigned long long)i);
        if (rva > r->n || size > r->n - rva) {
            warn(r, where, "%llu bytes at 0x%llx lie past the end of the dump (%zu bytes): this "
                 "and the later ranges not read", (unsigned long long)size,
                 (unsigned long long)rva, r->n);
            return;
        }
        add_region(r, cap, le64(p), size, rva, where);
        rva += size;
    }
}

/* The index of the last region starting at or before addr, plus one (0:
 * none). */
static size_t region_upto(const minidump *d, uint64_t addr)
{
    size_t lo = 0, hi = d->nregions;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->regions[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Sorts the regions and drops any that overlaps one before it; then adds
 * the thread stacks the memory lists do not hold (the writers list each
 * stack there too, at the same bytes, but need not). */
static void settle_regions(rd *r, size_t *cap)
{
    minidump *d = r->d;
    if (d->nregions) /* qsort of NULL is undefined even for none */
        qsort(d->regions, d->nregions, sizeof *d->regions, cmp_region);
    size_t k = 0;
    for (size_t i = 0; i < d->nregions; i++) {
        if (k && d->regions[i].base < d->regions[k - 1].base + d->regions[k - 1].len) {
            char where[64];
            snprintf(where, sizeof where, "memory at 0x%llx",
                     (unsigned long long)d->regions[i].base);
            warn(r, where, "%zu bytes overlap the range at 0x%llx: not read", d->regions[i].len,
                 (unsigned long long)d->regions[k - 1].base);
            continue;
        }
        d->regions[k++] = d->regions[i];
    }
    d->nregions = k;
    size_t listed = k;
    for (size_t t = 0; t < d->nthreads && !r->nomem; t++) {
        const md_memory *s = &d->threads[t].stack;
        if (!d->threads[t].has_stack)
            continue;
        size_t i = 0, hi = listed; /* the first listed range ending past the stack's base */
        while (i < hi) {
            size_t mid = i + (hi - i) / 2;
            if (d->regions[mid].base + d->regions[mid].len <= s->base)
                i = mid + 1;
            else
                hi = mid;
        }
        if (i < listed && d->regions[i].base < s->base + s->len)
            continue; /* listed, or overlapping a listed range: read through that */
        if (!array_grow((void **)&d->regions, cap, d->nregions + 1, sizeof *d->regions)) {
            r->nomem = true;
            return;
        }
        d->regions[d->nregions++] = *s;
    }
    if (d->nregions == listed)
        return;
    /* two threads may declare overlapping stacks: the first placed stays */
    qsort(d->regions, d->nregions, sizeof *d->regions, cmp_region);
    k = 0;
    for (size_t i = 0; i < d->nregions; i++)
        if (!k || d->regions[i].base >= d->regions[k - 1].base + d->regions[k - 1].len)
            d->regions[k++] = d->regions[i];
    d->nregions = k;
}

static void read_exception(rd *r, const dir_entry *s)
{
    md_exception *x = &r->d->exception;
    char where[64];
    snprintf(where, sizeof where, "ExceptionStream (0x%x)", s->rva);
    if (s->size < 168) {
        warn(r, where, "%u bytes, fewer than the 168 of MINIDUMP_EXCEPTION_STREAM: not read",
             s->size);
        return;
    }
    const uint8_t *p = r->b + s->rva;
    x->present = true;
    x->thread_id = le32(p);
    x->code = le32(p + 8);
    x->flags = le32(p + 12);
    x->address = le64(p + 24);
    x->nparams = le32(p + 32);
    if (x->nparams > 15) {
        warn(r, where, "%u exception parameters, more than the 15 there is room for: 15 read",
             x->nparams);
        x->nparams = 15;
    }
    for (uint32_t i = 0; i < x->nparams; i++)
        x->params[i] = le64(p + 40 + 8 * i);
    uint32_t csize = le32(p + 160), crva = le32(p + 164);
    if (csize)
        x->has_context = read_context(r, csize, crva, &x->ctx, where);
}

static void read_misc_info(rd *r, const dir_entry *s)
{
    char where[64];
    snprintf(where, sizeof where, "MiscInfoStream (0x%x)", s->rva);
    if (s->size < 24) {
        warn(r, where, "%u bytes, fewer than the 24 of MINIDUMP_MISC_INFO: not read", s->size);
        return;
    }
    const uint8_t *p = r->b + s->rva;
    uint32_t flags = le32(p + 4);
    if (flags & 1) { /* MINIDUMP_MISC1_PROCESS_ID */
        r->d->has_pid = true;
        r->d->pid = le32(p + 8);
    }
    if (flags & 2) { /* MINIDUMP_MISC1_PROCESS_TIMES */
        r->d->has_process_time = true;
        r->d->process_create_time = le32(p + 12);
    }
}

static void read_thread_names(rd *r, const dir_entry *s)
{
    minidump *d = r->d;
    char where[96];
    snprintf(where, sizeof where, "ThreadNamesStream (0x%x)", s->rva);
    if (s->size < 4) {
        warn(r, where, "%u bytes: no name count", s->size);
        return;
    }
    uint32_t count = le32(r->b + s->rva);
    if (count > (s->size - 4) / 12) {
        warn(r, where, "declares %u names of 12 bytes; its %u bytes hold at most %u: not read",
             count, s->size, (s->size - 4) / 12);
        return;
    }
    for (uint32_t i = 0; i < count && !r->nomem; i++) {
        const uint8_t *p = r->b + s->rva + 4 + 12 * (size_t)i;
        uint32_t id = le32(p);
        uint64_t rva = le64(p + 4);
        snprintf(where, sizeof where, "ThreadNamesStream[%u] (thread 0x%x)", i, id);
        md_thread *t = NULL;
        for (size_t k = 0; k < d->nthreads && !t; k++)
            if (d->threads[k].id == id)
                t = &d->threads[k];
        if (!t) {
            warn(r, where, "names a thread the thread list does not hold");
            continue;
        }
        if (rva > UINT32_MAX) {
            warn(r, where, "its name at 0x%llx lies past the end of the dump",
                 (unsigned long long)rva);
            continue;
        }
        char *name = utf16_string(r, (uint32_t)rva, where);
        if (name && !*name) {
            free(name);
            name = NULL;
        }
        if (name) {
            free(t->name);
            t->name = name;
        }
    }
}

static void read_breakpad_info(rd *r, const dir_entry *s)
{
    char where[64];
    snprintf(where, sizeof where, "BreakpadInfoStream (0x%x)", s->rva);
    if (s->size < 12) {
        warn(r, where, "%u bytes, fewer than the 12 of MDRawBreakpadInfo: not read", s->size);
        return;
    }
    const uint8_t *p = r->b + s->rva;
    uint32_t validity = le32(p);
    minidump *d = r->d;
    d->has_breakpad = true;
    d->has_dump_thread = validity & 1;
    d->dump_thread = le32(p + 4);
    d->has_requesting_thread = (validity & 2) != 0;
    d->requesting_thread = le32(p + 8);
}

/* Takes key and value (either may be NULL: both are then dropped). */
static void add_annotation(rd *r, long module, char *key, char *value, const char *where)
{
    minidump *d = r->d;
    if (!key || !value || d->nannotations >= MD_MAX_ANNOTATIONS) {
        if (key && value)
            warn(r, where, "more than %d annotations: not read", MD_MAX_ANNOTATIONS);
        free(key);
        free(value);
        return;
    }
    if (!array_grow((void **)&d->annotations, &r->cap_ann, d->nannotations + 1,
                    sizeof *d->annotations)) {
        free(key);
        free(value);
        r->nomem = true;
        return;
    }
    d->annotations[d->nannotations++] = (md_annotation){module, key, value};
}

/* A MinidumpSimpleStringDictionary (u32 count, {key rva, value rva}...). */
static void read_dictionary(rd *r, uint32_t size, uint32_t rva, long module, const char *what)
{
    char where[128];
    snprintf(where, sizeof where, "%s (0x%x)", what, rva);
    if (!size)
        return;
    if (!in_buf(r, rva, size) || size < 4) {
        warn(r, where, "%u bytes lie past the end of the dump: not read", size);
        return;
    }
    uint32_t count = le32(r->b + rva);
    if (count > (size - 4) / 8) {
        warn(r, where, "declares %u entries of 8 bytes; its %u bytes hold at most %u: not read",
             count, size, (size - 4) / 8);
        return;
    }
    for (uint32_t i = 0; i < count && !r->nomem; i++) {
        const uint8_t *p = r->b + rva + 4 + 8 * (size_t)i;
        snprintf(where, sizeof where, "%s[%u]", what, i);
        char *k = utf8_string(r, le32(p), where);
        char *v = k ? utf8_string(r, le32(p + 4), where) : NULL;
        add_annotation(r, module, k, v, where);
    }
}

/* A module's MinidumpModuleCrashpadInfo: its list annotations (an RVA list
 * of strings, kept as "list[i]"), simple annotations and annotation objects
 * (string-typed ones as text; others named by their type and size). */
static void read_module_crashpad(rd *r, uint32_t size, uint32_t rva, long module)
{
    char where[128], what[192];
    snprintf(where, sizeof where, "CrashpadInfoStream module %ld (0x%x)", module, rva);
    if (!in_buf(r, rva, size) || size < 28) {
        warn(r, where, "%u bytes at 0x%x, past the end of the dump or fewer than 28: not read",
             size, rva);
        return;
    }
    const uint8_t *p = r->b + rva;
    /* version u32, then list_annotations, simple_annotations,
     * annotation_objects: each a location (u32 size, u32 rva) */
    uint32_t lsize = le32(p + 4), lrva = le32(p + 8);
    if (lsize) {
        if (!in_buf(r, lrva, lsize) || lsize < 4 || le32(r->b + lrva) > (lsize - 4) / 4) {
            warn(r, where, "its list annotations (%u bytes at 0x%x) do not fit: not read", lsize,
                 lrva);
        } else {
            uint32_t n = le32(r->b + lrva);
            for (uint32_t i = 0; i < n && !r->nomem; i++) {
                snprintf(what, sizeof what, "%s list[%u]", where, i);
                char *v = utf8_string(r, le32(r->b + lrva + 4 + 4 * (size_t)i), what);
                char key[32];
                snprintf(key, sizeof key, "list[%u]", i);
                add_annotation(r, module, v ? strdup(key) : NULL, v, what);
            }
        }
    }
    snprintf(what, sizeof what, "CrashpadInfoStream module %ld simple annotations", module);
    read_dictionary(r, le32(p + 12), le32(p + 16), module, what);
    uint32_t osize = le32(p + 20), orva = le32(p + 24);
    if (!osize)
        return;
    if (!in_buf(r, orva, osize) || osize < 4 || le32(r->b + orva) > (osize - 4) / 12) {
        warn(r, where, "its annotation objects (%u bytes at 0x%x) do not fit: not read", osize,
             orva);
        return;
    }
    uint32_t n = le32(r->b + orva);
    for (uint32_t i = 0; i < n && !r->nomem; i++) {
        /* MinidumpAnnotation: name rva, u16 type, u16 reserved, value rva */
        const uint8_t *q = r->b + orva + 4 + 12 * (size_t)i;
        snprintf(what, sizeof what, "%s annotation object[%u]", where, i);
        char *name = utf8_string(r, le32(q), what);
        uint16_t type = le16(q + 4);
        uint32_t vrva = le32(q + 8);
        char *value = NULL;
        /* the value: a MinidumpByteArray (u32 length, bytes) */
        bool fits = in_buf(r, vrva, 4) && le32(r->b + vrva) <= MD_MAX_STRING &&
                    in_buf(r, (uint64_t)vrva + 4, le32(r->b + vrva));
        if (name && !fits) {
            warn(r, what, "its value at 0x%x lies past the end of the dump: not read", vrva);
        } else if (name && type == 1) { /* kString */
            value = utf8_copy(r, r->b + vrva + 4, le32(r->b + vrva));
        } else if (name) {
            char v[64];
            snprintf(v, sizeof v, "(%u bytes of annotation type 0x%x)", le32(r->b + vrva), type);
            value = strdup(v);
        }
        add_annotation(r, module, name, value, what);
    }
}

static void read_crashpad_info(rd *r, const dir_entry *s)
{
    minidump *d = r->d;
    char where[64];
    snprintf(where, sizeof where, "CrashpadInfoStream (0x%x)", s->rva);
    if (s->size < 52) {
        warn(r, where, "%u bytes, fewer than the 52 of MinidumpCrashpadInfo: not read", s->size);
        return;
    }
    /* version u32, report_id and client_id (16 bytes each), then the
     * process's simple annotations and the module list (locations) */
    const uint8_t *p = r->b + s->rva;
    d->has_crashpad = true;
    guid_to_uuid(p + 4, d->report_id);
    guid_to_uuid(p + 20, d->client_id);
    read_dictionary(r, le32(p + 36), le32(p + 40), -1, "CrashpadInfoStream simple annotations");
    uint32_t msize = le32(p + 44), mrva = le32(p + 48);
    if (!msize)
        return;
    if (!in_buf(r, mrva, msize) || msize < 4 || le32(r->b + mrva) > (msize - 4) / 12) {
        warn(r, where, "its module list (%u bytes at 0x%x) does not fit: not read", msize, mrva);
        return;
    }
    uint32_t n = le32(r->b + mrva);
    for (uint32_t i = 0; i < n && !r->nomem; i++) {
        /* MinidumpModuleCrashpadInfoLink: module index, location */
        const uint8_t *q = r->b + mrva + 4 + 12 * (size_t)i;
        uint32_t index = le32(q);
        if (index >= d->nmodules) {
            char w2[96];
            snprintf(w2, sizeof w2, "%s module link[%u]", where, i);
            warn(r, w2, "names module %u; the module list holds %zu", index, d->nmodules);
            continue;
        }
        read_module_crashpad(r, le32(q + 4), le32(q + 8), (long)index);
    }
}

/* ---- entry ---- */

symd_status minidump_read(const uint8_t *buf, size_t len, minidump *d, symd_err *err)
{
    memset(d, 0, sizeof *d);
    if (!buf || len < 4 || memcmp(buf, MD_MAGIC, 4) != 0)
        return symd_fail(err, SYMD_E_NOT_CRASH_REPORT, "not a minidump: no MDMP magic");
    if (len < 32)
        return SYMD_CORRUPT(err, "not readable as a minidump: %zu bytes, fewer than its 32-byte "
                            "header", len);
    rd r = {.b = buf, .n = len, .d = d, .err = err};
    d->version = le32(buf + 4);
    uint32_t count = le32(buf + 8), dir_rva = le32(buf + 12);
    d->time = le32(buf + 20);
    if ((d->version & 0xffff) != 0xa793)
        warn(&r, "header", "version 0x%x, not 0xa793: read as if it were", d->version);
    dir_entry *e = NULL;
    size_t n = 0;
    symd_status st = check_directory(&r, count, dir_rva, &e, &n);
    if (st) {
        minidump_free(d);
        return st;
    }
    /* System info first: it says how to read the contexts. Modules before
     * Crashpad info (which names modules by index), threads before names. */
    static const uint32_t order[] = {ST_SYSTEM_INFO, ST_MODULE_LIST, ST_THREAD_LIST,
                                     ST_THREAD_NAMES, ST_MEMORY_LIST, ST_MEMORY64_LIST,
                                     ST_EXCEPTION,   ST_MISC_INFO,   ST_BREAKPAD_INFO,
                                     ST_CRASHPAD_INFO};
    size_t cap_regions = 0;
    for (size_t o = 0; o < sizeof order / sizeof order[0] && !r.nomem; o++) {
        for (size_t i = 0; i < n; i++) {
            if (e[i].type != order[o])
                continue;
            switch (e[i].type) {
            case ST_SYSTEM_INFO: read_system_info(&r, &e[i]); break;
            case ST_MODULE_LIST: read_module_list(&r, &e[i]); break;
            case ST_THREAD_LIST: read_thread_list(&r, &e[i]); break;
            case ST_THREAD_NAMES: read_thread_names(&r, &e[i]); break;
            case ST_MEMORY_LIST: read_memory_list(&r, &e[i], &cap_regions); break;
            case ST_MEMORY64_LIST: read_memory64_list(&r, &e[i], &cap_regions); break;
            case ST_EXCEPTION: read_exception(&r, &e[i]); break;
            case ST_MISC_INFO: read_misc_info(&r, &e[i]); break;
            case ST_BREAKPAD_INFO: read_breakpad_info(&r, &e[i]); break;
            case ST_CRASHPAD_INFO: read_crashpad_info(&r, &e[i]); break;
            }
        }
    }
    free(e);
    if (!r.nomem)
        settle_regions(&r, &cap_regions);
    if (r.nomem) {
        minidump_free(d);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory reading the minidump");
    }
    return SYMD_OK;
}

void minidump_free(minidump *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nthreads; i++)
        free(d->threads[i].name);
    free(d->threads);
    for (size_t i = 0; i < d->nmodules; i++) {
        free(d->modules[i].path);
        free(d->modules[i].version);
    }
    free(d->modules);
    free(d->system.csd);
    free(d->system.cpu_vendor);
    for (size_t i = 0; i < d->nannotations; i++) {
        free(d->annotations[i].key);
        free(d->annotations[i].value);
    }
    free(d->annotations);
    free(d->regions);
    for (size_t i = 0; i < d->nwarnings; i++) {
        free(d->warnings[i].where);
        free(d->warnings[i].message);
    }
    free(d->warnings);
    memset(d, 0, sizeof *d);
}

bool minidump_read_memory(const minidump *d, uint64_t addr, size_t len, void *out)
{
    size_t lo = region_upto(d, addr);
    if (!lo)
        return false;
    const md_memory *m = &d->regions[lo - 1];
    uint64_t off = addr - m->base;
    if (off > m->len || len > m->len - off)
        return false;
    memcpy(out, m->bytes + off, len);
    return true;
}

long minidump_module_at(const minidump *d, uint64_t addr)
{
    for (size_t i = 0; i < d->nmodules; i++)
        if (addr >= d->modules[i].base && addr - d->modules[i].base < d->modules[i].size)
            return (long)i;
    return -1;
}

/* PLCrashReporter's binary report (.plcrash): the 7 bytes "plcrash", a
 * version byte (1), then one protobuf CrashReport message. The schema is
 * PLCrashReporter's public one (Source/PLCrashReport.proto, formerly
 * Resources/crash_report.proto): its field numbers are switched on here,
 * read with util/protowire (a bounded wire-format reader, no generated
 * code). Everything the model can hold goes into it; a field that cannot be
 * read (wrong wire type, cut short, a length past the end) and every field
 * of an unknown number is skipped with a warning naming the protobuf path
 * ("CrashReport.threads[0].frames[2].symbol"). Counts of repeated messages
 * are checked against the crash.h limits before anything is allocated. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/hex.h"
#include "../util/protowire.h"
#include "crash_int.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define PL_MAX_CODES 16   /* Mach exception codes written out; more are counted */
#define PL_MAX_STRING 4096 /* bytes of a name, version, reason kept; the rest cut with a warning */

typedef struct {
    cp *p;
    symd_status st;   /* first error that ends the parse (memory, a limit) */
    char path[256];   /* the message being read */
    const char *arch; /* the report's arch ("i386", "arm64", ...), NULL when unknown */
    bool is32;
    /* threads that did not crash but carry registers (not kept: the model
     * holds the crashed thread's) */
    size_t regs_other_threads;
} pl;

typedef struct {
    size_t n;
    uint32_t first;
    unsigned first_type;
} pl_unknown;

static bool pl_keep(pl *x, symd_status st)
{
    if (st && !x->st)
        x->st = st;
    return x->st != SYMD_OK;
}

/* A warning at path[.field]. */
static void pl_warn(pl *x, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pl_warn(pl *x, const char *field, const char *fmt, ...)
{
    if (x->st)
        return;
    char where[320], msg[240];
    if (field)
        snprintf(where, sizeof where, "%s.%s", x->path, field);
    else
        snprintf(where, sizeof where, "%s", x->path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pl_keep(x, cp_warn(x->p, where, "%s", msg));
}

/* path += suffix; returns the old length to restore. */
static size_t pl_push(pl *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t pl_push(pl *x, const char *fmt, ...)
{
    size_t n = strlen(x->path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->path + n, sizeof x->path - n, fmt, ap);
    va_end(ap);
    return n;
}

static void pl_pop(pl *x, size_t n) { x->path[n] = 0; }

static void unknown_field(pl_unknown *u, const pw_field *f)
{
    if (!u->n++) {
        u->first = f->num;
        u->first_type = f->type;
    }
}

static void unknown_done(pl *x, const pl_unknown *u)
{
    if (u->n)
        pl_warn(x, NULL, "%zu field%s of unknown number skipped (the first: field %" PRIu32
                         ", %s)",
                u->n, u->n == 1 ? "" : "s", u->first, pw_type_name(u->first_type));
}

/* The end of a message's loop: a warning when it ended on an error. */
static void msg_end(pl *x, pw_status st, const pw_msg *m)
{
    if (st != PW_END)
        pl_warn(x, NULL, "byte %zu of the message: %s: the rest of the message is skipped",
                m->c.pos, pw_status_str(st));
}

/* Whether field f (named name) has wire type t; a warning when not. */
static bool want(pl *x, const pw_field *f, pw_type t, const char *name)
{
    if (f->type == t)
        return true;
    pl_warn(x, name, "field %" PRIu32 " is %s, expected %s: skipped", f->num,
            pw_type_name(f->type), pw_type_name(t));
    return false;
}

static bool want_varint(pl *x, const pw_field *f, const char *name, uint64_t *v)
{
    if (!want(x, f, PW_VARINT, name))
        return false;
    *v = f->u;
    return true;
}

/* A string field into *dst (replacing what was there), cut at a NUL or
 * PL_MAX_STRING bytes with a warning. */
static void want_str(pl *x, const pw_field *f, const char *name, char **dst)
{
    if (!want(x, f, PW_LEN, name))
        return;
    size_t n = f->len;
    const uint8_t *nul = n ? memchr(f->data, 0, n) : NULL;
    if (nul) {
        pl_warn(x, name, "a NUL byte at %zu of %zu: cut there", (size_t)(nul - f->data), n);
        n = (size_t)(nul - f->data);
    }
    if (n > PL_MAX_STRING) {
        pl_warn(x, name, "%zu bytes: the first %d kept", n, PL_MAX_STRING);
        n = PL_MAX_STRING;
    }
    pl_keep(x, cp_set_str(x->p, dst, (const char *)f->data, n));
}

/* Enters f as a message; false (with a warning) when it is not one. */
static bool enter(pl *x, const pw_msg *m, const pw_field *f, const char *name, pw_msg *sub)
{
    if (!want(x, f, PW_LEN, name))
        return false;
    pw_status st = pw_enter(m, f, sub);
    if (st) {
        pl_warn(x, name, "%s: skipped", pw_status_str(st));
        return false;
    }
    return true;
}

static char *xstrdup(pl *x, const char *s)
{
    char *c = NULL;
    pl_keep(x, cp_set_str(x->p, &c, s, strlen(s)));
    return c;
}

/* ---- names --------------------------------------------------------------- */

/* Mach cpu_type / cpu_subtype (mach/machine.h) → "arm64", "i386", ...; NULL
 * when unknown. */
static const char *mach_arch(uint64_t type, uint64_t subtype)
{
    uint64_t sub = subtype & 0x00ffffffu; /* capability bits (arm64e's PAC ABI) aside */
    switch (type) {
    case 7: return "i386";
    case 0x01000007: return sub == 8 ? "x86_64h" : "x86_64";
    case 12:
        switch (sub) {
        case 5: return "armv4t";
        case 6: return "armv6";
        case 7: return "armv5";
        case 9: return "armv7";
        case 10: return "armv7f";
        case 11: return "armv7s";
        case 12: return "armv7k";
        case 13: return "armv8";
        case 14: return "armv6m";
        case 15: return "armv7m";
        case 16: return "armv7em";
        default: return "arm";
        }
    case 0x0100000c: return sub == 2 ? "arm64e" : "arm64";
    case 0x0200000c: return "arm64_32";
    case 18: return "ppc";
    case 0x01000012: return "ppc64";
    default: return NULL;
    }
}

/* SystemInfo.architecture (deprecated enum) → arch. */
static const char *legacy_arch(uint64_t a)
{
    static const char *const names[] = {"i386", "x86_64", "armv6", "ppc", "ppc64", "armv7"};
    return a < sizeof names / sizeof names[0] ? names[a] : NULL;
}

/* Apple's Code Type for an arch. */
static const char *code_type_of(const char *arch)
{
    if (!arch)
        return NULL;
    if (!strcmp(arch, "i386"))
        return "X86";
    if (!strncmp(arch, "x86_64", 6))
        return "X86-64";
    if (!strcmp(arch, "arm64_32"))
        return "ARM64_32";
    if (!strncmp(arch, "arm64", 5))
        return "ARM-64";
    if (!strncmp(arch, "arm", 3))
        return "ARM";
    if (!strcmp(arch, "ppc64"))
        return "PPC-64";
    if (!strcmp(arch, "ppc"))
        return "PPC";
    return NULL;
}

static bool arch_is32(const char *a)
{
    return a && (!strcmp(a, "i386") || !strcmp(a, "arm64_32") || !strcmp(a, "ppc") ||
                 (!strncmp(a, "arm", 3) && strncmp(a, "arm64", 5)));
}

static const char *mach_exception_name(uint64_t t)
{
    static const char *const names[] = {
        NULL, "EXC_BAD_ACCESS", "EXC_BAD_INSTRUCTION", "EXC_ARITHMETIC", "EXC_EMULATION",
        "EXC_SOFTWARE", "EXC_BREAKPOINT", "EXC_SYSCALL", "EXC_MACH_SYSCALL", "EXC_RPC_ALERT",
        "EXC_CRASH", "EXC_RESOURCE", "EXC_GUARD", "EXC_CORPSE_NOTIFY"};
    return t < sizeof names / sizeof names[0] ? names[t] : NULL;
}

/* The Mach exception a signal stands for, as Apple's reports pair them. */
static const char *exception_of_signal(const char *sig)
{
    if (!sig)
        return NULL;
    if (!strcmp(sig, "SIGSEGV") || !strcmp(sig, "SIGBUS"))
        return "EXC_BAD_ACCESS";
    if (!strcmp(sig, "SIGILL"))
        return "EXC_BAD_INSTRUCTION";
    if (!strcmp(sig, "SIGFPE"))
        return "EXC_ARITHMETIC";
    if (!strcmp(sig, "SIGTRAP"))
        return "EXC_BREAKPOINT";
    return "EXC_CRASH";
}

/* ---- the messages ---------------------------------------------------------- */

typedef struct {
    bool have;
    uint64_t encoding, type, subtype;
    bool have_type;
} pl_proc;

/* Processor {encoding 1, type 2, subtype 3}. */
static void read_processor(pl *x, pw_msg m, pl_proc *out)
{
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    out->have = true;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1: want_varint(x, &f, "encoding", &out->encoding); break;
        case 2: out->have_type |= want_varint(x, &f, "type", &out->type); break;
        case 3: want_varint(x, &f, "subtype", &out->subtype); break;
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
}

/* The arch a Processor names; NULL (with a warning) when it cannot be told. */
static const char *processor_arch(pl *x, const pl_proc *pr)
{
    if (pr->encoding != 1) {
        pl_warn(x, "encoding", "type encoding %" PRIu64 " is not Mach (1): the CPU is unknown",
                pr->encoding);
        return NULL;
    }
    const char *a = mach_arch(pr->type, pr->subtype);
    if (!a)
        pl_warn(x, "type", "Mach CPU type 0x%" PRIx64 " subtype 0x%" PRIx64 " is unknown",
                pr->type, pr->subtype);
    return a;
}

typedef struct {
    char *os_version, *os_build, *date;
    uint64_t os;
    bool have_os;
    const char *legacy_arch;
} pl_sys;

/* SystemInfo {operating_system 1, os_version 2, architecture 3, timestamp 4, os_build 5}. */
static void read_system_info(pl *x, pw_msg m, pl_sys *s)
{
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    uint64_t v;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1: s->have_os |= want_varint(x, &f, "operating_system", &s->os); break;
        case 2: want_str(x, &f, "os_version", &s->os_version); break;
        case 3:
            if (want_varint(x, &f, "architecture", &v)) {
                s->legacy_arch = legacy_arch(v);
                if (!s->legacy_arch && v != 6)
                    pl_warn(x, "architecture", "%" PRIu64 " is no known architecture", v);
            }
            break;
        case 4:
            if (want_varint(x, &f, "timestamp", &v) && v != 0) {
                time_t t = (time_t)(int64_t)v;
                struct tm tm;
                char buf[64];
                if ((int64_t)v < 0 || (int64_t)v > 253402300799LL || !gmtime_r(&t, &tm) ||
                    !strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S +0000", &tm)) {
                    pl_warn(x, "timestamp", "%" PRId64 " is no date: skipped", (int64_t)v);
                } else {
                    free(s->date);
                    s->date = xstrdup(x, buf);
                }
            }
            break;
        case 5: want_str(x, &f, "os_build", &s->os_build); break;
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
}

/* MachineInfo {model 1, processor 2, processor_count 3, logical_processor_count 4}. */
static void read_machine_info(pl *x, pw_msg m, pl_proc *pr)
{
    crash_report *r = x->p->r;
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    uint64_t v;
    pw_msg sub;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1: want_str(x, &f, "model", &r->hardware_model); break;
        case 2:
            if (enter(x, &m, &f, "processor", &sub)) {
                size_t n = pl_push(x, ".processor");
                read_processor(x, sub, pr);
                pl_pop(x, n);
            }
            break;
        case 3: want_varint(x, &f, "processor_count", &v); break;
        case 4: want_varint(x, &f, "logical_processor_count", &v); break;
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
}

/* ApplicationInfo {identifier 1, version 2, marketing_version 3}. */
static void read_app_info(pl *x, pw_msg m)
{
    crash_report *r = x->p->r;
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    char *version = NULL, *marketing = NULL;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1: want_str(x, &f, "identifier", &r->bundle_id); break;
        case 2: want_str(x, &f, "version", &version); break;
        case 3: want_str(x, &f, "marketing_version", &marketing); break;
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
    /* Apple's "Version: 1.0 (1)": the marketing version, the build in parentheses. */
    if (!x->st && (version || marketing)) {
        char buf[2 * PL_MAX_STRING + 8];
        if (marketing && version && strcmp(marketing, version))
            snprintf(buf, sizeof buf, "%s (%s)", marketing, version);
        else
            snprintf(buf, sizeof buf, "%s", marketing ? marketing : version);
        free(r->app_version);
        r->app_version = xstrdup(x, buf);
    }
    free(version);
    free(marketing);
}

typedef struct {
    char *path;
    bool native, have_native;
} pl_pinfo;

/* ProcessInfo {process_name 1, process_id 2, process_path 3, parent_process_name 4,
 * parent_process_id 5, native 6, start_time 7}. */
static void read_process_info(pl *x, pw_msg m, pl_pinfo *pi)
{
    crash_report *r = x->p->r;
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    uint64_t v;
    char *parent = NULL;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1: want_str(x, &f, "process_name", &r->process); break;
        case 2: want_varint(x, &f, "process_id", &v); break;
        case 3: want_str(x, &f, "process_path", &pi->path); break;
        case 4: want_str(x, &f, "parent_process_name", &parent); break;
        case 5: want_varint(x, &f, "parent_process_id", &v); break;
        case 6:
            if (want_varint(x, &f, "native", &v)) {
                pi->native = v != 0;
                pi->have_native = true;
            }
            break;
        case 7: want_varint(x, &f, "start_time", &v); break;
        default: unknown_field(&u, &f);
        }
    }
    free(parent);
    msg_end(x, st, &m);
    unknown_done(x, &u);
}

/* ReportInfo {user_requested 1, uuid 2}. */
static void read_report_info(pl *x, pw_msg m, bool *user_requested)
{
    crash_report *r = x->p->r;
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    uint64_t v;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1:
            if (want_varint(x, &f, "user_requested", &v))
                *user_requested = v != 0;
            break;
        case 2:
            if (!want(x, &f, PW_LEN, "uuid"))
                break;
            if (f.len != 16) {
                pl_warn(x, "uuid", "%zu bytes, not 16: no incident identifier", f.len);
                break;
            }
            char buf[37];
            uuid_format(f.data, buf);
            free(r->incident_id);
            r->incident_id = xstrdup(x, buf);
            break;
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
}

/* Signal {name 1, code 2, address 3, mach_exception 4 {type 1, codes 2}}. */
static void read_signal(pl *x, pw_msg m)
{
    crash_report *r = x->p->r;
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    char *code = NULL;
    uint64_t addr = 0, mtype = 0;
    bool have_addr = false, have_mach = false, have_mtype = false;
    uint64_t codes[PL_MAX_CODES];
    size_t ncodes = 0, extra = 0;
    pw_msg sub;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1: want_str(x, &f, "name", &r->exception_signal); break;
        case 2: want_str(x, &f, "code", &code); break;
        case 3: have_addr |= want_varint(x, &f, "address", &addr); break;
        case 4: {
            if (!enter(x, &m, &f, "mach_exception", &sub))
                break;
            have_mach = true;
            size_t n = pl_push(x, ".mach_exception");
            pl_unknown mu = {0};
            pw_field g;
            pw_status ms;
            ncodes = extra = 0;
            while ((ms = pw_next(&sub, &g)) == PW_OK && !x->st) {
                if (g.num == 1) {
                    have_mtype |= want_varint(x, &g, "type", &mtype);
                } else if (g.num == 2 && g.type == PW_VARINT) {
                    if (ncodes < PL_MAX_CODES)
                        codes[ncodes++] = g.u;
                    else
                        extra++;
                } else if (g.num == 2 && g.type == PW_LEN) {
                    /* packed: varints back to back */
                    cursor c = cur_make(g.data, g.len);
                    uint64_t v;
                    pw_status ps = PW_OK;
                    while (cur_left(&c) && (ps = pw_varint(&c, &v)) == PW_OK) {
                        if (ncodes < PL_MAX_CODES)
                            codes[ncodes++] = v;
                        else
                            extra++;
                    }
                    if (ps)
                        pl_warn(x, "codes", "packed codes: %s: the rest skipped",
                                pw_status_str(ps));
                } else if (g.num == 2) {
                    want(x, &g, PW_VARINT, "codes");
                } else {
                    unknown_field(&mu, &g);
                }
            }
            msg_end(x, ms, &sub);
            unknown_done(x, &mu);
            if (extra)
                pl_warn(x, "codes", "%zu codes: the first %d kept", ncodes + extra, PL_MAX_CODES);
            if (!have_mtype)
                pl_warn(x, "type", "absent: the exception type is told from the signal");
            pl_pop(x, n);
            break;
        }
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
    if (x->st) {
        free(code);
        return;
    }
    /* Exception Type: the Mach exception's, else the one the signal stands for. */
    const char *et = have_mach && have_mtype ? mach_exception_name(mtype) : NULL;
    char tbuf[32];
    if (have_mach && have_mtype && !et) {
        snprintf(tbuf, sizeof tbuf, "0x%" PRIx64, mtype);
        et = tbuf;
    }
    if (!et)
        et = exception_of_signal(r->exception_signal);
    if (et)
        r->exception_type = xstrdup(x, et);
    /* Exception Codes: "CODE at 0xADDR", the Mach codes after it when given. */
    char buf[PL_MAX_STRING + 64 + PL_MAX_CODES * 24];
    size_t n = 0;
    buf[0] = 0;
    int w = x->is32 ? 8 : 16;
    if (code || have_addr)
        n = (size_t)snprintf(buf, sizeof buf, "%s%s0x%0*" PRIx64, code ? code : "",
                             code ? " at " : "", w, addr);
    bool paren = n > 0;
    for (size_t i = 0; i < ncodes && n < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s0x%0*" PRIx64,
                              i ? ", " : paren ? " (Mach codes " : "", w, codes[i]);
    if (ncodes && paren && n < sizeof buf)
        snprintf(buf + n, sizeof buf - n, ")");
    if (buf[0])
        r->exception_codes = xstrdup(x, buf);
    free(code);
}

/* Symbol {name 1, start_address 2, end_address 3} of a frame. */
static void read_symbol(pl *x, pw_msg m, crash_frame *fr)
{
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    uint64_t start = 0, end;
    bool have_start = false;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1: want_str(x, &f, "name", &fr->symbol); break;
        case 2: have_start |= want_varint(x, &f, "start_address", &start); break;
        case 3: want_varint(x, &f, "end_address", &end); break;
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
    if (have_start && fr->address >= start) {
        fr->has_symbol_offset = true;
        fr->symbol_offset = fr->address - start;
    } else if (have_start) {
        pl_warn(x, "start_address", "0x%" PRIx64 " is past the pc 0x%" PRIx64
                ": no offset", start, fr->address);
    }
}

/* StackFrame {pc 3, symbol 6; 4 and 5: the symbol name and start address of
 * Bitstadium's fork} as a frame of threads[t]. A frame without pc is
 * skipped with a warning. */
static void read_frame(pl *x, pw_msg m, size_t t)
{
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    uint64_t pc = 0, fork_start = 0;
    bool have_pc = false, have_fork_start = false;
    char *fork_name = NULL;
    bool have_sym = false;
    pw_msg sym = {0};
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 3: have_pc |= want_varint(x, &f, "pc", &pc); break;
        case 4: want_str(x, &f, "symbol_name", &fork_name); break;
        case 5: have_fork_start |= want_varint(x, &f, "symbol_start", &fork_start); break;
        case 6: have_sym |= enter(x, &m, &f, "symbol", &sym); break;
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
    if (x->st || !have_pc) {
        if (!x->st)
            pl_warn(x, "pc", "absent: the frame is skipped");
        free(fork_name);
        return;
    }
    crash_frame *fr;
    if (pl_keep(x, cp_new_frame(x->p, t, &fr, x->path))) {
        free(fork_name);
        return;
    }
    fr->address = pc;
    if (have_sym) {
        size_t n = pl_push(x, ".symbol");
        read_symbol(x, sym, fr);
        pl_pop(x, n);
    }
    if (fork_name && !fr->symbol) {
        fr->symbol = fork_name;
        fork_name = NULL;
        if (have_fork_start && pc >= fork_start) {
            fr->has_symbol_offset = true;
            fr->symbol_offset = pc - fork_start;
        }
    }
    free(fork_name);
}

/* The frames (field num) of message [p, p+len) as frames of threads[t]:
 * counted against CRASH_MAX_FRAMES first. */
static void read_frames(pl *x, const pw_msg *parent, uint32_t num, size_t t)
{
    crash_report *r = x->p->r;
    size_t room = CRASH_MAX_FRAMES - r->total_frames;
    size_t n = pw_count(parent->c.p, parent->c.len, num, room);
    if (n > room) {
        pl_keep(x, symd_fail(x->p->err, SYMD_E_TOO_LARGE,
                             "%s.frames: more than %d frames in the report", x->path,
                             CRASH_MAX_FRAMES));
        return;
    }
    pw_msg m = *parent;
    m.c.pos = 0;
    pw_field f;
    size_t k = 0;
    pw_msg sub;
    while (pw_next(&m, &f) == PW_OK && !x->st) {
        if (f.num != num)
            continue;
        size_t pn = pl_push(x, ".frames[%zu]", k++);
        if (f.type != PW_LEN) {
            pl_warn(x, NULL, "field %" PRIu32 " is %s, expected length-delimited: frame "
                    "skipped", f.num, pw_type_name(f.type));
        } else if (pw_enter(&m, &f, &sub)) {
            pl_warn(x, NULL, "%s: frame skipped", pw_status_str(PW_E_DEPTH));
        } else {
            read_frame(x, sub, t);
        }
        pl_pop(x, pn);
    }
}

/* RegisterValue {name 1, value 2} into the report's registers. */
static void read_register(pl *x, pw_msg m)
{
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    char *name = NULL;
    uint64_t v = 0;
    bool have_v = false;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1: want_str(x, &f, "name", &name); break;
        case 2: have_v |= want_varint(x, &f, "value", &v); break;
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
    if (!x->st && (!name || !*name || !have_v)) {
        pl_warn(x, NULL, "a register without %s: skipped", !have_v ? "value" : "name");
    } else if (!x->st && strlen(name) > 32) {
        pl_warn(x, "name", "%zu bytes: register skipped", strlen(name));
    } else if (!x->st) {
        char val[24];
        int vl = snprintf(val, sizeof val, x->is32 && v <= 0xffffffffu ? "0x%08" PRIx64
                                                                       : "0x%016" PRIx64, v);
        pl_keep(x, cp_add_register(x->p, name, strlen(name), val, (size_t)vl, x->path));
    }
    free(name);
}

/* Thread {thread_number 1, frames 2, crashed 3, registers 4} as threads[t]. */
static void read_thread(pl *x, pw_msg m, size_t t)
{
    crash_report *r = x->p->r;
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    uint64_t v;
    bool have_number = false;
    size_t nregs = 0;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1:
            if (want_varint(x, &f, "thread_number", &v)) {
                if (v > 0x7fffffff)
                    pl_warn(x, "thread_number", "%" PRIu64 " is past 2^31-1: skipped", v);
                else {
                    r->threads[t].number = (long)v;
                    have_number = true;
                }
            }
            break;
        case 2: break; /* frames: below, counted first */
        case 3:
            if (want_varint(x, &f, "crashed", &v))
                r->threads[t].crashed = v != 0;
            break;
        case 4: nregs++; break; /* registers: below, when this thread crashed */
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
    if (x->st)
        return;
    /* only the fields before an error are read */
    pw_msg whole = m;
    whole.c.len = m.c.pos;
    if (!have_number)
        pl_warn(x, "thread_number", "absent");
    read_frames(x, &whole, 2, t);
    if (x->st || !nregs)
        return;
    if (r->threads[t].crashed && r->crashed_thread < 0) {
        r->crashed_thread = (long)t;
        if (nregs > CRASH_MAX_REGISTERS)
            pl_warn(x, "registers", "%zu registers: the first %d kept", nregs,
                    CRASH_MAX_REGISTERS);
        pw_msg rm = whole;
        rm.c.pos = 0;
        size_t k = 0;
        pw_msg sub;
        while (pw_next(&rm, &f) == PW_OK && !x->st && r->nregisters < CRASH_MAX_REGISTERS) {
            if (f.num != 4)
                continue;
            size_t pn = pl_push(x, ".registers[%zu]", k++);
            if (enter(x, &rm, &f, NULL, &sub))
                read_register(x, sub);
            pl_pop(x, pn);
        }
    } else {
        x->regs_other_threads++;
    }
}

/* Exception {name 1, reason 2, frames 3}: the application specific
 * information ("*** Terminating app due to uncaught exception ...") and a
 * Last Exception Backtrace thread. */
static void read_exception(pl *x, pw_msg m)
{
    crash_report *r = x->p->r;
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    char *name = NULL, *reason = NULL;
    bool frames = false;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1: want_str(x, &f, "name", &name); break;
        case 2: want_str(x, &f, "reason", &reason); break;
        case 3: frames = true; break;
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
    if (!x->st && (name || reason)) {
        size_t cap = strlen(name ? name : "") + strlen(reason ? reason : "") + 80;
        char *s = malloc(cap);
        if (!s) {
            pl_keep(x, cp_nomem(x->p));
        } else {
            snprintf(s, cap, "*** Terminating app due to uncaught exception '%s', reason: '%s'",
                     name ? name : "", reason ? reason : "");
            free(r->app_specific);
            r->app_specific = s;
        }
    }
    free(name);
    free(reason);
    if (x->st || !frames)
        return;
    crash_thread *th;
    if (pl_keep(x, cp_new_thread(x->p, &th, x->path)))
        return;
    th->role = CRASH_THREAD_LAST_EXCEPTION;
    th->number = -1;
    static const char title[] = "Last Exception Backtrace:";
    if (pl_keep(x, cp_set_str(x->p, &th->title, title, sizeof title - 1)))
        return;
    pw_msg whole = m;
    whole.c.len = m.c.pos;
    read_frames(x, &whole, 3, x->p->r->nthreads - 1);
}

/* BinaryImage {base_address 1, size 2, name 3, uuid 4, code_type 5}. */
static void read_image(pl *x, pw_msg m, crash_image *im)
{
    pl_unknown u = {0};
    pw_field f;
    pw_status st;
    uint64_t base = 0, size = 0;
    bool have_base = false, have_size = false, have_uuid = false;
    pl_proc pr = {0};
    pw_msg sub;
    while ((st = pw_next(&m, &f)) == PW_OK && !x->st) {
        switch (f.num) {
        case 1: have_base |= want_varint(x, &f, "base_address", &base); break;
        case 2: have_size |= want_varint(x, &f, "size", &size); break;
        case 3: want_str(x, &f, "name", &im->path); break;
        case 4:
            if (!want(x, &f, PW_LEN, "uuid"))
                break;
            have_uuid = true;
            if (f.len == 16) {
                memcpy(im->uuid, f.data, 16);
                im->has_uuid = true;
            } else {
                im->has_uuid = false;
                pl_warn(x, "uuid", "%zu bytes, not 16: the image has no UUID and cannot be "
                        "symbolicated", f.len);
            }
            break;
        case 5:
            if (enter(x, &m, &f, "code_type", &sub)) {
                size_t n = pl_push(x, ".code_type");
                read_processor(x, sub, &pr);
                pl_pop(x, n);
            }
            break;
        default: unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
    if (x->st)
        return;
    if (!have_base)
        pl_warn(x, "base_address", "absent: taken as 0");
    if (!have_uuid)
        pl_warn(x, "uuid", "absent (an old report): the image cannot be symbolicated");
    im->load_address = base;
    if (have_size && size > 0) {
        if (u64_add(base, size - 1, &im->end_address))
            im->has_end = true;
        else
            pl_warn(x, "size", "base + size passes 2^64: the end is left unknown");
    }
    if (im->path) {
        const char *b = strrchr(im->path, '/');
        b = b ? b + 1 : im->path;
        if (*b)
            pl_keep(x, cp_set_str(x->p, &im->name, b, strlen(b)));
    } else {
        pl_warn(x, "name", "absent");
    }
    const char *a = NULL;
    if (pr.have) {
        size_t n = pl_push(x, ".code_type");
        a = processor_arch(x, &pr);
        pl_pop(x, n);
    }
    if (!a)
        a = x->arch; /* old reports: the images are the report's arch */
    if (a && !x->st)
        im->arch = xstrdup(x, a);
}

/* ---- the report ---------------------------------------------------------- */

/* The last occurrence of a singular message field, its count. */
typedef struct {
    pw_field f;
    size_t n;
} pl_one;

static void one_msg(pl *x, const pw_msg *top, pl_one *o, const char *name,
                    void (*fn)(pl *, pw_msg, void *), void *arg)
{
    if (!o->n || x->st)
        return;
    size_t pn = pl_push(x, ".%s", name);
    if (o->n > 1)
        pl_warn(x, NULL, "given %zu times: the last is read", o->n);
    pw_msg sub;
    if (enter(x, top, &o->f, NULL, &sub))
        fn(x, sub, arg);
    pl_pop(x, pn);
}

/* Adapters of the readers to one_msg. */
static void sys_fn(pl *x, pw_msg m, void *a) { read_system_info(x, m, a); }
static void mach_fn(pl *x, pw_msg m, void *a) { read_machine_info(x, m, a); }
static void app_fn(pl *x, pw_msg m, void *a) { (void)a; read_app_info(x, m); }
static void proc_fn(pl *x, pw_msg m, void *a) { read_process_info(x, m, a); }
static void rinfo_fn(pl *x, pw_msg m, void *a) { read_report_info(x, m, a); }
static void sig_fn(pl *x, pw_msg m, void *a) { (void)a; read_signal(x, m); }
static void exc_fn(pl *x, pw_msg m, void *a) { (void)a; read_exception(x, m); }

static symd_status read_report(pl *x, const uint8_t *buf, size_t len)
{
    crash_report *r = x->p->r;
    snprintf(x->path, sizeof x->path, "CrashReport");
    /* Pass 1: where each singular message is, how many threads and images,
     * and where the message ends (at the end, or at the first field that
     * cannot be read: nothing past it is read). */
    enum { F_SYS = 1, F_APP, F_THREADS, F_IMAGES, F_EXC, F_SIG, F_PROC, F_MACH, F_RINFO,
           F_CUSTOM, F_COUNT };
    pl_one one[F_COUNT] = {{{0}, 0}};
    pl_unknown u = {0};
    pw_msg top = pw_root(buf, len), m = top;
    pw_field f;
    pw_status st;
    size_t nthreads = 0, nimages = 0;
    while ((st = pw_next(&m, &f)) == PW_OK) {
        if (f.num == F_THREADS) {
            if (++nthreads > CRASH_MAX_THREADS)
                return symd_fail(x->p->err, SYMD_E_TOO_LARGE,
                                 "CrashReport.threads: more than %d threads", CRASH_MAX_THREADS);
        } else if (f.num == F_IMAGES) {
            if (++nimages > CRASH_MAX_IMAGES)
                return symd_fail(x->p->err, SYMD_E_TOO_LARGE,
                                 "CrashReport.binary_images: more than %d images",
                                 CRASH_MAX_IMAGES);
        } else if (f.num < F_COUNT) {
            one[f.num].f = f;
            one[f.num].n++;
        } else {
            unknown_field(&u, &f);
        }
    }
    msg_end(x, st, &m);
    unknown_done(x, &u);
    top.c.len = m.c.pos; /* what reads */

    /* What the machine is first: register and address widths follow it. */
    pl_proc pr = {0};
    pl_sys sys = {0};
    pl_pinfo pi = {0};
    bool user_requested = false;
    one_msg(x, &top, &one[F_MACH], "machine_info", mach_fn, &pr);
    one_msg(x, &top, &one[F_SYS], "system_info", sys_fn, &sys);
    if (pr.have) {
        size_t pn = pl_push(x, ".machine_info.processor");
        x->arch = processor_arch(x, &pr);
        pl_pop(x, pn);
    }
    if (!x->arch)
        x->arch = sys.legacy_arch;
    x->is32 = arch_is32(x->arch);
    one_msg(x, &top, &one[F_PROC], "process_info", proc_fn, &pi);
    one_msg(x, &top, &one[F_APP], "application_info", app_fn, NULL);
    one_msg(x, &top, &one[F_RINFO], "report_info", rinfo_fn, &user_requested);
    one_msg(x, &top, &one[F_SIG], "signal", sig_fn, NULL);
    if (!one[F_SYS].n)
        pl_warn(x, "system_info", "absent");
    if (!one[F_SIG].n)
        pl_warn(x, "signal", "absent: no exception type");
    if (x->st)
        goto out;

    const char *ct = code_type_of(x->arch);
    if (ct) {
        char buf2[48];
        snprintf(buf2, sizeof buf2, "%s (%s)", ct,
                 pi.have_native && !pi.native ? "Translated" : "Native");
        r->code_type = xstrdup(x, buf2);
    }
    if (sys.have_os || sys.os_version) {
        static const char *const os_names[] = {"Mac OS X", "iPhone OS", "iPhone OS Simulator",
                                               NULL, "tvOS"};
        const char *os = sys.have_os && sys.os < 5 ? os_names[sys.os] : NULL;
        if (sys.have_os && sys.os >= 5)
            pl_warn(x, "system_info.operating_system", "%" PRIu64 " is no known system",
                    sys.os);
        char b[2 * PL_MAX_STRING + 64];
        snprintf(b, sizeof b, "%s%s%s%s%s%s", os ? os : "", os && sys.os_version ? " " : "",
                 sys.os_version ? sys.os_version : "", sys.os_build ? " (" : "",
                 sys.os_build ? sys.os_build : "", sys.os_build ? ")" : "");
        if (*b)
            r->os_version = xstrdup(x, b);
    }
    if (sys.date)
        r->date = xstrdup(x, sys.date);
    if (user_requested && !x->st)
        r->termination = xstrdup(x, "Report requested by the application: no crash");

    /* Threads: the exception's backtrace first, as Apple's text puts it. */
    one_msg(x, &top, &one[F_EXC], "exception", exc_fn, NULL);
    m = top;
    size_t ti = 0, ii = 0;
    while (!x->st && pw_next(&m, &f) == PW_OK) {
        if (f.num != F_THREADS)
            continue;
        size_t pn = pl_push(x, ".threads[%zu]", ti++);
        crash_thread *th;
        pw_msg sub;
        if (!pl_keep(x, cp_new_thread(x->p, &th, x->path)) && enter(x, &m, &f, NULL, &sub))
            read_thread(x, sub, r->nthreads - 1);
        pl_pop(x, pn);
    }
    if (!x->st && x->regs_other_threads)
        pl_warn(x, "threads", "registers of %zu thread%s that did not crash are not kept (the "
                "report keeps the crashed thread's)", x->regs_other_threads,
                x->regs_other_threads == 1 ? "" : "s");
    /* Thread numbers are unique in a report: say so once when not (both kept). */
    for (size_t t = 0, dup = 0; t < r->nthreads && !dup && !x->st; t++)
        for (size_t v = t + 1; v < r->nthreads && !dup; v++)
            if (r->threads[t].role == CRASH_THREAD_NORMAL && r->threads[t].number >= 0 &&
                r->threads[v].number == r->threads[t].number) {
                dup = 1;
                pl_warn(x, "threads", "thread number %ld is given twice: both kept",
                        r->threads[t].number);
            }
    for (size_t t = 0; t < r->nthreads && !x->st; t++)
        if (r->threads[t].crashed && (long)t != r->crashed_thread) {
            if (r->crashed_thread < 0) {
                r->crashed_thread = (long)t;
            } else {
                snprintf(x->path, sizeof x->path, "CrashReport.threads");
                pl_warn(x, NULL, "thread %ld says it crashed too: thread %ld is the crashed one",
                        r->threads[t].number, r->threads[r->crashed_thread].number);
                snprintf(x->path, sizeof x->path, "CrashReport");
                r->threads[t].crashed = false;
            }
        }

    m = top;
    while (!x->st && pw_next(&m, &f) == PW_OK) {
        if (f.num != F_IMAGES)
            continue;
        size_t pn = pl_push(x, ".binary_images[%zu]", ii++);
        crash_image *im;
        pw_msg sub;
        if (!pl_keep(x, cp_new_image(x->p, &im, x->path)) && enter(x, &m, &f, NULL, &sub))
            read_image(x, sub, im);
        pl_pop(x, pn);
    }
    if (one[F_CUSTOM].n && !x->st) {
        char *custom = NULL;
        size_t pn = pl_push(x, ".custom_data");
        want_str(x, &one[F_CUSTOM].f, NULL, &custom);
        pl_pop(x, pn);
        if (custom && !x->st) {
            size_t cap = strlen(custom) + (r->app_specific ? strlen(r->app_specific) : 0) + 16;
            char *s = malloc(cap);
            if (!s)
                pl_keep(x, cp_nomem(x->p));
            else {
                snprintf(s, cap, "%s%sCustom data: %s", r->app_specific ? r->app_specific : "",
                         r->app_specific ? "\n" : "", custom);
                free(r->app_specific);
                r->app_specific = s;
            }
        }
        free(custom);
    }
    if (x->st)
        goto out;

    /* The app's image: the process path's, else the first one. */
    crash_image *app = NULL;
    for (size_t i = 0; i < r->nimages && pi.path && !app; i++)
        if (r->images[i].path && !strcmp(r->images[i].path, pi.path))
            app = &r->images[i];
    if (!app && r->nimages)
        app = &r->images[0];
    if (app)
        app->is_app = true;
    if (!r->process && app && app->name)
        r->process = xstrdup(x, app->name);

    /* Frames to their images by address; the image's name and load address
     * on the frame, as a text report's frame line gives them. */
    if (x->st || pl_keep(x, cp_resolve_text_images(x->p)))
        goto out;
    for (size_t t = 0; t < r->nthreads && !x->st; t++)
        for (size_t k = 0; k < r->threads[t].nframes && !x->st; k++) {
            crash_frame *fr = &r->threads[t].frames[k];
            if (fr->image < 0)
                continue;
            const crash_image *im = &r->images[fr->image];
            fr->has_load = true;
            fr->load_address = im->load_address;
            if (im->name)
                pl_keep(x, cp_set_str(x->p, &fr->image_name, im->name, strlen(im->name)));
        }
out:
    free(sys.os_version);
    free(sys.os_build);
    free(sys.date);
    free(pi.path);
    return x->st;
}

symd_status crash_parse_plcrash(cp *p, const uint8_t *buf, size_t len)
{
    crash_report *r = p->r;
    r->format = CRASH_FORMAT_PLCRASH;
    r->kind = CRASH_KIND_CRASH;
    r->text_body = false;
    if (len < PLCRASH_HEADER_LEN)
        return symd_fail(p->err, SYMD_E_NOT_CRASH_REPORT,
                         "a .plcrash file of %zu bytes: the magic and version byte take %d",
                         len, PLCRASH_HEADER_LEN);
    if (buf[7] != PLCRASH_VERSION)
        return symd_fail(p->err, SYMD_E_NOT_CRASH_REPORT,
                         ".plcrash file version %u: only version %d is known", buf[7],
                         PLCRASH_VERSION);
    pl x = {.p = p};
    return read_report(&x, buf + PLCRASH_HEADER_LEN, len - PLCRASH_HEADER_LEN);
}

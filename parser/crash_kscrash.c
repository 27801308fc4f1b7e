/* KSCrash JSON reports (and forks that keep its shape: a top-level "report"
 * object with "id" and "version", "system", "crash", "binary_images") in,
 * the crash model out. Every integer goes through util/jsonbig, so 64-bit
 * addresses are exact.
 *
 * Where things go:
 *   report.id → incident_id; report.timestamp → date; report.version →
 *   report_version ("KSCrash 2.0");
 *   system: process_name, CFBundleIdentifier, CFBundleShortVersionString
 *   (CFBundleVersion), system_name system_version (os_version), machine,
 *   cpu_arch → the header fields (code_type "ARM", "ARM-64", "X86-64"...);
 *   binary_images[] → images (image_addr the load address, image_size the
 *   end, uuid, name as the path and its last component as the name,
 *   cpu_type/cpu_subtype as the arch name; the app is the image at
 *   CFBundleExecutablePath or with app_uuid);
 *   crash.error → exception type (mach exception name), signal, codes
 *   ("KERN_INVALID_ADDRESS at 0x..." or "0xCODE, 0xSUBCODE"); an NSException
 *   or C++ exception and crash.diagnosis → the first lines of app_specific;
 *   the NSException's own backtrace → a Last Exception Backtrace thread; a
 *   deadlock makes the report a hang;
 *   crash.threads[] → threads (index, name, dispatch_queue, crashed,
 *   backtrace.contents: instruction_addr, object_addr/object_name → the
 *   frame's image, symbol_name + (instruction_addr - symbol_addr) → the
 *   report's own symbol); the crashed thread's registers (basic, then
 *   exception) in Apple's order;
 *   recrash_report (a crash inside the crash handler): its threads (or its
 *   crash.crashed_thread) as CRASH_THREAD_RECRASH sections after the others,
 *   its error as a line of app_specific and a warning.
 * Everything else (user data verbatim, system facts, notable addresses,
 * stack dumps, other threads' registers, fields symd does not know) is kept
 * as "json.path: value" lines under the first lines of app_specific; a
 * field symd does not know also gets a warning naming its JSON path. */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/cursor.h"
#include "../util/dynbuf.h"
#include "../util/hex.h"
#include "../util/jsonbig.h"
#include "../util/util.h"
#include "crash_int.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define KS_TEXT_MAX (1u << 20) /* bytes of app_specific assembled at most */
#define KS_VALUE_DEPTH 32      /* nesting shown of a kept value */

typedef struct {
    uint64_t lo;
    size_t idx;
} ks_img;

typedef struct {
    cp *p;
    symd_status st;  /* first failure (memory, limits); sticky */
    bool is32;       /* registers and codes in 32-bit widths */
    dynbuf head;     /* app_specific: exception, diagnosis, recrash lines */
    dynbuf extra;    /* app_specific: "path: value" lines */
    bool over, oom, cut_depth;
    ks_img *byaddr;  /* images sorted by load address */
    const char *arch; /* system.cpu_arch (or the app image's), borrowed */
    bool regs_taken;  /* the crashed thread's registers are read */
    size_t nbyaddr;
} kp;

/* snprintf for paths and messages: cut at cap, never failing. */
static int kfmt(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int kfmt(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
    return n;
}

/* ---- warnings, text ------------------------------------------------------- */

static void kkeep(kp *k, symd_status st)
{
    if (st && !k->st)
        k->st = st;
}

static void kwarn(kp *k, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void kwarn(kp *k, const char *where, const char *fmt, ...)
{
    char msg[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kkeep(k, cp_warn(k->p, where, "%s", msg));
}

static void put(kp *k, dynbuf *b, const char *s, size_t n)
{
    if (k->over || k->oom)
        return;
    if (!dynbuf_add(b, s, n)) {
        if (dynbuf_over_limit(b, n))
            k->over = true;
        else
            k->oom = true;
    }
}

static void puts_(kp *k, dynbuf *b, const char *s) { put(k, b, s, strlen(s)); }

static void putf(kp *k, dynbuf *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void putf(kp *k, dynbuf *b, const char *fmt, ...)
{
    char tmp[200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    put(k, b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void put_quoted(kp *k, dynbuf *b, const char *s, size_t n)
{
    puts_(k, b, "\"");
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(k, b, s + from, i - from);
        char esc[8];
        if (c == '"' || c == '\\')
            kfmt(esc, sizeof esc, "\\%c", c);
        else if (c == '\n')
            kfmt(esc, sizeof esc, "\\n");
        else if (c == '\t')
            kfmt(esc, sizeof esc, "\\t");
        else
            kfmt(esc, sizeof esc, "\\u%04x", c);
        puts_(k, b, esc);
        from = i + 1;
    }
    put(k, b, s + from, n - from);
    puts_(k, b, "\"");
}

/* v as compact JSON, as the report wrote it (big integers as their digits);
 * nesting past KS_VALUE_DEPTH is shown as an ellipsis (and warned once). */
static void put_value(kp *k, dynbuf *b, const json_t *v, int depth)
{
    size_t n;
    const char *big = jsonbig_literal(v, &n);
    if (big) {
        put(k, b, big, n);
        return;
    }
    uint64_t skipped;
    if (jsonbig_skipped(v, &skipped)) {
        putf(k, b, "(%" PRIu64 " bytes, not read: in the stored original)", skipped);
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (depth >= KS_VALUE_DEPTH) {
            k->cut_depth = true;
            puts_(k, b, "{...}");
            return;
        }
        const char *key;
        json_t *m;
        bool first = true;
        puts_(k, b, "{");
        json_object_foreach((json_t *)v, key, m) {
            if (k->over || k->oom)
                break;
            if (!first)
                puts_(k, b, ", ");
            first = false;
            put_quoted(k, b, key, strlen(key));
            puts_(k, b, ": ");
            put_value(k, b, m, depth + 1);
        }
        puts_(k, b, "}");
        return;
    }
    case JSON_ARRAY:
        if (depth >= KS_VALUE_DEPTH) {
            k->cut_depth = true;
            puts_(k, b, "[...]");
            return;
        }
        puts_(k, b, "[");
        for (size_t i = 0; i < json_array_size(v) && !k->over && !k->oom; i++) {
            if (i)
                puts_(k, b, ", ");
            put_value(k, b, json_array_get(v, i), depth + 1);
        }
        puts_(k, b, "]");
        return;
    case JSON_STRING:
        put_quoted(k, b, json_string_value(v), json_string_length(v));
        return;
    case JSON_INTEGER:
        putf(k, b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return;
    case JSON_REAL: {
        char s[40];
        double d = json_real_value(v);
        kfmt(s, sizeof s, "%.15g", d);
        if (strtod(s, NULL) != d)
            kfmt(s, sizeof s, "%.17g", d);
        puts_(k, b, s);
        return;
    }
    case JSON_TRUE: puts_(k, b, "true"); return;
    case JSON_FALSE: puts_(k, b, "false"); return;
    default: puts_(k, b, "null"); return;
    }
}

/* A "path: value" line of the kept fields. */
static void keep_value(kp *k, const char *path, const json_t *v)
{
    uint64_t skipped;
    if (jsonbig_skipped(v, &skipped))
        kwarn(k, path, "a value of %" PRIu64 " bytes symd only keeps, past %u bytes of such "
                       "values: skipped unread (the original is stored whole)",
              skipped, KSCRASH_UNKNOWN_BUDGET);
    puts_(k, &k->extra, path);
    puts_(k, &k->extra, ": ");
    put_value(k, &k->extra, v, 0);
    puts_(k, &k->extra, "\n");
}

static bool in_list(const char *key, const char *const *list)
{
    for (size_t i = 0; list && list[i]; i++)
        if (strcmp(key, list[i]) == 0)
            return true;
    return false;
}

/* The members of obj (at path) that are not in read: kept as lines; those
 * not in known either are also warned. known NULL: every member is known. */
static void keep_others(kp *k, const json_t *obj, const char *path, const char *const *read,
                        const char *const *known, bool all_known)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (k->st)
            return;
        if (in_list(key, read))
            continue;
        char where[300];
        kfmt(where, sizeof where, "%s%s%s", path, path[0] ? "." : "", key);
        keep_value(k, where, v);
        if (!all_known && !in_list(key, known))
            kwarn(k, where, "%s symd does not read: kept in app_specific", jsonbig_describe(v));
    }
}

/* ---- typed reads ------------------------------------------------------------ */

typedef enum { KV_ABSENT, KV_OK, KV_BAD } kv;

static kv ku64(kp *k, const json_t *obj, const char *key, const char *path, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return KV_ABSENT;
    if (jsonbig_u64(v, out))
        return KV_OK;
    char where[300];
    kfmt(where, sizeof where, "%s.%s", path, key);
    kwarn(k, where, "%s, not an unsigned 64-bit integer: skipped", jsonbig_describe(v));
    return KV_BAD;
}

static kv kstr(kp *k, const json_t *obj, const char *key, const char *path, char **dst)
{
    json_t *v = json_object_get(obj, key);
    size_t n;
    if (!v || json_is_null(v))
        return KV_ABSENT;
    char where[300];
    kfmt(where, sizeof where, "%s%s%s", path, path[0] ? "." : "", key);
    if (!json_is_string(v) || jsonbig_literal(v, &n)) {
        kwarn(k, where, "%s, not a string: skipped", jsonbig_describe(v));
        return KV_BAD;
    }
    n = json_string_length(v);
    if (n > CRASH_MAX_LINE) {
        kwarn(k, where, "a string of %zu bytes, over %d: skipped", n, CRASH_MAX_LINE);
        return KV_BAD;
    }
    kkeep(k, cp_set_str(k->p, dst, json_string_value(v), n));
    return k->st ? KV_BAD : KV_OK;
}

/* A string member, borrowed (NULL when absent or not a string; the wrong
 * type warned). */
static const char *kborrow(kp *k, const json_t *obj, const char *key, const char *path)
{
    json_t *v = json_object_get(obj, key);
    size_t n;
    if (!v || json_is_null(v))
        return NULL;
    if (json_is_string(v) && !jsonbig_literal(v, &n))
        return json_string_value(v);
    char where[300];
    kfmt(where, sizeof where, "%s%s%s", path, path[0] ? "." : "", key);
    kwarn(k, where, "%s, not a string: skipped", jsonbig_describe(v));
    return NULL;
}

static bool kbool(kp *k, const json_t *obj, const char *key, const char *path)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return false;
    if (json_is_boolean(v))
        return json_is_true(v);
    char where[300];
    kfmt(where, sizeof where, "%s.%s", path, key);
    kwarn(k, where, "%s, not a boolean: read as false", jsonbig_describe(v));
    return false;
}

/* An object member; NULL when absent, and with a warning when not an object. */
static json_t *kobj(kp *k, const json_t *obj, const char *key, const char *path)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return NULL;
    if (json_is_object(v))
        return v;
    char where[300];
    kfmt(where, sizeof where, "%s%s%s", path, path[0] ? "." : "", key);
    kwarn(k, where, "%s, not an object: skipped", jsonbig_describe(v));
    return NULL;
}

static json_t *karr(kp *k, const json_t *obj, const char *key, const char *path)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return NULL;
    if (json_is_array(v))
        return v;
    char where[300];
    kfmt(where, sizeof where, "%s%s%s", path, path[0] ? "." : "", key);
    kwarn(k, where, "%s, not an array: skipped", jsonbig_describe(v));
    return NULL;
}

/* A malloc'ed printf, into *dst (replacing it). */
static void kset_fmt(kp *k, char **dst, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void kset_fmt(kp *k, char **dst, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *s = malloc((size_t)n + 1);
    if (!s) {
        kkeep(k, cp_nomem(k->p));
        return;
    }
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    free(*dst);
    *dst = s;
}

/* ---- names -------------------------------------------------------------------- */

static const char *mach_exception_name(uint64_t e)
{
    static const char *const names[] = {
        NULL, "EXC_BAD_ACCESS", "EXC_BAD_INSTRUCTION", "EXC_ARITHMETIC", "EXC_EMULATION",
        "EXC_SOFTWARE", "EXC_BREAKPOINT", "EXC_SYSCALL", "EXC_MACH_SYSCALL", "EXC_RPC_ALERT",
        "EXC_CRASH", "EXC_RESOURCE", "EXC_GUARD", "EXC_CORPSE_NOTIFY",
    };
    return e < sizeof names / sizeof names[0] ? names[e] : NULL;
}

static const char *signal_name(uint64_t s)
{
    static const char *const names[] = {
        NULL, "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGEMT",
        "SIGFPE", "SIGKILL", "SIGBUS", "SIGSEGV", "SIGSYS", "SIGPIPE", "SIGALRM", "SIGTERM",
        "SIGURG", "SIGSTOP", "SIGTSTP", "SIGCONT", "SIGCHLD", "SIGTTIN", "SIGTTOU", "SIGIO",
        "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGINFO", "SIGUSR1",
        "SIGUSR2",
    };
    return s < sizeof names / sizeof names[0] ? names[s] : NULL;
}

/* The Mach exception a BSD signal comes from. */
static const char *exception_of_signal(uint64_t s)
{
    switch (s) {
    case 4: return "EXC_BAD_INSTRUCTION";   /* SIGILL */
    case 5: return "EXC_BREAKPOINT";        /* SIGTRAP */
    case 8: return "EXC_ARITHMETIC";        /* SIGFPE */
    case 10: case 11: return "EXC_BAD_ACCESS"; /* SIGBUS, SIGSEGV */
    default: return "EXC_CRASH";
    }
}

static const char *arch_of(uint64_t type, uint64_t sub)
{
    sub &= 0x00ffffffu;
    switch (type) {
    case 12:
        switch (sub) {
        case 6: return "armv6";
        case 9: return "armv7";
        case 10: return "armv7f";
        case 11: return "armv7s";
        case 12: return "armv7k";
        case 13: return "armv8";
        default: return "arm";
        }
    case 0x100000c: return sub == 2 ? "arm64e" : "arm64";
    case 0x200000c: return "arm64_32";
    case 7: return "i386";
    case 0x1000007: return sub == 8 ? "x86_64h" : "x86_64";
    default: return NULL;
    }
}

/* Apple's "Code Type" for an architecture name. */
static const char *code_type_of(const char *arch)
{
    if (!strncmp(arch, "arm64_32", 8))
        return "ARM-64_32";
    if (!strncmp(arch, "arm64", 5))
        return "ARM-64";
    if (!strncmp(arch, "arm", 3))
        return "ARM";
    if (!strncmp(arch, "x86_64", 6))
        return "X86-64";
    if (!strcmp(arch, "i386") || !strcmp(arch, "x86"))
        return "X86";
    return NULL;
}

/* ---- images --------------------------------------------------------------- */

static int cmp_img(const void *a, const void *b)
{
    const ks_img *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

static void index_images(kp *k)
{
    crash_report *r = k->p->r;
    free(k->byaddr);
    k->byaddr = NULL;
    k->nbyaddr = 0;
    if (!r->nimages)
        return;
    k->byaddr = malloc(r->nimages * sizeof *k->byaddr);
    if (!k->byaddr) {
        kkeep(k, cp_nomem(k->p));
        return;
    }
    for (size_t i = 0; i < r->nimages; i++)
        k->byaddr[i] = (ks_img){r->images[i].load_address, i};
    k->nbyaddr = r->nimages;
    qsort(k->byaddr, k->nbyaddr, sizeof *k->byaddr, cmp_img);
}

/* The first image loaded exactly at a, or -1. */
static long image_at(const kp *k, uint64_t a)
{
    size_t lo = 0, hi = k->nbyaddr;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->byaddr[mid].lo < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < k->nbyaddr && k->byaddr[lo].lo == a ? (long)k->byaddr[lo].idx : -1;
}

static bool image_holds(const crash_image *im, uint64_t a)
{
    return a >= im->load_address && (!im->has_end || a <= im->end_address);
}

/* The image whose range holds a (the last starting at or below it, with a
 * known end), or -1. */
static long image_holding(const kp *k, uint64_t a)
{
    const crash_report *r = k->p->r;
    size_t lo = 0, hi = k->nbyaddr;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->byaddr[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, steps = 0; i > 0 && steps < 8; i--, steps++) {
        const crash_image *im = &r->images[k->byaddr[i - 1].idx];
        if (im->has_end && image_holds(im, a))
            return (long)k->byaddr[i - 1].idx;
    }
    return -1;
}

static void read_images(kp *k, const json_t *arr, const char *path, const char *exe_path,
                        const char *app_uuid, bool skip_known)
{
    static const char *const read[] = {"image_addr", "image_size", "image_vmaddr", "uuid", "name",
                                       "cpu_type", "cpu_subtype", NULL};
    static const char *const known[] = {"major_version", "minor_version", "revision_version",
                                        "crash_info_message", "crash_info_message2",
                                        "crash_info_backtrace", "crash_info_signature", NULL};
    uint8_t appu[16];
    bool has_appu = app_uuid && uuid_parse(app_uuid, appu);
    for (size_t i = 0; i < json_array_size(arr) && !k->st; i++) {
        json_t *o = json_array_get(arr, i);
        char at[64];
        kfmt(at, sizeof at, "%s[%zu]", path, i);
        if (!json_is_object(o)) {
            kwarn(k, at, "%s, not an object: image skipped", jsonbig_describe(o));
            continue;
        }
        uint64_t addr = 0, size = 0, v, ct = 0, cs = 0;
        kv va = ku64(k, o, "image_addr", at, &addr);
        if (va != KV_OK) {
            if (va == KV_ABSENT)
                kwarn(k, at, "no image_addr: image skipped");
            else
                kwarn(k, at, "image skipped");
            keep_value(k, at, o);
            continue;
        }
        if (skip_known && image_at(k, addr) >= 0)
            continue; /* a recrash's image the first report lists too */
        crash_image *im;
        kkeep(k, cp_new_image(k->p, &im, at));
        if (k->st)
            return;
        im->load_address = addr;
        kv vs = ku64(k, o, "image_size", at, &size);
        if (vs == KV_OK && size > 0) {
            if (u64_add(addr, size - 1, &im->end_address))
                im->has_end = true;
            else
                kwarn(k, at, "image_addr + image_size passes 2^64: the end is left unknown");
        }
        ku64(k, o, "image_vmaddr", at, &v); /* the dSYM says the same: checked, not held */
        kstr(k, o, "name", at, &im->path);
        if (im->path) {
            const char *b = strrchr(im->path, '/');
            b = b ? b + 1 : im->path;
            if (*b)
                kkeep(k, cp_set_str(k->p, &im->name, b, strlen(b)));
        }
        char *u = NULL;
        if (kstr(k, o, "uuid", at, &u) == KV_OK) {
            if (!uuid_parse(u, im->uuid)) {
                char w[80];
                kfmt(w, sizeof w, "%s.uuid", at);
                kwarn(k, w, "\"%.40s\" is not a UUID: skipped", u);
            } else {
                bool zero = true;
                for (int b = 0; b < 16; b++)
                    zero &= im->uuid[b] == 0;
                im->has_uuid = !zero;
            }
        }
        free(u);
        if (ku64(k, o, "cpu_type", at, &ct) == KV_OK) {
            ku64(k, o, "cpu_subtype", at, &cs);
            const char *a = arch_of(ct, cs);
            if (a)
                kkeep(k, cp_set_str(k->p, &im->arch, a, strlen(a)));
            else {
                char w[80];
                kfmt(w, sizeof w, "%s.cpu_type", at);
                kwarn(k, w, "CPU type %" PRIu64 "/%" PRIu64 " symd does not name: the arch is "
                            "left unknown", ct, cs);
            }
        }
        if ((exe_path && im->path && strcmp(im->path, exe_path) == 0) ||
            (has_appu && im->has_uuid && memcmp(im->uuid, appu, 16) == 0))
            im->is_app = true;
        keep_others(k, o, at, read, known, false);
    }
    index_images(k);
}

/* ---- frames, threads -------------------------------------------------------- */

static void read_frame(kp *k, const json_t *o, size_t t, const char *at)
{
    static const char *const read[] = {"instruction_addr", "object_addr", "object_name",
                                       "symbol_addr", "symbol_name", NULL};
    crash_report *r = k->p->r;
    if (!json_is_object(o)) {
        kwarn(k, at, "%s, not an object: frame skipped", jsonbig_describe(o));
        return;
    }
    uint64_t addr, obj = 0, sym = 0;
    kv va = ku64(k, o, "instruction_addr", at, &addr);
    if (va != KV_OK) {
        kwarn(k, at, "%s: frame skipped", va == KV_ABSENT ? "no instruction_addr" :
                                                          "an instruction_addr symd cannot read");
        keep_value(k, at, o);
        return;
    }
    kv vo = ku64(k, o, "object_addr", at, &obj);
    kv vs = ku64(k, o, "symbol_addr", at, &sym);
    crash_frame *f;
    kkeep(k, cp_new_frame(k->p, t, &f, at));
    if (k->st)
        return;
    f->address = addr;
    long img = -1;
    if (vo == KV_OK) {
        img = image_at(k, obj);
        if (img < 0) {
            img = image_holding(k, addr);
            kwarn(k, at, "object_addr 0x%" PRIx64 " is no binary image's image_addr: %s", obj,
                  img >= 0 ? "the image is the one holding instruction_addr"
                           : "no image holds instruction_addr either");
        } else if (!image_holds(&r->images[img], addr)) {
            const crash_image *im = &r->images[img];
            img = image_holding(k, addr);
            kwarn(k, at, "instruction_addr 0x%" PRIx64 " lies outside its image (0x%" PRIx64
                         " - 0x%" PRIx64 "): %s", addr, im->load_address,
                  im->has_end ? im->end_address : im->load_address,
                  img >= 0 ? "the image is the one holding it" : "the frame has no image");
        }
        f->has_load = true;
        f->load_address = img >= 0 ? r->images[img].load_address : obj;
    } else {
        img = image_holding(k, addr);
        if (img >= 0) {
            f->has_load = true;
            f->load_address = r->images[img].load_address;
        }
    }
    f->image = img;
    kstr(k, o, "object_name", at, &f->image_name);
    if (!f->image_name && img >= 0 && r->images[img].name)
        kkeep(k, cp_set_str(k->p, &f->image_name, r->images[img].name,
                            strlen(r->images[img].name)));
    kstr(k, o, "symbol_name", at, &f->symbol);
    if (f->symbol && vs == KV_OK) {
        if (sym <= addr) {
            f->has_symbol_offset = true;
            f->symbol_offset = addr - sym;
        } else {
            char w[300];
            kfmt(w, sizeof w, "%s.symbol_addr", at);
            kwarn(k, w, "0x%" PRIx64 " is past instruction_addr: the offset is left out", sym);
        }
    }
    keep_others(k, o, at, read, NULL, false);
}

/* A backtrace ({contents, skipped}, or a bare array of frames) into thread t. */
static void read_backtrace(kp *k, const json_t *bt, size_t t, const char *at)
{
    static const char *const read[] = {"contents", "skipped", NULL};
    json_t *arr = NULL;
    char cpath[300];
    if (json_is_array(bt)) {
        arr = (json_t *)bt;
        kfmt(cpath, sizeof cpath, "%s", at);
    } else if (json_is_object(bt)) {
        arr = karr(k, bt, "contents", at);
        kfmt(cpath, sizeof cpath, "%s.contents", at);
        uint64_t skipped = 0;
        if (ku64(k, bt, "skipped", at, &skipped) == KV_OK && skipped > 0) {
            char w[320];
            kfmt(w, sizeof w, "%s.skipped", at);
            kwarn(k, w, "KSCrash left out %" PRIu64 " frames of this backtrace (as written on "
                        "the device): only the frames listed are read", skipped);
        }
        keep_others(k, bt, at, read, NULL, false);
    } else {
        kwarn(k, at, "%s, not a backtrace: skipped", jsonbig_describe(bt));
        return;
    }
    for (size_t i = 0; arr && i < json_array_size(arr) && !k->st; i++) {
        char fat[340];
        kfmt(fat, sizeof fat, "%s[%zu]", cpath, i);
        read_frame(k, json_array_get(arr, i), t, fat);
    }
}

/* Registers of one group (basic, exception) in Apple's order for the
 * architecture, then the others in the report's order. */
static void read_registers(kp *k, const json_t *g, const char *at, const char *arch,
                           bool exception)
{
    static const char *const arm64[] = {
        "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12",
        "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24",
        "x25", "x26", "x27", "x28", "fp", "lr", "sp", "pc", "cpsr", NULL};
    static const char *const arm[] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8",
                                      "r9", "r10", "r11", "r12", "ip", "fp", "sp", "lr", "pc",
                                      "cpsr", NULL};
    static const char *const x64[] = {"rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "rsp",
                                      "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
                                      "rip", "rflags", "cs", "fs", "gs", NULL};
    static const char *const x86[] = {"eax", "ebx", "ecx", "edx", "edi", "esi", "ebp", "esp",
                                      "ss", "eflags", "eip", "cs", "ds", "es", "fs", "gs", NULL};
    static const char *const exc[] = {"far", "esr", "fsr", "exception", "trapno", "err",
                                      "faultvaddr", NULL};
    const char *const *order = exception ? exc
                               : !arch                         ? NULL
                               : !strncmp(arch, "arm64", 5)    ? arm64
                               : !strncmp(arch, "arm", 3)      ? arm
                               : !strncmp(arch, "x86_64", 6)   ? x64
                               : !strcmp(arch, "i386")         ? x86
                                                               : NULL;
    crash_report *r = k->p->r;
    for (int pass = 0; pass < 2 && !k->st; pass++) {
        const char *const *names = order;
        const char *key;
        json_t *v;
        size_t n = 0;
        if (pass == 0 && !order)
            continue;
        /* pass 0: the named order; pass 1: the rest in the report's order */
        void *it = json_object_iter((json_t *)g);
        for (;;) {
            if (pass == 0) {
                key = names[n++];
                if (!key)
                    break;
                v = json_object_get(g, key);
                if (!v)
                    continue;
            } else {
                if (!it)
                    break;
                key = json_object_iter_key(it);
                v = json_object_iter_value(it);
                it = json_object_iter_next((json_t *)g, it);
                if (order && in_list(key, order))
                    continue;
            }
            if (exception && strcmp(key, "far") && strcmp(key, "esr") && strcmp(key, "fsr")) {
                /* not in Apple's thread state: kept as written */
                char kat[320];
                kfmt(kat, sizeof kat, "%s.%s", at, key);
                keep_value(k, kat, v);
                continue;
            }
            char where[320];
            kfmt(where, sizeof where, "%s.%s", at, key);
            uint64_t x;
            size_t kl = strlen(key);
            if (!jsonbig_u64(v, &x)) {
                kwarn(k, where, "%s, not an unsigned 64-bit integer: register skipped",
                      jsonbig_describe(v));
                continue;
            }
            if (kl == 0 || kl > 32) {
                kwarn(k, where, "a register name of %zu bytes: register skipped", kl);
                continue;
            }
            if (r->nregisters >= CRASH_MAX_REGISTERS) {
                kwarn(k, where, "more than %d registers: skipped", CRASH_MAX_REGISTERS);
                return;
            }
            char val[24];
            bool w32 = k->is32 || !strcmp(key, "cpsr") || !strcmp(key, "esr") ||
                       !strcmp(key, "fsr");
            int vl = w32 && x <= 0xffffffffu ? kfmt(val, sizeof val, "0x%08" PRIx64, x)
                                                 : kfmt(val, sizeof val, "0x%016" PRIx64, x);
            kkeep(k, cp_add_register(k->p, key, kl, val, (size_t)vl, where));
        }
    }
}

/* One thread object into a new thread (role, title); returns its index or
 * -1. regs: read its registers into the model (the crashed thread). */
static long read_thread(kp *k, const json_t *o, const char *at, long fallback_number,
                        crash_thread_role role, const char *title)
{
    static const char *const read[] = {"index", "name", "dispatch_queue", "crashed",
                                       "backtrace", "current_thread", NULL};
    static const char *const read_regs[] = {"index", "name", "dispatch_queue", "crashed",
                                            "backtrace", "current_thread", "registers", NULL};
    static const char *const known[] = {"registers", "stack",
                                        "notable_addresses", "state", "thread_id", NULL};
    crash_report *r = k->p->r;
    crash_thread *th;
    kkeep(k, cp_new_thread(k->p, &th, at));
    if (k->st)
        return -1;
    size_t t = r->nthreads - 1;
    th->number = fallback_number;
    th->role = role;
    if (title)
        kkeep(k, cp_set_str(k->p, &th->title, title, strlen(title)));
    if (!json_is_object(o)) {
        kwarn(k, at, "%s, not an object: an empty thread", jsonbig_describe(o));
        return (long)t;
    }
    uint64_t idx;
    if (ku64(k, o, "index", at, &idx) == KV_OK) {
        if (idx < 1000000)
            r->threads[t].number = (long)idx;
        else {
            char w[320];
            kfmt(w, sizeof w, "%s.index", at);
            kwarn(k, w, "%" PRIu64 " is no thread number: its position is used", idx);
        }
    }
    kstr(k, o, "name", at, &r->threads[t].name);
    kstr(k, o, "dispatch_queue", at, &r->threads[t].queue);
    r->threads[t].crashed = kbool(k, o, "crashed", at);
    /* The thread that wrote the report: said only when it is not the
     * crashed one (KSCrash's handler thread, a user-reported crash). */
    if (kbool(k, o, "current_thread", at) && !r->threads[t].crashed) {
        char w[340];
        kfmt(w, sizeof w, "%s.current_thread", at);
        keep_value(k, w, json_true());
    }
    json_t *bt = json_object_get(o, "backtrace");
    if (bt && !json_is_null(bt)) {
        char bat[320];
        kfmt(bat, sizeof bat, "%s.backtrace", at);
        read_backtrace(k, bt, t, bat);
    }
    /* The first crashed thread's registers are the report's thread state. */
    bool take = role == CRASH_THREAD_NORMAL && r->threads[t].crashed && !k->regs_taken;
    json_t *regs = take ? json_object_get(o, "registers") : NULL;
    if (json_is_object(regs)) {
        static const char *const gread[] = {"basic", "exception", NULL};
        char rat[340];
        kfmt(rat, sizeof rat, "%s.registers", at);
        k->regs_taken = true;
        for (int e = 0; e < 2 && !k->st; e++) {
            json_t *g = kobj(k, regs, gread[e], rat);
            char gat[360];
            kfmt(gat, sizeof gat, "%s.%s", rat, gread[e]);
            if (g)
                read_registers(k, g, gat, k->arch, e == 1);
        }
        keep_others(k, regs, rat, gread, NULL, true);
    }
    keep_others(k, o, at, json_is_object(regs) ? read_regs : read, known, false);
    return (long)t;
}

/* ---- the error ---------------------------------------------------------------- */

typedef struct {
    const char *type;
    bool deadlock;
} ks_error;

/* crash.error (at path) into the header fields (when into_header) and the
 * first lines of app_specific; recrash: said of the crash inside the
 * handler, as one line. */
static ks_error read_error(kp *k, const json_t *err, const char *path, bool into_header)
{
    static const char *const read[] = {"type", "address", "mach", "signal", "nsexception",
                                       "cpp_exception", "reason", NULL};
    static const char *const known[] = {"user_reported", "memory_termination", "zombie",
                                        "memory", "exit_reason", NULL};
    crash_report *r = k->p->r;
    ks_error out = {NULL, false};
    out.type = kborrow(k, err, "type", path);
    uint64_t addr = 0, mexc = 0, mcode = 0, msub = 0, sig = 0;
    bool has_addr = ku64(k, err, "address", path, &addr) == KV_OK;
    char mpath[300], spath[300];
    kfmt(mpath, sizeof mpath, "%s.mach", path);
    kfmt(spath, sizeof spath, "%s.signal", path);
    json_t *mach = kobj(k, err, "mach", path), *sg = kobj(k, err, "signal", path);
    const char *mname = NULL, *cname = NULL, *sname = NULL;
    bool has_sig = false;
    if (mach) {
        static const char *const mread[] = {"exception", "exception_name", "code", "code_name",
                                            "subcode", NULL};
        ku64(k, mach, "exception", mpath, &mexc);
        mname = kborrow(k, mach, "exception_name", mpath);
        ku64(k, mach, "code", mpath, &mcode);
        cname = kborrow(k, mach, "code_name", mpath);
        ku64(k, mach, "subcode", mpath, &msub);
        if (!mname)
            mname = mach_exception_name(mexc);
        keep_others(k, mach, mpath, mread, NULL, false);
    }
    if (sg) {
        static const char *const sread[] = {"signal", "name", NULL};
        static const char *const sknown[] = {"code", "code_name", NULL};
        has_sig = ku64(k, sg, "signal", spath, &sig) == KV_OK && sig != 0;
        sname = kborrow(k, sg, "name", spath);
        if (!sname && has_sig)
            sname = signal_name(sig);
        keep_others(k, sg, spath, sread, sknown, false);
    }
    if (!mname && has_sig)
        mname = exception_of_signal(sig); /* as Apple and KSCrash name a signal's crash */
    out.deadlock = out.type && strcmp(out.type, "deadlock") == 0;
    int w = k->is32 ? 8 : 16;
    if (into_header) {
        if (mname)
            kkeep(k, cp_set_str(k->p, &r->exception_type, mname, strlen(mname)));
        if (sname)
            kkeep(k, cp_set_str(k->p, &r->exception_signal, sname, strlen(sname)));
        if (cname)
            kset_fmt(k, &r->exception_codes, "%s at 0x%0*" PRIx64, cname, w, addr);
        else if (mach && (mexc || mcode || msub))
            kset_fmt(k, &r->exception_codes, "0x%0*" PRIx64 ", 0x%0*" PRIx64, w, mcode, w,
                     msub);
        else if (has_addr && addr)
            kset_fmt(k, &r->exception_codes, "0x%0*" PRIx64 " at 0x%0*" PRIx64, w, mcode, w,
                     addr);
        if (out.deadlock)
            kset_fmt(k, &r->termination, "Main thread deadlock (KSCrash watchdog)");
        else if (out.type && strcmp(out.type, "memory_termination") == 0)
            kset_fmt(k, &r->termination, "Memory termination (KSCrash)");
    } else {
        /* the recrash, on one line */
        putf(k, &k->head, "Recrash (crash inside the crash handler): ");
        puts_(k, &k->head, mname ? mname : out.type ? out.type : "unknown");
        if (sname)
            putf(k, &k->head, " (%s)", sname);
        if (cname)
            putf(k, &k->head, ", %s at 0x%0*" PRIx64, cname, w, addr);
        else if (has_addr)
            putf(k, &k->head, " at 0x%0*" PRIx64, w, addr);
        puts_(k, &k->head, "\n");
    }
    const char *reason = kborrow(k, err, "reason", path);
    json_t *ns = kobj(k, err, "nsexception", path);
    if (ns) {
        static const char *const nread[] = {"name", "reason", "backtrace", NULL};
        static const char *const nknown[] = {"referenced_object", "user_info", NULL};
        char npath[300];
        kfmt(npath, sizeof npath, "%s.nsexception", path);
        const char *name = kborrow(k, ns, "name", npath);
        const char *nr = kborrow(k, ns, "reason", npath);
        if (!into_header)
            puts_(k, &k->head, "Recrash: ");
        puts_(k, &k->head, "*** Terminating app due to uncaught exception '");
        puts_(k, &k->head, name ? name : "");
        puts_(k, &k->head, "', reason: '");
        puts_(k, &k->head, nr ? nr : reason ? reason : "");
        puts_(k, &k->head, "'\n");
        json_t *bt = json_object_get(ns, "backtrace");
        if (bt && !json_is_null(bt)) {
            char bpath[320];
            kfmt(bpath, sizeof bpath, "%s.backtrace", npath);
            crash_thread *th;
            kkeep(k, cp_new_thread(k->p, &th, bpath));
            if (!k->st) {
                th->role = CRASH_THREAD_LAST_EXCEPTION;
                th->number = -1;
                static const char title[] = "Last Exception Backtrace:";
                kkeep(k, cp_set_str(k->p, &th->title, title, sizeof title - 1));
                read_backtrace(k, bt, r->nthreads - 1, bpath);
            }
        }
        keep_others(k, ns, npath, nread, nknown, false);
    }
    json_t *cpp = kobj(k, err, "cpp_exception", path);
    if (!ns && !cpp && reason) {
        puts_(k, &k->head, into_header ? "" : "Recrash: ");
        puts_(k, &k->head, reason);
        puts_(k, &k->head, "\n");
    }
    if (cpp) {
        static const char *const cread[] = {"name", NULL};
        char cpath[300];
        kfmt(cpath, sizeof cpath, "%s.cpp_exception", path);
        const char *name = kborrow(k, cpp, "name", cpath);
        if (!into_header)
            puts_(k, &k->head, "Recrash: ");
        puts_(k, &k->head, "*** Terminating app due to uncaught C++ exception '");
        puts_(k, &k->head, name ? name : "");
        puts_(k, &k->head, "'");
        if (reason && !ns) {
            puts_(k, &k->head, ", reason: '");
            puts_(k, &k->head, reason);
            puts_(k, &k->head, "'");
        }
        puts_(k, &k->head, "\n");
        keep_others(k, cpp, cpath, cread, NULL, false);
    }
    keep_others(k, err, path, read, known, false);
    return out;
}

/* ---- the report --------------------------------------------------------------- */

static const char *const crash_read[] = {"error", "threads", "diagnosis", "crashed_thread",
                                         NULL};

/* crash.threads (or crash.crashed_thread of a minimal report) of the first
 * report; the crashed thread's registers. */
static void read_crash_threads(kp *k, const json_t *crash)
{
    crash_report *r = k->p->r;
    json_t *threads = karr(k, crash, "threads", "crash");
    long crashed = -1;
    for (size_t i = 0; threads && i < json_array_size(threads) && !k->st; i++) {
        char at[64];
        kfmt(at, sizeof at, "crash.threads[%zu]", i);
        long t = read_thread(k, json_array_get(threads, i), at, (long)i, CRASH_THREAD_NORMAL,
                             NULL);
        if (t >= 0 && r->threads[t].crashed && crashed < 0)
            crashed = t;
    }
    /* a minimal report (no threads list): its crashed thread alone */
    json_t *ct = json_object_get(crash, "crashed_thread");
    if (ct && !json_is_null(ct) && crashed < 0 && !k->st) {
        crashed = read_thread(k, ct, "crash.crashed_thread", 0, CRASH_THREAD_NORMAL, NULL);
        if (crashed >= 0)
            r->threads[crashed].crashed = true;
    } else if (ct && !json_is_null(ct)) {
        keep_value(k, "crash.crashed_thread", ct);
    }
    if (crashed >= 0)
        r->crashed_thread = crashed;
}

/* recrash_report: the crash inside the crash handler, kept beside the first. */
static void read_recrash(kp *k, const json_t *rr)
{
    static const char *const read[] = {"crash", "binary_images", NULL};
    static const char *const known[] = {"report", "system", "process", "user", "debug",
                                        "incomplete", NULL};
    crash_report *r = k->p->r;
    if (!json_is_object(rr)) {
        kwarn(k, "recrash_report", "%s, not an object: kept as written in app_specific",
              jsonbig_describe(rr));
        keep_value(k, "recrash_report", rr);
        return;
    }
    json_t *imgs = karr(k, rr, "binary_images", "recrash_report");
    if (imgs)
        read_images(k, imgs, "recrash_report.binary_images", NULL, NULL, true);
    json_t *crash = kobj(k, rr, "crash", "recrash_report");
    static const char title[] = "Recrash (crash inside the crash handler):";
    size_t n0 = r->nthreads, f0 = r->total_frames;
    if (crash) {
        json_t *err = kobj(k, crash, "error", "recrash_report.crash");
        if (err)
            read_error(k, err, "recrash_report.crash.error", false);
        const char *diag = kborrow(k, crash, "diagnosis", "recrash_report.crash");
        if (diag) {
            puts_(k, &k->head, "Recrash diagnosis: ");
            puts_(k, &k->head, diag);
            puts_(k, &k->head, "\n");
        }
        json_t *threads = karr(k, crash, "threads", "recrash_report.crash");
        bool seen_crashed = false;
        for (size_t i = 0; threads && i < json_array_size(threads) && !k->st; i++) {
            char at[64];
            kfmt(at, sizeof at, "recrash_report.crash.threads[%zu]", i);
            long t = read_thread(k, json_array_get(threads, i), at, (long)i,
                                 CRASH_THREAD_RECRASH, title);
            if (t >= 0 && r->threads[t].crashed)
                seen_crashed = true;
            if (t >= 0)
                r->threads[t].crashed = false; /* the report's crashed thread is the first's */
        }
        json_t *ct = json_object_get(crash, "crashed_thread");
        if (ct && !json_is_null(ct) && !seen_crashed && !k->st)
            read_thread(k, ct, "recrash_report.crash.crashed_thread", 0, CRASH_THREAD_RECRASH,
                        title);
        else if (ct && !json_is_null(ct))
            keep_value(k, "recrash_report.crash.crashed_thread", ct);
        for (size_t t = n0; t < r->nthreads; t++)
            r->threads[t].crashed = false;
        keep_others(k, crash, "recrash_report.crash", crash_read, NULL, false);
    }
    keep_others(k, rr, "recrash_report", read, known, false);
    kwarn(k, "recrash_report",
          "KSCrash crashed while writing this report (a crash inside the crash handler): "
          "its %zu thread(s) and %zu frame(s) are the sections titled \"%s\"",
          r->nthreads - n0, r->total_frames - f0, title);
}

static void read_version(kp *k, const json_t *rep)
{
    crash_report *r = k->p->r;
    json_t *v = json_object_get(rep, "version");
    uint64_t ma, mi;
    if (json_is_string(v))
        kset_fmt(k, &r->report_version, "KSCrash %.40s", json_string_value(v));
    else if (json_is_object(v) && jsonbig_u64(json_object_get(v, "major"), &ma) &&
             jsonbig_u64(json_object_get(v, "minor"), &mi))
        kset_fmt(k, &r->report_version, "KSCrash %" PRIu64 ".%" PRIu64, ma, mi);
    else if (v && !json_is_null(v)) {
        kwarn(k, "report.version", "%s symd does not read: kept in app_specific", jsonbig_describe(v));
        keep_value(k, "report.version", v);
    }
}

static void read_date(kp *k, const json_t *rep)
{
    crash_report *r = k->p->r;
    json_t *ts = json_object_get(rep, "timestamp");
    int64_t us;
    if (json_is_string(ts)) {
        kstr(k, rep, "timestamp", "report", &r->date);
    } else if (jsonbig_i64(ts, &us)) {
        /* microseconds since 1970 (KSCrash 2) or seconds (older forks) */
        int64_t s = us > 100000000000ll || us < -100000000000ll ? us / 1000000 : us;
        int64_t frac = us > 100000000000ll || us < -100000000000ll ? us % 1000000 : 0;
        if (frac < 0)
            frac = -frac;
        time_t tt = (time_t)s;
        struct tm tm;
        char buf[64];
        if (gmtime_r(&tt, &tm) && tm.tm_year + 1900 >= 0 && tm.tm_year + 1900 <= 9999 &&
            strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm))
            kset_fmt(k, &r->date, "%s.%06lld +0000", buf, (long long)frac);
        else
            kwarn(k, "report.timestamp", "%lld is no date: skipped", (long long)us);
    } else if (ts && !json_is_null(ts)) {
        kwarn(k, "report.timestamp", "%s, not a date: skipped", jsonbig_describe(ts));
    }
}

static void read_system(kp *k, const json_t *sys, const char **exe_path, const char **app_uuid,
                        const char **arch)
{
    static const char *const read[] = {"CFBundleIdentifier", "CFBundleShortVersionString",
                                       "CFBundleVersion", "system_name", "system_version",
                                       "os_version", "machine", "cpu_arch", "process_name",
                                       "CFBundleExecutablePath", "app_uuid", NULL};
    crash_report *r = k->p->r;
    if (!sys)
        return;
    if (!r->process)
        kstr(k, sys, "process_name", "system", &r->process);
    else
        kborrow(k, sys, "process_name", "system");
    kstr(k, sys, "CFBundleIdentifier", "system", &r->bundle_id);
    const char *sv = kborrow(k, sys, "CFBundleShortVersionString", "system");
    const char *bv = kborrow(k, sys, "CFBundleVersion", "system");
    if (sv && bv)
        kset_fmt(k, &r->app_version, "%s (%s)", sv, bv);
    else if (sv || bv)
        kset_fmt(k, &r->app_version, "%s", sv ? sv : bv);
    const char *sn = kborrow(k, sys, "system_name", "system");
    const char *svr = kborrow(k, sys, "system_version", "system");
    const char *ob = kborrow(k, sys, "os_version", "system");
    if (sn || svr || ob)
        kset_fmt(k, &r->os_version, "%s%s%s%s%s%s", sn ? sn : "", sn && svr ? " " : "",
                 svr ? svr : "", (sn || svr) && ob ? " (" : "", ob ? ob : "",
                 (sn || svr) && ob ? ")" : "");
    kstr(k, sys, "machine", "system", &r->hardware_model);
    *arch = kborrow(k, sys, "cpu_arch", "system");
    *exe_path = kborrow(k, sys, "CFBundleExecutablePath", "system");
    *app_uuid = kborrow(k, sys, "app_uuid", "system");
    /* Every other fact of the device and app is kept as written. */
    keep_others(k, sys, "system", read, NULL, true);
}

/* The code type and register widths of the report's architecture. */
static void set_arch(kp *k, const char *arch)
{
    if (!arch)
        return;
    const char *ct = code_type_of(arch);
    if (ct)
        kkeep(k, cp_set_str(k->p, &k->p->r->code_type, ct, strlen(ct)));
    k->is32 = (!strncmp(arch, "arm", 3) && strncmp(arch, "arm64", 5) != 0) ||
              !strcmp(arch, "i386") || !strcmp(arch, "arm64_32");
}

static void read_root(kp *k, const json_t *root)
{
    static const char *const read[] = {"report", "system", "crash", "binary_images",
                                       "recrash_report", NULL};
    static const char *const known[] = {"user", "process", "debug", "incomplete", NULL};
    crash_report *r = k->p->r;
    json_t *rep = kobj(k, root, "report", "");
    if (rep) {
        static const char *const rread[] = {"id", "version", "timestamp", "process_name",
                                            "type", NULL};
        static const char *const rknown[] = {"run_id", NULL};
        kstr(k, rep, "id", "report", &r->incident_id);
        kstr(k, rep, "process_name", "report", &r->process);
        read_version(k, rep);
        read_date(k, rep);
        const char *type = kborrow(k, rep, "type", "report");
        if (type && strcmp(type, "standard") != 0 && strcmp(type, "minimal") != 0)
            keep_value(k, "report.type", json_object_get(rep, "type"));
        keep_others(k, rep, "report", rread, rknown, false);
    }
    json_t *sys = kobj(k, root, "system", "");
    const char *exe = NULL, *app_uuid = NULL, *arch = NULL;
    read_system(k, sys, &exe, &app_uuid, &arch);
    set_arch(k, arch);
    json_t *imgs = karr(k, root, "binary_images", "");
    if (imgs)
        read_images(k, imgs, "binary_images", exe, app_uuid, false);
    if (!arch) {
        /* the arch of the app's image, else the first one named */
        for (size_t i = 0; i < r->nimages && !arch; i++)
            if (r->images[i].is_app)
                arch = r->images[i].arch;
        for (size_t i = 0; i < r->nimages && !arch; i++)
            arch = r->images[i].arch;
        set_arch(k, arch);
    }
    k->arch = arch;
    json_t *crash = kobj(k, root, "crash", "");
    if (crash && !k->st) {
        /* the report's threads first, then the exception's backtrace */
        read_crash_threads(k, crash);
        json_t *err = kobj(k, crash, "error", "crash");
        ks_error e = {NULL, false};
        if (err && !k->st)
            e = read_error(k, err, "crash.error", true);
        if (e.deadlock)
            r->kind = CRASH_KIND_HANG;
        const char *diag = kborrow(k, crash, "diagnosis", "crash");
        if (diag) {
            puts_(k, &k->head, "CrashDoctor Diagnosis: ");
            puts_(k, &k->head, diag);
            puts_(k, &k->head, "\n");
        }
        keep_others(k, crash, "crash", crash_read, NULL, false);
    }
    json_t *rr = json_object_get(root, "recrash_report");
    if (rr && !json_is_null(rr) && !k->st)
        read_recrash(k, rr);
    if (json_is_true(json_object_get(root, "incomplete")))
        kwarn(k, "incomplete", "KSCrash marked the report incomplete (it was cut short while "
                               "being written)");
    keep_others(k, root, "", read, known, false);
}

/* Contract in crash_int.h. */
bool crash_kscrash_reads_key(const char *key)
{
    static const char *const read[] = {"report", "system", "crash", "binary_images",
                                       "recrash_report", "incomplete", NULL};
    return in_list(key, read);
}

/* Contract in crash_int.h. */
bool crash_looks_like_kscrash(const json_t *root)
{
    if (!json_is_object(root) || json_object_get(root, "bug_type"))
        return false;
    json_t *rep = json_object_get(root, "report");
    if (!json_is_object(rep) || !json_is_string(json_object_get(rep, "id")))
        return false;
    json_t *v = json_object_get(rep, "version");
    if (!json_is_string(v) && !json_is_object(v))
        return false;
    return json_is_object(json_object_get(root, "crash")) ||
           json_is_array(json_object_get(root, "binary_images")) ||
           json_is_object(json_object_get(root, "system"));
}

symd_status crash_parse_kscrash(cp *p, const json_t *root)
{
    crash_report *r = p->r;
    kp k = {.p = p};
    dynbuf_init(&k.head, KS_TEXT_MAX);
    dynbuf_init(&k.extra, KS_TEXT_MAX);
    r->format = CRASH_FORMAT_KSCRASH;
    r->kind = CRASH_KIND_CRASH;
    r->text_body = false;
    read_root(&k, root);
    free(k.byaddr);
    if (!k.st && k.oom)
        k.st = cp_nomem(p);
    if (!k.st && k.over)
        kwarn(&k, "body", "more than %u bytes of kept fields: the rest is left out of "
                          "app_specific (the original is stored whole)", KS_TEXT_MAX);
    if (!k.st && k.cut_depth)
        kwarn(&k, "body", "a kept value nests deeper than %d levels: deeper levels are shown "
                          "as {...} in app_specific", KS_VALUE_DEPTH);
    if (!k.st && (k.head.len || k.extra.len)) {
        dynbuf all;
        dynbuf_init(&all, 2 * (size_t)KS_TEXT_MAX + 2);
        bool ok = true;
        if (k.head.len)
            ok &= dynbuf_add(&all, k.head.data, k.head.len);
        if (k.head.len && k.extra.len)
            ok &= dynbuf_add(&all, "\n", 1);
        if (k.extra.len)
            ok &= dynbuf_add(&all, k.extra.data, k.extra.len);
        while (ok && all.len && all.data[all.len - 1] == '\n')
            all.data[--all.len] = 0;
        size_t n;
        char *s = ok ? (char *)dynbuf_take(&all, &n) : NULL;
        if (!ok || !s) {
            dynbuf_free(&all);
            if (ok && !s) {
                /* empty */
            } else {
                k.st = cp_nomem(p);
            }
        } else {
            free(r->app_specific);
            r->app_specific = s;
        }
    }
    dynbuf_free(&k.head);
    dynbuf_free(&k.extra);
    return k.st;
}

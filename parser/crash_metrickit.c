/* MetricKit diagnostics and App Store Connect diagnostic logs in, one crash
 * model per diagnostic out.
 *
 * Inputs (told apart by their keys):
 *   - an MXDiagnosticPayload as jsonRepresentation() writes it: top-level
 *     crashDiagnostics, hangDiagnostics, cpuExceptionDiagnostics,
 *     diskWriteExceptionDiagnostics, appLaunchDiagnostics (and any other
 *     "...Diagnostics" array), timeStampBegin / timeStampEnd;
 *   - an array of payloads; a single diagnostic {callStackTree,
 *     diagnosticMetaData}; a bare call-stack tree {callStacks,
 *     callStackPerThread} or {"callStackTree": {...}};
 *   - App Store Connect's diagnosticLogs ({"productData": [{"diagnosticLogs":
 *     [...]}]}, or {"diagnosticLogs": [...]}): the same trees, numbers as
 *     strings, with symbolName, fileName, lineNumber, isBlameFrame.
 *
 * Each diagnostic is one report, in the order of the input. Trees:
 *   - callStackPerThread true: every root-to-leaf chain is a thread's
 *     backtrace, written innermost frame first; threadAttributed (or an
 *     isBlameFrame in the chain) marks the crashed thread;
 *   - callStackPerThread false: one weighted call tree per call stack
 *     (is_tree, depth, count) as symd's sample trees are: outermost frames
 *     at depth 0; a tree written innermost-first is inverted.
 *
 * Orientation: a tree's root is the innermost frame (older OS versions, and
 * every real payload we have) or the outermost (newer ones, ASC). Decided
 * per diagnostic by votes: for every root and every leaf under it, the one
 * that is a thread's entry point (symbol start / thread_start /
 * _pthread_start / start_wqthread scores 2; image dyld, libdyld.dylib,
 * libsystem_pthread.dylib scores 1) is the outermost. No vote: MetricKit
 * roots are taken as innermost, ASC roots as outermost, with a warning when
 * a chain has more than one frame.
 *
 * Addresses: a frame is binaryUUID at offsetIntoBinaryTextSegment into its
 * __TEXT. Some OS versions (iOS 14) wrote the image's load address into that
 * field: taken so when the frame gives its address, the field is
 * page-aligned (4 KiB), not above the address, and address - field is
 * smaller than the field (a real offset leaves a load address larger than
 * itself); the offset is then address - field, and a warning says how many
 * frames it was applied to. An image's load address is address - offset of
 * its first frame that gives both; its frames are then load + offset (the
 * offset trusted when a frame's own address disagrees, with a warning).
 * Frames of an image no frame gives both for: address = offset over a load
 * address of 0 when only the offset is known, else the address alone with
 * no image to look it up in. Offsets of 4 GiB or more are no __TEXT offset:
 * warned, not looked up. */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/hex.h"
#include "../util/jsonbig.h"
#include "../util/util.h"
#include "crash_int.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define MK_MAX_PARTS 4096          /* diagnostics in one input */
#define MK_INVERT_STEPS (8u << 20) /* trie steps inverting one merged tree */
#define MK_STR_MAX 4096            /* metadata strings kept */
#define MK_MAX_TOTAL_FRAMES (4u * CRASH_MAX_FRAMES) /* over every diagnostic of an input */

/* ---- the diagnostics of the input ------------------------------------------ */

typedef struct {
    json_t *tree;    /* callStackTree: an object, or an array of them (ASC) */
    json_t *meta;    /* diagnosticMetaData, NULL when none */
    json_t *payload; /* the payload object around it (timestamps), NULL */
    json_t *extra;   /* ASC: the productData element (signatureId, insights), NULL */
    crash_kind kind;
    crash_format fmt;
    bool kind_known;
    char path[96];
} mk_diag;

typedef struct {
    mk_diag *d;
    size_t n, cap;
    symd_err *err;
    symd_status st;
} mk_list;

static void list_add(mk_list *l, json_t *tree, json_t *meta, json_t *payload, json_t *extra,
                     crash_kind kind, bool kind_known, crash_format fmt, const char *fmtpath, ...)
    __attribute__((format(printf, 9, 10)));
static void list_add(mk_list *l, json_t *tree, json_t *meta, json_t *payload, json_t *extra,
                     crash_kind kind, bool kind_known, crash_format fmt, const char *fmtpath, ...)
{
    if (l->st)
        return;
    if (l->n >= MK_MAX_PARTS) {
        l->st = symd_fail(l->err, SYMD_E_TOO_LARGE, "more than %d diagnostics in one input",
                          MK_MAX_PARTS);
        return;
    }
    if (!array_grow((void **)&l->d, &l->cap, l->n + 1, sizeof *l->d)) {
        l->st = symd_fail(l->err, SYMD_E_NOMEM, "out of memory reading the diagnostics");
        return;
    }
    mk_diag *d = &l->d[l->n++];
    memset(d, 0, sizeof *d);
    d->tree = tree;
    d->meta = json_is_object(meta) ? meta : NULL;
    d->payload = payload;
    d->extra = extra;
    d->kind = kind;
    d->kind_known = kind_known;
    d->fmt = fmt;
    va_list ap;
    va_start(ap, fmtpath);
    vsnprintf(d->path, sizeof d->path, fmtpath, ap);
    va_end(ap);
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && memcmp(s + n - m, suf, m) == 0;
}

static crash_kind kind_of_key(const char *key, bool *known)
{
    *known = true;
    if (!strcmp(key, "crashDiagnostics"))
        return CRASH_KIND_CRASH;
    if (!strcmp(key, "hangDiagnostics"))
        return CRASH_KIND_HANG;
    if (!strcmp(key, "cpuExceptionDiagnostics") || !strcmp(key, "diskWriteExceptionDiagnostics"))
        return CRASH_KIND_RESOURCE;
    if (!strcmp(key, "appLaunchDiagnostics"))
        return CRASH_KIND_LAUNCH;
    *known = false;
    return CRASH_KIND_CRASH;
}

/* One object of the input: a payload, a diagnostic, a tree or ASC logs. */
static void collect_object(mk_list *l, json_t *o, const char *at)
{
    json_t *pd = json_object_get(o, "productData");
    json_t *dl = json_object_get(o, "diagnosticLogs");
    if (json_is_array(pd)) {
        size_t i;
        json_t *e;
        json_array_foreach(pd, i, e) {
            json_t *logs = json_object_get(e, "diagnosticLogs");
            size_t k;
            json_t *g;
            json_array_foreach(logs, k, g) {
                if (json_is_object(g))
                    list_add(l, json_object_get(g, "callStackTree"),
                             json_object_get(g, "diagnosticMetaData"), NULL, e, CRASH_KIND_CRASH,
                             false, CRASH_FORMAT_ASC, "%sproductData[%zu].diagnosticLogs[%zu]", at,
                             i, k);
            }
        }
        return;
    }
    if (json_is_array(dl)) {
        size_t k;
        json_t *g;
        json_array_foreach(dl, k, g) {
            if (json_is_object(g))
                list_add(l, json_object_get(g, "callStackTree"),
                         json_object_get(g, "diagnosticMetaData"), NULL, NULL, CRASH_KIND_CRASH,
                         false, CRASH_FORMAT_ASC, "%sdiagnosticLogs[%zu]", at, k);
        }
        return;
    }
    bool payload = false;
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (!ends_with(key, "Diagnostics") || !json_is_array(v))
            continue;
        payload = true;
        bool known;
        crash_kind kind = kind_of_key(key, &known);
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (json_is_object(e))
                list_add(l, json_object_get(e, "callStackTree"),
                         json_object_get(e, "diagnosticMetaData"), o, NULL, kind, known,
                         CRASH_FORMAT_METRICKIT, "%s%s[%zu]", at, key, i);
        }
    }
    if (payload)
        return;
    json_t *t = json_object_get(o, "callStackTree");
    if (t) {
        list_add(l, t, json_object_get(o, "diagnosticMetaData"), NULL, NULL, CRASH_KIND_CRASH,
                 false, json_is_array(t) ? CRASH_FORMAT_ASC : CRASH_FORMAT_METRICKIT, "%s",
                 at[0] ? at : "");
        return;
    }
    if (json_object_get(o, "callStacks"))
        list_add(l, o, NULL, NULL, NULL, CRASH_KIND_CRASH, false, CRASH_FORMAT_METRICKIT, "%s",
                 at);
}

/* ---- one report --------------------------------------------------------------- */

typedef struct {
    json_t *j;
    long parent;
    uint32_t depth, stack;
    bool leaf, has_addr, has_off, blame, loadmode, far;
    uint64_t addr, off, count;
    long image;
} mknode;

typedef struct {
    cp *p;
    const mk_diag *d;
    symd_status st;
    char where[320]; /* the call stack being read */
    mknode *nodes;
    size_t nnodes, cap_nodes;
    bool nodes_full;
    /* images: hash of (uuid | name) → index; loads parallel to images */
    long *slot;
    size_t mask;
    uint64_t *load;
    bool *has_load;
    size_t cap_load;
    size_t nloadmode, nmismatch, nnoload, nfar;
} mk;

static void mwarn(mk *m, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void mwarn(mk *m, const char *where, const char *fmt, ...)
{
    char msg[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    symd_status st = cp_warn(m->p, where[0] ? where : "body", "%s", msg);
    if (st && !m->st)
        m->st = st;
}

static void mkeep(mk *m, symd_status st)
{
    if (st && !m->st)
        m->st = st;
}

/* A number written as an integer, or as a string of decimal digits or
 * "0x" hex (ASC). 0: absent (or ""), 1: read, -1: unreadable. */
static int num_of(const json_t *v, uint64_t *out)
{
    size_t n;
    if (!v || json_is_null(v))
        return 0;
    if (jsonbig_u64(v, out))
        return 1;
    if (!json_is_string(v) || jsonbig_literal(v, &n))
        return -1;
    const char *s = json_string_value(v), *e = s + json_string_length(v);
    cp_trim(&s, &e);
    if (s == e)
        return 0;
    if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        uint64_t x = 0;
        if (e - s > 18)
            return -1;
        for (const char *q = s + 2; q < e; q++) {
            int h = hex_digit(*q);
            if (h < 0)
                return -1;
            x = x << 4 | (uint64_t)h;
        }
        *out = x;
        return 1;
    }
    return cp_dec_parse(s, e, UINT64_MAX, out) ? 1 : -1;
}

static const char *str_of(const json_t *v)
{
    size_t n;
    if (!json_is_string(v) || jsonbig_literal(v, &n) || json_string_length(v) > MK_STR_MAX)
        return NULL;
    return json_string_value(v);
}

static void set_str(mk *m, char **dst, const char *s)
{
    if (s)
        mkeep(m, cp_set_str(m->p, dst, s, strlen(s)));
}

/* ---- measurements ---- */

/* "20 secs.", "2,000 byte", "20000 ms", "1073.76 MB" → amount in ms or
 * bytes; false when it does not read. */
static bool parse_measure(const char *s, crash_unit *unit, uint64_t *amount)
{
    const char *e = s + strlen(s);
    cp_trim(&s, &e);
    uint64_t ip = 0, frac = 0, fdiv = 1;
    const char *q = s;
    bool any = false, dot = false;
    for (; q < e; q++) {
        if (cp_is_digit(*q)) {
            any = true;
            if (!dot) {
                if (__builtin_mul_overflow(ip, 10, &ip) ||
                    __builtin_add_overflow(ip, (uint64_t)(*q - '0'), &ip))
                    return false;
            } else if (fdiv < 1000000000ull) {
                frac = frac * 10 + (uint64_t)(*q - '0');
                fdiv *= 10;
            }
        } else if (*q == ',' && !dot && e - q > 3 && cp_is_digit(q[1]) && cp_is_digit(q[2]) &&
                   cp_is_digit(q[3]) && (e - q == 4 || !cp_is_digit(q[4]))) {
            continue; /* thousands separator */
        } else if ((*q == '.' || *q == ',') && !dot && any) {
            dot = true;
        } else {
            break;
        }
    }
    if (!any)
        return false;
    while (q < e && cp_is_ws(*q))
        q++;
    const char *u = q, *ue = e;
    while (ue > u && ue[-1] == '.')
        ue--;
    size_t un = (size_t)(ue - u);
    static const struct {
        const char *name;
        crash_unit unit;
        uint64_t scale;
    } units[] = {
        {"ms", CRASH_UNIT_MS, 1},          {"msec", CRASH_UNIT_MS, 1},
        {"msecs", CRASH_UNIT_MS, 1},       {"s", CRASH_UNIT_MS, 1000},
        {"sec", CRASH_UNIT_MS, 1000},      {"secs", CRASH_UNIT_MS, 1000},
        {"second", CRASH_UNIT_MS, 1000},   {"seconds", CRASH_UNIT_MS, 1000},
        {"min", CRASH_UNIT_MS, 60000},     {"mins", CRASH_UNIT_MS, 60000},
        {"minutes", CRASH_UNIT_MS, 60000}, {"h", CRASH_UNIT_MS, 3600000},
        {"hr", CRASH_UNIT_MS, 3600000},    {"hours", CRASH_UNIT_MS, 3600000},
        {"byte", CRASH_UNIT_BYTES, 1},     {"bytes", CRASH_UNIT_BYTES, 1},
        {"B", CRASH_UNIT_BYTES, 1},        {"kB", CRASH_UNIT_BYTES, 1000},
        {"KB", CRASH_UNIT_BYTES, 1000},    {"MB", CRASH_UNIT_BYTES, 1000000},
        {"GB", CRASH_UNIT_BYTES, 1000000000ull},
        {"TB", CRASH_UNIT_BYTES, 1000000000000ull},
        {"KiB", CRASH_UNIT_BYTES, 1024},   {"MiB", CRASH_UNIT_BYTES, 1u << 20},
        {"GiB", CRASH_UNIT_BYTES, 1u << 30},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].name) != un || memcmp(units[i].name, u, un) != 0)
            continue;
        uint64_t a, f = frac * units[i].scale / fdiv;
        if (__builtin_mul_overflow(ip, units[i].scale, &a) || __builtin_add_overflow(a, f, &a))
            return false;
        *unit = units[i].unit;
        *amount = a;
        return true;
    }
    return false;
}

static void add_metric(mk *m, const char *name, const char *value)
{
    crash_report *r = m->p->r;
    if (m->st)
        return;
    if (r->nmetrics >= 256) {
        mwarn(m, "diagnosticMetaData", "more than 256 metadata values: %s skipped", name);
        return;
    }
    crash_metric *nm = realloc(r->metrics, (r->nmetrics + 1) * sizeof *nm);
    if (!nm) {
        mkeep(m, cp_nomem(m->p));
        return;
    }
    r->metrics = nm;
    crash_metric *x = &nm[r->nmetrics];
    memset(x, 0, sizeof *x);
    if (cp_set_str(m->p, &x->name, name, strlen(name)) ||
        cp_set_str(m->p, &x->value, value, strlen(value))) {
        free(x->name);
        mkeep(m, m->p->err->kind);
        return;
    }
    r->nmetrics++;
    parse_measure(value, &x->unit, &x->amount);
}

static const char *exc_name(uint64_t t)
{
    static const char *const n[] = {NULL, "EXC_BAD_ACCESS", "EXC_BAD_INSTRUCTION", "EXC_ARITHMETIC",
                                    "EXC_EMULATION", "EXC_SOFTWARE", "EXC_BREAKPOINT",
                                    "EXC_SYSCALL", "EXC_MACH_SYSCALL", "EXC_RPC_ALERT",
                                    "EXC_CRASH", "EXC_RESOURCE", "EXC_GUARD",
                                    "EXC_CORPSE_NOTIFY"};
    return t < sizeof n / sizeof n[0] ? n[t] : NULL;
}

static const char *sig_name(uint64_t s)
{
    static const char *const n[] = {NULL, "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP",
                                    "SIGABRT", "SIGEMT", "SIGFPE", "SIGKILL", "SIGBUS",
                                    "SIGSEGV", "SIGSYS", "SIGPIPE", "SIGALRM", "SIGTERM",
                                    "SIGURG", "SIGSTOP", "SIGTSTP", "SIGCONT", "SIGCHLD",
                                    "SIGTTIN", "SIGTTOU", "SIGIO", "SIGXCPU", "SIGXFSZ",
                                    "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGINFO", "SIGUSR1",
                                    "SIGUSR2"};
    return s < sizeof n / sizeof n[0] ? n[s] : NULL;
}

/* A metadata value as text: a string as written, a number in decimal,
 * true/false; NULL for anything else. */
static const char *scalar_text(const json_t *v, char *buf, size_t n)
{
    uint64_t u;
    int64_t i;
    const char *s = str_of(v);
    if (s)
        return s;
    if (jsonbig_u64(v, &u)) {
        snprintf(buf, n, "%" PRIu64, u);
        return buf;
    }
    if (jsonbig_i64(v, &i)) {
        snprintf(buf, n, "%" PRId64, i);
        return buf;
    }
    if (json_is_boolean(v))
        return json_is_true(v) ? "true" : "false";
    if (json_is_real(v)) {
        snprintf(buf, n, "%.17g", json_real_value(v));
        return buf;
    }
    return NULL;
}

static void read_meta(mk *m, json_t *meta, const char *at)
{
    crash_report *r = m->p->r;
    char where[200], buf[64];
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        if (m->st)
            return;
        snprintf(where, sizeof where, "%s.diagnosticMetaData.%s", at, key);
        if (!strcmp(key, "exceptionReason") && json_is_object(v)) {
            const char *msg = str_of(json_object_get(v, "composedMessage"));
            const char *nm = str_of(json_object_get(v, "exceptionName"));
            char *t = NULL;
            size_t tl = (nm ? strlen(nm) + 2 : 0) + (msg ? strlen(msg) : 0);
            if ((t = malloc(tl + 1)) == NULL) {
                mkeep(m, cp_nomem(m->p));
                return;
            }
            snprintf(t, tl + 1, "%s%s%s", nm ? nm : "", nm && msg ? ": " : "", msg ? msg : "");
            free(r->app_specific);
            r->app_specific = t;
            continue;
        }
        const char *s = scalar_text(v, buf, sizeof buf);
        if (!s) {
            mwarn(m, where, "%s, not a string or number: skipped", jsonbig_describe(v));
            continue;
        }
        uint64_t u;
        if (!strcmp(key, "appVersion"))
            set_str(m, &r->app_version, s);
        else if (!strcmp(key, "appBuildVersion") || !strcmp(key, "buildVersion"))
            set_str(m, &r->app_build, s);
        else if (!strcmp(key, "osVersion"))
            set_str(m, &r->os_version, s);
        else if (!strcmp(key, "deviceType"))
            set_str(m, &r->hardware_model, s);
        else if (!strcmp(key, "platformArchitecture"))
            set_str(m, &r->code_type, s);
        else if (!strcmp(key, "bundleIdentifier") || !strcmp(key, "bundleId"))
            set_str(m, &r->bundle_id, s);
        else if (!strcmp(key, "terminationReason"))
            set_str(m, &r->termination, s);
        else if (!strcmp(key, "virtualMemoryRegionInfo"))
            set_str(m, &r->vm_region_info, s);
        else if (!strcmp(key, "exceptionType")) {
            const char *n = jsonbig_u64(v, &u) ? exc_name(u) : NULL;
            char t[96];
            if (n)
                snprintf(t, sizeof t, "%s (%s)", n, s);
            else
                snprintf(t, sizeof t, "%s", s);
            set_str(m, &r->exception_type, t);
        } else if (!strcmp(key, "exceptionCode")) {
            set_str(m, &r->exception_codes, s);
        } else if (!strcmp(key, "signal")) {
            const char *n = jsonbig_u64(v, &u) ? sig_name(u) : NULL;
            set_str(m, &r->exception_signal, n ? n : s);
        } else if (!strcmp(key, "eventDetail")) {
            set_str(m, &r->app_specific, s);
            add_metric(m, key, s);
        } else {
            add_metric(m, key, s);
        }
    }
}

/* The kind a diagnostic's metadata says, for diagnostics outside a payload. */
static crash_kind kind_of_meta(const json_t *meta, bool per_thread, crash_format fmt)
{
    const char *ev = str_of(json_object_get(meta, "event"));
    if (ev) {
        if (strstr(ev, "rash"))
            return CRASH_KIND_CRASH;
        if (strstr(ev, "ang"))
            return CRASH_KIND_HANG;
        if (strstr(ev, "aunch"))
            return CRASH_KIND_LAUNCH;
        if (strstr(ev, "isk") || strstr(ev, "rite") || strstr(ev, "pu") || strstr(ev, "PU"))
            return CRASH_KIND_RESOURCE;
    }
    if (json_object_get(meta, "hangDuration"))
        return CRASH_KIND_HANG;
    if (json_object_get(meta, "launchDuration"))
        return CRASH_KIND_LAUNCH;
    if (json_object_get(meta, "totalCPUTime") || json_object_get(meta, "writesCaused"))
        return CRASH_KIND_RESOURCE;
    if (json_object_get(meta, "exceptionType") || json_object_get(meta, "signal") ||
        json_object_get(meta, "terminationReason"))
        return CRASH_KIND_CRASH;
    (void)fmt;
    return per_thread ? CRASH_KIND_CRASH : CRASH_KIND_RESOURCE;
}

/* ---- images ---- */

static uint64_t fnv(const void *s, size_t n, uint64_t h)
{
    const unsigned char *c = s;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static bool img_same(const crash_image *im, bool has_uuid, const uint8_t *uuid, const char *name)
{
    if (has_uuid)
        return im->has_uuid && memcmp(im->uuid, uuid, 16) == 0;
    return !im->has_uuid && im->name && name && strcmp(im->name, name) == 0;
}

/* The image of (uuid | name), added when new; -1 when neither is given. */
static long image_of(mk *m, bool has_uuid, const uint8_t *uuid, const char *name)
{
    crash_report *r = m->p->r;
    if (!has_uuid && !name)
        return -1;
    if (!m->slot || r->nimages * 2 + 2 > m->mask) {
        size_t cap = 64;
        while (cap < r->nimages * 4 + 4)
            cap <<= 1;
        long *ns = malloc(cap * sizeof *ns);
        if (!ns) {
            mkeep(m, cp_nomem(m->p));
            return -1;
        }
        for (size_t i = 0; i < cap; i++)
            ns[i] = -1;
        free(m->slot);
        m->slot = ns;
        m->mask = cap - 1;
        for (size_t i = 0; i < r->nimages; i++) {
            const crash_image *im = &r->images[i];
            uint64_t h = im->has_uuid ? fnv(im->uuid, 16, 1469598103934665603ull)
                                      : fnv(im->name, strlen(im->name), 7);
            size_t k = h & m->mask;
            while (ns[k] >= 0)
                k = (k + 1) & m->mask;
            ns[k] = (long)i;
        }
    }
    uint64_t h = has_uuid ? fnv(uuid, 16, 1469598103934665603ull) : fnv(name, strlen(name), 7);
    size_t k = h & m->mask;
    for (; m->slot[k] >= 0; k = (k + 1) & m->mask)
        if (img_same(&r->images[m->slot[k]], has_uuid, uuid, name))
            return m->slot[k];
    crash_image *im;
    symd_status st = cp_new_image(m->p, &im, m->where);
    if (st) {
        if (st == SYMD_E_TOO_LARGE) {
            symd_err_clear(m->p->err);
            mwarn(m, m->where, "more than %d images: frames of the others are not looked up",
                  CRASH_MAX_IMAGES);
            return -1;
        }
        mkeep(m, st);
        return -1;
    }
    im->has_uuid = has_uuid;
    if (has_uuid)
        memcpy(im->uuid, uuid, 16);
    if (name)
        mkeep(m, cp_set_str(m->p, &im->name, name, strlen(name)));
    if (!array_grow((void **)&m->load, &m->cap_load, r->nimages, sizeof *m->load) ||
        !(m->has_load = realloc(m->has_load, m->cap_load * sizeof *m->has_load))) {
        mkeep(m, cp_nomem(m->p));
        return -1;
    }
    m->has_load[r->nimages - 1] = false;
    m->load[r->nimages - 1] = 0;
    m->slot[k] = (long)(r->nimages - 1);
    return (long)(r->nimages - 1);
}

/* ---- reading the tree into nodes ---- */

static const char *const frame_keys[] = {
    "binaryUUID", "binaryName", "address", "offsetIntoBinaryTextSegment", "sampleCount",
    "subFrames", "symbolName", "fileName", "lineNumber", "isBlameFrame", "offsetIntoSymbol",
    "rawFrame", "insightsCategory",
};

static void decode_node(mk *m, mknode *nd, size_t idx)
{
    json_t *j = nd->j;
    char what[64];
    snprintf(what, sizeof what, "frame %zu (depth %u)", idx, nd->depth);
    int a = num_of(json_object_get(j, "address"), &nd->addr);
    if (a < 0)
        mwarn(m, m->where, "%s: address is %s, not a number: skipped", what,
              jsonbig_describe(json_object_get(j, "address")));
    nd->has_addr = a > 0;
    int o = num_of(json_object_get(j, "offsetIntoBinaryTextSegment"), &nd->off);
    if (o < 0)
        mwarn(m, m->where, "%s: offsetIntoBinaryTextSegment is %s, not a number: skipped", what,
              jsonbig_describe(json_object_get(j, "offsetIntoBinaryTextSegment")));
    nd->has_off = o > 0;
    json_t *sc = json_object_get(j, "sampleCount");
    int c = num_of(sc, &nd->count);
    if (c < 0) {
        mwarn(m, m->where, "%s: sampleCount is %s: taken as 0", what, jsonbig_describe(sc));
        nd->count = 0;
    }
    nd->blame = json_is_true(json_object_get(j, "isBlameFrame"));
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        bool known = false;
        for (size_t i = 0; i < sizeof frame_keys / sizeof frame_keys[0] && !known; i++)
            known = !strcmp(key, frame_keys[i]);
        if (!known)
            mwarn(m, m->where, "%s: unknown key %.64s: skipped", what, key);
    }
    /* The iOS 14 load-address-in-offset rule (see the top of the file). */
    if (nd->has_addr && nd->has_off && nd->off >= 0x1000 && (nd->off & 0xfff) == 0 &&
        nd->off <= nd->addr && nd->addr - nd->off < nd->off) {
        nd->loadmode = true;
        nd->off = nd->addr - nd->off;
        m->nloadmode++;
    }
    if (nd->has_off && nd->off >= (1ull << 32)) {
        nd->far = true;
        m->nfar++;
    }
    uint8_t uuid[16];
    const char *us = str_of(json_object_get(j, "binaryUUID"));
    bool has_uuid = us && uuid_parse(us, uuid);
    if (json_object_get(j, "binaryUUID") && !has_uuid)
        mwarn(m, m->where, "%s: binaryUUID is no UUID: the image is known by name alone", what);
    nd->image = image_of(m, has_uuid, uuid, str_of(json_object_get(j, "binaryName")));
    if (nd->image >= 0 && !nd->far && nd->has_addr && nd->has_off) {
        uint64_t l = nd->addr - nd->off;
        if (!m->has_load[nd->image]) {
            m->has_load[nd->image] = true;
            m->load[nd->image] = l;
        } else if (m->load[nd->image] != l) {
            m->nmismatch++;
        }
    }
}

typedef struct {
    json_t *arr;
    size_t i;
    long parent;
} walk_ent;

/* Appends the nodes of one call stack's roots (pre-order). */
static void read_stack(mk *m, json_t *roots, uint32_t stack, walk_ent *ws)
{
    size_t top = 0;
    ws[top++] = (walk_ent){roots, 0, -1};
    while (top && !m->st) {
        walk_ent *w = &ws[top - 1];
        if (w->i >= json_array_size(w->arr)) {
            top--;
            continue;
        }
        json_t *j = json_array_get(w->arr, w->i++);
        uint32_t depth = (uint32_t)(top - 1);
        if (!json_is_object(j)) {
            mwarn(m, m->where, "a frame at depth %u is %s, not an object: skipped", depth,
                  jsonbig_describe(j));
            continue;
        }
        if (m->nnodes >= CRASH_MAX_FRAMES) {
            if (!m->nodes_full)
                mwarn(m, m->where, "more than %d frames: the rest are skipped", CRASH_MAX_FRAMES);
            m->nodes_full = true;
            return;
        }
        if (!array_grow((void **)&m->nodes, &m->cap_nodes, m->nnodes + 1, sizeof *m->nodes)) {
            mkeep(m, cp_nomem(m->p));
            return;
        }
        size_t idx = m->nnodes++;
        mknode *nd = &m->nodes[idx];
        memset(nd, 0, sizeof *nd);
        nd->j = j;
        nd->parent = w->parent;
        nd->depth = depth;
        nd->stack = stack;
        nd->image = -1;
        decode_node(m, nd, idx);
        json_t *sub = json_object_get(j, "subFrames");
        if (sub && !json_is_array(sub))
            mwarn(m, m->where, "frame %zu: subFrames is %s, not an array: skipped", idx,
                  jsonbig_describe(sub));
        if (json_is_array(sub) && json_array_size(sub)) {
            if (top > CRASH_MAX_DEPTH) {
                mwarn(m, m->where, "frame %zu: deeper than %d levels: its callees are skipped",
                      idx, CRASH_MAX_DEPTH);
                m->nodes[idx].leaf = true;
            } else {
                ws[top++] = (walk_ent){sub, 0, (long)idx};
            }
        } else {
            m->nodes[idx].leaf = true;
        }
    }
}

/* ---- orientation ---- */

static int entry_score(const mknode *nd)
{
    const char *sym = str_of(json_object_get(nd->j, "symbolName"));
    if (sym && (!strcmp(sym, "start") || !strcmp(sym, "thread_start") ||
                !strcmp(sym, "_pthread_start") || !strcmp(sym, "start_wqthread") ||
                !strcmp(sym, "_dyld_start")))
        return 2;
    const char *n = str_of(json_object_get(nd->j, "binaryName"));
    if (n && (!strcmp(n, "dyld") || !strcmp(n, "libdyld.dylib") ||
              !strcmp(n, "libsystem_pthread.dylib")))
        return 1;
    return 0;
}

/* > 0: roots are innermost; < 0: outermost; 0: not seen. *deep: a chain
 * of more than one frame. */
static long orientation_votes(const mk *m, bool *deep)
{
    long votes = 0;
    *deep = false;
    long root = -1;
    for (size_t i = 0; i < m->nnodes; i++) {
        const mknode *nd = &m->nodes[i];
        if (nd->parent < 0)
            root = (long)i;
        if (!nd->leaf || nd->parent < 0 || root < 0)
            continue;
        *deep = true;
        int a = entry_score(&m->nodes[root]), b = entry_score(nd);
        votes += b > a ? 1 : b < a ? -1 : 0;
    }
    return votes;
}

/* ---- emitting frames ---- */

static void fill_frame(mk *m, crash_frame *f, const mknode *nd)
{
    json_t *j = nd->j;
    long img = nd->image;
    if (nd->far) {
        f->address = nd->has_addr ? nd->addr : 0;
        img = -1;
    } else if (img >= 0 && m->has_load[img]) {
        f->address = nd->has_off ? m->load[img] + nd->off : nd->addr;
        f->has_load = true;
        f->load_address = m->load[img];
    } else if (nd->has_off) {
        f->address = nd->off; /* over a load address of 0 */
        f->has_load = img >= 0;
    } else {
        f->address = nd->has_addr ? nd->addr : 0;
        if (img >= 0)
            m->nnoload++;
        img = -1;
    }
    f->image = img;
    const char *name = str_of(json_object_get(j, "binaryName"));
    if (name)
        mkeep(m, cp_set_str(m->p, &f->image_name, name, strlen(name)));
    const char *sym = str_of(json_object_get(j, "symbolName"));
    if (sym && *sym)
        mkeep(m, cp_set_str(m->p, &f->symbol, sym, strlen(sym)));
    uint64_t u;
    if (num_of(json_object_get(j, "offsetIntoSymbol"), &u) > 0) {
        f->has_symbol_offset = true;
        f->symbol_offset = u;
    }
    const char *file = str_of(json_object_get(j, "fileName"));
    if (file && *file)
        mkeep(m, cp_set_str(m->p, &f->file, file, strlen(file)));
    if (num_of(json_object_get(j, "lineNumber"), &u) > 0 && u <= UINT32_MAX)
        f->line = (uint32_t)u;
    f->count = nd->count;
    f->depth = nd->depth;
}

static crash_thread *new_thread(mk *m, uint32_t stack)
{
    crash_thread *th = NULL;
    symd_status st = cp_new_thread(m->p, &th, m->where);
    if (st == SYMD_E_TOO_LARGE) {
        symd_err_clear(m->p->err);
        mwarn(m, m->where, "more than %d threads: the rest are skipped", CRASH_MAX_THREADS);
        m->st = SYMD_E_TOO_LARGE; /* stop reading; reset by the caller */
        return NULL;
    }
    mkeep(m, st);
    if (th)
        th->number = (long)stack;
    return th;
}

static crash_frame *new_frame(mk *m)
{
    crash_frame *f = NULL;
    mkeep(m, cp_new_frame(m->p, m->p->r->nthreads - 1, &f, m->where));
    return f;
}

/* Per-thread trees: a thread per root-to-leaf chain of stack [s0, s1). */
static void emit_chains(mk *m, size_t s0, size_t s1, bool root_inner, bool attributed)
{
    crash_report *r = m->p->r;
    long chain[CRASH_MAX_DEPTH + 2];
    for (size_t i = s0; i < s1 && !m->st; i++) {
        if (!m->nodes[i].leaf)
            continue;
        size_t n = 0;
        bool blame = false;
        for (long k = (long)i; k >= 0 && n < CRASH_MAX_DEPTH + 2; k = m->nodes[k].parent) {
            chain[n++] = k;
            blame |= m->nodes[k].blame;
        }
        if (r->total_frames + n > CRASH_MAX_FRAMES) {
            mwarn(m, m->where,
                  "more than %d frames over the threads: the rest of the chains are skipped",
                  CRASH_MAX_FRAMES);
            return;
        }
        crash_thread *th = new_thread(m, m->nodes[i].stack);
        if (!th)
            return;
        th->count = m->nodes[chain[n - 1]].count;
        if ((attributed || blame)) {
            th->crashed = true;
            if (r->crashed_thread < 0)
                r->crashed_thread = (long)(r->nthreads - 1);
        }
        for (size_t q = 0; q < n && !m->st; q++) {
            /* chain is leaf → root; innermost first */
            const mknode *nd = &m->nodes[chain[root_inner ? n - 1 - q : q]];
            crash_frame *f = new_frame(m);
            if (!f)
                return;
            fill_frame(m, f, nd);
            f->depth = 0;
        }
    }
}

/* Merged trees written outermost at the roots: as they are. */
static void emit_tree(mk *m, size_t s0, size_t s1, bool attributed)
{
    crash_thread *th = new_thread(m, m->nodes[s0].stack);
    if (!th)
        return;
    th->is_tree = true;
    th->crashed = attributed;
    for (size_t i = s0; i < s1 && !m->st; i++) {
        if (m->nodes[i].parent < 0)
            th->count += m->nodes[i].count;
        crash_frame *f = new_frame(m);
        if (!f)
            return;
        fill_frame(m, f, &m->nodes[i]);
    }
}

typedef struct {
    long src, child, sib, last;
    uint64_t count;
    uint32_t depth;
} tnode;

static bool same_frame(const mknode *a, const mknode *b)
{
    if (a->image != b->image || a->has_off != b->has_off || a->off != b->off ||
        a->has_addr != b->has_addr || a->addr != b->addr)
        return false;
    const char *x = str_of(json_object_get(a->j, "symbolName"));
    const char *y = str_of(json_object_get(b->j, "symbolName"));
    return x == y || (x && y && !strcmp(x, y));
}

/* Merged trees written innermost at the roots (an inverted call tree): every
 * node's own samples (its count less its callers') are the stack from it
 * down to its root; those stacks are merged again outermost first. */
static void emit_inverted(mk *m, size_t s0, size_t s1, bool attributed)
{
    size_t n = s1 - s0;
    uint64_t *below = calloc(n, sizeof *below);
    tnode *t = NULL;
    size_t nt = 0, cap = 0, steps = 0;
    bool cut = false;
    if (!below) {
        mkeep(m, cp_nomem(m->p));
        return;
    }
    for (size_t i = s0; i < s1; i++) {
        long pa = m->nodes[i].parent;
        if (pa >= 0 && __builtin_add_overflow(below[pa - (long)s0], m->nodes[i].count,
                                             &below[pa - (long)s0]))
            below[pa - (long)s0] = UINT64_MAX;
    }
    if (!array_grow((void **)&t, &cap, 1, sizeof *t)) {
        free(below);
        mkeep(m, cp_nomem(m->p));
        return;
    }
    t[nt++] = (tnode){-1, -1, -1, -1, 0, 0}; /* a virtual top */
    size_t budget = CRASH_MAX_FRAMES - m->p->r->total_frames;
    for (size_t i = s0; i < s1 && !cut && !m->st; i++) {
        const mknode *nd = &m->nodes[i];
        uint64_t self = nd->count > below[i - s0] ? nd->count - below[i - s0] : 0;
        if (!self && !nd->leaf)
            continue;
        size_t cur = 0;
        for (long k = (long)i; k >= 0 && !cut; k = m->nodes[k].parent) {
            long c = t[cur].child;
            for (; c >= 0; c = t[c].sib) {
                if (++steps > MK_INVERT_STEPS) {
                    cut = true;
                    break;
                }
                if (same_frame(&m->nodes[t[c].src], &m->nodes[k]))
                    break;
            }
            if (cut)
                break;
            if (c < 0) {
                if (nt - 1 >= budget || !array_grow((void **)&t, &cap, nt + 1, sizeof *t)) {
                    if (nt - 1 >= budget)
                        cut = true;
                    else
                        mkeep(m, cp_nomem(m->p));
                    break;
                }
                t[nt] = (tnode){k, -1, -1, -1, 0, t[cur].depth + (cur ? 1 : 0)};
                if (t[cur].last >= 0)
                    t[t[cur].last].sib = (long)nt;
                else
                    t[cur].child = (long)nt;
                t[cur].last = (long)nt;
                c = (long)nt++;
            }
            if (__builtin_add_overflow(t[c].count, self, &t[c].count))
                t[c].count = UINT64_MAX;
            cur = (size_t)c;
        }
    }
    free(below);
    if (cut)
        mwarn(m, m->where, "the inverted call tree is too large to turn over: cut short");
    crash_thread *th = m->st ? NULL : new_thread(m, m->nodes[s0].stack);
    if (th) {
        th->is_tree = true;
        th->crashed = attributed;
        /* pre-order over the trie */
        long *stk = malloc((CRASH_MAX_DEPTH + 4) * sizeof *stk);
        size_t top = 0;
        if (!stk) {
            mkeep(m, cp_nomem(m->p));
        } else {
            if (t[0].child >= 0)
                stk[top++] = t[0].child;
            while (top && !m->st) {
                long c = stk[--top];
                if (t[c].sib >= 0)
                    stk[top++] = t[c].sib;
                crash_frame *f = new_frame(m);
                if (!f)
                    break;
                fill_frame(m, f, &m->nodes[t[c].src]);
                f->depth = t[c].depth;
                f->count = t[c].count;
                if (t[c].depth == 0)
                    th->count += t[c].count;
                if (t[c].child >= 0 && top < CRASH_MAX_DEPTH + 2)
                    stk[top++] = t[c].child;
            }
            free(stk);
        }
    }
    free(t);
}

static void read_tree(mk *m, json_t *tree, const char *at, size_t treeno, bool many,
                      uint32_t *stack_base, walk_ent *ws, size_t *first_of_stack,
                      bool *attributed, bool *per_thread_out, int *pt_seen)
{
    json_t *stacks = json_object_get(tree, "callStacks");
    json_t *pt = json_object_get(tree, "callStackPerThread");
    char tw[200];
    snprintf(tw, sizeof tw, many ? "%s.callStackTree[%zu]" : "%s.callStackTree", at, treeno);
    if (pt && !json_is_boolean(pt))
        mwarn(m, tw, "callStackPerThread is %s, not a boolean: taken as true", jsonbig_describe(pt));
    bool per = !json_is_false(pt);
    if (*pt_seen >= 0 && (bool)*pt_seen != per)
        mwarn(m, tw, "callStackPerThread differs from the diagnostic's first tree: each read as "
                     "its own says");
    if (*pt_seen < 0)
        *pt_seen = per;
    *per_thread_out = per;
    if (!json_is_array(stacks)) {
        mwarn(m, tw, "callStacks is %s, not an array: no frames", stacks ? jsonbig_describe(stacks) : "absent");
        return;
    }
    size_t s;
    json_t *cs;
    json_array_foreach(stacks, s, cs) {
        if (m->st || m->nodes_full)
            return;
        if (*stack_base + s >= MK_MAX_PARTS * 4u) {
            mwarn(m, tw, "more than %u call stacks: the rest are skipped", MK_MAX_PARTS * 4u);
            return;
        }
        uint32_t sid = *stack_base + (uint32_t)s;
        snprintf(m->where, sizeof m->where, "%s.callStacks[%zu]", tw, s);
        first_of_stack[sid] = m->nnodes;
        attributed[sid] = json_is_true(json_object_get(cs, "threadAttributed"));
        json_t *roots = json_object_get(cs, "callStackRootFrames");
        if (!json_is_object(cs) || !json_is_array(roots)) {
            mwarn(m, m->where, "no callStackRootFrames array: skipped");
            continue;
        }
        read_stack(m, roots, sid, ws);
    }
    *stack_base += (uint32_t)json_array_size(stacks);
}

static symd_status parse_diag(cp *p, const mk_diag *d, size_t part, size_t nparts)
{
    crash_report *r = p->r;
    mk m = {.p = p, .d = d};
    r->format = d->fmt;
    r->kind = d->kind;
    r->part = part;
    r->nparts = nparts;
    r->crashed_thread = -1;
    const char *at = d->path;
    symd_status st = SYMD_OK;
    walk_ent *ws = malloc((CRASH_MAX_DEPTH + 2) * sizeof *ws);
    size_t *first = malloc((MK_MAX_PARTS * 4u + 1) * sizeof *first);
    bool *attr = calloc(MK_MAX_PARTS * 4u + 1, sizeof *attr);
    bool *per = calloc(MK_MAX_PARTS * 4u + 1, sizeof *per);
    if (!ws || !first || !attr || !per) {
        st = cp_nomem(p);
        goto out;
    }
    if (d->payload) {
        const char *tb = str_of(json_object_get(d->payload, "timeStampBegin"));
        const char *te = str_of(json_object_get(d->payload, "timeStampEnd"));
        if (tb) {
            set_str(&m, &r->date, tb);
            add_metric(&m, "timeStampBegin", tb);
        }
        if (te)
            add_metric(&m, "timeStampEnd", te);
    }
    if (d->extra) {
        const char *sig = str_of(json_object_get(d->extra, "signatureId"));
        if (sig)
            add_metric(&m, "signatureId", sig);
        size_t i;
        json_t *ins;
        json_array_foreach(json_object_get(d->extra, "diagnosticInsights"), i, ins) {
            const char *s = str_of(json_object_get(ins, "insightsString"));
            if (s)
                add_metric(&m, "insight", s);
        }
    }
    if (d->meta)
        read_meta(&m, d->meta, at);
    json_t *tree = d->tree;
    uint32_t nstacks = 0;
    int pt_seen = -1;
    if (json_is_object(tree) && json_is_object(json_object_get(tree, "callStackTree")))
        tree = json_object_get(tree, "callStackTree"); /* MXCallStackTree.jsonRepresentation() */
    if (json_is_array(tree)) {
        size_t i;
        json_t *t;
        json_array_foreach(tree, i, t) {
            if (!json_is_object(t)) {
                char w[200];
                snprintf(w, sizeof w, "%s.callStackTree[%zu]", at, i);
                mwarn(&m, w, "%s, not a call-stack tree: skipped", jsonbig_describe(t));
                continue;
            }
            uint32_t b0 = nstacks;
            bool pr;
            read_tree(&m, t, at, i, true, &nstacks, ws, first, attr, &pr, &pt_seen);
            for (uint32_t s = b0; s < nstacks; s++)
                per[s] = pr;
        }
    } else if (json_is_object(tree)) {
        bool pr;
        read_tree(&m, tree, at, 0, false, &nstacks, ws, first, attr, &pr, &pt_seen);
        for (uint32_t s = 0; s < nstacks; s++)
            per[s] = pr;
    } else {
        char w[200];
        snprintf(w, sizeof w, "%s%scallStackTree", at, at[0] ? "." : "");
        mwarn(&m, w, "%s: no call-stack tree, no frames", tree ? jsonbig_describe(tree) : "absent");
    }
    if (m.st)
        goto done;
    if (!d->kind_known)
        r->kind = kind_of_meta(d->meta, pt_seen != 0, d->fmt);
    if (!d->meta && d->fmt == CRASH_FORMAT_METRICKIT)
        mwarn(&m, at[0] ? at : "body",
              "a call-stack tree without its diagnostic: no metadata, the kind (%s) is a guess",
              crash_kind_name(r->kind));
    snprintf(m.where, sizeof m.where, "%s%scallStackTree", at, at[0] ? "." : "");
    if (m.nloadmode)
        mwarn(&m, m.where,
              "%zu frames give the image's load address as offsetIntoBinaryTextSegment (as iOS 14 "
              "did): their offset is address - offsetIntoBinaryTextSegment",
              m.nloadmode);
    if (m.nfar)
        mwarn(&m, m.where,
              "%zu frames have an offsetIntoBinaryTextSegment of 4 GiB or more, past any __TEXT: "
              "not looked up",
              m.nfar);
    if (m.nmismatch)
        mwarn(&m, m.where,
              "%zu frames disagree with their image's load address (address - offset of its "
              "first frame): their offset is trusted",
              m.nmismatch);
    for (size_t i = 0; i < r->nimages; i++)
        if (m.has_load[i])
            r->images[i].load_address = m.load[i];
    bool deep;
    long votes = orientation_votes(&m, &deep);
    bool root_inner = votes > 0 || (votes == 0 && d->fmt != CRASH_FORMAT_ASC);
    if (votes == 0 && deep)
        mwarn(&m, m.where,
              "the tree's orientation cannot be told (no thread entry point at a root or a "
              "leaf): roots taken as the %s frames",
              root_inner ? "innermost" : "outermost");
    for (uint32_t s = 0; s < nstacks && !m.st; s++) {
        size_t s0 = first[s], s1 = s + 1 < nstacks ? first[s + 1] : m.nnodes;
        if (s0 >= s1)
            continue;
        snprintf(m.where, sizeof m.where, "%s%scallStacks[%u]", at, at[0] ? "." : "", s);
        if (per[s])
            emit_chains(&m, s0, s1, root_inner, attr[s]);
        else if (root_inner)
            emit_inverted(&m, s0, s1, attr[s]);
        else
            emit_tree(&m, s0, s1, attr[s]);
    }
    if (m.st == SYMD_E_TOO_LARGE && !p->err->kind)
        m.st = SYMD_OK; /* the thread limit: warned, the rest skipped */
    if (m.nnoload && !m.st)
        mwarn(&m, at[0] ? at : "body",
              "%zu frames give an address but no offset, in images no frame gives both for: "
              "not looked up",
              m.nnoload);
    if (r->crashed_thread < 0 && r->kind == CRASH_KIND_CRASH && r->nthreads == 1)
        r->crashed_thread = 0;
done:
    st = m.st;
out:
    free(ws);
    free(first);
    free(attr);
    free(per);
    free(m.nodes);
    free(m.slot);
    free(m.load);
    free(m.has_load);
    return st;
}

/* ---- entry ---------------------------------------------------------------------- */

bool crash_looks_like_metrickit(const char *s, size_t n)
{
    const char *e = s + n, *q = s;
    if (n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
        q += 3;
    while (q < e && (cp_is_ws(*q) || *q == '\r' || *q == '\n'))
        q++;
    if (q == e || (*q != '{' && *q != '['))
        return false;
    const char *nl = memchr(q, '\n', (size_t)(e - q));
    const char *le = nl ? nl : e;
    static const char bt[] = "\"bug_type\"";
    if (memmem(q, (size_t)(le - q), bt, sizeof bt - 1))
        return false; /* an .ips header line */
    static const char *const keys[] = {"\"callStackTree\"", "\"callStacks\"",
                                       "\"callStackRootFrames\"", "\"diagnosticLogs\""};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (memmem(q, (size_t)(e - q), keys[i], strlen(keys[i])))
            return true;
    return false;
}

symd_status crash_parse_metrickit(const char *s, size_t n, size_t want, crash_report **out,
                                  size_t *nout, symd_err *err)
{
    *out = NULL;
    *nout = 0;
    json_error_t je;
    json_t *root = jsonbig_loadb(s, n, 0, &je);
    if (!root) {
        if (strstr(je.text, "depth"))
            return symd_fail(err, SYMD_E_TOO_LARGE,
                             "line %d: the JSON nests deeper than %d levels (a call-stack tree "
                             "of about %d frames)",
                             je.line, JSON_PARSER_MAX_DEPTH, JSON_PARSER_MAX_DEPTH / 2);
        return symd_fail(err, SYMD_E_NOT_CRASH_REPORT,
                         "a MetricKit / App Store Connect diagnostic that is no JSON (line %d "
                         "column %d: %s)",
                         je.line, je.column, je.text);
    }
    mk_list l = {.err = err};
    if (json_is_array(root)) {
        size_t i;
        json_t *e;
        json_array_foreach(root, i, e) {
            char at[32];
            snprintf(at, sizeof at, "[%zu].", i);
            if (json_is_object(e))
                collect_object(&l, e, at);
        }
        /* "[0]." paths of bare trees and diagnostics lose their dot */
        for (size_t k = 0; k < l.n; k++) {
            size_t pl = strlen(l.d[k].path);
            if (pl && l.d[k].path[pl - 1] == '.')
                l.d[k].path[pl - 1] = 0;
        }
    } else if (json_is_object(root)) {
        collect_object(&l, root, "");
    }
    symd_status st = l.st;
    if (!st && !l.n)
        st = symd_fail(err, SYMD_E_NOT_CRASH_REPORT,
                       "a JSON document with no MetricKit diagnostic, call-stack tree or App "
                       "Store Connect diagnostic log in it");
    if (!st && want != SIZE_MAX && want >= l.n)
        st = symd_fail(err, SYMD_E_NOT_FOUND, "the input has %zu diagnostics, no part %zu", l.n,
                       want);
    size_t cnt = want == SIZE_MAX ? l.n : 1;
    crash_report *rs = st ? NULL : calloc(cnt, sizeof *rs);
    if (!st && !rs)
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory reading the diagnostics");
    size_t total = 0;
    for (size_t i = 0; !st && i < cnt; i++) {
        size_t part = want == SIZE_MAX ? i : want;
        crash_report *r = &rs[i];
        r->crashed_thread = -1;
        cp p = {.r = r, .err = err, .in = s, .in_len = n};
        st = parse_diag(&p, &l.d[part], part, l.n);
        free(p.cap_frames);
        total += r->total_frames;
        if (!st && total > MK_MAX_TOTAL_FRAMES)
            st = symd_fail(err, SYMD_E_TOO_LARGE,
                           "more than %u frames over the input's diagnostics",
                           MK_MAX_TOTAL_FRAMES);
        if (st) {
            for (size_t k = 0; k <= i; k++)
                crash_report_free(&rs[k]);
            free(rs);
            rs = NULL;
        }
    }
    free(l.d);
    json_decref(root);
    if (st)
        return st;
    *out = rs;
    *nout = cnt;
    return SYMD_OK;
}

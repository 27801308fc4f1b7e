/* .ips JSON bodies in, the crash model out: 309 crashes (threads,
 * lastExceptionBacktrace, asi, exception, termination, ktriageinfo,
 * threadState), 288 stackshots / hangs and the stackshots 151 panics embed
 * (processByPid, binaryImages), 298 jetsam (processes) and the panic string
 * of 151/210 (read by crash_panic.c). Every integer goes through util/jsonbig,
 * so values up to 2^64-1 are exact. A value of the wrong type is skipped with
 * a warning naming its JSON path ("threads[3].frames[7].imageOffset"); only
 * limits (SYMD_E_TOO_LARGE) and memory fail the report. */
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../util/dynbuf.h"
#include "../util/hex.h"
#include "../util/jsonbig.h"
#include "../util/util.h"
#include "crash_int.h"
#include "../util/metered.h" /* last: counts this file's allocations */

/* Text the reader assembles (app_specific, process details, verbatim lines)
 * is bounded; past the bound it is cut with a warning. */
#define TEXT_MAX (1u << 20)
/* Bytes of a register's description ("esr": "(Data Abort) byte read ...") kept. */
#define ESR_DESC_MAX 200

typedef struct {
    cp *p;
    symd_status st;   /* the first failure (memory, limits); sticky */
    char path[192];   /* where we are, for warnings: "threads[3].frames[7]" */
    size_t img0, nused; /* usedImages[i] is images[img0 + i] */
} jp;

/* ---- paths and warnings ------------------------------------------------------ */

static void jset(jp *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jset(jp *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->path, sizeof j->path, fmt, ap);
    va_end(ap);
}

/* A warning at path[.key] (or "body" at the root). Failure (memory) is
 * kept in j->st. */
static void jwarn(jp *j, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void jwarn(jp *j, const char *key, const char *fmt, ...)
{
    char where[256], msg[240];
    if (key)
        snprintf(where, sizeof where, "%s%s%s", j->path, j->path[0] ? "." : "", key);
    else
        snprintf(where, sizeof where, "%s", j->path[0] ? j->path : "body");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    symd_status st = cp_warn(j->p, where, "%s", msg);
    if (st && !j->st)
        j->st = st;
}

/* Keeps the first failure of a model helper. */
static symd_status jkeep(jp *j, symd_status st)
{
    if (st && !j->st)
        j->st = st;
    return j->st;
}

/* ---- typed reads: absent, read, or skipped with a warning ------------------- */

typedef enum { JV_ABSENT, JV_OK, JV_BAD } jv;

/* obj[key] as uint64_t. Absent or null: JV_ABSENT; another type or out of
 * range: a warning saying what is skipped, JV_BAD. */
static jv ju64(jp *j, const json_t *obj, const char *key, const char *skipped, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return JV_ABSENT;
    if (jsonbig_u64(v, out))
        return JV_OK;
    jwarn(j, key, "%s, not an unsigned 64-bit integer: %s skipped", jsonbig_describe(v), skipped);
    return JV_BAD;
}

static jv ji64(jp *j, const json_t *obj, const char *key, const char *skipped, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return JV_ABSENT;
    if (jsonbig_i64(v, out))
        return JV_OK;
    jwarn(j, key, "%s, not a 64-bit integer: %s skipped", jsonbig_describe(v), skipped);
    return JV_BAD;
}

/* obj[key] as a string into *dst (replacing it). Absent or null: JV_ABSENT;
 * another type, or longer than CRASH_MAX_LINE: a warning, JV_BAD. */
static jv jstr(jp *j, const json_t *obj, const char *key, char **dst)
{
    json_t *v = json_object_get(obj, key);
    size_t n;
    if (!v || json_is_null(v))
        return JV_ABSENT;
    if (!json_is_string(v) || jsonbig_literal(v, &n)) {
        jwarn(j, key, "%s, not a string: skipped", jsonbig_describe(v));
        return JV_BAD;
    }
    n = json_string_length(v);
    if (n > CRASH_MAX_LINE) {
        jwarn(j, key, "a string of %zu bytes, over %d: skipped", n, CRASH_MAX_LINE);
        return JV_BAD;
    }
    if (jkeep(j, cp_set_str(j->p, dst, json_string_value(v), n)))
        return JV_BAD;
    return JV_OK;
}

/* jstr into *dst only when *dst is still NULL. */
static void jstr_if_unset(jp *j, const json_t *obj, const char *key, char **dst)
{
    if (!*dst)
        jstr(j, obj, key, dst);
}

/* ---- text assembly ------------------------------------------------------------ */

typedef struct {
    dynbuf b;
    bool over, oom;
} tbuf;

static void tinit(tbuf *t, size_t max)
{
    dynbuf_init(&t->b, max);
    t->over = t->oom = false;
}

static void tput(tbuf *t, const char *s, size_t n)
{
    if (t->over || t->oom)
        return;
    if (!dynbuf_add(&t->b, s, n)) {
        if (dynbuf_over_limit(&t->b, n))
            t->over = true;
        else
            t->oom = true;
    }
}

static void tputs(tbuf *t, const char *s) { tput(t, s, strlen(s)); }

/* s[0..n) as a JSON string literal. */
static void tput_quoted(tbuf *t, const char *s, size_t n)
{
    tputs(t, "\"");
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        tput(t, s + from, i - from);
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else if (c == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else if (c == '\t')
            snprintf(esc, sizeof esc, "\\t");
        else
            snprintf(esc, sizeof esc, "\\u%04x", c);
        tputs(t, esc);
        from = i + 1;
    }
    tput(t, s + from, n - from);
    tputs(t, "\"");
}

/* A real as the shortest of %.15g / %.17g that reads back the same. */
static void tput_real(tbuf *t, double d)
{
    char s[40];
    snprintf(s, sizeof s, "%.15g", d);
    if (strtod(s, NULL) != d)
        snprintf(s, sizeof s, "%.17g", d);
    tputs(t, s);
}

/* v as compact JSON (big integers as their digits); a string at the top
 * is written raw when raw. Nesting past 16 levels is shown as an ellipsis. */
static void tput_value(tbuf *t, const json_t *v, int depth, bool raw)
{
    size_t n;
    const char *big = jsonbig_literal(v, &n);
    if (big) {
        tput(t, big, n);
        return;
    }
    uint64_t skipped;
    if (jsonbig_skipped(v, &skipped)) {
        char note[64];
        snprintf(note, sizeof note, "(%" PRIu64 " bytes, not read)", skipped);
        tputs(t, note);
        return;
    }
    char num[32];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (depth >= 16) {
            tputs(t, "{...}");
            return;
        }
        const char *key;
        json_t *m;
        bool first = true;
        tputs(t, "{");
        json_object_foreach((json_t *)v, key, m) {
            if (!first)
                tputs(t, ", ");
            first = false;
            tput_quoted(t, key, strlen(key));
            tputs(t, ": ");
            tput_value(t, m, depth + 1, false);
        }
        tputs(t, "}");
        return;
    }
    case JSON_ARRAY:
        if (depth >= 16) {
            tputs(t, "[...]");
            return;
        }
        tputs(t, "[");
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                tputs(t, ", ");
            tput_value(t, json_array_get(v, i), depth + 1, false);
        }
        tputs(t, "]");
        return;
    case JSON_STRING:
        if (raw)
            tput(t, json_string_value(v), json_string_length(v));
        else
            tput_quoted(t, json_string_value(v), json_string_length(v));
        return;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        tputs(t, num);
        return;
    case JSON_REAL:
        tput_real(t, json_real_value(v));
        return;
    case JSON_TRUE: tputs(t, "true"); return;
    case JSON_FALSE: tputs(t, "false"); return;
    default: tputs(t, "null"); return;
    }
}

/* The text of t into *dst (owned), NULL when empty; a warning at where when
 * it was cut at its bound. */
static void ttake(jp *j, tbuf *t, char **dst, const char *where)
{
    if (t->oom) {
        dynbuf_free(&t->b);
        jkeep(j, cp_nomem(j->p));
        return;
    }
    if (t->over)
        jkeep(j, cp_warn(j->p, where[0] ? where : "body",
                         "more than %zu bytes of text: the rest is left out", t->b.max));
    size_t n;
    char *s = (char *)dynbuf_take(&t->b, &n);
    if (!s || !n) {
        free(s);
        return;
    }
    free(*dst);
    *dst = s;
}

/* ---- 309: images, frames, threads ------------------------------------------- */

static bool uuid_is_zero(const uint8_t u[16])
{
    for (int i = 0; i < 16; i++)
        if (u[i])
            return false;
    return true;
}

/* obj["uuid"] into im (an all-zero UUID is none). */
static void read_uuid(jp *j, const json_t *obj, crash_image *im)
{
    char *u = NULL;
    if (jstr(j, obj, "uuid", &u) != JV_OK)
        return;
    if (!uuid_parse(u, im->uuid))
        jwarn(j, "uuid", "\"%.40s\" is not a UUID: skipped", u);
    else
        im->has_uuid = !uuid_is_zero(im->uuid);
    free(u);
}

/* An image's "source" (v: usedImages[].source, binaryImages[i][2]) into im:
 * one ASCII letter as written ('P', 'S', 'T', 'A'...); anything else is
 * skipped with a warning at key. */
static void read_source(jp *j, const json_t *v, const char *key, crash_image *im)
{
    if (!v || json_is_null(v))
        return;
    const char *c = json_is_string(v) ? json_string_value(v) : NULL;
    if (c && json_string_length(v) == 1 &&
        ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z')))
        im->source = *c;
    else
        jwarn(j, key, "%s, not a one-letter source: skipped", jsonbig_describe(v));
}

/* The last component of a path, as Apple names an image that has no name. */
static void name_from_path(jp *j, crash_image *im)
{
    if (im->name || !im->path)
        return;
    const char *b = strrchr(im->path, '/');
    b = b ? b + 1 : im->path;
    if (*b)
        jkeep(j, cp_set_str(j->p, &im->name, b, strlen(b)));
}

/* usedImages: one image per element, a bad element included (kept empty with
 * a warning) so imageIndex keeps pointing at the right one. */
static symd_status ips_used_images(jp *j, const json_t *arr, const char *proc_path)
{
    crash_report *r = j->p->r;
    j->img0 = r->nimages;
    j->nused = 0;
    if (!arr || json_is_null(arr))
        return j->st;
    if (!json_is_array(arr)) {
        jset(j, "usedImages");
        jwarn(j, NULL, "%s, not an array: no images", jsonbig_describe(arr));
        return j->st;
    }
    for (size_t i = 0; i < json_array_size(arr) && !j->st; i++) {
        json_t *o = json_array_get(arr, i);
        crash_image *im;
        jset(j, "usedImages[%zu]", i);
        if (jkeep(j, cp_new_image(j->p, &im, j->path)))
            break;
        j->nused++;
        if (!json_is_object(o)) {
            jwarn(j, NULL, "%s, not an object: an image without name or address", jsonbig_describe(o));
            continue;
        }
        uint64_t base = 0, size = 0;
        jv vb = ju64(j, o, "base", "the load address", &base);
        jv vs = ju64(j, o, "size", "the size", &size);
        im->load_address = base;
        jstr(j, o, "name", &im->name);
        jstr(j, o, "path", &im->path);
        jstr(j, o, "arch", &im->arch);
        jstr(j, o, "CFBundleIdentifier", &im->bundle_id);
        jstr(j, o, "CFBundleShortVersionString", &im->version);
        name_from_path(j, im);
        if (vb == JV_OK && vs == JV_OK && size > 0) {
            if (u64_add(base, size - 1, &im->end_address))
                im->has_end = true;
            else
                jwarn(j, "size", "base + size passes 2^64: the end is left unknown");
        }
        read_uuid(j, o, im);
        read_source(j, json_object_get(o, "source"), "source", im);
        if (im->path && proc_path && strcmp(im->path, proc_path) == 0)
            im->is_app = true;
    }
    j->path[0] = 0;
    return j->st;
}

/* One frame object (threads[].frames[k], lastExceptionBacktrace[k]) appended
 * to threads[t]; a frame that cannot be placed is skipped with a warning. No
 * imageIndex is how Apple writes a frame outside any image: kept, image -1,
 * the address as imageOffset gives it (0 when absent). */
static symd_status ips_frame(jp *j, const json_t *o, size_t t)
{
    crash_report *r = j->p->r;
    if (!json_is_object(o)) {
        jwarn(j, NULL, "%s, not an object: frame skipped", jsonbig_describe(o));
        return j->st;
    }
    uint64_t idx = 0, off = 0, addr = 0, v;
    jv vi = ju64(j, o, "imageIndex", "the frame", &idx);
    jv vo = ju64(j, o, "imageOffset", "the frame", &off);
    if (vi == JV_BAD || vo == JV_BAD)
        return j->st;
    const crash_image *im = NULL;
    if (vi == JV_OK) {
        if (idx >= j->nused) {
            jwarn(j, "imageIndex", "%" PRIu64 " is past usedImages (%zu): frame skipped", idx,
                  j->nused);
            return j->st;
        }
        if (vo == JV_ABSENT) {
            jwarn(j, NULL, "imageIndex without imageOffset: frame skipped");
            return j->st;
        }
        im = &r->images[j->img0 + idx];
        if (!u64_add(im->load_address, off, &addr)) {
            jwarn(j, "imageOffset", "base + imageOffset passes 2^64: frame skipped");
            return j->st;
        }
    } else {
        addr = off;
    }
    crash_frame *f;
    if (jkeep(j, cp_new_frame(j->p, t, &f, j->path)))
        return j->st;
    f->address = addr;
    if (im) {
        f->image = (long)(j->img0 + idx);
        f->has_load = true;
        f->load_address = im->load_address;
        if (im->name && jkeep(j, cp_set_str(j->p, &f->image_name, im->name, strlen(im->name))))
            return j->st;
    }
    jstr(j, o, "symbol", &f->symbol);
    jstr(j, o, "sourceFile", &f->file);
    if (ju64(j, o, "symbolLocation", "the symbol offset", &v) == JV_OK) {
        f->has_symbol_offset = true;
        f->symbol_offset = v;
    }
    if (ju64(j, o, "sourceLine", "the line", &v) == JV_OK) {
        if (v > UINT32_MAX)
            jwarn(j, "sourceLine", "%" PRIu64 " is past 2^32-1: skipped", v);
        else
            f->line = (uint32_t)v;
    }
    json_t *in = json_object_get(o, "inline");
    if (json_is_boolean(in))
        f->inlined = json_is_true(in);
    else if (in && !json_is_null(in))
        jwarn(j, "inline", "%s, not a boolean: skipped", jsonbig_describe(in));
    return j->st;
}

/* threads[]: one thread per element, a bad one kept empty (faultingThread
 * counts them). */
static symd_status ips_threads(jp *j, const json_t *arr, size_t *tbase, size_t *nths)
{
    crash_report *r = j->p->r;
    *tbase = r->nthreads;
    *nths = 0;
    if (!arr || json_is_null(arr))
        return j->st;
    if (!json_is_array(arr)) {
        jset(j, "threads");
        jwarn(j, NULL, "%s, not an array: no threads", jsonbig_describe(arr));
        return j->st;
    }
    for (size_t i = 0; i < json_array_size(arr) && !j->st; i++) {
        json_t *o = json_array_get(arr, i);
        crash_thread *th;
        jset(j, "threads[%zu]", i);
        if (jkeep(j, cp_new_thread(j->p, &th, j->path)))
            break;
        (*nths)++;
        size_t t = r->nthreads - 1;
        th->number = (long)i;
        if (!json_is_object(o)) {
            jwarn(j, NULL, "%s, not an object: an empty thread", jsonbig_describe(o));
            continue;
        }
        jstr(j, o, "name", &th->name);
        jstr(j, o, "queue", &th->queue);
        json_t *trig = json_object_get(o, "triggered");
        if (trig && !json_is_boolean(trig) && !json_is_null(trig))
            jwarn(j, "triggered", "%s, not a boolean: skipped", jsonbig_describe(trig));
        r->threads[t].crashed = json_is_true(trig);
        json_t *fr = json_object_get(o, "frames");
        if (!fr || json_is_null(fr))
            continue;
        if (!json_is_array(fr)) {
            jwarn(j, "frames", "%s, not an array: no frames", jsonbig_describe(fr));
            continue;
        }
        for (size_t k = 0; k < json_array_size(fr) && !j->st; k++) {
            jset(j, "threads[%zu].frames[%zu]", i, k);
            ips_frame(j, json_array_get(fr, k), t);
        }
    }
    j->path[0] = 0;
    return j->st;
}

/* lastExceptionBacktrace: a thread of its own after the others. */
static symd_status ips_last_exception(jp *j, const json_t *arr)
{
    crash_report *r = j->p->r;
    if (!arr || json_is_null(arr))
        return j->st;
    jset(j, "lastExceptionBacktrace");
    if (!json_is_array(arr)) {
        jwarn(j, NULL, "%s, not an array: skipped", jsonbig_describe(arr));
        j->path[0] = 0;
        return j->st;
    }
    crash_thread *th;
    if (json_array_size(arr) == 0 || jkeep(j, cp_new_thread(j->p, &th, j->path)))
        return j->st;
    th->role = CRASH_THREAD_LAST_EXCEPTION;
    th->number = -1;
    static const char title[] = "Last Exception Backtrace:";
    if (jkeep(j, cp_set_str(j->p, &th->title, title, sizeof title - 1)))
        return j->st;
    size_t t = r->nthreads - 1;
    for (size_t k = 0; k < json_array_size(arr) && !j->st; k++) {
        jset(j, "lastExceptionBacktrace[%zu]", k);
        ips_frame(j, json_array_get(arr, k), t);
    }
    j->path[0] = 0;
    return j->st;
}

/* ---- 309: registers ------------------------------------------------------------ */

/* One register {"value": n} of threadState (o), unless it is no register. */
static void add_register(jp *j, const char *name, const json_t *o, bool w32)
{
    crash_report *r = j->p->r;
    json_t *v = json_is_object(o) ? json_object_get(o, "value") : NULL;
    if (!v)
        return; /* not a register ("flavor", or something Apple added) */
    uint64_t x;
    if (!jsonbig_u64(v, &x)) {
        jwarn(j, name, "value is %s, not an unsigned 64-bit integer: register skipped",
              jsonbig_describe(v));
        return;
    }
    size_t nl = strlen(name);
    if (nl > 32) {
        jwarn(j, NULL, "a register name of %zu bytes: register skipped", nl);
        return;
    }
    if (r->nregisters >= CRASH_MAX_REGISTERS) {
        jwarn(j, name, "more than %d registers: skipped", CRASH_MAX_REGISTERS);
        return;
    }
    char val[24 + 1 + ESR_DESC_MAX];
    int vl = snprintf(val, 24, w32 ? "0x%08" PRIx64 : "0x%016" PRIx64, x);
    /* esr's "description" ("(Breakpoint) brk 1"), as Apple prints it after the value */
    json_t *d = json_object_get(o, "description");
    if (json_is_string(d) && !jsonbig_literal(d, &(size_t){0})) {
        const char *ds = json_string_value(d);
        size_t dn = json_string_length(d);
        while (dn && (*ds == ' ' || *ds == '\t'))
            ds++, dn--;
        if (dn > ESR_DESC_MAX) {
            jwarn(j, name, "a description of %zu bytes: cut to %d", dn, ESR_DESC_MAX);
            dn = ESR_DESC_MAX;
        }
        if (dn) {
            val[vl++] = ' ';
            memcpy(val + vl, ds, dn);
            vl += (int)dn;
        }
    } else if (d && !json_is_null(d)) {
        jwarn(j, name, "description is %s, not a string: skipped", jsonbig_describe(d));
    }
    jkeep(j, cp_add_register(j->p, name, nl, val, (size_t)vl, j->path));
}

/* threadState of the faulting thread: x[0..28] as "x0".., then the named
 * registers Apple writes (ARM and x86) in its order, then any other
 * {"value": n} in the report's order. */
static symd_status ips_registers(jp *j, const json_t *ts, size_t ti)
{
    static const char *const named[] = {
        "fp", "lr", "sp", "pc", "cpsr", "far", "esr",
        "rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "rsp", "r8", "r9", "r10",
        "r11", "r12", "r13", "r14", "r15", "rip", "rflags", "cr2",
    };
    if (!ts || json_is_null(ts))
        return j->st;
    jset(j, "threads[%zu].threadState", ti);
    if (!json_is_object(ts)) {
        jwarn(j, NULL, "%s, not an object: no registers", jsonbig_describe(ts));
        j->path[0] = 0;
        return j->st;
    }
    json_t *fl = json_object_get(ts, "flavor");
    bool w32 = json_is_string(fl) && !strstr(json_string_value(fl), "64") &&
               !strstr(json_string_value(fl), "x86_THREAD_STATE");
    json_t *x = json_object_get(ts, "x");
    if (x && !json_is_array(x))
        jwarn(j, "x", "%s, not an array: skipped", jsonbig_describe(x));
    for (size_t i = 0; json_is_array(x) && i < json_array_size(x) && !j->st; i++) {
        char name[24];
        snprintf(name, sizeof name, "x%zu", i);
        json_t *o = json_array_get(x, i);
        if (!json_is_object(o) || !json_object_get(o, "value")) {
            char key[24];
            snprintf(key, sizeof key, "x[%zu]", i);
            jwarn(j, key, "%s without a value: register skipped", jsonbig_describe(o));
            continue;
        }
        add_register(j, name, o, w32);
    }
    for (size_t i = 0; i < sizeof named / sizeof named[0] && !j->st; i++) {
        json_t *o = json_object_get(ts, named[i]);
        if (o)
            add_register(j, named[i], o, w32);
    }
    const char *key;
    json_t *o;
    json_object_foreach((json_t *)ts, key, o) {
        bool known = strcmp(key, "x") == 0 || strcmp(key, "flavor") == 0;
        for (size_t k = 0; k < sizeof named / sizeof named[0] && !known; k++)
            known = strcmp(key, named[k]) == 0;
        if (!known && !j->st)
            add_register(j, key, o, w32);
    }
    j->path[0] = 0;
    return j->st;
}

/* ---- 309: exception, termination, asi, text sections ------------------------ */

static void place_line(jp *j, crash_place at, const char *label, const char *s, size_t n);

/* A "Name: value" line of the verbatim block before the first thread. */
static void block_line(jp *j, const char *label, const char *s, size_t n)
{
    place_line(j, CRASH_AT_THREAD, label, s, n);
}

/* A string member as a block line; the wrong type is warned. */
static void block_string(jp *j, const json_t *obj, const char *key, const char *label)
{
    json_t *v = json_object_get(obj, key);
    size_t n;
    if (!v || json_is_null(v))
        return;
    if (!json_is_string(v) || jsonbig_literal(v, &n)) {
        jwarn(j, key, "%s, not a string: skipped", jsonbig_describe(v));
        return;
    }
    block_line(j, label, json_string_value(v), json_string_length(v));
}

static symd_status ips_exception(jp *j, const json_t *root)
{
    crash_report *r = j->p->r;
    json_t *ex = json_object_get(root, "exception");
    if (json_is_string(ex)) { /* stackshots: the exception code alone */
        jstr(j, root, "exception", &r->exception_codes);
        return j->st;
    }
    jset(j, "exception");
    if (json_is_object(ex)) {
        jstr(j, ex, "type", &r->exception_type);
        jstr(j, ex, "signal", &r->exception_signal);
        jstr(j, ex, "codes", &r->exception_codes);
        json_t *raw = json_object_get(ex, "rawCodes");
        if (raw && !json_is_array(raw) && !json_is_null(raw))
            jwarn(j, "rawCodes", "%s, not an array: skipped", jsonbig_describe(raw));
        if (!r->exception_codes && json_is_array(raw) && json_array_size(raw) > 0) {
            tbuf t;
            tinit(&t, CRASH_MAX_LINE);
            for (size_t i = 0; i < json_array_size(raw); i++) {
                json_t *c = json_array_get(raw, i);
                uint64_t v;
                if (!jsonbig_u64(c, &v)) {
                    char key[32];
                    snprintf(key, sizeof key, "rawCodes[%zu]", i);
                    jwarn(j, key, "%s, not an unsigned 64-bit integer: skipped", jsonbig_describe(c));
                    continue;
                }
                char s[24];
                snprintf(s, sizeof s, "0x%016" PRIx64, v);
                if (t.b.len)
                    tputs(&t, ", ");
                tputs(&t, s);
            }
            ttake(j, &t, &r->exception_codes, "exception.rawCodes");
        }
        block_string(j, ex, "subtype", "Exception Subtype: ");
        block_string(j, ex, "message", "Exception Message: ");
    } else if (ex && !json_is_null(ex)) {
        jwarn(j, NULL, "%s, neither an object nor a string: skipped", jsonbig_describe(ex));
    }
    j->path[0] = 0;
    return j->st;
}

/* termination: "Namespace X, Code 0x.. indicator, reason, reason..." on one
 * line; who terminated it as a block line. */
static symd_status ips_termination(jp *j, const json_t *root)
{
    crash_report *r = j->p->r;
    json_t *te = json_object_get(root, "termination");
    if (!te || json_is_null(te))
        return j->st;
    jset(j, "termination");
    if (!json_is_object(te)) {
        jwarn(j, NULL, "%s, not an object: skipped", jsonbig_describe(te));
        j->path[0] = 0;
        return j->st;
    }
    char *ns = NULL, *ind = NULL, *by = NULL;
    uint64_t code = 0;
    int64_t pid = 0;
    jstr(j, te, "namespace", &ns);
    jstr(j, te, "indicator", &ind);
    jv vc = ju64(j, te, "code", "the code", &code);
    tbuf t;
    tinit(&t, CRASH_MAX_LINE);
    if (ns || vc == JV_OK || ind) {
        tputs(&t, "Namespace ");
        tputs(&t, ns ? ns : "?");
        if (vc == JV_OK) {
            char s[32];
            snprintf(s, sizeof s, ", Code 0x%" PRIx64, code);
            tputs(&t, s);
        }
        if (ind) {
            tputs(&t, " ");
            tputs(&t, ind);
        }
    }
    static const char *const lists[] = {"reasons", "details"};
    for (size_t l = 0; l < 2; l++) {
        json_t *a = json_object_get(te, lists[l]);
        if (!a || json_is_null(a))
            continue;
        if (!json_is_array(a)) {
            jwarn(j, lists[l], "%s, not an array: skipped", jsonbig_describe(a));
            continue;
        }
        for (size_t i = 0; i < json_array_size(a); i++) {
            json_t *s = json_array_get(a, i);
            if (!json_is_string(s)) {
                char key[32];
                snprintf(key, sizeof key, "%s[%zu]", lists[l], i);
                jwarn(j, key, "%s, not a string: skipped", jsonbig_describe(s));
                continue;
            }
            if (t.b.len)
                tputs(&t, ", ");
            tput(&t, json_string_value(s), json_string_length(s));
        }
    }
    /* one line: a reason may hold newlines */
    for (size_t i = 0; i < t.b.len; i++)
        if (t.b.data[i] == '\n' || t.b.data[i] == '\r')
            t.b.data[i] = ' ';
    ttake(j, &t, &r->termination, "termination");
    if (jstr(j, te, "byProc", &by) == JV_OK) {
        tbuf bt;
        tinit(&bt, CRASH_MAX_LINE);
        tputs(&bt, "Terminating Process: ");
        tputs(&bt, by);
        if (ji64(j, te, "byPid", "the pid", &pid) == JV_OK) {
            char s[32];
            snprintf(s, sizeof s, " [%" PRId64 "]", pid);
            tputs(&bt, s);
        }
        char *line = NULL;
        ttake(j, &bt, &line, "termination.byProc");
        if (line)
            jkeep(j, cp_add_verbatim(j->p, CRASH_AT_THREAD, 0, line, strlen(line)));
        free(line);
    }
    free(ns);
    free(ind);
    free(by);
    j->path[0] = 0;
    return j->st;
}

/* asi (image name -> strings): the lines Apple prints under "Application
 * Specific Information:", one per string, in order. */
static void ips_asi(jp *j, const json_t *asi, tbuf *as)
{
    if (!asi || json_is_null(asi))
        return;
    jset(j, "asi");
    if (json_is_string(asi)) {
        tput(as, json_string_value(asi), json_string_length(asi));
        tputs(as, "\n");
    } else if (!json_is_object(asi)) {
        jwarn(j, NULL, "%s, not an object: skipped", jsonbig_describe(asi));
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)asi, key, v) {
        if (json_is_string(v)) {
            tput(as, json_string_value(v), json_string_length(v));
            tputs(as, "\n");
            continue;
        }
        if (!json_is_array(v)) {
            jwarn(j, key, "%s, not an array of strings: skipped", jsonbig_describe(v));
            continue;
        }
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *s = json_array_get(v, i);
            if (!json_is_string(s) || jsonbig_literal(s, &(size_t){0})) {
                char k2[112];
                snprintf(k2, sizeof k2, "%.80s[%zu]", key, i);
                jwarn(j, k2, "%s, not a string: skipped", jsonbig_describe(s));
                continue;
            }
            tput(as, json_string_value(s), json_string_length(s));
            tputs(as, "\n");
        }
    }
    j->path[0] = 0;
}

/* Text sections of a 309 the model has no field for, as Apple prints them,
 * in the verbatim block before the first thread. */
static void ips_text_sections(jp *j, const json_t *root)
{
    j->path[0] = 0;
    block_string(j, root, "vmRegionInfo", "VM Region Info: ");
    json_t *kt = json_object_get(root, "ktriageinfo");
    if (json_is_string(kt)) {
        size_t n = json_string_length(kt);
        const char *s = json_string_value(kt);
        while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
            n--;
        block_line(j, "\nKernel Triage:\n", s, n);
    } else if (kt && !json_is_null(kt)) {
        jwarn(j, "ktriageinfo", "%s, not a string: skipped", jsonbig_describe(kt));
    }
}

/* ---- 309: the header lines Apple's text layout shows ----------------------------- */

/* A line "label value" of a block at place (value: s[0..n)). */
static void place_line(jp *j, crash_place at, const char *label, const char *s, size_t n)
{
    size_t ll = strlen(label);
    char *b = malloc(ll + n + 1);
    if (!b) {
        jkeep(j, cp_nomem(j->p));
        return;
    }
    memcpy(b, label, ll);
    memcpy(b + ll, s, n);
    jkeep(j, cp_add_verbatim(j->p, at, 0, b, ll + n));
    free(b);
}

/* root[key] as a line: a string as written, an integer in decimal followed by
 * unit; a value of another type is warned. false when there is no such line. */
static bool field_line(jp *j, const json_t *root, const char *key, crash_place at,
                       const char *label, const char *unit)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return false;
    char num[48];
    int64_t i;
    size_t n;
    if (json_is_string(v) && !jsonbig_literal(v, &n)) {
        n = json_string_length(v);
        if (n > CRASH_MAX_LINE) {
            jwarn(j, key, "a string of %zu bytes: skipped", n);
            return false;
        }
        place_line(j, at, label, json_string_value(v), n);
        return true;
    }
    if (jsonbig_i64(v, &i)) {
        int k = snprintf(num, sizeof num, "%" PRId64 "%s", i, unit ? unit : "");
        place_line(j, at, label, num, (size_t)k);
        return true;
    }
    jwarn(j, key, "%s, neither a string nor an integer: skipped", jsonbig_describe(v));
    return false;
}

/* "name [pid]" of root[nkey] and root[pkey] (either may be absent). */
static void named_pid_line(jp *j, const json_t *root, const char *nkey, const char *pkey,
                           crash_place at, const char *label)
{
    json_t *nv = json_object_get(root, nkey), *pv = json_object_get(root, pkey);
    const char *name = NULL;
    size_t nn = 0;
    int64_t pid = 0;
    bool has_pid = false;
    if (json_is_string(nv) && !jsonbig_literal(nv, &nn)) {
        name = json_string_value(nv);
        nn = json_string_length(nv);
        if (nn > CRASH_MAX_LINE) {
            jwarn(j, nkey, "a string of %zu bytes: skipped", nn);
            name = NULL;
        }
    } else if (nv && !json_is_null(nv)) {
        jwarn(j, nkey, "%s, not a string: skipped", jsonbig_describe(nv));
    }
    if (pv && !json_is_null(pv)) {
        has_pid = jsonbig_i64(pv, &pid);
        if (!has_pid)
            jwarn(j, pkey, "%s, not an integer: skipped", jsonbig_describe(pv));
    }
    if (!name && !has_pid)
        return;
    char tail[40] = "";
    if (has_pid)
        snprintf(tail, sizeof tail, "%s[%" PRId64 "]", name ? " " : "", pid);
    size_t tl = strlen(tail);
    char *b = malloc(nn + tl + 1);
    if (!b) {
        jkeep(j, cp_nomem(j->p));
        return;
    }
    if (name)
        memcpy(b, name, nn);
    else
        nn = 0;
    memcpy(b + nn, tail, tl);
    place_line(j, at, label, b, nn + tl);
    free(b);
}

/* extMods {targeted, caller, system: {task_for_pid, thread_create,
 * thread_set_state}} as Apple's External Modification Summary. */
static void ext_mods(jp *j, const json_t *root)
{
    json_t *em = json_object_get(root, "extMods");
    if (!em || json_is_null(em))
        return;
    if (!json_is_object(em)) {
        jwarn(j, "extMods", "%s, not an object: skipped", jsonbig_describe(em));
        return;
    }
    static const struct {
        const char *key, *title;
    } parts[] = {
        {"targeted", "  Calls made by other processes targeting this process:"},
        {"caller", "  Calls made by this process:"},
        {"system", "  Calls made by all processes on this machine:"},
    };
    static const char *const calls[] = {"task_for_pid", "thread_create", "thread_set_state"};
    tbuf t;
    tinit(&t, CRASH_MAX_LINE);
    tputs(&t, "External Modification Summary:");
    jset(j, "extMods");
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        json_t *o = json_object_get(em, parts[i].key);
        if (!o || json_is_null(o))
            continue;
        if (!json_is_object(o)) {
            jwarn(j, parts[i].key, "%s, not an object: skipped", jsonbig_describe(o));
            continue;
        }
        tputs(&t, "\n");
        tputs(&t, parts[i].title);
        for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
            json_t *v = json_object_get(o, calls[c]);
            uint64_t x;
            if (!v || json_is_null(v))
                continue;
            char line[96];
            if (!jsonbig_u64(v, &x)) {
                char k2[64];
                snprintf(k2, sizeof k2, "%s.%s", parts[i].key, calls[c]);
                jwarn(j, k2, "%s, not an unsigned integer: skipped", jsonbig_describe(v));
                continue;
            }
            snprintf(line, sizeof line, "\n    %s: %" PRIu64, calls[c], x);
            tputs(&t, line);
        }
    }
    json_t *wv = json_object_get(em, "warnings");
    uint64_t w;
    if (wv && jsonbig_u64(wv, &w) && w) {
        char line[64];
        snprintf(line, sizeof line, "\n  Warnings: %" PRIu64, w);
        tputs(&t, line);
    }
    j->path[0] = 0;
    char *text = NULL;
    ttake(j, &t, &text, "extMods");
    if (text)
        jkeep(j, cp_add_verbatim(j->p, CRASH_AT_END, 0, text, strlen(text)));
    free(text);
}

/* The fields of a 309 body Apple's text layout shows and the model has no
 * member for, as lines of blocks where Apple puts them: after "Code Type:"
 * (CRASH_AT_HEADER), after "OS Version:" (CRASH_AT_DATE), after the
 * Binary Images (CRASH_AT_END). The pid goes to r->pid. */
static void ips_header_fields(jp *j, const json_t *root)
{
    crash_report *r = j->p->r;
    j->path[0] = 0;
    int64_t pid;
    json_t *pv = json_object_get(root, "pid");
    if (pv && jsonbig_i64(pv, &pid) && pid >= -1 && pid <= INT32_MAX) {
        r->has_pid = true;
        r->pid = (long)pid;
    }
    field_line(j, root, "crashReporterKey", CRASH_AT_HEADER, "CrashReporter Key:   ", NULL);
    field_line(j, root, "procRole", CRASH_AT_HEADER, "Role:                ", NULL);
    named_pid_line(j, root, "parentProc", "parentPid", CRASH_AT_HEADER, "Parent Process:      ");
    named_pid_line(j, root, "coalitionName", "coalitionID", CRASH_AT_HEADER,
                   "Coalition:           ");
    named_pid_line(j, root, "responsibleProc", "responsiblePid", CRASH_AT_HEADER,
                   "Responsible Process: ");
    field_line(j, root, "userID", CRASH_AT_HEADER, "User ID:             ", NULL);

    field_line(j, root, "procLaunch", CRASH_AT_DATE, "Launch Time:         ", NULL);
    json_t *ov = json_object_get(root, "osVersion");
    if (json_is_object(ov)) {
        jset(j, "osVersion");
        field_line(j, ov, "releaseType", CRASH_AT_DATE, "Release Type:        ", NULL);
        j->path[0] = 0;
    }
    field_line(j, root, "basebandVersion", CRASH_AT_DATE, "Baseband Version:    ", NULL);
    field_line(j, root, "sleepWakeUUID", CRASH_AT_DATE, "Sleep/Wake UUID:       ", NULL);
    field_line(j, root, "uptime", CRASH_AT_DATE, "Time Awake Since Boot: ", " seconds");
    field_line(j, root, "wakeTime", CRASH_AT_DATE, "Time Since Wake:       ", " seconds");
    field_line(j, root, "bootSessionUUID", CRASH_AT_DATE, "Boot Session UUID:     ", NULL);
    field_line(j, root, "sip", CRASH_AT_DATE, "System Integrity Protection: ", NULL);

    ext_mods(j, root);
    json_t *vs = json_object_get(root, "vmSummary");
    if (json_is_string(vs) && !jsonbig_literal(vs, &(size_t){0})) {
        const char *s = json_string_value(vs);
        size_t n = json_string_length(vs);
        while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
            n--;
        if (n > TEXT_MAX) {
            jwarn(j, "vmSummary", "a string of %zu bytes: cut to %u", n, TEXT_MAX);
            n = TEXT_MAX;
        }
        place_line(j, CRASH_AT_END, "\nVM Region Summary:\n", s, n);
    } else if (vs && !json_is_null(vs)) {
        jwarn(j, "vmSummary", "%s, not a string: skipped", jsonbig_describe(vs));
    }
}

/* ---- stackshots: 288, and 151 panics ------------------------------------------- */

/* The image of binaryImages[i] ([uuid, base, type, name?] or an object with
 * uuid/base/name): an index into images, reusing one the panic text already
 * made for the same UUID and base (pre < nimages are candidates). */
static void stackshot_image(jp *j, const json_t *e, size_t pre0, size_t pre1, size_t *out)
{
    crash_report *r = j->p->r;
    json_t *ju = NULL, *jb = NULL, *jn = NULL, *js = NULL;
    if (json_is_array(e)) {
        ju = json_array_get(e, 0);
        jb = json_array_get(e, 1);
        js = json_array_get(e, 2);
        jn = json_array_get(e, 3);
    } else if (json_is_object(e)) {
        ju = json_object_get(e, "uuid");
        jb = json_object_get(e, "base");
        js = json_object_get(e, "source");
        jn = json_object_get(e, "name");
    } else {
        jwarn(j, NULL, "%s, not an array: an image without UUID or address", jsonbig_describe(e));
    }
    uint8_t u[16];
    bool has_uuid = false;
    uint64_t base = 0;
    if (ju && !json_is_null(ju)) {
        if (!json_is_string(ju) || !uuid_parse(json_string_value(ju), u))
            jwarn(j, "uuid", "%s that is no UUID: skipped", jsonbig_describe(ju));
        else
            has_uuid = !uuid_is_zero(u);
    }
    if (jb && !json_is_null(jb) && !jsonbig_u64(jb, &base))
        jwarn(j, "base", "%s, not an unsigned 64-bit integer: skipped", jsonbig_describe(jb));
    /* A few images came from the panic text; one of them may be this one. */
    for (size_t i = pre0; has_uuid && i < pre1; i++)
        if (r->images[i].has_uuid && r->images[i].load_address == base &&
            memcmp(r->images[i].uuid, u, 16) == 0) {
            *out = i;
            if (!r->images[i].source)
                read_source(j, js, "source", &r->images[i]);
            return;
        }
    crash_image *im;
    if (jkeep(j, cp_new_image(j->p, &im, j->path)))
        return;
    *out = r->nimages - 1;
    read_source(j, js, "source", im);
    im->load_address = base;
    im->has_uuid = has_uuid;
    if (has_uuid)
        memcpy(im->uuid, u, 16);
    if (jn && json_is_string(jn) && json_string_length(jn) && json_string_length(jn) <= CRASH_MAX_LINE)
        jkeep(j, cp_set_str(j->p, &im->name, json_string_value(jn), json_string_length(jn)));
}

/* userFrames / kernelFrames of a stackshot thread: [[imageIndex, offset], ...]
 * (or objects with imageIndex/imageOffset) into threads[t]. */
static void stackshot_frames(jp *j, const json_t *arr, size_t t, const size_t *map, size_t nmap,
                             const char *what)
{
    crash_report *r = j->p->r;
    size_t plen = strlen(j->path);
    if (!arr || json_is_null(arr))
        return;
    if (!json_is_array(arr)) {
        jwarn(j, what, "%s, not an array: no frames", jsonbig_describe(arr));
        return;
    }
    for (size_t k = 0; k < json_array_size(arr) && !j->st; k++) {
        json_t *e = json_array_get(arr, k);
        snprintf(j->path + plen, sizeof j->path - plen, ".%s[%zu]", what, k);
        json_t *ji = NULL, *jo = NULL;
        if (json_is_array(e)) {
            ji = json_array_get(e, 0);
            jo = json_array_get(e, 1);
        } else if (json_is_object(e)) {
            ji = json_object_get(e, "imageIndex");
            jo = json_object_get(e, "imageOffset");
        }
        uint64_t idx, off, addr;
        if (!ji || !jo) {
            jwarn(j, NULL, "%s, not an [imageIndex, offset] pair: frame skipped", jsonbig_describe(e));
            continue;
        }
        if (!jsonbig_u64(ji, &idx) || !jsonbig_u64(jo, &off)) {
            jwarn(j, NULL, "imageIndex or offset is not an unsigned 64-bit integer: frame skipped");
            continue;
        }
        if (idx >= nmap) {
            jwarn(j, NULL, "imageIndex %" PRIu64 " is past binaryImages (%zu): frame skipped", idx,
                  nmap);
            continue;
        }
        const crash_image *im = &r->images[map[idx]];
        if (!u64_add(im->load_address, off, &addr)) {
            jwarn(j, NULL, "base + offset passes 2^64: frame skipped");
            continue;
        }
        crash_frame *f;
        if (jkeep(j, cp_new_frame(j->p, t, &f, j->path)))
            break;
        f->address = addr;
        f->image = (long)map[idx];
        /* an image of no UUID at 0 is Apple's "absolute": the offset is the address */
        f->has_load = im->has_uuid || im->load_address;
        f->load_address = im->load_address;
        if (im->name)
            jkeep(j, cp_set_str(j->p, &f->image_name, im->name, strlen(im->name)));
    }
    j->path[plen] = 0;
}

/* "key: value, key: value" of the members of o not in skip (NULL-ended). */
static void detail_of(jp *j, const json_t *o, const char *const *skip, char **dst)
{
    tbuf t;
    tinit(&t, CRASH_MAX_LINE);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        bool skipped = false;
        for (size_t i = 0; skip[i] && !skipped; i++)
            skipped = strcmp(key, skip[i]) == 0;
        if (skipped)
            continue;
        if (t.b.len)
            tputs(&t, ", ");
        tputs(&t, key);
        tputs(&t, ": ");
        tput_value(&t, v, 1, true);
    }
    for (size_t i = 0; i < t.b.len; i++) /* one line */
        if (t.b.data[i] == '\n' || t.b.data[i] == '\r')
            t.b.data[i] = ' ';
    ttake(j, &t, dst, j->path);
}

/* The name of a pid that processByPid / processes key by: its "pid" or the key. */
static long pid_of(jp *j, const json_t *o, const char *key)
{
    int64_t v;
    if (ji64(j, o, "pid", "the pid", &v) == JV_OK && v >= -1 && v <= INT32_MAX)
        return (long)v;
    uint64_t k;
    if (key && cp_dec_parse(key, key + strlen(key), INT32_MAX, &k))
        return (long)k;
    return -1;
}

static symd_status ips_stackshot(jp *j, const json_t *root)
{
    crash_report *r = j->p->r;
    json_t *bi = json_object_get(root, "binaryImages");
    size_t nmap = 0, *map = NULL;
    size_t pre0 = 0, pre1 = r->nimages;
    if (pre1 > 64) /* only the few images of a panic's backtrace are looked through */
        pre0 = pre1;
    if (bi && !json_is_array(bi)) {
        jset(j, "binaryImages");
        jwarn(j, NULL, "%s, not an array: no images", jsonbig_describe(bi));
    } else if (bi) {
        nmap = json_array_size(bi);
        if (nmap > CRASH_MAX_IMAGES - r->nimages)
            return jkeep(j, symd_fail(j->p->err, SYMD_E_TOO_LARGE,
                                      "binaryImages: more than %d images", CRASH_MAX_IMAGES));
        map = malloc((nmap ? nmap : 1) * sizeof *map);
        if (!map)
            return jkeep(j, cp_nomem(j->p));
        for (size_t i = 0; i < nmap && !j->st; i++) {
            jset(j, "binaryImages[%zu]", i);
            stackshot_image(j, json_array_get(bi, i), pre0, pre1, &map[i]);
        }
    }
    json_t *pb = json_object_get(root, "processByPid");
    if (pb && !json_is_object(pb) && !json_is_null(pb)) {
        jset(j, "processByPid");
        jwarn(j, NULL, "%s, not an object: no processes", jsonbig_describe(pb));
    }
    static const char *const proc_skip[] = {"threadById", "pid", "procname", NULL};
    const char *pkey;
    json_t *po;
    json_object_foreach(json_is_object(pb) ? pb : NULL, pkey, po) {
        if (j->st)
            break;
        jset(j, "processByPid.%.40s", pkey);
        if (!json_is_object(po)) {
            jwarn(j, NULL, "%s, not an object: process skipped", jsonbig_describe(po));
            continue;
        }
        crash_process *pr;
        if (jkeep(j, cp_new_process(j->p, &pr, j->path)))
            break;
        long pi = (long)r->nprocesses - 1;
        pr->pid = pid_of(j, po, pkey);
        jstr(j, po, "procname", &r->processes[pi].name);
        detail_of(j, po, proc_skip, &r->processes[pi].detail);
        json_t *tb = json_object_get(po, "threadById");
        if (tb && !json_is_object(tb) && !json_is_null(tb))
            jwarn(j, "threadById", "%s, not an object: no threads", jsonbig_describe(tb));
        size_t ppath = strlen(j->path);
        const char *tkey;
        json_t *to;
        json_object_foreach(json_is_object(tb) ? tb : NULL, tkey, to) {
            if (j->st)
                break;
            snprintf(j->path + ppath, sizeof j->path - ppath, ".threadById.%.24s", tkey);
            if (!json_is_object(to)) {
                jwarn(j, NULL, "%s, not an object: thread skipped", jsonbig_describe(to));
                continue;
            }
            crash_thread *th;
            if (jkeep(j, cp_new_thread(j->p, &th, j->path)))
                break;
            size_t t = r->nthreads - 1;
            th->process = pi;
            int64_t id;
            uint64_t k;
            if (ji64(j, to, "id", "the thread id", &id) == JV_OK && id >= 0 && id <= LONG_MAX)
                th->number = (long)id;
            else if (cp_dec_parse(tkey, tkey + strlen(tkey), LONG_MAX, &k))
                th->number = (long)k;
            jstr(j, to, "name", &r->threads[t].name);
            jstr(j, to, "dispatch_queue_label", &r->threads[t].queue);
            /* innermost first: the kernel part of the stack, then user space */
            stackshot_frames(j, json_object_get(to, "kernelFrames"), t, map, nmap, "kernelFrames");
            stackshot_frames(j, json_object_get(to, "userFrames"), t, map, nmap, "userFrames");
        }
    }
    free(map);
    /* The process the stackshot is about, when it says. */
    int64_t pid;
    j->path[0] = 0;
    if (!r->process && ji64(j, root, "pid", "the pid", &pid) == JV_OK)
        for (size_t i = 0; i < r->nprocesses && !j->st; i++)
            if (r->processes[i].pid == pid && r->processes[i].name) {
                jkeep(j, cp_set_str(j->p, &r->process, r->processes[i].name,
                                    strlen(r->processes[i].name)));
                break;
            }
    return j->st;
}

/* ---- 298 jetsam ----------------------------------------------------------------- */

static symd_status ips_jetsam(jp *j, const json_t *arr)
{
    crash_report *r = j->p->r;
    static const char *const skip[] = {"pid", "name", NULL};
    for (size_t i = 0; i < json_array_size(arr) && !j->st; i++) {
        json_t *o = json_array_get(arr, i);
        jset(j, "processes[%zu]", i);
        if (!json_is_object(o)) {
            jwarn(j, NULL, "%s, not an object: process skipped", jsonbig_describe(o));
            continue;
        }
        crash_process *pr;
        if (jkeep(j, cp_new_process(j->p, &pr, j->path)))
            break;
        size_t pi = r->nprocesses - 1;
        pr->pid = pid_of(j, o, NULL);
        jstr(j, o, "name", &r->processes[pi].name);
        detail_of(j, o, skip, &r->processes[pi].detail);
    }
    j->path[0] = 0;
    return j->st;
}

/* ---- the body ------------------------------------------------------------------ */

/* Members of a body without threads that the model holds elsewhere; every
 * other one becomes a "key: value" line of app_specific. */
static const char *const consumed[] = {
    "bug_type", "build", "product", "incident", "date", "panicString", "string",
    "binaryImages", "processByPid", "processes", "largestProcess", "reason", "exception",
    "pid", "procName", "modelCode", "cpuType", "captureTime", "procPath", "bundleInfo",
    "osVersion", "usedImages", "lastExceptionBacktrace", "asi", "termination",
    "ktriageinfo", "vmRegionInfo", "faultingThread",
    /* shown as header lines (ips_header_fields) */
    "crashReporterKey", "procRole", "parentProc", "parentPid", "coalitionName", "coalitionID",
    "responsibleProc", "responsiblePid", "userID", "procLaunch", "basebandVersion",
    "sleepWakeUUID", "uptime", "wakeTime", "bootSessionUUID", "sip", "extMods", "vmSummary",
    NULL,
};

bool crash_ips_reads_key(const char *key)
{
    static const char *const read_too[] = {"threads", "faultingThread", "sharedCache", NULL};
    for (size_t i = 0; consumed[i]; i++)
        if (strcmp(key, consumed[i]) == 0)
            return true;
    for (size_t i = 0; read_too[i]; i++)
        if (strcmp(key, read_too[i]) == 0)
            return true;
    return false;
}

static void other_fields(const json_t *root, tbuf *as)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v) {
        bool used = false;
        for (size_t i = 0; consumed[i] && !used; i++)
            used = strcmp(key, consumed[i]) == 0;
        if (used)
            continue;
        tputs(as, key);
        tputs(as, ": ");
        tput_value(as, v, 1, true);
        tputs(as, "\n");
    }
}

/* "a (b)" of two optional strings into *dst; NULL when both are. */
static void pair_string(jp *j, const char *a, const char *b, char **dst)
{
    if (!a && !b)
        return;
    size_t cap = (a ? strlen(a) : 0) + (b ? strlen(b) : 0) + 4;
    char *s = malloc(cap);
    if (!s) {
        jkeep(j, cp_nomem(j->p));
        return;
    }
    if (a && b)
        snprintf(s, cap, "%s (%s)", a, b);
    else
        snprintf(s, cap, "%s", a ? a : b);
    free(*dst);
    *dst = s;
}

static void identity(jp *j, const json_t *root, char **proc_path)
{
    crash_report *r = j->p->r;
    jstr(j, root, "procName", &r->process);
    jstr(j, root, "modelCode", &r->hardware_model);
    jstr(j, root, "incident", &r->incident_id);
    jstr(j, root, "cpuType", &r->code_type);
    jstr(j, root, "captureTime", &r->date);
    jstr(j, root, "procPath", proc_path);
    json_t *bi = json_object_get(root, "bundleInfo");
    if (json_is_object(bi)) {
        char *sv = NULL, *bv = NULL;
        jset(j, "bundleInfo");
        jstr(j, bi, "CFBundleIdentifier", &r->bundle_id);
        jstr(j, bi, "CFBundleShortVersionString", &sv);
        jstr(j, bi, "CFBundleVersion", &bv);
        pair_string(j, sv, bv, &r->app_version);
        free(sv);
        free(bv);
        j->path[0] = 0;
    }
    json_t *ov = json_object_get(root, "osVersion");
    if (json_is_object(ov)) {
        char *train = NULL, *build = NULL;
        jset(j, "osVersion");
        jstr(j, ov, "train", &train);
        jstr(j, ov, "build", &build);
        if (train)
            pair_string(j, train, build, &r->os_version);
        free(train);
        free(build);
        j->path[0] = 0;
    }
    /* Stackshots, panics and jetsam say it in other words. */
    jstr_if_unset(j, root, "build", &r->os_version);
    jstr_if_unset(j, root, "product", &r->hardware_model);
    jstr_if_unset(j, root, "date", &r->date);
    jstr_if_unset(j, root, "largestProcess", &r->process);
    json_t *rs = json_object_get(root, "reason");
    if (json_is_string(rs))
        jstr_if_unset(j, root, "reason", &r->termination);
}

/* What the body lacks, the header may say. */
static void from_header(jp *j, const json_t *hdr)
{
    crash_report *r = j->p->r;
    if (!json_is_object(hdr))
        return;
    jset(j, "header");
    jstr_if_unset(j, hdr, "bundleID", &r->bundle_id);
    jstr_if_unset(j, hdr, "app_version", &r->app_version);
    jstr_if_unset(j, hdr, "os_version", &r->os_version);
    jstr_if_unset(j, hdr, "incident_id", &r->incident_id);
    jstr_if_unset(j, hdr, "name", &r->process);
    jstr_if_unset(j, hdr, "app_name", &r->process);
    jstr_if_unset(j, hdr, "timestamp", &r->date);
    j->path[0] = 0;
}

/* sharedCache {base, size}: where the dyld shared cache was mapped. A bad
 * value is skipped with a warning (its images are then told by their paths). */
static void ips_shared_cache(jp *j, const json_t *sc)
{
    crash_report *r = j->p->r;
    if (!sc || json_is_null(sc))
        return;
    jset(j, "sharedCache");
    uint64_t base, size;
    if (!json_is_object(sc))
        jwarn(j, NULL, "%s, not an object: skipped", jsonbig_describe(sc));
    else if (ju64(j, sc, "base", "the shared cache", &base) == JV_OK &&
             ju64(j, sc, "size", "the shared cache", &size) == JV_OK && size > 0) {
        r->has_shared_cache = true;
        r->shared_cache_base = base;
        r->shared_cache_size = size;
    }
    j->path[0] = 0;
}

static symd_status ips_body(jp *j, const json_t *root, tbuf *as)
{
    crash_report *r = j->p->r;
    const char *key;
    json_t *v;
    uint64_t skipped;
    json_object_foreach((json_t *)root, key, v) {
        if (jsonbig_skipped(v, &skipped))
            jwarn(j, key, "a value of %" PRIu64 " bytes under a key symd does not read: "
                          "skipped unread", skipped);
    }
    char *proc_path = NULL;
    identity(j, root, &proc_path);
    ips_shared_cache(j, json_object_get(root, "sharedCache"));
    json_t *threads = json_object_get(root, "threads");
    size_t tbase = 0, nths = 0;
    ips_used_images(j, json_object_get(root, "usedImages"), proc_path);
    free(proc_path);
    if (j->st || ips_threads(j, threads, &tbase, &nths) ||
        ips_last_exception(j, json_object_get(root, "lastExceptionBacktrace")))
        return j->st;
    ips_asi(j, json_object_get(root, "asi"), as);
    if (ips_exception(j, root) || ips_termination(j, root))
        return j->st;
    ips_text_sections(j, root);
    ips_header_fields(j, root);

    /* The crashed thread: faultingThread, else the first "triggered" one. */
    uint64_t ft;
    jv vf = ju64(j, root, "faultingThread", "the crashed thread", &ft);
    if (vf == JV_OK && ft >= nths)
        jwarn(j, "faultingThread", "%" PRIu64 " is not an index into threads (%zu): skipped", ft,
              nths);
    else if (vf == JV_OK)
        r->crashed_thread = (long)(tbase + ft);
    for (size_t i = 0; i < nths && r->crashed_thread < 0; i++)
        if (r->threads[tbase + i].crashed)
            r->crashed_thread = (long)(tbase + i);
    if (r->crashed_thread >= 0) {
        size_t ct = (size_t)r->crashed_thread - tbase;
        r->threads[r->crashed_thread].crashed = true;
        if (ips_registers(j, json_object_get(json_array_get(threads, ct), "threadState"), ct))
            return j->st;
    }

    /* Panics: the panic string, its kernel backtrace and kexts. */
    json_t *ps = json_object_get(root, "panicString");
    const char *ps_key = "panicString";
    if (!ps) {
        ps = json_object_get(root, "string");
        ps_key = "string";
    }
    if (ps && json_is_string(ps)) {
        const char *s = json_string_value(ps);
        size_t n = json_string_length(ps);
        if (jkeep(j, cp_set_str(j->p, &r->panic_string, s, n)) ||
            jkeep(j, crash_parse_panic_text(j->p, s, n, 0)))
            return j->st;
    } else if (ps && !json_is_null(ps)) {
        jwarn(j, ps_key, "%s, not a string: skipped", jsonbig_describe(ps));
    }

    json_t *pb = json_object_get(root, "processByPid"), *bi = json_object_get(root, "binaryImages");
    if ((pb || bi) && ips_stackshot(j, root))
        return j->st;
    json_t *procs = json_object_get(root, "processes");
    if (procs && !json_is_array(procs) && !json_is_null(procs)) {
        jset(j, "processes");
        jwarn(j, NULL, "%s, not an array: no processes", jsonbig_describe(procs));
        j->path[0] = 0;
    } else if (json_is_array(procs) && ips_jetsam(j, procs)) {
        return j->st;
    }
    if (!threads) {
        other_fields(root, as);
        if (!pb && !bi && !procs && !ps)
            jwarn(j, NULL, "no threads, processByPid, processes or panic string: only the "
                           "report's fields are read");
    }
    return j->st;
}

/* Contract in crash_int.h. root NULL: the body did not parse, and only the
 * header is read. */
symd_status crash_parse_ips_body(cp *p, json_t *root, json_t *hdr)
{
    crash_report *r = p->r;
    jp j = {.p = p};
    tbuf as;
    tinit(&as, TEXT_MAX);
    if (root && !json_is_object(root)) {
        jwarn(&j, NULL, "%s, not an object: only the header is read", jsonbig_describe(root));
        root = NULL;
    }
    if (root)
        ips_body(&j, root, &as);
    if (!j.st)
        from_header(&j, hdr);
    if (!j.st && as.b.len) {
        /* lines, no newline after the last */
        while (as.b.len && as.b.data[as.b.len - 1] == '\n')
            as.b.data[--as.b.len] = 0;
        ttake(&j, &as, &r->app_specific, "asi");
    } else {
        dynbuf_free(&as.b);
    }
    return j.st;
}

/* ---- a body that is no JSON ------------------------------------------------------ */

/* The string value of the first top-level-looking "key" : "..." in
 * body[0..n), decoded; NULL when there is none. */
static json_t *salvage_string(const char *body, size_t n, const char *key)
{
    char pat[40];
    int pl = snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *e = body + n;
    for (const char *s = body; s < e;) {
        const char *hit = memmem(s, (size_t)(e - s), pat, (size_t)pl);
        if (!hit)
            return NULL;
        s = hit + pl;
        if (hit > body && hit[-1] == '\\')
            continue; /* inside another string */
        const char *q = s;
        while (q < e && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
            q++;
        if (q >= e || *q != ':')
            continue;
        for (q++; q < e && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'); q++)
            ;
        if (q >= e || *q != '"')
            continue;
        const char *v = q++;
        while (q < e && *q != '"')
            q += *q == '\\' ? 2 : 1;
        if (q >= e)
            return NULL;
        json_error_t je;
        json_t *str = json_loadb(v, (size_t)(q + 1 - v), JSON_DECODE_ANY, &je);
        if (json_is_string(str))
            return str;
        json_decref(str);
    }
    return NULL;
}

/* Contract in crash_int.h; the panic string is "panicString" or "string". */
symd_status crash_parse_ips_broken(cp *p, const char *body, size_t n, json_t *hdr)
{
    crash_report *r = p->r;
    static const struct {
        const char *key;
        size_t off;
    } fields[] = {
        {"build", offsetof(crash_report, os_version)},
        {"product", offsetof(crash_report, hardware_model)},
        {"date", offsetof(crash_report, date)},
        {"procName", offsetof(crash_report, process)},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char **dst = (char **)((char *)r + fields[i].off);
        json_t *s = *dst ? NULL : salvage_string(body, n, fields[i].key);
        symd_status st = s && json_string_length(s) <= CRASH_MAX_LINE
                             ? cp_set_str(p, dst, json_string_value(s), json_string_length(s))
                             : SYMD_OK;
        json_decref(s);
        if (st)
            return st;
    }
    json_t *ps = salvage_string(body, n, "panicString");
    if (!ps)
        ps = salvage_string(body, n, "string");
    if (ps) {
        symd_status st = cp_set_str(p, &r->panic_string, json_string_value(ps),
                                    json_string_length(ps));
        if (!st)
            st = crash_parse_panic_text(p, json_string_value(ps), json_string_length(ps), 0);
        json_decref(ps);
        if (st)
            return st;
    }
    return crash_parse_ips_body(p, NULL, hdr);
}

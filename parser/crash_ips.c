/* .ips JSON bodies (bug_type 309 and the others): the parsed document in,
 * the crash model out. Messages say where by JSON path
 * ("threads[3].frames[7]: ..."). */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../util/hex.h"
#include "../util/jsonbig.h"
#include "../util/util.h"
#include "crash_int.h"


typedef struct {
    cp *p;
    char path[96]; /* "threads[3].frames[7]", for messages */
} jp;

static symd_status jfail(jp *j, symd_status kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static symd_status jfail(jp *j, symd_status kind, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return symd_fail(j->p->err, kind, "%s%s%s", j->path, j->path[0] ? ": " : "", msg);
}

/* obj[key] as a string into *dst when present; absent or null is fine,
 * another type or a string over CRASH_MAX_LINE is not. */
static symd_status jstr(jp *j, json_t *obj, const char *key, char **dst)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return SYMD_OK;
    if (!json_is_string(v))
        return jfail(j, SYMD_E_CORRUPT, "%s must be a string", key);
    size_t n = json_string_length(v);
    if (n > CRASH_MAX_LINE)
        return jfail(j, SYMD_E_TOO_LARGE, "%s is longer than %d bytes", key, CRASH_MAX_LINE);
    return cp_set_str(j->p, dst, json_string_value(v), n);
}

/* obj[key] as a non-negative integer; *has false when absent or null. */
static symd_status juint(jp *j, json_t *obj, const char *key, bool *has, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    *has = false;
    if (!v || json_is_null(v))
        return SYMD_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return jfail(j, SYMD_E_CORRUPT, "%s must be a non-negative integer", key);
    *has = true;
    *out = (uint64_t)json_integer_value(v);
    return SYMD_OK;
}

static symd_status ips_images(jp *j, json_t *arr, const char *proc_path)
{
    if (!arr)
        return SYMD_OK;
    if (!json_is_array(arr))
        return jfail(j, SYMD_E_CORRUPT, "usedImages must be an array");
    size_t n = json_array_size(arr);
    if (n > CRASH_MAX_IMAGES)
        return jfail(j, SYMD_E_TOO_LARGE, "more than %d usedImages", CRASH_MAX_IMAGES);
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        crash_image *im;
        snprintf(j->path, sizeof j->path, "usedImages[%zu]", i);
        if (cp_new_image(j->p, &im, j->path))
            return j->p->err->kind;
        if (!json_is_object(o))
            return jfail(j, SYMD_E_CORRUPT, "must be an object");
        bool has_base, has_size;
        uint64_t base = 0, size = 0;
        if (juint(j, o, "base", &has_base, &base) || juint(j, o, "size", &has_size, &size) ||
            jstr(j, o, "name", &im->name) || jstr(j, o, "path", &im->path) ||
            jstr(j, o, "arch", &im->arch) || jstr(j, o, "CFBundleIdentifier", &im->bundle_id) ||
            jstr(j, o, "CFBundleShortVersionString", &im->version))
            return j->p->err->kind;
        im->load_address = base;
        if (has_size && size > 0) {
            if (!u64_add(base, size - 1, &im->end_address))
                return jfail(j, SYMD_E_CORRUPT, "base + size passes 2^64");
            im->has_end = true;
        }
        char *u = NULL;
        if (jstr(j, o, "uuid", &u))
            return j->p->err->kind;
        if (u) {
            bool ok = uuid_parse(u, im->uuid);
            free(u);
            if (!ok)
                return jfail(j, SYMD_E_CORRUPT, "uuid is not a UUID");
            im->has_uuid = true;
        }
        if (im->path && proc_path && strcmp(im->path, proc_path) == 0)
            im->is_app = true;
    }
    j->path[0] = 0;
    return SYMD_OK;
}

static symd_status ips_frame(jp *j, json_t *o, crash_frame *f)
{
    crash_report *r = j->p->r;
    f->image = -1;
    if (!json_is_object(o))
        return jfail(j, SYMD_E_CORRUPT, "must be an object");
    bool has_idx, has_off, has;
    uint64_t idx = 0, off = 0, v;
    json_t *ji = json_object_get(o, "imageIndex"), *jo = json_object_get(o, "imageOffset");
    if ((ji && json_is_integer(ji) && json_integer_value(ji) < 0) ||
        (jo && json_is_integer(jo) && json_integer_value(jo) < 0))
        return jfail(j, SYMD_E_CORRUPT, "negative %s", ji && json_is_integer(ji) &&
                     json_integer_value(ji) < 0 ? "imageIndex" : "imageOffset");
    if (juint(j, o, "imageIndex", &has_idx, &idx) || juint(j, o, "imageOffset", &has_off, &off))
        return j->p->err->kind;
    if (!has_idx || !has_off)
        return jfail(j, SYMD_E_CORRUPT, "%s is required", has_idx ? "imageOffset" : "imageIndex");
    if (idx >= r->nimages)
        return jfail(j, SYMD_E_CORRUPT, "imageIndex %" PRIu64 " is past usedImages (%zu)", idx,
                     r->nimages);
    const crash_image *im = &r->images[idx];
    f->image = (long)idx;
    f->has_load = true;
    f->load_address = im->load_address;
    if (!u64_add(im->load_address, off, &f->address))
        return jfail(j, SYMD_E_CORRUPT, "base + imageOffset passes 2^64");
    if (im->name && cp_set_str(j->p, &f->image_name, im->name, strlen(im->name)))
        return j->p->err->kind;
    if (jstr(j, o, "symbol", &f->symbol) || jstr(j, o, "sourceFile", &f->file) ||
        juint(j, o, "symbolLocation", &f->has_symbol_offset, &f->symbol_offset) ||
        juint(j, o, "sourceLine", &has, &v))
        return j->p->err->kind;
    if (has) {
        if (v > UINT32_MAX)
            return jfail(j, SYMD_E_CORRUPT, "sourceLine out of range");
        f->line = (uint32_t)v;
    }
    return SYMD_OK;
}

static symd_status ips_threads(jp *j, json_t *arr)
{
    crash_report *r = j->p->r;
    if (!json_is_array(arr))
        return jfail(j, SYMD_E_CORRUPT, "threads must be an array");
    size_t n = json_array_size(arr);
    if (n > CRASH_MAX_THREADS)
        return jfail(j, SYMD_E_TOO_LARGE, "more than %d threads", CRASH_MAX_THREADS);
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        crash_thread *th;
        snprintf(j->path, sizeof j->path, "threads[%zu]", i);
        if (cp_new_thread(j->p, &th, j->path))
            return j->p->err->kind;
        th->number = (long)i;
        if (!json_is_object(o))
            return jfail(j, SYMD_E_CORRUPT, "must be an object");
        if (jstr(j, o, "name", &th->name) || jstr(j, o, "queue", &th->queue))
            return j->p->err->kind;
        th->crashed = json_is_true(json_object_get(o, "triggered"));
        json_t *fr = json_object_get(o, "frames");
        if (!fr || json_is_null(fr))
            continue;
        if (!json_is_array(fr))
            return jfail(j, SYMD_E_CORRUPT, "frames must be an array");
        size_t nf = json_array_size(fr);
        if (nf > CRASH_MAX_FRAMES - r->total_frames)
            return jfail(j, SYMD_E_TOO_LARGE, "more than %d frames", CRASH_MAX_FRAMES);
        for (size_t k = 0; k < nf; k++) {
            crash_frame *f;
            snprintf(j->path, sizeof j->path, "threads[%zu].frames[%zu]", i, k);
            if (cp_new_frame(j->p, i, &f, j->path) || ips_frame(j, json_array_get(fr, k), f))
                return j->p->err->kind;
        }
    }
    j->path[0] = 0;
    return SYMD_OK;
}

/* threadState of the faulting thread: x[0..28] as "x0".., then the named
 * registers Apple writes (ARM and x86), then any other {"value": n}. */
static symd_status ips_registers(jp *j, json_t *ts, size_t ti)
{
    static const char *const named[] = {
        "fp", "lr", "sp", "pc", "cpsr", "far", "esr",
        "rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "rsp", "r8", "r9", "r10",
        "r11", "r12", "r13", "r14", "r15", "rip", "rflags", "cr2",
    };
    if (!ts || json_is_null(ts))
        return SYMD_OK;
    snprintf(j->path, sizeof j->path, "threads[%zu].threadState", ti);
    if (!json_is_object(ts))
        return jfail(j, SYMD_E_CORRUPT, "must be an object");
    json_t *fl = json_object_get(ts, "flavor");
    bool w32 = json_is_string(fl) && !strstr(json_string_value(fl), "64") &&
               !strstr(json_string_value(fl), "x86_THREAD_STATE");
    char name[32], val[24];
    json_t *x = json_object_get(ts, "x");
    if (x && !json_is_array(x))
        return jfail(j, SYMD_E_CORRUPT, "x must be an array");
    for (size_t i = 0; x && i < json_array_size(x); i++) {
        json_t *v = json_object_get(json_array_get(x, i), "value");
        if (!json_is_integer(v))
            return jfail(j, SYMD_E_CORRUPT, "x[%zu].value must be an integer", i);
        snprintf(name, sizeof name, "x%zu", i);
        int vl = snprintf(val, sizeof val, w32 ? "0x%08" PRIx64 : "0x%016" PRIx64,
                          (uint64_t)json_integer_value(v));
        if (cp_add_register(j->p, name, strlen(name), val, (size_t)vl, j->path))
            return j->p->err->kind;
    }
    const char *key;
    json_t *o;
    for (int pass = 0; pass < 2; pass++) {
        size_t nn = pass ? 1 : sizeof named / sizeof named[0];
        for (size_t i = 0; i < nn; i++) {
            json_object_foreach(ts, key, o) {
                bool known = false;
                for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
                    known |= strcmp(key, named[k]) == 0;
                if (pass ? known || strcmp(key, "x") == 0 : strcmp(key, named[i]) != 0)
                    continue;
                json_t *v = json_object_get(o, "value");
                if (!json_is_object(o) || !v)
                    continue;
                if (!json_is_integer(v))
                    return jfail(j, SYMD_E_CORRUPT, "%s.value must be an integer", key);
                if (strlen(key) > 16)
                    continue;
                int vl = snprintf(val, sizeof val, w32 ? "0x%08" PRIx64 : "0x%016" PRIx64,
                                  (uint64_t)json_integer_value(v));
                if (cp_add_register(j->p, key, strlen(key), val, (size_t)vl, j->path))
                    return j->p->err->kind;
            }
        }
    }
    j->path[0] = 0;
    return SYMD_OK;
}

static symd_status ips_exception(jp *j, json_t *root)
{
    crash_report *r = j->p->r;
    json_t *ex = json_object_get(root, "exception");
    if (ex && json_is_object(ex)) {
        snprintf(j->path, sizeof j->path, "exception");
        if (jstr(j, ex, "type", &r->exception_type) || jstr(j, ex, "signal", &r->exception_signal) ||
            jstr(j, ex, "codes", &r->exception_codes))
            return j->p->err->kind;
        json_t *raw = json_object_get(ex, "rawCodes");
        if (!r->exception_codes && json_is_array(raw) && json_array_size(raw) > 0 &&
            json_array_size(raw) <= 16) {
            char buf[16 * 21];
            size_t k = 0;
            for (size_t i = 0; i < json_array_size(raw); i++) {
                json_t *c = json_array_get(raw, i);
                if (!json_is_integer(c))
                    return jfail(j, SYMD_E_CORRUPT, "rawCodes[%zu] must be an integer", i);
                k += (size_t)snprintf(buf + k, sizeof buf - k, "%s0x%016" PRIx64, i ? ", " : "",
                                      (uint64_t)json_integer_value(c));
            }
            if (cp_set_str(j->p, &r->exception_codes, buf, k))
                return j->p->err->kind;
        }
    }
    json_t *te = json_object_get(root, "termination");
    if (te && json_is_object(te)) {
        snprintf(j->path, sizeof j->path, "termination");
        char *ns = NULL, *ind = NULL;
        bool has_code;
        uint64_t code = 0;
        symd_status st = SYMD_OK;
        if (jstr(j, te, "namespace", &ns) || jstr(j, te, "indicator", &ind) ||
            juint(j, te, "code", &has_code, &code))
            st = j->p->err->kind;
        json_t *reasons = json_object_get(te, "reasons");
        json_t *r0 = json_is_array(reasons) ? json_array_get(reasons, 0) : NULL;
        const char *rs = json_is_string(r0) ? json_string_value(r0) : NULL;
        if (!st && (ns || has_code || ind || rs)) {
            size_t cap = (ns ? strlen(ns) : 0) + (ind ? strlen(ind) : 0) +
                         (rs ? strlen(rs) : 0) + 64;
            char *b = malloc(cap);
            if (!b) {
                st = cp_nomem(j->p);
            } else {
                size_t k = (size_t)snprintf(b, cap, "Namespace %s", ns ? ns : "?");
                if (has_code)
                    k += (size_t)snprintf(b + k, cap - k, ", Code 0x%" PRIx64, code);
                if (ind)
                    k += (size_t)snprintf(b + k, cap - k, " %s", ind);
                if (rs)
                    k += (size_t)snprintf(b + k, cap - k, ", %s", rs);
                /* one line: the reason may hold newlines */
                for (size_t i = 0; i < k; i++)
                    if (b[i] == '\n' || b[i] == '\r')
                        b[i] = ' ';
                free(r->termination);
                r->termination = b;
            }
        }
        free(ns);
        free(ind);
        if (st)
            return st;
    }
    j->path[0] = 0;
    return SYMD_OK;
}

symd_status crash_parse_ips_body(cp *p, json_t *root, json_t *hdr)
{
    crash_report *r = p->r;
    jp j = {p, ""};
    if (!json_is_object(root))
        return symd_fail(p->err, SYMD_E_CORRUPT, "line 2: the .ips body must be a JSON object");
    json_t *threads = json_object_get(root, "threads");
    if (!threads)
        return symd_fail(p->err, SYMD_E_NOT_CRASH_REPORT,
                         "an .ips of bug_type %d without threads is not a crash report",
                         r->bug_type);
    char *proc_path = NULL;
    symd_status st = SYMD_OK;
    if (jstr(&j, root, "procName", &r->process) || jstr(&j, root, "modelCode", &r->hardware_model) ||
        jstr(&j, root, "incident", &r->incident_id) || jstr(&j, root, "cpuType", &r->code_type) ||
        jstr(&j, root, "captureTime", &r->date) || jstr(&j, root, "procPath", &proc_path))
        return p->err->kind;
    json_t *bi = json_object_get(root, "bundleInfo");
    if (json_is_object(bi)) {
        char *sv = NULL, *bv = NULL;
        snprintf(j.path, sizeof j.path, "bundleInfo");
        if (jstr(&j, bi, "CFBundleIdentifier", &r->bundle_id) ||
            jstr(&j, bi, "CFBundleShortVersionString", &sv) || jstr(&j, bi, "CFBundleVersion", &bv))
            st = p->err->kind;
        if (!st && (sv || bv)) {
            size_t cap = (sv ? strlen(sv) : 0) + (bv ? strlen(bv) : 0) + 4;
            char *b = malloc(cap);
            if (!b)
                st = cp_nomem(p);
            else if (sv && bv)
                snprintf(b, cap, "%s (%s)", sv, bv);
            else
                snprintf(b, cap, "%s", sv ? sv : bv);
            r->app_version = b;
        }
        free(sv);
        free(bv);
        j.path[0] = 0;
    }
    json_t *ov = json_object_get(root, "osVersion");
    if (!st && json_is_object(ov)) {
        char *train = NULL, *build = NULL;
        snprintf(j.path, sizeof j.path, "osVersion");
        if (jstr(&j, ov, "train", &train) || jstr(&j, ov, "build", &build))
            st = p->err->kind;
        if (!st && train) {
            size_t cap = strlen(train) + (build ? strlen(build) : 0) + 4;
            char *b = malloc(cap);
            if (!b)
                st = cp_nomem(p);
            else if (build)
                snprintf(b, cap, "%s (%s)", train, build);
            else
                snprintf(b, cap, "%s", train);
            r->os_version = b;
        }
        free(train);
        free(build);
        j.path[0] = 0;
    }
    /* What the body lacks, the header may say. */
    if (!st && ((!r->bundle_id && jstr(&j, hdr, "bundleID", &r->bundle_id)) ||
                (!r->app_version && jstr(&j, hdr, "app_version", &r->app_version)) ||
                (!r->os_version && jstr(&j, hdr, "os_version", &r->os_version)) ||
                (!r->incident_id && jstr(&j, hdr, "incident_id", &r->incident_id)) ||
                (!r->process && jstr(&j, hdr, "name", &r->process))))
        st = p->err->kind;
    if (!st)
        st = ips_images(&j, json_object_get(root, "usedImages"), proc_path);
    free(proc_path);
    if (!st)
        st = ips_threads(&j, threads);
    if (!st)
        st = ips_exception(&j, root);
    if (st)
        return st;
    r->crashed_thread = -1;
    json_t *ft = json_object_get(root, "faultingThread");
    if (ft && !json_is_null(ft)) {
        if (!json_is_integer(ft) || json_integer_value(ft) < 0 ||
            (uint64_t)json_integer_value(ft) >= r->nthreads)
            return symd_fail(p->err, SYMD_E_CORRUPT,
                             "faultingThread is not an index into threads (%zu)", r->nthreads);
        r->crashed_thread = (long)json_integer_value(ft);
        r->threads[r->crashed_thread].crashed = true;
    }
    for (size_t i = 0; i < r->nthreads && r->crashed_thread < 0; i++)
        if (r->threads[i].crashed)
            r->crashed_thread = (long)i;
    if (r->crashed_thread >= 0)
        return ips_registers(&j, json_object_get(json_array_get(threads, (size_t)r->crashed_thread),
                                                 "threadState"),
                             (size_t)r->crashed_thread);
    return SYMD_OK;
}


/* The /v1/symbolicate request: JSON text in, a checked backtrace model out. */
#include "backtrace.h"

#include <stdlib.h>
#include <string.h>

#include "../util/hex.h"

const char *bt_adjust_name(bt_adjust a)
{
    return a == BT_ADJUST_NONE ? "none" : a == BT_ADJUST_CALLER ? "caller" : "auto";
}

static bool parse_adjust(json_t *v, bt_adjust *out)
{
    const char *s = json_string_value(v);
    if (!s)
        return false;
    if (strcmp(s, "auto") == 0) *out = BT_ADJUST_AUTO;
    else if (strcmp(s, "none") == 0) *out = BT_ADJUST_NONE;
    else if (strcmp(s, "caller") == 0) *out = BT_ADJUST_CALLER;
    else return false;
    return true;
}

/* An address: "0x…" hex string, or a non-negative JSON integer. */
static bool parse_addr(json_t *v, uint64_t *out)
{
    if (json_is_string(v))
        return hex_parse_u64(json_string_value(v), json_string_length(v), out);
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    return false;
}

static symd_status parse_image(json_t *o, size_t i, bt_image *im, symd_err *err)
{
    memset(im, 0, sizeof *im);
    if (!json_is_object(o))
        return symd_fail(err, SYMD_E_INVALID, "images[%zu] is not an object", i);
    const char *uuid = json_string_value(json_object_get(o, "uuid"));
    if (!uuid || !uuid_parse(uuid, im->uuid))
        return symd_fail(err, SYMD_E_INVALID,
                         "images[%zu].uuid must be a UUID string", i);
    json_t *v;
    if ((v = json_object_get(o, "arch")) && !json_is_null(v)) {
        const char *a = json_string_value(v);
        if (!a || !*a || strlen(a) >= sizeof im->arch)
            return symd_fail(err, SYMD_E_INVALID,
                             "images[%zu].arch must be an architecture name", i);
        strcpy(im->arch, a);
    }
    if ((v = json_object_get(o, "name")) && !json_is_null(v)) {
        const char *a = json_string_value(v);
        if (!a)
            return symd_fail(err, SYMD_E_INVALID, "images[%zu].name must be a string", i);
        snprintf(im->name, sizeof im->name, "%s", a);
    }
    if ((v = json_object_get(o, "load_address")) && !json_is_null(v)) {
        if (!parse_addr(v, &im->load_address))
            return symd_fail(err, SYMD_E_INVALID,
                             "images[%zu].load_address must be a hex string or integer", i);
        im->has_load = true;
    }
    if ((v = json_object_get(o, "slide")) && !json_is_null(v)) {
        if (!parse_addr(v, &im->slide))
            return symd_fail(err, SYMD_E_INVALID,
                             "images[%zu].slide must be a hex string or integer", i);
        im->has_slide = true;
    }
    if ((v = json_object_get(o, "size")) && !json_is_null(v)) {
        if (!parse_addr(v, &im->size))
            return symd_fail(err, SYMD_E_INVALID,
                             "images[%zu].size must be a hex string or integer", i);
        im->has_size = true;
    }
    if (!im->has_load && !im->has_slide)
        return symd_fail(err, SYMD_E_INVALID,
                         "images[%zu] needs load_address or slide", i);
    return SYMD_OK;
}

/* Image indexes ordered by UUID (then index), so frames that name their
 * image by UUID cost a binary search, not a scan of every image. */
static int cmp_by_uuid(const void *a, const void *b, void *ctx)
{
    const bt_request *req = ctx;
    long x = *(const long *)a, y = *(const long *)b;
    int c = memcmp(req->images[x].uuid, req->images[y].uuid, 16);
    return c ? c : (x > y) - (x < y);
}

static long find_image(const bt_request *req, const uint8_t u[16])
{
    size_t lo = 0, hi = req->nimages;
    while (lo < hi) { /* first entry with uuid >= u */
        size_t mid = lo + (hi - lo) / 2;
        if (memcmp(req->images[req->by_uuid[mid]].uuid, u, 16) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < req->nimages && memcmp(req->images[req->by_uuid[lo]].uuid, u, 16) == 0)
        return req->by_uuid[lo];
    return -1;
}

static symd_status parse_frame(json_t *f, size_t t, size_t i, const bt_request *req,
                               bt_frame *out, symd_err *err)
{
    out->image = -1;
    out->adjust = req->adjust;
    if (!json_is_object(f)) { /* a bare address is a frame too */
        if (!parse_addr(f, &out->address))
            return symd_fail(err, SYMD_E_INVALID,
                             "threads[%zu].frames[%zu] must be an object or address", t, i);
        return SYMD_OK;
    }
    if (!parse_addr(json_object_get(f, "address"), &out->address))
        return symd_fail(err, SYMD_E_INVALID,
                         "threads[%zu].frames[%zu].address must be a hex string or "
                         "integer", t, i);
    json_t *v;
    if ((v = json_object_get(f, "adjust")) && !parse_adjust(v, &out->adjust))
        return symd_fail(err, SYMD_E_INVALID,
                         "threads[%zu].frames[%zu].adjust must be auto, none or caller",
                         t, i);
    if ((v = json_object_get(f, "image")) && !json_is_null(v)) {
        if (json_is_integer(v)) {
            json_int_t k = json_integer_value(v);
            if (k < 0 || (size_t)k >= req->nimages)
                return symd_fail(err, SYMD_E_INVALID,
                                 "threads[%zu].frames[%zu].image %lld is not an index "
                                 "into images", t, i, (long long)k);
            out->image = (long)k;
        } else if (json_is_string(v)) {
            uint8_t u[16];
            if (!uuid_parse(json_string_value(v), u))
                return symd_fail(err, SYMD_E_INVALID,
                                 "threads[%zu].frames[%zu].image is not a UUID", t, i);
            out->image = find_image(req, u);
            if (out->image < 0)
                return symd_fail(err, SYMD_E_INVALID,
                                 "threads[%zu].frames[%zu].image names a UUID that "
                                 "is not in images", t, i);
        } else {
            return symd_fail(err, SYMD_E_INVALID,
                             "threads[%zu].frames[%zu].image must be an index or UUID",
                             t, i);
        }
    }
    return SYMD_OK;
}

static symd_status parse_doc(bt_request *req, symd_err *err)
{
    json_t *root = req->root, *v;
    if (!json_is_object(root))
        return symd_fail(err, SYMD_E_INVALID, "request body must be a JSON object");
    req->adjust = BT_ADJUST_AUTO;
    if ((v = json_object_get(root, "adjust")) && !parse_adjust(v, &req->adjust))
        return symd_fail(err, SYMD_E_INVALID, "adjust must be auto, none or caller");

    json_t *images = json_object_get(root, "images");
    if (images && !json_is_array(images))
        return symd_fail(err, SYMD_E_INVALID, "images must be an array");
    size_t ni = images ? json_array_size(images) : 0;
    if (ni > BT_MAX_IMAGES)
        return symd_fail(err, SYMD_E_TOO_LARGE, "more than %d images", BT_MAX_IMAGES);
    if (ni && !(req->images = calloc(ni, sizeof *req->images)))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    for (size_t i = 0; i < ni; i++) {
        symd_status st = parse_image(json_array_get(images, i), i, &req->images[i], err);
        if (st != SYMD_OK)
            return st;
        req->nimages++;
    }
    if (ni) {
        if (!(req->by_uuid = malloc(ni * sizeof *req->by_uuid)))
            return symd_fail(err, SYMD_E_NOMEM, "out of memory");
        for (size_t i = 0; i < ni; i++)
            req->by_uuid[i] = (long)i;
        qsort_r(req->by_uuid, ni, sizeof *req->by_uuid, cmp_by_uuid, req);
    }

    json_t *threads = json_object_get(root, "threads");
    if (!json_is_array(threads))
        return symd_fail(err, SYMD_E_INVALID, "threads must be an array");
    size_t nt = json_array_size(threads), total = 0;
    if (nt > BT_MAX_THREADS)
        return symd_fail(err, SYMD_E_TOO_LARGE, "more than %d threads", BT_MAX_THREADS);
    if (nt && !(req->threads = calloc(nt, sizeof *req->threads)))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    for (size_t t = 0; t < nt; t++) {
        json_t *th = json_array_get(threads, t);
        bt_thread *out = &req->threads[t];
        req->nthreads++;
        if (!json_is_object(th))
            return symd_fail(err, SYMD_E_INVALID, "threads[%zu] is not an object", t);
        out->id = json_object_get(th, "id");
        if (out->id && !json_is_integer(out->id) && !json_is_string(out->id) &&
            !json_is_null(out->id))
            return symd_fail(err, SYMD_E_INVALID,
                             "threads[%zu].id must be an integer or string", t);
        v = json_object_get(th, "crashed");
        if (v && !json_is_boolean(v))
            return symd_fail(err, SYMD_E_INVALID, "threads[%zu].crashed must be a boolean",
                             t);
        out->crashed = json_is_true(v);
        v = json_object_get(th, "name");
        if (v && !json_is_null(v) && !json_is_string(v))
            return symd_fail(err, SYMD_E_INVALID, "threads[%zu].name must be a string", t);
        out->name = json_string_value(v);
        json_t *frames = json_object_get(th, "frames");
        if (!json_is_array(frames))
            return symd_fail(err, SYMD_E_INVALID, "threads[%zu].frames must be an array",
                             t);
        size_t nf = json_array_size(frames);
        total += nf;
        if (total > BT_MAX_FRAMES)
            return symd_fail(err, SYMD_E_TOO_LARGE, "more than %d frames in one request",
                             BT_MAX_FRAMES);
        if (nf && !(out->frames = calloc(nf, sizeof *out->frames)))
            return symd_fail(err, SYMD_E_NOMEM, "out of memory");
        for (size_t i = 0; i < nf; i++) {
            symd_status st =
                parse_frame(json_array_get(frames, i), t, i, req, &out->frames[i], err);
            if (st != SYMD_OK)
                return st;
            out->nframes++;
        }
    }
    return SYMD_OK;
}

symd_status bt_parse(const char *json, size_t len, bt_request *req, symd_err *err)
{
    memset(req, 0, sizeof *req);
    json_error_t jerr;
    req->root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!req->root)
        return symd_fail(err, SYMD_E_INVALID, "malformed JSON at line %d column %d: %s",
                         jerr.line, jerr.column, jerr.text);
    symd_status st = parse_doc(req, err);
    if (st != SYMD_OK)
        bt_free(req);
    return st;
}

void bt_free(bt_request *req)
{
    for (size_t t = 0; t < req->nthreads; t++)
        free(req->threads[t].frames);
    free(req->threads);
    free(req->images);
    free(req->by_uuid);
    json_decref(req->root);
    memset(req, 0, sizeof *req);
}

/* Crash reports symbolicated through the /v1/symbolicate core, and their
 * /v1/crashes JSON. The report becomes a backtrace request; the answer is
 * read back into per-frame levels (strings point into the answer, which
 * the symbolication owns). */
#include "crashsym.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parser/backtrace.h"
#include "../store/store.h"
#include "../util/hex.h"
#include "symbolicate.h"

#define MAX_ANSWER ((size_t)256 << 20)

typedef struct {
    json_t *answer;     /* /v1/symbolicate's answer, frames annotated */
    json_t **level_obj; /* per level (flat): its frame object in the answer */
    crash_level *levels;
    long *bt_image;     /* report image → request image, -1 when not sent */
} arena_t;

void crash_symbolication_free(crash_symbolication *s)
{
    arena_t *a = s->arena;
    if (a) {
        json_decref(a->answer);
        free(a->level_obj);
        free(a->levels);
        free(a->bt_image);
        free(a);
    }
    free(s->frames);
    free(s->image_found);
    free(s->image_debug_info);
    free(s->signature);
    memset(s, 0, sizeof *s);
}

static const char *jstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* The report as a backtrace request: its images with UUIDs, its threads'
 * frames with their images. */
static symd_status to_request(const crash_report *r, arena_t *a, bt_request *req,
                              symd_err *err)
{
    memset(req, 0, sizeof *req);
    req->adjust = BT_ADJUST_AUTO;
    a->bt_image = malloc((r->nimages ? r->nimages : 1) * sizeof *a->bt_image);
    req->images = calloc(r->nimages ? r->nimages : 1, sizeof *req->images);
    req->threads = calloc(r->nthreads ? r->nthreads : 1, sizeof *req->threads);
    if (!a->bt_image || !req->images || !req->threads)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    for (size_t i = 0; i < r->nimages; i++) {
        const crash_image *im = &r->images[i];
        a->bt_image[i] = -1;
        if (!im->has_uuid)
            continue;
        bt_image *b = &req->images[req->nimages];
        memcpy(b->uuid, im->uuid, 16);
        if (im->arch)
            snprintf(b->arch, sizeof b->arch, "%s", im->arch);
        if (im->name)
            snprintf(b->name, sizeof b->name, "%s", im->name);
        b->has_load = true;
        b->load_address = im->load_address;
        if (im->has_end && im->end_address >= im->load_address) {
            b->has_size = true;
            b->size = im->end_address - im->load_address + 1;
        }
        a->bt_image[i] = (long)req->nimages++;
    }
    for (size_t t = 0; t < r->nthreads; t++) {
        const crash_thread *ct = &r->threads[t];
        bt_thread *bt = &req->threads[req->nthreads++];
        bt->crashed = ct->crashed;
        bt->frames = calloc(ct->nframes ? ct->nframes : 1, sizeof *bt->frames);
        if (!bt->frames)
            return symd_fail(err, SYMD_E_NOMEM, "out of memory");
        bt->nframes = bt->cap = ct->nframes;
        for (size_t f = 0; f < ct->nframes; f++) {
            const crash_frame *cf = &ct->frames[f];
            bt->frames[f].address = cf->address;
            bt->frames[f].adjust = BT_ADJUST_AUTO;
            bt->frames[f].image = cf->image >= 0 && (size_t)cf->image < r->nimages
                                      ? a->bt_image[cf->image]
                                      : -1;
        }
    }
    return SYMD_OK;
}

static crash_sym_status status_of(const char *s)
{
    if (s && strcmp(s, "symbolicated") == 0)
        return CSYM_SYMBOLICATED;
    if (s && strcmp(s, "no_symbol") == 0)
        return CSYM_NO_SYMBOL;
    if (s && strcmp(s, "missing_image") == 0)
        return CSYM_MISSING_IMAGE;
    return CSYM_UNKNOWN_IMAGE;
}

/* The status of a frame nothing is known about: its image is missing, lies
 * nowhere, or has no symbol there. */
static const char *bare_status(crash_sym_status st)
{
    switch (st) {
    case CSYM_MISSING_IMAGE: return "missing_image";
    case CSYM_UNKNOWN_IMAGE: return "unknown_image";
    default: return "no_symbol";
    }
}

static void set_level_from_json(crash_level *l, json_t *o)
{
    memset(l, 0, sizeof *l);
    l->symbol = jstr(o, "symbol");
    l->mangled = jstr(o, "mangled");
    json_t *off = json_object_get(o, "offset");
    if (json_is_integer(off)) {
        l->has_offset = true;
        l->offset = (uint64_t)json_integer_value(off);
    }
    l->file = jstr(o, "file");
    l->line = (uint32_t)json_integer_value(json_object_get(o, "line"));
    l->column = (uint32_t)json_integer_value(json_object_get(o, "column"));
    l->inlined = json_is_true(json_object_get(o, "inlined"));
}

/* The report's own words for a frame whose image we lack (or that we could
 * not name): written into its answer object too, so the JSON says them. */
static void use_report_text(const crash_frame *cf, json_t *o, crash_level *l)
{
    if (cf->symbol) {
        json_object_set_new(o, "symbol", json_string(cf->symbol));
        if (cf->has_symbol_offset)
            json_object_set_new(o, "offset", json_integer((json_int_t)cf->symbol_offset));
    }
    if (cf->file) {
        json_object_set_new(o, "file", json_string(cf->file));
        json_object_set_new(o, "line", json_integer(cf->line));
    }
    json_object_set_new(o, "from_report", json_true());
    set_level_from_json(l, o);
}

/* The index of the app's own image (marked, else named like the process),
 * or -1. */
static long app_image(const crash_report *r)
{
    for (size_t i = 0; i < r->nimages; i++)
        if (r->images[i].is_app)
            return (long)i;
    for (size_t i = 0; i < r->nimages; i++)
        if (r->process && r->images[i].name && strcmp(r->images[i].name, r->process) == 0)
            return (long)i;
    return -1;
}

static char *make_signature(const crash_report *r, const crash_symbolication *s)
{
    long crashed = r->crashed_thread >= 0 && (size_t)r->crashed_thread < r->nthreads
                       ? r->crashed_thread
                       : 0;
    if (!r->nthreads)
        return strdup("no threads");
    size_t first = 0;
    for (long t = 0; t < crashed; t++)
        first += r->threads[t].nframes;
    const crash_thread *th = &r->threads[crashed];
    long app = app_image(r);
    const crash_symframe *fr = &s->frames[first];
    /* the app's own first frame with a name */
    for (size_t f = 0; app >= 0 && f < th->nframes; f++) {
        const crash_frame *cf = &th->frames[f];
        if (cf->image != app || !fr[f].nlevels)
            continue;
        const crash_level *outer = &fr[f].levels[fr[f].nlevels - 1];
        if (outer->symbol)
            return strdup(outer->symbol);
    }
    for (size_t f = 0; f < th->nframes; f++) {
        if (!fr[f].nlevels)
            continue;
        const crash_level *outer = &fr[f].levels[fr[f].nlevels - 1];
        if (outer->symbol)
            return strdup(outer->symbol);
    }
    if (th->nframes) {
        const crash_frame *cf = &th->frames[0];
        char buf[320];
        const char *img = fr[0].image ? fr[0].image : cf->image_name ? cf->image_name : "???";
        uint64_t base = cf->has_load ? cf->load_address
                        : cf->image >= 0 ? r->images[cf->image].load_address
                                         : 0;
        snprintf(buf, sizeof buf, "%s + 0x%llx", img,
                 (unsigned long long)(cf->address - base));
        return strdup(buf);
    }
    return strdup("no frames");
}

symd_status crash_symbolicate(struct store *st, const crash_report *r,
                              crash_symbolication *out, symd_err *err)
{
    memset(out, 0, sizeof *out);
    arena_t *a = calloc(1, sizeof *a);
    if (!a)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    out->arena = a;
    bt_request req;
    dynbuf ans;
    dynbuf_init(&ans, MAX_ANSWER);
    symd_status rc = to_request(r, a, &req, err);
    if (rc == SYMD_OK)
        rc = symbolicate(st, &req, &ans, NULL, err);
    bt_free(&req);
    if (rc != SYMD_OK)
        goto fail;
    json_error_t je;
    a->answer = json_loadb((const char *)ans.data, ans.len, 0, &je);
    dynbuf_free(&ans);
    if (!a->answer) {
        rc = symd_fail(err, SYMD_E_NOMEM, "reading the symbolication back: %s", je.text);
        goto fail;
    }
    size_t nframes = r->total_frames, nlevels = 0;
    json_t *threads = json_object_get(a->answer, "threads");
    for (size_t t = 0; t < json_array_size(threads); t++)
        nlevels += json_array_size(json_object_get(json_array_get(threads, t), "frames"));
    out->frames = calloc(nframes ? nframes : 1, sizeof *out->frames);
    a->levels = calloc(nlevels ? nlevels : 1, sizeof *a->levels);
    a->level_obj = calloc(nlevels ? nlevels : 1, sizeof *a->level_obj);
    out->image_found = calloc(r->nimages ? r->nimages : 1, sizeof(bool));
    out->image_debug_info = calloc(r->nimages ? r->nimages : 1, sizeof(bool));
    if (!out->frames || !a->levels || !a->level_obj || !out->image_found ||
        !out->image_debug_info) {
        rc = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto fail;
    }
    /* Group the answer's frames back per input frame: inlined levels up to
     * and including the first that is not. */
    size_t fi = 0, li = 0;
    for (size_t t = 0; t < r->nthreads && t < json_array_size(threads); t++) {
        json_t *frames = json_object_get(json_array_get(threads, t), "frames");
        size_t k = 0;
        for (size_t f = 0; f < r->threads[t].nframes; f++, fi++) {
            const crash_frame *cf = &r->threads[t].frames[f];
            crash_symframe *sf = &out->frames[fi];
            sf->levels = &a->levels[li];
            size_t start = k;
            while (k < json_array_size(frames) &&
                   json_is_true(json_object_get(json_array_get(frames, k), "inlined")))
                k++;
            size_t end = k < json_array_size(frames) ? k + 1 : k;
            k = end;
            json_t *outer = end > start ? json_array_get(frames, end - 1) : NULL;
            sf->status = status_of(outer ? jstr(outer, "status") : NULL);
            const char *img = outer ? jstr(outer, "image") : NULL;
            if (!img && cf->image_name)
                img = cf->image_name;
            if (!img && cf->image >= 0 && r->images[cf->image].name)
                img = r->images[cf->image].name;
            if (outer && img && !jstr(outer, "image"))
                json_object_set_new(outer, "image", json_string(img));
            sf->image = outer ? jstr(outer, "image") : img;
            for (size_t j = start; j < end; j++, li++) {
                json_t *o = json_array_get(frames, j);
                a->level_obj[li] = o;
                set_level_from_json(&a->levels[li], o);
                sf->nlevels++;
            }
            /* No answer of ours for the outer function: the report's words. */
            bool ours = sf->nlevels && a->levels[li - 1].symbol;
            if (!ours && outer && (cf->symbol || cf->file) &&
                sf->status != CSYM_SYMBOLICATED) {
                use_report_text(cf, outer, &a->levels[li - 1]);
            } else if (sf->nlevels == 1 && !a->levels[li - 1].symbol && !a->levels[li - 1].file) {
                sf->nlevels = 0; /* nothing known: render as reported */
                li--;
            }
        }
    }
    /* Images: found, and whether their dSYM is in. */
    json_t *imgs = json_object_get(a->answer, "images");
    for (size_t i = 0; i < r->nimages; i++) {
        long b = a->bt_image[i];
        if (b < 0)
            continue;
        json_t *o = json_array_get(imgs, (size_t)b);
        out->image_found[i] = jstr(o, "status") && strcmp(jstr(o, "status"), "found") == 0;
        if (out->image_found[i]) {
            store_image si[4];
            size_t n = 0;
            symd_err e2 = {0};
            if (store_get_image(st, r->images[i].uuid, si, 4, &n, &e2) == SYMD_OK)
                for (size_t k = 0; k < n; k++)
                    out->image_debug_info[i] |= si[k].debug_info;
        }
    }
    out->signature = make_signature(r, out);
    if (!out->signature) {
        rc = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto fail;
    }
    return SYMD_OK;
fail:
    dynbuf_free(&ans);
    crash_symbolication_free(out);
    return rc;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *hex_json(uint64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
    return json_string(b);
}

/* The frame's index into the report's images[], or null. */
static json_t *image_index_json(const crash_frame *f)
{
    return f->image >= 0 ? json_integer(f->image) : json_null();
}

/* Sets what every frame object says of its place: its number, its image's
 * index and, when the answer had none (an image never uploaded), the UUID
 * the report gives that image. */
static void set_frame_place(json_t *o, const crash_report *r, const crash_frame *cf, size_t f)
{
    json_object_set_new(o, "frame", json_integer((json_int_t)f));
    json_object_set_new(o, "image_index", image_index_json(cf));
    if (cf->image >= 0 && (size_t)cf->image < r->nimages && r->images[cf->image].has_uuid &&
        !json_object_get(o, "uuid")) {
        char u[37];
        uuid_format(r->images[cf->image].uuid, u);
        json_object_set_new(o, "uuid", json_string(u));
    }
}

symd_status crash_write_json(const crash_report *r, const crash_symbolication *s,
                             int64_t id, dynbuf *out, symd_err *err)
{
    const arena_t *a = s->arena;
    json_t *root = json_object();
    json_object_set_new(root, "id", id >= 0 ? json_integer(id) : json_null());
    json_object_set_new(root, "format",
                        json_string(r->format == CRASH_FORMAT_IPS ? "ips" : "crash"));
    json_object_set_new(root, "process", str_or_null(r->process));
    json_object_set_new(root, "bundle_id", str_or_null(r->bundle_id));
    json_object_set_new(root, "app_version", str_or_null(r->app_version));
    json_object_set_new(root, "os_version", str_or_null(r->os_version));
    json_object_set_new(root, "hardware_model", str_or_null(r->hardware_model));
    json_object_set_new(root, "incident_id", str_or_null(r->incident_id));
    json_t *exc = json_object();
    json_object_set_new(exc, "type", str_or_null(r->exception_type));
    json_object_set_new(exc, "signal", str_or_null(r->exception_signal));
    json_object_set_new(exc, "codes", str_or_null(r->exception_codes));
    json_object_set_new(root, "exception", exc);
    json_object_set_new(root, "termination", str_or_null(r->termination));
    json_object_set_new(root, "crashed_thread",
                        r->crashed_thread >= 0 ? json_integer(r->crashed_thread) : json_null());
    json_object_set_new(root, "signature", json_string(s->signature));
    json_t *threads = json_array();
    size_t fi = 0;
    for (size_t t = 0; t < r->nthreads; t++) {
        const crash_thread *ct = &r->threads[t];
        json_t *to = json_object();
        json_object_set_new(to, "id", json_integer(ct->number));
        json_object_set_new(to, "name", str_or_null(ct->name));
        json_object_set_new(to, "queue", str_or_null(ct->queue));
        json_object_set_new(to, "crashed", json_boolean(ct->crashed));
        json_t *frames = json_array();
        for (size_t f = 0; f < ct->nframes; f++, fi++) {
            const crash_symframe *sf = &s->frames[fi];
            size_t base = (size_t)(sf->levels - a->levels);
            if (sf->nlevels == 0) {
                /* nothing known beyond the address and image */
                json_t *o = json_object();
                json_object_set_new(o, "address", hex_json(ct->frames[f].address));
                json_object_set_new(o, "status", json_string(bare_status(sf->status)));
                json_object_set_new(o, "image", str_or_null(sf->image));
                json_object_set_new(o, "inlined", json_false());
                set_frame_place(o, r, &ct->frames[f], f);
                json_array_append_new(frames, o);
                continue;
            }
            for (size_t l = 0; l < sf->nlevels; l++) {
                /* Each level object belongs to this one frame: setting the
                 * same values again on a later write changes nothing. */
                json_t *lo = a->level_obj[base + l];
                set_frame_place(lo, r, &ct->frames[f], f);
                json_array_append(frames, lo);
            }
        }
        json_object_set_new(to, "frames", frames);
        json_array_append_new(threads, to);
    }
    json_object_set_new(root, "threads", threads);
    json_t *images = json_array();
    long app = app_image(r);
    for (size_t i = 0; i < r->nimages; i++) {
        const crash_image *im = &r->images[i];
        json_t *o = json_object();
        if (im->has_uuid) {
            char u[37];
            uuid_format(im->uuid, u);
            json_object_set_new(o, "uuid", json_string(u));
        } else {
            json_object_set_new(o, "uuid", json_null());
        }
        json_object_set_new(o, "arch", str_or_null(im->arch));
        json_object_set_new(o, "name", str_or_null(im->name));
        json_object_set_new(o, "load_address", hex_json(im->load_address));
        json_object_set_new(o, "status", json_string(s->image_found[i] ? "found" : "missing"));
        json_object_set_new(o, "debug_info", json_boolean(s->image_debug_info[i]));
        json_object_set_new(o, "app", json_boolean((long)i == app));
        json_array_append_new(images, o);
    }
    json_object_set_new(root, "images", images);
    size_t need = json_dumpb(root, NULL, 0, JSON_COMPACT);
    symd_status rc = SYMD_OK;
    if (!need || !dynbuf_reserve(out, need)) {
        rc = symd_fail(err, dynbuf_over_limit(out, need) ? SYMD_E_TOO_LARGE : SYMD_E_NOMEM,
                       "crash answer of %zu bytes does not fit", need);
    } else {
        json_dumpb(root, (char *)out->data + out->len, need, JSON_COMPACT);
        out->len += need;
        out->data[out->len] = 0;
    }
    json_decref(root);
    return rc;
}

/* Crash reports symbolicated through the /v1/symbolicate core, and their
 * /v1/crashes JSON. The report's distinct (image, address, adjustment)
 * triples become one backtrace request; the core's levels become per-frame
 * levels (strings point into the core's result, which the symbolication
 * owns, or into the report). */
#include "crashsym.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../parser/backtrace.h"
#include "../store/store.h"
#include "../util/hex.h"
#include "../util/jsonw.h"
#include "signature.h"
#include "symbolicate.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define MAX_SLICES 8           /* of one UUID, read to tell found from other arch */

const char *crash_image_status_name(crash_image_status s)
{
    switch (s) {
    case CIMG_FOUND: return "found";
    case CIMG_FOUND_OTHER_ARCH: return "found_other_arch";
    case CIMG_OUTSIDE_TEXT: return "outside_text";
    default: return "missing";
    }
}

typedef struct {
    bt_request req;         /* the request (the result's strings may point into it) */
    sym_result res;         /* the core's answer */
    crash_level *levels;    /* per answer level */
    size_t *key_level;      /* per distinct lookup: its first answer level */
    size_t *key_nlevels;    /* per distinct lookup: its levels (inlined ones, the outer one) */
    crash_level *own;       /* levels of frames that say the report's words */
    long *frame_key;        /* per report frame: its distinct lookup, -1 when not looked up */
    size_t *frame_lv0;      /* per report frame: its first level of its lookup's levels */
    size_t *frame_nlv;      /* per report frame: how many of them it shows (share_inlined) */
    bool *frame_report;     /* per report frame: its outer level is the report's own text */
} arena_t;

/* An .ips run of "inline": true frames just before the frame at their
 * address names the inlined calls the lookup of that frame answers as its
 * inner levels. When that lookup names the frame, its levels are shared out
 * innermost first: one to each inline frame, the rest to the frame itself,
 * so no call is told twice; inline frames beyond our levels keep the
 * report's words. Reads and sets frame_key, frame_lv0 and frame_nlv. */
static void share_inlined(arena_t *a, const crash_report *r)
{
    size_t k = 0;
    for (size_t t = 0; t < r->nthreads; k += r->threads[t++].nframes) {
        const crash_thread *th = &r->threads[t];
        for (size_t g = 1; g < th->nframes; g++) {
            long key = a->frame_key[k + g];
            if (th->frames[g].inlined || key < 0)
                continue;
            size_t base = a->key_level[key], n = a->key_nlevels[key];
            if (n < 2 || !a->levels[base + n - 1].symbol)
                continue;
            size_t f = g;
            while (f > 0 && th->frames[f - 1].inlined && a->frame_key[k + f - 1] < 0 &&
                   th->frames[f - 1].address == th->frames[g].address)
                f--;
            size_t use = g - f < n - 1 ? g - f : n - 1;
            for (size_t i = 0; i < use; i++) {
                a->frame_key[k + f + i] = key;
                a->frame_lv0[k + f + i] = base + i;
                a->frame_nlv[k + f + i] = 1;
            }
            a->frame_lv0[k + g] = base + use;
            a->frame_nlv[k + g] = n - use;
        }
    }
}

void crash_symbolication_free(crash_symbolication *s)
{
    arena_t *a = s->arena;
    if (a) {
        sym_result_free(&a->res);
        bt_free(&a->req);
        free(a->levels);
        free(a->key_level);
        free(a->key_nlevels);
        free(a->own);
        free(a->frame_key);
        free(a->frame_lv0);
        free(a->frame_nlv);
        free(a->frame_report);
        free(a);
    }
    free(s->frames);
    free(s->image_found);
    free(s->image_system);
    free(s->image_status);
    free(s->image_debug_info);
    free(s->image_unwind);
    free(s->signature);
    free(s->grouping_rule);
    memset(s, 0, sizeof *s);
}

/* ---- what the report runs on ---- */

/* The arch the report's code type names ("ARM-64 (Native)" → "arm64"),
 * else the app image's or the first image's; NULL when nothing says. */
static const char *report_arch(const crash_report *r)
{
    const char *c = r->code_type;
    if (c && *c) {
        if (strcasestr(c, "arm-64") || strcasestr(c, "arm64"))
            return "arm64";
        if (strcasestr(c, "x86-64") || strcasestr(c, "x86_64"))
            return "x86_64";
        if (!strncasecmp(c, "arm", 3))
            return "armv7";
        if (!strncasecmp(c, "x86", 3) || !strncasecmp(c, "i386", 4))
            return "i386";
        if (!strncasecmp(c, "ppc", 3) || !strncasecmp(c, "powerpc", 7))
            return "ppc";
    }
    for (size_t i = 0; i < r->nimages; i++)
        if (r->images[i].is_app && r->images[i].arch && *r->images[i].arch)
            return r->images[i].arch;
    for (size_t i = 0; i < r->nimages; i++)
        if (r->images[i].arch && *r->images[i].arch)
            return r->images[i].arch;
    return NULL;
}

static bool same_family(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    bool a64 = !strncmp(a, "arm64", 5), b64 = !strncmp(b, "arm64", 5);
    if (a64 || b64)
        return a64 && b64;
    return !strncmp(a, b, 3);
}

/* Contract in crashsym.h. */
long crash_app_image(const crash_report *r)
{
    long first = -1, named = -1, named_app = -1;
    for (size_t i = 0; i < r->nimages; i++) {
        bool same = r->process && r->images[i].name && strcmp(r->images[i].name, r->process) == 0;
        if (r->images[i].is_app && same)
            return (long)i;
        if (r->images[i].is_app && first < 0)
            first = (long)i;
        if (same && named < 0)
            named = (long)i;
        if (same && !r->images[i].system && named_app < 0)
            named_app = (long)i;
    }
    return named_app >= 0 ? named_app : first >= 0 ? first : named;
}

/* ---- the request ---- */

/* What the store holds of one report image. */
typedef struct {
    long req;           /* request image, -1 when not sent (no UUID) */
    bool stored;        /* some slice of the UUID is stored */
    bool stored_system; /* a slice of it is an imported system library */
    bool match;         /* a slice of the image's own arch (or the one chosen) is */
    store_slice slice;  /* that slice, when match */
} img_info;

/* Looks the image's UUID up in the store (every slice) and picks the arch
 * the request asks for: the report's, else the only slice, else the slice
 * of the report's family. A store error is taken as "not stored": the
 * lookup itself then says so. */
static void probe_image(struct store *st, const crash_image *im, const char *rarch,
                        img_info *ii, bt_image *b)
{
    store_slice sl[MAX_SLICES];
    size_t n = 0;
    symd_err e = {0};
    if (store_slices(st, im->uuid, sl, MAX_SLICES, &n, &e) != SYMD_OK)
        n = 0;
    ii->stored = n > 0;
    for (size_t k = 0; k < n; k++)
        ii->stored_system |= sl[k].system;
    if (im->arch && *im->arch) {
        snprintf(b->arch, sizeof b->arch, "%s", im->arch);
        for (size_t k = 0; k < n; k++)
            if (strcmp(sl[k].arch, im->arch) == 0) {
                ii->match = true;
                ii->slice = sl[k];
            }
        return;
    }
    if (n == 0)
        return;
    size_t pick = 0;
    for (size_t k = 0; k < n && n > 1; k++)
        if (same_family(sl[k].arch, rarch)) {
            pick = k;
            break;
        }
    ii->match = true;
    ii->slice = sl[pick];
    _Static_assert(sizeof b->arch == sizeof sl[pick].arch, "arch fields of one size");
    memcpy(b->arch, sl[pick].arch, sizeof b->arch);
    b->arch[sizeof b->arch - 1] = 0;
}

/* Images sorted by (process, load address), to place a frame that names no
 * image among its own process's images. */
typedef struct {
    long process;
    uint64_t load, end; /* end: last byte, UINT64_MAX when not known */
    size_t image;
} place_entry;

typedef struct {
    place_entry *e;
    size_t n;
} placer;

static int cmp_place(const void *pa, const void *pb)
{
    const place_entry *a = pa, *b = pb;
    if (a->process != b->process)
        return a->process < b->process ? -1 : 1;
    if (a->load != b->load)
        return a->load < b->load ? -1 : 1;
    return a->image < b->image ? -1 : a->image > b->image;
}

static int placer_init(placer *p, const crash_report *r)
{
    p->n = r->nimages;
    p->e = malloc((p->n ? p->n : 1) * sizeof *p->e);
    if (!p->e)
        return -1;
    for (size_t i = 0; i < p->n; i++) {
        const crash_image *im = &r->images[i];
        p->e[i] = (place_entry){im->process, im->load_address,
                                im->has_end && im->end_address >= im->load_address
                                    ? im->end_address
                                    : UINT64_MAX,
                                i};
    }
    qsort(p->e, p->n, sizeof *p->e, cmp_place);
    return 0;
}

/* The image of process proc holding addr: the last one starting at or below
 * it whose end (when known) is not below it; -1 when none. */
static long place_in(const placer *p, long proc, uint64_t addr)
{
    size_t lo = 0, hi = p->n;
    /* the first entry of a later process, or of proc at a higher address */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const place_entry *m = &p->e[mid];
        if (m->process < proc || (m->process == proc && m->load <= addr))
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Ranges may nest or overlap in a hostile report: look back a little. */
    for (size_t i = lo, steps = 0; i > 0 && steps < 8; i--, steps++) {
        const place_entry *m = &p->e[i - 1];
        if (m->process != proc)
            break;
        if (addr <= m->end)
            return (long)m->image;
    }
    return -1;
}

/* One distinct lookup: the request's frames are these. */
typedef struct {
    long *slot;   /* open addressing: distinct index + 1, 0 empty */
    size_t mask;
} dedup;

static size_t hash_key(long img, uint64_t addr, int adj)
{
    uint64_t h = addr * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(img + 1) * 0xC2B2AE3D27D4EB4Full;
    h ^= (uint64_t)adj << 61;
    h ^= h >> 29;
    return (size_t)h;
}

/* How the core reads frame f of thread t (see crash_symbolicate). */
static bt_adjust frame_adjust(const crash_thread *t, size_t f)
{
    if (t->is_tree)
        return f + 1 < t->nframes && t->frames[f + 1].depth > t->frames[f].depth
                   ? BT_ADJUST_CALLER
                   : BT_ADJUST_NONE;
    switch (t->role) {
    case CRASH_THREAD_LAST_EXCEPTION:
    case CRASH_THREAD_APP_SPECIFIC:
    case CRASH_THREAD_KERNEL:
        return BT_ADJUST_CALLER;
    default:
        /* the first frame is exact, and so is the outer frame of the inlined
         * calls .ips lists before it (same address) */
        for (size_t i = 0; i < f; i++)
            if (!t->frames[i].inlined)
                return BT_ADJUST_CALLER;
        return BT_ADJUST_NONE;
    }
}

/* The request image a frame is looked up in: its own image's when that has
 * a UUID; in a multi-process report a frame naming no such image is placed
 * among its process's images (-2: nowhere, not looked up); otherwise -1
 * (the core finds it by address). */
static long frame_request_image(const crash_report *r, const crash_thread *t,
                                const crash_frame *cf, const img_info *ii, const placer *pl,
                                const char *rarch)
{
    if (cf->image >= 0 && (size_t)cf->image < r->nimages && ii[cf->image].req >= 0)
        return ii[cf->image].req;
    if (t->process < 0)
        return -1;
    uint64_t a = symbolicate_lookup_address(cf->address, rarch);
    long i = place_in(pl, t->process, a);
    if (i < 0)
        i = place_in(pl, -1, a); /* images of no process: shared ones */
    return i >= 0 && ii[i].req >= 0 ? ii[i].req : -2;
}

/* ---- reading the answer back ---- */

static crash_sym_status status_of(const sym_level *l)
{
    if (!l)
        return CSYM_UNKNOWN_IMAGE;
    switch (l->status) {
    case SYM_SYMBOLICATED: return CSYM_SYMBOLICATED;
    case SYM_NO_SYMBOL: return CSYM_NO_SYMBOL;
    case SYM_MISSING_IMAGE: return CSYM_MISSING_IMAGE;
    default: return CSYM_UNKNOWN_IMAGE;
    }
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

static void set_level(crash_level *l, const sym_level *o)
{
    memset(l, 0, sizeof *l);
    l->symbol = o->symbol;
    l->mangled = o->mangled;
    l->has_offset = o->has_sym_addr;
    l->offset = o->offset;
    l->file = o->file;
    l->line = o->line;
    l->column = o->column;
    l->inlined = o->inlined;
}

/* The report's own words over what the answer said of a frame's outer
 * level (l, a copy; the symbol and offset, the file and line, when given). */
static void use_report_text(const crash_frame *cf, crash_level *l)
{
    if (cf->symbol) {
        l->symbol = cf->symbol;
        l->mangled = NULL;
        if (cf->has_symbol_offset) {
            l->has_offset = true;
            l->offset = cf->symbol_offset;
        }
    }
    if (cf->file) {
        l->file = cf->file;
        l->line = cf->line;
        l->column = 0;
    }
}

/* ---- crash_symbolicate ---- */

/* Whether a frame of a found image lies beyond the image's __TEXT. */
static bool outside_text(const img_info *ii, const crash_image *im, uint64_t address)
{
    if (!ii->match || !ii->slice.text_size)
        return false;
    uint64_t slide = im->load_address - ii->slice.text_vmaddr; /* modular */
    uint64_t vm = symbolicate_lookup_address(address, ii->slice.arch) - slide;
    return vm - ii->slice.text_vmaddr >= ii->slice.text_size;
}

/* For a minidump, each stored image holding a walked frame: why the walker
 * had no unwind rows for it (a dSYM alone holds none), so the answer can
 * say what to upload; out->image_unwind[i] stays NULL otherwise. */
static void note_unwind(struct store *st, const crash_report *r, const img_info *ii,
                        crash_symbolication *out)
{
    if (r->format != CRASH_FORMAT_MINIDUMP || !st)
        return;
    for (size_t t = 0; t < r->nthreads; t++)
        for (size_t f = 0; f < r->threads[t].nframes; f++) {
            long i = r->threads[t].frames[f].image;
            if (i < 0 || (size_t)i >= r->nimages || !ii[i].match || out->image_unwind[i] ||
                !r->images[i].has_uuid)
                continue;
            store_loaded *img = NULL;
            symd_err e = {0};
            if (store_acquire(st, r->images[i].uuid, ii[i].slice.arch, &img, &e) != SYMD_OK)
                continue;
            out->image_unwind[i] = store_unwind_missing(img);
            store_release(st, img);
        }
}

symd_status crash_symbolicate(struct store *st, const crash_report *r, bool full_names,
                              crash_symbolication *out, symd_err *err)
{
    memset(out, 0, sizeof *out);
    symd_status rc = SYMD_OK;
    arena_t *a = calloc(1, sizeof *a);
    if (!a)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    out->arena = a;
    size_t nimg = r->nimages, nfr = r->total_frames;
    const char *rarch = report_arch(r);
    img_info *ii = calloc(nimg ? nimg : 1, sizeof *ii);
    size_t *first = calloc(r->nthreads ? r->nthreads : 1, sizeof *first);
    long *req_to_img = calloc(nimg ? nimg : 1, sizeof *req_to_img);
    placer pl = {0};
    dedup dd = {0};
    bt_request *req = &a->req;
    req->adjust = BT_ADJUST_AUTO;
    req->full_names = full_names;
    req->images = calloc(nimg ? nimg : 1, sizeof *req->images);
    req->threads = calloc(1, sizeof *req->threads);
    size_t cap = 1;
    while (cap < 2 * nfr + 2)
        cap <<= 1;
    dd.slot = calloc(cap, sizeof *dd.slot);
    dd.mask = cap - 1;
    a->frame_key = malloc((nfr ? nfr : 1) * sizeof *a->frame_key);
    a->frame_report = calloc(nfr ? nfr : 1, sizeof *a->frame_report);
    a->frame_lv0 = calloc(nfr ? nfr : 1, sizeof *a->frame_lv0);
    a->frame_nlv = calloc(nfr ? nfr : 1, sizeof *a->frame_nlv);
    out->frames = calloc(nfr ? nfr : 1, sizeof *out->frames);
    out->image_found = calloc(nimg ? nimg : 1, sizeof(bool));
    out->image_status = calloc(nimg ? nimg : 1, sizeof *out->image_status);
    out->image_debug_info = calloc(nimg ? nimg : 1, sizeof(bool));
    out->image_system = calloc(nimg ? nimg : 1, sizeof(bool));
    out->image_unwind = calloc(nimg ? nimg : 1, sizeof *out->image_unwind);
    if (!out->image_unwind || !ii || !first || !req_to_img || !req->images || !req->threads || !dd.slot ||
        !a->frame_key || !a->frame_report || !a->frame_lv0 || !a->frame_nlv || !out->frames ||
        !out->image_found || !out->image_status || !out->image_debug_info ||
        !out->image_system || placer_init(&pl, r) != 0) {
        rc = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto done;
    }

    /* Images: each with a UUID is asked for. */
    for (size_t i = 0; i < nimg; i++) {
        const crash_image *im = &r->images[i];
        ii[i].req = -1;
        if (!im->has_uuid)
            continue;
        bt_image *b = &req->images[req->nimages];
        memcpy(b->uuid, im->uuid, 16);
        probe_image(st, im, rarch, &ii[i], b);
        if (im->name)
            snprintf(b->name, sizeof b->name, "%s", im->name);
        b->has_load = true;
        b->load_address = im->load_address;
        if (im->has_end && im->end_address >= im->load_address) {
            b->has_size = true;
            b->size = im->end_address - im->load_address + 1;
        }
        req_to_img[req->nimages] = (long)i;
        ii[i].req = (long)req->nimages++;
    }

    /* Frames: one request frame per distinct (image, address, adjustment). */
    bt_thread *bt = &req->threads[0];
    req->nthreads = 1;
    bt->frames = calloc(nfr ? nfr : 1, sizeof *bt->frames);
    if (!bt->frames) {
        rc = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto done;
    }
    size_t k = 0;
    for (size_t t = 0; t < r->nthreads; t++) {
        const crash_thread *th = &r->threads[t];
        first[t] = k;
        for (size_t f = 0; f < th->nframes; f++, k++) {
            const crash_frame *cf = &th->frames[f];
            a->frame_key[k] = -1;
            if (cf->address == 0)
                continue; /* "???" frames: nothing to look up */
            if (cf->inlined && f + 1 < th->nframes && th->frames[f + 1].address == cf->address)
                continue; /* an inlined call the report names: the next frame's lookup
                             holds it; the report's words are kept */
            long img = frame_request_image(r, th, cf, ii, &pl, rarch);
            if (img == -2)
                continue;
            bt_adjust adj = frame_adjust(th, f);
            size_t h = hash_key(img, cf->address, (int)adj) & dd.mask;
            while (dd.slot[h]) {
                const bt_frame *o = &bt->frames[dd.slot[h] - 1];
                if (o->image == img && o->address == cf->address && o->adjust == adj)
                    break;
                h = (h + 1) & dd.mask;
            }
            if (!dd.slot[h]) {
                bt_frame *n = &bt->frames[bt->nframes++];
                n->address = cf->address;
                n->adjust = adj;
                n->image = img;
                dd.slot[h] = (long)bt->nframes;
            }
            a->frame_key[k] = dd.slot[h] - 1;
            if (img >= 0 && ii[req_to_img[img]].match &&
                outside_text(&ii[req_to_img[img]], &r->images[req_to_img[img]], cf->address))
                out->image_status[req_to_img[img]] = CIMG_OUTSIDE_TEXT;
        }
    }
    bt->cap = nfr;
    req->total_frames = bt->nframes;

    rc = symbolicate_levels(st, req, &a->res, NULL, err);
    if (rc != SYMD_OK)
        goto done;

    /* The core's levels, grouped per distinct lookup (its request frames). */
    size_t nlev = a->res.nlevels, ndist = bt->nframes;
    a->levels = calloc(nlev ? nlev : 1, sizeof *a->levels);
    a->key_level = calloc(ndist ? ndist : 1, sizeof *a->key_level);
    a->key_nlevels = calloc(ndist ? ndist : 1, sizeof *a->key_nlevels);
    if (!a->levels || !a->key_level || !a->key_nlevels) {
        rc = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto done;
    }
    for (size_t li = 0; li < nlev; li++)
        set_level(&a->levels[li], &a->res.levels[li]);
    for (size_t d = 0; d < ndist; d++) {
        a->key_level[d] = a->res.frame_first[d];
        a->key_nlevels[d] = a->res.frame_count[d];
    }
    for (size_t f = 0; f < nfr; f++) {
        long key = a->frame_key[f];
        a->frame_lv0[f] = key >= 0 ? a->key_level[key] : 0;
        a->frame_nlv[f] = key >= 0 ? a->key_nlevels[key] : 0;
    }
    share_inlined(a, r);

    /* Per report frame: its lookup's levels, or the report's own words when
     * we could not name it. Those get levels of their own (counted first). */
    size_t nown = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            a->own = calloc(nown ? nown : 1, sizeof *a->own);
            if (!a->own) {
                rc = symd_fail(err, SYMD_E_NOMEM, "out of memory");
                goto done;
            }
            nown = 0;
        }
        k = 0;
        for (size_t t = 0; t < r->nthreads; t++) {
            const crash_thread *th = &r->threads[t];
            for (size_t f = 0; f < th->nframes; f++, k++) {
                const crash_frame *cf = &th->frames[f];
                crash_symframe *sf = &out->frames[k];
                size_t base = a->frame_lv0[k], n = a->frame_nlv[k];
                const sym_level *outer = n ? &a->res.levels[base + n - 1] : NULL;
                sf->status = status_of(outer);
                const char *img = outer ? outer->image : NULL;
                if (!img && cf->image_name)
                    img = cf->image_name;
                if (!img && cf->image >= 0 && (size_t)cf->image < nimg)
                    img = r->images[cf->image].name;
                sf->image = img;
                bool ours = n && a->levels[base + n - 1].symbol;
                bool report = !ours && (cf->symbol || cf->file) && sf->status != CSYM_SYMBOLICATED;
                if (!report) {
                    sf->levels = &a->levels[base];
                    sf->nlevels = n;
                    if (n == 1 && !a->levels[base].symbol && !a->levels[base].file)
                        sf->nlevels = 0; /* nothing known: render as reported */
                    continue;
                }
                size_t nl = n ? n : 1;
                if (pass == 1) {
                    crash_level *own = &a->own[nown];
                    if (n)
                        memcpy(own, &a->levels[base], n * sizeof *own);
                    use_report_text(cf, &own[nl - 1]);
                    if (cf->inlined)
                        own[nl - 1].inlined = true;
                    sf->levels = own;
                    sf->nlevels = nl;
                    a->frame_report[k] = true;
                }
                nown += nl;
            }
        }
    }

    /* An inlined call the report names (not looked up) has the status of
     * the frame holding it, the next one at its address. */
    k = 0;
    for (size_t t = 0; t < r->nthreads; t++) {
        const crash_thread *th = &r->threads[t];
        for (size_t f = th->nframes; f-- > 0;) {
            const crash_frame *cf = &th->frames[f];
            if (!cf->inlined || f + 1 >= th->nframes || a->frame_key[k + f] >= 0 ||
                th->frames[f + 1].address != cf->address || cf->address == 0)
                continue;
            crash_symframe *sf = &out->frames[k + f];
            sf->status = out->frames[k + f + 1].status;
            if (!sf->image)
                sf->image = out->frames[k + f + 1].image;
        }
        k += th->nframes;
    }

    /* Images: found (or beyond their text), the UUID under another arch,
     * missing; whether their dSYM is in. */
    for (size_t i = 0; i < nimg; i++) {
        long b = ii[i].req;
        bool found = b >= 0 && (size_t)b < a->res.nimages && a->res.images[b].found;
        out->image_found[i] = found;
        if (found) {
            if (out->image_status[i] != CIMG_OUTSIDE_TEXT)
                out->image_status[i] = CIMG_FOUND;
            out->image_debug_info[i] = ii[i].match && ii[i].slice.debug_info;
        } else {
            out->image_status[i] = ii[i].stored ? CIMG_FOUND_OTHER_ARCH : CIMG_MISSING;
        }
        /* the report's word, or the store's: symd import stored it */
        out->image_system[i] = r->images[i].system || ii[i].stored_system;
    }
    note_unwind(st, r, ii, out);
    out->signature = sig_make(r, out, first);
    if (!out->signature) {
        rc = symd_fail(err, SYMD_E_NOMEM, "out of memory");
    } else {
        /* the grouping rules in force (--grouping-rules) may merge or split */
        grouping_rules *g = grouping_acquire();
        rc = sig_apply_rules(r, out, first, g, &out->signature, &out->grouping_rule, err);
        grouping_release(g);
    }
done:
    free(ii);
    free(first);
    free(req_to_img);
    free(pl.e);
    free(dd.slot);
    if (rc != SYMD_OK)
        crash_symbolication_free(out);
    return rc;
}

/* ---- the JSON answer ---- */

static void jw_str_or_null(jsonw *w, const char *s)
{
    if (s)
        jw_str(w, s);
    else
        JW_LIT(w, "null");
}

static void jw_key(jsonw *w, bool *first, const char *key)
{
    if (!*first)
        JW_LIT(w, ",");
    *first = false;
    jw_str(w, key);
    JW_LIT(w, ":");
}

/* What every frame object says of its place: its number, its image's index,
 * the UUID and image name the report gives when the answer had none, and in
 * a call tree its depth and samples. */
static void write_place(jsonw *w, bool *fk, const crash_report *r, const crash_thread *th,
                        size_t f, const sym_level *o, const char *image)
{
    const crash_frame *cf = &th->frames[f];
    jw_key(w, fk, "frame");
    jw_u64(w, f);
    jw_key(w, fk, "image_index");
    if (cf->image >= 0)
        jw_i64(w, cf->image);
    else
        JW_LIT(w, "null");
    if (!(o && o->uuid) && cf->image >= 0 && (size_t)cf->image < r->nimages &&
        r->images[cf->image].has_uuid) {
        char u[37];
        uuid_format(r->images[cf->image].uuid, u);
        jw_key(w, fk, "uuid");
        jw_str(w, u);
    }
    if (!(o && o->image) && image) {
        jw_key(w, fk, "image");
        jw_str(w, image);
    }
    if (th->is_tree) {
        jw_key(w, fk, "depth");
        jw_u64(w, cf->depth);
        jw_key(w, fk, "count");
        jw_u64(w, cf->count);
    }
}

/* The report's own name of a frame the store named: "report_symbol" (and
 * "report_offset" when the report gives one), so the answer keeps what the
 * device said beside what the image says. */
static void write_report_name(jsonw *w, bool *fk, const crash_frame *cf)
{
    if (!cf->symbol)
        return;
    jw_key(w, fk, "report_symbol");
    jw_str(w, cf->symbol);
    if (cf->has_symbol_offset) {
        jw_key(w, fk, "report_offset");
        jw_u64(w, cf->symbol_offset);
    }
}

/* "trust" of a walked frame (a minidump's): how the walker found it. */
static void write_trust(jsonw *w, bool *fk, const crash_frame *cf)
{
    if (cf->trust == CRASH_TRUST_NONE)
        return;
    jw_key(w, fk, "trust");
    jw_str(w, md_trust_name((md_trust)cf->trust));
}

/* One output frame object: an answer level object, with the report's words
 * over its outer level when report is set (the image is not stored, or
 * names nothing there), else, on the outer level, the report's own name
 * beside the answer's; then its place. o may be NULL (a frame not looked
 * up). */
static void write_level(jsonw *w, const crash_report *r, const crash_thread *th, size_t f,
                        const sym_level *o, const crash_symframe *sf, bool report,
                        bool outer)
{
    const crash_frame *cf = &th->frames[f];
    bool over_sym = report && outer && cf->symbol;
    bool over_off = over_sym && cf->has_symbol_offset;
    bool over_file = report && outer && cf->file;
    bool fk = true;
    JW_LIT(w, "{");
    if (o) {
        bool own_inl = cf->inlined && outer; /* the report says it is an inlined call */
        symbolicate_write_level(w, o, (over_sym ? SYM_OMIT_NAMES : 0) |
                                          (over_off ? SYM_OMIT_OFFSET : 0) |
                                          (over_file ? SYM_OMIT_PLACE : 0) |
                                          (own_inl ? SYM_OMIT_INLINED : 0));
        if (own_inl)
            JW_LIT(w, ",\"inlined\":true");
        fk = false;
    } else {
        jw_key(w, &fk, "address");
        jw_hex(w, cf->address);
        jw_key(w, &fk, "status");
        jw_str(w, bare_status(sf->status));
        jw_key(w, &fk, "inlined");
        if (cf->inlined)
            JW_LIT(w, "true");
        else
            JW_LIT(w, "false");
    }
    if (over_sym) {
        jw_key(w, &fk, "symbol");
        jw_str(w, cf->symbol);
        if (over_off) {
            jw_key(w, &fk, "offset");
            jw_u64(w, cf->symbol_offset);
        }
    }
    if (over_file) {
        jw_key(w, &fk, "file");
        jw_str(w, cf->file);
        jw_key(w, &fk, "line");
        jw_u64(w, cf->line);
    }
    if (report && outer)
        JW_LIT(w, ",\"from_report\":true");
    else if (outer)
        write_report_name(w, &fk, cf);
    if (outer)
        write_trust(w, &fk, cf);
    write_place(w, &fk, r, th, f, o, outer ? sf->image : NULL);
    JW_LIT(w, "}");
}

/* A call tree's roots, nested from the pre-order frames by depth, with an
 * explicit stack (never recursion on the input's depth). Nodes deeper than
 * CRASH_TREE_JSON_DEPTH hang under their ancestor at that depth. */
static void write_tree(jsonw *w, const crash_thread *th, uint32_t *sd, bool *sfirst)
{
    size_t top = 0;
    bool rootfirst = true;
    JW_LIT(w, "[");
    for (size_t f = 0; f < th->nframes; f++) {
        const crash_frame *cf = &th->frames[f];
        uint32_t d = cf->depth > CRASH_TREE_JSON_DEPTH ? CRASH_TREE_JSON_DEPTH : cf->depth;
        while (top && sd[top - 1] >= d) {
            JW_LIT(w, "]}");
            top--;
        }
        bool *first = top ? &sfirst[top - 1] : &rootfirst;
        if (!*first)
            JW_LIT(w, ",");
        *first = false;
        JW_LIT(w, "{\"count\":");
        jw_u64(w, cf->count);
        JW_LIT(w, ",\"frame\":");
        jw_u64(w, f);
        JW_LIT(w, ",\"children\":[");
        sd[top] = d;
        sfirst[top] = true;
        top++;
    }
    while (top--)
        JW_LIT(w, "]}");
    JW_LIT(w, "]");
}

static bool tree_too_deep(const crash_thread *th)
{
    for (size_t f = 0; th->is_tree && f < th->nframes; f++)
        if (th->frames[f].depth > CRASH_TREE_JSON_DEPTH)
            return true;
    return false;
}

static const char *role_name(crash_thread_role r)
{
    switch (r) {
    case CRASH_THREAD_LAST_EXCEPTION: return "last_exception";
    case CRASH_THREAD_APP_SPECIFIC: return "app_specific";
    case CRASH_THREAD_ATTRIBUTED: return "attributed";
    case CRASH_THREAD_HEAVIEST: return "heaviest";
    case CRASH_THREAD_KERNEL: return "kernel";
    case CRASH_THREAD_RECRASH: return "recrash";
    default: return "thread";
    }
}

static void write_index_or_null(jsonw *w, long v, size_t n)
{
    if (v >= 0 && (size_t)v < n)
        jw_i64(w, v);
    else
        JW_LIT(w, "null");
}

/* The keys both JSON answers of a report open with: "{" and id (null when
 * < 0), format, kind, bug_type, process, bundle_id, app_version,
 * os_version, hardware_model, incident_id. */
static void write_head(jsonw *w, bool *fk, const crash_report *r, int64_t id)
{
    JW_LIT(w, "{");
    jw_key(w, fk, "id");
    if (id >= 0)
        jw_i64(w, id);
    else
        JW_LIT(w, "null");
    jw_key(w, fk, "format");
    jw_str(w, crash_format_name(r->format));
    jw_key(w, fk, "kind");
    jw_str(w, crash_kind_name(r->kind));
    jw_key(w, fk, "bug_type");
    if (r->bug_type)
        jw_i64(w, r->bug_type);
    else
        JW_LIT(w, "null");
    static const char *const keys[] = {"process", "bundle_id", "app_version", "os_version",
                                       "hardware_model", "incident_id"};
    const char *vals[] = {r->process, r->bundle_id, r->app_version, r->os_version,
                          r->hardware_model, r->incident_id};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        jw_key(w, fk, keys[i]);
        jw_str_or_null(w, vals[i]);
    }
    if (r->format == CRASH_FORMAT_MINIDUMP) {
        /* Crashpad's annotations and the upload's form fields, in order */
        jw_key(w, fk, "architecture");
        jw_str_or_null(w, r->code_type);
        jw_key(w, fk, "annotations");
        JW_LIT(w, "[");
        for (size_t i = 0; i < r->nannotations; i++) {
            jw_raw(w, i ? ",{\"name\":" : "{\"name\":");
            jw_str_or_null(w, r->annotations[i].name);
            JW_LIT(w, ",\"value\":");
            jw_str_or_null(w, r->annotations[i].value);
            JW_LIT(w, "}");
        }
        JW_LIT(w, "]");
        return;
    }
    if (r->format != CRASH_FORMAT_METRICKIT && r->format != CRASH_FORMAT_ASC)
        return;
    /* MetricKit / App Store Connect: which diagnostic of the input, and the
     * metadata the other keys do not hold (measurements parsed to ms or bytes). */
    jw_key(w, fk, "part");
    jw_u64(w, r->part);
    jw_key(w, fk, "nparts");
    jw_u64(w, r->nparts);
    jw_key(w, fk, "app_build");
    jw_str_or_null(w, r->app_build);
    jw_key(w, fk, "architecture");
    jw_str_or_null(w, r->code_type);
    jw_key(w, fk, "vm_region_info");
    jw_str_or_null(w, r->vm_region_info);
    jw_key(w, fk, "metrics");
    JW_LIT(w, "[");
    for (size_t i = 0; i < r->nmetrics; i++) {
        const crash_metric *m = &r->metrics[i];
        jw_raw(w, i ? ",{\"name\":" : "{\"name\":");
        jw_str_or_null(w, m->name);
        JW_LIT(w, ",\"value\":");
        jw_str_or_null(w, m->value);
        if (m->unit != CRASH_UNIT_NONE) {
            jw_raw(w, m->unit == CRASH_UNIT_MS ? ",\"ms\":" : ",\"bytes\":");
            jw_u64(w, m->amount);
        }
        JW_LIT(w, "}");
    }
    JW_LIT(w, "]");
}

/* The end of a JSON answer written into out from start: SYMD_OK, or, when
 * an append failed, out as it was and SYMD_E_TOO_LARGE (a failed append is
 * the limit or memory: like /v1/symbolicate, said as the limit). */
static symd_status answer_done(const jsonw *w, dynbuf *out, size_t start, symd_err *err)
{
    if (w->ok)
        return SYMD_OK;
    out->len = start;
    if (out->data)
        out->data[start] = 0;
    return symd_fail(err, SYMD_E_TOO_LARGE, "the crash answer does not fit in %zu bytes",
                     out->max);
}

/* "warnings" (the parser's, and one per call tree deeper than the JSON
 * nests) and "warnings_dropped", as keys of the object w is in. */
static void write_warnings(jsonw *w, bool *fk, const crash_report *r)
{
    jw_key(w, fk, "warnings");
    JW_LIT(w, "[");
    bool wf = true;
    for (size_t i = 0; i < r->nwarnings; i++) {
        jw_raw(w, wf ? "{\"where\":" : ",{\"where\":");
        wf = false;
        jw_str_or_null(w, r->warnings[i].where);
        JW_LIT(w, ",\"message\":");
        jw_str_or_null(w, r->warnings[i].message);
        JW_LIT(w, "}");
    }
    for (size_t t = 0; t < r->nthreads; t++) {
        if (!tree_too_deep(&r->threads[t]))
            continue;
        char where[48];
        snprintf(where, sizeof where, "threads[%zu].tree", t);
        jw_raw(w, wf ? "{\"where\":" : ",{\"where\":");
        wf = false;
        jw_str(w, where);
        JW_LIT(w, ",\"message\":\"the call tree is deeper than "
                  "960 levels: deeper nodes are listed under their ancestor at level 960; "
                  "each frame's depth is in frames\"}");
    }
    JW_LIT(w, "]");
    jw_key(w, fk, "warnings_dropped");
    jw_u64(w, r->nwarnings_dropped);
}

symd_status crash_write_json(const crash_report *r, const crash_symbolication *s,
                             int64_t id, dynbuf *out, symd_err *err)
{
    const arena_t *a = s->arena;
    if (!a || !s->frames || !s->image_status)
        return symd_fail(err, SYMD_E_INVALID, "the report was not symbolicated");
    size_t maxf = 1;
    for (size_t t = 0; t < r->nthreads; t++)
        if (r->threads[t].is_tree && r->threads[t].nframes > maxf)
            maxf = r->threads[t].nframes;
    uint32_t *sd = malloc(maxf * sizeof *sd);
    bool *sfirst = malloc(maxf * sizeof *sfirst);
    if (!sd || !sfirst) {
        free(sd);
        free(sfirst);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    size_t start = out->len;
    jsonw w;
    jw_init(&w, out);
    bool fk = true;
    write_head(&w, &fk, r, id);
    jw_key(&w, &fk, "exception");
    JW_LIT(&w, "{\"type\":");
    jw_str_or_null(&w, r->exception_type);
    JW_LIT(&w, ",\"signal\":");
    jw_str_or_null(&w, r->exception_signal);
    JW_LIT(&w, ",\"codes\":");
    jw_str_or_null(&w, r->exception_codes);
    JW_LIT(&w, "}");
    jw_key(&w, &fk, "termination");
    jw_str_or_null(&w, r->termination);
    jw_key(&w, &fk, "crashed_thread");
    if (r->crashed_thread >= 0)
        jw_i64(&w, r->crashed_thread);
    else
        JW_LIT(&w, "null");
    jw_key(&w, &fk, "signature");
    jw_str_or_null(&w, s->signature);
    jw_key(&w, &fk, "app_specific");
    jw_str_or_null(&w, r->app_specific);
    jw_key(&w, &fk, "panic_string");
    jw_str_or_null(&w, r->panic_string);

    write_warnings(&w, &fk, r);

    jw_key(&w, &fk, "processes");
    JW_LIT(&w, "[");
    for (size_t i = 0; i < r->nprocesses; i++) {
        const crash_process *p = &r->processes[i];
        jw_raw(&w, i ? ",{\"pid\":" : "{\"pid\":");
        if (p->pid >= 0)
            jw_i64(&w, p->pid);
        else
            JW_LIT(&w, "null");
        JW_LIT(&w, ",\"name\":");
        jw_str_or_null(&w, p->name);
        JW_LIT(&w, ",\"path\":");
        jw_str_or_null(&w, p->path);
        JW_LIT(&w, ",\"detail\":");
        jw_str_or_null(&w, p->detail);
        JW_LIT(&w, "}");
    }
    JW_LIT(&w, "]");

    jw_key(&w, &fk, "threads");
    JW_LIT(&w, "[");
    size_t k = 0;
    for (size_t t = 0; t < r->nthreads && w.ok; t++) {
        const crash_thread *th = &r->threads[t];
        jw_raw(&w, t ? ",{\"id\":" : "{\"id\":");
        if (th->number >= 0)
            jw_i64(&w, th->number);
        else
            JW_LIT(&w, "null");
        JW_LIT(&w, ",\"name\":");
        jw_str_or_null(&w, th->name);
        JW_LIT(&w, ",\"queue\":");
        jw_str_or_null(&w, th->queue);
        jw_raw(&w, th->crashed ? ",\"crashed\":true,\"role\":" : ",\"crashed\":false,\"role\":");
        jw_str(&w, role_name(th->role));
        JW_LIT(&w, ",\"title\":");
        jw_str_or_null(&w, th->title);
        JW_LIT(&w, ",\"process\":");
        write_index_or_null(&w, th->process, r->nprocesses);
        JW_LIT(&w, ",\"count\":");
        if (th->is_tree || th->count)
            jw_u64(&w, th->count);
        else
            JW_LIT(&w, "null");
        /* a spindump's "<truncated backtrace>": the walk was cut on the device */
        jw_raw(&w, th->truncated ? ",\"truncated\":true" : ",\"truncated\":false");
        JW_LIT(&w, ",\"frames\":[");
        bool ff = true;
        for (size_t f = 0; f < th->nframes && w.ok; f++, k++) {
            const crash_symframe *sf = &s->frames[k];
            long key = k < r->total_frames ? a->frame_key[k] : -1;
            bool report = k < r->total_frames && a->frame_report[k];
            if (!ff)
                JW_LIT(&w, ",");
            ff = false;
            if (sf->nlevels == 0) {
                /* nothing known beyond the address and image */
                bool pk = false;
                JW_LIT(&w, "{\"address\":");
                jw_hex(&w, th->frames[f].address);
                JW_LIT(&w, ",\"status\":");
                jw_str(&w, bare_status(sf->status));
                JW_LIT(&w, ",\"image\":");
                jw_str_or_null(&w, sf->image);
                if (th->frames[f].inlined)
                    JW_LIT(&w, ",\"inlined\":true");
                else
                    JW_LIT(&w, ",\"inlined\":false");
                write_trust(&w, &pk, &th->frames[f]);
                const sym_level *o =
                    key >= 0 && a->frame_nlv[k]
                        ? &a->res.levels[a->frame_lv0[k] + a->frame_nlv[k] - 1]
                        : NULL;
                /* the answer's UUID when it gave one (found by address) */
                if (o && o->uuid) {
                    JW_LIT(&w, ",\"uuid\":");
                    jw_str(&w, o->uuid);
                }
                write_place(&w, &pk, r, th, f, o, NULL);
                JW_LIT(&w, "}");
                continue;
            }
            for (size_t l = 0; l < sf->nlevels; l++) {
                const sym_level *o =
                    key >= 0 && l < a->frame_nlv[k] ? &a->res.levels[a->frame_lv0[k] + l] : NULL;
                if (l)
                    JW_LIT(&w, ",");
                write_level(&w, r, th, f, o, sf, report, l + 1 == sf->nlevels);
            }
        }
        JW_LIT(&w, "]");
        if (th->is_tree) {
            JW_LIT(&w, ",\"tree\":");
            write_tree(&w, th, sd, sfirst);
        }
        JW_LIT(&w, "}");
    }
    JW_LIT(&w, "]");

    jw_key(&w, &fk, "images");
    JW_LIT(&w, "[");
    long app = crash_app_image(r);
    for (size_t i = 0; i < r->nimages; i++) {
        const crash_image *im = &r->images[i];
        jw_raw(&w, i ? ",{\"uuid\":" : "{\"uuid\":");
        if (im->has_uuid) {
            char u[37];
            uuid_format(im->uuid, u);
            jw_str(&w, u);
        } else {
            JW_LIT(&w, "null");
        }
        JW_LIT(&w, ",\"arch\":");
        jw_str_or_null(&w, im->arch);
        JW_LIT(&w, ",\"name\":");
        jw_str_or_null(&w, im->name);
        JW_LIT(&w, ",\"load_address\":");
        jw_hex(&w, im->load_address);
        JW_LIT(&w, ",\"status\":");
        jw_str(&w, crash_image_status_name(s->image_status[i]));
        jw_raw(&w, s->image_debug_info[i] ? ",\"debug_info\":true" : ",\"debug_info\":false");
        jw_raw(&w, (long)i == app ? ",\"app\":true" : ",\"app\":false");
        jw_raw(&w, s->image_system[i] ? ",\"system\":true" : ",\"system\":false");
        if (s->image_unwind && s->image_unwind[i]) {
            JW_LIT(&w, ",\"unwind\":");
            jw_str(&w, s->image_unwind[i]);
        }
        JW_LIT(&w, ",\"process\":");
        write_index_or_null(&w, im->process, r->nprocesses);
        JW_LIT(&w, "}");
    }
    JW_LIT(&w, "]}");
    free(sd);
    free(sfirst);
    return answer_done(&w, out, start, err);
}

symd_status crash_write_summary(const crash_report *r, const crash_symbolication *s,
                                int64_t id, dynbuf *out, symd_err *err)
{
    if (!s->frames || !s->image_status)
        return symd_fail(err, SYMD_E_INVALID, "the report was not symbolicated");
    size_t start = out->len;
    jsonw w;
    jw_init(&w, out);
    bool fk = true;
    write_head(&w, &fk, r, id);
    jw_key(&w, &fk, "exception_type");
    jw_str_or_null(&w, r->exception_type);
    jw_key(&w, &fk, "crashed_thread");
    if (r->crashed_thread >= 0)
        jw_i64(&w, r->crashed_thread);
    else
        JW_LIT(&w, "null");
    jw_key(&w, &fk, "signature");
    jw_str_or_null(&w, s->signature);
    /* the frames by status, as in the full answer's "status" of each */
    uint64_t n[4] = {0};
    for (size_t i = 0; i < r->total_frames; i++)
        if ((unsigned)s->frames[i].status < 4)
            n[s->frames[i].status]++;
    jw_key(&w, &fk, "frames");
    JW_LIT(&w, "{\"total\":");
    jw_u64(&w, r->total_frames);
    static const struct {
        crash_sym_status st;
        const char *key;
    } order[4] = {{CSYM_SYMBOLICATED, ",\"symbolicated\":"},
                  {CSYM_NO_SYMBOL, ",\"no_symbol\":"},
                  {CSYM_MISSING_IMAGE, ",\"missing_image\":"},
                  {CSYM_UNKNOWN_IMAGE, ",\"unknown_image\":"}};
    for (int i = 0; i < 4; i++) {
        jw_raw(&w, order[i].key);
        jw_u64(&w, n[order[i].st]);
    }
    JW_LIT(&w, "}");
    /* the app's own image when it was never uploaded: what to upload (an OS
     * process's own binary is imported with its OS, not uploaded) */
    jw_key(&w, &fk, "needs_upload");
    long app = crash_app_image(r);
    if (app >= 0 && r->images[app].has_uuid && s->image_status[app] == CIMG_MISSING &&
        !(s->image_system && s->image_system[app])) {
        char u[37];
        uuid_format(r->images[app].uuid, u);
        JW_LIT(&w, "{\"uuid\":");
        jw_str(&w, u);
        JW_LIT(&w, ",\"arch\":");
        jw_str_or_null(&w, r->images[app].arch);
        JW_LIT(&w, ",\"name\":");
        jw_str_or_null(&w, r->images[app].name);
        JW_LIT(&w, "}");
    } else {
        JW_LIT(&w, "null");
    }
    write_warnings(&w, &fk, r);
    JW_LIT(&w, "}");
    return answer_done(&w, out, start, err);
}

/* Contract in crashsym.h. */
store_crash_image *crash_needed_images(const crash_report *r, const crash_symbolication *sym,
                                       size_t *n)
{
    store_crash_image *v = calloc(r->nimages ? r->nimages : 1, sizeof *v);
    bool *used = calloc(r->nimages ? r->nimages : 1, sizeof *used);
    *n = 0;
    if (!v || !used) {
        free(v);
        free(used);
        return NULL;
    }
    for (size_t t = 0; t < r->nthreads; t++)
        for (size_t f = 0; f < r->threads[t].nframes; f++) {
            long i = r->threads[t].frames[f].image;
            if (i >= 0 && (size_t)i < r->nimages)
                used[i] = true;
        }
    long app = crash_app_image(r);
    for (size_t i = 0; i < r->nimages; i++) {
        if (!r->images[i].has_uuid || (!used[i] && (long)i != app))
            continue;
        memcpy(v[*n].uuid, r->images[i].uuid, 16);
        v[*n].arch = r->images[i].arch ? r->images[i].arch : "";
        v[*n].name = r->images[i].name ? r->images[i].name : "";
        v[*n].system = sym && sym->image_system ? sym->image_system[i] : r->images[i].system;
        /* an OS process's own binary is not the user's to upload */
        v[*n].app = (long)i == app && !v[*n].system;
        (*n)++;
    }
    free(used);
    return v;
}

/* Contract in crashsym.h. */
store_crash crash_store_record(const crash_report *r, const crash_symbolication *sym,
                               const uint8_t *original, size_t len)
{
    store_crash sc = {0};
    sc.format = (char *)crash_format_name(r->format);
    sc.kind = (char *)crash_kind_name(r->kind);
    sc.bug_type = r->bug_type;
    sc.process = r->process;
    sc.bundle_id = r->bundle_id;
    sc.app_version = r->app_version;
    sc.os_version = r->os_version;
    sc.hardware_model = r->hardware_model;
    sc.incident_id = r->incident_id;
    sc.exception_type = r->exception_type;
    sc.signature = sym->signature;
    sc.grouping_rule = sym->grouping_rule;
    sc.original = (uint8_t *)(original ? original : (const uint8_t *)"");
    sc.original_len = original ? len : 0;
    return sc;
}

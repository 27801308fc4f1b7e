/* Symbolication of a parsed backtrace against the store. */
#include "symbolicate.h"

#include "../demangle/demangle.h"

#include <stdlib.h>
#include <string.h>

#include "../util/hex.h"
#include "../util/jsonw.h"
#include "../util/metered.h" /* last: counts this file's allocations */

/* A request image with what the store knows of it. */
typedef struct {
    const bt_image *req;
    store_loaded *img; /* NULL when missing */
    bool placed;       /* start is known */
    uint64_t start, end; /* [start, end) in the crashed process; end 0 = unknown */
    uint64_t slide;
    const char *uuid; /* the answer's image's (sym_image.uuid) */
} rimage;

static int cmp_start(const void *a, const void *b)
{
    const rimage *x = *(const rimage *const *)a, *y = *(const rimage *const *)b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->img == NULL) - (y->img == NULL); /* found images first */
}

/* The image whose range holds addr; else, for an image we could not find
 * (and so whose size we may not know), the nearest one starting below. */
static const rimage *image_for(rimage **sorted, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid]->start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Ranges of found images may nest or overlap in a hostile request; scan
     * back a little for one that holds addr. */
    for (size_t i = lo, steps = 0; i > 0 && steps < 8; i--, steps++) {
        const rimage *r = sorted[i - 1];
        if (r->end && addr < r->end)
            return r;
    }
    if (lo > 0 && !sorted[lo - 1]->img && !sorted[lo - 1]->end)
        return sorted[lo - 1];
    return NULL;
}

typedef enum { ARCH_UNKNOWN, ARCH_ARM64, ARCH_ARM32, ARCH_OTHER } arch_family;

static arch_family family_of(const char *arch)
{
    if (!arch || !arch[0])
        return ARCH_UNKNOWN;
    if (strncmp(arch, "arm64", 5) == 0)
        return ARCH_ARM64;
    if (strncmp(arch, "arm", 3) == 0 || strncmp(arch, "thumb", 5) == 0)
        return ARCH_ARM32;
    return ARCH_OTHER;
}

#define KERNEL_BASE 0xFFFF000000000000ull
#define ARM64_USER_MASK 0x0000007FFFFFFFFFull  /* 39-bit user VA */
#define CANONICAL_MASK 0x00007FFFFFFFFFFFull   /* 47-bit user VA */

/* See symbolicate.h for the rule. */
uint64_t symbolicate_lookup_address(uint64_t addr, const char *arch)
{
    if (addr >= KERNEL_BASE)
        return addr;
    switch (family_of(arch)) {
    case ARCH_ARM64:
        return addr & ARM64_USER_MASK;
    case ARCH_ARM32:
        /* A 32-bit process has no high bits to strip; bit 0 set marks a
         * Thumb return address, the instruction starts one byte lower. */
        return addr & CANONICAL_MASK & ~(uint64_t)1;
    case ARCH_OTHER:
        return addr & CANONICAL_MASK; /* a canonical address stays as it is */
    default:
        return addr & ~CANONICAL_MASK ? addr & ARM64_USER_MASK : addr;
    }
}

/* The bytes a return address lies past its call instruction's start, for
 * line and inline lookups: 4 on arm64, 2 on 32-bit ARM, 1 elsewhere. On
 * 32-bit ARM the call is a 4-byte BL/BLX (ARM or Thumb-2) or a 2-byte
 * Thumb BLX register: 2 back from the return address (its Thumb bit
 * already cleared) lands inside either, so one delta serves both. */
static uint64_t caller_delta(const char *arch)
{
    if (strncmp(arch, "arm64", 5) == 0)
        return 4;
    return strncmp(arch, "arm", 3) == 0 ? 2 : 1;
}

/* How names are shown: Swift's full form on request; an index written
 * before Swift names were demangled (old) leaves them raw, so they are
 * demangled here, per answer. */
typedef struct {
    bool full; /* the request asked for ?demangle=full */
    bool old;  /* the index holds Swift names raw */
} names_how;

/* Room for one more level; false when out of memory. */
static bool level_room(sym_result *res)
{
    if (res->nlevels < res->levels_cap)
        return true;
    size_t cap = res->levels_cap ? res->levels_cap * 2 : 64;
    sym_level *l = realloc(res->levels, cap * sizeof *l);
    if (!l)
        return false;
    res->levels = l;
    res->levels_cap = cap;
    return true;
}

/* The names of a level: display and raw, the display one made here when
 * how asks (kept in res->made). false when out of memory. */
static bool set_names(sym_result *res, sym_level *l, const char *display, const char *raw,
                      names_how how)
{
    l->symbol = display;
    l->mangled = raw;
    if (!((how.full || (how.old && (display == raw || strcmp(display, raw) == 0))) &&
          symd_is_swift(raw)))
        return true;
    if (res->nmade == res->made_cap) {
        size_t cap = res->made_cap ? res->made_cap * 2 : 16;
        char **m = realloc(res->made, cap * sizeof *m);
        if (!m)
            return false;
        res->made = m;
        res->made_cap = cap;
    }
    char *made = how.full ? symd_demangle_full(raw) : symd_demangle(raw);
    if (made) {
        res->made[res->nmade++] = made;
        l->symbol = made;
    }
    return true;
}

static void set_place(sym_level *l, const lineframe *lf)
{
    if (!lf->file)
        return;
    l->file = lf->file;
    l->line = lf->line;
    l->column = lf->column;
}

/* The head every level of a found image has. */
static void found_head(sym_level *l, const bt_frame *f, const rimage *r, uint64_t vmaddr,
                       bool found)
{
    memset(l, 0, sizeof *l);
    l->status = found ? SYM_SYMBOLICATED : SYM_NO_SYMBOL;
    l->address = f->address;
    l->image = r->img->meta.name;
    l->uuid = r->uuid;
    l->arch = r->img->meta.arch;
    l->has_vmaddr = true;
    l->vmaddr = vmaddr;
}

/* One input frame's levels: for an image with line data, one per inlined
 * level (innermost first) and then the function holding the address;
 * otherwise one. lookup is the frame's address stripped for lookups
 * (symbolicate_lookup_address); levels say f->address, as sent. index is
 * the frame's place in its thread (adjust "auto" treats frame 0 as exact).
 * false when out of memory. */
static bool add_frame(sym_result *res, const bt_frame *f, uint64_t lookup, size_t index,
                      const rimage *r, bool full, symbolicate_counts *c)
{
    if (!r || !r->img) {
        if (!level_room(res))
            return false;
        sym_level *l = &res->levels[res->nlevels++];
        memset(l, 0, sizeof *l);
        l->address = f->address;
        if (!r) {
            c->unknown_image++;
            l->status = SYM_UNKNOWN_IMAGE;
            return true;
        }
        c->missing_image++;
        l->status = SYM_MISSING_IMAGE;
        l->image = r->req->name[0] ? r->req->name : NULL;
        l->uuid = r->uuid;
        l->arch = r->req->arch[0] ? r->req->arch : NULL;
        return true;
    }
    uint64_t vmaddr = lookup - r->slide;
    names_how sym_how = {full, r->img->sym.version < SYMINDEX_VERSION};
    names_how line_how = {full, r->img->has_lines && r->img->lines.version < LINEINDEX_VERSION};
    symlook look;
    symindex_lookup(&r->img->sym, vmaddr, &look);

    linelook *ll = NULL, llbuf;
    if (r->img->has_lines) {
        bool caller = f->adjust == BT_ADJUST_CALLER ||
                      (f->adjust == BT_ADJUST_AUTO && index > 0);
        uint64_t delta = caller ? caller_delta(r->img->meta.arch) : 0;
        if (vmaddr >= delta && lineindex_lookup(&r->img->lines, vmaddr - delta, &llbuf))
            ll = &llbuf;
    }
    const lineframe *outer = ll ? &ll->f[ll->n - 1] : NULL;
    if (outer && ll->outer_from_symbols && look.status != SYMLOOK_SYMBOL) {
        /* The index left the function's name to the symbol table, whose
         * symbol at the function's start names it. */
        symindex_lookup(&r->img->sym, ll->func_start, &look);
        if (look.status == SYMLOOK_SYMBOL)
            look.offset = vmaddr - look.sym_addr;
    }
    bool found = look.status == SYMLOOK_SYMBOL || (outer && outer->mangled);
    if (found)
        c->symbolicated++;
    else
        c->no_symbol++;

    for (size_t i = 0; ll && i + 1 < ll->n; i++) {
        const lineframe *lf = &ll->f[i];
        if (!level_room(res))
            return false;
        sym_level *l = &res->levels[res->nlevels++];
        found_head(l, f, r, vmaddr, true);
        l->inlined = true;
        if (lf->mangled && !set_names(res, l, lf->name, lf->mangled, line_how))
            return false;
        set_place(l, lf);
    }
    if (!level_room(res))
        return false;
    sym_level *l = &res->levels[res->nlevels++];
    found_head(l, f, r, vmaddr, found);
    /* Like llvm-symbolizer, the symbol table names the outermost function;
     * DWARF fills in where the symbol table has nothing. */
    if (look.status == SYMLOOK_SYMBOL) {
        if (!set_names(res, l, look.name, look.mangled, sym_how))
            return false;
    } else if (outer && outer->mangled) {
        if (!set_names(res, l, outer->name, outer->mangled, line_how))
            return false;
        look.has_sym_addr = true;
        look.sym_addr = ll->func_start;
        look.offset = vmaddr - ll->func_start;
    }
    if (look.has_sym_addr) {
        l->has_sym_addr = true;
        l->sym_addr = look.sym_addr;
        l->offset = look.offset;
    }
    if (outer)
        set_place(l, outer);
    return true;
}

static const char *const status_names[] = {
    [SYM_SYMBOLICATED] = "\"symbolicated\"",
    [SYM_NO_SYMBOL] = "\"no_symbol\"",
    [SYM_MISSING_IMAGE] = "\"missing_image\"",
    [SYM_UNKNOWN_IMAGE] = "\"unknown_image\"",
};

/* Contract in symbolicate.h. */
void symbolicate_write_level(jsonw *w, const sym_level *l, unsigned omit)
{
    JW_LIT(w, "\"address\":");
    jw_hex(w, l->address);
    JW_LIT(w, ",\"status\":");
    jw_raw(w, status_names[l->status]);
    if (l->image) {
        JW_LIT(w, ",\"image\":");
        jw_str(w, l->image);
    }
    if (l->uuid) {
        JW_LIT(w, ",\"uuid\":");
        jw_str(w, l->uuid);
    }
    if (l->arch) {
        JW_LIT(w, ",\"arch\":");
        jw_str(w, l->arch);
    }
    if (l->has_vmaddr) {
        JW_LIT(w, ",\"vmaddr\":");
        jw_hex(w, l->vmaddr);
    }
    if (l->symbol && !(omit & SYM_OMIT_NAMES)) {
        JW_LIT(w, ",\"symbol\":");
        size_t at = w->b->len;
        jw_str(w, l->symbol);
        size_t n = w->b->len - at;
        JW_LIT(w, ",\"mangled\":");
        if (l->symbol == l->mangled || strcmp(l->symbol, l->mangled) == 0)
            jw_copy(w, at, n);
        else
            jw_str(w, l->mangled);
    }
    if (l->has_sym_addr) {
        JW_LIT(w, ",\"symbol_address\":");
        jw_hex(w, l->sym_addr);
        if (!(omit & SYM_OMIT_OFFSET)) {
            JW_LIT(w, ",\"offset\":");
            jw_u64(w, l->offset);
        }
    }
    if (l->file && !(omit & SYM_OMIT_PLACE)) {
        JW_LIT(w, ",\"file\":");
        jw_str(w, l->file);
        JW_LIT(w, ",\"line\":");
        jw_u64(w, l->line);
        if (l->column) {
            JW_LIT(w, ",\"column\":");
            jw_u64(w, l->column);
        }
    }
    if (!(omit & SYM_OMIT_INLINED))
        jw_raw(w, l->inlined ? ",\"inlined\":true" : ",\"inlined\":false");
}

/* The arch a lookup strips an address for: the found image's, else the
 * one the request names for it, else fallback. r may be NULL. */
static const char *rimage_arch(const rimage *r, const char *fallback)
{
    if (r && r->img && r->img->meta.arch[0])
        return r->img->meta.arch;
    if (r && r->req->arch[0])
        return r->req->arch;
    return fallback;
}

/* The arch for frames of no given image: the request images' when they
 * agree on a family (arm64 and arm64e do), else NULL (unknown). */
static const char *request_arch(const rimage *imgs, size_t n)
{
    const char *arch = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *a = rimage_arch(&imgs[i], NULL);
        if (!a)
            continue;
        if (!arch)
            arch = a;
        else if (family_of(a) != family_of(arch))
            return NULL;
    }
    return arch;
}

void sym_result_free(sym_result *r)
{
    if (r->loaded)
        for (size_t i = 0; i < r->nimages; i++)
            store_release(r->st, r->loaded[i]);
    for (size_t i = 0; i < r->nmade; i++)
        free(r->made[i]);
    free(r->made);
    free(r->loaded);
    free(r->levels);
    free(r->frame_first);
    free(r->frame_count);
    free(r->images);
    memset(r, 0, sizeof *r);
}

symd_status symbolicate_levels(store *s, const bt_request *req, sym_result *out,
                               symbolicate_counts *counts, symd_err *err)
{
    symbolicate_counts local = {0};
    if (!counts)
        counts = &local;
    memset(out, 0, sizeof *out);
    out->st = s;
    symd_status st = SYMD_OK;
    size_t nimg = req->nimages, nfr = 0;
    for (size_t t = 0; t < req->nthreads; t++)
        nfr += req->threads[t].nframes;
    rimage *imgs = calloc(nimg ? nimg : 1, sizeof *imgs);
    rimage **sorted = calloc(nimg ? nimg : 1, sizeof *sorted);
    out->loaded = calloc(nimg ? nimg : 1, sizeof *out->loaded);
    out->images = calloc(nimg ? nimg : 1, sizeof *out->images);
    out->frame_first = malloc((nfr ? nfr : 1) * sizeof *out->frame_first);
    out->frame_count = malloc((nfr ? nfr : 1) * sizeof *out->frame_count);
    size_t nsorted = 0;
    if (!imgs || !sorted || !out->loaded || !out->images || !out->frame_first ||
        !out->frame_count) {
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    out->nimages = nimg;
    for (size_t i = 0; i < nimg; i++) {
        rimage *r = &imgs[i];
        const bt_image *bi = &req->images[i];
        r->req = bi;
        uuid_format(bi->uuid, out->images[i].uuid);
        r->uuid = out->images[i].uuid;
        symd_err lerr = {0};
        st = store_acquire(s, bi->uuid, bi->arch[0] ? bi->arch : NULL, &r->img, &lerr);
        if (st == SYMD_E_NOT_FOUND) {
            r->img = NULL;
            st = SYMD_OK;
        } else if (st != SYMD_OK) {
            symd_fail(err, st, "images[%zu]: %s", i, lerr.msg);
            goto out;
        }
        out->loaded[i] = r->img;
        if (r->img) {
            uint64_t vm = r->img->meta.text_vmaddr;
            r->start = bi->has_load ? bi->load_address : vm + bi->slide;
            r->slide = r->start - vm; /* modular: a negative slide works too */
            r->end = r->start + r->img->meta.text_size;
            if (r->end < r->start)
                r->end = UINT64_MAX;
            r->placed = true;
        } else if (bi->has_load) {
            r->start = bi->load_address;
            r->end = bi->has_size ? bi->load_address + bi->size : 0;
            if (bi->has_size && r->end < r->start)
                r->end = UINT64_MAX;
            r->placed = true;
        }
        if (r->placed)
            sorted[nsorted++] = r;
        sym_image *si = &out->images[i];
        const char *arch = r->img ? r->img->meta.arch : bi->arch;
        si->arch = arch[0] ? arch : NULL;
        si->name = r->img ? r->img->meta.name : NULL;
        si->found = r->img != NULL;
        si->placed = r->placed;
        si->load_address = r->start;
    }
    qsort(sorted, nsorted, sizeof *sorted, cmp_start);
    const char *default_arch = request_arch(imgs, nimg);

    size_t k = 0;
    for (size_t t = 0; t < req->nthreads; t++) {
        const bt_thread *th = &req->threads[t];
        for (size_t i = 0; i < th->nframes; i++, k++) {
            const bt_frame *f = &th->frames[i];
            const rimage *r;
            uint64_t lookup;
            if (f->image >= 0) {
                r = &imgs[f->image];
                lookup = symbolicate_lookup_address(f->address, rimage_arch(r, default_arch));
            } else {
                r = image_for(sorted, nsorted,
                              symbolicate_lookup_address(f->address, default_arch));
                lookup = symbolicate_lookup_address(f->address, rimage_arch(r, default_arch));
            }
            out->frame_first[k] = out->nlevels;
            if (!add_frame(out, f, lookup, i, r, req->full_names, counts)) {
                st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
                goto out;
            }
            out->frame_count[k] = out->nlevels - out->frame_first[k];
        }
    }
out:
    free(imgs);
    free(sorted);
    if (st != SYMD_OK)
        sym_result_free(out);
    return st;
}

symd_status symbolicate(store *s, const bt_request *req, dynbuf *out,
                        symbolicate_counts *counts, symd_err *err)
{
    sym_result res;
    symd_status st = symbolicate_levels(s, req, &res, counts, err);
    if (st != SYMD_OK)
        return st;
    jsonw w;
    jw_init(&w, out);
    JW_LIT(&w, "{\"threads\":[");
    size_t k = 0;
    for (size_t t = 0; t < req->nthreads; t++) {
        const bt_thread *th = &req->threads[t];
        jw_raw(&w, t ? ",{" : "{");
        if (th->id_kind == BT_ID_INT) {
            JW_LIT(&w, "\"id\":");
            jw_i64(&w, th->id_int);
            JW_LIT(&w, ",");
        } else if (th->id_kind == BT_ID_STRING) {
            JW_LIT(&w, "\"id\":");
            jw_str(&w, th->id_str);
            JW_LIT(&w, ",");
        }
        if (th->name) {
            JW_LIT(&w, "\"name\":");
            jw_str(&w, th->name);
            JW_LIT(&w, ",");
        }
        jw_raw(&w, th->crashed ? "\"crashed\":true,\"frames\":["
                               : "\"crashed\":false,\"frames\":[");
        for (size_t i = 0; i < th->nframes && w.ok; i++, k++) {
            size_t a = res.frame_first[k], n = res.frame_count[k];
            for (size_t l = 0; l < n; l++) {
                jw_raw(&w, i || l ? ",{" : "{");
                symbolicate_write_level(&w, &res.levels[a + l], 0);
                JW_LIT(&w, "}");
            }
        }
        if (!w.ok)
            break;
        JW_LIT(&w, "]}");
    }
    JW_LIT(&w, "],\"images\":[");
    for (size_t i = 0; i < res.nimages; i++) {
        const sym_image *im = &res.images[i];
        jw_raw(&w, i ? ",{\"uuid\":" : "{\"uuid\":");
        jw_str(&w, im->uuid);
        if (im->arch) {
            JW_LIT(&w, ",\"arch\":");
            jw_str(&w, im->arch);
        }
        if (im->found) {
            JW_LIT(&w, ",\"name\":");
            jw_str(&w, im->name);
        }
        if (im->placed) {
            JW_LIT(&w, ",\"load_address\":");
            jw_hex(&w, im->load_address);
        }
        jw_raw(&w, im->found ? ",\"status\":\"found\"}" : ",\"status\":\"missing\"}");
    }
    JW_LIT(&w, "]}");
    if (!w.ok)
        st = symd_fail(err, SYMD_E_TOO_LARGE, "response exceeds %zu bytes", out->max);
    sym_result_free(&res);
    return st;
}

symd_status symbolicate_json(store *s, const char *body, size_t len, bool full_names,
                             dynbuf *out, symbolicate_counts *counts, symd_err *err)
{
    bt_request req;
    symd_status st = bt_parse(body, len, &req, err);
    if (st != SYMD_OK)
        return st;
    mem_input_read(); /* the answer may be far larger than the request */
    req.full_names = full_names;
    st = symbolicate(s, &req, out, counts, err);
    bt_free(&req);
    return st;
}

/* Symbolication of a parsed backtrace against the store. */
#include "symbolicate.h"

#include "../demangle/demangle.h"

#include <stdlib.h>
#include <string.h>

#include "../util/hex.h"
#include "../util/jsonw.h"

/* A request image with what the store knows of it. */
typedef struct {
    const bt_image *req;
    store_loaded *img; /* NULL when missing */
    bool placed;       /* start is known */
    uint64_t start, end; /* [start, end) in the crashed process; end 0 = unknown */
    uint64_t slide;
    char uuid[37];
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

/* "symbol" and "mangled" of a name pair, written once when they agree. */
static void write_names(jsonw *w, const char *display, const char *raw, names_how how)
{
    char *made = NULL;
    if ((how.full || (how.old && (display == raw || strcmp(display, raw) == 0))) &&
        symd_is_swift(raw))
        made = how.full ? symd_demangle_full(raw) : symd_demangle(raw);
    if (made)
        display = made;
    JW_LIT(w, ",\"symbol\":");
    size_t at = w->b->len;
    jw_str(w, display);
    size_t n = w->b->len - at;
    JW_LIT(w, ",\"mangled\":");
    if (display == raw || strcmp(display, raw) == 0)
        jw_copy(w, at, n);
    else
        jw_str(w, raw);
    free(made);
}

static void write_place(jsonw *w, const lineframe *lf)
{
    if (!lf->file)
        return;
    JW_LIT(w, ",\"file\":");
    jw_str(w, lf->file);
    JW_LIT(w, ",\"line\":");
    jw_u64(w, lf->line);
    if (lf->column) {
        JW_LIT(w, ",\"column\":");
        jw_u64(w, lf->column);
    }
}

/* Fields every frame of a found image starts with. */
static void write_head(jsonw *w, const bt_frame *f, const rimage *r, uint64_t vmaddr,
                       bool found)
{
    JW_LIT(w, "{\"address\":");
    jw_hex(w, f->address);
    jw_raw(w, found ? ",\"status\":\"symbolicated\",\"image\":"
                    : ",\"status\":\"no_symbol\",\"image\":");
    jw_str(w, r->img->meta.name);
    JW_LIT(w, ",\"uuid\":");
    jw_str(w, r->uuid);
    JW_LIT(w, ",\"arch\":");
    jw_str(w, r->img->meta.arch);
    JW_LIT(w, ",\"vmaddr\":");
    jw_hex(w, vmaddr);
}

/* One input frame: for an image with line data, one output frame per
 * inlined level (innermost first) and then the function holding the
 * address; otherwise one frame. lookup is the frame's address stripped for
 * lookups (symbolicate_lookup_address); answers say f->address, as sent.
 * index is the frame's place in its thread (adjust "auto" treats frame 0 as
 * exact). */
static void write_frame(jsonw *w, const bt_frame *f, uint64_t lookup, size_t index,
                        const rimage *r, bool full, symbolicate_counts *c)
{
    if (!r) {
        c->unknown_image++;
        JW_LIT(w, "{\"address\":");
        jw_hex(w, f->address);
        JW_LIT(w, ",\"status\":\"unknown_image\",\"inlined\":false}");
        return;
    }
    if (!r->img) {
        c->missing_image++;
        JW_LIT(w, "{\"address\":");
        jw_hex(w, f->address);
        JW_LIT(w, ",\"status\":\"missing_image\"");
        if (r->req->name[0]) {
            JW_LIT(w, ",\"image\":");
            jw_str(w, r->req->name);
        }
        JW_LIT(w, ",\"uuid\":");
        jw_str(w, r->uuid);
        if (r->req->arch[0]) {
            JW_LIT(w, ",\"arch\":");
            jw_str(w, r->req->arch);
        }
        JW_LIT(w, ",\"inlined\":false}");
        return;
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
        write_head(w, f, r, vmaddr, true);
        if (lf->mangled)
            write_names(w, lf->name, lf->mangled, line_how);
        write_place(w, lf);
        JW_LIT(w, ",\"inlined\":true},");
    }
    write_head(w, f, r, vmaddr, found);
    /* Like llvm-symbolizer, the symbol table names the outermost function;
     * DWARF fills in where the symbol table has nothing. */
    if (look.status == SYMLOOK_SYMBOL) {
        write_names(w, look.name, look.mangled, sym_how);
    } else if (outer && outer->mangled) {
        write_names(w, outer->name, outer->mangled, line_how);
        look.has_sym_addr = true;
        look.sym_addr = ll->func_start;
        look.offset = vmaddr - ll->func_start;
    }
    if (look.has_sym_addr) {
        JW_LIT(w, ",\"symbol_address\":");
        jw_hex(w, look.sym_addr);
        JW_LIT(w, ",\"offset\":");
        jw_u64(w, look.offset);
    }
    if (outer)
        write_place(w, outer);
    JW_LIT(w, ",\"inlined\":false}");
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

symd_status symbolicate(store *s, const bt_request *req, dynbuf *out,
                        symbolicate_counts *counts, symd_err *err)
{
    symbolicate_counts local = {0};
    if (!counts)
        counts = &local;
    symd_status st = SYMD_OK;
    rimage *imgs = calloc(req->nimages ? req->nimages : 1, sizeof *imgs);
    rimage **sorted = calloc(req->nimages ? req->nimages : 1, sizeof *sorted);
    size_t nsorted = 0;
    if (!imgs || !sorted) {
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < req->nimages; i++) {
        rimage *r = &imgs[i];
        const bt_image *bi = &req->images[i];
        r->req = bi;
        uuid_format(bi->uuid, r->uuid);
        symd_err lerr = {0};
        st = store_acquire(s, bi->uuid, bi->arch[0] ? bi->arch : NULL, &r->img, &lerr);
        if (st == SYMD_E_NOT_FOUND) {
            r->img = NULL;
            st = SYMD_OK;
        } else if (st != SYMD_OK) {
            symd_fail(err, st, "images[%zu]: %s", i, lerr.msg);
            goto out;
        }
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
    }
    qsort(sorted, nsorted, sizeof *sorted, cmp_start);
    const char *default_arch = request_arch(imgs, req->nimages);

    jsonw w;
    jw_init(&w, out);
    JW_LIT(&w, "{\"threads\":[");
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
        for (size_t i = 0; i < th->nframes && w.ok; i++) {
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
            if (i)
                JW_LIT(&w, ",");
            write_frame(&w, f, lookup, i, r, req->full_names, counts);
        }
        JW_LIT(&w, "]}");
    }
    JW_LIT(&w, "],\"images\":[");
    for (size_t i = 0; i < req->nimages; i++) {
        const rimage *r = &imgs[i];
        jw_raw(&w, i ? ",{\"uuid\":" : "{\"uuid\":");
        jw_str(&w, r->uuid);
        const char *arch = r->img ? r->img->meta.arch : r->req->arch;
        if (arch[0]) {
            JW_LIT(&w, ",\"arch\":");
            jw_str(&w, arch);
        }
        if (r->img) {
            JW_LIT(&w, ",\"name\":");
            jw_str(&w, r->img->meta.name);
        }
        if (r->placed) {
            JW_LIT(&w, ",\"load_address\":");
            jw_hex(&w, r->start);
        }
        jw_raw(&w, r->img ? ",\"status\":\"found\"}" : ",\"status\":\"missing\"}");
    }
    JW_LIT(&w, "]}");
    if (!w.ok)
        st = symd_fail(err, SYMD_E_TOO_LARGE, "response exceeds %zu bytes", out->max);
out:
    if (imgs)
        for (size_t i = 0; i < req->nimages; i++)
            store_release(s, imgs[i].img);
    free(imgs);
    free(sorted);
    return st;
}

symd_status symbolicate_json(store *s, const char *body, size_t len, bool full_names,
                             dynbuf *out, symbolicate_counts *counts, symd_err *err)
{
    bt_request req;
    symd_status st = bt_parse(body, len, &req, err);
    if (st != SYMD_OK)
        return st;
    req.full_names = full_names;
    st = symbolicate(s, &req, out, counts, err);
    bt_free(&req);
    return st;
}

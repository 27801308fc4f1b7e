/* The symbol index: build once at upload, binary-search in place. */
#include "symindex.h"

#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../demangle/demangle.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define HDR 32u
#define SYM 12u

/* Address order; at one address external names before local ones, then the
 * one that comes last in the symbol table — what llvm-symbolizer reports
 * (it keeps the last of equal addresses, and ld64 writes locals first). */
static int cmp_sym(const void *a, const void *b)
{
    const macho_symbol *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->external != y->external)
        return x->external ? -1 : 1;
    return x->index > y->index ? -1 : x->index < y->index;
}

/* First element of sorted v[0..n) greater than key, as an index. */
static size_t upper_bound_u64(const uint64_t *v, size_t n, uint64_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void free_display(char **display, size_t n)
{
    if (display)
        for (size_t i = 0; i < n; i++)
            free(display[i]);
    free(display);
}

symd_status symindex_build_symbols(macho_symbol *syms, size_t n, uint64_t text_vmaddr,
                                   const uint64_t *fstarts, size_t nfstarts,
                                   uint8_t **blob, size_t *len, uint32_t *nsyms_out,
                                   uint32_t *nstarts_out, symd_err *err)
{
    *blob = NULL;
    *len = 0;
    symd_status st;
    if (n > 1)
        qsort(syms, n, sizeof *syms, cmp_sym);
    size_t k = 0; /* collapse aliases: keep the first at each address */
    for (size_t i = 0; i < n; i++)
        if (k == 0 || syms[k - 1].addr != syms[i].addr)
            syms[k++] = syms[i];
    n = k;

    uint64_t base = text_vmaddr;
    if (n && syms[0].addr < base)
        base = syms[0].addr;
    if (nfstarts && fstarts[0] < base)
        base = fstarts[0];

    char **display = NULL; /* demangled names, NULL where there is none */
    uint8_t *out = NULL;
    size_t strsize = 0;
    for (size_t i = 0; i < n; i++)
        if (!size_add(strsize, strlen(syms[i].name) + 1, &strsize))
            goto too_big;
    if (n && !(display = calloc(n, sizeof *display)))
        goto nomem;
    size_t budget = SYMINDEX_DISPLAY_BUDGET(strsize), used = 0;
    for (size_t i = 0; i < n; i++) {
        char *d = symd_demangle(syms[i].name);
        size_t l = d ? strlen(d) + 1 : 0;
        if (d && l <= budget - used) {
            display[i] = d;
            used += l;
        } else {
            free(d);
        }
    }
    size_t total;
    if (!size_add(strsize, used, &strsize) || !size_mul(n, SYM, &total) ||
        !size_add(total, HDR, &total) || !size_add(total, nfstarts * 4, &total) ||
        !size_add(total, strsize, &total) || strsize > UINT32_MAX || n > UINT32_MAX ||
        nfstarts > UINT32_MAX)
        goto too_big;
    for (size_t i = 0; i < nfstarts; i++)
        if (fstarts[i] - base > UINT32_MAX)
            goto too_big;

    if (!(out = malloc(total)))
        goto nomem;
    memcpy(out, "SYMX", 4);
    st_u32le(out + 4, SYMINDEX_VERSION);
    st_u64le(out + 8, base);
    st_u32le(out + 16, (uint32_t)n);
    st_u32le(out + 20, (uint32_t)nfstarts);
    st_u32le(out + 24, (uint32_t)strsize);
    st_u32le(out + 28, 0);
    uint8_t *sp = out + HDR, *fp = sp + n * SYM;
    char *strings = (char *)(fp + nfstarts * 4);
    size_t stroff = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t end = syms[i].sect_end;
        if (i + 1 < n && syms[i + 1].addr < end)
            end = syms[i + 1].addr;
        size_t f = upper_bound_u64(fstarts, nfstarts, syms[i].addr);
        if (f < nfstarts && fstarts[f] < end)
            end = fstarts[f];
        if (syms[i].addr - base > UINT32_MAX || end - syms[i].addr >= SYMINDEX_DEMANGLED)
            goto too_big;
        uint32_t size = (uint32_t)(end - syms[i].addr);
        st_u32le(sp + i * SYM, (uint32_t)(syms[i].addr - base));
        st_u32le(sp + i * SYM + 4, display[i] ? size | SYMINDEX_DEMANGLED : size);
        st_u32le(sp + i * SYM + 8, (uint32_t)stroff);
        size_t l = strlen(syms[i].name) + 1;
        memcpy(strings + stroff, syms[i].name, l);
        stroff += l;
        if (display[i]) {
            l = strlen(display[i]) + 1;
            memcpy(strings + stroff, display[i], l);
            stroff += l;
        }
    }
    for (size_t i = 0; i < nfstarts; i++)
        st_u32le(fp + i * 4, (uint32_t)(fstarts[i] - base));
    free_display(display, n);
    *blob = out;
    *len = total;
    if (nsyms_out)
        *nsyms_out = (uint32_t)n;
    if (nstarts_out)
        *nstarts_out = (uint32_t)nfstarts;
    return SYMD_OK;

too_big:
    st = symd_fail(err, SYMD_E_UNSUPPORTED,
                   "image code spans more than 4 GiB (or one function more than "
                   "2 GiB); not supported");
    goto fail;
nomem:
    st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
fail:
    free(out);
    free_display(display, n);
    return st;
}

symd_status symindex_build(const macho_image *img, uint8_t **blob, size_t *len,
                           uint32_t *nsyms_out, uint32_t *nstarts_out,
                           symd_err *err)
{
    *blob = NULL;
    *len = 0;
    macho_symbol *syms;
    size_t n;
    symd_status st = macho_function_symbols(img, &syms, &n, err);
    if (st != SYMD_OK)
        return st;
    st = symindex_build_symbols(syms, n, macho_text_vmaddr(img), img->fstarts,
                                img->nfstarts, blob, len, nsyms_out, nstarts_out, err);
    free(syms);
    return st;
}

symd_status symindex_open(const uint8_t *blob, size_t len, symindex *idx,
                          symd_err *err)
{
    memset(idx, 0, sizeof *idx);
    if (len < HDR || memcmp(blob, "SYMX", 4) != 0)
        return SYMD_CORRUPT(err, "symbol index: bad header");
    idx->version = ld_u32le(blob + 4);
    if (idx->version < 1 || idx->version > SYMINDEX_VERSION)
        return SYMD_CORRUPT(err, "symbol index: version %u unknown", idx->version);
    /* Version 1 has no flag: its sizes use all 32 bits. */
    idx->size_mask = idx->version == 1 ? UINT32_MAX : ~SYMINDEX_DEMANGLED;
    idx->blob = blob;
    idx->len = len;
    idx->base = ld_u64le(blob + 8);
    idx->nsyms = ld_u32le(blob + 16);
    idx->nstarts = ld_u32le(blob + 20);
    idx->strsize = ld_u32le(blob + 24);
    idx->flags = ld_u32le(blob + 28);
    if (idx->flags & ~SYMINDEX_F_RELATIVE)
        return SYMD_CORRUPT(err, "symbol index: flags 0x%x unknown", idx->flags);
    size_t need = HDR + (size_t)idx->nsyms * SYM + (size_t)idx->nstarts * 4 +
                  idx->strsize; /* each term < 2^36: no overflow in size_t */
    if (need != len)
        return SYMD_CORRUPT(err, "symbol index: %zu bytes, header says %zu", len, need);
    idx->syms = blob + HDR;
    idx->starts = idx->syms + (size_t)idx->nsyms * SYM;
    idx->strings = (const char *)idx->starts + (size_t)idx->nstarts * 4;
    if (idx->strsize && idx->strings[idx->strsize - 1] != 0)
        return SYMD_CORRUPT(err, "symbol index: strings not terminated");
    uint64_t prev_end = 0;
    for (uint32_t i = 0; i < idx->nsyms; i++) {
        const uint8_t *e = idx->syms + (size_t)i * SYM;
        uint32_t sz = ld_u32le(e + 4), name = ld_u32le(e + 8);
        uint64_t off = ld_u32le(e), size = sz & idx->size_mask;
        if ((i && off < prev_end) || name >= idx->strsize)
            return SYMD_CORRUPT(err, "symbol index: entry %u out of order or range", i);
        if (sz & ~idx->size_mask) {
            /* The display name starts after the raw name's NUL, and is
             * neither empty nor past the (terminated) strings. */
            const char *raw = idx->strings + name;
            const char *nul = memchr(raw, 0, idx->strsize - name);
            if ((size_t)(nul + 1 - idx->strings) >= idx->strsize || nul[1] == 0)
                return SYMD_CORRUPT(err, "symbol index: entry %u: display name out of range", i);
        }
        prev_end = off + size;
        if (size == 0)
            prev_end = off + 1; /* strictly ascending starts */
    }
    for (uint32_t i = 1; i < idx->nstarts; i++)
        if (ld_u32le(idx->starts + (size_t)i * 4) <
            ld_u32le(idx->starts + (size_t)(i - 1) * 4))
            return SYMD_CORRUPT(err, "symbol index: function starts out of order");
    return SYMD_OK;
}

void symindex_lookup(const symindex *idx, uint64_t vmaddr, symlook *out)
{
    memset(out, 0, sizeof *out);
    out->status = SYMLOOK_NO_SYMBOL;
    if (vmaddr < idx->base || vmaddr - idx->base > UINT32_MAX)
        return;
    uint32_t a = (uint32_t)(vmaddr - idx->base);

    /* Last symbol starting at or before a. */
    size_t lo = 0, hi = idx->nsyms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ld_u32le(idx->syms + mid * SYM) <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    const uint8_t *sym = lo ? idx->syms + (lo - 1) * SYM : NULL;

    /* Last function start at or before a. */
    size_t flo = 0, fhi = idx->nstarts;
    while (flo < fhi) {
        size_t mid = flo + (fhi - flo) / 2;
        if (ld_u32le(idx->starts + mid * 4) <= a)
            flo = mid + 1;
        else
            fhi = mid;
    }
    bool has_f = flo > 0;
    uint32_t f = has_f ? ld_u32le(idx->starts + (flo - 1) * 4) : 0;

    if (sym && (!has_f || f <= ld_u32le(sym))) {
        uint32_t s = ld_u32le(sym), sz = ld_u32le(sym + 4), size = sz & idx->size_mask;
        if (a - s < size) {
            out->status = SYMLOOK_SYMBOL;
            out->mangled = idx->strings + ld_u32le(sym + 8);
            /* Checked by symindex_open: the display name follows. */
            out->name = sz & ~idx->size_mask ? out->mangled + strlen(out->mangled) + 1
                                             : out->mangled;
            out->sym_addr = idx->base + s;
            out->has_sym_addr = true;
            out->offset = a - s;
            return;
        }
    }
    if (has_f && (!sym || f > ld_u32le(sym))) {
        out->sym_addr = idx->base + f;
        out->has_sym_addr = true;
        out->offset = a - f;
    }
}

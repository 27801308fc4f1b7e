/* DWARF reader (versions 2-5): a slice's __DWARF sections → the line index.
 *
 * One pass per compile unit: its line program becomes sorted rows, its DIE
 * tree the functions with code and their inlined calls; each function is
 * encoded into the index as soon as its unit is done, so memory follows the
 * largest unit, not the file. Names follow DW_AT_abstract_origin and
 * DW_AT_specification the way llvm-symbolizer does (a linkage name anywhere
 * on the chain first, then a plain name) and are cached per DIE offset.
 *
 * Every offset, index and count read from the sections is checked against
 * the bytes that hold it; corrupt DWARF is SYMD_E_BAD_DEBUG_INFO.
 *
 * The pieces: dwarf_read.c (containers, readers, attribute values, units and
 * abbreviations, strings/names/files, address ranges), dwarf_line.c (line
 * programs), dwarf_die.c (the DIE walk and function records), dwarf_inline.c
 * (the inline tree), behind dwarf_int.h. This file: the blob. */
#include "dwarf_int.h"

#include <stdlib.h>
#include <string.h>
#include "../util/metered.h" /* last: counts this file's allocations */

static const char *const sect_names[S_N] = {
    "__debug_info", "__debug_abbrev", "__debug_line", "__debug_str",
    "__debug_line_str", "__debug_str_offs", "__debug_addr", "__debug_ranges",
    "__debug_rnglists"};

/* ---- the blob ------------------------------------------------------------ */

static int cmp_fentry(const void *a, const void *b)
{
    const fentry *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Keeps only the strings records use: file paths and the names of used
 * name ids (raw and display together); unused ids point at "". */
static symd_status compact_strings(ctx *x)
{
    dynbuf strs;
    dynbuf_init(&strs, x->strings.max);
    symd_status st = SYMD_OK;
    if (!dynbuf_add(&strs, "", 1)) {
        st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < x->files.n; i++) {
        const char *f = (const char *)x->strings.data + x->files.v[i];
        uint32_t at = (uint32_t)strs.len;
        if (!dynbuf_add(&strs, f, strlen(f) + 1)) {
            st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line index exceeds its size limit");
            goto out;
        }
        x->files.v[i] = at;
    }
    for (size_t i = 0; i < x->finals.n; i++) {
        uint32_t e = x->names.v[x->finals.v[i]];
        const char *raw = (const char *)x->strings.data + (e & 0x7fffffffu);
        size_t n = strlen(raw) + 1;
        if (e >> 31)
            n += strlen(raw + n) + 1;
        uint32_t at = (uint32_t)strs.len;
        if (!dynbuf_add(&strs, raw, n)) {
            st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line index exceeds its size limit");
            goto out;
        }
        x->finals.v[i] = at | (e & 0x80000000u); /* now the table entry */
    }
    dynbuf_free(&x->strings);
    x->strings = strs;
    return SYMD_OK;
out:
    dynbuf_free(&strs);
    return st;
}

symd_status assemble_index(ctx *x, uint8_t **blob, size_t *len)
{
    fentry *f = x->funcs.v;
    size_t n = x->funcs.n, k = 0;
    if (n > 1)
        qsort(f, n, sizeof *f, cmp_fentry);
    /* Overlapping functions (duplicate DWARF for one range): the first in
     * address order, then in DWARF order, keeps the shared bytes. */
    uint64_t last_end = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = f[i].start, e = s + f[i].size;
        if (k && s < last_end) {
            if (e <= last_end)
                continue;
            s = last_end;
        }
        f[k] = f[i];
        f[k].start = (uint32_t)s;
        f[k].size = (uint32_t)(e - s);
        last_end = e;
        k++;
    }
    n = k;
    symd_status st = compact_strings(x);
    if (st != SYMD_OK)
        return st;
    size_t nn = x->finals.n, nf = x->files.n;
    size_t total = 48, part;
    if (!size_mul(n, 12, &part) || !size_add(total, part, &total) ||
        !size_mul(nn, 4, &part) || !size_add(total, part, &total) ||
        !size_mul(nf, 4, &part) || !size_add(total, part, &total) ||
        !size_add(total, x->data.len, &total) || !size_add(total, x->strings.len, &total) ||
        total > x->data.max || n > UINT32_MAX || x->data.len > UINT32_MAX ||
        x->strings.len > UINT32_MAX)
        return symd_fail(x->err, SYMD_E_TOO_LARGE, "line index exceeds its size limit");
    uint8_t *out = malloc(total), *p = out;
    if (!out)
        return symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
    memcpy(p, "LINX", 4);
    st_u32le(p + 4, LINEINDEX_VERSION);
    st_u64le(p + 8, x->base);
    st_u32le(p + 16, (uint32_t)n);
    st_u32le(p + 20, (uint32_t)nn);
    st_u32le(p + 24, (uint32_t)nf);
    st_u32le(p + 28, (uint32_t)x->data.len);
    st_u32le(p + 32, (uint32_t)x->strings.len);
    st_u32le(p + 36, x->shift);
    st_u32le(p + 40, x->flags);
    st_u32le(p + 44, 0);
    p += 48;
    for (size_t i = 0; i < n; i++, p += 12) {
        st_u32le(p, f[i].start);
        st_u32le(p + 4, f[i].size);
        st_u32le(p + 8, f[i].data);
    }
    for (size_t i = 0; i < nn; i++, p += 4)
        st_u32le(p, x->finals.v[i]);
    for (size_t i = 0; i < nf; i++, p += 4)
        st_u32le(p, x->files.v[i]);
    if (x->data.len)
        memcpy(p, x->data.data, x->data.len);
    p += x->data.len;
    if (x->strings.len)
        memcpy(p, x->strings.data, x->strings.len);
    *blob = out;
    *len = total;
    return SYMD_OK;
}

void ctx_free(ctx *x)
{
    for (size_t i = 0; i < x->tables.n; i++) {
        free(x->tables.v[i].a);
        free(x->tables.v[i].specs);
        free(x->tables.v[i].by_code);
    }
    free(x->tables.v);
    free(x->units.v);
    free(x->code);
    map_free(&x->table_by_off);
    map_free(&x->name_cache);
    map_free(&x->name_by_raw);
    map_free(&x->file_by_str);
    dynbuf_free(&x->strings);
    dynbuf_free(&x->data);
    dynbuf_free(&x->path);
    free(x->strset);
    free(x->names.v);
    free(x->final_of.v);
    free(x->finals.v);
    free(x->files.v);
    free(x->funcs.v);
    free(x->cu_files.v);
    free(x->rows.v);
    free(x->cu_ranges.v);
    free(x->nodes.v);
    free(x->tmp.v);
}

symd_status lineindex_build(const macho_image *img, const symindex *syms,
                            size_t max_bytes, uint8_t **blob, size_t *len,
                            lineindex_stats *stats, symd_err *err)
{
    *blob = NULL;
    *len = 0;
    ctx x;
    memset(&x, 0, sizeof x);
    x.syms = syms;
    x.err = err;
    memset(stats, 0, sizeof *stats);
    symd_status st = SYMD_OK;
    size_t code_cap = 0;
    for (size_t i = 0; i < img->nsects; i++) {
        const macho_section *sc = &img->sects[i];
        if (strcmp(sc->segname, "__DWARF") != 0)
            continue;
        for (int k = 0; k < S_N; k++) {
            if (strcmp(sc->sectname, sect_names[k]) != 0)
                continue;
            if (!range_ok(sc->offset, sc->size, img->len))
                return BAD(&x, "section %s runs past the file", sc->sectname);
            x.s[k].p = img->buf + sc->offset;
            x.s[k].len = (size_t)sc->size;
        }
    }
    if (!x.s[S_INFO].len)
        return SYMD_OK;
    for (size_t i = 0; i < img->nsects; i++) {
        const macho_section *sc = &img->sects[i];
        if (!macho_section_is_code(sc) || !sc->size || sc->addr + sc->size < sc->addr)
            continue;
        range r = {sc->addr, sc->addr + sc->size};
        if (!array_grow((void **)&x.code, &code_cap, x.ncode + 1, sizeof *x.code)) {
            st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
            goto out;
        }
        x.code[x.ncode++] = r;
    }
    x.ncode = normalize(x.code, x.ncode);
    if (!x.ncode)
        goto out; /* no code: nothing to index */
    x.base = x.code[0].lo;
    x.shift = img->cputype == 0x0100000cu ? 2 : 0; /* CPU_TYPE_ARM64 */
    /* Demangled names may add at most 4x the DWARF's string bytes + 64 KiB. */
    x.display_budget = 4 * (x.s[S_STR].len + x.s[S_LINE_STR].len) + (64u << 10);
    if (x.code[x.ncode - 1].hi - x.base > UINT32_MAX) {
        st = symd_fail(err, SYMD_E_UNSUPPORTED, "code spans more than 4 GiB");
        goto out;
    }
    dynbuf_init(&x.strings, max_bytes);
    dynbuf_init(&x.data, max_bytes);
    dynbuf_init(&x.path, 1 << 16);
    if ((st = read_units(&x)) != SYMD_OK)
        goto out;
    for (size_t i = 0; i < x.units.n; i++)
        if ((st = walk_unit(&x, &x.units.v[i])) != SYMD_OK)
            goto out;
    st = assemble_index(&x, blob, len);
    *stats = x.stats;
out:
    ctx_free(&x);
    return st;
}

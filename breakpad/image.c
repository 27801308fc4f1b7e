/* A Breakpad .sym → symbol index, line index and CFI blobs (image.h). */
#include "image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../macho/symindex.h"
#include "../util/util.h"
#include "../util/metered.h" /* last: counts this file's allocations */

void bp_image_free(bp_image *img)
{
    free(img->symidx);
    free(img->lines);
    free(img->cfi);
    memset(img, 0, sizeof *img);
}

/* Copies a name into out (cap bytes), cut at a UTF-8 character's start. */
static void copy_name(char *out, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    }
    memcpy(out, s, n);
    out[n] = 0;
}

/* The symbol index: FUNC records (sized, and their starts the function
 * starts) and PUBLIC records (running to the next symbol or function
 * start, at most to end). */
static symd_status build_symbols(const bp_sym *s, uint64_t end, bp_image *out, symd_err *err)
{
    size_t n = s->nfuncs + s->npublics;
    macho_symbol *syms = malloc((n ? n : 1) * sizeof *syms);
    uint64_t *starts = malloc((s->nfuncs ? s->nfuncs : 1) * sizeof *starts);
    symd_status st;
    if (!syms || !starts) {
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    /* At one address a FUNC wins over a PUBLIC (external sorts first) and
     * the first PUBLIC in the file over later ones (a higher index sorts
     * first: symindex keeps what llvm-symbolizer would). */
    size_t k = 0;
    for (size_t i = 0; i < s->nfuncs; i++) {
        const bp_func *f = &s->funcs[i];
        syms[k++] = (macho_symbol){f->addr, bp_str(s, f->name), true, (uint32_t)(n - i),
                                   (uint64_t)f->addr + f->size};
        starts[i] = f->addr;
    }
    for (size_t i = 0; i < s->npublics; i++) {
        const bp_public *p = &s->publics[i];
        /* a symbol's size must stay below 2 GiB (symindex.h) */
        uint64_t e = end > p->addr ? end : p->addr + 1;
        if (e - p->addr > INT32_MAX)
            e = p->addr + INT32_MAX;
        syms[k++] = (macho_symbol){p->addr, bp_str(s, p->name), false,
                                   (uint32_t)(s->npublics - i), e};
    }
    st = symindex_build_symbols(syms, n, 0, starts, s->nfuncs, &out->symidx, &out->symidx_len,
                                &out->symbols, &out->functions, err);
    if (st == SYMD_OK)
        symindex_set_flags(out->symidx, SYMINDEX_F_RELATIVE);
out:
    free(syms);
    free(starts);
    return st;
}

/* Ids the line index gave the .sym's files and names, made on first use
 * (0: not yet; else id + 1). */
typedef struct {
    lineindex_writer *w;
    uint32_t *file_ids, *origin_ids;
    lineindex_row *rows;
    size_t rows_cap;
    lineindex_node *nodes;
    size_t nodes_cap;
    lineindex_range *ranges;
    size_t ranges_cap;
} line_ctx;

static symd_status file_of(line_ctx *c, const bp_sym *s, uint32_t file, uint32_t *id,
                           symd_err *err)
{
    *id = 0;
    if (!file)
        return SYMD_OK;
    if (!c->file_ids[file - 1]) {
        uint32_t v;
        symd_status st = lineindex_writer_file(c->w, bp_str(s, s->files[file - 1].path), &v, err);
        if (st != SYMD_OK)
            return st;
        c->file_ids[file - 1] = v + 1;
    }
    *id = c->file_ids[file - 1];
    return SYMD_OK;
}

static symd_status origin_of(line_ctx *c, const bp_sym *s, uint32_t origin, uint32_t *id,
                             symd_err *err)
{
    *id = 0;
    if (!origin)
        return SYMD_OK;
    if (!c->origin_ids[origin - 1]) {
        uint32_t v;
        symd_status st =
            lineindex_writer_name(c->w, bp_str(s, s->origins[origin - 1].name), &v, err);
        if (st != SYMD_OK)
            return st;
        c->origin_ids[origin - 1] = v + 1;
    }
    *id = c->origin_ids[origin - 1];
    return SYMD_OK;
}

/* One FUNC with its line records and inline tree into the writer. */
static symd_status add_function(line_ctx *c, const bp_sym *s, const bp_func *f, symd_err *err)
{
    symd_status st;
    size_t nrows = 0;
    /* Each line record is a row; a gap before the next (or the FUNC's end)
     * is a row without a line, as a DWARF end of sequence would be. */
    if (!array_grow((void **)&c->rows, &c->rows_cap, 2 * (size_t)f->nlines + 1, sizeof *c->rows))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < f->nlines; i++) {
        const bp_line *l = &s->lines[f->line0 + i];
        uint32_t file;
        if ((st = file_of(c, s, l->file, &file, err)) != SYMD_OK)
            return st;
        c->rows[nrows++] = (lineindex_row){l->addr, file, file ? l->line : 0, 0};
        uint64_t end = (uint64_t)l->addr + l->size;
        bool next_here = i + 1 < f->nlines && s->lines[f->line0 + i + 1].addr == end;
        if (!next_here && end < (uint64_t)f->addr + f->size)
            c->rows[nrows++] = (lineindex_row){end, 0, 0, 0};
    }
    size_t nranges = 0;
    for (uint32_t i = 0; i < f->ninlines; i++)
        nranges += s->inlines[f->inline0 + i].nranges;
    if ((f->ninlines &&
         !array_grow((void **)&c->nodes, &c->nodes_cap, f->ninlines, sizeof *c->nodes)) ||
        (nranges &&
         !array_grow((void **)&c->ranges, &c->ranges_cap, nranges, sizeof *c->ranges)))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    size_t r = 0;
    for (uint32_t i = 0; i < f->ninlines; i++) {
        const bp_inline *in = &s->inlines[f->inline0 + i];
        lineindex_node *nd = &c->nodes[i];
        nd->parent = in->parent == UINT32_MAX ? UINT32_MAX : in->parent - f->inline0;
        if ((st = origin_of(c, s, in->origin, &nd->name, err)) != SYMD_OK ||
            (st = file_of(c, s, in->call_file, &nd->call_file, err)) != SYMD_OK)
            return st;
        nd->call_line = in->call_line;
        nd->call_column = 0;
        nd->ranges = in->nranges ? c->ranges + r : NULL;
        nd->nranges = in->nranges;
        for (uint32_t k = 0; k < in->nranges; k++) {
            const bp_range *rg = &s->ranges[in->range0 + k];
            c->ranges[r++] = (lineindex_range){rg->addr, (uint64_t)rg->addr + rg->size};
        }
    }
    uint32_t name;
    if ((st = lineindex_writer_name(c->w, bp_str(s, f->name), &name, err)) != SYMD_OK)
        return st;
    return lineindex_writer_function(c->w, f->addr, (uint64_t)f->addr + f->size, name + 1,
                                     c->rows, nrows, c->nodes, f->ninlines, err);
}

/* The line index: every FUNC with line records or INLINEs. */
static symd_status build_lines(const bp_sym *s, size_t len, size_t max_lines, bool arm64,
                               bp_image *out, symd_err *err)
{
    size_t first = 0;
    while (first < s->nfuncs && !s->funcs[first].nlines && !s->funcs[first].ninlines)
        first++;
    if (first == s->nfuncs)
        return SYMD_OK;
    symindex sidx;
    symd_status st = symindex_open(out->symidx, out->symidx_len, &sidx, err);
    if (st != SYMD_OK)
        return st;
    line_ctx c;
    memset(&c, 0, sizeof c);
    c.file_ids = calloc(s->nfiles + 1, sizeof *c.file_ids);
    c.origin_ids = calloc(s->norigins + 1, sizeof *c.origin_ids);
    if (!c.file_ids || !c.origin_ids) {
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    st = lineindex_writer_new(s->funcs[first].addr, arm64 ? 2 : 0, LINEINDEX_F_RELATIVE, &sidx,
                              max_lines, len, &c.w, err);
    for (size_t i = first; i < s->nfuncs && st == SYMD_OK; i++)
        if (s->funcs[i].nlines || s->funcs[i].ninlines)
            st = add_function(&c, s, &s->funcs[i], err);
    if (st == SYMD_OK)
        st = lineindex_writer_finish(c.w, &out->lines, &out->lines_len, &out->stats, err);
out:
    lineindex_writer_free(c.w);
    free(c.file_ids);
    free(c.origin_ids);
    free(c.rows);
    free(c.nodes);
    free(c.ranges);
    return st;
}

/* Contract in image.h. */
symd_status bp_image_build(const uint8_t *buf, size_t len, size_t max_lines, bp_image *out,
                           symd_err *err)
{
    memset(out, 0, sizeof *out);
    bp_sym s;
    symd_status st = bp_sym_parse(buf, len, true, &s, err);
    if (st != SYMD_OK)
        return st;
    const char *arch = bp_sym_arch(s.arch);
    static const uint8_t zero[16];
    if (strcasecmp(s.os, "mac") != 0 && strcasecmp(s.os, "ios") != 0) {
        st = symd_fail(err, SYMD_E_UNSUPPORTED,
                       "line 1: MODULE os '%s': symd stores Apple images only (mac, ios)", s.os);
        goto out;
    }
    if (!arch) {
        st = symd_fail(err, SYMD_E_UNSUPPORTED,
                       "line 1: MODULE arch '%s': symd stores x86_64, arm64 and arm64e images",
                       s.arch);
        goto out;
    }
    if (memcmp(s.uuid, zero, 16) == 0) {
        st = symd_fail(err, SYMD_E_NO_UUID,
                       "line 1: MODULE debug id %s is all zeros: the module has no UUID",
                       s.debug_id);
        goto out;
    }
    memcpy(out->uuid, s.uuid, 16);
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    snprintf(out->debug_id, sizeof out->debug_id, "%s", s.debug_id);
    const char *name = bp_str(&s, s.module_name);
    copy_name(out->name, sizeof out->name, name);

    /* The image's extent, as far as its records tell. */
    uint64_t end = 0;
    if (s.nfuncs)
        end = (uint64_t)s.funcs[s.nfuncs - 1].addr + s.funcs[s.nfuncs - 1].size;
    if (s.npublics && (uint64_t)s.publics[s.npublics - 1].addr + 1 > end)
        end = (uint64_t)s.publics[s.npublics - 1].addr + 1;
    if (s.cfi.nentries) {
        const bp_cfi_entry *e = &s.cfi.entries[s.cfi.nentries - 1];
        if ((uint64_t)e->addr + e->size > end)
            end = (uint64_t)e->addr + e->size;
    }
    uint64_t page = strncmp(arch, "arm64", 5) == 0 ? 0x4000 : 0x1000;
    out->text_size = (end + page - 1) & ~(page - 1);

    if ((st = build_symbols(&s, out->text_size, out, err)) != SYMD_OK ||
        (st = build_lines(&s, len, max_lines, strncmp(arch, "arm64", 5) == 0, out, err)) !=
            SYMD_OK)
        goto out;
    if (s.cfi.nentries && (st = bp_cfi_encode(&s.cfi, &out->cfi, &out->cfi_len, err)) != SYMD_OK)
        goto out;
    out->cfi_entries = s.cfi.nentries;
    out->cfi_rows = s.cfi.nrows;
    out->stack_win = s.stack_win;
    out->nwarnings = bp_sym_warnings(&s, out->warnings, BP_IMAGE_MAX_WARNINGS);
out:
    bp_sym_free(&s);
    if (st != SYMD_OK)
        bp_image_free(out);
    return st;
}

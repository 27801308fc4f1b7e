/* libFuzzer target: the Breakpad .sym reader and what an upload builds from
 * it (symbol index, line index, STACK CFI blob) over arbitrary bytes. An
 * input is refused with an error or read into arrays that keep sym.h's
 * promises (sorted, disjoint, inside their FUNC, indexes in range); the
 * blobs built from it open and answer lookups; and the CFI blob reader gets
 * the raw bytes too (a damaged store). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../breakpad/image.h"
#include "../breakpad/sym.h"
#include "../macho/symindex.h"

static void check_sym(const bp_sym *s)
{
    for (size_t i = 0; i < s->nfuncs; i++) {
        const bp_func *f = &s->funcs[i];
        uint64_t end = (uint64_t)f->addr + f->size;
        if (f->size == 0 || end > UINT32_MAX || (i && s->funcs[i - 1].addr +
                                                          (uint64_t)s->funcs[i - 1].size > f->addr))
            __builtin_trap(); /* FUNCs sorted and disjoint */
        if ((uint64_t)f->line0 + f->nlines > s->nlines ||
            (uint64_t)f->inline0 + f->ninlines > s->ninlines)
            __builtin_trap();
        for (uint32_t k = 0; k < f->nlines; k++) {
            const bp_line *l = &s->lines[f->line0 + k];
            if (l->addr < f->addr || (uint64_t)l->addr + l->size > end || l->size == 0 ||
                l->file > s->nfiles ||
                (k && (uint64_t)s->lines[f->line0 + k - 1].addr + s->lines[f->line0 + k - 1].size >
                          l->addr))
                __builtin_trap(); /* lines inside, sorted, disjoint */
        }
        for (uint32_t k = 0; k < f->ninlines; k++) {
            const bp_inline *in = &s->inlines[f->inline0 + k];
            if ((in->parent != UINT32_MAX &&
                 (in->parent < f->inline0 || in->parent >= f->inline0 + k)) ||
                in->origin > s->norigins || in->call_file > s->nfiles || in->nranges == 0 ||
                (uint64_t)in->range0 + in->nranges > s->nranges)
                __builtin_trap(); /* preorder, ids in range */
            for (uint32_t j = 0; j < in->nranges; j++) {
                const bp_range *r = &s->ranges[in->range0 + j];
                if (r->addr < f->addr || (uint64_t)r->addr + r->size > end || r->size == 0)
                    __builtin_trap();
            }
        }
    }
    for (size_t i = 1; i < s->npublics; i++)
        if (s->publics[i].addr < s->publics[i - 1].addr)
            __builtin_trap();
    const bp_cfi *c = &s->cfi;
    for (size_t i = 0; i < c->nentries; i++) {
        const bp_cfi_entry *e = &c->entries[i];
        if (e->nrows == 0 || (uint64_t)e->row0 + e->nrows > c->nrows ||
            c->rows[e->row0].addr != e->addr ||
            (i && (uint64_t)c->entries[i - 1].addr + c->entries[i - 1].size > e->addr))
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bp_sym s;
    symd_err err = {0};
    symd_status st = bp_sym_parse(data, size, false, &s, &err);
    if (st != SYMD_OK && st != SYMD_E_CORRUPT && st != SYMD_E_TOO_LARGE && st != SYMD_E_NOMEM)
        __builtin_trap();
    if (st == SYMD_OK) {
        check_sym(&s);
        uint8_t *blob;
        size_t len;
        if (bp_cfi_encode(&s.cfi, &blob, &len, &err) == SYMD_OK) {
            bp_cfi_blob b;
            if (bp_cfi_open(blob, len, &b, &err) != SYMD_OK)
                __builtin_trap(); /* our own encoder makes readable blobs */
            for (size_t i = 0; i < s.cfi.nentries && i < 64; i++) {
                bp_cfi_lookup l;
                if (!bp_cfi_find(&b, s.cfi.entries[i].addr, &l))
                    __builtin_trap();
            }
            free(blob);
        }
        bp_sym_free(&s);
    }

    bp_image im;
    symd_err_clear(&err);
    if (bp_image_build(data, size, 1u << 24, &im, &err) == SYMD_OK) {
        symindex si;
        if (symindex_open(im.symidx, im.symidx_len, &si, &err) != SYMD_OK)
            __builtin_trap();
        lineindex li;
        bool has_lines = im.lines != NULL;
        if (has_lines && lineindex_open(im.lines, im.lines_len, &li, &err) != SYMD_OK)
            __builtin_trap();
        uint64_t step = im.text_size / 512 + 1;
        for (uint64_t a = 0; a < im.text_size; a += step) {
            symlook look;
            linelook ll;
            symindex_lookup(&si, a, &look);
            if (has_lines && lineindex_lookup(&li, a, &ll) && ll.n == 0)
                __builtin_trap();
        }
        for (uint32_t i = 0; has_lines && i < li.nfuncs && i < 256; i++) {
            lineindex_xfunc f;
            if (!lineindex_function(&li, i, &f))
                __builtin_trap(); /* records we wrote decode */
            lineindex_xfunc_free(&f);
        }
        bp_cfi_blob b;
        if (im.cfi && bp_cfi_open(im.cfi, im.cfi_len, &b, &err) != SYMD_OK)
            __builtin_trap();
        bp_image_free(&im);
    }

    bp_cfi_blob b;
    if (bp_cfi_open(data, size, &b, &err) == SYMD_OK) {
        bp_cfi_lookup l;
        for (uint32_t a = 0; a < 0x10000; a += 0x101)
            bp_cfi_find(&b, a, &l);
    }
    return 0;
}

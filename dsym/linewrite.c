/* The line index from records read elsewhere (a Breakpad .sym): functions,
 * rows and inline trees handed in one function at a time, encoded by the
 * same code that encodes DWARF's (dwarf_die.c, dwarf_inline.c, dwarf.c). */
#include "dwarf_int.h"

#include <stdlib.h>
#include <string.h>
#include "../util/metered.h" /* last: counts this file's allocations */

struct lineindex_writer {
    ctx x;
    symd_err scratch; /* x.err points here between calls */
    bool any;
};

/* Runs with the caller's error record, so failures land there. */
#define WITH_ERR(w, e) ((w)->x.err = (e) ? (e) : &(w)->scratch)

/* Contract in lineindex.h. */
symd_status lineindex_writer_new(uint64_t base, uint32_t shift, uint32_t flags,
                                 const symindex *syms, size_t max_bytes, uint64_t work_hint,
                                 lineindex_writer **out, symd_err *err)
{
    *out = NULL;
    if (shift > 3)
        return symd_fail(err, SYMD_E_INVALID, "line index: address shift %u", shift);
    lineindex_writer *w = calloc(1, sizeof *w);
    if (!w)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    w->x.syms = syms;
    w->x.base = base;
    w->x.shift = shift;
    w->x.flags = flags;
    w->x.row_budget = 4 * work_hint;
    /* Demangled names may add what they add for DWARF: 4x the input. */
    w->x.display_budget = 4 * work_hint + (64u << 10);
    dynbuf_init(&w->x.strings, max_bytes);
    dynbuf_init(&w->x.data, max_bytes);
    *out = w;
    return SYMD_OK;
}

/* Contract in lineindex.h. */
symd_status lineindex_writer_file(lineindex_writer *w, const char *path, uint32_t *id,
                                  symd_err *err)
{
    WITH_ERR(w, err);
    return file_id(&w->x, path, strlen(path), id) ? SYMD_OK : w->x.err->kind;
}

/* Contract in lineindex.h. */
symd_status lineindex_writer_name(lineindex_writer *w, const char *name, uint32_t *id,
                                  symd_err *err)
{
    WITH_ERR(w, err);
    return name_id(&w->x, name, id) ? SYMD_OK : w->x.err->kind;
}

/* Puts one range into x->tmp, the place add_node reads a node's ranges. */
static bool tmp_range(ctx *x, uint64_t lo, uint64_t hi)
{
    range r = {lo, hi};
    return VEC_PUSH(x, x->tmp, r);
}

/* Contract in lineindex.h. */
symd_status lineindex_writer_function(lineindex_writer *w, uint64_t lo, uint64_t hi,
                                      uint32_t name, const lineindex_row *rows, size_t nrows,
                                      const lineindex_node *nodes, size_t nnodes,
                                      symd_err *err)
{
    ctx *x = &w->x;
    WITH_ERR(w, err);
    if (lo >= hi || lo < x->base || hi - x->base > UINT32_MAX)
        return symd_fail(x->err, SYMD_E_INVALID,
                         "line index: function range 0x%llx-0x%llx outside the index",
                         (unsigned long long)lo, (unsigned long long)hi);
    if (name && name - 1 >= x->names.n)
        return symd_fail(x->err, SYMD_E_INVALID, "line index: name %u unknown", name);
    x->rows.n = 0;
    x->nodes.n = 0;
    x->cu_ranges.n = 0;
    for (size_t i = 0; i < nrows; i++) {
        if (rows[i].file > x->files.n || (i && rows[i].addr < rows[i - 1].addr))
            return symd_fail(x->err, SYMD_E_INVALID, "line index: row %zu out of order", i);
        lrow r = {rows[i].addr, rows[i].file, rows[i].line, rows[i].column, (uint32_t)i};
        if (!VEC_PUSH(x, x->rows, r))
            return x->err->kind;
    }
    /* The root: the function's range, its name (a linkage name's id << 1 | 1,
     * as die_name_of gives them). */
    x->tmp.n = 0;
    uint32_t idx;
    if (!tmp_range(x, lo, hi) || !add_node(x, 0, NONE, 0, name ? (name - 1) << 1 | 1 : NONE, &idx))
        return x->err->kind;
    /* x->nodes index of each input node; NONE for one left out (no range
     * inside the function, or too deep), and then for its subtree. */
    uint32_t *at = nnodes ? malloc(nnodes * sizeof *at) : NULL;
    if (nnodes && !at)
        return symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
    symd_status st = SYMD_OK;
    for (size_t i = 0; i < nnodes && st == SYMD_OK; i++) {
        const lineindex_node *n = &nodes[i];
        at[i] = NONE;
        if ((n->parent != UINT32_MAX && n->parent >= i) || (n->name && n->name - 1 >= x->names.n) ||
            n->call_file > x->files.n) {
            st = symd_fail(x->err, SYMD_E_INVALID, "line index: inline node %zu unreadable", i);
            break;
        }
        uint32_t parent = n->parent == UINT32_MAX ? 0 : at[n->parent];
        if (parent == NONE || x->nodes.v[parent].depth >= LINEINDEX_MAX_DEPTH)
            continue;
        x->tmp.n = 0;
        for (size_t k = 0; k < n->nranges; k++)
            if (n->ranges[k].lo < n->ranges[k].hi && n->ranges[k].lo >= lo &&
                n->ranges[k].hi <= hi && !tmp_range(x, n->ranges[k].lo, n->ranges[k].hi)) {
                st = x->err->kind;
                break;
            }
        if (st != SYMD_OK)
            break;
        x->tmp.n = normalize(x->tmp.v, x->tmp.n);
        if (x->tmp.n == 0)
            continue; /* no code: add_node needs a range */
        uint32_t depth = x->nodes.v[parent].depth + 1;
        if (!add_node(x, 0, parent, depth, n->name ? (n->name - 1) << 1 | 1 : NONE, &idx)) {
            st = x->err->kind;
            break;
        }
        node *nd = &x->nodes.v[idx];
        nd->call_file = n->call_file;
        nd->call_line = n->call_line;
        nd->call_col = n->call_column;
        at[i] = idx;
    }
    free(at);
    if (st != SYMD_OK)
        return st;
    st = encode_unit(x, 1);
    if (st == SYMD_OK)
        w->any = true;
    return st;
}

/* Contract in lineindex.h. */
symd_status lineindex_writer_finish(lineindex_writer *w, uint8_t **blob, size_t *len,
                                    lineindex_stats *stats, symd_err *err)
{
    *blob = NULL;
    *len = 0;
    WITH_ERR(w, err);
    if (stats)
        *stats = w->x.stats;
    return w->any ? assemble_index(&w->x, blob, len) : SYMD_OK;
}

/* Contract in lineindex.h. */
void lineindex_writer_free(lineindex_writer *w)
{
    if (!w)
        return;
    ctx_free(&w->x);
    free(w);
}

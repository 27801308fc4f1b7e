/* DWARF reader: the DIE walk of a unit and the function records it
 * encodes (rows, own name, inline tree) into the index's data. */
#include "dwarf_int.h"

#include <stdlib.h>
#include <string.h>
#include "../util/metered.h" /* last: counts this file's allocations */

#define MAX_DIE_DEPTH 1024 /* DIE nesting; deeper is corrupt */

/* ---- the DIE walk and function records ----------------------------------- */

bool put_uleb(ctx *x, dynbuf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        tmp[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    if (!dynbuf_add(b, tmp, n))
        return symd_fail(x->err, SYMD_E_TOO_LARGE,
                         "line index exceeds its size limit"), false;
    return true;
}

/* The index's id for name id: names get index ids in the order records
 * first use them, so names no record uses (functions the symbol table
 * names) cost nothing and frequent ones get short numbers. */
bool use_name(ctx *x, uint32_t id, uint32_t *fin)
{
    if (x->final_of.v[id]) {
        *fin = x->final_of.v[id] - 1;
        return true;
    }
    *fin = (uint32_t)x->finals.n;
    if (!VEC_PUSH(x, x->finals, id))
        return false;
    x->final_of.v[id] = *fin + 1;
    return true;
}
/* Last row at or below addr, or -1. */
static ptrdiff_t row_at(const ctx *x, uint64_t addr)
{
    size_t lo = 0, hi = x->rows.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->rows.v[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

/* Writes the rows covering the function's ranges into b. */
static bool encode_rows(ctx *x, const range *r, size_t nr, uint64_t origin, dynbuf *b,
                        uint32_t *count)
{
    /* Two (file, line) registers: the current one and the one before it, so
     * code alternating between a function's file and an inlined header's
     * costs one byte a row (see lineindex.h). */
    uint64_t paddr = origin, line = 0, pline = 0;
    uint32_t file = 0, pfile = 0, col = 0;
    bool first = true;
    for (size_t k = 0; k < nr; k++) {
        ptrdiff_t i = row_at(x, r[k].lo);
        for (;; i++) {
            if (++x->work_rows >
                4 * (uint64_t)x->s[S_LINE].len + x->s[S_INFO].len + x->row_budget + WORK_SLACK)
                return BAD(x, "functions overlap too much to index"), false;
            uint64_t addr;
            lrow row = {0, 0, 0, 0, 0};
            if (i < 0) {
                addr = r[k].lo;
            } else if ((size_t)i >= x->rows.n) {
                break;
            } else {
                row = x->rows.v[i];
                if (row.addr >= r[k].hi)
                    break;
                addr = row.addr < r[k].lo ? r[k].lo : row.addr;
            }
            if (!row.file)
                row.line = (uint32_t)line, row.col = 0;
            if (!first && row.file == file && row.line == line && row.col == col)
                continue;
            uint64_t da = addr - paddr, q = da >> x->shift;
            bool swap = !first && row.file != file && row.file == pfile;
            uint64_t base = swap ? pline : line;
            int64_t d = (int64_t)row.line - (int64_t)base;
            uint8_t op;
            bool ok;
            if ((first || row.file == file || swap) && !(first && row.file) && d >= -3 &&
                d <= 4 && (q << x->shift) == da && q < 8) {
                op = (uint8_t)((swap ? 0x40 : 0) | q << 3 | (uint64_t)(d + 3));
                ok = dynbuf_add(b, &op, 1);
                if (swap) {
                    pfile = file, pline = line;
                    file = row.file;
                }
            } else if (!first && row.file == file && d >= -63 && d <= 63 && d != 0 &&
                       (q << x->shift) == da) {
                /* a longer jump in the same file: line in the op, address next */
                op = (uint8_t)(0x80 | (uint64_t)(d + 64));
                ok = dynbuf_add(b, &op, 1) && put_uleb(x, b, q);
            } else {
                bool fchg = row.file != file || first;
                d = (int64_t)row.line - (int64_t)line;
                uint64_t zz = lix_zigzag(d);
                op = 0x80;
                ok = dynbuf_add(b, &op, 1) && put_uleb(x, b, da) &&
                     put_uleb(x, b, zz << 1 | fchg) && (!fchg || put_uleb(x, b, row.file));
                if (fchg) {
                    pfile = file, pline = line;
                    file = row.file;
                }
            }
            if (!ok || !put_uleb(x, b, row.col))
                return symd_fail(x->err, SYMD_E_TOO_LARGE,
                                 "line index exceeds its size limit"), false;
            (*count)++;
            first = false;
            paddr = addr, line = row.line, col = row.col;
        }
    }
    return true;
}

/* The record's own-name field of a function (see lineindex.h): 1 when the
 * symbol table has the same raw name at its first address, which then names
 * it; otherwise its name, marked as used. */
static uint64_t root_name(ctx *x, const node *root, uint64_t origin)
{
    if (root->name == NONE)
        return 0;
    uint32_t id = root->name >> 1;
    if (x->syms) {
        symlook look;
        symindex_lookup(x->syms, origin, &look);
        const char *raw = (const char *)x->strings.data + (x->names.v[id] & 0x7fffffffu);
        if (look.status == SYMLOOK_SYMBOL && look.sym_addr == origin &&
            strcmp(look.mangled, raw) == 0)
            return 1;
    }
    uint32_t fin;
    if (!use_name(x, id, &fin))
        return UINT64_MAX;
    return (uint64_t)fin + 2;
}

symd_status encode_unit(ctx *x, uint32_t nfuncs)
{
    if (!nfuncs)
        return SYMD_OK;
    /* Group nodes by function, keeping preorder inside each (a subprogram
     * nested in another interleaves their nodes). */
    size_t *start = calloc((size_t)nfuncs + 1, sizeof *start);
    uint32_t *perm = malloc((x->nodes.n ? x->nodes.n : 1) * sizeof *perm);
    dynbuf rows;
    dynbuf_init(&rows, x->data.max);
    symd_status st = SYMD_OK;
    if (!start || !perm) {
        st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < x->nodes.n; i++)
        start[x->nodes.v[i].func + 1]++;
    for (uint32_t f = 0; f < nfuncs; f++)
        start[f + 1] += start[f];
    {
        size_t *fill = calloc(nfuncs, sizeof *fill);
        if (!fill) {
            st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < x->nodes.n; i++) {
            uint32_t f = x->nodes.v[i].func;
            perm[start[f] + fill[f]++] = (uint32_t)i;
        }
        free(fill);
    }
    for (uint32_t f = 0; f < nfuncs; f++) {
        size_t a = start[f], b = start[f + 1];
        if (a == b)
            continue;
        node *root = &x->nodes.v[perm[a]];
        const range *fr = &x->cu_ranges.v[root->r0];
        uint64_t origin = fr[0].lo;
        layout_tree(x, perm, a, b, origin);
        rows.len = 0;
        uint32_t nrows = 0;
        if (!encode_rows(x, fr, root->nr, origin, &rows, &nrows)) {
            st = x->err->kind;
            goto out;
        }
        size_t data_off = x->data.len;
        if (data_off > UINT32_MAX) {
            st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line index data exceeds 4 GiB");
            goto out;
        }
        uint64_t own = root_name(x, root, origin);
        if (own == UINT64_MAX) {
            st = x->err->kind;
            goto out;
        }
        /* A one-range function's origin is where its table entry starts. */
        uint64_t org = root->nr == 1 ? 0 : origin - x->base + 1;
        if (!put_uleb(x, &x->data, org) || !put_uleb(x, &x->data, own) ||
            !put_uleb(x, &x->data, rows.len) ||
            !dynbuf_add(&x->data, rows.data, rows.len) ||
            !put_uleb(x, &x->data, root->child_bytes)) {
            st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line index exceeds its size limit");
            goto out;
        }
        if (!write_tree(x, perm, a, b)) {
            st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line index exceeds its size limit");
            goto out;
        }
        for (uint32_t k = 0; k < root->nr; k++) {
            fentry e = {(uint32_t)(fr[k].lo - x->base), (uint32_t)(fr[k].hi - fr[k].lo),
                        (uint32_t)data_off, (uint32_t)x->funcs.n};
            if (!VEC_PUSH(x, x->funcs, e)) {
                st = SYMD_E_NOMEM;
                goto out;
            }
        }
        x->stats.functions++;
        x->stats.inlined += (uint32_t)(b - a - 1);
        x->stats.rows += nrows;
    }
out:
    free(start);
    free(perm);
    dynbuf_free(&rows);
    return st;
}

symd_status walk_unit(ctx *x, unit *u)
{
    symd_status st = prepare_unit(x, u);
    if (st != SYMD_OK || u->skip)
        return st;
    x->stats.units++;
    if ((st = read_lines(x, u)) != SYMD_OK)
        return st;
    x->nodes.n = 0;
    x->cu_ranges.n = 0;
    uint32_t nfuncs = 0;
    const atable *t = &x->tables.v[u->table];
    cursor c = cur_make(x->s[S_INFO].p, (size_t)u->end);
    c.pos = (size_t)u->die_off;
    uint32_t stack[MAX_DIE_DEPTH];
    size_t depth = 0;
    uint32_t cur = NONE; /* the innermost function or inline node open */
    while (cur_left(&c)) {
        uint64_t off = c.pos, code;
        if (!cur_uleb(&c, &code))
            return BAD(x, "DIE at 0x%llx: truncated", (unsigned long long)off);
        if (code == 0) {
            if (depth == 0)
                continue; /* padding after the unit DIE's children */
            cur = stack[--depth];
            continue;
        }
        const abbrev *a = find_abbrev(t, code);
        if (!a)
            return BAD(x, "DIE at 0x%llx: unknown abbreviation %llu",
                       (unsigned long long)off, (unsigned long long)code);
        die d;
        if (!read_die(x, u, t, a, &c, &d))
            return x->err->kind;
        uint32_t child = cur;
        if (a->tag == TAG_subprogram) {
            child = NONE;
            if (!(d.decl.cls == V_FLAG && d.decl.u)) {
                if (!die_ranges(x, u, &d))
                    return x->err->kind;
                clip_to_code(x);
                if (x->tmp.n) {
                    uint32_t name, idx;
                    if (!die_name_of(x, u, &d, 0, &name) || !add_node(x, nfuncs, NONE, 0, name, &idx))
                        return x->err->kind;
                    nfuncs++;
                    child = idx;
                }
            }
        } else if (a->tag == TAG_inlined_subroutine) {
            if (!add_inlined(x, u, &d, cur, &child))
                return x->err->kind;
        }
        if (a->children) {
            if (depth >= MAX_DIE_DEPTH)
                return BAD(x, "DIE at 0x%llx: nested deeper than %d",
                           (unsigned long long)off, MAX_DIE_DEPTH);
            stack[depth++] = cur;
            cur = child;
        }
    }
    return encode_unit(x, nfuncs);
}

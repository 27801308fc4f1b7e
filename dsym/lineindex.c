/* The line index: open (validate) a blob and look addresses up in place. */
#include "lineindex.h"

#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../util/util.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define HDR 48u

static bool str_ok(const lineindex *ix, uint32_t off)
{
    return off < ix->strsize && memchr(ix->strings + off, 0, ix->strsize - off);
}

symd_status lineindex_open(const uint8_t *blob, size_t len, lineindex *ix,
                           symd_err *err)
{
    memset(ix, 0, sizeof *ix);
    if (len < HDR || memcmp(blob, "LINX", 4) != 0)
        return SYMD_CORRUPT(err, "line index: bad header");
    ix->version = ld_u32le(blob + 4);
    if (ix->version < 1 || ix->version > LINEINDEX_VERSION)
        return SYMD_CORRUPT(err, "line index: version %u", ix->version);
    ix->blob = blob;
    ix->len = len;
    ix->base = ld_u64le(blob + 8);
    ix->nfuncs = ld_u32le(blob + 16);
    ix->nnames = ld_u32le(blob + 20);
    ix->nfiles = ld_u32le(blob + 24);
    ix->datasize = ld_u32le(blob + 28);
    ix->strsize = ld_u32le(blob + 32);
    ix->shift = ld_u32le(blob + 36);
    ix->flags = ld_u32le(blob + 40);
    if (ix->flags & ~LINEINDEX_F_RELATIVE)
        return SYMD_CORRUPT(err, "line index: flags 0x%x unknown", ix->flags);
    if (ix->shift > 3)
        return SYMD_CORRUPT(err, "line index: address shift %u", ix->shift);
    uint64_t need = HDR + (uint64_t)ix->nfuncs * 12 + (uint64_t)ix->nnames * 4 +
                    (uint64_t)ix->nfiles * 4 + ix->datasize + ix->strsize;
    if (need != len)
        return SYMD_CORRUPT(err, "line index: sizes do not add up");
    ix->funcs = blob + HDR;
    ix->names = ix->funcs + (size_t)ix->nfuncs * 12;
    ix->files = ix->names + (size_t)ix->nnames * 4;
    ix->data = ix->files + (size_t)ix->nfiles * 4;
    ix->strings = (const char *)ix->data + ix->datasize;
    uint64_t prev_end = 0;
    for (uint32_t i = 0; i < ix->nfuncs; i++) {
        const uint8_t *f = ix->funcs + (size_t)i * 12;
        uint64_t start = ld_u32le(f), size = ld_u32le(f + 4);
        if (start < prev_end || size == 0 || ld_u32le(f + 8) >= ix->datasize)
            return SYMD_CORRUPT(err, "line index: function %u out of order", i);
        prev_end = start + size;
    }
    for (uint32_t i = 0; i < ix->nnames; i++) {
        uint32_t e = ld_u32le(ix->names + (size_t)i * 4), raw = e & 0x7fffffffu;
        if (!str_ok(ix, raw) ||
            ((e >> 31) && !str_ok(ix, raw + (uint32_t)strlen(ix->strings + raw) + 1)))
            return SYMD_CORRUPT(err, "line index: name %u out of range", i);
    }
    for (uint32_t i = 0; i < ix->nfiles; i++)
        if (!str_ok(ix, ld_u32le(ix->files + (size_t)i * 4)))
            return SYMD_CORRUPT(err, "line index: file %u out of range", i);
    return SYMD_OK;
}

/* name/file numbers in records are index + 1; 0 (and anything past the
 * table, which open() cannot see inside records) means none. */
static void set_name(const lineindex *ix, uint64_t n, lineframe *f)
{
    f->name = f->mangled = NULL;
    if (n == 0 || n > ix->nnames)
        return;
    uint32_t e = ld_u32le(ix->names + (size_t)(n - 1) * 4);
    f->mangled = ix->strings + (e & 0x7fffffffu);
    f->name = (e >> 31) ? f->mangled + strlen(f->mangled) + 1 : f->mangled;
}

static const char *file_name(const lineindex *ix, uint64_t n)
{
    if (n == 0 || n > ix->nfiles)
        return NULL;
    return ix->strings + ld_u32le(ix->files + (size_t)(n - 1) * 4);
}

typedef struct {
    uint64_t name, file, line, col;
} callsite;

bool lineindex_lookup(const lineindex *ix, uint64_t vmaddr, linelook *out)
{
    out->n = 0;
    if (vmaddr < ix->base || vmaddr - ix->base > UINT32_MAX || !ix->nfuncs)
        return false;
    uint32_t off = (uint32_t)(vmaddr - ix->base);
    size_t lo = 0, hi = ix->nfuncs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ld_u32le(ix->funcs + mid * 12) <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return false;
    const uint8_t *fe = ix->funcs + (lo - 1) * 12;
    uint64_t fstart = ld_u32le(fe), fsize = ld_u32le(fe + 4);
    if (off - fstart >= fsize)
        return false;
    cursor c = cur_make(ix->data, ix->datasize);
    c.pos = ld_u32le(fe + 8);
    uint64_t origin, name, rows_bytes;
    if (!cur_uleb(&c, &origin) || !cur_uleb(&c, &name) || !cur_uleb(&c, &rows_bytes) ||
        rows_bytes > cur_left(&c))
        return false;
    origin = origin ? origin - 1 : fstart; /* 0: where this entry starts */
    if (origin > off)
        return false;
    uint64_t rel = off - origin;

    /* The last row at or below the address. */
    cursor r = cur_make(c.p + c.pos, (size_t)rows_bytes);
    c.pos += (size_t)rows_bytes;
    uint64_t addr = 0, line = 0, file = 0, col = 0, pline = 0, pfile = 0;
    uint64_t hit_line = 0, hit_file = 0, hit_col = 0;
    while (cur_left(&r)) {
        uint64_t da, nline, nfile = file, npline = pline, npfile = pfile, cl;
        uint8_t op;
        cur_u8(&r, &op);
        if (op < 0x80) {
            da = (uint64_t)(op >> 3 & 7) << ix->shift;
            if (op & 0x40) { /* back to the file before */
                npfile = file, npline = line;
                nfile = pfile, nline = pline;
            } else {
                nline = line;
            }
            nline += (uint64_t)((int64_t)(op & 7) - 3);
        } else if (op != 0x80) { /* same file, line in the op, address next */
            uint64_t q;
            if (!cur_uleb(&r, &q) || q > (UINT64_MAX >> 3))
                return false;
            da = q << ix->shift;
            nline = line + (uint64_t)((int64_t)(op & 0x7f) - 64);
        } else {
            uint64_t v, f = file;
            if (!cur_uleb(&r, &da) || !cur_uleb(&r, &v))
                return false;
            if ((v & 1) && !cur_uleb(&r, &f))
                return false;
            uint64_t zz = v >> 1;
            nline = line + (uint64_t)lix_unzigzag(zz);
            if (v & 1) {
                npfile = file, npline = line;
                nfile = f;
            }
        }
        if (!cur_uleb(&r, &cl))
            return false;
        addr += da;
        if (addr > rel)
            break;
        line = nline, file = nfile, pline = npline, pfile = npfile, col = cl;
        hit_line = line, hit_file = file, hit_col = col;
    }

    /* The inline chain: at each level the last node that holds the address
     * (llvm keeps the last DIE inserted for a range). */
    uint64_t inl;
    if (!cur_uleb(&c, &inl) || inl > cur_left(&c))
        return false;
    callsite chain[LINEINDEX_MAX_DEPTH];
    size_t depth = 0;
    size_t level_end = c.pos + (size_t)inl;
    cursor t = cur_make(c.p, level_end);
    t.pos = c.pos;
    /* Bases the next sibling's fields count from. */
    uint64_t cursor_pos = origin, cursor_line = 0, cursor_file = 0;
    while (depth < LINEINDEX_MAX_DEPTH) {
        bool found = false;
        size_t kids = 0, kids_end = 0;
        uint64_t kids_pos = 0;
        callsite hit = {0, 0, 0, 0};
        while (cur_left(&t)) {
            uint64_t nr, a, b, first = 0;
            bool in = false;
            if (!cur_uleb(&t, &nr))
                return false;
            unsigned sh = (nr & 4) ? ix->shift : 0;
            bool has_kids = nr & 2, same_file = nr & 1;
            nr >>= 3;
            uint64_t prev = cursor_pos;
            for (uint64_t i = 0; i < nr; i++) {
                if (!cur_uleb(&t, &a) || !cur_uleb(&t, &b))
                    return false;
                uint64_t s = prev + ((uint64_t)lix_unzigzag(a) << sh);
                if (i == 0)
                    first = s;
                in |= off - s < b << sh; /* modular: s above off never holds it */
                prev = s + (b << sh);
            }
            callsite cs;
            uint64_t cb = 0, zl;
            cs.file = cursor_file;
            if (!cur_uleb(&t, &cs.name) || (!same_file && !cur_uleb(&t, &cs.file)) ||
                !cur_uleb(&t, &zl) || !cur_uleb(&t, &cs.col) ||
                (has_kids && !cur_uleb(&t, &cb)) || cb > cur_left(&t))
                return false;
            cs.line = cursor_line + (uint64_t)lix_unzigzag(zl);
            if (in) {
                found = true;
                hit = cs;
                kids = t.pos;
                kids_end = t.pos + (size_t)cb;
                kids_pos = first;
            }
            t.pos += (size_t)cb;
            cursor_pos = prev;
            cursor_line = cs.line;
            cursor_file = cs.file;
        }
        if (!found)
            break;
        chain[depth++] = hit;
        t = cur_make(c.p, kids_end);
        t.pos = kids;
        cursor_pos = kids_pos;
        cursor_line = 0;
        cursor_file = 0;
    }

    /* Innermost first: its place comes from the line table, every outer
     * level's from the call site of the level inside it. */
    size_t n = 0;
    for (size_t i = depth; i-- > 0;) {
        lineframe *f = &out->f[n];
        set_name(ix, chain[i].name, f);
        if (i == depth - 1) {
            f->file = file_name(ix, hit_file);
            f->line = f->file ? (uint32_t)hit_line : 0;
            f->column = f->file ? (uint32_t)hit_col : 0;
        } else {
            f->file = file_name(ix, chain[i + 1].file);
            f->line = (uint32_t)chain[i + 1].line;
            f->column = (uint32_t)chain[i + 1].col;
        }
        n++;
    }
    lineframe *f = &out->f[n];
    out->outer_from_symbols = name == 1;
    set_name(ix, name >= 2 ? name - 1 : 0, f);
    if (depth == 0) {
        f->file = file_name(ix, hit_file);
        f->line = f->file ? (uint32_t)hit_line : 0;
        f->column = f->file ? (uint32_t)hit_col : 0;
    } else {
        f->file = file_name(ix, chain[0].file);
        f->line = (uint32_t)chain[0].line;
        f->column = (uint32_t)chain[0].col;
    }
    out->n = n + 1;
    out->func_start = ix->base + origin;
    return true;
}

/* ---- whole records (dump-syms) ------------------------------------------- */

void lineindex_xfunc_free(lineindex_xfunc *f)
{
    free(f->rows);
    free(f->nodes);
    free(f->ranges);
    memset(f, 0, sizeof *f);
}

typedef struct {
    const lineindex *ix;
    lineindex_xfunc *f;
    size_t rows_cap, nodes_cap, ranges_cap;
} xdec;

/* The siblings in t (one level), their ranges counted from pos; each
 * node's children decoded after it (preorder), one level deeper. */
static bool decode_level(xdec *d, cursor t, uint64_t pos, uint32_t depth, uint32_t parent)
{
    uint64_t cline = 0, cfile = 0;
    while (cur_left(&t)) {
        uint64_t nr, a, b;
        if (!cur_uleb(&t, &nr))
            return false;
        unsigned sh = (nr & 4) ? d->ix->shift : 0;
        bool has_kids = nr & 2, same_file = nr & 1;
        nr >>= 3;
        if (nr > cur_left(&t)) /* each range takes two bytes at least */
            return false;
        lineindex_xfunc *f = d->f;
        if (!array_grow((void **)&f->nodes, &d->nodes_cap, f->nnodes + 1, sizeof *f->nodes) ||
            !array_grow((void **)&f->ranges, &d->ranges_cap, f->nranges + (size_t)nr,
                        sizeof *f->ranges))
            return false;
        lineindex_xnode *n = &f->nodes[f->nnodes];
        memset(n, 0, sizeof *n);
        n->depth = depth;
        n->parent = parent;
        n->range0 = f->nranges;
        uint64_t prev = pos, first = pos;
        for (uint64_t i = 0; i < nr; i++) {
            if (!cur_uleb(&t, &a) || !cur_uleb(&t, &b))
                return false;
            uint64_t lo = prev + ((uint64_t)lix_unzigzag(a) << sh);
            if (i == 0)
                first = lo;
            prev = lo + (b << sh);
            f->ranges[f->nranges++] = (lineindex_range){d->ix->base + lo, d->ix->base + prev};
        }
        n->nranges = (size_t)nr;
        uint64_t name, file = cfile, zl, col, cb = 0;
        if (!cur_uleb(&t, &name) || (!same_file && !cur_uleb(&t, &file)) || !cur_uleb(&t, &zl) ||
            !cur_uleb(&t, &col) || (has_kids && !cur_uleb(&t, &cb)) || cb > cur_left(&t))
            return false;
        lineframe lf;
        set_name(d->ix, name, &lf);
        n->name = lf.name;
        n->mangled = lf.mangled;
        n->call_file = file_name(d->ix, file);
        cline += (uint64_t)lix_unzigzag(zl);
        n->call_line = (uint32_t)cline;
        n->call_column = (uint32_t)col;
        uint32_t me = (uint32_t)f->nnodes++;
        if (has_kids) {
            cursor k = cur_make(t.p, t.pos + (size_t)cb);
            k.pos = t.pos;
            if (depth + 1 < LINEINDEX_MAX_DEPTH && !decode_level(d, k, first, depth + 1, me))
                return false;
            t.pos += (size_t)cb;
        }
        pos = prev;
        cfile = file;
    }
    return true;
}

bool lineindex_function(const lineindex *ix, uint32_t i, lineindex_xfunc *out)
{
    memset(out, 0, sizeof *out);
    if (i >= ix->nfuncs)
        return false;
    const uint8_t *fe = ix->funcs + (size_t)i * 12;
    uint64_t fstart = ld_u32le(fe);
    out->start = ix->base + fstart;
    out->size = ld_u32le(fe + 4);
    cursor c = cur_make(ix->data, ix->datasize);
    c.pos = ld_u32le(fe + 8);
    uint64_t origin, name, rows_bytes, inl;
    if (!cur_uleb(&c, &origin) || !cur_uleb(&c, &name) || !cur_uleb(&c, &rows_bytes) ||
        rows_bytes > cur_left(&c))
        return false;
    origin = origin ? origin - 1 : fstart;
    out->origin = ix->base + origin;
    out->name_from_symbols = name == 1;
    lineframe lf;
    set_name(ix, name >= 2 ? name - 1 : 0, &lf);
    out->name = lf.name;
    out->mangled = lf.mangled;
    xdec d = {ix, out, 0, 0, 0};
    /* Rows: the state machine of lineindex_lookup, every row kept. */
    cursor r = cur_make(c.p + c.pos, (size_t)rows_bytes);
    c.pos += (size_t)rows_bytes;
    uint64_t addr = 0, line = 0, file = 0, pline = 0, pfile = 0;
    while (cur_left(&r)) {
        uint64_t da, nline, nfile = file, npline = pline, npfile = pfile, cl;
        uint8_t op;
        cur_u8(&r, &op);
        if (op < 0x80) {
            da = (uint64_t)(op >> 3 & 7) << ix->shift;
            if (op & 0x40) {
                npfile = file, npline = line;
                nfile = pfile, nline = pline;
            } else {
                nline = line;
            }
            nline += (uint64_t)((int64_t)(op & 7) - 3);
        } else if (op != 0x80) {
            uint64_t q;
            if (!cur_uleb(&r, &q) || q > (UINT64_MAX >> 3))
                goto bad;
            da = q << ix->shift;
            nline = line + (uint64_t)((int64_t)(op & 0x7f) - 64);
        } else {
            uint64_t v, f = file;
            if (!cur_uleb(&r, &da) || !cur_uleb(&r, &v) || ((v & 1) && !cur_uleb(&r, &f)))
                goto bad;
            nline = line + (uint64_t)lix_unzigzag(v >> 1);
            if (v & 1) {
                npfile = file, npline = line;
                nfile = f;
            }
        }
        if (!cur_uleb(&r, &cl))
            goto bad;
        addr += da;
        line = nline, file = nfile, pline = npline, pfile = npfile;
        if (!array_grow((void **)&out->rows, &d.rows_cap, out->nrows + 1, sizeof *out->rows))
            goto bad;
        const char *fn = file_name(ix, file);
        out->rows[out->nrows++] = (lineindex_xrow){ix->base + origin + addr, fn,
                                                   fn ? (uint32_t)line : 0, fn ? (uint32_t)cl : 0};
    }
    if (!cur_uleb(&c, &inl) || inl > cur_left(&c))
        goto bad;
    cursor t = cur_make(c.p, c.pos + (size_t)inl);
    t.pos = c.pos;
    if (!decode_level(&d, t, origin, 0, UINT32_MAX))
        goto bad;
    return true;
bad:
    lineindex_xfunc_free(out);
    return false;
}

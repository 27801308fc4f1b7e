/* DWARF reader: the inline tree, one node per function with code and per
 * inlined call inside one, laid out and encoded as the tree of a function
 * record (see lineindex.h). */
#include "dwarf_int.h"

#include <string.h>
#include "../util/metered.h" /* last: counts this file's allocations */

static size_t uleb_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

bool add_node(ctx *x, uint32_t func, uint32_t parent, uint32_t depth,
              uint32_t name, uint32_t *idx)
{
    size_t n = normalize(x->tmp.v, x->tmp.n);
    node nd;
    memset(&nd, 0, sizeof nd);
    nd.func = func;
    nd.parent = parent;
    nd.depth = depth;
    nd.name = name;
    nd.r0 = (uint32_t)x->cu_ranges.n;
    nd.nr = (uint32_t)n;
    if (x->cu_ranges.n + n > UINT32_MAX || x->nodes.n >= UINT32_MAX)
        return symd_fail(x->err, SYMD_E_TOO_LARGE, "too many ranges in one unit"), false;
    for (size_t i = 0; i < n; i++)
        if (!VEC_PUSH(x, x->cu_ranges, x->tmp.v[i]))
            return false;
    *idx = (uint32_t)x->nodes.n;
    return VEC_PUSH(x, x->nodes, nd);
}

bool add_inlined(ctx *x, const unit *u, const die *d, uint32_t cur, uint32_t *child)
{
    *child = NONE;
    if (cur != NONE && x->nodes.v[cur].depth < LINEINDEX_MAX_DEPTH) {
        if (!die_ranges(x, u, d))
            return false;
        /* Only ranges with bytes count: [a, a) and [b, a) drop here. */
        x->tmp.n = normalize(x->tmp.v, x->tmp.n);
        if (x->tmp.n) {
            uint32_t name, idx;
            const node *p = &x->nodes.v[cur];
            if (!die_name_of(x, u, d, 0, &name) ||
                !add_node(x, p->func, cur, p->depth + 1, name, &idx))
                return false;
            node *nd = &x->nodes.v[idx];
            if (d->call_file.cls == V_CONST && d->call_file.u < x->cu_files.n)
                nd->call_file = x->cu_files.v[d->call_file.u];
            if (d->call_line.cls == V_CONST && d->call_line.u <= UINT32_MAX)
                nd->call_line = (uint32_t)d->call_line.u;
            if (d->call_col.cls == V_CONST && d->call_col.u <= UINT32_MAX)
                nd->call_col = (uint32_t)d->call_col.u;
            *child = idx;
        }
    }
    return true;
}

/* Size (write == NULL) or bytes of one inline node's own fields. Positions
 * are relative to the previous sibling's end (the parent's start for a first
 * child) and lengths in address quanta when all of them divide; call lines
 * relative to the previous sibling's (see lineindex.h). */
static size_t node_fields(ctx *x, const node *nd, dynbuf *write)
{
    const range *r = &x->cu_ranges.v[nd->r0];
    uint64_t mask = ((uint64_t)1 << x->shift) - 1;
    bool q = true;
    uint64_t prev = nd->base;
    for (uint32_t i = 0; i < nd->nr; i++) {
        q &= !((r[i].lo - prev) & mask) && !((r[i].hi - r[i].lo) & mask);
        prev = r[i].hi;
    }
    unsigned sh = q ? x->shift : 0;
    size_t sz = 0;
#define PUT(v)                                                   \
    do {                                                         \
        uint64_t v_ = (v);                                       \
        sz += uleb_len(v_);                                      \
        if (write && !put_uleb(x, write, v_))                    \
            return 0;                                            \
    } while (0)
    bool same_file = nd->call_file == nd->file_base, kids = nd->child_bytes > 0;
    PUT((uint64_t)nd->nr << 3 | (uint64_t)q << 2 | (uint64_t)kids << 1 | same_file);
    prev = nd->base;
    for (uint32_t i = 0; i < nd->nr; i++) {
        PUT(lix_zigzag((int64_t)(r[i].lo - prev) >> sh));
        PUT((r[i].hi - r[i].lo) >> sh);
        prev = r[i].hi;
    }
    uint32_t fin;
    if (nd->name != NONE && !use_name(x, nd->name >> 1, &fin))
        return 0;
    PUT(nd->name == NONE ? 0 : (uint64_t)fin + 1);
    if (!same_file)
        PUT(nd->call_file);
    PUT(lix_zigzag((int64_t)nd->call_line - (int64_t)nd->line_base));
    PUT(nd->call_col);
    if (kids)
        PUT(nd->child_bytes);
#undef PUT
    return sz;
}

void layout_tree(ctx *x, const uint32_t *perm, size_t a, size_t b, uint64_t origin)
{
    node *root = &x->nodes.v[perm[a]];
    /* Preorder: a node's bases come from its parent's running cursor. */
    root->next = origin;
    root->next_line = 0;
    root->next_file = 0;
    for (size_t k = a + 1; k < b; k++) {
        node *nd = &x->nodes.v[perm[k]], *p = &x->nodes.v[nd->parent];
        const range *r = &x->cu_ranges.v[nd->r0];
        nd->base = p->next;
        nd->line_base = p->next_line;
        nd->file_base = p->next_file;
        p->next = r[nd->nr - 1].hi;
        p->next_line = nd->call_line;
        p->next_file = nd->call_file;
        nd->next = r[0].lo;
        nd->next_line = 0;
        nd->next_file = 0;
    }
    for (size_t k = b; k-- > a;) {
        node *nd = &x->nodes.v[perm[k]];
        nd->bytes = 0;
        if (k == a)
            break;
        nd->bytes = node_fields(x, nd, NULL) + nd->child_bytes;
        x->nodes.v[nd->parent].child_bytes += nd->bytes;
    }
}

bool write_tree(ctx *x, const uint32_t *perm, size_t a, size_t b)
{
    for (size_t k = a + 1; k < b; k++) {
        node *nd = &x->nodes.v[perm[k]];
        if (!node_fields(x, nd, &x->data))
            return false;
    }
    return true;
}

/* Demangling tree nodes and the bounded arena that owns them. */
#include "node.h"

#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "../util/metered.h" /* last: counts this file's allocations */

struct sarena_block {
    sarena_block *next;
    /* data follows, 8-aligned by the struct's size */
    uint64_t align_;
};

void sarena_init(sarena *a, void *first, size_t n)
{
    a->cur = first;
    a->end = (char *)first + n;
    a->blocks = NULL;
    a->total = 0;
    a->nodes = 0;
    a->failed = false;
}

void sarena_free(sarena *a)
{
    sarena_block *b = a->blocks;
    while (b) {
        sarena_block *next = b->next;
        free(b);
        b = next;
    }
    a->blocks = NULL;
}

/* Adds a block big enough for n bytes; blocks double so that the number of
 * malloc calls stays logarithmic in what one name needs. */
static bool grow(sarena *a, size_t n)
{
    size_t size = a->total ? a->total : 64 * 1024;
    if (size < n + 64)
        size = n + 64;
    if (a->total + size > SARENA_MAX_BYTES)
        return false;
    sarena_block *b = malloc(sizeof *b + size);
    if (!b)
        return false;
    b->next = a->blocks;
    a->blocks = b;
    a->total += size;
    a->cur = (char *)(b + 1);
    a->end = a->cur + size;
    return true;
}

void *sarena_alloc(sarena *a, size_t n)
{
    if (a->failed)
        return NULL;
    n = (n + 7) & ~(size_t)7;
    /* cur is kept 8-aligned: every size handed out is a multiple of 8 and
     * every block starts aligned. */
    if ((size_t)(a->end - a->cur) < n && !grow(a, n)) {
        a->failed = true;
        return NULL;
    }
    void *p = a->cur;
    a->cur += n;
    return p;
}

const char *sarena_dup(sarena *a, const char *p, size_t n)
{
    char *q = sarena_alloc(a, n ? n : 1);
    if (q && n)
        memcpy(q, p, n);
    return q;
}

snode *snode_new(sarena *a, snode_kind k)
{
    if (a->nodes >= SWIFT_MAX_NODES) {
        a->failed = true;
        return NULL;
    }
    snode *n = sarena_alloc(a, sizeof *n);
    if (!n)
        return NULL;
    a->nodes++;
    n->kind = (uint16_t)k;
    n->payload = SP_NONE;
    n->n = 0;
    n->cap = 2;
    n->kids = n->inl;
    n->v.index = 0;
    return n;
}

snode *snode_text(sarena *a, snode_kind k, const char *p, size_t len)
{
    snode *n = snode_new(a, k);
    if (!n)
        return NULL;
    n->payload = SP_TEXT;
    n->v.text.p = p;
    n->v.text.len = (uint32_t)len;
    return n;
}

snode *snode_cstr(sarena *a, snode_kind k, const char *s)
{
    return snode_text(a, k, s, strlen(s));
}

snode *snode_index(sarena *a, snode_kind k, uint64_t index)
{
    snode *n = snode_new(a, k);
    if (!n)
        return NULL;
    n->payload = SP_INDEX;
    n->v.index = index;
    return n;
}

bool snode_add(sarena *a, snode *parent, snode *child)
{
    if (!parent || !child)
        return false;
    if (parent->n == parent->cap) {
        uint32_t cap = parent->cap * 2;
        snode **kids = sarena_alloc(a, cap * sizeof *kids);
        if (!kids)
            return false;
        memcpy(kids, parent->kids, parent->n * sizeof *kids);
        parent->kids = kids;
        parent->cap = cap;
    }
    parent->kids[parent->n++] = child;
    return true;
}

void snode_reverse(snode *n, size_t from)
{
    if (!n || from >= n->n)
        return;
    for (size_t i = from, j = n->n - 1; i < j; i++, j--) {
        snode *t = n->kids[i];
        n->kids[i] = n->kids[j];
        n->kids[j] = t;
    }
}

void snode_remove(snode *n, size_t at)
{
    if (!n || at >= n->n)
        return;
    memmove(n->kids + at, n->kids + at + 1, (n->n - at - 1) * sizeof *n->kids);
    n->n--;
}

snode *snode_find(const snode *n, snode_kind k)
{
    for (uint32_t i = 0; n && i < n->n; i++)
        if (n->kids[i]->kind == k)
            return n->kids[i];
    return NULL;
}

bool snode_text_is(const snode *n, const char *s)
{
    size_t len = strlen(s);
    return n && n->payload == SP_TEXT && n->v.text.len == len && memcmp(n->v.text.p, s, len) == 0;
}

static const bool context_kinds[SK__COUNT] = {
#define SWIFT_NODE_CTX(name) [SK_##name] = true,
#define SWIFT_NODE_NOCTX(name)
    SWIFT_NODE_KINDS(SWIFT_NODE_CTX, SWIFT_NODE_NOCTX)
#undef SWIFT_NODE_CTX
#undef SWIFT_NODE_NOCTX
};

bool snode_is_context(int k)
{
    return k >= 0 && k < SK__COUNT && context_kinds[k];
}

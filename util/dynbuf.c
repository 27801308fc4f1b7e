/* Growable byte buffer with a hard size limit fixed at creation. */
#include "dynbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metered.h" /* last: counts this file's allocations */

void dynbuf_init(dynbuf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

bool dynbuf_over_limit(const dynbuf *b, size_t n)
{
    return n > b->max || b->len > b->max - n;
}

static bool grow(dynbuf *b, size_t need)
{
    if (need + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need + 1) {
        if (cap > SIZE_MAX / 2) {
            cap = need + 1;
            break;
        }
        cap *= 2;
    }
    /* Never reserve far beyond what the limit allows. */
    if (b->max < SIZE_MAX && cap > b->max + 1)
        cap = b->max + 1;
    uint8_t *p = realloc(b->data, cap);
    if (!p)
        return false;
    b->data = p;
    b->cap = cap;
    return true;
}

bool dynbuf_reserve(dynbuf *b, size_t n)
{
    return !dynbuf_over_limit(b, n) && grow(b, b->len + n);
}

bool dynbuf_add_slow(dynbuf *b, const void *p, size_t n)
{
    if (!dynbuf_reserve(b, n))
        return false;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return true;
}

void dynbuf_free(dynbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

uint8_t *dynbuf_take(dynbuf *b, size_t *len)
{
    uint8_t *p = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

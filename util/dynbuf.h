/* Growable byte buffer with a hard size limit fixed at creation. */
#ifndef SYMD_DYNBUF_H
#define SYMD_DYNBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint8_t *data; /* NUL-terminated past len whenever data != NULL */
    size_t len;
    size_t cap;
    size_t max;    /* len never exceeds this */
} dynbuf;

void dynbuf_init(dynbuf *b, size_t max);
/* Makes room for n more bytes (plus the NUL); false when that would pass max
 * or memory is out. Writers may then fill data[len .. len+n) and advance len
 * themselves (keeping data[len] = 0). */
bool dynbuf_reserve(dynbuf *b, size_t n);
bool dynbuf_add_slow(dynbuf *b, const void *p, size_t n);
/* Appends n bytes; false (buffer unchanged) when over max or out of memory.
 * dynbuf_over_limit() tells the two apart. */
static inline bool dynbuf_add(dynbuf *b, const void *p, size_t n)
{
    /* cap never exceeds max + 1, so fitting in cap respects the limit. */
    if (b->data && n < b->cap - b->len) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = 0;
        return true;
    }
    return dynbuf_add_slow(b, p, n);
}
bool dynbuf_over_limit(const dynbuf *b, size_t n);
void dynbuf_free(dynbuf *b);
/* Hands the bytes to the caller (free() them); the buffer is left empty. */
uint8_t *dynbuf_take(dynbuf *b, size_t *len);

#endif

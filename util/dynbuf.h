/* Growable byte buffer with a hard size limit fixed at creation. */
#ifndef SYMD_DYNBUF_H
#define SYMD_DYNBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *data; /* NUL-terminated past len whenever data != NULL */
    size_t len;
    size_t cap;
    size_t max;    /* len never exceeds this */
} dynbuf;

void dynbuf_init(dynbuf *b, size_t max);
/* Appends n bytes; false (buffer unchanged) when over max or out of memory.
 * dynbuf_over_limit() tells the two apart. */
bool dynbuf_add(dynbuf *b, const void *p, size_t n);
bool dynbuf_addstr(dynbuf *b, const char *s);
bool dynbuf_addf(dynbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
bool dynbuf_over_limit(const dynbuf *b, size_t n);
void dynbuf_reset(dynbuf *b);
void dynbuf_free(dynbuf *b);
/* Hands the bytes to the caller (free() them); the buffer is left empty. */
uint8_t *dynbuf_take(dynbuf *b, size_t *len);

#endif

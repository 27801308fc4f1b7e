/* Bounds-checked readers over untrusted bytes and overflow-checked sizes. */
#ifndef SYMD_CURSOR_H
#define SYMD_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A read position inside [p, p+len). Readers advance only on success, so a
 * failed read leaves the cursor where it was. */
typedef struct {
    const uint8_t *p;
    size_t len;
    size_t pos;
} cursor;

static inline cursor cur_make(const uint8_t *p, size_t len)
{
    cursor c = {p, len, 0};
    return c;
}

static inline size_t cur_left(const cursor *c) { return c->len - c->pos; }

/* a + b without wrap-around; false on overflow. */
static inline bool size_add(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}
static inline bool size_mul(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool u64_add(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* True when [off, off+size) lies inside a buffer of len bytes. */
static inline bool range_ok(uint64_t off, uint64_t size, uint64_t len)
{
    return off <= len && size <= len - off;
}

static inline bool cur_skip(cursor *c, size_t n)
{
    if (n > cur_left(c))
        return false;
    c->pos += n;
    return true;
}

static inline bool cur_take(cursor *c, size_t n, const uint8_t **out)
{
    if (n > cur_left(c))
        return false;
    *out = c->p + c->pos;
    c->pos += n;
    return true;
}

static inline bool cur_u8(cursor *c, uint8_t *v)
{
    if (cur_left(c) < 1)
        return false;
    *v = c->p[c->pos++];
    return true;
}

static inline uint32_t ld_u32le(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}
static inline uint32_t ld_u32be(const uint8_t *b)
{
    return (uint32_t)b[3] | (uint32_t)b[2] << 8 | (uint32_t)b[1] << 16 |
           (uint32_t)b[0] << 24;
}
static inline uint64_t ld_u64le(const uint8_t *b)
{
    return (uint64_t)ld_u32le(b) | (uint64_t)ld_u32le(b + 4) << 32;
}
static inline uint64_t ld_u64be(const uint8_t *b)
{
    return (uint64_t)ld_u32be(b) << 32 | (uint64_t)ld_u32be(b + 4);
}
static inline uint16_t ld_u16le(const uint8_t *b)
{
    return (uint16_t)(b[0] | b[1] << 8);
}

static inline void st_u32le(uint8_t *b, uint32_t v)
{
    b[0] = (uint8_t)v; b[1] = (uint8_t)(v >> 8);
    b[2] = (uint8_t)(v >> 16); b[3] = (uint8_t)(v >> 24);
}
static inline void st_u64le(uint8_t *b, uint64_t v)
{
    st_u32le(b, (uint32_t)v);
    st_u32le(b + 4, (uint32_t)(v >> 32));
}

#define CUR_READER(name, type, size, load)                  \
    static inline bool name(cursor *c, type *v)             \
    {                                                       \
        if (cur_left(c) < (size))                           \
            return false;                                   \
        *v = load(c->p + c->pos);                           \
        c->pos += (size);                                   \
        return true;                                        \
    }
CUR_READER(cur_u16le, uint16_t, 2, ld_u16le)
CUR_READER(cur_u32le, uint32_t, 4, ld_u32le)
CUR_READER(cur_u32be, uint32_t, 4, ld_u32be)
CUR_READER(cur_u64le, uint64_t, 8, ld_u64le)
CUR_READER(cur_u64be, uint64_t, 8, ld_u64be)
#undef CUR_READER

/* Unsigned LEB128, at most 64 bits; fails on truncation or overflow. */
static inline bool cur_uleb(cursor *c, uint64_t *v)
{
    uint64_t r = 0;
    unsigned shift = 0;
    size_t pos = c->pos;
    for (;;) {
        if (pos >= c->len)
            return false;
        uint8_t b = c->p[pos++];
        uint64_t low = b & 0x7f;
        if (shift >= 64 || (shift == 63 && low > 1))
            return false;
        r |= low << shift;
        shift += 7;
        if (!(b & 0x80))
            break;
    }
    c->pos = pos;
    *v = r;
    return true;
}

/* Signed LEB128, at most 64 bits; fails on truncation or overflow. */
static inline bool cur_sleb(cursor *c, int64_t *v)
{
    uint64_t r = 0;
    unsigned shift = 0;
    size_t pos = c->pos;
    uint8_t b;
    do {
        if (pos >= c->len || shift >= 64)
            return false;
        b = c->p[pos++];
        r |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        r |= ~(uint64_t)0 << shift;
    c->pos = pos;
    *v = (int64_t)r;
    return true;
}

#endif

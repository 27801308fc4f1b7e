/* A small streaming JSON writer into a dynbuf. */
#include "jsonw.h"
#include "util.h"

#include <string.h>
#include "metered.h" /* last: counts this file's allocations */

void jw_init(jsonw *w, dynbuf *b)
{
    w->b = b;
    w->ok = true;
}

static inline void put(jsonw *w, const void *p, size_t n)
{
    if (w->ok && !dynbuf_add(w->b, p, n))
        w->ok = false;
}

void jw_raw(jsonw *w, const char *s)
{
    put(w, s, strlen(s));
}

void jw_raw_n(jsonw *w, const char *s, size_t n)
{
    put(w, s, n);
}

/* Bytes that cannot be copied as they are: controls, '"', '\\', non-ASCII. */
static const uint8_t special[256] = {
    [0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1,
};

void jw_str(jsonw *w, const char *s)
{
    size_t n = strlen(s);
    /* Worst case: every byte becomes a 6-byte escape, plus the quotes. */
    if (!w->ok || n > SIZE_MAX / 8 || !dynbuf_reserve(w->b, n * 6 + 2)) {
        w->ok = false;
        return;
    }
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    char *o = (char *)w->b->data + w->b->len;
    *o++ = '"';
    /* Symbol names are nearly always plain ASCII: copy 8 bytes at a time
     * while no byte in the word needs attention. */
    while (end - p >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
#define HASZERO(x) (((x) - ones) & ~(x) & highs)
        if ((v & highs) || HASZERO(v ^ (ones * '"')) || HASZERO(v ^ (ones * '\\')) ||
            ((v - ones * 0x20) & ~v & highs))
            break;
#undef HASZERO
        memcpy(o, p, 8);
        o += 8;
        p += 8;
    }
    while (p < end) {
        if (!special[*p]) {
            *o++ = (char)*p++;
            continue;
        }
        if (*p >= 0x80) {
            size_t k = utf8_seq_len(p, end);
            if (k) {
                memcpy(o, p, k);
                o += k;
                p += k;
            } else {
                memcpy(o, "\\ufffd", 6);
                o += 6;
                p++;
            }
            continue;
        }
        static const char hx[] = "0123456789abcdef";
        *o++ = '\\';
        switch (*p) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\t': *o++ = 't'; break;
        case '\r': *o++ = 'r'; break;
        default:
            *o++ = 'u'; *o++ = '0'; *o++ = '0';
            *o++ = hx[*p >> 4]; *o++ = hx[*p & 15];
        }
        p++;
    }
    *o++ = '"';
    w->b->len = (size_t)(o - (char *)w->b->data);
    w->b->data[w->b->len] = 0;
}

void jw_copy(jsonw *w, size_t at, size_t n)
{
    if (!w->ok || at > w->b->len || n > w->b->len - at || !dynbuf_reserve(w->b, n)) {
        w->ok = false;
        return;
    }
    memcpy(w->b->data + w->b->len, w->b->data + at, n); /* no overlap: past len */
    w->b->len += n;
    w->b->data[w->b->len] = 0;
}

void jw_hex(jsonw *w, uint64_t v)
{
    static const char hx[] = "0123456789abcdef";
    char buf[24], *o = buf + sizeof buf;
    *--o = '"';
    do {
        *--o = hx[v & 15];
        v >>= 4;
    } while (v);
    *--o = 'x';
    *--o = '0';
    *--o = '"';
    put(w, o, (size_t)(buf + sizeof buf - o));
}

void jw_u64(jsonw *w, uint64_t v)
{
    char buf[24], *o = buf + sizeof buf;
    do {
        *--o = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(w, o, (size_t)(buf + sizeof buf - o));
}

void jw_i64(jsonw *w, int64_t v)
{
    if (v < 0) {
        put(w, "-", 1);
        jw_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        jw_u64(w, (uint64_t)v);
    }
}


/* A small streaming JSON writer into a dynbuf. */
#include "jsonw.h"

#include <stdio.h>
#include <string.h>

void jw_init(jsonw *w, dynbuf *b)
{
    w->b = b;
    w->ok = true;
}

static void put(jsonw *w, const void *p, size_t n)
{
    if (w->ok && !dynbuf_add(w->b, p, n))
        w->ok = false;
}

void jw_raw(jsonw *w, const char *s)
{
    put(w, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned min;
    if ((c & 0xe0) == 0xc0) { n = 2; min = 0x80; c &= 0x1f; }
    else if ((c & 0xf0) == 0xe0) { n = 3; min = 0x800; c &= 0x0f; }
    else if ((c & 0xf8) == 0xf0) { n = 4; min = 0x10000; c &= 0x07; }
    else return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return n;
}

void jw_str(jsonw *w, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    put(w, "\"", 1);
    while (*p) {
        const unsigned char *run = p;
        while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        put(w, run, (size_t)(p - run));
        if (!*p)
            break;
        if (*p >= 0x80) {
            size_t n = utf8_len(p);
            if (n) {
                put(w, p, n);
                p += n;
            } else {
                put(w, "\\ufffd", 6);
                p++;
            }
            continue;
        }
        char esc[8];
        switch (*p) {
        case '"': put(w, "\\\"", 2); break;
        case '\\': put(w, "\\\\", 2); break;
        case '\n': put(w, "\\n", 2); break;
        case '\t': put(w, "\\t", 2); break;
        case '\r': put(w, "\\r", 2); break;
        default:
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            put(w, esc, 6);
        }
        p++;
    }
    put(w, "\"", 1);
}

void jw_key(jsonw *w, const char *key)
{
    jw_str(w, key);
    put(w, ":", 1);
}

void jw_hex(jsonw *w, uint64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "\"0x%llx\"", (unsigned long long)v);
    put(w, buf, (size_t)n);
}

void jw_u64(jsonw *w, uint64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    put(w, buf, (size_t)n);
}

void jw_i64(jsonw *w, int64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
    put(w, buf, (size_t)n);
}

void jw_bool(jsonw *w, bool v)
{
    jw_raw(w, v ? "true" : "false");
}

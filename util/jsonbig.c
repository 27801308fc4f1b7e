/* JSON with integers of any size (see jsonbig.h). */
#include "jsonbig.h"

#include <stdlib.h>
#include <string.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Does the integer literal s[0..n) ('-'? digits) fit int64_t? */
static bool fits_i64(const char *s, size_t n)
{
    bool neg = n && s[0] == '-';
    const char *d = s + neg;
    size_t nd = n - neg;
    while (nd > 1 && *d == '0') { /* JSON forbids leading zeros; jansson says so */
        d++;
        nd--;
    }
    static const char max[] = "9223372036854775807", min[] = "9223372036854775808";
    if (nd != 19)
        return nd < 19;
    return memcmp(d, neg ? min : max, 19) <= 0;
}

/* One pass over buf: copies it into out (when not NULL) with every integer
 * literal outside int64_t rewritten as "\u001f<literal>". Returns how many
 * literals were (or would be) rewritten; *n is the bytes written. */
static size_t rewrite(const char *buf, size_t len, char *out, size_t *n)
{
    size_t k = 0, w = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < len;) {
        char c = buf[i];
        size_t s = i;
        if (in_str || (c != '-' && !is_digit(c))) {
            if (esc)
                esc = false;
            else if (in_str && c == '\\')
                esc = true;
            else if (c == '"')
                in_str = !in_str;
            i++;
        } else {
            if (c == '-')
                i++;
            while (i < len && is_digit(buf[i]))
                i++;
            size_t dn = i - s - (c == '-');
            bool real = false;
            if (i < len && buf[i] == '.') { /* the rest of a real is its own */
                real = true;
                for (i++; i < len && is_digit(buf[i]); i++)
                    ;
            }
            if (i < len && (buf[i] == 'e' || buf[i] == 'E')) {
                real = true;
                i++;
                if (i < len && (buf[i] == '+' || buf[i] == '-'))
                    i++;
                while (i < len && is_digit(buf[i]))
                    i++;
            }
            if (!real && dn > 0 && !fits_i64(buf + s, i - s)) {
                k++;
                if (out) {
                    memcpy(out + w, "\"\\u001f", 7);
                    memcpy(out + w + 7, buf + s, i - s);
                    out[w + 7 + (i - s)] = '"';
                }
                w += 8 + (i - s);
                continue;
            }
        }
        if (out)
            memcpy(out + w, buf + s, i - s);
        w += i - s;
    }
    *n = w;
    return k;
}

json_t *jsonbig_loadb(const char *buf, size_t len, size_t flags, json_error_t *e)
{
    if (!buf) {
        buf = "";
        len = 0;
    }
    size_t n;
    if (rewrite(buf, len, NULL, &n) == 0)
        return json_loadb(buf, len, flags, e);
    /* A rewritten literal has 20 bytes or more and grows by 8, so n is under
     * 1.5 * len: no overflow for any len a caller can hold. */
    char *out = malloc(n ? n : 1);
    if (!out) {
        if (e) {
            memset(e, 0, sizeof *e);
            strcpy(e->text, "out of memory");
        }
        return NULL;
    }
    rewrite(buf, len, out, &n);
    json_t *j = json_loadb(out, n, flags, e);
    free(out);
    return j;
}

/* The marked literal of v: its text after the mark, or NULL. */
static const char *big_literal(const json_t *v, size_t *n)
{
    if (!json_is_string(v))
        return NULL;
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (len < 2 || s[0] != JSONBIG_MARK)
        return NULL;
    for (size_t i = 1; i < len; i++)
        if (!is_digit(s[i]) && !(i == 1 && s[i] == '-'))
            return NULL;
    *n = len - 1;
    return s + 1;
}

bool jsonbig_is_integer(const json_t *v)
{
    size_t n;
    return json_is_integer(v) || big_literal(v, &n);
}

bool jsonbig_u64(const json_t *v, uint64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0)
            return false;
        *out = (uint64_t)x;
        return true;
    }
    size_t n;
    const char *s = big_literal(v, &n);
    if (!s || s[0] == '-')
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++)
        if (__builtin_mul_overflow(x, 10, &x) ||
            __builtin_add_overflow(x, (uint64_t)(s[i] - '0'), &x))
            return false;
    *out = x;
    return true;
}

bool jsonbig_i64(const json_t *v, int64_t *out)
{
    if (!json_is_integer(v))
        return false;
    *out = json_integer_value(v);
    return true;
}

/* Swift's punycode (RFC 3492 with '_' as the delimiter and the digits
 * a-z A-J), decoded to UTF-8 for identifiers mangled with "00" or 'X'. */
#include <string.h>

#include "internal.h"
#include "../util/metered.h" /* last: counts this file's allocations */

enum { BASE = 36, TMIN = 1, TMAX = 26, SKEW = 38, DAMP = 700, INITIAL_BIAS = 72 };

static int digit_value(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= 'A' && c <= 'J')
        return c - 'A' + 26;
    return -1;
}

static int adapt(int delta, int numpoints, bool first)
{
    delta = first ? delta / DAMP : delta / 2;
    delta += delta / numpoints;
    int k = 0;
    while (delta > ((BASE - TMIN) * TMAX) / 2) {
        delta /= BASE - TMIN;
        k += BASE;
    }
    return k + (((BASE - TMIN + 1) * delta) / (delta + SKEW));
}

/* Code points of s[0..n) into cp (room for n). Swift's decoder treats its
 * own errors as the end of the input, keeping what it decoded so far; that
 * is reproduced, with guards where Swift's int arithmetic would overflow. */
static size_t decode(const char *s, size_t n, uint32_t *cp)
{
    size_t out = 0;
    const char *delim = NULL;
    for (size_t i = n; i-- > 0;)
        if (s[i] == '_') {
            delim = s + i;
            break;
        }
    if (delim) {
        for (const char *p = s; p < delim; p++) {
            if ((unsigned char)*p > 0x7f)
                return out;
            cp[out++] = (unsigned char)*p;
        }
        n -= (size_t)(delim + 1 - s);
        s = delim + 1;
    }
    uint32_t code = 128;
    long long i = 0;
    int bias = INITIAL_BIAS;
    while (n > 0) {
        long long oldi = i, w = 1;
        for (int k = BASE;; k += BASE) {
            if (n == 0)
                return out;
            int digit = digit_value(*s++);
            n--;
            if (digit < 0)
                return out;
            i += digit * w;
            if (i > 0x7fffffff) /* Swift's int would overflow */
                return out;
            int t = k <= bias ? TMIN : k >= bias + TMAX ? TMAX : k - bias;
            if (digit < t)
                break;
            w *= BASE - t;
            if (w > 0x7fffffff)
                return out;
        }
        bias = adapt((int)(i - oldi), (int)out + 1, oldi == 0);
        long long next = (long long)code + i / (long long)(out + 1);
        if (next > 0x7fffffff)
            return out;
        code = (uint32_t)next;
        i %= (long long)(out + 1);
        if (code < 0x80)
            return out;
        memmove(cp + i + 1, cp + i, (out - (size_t)i) * sizeof *cp);
        cp[i] = code;
        out++;
        i++;
    }
    return out;
}

bool swift_punycode(sarena *a, const char *s, size_t n, const char **out, size_t *outlen)
{
    uint32_t *cp = sarena_alloc(a, (n ? n : 1) * sizeof *cp);
    char *utf8 = sarena_alloc(a, (n ? n : 1) * 4);
    if (!cp || !utf8)
        return false;
    size_t count = decode(s, n, cp), len = 0;
    for (size_t k = 0; k < count; k++) {
        uint32_t c = cp[k];
        /* Swift accepts up to 0x1FFFFF, and 0xD800-0xD87F as ASCII that is
         * not valid in a symbol (the "`foo bar`" of raw identifiers). */
        if (!(c < 0xD880 || (c >= 0xE000 && c <= 0x1FFFFF)))
            return false;
        if (c >= 0xD800 && c < 0xD880)
            c -= 0xD800;
        if (c < 0x80) {
            utf8[len++] = (char)c;
        } else if (c < 0x800) {
            utf8[len++] = (char)(0xC0 | (c >> 6));
            utf8[len++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            utf8[len++] = (char)(0xE0 | (c >> 12));
            utf8[len++] = (char)(0x80 | ((c >> 6) & 0x3F));
            utf8[len++] = (char)(0x80 | (c & 0x3F));
        } else {
            utf8[len++] = (char)(0xF0 | (c >> 18));
            utf8[len++] = (char)(0x80 | ((c >> 12) & 0x3F));
            utf8[len++] = (char)(0x80 | ((c >> 6) & 0x3F));
            utf8[len++] = (char)(0x80 | (c & 0x3F));
        }
    }
    *out = utf8;
    *outlen = len;
    return true;
}

/* Parsing and printing of addresses and UUIDs as the API spells them. */
#include "hex.h"

#include <stdio.h>
#include <string.h>

bool hex_parse_u64(const char *s, size_t n, uint64_t *out)
{
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s += 2;
        n -= 2;
    }
    if (n == 0)
        return false;
    while (n > 1 && *s == '0') { /* leading zeros do not count toward 16 digits */
        s++;
        n--;
    }
    if (n > 16)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = hex_digit(s[i]);
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

bool num_parse_u64(const char *s, uint64_t *out)
{
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return hex_parse_u64(s, n, out);
    if (n == 0 || n > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
            return false;
    }
    *out = v;
    return true;
}

bool uuid_parse(const char *s, uint8_t out[16])
{
    int nd = 0, dashes = 0;
    uint8_t u[16];
    for (const char *p = s; *p; p++) {
        if (*p == '-') {
            dashes++;
            continue;
        }
        int d = hex_digit(*p);
        if (d < 0 || nd >= 32)
            return false;
        if (nd % 2 == 0)
            u[nd / 2] = (uint8_t)(d << 4);
        else
            u[nd / 2] |= (uint8_t)d;
        nd++;
    }
    if (nd != 32 || (dashes != 0 && dashes != 4))
        return false;
    memcpy(out, u, 16);
    return true;
}

void uuid_format(const uint8_t u[16], char buf[37])
{
    static const char hx[] = "0123456789ABCDEF";
    char *o = buf;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hx[u[i] >> 4];
        *o++ = hx[u[i] & 15];
    }
    *o = 0;
}

void hex_format_u64(uint64_t v, char buf[19])
{
    snprintf(buf, 19, "0x%llx", (unsigned long long)v);
}

/* multipart/form-data split into parts (see multipart.h). */
#include "multipart.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"
#include "metered.h" /* last: counts this file's allocations */

#define MAX_BOUNDARY 70 /* RFC 2046 */
#define MAX_HEADERS 16384 /* bytes of one part's header block */

/* The boundary of the first line "--BOUNDARY\r\n" (or "\n"): its length,
 * 0 when the line is no delimiter. *next: the first byte past the line. */
static size_t first_boundary(const uint8_t *b, size_t n, size_t *next)
{
    if (n < 3 || b[0] != '-' || b[1] != '-')
        return 0;
    size_t i = 2;
    while (i < n && i - 2 <= MAX_BOUNDARY && b[i] != '\r' && b[i] != '\n')
        i++;
    size_t blen = i - 2;
    while (blen && (b[2 + blen - 1] == ' ' || b[2 + blen - 1] == '\t'))
        blen--; /* transport padding */
    if (!blen || blen > MAX_BOUNDARY || i >= n)
        return 0;
    for (size_t k = 2; k < 2 + blen; k++)
        if (b[k] < 0x20 || b[k] >= 0x7f)
            return 0;
    if (b[i] == '\r')
        i++;
    if (i >= n || b[i] != '\n')
        return 0;
    *next = i + 1;
    return blen;
}

bool multipart_looks_like(const uint8_t *buf, size_t len)
{
    size_t next;
    if (!buf || !first_boundary(buf, len, &next))
        return false;
    size_t k = len - next < 20 ? len - next : 20;
    return k >= 8 && strncasecmp((const char *)buf + next, "Content-", 8) == 0;
}

/* The value of parameter key ("name", "filename") of a Content-Disposition
 * value [s, e) into out (cap bytes with NUL, cut to fit); false when absent. */
static bool disp_param(const char *s, const char *e, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    for (const char *p = s; p < e;) {
        const char *semi = memchr(p, ';', (size_t)(e - p));
        const char *pe = semi ? semi : e;
        while (p < pe && (*p == ' ' || *p == '\t'))
            p++;
        if ((size_t)(pe - p) > kl && strncasecmp(p, key, kl) == 0 && p[kl] == '=') {
            const char *v = p + kl + 1, *ve = pe;
            if (v < ve && *v == '"') {
                v++;
                /* a quoted value may hold ';': it ends at the closing quote */
                const char *q = v;
                while (q < e && *q != '"') {
                    if (*q == '\\' && q + 1 < e)
                        q++;
                    q++;
                }
                ve = q;
                pe = q < e ? q + 1 : e;
                semi = memchr(pe, ';', (size_t)(e - pe));
            }
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            size_t o = 0;
            for (const char *c = v; c < ve && o + 1 < cap; c++) {
                if (*c == '\\' && c + 1 < ve)
                    c++;
                out[o++] = *c;
            }
            out[o] = 0;
            return true;
        }
        p = semi ? semi + 1 : e;
    }
    return false;
}

/* Reads a part's header block [h, he): its name and filename. */
static void part_headers(const uint8_t *h, const uint8_t *he, mp_part *p)
{
    for (const uint8_t *l = h; l < he;) {
        const uint8_t *nl = memchr(l, '\n', (size_t)(he - l));
        const uint8_t *le = nl ? nl : he;
        const uint8_t *lend = le > l && le[-1] == '\r' ? le - 1 : le;
        static const char cd[] = "Content-Disposition:";
        if ((size_t)(lend - l) > sizeof cd - 1 &&
            strncasecmp((const char *)l, cd, sizeof cd - 1) == 0) {
            const char *v = (const char *)l + sizeof cd - 1, *ve = (const char *)lend;
            disp_param(v, ve, "name", p->name, sizeof p->name);
            p->has_filename = disp_param(v, ve, "filename", p->filename, sizeof p->filename);
        }
        l = nl ? nl + 1 : he;
    }
}

symd_status multipart_parse(const uint8_t *buf, size_t len, mp_part **parts, size_t *n,
                            bool *truncated, symd_err *err)
{
    *parts = NULL;
    *n = 0;
    *truncated = false;
    size_t pos;
    size_t blen = buf ? first_boundary(buf, len, &pos) : 0;
    if (!blen)
        return SYMD_CORRUPT(err, "not a multipart body: its first line is no \"--boundary\"");
    /* every later delimiter is CRLF "--" boundary (a bare LF accepted too) */
    char delim[MAX_BOUNDARY + 3];
    delim[0] = '-';
    delim[1] = '-';
    memcpy(delim + 2, buf + 2, blen);
    size_t dlen = blen + 2;
    mp_part *out = NULL;
    size_t cap = 0, k = 0;
    for (;;) {
        /* headers: up to the first empty line */
        const uint8_t *h = buf + pos, *end = buf + len, *he = NULL, *data = NULL;
        for (const uint8_t *l = h; l < end && (size_t)(l - h) <= MAX_HEADERS;) {
            const uint8_t *nl = memchr(l, '\n', (size_t)(end - l));
            if (!nl)
                break;
            if (nl == l || (nl == l + 1 && *l == '\r')) {
                he = l;
                data = nl + 1;
                break;
            }
            l = nl + 1;
        }
        if (!data) {
            if (k) {
                *truncated = true;
                break;
            }
            free(out);
            return SYMD_CORRUPT(err, "multipart body: the headers of the part at byte %zu do "
                                "not end (no empty line within %d bytes)", pos, MAX_HEADERS);
        }
        /* data: up to the next delimiter at a line start */
        const uint8_t *d = NULL;
        for (const uint8_t *s = data; s < end;) {
            const uint8_t *m = memmem(s, (size_t)(end - s), delim, dlen);
            if (!m)
                break;
            if (m > data && m[-1] == '\n') {
                d = m;
                break;
            }
            s = m + 1;
        }
        if (k >= MP_MAX_PARTS) {
            free(out);
            return symd_fail(err, SYMD_E_TOO_LARGE, "multipart body of more than %d parts",
                             MP_MAX_PARTS);
        }
        if (!array_grow((void **)&out, &cap, k + 1, sizeof *out)) {
            free(out);
            return symd_fail(err, SYMD_E_NOMEM, "out of memory reading a multipart body");
        }
        mp_part *p = &out[k++];
        memset(p, 0, sizeof *p);
        part_headers(h, he, p);
        p->data = data;
        if (!d) { /* no closing delimiter: the rest is the part's, cut short */
            p->len = (size_t)(end - data);
            *truncated = true;
            break;
        }
        const uint8_t *de = d - 1; /* the LF before the delimiter */
        if (de > data && de[-1] == '\r')
            de--;
        p->len = (size_t)(de - data);
        const uint8_t *after = d + dlen;
        if (end - after >= 2 && after[0] == '-' && after[1] == '-')
            break; /* the closing delimiter */
        while (after < end && (*after == ' ' || *after == '\t'))
            after++;
        if (after < end && *after == '\r')
            after++;
        if (after >= end || *after != '\n') {
            *truncated = true;
            break;
        }
        pos = (size_t)(after + 1 - buf);
    }
    *parts = out;
    *n = k;
    return SYMD_OK;
}

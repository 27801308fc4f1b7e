/* gzip bodies inflated with a bound (see gzip.h), by zlib. */
#include "gzip.h"

#include <zlib.h>

#include "membudget.h"
#include "metered.h" /* last: counts this file's allocations */

#define CHUNK (256u << 10)

bool gzip_is_gzip(const uint8_t *buf, size_t len)
{
    return buf && len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
}

symd_status gzip_inflate(const uint8_t *in, size_t n, size_t max, uint8_t **out,
                         size_t *outlen, symd_err *err)
{
    *out = NULL;
    *outlen = 0;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) /* 16: gzip framing only */
        return symd_fail(err, SYMD_E_NOMEM, "out of memory starting to inflate a gzip body");
    symd_status st = SYMD_OK;
    uint8_t *buf = NULL;
    size_t size = 0, len = 0;
    const uint8_t *p = in;
    size_t left = n;
    for (;;) {
        if (len == size) {
            if (size > max) { /* one byte past max came out: too large */
                st = symd_fail(err, SYMD_E_TOO_LARGE, "the gzip body inflates to more than "
                               "%zu bytes", max);
                break;
            }
            size_t grow = size ? size : CHUNK;
            size_t want = max + 1 - size < grow ? max + 1 : size + grow; /* room for max + 1 */
            mem_meter_widen(mem_meter_current(), want - size);
            uint8_t *q = realloc(buf, want + 1);
            if (!q) {
                st = symd_fail(err, SYMD_E_NOMEM, "out of memory inflating a gzip body");
                break;
            }
            buf = q;
            size = want;
        }
        size_t in_now = left > UINT32_MAX ? UINT32_MAX : left;
        size_t out_now = size - len > UINT32_MAX ? UINT32_MAX : size - len;
        zs.next_in = (Bytef *)p;
        zs.avail_in = (uInt)in_now;
        zs.next_out = buf + len;
        zs.avail_out = (uInt)out_now;
        int zr = inflate(&zs, Z_NO_FLUSH);
        size_t used = in_now - zs.avail_in;
        p += used;
        left -= used;
        len += out_now - zs.avail_out;
        if (zr == Z_STREAM_END) {
            /* another member may follow; trailing zero padding ends it */
            size_t z = 0;
            while (z < left && p[z] == 0)
                z++;
            if (z == left)
                break;
            if (inflateReset(&zs) != Z_OK) {
                st = symd_fail(err, SYMD_E_CORRUPT, "gzip body: cannot restart at byte %zu",
                               (size_t)(p - in));
                break;
            }
            continue;
        }
        if (zr == Z_OK || (zr == Z_BUF_ERROR && zs.avail_out == 0 && left))
            continue;
        if (zr == Z_MEM_ERROR) {
            st = symd_fail(err, SYMD_E_NOMEM, "out of memory inflating a gzip body");
        } else if (zr == Z_BUF_ERROR || (zr == Z_OK && !left)) {
            st = SYMD_CORRUPT(err, "gzip body cut short: it ends at byte %zu before its "
                              "stream does", n);
        } else {
            st = SYMD_CORRUPT(err, "gzip body broken at byte %zu: %s", (size_t)(p - in),
                              zs.msg ? zs.msg : "inflate failed");
        }
        break;
    }
    inflateEnd(&zs);
    if (!st && len > max)
        st = symd_fail(err, SYMD_E_TOO_LARGE, "the gzip body inflates to more than %zu bytes",
                       max);
    if (st) {
        free(buf);
        return st;
    }
    if (!buf && !(buf = malloc(1)))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory inflating a gzip body");
    buf[len] = 0;
    *out = buf;
    *outlen = len;
    return SYMD_OK;
}

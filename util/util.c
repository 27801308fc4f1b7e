/* Small shared helpers: growable arrays, UTF-8 validation, temporary files. */
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

bool array_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 8;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return false;
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem)
        return false;
    void *q = realloc(*p, c * elem);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

size_t utf8_seq_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0], min;
    size_t n;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) { n = 2; min = 0x80; c &= 0x1f; }
    else if ((c & 0xf0) == 0xe0) { n = 3; min = 0x800; c &= 0x0f; }
    else if ((c & 0xf8) == 0xf0) { n = 4; min = 0x10000; c &= 0x07; }
    else return 0;
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return n;
}

const char *temp_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

int temp_file_unlinked(const char *prefix)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s-XXXXXX", temp_dir(), prefix);
    if (n < 0 || (size_t)n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

bool fd_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return false;
        }
        b += w;
        n -= (size_t)w;
    }
    return true;
}

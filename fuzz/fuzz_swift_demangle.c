/* libFuzzer target: swift_demangle on arbitrary bytes, in both styles. It
 * must return true or false and nothing else may happen; false leaves the
 * buffer as it was; true appends UTF-8 text of at most SWIFT_MAX_OUT bytes
 * and keeps the buffer NUL-terminated. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../swift/demangle.h"

static bool valid_utf8(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                                 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!len || n - i < len)
            return false;
        for (size_t k = 1; k < len; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
        if ((c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] >= 0xA0) ||
            (c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] >= 0x90))
            return false;
        i += len;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int style = 0; style < 2; style++) {
        dynbuf b;
        dynbuf_init(&b, 4 * SWIFT_MAX_OUT);
        dynbuf_add(&b, "#", 1); /* text already there must survive */
        bool ok = swift_demangle((const char *)data, size, (swift_style)style, &b);
        if (!b.data || b.data[0] != '#' || b.data[b.len] != 0)
            __builtin_trap();
        if (!ok && b.len != 1)
            __builtin_trap();
        if (ok && (b.len == 1 || b.len - 1 > SWIFT_MAX_OUT || !valid_utf8(b.data + 1, b.len - 1)))
            __builtin_trap();
        dynbuf_free(&b);
    }
    return 0;
}

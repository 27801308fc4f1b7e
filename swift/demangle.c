/* The Swift demangler's entry points: vets a name, routes it to the parser
 * of its mangling, prints the tree, and hands back text or nothing. */
#include "demangle.h"

#include <string.h>

#include "internal.h"
#include "../util/metered.h" /* last: counts this file's allocations */

/* Bytes of the arena on the stack: enough for the trees of nearly all
 * names, so that demangling one costs no malloc. */
#define FIRST_BLOCK (24 * 1024)

static bool starts(const char *s, size_t n, const char *prefix)
{
    size_t len = strlen(prefix);
    return n >= len && memcmp(s, prefix, len) == 0;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past
 * U+10FFFF) without control characters; when refuse_controls is false,
 * controls are allowed (printed text never holds any, but checking costs
 * nothing). */
static bool valid_text(const char *s, size_t n, bool refuse_controls)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p;
        if (c < 0x80) {
            if (refuse_controls && (c < 0x20 || c == 0x7f))
                return false;
            p++;
            continue;
        }
        size_t len;
        unsigned min, cp;
        if (c >= 0xC2 && c <= 0xDF)
            len = 2, min = 0x80, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
            len = 3, min = 0x800, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
            len = 4, min = 0x10000, cp = c & 0x07;
        else
            return false;
        if ((size_t)(end - p) < len)
            return false;
        for (size_t i = 1; i < len; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        p += len;
    }
    return true;
}

bool swift_is_mangled(const char *s, size_t n)
{
    static const char *const prefixes[] = {
        "$s", "_$s", "$S", "_$S", "$e", "_$e", "_T", "@__swiftmacro_", "async_Main", "_async_Main",
    };
    if (!s)
        return false;
    /* swift-demangle reads "__X" as "_X" (a symbol with one underscore too
     * many, as linkers of some platforms write them). */
    if (n >= 2 && s[0] == '_' && s[1] == '_')
        s++, n--;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (starts(s, n, prefixes[i]))
            return true;
    return false;
}

bool swift_demangle(const char *s, size_t n, swift_style style, dynbuf *out)
{
    return swift_demangle_ex(s, n, style, out, NULL);
}

bool swift_demangle_ex(const char *s, size_t n, swift_style style, dynbuf *out, swift_why *why)
{
    swift_why spare;
    if (!why)
        why = &spare;
    *why = n > SWIFT_MAX_NAME ? SWIFT_WHY_BOUND : SWIFT_WHY_NAME;
    if (!s || !out || n > SWIFT_MAX_NAME || !swift_is_mangled(s, n))
        return false;
    /* Symbolic references (control bytes) only make sense inside a binary's
     * metadata, and text that is no UTF-8 is no Swift name. */
    if (!valid_text(s, n, true))
        return false;
    if (s[0] == '_' && s[1] == '_')
        s++, n--;

    _Alignas(16) char first[FIRST_BLOCK];
    char text[SWIFT_MAX_OUT + 1];
    size_t len = 0;
    sarena a;
    sarena_init(&a, first, sizeof first);
    snode *root = swift_parse_symbol(&a, s, n, 0);
    bool ok = root && swift_print_tree(&a, root, style, text, sizeof text, &len, why);
    if (a.failed)
        *why = SWIFT_WHY_BOUND;
    sarena_free(&a);
    /* An identifier cut inside a character, or a punycode scalar past
     * U+10FFFF, would make the output no UTF-8: no output then. */
    if (!ok || !valid_text(text, len, false)) {
        if (ok)
            *why = SWIFT_WHY_NAME;
        return false;
    }
    if (!dynbuf_add(out, text, len)) {
        *why = SWIFT_WHY_BOUND; /* out's own limit */
        return false;
    }
    return true;
}

/* Display names: Swift through swift/, C++ and Rust through libiberty's
 * callback entry points.
 *
 * cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO) tries
 * rust_demangle and then cplus_demangle_v3, each a wrapper that collects the
 * output of rust_demangle_callback / cplus_demangle_v3_callback in a growing
 * buffer. Those callbacks are called here directly, with the same options, so
 * the output is the same, but it lands in a bounded buffer: when a name would
 * demangle to more than SYMD_DEMANGLE_MAX_OUT bytes, the callback longjmps
 * out of libiberty. That is what stops a name of a few hundred bytes whose
 * substitutions nest (S0_ inside S1_ inside …) from printing gigabytes for
 * minutes. The jump is safe: cplus_demangle_v3_callback keeps all its state
 * on the stack and allocates nothing; rust_demangle_callback allocates only
 * while printing a punycode identifier (always non-ASCII output, then freed
 * before the next print), so for Rust the callback jumps only on an
 * all-ASCII chunk. */
#include "demangle.h"

#include <libiberty/demangle.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../swift/demangle.h"
#include "../util/dynbuf.h"
#include "../util/metered.h" /* last: counts this file's allocations */

/* libiberty's recursion limit stays on (no DMGL_NO_RECURSE_LIMIT). */
#define OPTIONS (DMGL_PARAMS | DMGL_ANSI)

#define BLOCK_PREFIX "invocation function for block in "

typedef struct {
    char buf[SYMD_DEMANGLE_MAX_OUT + 1];
    size_t len;
    bool over;  /* output too long, or a NUL in it: the attempt fails */
    bool rust;  /* jump only on all-ASCII chunks (see above) */
    jmp_buf stop;
} sink;

static bool all_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80)
            return false;
    return true;
}

static void sink_put(const char *s, size_t n, void *opaque)
{
    sink *k = opaque;
    if (n == 0)
        return; /* libiberty prints empty identifiers as (NULL, 0) */
    if (!k->over && n <= SYMD_DEMANGLE_MAX_OUT - k->len && !memchr(s, 0, n)) {
        memcpy(k->buf + k->len, s, n);
        k->len += n;
        return;
    }
    k->over = true;
    if (!k->rust || all_ascii(s, n))
        longjmp(k->stop, 1);
}

enum scheme { RUST, CXX };

/* One libiberty entry point on name; true with the output in k->buf. */
static bool attempt(sink *k, enum scheme how, const char *name)
{
    k->len = 0;
    k->over = false;
    k->rust = how == RUST;
    if (setjmp(k->stop))
        return false; /* the output outgrew the buffer */
    int ok = how == RUST ? rust_demangle_callback(name, OPTIONS, sink_put, k)
                         : cplus_demangle_v3_callback(name, OPTIONS, sink_put, k);
    if (!ok || k->over || k->len == 0)
        return false;
    k->buf[k->len] = 0;
    return true;
}

/* "_block_invoke" at p closes a block invocation's name when what follows
 * is [_]digits (digits required after '_'), then nothing or ".suffix" — the
 * grammar of LLVM's Itanium demangler. */
static bool block_tail(const char *p)
{
    p += strlen("_block_invoke");
    bool need_digit = *p == '_';
    p += need_digit;
    if (need_digit && !(*p >= '0' && *p <= '9'))
        return false;
    while (*p >= '0' && *p <= '9')
        p++;
    return *p == 0 || *p == '.';
}

/* "___Z<encoding>_block_invoke…": <encoding> ends at the first
 * "_block_invoke" that closes the name and leaves a demangleable "_Z…". */
static bool block_invoke(sink *k, const char *name)
{
    const char *z = name + 2; /* at "_Z" */
    char enc[SYMD_DEMANGLE_MAX_IN + 1];
    for (const char *p = strstr(z, "_block_invoke"); p; p = strstr(p + 1, "_block_invoke")) {
        if (!block_tail(p))
            continue;
        size_t len = (size_t)(p - z); /* < strlen(name) <= SYMD_DEMANGLE_MAX_IN */
        memcpy(enc, z, len);
        enc[len] = 0;
        if (!attempt(k, CXX, enc))
            continue;
        size_t pre = strlen(BLOCK_PREFIX);
        if (k->len > SYMD_DEMANGLE_MAX_OUT - pre)
            return false;
        memmove(k->buf + pre, k->buf, k->len + 1);
        memcpy(k->buf, BLOCK_PREFIX, pre);
        k->len += pre;
        return true;
    }
    return false;
}

bool symd_is_swift(const char *name)
{
    return swift_is_mangled(name, strnlen(name, SYMD_DEMANGLE_MAX_IN + 1));
}

/* A Swift name in style, or NULL. */
static char *swift_display(const char *name, size_t n, swift_style style)
{
    dynbuf b;
    dynbuf_init(&b, SYMD_DEMANGLE_MAX_OUT);
    char *out = NULL;
    if (swift_demangle(name, n, style, &b) && b.len && strcmp((char *)b.data, name) != 0)
        out = (char *)dynbuf_take(&b, NULL);
    dynbuf_free(&b);
    return out;
}

static char *demangle_in(const char *name, swift_style style)
{
    size_t n = strnlen(name, SYMD_DEMANGLE_MAX_IN + 1);
    if (n > SYMD_DEMANGLE_MAX_IN || n < 3)
        return NULL;
    if (swift_is_mangled(name, n))
        return swift_display(name, n, style);
    if (name[0] != '_')
        return NULL;
    sink *k = malloc(sizeof *k);
    if (!k)
        return NULL;
    bool ok = false;
    if (name[1] == 'R')
        ok = attempt(k, RUST, name);
    else if (name[1] == 'Z')
        ok = (name[2] == 'N' && attempt(k, RUST, name)) || attempt(k, CXX, name);
    else if (strncmp(name, "___Z", 4) == 0)
        ok = block_invoke(k, name);
    char *out = NULL;
    if (ok && strcmp(k->buf, name) != 0)
        out = strdup(k->buf);
    free(k);
    return out;
}

char *symd_demangle(const char *name)
{
    return demangle_in(name, SWIFT_STYLE_SIMPLIFIED);
}

char *symd_demangle_full(const char *name)
{
    return demangle_in(name, SWIFT_STYLE_FULL);
}

/* JSON with integers of any size (see jsonbig.h). */
#include "jsonbig.h"

#include <stdlib.h>
#include <string.h>
#include "metered.h" /* last: counts this file's allocations */

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

/* Maps an error jansson found in the rewritten text back to the caller's:
 * the bytes the rewrite added before it, in all and on its line. */
typedef struct {
    size_t err_out; /* offset in the rewritten text */
    size_t shift, line_shift;
} errmap;

#define GROWTH 8 /* "\u001f" and two quotes around a literal */

/* One pass over buf: copies it into out (when not NULL) with every integer
 * literal outside int64_t rewritten as "\u001f<literal>". Returns how many
 * literals were (or would be) rewritten; *n is the bytes written. With m,
 * also counts the growth before m->err_out. Strings are skipped whole (a
 * number inside one is text), escapes included. */
static size_t rewrite(const char *buf, size_t len, char *out, size_t *n, errmap *m)
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
            if (m && c == '\n' && w < m->err_out)
                m->line_shift = 0;
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
            /* A leading zero ("0123") is no JSON number: left for jansson
             * to refuse, whatever its size. */
            bool lead0 = dn > 1 && buf[s + (c == '-')] == '0';
            if (!real && !lead0 && dn > 0 && !fits_i64(buf + s, i - s)) {
                k++;
                if (m && w < m->err_out) {
                    m->shift += GROWTH;
                    m->line_shift += GROWTH;
                }
                if (out) {
                    memcpy(out + w, "\"\\u001f", 7);
                    memcpy(out + w + 7, buf + s, i - s);
                    out[w + 7 + (i - s)] = '"';
                }
                w += GROWTH + (i - s);
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
    if (rewrite(buf, len, NULL, &n, NULL) == 0)
        return json_loadb(buf, len, flags, e);
    /* A rewritten literal has 19 bytes or more and grows by 8, so n is under
     * 1.5 * len: no overflow for any len a caller can hold. */
    char *out = malloc(n ? n : 1);
    if (!out) {
        if (e) {
            memset(e, 0, sizeof *e);
            e->line = e->column = e->position = -1;
            strcpy(e->text, "out of memory");
        }
        return NULL;
    }
    rewrite(buf, len, out, &n, NULL);
    json_error_t local;
    json_t *j = json_loadb(out, n, flags, &local);
    if (!j && local.position >= 0) {
        errmap m = {(size_t)local.position, 0, 0};
        rewrite(buf, len, NULL, &n, &m);
        local.position -= (int)(m.shift < (size_t)local.position ? m.shift : (size_t)local.position);
        if (local.column > 0)
            local.column -= (int)(m.line_shift < (size_t)local.column - 1 ? m.line_shift
                                                                          : (size_t)local.column - 1);
    }
    free(out);
    if (e)
        *e = local;
    return j;
}

/* ---- member by member ------------------------------------------------------ */

static size_t skip_ws(const char *b, size_t i, size_t len)
{
    while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
        i++;
    return i;
}

/* The end of the string starting at b[i] == '"' (past its closing quote),
 * or 0 when it does not end. */
static size_t skip_string(const char *b, size_t i, size_t len)
{
    for (i++; i < len; i++) {
        if (b[i] == '\\')
            i++;
        else if (b[i] == '"')
            return i + 1;
    }
    return 0;
}

/* The end of the value starting at b[i], found by brackets and strings
 * alone (the value is not checked further), or 0 when it does not end. */
static size_t skip_value(const char *b, size_t i, size_t len)
{
    if (i >= len)
        return 0;
    if (b[i] == '"')
        return skip_string(b, i, len);
    if (b[i] == '{' || b[i] == '[') {
        size_t depth = 0;
        for (; i < len; i++) {
            char c = b[i];
            if (c == '"') {
                size_t e = skip_string(b, i, len);
                if (!e)
                    return 0;
                i = e - 1;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (--depth == 0)
                    return i + 1;
            }
        }
        return 0;
    }
    /* a number, true, false or null: its characters only; whatever
     * follows must then be ',' or '}', or the whole parse says what is
     * wrong */
    size_t s = i;
    while (i < len && ((b[i] >= '0' && b[i] <= '9') || (b[i] >= 'a' && b[i] <= 'z') ||
                       (b[i] >= 'A' && b[i] <= 'Z') || b[i] == '+' || b[i] == '-' ||
                       b[i] == '.'))
        i++;
    return i > s ? i : 0;
}

/* Shifts an error jansson found in buf[at..) to buf's own line, column and
 * position. */
static void error_from(json_error_t *e, const char *buf, size_t at)
{
    size_t line = 1, col0 = 0;
    for (size_t i = 0; i < at; i++)
        if (buf[i] == '\n') {
            line++;
            col0 = i + 1;
        }
    if (e->line == 1 && e->column >= 0) /* jansson counts characters, not bytes */
        for (size_t i = col0; i < at; i++)
            e->column += ((unsigned char)buf[i] & 0xC0) != 0x80;
    if (e->line >= 1)
        e->line += (int)line - 1;
    if (e->position >= 0)
        e->position += (int)at;
}

json_t *jsonbig_load_members(const char *buf, size_t len, bool (*known)(const char *key),
                             size_t unknown_budget, size_t *nskipped, json_error_t *e)
{
    *nskipped = 0;
    size_t i = skip_ws(buf, 0, len);
    json_t *root = i < len && buf[i] == '{' ? json_object() : NULL;
    if (!root)
        return jsonbig_loadb(buf, len, 0, e);
    i = skip_ws(buf, i + 1, len);
    bool first = true;
    while (i < len && buf[i] != '}') {
        if (!first) { /* ", " before every member but the first */
            if (buf[i] != ',')
                goto whole;
            i = skip_ws(buf, i + 1, len);
        }
        first = false;
        size_t ks = i, ke = i < len && buf[i] == '"' ? skip_string(buf, i, len) : 0;
        if (!ke)
            goto whole;
        i = skip_ws(buf, ke, len);
        if (i >= len || buf[i] != ':')
            goto whole;
        size_t vs = skip_ws(buf, i + 1, len), ve = skip_value(buf, vs, len);
        if (!ve)
            goto whole;
        i = skip_ws(buf, ve, len);
        json_t *k = jsonbig_loadb(buf + ks, ke - ks, JSON_DECODE_ANY, e);
        if (!k || !json_is_string(k)) {
            json_decref(k);
            goto whole;
        }
        const char *key = json_string_value(k);
        json_t *v;
        if (known(key) || ve - vs <= unknown_budget) {
            if (!known(key))
                unknown_budget -= ve - vs;
            v = jsonbig_loadb(buf + vs, ve - vs, JSON_DECODE_ANY, e);
            if (!v) {
                json_decref(k);
                json_decref(root);
                if (e)
                    error_from(e, buf, vs);
                return NULL;
            }
        } else {
            char mark[32];
            snprintf(mark, sizeof mark, "%c%zu", JSONBIG_SKIPPED, ve - vs);
            v = json_string(mark);
            ++*nskipped;
        }
        if (!v || json_object_set_new(root, key, v) != 0) {
            json_decref(k);
            json_decref(root);
            if (e) {
                memset(e, 0, sizeof *e);
                e->line = e->column = e->position = -1;
                strcpy(e->text, "out of memory");
            }
            return NULL;
        }
        json_decref(k);
    }
    if (i >= len || skip_ws(buf, i + 1, len) != len)
        goto whole;
    return root;
whole: /* not a plain object: jansson says what is wrong, and where */
    json_decref(root);
    *nskipped = 0;
    return jsonbig_loadb(buf, len, 0, e);
}

bool jsonbig_skipped(const json_t *v, uint64_t *bytes)
{
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    if (s[0] != JSONBIG_SKIPPED || !is_digit(s[1]))
        return false;
    uint64_t x = 0;
    for (s++; *s; s++) {
        if (!is_digit(*s))
            return false;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    *bytes = x;
    return true;
}

const char *jsonbig_literal(const json_t *v, size_t *n)
{
    if (!json_is_string(v))
        return NULL;
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (len < 2 || s[0] != JSONBIG_MARK)
        return NULL;
    size_t first = s[1] == '-' ? 2 : 1;
    if (first >= len) /* a sign and no digit */
        return NULL;
    for (size_t i = first; i < len; i++)
        if (!is_digit(s[i]))
            return NULL;
    *n = len - 1;
    return s + 1;
}

bool jsonbig_is_integer(const json_t *v)
{
    size_t n;
    return json_is_integer(v) || jsonbig_literal(v, &n);
}

/* Digits s[0..n) as uint64_t; false past 2^64-1. */
static bool digits_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++)
        if (__builtin_mul_overflow(x, 10, &x) ||
            __builtin_add_overflow(x, (uint64_t)(s[i] - '0'), &x))
            return false;
    *out = x;
    return true;
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
    const char *s = jsonbig_literal(v, &n);
    if (!s || s[0] == '-')
        return false;
    return digits_u64(s, n, out);
}

bool jsonbig_i64(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return true;
    }
    /* The pre-pass only marks literals outside int64_t, but a marked string
     * may come from elsewhere: read it the same way, exactly or not at all. */
    size_t n;
    const char *s = jsonbig_literal(v, &n);
    if (!s)
        return false;
    bool neg = s[0] == '-';
    uint64_t m;
    if (!digits_u64(s + neg, n - neg, &m))
        return false;
    if (neg ? m > (uint64_t)INT64_MAX + 1 : m > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? (int64_t)(0 - m) : (int64_t)m;
    return true;
}

const char *jsonbig_describe(const json_t *v)
{
    size_t n;
    const char *big = jsonbig_literal(v, &n);
    if (big)
        return big[0] == '-' ? "a negative integer" : "an integer past 2^64-1";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return json_integer_value(v) < 0 ? "a negative integer" : "an integer";
    case JSON_REAL: return "a real";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    default: return "null";
    }
}

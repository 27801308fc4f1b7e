/* The /v1/symbolicate request: JSON text in, a checked backtrace model out.
 *
 * A strict single-pass JSON reader over (buf, len) that fills the model as it
 * goes. It is the hot path of symbolication (a general document tree cost
 * more than the lookups themselves), so it allocates only the model. It
 * reads RFC 8259 JSON: no comments, no trailing commas, strings valid UTF-8,
 * nesting at most JR_MAX_DEPTH deep. */
#include "backtrace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/hex.h"
#include "../util/util.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define JR_MAX_DEPTH 64

/* ---- reader ------------------------------------------------------------- */

typedef struct {
    const char *p, *end, *start;
    symd_err *err;
    bool failed;
    /* Where we are, formatted only for messages: "threads[2].frames[5]". */
    enum { AT_ROOT, AT_IMAGE, AT_THREAD, AT_FRAME } at;
    size_t at_a, at_b;
    char pathbuf[96];
} jr;

static const char *P(jr *r)
{
    switch (r->at) {
    case AT_IMAGE: snprintf(r->pathbuf, sizeof r->pathbuf, "images[%zu]", r->at_a); break;
    case AT_THREAD: snprintf(r->pathbuf, sizeof r->pathbuf, "threads[%zu]", r->at_a); break;
    case AT_FRAME:
        snprintf(r->pathbuf, sizeof r->pathbuf, "threads[%zu].frames[%zu]", r->at_a, r->at_b);
        break;
    default: snprintf(r->pathbuf, sizeof r->pathbuf, "request"); break;
    }
    return r->pathbuf;
}

static bool jr_fail(jr *r, symd_status kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool jr_fail(jr *r, symd_status kind, const char *fmt, ...)
{
    if (r->failed)
        return false;
    r->failed = true;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    symd_fail(r->err, kind, "%s", msg);
    return false;
}

static bool jr_syntax(jr *r, const char *what)
{
    return jr_fail(r, SYMD_E_INVALID, "malformed JSON at byte %zu: %s",
                   (size_t)(r->p - r->start), what);
}

static void ws(jr *r)
{
    while (r->p < r->end &&
           (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

/* Consumes c (after whitespace) if it is next. */
static bool eat(jr *r, char c)
{
    ws(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return true;
    }
    return false;
}

static bool expect(jr *r, char c, const char *what)
{
    return eat(r, c) || jr_syntax(r, what);
}

typedef enum { JT_END, JT_OBJ, JT_ARR, JT_STR, JT_NUM, JT_TRUE, JT_FALSE, JT_NULL, JT_BAD } jtype;

static jtype peek(jr *r)
{
    ws(r);
    if (r->p >= r->end)
        return JT_END;
    switch (*r->p) {
    case '{': return JT_OBJ;
    case '[': return JT_ARR;
    case '"': return JT_STR;
    case 't': return JT_TRUE;
    case 'f': return JT_FALSE;
    case 'n': return JT_NULL;
    default: return (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) ? JT_NUM : JT_BAD;
    }
}

static const char *type_name(jtype t)
{
    static const char *const n[] = {"nothing", "an object", "an array", "a string",
                                    "a number", "true", "false", "null", "not JSON"};
    return n[t];
}

/* A value of the wrong type; bytes that are no value at all are a syntax
 * error instead. */
#define TYPE_ERR(r, t, ...)                                         \
    ((t) == JT_BAD || (t) == JT_END ? jr_syntax((r), "expected a value") \
                                    : jr_fail((r), SYMD_E_INVALID, __VA_ARGS__))

static bool read_hex4(jr *r, unsigned *v)
{
    if (r->end - r->p < 4)
        return jr_syntax(r, "truncated \\u escape");
    *v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(r->p[i]);
        if (d < 0)
            return jr_syntax(r, "bad \\u escape");
        *v = *v << 4 | (unsigned)d;
    }
    r->p += 4;
    return true;
}

static size_t put_utf8(char *o, unsigned c)
{
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xc0 | c >> 6); o[1] = (char)(0x80 | (c & 0x3f)); return 2; }
    if (c < 0x10000) {
        o[0] = (char)(0xe0 | c >> 12); o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        o[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | c >> 18); o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3f)); o[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* Where read_string puts what it decodes. */
typedef struct {
    char *out;   /* NULL: only check and skip */
    size_t cap;  /* bytes of out, NUL included */
    size_t n;    /* decoded length so far */
    bool *fits;  /* NULL: a string longer than cap fails; else set false */
} strsink;

static bool sink_put(jr *r, strsink *k, const char *src, size_t len)
{
    if (k->out && k->n + len >= k->cap) {
        if (!k->fits)
            return jr_fail(r, SYMD_E_INVALID, "%s: string longer than %zu bytes", P(r),
                           k->cap - 1);
        *k->fits = false;
        k->out = NULL; /* keep checking the rest, keep nothing more */
    }
    if (k->out)
        memcpy(k->out + k->n, src, len);
    k->n += len;
    return true;
}

/* Reads a string in one pass. With out (cap bytes incl. NUL) it is unescaped
 * there; one that does not fit fails with "too long", or, when fits is given,
 * sets *fits = false and leaves out empty. With out NULL it is only checked
 * and skipped. A NUL inside (\u0000) is refused: names are C strings. */
static bool read_string(jr *r, char *out, size_t cap, size_t *outlen, bool *fits)
{
    if (!expect(r, '"', "expected a string"))
        return false;
    strsink sink = {out, cap, 0, fits};
    if (fits)
        *fits = true;
    for (;;) {
        if (r->p >= r->end)
            return jr_syntax(r, "unterminated string");
        unsigned char c = (unsigned char)*r->p;
        char buf[4];
        size_t k;
        if (c == '"') {
            r->p++;
            break;
        } else if (c == '\\') {
            if (r->end - r->p < 2)
                return jr_syntax(r, "unterminated escape");
            char e = r->p[1];
            r->p += 2;
            switch (e) {
            case '"': buf[0] = '"'; k = 1; break;
            case '\\': buf[0] = '\\'; k = 1; break;
            case '/': buf[0] = '/'; k = 1; break;
            case 'b': buf[0] = '\b'; k = 1; break;
            case 'f': buf[0] = '\f'; k = 1; break;
            case 'n': buf[0] = '\n'; k = 1; break;
            case 'r': buf[0] = '\r'; k = 1; break;
            case 't': buf[0] = '\t'; k = 1; break;
            case 'u': {
                unsigned u, lo;
                if (!read_hex4(r, &u))
                    return false;
                if (u >= 0xd800 && u <= 0xdbff) {
                    if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
                        return jr_syntax(r, "lone surrogate in \\u escape");
                    r->p += 2;
                    if (!read_hex4(r, &lo))
                        return false;
                    if (lo < 0xdc00 || lo > 0xdfff)
                        return jr_syntax(r, "bad surrogate pair");
                    u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                } else if (u >= 0xdc00 && u <= 0xdfff) {
                    return jr_syntax(r, "lone surrogate in \\u escape");
                }
                if (u == 0)
                    return jr_fail(r, SYMD_E_INVALID, "%s: strings may not contain NUL",
                                   P(r));
                k = put_utf8(buf, u);
                break;
            }
            default:
                return jr_syntax(r, "bad escape");
            }
        } else if (c < 0x20) {
            return jr_syntax(r, "control character in string");
        } else if (c < 0x80) {
            /* A run of plain ASCII goes over in one copy. */
            const char *run = r->p;
            while (r->p < r->end && (unsigned char)*r->p >= 0x20 &&
                   (unsigned char)*r->p < 0x80 && *r->p != '"' && *r->p != '\\')
                r->p++;
            if (!sink_put(r, &sink, run, (size_t)(r->p - run)))
                return false;
            continue;
        } else {
            k = utf8_seq_len((const unsigned char *)r->p, (const unsigned char *)r->end);
            if (!k)
                return jr_syntax(r, "invalid UTF-8 in string");
            memcpy(buf, r->p, k);
            r->p += k;
        }
        if (!sink_put(r, &sink, buf, k))
            return false;
    }
    if (out)
        out[sink.out ? sink.n : 0] = 0;
    if (outlen)
        *outlen = sink.n;
    return true;
}

/* A JSON number's text: -?int frac? exp?; *is_int when neither frac nor exp. */
static bool read_number(jr *r, const char **s, size_t *n, bool *is_int)
{
    ws(r);
    const char *p = r->p, *b = p;
    *is_int = true;
    if (p < r->end && *p == '-')
        p++;
    if (p >= r->end || *p < '0' || *p > '9')
        return jr_syntax(r, "bad number");
    if (*p == '0')
        p++;
    else
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    if (p < r->end && *p == '.') {
        *is_int = false;
        p++;
        if (p >= r->end || *p < '0' || *p > '9')
            return jr_syntax(r, "bad number");
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < r->end && (*p == 'e' || *p == 'E')) {
        *is_int = false;
        p++;
        if (p < r->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= r->end || *p < '0' || *p > '9')
            return jr_syntax(r, "bad number");
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    }
    *s = b;
    *n = (size_t)(p - b);
    r->p = p;
    return true;
}

static bool read_literal(jr *r, const char *lit)
{
    size_t n = strlen(lit);
    ws(r);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, lit, n) != 0)
        return jr_syntax(r, "bad literal");
    r->p += n;
    return true;
}

/* Checks and skips any value (for keys we do not use). */
static bool skip_value(jr *r, int depth)
{
    if (depth > JR_MAX_DEPTH)
        return jr_fail(r, SYMD_E_INVALID, "JSON nested deeper than %d", JR_MAX_DEPTH);
    const char *s;
    size_t n;
    bool is_int;
    switch (peek(r)) {
    case JT_OBJ:
        r->p++;
        if (eat(r, '}'))
            return true;
        do {
            if (!read_string(r, NULL, 0, NULL, NULL) || !expect(r, ':', "expected ':'") ||
                !skip_value(r, depth + 1))
                return false;
        } while (eat(r, ','));
        return expect(r, '}', "expected ',' or '}'");
    case JT_ARR:
        r->p++;
        if (eat(r, ']'))
            return true;
        do {
            if (!skip_value(r, depth + 1))
                return false;
        } while (eat(r, ','));
        return expect(r, ']', "expected ',' or ']'");
    case JT_STR: return read_string(r, NULL, 0, NULL, NULL);
    case JT_NUM: return read_number(r, &s, &n, &is_int);
    case JT_TRUE: return read_literal(r, "true");
    case JT_FALSE: return read_literal(r, "false");
    case JT_NULL: return read_literal(r, "null");
    default: return jr_syntax(r, "expected a value");
    }
}

/* Iterates the members of an object: call with *first = true; returns true
 * with the key in key[] while members remain, false at '}' or on error
 * (check r->failed). */
static bool next_member(jr *r, bool *first, char *key, size_t cap)
{
    if (*first) {
        *first = false;
        if (!expect(r, '{', "expected an object"))
            return false;
        if (eat(r, '}'))
            return false;
    } else {
        if (eat(r, '}'))
            return false;
        if (!expect(r, ',', "expected ',' or '}'"))
            return false;
    }
    ws(r);
    if (peek(r) != JT_STR) {
        jr_syntax(r, "expected a key");
        return false;
    }
    /* Keys longer than any we know are checked, then ignored as "". */
    bool fits;
    if (!read_string(r, key, cap, NULL, &fits))
        return false;
    return expect(r, ':', "expected ':'");
}

/* Iterates array elements the same way. */
static bool next_element(jr *r, bool *first)
{
    if (*first) {
        *first = false;
        if (!expect(r, '[', "expected an array"))
            return false;
        return !eat(r, ']');
    }
    if (eat(r, ']'))
        return false;
    return expect(r, ',', "expected ',' or ']'");
}

/* Known keys may appear once per object: bit i of *seen is key i. */
static bool once(jr *r, unsigned *seen, unsigned bit, const char *key)
{
    if (*seen & bit)
        return jr_fail(r, SYMD_E_INVALID, "%s: key \"%s\" appears twice",
                       P(r), key);
    *seen |= bit;
    return true;
}

/* ---- typed values ------------------------------------------------------- */

/* An address: "0x…" hex string, or a non-negative JSON integer. */
static bool read_addr(jr *r, uint64_t *out, const char *what)
{
    jtype t = peek(r);
    if (t == JT_STR) {
        char s[64];
        size_t n;
        if (!read_string(r, s, sizeof s, &n, NULL))
            return false;
        if (!hex_parse_u64(s, n, out))
            return jr_fail(r, SYMD_E_INVALID, "%s.%s: \"%s\" is not a hex address",
                           P(r), what, s);
        return true;
    }
    if (t == JT_NUM) {
        const char *s;
        size_t n;
        bool is_int;
        if (!read_number(r, &s, &n, &is_int))
            return false;
        uint64_t v = 0;
        bool ok = is_int && s[0] != '-' && n <= 20;
        for (size_t i = 0; ok && i < n; i++)
            ok = !__builtin_mul_overflow(v, 10, &v) &&
                 !__builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v);
        if (!ok)
            return jr_fail(r, SYMD_E_INVALID,
                           "%s.%s must be a non-negative integer below 2^64", P(r), what);
        *out = v;
        return true;
    }
    return TYPE_ERR(r, t, "%s.%s must be a hex string or integer, not %s",
                   P(r), what, type_name(t));
}

static bool read_int64(jr *r, int64_t *out, const char *what)
{
    const char *s;
    size_t n;
    bool is_int;
    if (!read_number(r, &s, &n, &is_int))
        return false;
    char buf[32];
    if (!is_int || n >= sizeof buf)
        return jr_fail(r, SYMD_E_INVALID, "%s.%s must be an integer", P(r), what);
    memcpy(buf, s, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    long long v = strtoll(buf, &e, 10);
    if (errno || *e)
        return jr_fail(r, SYMD_E_INVALID, "%s.%s is out of range", P(r), what);
    *out = v;
    return true;
}

static bool read_adjust(jr *r, bt_adjust *out)
{
    char s[16];
    bool fits = false;
    if (peek(r) == JT_STR && !read_string(r, s, sizeof s, NULL, &fits))
        return false; /* broken JSON stays a syntax error */
    if (!fits ||
        !(strcmp(s, "auto") == 0 || strcmp(s, "none") == 0 || strcmp(s, "caller") == 0)) {
        return jr_fail(r, SYMD_E_INVALID, "%s%sadjust must be auto, none or caller",
                       r->at == AT_ROOT ? "" : P(r), r->at == AT_ROOT ? "" : ".");
    }
    *out = s[0] == 'a' ? BT_ADJUST_AUTO : s[0] == 'n' ? BT_ADJUST_NONE : BT_ADJUST_CALLER;
    return true;
}

/* An optional string kept in out (cap), or null. */
static bool read_opt_string(jr *r, char *out, size_t cap, const char *what, bool *present)
{
    jtype t = peek(r);
    if (t == JT_NULL) {
        *present = false;
        return read_literal(r, "null");
    }
    if (t != JT_STR)
        return TYPE_ERR(r, t, "%s.%s must be a string, not %s", P(r), what,
                       type_name(t));
    *present = true;
    return read_string(r, out, cap, NULL, NULL);
}

/* ---- the request -------------------------------------------------------- */

/* A frame's image as written, resolved once all images are known. */
typedef struct {
    bool by_uuid, has_adjust;
    long index;
    uint8_t uuid[16];
} frame_ref;

typedef struct {
    bt_request *req;
    frame_ref *refs; /* parallel to all frames, in order */
    size_t nrefs, refs_cap;
} parse_ctx;

static bool parse_image(jr *r, bt_image *im, size_t i)
{
    memset(im, 0, sizeof *im);
    r->at = AT_IMAGE;
    r->at_a = i;
    if (peek(r) != JT_OBJ)
        return TYPE_ERR(r, peek(r), "%s must be an object, not %s", P(r),
                       type_name(peek(r)));
    bool first = true, has_uuid = false, present;
    unsigned seen = 0;
    char key[32];
    while (next_member(r, &first, key, sizeof key)) {
        if (strcmp(key, "uuid") == 0) {
            char s[64];
            if (!once(r, &seen, 1, key))
                return false;
            if (peek(r) != JT_STR)
                return jr_fail(r, SYMD_E_INVALID, "%s.uuid must be a UUID string", P(r));
            if (!read_string(r, s, sizeof s, NULL, NULL))
                return false;
            if (!uuid_parse(s, im->uuid))
                return jr_fail(r, SYMD_E_INVALID, "%s.uuid \"%s\" is not a UUID", P(r), s);
            has_uuid = true;
        } else if (strcmp(key, "arch") == 0) {
            if (!once(r, &seen, 2, key) ||
                !read_opt_string(r, im->arch, sizeof im->arch, "arch", &present))
                return false;
            if (present && !im->arch[0])
                return jr_fail(r, SYMD_E_INVALID, "%s.arch is empty", P(r));
        } else if (strcmp(key, "name") == 0) {
            if (!once(r, &seen, 4, key) ||
                !read_opt_string(r, im->name, sizeof im->name, "name", &present))
                return false;
        } else if (strcmp(key, "load_address") == 0 || strcmp(key, "slide") == 0 ||
                   strcmp(key, "size") == 0) {
            unsigned bit = key[0] == 'l' ? 8 : key[1] == 'l' ? 16 : 32;
            if (!once(r, &seen, bit, key))
                return false;
            if (peek(r) == JT_NULL) {
                if (!read_literal(r, "null"))
                    return false;
                continue;
            }
            uint64_t *v = bit == 8 ? &im->load_address : bit == 16 ? &im->slide : &im->size;
            if (!read_addr(r, v, key))
                return false;
            if (bit == 8) im->has_load = true;
            else if (bit == 16) im->has_slide = true;
            else im->has_size = true;
        } else if (!skip_value(r, 2)) {
            return false;
        }
    }
    if (r->failed)
        return false;
    if (!has_uuid)
        return jr_fail(r, SYMD_E_INVALID, "%s.uuid is required", P(r));
    if (!im->has_load && !im->has_slide)
        return jr_fail(r, SYMD_E_INVALID, "%s needs load_address or slide", P(r));
    return true;
}

static bool parse_frame(jr *r, parse_ctx *cx, bt_thread *th, size_t t)
{
    bt_request *req = cx->req;
    size_t i = th->nframes;
    if (++req->total_frames > BT_MAX_FRAMES)
        return jr_fail(r, SYMD_E_TOO_LARGE, "more than %d frames in one request",
                       BT_MAX_FRAMES);
    if (!array_grow((void **)&th->frames, &th->cap, i + 1, sizeof *th->frames) ||
        !array_grow((void **)&cx->refs, &cx->refs_cap, cx->nrefs + 1, sizeof *cx->refs))
        return jr_fail(r, SYMD_E_NOMEM, "out of memory");
    bt_frame *f = &th->frames[i];
    frame_ref *ref = &cx->refs[cx->nrefs];
    memset(f, 0, sizeof *f);
    memset(ref, 0, sizeof *ref);
    ref->index = -1;
    r->at = AT_FRAME;
    r->at_a = t;
    r->at_b = i;
    jtype ty = peek(r);
    if (ty == JT_STR || ty == JT_NUM) { /* a bare address is a frame too */
        if (!read_addr(r, &f->address, "address"))
            return false;
    } else if (ty == JT_OBJ) {
        bool first = true, has_addr = false;
        unsigned seen = 0;
        char key[32];
        while (next_member(r, &first, key, sizeof key)) {
            if (strcmp(key, "address") == 0) {
                if (!once(r, &seen, 1, key) || !read_addr(r, &f->address, "address"))
                    return false;
                has_addr = true;
            } else if (strcmp(key, "adjust") == 0) {
                if (!once(r, &seen, 2, key) || !read_adjust(r, &f->adjust))
                    return false;
                ref->has_adjust = true;
            } else if (strcmp(key, "image") == 0) {
                if (!once(r, &seen, 4, key))
                    return false;
                jtype it = peek(r);
                if (it == JT_NULL) {
                    if (!read_literal(r, "null"))
                        return false;
                } else if (it == JT_NUM) {
                    int64_t k;
                    if (!read_int64(r, &k, "image"))
                        return false;
                    if (k < 0 || k > BT_MAX_IMAGES)
                        return jr_fail(r, SYMD_E_INVALID,
                                       "%s.image %lld is not an index into images",
                                       P(r), (long long)k);
                    ref->index = (long)k;
                } else if (it == JT_STR) {
                    char s[64];
                    if (!read_string(r, s, sizeof s, NULL, NULL))
                        return false;
                    if (!uuid_parse(s, ref->uuid))
                        return jr_fail(r, SYMD_E_INVALID, "%s.image is not a UUID", P(r));
                    ref->by_uuid = true;
                } else {
                    return jr_fail(r, SYMD_E_INVALID, "%s.image must be an index or UUID",
                                   P(r));
                }
            } else if (!skip_value(r, 4)) {
                return false;
            }
        }
        if (r->failed)
            return false;
        if (!has_addr)
            return jr_fail(r, SYMD_E_INVALID, "%s.address is required", P(r));
    } else {
        return TYPE_ERR(r, ty, "%s must be an object or address, not %s",
                       P(r), type_name(ty));
    }
    th->nframes++;
    cx->nrefs++;
    return true;
}

static bool parse_thread(jr *r, parse_ctx *cx, bt_thread *th, size_t t)
{
    r->at = AT_THREAD;
    r->at_a = t;
    if (peek(r) != JT_OBJ)
        return TYPE_ERR(r, peek(r), "%s must be an object, not %s", P(r),
                       type_name(peek(r)));
    bool first = true, has_frames = false;
    unsigned seen = 0;
    char key[32];
    while (next_member(r, &first, key, sizeof key)) {
        r->at = AT_THREAD;
        r->at_a = t;
        if (strcmp(key, "id") == 0) {
            if (!once(r, &seen, 1, key))
                return false;
            jtype ty = peek(r);
            if (ty == JT_NUM) {
                if (!read_int64(r, &th->id_int, "id"))
                    return false;
                th->id_kind = BT_ID_INT;
            } else if (ty == JT_STR) {
                char s[256];
                if (!read_string(r, s, sizeof s, NULL, NULL))
                    return false;
                if (!(th->id_str = strdup(s)))
                    return jr_fail(r, SYMD_E_NOMEM, "out of memory");
                th->id_kind = BT_ID_STRING;
            } else if (ty == JT_NULL) {
                if (!read_literal(r, "null"))
                    return false;
            } else {
                return jr_fail(r, SYMD_E_INVALID, "%s.id must be an integer or string",
                               P(r));
            }
        } else if (strcmp(key, "crashed") == 0) {
            jtype ty = peek(r);
            if (!once(r, &seen, 2, key))
                return false;
            if (ty != JT_TRUE && ty != JT_FALSE)
                return jr_fail(r, SYMD_E_INVALID, "%s.crashed must be a boolean", P(r));
            th->crashed = ty == JT_TRUE;
            if (!read_literal(r, th->crashed ? "true" : "false"))
                return false;
        } else if (strcmp(key, "name") == 0) {
            char s[256];
            bool present;
            if (!once(r, &seen, 4, key) || !read_opt_string(r, s, sizeof s, "name", &present))
                return false;
            if (present && !(th->name = strdup(s)))
                return jr_fail(r, SYMD_E_NOMEM, "out of memory");
        } else if (strcmp(key, "frames") == 0) {
            if (!once(r, &seen, 8, key))
                return false;
            if (peek(r) != JT_ARR)
                return TYPE_ERR(r, peek(r), "%s.frames must be an array, not %s",
                               P(r), type_name(peek(r)));
            bool ffirst = true;
            while (next_element(r, &ffirst))
                if (!parse_frame(r, cx, th, t))
                    return false;
            if (r->failed)
                return false;
            has_frames = true;
        } else if (!skip_value(r, 3)) {
            return false;
        }
    }
    if (r->failed)
        return false;
    r->at = AT_THREAD;
    r->at_a = t;
    if (!has_frames)
        return jr_fail(r, SYMD_E_INVALID, "%s.frames is required", P(r));
    return true;
}

static bool parse_root(jr *r, parse_ctx *cx, bool *adjust_given)
{
    bt_request *req = cx->req;
    if (peek(r) != JT_OBJ)
        return TYPE_ERR(r, peek(r), "request body must be a JSON object, not %s",
                       type_name(peek(r)));
    bool first = true, has_threads = false;
    unsigned seen = 0;
    char key[32];
    while (next_member(r, &first, key, sizeof key)) {
        r->at = AT_ROOT;
        if (strcmp(key, "adjust") == 0) {
            if (!once(r, &seen, 1, key) || !read_adjust(r, &req->adjust))
                return false;
            *adjust_given = true;
        } else if (strcmp(key, "images") == 0) {
            if (!once(r, &seen, 2, key))
                return false;
            if (peek(r) != JT_ARR)
                return TYPE_ERR(r, peek(r), "images must be an array, not %s",
                               type_name(peek(r)));
            bool afirst = true;
            while (next_element(r, &afirst)) {
                if (req->nimages == BT_MAX_IMAGES)
                    return jr_fail(r, SYMD_E_TOO_LARGE, "more than %d images",
                                   BT_MAX_IMAGES);
                if (!array_grow((void **)&req->images, &req->images_cap, req->nimages + 1,
                          sizeof *req->images))
                    return jr_fail(r, SYMD_E_NOMEM, "out of memory");
                if (!parse_image(r, &req->images[req->nimages], req->nimages))
                    return false;
                req->nimages++;
            }
        } else if (strcmp(key, "threads") == 0) {
            if (!once(r, &seen, 4, key))
                return false;
            if (peek(r) != JT_ARR)
                return TYPE_ERR(r, peek(r), "threads must be an array, not %s",
                               type_name(peek(r)));
            bool afirst = true;
            while (next_element(r, &afirst)) {
                if (req->nthreads == BT_MAX_THREADS)
                    return jr_fail(r, SYMD_E_TOO_LARGE, "more than %d threads",
                                   BT_MAX_THREADS);
                if (!array_grow((void **)&req->threads, &req->threads_cap, req->nthreads + 1,
                          sizeof *req->threads))
                    return jr_fail(r, SYMD_E_NOMEM, "out of memory");
                bt_thread *th = &req->threads[req->nthreads++];
                memset(th, 0, sizeof *th);
                if (!parse_thread(r, cx, th, req->nthreads - 1))
                    return false;
            }
            has_threads = true;
        } else if (!skip_value(r, 1)) {
            return false;
        }
        if (r->failed)
            return false;
    }
    if (r->failed)
        return false;
    ws(r);
    if (r->p != r->end)
        return jr_syntax(r, "unexpected data after the request object");
    if (!has_threads)
        return jr_fail(r, SYMD_E_INVALID, "threads must be an array");
    return true;
}

static int cmp_by_uuid(const void *a, const void *b, void *ctx)
{
    const bt_request *req = ctx;
    long x = *(const long *)a, y = *(const long *)b;
    int c = memcmp(req->images[x].uuid, req->images[y].uuid, 16);
    return c ? c : (x > y) - (x < y);
}

/* Gives every frame its image index and adjustment now that the whole
 * request (images and the request-wide adjust, in any key order) is known. */
static symd_status resolve(parse_ctx *cx, symd_err *err)
{
    bt_request *req = cx->req;
    long *by_uuid = NULL;
    if (req->nimages) {
        by_uuid = malloc(req->nimages * sizeof *by_uuid);
        if (!by_uuid)
            return symd_fail(err, SYMD_E_NOMEM, "out of memory");
        for (size_t i = 0; i < req->nimages; i++)
            by_uuid[i] = (long)i;
        qsort_r(by_uuid, req->nimages, sizeof *by_uuid, cmp_by_uuid, req);
    }
    symd_status st = SYMD_OK;
    size_t k = 0;
    for (size_t t = 0; t < req->nthreads && st == SYMD_OK; t++) {
        bt_thread *th = &req->threads[t];
        for (size_t i = 0; i < th->nframes; i++, k++) {
            const frame_ref *ref = &cx->refs[k];
            bt_frame *f = &th->frames[i];
            if (!ref->has_adjust)
                f->adjust = req->adjust;
            f->image = -1;
            if (ref->by_uuid) {
                size_t lo = 0, hi = req->nimages; /* first uuid >= wanted */
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    if (memcmp(req->images[by_uuid[mid]].uuid, ref->uuid, 16) < 0)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo < req->nimages &&
                    memcmp(req->images[by_uuid[lo]].uuid, ref->uuid, 16) == 0)
                    f->image = by_uuid[lo];
                else
                    st = symd_fail(err, SYMD_E_INVALID,
                                   "threads[%zu].frames[%zu].image names a UUID that is not "
                                   "in images", t, i);
            } else if (ref->index >= 0) {
                if ((size_t)ref->index >= req->nimages)
                    st = symd_fail(err, SYMD_E_INVALID,
                                   "threads[%zu].frames[%zu].image %ld is not an index into "
                                   "images", t, i, ref->index);
                f->image = ref->index;
            }
            if (st != SYMD_OK)
                break;
        }
    }
    free(by_uuid);
    return st;
}

symd_status bt_parse(const char *json, size_t len, bt_request *req, symd_err *err)
{
    memset(req, 0, sizeof *req);
    req->adjust = BT_ADJUST_AUTO;
    jr r = {.p = json, .end = json + len, .start = json, .err = err};
    parse_ctx cx = {.req = req};
    bool adjust_given = false;
    symd_status st = SYMD_OK;
    if (!parse_root(&r, &cx, &adjust_given))
        st = err && err->kind ? err->kind : SYMD_E_INVALID;
    else
        st = resolve(&cx, err);
    free(cx.refs);
    if (st != SYMD_OK)
        bt_free(req);
    return st;
}

void bt_free(bt_request *req)
{
    for (size_t t = 0; t < req->nthreads; t++) {
        free(req->threads[t].frames);
        free(req->threads[t].id_str);
        free(req->threads[t].name);
    }
    free(req->threads);
    free(req->images);
    memset(req, 0, sizeof *req);
}

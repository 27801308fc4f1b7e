/* Strict request framing (RFC 9112) where libmicrohttpd 0.9.75 is lenient.
 *
 * What libmicrohttpd does itself, with symd's options (measured against
 * 0.9.75 and read in its connection.c):
 *   - a malformed Content-Length ("+2", "2, 2", letters): 400 and close
 *     (0.9.75 writes that answer's status line and headers twice);
 *   - a request line without a valid "HTTP/d.d" version: 400 and close;
 *     HTTP/0.x and 2+: 505 and close;
 *   - a header line without a colon: 400 and close;
 *   - headers or a request line over the 32 KiB connection pool: 431/414.
 * What it lets through, and framing_refused() answers instead (each with
 * Connection: close, before any body byte is read, so nothing behind the
 * request on the connection is ever read as another request):
 *   - Content-Length together with Transfer-Encoding, and Content-Length
 *     twice: libmicrohttpd reads the first (Transfer-Encoding wins over
 *     Content-Length) and the rest of the body becomes a second request:
 *     400 bad_framing;
 *   - a transfer coding other than one "chunked": libmicrohttpd waits for
 *     a body of unknown length until the idle timeout: 501
 *     unsupported_transfer_coding for a coding it does not know ("identity",
 *     "gzip", "xchunked", ...), 400 bad_framing for "chunked" twice, with
 *     whitespace or an empty list element around it (libmicrohttpd reads
 *     a chunked body only for the one value "chunked" exactly) or on an
 *     HTTP/1.0 request;
 *   - a field name with whitespace before the colon ("Content-Length :")
 *     or any other byte outside RFC 9110's token: libmicrohttpd keeps the
 *     space in the name, so the field is not Content-Length for it;
 *     MHD_OPTION_STRICT_FOR_CLIENT would refuse it only at -1 (0.9.75 has
 *     the test inverted), and +1, which refuses a missing Host, drops
 *     a request line with a space in its target without an answer: symd
 *     sets neither and checks here: 400 bad_header;
 *   - an obs-folded line (a field line starting with a space or tab):
 *     libmicrohttpd appends it to the previous field's *name*
 *     ("Content-Length:\r\n 37" becomes a field "Content-Length37"): 400
 *     bad_header;
 *   - a NUL byte in a field value: libmicrohttpd stores the value up to the
 *     NUL ("Bearer rd\0junk" reads as "Bearer rd"); other control bytes but
 *     tab stay in the value: 400 bad_header. The NUL is seen in the raw
 *     header block (libmicrohttpd replaces each CR, LF and field colon
 *     with a NUL and keeps every field in order in the block, so anything
 *     between a value's end and the next line is what it cut off). One NUL
 *     right before a line's LF cannot be told from the CR of a CRLF; the
 *     value read is then all the client sent before it.
 *   - HTTP/1.1 without Host, or Host twice: 400 bad_host;
 *   - a request target with a control byte or a space in it, and a query
 *     of more parameters than the 32 KiB pool holds records for: see
 *     framing_uri_seen below (400 bad_request_target, 414 uri_too_long).
 * A request line with no space at all ("GET\t/healthz\tHTTP/1.1"):
 * libmicrohttpd closes the connection without a word before any callback of
 * symd runs; answer_dropped_request (http.c) answers it 400 as the
 * connection closes. */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "http_int.h"

/* The footer name under which framing_uri_seen leaves its verdict for the
 * first callback. Footers only arrive after a chunked body, so at the
 * first callback every footer is one symd set. */
#define FRAMING_MARK "symd-framing-refused"
#define MARK_TARGET "target"
#define MARK_QUERY "query"

/* libmicrohttpd 0.9.75 takes a record of about 64 bytes from the 32 KiB
 * connection pool for every query parameter, beside the request line and
 * headers in the same pool; when the pool runs out it queues a 431 and then
 * reads on as if nothing happened, and the connection ends with no answer.
 * Queries past these bounds are cut before it parses them and answered
 * 414. No route takes more than a handful of parameters. */
#define MAX_QUERY_PARAMS 64
#define QUERY_PARAM_COST 96
#define MAX_TARGET_COST (12u << 10)

void *framing_uri_seen(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    const char *why = NULL;
    size_t params = 0, len = 0;
    const char *q = NULL;
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++, len++) {
        if (*p <= 0x20 || *p == 0x7f)
            why = MARK_TARGET;
        if (*p == '?' && !q)
            q = (const char *)p;
        if (q && (*p == '&' || (const char *)p == q))
            params++;
    }
    if (!why && q && (params > MAX_QUERY_PARAMS || len + params * QUERY_PARAM_COST > MAX_TARGET_COST))
        why = MARK_QUERY;
    if (why) {
        /* libmicrohttpd parses the query from the byte after the '?', in
         * its own read buffer, after this callback: an empty query leaves
         * it nothing to run out of memory on. */
        if (q)
            ((char *)q)[1] = 0;
        /* No room left to note it: an empty target, which no route takes
         * (404), rather than the path served without its query. */
        if (MHD_set_connection_value(c, MHD_FOOTER_KIND, FRAMING_MARK, why) != MHD_YES)
            ((char *)uri)[0] = 0;
    }
    return NULL;
}

/* RFC 9110 5.6.2 tchar. */
static bool is_tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

typedef struct {
    uintptr_t start, end; /* the raw header block, as libmicrohttpd left it */
    uintptr_t pos;        /* just past the previous field's value; 0 before the first */
    int http_minor;       /* -1: unknown */
    unsigned n_cl, n_te, n_host, n_other_coding;
    bool bad_name, bad_value, bad_layout;
    bool te_exact; /* a Transfer-Encoding value is "chunked", as libmicrohttpd compares */
} scan;

/* Whether [from, to) lies in the block and holds NUL bytes only. */
static bool nuls(const scan *s, uintptr_t from, uintptr_t to)
{
    if (from < s->start || to > s->end || from > to)
        return false;
    for (const char *p = (const char *)from; p < (const char *)to; p++)
        if (*p)
            return false;
    return true;
}

/* The request line's version is "HTTP/1.x", right before vend, after the
 * NUL libmicrohttpd wrote over the space before it. */
static void read_version(scan *s, uintptr_t vend)
{
    const char *p = (const char *)vend;
    if (vend < s->start + 9 || vend > s->end || p[-9] != 0 || memcmp(p - 8, "HTTP/1.", 7) != 0 ||
        p[-1] < '0' || p[-1] > '9')
        return;
    s->http_minor = p[-1] - '0';
}

/* Counts the codings of a Transfer-Encoding value other than chunked. */
static void codings(scan *s, const char *v, size_t n)
{
    size_t i = 0;
    for (;;) {
        while (i < n && (v[i] == ' ' || v[i] == '\t'))
            i++;
        size_t b = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e > b && (e - b != 7 || strncasecmp(v + b, "chunked", 7) != 0))
            s->n_other_coding++; /* empty ones: refused as not exactly "chunked" */
        if (i >= n)
            break;
        i++; /* the comma */
    }
}

static enum MHD_Result each_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    scan *s = cls;
    uintptr_t k = (uintptr_t)key, v = (uintptr_t)value;
    if (key_size == 0)
        s->bad_name = true;
    for (size_t i = 0; i < key_size; i++)
        if (!is_tchar((unsigned char)key[i]))
            s->bad_name = true;
    for (size_t i = 0; i < value_size; i++) {
        unsigned char ch = (unsigned char)value[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
            s->bad_value = true;
    }
    /* Layout: [NUL NUL?] name NUL(the colon) SP/HT* value — the field line
     * right after the previous one, nothing cut off in between. A field
     * libmicrohttpd copied elsewhere (an obs-fold) is not in the block. */
    if (k < s->start || k + key_size >= s->end || v < k + key_size + 1 ||
        v + value_size > s->end || key[key_size] != 0) {
        s->bad_layout = true;
    } else {
        for (const char *p = key + key_size + 1; p < value; p++)
            if (*p != ' ' && *p != '\t')
                s->bad_layout = true;
        if (s->pos == 0) /* the request line's CRLF or LF before the first field */
            read_version(s, k - (k >= s->start + 2 && key[-2] == 0 ? 2 : 1));
        else if (k < s->pos + 1 || k > s->pos + 2 || !nuls(s, s->pos, k))
            s->bad_layout = true;
    }
    s->pos = v + value_size;
    if (key_size == 14 && strncasecmp(key, "Content-Length", 14) == 0)
        s->n_cl++;
    else if (key_size == 17 && strncasecmp(key, "Transfer-Encoding", 17) == 0) {
        s->n_te++;
        s->te_exact = value_size == 7 && strncasecmp(value, "chunked", 7) == 0;
        codings(s, value, value_size);
    } else if (key_size == 4 && strncasecmp(key, "Host", 4) == 0)
        s->n_host++;
    return MHD_YES;
}

/* Every refusal closes the connection after the answer (rs->close: the
 * answer says Connection: close), whatever follows on it unread. */
static enum MHD_Result refuse(struct MHD_Connection *c, req_state *rs, unsigned status,
                              const char *code, const char *msg)
{
    rs->close = true;
    return reply_error(c, status, code, "%s", msg);
}

bool framing_refused(struct MHD_Connection *c, req_state *rs, const char *method,
                     enum MHD_Result *ret)
{
    const char *mark = MHD_lookup_connection_value(c, MHD_FOOTER_KIND, FRAMING_MARK);
    if (mark) {
        *ret = strcmp(mark, MARK_QUERY) == 0
                   ? refuse(c, rs, 414, "uri_too_long",
                            "the query has more parameters than this server reads "
                            "(at most 64, and 12 KiB of request target)")
                   : refuse(c, rs, 400, "bad_request_target",
                            "the request target holds a space or a control byte");
        return true;
    }
    const union MHD_ConnectionInfo *hi =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    scan s = {0};
    s.http_minor = -1;
    s.start = (uintptr_t)method; /* libmicrohttpd's method is the block's first byte */
    s.end = hi ? s.start + hi->header_size : s.start;
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, each_field, &s);
    if (s.pos == 0) { /* no field: the block ends "HTTP/1.x" and 2 to 4 NULs */
        uintptr_t e = s.end;
        while (e > s.start && *(const char *)(e - 1) == 0 && s.end - e < 4)
            e--;
        if (s.end - e >= 2)
            read_version(&s, e);
    } else if (s.end < s.pos + 2 || s.end > s.pos + 4 || !nuls(&s, s.pos, s.end)) {
        s.bad_layout = true; /* after the last value: its line end and the blank line */
    }
    if (s.http_minor < 0)
        s.bad_layout = true; /* the block is not as libmicrohttpd 0.9.75 leaves it */
    const char *bad = NULL;
    unsigned status = 400;
    const char *code = "bad_header";
    if (s.bad_name)
        bad = "a header name holds a byte outside RFC 9110's token (whitespace before the "
              "colon?)";
    else if (s.bad_value)
        bad = "a header value holds a control byte";
    else if (s.bad_layout)
        bad = "a header value holds a NUL byte, or a header line is folded (obs-fold)";
    else if (s.n_te && s.n_other_coding) {
        status = 501;
        code = "unsupported_transfer_coding";
        bad = "the only transfer coding this server reads is chunked";
    } else if (s.n_te && (s.n_cl || s.n_te != 1 || !s.te_exact || s.http_minor == 0)) {
        /* libmicrohttpd reads a chunked body only when the one value is
         * "chunked" exactly: "chunked " (a trailing space) or ", chunked"
         * would leave it waiting for a body of unknown length */
        code = "bad_framing";
        bad = s.n_cl ? "Content-Length and Transfer-Encoding together"
              : s.http_minor == 0 ? "Transfer-Encoding in an HTTP/1.0 request"
                                  : "Transfer-Encoding must be chunked, given once";
    } else if (s.n_cl > 1) {
        code = "bad_framing";
        bad = "Content-Length given more than once";
    } else if (s.n_host > 1 || (s.n_host == 0 && s.http_minor >= 1)) {
        code = "bad_host";
        bad = s.n_host ? "Host given more than once" : "an HTTP/1.1 request needs a Host header";
    }
    if (!bad)
        return false;
    *ret = refuse(c, rs, status, code, bad);
    return true;
}

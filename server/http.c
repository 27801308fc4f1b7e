/* The HTTP API's core: the libmicrohttpd daemon, the route table and
 * routing, the request state and its limits (body sizes, the in-flight
 * budget, timeouts, connections), the reply helpers and the access log. The
 * handlers live one resource per file (http_images.c, http_symbolicate.c,
 * http_crashes.c, http_ops.c), declared in http_int.h.
 *
 * Each request gets a req_state on its first callback; bodies stream into
 * bounded buffers as they arrive (never sized from Content-Length); the
 * state is freed in the request-completed callback, whatever happened, and
 * that callback also writes the access-log line and the request metrics.
 * Each connection gets a conn_track from the connection-notify callback so a
 * reaper thread can cut off clients that pass --request-timeout. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/tcp.h> /* struct tcp_info with its byte counts */
#include <jansson.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../util/hex.h"
#include "../util/jsonw.h"
#include "acceptor.h"
#include "grouping_file.h"
#include "mdwalk.h"
#include "http_int.h"
#include "regroup.h"
#include "retention.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* Every route with its methods; docs/openapi.yaml lists the same (a test
 * holds the two together). HEAD is allowed wherever GET is. ROUTE_NONE's
 * path is the metrics label of requests no route matched. */
static const http_route_info route_table[ROUTE_COUNT] = {
    [ROUTE_NONE] = {"unmatched", ""},
    [ROUTE_INDEX] = {"/", "GET"},
    [ROUTE_ASSET] = {"/assets/{file}", "GET"},
    [ROUTE_ASSET_JS] = {"/assets/js/{module}", "GET"},
    [ROUTE_HEALTH] = {"/healthz", "GET"},
    [ROUTE_METRICS] = {"/metrics", "GET"},
    [ROUTE_OPENAPI] = {"/v1/openapi.yaml", "GET"},
    [ROUTE_IMAGES] = {"/v1/images", "GET, POST"},
    [ROUTE_IMAGE] = {"/v1/images/{uuid}", "GET, DELETE"},
    [ROUTE_SYMBOLICATE] = {"/v1/symbolicate", "POST"},
    [ROUTE_CRASHES] = {"/v1/crashes", "GET, POST"},
    [ROUTE_CRASH] = {"/v1/crashes/{id}", "GET, DELETE"},
    [ROUTE_CRASH_GROUPS] = {"/v1/crashes/groups", "GET"},
    [ROUTE_CRASH_GROUP] = {"/v1/crashes/group", "GET"},
    [ROUTE_CRASH_GROUP_STATE] = {"/v1/crashes/group/state", "POST"},
    [ROUTE_CRASH_GROUP_HISTORY] = {"/v1/crashes/group/history", "GET"},
    [ROUTE_CRASH_GROUP_SPREAD] = {"/v1/crashes/group/spread", "GET"},
    [ROUTE_CRASH_VALUES] = {"/v1/crashes/values", "GET"},
    [ROUTE_CRASH_TREND] = {"/v1/crashes/trend", "GET"},
    [ROUTE_MISSING] = {"/v1/missing", "GET"},
    [ROUTE_SYSTEM_SETS] = {"/v1/system-symbols", "GET, POST"},
    [ROUTE_SYSTEM_SET] = {"/v1/system-symbols/{id}", "DELETE"},
    [ROUTE_WEBHOOK_DELIVERIES] = {"/v1/webhooks/deliveries", "GET"},
    [ROUTE_UPLOAD_OPTIONS] = {"/v1/upload-options", "GET"},
    [ROUTE_IMAGES_CHECK] = {"/v1/images/check", "POST"},
    [ROUTE_CHUNK] = {"/v1/chunks/{sha256}", "POST"},
    [ROUTE_CHUNKS_MISSING] = {"/v1/chunks/missing", "POST"},
    [ROUTE_ASSEMBLE] = {"/v1/images/assemble", "POST"},
    [ROUTE_ASSEMBLE_STATE] = {"/v1/images/assemble/{sha256}", "GET"},
};

_Static_assert(ROUTE_COUNT <= METRICS_MAX_ROUTES, "every route needs its metrics (metrics.h)");

const http_route_info *http_routes(size_t *n)
{
    *n = ROUTE_COUNT - 1;
    return route_table + 1;
}

/* ---- replies ------------------------------------------------------------ */

/* The request being answered on this thread: libmicrohttpd calls a
 * connection's handlers on one thread at a time, and on_request sets this
 * before it dispatches, so the reply helpers can record the status and size
 * for the access log and metrics without every handler passing it down. */
static __thread req_state *tl_req;
/* This thread's capture of answers (reply_capture_swap), or NULL. */
static __thread reply_capture *tl_capture;

reply_capture *reply_capture_swap(reply_capture *cap)
{
    reply_capture *old = tl_capture;
    tl_capture = cap;
    return old;
}

/* Charges n bytes of request or response body to the server's budget
 * (--max-inflight-mb); false when they do not fit. A request whose own
 * bytes are all that is held always fits, so one upload of --max-upload
 * bytes is never refused for its size alone. While the request's memory
 * meter runs, bytes it already took from the budget (an answer built under
 * it) move over instead of being counted twice. */
static bool hold(server *srv, req_state *rs, uint64_t n)
{
    if (mem_meter_current() == &rs->meter && mem_meter_transfer(&rs->meter, n)) {
        rs->held += n;
        return true;
    }
    uint64_t cur = atomic_load(&srv->pool.held);
    do {
        if (cur != rs->held && (cur + n < cur || cur + n > srv->pool.max))
            return false;
    } while (!atomic_compare_exchange_weak(&srv->pool.held, &cur, cur + n));
    rs->held += n;
    return true;
}

/* Answers below this size are not charged: they cannot add up to much, and
 * the 503 that replaces a refused answer must itself always fit. */
#define HOLD_MIN_RESPONSE (64u << 10)

enum MHD_Result reply_busy(struct MHD_Connection *c)
{
    return reply_error(c, 503, "busy",
                       "the server holds all the memory --max-inflight-mb allows for "
                       "requests; retry later");
}

enum MHD_Result queue_response(struct MHD_Connection *c, unsigned status,
                               struct MHD_Response *r, size_t len, const char *ctype,
                               bool owned)
{
    if (owned && len >= HOLD_MIN_RESPONSE && tl_req && !hold(tl_req->srv, tl_req, len)) {
        MHD_destroy_response(r);
        return reply_busy(c);
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (tl_req && tl_req->allow && status == 405)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, tl_req->allow);
    if (tl_req && (tl_req->close || atomic_load(&tl_req->srv->draining)))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (status == 503)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "5");
    if (status == 507) /* the chunk budget: assemblies and the TTL free it */
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "30");
    if (status == 401) /* RFC 9110: a 401 names the scheme it wants */
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"symd\"");
    if (status == 401 && tl_req && tl_req->basic_challenge)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"symd\"");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    if (tl_req && ret == MHD_YES) {
        tl_req->status = status;
        tl_req->bytes_out = len;
    }
    return ret;
}

enum MHD_Result reply_bytes(struct MHD_Connection *c, unsigned status, uint8_t *data,
                            size_t len, const char *ctype)
{
    if (tl_capture) { /* the last answer wins, as a queued one would have */
        free(tl_capture->data);
        tl_capture->status = status;
        tl_capture->data = data;
        tl_capture->len = len;
        (void)ctype;
        return MHD_YES;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(data);
        return MHD_NO;
    }
    return queue_response(c, status, r, len, ctype, true);
}

enum MHD_Result reply_dynbuf(struct MHD_Connection *c, unsigned status, dynbuf *b)
{
    size_t len;
    uint8_t *data = dynbuf_take(b, &len);
    if (!data) {
        data = (uint8_t *)strdup("{}");
        len = 2;
    }
    return reply_bytes(c, status, data, len, "application/json");
}

enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *doc)
{
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!s)
        return MHD_NO;
    return reply_bytes(c, status, (uint8_t *)s, strlen(s), "application/json");
}

static enum MHD_Result reply_error_msg(struct MHD_Connection *c, unsigned status,
                                       const char *code, const char *msg);

enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *code,
                            const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* An error answer is small and must go out even when the meter that
     * refused the request is full. */
    mem_meter *m = mem_meter_swap(NULL);
    enum MHD_Result ret = reply_error_msg(c, status, code, msg);
    mem_meter_swap(m);
    return ret;
}

static enum MHD_Result reply_error_msg(struct MHD_Connection *c, unsigned status,
                                       const char *code, const char *msg)
{
    dynbuf b;
    dynbuf_init(&b, 4096);
    jsonw w;
    jw_init(&w, &b);
    jw_raw(&w, "{\"error\":{\"code\":");
    jw_str(&w, code);
    jw_raw(&w, ",\"message\":");
    jw_str(&w, msg);
    jw_raw(&w, "}}");
    if (status >= 500)
        fprintf(stderr, "symd: %u %s: %s\n", status, code, msg);
    return reply_dynbuf(c, status, &b);
}

bool reply_if_over_budget(struct MHD_Connection *c, enum MHD_Result *ret)
{
    mem_meter *m = mem_meter_current();
    if (!m || !m->trip)
        return false;
    if (m->trip == MEM_TRIP_POOL) {
        *ret = reply_busy(c);
        return true;
    }
    *ret = reply_error(c, 413, "too_large",
                       "reading this request needs more than its memory budget of %llu MiB "
                       "(--request-mem-factor times its %llu-byte body, plus --request-mem-mb)",
                       (unsigned long long)((m->limit + (tl_req ? tl_req->received : 0)) >> 20),
                       (unsigned long long)(tl_req ? tl_req->received : 0));
    return true;
}

enum MHD_Result reply_status(struct MHD_Connection *c, const symd_err *e,
                             const char *corrupt_code)
{
    /* Any failure after the meter refused memory may stem from it. */
    enum MHD_Result over;
    if (reply_if_over_budget(c, &over))
        return over;
    switch (e->kind) {
    case SYMD_E_CORRUPT:
        return reply_error(c, 400, corrupt_code, "%s", e->msg);
    case SYMD_E_NOT_MACHO:
        return reply_error(c, 415, "not_macho", "%s", e->msg);
    case SYMD_E_NO_UUID:
        return reply_error(c, 400, "no_uuid", "%s", e->msg);
    case SYMD_E_BAD_DEBUG_INFO:
        return reply_error(c, 400, "malformed_debug_info", "%s", e->msg);
    case SYMD_E_NOT_CRASH_REPORT:
        return reply_error(c, 415, "not_a_crash_report", "%s", e->msg);
    case SYMD_E_UNSUPPORTED:
        return reply_error(c, 422, "unsupported", "%s", e->msg);
    case SYMD_E_TOO_LARGE:
        return reply_error(c, 413, "too_large", "%s", e->msg);
    case SYMD_E_INVALID:
        return reply_error(c, 400, "invalid_request", "%s", e->msg);
    case SYMD_E_NOT_FOUND:
        return reply_error(c, 404, "not_found", "%s", e->msg);
    case SYMD_E_NOMEM:
        return reply_error(c, 503, "out_of_memory", "%s", e->msg);
    case SYMD_E_UNAVAILABLE:
        return reply_error(c, 503, "database_unavailable", "%s", e->msg);
    case SYMD_E_IO: /* the server's own files: no temporary file, or no room */
        return reply_error(c, 507, "insufficient_storage", "%s", e->msg);
    default:
        return reply_error(c, 500, "internal_error", "%s (%s:%d)", e->msg,
                           e->src_file ? e->src_file : "?", e->src_line);
    }
}

/* ---- request arguments --------------------------------------------------- */

const char *query_arg(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

const char *list_args(struct MHD_Connection *c, uint64_t *limit, uint64_t *before)
{
    const char *lim = query_arg(c, "limit");
    const char *cur = query_arg(c, "cursor");
    *limit = 50;
    *before = 0;
    if (lim && (!num_parse_u64(lim, limit) || *limit == 0 || *limit > MAX_LIST))
        return "limit must be an integer from 1 to " STRINGIFY(MAX_LIST);
    if (cur && *cur && (!num_parse_u64(cur, before) || *before == 0 || *before > INT64_MAX))
        return "cursor must be a next_cursor value from an earlier page";
    return NULL;
}

void set_next_cursor(json_t *doc, bool more, int64_t last_id)
{
    if (more) {
        char next[24];
        snprintf(next, sizeof next, "%lld", (long long)last_id);
        json_object_set_new(doc, "next_cursor", json_string(next));
    } else {
        json_object_set_new(doc, "next_cursor", json_null());
    }
}

json_t *json_str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

bool demangle_arg(struct MHD_Connection *c, bool *full, enum MHD_Result *refused)
{
    const char *d = query_arg(c, "demangle");
    *full = d && strcmp(d, "full") == 0;
    if (!d || !*d || *full || strcmp(d, "simplified") == 0)
        return true;
    *refused = reply_error(c, 400, "invalid_request",
                           "demangle must be 'simplified' or 'full', not '%.32s'", d);
    return false;
}

/* ---- request plumbing --------------------------------------------------- */

static route route_of(const char *url, char *path_arg, size_t cap)
{
    /* absolute-form (RFC 9112 3.2.2: a server must accept it): the path of
     * "http://host:port/path"; the authority is not checked. */
    if (strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0) {
        const char *auth = strchr(url, ':') + 3;
        url = strchr(auth, '/');
        if (!url)
            url = "/";
    }
    if (strcmp(url, "/") == 0)
        return ROUTE_INDEX;
    if (strncmp(url, "/assets/js/", 11) == 0) {
        snprintf(path_arg, cap, "%s", url + 11);
        return ROUTE_ASSET_JS;
    }
    if (strncmp(url, "/assets/", 8) == 0) {
        snprintf(path_arg, cap, "%s", url + 8);
        return ROUTE_ASSET;
    }
    if (strcmp(url, "/healthz") == 0)
        return ROUTE_HEALTH;
    if (strcmp(url, "/metrics") == 0)
        return ROUTE_METRICS;
    if (strcmp(url, "/v1/openapi.yaml") == 0)
        return ROUTE_OPENAPI;
    if (strcmp(url, "/v1/images") == 0 || strcmp(url, "/v1/images/") == 0)
        return ROUTE_IMAGES;
    if (strcmp(url, "/v1/symbolicate") == 0)
        return ROUTE_SYMBOLICATE;
    if (strcmp(url, "/v1/upload-options") == 0)
        return ROUTE_UPLOAD_OPTIONS;
    if (strcmp(url, "/v1/images/check") == 0)
        return ROUTE_IMAGES_CHECK;
    if (strcmp(url, "/v1/images/assemble") == 0)
        return ROUTE_ASSEMBLE;
    if (strncmp(url, "/v1/images/assemble/", 20) == 0 && !strchr(url + 20, '/')) {
        snprintf(path_arg, cap, "%s", url + 20);
        return ROUTE_ASSEMBLE_STATE;
    }
    if (strcmp(url, "/v1/chunks/missing") == 0)
        return ROUTE_CHUNKS_MISSING;
    if (strncmp(url, "/v1/chunks/", 11) == 0 && !strchr(url + 11, '/')) {
        snprintf(path_arg, cap, "%s", url + 11);
        return ROUTE_CHUNK;
    }
    if (strcmp(url, "/v1/crashes") == 0 || strcmp(url, "/v1/crashes/") == 0)
        return ROUTE_CRASHES;
    if (strcmp(url, "/v1/crashes/groups") == 0)
        return ROUTE_CRASH_GROUPS;
    if (strcmp(url, "/v1/crashes/group") == 0)
        return ROUTE_CRASH_GROUP;
    if (strcmp(url, "/v1/crashes/group/state") == 0)
        return ROUTE_CRASH_GROUP_STATE;
    if (strcmp(url, "/v1/crashes/group/history") == 0)
        return ROUTE_CRASH_GROUP_HISTORY;
    if (strcmp(url, "/v1/crashes/group/spread") == 0)
        return ROUTE_CRASH_GROUP_SPREAD;
    if (strcmp(url, "/v1/crashes/values") == 0)
        return ROUTE_CRASH_VALUES;
    if (strcmp(url, "/v1/crashes/trend") == 0)
        return ROUTE_CRASH_TREND;
    if (strcmp(url, "/v1/missing") == 0)
        return ROUTE_MISSING;
    if (strcmp(url, "/v1/webhooks/deliveries") == 0)
        return ROUTE_WEBHOOK_DELIVERIES;
    if (strcmp(url, "/v1/system-symbols") == 0 || strcmp(url, "/v1/system-symbols/") == 0)
        return ROUTE_SYSTEM_SETS;
    if (strncmp(url, "/v1/system-symbols/", 19) == 0 && !strchr(url + 19, '/')) {
        snprintf(path_arg, cap, "%s", url + 19);
        return ROUTE_SYSTEM_SET;
    }
    if (strncmp(url, "/v1/crashes/", 12) == 0 && !strchr(url + 12, '/')) {
        snprintf(path_arg, cap, "%s", url + 12);
        return ROUTE_CRASH;
    }
    if (strncmp(url, "/v1/images/", 11) == 0 && !strchr(url + 11, '/')) {
        snprintf(path_arg, cap, "%s", url + 11);
        return ROUTE_IMAGE;
    }
    return ROUTE_NONE;
}

/* Whether method m is in r's list (HEAD wherever GET is); *allow gets the
 * list for a 405's Allow header. */
static bool method_allowed(route r, const char *m, const char **allow)
{
    const char *list = route_table[r].methods;
    *allow = list;
    if (strcmp(m, "HEAD") == 0)
        m = "GET";
    size_t ml = strlen(m);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == ml && strncmp(p, m, n) == 0)
            return true;
        p += n;
        p += strspn(p, ", ");
    }
    return false;
}

/* Who may do what: each request needs one role, each role has its own
 * token (none set: open to anyone). */
typedef enum {
    ROLE_NONE,   /* /healthz, /metrics, the files compiled in (dashboard, API description) */
    ROLE_UPLOAD, /* CI: POST and DELETE /v1/images and /v1/system-symbols, uploads in parts */
    ROLE_REPORT, /* crash pipelines: POST /v1/crashes, /v1/symbolicate, DELETE a crash, a
                    group's state (POST /v1/crashes/group/state) */
    ROLE_READ,   /* every other GET: crash data, images */
} role;

static role role_of(route r, const char *method)
{
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    switch (r) {
    case ROUTE_NONE:
    case ROUTE_INDEX:
    case ROUTE_ASSET:
    case ROUTE_ASSET_JS:
    case ROUTE_HEALTH:
    case ROUTE_METRICS:
    case ROUTE_OPENAPI:
    case ROUTE_COUNT:
        return ROLE_NONE;
    case ROUTE_IMAGES:
    case ROUTE_IMAGE:
    case ROUTE_SYSTEM_SETS: /* system libraries are uploaded like the app's */
    case ROUTE_SYSTEM_SET:
        return get ? ROLE_READ : ROLE_UPLOAD;
    case ROUTE_UPLOAD_OPTIONS: /* uploads in parts: all CI's, GETs too */
    case ROUTE_IMAGES_CHECK:
    case ROUTE_CHUNK:
    case ROUTE_CHUNKS_MISSING:
    case ROUTE_ASSEMBLE:
    case ROUTE_ASSEMBLE_STATE:
        return ROLE_UPLOAD;
    case ROUTE_SYMBOLICATE:
    case ROUTE_CRASH_GROUP_STATE:
        return ROLE_REPORT;
    case ROUTE_CRASHES:
    case ROUTE_CRASH:
        return get ? ROLE_READ : ROLE_REPORT;
    case ROUTE_CRASH_GROUPS:
    case ROUTE_CRASH_GROUP:
    case ROUTE_CRASH_GROUP_HISTORY:
    case ROUTE_CRASH_GROUP_SPREAD:
    case ROUTE_CRASH_VALUES:
    case ROUTE_CRASH_TREND:
    case ROUTE_MISSING:
    case ROUTE_WEBHOOK_DELIVERIES:
        return ROLE_READ;
    }
    return ROLE_READ;
}

/* Compares in time that depends on want's length only, so a token cannot
 * be guessed byte by byte. */
static bool same_token(const char *got, const char *want)
{
    size_t gl = strlen(got), wl = strlen(want);
    unsigned char diff = gl != wl;
    for (size_t i = 0; i < wl; i++)
        diff |= (unsigned char)(want[i] ^ (i < gl ? got[i] : 0));
    return diff == 0;
}

/* The password of an "Authorization: Basic" value (base64 of
 * "user:password") into out (cap bytes, NUL-terminated); false when it
 * does not decode or does not fit. */
static bool basic_password(const char *b64, char *out, size_t cap)
{
    static const char digits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char dec[768];
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (const char *p = b64; *p && *p != '='; p++) {
        const char *d = strchr(digits, *p);
        if (!d || !*p)
            return false;
        acc = acc << 6 | (uint32_t)(d - digits);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n + 1 >= sizeof dec)
                return false;
            dec[n++] = (char)(acc >> bits & 0xff);
        }
    }
    dec[n] = 0;
    const char *colon = memchr(dec, ':', n);
    if (!colon || strlen(colon + 1) + 1 > cap || strlen(dec) != n)
        return false;
    memcpy(out, colon + 1, strlen(colon + 1) + 1);
    return true;
}

/* Whether the request's bearer token is the one its role needs (always,
 * when that role has no token). *name: the role, for the 401's message.
 * The report role also takes the token as the password of Basic
 * authentication (any user name): crash reporters' uploaders (Crashpad)
 * set no header of their own, but send a URL's user and password so. */
static bool authorized(const server_config *cfg, struct MHD_Connection *c, role need,
                       const char **name)
{
    const char *want = need == ROLE_UPLOAD   ? cfg->upload_token
                       : need == ROLE_REPORT ? cfg->report_token
                       : need == ROLE_READ   ? cfg->read_token
                                             : NULL;
    *name = need == ROLE_UPLOAD ? "upload" : need == ROLE_REPORT ? "report" : "read";
    if (!want || !*want)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_AUTHORIZATION);
    char pw[512];
    if (h && need == ROLE_REPORT && strncasecmp(h, "Basic ", 6) == 0)
        return basic_password(h + 6, pw, sizeof pw) && same_token(pw, want);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    return same_token(h + 7, want);
}

static enum MHD_Result post_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data,
                                 uint64_t off, size_t size)
{
    (void)kind;
    (void)content_type;
    (void)transfer_encoding;
    req_state *rs = cls;
    bool is_file = filename != NULL || (key && strcmp(key, "file") == 0);
    if (!is_file)
        return MHD_YES; /* other form fields are ignored */
    if (off == 0 && (rs->nfiles == 0 || rs->files[rs->nfiles - 1].data.len > 0 ||
                     !rs->part_open)) {
        if (rs->nfiles == MAX_FILES) {
            rs->too_many_files = true;
            return MHD_YES;
        }
        upload_file *f = &rs->files[rs->nfiles++];
        dynbuf_init(&f->data, (size_t)rs->limit);
        f->name = filename ? strdup(filename) : NULL;
        rs->part_open = true;
    }
    if (rs->nfiles == 0 || rs->too_many_files)
        return MHD_YES;
    upload_file *f = &rs->files[rs->nfiles - 1];
    if (size && !rs->too_large && !dynbuf_add(&f->data, data, size))
        rs->too_large = true; /* limit per file; the total is checked below */
    return MHD_YES;
}

static bool is_multipart(struct MHD_Connection *c)
{
    const char *ct =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    return ct && strncasecmp(ct, "multipart/form-data", 19) == 0;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static enum MHD_Result dispatch(server *srv, struct MHD_Connection *c, req_state *rs,
                                const char *url, const char *method,
                                const char *upload_data, size_t *upload_size);
static enum MHD_Result route_request(server *srv, struct MHD_Connection *c, req_state *rs,
                                     const char *url, const char *method);
static enum MHD_Result run_handler(server *srv, struct MHD_Connection *c, req_state *rs);
static bool is_heavy(const req_state *rs);
static void work_push(server *srv, req_state *rs);
static conn_track *track_of(struct MHD_Connection *c);
static bool tcp_bytes(int fd, uint64_t *rx, uint64_t *tx);
/* A request that held or parsed this much asks the reaper to give freed
 * memory back to the system (malloc_trim): glibc keeps it otherwise. */
#define TRIM_AFTER (16u << 20)

/* ---- admission ------------------------------------------------------------
 * A body over ADMIT_SMALL bytes is admitted only when its declared size
 * (Content-Length; a chunked body counts as ADMIT_CHUNKED) fits in the
 * in-flight budget beside what is held, less the quarter kept for
 * everything else (admit_reserve). Until then its connection is suspended (nothing
 * of its body is read) in a first-come-first-served queue; past
 * --admission-wait it is answered 503 busy with Retry-After. Small bodies,
 * GETs and DELETEs never wait: they are charged as their bytes arrive, with
 * the whole budget, so queued uploads never crowd them out. A large body
 * that alone is bigger than what large bodies may share is admitted when
 * no other large body is held (one upload is never refused for its size). */
#define ADMIT_SMALL (1u << 20)
#define ADMIT_CHUNKED (64u << 20)

/* The part of the budget large bodies leave to everything else: small
 * requests, the memory reading a body takes, answers being sent. A body
 * once admitted must be read through: its reading takes memory too. */
static uint64_t admit_reserve(const server *srv)
{
    return srv->pool.max / 4;
}

/* Asks for transparent huge pages under the 2 MiB-aligned part of a large
 * body's buffer: it is written once through, and 4 KiB pages cost a fault
 * each (2,048 per 8 MiB chunk of an upload in parts: a third of the
 * server's time taking chunks, measured). Where THP is off: nothing. */
static void huge_pages(void *p, size_t n)
{
    const uintptr_t huge = 2u << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);
    if (e > a)
        madvise((void *)a, e - a, MADV_HUGEPAGE);
}

/* Takes rs's reservation when it fits (under admit.mu). */
static bool admit_fits(server *srv, req_state *rs)
{
    uint64_t cap = srv->pool.max - admit_reserve(srv);
    bool alone = srv->admit.large_held == 0 && rs->reserved > cap;
    if (!mem_pool_take(&srv->pool, rs->reserved, alone ? UINT64_MAX : cap))
        return false;
    rs->held += rs->reserved;
    /* The declared body is held now: take its buffer in one piece (a
     * buffer grown by doubling leaves its smaller copies behind). */
    if (!rs->pp && rs->reserved <= rs->limit && dynbuf_reserve(&rs->body, (size_t)rs->reserved))
        huge_pages(rs->body.data, rs->body.cap);
    srv->admit.large_held++;
    srv->admit.admitted_total++;
    rs->large = true;
    return true;
}

static void admit_unlink(server *srv, req_state *rs)
{
    req_state **pp = &srv->admit.head, *prev = NULL;
    while (*pp && *pp != rs) {
        prev = *pp;
        pp = &(*pp)->admit_next;
    }
    if (!*pp)
        return;
    *pp = rs->admit_next;
    if (srv->admit.tail == rs)
        srv->admit.tail = prev;
    rs->admit_next = NULL;
    rs->queued = false;
    srv->admit.waiting--;
}

/* Admits waiters from the head of the queue while they fit, and answers
 * those waiting past --admission-wait (or all of them when refuse_all);
 * resumes each. Called whenever budget is given back, by the reaper every
 * 200 ms and at shutdown. */
static void admit_pump(server *srv, bool refuse_all)
{
    int64_t limit = (int64_t)srv->cfg->admission_wait * 1000000;
    pthread_mutex_lock(&srv->admit.mu);
    for (req_state *head; (head = srv->admit.head);) {
        if (!refuse_all && admit_fits(srv, head)) {
            admit_unlink(srv, head);
            head->resumed = true;
            MHD_resume_connection(head->conn);
            continue;
        }
        /* Only the head may be admitted (first come, first served), but any
         * waiter may time out; when the head does, the next may fit. */
        int64_t now = now_us();
        bool head_gone = false;
        for (req_state *w = head, *next; w; w = next) {
            next = w->admit_next;
            if (refuse_all || now - w->queued_us >= limit) {
                admit_unlink(srv, w);
                w->wait_refused = true;
                w->resumed = true;
                srv->admit.refused_total++;
                head_gone |= w == head;
                MHD_resume_connection(w->conn);
            }
        }
        if (!head_gone)
            break;
    }
    pthread_mutex_unlock(&srv->admit.mu);
}

/* The first callback of a POST with a body: a large body that does not fit
 * now is queued and its connection suspended; anything else reads on. */
static void admit_or_queue(server *srv, struct MHD_Connection *c, req_state *rs,
                           uint64_t declared, bool chunked)
{
    uint64_t need = chunked ? (rs->limit < ADMIT_CHUNKED ? rs->limit : ADMIT_CHUNKED) : declared;
    if (need <= ADMIT_SMALL)
        return;
    rs->reserved = need;
    pthread_mutex_lock(&srv->admit.mu);
    if (srv->admit.head || !admit_fits(srv, rs)) {
        rs->queued = true;
        rs->queued_us = now_us();
        if (srv->admit.tail)
            srv->admit.tail->admit_next = rs;
        else
            srv->admit.head = rs;
        srv->admit.tail = rs;
        srv->admit.waiting++;
        MHD_suspend_connection(c);
    }
    pthread_mutex_unlock(&srv->admit.mu);
}

/* Budget was given back: the next waiters may fit now. */
static void admit_released(server *srv)
{
    if (srv->admit.head) /* racy peek; the reaper pumps every 200 ms anyway */
        admit_pump(srv, false);
}



static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size,
                                  void **con_cls)
{
    (void)version;
    server *srv = cls;
    req_state *rs = *con_cls;
    if (!rs) {
        rs = calloc(1, sizeof *rs);
        if (!rs)
            return MHD_NO;
        *con_cls = rs;
        rs->srv = srv;
        rs->conn = c;
        rs->start_us = now_us();
        atomic_fetch_add(&srv->in_flight, 1);
        snprintf(rs->method, sizeof rs->method, "%s", method);
        snprintf(rs->path, sizeof rs->path, "%s", url);
        conn_track *t = track_of(c);
        if (t) {
            pthread_mutex_lock(&srv->conns_mu);
            t->in_request = true;
            pthread_mutex_unlock(&srv->conns_mu);
        }
    }
    tl_req = rs;
    enum MHD_Result ret = dispatch(srv, c, rs, url, method, upload_data, upload_size);
    tl_req = NULL;
    return ret;
}

static enum MHD_Result dispatch(server *srv, struct MHD_Connection *c, req_state *rs,
                                const char *url, const char *method,
                                const char *upload_data, size_t *upload_size)
{
    if (!rs->routed) {
        rs->routed = true;
        enum MHD_Result refused;
        if (framing_refused(c, rs, method, &refused))
            return refused;
        rs->route = route_of(url, rs->path_arg, sizeof rs->path_arg);
        const char *allow;
        if (rs->route == ROUTE_NONE)
            return reply_error(c, 404, "not_found", "no route %s", url);
        if (!method_allowed(rs->route, method, &allow)) {
            rs->allow = allow;
            return reply_error(c, 405, "method_not_allowed",
                               "%s is not allowed here (allowed: %s)", method, allow);
        }
        const char *who;
        if (!authorized(srv->cfg, c, role_of(rs->route, method), &who)) {
            /* a crash reporter's upload form: its client may wait for a
             * challenge before sending the URL's user and password */
            rs->basic_challenge = role_of(rs->route, method) == ROLE_REPORT && is_multipart(c);
            return reply_error(c, 401, "unauthorized",
                               "this server needs Authorization: Bearer <%s token>", who);
        }
        rs->is_post = strcmp(method, "POST") == 0;
        rs->limit = rs->route == ROUTE_IMAGES || rs->route == ROUTE_SYSTEM_SETS
                        ? srv->cfg->max_upload
                    : rs->route == ROUTE_CHUNK ? srv->cfg->chunk_size
                                               : srv->cfg->max_json;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        uint64_t declared = 0;
        if (rs->is_post && cl && num_parse_u64(cl, &declared) && declared > rs->limit)
            return reply_error(c, 413, "too_large", "body of %llu bytes exceeds %llu",
                               (unsigned long long)declared,
                               (unsigned long long)rs->limit);
        dynbuf_init(&rs->body, (size_t)rs->limit);
        if (rs->is_post && rs->route == ROUTE_IMAGES && is_multipart(c)) {
            rs->pp = MHD_create_post_processor(c, 64 * 1024, post_iter, rs);
            if (!rs->pp)
                return reply_error(c, 400, "bad_multipart",
                                   "multipart/form-data without a usable boundary");
        }
        bool has_cl = rs->is_post && cl && num_parse_u64(cl, &declared);
        bool chunked = rs->is_post && !has_cl &&
                       MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_TRANSFER_ENCODING);
        if ((has_cl || chunked) && atomic_load(&srv->draining) &&
            (chunked || declared > ADMIT_SMALL))
            return reply_busy(c); /* stopping: no new large bodies */
        /* a chunk goes to its file as it comes: it takes no memory to admit */
        bool spooled = rs->is_post && rs->route == ROUTE_CHUNK &&
                       chunk_spool_begin(srv, rs, has_cl ? declared : 0);
        if ((has_cl || chunked) && !spooled) /* a large body may wait, suspended, for room */
            admit_or_queue(srv, c, rs, has_cl ? declared : 0, chunked);
        return MHD_YES;
    }
    if (rs->resumed) { /* libmicrohttpd repeats the first call after a resume */
        rs->resumed = false;
        return rs->wait_refused ? reply_busy(c) : MHD_YES;
    }

    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        uint64_t prev = rs->received;
        rs->received += n;
        if ((rs->route == ROUTE_IMAGES || rs->route == ROUTE_SYSTEM_SETS ||
             rs->route == ROUTE_CHUNK) &&
            rs->is_post)
            metrics_upload_bytes(srv->m, n);
        if (rs->received > rs->limit) {
            rs->too_large = true; /* keep reading, discard, answer 413 at the end */
            return MHD_YES;
        }
        if (rs->too_large || rs->busy)
            return MHD_YES;
        if (!rs->is_post)
            return MHD_YES; /* no route reads a GET or DELETE body */
        if (rs->spooling) {
            chunk_spool_data(rs, upload_data, n);
            return MHD_YES;
        }
        /* A large body's declared bytes were held at admission. */
        uint64_t from = prev > rs->reserved ? prev : rs->reserved;
        if (rs->received > from && !hold(srv, rs, rs->received - from)) {
            rs->busy = true; /* keep reading, discard, answer 503 at the end */
            return MHD_YES;
        }
        if (rs->pp) {
            if (MHD_post_process(rs->pp, upload_data, n) != MHD_YES)
                rs->bad_multipart = true;
        } else if (!dynbuf_add(&rs->body, upload_data, n)) {
            rs->too_large = true;
        }
        return MHD_YES;
    }

    rs->body_done = true; /* the last call: every byte of the body came */
    if (rs->offloaded) /* the worker queued no answer: libmicrohttpd closes */
        return MHD_NO;
    if (rs->busy && !rs->too_large)
        return reply_busy(c);
    if (is_heavy(rs)) {
        rs->offloaded = true;
        MHD_suspend_connection(c);
        work_push(srv, rs);
        return MHD_YES;
    }
    (void)url;
    (void)method;
    return run_handler(srv, c, rs);
}

/* Runs rs's handler, its allocations metered: reading the input may take
 * --request-mem-factor times the body plus --request-mem-mb, and
 * everything together stays within the in-flight budget. */
static enum MHD_Result run_handler(server *srv, struct MHD_Connection *c, req_state *rs)
{
    mem_meter_begin(&rs->meter, &srv->pool,
                    mem_request_limit(rs->received, srv->cfg->request_mem_factor,
                                      srv->cfg->request_mem_allowance));
    enum MHD_Result ret = route_request(srv, c, rs, rs->path, rs->method);
    mem_meter_end(&rs->meter);
    if (rs->meter.peak >= TRIM_AFTER)
        atomic_store(&srv->trim_wanted, true);
    admit_released(srv);
    return ret;
}

/* ---- heavy requests -------------------------------------------------------
 * libmicrohttpd keeps a connection on the thread that accepted it, so a
 * handler that takes a second (a large body read, a large stored report
 * read again) would stall every other client of that thread for as long.
 * Those run on a pool of their own instead (one thread per core): the
 * connection is suspended, the worker runs the handler and queues its
 * answer (libmicrohttpd takes an answer for a suspended connection from
 * any thread), then resumes it. Small requests stay on the connection's
 * thread, so they are never queued behind large ones. */

static bool is_heavy(const req_state *rs)
{
    /* an assembly, and lookups of up to thousands of rows, wait on the store */
    return rs->received > ADMIT_SMALL ||
           (rs->route == ROUTE_CRASH && strcmp(rs->method, "DELETE") != 0) ||
           rs->route == ROUTE_ASSEMBLE || rs->route == ROUTE_IMAGES_CHECK ||
           rs->route == ROUTE_CHUNKS_MISSING;
}

/* Queues rs for the pool. Reads of stored crashes go before the large
 * bodies (first come, first served among themselves): a dashboard reading a
 * crash does not wait behind a storm of uploads. */
static void work_push(server *srv, req_state *rs)
{
    pthread_mutex_lock(&srv->work.mu);
    bool read = rs->route == ROUTE_CRASH;
    req_state **at = read ? (srv->work.reads_tail ? &srv->work.reads_tail->work_next
                                                  : &srv->work.head)
                          : (srv->work.tail ? &srv->work.tail->work_next : &srv->work.head);
    rs->work_next = *at;
    *at = rs;
    if (!rs->work_next)
        srv->work.tail = rs;
    if (read)
        srv->work.reads_tail = rs;
    pthread_cond_signal(&srv->work.cv);
    pthread_mutex_unlock(&srv->work.mu);
}

static void *work_thread(void *arg)
{
    server *srv = arg;
    for (;;) {
        pthread_mutex_lock(&srv->work.mu);
        while (!srv->work.head && !srv->work.stop)
            pthread_cond_wait(&srv->work.cv, &srv->work.mu);
        req_state *rs = srv->work.head;
        if (rs) {
            srv->work.head = rs->work_next;
            if (!srv->work.head)
                srv->work.tail = NULL;
            if (srv->work.reads_tail == rs)
                srv->work.reads_tail = NULL;
        }
        bool stopping = srv->work.stop;
        pthread_mutex_unlock(&srv->work.mu);
        if (!rs)
            break;
        struct MHD_Connection *c = rs->conn;
        tl_req = rs;
        if (stopping) /* past the shutdown grace: not started, answered */
            reply_busy(c);
        else
            run_handler(srv, c, rs);
        tl_req = NULL;
        MHD_resume_connection(c); /* rs may be gone from here on */
    }
    return NULL;
}

/* Starts the pool; false when no thread could be started (then heavy
 * requests run where they arrive, as small ones do). */
/* The pool's size: one thread per core, at least two. */
static int work_threads(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 1 ? (int)cores : 2;
}

static bool work_start(server *srv)
{
    int n = work_threads();
    pthread_mutex_init(&srv->work.mu, NULL);
    pthread_cond_init(&srv->work.cv, NULL);
    srv->work.threads = calloc((size_t)n, sizeof *srv->work.threads);
    if (!srv->work.threads)
        return false;
    for (int i = 0; i < n; i++)
        if (pthread_create(&srv->work.threads[srv->work.n], NULL, work_thread, srv) == 0)
            srv->work.n++;
    return srv->work.n > 0;
}

/* Lets the workers finish the handler each runs, answers what is still
 * queued with 503 and joins them: libmicrohttpd stops no suspended
 * connection. */
static void work_stop(server *srv)
{
    pthread_mutex_lock(&srv->work.mu);
    srv->work.stop = true;
    pthread_cond_broadcast(&srv->work.cv);
    pthread_mutex_unlock(&srv->work.mu);
    for (int i = 0; i < srv->work.n; i++)
        pthread_join(srv->work.threads[i], NULL);
    free(srv->work.threads);
    srv->work.threads = NULL;
    srv->work.n = 0;
}

/* The handler of rs's route, once its whole body is in. */
static enum MHD_Result route_request(server *srv, struct MHD_Connection *c, req_state *rs,
                                     const char *url, const char *method)
{
    switch (rs->route) {
    case ROUTE_INDEX:
        return handle_asset(c, NULL, "index.html");
    case ROUTE_ASSET:
        return handle_asset(c, NULL, rs->path_arg);
    case ROUTE_ASSET_JS:
        return handle_asset(c, "js", rs->path_arg);
    case ROUTE_OPENAPI:
        return handle_asset(c, NULL, "openapi.yaml");
    case ROUTE_METRICS:
        return handle_metrics(srv, c);
    case ROUTE_HEALTH:
        return handle_health(srv, c);
    case ROUTE_IMAGES:
        return rs->is_post ? handle_images_post(srv, c, rs) : handle_images_list(srv, c);
    case ROUTE_IMAGE:
        return handle_image(srv, c, rs, method);
    case ROUTE_SYMBOLICATE:
        return handle_symbolicate(srv, c, rs);
    case ROUTE_CRASHES:
        return rs->is_post ? handle_crash_post(srv, c, rs) : handle_crash_list(srv, c);
    case ROUTE_CRASH:
        return strcmp(method, "DELETE") == 0 ? handle_crash_delete(srv, c, rs)
                                             : handle_crash_get(srv, c, rs);
    case ROUTE_CRASH_GROUPS:
        return handle_crash_groups(srv, c);
    case ROUTE_CRASH_GROUP:
        return handle_crash_group(srv, c);
    case ROUTE_CRASH_GROUP_STATE:
        return handle_crash_group_state(srv, c, rs);
    case ROUTE_CRASH_GROUP_HISTORY:
        return handle_crash_group_history(srv, c);
    case ROUTE_CRASH_GROUP_SPREAD:
        return handle_crash_group_spread(srv, c);
    case ROUTE_CRASH_VALUES:
        return handle_crash_values(srv, c);
    case ROUTE_CRASH_TREND:
        return handle_crash_trend(srv, c);
    case ROUTE_MISSING:
        return handle_missing(srv, c);
    case ROUTE_WEBHOOK_DELIVERIES:
        return handle_webhook_deliveries(srv, c);
    case ROUTE_SYSTEM_SETS:
        return rs->is_post ? handle_system_post(srv, c, rs) : handle_system_list(srv, c);
    case ROUTE_SYSTEM_SET:
        return handle_system_set(srv, c, rs);
    case ROUTE_UPLOAD_OPTIONS:
        return handle_upload_options(srv, c);
    case ROUTE_IMAGES_CHECK:
        return handle_images_check(srv, c, rs);
    case ROUTE_CHUNK:
        return handle_chunk_post(srv, c, rs);
    case ROUTE_CHUNKS_MISSING:
        return handle_chunks_missing(srv, c, rs);
    case ROUTE_ASSEMBLE:
        return handle_assemble(srv, c, rs);
    case ROUTE_ASSEMBLE_STATE:
        return handle_assemble_state(srv, c, rs);
    default:
        return reply_error(c, 404, "not_found", "no route %s", url);
    }
}

/* The client's address as text, "-" when unknown. */
static void client_ip(struct MHD_Connection *c, char *out, size_t cap)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(out, cap, "-");
    if (!ci || !ci->client_addr)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)cap);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
                  (socklen_t)cap);
}

/* Copies s with bytes that could forge or split a log line (controls,
 * space, quote, backslash, non-ASCII) and '%' itself as %XX, so a logged
 * path reads back unambiguously. */
static void log_escape(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch <= 0x20 || ch >= 0x7f || ch == '"' || ch == '\\' || ch == '%') {
            out[o++] = '%';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o] = 0;
}

/* One line per request: UTC time, client, method, path, status (0: the
 * connection ended before an answer), response body bytes, request body
 * bytes, microseconds, and how it ended when not normally. */
static void access_log_line(server *srv, struct MHD_Connection *c, const req_state *rs,
                            uint64_t micros, enum MHD_RequestTerminationCode toe)
{
    char ip[INET6_ADDRSTRLEN + 1], method[40], path[800], when[32];
    client_ip(c, ip, sizeof ip);
    log_escape(rs->method, method, sizeof method);
    log_escape(rs->path, path, sizeof path);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    static const char *const ends[] = {
        [MHD_REQUEST_TERMINATED_COMPLETED_OK] = "",
        [MHD_REQUEST_TERMINATED_WITH_ERROR] = " end=error",
        [MHD_REQUEST_TERMINATED_TIMEOUT_REACHED] = " end=idle_timeout",
        [MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN] = " end=shutdown",
        [MHD_REQUEST_TERMINATED_READ_ERROR] = " end=read_error",
        [MHD_REQUEST_TERMINATED_CLIENT_ABORT] = " end=client_abort",
    };
    const char *end = (unsigned)toe < sizeof ends / sizeof ends[0] && ends[toe] ? ends[toe]
                                                                              : " end=other";
    fprintf(srv->access_log, "%s.%03ldZ %s %s %s %u %llu %llu %lluus%s\n", when,
            ts.tv_nsec / 1000000, ip, method, path, rs->status,
            (unsigned long long)rs->bytes_out, (unsigned long long)rs->received,
            (unsigned long long)micros, end);
}

static conn_track *track_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Whether the request on c declares a body (a Content-Length above 0, or a
 * Transfer-Encoding). */
static bool declares_body(struct MHD_Connection *c)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t n = 0;
    return (cl && (!num_parse_u64(cl, &n) || n > 0)) ||
           MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    server *srv = cls;
    req_state *rs = *con_cls;
    if (!rs)
        return;
    int64_t end = now_us();
    uint64_t micros = end > rs->start_us ? (uint64_t)(end - rs->start_us) : 0;
    metrics_request(srv->m, rs->route, rs->status, micros, rs->received, rs->bytes_out);
    if (srv->access_log)
        access_log_line(srv, c, rs, micros, toe);
    conn_track *t = track_of(c);
    if (t) { /* the next request on this connection gets a fresh deadline */
        uint64_t rx = 0, tx = 0;
        (void)tcp_bytes(t->fd, &rx, &tx);
        pthread_mutex_lock(&srv->conns_mu);
        t->since_us = end;
        t->in_request = false;
        t->served = true;
        t->rx_mark = rx;
        t->tx_mark = tx;
        /* libmicrohttpd closes after an answer sent before the body was read
         * (an early 401 or 413 can go before the body's first byte came) */
        t->closing = rs->close || (!rs->body_done && declares_body(c));
        pthread_mutex_unlock(&srv->conns_mu);
    }
    if (rs->pp)
        MHD_destroy_post_processor(rs->pp);
    for (size_t i = 0; i < rs->nfiles; i++) {
        dynbuf_free(&rs->files[i].data);
        free(rs->files[i].name);
    }
    dynbuf_free(&rs->body);
    chunk_spool_end(srv, rs);
    if (rs->queued || rs->large) {
        pthread_mutex_lock(&srv->admit.mu);
        admit_unlink(srv, rs);
        if (rs->large)
            srv->admit.large_held--;
        pthread_mutex_unlock(&srv->admit.mu);
    }
    mem_pool_give(&srv->pool, rs->held);
    if (rs->held >= TRIM_AFTER)
        atomic_store(&srv->trim_wanted, true);
    free(rs);
    *con_cls = NULL;
    atomic_fetch_sub(&srv->in_flight, 1);
    admit_released(srv);
}

/* Connection opened or closed: keeps the reaper's list and the acceptor's
 * slots. libmicrohttpd calls CLOSED before it closes the socket, and the
 * reaper and the acceptor only touch a socket under their lock while it is
 * listed, so they never shut down an fd number that has since been reused. */
/* On the TCP socket fd: *rx, the bytes read from it (received by the kernel
 * less those still queued unread), and *tx, the bytes written to it (sent
 * less retransmitted, plus those not sent yet). Both are what the server did,
 * not what the wire did, so a mark taken as a request completes does not move
 * when a corked answer leaves later or the client's next request is already
 * queued; false when the kernel does not say. */
static bool tcp_bytes(int fd, uint64_t *rx, uint64_t *tx)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_retrans) + sizeof ti.tcpi_bytes_retrans)
        return false;
    int unread = 0;
    /* read after TCP_INFO: bytes arriving between the two calls only lower
     * *rx, which errs towards "the client sent more", and they were sent */
    if (ioctl(fd, FIONREAD, &unread) != 0 || unread < 0)
        return false;
    uint64_t queued = (uint64_t)unread;
    *rx = ti.tcpi_bytes_received > queued ? ti.tcpi_bytes_received - queued : 0;
    *tx = ti.tcpi_bytes_sent - ti.tcpi_bytes_retrans + ti.tcpi_notsent_bytes;
    return true;
}

/* libmicrohttpd 0.9.75 closes a connection whose request line has no space
 * at all ("GET\t/\tHTTP/1.1") before any callback of symd runs, without a
 * word. Called as the connection closes (its socket still open): when the
 * client sent bytes since its last answer, nothing was sent back since, no
 * request of it reached a handler, symd did not cut it, that answer did not
 * end the connection (an answer sent before its body was read does: the
 * bytes after it are that body) and the client has not closed its side,
 * that request was dropped unanswered, and it gets its 400 here. Answers libmicrohttpd did send (a 400 for a bad Content-Length,
 * 414, 431, 505) count as bytes written, so no request is answered twice. */
static void answer_dropped_request(server *srv, const conn_track *t)
{
    uint64_t rx, tx;
    if (t->in_request || t->cut || t->closing || atomic_load(&srv->draining) ||
        !tcp_bytes(t->fd, &rx, &tx) ||
        rx <= t->rx_mark || tx != t->tx_mark)
        return;
    char junk[4096];
    ssize_t got;
    size_t drained = 0;
    /* unread input would make the close a reset that discards the answer */
    while (drained < (64u << 10) &&
           (got = recv(t->fd, junk, sizeof junk, MSG_DONTWAIT)) > 0)
        drained += (size_t)got;
    if (got == 0)
        return; /* the client closed: nobody to answer */
    static const char body[] =
        "{\"error\":{\"code\":\"bad_request_line\",\"message\":\"the request line is not "
        "METHOD SP request-target SP HTTP-version (RFC 9112)\"}}";
    char msg[512];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"
                     "Content-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     sizeof body - 1, body);
    if (n > 0 && send(t->fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n)
        metrics_request(srv->m, ROUTE_NONE, 400, 0, 0, sizeof body - 1);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    server *srv = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        metrics_connection(srv->m, 1);
        conn_track *t = calloc(1, sizeof *t);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!t || !ci) {
            free(t); /* untracked: only the idle timeout applies, never evicted */
            return;
        }
        t->fd = ci->connect_fd;
        t->since_us = now_us();
        pthread_mutex_lock(&srv->conns_mu);
        t->next = srv->conns.next;
        t->prev = &srv->conns;
        srv->conns.next->prev = t;
        srv->conns.next = t;
        pthread_mutex_unlock(&srv->conns_mu);
        *socket_context = t;
        if (srv->acc)
            acceptor_attach(srv->acc, t->fd, t);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        metrics_connection(srv->m, -1);
        conn_track *t = *socket_context;
        const union MHD_ConnectionInfo *ci =
            t ? NULL : MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        /* First the slot: after this the acceptor no longer reads t. */
        if (srv->acc && (t || ci))
            acceptor_release(srv->acc, t ? t->fd : ci->connect_fd);
        if (!t)
            return;
        pthread_mutex_lock(&srv->conns_mu);
        answer_dropped_request(srv, t);
        t->prev->next = t->next;
        t->next->prev = t->prev;
        pthread_mutex_unlock(&srv->conns_mu);
        free(t);
        *socket_context = NULL;
    }
}

/* The reaper's other rounds: waiters past --admission-wait are answered,
 * and after a large request the memory glibc kept is given back (trimming
 * every arena takes a few milliseconds: only after large requests). */
static void housekeeping(server *srv)
{
    if (srv->admit.head)
        admit_pump(srv, false);
    if (atomic_exchange(&srv->trim_wanted, false))
        malloc_trim(0);
}

/* The acceptor's claim_idle: takes a connection between requests (still
 * sending its first request's headers, or kept alive), or one already cut
 * off, for eviction. Called under the acceptor's lock; ctx is a conn_track
 * still listed (acceptor_release comes before it is freed). */
static bool claim_idle(void *cls, void *ctx)
{
    server *srv = cls;
    conn_track *t = ctx;
    pthread_mutex_lock(&srv->conns_mu);
    bool ok = t->cut || !t->in_request;
    if (ok)
        t->cut = true;
    pthread_mutex_unlock(&srv->conns_mu);
    return ok;
}

/* Shuts down the sockets of requests older than --request-timeout. A
 * shutdown (not a close) makes the connection's own thread see end of file
 * and close it the ordinary way, so libmicrohttpd's state stays its own.
 * This is what ends a client that sends one byte a second: the idle timeout
 * alone never would. */
static void *reaper(void *arg)
{
    server *srv = arg;
    int64_t req_limit = (int64_t)srv->cfg->request_timeout * 1000000;
    int64_t hdr_limit = (int64_t)srv->cfg->header_timeout * 1000000;
    /* A kept-alive connection may idle as --idle-timeout allows before its
     * next request; past that, its headers are as late as a new one's. */
    int64_t idle = (int64_t)srv->cfg->idle_timeout * 1000000;
    int64_t keep_limit = hdr_limit > 0 && idle > hdr_limit ? idle : hdr_limit;
    pthread_mutex_lock(&srv->conns_mu);
    while (!srv->reaper_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&srv->reaper_cv, &srv->conns_mu, &ts);
        int64_t now = now_us();
        for (conn_track *t = srv->conns.next; t != &srv->conns; t = t->next) {
            metrics_phase phase = t->in_request ? PHASE_REQUEST
                                  : t->served    ? PHASE_KEEPALIVE
                                                 : PHASE_HEADERS;
            int64_t limit = phase == PHASE_REQUEST     ? req_limit
                            : phase == PHASE_KEEPALIVE ? keep_limit
                                                       : hdr_limit;
            if (t->cut || limit <= 0 || now - t->since_us <= limit)
                continue;
            shutdown(t->fd, SHUT_RDWR);
            t->cut = true;
            metrics_timeout(srv->m, phase);
        }
        pthread_mutex_unlock(&srv->conns_mu);
        housekeeping(srv);
        pthread_mutex_lock(&srv->conns_mu);
    }
    pthread_mutex_unlock(&srv->conns_mu);
    return NULL;
}

/* ---- daemon ------------------------------------------------------------- */

/* Decodes %XX in the path and query values in place, as libmicrohttpd's own
 * unescaper does, except %00: a NUL would end the C string the router sees,
 * so "/v1/images/%00x" would be routed as "/v1/images/". It stays "%00",
 * which no route or identifier accepts. */
static size_t unescape_keep_nul(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hex_digit(r[1])) >= 0 && (lo = hex_digit(r[2])) >= 0 &&
            (hi | lo) != 0) {
            *w++ = (char)(hi << 4 | lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}

/* HOST:PORT, [V6]:PORT or PORT; false with *why when it is no address this
 * host has, or the port is not a number from 0 to 65535 (getaddrinfo would
 * take "99999" and listen on 99999 mod 65536). */
static bool parse_listen(const char *spec, struct sockaddr_storage *ss,
                         socklen_t *sslen, bool *v6, const char **why)
{
    *why = "want HOST:PORT";
    char host[256] = "127.0.0.1", port[16];
    const char *colon = strrchr(spec, ':');
    if (spec[0] == '[') {
        const char *end = strchr(spec, ']');
        if (!end || end[1] != ':' || (size_t)(end - spec - 1) >= sizeof host)
            return false;
        memcpy(host, spec + 1, (size_t)(end - spec - 1));
        host[end - spec - 1] = 0;
        snprintf(port, sizeof port, "%s", end + 2);
    } else if (colon) {
        if ((size_t)(colon - spec) >= sizeof host)
            return false;
        if (colon != spec) {
            memcpy(host, spec, (size_t)(colon - spec));
            host[colon - spec] = 0;
        }
        snprintf(port, sizeof port, "%s", colon + 1);
    } else {
        snprintf(port, sizeof port, "%s", spec);
    }
    size_t digits = strspn(port, "0123456789");
    if (digits == 0 || port[digits] || digits > 5 || atol(port) > 65535) {
        *why = "the port must be a number from 0 to 65535";
        return false;
    }
    struct addrinfo hints = {0}, *res;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return false;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *sslen = res->ai_addrlen;
    *v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return true;
}

int server_run(const server_config *cfg)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    bool v6;
    const char *why;
    if (!parse_listen(cfg->listen, &ss, &sslen, &v6, &why)) {
        fprintf(stderr, "symd: cannot use --listen %s (%s)\n", cfg->listen, why);
        return 2;
    }
    /* libmicrohttpd keeps a connection on the pool thread that accepted it,
     * so a few busy keep-alive clients can land on one thread. Twice the
     * cores (at least 4) keeps the cores busy in practice. On PostgreSQL
     * four times: a handler waits on its statements' round trips (a crash
     * post on its batch's commit), and more posts under way make larger
     * batches, each cheaper per crash. */
    int threads = cfg->threads;
    if (threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > 0 ? (int)((store_is_postgres(cfg->db) ? 4 : 2) * cores) : 4;
        if (threads < 4)
            threads = 4;
    }

    /* Each connection is a file descriptor: raise the soft limit to the
     * hard one, and keep the connection limit under what is left after the
     * database, the pool's pipes, the log (64 spare), the acceptor's own
     * and the evicted connections not yet closed. */
    unsigned max_conns = cfg->max_connections;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        rlim_t spare = 64 + 4 * (rlim_t)threads + ACCEPTOR_EVICT_SPARE + 4;
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)max_conns + spare) {
            max_conns = rl.rlim_cur > spare + 16 ? (unsigned)(rl.rlim_cur - spare) : 16;
            fprintf(stderr, "symd: at most %u connections (open-file limit %llu)\n", max_conns,
                    (unsigned long long)rl.rlim_cur);
        }
    }

    server srv;
    memset(&srv, 0, sizeof srv);
    srv.cfg = cfg;
    srv.pool.max = cfg->max_inflight;
    pthread_mutex_init(&srv.admit.mu, NULL);
    mem_widen_factor = cfg->request_mem_factor ? cfg->request_mem_factor : 4;
    mem_use_for_json();
    srv.conns.next = srv.conns.prev = &srv.conns;
    pthread_mutex_init(&srv.conns_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&srv.reaper_cv, &ca);
    pthread_condattr_destroy(&ca);
    const char *labels[ROUTE_COUNT];
    for (size_t i = 0; i < ROUTE_COUNT; i++)
        labels[i] = route_table[i].path;
    srv.m = metrics_new(labels, ROUTE_COUNT);
    if (!srv.m) {
        fprintf(stderr, "symd: out of memory\n");
        return 1;
    }
    const char *al = cfg->access_log;
    if (!al || strcmp(al, "-") == 0 || strcmp(al, "stderr") == 0) {
        srv.access_log = stderr;
    } else if (strcmp(al, "off") != 0) {
        srv.access_log = fopen(al, "a");
        if (!srv.access_log) {
            fprintf(stderr, "symd: cannot open access log %s: %s\n", al, strerror(errno));
            metrics_free(srv.m);
            return 1;
        }
        setvbuf(srv.access_log, NULL, _IOLBF, 0);
    }

    symd_err err = {0};
    /* a connection for each thread that runs handlers (libmicrohttpd's
     * and the work pool's), one for retention, one for refiling and one
     * per webhook sender */
    /* A broken rules file refuses the start, with the line that broke it. */
    grouping_rules *rules = NULL;
    if (cfg->grouping_rules && grouping_load_file(cfg->grouping_rules, &rules, &err) != SYMD_OK) {
        fprintf(stderr, "symd: grouping rules: %s\n", err.msg);
        return 1;
    }
    int pool = cfg->db_pool > 0 ? cfg->db_pool
                                : threads + work_threads() + 2 +
                                      (int)(cfg->webhooks.nurls + cfg->webhooks.nslack);
    if (store_open(cfg->db, pool, cfg->cache_mb << 20, &srv.st, &err) != SYMD_OK) {
        fprintf(stderr, "symd: %s\n", err.msg);
        grouping_free(rules);
        return 1;
    }
    mdwalk_install(srv.st); /* minidumps walk with the stored unwind rows */

    /* Signals go to the waiting main thread only. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Retention runs beside the requests (started after the signals are
     * blocked, so they still go to this thread). */
    retention *ret = retention_start(srv.st, cfg->keep_days, cfg->max_crashes,
                                     cfg->prune_every, cfg->chunk_ttl, &err);
    if (!ret && (cfg->keep_days || cfg->max_crashes || cfg->chunk_ttl)) {
        fprintf(stderr, "symd: %s\n", err.msg);
        grouping_free(rules);
        mdwalk_install(NULL);
        store_close(srv.st);
        return 1;
    }
    /* Crashes the store lists to file again (all of them after an upgrade
     * to a new grouping rule) are refiled beside the requests. */
    srv.regroup = regroup_start(srv.st, &err);
    srv.assembler = srv.regroup ? assembler_new(&srv) : NULL;
    if (srv.regroup && !srv.assembler)
        symd_fail(&err, SYMD_E_NOMEM, "out of memory");
    if (!srv.assembler) {
        regroup_stop(srv.regroup);
        fprintf(stderr, "symd: %s\n", err.msg);
        grouping_free(rules);
        retention_stop(ret);
        mdwalk_install(NULL);
        store_close(srv.st);
        return 1;
    }
    /* The rules in force, noted in the database: crashes filed under other
     * rules are refiled by the worker; the file is watched for changes. */
    srv.grouping = grouping_watch_start(cfg->grouping_rules, rules, srv.st, srv.regroup, &err);
    if (!srv.grouping) {
        fprintf(stderr, "symd: grouping rules: %s\n", err.msg);
        assembler_stop(srv.assembler);
        regroup_stop(srv.regroup);
        retention_stop(ret);
        mdwalk_install(NULL);
        store_close(srv.st);
        return 1;
    }

    /* Webhook events go out beside the requests: crash posts only write
     * them to the store's outbox. */
    webhook_sender *hooks = webhook_start(srv.st, srv.m, &cfg->webhooks, &err);
    if (!hooks && cfg->webhooks.nurls + cfg->webhooks.nslack) {
        fprintf(stderr, "symd: %s\n", err.msg);
        webhook_stop(hooks);
        assembler_stop(srv.assembler);
        regroup_stop(srv.regroup);
        retention_stop(ret);
        mdwalk_install(NULL);
        store_close(srv.st);
        return 1;
    }

    /* symd accepts the connections itself (acceptor.c) and hands the ones
     * it admits to libmicrohttpd: past --max-per-ip or with every slot a
     * request under way a connection is closed at once, and an idle one
     * makes room for a newcomer, instead of new clients waiting in the
     * kernel's backlog while libmicrohttpd stops accepting at its limit. */
    acceptor_config acfg = {
        .max_conns = max_conns,
        .max_per_ip = cfg->max_per_ip,
        .spare = ACCEPTOR_EVICT_SPARE,
        .claim_idle = claim_idle,
        .cls = &srv,
        .m = srv.m,
    };
    unsigned port = 0;
    srv.acc = acceptor_listen((struct sockaddr *)&ss, sslen, &acfg, &port);
    if (!srv.acc) {
        fprintf(stderr, "symd: cannot listen on %s: %s\n", cfg->listen, strerror(errno));
        grouping_watch_stop(srv.grouping);
        webhook_stop(hooks);
        assembler_stop(srv.assembler);
        regroup_stop(srv.regroup);
        retention_stop(ret);
        mdwalk_install(NULL);
        store_close(srv.st);
        return 1;
    }
    /* ITC: wakes a pool thread for each connection handed over. poll(), not
     * epoll (libmicrohttpd 0.9.75's epoll pool was not trusted to quiesce;
     * poll has served since). Its connection limit is only a backstop, with
     * room for the evicted connections a worker has not closed yet and for
     * an uneven spread over the pool threads: the acceptor holds the real
     * limits (its own per-address count too, so none here). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
                     MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET |
                     /* with poll(), 0.9.75's TURBO only leaves out the
                      * shutdown(SHUT_WR) before a close, so the close
                      * notification can still answer a request it dropped
                      * (answer_dropped_request); the close sends the FIN */
                     MHD_USE_TURBO |
                     MHD_ALLOW_SUSPEND_RESUME; /* admission and heavy requests */
    unsigned mhd_limit = 2 * (max_conns + ACCEPTOR_EVICT_SPARE) + (unsigned)threads;
    /* The pool's threads wait on srv, which lives on this stack: started
     * only now, when nothing can fail before work_stop below. */
    if (!work_start(&srv))
        fprintf(stderr, "symd: no worker threads for large requests: they run where they "
                        "arrive\n");
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, &srv,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, &srv, MHD_OPTION_NOTIFY_CONNECTION, on_connection, &srv,
        MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout,
        MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
        /* MHD clears this per request: keep it small (headers + one chunk). */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_keep_nul, NULL,
        /* Sees the raw request target before libmicrohttpd parses its
         * query (http_framing.c). */
        MHD_OPTION_URI_LOG_CALLBACK, framing_uri_seen, NULL,
        MHD_OPTION_END);
    if (!d || !acceptor_start(srv.acc, d)) {
        fprintf(stderr, "symd: cannot start serving on %s\n", cfg->listen);
        if (d)
            MHD_stop_daemon(d);
        if (srv.work.n)
            work_stop(&srv);
        acceptor_free(srv.acc);
        grouping_watch_stop(srv.grouping);
        webhook_stop(hooks);
        assembler_stop(srv.assembler);
        regroup_stop(srv.regroup);
        retention_stop(ret);
        mdwalk_install(NULL);
        store_close(srv.st);
        return 1;
    }
    pthread_t reaper_thread;
    /* The reaper also admits and times out waiting bodies: always started. */
    bool reaping = pthread_create(&reaper_thread, NULL, reaper, &srv) == 0;
    char host[INET6_ADDRSTRLEN] = "?";
    if (v6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
    else
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
    printf(v6 ? "symd: listening on http://[%s]:%u\n" : "symd: listening on http://%s:%u\n",
           host, port);
    fflush(stdout);

    int sig = 0;
    while (sigwait(&set, &sig) == 0 && sig == SIGHUP)
        grouping_watch_reload(srv.grouping, "SIGHUP");
    /* Graceful stop: no new connections, requests under way finish (their
     * answers say Connection: close), then the daemon stops; a second
     * signal or --shutdown-grace seconds cut the wait short. */
    atomic_store(&srv.draining, true);
    /* Refuse new clients at once (the listening socket closes) instead of
     * leaving them in the backlog. */
    acceptor_stop(srv.acc);
    admit_pump(&srv, true); /* bodies waiting for room: 503, not a wait */
    uint64_t busy = atomic_load(&srv.in_flight);
    if (busy)
        fprintf(stderr, "symd: %s, finishing %llu requests under way\n",
                sig == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)busy);
    int64_t give_up = now_us() + (int64_t)cfg->shutdown_grace * 1000000;
    struct timespec poll_ts = {0, 100 * 1000000L};
    /* Idle twice in a row, 100 ms apart: a request accepted just before the
     * quiesce may still be in its headers, not yet counted. */
    for (int quiet = 0; quiet < 2 && now_us() < give_up;) {
        quiet = atomic_load(&srv.in_flight) > 0 ? 0 : quiet + 1;
        if (quiet < 2 && sigtimedwait(&set, NULL, &poll_ts) > 0)
            break;
    }
    uint64_t left = atomic_load(&srv.in_flight);
    if (left)
        fprintf(stderr, "symd: cutting %llu requests short\n", (unsigned long long)left);
    admit_pump(&srv, true); /* libmicrohttpd stops no suspended connection */
    if (srv.work.n)
        work_stop(&srv);
    MHD_stop_daemon(d);
    acceptor_free(srv.acc); /* after the daemon: its last CLOSED calls release slots */
    srv.acc = NULL;
    if (reaping) {
        pthread_mutex_lock(&srv.conns_mu);
        srv.reaper_stop = true;
        pthread_cond_signal(&srv.reaper_cv);
        pthread_mutex_unlock(&srv.conns_mu);
        pthread_join(reaper_thread, NULL);
    }
    grouping_watch_stop(srv.grouping);
    webhook_stop(hooks);
    assembler_stop(srv.assembler); /* assemblies under way finish: they use the store */
    regroup_stop(srv.regroup);
    retention_stop(ret);
    mdwalk_install(NULL);
    store_close(srv.st);
    if (srv.access_log && srv.access_log != stderr)
        fclose(srv.access_log);
    metrics_free(srv.m);
    return 0;
}

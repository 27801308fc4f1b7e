/* The HTTP API: libmicrohttpd daemon, routing, uploads and JSON replies,
 * the embedded dashboard, metrics, the access log and connection limits.
 *
 * Each request gets a req_state on its first callback; bodies stream into
 * bounded buffers as they arrive (never sized from Content-Length); the
 * state is freed in the request-completed callback, whatever happened, and
 * that callback also writes the access-log line and the request metrics.
 * Each connection gets a conn_track from the connection-notify callback so a
 * reaper thread can cut off clients that pass --request-timeout. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../store/ingest.h"
#include "../store/store.h"
#include "../util/dynbuf.h"
#include "../util/hex.h"
#include "../util/jsonw.h"
#include "../parser/crash.h"
#include "assets.h"
#include "crashsym.h"
#include "metrics.h"
#include "symbolicate.h"

#define MAX_RESPONSE (512u << 20) /* a 200k-frame answer fits comfortably */
#define MAX_LIST 1000
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define MAX_FILES 64

/* One open connection, for the timeout reaper. since_us is when the
 * connection was accepted or its last request completed: the next request's
 * headers must be in within --header-timeout of it, and the whole request
 * (headers, body and answer) must end within --request-timeout. */
typedef struct conn_track {
    struct conn_track *prev, *next;
    int fd;
    int64_t since_us;
    bool in_request; /* headers are in: the request deadline applies */
    bool served;     /* an earlier request was answered: keep-alive */
    bool cut;
} conn_track;

typedef struct {
    const server_config *cfg;
    store *st;
    metrics *m;
    FILE *access_log;          /* NULL: off */
    _Atomic uint64_t in_flight; /* requests between first callback and completion */
    _Atomic uint64_t held;      /* request and response body bytes held now */
    atomic_bool draining;      /* SIGTERM seen: answers close their connection */
    pthread_mutex_t conns_mu;  /* guards conns and every conn_track in it */
    conn_track conns;          /* list head */
    pthread_cond_t reaper_cv;
    bool reaper_stop;          /* under conns_mu */
} server;

typedef enum {
    ROUTE_NONE,
    ROUTE_INDEX,
    ROUTE_ASSET,
    ROUTE_HEALTH,
    ROUTE_METRICS,
    ROUTE_OPENAPI,
    ROUTE_IMAGES,
    ROUTE_IMAGE,
    ROUTE_SYMBOLICATE,
    ROUTE_CRASHES,
    ROUTE_CRASH,
    ROUTE_CRASH_GROUPS,
    ROUTE_MISSING,
    ROUTE_COUNT
} route;

/* Every route with its methods; docs/openapi.yaml lists the same (a test
 * holds the two together). HEAD is allowed wherever GET is. ROUTE_NONE's
 * path is the metrics label of requests no route matched. */
static const http_route_info route_table[ROUTE_COUNT] = {
    [ROUTE_NONE] = {"unmatched", ""},
    [ROUTE_INDEX] = {"/", "GET"},
    [ROUTE_ASSET] = {"/assets/{file}", "GET"},
    [ROUTE_HEALTH] = {"/healthz", "GET"},
    [ROUTE_METRICS] = {"/metrics", "GET"},
    [ROUTE_OPENAPI] = {"/v1/openapi.yaml", "GET"},
    [ROUTE_IMAGES] = {"/v1/images", "GET, POST"},
    [ROUTE_IMAGE] = {"/v1/images/{uuid}", "GET, DELETE"},
    [ROUTE_SYMBOLICATE] = {"/v1/symbolicate", "POST"},
    [ROUTE_CRASHES] = {"/v1/crashes", "GET, POST"},
    [ROUTE_CRASH] = {"/v1/crashes/{id}", "GET"},
    [ROUTE_CRASH_GROUPS] = {"/v1/crashes/groups", "GET"},
    [ROUTE_MISSING] = {"/v1/missing", "GET"},
};

const http_route_info *http_routes(size_t *n)
{
    *n = ROUTE_COUNT - 1;
    return route_table + 1;
}

typedef struct {
    char *name;
    dynbuf data;
} upload_file;

typedef struct {
    server *srv;
    route route;
    bool routed;         /* route, method and limits checked */
    bool is_post;
    int64_t start_us;    /* first callback */
    unsigned status;     /* answered with; 0 until queued */
    uint64_t bytes_out;  /* response body */
    const char *allow;   /* Allow header of a 405 */
    uint64_t held;       /* bytes charged to server.held, released at completion */
    bool busy;           /* the body did not fit --max-inflight-mb: answer 503 */
    char method[12];
    char path[256];      /* for the access log, cut */
    char uuid_arg[64];
    uint64_t limit;      /* body bytes allowed */
    uint64_t received;   /* body bytes seen */
    bool too_large;
    bool bad_multipart;
    dynbuf body;         /* raw body */
    struct MHD_PostProcessor *pp;
    upload_file files[MAX_FILES];
    size_t nfiles;
    bool part_open;
    bool too_many_files;
} req_state;

/* ---- replies ------------------------------------------------------------ */

/* The request being answered on this thread: libmicrohttpd calls a
 * connection's handlers on one thread at a time, and on_request sets this
 * before it dispatches, so the reply helpers can record the status and size
 * for the access log and metrics without every handler passing it down. */
static __thread req_state *tl_req;

static const char *const CSP =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'";

/* Charges n bytes of request or response body to the server's budget
 * (--max-inflight-mb); false when they do not fit. A request whose own
 * bytes are all that is held always fits, so one upload of --max-upload
 * bytes is never refused for its size alone. */
static bool hold(server *srv, req_state *rs, uint64_t n)
{
    uint64_t cur = atomic_load(&srv->held);
    do {
        if (cur != rs->held && (cur + n < cur || cur + n > srv->cfg->max_inflight))
            return false;
    } while (!atomic_compare_exchange_weak(&srv->held, &cur, cur + n));
    rs->held += n;
    return true;
}

/* Answers below this size are not charged: they cannot add up to much, and
 * the 503 that replaces a refused answer must itself always fit. */
#define HOLD_MIN_RESPONSE (64u << 10)

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status,
                                   const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* 503 busy: a body or answer that does not fit --max-inflight-mb. */
static enum MHD_Result reply_busy(struct MHD_Connection *c)
{
    return reply_error(c, 503, "busy",
                       "the server holds too many large bodies (--max-inflight-mb); "
                       "retry later");
}

/* Queues r with the headers every answer carries; takes r. owned: its len
 * bytes were allocated for this answer (and count against the budget). */
static enum MHD_Result queue(struct MHD_Connection *c, unsigned status,
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
    if (tl_req && atomic_load(&tl_req->srv->draining))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (status == 503)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "5");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    if (tl_req && ret == MHD_YES) {
        tl_req->status = status;
        tl_req->bytes_out = len;
    }
    return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, uint8_t *data,
                             size_t len, const char *ctype)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(data);
        return MHD_NO;
    }
    return queue(c, status, r, len, ctype, true);
}

static enum MHD_Result reply_dynbuf(struct MHD_Connection *c, unsigned status,
                                    dynbuf *b)
{
    size_t len;
    uint8_t *data = dynbuf_take(b, &len);
    if (!data) {
        data = (uint8_t *)strdup("{}");
        len = 2;
    }
    return reply(c, status, data, len, "application/json");
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status,
                                  json_t *doc)
{
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!s)
        return MHD_NO;
    return reply(c, status, (uint8_t *)s, strlen(s), "application/json");
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status,
                                   const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status,
                                   const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
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

/* Maps an error from the lower layers to a status and code. corrupt_code
 * names what was being read, so corrupt input gets its own code
 * ("malformed_macho", "malformed_zip"). A 500 means our bug and is logged. */
static enum MHD_Result reply_status(struct MHD_Connection *c, const symd_err *e,
                                    const char *corrupt_code)
{
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
    default:
        return reply_error(c, 500, "internal_error", "%s (%s:%d)", e->msg,
                           e->src_file ? e->src_file : "?", e->src_line);
    }
}

static json_t *image_json(const store_image *im, const char *status)
{
    char uuid[37], vm[19];
    uuid_format(im->uuid, uuid);
    hex_format_u64(im->text_vmaddr, vm);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:I, s:I}",
                          "uuid", uuid, "arch", im->arch, "name", im->name, "kind",
                          im->kind, "text_vmaddr", vm, "text_size",
                          (json_int_t)im->text_size, "symbols",
                          (json_int_t)im->symbols, "functions",
                          (json_int_t)im->functions, "debug_info", im->debug_info,
                          "created_at", (json_int_t)im->created_at, "updated_at",
                          (json_int_t)im->updated_at);
    if (o && status)
        json_object_set_new(o, "status", json_string(status));
    return o;
}

/* ---- routes ------------------------------------------------------------- */

static enum MHD_Result handle_upload(server *srv, struct MHD_Connection *c,
                                     req_state *rs)
{
    if (rs->too_large)
        return reply_error(c, 413, "too_large", "upload exceeds %llu bytes",
                           (unsigned long long)rs->limit);
    if (rs->too_many_files)
        return reply_error(c, 400, "too_many_files",
                           "at most %d files per upload", MAX_FILES);
    if (rs->bad_multipart)
        return reply_error(c, 400, "bad_multipart", "multipart body is malformed");
    if (rs->pp && rs->nfiles == 0)
        return reply_error(c, 400, "no_file",
                           "multipart upload has no file part (use -F file=@path)");
    if (!rs->pp && rs->body.len == 0)
        return reply_error(c, 400, "empty_body", "upload body is empty");

    ingest_batch batch;
    ingest_batch_init(&batch);
    symd_err err = {0};
    symd_status st = SYMD_OK;
    ingest_upload_info info = {0}; /* of the last file read: the failing one */
    const unzip_limits *zl = &srv->cfg->unzip;
    if (rs->pp) {
        for (size_t i = 0; i < rs->nfiles && st == SYMD_OK; i++) {
            st = ingest_add_upload(&batch, rs->files[i].data.data, rs->files[i].data.len,
                                   rs->files[i].name, zl, &info, &err);
            if (st != SYMD_OK && rs->nfiles > 1) {
                char msg[sizeof err.msg + 64];
                snprintf(msg, sizeof msg, "file %zu: %s", i + 1, err.msg);
                size_t l = strnlen(msg, sizeof err.msg - 1);
                memcpy(err.msg, msg, l);
                err.msg[l] = 0;
            }
        }
    } else {
        st = ingest_add_upload(&batch, rs->body.data, rs->body.len,
                               MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
                                                           "name"),
                               zl, &info, &err);
    }
    store_put_result *results = NULL;
    store_image *stored = NULL;
    if (st == SYMD_OK) {
        results = calloc(batch.n ? batch.n : 1, sizeof *results);
        stored = calloc(batch.n ? batch.n : 1, sizeof *stored);
        if (!results || !stored)
            st = symd_fail(&err, SYMD_E_NOMEM, "out of memory");
    }
    if (st == SYMD_OK)
        st = ingest_commit(srv->st, &batch, results, stored, &err);
    enum MHD_Result ret;
    if (st != SYMD_OK) {
        ret = reply_status(c, &err, info.zip_corrupt ? "malformed_zip" : "malformed_macho");
    } else {
        bool any_new = false;
        json_t *arr = json_array();
        for (size_t i = 0; i < batch.n; i++) {
            const char *s = results[i] == STORE_CREATED   ? "created"
                            : results[i] == STORE_UPDATED ? "updated"
                                                          : "exists";
            any_new |= results[i] != STORE_EXISTS;
            json_array_append_new(arr, image_json(&stored[i], s));
        }
        ret = reply_json(c, any_new ? 201 : 200, json_pack("{s:o}", "images", arr));
    }
    free(results);
    free(stored);
    ingest_batch_free(&batch);
    return ret;
}

/* limit (1..MAX_LIST, default 50) and cursor (a next_cursor value) of a
 * listing; NULL, or what is wrong with them. */
static const char *list_args(struct MHD_Connection *c, uint64_t *limit, uint64_t *before)
{
    const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *cur = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "cursor");
    *limit = 50;
    *before = 0;
    if (lim && (!num_parse_u64(lim, limit) || *limit == 0 || *limit > MAX_LIST))
        return "limit must be an integer from 1 to " STRINGIFY(MAX_LIST);
    if (cur && *cur && (!num_parse_u64(cur, before) || *before == 0 || *before > INT64_MAX))
        return "cursor must be a next_cursor value from an earlier page";
    return NULL;
}

static enum MHD_Result handle_list(server *srv, struct MHD_Connection *c)
{
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "query");
    const char *arch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "arch");
    uint64_t limit, before;
    const char *bad = list_args(c, &limit, &before);
    if (bad)
        return reply_error(c, 400, "invalid_request", "%s", bad);
    store_image *rows = calloc((size_t)limit, sizeof *rows);
    if (!rows)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    bool more;
    symd_err err = {0};
    if (store_list_images(srv->st, q, arch, (int64_t)before, (size_t)limit, rows, &n,
                          &more, &err) != SYMD_OK) {
        free(rows);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, image_json(&rows[i], NULL));
    json_t *doc = json_pack("{s:o}", "images", arr);
    if (more) {
        char next[24];
        snprintf(next, sizeof next, "%lld", (long long)rows[n - 1].id);
        json_object_set_new(doc, "next_cursor", json_string(next));
    } else {
        json_object_set_new(doc, "next_cursor", json_null());
    }
    free(rows);
    return reply_json(c, 200, doc);
}

static enum MHD_Result handle_image(server *srv, struct MHD_Connection *c,
                                    req_state *rs, const char *method)
{
    uint8_t uuid[16];
    if (!uuid_parse(rs->uuid_arg, uuid))
        return reply_error(c, 400, "invalid_uuid", "'%s' is not a UUID", rs->uuid_arg);
    symd_err err = {0};
    char ustr[37];
    uuid_format(uuid, ustr);
    if (strcmp(method, "DELETE") == 0) {
        size_t n;
        if (store_delete_image(srv->st, uuid, &n, &err) != SYMD_OK)
            return reply_status(c, &err, "internal_error");
        if (n == 0)
            return reply_error(c, 404, "not_found", "no image with UUID %s", ustr);
        return reply_json(c, 200, json_pack("{s:s, s:I}", "uuid", ustr, "deleted",
                                            (json_int_t)n));
    }
    store_image rows[MACHO_MAX_SLICES];
    size_t n;
    if (store_get_image(srv->st, uuid, rows, MACHO_MAX_SLICES, &n, &err) != SYMD_OK)
        return reply_status(c, &err, "internal_error");
    if (n == 0)
        return reply_error(c, 404, "not_found", "no image with UUID %s", ustr);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, image_json(&rows[i], NULL));
    return reply_json(c, 200, json_pack("{s:s, s:o}", "uuid", ustr, "images", arr));
}

static enum MHD_Result handle_symbolicate(server *srv, struct MHD_Connection *c,
                                          req_state *rs)
{
    if (rs->too_large)
        return reply_error(c, 413, "too_large", "request body exceeds %llu bytes",
                           (unsigned long long)rs->limit);
    dynbuf out;
    dynbuf_init(&out, MAX_RESPONSE);
    symd_err err = {0};
    symbolicate_counts n = {0};
    symd_status st = symbolicate_json(srv->st, rs->body.data ? (char *)rs->body.data : "",
                                      rs->body.len, &out, &n, &err);
    if (st != SYMD_OK) {
        dynbuf_free(&out);
        return reply_status(c, &err, "invalid_request");
    }
    metrics_frames(srv->m, n.symbolicated, n.no_symbol, n.missing_image, n.unknown_image);
    return reply_dynbuf(c, 200, &out);
}

/* ---- crash reports ------------------------------------------------------ */

static bool want_text(struct MHD_Connection *c)
{
    const char *f = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    if (f)
        return strcmp(f, "text") == 0;
    const char *acc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    return acc && strstr(acc, "text/plain") && !strstr(acc, "application/json");
}

/* Counts a symbolicated report's frames into the metrics. */
static void count_crash_frames(server *srv, const crash_report *r,
                               const crash_symbolication *sym)
{
    uint64_t n[4] = {0};
    for (size_t i = 0; i < r->total_frames; i++) {
        switch (sym->frames[i].status) {
        case CSYM_SYMBOLICATED: n[0]++; break;
        case CSYM_NO_SYMBOL: n[1]++; break;
        case CSYM_MISSING_IMAGE: n[2]++; break;
        default: n[3]++; break;
        }
    }
    metrics_frames(srv->m, n[0], n[1], n[2], n[3]);
}

/* The images a crash references, for the missing-images list. */
static store_crash_image *crash_images_of(const crash_report *r, size_t *n)
{
    store_crash_image *v = calloc(r->nimages ? r->nimages : 1, sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < r->nimages; i++) {
        if (!r->images[i].has_uuid)
            continue;
        memcpy(v[*n].uuid, r->images[i].uuid, 16);
        v[*n].arch = r->images[i].arch ? r->images[i].arch : "";
        v[*n].name = r->images[i].name ? r->images[i].name : "";
        (*n)++;
    }
    return v;
}

/* Parses and symbolicates a stored or posted report and answers it as JSON
 * or text. id < 0: not stored. */
static enum MHD_Result answer_crash(struct MHD_Connection *c, const crash_report *r,
                                    const crash_symbolication *sym, int64_t id,
                                    unsigned status, bool text)
{
    dynbuf out;
    dynbuf_init(&out, MAX_RESPONSE);
    symd_err err = {0};
    symd_status st = text ? crash_render_text(r, sym, &out, &err)
                          : crash_write_json(r, sym, id, &out, &err);
    if (st != SYMD_OK) {
        dynbuf_free(&out);
        return reply_status(c, &err, "internal_error");
    }
    if (!text)
        return reply_dynbuf(c, status, &out);
    size_t len;
    uint8_t *data = dynbuf_take(&out, &len);
    if (!data) {
        data = (uint8_t *)strdup("");
        len = 0;
    }
    return reply(c, status, data, len, "text/plain; charset=utf-8");
}

static enum MHD_Result handle_crash_post(server *srv, struct MHD_Connection *c,
                                         req_state *rs)
{
    if (rs->too_large)
        return reply_error(c, 413, "too_large", "request body exceeds %llu bytes",
                           (unsigned long long)rs->limit);
    const char *sp = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "store");
    bool keep = !(sp && (strcmp(sp, "false") == 0 || strcmp(sp, "0") == 0));
    crash_report r;
    symd_err err = {0};
    if (crash_parse(rs->body.data ? rs->body.data : (const uint8_t *)"", rs->body.len, &r,
                    &err) != SYMD_OK)
        return reply_status(c, &err, "malformed_crash_report");
    crash_symbolication sym;
    if (crash_symbolicate(srv->st, &r, &sym, &err) != SYMD_OK) {
        crash_report_free(&r);
        return reply_status(c, &err, "internal_error");
    }
    count_crash_frames(srv, &r, &sym);
    int64_t id = -1;
    enum MHD_Result ret;
    if (keep) {
        dynbuf res;
        dynbuf_init(&res, MAX_RESPONSE);
        size_t nimg = 0;
        store_crash_image *imgs = crash_images_of(&r, &nimg);
        store_crash sc = {0};
        sc.format = r.format == CRASH_FORMAT_IPS ? "ips" : "crash";
        sc.process = r.process;
        sc.bundle_id = r.bundle_id;
        sc.app_version = r.app_version;
        sc.os_version = r.os_version;
        sc.hardware_model = r.hardware_model;
        sc.incident_id = r.incident_id;
        sc.exception_type = r.exception_type;
        sc.signature = sym.signature;
        sc.original = rs->body.data;
        sc.original_len = rs->body.len;
        symd_status st = imgs ? crash_write_json(&r, &sym, -1, &res, &err)
                              : symd_fail(&err, SYMD_E_NOMEM, "out of memory");
        sc.result = (char *)res.data;
        if (st == SYMD_OK)
            st = store_put_crash(srv->st, &sc, imgs, nimg, &id, &err);
        free(imgs);
        dynbuf_free(&res);
        if (st != SYMD_OK) {
            crash_symbolication_free(&sym);
            crash_report_free(&r);
            return reply_status(c, &err, "internal_error");
        }
    }
    ret = answer_crash(c, &r, &sym, id, keep ? 201 : 200, want_text(c));
    crash_symbolication_free(&sym);
    crash_report_free(&r);
    return ret;
}

/* The current symbolication of a stored crash: re-run on every read, so an
 * image uploaded since shows up; the stored result and signature follow. */
static enum MHD_Result handle_crash_get(server *srv, struct MHD_Connection *c,
                                        req_state *rs)
{
    uint64_t id;
    if (!num_parse_u64(rs->uuid_arg, &id) || id == 0 || id > INT64_MAX)
        return reply_error(c, 400, "invalid_request", "'%s' is not a crash id", rs->uuid_arg);
    store_crash sc;
    symd_err err = {0};
    if (store_get_crash(srv->st, (int64_t)id, true, &sc, &err) != SYMD_OK)
        return reply_status(c, &err, "internal_error");
    crash_report r;
    if (crash_parse(sc.original, sc.original_len, &r, &err) != SYMD_OK) {
        store_crash_free(&sc);
        return reply_error(c, 500, "internal_error", "stored crash %llu no longer parses: %s",
                           (unsigned long long)id, err.msg);
    }
    crash_symbolication sym;
    if (crash_symbolicate(srv->st, &r, &sym, &err) != SYMD_OK) {
        crash_report_free(&r);
        store_crash_free(&sc);
        return reply_status(c, &err, "internal_error");
    }
    count_crash_frames(srv, &r, &sym);
    dynbuf res;
    dynbuf_init(&res, MAX_RESPONSE);
    if (crash_write_json(&r, &sym, -1, &res, &err) == SYMD_OK &&
        (!sc.result || strcmp(sc.result, (const char *)res.data) != 0 ||
         !sc.signature || strcmp(sc.signature, sym.signature) != 0)) {
        symd_err e2 = {0};
        store_update_crash(srv->st, (int64_t)id, sym.signature, (const char *)res.data, &e2);
    }
    dynbuf_free(&res);
    enum MHD_Result ret = answer_crash(c, &r, &sym, (int64_t)id, 200, want_text(c));
    crash_symbolication_free(&sym);
    crash_report_free(&r);
    store_crash_free(&sc);
    return ret;
}

static json_t *null_or(const char *s)
{
    return s ? json_string(s) : json_null();
}

static enum MHD_Result handle_crash_list(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    const char *bad = list_args(c, &limit, &before);
    if (bad)
        return reply_error(c, 400, "invalid_request", "%s", bad);
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "query");
    store_crash *rows = calloc((size_t)limit, sizeof *rows);
    if (!rows)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    bool more;
    symd_err err = {0};
    const char *sig = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "signature");
    if (store_list_crashes(srv->st, q, sig, (int64_t)before, (size_t)limit, rows, &n, &more,
                           &err) != SYMD_OK) {
        free(rows);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        store_crash *sc = &rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_integer(sc->id));
        json_object_set_new(o, "created_at", json_integer(sc->created_at));
        json_object_set_new(o, "format", null_or(sc->format));
        json_object_set_new(o, "process", null_or(sc->process));
        json_object_set_new(o, "bundle_id", null_or(sc->bundle_id));
        json_object_set_new(o, "app_version", null_or(sc->app_version));
        json_object_set_new(o, "os_version", null_or(sc->os_version));
        json_object_set_new(o, "hardware_model", null_or(sc->hardware_model));
        json_object_set_new(o, "incident_id", null_or(sc->incident_id));
        json_object_set_new(o, "exception_type", null_or(sc->exception_type));
        json_object_set_new(o, "signature", null_or(sc->signature));
        json_array_append_new(arr, o);
    }
    json_t *doc = json_pack("{s:o}", "crashes", arr);
    if (more) {
        char next[24];
        snprintf(next, sizeof next, "%lld", (long long)rows[n - 1].id);
        json_object_set_new(doc, "next_cursor", json_string(next));
    } else {
        json_object_set_new(doc, "next_cursor", json_null());
    }
    for (size_t i = 0; i < n; i++)
        store_crash_free(&rows[i]);
    free(rows);
    return reply_json(c, 200, doc);
}

static enum MHD_Result handle_crash_groups(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    const char *bad = list_args(c, &limit, &before);
    if (bad)
        return reply_error(c, 400, "invalid_request", "%s", bad);
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "query");
    store_crash_group *g = calloc((size_t)limit, sizeof *g);
    if (!g)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    symd_err err = {0};
    if (store_crash_groups(srv->st, q, (size_t)limit, g, &n, &err) != SYMD_OK) {
        free(g);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "signature", null_or(g[i].signature));
        json_object_set_new(o, "count", json_integer(g[i].count));
        json_object_set_new(o, "first_seen", json_integer(g[i].first_seen));
        json_object_set_new(o, "last_seen", json_integer(g[i].last_seen));
        json_object_set_new(o, "example_id", json_integer(g[i].example_id));
        json_object_set_new(o, "app_version", null_or(g[i].app_version));
        json_object_set_new(o, "process", null_or(g[i].process));
        json_array_append_new(arr, o);
        store_crash_group_free(&g[i]);
    }
    free(g);
    return reply_json(c, 200, json_pack("{s:o}", "groups", arr));
}

static enum MHD_Result handle_missing(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    const char *bad = list_args(c, &limit, &before);
    if (bad)
        return reply_error(c, 400, "invalid_request", "%s", bad);
    store_missing *m = calloc((size_t)limit, sizeof *m);
    if (!m)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    symd_err err = {0};
    if (store_missing_images(srv->st, (size_t)limit, m, &n, &err) != SYMD_OK) {
        free(m);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        char u[37];
        uuid_format(m[i].uuid, u);
        json_t *o = json_object();
        json_object_set_new(o, "uuid", json_string(u));
        json_object_set_new(o, "arch", m[i].arch[0] ? json_string(m[i].arch) : json_null());
        json_object_set_new(o, "name", m[i].name[0] ? json_string(m[i].name) : json_null());
        json_object_set_new(o, "crashes", json_integer(m[i].crashes));
        json_object_set_new(o, "last_crash_id", json_integer(m[i].last_crash_id));
        json_array_append_new(arr, o);
    }
    free(m);
    return reply_json(c, 200, json_pack("{s:o}", "missing", arr));
}

/* ---- dashboard, OpenAPI, metrics ----------------------------------------- */

static const embedded_asset *asset_find(const char *name)
{
    for (size_t i = 0; i < embedded_asset_count; i++)
        if (strcmp(embedded_assets[i].name, name) == 0)
            return &embedded_assets[i];
    return NULL;
}

/* An embedded file, with its ETag (a matching If-None-Match gets 304) and,
 * for HTML, a Content-Security-Policy that allows no inline script: the
 * dashboard renders uploaded names as text, and the policy is the second
 * wall should that ever slip. */
static enum MHD_Result handle_asset(struct MHD_Connection *c, const char *name)
{
    const embedded_asset *a = *name && !strchr(name, '/') ? asset_find(name) : NULL;
    if (!a)
        return reply_error(c, 404, "not_found", "no asset %s", name);
    const char *inm =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    bool fresh = inm && strstr(inm, a->etag);
    struct MHD_Response *r = MHD_create_response_from_buffer(
        fresh ? 0 : a->len, fresh ? NULL : (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, a->etag);
    /* Revalidate every time: a new binary serves new assets at once. */
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    if (strncmp(a->ctype, "text/html", 9) == 0) {
        MHD_add_response_header(r, "Content-Security-Policy", CSP);
        MHD_add_response_header(r, "X-Frame-Options", "DENY");
        MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    }
    return queue(c, fresh ? 304 : 200, r, fresh ? 0 : a->len, a->ctype, false);
}

/* VmRSS from /proc/self/statm; 0 when unknown. */
static uint64_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size, res;
    uint64_t out = 0;
    if (f && fscanf(f, "%llu %llu", &size, &res) == 2)
        out = (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
    if (f)
        fclose(f);
    return out;
}

static enum MHD_Result handle_metrics(server *srv, struct MHD_Connection *c)
{
    metrics_gauges g = {.images = -1, .image_blobs = -1, .crashes = -1};
    symd_err err = {0};
    if (store_counts(srv->st, &g.images, &g.image_blobs, &g.crashes, &err) != SYMD_OK)
        g.images = g.image_blobs = g.crashes = -1; /* a scrape still answers */
    store_cache_stats cs;
    store_cache_stats_get(srv->st, &cs);
    g.cache_bytes = cs.bytes;
    g.cache_entries = cs.entries;
    g.cache_hits = cs.hits;
    g.cache_misses = cs.misses;
    g.in_flight = atomic_load(&srv->in_flight);
    g.rss_bytes = rss_bytes();
    dynbuf out;
    dynbuf_init(&out, 4u << 20);
    if (!metrics_render(srv->m, &g, &out)) {
        dynbuf_free(&out);
        return reply_error(c, 500, "internal_error", "metrics exposition too large");
    }
    size_t len;
    uint8_t *data = dynbuf_take(&out, &len);
    if (!data)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    return reply(c, 200, data, len, "text/plain; version=0.0.4; charset=utf-8");
}

/* ---- request plumbing --------------------------------------------------- */

static route route_of(const char *url, char *uuid_arg, size_t cap)
{
    if (strcmp(url, "/") == 0)
        return ROUTE_INDEX;
    if (strncmp(url, "/assets/", 8) == 0) {
        snprintf(uuid_arg, cap, "%s", url + 8);
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
    if (strcmp(url, "/v1/crashes") == 0 || strcmp(url, "/v1/crashes/") == 0)
        return ROUTE_CRASHES;
    if (strcmp(url, "/v1/crashes/groups") == 0)
        return ROUTE_CRASH_GROUPS;
    if (strcmp(url, "/v1/missing") == 0)
        return ROUTE_MISSING;
    if (strncmp(url, "/v1/crashes/", 12) == 0 && !strchr(url + 12, '/')) {
        snprintf(uuid_arg, cap, "%s", url + 12);
        return ROUTE_CRASH;
    }
    if (strncmp(url, "/v1/images/", 11) == 0 && !strchr(url + 11, '/')) {
        snprintf(uuid_arg, cap, "%s", url + 11);
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

/* Constant-time compare, so the token cannot be guessed byte by byte. */
static bool token_ok(const server_config *cfg, struct MHD_Connection *c)
{
    if (!cfg->upload_token || !*cfg->upload_token)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    const char *got = h + 7, *want = cfg->upload_token;
    size_t gl = strlen(got), wl = strlen(want);
    unsigned char diff = gl != wl;
    for (size_t i = 0; i < wl; i++)
        diff |= (unsigned char)(want[i] ^ (i < gl ? got[i] : 0));
    return diff == 0;
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
static conn_track *track_of(struct MHD_Connection *c);

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
        rs->route = route_of(url, rs->uuid_arg, sizeof rs->uuid_arg);
        const char *allow;
        if (rs->route == ROUTE_NONE)
            return reply_error(c, 404, "not_found", "no route %s", url);
        if (!method_allowed(rs->route, method, &allow)) {
            rs->allow = allow;
            return reply_error(c, 405, "method_not_allowed",
                               "%s is not allowed here (allowed: %s)", method, allow);
        }
        bool write = strcmp(method, "POST") == 0 || strcmp(method, "DELETE") == 0;
        /* The token guards the image store; crash pipelines post like
         * symbolicate requests. */
        if (write && rs->route != ROUTE_SYMBOLICATE && rs->route != ROUTE_CRASHES &&
            !token_ok(srv->cfg, c))
            return reply_error(c, 401, "unauthorized",
                               "this server needs Authorization: Bearer <upload token>");
        rs->is_post = strcmp(method, "POST") == 0;
        rs->limit = rs->route == ROUTE_IMAGES ? srv->cfg->max_upload : srv->cfg->max_json;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        uint64_t declared;
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
        return MHD_YES;
    }

    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        rs->received += n;
        if (rs->route == ROUTE_IMAGES && rs->is_post)
            metrics_upload_bytes(srv->m, n);
        if (rs->received > rs->limit) {
            rs->too_large = true; /* keep reading, discard, answer 413 at the end */
            return MHD_YES;
        }
        if (rs->too_large || rs->busy)
            return MHD_YES;
        if (!rs->is_post)
            return MHD_YES; /* no route reads a GET or DELETE body */
        if (!hold(srv, rs, n)) {
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

    if (rs->busy && !rs->too_large)
        return reply_busy(c);
    switch (rs->route) {
    case ROUTE_INDEX:
        return handle_asset(c, "index.html");
    case ROUTE_ASSET:
        return handle_asset(c, rs->uuid_arg);
    case ROUTE_OPENAPI:
        return handle_asset(c, "openapi.yaml");
    case ROUTE_METRICS:
        return handle_metrics(srv, c);
    case ROUTE_HEALTH:
        if (!store_ping(srv->st))
            return reply_error(c, 503, "store_unavailable", "the database does not answer");
        return reply_json(c, 200, json_pack("{s:s}", "status", "ok"));
    case ROUTE_IMAGES:
        return rs->is_post ? handle_upload(srv, c, rs) : handle_list(srv, c);
    case ROUTE_IMAGE:
        return handle_image(srv, c, rs, method);
    case ROUTE_SYMBOLICATE:
        return handle_symbolicate(srv, c, rs);
    case ROUTE_CRASHES:
        return rs->is_post ? handle_crash_post(srv, c, rs) : handle_crash_list(srv, c);
    case ROUTE_CRASH:
        return handle_crash_get(srv, c, rs);
    case ROUTE_CRASH_GROUPS:
        return handle_crash_groups(srv, c);
    case ROUTE_MISSING:
        return handle_missing(srv, c);
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
        pthread_mutex_lock(&srv->conns_mu);
        t->since_us = end;
        t->in_request = false;
        t->served = true;
        pthread_mutex_unlock(&srv->conns_mu);
    }
    if (rs->pp)
        MHD_destroy_post_processor(rs->pp);
    for (size_t i = 0; i < rs->nfiles; i++) {
        dynbuf_free(&rs->files[i].data);
        free(rs->files[i].name);
    }
    dynbuf_free(&rs->body);
    atomic_fetch_sub(&srv->held, rs->held);
    free(rs);
    *con_cls = NULL;
    atomic_fetch_sub(&srv->in_flight, 1);
}

/* Connection opened or closed: keeps the reaper's list. libmicrohttpd
 * calls CLOSED before it closes the socket, and the reaper only touches a
 * socket under conns_mu while it is listed, so it never shuts down an fd
 * number that has since been reused. */
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
            free(t); /* untracked: only the idle timeout applies */
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
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        metrics_connection(srv->m, -1);
        conn_track *t = *socket_context;
        if (!t)
            return;
        pthread_mutex_lock(&srv->conns_mu);
        t->prev->next = t->next;
        t->next->prev = t->prev;
        pthread_mutex_unlock(&srv->conns_mu);
        free(t);
        *socket_context = NULL;
    }
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

static bool parse_listen(const char *spec, struct sockaddr_storage *ss,
                         socklen_t *sslen, bool *v6)
{
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
    if (!parse_listen(cfg->listen, &ss, &sslen, &v6)) {
        fprintf(stderr, "symd: cannot use --listen %s (want HOST:PORT)\n", cfg->listen);
        return 2;
    }
    /* libmicrohttpd keeps a connection on the pool thread that accepted it,
     * so a few busy keep-alive clients can land on one thread. Twice the
     * cores (at least 4) keeps the cores busy in practice. */
    int threads = cfg->threads;
    if (threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > 0 ? (int)(2 * cores) : 4;
        if (threads < 4)
            threads = 4;
    }

    /* Each connection is a file descriptor: raise the soft limit to the
     * hard one, and keep the connection limit under what is left after the
     * database, the pool's pipes and the log (64 spare). */
    unsigned max_conns = cfg->max_connections;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        rlim_t spare = 64 + 4 * (rlim_t)threads;
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)max_conns + spare) {
            max_conns = rl.rlim_cur > spare + 16 ? (unsigned)(rl.rlim_cur - spare) : 16;
            fprintf(stderr, "symd: at most %u connections (open-file limit %llu)\n", max_conns,
                    (unsigned long long)rl.rlim_cur);
        }
    }

    server srv;
    memset(&srv, 0, sizeof srv);
    srv.cfg = cfg;
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
    if (store_open(cfg->db, threads + 1, cfg->cache_mb << 20, &srv.st, &err) != SYMD_OK) {
        fprintf(stderr, "symd: %s\n", err.msg);
        return 1;
    }

    /* Signals go to the waiting main thread only. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* ITC: needed to quiesce a thread-pool daemon for a graceful stop.
     * poll(), not epoll: libmicrohttpd 0.9.75 quiescing an epoll pool races
     * with its own workers dropping the listening socket from their sets and
     * aborts the process ("Failed to remove listen FD from epoll set"). */
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC;
    if (v6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, &srv, MHD_OPTION_SOCK_ADDR, &ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, &srv, MHD_OPTION_NOTIFY_CONNECTION, on_connection, &srv,
        MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout,
        MHD_OPTION_CONNECTION_LIMIT, max_conns,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->max_per_ip,
        /* MHD clears this per request: keep it small (headers + one chunk). */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_keep_nul, NULL,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "symd: cannot listen on %s\n", cfg->listen);
        store_close(srv.st);
        return 1;
    }
    pthread_t reaper_thread;
    bool reaping = (cfg->request_timeout > 0 || cfg->header_timeout > 0) &&
                   pthread_create(&reaper_thread, NULL, reaper, &srv) == 0;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char host[INET6_ADDRSTRLEN] = "?";
    if (v6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
    else
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
    printf(v6 ? "symd: listening on http://[%s]:%u\n" : "symd: listening on http://%s:%u\n",
           host, info ? info->port : 0);
    fflush(stdout);

    int sig = 0;
    sigwait(&set, &sig);
    /* Graceful stop: no new connections, requests under way finish (their
     * answers say Connection: close), then the daemon stops; a second
     * signal or --shutdown-grace seconds cut the wait short. */
    atomic_store(&srv.draining, true);
    MHD_socket lsock = MHD_quiesce_daemon(d);
    /* Refuse new clients at once instead of leaving them in the backlog. Not
     * close(): a worker may still be in accept() on it, and the number could
     * be reused before MHD_stop_daemon; it is closed after that. */
    if (lsock != MHD_INVALID_SOCKET)
        shutdown(lsock, SHUT_RDWR);
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
    MHD_stop_daemon(d);
    if (lsock != MHD_INVALID_SOCKET)
        close(lsock);
    if (reaping) {
        pthread_mutex_lock(&srv.conns_mu);
        srv.reaper_stop = true;
        pthread_cond_signal(&srv.reaper_cv);
        pthread_mutex_unlock(&srv.conns_mu);
        pthread_join(reaper_thread, NULL);
    }
    store_close(srv.st);
    if (srv.access_log && srv.access_log != stderr)
        fclose(srv.access_log);
    metrics_free(srv.m);
    return 0;
}

/* Private to the HTTP layer (server/http*.c): the server and request state,
 * the routes, the reply helpers every handler answers with, and the
 * handlers, one file per resource. */
#ifndef SYMD_HTTP_INT_H
#define SYMD_HTTP_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../store/store.h"
#include "../util/dynbuf.h"
#include "../util/membudget.h"
#include "http.h"
#include "metrics.h"

#define MAX_RESPONSE (512u << 20) /* a 200k-frame answer fits comfortably */
#define MAX_LIST 1000
#define MAX_FILES 64

/* One open connection, for the timeout reaper and the acceptor's evictions.
 * since_us is when the connection was accepted or its last request
 * completed: the next request's headers must be in within --header-timeout
 * of it, and the whole request (headers, body and answer) must end within
 * --request-timeout. Between requests (!in_request) it may be evicted for a
 * newcomer when every slot is taken; cut: shut down, by the reaper or an
 * eviction. */
typedef struct conn_track {
    struct conn_track *prev, *next;
    int fd;
    int64_t since_us;
    bool in_request; /* headers are in: the request deadline applies */
    bool served;     /* an earlier request was answered: keep-alive */
    bool cut;
    /* The kernel's byte counts of the connection when its last request was
     * answered (0 before the first): at the close, more bytes in and none
     * out since then mean libmicrohttpd dropped a request unanswered. */
    uint64_t rx_mark, tx_mark;
    /* The last answer ends the connection (Connection: close, or sent
     * before its request's body was read): what arrives after it is that
     * body, never a dropped request. */
    bool closing;
} conn_track;

struct req_state;

/* Large bodies waiting for room in the in-flight budget, first come first
 * served (http.c: admit_*). Each waiter's connection is suspended. */
typedef struct {
    pthread_mutex_t mu;
    struct req_state *head, *tail;
    uint64_t waiting;          /* in the queue now */
    uint64_t large_held;       /* large bodies admitted and not yet completed */
    uint64_t admitted_total, refused_total; /* for /metrics */
} admission;

/* Heavy requests' handlers, run off libmicrohttpd's threads (http.c). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct req_state *head, *tail;
    struct req_state *reads_tail; /* the last crash read: reads come first */
    bool stop;
    pthread_t *threads;
    int n;
} work_pool;

typedef struct {
    const server_config *cfg;
    store *st;
    metrics *m;
    FILE *access_log;          /* NULL: off */
    _Atomic uint64_t in_flight; /* requests between first callback and completion */
    mem_pool pool;             /* --max-inflight-mb: bodies, parse memory, answers */
    admission admit;
    work_pool work;
    atomic_bool trim_wanted;   /* a large request ended: give freed memory back */
    atomic_bool draining;      /* SIGTERM seen: answers close their connection */
    pthread_mutex_t conns_mu;  /* guards conns and every conn_track in it */
    conn_track conns;          /* list head */
    pthread_cond_t reaper_cv;
    bool reaper_stop;          /* under conns_mu */
    struct acceptor *acc;      /* admission: slots by address (acceptor.c) */
    struct regroup *regroup;   /* refiles crashes in the background (regroup.c) */
    struct grouping_watch *grouping; /* the grouping rules file (grouping_file.c) */
    struct assembler *assembler; /* files assembled from chunks (http_chunks.c) */
} server;

typedef enum {
    ROUTE_NONE,
    ROUTE_INDEX,
    ROUTE_ASSET,
    ROUTE_ASSET_JS,
    ROUTE_HEALTH,
    ROUTE_METRICS,
    ROUTE_OPENAPI,
    ROUTE_IMAGES,
    ROUTE_IMAGE,
    ROUTE_SYMBOLICATE,
    ROUTE_CRASHES,
    ROUTE_CRASH,
    ROUTE_CRASH_GROUPS,
    ROUTE_CRASH_GROUP,
    ROUTE_CRASH_GROUP_STATE,
    ROUTE_CRASH_GROUP_HISTORY,
    ROUTE_CRASH_GROUP_SPREAD,
    ROUTE_CRASH_VALUES,
    ROUTE_CRASH_TREND,
    ROUTE_MISSING,
    ROUTE_SYSTEM_SETS,
    ROUTE_SYSTEM_SET,
    ROUTE_WEBHOOK_DELIVERIES,
    ROUTE_UPLOAD_OPTIONS,
    ROUTE_IMAGES_CHECK,
    ROUTE_CHUNK,
    ROUTE_CHUNKS_MISSING,
    ROUTE_ASSEMBLE,
    ROUTE_ASSEMBLE_STATE,
    ROUTE_COUNT
} route;

typedef struct {
    char *name;
    dynbuf data;
} upload_file;

/* One request, from its first callback to its completion (http.c). */
typedef struct req_state {
    server *srv;
    struct MHD_Connection *conn;
    route route;
    bool routed;         /* route, method and limits checked */
    bool is_post;
    int64_t start_us;    /* first callback */
    unsigned status;     /* answered with; 0 until queued */
    uint64_t bytes_out;  /* response body */
    const char *allow;   /* Allow header of a 405 */
    uint64_t held;       /* bytes charged to server.held, released at completion */
    bool busy;           /* the body did not fit --max-inflight-mb: answer 503 */
    /* Admission of a large body (over ADMIT_SMALL bytes): it waits, its
     * connection suspended, until its declared size fits the budget. */
    bool large;          /* counted in admission.large_held once admitted */
    bool queued;         /* in the admission queue now */
    bool resumed;        /* admitted or refused while suspended: the next
                            callback repeats the first one */
    bool wait_refused;   /* waited past --admission-wait (or shutdown): 503 */
    uint64_t reserved;   /* body bytes held in advance at admission */
    int64_t queued_us;
    struct req_state *admit_next;
    mem_meter meter;     /* the handler's allocations (membudget.h) */
    bool offloaded;      /* handed to the work pool (its connection suspended) */
    struct req_state *work_next;
    bool close;          /* the answer says Connection: close (libmicrohttpd closes after it) */
    bool basic_challenge; /* a 401 also offers Basic (a crash reporter's upload) */
    bool body_done;      /* the last call came: the whole body was read */
    char method[12];
    char path[256];      /* for the access log, cut */
    char path_arg[96];   /* the {uuid}, {id}, {file} or {sha256} of the path */
    uint64_t limit;      /* body bytes allowed */
    uint64_t received;   /* body bytes seen */
    bool too_large;
    bool bad_multipart;
    dynbuf body;         /* raw body */
    /* A chunk's body written to the store's chunk file as it comes and
     * hashed on the way (backends keeping chunks as files), never held in
     * memory: http_chunks.c's chunk_spool_*. */
    bool spooling;
    int spool_fd;        /* -1 once closed */
    int spool_errno;     /* a write that failed (answered 507) */
    char *spool_tmp;     /* the file, malloc'ed; removed at completion unless stored */
    struct sha256_ctx *spool_sha;
    uint8_t *spool_buf;  /* bytes gathered for one write (SPOOL_BUF) */
    size_t spool_len;
    struct MHD_PostProcessor *pp;
    upload_file files[MAX_FILES];
    size_t nfiles;
    bool part_open;
    bool too_many_files;
} req_state;

/* ---- replies (http.c) ----------------------------------------------------
 * Each queues the answer on c and records its status and size for the
 * access log and metrics; MHD_NO only when libmicrohttpd cannot take it. */

/* Queues r with the headers every answer carries; takes r. owned: its len
 * bytes were allocated for this answer (and count against the
 * --max-inflight-mb budget: an answer that does not fit becomes 503 busy). */
enum MHD_Result queue_response(struct MHD_Connection *c, unsigned status,
                               struct MHD_Response *r, size_t len, const char *ctype,
                               bool owned);
/* data (malloc'ed, taken) as the body. */
enum MHD_Result reply_bytes(struct MHD_Connection *c, unsigned status, uint8_t *data,
                            size_t len, const char *ctype);
/* b's JSON as the body ("{}" when empty); takes b's memory. */
enum MHD_Result reply_dynbuf(struct MHD_Connection *c, unsigned status, dynbuf *b);
/* doc as compact JSON; takes the reference. */
enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *doc);
/* {"error": {"code": code, "message": ...}}; a 5xx is also logged. */
enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *code,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* 503 busy: a body or answer that does not fit --max-inflight-mb. */
enum MHD_Result reply_busy(struct MHD_Connection *c);
/* When the current request's memory meter refused an allocation: queues
 * 413 (past the request's own budget) or 503 busy (the in-flight budget
 * is full), sets *ret and returns true. Handlers call it after reading
 * input, so a read that ran out of budget is never taken for a short one. */
bool reply_if_over_budget(struct MHD_Connection *c, enum MHD_Result *ret);

/* An answer taken instead of queued (the assembly of an upload in parts
 * runs off any connection, http_chunks.c): while a capture is this
 * thread's, every reply helper stores its status and body (malloc'ed) in
 * it and queues nothing; c may then be NULL. */
typedef struct {
    unsigned status; /* 0: nothing answered */
    uint8_t *data;
    size_t len;
} reply_capture;
/* Makes cap (may be NULL) this thread's capture; returns the one before. */
reply_capture *reply_capture_swap(reply_capture *cap);

/* Maps an error from the lower layers to a status and code. corrupt_code
 * names what was being read, so corrupt input gets its own code
 * ("malformed_macho", "malformed_zip"). A 500 means our bug and is logged. */
enum MHD_Result reply_status(struct MHD_Connection *c, const symd_err *e,
                             const char *corrupt_code);

/* ---- request arguments (http.c) ------------------------------------------ */

/* ?demangle=: "simplified" (the default: Swift names as Xcode shows them)
 * or "full" (as swift-demangle prints them); false with a 400 queued in
 * *refused for any other value. */
bool demangle_arg(struct MHD_Connection *c, bool *full, enum MHD_Result *refused);

/* The query-string argument name, or NULL. */
const char *query_arg(struct MHD_Connection *c, const char *name);
/* limit (1..MAX_LIST, default 50) and cursor (a next_cursor value) of a
 * listing; NULL, or what is wrong with them. */
const char *list_args(struct MHD_Connection *c, uint64_t *limit, uint64_t *before);
/* Sets doc's "next_cursor": last_id as a string when more follows, else null. */
void set_next_cursor(json_t *doc, bool more, int64_t last_id);
/* s as a JSON string, or null. */
json_t *json_str_or_null(const char *s);

/* ---- framing (http_framing.c) --------------------------------------------
 * RFC 9112's rules where libmicrohttpd 0.9.75 is lenient; the comment at
 * the head of http_framing.c lists what it does itself and what is checked
 * here. */

/* MHD_OPTION_URI_LOG_CALLBACK: notes a request target with a space or a
 * control byte, or a query of more parameters than the connection's memory
 * holds (that query is cut before libmicrohttpd parses it). Returns NULL. */
void *framing_uri_seen(void *cls, const char *uri, struct MHD_Connection *c);
/* At a request's first callback (method: libmicrohttpd's own pointer, the
 * first byte of the header block): true, with the answer queued in *ret
 * and rs->close set, when the request's framing or headers are refused:
 * Content-Length with Transfer-Encoding or twice, a transfer coding other
 * than one chunked (501 when unknown), a header name outside the token
 * syntax (whitespace before the colon), a control byte or NUL in a header
 * value, an obs-folded line, HTTP/1.1 without one Host, or what
 * framing_uri_seen noted. */
bool framing_refused(struct MHD_Connection *c, req_state *rs, const char *method,
                     enum MHD_Result *ret);

/* ---- handlers -------------------------------------------------------------
 * Called once the whole body is in (rs->too_large set when it did not fit). */

/* http_images.c: POST /v1/images, GET /v1/images, GET|DELETE /v1/images/{uuid} */
enum MHD_Result handle_images_post(server *srv, struct MHD_Connection *c, req_state *rs);
/* One uploaded file: its bytes and its name (NULL: none). */
typedef struct {
    const uint8_t *data;
    size_t len;
    const char *name;
} upload_part;
/* Reads every slice of the n files and stores them in one transaction, and
 * answers as POST /v1/images does: 201 when any slice is new or updated,
 * 200 when all existed, the error of the first file that failed. */
enum MHD_Result reply_ingest(server *srv, struct MHD_Connection *c, const upload_part *parts,
                             size_t n);
/* reply_ingest, with gate(ctx) asked once the files are read and before
 * anything is stored or answered (whatever the read found): false stores
 * nothing and queues no answer (the caller answers). */
enum MHD_Result reply_ingest_gated(server *srv, struct MHD_Connection *c,
                                   const upload_part *parts, size_t n, bool (*gate)(void *ctx),
                                   void *ctx);
enum MHD_Result handle_images_list(server *srv, struct MHD_Connection *c);
enum MHD_Result handle_image(server *srv, struct MHD_Connection *c, req_state *rs,
                             const char *method);

/* http_symbolicate.c: POST /v1/symbolicate */
enum MHD_Result handle_symbolicate(server *srv, struct MHD_Connection *c, req_state *rs);

/* http_crashes.c: /v1/crashes, /v1/crashes/{id}, /v1/missing, and the
 * listings' arguments the group routes share */
/* ?kind= of the listings: NULL (no filter, also for an empty value) in
 * *kind, or false with a 400 queued for a name crash_kind_parse does not
 * know. */
bool kind_arg(struct MHD_Connection *c, const char **kind, enum MHD_Result *refused);
/* ?format=, as kind_arg. */
bool format_arg(struct MHD_Connection *c, const char **format, enum MHD_Result *refused);
/* ?state=: comma-separated states into *mask (bits 1 << store_state);
 * false with a 400 queued for a name that is no state. */
bool states_arg(struct MHD_Connection *c, unsigned *mask, enum MHD_Result *refused);
/* ?limit, ?cursor and the filters of the crash listings; false with a 400
 * queued. */
bool crash_list_args(struct MHD_Connection *c, uint64_t *limit, uint64_t *before,
                     store_crash_filter *f, enum MHD_Result *refused);
enum MHD_Result handle_crash_post(server *srv, struct MHD_Connection *c, req_state *rs);
enum MHD_Result handle_crash_list(server *srv, struct MHD_Connection *c);
enum MHD_Result handle_crash_get(server *srv, struct MHD_Connection *c, req_state *rs);
/* http_groups.c: /v1/crashes/groups, /v1/crashes/group (its state, history,
 * spread), /v1/crashes/trend, /v1/crashes/values */
enum MHD_Result handle_crash_groups(server *srv, struct MHD_Connection *c);
enum MHD_Result handle_crash_group(server *srv, struct MHD_Connection *c);
enum MHD_Result handle_crash_group_state(server *srv, struct MHD_Connection *c, req_state *rs);
enum MHD_Result handle_crash_group_history(server *srv, struct MHD_Connection *c);
enum MHD_Result handle_crash_group_spread(server *srv, struct MHD_Connection *c);
enum MHD_Result handle_crash_values(server *srv, struct MHD_Connection *c);
enum MHD_Result handle_crash_trend(server *srv, struct MHD_Connection *c);
/* http_crashes.c */
enum MHD_Result handle_crash_delete(server *srv, struct MHD_Connection *c, req_state *rs);
enum MHD_Result handle_missing(server *srv, struct MHD_Connection *c);

/* http_webhooks.c: GET /v1/webhooks/deliveries */
enum MHD_Result handle_webhook_deliveries(server *srv, struct MHD_Connection *c);
/* http_chunks.c: uploads in parts. GET /v1/upload-options, POST
 * /v1/images/check, POST /v1/chunks/{sha256}, POST /v1/chunks/missing, POST
 * /v1/images/assemble, GET /v1/images/assemble/{sha256} */
enum MHD_Result handle_upload_options(server *srv, struct MHD_Connection *c);
enum MHD_Result handle_images_check(server *srv, struct MHD_Connection *c, req_state *rs);
enum MHD_Result handle_chunk_post(server *srv, struct MHD_Connection *c, req_state *rs);
/* Starts writing the body of POST /v1/chunks/{sha256} (declared bytes, 0
 * when unknown) to a chunk file of the store instead of memory; false (and
 * the body is buffered) when the backend keeps chunks elsewhere or the
 * path names no hash. */
bool chunk_spool_begin(server *srv, req_state *rs, uint64_t declared);
/* n more bytes of a spooled body: hashed and written (a failed write is
 * kept for the answer; the rest is then only read). */
void chunk_spool_data(req_state *rs, const void *data, size_t n);
/* At the request's end: the file removed unless it was stored. */
void chunk_spool_end(server *srv, req_state *rs);
enum MHD_Result handle_chunks_missing(server *srv, struct MHD_Connection *c, req_state *rs);
enum MHD_Result handle_assemble(server *srv, struct MHD_Connection *c, req_state *rs);
enum MHD_Result handle_assemble_state(server *srv, struct MHD_Connection *c, req_state *rs);
/* The assembler: its jobs' table; NULL when out of memory. assembler_stop
 * waits for the assemblies under way (they use the store). */
struct assembler *assembler_new(server *srv);
void assembler_stop(struct assembler *a);

/* http_system.c: GET|POST /v1/system-symbols, DELETE /v1/system-symbols/{id} */
enum MHD_Result handle_system_list(server *srv, struct MHD_Connection *c);
enum MHD_Result handle_system_post(server *srv, struct MHD_Connection *c, req_state *rs);
enum MHD_Result handle_system_set(server *srv, struct MHD_Connection *c, req_state *rs);

/* http_ops.c: the embedded files (dashboard, assets, openapi.yaml),
 * /healthz and /metrics */
enum MHD_Result handle_asset(struct MHD_Connection *c, const char *dir, const char *name);
enum MHD_Result handle_health(server *srv, struct MHD_Connection *c);
enum MHD_Result handle_metrics(server *srv, struct MHD_Connection *c);

#endif

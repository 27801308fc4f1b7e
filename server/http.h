/* The HTTP API: libmicrohttpd daemon, routing, uploads and JSON replies. */
#ifndef SYMD_HTTP_H
#define SYMD_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "../ingest/unzip.h"
#include "webhook.h"

typedef struct {
    const char *listen;       /* "host:port", "[v6]:port" or "port"; port 0 = any */
    const char *db;           /* the database: a SQLite file or a postgresql:// URI */
    int db_pool;              /* database connections; 0 = one per thread and one more */
    size_t cache_mb;          /* index cache bound */
    /* The roles' tokens (NULL or "": open to anyone): upload (CI: POST and
     * DELETE /v1/images), report (crash pipelines: POST /v1/crashes and
     * /v1/symbolicate, DELETE /v1/crashes/{id}), read (every other GET but
     * /healthz, /metrics and the files compiled in: the dashboard's and
     * /v1/openapi.yaml). */
    const char *upload_token, *report_token, *read_token;
    uint64_t max_upload;      /* bytes per upload request */
    uint64_t max_json;        /* bytes per JSON request body */
    unzip_limits unzip;       /* zip uploads: entries, inflated bytes */
    int threads;              /* worker threads; 0 = one per core */
    const char *access_log;   /* file to append to; NULL or "-": stderr; "off" */
    unsigned max_connections; /* open at once, all clients */
    unsigned max_per_ip;      /* open at once from one address; 0: no limit */
    unsigned idle_timeout;    /* seconds a connection may send and read nothing */
    unsigned header_timeout;  /* seconds from connect (or the last answer) to the next
                                 request's headers; 0: none */
    unsigned request_timeout; /* seconds for a whole request and its answer; 0: none */
    unsigned shutdown_grace;  /* seconds SIGTERM waits for requests under way */
    uint64_t max_inflight;    /* bytes held at once, all requests together: bodies,
                                 parse memory, answers (one request alone always fits) */
    unsigned request_mem_factor;  /* a request's parse may use factor * body ... */
    uint64_t request_mem_allowance; /* ... + this many bytes */
    unsigned admission_wait;  /* seconds a large body may wait for room in the budget */
    uint64_t keep_days;       /* crashes older than this many days are pruned; 0: kept */
    uint64_t max_crashes;     /* crashes beyond the newest this many are pruned; 0: kept */
    unsigned prune_every;     /* seconds between retention passes */
    const char *grouping_rules; /* the grouping rules file; NULL: none (grouping.h) */
    webhook_config webhooks;  /* --webhook targets and their sending (no targets: off) */
    /* Uploads in parts (POST /v1/chunks, /v1/images/assemble): the largest
     * chunk, the bytes all chunks held may take, and how long a chunk not
     * assembled is kept (seconds). */
    uint64_t chunk_size;
    uint64_t chunk_budget;
    uint64_t chunk_ttl;
    /* Idempotent crash posts (Idempotency-Key, a report's content key): a
     * report posted again is stored once. false (--dedup off): every post
     * is stored, for benches and tests that post one report many times. */
    bool dedup;
} server_config;

typedef struct {
    const char *path;    /* template as in docs/openapi.yaml: "/v1/images/{uuid}" */
    const char *methods; /* "GET, DELETE" (HEAD is allowed wherever GET is) */
} http_route_info;

/* The routes the server answers, in a fixed order. */
const http_route_info *http_routes(size_t *n);

/* Serves until SIGINT or SIGTERM (SIGHUP reads the grouping rules again), then stops taking connections, lets the
 * requests under way finish (at most shutdown_grace seconds) and returns. Prints
 * "symd: listening on http://HOST:PORT" once ready. Returns a process exit
 * code. */
int server_run(const server_config *cfg);

#endif

/* Server metrics: lock-free counters updated by the request threads and
 * rendered in the Prometheus text format (0.0.4) for GET /metrics. */
#ifndef SYMD_METRICS_H
#define SYMD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/dynbuf.h"

#define METRICS_MAX_ROUTES 32

typedef struct metrics metrics;

/* route_labels[i] names route i in the route="..." label (a path template,
 * so the label set stays small whatever clients request); n <=
 * METRICS_MAX_ROUTES. The labels must outlive the metrics. NULL when out of
 * memory. */
metrics *metrics_new(const char *const *route_labels, size_t n);
void metrics_free(metrics *m);

/* One finished request: its route index, the status it was answered with
 * (0: none, the connection ended first), its duration and body bytes. */
void metrics_request(metrics *m, size_t route, unsigned status, uint64_t micros,
                     uint64_t bytes_in, uint64_t bytes_out);
/* Frames answered, by the status the response gives them. */
void metrics_frames(metrics *m, uint64_t symbolicated, uint64_t no_symbol,
                    uint64_t missing_image, uint64_t unknown_image);
/* Upload body bytes received on POST /v1/images. */
void metrics_upload_bytes(metrics *m, uint64_t n);
/* Which deadline cut a connection off. */
typedef enum {
    PHASE_HEADERS,   /* --header-timeout: a new connection's first request */
    PHASE_KEEPALIVE, /* a kept-alive connection's next request (the longer of
                        --header-timeout and --idle-timeout) */
    PHASE_REQUEST,   /* --request-timeout: headers in, body or answer late */
    PHASE_COUNT
} metrics_phase;

/* A connection shut down for passing a deadline. */
void metrics_timeout(metrics *m, metrics_phase phase);
/* Connections opened (+1) and closed (-1). */
void metrics_connection(metrics *m, int delta);
/* Why a connection was closed as soon as it was accepted. */
typedef enum {
    REFUSED_PER_IP, /* its address held --max-per-ip connections */
    REFUSED_FULL,   /* every --max-connections slot was a request under way */
    REFUSED_COUNT
} metrics_refusal;
void metrics_refused(metrics *m, metrics_refusal why);
/* A connection doing nothing useful shut down to make room for a newcomer. */
void metrics_evicted(metrics *m);
/* What a stored report did to its group (store_group_event). */
void metrics_group_event(metrics *m, bool new_group, bool regressed, bool reopened);
/* How one webhook delivery attempt ended. */
typedef enum {
    HOOK_DELIVERED, /* the receiver answered 2xx */
    HOOK_RETRY,     /* it failed; another attempt follows after the backoff */
    HOOK_GAVE_UP,   /* it failed past --webhook-give-up: the delivery failed for good */
    HOOK_UNRECORDED, /* its result could not be recorded before the lease ran out */
    HOOK_RESULT_COUNT
} metrics_hook_result;
void metrics_webhook_attempt(metrics *m, metrics_hook_result r);

/* Values read at scrape time. A negative count is left out. */
typedef struct {
    int64_t images, image_blobs, crashes;
    int64_t chunks, chunk_bytes; /* chunks of uploads in parts held, and their bytes */
    uint64_t chunk_budget;       /* --chunk-budget */
    uint64_t cache_bytes, cache_entries, cache_hits, cache_misses;
    uint64_t in_flight;
    uint64_t inflight_bytes, inflight_max; /* the --max-inflight-mb budget */
    uint64_t admission_waiting, admission_admitted, admission_refused;
    uint64_t rss_bytes; /* 0: unknown */
    /* --grouping-rules: the rules in force, reloads refused, and whether
     * the last reload was (left out without a rules file) */
    bool grouping_configured, grouping_error;
    uint64_t grouping_rules, grouping_failed_reloads;
} metrics_gauges;

/* Appends the whole exposition to out; false when out's limit is hit. */
bool metrics_render(metrics *m, const metrics_gauges *g, dynbuf *out);

#endif

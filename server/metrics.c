/* Server metrics (see metrics.h). Counters are relaxed atomics: a scrape
 * may see one request counted in the total before its histogram bucket,
 * which Prometheus tolerates; nothing here takes a lock on the request
 * path. */
#include "metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define STATUS_MIN 100
#define STATUS_MAX 599
#define NSTATUS (STATUS_MAX - STATUS_MIN + 2) /* slot 0: no status */

/* Latency bucket bounds in microseconds (le= labels in seconds). */
static const uint64_t bucket_us[] = {250,    500,    1000,    2500,    5000,    10000,
                                     25000,  50000,  100000,  250000,  500000,  1000000,
                                     2500000, 5000000, 10000000};
#define NBUCKETS (sizeof bucket_us / sizeof bucket_us[0])

typedef _Atomic uint64_t counter;

struct metrics {
    const char *const *labels;
    size_t nroutes;
    counter requests[METRICS_MAX_ROUTES][NSTATUS];
    counter latency[METRICS_MAX_ROUTES][NBUCKETS + 1]; /* last: +Inf */
    counter latency_sum_us[METRICS_MAX_ROUTES];
    counter bytes_in[METRICS_MAX_ROUTES], bytes_out[METRICS_MAX_ROUTES];
    counter frames[4];
    counter upload_bytes, conns_total, timeouts[PHASE_COUNT];
    counter refused[REFUSED_COUNT], evicted;
    counter group_events[3]; /* new, regressed, reopened */
    counter hook_attempts[HOOK_RESULT_COUNT];
    _Atomic int64_t conns_open;
};

static void add(counter *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static uint64_t get(counter *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

metrics *metrics_new(const char *const *route_labels, size_t n)
{
    if (n > METRICS_MAX_ROUTES)
        return NULL;
    metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->labels = route_labels;
    m->nroutes = n;
    return m;
}

void metrics_free(metrics *m)
{
    free(m);
}

void metrics_request(metrics *m, size_t route, unsigned status, uint64_t micros,
                     uint64_t bytes_in, uint64_t bytes_out)
{
    if (!m || route >= m->nroutes)
        return;
    size_t slot = status >= STATUS_MIN && status <= STATUS_MAX ? status - STATUS_MIN + 1 : 0;
    add(&m->requests[route][slot], 1);
    size_t b = 0;
    while (b < NBUCKETS && micros > bucket_us[b])
        b++;
    add(&m->latency[route][b], 1); /* made cumulative when rendered */
    add(&m->latency_sum_us[route], micros);
    add(&m->bytes_in[route], bytes_in);
    add(&m->bytes_out[route], bytes_out);
}

void metrics_frames(metrics *m, uint64_t symbolicated, uint64_t no_symbol,
                    uint64_t missing_image, uint64_t unknown_image)
{
    if (!m)
        return;
    add(&m->frames[0], symbolicated);
    add(&m->frames[1], no_symbol);
    add(&m->frames[2], missing_image);
    add(&m->frames[3], unknown_image);
}

void metrics_upload_bytes(metrics *m, uint64_t n)
{
    if (m)
        add(&m->upload_bytes, n);
}

void metrics_timeout(metrics *m, metrics_phase phase)
{
    if (m && phase < PHASE_COUNT)
        add(&m->timeouts[phase], 1);
}

void metrics_connection(metrics *m, int delta)
{
    if (!m)
        return;
    atomic_fetch_add_explicit(&m->conns_open, delta, memory_order_relaxed);
    if (delta > 0)
        add(&m->conns_total, (uint64_t)delta);
}

void metrics_refused(metrics *m, metrics_refusal why)
{
    if (m && why < REFUSED_COUNT)
        add(&m->refused[why], 1);
}

void metrics_evicted(metrics *m)
{
    if (m)
        add(&m->evicted, 1);
}

void metrics_group_event(metrics *m, bool new_group, bool regressed, bool reopened)
{
    if (!m)
        return;
    bool e[3] = {new_group, regressed, reopened};
    for (int i = 0; i < 3; i++)
        if (e[i])
            add(&m->group_events[i], 1);
}

void metrics_webhook_attempt(metrics *m, metrics_hook_result r)
{
    if (m && r < HOOK_RESULT_COUNT)
        add(&m->hook_attempts[r], 1);
}

/* ---- exposition --------------------------------------------------------- */

typedef struct {
    dynbuf *out;
    bool ok;
} writer;

static void put(writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(writer *w, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line || !dynbuf_add(w->out, line, (size_t)n))
        w->ok = false;
}

static void head(writer *w, const char *name, const char *type, const char *help)
{
    put(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void seconds(char *buf, size_t cap, uint64_t us)
{
    snprintf(buf, cap, "%llu.%06llu", (unsigned long long)(us / 1000000),
             (unsigned long long)(us % 1000000));
}

bool metrics_render(metrics *m, const metrics_gauges *g, dynbuf *out)
{
    writer w = {out, true};
    head(&w, "symd_http_requests_total", "counter",
         "HTTP requests finished, by route template and status (\"none\": the "
         "connection ended before an answer).");
    for (size_t r = 0; r < m->nroutes; r++)
        for (size_t s = 0; s < NSTATUS; s++) {
            uint64_t v = get(&m->requests[r][s]);
            if (!v)
                continue;
            if (s == 0)
                put(&w, "symd_http_requests_total{route=\"%s\",status=\"none\"} %llu\n",
                    m->labels[r], (unsigned long long)v);
            else
                put(&w, "symd_http_requests_total{route=\"%s\",status=\"%zu\"} %llu\n",
                    m->labels[r], s - 1 + STATUS_MIN, (unsigned long long)v);
        }

    head(&w, "symd_http_request_duration_seconds", "histogram",
         "Time from a request's first byte handled to its last byte sent.");
    for (size_t r = 0; r < m->nroutes; r++) {
        uint64_t total = 0;
        for (size_t b = 0; b <= NBUCKETS; b++)
            total += get(&m->latency[r][b]);
        if (!total)
            continue; /* a route appears once it has been asked for */
        uint64_t cum = 0;
        char le[32];
        for (size_t b = 0; b <= NBUCKETS; b++) {
            cum += get(&m->latency[r][b]);
            if (b < NBUCKETS)
                seconds(le, sizeof le, bucket_us[b]);
            else
                snprintf(le, sizeof le, "+Inf");
            put(&w, "symd_http_request_duration_seconds_bucket{route=\"%s\",le=\"%s\"} %llu\n",
                m->labels[r], le, (unsigned long long)cum);
        }
        char sum[32];
        seconds(sum, sizeof sum, get(&m->latency_sum_us[r]));
        put(&w, "symd_http_request_duration_seconds_sum{route=\"%s\"} %s\n", m->labels[r], sum);
        put(&w, "symd_http_request_duration_seconds_count{route=\"%s\"} %llu\n", m->labels[r],
            (unsigned long long)cum);
    }

    head(&w, "symd_http_request_bytes_total", "counter", "Request body bytes received, by route.");
    for (size_t r = 0; r < m->nroutes; r++)
        if (get(&m->bytes_in[r]))
            put(&w, "symd_http_request_bytes_total{route=\"%s\"} %llu\n", m->labels[r],
            (unsigned long long)get(&m->bytes_in[r]));
    head(&w, "symd_http_response_bytes_total", "counter", "Response body bytes sent, by route.");
    for (size_t r = 0; r < m->nroutes; r++)
        if (get(&m->bytes_out[r]))
            put(&w, "symd_http_response_bytes_total{route=\"%s\"} %llu\n", m->labels[r],
            (unsigned long long)get(&m->bytes_out[r]));

    static const char *const frame_status[4] = {"symbolicated", "no_symbol", "missing_image",
                                                "unknown_image"};
    head(&w, "symd_frames_total", "counter",
         "Frames symbolicated (backtraces and crash reports), by the status answered.");
    for (size_t i = 0; i < 4; i++)
        put(&w, "symd_frames_total{status=\"%s\"} %llu\n", frame_status[i],
            (unsigned long long)get(&m->frames[i]));

    head(&w, "symd_upload_bytes_total", "counter", "Bytes received by POST /v1/images and POST /v1/chunks/{sha256}.");
    put(&w, "symd_upload_bytes_total %llu\n", (unsigned long long)get(&m->upload_bytes));
    static const char *const phases[PHASE_COUNT] = {"headers", "keepalive", "request"};
    head(&w, "symd_connection_timeouts_total", "counter",
         "Connections shut down for passing a deadline: headers (--header-timeout), "
         "keepalive (the next request on a kept-alive connection), request "
         "(--request-timeout).");
    for (size_t i = 0; i < PHASE_COUNT; i++)
        put(&w, "symd_connection_timeouts_total{phase=\"%s\"} %llu\n", phases[i],
            (unsigned long long)get(&m->timeouts[i]));
    head(&w, "symd_connections_total", "counter", "Connections accepted.");
    put(&w, "symd_connections_total %llu\n", (unsigned long long)get(&m->conns_total));
    head(&w, "symd_connections_open", "gauge", "Connections open now.");
    put(&w, "symd_connections_open %lld\n",
        (long long)atomic_load_explicit(&m->conns_open, memory_order_relaxed));
    static const char *const refusals[REFUSED_COUNT] = {"per_ip", "full"};
    head(&w, "symd_connections_refused_total", "counter",
         "Connections closed as soon as accepted: per_ip (the address held "
         "--max-per-ip), full (every --max-connections slot was a request under way).");
    for (size_t i = 0; i < REFUSED_COUNT; i++)
        put(&w, "symd_connections_refused_total{reason=\"%s\"} %llu\n", refusals[i],
            (unsigned long long)get(&m->refused[i]));
    head(&w, "symd_connections_evicted_total", "counter",
         "Idle connections (still sending their first headers, or kept alive between "
         "requests) shut down to make room for a connection from an address holding fewer.");
    put(&w, "symd_connections_evicted_total %llu\n", (unsigned long long)get(&m->evicted));
    head(&w, "symd_crash_group_events_total", "counter",
         "What stored reports did to their groups: new (the first report of a group), "
         "regressed (a resolved group reopened), reopened (an ignored group's ignore ended).");
    static const char *const group_events[3] = {"new", "regressed", "reopened"};
    for (int i = 0; i < 3; i++)
        put(&w, "symd_crash_group_events_total{event=\"%s\"} %llu\n", group_events[i],
            (unsigned long long)get(&m->group_events[i]));
    head(&w, "symd_webhook_attempts_total", "counter",
         "Webhook delivery attempts of this node by how they ended: delivered (2xx), retry "
         "(failed, tried again after the backoff), gave_up (failed past --webhook-give-up), "
         "unrecorded (the result could not be stored before the lease ran out; another node "
         "or attempt may send the event again).");
    static const char *const hook_results[HOOK_RESULT_COUNT] = {"delivered", "retry",
                                                                "gave_up", "unrecorded"};
    for (int i = 0; i < HOOK_RESULT_COUNT; i++)
        put(&w, "symd_webhook_attempts_total{result=\"%s\"} %llu\n", hook_results[i],
            (unsigned long long)get(&m->hook_attempts[i]));
    head(&w, "symd_requests_in_flight", "gauge", "Requests being received, handled or sent.");
    put(&w, "symd_requests_in_flight %llu\n", (unsigned long long)g->in_flight);
    head(&w, "symd_inflight_bytes", "gauge",
         "Bytes of bodies, parse memory and answers held now (--max-inflight-mb).");
    put(&w, "symd_inflight_bytes %llu\n", (unsigned long long)g->inflight_bytes);
    head(&w, "symd_inflight_limit_bytes", "gauge", "The in-flight budget.");
    put(&w, "symd_inflight_limit_bytes %llu\n", (unsigned long long)g->inflight_max);
    head(&w, "symd_admission_waiting", "gauge",
         "Large bodies waiting for room in the in-flight budget.");
    put(&w, "symd_admission_waiting %llu\n", (unsigned long long)g->admission_waiting);
    head(&w, "symd_admission_admitted_total", "counter",
         "Large bodies admitted into the in-flight budget.");
    put(&w, "symd_admission_admitted_total %llu\n",
        (unsigned long long)g->admission_admitted);
    head(&w, "symd_admission_refused_total", "counter",
         "Large bodies answered 503 after waiting --admission-wait.");
    put(&w, "symd_admission_refused_total %llu\n", (unsigned long long)g->admission_refused);

    if (g->images >= 0) {
        head(&w, "symd_images", "gauge", "Image slices stored (one per UUID and arch).");
        put(&w, "symd_images %lld\n", (long long)g->images);
    }
    if (g->image_blobs >= 0) {
        head(&w, "symd_image_indexes", "gauge", "Symbol and line indexes stored.");
        put(&w, "symd_image_indexes %lld\n", (long long)g->image_blobs);
    }
    if (g->crashes >= 0) {
        head(&w, "symd_crashes", "gauge", "Crash reports stored.");
        put(&w, "symd_crashes %lld\n", (long long)g->crashes);
    }
    if (g->chunks >= 0) {
        head(&w, "symd_chunks", "gauge", "Chunks of uploads in parts held, not yet assembled.");
        put(&w, "symd_chunks %lld\n", (long long)g->chunks);
        head(&w, "symd_chunk_bytes", "gauge", "Bytes of the chunks held.");
        put(&w, "symd_chunk_bytes %lld\n", (long long)g->chunk_bytes);
    }
    head(&w, "symd_chunk_budget_bytes", "gauge", "Bytes the chunks held may take (--chunk-budget).");
    put(&w, "symd_chunk_budget_bytes %llu\n", (unsigned long long)g->chunk_budget);
    head(&w, "symd_index_cache_bytes", "gauge", "Bytes of loaded indexes held in the cache.");
    put(&w, "symd_index_cache_bytes %llu\n", (unsigned long long)g->cache_bytes);
    head(&w, "symd_index_cache_entries", "gauge", "Indexes held in the cache.");
    put(&w, "symd_index_cache_entries %llu\n", (unsigned long long)g->cache_entries);
    head(&w, "symd_index_cache_hits_total", "counter", "Index lookups answered from the cache.");
    put(&w, "symd_index_cache_hits_total %llu\n", (unsigned long long)g->cache_hits);
    head(&w, "symd_index_cache_misses_total", "counter", "Index lookups that loaded from SQLite.");
    put(&w, "symd_index_cache_misses_total %llu\n", (unsigned long long)g->cache_misses);
    if (g->grouping_configured) {
        head(&w, "symd_grouping_rules", "gauge", "Grouping rules in force (--grouping-rules).");
        put(&w, "symd_grouping_rules %llu\n", (unsigned long long)g->grouping_rules);
        head(&w, "symd_grouping_rules_reload_failures_total", "counter",
             "Reloads of the grouping rules refused (a broken file: the rules in force stay).");
        put(&w, "symd_grouping_rules_reload_failures_total %llu\n",
            (unsigned long long)g->grouping_failed_reloads);
        head(&w, "symd_grouping_rules_reload_error", "gauge",
             "1 while the last reload of the grouping rules was refused (see /healthz).");
        put(&w, "symd_grouping_rules_reload_error %d\n", g->grouping_error ? 1 : 0);
    }
    if (g->rss_bytes) {
        head(&w, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        put(&w, "process_resident_memory_bytes %llu\n", (unsigned long long)g->rss_bytes);
    }
    return w.ok;
}

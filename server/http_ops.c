/* The service routes: the files compiled into the binary (the dashboard,
 * its assets, the OpenAPI document), /healthz and /metrics. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grouping_file.h"
#include "assets.h"
#include "http_int.h"

static const char *const CSP =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'";

static const embedded_asset *asset_find(const char *name)
{
    for (size_t i = 0; i < embedded_asset_count; i++)
        if (strcmp(embedded_assets[i].name, name) == 0)
            return &embedded_assets[i];
    return NULL;
}

/* An embedded file, by its name in a folder of web/ (dir "js": the
 * dashboard's script modules) or at the top (dir NULL), with its ETag (a
 * matching If-None-Match gets 304) and, for HTML, a Content-Security-Policy
 * that allows no inline script: the dashboard renders uploaded names as
 * text, and the policy is the second wall should that ever slip. */
enum MHD_Result handle_asset(struct MHD_Connection *c, const char *dir, const char *name)
{
    char path[256];
    const embedded_asset *a = NULL;
    if (*name && !strchr(name, '/') &&
        (size_t)snprintf(path, sizeof path, "%s%s%s", dir ? dir : "", dir ? "/" : "", name) <
            sizeof path)
        a = asset_find(path);
    if (!a)
        return reply_error(c, 404, "not_found", "no asset %s%s%s", dir ? dir : "",
                           dir ? "/" : "", name);
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
    return queue_response(c, fresh ? 304 : 200, r, fresh ? 0 : a->len, a->ctype, false);
}

/* 200 when the database answers a query, else 503; either way it says
 * which backend the store uses ("database": "sqlite" or "postgresql"). */
enum MHD_Result handle_health(server *srv, struct MHD_Connection *c)
{
    const char *backend = store_backend_name(srv->st);
    if (!store_ping(srv->st))
        return reply_error(c, 503, "store_unavailable", "the %s database does not answer",
                           backend);
    json_t *doc = json_pack("{s:s, s:s, s:s}", "status", "ok", "database", backend,
                            "database_status", "up");
    /* the grouping rules in force, and why the last reload kept them */
    grouping_watch_status gs;
    grouping_watch_get(srv->grouping, &gs);
    json_object_set_new(
        doc, "grouping_rules",
        gs.configured
            ? json_pack("{s:s, s:I, s:s, s:I, s:I, s:I, s:o}", "file", gs.path, "rules",
                        (json_int_t)gs.rules, "digest", gs.digest, "loaded_at",
                        (json_int_t)gs.loaded_at, "reloads", (json_int_t)gs.reloads,
                        "failed_reloads", (json_int_t)gs.failed_reloads, "error",
                        gs.error[0] ? json_string(gs.error) : json_null())
            : json_null());
    return reply_json(c, 200, doc);
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

/* The Prometheus exposition: the counters of metrics.c and the gauges read
 * now (store rows, index cache, requests in flight, RSS). */
enum MHD_Result handle_metrics(server *srv, struct MHD_Connection *c)
{
    metrics_gauges g = {.images = -1, .image_blobs = -1, .crashes = -1, .chunks = -1};
    symd_err err = {0};
    if (store_counts(srv->st, &g.images, &g.image_blobs, &g.crashes, &err) != SYMD_OK)
        g.images = g.image_blobs = g.crashes = -1; /* a scrape still answers */
    if (store_chunk_stats(srv->st, &g.chunks, &g.chunk_bytes, &err) != SYMD_OK)
        g.chunks = -1;
    g.chunk_budget = srv->cfg->chunk_budget;
    store_cache_stats cs;
    store_cache_stats_get(srv->st, &cs);
    g.cache_bytes = cs.bytes;
    g.cache_entries = cs.entries;
    g.cache_hits = cs.hits;
    g.cache_misses = cs.misses;
    g.in_flight = atomic_load(&srv->in_flight);
    g.inflight_bytes = atomic_load(&srv->pool.held);
    g.inflight_max = srv->pool.max;
    pthread_mutex_lock(&srv->admit.mu);
    g.admission_waiting = srv->admit.waiting;
    g.admission_admitted = srv->admit.admitted_total;
    g.admission_refused = srv->admit.refused_total;
    pthread_mutex_unlock(&srv->admit.mu);
    g.rss_bytes = rss_bytes();
    grouping_watch_status gs;
    grouping_watch_get(srv->grouping, &gs);
    g.grouping_configured = gs.configured;
    g.grouping_error = gs.error[0] != 0;
    g.grouping_rules = gs.rules;
    g.grouping_failed_reloads = gs.failed_reloads;
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
    return reply_bytes(c, 200, data, len, "text/plain; version=0.0.4; charset=utf-8");
}

/* Crash retention, end to end and in-process.
 *
 * --max-crashes: a server pruning every second keeps exactly the newest N
 * of more posted crashes of several groups; every listing that reads the
 * store's counters (groups and their trend, one group's spread, the trend
 * of all, of a kind and of a group, the missing images, /metrics) agrees
 * with a recount of the crashes the listing still holds; DELETE moves the
 * same counters. --keep-days: an age cannot be waited for, so the old
 * crashes come from a database an older release wrote (schema 2, crashes
 * 40 and 10 days old), which the server migrates (counters built from the
 * rows) and then prunes to the last 30 days, over HTTP and in-process
 * through retention_start; store_prune_crashes' cut-off, batches and both
 * limits together are tested on the store itself. A large prune under
 * concurrent posts, reads and deletes answers every request (no 5xx). */
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../server/retention.h"
#include "../store/store.h"
#include "../util/hex.h"
#include "harness.h"
#include "schema_v2.h"
#include "test.h"

/* ---- reports ------------------------------------------------------------ */

/* The app images of the groups: one UUID per group, so the missing list
 * says per group what its crashes need. */
static const char *const GROUP_UUID[] = {
    "aaaa000155553144a17c64a339ede13a", "bbbb000255553144a17c64a339ede13a",
    "cccc000355553144a17c64a339ede13a", "dddd000455553144a17c64a339ede13a",
};

/* A text .crash of the app RetApp whose crashed frame names fn (the
 * signature), of app version ver, on device hw and OS os, needing the app
 * image of group g. */
static char *crash_text(int n, const char *fn, int g, const char *ver, const char *hw,
                        const char *os)
{
    char uuid[33];
    size_t o = 0;
    for (const char *p = GROUP_UUID[g]; *p; p++)
        if (*p != ' ')
            uuid[o++] = *p;
    uuid[o] = 0;
    char *t = NULL;
    if (asprintf(&t,
                 "Incident Identifier: 0000%04X-1111-2222-3333-444455556666\n"
                 "Hardware Model:      %s\n"
                 "Process:             RetApp [42]\n"
                 "Path:                /private/var/containers/Bundle/Application/0C5D8B4A/"
                 "RetApp.app/RetApp\n"
                 "Identifier:          org.symd.retapp\n"
                 "Version:             %s\n"
                 "Code Type:           ARM-64 (Native)\n"
                 "OS Version:          %s\n"
                 "Report Version:      104\n"
                 "\n"
                 "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n"
                 "Triggered by Thread:  0\n"
                 "\n"
                 "Thread 0 Crashed:\n"
                 "0   RetApp                        \t0x0000000104a389f8 %s + 24\n"
                 "1   RetApp                        \t0x0000000104a38b04 main + 40\n"
                 "\n"
                 "Binary Images:\n"
                 "0x104a38000 - 0x104a3bfff RetApp arm64  <%s> /private/var/containers/Bundle/"
                 "Application/0C5D8B4A/RetApp.app/RetApp\n",
                 n & 0xffff, hw, ver, os, fn, uuid) < 0)
        return NULL;
    return t;
}

/* The UUID of group g as the API writes it. */
static void group_uuid(int g, char out[37])
{
    uint8_t u[16];
    size_t o = 0;
    for (const char *p = GROUP_UUID[g]; *p && o < 16;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        int hi = hex_digit(p[0]), lo = hex_digit(p[1]);
        u[o++] = (uint8_t)(hi << 4 | lo);
        p += 2;
    }
    uuid_format(u, out);
}

/* ---- HTTP ---------------------------------------------------------------- */

static json_t *req(int port, const char *method, const char *path, const char *body,
                   int *status)
{
    http_resp r;
    *status = 0;
    if (!http_do(port, method, path, NULL, body, body ? strlen(body) : 0, &r))
        return NULL;
    *status = r.status;
    json_t *j = r.body && r.len ? json_loads(r.body, 0, NULL) : NULL;
    http_resp_free(&r);
    return j;
}

static void url_encode(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = 0;
}

/* Posts report n: its id, 0 when not stored. */
static int64_t post_crash(int port, int n, const char *fn, int g, const char *ver,
                          const char *hw, const char *os)
{
    char *t = crash_text(n, fn, g, ver, hw, os);
    int st;
    json_t *j = req(port, "POST", "/v1/crashes", t, &st);
    free(t);
    int64_t id = st == 201 ? json_integer_value(json_object_get(j, "id")) : 0;
    CHECK(id > 0, "POST crash %d: %d", n, st);
    json_decref(j);
    return id;
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int64_t jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* Every stored crash, newest first, read page by page (limit per page);
 * NULL when a page fails. */
static json_t *all_crashes(int port, int limit)
{
    json_t *all = json_array();
    char cursor[32] = "";
    for (int pages = 0; pages < 1000; pages++) {
        char path[128];
        snprintf(path, sizeof path, "/v1/crashes?limit=%d%s%s", limit, cursor[0] ? "&cursor=" : "",
                 cursor);
        int st;
        json_t *j = req(port, "GET", path, NULL, &st);
        if (st != 200 || !json_is_array(json_object_get(j, "crashes"))) {
            json_decref(j);
            json_decref(all);
            return NULL;
        }
        json_array_extend(all, json_object_get(j, "crashes"));
        const char *next = json_string_value(json_object_get(j, "next_cursor"));
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        json_decref(j);
        if (!next)
            return all;
    }
    json_decref(all);
    return NULL;
}

static long long metric(int port, const char *name)
{
    http_resp r;
    long long v = -1;
    if (http_do(port, "GET", "/metrics", NULL, NULL, 0, &r)) {
        char key[96];
        snprintf(key, sizeof key, "\n%s ", name);
        const char *p = r.status == 200 ? strstr(r.body, key) : NULL;
        if (p)
            v = atoll(p + strlen(key));
        http_resp_free(&r);
    }
    return v;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits until the server holds exactly want crashes (retention has run);
 * false after timeout_ms. */
static bool wait_count(int port, size_t want, long timeout_ms)
{
    for (long t = 0; t <= timeout_ms; t += 100) {
        json_t *all = all_crashes(port, 1000);
        size_t n = json_array_size(all);
        json_decref(all);
        if (all && n == want)
            return true;
        sleep_ms(100);
    }
    return false;
}

/* Waits until the server has refiled every crash of an older release's
 * store (its crash_regroup list, SQLite file db, is empty): the counters
 * are compared with the listing only once crashes no longer move between
 * groups. */
static bool wait_refiled(const char *db, long timeout_ms)
{
    for (long t = 0; t <= timeout_ms; t += 100) {
        if (db_query_int(db, "SELECT count(*) FROM crash_regroup") == 0)
            return true;
        sleep_ms(100);
    }
    return false;
}

/* ---- the counters against a recount ------------------------------------- */

/* What one (kind, signature) group holds, recounted from the listing. */
typedef struct {
    char kind[16], sig[64];
    int64_t count, first_seen, last_seen, example_id;
    char example_version[64], example_process[64];
    json_t *dims[3]; /* value -> count: app_version, os_version, hardware_model */
} recount;

static const char *const DIM_FIELD[3] = {"app_version", "os_version", "hardware_model"};
static const char *const DIM_SPREAD[3] = {"app_versions", "os_versions", "hardware_models"};

/* The app UUID of a listed crash: needs_upload's (no image is uploaded in
 * these tests), or uuid_of's when given. */
typedef const char *(*uuid_fn)(int64_t id);

/* Every listing that reads the store's counters against a recount of the
 * crashes GET /v1/crashes lists, which must be exactly ids[0..n) (any
 * order). label says where in the test. */
static void check_counters(int port, const char *label, const int64_t *ids, size_t n,
                           uuid_fn uuid_of)
{
    json_t *all = all_crashes(port, 1000), *paged = all_crashes(port, 7);
    CHECK(all && paged, "[%s] listing the crashes failed", label);
    if (!all || !paged) {
        json_decref(all);
        json_decref(paged);
        return;
    }
    CHECK(json_equal(all, paged), "[%s] pages of 7 list other crashes than one page", label);
    json_decref(paged);
    size_t total = json_array_size(all);
    /* exactly the expected crashes, newest first */
    CHECK(total == n, "[%s] %zu crashes listed, expected %zu", label, total, n);
    int64_t prev = INT64_MAX;
    for (size_t i = 0; i < total; i++) {
        int64_t id = jint(json_array_get(all, i), "id");
        CHECK(id < prev, "[%s] listing not newest first at %zu", label, i);
        prev = id;
        bool expected = false;
        for (size_t k = 0; k < n && !expected; k++)
            expected = ids[k] == id;
        CHECK(expected, "[%s] crash %lld listed, not expected", label, (long long)id);
    }
    for (size_t k = 0; k < n; k++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)ids[k]);
        int st;
        json_t *j = req(port, "GET", path, NULL, &st);
        CHECK(st == 200 && jint(j, "id") == ids[k], "[%s] GET %s: %d", label, path, st);
        json_decref(j);
    }

    /* the recount */
    recount g[16];
    size_t ng = 0;
    json_t *by_uuid = json_object(), *last_by_uuid = json_object(), *by_version = json_object();
    for (size_t i = 0; i < total; i++) {
        json_t *c = json_array_get(all, i);
        const char *kind = jstr(c, "kind"), *sig = jstr(c, "signature");
        recount *r = NULL;
        for (size_t k = 0; k < ng && !r; k++)
            if (strcmp(g[k].kind, kind) == 0 && strcmp(g[k].sig, sig) == 0)
                r = &g[k];
        if (!r && ng < 16) {
            r = &g[ng++];
            memset(r, 0, sizeof *r);
            snprintf(r->kind, sizeof r->kind, "%s", kind);
            snprintf(r->sig, sizeof r->sig, "%s", sig);
            r->first_seen = INT64_MAX;
            for (int d = 0; d < 3; d++)
                r->dims[d] = json_object();
        }
        if (!r)
            continue;
        int64_t id = jint(c, "id"), at = jint(c, "created_at");
        r->count++;
        if (at < r->first_seen)
            r->first_seen = at;
        if (at > r->last_seen)
            r->last_seen = at;
        if (id > r->example_id) {
            r->example_id = id;
            snprintf(r->example_version, sizeof r->example_version, "%s", jstr(c, "app_version"));
            snprintf(r->example_process, sizeof r->example_process, "%s", jstr(c, "process"));
        }
        for (int d = 0; d < 3; d++) {
            const char *v = json_string_value(json_object_get(c, DIM_FIELD[d]));
            if (v && *v)
                json_object_set_new(r->dims[d], v,
                                    json_integer(json_integer_value(json_object_get(r->dims[d], v)) + 1));
        }
        const char *v = json_string_value(json_object_get(c, "app_version"));
        if (v)
            json_object_set_new(by_version, v,
                                json_integer(json_integer_value(json_object_get(by_version, v)) + 1));
        const char *u = uuid_of ? uuid_of(id) : NULL;
        if (!u)
            u = json_string_value(json_object_get(json_object_get(c, "needs_upload"), "uuid"));
        CHECK(u, "[%s] crash %lld: no app UUID to count it under", label, (long long)id);
        if (u) {
            json_object_set_new(by_uuid, u,
                                json_integer(json_integer_value(json_object_get(by_uuid, u)) + 1));
            if (id > json_integer_value(json_object_get(last_by_uuid, u)))
                json_object_set_new(last_by_uuid, u, json_integer(id));
        }
    }

    /* groups (with their trend over the longest span there is) */
    int st;
    json_t *groups = req(port, "GET", "/v1/crashes/groups?limit=1000&trend=366", NULL, &st);
    json_t *ga = json_object_get(groups, "groups");
    CHECK(st == 200 && json_array_size(ga) == ng, "[%s] groups: %d, %zu groups, recounted %zu",
          label, st, json_array_size(ga), ng);
    for (size_t i = 0; i < json_array_size(ga); i++) {
        json_t *x = json_array_get(ga, i);
        recount *r = NULL;
        for (size_t k = 0; k < ng && !r; k++)
            if (strcmp(g[k].kind, jstr(x, "kind")) == 0 && strcmp(g[k].sig, jstr(x, "signature")) == 0)
                r = &g[k];
        CHECK(r, "[%s] group %s/%s has no crash left", label, jstr(x, "kind"), jstr(x, "signature"));
        if (!r)
            continue;
        CHECK(jint(x, "count") == r->count && jint(x, "first_seen") == r->first_seen &&
                  jint(x, "last_seen") == r->last_seen && jint(x, "example_id") == r->example_id &&
                  strcmp(jstr(x, "app_version"), r->example_version) == 0 &&
                  strcmp(jstr(x, "process"), r->example_process) == 0,
              "[%s] group %s: count %lld first %lld last %lld example %lld version '%s'; "
              "recounted %lld %lld %lld %lld '%s'",
              label, r->sig, (long long)jint(x, "count"), (long long)jint(x, "first_seen"),
              (long long)jint(x, "last_seen"), (long long)jint(x, "example_id"),
              jstr(x, "app_version"), (long long)r->count, (long long)r->first_seen,
              (long long)r->last_seen, (long long)r->example_id, r->example_version);
        json_t *days = json_object_get(json_object_get(x, "trend"), "days");
        int64_t sum = 0;
        for (size_t d = 0; d < json_array_size(days); d++)
            sum += json_integer_value(json_array_get(days, d));
        CHECK(json_array_size(days) == 366 && sum == r->count,
              "[%s] group %s: ?trend=366 sums to %lld over %zu days, count %lld", label, r->sig,
              (long long)sum, json_array_size(days), (long long)r->count);
        /* the group's own route: its count, trend and spreads */
        char sig[200], path[400];
        url_encode(r->sig, sig, sizeof sig);
        snprintf(path, sizeof path, "/v1/crashes/group?kind=%s&signature=%s&days=366", r->kind,
                 sig);
        json_t *one = req(port, "GET", path, NULL, &st);
        CHECK(st == 200 && jint(one, "count") == r->count && jint(one, "example_id") == r->example_id,
              "[%s] GET %s: %d count %lld, recounted %lld", label, path, st,
              (long long)jint(one, "count"), (long long)r->count);
        days = json_object_get(json_object_get(one, "trend"), "days");
        sum = 0;
        for (size_t d = 0; d < json_array_size(days); d++)
            sum += json_integer_value(json_array_get(days, d));
        CHECK(sum == r->count, "[%s] %s: trend sums to %lld, count %lld", label, path,
              (long long)sum, (long long)r->count);
        for (int d = 0; d < 3; d++) {
            json_t *sp = json_object_get(one, DIM_SPREAD[d]), *got = json_object();
            for (size_t k = 0; k < json_array_size(sp); k++) {
                json_t *e = json_array_get(sp, k);
                json_object_set_new(got, jstr(e, "value"), json_integer(jint(e, "count")));
            }
            CHECK(json_equal(got, r->dims[d]), "[%s] %s: %s spread differs from the recount",
                  label, path, DIM_SPREAD[d]);
            json_decref(got);
        }
        json_decref(one);
        /* the group's trend route */
        snprintf(path, sizeof path, "/v1/crashes/trend?kind=%s&signature=%s&days=366", r->kind,
                 sig);
        json_t *tr = req(port, "GET", path, NULL, &st);
        days = json_object_get(tr, "days");
        sum = 0;
        for (size_t d = 0; d < json_array_size(days); d++)
            sum += json_integer_value(json_array_get(days, d));
        CHECK(st == 200 && sum == r->count, "[%s] GET %s: %d, sums to %lld, count %lld", label,
              path, st, (long long)sum, (long long)r->count);
        json_decref(tr);
    }
    json_decref(groups);

    /* the trend of everything and of the kind */
    static const char *const trends[] = {"/v1/crashes/trend?days=366",
                                         "/v1/crashes/trend?days=366&kind=crash"};
    for (size_t t = 0; t < 2; t++) {
        json_t *tr = req(port, "GET", trends[t], NULL, &st);
        json_t *days = json_object_get(tr, "days");
        int64_t sum = 0;
        for (size_t d = 0; d < json_array_size(days); d++)
            sum += json_integer_value(json_array_get(days, d));
        CHECK(st == 200 && sum == (int64_t)total, "[%s] GET %s: %d, sums to %lld of %zu", label,
              trends[t], st, (long long)sum, total);
        json_decref(tr);
    }

    /* listings and groups by app version (the dimension counters) */
    const char *ver;
    json_t *cnt;
    json_object_foreach(by_version, ver, cnt) {
        char v[128], path[256];
        url_encode(ver, v, sizeof v);
        snprintf(path, sizeof path, "/v1/crashes?limit=1000&app_version=%s", v);
        json_t *l = req(port, "GET", path, NULL, &st);
        CHECK(st == 200 && (json_int_t)json_array_size(json_object_get(l, "crashes")) ==
                               json_integer_value(cnt),
              "[%s] GET %s: %d, %zu crashes, recounted %lld", label, path, st,
              json_array_size(json_object_get(l, "crashes")), (long long)json_integer_value(cnt));
        json_decref(l);
        /* each group's sparkline counts what the filter keeps, as its count does */
        snprintf(path, sizeof path, "/v1/crashes/groups?limit=1000&trend=366&app_version=%s", v);
        l = req(port, "GET", path, NULL, &st);
        int64_t sum = 0;
        json_t *la = json_object_get(l, "groups");
        for (size_t i = 0; i < json_array_size(la); i++) {
            json_t *x = json_array_get(la, i);
            json_t *days = json_object_get(json_object_get(x, "trend"), "days");
            int64_t spark = 0;
            for (size_t d = 0; d < json_array_size(days); d++)
                spark += json_integer_value(json_array_get(days, d));
            CHECK(spark == jint(x, "count"), "[%s] GET %s: group %s's trend sums to %lld, its "
                  "count under the filter %lld", label, path, jstr(x, "signature"),
                  (long long)spark, (long long)jint(x, "count"));
            sum += jint(x, "count");
        }
        CHECK(st == 200 && sum == json_integer_value(cnt),
              "[%s] GET %s: %d, counts sum to %lld, recounted %lld", label, path, st,
              (long long)sum, (long long)json_integer_value(cnt));
        json_decref(l);
    }

    /* the missing images: one per app UUID still needed, counted */
    json_t *miss = req(port, "GET", "/v1/missing?limit=1000", NULL, &st);
    json_t *ma = json_object_get(miss, "missing");
    CHECK(st == 200 && json_array_size(ma) == json_object_size(by_uuid),
          "[%s] missing: %d, %zu images, recounted %zu", label, st, json_array_size(ma),
          json_object_size(by_uuid));
    for (size_t i = 0; i < json_array_size(ma); i++) {
        json_t *m = json_array_get(ma, i);
        const char *u = jstr(m, "uuid");
        CHECK(jint(m, "crashes") == json_integer_value(json_object_get(by_uuid, u)) &&
                  jint(m, "last_crash_id") == json_integer_value(json_object_get(last_by_uuid, u)),
              "[%s] missing %s: %lld crashes, last %lld; recounted %lld, last %lld", label, u,
              (long long)jint(m, "crashes"), (long long)jint(m, "last_crash_id"),
              (long long)json_integer_value(json_object_get(by_uuid, u)),
              (long long)json_integer_value(json_object_get(last_by_uuid, u)));
    }
    json_decref(miss);
    long long gauge = metric(port, "symd_crashes");
    CHECK(gauge == (long long)total, "[%s] /metrics symd_crashes %lld, %zu listed", label, gauge,
          total);

    for (size_t k = 0; k < ng; k++)
        for (int d = 0; d < 3; d++)
            json_decref(g[k].dims[d]);
    json_decref(by_uuid);
    json_decref(last_by_uuid);
    json_decref(by_version);
    json_decref(all);
}

static void expect_gone(int port, const char *label, const int64_t *ids, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)ids[k]);
        int st;
        json_t *j = req(port, "GET", path, NULL, &st);
        CHECK(st == 404 && strcmp(jstr(json_object_get(j, "error"), "code"), "not_found") == 0,
              "[%s] GET %s: %d, expected 404 (pruned)", label, path, st);
        json_decref(j);
    }
}

static const char *const SIGS[] = {"ret_alpha", "ret_beta", "ret_gamma", "ret_delta"};
static const char *const VERSIONS[] = {"1.0 (1)", "1.1 (2)", "2.0 (3)"};
static const char *const DEVICES[] = {"iPhone14,2", "iPad13,1"};
static const char *const OSES[] = {"iPhone OS 17.1 (21B74)", "iPhone OS 16.6 (20G75)"};

/* Crash i of the --max-crashes run: the oldest alternate alpha and beta,
 * the newest beta and gamma. */
static int group_of(int i, int total)
{
    return i < total / 2 ? i % 2 : 1 + (i % 2);
}

/* ---- --max-crashes ------------------------------------------------------- */

TEST(e2e_retention_max_crashes_keeps_the_newest_and_counters_follow)
{
    enum { N = 20, TOTAL = 50 };
    char db[512];
    snprintf(db, sizeof db, "%s/retention-max.db", test_tmpdir());
    const char *extra[] = {"--max-crashes", "20", "--prune-every", "1", NULL};
    server_proc s;
    if (!server_start(&s, db, extra)) {
        CHECK(false, "server with --max-crashes did not start");
        return;
    }
    int64_t ids[TOTAL + 32];
    int gof[TOTAL + 32];
    for (int i = 0; i < TOTAL; i++) {
        gof[i] = group_of(i, TOTAL);
        ids[i] = post_crash(s.port, i, SIGS[gof[i]], gof[i], VERSIONS[i % 3], DEVICES[i % 2],
                            OSES[(i / 2) % 2]);
    }
    /* the oldest go, the newest N stay */
    CHECK(wait_count(s.port, N, 15000), "retention did not bring %d crashes down to %d", TOTAL,
          N);
    expect_gone(s.port, "pruned", ids, TOTAL - N);
    check_counters(s.port, "after pruning", ids + TOTAL - N, N, NULL);
    /* alpha had only old crashes: its group and its image are gone */
    int st;
    json_t *j = req(s.port, "GET", "/v1/crashes/group?kind=crash&signature=ret_alpha", NULL, &st);
    CHECK(st == 404, "the pruned group ret_alpha: %d", st);
    json_decref(j);
    char ua[37];
    group_uuid(0, ua);
    j = req(s.port, "GET", "/v1/missing?limit=1000", NULL, &st);
    CHECK(st == 200, "GET /v1/missing: %d", st);
    for (size_t i = 0; i < json_array_size(json_object_get(j, "missing")); i++)
        CHECK(strcmp(jstr(json_array_get(json_object_get(j, "missing"), i), "uuid"), ua) != 0,
              "the image only pruned crashes needed is still missing");
    json_decref(j);

    /* DELETE: 204, then 404; the counters follow */
    int64_t keep[TOTAL + 32];
    size_t nkeep = 0;
    for (int i = TOTAL - N; i < TOTAL; i++)
        keep[nkeep++] = ids[i];
    int64_t newest_beta = 0;
    for (int i = TOTAL - 1; i >= TOTAL - N && !newest_beta; i--)
        if (gof[i] == 1)
            newest_beta = ids[i];
    char path[64];
    snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)newest_beta);
    http_resp r;
    CHECK(http_do(s.port, "DELETE", path, NULL, NULL, 0, &r) && r.status == 204 && r.len == 0,
          "DELETE %s: %d", path, r.status);
    http_resp_free(&r);
    CHECK(http_do(s.port, "DELETE", path, NULL, NULL, 0, &r) && r.status == 404 &&
              strcmp(error_code(&r), "not_found") == 0,
          "DELETE %s again: %d", path, r.status);
    http_resp_free(&r);
    for (size_t k = 0; k < nkeep; k++)
        if (keep[k] == newest_beta)
            keep[k] = keep[--nkeep];
    expect_gone(s.port, "deleted", &newest_beta, 1);
    check_counters(s.port, "after deleting the newest of a group", keep, nkeep, NULL);
    /* every crash of gamma: the group and its image go */
    for (int i = TOTAL - N; i < TOTAL; i++) {
        if (gof[i] != 2)
            continue;
        snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)ids[i]);
        CHECK(http_do(s.port, "DELETE", path, NULL, NULL, 0, &r) && r.status == 204,
              "DELETE %s: %d", path, r.status);
        http_resp_free(&r);
        for (size_t k = 0; k < nkeep; k++)
            if (keep[k] == ids[i])
                keep[k] = keep[--nkeep];
    }
    j = req(s.port, "GET", "/v1/crashes/group?kind=crash&signature=ret_gamma", NULL, &st);
    CHECK(st == 404, "the emptied group ret_gamma: %d", st);
    json_decref(j);
    check_counters(s.port, "after deleting a whole group", keep, nkeep, NULL);

    /* under the limit, nothing more goes, however often retention runs */
    for (int i = 0; i < 3; i++) {
        int n = TOTAL + i;
        gof[n] = 3;
        keep[nkeep++] = ids[n] = post_crash(s.port, n, SIGS[3], 3, VERSIONS[i % 3],
                                            DEVICES[i % 2], OSES[0]);
    }
    sleep_ms(2500);
    check_counters(s.port, "under the limit, 2.5 s later", keep, nkeep, NULL);
    /* over it again: exactly the oldest surplus goes */
    size_t before = nkeep;
    for (int i = 3; i < 3 + N; i++) {
        int n = TOTAL + i;
        gof[n] = 3;
        keep[nkeep++] = ids[n] = post_crash(s.port, n, SIGS[3], 3, VERSIONS[i % 3],
                                            DEVICES[i % 2], OSES[1]);
    }
    CHECK(wait_count(s.port, N, 15000), "retention did not prune back to %d", N);
    /* keep is oldest first up to before; the surplus is its head */
    int64_t sorted[64];
    size_t ns = 0;
    for (size_t k = 0; k < nkeep; k++)
        sorted[ns++] = keep[k];
    for (size_t a = 0; a < ns; a++)
        for (size_t b = a + 1; b < ns; b++)
            if (sorted[b] < sorted[a]) {
                int64_t t = sorted[a];
                sorted[a] = sorted[b];
                sorted[b] = t;
            }
    size_t surplus = ns > N ? ns - N : 0;
    CHECK(before < N && ns > N, "the second round did not pass the limit (%zu, %zu)", before, ns);
    expect_gone(s.port, "pruned again", sorted, surplus);
    check_counters(s.port, "after the second prune", sorted + surplus, ns - surplus, NULL);
    CHECK(server_stop(&s), "no clean exit on SIGTERM");
}

/* ---- --keep-days, on crashes an older release stored days ago ------------ */

#define DAY_MS 86400000LL

/* A schema-2 database (what the last release wrote) with crashes created
 * ages_days[i] days ago, each of group groups[i]; their originals are the
 * reports crash_text writes, so the server reads them back whole. */
static bool make_old_db(const char *path, const int *ages_days, const int *groups, size_t n)
{
    unlink(path);
    sqlite3 *h;
    if (sqlite3_open(path, &h) != SQLITE_OK)
        return false;
    bool ok = sqlite3_exec(h, SCHEMA_V2_SQL, NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_stmt *c = NULL, *im = NULL;
    ok = ok &&
         sqlite3_prepare_v2(h,
                            "INSERT INTO crashes(created_at, format, process, bundle_id, "
                            "app_version, os_version, hardware_model, incident_id, "
                            "exception_type, signature, original, result, result_at) VALUES "
                            "(?1, 'crash', 'RetApp', 'org.symd.retapp', ?2, ?3, ?4, ?5, "
                            "'EXC_BAD_ACCESS', ?6, ?7, '{}', ?1)",
                            -1, &c, NULL) == SQLITE_OK &&
         sqlite3_prepare_v2(h,
                            "INSERT INTO crash_images(crash_id, uuid, arch, name) VALUES (?1, "
                            "?2, 'arm64', 'RetApp')",
                            -1, &im, NULL) == SQLITE_OK;
    int64_t now = store_now_ms();
    for (size_t i = 0; ok && i < n; i++) {
        int g = groups[i];
        const char *ver = VERSIONS[i % 3], *hw = DEVICES[i % 2], *os = OSES[i % 2];
        char *text = crash_text((int)i + 1000, SIGS[g], g, ver, hw, os);
        char incident[64];
        snprintf(incident, sizeof incident, "0000%04X-1111-2222-3333-444455556666",
                 (unsigned)((i + 1000) & 0xffff));
        /* a second apart, all in the past, so times grow with ids */
        sqlite3_bind_int64(c, 1, now - (int64_t)ages_days[i] * DAY_MS - (int64_t)(n - i) * 1000);
        sqlite3_bind_text(c, 2, ver, -1, SQLITE_STATIC);
        sqlite3_bind_text(c, 3, os, -1, SQLITE_STATIC);
        sqlite3_bind_text(c, 4, hw, -1, SQLITE_STATIC);
        sqlite3_bind_text(c, 5, incident, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(c, 6, SIGS[g], -1, SQLITE_STATIC);
        sqlite3_bind_blob(c, 7, text, (int)strlen(text), SQLITE_TRANSIENT);
        ok = sqlite3_step(c) == SQLITE_DONE;
        sqlite3_reset(c);
        free(text);
        uint8_t u[16];
        char us[37];
        group_uuid(g, us);
        uuid_parse(us, u);
        sqlite3_bind_int64(im, 1, sqlite3_last_insert_rowid(h));
        sqlite3_bind_blob(im, 2, u, 16, SQLITE_TRANSIENT);
        ok = ok && sqlite3_step(im) == SQLITE_DONE;
        sqlite3_reset(im);
    }
    sqlite3_finalize(c);
    sqlite3_finalize(im);
    sqlite3_close(h);
    return ok;
}

/* 6 crashes 40 days old, 4 of 10 days, 3 of today; ids 1.. in that order. */
static const int OLD_AGES[] = {40, 40, 40, 40, 40, 40, 10, 10, 10, 10, 0, 0, 0};
static const int OLD_GROUPS[] = {0, 0, 1, 0, 1, 2, 1, 1, 2, 2, 2, 1, 2};
#define NOLD (sizeof OLD_AGES / sizeof OLD_AGES[0])

/* Migrated crashes carry no app image of their own (schema 2 did not say
 * which image is the app's): their UUID is the group's. */
static const char *old_uuid_of(int64_t id)
{
    static char u[8][37];
    static int k;
    if (id < 1 || id > (int64_t)NOLD)
        return NULL;
    k = (k + 1) % 8;
    group_uuid(OLD_GROUPS[id - 1], u[k]);
    return u[k];
}

TEST(e2e_retention_keep_days_prunes_what_an_older_release_stored)
{
    if (skip_on_pg("the older release's database is a SQLite file"))
        return;
    char db[512];
    snprintf(db, sizeof db, "%s/retention-days.db", test_tmpdir());
    CHECK(make_old_db(db, OLD_AGES, OLD_GROUPS, NOLD), "building the schema-2 database");
    const char *extra[] = {"--keep-days", "30", "--prune-every", "1", NULL};
    server_proc s;
    if (!server_start(&s, db, extra)) {
        CHECK(false, "server with --keep-days did not start");
        return;
    }
    int64_t ids[NOLD];
    for (size_t i = 0; i < NOLD; i++)
        ids[i] = (int64_t)i + 1;
    CHECK(wait_count(s.port, NOLD - 6, 15000), "--keep-days 30 did not prune the 6 old crashes");
    CHECK(wait_refiled(db, 15000), "the older release's crashes were not refiled");
    expect_gone(s.port, "older than 30 days", ids, 6);
    check_counters(s.port, "--keep-days 30", ids + 6, NOLD - 6, old_uuid_of);
    /* a new crash is young: it stays */
    int64_t more[NOLD];
    memcpy(more, ids + 6, sizeof(int64_t) * (NOLD - 6));
    more[NOLD - 6] = post_crash(s.port, 77, SIGS[1], 1, VERSIONS[0], DEVICES[0], OSES[0]);
    sleep_ms(1500);
    check_counters(s.port, "--keep-days 30, a new crash", more, NOLD - 5, old_uuid_of);
    CHECK(server_stop(&s), "no clean exit on SIGTERM");
    /* restarted with a shorter age: the 10-day-old ones go too */
    const char *extra2[] = {"--keep-days", "5", "--max-crashes", "1000", NULL};
    if (!server_start(&s, db, extra2)) {
        CHECK(false, "restart with --keep-days 5 did not start");
        return;
    }
    CHECK(wait_count(s.port, 4, 15000), "--keep-days 5 did not prune the 10-day-old crashes");
    CHECK(wait_refiled(db, 15000), "the older release's crashes were not refiled");
    expect_gone(s.port, "older than 5 days", ids, 10);
    check_counters(s.port, "--keep-days 5", more + 4, 4, old_uuid_of);
    CHECK(server_stop(&s), "no clean exit on SIGTERM");
}

/* Whether the database db has table name (column NULL) or a column of it. */
static bool db_has(const char *db, const char *table, const char *column)
{
    char sql[200];
    if (test_pg())
        snprintf(sql, sizeof sql,
                 column ? "SELECT count(*) FROM information_schema.columns WHERE table_schema "
                          "= current_schema() AND table_name = '%s' AND column_name = '%s'"
                        : "SELECT count(*) FROM information_schema.tables WHERE table_schema "
                          "= current_schema() AND table_name = '%s'",
                 table, column ? column : "");
    else
        snprintf(sql, sizeof sql,
                 column ? "SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%s'"
                        : "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'",
                 table, column ? column : "");
    bool yes = db_query_int(db, sql) > 0;
    return yes;
}

/* The counters of a database file against its crashes (SQL over the file,
 * as test_store.c's counters test does); 0 rows off each. How a crash
 * lists the images it needs has had two forms (a crash_refs table; a refs
 * column of ids, ",3,17,", beside a crash_originals table): the checks of
 * the form found run. */
static void check_db_counters(const char *db, const char *label)
{
    CHECK(db_query_int(db, "SELECT count(*) FROM crashes") >= 0, "[%s] cannot read %s", label,
          db);
    static const char *const common[] = {
        "SELECT count(*) FROM (SELECT kind, signature, count(*) n, min(created_at) f, "
        "max(created_at) l, max(id) e FROM crashes GROUP BY 1, 2) x FULL JOIN crash_groups g "
        "USING (kind, signature) WHERE g.count IS NOT x.n OR g.first_seen IS NOT x.f OR "
        "g.last_seen IS NOT x.l OR g.example_id IS NOT x.e",
        "SELECT count(*) FROM (SELECT kind, signature, created_at / 86400000 AS day, count(*) n "
        "FROM crashes GROUP BY 1, 2, 3) x FULL JOIN (SELECT * FROM crash_group_days WHERE "
        "count <> 0) d USING (kind, signature, day) WHERE d.count IS NOT x.n",
        "SELECT count(*) FROM (SELECT kind, created_at / 86400000 AS day, count(*) n FROM crashes "
        "GROUP BY 1, 2) x FULL JOIN (SELECT * FROM crash_days WHERE count <> 0) d USING (kind, "
        "day) WHERE d.count IS NOT x.n",
        "SELECT count(*) FROM (SELECT kind, signature, 0 dim, app_version value, count(*) n "
        "FROM crashes WHERE app_version <> '' GROUP BY 1, 2, 4 UNION ALL SELECT kind, "
        "signature, 1, os_version, count(*) FROM crashes WHERE os_version <> '' GROUP BY 1, 2, "
        "4 UNION ALL SELECT kind, signature, 2, hardware_model, count(*) FROM crashes WHERE "
        "hardware_model <> '' GROUP BY 1, 2, 4) x FULL JOIN (SELECT * FROM crash_group_dims "
        "WHERE count <> 0) d USING (kind, signature, dim, value) WHERE d.count IS NOT x.n",
        "SELECT (SELECT count(*) FROM crash_group_days WHERE count < 0) + (SELECT count(*) FROM "
        "crash_days WHERE count < 0) + (SELECT count(*) FROM crash_group_dims WHERE count < 0) "
        "+ (SELECT count(*) FROM crash_image_refs WHERE crashes < 0)",
    };
    static const char *const refs_table[] = {
        "SELECT count(*) FROM crash_image_refs r WHERE r.crashes <> (SELECT count(*) FROM "
        "crash_refs c WHERE c.ref_id = r.id)",
        "SELECT count(*) FROM crash_refs c WHERE NOT EXISTS (SELECT 1 FROM crashes x WHERE "
        "x.id = c.crash_id)",
    };
    static const char *const refs_column[] = {
        "SELECT count(*) FROM crash_image_refs r WHERE r.crashes <> (SELECT count(*) FROM "
        "crashes c WHERE c.refs LIKE '%,' || r.id || ',%')",
    };
    static const char *const originals[] = {
        "SELECT (SELECT count(*) FROM crashes WHERE id NOT IN (SELECT id FROM crash_originals)) "
        "+ (SELECT count(*) FROM crash_originals WHERE id NOT IN (SELECT id FROM crashes))",
    };
    struct {
        const char *const *q;
        size_t n;
        bool on;
    } sets[] = {
        {common, sizeof common / sizeof common[0], true},
        {refs_table, sizeof refs_table / sizeof refs_table[0], db_has(db, "crash_refs", NULL)},
        {refs_column, sizeof refs_column / sizeof refs_column[0],
         !db_has(db, "crash_refs", NULL) && db_has(db, "crashes", "refs")},
        {originals, sizeof originals / sizeof originals[0], db_has(db, "crash_originals", NULL)},
    };
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++)
        for (size_t i = 0; sets[k].on && i < sets[k].n; i++) {
            /* PostgreSQL spells SQLite's "a IS NOT b" (NULL-safe) as
             * "a IS DISTINCT FROM b". */
            char sql[2048];
            const char *q = sets[k].q[i], *hit;
            size_t n = 0;
            while (test_pg() && (hit = strstr(q, " IS NOT ")) && n < sizeof sql - 200) {
                n += (size_t)snprintf(sql + n, sizeof sql - n, "%.*s IS DISTINCT FROM ",
                                      (int)(hit - q), q);
                q = hit + 8;
            }
            snprintf(sql + n, sizeof sql - n, "%s", q);
            long long bad = db_query_int(db, sql);
            CHECK(bad == 0, "[%s] counter check %zu.%zu: %lld rows differ", label, k, i, bad);
        }
}

static int64_t store_count(store *s)
{
    int64_t images, blobs, crashes = -1;
    symd_err err = {0};
    store_counts(s, &images, &blobs, &crashes, &err);
    return crashes;
}

/* retention_start itself, in-process: --keep-days 30 on the migrated
 * database, and a count limit beside it. */
TEST(store_retention_thread_prunes_by_age_and_count)
{
    if (skip_on_pg("builds the schema-2 SQLite file an older release wrote"))
        return;
    char db[512];
    snprintf(db, sizeof db, "%s/retention-thread.db", test_tmpdir());
    CHECK(make_old_db(db, OLD_AGES, OLD_GROUPS, NOLD), "building the schema-2 database");
    store *s = NULL;
    symd_err err = {0};
    CHECK(store_open(db, 2, 1 << 20, &s, &err) == SYMD_OK, "open (migrating): %s", err.msg);
    if (!s)
        return;
    CHECK(store_count(s) == (int64_t)NOLD, "migrated %lld crashes", (long long)store_count(s));
    /* nothing to prune: no thread */
    CHECK(retention_start(s, 0, 0, 1, 0, &err) == NULL, "retention without limits started");
    retention *r = retention_start(s, 30, 0, 1, 0, &err);
    CHECK(r, "retention_start: %s", err.msg);
    for (int t = 0; t < 100 && retention_pruned(r) < 6; t++)
        sleep_ms(50);
    CHECK(retention_pruned(r) == 6 && store_count(s) == (int64_t)NOLD - 6,
          "--keep-days 30: %llu pruned, %lld left", (unsigned long long)retention_pruned(r),
          (long long)store_count(s));
    store_crash c;
    CHECK(store_get_crash(s, 6, false, &c, &err) == SYMD_E_NOT_FOUND, "crash 6 (40 days) is gone");
    CHECK(store_get_crash(s, 7, false, &c, &err) == SYMD_OK, "crash 7 (10 days) stays: %s",
          err.msg);
    store_crash_free(&c);
    sleep_ms(1200); /* another pass: nothing more */
    CHECK(retention_pruned(r) == 6, "a second pass pruned %llu",
          (unsigned long long)retention_pruned(r));
    retention_stop(r);
    check_db_counters(db, "keep-days 30 in-process");
    /* the two limits together: age 5 days or beyond the newest 2 */
    r = retention_start(s, 5, 2, 1, 0, &err);
    CHECK(r, "retention_start: %s", err.msg);
    for (int t = 0; t < 100 && store_count(s) > 2; t++)
        sleep_ms(50);
    CHECK(store_count(s) == 2 && retention_pruned(r) == NOLD - 8,
          "age 5 days and 2 crashes: %lld left, %llu pruned", (long long)store_count(s),
          (unsigned long long)retention_pruned(r));
    CHECK(store_get_crash(s, (int64_t)NOLD, false, &c, &err) == SYMD_OK, "the newest stays");
    store_crash_free(&c);
    retention_stop(r);
    retention_stop(NULL);
    store_close(s);
    check_db_counters(db, "keep-days 5 and max 2 in-process");
}

/* store_prune_crashes' cut-off (the --keep-days path without the wait), in
 * batches, alone and beside a count limit. */
TEST(store_prune_crashes_by_cutoff_in_batches)
{
    char db[512];
    snprintf(db, sizeof db, "%s/prune-cutoff.db", test_tmpdir());
    store *s = NULL;
    symd_err err = {0};
    /* the file, or on PostgreSQL its database */
    CHECK(store_open(db_arg(db), 2, 1 << 20, &s, &err) == SYMD_OK, "open: %s", err.msg);
    if (!s)
        return;
    int64_t ids[30], cut[3] = {0};
    for (int i = 0; i < 30; i++) {
        if (i % 10 == 0 && i) { /* three generations, a few ms apart */
            sleep_ms(5);
            cut[i / 10 - 1] = store_now_ms();
            sleep_ms(5);
        }
        store_crash c = {.format = "crash", .kind = "crash", .signature = (char *)SIGS[i % 3],
                         .app_version = (char *)VERSIONS[i % 3], .os_version = (char *)OSES[0],
                         .hardware_model = (char *)DEVICES[i % 2], .process = "RetApp",
                         .original = (uint8_t *)"report", .original_len = 6};
        store_crash_image img = {.arch = "arm64", .name = "RetApp", .app = true};
        img.uuid[0] = (uint8_t)(i % 3 + 1);
        CHECK(store_put_crash(s, &c, &img, 1, &ids[i], &err) == SYMD_OK, "put: %s", err.msg);
    }
    /* nothing is older than the first crash */
    size_t n = 99;
    CHECK(store_prune_crashes(s, cut[0] - 60000, 0, 100, &n, &err) == SYMD_OK && n == 0,
          "a cut-off before every crash pruned %zu", n);
    CHECK(store_prune_crashes(s, 0, 0, 100, &n, &err) == SYMD_OK && n == 0,
          "no limit at all pruned %zu", n);
    /* the first generation, in batches of 3: 3, 3, 3, 1 */
    size_t got[8], rounds = 0, total = 0;
    do {
        CHECK(store_prune_crashes(s, cut[0], 0, 3, &n, &err) == SYMD_OK, "prune: %s", err.msg);
        got[rounds++] = n;
        total += n;
    } while (n == 3 && rounds < 8);
    CHECK(total == 10 && rounds == 4 && got[3] == 1,
          "cut-off after 10 crashes, batches of 3: %zu pruned in %zu rounds", total, rounds);
    store_crash c;
    CHECK(store_get_crash(s, ids[9], false, &c, &err) == SYMD_E_NOT_FOUND &&
              store_get_crash(s, ids[10], false, &c, &err) == SYMD_OK,
          "the cut-off is exact: crash 10 gone, 11 kept");
    store_crash_free(&c);
    check_db_counters(db, "cut-off in batches");
    /* beside a count limit: whichever takes more */
    CHECK(store_prune_crashes(s, cut[1], 15, 100, &n, &err) == SYMD_OK && n == 10,
          "cut-off after 20 and at most 15 of 20: %zu pruned, expected 10 (the age)", n);
    CHECK(store_prune_crashes(s, cut[1], 4, 100, &n, &err) == SYMD_OK && n == 6,
          "at most 4 of 10: %zu pruned, expected 6 (the count)", n);
    CHECK(store_count(s) == 4, "%lld left", (long long)store_count(s));
    /* groups and missing images of what is left */
    store_crash_group g[8];
    store_crash_filter all = {0};
    CHECK(store_crash_groups(s, &all, 8, g, &n, &err) == SYMD_OK, "groups: %s", err.msg);
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += g[i].count;
        store_crash_group_free(&g[i]);
    }
    CHECK(sum == 4, "groups count %lld of 4", (long long)sum);
    store_missing m[8];
    CHECK(store_missing_images(s, STORE_MISSING_ALL, 8, m, &n, &err) == SYMD_OK, "missing: %s",
          err.msg);
    sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += m[i].crashes;
        CHECK(m[i].crashes > 0, "a missing image no crash needs is listed");
    }
    CHECK(sum == 4, "missing images count %lld crashes of 4", (long long)sum);
    store_close(s);
    check_db_counters(db, "cut-off and count");
}

/* ---- a large prune under traffic ----------------------------------------- */

typedef struct {
    int port, seed;
    atomic_bool *stop;
    int64_t first_id; /* ids below were prefilled */
    /* results, read after the join */
    int requests, fivexx, failed, unexpected;
    atomic_int posts_ok;
    double slowest_post_ms, slowest_get_ms;
    char why[256];
} traffic_arg;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void note(traffic_arg *a, const char *what, int st)
{
    if (st >= 500)
        a->fivexx++;
    else if (st == 0)
        a->failed++;
    else
        a->unexpected++;
    if (!a->why[0])
        snprintf(a->why, sizeof a->why, "%s: %d", what, st);
}

static void *traffic(void *p)
{
    traffic_arg *a = p;
    uint32_t seed = (uint32_t)a->seed * 2654435761u + 1;
    int64_t last = a->first_id;
    for (int i = 0; !atomic_load(a->stop); i++) {
        seed = seed * 1103515245u + 12345u;
        int op = (int)((seed >> 16) % 8), st = 0;
        char path[160];
        json_t *j = NULL;
        a->requests++;
        double t0 = now_ms();
        switch (op) {
        case 0:
        case 1: {
            int g = (int)((seed >> 8) % 4);
            char *t = crash_text(a->seed * 10000 + i, SIGS[g], g, VERSIONS[i % 3],
                                 DEVICES[i % 2], OSES[i % 2]);
            j = req(a->port, "POST", "/v1/crashes", t, &st);
            free(t);
            if (st == 201) {
                atomic_fetch_add(&a->posts_ok, 1);
                last = json_integer_value(json_object_get(j, "id"));
            } else {
                note(a, "POST /v1/crashes", st);
            }
            break;
        }
        case 2:
            j = req(a->port, "GET", "/v1/crashes?limit=100", NULL, &st);
            if (st != 200)
                note(a, "GET /v1/crashes", st);
            break;
        case 3:
            j = req(a->port, "GET", "/v1/crashes/groups?trend=30", NULL, &st);
            if (st != 200)
                note(a, "GET /v1/crashes/groups", st);
            break;
        case 4:
            j = req(a->port, "GET", i % 2 ? "/v1/crashes/trend" : "/v1/missing", NULL, &st);
            if (st != 200)
                note(a, "GET trend or missing", st);
            break;
        case 5:
            snprintf(path, sizeof path, "/v1/crashes/group?kind=crash&signature=%s", SIGS[i % 4]);
            j = req(a->port, "GET", path, NULL, &st);
            if (st != 200 && st != 404)
                note(a, "GET /v1/crashes/group", st);
            break;
        case 6: /* a crash that may have been pruned meanwhile */
            snprintf(path, sizeof path, "/v1/crashes/%lld",
                     (long long)(last - (int64_t)((seed >> 4) % 300)));
            j = req(a->port, "GET", path, NULL, &st);
            if (st != 200 && st != 404 && st != 400)
                note(a, "GET /v1/crashes/{id}", st);
            break;
        default: /* racing retention for the same old crashes */
            snprintf(path, sizeof path, "/v1/crashes/%lld",
                     (long long)(1 + (int64_t)((seed >> 4) % (uint32_t)(a->first_id + 1))));
            j = req(a->port, "DELETE", path, NULL, &st);
            if (st != 204 && st != 404)
                note(a, "DELETE /v1/crashes/{id}", st);
            break;
        }
        json_decref(j);
        double took = now_ms() - t0;
        double *slowest = op < 2 ? &a->slowest_post_ms : op < 7 ? &a->slowest_get_ms : NULL;
        if (slowest && took > *slowest)
            *slowest = took;
    }
    return NULL;
}

TEST(e2e_retention_large_prune_under_concurrent_traffic)
{
    enum { PREFILL = 6000, MAX = 100, THREADS = 4 };
    char db[512];
    snprintf(db, sizeof db, "%s/retention-big.db", test_tmpdir());
    /* prefilled in-process: PREFILL crashes the server then prunes to MAX
     * (in the file, or on PostgreSQL in the database the server gets) */
    store *st = NULL;
    symd_err err = {0};
    CHECK(store_open(db_arg(db), 1, 0, &st, &err) == SYMD_OK, "open: %s", err.msg);
    if (!st)
        return;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool ok = true;
    for (int i = 0; i < PREFILL && ok; i++) {
        int g = i % 4;
        char *t = crash_text(i, SIGS[g], g, VERSIONS[i % 3], DEVICES[i % 2], OSES[i % 2]);
        store_crash c = {.format = "crash", .kind = "crash", .signature = (char *)SIGS[g],
                         .app_version = (char *)VERSIONS[i % 3], .os_version = (char *)OSES[i % 2],
                         .hardware_model = (char *)DEVICES[i % 2], .process = "RetApp",
                         .original = (uint8_t *)t, .original_len = strlen(t)};
        store_crash_image img = {.arch = "arm64", .name = "RetApp", .app = true};
        char us[37];
        group_uuid(g, us);
        uuid_parse(us, img.uuid);
        int64_t id;
        ok = store_put_crash(st, &c, &img, 1, &id, &err) == SYMD_OK;
        free(t);
    }
    store_close(st);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(ok, "prefill: %s", err.msg);
    double fill_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

    const char *extra[] = {"--max-crashes", "100", "--prune-every", "1", NULL};
    server_proc s;
    if (!server_start(&s, db, extra)) {
        CHECK(false, "server did not start");
        return;
    }
    json_decref(json_object()); /* jansson's hash seed, before the threads */
    atomic_bool stop = false;
    traffic_arg args[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (traffic_arg){.port = s.port, .seed = i + 1, .stop = &stop,
                                .first_id = PREFILL};
        pthread_create(&th[i], NULL, traffic, &args[i]);
    }
    /* the store's count while the traffic runs: it must come down from
     * PREFILL while requests are answered (3.5 s of traffic at least, more
     * until retention has caught up, 60 s at most: a PostgreSQL cluster on a
     * machine busy with other work prunes at a fraction of its rate) */
    long long first = -1, low = -1;
    double start = now_ms(), secs = 0;
    for (;;) {
        long long n = metric(s.port, "symd_crashes");
        if (first < 0)
            first = n;
        if (n >= 0 && (low < 0 || n < low))
            low = n;
        int posted = 0;
        for (int i = 0; i < THREADS; i++)
            posted += atomic_load(&args[i].posts_ok);
        secs = (now_ms() - start) / 1000;
        if ((secs > 3.5 && low >= 0 && low <= MAX + posted) || secs > 60)
            break;
        sleep_ms(25);
    }
    atomic_store(&stop, true);
    int requests = 0, posts = 0, fivexx = 0, failed = 0, unexpected = 0;
    double slow_post = 0, slow_get = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        if (args[i].slowest_post_ms > slow_post)
            slow_post = args[i].slowest_post_ms;
        if (args[i].slowest_get_ms > slow_get)
            slow_get = args[i].slowest_get_ms;
        requests += args[i].requests;
        posts += atomic_load(&args[i].posts_ok);
        fivexx += args[i].fivexx;
        failed += args[i].failed;
        unexpected += args[i].unexpected;
        CHECK(!args[i].why[0], "traffic thread %d: first problem %s", i, args[i].why);
    }
    printf("    prefill %d crashes in %.2f s; %d requests (%d posts) in %.1f s beside the prune; "
           "crashes %lld at the first sample, %lld at the lowest; slowest post %.0f ms, "
           "slowest read %.0f ms\n",
           PREFILL, fill_s, requests, posts, secs, first, low, slow_post, slow_get);
    CHECK(fivexx == 0 && failed == 0 && unexpected == 0,
          "%d 5xx, %d unanswered, %d unexpected answers of %d requests", fivexx, failed,
          unexpected, requests);
    CHECK(posts > 0 && low >= 0 && low <= MAX + posts,
          "retention did not prune beside the traffic: lowest count %lld, %d posted", low, posts);
    /* once it catches up: exactly the newest MAX, counters exact */
    bool settled = wait_count(s.port, MAX, 15000);
    CHECK(settled, "not back to %d crashes", MAX);
    if (settled) {
        json_t *all = all_crashes(s.port, 1000);
        int64_t ids[MAX];
        size_t n = 0;
        for (size_t i = 0; i < json_array_size(all) && n < MAX; i++)
            ids[n++] = jint(json_array_get(all, i), "id");
        json_decref(all);
        /* the newest: every crash above the oldest kept one is kept */
        int64_t lo = n ? ids[n - 1] : 0, hi = n ? ids[0] : 0;
        CHECK(n == MAX && hi - lo + 1 >= MAX, "kept ids %lld..%lld", (long long)lo, (long long)hi);
        check_counters(s.port, "after the large prune", ids, n, NULL);
    }
    CHECK(server_stop(&s), "no clean exit on SIGTERM");
    check_db_counters(db, "after the large prune");
}

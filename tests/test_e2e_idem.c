/* End-to-end: idempotent crash posts (issue 23). A report posted again
 * (its Idempotency-Key, its incident identifier, else its bytes) is stored
 * once and answered 200 with the first copy's id; so on both backends,
 * between concurrent posts, across two nodes, and through connections cut
 * at the worst moments (a TCP proxy in the test: between the client and
 * symd, and between symd and PostgreSQL at COMMIT), every report is stored
 * exactly once and every counter counts it once. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

/* The reports the tests post, each renumbered (report_renumber) into as
 * many distinct reports as they need. */
static const char *const reports[] = {
    "fixtures/crashes/bigapp-twin.crash", "fixtures/crashes/bigapp-twin.ips",
    "fixtures/crashes/bigapp-pac.crash", "fixtures/crashes/swifty-twin.crash"};
#define NREPORTS (sizeof reports / sizeof reports[0])

static uint8_t *fixture_bytes[NREPORTS];
static size_t fixture_len[NREPORTS];

/* Report n: fixture n % NREPORTS renumbered n (malloc'ed, *len). */
static uint8_t *report_n(uint32_t n, size_t *len)
{
    size_t k = n % NREPORTS;
    if (!fixture_bytes[k])
        fixture_bytes[k] = read_fixture(reports[k], &fixture_len[k]);
    if (!fixture_bytes[k])
        return NULL;
    uint8_t *b = malloc(fixture_len[k]);
    if (!b)
        return NULL;
    memcpy(b, fixture_bytes[k], fixture_len[k]);
    *len = fixture_len[k];
    if (!report_renumber(b, *len, n)) {
        free(b);
        return NULL;
    }
    return b;
}

__attribute__((destructor)) static void free_fixtures(void)
{
    for (size_t k = 0; k < NREPORTS; k++)
        free(fixture_bytes[k]);
}

/* One POST of body; *id the answer's id (0 none), *loc its Location ("" none). */
static int post(int port, const char *headers, const void *body, size_t len, int64_t *id,
                char loc[64], json_t **out)
{
    http_resp r;
    *id = 0;
    if (loc)
        loc[0] = 0;
    if (out)
        *out = NULL;
    if (!http_do(port, "POST", "/v1/crashes", headers, body, len, &r))
        return 0;
    int st = r.status;
    json_error_t e;
    json_t *j = r.body ? json_loads(r.body, 0, &e) : NULL;
    *id = json_integer_value(json_object_get(j, "id"));
    const char *l = http_header(&r, "Location");
    if (loc && l)
        snprintf(loc, 64, "%s", l);
    if (out)
        *out = j;
    else
        json_decref(j);
    http_resp_free(&r);
    return st;
}

/* A count of the store of db. */
static long long q(const char *db, const char *sql)
{
    return db_query_int(db, sql);
}

/* Every counter of the store recounted from its crash rows: each must
 * count each stored crash once. n: the crashes there should be. */
static void counters_exact(const char *db, long long n, const char *label)
{
    CHECK(q(db, "SELECT count(*) FROM crashes") == n, "%s: %lld crashes stored, want %lld",
          label, q(db, "SELECT count(*) FROM crashes"), n);
    CHECK(q(db, "SELECT count(*) FROM crash_originals") == n, "%s: originals", label);
    CHECK(q(db, "SELECT count(DISTINCT content_key) FROM crashes") == n,
          "%s: a report stored twice", label);
    static const struct {
        const char *what, *sql;
    } sums[] = {
        {"groups", "SELECT coalesce(sum(count), 0) FROM crash_groups"},
        {"group days", "SELECT coalesce(sum(count), 0) FROM crash_group_days"},
        {"kind days", "SELECT coalesce(sum(count), 0) FROM crash_days"},
        {"group states' reports", "SELECT coalesce(sum(reports), 0) FROM crash_group_states"},
    };
    for (size_t i = 0; i < sizeof sums / sizeof *sums; i++) {
        long long got = q(db, sums[i].sql);
        CHECK(got == n, "%s: %s count %lld, want %lld", label, sums[i].what, got, n);
    }
    /* each group, version, OS, device and needed image by itself */
    static const struct {
        const char *what, *sql;
    } off[] = {
        {"groups", "SELECT count(*) FROM crash_groups g WHERE count <> (SELECT count(*) FROM "
                   "crashes c WHERE c.kind = g.kind AND c.signature = g.signature)"},
        {"dims", "SELECT count(*) FROM crash_group_dims d WHERE count <> (SELECT count(*) FROM "
                 "crashes c WHERE c.kind = d.kind AND c.signature = d.signature AND CASE d.dim "
                 "WHEN 0 THEN c.app_version WHEN 1 THEN c.os_version ELSE c.hardware_model "
                 "END = d.value)"},
        {"dim days", "SELECT count(*) FROM (SELECT kind, signature, dim, value, sum(count) AS n "
                     "FROM crash_dim_days GROUP BY 1, 2, 3, 4) d WHERE n <> (SELECT count(*) "
                     "FROM crashes c WHERE c.kind = d.kind AND c.signature = d.signature AND "
                     "CASE d.dim WHEN 0 THEN c.app_version WHEN 1 THEN c.os_version ELSE "
                     "c.hardware_model END = d.value)"},
        {"image refs", "SELECT count(*) FROM crash_image_refs r WHERE crashes <> (SELECT "
                       "count(*) FROM crashes c WHERE c.refs LIKE '%,' || r.id || ',%')"},
    };
    for (size_t i = 0; i < sizeof off / sizeof *off; i++) {
        long long got = q(db, off[i].sql);
        CHECK(got == 0, "%s: %lld %s count other than the crashes stored", label, got,
              off[i].what);
    }
    CHECK(q(db, "SELECT count(*) FROM crash_group_dims") > 0 &&
              q(db, "SELECT count(*) FROM crash_image_refs") > 0,
          "%s: no dims or image refs counted at all", label);
}

/* ---- the same report twice, by key, by incident, by bytes ---- */

TEST(e2e_idem_same_report_twice_is_stored_once)
{
    char db[512];
    snprintf(db, sizeof db, "%s/idem-twice.db", test_tmpdir());
    server_proc s;
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    size_t len;
    uint8_t *body = report_n(0, &len);
    CHECK(body, "report 0");
    int64_t id1, id2, id3;
    char loc1[64], loc2[64], loc3[64];
    json_t *j = NULL;
    int st = post(s.port, NULL, body, len, &id1, loc1, NULL);
    CHECK(st == 201 && id1 > 0 && loc1[0], "first post: %d, id %lld", st, (long long)id1);
    st = post(s.port, NULL, body, len, &id2, loc2, &j);
    CHECK(st == 200, "the same report again: %d, want 200", st);
    CHECK(id2 == id1 && !strcmp(loc2, loc1), "again: id %lld at '%s', the first was %lld at '%s'",
          (long long)id2, loc2, (long long)id1, loc1);
    CHECK(json_is_true(json_object_get(j, "duplicate")), "the answer says no duplicate");
    CHECK(json_object_get(j, "threads") && json_object_get(j, "signature"),
          "the answer is not the whole report");
    json_decref(j);
    /* the short answer, as asked */
    http_resp r;
    CHECK(http_do(s.port, "POST", "/v1/crashes", "Prefer: return=minimal\r\n", body, len, &r),
          "no answer");
    CHECK(r.status == 200, "minimal: %d", r.status);
    const char *pa = http_header(&r, "Preference-Applied");
    CHECK(pa && !strcmp(pa, "return=minimal"), "minimal: no Preference-Applied");
    json_error_t e;
    j = r.body ? json_loads(r.body, 0, &e) : NULL;
    CHECK(json_is_true(json_object_get(j, "duplicate")) &&
              json_integer_value(json_object_get(j, "id")) == id1 &&
              !json_object_get(j, "threads"),
          "minimal: %.200s", r.body ? r.body : "");
    const char *l = http_header(&r, "Location");
    CHECK(l && !strcmp(l, loc1), "minimal: Location '%s'", l ? l : "");
    json_decref(j);
    http_resp_free(&r);
    /* the same incident in other bytes (a line more at the end) */
    uint8_t *more = malloc(len + 1);
    memcpy(more, body, len);
    more[len] = '\n';
    st = post(s.port, NULL, more, len + 1, &id3, loc3, NULL);
    CHECK(st == 200 && id3 == id1, "its incident in other bytes: %d, id %lld", st,
          (long long)id3);
    free(more);
    counters_exact(db, 1, "one report posted four times");
    /* another report is another crash */
    uint8_t *other = report_n(4, &len);
    st = post(s.port, NULL, other, len, &id3, loc3, NULL);
    CHECK(st == 201 && id3 != id1, "report 4: %d, id %lld", st, (long long)id3);
    free(other);
    free(body);
    counters_exact(db, 2, "two reports");
    CHECK(server_stop(&s), "server exit");
}

TEST(e2e_idem_key_wins_over_the_bytes)
{
    char db[512];
    snprintf(db, sizeof db, "%s/idem-key.db", test_tmpdir());
    server_proc s;
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    size_t la, lb;
    uint8_t *a = report_n(1, &la), *b = report_n(5, &lb);
    int64_t ida, idb;
    char loca[64], locb[64];
    int st = post(s.port, "Idempotency-Key: 9f3c2a-upload-1\r\n", a, la, &ida, loca, NULL);
    CHECK(st == 201, "keyed post: %d", st);
    st = post(s.port, "Idempotency-Key: 9f3c2a-upload-1\r\n", b, lb, &idb, locb, NULL);
    CHECK(st == 200 && idb == ida && !strcmp(loca, locb),
          "another report under the same key: %d, id %lld (first %lld)", st, (long long)idb,
          (long long)ida);
    st = post(s.port, "Idempotency-Key: 9f3c2a-upload-2\r\n", b, lb, &idb, locb, NULL);
    CHECK(st == 201 && idb != ida, "that report under its own key: %d", st);
    /* a key already stored wins over a report not seen */
    free(b);
    b = report_n(9, &lb);
    st = post(s.port, "Idempotency-Key: 9f3c2a-upload-2\r\n", b, lb, &ida, loca, NULL);
    CHECK(st == 200 && ida == idb, "a new report under a stored key: %d", st);
    /* the stored report under a new key: its content says copy */
    st = post(s.port, "Idempotency-Key: 9f3c2a-upload-3\r\n", a, la, &ida, loca, NULL);
    CHECK(st == 200, "a stored report under a new key: %d", st);
    /* a key that is none */
    st = post(s.port, "Idempotency-Key: two words\r\n", b, lb, &ida, loca, NULL);
    CHECK(st == 400, "a key with a space: %d, want 400", st);
    free(a);
    free(b);
    counters_exact(db, 2, "two reports under three keys");
    CHECK(server_stop(&s), "server exit");
}

TEST(e2e_idem_report_without_incident_dedups_by_bytes)
{
    char db[512];
    snprintf(db, sizeof db, "%s/idem-bytes.db", test_tmpdir());
    server_proc s;
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    /* a MetricKit payload: several reports, none with an incident id */
    size_t len;
    uint8_t *body = read_fixture("fixtures/crashes/bigapp-metrickit.json", &len);
    CHECK(body, "fixture");
    if (!body) {
        server_stop(&s);
        return;
    }
    int64_t id;
    json_t *j1, *j2;
    int st = post(s.port, NULL, body, len, &id, NULL, &j1);
    size_t n = json_array_size(json_object_get(j1, "reports"));
    CHECK(st == 201 && n >= 1, "payload: %d, %zu reports", st, n);
    st = post(s.port, NULL, body, len, &id, NULL, &j2);
    CHECK(st == 200, "the payload again: %d, want 200", st);
    json_t *r1 = json_object_get(j1, "reports"), *r2 = json_object_get(j2, "reports");
    CHECK(json_array_size(r2) == n, "again: %zu reports", json_array_size(r2));
    for (size_t i = 0; i < n && i < json_array_size(r2); i++) {
        json_t *a = json_array_get(r1, i), *b = json_array_get(r2, i);
        CHECK(json_integer_value(json_object_get(a, "id")) ==
                      json_integer_value(json_object_get(b, "id")) &&
                  json_is_true(json_object_get(b, "duplicate")) &&
                  !json_object_get(a, "duplicate"),
              "report %zu: ids %lld, %lld", i,
              (long long)json_integer_value(json_object_get(a, "id")),
              (long long)json_integer_value(json_object_get(b, "id")));
    }
    json_decref(j1);
    json_decref(j2);
    counters_exact(db, (long long)n, "a payload posted twice");
    /* other bytes are another report when nothing names the incident */
    uint8_t *more = malloc(len + 1);
    memcpy(more, body, len);
    more[len] = '\n';
    st = post(s.port, NULL, more, len + 1, &id, NULL, NULL);
    CHECK(st == 201, "the payload with a newline more: %d, want 201", st);
    free(more);
    free(body);
    counters_exact(db, 2 * (long long)n, "two payloads");
    CHECK(server_stop(&s), "server exit");
}

/* An .xccrashpoint zip posted again: each log a copy, the post 200. */
TEST(e2e_idem_zip_posted_again_is_stored_once)
{
    char db[512];
    snprintf(db, sizeof db, "%s/idem-zip.db", test_tmpdir());
    server_proc s;
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    size_t len;
    uint8_t *zip = read_fixture("fixtures/crashes/bigapp.xccrashpoint.zip", &len);
    CHECK(zip, "fixture");
    int64_t id;
    json_t *a = NULL, *b = NULL;
    int st1 = zip ? post(s.port, NULL, zip, len, &id, NULL, &a) : 0;
    int st2 = zip ? post(s.port, NULL, zip, len, &id, NULL, &b) : 0;
    json_t *ra = json_object_get(a, "reports"), *rb = json_object_get(b, "reports");
    size_t n = json_array_size(ra);
    CHECK(st1 == 201 && n >= 1, "zip: %d, %zu reports", st1, n);
    CHECK(st2 == 200 && json_array_size(rb) == n, "the zip again: %d, %zu reports", st2,
          json_array_size(rb));
    for (size_t i = 0; i < n && i < json_array_size(rb); i++) {
        json_t *x = json_object_get(json_array_get(ra, i), "answer"),
               *y = json_object_get(json_array_get(rb, i), "answer");
        CHECK(json_is_true(json_object_get(y, "duplicate")) &&
                  json_integer_value(json_object_get(y, "id")) ==
                      json_integer_value(json_object_get(x, "id")),
              "log %zu again: %s", i, json_dumps(y, JSON_COMPACT));
    }
    json_decref(a);
    json_decref(b);
    free(zip);
    counters_exact(db, (long long)n, "a zip posted twice");
    CHECK(server_stop(&s), "server exit");
}

/* ---- copies posted at once ---- */

#define COPIES_THREADS 4
#define COPIES_REPORTS 40

typedef struct {
    int port[2];
    int64_t id[COPIES_REPORTS];
    int status[COPIES_REPORTS];
    int seed;
} copies_job;

static void *copies_thread(void *p)
{
    copies_job *j = p;
    for (uint32_t i = 0; i < COPIES_REPORTS; i++) {
        size_t len;
        uint8_t *b = report_n(1000 + i, &len);
        if (!b)
            continue;
        j->status[i] = post(j->port[(i + (uint32_t)j->seed) % 2], NULL, b, len, &j->id[i], NULL,
                            NULL);
        free(b);
    }
    return NULL;
}

/* Posts every report from each thread at once (ports: a, b alternating)
 * and checks each was stored once, answered 201 once and 200 with its id
 * the other times. */
static void copies_at_once(const char *db, int port_a, int port_b, const char *label)
{
    copies_job jobs[COPIES_THREADS];
    pthread_t t[COPIES_THREADS];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < COPIES_THREADS; i++) {
        jobs[i].port[0] = port_a;
        jobs[i].port[1] = port_b;
        jobs[i].seed = i;
        pthread_create(&t[i], NULL, copies_thread, &jobs[i]);
    }
    for (int i = 0; i < COPIES_THREADS; i++)
        pthread_join(t[i], NULL);
    int bad = 0;
    for (int r = 0; r < COPIES_REPORTS; r++) {
        int created = 0, same = 0;
        for (int i = 0; i < COPIES_THREADS; i++) {
            created += jobs[i].status[r] == 201;
            same += jobs[i].status[r] == 200 && jobs[i].id[r] == jobs[0].id[r];
            same += jobs[i].status[r] == 201 && jobs[i].id[r] == jobs[0].id[r];
        }
        if (created != 1 || same != COPIES_THREADS) {
            if (bad++ < 5)
                CHECK(false, "%s: report %d answered 201 %d times, the same id %d times", label,
                      r, created, same);
        }
    }
    CHECK(bad == 0, "%s: %d reports not stored exactly once", label, bad);
    counters_exact(db, COPIES_REPORTS, label);
    printf("    %s: %d reports posted by %d threads at once, each stored once\n", label,
           COPIES_REPORTS, COPIES_THREADS);
}

TEST(e2e_idem_copies_posted_at_once_are_stored_once)
{
    char db[512];
    snprintf(db, sizeof db, "%s/idem-copies.db", test_tmpdir());
    server_proc s;
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    copies_at_once(db, s.port, s.port, "one node");
    CHECK(server_stop(&s), "server exit");
}

TEST(multinode_idem_copies_posted_on_both_nodes_are_stored_once)
{
    if (!test_pg()) {
        test_skip("needs PostgreSQL (SYMD_TEST_PG)");
        return;
    }
    char db[512];
    snprintf(db, sizeof db, "%s/idem-copies-mn.db", test_tmpdir());
    const char *uri = db_arg(db);
    server_proc a, b;
    char la[600], lb[600];
    snprintf(la, sizeof la, "%s/idem-mn-a", test_tmpdir());
    snprintf(lb, sizeof lb, "%s/idem-mn-b", test_tmpdir());
    bool up_a = uri && server_start_on(&a, la, uri, NULL);
    bool up_b = up_a && server_start_on(&b, lb, uri, NULL);
    CHECK(up_a && up_b, "nodes did not start");
    if (up_a && up_b)
        copies_at_once(db, a.port, b.port, "two nodes");
    if (up_b)
        CHECK(server_stop(&b), "node b exit");
    if (up_a)
        CHECK(server_stop(&a), "node a exit");
}

/* ---- a TCP proxy that cuts connections ---- */

/* Where a proxy listens or forwards: a TCP port on 127.0.0.1 or a Unix
 * socket's path. */
typedef struct {
    int port;
    char path[300]; /* a Unix socket's path: at most sizeof sun_path */
} endpoint;

typedef enum {
    CUT_ANSWER, /* HTTP: the request goes through, its answer never comes back */
    CUT_COMMIT, /* PostgreSQL: at COMMIT, before it reaches the server or after */
} cut_mode;

typedef struct {
    endpoint to;
    cut_mode mode;
    int every;          /* cut one chance in this many */
    int fd;             /* listening */
    endpoint at;        /* where it listens */
    pthread_t thread;
    atomic_bool stop;
    atomic_bool armed;  /* cuts only once armed (nodes start through it unharmed) */
    atomic_int live;    /* connections being served */
    atomic_int chances, cut_before, cut_after;
} proxy;

static int ep_connect(const endpoint *e)
{
    int fd;
    if (e->path[0]) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(e->path) >= sizeof a.sun_path)
            return -1;
        memcpy(a.sun_path, e->path, strlen(e->path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
            close(fd);
            return -1;
        }
        return fd;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)e->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* The PostgreSQL client's messages, read as they pass (the protocol's
 * framing: a type byte and a length; the first message has no type): which
 * prepared statements are COMMIT, and where a COMMIT is run. */
typedef struct {
    uint8_t *buf;
    size_t len, cap;
    bool started;
    char commits[8][32]; /* names of statements prepared as COMMIT */
    int ncommits;
    bool unnamed_commit; /* the unnamed statement is COMMIT */
} pg_reader;

/* Whether SQL s commits: a COMMIT, or a crash post's one statement
 * (symd_put_crash, symd_put_crashes), which without webhooks runs as its
 * own transaction, committed as it ends. */
static bool is_commit_sql(const char *s, size_t n)
{
    static const char post[] = "SELECT * FROM symd_put_crash";
    if (n >= sizeof post - 1 && !strncmp(s, post, sizeof post - 1))
        return true;
    return n >= 6 && !strncasecmp(s, "COMMIT", 6) && (n == 6 || s[6] == 0 || s[6] == ';');
}

/* Reads the complete messages in r's buffer: *at, the offset of the first
 * message that runs a COMMIT (-1 none); the bytes before it may go. Returns
 * how many bytes are whole messages. */
static size_t pg_scan(pg_reader *r, long *at)
{
    size_t o = 0;
    *at = -1;
    for (;;) {
        size_t hdr = r->started ? 5 : 4;
        if (r->len - o < hdr)
            break;
        const uint8_t *m = r->buf + o + (r->started ? 1 : 0);
        uint32_t ml = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 | (uint32_t)m[2] << 8 | m[3];
        size_t total = (r->started ? 1 : 0) + (size_t)ml;
        if (ml < 4 || r->len - o < total)
            break;
        if (!r->started) {
            /* the startup message (or an SSL / GSS request: answered 'N') */
            uint32_t code = r->len - o >= 8 ? (uint32_t)m[4] << 24 | (uint32_t)m[5] << 16 |
                                                  (uint32_t)m[6] << 8 | m[7]
                                            : 0;
            if (code != 80877103 && code != 80877104)
                r->started = true;
            o += total;
            continue;
        }
        char type = (char)r->buf[o];
        const char *pay = (const char *)r->buf + o + 5;
        size_t pl = total - 5;
        bool commit = false;
        if (type == 'Q') {
            commit = is_commit_sql(pay, strnlen(pay, pl));
        } else if (type == 'P') {
            size_t nl = strnlen(pay, pl);
            const char *sql = pay + nl + 1;
            if (nl < pl && is_commit_sql(sql, strnlen(sql, pl - nl - 1))) {
                if (!nl)
                    r->unnamed_commit = true;
                else if (r->ncommits < 8)
                    snprintf(r->commits[r->ncommits++], 32, "%.*s", (int)nl, pay);
            } else if (nl < pl && !nl) {
                r->unnamed_commit = false;
            }
        } else if (type == 'B') {
            size_t pn = strnlen(pay, pl);
            const char *st = pay + pn + 1;
            size_t sn = pn < pl ? strnlen(st, pl - pn - 1) : 0;
            if (!sn)
                commit = r->unnamed_commit;
            for (int i = 0; i < r->ncommits && !commit; i++)
                commit = strlen(r->commits[i]) == sn && !memcmp(r->commits[i], st, sn);
        }
        if (commit && *at < 0)
            *at = (long)o;
        o += total;
    }
    return o;
}

typedef struct {
    proxy *px;
    int a, b; /* a: the client's side, b: the server's */
} proxy_conn;

/* Serves one connection until either side closes or the proxy cuts it. */
static void *proxy_conn_main(void *arg)
{
    proxy_conn *pc = arg;
    proxy *px = pc->px;
    pg_reader r = {0};
    bool answer_seen = false; /* CUT_ANSWER: the first answer of this connection */
    bool cut_on_answer = false;
    uint8_t buf[65536];
    for (bool open = true; open && !atomic_load(&px->stop);) {
        struct pollfd pf[2] = {{pc->a, POLLIN, 0}, {pc->b, POLLIN, 0}};
        int n = poll(pf, 2, 100);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            continue;
        if (pf[0].revents) {
            ssize_t got = read(pc->a, buf, sizeof buf);
            if (got <= 0)
                break;
            if (px->mode == CUT_ANSWER) {
                open = write_all(pc->b, buf, (size_t)got);
                continue;
            }
            if (r.len + (size_t)got > r.cap) {
                size_t cap = (r.len + (size_t)got) * 2;
                uint8_t *nb = realloc(r.buf, cap);
                if (!nb)
                    break;
                r.buf = nb;
                r.cap = cap;
            }
            memcpy(r.buf + r.len, buf, (size_t)got);
            r.len += (size_t)got;
            long at;
            size_t whole = pg_scan(&r, &at);
            if (at >= 0 && atomic_load(&px->armed) &&
                atomic_fetch_add(&px->chances, 1) % px->every == px->every - 1) {
                /* cut: every other time before the COMMIT reaches the
                 * server (it never lands), else once it has (it lands, its
                 * answer is lost) */
                if ((atomic_load(&px->cut_before) + atomic_load(&px->cut_after)) % 2 == 0) {
                    write_all(pc->b, r.buf, (size_t)at);
                    atomic_fetch_add(&px->cut_before, 1);
                    break;
                }
                cut_on_answer = true;
            }
            open = write_all(pc->b, r.buf, whole);
            memmove(r.buf, r.buf + whole, r.len - whole);
            r.len -= whole;
        }
        if (open && pf[1].revents) {
            ssize_t got = read(pc->b, buf, sizeof buf);
            if (got <= 0)
                break;
            if (px->mode == CUT_ANSWER && !answer_seen && atomic_load(&px->armed)) {
                answer_seen = true;
                if (atomic_fetch_add(&px->chances, 1) % px->every == px->every - 1) {
                    atomic_fetch_add(&px->cut_after, 1);
                    break;
                }
            }
            if (cut_on_answer) {
                atomic_fetch_add(&px->cut_after, 1);
                break;
            }
            /* an SSL or GSS request's refusal is one byte: nothing to read */
            open = write_all(pc->a, buf, (size_t)got);
        }
    }
    /* shut down, not only closed: the connection ends even if another
     * process holds the socket */
    shutdown(pc->a, SHUT_RDWR);
    shutdown(pc->b, SHUT_RDWR);
    close(pc->a);
    close(pc->b);
    free(r.buf);
    free(pc);
    atomic_fetch_sub(&px->live, 1);
    return NULL;
}

static void *proxy_main(void *arg)
{
    proxy *px = arg;
    while (!atomic_load(&px->stop)) {
        struct pollfd pf = {px->fd, POLLIN, 0};
        if (poll(&pf, 1, 100) <= 0)
            continue;
        int a = accept4(px->fd, NULL, NULL, SOCK_CLOEXEC); /* no node started later holds it open */
        if (a < 0)
            continue;
        int b = ep_connect(&px->to);
        proxy_conn *pc = b >= 0 ? malloc(sizeof *pc) : NULL;
        pthread_t t;
        if (!pc) {
            close(a);
            if (b >= 0)
                close(b);
            continue;
        }
        *pc = (proxy_conn){px, a, b};
        atomic_fetch_add(&px->live, 1);
        if (pthread_create(&t, NULL, proxy_conn_main, pc) != 0) {
            atomic_fetch_sub(&px->live, 1);
            close(a);
            close(b);
            free(pc);
            continue;
        }
        pthread_detach(t);
    }
    return NULL;
}

/* Starts px forwarding to px->to, listening on a TCP port (listen_path
 * NULL) or at listen_path. */
static bool proxy_start(proxy *px, const char *listen_path)
{
    atomic_store(&px->stop, false);
    if (listen_path) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(listen_path) >= sizeof a.sun_path)
            return false;
        memcpy(a.sun_path, listen_path, strlen(listen_path) + 1);
        snprintf(px->at.path, sizeof px->at.path, "%s", listen_path);
        unlink(listen_path);
        px->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (px->fd < 0 || bind(px->fd, (struct sockaddr *)&a, sizeof a) != 0)
            return false;
    } else {
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t al = sizeof a;
        px->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (px->fd < 0 || bind(px->fd, (struct sockaddr *)&a, sizeof a) != 0 ||
            getsockname(px->fd, (struct sockaddr *)&a, &al) != 0)
            return false;
        px->at.port = ntohs(a.sin_port);
    }
    return listen(px->fd, 128) == 0 && pthread_create(&px->thread, NULL, proxy_main, px) == 0;
}

static void proxy_stop(proxy *px)
{
    atomic_store(&px->stop, true);
    pthread_join(px->thread, NULL);
    close(px->fd);
    for (int i = 0; i < 100 && atomic_load(&px->live) > 0; i++)
        usleep(20000);
    if (px->at.path[0])
        unlink(px->at.path);
}

/* ---- the acceptance: 1,000 posts through cut connections ---- */

#define DROP_THREADS 4
#define DROP_ATTEMPTS 60

typedef struct {
    int port[2];  /* the nodes' proxies (the same twice with one node) */
    int thread, posts;
    int64_t *ids; /* [posts]: each report's id as answered */
    int retries, server_errors, given_up, unavailable;
    int stored_after_503; /* a 503 whose write had landed: the retry right after it a copy */
} drop_job;

/* Posts reports thread, thread + DROP_THREADS, ... each until answered
 * 201 or 200, a retry going to the other node. */
static void *drop_thread(void *p)
{
    drop_job *j = p;
    for (int i = j->thread; i < j->posts; i += DROP_THREADS) {
        size_t len;
        uint8_t *b = report_n(5000 + (uint32_t)i, &len);
        if (!b) {
            j->given_up++;
            continue;
        }
        int attempt = 0, prev = 0;
        for (; attempt < DROP_ATTEMPTS; attempt++) {
            int64_t id = 0;
            int st = post(j->port[(i + attempt) % 2], "Prefer: return=minimal\r\n", b, len, &id,
                          NULL, NULL);
            if ((st == 201 || st == 200) && id > 0) {
                /* nobody else posts this report: a copy right after a 503
                 * means the 503's write had landed */
                j->stored_after_503 += st == 200 && prev == 503;
                j->ids[i] = id;
                break;
            }
            prev = st;
            j->server_errors += st >= 500 && st != 503;
            j->unavailable += st == 503;
            j->retries++;
            if (st == 503)
                usleep(5000);
        }
        j->given_up += attempt == DROP_ATTEMPTS;
        free(b);
    }
    return NULL;
}

static int id_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int drop_posts(void)
{
    const char *v = getenv("SYMD_TEST_IDEM_POSTS");
    int n = v ? atoi(v) : 1000;
    return n > 0 ? n : 1000;
}

/* Posts drop_posts() reports to the nodes' HTTP proxies and checks each
 * was stored once and every counter is exact. */
static void post_through_drops(const char *db, proxy *http, int nodes, proxy *pgx,
                               const char *label)
{
    int posts = drop_posts();
    int64_t *ids = calloc((size_t)posts, sizeof *ids);
    drop_job jobs[DROP_THREADS];
    pthread_t t[DROP_THREADS];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < DROP_THREADS; i++) {
        jobs[i] = (drop_job){.port = {http[0].at.port, http[nodes - 1].at.port},
                             .thread = i, .posts = posts, .ids = ids};
        pthread_create(&t[i], NULL, drop_thread, &jobs[i]);
    }
    int retries = 0, errors = 0, given_up = 0, unavailable = 0, stored_after_503 = 0;
    for (int i = 0; i < DROP_THREADS; i++) {
        pthread_join(t[i], NULL);
        unavailable += jobs[i].unavailable;
        stored_after_503 += jobs[i].stored_after_503;
        retries += jobs[i].retries;
        errors += jobs[i].server_errors;
        given_up += jobs[i].given_up;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(errors == 0, "%s: %d answers 500", label, errors);
    CHECK(given_up == 0, "%s: %d reports never stored", label, given_up);
    /* every report its own crash */
    qsort(ids, (size_t)posts, sizeof *ids, id_cmp);
    int same = 0;
    for (int i = 1; i < posts; i++)
        same += ids[i] && ids[i] == ids[i - 1];
    CHECK(same == 0, "%s: %d reports answered with another's id", label, same);
    free(ids);
    counters_exact(db, posts, label);
    int cut_http = 0;
    for (int i = 0; i < nodes; i++)
        cut_http += atomic_load(&http[i].cut_after);
    CHECK(cut_http > 0, "%s: no answer was cut", label);
    if (pgx) {
        CHECK(atomic_load(&pgx->cut_before) > 0 && atomic_load(&pgx->cut_after) > 0,
              "%s: COMMITs cut before %d, after %d", label, atomic_load(&pgx->cut_before),
              atomic_load(&pgx->cut_after));
        /* a commit that landed is found by its key and answered as if
         * nothing happened: a 503 is only for a report not stored (one
         * commit cut before it reached the server may be a batch of
         * several posts' reports, each answered 503) */
        CHECK(stored_after_503 == 0,
              "%s: %d answers 503 (%d of them for a report stored), %d commits cut before "
              "they reached the server", label, unavailable, stored_after_503,
              atomic_load(&pgx->cut_before));
    }
    printf("    %s: %d reports in %.1f s, %d retries (%d after a 503); answers cut %d", label,
           posts, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, retries,
           unavailable, cut_http);
    if (pgx)
        printf(", COMMITs cut %d before and %d after they reached PostgreSQL",
               atomic_load(&pgx->cut_before), atomic_load(&pgx->cut_after));
    printf("; %lld crashes stored\n", q(db, "SELECT count(*) FROM crashes"));
}

/* Starts an HTTP proxy in front of each node. */
static bool http_proxies(proxy *http, const server_proc *s, int nodes)
{
    bool ok = true;
    for (int i = 0; i < nodes; i++) {
        memset(&http[i], 0, sizeof http[i]);
        http[i].to.port = s[i].port;
        http[i].mode = CUT_ANSWER;
        http[i].every = 7;
        atomic_store(&http[i].armed, true);
        ok &= proxy_start(&http[i], NULL);
    }
    CHECK(ok, "HTTP proxies did not start");
    return ok;
}

TEST(e2e_idem_1000_posts_through_cut_answers_stored_once)
{
    char db[512];
    snprintf(db, sizeof db, "%s/idem-drops.db", test_tmpdir());
    server_proc s;
    server_stderr_to_file(true); /* a line for every answer cut */
    bool up = server_start(&s, db, NULL);
    server_stderr_to_file(false);
    if (!up) {
        CHECK(false, "server did not start");
        return;
    }
    proxy http[1];
    if (http_proxies(http, &s, 1)) {
        post_through_drops(db, http, 1, NULL, test_pg() ? "PostgreSQL, answers cut"
                                                        : "SQLite, answers cut");
        proxy_stop(&http[0]);
    }
    CHECK(server_stop(&s), "server exit");
}

/* uri with its host= (the socket directory) replaced by dir, into out. */
static bool uri_with_host(const char *uri, const char *dir, char *out, size_t cap)
{
    const char *h = strstr(uri, "host=");
    if (!h)
        return false;
    const char *end = h + 5 + strcspn(h + 5, "&");
    char esc[400];
    size_t o = 0;
    for (const char *p = dir; *p && o + 4 < sizeof esc; p++)
        o += (size_t)(*p == '/' ? snprintf(esc + o, sizeof esc - o, "%%2F")
                                : snprintf(esc + o, sizeof esc - o, "%c", *p));
    int n = snprintf(out, cap, "%.*s%s%s", (int)(h + 5 - uri), uri, esc, end);
    return n > 0 && (size_t)n < cap;
}

/* The socket path uri's PostgreSQL listens at (host=DIR, port=P:
 * DIR/.s.PGSQL.P) into out, and its port. */
static bool uri_socket(const char *uri, char *out, size_t cap, int *port)
{
    const char *h = strstr(uri, "host="), *p = strstr(uri, "port=");
    if (!h || !p)
        return false;
    char dir[300];
    size_t o = 0;
    for (const char *c = h + 5; *c && *c != '&' && o + 1 < sizeof dir; c++) {
        if (c[0] == '%' && c[1] && c[2]) {
            char hx[3] = {c[1], c[2], 0};
            dir[o++] = (char)strtol(hx, NULL, 16);
            c += 2;
        } else {
            dir[o++] = *c;
        }
    }
    dir[o] = 0;
    *port = atoi(p + 5);
    int n = snprintf(out, cap, "%s/.s.PGSQL.%d", dir, *port);
    return dir[0] == '/' && n > 0 && (size_t)n < cap;
}

/* The acceptance on PostgreSQL: nodes symd processes on one database
 * through a proxy that cuts every fifth COMMIT (half before it reaches
 * PostgreSQL, half after), each node behind an HTTP proxy that cuts
 * answers. */
static void drops_on_pg(int nodes, const char *tag, const char *label)
{
    if (!test_pg()) {
        test_skip("needs PostgreSQL (SYMD_TEST_PG)");
        return;
    }
    char db[512], sock[300], dir[400], lpath[512], puri[1200];
    snprintf(db, sizeof db, "%s/%s.db", test_tmpdir(), tag);
    const char *uri = db_arg(db);
    int port;
    snprintf(dir, sizeof dir, "%s/%s-px", test_tmpdir(), tag);
    mkdir(dir, 0700);
    if (!uri || !uri_socket(uri, sock, sizeof sock, &port) ||
        !uri_with_host(uri, dir, puri, sizeof puri)) {
        CHECK(false, "cannot read the database's URI '%s'", uri ? uri : "");
        return;
    }
    snprintf(lpath, sizeof lpath, "%s/.s.PGSQL.%d", dir, port);
    proxy pgx;
    memset(&pgx, 0, sizeof pgx);
    snprintf(pgx.to.path, sizeof pgx.to.path, "%s", sock);
    pgx.mode = CUT_COMMIT;
    pgx.every = 5;
    if (!proxy_start(&pgx, lpath)) {
        CHECK(false, "the PostgreSQL proxy did not start at %s", lpath);
        return;
    }
    server_proc s[2];
    int up = 0;
    for (int i = 0; i < nodes; i++) {
        char log[600];
        snprintf(log, sizeof log, "%s/%s-%c", test_tmpdir(), tag, 'a' + i);
        server_stderr_to_file(true); /* a 503 line for every COMMIT cut */
        bool ok = server_start_on(&s[i], log, puri, NULL);
        server_stderr_to_file(false);
        if (!ok)
            break;
        up++;
    }
    CHECK(up == nodes, "%d of %d nodes started", up, nodes);
    atomic_store(&pgx.armed, true);
    proxy http[2];
    if (up == nodes && http_proxies(http, s, nodes)) {
        post_through_drops(db, http, nodes, &pgx, label);
        for (int i = 0; i < nodes; i++)
            proxy_stop(&http[i]);
    }
    for (int i = 0; i < up; i++)
        CHECK(server_stop(&s[i]), "node %c exit", 'a' + i);
    proxy_stop(&pgx);
}

TEST(e2e_idem_1000_posts_through_cut_commits_stored_once)
{
    drops_on_pg(1, "idem-pgdrops", "PostgreSQL, COMMITs and answers cut");
}

TEST(multinode_idem_1000_posts_through_cut_commits_stored_once)
{
    drops_on_pg(2, "idem-pgdrops-mn", "two PostgreSQL nodes, COMMITs and answers cut");
}

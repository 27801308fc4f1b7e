/* Webhooks end to end: the real symd sending to a receiver in this process
 * that can be down (nothing listening), answer 500, or hang without an
 * answer; every event is acknowledged exactly once through a 60 s outage,
 * 500s, a hang and a symd restart, signed with the secret, while crash
 * posts keep their latency; spikes, image.missing once per UUID, https
 * refused, and two nodes on one PostgreSQL database sending each event
 * once. Both backends (SYMD_TEST_PG). */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../util/sha256.h"
#include "harness.h"
#include "test.h"

/* ---- the receiver ---- */

typedef enum { RX_UP, RX_DOWN, RX_500, RX_HANG } rx_mode;

#define RX_MAX_EVENTS 4096
#define RX_HANG_MS 30000 /* a hung request is held this long (or until the mode changes) */

typedef struct {
    int port;
    char secret[64];
    _Atomic int mode;
    atomic_bool stop;
    int lfd;
    pthread_t thread;
    pthread_mutex_t mu;
    /* under mu */
    int acked[RX_MAX_EVENTS]; /* 2xx answers per event id */
    char types[RX_MAX_EVENTS][24];
    int total_acked, bad, requests, answered_500, hung, open_conns;
    char last_bad[256];
} receiver;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int rx_listen(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The value of header name in head (case-insensitive), into out. */
static bool head_value(const char *head, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *p = head; (p = strstr(p, "\r\n")); ) {
        p += 2;
        if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            size_t n = strcspn(v, "\r\n");
            snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), v);
            return true;
        }
    }
    return false;
}

typedef struct {
    receiver *rx;
    int fd;
} rx_conn;

static void rx_bad(receiver *rx, const char *why)
{
    pthread_mutex_lock(&rx->mu);
    rx->bad++;
    snprintf(rx->last_bad, sizeof rx->last_bad, "%s", why);
    pthread_mutex_unlock(&rx->mu);
}

/* One request: read whole, then answered as the mode says. */
static void *rx_serve(void *arg)
{
    rx_conn *cn = arg;
    receiver *rx = cn->rx;
    int fd = cn->fd;
    free(cn);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char *buf = malloc(1 << 20);
    size_t got = 0, need = 0;
    char *hend = NULL;
    while (got < (1 << 20) - 1) {
        ssize_t n = recv(fd, buf + got, (1 << 20) - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = 0;
        if (!hend && (hend = strstr(buf, "\r\n\r\n"))) {
            char cl[32] = "";
            head_value(buf, "Content-Length", cl, sizeof cl);
            need = (size_t)(hend + 4 - buf) + (size_t)atol(cl);
        }
        if (hend && got >= need)
            break;
    }
    pthread_mutex_lock(&rx->mu);
    rx->requests++;
    pthread_mutex_unlock(&rx->mu);
    int mode = atomic_load(&rx->mode);
    if (!hend || got < need) {
        rx_bad(rx, "a request came incomplete");
    } else if (mode == RX_500) {
        static const char r500[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n"
                                   "Connection: close\r\n\r\n";
        send(fd, r500, sizeof r500 - 1, MSG_NOSIGNAL);
        pthread_mutex_lock(&rx->mu);
        rx->answered_500++;
        pthread_mutex_unlock(&rx->mu);
    } else if (mode == RX_HANG || mode == RX_DOWN) {
        /* held without an answer, then closed: the sender must time out */
        pthread_mutex_lock(&rx->mu);
        rx->hung++;
        pthread_mutex_unlock(&rx->mu);
        double until = now_ms() + RX_HANG_MS;
        while (now_ms() < until && atomic_load(&rx->mode) == RX_HANG && !atomic_load(&rx->stop))
            sleep_ms(20);
    } else {
        const char *body = hend + 4;
        size_t blen = got - (size_t)(body - buf);
        char id[32] = "", type[32] = "", sig[128] = "", want[72];
        head_value(buf, "X-Symd-Event-Id", id, sizeof id);
        head_value(buf, "X-Symd-Event", type, sizeof type);
        head_value(buf, "X-Symd-Signature", sig, sizeof sig);
        uint8_t mac[32];
        hmac_sha256(rx->secret, strlen(rx->secret), body, blen, mac);
        memcpy(want, "sha256=", 7);
        for (int i = 0; i < 32; i++)
            snprintf(want + 7 + 2 * i, 3, "%02x", mac[i]);
        json_error_t je;
        json_t *doc = json_loadb(body, blen, 0, &je);
        long long eid = atoll(id);
        if (strcmp(sig, want) != 0)
            rx_bad(rx, "signature mismatch");
        else if (!doc || json_integer_value(json_object_get(doc, "id")) != eid ||
                 strcmp(json_string_value(json_object_get(doc, "type")) ?: "", type) != 0 ||
                 !json_is_object(json_object_get(doc, "data")))
            rx_bad(rx, "body and headers disagree");
        else if (eid <= 0 || eid >= RX_MAX_EVENTS)
            rx_bad(rx, "event id out of range");
        else {
            static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: "
                                     "close\r\n\r\n";
            /* counted once the answer is out: what the sender sees */
            if (send(fd, ok, sizeof ok - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof ok - 1)) {
                pthread_mutex_lock(&rx->mu);
                rx->acked[eid]++;
                rx->total_acked++;
                snprintf(rx->types[eid], sizeof rx->types[eid], "%s", type);
                pthread_mutex_unlock(&rx->mu);
            }
        }
        json_decref(doc);
    }
    free(buf);
    close(fd);
    pthread_mutex_lock(&rx->mu);
    rx->open_conns--;
    pthread_mutex_unlock(&rx->mu);
    return NULL;
}

/* Accepts while up; closes the listening socket while down (connections
 * refused), opens it again on the same port after. */
static void *rx_main(void *arg)
{
    receiver *rx = arg;
    while (!atomic_load(&rx->stop)) {
        if (atomic_load(&rx->mode) == RX_DOWN) {
            if (rx->lfd >= 0) {
                close(rx->lfd);
                rx->lfd = -1;
            }
            sleep_ms(20);
            continue;
        }
        if (rx->lfd < 0 && (rx->lfd = rx_listen(rx->port)) < 0) {
            sleep_ms(20);
            continue;
        }
        struct pollfd pf = {rx->lfd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0)
            continue;
        int fd = accept4(rx->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        rx_conn *cn = malloc(sizeof *cn);
        cn->rx = rx;
        cn->fd = fd;
        pthread_mutex_lock(&rx->mu);
        rx->open_conns++;
        pthread_mutex_unlock(&rx->mu);
        pthread_t t;
        if (pthread_create(&t, NULL, rx_serve, cn) == 0)
            pthread_detach(t);
        else {
            close(fd);
            free(cn);
        }
    }
    if (rx->lfd >= 0)
        close(rx->lfd);
    return NULL;
}

static bool rx_start(receiver *rx, const char *secret)
{
    memset(rx, 0, sizeof *rx);
    snprintf(rx->secret, sizeof rx->secret, "%s", secret);
    pthread_mutex_init(&rx->mu, NULL);
    rx->lfd = rx_listen(0);
    if (rx->lfd < 0)
        return false;
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    getsockname(rx->lfd, (struct sockaddr *)&a, &al);
    rx->port = ntohs(a.sin_port);
    return pthread_create(&rx->thread, NULL, rx_main, rx) == 0;
}

static void rx_stop(receiver *rx)
{
    atomic_store(&rx->stop, true);
    pthread_join(rx->thread, NULL);
    for (int i = 0; i < 400; i++) { /* hung requests end within 20 ms of stop */
        pthread_mutex_lock(&rx->mu);
        int open = rx->open_conns;
        pthread_mutex_unlock(&rx->mu);
        if (!open)
            break;
        sleep_ms(10);
    }
}

static int rx_total(receiver *rx)
{
    pthread_mutex_lock(&rx->mu);
    int n = rx->total_acked;
    pthread_mutex_unlock(&rx->mu);
    return n;
}

/* Runs sql on the SQLite file db (nothing else has it open). */
static void sqlite3_exec_file(const char *db, const char *sql)
{
    sqlite3 *h;
    char *msg = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK && sqlite3_exec(h, sql, NULL, NULL, &msg) == SQLITE_OK,
          "%s: %s", sql, msg ? msg : sqlite3_errmsg(h));
    sqlite3_free(msg);
    sqlite3_close(h);
}

/* ---- crashes ---- */

/* The bigapp-twin report with its libfix.dylib image under UUID variant v
 * (0: as it is): each variant needs an image never uploaded, one more
 * image.missing event; the group stays (frames are named by image name).
 * Each call's report is an incident of its own (report_renumber): the store
 * keeps a report posted again once. */
static char *crash_variant(int v, size_t *len)
{
    static atomic_uint incidents;
    char *text = (char *)read_fixture("fixtures/crashes/bigapp-twin.crash", len);
    if (text)
        report_renumber((uint8_t *)text, *len, atomic_fetch_add(&incidents, 1) + 1);
    if (!text || v == 0)
        return text;
    char *at = strstr(text, "<4c4c444855553144a1880c3b883681d9>");
    if (at) {
        char repl[40];
        snprintf(repl, sizeof repl, "<4c4c44485555314400000000%08x>", (unsigned)v);
        memcpy(at, repl, 34);
    }
    return text;
}

/* Posts variant v to port; the request's milliseconds, -1 when not 201. */
static double post_variant(int port, int v)
{
    size_t len;
    char *text = crash_variant(v, &len);
    if (!text)
        return -1;
    http_resp r;
    double t0 = now_ms();
    bool ok = http_do(port, "POST", "/v1/crashes", NULL, text, len, &r);
    double ms = now_ms() - t0;
    bool created = ok && r.status == 201;
    CHECK(created, "crash variant %d: %d %s", v, r.status, r.body ? r.body : "");
    if (ok)
        http_resp_free(&r);
    free(text);
    return created ? ms : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double p99(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[(n * 99 + 99) / 100 - 1];
}

/* Waits (at most ms) until the receiver acknowledged want events and the
 * store holds no delivery not delivered. */
static bool wait_all_delivered(receiver *rx, const char *db, long long want, int ms)
{
    double until = now_ms() + ms;
    while (now_ms() < until) {
        if (rx_total(rx) >= want &&
            db_query_int(db, "SELECT count(*) FROM webhook_deliveries WHERE state <> 1") == 0)
            return true;
        sleep_ms(100);
    }
    return false;
}

static void hook_url(const receiver *rx, char *out, size_t cap)
{
    snprintf(out, cap, "http://127.0.0.1:%d/hooks/symd?x=1", rx->port);
}

/* Every event the store holds acknowledged exactly once, none other. */
static void check_exactly_once(receiver *rx, const char *db)
{
    long long events = db_query_int(db, "SELECT count(*) FROM webhook_events");
    long long maxid = db_query_int(db, "SELECT coalesce(max(id), 0) FROM webhook_events");
    CHECK(events > 0 && events == maxid, "events %lld, max id %lld", events, maxid);
    pthread_mutex_lock(&rx->mu);
    int twice = 0, never = 0, first_bad = 0;
    for (long long id = 1; id <= maxid && id < RX_MAX_EVENTS; id++) {
        if (rx->acked[id] != 1 && !first_bad)
            first_bad = (int)id;
        twice += rx->acked[id] > 1;
        never += rx->acked[id] == 0;
    }
    int total = rx->total_acked, bad = rx->bad;
    char last_bad[256];
    snprintf(last_bad, sizeof last_bad, "%s", rx->last_bad);
    pthread_mutex_unlock(&rx->mu);
    CHECK(twice == 0 && never == 0 && total == events,
          "%lld events: %d acknowledged twice, %d never, %d acknowledgements (first wrong: "
          "event %d)", events, twice, never, total, first_bad);
    CHECK(bad == 0, "%d bad requests, the last: %s", bad, last_bad);
}

/* The acceptance: through a 60 s outage (nothing listening), a symd
 * restart (SIGTERM) and a kill -9 inside it, answers of 500 and a receiver
 * that hangs, every
 * event is acknowledged exactly once, signed; crash posts' p99 with the
 * receiver hanging stays that of posts with it up. */
TEST(e2e_webhooks_exactly_once_through_outage_restart_500_and_hang)
{
    receiver rx;
    CHECK(rx_start(&rx, "s3cret-hooks"), "receiver");
    char url[128], db[512];
    hook_url(&rx, url, sizeof url);
    snprintf(db, sizeof db, "%s/hooks-once.db", test_tmpdir());
    const char *extra[] = {"--webhook", url, "--webhook-secret", "s3cret-hooks",
                           "--webhook-timeout", "2", "--webhook-backoff-max", "2",
                           "--access-log", "off", NULL};
    server_proc p;
    if (!server_start(&p, db, extra)) {
        CHECK(false, "symd did not start");
        rx_stop(&rx);
        return;
    }
    /* the first crash: its group is new, both its app images missing */
    post_variant(p.port, 0);
    CHECK(wait_all_delivered(&rx, db, 3, 20000), "first 3 events: %d acknowledged",
          rx_total(&rx));
    pthread_mutex_lock(&rx.mu);
    CHECK(strcmp(rx.types[1], "group.new") == 0 && strcmp(rx.types[2], "image.missing") == 0 &&
              strcmp(rx.types[3], "image.missing") == 0,
          "first events: %s %s %s", rx.types[1], rx.types[2], rx.types[3]);
    pthread_mutex_unlock(&rx.mu);

    /* baseline: posts with the receiver up, each an event */
    enum { NLAT = 200 };
    double base[NLAT], hang[NLAT];
    int v = 1;
    for (int i = 0; i < NLAT; i++)
        base[i] = post_variant(p.port, v++);

    /* the outage: 60 s with nothing listening, symd restarted 20 s in and
     * killed 40 s in */
    const char *outage_env = getenv("SYMD_WEBHOOK_OUTAGE_S");
    int outage_ms = (outage_env ? atoi(outage_env) : 60) * 1000;
    atomic_store(&rx.mode, RX_DOWN);
    double t0 = now_ms();
    for (int i = 0; i < 10; i++)
        post_variant(p.port, v++);
    sleep_ms(outage_ms / 3);
    int during = rx_total(&rx);
    CHECK(server_stop(&p), "symd did not stop cleanly during the outage");
    CHECK(server_start(&p, db, extra), "symd did not start again");
    for (int i = 0; i < 10; i++)
        post_variant(p.port, v++);
    /* and killed outright 40 s in: what it committed is still sent */
    sleep_ms((int)(t0 + 2 * outage_ms / 3 - now_ms() > 0 ? t0 + 2 * outage_ms / 3 - now_ms() : 0));
    kill(p.pid, SIGKILL);
    int wst;
    waitpid(p.pid, &wst, 0);
    CHECK(server_start(&p, db, extra), "symd did not start after kill -9");
    for (int i = 0; i < 5; i++)
        post_variant(p.port, v++);
    double left = t0 + outage_ms - now_ms();
    if (left > 0)
        sleep_ms((int)left);
    CHECK(rx_total(&rx) == during, "acknowledged during the outage: %d -> %d", during,
          rx_total(&rx));
    long long tried = db_query_int(db, "SELECT count(*) FROM webhook_deliveries WHERE state = 0 "
                                       "AND attempts >= 3 AND last_error <> ''");
    CHECK(tried >= 20, "deliveries retried through the outage: %lld of 25", tried);

    /* 500s for 4 s: counted as failed attempts, retried */
    atomic_store(&rx.mode, RX_500);
    sleep_ms(4000);
    pthread_mutex_lock(&rx.mu);
    int n500 = rx.answered_500;
    pthread_mutex_unlock(&rx.mu);
    CHECK(n500 >= 1, "no request while answering 500");
    CHECK(db_query_int(db, "SELECT count(*) FROM webhook_deliveries WHERE last_status = 500") >=
              1,
          "no attempt recorded a 500");

    /* hanging: posts as fast as with the receiver up */
    atomic_store(&rx.mode, RX_HANG);
    sleep_ms(500);
    for (int i = 0; i < NLAT; i++)
        hang[i] = post_variant(p.port, v++);
    sleep_ms(2500); /* at least one attempt timed out */
    pthread_mutex_lock(&rx.mu);
    int hung = rx.hung;
    pthread_mutex_unlock(&rx.mu);
    CHECK(hung >= 1, "no request hung");
    double pb = p99(base, NLAT), ph = p99(hang, NLAT);
    fprintf(stderr, "    crash post p99: %.1f ms receiver up, %.1f ms receiver hanging\n", pb,
            ph);
    /* a post that waited on the receiver would wait its 2 s timeout: the
     * margin is the shared machine's noise, far below that */
    CHECK(ph <= 3 * pb + 100, "p99 with the receiver hanging %.1f ms, up %.1f ms", ph, pb);

    /* back up: everything arrives, once */
    atomic_store(&rx.mode, RX_UP);
    /* 3 for the first crash, one image.missing a crash after, and the
     * group's spike at its 10th crash this hour (the default threshold;
     * again when a new hour began meanwhile) */
    long long events = db_query_int(db, "SELECT count(*) FROM webhook_events");
    long long spikes =
        db_query_int(db, "SELECT count(*) FROM webhook_events WHERE type = 'group.spike'");
    CHECK(spikes >= 1 && spikes <= 2, "spikes: %lld (two when an hour began)", spikes);
    CHECK(events == 3 + (v - 1) + spikes, "events %lld for %d crashes", events, v);
    CHECK(wait_all_delivered(&rx, db, events, 60000), "all %lld delivered: %d acknowledged",
          events, rx_total(&rx));
    check_exactly_once(&rx, db);

    /* the log: newest first, delivered, the retried ones saying so */
    int status;
    json_t *j = http_json(p.port, "GET", "/v1/webhooks/deliveries?limit=500", NULL, NULL, 0,
                          &status, NULL);
    json_t *arr = json_object_get(j, "deliveries");
    CHECK(status == 200 && json_array_size(arr) == (size_t)events, "log: %d, %zu rows", status,
          json_array_size(arr));
    int retried = 0;
    long long prev = INT64_MAX;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *d = json_array_get(arr, i);
        long long id = json_integer_value(json_object_get(d, "id"));
        CHECK(id < prev, "log order at %zu", i);
        prev = id;
        CHECK(strcmp(json_string_value(json_object_get(d, "state")) ?: "", "delivered") == 0 &&
                  json_integer_value(json_object_get(d, "last_status")) == 200 &&
                  strcmp(json_string_value(json_object_get(d, "url")) ?: "", url) == 0,
              "delivery %lld not delivered to %s", id, url);
        retried += json_integer_value(json_object_get(d, "attempts")) > 1;
    }
    CHECK(retried >= 20, "deliveries with more than one attempt: %d", retried);
    json_decref(j);
    /* paging */
    j = http_json(p.port, "GET", "/v1/webhooks/deliveries?limit=2", NULL, NULL, 0, &status, NULL);
    const char *cur = json_string_value(json_object_get(j, "next_cursor"));
    CHECK(json_array_size(json_object_get(j, "deliveries")) == 2 && cur, "first page");
    char path[96];
    snprintf(path, sizeof path, "/v1/webhooks/deliveries?limit=2&cursor=%s", cur ? cur : "0");
    json_t *j2 = http_json(p.port, "GET", path, NULL, NULL, 0, &status, NULL);
    json_t *first2 = json_array_get(json_object_get(j2, "deliveries"), 0);
    CHECK(json_integer_value(json_object_get(first2, "id")) == events - 2,
          "second page starts at %lld", (long long)json_integer_value(json_object_get(first2, "id")));
    json_decref(j);
    json_decref(j2);
    CHECK(server_stop(&p), "symd did not stop cleanly");
    rx_stop(&rx);
}

/* group.spike: once the group's count this hour passes the threshold
 * (factor x its hourly mean of the week before, at least the minimum),
 * once per hour; a group with a week of crashes behind it needs more. */
TEST(e2e_webhooks_spike_once_per_hour_over_the_baseline)
{
    receiver rx;
    CHECK(rx_start(&rx, "k"), "receiver");
    char url[128], db[512];
    hook_url(&rx, url, sizeof url);
    snprintf(db, sizeof db, "%s/hooks-spike.db", test_tmpdir());
    const char *extra[] = {"--webhook", url, "--webhook-secret", "k", "--webhook-spike-factor",
                           "3", "--webhook-spike-min", "5", "--access-log", "off", NULL};
    server_proc p;
    if (!server_start(&p, db, extra)) {
        CHECK(false, "symd did not start");
        rx_stop(&rx);
        return;
    }
    for (int i = 0; i < 8; i++)
        post_variant(p.port, 0);
    long long spikes = db_query_int(db, "SELECT count(*) FROM webhook_events WHERE type = "
                                        "'group.spike'");
    CHECK(spikes == 1, "spikes after 8 crashes of a new group (min 5): %lld", spikes);
    /* the 5th crash crossed it: hour_count 5, no baseline */
    long long events = db_query_int(db, "SELECT count(*) FROM webhook_events");
    CHECK(wait_all_delivered(&rx, db, events, 20000), "delivered");
    check_exactly_once(&rx, db);
    int status;
    json_t *j = http_json(p.port, "GET", "/v1/webhooks/deliveries", NULL, NULL, 0, &status, NULL);
    json_t *arr = json_object_get(j, "deliveries");
    bool seen = false;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *d = json_array_get(arr, i);
        if (strcmp(json_string_value(json_object_get(d, "type")) ?: "", "group.spike") != 0)
            continue;
        json_t *data = json_object_get(d, "data");
        seen = true;
        CHECK(json_integer_value(json_object_get(data, "hour_count")) == 5 &&
                  json_integer_value(json_object_get(data, "baseline_count")) == 0 &&
                  json_number_value(json_object_get(data, "factor")) == 3 &&
                  json_integer_value(json_object_get(json_object_get(data, "crash"), "id")) == 5,
              "spike data: %s", json_dumps(data, JSON_COMPACT));
    }
    CHECK(seen, "no group.spike in the log");
    json_decref(j);
    CHECK(server_stop(&p), "symd did not stop cleanly");

    /* a week of 10 an hour behind another group: 3 x 10 = 30 needed, 8 are not */
    char db2[512];
    snprintf(db2, sizeof db2, "%s/hooks-spike2.db", test_tmpdir());
    CHECK(server_start(&p, db2, extra), "symd did not start");
    post_variant(p.port, 0); /* makes the schema and the group */
    CHECK(server_stop(&p), "symd did not stop");
    long long hour = (long long)time(NULL) / 3600;
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO crash_group_hours(kind, signature, hour, count) SELECT kind, "
             "signature, %lld - h, 10 FROM crash_groups, (WITH RECURSIVE r(h) AS (SELECT 1 "
             "UNION ALL SELECT h + 1 FROM r WHERE h < 168) SELECT h FROM r) hs",
             hour);
    if (test_pg()) {
        char out[64];
        CHECK(pg_sql(db_arg(db2), sql, out, sizeof out), "seeding the hours");
    } else {
        sqlite3_exec_file(db2, sql);
    }
    CHECK(db_query_int(db2, "SELECT count(*) FROM crash_group_hours") == 169, "seeded hours");
    CHECK(server_start(&p, db2, extra), "symd did not start");
    for (int i = 0; i < 8; i++)
        post_variant(p.port, 0);
    CHECK(db_query_int(db2, "SELECT count(*) FROM webhook_events WHERE type = 'group.spike'") ==
              0,
          "a spike of 9 over a baseline of 10 an hour");
    CHECK(server_stop(&p), "symd did not stop cleanly");
    rx_stop(&rx);
}

/* image.missing: for each image of the app's a crash needs whose UUID was
 * never uploaded, once per UUID; an uploaded one (libfix) tells nothing;
 * group.new once per group. */
TEST(e2e_webhooks_image_missing_once_per_uuid_and_not_for_uploads)
{
    receiver rx;
    CHECK(rx_start(&rx, "k"), "receiver");
    char url[128], db[512];
    hook_url(&rx, url, sizeof url);
    snprintf(db, sizeof db, "%s/hooks-missing.db", test_tmpdir());
    const char *extra[] = {"--webhook", url, "--webhook-secret", "k", "--access-log", "off",
                           NULL};
    server_proc p;
    if (!server_start(&p, db, extra)) {
        CHECK(false, "symd did not start");
        rx_stop(&rx);
        return;
    }
    int status;
    json_t *u = http_post_fixture(p.port, "fixtures/bin/libfix-arm64.dylib",
                                  "/v1/images?name=libfix.dylib", &status);
    CHECK(status == 201 || status == 200, "uploading libfix: %d", status);
    json_decref(u);
    post_variant(p.port, 0);
    post_variant(p.port, 0);
    post_variant(p.port, 7); /* another libfix UUID, never uploaded */
    /* group.new for the crash named by libfix's symbols, image.missing for
     * bigapp; variant 7's libfix is not the uploaded one: its frames are
     * places again (another group.new) and its UUID is missing */
    long long events = db_query_int(db, "SELECT count(*) FROM webhook_events");
    CHECK(events == 4, "events: %lld", events);
    CHECK(wait_all_delivered(&rx, db, events, 20000), "delivered");
    check_exactly_once(&rx, db);
    json_t *j = http_json(p.port, "GET", "/v1/webhooks/deliveries", NULL, NULL, 0, &status, NULL);
    json_t *arr = json_object_get(j, "deliveries");
    const char *want[4][2] = {{"image.missing", "4C4C4448-5555-3144-0000-000000000007"},
                              {"group.new", "libfix.dylib + 0x374 | EXC_BAD_ACCESS (SIGSEGV)"},
                              {"image.missing", "4C4C4490-5555-3144-A17C-64A339EDE13A"},
                              {"group.new", NULL}};
    CHECK(json_array_size(arr) == 4, "log rows: %zu", json_array_size(arr));
    for (size_t i = 0; i < 4 && i < json_array_size(arr); i++) {
        json_t *d = json_array_get(arr, i), *data = json_object_get(d, "data");
        const char *type = json_string_value(json_object_get(d, "type")) ?: "";
        CHECK(strcmp(type, want[i][0]) == 0, "delivery %zu: %s", i, type);
        const char *what =
            i % 2 ? json_string_value(json_object_get(json_object_get(data, "group"),
                                                      "signature"))
                  : json_string_value(json_object_get(json_object_get(data, "image"), "uuid"));
        if (want[i][1])
            CHECK(strcmp(what ?: "", want[i][1]) == 0, "delivery %zu: %s", i, what);
        else /* named by the uploaded libfix's symbols */
            CHECK(what && strncmp(what, "libfix.dylib + ", 15) != 0 &&
                      strstr(what, "| EXC_BAD_ACCESS (SIGSEGV)"),
                  "delivery %zu: %s", i, what);
    }
    json_decref(j);
    CHECK(server_stop(&p), "symd did not stop cleanly");
    rx_stop(&rx);
}

/* symd_webhook_attempts_total{result="..."} of port (-1 when absent). */
static long long attempts_metric(int port, const char *result)
{
    char line[96];
    snprintf(line, sizeof line, "symd_webhook_attempts_total{result=\"%s\"} ", result);
    http_resp r;
    long long v = -1;
    if (!http_do(port, "GET", "/metrics", NULL, NULL, 0, &r))
        return -1;
    const char *at = r.body ? strstr(r.body, line) : NULL;
    if (at)
        v = strtoll(at + strlen(line), NULL, 10);
    http_resp_free(&r);
    return v;
}

/* Waits (at most ms) until the attempts metric of result reaches want;
 * its last value. */
static long long wait_attempts(int port, const char *result, long long want, int ms)
{
    double until = now_ms() + ms;
    long long v;
    while ((v = attempts_metric(port, result)) < want && now_ms() < until)
        sleep_ms(50);
    return v;
}

/* Targets, secret and timings from the environment (SYMD_WEBHOOK...), the
 * flags replacing them when given; every attempt counted in /metrics by
 * how it ended. */
TEST(e2e_webhooks_from_the_environment_counted_in_metrics)
{
    receiver rx;
    CHECK(rx_start(&rx, "env-secret"), "receiver");
    char url[128], db[512];
    hook_url(&rx, url, sizeof url);
    snprintf(db, sizeof db, "%s/hooks-env.db", test_tmpdir());
    setenv("SYMD_WEBHOOK", url, 1);
    setenv("SYMD_WEBHOOK_SECRET", "env-secret", 1);
    setenv("SYMD_WEBHOOK_BACKOFF_MAX", "1", 1);
    const char *extra[] = {"--access-log", "off", NULL};
    server_proc p;
    bool up = server_start(&p, db, extra);
    CHECK(up, "symd did not start with SYMD_WEBHOOK");
    if (up) {
        /* group.new and two image.missing, signed with the variable's secret */
        post_variant(p.port, 0);
        CHECK(wait_all_delivered(&rx, db, 3, 20000), "3 events: %d acknowledged", rx_total(&rx));
        check_exactly_once(&rx, db);
        long long ok = wait_attempts(p.port, "delivered", 3, 2000);
        CHECK(ok == 3 && attempts_metric(p.port, "retry") == 0 &&
                  attempts_metric(p.port, "gave_up") == 0 &&
                  attempts_metric(p.port, "unrecorded") == 0,
              "attempts: delivered %lld retry %lld gave_up %lld unrecorded %lld", ok,
              attempts_metric(p.port, "retry"), attempts_metric(p.port, "gave_up"),
              attempts_metric(p.port, "unrecorded"));
        /* answered 500: each failed attempt counted as a retry, then delivered */
        atomic_store(&rx.mode, RX_500);
        post_variant(p.port, 1); /* one more image.missing */
        long long retries = wait_attempts(p.port, "retry", 2, 10000);
        CHECK(retries >= 2, "attempts answered 500 counted as retries: %lld", retries);
        atomic_store(&rx.mode, RX_UP);
        CHECK(wait_all_delivered(&rx, db, 4, 20000), "4 events: %d acknowledged", rx_total(&rx));
        ok = wait_attempts(p.port, "delivered", 4, 2000);
        CHECK(ok == 4, "delivered attempts: %lld of 4 events", ok);
        check_exactly_once(&rx, db);
        CHECK(server_stop(&p), "symd did not stop cleanly");
    }
    /* a flag replaces the variable's targets (this one would never answer);
     * the variable's secret still signs */
    setenv("SYMD_WEBHOOK", "http://127.0.0.1:9/never", 1);
    const char *flags[] = {"--webhook", url, "--access-log", "off", NULL};
    if (server_start(&p, db, flags)) {
        post_variant(p.port, 2);
        CHECK(wait_all_delivered(&rx, db, 5, 20000), "5 events: %d acknowledged", rx_total(&rx));
        long long elsewhere = db_query_int(db, "SELECT count(*) FROM webhook_deliveries WHERE url "
                                               "LIKE '%:9/never'");
        CHECK(elsewhere == 0, "deliveries to the variable's target: %lld", elsewhere);
        CHECK(server_stop(&p), "symd did not stop cleanly");
    } else {
        CHECK(false, "symd did not start with --webhook over SYMD_WEBHOOK");
    }
    check_exactly_once(&rx, db);
    unsetenv("SYMD_WEBHOOK");
    unsetenv("SYMD_WEBHOOK_SECRET");
    unsetenv("SYMD_WEBHOOK_BACKOFF_MAX");
    rx_stop(&rx);
}

/* symd has no TLS client: an https target is refused at start, saying
 * what to do; so are a URL given twice and a secret without a target. */
TEST(e2e_webhooks_https_and_bad_targets_refused_at_start)
{
    const char *bin = getenv("SYMD_BIN");
    if (!bin) {
        test_skip("needs SYMD_BIN");
        return;
    }
    const char *cases[][2] = {
        {"--webhook https://hooks.example/x", "https is not supported"},
        {"--webhook http://a:1/x --webhook http://a:1/x", "given twice"},
        {"--webhook-secret s", "without --webhook"},
        {"--webhook http://user@a/x", "no user info"},
        {"--webhook http://a:99999/x", "port"},
        {"--webhook ftp://a/x", "starts with http://"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "'%s' serve --listen 127.0.0.1:0 --db '%s/refused.db' %s 2>&1",
                 bin, test_tmpdir(), cases[i][0]);
        FILE *f = popen(cmd, "r");
        char out[2048] = "";
        size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
        out[n] = 0;
        int rc = f ? pclose(f) : -1;
        CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2 && strstr(out, cases[i][1]),
              "%s: exit %d, %s", cases[i][0], WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out);
    }
}

/* Two nodes on one PostgreSQL database, both sending to one receiver
 * that first answers 500: every event acknowledged exactly once. */
TEST(e2e_webhooks_two_postgres_nodes_send_each_event_once)
{
    if (!test_pg()) {
        test_skip("needs PostgreSQL (SYMD_TEST_PG)");
        return;
    }
    receiver rx;
    CHECK(rx_start(&rx, "two"), "receiver");
    atomic_store(&rx.mode, RX_500);
    char url[128], db[512];
    hook_url(&rx, url, sizeof url);
    snprintf(db, sizeof db, "%s/hooks-two.db", test_tmpdir());
    const char *uri = db_arg(db);
    const char *extra[] = {"--webhook", url, "--webhook-secret", "two", "--webhook-timeout",
                           "2", "--webhook-backoff-max", "1", "--webhook-spike-factor", "0",
                           "--access-log", "off", NULL};
    server_proc a, b;
    char la[600], lb[600];
    snprintf(la, sizeof la, "%s-a", db);
    snprintf(lb, sizeof lb, "%s-b", db);
    bool up_a = uri && server_start_on(&a, la, uri, extra);
    bool up_b = up_a && server_start_on(&b, lb, uri, extra);
    CHECK(up_a && up_b, "nodes did not start");
    if (up_a && up_b) {
        for (int v = 1; v <= 40; v++)
            post_variant(v % 2 ? a.port : b.port, v);
        sleep_ms(3000); /* both nodes retrying the same deliveries */
        atomic_store(&rx.mode, RX_UP);
        long long events = db_query_int(db, "SELECT count(*) FROM webhook_events");
        CHECK(events == 42, "events: %lld (no spikes: factor 0)", events);
        CHECK(wait_all_delivered(&rx, db, events, 60000), "all delivered: %d", rx_total(&rx));
        sleep_ms(1000); /* a second send would come within the poll interval */
        check_exactly_once(&rx, db);
    }
    if (up_b)
        CHECK(server_stop(&b), "node b did not stop cleanly");
    if (up_a)
        CHECK(server_stop(&a), "node a did not stop cleanly");
    rx_stop(&rx);
}

/* group.regressed: a group resolved with no version (any later report
 * reopens it) regresses on the next report, and the event is recorded in
 * that post's transaction and delivered once; resolving again in the next
 * version, a report of the same version does not regress it. */
TEST(e2e_webhooks_group_regressed_once_in_the_post)
{
    receiver rx;
    CHECK(rx_start(&rx, "k"), "receiver");
    char url[128], db[512];
    hook_url(&rx, url, sizeof url);
    snprintf(db, sizeof db, "%s/hooks-regressed.db", test_tmpdir());
    const char *extra[] = {"--webhook", url, "--webhook-secret", "k", "--access-log", "off",
                           NULL};
    server_proc p;
    if (!server_start(&p, db, extra)) {
        CHECK(false, "symd did not start");
        rx_stop(&rx);
        return;
    }
    size_t len;
    char *text = crash_variant(0, &len);
    int status;
    json_t *c = http_json(p.port, "POST", "/v1/crashes", NULL, text, len, &status, NULL);
    CHECK(status == 201, "first post: %d", status);
    const char *sig = json_string_value(json_object_get(c, "signature"));
    json_t *body = json_pack("{s:s, s:s, s:s}", "kind", "crash", "signature", sig ? sig : "",
                             "state", "resolved");
    char *b = json_dumps(body, JSON_COMPACT);
    json_t *st = http_json(p.port, "POST", "/v1/crashes/group/state", NULL, b, strlen(b), &status,
                           NULL);
    CHECK(status == 200, "resolve: %d", status);
    json_decref(st);
    free(b);
    json_decref(body);
    report_renumber((uint8_t *)text, len, 90001); /* another report of the group */
    json_t *c2 = http_json(p.port, "POST", "/v1/crashes", NULL, text, len, &status, NULL);
    CHECK(status == 201, "second post: %d", status);
    long long regressed =
        db_query_int(db, "SELECT count(*) FROM webhook_events WHERE type = 'group.regressed'");
    CHECK(regressed == 1, "group.regressed events: %lld", regressed);
    /* resolved in the next version: a report of the same version stays resolved */
    body = json_pack("{s:s, s:s, s:s, s:s}", "kind", "crash", "signature", sig ? sig : "", "state",
                     "resolved", "resolved_in", "next");
    b = json_dumps(body, JSON_COMPACT);
    st = http_json(p.port, "POST", "/v1/crashes/group/state", NULL, b, strlen(b), &status, NULL);
    CHECK(status == 200, "resolve in the next version: %d", status);
    json_decref(st);
    free(b);
    json_decref(body);
    report_renumber((uint8_t *)text, len, 90002);
    json_t *c3 = http_json(p.port, "POST", "/v1/crashes", NULL, text, len, &status, NULL);
    CHECK(status == 201, "third post: %d", status);
    regressed =
        db_query_int(db, "SELECT count(*) FROM webhook_events WHERE type = 'group.regressed'");
    CHECK(regressed == 1, "a report of the same version regressed it: %lld events", regressed);
    /* the third report posted again is a copy: no event of its own */
    long long events = db_query_int(db, "SELECT count(*) FROM webhook_events");
    json_t *c4 = http_json(p.port, "POST", "/v1/crashes", NULL, text, len, &status, NULL);
    CHECK(status == 200 && json_integer_value(json_object_get(c4, "id")) ==
                               json_integer_value(json_object_get(c3, "id")),
          "the third post again: %d", status);
    json_decref(c4);
    CHECK(db_query_int(db, "SELECT count(*) FROM webhook_events") == events,
          "a copy made webhook events");
    CHECK(wait_all_delivered(&rx, db, events, 20000), "delivered");
    check_exactly_once(&rx, db);
    json_t *j = http_json(p.port, "GET", "/v1/webhooks/deliveries", NULL, NULL, 0, &status, NULL);
    json_t *arr = json_object_get(j, "deliveries");
    bool seen = false;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *d = json_array_get(arr, i), *data = json_object_get(d, "data");
        if (strcmp(json_string_value(json_object_get(d, "type")) ?: "", "group.regressed"))
            continue;
        seen = true;
        json_t *g = json_object_get(data, "group"), *cr = json_object_get(data, "crash");
        CHECK(sig && !strcmp(json_string_value(json_object_get(g, "signature")) ?: "", sig) &&
                  json_integer_value(json_object_get(cr, "id")) ==
                      json_integer_value(json_object_get(c2, "id")) &&
                  !strcmp(json_string_value(json_object_get(cr, "app_version")) ?: "", "1.0 (1)") &&
                  json_integer_value(json_object_get(data, "count")) == 2,
              "group.regressed data: %s", json_dumps(data, JSON_COMPACT));
    }
    CHECK(seen, "no group.regressed delivery in the log");
    json_decref(j);
    json_decref(c);
    json_decref(c2);
    json_decref(c3);
    free(text);
    CHECK(server_stop(&p), "symd did not stop cleanly");
    rx_stop(&rx);
}

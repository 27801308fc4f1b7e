/* Operations: the embedded dashboard's files, /metrics, the access log,
 * connection limits, request timeouts and the graceful stop, each against
 * the real server. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

static lazy_server srv = {"ops.db", NULL, {0}, false};

__attribute__((destructor)) static void stop_leftover_server(void)
{
    lazy_stop(&srv);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Seconds until the server closes fd (reads return 0 or an error), at most
 * limit; what was read is dropped. */
static double seconds_until_closed(int fd, double limit)
{
    double t0 = now_s();
    char buf[4096];
    while (now_s() - t0 < limit) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) > 0) {
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r <= 0)
                return now_s() - t0;
        }
    }
    return limit;
}

/* The value of the exposition line that starts with series (the full name
 * with labels), or -1. */
static double metric(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    return -1;
}

static char *get_body(int port, const char *path, int *status)
{
    http_resp r;
    bool ok = http_do(port, "GET", path, NULL, NULL, 0, &r);
    CHECK(ok, "GET %s: no answer", path);
    *status = r.status;
    char *b = r.body;
    r.body = NULL;
    http_resp_free(&r);
    return b;
}

/* A server of the test's own (flags that the shared one must not have), on
 * a fresh database called name; false (and a failed check) when it did not
 * start. */
static bool start_own(server_proc *s, const char *name, const char *const *extra)
{
    char db[600];
    snprintf(db, sizeof db, "%s/%s", test_tmpdir(), name);
    bool ok = server_start(s, db, extra);
    CHECK(ok, "server %s starts", name);
    return ok;
}

TEST(ops_dashboard_is_embedded_with_a_strict_policy)
{
    int port = lazy_port(&srv);
    http_resp r;
    CHECK(http_do(port, "GET", "/", NULL, NULL, 0, &r) && r.status == 200, "GET / answers");
    const char *ct = http_header(&r, "Content-Type");
    CHECK(ct && strncmp(ct, "text/html", 9) == 0, "GET / is HTML (%s)", ct ? ct : "none");
    const char *csp = http_header(&r, "Content-Security-Policy");
    CHECK(csp && strstr(csp, "script-src 'self'") && !strstr(csp, "unsafe-inline"),
          "the page forbids inline script (%s)", csp ? csp : "no policy");
    CHECK(r.body && strstr(r.body, "<script type=\"module\" src=\"/assets/js/main.js\">") &&
              strstr(r.body, "/assets/style.css"),
          "the page loads its script module and style from /assets/");
    CHECK(r.body && !strstr(r.body, "<script>") && !strstr(r.body, "onclick="),
          "no inline script or handler in the page");
    http_resp_free(&r);

    CHECK(http_do(port, "GET", "/assets/js/main.js", NULL, NULL, 0, &r) && r.status == 200,
          "js/main.js is served");
    ct = http_header(&r, "Content-Type");
    CHECK(ct && strncmp(ct, "text/javascript", 15) == 0, "js/main.js type %s", ct ? ct : "none");
    CHECK(r.len > 500 && r.body && strstr(r.body, "import "), "js/main.js is a module (%zu bytes)",
          r.len);
    const char *cc = http_header(&r, "Cache-Control");
    CHECK(cc && strcmp(cc, "no-cache") == 0, "modules are revalidated (%s)", cc ? cc : "none");
    char etag[128] = "";
    const char *e = http_header(&r, "ETag");
    CHECK(e && e[0] == '"', "assets carry an ETag");
    snprintf(etag, sizeof etag, "%s", e ? e : "");
    http_resp_free(&r);

    char hdr[200];
    snprintf(hdr, sizeof hdr, "If-None-Match: %s\r\n", etag);
    CHECK(http_do(port, "GET", "/assets/js/main.js", hdr, NULL, 0, &r) && r.status == 304 &&
              r.len == 0,
          "a matching If-None-Match gets 304 and no body (%d)", r.status);
    http_resp_free(&r);

    /* every module main.js imports is served as JavaScript */
    static const char *const modules[] = {"api.js", "dom.js", "tokens.js", "view-crash.js",
                                          "view-missing.js"};
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "/assets/js/%s", modules[i]);
        CHECK(http_do(port, "GET", path, NULL, NULL, 0, &r) && r.status == 200, "%s is served (%d)",
              path, r.status);
        ct = http_header(&r, "Content-Type");
        CHECK(ct && strncmp(ct, "text/javascript", 15) == 0, "%s type %s", path,
              ct ? ct : "none");
        http_resp_free(&r);
    }

    static const char *const absent[] = {"/assets/nope.js", "/assets/", "/assets/../symd.db",
                                         "/assets/sub/app.js", "/index.html", "/assets/app.js",
                                         "/assets/main.js", "/assets/js", "/assets/js/",
                                         "/assets/js/nope.js", "/assets/js/js/main.js",
                                         "/assets/js/../style.css", "/assets/js/style.css"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
        CHECK(http_do(port, "GET", absent[i], NULL, NULL, 0, &r) && r.status == 404,
              "%s is 404 (%d)", absent[i], r.status);
        http_resp_free(&r);
    }
    CHECK(http_do(port, "POST", "/", NULL, "x", 1, &r) && r.status == 405, "POST / is 405");
    const char *allow = http_header(&r, "Allow");
    CHECK(allow && strcmp(allow, "GET") == 0, "405 names the allowed methods (%s)",
          allow ? allow : "none");
    http_resp_free(&r);
}

TEST(ops_metrics_count_requests_frames_and_storage)
{
    int port = lazy_port(&srv);
    size_t len;
    uint8_t *bin = read_fixture("fixtures/bin/bigapp-arm64", &len);
    http_resp r;
    CHECK(http_do(port, "POST", "/v1/images?name=bigapp", NULL, bin, len, &r) &&
              (r.status == 201 || r.status == 200),
          "upload (%d)", r.status);
    http_resp_free(&r);
    free(bin);
    const char *body =
        "{\"images\":[{\"uuid\":\"4c4c4490-5555-3144-a17c-64a339ede13a\",\"slide\":\"0x4a38000\"},"
        " {\"uuid\":\"00000000-1111-2222-3333-444444444444\",\"load_address\":\"0x200000000\"}],"
        " \"threads\":[{\"frames\":[\"0x104a38884\",\"0x104a38884\",\"0x200000040\",\"0x10\"]}]}";
    for (int i = 0; i < 3; i++) {
        CHECK(http_do(port, "POST", "/v1/symbolicate", NULL, body, strlen(body), &r) &&
                  r.status == 200,
              "symbolicate (%d)", r.status);
        http_resp_free(&r);
    }
    CHECK(http_do(port, "GET", "/v1/nothing-here", NULL, NULL, 0, &r) && r.status == 404,
          "unknown route");
    http_resp_free(&r);

    CHECK(http_do(port, "GET", "/metrics", NULL, NULL, 0, &r) && r.status == 200, "/metrics");
    const char *ct = http_header(&r, "Content-Type");
    CHECK(ct && strstr(ct, "text/plain") && strstr(ct, "version=0.0.4"),
          "Prometheus text format (%s)", ct ? ct : "none");
    const char *m = r.body ? r.body : "";
    CHECK(metric(m, "symd_http_requests_total{route=\"/v1/symbolicate\",status=\"200\"}") >= 3,
          "symbolicate requests counted by route and status");
    CHECK(metric(m, "symd_http_requests_total{route=\"unmatched\",status=\"404\"}") >= 1,
          "unmatched requests counted under one label");
    CHECK(metric(m, "symd_http_request_duration_seconds_count{route=\"/v1/symbolicate\"}") >= 3 &&
              metric(m, "symd_http_request_duration_seconds_bucket{route=\"/v1/symbolicate\","
                        "le=\"+Inf\"}") >= 3,
          "latency histogram");
    CHECK(metric(m, "symd_frames_total{status=\"symbolicated\"}") >= 6 &&
              metric(m, "symd_frames_total{status=\"missing_image\"}") >= 3 &&
              metric(m, "symd_frames_total{status=\"unknown_image\"}") >= 3,
          "frames by status");
    CHECK(metric(m, "symd_images") >= 1, "images stored");
    CHECK(metric(m, "symd_crashes") >= 0, "crashes stored");
    CHECK(metric(m, "symd_upload_bytes_total") >= (double)len, "upload bytes");
    CHECK(metric(m, "symd_index_cache_bytes") > 0 && metric(m, "symd_index_cache_hits_total") >= 1 &&
              metric(m, "symd_index_cache_misses_total") >= 1,
          "index cache bytes, hits and misses");
    CHECK(metric(m, "process_resident_memory_bytes") > 1e6, "RSS");
    /* Every sample line is NAME[{LABELS}] VALUE, every family has TYPE. */
    size_t lines = 0, bad = 0;
    for (const char *p = m; *p;) {
        const char *eol = strchr(p, '\n');
        if (!eol)
            break;
        if (*p != '#') {
            size_t name = strspn(p, "abcdefghijklmnopqrstuvwxyz_:ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
            const char *q = p + name;
            if (*q == '{') { /* label values may hold braces: "/v1/images/{uuid}" */
                const char *close = memrchr(q, '}', (size_t)(eol - q));
                q = close ? close + 1 : eol;
            }
            char *end;
            if (name == 0 || *q != ' ' || (strtod(q + 1, &end), end != eol))
                bad++;
            lines++;
        }
        p = eol + 1;
    }
    CHECK(lines > 20 && bad == 0, "%zu of %zu sample lines malformed", bad, lines);
    http_resp_free(&r);
}

TEST(ops_access_log_has_a_line_per_request)
{
    int port = lazy_port(&srv);
    http_resp r;
    CHECK(http_do(port, "GET", "/v1/images?query=access%20log%0Aforged", NULL, NULL, 0, &r),
          "list");
    http_resp_free(&r);
    CHECK(http_do(port, "DELETE", "/healthz", NULL, NULL, 0, &r) && r.status == 405, "405");
    http_resp_free(&r);
    char rel[700];
    snprintf(rel, sizeof rel, "%s.access.log", srv.proc.db);
    /* Lines are written after the answer is sent: give the server a moment. */
    char *log = NULL;
    for (int i = 0; i < 50; i++) {
        FILE *f = fopen(rel, "rb");
        free(log);
        log = NULL;
        if (f) {
            log = calloc(1, 1 << 20);
            size_t n = fread(log, 1, (1 << 20) - 1, f);
            log[n] = 0;
            fclose(f);
        }
        if (log && strstr(log, " DELETE /healthz 405 "))
            break;
        usleep(20000);
    }
    CHECK(log, "access log at %s", rel);
    if (!log)
        return;
    const char *line = strstr(log, " DELETE /healthz 405 ");
    CHECK(line, "a line for the 405 (method, path, status)");
    if (line) {
        const char *eol = strchr(line, '\n');
        const char *us = eol ? eol - 2 : NULL;
        CHECK(us && strncmp(us, "us", 2) == 0, "the line ends in microseconds");
        const char *ip = line;
        while (ip > log && ip[-1] != '\n')
            ip--;
        CHECK(strncmp(ip, "20", 2) == 0 && strstr(ip, "Z 127.0.0.1 DELETE"),
              "time and client come first");
    }
    CHECK(strstr(log, " GET /v1/images 200 "), "the query string is not logged");
    CHECK(!strstr(log, "\nforged"), "a request cannot forge a log line");
    free(log);
}

/* A client that sends one byte a second is cut off: in the headers by
 * --header-timeout, in the body by --request-timeout. Idle keep-alive
 * connections are not requests and follow the header deadline. */
TEST(ops_slow_clients_are_cut_off)
{
    const char *extra[] = {"--header-timeout", "1", "--request-timeout", "2", NULL};
    server_proc s;
    if (!start_own(&s, "ops-slow.db", extra))
        return;
    int hfd = connect_port(s.port), bfd = connect_port(s.port);
    CHECK(hfd >= 0 && bfd >= 0, "connect");
    const char *bhead = "POST /v1/symbolicate HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n";
    CHECK(send(bfd, bhead, strlen(bhead), MSG_NOSIGNAL) > 0, "send body head");
    double t0 = now_s(), hcut = 0, bcut = 0;
    const char *drip = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaa";
    for (size_t i = 0; now_s() - t0 < 8 && (!hcut || !bcut); i++) {
        if (!hcut && send(hfd, drip + i % strlen(drip), 1, MSG_NOSIGNAL) < 0)
            hcut = now_s() - t0;
        if (!bcut && send(bfd, "{", 1, MSG_NOSIGNAL) < 0)
            bcut = now_s() - t0;
        if (!hcut && seconds_until_closed(hfd, 0.05) < 0.05)
            hcut = now_s() - t0;
        if (!bcut && seconds_until_closed(bfd, 0.05) < 0.05)
            bcut = now_s() - t0;
        usleep(200000);
    }
    CHECK(hcut > 0.5 && hcut < 3.5, "slow headers cut after %.1f s (header timeout 1 s)", hcut);
    CHECK(bcut > 1.5 && bcut < 4.5, "slow body cut after %.1f s (request timeout 2 s)", bcut);
    close(hfd);
    close(bfd);
    int port = s.port;
    int st;
    char *m = get_body(port, "/metrics", &st);
    CHECK(m && metric(m, "symd_connection_timeouts_total{phase=\"headers\"}") >= 1 &&
              metric(m, "symd_connection_timeouts_total{phase=\"request\"}") >= 1,
          "timeouts counted by phase");
    free(m);
    char *h = get_body(port, "/healthz", &st);
    CHECK(st == 200, "the server still answers");
    free(h);
    CHECK(server_stop(&s), "clean stop");
}

TEST(ops_per_ip_connection_limit)
{
    const char *extra[] = {"--max-per-ip", "3", NULL};
    server_proc s;
    if (!start_own(&s, "ops-perip.db", extra))
        return;
    int fds[3];
    for (int i = 0; i < 3; i++)
        fds[i] = connect_port(s.port);
    usleep(200000); /* let the server accept the three */
    int extra_fd = connect_port(s.port);
    CHECK(extra_fd >= 0 && seconds_until_closed(extra_fd, 2.0) < 1.5,
          "a fourth connection from the address is closed at once");
    if (extra_fd >= 0)
        close(extra_fd);
    CHECK(seconds_until_closed(fds[0], 0.3) >= 0.3, "the first three stay open");
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    usleep(200000);
    int st;
    char *h = get_body(s.port, "/healthz", &st);
    CHECK(st == 200, "a slot frees when a connection closes (%d)", st);
    free(h);
    CHECK(server_stop(&s), "clean stop");
}

/* A connection from 127.0.0.x (loopback), its first request line sent
 * and its headers never ended; -1 if it cannot connect. */
static int slow_from(const char *src, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in b = {.sin_family = AF_INET};
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || inet_pton(AF_INET, src, &b.sin_addr) != 1 ||
        bind(fd, (struct sockaddr *)&b, sizeof b) != 0 ||
        connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        send(fd, "GET /healthz HTTP/1.1\r\n", 23, MSG_NOSIGNAL) != 23) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Every slot taken by connections still sending their headers: a client
 * from another address takes the oldest one's slot and is answered at
 * once, and a connection from the address holding them all is closed at
 * once instead of waiting in the backlog (issue 17, item 5; the load form
 * is tests/load/attack_slots.py). */
TEST(ops_full_slots_make_room_for_a_new_address)
{
    const char *extra[] = {"--max-connections", "4", "--max-per-ip", "0", NULL};
    server_proc s;
    if (!start_own(&s, "ops-slots.db", extra))
        return;
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = slow_from("127.0.0.2", s.port);
        usleep(20000); /* accepted in this order */
    }
    CHECK(fds[0] >= 0 && fds[3] >= 0, "four slow clients connect");
    usleep(200000);
    int nc = slow_from("127.0.0.3", s.port);
    double t0 = now_s();
    const char rest[] = "Host: x\r\nConnection: close\r\n\r\n";
    char buf[512] = "";
    ssize_t got = 0;
    if (nc >= 0 && send(nc, rest, sizeof rest - 1, MSG_NOSIGNAL) == (ssize_t)sizeof rest - 1) {
        struct pollfd p = {.fd = nc, .events = POLLIN};
        if (poll(&p, 1, 2000) > 0)
            got = recv(nc, buf, sizeof buf - 1, 0);
    }
    double dt = now_s() - t0;
    CHECK(got > 12 && strncmp(buf, "HTTP/1.1 200", 12) == 0 && dt < 0.5,
          "a new address is answered at once with every slot taken (%.3f s: %.12s)", dt, buf);
    if (nc >= 0)
        close(nc);
    CHECK(seconds_until_closed(fds[0], 1.0) < 1.0, "the oldest slow client made room");
    CHECK(seconds_until_closed(fds[1], 0.2) >= 0.2 && seconds_until_closed(fds[3], 0.2) >= 0.2,
          "the other slow clients keep their slots");
    /* The slot the newcomer used is free again: 127.0.0.2 takes it, and
     * then holds all four; one more from it is closed at once. */
    fds[0] = slow_from("127.0.0.2", s.port);
    usleep(100000);
    int more = slow_from("127.0.0.2", s.port);
    CHECK(more >= 0 && seconds_until_closed(more, 1.0) < 0.3,
          "with every slot taken and none to give up, a connection is closed at once");
    if (more >= 0)
        close(more);
    int st;
    char *m = get_body(s.port, "/metrics", &st); /* evicts one more of 127.0.0.2's */
    CHECK(m && metric(m, "symd_connections_evicted_total") >= 2 &&
              metric(m, "symd_connections_refused_total{reason=\"full\"}") >= 1,
          "evictions and refusals counted");
    free(m);
    for (int i = 0; i < 4; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    CHECK(server_stop(&s), "clean stop");
}

/* SIGTERM: a request under way is answered, new connections are refused,
 * and the process exits 0. */
TEST(ops_sigterm_finishes_requests_under_way)
{
    server_proc s;
    if (!start_own(&s, "ops-term.db", NULL))
        return;
    int fd = connect_port(s.port);
    const char *body = "{\"threads\":[{\"frames\":[\"0x1000\"]}]}";
    char head[200];
    snprintf(head, sizeof head,
             "POST /v1/symbolicate HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
             strlen(body));
    CHECK(send(fd, head, strlen(head), MSG_NOSIGNAL) > 0 &&
              send(fd, body, 5, MSG_NOSIGNAL) == 5,
          "half a request sent");
    usleep(300000);
    kill(s.pid, SIGTERM);
    usleep(300000);
    int late = connect_port(s.port);
    CHECK(late < 0, "a new connection is refused while draining");
    if (late >= 0)
        close(late);
    CHECK(waitpid(s.pid, NULL, WNOHANG) == 0, "still running while a request is under way");
    CHECK(send(fd, body + 5, strlen(body) - 5, MSG_NOSIGNAL) > 0, "rest of the body");
    char buf[4096];
    size_t n = 0;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (ssize_t r; n < sizeof buf - 1 && (r = recv(fd, buf + n, sizeof buf - 1 - n, 0)) > 0;)
        n += (size_t)r;
    buf[n] = 0;
    CHECK(strncmp(buf, "HTTP/1.1 200", 12) == 0, "the request under way is answered: %.40s",
          buf);
    CHECK(strcasestr(buf, "Connection: close") != NULL, "and told the connection closes");
    CHECK(strstr(buf, "\"unknown_image\""), "with its real answer");
    close(fd);
    int status = -1;
    for (int i = 0; i < 100 && waitpid(s.pid, &status, WNOHANG) == 0; i++)
        usleep(50000);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exits 0 after draining");
    s.pid = 0;
}

/* An .ips whose threads hold n frames: small to send, large to read. */
static char *many_frames_ips(size_t n, size_t *len)
{
    size_t hl;
    uint8_t *h = read_fixture("fixtures/crashes/bigapp-twin.ips", &hl);
    if (!h)
        return NULL;
    const uint8_t *nl = memchr(h, '\n', hl);
    size_t hdr = nl ? (size_t)(nl - h) + 1 : 0, cap = hdr + n * 40 + 256, o = hdr;
    char *buf = malloc(cap);
    memcpy(buf, h, hdr);
    o += (size_t)snprintf(buf + o, cap - o,
                          "{\"usedImages\":[{\"uuid\":\"00000000-0000-0000-0000-000000000001\","
                          "\"base\":4096,\"size\":65536,\"name\":\"x\"}],"
                          "\"threads\":[{\"triggered\":true,\"frames\":[");
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s{\"imageOffset\":%zu,\"imageIndex\":0}",
                              i ? "," : "", 16 + i % 4096);
    o += (size_t)snprintf(buf + o, cap - o, "]}]}");
    free(h);
    *len = o;
    /* an incident of its own: the header's is bigapp-twin.ips's, which the
     * tests post too (a report of one incident is stored once) */
    report_renumber((uint8_t *)buf, o, (uint32_t)n);
    return buf;
}

/* --request-mem-factor / --request-mem-mb: a report whose reading needs
 * more than its budget is refused 413 and nothing of it is stored; one
 * stored under a larger budget and read again under a smaller one is
 * answered from what the store holds, with a warning. */
TEST(ops_request_memory_budget)
{
    size_t len;
    char *ips = many_frames_ips(20000, &len);
    if (!ips)
        return;
    const char *tight[] = {"--request-mem-factor", "1", "--request-mem-mb", "1", NULL};
    server_proc s;
    char db[600];
    snprintf(db, sizeof db, "%s/ops-budget.db", test_tmpdir());
    if (!server_start(&s, db, tight)) {
        CHECK(false, "tight server starts");
        free(ips);
        return;
    }
    int st = 0;
    json_t *j = http_json(s.port, "POST", "/v1/crashes", NULL, ips, len, &st, NULL);
    const char *code = json_string_value(json_object_get(json_object_get(j, "error"), "code"));
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    CHECK(st == 413 && code && strcmp(code, "too_large") == 0 && msg &&
              strstr(msg, "memory budget"),
          "past its budget: 413 too_large (%d %s)", st, msg ? msg : "");
    json_decref(j);
    j = http_json(s.port, "GET", "/v1/crashes", NULL, NULL, 0, &st, NULL);
    CHECK(st == 200 && json_array_size(json_object_get(j, "crashes")) == 0,
          "nothing of it is stored");
    json_decref(j);
    j = http_post_fixture(s.port, "fixtures/crashes/bigapp-twin.ips", "/v1/crashes", &st);
    CHECK(st == 201, "a small report fits the same budget (%d)", st);
    json_decref(j);
    CHECK(server_stop(&s), "tight server stops");

    if (!server_start(&s, db, NULL)) { /* the defaults: 4 x body + 64 MiB */
        CHECK(false, "default server starts");
        free(ips);
        return;
    }
    j = http_json(s.port, "POST", "/v1/crashes", NULL, ips, len, &st, NULL);
    CHECK(st == 201, "under the default budget it is stored (%d)", st);
    json_int_t id = json_integer_value(json_object_get(j, "id"));
    size_t frames = 0;
    json_t *th = json_object_get(j, "threads");
    for (size_t i = 0; i < json_array_size(th); i++)
        frames += json_array_size(json_object_get(json_array_get(th, i), "frames"));
    CHECK(frames == 20000, "with its 20,000 frames (%zu)", frames);
    json_decref(j);
    CHECK(server_stop(&s), "default server stops");

    if (!server_start(&s, db, tight)) {
        CHECK(false, "tight server starts again");
        free(ips);
        return;
    }
    char path[64];
    snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)id);
    j = http_json(s.port, "GET", path, NULL, NULL, 0, &st, NULL);
    bool warned = false;
    json_t *w = json_object_get(j, "warnings");
    for (size_t i = 0; i < json_array_size(w); i++) {
        const char *m = json_string_value(json_object_get(json_array_get(w, i), "message"));
        warned |= m && strstr(m, "memory budget") != NULL;
    }
    CHECK(st == 200 && warned, "read again past its budget: 200 with a warning (%d)", st);
    CHECK(json_integer_value(json_object_get(j, "id")) == id &&
              json_is_string(json_object_get(j, "signature")),
          "answered from what the store holds");
    json_decref(j);
    CHECK(server_stop(&s), "clean stop");
    free(ips);
}

/* --max-inflight-mb: while one client holds more body bytes than the
 * budget, a second large body is answered 503 busy (with Retry-After), small
 * answers still flow, and once the first request ends the second goes
 * through. */
TEST(ops_inflight_budget_answers_busy)
{
    const char *extra[] = {"--max-inflight-mb", "1", NULL};
    server_proc s;
    if (!start_own(&s, "ops-inflight.db", extra))
        return;
    size_t big = 1536u << 10;
    char *body = malloc(big);
    memset(body, ' ', big);
    int fd = connect_port(s.port);
    char head[200];
    snprintf(head, sizeof head,
             "POST /v1/symbolicate HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", big + 2);
    CHECK(send(fd, head, strlen(head), MSG_NOSIGNAL) > 0, "head sent");
    size_t sent = 0;
    while (sent < big) {
        ssize_t w = send(fd, body + sent, big - sent, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        sent += (size_t)w;
    }
    CHECK(sent == big, "1.5 MiB of a body sent and held");
    usleep(300000);
    http_resp r;
    const char *small = "{\"threads\":[{\"frames\":[\"0x1000\"]}]}";
    CHECK(http_do(s.port, "POST", "/v1/symbolicate", NULL, small, strlen(small), &r) &&
              r.status == 503 && strcmp(error_code(&r), "busy") == 0,
          "a body past the budget is answered 503 busy (%d %s)", r.status, error_code(&r));
    const char *ra = http_header(&r, "Retry-After");
    CHECK(ra && atoi(ra) > 0, "with Retry-After");
    http_resp_free(&r);
    CHECK(http_do(s.port, "GET", "/healthz", NULL, NULL, 0, &r) && r.status == 200,
          "requests without a body still answer");
    http_resp_free(&r);
    CHECK(send(fd, "{}", 2, MSG_NOSIGNAL) == 2, "first body completed");
    char buf[512];
    ssize_t got = recv(fd, buf, sizeof buf - 1, 0);
    if (got > 0)
        buf[got] = 0;
    /* Its body, blanks and "{}", has no threads: a 400 that says so. */
    CHECK(got > 12 && strncmp(buf, "HTTP/1.1 400", 12) == 0 && strstr(buf, "threads"),
          "the holder is answered for its body, not refused");
    close(fd);
    usleep(100000);
    CHECK(http_do(s.port, "POST", "/v1/symbolicate", NULL, small, strlen(small), &r) &&
              r.status == 200,
          "after it the second body fits (%d)", r.status);
    http_resp_free(&r);
    free(body);
    CHECK(server_stop(&s), "clean stop");
}

/* libmicrohttpd hands the router a C string: a %00 must not cut the path
 * short and reach a shorter route. */
TEST(ops_nul_in_the_path_reaches_no_shorter_route)
{
    int port = lazy_port(&srv);
    static const struct {
        const char *path;
        int status;
    } cases[] = {
        {"/v1/images/%00%00", 400}, {"/v1/images%00", 404}, {"/v1/crashes/%00", 400},
        {"/v1/crashes/1%00x", 400}, {"/healthz%00x", 404},  {"/%00", 404},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_resp r;
        CHECK(http_do(port, "GET", cases[i].path, NULL, NULL, 0, &r) &&
                  r.status == cases[i].status,
              "GET %s: %d, want %d", cases[i].path, r.status, cases[i].status);
        http_resp_free(&r);
    }
}

/* A second server on a port one already listens on does not start (no
 * SO_REUSEPORT: it would silently share the port, each server taking a
 * random part of the connections). */
TEST(ops_a_taken_port_is_refused)
{
    int port = lazy_port(&srv);
    const char *bin = getenv("SYMD_BIN") ? getenv("SYMD_BIN") : "./symd";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s serve --listen 127.0.0.1:%d --db %s/ops-second.db "
             "--access-log off 2>&1", bin, port, test_tmpdir());
    FILE *p = popen(cmd, "r");
    char out[512] = "";
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    int st = p ? pclose(p) : -1;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(out, "cannot listen"),
          "a second server on port %d: status %d, said: %s", port, st, out);
}

/* End-to-end harness: the real symd binary and a minimal HTTP client. */
#include "harness.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture_util.h"
#include "test.h"

static bool stderr_to_file;

void server_stderr_to_file(bool on)
{
    stderr_to_file = on;
}

bool server_start(server_proc *s, const char *db, const char *const *extra)
{
    const char *dbarg = db_arg(db);
    return dbarg && server_start_on(s, db, dbarg, extra);
}

bool server_start_on(server_proc *s, const char *db, const char *dbarg,
                     const char *const *extra)
{
    memset(s, 0, sizeof *s);
    snprintf(s->db, sizeof s->db, "%s", db);
    const char *bin = getenv("SYMD_BIN");
    if (!bin)
        bin = "./symd";
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    const char *argv[32] = {bin, "serve", "--listen", "127.0.0.1:0", "--db", dbarg};
    int argc = 6;
    for (int i = 0; extra && extra[i] && argc < 30; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        /* A server outlives no test run: were the test binary to crash, a
         * server left behind would hold the run's output pipe open and the
         * suite (and CI) would wait on it forever. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(127);
        /* The access log goes beside the database, where a test can read
         * it, instead of into the test output. */
        char log[600];
        snprintf(log, sizeof log, "%s.access.log", db);
        setenv("SYMD_ACCESS_LOG", log, 0);
        if (stderr_to_file) {
            snprintf(log, sizeof log, "%s.stderr", db);
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, 2);
                close(fd);
            }
        }
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    s->pid = pid;
    char line[512];
    size_t n = 0;
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    while (n < sizeof line - 1 && poll(&p, 1, 20000) > 0) {
        ssize_t r = read(fds[0], line + n, 1);
        if (r <= 0)
            break;
        if (line[n++] == '\n')
            break;
    }
    line[n] = 0;
    close(fds[0]);
    const char *colon = strrchr(line, ':');
    if (!strstr(line, "listening on") || !colon) {
        fprintf(stderr, "server did not start: '%s'\n", line);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return false;
    }
    s->port = atoi(colon + 1);
    return s->port > 0;
}

int lazy_port(lazy_server *ls)
{
    if (!ls->up) {
        char db[512];
        snprintf(db, sizeof db, "%s/%s", test_tmpdir(), ls->dbname);
        ls->up = server_start(&ls->proc, db, ls->extra);
        CHECK(ls->up, "server on %s did not start", ls->dbname);
    }
    return ls->proc.port;
}

bool lazy_stop(lazy_server *ls)
{
    if (!ls->up)
        return true;
    ls->up = false;
    return server_stop(&ls->proc);
}

bool server_alive(const server_proc *s)
{
    return s->pid > 0 && kill(s->pid, 0) == 0 && waitpid(s->pid, NULL, WNOHANG) == 0;
}

bool server_stop(server_proc *s)
{
    if (s->pid <= 0)
        return false;
    kill(s->pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 200; i++) { /* 10 s */
        pid_t r = waitpid(s->pid, &status, WNOHANG);
        if (r == s->pid) {
            s->pid = 0;
            return WIFEXITED(status) && WEXITSTATUS(status) == 0;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
    return false;
}

static bool send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

/* Sends head then body on a fresh connection and reads the whole answer. */
static bool exchange(int port, const char *head, size_t hn, const void *body, size_t len,
                     http_resp *out)
{
    memset(out, 0, sizeof *out);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return false;
    }
    /* A server may answer early (401, 413) and close: keep what it said. */
    if (send_all(fd, head, hn) && len)
        send_all(fd, body, len);
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 4096 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    char *sep = strstr(buf, "\r\n\r\n");
    if (n < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || !sep) {
        free(buf);
        return false;
    }
    out->status = atoi(buf + 9);
    size_t off = (size_t)(sep + 4 - buf);
    out->head = malloc(off + 1);
    memcpy(out->head, buf, off);
    out->head[off] = 0;
    out->len = n - off;
    out->body = malloc(out->len + 1);
    memcpy(out->body, sep + 4, out->len);
    out->body[out->len] = 0;
    free(buf);
    return true;
}

bool http_do(int port, const char *method, const char *path, const char *headers,
             const void *body, size_t len, http_resp *out)
{
    char head[4096];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s",
                      method, path, headers ? headers : "");
    if (body || strcmp(method, "POST") == 0)
        hn += snprintf(head + hn, sizeof head - (size_t)hn, "Content-Length: %zu\r\n", len);
    hn += snprintf(head + hn, sizeof head - (size_t)hn, "\r\n");
    return exchange(port, head, (size_t)hn, body, len, out);
}

bool http_raw(int port, const void *request, size_t len, http_resp *out)
{
    return exchange(port, request, len, NULL, 0, out);
}

void http_resp_free(http_resp *r)
{
    free(r->body);
    free(r->head);
    r->body = r->head = NULL;
}

const char *http_header(const http_resp *r, const char *name)
{
    static char value[1024];
    size_t nl = strlen(name);
    for (const char *p = r->head ? strstr(r->head, "\r\n") : NULL; p && p[2];
         p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, nl) != 0 || line[nl] != ':')
            continue;
        const char *v = line + nl + 1;
        v += strspn(v, " \t");
        size_t vl = strcspn(v, "\r\n");
        if (vl >= sizeof value)
            vl = sizeof value - 1;
        memcpy(value, v, vl);
        value[vl] = 0;
        return value;
    }
    return NULL;
}

const char *error_code(const http_resp *r)
{
    static char code[64];
    code[0] = 0;
    json_t *doc = r->body ? json_loads(r->body, 0, NULL) : NULL;
    const char *c = json_string_value(json_object_get(json_object_get(doc, "error"), "code"));
    snprintf(code, sizeof code, "%s", c ? c : "");
    json_decref(doc);
    return code;
}

/* ---- SQLite or PostgreSQL ---- */

bool test_pg(void)
{
    const char *u = getenv("SYMD_TEST_PG");
    return u && *u;
}

bool skip_on_pg(const char *why)
{
    if (!test_pg())
        return false;
    test_skip(why);
    return true;
}

bool pg_sql(const char *uri, const char *sql, char *out, size_t cap)
{
    const char *psql = getenv("SYMD_PSQL");
    if (!psql || !*psql)
        psql = "psql";
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        setenv("PGOPTIONS", "-c client_min_messages=warning", 1);
        execlp(psql, psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", uri, "-c",
               sql, (char *)NULL);
        fprintf(stderr, "cannot run %s\n", psql);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    char sink[4096];
    for (;;) {
        char *to = out && n + 1 < cap ? out + n : sink;
        size_t room = out && n + 1 < cap ? cap - n - 1 : sizeof sink;
        ssize_t r = read(fds[0], to, room);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (to != sink)
            n += (size_t)r;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (out && cap) {
        out[n] = 0;
        while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
            out[--n] = 0;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* base with its database replaced by name: the path of a URI, or a dbname
 * appended to a key=value string. */
static void uri_with_db(const char *base, const char *name, char *out, size_t cap)
{
    const char *scheme = strstr(base, "://");
    if (!scheme) {
        snprintf(out, cap, "%s dbname=%s", base, name);
        return;
    }
    const char *auth = scheme + 3;
    const char *q = strchr(auth, '?');
    const char *end = q ? q : auth + strlen(auth);
    const char *slash = memchr(auth, '/', (size_t)(end - auth));
    const char *cut = slash ? slash : end;
    snprintf(out, cap, "%.*s/%s%s", (int)(cut - base), base, name, q ? q : "");
}

static struct {
    char path[512];
    char uri[1024];
    char name[64];
} pg_dbs[256];
static int pg_ndbs;
static pthread_mutex_t pg_lock = PTHREAD_MUTEX_INITIALIZER;

/* Creates database name (dropping one an earlier run left) and returns its
 * URI in a registry slot; NULL when it cannot. Called with pg_lock held. */
static const char *pg_create(const char *path, const char *tag)
{
    if (pg_ndbs >= (int)(sizeof pg_dbs / sizeof pg_dbs[0])) {
        fprintf(stderr, "harness: too many PostgreSQL databases\n");
        return NULL;
    }
    const char *base = getenv("SYMD_TEST_PG");
    char name[64];
    int n = snprintf(name, sizeof name, "symd_t%d_%d_", (int)getpid(), pg_ndbs);
    for (const char *t = tag; *t && n < 62; t++)
        name[n++] = (*t >= 'a' && *t <= 'z') || (*t >= '0' && *t <= '9') ? *t
                    : (*t >= 'A' && *t <= 'Z')                            ? (char)(*t + 32)
                                                                           : '_';
    name[n] = 0;
    char sql[200];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    pg_sql(base, sql, NULL, 0);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    if (!pg_sql(base, sql, NULL, 0)) {
        fprintf(stderr, "harness: cannot create database %s on %s\n", name, base);
        return NULL;
    }
    int k = pg_ndbs++;
    snprintf(pg_dbs[k].path, sizeof pg_dbs[k].path, "%s", path ? path : "");
    snprintf(pg_dbs[k].name, sizeof pg_dbs[k].name, "%s", name);
    uri_with_db(base, name, pg_dbs[k].uri, sizeof pg_dbs[k].uri);
    return pg_dbs[k].uri;
}

const char *db_arg(const char *db)
{
    if (!test_pg() || strstr(db, "://") || strstr(db, "dbname="))
        return db;
    pthread_mutex_lock(&pg_lock);
    const char *uri = NULL;
    for (int i = 0; i < pg_ndbs && !uri; i++)
        if (pg_dbs[i].path[0] && strcmp(pg_dbs[i].path, db) == 0)
            uri = pg_dbs[i].uri;
    if (!uri) {
        const char *slash = strrchr(db, '/');
        uri = pg_create(db, slash ? slash + 1 : db);
    }
    pthread_mutex_unlock(&pg_lock);
    CHECK(uri, "no PostgreSQL database for %s", db);
    return uri;
}

const char *pg_fresh_db(const char *tag)
{
    CHECK(test_pg(), "pg_fresh_db without SYMD_TEST_PG");
    if (!test_pg())
        return NULL;
    pthread_mutex_lock(&pg_lock);
    const char *uri = pg_create(NULL, tag);
    pthread_mutex_unlock(&pg_lock);
    CHECK(uri, "cannot create a PostgreSQL database for %s", tag);
    return uri;
}

/* The databases of the run go when it ends (after the servers' own
 * destructors: a smaller priority runs later). */
__attribute__((destructor(101))) static void pg_drop_all(void)
{
    if (!test_pg() || !pg_ndbs || getenv("SYMD_KEEP_TMP"))
        return;
    for (int i = 0; i < pg_ndbs; i++) {
        char sql[200];
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", pg_dbs[i].name);
        pg_sql(getenv("SYMD_TEST_PG"), sql, NULL, 0);
    }
}

long long db_query_int(const char *db, const char *sql)
{
    long long n = -1;
    if (test_pg()) {
        char out[128];
        const char *uri = db_arg(db);
        if (uri && pg_sql(uri, sql, out, sizeof out) && out[0]) {
            char *end;
            n = strtoll(out, &end, 10);
            if (end == out)
                n = -1;
        }
        return n;
    }
    sqlite3 *h;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(h);
        return -1;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

void db_integrity(const char *db, char out[64])
{
    if (test_pg()) {
        /* no integrity_check: the store's own invariant instead, every
         * image row with its symbol index */
        long long bad = db_query_int(db, "SELECT count(*) FROM images i WHERE NOT EXISTS "
                                         "(SELECT 1 FROM image_data d WHERE d.image_id = i.id "
                                         "AND d.kind = 'symbols')");
        if (bad == 0)
            strcpy(out, "ok");
        else
            snprintf(out, 64, "%lld image rows without a symbol index", bad);
        return;
    }
    strcpy(out, "?");
    sqlite3 *h;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(h);
        return;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        snprintf(out, 64, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
}

json_t *http_json(int port, const char *method, const char *path, const char *headers,
                  const void *body, size_t len, int *status, char **text)
{
    http_resp r;
    bool ok = http_do(port, method, path, headers, body, len, &r);
    CHECK(ok, "%s %s: no answer", method, path);
    *status = r.status;
    json_t *j = NULL;
    if (text) {
        *text = strdup(r.body ? r.body : "");
    } else if (ok && r.body) {
        json_error_t e;
        j = json_loads(r.body, 0, &e);
        CHECK(j, "%s %s: answer is not JSON (%s at %d): %.300s", method, path, e.text,
              e.position, r.body);
    }
    http_resp_free(&r);
    return j;
}

/* Whether p[0..36) is a UUID's text (8-4-4-4-12 hex digits). */
static bool is_uuid_text(const uint8_t *p)
{
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? p[i] != '-' : !isxdigit(p[i]))
            return false;
    }
    return true;
}

bool report_renumber(uint8_t *buf, size_t len, uint32_t n)
{
    static const char *const marks[] = {"Incident Identifier:", "\"incident\"",
                                        "\"incident_id\""};
    const uint8_t *id = NULL;
    for (size_t m = 0; m < 3 && !id; m++) {
        size_t ml = strlen(marks[m]);
        const uint8_t *at = memmem(buf, len, marks[m], ml);
        if (!at)
            continue;
        /* the value: the first UUID within a short way of its name */
        for (const uint8_t *p = at + ml; p + 36 <= buf + len && p < at + ml + 16 && !id; p++)
            if (is_uuid_text(p))
                id = p;
    }
    if (!id)
        return false;
    uint8_t old[36], now[36];
    memcpy(old, id, 36);
    memcpy(now, id, 36);
    char tail[9];
    snprintf(tail, sizeof tail, "%08X", n);
    memcpy(now + 28, tail, 8);
    for (uint8_t *p = buf; (p = memmem(p, len - (size_t)(p - buf), old, 36)); p += 36)
        memcpy(p, now, 36);
    return true;
}

json_t *http_post_fixture_n(int port, const char *rel, const char *url, uint32_t n,
                            int *status)
{
    size_t len;
    uint8_t *buf = read_fixture(rel, &len);
    *status = 0;
    if (!buf)
        return NULL;
    if (!report_renumber(buf, len, n)) {
        CHECK(false, "%s has no incident identifier to renumber", rel);
        free(buf);
        return NULL;
    }
    json_t *j = http_json(port, "POST", url, NULL, buf, len, status, NULL);
    free(buf);
    return j;
}

json_t *http_post_fixture(int port, const char *rel, const char *url, int *status)
{
    size_t len;
    uint8_t *buf = read_fixture(rel, &len);
    *status = 0;
    if (!buf)
        return NULL;
    json_t *j = http_json(port, "POST", url, NULL, buf, len, status, NULL);
    free(buf);
    return j;
}

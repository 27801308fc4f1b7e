/* End-to-end harness: the real symd binary and a minimal HTTP client. */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

bool server_start(server_proc *s, const char *db, const char *const *extra)
{
    memset(s, 0, sizeof *s);
    snprintf(s->db, sizeof s->db, "%s", db);
    const char *bin = getenv("SYMD_BIN");
    if (!bin)
        bin = "./symd";
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    const char *argv[32] = {bin, "serve", "--listen", "127.0.0.1:0", "--db", db};
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

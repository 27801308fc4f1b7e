/* The upload client's HTTP/1.1 over sockets (client/http1.h). */
#include "http1.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* An answer's header block is at most this long. */
#define HEAD_MAX (64 * 1024)
/* An answer's body is at most this long (JSON answers; a proxy's page). */
#define BODY_MAX (64u << 20)

bool hc_parse_url(const char *s, hc_url *u, char *why, size_t cap)
{
    memset(u, 0, sizeof *u);
    if (strncasecmp(s, "https://", 8) == 0) {
        snprintf(why, cap,
                 "https:// is not supported (symd upload links no TLS): use the http:// URL "
                 "of symd or of a proxy on the CI's network");
        return false;
    }
    if (strncasecmp(s, "http://", 7) != 0) {
        snprintf(why, cap, "'%s' is not an http://HOST[:PORT] URL", s);
        return false;
    }
    const char *h = s + 7, *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    if (hl == 0 || hl >= sizeof u->host) {
        snprintf(why, cap, "'%s' names no host", s);
        return false;
    }
    char hp[256];
    memcpy(hp, h, hl);
    hp[hl] = 0;
    snprintf(u->hostport, sizeof u->hostport, "%s", hp);
    char *colon = hp[0] == '[' ? strstr(hp, "]:") : strrchr(hp, ':');
    if (colon && hp[0] == '[')
        colon++;
    if (colon) {
        *colon = 0;
        char *end;
        long port = strtol(colon + 1, &end, 10);
        if (*end || port <= 0 || port > 65535) {
            snprintf(why, cap, "'%s' has a bad port", s);
            return false;
        }
        snprintf(u->port, sizeof u->port, "%ld", port);
    } else
        snprintf(u->port, sizeof u->port, "80");
    size_t n = strlen(hp);
    if (hp[0] == '[' && n > 2 && hp[n - 1] == ']') {
        hp[n - 1] = 0;
        memmove(hp, hp + 1, n - 1);
    }
    snprintf(u->host, sizeof u->host, "%s", hp);
    if (slash) {
        snprintf(u->prefix, sizeof u->prefix, "%s", slash);
        size_t pl = strlen(u->prefix);
        while (pl && u->prefix[pl - 1] == '/')
            u->prefix[--pl] = 0;
    }
    return true;
}

void hc_init(hc_conn *c, const hc_url *u, const char *token, int timeout_s)
{
    memset(c, 0, sizeof *c);
    c->url = u;
    c->token = token && *token ? token : NULL;
    c->fd = -1;
    c->timeout_s = timeout_s > 0 ? timeout_s : 60;
}

void hc_close(hc_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void hc_resp_free(hc_resp *r)
{
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* Connects c to its URL's host within the timeout; the socket is then
 * blocking with the timeout on every read and write. */
static bool dial(hc_conn *c, char *why, size_t cap)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai, *p;
    int rc = getaddrinfo(c->url->host, c->url->port, &hints, &ai);
    if (rc != 0) {
        snprintf(why, cap, "%s: %s", c->url->host, gai_strerror(rc));
        return false;
    }
    int err = EIO;
    for (p = ai; p; p = p->ai_next) {
        int fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        err = 0;
        if (connect(fd, p->ai_addr, p->ai_addrlen) != 0) {
            err = errno;
            if (err == EINPROGRESS) {
                struct pollfd pf = {fd, POLLOUT, 0};
                socklen_t sl = sizeof err;
                if (poll(&pf, 1, c->timeout_s * 1000) != 1)
                    err = ETIMEDOUT;
                else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) != 0)
                    err = errno;
            }
        }
        if (err == 0) {
            struct timeval tv = {c->timeout_s, 0};
            int one = 1;
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            c->fd = fd;
            freeaddrinfo(ai);
            return true;
        }
        close(fd);
    }
    freeaddrinfo(ai);
    snprintf(why, cap, "cannot connect to %s: %s", c->url->hostport, strerror(err));
    return false;
}

/* Writes all n bytes; false on an error or timeout (errno set). */
static bool send_all(hc_conn *c, const void *p, size_t n)
{
    const char *b = p;
    while (n) {
        ssize_t w = send(c->fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EPIPE;
            return false;
        }
        c->wire_sent += (uint64_t)w;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

/* Writes n bytes of file fd from off, read 1 MiB at a time (a chunk is
 * never held whole; measured on loopback against sendfile, which spared
 * the client its copy but cost the receiving server more than that, and
 * against reading a whole chunk first: the same time); false on an error
 * or timeout (errno set; ENODATA when the file ended first). */
static bool send_file_piecewise(hc_conn *c, int fd, uint64_t off, size_t n)
{
    size_t cap = n < (1u << 20) ? n : (1u << 20);
    char *buf = malloc(cap ? cap : 1);
    if (!buf) {
        errno = ENOMEM;
        return false;
    }
    bool ok = true;
    while (ok && n) {
        ssize_t r = pread(fd, buf, n < cap ? n : cap, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = ENODATA;
            ok = false;
            break;
        }
        ok = send_all(c, buf, (size_t)r);
        off += (uint64_t)r;
        n -= (size_t)r;
    }
    int e = errno;
    free(buf);
    errno = e;
    return ok;
}

/* A buffered reader over the connection. */
typedef struct {
    int fd;
    char buf[16384];
    size_t pos, len;
} reader;

/* The next byte, or -1 on close, error or timeout. */
static int rd_byte(reader *r)
{
    if (r->pos == r->len) {
        ssize_t n;
        do
            n = recv(r->fd, r->buf, sizeof r->buf, 0);
        while (n < 0 && errno == EINTR);
        if (n <= 0)
            return -1;
        r->pos = 0;
        r->len = (size_t)n;
    }
    return (unsigned char)r->buf[r->pos++];
}

/* One line without its CRLF into out (at most cap - 1 bytes); false on
 * close, timeout or a line too long. */
static bool rd_line(reader *r, char *out, size_t cap)
{
    size_t n = 0;
    for (;;) {
        int ch = rd_byte(r);
        if (ch < 0)
            return false;
        if (ch == '\n')
            break;
        if (n + 1 >= cap)
            return false;
        out[n++] = (char)ch;
    }
    if (n && out[n - 1] == '\r')
        n--;
    out[n] = 0;
    return true;
}

static bool rd_exact(reader *r, char *out, size_t n)
{
    while (n) {
        if (r->pos < r->len) {
            size_t k = r->len - r->pos < n ? r->len - r->pos : n;
            memcpy(out, r->buf + r->pos, k);
            r->pos += k;
            out += k;
            n -= k;
        } else {
            int ch = rd_byte(r);
            if (ch < 0)
                return false;
            *out++ = (char)ch;
            n--;
        }
    }
    return true;
}

static bool body_grow(hc_resp *resp, size_t *cap, size_t need)
{
    if (need > BODY_MAX)
        return false;
    if (need + 1 <= *cap)
        return true;
    size_t nc = *cap ? *cap : 4096;
    while (nc < need + 1)
        nc *= 2;
    char *b = realloc(resp->body, nc);
    if (!b)
        return false;
    resp->body = b;
    *cap = nc;
    return true;
}

/* Reads an answer: status line, headers, body. *close_after: the server
 * closes the connection after it. */
static bool read_answer(hc_conn *c, hc_resp *resp, bool head_only, bool *close_after, char *why,
                        size_t cap)
{
    reader r = {.fd = c->fd};
    char line[8192];
    memset(resp, 0, sizeof *resp);
    int maj, min, status;
    if (!rd_line(&r, line, sizeof line)) {
        snprintf(why, cap, "no answer from %s (%s)", c->url->hostport,
                 errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" : "connection closed");
        return false;
    }
    if (sscanf(line, "HTTP/%d.%d %d", &maj, &min, &status) != 3 || status < 100 ||
        status > 999) {
        snprintf(why, cap, "%s answered no HTTP status line: '%.60s'", c->url->hostport, line);
        return false;
    }
    long long clen = -1;
    bool chunked = false;
    *close_after = maj == 1 && min == 0;
    size_t head = 0;
    for (;;) {
        if (!rd_line(&r, line, sizeof line)) {
            snprintf(why, cap, "%s: the answer's headers were cut short", c->url->hostport);
            return false;
        }
        head += strlen(line) + 2;
        if (head > HEAD_MAX) {
            snprintf(why, cap, "%s: answer headers over 64 KiB", c->url->hostport);
            return false;
        }
        if (!line[0])
            break;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = 0;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        if (strcasecmp(line, "Content-Length") == 0)
            clen = strtoll(v, NULL, 10);
        else if (strcasecmp(line, "Transfer-Encoding") == 0 && strcasestr(v, "chunked"))
            chunked = true;
        else if (strcasecmp(line, "Connection") == 0 && strcasestr(v, "close"))
            *close_after = true;
        else if (strcasecmp(line, "Retry-After") == 0)
            resp->retry_after = (unsigned)strtoul(v, NULL, 10);
        else if (strcasecmp(line, "Content-Type") == 0)
            resp->json = strncasecmp(v, "application/json", 16) == 0;
    }
    if (status >= 100 && status < 200) /* 100 Continue and the like: the real one follows */
        return read_answer(c, resp, head_only, close_after, why, cap);
    resp->status = status;
    size_t bcap = 0;
    if (!body_grow(resp, &bcap, 0)) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    bool ok = true;
    if (head_only || status == 204 || status == 304) {
        /* no body */
    } else if (chunked) {
        for (;;) {
            if (!rd_line(&r, line, sizeof line)) {
                ok = false;
                break;
            }
            unsigned long long n = strtoull(line, NULL, 16);
            if (n == 0) {
                while (rd_line(&r, line, sizeof line) && line[0])
                    ; /* trailers */
                break;
            }
            if (!body_grow(resp, &bcap, resp->len + n) ||
                !rd_exact(&r, resp->body + resp->len, n) || !rd_line(&r, line, sizeof line)) {
                ok = false;
                break;
            }
            resp->len += n;
        }
    } else if (clen >= 0) {
        if (!body_grow(resp, &bcap, (size_t)clen) || !rd_exact(&r, resp->body, (size_t)clen))
            ok = false;
        else
            resp->len = (size_t)clen;
    } else { /* until close */
        *close_after = true;
        for (;;) {
            int ch = rd_byte(&r);
            if (ch < 0)
                break;
            if (!body_grow(resp, &bcap, resp->len + 1)) {
                ok = false;
                break;
            }
            resp->body[resp->len++] = (char)ch;
        }
    }
    if (!ok) {
        snprintf(why, cap, "%s: the answer's body was cut short", c->url->hostport);
        hc_resp_free(resp);
        return false;
    }
    resp->body[resp->len] = 0;
    if (r.pos != r.len) /* bytes past the answer: not a connection to reuse */
        *close_after = true;
    return true;
}

/* hc_request and hc_request_file: the body is body's len bytes, or (body
 * NULL) len bytes of file body_fd from body_off. */
static bool request(hc_conn *c, const char *method, const char *path, const char *ctype,
                    const void *body, int body_fd, uint64_t body_off, size_t len, hc_resp *r,
                    char *why, size_t cap)
{
    char head[2048];
    int hl = snprintf(head, sizeof head,
                      "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: symd-upload\r\n"
                      "Content-Length: %zu\r\n%s%s%s%s%s%s\r\n",
                      method, c->url->prefix, path, c->url->hostport, len,
                      ctype ? "Content-Type: " : "", ctype ? ctype : "", ctype ? "\r\n" : "",
                      c->token ? "Authorization: Bearer " : "", c->token ? c->token : "",
                      c->token ? "\r\n" : "");
    if (hl < 0 || (size_t)hl >= sizeof head) {
        snprintf(why, cap, "request headers too long");
        return false;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        bool reused = c->fd >= 0;
        if (!reused && !dial(c, why, cap))
            return false;
        bool sent = send_all(c, head, (size_t)hl) &&
                    (len == 0 || (body ? send_all(c, body, len)
                                       : send_file_piecewise(c, body_fd, body_off, len)));
        int send_err = errno;
        bool close_after = false;
        /* Even when sending failed, the server may have answered first (a
         * proxy's 413 before it read the body): read what it said. */
        if (read_answer(c, r, strcmp(method, "HEAD") == 0, &close_after, why, cap)) {
            if (close_after || !sent)
                hc_close(c);
            return true;
        }
        hc_close(c);
        if (!sent && !reused) {
            snprintf(why, cap, "sending to %s failed: %s", c->url->hostport, strerror(send_err));
            return false;
        }
        if (!reused)
            return false;
        /* a kept-alive connection the server had closed: once more on a new one */
    }
    return false;
}

bool hc_request(hc_conn *c, const char *method, const char *path, const char *ctype,
                const void *body, size_t len, hc_resp *r, char *why, size_t cap)
{
    return request(c, method, path, ctype, len ? body : "", -1, 0, len, r, why, cap);
}

bool hc_request_file(hc_conn *c, const char *method, const char *path, const char *ctype,
                     int fd, uint64_t off, size_t len, hc_resp *r, char *why, size_t cap)
{
    return request(c, method, path, ctype, NULL, fd, off, len, r, why, cap);
}

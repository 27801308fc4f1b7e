/* A small HTTP/1.1 client over plain sockets for symd upload --url: one
 * connection kept alive across requests, timeouts on every read and write,
 * bodies by Content-Length, answers by Content-Length, chunked transfer
 * encoding or close. http:// only (no TLS is linked: put symd behind a
 * proxy on the same host, or use an http:// URL inside the network). */
#ifndef SYMD_CLIENT_HTTP1_H
#define SYMD_CLIENT_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char host[256];
    char port[8];
    char hostport[272]; /* the Host header */
    char prefix[512];   /* a path before /v1/... ("" or "/symd"), no trailing slash */
} hc_url;

/* Reads "http://HOST[:PORT][/PREFIX]". False with why for anything else
 * (https:// is refused with the reason). */
bool hc_parse_url(const char *s, hc_url *u, char *why, size_t cap);

typedef struct {
    const hc_url *url;
    const char *token; /* Authorization: Bearer, or NULL */
    int fd;            /* -1 when not connected */
    int timeout_s;     /* per connect, read and write */
    uint64_t wire_sent; /* request bytes written (headers and bodies) */
} hc_conn;

typedef struct {
    int status;
    char *body; /* NUL-terminated, malloc'ed */
    size_t len;
    unsigned retry_after; /* seconds, 0 when absent */
    bool json;            /* Content-Type application/json */
} hc_resp;

void hc_init(hc_conn *c, const hc_url *u, const char *token, int timeout_s);
void hc_close(hc_conn *c);

/* One request: method, path (after the URL's prefix, with its query),
 * body of len bytes (NULL and 0 for none) of content type ctype. Returns
 * true with r filled when an answer came (any status; free r->body with
 * hc_resp_free), false with why on a network error (refused, reset,
 * timeout, a malformed answer). A reused connection the server closed is
 * reconnected once before failing. When the server answers before the
 * whole body is written (a proxy's early 413) that answer is returned. */
bool hc_request(hc_conn *c, const char *method, const char *path, const char *ctype,
                const void *body, size_t len, hc_resp *r, char *why, size_t cap);

/* As hc_request, the body being len bytes of the open file fd from off,
 * read a piece at a time (a file's chunk is never held whole). Sending
 * fails with ENODATA in why when the file ends first. */
bool hc_request_file(hc_conn *c, const char *method, const char *path, const char *ctype,
                     int fd, uint64_t off, size_t len, hc_resp *r, char *why, size_t cap);

void hc_resp_free(hc_resp *r);

#endif

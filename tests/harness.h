/* End-to-end harness: the real symd binary on an ephemeral loopback port,
 * and a minimal HTTP/1.1 client to drive it. */
#ifndef SYMD_HARNESS_H
#define SYMD_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;
    int port;
    char db[512];
} server_proc;

/* Starts SYMD_BIN serve --listen 127.0.0.1:0 --db db [extra...] and waits
 * for its "listening on" line. extra is NULL-terminated (may be NULL). */
bool server_start(server_proc *s, const char *db, const char *const *extra);
/* SIGTERM and wait; true when it exited 0. */
bool server_stop(server_proc *s);
bool server_alive(const server_proc *s);

/* A server a test file shares: started on first use, on a fresh database
 * dbname in the run's temporary directory, with extra serve flags
 * (NULL-terminated, may be NULL). */
typedef struct {
    const char *dbname;
    const char *const *extra;
    server_proc proc;
    bool up;
} lazy_server;

/* The port of ls, starting it when it is not running (a failed start is a
 * failed check). */
int lazy_port(lazy_server *ls);
/* Stops ls when it runs; true when it was not running or exited 0. Also for
 * destructors, so a filtered run never leaves a server behind. */
bool lazy_stop(lazy_server *ls);

typedef struct {
    int status;     /* 0 when the exchange failed */
    char *body;     /* NUL-terminated, malloc'ed */
    size_t len;
    char *head;     /* status line and headers, NUL-terminated, malloc'ed */
} http_resp;

/* One request on a fresh connection. headers: extra header lines, each
 * ending in \r\n (may be NULL). */
bool http_do(int port, const char *method, const char *path, const char *headers,
             const void *body, size_t len, http_resp *out);
/* Sends bytes exactly as given (for chunked or malformed requests). */
bool http_raw(int port, const void *request, size_t len, http_resp *out);
void http_resp_free(http_resp *r);
/* The value of header name (any case) in r, or NULL (static buffer). */
const char *http_header(const http_resp *r, const char *name);

/* The "code" of an error body, or "" (static buffer). */
const char *error_code(const http_resp *r);

#endif

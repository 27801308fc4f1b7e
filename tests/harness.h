/* End-to-end harness: the real symd binary on an ephemeral loopback port,
 * and a minimal HTTP/1.1 client to drive it. */
#ifndef SYMD_HARNESS_H
#define SYMD_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

typedef struct {
    pid_t pid;
    int port;
    char db[512];
} server_proc;

/* Starts SYMD_BIN serve --listen 127.0.0.1:0 --db db [extra...] and waits
 * for its "listening on" line. extra is NULL-terminated (may be NULL).
 * db is a file path; on PostgreSQL (SYMD_TEST_PG) the server gets
 * db_arg(db) instead, and s->db stays the path (the access log goes beside
 * it either way). */
bool server_start(server_proc *s, const char *db, const char *const *extra);
/* The same with --db dbarg as given (a SQLite file even on PostgreSQL, or
 * a URI); s->db is db, beside which the access log goes. */
bool server_start_on(server_proc *s, const char *db, const char *dbarg,
                     const char *const *extra);
/* While on, servers started from now on write their stderr to
 * "<db>.stderr" instead of the test output (for tests that make a server
 * log on purpose, hundreds of lines). */
void server_stderr_to_file(bool on);
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

/* ---- the store under the servers: a SQLite file or PostgreSQL ----
 *
 * When SYMD_TEST_PG holds a libpq URI (or key=value string) of a
 * PostgreSQL server, every database path a test hands to server_start
 * stands for a database of its own on that server, created empty the first
 * time the run uses the path (the same database afterwards, so a restarted
 * server finds what it stored) and dropped when the run ends (kept with
 * SYMD_KEEP_TMP). SQL goes to it through psql (SYMD_PSQL, else psql in
 * PATH). */

/* True when the run is on PostgreSQL. */
bool test_pg(void);
/* On PostgreSQL: marks the running test skipped, saying why, and returns
 * true (the caller returns); on SQLite returns false. For tests of the
 * SQLite file itself (upgrades of old files, the CLI on a file). */
bool skip_on_pg(const char *why);
/* What --db gets for the database path db: db itself, or on PostgreSQL the
 * URI of its database (static storage for the run; NULL when the database
 * cannot be created, a failed check). */
const char *db_arg(const char *db);
/* The URI of a database named after tag, created empty now (dropped at the
 * end of the run); NULL and a failed check when it cannot be. PostgreSQL
 * only. */
const char *pg_fresh_db(const char *tag);
/* One integer from the database of db: sql's first column of its first
 * row (SQL both SQLite and PostgreSQL read: coalesce(sum(x), 0), not
 * total(x)); -1 on an error. */
long long db_query_int(const char *db, const char *sql);
/* "ok" when the database of db is sound (SQLite's integrity_check; on
 * PostgreSQL, which has no such check, every image row has its symbol
 * index), else what was found. */
void db_integrity(const char *db, char out[64]);
/* Runs sql (one statement) on the PostgreSQL database uri with psql -At and
 * puts its output in out (trailing newline removed); false when psql
 * failed. */
bool pg_sql(const char *uri, const char *sql, char *out, size_t cap);

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

/* One request to port: the answer's body as JSON (NULL when it has none;
 * no answer, or a body that is no JSON, fails the test), or, when text is
 * given, as text into *text (malloc'ed). *status: the HTTP status. */
json_t *http_json(int port, const char *method, const char *path, const char *headers,
                  const void *body, size_t len, int *status, char **text);
/* POSTs the fixture at rel (a path in the repository) to url with
 * http_json; NULL, *status 0, when the fixture cannot be read. */
json_t *http_post_fixture(int port, const char *rel, const char *url, int *status);
/* Makes the report buf[0..len) report number n of its kind, in place: the
 * UUID of its incident identifier (after "Incident Identifier:", or a JSON
 * "incident" / "incident_id"), wherever it occurs, gets n as its last 8 hex
 * digits, so the store (which stores a report posted again once) takes it
 * as another report. false when it has no incident identifier. */
bool report_renumber(uint8_t *buf, size_t len, uint32_t n);
/* http_post_fixture of the fixture renumbered n (report_renumber; a
 * fixture without an incident identifier fails the test). */
json_t *http_post_fixture_n(int port, const char *rel, const char *url, uint32_t n,
                            int *status);

#endif

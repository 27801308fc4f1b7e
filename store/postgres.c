/* The PostgreSQL backend of the store (store/backend.h): the schema and its
 * migrations, a pool of libpq connections made again after the server comes
 * back, a listener relaying other nodes' image writes (LISTEN/NOTIFY), and
 * every query, with binary parameters and results. */
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "schema.h"
#include "appversion.h"
#include "../util/dynbuf.h"
#include "../util/hex.h"

/* Type OIDs of parameters and results (pg_type.h, stable across versions). */
#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_TEXT 25
#define OID_FLOAT8 701
#define OID_BOOL_ARRAY 1000
#define OID_BYTEA_ARRAY 1001
#define OID_INT4_ARRAY 1007
#define OID_TEXT_ARRAY 1009
#define OID_INT8_ARRAY 1016

/* The channel image writes are announced on; the payload is the UUID. */
#define CHANNEL "symd_images"
/* Advisory lock keys: schema migration, retention (one node at a time). */
#define LOCK_MIGRATE 0x73796d6401LL
#define LOCK_PRUNE 0x73796d6402LL
/* The chunk budget's check and the commit of a new chunk (every node). */
#define LOCK_CHUNKS 0x73796d6403LL
/* Images one refs upsert counts at most (REF_PARAMS parameters each: uuid,
 * arch, name, system; +1). */
#define REF_ROWS_MAX 32
#define REF_PARAMS 4
/* Times a transaction that lost a deadlock or a serialization race is run. */
#define TX_ATTEMPTS 5
/* Listener: how often a lost connection is tried again (ms). */
#define LISTEN_RETRY_MS 200
/* Crashes one retention transaction deletes at most. */
#define PRUNE_BATCH_MAX 100

struct store_db {
    char *uri;
    PGconn **conns;
    bool *busy;
    int nconns;
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;
    /* the listener: its thread, the pipe that stops it */
    store_change_fn on_change;
    void *ctx;
    PGconn *listen_conn; /* the listener's, made at open */
    pthread_t listener;
    bool listening;
    int wake[2];
    int importing; /* the connection of an import under way */
    struct stmt_cache *caches; /* one per pooled connection */
    size_t stmt_max;           /* statements each keeps prepared */
    const store_hooks *hooks; /* what crash posts record for webhooks (the core's) */
    /* crashes queued for the next group commit (pg_put_crash) */
    pthread_mutex_t gc_mu;
    pthread_cond_t gc_cv;
    struct pg_crash_job *gc_head, *gc_tail;
    bool gc_leading;
};

/* One pooled connection checked out, with the SQLSTATE of its last error. */
typedef struct {
    store_db *db;
    int i;
    PGconn *c;
    char sqlstate[6];
    bool fresh; /* connected (again) at checkout */
    bool once;  /* a statement that writes on its own (in_one): never run twice */
} pgc;

/* ---- errors ---------------------------------------------------------------- */

/* Whether a failure means the server is gone (down, restarting, the
 * connection broken) rather than a bad query. */
static bool conn_lost(PGconn *c, const char *sqlstate)
{
    if (PQstatus(c) == CONNECTION_BAD)
        return true;
    return sqlstate && (strncmp(sqlstate, "08", 2) == 0 || strcmp(sqlstate, "57P01") == 0 ||
                        strcmp(sqlstate, "57P02") == 0 || strcmp(sqlstate, "57P03") == 0);
}

/* Records a failed statement: SYMD_E_UNAVAILABLE when the database is
 * gone, else SYMD_E_DB, with the server's message (first line). */
static symd_status pg_fail(symd_err *err, pgc *c, const PGresult *res, const char *what)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    snprintf(c->sqlstate, sizeof c->sqlstate, "%s", state ? state : "");
    const char *msg = res ? PQresultErrorMessage(res) : "";
    if (!msg || !*msg)
        msg = PQerrorMessage(c->c);
    int len = (int)strcspn(msg, "\n");
    if (conn_lost(c->c, state))
        return symd_fail(err, SYMD_E_UNAVAILABLE, "%s: the database does not answer: %.*s",
                         what, len, msg);
    return symd_fail(err, SYMD_E_DB, "%s: %.*s", what, len, msg);
}

/* ---- parameters and results ------------------------------------------------ */

#define MAXP (1 + REF_PARAMS * REF_ROWS_MAX)

/* A statement's parameters: numbers as text, bytes binary, typed. */
typedef struct {
    int n;
    const char *v[MAXP];
    int len[MAXP], fmt[MAXP];
    Oid type[MAXP];
    char num[MAXP][24];
} params;

static void p_add(params *p, Oid type, const char *v, int len, int fmt)
{
    p->type[p->n] = type;
    p->v[p->n] = v;
    p->len[p->n] = len;
    p->fmt[p->n] = fmt;
    p->n++;
}

static void p_i64(params *p, int64_t x)
{
    snprintf(p->num[p->n], sizeof p->num[0], "%lld", (long long)x);
    p_add(p, OID_INT8, p->num[p->n], 0, 0);
}

static void p_i32(params *p, int x)
{
    snprintf(p->num[p->n], sizeof p->num[0], "%d", x);
    p_add(p, OID_INT4, p->num[p->n], 0, 0);
}

/* A float8, exact (17 significant digits read back to the same double). */
static void p_f64(params *p, double x)
{
    snprintf(p->num[p->n], sizeof p->num[0], "%.17g", x);
    p_add(p, OID_FLOAT8, p->num[p->n], 0, 0);
}

static void p_bool(params *p, bool x)
{
    p_add(p, OID_BOOL, x ? "t" : "f", 0, 0);
}

/* Text, or NULL for a NULL pointer. */
static void p_text(params *p, const char *s)
{
    p_add(p, OID_TEXT, s, s ? (int)strlen(s) : 0, 1); /* text's binary form is its bytes */
}

/* Text, NULL for NULL or "" (as the SQLite backend stores optional fields). */
static void p_text_or_null(params *p, const char *s)
{
    p_text(p, s && *s ? s : NULL);
}

static void p_bytes(params *p, const void *b, size_t n)
{
    p_add(p, OID_BYTEA, b ? (const char *)b : "", (int)n, 1);
}

/* An array parameter in binary form (one dimension, from 1): its header,
 * then each element's length (-1: NULL) and bytes. */
typedef struct {
    dynbuf b;
    int32_t n;
} bin_array;

/* v at p, big-endian (the protocol's order). */
static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Starts a's empty array of elem (false: out of memory; dynbuf_free(&a->b)
 * either way). */
static bool arr_init(bin_array *a, Oid elem)
{
    uint8_t h[20];
    put_be32(h, 1);               /* dimensions */
    put_be32(h + 4, 1);           /* may hold NULLs */
    put_be32(h + 8, elem);        /* element type */
    put_be32(h + 12, 0);          /* elements: set by arr_param */
    put_be32(h + 16, 1);          /* lower bound */
    dynbuf_init(&a->b, (size_t)1 << 30);
    a->n = 0;
    return dynbuf_add(&a->b, h, sizeof h);
}

/* Appends an element: the len bytes at v, NULL when v is NULL. */
static bool arr_add(bin_array *a, const void *v, int32_t len)
{
    uint8_t l[4];
    put_be32(l, (uint32_t)(v ? len : -1));
    a->n++;
    return dynbuf_add(&a->b, l, 4) && (!v || !len || dynbuf_add(&a->b, v, (size_t)len));
}

/* Appends text s (NULL: NULL). */
static bool arr_text(bin_array *a, const char *s)
{
    return arr_add(a, s, s ? (int32_t)strlen(s) : 0);
}

/* Appends s, NULL for NULL or "" (as p_text_or_null). */
static bool arr_text_or_null(bin_array *a, const char *s)
{
    return arr_text(a, s && *s ? s : NULL);
}

/* Appends integer v of bytes bytes (4: int4, 8: int8), big-endian. */
static bool arr_int(bin_array *a, int64_t v, int bytes)
{
    uint8_t x[8];
    for (int i = 0; i < bytes; i++)
        x[i] = (uint8_t)((uint64_t)v >> (8 * (bytes - 1 - i)));
    return arr_add(a, x, bytes);
}

/* a as a parameter of p (type: the array's OID), pointing into a; an
 * empty one has no dimension. */
static void arr_param(params *p, bin_array *a, Oid type)
{
    if (!a->n)
        put_be32(a->b.data, 0);
    else
        put_be32(a->b.data + 12, (uint32_t)a->n);
    p_add(p, type, (const char *)a->b.data, a->n ? (int)a->b.len : 12, 1);
}

/* ---- prepared statements ----------------------------------------------------
 * Each pooled connection keeps the statements it has run prepared, so a
 * statement is parsed and planned once per connection, not on every call.
 * A statement is known by its text and parameter types (texts built at run
 * time, with a varying number of parameters, are distinct statements); a
 * connection made again has none (the server forgot them). Past
 * STMT_CACHE_MAX statements (or SYMD_PG_STATEMENTS, read at open: the
 * tests make it small; 0 prepares none), the one used least recently is deallocated to make
 * room (filters built at run time make many rare variants). */
#define STMT_CACHE_MAX 256

typedef struct {
    uint64_t hash;
    char *sql;
    int n;
    Oid *types;
    char name[16];
    uint64_t used; /* the cache's clock when last used */
} stmt_entry;

struct stmt_cache {
    stmt_entry *e;
    size_t n;
    unsigned next_id;
    uint64_t clock;
};

static uint64_t stmt_hash(const char *sql, const params *p)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (const unsigned char *q = (const unsigned char *)sql; *q; q++)
        h = (h ^ *q) * 0x100000001b3ull;
    for (int i = 0; p && i < p->n; i++)
        h = (h ^ p->type[i]) * 0x100000001b3ull;
    return h;
}

/* Forgets connection i's statements (it was made again). */
static void stmt_cache_clear(store_db *s, int i)
{
    if (!s || !s->caches || i < 0 || i >= s->nconns)
        return;
    struct stmt_cache *sc = &s->caches[i];
    for (size_t k = 0; k < sc->n; k++) {
        free(sc->e[k].sql);
        free(sc->e[k].types);
    }
    free(sc->e);
    sc->e = NULL;
    sc->n = 0;
}

/* The name of sql prepared on c (preparing it first), or NULL when it is
 * to run unprepared (no cache for this connection, the cache is full, or
 * the server refused to prepare it: running it says why). */
static const char *stmt_prepared(pgc *c, const char *sql, const params *p, PGresult **failed)
{
    *failed = NULL;
    store_db *s = c->db;
    if (!s || !s->caches || !s->stmt_max || c->i < 0 || c->i >= s->nconns)
        return NULL;
    struct stmt_cache *sc = &s->caches[c->i];
    int n = p ? p->n : 0;
    uint64_t h = stmt_hash(sql, p);
    for (size_t k = 0; k < sc->n; k++) {
        stmt_entry *e = &sc->e[k];
        if (e->hash == h && e->n == n && !strcmp(e->sql, sql) &&
            (!n || !memcmp(e->types, p->type, (size_t)n * sizeof(Oid)))) {
            e->used = ++sc->clock;
            return e->name;
        }
    }
    if (!sc->e && !(sc->e = calloc(s->stmt_max, sizeof *sc->e)))
        return NULL;
    if (sc->n >= s->stmt_max) { /* room: the least recently used goes */
        size_t old = 0;
        for (size_t k = 1; k < sc->n; k++)
            if (sc->e[k].used < sc->e[old].used)
                old = k;
        char cmd[40];
        snprintf(cmd, sizeof cmd, "DEALLOCATE %s", sc->e[old].name);
        PGresult *res = PQexec(c->c, cmd);
        bool gone = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
        if (!gone)
            return NULL;
        free(sc->e[old].sql);
        free(sc->e[old].types);
        sc->e[old] = sc->e[--sc->n];
    }
    stmt_entry *e = &sc->e[sc->n];
    e->sql = strdup(sql);
    e->types = n ? malloc((size_t)n * sizeof(Oid)) : NULL;
    if (!e->sql || (n && !e->types)) {
        free(e->sql);
        free(e->types);
        return NULL;
    }
    if (n)
        memcpy(e->types, p->type, (size_t)n * sizeof(Oid));
    e->hash = h;
    e->n = n;
    e->used = ++sc->clock;
    snprintf(e->name, sizeof e->name, "symd_%u", sc->next_id++);
    PGresult *res = PQprepare(c->c, e->name, sql, n, n ? e->types : NULL);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok) {
        /* the server's refusal is the statement's error (inside a
         * transaction it has aborted it: nothing else can run) */
        free(e->sql);
        free(e->types);
        *failed = res;
        return NULL;
    }
    PQclear(res);
    sc->n++;
    return e->name;
}

/* Makes c's connection again; its prepared statements are gone with it. */
static void conn_reset(pgc *c)
{
    stmt_cache_clear(c->db, c->i);
    PQreset(c->c);
}

/* Runs one statement; its result (binary) when it succeeds, else NULL with
 * err set. */
static PGresult *run(pgc *c, const char *sql, const params *p, const char *what, symd_err *err)
{
    /* A statement outside a transaction on a connection that died idle (the
     * server restarted since its last use, and the goodbye was not read
     * yet) did nothing: it runs again, once, on the connection made anew. */
    bool retry = !c->fresh && !c->once && PQtransactionStatus(c->c) == PQTRANS_IDLE;
    PGresult *res;
    ExecStatusType st;
    for (;;) {
        /* inside a failed transaction nothing is prepared: running it
         * unprepared reports the failure */
        PGresult *refused = NULL;
        const char *name = PQtransactionStatus(c->c) == PQTRANS_INERROR
                               ? NULL
                               : stmt_prepared(c, sql, p, &refused);
        if (refused)
            res = refused;
        else if (name)
            res = PQexecPrepared(c->c, name, p ? p->n : 0, p ? p->v : NULL, p ? p->len : NULL,
                                 p ? p->fmt : NULL, 1);
        else
            res = PQexecParams(c->c, sql, p ? p->n : 0, p ? p->type : NULL, p ? p->v : NULL,
                               p ? p->len : NULL, p ? p->fmt : NULL, 1);
        st = PQresultStatus(res);
        if (!retry || st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK ||
            PQstatus(c->c) != CONNECTION_BAD)
            break;
        retry = false;
        c->fresh = true;
        conn_reset(c);
        if (PQstatus(c->c) != CONNECTION_OK)
            break;
        PQclear(res);
    }
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        return res;
    pg_fail(err, c, res, what);
    PQclear(res);
    return NULL;
}

/* run() for a statement whose rows are not read. */
static bool exec0(pgc *c, const char *sql, const params *p, const char *what, symd_err *err)
{
    PGresult *res = run(c, sql, p, what, err);
    PQclear(res);
    return res != NULL;
}

/* A row of a binary result being read; bad is set by a value that is not
 * what its reader expects (numbers are read strictly: their type and size). */
typedef struct {
    PGresult *r;
    int row;
    bool bad;
} rd;

static bool rd_null(const rd *x, int col)
{
    return PQgetisnull(x->r, x->row, col);
}

static int64_t rd_i64(rd *x, int col)
{
    if (PQgetisnull(x->r, x->row, col))
        return 0;
    const uint8_t *p = (const uint8_t *)PQgetvalue(x->r, x->row, col);
    int len = PQgetlength(x->r, x->row, col);
    Oid t = PQftype(x->r, col);
    uint64_t v = 0;
    for (int i = 0; i < len && len <= 8; i++)
        v = v << 8 | p[i];
    if (PQfformat(x->r, col) == 1) {
        if (t == OID_INT8 && len == 8)
            return (int64_t)v;
        if (t == OID_INT4 && len == 4)
            return (int32_t)(uint32_t)v;
        if (t == OID_INT2 && len == 2)
            return (int16_t)(uint16_t)v;
        if (t == OID_BOOL && len == 1)
            return v != 0;
    }
    x->bad = true;
    return 0;
}

/* A text value copied (NULL for NULL, or when out of memory). */
static char *rd_dup(const rd *x, int col)
{
    if (PQgetisnull(x->r, x->row, col))
        return NULL;
    return strndup(PQgetvalue(x->r, x->row, col), (size_t)PQgetlength(x->r, x->row, col));
}

static void rd_text(const rd *x, int col, char *dst, size_t cap)
{
    snprintf(dst, cap, "%.*s", PQgetlength(x->r, x->row, col), PQgetvalue(x->r, x->row, col));
}

static const uint8_t *rd_bytes(const rd *x, int col, size_t *len)
{
    *len = (size_t)PQgetlength(x->r, x->row, col);
    return (const uint8_t *)PQgetvalue(x->r, x->row, col);
}

static symd_status bad_value(symd_err *err, const char *what)
{
    return symd_fail(err, SYMD_E_DB, "%s: the database answered a value of an unexpected type",
                     what);
}

/* ---- schema ------------------------------------------------------------------ */

/* Runs a script of several statements (simple protocol, no parameters). */
static bool exec_script(pgc *c, const char *sql, const char *what, symd_err *err)
{
    PGresult *res = PQexec(c->c, sql);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok)
        pg_fail(err, c, res, what);
    PQclear(res);
    return ok;
}

/* Brings the schema to this symd's version in one transaction, under an
 * advisory lock (nodes starting together migrate once); refuses a newer one. */
static symd_status migrate(pgc *c, symd_err *err)
{
    int latest = STORE_SCHEMA_VERSION;
    params p = {0};
    p_i64(&p, LOCK_MIGRATE);
    if (!exec0(c, "BEGIN", NULL, "starting migration", err) ||
        !exec0(c, "SELECT pg_advisory_xact_lock($1)", &p, "locking the schema", err) ||
        !exec_script(c, "CREATE TABLE IF NOT EXISTS symd_schema(version integer NOT NULL)",
                     "reading schema version", err))
        goto fail;
    PGresult *res = run(c, "SELECT max(version) FROM symd_schema", NULL, "reading schema version",
                        err);
    if (!res)
        goto fail;
    rd x = {res, 0, false};
    int version = rd_null(&x, 0) ? 0 : (int)rd_i64(&x, 0);
    bool fresh = rd_null(&x, 0);
    PQclear(res);
    if (x.bad) {
        bad_value(err, "reading schema version");
        goto fail;
    }
    if (version > latest) {
        symd_fail(err, SYMD_E_DB, "database schema version %d is newer than this symd (%d)",
                  version, latest);
        goto fail;
    }
    for (int v = version; v < latest; v++)
        if (*pg_schema_migrations[v] &&
            !exec_script(c, pg_schema_migrations[v], "migrating schema", err))
            goto fail;
    params q = {0};
    p_i32(&q, latest);
    if (version < latest &&
        !exec0(c, fresh ? "INSERT INTO symd_schema VALUES ($1)" : "UPDATE symd_schema SET version = $1",
               &q, "migrating schema", err))
        goto fail;
    if (!exec0(c, "COMMIT", NULL, "committing migration", err))
        goto fail;
    return SYMD_OK;
fail:
    PQclear(PQexec(c->c, "ROLLBACK"));
    return err->kind;
}

/* ---- connections ------------------------------------------------------------ */

/* Server notices (NOTICE: relation exists, ...) are not symd's to print. */
static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static PGconn *connect_db(const char *uri)
{
    PGconn *c = PQconnectdb(uri);
    if (c)
        PQsetNoticeProcessor(c, quiet, NULL);
    return c;
}

static bool pg_claims(const char *where)
{
    return strncmp(where, "postgresql://", 13) == 0 || strncmp(where, "postgres://", 11) == 0;
}

static void *listen_main(void *arg);

static void pg_close(store_db *s)
{
    if (!s)
        return;
    if (s->listening) {
        ssize_t w = write(s->wake[1], "x", 1);
        (void)w;
        pthread_join(s->listener, NULL);
    }
    if (s->listen_conn)
        PQfinish(s->listen_conn);
    if (s->wake[0] >= 0) {
        close(s->wake[0]);
        close(s->wake[1]);
    }
    for (int i = 0; i < s->nconns; i++) {
        stmt_cache_clear(s, i);
        PQfinish(s->conns[i]);
    }
    free(s->caches);
    free(s->conns);
    free(s->busy);
    free(s->uri);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_cond_destroy(&s->pool_cv);
    pthread_mutex_destroy(&s->gc_mu);
    pthread_cond_destroy(&s->gc_cv);
    free(s);
}

/* A fresh connection, or NULL with err set (SYMD_E_UNAVAILABLE). */
static PGconn *open_conn(const char *uri, symd_err *err)
{
    PGconn *c = connect_db(uri);
    if (!c) {
        symd_fail(err, SYMD_E_NOMEM, "out of memory");
        return NULL;
    }
    if (PQstatus(c) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(c);
        symd_fail(err, SYMD_E_UNAVAILABLE, "cannot connect to the database: %.*s",
                  (int)strcspn(msg, "\n"), msg);
        PQfinish(c);
        return NULL;
    }
    return c;
}

static symd_status backfill_states(pgc *c, symd_err *err);

static symd_status pg_open(const char *where, int pool, store_change_fn on_change, void *ctx,
                           store_db **out, symd_err *err)
{
    *out = NULL;
    if (pool < 1)
        pool = 1;
    store_db *s = calloc(1, sizeof *s);
    if (!s)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    s->wake[0] = s->wake[1] = -1;
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_cond_init(&s->pool_cv, NULL);
    pthread_mutex_init(&s->gc_mu, NULL);
    pthread_cond_init(&s->gc_cv, NULL);
    s->uri = strdup(where);
    s->conns = calloc((size_t)pool, sizeof *s->conns);
    s->busy = calloc((size_t)pool, sizeof *s->busy);
    s->caches = calloc((size_t)pool, sizeof *s->caches);
    const char *cap = getenv("SYMD_PG_STATEMENTS");
    /* 0: none (a pooler in transaction mode, which cannot keep them) */
    s->stmt_max = cap && *cap && atoi(cap) >= 0 && atoi(cap) <= 4096 ? (size_t)atoi(cap)
                                                                       : STMT_CACHE_MAX;
    s->on_change = on_change;
    s->ctx = ctx;
    if (!s->uri || !s->conns || !s->busy || !s->caches) {
        pg_close(s);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < pool; i++) {
        if (!(s->conns[i] = open_conn(where, err))) {
            pg_close(s);
            return err->kind;
        }
        s->nconns = i + 1;
        if (i == 0) {
            pgc c = {s, 0, s->conns[0], "", true, false};
            if (migrate(&c, err) != SYMD_OK || backfill_states(&c, err) != SYMD_OK) {
                pg_close(s);
                return err->kind;
            }
        }
    }
    /* The listener listens before open returns: a write committed after
     * it is never missed. */
    if (on_change) {
        pgc c = {s, -1, NULL, "", true, false};
        if (!(c.c = s->listen_conn = open_conn(where, err)) ||
            !exec0(&c, "LISTEN " CHANNEL, NULL, "listening for image writes", err)) {
            pg_close(s);
            return err->kind;
        }
        if (pipe(s->wake) != 0) {
            s->wake[0] = s->wake[1] = -1;
            pg_close(s);
            return symd_fail(err, SYMD_E_IO, "cannot make the listener's pipe");
        }
        if (pthread_create(&s->listener, NULL, listen_main, s) != 0) {
            pg_close(s);
            return symd_fail(err, SYMD_E_IO, "cannot start the listener thread");
        }
        s->listening = true;
    }
    *out = s;
    return SYMD_OK;
}

/* Checks out a connection; one the server closed (a restart) is made again
 * first. SYMD_E_UNAVAILABLE (nothing checked out) when the server does not
 * answer. */
static symd_status conn_get(store_db *s, pgc *c, symd_err *err)
{
    pthread_mutex_lock(&s->pool_mu);
    int i;
    for (;;) {
        for (i = 0; i < s->nconns && s->busy[i]; i++)
            ;
        if (i < s->nconns)
            break;
        pthread_cond_wait(&s->pool_cv, &s->pool_mu);
    }
    s->busy[i] = true;
    pthread_mutex_unlock(&s->pool_mu);
    c->db = s;
    c->i = i;
    c->c = s->conns[i];
    c->sqlstate[0] = 0;
    c->once = false;
    /* An idle pooled connection has nothing to read unless the server
     * said goodbye (a restart, a terminated backend) or, rarely, sent a
     * notice: either way it is made again. */
    struct pollfd pf = {PQsocket(c->c), POLLIN, 0};
    c->fresh = PQstatus(c->c) != CONNECTION_OK || pf.fd < 0 || poll(&pf, 1, 0) != 0;
    if (c->fresh)
        conn_reset(c);
    if (PQstatus(c->c) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(c->c);
        symd_fail(err, SYMD_E_UNAVAILABLE, "the database does not answer: %.*s",
                  (int)strcspn(msg, "\n"), msg);
        pthread_mutex_lock(&s->pool_mu);
        s->busy[i] = false;
        pthread_cond_signal(&s->pool_cv);
        pthread_mutex_unlock(&s->pool_mu);
        return SYMD_E_UNAVAILABLE;
    }
    return SYMD_OK;
}

static void conn_put(pgc *c)
{
    store_db *s = c->db;
    pthread_mutex_lock(&s->pool_mu);
    s->busy[c->i] = false;
    pthread_cond_signal(&s->pool_cv);
    pthread_mutex_unlock(&s->pool_mu);
}

/* A transaction's body: its statements on c, outputs set anew each run. */
typedef symd_status (*tx_fn)(pgc *c, void *arg, symd_err *err);

/* Runs fn in one transaction: committed when it succeeds, rolled back when
 * anything fails (nothing half-stored); run again when it lost a deadlock
 * or a serialization race to another node. */
static symd_status in_tx_as(store_db *s, tx_fn fn, void *arg, const char *what, bool fn_begins,
                            symd_err *err)
{
    for (int attempt = 1;; attempt++) {
        pgc c;
        symd_err e = {0};
        symd_status r = conn_get(s, &c, &e);
        if (r == SYMD_OK) {
            if ((fn_begins || exec0(&c, "BEGIN", NULL, what, &e)) &&
                (r = fn(&c, arg, &e)) == SYMD_OK && !exec0(&c, "COMMIT", NULL, what, &e))
                r = e.kind;
            if (e.kind != SYMD_OK)
                r = e.kind;
            if (r != SYMD_OK && PQstatus(c.c) == CONNECTION_OK &&
                PQtransactionStatus(c.c) != PQTRANS_IDLE)
                PQclear(PQexec(c.c, "ROLLBACK"));
            conn_put(&c);
        }
        bool race = strcmp(c.sqlstate, "40P01") == 0 || strcmp(c.sqlstate, "40001") == 0;
        if (r == SYMD_OK || !race || attempt == TX_ATTEMPTS) {
            if (r != SYMD_OK && err && err->kind == SYMD_OK)
                *err = e;
            return r;
        }
    }
}

static symd_status in_tx(store_db *s, tx_fn fn, void *arg, const char *what, symd_err *err)
{
    return in_tx_as(s, fn, arg, what, false, err);
}

/* BEGIN and sql sent together, in one round trip (libpq's pipeline mode);
 * sql's result as run() answers it, else NULL with err set. For in_tx_as's
 * fn_begins: the first statement of fn. A connection found dead is made
 * again and the two sent again, once: nothing was committed (no COMMIT
 * was sent). */
static PGresult *run_begin(pgc *c, const char *sql, const params *p, const char *what,
                           symd_err *err)
{
    int n = p ? p->n : 0;
    for (bool retry = !c->fresh;; retry = false) {
        PGconn *k = c->c;
        PGresult *refused = NULL, *out = NULL, *bad = NULL;
        const char *name = stmt_prepared(c, sql, p, &refused);
        if (refused) {
            bad = refused;
        } else if (PQenterPipelineMode(k)) {
            bool sent = PQsendQueryParams(k, "BEGIN", 0, NULL, NULL, NULL, NULL, 1) &&
                        (name ? PQsendQueryPrepared(k, name, n, p ? p->v : NULL,
                                                    p ? p->len : NULL, p ? p->fmt : NULL, 1)
                              : PQsendQueryParams(k, sql, n, p ? p->type : NULL,
                                                  p ? p->v : NULL, p ? p->len : NULL,
                                                  p ? p->fmt : NULL, 1)) &&
                        PQpipelineSync(k);
            /* each statement's results up to its NULL, then the sync's */
            for (int q = 0; sent && q < 3; q++) {
                PGresult *r;
                while ((r = PQgetResult(k))) {
                    ExecStatusType st = PQresultStatus(r);
                    if (q == 1 && st == PGRES_TUPLES_OK && !out)
                        out = r;
                    else if ((st == PGRES_FATAL_ERROR || st == PGRES_PIPELINE_ABORTED) && !bad)
                        bad = r;
                    else
                        PQclear(r);
                    if (st == PGRES_PIPELINE_SYNC)
                        break;
                }
                if (PQstatus(k) == CONNECTION_BAD)
                    break;
            }
            PQexitPipelineMode(k);
        }
        if (out && !bad)
            return out;
        PQclear(out);
        if (retry && PQstatus(k) == CONNECTION_BAD) {
            PQclear(bad);
            c->fresh = true;
            conn_reset(c);
            if (PQstatus(c->c) == CONNECTION_OK)
                continue;
            pg_fail(err, c, NULL, what);
            return NULL;
        }
        pg_fail(err, c, bad, what);
        PQclear(bad);
        return NULL;
    }
}

/* Runs fn, whose work is one statement, as its own transaction (no BEGIN
 * and COMMIT: one round trip); run again when it lost a deadlock to
 * another node, as in_tx. A connection lost under it is not tried again
 * here: the statement may have been committed. */
static symd_status in_one(store_db *s, tx_fn fn, void *arg, symd_err *err)
{
    for (int attempt = 1;; attempt++) {
        pgc c;
        symd_err e = {0};
        symd_status r = conn_get(s, &c, &e);
        if (r == SYMD_OK) {
            c.once = true;
            r = fn(&c, arg, &e);
            if (e.kind != SYMD_OK)
                r = e.kind;
            conn_put(&c);
        }
        bool race = strcmp(c.sqlstate, "40P01") == 0 || strcmp(c.sqlstate, "40001") == 0;
        if (r == SYMD_OK || !race || attempt == TX_ATTEMPTS) {
            if (r != SYMD_OK && err && err->kind == SYMD_OK)
                *err = e;
            return r;
        }
    }
}

/* ---- the listener ------------------------------------------------------------- */

/* Waits for notices on its own connection and tells the core of each UUID
 * written; a lost connection is made again (every LISTEN_RETRY_MS), and
 * once it is, everything is invalidated: notices may have been missed. */
static void *listen_main(void *arg)
{
    store_db *s = arg;
    PGconn *c = s->listen_conn;
    bool lost = false;
    for (;;) {
        if (PQstatus(c) != CONNECTION_OK) {
            lost = true;
            PQreset(c);
            if (PQstatus(c) == CONNECTION_OK) {
                PGresult *res = PQexec(c, "LISTEN " CHANNEL);
                bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
                PQclear(res);
                if (ok) {
                    lost = false;
                    s->on_change(s->ctx, NULL);
                }
            }
        }
        bool up = !lost && PQstatus(c) == CONNECTION_OK;
        struct pollfd pf[2] = {{s->wake[0], POLLIN, 0}, {up ? PQsocket(c) : -1, POLLIN, 0}};
        int n = poll(pf, up ? 2 : 1, up ? -1 : LISTEN_RETRY_MS);
        if (n > 0 && pf[0].revents)
            break;
        if (!up || n <= 0 || !pf[1].revents)
            continue;
        if (!PQconsumeInput(c)) {
            lost = true;
            if (PQstatus(c) == CONNECTION_OK) /* not closed, yet unreadable: start over */
                PQreset(c);
            continue;
        }
        PGnotify *note;
        while ((note = PQnotifies(c))) {
            uint8_t uuid[16];
            if (note->extra && uuid_parse(note->extra, uuid))
                s->on_change(s->ctx, uuid);
            else
                s->on_change(s->ctx, NULL);
            PQfreemem(note);
        }
    }
    return NULL;
}

/* Queues the notice of uuid's write in c's transaction: it goes out when
 * the transaction commits, and not at all when it does not. */
static bool notify(pgc *c, const uint8_t uuid[16], symd_err *err)
{
    char u[37];
    uuid_format(uuid, u);
    params p = {0};
    p_text(&p, u);
    return exec0(c, "SELECT pg_notify('" CHANNEL "', $1)", &p, "announcing the image", err);
}

static bool pg_ping(store_db *s)
{
    pgc c;
    symd_err e = {0};
    if (conn_get(s, &c, &e) != SYMD_OK)
        return false;
    bool ok = exec0(&c, "SELECT 1 FROM images LIMIT 1", NULL, "ping", &e);
    conn_put(&c);
    return ok;
}

/* ---- images ------------------------------------------------------------------ */

#define IMAGE_COLS                                                                 \
    "id, uuid, arch, name, kind, text_vmaddr, text_size, symbols, functions, " \
    "debug_info, created_at, updated_at, system"
#define IMAGE_NCOLS 13

/* Reads an IMAGE_COLS row; false when a value is not what it should be. */
static bool row_to_image(PGresult *res, int row, store_image *im)
{
    rd x = {res, row, false};
    memset(im, 0, sizeof *im);
    im->id = rd_i64(&x, 0);
    size_t ulen;
    const uint8_t *u = rd_bytes(&x, 1, &ulen);
    if (ulen == 16)
        memcpy(im->uuid, u, 16);
    rd_text(&x, 2, im->arch, sizeof im->arch);
    rd_text(&x, 3, im->name, sizeof im->name);
    rd_text(&x, 4, im->kind, sizeof im->kind);
    im->text_vmaddr = (uint64_t)rd_i64(&x, 5);
    im->text_size = (uint64_t)rd_i64(&x, 6);
    im->symbols = (uint32_t)rd_i64(&x, 7);
    im->functions = (uint32_t)rd_i64(&x, 8);
    im->debug_info = rd_i64(&x, 9) != 0;
    im->created_at = rd_i64(&x, 10);
    im->updated_at = rd_i64(&x, 11);
    im->system = rd_i64(&x, 12) != 0;
    return !x.bad && ulen == 16;
}

/* The row of (uuid, arch), locked until the transaction ends; *found false
 * when there is none. */
static symd_status find_locked(pgc *c, const uint8_t uuid[16], const char *arch,
                               store_image *im, bool *found, symd_err *err)
{
    params p = {0};
    p_bytes(&p, uuid, 16);
    p_text(&p, arch);
    PGresult *res = run(c, "SELECT " IMAGE_COLS " FROM images WHERE uuid = $1 AND arch = $2 "
                           "FOR UPDATE", &p, "looking up image", err);
    if (!res)
        return err->kind;
    *found = PQntuples(res) > 0;
    bool ok = !*found || row_to_image(res, 0, im);
    PQclear(res);
    return ok ? SYMD_OK : bad_value(err, "looking up image");
}

/* One slice, merged as store_put_images says, inside the caller's
 * transaction. Two nodes storing one (uuid, arch) at once: the row lock
 * (or the unique key, for a new row) makes the second merge into the
 * first's row, as if it came after. system: an import creates it
 * (images.system); an upload (false) of a slice an import created makes it
 * the user's. */
/* Stores pt's extra blobs the image id has none of yet; *added says how
 * many were new. false (err set) on a database error. */
static bool put_extras(pgc *c, int64_t id, const store_put *pt, size_t *added, symd_err *err)
{
    *added = 0;
    for (size_t i = 0; i < pt->nextra; i++) {
        params p = {0};
        p_i64(&p, id);
        p_text(&p, pt->extra[i].kind);
        p_bytes(&p, pt->extra[i].data, pt->extra[i].len);
        PGresult *res = run(c,
                            "INSERT INTO image_data(image_id, kind, data) VALUES ($1, $2, $3) "
                            "ON CONFLICT (image_id, kind) DO NOTHING RETURNING 1",
                            &p, "writing image data", err);
        if (!res)
            return false;
        *added += (size_t)PQntuples(res);
        PQclear(res);
    }
    return true;
}

static symd_status put_one(pgc *c, store_put *pt, int64_t now, bool system,
                           store_put_result *result, store_image *stored, symd_err *err)
{
    store_image old;
    bool found;
    symd_status r = find_locked(c, pt->meta.uuid, pt->meta.arch, &old, &found, err);
    if (r != SYMD_OK)
        return r;
    PGresult *res = NULL;
    if (!found) {
        params p = {0};
        p_bytes(&p, pt->meta.uuid, 16);
        p_text(&p, pt->meta.arch);
        p_text(&p, pt->meta.name);
        p_text(&p, pt->meta.kind);
        p_i64(&p, (int64_t)pt->meta.text_vmaddr);
        p_i64(&p, (int64_t)pt->meta.text_size);
        p_i64(&p, pt->meta.symbols);
        p_i64(&p, pt->meta.functions);
        p_bool(&p, pt->lines != NULL);
        p_i64(&p, now);
        p_bool(&p, system);
        res = run(c,
                  "INSERT INTO images(uuid, arch, name, kind, text_vmaddr, text_size, symbols, "
                  "functions, debug_info, created_at, updated_at, system) VALUES ($1, $2, $3, "
                  "$4, $5, $6, $7, $8, $9, $10, $10, $11) ON CONFLICT (uuid, arch) DO NOTHING "
                  "RETURNING " IMAGE_COLS, &p, "inserting image", err);
        if (!res)
            return err->kind;
        if (PQntuples(res) == 0) { /* another node's row came first: merge into it */
            PQclear(res);
            res = NULL;
            if ((r = find_locked(c, pt->meta.uuid, pt->meta.arch, &old, &found, err)) != SYMD_OK)
                return r;
            if (!found)
                return symd_fail(err, SYMD_E_DB, "image row vanished while storing it");
        } else {
            *result = STORE_CREATED;
        }
    }
    bool put_syms = true, put_lines = pt->lines != NULL, put_unwind = pt->unwind != NULL;
    bool extras_done = false;
    if (found && put_unwind) {
        /* The first unwind table stored for a (UUID, arch) stays: every
         * binary of that UUID has the same one. */
        params p = {0};
        p_i64(&p, old.id);
        PGresult *h = run(c, "SELECT 1 FROM image_data WHERE image_id = $1 AND kind = 'unwind'",
                          &p, "looking up unwind table", err);
        if (!h)
            return err->kind;
        put_unwind = PQntuples(h) == 0;
        PQclear(h);
    }
    if (found && !system) {
        params p = {0};
        p_i64(&p, old.id);
        if (!exec0(c, "UPDATE images SET system = false WHERE id = $1 AND system", &p,
                   "marking image as uploaded", err))
            return err->kind;
    }
    if (found) {
        store_merge m = store_merge_plan(&old, pt);
        put_syms = m.put_syms;
        put_lines = m.put_lines;
        if (!put_syms && !put_lines && !put_unwind && !m.take_kind) {
            size_t added;
            if (!put_extras(c, old.id, pt, &added, err))
                return err->kind;
            if (!added) {
                *result = STORE_EXISTS;
                *stored = old;
                return SYMD_OK;
            }
            extras_done = true;
        }
        params p = {0};
        p_i64(&p, old.id);
        p_text(&p, pt->meta.kind);
        p_i64(&p, (int64_t)pt->meta.text_vmaddr);
        p_i64(&p, (int64_t)pt->meta.text_size);
        p_i64(&p, pt->meta.symbols);
        p_i64(&p, pt->meta.functions);
        p_i64(&p, now);
        p_text(&p, pt->meta.name);
        p_bool(&p, m.take_kind);
        p_bool(&p, put_syms);
        p_bool(&p, put_lines);
        p_bool(&p, m.set_place);
        res = run(c,
                  "UPDATE images SET kind = CASE WHEN $9 THEN $2 ELSE kind END, "
                  "text_vmaddr = CASE WHEN $12 THEN $3 ELSE text_vmaddr END, "
                  "text_size = CASE WHEN $12 THEN $4 ELSE text_size END, "
                  "symbols = CASE WHEN $10 THEN $5 ELSE symbols END, "
                  "functions = CASE WHEN $10 THEN $6 ELSE functions END, "
                  "debug_info = debug_info OR $11, updated_at = $7, "
                  "name = CASE WHEN name = 'unknown' OR ($9 AND $8 <> 'unknown') THEN $8 ELSE "
                  "name END WHERE id = $1 RETURNING " IMAGE_COLS,
                  &p, "updating image", err);
        if (!res)
            return err->kind;
        *result = STORE_UPDATED;
    }
    bool ok = PQntuples(res) == 1 && row_to_image(res, 0, stored);
    PQclear(res);
    if (!ok)
        return bad_value(err, "writing image");
    static const char *const kinds[3] = {"symbols", "lines", "unwind"};
    static const char *const whats[3] = {"writing symbol index", "writing line index",
                                         "writing unwind table"};
    const bool put[3] = {put_syms, put_lines, put_unwind};
    const uint8_t *data[3] = {pt->symidx, pt->lines, pt->unwind};
    const size_t lens[3] = {pt->symidx_len, pt->lines_len, pt->unwind_len};
    for (int k = 0; k < 3; k++) {
        if (!put[k])
            continue;
        params p = {0};
        p_i64(&p, stored->id);
        p_text(&p, kinds[k]);
        p_bytes(&p, data[k], lens[k]);
        if (!exec0(c,
                   "INSERT INTO image_data(image_id, kind, data) VALUES ($1, $2, $3) ON "
                   "CONFLICT (image_id, kind) DO UPDATE SET data = excluded.data",
                   &p, whats[k], err))
            return err->kind;
    }
    size_t added;
    if (!extras_done && !put_extras(c, stored->id, pt, &added, err))
        return err->kind;
    return notify(c, pt->meta.uuid, err) ? SYMD_OK : err->kind;
}

typedef struct {
    store_put *puts;
    size_t n;
    store_put_result *results;
    store_image *stored;
} put_images_args;

static symd_status put_images_tx(pgc *c, void *arg, symd_err *err)
{
    put_images_args *a = arg;
    int64_t now = store_now_ms();
    symd_status r = SYMD_OK;
    for (size_t i = 0; i < a->n && r == SYMD_OK; i++)
        r = put_one(c, &a->puts[i], now, false, &a->results[i], &a->stored[i], err);
    return r;
}

static symd_status pg_put_images(store_db *s, store_put *puts, size_t n,
                                 store_put_result *results, store_image *stored, symd_err *err)
{
    put_images_args a = {puts, n, results, stored};
    return in_tx(s, put_images_tx, &a, "storing images", err);
}

static symd_status pg_delete_image(store_db *s, const uint8_t uuid[16], size_t *deleted,
                                   symd_err *err)
{
    *deleted = 0;
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    char u[37];
    uuid_format(uuid, u);
    params p = {0};
    p_bytes(&p, uuid, 16);
    p_text(&p, u);
    /* one statement, one transaction: the notice goes out with the delete */
    PGresult *res = run(&c,
                        "WITH d AS (DELETE FROM images WHERE uuid = $1 RETURNING 1) SELECT n, "
                        "pg_notify('" CHANNEL "', $2) FROM (SELECT count(*) n FROM d) x",
                        &p, "deleting image", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res) {
        rd x = {res, 0, false};
        int64_t n = PQntuples(res) == 1 ? rd_i64(&x, 0) : -1;
        if (x.bad || n < 0)
            r = bad_value(err, "deleting image");
        else
            *deleted = (size_t)n;
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

/* Runs a read of image rows into out (at most max; *n read). */
static symd_status read_images(store_db *s, const char *sql, const params *p, store_image *out,
                               size_t max, size_t *n, bool *more, const char *what,
                               symd_err *err)
{
    *n = 0;
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c, sql, p, what, err);
    symd_status r = res ? SYMD_OK : err->kind;
    int rows = res ? PQntuples(res) : 0;
    for (int i = 0; i < rows && r == SYMD_OK; i++) {
        if (*n == max) {
            if (more)
                *more = true;
            break;
        }
        if (!row_to_image(res, i, &out[(*n)++]))
            r = bad_value(err, what);
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

static symd_status pg_get_image(store_db *s, const uint8_t uuid[16], store_image *out,
                                size_t max, size_t *n, symd_err *err)
{
    params p = {0};
    p_bytes(&p, uuid, 16);
    return read_images(s, "SELECT " IMAGE_COLS " FROM images WHERE uuid = $1 ORDER BY arch", &p,
                       out, max, n, NULL, "reading image", err);
}

static symd_status pg_list_images(store_db *s, const char *query, const char *arch,
                                  int64_t before_id, size_t limit, store_image *out, size_t *n,
                                  bool *more, symd_err *err)
{
    *more = false;
    params p = {0};
    p_text(&p, query ? query : "");
    p_text(&p, arch ? arch : "");
    p_i64(&p, before_id);
    p_i64(&p, (int64_t)limit + 1);
    /* strpos() keeps user text out of LIKE patterns. The UUID is matched
     * as uppercase hex without dashes. */
    return read_images(s,
                       "SELECT " IMAGE_COLS " FROM images WHERE ($1 = '' OR "
                       "strpos(lower(name), lower($1 COLLATE \"C\")) > 0 OR "
                       "strpos(upper(encode(uuid, 'hex')), upper(replace($1, '-', ''))) = 1) "
                       "AND ($2 = '' OR arch = $2) AND ($3 <= 0 OR id < $3) "
                       "ORDER BY id DESC LIMIT $4",
                       &p, out, limit, n, more, "listing images", err);
}

static symd_status pg_counts(store_db *s, int64_t *images, int64_t *blobs, int64_t *crashes,
                             symd_err *err)
{
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c,
                        "SELECT (SELECT count(*) FROM images), (SELECT count(*) FROM "
                        "image_data), (SELECT count(*) FROM crashes)",
                        NULL, "counting", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res) {
        rd x = {res, 0, false};
        *images = rd_i64(&x, 0);
        *blobs = rd_i64(&x, 1);
        if (crashes)
            *crashes = rd_i64(&x, 2);
        if (x.bad)
            r = bad_value(err, "counting");
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

/* A copy of a bytea value (NULL, 0 for NULL or empty). */
static symd_status copy_bytes(const rd *x, int col, uint8_t **out, size_t *len, symd_err *err)
{
    *out = NULL;
    *len = 0;
    if (rd_null(x, col))
        return SYMD_OK;
    size_t n;
    const uint8_t *b = rd_bytes(x, col, &n);
    if (!n)
        return SYMD_OK;
    if (!(*out = malloc(n)))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    memcpy(*out, b, n);
    *len = n;
    return SYMD_OK;
}

static symd_status pg_load_index(store_db *s, const uint8_t uuid[16], const char *arch,
                                 store_image *meta, int *nslices, uint8_t **sym,
                                 size_t *sym_len, uint8_t **lines, size_t *lines_len,
                                 uint8_t **unwind, size_t *unwind_len, symd_err *err)
{
    *sym = *lines = *unwind = NULL;
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    params p = {0};
    p_bytes(&p, uuid, 16);
    p_text(&p, arch);
    /* one statement: the row, the slice count and the blobs of one snapshot */
    PGresult *res = run(&c,
                        "SELECT " IMAGE_COLS ", (SELECT count(*) FROM images i2 WHERE i2.uuid = "
                        "images.uuid), (SELECT d.data FROM image_data d WHERE d.image_id = "
                        "images.id AND d.kind = 'symbols'), (SELECT d.data FROM image_data d "
                        "WHERE d.image_id = images.id AND d.kind = 'lines'), (SELECT d.data FROM "
                        "image_data d WHERE d.image_id = images.id AND d.kind = 'unwind') FROM "
                        "images WHERE "
                        "uuid = $1 AND ($2::text IS NULL OR arch = $2) ORDER BY arch LIMIT 2",
                        &p, "loading image", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res && PQntuples(res) == 0)
        r = symd_fail(err, SYMD_E_NOT_FOUND, "image not uploaded");
    if (r == SYMD_OK) {
        rd x = {res, 0, false};
        bool ok = row_to_image(res, 0, meta);
        *nslices = (int)rd_i64(&x, IMAGE_NCOLS);
        if (!ok || x.bad)
            r = bad_value(err, "loading image");
        else if (!arch && *nslices > 1)
            r = symd_fail(err, SYMD_E_INVALID,
                          "image has %d architectures; name one with \"arch\"", *nslices);
        if (r == SYMD_OK && (r = copy_bytes(&x, IMAGE_NCOLS + 1, sym, sym_len, err)) == SYMD_OK &&
            (r = copy_bytes(&x, IMAGE_NCOLS + 2, lines, lines_len, err)) == SYMD_OK)
            r = copy_bytes(&x, IMAGE_NCOLS + 3, unwind, unwind_len, err);
    }
    PQclear(res);
    conn_put(&c);
    if (r != SYMD_OK) {
        free(*sym);
        free(*lines);
        free(*unwind);
        *sym = *lines = *unwind = NULL;
    }
    return r;
}

static symd_status pg_load_blob(store_db *s, const uint8_t uuid[16], const char *arch,
                                const char *kind, uint8_t **data, size_t *len, symd_err *err)
{
    *data = NULL;
    *len = 0;
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    params p = {0};
    p_bytes(&p, uuid, 16);
    p_text(&p, arch);
    p_text(&p, kind);
    PGresult *res = run(&c,
                        "SELECT d.data FROM images i JOIN image_data d ON d.image_id = i.id "
                        "WHERE i.uuid = $1 AND i.arch = $2 AND d.kind = $3",
                        &p, "loading image data", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res && PQntuples(res) == 0)
        r = symd_fail(err, SYMD_E_NOT_FOUND, "no %s data stored for this image", kind);
    if (r == SYMD_OK) {
        rd x = {res, 0, false};
        r = copy_bytes(&x, 0, data, len, err);
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

/* ---- chunks of uploads in parts ------------------------------------------------ */

typedef struct {
    const uint8_t *hash, *data;
    size_t len;
    uint64_t budget;
    int64_t now;
    store_chunk_result *res;
    bool full;
} chunk_put_args;

/* The bytes go in first, outside any lock, so uploads to several nodes
 * stream into the database side by side; then the budget lock is taken and
 * the sum read again (a statement of its own: it sees every chunk other
 * transactions committed while they held the lock, and this one's), and
 * the lock is held until this transaction ends. Over budget: rolled back. */
static symd_status chunk_put_tx(pgc *c, void *arg, symd_err *err)
{
    chunk_put_args *a = arg;
    a->full = false;
    params p = {0};
    p_bytes(&p, a->hash, 32);
    p_i64(&p, (int64_t)a->len);
    p_i64(&p, a->now);
    p_bytes(&p, a->data, a->len);
    PGresult *res = run(c,
                        "INSERT INTO chunks(hash, size, created_at, data) VALUES ($1, $2, $3, "
                        "$4) ON CONFLICT (hash) DO NOTHING RETURNING 1",
                        &p, "storing chunk", err);
    if (!res)
        return err->kind;
    bool inserted = PQntuples(res) == 1;
    PQclear(res);
    if (!inserted) { /* held: its time is renewed, so a resumed upload's chunks stay */
        params u = {0};
        p_bytes(&u, a->hash, 32);
        p_i64(&u, a->now);
        if (!exec0(c, "UPDATE chunks SET created_at = $2 WHERE hash = $1", &u, "storing chunk",
                   err))
            return err->kind;
        *a->res = STORE_CHUNK_HELD;
        return SYMD_OK;
    }
    params l = {0};
    p_i64(&l, LOCK_CHUNKS);
    if (!exec0(c, "SELECT pg_advisory_xact_lock($1)", &l, "taking the chunk lock", err))
        return err->kind;
    if (!(res = run(c, "SELECT coalesce(sum(size), 0)::bigint FROM chunks", NULL,
                    "storing chunk", err)))
        return err->kind;
    rd x = {res, 0, false};
    int64_t held = rd_i64(&x, 0);
    PQclear(res);
    if (x.bad)
        return bad_value(err, "storing chunk");
    if (held < 0 || (uint64_t)held > a->budget) {
        a->full = true; /* rolled back by in_tx */
        return symd_fail(err, SYMD_E_TOO_LARGE, "chunk budget full");
    }
    *a->res = STORE_CHUNK_STORED;
    return SYMD_OK;
}

static symd_status pg_chunk_put(store_db *s, const uint8_t hash[32], const uint8_t *data,
                                size_t len, uint64_t budget, int64_t now,
                                store_chunk_result *res, symd_err *err)
{
    if (len > INT32_MAX)
        return symd_fail(err, SYMD_E_TOO_LARGE, "chunk too large");
    chunk_put_args a = {hash, data, len, budget, now, res, false};
    symd_err e = {0};
    symd_status r = in_tx(s, chunk_put_tx, &a, "storing chunk", &e);
    if (r != SYMD_OK && a.full) {
        *res = STORE_CHUNK_FULL;
        return SYMD_OK;
    }
    if (r != SYMD_OK && err)
        *err = e;
    return r;
}

/* hashes as a PostgreSQL text array of hex digits: {h1,h2,...} (malloc'ed). */
static char *hex_array(const uint8_t (*hashes)[32], size_t n)
{
    char *out = malloc(n * 65 + 3);
    if (!out)
        return NULL;
    static const char digits[] = "0123456789abcdef";
    char *p = out;
    *p++ = '{';
    for (size_t i = 0; i < n; i++) {
        if (i)
            *p++ = ',';
        for (int k = 0; k < 32; k++) {
            *p++ = digits[hashes[i][k] >> 4];
            *p++ = digits[hashes[i][k] & 15];
        }
    }
    *p++ = '}';
    *p = 0;
    return out;
}

static symd_status pg_chunks_missing(store_db *s, const uint8_t (*hashes)[32], size_t n,
                                     bool *missing, symd_err *err)
{
    if (!n)
        return SYMD_OK;
    char *arr = hex_array(hashes, n);
    if (!arr)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK) {
        free(arr);
        return err->kind;
    }
    params p = {0};
    p_text(&p, arr);
    /* the ordinals (1-based) of the hashes no chunk is held for */
    PGresult *res = run(&c,
                        "SELECT i FROM unnest($1::text[]) WITH ORDINALITY AS t(h, i) WHERE NOT "
                        "EXISTS (SELECT 1 FROM chunks WHERE hash = decode(t.h, 'hex'))",
                        &p, "looking up chunks", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res) {
        for (size_t i = 0; i < n; i++)
            missing[i] = false;
        for (int row = 0; row < PQntuples(res) && r == SYMD_OK; row++) {
            rd x = {res, row, false};
            int64_t i = rd_i64(&x, 0);
            if (x.bad || i < 1 || (uint64_t)i > n)
                r = bad_value(err, "looking up chunks");
            else
                missing[i - 1] = true;
        }
    }
    PQclear(res);
    conn_put(&c);
    free(arr);
    return r;
}

static symd_status pg_chunk_get(store_db *s, const uint8_t hash[32], uint8_t **data, size_t *len,
                                symd_err *err)
{
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    params p = {0};
    p_bytes(&p, hash, 32);
    PGresult *res = run(&c, "SELECT data FROM chunks WHERE hash = $1", &p, "reading chunk", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res && PQntuples(res) == 0)
        r = symd_fail(err, SYMD_E_NOT_FOUND, "chunk not held");
    if (r == SYMD_OK) {
        rd x = {res, 0, false};
        r = copy_bytes(&x, 0, data, len, err);
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

static symd_status pg_chunks_delete(store_db *s, const uint8_t (*hashes)[32], size_t n,
                                    symd_err *err)
{
    char *arr = hex_array(hashes, n);
    if (!arr)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK) {
        free(arr);
        return err->kind;
    }
    params p = {0};
    p_text(&p, arr);
    bool ok = exec0(&c,
                    "DELETE FROM chunks WHERE hash IN (SELECT decode(h, 'hex') FROM "
                    "unnest($1::text[]) AS t(h))",
                    &p, "deleting chunks", err);
    conn_put(&c);
    free(arr);
    return ok ? SYMD_OK : err->kind;
}

static symd_status pg_chunks_expire(store_db *s, int64_t before_ms, size_t *deleted,
                                    symd_err *err)
{
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    params p = {0};
    p_i64(&p, before_ms);
    PGresult *res = run(&c, "DELETE FROM chunks WHERE created_at < $1", &p, "expiring chunks",
                        err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res)
        *deleted = (size_t)strtoull(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    conn_put(&c);
    return r;
}

static symd_status pg_chunk_stats(store_db *s, int64_t *count, int64_t *bytes, symd_err *err)
{
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c, "SELECT count(*), coalesce(sum(size), 0)::bigint FROM chunks", NULL,
                        "counting chunks", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res) {
        rd x = {res, 0, false};
        *count = rd_i64(&x, 0);
        *bytes = rd_i64(&x, 1);
        if (x.bad)
            r = bad_value(err, "counting chunks");
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

/* ---- system symbol sets ------------------------------------------------------ */

#define SET_COLS "id, os_name, os_version, os_build, arch, model, source, created_at, updated_at"
#define SET_NCOLS 9

/* Reads a SET_COLS row; false when a value is not what it should be. */
static bool row_to_set(PGresult *res, int row, store_symbol_set *o)
{
    rd x = {res, row, false};
    memset(o, 0, sizeof *o);
    o->id = rd_i64(&x, 0);
    rd_text(&x, 1, o->os_name, sizeof o->os_name);
    rd_text(&x, 2, o->os_version, sizeof o->os_version);
    rd_text(&x, 3, o->os_build, sizeof o->os_build);
    rd_text(&x, 4, o->arch, sizeof o->arch);
    rd_text(&x, 5, o->model, sizeof o->model);
    rd_text(&x, 6, o->source, sizeof o->source);
    o->created_at = rd_i64(&x, 7);
    o->updated_at = rd_i64(&x, 8);
    return !x.bad;
}

typedef struct {
    const store_symbol_set *want;
    store_symbol_set *out;
    bool *created;
} set_open_args;

static symd_status set_open_tx(pgc *c, void *arg, symd_err *err)
{
    set_open_args *a = arg;
    const store_symbol_set *w = a->want;
    params p = {0};
    p_text(&p, w->os_name);
    p_text(&p, w->os_version);
    p_text(&p, w->os_build);
    p_text(&p, w->arch);
    p_text(&p, w->model);
    p_text(&p, w->source);
    p_i64(&p, store_now_ms());
    PGresult *res = run(c,
                        "INSERT INTO symbol_sets(os_name, os_version, os_build, arch, model, "
                        "source, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) "
                        "ON CONFLICT (os_name, os_build, arch) DO NOTHING RETURNING " SET_COLS,
                        &p, "storing symbol set", err);
    if (!res)
        return err->kind;
    *a->created = PQntuples(res) == 1;
    if (!*a->created) {
        PQclear(res);
        res = run(c,
                  "UPDATE symbol_sets SET os_version = CASE WHEN $2 <> '' THEN $2 ELSE "
                  "os_version END, model = CASE WHEN $5 <> '' THEN $5 ELSE model END, source = "
                  "CASE WHEN $6 <> '' THEN $6 ELSE source END, updated_at = $7 WHERE os_name = "
                  "$1 AND os_build = $3 AND arch = $4 RETURNING " SET_COLS,
                  &p, "storing symbol set", err);
        if (!res)
            return err->kind;
    }
    bool ok = PQntuples(res) == 1 && row_to_set(res, 0, a->out);
    PQclear(res);
    return ok ? SYMD_OK : bad_value(err, "storing symbol set");
}

static symd_status pg_symbol_set_open(store_db *s, const store_symbol_set *want,
                                      store_symbol_set *out, bool *created, symd_err *err)
{
    set_open_args a = {want, out, created};
    return in_tx(s, set_open_tx, &a, "storing symbol set", err);
}

/* Links image_id to set_id (once), in c's transaction. */
static bool link_image(pgc *c, int64_t set_id, int64_t image_id, symd_err *err)
{
    params p = {0};
    p_i64(&p, set_id);
    p_i64(&p, image_id);
    return exec0(c, "INSERT INTO symbol_set_images(set_id, image_id) VALUES ($1, $2) ON "
                    "CONFLICT DO NOTHING", &p, "linking image to its symbol set", err);
}

typedef struct {
    int64_t set_id;
    store_put *puts;
    size_t n;
    store_put_result *results;
    const store_image_key *links;
    size_t nlinks;
    size_t *linked;
} set_add_args;

static symd_status set_add_tx(pgc *c, void *arg, symd_err *err)
{
    set_add_args *a = arg;
    int64_t now = store_now_ms();
    *a->linked = 0;
    params p = {0};
    p_i64(&p, a->set_id);
    p_i64(&p, now);
    PGresult *res = run(c, "UPDATE symbol_sets SET updated_at = $2 WHERE id = $1 RETURNING id",
                        &p, "touching symbol set", err);
    if (!res)
        return err->kind;
    int rows = PQntuples(res);
    PQclear(res);
    if (rows == 0)
        return symd_fail(err, SYMD_E_NOT_FOUND, "symbol set %lld is gone",
                         (long long)a->set_id);
    for (size_t i = 0; i < a->n; i++) {
        store_image im;
        bool found;
        symd_status r = find_locked(c, a->puts[i].meta.uuid, a->puts[i].meta.arch, &im, &found,
                                    err);
        if (r == SYMD_OK && found)
            a->results[i] = STORE_EXISTS; /* an upload's or another set's: left as it is */
        else if (r == SYMD_OK)
            r = put_one(c, &a->puts[i], now, true, &a->results[i], &im, err);
        if (r != SYMD_OK)
            return r;
        if (!link_image(c, a->set_id, im.id, err))
            return err->kind;
    }
    for (size_t i = 0; i < a->nlinks; i++) {
        store_image im;
        bool found;
        symd_status r = find_locked(c, a->links[i].uuid, a->links[i].arch, &im, &found, err);
        if (r != SYMD_OK)
            return r;
        if (!found)
            continue;
        if (!link_image(c, a->set_id, im.id, err))
            return err->kind;
        (*a->linked)++;
    }
    return SYMD_OK;
}

static symd_status pg_symbol_set_add(store_db *s, int64_t set_id, store_put *puts, size_t n,
                                     store_put_result *results, const store_image_key *links,
                                     size_t nlinks, size_t *linked, symd_err *err)
{
    set_add_args a = {set_id, puts, n, results, links, nlinks, linked};
    symd_status r = in_tx(s, set_add_tx, &a, "importing images", err);
    if (r != SYMD_OK)
        *linked = 0;
    return r;
}

static symd_status pg_list_symbol_sets(store_db *s, store_symbol_set *out, size_t max, size_t *n,
                                       symd_err *err)
{
    *n = 0;
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    params p = {0};
    p_i64(&p, (int64_t)max);
    PGresult *res = run(&c,
                        "SELECT " SET_COLS ", (SELECT count(*) FROM symbol_set_images si WHERE "
                        "si.set_id = symbol_sets.id), (SELECT coalesce(sum(octet_length(d.data)), "
                        "0)::bigint FROM symbol_set_images si JOIN image_data d ON d.image_id = "
                        "si.image_id WHERE si.set_id = symbol_sets.id) FROM symbol_sets ORDER BY "
                        "id LIMIT $1",
                        &p, "listing symbol sets", err);
    symd_status r = res ? SYMD_OK : err->kind;
    int rows = res ? PQntuples(res) : 0;
    for (int i = 0; i < rows && r == SYMD_OK && *n < max; i++) {
        rd x = {res, i, false};
        bool ok = row_to_set(res, i, &out[*n]);
        out[*n].image_count = rd_i64(&x, SET_NCOLS);
        out[*n].bytes = (uint64_t)rd_i64(&x, SET_NCOLS + 1);
        if (!ok || x.bad)
            r = bad_value(err, "listing symbol sets");
        else
            (*n)++;
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

typedef struct {
    int64_t id;
    bool *found;
    size_t *deleted;
    uint8_t (**uuids)[16];
} set_delete_args;

static symd_status set_delete_tx(pgc *c, void *arg, symd_err *err)
{
    set_delete_args *a = arg;
    *a->found = false;
    *a->deleted = 0;
    free(*a->uuids);
    *a->uuids = NULL;
    params p = {0};
    p_i64(&p, a->id);
    PGresult *res = run(c, "SELECT id FROM symbol_sets WHERE id = $1 FOR UPDATE", &p,
                        "reading symbol set", err);
    if (!res)
        return err->kind;
    *a->found = PQntuples(res) == 1;
    PQclear(res);
    if (!*a->found)
        return SYMD_OK;
    /* The images only this set holds that an import created; each one's
     * notice goes out with the commit. */
    res = run(c,
              "WITH d AS (DELETE FROM images WHERE id IN (SELECT si.image_id FROM "
              "symbol_set_images si JOIN images i ON i.id = si.image_id WHERE si.set_id = $1 "
              "AND i.system AND NOT EXISTS (SELECT 1 FROM symbol_set_images o WHERE "
              "o.image_id = si.image_id AND o.set_id <> $1)) RETURNING uuid) SELECT uuid, "
              "pg_notify('" CHANNEL "', encode(uuid, 'hex')) FROM d",
              &p, "deleting the set's images", err);
    if (!res)
        return err->kind;
    int rows = PQntuples(res);
    if (rows && !(*a->uuids = malloc((size_t)rows * 16))) {
        PQclear(res);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < rows; i++) {
        rd x = {res, i, false};
        size_t len;
        const uint8_t *u = rd_bytes(&x, 0, &len);
        memset((*a->uuids)[i], 0, 16);
        if (len == 16)
            memcpy((*a->uuids)[i], u, 16);
    }
    *a->deleted = (size_t)rows;
    PQclear(res);
    return exec0(c, "DELETE FROM symbol_sets WHERE id = $1", &p, "deleting symbol set", err)
               ? SYMD_OK
               : err->kind;
}

static symd_status pg_delete_symbol_set(store_db *s, int64_t id, bool *found,
                                        size_t *images_deleted, uint8_t (**uuids)[16],
                                        symd_err *err)
{
    *uuids = NULL;
    set_delete_args a = {id, found, images_deleted, uuids};
    symd_status r = in_tx(s, set_delete_tx, &a, "deleting symbol set", err);
    if (r != SYMD_OK) {
        free(*uuids);
        *uuids = NULL;
        *found = false;
        *images_deleted = 0;
    }
    return r;
}

/* ---- crash reports ------------------------------------------------------------- */

/* What a crash is counted under. */
typedef struct {
    const char *kind, *signature, *dims[3], *process;
    int64_t id, created_at;
} crash_key;

/* Counts crash k into (sign +1) or out of (sign -1) its group, the group's
 * day, its kind's day and its dimensions, as the SQLite backend does (see
 * its count_crash). Counters move by upserts and in-place increments under
 * their row locks, so crashes counted by several nodes at once add up;
 * locks are taken in one order (group, days, dimensions). */
static symd_status count_crash(pgc *c, const crash_key *k, int sign, symd_err *err)
{
    int64_t day = store_day_of(k->created_at);
    params p = {0};
    p_text(&p, k->kind);
    p_text(&p, k->signature);
    if (sign > 0) {
        p_i64(&p, k->created_at);
        p_i64(&p, k->id);
        p_text_or_null(&p, k->dims[0]);
        p_text_or_null(&p, k->process);
        if (!exec0(c,
                   "INSERT INTO crash_groups AS g (kind, signature, count, first_seen, "
                   "last_seen, example_id, app_version, process) VALUES ($1, $2, 1, $3, $3, $4, "
                   "$5, $6) ON CONFLICT (kind, signature) DO UPDATE SET count = g.count + 1, "
                   "first_seen = least(g.first_seen, excluded.first_seen), last_seen = "
                   "greatest(g.last_seen, excluded.last_seen), app_version = CASE WHEN "
                   "excluded.example_id > g.example_id THEN excluded.app_version ELSE "
                   "g.app_version END, process = CASE WHEN excluded.example_id > g.example_id "
                   "THEN excluded.process ELSE g.process END, example_id = "
                   "greatest(g.example_id, excluded.example_id)",
                   &p, "counting the crash in its group", err))
            return err->kind;
    } else {
        PGresult *res = run(c,
                            "UPDATE crash_groups SET count = count - 1 WHERE kind = $1 AND "
                            "signature = $2 RETURNING count, example_id, first_seen",
                            &p, "counting the crash out of its group", err);
        if (!res)
            return err->kind;
        rd x = {res, 0, false};
        bool row = PQntuples(res) == 1;
        int64_t left = row ? rd_i64(&x, 0) : 0;
        bool newest = row && rd_i64(&x, 1) == k->id;
        bool oldest = row && rd_i64(&x, 2) >= k->created_at;
        PQclear(res);
        if (x.bad)
            return bad_value(err, "counting the crash out of its group");
        if (row && left <= 0) {
            if (!exec0(c, "DELETE FROM crash_groups WHERE kind = $1 AND signature = $2", &p,
                       "dropping an empty group", err))
                return err->kind;
        } else if (row && (newest || oldest)) {
            if (!exec0(c,
                       "UPDATE crash_groups SET (example_id, last_seen, app_version, process) "
                       "= (SELECT id, created_at, app_version, process FROM crashes WHERE kind "
                       "= $1 AND signature = $2 ORDER BY id DESC LIMIT 1), first_seen = "
                       "(SELECT created_at FROM crashes WHERE kind = $1 AND signature = $2 "
                       "ORDER BY id LIMIT 1) WHERE kind = $1 AND signature = $2",
                       &p, "reading a group's newest and oldest crash", err))
                return err->kind;
        }
    }
    /* the group's day, the kind's day */
    params d = {0};
    p_text(&d, k->kind);
    p_text(&d, k->signature);
    p_i64(&d, day);
    if (!exec0(c,
               sign > 0 ? "INSERT INTO crash_group_days AS d VALUES ($1, $2, $3, 1) ON CONFLICT "
                          "(kind, signature, day) DO UPDATE SET count = d.count + 1"
                        : "UPDATE crash_group_days SET count = count - 1 WHERE kind = $1 AND "
                          "signature = $2 AND day = $3",
               &d, "counting the crash's day", err))
        return err->kind;
    params kd = {0};
    p_text(&kd, k->kind);
    p_i64(&kd, day);
    if (!exec0(c,
               sign > 0 ? "INSERT INTO crash_days AS d VALUES ($1, $2, 1) ON CONFLICT (kind, "
                          "day) DO UPDATE SET count = d.count + 1"
                        : "UPDATE crash_days SET count = count - 1 WHERE kind = $1 AND day = $2",
               &kd, "counting the crash's day", err))
        return err->kind;
    for (int dim = 0; dim < 3; dim++) {
        if (!k->dims[dim] || !*k->dims[dim])
            continue;
        params q = {0};
        p_text(&q, k->kind);
        p_text(&q, k->signature);
        p_i32(&q, dim);
        p_text(&q, k->dims[dim]);
        params dd = q;
        p_i64(&dd, day);
        if (!exec0(c,
                   sign > 0 ? "INSERT INTO crash_dim_days AS d VALUES ($1, $2, $3, $4, $5, 1) ON "
                              "CONFLICT (kind, signature, dim, value, day) DO UPDATE SET count = "
                              "d.count + 1"
                            : "UPDATE crash_dim_days SET count = count - 1 WHERE kind = $1 AND "
                              "signature = $2 AND dim = $3 AND value = $4 AND day = $5",
                   &dd, "counting the day of the crash's version, OS or device", err))
            return err->kind;
        if (sign > 0) {
            p_i64(&q, k->created_at);
            p_i64(&q, k->id);
            if (!exec0(c,
                       "INSERT INTO crash_group_dims AS d VALUES ($1, $2, $3, $4, 1, $5, $5, "
                       "$6) ON CONFLICT (kind, signature, dim, value) DO UPDATE SET count = "
                       "d.count + 1, first_seen = least(d.first_seen, excluded.first_seen), "
                       "last_seen = greatest(d.last_seen, excluded.last_seen), example_id = "
                       "greatest(d.example_id, excluded.example_id)",
                       &q, "counting the crash's version, OS or device", err))
                return err->kind;
            continue;
        }
        PGresult *res = run(c,
                            "UPDATE crash_group_dims SET count = count - 1 WHERE kind = $1 AND "
                            "signature = $2 AND dim = $3 AND value = $4 RETURNING count, "
                            "example_id, first_seen",
                            &q, "counting the crash's version, OS or device out", err);
        if (!res)
            return err->kind;
        rd x = {res, 0, false};
        bool reset = PQntuples(res) == 1 && rd_i64(&x, 0) > 0 &&
                     (rd_i64(&x, 1) == k->id || rd_i64(&x, 2) >= k->created_at);
        PQclear(res);
        if (x.bad)
            return bad_value(err, "counting the crash's version, OS or device out");
        if (reset &&
            !exec0(c,
                   "UPDATE crash_group_dims SET (example_id, last_seen) = (SELECT c.id, "
                   "c.created_at FROM crashes c WHERE c.kind = $1 AND c.signature = $2 AND CASE "
                   "$3 WHEN 0 THEN c.app_version WHEN 1 THEN c.os_version ELSE c.hardware_model "
                   "END = $4 ORDER BY c.id DESC LIMIT 1), first_seen = (SELECT c.created_at "
                   "FROM crashes c WHERE c.kind = $1 AND c.signature = $2 AND CASE $3 WHEN 0 "
                   "THEN c.app_version WHEN 1 THEN c.os_version ELSE c.hardware_model END = $4 "
                   "ORDER BY c.id LIMIT 1) WHERE kind = $1 AND signature = $2 AND dim = $3 AND "
                   "value = $4",
                   &q, "reading a version's, OS's or device's newest crash", err))
            return err->kind;
    }
    return SYMD_OK;
}

/* ---- a group's workflow (store.h; as the SQLite store's) ---- */

/* The text value at col into dst, cut as store_text_cut does ("" for NULL). */
static void rd_text_cut(const rd *x, int col, char *dst, size_t cap);

/* Fills o from STORE_STATUS_COLS at column at. */
static void rd_status(rd *x, int at, store_group_status *o)
{
    memset(o, 0, sizeof *o);
    o->state = store_state_of(PQgetvalue(x->r, x->row, at),
                              (size_t)PQgetlength(x->r, x->row, at));
    o->changed_at = rd_i64(x, at + 1);
    rd_text_cut(x, at + 2, o->resolved_in, sizeof o->resolved_in);
    rd_text_cut(x, at + 3, o->resolved_version, sizeof o->resolved_version);
    o->ignore_until = rd_i64(x, at + 4);
    o->ignore_reports = rd_i64(x, at + 5);
    o->ignore_seen = rd_i64(x, at + 6);
    rd_text_cut(x, at + 7, o->first_version, sizeof o->first_version);
    rd_text_cut(x, at + 8, o->last_version, sizeof o->last_version);
    o->reports = rd_i64(x, at + 9);
}

/* Records one state change (inside c's transaction). */
static symd_status history_add(pgc *c, const store_history_row *h, symd_err *err)
{
    params p = {0};
    p_text(&p, h->kind);
    p_text(&p, h->signature);
    p_i64(&p, h->at);
    p_text(&p, store_state_name(h->from));
    p_text(&p, store_state_name(h->to));
    p_text(&p, h->by);
    p_text(&p, h->reason);
    if (h->crash_id)
        p_i64(&p, h->crash_id);
    else
        p_add(&p, OID_INT8, NULL, 0, 0);
    p_text(&p, h->resolved_in ? h->resolved_in : "");
    p_text_or_null(&p, h->version);
    p_i64(&p, h->ignore_until);
    p_i64(&p, h->ignore_reports);
    p_text_or_null(&p, h->note);
    return exec0(c,
                 "INSERT INTO crash_group_history(kind, signature, at, from_state, to_state, "
                 "by_role, reason, crash_id, resolved_in, version, ignore_until, ignore_reports, "
                 "note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                 &p, "recording a group's state change", err)
               ? SYMD_OK
               : err->kind;
}

/* Files report k into its group's workflow inside c's transaction, as the
 * SQLite store's group_state_on_report: the version widens the group's
 * span; a new report (ev not NULL) then ends a passed ignore, counts an
 * ignore's reports, or regresses a resolved group, each one conditional
 * update under the group's row lock (taken by the first statement and held
 * to the commit), so two nodes filing reports of one group at once decide
 * each change once. *ev is the hook of group.new and group.regressed. */
static symd_status group_state_on_report(pgc *c, const crash_key *k, int64_t now,
                                         store_group_event *ev, symd_err *err)
{
    char key[APP_VERSION_KEY_MAX], fkey[APP_VERSION_KEY_MAX];
    bool versioned = app_version_key(k->dims[0], key) && app_version_first_key(k->dims[0], fkey);
    params p = {0};
    p_text(&p, k->kind);
    p_text(&p, k->signature);
    p_text(&p, versioned ? k->dims[0] : NULL);
    p_text(&p, versioned ? key : NULL);
    p_text(&p, versioned ? fkey : NULL);
    PGresult *res = run(c,
                        "INSERT INTO crash_group_states AS t (kind, signature, reports, "
                        "first_version, first_key, last_version, last_key) VALUES ($1, $2, 1, $3, "
                        "$5, $3, $4) ON CONFLICT (kind, signature) DO UPDATE SET reports = "
                        "t.reports + 1, first_version = CASE WHEN excluded.first_key < "
                        "t.first_key OR t.first_key IS NULL THEN excluded.first_version ELSE "
                        "t.first_version END, first_key = CASE WHEN excluded.first_key < "
                        "t.first_key OR t.first_key IS NULL THEN excluded.first_key ELSE "
                        "t.first_key END, last_version = CASE WHEN excluded.last_key > "
                        "t.last_key OR t.last_key IS NULL THEN excluded.last_version ELSE "
                        "t.last_version END, last_key = CASE WHEN excluded.last_key > t.last_key "
                        "OR t.last_key IS NULL THEN excluded.last_key ELSE t.last_key END "
                        "RETURNING reports, state",
                        &p, "counting the report in its group's workflow", err);
    if (!res)
        return err->kind;
    rd x = {res, 0, false};
    bool row = PQntuples(res) == 1;
    int64_t reports = row ? rd_i64(&x, 0) : 0;
    store_state state = row ? store_state_of(PQgetvalue(res, 0, 1), (size_t)PQgetlength(res, 0, 1))
                            : STORE_STATE_UNRESOLVED;
    PQclear(res);
    if (x.bad || !row)
        return bad_value(err, "counting the report in its group's workflow");
    if (!ev)
        return SYMD_OK;
    ev->new_group = reports == 1;
    store_history_row h = {.kind = k->kind, .signature = k->signature, .by = "system"};
    params q = {0};
    p_text(&q, k->kind);
    p_text(&q, k->signature);
    p_i64(&q, now);
    if (state == STORE_STATE_IGNORED) {
        /* an ignore whose date has passed: over at the date, before this report */
        if (!(res = run(c,
                        "UPDATE crash_group_states SET state = 'unresolved', changed_at = "
                        "ignore_until WHERE kind = $1 AND signature = $2 AND state = 'ignored' "
                        "AND ignore_until > 0 AND ignore_until <= $3 RETURNING ignore_until, "
                        "ignore_reports",
                        &q, "ending an ignore", err)))
            return err->kind;
        x = (rd){res, 0, false};
        bool ended = PQntuples(res) == 1;
        if (ended) {
            h.at = h.ignore_until = rd_i64(&x, 0);
            h.ignore_reports = rd_i64(&x, 1);
        }
        PQclear(res);
        if (x.bad)
            return bad_value(err, "ending an ignore");
        if (ended) {
            h.from = STORE_STATE_IGNORED;
            h.to = state = STORE_STATE_UNRESOLVED;
            h.reason = "ignore_until_passed";
            ev->reopened = true;
            if (history_add(c, &h, err) != SYMD_OK)
                return err->kind;
        }
    }
    if (state == STORE_STATE_IGNORED) {
        /* an ignore counting reports: the one that makes the count ends it */
        if (!(res = run(c,
                        "UPDATE crash_group_states SET ignore_seen = ignore_seen + 1, state = "
                        "CASE WHEN ignore_reports > 0 AND ignore_seen + 1 >= ignore_reports THEN "
                        "'unresolved' ELSE state END, changed_at = CASE WHEN ignore_reports > 0 "
                        "AND ignore_seen + 1 >= ignore_reports THEN $3 ELSE changed_at END WHERE "
                        "kind = $1 AND signature = $2 AND state = 'ignored' RETURNING state, "
                        "ignore_until, ignore_reports",
                        &q, "counting a report of an ignored group", err)))
            return err->kind;
        x = (rd){res, 0, false};
        bool ended = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "unresolved") == 0;
        if (ended) {
            h.ignore_until = rd_i64(&x, 1);
            h.ignore_reports = rd_i64(&x, 2);
        }
        PQclear(res);
        if (x.bad)
            return bad_value(err, "counting a report of an ignored group");
        if (ended) {
            h.at = now;
            h.from = STORE_STATE_IGNORED;
            h.to = state = STORE_STATE_UNRESOLVED;
            h.reason = "ignore_reports_reached";
            h.crash_id = k->id;
            ev->reopened = true;
            if (history_add(c, &h, err) != SYMD_OK)
                return err->kind;
        }
    }
    if (state == STORE_STATE_RESOLVED) {
        /* a regression: any report when resolved in no version, else one
         * newer than the resolution's */
        p_text(&q, versioned ? key : NULL);
        if (!(res = run(c,
                        "UPDATE crash_group_states SET state = 'regressed', changed_at = $3 WHERE "
                        "kind = $1 AND signature = $2 AND state = 'resolved' AND (resolved_in = "
                        "'' OR ($4::text IS NOT NULL AND (resolved_key IS NULL OR $4 > "
                        "resolved_key))) RETURNING coalesce(resolved_version, ''), resolved_in",
                        &q, "regressing a resolved group", err)))
            return err->kind;
        x = (rd){res, 0, false};
        bool regressed = PQntuples(res) == 1;
        char in[8] = "";
        if (regressed) {
            rd_text_cut(&x, 0, ev->resolved_version, sizeof ev->resolved_version);
            rd_text_cut(&x, 1, in, sizeof in);
        }
        PQclear(res);
        if (regressed) {
            h = (store_history_row){.kind = k->kind, .signature = k->signature, .at = now,
                                    .from = STORE_STATE_RESOLVED, .to = STORE_STATE_REGRESSED,
                                    .by = "system", .reason = "regression", .crash_id = k->id,
                                    .resolved_in = in, .version = k->dims[0]};
            state = STORE_STATE_REGRESSED;
            ev->regressed = true;
            if (history_add(c, &h, err) != SYMD_OK)
                return err->kind;
        }
    }
    ev->state = state;
    return SYMD_OK;
}

typedef struct {
    const store_crash *c;
    int codec;
    size_t raw_len;
    const store_crash_image *imgs;
    size_t nimgs;
    int64_t *id;
    store_group_event *ev;
} put_crash_args;

/* The stored crash with c's idem_key or else its content_key (the key
 * wins) into *id, 0 when none. */
static symd_status first_copy(pgc *c, const store_crash *cr, int64_t *id, symd_err *err)
{
    params p = {0};
    p_text_or_null(&p, cr->idem_key);
    p_text_or_null(&p, cr->content_key);
    PGresult *res = run(c,
                        "SELECT id FROM (SELECT id, 0 AS o FROM crashes WHERE idem_key = $1 "
                        "UNION ALL SELECT id, 1 FROM crashes WHERE content_key = $2) f "
                        "ORDER BY o LIMIT 1",
                        &p, "finding the crash's first copy", err);
    if (!res)
        return err->kind;
    rd x = {res, 0, false};
    *id = PQntuples(res) == 1 ? rd_i64(&x, 0) : 0;
    PQclear(res);
    return x.bad ? bad_value(err, "finding the crash's first copy") : SYMD_OK;
}

/* After the connection was lost with a post's outcome unknown (at its
 * COMMIT, or with its statement under way): its key finds the crash if it
 * was stored. known is the id the statement answered (0: no answer came
 * back). True when found, *a->id its id and a->ev a copy's when the id is
 * not the one this post was given (another post stored it); a crash found
 * with no answer is taken as this post's. */
static bool recover_lost_post(store_db *s, put_crash_args *a, int64_t known)
{
    const store_crash *c = a->c;
    if (!c->idem_key && !c->content_key)
        return false;
    pgc pc;
    symd_err e = {0};
    int64_t found = 0;
    if (conn_get(s, &pc, &e) != SYMD_OK)
        return false;
    if (first_copy(&pc, c, &found, &e) != SYMD_OK)
        found = 0;
    conn_put(&pc);
    if (!found)
        return false;
    memset(a->ev, 0, sizeof *a->ev);
    a->ev->duplicate = known && found != known;
    *a->id = found;
    return true;
}

/* Images in one order on every node (uuid, then arch), so two crashes
 * counted at once lock their rows in the same order. */
static int img_cmp(const void *a, const void *b)
{
    const store_crash_image *x = a, *y = b;
    int d = memcmp(x->uuid, y->uuid, 16);
    return d ? d : strcmp(x->arch ? x->arch : "", y->arch ? y->arch : "");
}

static symd_status hook_emit_owned(pgc *c, const store_hooks *h, const char *type, char *data,
                                   int64_t now, symd_err *err);

/* One crash post's call of symd_put_crash (schema 13): its parameters and
 * the buffers they point into (crash_call_free frees them). */
typedef struct {
    params p;
    store_crash_image *imgs; /* the crash's images, sorted (img_cmp) */
    size_t *which;           /* the app's images (not the OS's): their index in imgs */
    size_t napp;
    uint8_t *uuids, *app_uuids;
    bin_array arches, names, systems;
    char key[APP_VERSION_KEY_MAX], fkey[APP_VERSION_KEY_MAX];
    int64_t now;
} crash_call;

static void crash_call_free(crash_call *k)
{
    free(k->imgs);
    free(k->which);
    free(k->uuids);
    free(k->app_uuids);
    dynbuf_free(&k->arches.b);
    dynbuf_free(&k->names.b);
    dynbuf_free(&k->systems.b);
}

#define PUT_CRASH_SQL                                                                            \
    "SELECT * FROM symd_put_crash($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, " \
    "$15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, " \
    "$33, $34)"

/* Fills k with a's call, made at now under hooks h (NULL: none); false
 * when out of memory. */
static bool crash_call_make(crash_call *k, const put_crash_args *a, const store_hooks *h,
                            int64_t now)
{
    memset(k, 0, sizeof *k);
    k->now = now;
    size_t n = a->nimgs;
    bool ok = arr_init(&k->arches, OID_TEXT) && arr_init(&k->names, OID_TEXT) &&
              arr_init(&k->systems, OID_BOOL);
    if (!ok || (n && (!(k->imgs = malloc(n * sizeof *k->imgs)) ||
                      !(k->which = malloc(n * sizeof(size_t))) || !(k->uuids = malloc(16 * n)) ||
                      !(k->app_uuids = malloc(16 * n)))))
        return false;
    if (n) {
        memcpy(k->imgs, a->imgs, n * sizeof *k->imgs);
        qsort(k->imgs, n, sizeof *k->imgs, img_cmp);
    }
    for (size_t i = 0; i < n && ok; i++) {
        const store_crash_image *im = &k->imgs[i];
        uint8_t sys = im->system;
        memcpy(k->uuids + 16 * i, im->uuid, 16);
        ok = arr_text(&k->arches, im->arch ? im->arch : "") &&
             arr_text(&k->names, im->name ? im->name : "") && arr_add(&k->systems, &sys, 1);
        if (!im->system) {
            memcpy(k->app_uuids + 16 * k->napp, im->uuid, 16);
            k->which[k->napp++] = i;
        }
    }
    if (!ok)
        return false;
    const store_crash *cr = a->c;
    const store_crash_image *app = NULL;
    for (size_t i = 0; i < a->nimgs && !app; i++)
        if (a->imgs[i].app)
            app = &a->imgs[i];
    params *p = &k->p;
    p_i64(p, now);
    p_i64(p, store_day_of(now));
    p_text(p, cr->kind ? cr->kind : "crash");
    if (cr->bug_type)
        p_i32(p, cr->bug_type);
    else
        p_add(p, OID_INT4, NULL, 0, 0);
    p_text(p, cr->format);
    const char *texts[] = {cr->process, cr->bundle_id, cr->app_version, cr->os_version,
                           cr->hardware_model, cr->incident_id, cr->exception_type};
    for (int i = 0; i < 7; i++)
        p_text_or_null(p, texts[i]);
    p_text(p, cr->signature);
    if (app) {
        p_bytes(p, app->uuid, 16);
        p_text(p, app->arch ? app->arch : "");
        p_text(p, app->name ? app->name : "");
    } else {
        p_add(p, OID_BYTEA, NULL, 0, 1);
        p_text(p, NULL);
        p_text(p, NULL);
    }
    p_i32(p, a->codec);
    p_i64(p, (int64_t)a->raw_len);
    p_bytes(p, cr->original, cr->original_len);
    p_i32(p, cr->part);
    p_text_or_null(p, cr->grouping_rule);
    /* the group's workflow: the version's sort keys when it has them */
    bool versioned = app_version_key(cr->app_version, k->key) &&
                     app_version_first_key(cr->app_version, k->fkey);
    p_text(p, versioned ? cr->app_version : NULL);
    p_text(p, versioned ? k->key : NULL);
    p_text(p, versioned ? k->fkey : NULL);
    p_bytes(p, k->uuids, 16 * n);
    arr_param(p, &k->arches, OID_TEXT_ARRAY);
    arr_param(p, &k->names, OID_TEXT_ARRAY);
    arr_param(p, &k->systems, OID_BOOL_ARRAY);
    bool on = store_hooks_on(h);
    p_bool(p, on);
    p_bytes(p, k->app_uuids, 16 * k->napp);
    p_f64(p, on ? h->spike_factor : 0.0);
    p_i64(p, on ? h->spike_min : 0);
    p_text_or_null(p, cr->idem_key);
    p_text_or_null(p, cr->content_key);
    return true;
}

/* What symd_put_crash answered for k: the crash's id and *ev, and the
 * webhook events it decided recorded (in c's transaction) in the order the
 * statements they replace recorded them: group.regressed, group.new,
 * image.missing, group.spike. */
static symd_status crash_call_done(pgc *c, const crash_call *k, const put_crash_args *a,
                                   PGresult *res, symd_err *err)
{
    const char *what = "storing crash";
    store_group_event *ev = a->ev;
    memset(ev, 0, sizeof *ev);
    if (PQntuples(res) != 1 || PQnfields(res) != 12)
        return bad_value(err, what);
    rd x = {res, 0, false};
    if (rd_i64(&x, 11)) { /* a copy of a stored crash: nothing counted, no event */
        *a->id = rd_i64(&x, 0);
        ev->duplicate = true;
        return *a->id > 0 ? SYMD_OK
                          : symd_fail(err, SYMD_E_DB, "storing crash: a copy of a crash gone");
    }
    int64_t id = rd_i64(&x, 0), count = rd_i64(&x, 1), reports = rd_i64(&x, 2);
    ev->state = store_state_of(PQgetvalue(res, 0, 3), (size_t)PQgetlength(res, 0, 3));
    ev->reopened = rd_i64(&x, 4);
    ev->regressed = rd_i64(&x, 5);
    rd_text_cut(&x, 6, ev->resolved_version, sizeof ev->resolved_version);
    char *missing = rd_dup(&x, 7);
    int64_t hour_count = rd_i64(&x, 8), base = rd_i64(&x, 9);
    bool spiked = rd_i64(&x, 10);
    ev->new_group = reports == 1;
    if (x.bad || id <= 0 || (!rd_null(&x, 7) && !missing)) {
        free(missing);
        return x.bad || id <= 0 ? bad_value(err, what)
                                : symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    *a->id = id;
    const store_hooks *h = c->db->hooks;
    const store_crash *cr = a->c;
    const char *kind = cr->kind ? cr->kind : "crash";
    symd_status r = SYMD_OK;
    if (store_hooks_on(h)) {
        if (ev->regressed)
            r = hook_emit_owned(c, h, "group.regressed",
                                store_hook_data_group_regressed(kind, cr->signature, id,
                                                                cr->app_version,
                                                                ev->resolved_version, count),
                                k->now, err);
        if (r == SYMD_OK && count == 1)
            r = hook_emit_owned(c, h, "group.new", store_hook_data_group_new(cr, id), k->now,
                                err);
        /* "3,17": the app images' places (from 1) told missing */
        for (char *q = missing; r == SYMD_OK && q && *q;) {
            char *end;
            long at = strtol(q, &end, 10);
            if (end == q || at < 1 || (size_t)at > k->napp) {
                r = bad_value(err, "recording the images told missing");
                break;
            }
            r = hook_emit_owned(c, h, "image.missing",
                                store_hook_data_image_missing(&k->imgs[k->which[at - 1]], cr, id),
                                k->now, err);
            q = *end == ',' ? end + 1 : end;
        }
        if (r == SYMD_OK && spiked)
            r = hook_emit_owned(c, h, "group.spike",
                                store_hook_data_group_spike(cr, id, k->now / 3600000, hour_count,
                                                            base, h->spike_factor),
                                k->now, err);
    }
    free(missing);
    return r;
}

/* Stores a crash and records the webhook events it causes: one statement
 * (symd_put_crash), then the events' rows when there are any. */
static symd_status put_crash_tx(pgc *c, void *arg, symd_err *err)
{
    put_crash_args *a = arg;
    memset(a->ev, 0, sizeof *a->ev); /* a transaction run again decides again */
    crash_call k;
    symd_status r;
    if (!crash_call_make(&k, a, c->db->hooks, store_now_ms())) {
        r = symd_fail(err, SYMD_E_NOMEM, "out of memory");
    } else {
        /* in a transaction of in_tx_as (webhooks on): BEGIN goes with it */
        PGresult *res = c->once ? run(c, PUT_CRASH_SQL, &k.p, "storing crash", err)
                                : run_begin(c, PUT_CRASH_SQL, &k.p, "storing crash", err);
        r = res ? crash_call_done(c, &k, a, res, err) : err->kind;
        PQclear(res);
    }
    crash_call_free(&k);
    return r;
}

/* ---- group commit (webhooks off) ----
 * The first post to find no batch under way stores every crash queued
 * meanwhile (up to CRASH_BATCH_MAX) in one statement, symd_put_crashes:
 * one round trip and one commit for them all, each counter row moved once
 * with the batch's sums. A batch that fails is stored again one crash at a
 * time, so one bad crash fails only its own post. */
#define CRASH_BATCH_MAX 64

/* One crash waiting to be stored. */
struct pg_crash_job {
    put_crash_args a;
    size_t at; /* its place in the queue (sorts jobs of one group) */
    symd_status r;
    symd_err err;
    bool done;
    struct pg_crash_job *next;
};

/* Jobs by kind, signature (as COLLATE "C" orders them), then arrival. */
static int job_cmp(const void *x, const void *y)
{
    const struct pg_crash_job *a = *(struct pg_crash_job *const *)x,
                              *b = *(struct pg_crash_job *const *)y;
    const char *ka = a->a.c->kind ? a->a.c->kind : "crash",
               *kb = b->a.c->kind ? b->a.c->kind : "crash";
    int d = strcmp(ka, kb);
    if (!d)
        d = strcmp(a->a.c->signature, b->a.c->signature);
    return d ? d : (a->at > b->at) - (a->at < b->at);
}

enum { BA_KIND, BA_BUG, BA_FORMAT, BA_PROCESS, BA_BUNDLE, BA_APPV, BA_OSV, BA_HW, BA_INCIDENT,
       BA_EXC, BA_SIG, BA_APP_UUID, BA_APP_ARCH, BA_APP_NAME, BA_CODEC, BA_LEN, BA_ORIG, BA_PART,
       BA_RULE, BA_VERSION, BA_VKEY, BA_FKEY, BA_IMG_CRASH, BA_IMG_UUID, BA_IMG_ARCH,
       BA_IMG_NAME, BA_IMG_SYSTEM, BA_IDEM, BA_CONTENT, BA_COUNT };

static const Oid batch_types[BA_COUNT] = {
    OID_TEXT_ARRAY, OID_INT4_ARRAY, OID_TEXT_ARRAY, OID_TEXT_ARRAY, OID_TEXT_ARRAY,
    OID_TEXT_ARRAY, OID_TEXT_ARRAY, OID_TEXT_ARRAY, OID_TEXT_ARRAY, OID_TEXT_ARRAY,
    OID_TEXT_ARRAY, OID_BYTEA_ARRAY, OID_TEXT_ARRAY, OID_TEXT_ARRAY, OID_INT4_ARRAY,
    OID_INT8_ARRAY, OID_BYTEA_ARRAY, OID_INT4_ARRAY, OID_TEXT_ARRAY, OID_TEXT_ARRAY,
    OID_TEXT_ARRAY, OID_TEXT_ARRAY, OID_INT4_ARRAY, OID_BYTEA_ARRAY, OID_TEXT_ARRAY,
    OID_TEXT_ARRAY, OID_BOOL_ARRAY, OID_TEXT_ARRAY, OID_TEXT_ARRAY};

static Oid elem_of(Oid array)
{
    switch (array) {
    case OID_INT4_ARRAY: return OID_INT4;
    case OID_INT8_ARRAY: return OID_INT8;
    case OID_BYTEA_ARRAY: return OID_BYTEA;
    case OID_BOOL_ARRAY: return OID_BOOL;
    default: return OID_TEXT;
    }
}

typedef struct {
    struct pg_crash_job **jobs; /* sorted (job_cmp) */
    size_t n;
} batch_args;

/* Appends job j (the batch's crash number k, from 1) to the arrays. */
static bool batch_add(bin_array *ar, const struct pg_crash_job *j, int32_t k)
{
    const put_crash_args *a = &j->a;
    const store_crash *cr = a->c;
    const store_crash_image *app = NULL;
    for (size_t i = 0; i < a->nimgs && !app; i++)
        if (a->imgs[i].app)
            app = &a->imgs[i];
    char key[APP_VERSION_KEY_MAX], fkey[APP_VERSION_KEY_MAX];
    bool versioned = app_version_key(cr->app_version, key) &&
                     app_version_first_key(cr->app_version, fkey);
    bool ok = arr_text(&ar[BA_KIND], cr->kind ? cr->kind : "crash") &&
              (cr->bug_type ? arr_int(&ar[BA_BUG], cr->bug_type, 4)
                            : arr_add(&ar[BA_BUG], NULL, 0)) &&
              arr_text(&ar[BA_FORMAT], cr->format) &&
              arr_text_or_null(&ar[BA_PROCESS], cr->process) &&
              arr_text_or_null(&ar[BA_BUNDLE], cr->bundle_id) &&
              arr_text_or_null(&ar[BA_APPV], cr->app_version) &&
              arr_text_or_null(&ar[BA_OSV], cr->os_version) &&
              arr_text_or_null(&ar[BA_HW], cr->hardware_model) &&
              arr_text_or_null(&ar[BA_INCIDENT], cr->incident_id) &&
              arr_text_or_null(&ar[BA_EXC], cr->exception_type) &&
              arr_text(&ar[BA_SIG], cr->signature) &&
              arr_add(&ar[BA_APP_UUID], app ? app->uuid : NULL, 16) &&
              arr_text(&ar[BA_APP_ARCH], app ? (app->arch ? app->arch : "") : NULL) &&
              arr_text(&ar[BA_APP_NAME], app ? (app->name ? app->name : "") : NULL) &&
              arr_int(&ar[BA_CODEC], a->codec, 4) &&
              arr_int(&ar[BA_LEN], (int64_t)a->raw_len, 8) &&
              arr_add(&ar[BA_ORIG], cr->original ? (const void *)cr->original : "",
                      (int32_t)cr->original_len) &&
              arr_int(&ar[BA_PART], cr->part, 4) &&
              arr_text_or_null(&ar[BA_RULE], cr->grouping_rule) &&
              arr_text(&ar[BA_VERSION], versioned ? cr->app_version : NULL) &&
              arr_text(&ar[BA_VKEY], versioned ? key : NULL) &&
              arr_text(&ar[BA_FKEY], versioned ? fkey : NULL) &&
              arr_text_or_null(&ar[BA_IDEM], cr->idem_key) &&
              arr_text_or_null(&ar[BA_CONTENT], cr->content_key);
    for (size_t i = 0; i < a->nimgs && ok; i++) {
        const store_crash_image *im = &a->imgs[i];
        uint8_t sys = im->system;
        ok = arr_int(&ar[BA_IMG_CRASH], k, 4) && arr_add(&ar[BA_IMG_UUID], im->uuid, 16) &&
             arr_text(&ar[BA_IMG_ARCH], im->arch ? im->arch : "") &&
             arr_text(&ar[BA_IMG_NAME], im->name ? im->name : "") &&
             arr_add(&ar[BA_IMG_SYSTEM], &sys, 1);
    }
    return ok;
}

/* Stores the batch in one statement; each job's id and event from its row. */
static symd_status put_batch_one(pgc *c, void *arg, symd_err *err)
{
    batch_args *b = arg;
    bin_array ar[BA_COUNT];
    bool ok = true;
    for (int i = 0; i < BA_COUNT; i++)
        ok = arr_init(&ar[i], elem_of(batch_types[i])) && ok;
    for (size_t k = 0; k < b->n && ok; k++)
        ok = batch_add(ar, b->jobs[k], (int32_t)(k + 1));
    symd_status r = SYMD_OK;
    if (!ok) {
        r = symd_fail(err, SYMD_E_NOMEM, "out of memory");
    } else {
        int64_t now = store_now_ms();
        params p = {0};
        p_i64(&p, now);
        p_i64(&p, store_day_of(now));
        for (int i = 0; i < BA_COUNT; i++)
            arr_param(&p, &ar[i], batch_types[i]);
        PGresult *res = run(c,
                            "SELECT * FROM symd_put_crashes($1, $2, $3, $4, $5, $6, $7, $8, $9, "
                            "$10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, "
                            "$23, $24, $25, $26, $27, $28, $29, $30, $31)",
                            &p, "storing crashes", err);
        if (!res) {
            r = err->kind;
        } else if (PQntuples(res) != (int)b->n || PQnfields(res) != 7) {
            r = bad_value(err, "storing crashes");
        } else {
            for (size_t k = 0; k < b->n; k++) {
                rd x = {res, (int)k, false};
                put_crash_args *a = &b->jobs[k]->a;
                store_group_event *ev = a->ev;
                memset(ev, 0, sizeof *ev);
                *a->id = rd_i64(&x, 0);
                if (rd_i64(&x, 6)) { /* a copy: nothing counted */
                    ev->duplicate = true;
                    if (x.bad || *a->id <= 0) {
                        r = symd_fail(err, SYMD_E_DB, "storing crashes: a copy of a crash gone");
                        break;
                    }
                    continue;
                }
                ev->new_group = rd_i64(&x, 1) == 1;
                ev->state = store_state_of(PQgetvalue(res, (int)k, 2),
                                           (size_t)PQgetlength(res, (int)k, 2));
                ev->reopened = rd_i64(&x, 3);
                ev->regressed = rd_i64(&x, 4);
                rd_text_cut(&x, 5, ev->resolved_version, sizeof ev->resolved_version);
                if (x.bad || *a->id <= 0) {
                    r = bad_value(err, "storing crashes");
                    break;
                }
            }
        }
        PQclear(res);
    }
    for (int i = 0; i < BA_COUNT; i++)
        dynbuf_free(&ar[i].b);
    return r;
}

/* Stores jobs (a queue's list): together, else each on its own. */
static void put_crash_batch(store_db *s, struct pg_crash_job *list)
{
    size_t n = 0;
    for (struct pg_crash_job *j = list; j; j = j->next)
        j->at = n++;
    struct pg_crash_job **jobs = n > 1 ? malloc(n * sizeof *jobs) : NULL;
    symd_status r = SYMD_E_NOMEM; /* one crash alone, or no memory: each on its own */
    symd_err e = {0};
    if (jobs) {
        size_t k = 0;
        for (struct pg_crash_job *j = list; j; j = j->next)
            jobs[k++] = j;
        qsort(jobs, n, sizeof *jobs, job_cmp);
        batch_args b = {jobs, n};
        r = in_one(s, put_batch_one, &b, &e);
    }
    free(jobs);
    for (struct pg_crash_job *j = list; j; j = j->next) {
        if (r == SYMD_E_UNAVAILABLE && recover_lost_post(s, &j->a, 0)) {
            j->r = SYMD_OK; /* the batch was committed: its key found it */
            continue;
        }
        if (r == SYMD_OK || r == SYMD_E_UNAVAILABLE) {
            /* the database gone: whether the batch was committed is not
             * known, each post answers so (storing it again could store it
             * twice; a client's retry is safe, its key finds the copy) */
            j->r = r;
            if (r != SYMD_OK) {
                j->err = e;
                memset(j->a.ev, 0, sizeof *j->a.ev);
            }
            continue;
        }
        *j->a.id = 0;
        j->r = in_one(s, put_crash_tx, &j->a, &j->err);
        if (j->r == SYMD_E_UNAVAILABLE && recover_lost_post(s, &j->a, *j->a.id))
            j->r = SYMD_OK;
        if (j->r != SYMD_OK)
            memset(j->a.ev, 0, sizeof *j->a.ev);
    }
}

/* With webhooks on, one crash, one transaction: the statement, then its
 * events' rows. Else by group commit (above): concurrent posts share one
 * statement and one commit; a post alone is one statement, its own
 * transaction (one round trip). */
static symd_status pg_put_crash(store_db *s, const store_crash *c, int codec, size_t raw_len,
                                const store_crash_image *imgs, size_t nimgs, int64_t *id,
                                store_group_event *ev, symd_err *err)
{
    put_crash_args a = {c, codec, raw_len, imgs, nimgs, id, ev};
    if (store_hooks_on(s->hooks)) {
        *id = 0;
        symd_status r = in_tx_as(s, put_crash_tx, &a, "storing crash", true, err);
        if (r == SYMD_E_UNAVAILABLE && recover_lost_post(s, &a, *id))
            return SYMD_OK;
        if (r != SYMD_OK)
            memset(ev, 0, sizeof *ev);
        return r;
    }
    struct pg_crash_job job = {a, 0, SYMD_OK, {0}, false, NULL};
    pthread_mutex_lock(&s->gc_mu);
    if (s->gc_tail)
        s->gc_tail->next = &job;
    else
        s->gc_head = &job;
    s->gc_tail = &job;
    while (!job.done) {
        if (s->gc_leading) {
            pthread_cond_wait(&s->gc_cv, &s->gc_mu);
            continue;
        }
        /* lead: take up to CRASH_BATCH_MAX queued crashes */
        s->gc_leading = true;
        struct pg_crash_job *batch = s->gc_head, *last = batch;
        for (int n = 1; n < CRASH_BATCH_MAX && last->next; n++)
            last = last->next;
        s->gc_head = last->next;
        if (!s->gc_head)
            s->gc_tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&s->gc_mu);
        put_crash_batch(s, batch);
        pthread_mutex_lock(&s->gc_mu);
        for (struct pg_crash_job *j = batch, *next; j; j = next) {
            next = j->next; /* j may return (and go) as soon as done is seen */
            j->done = true;
        }
        s->gc_leading = false;
        pthread_cond_broadcast(&s->gc_cv);
    }
    pthread_mutex_unlock(&s->gc_mu);
    if (job.r != SYMD_OK)
        *err = job.err;
    return job.r;
}

/* The counted fields of a crash, read and locked. */
typedef struct {
    crash_key k;
    char *own[6];
    int bug_type;
    char *refs;
    char *rule; /* the grouping rule that filed it, NULL: the default */
} crash_row;

static void crash_row_free(crash_row *w)
{
    for (int i = 0; i < 6; i++)
        free(w->own[i]);
    free(w->refs);
    free(w->rule);
    memset(w, 0, sizeof *w);
}

/* Reads crash id, locking it until the transaction ends (a second node
 * deleting or refiling it waits, then finds it gone or moved); *found
 * false when there is none. */
static symd_status read_crash_row(pgc *c, int64_t id, crash_row *w, bool *found, symd_err *err)
{
    memset(w, 0, sizeof *w);
    params p = {0};
    p_i64(&p, id);
    PGresult *res = run(c,
                        "SELECT kind, signature, created_at, app_version, os_version, "
                        "hardware_model, process, bug_type, refs, grouping_rule FROM crashes "
                        "WHERE id = $1 FOR UPDATE",
                        &p, "reading crash", err);
    if (!res)
        return err->kind;
    *found = PQntuples(res) == 1;
    if (!*found) {
        PQclear(res);
        return SYMD_OK;
    }
    rd x = {res, 0, false};
    for (int i = 0; i < 6; i++)
        w->own[i] = rd_dup(&x, i < 2 ? i : i + 1);
    w->k.kind = w->own[0];
    w->k.signature = w->own[1];
    w->k.created_at = rd_i64(&x, 2);
    w->k.dims[0] = w->own[2];
    w->k.dims[1] = w->own[3];
    w->k.dims[2] = w->own[4];
    w->k.process = w->own[5];
    w->k.id = id;
    w->bug_type = (int)rd_i64(&x, 7);
    w->refs = rd_dup(&x, 8);
    w->rule = rd_dup(&x, 9);
    PQclear(res);
    if (x.bad) {
        crash_row_free(w);
        return bad_value(err, "reading crash");
    }
    if (!w->k.kind || !w->k.signature || !w->refs) {
        crash_row_free(w);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    return SYMD_OK;
}

/* Deletes crash w (locked by read_crash_row) and counts it out of
 * everything, inside the caller's transaction. */
static symd_status delete_in_tx(pgc *c, const crash_row *w, symd_err *err)
{
    params p = {0};
    p_i64(&p, w->k.id);
    if (!exec0(c,
               "WITH o AS (DELETE FROM crash_originals WHERE id = $1) DELETE FROM crashes "
               "WHERE id = $1",
               &p, "deleting crash", err))
        return err->kind;
    symd_status r = count_crash(c, &w->k, -1, err);
    if (r != SYMD_OK)
        return r;
    /* the images it needed (an image no crash needs keeps its row, at 0) */
    for (const char *s = w->refs; *s;) {
        char *end;
        long long ref = strtoll(s, &end, 10);
        if (end == s) { /* a separator */
            s++;
            continue;
        }
        s = end;
        params q = {0};
        p_i64(&q, ref);
        p_i64(&q, w->k.id);
        if (!exec0(c,
                   "UPDATE crash_image_refs SET crashes = crashes - 1, last_crash_id = CASE "
                   "WHEN last_crash_id <> $2 OR crashes = 1 THEN last_crash_id ELSE coalesce(("
                   "SELECT c.id FROM crashes c WHERE c.id < $2 AND c.refs LIKE '%,' || "
                   "$1::text || ',%' ORDER BY c.id DESC LIMIT 1), 0) END WHERE id = $1",
                   &q, "counting out the images the crash needed", err))
            return err->kind;
    }
    return SYMD_OK;
}

typedef struct {
    int64_t id;
    bool *deleted;
} delete_args;

static symd_status delete_crash_tx(pgc *c, void *arg, symd_err *err)
{
    delete_args *a = arg;
    crash_row w;
    symd_status r = read_crash_row(c, a->id, &w, a->deleted, err);
    if (r == SYMD_OK && *a->deleted) {
        r = delete_in_tx(c, &w, err);
        crash_row_free(&w);
    }
    return r;
}

static symd_status pg_delete_crash(store_db *s, int64_t id, bool *deleted, symd_err *err)
{
    delete_args a = {id, deleted};
    symd_status r = in_tx(s, delete_crash_tx, &a, "deleting crash", err);
    if (r != SYMD_OK)
        *deleted = false;
    return r;
}

typedef struct {
    int64_t before_ms, max_crashes;
    size_t batch, *deleted;
} prune_args;

/* The rows a batch of retention counts its crashes out of, locked before
 * any is changed: table by table in the order a crash is counted in
 * (crashes, groups, the group's days, the kind's days, dimensions, needed
 * images), each table's rows in key order. A crash stored meanwhile locks
 * one row per table in that same order (its images sorted the same way), so
 * the two wait for each other but never deadlock, as they did when a batch
 * of 500 took its rows crash by crash. */
static const char *const batch_locks[] = {
    "SELECT 1 FROM crashes WHERE id = ANY($1::text::bigint[]) ORDER BY id FOR UPDATE",
    "SELECT 1 FROM crash_groups g WHERE (g.kind, g.signature) IN (SELECT kind, signature FROM "
    "crashes WHERE id = ANY($1::text::bigint[])) ORDER BY g.kind, g.signature FOR UPDATE",
    "SELECT 1 FROM crash_group_days d WHERE (d.kind, d.signature, d.day) IN (SELECT kind, "
    "signature, floor(created_at::numeric / 86400000)::bigint FROM crashes WHERE id = "
    "ANY($1::text::bigint[])) ORDER BY d.kind, d.signature, d.day FOR UPDATE",
    "SELECT 1 FROM crash_days d WHERE (d.kind, d.day) IN (SELECT kind, floor(created_at::numeric "
    "/ 86400000)::bigint FROM crashes WHERE id = ANY($1::text::bigint[])) ORDER BY d.kind, "
    "d.day FOR UPDATE",
    "SELECT 1 FROM crash_group_dims d WHERE (d.kind, d.signature, d.dim, d.value) IN (SELECT "
    "kind, signature, 0, app_version FROM crashes WHERE id = ANY($1::text::bigint[]) UNION ALL "
    "SELECT kind, signature, 1, os_version FROM crashes WHERE id = ANY($1::text::bigint[]) "
    "UNION ALL SELECT kind, signature, 2, hardware_model FROM crashes WHERE id = "
    "ANY($1::text::bigint[])) ORDER BY d.kind, d.signature, d.dim, d.value FOR UPDATE",
    "SELECT 1 FROM crash_image_refs r WHERE r.id IN (SELECT unnest(string_to_array(trim(both "
    "',' from refs), ','))::bigint FROM crashes WHERE id = ANY($1::text::bigint[])) ORDER BY "
    "r.uuid, r.arch FOR UPDATE",
};

static symd_status lock_batch(pgc *c, const int64_t *ids, size_t n, symd_err *err)
{
    dynbuf list;
    dynbuf_init(&list, n * 21 + 3);
    bool ok = dynbuf_add(&list, "{", 1);
    for (size_t i = 0; i < n && ok; i++) {
        char num[24];
        int len = snprintf(num, sizeof num, "%s%lld", i ? "," : "", (long long)ids[i]);
        ok = dynbuf_add(&list, num, (size_t)len);
    }
    ok = ok && dynbuf_add(&list, "}", 2); /* with its NUL */
    if (!ok) {
        dynbuf_free(&list);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    params p = {0};
    p_text(&p, (const char *)list.data);
    for (size_t i = 0; i < sizeof batch_locks / sizeof batch_locks[0] && ok; i++)
        ok = exec0(c, batch_locks[i], &p, "locking what retention counts out", err);
    dynbuf_free(&list);
    return ok ? SYMD_OK : err->kind;
}

/* One batch of retention, by the node holding the retention lock; another
 * node prunes nothing meanwhile (*deleted 0: its pass ends, and it tries
 * again at its next). */
static symd_status prune_tx(pgc *c, void *arg, symd_err *err)
{
    prune_args *a = arg;
    *a->deleted = 0;
    params lp = {0};
    p_i64(&lp, LOCK_PRUNE);
    PGresult *res = run(c, "SELECT pg_try_advisory_xact_lock($1)", &lp, "taking the retention "
                                                                        "lock", err);
    if (!res)
        return err->kind;
    rd x = {res, 0, false};
    bool mine = PQntuples(res) == 1 && rd_i64(&x, 0);
    PQclear(res);
    if (x.bad)
        return bad_value(err, "taking the retention lock");
    if (!mine)
        return SYMD_OK;
    /* How many go: those past the count limit (the sum of the day
     * counters: no scan), and those older than the age limit, oldest
     * first. */
    int64_t excess = 0;
    if (a->max_crashes > 0) {
        if (!(res = run(c, "SELECT coalesce(sum(count), 0)::bigint FROM crash_days", NULL,
                        "counting crashes", err)))
            return err->kind;
        rd y = {res, 0, false};
        excess = rd_i64(&y, 0) - a->max_crashes;
        PQclear(res);
        if (y.bad)
            return bad_value(err, "counting crashes");
    }
    params p = {0};
    p_i64(&p, (int64_t)a->batch);
    if (!(res = run(c, "SELECT id, created_at FROM crashes ORDER BY id LIMIT $1", &p,
                    "finding the oldest crashes", err)))
        return err->kind;
    int rows = PQntuples(res);
    int64_t *ids = malloc((size_t)(rows ? rows : 1) * sizeof *ids);
    size_t n = 0;
    bool bad = false;
    for (int i = 0; ids && i < rows && n < a->batch; i++) {
        rd y = {res, i, false};
        bool old = a->before_ms > 0 && rd_i64(&y, 1) < a->before_ms;
        if (!old && (int64_t)n >= excess)
            break;
        ids[n++] = rd_i64(&y, 0);
        bad |= y.bad;
    }
    PQclear(res);
    if (!ids)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    symd_status r = bad ? bad_value(err, "finding the oldest crashes") : SYMD_OK;
    if (r == SYMD_OK && n)
        r = lock_batch(c, ids, n, err);
    for (size_t i = 0; i < n && r == SYMD_OK; i++) {
        crash_row w;
        bool found;
        if ((r = read_crash_row(c, ids[i], &w, &found, err)) == SYMD_OK && found) {
            r = delete_in_tx(c, &w, err);
            crash_row_free(&w);
        }
    }
    free(ids);
    if (r == SYMD_OK)
        *a->deleted = n;
    return r;
}

static symd_status pg_prune_crashes(store_db *s, int64_t before_ms, int64_t max_crashes,
                                    size_t batch, size_t *deleted, symd_err *err)
{
    /* A transaction holds its groups' rows until it commits, and crashes
     * stored into them meanwhile wait: the batch goes in transactions of
     * PRUNE_BATCH_MAX crashes at most, to keep that wait short. */
    *deleted = 0;
    while (*deleted < batch) {
        size_t want = batch - *deleted, got = 0;
        if (want > PRUNE_BATCH_MAX)
            want = PRUNE_BATCH_MAX;
        prune_args a = {before_ms, max_crashes, want, &got};
        symd_status r = in_tx(s, prune_tx, &a, "pruning crashes", err);
        if (r != SYMD_OK)
            return r; /* what committed before stays counted */
        *deleted += got;
        if (got < want)
            break;
    }
    return SYMD_OK;
}

typedef struct {
    int64_t id;
    const char *signature, *kind;
    int bug_type;
    const char *rule;
} update_args;

static symd_status update_crash_tx(pgc *c, void *arg, symd_err *err)
{
    update_args *a = arg;
    crash_row w;
    bool found;
    symd_status r = read_crash_row(c, a->id, &w, &found, err);
    if (r != SYMD_OK || !found)
        return r;
    bool moves = strcmp(w.k.kind, a->kind) != 0 || strcmp(w.k.signature, a->signature) != 0;
    bool same_rule = (!w.rule && !a->rule) || (w.rule && a->rule && strcmp(w.rule, a->rule) == 0);
    if (moves || w.bug_type != a->bug_type || !same_rule) {
        params p = {0};
        p_i64(&p, a->id);
        p_text(&p, a->signature);
        p_text(&p, a->kind);
        if (a->bug_type)
            p_i32(&p, a->bug_type);
        else
            p_add(&p, OID_INT4, NULL, 0, 0);
        p_text_or_null(&p, a->rule);
        if (!exec0(c,
                   "UPDATE crashes SET signature = $2, kind = $3, bug_type = $4, "
                   "grouping_rule = $5 WHERE id = $1",
                   &p, "refiling crash", err))
            r = err->kind;
        if (r == SYMD_OK && moves) {
            crash_key to = w.k;
            to.kind = a->kind;
            to.signature = a->signature;
            if ((r = count_crash(c, &w.k, -1, err)) == SYMD_OK &&
                (r = count_crash(c, &to, +1, err)) == SYMD_OK)
                r = group_state_on_report(c, &to, store_now_ms(), NULL, err);
        }
    }
    crash_row_free(&w);
    return r;
}

static symd_status pg_update_crash(store_db *s, int64_t id, const char *signature,
                                   const char *kind, int bug_type, const char *rule,
                                   symd_err *err)
{
    update_args a = {id, signature, kind, bug_type, rule};
    return in_tx(s, update_crash_tx, &a, "refiling crash", err);
}

#define CRASH_COLS                                                                          \
    "c.id, c.created_at, c.format, c.kind, c.process, c.bundle_id, c.app_version, "        \
    "c.os_version, c.hardware_model, c.incident_id, c.exception_type, c.signature, "       \
    "c.bug_type, c.app_uuid, c.app_arch, c.app_name, c.app_uuid IS NOT NULL AND EXISTS "    \
    "(SELECT 1 FROM images i WHERE i.uuid = c.app_uuid AND (c.app_arch = '' OR i.arch = " \
    "c.app_arch)), c.grouping_rule"
#define CRASH_NCOLS 18

/* Fills c from a CRASH_COLS row (original left NULL); false on a bad value. */
static bool row_to_crash(PGresult *res, int row, store_crash *c)
{
    rd x = {res, row, false};
    memset(c, 0, sizeof *c);
    c->id = rd_i64(&x, 0);
    c->created_at = rd_i64(&x, 1);
    char **dst[] = {&c->format, &c->kind, &c->process, &c->bundle_id, &c->app_version,
                    &c->os_version, &c->hardware_model, &c->incident_id, &c->exception_type,
                    &c->signature};
    for (int i = 0; i < 10; i++)
        *dst[i] = rd_dup(&x, 2 + i);
    c->bug_type = (int)rd_i64(&x, 12);
    size_t ulen = 0;
    const uint8_t *u = rd_null(&x, 13) ? NULL : rd_bytes(&x, 13, &ulen);
    if (u && ulen == 16) {
        c->has_app = true;
        memcpy(c->app_uuid, u, 16);
        rd_text(&x, 14, c->app_arch, sizeof c->app_arch);
        rd_text(&x, 15, c->app_name, sizeof c->app_name);
        c->app_stored = rd_i64(&x, 16) != 0;
    }
    c->grouping_rule = rd_dup(&x, 17);
    return !x.bad;
}

static symd_status pg_get_crash(store_db *s, int64_t id, bool with_bytes, store_crash *c,
                                int *codec, size_t *raw_len, symd_err *err)
{
    memset(c, 0, sizeof *c);
    pgc pc;
    if (conn_get(s, &pc, err) != SYMD_OK)
        return err->kind;
    params p = {0};
    p_i64(&p, id);
    p_bool(&p, with_bytes);
    PGresult *res = run(&pc,
                        "SELECT " CRASH_COLS ", o.codec, o.original_len, CASE WHEN $2 THEN "
                        "o.original END, c.part FROM crashes c JOIN crash_originals o ON "
                        "o.id = c.id WHERE c.id = $1",
                        &p, "loading crash", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res && PQntuples(res) == 0)
        r = symd_fail(err, SYMD_E_NOT_FOUND, "no crash %lld", (long long)id);
    if (r == SYMD_OK) {
        rd x = {res, 0, false};
        bool ok = row_to_crash(res, 0, c);
        *codec = (int)rd_i64(&x, CRASH_NCOLS);
        c->part = (int)rd_i64(&x, CRASH_NCOLS + 3);
        int64_t len = rd_i64(&x, CRASH_NCOLS + 1);
        *raw_len = len > 0 ? (size_t)len : 0;
        if (!ok || x.bad || len < 0)
            r = bad_value(err, "loading crash");
        if (r == SYMD_OK && with_bytes) {
            size_t n;
            const uint8_t *b = rd_bytes(&x, CRASH_NCOLS + 2, &n);
            if (!(c->original = malloc(n ? n : 1)))
                r = symd_fail(err, SYMD_E_NOMEM, "out of memory");
            else {
                memcpy(c->original, b, n);
                c->original_len = n;
            }
        }
    }
    PQclear(res);
    conn_put(&pc);
    if (r != SYMD_OK)
        store_crash_free(c);
    return r;
}

/* The filters of f in SQL on crashes c ($2 .. $7 and $9, always passed;
 * $8 is the callers' limit). */
static bool filter_sql(dynbuf *q, const store_crash_filter *f)
{
    static const char *const conds[] = {
        " AND strpos(lower(coalesce(c.process, '') || ' ' || coalesce(c.bundle_id, '') || ' ' "
        "|| c.signature || ' ' || coalesce(c.exception_type, '') || ' ' || "
        "coalesce(c.app_version, '') || ' ' || coalesce(c.incident_id, '')), lower($2 COLLATE "
        "\"C\")) > 0",
        " AND c.kind = $3", " AND c.signature = $4", " AND c.app_version = $5",
        " AND c.os_version = $6", " AND c.hardware_model = $7", " AND c.format = $9"};
    const char *v[] = {f->query, f->kind, f->signature, f->app_version, f->os_version,
                       f->hardware_model, f->format};
    bool ok = true;
    for (int i = 0; i < 7; i++)
        if (v[i] && *v[i])
            ok = ok && dynbuf_add(q, conds[i], strlen(conds[i]));
    return ok;
}

/* $1 (a number), the filter's six values ($2 .. $7), limit ($8), the
 * format ($9). */
static void bind_filter(params *p, int64_t first, const store_crash_filter *f, int64_t limit)
{
    p_i64(p, first);
    const char *v[] = {f->query, f->kind, f->signature, f->app_version, f->os_version,
                       f->hardware_model};
    for (int i = 0; i < 6; i++)
        p_text(p, v[i] && *v[i] ? v[i] : "");
    p_i64(p, limit);
    p_text(p, f->format && *f->format ? f->format : "");
}

static symd_status pg_list_crashes(store_db *s, const store_crash_filter *f, int64_t before_id,
                                   size_t limit, store_crash *out, size_t *n, bool *more,
                                   symd_err *err)
{
    *n = 0;
    *more = false;
    dynbuf q;
    dynbuf_init(&q, 4096);
    static const char head[] = "SELECT " CRASH_COLS " FROM crashes c WHERE ($1 = 0 OR c.id < $1)";
    static const char tail[] = " ORDER BY c.id DESC LIMIT $8";
    bool ok = dynbuf_add(&q, head, sizeof head - 1) && filter_sql(&q, f) &&
              dynbuf_add(&q, tail, sizeof tail);
    if (!ok) {
        dynbuf_free(&q);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    params p = {0};
    bind_filter(&p, before_id, f, (int64_t)limit + 1);
    pgc c;
    symd_status r = conn_get(s, &c, err);
    if (r != SYMD_OK) {
        dynbuf_free(&q);
        return r;
    }
    PGresult *res = run(&c, (const char *)q.data, &p, "listing crashes", err);
    r = res ? SYMD_OK : err->kind;
    for (int i = 0; res && i < PQntuples(res) && r == SYMD_OK; i++) {
        if (*n == limit) {
            *more = true;
            break;
        }
        if (!row_to_crash(res, i, &out[(*n)++]))
            r = bad_value(err, "listing crashes");
    }
    PQclear(res);
    conn_put(&c);
    dynbuf_free(&q);
    if (r != SYMD_OK) {
        for (size_t i = 0; i < *n; i++)
            store_crash_free(&out[i]);
        *n = 0;
    }
    return r;
}

static symd_status pg_crash_groups(store_db *s, const store_crash_filter *f, size_t limit,
                                   store_crash_group *out, size_t *n, symd_err *err)
{
    *n = 0;
    int dim, ndims = store_filter_dims(f, &dim);
    if (f->format && *f->format)
        ndims = 2; /* no counters per format: the crashes themselves */
    bool query = f->query && *f->query, kind = f->kind && *f->kind,
         sig = f->signature && *f->signature;
    static const char qg[] = "AND strpos(lower(g.signature || ' ' || coalesce(g.process, '')), "
                             "lower($2 COLLATE \"C\")) > 0";
    /* the workflow's filters, on crash_group_states s */
    char wf[256], new_lo[APP_VERSION_KEY_MAX] = "", new_hi[APP_VERSION_KEY_MAX] = "";
    bool new_in = f->new_in && app_version_first_range(f->new_in, new_lo, new_hi);
    store_states_sql(f->states, wf, sizeof wf);
    if (new_in)
        snprintf(wf + strlen(wf), sizeof wf - strlen(wf),
                 " AND s.first_key >= $10 AND s.first_key < $11");
    char buf[3072];
    if (ndims == 0) { /* the group counters */
        snprintf(buf, sizeof buf,
                 "SELECT g.kind, g.signature, g.count, g.first_seen, g.last_seen, g.example_id, "
                 "g.app_version, g.process, " STORE_STATUS_COLS " FROM crash_groups g LEFT JOIN "
                 "crash_group_states s ON s.kind = g.kind AND s.signature = g.signature WHERE "
                 "$1 = 0 %s %s %s %s ORDER BY g.count DESC, g.last_seen DESC LIMIT $8",
                 kind ? "AND g.kind = $3" : "", sig ? "AND g.signature = $4" : "",
                 query ? qg : "", wf);
    } else if (ndims == 1) { /* one dimension's counters */
        snprintf(buf, sizeof buf,
                 "SELECT d.kind, d.signature, d.count, d.first_seen, d.last_seen, d.example_id, "
                 "x.app_version, x.process, " STORE_STATUS_COLS " FROM crash_group_dims d JOIN "
                 "crash_groups g ON g.kind = d.kind AND g.signature = d.signature LEFT JOIN "
                 "crash_group_states s ON s.kind = d.kind AND s.signature = d.signature LEFT "
                 "JOIN crashes x ON x.id = d.example_id WHERE $1 = 0 AND d.dim = %d AND d.value "
                 "= $%d AND d.count > 0 %s %s %s %s ORDER BY d.count DESC, d.last_seen DESC "
                 "LIMIT $8",
                 dim, 5 + dim, kind ? "AND d.kind = $3" : "", sig ? "AND d.signature = $4" : "",
                 query ? qg : "", wf);
    } else { /* several: the matching crashes themselves */
        dynbuf q;
        dynbuf_init(&q, sizeof buf - 1);
        static const char head[] =
            "SELECT g.k, g.sg, g.n, g.f, g.l, g.e, (SELECT x.app_version FROM crashes x WHERE "
            "x.id = g.e), (SELECT x.process FROM crashes x WHERE x.id = g.e), " STORE_STATUS_COLS
            " FROM (SELECT c.kind k, c.signature sg, count(*) n, min(c.created_at) f, "
            "max(c.created_at) l, max(c.id) e FROM crashes c WHERE $1 = 0";
        static const char tail[] =
            " GROUP BY c.kind, c.signature) g LEFT JOIN crash_group_states s ON s.kind = g.k "
            "AND s.signature = g.sg WHERE true";
        static const char order[] = " ORDER BY g.n DESC, g.l DESC LIMIT $8";
        static const char qc[] = " AND strpos(lower(c.signature || ' ' || coalesce(c.process, "
                                 "'')), lower($2 COLLATE \"C\")) > 0";
        store_crash_filter g = *f;
        g.query = NULL; /* a group's query matches signature or process */
        bool ok = dynbuf_add(&q, head, sizeof head - 1) && filter_sql(&q, &g) &&
                  (!query || dynbuf_add(&q, qc, sizeof qc - 1)) &&
                  dynbuf_add(&q, tail, sizeof tail - 1) && dynbuf_add(&q, wf, strlen(wf)) &&
                  dynbuf_add(&q, order, sizeof order) && q.len <= sizeof buf;
        if (!ok) {
            dynbuf_free(&q);
            return symd_fail(err, SYMD_E_NOMEM, "out of memory");
        }
        memcpy(buf, q.data, q.len);
        dynbuf_free(&q);
    }
    params p = {0};
    bind_filter(&p, 0, f, (int64_t)limit);
    p_text(&p, new_lo); /* $10, $11 */
    p_text(&p, new_hi);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c, buf, &p, "grouping crashes", err);
    symd_status r = res ? SYMD_OK : err->kind;
    for (int i = 0; res && i < PQntuples(res) && *n < limit; i++) {
        rd x = {res, i, false};
        store_crash_group *g = &out[(*n)++];
        memset(g, 0, sizeof *g);
        g->kind = rd_dup(&x, 0);
        g->signature = rd_dup(&x, 1);
        g->count = rd_i64(&x, 2);
        g->first_seen = rd_i64(&x, 3);
        g->last_seen = rd_i64(&x, 4);
        g->example_id = rd_i64(&x, 5);
        g->app_version = rd_dup(&x, 6);
        g->process = rd_dup(&x, 7);
        rd_status(&x, 8, &g->status);
        if (x.bad && r == SYMD_OK)
            r = bad_value(err, "grouping crashes");
    }
    PQclear(res);
    conn_put(&c);
    if (r != SYMD_OK) {
        for (size_t i = 0; i < *n; i++)
            store_crash_group_free(&out[i]);
        *n = 0;
    }
    return r;
}

/* res's rows of (day, count) into days[day - from_day] (days outside
 * [from_day, from_day + ndays) skipped); false on a value of the wrong
 * type. */
static bool read_trend_days(PGresult *res, int64_t from_day, size_t ndays, int64_t *days)
{
    for (int i = 0; i < PQntuples(res); i++) {
        rd x = {res, i, false};
        int64_t d = rd_i64(&x, 0) - from_day, v = rd_i64(&x, 1);
        if (x.bad)
            return false;
        if (d >= 0 && (size_t)d < ndays)
            days[d] = v;
    }
    return true;
}

static symd_status pg_crash_trend(store_db *s, const char *kind, const char *signature,
                                  int64_t from_day, size_t ndays, int64_t *days, symd_err *err)
{
    memset(days, 0, ndays * sizeof *days);
    const char *sql =
        signature ? "SELECT day, count FROM crash_group_days WHERE kind = $1 AND signature = $2 "
                    "AND day >= $3 AND day < $4"
        : kind    ? "SELECT day, count FROM crash_days WHERE kind = $1 AND day >= $3 AND day < $4"
                  : "SELECT day, sum(count)::bigint FROM crash_days WHERE day >= $3 AND day < $4 "
                    "GROUP BY day";
    params p = {0};
    p_text(&p, kind ? kind : "");
    p_text(&p, signature ? signature : "");
    p_i64(&p, from_day);
    p_i64(&p, from_day + (int64_t)ndays);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c, sql, &p, "reading the trend", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res && !read_trend_days(res, from_day, ndays, days))
        r = bad_value(err, "reading the trend");
    PQclear(res);
    conn_put(&c);
    return r;
}

/* As the SQLite store's crash_trend_filtered. */
static symd_status pg_crash_trend_filtered(store_db *s, const store_crash_filter *f,
                                           int64_t from_day, size_t ndays, int64_t *days,
                                           symd_err *err)
{
    memset(days, 0, ndays * sizeof *days);
    int dim, ndims = store_filter_dims(f, &dim);
    if (f->format && *f->format)
        ndims = 2;
    bool kind = f->kind && *f->kind, sig = f->signature && *f->signature;
    char wf[256], new_lo[APP_VERSION_KEY_MAX] = "", new_hi[APP_VERSION_KEY_MAX] = "";
    bool new_in = f->new_in && app_version_first_range(f->new_in, new_lo, new_hi);
    store_states_sql(f->states, wf, sizeof wf);
    if (new_in)
        snprintf(wf + strlen(wf), sizeof wf - strlen(wf),
                 " AND s.first_key >= $10 AND s.first_key < $11");
    dynbuf q;
    dynbuf_init(&q, 4096);
    char head[1024];
    bool ok;
    if (ndims <= 1) { /* a group's (or a value's) day counters */
        snprintf(head, sizeof head,
                 "SELECT d.day, sum(d.count)::bigint FROM %s d LEFT JOIN crash_group_states s ON "
                 "s.kind = d.kind AND s.signature = d.signature WHERE $1 = 0 AND d.day >= $12 "
                 "AND d.day < $13%s%s",
                 ndims ? "crash_dim_days" : "crash_group_days", kind ? " AND d.kind = $3" : "",
                 sig ? " AND d.signature = $4" : "");
        ok = dynbuf_add(&q, head, strlen(head));
        if (ndims) {
            snprintf(head, sizeof head, " AND d.dim = %d AND d.value = $%d", dim, 5 + dim);
            ok = ok && dynbuf_add(&q, head, strlen(head));
        }
        ok = ok && dynbuf_add(&q, wf, strlen(wf)) && dynbuf_add(&q, " GROUP BY d.day", 16);
    } else { /* the matching crashes of those days */
        snprintf(head, sizeof head,
                 "SELECT c.created_at / 86400000, count(*) FROM crashes c LEFT JOIN "
                 "crash_group_states s ON s.kind = c.kind AND s.signature = c.signature WHERE "
                 "$1 = 0 AND c.created_at >= $12 * 86400000 AND c.created_at < $13 * 86400000");
        ok = dynbuf_add(&q, head, strlen(head)) && filter_sql(&q, f) &&
             dynbuf_add(&q, wf, strlen(wf)) && dynbuf_add(&q, " GROUP BY 1", 12);
    }
    if (!ok) {
        dynbuf_free(&q);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    params p = {0};
    bind_filter(&p, 0, f, 0);
    p_text(&p, new_lo); /* $10, $11 */
    p_text(&p, new_hi);
    p_i64(&p, from_day);
    p_i64(&p, from_day + (int64_t)ndays);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK) {
        dynbuf_free(&q);
        return err->kind;
    }
    PGresult *res = run(&c, (const char *)q.data, &p, "reading the trend", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res && !read_trend_days(res, from_day, ndays, days))
        r = bad_value(err, "reading the trend");
    PQclear(res);
    conn_put(&c);
    dynbuf_free(&q);
    return r;
}

/* As the SQLite store's dim_values. */
static symd_status pg_dim_values(store_db *s, const char *kind, const char *signature,
                                 store_dim dim, const store_dim_after *after, size_t limit,
                                 store_dim_count *out, size_t *n, bool *more, symd_err *err)
{
    *n = 0;
    *more = false;
    params p = {0};
    p_text(&p, kind);
    p_text(&p, signature);
    p_i32(&p, (int)dim);
    p_i64(&p, (int64_t)limit + 1);
    if (after)
        p_i64(&p, after->count);
    else
        p_add(&p, OID_INT8, NULL, 0, 0);
    p_text(&p, after ? after->value : NULL);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c,
                        "SELECT value, c::bigint FROM (SELECT value, sum(count) c FROM "
                        "crash_group_dims WHERE dim = $3 AND count > 0 AND ($1::text IS NULL OR "
                        "kind = $1) AND ($2::text IS NULL OR signature = $2) GROUP BY value) v "
                        "WHERE $5::bigint IS NULL OR c < $5 OR (c = $5 AND value > $6) ORDER BY c "
                        "DESC, value LIMIT $4",
                        &p, "reading a dimension's values", err);
    symd_status r = res ? SYMD_OK : err->kind;
    for (int i = 0; res && i < PQntuples(res) && r == SYMD_OK; i++) {
        if (*n == limit) {
            *more = true;
            break;
        }
        rd x = {res, i, false};
        out[*n].value = rd_dup(&x, 0);
        out[*n].count = rd_i64(&x, 1);
        (*n)++;
        if (x.bad)
            r = bad_value(err, "reading a dimension's values");
    }
    PQclear(res);
    conn_put(&c);
    if (r != SYMD_OK) {
        for (size_t i = 0; i < *n; i++)
            free(out[i].value);
        *n = 0;
    }
    return r;
}

/* A text column into dst, cut as store_text_cut does (NULL: ""). */
static void rd_text_cut(const rd *x, int col, char *dst, size_t cap)
{
    store_text_cut(dst, cap, rd_null(x, col) ? NULL : PQgetvalue(x->r, x->row, col),
                   (size_t)PQgetlength(x->r, x->row, col));
}

typedef struct {
    const char *kind, *signature;
    const store_state_change *ch;
    const char *version_key;
    store_group_status *out;
    bool *found;
} set_state_args;

/* A user's state change: the group's row locked (FOR UPDATE) before it is
 * read and changed, so a report filed at once on another node sees the
 * state before or after, never half of it. */
static symd_status set_state_tx(pgc *c, void *arg, symd_err *err)
{
    set_state_args *a = arg;
    const store_state_change *ch = a->ch;
    const char *in = ch->state == STORE_STATE_RESOLVED && ch->resolved_in ? ch->resolved_in : "";
    bool ignored = ch->state == STORE_STATE_IGNORED;
    *a->found = false;
    params p = {0};
    p_text(&p, a->kind);
    p_text(&p, a->signature);
    PGresult *res = run(c, "SELECT 1 FROM crash_groups WHERE kind = $1 AND signature = $2", &p,
                        "setting a group's state", err);
    if (!res)
        return err->kind;
    *a->found = PQntuples(res) == 1;
    PQclear(res);
    if (!*a->found)
        return SYMD_OK;
    if (!exec0(c, "INSERT INTO crash_group_states(kind, signature) VALUES ($1, $2) ON CONFLICT "
                  "DO NOTHING",
               &p, "setting a group's state", err) ||
        !(res = run(c, "SELECT state FROM crash_group_states WHERE kind = $1 AND signature = $2 "
                       "FOR UPDATE",
                    &p, "setting a group's state", err)))
        return err->kind;
    store_state from = PQntuples(res) == 1 ? store_state_of(PQgetvalue(res, 0, 0),
                                                            (size_t)PQgetlength(res, 0, 0))
                                           : STORE_STATE_UNRESOLVED;
    PQclear(res);
    int64_t now = store_now_ms();
    bool at_version = strcmp(in, "version") == 0;
    p_text(&p, store_state_name(ch->state));
    p_text(&p, in);
    p_text(&p, at_version ? ch->version : NULL);
    p_text(&p, at_version ? a->version_key : NULL);
    p_i64(&p, ignored ? ch->ignore_until : 0);
    p_i64(&p, ignored ? ch->ignore_reports : 0);
    p_i64(&p, now);
    /* "next": above the newest version the group was reported in so far */
    if (!(res = run(c,
                    "UPDATE crash_group_states SET state = $3, resolved_in = $4, "
                    "resolved_version = CASE $4 WHEN 'next' THEN last_version WHEN 'version' "
                    "THEN $5 END, resolved_key = CASE $4 WHEN 'next' THEN last_key WHEN "
                    "'version' THEN $6 END, ignore_until = $7, ignore_reports = $8, ignore_seen "
                    "= 0, changed_at = $9 WHERE kind = $1 AND signature = $2 RETURNING "
                    "coalesce(resolved_version, '')",
                    &p, "setting a group's state", err)))
        return err->kind;
    char version[128] = "";
    rd x = {res, 0, false};
    if (PQntuples(res) == 1)
        rd_text_cut(&x, 0, version, sizeof version);
    PQclear(res);
    store_history_row h = {a->kind, a->signature, now, from, ch->state, ch->by ? ch->by : "",
                           "api", 0, in, *in ? version : NULL, ignored ? ch->ignore_until : 0,
                           ignored ? ch->ignore_reports : 0, ch->note};
    if (history_add(c, &h, err) != SYMD_OK)
        return err->kind;
    params q = {0};
    p_text(&q, a->kind);
    p_text(&q, a->signature);
    if (!(res = run(c, "SELECT " STORE_STATUS_COLS " FROM crash_group_states s WHERE s.kind = $1 "
                       "AND s.signature = $2",
                    &q, "setting a group's state", err)))
        return err->kind;
    x = (rd){res, 0, false};
    if (PQntuples(res) == 1)
        rd_status(&x, 0, a->out);
    PQclear(res);
    return x.bad ? bad_value(err, "setting a group's state") : SYMD_OK;
}

static symd_status pg_set_group_state(store_db *s, const char *kind, const char *signature,
                                      const store_state_change *ch, const char *version_key,
                                      store_group_status *out, bool *found, symd_err *err)
{
    set_state_args a = {kind, signature, ch, version_key, out, found};
    symd_status r = in_tx(s, set_state_tx, &a, "setting a group's state", err);
    if (r != SYMD_OK)
        *found = false;
    return r;
}

static symd_status pg_group_history(store_db *s, const char *kind, const char *signature,
                                    int64_t before_id, size_t limit, store_group_change *out,
                                    size_t *n, bool *more, symd_err *err)
{
    *n = 0;
    *more = false;
    params p = {0};
    p_text(&p, kind);
    p_text(&p, signature);
    p_i64(&p, before_id);
    p_i64(&p, (int64_t)limit + 1);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c,
                        "SELECT " STORE_HISTORY_COLS " FROM crash_group_history h WHERE h.kind = "
                        "$1 AND h.signature = $2 AND ($3 = 0 OR h.id < $3) ORDER BY h.id DESC "
                        "LIMIT $4",
                        &p, "reading a group's history", err);
    symd_status r = res ? SYMD_OK : err->kind;
    for (int i = 0; res && i < PQntuples(res); i++) {
        if (*n == limit) {
            *more = true;
            break;
        }
        rd x = {res, i, false};
        store_group_change *o = &out[(*n)++];
        memset(o, 0, sizeof *o);
        o->id = rd_i64(&x, 0);
        o->at = rd_i64(&x, 1);
        o->from = store_state_of(PQgetvalue(res, i, 2), (size_t)PQgetlength(res, i, 2));
        o->to = store_state_of(PQgetvalue(res, i, 3), (size_t)PQgetlength(res, i, 3));
        rd_text_cut(&x, 4, o->by, sizeof o->by);
        rd_text_cut(&x, 5, o->reason, sizeof o->reason);
        o->crash_id = rd_i64(&x, 6);
        rd_text_cut(&x, 7, o->resolved_in, sizeof o->resolved_in);
        rd_text_cut(&x, 8, o->version, sizeof o->version);
        o->ignore_until = rd_i64(&x, 9);
        o->ignore_reports = rd_i64(&x, 10);
        rd_text_cut(&x, 11, o->note, sizeof o->note);
        if (x.bad && r == SYMD_OK)
            r = bad_value(err, "reading a group's history");
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

typedef struct {
    int64_t now;
    size_t *ended;
} end_ignores_args;

/* Every passed ignore ends in one statement, recorded at its date; a node
 * ending them at once waits on the rows' locks and then finds them
 * unresolved (READ COMMITTED checks its WHERE again): each ends once. */
static symd_status end_ignores_tx(pgc *c, void *arg, symd_err *err)
{
    end_ignores_args *a = arg;
    params p = {0};
    p_i64(&p, a->now);
    PGresult *res = run(c,
                        "WITH x AS (UPDATE crash_group_states SET state = 'unresolved', "
                        "changed_at = ignore_until WHERE state = 'ignored' AND ignore_until > 0 "
                        "AND ignore_until <= $1 RETURNING kind, signature, ignore_until, "
                        "ignore_reports) INSERT INTO crash_group_history(kind, signature, at, "
                        "from_state, to_state, by_role, reason, resolved_in, ignore_until, "
                        "ignore_reports) SELECT kind, signature, ignore_until, 'ignored', "
                        "'unresolved', 'system', 'ignore_until_passed', '', ignore_until, "
                        "ignore_reports FROM x",
                        &p, "ending ignores", err);
    if (!res)
        return err->kind;
    *a->ended = (size_t)strtoull(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return SYMD_OK;
}

static symd_status pg_end_ignores(store_db *s, int64_t now_ms, size_t *ended, symd_err *err)
{
    *ended = 0;
    params p = {0};
    p_i64(&p, now_ms);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    /* a read first: nothing due costs no write */
    PGresult *res = run(&c,
                        "SELECT 1 FROM crash_group_states WHERE state = 'ignored' AND "
                        "ignore_until > 0 AND ignore_until <= $1 LIMIT 1",
                        &p, "finding ignores to end", err);
    bool due = res && PQntuples(res) > 0;
    PQclear(res);
    conn_put(&c);
    if (!res)
        return err->kind;
    if (!due)
        return SYMD_OK;
    end_ignores_args a = {now_ms, ended};
    symd_status r = in_tx(s, end_ignores_tx, &a, "ending ignores", err);
    if (r != SYMD_OK)
        *ended = 0;
    return r;
}

/* Gives every group without a workflow row one (a database from before
 * schema 8), as the SQLite store's backfill_states: unresolved, its span of
 * versions from its version counters, its reports the crashes stored.
 * Nodes opening at once insert the same rows (ON CONFLICT DO NOTHING). */
static symd_status backfill_states(pgc *c, symd_err *err)
{
    PGresult *res = NULL;
    symd_status r = SYMD_OK;
    if (!exec0(c, "BEGIN", NULL, "giving groups their states", err) ||
        !(res = run(c,
                    "SELECT g.kind, g.signature, g.count, d.value FROM crash_groups g LEFT JOIN "
                    "crash_group_dims d ON d.kind = g.kind AND d.signature = g.signature AND "
                    "d.dim = 0 AND d.count > 0 WHERE NOT EXISTS (SELECT 1 FROM "
                    "crash_group_states s WHERE s.kind = g.kind AND s.signature = g.signature) "
                    "ORDER BY g.kind, g.signature",
                    NULL, "giving groups their states", err))) {
        r = err->kind;
        goto done;
    }
    int rows = PQntuples(res);
    store_version_span sp;
    for (int i = 0; i < rows && r == SYMD_OK; i++) {
        rd x = {res, i, false};
        bool first = i == 0 || strcmp(PQgetvalue(res, i, 0), PQgetvalue(res, i - 1, 0)) != 0 ||
                     strcmp(PQgetvalue(res, i, 1), PQgetvalue(res, i - 1, 1)) != 0;
        if (first)
            memset(&sp, 0, sizeof sp);
        if (!rd_null(&x, 3))
            store_span_add(&sp, PQgetvalue(res, i, 3), (size_t)PQgetlength(res, i, 3));
        bool last = i + 1 == rows || strcmp(PQgetvalue(res, i, 0), PQgetvalue(res, i + 1, 0)) != 0 ||
                    strcmp(PQgetvalue(res, i, 1), PQgetvalue(res, i + 1, 1)) != 0;
        if (!last)
            continue;
        params p = {0};
        p_text(&p, PQgetvalue(res, i, 0));
        p_text(&p, PQgetvalue(res, i, 1));
        p_i64(&p, rd_i64(&x, 2));
        p_text_or_null(&p, sp.first);
        p_text_or_null(&p, sp.first_key);
        p_text_or_null(&p, sp.last);
        p_text_or_null(&p, sp.last_key);
        if (x.bad)
            r = bad_value(err, "giving groups their states");
        else if (!exec0(c,
                        "INSERT INTO crash_group_states(kind, signature, reports, first_version, "
                        "first_key, last_version, last_key) VALUES ($1, $2, $3, $4, $5, $6, $7) "
                        "ON CONFLICT DO NOTHING",
                        &p, "giving groups their states", err))
            r = err->kind;
    }
done:
    PQclear(res);
    if (r == SYMD_OK && !exec0(c, "COMMIT", NULL, "committing the groups' states", err))
        r = err->kind;
    if (r != SYMD_OK)
        PQclear(PQexec(c->c, "ROLLBACK"));
    return r;
}

/* The refs a missing image is: counted by some crash, and no slice of its
 * UUID stored under the arch they need (as in the SQLite store). */
#define MISSING_WHERE                                                                      \
    "r.crashes > 0 AND NOT EXISTS (SELECT 1 FROM images i WHERE i.uuid = r.uuid AND "     \
    "(r.arch = '' OR i.arch = r.arch))"

static symd_status pg_missing_images(store_db *s, store_missing_which which, size_t limit,
                                     store_missing *out, size_t *n, symd_err *err)
{
    *n = 0;
    params p = {0};
    p_i64(&p, (int64_t)limit);
    p_i32(&p, which == STORE_MISSING_APP ? 0 : which == STORE_MISSING_SYSTEM ? 1 : -1);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    /* the newest crash needing it by its key: its versions and app image */
    PGresult *res = run(&c,
                        "SELECT r.uuid, r.arch, r.name, r.crashes, r.last_crash_id, (SELECT "
                        "string_agg(i.arch, ',' ORDER BY i.arch) FROM images i WHERE i.uuid = "
                        "r.uuid), r.system, c.app_version, c.os_version, coalesce(c.app_uuid = "
                        "r.uuid AND c.app_arch = r.arch, false) FROM crash_image_refs r LEFT "
                        "JOIN crashes c ON c.id = r.last_crash_id WHERE " MISSING_WHERE " AND "
                        "($2 < 0 OR r.system = ($2 = 1)) ORDER BY r.crashes DESC, "
                        "r.last_crash_id DESC, r.uuid, r.arch LIMIT $1",
                        &p, "listing missing images", err);
    symd_status r = res ? SYMD_OK : err->kind;
    for (int i = 0; res && i < PQntuples(res) && *n < limit; i++) {
        rd x = {res, i, false};
        store_missing *m = &out[(*n)++];
        memset(m, 0, sizeof *m);
        size_t ulen;
        const uint8_t *u = rd_bytes(&x, 0, &ulen);
        if (ulen == 16)
            memcpy(m->uuid, u, 16);
        rd_text_cut(&x, 1, m->arch, sizeof m->arch);
        rd_text_cut(&x, 2, m->name, sizeof m->name);
        m->crashes = rd_i64(&x, 3);
        m->last_crash_id = rd_i64(&x, 4);
        if (!rd_null(&x, 5))
            store_missing_other_archs(m, PQgetvalue(res, i, 5), (size_t)PQgetlength(res, i, 5));
        m->system = rd_i64(&x, 6) != 0;
        rd_text_cut(&x, 7, m->app_version, sizeof m->app_version);
        rd_text_cut(&x, 8, m->os_version, sizeof m->os_version);
        m->app = rd_i64(&x, 9) != 0;
        if ((x.bad || ulen != 16) && r == SYMD_OK)
            r = bad_value(err, "listing missing images");
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

static symd_status pg_missing_system(store_db *s, size_t limit, store_missing_os *out,
                                     size_t *n, symd_err *err)
{
    *n = 0;
    params p = {0};
    p_i64(&p, (int64_t)limit);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c,
                        "SELECT coalesce(c.os_version, ''), r.arch, count(*), "
                        "max(r.last_crash_id) FROM crash_image_refs r LEFT JOIN crashes c ON "
                        "c.id = r.last_crash_id WHERE r.system AND " MISSING_WHERE
                        " GROUP BY 1, 2 ORDER BY 3 DESC, 4 DESC, 1, 2 LIMIT $1",
                        &p, "counting missing system images", err);
    symd_status r = res ? SYMD_OK : err->kind;
    for (int i = 0; res && i < PQntuples(res) && *n < limit; i++) {
        rd x = {res, i, false};
        store_missing_os *g = &out[(*n)++];
        memset(g, 0, sizeof *g);
        rd_text_cut(&x, 0, g->os_version, sizeof g->os_version);
        rd_text_cut(&x, 1, g->arch, sizeof g->arch);
        g->images = rd_i64(&x, 2);
        g->last_crash_id = rd_i64(&x, 3);
        if (x.bad && r == SYMD_OK)
            r = bad_value(err, "counting missing system images");
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

/* ---- copying (symd migrate) ------------------------------------------------- */

/* ---- crashes to file again (server/regroup.c) ---------------------------- */

static symd_status pg_regroup_next(store_db *s, int64_t *ids, size_t max, size_t *n,
                                   symd_err *err)
{
    *n = 0;
    params p = {0};
    p_i64(&p, (int64_t)max);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c, "SELECT id FROM crash_regroup ORDER BY id DESC LIMIT $1", &p,
                        "reading the crashes to file again", err);
    symd_status r = res ? SYMD_OK : err->kind;
    for (int i = 0; res && i < PQntuples(res) && *n < max; i++) {
        rd x = {res, i, false};
        ids[*n] = rd_i64(&x, 0);
        if (x.bad) {
            r = bad_value(err, "reading the crashes to file again");
            break;
        }
        (*n)++;
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

typedef struct {
    const int64_t *ids;
    size_t n;
} regroup_done_args;

static symd_status regroup_done_tx(pgc *c, void *arg, symd_err *err)
{
    regroup_done_args *a = arg;
    for (size_t i = 0; i < a->n; i++) {
        params p = {0};
        p_i64(&p, a->ids[i]);
        if (!exec0(c, "DELETE FROM crash_regroup WHERE id = $1", &p,
                   "taking crashes off the refile list", err))
            return err->kind;
    }
    return SYMD_OK;
}

static symd_status pg_regroup_done(store_db *s, const int64_t *ids, size_t n, symd_err *err)
{
    regroup_done_args a = {ids, n};
    return n ? in_tx(s, regroup_done_tx, &a, "taking crashes off the refile list", err) : SYMD_OK;
}

static symd_status pg_image_ref_names(store_db *s, const uint8_t uuid[16], char (*names)[256],
                                      size_t max, size_t *n, symd_err *err)
{
    *n = 0;
    params p = {0};
    p_bytes(&p, uuid, 16);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c,
                        "SELECT DISTINCT name FROM crash_image_refs WHERE uuid = $1 AND "
                        "name <> '' ORDER BY name",
                        &p, "reading the names crashes give an image", err);
    symd_status r = res ? SYMD_OK : err->kind;
    for (int i = 0; res && i < PQntuples(res) && *n < max; i++) {
        rd x = {res, i, false};
        rd_text(&x, 0, names[(*n)++], 256);
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

static symd_status pg_regroup_queue(store_db *s, const char *lo, const char *hi, size_t *queued,
                                    symd_err *err)
{
    *queued = 0;
    params p = {0};
    p_text(&p, lo);
    p_text(&p, hi);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    /* the groups table is small; each group's crashes by the crashes_group index */
    PGresult *res = run(&c,
                        "INSERT INTO crash_regroup(id) SELECT c.id FROM crash_groups g "
                        "JOIN crashes c ON c.kind = g.kind AND c.signature = g.signature "
                        "WHERE g.signature >= $1 AND g.signature < $2 ON CONFLICT DO NOTHING",
                        &p, "listing crashes to file again", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res)
        *queued = (size_t)strtoull(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    conn_put(&c);
    return r;
}

typedef struct {
    const char *digest;
    bool changed;
} digest_args;

/* Notes the rules' digest and, when it changed, lists every crash (one
 * transaction: the row lock makes two servers starting at once list them
 * once). */
static symd_status grouping_digest_tx(pgc *c, void *arg, symd_err *err)
{
    digest_args *a = arg;
    a->changed = false;
    params p = {0};
    p_text(&p, a->digest);
    PGresult *res = run(c,
                        "UPDATE grouping_state SET rules_digest = $1 WHERE id = 1 AND "
                        "rules_digest <> $1",
                        &p, "noting the grouping rules' digest", err);
    if (!res)
        return err->kind;
    a->changed = strtoull(PQcmdTuples(res), NULL, 10) > 0;
    PQclear(res);
    params none = {0};
    if (a->changed && !exec0(c,
                             "INSERT INTO crash_regroup(id) SELECT id FROM crashes ON CONFLICT "
                             "DO NOTHING",
                             &none, "listing crashes to file under the new grouping rules", err))
        return err->kind;
    return SYMD_OK;
}

/* Contract: store_grouping_rules_changed. */
static symd_status pg_grouping_digest(store_db *s, const char *digest, bool *changed,
                                      symd_err *err)
{
    digest_args a = {digest, false};
    symd_status r = in_tx(s, grouping_digest_tx, &a, "noting the grouping rules' digest", err);
    *changed = r == SYMD_OK && a.changed;
    return r;
}

/* Streams the rows (single-row mode: a table of blobs never sits in memory
 * whole). */
static symd_status pg_export_rows(store_db *s, int t, store_row_fn fn, void *ctx, symd_err *err)
{
    char *sql = store_copy_sql(t, false, '$');
    if (!sql)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK) {
        free(sql);
        return err->kind;
    }
    symd_status r = SYMD_OK;
    if (!PQsendQueryParams(c.c, sql, 0, NULL, NULL, NULL, NULL, 1) ||
        !PQsetSingleRowMode(c.c))
        r = pg_fail(err, &c, NULL, "reading rows to copy");
    PGresult *res;
    int ncols = store_tables[t].ncols;
    while (r == SYMD_OK && (res = PQgetResult(c.c))) {
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_SINGLE_TUPLE) {
            store_value v[STORE_MAX_COLS];
            rd x = {res, 0, false};
            for (int i = 0; i < ncols; i++) {
                memset(&v[i], 0, sizeof v[i]);
                Oid type = PQftype(res, i);
                if (rd_null(&x, i)) {
                    v[i].type = STORE_V_NULL;
                } else if (type == OID_BYTEA || type == OID_TEXT) {
                    v[i].type = type == OID_BYTEA ? STORE_V_BLOB : STORE_V_TEXT;
                    v[i].p = rd_bytes(&x, i, &v[i].len);
                } else {
                    v[i].type = STORE_V_INT;
                    v[i].i = rd_i64(&x, i);
                }
            }
            r = x.bad ? bad_value(err, "reading rows to copy") : fn(ctx, v, err);
        } else if (st != PGRES_TUPLES_OK) {
            r = pg_fail(err, &c, res, "reading rows to copy");
        }
        PQclear(res);
    }
    while ((res = PQgetResult(c.c))) /* the rest, after a failure */
        PQclear(res);
    conn_put(&c);
    free(sql);
    return r;
}

static symd_status pg_import_begin(store_db *s, symd_err *err)
{
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    if (!exec0(&c, "BEGIN", NULL, "starting the import", err)) {
        conn_put(&c);
        return err->kind;
    }
    for (int t = 0; t < STORE_NTABLES; t++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT 1 FROM %s LIMIT 1", store_tables[t].name);
        PGresult *res = run(&c, sql, NULL, "checking the target is empty", err);
        int rows = res ? PQntuples(res) : -1;
        PQclear(res);
        if (rows != 0) {
            if (rows > 0)
                symd_fail(err, SYMD_E_INVALID, "the target database already holds data (table %s)",
                          store_tables[t].name);
            PQclear(PQexec(c.c, "ROLLBACK"));
            conn_put(&c);
            return err->kind;
        }
    }
    s->importing = c.i;
    return SYMD_OK;
}

static symd_status pg_import_row(store_db *s, int t, const store_value *cols, symd_err *err)
{
    pgc c = {s, s->importing, s->conns[s->importing], "", true, false};
    char *sql = store_copy_sql(t, true, '$');
    if (!sql)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    params p = {0};
    for (int i = 0; i < store_tables[t].ncols; i++) {
        switch (cols[i].type) {
        case STORE_V_NULL: p_add(&p, 0, NULL, 0, 0); break;
        case STORE_V_INT: /* untyped: the column says (bigint, integer, boolean) */
            snprintf(p.num[p.n], sizeof p.num[0], "%lld", (long long)cols[i].i);
            p_add(&p, 0, p.num[p.n], 0, 0);
            break;
        case STORE_V_TEXT: p_add(&p, OID_TEXT, (const char *)cols[i].p, (int)cols[i].len, 1); break;
        case STORE_V_BLOB: p_bytes(&p, cols[i].p, cols[i].len); break;
        }
    }
    bool ok = exec0(&c, sql, &p, "importing a row", err);
    free(sql);
    return ok ? SYMD_OK : err->kind;
}

static symd_status pg_import_end(store_db *s, bool commit, symd_err *err)
{
    pgc c = {s, s->importing, s->conns[s->importing], "", true, false};
    /* new rows take ids after the copied ones */
    bool ok = !commit ||
              (exec_script(&c,
                           "SELECT setval(pg_get_serial_sequence('images', 'id'), coalesce((SELECT "
                           "max(id) FROM images), 0) + 1, false);"
                           "SELECT setval(pg_get_serial_sequence('crashes', 'id'), coalesce((SELECT "
                           "max(id) FROM crashes), 0) + 1, false);"
                           "SELECT setval(pg_get_serial_sequence('crash_image_refs', 'id'), "
                           "coalesce((SELECT max(id) FROM crash_image_refs), 0) + 1, false);"
                           "SELECT setval(pg_get_serial_sequence('crash_group_history', 'id'), "
                           "coalesce((SELECT max(id) FROM crash_group_history), 0) + 1, false);",
                           "moving the id sequences", err) &&
               exec0(&c, "COMMIT", NULL, "committing the import", err));
    if (!commit || !ok)
        PQclear(PQexec(c.c, "ROLLBACK"));
    conn_put(&c);
    return ok ? SYMD_OK : err->kind;
}

/* ---- webhook events (store.h) ---------------------------------------------- */

static void pg_set_hooks(store_db *s, const store_hooks *h)
{
    s->hooks = h;
}

/* Records event type with data, and a delivery of it to each of h's
 * targets, inside c's transaction. */
static symd_status hook_emit_in_tx(pgc *c, const store_hooks *h, const char *type,
                                   const char *data, int64_t now, int64_t *event_id,
                                   symd_err *err)
{
    const char *what = "recording a webhook event";
    if (!data)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    params p = {0};
    p_i64(&p, now);
    p_text(&p, type);
    p_text(&p, data);
    PGresult *res = run(c, "INSERT INTO webhook_events(created_at, type, data) VALUES ($1, $2, "
                           "$3) RETURNING id", &p, what, err);
    if (!res)
        return err->kind;
    rd x = {res, 0, false};
    int64_t id = PQntuples(res) == 1 ? rd_i64(&x, 0) : 0;
    PQclear(res);
    if (x.bad || !id)
        return bad_value(err, what);
    if (event_id)
        *event_id = id;
    for (size_t i = 0; i < h->nurls; i++) {
        params q = {0};
        p_i64(&q, id);
        p_text(&q, h->urls[i]);
        p_i64(&q, now);
        if (!exec0(c, "INSERT INTO webhook_deliveries(event_id, url, next_at) VALUES ($1, $2, "
                      "$3)", &q, what, err))
            return err->kind;
    }
    return SYMD_OK;
}

/* hook_emit_in_tx of data (malloc'ed, freed here). */
static symd_status hook_emit_owned(pgc *c, const store_hooks *h, const char *type, char *data,
                                   int64_t now, symd_err *err)
{
    symd_status r = hook_emit_in_tx(c, h, type, data, now, NULL, err);
    free(data);
    return r;
}

typedef struct {
    const store_hooks *h;
    const char *type, *data;
    int64_t *event_id;
} hook_emit_args;

static symd_status hook_emit_tx(pgc *c, void *arg, symd_err *err)
{
    hook_emit_args *a = arg;
    return hook_emit_in_tx(c, a->h, a->type, a->data, store_now_ms(), a->event_id, err);
}

static symd_status pg_hook_emit(store_db *s, const char *type, const char *data,
                                int64_t *event_id, symd_err *err)
{
    *event_id = 0;
    if (!store_hooks_on(s->hooks))
        return SYMD_OK;
    hook_emit_args a = {s->hooks, type, data, event_id};
    return in_tx(s, hook_emit_tx, &a, "recording a webhook event", err);
}

#define DELIVERY_COLS                                                                        \
    "d.id, d.event_id, e.created_at, d.next_at, d.done_at, d.updated_at, d.state, "         \
    "d.attempts, d.last_status, e.type, d.url, d.last_error, e.data"

/* Row i of DELIVERY_COLS; false when a value is not what it should be or
 * memory is out. */
static bool row_to_delivery(PGresult *res, int i, store_delivery *d)
{
    memset(d, 0, sizeof *d);
    rd x = {res, i, false};
    d->id = rd_i64(&x, 0);
    d->event_id = rd_i64(&x, 1);
    d->event_at = rd_i64(&x, 2);
    d->next_at = rd_i64(&x, 3);
    d->done_at = rd_i64(&x, 4);
    d->updated_at = rd_i64(&x, 5);
    d->state = (int)rd_i64(&x, 6);
    d->attempts = (int)rd_i64(&x, 7);
    d->last_status = (int)rd_i64(&x, 8);
    rd_text(&x, 9, d->type, sizeof d->type);
    rd_text(&x, 10, d->url, sizeof d->url);
    rd_text(&x, 11, d->last_error, sizeof d->last_error);
    d->data = rd_dup(&x, 12);
    return !x.bad && d->data;
}

/* The claim: one statement takes the oldest due delivery, skipping rows
 * another node's claim has locked, and sets its lease; a node that loses
 * the race for a row takes the next. */
static symd_status pg_hook_claim(store_db *s, const char *url, int64_t now, int64_t lease_until,
                                 int64_t owner, store_delivery *out, bool *found, symd_err *err)
{
    const char *what = "claiming a webhook delivery";
    params p = {0};
    p_text(&p, url);
    p_i64(&p, now);
    p_i64(&p, lease_until);
    p_i64(&p, owner);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c,
                        "UPDATE webhook_deliveries d SET lease_until = $3, lease_owner = $4 "
                        "FROM webhook_events e WHERE e.id = d.event_id AND d.id = (SELECT id "
                        "FROM webhook_deliveries WHERE url = $1 AND state = 0 AND next_at <= $2 "
                        "AND lease_until <= $2 ORDER BY next_at, id LIMIT 1 FOR UPDATE SKIP "
                        "LOCKED) AND d.state = 0 AND d.lease_until <= $2 RETURNING " DELIVERY_COLS,
                        &p, what, err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res && PQntuples(res) == 1) {
        if (row_to_delivery(res, 0, out))
            *found = true;
        else {
            store_delivery_free(out);
            r = bad_value(err, what);
        }
    }
    PQclear(res);
    conn_put(&c);
    return r;
}

static symd_status pg_hook_finish(store_db *s, int64_t id, int64_t owner, int state,
                                  int64_t next_at, int status, const char *error, bool *kept,
                                  symd_err *err)
{
    params p = {0};
    p_i64(&p, id);
    p_i64(&p, owner);
    p_i32(&p, state);
    p_i64(&p, next_at);
    p_i32(&p, status);
    p_text(&p, error);
    p_i64(&p, store_now_ms());
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c,
                        "UPDATE webhook_deliveries SET state = $3, attempts = attempts + 1, "
                        "next_at = $4, lease_until = 0, lease_owner = 0, last_status = $5, "
                        "last_error = $6, updated_at = $7, done_at = CASE WHEN $3 <> 0 THEN $7 "
                        "ELSE 0 END WHERE id = $1 AND lease_owner = $2 AND state = 0",
                        &p, "recording a webhook delivery's attempt", err);
    symd_status r = res ? SYMD_OK : err->kind;
    if (res)
        *kept = strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    conn_put(&c);
    return r;
}

static symd_status pg_hook_list(store_db *s, int64_t before_id, size_t limit, store_delivery *out,
                                size_t *n, bool *more, symd_err *err)
{
    params p = {0};
    p_i64(&p, before_id);
    p_i64(&p, (int64_t)limit + 1);
    pgc c;
    if (conn_get(s, &c, err) != SYMD_OK)
        return err->kind;
    PGresult *res = run(&c,
                        "SELECT " DELIVERY_COLS " FROM webhook_deliveries d JOIN webhook_events "
                        "e ON e.id = d.event_id WHERE $1 = 0 OR d.id < $1 ORDER BY d.id DESC "
                        "LIMIT $2",
                        &p, "reading webhook deliveries", err);
    symd_status r = res ? SYMD_OK : err->kind;
    for (int i = 0; res && i < PQntuples(res); i++) {
        if (*n == limit) {
            *more = true;
            break;
        }
        if (!row_to_delivery(res, i, &out[*n])) {
            store_delivery_free(&out[*n]);
            r = bad_value(err, "reading webhook deliveries");
            break;
        }
        (*n)++;
    }
    PQclear(res);
    conn_put(&c);
    if (r != SYMD_OK) {
        for (size_t i = 0; i < *n; i++)
            store_delivery_free(&out[i]);
        *n = 0;
    }
    return r;
}

typedef struct {
    int64_t before_hour, done_before;
} hook_prune_args;

static symd_status hook_prune_tx(pgc *c, void *arg, symd_err *err)
{
    hook_prune_args *a = arg;
    params p = {0}, q = {0};
    p_i64(&p, a->before_hour);
    p_i64(&q, a->done_before);
    const char *what = "pruning webhook records";
    return exec0(c, "DELETE FROM crash_group_hours WHERE hour < $1", &p, what, err) &&
                   exec0(c, "DELETE FROM webhook_deliveries WHERE state <> 0 AND done_at < $1",
                         &q, what, err) &&
                   exec0(c, "DELETE FROM webhook_events e WHERE created_at < $1 AND NOT EXISTS "
                            "(SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)",
                         &q, what, err)
               ? SYMD_OK
               : err->kind;
}

static symd_status pg_hook_prune(store_db *s, int64_t before_hour, int64_t done_before,
                                 symd_err *err)
{
    hook_prune_args a = {before_hour, done_before};
    return in_tx(s, hook_prune_tx, &a, "pruning webhook records", err);
}

const store_backend store_backend_postgres = {
    .name = "postgresql",
    .claims = pg_claims,
    .open = pg_open,
    .close = pg_close,
    .ping = pg_ping,
    .put_images = pg_put_images,
    .delete_image = pg_delete_image,
    .get_image = pg_get_image,
    .list_images = pg_list_images,
    .counts = pg_counts,
    .load_index = pg_load_index,
    .load_blob = pg_load_blob,
    .chunk_put = pg_chunk_put,
    .chunks_missing = pg_chunks_missing,
    .chunk_get = pg_chunk_get,
    .chunks_delete = pg_chunks_delete,
    .chunks_expire = pg_chunks_expire,
    .chunk_stats = pg_chunk_stats,
    .symbol_set_open = pg_symbol_set_open,
    .symbol_set_add = pg_symbol_set_add,
    .list_symbol_sets = pg_list_symbol_sets,
    .delete_symbol_set = pg_delete_symbol_set,
    .put_crash = pg_put_crash,
    .get_crash = pg_get_crash,
    .update_crash = pg_update_crash,
    .delete_crash = pg_delete_crash,
    .prune_crashes = pg_prune_crashes,
    .list_crashes = pg_list_crashes,
    .crash_groups = pg_crash_groups,
    .crash_trend = pg_crash_trend,
    .crash_trend_filtered = pg_crash_trend_filtered,
    .dim_values = pg_dim_values,
    .set_group_state = pg_set_group_state,
    .group_history = pg_group_history,
    .end_ignores = pg_end_ignores,
    .missing_images = pg_missing_images,
    .missing_system = pg_missing_system,
    .export_rows = pg_export_rows,
    .import_begin = pg_import_begin,
    .import_row = pg_import_row,
    .import_end = pg_import_end,
    .regroup_next = pg_regroup_next,
    .regroup_done = pg_regroup_done,
    .regroup_queue = pg_regroup_queue,
    .grouping_digest = pg_grouping_digest,
    .image_ref_names = pg_image_ref_names,
    .set_hooks = pg_set_hooks,
    .hook_emit = pg_hook_emit,
    .hook_claim = pg_hook_claim,
    .hook_finish = pg_hook_finish,
    .hook_list = pg_hook_list,
    .hook_prune = pg_hook_prune,
};

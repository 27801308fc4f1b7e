/* The SQLite backend of the store (store/backend.h): the schema and its
 * migrations, a pool of connections (WAL), and every query. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "schema.h"
#include "appversion.h"
#include "chunk_spool.h"
#include "../util/dynbuf.h"

/* Images one refs upsert statement counts at most (more go in several), and
 * the parameters each takes (uuid, arch, name, system). */
#define REF_ROWS_MAX 32
#define REF_PARAMS 4

/* The statements of the hot paths, prepared once per connection on first
 * use. */
enum {
    Q_LOAD_INDEX,
    Q_CRASH_INSERT,
    Q_CRASH_FIRST_COPY,
    Q_CRASH_ROW,
    Q_CRASH_DELETE,
    Q_CRASH_REFILE,
    Q_GROUP_IN,
    Q_GROUP_OUT,
    Q_GROUP_DROP,
    Q_GROUP_NEWEST,
    Q_GROUP_OLDEST,
    Q_GROUP_SET,
    Q_GROUP_DAY_IN,
    Q_GROUP_DAY_OUT,
    Q_DAY_IN,
    Q_DAY_OUT,
    Q_DIM_IN,
    Q_DIM_OUT,
    Q_DIM_RESET,
    Q_REF_IN,
    Q_CRASH_REFS_SET,
    Q_REF_OUT,
    Q_ORIGINAL_INSERT,
    Q_ORIGINAL_DELETE,
    Q_BEGIN_WRITE,
    Q_BEGIN_READ,
    Q_GET_IMAGE,
    Q_COMMIT,
    Q_ROLLBACK,
    Q_SAVEPOINT,
    Q_RELEASE,
    Q_ROLLBACK_TO,
    Q_DIM_DAY_IN,
    Q_DIM_DAY_OUT,
    Q_STATE_SEEN,
    Q_STATE_END_IGNORE,
    Q_STATE_IGNORE_COUNT,
    Q_STATE_REGRESS,
    Q_HISTORY_IN,
    NQ
};

struct store_db {
    sqlite3 **conns;
    sqlite3_stmt **stmts; /* nconns x NQ, prepared on first use (stmt()) */
    sqlite3_stmt **ref_stmts; /* nconns x REF_ROWS_MAX: the refs upsert of n rows (refs_stmt()) */
    bool *busy;
    int nconns;
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;
    /* One writer at a time in this process: a second writer would find the
     * database locked and sleep in SQLite's busy handler (1 ms and up), so
     * writers queue here instead. */
    pthread_mutex_t write_mu;
    /* crashes queued for the next group commit (sq_put_crash) */
    pthread_mutex_t gc_mu;
    pthread_cond_t gc_cv;
    struct crash_job *gc_head, *gc_tail;
    bool gc_leading;
    int importing; /* the connection of an import under way */
    const store_hooks *hooks; /* what crash posts record for webhooks (the core's) */
    /* chunks' bytes, as files beside the database (the chunks table keeps
     * their size and time: the budget and the TTL) */
    chunk_spool spool;
};

static symd_status db_fail(symd_err *err, sqlite3 *db, const char *what)
{
    return symd_fail(err, SYMD_E_DB, "%s: %s", what, db ? sqlite3_errmsg(db) : "?");
}

static symd_status open_conn(const char *path, sqlite3 **out, symd_err *err)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc != SQLITE_OK) {
        symd_status r = symd_fail(err, SYMD_E_DB, "cannot open database %s: %s", path,
                                  db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return r;
    }
    sqlite3_busy_timeout(db, 10000);
    if (sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "PRAGMA foreign_keys=ON;"
                     /* statement journals (upserts, savepoints) in memory,
                      * not in a temporary file each time */
                     "PRAGMA temp_store=MEMORY;",
                     NULL, NULL, NULL) != SQLITE_OK) {
        symd_status r = db_fail(err, db, "configuring database");
        sqlite3_close(db);
        return r;
    }
    *out = db;
    return SYMD_OK;
}

static void finalize_all(store_db *s);
static sqlite3_stmt *stmt(store_db *s, int ci, int q, symd_err *err);
static void stmt_done(sqlite3_stmt *st);

static void sq_close(store_db *s)
{
    if (!s)
        return;
    finalize_all(s);
    for (int i = 0; i < s->nconns; i++)
        sqlite3_close(s->conns[i]);
    free(s->stmts);
    free(s->ref_stmts);
    free(s->conns);
    free(s->busy);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_cond_destroy(&s->pool_cv);
    pthread_mutex_destroy(&s->write_mu);
    pthread_mutex_destroy(&s->gc_mu);
    pthread_cond_destroy(&s->gc_cv);
    free(s);
}

/* SQLite keeps memory statistics under one process-wide mutex that every
 * allocation takes; symd never reads them, and the worker threads would
 * queue on it. Before SQLite initializes, once. */
static symd_status backfill_states(sqlite3 *db, symd_err *err);

static pthread_once_t sq_config_once = PTHREAD_ONCE_INIT;
static void sq_config(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); /* fails harmlessly if already initialized */
}

static symd_status sq_open(const char *path, int pool, store_change_fn on_change, void *ctx,
                           store_db **out, symd_err *err)
{
    (void)on_change; /* one process writes a SQLite store: nothing to be told */
    (void)ctx;
    pthread_once(&sq_config_once, sq_config);
    *out = NULL;
    if (pool < 1)
        pool = 1;
    store_db *s = calloc(1, sizeof *s);
    if (!s)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    s->conns = calloc((size_t)pool, sizeof *s->conns);
    s->busy = calloc((size_t)pool, sizeof *s->busy);
    s->stmts = calloc((size_t)pool * NQ, sizeof *s->stmts);
    s->ref_stmts = calloc((size_t)pool * REF_ROWS_MAX, sizeof *s->ref_stmts);
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_cond_init(&s->pool_cv, NULL);
    pthread_mutex_init(&s->write_mu, NULL);
    pthread_mutex_init(&s->gc_mu, NULL);
    pthread_cond_init(&s->gc_cv, NULL);
    if (!s->conns || !s->busy || !s->stmts || !s->ref_stmts) {
        sq_close(s);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    if (!chunk_spool_init(&s->spool, path)) {
        sq_close(s);
        return symd_fail(err, SYMD_E_INVALID, "database path too long");
    }
    for (int i = 0; i < pool; i++) {
        symd_status st = open_conn(path, &s->conns[i], err);
        s->nconns = i + (st == SYMD_OK);
        if (st == SYMD_OK && i == 0 && (st = sqlite_schema_migrate(s->conns[0], err)) == SYMD_OK)
            st = backfill_states(s->conns[0], err);
        if (st != SYMD_OK) {
            sq_close(s);
            return st;
        }
    }
    *out = s;
    return SYMD_OK;
}

/* Any --db value that is no URI of another backend is a file path. */
static bool sq_claims(const char *where)
{
    (void)where;
    return true;
}

/* ---- connection pool ---------------------------------------------------- */

static int conn_get(store_db *s)
{
    pthread_mutex_lock(&s->pool_mu);
    for (;;) {
        for (int i = 0; i < s->nconns; i++)
            if (!s->busy[i]) {
                s->busy[i] = true;
                pthread_mutex_unlock(&s->pool_mu);
                return i;
            }
        pthread_cond_wait(&s->pool_cv, &s->pool_mu);
    }
}

static void conn_put(store_db *s, int i)
{
    pthread_mutex_lock(&s->pool_mu);
    s->busy[i] = false;
    pthread_cond_signal(&s->pool_cv);
    pthread_mutex_unlock(&s->pool_mu);
}

/* A connection for a write transaction, holding the process's writer turn
 * (write_mu) until writer_put. */
static int writer_get(store_db *s)
{
    pthread_mutex_lock(&s->write_mu);
    return conn_get(s);
}

static void writer_put(store_db *s, int i)
{
    conn_put(s, i);
    pthread_mutex_unlock(&s->write_mu);
}

/* ---- rows --------------------------------------------------------------- */

#define IMAGE_COLS                                                         \
    "id, uuid, arch, name, kind, text_vmaddr, text_size, symbols, functions, " \
    "debug_info, created_at, updated_at, system"
#define IMAGE_NCOLS 13

static void copy_text(char *dst, size_t cap, const unsigned char *src)
{
    snprintf(dst, cap, "%s", src ? (const char *)src : "");
}

static void row_to_image(sqlite3_stmt *st, store_image *im)
{
    memset(im, 0, sizeof *im);
    im->id = sqlite3_column_int64(st, 0);
    const void *u = sqlite3_column_blob(st, 1);
    if (u && sqlite3_column_bytes(st, 1) == 16)
        memcpy(im->uuid, u, 16);
    copy_text(im->arch, sizeof im->arch, sqlite3_column_text(st, 2));
    copy_text(im->name, sizeof im->name, sqlite3_column_text(st, 3));
    copy_text(im->kind, sizeof im->kind, sqlite3_column_text(st, 4));
    im->text_vmaddr = (uint64_t)sqlite3_column_int64(st, 5);
    im->text_size = (uint64_t)sqlite3_column_int64(st, 6);
    im->symbols = (uint32_t)sqlite3_column_int64(st, 7);
    im->functions = (uint32_t)sqlite3_column_int64(st, 8);
    im->debug_info = sqlite3_column_int(st, 9) != 0;
    im->created_at = sqlite3_column_int64(st, 10);
    im->updated_at = sqlite3_column_int64(st, 11);
    im->system = sqlite3_column_int(st, 12) != 0;
}

/* Runs one statement of SQL with integer parameters ?1 (a) and ?2 (b, not
 * bound when sql has no ?2); false on an error (the connection's message
 * says which). */
static bool exec_ii(sqlite3 *db, const char *sql, int64_t a, int64_t b)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW;
}

/* An upload of image id: it is the user's now, never deleted with a set. */
static bool clear_system(sqlite3 *db, int64_t id)
{
    return exec_ii(db, "UPDATE images SET system = 0 WHERE id = ?1 AND system <> ?2", id, 0);
}

/* Runs a one-row SELECT of IMAGE_COLS by (uuid, arch); SQLITE_ROW/DONE/error. */
static int find_row(sqlite3 *db, const uint8_t uuid[16], const char *arch,
                    store_image *im)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT " IMAGE_COLS
                                " FROM images WHERE uuid = ?1 AND arch = ?2",
                                -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_blob(st, 1, uuid, 16, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, arch, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        row_to_image(st, im);
    sqlite3_finalize(st);
    return rc;
}

/* Whether image id has a blob of kind: 1, 0, or -1 on a database error. */
static int has_data(sqlite3 *db, int64_t id, const char *kind)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM image_data WHERE image_id = ?1 AND kind = ?2", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* Stores p's extra blobs the image id has none of yet; *added says how
 * many were new. false on a database error. */
static bool put_extras(sqlite3 *db, int64_t id, const store_put *p, size_t *added)
{
    *added = 0;
    for (size_t i = 0; i < p->nextra; i++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db,
                               "INSERT OR IGNORE INTO image_data(image_id, kind, data) "
                               "VALUES (?1, ?2, ?3)",
                               -1, &st, NULL) != SQLITE_OK)
            return false;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, p->extra[i].kind, -1, SQLITE_STATIC);
        sqlite3_bind_blob64(st, 3, p->extra[i].data, p->extra[i].len, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return false;
        *added += (size_t)sqlite3_changes(db);
    }
    return true;
}

/* One slice, merged as store_put_images says, inside the caller's
 * transaction. system: an import creates it (images.system); an upload
 * (false) of a slice an import created makes it the user's. */
static symd_status put_one(sqlite3 *db, store_put *p, int64_t now, bool system,
                           store_put_result *result, store_image *stored,
                           symd_err *err)
{
    store_image old;
    int rc = find_row(db, p->meta.uuid, p->meta.arch, &old);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_fail(err, db, "looking up image");
    sqlite3_stmt *st = NULL;
    int64_t id;
    bool put_syms = true, put_lines = p->lines != NULL, put_unwind = p->unwind != NULL;
    bool extras_done = false;
    if (rc == SQLITE_ROW && !system && !clear_system(db, old.id))
        return db_fail(err, db, "marking image as uploaded");
    if (rc == SQLITE_ROW && put_unwind) {
        /* The first unwind table stored for a (UUID, arch) stays: every
         * binary of that UUID has the same one. */
        int has = has_data(db, old.id, "unwind");
        if (has < 0)
            return db_fail(err, db, "looking up unwind table");
        put_unwind = !has;
    }
    if (rc == SQLITE_ROW) {
        store_merge m = store_merge_plan(&old, p);
        put_syms = m.put_syms;
        put_lines = m.put_lines;
        id = old.id;
        if (!put_syms && !put_lines && !put_unwind && !m.take_kind) {
            size_t added;
            if (!put_extras(db, id, p, &added))
                return db_fail(err, db, "writing image data");
            if (!added) {
                *result = STORE_EXISTS;
                *stored = old;
                return SYMD_OK;
            }
            extras_done = true;
        }
        rc = sqlite3_prepare_v2(db,
                                "UPDATE images SET "
                                "kind = CASE WHEN ?9 THEN ?2 ELSE kind END, "
                                "text_vmaddr = CASE WHEN ?12 THEN ?3 ELSE text_vmaddr END, "
                                "text_size = CASE WHEN ?12 THEN ?4 ELSE text_size END, "
                                "symbols = CASE WHEN ?10 THEN ?5 ELSE symbols END, "
                                "functions = CASE WHEN ?10 THEN ?6 ELSE functions END, "
                                "debug_info = debug_info OR ?11, updated_at = ?7, "
                                "name = CASE WHEN name = 'unknown' OR (?9 AND ?8 <> "
                                "'unknown') THEN ?8 ELSE name END WHERE id = ?1",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
            return db_fail(err, db, "updating image");
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, p->meta.kind, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (int64_t)p->meta.text_vmaddr);
        sqlite3_bind_int64(st, 4, (int64_t)p->meta.text_size);
        sqlite3_bind_int64(st, 5, p->meta.symbols);
        sqlite3_bind_int64(st, 6, p->meta.functions);
        sqlite3_bind_int64(st, 7, now);
        sqlite3_bind_text(st, 8, p->meta.name, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 9, m.take_kind);
        sqlite3_bind_int(st, 10, put_syms);
        sqlite3_bind_int(st, 11, put_lines);
        sqlite3_bind_int(st, 12, m.set_place);
        *result = STORE_UPDATED;
    } else {
        rc = sqlite3_prepare_v2(db,
                                "INSERT INTO images(uuid, arch, name, kind, "
                                "text_vmaddr, text_size, symbols, functions, "
                                "debug_info, created_at, updated_at, system) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11)",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
            return db_fail(err, db, "inserting image");
        sqlite3_bind_blob(st, 1, p->meta.uuid, 16, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, p->meta.arch, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, p->meta.name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, p->meta.kind, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, (int64_t)p->meta.text_vmaddr);
        sqlite3_bind_int64(st, 6, (int64_t)p->meta.text_size);
        sqlite3_bind_int64(st, 7, p->meta.symbols);
        sqlite3_bind_int64(st, 8, p->meta.functions);
        sqlite3_bind_int(st, 9, p->lines != NULL);
        sqlite3_bind_int64(st, 10, now);
        sqlite3_bind_int(st, 11, system);
        *result = STORE_CREATED;
        id = 0;
    }
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_fail(err, db, "writing image");
    if (!id)
        id = sqlite3_last_insert_rowid(db);

    static const char *const kinds[3] = {"symbols", "lines", "unwind"};
    static const char *const whats[3] = {"writing symbol index", "writing line index",
                                         "writing unwind table"};
    const bool put[3] = {put_syms, put_lines, put_unwind};
    const uint8_t *data[3] = {p->symidx, p->lines, p->unwind};
    const size_t lens[3] = {p->symidx_len, p->lines_len, p->unwind_len};
    for (int k = 0; k < 3; k++) {
        if (!put[k])
            continue;
        rc = sqlite3_prepare_v2(db,
                                "INSERT OR REPLACE INTO image_data(image_id, kind, data) "
                                "VALUES (?1, ?2, ?3)",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
            return db_fail(err, db, "writing index");
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, kinds[k], -1, SQLITE_STATIC);
        sqlite3_bind_blob64(st, 3, data[k], lens[k], SQLITE_STATIC);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return db_fail(err, db, whats[k]);
    }
    size_t added;
    if (!extras_done && !put_extras(db, id, p, &added))
        return db_fail(err, db, "writing image data");
    rc = find_row(db, p->meta.uuid, p->meta.arch, stored);
    if (rc != SQLITE_ROW)
        return db_fail(err, db, "reading back image");
    return SYMD_OK;
}

static symd_status sq_put_images(store_db *s, store_put *puts, size_t n,
                             store_put_result *results, store_image *stored,
                             symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "starting upload transaction");
        goto out;
    }
    int64_t now = store_now_ms();
    for (size_t i = 0; i < n && r == SYMD_OK; i++)
        r = put_one(db, &puts[i], now, false, &results[i], &stored[i], err);
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing upload");
    if (r != SYMD_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
    writer_put(s, ci);
    return r;
}

static symd_status sq_delete_image(store_db *s, const uint8_t uuid[16], size_t *deleted,
                               symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st;
    symd_status r = SYMD_OK;
    *deleted = 0;
    if (sqlite3_prepare_v2(db, "DELETE FROM images WHERE uuid = ?1", -1, &st, NULL) !=
        SQLITE_OK) {
        r = db_fail(err, db, "deleting image");
    } else {
        sqlite3_bind_blob(st, 1, uuid, 16, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            r = db_fail(err, db, "deleting image");
        else
            *deleted = (size_t)sqlite3_changes(db);
        sqlite3_finalize(st);
    }
    writer_put(s, ci);
    return r;
}

static symd_status sq_get_image(store_db *s, const uint8_t uuid[16], store_image *out,
                            size_t max, size_t *n, symd_err *err)
{
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    *n = 0;
    sqlite3_stmt *st = stmt(s, ci, Q_GET_IMAGE, err);
    if (!st) {
        r = err->kind;
    } else {
        sqlite3_bind_blob(st, 1, uuid, 16, SQLITE_STATIC);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max)
            row_to_image(st, &out[(*n)++]);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            r = db_fail(err, db, "reading image");
        stmt_done(st);
    }
    conn_put(s, ci);
    return r;
}

static symd_status sq_list_images(store_db *s, const char *query, const char *arch,
                              int64_t before_id, size_t limit, store_image *out,
                              size_t *n, bool *more, symd_err *err)
{
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st;
    symd_status r = SYMD_OK;
    *n = 0;
    *more = false;
    /* instr() keeps user text out of LIKE patterns. The UUID is matched as
     * uppercase hex without dashes. */
    if (sqlite3_prepare_v2(
            db,
            "SELECT " IMAGE_COLS " FROM images WHERE (?1 = '' OR "
            "instr(lower(name), lower(?1)) > 0 OR "
            "instr(hex(uuid), upper(replace(?1, '-', ''))) = 1) "
            "AND (?2 = '' OR arch = ?2) AND (?3 <= 0 OR id < ?3) "
            "ORDER BY id DESC LIMIT ?4",
            -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "listing images");
    } else {
        sqlite3_bind_text(st, 1, query ? query : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, arch ? arch : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, before_id);
        sqlite3_bind_int64(st, 4, (int64_t)limit + 1);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (*n == limit) {
                *more = true;
                break;
            }
            row_to_image(st, &out[(*n)++]);
        }
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            r = db_fail(err, db, "listing images");
        sqlite3_finalize(st);
    }
    conn_put(s, ci);
    return r;
}

static symd_status sq_counts(store_db *s, int64_t *images, int64_t *blobs, int64_t *crashes,
                         symd_err *err)
{
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT count(*) FROM images), "
                           "(SELECT count(*) FROM image_data), (SELECT count(*) FROM crashes)",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "counting");
    } else {
        if (sqlite3_step(st) == SQLITE_ROW) {
            *images = sqlite3_column_int64(st, 0);
            *blobs = sqlite3_column_int64(st, 1);
            if (crashes)
                *crashes = sqlite3_column_int64(st, 2);
        } else {
            r = db_fail(err, db, "counting");
        }
        sqlite3_finalize(st);
    }
    conn_put(s, ci);
    return r;
}

static bool sq_ping(store_db *s)
{
    int ci = conn_get(s);
    bool ok = sqlite3_exec(s->conns[ci], "SELECT 1 FROM images LIMIT 1", NULL, NULL,
                           NULL) == SQLITE_OK;
    conn_put(s, ci);
    return ok;
}

/* ---- system symbol sets -------------------------------------------------- */

#define SET_COLS "id, os_name, os_version, os_build, arch, model, source, created_at, updated_at"

static void row_to_set(sqlite3_stmt *st, store_symbol_set *o)
{
    memset(o, 0, sizeof *o);
    o->id = sqlite3_column_int64(st, 0);
    copy_text(o->os_name, sizeof o->os_name, sqlite3_column_text(st, 1));
    copy_text(o->os_version, sizeof o->os_version, sqlite3_column_text(st, 2));
    copy_text(o->os_build, sizeof o->os_build, sqlite3_column_text(st, 3));
    copy_text(o->arch, sizeof o->arch, sqlite3_column_text(st, 4));
    copy_text(o->model, sizeof o->model, sqlite3_column_text(st, 5));
    copy_text(o->source, sizeof o->source, sqlite3_column_text(st, 6));
    o->created_at = sqlite3_column_int64(st, 7);
    o->updated_at = sqlite3_column_int64(st, 8);
}

/* Runs sql with want's fields as ?1 os_name, ?2 os_version, ?3 os_build,
 * ?4 arch, ?5 model, ?6 source and ?7 now (those sql leaves out are not
 * bound); a SET_COLS row it returns goes to out (when not NULL).
 * SQLITE_ROW, SQLITE_DONE or an error code. */
static int run_set_sql(sqlite3 *db, const char *sql, const store_symbol_set *want, int64_t now,
                       store_symbol_set *out)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    const char *v[6] = {want->os_name, want->os_version, want->os_build,
                        want->arch,    want->model,      want->source};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_text(st, i + 1, v[i], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, now);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && out)
        row_to_set(st, out);
    sqlite3_finalize(st);
    return rc;
}

static symd_status sq_symbol_set_open(store_db *s, const store_symbol_set *want,
                                      store_symbol_set *out, bool *created, symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    int64_t now = store_now_ms();
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "starting symbol set transaction");
        goto out;
    }
    /* Looked up first: an INSERT that finds the set would use up an id. */
    int rc = run_set_sql(db,
                         "SELECT " SET_COLS " FROM symbol_sets WHERE os_name = ?1 AND "
                         "os_build = ?3 AND arch = ?4",
                         want, now, out);
    *created = rc == SQLITE_DONE;
    if (*created)
        rc = run_set_sql(db,
                         "INSERT INTO symbol_sets(os_name, os_version, os_build, arch, model, "
                         "source, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                         "?7)",
                         want, now, NULL);
    else if (rc == SQLITE_ROW)
        rc = run_set_sql(db,
                         "UPDATE symbol_sets SET os_version = CASE WHEN ?2 <> '' THEN ?2 ELSE "
                         "os_version END, model = CASE WHEN ?5 <> '' THEN ?5 ELSE model END, "
                         "source = CASE WHEN ?6 <> '' THEN ?6 ELSE source END, updated_at = ?7 "
                         "WHERE os_name = ?1 AND os_build = ?3 AND arch = ?4",
                         want, now, NULL);
    if (rc == SQLITE_DONE)
        rc = run_set_sql(db,
                         "SELECT " SET_COLS " FROM symbol_sets WHERE os_name = ?1 AND "
                         "os_build = ?3 AND arch = ?4",
                         want, now, out);
    if (rc != SQLITE_ROW)
        r = db_fail(err, db, "storing symbol set");
    else if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing symbol set");
    if (r != SYMD_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
    writer_put(s, ci);
    return r;
}

/* Links image_id to set_id (once). */
static bool link_image(sqlite3 *db, int64_t set_id, int64_t image_id)
{
    return exec_ii(db,
                   "INSERT INTO symbol_set_images(set_id, image_id) VALUES (?1, ?2) "
                   "ON CONFLICT DO NOTHING",
                   set_id, image_id);
}

/* The body of sq_symbol_set_add, inside its transaction. */
static symd_status set_add_in_tx(sqlite3 *db, int64_t set_id, store_put *puts, size_t n,
                                 store_put_result *results, const store_image_key *links,
                                 size_t nlinks, size_t *linked, symd_err *err)
{
    int64_t now = store_now_ms();
    if (!exec_ii(db, "UPDATE symbol_sets SET updated_at = ?2 WHERE id = ?1", set_id, now))
        return db_fail(err, db, "touching symbol set");
    if (sqlite3_changes(db) == 0)
        return symd_fail(err, SYMD_E_NOT_FOUND, "symbol set %lld is gone", (long long)set_id);
    for (size_t i = 0; i < n; i++) {
        store_image im;
        int rc = find_row(db, puts[i].meta.uuid, puts[i].meta.arch, &im);
        if (rc == SQLITE_ROW) {
            results[i] = STORE_EXISTS; /* an upload's or another set's: left as it is */
        } else if (rc == SQLITE_DONE) {
            symd_status r = put_one(db, &puts[i], now, true, &results[i], &im, err);
            if (r != SYMD_OK)
                return r;
        } else {
            return db_fail(err, db, "looking up image");
        }
        if (!link_image(db, set_id, im.id))
            return db_fail(err, db, "linking image to its symbol set");
    }
    for (size_t i = 0; i < nlinks; i++) {
        store_image im;
        int rc = find_row(db, links[i].uuid, links[i].arch, &im);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return db_fail(err, db, "looking up image");
        if (rc == SQLITE_DONE)
            continue;
        if (!link_image(db, set_id, im.id))
            return db_fail(err, db, "linking image to its symbol set");
        (*linked)++;
    }
    return SYMD_OK;
}

static symd_status sq_symbol_set_add(store_db *s, int64_t set_id, store_put *puts, size_t n,
                                     store_put_result *results, const store_image_key *links,
                                     size_t nlinks, size_t *linked, symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    *linked = 0;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "starting import transaction");
    else
        r = set_add_in_tx(db, set_id, puts, n, results, links, nlinks, linked, err);
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing import");
    if (r != SYMD_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        *linked = 0;
    }
    writer_put(s, ci);
    return r;
}

static symd_status sq_list_symbol_sets(store_db *s, store_symbol_set *out, size_t max, size_t *n,
                                       symd_err *err)
{
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st;
    symd_status r = SYMD_OK;
    *n = 0;
    /* length() of a blob reads its size, not its bytes */
    if (sqlite3_prepare_v2(db,
                           "SELECT " SET_COLS ", (SELECT count(*) FROM symbol_set_images si "
                           "WHERE si.set_id = symbol_sets.id), (SELECT coalesce(sum(length("
                           "d.data)), 0) FROM symbol_set_images si JOIN image_data d ON "
                           "d.image_id = si.image_id WHERE si.set_id = symbol_sets.id) FROM "
                           "symbol_sets ORDER BY id LIMIT ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "listing symbol sets");
    } else {
        sqlite3_bind_int64(st, 1, (int64_t)max);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max) {
            row_to_set(st, &out[*n]);
            out[*n].image_count = sqlite3_column_int64(st, 9);
            out[*n].bytes = (uint64_t)sqlite3_column_int64(st, 10);
            (*n)++;
        }
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            r = db_fail(err, db, "listing symbol sets");
        sqlite3_finalize(st);
    }
    conn_put(s, ci);
    return r;
}

/* The images deleting set ?1 deletes: an import's, in no other set. */
#define SET_ONLY_IMAGES                                                                  \
    "SELECT i.id, i.uuid FROM symbol_set_images si JOIN images i ON i.id = si.image_id " \
    "WHERE si.set_id = ?1 AND i.system <> ?2 AND NOT EXISTS (SELECT 1 FROM "             \
    "symbol_set_images o WHERE o.image_id = si.image_id AND o.set_id <> ?1)"

/* The body of sq_delete_symbol_set, inside its transaction. */
static symd_status delete_set_in_tx(sqlite3 *db, int64_t id, bool *found, size_t *deleted,
                                    uint8_t (**uuids)[16], symd_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, SET_ONLY_IMAGES, -1, &st, NULL) != SQLITE_OK)
        return db_fail(err, db, "reading symbol set");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, 0);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*deleted == cap) {
            cap = cap ? cap * 2 : 64;
            uint8_t(*u)[16] = realloc(*uuids, cap * sizeof *u);
            if (!u) {
                sqlite3_finalize(st);
                return symd_fail(err, SYMD_E_NOMEM, "out of memory");
            }
            *uuids = u;
        }
        const void *b = sqlite3_column_blob(st, 1);
        memset((*uuids)[*deleted], 0, 16);
        if (b && sqlite3_column_bytes(st, 1) == 16)
            memcpy((*uuids)[*deleted], b, 16);
        (*deleted)++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_fail(err, db, "reading symbol set");
    /* The set's own rows go with it (and its images' links with them). */
    if (!exec_ii(db, "DELETE FROM images WHERE id IN (SELECT id FROM (" SET_ONLY_IMAGES "))",
                 id, 0))
        return db_fail(err, db, "deleting the set's images");
    if ((size_t)sqlite3_changes(db) != *deleted)
        return symd_fail(err, SYMD_E_DB, "symbol set %lld: images changed while deleting it",
                         (long long)id);
    if (!exec_ii(db, "DELETE FROM symbol_sets WHERE id = ?1", id, 0))
        return db_fail(err, db, "deleting symbol set");
    *found = sqlite3_changes(db) == 1;
    return SYMD_OK;
}

static symd_status sq_delete_symbol_set(store_db *s, int64_t id, bool *found,
                                        size_t *images_deleted, uint8_t (**uuids)[16],
                                        symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r;
    *found = false;
    *images_deleted = 0;
    *uuids = NULL;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "starting delete transaction");
    else
        r = delete_set_in_tx(db, id, found, images_deleted, uuids, err);
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing delete");
    if (r != SYMD_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        free(*uuids);
        *uuids = NULL;
        *found = false;
        *images_deleted = 0;
    }
    writer_put(s, ci);
    return r;
}

/* ---- prepared statements, reused per connection -------------------------- */


#define CRASH_COLS                                                                       \
    "c.id, c.created_at, c.format, c.kind, c.process, c.bundle_id, c.app_version, "     \
    "c.os_version, c.hardware_model, c.incident_id, c.exception_type, c.signature, "    \
    "c.bug_type, c.app_uuid, c.app_arch, c.app_name, c.app_uuid IS NOT NULL AND EXISTS " \
    "(SELECT 1 FROM images i WHERE i.uuid = c.app_uuid AND (c.app_arch = '' OR i.arch = " \
    "c.app_arch)), c.grouping_rule"
#define CRASH_NCOLS 18 /* the columns of CRASH_COLS */

/* A dimension's counter: ?1 kind, ?2 signature, ?3 dim, ?4 value. */
static const char *const sql_of[NQ] = {
    [Q_LOAD_INDEX] =
        "SELECT " IMAGE_COLS ", (SELECT count(*) FROM images i2 WHERE i2.uuid = images.uuid), "
        "(SELECT d.data FROM image_data d WHERE d.image_id = images.id AND d.kind = "
        "'symbols'), (SELECT d.data FROM image_data d WHERE d.image_id = images.id AND "
        "d.kind = 'lines'), (SELECT d.data FROM image_data d WHERE d.image_id = images.id "
        "AND d.kind = 'unwind') FROM images WHERE uuid = ?1 AND (?2 IS NULL OR arch = ?2) "
        "ORDER BY arch LIMIT 2",
    [Q_CRASH_INSERT] =
        "INSERT INTO crashes(created_at, kind, bug_type, format, process, bundle_id, "
        "app_version, os_version, hardware_model, incident_id, exception_type, signature, "
        "app_uuid, app_arch, app_name, part, grouping_rule, idem_key, content_key) VALUES (?1, "
        "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19) "
        "ON CONFLICT DO NOTHING",
    /* the crash a post that stored nothing is a copy of: the key wins */
    [Q_CRASH_FIRST_COPY] = "SELECT id FROM (SELECT id, 0 AS o FROM crashes WHERE idem_key = ?1 "
                           "UNION ALL SELECT id, 1 FROM crashes WHERE content_key = ?2) "
                           "ORDER BY o LIMIT 1",
    [Q_ORIGINAL_INSERT] = "INSERT INTO crash_originals(id, codec, original_len, original) "
                          "VALUES (?1, ?2, ?3, ?4)",
    [Q_CRASH_ROW] = "SELECT kind, signature, created_at, app_version, os_version, "
                    "hardware_model, process, bug_type, refs, grouping_rule FROM crashes WHERE id = ?1",
    [Q_CRASH_DELETE] = "DELETE FROM crashes WHERE id = ?1",
    [Q_ORIGINAL_DELETE] = "DELETE FROM crash_originals WHERE id = ?1",
    /* transaction control, prepared once like the rest */
    [Q_BEGIN_WRITE] = "BEGIN IMMEDIATE",
    [Q_BEGIN_READ] = "BEGIN",
    [Q_GET_IMAGE] = "SELECT " IMAGE_COLS " FROM images WHERE uuid = ?1 ORDER BY arch",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
    [Q_SAVEPOINT] = "SAVEPOINT crash",
    [Q_RELEASE] = "RELEASE crash",
    [Q_ROLLBACK_TO] = "ROLLBACK TO crash",
    [Q_CRASH_REFILE] = "UPDATE crashes SET signature = ?2, kind = ?3, bug_type = ?4, "
                       "grouping_rule = ?5 WHERE id = ?1",
    /* a crash joins its group: the newest one gives the example, version and process */
    [Q_GROUP_IN] =
        "INSERT INTO crash_groups(kind, signature, count, first_seen, last_seen, example_id, "
        "app_version, process) VALUES (?1, ?2, 1, ?3, ?3, ?4, ?5, ?6) ON CONFLICT(kind, "
        "signature) DO UPDATE SET count = count + 1, first_seen = min(first_seen, "
        "excluded.first_seen), last_seen = max(last_seen, excluded.last_seen), app_version = "
        "CASE WHEN excluded.example_id > example_id THEN excluded.app_version ELSE "
        "app_version END, process = CASE WHEN excluded.example_id > example_id THEN "
        "excluded.process ELSE process END, example_id = max(example_id, "
        "excluded.example_id)",
    [Q_GROUP_OUT] = "UPDATE crash_groups SET count = count - 1 WHERE kind = ?1 AND "
                    "signature = ?2 RETURNING count, example_id, first_seen",
    [Q_GROUP_DROP] = "DELETE FROM crash_groups WHERE kind = ?1 AND signature = ?2",
    [Q_GROUP_NEWEST] = "SELECT id, created_at, app_version, process FROM crashes WHERE "
                       "kind = ?1 AND signature = ?2 ORDER BY id DESC LIMIT 1",
    [Q_GROUP_OLDEST] = "SELECT created_at FROM crashes WHERE kind = ?1 AND signature = ?2 "
                       "ORDER BY id LIMIT 1",
    [Q_GROUP_SET] = "UPDATE crash_groups SET example_id = ?3, last_seen = ?4, app_version = "
                    "?5, process = ?6, first_seen = ?7 WHERE kind = ?1 AND signature = ?2",
    [Q_GROUP_DAY_IN] = "INSERT INTO crash_group_days VALUES (?1, ?2, ?3, 1) ON CONFLICT DO "
                       "UPDATE SET count = count + 1",
    [Q_GROUP_DAY_OUT] = "UPDATE crash_group_days SET count = count - 1 WHERE kind = ?1 AND "
                        "signature = ?2 AND day = ?3",
    [Q_DAY_IN] = "INSERT INTO crash_days VALUES (?1, ?2, 1) ON CONFLICT DO UPDATE SET "
                 "count = count + 1",
    [Q_DAY_OUT] = "UPDATE crash_days SET count = count - 1 WHERE kind = ?1 AND day = ?2",
    /* ?5 the crash's time, ?6 its id */
    [Q_DIM_IN] = "INSERT INTO crash_group_dims VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5, ?6) ON "
                 "CONFLICT DO UPDATE SET count = count + 1, first_seen = min(first_seen, "
                 "excluded.first_seen), last_seen = max(last_seen, excluded.last_seen), "
                 "example_id = max(example_id, excluded.example_id)",
    [Q_DIM_OUT] = "UPDATE crash_group_dims SET count = count - 1 WHERE kind = ?1 AND "
                  "signature = ?2 AND dim = ?3 AND value = ?4 RETURNING count, example_id, "
                  "first_seen",
    /* a dimension's newest and oldest crash after its example or oldest
     * went: a walk of the group's crashes (index crashes_group) */
    [Q_DIM_RESET] =
        "UPDATE crash_group_dims SET (example_id, last_seen) = (SELECT c.id, c.created_at "
        "FROM crashes c WHERE c.kind = ?1 AND c.signature = ?2 AND CASE ?3 WHEN 0 THEN "
        "c.app_version WHEN 1 THEN c.os_version ELSE c.hardware_model END = ?4 ORDER BY c.id "
        "DESC LIMIT 1), first_seen = (SELECT c.created_at FROM crashes c WHERE c.kind = ?1 "
        "AND c.signature = ?2 AND CASE ?3 WHEN 0 THEN c.app_version WHEN 1 THEN c.os_version "
        "ELSE c.hardware_model END = ?4 ORDER BY c.id LIMIT 1) WHERE kind = ?1 AND "
        "signature = ?2 AND dim = ?3 AND value = ?4",
    /* a dimension's day (?5) */
    [Q_DIM_DAY_IN] = "INSERT INTO crash_dim_days VALUES (?1, ?2, ?3, ?4, ?5, 1) ON CONFLICT DO "
                     "UPDATE SET count = count + 1",
    [Q_DIM_DAY_OUT] = "UPDATE crash_dim_days SET count = count - 1 WHERE kind = ?1 AND "
                      "signature = ?2 AND dim = ?3 AND value = ?4 AND day = ?5",
    /* a report filed under its group (?1, ?2): its version ?3 (key ?4,
     * first-order key ?5: store/appversion.h; all NULL when it has none)
     * widens the group's span; the new count of reports and the state are
     * returned */
    [Q_STATE_SEEN] =
        "INSERT INTO crash_group_states(kind, signature, reports, first_version, first_key, "
        "last_version, last_key) VALUES (?1, ?2, 1, ?3, ?5, ?3, ?4) ON CONFLICT(kind, "
        "signature) DO UPDATE SET reports = reports + 1, first_version = CASE WHEN "
        "excluded.first_key < first_key OR first_key IS NULL THEN excluded.first_version ELSE "
        "first_version END, first_key = CASE "
        "WHEN excluded.first_key < first_key OR first_key IS NULL THEN excluded.first_key ELSE "
        "first_key END, last_version = CASE WHEN excluded.last_key > last_key OR last_key IS "
        "NULL THEN excluded.last_version ELSE last_version END, last_key = CASE WHEN "
        "excluded.last_key > last_key OR last_key IS NULL THEN excluded.last_key ELSE last_key "
        "END RETURNING reports, state",
    /* the group's ignore ended at its date (?3: now): unresolved, at the date */
    [Q_STATE_END_IGNORE] =
        "UPDATE crash_group_states SET state = 'unresolved', changed_at = ignore_until WHERE "
        "kind = ?1 AND signature = ?2 AND state = 'ignored' AND ignore_until > 0 AND "
        "ignore_until <= ?3 RETURNING ignore_until, ignore_reports",
    /* one more report of an ignored group; the one that makes its count
     * reopens it (?3: now) */
    [Q_STATE_IGNORE_COUNT] =
        "UPDATE crash_group_states SET ignore_seen = ignore_seen + 1, state = CASE WHEN "
        "ignore_reports > 0 AND ignore_seen + 1 >= ignore_reports THEN 'unresolved' ELSE state "
        "END, changed_at = CASE WHEN ignore_reports > 0 AND ignore_seen + 1 >= ignore_reports "
        "THEN ?3 ELSE changed_at END WHERE kind = ?1 AND signature = ?2 AND state = 'ignored' "
        "RETURNING state, ignore_until, ignore_reports",
    /* a report (version key ?4, NULL none) of a resolved group it reopens:
     * any report when resolved in no version, else one newer than the
     * resolution's (?3: now) */
    [Q_STATE_REGRESS] =
        "UPDATE crash_group_states SET state = 'regressed', changed_at = ?3 WHERE kind = ?1 AND "
        "signature = ?2 AND state = 'resolved' AND (resolved_in = '' OR (?4 IS NOT NULL AND "
        "(resolved_key IS NULL OR ?4 > resolved_key))) RETURNING coalesce(resolved_version, "
        "''), resolved_in",
    [Q_HISTORY_IN] =
        "INSERT INTO crash_group_history(kind, signature, at, from_state, to_state, by_role, "
        "reason, crash_id, resolved_in, version, ignore_until, ignore_reports, note) VALUES "
        "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    /* ?4: the crash, the newest to need the image (ids only grow) */
    [Q_REF_IN] = "INSERT INTO crash_image_refs(uuid, arch, name, crashes, last_crash_id) "
                 "VALUES (?1, ?2, ?3, 1, ?4) ON CONFLICT(uuid, arch) DO UPDATE SET crashes = "
                 "crashes + 1, last_crash_id = max(last_crash_id, excluded.last_crash_id), "
                 "name = CASE WHEN excluded.name <> '' THEN excluded.name ELSE name END "
                 "RETURNING id",
    [Q_CRASH_REFS_SET] = "UPDATE crashes SET refs = ?2 WHERE id = ?1",
    /* a crash no longer needs image ?1; ?2: the crash, gone. When it was
     * the newest to need it, the newest before it that does (crashes of one
     * app mostly need the same images: a short walk back) */
    [Q_REF_OUT] = "UPDATE crash_image_refs SET crashes = crashes - 1, last_crash_id = CASE "
                  "WHEN last_crash_id <> ?2 OR crashes = 1 THEN last_crash_id ELSE coalesce(("
                  "SELECT c.id FROM crashes c WHERE c.id < ?2 AND c.refs LIKE '%,' || ?1 || "
                  "',%' ORDER BY c.id DESC LIMIT 1), 0) END WHERE id = ?1",
};

/* Connection ci's statement q, prepared on first use; NULL with err set when
 * it cannot be. Reset it (stmt_done) before the connection goes back. */
static sqlite3_stmt *stmt(store_db *s, int ci, int q, symd_err *err)
{
    sqlite3_stmt **slot = &s->stmts[(size_t)ci * NQ + (size_t)q];
    if (!*slot && sqlite3_prepare_v3(s->conns[ci], sql_of[q], -1, SQLITE_PREPARE_PERSISTENT,
                                     slot, NULL) != SQLITE_OK) {
        db_fail(err, s->conns[ci], "preparing a statement");
        return NULL;
    }
    return *slot;
}

static void stmt_done(sqlite3_stmt *st)
{
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
}

static void finalize_all(store_db *s)
{
    for (size_t i = 0; s->ref_stmts && i < (size_t)s->nconns * REF_ROWS_MAX; i++)
        sqlite3_finalize(s->ref_stmts[i]);
    for (size_t i = 0; s->stmts && i < (size_t)s->nconns * NQ; i++)
        sqlite3_finalize(s->stmts[i]);
}

/* Runs a prepared statement that returns no row (or whose rows are not
 * read); SQLITE_DONE/ROW on success. */
static bool run(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    stmt_done(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW;
}

/* Connection ci's upsert of n (1..REF_ROWS_MAX) images a crash needs in one
 * statement: ?1 the crash (the newest to need them: ids only grow), then
 * (uuid, arch, name, system) per image from ?2; each row's id is returned.
 * An image is the OS's once any crash says so (a report without paths may
 * not know what another one says). */
static sqlite3_stmt *refs_stmt(store_db *s, int ci, size_t n, symd_err *err)
{
    sqlite3_stmt **slot = &s->ref_stmts[(size_t)ci * REF_ROWS_MAX + (n - 1)];
    if (*slot)
        return *slot;
    dynbuf q;
    dynbuf_init(&q, 8192);
#define ADDSTR(b, str) dynbuf_add((b), (str), strlen(str))
    bool ok = ADDSTR(&q, "INSERT INTO crash_image_refs(uuid, arch, name, system, crashes, "
                                "last_crash_id) VALUES ");
    for (size_t i = 0; i < n && ok; i++) {
        char row[80];
        snprintf(row, sizeof row, "%s(?%zu, ?%zu, ?%zu, ?%zu, 1, ?1)", i ? ", " : "",
                 2 + REF_PARAMS * i, 3 + REF_PARAMS * i, 4 + REF_PARAMS * i,
                 5 + REF_PARAMS * i);
        ok = dynbuf_add(&q, row, strlen(row));
    }
    ok = ok && ADDSTR(&q, " ON CONFLICT(uuid, arch) DO UPDATE SET crashes = crashes + "
                                 "1, last_crash_id = max(last_crash_id, excluded."
                                 "last_crash_id), name = CASE WHEN excluded.name <> '' THEN "
                                 "excluded.name ELSE name END, system = max(system, "
                                 "excluded.system) RETURNING id");
#undef ADDSTR
    if (!ok || sqlite3_prepare_v3(s->conns[ci], (const char *)q.data, (int)q.len,
                                  SQLITE_PREPARE_PERSISTENT, slot, NULL) != SQLITE_OK) {
        if (ok)
            db_fail(err, s->conns[ci], "preparing a statement");
        else
            symd_fail(err, SYMD_E_NOMEM, "out of memory");
        *slot = NULL;
    }
    dynbuf_free(&q);
    return *slot;
}

/* Runs a cached statement without bindings (transaction control). */
static bool run_q(store_db *s, int ci, int q)
{
    symd_err e = {0};
    sqlite3_stmt *st = stmt(s, ci, q, &e);
    return st && run(st);
}

/* ---- crash reports -------------------------------------------------------- */

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *v)
{
    if (v && *v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

/* A bug_type of 0 (the report has none) is stored as NULL. */
static void bind_bug_type(sqlite3_stmt *st, int i, int bug_type)
{
    if (bug_type)
        sqlite3_bind_int(st, i, bug_type);
    else
        sqlite3_bind_null(st, i);
}

static char *col_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? strdup((const char *)t) : NULL;
}

/* What a crash is counted under. */
typedef struct {
    const char *kind, *signature, *dims[3], *process;
    int64_t id, created_at;
} crash_key;

/* Counts crash k into (sign +1) or out of (sign -1) its group, the group's
 * day, its kind's day and its dimensions; out of a group it was the newest
 * or oldest crash of, the group's example, times, version and process are
 * read again from the crashes left (the crash row itself is gone or refiled
 * by then). An empty group goes; day and dimension counters stay at 0 (they
 * are bounded by groups, days and values, not by crashes; reads skip 0). */
static symd_status count_crash(store_db *s, int ci, const crash_key *k, int sign, symd_err *err)
{
    sqlite3 *db = s->conns[ci];
    int64_t day = store_day_of(k->created_at);
    sqlite3_stmt *st;
    if (sign > 0) {
        if (!(st = stmt(s, ci, Q_GROUP_IN, err)))
            return err->kind;
        sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, k->created_at);
        sqlite3_bind_int64(st, 4, k->id);
        bind_text_or_null(st, 5, k->dims[0]);
        bind_text_or_null(st, 6, k->process);
        if (!run(st))
            return db_fail(err, db, "counting the crash in its group");
    } else {
        if (!(st = stmt(s, ci, Q_GROUP_OUT, err)))
            return err->kind;
        sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        int64_t left = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        bool newest = rc == SQLITE_ROW && sqlite3_column_int64(st, 1) == k->id;
        bool oldest = rc == SQLITE_ROW && sqlite3_column_int64(st, 2) >= k->created_at;
        stmt_done(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return db_fail(err, db, "counting the crash out of its group");
        if (rc == SQLITE_ROW && left <= 0) {
            if (!(st = stmt(s, ci, Q_GROUP_DROP, err)))
                return err->kind;
            sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
            if (!run(st))
                return db_fail(err, db, "dropping an empty group");
        } else if (rc == SQLITE_ROW && (newest || oldest)) {
            sqlite3_stmt *n = stmt(s, ci, Q_GROUP_NEWEST, err);
            sqlite3_stmt *o = n ? stmt(s, ci, Q_GROUP_OLDEST, err) : NULL;
            sqlite3_stmt *set = o ? stmt(s, ci, Q_GROUP_SET, err) : NULL;
            if (!set)
                return err->kind;
            sqlite3_stmt *both[2] = {n, o};
            for (int i = 0; i < 2; i++) {
                sqlite3_bind_text(both[i], 1, k->kind, -1, SQLITE_STATIC);
                sqlite3_bind_text(both[i], 2, k->signature, -1, SQLITE_STATIC);
            }
            bool ok = sqlite3_step(n) == SQLITE_ROW && sqlite3_step(o) == SQLITE_ROW;
            if (ok) {
                sqlite3_bind_text(set, 1, k->kind, -1, SQLITE_STATIC);
                sqlite3_bind_text(set, 2, k->signature, -1, SQLITE_STATIC);
                sqlite3_bind_int64(set, 3, sqlite3_column_int64(n, 0));
                sqlite3_bind_int64(set, 4, sqlite3_column_int64(n, 1));
                sqlite3_bind_value(set, 5, sqlite3_column_value(n, 2));
                sqlite3_bind_value(set, 6, sqlite3_column_value(n, 3));
                sqlite3_bind_int64(set, 7, sqlite3_column_int64(o, 0));
                ok = run(set);
            }
            stmt_done(n);
            stmt_done(o);
            if (!ok)
                return db_fail(err, db, "reading a group's newest and oldest crash");
        }
    }
    /* the group's day, the kind's day */
    if (!(st = stmt(s, ci, sign > 0 ? Q_GROUP_DAY_IN : Q_GROUP_DAY_OUT, err)))
        return err->kind;
    sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, day);
    if (!run(st))
        return db_fail(err, db, "counting the crash's day");
    if (!(st = stmt(s, ci, sign > 0 ? Q_DAY_IN : Q_DAY_OUT, err)))
        return err->kind;
    sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, day);
    if (!run(st))
        return db_fail(err, db, "counting the crash's day");
    for (int d = 0; d < 3; d++) {
        if (!k->dims[d] || !*k->dims[d])
            continue;
        if (!(st = stmt(s, ci, sign > 0 ? Q_DIM_DAY_IN : Q_DIM_DAY_OUT, err)))
            return err->kind;
        sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, d);
        sqlite3_bind_text(st, 4, k->dims[d], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, day);
        if (!run(st))
            return db_fail(err, db, "counting the day of the crash's version, OS or device");
        if (!(st = stmt(s, ci, sign > 0 ? Q_DIM_IN : Q_DIM_OUT, err)))
            return err->kind;
        sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, d);
        sqlite3_bind_text(st, 4, k->dims[d], -1, SQLITE_STATIC);
        if (sign > 0) {
            sqlite3_bind_int64(st, 5, k->created_at);
            sqlite3_bind_int64(st, 6, k->id);
            if (!run(st))
                return db_fail(err, db, "counting the crash's version, OS or device");
            continue;
        }
        int rc = sqlite3_step(st);
        bool reset = rc == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0 &&
                     (sqlite3_column_int64(st, 1) == k->id ||
                      sqlite3_column_int64(st, 2) >= k->created_at);
        stmt_done(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return db_fail(err, db, "counting the crash's version, OS or device out");
        if (!reset)
            continue;
        if (!(st = stmt(s, ci, Q_DIM_RESET, err)))
            return err->kind;
        sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, d);
        sqlite3_bind_text(st, 4, k->dims[d], -1, SQLITE_STATIC);
        if (!run(st))
            return db_fail(err, db, "reading a version's, OS's or device's newest crash");
    }
    return SYMD_OK;
}

/* ---- a group's workflow (store.h) ---- */

static void column_text_cut(sqlite3_stmt *st, int i, char *dst, size_t cap);
static void row_to_status(sqlite3_stmt *st, int at, store_group_status *o);

/* Records one state change (connection ci, inside its transaction). */
static symd_status history_add(store_db *s, int ci, const store_history_row *h, symd_err *err)
{
    sqlite3_stmt *st = stmt(s, ci, Q_HISTORY_IN, err);
    if (!st)
        return err->kind;
    sqlite3_bind_text(st, 1, h->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, h->signature, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, h->at);
    sqlite3_bind_text(st, 4, store_state_name(h->from), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, store_state_name(h->to), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, h->by, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, h->reason, -1, SQLITE_STATIC);
    if (h->crash_id)
        sqlite3_bind_int64(st, 8, h->crash_id);
    sqlite3_bind_text(st, 9, h->resolved_in ? h->resolved_in : "", -1, SQLITE_STATIC);
    bind_text_or_null(st, 10, h->version);
    sqlite3_bind_int64(st, 11, h->ignore_until);
    sqlite3_bind_int64(st, 12, h->ignore_reports);
    bind_text_or_null(st, 13, h->note);
    if (!run(st))
        return db_fail(err, s->conns[ci], "recording a group's state change");
    return SYMD_OK;
}

/* Files report k into its group's workflow (connection ci, inside its
 * transaction): its app version widens the group's span of versions. A new
 * report (ev not NULL; a refile passes NULL) then decides what it does to
 * the group's state, each step one conditional update of the group's row,
 * recorded when it changes the state: an ignore whose date has passed ends
 * (at its date), an ignore counting reports counts it (and ends at its
 * count), and a resolved group regresses when the report is newer than its
 * resolution (store.h). *ev says what happened: the hook of group.new and
 * group.regressed. */
static symd_status group_state_on_report(store_db *s, int ci, const crash_key *k, int64_t now,
                                         store_group_event *ev, symd_err *err)
{
    sqlite3 *db = s->conns[ci];
    char key[APP_VERSION_KEY_MAX], fkey[APP_VERSION_KEY_MAX];
    bool versioned = app_version_key(k->dims[0], key) && app_version_first_key(k->dims[0], fkey);
    sqlite3_stmt *st = stmt(s, ci, Q_STATE_SEEN, err);
    if (!st)
        return err->kind;
    sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
    if (versioned) {
        sqlite3_bind_text(st, 3, k->dims[0], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, fkey, -1, SQLITE_STATIC);
    }
    int rc = sqlite3_step(st);
    int64_t reports = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    store_state state = rc == SQLITE_ROW
                            ? store_state_of((const char *)sqlite3_column_text(st, 1),
                                             (size_t)sqlite3_column_bytes(st, 1))
                            : STORE_STATE_UNRESOLVED;
    stmt_done(st);
    if (rc != SQLITE_ROW)
        return db_fail(err, db, "counting the report in its group's workflow");
    if (!ev)
        return SYMD_OK;
    ev->new_group = reports == 1;
    store_history_row h = {.kind = k->kind, .signature = k->signature, .by = "system"};
    /* an ignore whose date has passed: over at the date, before this report */
    if (!(st = stmt(s, ci, Q_STATE_END_IGNORE, err)))
        return err->kind;
    sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, now);
    if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        h.at = sqlite3_column_int64(st, 0);
        h.ignore_until = h.at;
        h.ignore_reports = sqlite3_column_int64(st, 1);
    }
    stmt_done(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_fail(err, db, "ending an ignore");
    if (rc == SQLITE_ROW) {
        h.from = STORE_STATE_IGNORED;
        h.to = state = STORE_STATE_UNRESOLVED;
        h.reason = "ignore_until_passed";
        ev->reopened = true;
        if (history_add(s, ci, &h, err) != SYMD_OK)
            return err->kind;
    }
    /* an ignore counting reports */
    if (state == STORE_STATE_IGNORED) {
        if (!(st = stmt(s, ci, Q_STATE_IGNORE_COUNT, err)))
            return err->kind;
        sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now);
        bool ended = false;
        if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            ended = strcmp((const char *)sqlite3_column_text(st, 0), "unresolved") == 0;
            h.ignore_until = sqlite3_column_int64(st, 1);
            h.ignore_reports = sqlite3_column_int64(st, 2);
        }
        stmt_done(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return db_fail(err, db, "counting a report of an ignored group");
        if (ended) {
            h.at = now;
            h.from = STORE_STATE_IGNORED;
            h.to = state = STORE_STATE_UNRESOLVED;
            h.reason = "ignore_reports_reached";
            h.crash_id = k->id;
            ev->reopened = true;
            if (history_add(s, ci, &h, err) != SYMD_OK)
                return err->kind;
        }
    }
    /* a regression */
    if (state == STORE_STATE_RESOLVED) {
        if (!(st = stmt(s, ci, Q_STATE_REGRESS, err)))
            return err->kind;
        sqlite3_bind_text(st, 1, k->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, k->signature, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now);
        if (versioned)
            sqlite3_bind_text(st, 4, key, -1, SQLITE_STATIC);
        char in[8] = "";
        if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            column_text_cut(st, 0, ev->resolved_version, sizeof ev->resolved_version);
            column_text_cut(st, 1, in, sizeof in);
        }
        stmt_done(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return db_fail(err, db, "regressing a resolved group");
        if (rc == SQLITE_ROW) {
            h = (store_history_row){.kind = k->kind, .signature = k->signature, .at = now,
                                    .from = STORE_STATE_RESOLVED, .to = STORE_STATE_REGRESSED,
                                    .by = "system", .reason = "regression", .crash_id = k->id,
                                    .resolved_in = in, .version = k->dims[0]};
            state = STORE_STATE_REGRESSED;
            ev->regressed = true;
            if (history_add(s, ci, &h, err) != SYMD_OK)
                return err->kind;
        }
    }
    ev->state = state;
    return SYMD_OK;
}

static symd_status crash_events_in_tx(store_db *s, int ci, const store_crash *c,
                                      const store_crash_image *imgs, size_t nimgs, int64_t id,
                                      int64_t now, symd_err *err);

static symd_status regressed_event_in_tx(store_db *s, int ci, const crash_key *k,
                                         const store_group_event *ev, int64_t now,
                                         symd_err *err);

/* A crash the insert did not store for a key already stored: *id is the
 * stored crash's and ev says duplicate. */
static symd_status first_copy_in_tx(store_db *s, int ci, const store_crash *c, int64_t *id,
                                    store_group_event *ev, symd_err *err)
{
    sqlite3_stmt *st = stmt(s, ci, Q_CRASH_FIRST_COPY, err);
    if (!st)
        return err->kind;
    bind_text_or_null(st, 1, c->idem_key);
    bind_text_or_null(st, 2, c->content_key);
    int rc = sqlite3_step(st);
    *id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    stmt_done(st);
    if (rc != SQLITE_ROW)
        return rc == SQLITE_DONE
                   ? symd_fail(err, SYMD_E_DB, "storing crash: no crash stored, none found")
                   : db_fail(err, s->conns[ci], "finding the crash's first copy");
    if (ev) {
        memset(ev, 0, sizeof *ev);
        ev->duplicate = true;
    }
    return SYMD_OK;
}

/* Stores one crash inside the caller's transaction (connection ci), and
 * records the webhook events it causes; *id is the new crash's, or the
 * stored copy's when a key says it is one (ev->duplicate). */
static symd_status put_crash_in_tx(store_db *s, int ci, const store_crash *c, int codec,
                                   size_t raw_len, const store_crash_image *imgs, size_t nimgs,
                                   int64_t *id, store_group_event *ev, symd_err *err)
{
    sqlite3 *db = s->conns[ci];
    int64_t now = store_now_ms();
    const store_crash_image *app = NULL;
    for (size_t i = 0; i < nimgs && !app; i++)
        if (imgs[i].app)
            app = &imgs[i];
    sqlite3_stmt *st = stmt(s, ci, Q_CRASH_INSERT, err);
    if (!st)
        return err->kind;
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_text(st, 2, c->kind ? c->kind : "crash", -1, SQLITE_STATIC);
    bind_bug_type(st, 3, c->bug_type);
    sqlite3_bind_text(st, 4, c->format, -1, SQLITE_STATIC);
    const char *texts[] = {c->process, c->bundle_id, c->app_version, c->os_version,
                           c->hardware_model, c->incident_id, c->exception_type};
    for (int i = 0; i < 7; i++)
        bind_text_or_null(st, 5 + i, texts[i]);
    sqlite3_bind_text(st, 12, c->signature, -1, SQLITE_STATIC);
    if (app) {
        sqlite3_bind_blob(st, 13, app->uuid, 16, SQLITE_STATIC);
        sqlite3_bind_text(st, 14, app->arch ? app->arch : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 15, app->name ? app->name : "", -1, SQLITE_STATIC);
    }
    sqlite3_bind_int(st, 16, c->part);
    bind_text_or_null(st, 17, c->grouping_rule);
    bind_text_or_null(st, 18, c->idem_key);
    bind_text_or_null(st, 19, c->content_key);
    if (!run(st))
        return db_fail(err, db, "storing crash");
    if (sqlite3_changes(db) == 0) /* a key is stored: the post is a copy */
        return first_copy_in_tx(s, ci, c, id, ev, err);
    *id = sqlite3_last_insert_rowid(db);
    if (!(st = stmt(s, ci, Q_ORIGINAL_INSERT, err)))
        return err->kind;
    sqlite3_bind_int64(st, 1, *id);
    sqlite3_bind_int(st, 2, codec);
    sqlite3_bind_int64(st, 3, (int64_t)raw_len);
    sqlite3_bind_blob64(st, 4, c->original_len ? (const void *)c->original : "",
                        c->original_len, SQLITE_STATIC);
    if (!run(st))
        return db_fail(err, db, "storing the crash's report");
    crash_key k = {c->kind ? c->kind : "crash", c->signature,
                   {c->app_version, c->os_version, c->hardware_model}, c->process, *id, now};
    symd_status r = count_crash(s, ci, &k, +1, err);
    if (r == SYMD_OK)
        r = group_state_on_report(s, ci, &k, now, ev, err);
    if (r == SYMD_OK && ev && ev->regressed)
        r = regressed_event_in_tx(s, ci, &k, ev, now, err);
    if (r != SYMD_OK)
        return r;
    /* the images it needs: counted, and listed in the crash (",3,17,") */
    dynbuf refs;
    dynbuf_init(&refs, (nimgs + 1) * 24);
    bool ok = dynbuf_add(&refs, ",", 1);
    for (size_t at = 0; at < nimgs && ok;) {
        size_t n = nimgs - at < REF_ROWS_MAX ? nimgs - at : REF_ROWS_MAX;
        sqlite3_stmt *ref = refs_stmt(s, ci, n, err);
        if (!ref) {
            dynbuf_free(&refs);
            return err->kind;
        }
        sqlite3_bind_int64(ref, 1, *id);
        for (size_t i = 0; i < n; i++) {
            const store_crash_image *im = &imgs[at + i];
            int b = (int)(2 + REF_PARAMS * i);
            sqlite3_bind_blob(ref, b, im->uuid, 16, SQLITE_STATIC);
            sqlite3_bind_text(ref, b + 1, im->arch ? im->arch : "", -1, SQLITE_STATIC);
            sqlite3_bind_text(ref, b + 2, im->name ? im->name : "", -1, SQLITE_STATIC);
            sqlite3_bind_int(ref, b + 3, im->system);
        }
        int rc;
        while (ok && (rc = sqlite3_step(ref)) == SQLITE_ROW) {
            char num[24];
            int k = snprintf(num, sizeof num, "%lld,", (long long)sqlite3_column_int64(ref, 0));
            ok = dynbuf_add(&refs, num, (size_t)k);
        }
        ok = ok && rc == SQLITE_DONE;
        stmt_done(ref);
        at += n;
    }
    if (ok && nimgs) {
        ok = (st = stmt(s, ci, Q_CRASH_REFS_SET, err)) != NULL;
        if (ok) {
            sqlite3_bind_int64(st, 1, *id);
            sqlite3_bind_text(st, 2, (const char *)refs.data, (int)refs.len, SQLITE_STATIC);
            ok = run(st);
        }
    }
    dynbuf_free(&refs);
    if (!ok)
        return db_fail(err, db, "storing the images the crash needs");
    return crash_events_in_tx(s, ci, c, imgs, nimgs, *id, now, err);
}

/* One crash waiting to be stored (group commit, below). */
struct crash_job {
    const store_crash *c;
    int codec;
    size_t raw_len;
    const store_crash_image *imgs;
    size_t nimgs;
    int64_t id;
    store_group_event *ev;
    symd_status r;
    symd_err err;
    bool done;
    struct crash_job *next;
};

/* Stores a batch of jobs in one transaction, each inside a savepoint of
 * its own so a crash that fails leaves the others stored; a commit that
 * fails fails them all. */
static void put_crash_batch(store_db *s, struct crash_job *batch)
{

    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_err e = {0};
    symd_status r = SYMD_OK;
    if (!run_q(s, ci, Q_BEGIN_WRITE))
        r = db_fail(&e, db, "starting to store the crash");
    for (struct crash_job *j = batch; j && r == SYMD_OK; j = j->next) {
        if (!run_q(s, ci, Q_SAVEPOINT)) {
            r = db_fail(&e, db, "starting to store the crash");
            break;
        }
        j->r = put_crash_in_tx(s, ci, j->c, j->codec, j->raw_len, j->imgs, j->nimgs, &j->id,
                               j->ev, &j->err);
        if (j->r != SYMD_OK) {
            run_q(s, ci, Q_ROLLBACK_TO);
            memset(j->ev, 0, sizeof *j->ev);
        }
        if (!run_q(s, ci, Q_RELEASE))
            r = db_fail(&e, db, "storing crash");
    }
    if (r == SYMD_OK && !run_q(s, ci, Q_COMMIT))
        r = db_fail(&e, db, "committing crash");
    if (r != SYMD_OK) {
        run_q(s, ci, Q_ROLLBACK);
        for (struct crash_job *j = batch; j; j = j->next) {
            j->r = r;
            j->err = e;
            memset(j->ev, 0, sizeof *j->ev);
        }
    }
    writer_put(s, ci);
}

#define CRASH_BATCH_MAX 64 /* crashes one transaction stores at most */

/* Crashes are stored by group commit: the first request to find no batch
 * under way stores every crash queued meanwhile in one transaction (up to
 * CRASH_BATCH_MAX), while the others wait for their own to be done. Each
 * request still returns only once its crash is committed, but concurrent
 * crashes share the pages a commit writes (counters, indexes), which is
 * most of a crash's cost. */
static symd_status sq_put_crash(store_db *s, const store_crash *c, int codec, size_t raw_len,
                                const store_crash_image *imgs, size_t nimgs, int64_t *id,
                                store_group_event *ev, symd_err *err)
{
    struct crash_job job = {c, codec, raw_len, imgs, nimgs, 0, ev, SYMD_OK, {0}, false, NULL};
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
        struct crash_job *batch = s->gc_head, *last = batch;
        for (int n = 1; n < CRASH_BATCH_MAX && last->next; n++)
            last = last->next;
        s->gc_head = last->next;
        if (!s->gc_head)
            s->gc_tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&s->gc_mu);
        put_crash_batch(s, batch);
        pthread_mutex_lock(&s->gc_mu);
        for (struct crash_job *j = batch, *next; j; j = next) {
            next = j->next; /* j may return (and go) as soon as done is seen */
            j->done = true;
        }
        s->gc_leading = false;
        pthread_cond_broadcast(&s->gc_cv);
    }
    pthread_mutex_unlock(&s->gc_mu);
    *id = job.id;
    if (job.r != SYMD_OK)
        *err = job.err;
    return job.r;
}

/* The counted fields of crash id (strings owned by *k's buffers); false
 * with *found false when there is no such crash. */
typedef struct {
    crash_key k;
    char *own[6];
    int bug_type;
    char *refs; /* ",3,17,": the crash_image_refs it counts in */
    char *rule; /* the grouping rule that filed it, NULL: the default */
} crash_row;

static void crash_row_free(crash_row *w)
{
    for (int i = 0; i < 6; i++)
        free(w->own[i]);
    free(w->refs);
    free(w->rule);
}

static symd_status read_crash_row(store_db *s, int ci, int64_t id, crash_row *w, bool *found,
                                  symd_err *err)
{
    memset(w, 0, sizeof *w);
    sqlite3_stmt *st = stmt(s, ci, Q_CRASH_ROW, err);
    if (!st)
        return err->kind;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (*found) {
        for (int i = 0; i < 6; i++)
            w->own[i] = col_dup(st, i < 2 ? i : i + 1);
        w->k.kind = w->own[0];
        w->k.signature = w->own[1];
        w->k.created_at = sqlite3_column_int64(st, 2);
        w->k.dims[0] = w->own[2];
        w->k.dims[1] = w->own[3];
        w->k.dims[2] = w->own[4];
        w->k.process = w->own[5];
        w->k.id = id;
        w->bug_type = sqlite3_column_type(st, 7) == SQLITE_NULL ? 0 : sqlite3_column_int(st, 7);
        w->refs = col_dup(st, 8);
        w->rule = col_dup(st, 9);
    }
    stmt_done(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_fail(err, s->conns[ci], "reading crash");
    if (*found && (!w->k.kind || !w->k.signature || !w->refs)) {
        crash_row_free(w);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    return SYMD_OK;
}

/* Deletes crash w (read by read_crash_row) and counts it out of everything,
 * inside the caller's transaction. */
static symd_status delete_in_tx(store_db *s, int ci, const crash_row *w, symd_err *err)
{
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = stmt(s, ci, Q_CRASH_DELETE, err);
    if (!st)
        return err->kind;
    sqlite3_bind_int64(st, 1, w->k.id);
    if (!run(st))
        return db_fail(err, db, "deleting crash");
    if (!(st = stmt(s, ci, Q_ORIGINAL_DELETE, err)))
        return err->kind;
    sqlite3_bind_int64(st, 1, w->k.id);
    if (!run(st))
        return db_fail(err, db, "deleting crash");
    symd_status r = count_crash(s, ci, &w->k, -1, err);
    if (r != SYMD_OK)
        return r;
    /* the images it needed (an image no crash needs keeps its row, at 0) */
    if (!(st = stmt(s, ci, Q_REF_OUT, err)))
        return err->kind;
    for (const char *p = w->refs; *p;) {
        char *end;
        long long ref = strtoll(p, &end, 10);
        if (end == p) { /* a separator */
            p++;
            continue;
        }
        p = end;
        sqlite3_bind_int64(st, 1, ref);
        sqlite3_bind_int64(st, 2, w->k.id);
        if (!run(st))
            return db_fail(err, db, "counting out the images the crash needed");
    }
    return SYMD_OK;
}

static symd_status sq_delete_crash(store_db *s, int64_t id, bool *deleted, symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    crash_row w = {0};
    *deleted = false;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "starting to delete the crash");
        goto out;
    }
    if ((r = read_crash_row(s, ci, id, &w, deleted, err)) == SYMD_OK && *deleted)
        r = delete_in_tx(s, ci, &w, err);
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing the delete");
    if (r != SYMD_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        *deleted = false;
    }
    crash_row_free(&w);
out:
    writer_put(s, ci);
    return r;
}

static symd_status sq_prune_crashes(store_db *s, int64_t before_ms, int64_t max_crashes,
                                    size_t batch, size_t *deleted, symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    sqlite3_stmt *st = NULL;
    int64_t *ids = NULL;
    *deleted = 0;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "starting to prune crashes");
        goto out;
    }
    /* How many go: those past the count limit (the total is the sum of the
     * day counters: no scan), and those older than the age limit, oldest
     * first (ids grow with time). */
    int64_t excess = 0;
    if (max_crashes > 0) {
        if (sqlite3_prepare_v2(db, "SELECT coalesce(sum(count), 0) FROM crash_days", -1, &st,
                               NULL) != SQLITE_OK ||
            sqlite3_step(st) != SQLITE_ROW) {
            r = db_fail(err, db, "counting crashes");
            goto rollback;
        }
        excess = sqlite3_column_int64(st, 0) - max_crashes;
        sqlite3_finalize(st);
        st = NULL;
    }
    if (!(ids = malloc((batch ? batch : 1) * sizeof *ids))) {
        r = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto rollback;
    }
    size_t n = 0;
    if (sqlite3_prepare_v2(db, "SELECT id, created_at FROM crashes ORDER BY id LIMIT ?1", -1,
                           &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "finding the oldest crashes");
        goto rollback;
    }
    sqlite3_bind_int64(st, 1, (int64_t)batch);
    while (n < batch && sqlite3_step(st) == SQLITE_ROW) {
        bool old = before_ms > 0 && sqlite3_column_int64(st, 1) < before_ms;
        if (!old && (int64_t)n >= excess)
            break;
        ids[n++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    st = NULL;
    for (size_t i = 0; i < n && r == SYMD_OK; i++) {
        crash_row w;
        bool found;
        if ((r = read_crash_row(s, ci, ids[i], &w, &found, err)) == SYMD_OK && found)
            r = delete_in_tx(s, ci, &w, err);
        if (found)
            crash_row_free(&w);
    }
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing the prune");
    if (r == SYMD_OK) {
        *deleted = n;
        goto out;
    }
rollback:
    sqlite3_finalize(st);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
    free(ids);
    writer_put(s, ci);
    return r;
}

static symd_status sq_update_crash(store_db *s, int64_t id, const char *signature,
                                   const char *kind, int bug_type, const char *rule,
                                   symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    crash_row w = {0};
    bool found;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "starting to refile the crash");
        goto out;
    }
    if ((r = read_crash_row(s, ci, id, &w, &found, err)) != SYMD_OK || !found)
        goto commit;
    bool moves = strcmp(w.k.kind, kind) != 0 || strcmp(w.k.signature, signature) != 0;
    bool same_rule = (!w.rule && !rule) || (w.rule && rule && strcmp(w.rule, rule) == 0);
    if (!moves && w.bug_type == bug_type && same_rule)
        goto commit;
    sqlite3_stmt *st = stmt(s, ci, Q_CRASH_REFILE, err);
    if (!st) {
        r = err->kind;
        goto commit;
    }
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, signature, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
    bind_bug_type(st, 4, bug_type);
    bind_text_or_null(st, 5, rule);
    if (!run(st)) {
        r = db_fail(err, db, "refiling crash");
        goto commit;
    }
    if (moves) {
        crash_key to = w.k;
        to.kind = kind;
        to.signature = signature;
        if ((r = count_crash(s, ci, &w.k, -1, err)) == SYMD_OK &&
            (r = count_crash(s, ci, &to, +1, err)) == SYMD_OK)
            r = group_state_on_report(s, ci, &to, store_now_ms(), NULL, err);
    }
commit:
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing the refile");
    if (r != SYMD_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    crash_row_free(&w);
out:
    writer_put(s, ci);
    return r;
}

/* Fills c from a CRASH_COLS row (original left NULL). */
static void row_to_crash(sqlite3_stmt *st, store_crash *c)
{
    memset(c, 0, sizeof *c);
    c->id = sqlite3_column_int64(st, 0);
    c->created_at = sqlite3_column_int64(st, 1);
    char **dst[] = {&c->format, &c->kind, &c->process, &c->bundle_id, &c->app_version,
                    &c->os_version, &c->hardware_model, &c->incident_id, &c->exception_type,
                    &c->signature};
    for (int i = 0; i < 10; i++)
        *dst[i] = col_dup(st, 2 + i);
    c->bug_type = sqlite3_column_type(st, 12) == SQLITE_NULL ? 0 : sqlite3_column_int(st, 12);
    const void *u = sqlite3_column_blob(st, 13);
    if (u && sqlite3_column_bytes(st, 13) == 16) {
        c->has_app = true;
        memcpy(c->app_uuid, u, 16);
        copy_text(c->app_arch, sizeof c->app_arch, sqlite3_column_text(st, 14));
        copy_text(c->app_name, sizeof c->app_name, sqlite3_column_text(st, 15));
        c->app_stored = sqlite3_column_int(st, 16) != 0;
    }
    c->grouping_rule = col_dup(st, 17);
}

static symd_status sq_get_crash(store_db *s, int64_t id, bool with_bytes, store_crash *c,
                                int *codec, size_t *raw_len, symd_err *err)
{
    memset(c, 0, sizeof *c);
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db,
                           "SELECT " CRASH_COLS ", o.codec, o.original_len, CASE WHEN ?2 THEN "
                           "o.original END, c.part FROM crashes c JOIN crash_originals o ON "
                           "o.id = c.id WHERE c.id = ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "loading crash");
        goto out;
    }
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, with_bytes);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        r = symd_fail(err, SYMD_E_NOT_FOUND, "no crash %lld", (long long)id);
        goto out;
    }
    if (rc != SQLITE_ROW) {
        r = db_fail(err, db, "loading crash");
        goto out;
    }
    row_to_crash(st, c);
    c->part = sqlite3_column_int(st, CRASH_NCOLS + 3);
    *codec = sqlite3_column_int(st, CRASH_NCOLS);
    *raw_len = (size_t)sqlite3_column_int64(st, CRASH_NCOLS + 1);
    if (with_bytes) {
        const void *b = sqlite3_column_blob(st, CRASH_NCOLS + 2);
        int n = sqlite3_column_bytes(st, CRASH_NCOLS + 2);
        c->original = malloc(n > 0 ? (size_t)n : 1);
        if (!c->original) {
            r = symd_fail(err, SYMD_E_NOMEM, "out of memory");
            goto out;
        }
        if (n > 0)
            memcpy(c->original, b, (size_t)n);
        c->original_len = n > 0 ? (size_t)n : 0;
    }
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    if (r != SYMD_OK)
        store_crash_free(c);
    return r;
}

/* The filters of f in SQL on crashes c (?2 .. ?7 and ?10 bound by
 * bind_filter; ?8 and ?9 are the callers' limits). */
static void filter_sql(dynbuf *q, const store_crash_filter *f)
{
    static const char *const conds[] = {
        " AND instr(lower(coalesce(c.process, '') || ' ' || coalesce(c.bundle_id, '') || ' ' || "
        "c.signature || ' ' || coalesce(c.exception_type, '') || ' ' || coalesce(c.app_version, "
        "'') || ' ' || coalesce(c.incident_id, '')), lower(?2)) > 0",
        " AND c.kind = ?3", " AND c.signature = ?4", " AND c.app_version = ?5",
        " AND c.os_version = ?6", " AND c.hardware_model = ?7", " AND c.format = ?10"};
    const char *v[] = {f->query, f->kind, f->signature, f->app_version, f->os_version,
                       f->hardware_model, f->format};
    for (int i = 0; i < 7; i++)
        if (v[i] && *v[i])
            dynbuf_add(q, conds[i], strlen(conds[i]));
}

static void bind_filter(sqlite3_stmt *st, const store_crash_filter *f)
{
    const char *v[] = {f->query, f->kind, f->signature, f->app_version, f->os_version,
                       f->hardware_model};
    for (int i = 0; i < 6; i++)
        if (v[i] && *v[i])
            sqlite3_bind_text(st, 2 + i, v[i], -1, SQLITE_STATIC);
    if (f->format && *f->format)
        sqlite3_bind_text(st, 10, f->format, -1, SQLITE_STATIC);
}

static symd_status sq_list_crashes(store_db *s, const store_crash_filter *f, int64_t before_id,
                                   size_t limit, store_crash *out, size_t *n, bool *more,
                                   symd_err *err)
{
    *n = 0;
    *more = false;
    dynbuf q;
    dynbuf_init(&q, 4096);
    static const char head[] = "SELECT " CRASH_COLS " FROM crashes c WHERE (?1 = 0 OR c.id < ?1)";
    static const char tail[] = " ORDER BY c.id DESC LIMIT ?8";
    dynbuf_add(&q, head, sizeof head - 1);
    filter_sql(&q, f);
    if (!dynbuf_add(&q, tail, sizeof tail - 1)) {
        dynbuf_free(&q);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db, (const char *)q.data, -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "listing crashes");
        goto out;
    }
    sqlite3_bind_int64(st, 1, before_id);
    bind_filter(st, f);
    sqlite3_bind_int64(st, 8, (int64_t)limit + 1);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == limit) {
            *more = true;
            break;
        }
        row_to_crash(st, &out[(*n)++]);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = db_fail(err, db, "listing crashes");
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    dynbuf_free(&q);
    return r;
}

static symd_status sq_crash_groups(store_db *s, const store_crash_filter *f, size_t limit,
                                   store_crash_group *out, size_t *n, symd_err *err)
{
    *n = 0;
    int dim, ndims = store_filter_dims(f, &dim);
    if (f->format && *f->format)
        ndims = 2; /* no counters per format: the crashes themselves */
    bool query = f->query && *f->query, kind = f->kind && *f->kind,
         sig = f->signature && *f->signature;
    /* the workflow's filters, on crash_group_states s */
    char wf[256], new_lo[APP_VERSION_KEY_MAX], new_hi[APP_VERSION_KEY_MAX];
    bool new_in = f->new_in && app_version_first_range(f->new_in, new_lo, new_hi);
    store_states_sql(f->states, wf, sizeof wf);
    if (new_in)
        snprintf(wf + strlen(wf), sizeof wf - strlen(wf),
                 " AND s.first_key >= ?11 AND s.first_key < ?12");
    const char *sql;
    char buf[2048];
    if (ndims == 0) { /* the group counters */
        snprintf(buf, sizeof buf,
                 "SELECT g.kind, g.signature, g.count, g.first_seen, g.last_seen, g.example_id, "
                 "g.app_version, g.process, " STORE_STATUS_COLS " FROM crash_groups g LEFT JOIN "
                 "crash_group_states s ON s.kind = g.kind AND s.signature = g.signature WHERE 1 "
                 "%s %s %s %s ORDER BY g.count DESC, g.last_seen DESC LIMIT ?9",
                 kind ? "AND g.kind = ?3" : "", sig ? "AND g.signature = ?4" : "",
                 query ? "AND instr(lower(g.signature || ' ' || coalesce(g.process, '')), "
                         "lower(?2)) > 0"
                       : "",
                 wf);
        sql = buf;
    } else if (ndims == 1) { /* one dimension's counters */
        snprintf(buf, sizeof buf,
                 "SELECT d.kind, d.signature, d.count, d.first_seen, d.last_seen, d.example_id, "
                 "x.app_version, x.process, " STORE_STATUS_COLS " FROM crash_group_dims d JOIN "
                 "crash_groups g ON g.kind = d.kind AND g.signature = d.signature LEFT JOIN "
                 "crash_group_states s ON s.kind = d.kind AND s.signature = d.signature LEFT "
                 "JOIN crashes x ON x.id = d.example_id WHERE d.dim = %d AND d.value = ?%d AND "
                 "d.count > 0 %s %s %s %s ORDER BY d.count DESC, d.last_seen DESC LIMIT ?9",
                 dim, 5 + dim, kind ? "AND d.kind = ?3" : "", sig ? "AND d.signature = ?4" : "",
                 query ? "AND instr(lower(g.signature || ' ' || coalesce(g.process, '')), "
                         "lower(?2)) > 0"
                       : "",
                 wf);
        sql = buf;
    } else { /* several: the matching crashes themselves */
        dynbuf q;
        dynbuf_init(&q, 4096);
        static const char head[] =
            "SELECT g.k, g.sg, g.n, g.f, g.l, g.e, (SELECT x.app_version FROM crashes x WHERE "
            "x.id = g.e), (SELECT x.process FROM crashes x WHERE x.id = g.e), " STORE_STATUS_COLS
            " FROM (SELECT c.kind k, c.signature sg, count(*) n, min(c.created_at) f, "
            "max(c.created_at) l, max(c.id) e FROM crashes c WHERE ?1 = 0";
        static const char tail[] =
            " GROUP BY c.kind, c.signature) g LEFT JOIN crash_group_states s ON s.kind = g.k "
            "AND s.signature = g.sg WHERE 1";
        static const char order[] = " ORDER BY g.n DESC, g.l DESC LIMIT ?9";
        store_crash_filter g = *f;
        g.query = NULL; /* a group's query matches signature or process */
        dynbuf_add(&q, head, sizeof head - 1);
        filter_sql(&q, &g);
        if (query) {
            static const char qc[] = " AND instr(lower(c.signature || ' ' || "
                                     "coalesce(c.process, '')), lower(?2)) > 0";
            dynbuf_add(&q, qc, sizeof qc - 1);
        }
        if (!dynbuf_add(&q, tail, sizeof tail - 1) || !dynbuf_add(&q, wf, strlen(wf)) ||
            !dynbuf_add(&q, order, sizeof order - 1) || q.len >= sizeof buf) {
            dynbuf_free(&q);
            return symd_fail(err, SYMD_E_NOMEM, "out of memory");
        }
        memcpy(buf, q.data, q.len + 1);
        dynbuf_free(&q);
        sql = buf;
    }
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "grouping crashes");
        goto out;
    }
    sqlite3_bind_int64(st, 1, 0);
    bind_filter(st, f);
    sqlite3_bind_int64(st, 9, (int64_t)limit);
    if (new_in) {
        sqlite3_bind_text(st, 11, new_lo, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 12, new_hi, -1, SQLITE_STATIC);
    }
    int rc;
    while (*n < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_crash_group *g = &out[(*n)++];
        memset(g, 0, sizeof *g);
        g->kind = col_dup(st, 0);
        g->signature = col_dup(st, 1);
        g->count = sqlite3_column_int64(st, 2);
        g->first_seen = sqlite3_column_int64(st, 3);
        g->last_seen = sqlite3_column_int64(st, 4);
        g->example_id = sqlite3_column_int64(st, 5);
        g->app_version = col_dup(st, 6);
        g->process = col_dup(st, 7);
        row_to_status(st, 8, &g->status);
    }
    if (*n < limit && rc != SQLITE_DONE)
        r = db_fail(err, db, "grouping crashes");
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

/* Steps st's rows of (day, count) into days[day - from_day] (days outside
 * [from_day, from_day + ndays) skipped); false when a step fails. */
static bool read_trend_days(sqlite3_stmt *st, int64_t from_day, size_t ndays, int64_t *days)
{
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t d = sqlite3_column_int64(st, 0) - from_day;
        if (d >= 0 && (size_t)d < ndays)
            days[d] = sqlite3_column_int64(st, 1);
    }
    return rc == SQLITE_DONE;
}

static symd_status sq_crash_trend(store_db *s, const char *kind, const char *signature,
                                  int64_t from_day, size_t ndays, int64_t *days, symd_err *err)
{
    memset(days, 0, ndays * sizeof *days);
    const char *sql =
        signature ? "SELECT day, count FROM crash_group_days WHERE kind = ?1 AND signature = ?2 "
                    "AND day >= ?3 AND day < ?4"
        : kind    ? "SELECT day, count FROM crash_days WHERE kind = ?1 AND day >= ?3 AND day < ?4"
                  : "SELECT day, sum(count) FROM crash_days WHERE day >= ?3 AND day < ?4 GROUP BY "
                    "day";
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "reading the trend");
        goto out;
    }
    if (kind)
        sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    if (signature)
        sqlite3_bind_text(st, 2, signature, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, from_day);
    sqlite3_bind_int64(st, 4, from_day + (int64_t)ndays);
    if (!read_trend_days(st, from_day, ndays, days))
        r = db_fail(err, db, "reading the trend");
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

static symd_status sq_crash_trend_filtered(store_db *s, const store_crash_filter *f,
                                           int64_t from_day, size_t ndays, int64_t *days,
                                           symd_err *err)
{
    memset(days, 0, ndays * sizeof *days);
    int dim, ndims = store_filter_dims(f, &dim);
    if (f->format && *f->format)
        ndims = 2;
    bool kind = f->kind && *f->kind, sig = f->signature && *f->signature;
    char wf[256], new_lo[APP_VERSION_KEY_MAX], new_hi[APP_VERSION_KEY_MAX];
    bool new_in = f->new_in && app_version_first_range(f->new_in, new_lo, new_hi);
    store_states_sql(f->states, wf, sizeof wf);
    if (new_in)
        snprintf(wf + strlen(wf), sizeof wf - strlen(wf),
                 " AND s.first_key >= ?11 AND s.first_key < ?12");
    dynbuf q;
    dynbuf_init(&q, 4096);
    char head[1024];
    if (ndims <= 1) { /* a group's (or a value's) day counters */
        const char *t = ndims ? "crash_dim_days" : "crash_group_days";
        snprintf(head, sizeof head,
                 "SELECT d.day, sum(d.count) FROM %s d LEFT JOIN crash_group_states s ON s.kind "
                 "= d.kind AND s.signature = d.signature WHERE d.day >= ?13 AND d.day < ?14%s%s",
                 t, kind ? " AND d.kind = ?3" : "", sig ? " AND d.signature = ?4" : "");
        dynbuf_add(&q, head, strlen(head));
        if (ndims) {
            snprintf(head, sizeof head, " AND d.dim = %d AND d.value = ?%d", dim, 5 + dim);
            dynbuf_add(&q, head, strlen(head));
        }
        dynbuf_add(&q, wf, strlen(wf));
        dynbuf_add(&q, " GROUP BY d.day", 15);
    } else { /* the matching crashes of those days */
        snprintf(head, sizeof head,
                 "SELECT c.created_at / 86400000, count(*) FROM crashes c LEFT JOIN "
                 "crash_group_states s ON s.kind = c.kind AND s.signature = c.signature WHERE "
                 "c.created_at >= ?13 * 86400000 AND c.created_at < ?14 * 86400000");
        dynbuf_add(&q, head, strlen(head));
        filter_sql(&q, f);
        dynbuf_add(&q, wf, strlen(wf));
        dynbuf_add(&q, " GROUP BY 1", 11);
    }
    if (!dynbuf_add(&q, "", 1)) {
        dynbuf_free(&q);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db, (const char *)q.data, -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "reading the trend");
        goto out;
    }
    bind_filter(st, f);
    if (new_in) {
        sqlite3_bind_text(st, 11, new_lo, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 12, new_hi, -1, SQLITE_STATIC);
    }
    sqlite3_bind_int64(st, 13, from_day);
    sqlite3_bind_int64(st, 14, from_day + (int64_t)ndays);
    if (!read_trend_days(st, from_day, ndays, days))
        r = db_fail(err, db, "reading the trend");
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    dynbuf_free(&q);
    return r;
}

/* The values of dim over crash_group_dims: one group's (signature) or every
 * group's (of kind, or all) summed; a page after (count, value). */
static symd_status sq_dim_values(store_db *s, const char *kind, const char *signature,
                                 store_dim dim, const store_dim_after *after, size_t limit,
                                 store_dim_count *out, size_t *n, bool *more, symd_err *err)
{
    *n = 0;
    *more = false;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db,
                           "SELECT value, c FROM (SELECT value, sum(count) c FROM "
                           "crash_group_dims WHERE dim = ?3 AND count > 0 AND (?1 IS NULL OR "
                           "kind = ?1) AND (?2 IS NULL OR signature = ?2) GROUP BY value) WHERE "
                           "?5 IS NULL OR c < ?5 OR (c = ?5 AND value > ?6) ORDER BY c DESC, "
                           "value LIMIT ?4",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "reading a dimension's values");
        goto out;
    }
    bind_text_or_null(st, 1, kind);
    bind_text_or_null(st, 2, signature);
    sqlite3_bind_int(st, 3, (int)dim);
    sqlite3_bind_int64(st, 4, (int64_t)limit + 1);
    if (after) {
        sqlite3_bind_int64(st, 5, after->count);
        sqlite3_bind_text(st, 6, after->value, -1, SQLITE_STATIC);
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == limit) {
            *more = true;
            break;
        }
        out[*n].value = col_dup(st, 0);
        out[*n].count = sqlite3_column_int64(st, 1);
        (*n)++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = db_fail(err, db, "reading a dimension's values");
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

/* A text column into dst, cut as store_text_cut does. */
static void column_text_cut(sqlite3_stmt *st, int i, char *dst, size_t cap)
{
    store_text_cut(dst, cap, (const char *)sqlite3_column_text(st, i),
                   (size_t)sqlite3_column_bytes(st, i));
}

/* Fills o from STORE_STATUS_COLS at column at. */
static void row_to_status(sqlite3_stmt *st, int at, store_group_status *o)
{
    memset(o, 0, sizeof *o);
    o->state = store_state_of((const char *)sqlite3_column_text(st, at),
                              (size_t)sqlite3_column_bytes(st, at));
    o->changed_at = sqlite3_column_int64(st, at + 1);
    column_text_cut(st, at + 2, o->resolved_in, sizeof o->resolved_in);
    column_text_cut(st, at + 3, o->resolved_version, sizeof o->resolved_version);
    o->ignore_until = sqlite3_column_int64(st, at + 4);
    o->ignore_reports = sqlite3_column_int64(st, at + 5);
    o->ignore_seen = sqlite3_column_int64(st, at + 6);
    column_text_cut(st, at + 7, o->first_version, sizeof o->first_version);
    column_text_cut(st, at + 8, o->last_version, sizeof o->last_version);
    o->reports = sqlite3_column_int64(st, at + 9);
}

/* Prepares sql on connection ci, binds kind (?1) and signature (?2). */
static sqlite3_stmt *prep_group(sqlite3 *db, const char *sql, const char *kind,
                                const char *signature)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, signature, -1, SQLITE_STATIC);
    return st;
}

static symd_status sq_set_group_state(store_db *s, const char *kind, const char *signature,
                                      const store_state_change *ch, const char *version_key,
                                      store_group_status *out, bool *found, symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    sqlite3_stmt *st = NULL;
    const char *in = ch->state == STORE_STATE_RESOLVED && ch->resolved_in ? ch->resolved_in : "";
    bool ignored = ch->state == STORE_STATE_IGNORED;
    *found = false;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "starting to set a group's state");
        goto out;
    }
    /* a group some crash is filed under; its row made when it has none */
    if (!(st = prep_group(db, "SELECT 1 FROM crash_groups WHERE kind = ?1 AND signature = ?2",
                          kind, signature)))
        goto fail;
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        goto fail;
    if (!*found)
        goto commit;
    if (!(st = prep_group(db, "INSERT INTO crash_group_states(kind, signature) VALUES (?1, ?2) "
                              "ON CONFLICT DO NOTHING",
                          kind, signature)) ||
        sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st);
    if (!(st = prep_group(db, "SELECT state FROM crash_group_states WHERE kind = ?1 AND "
                              "signature = ?2",
                          kind, signature)) ||
        sqlite3_step(st) != SQLITE_ROW)
        goto fail;
    store_state from = store_state_of((const char *)sqlite3_column_text(st, 0),
                                      (size_t)sqlite3_column_bytes(st, 0));
    sqlite3_finalize(st);
    /* "next": above the newest version the group was reported in so far */
    if (!(st = prep_group(db,
                          "UPDATE crash_group_states SET state = ?3, resolved_in = ?4, "
                          "resolved_version = CASE ?4 WHEN 'next' THEN last_version WHEN "
                          "'version' THEN ?5 END, resolved_key = CASE ?4 WHEN 'next' THEN "
                          "last_key WHEN 'version' THEN ?6 END, ignore_until = ?7, "
                          "ignore_reports = ?8, ignore_seen = 0, changed_at = ?9 WHERE kind = "
                          "?1 AND signature = ?2 RETURNING coalesce(resolved_version, '')",
                          kind, signature)))
        goto fail;
    int64_t now = store_now_ms();
    sqlite3_bind_text(st, 3, store_state_name(ch->state), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, in, -1, SQLITE_STATIC);
    if (strcmp(in, "version") == 0) {
        sqlite3_bind_text(st, 5, ch->version, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, version_key, -1, SQLITE_STATIC);
    }
    sqlite3_bind_int64(st, 7, ignored ? ch->ignore_until : 0);
    sqlite3_bind_int64(st, 8, ignored ? ch->ignore_reports : 0);
    sqlite3_bind_int64(st, 9, now);
    if (sqlite3_step(st) != SQLITE_ROW)
        goto fail;
    char version[128];
    column_text_cut(st, 0, version, sizeof version);
    sqlite3_finalize(st);
    st = NULL;
    store_history_row h = {kind, signature, now, from, ch->state, ch->by ? ch->by : "", "api", 0,
                           in, *in ? version : NULL, ignored ? ch->ignore_until : 0,
                           ignored ? ch->ignore_reports : 0, ch->note};
    if ((r = history_add(s, ci, &h, err)) != SYMD_OK)
        goto rollback;
    if (!(st = prep_group(db, "SELECT " STORE_STATUS_COLS " FROM crash_group_states s WHERE "
                              "s.kind = ?1 AND s.signature = ?2",
                          kind, signature)) ||
        sqlite3_step(st) != SQLITE_ROW)
        goto fail;
    row_to_status(st, 0, out);
    sqlite3_finalize(st);
    st = NULL;
commit:
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "committing a group's state");
        goto rollback;
    }
    goto out;
fail:
    r = db_fail(err, db, "setting a group's state");
rollback:
    sqlite3_finalize(st);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    *found = false;
out:
    writer_put(s, ci);
    return r;
}

/* Fills o from STORE_HISTORY_COLS. */
static void row_to_change(sqlite3_stmt *st, store_group_change *o)
{
    memset(o, 0, sizeof *o);
    o->id = sqlite3_column_int64(st, 0);
    o->at = sqlite3_column_int64(st, 1);
    o->from = store_state_of((const char *)sqlite3_column_text(st, 2),
                             (size_t)sqlite3_column_bytes(st, 2));
    o->to = store_state_of((const char *)sqlite3_column_text(st, 3),
                           (size_t)sqlite3_column_bytes(st, 3));
    column_text_cut(st, 4, o->by, sizeof o->by);
    column_text_cut(st, 5, o->reason, sizeof o->reason);
    o->crash_id = sqlite3_column_int64(st, 6);
    column_text_cut(st, 7, o->resolved_in, sizeof o->resolved_in);
    column_text_cut(st, 8, o->version, sizeof o->version);
    o->ignore_until = sqlite3_column_int64(st, 9);
    o->ignore_reports = sqlite3_column_int64(st, 10);
    column_text_cut(st, 11, o->note, sizeof o->note);
}

static symd_status sq_group_history(store_db *s, const char *kind, const char *signature,
                                    int64_t before_id, size_t limit, store_group_change *out,
                                    size_t *n, bool *more, symd_err *err)
{
    *n = 0;
    *more = false;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    sqlite3_stmt *st = prep_group(db,
                                  "SELECT " STORE_HISTORY_COLS " FROM crash_group_history h "
                                  "WHERE h.kind = ?1 AND h.signature = ?2 AND (?3 = 0 OR h.id < "
                                  "?3) ORDER BY h.id DESC LIMIT ?4",
                                  kind, signature);
    if (!st) {
        r = db_fail(err, db, "reading a group's history");
        goto out;
    }
    sqlite3_bind_int64(st, 3, before_id);
    sqlite3_bind_int64(st, 4, (int64_t)limit + 1);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == limit) {
            *more = true;
            break;
        }
        row_to_change(st, &out[(*n)++]);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = db_fail(err, db, "reading a group's history");
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

static symd_status sq_end_ignores(store_db *s, int64_t now_ms, size_t *ended, symd_err *err)
{
    *ended = 0;
    static const char due[] = "state = 'ignored' AND ignore_until > 0 AND ignore_until <= ?1";
    /* a read first: nothing due costs no write */
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT 1 FROM crash_group_states WHERE %s LIMIT 1", due);
    int rc = SQLITE_ERROR;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, now_ms);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    symd_status r = rc == SQLITE_ROW || rc == SQLITE_DONE
                        ? SYMD_OK
                        : db_fail(err, db, "finding ignores to end");
    conn_put(s, ci);
    if (rc != SQLITE_ROW)
        return r;
    ci = writer_get(s);
    db = s->conns[ci];
    st = NULL;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "starting to end ignores");
        goto out;
    }
    snprintf(sql, sizeof sql,
             "UPDATE crash_group_states SET state = 'unresolved', changed_at = ignore_until "
             "WHERE %s RETURNING kind, signature, "
             "ignore_until, ignore_reports",
             due);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "ending ignores");
        goto rollback;
    }
    sqlite3_bind_int64(st, 1, now_ms);
    /* RETURNING rows are all computed by the first step: the history
     * inserts below do not disturb the update */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && r == SYMD_OK) {
        store_history_row h = {.kind = (const char *)sqlite3_column_text(st, 0),
                               .signature = (const char *)sqlite3_column_text(st, 1),
                               .at = sqlite3_column_int64(st, 2),
                               .from = STORE_STATE_IGNORED, .to = STORE_STATE_UNRESOLVED,
                               .by = "system", .reason = "ignore_until_passed",
                               .ignore_until = sqlite3_column_int64(st, 2),
                               .ignore_reports = sqlite3_column_int64(st, 3)};
        r = history_add(s, ci, &h, err);
        (*ended)++;
    }
    if (r == SYMD_OK && rc != SQLITE_DONE)
        r = db_fail(err, db, "ending ignores");
    sqlite3_finalize(st);
    st = NULL;
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing ended ignores");
    if (r == SYMD_OK)
        goto out;
rollback:
    sqlite3_finalize(st);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    *ended = 0;
out:
    writer_put(s, ci);
    return r;
}

/* Gives every group without a workflow row one (a database from before
 * schema 8): unresolved, its span of versions from its version counters,
 * its reports the crashes stored. Costs a scan of the groups at open. */
static symd_status backfill_states(sqlite3 *db, symd_err *err)
{
    sqlite3_stmt *rd = NULL, *ins = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(err, db, "starting to give groups their states");
    if (sqlite3_prepare_v2(db,
                           "SELECT g.kind, g.signature, g.count, d.value FROM crash_groups g "
                           "LEFT JOIN crash_group_dims d ON d.kind = g.kind AND d.signature = "
                           "g.signature AND d.dim = 0 AND d.count > 0 WHERE NOT EXISTS (SELECT "
                           "1 FROM crash_group_states s WHERE s.kind = g.kind AND s.signature = "
                           "g.signature) ORDER BY g.kind, g.signature",
                           -1, &rd, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO crash_group_states(kind, signature, reports, "
                           "first_version, first_key, last_version, last_key) VALUES (?1, ?2, "
                           "?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
                           -1, &ins, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "giving groups their states");
        goto done;
    }
    char *kind = NULL, *sig = NULL;
    bool have = false;
    int64_t count = 0;
    store_version_span sp;
    for (;;) {
        int rc = sqlite3_step(rd);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            r = db_fail(err, db, "giving groups their states");
            break;
        }
        const char *k = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(rd, 0) : "";
        const char *g = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(rd, 1) : "";
        bool same = rc == SQLITE_ROW && have && strcmp(k, kind) == 0 && strcmp(g, sig) == 0;
        if (have && !same) { /* the group before is complete */
            sqlite3_bind_text(ins, 1, kind, -1, SQLITE_STATIC);
            sqlite3_bind_text(ins, 2, sig, -1, SQLITE_STATIC);
            sqlite3_bind_int64(ins, 3, count);
            for (int i = 0; i < 4; i++) {
                const char *v = i == 0 ? sp.first : i == 1 ? sp.first_key : i == 2 ? sp.last
                                                                                   : sp.last_key;
                if (*v)
                    sqlite3_bind_text(ins, 4 + i, v, -1, SQLITE_STATIC);
            }
            bool ok = sqlite3_step(ins) == SQLITE_DONE;
            stmt_done(ins);
            if (!ok) {
                r = db_fail(err, db, "giving groups their states");
                break;
            }
        }
        if (rc == SQLITE_DONE)
            break;
        if (!same) {
            free(kind);
            free(sig);
            kind = strdup(k);
            sig = strdup(g);
            if (!kind || !sig) {
                r = symd_fail(err, SYMD_E_NOMEM, "out of memory");
                break;
            }
            have = true;
            count = sqlite3_column_int64(rd, 2);
            memset(&sp, 0, sizeof sp);
        }
        if (sqlite3_column_type(rd, 3) != SQLITE_NULL)
            store_span_add(&sp, (const char *)sqlite3_column_text(rd, 3),
                           (size_t)sqlite3_column_bytes(rd, 3));
    }
    free(kind);
    free(sig);
done:
    sqlite3_finalize(rd);
    sqlite3_finalize(ins);
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing the groups' states");
    if (r != SYMD_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return r;
}

/* The refs a missing image is: counted by some crash, and no slice of its
 * UUID stored under the arch they need. */
#define MISSING_WHERE                                                                      \
    "r.crashes > 0 AND NOT EXISTS (SELECT 1 FROM images i WHERE i.uuid = r.uuid AND "     \
    "(r.arch = '' OR i.arch = r.arch))"

static symd_status sq_missing_images(store_db *s, store_missing_which which, size_t limit,
                                     store_missing *out, size_t *n, symd_err *err)
{
    *n = 0;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    /* the newest crash needing it by its key: its versions and app image */
    if (sqlite3_prepare_v2(db,
                           "SELECT r.uuid, r.arch, r.name, r.crashes, r.last_crash_id, "
                           "(SELECT group_concat(i.arch, ',') FROM images i WHERE i.uuid = "
                           "r.uuid), r.system, c.app_version, c.os_version, c.app_uuid = r.uuid "
                           "AND c.app_arch = r.arch FROM crash_image_refs r LEFT JOIN crashes c "
                           "ON c.id = r.last_crash_id WHERE " MISSING_WHERE " AND (?2 < 0 OR "
                           "r.system = ?2) ORDER BY r.crashes DESC, r.last_crash_id DESC, "
                           "r.uuid, r.arch LIMIT ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "listing missing images");
        goto out;
    }
    sqlite3_bind_int64(st, 1, (int64_t)limit);
    sqlite3_bind_int(st, 2,
                     which == STORE_MISSING_APP ? 0 : which == STORE_MISSING_SYSTEM ? 1 : -1);
    int rc;
    while (*n < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_missing *m = &out[(*n)++];
        memset(m, 0, sizeof *m);
        const void *u = sqlite3_column_blob(st, 0);
        if (u && sqlite3_column_bytes(st, 0) == 16)
            memcpy(m->uuid, u, 16);
        column_text_cut(st, 1, m->arch, sizeof m->arch);
        column_text_cut(st, 2, m->name, sizeof m->name);
        m->crashes = sqlite3_column_int64(st, 3);
        m->last_crash_id = sqlite3_column_int64(st, 4);
        const char *others = (const char *)sqlite3_column_text(st, 5);
        store_missing_other_archs(m, others, others ? strlen(others) : 0);
        m->system = sqlite3_column_int(st, 6) != 0;
        column_text_cut(st, 7, m->app_version, sizeof m->app_version);
        column_text_cut(st, 8, m->os_version, sizeof m->os_version);
        m->app = sqlite3_column_int(st, 9) != 0;
    }
    if (*n < limit && rc != SQLITE_DONE)
        r = db_fail(err, db, "listing missing images");
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

static symd_status sq_missing_system(store_db *s, size_t limit, store_missing_os *out,
                                     size_t *n, symd_err *err)
{
    *n = 0;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db,
                           "SELECT coalesce(c.os_version, ''), r.arch, count(*), "
                           "max(r.last_crash_id) FROM crash_image_refs r LEFT JOIN crashes c ON "
                           "c.id = r.last_crash_id WHERE r.system <> 0 AND " MISSING_WHERE
                           " GROUP BY 1, 2 ORDER BY 3 DESC, 4 DESC, 1, 2 LIMIT ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "counting missing system images");
        goto out;
    }
    sqlite3_bind_int64(st, 1, (int64_t)limit);
    int rc;
    while (*n < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_missing_os *g = &out[(*n)++];
        memset(g, 0, sizeof *g);
        column_text_cut(st, 0, g->os_version, sizeof g->os_version);
        column_text_cut(st, 1, g->arch, sizeof g->arch);
        g->images = sqlite3_column_int64(st, 2);
        g->last_crash_id = sqlite3_column_int64(st, 3);
    }
    if (*n < limit && rc != SQLITE_DONE)
        r = db_fail(err, db, "counting missing system images");
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

/* Copies n bytes of a column into a malloc'ed buffer (NULL, 0 for none). */
static symd_status column_copy(sqlite3_stmt *st, int i, uint8_t **out, size_t *len,
                               symd_err *err)
{
    const void *b = sqlite3_column_blob(st, i);
    int n = sqlite3_column_bytes(st, i);
    *out = NULL;
    *len = 0;
    if (!b || n <= 0)
        return SYMD_OK;
    if (!(*out = malloc((size_t)n)))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    memcpy(*out, b, (size_t)n);
    *len = (size_t)n;
    return SYMD_OK;
}

static symd_status sq_load_index(store_db *s, const uint8_t uuid[16], const char *arch,
                                 store_image *meta, int *nslices, uint8_t **sym,
                                 size_t *sym_len, uint8_t **lines, size_t *lines_len,
                                 uint8_t **unwind, size_t *unwind_len, symd_err *err)
{
    *sym = *lines = *unwind = NULL;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    /* One read transaction so the row, the slice count and the blobs agree. */
    run_q(s, ci, Q_BEGIN_READ);
    if (!(st = stmt(s, ci, Q_LOAD_INDEX, err))) {
        r = err->kind;
        goto out;
    }
    sqlite3_bind_blob(st, 1, uuid, 16, SQLITE_STATIC);
    if (arch)
        sqlite3_bind_text(st, 2, arch, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 2);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        r = symd_fail(err, SYMD_E_NOT_FOUND, "image not uploaded");
        goto out;
    }
    if (rc != SQLITE_ROW) {
        r = db_fail(err, db, "loading image");
        goto out;
    }
    row_to_image(st, meta);
    *nslices = sqlite3_column_int(st, IMAGE_NCOLS);
    if (!arch && *nslices > 1) {
        r = symd_fail(err, SYMD_E_INVALID, "image has %d architectures; name one with \"arch\"",
                      *nslices);
        goto out;
    }
    if ((r = column_copy(st, IMAGE_NCOLS + 1, sym, sym_len, err)) == SYMD_OK &&
        (r = column_copy(st, IMAGE_NCOLS + 2, lines, lines_len, err)) == SYMD_OK)
        r = column_copy(st, IMAGE_NCOLS + 3, unwind, unwind_len, err);
out:
    stmt_done(st);
    run_q(s, ci, Q_COMMIT);
    conn_put(s, ci);
    if (r != SYMD_OK) {
        free(*sym);
        free(*lines);
        free(*unwind);
        *sym = *lines = *unwind = NULL;
    }
    return r;
}

static symd_status sq_load_blob(store_db *s, const uint8_t uuid[16], const char *arch,
                                const char *kind, uint8_t **data, size_t *len, symd_err *err)
{
    *data = NULL;
    *len = 0;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db,
                           "SELECT d.data FROM images i JOIN image_data d ON d.image_id = i.id "
                           "WHERE i.uuid = ?1 AND i.arch = ?2 AND d.kind = ?3",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "loading image data");
        goto out;
    }
    sqlite3_bind_blob(st, 1, uuid, 16, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, arch, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        r = symd_fail(err, SYMD_E_NOT_FOUND, "no %s data stored for this image", kind);
    else if (rc != SQLITE_ROW)
        r = db_fail(err, db, "loading image data");
    else
        r = column_copy(st, 0, data, len, err);
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

/* ---- copying (symd migrate) --------------------------------------------- */

/* ---- crashes to file again (server/regroup.c) ---------------------------- */

static symd_status sq_regroup_next(store_db *s, int64_t *ids, size_t max, size_t *n,
                                   symd_err *err)
{
    *n = 0;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db, "SELECT id FROM crash_regroup ORDER BY id DESC LIMIT ?1", -1, &st,
                           NULL) != SQLITE_OK) {
        r = db_fail(err, db, "reading the crashes to file again");
    } else {
        sqlite3_bind_int64(st, 1, (int64_t)max);
        int rc;
        while (*n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
            ids[(*n)++] = sqlite3_column_int64(st, 0);
        if (*n < max && rc != SQLITE_DONE)
            r = db_fail(err, db, "reading the crashes to file again");
        sqlite3_finalize(st);
    }
    conn_put(s, ci);
    return r;
}

/* Runs sql (binding ?1 to each id, or ?1 and ?2 to lo and hi when ids is
 * NULL) in one write transaction; *changed counts the rows it changed. */
static symd_status regroup_write(store_db *s, const char *sql, const int64_t *ids, size_t n,
                                 const char *lo, const char *hi, size_t *changed,
                                 const char *what, symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    *changed = 0;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, what);
        goto out;
    }
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, what);
    } else {
        for (size_t i = 0; i < (ids ? n : 1) && r == SYMD_OK; i++) {
            sqlite3_reset(st);
            if (ids) {
                sqlite3_bind_int64(st, 1, ids[i]);
            } else {
                sqlite3_bind_text(st, 1, lo, -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 2, hi, -1, SQLITE_STATIC);
            }
            if (sqlite3_step(st) != SQLITE_DONE)
                r = db_fail(err, db, what);
            else
                *changed += (size_t)sqlite3_changes(db);
        }
        sqlite3_finalize(st);
    }
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, what);
    if (r != SYMD_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
    writer_put(s, ci);
    return r;
}

static symd_status sq_regroup_done(store_db *s, const int64_t *ids, size_t n, symd_err *err)
{
    size_t changed;
    return n ? regroup_write(s, "DELETE FROM crash_regroup WHERE id = ?1", ids, n, NULL, NULL,
                             &changed, "taking crashes off the refile list", err)
             : SYMD_OK;
}

/* Contract: store_grouping_rules_changed. */
static symd_status sq_grouping_digest(store_db *s, const char *digest, bool *changed,
                                      symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    *changed = false;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "reading the grouping rules' digest");
        goto out;
    }
    if (sqlite3_prepare_v2(db, "UPDATE grouping_state SET rules_digest = ?1 WHERE id = 1 AND "
                               "rules_digest <> ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "noting the grouping rules' digest");
    } else {
        sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            r = db_fail(err, db, "noting the grouping rules' digest");
        else
            *changed = sqlite3_changes(db) > 0;
        sqlite3_finalize(st);
    }
    if (r == SYMD_OK && *changed &&
        sqlite3_exec(db, "INSERT OR IGNORE INTO crash_regroup(id) SELECT id FROM crashes", NULL,
                     NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "listing crashes to file under the new grouping rules");
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing the grouping rules' digest");
    if (r != SYMD_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        *changed = false;
    }
out:
    writer_put(s, ci);
    return r;
}

static symd_status sq_image_ref_names(store_db *s, const uint8_t uuid[16], char (*names)[256],
                                      size_t max, size_t *n, symd_err *err)
{
    *n = 0;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db,
                           "SELECT DISTINCT name FROM crash_image_refs WHERE uuid = ?1 AND "
                           "name <> '' ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "reading the names crashes give an image");
    } else {
        sqlite3_bind_blob(st, 1, uuid, 16, SQLITE_STATIC);
        int rc;
        while (*n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
            copy_text(names[(*n)++], 256, sqlite3_column_text(st, 0));
        if (*n < max && rc != SQLITE_DONE)
            r = db_fail(err, db, "reading the names crashes give an image");
        sqlite3_finalize(st);
    }
    conn_put(s, ci);
    return r;
}

static symd_status sq_regroup_queue(store_db *s, const char *lo, const char *hi, size_t *queued,
                                    symd_err *err)
{
    /* the groups table is small; each group's crashes by the crashes_group index */
    return regroup_write(s,
                         "INSERT OR IGNORE INTO crash_regroup(id) SELECT c.id FROM crash_groups g "
                         "JOIN crashes c ON c.kind = g.kind AND c.signature = g.signature "
                         "WHERE g.signature >= ?1 AND g.signature < ?2",
                         NULL, 0, lo, hi, queued, "listing crashes to file again", err);
}

static symd_status sq_export_rows(store_db *s, int t, store_row_fn fn, void *ctx, symd_err *err)
{
    char *sql = store_copy_sql(t, false, '?');
    if (!sql)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    int ncols = store_tables[t].ncols;
    if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "reading rows to copy");
        goto out;
    }
    int rc;
    while (r == SYMD_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_value v[STORE_MAX_COLS];
        for (int i = 0; i < ncols; i++) {
            memset(&v[i], 0, sizeof v[i]);
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_NULL:
                v[i].type = STORE_V_NULL;
                break;
            case SQLITE_INTEGER:
                v[i].type = STORE_V_INT;
                v[i].i = sqlite3_column_int64(st, i);
                break;
            case SQLITE_BLOB:
                v[i].type = STORE_V_BLOB;
                v[i].p = sqlite3_column_blob(st, i);
                v[i].len = (size_t)sqlite3_column_bytes(st, i);
                break;
            default: /* text (no REAL column exists) */
                v[i].type = STORE_V_TEXT;
                v[i].p = sqlite3_column_text(st, i);
                v[i].len = (size_t)sqlite3_column_bytes(st, i);
                break;
            }
        }
        r = fn(ctx, v, err);
    }
    if (r == SYMD_OK && rc != SQLITE_DONE)
        r = db_fail(err, db, "reading rows to copy");
out:
    sqlite3_finalize(st);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    conn_put(s, ci);
    free(sql);
    return r;
}

/* An import holds the writer turn and connection 0's transaction from
 * import_begin to import_end. */
static symd_status sq_import_begin(store_db *s, symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        symd_status r = db_fail(err, db, "starting the import");
        writer_put(s, ci);
        return r;
    }
    for (int t = 0; t < STORE_NTABLES; t++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT 1 FROM %s LIMIT 1", store_tables[t].name);
        sqlite3_stmt *st;
        int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            symd_status r = rc == SQLITE_ROW
                                ? symd_fail(err, SYMD_E_INVALID, "the target database already "
                                                                 "holds data (table %s)",
                                            store_tables[t].name)
                                : db_fail(err, db, "checking the target is empty");
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            writer_put(s, ci);
            return r;
        }
    }
    s->importing = ci;
    return SYMD_OK;
}

static symd_status sq_import_row(store_db *s, int t, const store_value *cols, symd_err *err)
{
    sqlite3 *db = s->conns[s->importing];
    char *sql = store_copy_sql(t, true, '?');
    if (!sql)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    sqlite3_stmt *st;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        free(sql);
        return db_fail(err, db, "importing a row");
    }
    for (int i = 0; i < store_tables[t].ncols; i++)
        switch (cols[i].type) {
        case STORE_V_NULL: sqlite3_bind_null(st, i + 1); break;
        case STORE_V_INT: sqlite3_bind_int64(st, i + 1, cols[i].i); break;
        case STORE_V_TEXT:
            sqlite3_bind_text64(st, i + 1, (const char *)cols[i].p, cols[i].len,
                                SQLITE_STATIC, SQLITE_UTF8);
            break;
        case STORE_V_BLOB:
            sqlite3_bind_blob64(st, i + 1, cols[i].len ? (const void *)cols[i].p : "",
                                cols[i].len, SQLITE_STATIC);
            break;
        }
    if (sqlite3_step(st) != SQLITE_DONE)
        r = db_fail(err, db, "importing a row");
    sqlite3_finalize(st);
    free(sql);
    return r;
}

static symd_status sq_import_end(store_db *s, bool commit, symd_err *err)
{
    int ci = s->importing;
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    if (commit && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing the import");
    if (!commit || r != SYMD_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    writer_put(s, ci);
    return r;
}

/* ---- webhook events (store.h) ---------------------------------------------- */

static void sq_set_hooks(store_db *s, const store_hooks *h)
{
    s->hooks = h;
}

/* A statement prepared for one use on connection ci (webhook statements run
 * a few times per crash, and only with webhooks configured). */
static sqlite3_stmt *prep(store_db *s, int ci, const char *sql, const char *what, symd_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->conns[ci], sql, -1, &st, NULL) != SQLITE_OK) {
        db_fail(err, s->conns[ci], what);
        return NULL;
    }
    return st;
}

/* Records event type with data, and a delivery of it to each of h's
 * targets, inside connection ci's transaction. */
static symd_status hook_emit_in_tx(store_db *s, int ci, const store_hooks *h, const char *type,
                                   const char *data, int64_t now, int64_t *event_id,
                                   symd_err *err)
{
    const char *what = "recording a webhook event";
    if (!data)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    sqlite3_stmt *st = prep(s, ci, "INSERT INTO webhook_events(created_at, type, data) "
                                   "VALUES (?1, ?2, ?3)", what, err);
    if (!st)
        return err->kind;
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, data, -1, SQLITE_STATIC);
    bool ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    if (!ok)
        return db_fail(err, s->conns[ci], what);
    int64_t id = sqlite3_last_insert_rowid(s->conns[ci]);
    if (event_id)
        *event_id = id;
    if (!(st = prep(s, ci, "INSERT INTO webhook_deliveries(event_id, url, next_at) "
                           "VALUES (?1, ?2, ?3)", what, err)))
        return err->kind;
    for (size_t i = 0; i < h->nurls && ok; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, h->urls[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    return ok ? SYMD_OK : db_fail(err, s->conns[ci], what);
}

/* hook_emit_in_tx of data (malloc'ed, freed here). */
static symd_status hook_emit_owned(store_db *s, int ci, const store_hooks *h, const char *type,
                                   char *data, int64_t now, symd_err *err)
{
    symd_status r = hook_emit_in_tx(s, ci, h, type, data, now, NULL, err);
    free(data);
    return r;
}

/* One integer a statement of binds (kind, signature[, x]) answers; *got
 * false when it answers no row. */
static symd_status hook_int(store_db *s, int ci, const char *sql, const char *kind,
                            const char *sig, int64_t x, int64_t *v, bool *got, symd_err *err)
{
    const char *what = "reading a group's counts for webhooks";
    sqlite3_stmt *st = prep(s, ci, sql, what, err);
    if (!st)
        return err->kind;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, sig, -1, SQLITE_STATIC);
    if (sqlite3_bind_parameter_count(st) >= 3)
        sqlite3_bind_int64(st, 3, x);
    int rc = sqlite3_step(st);
    *got = rc == SQLITE_ROW;
    *v = *got ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SYMD_OK : db_fail(err, s->conns[ci], what);
}

/* group.regressed for the report k that reopened its resolved group (ev),
 * recorded in the post's transaction like the other events. */
static symd_status regressed_event_in_tx(store_db *s, int ci, const crash_key *k,
                                         const store_group_event *ev, int64_t now,
                                         symd_err *err)
{
    const store_hooks *h = s->hooks;
    if (!store_hooks_on(h))
        return SYMD_OK;
    int64_t count = 0;
    bool got = false;
    symd_status r = hook_int(s, ci, "SELECT count FROM crash_groups WHERE kind = ?1 AND "
                                    "signature = ?2", k->kind, k->signature, 0, &count, &got, err);
    if (r != SYMD_OK)
        return r;
    return hook_emit_owned(s, ci, h, "group.regressed",
                           store_hook_data_group_regressed(k->kind, k->signature, k->id,
                                                           k->dims[0], ev->resolved_version, count),
                           now, err);
}

/* The events crash id (c, needing imgs), stored at now, causes, recorded
 * inside connection ci's transaction: group.new when it opened its group,
 * image.missing for each image not the OS's whose UUID was never stored
 * nor told missing before, group.spike when its group's count this hour
 * passes the spike threshold (store_hooks) for the first time this hour. */
static symd_status crash_events_in_tx(store_db *s, int ci, const store_crash *c,
                                      const store_crash_image *imgs, size_t nimgs, int64_t id,
                                      int64_t now, symd_err *err)
{
    const store_hooks *h = s->hooks;
    if (!store_hooks_on(h))
        return SYMD_OK;
    const char *kind = c->kind ? c->kind : "crash";
    int64_t v;
    bool got;
    symd_status r = hook_int(s, ci, "SELECT count FROM crash_groups WHERE kind = ?1 AND "
                                    "signature = ?2", kind, c->signature, 0, &v, &got, err);
    if (r == SYMD_OK && got && v == 1)
        r = hook_emit_owned(s, ci, h, "group.new", store_hook_data_group_new(c, id), now, err);
    for (size_t i = 0; i < nimgs && r == SYMD_OK; i++) {
        if (imgs[i].system)
            continue;
        const char *what = "recording the images told missing";
        /* told once per UUID, stored or not: a UUID is looked at once */
        sqlite3_stmt *st = prep(s, ci, "INSERT OR IGNORE INTO webhook_images(uuid, created_at) "
                                       "VALUES (?1, ?2)", what, err);
        if (!st)
            return err->kind;
        sqlite3_bind_blob(st, 1, imgs[i].uuid, 16, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, now);
        bool ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
        if (!ok)
            return db_fail(err, s->conns[ci], what);
        if (sqlite3_changes(s->conns[ci]) != 1)
            continue;
        if (!(st = prep(s, ci, "SELECT 1 FROM images WHERE uuid = ?1 LIMIT 1", what, err)))
            return err->kind;
        sqlite3_bind_blob(st, 1, imgs[i].uuid, 16, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return db_fail(err, s->conns[ci], what);
        if (rc == SQLITE_DONE)
            r = hook_emit_owned(s, ci, h, "image.missing",
                                store_hook_data_image_missing(&imgs[i], c, id), now, err);
    }
    if (r != SYMD_OK || h->spike_factor <= 0)
        return r;
    int64_t hour = now / 3600000;
    const char *what = "counting the group's hour";
    sqlite3_stmt *st = prep(s, ci,
                            "INSERT INTO crash_group_hours(kind, signature, hour, count) VALUES "
                            "(?1, ?2, ?3, 1) ON CONFLICT(kind, signature, hour) DO UPDATE SET "
                            "count = count + 1 RETURNING count, spiked",
                            what, err);
    if (!st)
        return err->kind;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, c->signature, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, hour);
    int rc = sqlite3_step(st);
    int64_t count = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    bool spiked = rc == SQLITE_ROW && sqlite3_column_int64(st, 1) != 0;
    if (rc == SQLITE_ROW)
        rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_fail(err, s->conns[ci], what);
    if (spiked || count < h->spike_min)
        return SYMD_OK;
    int64_t base;
    if ((r = hook_int(s, ci, "SELECT coalesce(sum(count), 0) FROM crash_group_hours WHERE "
                             "kind = ?1 AND signature = ?2 AND hour >= ?3 - 168 AND hour < ?3",
                      kind, c->signature, hour, &base, &got, err)) != SYMD_OK)
        return r;
    if ((double)count <= h->spike_factor * (double)base / STORE_HOOK_BASELINE_HOURS)
        return SYMD_OK;
    if (!(st = prep(s, ci, "UPDATE crash_group_hours SET spiked = 1 WHERE kind = ?1 AND "
                           "signature = ?2 AND hour = ?3", what, err)))
        return err->kind;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, c->signature, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, hour);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_fail(err, s->conns[ci], what);
    return hook_emit_owned(s, ci, h, "group.spike",
                           store_hook_data_group_spike(c, id, hour, count, base, h->spike_factor),
                           now, err);
}

static symd_status sq_hook_emit(store_db *s, const char *type, const char *data,
                                int64_t *event_id, symd_err *err)
{
    *event_id = 0;
    const store_hooks *h = s->hooks;
    if (!store_hooks_on(h))
        return SYMD_OK;
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "recording a webhook event");
    else if ((r = hook_emit_in_tx(s, ci, h, type, data, store_now_ms(), event_id, err)) ==
                 SYMD_OK &&
             sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "recording a webhook event");
    if (r != SYMD_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    writer_put(s, ci);
    return r;
}

#define DELIVERY_COLS                                                                        \
    "d.id, d.event_id, e.created_at, d.next_at, d.done_at, d.updated_at, d.state, "         \
    "d.attempts, d.last_status, e.type, d.url, d.last_error, e.data"

/* A row of DELIVERY_COLS; false when out of memory for its data. */
static bool row_to_delivery(sqlite3_stmt *st, store_delivery *d)
{
    memset(d, 0, sizeof *d);
    d->id = sqlite3_column_int64(st, 0);
    d->event_id = sqlite3_column_int64(st, 1);
    d->event_at = sqlite3_column_int64(st, 2);
    d->next_at = sqlite3_column_int64(st, 3);
    d->done_at = sqlite3_column_int64(st, 4);
    d->updated_at = sqlite3_column_int64(st, 5);
    d->state = sqlite3_column_int(st, 6);
    d->attempts = sqlite3_column_int(st, 7);
    d->last_status = sqlite3_column_int(st, 8);
    copy_text(d->type, sizeof d->type, sqlite3_column_text(st, 9));
    copy_text(d->url, sizeof d->url, sqlite3_column_text(st, 10));
    copy_text(d->last_error, sizeof d->last_error, sqlite3_column_text(st, 11));
    const unsigned char *data = sqlite3_column_text(st, 12);
    d->data = strdup(data ? (const char *)data : "{}");
    return d->data != NULL;
}

/* The claim: the oldest due delivery read on any connection, then taken by
 * a conditional update (still pending, no lease held) in a write
 * transaction; one lost to another process is looked for again. */
static symd_status sq_hook_claim(store_db *s, const char *url, int64_t now, int64_t lease_until,
                                 int64_t owner, store_delivery *out, bool *found, symd_err *err)
{
    const char *what = "claiming a webhook delivery";
    for (int attempt = 0; attempt < 3; attempt++) {
        int ci = conn_get(s);
        sqlite3_stmt *st = prep(s, ci,
                                "SELECT " DELIVERY_COLS " FROM webhook_deliveries d JOIN "
                                "webhook_events e ON e.id = d.event_id WHERE d.url = ?1 AND "
                                "d.state = 0 AND d.next_at <= ?2 AND d.lease_until <= ?2 "
                                "ORDER BY d.next_at, d.id LIMIT 1",
                                what, err);
        if (!st) {
            conn_put(s, ci);
            return err->kind;
        }
        sqlite3_bind_text(st, 1, url, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, now);
        int rc = sqlite3_step(st);
        bool ok = rc == SQLITE_ROW ? row_to_delivery(st, out) : rc == SQLITE_DONE;
        sqlite3_finalize(st);
        symd_status r = ok ? SYMD_OK
                           : rc == SQLITE_ROW ? symd_fail(err, SYMD_E_NOMEM, "out of memory")
                                              : db_fail(err, s->conns[ci], what);
        conn_put(s, ci);
        if (r != SYMD_OK || rc == SQLITE_DONE)
            return r;
        ci = writer_get(s);
        if ((st = prep(s, ci, "UPDATE webhook_deliveries SET lease_until = ?3, lease_owner = ?4 "
                              "WHERE id = ?1 AND state = 0 AND lease_until <= ?2",
                       what, err))) {
            sqlite3_bind_int64(st, 1, out->id);
            sqlite3_bind_int64(st, 2, now);
            sqlite3_bind_int64(st, 3, lease_until);
            sqlite3_bind_int64(st, 4, owner);
            rc = sqlite3_step(st);
            sqlite3_finalize(st);
            r = rc == SQLITE_DONE ? SYMD_OK : db_fail(err, s->conns[ci], what);
            *found = r == SYMD_OK && sqlite3_changes(s->conns[ci]) == 1;
        } else {
            r = err->kind;
        }
        writer_put(s, ci);
        if (r != SYMD_OK || *found) {
            if (r != SYMD_OK)
                store_delivery_free(out);
            return r;
        }
        store_delivery_free(out);
    }
    return SYMD_OK;
}

static symd_status sq_hook_finish(store_db *s, int64_t id, int64_t owner, int state,
                                  int64_t next_at, int status, const char *error, bool *kept,
                                  symd_err *err)
{
    const char *what = "recording a webhook delivery's attempt";
    int ci = writer_get(s);
    symd_status r = SYMD_OK;
    sqlite3_stmt *st = prep(s, ci,
                            "UPDATE webhook_deliveries SET state = ?3, attempts = attempts + 1, "
                            "next_at = ?4, lease_until = 0, lease_owner = 0, last_status = ?5, "
                            "last_error = ?6, updated_at = ?7, done_at = CASE WHEN ?3 <> 0 "
                            "THEN ?7 ELSE 0 END WHERE id = ?1 AND lease_owner = ?2 AND "
                            "state = 0",
                            what, err);
    if (!st) {
        r = err->kind;
    } else {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, owner);
        sqlite3_bind_int(st, 3, state);
        sqlite3_bind_int64(st, 4, next_at);
        sqlite3_bind_int(st, 5, status);
        sqlite3_bind_text(st, 6, error, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, store_now_ms());
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            r = db_fail(err, s->conns[ci], what);
        else
            *kept = sqlite3_changes(s->conns[ci]) == 1;
    }
    writer_put(s, ci);
    return r;
}

static symd_status sq_hook_list(store_db *s, int64_t before_id, size_t limit, store_delivery *out,
                                size_t *n, bool *more, symd_err *err)
{
    const char *what = "reading webhook deliveries";
    int ci = conn_get(s);
    symd_status r = SYMD_OK;
    sqlite3_stmt *st = prep(s, ci,
                            "SELECT " DELIVERY_COLS " FROM webhook_deliveries d JOIN "
                            "webhook_events e ON e.id = d.event_id WHERE ?1 = 0 OR d.id < ?1 "
                            "ORDER BY d.id DESC LIMIT ?2",
                            what, err);
    if (!st) {
        conn_put(s, ci);
        return err->kind;
    }
    sqlite3_bind_int64(st, 1, before_id);
    sqlite3_bind_int64(st, 2, (int64_t)limit + 1);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == limit) {
            *more = true;
            break;
        }
        if (!row_to_delivery(st, &out[*n])) {
            r = symd_fail(err, SYMD_E_NOMEM, "out of memory");
            break;
        }
        (*n)++;
    }
    if (r == SYMD_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = db_fail(err, s->conns[ci], what);
    sqlite3_finalize(st);
    conn_put(s, ci);
    if (r != SYMD_OK) {
        for (size_t i = 0; i < *n; i++)
            store_delivery_free(&out[i]);
        *n = 0;
    }
    return r;
}

static symd_status sq_hook_prune(store_db *s, int64_t before_hour, int64_t done_before,
                                 symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    sqlite3_stmt *st = NULL;
    const char *sql[] = {
        "DELETE FROM crash_group_hours WHERE hour < ?1",
        "DELETE FROM webhook_deliveries WHERE state <> 0 AND done_at < ?2",
        "DELETE FROM webhook_events WHERE created_at < ?2 AND NOT EXISTS (SELECT 1 FROM "
        "webhook_deliveries d WHERE d.event_id = webhook_events.id)",
    };
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "pruning webhook records");
    for (size_t i = 0; i < 3 && r == SYMD_OK; i++) {
        if (!(st = prep(s, ci, sql[i], "pruning webhook records", err))) {
            r = err->kind;
            break;
        }
        if (sqlite3_bind_parameter_count(st) >= 1)
            sqlite3_bind_int64(st, 1, before_hour);
        if (sqlite3_bind_parameter_count(st) >= 2)
            sqlite3_bind_int64(st, 2, done_before);
        if (sqlite3_step(st) != SQLITE_DONE)
            r = db_fail(err, db, "pruning webhook records");
        sqlite3_finalize(st);
    }
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "pruning webhook records");
    if (r != SYMD_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    writer_put(s, ci);
    return r;
}

/* ---- chunks of uploads in parts ------------------------------------------ */

/* A chunk's bytes go to a file of the spool (chunk_spool.c), its size
 * and time to the chunks table (data left empty): the database would write
 * them twice (WAL, then the file) and read them back, the spool once, and
 * the assembly maps the files instead of copying them. The file is written
 * before the transaction (not under the writer lock) and renamed into place
 * inside it, so a chunk's row and file come and go together; a file whose
 * row is gone, or a row whose file is gone, is a chunk not held. */
static symd_status sq_chunk_put_temp(store_db *s, const uint8_t hash[32], const char *tmp,
                                     uint64_t len, uint64_t budget, int64_t now,
                                     store_chunk_result *res, symd_err *err)
{
    int e;
    bool placed = false, inserted = false;
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "storing chunk");
        goto out;
    }
    /* held: its time is renewed, so a resumed upload's chunks stay */
    if (sqlite3_prepare_v2(db, "UPDATE chunks SET created_at = ?2 WHERE hash = ?1", -1, &st,
                           NULL) != SQLITE_OK) {
        r = db_fail(err, db, "storing chunk");
        goto done;
    }
    sqlite3_bind_blob(st, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    if (sqlite3_step(st) != SQLITE_DONE) {
        r = db_fail(err, db, "storing chunk");
        goto done;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_changes(db) > 0) {
        *res = STORE_CHUNK_HELD;
        /* its file lost (removed by hand, or refused as damaged): these
         * bytes, checked by the caller, take its place */
        if (!chunk_spool_has(&s->spool, hash)) {
            if ((e = chunk_spool_commit(&s->spool, tmp, hash)) != 0)
                r = symd_fail(err, SYMD_E_IO, "storing chunk: %s", strerror(e));
            placed = true;
        }
        goto done;
    }
    if (sqlite3_prepare_v2(db, "SELECT coalesce(sum(size), 0) FROM chunks", -1, &st, NULL) !=
            SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        r = db_fail(err, db, "storing chunk");
        goto done;
    }
    uint64_t held = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (held > budget || len > budget - held) {
        *res = STORE_CHUNK_FULL;
        goto done;
    }
    if (sqlite3_prepare_v2(db, "INSERT INTO chunks(hash, size, created_at, data) "
                               "VALUES (?1, ?2, ?3, X'')",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "storing chunk");
        goto done;
    }
    sqlite3_bind_blob(st, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (int64_t)len);
    sqlite3_bind_int64(st, 3, now);
    if (sqlite3_step(st) != SQLITE_DONE) {
        r = db_fail(err, db, "storing chunk");
        goto done;
    }
    placed = inserted = true;
    if ((e = chunk_spool_commit(&s->spool, tmp, hash)) != 0)
        r = symd_fail(err, SYMD_E_IO, "storing chunk: %s", strerror(e));
    else
        *res = STORE_CHUNK_STORED;
done:
    sqlite3_finalize(st);
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing chunk");
    if (r != SYMD_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        if (inserted)
            chunk_spool_remove(&s->spool, hash); /* no row: no file */
    }
out:
    writer_put(s, ci);
    if (!placed)
        unlink(tmp);
    return r;
}

static symd_status sq_chunk_put(store_db *s, const uint8_t hash[32], const uint8_t *data,
                                size_t len, uint64_t budget, int64_t now,
                                store_chunk_result *res, symd_err *err)
{
    char tmp[CHUNK_SPOOL_PATH_MAX];
    int e = chunk_spool_write_temp(&s->spool, hash, data, len, tmp);
    if (e != 0)
        return symd_fail(err, SYMD_E_IO, "storing chunk in %s: %s", s->spool.dir, strerror(e));
    return sq_chunk_put_temp(s, hash, tmp, len, budget, now, res, err);
}

/* A spool file for a chunk's bytes as they arrive (chunk_spool_open_temp). */
static symd_status sq_chunk_temp(store_db *s, const uint8_t hash[32], uint64_t len, char *tmp,
                                 size_t cap, int *fd, symd_err *err)
{
    char path[CHUNK_SPOOL_PATH_MAX];
    *fd = chunk_spool_open_temp(&s->spool, hash, len, path);
    if (*fd < 0)
        return symd_fail(err, SYMD_E_IO, "a chunk file in %s: %s", s->spool.dir,
                         strerror(errno));
    if ((size_t)snprintf(tmp, cap, "%s", path) >= cap) {
        close(*fd);
        unlink(path);
        *fd = -1;
        return symd_fail(err, SYMD_E_IO, "the spool's path is too long");
    }
    return SYMD_OK;
}

static symd_status sq_chunks_missing(store_db *s, const uint8_t (*hashes)[32], size_t n,
                                     bool *missing, symd_err *err)
{
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM chunks WHERE hash = ?1", -1, &st, NULL) !=
        SQLITE_OK) {
        r = db_fail(err, db, "looking up chunks");
        goto out;
    }
    for (size_t i = 0; i < n && r == SYMD_OK; i++) {
        sqlite3_reset(st);
        sqlite3_bind_blob(st, 1, hashes[i], 32, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW || rc == SQLITE_DONE)
            missing[i] = rc == SQLITE_DONE || !chunk_spool_has(&s->spool, hashes[i]);
        else
            r = db_fail(err, db, "looking up chunks");
    }
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

/* The size the chunks table holds for hash: 1 found, 0 not held, -1 error
 * (err set). */
static int chunk_row_size(sqlite3 *db, const uint8_t hash[32], uint64_t *size, symd_err *err)
{
    sqlite3_stmt *st = NULL;
    int found = -1;
    if (sqlite3_prepare_v2(db, "SELECT size FROM chunks WHERE hash = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_blob(st, 1, hash, 32, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *size = (uint64_t)sqlite3_column_int64(st, 0);
            found = 1;
        } else if (rc == SQLITE_DONE) {
            found = 0;
        }
    }
    if (found < 0)
        db_fail(err, db, "reading chunk");
    sqlite3_finalize(st);
    return found;
}

static symd_status sq_chunk_open(store_db *s, const uint8_t hash[32], int *fd, uint64_t *len,
                                 symd_err *err)
{
    int ci = conn_get(s);
    uint64_t want = 0;
    int found = chunk_row_size(s->conns[ci], hash, &want, err);
    conn_put(s, ci);
    if (found < 0)
        return SYMD_E_DB;
    if (found == 0)
        return symd_fail(err, SYMD_E_NOT_FOUND, "chunk not held");
    *fd = chunk_spool_open(&s->spool, hash, len);
    if (*fd < 0 && errno == ENOENT)
        return symd_fail(err, SYMD_E_NOT_FOUND, "chunk not held (its file is gone)");
    if (*fd < 0)
        return symd_fail(err, SYMD_E_IO, "reading chunk: %s", strerror(errno));
    if (*len != want) { /* cut or grown on disk: not the bytes stored */
        close(*fd);
        *fd = -1;
        chunk_spool_remove(&s->spool, hash);
        return symd_fail(err, SYMD_E_NOT_FOUND, "chunk not held (its file was damaged)");
    }
    return SYMD_OK;
}

static symd_status sq_chunk_get(store_db *s, const uint8_t hash[32], uint8_t **data, size_t *len,
                                symd_err *err)
{
    int fd;
    uint64_t n;
    symd_status r = sq_chunk_open(s, hash, &fd, &n, err);
    if (r != SYMD_OK)
        return r;
    if (n > SIZE_MAX - 1) {
        close(fd);
        return symd_fail(err, SYMD_E_TOO_LARGE, "chunk too large");
    }
    uint8_t *p = n ? malloc((size_t)n) : NULL;
    if (n && !p) {
        close(fd);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, p + got, (size_t)n - got, (off_t)got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            close(fd);
            free(p);
            return symd_fail(err, SYMD_E_IO, "reading chunk: %s", strerror(e));
        }
        got += (size_t)k;
    }
    close(fd);
    *data = p;
    *len = (size_t)n;
    return SYMD_OK;
}

/* secure_delete (on in Debian's SQLite) overwrites every freed page with
 * zeros: for chunks, transient copies of uploads, that write costs as much
 * as storing them did, so it is off while chunks are deleted. */
static bool secure_delete_off(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    bool was = false;
    if (sqlite3_prepare_v2(db, "PRAGMA secure_delete", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        was = sqlite3_column_int(st, 0) != 0;
    sqlite3_finalize(st);
    if (was)
        sqlite3_exec(db, "PRAGMA secure_delete=OFF", NULL, NULL, NULL);
    return was;
}

static void secure_delete_back(sqlite3 *db, bool was)
{
    if (was)
        sqlite3_exec(db, "PRAGMA secure_delete=ON", NULL, NULL, NULL);
}

static symd_status sq_chunks_delete(store_db *s, const uint8_t (*hashes)[32], size_t n,
                                    symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    bool secure = secure_delete_off(db);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "DELETE FROM chunks WHERE hash = ?1", -1, &st, NULL) !=
            SQLITE_OK)
        r = db_fail(err, db, "deleting chunks");
    for (size_t i = 0; i < n && r == SYMD_OK; i++) {
        sqlite3_reset(st);
        sqlite3_bind_blob(st, 1, hashes[i], 32, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            r = db_fail(err, db, "deleting chunks");
    }
    sqlite3_finalize(st);
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "deleting chunks");
    if (r != SYMD_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    /* the files under the writer lock, so no chunk_put of the same hash
     * sits between its row's delete and its file's */
    for (size_t i = 0; i < n && r == SYMD_OK; i++)
        chunk_spool_remove(&s->spool, hashes[i]);
    secure_delete_back(db, secure);
    writer_put(s, ci);
    return r;
}

/* Whether the chunks table holds hash (for the spool's sweep; db is the
 * caller's connection). */
static bool chunk_row_held(void *ctx, const uint8_t hash[32])
{
    uint64_t size;
    symd_err err = {0};
    return chunk_row_size(ctx, hash, &size, &err) != 0; /* an error keeps the file */
}

static symd_status sq_chunks_expire(store_db *s, int64_t before_ms, size_t *deleted,
                                    symd_err *err)
{
    int ci = writer_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    bool secure = secure_delete_off(db);
    if (sqlite3_prepare_v2(db, "DELETE FROM chunks WHERE created_at < ?1 RETURNING hash", -1,
                           &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "expiring chunks");
    } else {
        sqlite3_bind_int64(st, 1, before_ms);
        int rc;
        /* each file as its row goes: a row whose file is gone is a chunk
         * not held, should the delete then fail */
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (sqlite3_column_bytes(st, 0) == 32)
                chunk_spool_remove(&s->spool, sqlite3_column_blob(st, 0));
            (*deleted)++;
        }
        if (rc != SQLITE_DONE)
            r = db_fail(err, db, "expiring chunks");
    }
    sqlite3_finalize(st);
    /* what a crash left: temporary files, files without a row */
    if (r == SYMD_OK)
        chunk_spool_sweep(&s->spool, before_ms / 1000, chunk_row_held, db);
    secure_delete_back(db, secure);
    writer_put(s, ci);
    return r;
}

static symd_status sq_chunk_stats(store_db *s, int64_t *count, int64_t *bytes, symd_err *err)
{
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db, "SELECT count(*), coalesce(sum(size), 0) FROM chunks", -1, &st,
                           NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        r = db_fail(err, db, "counting chunks");
    } else {
        *count = sqlite3_column_int64(st, 0);
        *bytes = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

const store_backend store_backend_sqlite = {
    .name = "sqlite",
    .claims = sq_claims,
    .open = sq_open,
    .close = sq_close,
    .ping = sq_ping,
    .put_images = sq_put_images,
    .delete_image = sq_delete_image,
    .get_image = sq_get_image,
    .list_images = sq_list_images,
    .counts = sq_counts,
    .load_index = sq_load_index,
    .load_blob = sq_load_blob,
    .chunk_put = sq_chunk_put,
    .chunk_temp = sq_chunk_temp,
    .chunk_put_temp = sq_chunk_put_temp,
    .chunks_missing = sq_chunks_missing,
    .chunk_get = sq_chunk_get,
    .chunk_open = sq_chunk_open,
    .chunks_delete = sq_chunks_delete,
    .chunks_expire = sq_chunks_expire,
    .chunk_stats = sq_chunk_stats,
    .symbol_set_open = sq_symbol_set_open,
    .symbol_set_add = sq_symbol_set_add,
    .list_symbol_sets = sq_list_symbol_sets,
    .delete_symbol_set = sq_delete_symbol_set,
    .put_crash = sq_put_crash,
    .get_crash = sq_get_crash,
    .update_crash = sq_update_crash,
    .delete_crash = sq_delete_crash,
    .prune_crashes = sq_prune_crashes,
    .list_crashes = sq_list_crashes,
    .crash_groups = sq_crash_groups,
    .crash_trend = sq_crash_trend,
    .crash_trend_filtered = sq_crash_trend_filtered,
    .dim_values = sq_dim_values,
    .set_group_state = sq_set_group_state,
    .group_history = sq_group_history,
    .end_ignores = sq_end_ignores,
    .missing_images = sq_missing_images,
    .missing_system = sq_missing_system,
    .export_rows = sq_export_rows,
    .import_begin = sq_import_begin,
    .import_row = sq_import_row,
    .import_end = sq_import_end,
    .regroup_next = sq_regroup_next,
    .regroup_done = sq_regroup_done,
    .regroup_queue = sq_regroup_queue,
    .grouping_digest = sq_grouping_digest,
    .image_ref_names = sq_image_ref_names,
    .set_hooks = sq_set_hooks,
    .hook_emit = sq_hook_emit,
    .hook_claim = sq_hook_claim,
    .hook_finish = sq_hook_finish,
    .hook_list = sq_hook_list,
    .hook_prune = sq_hook_prune,
};

/* The SQLite backend of the store (store/backend.h): the schema and its
 * migrations, a pool of connections (WAL), and every query. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

struct store_db {
    sqlite3 **conns;
    bool *busy;
    int nconns;
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;
};

static symd_status db_fail(symd_err *err, sqlite3 *db, const char *what)
{
    return symd_fail(err, SYMD_E_DB, "%s: %s", what, db ? sqlite3_errmsg(db) : "?");
}

/* ---- schema ------------------------------------------------------------- */

/* Migration i brings user_version from i to i + 1. Append only. */
static const char *const migrations[] = {
    "CREATE TABLE images("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  uuid BLOB NOT NULL CHECK(length(uuid) = 16),"
    "  arch TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  text_vmaddr INTEGER NOT NULL,"
    "  text_size INTEGER NOT NULL,"
    "  symbols INTEGER NOT NULL,"
    "  functions INTEGER NOT NULL,"
    "  debug_info INTEGER NOT NULL DEFAULT 0,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  UNIQUE(uuid, arch));"
    "CREATE TABLE image_data("
    "  image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,"
    "  kind TEXT NOT NULL,"
    "  data BLOB NOT NULL,"
    "  PRIMARY KEY(image_id, kind));",
    /* 2: stored crash reports and the images they reference. */
    "CREATE TABLE crashes("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  created_at INTEGER NOT NULL,"
    "  format TEXT NOT NULL,"
    "  process TEXT, bundle_id TEXT, app_version TEXT, os_version TEXT,"
    "  hardware_model TEXT, incident_id TEXT, exception_type TEXT,"
    "  signature TEXT NOT NULL,"
    "  original BLOB NOT NULL,"
    "  result TEXT NOT NULL,"
    "  result_at INTEGER NOT NULL);"
    "CREATE INDEX crashes_signature ON crashes(signature);"
    "CREATE TABLE crash_images("
    "  crash_id INTEGER NOT NULL REFERENCES crashes(id) ON DELETE CASCADE,"
    "  uuid BLOB NOT NULL CHECK(length(uuid) = 16),"
    "  arch TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  PRIMARY KEY(crash_id, uuid, arch));"
    "CREATE INDEX crash_images_uuid ON crash_images(uuid);",
    /* 3: what a report is about (crash_kind_name) and its .ips bug_type;
     * rows stored before are crashes without a bug_type. */
    "ALTER TABLE crashes ADD COLUMN kind TEXT NOT NULL DEFAULT 'crash';"
    "ALTER TABLE crashes ADD COLUMN bug_type INTEGER;"
    "CREATE INDEX crashes_kind_signature ON crashes(kind, signature);",
};

_Static_assert(sizeof migrations / sizeof migrations[0] == STORE_SCHEMA_VERSION,
               "STORE_SCHEMA_VERSION is the number of migrations");

static symd_status migrate(sqlite3 *db, symd_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return db_fail(err, db, "reading schema version");
    int version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    int latest = (int)(sizeof migrations / sizeof migrations[0]);
    if (version > latest)
        return symd_fail(err, SYMD_E_DB,
                         "database schema version %d is newer than this symd (%d)",
                         version, latest);
    for (int v = version; v < latest; v++) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", v + 1);
        if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
            return db_fail(err, db, "starting migration");
        if (sqlite3_exec(db, migrations[v], NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(db, pragma, NULL, NULL, NULL) != SQLITE_OK) {
            symd_status r = db_fail(err, db, "migrating schema");
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return r;
        }
        if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            return db_fail(err, db, "committing migration");
    }
    return SYMD_OK;
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
                     "PRAGMA foreign_keys=ON;",
                     NULL, NULL, NULL) != SQLITE_OK) {
        symd_status r = db_fail(err, db, "configuring database");
        sqlite3_close(db);
        return r;
    }
    *out = db;
    return SYMD_OK;
}

static void sq_close(store_db *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nconns; i++)
        sqlite3_close(s->conns[i]);
    free(s->conns);
    free(s->busy);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_cond_destroy(&s->pool_cv);
    free(s);
}

static symd_status sq_open(const char *path, int pool, store_db **out, symd_err *err)
{
    *out = NULL;
    if (pool < 1)
        pool = 1;
    store_db *s = calloc(1, sizeof *s);
    if (!s)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    s->conns = calloc((size_t)pool, sizeof *s->conns);
    s->busy = calloc((size_t)pool, sizeof *s->busy);
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_cond_init(&s->pool_cv, NULL);
    if (!s->conns || !s->busy) {
        sq_close(s);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < pool; i++) {
        symd_status st = open_conn(path, &s->conns[i], err);
        s->nconns = i + (st == SYMD_OK);
        if (st == SYMD_OK && i == 0)
            st = migrate(s->conns[0], err);
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

/* ---- rows --------------------------------------------------------------- */

#define IMAGE_COLS                                                         \
    "id, uuid, arch, name, kind, text_vmaddr, text_size, symbols, functions, " \
    "debug_info, created_at, updated_at"

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

static symd_status put_one(sqlite3 *db, store_put *p, int64_t now,
                           store_put_result *result, store_image *stored,
                           symd_err *err)
{
    store_image old;
    int rc = find_row(db, p->meta.uuid, p->meta.arch, &old);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_fail(err, db, "looking up image");
    sqlite3_stmt *st = NULL;
    int64_t id;
    bool put_syms = true, put_lines = p->lines != NULL;
    if (rc == SQLITE_ROW) {
        /* Never fewer symbols: a line index may leave function names to
         * the symbol index it was built beside. */
        put_syms = p->meta.symbols >= old.symbols &&
                   (p->meta.symbols > old.symbols || p->meta.functions > old.functions);
        put_lines = p->lines && !old.debug_info;
        if (!put_syms && !put_lines) {
            *result = STORE_EXISTS;
            *stored = old;
            return SYMD_OK;
        }
        id = old.id;
        /* The binary's kind and name win over its dSYM's. */
        bool was_dsym = strcmp(old.kind, "dsym") == 0;
        bool new_dsym = strcmp(p->meta.kind, "dsym") == 0;
        bool take_kind = was_dsym && !new_dsym;
        rc = sqlite3_prepare_v2(db,
                                "UPDATE images SET "
                                "kind = CASE WHEN ?9 THEN ?2 ELSE kind END, "
                                "text_vmaddr = CASE WHEN ?10 THEN ?3 ELSE text_vmaddr END, "
                                "text_size = CASE WHEN ?10 THEN ?4 ELSE text_size END, "
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
        sqlite3_bind_int(st, 9, take_kind);
        sqlite3_bind_int(st, 10, put_syms);
        sqlite3_bind_int(st, 11, put_lines);
        *result = STORE_UPDATED;
    } else {
        rc = sqlite3_prepare_v2(db,
                                "INSERT INTO images(uuid, arch, name, kind, "
                                "text_vmaddr, text_size, symbols, functions, "
                                "debug_info, created_at, updated_at) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)",
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
        *result = STORE_CREATED;
        id = 0;
    }
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_fail(err, db, "writing image");
    if (!id)
        id = sqlite3_last_insert_rowid(db);

    for (int k = 0; k < 2; k++) {
        if (!(k ? put_lines : put_syms))
            continue;
        rc = sqlite3_prepare_v2(db,
                                "INSERT OR REPLACE INTO image_data(image_id, kind, data) "
                                "VALUES (?1, ?2, ?3)",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
            return db_fail(err, db, "writing index");
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, k ? "lines" : "symbols", -1, SQLITE_STATIC);
        if (k)
            sqlite3_bind_blob64(st, 3, p->lines, p->lines_len, SQLITE_STATIC);
        else
            sqlite3_bind_blob64(st, 3, p->symidx, p->symidx_len, SQLITE_STATIC);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return db_fail(err, db, k ? "writing line index" : "writing symbol index");
    }
    rc = find_row(db, p->meta.uuid, p->meta.arch, stored);
    if (rc != SQLITE_ROW)
        return db_fail(err, db, "reading back image");
    return SYMD_OK;
}

static symd_status sq_put_images(store_db *s, store_put *puts, size_t n,
                             store_put_result *results, store_image *stored,
                             symd_err *err)
{
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    symd_status r = SYMD_OK;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "starting upload transaction");
        goto out;
    }
    int64_t now = store_now_ms();
    for (size_t i = 0; i < n && r == SYMD_OK; i++)
        r = put_one(db, &puts[i], now, &results[i], &stored[i], err);
    if (r == SYMD_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = db_fail(err, db, "committing upload");
    if (r != SYMD_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
    conn_put(s, ci);
    return r;
}

static symd_status sq_delete_image(store_db *s, const uint8_t uuid[16], size_t *deleted,
                               symd_err *err)
{
    int ci = conn_get(s);
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
    conn_put(s, ci);
    return r;
}

static symd_status sq_get_image(store_db *s, const uint8_t uuid[16], store_image *out,
                            size_t max, size_t *n, symd_err *err)
{
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st;
    symd_status r = SYMD_OK;
    *n = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT " IMAGE_COLS
                           " FROM images WHERE uuid = ?1 ORDER BY arch",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "reading image");
    } else {
        sqlite3_bind_blob(st, 1, uuid, 16, SQLITE_STATIC);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max)
            row_to_image(st, &out[(*n)++]);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            r = db_fail(err, db, "reading image");
        sqlite3_finalize(st);
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

/* ---- crash reports -------------------------------------------------------- */

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
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

static symd_status sq_put_crash(store_db *s, const store_crash *c, const store_crash_image *imgs,
                            size_t nimgs, int64_t *id, symd_err *err)
{
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "starting crash transaction");
        goto out;
    }
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO crashes(created_at, format, process, bundle_id, "
                           "app_version, os_version, hardware_model, incident_id, "
                           "exception_type, signature, original, result, result_at, kind, "
                           "bug_type) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?1, "
                           "?13, ?14)",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "storing crash");
        goto rollback;
    }
    int64_t now = store_now_ms();
    sqlite3_bind_int64(st, 1, now);
    bind_text_or_null(st, 2, c->format);
    bind_text_or_null(st, 3, c->process);
    bind_text_or_null(st, 4, c->bundle_id);
    bind_text_or_null(st, 5, c->app_version);
    bind_text_or_null(st, 6, c->os_version);
    bind_text_or_null(st, 7, c->hardware_model);
    bind_text_or_null(st, 8, c->incident_id);
    bind_text_or_null(st, 9, c->exception_type);
    bind_text_or_null(st, 10, c->signature ? c->signature : "");
    sqlite3_bind_blob64(st, 11, c->original, c->original_len, SQLITE_STATIC);
    bind_text_or_null(st, 12, c->result ? c->result : "{}");
    bind_text_or_null(st, 13, c->kind ? c->kind : "crash");
    bind_bug_type(st, 14, c->bug_type);
    if (sqlite3_step(st) != SQLITE_DONE) {
        r = db_fail(err, db, "storing crash");
        goto rollback;
    }
    sqlite3_finalize(st);
    st = NULL;
    *id = sqlite3_last_insert_rowid(db);
    if (sqlite3_prepare_v2(db,
                           "INSERT OR IGNORE INTO crash_images(crash_id, uuid, arch, name) "
                           "VALUES (?1, ?2, ?3, ?4)",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "storing crash images");
        goto rollback;
    }
    for (size_t i = 0; i < nimgs; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, *id);
        sqlite3_bind_blob(st, 2, imgs[i].uuid, 16, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, imgs[i].arch, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, imgs[i].name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) {
            r = db_fail(err, db, "storing crash images");
            goto rollback;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "committing crash");
        goto rollback;
    }
    goto out;
rollback:
    sqlite3_finalize(st);
    st = NULL;
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
    conn_put(s, ci);
    return r;
}

#define CRASH_COLS                                                                  \
    "id, created_at, format, process, bundle_id, app_version, os_version, "         \
    "hardware_model, incident_id, exception_type, signature, result_at, kind, "     \
    "bug_type"
#define CRASH_NCOLS 14 /* the columns of CRASH_COLS: original and result follow */

/* Fills c (every field: original and result NULL) from a CRASH_COLS row. */
static void row_to_crash(sqlite3_stmt *st, store_crash *c)
{
    memset(c, 0, sizeof *c);
    c->id = sqlite3_column_int64(st, 0);
    c->created_at = sqlite3_column_int64(st, 1);
    c->format = col_dup(st, 2);
    c->process = col_dup(st, 3);
    c->bundle_id = col_dup(st, 4);
    c->app_version = col_dup(st, 5);
    c->os_version = col_dup(st, 6);
    c->hardware_model = col_dup(st, 7);
    c->incident_id = col_dup(st, 8);
    c->exception_type = col_dup(st, 9);
    c->signature = col_dup(st, 10);
    c->result_at = sqlite3_column_int64(st, 11);
    c->kind = col_dup(st, 12);
    c->bug_type = sqlite3_column_type(st, 13) == SQLITE_NULL ? 0 : sqlite3_column_int(st, 13);
}

static symd_status sq_get_crash(store_db *s, int64_t id, bool with_bytes, store_crash *c,
                            symd_err *err)
{
    memset(c, 0, sizeof *c);
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db,
                           "SELECT " CRASH_COLS ", original, result FROM crashes "
                           "WHERE id = ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "loading crash");
        goto out;
    }
    sqlite3_bind_int64(st, 1, id);
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
    c->result = col_dup(st, CRASH_NCOLS + 1);
    if (with_bytes) {
        const void *b = sqlite3_column_blob(st, CRASH_NCOLS);
        int n = sqlite3_column_bytes(st, CRASH_NCOLS);
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

static symd_status sq_update_crash(store_db *s, int64_t id, const char *signature,
                               const char *kind, int bug_type, const char *result,
                               symd_err *err)
{
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db,
                           "UPDATE crashes SET signature = ?2, result = ?3, result_at = ?4, "
                           "kind = ?5, bug_type = ?6 WHERE id = ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "updating crash");
        goto out;
    }
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, signature, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, result, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, store_now_ms());
    sqlite3_bind_text(st, 5, kind ? kind : "crash", -1, SQLITE_STATIC);
    bind_bug_type(st, 6, bug_type);
    if (sqlite3_step(st) != SQLITE_DONE)
        r = db_fail(err, db, "updating crash");
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

static symd_status sq_list_crashes(store_db *s, const char *query, const char *kind,
                               const char *signature, int64_t before_id, size_t limit,
                               store_crash *out, size_t *n, bool *more, symd_err *err)
{
    *n = 0;
    *more = false;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db,
                           "SELECT " CRASH_COLS " FROM crashes WHERE (?1 = 0 OR id < ?1) "
                           "AND (?2 IS NULL OR instr(lower(coalesce(process, '') || ' ' || "
                           "coalesce(bundle_id, '') || ' ' || signature || ' ' || "
                           "coalesce(exception_type, '') || ' ' || coalesce(app_version, '') "
                           "|| ' ' || coalesce(incident_id, '')), lower(?2)) > 0) "
                           "AND (?4 IS NULL OR signature = ?4) "
                           "AND (?5 IS NULL OR kind = ?5) "
                           "ORDER BY id DESC LIMIT ?3",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "listing crashes");
        goto out;
    }
    sqlite3_bind_int64(st, 1, before_id);
    bind_text_or_null(st, 2, query && *query ? query : NULL);
    sqlite3_bind_int64(st, 3, (int64_t)limit + 1);
    bind_text_or_null(st, 4, signature);
    bind_text_or_null(st, 5, kind);
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
    return r;
}

static symd_status sq_crash_groups(store_db *s, const char *query, const char *kind, size_t limit,
                               store_crash_group *out, size_t *n, symd_err *err)
{
    *n = 0;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    /* app_version and process are the newest crash's of the group. */
    if (sqlite3_prepare_v2(db,
                           "SELECT kind, signature, count(*), min(created_at), "
                           "max(created_at), max(id), "
                           "(SELECT c2.app_version FROM crashes c2 WHERE c2.kind = "
                           "crashes.kind AND c2.signature = crashes.signature "
                           "ORDER BY c2.id DESC LIMIT 1), "
                           "(SELECT c3.process FROM crashes c3 WHERE c3.kind = crashes.kind "
                           "AND c3.signature = crashes.signature ORDER BY c3.id DESC LIMIT 1) "
                           "FROM crashes WHERE (?1 IS NULL OR instr(lower(signature || ' ' || "
                           "coalesce(process, '')), lower(?1)) > 0) "
                           "AND (?3 IS NULL OR kind = ?3) GROUP BY kind, signature "
                           "ORDER BY count(*) DESC, max(created_at) DESC LIMIT ?2",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "grouping crashes");
        goto out;
    }
    bind_text_or_null(st, 1, query && *query ? query : NULL);
    sqlite3_bind_int64(st, 2, (int64_t)limit);
    bind_text_or_null(st, 3, kind);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < limit) {
        store_crash_group *g = &out[(*n)++];
        g->kind = col_dup(st, 0);
        g->signature = col_dup(st, 1);
        g->count = sqlite3_column_int64(st, 2);
        g->first_seen = sqlite3_column_int64(st, 3);
        g->last_seen = sqlite3_column_int64(st, 4);
        g->example_id = sqlite3_column_int64(st, 5);
        g->app_version = col_dup(st, 6);
        g->process = col_dup(st, 7);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = db_fail(err, db, "grouping crashes");
out:
    sqlite3_finalize(st);
    conn_put(s, ci);
    return r;
}

static symd_status sq_missing_images(store_db *s, size_t limit, store_missing *out, size_t *n,
                                 symd_err *err)
{
    *n = 0;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    if (sqlite3_prepare_v2(db,
                           "SELECT ci.uuid, ci.arch, max(ci.name), count(DISTINCT ci.crash_id), "
                           "max(ci.crash_id), (SELECT group_concat(i.arch, ',') FROM images i "
                           "WHERE i.uuid = ci.uuid) "
                           "FROM crash_images ci WHERE NOT EXISTS (SELECT 1 "
                           "FROM images i WHERE i.uuid = ci.uuid AND (ci.arch = '' OR i.arch "
                           "= ci.arch)) GROUP BY ci.uuid, ci.arch "
                           "ORDER BY count(DISTINCT ci.crash_id) DESC, max(ci.crash_id) DESC "
                           "LIMIT ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "listing missing images");
        goto out;
    }
    sqlite3_bind_int64(st, 1, (int64_t)limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < limit) {
        store_missing *m = &out[(*n)++];
        memset(m, 0, sizeof *m);
        const void *u = sqlite3_column_blob(st, 0);
        if (u && sqlite3_column_bytes(st, 0) == 16)
            memcpy(m->uuid, u, 16);
        copy_text(m->arch, sizeof m->arch, sqlite3_column_text(st, 1));
        copy_text(m->name, sizeof m->name, sqlite3_column_text(st, 2));
        m->crashes = sqlite3_column_int64(st, 3);
        m->last_crash_id = sqlite3_column_int64(st, 4);
        const char *others = (const char *)sqlite3_column_text(st, 5);
        m->found_other_arch = others && *others;
        copy_text(m->other_archs, sizeof m->other_archs, (const unsigned char *)others);
        if (others && strlen(others) >= sizeof m->other_archs) { /* whole names only */
            char *cut = strrchr(m->other_archs, ',');
            if (cut)
                *cut = 0;
        }
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = db_fail(err, db, "listing missing images");
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
                                 symd_err *err)
{
    *sym = *lines = NULL;
    int ci = conn_get(s);
    sqlite3 *db = s->conns[ci];
    sqlite3_stmt *st = NULL;
    symd_status r = SYMD_OK;
    /* One read transaction so the row, the slice count and the blobs agree. */
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    if (sqlite3_prepare_v2(db,
                           "SELECT " IMAGE_COLS ", (SELECT count(*) FROM images i2 "
                           "WHERE i2.uuid = images.uuid), (SELECT d.data FROM "
                           "image_data d WHERE d.image_id = images.id AND d.kind = "
                           "'symbols'), (SELECT d.data FROM image_data d WHERE "
                           "d.image_id = images.id AND d.kind = 'lines') FROM images "
                           "WHERE uuid = ?1 AND (?2 IS NULL OR arch = ?2) ORDER BY arch "
                           "LIMIT 2",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(err, db, "loading image");
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
    *nslices = sqlite3_column_int(st, 12);
    if (!arch && *nslices > 1) {
        r = symd_fail(err, SYMD_E_INVALID, "image has %d architectures; name one with \"arch\"",
                      *nslices);
        goto out;
    }
    if ((r = column_copy(st, 13, sym, sym_len, err)) == SYMD_OK)
        r = column_copy(st, 14, lines, lines_len, err);
out:
    sqlite3_finalize(st);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    conn_put(s, ci);
    if (r != SYMD_OK) {
        free(*sym);
        free(*lines);
        *sym = *lines = NULL;
    }
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
    .put_crash = sq_put_crash,
    .get_crash = sq_get_crash,
    .update_crash = sq_update_crash,
    .list_crashes = sq_list_crashes,
    .crash_groups = sq_crash_groups,
    .missing_images = sq_missing_images,
};

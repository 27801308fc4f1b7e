/* store/: round trip, idempotent re-upload, all-or-nothing uploads, cache,
 * schema versioning and migration, crash kinds, missing images; with
 * SYMD_TEST_PG set to a PostgreSQL server's URI (its database is only used
 * to create and drop others), every test runs against a fresh PostgreSQL
 * database of its own instead of a SQLite file, and the tests of several
 * nodes on one database (notices, concurrent writers, retention's lock,
 * reconnection) and of symd migrate run too. */
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "../ingest/ingest.h"
#include "../parser/crash.h"
#include "../server/crashsym.h"
#include "../store/store.h"
#include "../util/hex.h"
#include "schema_v2.h"
#include "test.h"

/* The server tests run against (SYMD_TEST_PG), or NULL: SQLite files. */
static const char *pg_server(void)
{
    const char *v = getenv("SYMD_TEST_PG");
    return v && *v ? v : NULL;
}

/* uri with its database name replaced by name, in a static buffer rotated
 * among 4 slots. */
static const char *pg_uri_for(const char *uri, const char *name)
{
    static char bufs[4][1024];
    static int next;
    char *out = bufs[next++ % 4];
    const char *auth = strstr(uri, "://");
    auth = auth ? auth + 3 : uri;
    const char *q = strchr(auth, '?'), *end = q ? q : auth + strlen(auth);
    const char *slash = memchr(auth, '/', (size_t)(end - auth));
    const char *cut = slash ? slash : end;
    snprintf(out, 1024, "%.*s/%s%s", (int)(cut - uri), uri, name, q ? q : "");
    return out;
}

static char pg_made[64][64];
static int pg_nmade;

/* Runs sql on the database uri names; 0 on success. */
static int pg_exec(const char *uri, const char *sql)
{
    PGconn *c = PQconnectdb(uri);
    int rc = -1;
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, sql);
        rc = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK
                 ? 0
                 : -1;
        if (rc)
            fprintf(stderr, "pg_exec: %s", PQresultErrorMessage(r));
        PQclear(r);
    }
    PQfinish(c);
    return rc;
}

static void pg_drop_all(void)
{
    for (int i = 0; i < pg_nmade; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %.63s WITH (FORCE)", pg_made[i]);
        pg_exec(pg_server(), sql);
    }
}

/* A fresh, empty PostgreSQL database (dropped at exit); its URI. */
static const char *pg_fresh(void)
{
    if (pg_nmade == 64)
        return NULL;
    char *name = pg_made[pg_nmade];
    snprintf(name, 64, "symd_t_%d_%d", (int)getpid(), pg_nmade);
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %.63s", name);
    if (pg_exec(pg_server(), sql) != 0)
        return NULL;
    if (pg_nmade++ == 0)
        atexit(pg_drop_all);
    return pg_uri_for(pg_server(), name);
}

/* Where a test's store lives: a fresh PostgreSQL database (SYMD_TEST_PG),
 * else the file name in the test directory. */
static const char *db_path(const char *name)
{
    static char p[1024];
    const char *uri = pg_server() ? pg_fresh() : NULL;
    if (uri)
        snprintf(p, sizeof p, "%s", uri);
    else
        snprintf(p, sizeof p, "%s/%s", test_tmpdir(), name);
    return p;
}

static bool is_pg(const char *db)
{
    return strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0;
}

/* The first column of the first row of sql on db (either backend) as a
 * number; -1 on any error. */
static long long query_int(const char *db, const char *sql)
{
    long long v = -1;
    if (is_pg(db)) {
        PGconn *c = PQconnectdb(db);
        PGresult *r = PQstatus(c) == CONNECTION_OK ? PQexec(c, sql) : NULL;
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
            v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        else if (r)
            fprintf(stderr, "query_int: %s", PQresultErrorMessage(r));
        PQclear(r);
        PQfinish(c);
        return v;
    }
    sqlite3 *h;
    sqlite3_stmt *st;
    if (sqlite3_open(db, &h) == SQLITE_OK &&
        sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return v;
}

static symd_status upload(store *s, const char *rel, store_put_result *res,
                          store_image *stored, size_t *n)
{
    size_t len;
    uint8_t *buf = read_fixture(rel, &len);
    ingest_batch b;
    ingest_batch_init(&b);
    symd_err err = {0};
    symd_status st = ingest_add_file(&b, buf, len, rel, &err);
    if (st == SYMD_OK)
        st = ingest_commit(s, &b, res, stored, &err);
    *n = b.n;
    ingest_batch_free(&b);
    free(buf);
    return st;
}

static int exec_sql(const char *db, const char *sql)
{
    if (is_pg(db))
        return pg_exec(db, sql);
    sqlite3 *h;
    if (sqlite3_open(db, &h) != SQLITE_OK)
        return -1;
    int rc = sqlite3_exec(h, sql, NULL, NULL, NULL);
    sqlite3_close(h);
    return rc;
}

TEST(store_round_trip_and_idempotent_reupload)
{
    store *s;
    symd_err err = {0};
    const char *db = db_path("roundtrip.db");
    CHECK(store_open(db, 2, 1 << 20, &s, &err) == SYMD_OK, "%s", err.msg);
    if (!s)
        return;
    store_put_result res[4];
    store_image stored[4];
    size_t n;
    CHECK(upload(s, "fixtures/bin/bigapp-fat", res, stored, &n) == SYMD_OK && n == 2,
          "fat upload");
    CHECK(res[0] == STORE_CREATED && res[1] == STORE_CREATED, "created");
    CHECK(strcmp(stored[0].name, "bigapp-fat") == 0, "named by file: %s", stored[0].name);
    CHECK(upload(s, "fixtures/bin/bigapp-fat", res, stored, &n) == SYMD_OK, "again");
    CHECK(res[0] == STORE_EXISTS && res[1] == STORE_EXISTS, "exists");
    int64_t images, blobs;
    /* each slice: its symbol index and its unwind table */
    CHECK(store_counts(s, &images, &blobs, NULL, &err) == SYMD_OK && images == 2 && blobs == 4,
          "counts %lld %lld", (long long)images, (long long)blobs);

    uint8_t u[16];
    uuid_parse("4C4C4490-5555-3144-A17C-64A339EDE13A", u);
    store_loaded *l = NULL;
    CHECK(store_acquire(s, u, NULL, &l, &err) == SYMD_OK, "acquire: %s", err.msg);
    if (l) {
        CHECK(strcmp(l->meta.arch, "arm64") == 0 && l->meta.symbols == 24, "meta");
        symlook look;
        symindex_lookup(&l->sym, 0x100000884, &look);
        CHECK(look.status == SYMLOOK_SYMBOL && strcmp(look.name, "interpret") == 0 &&
                  look.offset == 4,
              "lookup through the store");
        store_release(s, l);
    }
    store_cache_stats cs;
    store_cache_stats_get(s, &cs);
    uint64_t misses = cs.misses;
    CHECK(store_acquire(s, u, "arm64", &l, &err) == SYMD_OK, "acquire 2");
    store_release(s, l);
    store_cache_stats_get(s, &cs);
    CHECK(cs.hits >= 1 && cs.misses == misses && cs.entries == 1 && cs.bytes > 0,
          "second acquire is a cache hit (hits %llu misses %llu)",
          (unsigned long long)cs.hits, (unsigned long long)cs.misses);
    uint8_t none[16] = {0};
    CHECK(store_acquire(s, none, NULL, &l, &err) == SYMD_E_NOT_FOUND, "unknown uuid");
    symd_err_clear(&err);
    CHECK(store_acquire(s, u, "x86_64", &l, &err) == SYMD_E_NOT_FOUND, "wrong arch");
    symd_err_clear(&err);

    size_t deleted;
    CHECK(store_delete_image(s, u, &deleted, &err) == SYMD_OK && deleted == 1, "delete");
    CHECK(store_acquire(s, u, NULL, &l, &err) == SYMD_E_NOT_FOUND, "deleted: not cached");
    CHECK(store_counts(s, &images, &blobs, NULL, &err) == SYMD_OK && images == 1 && blobs == 2,
          "delete cascades to the index blob: %lld %lld", (long long)images, (long long)blobs);
    store_close(s);
}

/* A fat upload whose second slice cannot be written stores neither. */
TEST(store_upload_is_all_or_nothing)
{
    store *s;
    symd_err err = {0};
    const char *db = db_path("atomic.db");
    CHECK(store_open(db, 1, 1 << 20, &s, &err) == SYMD_OK, "%s", err.msg);
    if (!s)
        return;
    store_close(s);
    CHECK(exec_sql(db, is_pg(db)
                           ? "CREATE FUNCTION no_x86() RETURNS trigger AS $$ BEGIN IF NEW.arch "
                             "= 'x86_64' THEN RAISE EXCEPTION 'x86 refused'; END IF; RETURN "
                             "NEW; END $$ LANGUAGE plpgsql; CREATE TRIGGER no_x86 BEFORE INSERT "
                             "ON images FOR EACH ROW EXECUTE FUNCTION no_x86()"
                           : "CREATE TRIGGER no_x86 BEFORE INSERT ON images WHEN "
                             "NEW.arch = 'x86_64' BEGIN SELECT RAISE(ABORT, 'x86 refused'); END")
              == SQLITE_OK,
          "trigger");
    CHECK(store_open(db, 1, 1 << 20, &s, &err) == SYMD_OK, "%s", err.msg);
    store_put_result res[4];
    store_image stored[4];
    size_t n;
    symd_status st = upload(s, "fixtures/bin/bigapp-fat", res, stored, &n);
    CHECK(st == SYMD_E_DB, "upload must fail: %s", symd_status_name(st));
    int64_t images = -1, blobs = -1;
    CHECK(store_counts(s, &images, &blobs, NULL, &err) == SYMD_OK && images == 0 && blobs == 0,
          "nothing stored: %lld images %lld blobs", (long long)images, (long long)blobs);
    store_close(s);
}

TEST(store_schema_is_versioned)
{
    store *s;
    symd_err err = {0};
    const char *db = db_path("schema.db");
    CHECK(store_open(db, 1, 0, &s, &err) == SYMD_OK, "%s", err.msg);
    store_close(s);
    if (is_pg(db)) {
        CHECK(query_int(db, "SELECT version FROM symd_schema") == STORE_SCHEMA_VERSION,
              "schema version");
    } else {
        sqlite3 *h;
        sqlite3_open(db, &h);
        sqlite3_stmt *st;
        sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL);
        CHECK(sqlite3_step(st) == SQLITE_ROW &&
                  sqlite3_column_int(st, 0) == STORE_SCHEMA_VERSION,
              "user_version");
        sqlite3_finalize(st);
        sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL);
        CHECK(sqlite3_step(st) == SQLITE_ROW &&
                  strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0,
              "WAL mode");
        sqlite3_finalize(st);
        sqlite3_close(h);
    }
    /* Reopening an up-to-date database migrates nothing and works. */
    CHECK(store_open(db, 1, 0, &s, &err) == SYMD_OK, "reopen: %s", err.msg);
    store_close(s);
    /* A database from a newer symd is refused, not damaged. */
    CHECK(exec_sql(db, is_pg(db) ? "UPDATE symd_schema SET version = 99"
                                 : "PRAGMA user_version = 99") == SQLITE_OK,
          "bump");
    s = NULL;
    CHECK(store_open(db, 1, 0, &s, &err) == SYMD_E_DB && !s && strstr(err.msg, "newer"),
          "newer schema refused: %s", err.msg);
}

/* An index larger than the whole cache is still served, just not kept. */
TEST(store_cache_bound_is_respected)
{
    store *s;
    symd_err err = {0};
    CHECK(store_open(db_path("cache.db"), 1, 100, &s, &err) == SYMD_OK, "%s", err.msg);
    if (!s)
        return;
    store_put_result res[4];
    store_image stored[4];
    size_t n;
    upload(s, "fixtures/bin/bigapp-arm64", res, stored, &n);
    uint8_t u[16];
    uuid_parse("4C4C4490-5555-3144-A17C-64A339EDE13A", u);
    for (int i = 0; i < 3; i++) {
        store_loaded *l = NULL;
        CHECK(store_acquire(s, u, NULL, &l, &err) == SYMD_OK, "acquire");
        store_release(s, l);
    }
    store_cache_stats cs;
    store_cache_stats_get(s, &cs);
    CHECK(cs.bytes <= 100 && cs.entries == 0 && cs.misses == 3, "bytes %llu entries %llu",
          (unsigned long long)cs.bytes, (unsigned long long)cs.entries);
    store_close(s);
}

/* Builds a version-2 database at path (the schema before crash kinds) with
 * two crashes as that symd stored them; false on any SQLite error. */
static bool make_v2_db(const char *path, const uint8_t *orig, size_t orig_len)
{
    sqlite3 *h;
    if (sqlite3_open(path, &h) != SQLITE_OK)
        return false;
    bool ok = sqlite3_exec(h, SCHEMA_V2_SQL, NULL, NULL, NULL) == SQLITE_OK;
    for (int i = 0; ok && i < 2; i++) {
        sqlite3_stmt *st;
        ok = sqlite3_prepare_v2(h, SCHEMA_V2_INSERT_CRASH, -1, &st, NULL) == SQLITE_OK;
        if (!ok)
            break;
        sqlite3_bind_text(st, 1, i ? "ips" : "crash", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, "OldApp", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, i ? "other_sig" : "old_sig", -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 4, orig, (int)orig_len, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, "{\"id\":null}", -1, SQLITE_STATIC);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
    }
    /* crash 1 needs an image the store will hold under another arch only */
    ok = ok && sqlite3_exec(h,
                            "INSERT INTO crash_images VALUES (1, x'4C4C449055553144A17C64A339EDE13A',"
                            " 'x86_64', 'bigapp'), (2, x'00112233445566778899AABBCCDDEEFF',"
                            " 'arm64', 'gone')",
                            NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(h);
    return ok;
}

/* A database written by the schema before crash kinds (user_version 2)
 * migrates in place with nothing lost: its crashes read back as kind
 * "crash" without a bug_type, with their original bytes (stored raw, as
 * they were), signatures and needed images; the counters are built from
 * them; new crashes carry their kind and filter and group by it. */
TEST(store_crash_kinds_migrate_from_version_2)
{
    char file[512];
    snprintf(file, sizeof file, "%s/v2.db", test_tmpdir());
    static const uint8_t orig[] = "Incident Identifier: X\n\0binary\xff tail";
    CHECK(make_v2_db(file, orig, sizeof orig), "building the version-2 database");
    store *s = NULL;
    symd_err err = {0};
    CHECK(store_open(file, 1, 1 << 20, &s, &err) == SYMD_OK, "migrating: %s", err.msg);
    if (!s)
        return;
    CHECK(query_int(file, "PRAGMA user_version") == STORE_SCHEMA_VERSION &&
              STORE_SCHEMA_VERSION == 13,
          "user_version after the migration");
    const char *db = file;
    if (pg_server()) { /* the migrated file, copied into PostgreSQL (symd migrate) */
        store_close(s);
        s = NULL;
        db = db_path("v2");
        store_copy_table t[STORE_COPY_TABLES];
        CHECK(store_migrate(file, db, t, &err) == SYMD_OK, "symd migrate: %s", err.msg);
        CHECK(store_open(db, 1, 1 << 20, &s, &err) == SYMD_OK, "open: %s", err.msg);
        if (!s)
            return;
    }

    /* the old crashes are listed to file again under this symd's grouping
     * rule (schema 7), newest first; symd migrate copies the list */
    int64_t todo[4];
    size_t ntodo = 0;
    CHECK(store_regroup_next(s, todo, 4, &ntodo, &err) == SYMD_OK && ntodo == 2 &&
              todo[0] == 2 && todo[1] == 1,
          "crashes to file again: %zu (%s)", ntodo, err.msg);
    CHECK(store_regroup_done(s, todo, 1, &err) == SYMD_OK &&
              store_regroup_next(s, todo, 4, &ntodo, &err) == SYMD_OK && ntodo == 1 &&
              todo[0] == 1,
          "one taken off the list: %zu left", ntodo);

    store_crash c;
    CHECK(store_get_crash(s, 1, true, &c, &err) == SYMD_OK, "old crash: %s", err.msg);
    CHECK(c.kind && strcmp(c.kind, "crash") == 0 && c.bug_type == 0 &&
              strcmp(c.format, "crash") == 0 && strcmp(c.signature, "old_sig") == 0 &&
              strcmp(c.process, "OldApp") == 0,
          "old crash reads back: kind %s bug_type %d", c.kind ? c.kind : "(null)", c.bug_type);
    CHECK(c.original_len == sizeof orig && memcmp(c.original, orig, sizeof orig) == 0,
          "original bytes kept (%zu of %zu)", c.original_len, sizeof orig);
    store_crash_free(&c);

    /* the counters, built from the old rows */
    store_crash_filter all = {0}, old = {.query = "old_sig"};
    store_crash_group g[8];
    size_t n;
    CHECK(store_crash_groups(s, &all, 8, g, &n, &err) == SYMD_OK && n == 2 && g[0].count == 1,
          "groups after the migration: %zu", n);
    for (size_t i = 0; i < n; i++)
        store_crash_group_free(&g[i]);

    /* new reports: a hang with its bug_type, a crash of the old signature */
    store_crash hang = {.format = "ips", .kind = "hang", .bug_type = 288, .process = "H",
                        .signature = "old_sig", .original = (uint8_t *)"x", .original_len = 1};
    int64_t id = 0;
    CHECK(store_put_crash(s, &hang, NULL, 0, &id, &err) == SYMD_OK && id == 3, "put hang: %s",
          err.msg);
    CHECK(store_get_crash(s, id, true, &c, &err) == SYMD_OK && strcmp(c.kind, "hang") == 0 &&
              c.bug_type == 288 && c.original_len == 1 && c.original[0] == 'x',
          "hang reads back, its original through zstd");
    store_crash_free(&c);

    store_crash rows[8];
    bool more;
    store_crash_filter f = {.kind = "hang"};
    CHECK(store_list_crashes(s, &f, 0, 8, rows, &n, &more, &err) == SYMD_OK && n == 1 &&
              rows[0].id == 3 && !rows[0].original,
          "?kind=hang: %zu rows", n);
    for (size_t i = 0; i < n; i++)
        store_crash_free(&rows[i]);
    f = (store_crash_filter){.kind = "crash", .signature = "old_sig"};
    CHECK(store_list_crashes(s, &f, 0, 8, rows, &n, &more, &err) == SYMD_OK && n == 1 &&
              rows[0].id == 1,
          "kind crash, signature old_sig: %zu rows", n);
    for (size_t i = 0; i < n; i++)
        store_crash_free(&rows[i]);
    CHECK(store_list_crashes(s, &all, 0, 8, rows, &n, &more, &err) == SYMD_OK && n == 3,
          "no filter: %zu rows", n);
    for (size_t i = 0; i < n; i++)
        store_crash_free(&rows[i]);

    /* one signature, two kinds: two groups, each saying its kind */
    CHECK(store_crash_groups(s, &old, 8, g, &n, &err) == SYMD_OK && n == 2,
          "groups of old_sig: %zu", n);
    bool hang_group = false, crash_group = false;
    for (size_t i = 0; i < n; i++) {
        hang_group |= strcmp(g[i].kind, "hang") == 0 && g[i].count == 1 && g[i].example_id == 3;
        crash_group |= strcmp(g[i].kind, "crash") == 0 && g[i].count == 1 &&
                       g[i].example_id == 1 && strcmp(g[i].process, "OldApp") == 0;
        store_crash_group_free(&g[i]);
    }
    CHECK(hang_group && crash_group, "a group per kind");
    f = (store_crash_filter){.kind = "hang"};
    CHECK(store_crash_groups(s, &f, 8, g, &n, &err) == SYMD_OK && n == 1 &&
              strcmp(g[0].signature, "old_sig") == 0,
          "groups ?kind=hang: %zu", n);
    for (size_t i = 0; i < n; i++)
        store_crash_group_free(&g[i]);

    /* ?format=: the hang and old crash 2 are .ips; groups then come from
     * the crashes themselves */
    f = (store_crash_filter){.format = "ips"};
    CHECK(store_list_crashes(s, &f, 0, 8, rows, &n, &more, &err) == SYMD_OK && n == 2 &&
              rows[0].id == 3 && rows[1].id == 2 && strcmp(rows[0].format, "ips") == 0 &&
              strcmp(rows[1].format, "ips") == 0,
          "?format=ips: %zu rows", n);
    for (size_t i = 0; i < n; i++)
        store_crash_free(&rows[i]);
    f = (store_crash_filter){.format = "crash", .query = "old"};
    CHECK(store_list_crashes(s, &f, 0, 8, rows, &n, &more, &err) == SYMD_OK && n == 1 &&
              rows[0].id == 1,
          "?format=crash&query=old: %zu rows", n);
    for (size_t i = 0; i < n; i++)
        store_crash_free(&rows[i]);
    f = (store_crash_filter){.format = "ips", .query = "old_sig"};
    CHECK(store_crash_groups(s, &f, 8, g, &n, &err) == SYMD_OK && n == 1 &&
              strcmp(g[0].kind, "hang") == 0 && g[0].count == 1 && g[0].example_id == 3,
          "groups ?format=ips: %zu", n);
    for (size_t i = 0; i < n; i++)
        store_crash_group_free(&g[i]);
    f = (store_crash_filter){.format = "kscrash"};
    CHECK(store_crash_groups(s, &f, 8, g, &n, &err) == SYMD_OK && n == 0,
          "groups ?format=kscrash: %zu", n);
    for (size_t i = 0; i < n; i++)
        store_crash_group_free(&g[i]);

    /* a re-read refiles an old row: its counters move with it */
    CHECK(store_update_crash(s, 2, "new_sig", "resource", 145, NULL, &err) == SYMD_OK, "update: %s",
          err.msg);
    CHECK(store_get_crash(s, 2, false, &c, &err) == SYMD_OK &&
              strcmp(c.kind, "resource") == 0 && c.bug_type == 145 &&
              strcmp(c.signature, "new_sig") == 0,
          "updated kind and bug_type");
    store_crash_free(&c);
    f = (store_crash_filter){.kind = "resource", .signature = "new_sig"};
    CHECK(store_crash_groups(s, &f, 8, g, &n, &err) == SYMD_OK && n == 1 && g[0].count == 1 &&
              g[0].example_id == 2,
          "the refiled crash's new group");
    for (size_t i = 0; i < n; i++)
        store_crash_group_free(&g[i]);
    f = (store_crash_filter){.kind = "crash", .signature = "other_sig"};
    CHECK(store_crash_groups(s, &f, 8, g, &n, &err) == SYMD_OK && n == 0,
          "its old group is gone: %zu", n);
    for (size_t i = 0; i < n; i++)
        store_crash_group_free(&g[i]);

    /* missing images: never uploaded, and stored under another arch */
    store_missing m[8];
    CHECK(store_missing_images(s, STORE_MISSING_ALL, 8, m, &n, &err) == SYMD_OK && n == 2,
          "missing: %zu", n);
    for (size_t i = 0; i < n; i++)
        CHECK(!m[i].found_other_arch && !m[i].other_archs[0], "nothing uploaded yet");
    store_put_result res[4];
    store_image stored[4];
    size_t nu;
    CHECK(upload(s, "fixtures/bin/bigapp-arm64", res, stored, &nu) == SYMD_OK, "upload");
    CHECK(store_missing_images(s, STORE_MISSING_ALL, 8, m, &n, &err) == SYMD_OK && n == 2,
          "missing: %zu", n);
    char u[37];
    for (size_t i = 0; i < n; i++) {
        uuid_format(m[i].uuid, u);
        if (strcmp(u, "4C4C4490-5555-3144-A17C-64A339EDE13A") == 0)
            CHECK(m[i].found_other_arch && strcmp(m[i].other_archs, "arm64") == 0 &&
                      strcmp(m[i].arch, "x86_64") == 0 && m[i].last_crash_id == 1,
                  "bigapp needed as x86_64, stored as arm64: %d '%s'", m[i].found_other_arch,
                  m[i].other_archs);
        else
            CHECK(!m[i].found_other_arch && strcmp(m[i].name, "gone") == 0,
                  "the never-uploaded image: %s", u);
    }
    /* deleting crash 1 takes it out of its group and the needed images */
    bool deleted;
    CHECK(store_delete_crash(s, 1, &deleted, &err) == SYMD_OK && deleted, "delete: %s", err.msg);
    CHECK(store_delete_crash(s, 1, &deleted, &err) == SYMD_OK && !deleted, "delete again");
    CHECK(store_missing_images(s, STORE_MISSING_ALL, 8, m, &n, &err) == SYMD_OK && n == 1 &&
              strcmp(m[0].name, "gone") == 0,
          "missing after the delete: %zu", n);
    f = (store_crash_filter){.kind = "crash"};
    CHECK(store_crash_groups(s, &f, 8, g, &n, &err) == SYMD_OK && n == 0,
          "kind crash has no group left: %zu", n);
    for (size_t i = 0; i < n; i++)
        store_crash_group_free(&g[i]);
    store_close(s);
    /* and it opens again without migrating anything */
    CHECK(store_open(db, 1, 0, &s, &err) == SYMD_OK, "reopen: %s", err.msg);
    store_close(s);
}

/* The missing image of m with uuid u[0] == b (the test's UUIDs differ in
 * their first byte); NULL when none. */
static const store_missing *missing_of(const store_missing *m, size_t n, uint8_t b)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].uuid[0] == b)
            return &m[i];
    return NULL;
}

/* crash_image_refs.system as crashes come and go, in both backends: an
 * image is the OS's once any crash says so; the missing images listed by
 * app or system, each with its newest crash's versions and app image; the
 * missing system images counted by OS build and arch from those counters. */
TEST(store_missing_tells_app_from_system)
{
    store *s = NULL;
    symd_err err = {0};
    const char *db = db_path("appsys.db");
    CHECK(store_open(db, 1, 1 << 20, &s, &err) == SYMD_OK, "open: %s", err.msg);
    if (!s)
        return;
    /* crash 1: the app (0xA1) and a framework of its bundle (0xB1); two
     * libraries of iOS 17.1 (0xC1, 0xD1) */
    store_crash c1 = {.format = "ips", .kind = "crash", .signature = "s", .process = "App",
                      .app_version = "1.0 (1)", .os_version = "iPhone OS 17.1 (21B91)",
                      .original = (uint8_t *)"r1", .original_len = 2};
    store_crash_image i1[4] = {{.arch = "arm64", .name = "App", .app = true},
                               {.arch = "arm64", .name = "Kit"},
                               {.arch = "arm64e", .name = "UIKitCore", .system = true},
                               {.arch = "arm64e", .name = "libdispatch.dylib", .system = true}};
    static const uint8_t first1[4] = {0xA1, 0xB1, 0xC1, 0xD1};
    for (int i = 0; i < 4; i++)
        i1[i].uuid[0] = first1[i];
    /* crash 2 (iOS 17.2, app 1.1): the app again, UIKitCore said by a
     * report that cannot tell (system false), one more library (0xE1) */
    store_crash c2 = c1;
    c2.app_version = "1.1 (2)";
    c2.os_version = "iPhone OS 17.2 (21C62)";
    c2.original = (uint8_t *)"r2";
    store_crash_image i2[3] = {{.arch = "arm64", .name = "App", .app = true},
                               {.arch = "arm64e", .name = "UIKitCore"},
                               {.arch = "arm64e", .name = "CoreFoundation", .system = true}};
    static const uint8_t first2[3] = {0xA1, 0xC1, 0xE1};
    for (int i = 0; i < 3; i++)
        i2[i].uuid[0] = first2[i];
    int64_t id1 = 0, id2 = 0;
    CHECK(store_put_crash(s, &c1, i1, 4, &id1, &err) == SYMD_OK &&
              store_put_crash(s, &c2, i2, 3, &id2, &err) == SYMD_OK,
          "put: %s", err.msg);
    CHECK(query_int(db, "SELECT count(*) FROM crash_image_refs WHERE system") == 3 &&
              query_int(db, "SELECT count(*) FROM crash_image_refs WHERE NOT system") == 2,
          "crash_image_refs.system: %lld system, %lld not",
          query_int(db, "SELECT count(*) FROM crash_image_refs WHERE system"),
          query_int(db, "SELECT count(*) FROM crash_image_refs WHERE NOT system"));

    store_missing m[8];
    size_t n = 0;
    CHECK(store_missing_images(s, STORE_MISSING_ALL, 8, m, &n, &err) == SYMD_OK && n == 5,
          "all missing: %zu", n);
    const store_missing *a = missing_of(m, n, 0xA1), *c = missing_of(m, n, 0xC1);
    CHECK(a && !a->system && a->app && a->crashes == 2 && a->last_crash_id == id2 &&
              !strcmp(a->app_version, "1.1 (2)") &&
              !strcmp(a->os_version, "iPhone OS 17.2 (21C62)"),
          "the app: system %d app %d '%s'", a ? a->system : -1, a ? a->app : -1,
          a ? a->app_version : "");
    CHECK(c && c->system && !c->app && c->crashes == 2, "UIKitCore stays the OS's");
    CHECK(store_missing_images(s, STORE_MISSING_APP, 8, m, &n, &err) == SYMD_OK && n == 2 &&
              missing_of(m, n, 0xA1) && missing_of(m, n, 0xB1) && !m[0].system && !m[1].system,
          "the app's: %zu", n);
    const store_missing *b = missing_of(m, n, 0xB1);
    CHECK(b && !b->app && !strcmp(b->app_version, "1.0 (1)"),
          "the framework: its crash's version");
    CHECK(store_missing_images(s, STORE_MISSING_SYSTEM, 8, m, &n, &err) == SYMD_OK && n == 3 &&
              m[0].system && m[1].system && m[2].system && m[0].uuid[0] == 0xC1,
          "the OS's: %zu, most needed first", n);

    /* by build: 0xC1 and 0xE1 were last needed on 17.2, 0xD1 on 17.1 */
    store_missing_os g[4];
    CHECK(store_missing_system(s, 4, g, &n, &err) == SYMD_OK && n == 2, "groups: %zu %s", n,
          err.msg);
    CHECK(n == 2 && !strcmp(g[0].os_version, "iPhone OS 17.2 (21C62)") &&
              !strcmp(g[0].arch, "arm64e") && g[0].images == 2 && g[0].last_crash_id == id2 &&
              !strcmp(g[1].os_version, "iPhone OS 17.1 (21B91)") && g[1].images == 1 &&
              g[1].last_crash_id == id1,
          "groups: '%s' %lld, '%s' %lld", n ? g[0].os_version : "", n ? (long long)g[0].images : 0,
          n > 1 ? g[1].os_version : "", n > 1 ? (long long)g[1].images : 0);
    CHECK(store_missing_system(s, 1, g, &n, &err) == SYMD_OK && n == 1 && g[0].images == 2,
          "limit 1: %zu", n);
    /* crash 3, as an in-app reporter words the same build: one more
     * library of it (0xF1); one group, worded as its newest crash */
    store_crash c3 = c2;
    c3.os_version = "iOS 17.2 (21C62)";
    c3.original = (uint8_t *)"r3";
    store_crash_image i3 = {.arch = "arm64e", .name = "Foundation", .system = true};
    i3.uuid[0] = 0xF1;
    int64_t id3 = 0;
    CHECK(store_put_crash(s, &c3, &i3, 1, &id3, &err) == SYMD_OK, "put 3: %s", err.msg);
    CHECK(store_missing_system(s, 4, g, &n, &err) == SYMD_OK && n == 2 &&
              !strcmp(g[0].os_version, "iOS 17.2 (21C62)") && g[0].images == 3 &&
              g[0].last_crash_id == id3 && g[1].images == 1,
          "one build worded two ways: %zu groups, '%s' %lld", n, n ? g[0].os_version : "",
          n ? (long long)g[0].images : 0);

    /* an uploaded library is no longer missing, in either list */
    CHECK(exec_sql(db, "INSERT INTO images(uuid, arch, name, kind, text_vmaddr, text_size, "
                       "symbols, functions, created_at, updated_at) SELECT uuid, arch, name, "
                       "'dylib', 0, 0, 0, 0, 0, 0 FROM crash_image_refs WHERE name = "
                       "'CoreFoundation'") == 0,
          "a row for CoreFoundation");
    CHECK(store_missing_system(s, 4, g, &n, &err) == SYMD_OK && n == 2 && g[0].images == 2 &&
              g[1].images == 1,
          "after CoreFoundation came: %zu", n);
    /* crash 2 gone: UIKitCore's newest crash is 1 again, iOS 17.1 */
    bool deleted;
    CHECK(store_delete_crash(s, id2, &deleted, &err) == SYMD_OK && deleted, "delete");
    CHECK(store_missing_system(s, 4, g, &n, &err) == SYMD_OK && n == 2 &&
              !strcmp(g[0].os_version, "iPhone OS 17.1 (21B91)") && g[0].images == 2 &&
              !strcmp(g[1].os_version, "iOS 17.2 (21C62)") && g[1].images == 1,
          "after the delete: %zu '%s'", n, n ? g[0].os_version : "");
    CHECK(store_missing_images(s, STORE_MISSING_APP, 8, m, &n, &err) == SYMD_OK && n == 2 &&
              missing_of(m, n, 0xA1) && !strcmp(missing_of(m, n, 0xA1)->app_version, "1.0 (1)"),
          "the app's newest crash is 1 again");
    store_close(s);
}

/* An image symd import stored (images.system) is the OS's in a crash's
 * answer and in the images the crash needs, whatever the report says of it;
 * the report's own word stays for the images it names the OS's. Over the
 * generated twin bigapp-twin.crash and its real binaries. */
TEST(store_imported_images_are_system)
{
    store *s = NULL;
    symd_err err = {0};
    const char *db = db_path("imported.db");
    CHECK(store_open(db, 1, 1 << 20, &s, &err) == SYMD_OK, "open: %s", err.msg);
    if (!s)
        return;
    store_put_result res[4];
    store_image stored[4];
    size_t n;
    CHECK(upload(s, "fixtures/bin/bigapp-arm64", res, stored, &n) == SYMD_OK &&
              upload(s, "fixtures/bin/libfix-arm64.dylib", res, stored, &n) == SYMD_OK,
          "uploads");
    CHECK(!stored[0].system, "an upload is no system library");
    store_close(s);
    /* as an import would have stored it (written beside the store, which is
     * opened again so nothing of it is remembered) */
    CHECK(exec_sql(db, "UPDATE images SET system = (1 = 1) WHERE name LIKE 'libfix%'") == 0,
          "marking libfix imported");
    s = NULL;
    CHECK(store_open(db, 1, 1 << 20, &s, &err) == SYMD_OK, "reopen: %s", err.msg);
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/bigapp-twin.crash", &len);
    crash_report r;
    if (!s || !buf || crash_parse(buf, len, &r, &err) != SYMD_OK) {
        CHECK(false, "the twin: %s", err.msg);
        free(buf);
        store_close(s);
        return;
    }
    crash_symbolication sym;
    CHECK(crash_symbolicate(s, &r, false, &sym, &err) == SYMD_OK, "symbolicate: %s", err.msg);
    long app = -1, fix = -1, kern = -1;
    for (size_t i = 0; i < r.nimages; i++) {
        const char *nm = r.images[i].name ? r.images[i].name : "";
        if (!strcmp(nm, "bigapp-arm64"))
            app = (long)i;
        else if (!strcmp(nm, "libfix.dylib"))
            fix = (long)i;
        else if (!strcmp(nm, "libsystem_kernel.dylib"))
            kern = (long)i;
    }
    CHECK(app >= 0 && fix >= 0 && kern >= 0, "the twin's three images");
    if (app >= 0 && fix >= 0 && kern >= 0) {
        CHECK(!r.images[fix].system && r.images[kern].system && !r.images[app].system,
              "the report: libfix in the app's bundle, libsystem_kernel in /usr/lib");
        CHECK(sym.image_system[fix] && sym.image_system[kern] && !sym.image_system[app],
              "the answer: libfix imported, so the OS's");
        dynbuf out;
        dynbuf_init(&out, 1 << 16);
        CHECK(crash_write_json(&r, &sym, -1, &out, &err) == SYMD_OK, "json: %s", err.msg);
        json_error_t je;
        json_t *j = out.data ? json_loads((const char *)out.data, 0, &je) : NULL;
        json_t *imgs = json_object_get(j, "images");
        CHECK(json_is_true(json_object_get(json_array_get(imgs, (size_t)fix), "system")) &&
                  json_is_false(json_object_get(json_array_get(imgs, (size_t)app), "system")) &&
                  json_is_true(json_object_get(json_array_get(imgs, (size_t)app), "app")),
              "images[].system in the JSON answer");
        json_decref(j);
        dynbuf_free(&out);
        size_t nn;
        store_crash_image *need = crash_needed_images(&r, &sym, &nn);
        int sys = 0, apps = 0;
        for (size_t i = 0; need && i < nn; i++) {
            sys += need[i].system;
            apps += need[i].app && !need[i].system && !strcmp(need[i].name, "bigapp-arm64");
        }
        CHECK(need && nn == 3 && sys == 2 && apps == 1, "needed: %zu, %d system, %d app", nn,
              sys, apps);
        free(need);
    }
    crash_symbolication_free(&sym);
    crash_report_free(&r);
    free(buf);
    store_close(s);
}

static void check_counters(const char *db, size_t nalive);

/* A small seeded generator for the random runs below. */
static uint32_t rnd(uint32_t *seed, uint32_t n)
{
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 16) % n;
}

/* The counters stay exact as crashes come, move and go: each group's count,
 * first and last seen, example, version and process, its days and its
 * spread, checked against the crashes themselves after every step of a
 * seeded random run (posts, refiles, deletes, a prune). */
TEST(store_crash_counters_stay_exact)
{
    const char *db = db_path("counters.db");
    store *s = NULL;
    symd_err err = {0};
    CHECK(store_open(db, 2, 1 << 20, &s, &err) == SYMD_OK, "open: %s", err.msg);
    if (!s)
        return;
    static const char *const sigs[] = {"a", "b", "c"}, *const kinds[] = {"crash", "hang"},
                             *const vers[] = {"1.0", "2.0", NULL};
    uint32_t seed = 12345;
#define RND(n) rnd(&seed, (n))
    int64_t alive[400];
    size_t nalive = 0;
    bool ok = true;
    for (int step = 0; step < 400 && ok; step++) {
        int op = (int)RND(10);
        if (op < 6 || nalive == 0) { /* post */
            const char *kind = kinds[RND(2)], *sig = sigs[RND(3)], *ver = vers[RND(3)];
            const char *hw = RND(2) ? "iPhone14,2" : "iPad13,1";
            store_crash c = {.format = "crash", .kind = (char *)kind, .signature = (char *)sig,
                             .app_version = (char *)ver, .os_version = "iOS 17",
                             .hardware_model = (char *)hw, .process = "P",
                             .original = (uint8_t *)"report", .original_len = 6};
            store_crash_image img = {.arch = "arm64", .name = "App", .app = true};
            img.uuid[0] = (uint8_t)RND(4);
            int64_t id;
            ok = store_put_crash(s, &c, &img, 1, &id, &err) == SYMD_OK;
            if (ok)
                alive[nalive++] = id;
        } else if (op < 8) { /* refile */
            int64_t id = alive[RND((uint32_t)nalive)];
            const char *sig = sigs[RND(3)], *kind = kinds[RND(2)];
            ok = store_update_crash(s, id, sig, kind, 0, NULL, &err) == SYMD_OK;
        } else { /* delete */
            size_t k = RND((uint32_t)nalive);
            bool d;
            ok = store_delete_crash(s, alive[k], &d, &err) == SYMD_OK && d;
            alive[k] = alive[--nalive];
        }
    }
    CHECK(ok, "a step failed: %s", err.msg);
    size_t pruned = 0;
    CHECK(store_prune_crashes(s, 0, 10, 1000, &pruned, &err) == SYMD_OK &&
              pruned == (nalive > 10 ? nalive - 10 : 0),
          "prune to 10: %zu of %zu (%s)", pruned, nalive, err.msg);
    store_close(s);
    check_counters(db, nalive);
#undef RND
}

/* Every counter of the store at db against its crash rows (SQL over the
 * database itself); unless nalive is (size_t)-1, that 10 crashes are left
 * when more than 10 were alive before a prune to 10. */
static void check_counters(const char *db, size_t nalive)
{
    static const char *const checks[] = {
        "SELECT count(*) FROM (SELECT kind, signature, count(*) n, min(created_at) f, "
        "max(created_at) l, max(id) e FROM crashes GROUP BY 1, 2) x FULL JOIN crash_groups g "
        "USING (kind, signature) WHERE g.count IS NOT x.n OR g.first_seen IS NOT x.f OR "
        "g.last_seen IS NOT x.l OR g.example_id IS NOT x.e OR g.app_version IS NOT (SELECT "
        "app_version FROM crashes WHERE id = x.e)",
        "SELECT count(*) FROM (SELECT kind, signature, created_at / 86400000 AS day, count(*) n "
        "FROM crashes GROUP BY 1, 2, 3) x FULL JOIN (SELECT * FROM crash_group_days WHERE "
        "count > 0) d USING (kind, signature, day) WHERE d.count IS NOT x.n",
        "SELECT count(*) FROM (SELECT kind, created_at / 86400000 AS day, count(*) n FROM crashes "
        "GROUP BY 1, 2) x FULL JOIN (SELECT * FROM crash_days WHERE count > 0) d USING (kind, "
        "day) WHERE d.count IS NOT x.n",
        "SELECT count(*) FROM (SELECT kind, signature, 0 AS dim, app_version AS value, count(*) n, "
        "min(created_at) f, max(created_at) l, max(id) e FROM crashes WHERE app_version IS "
        "NOT NULL GROUP BY 1, 2, 4 UNION ALL SELECT kind, signature, 2, hardware_model, "
        "count(*), min(created_at), max(created_at), max(id) FROM crashes GROUP BY 1, 2, 4) x "
        "FULL JOIN (SELECT * FROM crash_group_dims WHERE count > 0 AND dim <> 1) d USING "
        "(kind, signature, dim, value) WHERE d.count IS NOT x.n OR d.first_seen IS NOT x.f OR "
        "d.last_seen IS NOT x.l OR d.example_id IS NOT x.e",
        "SELECT count(*) FROM crash_image_refs r WHERE r.crashes <> (SELECT count(*) FROM "
        "crashes c WHERE c.refs LIKE '%,' || r.id || ',%') OR (r.crashes > 0 AND "
        "r.last_crash_id IS NOT (SELECT max(c.id) FROM crashes c WHERE c.refs LIKE '%,' || "
        "r.id || ',%'))",
        "SELECT (SELECT count(*) FROM crashes) - (SELECT count(*) FROM crash_originals c "
        "JOIN crashes x ON x.id = c.id) + (SELECT count(*) FROM crash_originals WHERE id NOT "
        "IN (SELECT id FROM crashes))",
        "SELECT count(*) - 10 FROM crashes",
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        char sql[2048];
        snprintf(sql, sizeof sql, "%s", checks[i]);
        /* PostgreSQL spells SQLite's IS NOT (of values) IS DISTINCT FROM */
        for (char *at; is_pg(db) && (at = strstr(sql, " IS NOT ")) && strlen(sql) + 16 < sizeof sql;) {
            memmove(at + 18, at + 8, strlen(at + 8) + 1);
            memcpy(at, " IS DISTINCT FROM ", 18);
        }
        long long bad = query_int(db, sql);
        CHECK(bad == 0 || (i == 6 && (nalive < 10 || nalive == (size_t)-1)),
              "counter check %zu: %lld rows differ", i, bad);
    }
}

/* ---- several nodes on one PostgreSQL database (SYMD_TEST_PG) ---- */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polls store_acquire of uuid on s until it answers want (SYMD_OK or
 * SYMD_E_NOT_FOUND) or ms pass; how long it took, -1 when it never did. */
static int64_t wait_for(store *s, const uint8_t uuid[16], symd_status want, int64_t ms)
{
    int64_t t0 = mono_ms();
    for (;;) {
        store_loaded *l = NULL;
        symd_err err = {0};
        symd_status st = store_acquire(s, uuid, "arm64", &l, &err);
        if (l)
            store_release(s, l);
        if (st == want)
            return mono_ms() - t0;
        if (mono_ms() - t0 > ms)
            return -1;
        usleep(5000);
    }
}

/* Two nodes: an upload on one reaches the other's directory (which had
 * cached "not stored") and a delete on the other reaches the first's index
 * cache, each within a second; a dSYM after its binary reaches the cache
 * too; a node whose connections were cut (a restart) answers again and
 * forgets its cache (notices may have been missed). */
TEST(store_pg_nodes_see_each_others_writes)
{
    if (!pg_server()) {
        test_skip("SYMD_TEST_PG not set");
        return;
    }
    const char *db = db_path("nodes");
    store *a = NULL, *b = NULL;
    symd_err err = {0};
    CHECK(store_open(db, 2, 8 << 20, &a, &err) == SYMD_OK, "open a: %s", err.msg);
    CHECK(store_open(db, 2, 8 << 20, &b, &err) == SYMD_OK, "open b: %s", err.msg);
    if (!a || !b) {
        store_close(a);
        store_close(b);
        return;
    }
    CHECK(strcmp(store_backend_name(a), "postgresql") == 0 && store_ping(a), "backend, ping");
    uint8_t u[16];
    uuid_parse("4C4C4490-5555-3144-A17C-64A339EDE13A", u);
    CHECK(wait_for(b, u, SYMD_E_NOT_FOUND, 0) >= 0, "b: not stored yet (and remembered)");
    store_put_result res[4];
    store_image stored[4];
    size_t n;
    CHECK(upload(a, "fixtures/bin/bigapp-arm64", res, stored, &n) == SYMD_OK, "upload on a");
    int64_t took = wait_for(b, u, SYMD_OK, 1000);
    CHECK(took >= 0, "b sees a's upload within 1 s (%lld ms)", (long long)took);
    CHECK(wait_for(a, u, SYMD_OK, 0) >= 0, "a has it cached");
    size_t deleted = 0;
    CHECK(store_delete_image(b, u, &deleted, &err) == SYMD_OK && deleted == 1, "delete on b");
    took = wait_for(a, u, SYMD_E_NOT_FOUND, 1000);
    CHECK(took >= 0, "a forgets it within 1 s (%lld ms)", (long long)took);

    /* a dSYM after its binary: the other node's cached index gains lines */
    uint8_t iu[16];
    uuid_parse("4C4C44BD-5555-3144-A184-0CB376F51FA0", iu);
    CHECK(upload(a, "fixtures/bin/inliner-arm64", res, stored, &n) == SYMD_OK, "binary on a");
    store_loaded *l = NULL;
    int64_t t0 = mono_ms();
    while (store_acquire(b, iu, "arm64", &l, &err) != SYMD_OK && mono_ms() - t0 < 1000) {
        symd_err_clear(&err);
        usleep(5000);
    }
    CHECK(l && !l->has_lines, "b has the binary, no lines");
    if (l)
        store_release(b, l);
    CHECK(upload(a, "fixtures/dsym/inliner-arm64.dSYM/Contents/Resources/DWARF/inliner-arm64",
                 res, stored, &n) == SYMD_OK && res[0] == STORE_UPDATED,
          "dSYM on a");
    bool lines = false;
    t0 = mono_ms();
    while (!lines && mono_ms() - t0 < 1000) {
        l = NULL;
        if (store_acquire(b, iu, "arm64", &l, &err) == SYMD_OK) {
            lines = l->has_lines;
            store_release(b, l);
        }
        if (!lines)
            usleep(5000);
    }
    CHECK(lines, "b's cache gains the dSYM's lines within 1 s");

    /* cut every connection of this database: b reconnects and forgets */
    usleep(100000); /* the dSYM's notice in, then cached for good */
    l = NULL;
    CHECK(store_acquire(b, iu, "arm64", &l, &err) == SYMD_OK, "acquire: %s", err.msg);
    if (l)
        store_release(b, l);
    store_cache_stats cs;
    store_cache_stats_get(b, &cs);
    CHECK(cs.entries >= 1, "b caches an index");
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
             "'%.63s'", pg_made[pg_nmade - 1]);
    CHECK(query_int(pg_server(), sql) >= 4, "connections cut");
    int64_t images = 0, blobs = 0;
    symd_status st = SYMD_E_UNAVAILABLE;
    t0 = mono_ms();
    while (st != SYMD_OK && mono_ms() - t0 < 3000) {
        symd_err_clear(&err);
        st = store_counts(b, &images, &blobs, NULL, &err);
        CHECK(st == SYMD_OK || st == SYMD_E_UNAVAILABLE, "only unavailable meanwhile: %s",
              err.msg);
        if (st != SYMD_OK)
            usleep(20000);
    }
    CHECK(st == SYMD_OK && images == 1, "b answers again: %s", err.msg);
    t0 = mono_ms();
    do {
        store_cache_stats_get(b, &cs);
        if (cs.entries)
            usleep(10000);
    } while (cs.entries && mono_ms() - t0 < 2000);
    CHECK(cs.entries == 0, "b's cache emptied after its listener came back");
    /* and notices flow again */
    symd_err_clear(&err);
    st = store_delete_image(a, iu, &deleted, &err);
    CHECK(st == SYMD_OK && deleted == 1, "delete on a: %s (%zu)", err.msg, deleted);
    CHECK(wait_for(b, iu, SYMD_E_NOT_FOUND, 1000) >= 0, "b hears of it");
    store_close(a);
    store_close(b);
}

typedef struct {
    store *s;
    int node, n;
    symd_status st;
    int created;
    char msg[240];
} writer_arg;

/* One node's writer: the same image, then crashes of a few groups. */
static void *pg_writer(void *p)
{
    writer_arg *w = p;
    store_put_result res[4];
    store_image stored[4];
    size_t n;
    w->st = upload(w->s, "fixtures/bin/bigapp-fat", res, stored, &n);
    for (size_t i = 0; w->st == SYMD_OK && i < n; i++)
        w->created += res[i] == STORE_CREATED;
    static const char *const sigs[] = {"a", "b", "c"}, *const vers[] = {"1.0", "2.0", NULL};
    for (int i = 0; i < w->n && w->st == SYMD_OK; i++) {
        store_crash c = {.format = "crash", .kind = "crash", .signature = (char *)sigs[i % 3],
                         .app_version = (char *)vers[(i + w->node) % 3], .os_version = "iOS 17",
                         .hardware_model = w->node ? "iPhone14,2" : "iPad13,1", .process = "P",
                         .original = (uint8_t *)"report", .original_len = 6};
        store_crash_image imgs[2] = {{.arch = "arm64", .name = "App", .app = true},
                                     {.arch = "arm64", .name = "Lib"}};
        imgs[0].uuid[0] = (uint8_t)(i % 4);
        imgs[1].uuid[0] = 0x80;
        int64_t id;
        symd_err err = {0};
        w->st = store_put_crash(w->s, &c, imgs, 2, &id, &err);
        if (w->st == SYMD_OK && i % 5 == 4) { /* and some go again */
            bool d;
            w->st = store_delete_crash(w->s, id, &d, &err);
        }
        if (w->st != SYMD_OK)
            snprintf(w->msg, sizeof w->msg, "%s", err.msg);
    }
    return NULL;
}

/* Nodes writing at once: one image uploaded on each ends as one row per
 * slice, created once; crashes counted by all of them leave every counter
 * exact; a prune runs on one node at a time (another gets nothing to do). */
TEST(store_pg_concurrent_nodes_keep_counters_exact)
{
    if (!pg_server()) {
        test_skip("SYMD_TEST_PG not set");
        return;
    }
    const char *db = db_path("concurrent");
    enum { NODES = 3 };
    store *s[NODES] = {0};
    symd_err err = {0};
    for (int i = 0; i < NODES; i++)
        CHECK(store_open(db, 2, 1 << 20, &s[i], &err) == SYMD_OK, "open: %s", err.msg);
    if (!s[NODES - 1]) {
        for (int i = 0; i < NODES; i++)
            store_close(s[i]);
        return;
    }
    pthread_t th[NODES];
    writer_arg w[NODES];
    for (int i = 0; i < NODES; i++) {
        w[i] = (writer_arg){.s = s[i], .node = i, .n = 60};
        pthread_create(&th[i], NULL, pg_writer, &w[i]);
    }
    int created = 0;
    for (int i = 0; i < NODES; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].st == SYMD_OK, "node %d: %s", i, w[i].msg);
        created += w[i].created;
    }
    CHECK(created == 2, "each slice created once: %d", created);
    int64_t images, blobs, crashes;
    CHECK(store_counts(s[0], &images, &blobs, &crashes, &err) == SYMD_OK && images == 2 &&
              blobs == 4 /* symbols, unwind */ && crashes == NODES * 48,
          "rows: %lld images %lld blobs %lld crashes", (long long)images, (long long)blobs,
          (long long)crashes);
    check_counters(db, (size_t)-1);
    store_crash_group g[8];
    size_t n;
    store_crash_filter all = {0};
    int64_t total = 0;
    CHECK(store_crash_groups(s[1], &all, 8, g, &n, &err) == SYMD_OK && n == 3, "groups: %zu", n);
    for (size_t i = 0; i < n; i++) {
        total += g[i].count;
        store_crash_group_free(&g[i]);
    }
    CHECK(total == NODES * 48, "group counts add up: %lld", (long long)total);

    /* retention: while another node holds the lock, a node prunes nothing */
    PGconn *holder = PQconnectdb(db);
    PGresult *r = PQexec(holder, "SELECT pg_advisory_lock(x'73796d6402'::bigint)");
    CHECK(PQresultStatus(r) == PGRES_TUPLES_OK, "lock held elsewhere");
    PQclear(r);
    size_t pruned = 99;
    CHECK(store_prune_crashes(s[2], 0, 10, 1000, &pruned, &err) == SYMD_OK && pruned == 0,
          "no prune without the lock: %zu", pruned);
    PQclear(PQexec(holder, "SELECT pg_advisory_unlock_all()"));
    PQfinish(holder);
    CHECK(store_prune_crashes(s[2], 0, 10, 1000, &pruned, &err) == SYMD_OK &&
              pruned == NODES * 48 - 10,
          "prune with it: %zu", pruned);
    check_counters(db, (size_t)-1);
    CHECK(query_int(db, "SELECT count(*) FROM crashes") == 10, "10 left");
    for (int i = 0; i < NODES; i++)
        store_close(s[i]);
}

/* symd migrate: a SQLite store (images with their indexes, crashes with
 * their originals, counters) copied into PostgreSQL with its ids and
 * times, verified, and served the same; a target holding data is refused. */
TEST(store_pg_migrate_copies_a_sqlite_store)
{
    if (!pg_server()) {
        test_skip("SYMD_TEST_PG not set");
        return;
    }
    char file[512];
    snprintf(file, sizeof file, "%s/migrate-src.db", test_tmpdir());
    store *s = NULL;
    symd_err err = {0};
    CHECK(store_open(file, 1, 1 << 20, &s, &err) == SYMD_OK, "open: %s", err.msg);
    if (!s)
        return;
    store_put_result res[4];
    store_image stored[4];
    size_t n;
    CHECK(upload(s, "fixtures/bin/bigapp-fat", res, stored, &n) == SYMD_OK, "upload");
    CHECK(upload(s, "fixtures/bin/inliner-arm64", res, stored, &n) == SYMD_OK, "upload");
    CHECK(upload(s, "fixtures/dsym/inliner-arm64.dSYM/Contents/Resources/DWARF/inliner-arm64",
                 res, stored, &n) == SYMD_OK,
          "dSYM");
    uint8_t big[4096];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7);
    for (int i = 0; i < 12; i++) {
        store_crash c = {.format = "ips", .kind = i % 2 ? "hang" : "crash",
                         .signature = i % 3 ? "sig_a" : "sig_b", .app_version = "1.0",
                         .hardware_model = i % 4 ? "iPhone14,2" : "iPad13,1",
                         .process = "P", .original = big, .original_len = sizeof big - (size_t)i};
        store_crash_image img = {.arch = "arm64", .name = "bigapp", .app = true};
        uuid_parse("4C4C4490-5555-3144-A17C-64A339EDE13A", img.uuid);
        int64_t id;
        CHECK(store_put_crash(s, &c, &img, 1, &id, &err) == SYMD_OK, "crash: %s", err.msg);
    }
    bool d;
    CHECK(store_delete_crash(s, 3, &d, &err) == SYMD_OK && d, "a gap in the ids");
    int64_t images0, blobs0, crashes0;
    store_counts(s, &images0, &blobs0, &crashes0, &err);
    store_close(s);
    check_counters(file, (size_t)-1);

    const char *db = db_path("migrated");
    store_copy_table t[STORE_COPY_TABLES];
    CHECK(store_migrate(file, db, t, &err) == SYMD_OK, "migrate: %s", err.msg);
    /* images, image_data (3 symbol indexes, 3 unwind tables, a line index),
     * symbol_sets, symbol_set_images, crashes, crash_originals */
    CHECK(strcmp(t[0].table, "images") == 0 && t[0].rows == 3 && t[1].rows == 7 &&
              strcmp(t[4].table, "crashes") == 0 && t[4].rows == 11 && t[5].rows == 11 &&
              t[5].bytes > 0,
          "copied: %lld images %lld blobs %lld crashes", (long long)t[0].rows,
          (long long)t[1].rows, (long long)t[4].rows);
    symd_err e2 = {0};
    CHECK(store_migrate(file, db, t, &e2) == SYMD_E_INVALID && strstr(e2.msg, "holds data"),
          "a target with data is refused: %s", e2.msg);
    CHECK(query_int(db, "SELECT count(*) FROM crashes") == 11, "nothing copied twice");

    CHECK(store_open(db, 1, 1 << 20, &s, &err) == SYMD_OK, "open the copy: %s", err.msg);
    if (!s)
        return;
    int64_t images, blobs, crashes;
    CHECK(store_counts(s, &images, &blobs, &crashes, &err) == SYMD_OK && images == images0 &&
              blobs == blobs0 && crashes == crashes0,
          "same counts");
    store_crash c;
    CHECK(store_get_crash(s, 12, true, &c, &err) == SYMD_OK && c.original_len == sizeof big - 11 &&
              memcmp(c.original, big, c.original_len) == 0 && c.has_app && c.app_stored,
          "crash 12 and its original: %s", err.msg);
    store_crash_free(&c);
    CHECK(store_get_crash(s, 3, false, &c, &err) == SYMD_E_NOT_FOUND, "crash 3 stays gone");
    symd_err_clear(&err);
    uint8_t iu[16];
    uuid_parse("4C4C44BD-5555-3144-A184-0CB376F51FA0", iu);
    store_loaded *l = NULL;
    CHECK(store_acquire(s, iu, NULL, &l, &err) == SYMD_OK && l->has_lines, "index with lines: %s",
          err.msg);
    store_release(s, l);
    /* new rows take ids after the copied ones */
    store_crash nc = {.format = "crash", .kind = "crash", .signature = "new",
                      .hardware_model = "iPad13,1",
                      .original = (uint8_t *)"x", .original_len = 1};
    int64_t id = 0;
    CHECK(store_put_crash(s, &nc, NULL, 0, &id, &err) == SYMD_OK && id == 13, "next id %lld: %s",
          (long long)id, err.msg);
    store_close(s);
    check_counters(db, (size_t)-1);
}

/* A dSYM holds no unwind tables: stored alone, its image says the binary is
 * needed; the binary uploaded after it adds its rows (UPDATED), found
 * through the cache like the symbol index; uploading it again changes
 * nothing (both backends). */
TEST(store_unwind_rows_follow_the_binary)
{
    store *s;
    symd_err err = {0};
    const char *db = db_path("unwind.db");
    CHECK(store_open(db, 2, 1 << 20, &s, &err) == SYMD_OK, "%s", err.msg);
    if (!s)
        return;
    store_put_result res[2];
    store_image stored[2];
    size_t n;
    CHECK(upload(s, "fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64", res,
                 stored, &n) == SYMD_OK && n == 1 && res[0] == STORE_CREATED,
          "dSYM first");
    uint8_t u[16];
    uuid_parse("4C4C4490-5555-3144-A17C-64A339EDE13A", u);
    store_loaded *l = NULL;
    CHECK(store_acquire(s, u, "arm64", &l, &err) == SYMD_OK, "acquire: %s", err.msg);
    if (l) {
        const char *why = store_unwind_missing(l);
        CHECK(!l->has_unwind && why && !strcmp(why, "binary needed for unwinding"),
              "dSYM only: %s", why ? why : "(has rows)");
        store_release(s, l);
    }
    CHECK(upload(s, "fixtures/bin/bigapp-arm64", res, stored, &n) == SYMD_OK &&
              res[0] == STORE_UPDATED,
          "the binary after its dSYM adds its rows: %d", res[0]);
    CHECK(store_acquire(s, u, "arm64", &l, &err) == SYMD_OK, "acquire: %s", err.msg);
    if (l) {
        unw_row r;
        /* main's row, looked up like a frame of a walk */
        symlook look;
        symindex_lookup(&l->sym, 0x100000884, &look);
        CHECK(l->has_unwind && store_unwind_missing(l) == NULL && l->unwind.nrows > 0 &&
                  unw_table_find(&l->unwind, 0x884, &r) && r.cfa_kind == UNW_CFA_REG_OFF,
              "rows stored and loaded (%u rows)", l->has_unwind ? l->unwind.nrows : 0);
        store_release(s, l);
    }
    CHECK(upload(s, "fixtures/bin/bigapp-arm64", res, stored, &n) == SYMD_OK &&
              res[0] == STORE_EXISTS,
          "again: exists (%d)", res[0]);
    store_close(s);
}

/* Prepared statements past a connection's cap (SYMD_PG_STATEMENTS=3 here,
 * 256 by default): the least recently used is deallocated and the answers
 * stay right, every counter exact, with listings whose filters make
 * statements of their own. */
TEST(store_pg_prepared_statements_past_the_cap)
{
    if (!pg_server()) {
        test_skip("SYMD_TEST_PG not set");
        return;
    }
    const char *db = db_path("stmtcap");
    store *s = NULL;
    symd_err err = {0};
    setenv("SYMD_PG_STATEMENTS", "3", 1);
    CHECK(store_open(db, 1, 1 << 20, &s, &err) == SYMD_OK, "open: %s", err.msg);
    unsetenv("SYMD_PG_STATEMENTS");
    if (!s)
        return;
    writer_arg w = {.s = s, .node = 1, .n = 40};
    pg_writer(&w);
    CHECK(w.st == SYMD_OK, "writer: %s", w.msg);
    check_counters(db, (size_t)-1);
    static const char *const vers[] = {"1.0", "2.0", NULL};
    for (int round = 0; round < 3; round++)
        for (int v = 0; v < 3; v++) {
            store_crash_filter f = {.app_version = (char *)vers[v],
                                    .signature = round == 1 ? "a" : NULL};
            store_crash out[64];
            size_t n;
            bool more;
            CHECK(store_list_crashes(s, &f, 0, 64, out, &n, &more, &err) == SYMD_OK,
                  "list: %s", err.msg);
            char sql[200];
            snprintf(sql, sizeof sql, "SELECT count(*) FROM crashes WHERE %s%s%s%s",
                     vers[v] ? "app_version = '" : "true", vers[v] ? vers[v] : "",
                     vers[v] ? "'" : "", round == 1 ? " AND signature = 'a'" : "");
            long long want = query_int(db, sql);
            CHECK((long long)n == want, "round %d version %s: %zu crashes, %lld stored", round,
                  vers[v] ? vers[v] : "any", n, want);
            for (size_t i = 0; i < n; i++)
                store_crash_free(&out[i]);
        }
    store_close(s);
}

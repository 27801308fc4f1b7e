/* store/: round trip, idempotent re-upload, all-or-nothing uploads, cache,
 * schema versioning. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "../store/ingest.h"
#include "../store/store.h"
#include "../util/hex.h"
#include "test.h"

static const char *db_path(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", test_tmpdir(), name);
    return p;
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
    CHECK(store_counts(s, &images, &blobs, NULL, &err) == SYMD_OK && images == 2 && blobs == 2,
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
    CHECK(store_counts(s, &images, &blobs, NULL, &err) == SYMD_OK && images == 1 && blobs == 1,
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
    CHECK(exec_sql(db, "CREATE TRIGGER no_x86 BEFORE INSERT ON images WHEN "
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
    sqlite3 *h;
    sqlite3_open(db, &h);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL);
    CHECK(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == STORE_SCHEMA_VERSION,
          "user_version");
    sqlite3_finalize(st);
    sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL);
    CHECK(sqlite3_step(st) == SQLITE_ROW &&
              strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0,
          "WAL mode");
    sqlite3_finalize(st);
    sqlite3_close(h);
    /* Reopening an up-to-date database migrates nothing and works. */
    CHECK(store_open(db, 1, 0, &s, &err) == SYMD_OK, "reopen: %s", err.msg);
    store_close(s);
    /* A database from a newer symd is refused, not damaged. */
    CHECK(exec_sql(db, "PRAGMA user_version = 99") == SQLITE_OK, "bump");
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

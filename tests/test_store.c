/* store/: round trip, idempotent re-upload, all-or-nothing uploads, cache,
 * schema versioning and migration, crash kinds, missing images. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "../ingest/ingest.h"
#include "../store/store.h"
#include "../util/hex.h"
#include "schema_v2.h"
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
    const char *db = db_path("v2.db");
    static const uint8_t orig[] = "Incident Identifier: X\n\0binary\xff tail";
    CHECK(make_v2_db(db, orig, sizeof orig), "building the version-2 database");
    store *s = NULL;
    symd_err err = {0};
    CHECK(store_open(db, 1, 1 << 20, &s, &err) == SYMD_OK, "migrating: %s", err.msg);
    if (!s)
        return;
    sqlite3 *h;
    sqlite3_open(db, &h);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &q, NULL);
    CHECK(sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) == STORE_SCHEMA_VERSION &&
              STORE_SCHEMA_VERSION == 4,
          "user_version after the migration");
    sqlite3_finalize(q);
    sqlite3_close(h);

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

    /* a re-read refiles an old row: its counters move with it */
    CHECK(store_update_crash(s, 2, "new_sig", "resource", 145, &err) == SYMD_OK, "update: %s",
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
    CHECK(store_missing_images(s, 8, m, &n, &err) == SYMD_OK && n == 2, "missing: %zu", n);
    for (size_t i = 0; i < n; i++)
        CHECK(!m[i].found_other_arch && !m[i].other_archs[0], "nothing uploaded yet");
    store_put_result res[4];
    store_image stored[4];
    size_t nu;
    CHECK(upload(s, "fixtures/bin/bigapp-arm64", res, stored, &nu) == SYMD_OK, "upload");
    CHECK(store_missing_images(s, 8, m, &n, &err) == SYMD_OK && n == 2, "missing: %zu", n);
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
    CHECK(store_missing_images(s, 8, m, &n, &err) == SYMD_OK && n == 1 &&
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
            ok = store_update_crash(s, id, sig, kind, 0, &err) == SYMD_OK;
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
    /* every counter against the rows (SQL over the file itself) */
    sqlite3 *h;
    sqlite3_open(db, &h);
    static const char *const checks[] = {
        "SELECT count(*) FROM (SELECT kind, signature, count(*) n, min(created_at) f, "
        "max(created_at) l, max(id) e FROM crashes GROUP BY 1, 2) x FULL JOIN crash_groups g "
        "USING (kind, signature) WHERE g.count IS NOT x.n OR g.first_seen IS NOT x.f OR "
        "g.last_seen IS NOT x.l OR g.example_id IS NOT x.e OR g.app_version IS NOT (SELECT "
        "app_version FROM crashes WHERE id = x.e)",
        "SELECT count(*) FROM (SELECT kind, signature, created_at / 86400000 day, count(*) n "
        "FROM crashes GROUP BY 1, 2, 3) x FULL JOIN (SELECT * FROM crash_group_days WHERE "
        "count > 0) d USING (kind, signature, day) WHERE d.count IS NOT x.n",
        "SELECT count(*) FROM (SELECT kind, created_at / 86400000 day, count(*) n FROM crashes "
        "GROUP BY 1, 2) x FULL JOIN (SELECT * FROM crash_days WHERE count > 0) d USING (kind, "
        "day) WHERE d.count IS NOT x.n",
        "SELECT count(*) FROM (SELECT kind, signature, 0 dim, app_version value, count(*) n, "
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
        sqlite3_stmt *st;
        int rc = sqlite3_prepare_v2(h, checks[i], -1, &st, NULL);
        long long bad = rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW
                            ? sqlite3_column_int64(st, 0)
                            : -1;
        CHECK(bad == 0 || (i == 6 && nalive < 10), "counter check %zu: %lld rows differ (%s)", i,
              bad, sqlite3_errmsg(h));
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
#undef RND
}

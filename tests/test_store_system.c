/* store/: system symbol sets (symd import's part of the store) on the
 * backend of the run: a SQLite file, or with SYMD_TEST_PG a PostgreSQL
 * database of the test's own. Sets are created once per (OS, build, arch),
 * images stored once however many sets hold them, and deleting a set deletes
 * only what an import created and no other set holds. */
#include <stdlib.h>
#include <string.h>

#include "../ingest/ingest.h"
#include "../store/store.h"
#include "../util/hex.h"
#include "harness.h"
#include "test.h"

#define LIBFIX_ARM64 "4C4C4448-5555-3144-A188-0C3B883681D9"
#define LIBFIX_X86 "4C4C4417-5555-3144-A181-03D8CACDAC00"
#define BIGAPP_ARM64 "4C4C4490-5555-3144-A17C-64A339EDE13A"

/* A store on a fresh database named name (a file of the run's directory,
 * or its PostgreSQL twin); *path is what db_query_int takes. */
static store *open_fresh(const char *name, const char **path)
{
    static char p[4][1024];
    static int next;
    char *buf = p[next++ % 4];
    snprintf(buf, sizeof p[0], "%s/%s", test_tmpdir(), name);
    *path = buf;
    store *s = NULL;
    symd_err err = {0};
    const char *where = db_arg(buf);
    CHECK(where && store_open(where, 2, 1 << 20, &s, &err) == SYMD_OK, "open %s: %s", name,
          err.msg);
    return s;
}

/* The slices of the fixtures at rels (NULL-terminated) in one batch. */
static bool batch_of(ingest_batch *b, const char *const *rels)
{
    ingest_batch_init(b);
    for (; *rels; rels++) {
        size_t len;
        uint8_t *buf = read_fixture(*rels, &len);
        symd_err err = {0};
        bool ok = buf && ingest_add_file(b, buf, len, *rels, &err) == SYMD_OK;
        CHECK(ok, "%s: %s", *rels, err.msg);
        free(buf);
        if (!ok)
            return false;
    }
    return true;
}

static store_symbol_set set_want(const char *name, const char *version, const char *build,
                                 const char *arch)
{
    store_symbol_set w;
    memset(&w, 0, sizeof w);
    snprintf(w.os_name, sizeof w.os_name, "%s", name);
    snprintf(w.os_version, sizeof w.os_version, "%s", version);
    snprintf(w.os_build, sizeof w.os_build, "%s", build);
    snprintf(w.arch, sizeof w.arch, "%s", arch);
    snprintf(w.source, sizeof w.source, "test");
    return w;
}

/* The set of id among the listed ones, or NULL. */
static const store_symbol_set *listed(store *s, int64_t id, store_symbol_set *rows, size_t max)
{
    size_t n = 0;
    symd_err err = {0};
    CHECK(store_list_symbol_sets(s, rows, max, &n, &err) == SYMD_OK, "list: %s", err.msg);
    for (size_t i = 0; i < n; i++)
        if (rows[i].id == id)
            return &rows[i];
    return NULL;
}

static bool stored(store *s, const char *uuid_text, const char *arch)
{
    uint8_t u[16];
    uuid_parse(uuid_text, u);
    store_loaded *l = NULL;
    symd_err err = {0};
    symd_status st = store_acquire(s, u, arch, &l, &err);
    store_release(s, l);
    CHECK(st == SYMD_OK || st == SYMD_E_NOT_FOUND, "acquire %s: %s", uuid_text, err.msg);
    return st == SYMD_OK;
}

TEST(store_symbol_sets_are_keyed_by_os_build_and_arch)
{
    const char *path;
    store *s = open_fresh("sets-keyed.db", &path);
    if (!s)
        return;
    symd_err err = {0};
    store_symbol_set a, again, other;
    bool created = false;
    store_symbol_set w = set_want("iOS", "", "18A373", "");
    CHECK(store_symbol_set_open(s, &w, &a, &created, &err) == SYMD_OK && created && a.id > 0,
          "created: %s", err.msg);
    w = set_want("iOS", "14.0", "18A373", "");
    snprintf(w.model, sizeof w.model, "iPhone12,1");
    CHECK(store_symbol_set_open(s, &w, &again, &created, &err) == SYMD_OK && !created &&
              again.id == a.id,
          "same set again: %s", err.msg);
    CHECK(strcmp(again.os_version, "14.0") == 0 && strcmp(again.model, "iPhone12,1") == 0 &&
              again.created_at == a.created_at && again.updated_at >= a.updated_at,
          "fields taken: '%s' '%s'", again.os_version, again.model);
    w = set_want("iOS", "14.0", "18A373", "arm64e");
    CHECK(store_symbol_set_open(s, &w, &other, &created, &err) == SYMD_OK && created &&
              other.id != a.id,
          "another arch is another set");
    w = set_want("iOS", "14.0", "", "");
    CHECK(store_symbol_set_open(s, &w, &other, NULL, &err) == SYMD_E_INVALID,
          "a set needs a build");
    store_close(s);
}

TEST(store_symbol_sets_share_images_and_delete_only_their_own)
{
    const char *path;
    store *s = open_fresh("sets-share.db", &path);
    if (!s)
        return;
    symd_err err = {0};
    store_symbol_set a, b;
    store_symbol_set w = set_want("iOS", "14.0", "18A373", "");
    CHECK(store_symbol_set_open(s, &w, &a, NULL, &err) == SYMD_OK, "set a: %s", err.msg);
    w = set_want("iOS", "14.1", "18A8395", "");
    CHECK(store_symbol_set_open(s, &w, &b, NULL, &err) == SYMD_OK, "set b: %s", err.msg);

    /* The user uploaded bigapp before any import. */
    ingest_batch ub;
    const char *user[] = {"fixtures/bin/bigapp-arm64", NULL};
    if (!batch_of(&ub, user))
        return;
    store_put_result ur[2];
    store_image ui[2];
    CHECK(ingest_commit(s, &ub, ur, ui, &err) == SYMD_OK, "upload: %s", err.msg);
    ingest_batch_free(&ub);

    ingest_batch ib;
    const char *libs[] = {"fixtures/bin/libfix-arm64.dylib", "fixtures/bin/libfix-x86_64.dylib",
                          NULL};
    if (!batch_of(&ib, libs))
        return;
    CHECK(!stored(s, LIBFIX_ARM64, "arm64"), "not stored yet (the directory remembers)");
    store_put_result r[2];
    size_t linked = 99;
    CHECK(store_symbol_set_add(s, a.id, ib.puts, ib.n, r, NULL, 0, &linked, &err) == SYMD_OK &&
              r[0] == STORE_CREATED && r[1] == STORE_CREATED && linked == 0,
          "import into a: %s", err.msg);
    CHECK(stored(s, LIBFIX_ARM64, "arm64") && stored(s, LIBFIX_X86, "x86_64"),
          "imported images found at once");
    CHECK(db_query_int(path, "SELECT count(*) FROM images WHERE system") == 2,
          "an import's images are marked system");
    /* Into b: stored already, only linked; bigapp (the user's) linked too. */
    store_image_key k;
    uuid_parse(BIGAPP_ARM64, k.uuid);
    snprintf(k.arch, sizeof k.arch, "arm64");
    CHECK(store_symbol_set_add(s, b.id, ib.puts, ib.n, r, &k, 1, &linked, &err) == SYMD_OK &&
              r[0] == STORE_EXISTS && r[1] == STORE_EXISTS && linked == 1,
          "import into b: %s", err.msg);
    /* A second run of the same import changes nothing. */
    CHECK(store_symbol_set_add(s, a.id, ib.puts, ib.n, r, NULL, 0, &linked, &err) == SYMD_OK &&
              r[0] == STORE_EXISTS && r[1] == STORE_EXISTS,
          "again: %s", err.msg);
    CHECK(db_query_int(path, "SELECT count(*) FROM images") == 3 &&
              db_query_int(path, "SELECT count(*) FROM symbol_set_images") == 5,
          "images stored once, linked to both sets");
    long long blob_bytes = db_query_int(path, "SELECT sum(length(data)) FROM image_data d JOIN "
                                              "images i ON i.id = d.image_id WHERE i.system");
    store_symbol_set rows[8];
    const store_symbol_set *la = listed(s, a.id, rows, 8);
    CHECK(la && la->image_count == 2 && (long long)la->bytes == blob_bytes &&
              strcmp(la->os_build, "18A373") == 0,
          "list a: %lld images, %llu bytes (want %lld)", la ? (long long)la->image_count : -1,
          la ? (unsigned long long)la->bytes : 0, blob_bytes);
    const store_symbol_set *lb = listed(s, b.id, rows, 8);
    CHECK(lb && lb->image_count == 3 && (long long)lb->bytes > blob_bytes, "list b");

    /* a: every image is in b too, nothing goes */
    bool found = false;
    size_t gone = 99;
    CHECK(store_delete_symbol_set(s, a.id, &found, &gone, &err) == SYMD_OK && found &&
              gone == 0,
          "delete a: %s (%zu)", err.msg, gone);
    CHECK(stored(s, LIBFIX_ARM64, "arm64"), "b still holds libfix");
    /* b: the import's images go, the user's upload stays */
    CHECK(store_delete_symbol_set(s, b.id, &found, &gone, &err) == SYMD_OK && found && gone == 2,
          "delete b: %s (%zu)", err.msg, gone);
    CHECK(!stored(s, LIBFIX_ARM64, "arm64") && !stored(s, LIBFIX_X86, "x86_64"),
          "deleted images are gone from the cache too");
    CHECK(stored(s, BIGAPP_ARM64, "arm64"), "the user's upload stays");
    CHECK(db_query_int(path, "SELECT count(*) FROM symbol_set_images") == 0 &&
              db_query_int(path, "SELECT count(*) FROM symbol_sets") == 0 &&
              db_query_int(path, "SELECT count(*) FROM image_data") == 2, /* symbols, unwind */
          "no rows left behind");
    CHECK(store_delete_symbol_set(s, b.id, &found, &gone, &err) == SYMD_OK && !found,
          "an unknown set");
    /* Adding to a set that is gone stores nothing. */
    CHECK(store_symbol_set_add(s, a.id, ib.puts, ib.n, r, NULL, 0, &linked, &err) ==
                  SYMD_E_NOT_FOUND &&
              db_query_int(path, "SELECT count(*) FROM images") == 1,
          "gone set");
    ingest_batch_free(&ib);
    store_close(s);
}

/* An image an import created and a user then uploads is the user's: the
 * set's deletion leaves it. */
TEST(store_symbol_set_upload_after_import_is_kept)
{
    const char *path;
    store *s = open_fresh("sets-upload-after.db", &path);
    if (!s)
        return;
    symd_err err = {0};
    store_symbol_set a;
    store_symbol_set w = set_want("watchOS", "9.0", "20R362", "arm64");
    CHECK(store_symbol_set_open(s, &w, &a, NULL, &err) == SYMD_OK, "set: %s", err.msg);
    ingest_batch ib;
    const char *libs[] = {"fixtures/bin/libfix-arm64.dylib", NULL};
    if (!batch_of(&ib, libs))
        return;
    store_put_result r[1];
    CHECK(store_symbol_set_add(s, a.id, ib.puts, ib.n, r, NULL, 0, NULL, &err) == SYMD_OK &&
              r[0] == STORE_CREATED,
          "import: %s", err.msg);
    store_image si[1];
    CHECK(ingest_commit(s, &ib, r, si, &err) == SYMD_OK && r[0] == STORE_EXISTS,
          "the user uploads the same file: %s", err.msg);
    CHECK(db_query_int(path, "SELECT count(*) FROM images WHERE system") == 0,
          "the upload made it the user's");
    bool found;
    size_t gone;
    CHECK(store_delete_symbol_set(s, a.id, &found, &gone, &err) == SYMD_OK && found && gone == 0,
          "delete: %s", err.msg);
    CHECK(stored(s, LIBFIX_ARM64, "arm64"), "kept");
    ingest_batch_free(&ib);
    store_close(s);
}

/* Upgrading from the last landed release: fixtures/db/release-3851845.sqlite
 * was written by that release itself (fixtures/make_old_db.sh: schema 2,
 * symbol index version 2, line index version 1, Swift names raw, crash
 * groups keyed by raw Swift names). The current server opens a copy,
 * migrates it, and answers as if everything had been stored today: its
 * crashes refiled (in the background) under the grouping rule of today. */
#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../store/store.h"
#include "harness.h"
#include "test.h"

#define OLD_DB "fixtures/db/release-3851845.sqlite"
#define SWIFTY_UUID "4C4C4420-5555-3144-A1AE-5EE30CB351F6"
#define PLEASE_CRASH "specialized static CrashClass.pleaseCrash()"
/* the groups of the old crashes under this symd's rule (the app's own
 * frames and the exception type): Swift's by its display name, and the C
 * crashes, which the old rule filed under the main binary's static_square,
 * under libfix.dylib's fix_mul, a library of the app's own */
#define EXC " | EXC_BAD_ACCESS (SIGSEGV)"
#define PLEASE_GROUP PLEASE_CRASH EXC
#define FIX_GROUP "fix_mul" EXC

static server_proc up;
static bool up_running;

__attribute__((destructor)) static void stop_upgrade_server(void)
{
    if (up_running)
        server_stop(&up);
}

static json_t *request(const char *method, const char *path, const void *body, size_t len,
                       int *status, char **text)
{
    return http_json(up.port, method, path, NULL, body, len, status, text);
}

static const char *sget(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int user_version(const char *path)
{
    sqlite3 *db = NULL;
    int v = -1;
    sqlite3_stmt *q = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

/* The count of group (kind crash, signature), -1 when there is none; *raw
 * counts groups still named by a raw Swift name, *old those of the old
 * rule (no exception type). */
static long long group_count(const char *signature, int *raw, int *old)
{
    int status;
    json_t *j = request("GET", "/v1/crashes/groups", NULL, 0, &status, NULL);
    CHECK(status == 200, "groups: %d", status);
    long long count = -1;
    *raw = *old = 0;
    json_t *g = json_object_get(j, "groups");
    for (size_t i = 0; i < json_array_size(g); i++) {
        const char *s = sget(json_array_get(g, i), "signature");
        if (strcmp(s, signature) == 0)
            count = json_integer_value(json_object_get(json_array_get(g, i), "count"));
        *raw += strstr(s, "$s") != NULL;
        *old += strstr(s, " | EXC_") == NULL;
    }
    json_decref(j);
    return count;
}

/* Waits (at most 30 s) for the background refile: until no group of the
 * old rule is left. */
static void wait_refiled(void)
{
    int raw, old = 1;
    for (int i = 0; i < 300 && old; i++) {
        group_count("", &raw, &old);
        struct timespec ts = {0, 100 * 1000000L};
        if (old)
            nanosleep(&ts, NULL);
    }
    CHECK(old == 0, "%d groups of the old rule left", old);
}

TEST(upgrade_from_release_3851845)
{
    if (skip_on_pg("upgrades a SQLite file an older release wrote"))
        return;
    size_t len;
    uint8_t *old = read_fixture(OLD_DB, &len);
    if (!old)
        return;
    char db[600];
    snprintf(db, sizeof db, "%s/upgrade.db", test_tmpdir());
    FILE *f = fopen(db, "wb");
    CHECK(f && fwrite(old, 1, len, f) == len, "cannot copy %s", OLD_DB);
    if (f)
        fclose(f);
    free(old);
    CHECK(user_version(db) == 2, "the fixture is schema %d, not 2", user_version(db));

    for (int start = 0; start < 2; start++) { /* the second start finds nothing to do */
        up_running = server_start(&up, db, NULL);
        CHECK(up_running, "the server does not start on the old database");
        if (!up_running)
            return;
        int status, raw;
        /* Swift names from the old indexes: simplified, raw, full */
        const char *req = "{\"images\":[{\"uuid\":\"" SWIFTY_UUID "\",\"arch\":\"arm64\","
                          "\"load_address\":\"0x1022c4000\"}],\"threads\":[{\"frames\":["
                          "{\"address\":\"0x1022c4398\",\"adjust\":\"none\"},"
                          "{\"address\":\"0x1022c43e4\",\"adjust\":\"none\"}]}]}";
        json_t *j = request("POST", "/v1/symbolicate", req, strlen(req), &status, NULL);
        json_t *fr = json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames");
        json_t *a = json_array_get(fr, 0), *b = json_array_get(fr, 1), *c = json_array_get(fr, 2);
        CHECK(status == 200 && json_array_size(fr) == 3, "symbolicate: %d, %zu frames", status,
              json_array_size(fr));
        CHECK(strcmp(sget(a, "symbol"), PLEASE_CRASH) == 0 &&
                  strcmp(sget(a, "mangled"), "$s15iOSCrashingTest10CrashClassC06pleaseC0yyFZTf4d_n") == 0 &&
                  strcmp(sget(a, "file"), "./src/swifty.c") == 0 &&
                  json_integer_value(json_object_get(a, "line")) == 39,
              "old symbol index: %s (%s) %s", sget(a, "symbol"), sget(a, "mangled"), sget(a, "file"));
        CHECK(strcmp(sget(b, "symbol"), "clamp(_:lo:hi:)") == 0 &&
                  json_is_true(json_object_get(b, "inlined")) &&
                  strcmp(sget(c, "symbol"), "ContentView.body.getter") == 0,
              "old line index: %s, %s", sget(b, "symbol"), sget(c, "symbol"));
        json_decref(j);
        j = request("POST", "/v1/symbolicate?demangle=full", req, strlen(req), &status, NULL);
        fr = json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames");
        CHECK(strcmp(sget(json_array_get(fr, 1), "symbol"),
                     "Swifty.clamp(_: Swift.Int, lo: Swift.Int, hi: Swift.Int) -> Swift.Int") == 0,
              "full, old line index: %s", sget(json_array_get(fr, 1), "symbol"));
        json_decref(j);

        /* the crashes: all there, refiled in the background under this
         * symd's rule (their counts kept), symbolicated again */
        wait_refiled();
        j = request("GET", "/v1/crashes?limit=50", NULL, 0, &status, NULL);
        json_t *cr = json_object_get(j, "crashes");
        size_t swift = 0;
        for (size_t i = 0; i < json_array_size(cr); i++)
            swift += strcmp(sget(json_array_get(cr, i), "signature"), PLEASE_GROUP) == 0;
        CHECK(status == 200 && json_array_size(cr) == (size_t)(4 + start) && swift == 2u + start,
              "crashes: %d, %zu listed, %zu under the display name", status,
              json_array_size(cr), swift);
        json_decref(j);
        int old;
        long long n = group_count(PLEASE_GROUP, &raw, &old);
        CHECK(n == 2 + start && raw == 0, "the Swift group counts %lld, %d groups raw", n, raw);
        CHECK(group_count(FIX_GROUP, &raw, &old) == 2 &&
                  group_count("static_square", &raw, &old) == -1,
              "the C group lost crashes");
        char *text = NULL;
        request("GET", "/v1/crashes/1?format=text", NULL, 0, &status, &text);
        CHECK(status == 200 && strstr(text, PLEASE_CRASH " + 16 (swifty.c:39)\n"),
              "old crash as text (%d):\n%.2000s", status, text);
        free(text);
        j = request("GET", "/v1/missing", NULL, 0, &status, NULL);
        json_t *m = json_object_get(j, "missing");
        bool kernel = false;
        for (size_t i = 0; i < json_array_size(m); i++)
            kernel |= strcmp(sget(json_array_get(m, i), "uuid"),
                             "D1E2F3A4-B5C6-4D7E-8F90-A1B2C3D4E5F6") == 0 &&
                      json_integer_value(json_object_get(json_array_get(m, i), "crashes")) ==
                          4 + start;
        CHECK(status == 200 && kernel, "missing after the upgrade: %d %.300s", status,
              json_dumps(j, JSON_COMPACT));
        json_decref(j);

        if (start == 0) { /* a new crash of the same cause joins the old group */
            size_t blen;
            uint8_t *body = read_fixture("fixtures/crashes/swifty-twin.crash", &blen);
            /* the old release stored this incident: the migration keyed
             * it, so a post of it again is a copy; another incident is new */
            j = body ? request("POST", "/v1/crashes", body, blen, &status, NULL) : NULL;
            CHECK(status == 200 && json_is_true(json_object_get(j, "duplicate")),
                  "an incident the old release stored: %d", status);
            json_decref(j);
            if (body)
                report_renumber(body, blen, 1);
            j = body ? request("POST", "/v1/crashes", body, blen, &status, NULL) : NULL;
            CHECK(status == 201 && strcmp(sget(j, "signature"), PLEASE_GROUP) == 0,
                  "new crash: %d %s", status, sget(j, "signature"));
            json_decref(j);
            free(body);
        }
        CHECK(server_stop(&up), "the server did not stop cleanly");
        up_running = false;
    }
    CHECK(user_version(db) == STORE_SCHEMA_VERSION, "schema %d after the upgrade, want %d",
          user_version(db), STORE_SCHEMA_VERSION);
}

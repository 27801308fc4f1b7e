/* End-to-end: KSCrash JSON reports over HTTP, on a server of their own.
 * Every KSCrash file of ../shared/reporters is stored (201, format
 * "kscrash", the frames its MANIFEST.tsv counts, the original byte for
 * byte), read back the same, and rendered in Apple's text layout; the
 * generated twin (fixtures/crashes/bigapp-twin.kscrash.json) symbolicates
 * exactly like bigapp-twin.crash once bigapp-arm64, its dSYM and libfix are
 * uploaded, and the device's own names stand for the frames of the image
 * never uploaded. */
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fixture_util.h"
#include "harness.h"
#include "test.h"

static lazy_server ksrv = {"e2e-kscrash.db", NULL, {0}, false};

__attribute__((destructor)) static void stop_kscrash_server(void)
{
    lazy_stop(&ksrv);
}

static json_t *request(const char *method, const char *path, const void *body, size_t len,
                       int *status, char **text)
{
    return http_json(lazy_port(&ksrv), method, path, NULL, body, len, status, text);
}

/* Frames of an answer, inlined levels aside (the report's own frames). */
static size_t report_frames(json_t *j)
{
    size_t n = 0;
    json_t *th = json_object_get(j, "threads");
    for (size_t t = 0; t < json_array_size(th); t++) {
        json_t *fr = json_object_get(json_array_get(th, t), "frames");
        for (size_t f = 0; f < json_array_size(fr); f++)
            n += !json_is_true(json_object_get(json_array_get(fr, f), "inlined"));
    }
    return n;
}

static const char *sget(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

TEST(e2e_kscrash_shared_files_store_read_render)
{
    const char *dir = reporters_dir();
    if (!dir) {
        test_skip("../shared/reporters is absent: KSCrash reports not tested");
        return;
    }
    char mpath[800];
    if (snprintf(mpath, sizeof mpath, "%s/MANIFEST.tsv", dir) >= (int)sizeof mpath)
        return;
    FILE *mf = fopen(mpath, "r");
    CHECK(mf, "MANIFEST.tsv");
    if (!mf)
        return;
    char line[8192];
    int files = 0, stored = 0;
    long want_frames = 0, got_frames = 0;
    while (fgets(line, sizeof line, mf)) {
        char *col[12] = {0};
        int nc = 0;
        for (char *s = line, *t; nc < 12 && s; s = t) {
            t = strchr(s, '\t');
            if (t)
                *t++ = 0;
            col[nc++] = s;
        }
        if (nc < 10 || strcmp(col[4], "kscrash") != 0)
            continue;
        files++;
        long want = atol(col[9]);
        want_frames += want;
        char path[1200];
        if (snprintf(path, sizeof path, "%s/%s", dir, col[0]) >= (int)sizeof path)
            continue;
        size_t len;
        uint8_t *buf = read_file(path, &len);
        CHECK(buf, "read %s", path);
        if (!buf)
            continue;
        int status;
        json_t *j = request("POST", "/v1/crashes", buf, len, &status, NULL);
        CHECK(status == 201, "%s: POST answered %d", col[0], status);
        if (status != 201) {
            json_decref(j);
            free(buf);
            continue;
        }
        stored++;
        json_int_t id = json_integer_value(json_object_get(j, "id"));
        size_t n = report_frames(j);
        got_frames += (long)n;
        CHECK(!strcmp(sget(j, "format"), "kscrash") && !strcmp(sget(j, "kind"), col[7]),
              "%s: format %s kind %s", col[0], sget(j, "format"), sget(j, "kind"));
        CHECK((long)n == want, "%s: %zu frames, manifest %ld", col[0], n, want);
        CHECK(json_string_value(json_object_get(j, "signature")), "%s: signature", col[0]);
        /* the original, byte for byte */
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT original_len FROM crash_originals WHERE id = %lld",
                 (long long)id);
        CHECK(db_query_int(ksrv.proc.db, sql) == (long long)len, "%s: original of %zu bytes",
              col[0], len);
        /* read back: the same */
        char url[96];
        snprintf(url, sizeof url, "/v1/crashes/%lld", (long long)id);
        json_t *g = request("GET", url, NULL, 0, &status, NULL);
        CHECK(status == 200 && report_frames(g) == n && !strcmp(sget(g, "format"), "kscrash") &&
                  !strcmp(sget(g, "signature"), sget(j, "signature")),
              "%s: GET back", col[0]);
        char *a = json_dumps(json_object_get(j, "threads"), JSON_COMPACT | JSON_SORT_KEYS);
        char *b = json_dumps(json_object_get(g, "threads"), JSON_COMPACT | JSON_SORT_KEYS);
        CHECK(a && b && !strcmp(a, b), "%s: threads differ when read back", col[0]);
        free(a);
        free(b);
        json_decref(g);
        /* Apple's text layout */
        char *text = NULL;
        snprintf(url, sizeof url, "/v1/crashes/%lld?format=text", (long long)id);
        request("GET", url, NULL, 0, &status, &text);
        bool hang = !strcmp(col[7], "hang");
        CHECK(status == 200 && text && !strncmp(text, "Incident Identifier: ", 21) &&
                  strstr(text, "\nHardware Model:      iPhone3,1\n") &&
                  strstr(text, "\nCode Type:           ARM\n") &&
                  strstr(text, "\nOS Version:          iPhone OS 4.3.3 (8J2)\n") &&
                  (hang || strstr(text, "\nException Type:  EXC_")) &&
                  strstr(text, "\nTriggered by Thread:  0\n") &&
                  strstr(text, "\nApplication Specific Information:\n") &&
                  strstr(text, "\nThread 0 Crashed:\n0   ") &&
                  strstr(text, "\nBinary Images:\n") &&
                  (strstr(col[0], "_NSException") || strstr(text, "crashed with ARM Thread State")),
              "%s: text:\n%.3000s", col[0], text ? text : "");
        if (strstr(col[0], "_CrashInHandler"))
            CHECK(text && strstr(text, "\nRecrash (crash inside the crash handler):\n0   "),
                  "CrashInHandler: recrash section");
        if (strstr(col[0], "_BadPointer"))
            CHECK(text && strstr(text, "\nException Codes: KERN_INVALID_ADDRESS at 0xffffffff\n") &&
                      strstr(text, "0x0005b720 -[Crasher dereferenceBadPointer] + 24"),
                  "BadPointer text");
        free(text);
        json_decref(j);
        free(buf);
    }
    fclose(mf);
    CHECK(files == 10 && stored == files, "%d of %d stored", stored, files);

    /* ?format= keeps them, and only them, in the listing and the groups */
    int status;
    json_t *l = request("GET", "/v1/crashes?format=kscrash&limit=1000", NULL, 0, &status, NULL);
    json_t *rows = json_object_get(l, "crashes");
    size_t listed = json_array_size(rows), other = 0;
    for (size_t i = 0; i < listed; i++)
        other += strcmp(sget(json_array_get(rows, i), "format"), "kscrash") != 0;
    CHECK(status == 200 && listed >= (size_t)stored && other == 0,
          "?format=kscrash: %d, %zu rows, %zu of another format", status, listed, other);
    json_decref(l);
    json_t *gr = request("GET", "/v1/crashes/groups?format=kscrash&limit=1000", NULL, 0,
                         &status, NULL);
    json_int_t counted = 0;
    for (size_t i = 0; i < json_array_size(json_object_get(gr, "groups")); i++)
        counted += json_integer_value(
            json_object_get(json_array_get(json_object_get(gr, "groups"), i), "count"));
    CHECK(status == 200 && counted == (json_int_t)listed,
          "groups ?format=kscrash: %d, count %lld of %zu", status, (long long)counted, listed);
    json_decref(gr);
    l = request("GET", "/v1/crashes?format=ips&limit=1000", NULL, 0, &status, NULL);
    rows = json_object_get(l, "crashes");
    other = 0;
    for (size_t i = 0; i < json_array_size(rows); i++)
        other += strcmp(sget(json_array_get(rows, i), "format"), "ips") != 0;
    CHECK(status == 200 && other == 0, "?format=ips: %d, %zu of another format", status, other);
    json_decref(l);
    l = request("GET", "/v1/crashes?format=tombstone", NULL, 0, &status, NULL);
    const char *msg = json_string_value(
        json_object_get(json_object_get(l, "error"), "message"));
    CHECK(status == 400 && msg && strstr(msg, "unknown format 'tombstone'") &&
              strstr(msg, "kscrash"),
          "?format=tombstone: %d %s", status, msg ? msg : "");
    json_decref(l);
    printf("    kscrash e2e: %d/%d stored, %ld/%ld frames as the manifest\n", stored, files,
           got_frames, want_frames);
}

/* Member k of x and y: both absent, or equal. */
static bool same(json_t *x, json_t *y, const char *k)
{
    json_t *a = json_object_get(x, k), *b = json_object_get(y, k);
    return (!a && !b) || (a && b && json_equal(a, b));
}

/* The frames of thread t of an answer. */
static json_t *frames_of(json_t *ans, size_t t)
{
    return json_object_get(json_array_get(json_object_get(ans, "threads"), t), "frames");
}

TEST(e2e_kscrash_twin_symbolicates_like_the_crash_twin)
{
    static const char *const uploads[] = {
        "fixtures/bin/bigapp-arm64", "fixtures/bin/libfix-arm64.dylib",
        "fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64"};
    int status;
    for (size_t i = 0; i < 3; i++) {
        json_t *u = http_post_fixture(lazy_port(&ksrv), uploads[i], "/v1/images?name=bigapp-arm64",
                                      &status);
        CHECK(status == 201 || status == 200, "upload %s: %d", uploads[i], status);
        json_decref(u);
    }
    json_t *c = http_post_fixture(lazy_port(&ksrv), "fixtures/crashes/bigapp-twin.crash",
                                  "/v1/crashes?store=false", &status);
    CHECK(status == 200, "the .crash twin: %d", status);
    json_t *k = http_post_fixture(lazy_port(&ksrv), "fixtures/crashes/bigapp-twin.kscrash.json",
                                  "/v1/crashes", &status);
    CHECK(status == 201, "the KSCrash twin: %d", status);
    if (!c || !k) {
        json_decref(c);
        json_decref(k);
        return;
    }
    CHECK(!strcmp(sget(k, "format"), "kscrash") && !strcmp(sget(k, "kind"), "crash"), "format");
    CHECK(json_array_size(json_object_get(k, "warnings")) == 0, "warnings: %s",
          json_dumps(json_object_get(k, "warnings"), JSON_COMPACT));
    int exact = 0, total = 0, device = 0;
    for (size_t t = 0; t < 2; t++) {
        json_t *fa = frames_of(c, t), *fb = frames_of(k, t);
        CHECK(json_array_size(fa) == json_array_size(fb), "thread %zu: %zu vs %zu frames", t,
              json_array_size(fa), json_array_size(fb));
        for (size_t f = 0; f < json_array_size(fa) && f < json_array_size(fb); f++) {
            json_t *x = json_array_get(fa, f), *y = json_array_get(fb, f);
            total++;
            bool ok = same(x, y, "address") && same(x, y, "status") && same(x, y, "inlined") &&
                      same(x, y, "image") && same(x, y, "uuid");
            if (!strcmp(sget(x, "status"), "missing_image")) {
                /* the name the device resolved is the answer's */
                ok &= !json_object_get(x, "symbol") && *sget(y, "symbol") &&
                      json_is_true(json_object_get(y, "from_report"));
                device += ok;
            } else {
                ok &= same(x, y, "symbol") && same(x, y, "file") && same(x, y, "line") &&
                      same(x, y, "column") && same(x, y, "offset") && same(x, y, "vmaddr") &&
                      !json_object_get(y, "from_report");
            }
            char *sx = json_dumps(x, JSON_COMPACT), *sy = json_dumps(y, JSON_COMPACT);
            CHECK(ok, "thread %zu frame %zu:\n  .crash   %s\n  kscrash  %s", t, f, sx, sy);
            free(sx);
            free(sy);
            exact += ok;
        }
    }
    CHECK(total >= 10 && device == 2, "%d frames, %d named by the device", total, device);
    CHECK(!strcmp(sget(c, "signature"), sget(k, "signature")), "signatures differ: %s vs %s",
          sget(c, "signature"), sget(k, "signature"));
    printf("    kscrash twin: %d/%d frames exact (symbol, file, line, offset; %d named by the "
           "device)\n",
           exact, total, device);
    /* as text, the way Xcode prints it */
    char url[96], *text = NULL;
    snprintf(url, sizeof url, "/v1/crashes/%lld?format=text",
             (long long)json_integer_value(json_object_get(k, "id")));
    request("GET", url, NULL, 0, &status, &text);
    CHECK(status == 200 && text && strstr(text, " mix (app.c:14)\n") &&
              strstr(text, " static_square + 20 (app.c:20)\n") &&
              strstr(text, " __pthread_kill + 8\n") &&
              strstr(text, "\nThread 0 crashed with ARM Thread State (64-bit):\n") &&
              strstr(text, "\nException Codes: KERN_INVALID_ADDRESS at 0x0000000000000000\n"),
          "text:\n%s", text ? text : "");
    free(text);
    json_decref(c);
    json_decref(k);
}

/* Not KSCrash, not any report: 415; a KSCrash report cut short: 415 (no
 * JSON), never a half row. */
TEST(e2e_kscrash_refusals)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/bigapp-twin.kscrash.json", &len);
    if (!buf)
        return;
    int status;
    lazy_port(&ksrv);
    long long before = db_query_int(ksrv.proc.db, "SELECT count(*) FROM crashes");
    json_t *j = request("POST", "/v1/crashes", buf, len / 2, &status, NULL);
    CHECK(status == 415, "half a KSCrash report: %d", status);
    json_decref(j);
    const char *other = "{\"report\": {\"id\": \"x\"}, \"crash\": {}}";
    j = request("POST", "/v1/crashes", other, strlen(other), &status, NULL);
    CHECK(status == 415, "not KSCrash: %d", status);
    json_decref(j);
    if (before >= 0)
        CHECK(db_query_int(ksrv.proc.db, "SELECT count(*) FROM crashes") == before,
              "nothing stored");
    free(buf);
}

/* The levels of frame number n of a thread's answer (inlined levels and
 * the outer one), without the keys that only say where the frame stands;
 * for a frame of an image never uploaded, without what the device named it
 * (counted in *device when it is there, from_report). */
static json_t *levels_of(json_t *frames, long n, int *device)
{
    json_t *out = json_array();
    for (size_t f = 0; f < json_array_size(frames); f++) {
        json_t *o = json_array_get(frames, f);
        if (json_integer_value(json_object_get(o, "frame")) != n)
            continue;
        json_t *c = json_deep_copy(o);
        json_object_del(c, "frame");
        if (!strcmp(sget(c, "status"), "missing_image")) {
            if (device && json_is_true(json_object_get(c, "from_report")) &&
                json_object_get(c, "symbol"))
                (*device)++;
            json_object_del(c, "symbol");
            json_object_del(c, "offset");
            json_object_del(c, "from_report");
            json_object_del(c, "arch"); /* said with the report's own name, as for a .crash */
        }
        /* the device's own name, kept beside the stored image's answer */
        if (device && json_is_string(json_object_get(c, "report_symbol")))
            (*device)++;
        json_object_del(c, "report_symbol");
        json_object_del(c, "report_offset");
        json_array_append_new(out, c);
    }
    return out;
}

/* The thread of an answer with role; NULL when none. */
static json_t *thread_with_role(json_t *ans, const char *role)
{
    json_t *th = json_object_get(ans, "threads");
    for (size_t i = 0; i < json_array_size(th); i++)
        if (!strcmp(sget(json_array_get(th, i), "role"), role))
            return json_array_get(th, i);
    return NULL;
}

/* bigapp-twin-exc.kscrash.json (one line): its NSException's own backtrace
 * symbolicates like the .crash twin's thread 1 (every frame a return
 * address there too, past frame 0 which lies in the image never uploaded),
 * and its recrash (a crash inside the crash handler) like frames 0 and 3 of
 * the crashed thread; the exception and the recrash are said. */
TEST(e2e_kscrash_exception_and_recrash_twin)
{
    static const char *const uploads[] = {
        "fixtures/bin/bigapp-arm64", "fixtures/bin/libfix-arm64.dylib",
        "fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64"};
    int status;
    for (size_t i = 0; i < 3; i++) {
        json_t *u = http_post_fixture(lazy_port(&ksrv), uploads[i], "/v1/images?name=bigapp-arm64",
                                      &status);
        CHECK(status == 201 || status == 200, "upload %s: %d", uploads[i], status);
        json_decref(u);
    }
    json_t *c = http_post_fixture(lazy_port(&ksrv), "fixtures/crashes/bigapp-twin.crash",
                                  "/v1/crashes?store=false", &status);
    json_t *k = http_post_fixture(lazy_port(&ksrv), "fixtures/crashes/bigapp-twin-exc.kscrash.json",
                                  "/v1/crashes", &status);
    CHECK(status == 201, "the exception twin: %d", status);
    if (!c || !k) {
        json_decref(c);
        json_decref(k);
        return;
    }
    json_t *exc = thread_with_role(k, "last_exception"), *rec = thread_with_role(k, "recrash");
    CHECK(exc && rec, "last_exception and recrash threads");
    json_t *ct0 = frames_of(c, 0), *ct1 = frames_of(c, 1);
    int exact = 0, device = 0;
    struct {
        json_t *frames;
        long n;
        json_t *want;
        long wn;
    } pairs[] = {
        {json_object_get(exc, "frames"), 0, ct1, 0},
        {json_object_get(exc, "frames"), 1, ct1, 1},
        {json_object_get(exc, "frames"), 2, ct1, 2},
        {json_object_get(rec, "frames"), 0, ct0, 0},
        {json_object_get(rec, "frames"), 1, ct0, 3},
    };
    for (size_t i = 0; exc && rec && i < sizeof pairs / sizeof *pairs; i++) {
        json_t *a = levels_of(pairs[i].frames, pairs[i].n, &device);
        json_t *b = levels_of(pairs[i].want, pairs[i].wn, NULL);
        bool ok = json_array_size(a) > 0 && json_equal(a, b);
        char *sa = json_dumps(a, JSON_COMPACT), *sb = json_dumps(b, JSON_COMPACT);
        CHECK(ok, "pair %zu:\n  kscrash %s\n  .crash  %s", i, sa, sb);
        exact += ok;
        free(sa);
        free(sb);
        json_decref(a);
        json_decref(b);
    }
    /* one frame of an image never uploaded says the device's name alone;
     * the four the store names keep it as report_symbol */
    CHECK(device == 5, "%d frames named by the device", device);
    const char *as = sget(k, "app_specific");
    CHECK(!strncmp(as, "*** Terminating app due to uncaught exception 'NSRangeException', reason: "
                       "'*** -[__NSArrayI objectAtIndex:]: index 3 beyond bounds [0 .. 2]'\n",
                   140) &&
              strstr(as, "\nRecrash (crash inside the crash handler): EXC_BAD_ACCESS (SIGBUS), "
                         "KERN_PROTECTION_FAILURE at 0x0000000000000000\n"),
          "app_specific: %s", as);
    json_t *ex = json_object_get(k, "exception");
    CHECK(!strcmp(sget(ex, "type"), "EXC_CRASH") && !strcmp(sget(ex, "signal"), "SIGABRT"),
          "exception");
    bool warned = false;
    json_t *w = json_object_get(k, "warnings");
    for (size_t i = 0; i < json_array_size(w); i++)
        warned |= !strcmp(sget(json_array_get(w, i), "where"), "recrash_report");
    CHECK(warned, "the recrash is warned");
    printf("    kscrash exception/recrash twin: %d/5 frames exact\n", exact);
    char url[96], *text = NULL;
    snprintf(url, sizeof url, "/v1/crashes/%lld?format=text",
             (long long)json_integer_value(json_object_get(k, "id")));
    request("GET", url, NULL, 0, &status, &text);
    CHECK(status == 200 && text && strstr(text, "\nLast Exception Backtrace:\n0   ") &&
              strstr(text, "\nRecrash (crash inside the crash handler):\n0   libfix.dylib") &&
              strstr(text, " fix_loop + 48\n") && strstr(text, " __pthread_kill + 8\n"),
          "text:\n%s", text ? text : "");
    free(text);
    json_decref(c);
    json_decref(k);
}

/* A JSON array of KSCrash reports (what KSCrash's standard sink posts): one
 * stored report per element of KSCrash's shape, each as the same report
 * posted alone, read back by its part; an element of another shape is said
 * in a warning; an array holding no KSCrash report is refused (415). */
TEST(e2e_kscrash_array_of_reports)
{
    size_t la, lb;
    uint8_t *a = read_fixture("fixtures/crashes/bigapp-twin.kscrash.json", &la);
    uint8_t *b = read_fixture("fixtures/crashes/bigapp-twin-exc.kscrash.json", &lb);
    char *body = a && b ? malloc(la + lb + 64) : NULL;
    CHECK(body, "fixtures");
    if (!body) {
        free(a);
        free(b);
        return;
    }
    size_t n = 0;
    body[n++] = '[';
    memcpy(body + n, a, la);
    n += la;
    static const char mid[] = ",\n {\"note\": \"not a report\"},\n";
    memcpy(body + n, mid, sizeof mid - 1);
    n += sizeof mid - 1;
    memcpy(body + n, b, lb);
    n += lb;
    body[n++] = ']';
    int status;
    json_t *alone[2] = {request("POST", "/v1/crashes?store=false", a, la, &status, NULL),
                        request("POST", "/v1/crashes?store=false", b, lb, &status, NULL)};
    json_t *j = request("POST", "/v1/crashes", body, n, &status, NULL);
    json_t *reps = json_object_get(j, "reports");
    CHECK(status == 201 && json_array_size(reps) == 2, "the array: %d, %zu reports", status,
          json_array_size(reps));
    for (size_t i = 0; i < json_array_size(reps) && i < 2; i++) {
        json_t *r = json_array_get(reps, i);
        CHECK(!strcmp(sget(r, "format"), "kscrash") &&
                  !strcmp(sget(r, "signature"), sget(alone[i], "signature")) &&
                  report_frames(r) == report_frames(alone[i]) && report_frames(r) > 0,
              "report %zu: %s, %zu frames as posted alone (%zu)", i, sget(r, "signature"),
              report_frames(r), report_frames(alone[i]));
        json_t *w = json_object_get(r, "warnings");
        bool said = false;
        for (size_t k = 0; k < json_array_size(w); k++)
            said |= !strcmp(sget(json_array_get(w, k), "where"), "[1]") &&
                    strstr(sget(json_array_get(w, k), "message"), "no KSCrash report");
        CHECK(said == (i == 0), "report %zu: the element of another shape said on the first",
              i);
        /* read back by its part */
        char url[96];
        snprintf(url, sizeof url, "/v1/crashes/%lld",
                 (long long)json_integer_value(json_object_get(r, "id")));
        json_t *g = request("GET", url, NULL, 0, &status, NULL);
        char *x = json_dumps(json_object_get(r, "threads"), JSON_COMPACT | JSON_SORT_KEYS);
        char *y = json_dumps(json_object_get(g, "threads"), JSON_COMPACT | JSON_SORT_KEYS);
        CHECK(status == 200 && x && y && !strcmp(x, y), "report %zu: read back the same", i);
        free(x);
        free(y);
        json_decref(g);
    }
    json_decref(j);
    json_decref(alone[0]);
    json_decref(alone[1]);
    static const char none[] = "[{\"report\": {\"id\": \"x\"}, \"crash\": {}}, []]";
    j = request("POST", "/v1/crashes", none, sizeof none - 1, &status, NULL);
    CHECK(status == 415, "an array with no KSCrash report: %d", status);
    json_decref(j);
    free(body);
    free(a);
    free(b);
}

/* End-to-end: crash reports over HTTP (/v1/crashes, groups, missing), on a
 * server of their own (fresh database). */
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../util/hex.h"
#include "fixture_util.h"
#include "harness.h"
#include "test.h"

static lazy_server csrv = {"e2e-crash.db", NULL, {0}, false};

static int cport(void)
{
    return lazy_port(&csrv);
}

__attribute__((destructor)) static void stop_crash_server(void)
{
    lazy_stop(&csrv);
}

static long long crash_count(void)
{
    cport(); /* the database exists once the server does */
    return db_query_int(csrv.proc.db,
                        "SELECT (SELECT count(*) FROM crashes) + (SELECT count(*) FROM "
                        "crash_originals) + (SELECT coalesce(sum(crashes), 0) FROM "
                        "crash_image_refs)");
}

static json_t *request(const char *method, const char *path, const char *headers,
                       const void *body, size_t len, int *status, char **text)
{
    http_resp r;
    bool ok = http_do(cport(), method, path, headers, body, len, &r);
    CHECK(ok, "%s %s: no answer", method, path);
    *status = r.status;
    json_t *j = NULL;
    if (text) {
        *text = r.body ? strdup(r.body) : strdup("");
    } else {
        json_error_t e;
        j = ok && r.body ? json_loads(r.body, 0, &e) : NULL;
        CHECK(j, "%s %s: answer is not JSON: %.200s", method, path, r.body ? r.body : "");
    }
    http_resp_free(&r);
    return j;
}

static json_t *post_file(const char *path_in_repo, const char *url, int *status)
{
    size_t len;
    uint8_t *buf = read_fixture(path_in_repo, &len);
    if (!buf)
        return NULL;
    json_t *j = request("POST", url, NULL, buf, len, status, NULL);
    free(buf);
    return j;
}

static size_t total_frames(json_t *j)
{
    size_t n = 0;
    json_t *th = json_object_get(j, "threads");
    for (size_t t = 0; t < json_array_size(th); t++)
        n += json_array_size(json_object_get(json_array_get(th, t), "frames"));
    return n;
}

/* Every real report: stored (201), every thread and frame answered, every
 * image missing (no binaries exist for them), the text rendering carries
 * every frame's address, the missing list names their images, and the
 * groups count them. */
TEST(e2e_crash_real_reports_store_render_and_list)
{
    const char *dir = real_crashes_dir();
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) {
        test_skip("../shared/real-crashes is absent: real crash reports not tested");
        return;
    }
    struct dirent *e;
    int files = 0;
    long long before = crash_count();
    while ((e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        bool is_crash = nl > 6 && strcmp(e->d_name + nl - 6, ".crash") == 0;
        bool is_ips = nl > 4 && strcmp(e->d_name + nl - 4, ".ips") == 0;
        if (!is_crash && !is_ips)
            continue;
        char rel[900];
        snprintf(rel, sizeof rel, "%s/%s", dir, e->d_name);
        int status;
        json_t *j = post_file(rel, "/v1/crashes", &status);
        CHECK(status == 201, "%s: %d", e->d_name, status);
        json_int_t id = json_integer_value(json_object_get(j, "id"));
        CHECK(id > 0 && total_frames(j) > 0, "%s: id %lld, %zu frames", e->d_name,
              (long long)id, total_frames(j));
        json_t *imgs = json_object_get(j, "images");
        for (size_t i = 0; i < json_array_size(imgs); i++)
            CHECK(strcmp(json_string_value(json_object_get(json_array_get(imgs, i), "status")),
                         "missing") == 0,
                  "%s: an image found", e->d_name);
        CHECK(json_string_value(json_object_get(j, "signature")) &&
                  *json_string_value(json_object_get(j, "signature")),
              "%s: no signature", e->d_name);
        /* the text rendering: every frame's address */
        char path[64], *text = NULL;
        snprintf(path, sizeof path, "/v1/crashes/%lld?format=text", (long long)id);
        request("GET", path, NULL, NULL, 0, &status, &text);
        CHECK(status == 200 && strstr(text, "Binary Images:"), "%s text: %d", e->d_name,
              status);
        json_t *th = json_object_get(j, "threads");
        int absent = 0;
        for (size_t t = 0; t < json_array_size(th); t++) {
            json_t *fr = json_object_get(json_array_get(th, t), "frames");
            for (size_t f = 0; f < json_array_size(fr); f++) {
                uint64_t a;
                const char *as = json_string_value(json_object_get(json_array_get(fr, f),
                                                                   "address"));
                hex_parse_u64(as, strlen(as), &a);
                char h16[24], h8[24];
                snprintf(h16, sizeof h16, "0x%016llx", (unsigned long long)a);
                snprintf(h8, sizeof h8, "0x%08llx", (unsigned long long)a);
                absent += !strstr(text, h16) && !strstr(text, h8);
            }
        }
        CHECK(absent == 0, "%s: %d frame addresses absent from the text", e->d_name, absent);
        free(text);
        /* the same by Accept */
        snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)id);
        request("GET", path, "Accept: text/plain\r\n", NULL, 0, &status, &text);
        CHECK(status == 200 && strstr(text, "Binary Images:"), "%s Accept: text/plain",
              e->d_name);
        free(text);
        json_decref(j);
        files++;
    }
    closedir(d);
    CHECK(files >= 8, "only %d real reports", files);
    CHECK(crash_count() > before, "nothing stored");

    int status;
    json_t *j = request("GET", "/v1/crashes?limit=3", NULL, NULL, 0, &status, NULL);
    CHECK(status == 200 && json_array_size(json_object_get(j, "crashes")) == 3 &&
              json_is_string(json_object_get(j, "next_cursor")),
          "list: %d", status);
    json_decref(j);
    j = request("GET", "/v1/crashes/groups", NULL, NULL, 0, &status, NULL);
    json_int_t total = 0;
    json_t *g = json_object_get(j, "groups");
    for (size_t i = 0; i < json_array_size(g); i++)
        total += json_integer_value(json_object_get(json_array_get(g, i), "count"));
    CHECK(status == 200 && total >= files, "groups count %lld of %d", (long long)total, files);
    json_decref(j);
    j = request("GET", "/v1/missing?limit=1000", NULL, NULL, 0, &status, NULL);
    CHECK(status == 200 && json_array_size(json_object_get(j, "missing")) > 10,
          "missing: %d, %zu", status, json_array_size(json_object_get(j, "missing")));
    json_decref(j);
}

/* Not a crash report, broken reports, and store=false: nothing stored. */
TEST(e2e_crash_hostile_and_unstored)
{
    long long before = crash_count();
    int status;
    json_t *j = request("POST", "/v1/crashes", NULL, "hello world\n", 12, &status, NULL);
    CHECK(status == 415 && strcmp(json_string_value(json_object_get(
                                      json_object_get(j, "error"), "code")),
                                  "not_a_crash_report") == 0,
          "not a report: %d", status);
    json_decref(j);
    CHECK(crash_count() == before, "a refused report was stored");
    /* A report with a broken frame is stored, the frame skipped with a
     * warning that says where; store=false stores nothing either way. */
    const char *broken = "{\"bug_type\":\"309\"}\n{\"usedImages\":[],\"threads\":[{\"frames\":"
                         "[{\"imageIndex\":7,\"imageOffset\":16}]}]}";
    j = request("POST", "/v1/crashes?store=false", NULL, broken, strlen(broken), &status, NULL);
    json_t *w = json_array_get(json_object_get(j, "warnings"), 0);
    CHECK(status == 200 && json_is_null(json_object_get(j, "id")) &&
              strcmp(json_string_value(json_object_get(w, "where")),
                     "threads[0].frames[0].imageIndex") == 0 &&
              strstr(json_string_value(json_object_get(w, "message")), "past usedImages"),
          "imageIndex past usedImages, unstored: %d", status);
    json_decref(j);
    CHECK(crash_count() == before, "store=false stored a broken report");
    j = post_file("fixtures/crashes/bigapp-twin.crash", "/v1/crashes?store=false", &status);
    CHECK(status == 200 && json_is_null(json_object_get(j, "id")) && total_frames(j) > 0,
          "store=false: %d", status);
    json_decref(j);
    CHECK(crash_count() == before, "store=false stored");
    j = request("GET", "/v1/crashes/999999", NULL, NULL, 0, &status, NULL);
    CHECK(status == 404, "unknown crash: %d", status);
    json_decref(j);
    j = request("GET", "/v1/crashes/abc", NULL, NULL, 0, &status, NULL);
    CHECK(status == 400, "bad id: %d", status);
    json_decref(j);
}

/* The crashed thread's frames of a crash answer. */
static json_t *crashed_frames(json_t *j)
{
    json_t *th = json_object_get(j, "threads");
    for (size_t t = 0; t < json_array_size(th); t++)
        if (json_is_true(json_object_get(json_array_get(th, t), "crashed")))
            return json_object_get(json_array_get(th, t), "frames");
    return NULL;
}

static bool missing_lists(const char *uuid)
{
    int status;
    json_t *j = request("GET", "/v1/missing?limit=1000", NULL, NULL, 0, &status, NULL);
    bool found = false;
    json_t *m = json_object_get(j, "missing");
    for (size_t i = 0; i < json_array_size(m); i++)
        found |= strcmp(json_string_value(json_object_get(json_array_get(m, i), "uuid")),
                        uuid) == 0;
    json_decref(j);
    return found;
}

/* The generated twins (fixtures/crashes: one crash as .crash and as .ips):
 * stored before their images exist they say missing_image and the missing
 * list names the images; after the binaries and the dSYM are uploaded the
 * stored crash comes back symbolicated exactly as twins.expected.tsv says
 * (inlined levels included), and both formats give identical frames. */
TEST(e2e_crash_twins_symbolicate_after_upload)
{
    int status;
    json_t *j = post_file("fixtures/crashes/bigapp-twin.crash", "/v1/crashes", &status);
    CHECK(status == 201, "twin .crash: %d", status);
    json_int_t id = json_integer_value(json_object_get(j, "id"));
    json_t *fr = crashed_frames(j);
    for (size_t f = 0; f < json_array_size(fr); f++)
        CHECK(strcmp(json_string_value(json_object_get(json_array_get(fr, f), "status")),
                     "missing_image") == 0,
              "before upload, frame %zu not missing", f);
    json_decref(j);
    CHECK(missing_lists("4C4C4490-5555-3144-A17C-64A339EDE13A") &&
              missing_lists("4C4C4448-5555-3144-A188-0C3B883681D9"),
          "missing list lacks the twin's images");

    static const char *const uploads[] = {
        "fixtures/bin/bigapp-arm64", "fixtures/bin/libfix-arm64.dylib",
        "fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64"};
    for (size_t i = 0; i < 3; i++) {
        json_t *u = post_file(uploads[i], "/v1/images?name=bigapp-arm64", &status);
        CHECK(status == 201, "upload %s: %d", uploads[i], status);
        json_decref(u);
    }
    CHECK(!missing_lists("4C4C4490-5555-3144-A17C-64A339EDE13A") &&
              !missing_lists("4C4C4448-5555-3144-A188-0C3B883681D9") &&
              missing_lists("D1E2F3A4-B5C6-4D7E-8F90-A1B2C3D4E5F6"),
          "missing list after the uploads");

    char path[64];
    snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)id);
    json_t *got = request("GET", path, NULL, NULL, 0, &status, NULL);
    CHECK(status == 200, "get twin: %d", status);
    tsv_row rows[16];
    char *buf = NULL;
    int n = load_tsv("fixtures/crashes/twins.expected.tsv", rows, 16, &buf);
    CHECK(n >= 5, "twins.expected.tsv: %d rows", n);
    fr = crashed_frames(got);
    size_t k = 0;
    int exact = 0;
    for (int i = 0; i < n; i++) {
        json_t *outer;
        bool ok = twin_row_matches(fr, &k, &rows[i], 0, &outer);
        CHECK(ok, "twin frame %s (%s): %s", rows[i].f[0], rows[i].f[1],
              outer ? json_dumps(outer, JSON_COMPACT) : "(none)");
        exact += ok;
    }
    CHECK(k == json_array_size(fr), "%zu output frames, expected %zu", json_array_size(fr), k);
    printf("    twin: %d/%d frames exact after the upload\n", exact, n);
    free(buf);

    /* the .ips twin: the same frames */
    json_t *ips = post_file("fixtures/crashes/bigapp-twin.ips", "/v1/crashes?store=false",
                            &status);
    CHECK(status == 200, "twin .ips: %d", status);
    json_t *a = json_object_get(got, "threads"), *b = json_object_get(ips, "threads");
    CHECK(json_array_size(a) == json_array_size(b), "threads %zu vs %zu", json_array_size(a),
          json_array_size(b));
    for (size_t t = 0; t < json_array_size(a) && t < json_array_size(b); t++) {
        json_t *fa = json_object_get(json_array_get(a, t), "frames");
        json_t *fb = json_object_get(json_array_get(b, t), "frames");
        char *sa = json_dumps(fa, JSON_COMPACT | JSON_SORT_KEYS);
        char *sb = json_dumps(fb, JSON_COMPACT | JSON_SORT_KEYS);
        CHECK(sa && sb && strcmp(sa, sb) == 0, "thread %zu differs:\n  .crash %.600s\n  .ips   %.600s",
              t, sa ? sa : "", sb ? sb : "");
        free(sa);
        free(sb);
    }
    CHECK(strcmp(json_string_value(json_object_get(got, "signature")),
                 json_string_value(json_object_get(ips, "signature"))) == 0,
          "signatures differ");
    json_decref(ips);

    /* and as text, the way Xcode prints it */
    char *text = NULL;
    snprintf(path, sizeof path, "/v1/crashes/%lld?format=text", (long long)id);
    request("GET", path, NULL, NULL, 0, &status, &text);
    CHECK(status == 200 && strstr(text, " mix (app.c:14)\n") &&
              strstr(text, " static_square + 20 (app.c:20)\n"),
          "text:\n%s", text);
    free(text);
    json_decref(got);
}

/* POST with Prefer: return=minimal (RFC 7240): the short answer agrees with
 * the whole one on the id, signature and frames, names the app image to
 * upload exactly when the whole answer marks it missing, and says so in
 * Preference-Applied; a 201 carries the new crash's Location either way. */
TEST(e2e_crash_prefer_minimal)
{
    const char *fx = "fixtures/crashes/bigapp-twin.crash";
    size_t len;
    uint8_t *buf = read_fixture(fx, &len);
    CHECK(buf, "%s unreadable", fx);
    if (!buf)
        return;
    /* an incident of its own: other tests store the fixture on this server */
    report_renumber(buf, len, 7001);
    int status;
    json_t *full = request("POST", "/v1/crashes?store=false", NULL, buf, len, &status, NULL);
    CHECK(status == 200 && full, "whole answer: %d", status);
    /* the whole answer's frames by status: one entry per report frame is
     * not inlined */
    long long want[4] = {0}, total = 0;
    static const char *const st_names[4] = {"symbolicated", "no_symbol", "missing_image",
                                            "unknown_image"};
    json_t *th = json_object_get(full, "threads");
    for (size_t t = 0; t < json_array_size(th); t++) {
        json_t *fr = json_object_get(json_array_get(th, t), "frames");
        for (size_t f = 0; f < json_array_size(fr); f++) {
            json_t *o = json_array_get(fr, f);
            if (json_is_true(json_object_get(o, "inlined")))
                continue;
            total++;
            for (int i = 0; i < 4; i++)
                if (strcmp(json_string_value(json_object_get(o, "status")), st_names[i]) == 0)
                    want[i]++;
        }
    }
    const char *app_missing = NULL;
    json_t *imgs = json_object_get(full, "images");
    for (size_t i = 0; i < json_array_size(imgs); i++) {
        json_t *im = json_array_get(imgs, i);
        if (json_is_true(json_object_get(im, "app")) &&
            strcmp(json_string_value(json_object_get(im, "status")), "missing") == 0)
            app_missing = json_string_value(json_object_get(im, "uuid"));
    }

    http_resp r;
    CHECK(http_do(cport(), "POST", "/v1/crashes",
                  "Prefer: handling=lenient, RETURN = \"minimal\"; x=y\r\n", buf, len, &r),
          "no answer");
    CHECK(r.status == 201, "minimal: %d %.200s", r.status, r.body ? r.body : "");
    const char *pa = http_header(&r, "Preference-Applied");
    CHECK(pa && strcmp(pa, "return=minimal") == 0, "Preference-Applied: %s", pa ? pa : "(none)");
    char loc[64];
    snprintf(loc, sizeof loc, "%s", http_header(&r, "Location") ? http_header(&r, "Location") : "");
    json_error_t e;
    json_t *m = r.body ? json_loads(r.body, 0, &e) : NULL;
    CHECK(m && !json_object_get(m, "threads") && r.len < 2048,
          "minimal answer is %zu bytes: %.300s", r.len, r.body ? r.body : "");
    http_resp_free(&r);
    char want_loc[64];
    snprintf(want_loc, sizeof want_loc, "/v1/crashes/%lld",
             (long long)json_integer_value(json_object_get(m, "id")));
    CHECK(json_integer_value(json_object_get(m, "id")) > 0 && strcmp(loc, want_loc) == 0,
          "Location %s, id %lld", loc, (long long)json_integer_value(json_object_get(m, "id")));
    CHECK(json_equal(json_object_get(m, "signature"), json_object_get(full, "signature")) &&
              json_equal(json_object_get(m, "kind"), json_object_get(full, "kind")) &&
              json_equal(json_object_get(m, "crashed_thread"),
                         json_object_get(full, "crashed_thread")) &&
              json_equal(json_object_get(m, "warnings"), json_object_get(full, "warnings")),
          "minimal and whole answers differ: %s", json_dumps(m, JSON_COMPACT));
    json_t *fc = json_object_get(m, "frames");
    CHECK(json_integer_value(json_object_get(fc, "total")) == total, "total %lld, want %lld",
          (long long)json_integer_value(json_object_get(fc, "total")), total);
    for (int i = 0; i < 4; i++)
        CHECK(json_integer_value(json_object_get(fc, st_names[i])) == want[i],
              "frames %s: %lld, want %lld", st_names[i],
              (long long)json_integer_value(json_object_get(fc, st_names[i])), want[i]);
    json_t *nu = json_object_get(m, "needs_upload");
    CHECK(app_missing ? json_is_object(nu) &&
                            strcmp(json_string_value(json_object_get(nu, "uuid")), app_missing) == 0
                      : json_is_null(nu),
          "needs_upload %s, app missing %s", json_dumps(nu, JSON_COMPACT | JSON_ENCODE_ANY),
          app_missing ? app_missing : "no");

    /* the Location reads the crash back */
    json_t *got = request("GET", loc, NULL, NULL, 0, &status, NULL);
    CHECK(status == 200 && json_equal(json_object_get(got, "signature"),
                                      json_object_get(full, "signature")),
          "GET %s: %d", loc, status);
    json_decref(got);
    json_decref(m);

    /* another preference, text, or not stored */
    json_t *rep = request("POST", "/v1/crashes?store=false", "Prefer: return=representation\r\n",
                          buf, len, &status, NULL);
    CHECK(status == 200 && json_array_size(json_object_get(rep, "threads")) ==
                               json_array_size(th),
          "return=representation: %d", status);
    json_decref(rep);
    CHECK(http_do(cport(), "POST", "/v1/crashes?store=false&format=text",
                  "Prefer: return=minimal\r\n", buf, len, &r),
          "no answer");
    CHECK(r.status == 200 && !http_header(&r, "Preference-Applied") &&
              !http_header(&r, "Location") && r.body && strstr(r.body, "Thread 0"),
          "text with return=minimal: %d %.200s", r.status, r.body ? r.body : "");
    http_resp_free(&r);
    CHECK(http_do(cport(), "POST", "/v1/crashes?store=false", "Prefer: return=minimal\r\n",
                  buf, len, &r),
          "no answer");
    m = r.body ? json_loads(r.body, 0, &e) : NULL;
    CHECK(r.status == 200 && !http_header(&r, "Location") && m &&
              json_is_null(json_object_get(m, "id")),
          "not stored, minimal: %d %.200s", r.status, r.body ? r.body : "");
    json_decref(m);
    http_resp_free(&r);
    json_decref(full);
    free(buf);
}

/* One hostile report over HTTP. where NULL: it must be refused (4xx) and
 * nothing stored. Otherwise it must be stored (201) with a warning whose
 * "where" holds where, and read back whole (GET answers the same id). */
static int hostile_case(const char *what, const void *body, size_t len, const char *where)
{
    long long before = crash_count();
    int status;
    json_t *j = request("POST", "/v1/crashes", NULL, body, len, &status, NULL);
    int good = 0;
    if (!where) {
        good = status >= 400 && status < 500 && crash_count() == before;
        CHECK(good, "%s: %d, rows %lld -> %lld (want a 4xx, nothing stored)", what, status,
              before, crash_count());
    } else {
        json_t *ws = json_object_get(j, "warnings");
        bool warned = false;
        for (size_t i = 0; i < json_array_size(ws); i++) {
            const char *wh = json_string_value(json_object_get(json_array_get(ws, i), "where"));
            warned |= wh && strstr(wh, where);
        }
        json_int_t id = json_integer_value(json_object_get(j, "id"));
        char path[64];
        snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)id);
        int st2 = 0;
        json_t *back = id > 0 ? request("GET", path, NULL, NULL, 0, &st2, NULL) : NULL;
        good = status == 201 && warned && crash_count() > before && st2 == 200 &&
               json_integer_value(json_object_get(back, "id")) == id &&
               json_array_size(json_object_get(back, "warnings")) ==
                   json_array_size(ws);
        CHECK(good, "%s: %d, warned at %s %d, read back %d (want 201, a warning, the row whole)",
              what, status, where, warned, st2);
        json_decref(back);
    }
    json_decref(j);
    return good;
}

/* Hostile reports over HTTP: a report past a limit or no report at all is
 * refused (4xx) with nothing stored; a report with a broken part is stored
 * and answered with warnings; the server answers on. Never a 5xx, never
 * half a row. */
TEST(e2e_crash_hostile_battery)
{
    size_t big = 10u << 20;
    char *buf = malloc(big + (1u << 20));
    int ok = 0, nc = 0;
    /* a 10 MB single line after a real header */
    size_t n = (size_t)snprintf(buf, 4096, "Incident Identifier: X\nProcess: a [1]\n"
                                           "Thread 0 Crashed:\n0   a  ");
    memset(buf + n, 'A', big);
    buf[n + big] = '\n';
    ok += hostile_case("10 MB line", buf, n + big + 1, NULL), nc++;
    /* 100k threads */
    n = (size_t)snprintf(buf, 4096, "Incident Identifier: X\nProcess: a [1]\n"
                                    "Crashed Thread: 0\n\n");
    for (int t = 0; t < 100000 && n + 64 < big; t++)
        n += (size_t)snprintf(buf + n, 64, "Thread %d:\n0   a  0x1000 0x1000 + 0\n\n", t);
    ok += hostile_case("100k threads", buf, n, NULL), nc++;
    /* a JSON body nested 100k deep */
    n = (size_t)snprintf(buf, 4096, "{\"bug_type\":\"309\"}\n{\"threads\":");
    memset(buf + n, '[', 100000), n += 100000;
    memset(buf + n, ']', 100000), n += 100000;
    buf[n++] = '}';
    ok += hostile_case("JSON nested 100k deep", buf, n, "line 2"), nc++;
    /* an imageOffset of a million digits */
    n = (size_t)snprintf(buf, 4096, "{\"bug_type\":\"309\"}\n{\"usedImages\":[{\"base\":4096}],"
                                    "\"threads\":[{\"frames\":[{\"imageIndex\":0,\"imageOffset\":");
    memset(buf + n, '7', 1000000), n += 1000000;
    n += (size_t)snprintf(buf + n, 64, "}]}]}");
    ok += hostile_case("a number of a million digits", buf, n,
                       "threads[0].frames[0].imageOffset"), nc++;
    static const struct {
        const char *what, *body, *where;
    } small[] = {
        {"2^64 as imageOffset",
         "{\"bug_type\":\"309\"}\n{\"usedImages\":[{\"base\":0}],\"threads\":[{\"frames\":"
         "[{\"imageIndex\":0,\"imageOffset\":18446744073709551616}]}]}",
         "threads[0].frames[0].imageOffset"},
        {"2^64+1 as base",
         "{\"bug_type\":\"309\"}\n{\"usedImages\":[{\"base\":18446744073709551617}],"
         "\"threads\":[]}",
         "usedImages[0].base"},
        {"NaN", "{\"bug_type\":\"309\"}\n{\"threads\":[{\"frames\":[{\"imageOffset\":NaN}]}]}",
         "line 2"},
        {"Infinity",
         "{\"bug_type\":\"309\"}\n{\"threads\":[{\"frames\":[{\"imageOffset\":-Infinity}]}]}",
         "line 2"},
        {"frame index past usedImages",
         "{\"bug_type\":\"309\"}\n{\"usedImages\":[{\"base\":4096,\"size\":16,\"uuid\":"
         "\"4c4c4490-5555-3144-a17c-64a339ede13a\",\"name\":\"a\"}],\"threads\":[{\"frames\":"
         "[{\"imageIndex\":1,\"imageOffset\":4}]}]}",
         "threads[0].frames[0].imageIndex"},
        {"negative offset",
         "{\"bug_type\":\"309\"}\n{\"usedImages\":[{\"base\":4096,\"size\":16,\"name\":\"a\"}],"
         "\"threads\":[{\"frames\":[{\"imageIndex\":0,\"imageOffset\":-4}]}]}",
         "threads[0].frames[0].imageOffset"},
        {"bad UTF-8 in a JSON body",
         "{\"bug_type\":\"309\"}\n{\"procName\":\"\xff\xfe\",\"usedImages\":[],\"threads\":[]}",
         "line 2"},
        {"a JSON header and nothing after it", "{\"bug_type\":\"309\"}\n", "line 2"},
        {"a sample tree line whose indentation goes back and forth",
         "Analysis of sampling a (pid 1) every 1 millisecond\nProcess:  a [1]\n\nCall graph:\n"
         "    9 Thread_1\n      9 start  (in a) + 1  [0x1001]\n"
         "          9 deep  (in a) + 1  [0x1002]\n        9 mid  (in a) + 1  [0x1003]\n"
         "     9 odd  (in a) + 1  [0x1004]\n\nBinary Images:\n"
         "       0x1000 -     0x1fff +a (0) <35827859-BEDE-311D-894E-1B19713925E3> /a\n",
         "line"},
        {"neither format", "\x7f" "ELF not a report", NULL},
    };
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++, nc++)
        ok += hostile_case(small[i].what, small[i].body, strlen(small[i].body), small[i].where);
    /* a call tree 100k levels deep (a spindump's heaviest stack, a line a
     * level): cut at CRASH_MAX_DEPTH with a warning at the first line cut */
    n = (size_t)snprintf(buf, 4096, "Data Source:      Stackshots\n\n"
                                    "Heaviest stack for the target process:\n");
    for (size_t d = 0; d < 100000; d++)
        n += (size_t)snprintf(buf + n, 64, "  1  f (App + %zu) [0x%zx]\n", d, 0x1000 + d);
    ok += hostile_case("a call tree 100k levels deep", buf, n, "line 4100"), nc++;
    free(buf);
    int status;
    json_t *j = request("GET", "/v1/crashes/groups", NULL, NULL, 0, &status, NULL);
    CHECK(status == 200, "server after the battery: %d", status);
    json_decref(j);
    printf("    %d/%d hostile reports refused or stored with warnings as they should\n", ok, nc);
}

/* Last test of this file: the crash server stops cleanly. */
TEST(e2e_crash_zz_shutdown_is_clean)
{
    cport();
    CHECK(lazy_stop(&csrv), "crash server exit status");
}

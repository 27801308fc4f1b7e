/* End-to-end: the MetricKit twins of fixtures/crashes (make_metrickit.py):
 * a payload whose crash diagnostic's per-thread tree (innermost frame at
 * the root) holds the bigapp twin's crashed thread, answered innermost
 * first and symbolicated exactly as metrickit.expected.tsv says; and a hang
 * diagnostic whose sample tree (outermost at the root, the image's load
 * address in offsetIntoBinaryTextSegment) comes back as a tree with the
 * counts and functions of metrickit-hang.expected.tsv. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_util.h"
#include "harness.h"
#include "test.h"

static lazy_server msrv = {"e2e-metrickit.db", NULL, {0}, false};

__attribute__((destructor)) static void stop_metrickit_server(void)
{
    lazy_stop(&msrv);
}

static json_t *post_file(const char *rel, const char *url, int *status)
{
    return http_post_fixture(lazy_port(&msrv), rel, url, status);
}

static void upload_images(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    static const char *const files[] = {
        "fixtures/bin/bigapp-arm64", "fixtures/bin/libfix-arm64.dylib",
        "fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64"};
    for (size_t i = 0; i < 3; i++) {
        int status;
        json_t *u = post_file(files[i], "/v1/images?name=bigapp-arm64", &status);
        CHECK(status == 201, "upload %s: %d", files[i], status);
        json_decref(u);
    }
}

static const char *sget(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static bool has_warning(json_t *j, const char *needle)
{
    json_t *w = json_object_get(j, "warnings");
    for (size_t i = 0; i < json_array_size(w); i++)
        if (strstr(sget(json_array_get(w, i), "message"), needle))
            return true;
    return false;
}

/* Frames of the crashed thread against metrickit.expected.tsv, exact. */
static void check_crashed(json_t *j, const char *what)
{
    json_t *th = json_object_get(j, "threads"), *fr = NULL;
    for (size_t t = 0; t < json_array_size(th); t++)
        if (json_is_true(json_object_get(json_array_get(th, t), "crashed")))
            fr = json_object_get(json_array_get(th, t), "frames");
    CHECK(fr != NULL, "%s: a crashed thread", what);
    tsv_row rows[16];
    char *buf = NULL;
    int n = load_tsv("fixtures/crashes/metrickit.expected.tsv", rows, 16, &buf);
    CHECK(n == 6, "metrickit.expected.tsv: %d rows", n);
    size_t k = 0;
    int exact = 0;
    for (int i = 0; i < n; i++) {
        json_t *outer;
        bool ok = twin_row_matches(fr, &k, &rows[i], TWIN_ADDRESS, &outer);
        CHECK(ok, "%s: frame %s (%s): %s", what, rows[i].f[0], rows[i].f[1],
              outer ? json_dumps(outer, JSON_COMPACT) : "(none)");
        exact += ok;
    }
    CHECK(k == json_array_size(fr), "%s: %zu output frames, expected %zu", what,
          json_array_size(fr), k);
    printf("    %s: %d/%d frames exact\n", what, exact, n);
    free(buf);
}

/* The hang tree against metrickit-hang.expected.tsv. */
static void check_hang(json_t *j, const char *what)
{
    CHECK(!strcmp(sget(j, "kind"), "hang"), "%s: kind %s", what, sget(j, "kind"));
    CHECK(has_warning(j, "load address as offsetIntoBinaryTextSegment"),
          "%s: the load-address rule warned", what);
    json_t *th = json_array_get(json_object_get(j, "threads"), 0);
    json_t *fr = json_object_get(th, "frames");
    CHECK(json_is_array(json_object_get(th, "tree")), "%s: a tree", what);
    tsv_row rows[16];
    char *buf = NULL;
    int n = load_tsv("fixtures/crashes/metrickit-hang.expected.tsv", rows, 16, &buf);
    CHECK(n == 6, "metrickit-hang.expected.tsv: %d rows", n);
    int k = 0, exact = 0;
    for (size_t i = 0; i < json_array_size(fr) && k < n; i++) {
        json_t *o = json_array_get(fr, i);
        if (json_is_true(json_object_get(o, "inlined")))
            continue;
        const tsv_row *r = &rows[k++];
        bool ok = json_integer_value(json_object_get(o, "depth")) == atoi(r->f[1]) &&
                  json_integer_value(json_object_get(o, "count")) == atoi(r->f[2]) &&
                  strtoull(sget(o, "address"), NULL, 16) == strtoull(r->f[3], NULL, 16) &&
                  (r->nf < 6 || !r->f[5][0] ? !strcmp(sget(o, "status"), "missing_image")
                                            : !strcmp(sget(o, "symbol"), r->f[5]));
        CHECK(ok, "%s frame %s: %s", what, r->f[0], json_dumps(o, JSON_COMPACT));
        exact += ok;
    }
    CHECK(k == n, "%s: %d frames of %d", what, k, n);
    printf("    %s: %d/%d frames exact\n", what, exact, n);
    free(buf);
}

static json_t *get_crash(json_int_t id, int *status)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)id);
    return http_json(lazy_port(&msrv), "GET", path, NULL, NULL, 0, status, NULL);
}

/* A payload of two diagnostics: two crashes stored, {"reports": [...]} in
 * payload order, each read back from the whole payload by its part. */
TEST(e2e_metrickit_twins_symbolicate_exactly)
{
    upload_images();
    int status;
    json_t *j = post_file("fixtures/crashes/bigapp-metrickit.json", "/v1/crashes", &status);
    json_t *reps = json_object_get(j, "reports");
    CHECK(status == 201 && json_array_size(reps) == 2, "payload: %d, %zu reports", status,
          json_array_size(reps));
    json_t *c0 = json_array_get(reps, 0), *c1 = json_array_get(reps, 1);
    CHECK(!strcmp(sget(c0, "format"), "metrickit") && !strcmp(sget(c0, "kind"), "crash"),
          "format metrickit, kind crash: %s %s", sget(c0, "format"), sget(c0, "kind"));
    CHECK(!strcmp(sget(c0, "app_build"), "42") && !strcmp(sget(c0, "architecture"), "arm64") &&
              json_integer_value(json_object_get(c1, "part")) == 1 &&
              json_integer_value(json_object_get(c1, "nparts")) == 2,
          "metadata and parts");
    json_int_t id0 = json_integer_value(json_object_get(c0, "id"));
    json_int_t id1 = json_integer_value(json_object_get(c1, "id"));
    CHECK(id0 > 0 && id1 > id0, "two crashes stored: %lld %lld", (long long)id0,
          (long long)id1);
    if (c0)
        check_crashed(c0, "crash diagnostic");
    if (c1)
        check_hang(c1, "hang diagnostic");
    json_decref(j);
    j = get_crash(id0, &status);
    CHECK(status == 200, "get part 0: %d", status);
    check_crashed(j, "crash diagnostic read again");
    json_decref(j);
    j = get_crash(id1, &status);
    CHECK(status == 200 && json_integer_value(json_object_get(j, "part")) == 1,
          "get part 1: %d", status);
    check_hang(j, "hang diagnostic read again");
    json_decref(j);

    /* the hang alone: one report, answered as any single report */
    j = post_file("fixtures/crashes/bigapp-metrickit-hang.json", "/v1/crashes?store=false",
                  &status);
    CHECK(status == 200 && json_is_null(json_object_get(j, "id")), "hang alone: %d", status);
    check_hang(j, "hang alone");
    json_decref(j);

    /* several diagnostics, not stored; the short answers */
    j = post_file("fixtures/crashes/bigapp-metrickit.json", "/v1/crashes?store=false", &status);
    CHECK(status == 200 && json_array_size(json_object_get(j, "reports")) == 2 &&
              json_is_null(json_object_get(json_array_get(json_object_get(j, "reports"), 1),
                                           "id")),
          "store=false: %d", status);
    json_decref(j);
}

/* An .xccrashpoint posted as a zip: each log stored as a report of its own,
 * one answer listing every id, every refusal and the members that are no
 * logs; each stored log reads back alone. */
TEST(e2e_metrickit_xccrashpoint_zip_stores_each_log)
{
    upload_images();
    int status;
    json_t *j = post_file("fixtures/crashes/bigapp.xccrashpoint.zip", "/v1/crashes", &status);
    json_t *reps = json_object_get(j, "reports"), *ref = json_object_get(j, "refused");
    json_t *skip = json_object_get(j, "skipped");
    CHECK(status == 201 && json_array_size(reps) == 2 && json_array_size(ref) == 1 &&
              json_array_size(skip) == 2,
          "zip: %d, %zu reports, %zu refused, %zu skipped", status, json_array_size(reps),
          json_array_size(ref), json_array_size(skip));
    json_t *r0 = json_array_get(ref, 0);
    CHECK(json_integer_value(json_object_get(r0, "status")) == 415 &&
              strstr(sget(r0, "member"), "cccc.crash"),
          "the log that is no report: refused 415");
    for (size_t i = 0; i < json_array_size(reps); i++) {
        json_t *a = json_object_get(json_array_get(reps, i), "answer");
        json_int_t id = json_integer_value(json_object_get(a, "id"));
        /* libfix.dylib, a library of the app's own, crashed in fix_mul */
        CHECK(id > 0 && !strcmp(sget(a, "signature"), "fix_mul | EXC_BAD_ACCESS (SIGSEGV)"),
              "log %zu: id %lld, %s", i,
              (long long)id, sget(a, "signature"));
        json_t *g = get_crash(id, &status);
        CHECK(status == 200 && !strcmp(sget(g, "format"), i ? "ips" : "crash"),
              "log %zu read back: %d %s", i, status, sget(g, "format"));
        json_decref(g);
    }
    json_decref(j);
    /* a zip with no log at all */
    j = post_file("fixtures/zip/no-macho.zip", "/v1/crashes?store=false", &status);
    CHECK(status == 415 || status == 422, "a zip without logs: %d", status);
    json_decref(j);
}

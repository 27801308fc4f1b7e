/* End-to-end: the real server over HTTP on a loopback port. */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../util/hex.h"
#include "fixture_util.h"
#include "harness.h"
#include "hostile.h"
#include "test.h"

#define LOAD 0x104a38000ull /* where the tests pretend __TEXT was loaded */

/* One server for the suite's e2e tests, on a fresh database. */
static lazy_server srv = {"e2e.db", NULL, {0}, false};

static int port(void)
{
    return lazy_port(&srv);
}

/* A run that filters out e2e_zz_shutdown_is_clean must not leave the server
 * behind (it would also hold the runner's stdout open). */
__attribute__((destructor)) static void stop_leftover_server(void)
{
    lazy_stop(&srv);
}

static json_t *body_json(const http_resp *r)
{
    json_error_t e;
    json_t *j = r->body ? json_loads(r->body, 0, &e) : NULL;
    CHECK(j, "response is not JSON: %.200s", r->body ? r->body : "(none)");
    return j;
}

static json_t *upload_file(const char *rel, const char *name, int *status)
{
    size_t len;
    uint8_t *buf = read_fixture(rel, &len);
    if (!buf)
        return NULL;
    char path[256];
    snprintf(path, sizeof path, "/v1/images?name=%s", name);
    http_resp r;
    bool ok = http_do(port(), "POST", path, NULL, buf, len, &r);
    free(buf);
    CHECK(ok, "upload %s: no answer", rel);
    *status = r.status;
    json_t *j = ok ? body_json(&r) : NULL;
    http_resp_free(&r);
    return j;
}

static json_t *post_json(const char *path, const char *body, int *status)
{
    http_resp r;
    bool ok = http_do(port(), "POST", path, "Content-Type: application/json\r\n", body,
                      strlen(body), &r);
    CHECK(ok, "POST %s: no answer", path);
    *status = r.status;
    json_t *j = ok ? body_json(&r) : NULL;
    http_resp_free(&r);
    return j;
}

/* Symbolicates every sampled address of an expected .sym.tsv through the
 * server, loaded at LOAD, and compares with llvm-symbolizer's answers:
 * "mangled" with --no-demangle's (.sym.tsv), "symbol" with its default
 * demangled names (.sym.demangled.tsv, same addresses). */
static void check_sampled(const char *uuid, const char *arch, const char *expect,
                          const char *image_name)
{
    static tsv_row rows[8192], drows[8192];
    char rel[256], *buf, *dbuf;
    snprintf(rel, sizeof rel, "fixtures/expected/%s.sym.tsv", expect);
    int n = load_tsv(rel, rows, 8192, &buf);
    if (n <= 0)
        return;
    snprintf(rel, sizeof rel, "fixtures/expected/%s.sym.demangled.tsv", expect);
    int nd = load_tsv(rel, drows, 8192, &dbuf);
    CHECK(nd == n, "%s: %d rows, .sym.tsv has %d", rel, nd, n);
    /* Base of __TEXT is 0x100000000 for executables, 0 for dylibs. */
    uint64_t text = strstr(expect, "dylib") ? 0 : 0x100000000ull;
    json_t *frames = json_array();
    for (int i = 0; i < n; i++) {
        uint64_t a;
        hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &a);
        char hex[32];
        snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)(a - text + LOAD));
        json_array_append_new(frames, json_pack("{s:s}", "address", hex));
    }
    char load[32];
    snprintf(load, sizeof load, "0x%llx", LOAD);
    json_t *req = json_pack("{s:[{s:s, s:s, s:s}], s:[{s:i, s:b, s:o}]}", "images", "uuid",
                            uuid, "arch", arch, "load_address", load, "threads", "id", 0,
                            "crashed", 1, "frames", frames);
    char *body = json_dumps(req, JSON_COMPACT);
    int status;
    json_t *resp = post_json("/v1/symbolicate", body, &status);
    CHECK(status == 200, "%s: status %d", expect, status);
    json_t *out = json_object_get(json_array_get(json_object_get(resp, "threads"), 0), "frames");
    CHECK((int)json_array_size(out) == n, "%s: %zu frames back for %d", expect,
          json_array_size(out), n);
    int agree = 0;
    for (int i = 0; i < n && i < (int)json_array_size(out); i++) {
        json_t *f = json_array_get(out, i);
        const char *sym = json_string_value(json_object_get(f, "symbol"));
        const char *mangled = json_string_value(json_object_get(f, "mangled"));
        const char *st = json_string_value(json_object_get(f, "status"));
        const char *sa = json_string_value(json_object_get(f, "symbol_address"));
        const char *vm = json_string_value(json_object_get(f, "vmaddr"));
        const char *img = json_string_value(json_object_get(f, "image"));
        json_int_t off = json_integer_value(json_object_get(f, "offset"));
        bool ok = st && strcmp(st, "symbolicated") == 0 && mangled &&
                  strcmp(mangled, rows[i].f[1]) == 0 && sym && i < nd &&
                  strcmp(sym, drows[i].f[1]) == 0 && sa && strcmp(sa, rows[i].f[2]) == 0 &&
                  vm && strcmp(vm, rows[i].f[0]) == 0 &&
                  off == (json_int_t)strtoll(rows[i].f[3], NULL, 10) && img &&
                  strcmp(img, image_name) == 0;
        agree += ok;
        CHECK(ok, "%s %s: want %s (%s)+%s, got %s %s (%s)+%lld", expect, rows[i].f[0],
              i < nd ? drows[i].f[1] : "?", rows[i].f[1], rows[i].f[3], st ? st : "?",
              sym ? sym : "?", mangled ? mangled : "?", (long long)off);
    }
    printf("    %s: %d/%d sampled addresses agree with llvm-symbolizer\n", expect, agree, n);
    json_decref(resp);
    json_decref(req);
    free(body);
    free(buf);
    free(dbuf);
}

TEST(e2e_upload_fat_then_symbolicate_like_llvm_symbolizer)
{
    int status;
    json_t *j = upload_file("fixtures/bin/bigapp-fat", "bigapp", &status);
    CHECK(status == 201, "first upload: %d", status);
    json_t *imgs = json_object_get(j, "images");
    CHECK(json_array_size(imgs) == 2, "two slices stored");
    for (size_t i = 0; i < json_array_size(imgs); i++) {
        json_t *im = json_array_get(imgs, i);
        CHECK(strcmp(json_string_value(json_object_get(im, "status")), "created") == 0,
              "created");
        CHECK(strcmp(json_string_value(json_object_get(im, "kind")), "executable") == 0,
              "kind");
        CHECK(json_integer_value(json_object_get(im, "symbols")) == 24, "24 symbols");
        CHECK(json_integer_value(json_object_get(im, "functions")) == 24, "24 functions");
        CHECK(json_is_false(json_object_get(im, "debug_info")), "debug_info false");
        CHECK(strcmp(json_string_value(json_object_get(im, "text_vmaddr")), "0x100000000") == 0,
              "text_vmaddr");
    }
    json_decref(j);
    /* Again: nothing new, 200 and "exists". */
    j = upload_file("fixtures/bin/bigapp-fat", "bigapp", &status);
    CHECK(status == 200, "re-upload: %d", status);
    imgs = json_object_get(j, "images");
    for (size_t i = 0; i < json_array_size(imgs); i++)
        CHECK(strcmp(json_string_value(json_object_get(json_array_get(imgs, i), "status")),
                     "exists") == 0,
              "exists");
    json_decref(j);
    check_sampled("4C4C4490-5555-3144-A17C-64A339EDE13A", "arm64", "bigapp-arm64", "bigapp");
    check_sampled("4c4c444955553144a163bc5324b3f7d1", "x86_64", "bigapp-x86_64", "bigapp");
}

TEST(e2e_multipart_dylibs_named_by_install_name)
{
    size_t la, lx;
    uint8_t *a = read_fixture("fixtures/bin/libfix-arm64.dylib", &la);
    uint8_t *x = read_fixture("fixtures/bin/libfix-x86_64.dylib", &lx);
    if (!a || !x)
        return;
    const char *bnd = "----symdtestboundary";
    size_t cap = la + lx + 1024, n = 0;
    char *body = malloc(cap);
    n += (size_t)sprintf(body + n, "--%s\r\nContent-Disposition: form-data; name=\"file\"; "
                         "filename=\"libfix-arm64.dylib\"\r\nContent-Type: "
                         "application/octet-stream\r\n\r\n", bnd);
    memcpy(body + n, a, la);
    n += la;
    n += (size_t)sprintf(body + n, "\r\n--%s\r\nContent-Disposition: form-data; "
                         "name=\"file\"; filename=\"libfix-x86_64.dylib\"\r\n\r\n", bnd);
    memcpy(body + n, x, lx);
    n += lx;
    n += (size_t)sprintf(body + n, "\r\n--%s--\r\n", bnd);
    char hdr[128];
    snprintf(hdr, sizeof hdr, "Content-Type: multipart/form-data; boundary=%s\r\n", bnd);
    http_resp r;
    CHECK(http_do(port(), "POST", "/v1/images", hdr, body, n, &r), "no answer");
    CHECK(r.status == 201, "multipart upload: %d %s", r.status, r.body);
    json_t *j = body_json(&r);
    json_t *imgs = json_object_get(j, "images");
    CHECK(json_array_size(imgs) == 2, "two files, two images");
    for (size_t i = 0; i < json_array_size(imgs); i++) {
        json_t *im = json_array_get(imgs, i);
        CHECK(strcmp(json_string_value(json_object_get(im, "name")), "libfix.dylib") == 0,
              "named by LC_ID_DYLIB");
        CHECK(strcmp(json_string_value(json_object_get(im, "kind")), "dylib") == 0, "kind");
    }
    json_decref(j);
    http_resp_free(&r);
    free(body);
    free(a);
    free(x);
    check_sampled("4C4C4448-5555-3144-A188-0C3B883681D9", "arm64", "libfix-arm64.dylib",
                  "libfix.dylib");
    check_sampled("4C4C4417-5555-3144-A181-03D8CACDAC00", "x86_64", "libfix-x86_64.dylib",
                  "libfix.dylib");
}

TEST(e2e_stripped_then_full_binary_updates)
{
    int status;
    json_t *j = upload_file("fixtures/bin/strippy-arm64-stripped", "strippy", &status);
    CHECK(status == 201, "stripped upload %d", status);
    json_t *im = json_array_get(json_object_get(j, "images"), 0);
    CHECK(json_integer_value(json_object_get(im, "symbols")) == 0, "no symbols");
    CHECK(json_integer_value(json_object_get(im, "functions")) == 7, "7 function starts");
    json_decref(j);

    static tsv_row rows[256];
    char *buf;
    int n = load_tsv("fixtures/expected/strippy-arm64-stripped.expect.tsv", rows, 256, &buf);
    json_t *frames = json_array();
    for (int i = 0; i < n; i++) {
        uint64_t a;
        hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &a);
        json_array_append_new(frames, json_integer((json_int_t)(a - 0x100000000ull + LOAD)));
    }
    json_t *req = json_pack("{s:[{s:s, s:I}], s:[{s:o}]}", "images", "uuid",
                            "4C4C443B-5555-3144-A102-B5D59B44CAC0", "load_address",
                            (json_int_t)LOAD, "threads", "frames", frames);
    char *body = json_dumps(req, JSON_COMPACT);
    json_t *resp = post_json("/v1/symbolicate", body, &status);
    json_t *out = json_object_get(json_array_get(json_object_get(resp, "threads"), 0), "frames");
    for (int i = 0; i < n; i++) {
        json_t *f = json_array_get(out, i);
        const char *st = json_string_value(json_object_get(f, "status"));
        const char *sa = json_string_value(json_object_get(f, "symbol_address"));
        CHECK(st && strcmp(st, "no_symbol") == 0 && sa && strcmp(sa, rows[i].f[3]) == 0 &&
                  !json_object_get(f, "symbol"),
              "stripped %s: %s at %s, want no_symbol at %s", rows[i].f[0], st ? st : "?",
              sa ? sa : "?", rows[i].f[3]);
    }
    json_decref(resp);

    /* The unstripped twin (same UUID) replaces the index: "updated". */
    j = upload_file("fixtures/bin/strippy-arm64", "strippy", &status);
    CHECK(status == 201, "full upload %d", status);
    im = json_array_get(json_object_get(j, "images"), 0);
    CHECK(strcmp(json_string_value(json_object_get(im, "status")), "updated") == 0, "updated");
    CHECK(json_integer_value(json_object_get(im, "symbols")) == 7, "7 symbols now");
    json_decref(j);
    resp = post_json("/v1/symbolicate", body, &status);
    out = json_object_get(json_array_get(json_object_get(resp, "threads"), 0), "frames");
    for (int i = 0; i < n; i++) {
        const char *st =
            json_string_value(json_object_get(json_array_get(out, i), "status"));
        CHECK(st && strcmp(st, "symbolicated") == 0, "after update %s: %s", rows[i].f[0],
              st ? st : "?");
    }
    json_decref(resp);
    json_decref(req);
    free(body);
    free(buf);
    check_sampled("4C4C443B-5555-3144-A102-B5D59B44CAC0", "arm64", "strippy-arm64", "strippy");
}

/* Statuses and image resolution rules of /v1/symbolicate. */
TEST(e2e_symbolicate_statuses_and_image_rules)
{
    int status;
    json_decref(upload_file("fixtures/bin/bigapp-arm64", "bigapp", &status));
    const char *body =
        "{\"images\":["
        " {\"uuid\":\"4c4c4490-5555-3144-a17c-64a339ede13a\",\"slide\":\"0x4a38000\"},"
        " {\"uuid\":\"00000000-1111-2222-3333-444444444444\",\"name\":\"Gone\","
        "  \"load_address\":\"0x200000000\"}],"
        " \"adjust\":\"auto\","
        " \"threads\":[{\"id\":7,\"name\":\"main\",\"crashed\":true,\"frames\":["
        "  {\"address\":\"0x104a38884\"},"
        "  {\"address\":4372793492, \"adjust\":\"none\"},"
        "  {\"address\":\"0x1000\"},"
        "  {\"address\":\"0x200000040\"},"
        "  {\"address\":\"0x104a38884\",\"image\":1},"
        "  {\"address\":\"0x104a38884\",\"image\":\"4C4C449055553144A17C64A339EDE13A\"},"
        "  {\"address\":\"0x104a3bff0\"},"
        "  \"0x104a38a04\"]}]}";
    json_t *j = post_json("/v1/symbolicate", body, &status);
    CHECK(status == 200, "status %d", status);
    json_t *th = json_array_get(json_object_get(j, "threads"), 0);
    CHECK(json_integer_value(json_object_get(th, "id")) == 7, "thread id echoed");
    CHECK(json_is_true(json_object_get(th, "crashed")), "crashed echoed");
    json_t *fr = json_object_get(th, "frames");
    static const char *want[] = {"symbolicated", "symbolicated", "unknown_image",
                                 "missing_image", "missing_image", "symbolicated",
                                 "no_symbol", "symbolicated"};
    CHECK(json_array_size(fr) == 8, "one frame out per frame in");
    for (size_t i = 0; i < 8 && i < json_array_size(fr); i++) {
        const char *st = json_string_value(json_object_get(json_array_get(fr, i), "status"));
        CHECK(st && strcmp(st, want[i]) == 0, "frame %zu: %s, want %s", i, st ? st : "?",
              want[i]);
    }
    json_t *f0 = json_array_get(fr, 0);
    CHECK(strcmp(json_string_value(json_object_get(f0, "symbol")), "interpret") == 0 &&
              strcmp(json_string_value(json_object_get(f0, "mangled")), "interpret") == 0 &&
              json_integer_value(json_object_get(f0, "offset")) == 4 &&
              strcmp(json_string_value(json_object_get(f0, "vmaddr")), "0x100000884") == 0 &&
              strcmp(json_string_value(json_object_get(f0, "uuid")),
                     "4C4C4490-5555-3144-A17C-64A339EDE13A") == 0 &&
              json_is_false(json_object_get(f0, "inlined")),
          "frame 0 fields");
    json_t *f1 = json_array_get(fr, 1); /* 4372793492 = 0x104a38894 */
    CHECK(json_is_string(json_object_get(f1, "address")) &&
              strcmp(json_string_value(json_object_get(f1, "address")), "0x104a38894") == 0 &&
              json_integer_value(json_object_get(f1, "offset")) == 20,
          "numbers come back as hex strings");
    json_t *f3 = json_array_get(fr, 3);
    CHECK(strcmp(json_string_value(json_object_get(f3, "image")), "Gone") == 0 &&
              strcmp(json_string_value(json_object_get(f3, "uuid")),
                     "00000000-1111-2222-3333-444444444444") == 0,
          "missing image named by the request");
    json_t *imgs = json_object_get(j, "images");
    CHECK(strcmp(json_string_value(json_object_get(json_array_get(imgs, 0), "status")),
                 "found") == 0 &&
              strcmp(json_string_value(json_object_get(json_array_get(imgs, 1), "status")),
                     "missing") == 0,
          "image statuses");
    CHECK(strcmp(json_string_value(json_object_get(json_array_get(imgs, 0), "load_address")),
                 "0x104a38000") == 0,
          "load address from slide");
    json_decref(j);

    /* The fat image without "arch" is ambiguous: a 400 that says so. */
    json_decref(upload_file("fixtures/bin/bigapp-fat", "bigapp", &status));
    j = post_json("/v1/symbolicate",
                  "{\"images\":[{\"uuid\":\"4C4C4490-5555-3144-A17C-64A339EDE13A\","
                  "\"load_address\":\"0x1000\"}],\"threads\":[{\"frames\":[\"0x1004\"]}]}",
                  &status);
    /* bigapp-arm64's UUID is only in one slice; the x86_64 one too. Both
     * are single-arch UUIDs, so this succeeds. */
    CHECK(status == 200, "single-slice UUID without arch: %d", status);
    json_decref(j);
}

TEST(e2e_ten_thousand_frames)
{
    int status;
    json_decref(upload_file("fixtures/bin/bigapp-arm64", "bigapp", &status));
    size_t cap = 10000 * 32 + 512, n = 0;
    char *body = malloc(cap);
    n += (size_t)sprintf(body, "{\"images\":[{\"uuid\":\"4C4C4490-5555-3144-A17C-64A339EDE13A\","
                               "\"load_address\":\"0x104a38000\"}],\"threads\":[{\"frames\":[");
    for (int i = 0; i < 10000; i++)
        n += (size_t)sprintf(body + n, "%s\"0x%llx\"", i ? "," : "",
                             0x104a38880ull + (unsigned)(i * 4) % 0x5e0);
    n += (size_t)sprintf(body + n, "]}]}");
    json_t *j = post_json("/v1/symbolicate", body, &status);
    CHECK(status == 200, "status %d", status);
    json_t *fr = json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames");
    CHECK(json_array_size(fr) == 10000, "10000 frames back, got %zu", json_array_size(fr));
    size_t sym = 0;
    for (size_t i = 0; i < json_array_size(fr); i++)
        sym += strcmp(json_string_value(json_object_get(json_array_get(fr, i), "status")),
                      "symbolicated") == 0;
    CHECK(sym == 10000, "%zu of 10000 symbolicated", sym);
    json_decref(j);
    free(body);
}

TEST(e2e_list_get_delete_images)
{
    int status;
    json_decref(upload_file("fixtures/bin/bigapp-fat", "bigapp", &status));
    json_decref(upload_file("fixtures/bin/strippy-arm64", "strippy", &status));
    http_resp r;
    /* Page through everything one at a time; newest first, no repeats. */
    char path[256] = "/v1/images?limit=1";
    int pages = 0;
    int64_t last_created = INT64_MAX;
    for (;;) {
        CHECK(http_do(port(), "GET", path, NULL, NULL, 0, &r) && r.status == 200, "list");
        json_t *j = body_json(&r);
        http_resp_free(&r);
        json_t *imgs = json_object_get(j, "images");
        if (json_array_size(imgs) == 1) {
            json_int_t c = json_integer_value(
                json_object_get(json_array_get(imgs, 0), "created_at"));
            CHECK(c <= last_created, "newest first");
            last_created = c;
            pages++;
        }
        const char *next = json_string_value(json_object_get(j, "next_cursor"));
        if (!next || pages > 50) {
            json_decref(j);
            break;
        }
        snprintf(path, sizeof path, "/v1/images?limit=1&cursor=%s", next);
        json_decref(j);
    }
    CHECK(pages >= 4, "paged through %d images", pages);

    CHECK(http_do(port(), "GET", "/v1/images?query=strip&arch=arm64", NULL, NULL, 0, &r), "q");
    json_t *j = body_json(&r);
    http_resp_free(&r);
    CHECK(json_array_size(json_object_get(j, "images")) == 1, "query by name");
    json_decref(j);
    CHECK(http_do(port(), "GET", "/v1/images?query=4C4C4449", NULL, NULL, 0, &r), "q");
    j = body_json(&r);
    http_resp_free(&r);
    CHECK(json_array_size(json_object_get(j, "images")) == 1, "query by UUID prefix");
    json_decref(j);

    CHECK(http_do(port(), "GET", "/v1/images/4c4c443b55553144a102b5d59b44cac0", NULL, NULL,
                  0, &r) && r.status == 200,
          "get by lowercase undashed uuid: %d", r.status);
    j = body_json(&r);
    http_resp_free(&r);
    CHECK(strcmp(json_string_value(json_object_get(j, "uuid")),
                 "4C4C443B-5555-3144-A102-B5D59B44CAC0") == 0 &&
              json_array_size(json_object_get(j, "images")) == 1,
          "one slice");
    json_decref(j);
    CHECK(http_do(port(), "DELETE", "/v1/images/4C4C443B-5555-3144-A102-B5D59B44CAC0", NULL,
                  NULL, 0, &r) && r.status == 200,
          "delete %d", r.status);
    http_resp_free(&r);
    CHECK(http_do(port(), "GET", "/v1/images/4C4C443B-5555-3144-A102-B5D59B44CAC0", NULL,
                  NULL, 0, &r) && r.status == 404 && strcmp(error_code(&r), "not_found") == 0,
          "gone: %d", r.status);
    http_resp_free(&r);
    CHECK(http_do(port(), "DELETE", "/v1/images/4C4C443B-5555-3144-A102-B5D59B44CAC0", NULL,
                  NULL, 0, &r) && r.status == 404,
          "delete again: %d", r.status);
    http_resp_free(&r);
    /* Deleted means no longer found by /v1/symbolicate either (cache too). */
    j = post_json("/v1/symbolicate",
                  "{\"images\":[{\"uuid\":\"4C4C443B-5555-3144-A102-B5D59B44CAC0\","
                  "\"load_address\":\"0x100000000\"}],\"threads\":[{\"frames\":"
                  "[\"0x100000390\"]}]}",
                  &status);
    CHECK(strcmp(json_string_value(json_object_get(
                     json_array_get(json_object_get(json_array_get(
                                        json_object_get(j, "threads"), 0), "frames"), 0),
                     "status")),
                 "missing_image") == 0,
          "deleted image is missing");
    json_decref(j);
}

/* The rows of the server's store (its SQLite file or PostgreSQL database). */
static void db_state(const char *db, long long *images, long long *blobs, char *integrity)
{
    *images = db_query_int(db, "SELECT count(*) FROM images");
    *blobs = db_query_int(db, "SELECT count(*) FROM image_data");
    db_integrity(db, integrity);
}

/* Every hostile request gets a 4xx with its code; the server keeps serving
 * and the store is unchanged. */
TEST(e2e_hostile_battery)
{
    int p = port(), status;
    json_decref(upload_file("fixtures/bin/bigapp-arm64", "bigapp", &status));
    long long img0, blob0, img1, blob1;
    char integ0[64], integ1[64];
    db_state(srv.proc.db, &img0, &blob0, integ0);
    size_t total = 0, fourxx = 0;
    http_resp r;

    hostile_case *c;
    size_t n = hostile_build(&c);
    for (size_t i = 0; i < n; i++) {
        bool ok = http_do(p, "POST", "/v1/images", NULL, c[i].buf, c[i].len, &r);
        total++;
        fourxx += ok && r.status >= 400 && r.status < 500;
        CHECK(ok && (unsigned)r.status == c[i].http && strcmp(error_code(&r), c[i].code) == 0,
              "%s: %d %s, want %u %s", c[i].name, r.status, ok ? error_code(&r) : "",
              c[i].http, c[i].code);
        http_resp_free(&r);
    }
    hostile_free(c, n);

    size_t len;
    uint8_t *fat = read_fixture("fixtures/bin/bigapp-fat", &len);
    for (size_t cut = 0; fat && cut < len; cut += 397) {
        bool ok = http_do(p, "POST", "/v1/images", NULL, fat, cut, &r);
        total++;
        bool want_code = cut == 0 ? strcmp(error_code(&r), "empty_body") == 0
                         : cut < 4 ? strcmp(error_code(&r), "not_macho") == 0
                                   : strcmp(error_code(&r), "malformed_macho") == 0;
        fourxx += ok && r.status >= 400 && r.status < 500;
        CHECK(ok && r.status >= 400 && r.status < 500 && want_code,
              "truncated at %zu: %d %s", cut, r.status, error_code(&r));
        http_resp_free(&r);
    }
    free(fat);

    static const struct {
        const char *method, *path, *body;
        int status;
        const char *code;
    } reqs[] = {
        {"POST", "/v1/symbolicate", "{\"threads\": [", 400, "invalid_request"},
        {"POST", "/v1/symbolicate", "", 400, "invalid_request"},
        {"POST", "/v1/symbolicate", "[1,2,3]", 400, "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"threads\": {}}", 400, "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"threads\": [{\"frames\": \"0x1\"}]}", 400,
         "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"threads\": [{\"frames\": [{\"address\": \"zz\"}]}]}",
         400, "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"threads\": [{\"frames\": [{\"address\": -5}]}]}", 400,
         "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"threads\": [{\"frames\": [{\"address\": 1.5}]}]}",
         400, "invalid_request"},
        {"POST", "/v1/symbolicate",
         "{\"threads\": [{\"frames\": [{\"address\": \"0x11112222333344445\"}]}]}", 400,
         "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"images\": [{\"uuid\": \"nope\", \"slide\": 0}], "
                                    "\"threads\": []}", 400, "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"images\": [{\"uuid\": \"4C4C4490-5555-3144-A17C-"
                                    "64A339EDE13A\"}], \"threads\": []}", 400,
         "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"images\": [{\"uuid\": 12, \"slide\": 0}], "
                                    "\"threads\": []}", 400, "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"adjust\": \"sideways\", \"threads\": []}", 400,
         "invalid_request"},
        {"POST", "/v1/symbolicate",
         "{\"threads\": [{\"frames\": [{\"address\": \"0x1\", \"image\": 3}]}]}", 400,
         "invalid_request"},
        {"POST", "/v1/symbolicate",
         "{\"threads\": [{\"frames\": [{\"address\": \"0x1\", \"image\": "
         "\"4C4C4490-5555-3144-A17C-64A339EDE13A\"}]}]}", 400, "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"threads\": [{\"crashed\": \"yes\", \"frames\": []}]}",
         400, "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"threads\": [], \"threads\": []}", 400,
         "invalid_request"},
        {"POST", "/v1/symbolicate", "{\"threads\": [\xff\xfe]}", 400, "invalid_request"},
        {"GET", "/v1/images/not-a-uuid", NULL, 400, "invalid_uuid"},
        {"GET", "/v1/images/00000000000000000000000000000000", NULL, 404, "not_found"},
        {"DELETE", "/v1/images/00000000000000000000000000000000", NULL, 404, "not_found"},
        {"GET", "/v1/images?limit=0", NULL, 400, "invalid_request"},
        {"GET", "/v1/images?limit=abc", NULL, 400, "invalid_request"},
        {"GET", "/v1/images?cursor=-1", NULL, 400, "invalid_request"},
        {"GET", "/v1/nothing", NULL, 404, "not_found"},
        {"PUT", "/v1/images", "x", 405, "method_not_allowed"},
        {"GET", "/v1/symbolicate", NULL, 405, "method_not_allowed"},
        {"POST", "/v1/images", "", 400, "empty_body"},
    };
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        const char *b = reqs[i].body;
        bool ok = http_do(p, reqs[i].method, reqs[i].path, NULL, b, b ? strlen(b) : 0, &r);
        total++;
        fourxx += ok && r.status >= 400 && r.status < 500;
        CHECK(ok && r.status == reqs[i].status && strcmp(error_code(&r), reqs[i].code) == 0,
              "%s %s %.40s: %d %s, want %d %s", reqs[i].method, reqs[i].path, b ? b : "",
              r.status, ok ? error_code(&r) : "", reqs[i].status, reqs[i].code);
        http_resp_free(&r);
    }

    CHECK(server_alive(&srv.proc), "server died");
    CHECK(http_do(p, "GET", "/healthz", NULL, NULL, 0, &r) && r.status == 200, "healthz");
    http_resp_free(&r);
    db_state(srv.proc.db, &img1, &blob1, integ1);
    CHECK(img0 == img1 && blob0 == blob1, "store changed: images %lld→%lld, blobs %lld→%lld",
          img0, img1, blob0, blob1);
    CHECK(strcmp(integ0, "ok") == 0 && strcmp(integ1, "ok") == 0, "integrity %s / %s",
          integ0, integ1);
    printf("    hostile battery: %zu/%zu answered 4xx; images %lld→%lld, blobs %lld→%lld, "
           "integrity_check %s\n", fourxx, total, img0, img1, blob0, blob1, integ1);
    CHECK(fourxx == total, "%zu of %zu not 4xx", total - fourxx, total);
}

/* With a token and small limits: writes need the token; oversize bodies get
 * 413 whether or not Content-Length announced them. */
TEST(e2e_auth_and_limits)
{
    char db[512];
    snprintf(db, sizeof db, "%s/auth.db", test_tmpdir());
    const char *extra[] = {"--upload-token", "s3cret", "--max-upload", "20000",
                           "--max-json", "2000", NULL};
    server_proc s;
    if (!server_start(&s, db, extra)) {
        CHECK(0, "server with token did not start");
        return;
    }
    size_t len;
    uint8_t *lib = read_fixture("fixtures/bin/libfix-x86_64.dylib", &len); /* 8.6 KB */
    uint8_t *big = NULL;
    size_t blen;
    big = read_fixture("fixtures/bin/bigapp-arm64", &blen); /* 54 KB */
    http_resp r;
    CHECK(http_do(s.port, "POST", "/v1/images", NULL, lib, len, &r) && r.status == 401 &&
              strcmp(error_code(&r), "unauthorized") == 0,
          "no token: %d", r.status);
    http_resp_free(&r);
    CHECK(http_do(s.port, "POST", "/v1/images", "Authorization: Bearer s3cre\r\n", lib, len,
                  &r) && r.status == 401,
          "wrong token: %d", r.status);
    http_resp_free(&r);
    CHECK(http_do(s.port, "DELETE", "/v1/images/4C4C4417-5555-3144-A181-03D8CACDAC00", NULL,
                  NULL, 0, &r) && r.status == 401,
          "delete without token: %d", r.status);
    http_resp_free(&r);
    CHECK(http_do(s.port, "POST", "/v1/images", "Authorization: Bearer s3cret\r\n", lib, len,
                  &r) && r.status == 201,
          "right token: %d %s", r.status, r.body);
    http_resp_free(&r);
    CHECK(http_do(s.port, "POST", "/v1/images", "Authorization: Bearer s3cret\r\n", big, blen,
                  &r) && r.status == 413 && strcmp(error_code(&r), "too_large") == 0,
          "too large: %d", r.status);
    http_resp_free(&r);
    /* Chunked: no Content-Length to reject early; the stream is cut at the
     * limit and the answer is still 413. */
    {
        size_t cap = blen + 8192, n = 0;
        char *req = malloc(cap);
        n += (size_t)sprintf(req, "POST /v1/images HTTP/1.1\r\nHost: x\r\nConnection: "
                                  "close\r\nAuthorization: Bearer s3cret\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n");
        for (size_t off = 0; off < blen; off += 4000) {
            size_t k = blen - off < 4000 ? blen - off : 4000;
            n += (size_t)sprintf(req + n, "%zx\r\n", k);
            memcpy(req + n, big + off, k);
            n += k;
            n += (size_t)sprintf(req + n, "\r\n");
        }
        n += (size_t)sprintf(req + n, "0\r\n\r\n");
        CHECK(http_raw(s.port, req, n, &r) && r.status == 413 &&
                  strcmp(error_code(&r), "too_large") == 0,
              "chunked too large: %d %s", r.status, r.body);
        http_resp_free(&r);
        free(req);
    }
    char *json = malloc(4000);
    memset(json, ' ', 3999);
    json[0] = '{';
    memcpy(json + 3980, "\"threads\":[]}", 13);
    json[3999] = 0;
    CHECK(http_do(s.port, "POST", "/v1/symbolicate", NULL, json, strlen(json), &r) &&
              r.status == 413,
          "json too large: %d", r.status);
    http_resp_free(&r);
    CHECK(http_do(s.port, "POST", "/v1/symbolicate", NULL, "{\"threads\":[]}", 14, &r) &&
              r.status == 200,
          "symbolicate needs no token: %d", r.status);
    http_resp_free(&r);
    CHECK(server_stop(&s), "clean exit on SIGTERM");
    free(json);
    free(lib);
    free(big);
}

/* Many clients at once: symbolication stays exact while uploads and deletes
 * of other images invalidate the cache around it. */
typedef struct {
    int port, rounds, bad;
    bool writer;
} client_arg;

static void *client(void *p)
{
    client_arg *a = p;
    size_t len;
    uint8_t *lib = a->writer ? read_fixture("fixtures/bin/libfix-arm64.dylib", &len) : NULL;
    const char *body =
        "{\"images\":[{\"uuid\":\"4C4C4490-5555-3144-A17C-64A339EDE13A\","
        "\"load_address\":\"0x104a38000\"}],\"threads\":[{\"frames\":"
        "[\"0x104a38884\",\"0x104a38a04\"]}]}";
    for (int i = 0; i < a->rounds; i++) {
        http_resp r;
        if (a->writer) {
            bool ok = http_do(a->port, "POST", "/v1/images", NULL, lib, len, &r);
            a->bad += !ok || (r.status != 201 && r.status != 200);
            http_resp_free(&r);
            ok = http_do(a->port, "DELETE", "/v1/images/4C4C4448-5555-3144-A188-0C3B883681D9",
                         NULL, NULL, 0, &r);
            a->bad += !ok || (r.status != 200 && r.status != 404);
            http_resp_free(&r);
            continue;
        }
        bool ok = http_do(a->port, "POST", "/v1/symbolicate", NULL, body, strlen(body), &r);
        a->bad += !ok || r.status != 200 || !strstr(r.body, "\"symbol\":\"interpret\"") ||
                  !strstr(r.body, "\"symbol\":\"compute_total\"");
        http_resp_free(&r);
    }
    free(lib);
    return NULL;
}

TEST(e2e_concurrent_clients)
{
    int status;
    json_decref(upload_file("fixtures/bin/bigapp-arm64", "bigapp", &status));
    enum { N = 8 };
    pthread_t t[N];
    client_arg a[N];
    for (int i = 0; i < N; i++) {
        a[i] = (client_arg){.port = port(), .rounds = 60, .writer = i == 0};
        pthread_create(&t[i], NULL, client, &a[i]);
    }
    int bad = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        bad += a[i].bad;
    }
    CHECK(bad == 0, "%d of %d concurrent requests went wrong", bad, N * 60);
    CHECK(server_alive(&srv.proc), "server alive");
}

/* Symbolicates every address of an expected .dsym.lines.tsv (adjust none,
 * image loaded at LOAD) and compares every inline level with
 * llvm-symbolizer's: function (raw name), file and line. */
static void check_lines(const char *uuid, const char *arch, const char *expect,
                        int *levels_checked)
{
    enum { MAX = 4000 };
    tsv_row *rows = calloc(MAX, sizeof *rows);
    char *tbuf = NULL;
    int n = load_tsv(expect, rows, MAX, &tbuf);
    CHECK(n > 0, "%s: no rows", expect);
    /* One request with every distinct address. */
    size_t cap = 64 + (size_t)n * 32;
    char *req = malloc(cap);
    size_t at = (size_t)snprintf(req, cap,
                                 "{\"adjust\":\"none\",\"images\":[{\"uuid\":\"%s\",\"arch\":"
                                 "\"%s\",\"load_address\":\"0x%llx\"}],\"threads\":[{"
                                 "\"frames\":[",
                                 uuid, arch, (unsigned long long)LOAD);
    int naddr = 0;
    for (int i = 0; i < n; i++) {
        if (i && strcmp(rows[i].f[0], rows[i - 1].f[0]) == 0)
            continue;
        uint64_t a;
        hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &a);
        at += (size_t)snprintf(req + at, cap - at, "%s\"0x%llx\"", naddr ? "," : "",
                               (unsigned long long)(a - 0x100000000ull + LOAD));
        naddr++;
    }
    snprintf(req + at, cap - at, "]}]}");
    int status;
    json_t *j = post_json("/v1/symbolicate", req, &status);
    CHECK(status == 200, "status %d", status);
    json_t *frames = json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames");
    CHECK(json_array_size(frames) == (size_t)n, "%s: %zu output frames, llvm-symbolizer %d",
          expect, json_array_size(frames), n);
    for (int i = 0; i < n && (size_t)i < json_array_size(frames); i++) {
        json_t *f = json_array_get(frames, (size_t)i);
        const tsv_row *r = &rows[i];
        bool last = i + 1 == n || strcmp(rows[i + 1].f[0], r->f[0]) != 0;
        const char *mangled = json_string_value(json_object_get(f, "mangled"));
        const char *file = json_string_value(json_object_get(f, "file"));
        json_int_t line = json_integer_value(json_object_get(f, "line"));
        CHECK(mangled && strcmp(mangled, r->f[2]) == 0, "%s %s level %s: %s, expected %s",
              expect, r->f[0], r->f[1], mangled ? mangled : "(none)", r->f[2]);
        if (r->f[3][0])
            CHECK(file && strcmp(file, r->f[3]) == 0 && line == atoi(r->f[4]),
                  "%s %s level %s: %s:%lld, expected %s:%s", expect, r->f[0], r->f[1],
                  file ? file : "(none)", (long long)line, r->f[3], r->f[4]);
        else
            CHECK(!file, "%s %s: a file where llvm-symbolizer has none", expect, r->f[0]);
        CHECK(json_is_true(json_object_get(f, "inlined")) == !last,
              "%s %s level %s: inlined flag", expect, r->f[0], r->f[1]);
        if (last)
            CHECK(json_object_get(f, "offset") != NULL, "%s %s: no offset", expect, r->f[0]);
        (*levels_checked)++;
    }
    json_decref(j);
    free(req);
    free(rows);
    free(tbuf);
}

static const char *upload_status(json_t *j, bool *debug_info)
{
    json_t *im = json_array_get(json_object_get(j, "images"), 0);
    *debug_info = json_is_true(json_object_get(im, "debug_info"));
    return json_string_value(json_object_get(im, "status"));
}

/* A dSYM merges with its binary in either order; then every sampled address
 * answers every inline level the way llvm-symbolizer does. */
TEST(e2e_dsym_merges_and_answers_inline_frames)
{
    int status, levels = 0;
    bool dbg;
    /* binary first, dSYM second */
    json_t *j = upload_file("fixtures/bin/bigapp-x86_64", "bigapp", &status);
    CHECK(status == 201 || status == 200, "binary: %d", status);
    json_decref(j);
    j = upload_file("fixtures/dsym/bigapp-x86_64.dSYM/Contents/Resources/DWARF/bigapp-x86_64",
                    "bigapp-x86_64", &status);
    const char *st = upload_status(j, &dbg);
    CHECK(status == 201 && st && strcmp(st, "updated") == 0 && dbg,
          "dSYM after binary: %d %s debug_info %d", status, st ? st : "?", dbg);
    json_t *im = json_array_get(json_object_get(j, "images"), 0);
    CHECK(strcmp(json_string_value(json_object_get(im, "kind")), "executable") == 0 &&
              strcmp(json_string_value(json_object_get(im, "name")), "bigapp") == 0,
          "dSYM changed the binary's kind or name");
    json_decref(j);
    j = upload_file("fixtures/dsym/bigapp-x86_64.dSYM/Contents/Resources/DWARF/bigapp-x86_64",
                    "x", &status);
    st = upload_status(j, &dbg);
    CHECK(st && strcmp(st, "exists") == 0, "dSYM again: %s", st ? st : "?");
    json_decref(j);
    check_lines("4C4C4449-5555-3144-A163-BC5324B3F7D1", "x86_64",
                "fixtures/expected/bigapp-x86_64.dsym.lines.tsv", &levels);

    /* dSYM first (DWARF 5), binary second */
    j = upload_file("fixtures/dsym/bigapp5-arm64.dSYM/Contents/Resources/DWARF/bigapp5-arm64",
                    "bigapp5-arm64", &status);
    st = upload_status(j, &dbg);
    CHECK(status == 201 && st && strcmp(st, "created") == 0 && dbg, "dSYM first: %s",
          st ? st : "?");
    json_decref(j);
    j = upload_file("fixtures/bin/bigapp5-arm64", "bigapp5", &status);
    st = upload_status(j, &dbg);
    im = json_array_get(json_object_get(j, "images"), 0);
    CHECK(st && strcmp(st, "updated") == 0 && dbg &&
              strcmp(json_string_value(json_object_get(im, "kind")), "executable") == 0 &&
              strcmp(json_string_value(json_object_get(im, "name")), "bigapp5") == 0,
          "binary after dSYM: %s", st ? st : "?");
    json_decref(j);
    char uuid[64] = "";
    {
        size_t len;
        char *u = (char *)read_fixture("fixtures/expected/bigapp5-arm64.uuid", &len);
        if (u) {
            sscanf(u, "UUID: %63s", uuid);
            free(u);
        }
    }
    check_lines(uuid, "arm64", "fixtures/expected/bigapp5-arm64.dsym.lines.tsv", &levels);
    /* The inline-heavy program: every instruction, both architectures. */
    static const char *const inl[][4] = {
        {"fixtures/bin/inliner-arm64", "fixtures/dsym/inliner-arm64.dSYM/Contents/Resources/DWARF/inliner-arm64",
         "4C4C44BD-5555-3144-A184-0CB376F51FA0", "arm64"},
        {"fixtures/bin/inliner-x86_64", "fixtures/dsym/inliner-x86_64.dSYM/Contents/Resources/DWARF/inliner-x86_64",
         "4C4C446F-5555-3144-A141-B12D5B95661C", "x86_64"},
    };
    for (size_t k = 0; k < 2; k++) {
        json_decref(upload_file(inl[k][0], "inliner", &status));
        json_decref(upload_file(inl[k][1], "inliner", &status));
        char expect[128];
        snprintf(expect, sizeof expect, "fixtures/expected/inliner-%s.dsym.lines.tsv", inl[k][3]);
        check_lines(inl[k][2], inl[k][3], expect, &levels);
    }
    CHECK(levels > 1700, "only %d levels compared", levels);

    /* Caller adjustment moves line lookups only: a return address with
     * "caller" answers like the address 1 byte (x86_64) before it with
     * "none", while symbol and offset describe the address as sent. */
    char req[512];
    snprintf(req, sizeof req,
             "{\"images\":[{\"uuid\":\"4C4C4449-5555-3144-A163-BC5324B3F7D1\",\"arch\":"
             "\"x86_64\",\"load_address\":\"0x%llx\"}],\"threads\":[{\"frames\":["
             "{\"address\":\"0x%llx\",\"adjust\":\"none\"},"
             "{\"address\":\"0x%llx\",\"adjust\":\"caller\"}]}]}",
             (unsigned long long)LOAD, (unsigned long long)(LOAD + 0x9ff),
             (unsigned long long)(LOAD + 0xa00));
    j = post_json("/v1/symbolicate", req, &status);
    json_t *fr = json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames");
    size_t nf = json_array_size(fr);
    CHECK(nf >= 2, "adjust: %zu frames", nf);
    if (nf >= 2) {
        json_t *a = json_array_get(fr, 0), *b = json_array_get(fr, nf / 2);
        CHECK(json_integer_value(json_object_get(a, "line")) ==
                  json_integer_value(json_object_get(b, "line")),
              "caller-adjusted line differs");
    }
    json_decref(j);
}

/* A dSYM with broken DWARF is refused as a whole: 400 malformed_debug_info,
 * nothing stored. */
TEST(e2e_hostile_dsym_refused)
{
    size_t len;
    uint8_t *buf = read_fixture(
        "fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64", &len);
    if (!buf)
        return;
    long long images0, blobs0, images1, blobs1;
    char integ[64];
    port();
    db_state(srv.proc.db, &images0, &blobs0, integ);
    /* The first unit's length now runs past .debug_info: find the section
     * by name in the load commands. */
    uint8_t *p = memmem(buf, len < 4096 ? len : 4096, "__debug_info", 12);
    CHECK(p != NULL, "no __debug_info header");
    if (p) {
        uint32_t off = ld_u32le(p + 48);
        buf[off] = 0xf0, buf[off + 1] = 0xff, buf[off + 2] = 0xff, buf[off + 3] = 0x7f;
    }
    http_resp r;
    CHECK(http_do(port(), "POST", "/v1/images", NULL, buf, len, &r), "no answer");
    CHECK(r.status == 400 && strcmp(error_code(&r), "malformed_debug_info") == 0,
          "broken dSYM: %d %s", r.status, error_code(&r));
    http_resp_free(&r);
    db_state(srv.proc.db, &images1, &blobs1, integ);
    CHECK(images0 == images1 && blobs0 == blobs1 && strcmp(integ, "ok") == 0,
          "store changed: %lld/%lld -> %lld/%lld (%s)", images0, blobs0, images1, blobs1,
          integ);
    free(buf);
}

/* Last e2e test: the server stops cleanly. */
TEST(e2e_zz_shutdown_is_clean)
{
    port();
    CHECK(server_alive(&srv.proc), "alive before shutdown");
    CHECK(lazy_stop(&srv), "exit status 0 after SIGTERM");
}

/* End-to-end: zip uploads over HTTP, on a server of their own (fresh
 * database, lowered zip limits). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/hex.h"
#include "fixture_util.h"
#include "harness.h"
#include "test.h"

#define LOAD 0x104a38000ull

static const char *const zip_flags[] = {"--max-unzipped", "4000000", "--max-zip-members",
                                        "100", NULL};
static lazy_server zsrv = {"e2e-zip.db", zip_flags, {0}, false};

static int zport(void)
{
    return lazy_port(&zsrv);
}

__attribute__((destructor)) static void stop_zip_server(void)
{
    lazy_stop(&zsrv);
}

/* One integer from the server's database (-1 on error). */
static long long db_int(const char *sql)
{
    return db_query_int(zsrv.proc.db, sql);
}

static long long image_count(void)
{
    return db_int("SELECT (SELECT count(*) FROM images) + (SELECT count(*) FROM image_data)");
}

/* A multipart body of fixture files: (rel, filename) pairs. */
static char *multipart(const char *const *parts, size_t nparts, size_t *len, char *hdr,
                       size_t hdrsize)
{
    const char *bnd = "----symdzipboundary";
    size_t cap = 4096, n = 0;
    char *body = malloc(cap);
    for (size_t i = 0; i < nparts; i++) {
        size_t flen;
        uint8_t *f = read_fixture(parts[2 * i], &flen);
        if (!f)
            continue;
        cap += flen + 512;
        body = realloc(body, cap);
        n += (size_t)sprintf(body + n,
                             "%s--%s\r\nContent-Disposition: form-data; name=\"file\"; "
                             "filename=\"%s\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                             i ? "\r\n" : "", bnd, parts[2 * i + 1]);
        memcpy(body + n, f, flen);
        n += flen;
        free(f);
    }
    n += (size_t)sprintf(body + n, "\r\n--%s--\r\n", bnd);
    snprintf(hdr, hdrsize, "Content-Type: multipart/form-data; boundary=%s\r\n", bnd);
    *len = n;
    return body;
}

static json_t *post_fixture(const char *rel, const char *path, const char *headers,
                            int *status)
{
    size_t len;
    uint8_t *buf = read_fixture(rel, &len);
    if (!buf)
        return NULL;
    http_resp r;
    bool ok = http_do(zport(), "POST", path, headers, buf, len, &r);
    free(buf);
    CHECK(ok, "POST %s: no answer", rel);
    *status = r.status;
    json_error_t e;
    json_t *j = ok && r.body ? json_loads(r.body, 0, &e) : NULL;
    CHECK(j, "%s: answer is not JSON: %.200s", rel, r.body ? r.body : "");
    http_resp_free(&r);
    return j;
}

/* The answer's images are exactly the slices of the listed .uuid files. */
static void check_images(const char *what, json_t *j, const char *const *uuid_files)
{
    fixture_slice want[32];
    int n = 0;
    for (; *uuid_files; uuid_files++) {
        char rel[256];
        snprintf(rel, sizeof rel, "fixtures/expected/%s", *uuid_files);
        int k = load_uuids(rel, want + n, 32 - n);
        n += k > 0 ? k : 0;
    }
    json_t *imgs = json_object_get(j, "images");
    CHECK(json_array_size(imgs) == (size_t)n, "%s: %zu images, %d expected", what,
          json_array_size(imgs), n);
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (size_t k = 0; k < json_array_size(imgs); k++) {
            json_t *im = json_array_get(imgs, k);
            const char *u = json_string_value(json_object_get(im, "uuid"));
            const char *a = json_string_value(json_object_get(im, "arch"));
            found |= u && a && strcmp(u, want[i].uuid) == 0 && strcmp(a, want[i].arch) == 0;
        }
        CHECK(found, "%s: %s (%s) missing", what, want[i].uuid, want[i].arch);
    }
}

static const char *image_name(json_t *j, const char *uuid, const char *arch)
{
    json_t *imgs = json_object_get(j, "images");
    for (size_t k = 0; k < json_array_size(imgs); k++) {
        json_t *im = json_array_get(imgs, k);
        if (strcmp(json_string_value(json_object_get(im, "uuid")), uuid) == 0 &&
            strcmp(json_string_value(json_object_get(im, "arch")), arch) == 0)
            return json_string_value(json_object_get(im, "name"));
    }
    return "";
}

/* Every sampled address of an expected .sym.tsv symbolicates as
 * llvm-symbolizer says, through an image that came out of a zip. */
static void check_symbols(const char *uuid, const char *arch, const char *expect)
{
    static tsv_row rows[256];
    char rel[256], *buf;
    snprintf(rel, sizeof rel, "fixtures/expected/%s.sym.tsv", expect);
    int n = load_tsv(rel, rows, 256, &buf);
    if (n <= 0)
        return;
    uint64_t text = strstr(expect, "dylib") ? 0 : 0x100000000ull;
    json_t *frames = json_array();
    for (int i = 0; i < n; i++) {
        uint64_t a;
        hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &a);
        char hex[32];
        snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)(a - text + LOAD));
        json_array_append_new(frames, json_string(hex));
    }
    json_t *req = json_pack("{s:[{s:s, s:s, s:I}], s:[{s:o}]}", "images", "uuid", uuid, "arch",
                            arch, "load_address", (json_int_t)LOAD, "threads", "frames",
                            frames);
    char *body = json_dumps(req, JSON_COMPACT);
    http_resp r;
    CHECK(http_do(zport(), "POST", "/v1/symbolicate", NULL, body, strlen(body), &r) &&
              r.status == 200,
          "symbolicate %s: %d", expect, r.status);
    json_error_t e;
    json_t *resp = json_loads(r.body ? r.body : "", 0, &e);
    json_t *out = json_object_get(json_array_get(json_object_get(resp, "threads"), 0), "frames");
    /* With a dSYM in the zip, inlined levels come first: compare each input
     * frame's outer (non-inlined) frame. */
    int agree = 0, i = 0;
    for (size_t k = 0; k < json_array_size(out) && i < n; k++) {
        json_t *f = json_array_get(out, k);
        if (json_is_true(json_object_get(f, "inlined")))
            continue;
        const char *sym = json_string_value(json_object_get(f, "mangled"));
        agree += sym && strcmp(sym, rows[i].f[1]) == 0;
        i++;
    }
    CHECK(agree == n, "%s: %d of %d addresses agree with llvm-symbolizer", expect, agree, n);
    json_decref(resp);
    http_resp_free(&r);
    json_decref(req);
    free(body);
    free(buf);
}

/* Each failing upload gets its status and code, and stores nothing. */
TEST(e2e_zip_hostile_uploads_store_nothing)
{
    int p = zport();
    static const struct {
        const char *zip;
        int status;
        const char *code, *msg;
    } cases[] = {
        {"bomb.zip", 413, "too_large", "more than 4000000 bytes"},
        {"bomb-bzip2.zip", 413, "too_large", "zeros.bin"},
        {"many.zip", 413, "too_large", "200 entries (limit 100)"},
        {"truncated.zip", 400, "malformed_zip", "truncated"},
        {"liar-small.zip", 400, "malformed_zip", "declares 1000 bytes"},
        {"liar-huge.zip", 400, "malformed_zip", "declares 4294967280 bytes"},
        {"encrypted.zip", 400, "malformed_zip", "encrypted"},
        {"method97.zip", 400, "malformed_zip", "compression method 97"},
        {"bad-crc.zip", 400, "malformed_zip", "CRC"},
        {"no-macho.zip", 415, "not_macho", "holds no Mach-O"},
        {"corrupt-macho.zip", 400, "malformed_macho", "zip member 'bad/bigapp'"},
    };
    /* Something stored first, so "unchanged" is not just "empty". */
    size_t len;
    uint8_t *lib = read_fixture("fixtures/bin/libfix-x86_64.dylib", &len);
    http_resp r;
    CHECK(lib && http_do(p, "POST", "/v1/images", NULL, lib, len, &r) && r.status == 201,
          "seed upload: %d", r.status);
    http_resp_free(&r);
    free(lib);
    long long before = image_count();
    CHECK(before == 3, "one image and its blobs (symbols, unwind) before, %lld rows", before);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "fixtures/zip/%s", cases[i].zip);
        uint8_t *buf = read_fixture(rel, &len);
        if (!buf)
            continue;
        bool ok = http_do(p, "POST", "/v1/images?name=x.zip",
                          "Content-Type: application/zip\r\n", buf, len, &r);
        free(buf);
        CHECK(ok && r.status == cases[i].status && strcmp(error_code(&r), cases[i].code) == 0,
              "%s: %d %s, want %d %s", cases[i].zip, r.status, ok ? error_code(&r) : "",
              cases[i].status, cases[i].code);
        CHECK(ok && r.body && strstr(r.body, cases[i].msg), "%s: message %.300s lacks '%s'",
              cases[i].zip, r.body ? r.body : "", cases[i].msg);
        http_resp_free(&r);
        CHECK(image_count() == before, "%s: rows %lld → %lld", cases[i].zip, before,
              image_count());
    }
    /* In a multipart upload: a good binary and a bad zip store neither. */
    static const char *const parts[][4] = {
        {"fixtures/bin/libfix-arm64.dylib", "libfix.dylib", "fixtures/zip/truncated.zip",
         "symbols.zip"},
        {"fixtures/bin/libfix-arm64.dylib", "libfix.dylib", "fixtures/zip/bomb.zip", "b"},
    };
    static const struct {
        int status;
        const char *code, *msg;
    } want[] = {{400, "malformed_zip", "file 2: malformed zip"},
                {413, "too_large", "file 2: zip "}};
    for (size_t i = 0; i < 2; i++) {
        char hdr[160];
        size_t n;
        char *body = multipart(parts[i], 2, &n, hdr, sizeof hdr);
        CHECK(http_do(p, "POST", "/v1/images", hdr, body, n, &r) &&
                  r.status == want[i].status && strcmp(error_code(&r), want[i].code) == 0 &&
                  strstr(r.body, want[i].msg),
              "multipart %zu: %d %.300s", i, r.status, r.body ? r.body : "");
        http_resp_free(&r);
        free(body);
        CHECK(image_count() == before, "multipart %zu: rows %lld → %lld", i, before,
              image_count());
    }
    CHECK(server_alive(&zsrv.proc), "server alive");
    CHECK(http_do(p, "GET", "/healthz", NULL, NULL, 0, &r) && r.status == 200, "healthz");
    http_resp_free(&r);
    char integ[64];
    db_integrity(zsrv.proc.db, integ);
    CHECK(strcmp(integ, "ok") == 0, "integrity_check: %s", integ);
}

TEST(e2e_zip_uploads_store_every_macho_member)
{
    zport();
    int status;
    /* bigapp5's binary before the zip that holds its dSYM. */
    json_t *j = post_fixture("fixtures/bin/bigapp5-arm64", "/v1/images?name=bigapp5", NULL,
                             &status);
    CHECK(status == 201, "bigapp5 binary: %d", status);
    json_decref(j);
    /* The nested bundle, raw, as application/zip. */
    j = post_fixture("fixtures/zip/dsym-nested.zip", "/v1/images",
                     "Content-Type: application/zip\r\n", &status);
    CHECK(status == 201, "nested: %d", status);
    check_images("nested", j,
                 (const char *const[]){"bigapp-x86_64.dSYM.uuid", "libfix-arm64.dylib.uuid",
                                       "bigapp5-arm64.dSYM.uuid", NULL});
    CHECK(strcmp(image_name(j, "4C4C4449-5555-3144-A163-BC5324B3F7D1", "x86_64"), "bigapp") == 0,
          "the DWARF file's name");
    json_t *imgs = json_object_get(j, "images");
    for (size_t k = 0; k < json_array_size(imgs); k++) {
        json_t *im = json_array_get(imgs, k);
        bool b5 = strcmp(json_string_value(json_object_get(im, "uuid")),
                         "4C4C44DD-5555-3144-A17D-28F7A86CD2F7") == 0;
        const char *st = json_string_value(json_object_get(im, "status"));
        /* bigapp5's dSYM merged into the binary uploaded before it. */
        CHECK(strcmp(st, b5 ? "updated" : "created") == 0, "nested status %s", st);
        if (b5)
            CHECK(json_is_true(json_object_get(im, "debug_info")) &&
                      strcmp(json_string_value(json_object_get(im, "kind")), "executable") == 0 &&
                      strcmp(json_string_value(json_object_get(im, "name")), "bigapp5") == 0,
                  "bigapp5 after its dSYM came in a zip");
    }
    json_decref(j);
    /* The dylib came out of a dSYM folder; its symbols are the real ones. */
    check_symbols("4C4C4448-5555-3144-A188-0C3B883681D9", "arm64", "libfix-arm64.dylib");
    check_symbols("4C4C4449-5555-3144-A163-BC5324B3F7D1", "x86_64", "bigapp-x86_64");

    /* Multipart: a zip part (named like anything) and a binary part. */
    static const char *const parts[] = {"fixtures/zip/dsym-single.zip", "symbols.bin",
                                        "fixtures/bin/libfix-x86_64.dylib",
                                        "libfix-x86_64.dylib"};
    char hdr[160];
    size_t n;
    char *body = multipart(parts, 2, &n, hdr, sizeof hdr);
    http_resp r;
    CHECK(http_do(zport(), "POST", "/v1/images", hdr, body, n, &r) && r.status == 201,
          "multipart: %d %.300s", r.status, r.body ? r.body : "");
    json_error_t e;
    j = json_loads(r.body ? r.body : "", 0, &e);
    check_images("multipart", j,
                 (const char *const[]){"bigapp-arm64.dSYM.uuid", "libfix-x86_64.dylib.uuid",
                                       NULL});
    json_decref(j);
    http_resp_free(&r);
    free(body);

    /* Binaries and dSYMs together, with a name hint the members ignore. */
    j = post_fixture("fixtures/zip/mixed.zip", "/v1/images?name=ignored", NULL, &status);
    CHECK(status == 201, "mixed: %d", status);
    check_images("mixed", j,
                 (const char *const[]){"bigapp-fat.uuid", "libfix-x86_64.dylib.uuid",
                                       "bigapp5-arm64.dSYM.uuid", NULL});
    json_decref(j);
    check_symbols("4C4C4490-5555-3144-A17C-64A339EDE13A", "arm64", "bigapp-fat.arm64");

    /* bigapp's dSYMs came first (nested zip: x86_64; multipart zip: arm64),
     * its fat binary after (mixed.zip): one image per slice, the binary's
     * kind and name, debug info kept, inlined frames answered. */
    http_resp g;
    CHECK(http_do(zport(), "GET", "/v1/images/4C4C4490-5555-3144-A17C-64A339EDE13A", NULL, NULL,
                  0, &g) && g.status == 200, "get bigapp arm64");
    j = json_loads(g.body ? g.body : "", 0, &e);
    json_t *im0 = json_array_get(json_object_get(j, "images"), 0);
    CHECK(json_array_size(json_object_get(j, "images")) == 1 &&
              json_is_true(json_object_get(im0, "debug_info")) &&
              strcmp(json_string_value(json_object_get(im0, "kind")), "executable") == 0,
          "bigapp arm64 after merge: %.300s", g.body ? g.body : "");
    json_decref(j);
    http_resp_free(&g);
    const char *inl = "{\"adjust\":\"none\",\"images\":[{\"uuid\":"
                      "\"4C4C44DD-5555-3144-A17D-28F7A86CD2F7\",\"slide\":\"0x0\"}],"
                      "\"threads\":[{\"frames\":[\"0x1000009f4\"]}]}";
    CHECK(http_do(zport(), "POST", "/v1/symbolicate", NULL, inl, strlen(inl), &g) &&
              g.status == 200 && g.body && strstr(g.body, "\"symbol\":\"mix\"") &&
              strstr(g.body, "\"inlined\":true") && strstr(g.body, "\"line\":20"),
          "inlined frame through the zipped dSYM: %.400s", g.body ? g.body : "");
    http_resp_free(&g);

    /* Escaping paths are names: image "x", nothing written anywhere. */
    j = post_fixture("fixtures/zip/paths.zip", "/v1/images", NULL, &status);
    CHECK(status == 201, "paths: %d", status);
    check_images("paths", j,
                 (const char *const[]){"strippy-arm64-stripped.uuid",
                                       "libfix-x86_64.dylib.uuid", NULL});
    CHECK(strcmp(image_name(j, "4C4C443B-5555-3144-A102-B5D59B44CAC0", "arm64"), "x") == 0,
          "named by the last path component");
    CHECK(access("/abs/path/libfix", F_OK) != 0, "nothing extracted");
    json_decref(j);
    /* Again: all there, 200. */
    j = post_fixture("fixtures/zip/paths.zip", "/v1/images", NULL, &status);
    CHECK(status == 200, "paths again: %d", status);
    json_decref(j);
}

/* Last test of this file: the zip server stops cleanly. */
TEST(e2e_zip_zz_shutdown_is_clean)
{
    zport();
    CHECK(lazy_stop(&zsrv), "exit status 0 after SIGTERM");
}

/* ---- a zip of logs that runs out of memory partway ---- */

#include <zip.h>

static const char *const tight_flags[] = {"--request-mem-factor", "1", "--request-mem-mb", "1",
                                          NULL};
static lazy_server tsrv = {"e2e-zip-tight.db", tight_flags, {0}, false};

__attribute__((destructor)) static void stop_tight_server(void)
{
    lazy_stop(&tsrv);
}

/* A zip (deflated) of n members (names[i], data[i], lens[i]) in that order;
 * NULL on a libzip failure. */
static uint8_t *zip_of(size_t n, const char *const *names, const uint8_t *const *data,
                       const size_t *lens, size_t *out_len)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, &ze);
    zip_t *z = src ? zip_open_from_source(src, ZIP_TRUNCATE, &ze) : NULL;
    if (!z) {
        if (src)
            zip_source_free(src);
        return NULL;
    }
    zip_source_keep(src);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        zip_source_t *m = zip_source_buffer(z, data[i], lens[i], 0);
        ok = m && zip_file_add(z, names[i], m, ZIP_FL_OVERWRITE) >= 0;
        if (!ok && m)
            zip_source_free(m);
    }
    uint8_t *buf = NULL;
    if (ok && zip_close(z) == 0) {
        zip_stat_t st;
        if (zip_source_stat(src, &st) == 0 && zip_source_open(src) == 0) {
            buf = malloc(st.size ? st.size : 1);
            if (buf && zip_source_read(src, buf, st.size) != (zip_int64_t)st.size) {
                free(buf);
                buf = NULL;
            }
            *out_len = st.size;
            zip_source_close(src);
        }
    } else {
        zip_discard(z);
    }
    zip_source_free(src);
    return buf;
}

/* An .xccrashpoint-like zip whose first log reads in the request's memory
 * budget and whose second (an .ips whose body is 4 MiB of empty thread
 * lists) does not: the first is stored and listed, the second refused 413
 * in the same 201 answer, saying it and the rest were not read; nothing
 * else is stored. */
TEST(e2e_zip_logs_past_the_memory_budget_partway)
{
    size_t clen;
    uint8_t *crash = read_fixture("fixtures/crashes/bigapp-twin.crash", &clen);
    CHECK(crash, "the .crash twin");
    if (!crash)
        return;
    static const char head[] =
        "{\"app_name\":\"bigapp\",\"bug_type\":\"309\",\"os_version\":\"iPhone OS 15.3 (19D50)\"}\n"
        "{\"threads\":[";
    size_t cap = sizeof head + (4u << 20) + 8, n = 0;
    uint8_t *ips = malloc(cap);
    CHECK(ips, "memory");
    if (!ips) {
        free(crash);
        return;
    }
    memcpy(ips, head, sizeof head - 1);
    n = sizeof head - 1;
    while (n + 4 < cap - 4) {
        memcpy(ips + n, "[],", 3);
        n += 3;
    }
    memcpy(ips + n, "[]]}\n", 5);
    n += 5;
    const char *const names[] = {"Big.xccrashpoint/Logs/1.crash", "Big.xccrashpoint/Logs/2.ips",
                                 "Big.xccrashpoint/Logs/3.crash"};
    const uint8_t *const data[] = {crash, ips, crash};
    const size_t lens[] = {clen, n, clen};
    size_t zlen = 0;
    uint8_t *zip = zip_of(3, names, data, lens, &zlen);
    CHECK(zip, "building the zip");
    int port = lazy_port(&tsrv), status;
    if (zip && port > 0) {
        long long before = db_query_int(tsrv.proc.db, "SELECT count(*) FROM crashes");
        json_t *j = http_json(port, "POST", "/v1/crashes", NULL, zip, zlen, &status, NULL);
        json_t *reps = json_object_get(j, "reports"), *ref = json_object_get(j, "refused");
        json_t *r0 = json_array_get(ref, 0);
        const char *msg = json_string_value(json_object_get(r0, "message"));
        CHECK(status == 201 && json_array_size(reps) == 1 && json_array_size(ref) == 1 &&
                  !strcmp(json_string_value(json_object_get(r0, "member")), names[1]) &&
                  json_integer_value(json_object_get(r0, "status")) == 413 && msg &&
                  strstr(msg, "members after it were not read"),
              "a zip past the budget at its 2nd log: %d, %zu reports, %zu refused: %s", status,
              json_array_size(reps), json_array_size(ref), msg ? msg : "");
        json_int_t id = json_integer_value(
            json_object_get(json_object_get(json_array_get(reps, 0), "answer"), "id"));
        CHECK(db_query_int(tsrv.proc.db, "SELECT count(*) FROM crashes") == before + 1 && id > 0,
              "only the listed report is stored (id %lld)", (long long)id);
        json_decref(j);
    }
    free(zip);
    free(ips);
    free(crash);
}

/* ---- a server whose temporary folder is not there ---- */

static const char *const notmp_flags[] = {NULL};
static lazy_server nsrv = {"e2e-zip-notmp.db", notmp_flags, {0}, false};

__attribute__((destructor)) static void stop_notmp_server(void)
{
    lazy_stop(&nsrv);
}

/* A zip member past 1 MiB is inflated into a temporary file: a server
 * that cannot make one answers 507 insufficient_storage naming the folder,
 * stores nothing, and still stores a zip whose members are all small. */
TEST(e2e_zip_member_without_a_temporary_folder_is_507)
{
    const char *was = getenv("TMPDIR");
    char *saved = was ? strdup(was) : NULL;
    setenv("TMPDIR", "/nonexistent/symd-e2e-tmp", 1); /* the server's, from its start */
    int port = lazy_port(&nsrv);
    if (saved)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(saved);
    size_t blen;
    uint8_t *bin = read_fixture("fixtures/bin/bigapp-arm64", &blen);
    size_t plen = 2u << 20;
    uint8_t *pad = calloc(1, plen); /* 2 MiB of zeros: deflates to a few KiB */
    if (!bin || !pad || port <= 0) {
        CHECK(bin && pad && port > 0, "fixture, memory, server");
        free(bin);
        free(pad);
        return;
    }
    const char *const names[] = {"App.dSYM/Contents/Resources/DWARF/bigapp-arm64",
                                 "App.dSYM/Contents/Resources/padding.bin"};
    const uint8_t *const data[] = {bin, pad};
    const size_t lens[] = {blen, plen};
    size_t zlen = 0;
    uint8_t *zip = zip_of(2, names, data, lens, &zlen);
    CHECK(zip, "building the zip");
    int status;
    json_t *j = zip ? http_json(port, "POST", "/v1/images", NULL, zip, zlen, &status, NULL) : NULL;
    const char *code = json_string_value(json_object_get(json_object_get(j, "error"), "code"));
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    CHECK(j && status == 507 && code && !strcmp(code, "insufficient_storage") && msg &&
              strstr(msg, "/nonexistent/symd-e2e-tmp") && strstr(msg, "padding.bin"),
          "%d %s: %s", j ? status : 0, code ? code : "", msg ? msg : "");
    json_decref(j);
    CHECK(db_query_int(nsrv.proc.db, "SELECT count(*) FROM images") == 0, "nothing stored");
    free(zip);
    zip = zip_of(1, names, data, lens, &zlen);
    j = zip ? http_json(port, "POST", "/v1/images", NULL, zip, zlen, &status, NULL) : NULL;
    CHECK(j && status == 201, "a zip of small members: %d", j ? status : 0);
    json_decref(j);
    free(zip);
    free(pad);
    free(bin);
}

/* End-to-end: minidumps over HTTP, on a server of their own. Each dump of
 * ../shared/minidumps posted raw and as Crashpad's uploader sends it (a
 * gzip'd multipart/form-data body, the dump in upload_file_minidump, the
 * annotations as form fields): stored byte for byte, read back alike,
 * rendered in Apple's layout with each frame's trust; crash_macos's frames
 * symbolicated once its Mach-O and dSYM are uploaded (names as
 * llvm-symbolizer gives them from the dSYM); hostile dumps answered 4xx or
 * stored with warnings, never half a row; `symd crash FILE.dmp` offline. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "harness.h"
#include "test.h"

/* --dedup off: the tests post one dump again after uploads to see it read
 * anew, and count it stored each time */
static const char *const extra[] = {"--max-json", "4194304", "--dedup", "off", NULL};
static lazy_server msrv = {"e2e-minidump.db", extra, {0}, false};

__attribute__((destructor)) static void stop_minidump_server(void)
{
    lazy_stop(&msrv);
}

static const char *const files[] = {
    "symbolic-crash_macos/crash_macos.dmp",
    "symbolicator-macos/macos.dmp",
    "rust-minidump-simple-crashpad/simple-crashpad.dmp",
    "symbolicator-macos-no-fp/macos-no-fp.dmp",
};
static const size_t nmodules[] = {43, 43, 40, 332};
static const size_t nthreads[] = {1, 1, 1, 3};

static const char *sget(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static uint8_t *load(const char *file, size_t *len)
{
    const char *dir = minidumps_dir();
    if (!dir)
        return NULL;
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    uint8_t *b = read_file(path, len);
    CHECK(b, "read %s", path);
    return b;
}

static long long original_len(json_int_t id)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT original_len FROM crash_originals WHERE id = %lld",
             (long long)id);
    return db_query_int(msrv.proc.db, sql);
}

static long long crash_rows(void)
{
    return db_query_int(msrv.proc.db, "SELECT count(*) FROM crashes");
}

/* The value of annotation name in an answer, NULL when absent. */
static const char *annotation(json_t *j, const char *name)
{
    json_t *a = json_object_get(j, "annotations");
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!strcmp(sget(json_array_get(a, i), "name"), name))
            return sget(json_array_get(a, i), "value");
    return NULL;
}

/* Reads a stored crash back (JSON and text) and checks it is the answer j
 * posted: the same signature, threads and annotations; the text in
 * Apple's layout, each frame with its trust. */
static void check_read_back(json_t *j, const char *what)
{
    int status;
    char url[96];
    json_int_t id = json_integer_value(json_object_get(j, "id"));
    snprintf(url, sizeof url, "/v1/crashes/%lld", (long long)id);
    json_t *g = http_json(lazy_port(&msrv), "GET", url, NULL, NULL, 0, &status, NULL);
    CHECK(status == 200 && !strcmp(sget(g, "format"), "minidump") &&
              !strcmp(sget(g, "signature"), sget(j, "signature")),
          "%s: GET back", what);
    static const char *const keys[] = {"threads", "annotations", "images", "exception"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        char *a = json_dumps(json_object_get(j, keys[i]), JSON_COMPACT | JSON_SORT_KEYS);
        char *b = json_dumps(json_object_get(g, keys[i]), JSON_COMPACT | JSON_SORT_KEYS);
        CHECK(a && b && !strcmp(a, b), "%s: %s differ when read back", what, keys[i]);
        free(a);
        free(b);
    }
    json_decref(g);
    char *text = NULL;
    snprintf(url, sizeof url, "/v1/crashes/%lld?format=text", (long long)id);
    http_json(lazy_port(&msrv), "GET", url, NULL, NULL, 0, &status, &text);
    CHECK(status == 200 && text && strstr(text, "\nCode Type:           ") &&
              strstr(text, "\nOS Version:          macOS ") &&
              strstr(text, "\nTriggered by Thread:  0\n") && strstr(text, "\nThread 0 Crashed:\n0   ") &&
              strstr(text, " [context]\n") && strstr(text, "\nBinary Images:\n"),
          "%s: text:\n%.2000s", what, text ? text : "");
    free(text);
}

TEST(e2e_minidump_raw_store_read_render)
{
    if (!minidumps_dir()) {
        test_skip("../shared/minidumps is absent");
        return;
    }
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
        size_t len;
        uint8_t *buf = load(files[k], &len);
        if (!buf)
            continue;
        int status;
        json_t *j = http_json(lazy_port(&msrv), "POST", "/v1/crashes",
                              "Content-Type: application/octet-stream\r\n", buf, len, &status,
                              NULL);
        CHECK(status == 201, "%s: POST answered %d", files[k], status);
        if (status != 201) {
            json_decref(j);
            free(buf);
            continue;
        }
        json_t *th = json_object_get(j, "threads");
        CHECK(!strcmp(sget(j, "format"), "minidump") && !strcmp(sget(j, "kind"), "minidump"),
              "%s: format %s kind %s", files[k], sget(j, "format"), sget(j, "kind"));
        CHECK(json_array_size(json_object_get(j, "images")) == nmodules[k] &&
                  json_array_size(th) == nthreads[k] &&
                  json_integer_value(json_object_get(j, "crashed_thread")) == 0,
              "%s: images, threads, crashed thread", files[k]);
        json_t *f0 = json_array_get(json_object_get(json_array_get(th, 0), "frames"), 0);
        CHECK(!strcmp(sget(f0, "trust"), "context"), "%s: frame 0 trust %s", files[k],
              sget(f0, "trust"));
        CHECK(json_array_size(json_object_get(j, "warnings")) == 0, "%s: warnings", files[k]);
        CHECK(*sget(j, "signature"), "%s: signature", files[k]);
        json_int_t id = json_integer_value(json_object_get(j, "id"));
        CHECK(original_len(id) == (long long)len, "%s: original of %zu bytes", files[k], len);
        check_read_back(j, files[k]);
        /* the listings' filters */
        static const char *const lists[] = {"/v1/crashes?format=minidump&limit=100",
                                            "/v1/crashes?kind=minidump&limit=100"};
        for (size_t l = 0; l < 2; l++) {
            json_t *ls = http_json(lazy_port(&msrv), "GET", lists[l], NULL, NULL, 0, &status,
                                   NULL);
            bool found = false;
            json_t *cs = json_object_get(ls, "crashes");
            for (size_t i = 0; i < json_array_size(cs); i++)
                found |= json_integer_value(json_object_get(json_array_get(cs, i), "id")) == id;
            CHECK(status == 200 && found, "%s: listed by %s", files[k], lists[l]);
            json_decref(ls);
        }
        json_decref(j);
        free(buf);
    }
}

/* A Crashpad upload body: form fields, then the dump. */
static char *multipart(const uint8_t *dump, size_t len, size_t *out_len)
{
    static const char *const fields[][2] = {
        {"prod", "symd-e2e"}, {"ver", "1.2.3"}, {"plat", "OS X"}, {"guid", "3f2c9a"},
    };
    size_t cap = len + 4096, o = 0;
    char *b = malloc(cap);
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        o += (size_t)snprintf(b + o, cap - o,
                              "--crashpad-boundary\r\nContent-Disposition: form-data; "
                              "name=\"%s\"\r\n\r\n%s\r\n",
                              fields[i][0], fields[i][1]);
    o += (size_t)snprintf(b + o, cap - o,
                          "--crashpad-boundary\r\nContent-Disposition: form-data; "
                          "name=\"upload_file_minidump\"; filename=\"dump.dmp\"\r\n"
                          "Content-Type: application/octet-stream\r\n\r\n");
    memcpy(b + o, dump, len);
    o += len;
    o += (size_t)snprintf(b + o, cap - o, "\r\n--crashpad-boundary--\r\n");
    *out_len = o;
    return b;
}

/* gzip of buf (deflate with gzip framing, as Crashpad's uploader writes). */
static uint8_t *gzip(const void *buf, size_t len, size_t *out_len)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&zs, len) + 64;
    uint8_t *out = malloc(cap);
    zs.next_in = (Bytef *)buf;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    int r = deflate(&zs, Z_FINISH);
    *out_len = cap - zs.avail_out;
    deflateEnd(&zs);
    if (r != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

#define MP_HEADERS "Content-Type: multipart/form-data; boundary=crashpad-boundary\r\n"

TEST(e2e_minidump_crashpad_upload)
{
    if (!minidumps_dir()) {
        test_skip("../shared/minidumps is absent");
        return;
    }
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
        size_t len, mlen, glen;
        uint8_t *buf = load(files[k], &len);
        if (!buf)
            continue;
        char *body = multipart(buf, len, &mlen);
        uint8_t *gz = gzip(body, mlen, &glen);
        CHECK(gz, "gzip");
        for (int zipped = 0; zipped < 2 && gz; zipped++) {
            int status;
            json_t *j = http_json(lazy_port(&msrv), "POST", "/v1/crashes",
                                  zipped ? MP_HEADERS "Content-Encoding: gzip\r\n" : MP_HEADERS,
                                  zipped ? (void *)gz : (void *)body, zipped ? glen : mlen,
                                  &status, NULL);
            /* Crashpad's uploader takes only 200: the short answer */
            CHECK(status == 200 && json_integer_value(json_object_get(j, "id")) > 0 &&
                      !json_object_get(j, "threads"),
                  "%s (%s): POST answered %d", files[k], zipped ? "gzip" : "plain", status);
            if (status != 200) {
                json_decref(j);
                continue;
            }
            /* the whole answer: the stored crash read back */
            char url[96];
            snprintf(url, sizeof url, "/v1/crashes/%lld",
                     (long long)json_integer_value(json_object_get(j, "id")));
            json_decref(j);
            j = http_json(lazy_port(&msrv), "GET", url, NULL, NULL, 0, &status, NULL);
            CHECK(!strcmp(sget(j, "format"), "minidump") &&
                      json_array_size(json_object_get(j, "images")) == nmodules[k],
                  "%s: read as a minidump", files[k]);
            const char *prod = annotation(j, "prod"), *ver = annotation(j, "ver");
            CHECK(prod && !strcmp(prod, "symd-e2e") && ver && !strcmp(ver, "1.2.3") &&
                      !strcmp(sget(j, "app_version"), "1.2.3"),
                  "%s: the form fields kept as annotations", files[k]);
            if (k == 2) { /* simple-crashpad's own annotation beside them */
                const char *hello = annotation(j, "hello");
                CHECK(hello && !strcmp(hello, "world"), "the dump's annotation kept");
            }
            CHECK(strstr(sget(j, "app_specific"), "prod: symd-e2e\n"),
                  "%s: annotations in app_specific", files[k]);
            /* stored: the body as sent (inflated), so a read gives the fields again */
            json_int_t id = json_integer_value(json_object_get(j, "id"));
            CHECK(original_len(id) == (long long)mlen, "%s: original of %zu bytes", files[k],
                  mlen);
            check_read_back(j, files[k]);
            json_decref(j);
        }
        free(gz);
        free(body);
        free(buf);
    }
}

/* crash_macos's Mach-O and dSYM uploaded: the crashed thread's context
 * frame is named as llvm-symbolizer names it from the dSYM. */
TEST(e2e_minidump_symbolicated)
{
    const char *dir = minidumps_dir();
    if (!dir) {
        test_skip("../shared/minidumps is absent");
        return;
    }
    static const char *const up[] = {
        "symbolic-crash_macos/crash_macos",
        "symbolic-crash_macos/crash_macos.dSYM/Contents/Resources/DWARF/crash_macos",
    };
    int status;
    for (size_t i = 0; i < 2; i++) {
        size_t len;
        uint8_t *b = load(up[i], &len);
        if (!b)
            return;
        json_t *u = http_json(lazy_port(&msrv), "POST", "/v1/images?name=crash_macos", NULL, b,
                              len, &status, NULL);
        CHECK(status == 201 || status == 200, "upload %s: %d", up[i], status);
        json_decref(u);
        free(b);
    }
    size_t len;
    uint8_t *buf = load(files[0], &len);
    if (!buf)
        return;
    json_t *j = http_json(lazy_port(&msrv), "POST", "/v1/crashes", NULL, buf, len, &status, NULL);
    CHECK(status == 201, "POST %d", status);
    json_t *f0 = json_array_get(
        json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames"), 0);
    uint64_t pc = strtoull(sget(f0, "address"), NULL, 16);
    /* the image's offset at the dSYM's address: __TEXT at 0x100000000 */
    uint64_t base = 0;
    json_t *im = json_array_get(json_object_get(j, "images"), 0);
    base = strtoull(sget(im, "load_address"), NULL, 16);
    char cmd[1200], want[512] = "";
    snprintf(cmd, sizeof cmd,
             "llvm-symbolizer-14 --no-inlines --obj='%s/%s' 0x%llx 2>/dev/null || "
             "/usr/lib/llvm-14/bin/llvm-symbolizer --no-inlines --obj='%s/%s' 0x%llx",
             dir, up[1], (unsigned long long)(0x100000000ull + pc - base), dir, up[1],
             (unsigned long long)(0x100000000ull + pc - base));
    FILE *p = popen(cmd, "r");
    if (p && fgets(want, sizeof want, p))
        want[strcspn(want, "\n")] = 0;
    if (p)
        pclose(p);
    CHECK(*want && strcmp(want, "??"), "llvm-symbolizer named nothing (%s)", cmd);
    CHECK(!strcmp(sget(f0, "status"), "symbolicated") && !strcmp(sget(f0, "symbol"), want),
          "frame 0: %s %s, llvm-symbolizer %s", sget(f0, "status"), sget(f0, "symbol"), want);
    CHECK(strstr(sget(f0, "file"), "crash_macos.cpp") && json_integer_value(json_object_get(f0, "line")) > 0,
          "frame 0 file and line");
    /* the callers, walked with the binary's unwind rows (CFI), named from
     * the dSYM as minidump_stackwalk names them with crash_macos.sym */
    json_t *fr = json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames");
    static const char *const callers[] = {"(anonymous namespace)::start()", "main"};
    for (size_t i = 1; i <= 2; i++) {
        json_t *f = json_array_get(fr, i);
        CHECK(!strcmp(sget(f, "trust"), "cfi") && !strcmp(sget(f, "symbol"), callers[i - 1]),
              "frame %zu: trust %s, %s (want cfi, %s)", i, sget(f, "trust"), sget(f, "symbol"),
              callers[i - 1]);
    }
    char *text = NULL;
    char url[96];
    snprintf(url, sizeof url, "/v1/crashes/%lld?format=text",
             (long long)json_integer_value(json_object_get(j, "id")));
    http_json(lazy_port(&msrv), "GET", url, NULL, NULL, 0, &status, &text);
    char line[700];
    snprintf(line, sizeof line, "0   crash_macos                   \t0x%016llx %s",
             (unsigned long long)pc, want);
    CHECK(text && strstr(text, line) && strstr(text, "(crash_macos.cpp:"),
          "text frame 0 '%s':\n%.1500s", line, text ? text : "");
    free(text);
    json_decref(j);
    free(buf);
}

static void le32w(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}

static uint32_t le32r(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Hostile dumps over HTTP (mutations of crash_macos.dmp): a directory past
 * the end is 422 and stores nothing; 2^32-1 threads declared and a 1 GB
 * stack are stored with warnings naming the stream; a gzip body inflating
 * past --max-json is 413, a broken one 400, another coding 415. */
TEST(e2e_minidump_hostile)
{
    size_t len;
    uint8_t *buf = minidumps_dir() ? load(files[0], &len) : NULL;
    if (!buf) {
        test_skip("../shared/minidumps is absent");
        return;
    }
    uint8_t *m = malloc(len);
    int status;
    lazy_port(&msrv);
    long long before = crash_rows();
    memcpy(m, buf, len);
    le32w(m + 12, (uint32_t)len + 100);
    json_t *j = http_json(lazy_port(&msrv), "POST", "/v1/crashes", NULL, m, len, &status, NULL);
    CHECK(status == 422, "directory past the end: %d", status);
    json_decref(j);
    CHECK(crash_rows() == before, "nothing stored");
    /* the thread list's count: 2^32-1 */
    uint32_t n = le32r(buf + 8), dir = le32r(buf + 12);
    uint32_t tl = 0;
    for (uint32_t i = 0; i < n; i++)
        if (le32r(buf + dir + 12 * i) == 3)
            tl = le32r(buf + dir + 12 * i + 8);
    memcpy(m, buf, len);
    le32w(m + tl, 0xffffffffu);
    j = http_json(lazy_port(&msrv), "POST", "/v1/crashes", NULL, m, len, &status, NULL);
    json_t *w = json_array_get(json_object_get(j, "warnings"), 0);
    CHECK(status == 201 && strstr(sget(w, "where"), "ThreadListStream") &&
              strstr(sget(w, "message"), "4294967295"),
          "2^32-1 threads: %d %s", status, sget(w, "message"));
    CHECK(json_array_size(json_object_get(j, "threads")) == 0 &&
              json_array_size(json_object_get(j, "images")) == 43,
          "no threads, every image");
    json_decref(j);
    /* thread 0's stack: 1 GB declared (Breakpad's list is padded: 8 bytes in) */
    memcpy(m, buf, len);
    le32w(m + tl + 8 + 32, 1u << 30);
    j = http_json(lazy_port(&msrv), "POST", "/v1/crashes", NULL, m, len, &status, NULL);
    w = json_array_get(json_object_get(j, "warnings"), 0);
    CHECK(status == 201 && strstr(sget(w, "message"), "1073741824"), "1 GB stack: %d %s", status,
          sget(w, "message"));
    json_decref(j);
    /* a gzip bomb: 8 MiB of zeros against --max-json 4 MiB */
    size_t zl = 8u << 20, glen;
    uint8_t *zeros = calloc(1, zl);
    memcpy(zeros, buf, len);
    uint8_t *gz = gzip(zeros, zl, &glen);
    before = crash_rows();
    j = http_json(lazy_port(&msrv), "POST", "/v1/crashes", "Content-Encoding: gzip\r\n", gz, glen,
                  &status, NULL);
    CHECK(status == 413, "gzip past --max-json: %d", status);
    json_decref(j);
    /* cut short, and broken */
    j = http_json(lazy_port(&msrv), "POST", "/v1/crashes", "Content-Encoding: gzip\r\n", gz,
                  glen / 2, &status, NULL);
    CHECK(status == 400, "gzip cut short: %d", status);
    json_decref(j);
    j = http_json(lazy_port(&msrv), "POST", "/v1/crashes", "Content-Encoding: gzip\r\n", buf, len,
                  &status, NULL);
    CHECK(status == 400, "not gzip: %d", status);
    json_decref(j);
    j = http_json(lazy_port(&msrv), "POST", "/v1/crashes", "Content-Encoding: br\r\n", buf, len,
                  &status, NULL);
    CHECK(status == 415, "br: %d", status);
    json_decref(j);
    CHECK(crash_rows() == before, "nothing stored");
    /* a multipart body without the dump's part */
    const char *nodump = "--b\r\nContent-Disposition: form-data; name=\"upload_file_minidump\"\r\n";
    j = http_json(lazy_port(&msrv), "POST", "/v1/crashes", NULL, nodump, strlen(nodump), &status,
                  NULL);
    CHECK(status == 415, "multipart whose dump part never starts: %d", status);
    json_decref(j);
    free(gz);
    free(zeros);
    free(m);
    free(buf);
}

/* `symd crash FILE.dmp`: offline, the walked threads in Apple's layout. */
TEST(e2e_minidump_cli)
{
    const char *dir = minidumps_dir();
    const char *bin = getenv("SYMD_BIN");
    if (!dir || !bin) {
        test_skip("../shared/minidumps or SYMD_BIN absent");
        return;
    }
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "'%s' crash --db '%s/cli-minidump.db' '%s/%s' 2>&1", bin,
             test_tmpdir(), dir, files[3]);
    FILE *p = popen(cmd, "r");
    char out[65536];
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    int rc = p ? pclose(p) : -1;
    CHECK(rc == 0 && strstr(out, "Code Type:           ARM-64 (Native)") &&
              strstr(out, "\nThread 0 Crashed:\n0   libsystem_platform.dylib") &&
              strstr(out, " [frame_pointer]\n") && strstr(out, "\nThread 2:\n") &&
              strstr(out, "crashed with ARM Thread State (64-bit)"),
          "symd crash: rc %d\n%.2000s", rc, out);
}

/* A server with a report token: Crashpad sets no header of its own, so the
 * token also goes as the password of Basic authentication (the upload
 * URL's user and password); a multipart upload's 401 offers Basic. */
TEST(e2e_minidump_report_token_as_basic_password)
{
    size_t len, mlen;
    uint8_t *buf = minidumps_dir() ? load(files[2], &len) : NULL;
    if (!buf) {
        test_skip("../shared/minidumps is absent");
        return;
    }
    /* one dump posted three ways, each to be stored */
    static const char *const tok[] = {"--report-token", "s3cret-report", "--dedup", "off", NULL};
    static lazy_server ts = {"e2e-minidump-token.db", tok, {0}, false};
    char *body = multipart(buf, len, &mlen);
    /* base64("crashpad:s3cret-report"), and a wrong password */
    static const char *const good = "Authorization: Basic Y3Jhc2hwYWQ6czNjcmV0LXJlcG9ydA==\r\n";
    static const char *const bad = "Authorization: Basic Y3Jhc2hwYWQ6d3Jvbmc=\r\n";
    char h[512];
    http_resp r;
    snprintf(h, sizeof h, MP_HEADERS "%s", bad);
    CHECK(http_do(lazy_port(&ts), "POST", "/v1/crashes", h, body, mlen, &r), "POST");
    CHECK(r.status == 401 && strstr(r.head, "WWW-Authenticate: Basic realm=\"symd\"") &&
              strstr(r.head, "WWW-Authenticate: Bearer"),
          "wrong password: %d\n%s", r.status, r.head ? r.head : "");
    http_resp_free(&r);
    snprintf(h, sizeof h, MP_HEADERS "%s", good);
    CHECK(http_do(lazy_port(&ts), "POST", "/v1/crashes", h, body, mlen, &r) && r.status == 200,
          "the token as Basic password: %d", r.status);
    http_resp_free(&r);
    /* Bearer as ever, on any body */
    CHECK(http_do(lazy_port(&ts), "POST", "/v1/crashes",
                  "Authorization: Bearer s3cret-report\r\n", buf, len, &r) && r.status == 201,
          "Bearer: %d", r.status);
    http_resp_free(&r);
    CHECK(http_do(lazy_port(&ts), "POST", "/v1/crashes", good, buf, len, &r) && r.status == 201,
          "raw dump, Basic: %d", r.status);
    CHECK(!strstr(r.head, "Basic realm"), "no Basic challenge on a 201");
    http_resp_free(&r);
    lazy_stop(&ts);
    free(body);
    free(buf);
}

/* ---- walking with a .sym's CFI; saying when the binary is needed ---------- */

static lazy_server symsrv = {"e2e-minidump-sym.db", extra, {0}, false};
static lazy_server dsymsrv = {"e2e-minidump-dsym.db", extra, {0}, false};

__attribute__((destructor)) static void stop_sym_servers(void)
{
    lazy_stop(&symsrv);
    lazy_stop(&dsymsrv);
}

#define STACKWALK "tests/oracle/node_modules/minidump/bin/linux-x64/minidump_stackwalk"

/* One frame of minidump_stackwalk's readable output. */
typedef struct {
    char module[128];
    uint64_t pc;
    char trust[32];
} oracle_frame;

/* The crashed thread of dmp walked by minidump_stackwalk with the symbol
 * folder syms: *n frames (at most max) with module, pc and how found. */
static void oracle_walk(const char *dmp, const char *syms, oracle_frame *of, size_t max,
                        size_t *n)
{
    char out[700], cmd[2400];
    *n = 0;
    snprintf(out, sizeof out, "%s/stackwalk-crashed.txt", test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "'%s' '%s' '%s' 2>/dev/null | sed -n '/^Thread .*(crashed)/,/^$/p' > '%s'",
             root_path(STACKWALK), dmp, syms, out);
    CHECK(system(cmd) == 0, "minidump_stackwalk ran");
    size_t len;
    char *o = (char *)read_file(out, &len);
    for (char *line = o ? strtok(o, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        unsigned idx;
        char rest[512];
        const char *pc = strstr(line, " pc = 0x");
        if (sscanf(line, " %u %511[^\n]", &idx, rest) == 2 && idx == *n && *n < max) {
            /* "module + 0xOFF" or "module!function [file : line + 0xN]" */
            size_t m = strcspn(rest, "! ");
            snprintf(of[*n].module, sizeof of[*n].module, "%.*s", (int)m, rest);
            of[*n].pc = 0;
            of[*n].trust[0] = 0;
            (*n)++;
        } else if (*n && pc) {
            of[*n - 1].pc = strtoull(pc + 6, NULL, 16);
        } else if (*n && strstr(line, "Found by: ")) {
            const char *f = strstr(line, "Found by: ") + 10;
            snprintf(of[*n - 1].trust, sizeof of[*n - 1].trust, "%s",
                     strstr(f, "instruction pointer") ? "context"
                     : strstr(f, "call frame info")   ? "cfi"
                     : strstr(f, "frame pointer")     ? "frame_pointer"
                     : strstr(f, "scanning")          ? "scan"
                                                      : f);
        }
    }
    free(o);
}

static int trust_rank(const char *t)
{
    static const char *const order[] = {"context", "cfi", "frame_pointer", "scan"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(t, order[i]))
            return i;
    return 4;
}

/* macos-no-fp.dmp (arm64, built without frame pointers) with only
 * sentry_example's Breakpad .sym uploaded (no binary): its STACK CFI is
 * what the walker unwinds sentry_example's frames with. The crashed
 * thread's frames equal minidump_stackwalk's over the same .sym (module,
 * pc, trust as good or better); past where it stops, the frames ours finds
 * by the .sym's CFI are listed. */
TEST(e2e_minidump_walks_with_sym_cfi)
{
    const char *dir = minidumps_dir();
    struct stat sb;
    if (!dir || stat(root_path(STACKWALK), &sb)) {
        test_skip(!dir ? "../shared/minidumps not found"
                       : "minidump_stackwalk not installed (scripts/deps.sh: npm ci in tests/oracle)");
        return;
    }
    /* the .sym keeps its source's name (.sym.original): uploads go by
     * content; minidump_stackwalk wants NAME/DEBUGID/NAME.sym */
    size_t len;
    uint8_t *sym = load("symbolicator-macos-no-fp/sentry_example.sym.original", &len);
    if (!sym)
        return;
    int status;
    json_t *u = http_json(lazy_port(&symsrv), "POST", "/v1/images?name=sentry_example", NULL, sym,
                          len, &status, NULL);
    CHECK(status == 201, "upload .sym: %d", status);
    json_decref(u);
    char syms[600], cmd[2000];
    snprintf(syms, sizeof syms, "%s/syms-no-fp", test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/sentry_example/73781EDEBF5B34EC81B2749A0F1FA5FD0' && cp '%s/%s' "
             "'%s/sentry_example/73781EDEBF5B34EC81B2749A0F1FA5FD0/sentry_example.sym'",
             syms, dir, "symbolicator-macos-no-fp/sentry_example.sym.original", syms);
    CHECK(system(cmd) == 0, "sym laid out");
    free(sym);

    uint8_t *buf = load(files[3], &len);
    if (!buf)
        return;
    json_t *j = http_json(lazy_port(&symsrv), "POST", "/v1/crashes", NULL, buf, len, &status, NULL);
    CHECK(status == 201, "POST %d", status);
    json_t *th = NULL, *threads = json_object_get(j, "threads");
    for (size_t i = 0; i < json_array_size(threads); i++)
        if (json_is_true(json_object_get(json_array_get(threads, i), "crashed")))
            th = json_array_get(threads, i);
    json_t *fr = json_object_get(th, "frames");
    CHECK(json_array_size(fr) > 0, "no crashed thread frames");
    json_t *images = json_object_get(j, "images");

    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, files[3]);
    oracle_frame of[64];
    size_t on;
    oracle_walk(path, syms, of, 64, &on);
    CHECK(on > 0, "the oracle walked no frame");
    size_t match = 0, by_sym_cfi = 0;
    bool scanned = false;
    for (size_t i = 0; i < json_array_size(fr); i++) {
        json_t *f = json_array_get(fr, i);
        uint64_t pc = strtoull(sget(f, "address"), NULL, 16);
        json_t *im = json_array_get(images, (size_t)json_integer_value(json_object_get(f, "image_index")));
        uint64_t base = strtoull(sget(im, "load_address"), NULL, 16);
        const char *mod = sget(f, "image");
        /* a caller found by CFI whose callee lies in sentry_example: the
         * .sym's rows did it (counted up to the first scanned frame: past
         * one, a callee may be a stack word that only looks like code) */
        json_t *callee = i ? json_array_get(fr, i - 1) : NULL;
        scanned |= !strcmp(sget(f, "trust"), "scan");
        if (callee && !scanned && !strcmp(sget(f, "trust"), "cfi") &&
            !strcmp(sget(callee, "image"), "sentry_example"))
            by_sym_cfi++;
        if (i < on) {
            bool same = !strcmp(mod, of[i].module) && pc == of[i].pc;
            bool trusted = trust_rank(sget(f, "trust")) <= trust_rank(of[i].trust);
            match += same && trusted;
            CHECK(same && trusted, "frame %zu: ours %s 0x%llx (%s), minidump_stackwalk %s 0x%llx (%s)",
                  i, mod, (unsigned long long)pc, sget(f, "trust"), of[i].module,
                  (unsigned long long)of[i].pc, of[i].trust);
        }
        /* past the oracle too: every frame in an image's code, none on an
         * image's header or a function's first byte (a scanned pointer) */
        const char *sym = sget(f, "symbol");
        CHECK(*mod && pc - base >= 32 && (i == 0 || !*sym || json_integer_value(json_object_get(f, "offset")) != 0 ||
                                          strcmp(sget(f, "trust"), "scan")),
              "frame %zu: %s+0x%llx %s (%s) is no return address", i, mod,
              (unsigned long long)(pc - base), sym, sget(f, "trust"));
        printf("    macos-no-fp frame %zu: ours %s+0x%llx %s (%s)%s", i, mod,
               (unsigned long long)(pc - base), sget(f, "symbol"), sget(f, "trust"),
               i < on ? "" : "  (past the oracle)\n");
        if (i < on)
            printf(", minidump_stackwalk %s pc 0x%llx (%s)\n", of[i].module,
                   (unsigned long long)of[i].pc, of[i].trust);
    }
    CHECK(json_array_size(fr) >= on, "ours %zu frames, the oracle %zu", json_array_size(fr), on);
    CHECK(by_sym_cfi > 0, "no caller of a sentry_example frame was found by the .sym's CFI");
    printf("    macos-no-fp.dmp with sentry_example.sym: %zu of %zu minidump_stackwalk frames "
           "match; ours %zu frames, %zu found by the .sym's STACK CFI before any scan\n",
           match, on, json_array_size(fr), by_sym_cfi);
    /* the image has rows: nothing to say about unwinding */
    for (size_t i = 0; i < json_array_size(images); i++)
        if (!strcmp(sget(json_array_get(images, i), "name"), "sentry_example"))
            CHECK(!json_object_get(json_array_get(images, i), "unwind"),
                  "sentry_example: unwind \"%s\"", sget(json_array_get(images, i), "unwind"));
    json_decref(j);
    free(buf);
}

/* crash_macos.dmp with only crash_macos's dSYM uploaded: a dSYM holds no
 * unwind tables, so the answer says on the image that the binary is
 * needed (a key and value docs/openapi.yaml documents); once the binary is
 * uploaded too, it says nothing and the callers are found by CFI. */
TEST(e2e_minidump_says_binary_needed)
{
    const char *dir = minidumps_dir();
    if (!dir) {
        test_skip("../shared/minidumps is absent");
        return;
    }
    static const char *const up[] = {
        "symbolic-crash_macos/crash_macos.dSYM/Contents/Resources/DWARF/crash_macos",
        "symbolic-crash_macos/crash_macos",
    };
    size_t dlen;
    uint8_t *dump = load(files[0], &dlen);
    size_t doclen;
    char *doc = (char *)read_fixture("docs/openapi.yaml", &doclen);
    for (size_t step = 0; step < 2 && dump; step++) {
        size_t len;
        int status;
        uint8_t *b = load(up[step], &len);
        if (!b)
            break;
        json_t *u = http_json(lazy_port(&dsymsrv), "POST", "/v1/images?name=crash_macos", NULL, b,
                              len, &status, NULL);
        CHECK(status == 201 || status == 200, "upload %s: %d", up[step], status);
        json_decref(u);
        free(b);
        json_t *j = http_json(lazy_port(&dsymsrv), "POST", "/v1/crashes", NULL, dump, dlen,
                              &status, NULL);
        CHECK(status == 201, "POST %d", status);
        json_t *images = json_object_get(j, "images"), *im = NULL;
        size_t noted = 0;
        for (size_t i = 0; i < json_array_size(images); i++) {
            json_t *x = json_array_get(images, i);
            noted += json_object_get(x, "unwind") != NULL;
            if (!strcmp(sget(x, "name"), "crash_macos"))
                im = x;
        }
        json_t *f1 = json_array_get(
            json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames"), 1);
        if (step == 0) {
            CHECK(im && !strcmp(sget(im, "unwind"), "binary needed for unwinding") && noted == 1,
                  "dSYM only: crash_macos unwind \"%s\", %zu images noted", sget(im, "unwind"),
                  noted);
            CHECK(doc && strstr(doc, "\n              unwind:") &&
                      strstr(doc, "binary needed for unwinding"),
                  "the image's unwind key and value are not in docs/openapi.yaml");
            CHECK(strcmp(sget(f1, "trust"), "cfi") != 0, "frame 1 found by CFI without rows");
        } else {
            CHECK(im && !json_object_get(im, "unwind") && noted == 0,
                  "with the binary: unwind \"%s\", %zu images noted", sget(im, "unwind"), noted);
            CHECK(!strcmp(sget(f1, "trust"), "cfi"), "frame 1: trust %s", sget(f1, "trust"));
        }
        /* the text answer says it too, before the Binary Images */
        char *text = NULL, url[96];
        snprintf(url, sizeof url, "/v1/crashes/%lld?format=text",
                 (long long)json_integer_value(json_object_get(j, "id")));
        int ts;
        http_json(lazy_port(&dsymsrv), "GET", url, NULL, NULL, 0, &ts, &text);
        const char *note = text ? strstr(text, "\nUnwinding:\n  crash_macos <3f58bc3deabe3361b5fb52a676298598>: "
                                               "binary needed for unwinding\n") : NULL;
        CHECK(ts == 200 && text && (step == 0 ? note && note < strstr(text, "\nBinary Images:\n")
                                              : !strstr(text, "\nUnwinding:\n")),
              "step %zu: text note:\n%.3000s", step, text ? text : "");
        free(text);
        printf("    crash_macos.dmp, %s: image unwind %s, frame 1 %s (%s)\n",
               step ? "dSYM + binary" : "dSYM only",
               json_object_get(im, "unwind") ? sget(im, "unwind") : "(absent)",
               sget(f1, "symbol"), sget(f1, "trust"));
        json_decref(j);
    }
    free(doc);
    free(dump);
}

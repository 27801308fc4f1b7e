/* End-to-end: uploads in parts (issue 22) against the real server, on
 * SQLite or (SYMD_TEST_PG) PostgreSQL: which images the server lacks
 * (POST /v1/images/check), chunks checked against their SHA-256, a real
 * dSYM zip assembled from chunks stored exactly as its plain POST stores it,
 * resumed uploads, the hostile cases (a chunk whose bytes lie, unknown
 * chunks, a chunk flood past the budget, an assembled zip bomb), the 202 of
 * a slow assembly, chunk expiry, (SQLite) the chunk spool's files, a
 * damaged one and bodies written there as they come, and (PostgreSQL) chunks sent to one node assembled on
 * another. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../store/store.h"
#include "../util/hex.h"
#include "../util/sha256.h"
#include "harness.h"
#include "test.h"

#define AUTH "Authorization: Bearer up-tok\r\n"
#define CHUNK_SIZE 65536

/* The shared server: an upload token, small chunks, the zip limits of
 * test_e2e_zip.c, a budget of 1 MiB. */
static const char *const chunk_flags[] = {"--upload-token", "up-tok", "--chunk-size", "65536",
                                          "--chunk-budget", "1048576", "--max-unzipped",
                                          "4000000", "--max-upload", "3000000", NULL};
static lazy_server csrv = {"e2e-chunks.db", chunk_flags, {0}, false};

static int cport(void)
{
    return lazy_port(&csrv);
}

__attribute__((destructor)) static void stop_chunk_server(void)
{
    lazy_stop(&csrv);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- requests ---- */

static json_t *req(int port, const char *method, const char *path, const void *body, size_t len,
                   int *status)
{
    http_resp r;
    bool ok = http_do(port, method, path, AUTH, body, len, &r);
    *status = ok ? r.status : 0;
    json_t *j = ok && r.body && r.len ? json_loads(r.body, 0, NULL) : NULL;
    http_resp_free(&r);
    return j;
}

static json_t *req_json(int port, const char *method, const char *path, json_t *doc,
                        int *status)
{
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    json_t *j = req(port, method, path, s, s ? strlen(s) : 0, status);
    free(s);
    return j;
}

/* A file cut into pieces of at most piece bytes, with their hashes. */
typedef struct {
    uint8_t *data;
    size_t len, n, piece;
    char (*hex)[65];
    char whole[65];
} pieces;

static bool pieces_of(const uint8_t *data, size_t len, size_t piece, pieces *p)
{
    memset(p, 0, sizeof *p);
    p->data = malloc(len ? len : 1);
    if (!p->data)
        return false;
    memcpy(p->data, data, len);
    p->len = len;
    p->piece = piece;
    p->n = (len + piece - 1) / piece;
    p->hex = calloc(p->n ? p->n : 1, sizeof *p->hex);
    for (size_t i = 0; i < p->n; i++) {
        uint8_t d[32];
        size_t m = len - i * piece < piece ? len - i * piece : piece;
        sha256(data + i * piece, m, d);
        sha256_hex(d, p->hex[i]);
    }
    uint8_t d[32];
    sha256(data, len, d);
    sha256_hex(d, p->whole);
    return true;
}

static bool pieces_of_fixture(const char *rel, size_t piece, pieces *p)
{
    size_t len;
    uint8_t *buf = read_fixture(rel, &len);
    if (!buf)
        return false;
    bool ok = pieces_of(buf, len, piece, p);
    free(buf);
    return ok;
}

static void pieces_free(pieces *p)
{
    free(p->data);
    free(p->hex);
}

/* POST /v1/chunks/{hex} with piece i's bytes (under another name when hex
 * is given); the status. */
static int send_piece(int port, const pieces *p, size_t i, const char *hex)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/chunks/%s", hex ? hex : p->hex[i]);
    size_t m = p->len - i * p->piece < p->piece ? p->len - i * p->piece : p->piece;
    int st;
    json_t *j = req(port, "POST", path, p->data + i * p->piece, m, &st);
    json_decref(j);
    return st;
}

static json_t *hex_array(const pieces *p)
{
    json_t *a = json_array();
    for (size_t i = 0; i < p->n; i++)
        json_array_append_new(a, json_string(p->hex[i]));
    return a;
}

/* POST /v1/images/assemble of p under name (query: e.g. "?wait=0"). */
static json_t *assemble(int port, const pieces *p, const char *name, const char *query,
                        int *status)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/images/assemble%s", query ? query : "");
    return req_json(port, "POST", path,
                    json_pack("{s:s, s:I, s:s, s:o}", "name", name, "size", (json_int_t)p->len,
                              "sha256", p->whole, "chunks", hex_array(p)),
                    status);
}

/* The hashes POST /v1/chunks/missing answers for p. */
static json_t *missing_of(int port, const pieces *p)
{
    int st;
    json_t *j = req_json(port, "POST", "/v1/chunks/missing", json_pack("{s:o}", "chunks",
                                                                       hex_array(p)),
                         &st);
    CHECK(st == 200, "chunks/missing: %d", st);
    json_t *m = json_incref(json_object_get(j, "missing"));
    json_decref(j);
    return m;
}

/* The answer's images with their times (which differ run to run) removed. */
static json_t *timeless(json_t *answer)
{
    json_t *imgs = json_deep_copy(json_object_get(answer, "images"));
    size_t i;
    json_t *o;
    json_array_foreach(imgs, i, o)
    {
        json_object_del(o, "created_at");
        json_object_del(o, "updated_at");
    }
    return imgs;
}

/* n bytes no two 64 KiB pieces of which are alike (an LCG's high bytes). */
static uint8_t *distinct_bytes(size_t n)
{
    uint8_t *b = malloc(n);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; b && i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        b[i] = (uint8_t)(x >> 56);
    }
    return b;
}

static long long chunks_held(const server_proc *s)
{
    return db_query_int(s->db, "SELECT count(*) FROM chunks");
}

/* The chunks held once the deletion of assembled ones (which follows the
 * answer) is through: polled up to 5 s until want is reached. */
static long long chunks_settle(const server_proc *s, long long want)
{
    long long n = chunks_held(s);
    for (int k = 0; k < 100 && n != want; k++) {
        sleep_ms(50);
        n = chunks_held(s);
    }
    return n;
}

static long long images_stored(const server_proc *s)
{
    return db_query_int(s->db,
                        "SELECT (SELECT count(*) FROM images) + (SELECT count(*) FROM image_data)");
}

/* Files in the SQLite store's chunk spool (<db>.chunks/), temporary ones
 * included; 0 when it does not exist. */
static long long spool_files(const server_proc *s)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s.chunks", s->db);
    DIR *d = opendir(dir);
    long long n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

/* The spool file of chunk hex. */
static void spool_path(const server_proc *s, const char *hex, char *out, size_t cap)
{
    snprintf(out, cap, "%s.chunks/%s", s->db, hex);
}

/* The spool's file count once the deletion following an answer is
 * through: polled up to 5 s until want is reached. */
static long long spool_settle(const server_proc *s, long long want)
{
    long long n = spool_files(s);
    for (int k = 0; k < 100 && n != want; k++) {
        sleep_ms(50);
        n = spool_files(s);
    }
    return n;
}

/* A fresh server on its own database with flags (NULL-terminated). */
static bool start_own(server_proc *s, const char *tag, const char *const *flags)
{
    char db[512];
    snprintf(db, sizeof db, "%s/%s.db", test_tmpdir(), tag);
    bool ok = server_start(s, db, flags);
    CHECK(ok, "server %s did not start", tag);
    return ok;
}

/* ---- the upload's options and the roles ---- */

TEST(e2e_chunks_upload_options_and_token)
{
    int st;
    json_t *j = req(cport(), "GET", "/v1/upload-options", NULL, 0, &st);
    CHECK(st == 200, "upload-options: %d", st);
    CHECK(json_integer_value(json_object_get(j, "chunk_size")) == CHUNK_SIZE &&
              json_integer_value(json_object_get(j, "max_chunk_request")) == CHUNK_SIZE,
          "chunk size as --chunk-size says");
    CHECK(strcmp(json_string_value(json_object_get(j, "hash")) ?: "", "sha256") == 0, "hash");
    CHECK(json_integer_value(json_object_get(j, "max_file_size")) == 3000000, "--max-upload");
    CHECK(json_integer_value(json_object_get(j, "chunk_budget_bytes")) == 1048576,
          "--chunk-budget");
    CHECK(json_integer_value(json_object_get(j, "chunk_ttl_seconds")) == 3600, "default TTL");
    CHECK(json_integer_value(json_object_get(j, "concurrency")) >= 1, "concurrency");
    json_decref(j);
    /* every route of uploads in parts is the upload role's */
    static const struct {
        const char *method, *path;
    } routes[] = {{"GET", "/v1/upload-options"},
                  {"POST", "/v1/images/check"},
                  {"POST", "/v1/chunks/missing"},
                  {"POST", "/v1/chunks/"
                           "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
                  {"POST", "/v1/images/assemble"},
                  {"GET", "/v1/images/assemble/"
                          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}};
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        http_resp r;
        bool ok = http_do(cport(), routes[i].method, routes[i].path, NULL, "{}", 2, &r);
        CHECK(ok && r.status == 401, "%s %s without the upload token: %d", routes[i].method,
              routes[i].path, ok ? r.status : 0);
        http_resp_free(&r);
    }
}

/* The options' environment twins, and their ranges. */
TEST(e2e_chunks_options_from_the_environment)
{
    setenv("SYMD_CHUNK_SIZE", "131072", 1);
    setenv("SYMD_CHUNK_BUDGET", "5000000", 1);
    setenv("SYMD_CHUNK_TTL", "7", 1);
    server_proc s;
    bool up = start_own(&s, "chunks-env", NULL);
    unsetenv("SYMD_CHUNK_SIZE");
    unsetenv("SYMD_CHUNK_BUDGET");
    unsetenv("SYMD_CHUNK_TTL");
    if (!up)
        return;
    int st;
    json_t *j = req(s.port, "GET", "/v1/upload-options", NULL, 0, &st);
    CHECK(st == 200 && json_integer_value(json_object_get(j, "chunk_size")) == 131072 &&
              json_integer_value(json_object_get(j, "chunk_budget_bytes")) == 5000000 &&
              json_integer_value(json_object_get(j, "chunk_ttl_seconds")) == 7,
          "SYMD_CHUNK_SIZE, SYMD_CHUNK_BUDGET, SYMD_CHUNK_TTL");
    json_decref(j);
    CHECK(server_stop(&s), "no clean exit");
    /* a chunk size under 64 KiB is refused at start */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s serve --listen 127.0.0.1:0 --db %s/never.db --chunk-size 100 "
                              "2>/dev/null",
             getenv("SYMD_BIN") ? getenv("SYMD_BIN") : "./symd", test_tmpdir());
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "--chunk-size 100: exit %d", rc);
}

/* ---- POST /v1/images/check ---- */

/* The state check answers for one item. */
static const char *check_one(int port, const char *uuid, const char *arch, bool debug_info,
                             char *out, size_t cap)
{
    json_t *item = json_pack("{s:s, s:b}", "uuid", uuid, "debug_info", debug_info);
    if (arch)
        json_object_set_new(item, "arch", json_string(arch));
    int st;
    json_t *j = req_json(port, "POST", "/v1/images/check",
                         json_pack("{s:[o]}", "items", item), &st);
    json_t *it = json_array_get(json_object_get(j, "items"), 0);
    snprintf(out, cap, "%s", st == 200 ? json_string_value(json_object_get(it, "state")) ?: "?"
                                       : "http error");
    json_decref(j);
    return out;
}

TEST(e2e_chunks_check_real_fixtures)
{
    server_proc s;
    if (!start_own(&s, "chunks-check", (const char *const[]){"--upload-token", "up-tok", NULL}))
        return;
    int port = s.port;
    size_t len;
    uint8_t *bin = read_fixture("fixtures/bin/bigapp-arm64", &len);
    int st;
    json_t *j = req(port, "POST", "/v1/images?name=bigapp", bin, len, &st);
    free(bin);
    CHECK(st == 201, "binary upload: %d", st);
    char uuid[64] = "";
    snprintf(uuid, sizeof uuid, "%s",
             json_string_value(json_object_get(json_array_get(json_object_get(j, "images"), 0),
                                               "uuid")) ?: "");
    json_decref(j);
    char buf[32];
    /* the binary alone: present for a client without debug info, not for
     * one holding the dSYM */
    CHECK(strcmp(check_one(port, uuid, NULL, false, buf, sizeof buf), "present") == 0,
          "binary, no debug info wanted: %s", buf);
    CHECK(strcmp(check_one(port, uuid, "arm64", true, buf, sizeof buf), "no_debug_info") == 0,
          "binary, dSYM at hand: %s", buf);
    CHECK(strcmp(check_one(port, uuid, "x86_64", false, buf, sizeof buf), "missing") == 0,
          "another arch: %s", buf);
    CHECK(strcmp(check_one(port, "00000000-1111-2222-3333-444444444444", NULL, false, buf,
                           sizeof buf),
                 "missing") == 0,
          "unknown UUID: %s", buf);
    /* the dSYM after it: present with debug info */
    uint8_t *dwarf =
        read_fixture("fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64", &len);
    json_decref(req(port, "POST", "/v1/images?name=bigapp", dwarf, len, &st));
    free(dwarf);
    CHECK(st == 201, "dSYM upload: %d", st);
    CHECK(strcmp(check_one(port, uuid, "arm64", true, buf, sizeof buf), "present") == 0,
          "binary and dSYM: %s", buf);
    char lower[64];
    snprintf(lower, sizeof lower, "%s", uuid);
    for (char *p = lower; *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    CHECK(strcmp(check_one(port, lower, NULL, true, buf, sizeof buf), "present") == 0,
          "UUID in lower case: %s", buf);

    /* thousands in one request, answered in request order */
    json_t *items = json_array();
    for (int i = 0; i < 10000; i++) {
        char u[40];
        snprintf(u, sizeof u, "%08X-0000-0000-0000-%012X", i, i);
        json_array_append_new(items, i == 5000 ? json_pack("{s:s, s:b}", "uuid", uuid,
                                                           "debug_info", true)
                                               : json_pack("{s:s}", "uuid", u));
    }
    j = req_json(port, "POST", "/v1/images/check", json_pack("{s:o}", "items", items), &st);
    json_t *out = json_object_get(j, "items");
    CHECK(st == 200 && json_array_size(out) == 10000, "10000 items: %d, %zu answers", st,
          json_array_size(out));
    size_t bad = 0;
    for (size_t i = 0; i < json_array_size(out); i++) {
        const char *state = json_string_value(json_object_get(json_array_get(out, i), "state"));
        bad += strcmp(state ?: "", i == 5000 ? "present" : "missing") != 0;
    }
    CHECK(bad == 0, "%zu of 10000 answers not in order or wrong", bad);
    CHECK(strcmp(json_string_value(json_object_get(json_array_get(out, 5000), "uuid")) ?: "",
                 uuid) == 0,
          "item 5000 names its UUID");
    json_decref(j);
    /* past the limit: 413 naming it; a malformed item: 400 naming it */
    items = json_array();
    for (int i = 0; i < 10001; i++)
        json_array_append_new(items, json_pack("{s:s}", "uuid", uuid));
    j = req_json(port, "POST", "/v1/images/check", json_pack("{s:o}", "items", items), &st);
    const char *msg =
        json_string_value(json_object_get(json_object_get(j, "error"), "message")) ?: "";
    CHECK(st == 413 && strstr(msg, "10000"), "10001 items: %d %s", st, msg);
    json_decref(j);
    j = req_json(port, "POST", "/v1/images/check",
                 json_pack("{s:[{s:s},{s:s}]}", "items", "uuid", uuid, "uuid", "not-a-uuid"), &st);
    msg = json_string_value(json_object_get(json_object_get(j, "error"), "message")) ?: "";
    CHECK(st == 400 && strstr(msg, "items[1]"), "a bad UUID: %d %s", st, msg);
    json_decref(j);
    CHECK(server_stop(&s), "no clean exit");
}

/* ---- chunks and their assembly ---- */

/* Every index blob of the images of answer, read from the stores of two
 * servers, byte for byte the same. */
static void same_blobs(const char *db_a, const char *db_b, json_t *answer)
{
    store *a = NULL, *b = NULL;
    symd_err err = {0};
    CHECK(store_open(db_arg(db_a), 1, 1 << 20, &a, &err) == SYMD_OK, "open a: %s", err.msg);
    CHECK(store_open(db_arg(db_b), 1, 1 << 20, &b, &err) == SYMD_OK, "open b: %s", err.msg);
    if (!a || !b) {
        store_close(a);
        store_close(b);
        return;
    }
    size_t i, compared = 0;
    json_t *o;
    json_array_foreach(json_object_get(answer, "images"), i, o)
    {
        uint8_t uuid[16];
        const char *arch = json_string_value(json_object_get(o, "arch"));
        CHECK(uuid_parse(json_string_value(json_object_get(o, "uuid")) ?: "", uuid) && arch,
              "image %zu", i);
        static const char *const kinds[] = {"symbols", "lines", "unwind"};
        for (int k = 0; k < 3 && arch; k++) {
            uint8_t *da, *dbb;
            size_t la, lb;
            symd_status ra = store_get_blob(a, uuid, arch, kinds[k], &da, &la, &err);
            symd_status rb = store_get_blob(b, uuid, arch, kinds[k], &dbb, &lb, &err);
            CHECK(ra == rb, "image %zu %s: stored on one side only", i, kinds[k]);
            if (ra == SYMD_OK && rb == SYMD_OK) {
                CHECK(la == lb && memcmp(da, dbb, la) == 0, "image %zu %s: blobs differ", i,
                      kinds[k]);
                compared++;
            }
            free(da);
            free(dbb);
        }
    }
    CHECK(compared >= 3, "only %zu blobs compared", compared);
    store_close(a);
    store_close(b);
}

TEST(e2e_chunks_assemble_resumed_equals_plain_post)
{
    const char *zip = "fixtures/zip/dsym-nested.zip";
    pieces p;
    if (!pieces_of_fixture(zip, 4096, &p))
        return;
    CHECK(p.n >= 4, "%zu pieces: the zip is to be cut in several", p.n);
    server_proc a, b;
    if (!start_own(&a, "chunks-a", (const char *const[]){"--upload-token", "up-tok", NULL}))
        return;
    if (!start_own(&b, "chunks-b", (const char *const[]){"--upload-token", "up-tok", NULL})) {
        server_stop(&a);
        return;
    }
    /* half the chunks, then an interruption: the server says what is missing */
    json_t *m = missing_of(a.port, &p);
    CHECK(json_array_size(m) == p.n, "all %zu missing at first, %zu said", p.n,
          json_array_size(m));
    json_decref(m);
    size_t half = p.n / 2;
    for (size_t i = 0; i < half; i++)
        CHECK(send_piece(a.port, &p, i, NULL) == 201, "chunk %zu stored", i);
    m = missing_of(a.port, &p);
    CHECK(json_array_size(m) == p.n - half, "%zu missing after half, want %zu",
          json_array_size(m), p.n - half);
    for (size_t i = 0; i < json_array_size(m); i++)
        CHECK(strcmp(json_string_value(json_array_get(m, i)) ?: "", p.hex[half + i]) == 0,
              "missing[%zu] is chunk %zu", i, half + i);
    /* an assemble now names exactly those, and stores nothing */
    int st;
    json_t *j = assemble(a.port, &p, "App.dSYM.zip", NULL, &st);
    CHECK(st == 409 && strcmp(json_string_value(json_object_get(j, "state")) ?: "",
                              "missing_chunks") == 0,
          "assemble with chunks missing: %d", st);
    CHECK(json_equal(json_object_get(j, "missing"), m), "409 lists the missing chunks");
    CHECK(images_stored(&a) == 0, "nothing stored by a 409");
    json_decref(j);
    /* the rest (a held chunk sent again is 200), then the assembly */
    for (size_t i = 0; i < json_array_size(m); i++)
        CHECK(send_piece(a.port, &p, half + i, NULL) == 201, "chunk %zu stored", half + i);
    CHECK(send_piece(a.port, &p, 0, NULL) == 200, "a held chunk sent again: 200");
    json_decref(m);
    CHECK(chunks_held(&a) == (long long)p.n, "%lld chunks held", chunks_held(&a));
    json_t *chunked = assemble(a.port, &p, "App.dSYM.zip", NULL, &st);
    CHECK(st == 201, "assemble: %d", st);
    /* the plain POST of the same bytes to the other server */
    int pst;
    json_t *plain = req(b.port, "POST", "/v1/images?name=App.dSYM.zip", p.data, p.len, &pst);
    CHECK(pst == 201, "plain POST: %d", pst);
    json_t *ta = timeless(chunked), *tb = timeless(plain);
    CHECK(json_array_size(ta) >= 2 && json_equal(ta, tb), "assembled answer equals the plain one");
    json_decref(ta);
    json_decref(tb);
    CHECK(images_stored(&a) == images_stored(&b) && images_stored(&a) > 0,
          "rows: %lld assembled, %lld plain", images_stored(&a), images_stored(&b));
    same_blobs(a.db, b.db, plain);
    /* assembled chunks are gone; the check says every image is present, so
     * the file is not sent again */
    long long left = chunks_settle(&a, 0);
    CHECK(left == 0, "%lld chunks left after the assembly", left);
    size_t i;
    json_t *o, *items = json_array();
    json_array_foreach(json_object_get(chunked, "images"), i, o)
        json_array_append_new(items, json_pack("{s:O, s:O, s:O}", "uuid",
                                               json_object_get(o, "uuid"), "arch",
                                               json_object_get(o, "arch"), "debug_info",
                                               json_object_get(o, "debug_info")));
    json_t *c = req_json(a.port, "POST", "/v1/images/check", json_pack("{s:o}", "items", items),
                         &st);
    json_array_foreach(json_object_get(c, "items"), i, o)
        CHECK(strcmp(json_string_value(json_object_get(o, "state")) ?: "", "present") == 0,
              "item %zu after the assembly: %s", i,
              json_string_value(json_object_get(o, "state")));
    json_decref(c);
    json_decref(chunked);
    json_decref(plain);
    /* the same file again: 200 "exists" as a plain POST again would be */
    for (size_t k = 0; k < p.n; k++)
        send_piece(a.port, &p, k, NULL);
    j = assemble(a.port, &p, "App.dSYM.zip", NULL, &st);
    CHECK(st == 200 && strcmp(json_string_value(json_object_get(
                                  json_array_get(json_object_get(j, "images"), 0), "status")) ?: "",
                              "exists") == 0,
          "assembled twice: %d", st);
    json_decref(j);
    pieces_free(&p);
    CHECK(server_stop(&a) && server_stop(&b), "no clean exit");
}

TEST(e2e_chunks_hostile)
{
    int port = cport();
    const server_proc *s = &csrv.proc;
    pieces p;
    if (!pieces_of_fixture("fixtures/zip/dsym-single.zip", 2048, &p))
        return;
    long long images0 = images_stored(s), chunks0 = chunks_held(s);
    /* a chunk whose bytes are not those its name hashes: nothing stored */
    int st;
    http_resp r;
    CHECK(send_piece(port, &p, 1, p.hex[0]) == 400, "a lying chunk is refused");
    char path[128];
    snprintf(path, sizeof path, "/v1/chunks/%s", p.hex[0]);
    CHECK(http_do(port, "POST", path, AUTH, p.data + 2048, 2048, &r) &&
              strcmp(error_code(&r), "hash_mismatch") == 0,
          "code hash_mismatch: %s", r.body);
    http_resp_free(&r);
    CHECK(chunks_held(s) == chunks0, "a lying chunk is not stored");
    /* a name that is no SHA-256; an empty chunk; one past the chunk size */
    CHECK(http_do(port, "POST", "/v1/chunks/abc", AUTH, "x", 1, &r) && r.status == 400 &&
              strcmp(error_code(&r), "invalid_hash") == 0,
          "bad name: %d", r.status);
    http_resp_free(&r);
    uint8_t *big = calloc(1, CHUNK_SIZE + 1);
    uint8_t d[32];
    char hex[65];
    sha256(big, CHUNK_SIZE + 1, d);
    sha256_hex(d, hex);
    snprintf(path, sizeof path, "/v1/chunks/%s", hex);
    CHECK(http_do(port, "POST", path, AUTH, big, CHUNK_SIZE + 1, &r) && r.status == 413,
          "a chunk past --chunk-size: %d", r.status);
    http_resp_free(&r);
    free(big);
    /* an assemble naming chunks never sent: 409 listing them all */
    json_t *j = assemble(port, &p, "x.zip", NULL, &st);
    CHECK(st == 409 && json_array_size(json_object_get(j, "missing")) == p.n,
          "unknown chunks: %d", st);
    json_decref(j);
    /* the chunks, then an assembly under a wrong whole-file hash or size:
     * 400, nothing stored, the chunks kept for a right one */
    for (size_t i = 0; i < p.n; i++)
        CHECK(send_piece(port, &p, i, NULL) / 100 == 2, "chunk %zu", i);
    pieces wrong = p;
    snprintf(wrong.whole, sizeof wrong.whole, "%s", p.hex[0]);
    j = assemble(port, &wrong, "x.zip", NULL, &st);
    CHECK(st == 400 && strcmp(json_string_value(json_object_get(json_object_get(j, "error"),
                                                                "code")) ?: "",
                              "hash_mismatch") == 0,
          "wrong file hash: %d", st);
    json_decref(j);
    wrong = p;
    wrong.len = p.len - 1;
    j = assemble(port, &wrong, "x.zip", NULL, &st);
    CHECK(st == 400, "wrong size: %d", st);
    json_decref(j);
    wrong.len = 3000001;
    j = assemble(port, &wrong, "x.zip", NULL, &st);
    CHECK(st == 413, "past --max-upload: %d", st);
    json_decref(j);
    CHECK(images_stored(s) == images0, "nothing stored by refused assemblies");
    CHECK(chunks_held(s) == chunks0 + (long long)p.n, "the chunks stay for a right assembly");
    j = assemble(port, &p, "x.zip", NULL, &st);
    CHECK(st == 201, "the right assembly: %d", st);
    json_decref(j);
    CHECK(chunks_settle(s, chunks0) == chunks0, "its chunks are deleted once it is stored");
    pieces_free(&p);

    /* an assembled zip bomb: refused as its plain POST is, nothing stored */
    if (!pieces_of_fixture("fixtures/zip/bomb.zip", 4096, &p))
        return;
    images0 = images_stored(s);
    for (size_t i = 0; i < p.n; i++)
        send_piece(port, &p, i, NULL);
    j = assemble(port, &p, "bomb.zip", NULL, &st);
    json_t *plain = req(port, "POST", "/v1/images?name=bomb.zip", p.data, p.len, &r.status);
    CHECK(st == 413 && r.status == 413, "zip bomb: assembled %d, plain %d", st, r.status);
    CHECK(json_equal(j, plain), "the bomb's answers are the same");
    CHECK(images_stored(s) == images0, "nothing of the bomb stored");
    json_decref(j);
    json_decref(plain);
    pieces_free(&p);
}

TEST(e2e_chunks_flood_past_budget)
{
    server_proc s;
    if (!start_own(&s, "chunks-flood",
                   (const char *const[]){"--upload-token", "up-tok", "--chunk-size", "65536",
                                         "--chunk-budget", "1048576", NULL}))
        return;
    /* 16 chunks of 64 KiB fill the 1 MiB budget; the 17th does not fit */
    uint8_t *buf = distinct_bytes(17 * CHUNK_SIZE);
    pieces p;
    pieces_of(buf, 17 * CHUNK_SIZE, CHUNK_SIZE, &p);
    free(buf);
    for (size_t i = 0; i < 16; i++)
        CHECK(send_piece(s.port, &p, i, NULL) == 201, "chunk %zu within the budget", i);
    http_resp r;
    char path[128];
    snprintf(path, sizeof path, "/v1/chunks/%s", p.hex[16]);
    CHECK(http_do(s.port, "POST", path, AUTH, p.data + 16 * CHUNK_SIZE, CHUNK_SIZE, &r) &&
              r.status == 507 && strcmp(error_code(&r), "chunk_budget_full") == 0,
          "past the budget: %d %s", r.status, r.body);
    CHECK(http_header(&r, "Retry-After"), "507 says when to retry");
    http_resp_free(&r);
    CHECK(chunks_held(&s) == 16, "%lld chunks held, want 16", chunks_held(&s));
    CHECK(db_query_int(s.db, "SELECT coalesce(sum(size), 0) FROM chunks") == 16 * CHUNK_SIZE,
          "held bytes within the budget");
    CHECK(send_piece(s.port, &p, 3, NULL) == 200, "a held chunk sent again needs no room");
    /* /metrics reports them */
    http_do(s.port, "GET", "/metrics", NULL, NULL, 0, &r);
    CHECK(r.body && strstr(r.body, "\nsymd_chunks 16\n") &&
              strstr(r.body, "\nsymd_chunk_bytes 1048576\n") &&
              strstr(r.body, "\nsymd_chunk_budget_bytes 1048576\n"),
          "metrics of the chunks held");
    http_resp_free(&r);
    pieces_free(&p);
    CHECK(server_stop(&s), "no clean exit");
}

TEST(e2e_chunks_assemble_202_then_state)
{
    int port = cport();
    pieces p;
    if (!pieces_of_fixture("fixtures/zip/mixed.zip", 8192, &p))
        return;
    for (size_t i = 0; i < p.n; i++)
        send_piece(port, &p, i, NULL);
    int st;
    json_t *j = assemble(port, &p, "mixed.zip", "?wait=0", &st);
    /* ?wait=0: the answer comes before the assembly's end, unless that
     * ended in the instant between the two */
    CHECK(st == 202 || st / 100 == 2, "assemble ?wait=0: %d", st);
    char url[160];
    snprintf(url, sizeof url, "/v1/images/assemble/%s", p.whole);
    if (st == 202)
        CHECK(strcmp(json_string_value(json_object_get(j, "status_url")) ?: "", url) == 0 &&
                  strcmp(json_string_value(json_object_get(j, "state")) ?: "", "assembling") == 0,
              "202 names the state URL");
    json_decref(j);
    json_t *done = NULL;
    for (int k = 0; k < 200; k++) {
        done = req(port, "GET", url, NULL, 0, &st);
        if (st != 202)
            break;
        json_decref(done);
        done = NULL;
        sleep_ms(50);
    }
    CHECK(st == 201 || st == 200, "final state: %d", st);
    json_t *plain = req(port, "POST", "/v1/images?name=mixed.zip", p.data, p.len, &st);
    CHECK(st == 200, "the plain POST after: %d", st);
    json_t *ta = timeless(done), *tb = timeless(plain);
    size_t i;
    json_t *o;
    json_array_foreach(ta, i, o) json_object_del(o, "status");
    json_array_foreach(tb, i, o) json_object_del(o, "status");
    CHECK(json_array_size(ta) > 0 && json_equal(ta, tb), "the state URL's answer is POST's");
    json_decref(ta);
    json_decref(tb);
    json_decref(done);
    json_decref(plain);
    /* a state URL of no assembly; one that names no hash */
    json_decref(req(port, "GET",
                    "/v1/images/assemble/"
                    "0000000000000000000000000000000000000000000000000000000000000000",
                    NULL, 0, &st));
    CHECK(st == 404, "unknown assembly: %d", st);
    json_decref(req(port, "GET", "/v1/images/assemble/zz", NULL, 0, &st));
    CHECK(st == 400, "bad hash: %d", st);
    pieces_free(&p);
}

TEST(e2e_chunks_expire_after_ttl)
{
    server_proc s;
    if (!start_own(&s, "chunks-ttl",
                   (const char *const[]){"--upload-token", "up-tok", "--chunk-ttl", "1",
                                         "--prune-every", "1", NULL}))
        return;
    pieces p;
    if (!pieces_of_fixture("fixtures/zip/dsym-single.zip", 4096, &p)) {
        server_stop(&s);
        return;
    }
    CHECK(send_piece(s.port, &p, 0, NULL) == 201, "chunk stored");
    CHECK(chunks_held(&s) == 1, "held before its TTL");
    long long left = 1;
    for (int k = 0; k < 100 && left != 0; k++) {
        sleep_ms(100);
        left = chunks_held(&s);
    }
    CHECK(left == 0, "a chunk never assembled expires after --chunk-ttl");
    if (!test_pg()) {
        CHECK(spool_settle(&s, 0) == 0, "%lld spool files left after the TTL", spool_files(&s));
        /* what a crash leaves (a temporary file, a file without its row),
         * old enough: removed by the expiry too */
        char a[700], b[700];
        snprintf(a, sizeof a, "%s.chunks/.tmp-0123456789abcdef-XXXXXX", s.db);
        spool_path(&s, p.hex[0], b, sizeof b);
        const char *const orphans[] = {a, b};
        for (int k = 0; k < 2; k++) {
            int fd = open(orphans[k], O_CREAT | O_WRONLY, 0600);
            CHECK(fd >= 0 && write(fd, "x", 1) == 1, "orphan %d written", k);
            if (fd >= 0)
                close(fd);
            struct timeval old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
            utimes(orphans[k], old);
        }
        CHECK(spool_files(&s) == 2, "orphans in place: %lld", spool_files(&s));
        CHECK(spool_settle(&s, 0) == 0, "%lld orphan files left", spool_files(&s));
    }
    json_t *m = missing_of(s.port, &p);
    CHECK(json_array_size(m) == p.n, "expired chunks are missing again");
    json_decref(m);
    pieces_free(&p);
    CHECK(server_stop(&s), "no clean exit");
}

/* SQLite keeps chunks as files: one per chunk held, none once assembled;
 * a file cut or changed on disk is not stored: the assembly names it as
 * missing (409, the file dropped), the client sends it again. Chunks that
 * do not fill whole pages take the copying assembly: the same answers. */
TEST(e2e_chunks_spool_files)
{
    if (test_pg()) {
        test_skip("SQLite's chunk spool (PostgreSQL keeps chunks in the database)");
        return;
    }
    server_proc s;
    if (!start_own(&s, "chunks-spool", (const char *const[]){"--upload-token", "up-tok", NULL}))
        return;
    pieces p;
    if (!pieces_of_fixture("fixtures/zip/dsym-nested.zip", 4096, &p)) {
        server_stop(&s);
        return;
    }
    CHECK(p.n >= 4, "%zu pieces", p.n);
    for (size_t i = 0; i < p.n; i++)
        CHECK(send_piece(s.port, &p, i, NULL) == 201, "chunk %zu stored", i);
    CHECK(spool_files(&s) == (long long)p.n, "%lld spool files for %zu chunks", spool_files(&s),
          p.n);
    CHECK(db_query_int(s.db, "SELECT coalesce(sum(length(data)), -1) FROM chunks") == 0,
          "the bytes are in the files, not the database");
    char path[700];
    int st;
    /* chunk 1 cut short on disk */
    spool_path(&s, p.hex[1], path, sizeof path);
    CHECK(truncate(path, 100) == 0, "truncate %s: %s", path, strerror(errno));
    json_t *j = assemble(s.port, &p, "App.dSYM.zip", NULL, &st);
    json_t *m = json_object_get(j, "missing");
    CHECK(st == 409 && json_array_size(m) == 1 &&
              strcmp(json_string_value(json_array_get(m, 0)) ?: "", p.hex[1]) == 0,
          "a cut chunk file: %d, %zu missing", st, json_array_size(m));
    json_decref(j);
    CHECK(images_stored(&s) == 0, "nothing stored from a cut chunk");
    CHECK(access(path, F_OK) != 0, "the cut file is dropped");
    CHECK(send_piece(s.port, &p, 1, NULL) == 200, "sent again (its row renewed, its file back)");
    /* chunk 2's bytes changed on disk, its size kept */
    spool_path(&s, p.hex[2], path, sizeof path);
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, "\xff\xfe", 2, 10) == 2, "damage %s", path);
    if (fd >= 0)
        close(fd);
    j = assemble(s.port, &p, "App.dSYM.zip", NULL, &st);
    m = json_object_get(j, "missing");
    CHECK(st == 409 && json_array_size(m) == 1 &&
              strcmp(json_string_value(json_array_get(m, 0)) ?: "", p.hex[2]) == 0,
          "a damaged chunk file: %d, %zu missing", st, json_array_size(m));
    json_decref(j);
    CHECK(images_stored(&s) == 0, "nothing stored from a damaged chunk");
    CHECK(access(path, F_OK) != 0, "the damaged file is dropped");
    m = missing_of(s.port, &p);
    CHECK(json_array_size(m) == 1, "%zu missing after the damage", json_array_size(m));
    json_decref(m);
    CHECK(send_piece(s.port, &p, 2, NULL) == 201, "sent again");
    j = assemble(s.port, &p, "App.dSYM.zip", NULL, &st);
    CHECK(st == 201, "assembled once repaired: %d", st);
    json_t *mapped = timeless(j);
    json_decref(j);
    CHECK(chunks_settle(&s, 0) == 0 && spool_settle(&s, 0) == 0,
          "after the assembly: %lld chunks, %lld spool files", chunks_held(&s),
          spool_files(&s));
    /* pieces that end inside pages: copied, the same answer */
    server_proc t;
    if (start_own(&t, "chunks-spool-odd", (const char *const[]){"--upload-token", "up-tok",
                                                                 NULL})) {
        pieces q;
        if (pieces_of(p.data, p.len, 1000, &q)) {
            for (size_t i = 0; i < q.n; i++)
                CHECK(send_piece(t.port, &q, i, NULL) == 201, "odd chunk %zu stored", i);
            /* a changed file found there too: named, dropped, sent again */
            spool_path(&t, q.hex[3], path, sizeof path);
            fd = open(path, O_WRONLY);
            CHECK(fd >= 0 && pwrite(fd, "\xff\xfe", 2, 10) == 2, "damage %s", path);
            if (fd >= 0)
                close(fd);
            j = assemble(t.port, &q, "App.dSYM.zip", NULL, &st);
            m = json_object_get(j, "missing");
            CHECK(st == 409 && json_array_size(m) == 1 &&
                      strcmp(json_string_value(json_array_get(m, 0)) ?: "", q.hex[3]) == 0,
                  "a damaged odd chunk file: %d, %zu missing", st, json_array_size(m));
            json_decref(j);
            CHECK(images_stored(&t) == 0, "nothing stored from a damaged odd chunk");
            CHECK(send_piece(t.port, &q, 3, NULL) == 201, "sent again");
            j = assemble(t.port, &q, "App.dSYM.zip", NULL, &st);
            json_t *copied = timeless(j);
            CHECK(st == 201 && json_array_size(copied) >= 2 && json_equal(copied, mapped),
                  "odd pieces assembled: %d, the same images", st);
            json_decref(copied);
            json_decref(j);
            CHECK(spool_settle(&t, 0) == 0, "%lld spool files left", spool_files(&t));
            pieces_free(&q);
        }
        CHECK(server_stop(&t), "no clean exit");
    }
    json_decref(mapped);
    pieces_free(&p);
    CHECK(server_stop(&s), "no clean exit");
}

/* symd_inflight_bytes of the server's /metrics, or -1. */
static long long inflight_bytes(int port)
{
    http_resp r;
    long long v = -1;
    if (http_do(port, "GET", "/metrics", NULL, NULL, 0, &r) && r.body) {
        const char *m = strstr(r.body, "\nsymd_inflight_bytes ");
        if (m)
            v = strtoll(m + strlen("\nsymd_inflight_bytes "), NULL, 10);
    }
    http_resp_free(&r);
    return v;
}

static int connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool write_all_fd(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w <= 0)
            return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

/* SQLite: a chunk's body goes to a spool file as it comes, hashed on the
 * way. While one is half sent the server holds none of it in memory (its
 * in-flight bytes stay below what came) and one temporary file takes it;
 * a body cut off leaves no file, nor does a lying one; a chunk sent with
 * no Content-Length (chunked transfer encoding) is stored at its size. */
TEST(e2e_chunks_spooled_as_they_come)
{
    if (test_pg()) {
        test_skip("SQLite's chunk spool (PostgreSQL keeps chunks in the database)");
        return;
    }
    server_proc s;
    if (!start_own(&s, "chunks-stream",
                   (const char *const[]){"--upload-token", "up-tok", "--chunk-size", "4194304",
                                         NULL}))
        return;
    const size_t n = 4u << 20, part = 1u << 20;
    uint8_t *buf = distinct_bytes(2 * n);
    pieces p;
    CHECK(buf && pieces_of(buf, 2 * n, n, &p), "no memory");
    free(buf);
    /* half a chunk sent, the rest held back */
    int fd = connect_port(s.port);
    char head[512];
    int hl = snprintf(head, sizeof head,
                      "POST /v1/chunks/%s HTTP/1.1\r\nHost: x\r\n" AUTH
                      "Content-Length: %zu\r\n\r\n",
                      p.hex[0], n);
    CHECK(fd >= 0 && write_all_fd(fd, head, (size_t)hl) && write_all_fd(fd, p.data, part),
          "sending half a chunk");
    long long files = spool_files(&s);
    for (int k = 0; k < 100 && files != 1; k++) {
        sleep_ms(50);
        files = spool_files(&s);
    }
    CHECK(files == 1, "%lld spool files while a chunk comes, want its temporary one", files);
    long long held = inflight_bytes(s.port);
    CHECK(held >= 0 && held < (long long)part,
          "%lld bytes held in memory while a chunk comes (%zu of it came)", held, part);
    if (fd >= 0)
        close(fd);
    CHECK(spool_settle(&s, 0) == 0, "%lld spool files after a body cut off", spool_files(&s));
    CHECK(chunks_held(&s) == 0, "a body cut off is not a chunk");
    /* whole: stored, its file its bytes */
    CHECK(send_piece(s.port, &p, 0, NULL) == 201, "a whole chunk stored");
    char path[700];
    struct stat st;
    spool_path(&s, p.hex[0], path, sizeof path);
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == n, "the chunk's file: %lld bytes",
          (long long)st.st_size);
    /* lying: 400, no file left */
    CHECK(send_piece(s.port, &p, 1, p.hex[0]) == 400, "a lying chunk is refused");
    CHECK(spool_settle(&s, 1) == 1, "%lld spool files after a lying chunk", spool_files(&s));
    /* chunked transfer encoding: no size declared, stored at the size that came */
    size_t cap = n + 4096, len = 0;
    char *raw = malloc(cap);
    len += (size_t)snprintf(raw, cap,
                            "POST /v1/chunks/%s HTTP/1.1\r\nHost: x\r\n" AUTH
                            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                            p.hex[1]);
    for (size_t off = 0; off < n; off += part) {
        len += (size_t)snprintf(raw + len, cap - len, "%zx\r\n", part);
        memcpy(raw + len, p.data + n + off, part);
        len += part;
        memcpy(raw + len, "\r\n", 2);
        len += 2;
    }
    len += (size_t)snprintf(raw + len, cap - len, "0\r\n\r\n");
    http_resp r;
    CHECK(http_raw(s.port, raw, len, &r) && r.status == 201, "a chunked body: %d %s", r.status,
          r.body ? r.body : "");
    http_resp_free(&r);
    free(raw);
    spool_path(&s, p.hex[1], path, sizeof path);
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == n, "the chunked body's file: %lld bytes",
          (long long)st.st_size);
    CHECK(chunks_held(&s) == 2 && spool_files(&s) == 2, "%lld chunks, %lld files",
          chunks_held(&s), spool_files(&s));
    json_t *j;
    int status;
    j = assemble(s.port, &p, "two.bin", NULL, &status);
    /* assembled (its whole hash right), then refused as bytes of no image */
    CHECK(status == 415, "two chunks of no image: %d", status);
    json_decref(j);
    pieces_free(&p);
    CHECK(server_stop(&s), "no clean exit");
}

/* ---- several nodes (PostgreSQL) ---- */

TEST(e2e_chunks_cross_node)
{
    if (!test_pg()) {
        test_skip("needs PostgreSQL (SYMD_TEST_PG): two nodes on one database");
        return;
    }
    const char *uri = pg_fresh_db("chunks_nodes");
    if (!uri)
        return;
    server_proc n[2];
    bool up[2];
    char db[2][512];
    for (int i = 0; i < 2; i++) {
        snprintf(db[i], sizeof db[i], "%s/chunks-node-%c", test_tmpdir(), 'a' + i);
        up[i] = server_start_on(&n[i], db[i], uri,
                                (const char *const[]){"--upload-token", "up-tok", NULL});
        CHECK(up[i], "node %c", 'a' + i);
    }
    pieces p;
    if (up[0] && up[1] && pieces_of_fixture("fixtures/zip/dsym-nested.zip", 4096, &p)) {
        /* chunks to node a, half of them; the rest to node b */
        for (size_t i = 0; i < p.n; i++)
            CHECK(send_piece(n[i % 2].port, &p, i, NULL) == 201, "chunk %zu", i);
        char held[32] = "";
        CHECK(pg_sql(uri, "SELECT count(*) FROM chunks", held, sizeof held) &&
                  (size_t)atoi(held) == p.n,
              "%s chunks in the shared database, want %zu", held, p.n);
        json_t *m = missing_of(n[1].port, &p);
        CHECK(json_array_size(m) == 0, "node b sees every chunk: %zu missing",
              json_array_size(m));
        json_decref(m);
        CHECK(send_piece(n[1].port, &p, 0, NULL) == 200, "node b holds node a's chunk");
        int st;
        json_t *j = assemble(n[1].port, &p, "App.dSYM.zip", NULL, &st);
        CHECK(st == 201, "assembled on node b: %d", st);
        json_t *first = json_array_get(json_object_get(j, "images"), 0);
        const char *uuid = json_string_value(json_object_get(first, "uuid"));
        /* node a answers it present (its directory follows within a second) */
        char state[32] = "";
        for (int k = 0; k < 40 && uuid; k++) {
            check_one(n[0].port, uuid, NULL, true, state, sizeof state);
            if (strcmp(state, "present") == 0)
                break;
            sleep_ms(50);
        }
        CHECK(strcmp(state, "present") == 0, "node a after b's assembly: %s", state);
        json_decref(j);
        char out[32] = "";
        for (int k = 0; k < 100; k++) { /* the deletion follows the answer */
            if (pg_sql(uri, "SELECT count(*) FROM chunks", out, sizeof out) &&
                strcmp(out, "0") == 0)
                break;
            sleep_ms(50);
        }
        CHECK(strcmp(out, "0") == 0, "assembled chunks are deleted: %s held", out);
        m = missing_of(n[0].port, &p);
        CHECK(json_array_size(m) == p.n, "assembled chunks are gone for node a too");
        json_decref(m);
        pieces_free(&p);
    }
    for (int i = 0; i < 2; i++)
        if (up[i])
            CHECK(server_stop(&n[i]), "node %c: no clean exit", 'a' + i);
}

/* One chunk sent by a thread of its own, all such threads let go at once. */
typedef struct {
    int port;
    const pieces *p;
    size_t i;
    pthread_barrier_t *go;
    int status;
} racer;

static void *race_thread(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->go);
    r->status = send_piece(r->port, r->p, r->i, NULL);
    return NULL;
}

/* The budget holds across nodes: with room for one more chunk, eight sent
 * at once to two nodes store one, together. */
TEST(e2e_chunks_budget_across_nodes)
{
    if (!test_pg()) {
        test_skip("needs PostgreSQL (SYMD_TEST_PG): two nodes on one database");
        return;
    }
    const char *uri = pg_fresh_db("chunks_budget");
    if (!uri)
        return;
    server_proc n[2];
    bool up[2];
    char db[2][512];
    for (int i = 0; i < 2; i++) {
        snprintf(db[i], sizeof db[i], "%s/chunks-budget-%c", test_tmpdir(), 'a' + i);
        up[i] = server_start_on(&n[i], db[i], uri,
                                (const char *const[]){"--upload-token", "up-tok", "--chunk-size",
                                                      "65536", "--chunk-budget", "1048576",
                                                      NULL});
        CHECK(up[i], "node %c", 'a' + i);
    }
    if (up[0] && up[1]) {
        uint8_t *buf = distinct_bytes(23 * CHUNK_SIZE);
        pieces p;
        pieces_of(buf, 23 * CHUNK_SIZE, CHUNK_SIZE, &p);
        free(buf);
        for (size_t i = 0; i < 15; i++) /* room left: one chunk */
            CHECK(send_piece(n[i % 2].port, &p, i, NULL) == 201, "chunk %zu", i);
        enum { RACERS = 8 };
        racer r[RACERS];
        pthread_t t[RACERS];
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, RACERS);
        for (int i = 0; i < RACERS; i++) {
            r[i] = (racer){n[i % 2].port, &p, 15 + (size_t)i, &go, 0};
            pthread_create(&t[i], NULL, race_thread, &r[i]);
        }
        int stored = 0, full = 0;
        for (int i = 0; i < RACERS; i++) {
            pthread_join(t[i], NULL);
            stored += r[i].status == 201;
            full += r[i].status == 507;
        }
        pthread_barrier_destroy(&go);
        CHECK(stored == 1 && full == RACERS - 1,
              "room for one chunk, %d sent at once to two nodes: %d stored, %d refused 507",
              RACERS, stored, full);
        char out[32] = "";
        CHECK(pg_sql(uri, "SELECT coalesce(sum(size), 0) FROM chunks", out, sizeof out) &&
                  strcmp(out, "1048576") == 0,
              "bytes held: %s", out);
        pieces_free(&p);
    }
    for (int i = 0; i < 2; i++)
        if (up[i])
            CHECK(server_stop(&n[i]), "node %c: no clean exit", 'a' + i);
}

/* symd import end to end: DeviceSupport trees of real dylibs (built now by
 * fixtures/make_devsupport.sh with Debian's LLVM) imported by the command
 * and over HTTP, then symbolicated against llvm-symbolizer's answers; a
 * second import stores nothing; deleting sets; the real dyld shared cache
 * of ../shared/dyld-cache checked against its own load commands and symbol
 * tables, its truncated copies refused; a crash report whose system frames
 * lie in an imported library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../util/cursor.h"
#include "../util/hex.h"
#include "fixture_util.h"
#include "harness.h"
#include "test.h"

#define LOAD 0x180000000ull
#define IOS_NEW "trees/iOS DeviceSupport/iPhone12,1 14.0 (18A373)"

static lazy_server isrv = {"e2e-import.db", NULL, {0}, false};
__attribute__((destructor)) static void stop_import_server(void)
{
    lazy_stop(&isrv);
}

static const char *bin(void)
{
    const char *b = getenv("SYMD_BIN");
    return b ? b : "./symd";
}

/* The fixtures, built once per run into the run's directory; NULL (a
 * failed check) when the toolchain cannot build them. */
static const char *devsupport_dir(void)
{
    static char dir[1024];
    static int state; /* 0 not tried, 1 built, -1 failed */
    if (state == 0) {
        snprintf(dir, sizeof dir, "%s/devsupport", test_tmpdir());
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "bash '%s' '%s'", root_path("fixtures/make_devsupport.sh"),
                 dir);
        int rc = system(cmd);
        state = rc == 0 ? 1 : -1;
        CHECK(rc == 0, "fixtures/make_devsupport.sh failed (%d): clang-14, lld-14, llvm-14 "
                       "(scripts/deps.sh installs them)", rc);
    }
    return state == 1 ? dir : NULL;
}

/* Runs cmd through the shell; its output (stdout and stderr), malloc'ed. */
static char *run(const char *cmd, int *status)
{
    char full[16384];
    int fl = snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = fl > 0 && (size_t)fl < sizeof full ? popen(full, "r") : NULL;
    size_t cap = 1 << 16, n = 0, r;
    char *out = malloc(cap);
    while (p && (r = fread(out + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (cap - n < 4096)
            out = realloc(out, cap *= 2);
    }
    out[n] = 0;
    int st = p ? pclose(p) : -1;
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

/* symd import --db (the run's database for path) args; its output. */
static char *import(const char *db, const char *args, int *status)
{
    char cmd[8192];
    int n = snprintf(cmd, sizeof cmd, "'%s' import --quiet --db '%s' %s", bin(), db_arg(db),
                     args);
    CHECK(n > 0 && (size_t)n < sizeof cmd, "command too long");
    return run(cmd, status);
}

static const char *db_path(const char *name)
{
    static char p[4][1024];
    static int next;
    char *b = p[next++ % 4];
    snprintf(b, sizeof p[0], "%s/%s", test_tmpdir(), name);
    return b;
}

/* The set of GET /v1/system-symbols whose os_build is build, or NULL. */
static json_t *set_of(json_t *list, const char *build)
{
    json_t *sets = json_object_get(list, "sets");
    for (size_t i = 0; i < json_array_size(sets); i++) {
        json_t *s = json_array_get(sets, i);
        if (strcmp(json_string_value(json_object_get(s, "os_build")), build) == 0)
            return s;
    }
    return NULL;
}

static bool set_is(json_t *s, const char *name, const char *version, const char *arch,
                   const char *model, json_int_t images)
{
    return s && strcmp(json_string_value(json_object_get(s, "os_name")), name) == 0 &&
           strcmp(json_string_value(json_object_get(s, "os_version")), version) == 0 &&
           strcmp(json_string_value(json_object_get(s, "arch")), arch) == 0 &&
           strcmp(json_string_value(json_object_get(s, "model")), model) == 0 &&
           json_integer_value(json_object_get(s, "image_count")) == images &&
           json_integer_value(json_object_get(s, "bytes")) > 0;
}

/* __TEXT's vmaddr of a stored (uuid, arch), as the server says; false when
 * it is not stored. */
static bool text_vmaddr(int port, const char *uuid, const char *arch, uint64_t *out)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/images/%s", uuid);
    int status;
    json_t *j = http_json(port, "GET", path, NULL, NULL, 0, &status, NULL);
    bool found = false;
    json_t *imgs = json_object_get(j, "images");
    for (size_t i = 0; i < json_array_size(imgs); i++) {
        json_t *im = json_array_get(imgs, i);
        if (strcmp(json_string_value(json_object_get(im, "arch")), arch) == 0) {
            const char *v = json_string_value(json_object_get(im, "text_vmaddr"));
            found = v && hex_parse_u64(v, strlen(v), out);
        }
    }
    json_decref(j);
    return found;
}

/* One address of one image through /v1/symbolicate (the image loaded at
 * LOAD): its frame, the caller's. */
static json_t *symbolicate(int port, const char *uuid, const char *arch, uint64_t text,
                           uint64_t vmaddr)
{
    char body[512];
    snprintf(body, sizeof body,
             "{\"images\": [{\"uuid\": \"%s\", \"arch\": \"%s\", \"load_address\": "
             "\"0x%llx\"}], \"threads\": [{\"id\": 0, \"frames\": [\"0x%llx\"]}]}",
             uuid, arch, LOAD, (unsigned long long)(LOAD + vmaddr - text));
    int status;
    json_t *j = http_json(port, "POST", "/v1/symbolicate", NULL, body, strlen(body), &status,
                          NULL);
    CHECK(status == 200, "symbolicate %s: %d", uuid, status);
    json_t *f = json_array_get(
        json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames"), 0);
    json_incref(f);
    json_decref(j);
    return f;
}

/* Every sampled address of expected.tsv (only the rows of file when not
 * NULL) against llvm-symbolizer's FunctionName, StartAddress and offset;
 * returns how many agree, *n of how many. */
static int agree_with_llvm(int port, const char *dir, int *n)
{
    static tsv_row rows[4096];
    char *buf, rel[1200];
    snprintf(rel, sizeof rel, "%s/expected.tsv", dir);
    /* load_tsv reads under the repository: give it the absolute path */
    int nr = load_tsv(rel, rows, 4096, &buf);
    CHECK(nr > 100, "expected.tsv: %d rows", nr);
    int agree = 0;
    *n = nr;
    for (int i = 0; i < nr; i++) {
        const char *uuid = rows[i].f[2], *arch = rows[i].f[1];
        uint64_t text = 0, a = 0;
        hex_parse_u64(rows[i].f[3], strlen(rows[i].f[3]), &a);
        if (!text_vmaddr(port, uuid, arch, &text)) {
            CHECK(false, "%s %s (%s) is not stored", uuid, arch, rows[i].f[0]);
            continue;
        }
        json_t *f = symbolicate(port, uuid, arch, text, a);
        const char *st = json_string_value(json_object_get(f, "status"));
        const char *sym = json_string_value(json_object_get(f, "symbol"));
        const char *sa = json_string_value(json_object_get(f, "symbol_address"));
        json_int_t off = json_integer_value(json_object_get(f, "offset"));
        bool ok = st && strcmp(st, "symbolicated") == 0 && sym &&
                  strcmp(sym, rows[i].f[4]) == 0 && sa && strcmp(sa, rows[i].f[5]) == 0 &&
                  off == strtoll(rows[i].f[6], NULL, 10);
        CHECK(ok, "%s %s %s: want %s (%s)+%s, got %s %s (%s)+%lld", rows[i].f[0], arch,
              rows[i].f[3], rows[i].f[4], rows[i].f[5], rows[i].f[6], st ? st : "?",
              sym ? sym : "?", sa ? sa : "?", (long long)off);
        agree += ok;
        json_decref(f);
    }
    free(buf);
    return agree;
}

static const char *uuid_of_file(const char *dir, const char *suffix, char out[64])
{
    static tsv_row rows[64];
    char *buf, rel[1200];
    snprintf(rel, sizeof rel, "%s/uuids.tsv", dir);
    int n = load_tsv(rel, rows, 64, &buf);
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t fl = strlen(rows[i].f[0]), sl = strlen(suffix);
        if (fl >= sl && strcmp(rows[i].f[0] + fl - sl, suffix) == 0)
            snprintf(out, 64, "%s", rows[i].f[2]);
    }
    free(buf);
    CHECK(out[0], "no UUID for %s in uuids.tsv", suffix);
    return out;
}

TEST(e2e_import_devsupport_trees_then_symbolicate_like_llvm_symbolizer)
{
    const char *dir = devsupport_dir();
    if (!dir)
        return;
    const char *db = db_path(isrv.dbname);
    char args[4096];
    int st;
    /* One folder first: a run cut short after it. */
    snprintf(args, sizeof args, "'%s/" IOS_NEW "'", dir);
    char *out = import(db, args, &st);
    CHECK(st == 0 && strstr(out, "1 set: files 4, Mach-O slices 4, stored 4, skipped 0"),
          "first folder: %d\n%s", st, out);
    free(out);
    /* The whole trees: the first folder's files are skipped (the run
     * resumes), the rest stored; the library two builds share is stored
     * once. */
    snprintf(args, sizeof args,
             "'%s/trees/iOS DeviceSupport' '%s/trees/watchOS DeviceSupport' "
             "'%s/trees/macOS DeviceSupport'",
             dir, dir, dir);
    out = import(db, args, &st);
    CHECK(st == 0 && strstr(out, "4 sets: files 9, Mach-O slices 8, stored 3, skipped 5 (stored "
                                 "already), not Mach-O 2, errors 0"),
          "all trees: %d\n%s", st, out);
    free(out);
    out = import(db, args, &st);
    CHECK(st == 0 && strstr(out, "stored 0, skipped 8"), "again, nothing stored: %d\n%s", st,
          out);
    free(out);
    CHECK(db_query_int(db, "SELECT count(*) FROM images WHERE system") == 7 &&
              db_query_int(db, "SELECT count(*) FROM images") == 7 &&
              db_query_int(db, "SELECT count(*) FROM symbol_sets") == 4,
          "7 system images in 4 sets");

    int port = lazy_port(&isrv);
    int status;
    json_t *list = http_json(port, "GET", "/v1/system-symbols", NULL, NULL, 0, &status, NULL);
    CHECK(status == 200, "list: %d", status);
    CHECK(set_is(set_of(list, "18A373"), "iOS", "14.0", "", "iPhone12,1", 4),
          "iOS 14.0 (18A373), from the folder and its Info.plist");
    CHECK(set_is(set_of(list, "18B92"), "iOS", "14.2", "arm64e", "", 2),
          "iOS 14.2 (18B92) arm64e, the older name with its arch");
    CHECK(set_is(set_of(list, "18R382"), "watchOS", "7.0", "", "Watch6,1", 1), "watchOS");
    CHECK(set_is(set_of(list, "20A2411"), "macOS", "11.0", "", "", 1), "macOS");
    json_decref(list);

    /* A zip of a folder over HTTP (its OS from the Info.plist's "Apple TVOS"). */
    char zip[1200];
    snprintf(zip, sizeof zip, "%s/zips/tvos.zip", dir);
    size_t zlen;
    uint8_t *zbytes = read_file(zip, &zlen);
    CHECK(zbytes, "%s", zip);
    json_t *j = http_json(port, "POST", "/v1/system-symbols", NULL, zbytes, zlen, &status, NULL);
    json_t *set = json_object_get(j, "set");
    CHECK(status == 201 && json_integer_value(json_object_get(j, "stored")) == 1 &&
              json_integer_value(json_object_get(j, "files")) == 1 &&
              strcmp(json_string_value(json_object_get(set, "os_name")), "tvOS") == 0 &&
              strcmp(json_string_value(json_object_get(set, "os_build")), "18J386") == 0 &&
              strcmp(json_string_value(json_object_get(set, "model")), "AppleTV11,1") == 0,
          "zip import: %d", status);
    json_decref(j);
    j = http_json(port, "POST", "/v1/system-symbols", NULL, zbytes, zlen, &status, NULL);
    CHECK(status == 200 && json_integer_value(json_object_get(j, "stored")) == 0 &&
              json_integer_value(json_object_get(j, "skipped")) == 1,
          "the zip again stores nothing: %d", status);
    json_decref(j);
    free(zbytes);

    int n = 0, agree = agree_with_llvm(port, dir, &n);
    printf("    %d/%d sampled addresses of the imported trees agree with llvm-symbolizer\n",
           agree, n);
    CHECK(agree == n, "%d of %d agree", agree, n);
}

TEST(e2e_import_deleting_a_set_keeps_a_users_upload)
{
    const char *dir = devsupport_dir();
    if (!dir)
        return;
    int port = lazy_port(&isrv);
    char watch[64], mac[64];
    uuid_of_file(dir, "libds_watch.dylib", watch);
    uuid_of_file(dir, "libds_mac.dylib", mac);
    int status;
    json_t *list = http_json(port, "GET", "/v1/system-symbols", NULL, NULL, 0, &status, NULL);
    json_int_t watch_set = json_integer_value(json_object_get(set_of(list, "18R382"), "id"));
    json_int_t mac_set = json_integer_value(json_object_get(set_of(list, "20A2411"), "id"));
    json_decref(list);
    CHECK(watch_set > 0 && mac_set > 0, "the sets of the first test are here");
    /* The user uploads the watchOS library too: it is theirs now. */
    char rel[1200];
    snprintf(rel, sizeof rel, "%s/bin/libds_watch-arm64.dylib", dir);
    size_t len;
    uint8_t *b = read_file(rel, &len);
    json_t *j = http_json(port, "POST", "/v1/images", NULL, b, len, &status, NULL);
    CHECK(status == 200, "the user's upload of a stored image: %d", status);
    json_decref(j);
    free(b);
    char path[128];
    snprintf(path, sizeof path, "/v1/system-symbols/%lld", (long long)watch_set);
    j = http_json(port, "DELETE", path, NULL, NULL, 0, &status, NULL);
    CHECK(status == 200 && json_integer_value(json_object_get(j, "images_deleted")) == 0,
          "delete the watchOS set: %d", status);
    json_decref(j);
    j = http_json(port, "DELETE", path, NULL, NULL, 0, &status, NULL);
    CHECK(status == 404, "deleted already: %d", status);
    json_decref(j);
    uint64_t text;
    CHECK(text_vmaddr(port, watch, "arm64", &text), "the user's upload stays");
    snprintf(path, sizeof path, "/v1/system-symbols/%lld", (long long)mac_set);
    j = http_json(port, "DELETE", path, NULL, NULL, 0, &status, NULL);
    CHECK(status == 200 && json_integer_value(json_object_get(j, "images_deleted")) == 1,
          "delete the macOS set: %d", status);
    json_decref(j);
    CHECK(!text_vmaddr(port, mac, "x86_64", &text), "its image is gone");
    json_t *f = symbolicate(port, mac, "x86_64", 0, 0x1000);
    const char *st = json_string_value(json_object_get(f, "status"));
    CHECK(st && strcmp(st, "symbolicated") != 0, "no longer symbolicated (cache too): %s",
          st ? st : "?");
    json_decref(f);
}

/* A crash report (the bigapp twin, its libsystem_kernel made the imported
 * libsystem_dscore) whose system frames come back named. */
TEST(e2e_import_system_frames_of_a_crash_come_back_named)
{
    const char *dir = devsupport_dir();
    if (!dir)
        return;
    int port = lazy_port(&isrv);
    char core[64];
    uuid_of_file(dir, "libsystem_dscore.dylib", core);
    size_t len;
    char *text = (char *)read_fixture("fixtures/crashes/bigapp-twin.ips", &len);
    if (!text)
        return;
    char *nl = strchr(text, '\n');
    json_error_t je;
    json_t *body = nl ? json_loads(nl + 1, 0, &je) : NULL;
    CHECK(body, "the twin's body reads as JSON");
    if (!body) {
        free(text);
        return;
    }
    json_t *imgs = json_object_get(body, "usedImages");
    size_t kernel = 0;
    for (size_t i = 0; i < json_array_size(imgs); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(imgs, i), "name")),
                   "libsystem_kernel.dylib") == 0)
            kernel = i;
    CHECK(kernel > 0, "the twin uses libsystem_kernel");
    json_t *im = json_array_get(imgs, kernel);
    for (char *p = core; *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
    json_object_set_new(im, "uuid", json_string(core));
    json_object_set_new(im, "arch", json_string("arm64"));
    json_object_set_new(im, "name", json_string("libsystem_dscore.dylib"));
    json_object_set_new(im, "path", json_string("/usr/lib/system/libsystem_dscore.dylib"));
    /* Its frames at ds_core_open + 32 and ds_core_mix + 4 (expected.tsv). */
    static const struct {
        json_int_t off;
        const char *fn;
        int sym_off;
    } at[2] = {{0x4020, "ds_core_open", 32}, {0x4048, "ds_core_mix", 4}};
    size_t moved = 0;
    json_t *threads = json_object_get(body, "threads");
    for (size_t t = 0; t < json_array_size(threads); t++) {
        json_t *frames = json_object_get(json_array_get(threads, t), "frames");
        for (size_t k = 0; k < json_array_size(frames); k++) {
            json_t *f = json_array_get(frames, k);
            if (json_integer_value(json_object_get(f, "imageIndex")) != (json_int_t)kernel)
                continue;
            json_object_set_new(f, "imageOffset", json_integer(at[moved % 2].off));
            json_object_del(f, "symbol");
            json_object_del(f, "symbolLocation");
            moved++;
        }
    }
    CHECK(moved >= 1, "frames in the system library: %zu", moved);
    char *dumped = json_dumps(body, JSON_COMPACT);
    size_t hl = (size_t)(nl - text) + 1, dl = strlen(dumped);
    char *report = malloc(hl + dl + 1);
    memcpy(report, text, hl);
    memcpy(report + hl, dumped, dl + 1);
    int status;
    json_t *j = http_json(port, "POST", "/v1/crashes", NULL, report, hl + dl, &status, NULL);
    CHECK(status == 201, "crash stored: %d", status);
    json_int_t id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    char path[64];
    snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)id);
    j = http_json(port, "GET", path, NULL, NULL, 0, &status, NULL);
    CHECK(status == 200, "crash read: %d", status);
    size_t named = 0, seen = 0;
    json_t *th = json_object_get(j, "threads");
    for (size_t t = 0; t < json_array_size(th); t++) {
        json_t *frames = json_object_get(json_array_get(th, t), "frames");
        for (size_t k = 0; k < json_array_size(frames); k++) {
            json_t *f = json_array_get(frames, k);
            const char *img = json_string_value(json_object_get(f, "image"));
            if (!img || strcmp(img, "libsystem_dscore.dylib") != 0)
                continue;
            const char *sym = json_string_value(json_object_get(f, "symbol"));
            json_int_t off = json_integer_value(json_object_get(f, "offset"));
            bool ok = sym && ((strcmp(sym, at[0].fn) == 0 && off == at[0].sym_off) ||
                              (strcmp(sym, at[1].fn) == 0 && off == at[1].sym_off));
            CHECK(ok, "system frame %zu: %s + %lld", k, sym ? sym : "(none)", (long long)off);
            named += ok;
            seen++;
        }
    }
    CHECK(seen == moved && named == seen, "%zu of %zu system frames named (%zu moved)", named,
          seen, moved);
    /* the imported library is the OS's, found; the app's own image is not */
    json_t *ai = json_object_get(j, "images");
    int sys_found = 0, app_sys = 0;
    for (size_t i = 0; i < json_array_size(ai); i++) {
        json_t *e = json_array_get(ai, i);
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (nm && !strcmp(nm, "libsystem_dscore.dylib"))
            sys_found += json_is_true(json_object_get(e, "system")) &&
                         !strcmp(json_string_value(json_object_get(e, "status")), "found");
        app_sys += json_is_true(json_object_get(e, "app")) &&
                   json_is_true(json_object_get(e, "system"));
    }
    CHECK(sys_found == 1 && app_sys == 0, "imported library: system and found (%d), app %d",
          sys_found, app_sys);
    json_decref(j);
    json_decref(body);
    free(dumped);
    free(report);
    free(text);
}

/* The cache's own image table, load commands and symbol tables, read here
 * without the reader (the README's layout: mapping 0 maps file offset 0 at
 * the base). */
typedef struct {
    char uuid[37];
    size_t n;
    char names[8][64];
    uint64_t addrs[8];
} own_image;

static size_t read_own_images(const uint8_t *b, size_t len, own_image *out, size_t max)
{
    uint64_t base = ld_u64le(b + ld_u32le(b + 16)); /* mapping 0's address */
    uint32_t img_off = ld_u32le(b + 24), count = ld_u32le(b + 28);
    size_t n = 0;
    for (uint32_t i = 0; i < count && n < max; i++) {
        uint64_t addr = ld_u64le(b + img_off + 32 * i);
        const uint8_t *h = b + (addr - base);
        own_image *o = &out[n++];
        memset(o, 0, sizeof *o);
        uint32_t ncmds = ld_u32le(h + 16);
        const uint8_t *p = h + 32;
        for (uint32_t k = 0; k < ncmds; k++) {
            uint32_t cmd = ld_u32le(p), cs = ld_u32le(p + 4);
            if (cmd == 0x1b)
                uuid_format(p + 8, o->uuid);
            if (cmd == 0x2) {
                uint32_t symoff = ld_u32le(p + 8), nsyms = ld_u32le(p + 12),
                         stroff = ld_u32le(p + 16);
                for (uint32_t s = 0; s < nsyms && o->n < 8 && symoff + 16 * (s + 1) <= len;
                     s++) {
                    const uint8_t *e = b + symoff + 16 * s;
                    if ((e[4] & 0xe0) || (e[4] & 0x0e) != 0x0e)
                        continue;
                    snprintf(o->names[o->n], 64, "%s",
                             (const char *)b + stroff + ld_u32le(e) + 1);
                    o->addrs[o->n++] = ld_u64le(e + 8);
                }
            }
            p += cs;
        }
    }
    return n;
}

TEST(e2e_import_the_real_dyld_cache)
{
    const char *cd = dyld_cache_dir();
    if (!cd) {
        test_skip("../shared/dyld-cache is not here");
        return;
    }
    const char *db = db_path("e2e-import-cache.db");
    char args[1200], cache[1100];
    int st;
    for (int k = 0; k < 2; k++) { /* the truncated copies: refused, nothing stored */
        const char *name = k ? "dyldcache_read8" : "dyldcache_read4";
        snprintf(args, sizeof args, "'%s/%s'", cd, name);
        char *out = import(db, args, &st);
        CHECK(st == 1 && strstr(out, name) && strstr(out, "header") && strstr(out, "corrupt") &&
                  strstr(out, "0 sets"),
              "%s: %d\n%s", name, st, out);
        free(out);
    }
    CHECK(db_query_int(db, "SELECT count(*) FROM images") == 0 &&
              db_query_int(db, "SELECT count(*) FROM symbol_sets") == 0,
          "nothing of the truncated caches stored");
    snprintf(cache, sizeof cache, "%s/dyld_shared_cache_arm64-macOS", cd);
    snprintf(args, sizeof args, "'%s'", cache);
    char *out = import(db, args, &st);
    CHECK(st == 0 && strstr(out, "1 set: files 1, Mach-O slices 2, stored 2, skipped 0"),
          "cache: %d\n%s", st, out);
    free(out);
    out = import(db, args, &st);
    CHECK(st == 0 && strstr(out, "stored 0, skipped 2"), "again: %d\n%s", st, out);
    free(out);

    size_t len;
    uint8_t *b = read_file(cache, &len);
    if (!b)
        return;
    own_image own[4];
    size_t nimg = read_own_images(b, len, own, 4);
    CHECK(nimg == 2, "two images in the cache's table");
    server_proc srv;
    if (!server_start(&srv, db, NULL))
        return;
    int status;
    json_t *list = http_json(srv.port, "GET", "/v1/system-symbols", NULL, NULL, 0, &status, NULL);
    CHECK(set_is(set_of(list, "857BCE1A-017E-3464-9909-D58EE21CF8DC"), "macOS", "", "arm64", "",
                 2),
          "the cache's set: macOS (its platform), its UUID for a build, arm64");
    json_decref(list);
    size_t checked = 0;
    for (size_t i = 0; i < nimg; i++) {
        uint64_t text;
        CHECK(text_vmaddr(srv.port, own[i].uuid, "arm64", &text), "%s stored", own[i].uuid);
        for (size_t s = 0; s < own[i].n; s++)
            for (uint64_t d = 0; d <= 4; d += 4) {
                json_t *f = symbolicate(srv.port, own[i].uuid, "arm64", text, own[i].addrs[s] + d);
                const char *sym = json_string_value(json_object_get(f, "symbol"));
                json_int_t off = json_integer_value(json_object_get(f, "offset"));
                CHECK(sym && strcmp(sym, own[i].names[s]) == 0 && off == (json_int_t)d,
                      "%s 0x%llx: want %s+%llu, got %s+%lld", own[i].uuid,
                      (unsigned long long)(own[i].addrs[s] + d), own[i].names[s],
                      (unsigned long long)d, sym ? sym : "?", (long long)off);
                checked++;
                json_decref(f);
            }
    }
    CHECK(checked == 6, "the cache's 3 symbols, twice each: %zu", checked);
    CHECK(server_stop(&srv), "server exits 0");
    free(b);
}

/* Swift names end to end: the Swift-named fixture (fixtures/bin/swifty-arm64
 * and its dSYM, src/swifty.c) through /v1/symbolicate, crash reports, groups
 * and the text rendering, in both styles; and real Xcode-built Swift
 * binaries from npm (fixtures/fetch-swift.sh) symbol by symbol. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../demangle/demangle.h"
#include "../util/hex.h"
#include "fixture_util.h"
#include "harness.h"
#include "test.h"

#define LOAD 0x1022c4000ull /* where the fixture crashes load swifty-arm64 */
#define SWIFTY_UUID "4C4C4420-5555-3144-A1AE-5EE30CB351F6"

static lazy_server ssrv = {"e2e-swift.db", NULL, {0}, false};

__attribute__((destructor)) static void stop_swift_server(void)
{
    lazy_stop(&ssrv);
}

/* The fixture's names: raw (as the symbol table has them, one '_' off), the
 * simplified form (issue 11 quotes the first two from Xcode) and the full
 * form (swift-demangle's). */
static const struct {
    const char *raw, *simplified, *full;
} NAMES[] = {
    {"$s15iOSCrashingTest10CrashClassC06pleaseC0yyFZTf4d_n",
     "specialized static CrashClass.pleaseCrash()",
     "function signature specialization <Arg[0] = Dead> of static "
     "iOSCrashingTest.CrashClass.pleaseCrash() -> ()"},
    {"$s13AnotherTarget13CrashingClassC5crashyyFZTo", "@objc static CrashingClass.crash()",
     "@objc static AnotherTarget.CrashingClass.crash() -> ()"},
    {"$s6Swifty11ContentViewV4bodyQrvg", "ContentView.body.getter",
     "Swifty.ContentView.body.getter : some"},
    {"$s6Swifty5ModelC4loadyySSKFyycfU_", "closure #1 in Model.load(_:)",
     "closure #1 () -> () in Swifty.Model.load(Swift.String) throws -> ()"},
    {"$s6Swifty5clamp_2lo2hiS2i_S2itF", "clamp(_:lo:hi:)",
     "Swifty.clamp(_: Swift.Int, lo: Swift.Int, hi: Swift.Int) -> Swift.Int"},
    {"main", "main", "main"},
};

/* The fixture's row for a raw name (the dSYM's linkage names keep the
 * symbol's '_'; the symbol table's lose it). */
static int name_index(const char *raw)
{
    if (!raw)
        return -1;
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strcmp(raw, NAMES[i].raw) == 0 || (raw[0] == '_' && strcmp(raw + 1, NAMES[i].raw) == 0))
            return (int)i;
    return -1;
}

static json_t *request(const char *method, const char *path, const char *headers,
                       const void *body, size_t len, int *status, char **text)
{
    return http_json(lazy_port(&ssrv), method, path, headers, body, len, status, text);
}

static json_t *post_file(const char *rel, const char *url, int *status)
{
    return http_post_fixture(lazy_port(&ssrv), rel, url, status);
}

static void upload_swifty(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    int status;
    json_decref(post_file("fixtures/bin/swifty-arm64", "/v1/images?name=swifty-arm64", &status));
    CHECK(status == 201, "upload swifty-arm64: %d", status);
    json_decref(post_file("fixtures/dsym/swifty-arm64.dSYM/Contents/Resources/DWARF/swifty-arm64",
                          "/v1/images?name=swifty-arm64", &status));
    CHECK(status == 201, "upload the dSYM: %d", status);
}

static const char *sget(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* Whether a frame of any thread of a crash answer shows symbol. */
static bool has_symbol(json_t *ans, const char *symbol)
{
    json_t *th = json_object_get(ans, "threads");
    for (size_t i = 0; i < json_array_size(th); i++) {
        json_t *fr = json_object_get(json_array_get(th, i), "frames");
        for (size_t k = 0; k < json_array_size(fr); k++)
            if (strcmp(sget(json_array_get(fr, k), "symbol"), symbol) == 0)
                return true;
    }
    return false;
}

/* Every instruction of swifty-arm64, every inlined level, as
 * llvm-symbolizer answers through the dSYM (expected/swifty-arm64.dsym.lines.tsv):
 * "mangled" is the raw name, "symbol" the simplified form by default and
 * the full form with ?demangle=full, file and line as llvm-symbolizer's. */
TEST(e2e_swift_symbolicate_every_instruction_both_styles)
{
    upload_swifty();
    tsv_row rows[1024];
    char *buf = NULL;
    int n = load_tsv("fixtures/expected/swifty-arm64.dsym.lines.tsv", rows, 1024, &buf);
    CHECK(n > 50, "expected rows: %d", n);
    if (n <= 0)
        return;
    size_t cap = 256 + (size_t)n * 24, at;
    char *req = malloc(cap);
    at = (size_t)snprintf(req, cap,
                          "{\"adjust\":\"none\",\"images\":[{\"uuid\":\"" SWIFTY_UUID
                          "\",\"arch\":\"arm64\",\"load_address\":\"0x%llx\"}],"
                          "\"threads\":[{\"frames\":[",
                          LOAD);
    int naddr = 0;
    for (int i = 0; i < n; i++) {
        if (i && strcmp(rows[i].f[0], rows[i - 1].f[0]) == 0)
            continue;
        uint64_t a;
        hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &a);
        at += (size_t)snprintf(req + at, cap - at, "%s\"0x%llx\"", naddr++ ? "," : "",
                               (unsigned long long)(a - 0x100000000ull + LOAD));
    }
    snprintf(req + at, cap - at, "]}]}");
    static const char *const paths[] = {"/v1/symbolicate", "/v1/symbolicate?demangle=simplified",
                                        "/v1/symbolicate?demangle=full"};
    for (int style = 0; style < 3; style++) {
        int status, agree = 0;
        json_t *j = request("POST", paths[style], NULL, req, strlen(req), &status, NULL);
        CHECK(status == 200, "%s: %d", paths[style], status);
        json_t *fr = json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames");
        CHECK(json_array_size(fr) == (size_t)n, "%s: %zu frames for %d rows", paths[style],
              json_array_size(fr), n);
        for (int i = 0; i < n && (size_t)i < json_array_size(fr); i++) {
            json_t *f = json_array_get(fr, (size_t)i);
            int k = name_index(rows[i].f[2]);
            const char *mangled = sget(f, "mangled"), *sym = sget(f, "symbol");
            const char *want = k < 0 ? "?" : style == 2 ? NAMES[k].full : NAMES[k].simplified;
            bool ok = k >= 0 && name_index(mangled) == k && strcmp(sym, want) == 0 &&
                      strcmp(sget(f, "file"), rows[i].f[3]) == 0 &&
                      json_integer_value(json_object_get(f, "line")) == atoi(rows[i].f[4]);
            agree += ok;
            CHECK(ok, "%s %s level %s: %s (%s) %s:%lld, want %s (%s) %s:%s", paths[style],
                  rows[i].f[0], rows[i].f[1], sym, mangled, sget(f, "file"),
                  (long long)json_integer_value(json_object_get(f, "line")), want, rows[i].f[2],
                  rows[i].f[3], rows[i].f[4]);
        }
        printf("    %s: %d/%d frames as expected\n", paths[style], agree, n);
        json_decref(j);
    }
    int status;
    json_t *j = request("POST", "/v1/symbolicate?demangle=pretty", NULL, req, strlen(req), &status,
                        NULL);
    CHECK(status == 400 && strcmp(sget(json_object_get(j, "error"), "code"), "invalid_request") == 0,
          "demangle=pretty: %d", status);
    json_decref(j);
    free(req);
    free(buf);
}

/* The fixture crash (fixtures/crashes/swifty-twin.*) as text and .ips:
 * frames show the simplified form, "mangled" stays raw; the signature and
 * its group are keyed by the simplified form; the text rendering rewrites
 * the frame lines with it; ?demangle=full answers the full form but the
 * stored crash and its signature do not change. */
TEST(e2e_swift_crash_reports_signatures_and_text)
{
    upload_swifty();
    tsv_row rows[16];
    char *buf = NULL;
    int n = load_tsv("fixtures/crashes/swifty.expected.tsv", rows, 16, &buf);
    CHECK(n == 4, "swifty.expected.tsv: %d rows", n);
    static const char *const files[] = {"fixtures/crashes/swifty-twin.crash",
                                        "fixtures/crashes/swifty-twin.ips"};
    char *signature[2] = {NULL, NULL};
    for (int t = 0; t < 2; t++) {
        int status;
        json_t *j = post_file(files[t], "/v1/crashes", &status);
        CHECK(status == 201, "%s: %d", files[t], status);
        json_int_t id = json_integer_value(json_object_get(j, "id"));
        signature[t] = strdup(sget(j, "signature"));
        CHECK(strstr(signature[t], "specialized static CrashClass.pleaseCrash()") &&
                  !strstr(signature[t], "$s"),
              "%s: signature %s", files[t], signature[t]);
        json_t *th = json_object_get(j, "threads"), *crashed = NULL;
        for (size_t i = 0; i < json_array_size(th); i++)
            if (json_is_true(json_object_get(json_array_get(th, i), "crashed")))
                crashed = json_array_get(th, i);
        json_t *fr = json_object_get(crashed, "frames");
        for (int i = 0; i < n && (size_t)i < json_array_size(fr); i++) {
            json_t *f = json_array_get(fr, (size_t)i);
            if (strcmp(rows[i].f[6], "symbolicated") != 0) {
                CHECK(strcmp(sget(f, "status"), "missing_image") == 0, "%s frame %d: %s",
                      files[t], i, sget(f, "status"));
                continue;
            }
            int k = name_index(rows[i].f[7]);
            CHECK(k >= 0 && strcmp(sget(f, "symbol"), NAMES[k].simplified) == 0 &&
                      name_index(sget(f, "mangled")) == k &&
                      json_integer_value(json_object_get(f, "offset")) == atoi(rows[i].f[8]),
                  "%s frame %d: %s (%s) + %lld", files[t], i, sget(f, "symbol"),
                  sget(f, "mangled"), (long long)json_integer_value(json_object_get(f, "offset")));
        }
        json_decref(j);

        /* the text rendering */
        char path[96], *text = NULL;
        snprintf(path, sizeof path, "/v1/crashes/%lld?format=text", (long long)id);
        request("GET", path, NULL, NULL, 0, &status, &text);
        CHECK(status == 200 &&
                  strstr(text, "specialized static CrashClass.pleaseCrash() + 16 (swifty.c:39)\n") &&
                  strstr(text, "@objc static CrashingClass.crash() + 28 (swifty.c:45)\n") &&
                  strstr(text, "closure #1 in Model.load(_:) + 60 (swifty.c:61)\n") &&
                  strstr(text, "clamp(_:lo:hi:) (swifty.c:31)\n") &&
                  strstr(text, "ContentView.body.getter + 20 (swifty.c:51)\n") && !strstr(text, "$s"),
              "%s text (%d):\n%s", files[t], status, text);
        free(text);

        /* the full form on request, for the answer only */
        j = post_file(files[t], "/v1/crashes?store=false&demangle=full", &status);
        CHECK(status == 200 && strcmp(sget(j, "signature"), signature[t]) == 0,
              "%s full: %d, signature %s", files[t], status, sget(j, "signature"));
        CHECK(has_symbol(j, NAMES[0].full) && !has_symbol(j, NAMES[0].simplified),
              "%s: not in the full form", files[t]);
        json_decref(j);
        snprintf(path, sizeof path, "/v1/crashes/%lld?demangle=full", (long long)id);
        j = request("GET", path, NULL, NULL, 0, &status, NULL);
        CHECK(status == 200 && has_symbol(j, NAMES[0].full), "GET %s: %d", path, status);
        json_decref(j);
        snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)id);
        j = request("GET", path, NULL, NULL, 0, &status, NULL);
        CHECK(status == 200 && has_symbol(j, NAMES[0].simplified), "GET %s: %d", path, status);
        json_decref(j);
    }
    CHECK(signature[0] && signature[1] && strcmp(signature[0], signature[1]) == 0,
          "the twins' signatures differ: %s / %s", signature[0], signature[1]);
    int status;
    json_t *j = request("GET", "/v1/crashes/groups", NULL, NULL, 0, &status, NULL);
    json_t *g = json_object_get(j, "groups");
    json_int_t count = 0;
    for (size_t i = 0; i < json_array_size(g); i++)
        if (strcmp(sget(json_array_get(g, i), "signature"), signature[0]) == 0)
            count = json_integer_value(json_object_get(json_array_get(g, i), "count"));
    CHECK(status == 200 && count == 2, "the group of %s counts %lld", signature[0],
          (long long)count);
    json_decref(j);
    free(signature[0]);
    free(signature[1]);
    free(buf);
}

/* Real Swift binaries built by Xcode (npm; fixtures/fetch-swift.sh): every
 * function symbol of every slice, asked at its address. "mangled" is the
 * symbol llvm-nm lists there, "symbol" its simplified form; nearly every
 * Swift name has one (the rate is printed; the ones left raw are listed). */
TEST(e2e_swift_real_binaries_every_function)
{
    static const char *const bins[] = {"aperture", "file-icon", "get-windows"};
    char rel[256];
    snprintf(rel, sizeof rel, "fixtures/.cache/swift/%s.uuid", bins[0]);
    size_t l;
    uint8_t *probe = read_file(root_path(rel), &l);
    if (!probe) {
        test_skip("no real Swift binaries: run bash fixtures/fetch-swift.sh");
        return;
    }
    free(probe);
    long swift_names = 0, shown = 0, frames = 0;
    for (size_t b = 0; b < sizeof bins / sizeof bins[0]; b++) {
        snprintf(rel, sizeof rel, "fixtures/.cache/swift/%s", bins[b]);
        char url[128];
        snprintf(url, sizeof url, "/v1/images?name=%s", bins[b]);
        int status;
        json_decref(post_file(rel, url, &status));
        CHECK(status == 201, "upload %s: %d", bins[b], status);
        fixture_slice sl[4];
        snprintf(rel, sizeof rel, "fixtures/.cache/swift/%s.uuid", bins[b]);
        int ns = load_uuids(rel, sl, 4);
        CHECK(ns == 2, "%s: %d slices", bins[b], ns);
        for (int s = 0; s < ns; s++) {
            enum { MAX = 16384 };
            nm_sym *syms = malloc(MAX * sizeof *syms);
            snprintf(rel, sizeof rel, "fixtures/.cache/swift/%s.%s.nm", bins[b], sl[s].arch);
            int nsym = load_nm_functions(rel, syms, MAX);
            CHECK(nsym > 50, "%s: %d functions", rel, nsym);
            size_t cap = 256 + (size_t)(nsym > 0 ? nsym : 0) * 24, at;
            char *req = malloc(cap);
            at = (size_t)snprintf(req, cap,
                                  "{\"adjust\":\"none\",\"images\":[{\"uuid\":\"%s\",\"arch\":"
                                  "\"%s\",\"load_address\":\"0x100000000\"}],\"threads\":"
                                  "[{\"frames\":[",
                                  sl[s].uuid, sl[s].arch);
            for (int i = 0; i < nsym; i++)
                at += (size_t)snprintf(req + at, cap - at, "%s\"0x%llx\"", i ? "," : "",
                                       (unsigned long long)syms[i].addr);
            snprintf(req + at, cap - at, "]}]}");
            json_t *j = request("POST", "/v1/symbolicate", NULL, req, strlen(req), &status, NULL);
            CHECK(status == 200, "%s %s: %d", bins[b], sl[s].arch, status);
            json_t *fr = json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames");
            CHECK(json_array_size(fr) == (size_t)nsym, "%s %s: %zu frames for %d", bins[b],
                  sl[s].arch, json_array_size(fr), nsym);
            int listed = 0;
            for (int i = 0; i < nsym && (size_t)i < json_array_size(fr); i++) {
                json_t *f = json_array_get(fr, (size_t)i);
                const char *mangled = sget(f, "mangled"), *sym = sget(f, "symbol");
                /* several names may share the address: any of them */
                bool named = false;
                for (int k = i; k >= 0 && syms[k].addr == syms[i].addr && !named; k--)
                    named = strcmp(syms[k].name, mangled) == 0;
                for (int k = i + 1; k < nsym && syms[k].addr == syms[i].addr && !named; k++)
                    named = strcmp(syms[k].name, mangled) == 0;
                char *want = symd_demangle(mangled);
                CHECK(named && json_integer_value(json_object_get(f, "offset")) == 0 &&
                          strcmp(sym, want ? want : mangled) == 0,
                      "%s %s 0x%llx: %s (%s), nm says %s", bins[b], sl[s].arch,
                      (unsigned long long)syms[i].addr, sym, mangled, syms[i].name);
                if (symd_is_swift(mangled)) {
                    swift_names++;
                    shown += want != NULL;
                    if (!want && listed++ < 5)
                        printf("    left raw: %s\n", mangled);
                }
                free(want);
                frames++;
            }
            json_decref(j);
            free(req);
            free(syms);
        }
    }
    printf("    %ld functions asked; %ld Swift names, %ld shown demangled (%.2f%%)\n", frames,
           swift_names, shown, swift_names ? 100.0 * (double)shown / (double)swift_names : 0.0);
    CHECK(swift_names > 5000 && shown * 1000 >= swift_names * 995,
          "only %ld of %ld Swift names demangled", shown, swift_names);
}

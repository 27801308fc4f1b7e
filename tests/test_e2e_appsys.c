/* End-to-end, on a server of their own: the app's images and the OS's.
 * Every real report of ../shared (real-crashes, real-reports) is posted:
 * each image of each answer says "system" as the report read here says
 * (crash_classify_images), /v1/missing says the same of every image the
 * crashes need, lists the app's (dSYMs to upload, with the app version) and
 * counts the OS's by OS build and arch, and a crash of an OS process asks
 * for no upload. The generated twins: the app's images, once uploaded, leave
 * the app's list while the OS's stay grouped under their build; a frame the
 * device named keeps that name beside the stored image's answer. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../parser/crash.h"
#include "../server/crashsym.h"
#include "../util/hex.h"
#include "harness.h"
#include "test.h"

static lazy_server asrv = {"e2e-appsys.db", NULL, {0}, false};
static lazy_server tsrv = {"e2e-appsys-twins.db", NULL, {0}, false};

__attribute__((destructor)) static void stop_appsys_servers(void)
{
    lazy_stop(&asrv);
    lazy_stop(&tsrv);
}

static const char *sget(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* What the reports say of one needed (UUID, arch): system once any says so. */
typedef struct {
    char key[64]; /* "UUID/arch" */
    bool system, app;
} need;

#define MAX_NEEDS 4096
#define MAX_OS 128

typedef struct {
    need needs[MAX_NEEDS];
    size_t nneeds;
    char os[MAX_OS][128]; /* the reports' os_version */
    size_t nos;
    int reports, images, system, answers_checked, os_process, os_process_no_upload;
    int64_t os_ids[64]; /* crashes of an OS process (their app image the OS's) */
    size_t nos_ids;
} ctx_t;

static need *need_of(ctx_t *c, const char *key)
{
    for (size_t i = 0; i < c->nneeds; i++)
        if (!strcmp(c->needs[i].key, key))
            return &c->needs[i];
    if (c->nneeds == MAX_NEEDS)
        return NULL;
    need *n = &c->needs[c->nneeds++];
    snprintf(n->key, sizeof n->key, "%s", key);
    n->system = n->app = false;
    return n;
}

/* Whether docs/openapi.yaml names key as a property (a line "<blanks>key:"). */
static bool documented(const char *key)
{
    static uint8_t *doc;
    static size_t len;
    if (!doc && !(doc = read_fixture("docs/openapi.yaml", &len)))
        return false;
    size_t kl = strlen(key);
    for (const char *p = (const char *)doc; (p = strstr(p, key)); p += kl) {
        const char *b = p;
        while (b > (const char *)doc && b[-1] == ' ')
            b--;
        if ((b == (const char *)doc || b[-1] == '\n') && b < p && p[kl] == ':')
            return true;
    }
    return false;
}

/* Every key of every object of arr is documented. */
static void keys_documented(json_t *arr, const char *what)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *k;
        json_t *v;
        json_object_foreach(json_array_get(arr, i), k, v)
            CHECK(documented(k), "%s: key \"%s\" is not in docs/openapi.yaml", what, k);
    }
}

/* One answer (a crash) against the report r read here. */
static void check_answer(ctx_t *c, const char *name, json_t *ans, const crash_report *r)
{
    json_t *imgs = json_object_get(ans, "images");
    CHECK(json_array_size(imgs) == r->nimages, "%s: %zu images in the answer, %zu read", name,
          json_array_size(imgs), r->nimages);
    for (size_t i = 0; i < json_array_size(imgs) && i < r->nimages; i++) {
        json_t *im = json_array_get(imgs, i);
        json_t *sys = json_object_get(im, "system");
        CHECK(json_is_boolean(sys) && json_is_boolean(json_object_get(im, "app")),
              "%s image %zu: no system/app booleans", name, i);
        CHECK(json_is_true(sys) == r->images[i].system, "%s image %zu (%s): system %d, read %d",
              name, i, sget(im, "name"), json_is_true(sys), r->images[i].system);
        c->images++;
        c->system += json_is_true(sys);
    }
    if (c->answers_checked == 0)
        keys_documented(imgs, "images[]");
    /* what the crash needs, as the store counts it */
    size_t n;
    store_crash_image *v = crash_needed_images(r, NULL, &n);
    for (size_t i = 0; v && i < n; i++) {
        char u[37], key[64];
        uuid_format(v[i].uuid, u);
        snprintf(key, sizeof key, "%s/%s", u, v[i].arch);
        need *nd = need_of(c, key);
        if (nd) {
            nd->system |= v[i].system;
            nd->app |= v[i].app;
        }
    }
    free(v);
    if (r->os_version && *r->os_version && c->nos < MAX_OS) {
        bool seen = false;
        for (size_t i = 0; i < c->nos && !seen; i++)
            seen = !strcmp(c->os[i], r->os_version);
        if (!seen)
            snprintf(c->os[c->nos++], sizeof c->os[0], "%s", r->os_version);
    }
    long app = crash_app_image(r);
    json_int_t id = json_integer_value(json_object_get(ans, "id"));
    if (app >= 0 && r->images[app].system && r->images[app].has_uuid && id > 0 &&
        c->nos_ids < 64)
        c->os_ids[c->nos_ids++] = id;
    c->answers_checked++;
}

static void post_one(const char *name, const uint8_t *buf, size_t len, void *vc)
{
    ctx_t *c = vc;
    int status;
    json_t *j = http_json(lazy_port(&asrv), "POST", "/v1/crashes", NULL, buf, len, &status, NULL);
    CHECK(status == 201, "%s: %d", name, status);
    json_t *parts = json_object_get(j, "reports");
    size_t np = parts ? json_array_size(parts) : 1;
    for (size_t p = 0; j && p < np; p++) {
        json_t *ans = parts ? json_array_get(parts, p) : j;
        crash_report r;
        symd_err err = {0};
        if (crash_parse_part(buf, len, p, &r, &err) != SYMD_OK) {
            CHECK(false, "%s part %zu: %s", name, p, err.msg);
            continue;
        }
        check_answer(c, name, ans, &r);
        crash_report_free(&r);
        c->reports++;
    }
    json_decref(j);
}

TEST(e2e_appsys_real_reports_tell_app_from_system)
{
    ctx_t *c = calloc(1, sizeof *c);
    if (!c)
        return;
    if (!each_real_report(post_one, c)) {
        test_skip("no ../shared/real-reports or real-crashes");
        free(c);
        return;
    }
    int status;
    json_t *j = http_json(lazy_port(&asrv), "GET", "/v1/missing?limit=1000", NULL, NULL, 0,
                          &status, NULL);
    json_t *miss = json_object_get(j, "missing"), *app = json_object_get(j, "app"),
           *sys = json_object_get(j, "system");
    CHECK(status == 200 && json_is_array(miss) && json_is_array(app) && json_is_array(sys),
          "/v1/missing: %d", status);
    /* every needed image once, saying what the reports say */
    size_t nsys = 0, nmiss = json_array_size(miss);
    CHECK(nmiss == c->nneeds && nmiss < 1000, "%zu missing, %zu needed", nmiss, c->nneeds);
    for (size_t i = 0; i < nmiss; i++) {
        json_t *m = json_array_get(miss, i);
        char key[64];
        snprintf(key, sizeof key, "%s/%s", sget(m, "uuid"), sget(m, "arch"));
        need *nd = need_of(c, key);
        CHECK(nd && json_is_boolean(json_object_get(m, "system")) &&
                  json_is_true(json_object_get(m, "system")) == nd->system,
              "missing %s: system %d, the reports say %d", key,
              json_is_true(json_object_get(m, "system")), nd ? nd->system : -1);
        nsys += json_is_true(json_object_get(m, "system"));
    }
    /* the app's: every image not the OS's, the apps among them */
    size_t napp = json_array_size(app), apps = 0, want_apps = 0;
    CHECK(napp + nsys == nmiss, "%zu of the app's + %zu of the OS's, %zu missing", napp, nsys,
          nmiss);
    for (size_t i = 0; i < napp; i++) {
        json_t *m = json_array_get(app, i);
        char key[64];
        snprintf(key, sizeof key, "%s/%s", sget(m, "uuid"), sget(m, "arch"));
        need *nd = need_of(c, key);
        CHECK(json_is_false(json_object_get(m, "system")) &&
                  json_is_boolean(json_object_get(m, "app")) &&
                  (json_is_null(json_object_get(m, "app_version")) ||
                   json_is_string(json_object_get(m, "app_version"))),
              "app entry %s", key);
        /* an app image of some crash; the newest crash needing it says so */
        if (json_is_true(json_object_get(m, "app")))
            CHECK(nd && nd->app, "%s: marked app, no report's app image", key);
        apps += json_is_true(json_object_get(m, "app"));
    }
    for (size_t i = 0; i < c->nneeds; i++)
        want_apps += c->needs[i].app;
    CHECK(apps == want_apps, "%zu apps in the app's list, %zu app images needed", apps,
          want_apps);
    /* the OS's, by build: every one counted once, under a build a report names */
    json_int_t counted = 0;
    for (size_t i = 0; i < json_array_size(sys); i++) {
        json_t *g = json_array_get(sys, i);
        counted += json_integer_value(json_object_get(g, "count"));
        json_t *os = json_object_get(g, "os_version");
        bool known = json_is_null(os);
        for (size_t k = 0; k < c->nos && !known; k++)
            known = !strcmp(c->os[k], json_string_value(os));
        CHECK(known && json_integer_value(json_object_get(g, "count")) > 0 &&
                  strstr(sget(g, "hint"), "symd import"),
              "system group %zu: '%s'", i, sget(g, "os_version"));
    }
    CHECK(counted == (json_int_t)nsys, "groups count %lld of %zu system images",
          (long long)counted, nsys);
    keys_documented(miss, "missing[]");
    keys_documented(app, "app[]");
    keys_documented(sys, "system[]");
    /* a crash of an OS process (ReportCrash, itunescloudd...) asks for no upload */
    json_t *list = http_json(lazy_port(&asrv), "GET", "/v1/crashes?limit=1000", NULL, NULL, 0,
                             &status, NULL);
    json_t *crashes = json_object_get(list, "crashes");
    int os_checked = 0;
    for (size_t i = 0; i < json_array_size(crashes); i++) {
        json_t *cr = json_array_get(crashes, i);
        json_int_t id = json_integer_value(json_object_get(cr, "id"));
        for (size_t k = 0; k < c->nos_ids; k++)
            if (c->os_ids[k] == id) {
                CHECK(json_is_null(json_object_get(cr, "needs_upload")),
                      "crash %lld of an OS process: needs_upload", (long long)id);
                os_checked++;
            }
    }
    CHECK(os_checked == (int)c->nos_ids && c->nos_ids >= 8, "%d of %zu OS processes' crashes",
          os_checked, c->nos_ids);
    printf("    %d reports posted: %d images answered (%d the OS's); /v1/missing: %zu images, "
           "%zu the app's (%zu apps), %zu the OS's in %zu builds\n",
           c->reports, c->images, c->system, nmiss, napp, apps, nsys, json_array_size(sys));
    CHECK(c->reports >= 56 && nsys > napp / 2 && json_array_size(sys) >= 20,
          "%d reports, %zu system images", c->reports, nsys);
    json_decref(list);
    json_decref(j);
    free(c);
}

/* The answer's image named name; NULL when none. */
static json_t *image_named(json_t *ans, const char *name)
{
    json_t *imgs = json_object_get(ans, "images");
    for (size_t i = 0; i < json_array_size(imgs); i++)
        if (!strcmp(sget(json_array_get(imgs, i), "name"), name))
            return json_array_get(imgs, i);
    return NULL;
}

/* /v1/missing of the twins' server. */
static json_t *twins_missing(void)
{
    int status;
    json_t *j = http_json(lazy_port(&tsrv), "GET", "/v1/missing", NULL, NULL, 0, &status, NULL);
    CHECK(status == 200, "/v1/missing: %d", status);
    return j;
}

/* The first frame of an answer at address addr ("0x..."); NULL when none. */
static json_t *frame_at(json_t *ans, const char *addr)
{
    json_t *th = json_object_get(ans, "threads");
    for (size_t t = 0; t < json_array_size(th); t++) {
        json_t *fr = json_object_get(json_array_get(th, t), "frames");
        for (size_t f = 0; f < json_array_size(fr); f++)
            if (!strcmp(sget(json_array_get(fr, f), "address"), addr))
                return json_array_get(fr, f);
    }
    return NULL;
}

TEST(e2e_appsys_twins_upload_the_app_import_the_os)
{
    static const char *const twins[] = {"fixtures/crashes/bigapp-twin.crash",
                                        "fixtures/crashes/bigapp-twin.ips",
                                        "fixtures/crashes/bigapp-twin.kscrash.json"};
    int status;
    for (size_t i = 0; i < 3; i++) {
        json_t *j = http_post_fixture(lazy_port(&tsrv), twins[i], "/v1/crashes", &status);
        CHECK(status == 201, "%s: %d", twins[i], status);
        json_t *app = image_named(j, "bigapp-arm64"), *fix = image_named(j, "libfix.dylib"),
               *kern = image_named(j, "libsystem_kernel.dylib");
        CHECK(app && json_is_true(json_object_get(app, "app")) &&
                  json_is_false(json_object_get(app, "system")) && fix &&
                  json_is_false(json_object_get(fix, "system")) && kern &&
                  json_is_true(json_object_get(kern, "system")),
              "%s: the app, its framework, the OS's library", twins[i]);
        json_decref(j);
    }
    json_t *m = twins_missing();
    json_t *app = json_object_get(m, "app"), *sys = json_object_get(m, "system");
    bool bigapp = false, libfix = false;
    for (size_t i = 0; i < json_array_size(app); i++) {
        json_t *e = json_array_get(app, i);
        if (!strcmp(sget(e, "name"), "bigapp-arm64"))
            bigapp = json_is_true(json_object_get(e, "app")) &&
                     !strcmp(sget(e, "uuid"), "4C4C4490-5555-3144-A17C-64A339EDE13A") &&
                     !strcmp(sget(e, "arch"), "arm64") && *sget(e, "app_version") &&
                     json_integer_value(json_object_get(e, "crashes")) == 3;
        libfix |= !strcmp(sget(e, "name"), "libfix.dylib") &&
                  json_is_false(json_object_get(e, "app"));
    }
    /* one build, as the newest crash needing it words it: the KSCrash
     * twin's "iOS 15.3 (19D50)" for the device's iPhone OS 15.3 (19D50) */
    json_t *g = json_array_get(sys, 0);
    CHECK(json_array_size(app) == 2 && bigapp && libfix, "the app's: %zu", json_array_size(app));
    CHECK(json_array_size(sys) == 1 &&
              !strcmp(sget(g, "os_version"), "iOS 15.3 (19D50)") &&
              !strcmp(sget(g, "arch"), "arm64e") &&
              json_integer_value(json_object_get(g, "count")) == 1,
          "the OS's: %zu groups, '%s' '%s'", json_array_size(sys), sget(g, "os_version"),
          sget(g, "arch"));
    json_decref(m);

    /* the device named frame 3 of the crashed thread "main" (KSCrash) */
    json_t *k = http_post_fixture(lazy_port(&tsrv), "fixtures/crashes/bigapp-twin.kscrash.json",
                                  "/v1/crashes?store=false", &status);
    json_t *f = frame_at(k, "0x104a38bdc");
    CHECK(f && json_is_true(json_object_get(f, "from_report")) &&
              !strcmp(sget(f, "symbol"), "main") && !strcmp(sget(f, "status"), "missing_image") &&
              !json_object_get(f, "report_symbol"),
          "before the upload: the device's name, from_report");
    json_decref(k);

    static const char *const uploads[] = {
        "fixtures/bin/bigapp-arm64", "fixtures/bin/libfix-arm64.dylib",
        "fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64"};
    for (size_t i = 0; i < 3; i++) {
        json_t *u = http_post_fixture(lazy_port(&tsrv), uploads[i],
                                      "/v1/images?name=bigapp-arm64", &status);
        CHECK(status == 201, "upload %s: %d", uploads[i], status);
        json_decref(u);
    }
    m = twins_missing();
    app = json_object_get(m, "app");
    sys = json_object_get(m, "system");
    CHECK(json_array_size(app) == 0 && json_array_size(sys) == 1 &&
              json_array_size(json_object_get(m, "missing")) == 1 &&
              json_is_true(json_object_get(json_array_get(json_object_get(m, "missing"), 0),
                                           "system")),
          "after the uploads: %zu of the app's, %zu builds of the OS's", json_array_size(app),
          json_array_size(sys));
    json_decref(m);

    /* once stored, the image's answer, the device's name beside it */
    k = http_post_fixture(lazy_port(&tsrv), "fixtures/crashes/bigapp-twin.kscrash.json",
                          "/v1/crashes?store=false", &status);
    f = frame_at(k, "0x104a38bdc");
    CHECK(f && !json_object_get(f, "from_report") &&
              !strcmp(sget(f, "status"), "symbolicated") && !strcmp(sget(f, "symbol"), "main") &&
              !strcmp(sget(f, "file"), "./src/app.c") &&
              !strcmp(sget(f, "report_symbol"), "main") &&
              json_integer_value(json_object_get(f, "report_offset")) == 60,
          "after the upload: the image's answer and report_symbol");
    CHECK(documented("report_symbol") && documented("report_offset"),
          "report_symbol and report_offset documented");
    /* the OS's library still says the device's words */
    f = frame_at(k, "0x1c3e1a334");
    CHECK(!f || (!strcmp(sget(f, "status"), "missing_image") &&
                 !json_object_get(f, "report_symbol")),
          "libsystem_kernel's frame");
    json_decref(k);
}

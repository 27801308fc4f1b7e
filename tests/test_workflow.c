/* A group's workflow (store.h, "a group's workflow"), end to end on the
 * store the run uses (SQLite, or PostgreSQL under SYMD_TEST_PG): the
 * version order, states set over the API and recorded, regressions by the
 * version rules, ignores that end by count and by date, the state and
 * version filters of the listing, the report role's token, states kept
 * through DELETE and retention, and groups of a schema-7 store given their
 * states and versions when it is opened. */
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../store/appversion.h"
#include "harness.h"
#include "test.h"

/* ---- the version order ---- */

TEST(workflow_version_order)
{
    /* each strictly older than the next */
    static const char *const order[] = {
        "", "1.2-rc1", "alpha", "beta", "0", "0.9.9", "1", "1.0.1", "1.2 (3)", "1.2 (10)",
        "1.2 (1a)", "1.2.1", "1.9", "1.10", "2 (1)", "10.0.0.0.0.0.0.1",
        "123456789012345678",
    };
    size_t n = sizeof order / sizeof order[0];
    for (size_t i = 0; i + 1 < n; i++)
        for (size_t j = i + 1; j < n; j++)
            CHECK(app_version_cmp(order[i], order[j]) < 0 &&
                      app_version_cmp(order[j], order[i]) > 0,
                  "'%s' < '%s'", order[i], order[j]);
    /* one version, written several ways */
    static const char *const same[][2] = {
        {"1.2", "1.2.0"}, {"1.2 (3)", " 1.2.0 (3) "}, {"1.2(3)", "1.2 (3)"}, {"01.2", "1.02"},
        {"1.2 (0)", "1.2 (0.0)"}, {"1", "1.0.0.0"},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        CHECK(app_version_cmp(same[i][0], same[i][1]) == 0, "'%s' = '%s'", same[i][0],
              same[i][1]);
    /* a resolution in a version without a build covers its builds */
    char res[APP_VERSION_KEY_MAX], k2[APP_VERSION_KEY_MAX];
    static const char *const under[] = {"2.0", "2.0 (7)", "2 (1a)", "1.99", "beta"};
    static const char *const over[] = {"2.0.1", "2.1 (1)", "10"};
    CHECK(app_version_resolution_key("2.0", res), "a resolution key");
    for (size_t i = 0; i < 5; i++)
        CHECK(app_version_key(under[i], k2) && strcmp(k2, res) <= 0, "'%s' regresses 2.0",
              under[i]);
    for (size_t i = 0; i < 3; i++)
        CHECK(app_version_key(over[i], k2) && strcmp(k2, res) > 0, "'%s' does not regress 2.0",
              over[i]);
    CHECK(app_version_resolution_key("2.0 (7)", res) && app_version_key("2.0 (8)", k2) &&
              strcmp(k2, res) > 0 && app_version_key("2.0 (7)", k2) && strcmp(k2, res) == 0,
          "a resolution in a build");
    /* "new in 1.2": every build of 1.2; first-seen order puts parsed first */
    char lo[APP_VERSION_KEY_MAX], hi[APP_VERSION_KEY_MAX];
    static const char *const in12[] = {"1.2", "1.2.0 (45)", "1.2 (x)"};
    static const char *const out12[] = {"1.2.1", "1.1 (99)", "1.20", "beta"};
    CHECK(app_version_first_range("1.2", lo, hi), "a range");
    for (size_t i = 0; i < 3; i++)
        CHECK(app_version_first_key(in12[i], k2) && strcmp(k2, lo) >= 0 && strcmp(k2, hi) < 0,
              "'%s' is new in 1.2", in12[i]);
    for (size_t i = 0; i < 4; i++)
        CHECK(app_version_first_key(out12[i], k2) && (strcmp(k2, lo) < 0 || strcmp(k2, hi) >= 0),
              "'%s' is not new in 1.2", out12[i]);
    CHECK(app_version_first_range("1.2 (45)", lo, hi) && app_version_first_key("1.2 (46)", k2) &&
              strcmp(k2, hi) >= 0 && app_version_first_key("1.2 (45)", k2) &&
              strcmp(k2, lo) == 0 && strcmp(k2, hi) < 0,
          "new in a build: that build alone");
    CHECK(app_version_first_key("beta", lo) && app_version_first_key("99", hi) &&
              strcmp(lo, hi) > 0,
          "first-seen order: an unparsable version after every parsed one");
    /* no version, and bounds: 9 components or 19 digits do not parse */
    char key[APP_VERSION_KEY_MAX];
    CHECK(!app_version_key(NULL, key) && !app_version_key("  ", key), "no version has no key");
    CHECK(app_version_key("1.2.3.4.5.6.7.8.9", key) && key[0] == '!', "9 components: %s", key);
    CHECK(app_version_key("1234567890123456789", key) && key[0] == '!', "19 digits: %s", key);
    CHECK(app_version_key("1..2", key) && key[0] == '!', "an empty component");
    char big[2000];
    memset(big, '7', sizeof big - 1);
    big[sizeof big - 1] = 0;
    CHECK(app_version_key(big, key) && strlen(key) < APP_VERSION_KEY_MAX, "a long version");
    big[0] = '1', big[1] = ' ', big[2] = '(';
    big[sizeof big - 2] = ')';
    CHECK(app_version_key(big, key) && strlen(key) < APP_VERSION_KEY_MAX, "a long build");
}

/* ---- reports and requests ---- */

static char *report_on(const char *fn, const char *ver, const char *os, const char *hw);
static long long today_of(int port, const char *path);

/* A text .crash of WfApp whose crashed frame is fn (its group), of app
 * version ver ("" none). */
static char *report(const char *fn, const char *ver)
{
    return report_on(fn, ver, "iPhone OS 17.1 (21B80)", "iPhone14,2");
}

/* The same on OS version os and device hw. */
static char *report_on(const char *fn, const char *ver, const char *os, const char *hw)
{
    char *t = NULL;
    static int counter; /* posting threads share it */
    int n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    if (asprintf(&t,
                 "Incident Identifier: 0000%04X-1111-2222-3333-444455556666\n"
                 "Hardware Model:      %s\n"
                 "Process:             WfApp [42]\n"
                 "Path:                /private/var/containers/Bundle/Application/0C5D8B4A/"
                 "WfApp.app/WfApp\n"
                 "Identifier:          org.symd.wfapp\n"
                 "%s%s%s"
                 "Code Type:           ARM-64 (Native)\n"
                 "OS Version:          %s\n"
                 "Report Version:      104\n"
                 "\n"
                 "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n"
                 "Triggered by Thread:  0\n"
                 "\n"
                 "Thread 0 Crashed:\n"
                 "0   WfApp                         \t0x0000000104a389f8 %s + 24\n"
                 "1   WfApp                         \t0x0000000104a38b04 main + 40\n"
                 "\n"
                 "Binary Images:\n"
                 "0x104a38000 - 0x104a3bfff WfApp arm64  <eeee000155553144a17c64a339ede13a> "
                 "/private/var/containers/Bundle/Application/0C5D8B4A/WfApp.app/WfApp\n",
                 n & 0xffff, hw, *ver ? "Version:             " : "", ver, *ver ? "\n" : "", os,
                 fn) < 0)
        return NULL;
    return t;
}

#define SIG(fn) fn " | EXC_BAD_ACCESS (SIGSEGV)"

static json_t *req(int port, const char *method, const char *path, const char *headers,
                   const char *body, int *status)
{
    return http_json(port, method, path, headers, body, body ? strlen(body) : 0, status, NULL);
}

/* DELETE path; its status. */
static int del(int port, const char *path)
{
    http_resp r;
    if (!http_do(port, "DELETE", path, NULL, NULL, 0, &r))
        return 0;
    int st = r.status;
    http_resp_free(&r);
    return st;
}

/* Posts a report of fn in version ver; its id (0 when not stored). */
static long long post(int port, const char *fn, const char *ver, const char *headers)
{
    char *r = report(fn, ver);
    int status;
    json_t *j = http_json(port, "POST", "/v1/crashes", headers, r, r ? strlen(r) : 0, &status,
                          NULL);
    free(r);
    CHECK(status == 201, "posting %s %s: %d", fn, ver, status);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* POST /v1/crashes/group/state of fn's group with the members of extra
 * (a JSON object's members, "" none); the answer, *status its status. */
static json_t *set_state(int port, const char *fn, const char *state, const char *extra,
                         const char *headers, int *status)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"kind\": \"crash\", \"signature\": \"%s\", \"state\": \"%s\"%s%s}",
             fn, state, *extra ? ", " : "", extra);
    return req(port, "POST", "/v1/crashes/group/state", headers, body, status);
}

/* The listing's row of fn's group (owned), NULL when it does not list it;
 * filter: more query arguments ("" none). */
static json_t *group_row(int port, const char *sig, const char *filter)
{
    char path[512];
    snprintf(path, sizeof path, "/v1/crashes/groups?limit=1000%s", filter);
    int status;
    json_t *j = req(port, "GET", path, NULL, NULL, &status);
    CHECK(status == 200, "GET %s: %d", path, status);
    json_t *found = NULL;
    json_t *groups = json_object_get(j, "groups");
    for (size_t i = 0; i < json_array_size(groups); i++) {
        json_t *g = json_array_get(groups, i);
        const char *s = json_string_value(json_object_get(g, "signature"));
        if (s && strcmp(s, sig) == 0)
            found = json_incref(g);
    }
    json_decref(j);
    return found;
}

static const char *jstr(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* The state the listing shows for sig ("" when not listed). */
static void state_of(int port, const char *sig, char out[16])
{
    json_t *g = group_row(port, sig, "");
    snprintf(out, 16, "%s", g ? jstr(g, "state") : "");
    json_decref(g);
}

#define STATE_IS(port, sig, want)                                                           \
    do {                                                                                   \
        char st_[16];                                                                      \
        state_of(port, sig, st_);                                                          \
        CHECK(strcmp(st_, want) == 0, "%s: %s, want %s", sig, st_, want);                  \
    } while (0)

/* The group's history (owned array, newest first). */
static json_t *history(int port, const char *sig)
{
    char path[512], esc[256];
    size_t o = 0;
    for (const char *p = sig; *p && o + 4 < sizeof esc; p++) {
        if (*p == ' ' || *p == '|' || *p == '(' || *p == ')')
            o += (size_t)snprintf(esc + o, sizeof esc - o, "%%%02X", (unsigned char)*p);
        else
            esc[o++] = *p;
    }
    esc[o] = 0;
    snprintf(path, sizeof path, "/v1/crashes/group/history?kind=crash&signature=%s", esc);
    int status;
    json_t *j = req(port, "GET", path, NULL, NULL, &status);
    CHECK(status == 200, "GET %s: %d", path, status);
    json_t *h = json_incref(json_object_get(j, "history"));
    json_decref(j);
    return h ? h : json_array();
}

static long long jint(json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- states, regressions, history ---- */

TEST(workflow_resolutions_regress_by_version)
{
    server_proc s;
    char db[512];
    snprintf(db, sizeof db, "%s/wf-resolve.db", test_tmpdir());
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    int port = s.port, status;
    /* a new group is unresolved, its versions its reports' */
    post(port, "anyFn", "1.2 (3)", NULL);
    post(port, "anyFn", "1.1", NULL);
    json_t *g = group_row(port, SIG("anyFn"), "");
    CHECK(g && !strcmp(jstr(g, "state"), "unresolved") && jint(g, "reports") == 2 &&
              !strcmp(jstr(g, "first_version"), "1.1") &&
              !strcmp(jstr(g, "last_version"), "1.2 (3)") &&
              json_is_null(json_object_get(g, "state_changed_at")),
          "a new group: %s", g ? json_dumps(g, 0) : "(not listed)");
    json_decref(g);

    /* resolved (no version): any later report regresses it, even an older
     * or version-less one */
    json_t *a = set_state(port, SIG("anyFn"), "resolved", "\"note\": \"fixed in 1.3\"", NULL,
                          &status);
    CHECK(status == 200 && !strcmp(jstr(a, "state"), "resolved") &&
              !strcmp(jstr(json_object_get(a, "resolved"), "in"), "any"),
          "resolve: %d %s", status, a ? json_dumps(a, 0) : "");
    json_decref(a);
    STATE_IS(port, SIG("anyFn"), "resolved");
    long long rid = post(port, "anyFn", "", NULL);
    STATE_IS(port, SIG("anyFn"), "regressed");
    json_t *h = history(port, SIG("anyFn"));
    CHECK(json_array_size(h) == 2, "history of anyFn: %zu changes", json_array_size(h));
    json_t *last = json_array_get(h, 0), *first = json_array_get(h, 1);
    CHECK(!strcmp(jstr(last, "from"), "resolved") && !strcmp(jstr(last, "to"), "regressed") &&
              !strcmp(jstr(last, "by"), "system") && !strcmp(jstr(last, "reason"), "regression") &&
              jint(last, "crash_id") == rid,
          "the regression: %s", last ? json_dumps(last, 0) : "");
    CHECK(!strcmp(jstr(first, "from"), "unresolved") && !strcmp(jstr(first, "to"), "resolved") &&
              !strcmp(jstr(first, "by"), "open") && !strcmp(jstr(first, "reason"), "api") &&
              !strcmp(jstr(first, "note"), "fixed in 1.3") && jint(first, "at") > 0,
          "the resolution: %s", first ? json_dumps(first, 0) : "");
    json_decref(h);

    /* resolved in the next version: above the newest seen (1.2 (3)) */
    post(port, "nextFn", "1.2 (3)", NULL);
    post(port, "nextFn", "1.0", NULL);
    a = set_state(port, SIG("nextFn"), "resolved", "\"resolved_in\": \"next\"", NULL, &status);
    json_t *res = json_object_get(a, "resolved");
    CHECK(status == 200 && !strcmp(jstr(res, "in"), "next") &&
              !strcmp(jstr(res, "version"), "1.2 (3)"),
          "resolve next: %d %s", status, a ? json_dumps(a, 0) : "");
    json_decref(a);
    post(port, "nextFn", "1.2 (3)", NULL);  /* the same version */
    post(port, "nextFn", "1.2.0 (3)", NULL); /* written otherwise */
    post(port, "nextFn", "1.1.9", NULL);     /* older */
    post(port, "nextFn", "", NULL);          /* none */
    post(port, "nextFn", "beta", NULL);      /* unparsable */
    STATE_IS(port, SIG("nextFn"), "resolved");
    long long nid = post(port, "nextFn", "1.2 (4)", NULL); /* a newer build */
    STATE_IS(port, SIG("nextFn"), "regressed");
    post(port, "nextFn", "1.3", NULL); /* regressed stays regressed, once */
    h = history(port, SIG("nextFn"));
    CHECK(json_array_size(h) == 2 && jint(json_array_get(h, 0), "crash_id") == nid &&
              !strcmp(jstr(json_array_get(h, 0), "version"), "1.2 (4)"),
          "history of nextFn: %s", json_dumps(h, 0));
    json_decref(h);
    g = group_row(port, SIG("nextFn"), "");
    CHECK(g && !strcmp(jstr(g, "first_version"), "1.0") && !strcmp(jstr(g, "last_version"), "1.3") &&
              jint(g, "reports") == 9,
          "nextFn's versions: %s", g ? json_dumps(g, 0) : "");
    json_decref(g);

    /* resolved in version 2.0: 2.0 itself does not regress it, 2.0.1 does */
    post(port, "verFn", "1.5", NULL);
    a = set_state(port, SIG("verFn"), "resolved", "\"resolved_in\": \"version\", \"version\": \"2.0\"",
                  NULL, &status);
    CHECK(status == 200 && !strcmp(jstr(json_object_get(a, "resolved"), "version"), "2.0"),
          "resolve in 2.0: %d", status);
    json_decref(a);
    post(port, "verFn", "1.9", NULL);
    post(port, "verFn", "2 (7)", NULL);
    STATE_IS(port, SIG("verFn"), "resolved");
    post(port, "verFn", "2.0.1", NULL);
    STATE_IS(port, SIG("verFn"), "regressed");

    /* reopening by hand, then the state filters */
    a = set_state(port, SIG("verFn"), "unresolved", "", NULL, &status);
    CHECK(status == 200 && !strcmp(jstr(a, "state"), "unresolved") &&
              json_is_null(json_object_get(a, "resolved")),
          "reopen: %d", status);
    json_decref(a);
    json_t *r = group_row(port, SIG("nextFn"), "&state=regressed");
    json_t *u = group_row(port, SIG("verFn"), "&state=regressed");
    json_t *both = group_row(port, SIG("verFn"), "&state=unresolved,regressed");
    CHECK(r && !u && both, "state filters: regressed lists nextFn %d, not verFn %d; both %d",
          r != NULL, u == NULL, both != NULL);
    json_decref(r);
    json_decref(u);
    json_decref(both);
    /* new in version X: first reported in it (as a version: 1.5.0 is 1.5) */
    json_t *n15 = group_row(port, SIG("verFn"), "&new_in=1.5.0");
    json_t *n10 = group_row(port, SIG("nextFn"), "&new_in=1.5");
    json_t *n10b = group_row(port, SIG("nextFn"), "&new_in=1.0");
    CHECK(n15 && !n10 && n10b, "new_in: verFn in 1.5.0 %d, nextFn not in 1.5 %d, in 1.0 %d",
          n15 != NULL, n10 == NULL, n10b != NULL);
    json_decref(n15);
    json_decref(n10);
    json_decref(n10b);
    /* with a dimension filter, the state is the group's */
    json_t *d = group_row(port, SIG("nextFn"), "&app_version=1.3&state=regressed");
    CHECK(d && jint(d, "count") == 1, "a dimension with a state filter: %s",
          d ? json_dumps(d, 0) : "(not listed)");
    json_decref(d);

    /* refusals */
    json_decref(set_state(port, SIG("nextFn"), "regressed", "", NULL, &status));
    CHECK(status == 400, "setting regressed: %d", status);
    json_decref(set_state(port, SIG("nextFn"), "resolved", "\"resolved_in\": \"later\"", NULL,
                          &status));
    CHECK(status == 400, "resolved_in later: %d", status);
    json_decref(set_state(port, SIG("nextFn"), "resolved", "\"resolved_in\": \"version\"", NULL,
                          &status));
    CHECK(status == 400, "resolved in no version: %d", status);
    json_decref(set_state(port, SIG("nextFn"), "ignored", "\"ignore_reports\": -1", NULL,
                          &status));
    CHECK(status == 400, "a negative count: %d", status);
    json_decref(set_state(port, SIG("nextFn"), "ignored", "\"ignore_until\": 1000", NULL,
                          &status));
    CHECK(status == 400, "a past date: %d", status);
    json_decref(set_state(port, SIG("noSuchFn"), "resolved", "", NULL, &status));
    CHECK(status == 404, "an unknown group: %d", status);
    json_decref(req(port, "POST", "/v1/crashes/group/state", NULL, "[1]", &status));
    CHECK(status == 400, "no object: %d", status);
    json_decref(req(port, "GET", "/v1/crashes/groups?state=open", NULL, NULL, &status));
    CHECK(status == 400, "an unknown state filter: %d", status);
    h = history(port, SIG("nextFn"));
    CHECK(json_array_size(h) == 2, "refusals record nothing: %zu changes", json_array_size(h));
    json_decref(h);
    CHECK(server_stop(&s), "server exit");
}

TEST(workflow_ignores_end_by_count_and_by_date)
{
    server_proc s;
    char db[512];
    snprintf(db, sizeof db, "%s/wf-ignore.db", test_tmpdir());
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    int port = s.port, status;
    /* until 3 more reports: the third reopens it, as unresolved */
    long long id = post(port, "cntFn", "1.0", NULL);
    json_t *a = set_state(port, SIG("cntFn"), "ignored", "\"ignore_reports\": 3", NULL, &status);
    json_t *ig = json_object_get(a, "ignored");
    CHECK(status == 200 && jint(ig, "reports") == 3 && jint(ig, "seen") == 0 &&
              json_is_null(json_object_get(ig, "until")),
          "ignore 3: %d %s", status, a ? json_dumps(a, 0) : "");
    json_decref(a);
    post(port, "cntFn", "1.1", NULL);
    post(port, "cntFn", "1.1", NULL);
    json_t *g = group_row(port, SIG("cntFn"), "");
    CHECK(g && !strcmp(jstr(g, "state"), "ignored") &&
              jint(json_object_get(g, "ignored"), "seen") == 2,
          "two of three: %s", g ? json_dumps(g, 0) : "");
    json_decref(g);
    id = post(port, "cntFn", "1.1", NULL);
    STATE_IS(port, SIG("cntFn"), "unresolved");
    json_t *h = history(port, SIG("cntFn"));
    json_t *e = json_array_get(h, 0);
    CHECK(json_array_size(h) == 2 && !strcmp(jstr(e, "reason"), "ignore_reports_reached") &&
              !strcmp(jstr(e, "to"), "unresolved") && jint(e, "crash_id") == id &&
              jint(e, "ignore_reports") == 3,
          "history of cntFn: %s", json_dumps(h, 0));
    json_decref(h);

    /* forever: reports do not end it */
    post(port, "foreverFn", "1.0", NULL);
    json_decref(set_state(port, SIG("foreverFn"), "ignored", "", NULL, &status));
    CHECK(status == 200, "ignore forever: %d", status);
    for (int i = 0; i < 3; i++)
        post(port, "foreverFn", "9.0", NULL);
    STATE_IS(port, SIG("foreverFn"), "ignored");

    /* until a date: unresolved once it passed, recorded at the date, and a
     * resolved-then-ignored group never regresses on the way */
    post(port, "dateFn", "1.0", NULL);
    long long until = now_ms() + 1500;
    char extra[64];
    snprintf(extra, sizeof extra, "\"ignore_until\": %lld", until);
    a = set_state(port, SIG("dateFn"), "ignored", extra, NULL, &status);
    CHECK(status == 200 && jint(json_object_get(a, "ignored"), "until") == until,
          "ignore until: %d", status);
    json_decref(a);
    post(port, "dateFn", "2.0", NULL);
    STATE_IS(port, SIG("dateFn"), "ignored");
    while (now_ms() <= until + 50)
        usleep(50 * 1000);
    STATE_IS(port, SIG("dateFn"), "unresolved");
    h = history(port, SIG("dateFn"));
    e = json_array_get(h, 0);
    CHECK(json_array_size(h) == 2 && !strcmp(jstr(e, "reason"), "ignore_until_passed") &&
              !strcmp(jstr(e, "by"), "system") && jint(e, "at") == until &&
              json_is_null(json_object_get(e, "crash_id")),
          "history of dateFn: %s", json_dumps(h, 0));
    json_decref(h);
    /* a date that passed before the next report: ended at the date, the
     * report then counted as an unresolved group's */
    until = now_ms() + 800;
    snprintf(extra, sizeof extra, "\"ignore_until\": %lld", until);
    json_decref(set_state(port, SIG("dateFn"), "ignored", extra, NULL, &status));
    while (now_ms() <= until + 50)
        usleep(50 * 1000);
    post(port, "dateFn", "2.1", NULL);
    h = history(port, SIG("dateFn"));
    CHECK(json_array_size(h) == 4 &&
              !strcmp(jstr(json_array_get(h, 0), "reason"), "ignore_until_passed") &&
              jint(json_array_get(h, 0), "at") == until,
          "history of dateFn after a report: %s", json_dumps(h, 0));
    json_decref(h);
    STATE_IS(port, SIG("dateFn"), "unresolved");
    /* ignored lists filter */
    json_t *f = group_row(port, SIG("foreverFn"), "&state=ignored");
    json_t *nf = group_row(port, SIG("dateFn"), "&state=ignored");
    CHECK(f && !nf, "state=ignored: foreverFn %d, not dateFn %d", f != NULL, nf == NULL);
    json_decref(f);
    json_decref(nf);
    CHECK(server_stop(&s), "server exit");
}

TEST(workflow_state_change_needs_the_report_token)
{
    server_proc s;
    char db[512];
    snprintf(db, sizeof db, "%s/wf-roles.db", test_tmpdir());
    static const char *const extra[] = {"--report-token", "rep-wf-1", "--read-token", "rd-wf-1",
                                        NULL};
    if (!server_start(&s, db, extra)) {
        CHECK(false, "server did not start");
        return;
    }
    const char *rep = "Authorization: Bearer rep-wf-1\r\n", *rd = "Authorization: Bearer rd-wf-1\r\n";
    int port = s.port, status;
    post(port, "roleFn", "1.0", rep);
    json_decref(set_state(port, SIG("roleFn"), "resolved", "", rd, &status));
    CHECK(status == 401, "with the read token: %d", status);
    json_decref(set_state(port, SIG("roleFn"), "resolved", "", NULL, &status));
    CHECK(status == 401, "without a token: %d", status);
    json_decref(set_state(port, SIG("roleFn"), "resolved", "", rep, &status));
    CHECK(status == 200, "with the report token: %d", status);
    json_t *j = req(port, "GET", "/v1/crashes/group/history?kind=crash&signature=roleFn%20%7C%20"
                                 "EXC_BAD_ACCESS%20(SIGSEGV)",
                    rd, NULL, &status);
    json_t *e = json_array_get(json_object_get(j, "history"), 0);
    CHECK(status == 200 && !strcmp(jstr(e, "by"), "report") && !strcmp(jstr(e, "to"), "resolved"),
          "recorded with the report role: %d %s", status, j ? json_dumps(j, 0) : "");
    json_decref(j);
    json_decref(req(port, "GET", "/v1/crashes/group/history?kind=crash&signature=x", NULL, NULL,
                    &status));
    CHECK(status == 401, "history without the read token: %d", status);
    CHECK(server_stop(&s), "server exit");
}

TEST(workflow_state_outlives_delete_and_retention)
{
    server_proc s;
    char db[512];
    snprintf(db, sizeof db, "%s/wf-delete.db", test_tmpdir());
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    int port = s.port, status;
    long long a = post(port, "goneFn", "1.0", NULL);
    long long b = post(port, "goneFn", "1.4", NULL);
    json_decref(set_state(port, SIG("goneFn"), "resolved", "\"resolved_in\": \"next\"", NULL,
                          &status));
    CHECK(status == 200, "resolve: %d", status);
    /* every report deleted: the group is not listed, a state change on it
     * is 404, but its state stays */
    char path[64];
    snprintf(path, sizeof path, "/v1/crashes/%lld", b);
    CHECK(del(port, path) == 204, "delete %s", path);
    json_t *g = group_row(port, SIG("goneFn"), "");
    CHECK(g && !strcmp(jstr(g, "last_version"), "1.4") && jint(g, "count") == 1,
          "DELETE keeps the span of versions: %s", g ? json_dumps(g, 0) : "");
    json_decref(g);
    snprintf(path, sizeof path, "/v1/crashes/%lld", a);
    CHECK(del(port, path) == 204, "delete %s", path);
    g = group_row(port, SIG("goneFn"), "");
    CHECK(!g, "an empty group is not listed");
    json_decref(g);
    json_decref(set_state(port, SIG("goneFn"), "unresolved", "", NULL, &status));
    CHECK(status == 404, "state of a group without crashes: %d", status);
    /* a report of 1.4 again does not regress it; 1.5 does */
    post(port, "goneFn", "1.4", NULL);
    STATE_IS(port, SIG("goneFn"), "resolved");
    g = group_row(port, SIG("goneFn"), "&new_in=1.0");
    CHECK(g && jint(g, "reports") == 3, "first seen in 1.0 still: %s",
          g ? json_dumps(g, 0) : "(not listed)");
    json_decref(g);
    post(port, "goneFn", "1.5", NULL);
    STATE_IS(port, SIG("goneFn"), "regressed");
    CHECK(server_stop(&s), "server exit");

    /* retention: pruned to the newest report, the state and span stay */
    static const char *const keep1[] = {"--max-crashes", "1", NULL};
    if (!server_start(&s, db, keep1)) {
        CHECK(false, "server did not restart");
        return;
    }
    port = s.port;
    for (int i = 0; i < 100; i++) {
        json_t *l = req(port, "GET", "/v1/crashes?limit=10", NULL, NULL, &status);
        size_t n = json_array_size(json_object_get(l, "crashes"));
        json_decref(l);
        if (n == 1)
            break;
        usleep(100 * 1000);
    }
    g = group_row(port, SIG("goneFn"), "");
    CHECK(g && jint(g, "count") == 1 && !strcmp(jstr(g, "state"), "regressed") &&
              !strcmp(jstr(g, "first_version"), "1.0") && !strcmp(jstr(g, "last_version"), "1.5"),
          "after retention: %s", g ? json_dumps(g, 0) : "(not listed)");
    json_decref(g);
    json_t *h = history(port, SIG("goneFn"));
    CHECK(json_array_size(h) == 2, "history after retention: %zu", json_array_size(h));
    json_decref(h);
    CHECK(server_stop(&s), "server exit");
}

/* A store of schema 7 (this one's, the workflow tables dropped and the
 * version set back) is given its groups' states and versions when opened. */
TEST(workflow_groups_of_a_schema_7_store_migrate)
{
    server_proc s;
    char db[512];
    snprintf(db, sizeof db, "%s/wf-upgrade.db", test_tmpdir());
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    post(s.port, "oldFn", "2.0 (9)", NULL);
    post(s.port, "oldFn", "1.10", NULL);
    post(s.port, "oldFn", "1.9", NULL);
    post(s.port, "oldFn", "", NULL);
    post(s.port, "plainFn", "", NULL);
    CHECK(server_stop(&s), "server exit");
    static const char down[] =
        "DROP TABLE crash_group_states; DROP TABLE crash_group_history; DROP TABLE crash_dim_days;"
        "DROP TABLE grouping_state; ALTER TABLE crashes DROP COLUMN grouping_rule;"
        "DROP INDEX crashes_idem_key; DROP INDEX crashes_content_key;"
        "ALTER TABLE crashes DROP COLUMN idem_key; ALTER TABLE crashes DROP COLUMN content_key;";
    if (test_pg()) {
        const char *uri = db_arg(db);
        CHECK(uri && pg_sql(uri, "DROP TABLE crash_group_states", NULL, 0) &&
                  pg_sql(uri, "DROP TABLE crash_group_history", NULL, 0) &&
                  pg_sql(uri, "DROP TABLE crash_dim_days", NULL, 0) &&
                  pg_sql(uri, "DROP TABLE grouping_state", NULL, 0) &&
                  pg_sql(uri, "ALTER TABLE crashes DROP COLUMN grouping_rule", NULL, 0) &&
                  pg_sql(uri, "ALTER TABLE crashes DROP COLUMN idem_key", NULL, 0) &&
                  pg_sql(uri, "ALTER TABLE crashes DROP COLUMN content_key", NULL, 0) &&
                  pg_sql(uri, "UPDATE symd_schema SET version = 7", NULL, 0),
              "taking the PostgreSQL store back to schema 7");
    } else {
        sqlite3 *h = NULL;
        CHECK(sqlite3_open(db, &h) == SQLITE_OK &&
                  sqlite3_exec(h, down, NULL, NULL, NULL) == SQLITE_OK &&
                  sqlite3_exec(h, "PRAGMA user_version = 7", NULL, NULL, NULL) == SQLITE_OK,
              "taking the SQLite store back to schema 7: %s", h ? sqlite3_errmsg(h) : "");
        sqlite3_close(h);
    }
    CHECK(db_query_int(db, "SELECT count(*) FROM crash_groups") == 2, "two groups stored");
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not restart");
        return;
    }
    json_t *g = group_row(s.port, SIG("oldFn"), "");
    CHECK(g && !strcmp(jstr(g, "state"), "unresolved") && !strcmp(jstr(g, "first_version"), "1.9") &&
              !strcmp(jstr(g, "last_version"), "2.0 (9)") && jint(g, "reports") == 4,
          "oldFn migrated: %s", g ? json_dumps(g, 0) : "(not listed)");
    json_decref(g);
    g = group_row(s.port, SIG("plainFn"), "");
    CHECK(g && !strcmp(jstr(g, "state"), "unresolved") &&
              json_is_null(json_object_get(g, "first_version")),
          "plainFn migrated: %s", g ? json_dumps(g, 0) : "(not listed)");
    json_decref(g);
    /* the trend of a version, from the days of values the migration counted */
    long long t = today_of(s.port, "/v1/crashes/trend?app_version=1.10");
    CHECK(t == 1, "the trend of 1.10 after the migration: %lld", t);
    /* and it works on: resolved in the next version, 2.0 (10) regresses it */
    int status;
    json_decref(set_state(s.port, SIG("oldFn"), "resolved", "\"resolved_in\": \"next\"", NULL,
                          &status));
    post(s.port, "oldFn", "2.0 (9)", NULL);
    STATE_IS(s.port, SIG("oldFn"), "resolved");
    post(s.port, "oldFn", "2.0 (10)", NULL);
    STATE_IS(s.port, SIG("oldFn"), "regressed");
    CHECK(server_stop(&s), "server exit");
}

/* ---- filters that follow the user: trends, values, spreads ---- */

/* Posts a report of fn on os and hw. */
static void post_on(int port, const char *fn, const char *ver, const char *os, const char *hw)
{
    char *r = report_on(fn, ver, os, hw);
    int status;
    json_decref(http_json(port, "POST", "/v1/crashes", NULL, r, r ? strlen(r) : 0, &status, NULL));
    free(r);
    CHECK(status == 201, "posting %s %s %s %s: %d", fn, ver, os, hw, status);
}

/* Today's count of GET path (a trend), -1 when it fails. */
static long long today_of(int port, const char *path)
{
    int status;
    json_t *j = req(port, "GET", path, NULL, NULL, &status);
    json_t *days = json_object_get(j, "days");
    long long v = status == 200 && json_array_size(days)
                      ? json_integer_value(json_array_get(days, json_array_size(days) - 1))
                      : -1;
    CHECK(status == 200, "GET %s: %d", path, status);
    json_decref(j);
    return v;
}

/* The sum of the counts of the groups GET /v1/crashes/groups?args lists. */
static long long groups_sum(int port, const char *args)
{
    char path[512];
    snprintf(path, sizeof path, "/v1/crashes/groups?limit=1000&%s", args);
    int status;
    json_t *j = req(port, "GET", path, NULL, NULL, &status);
    long long sum = 0;
    json_t *g = json_object_get(j, "groups");
    for (size_t i = 0; i < json_array_size(g); i++)
        sum += jint(json_array_get(g, i), "count");
    json_decref(j);
    return status == 200 ? sum : -1;
}

/* Every page of a values route (path ends in its arguments), limit a page:
 * "value=count" joined by spaces, in order; *pages how many. */
static void all_values(int port, const char *path, int limit, char *out, size_t cap, int *pages)
{
    char cursor[600] = "", url[1024];
    size_t o = 0;
    out[0] = 0;
    *pages = 0;
    for (;;) {
        snprintf(url, sizeof url, "%s&limit=%d%s%s", path, limit, *cursor ? "&cursor=" : "",
                 cursor);
        int status;
        json_t *j = req(port, "GET", url, NULL, NULL, &status);
        CHECK(status == 200, "GET %s: %d", url, status);
        json_t *v = json_object_get(j, "values");
        (*pages)++;
        CHECK(json_array_size(v) <= (size_t)limit, "a page of %zu values, limit %d",
              json_array_size(v), limit);
        for (size_t i = 0; i < json_array_size(v) && o + 1 < cap; i++)
            o += (size_t)snprintf(out + o, cap - o, "%s%s=%lld", o ? " " : "",
                                  jstr(json_array_get(v, i), "value"),
                                  jint(json_array_get(v, i), "count"));
        const char *next = json_string_value(json_object_get(j, "next_cursor"));
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        json_decref(j);
        if (!*cursor || status != 200 || *pages > 100)
            break;
    }
}

TEST(workflow_trends_values_and_spreads_follow_the_filters)
{
    server_proc s;
    char db[512];
    snprintf(db, sizeof db, "%s/wf-filters.db", test_tmpdir());
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    int port = s.port, status;
    const char *o1 = "iPhone OS 17.1 (21B80)", *o2 = "iPhone OS 16.4 (20E247)";
    post_on(port, "fltA", "5.0", o1, "iPhone14,2");
    post_on(port, "fltA", "5.0", o1, "iPhone15,3");
    post_on(port, "fltA", "5.0", o2, "iPhone14,2");
    post_on(port, "fltA", "5.1", o2, "iPhone14,2");
    post_on(port, "fltA", "5.1", o1, "iPad13,1");
    post_on(port, "fltB", "5.0", o1, "iPhone14,2");
    post_on(port, "fltB", "4.9", o2, "iPad13,1");
    json_decref(set_state(port, SIG("fltB"), "resolved", "", NULL, &status));
    /* a trend counts what the listing counts, filter by filter (every
     * report is today's) */
    static const char *const filters[] = {
        "", "app_version=5.0", "os_version=iPhone%20OS%2016.4%20(20E247)",
        "hardware_model=iPhone14,2", "app_version=5.0&os_version=iPhone%20OS%2017.1%20(21B80)",
        "app_version=5.1&hardware_model=iPad13,1&kind=crash", "format=crash",
        "state=resolved", "state=unresolved,regressed&app_version=5.0", "new_in=4.9",
        "new_in=5.0&os_version=iPhone%20OS%2016.4%20(20E247)", "kind=crash&app_version=5.1",
        "kind=hang", "app_version=9.9",
    };
    static const long long want[] = {7, 4, 3, 4, 3, 1, 7, 2, 3, 2, 2, 2, 0, 0};
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "/v1/crashes/trend?days=7&%s", filters[i]);
        long long t = today_of(port, path), g = groups_sum(port, filters[i]);
        CHECK(t == want[i] && g == want[i], "%s: the trend says %lld today, the groups %lld, want %lld",
              filters[i], t, g, want[i]);
    }
    /* one group's trend of one version */
    long long t = today_of(port, "/v1/crashes/trend?kind=crash&signature=fltA%20%7C%20EXC_BAD_ACCESS"
                                 "%20(SIGSEGV)&app_version=5.1");
    CHECK(t == 2, "fltA's trend of 5.1: %lld", t);
    json_decref(req(port, "GET", "/v1/crashes/trend?state=later", NULL, NULL, &status));
    CHECK(status == 400, "an unknown state: %d", status);

    /* the values of a dimension, the most frequent first, paged */
    char got[4096];
    int pages;
    all_values(port, "/v1/crashes/values?dim=app_version", 50, got, sizeof got, &pages);
    CHECK(!strcmp(got, "5.0=4 5.1=2 4.9=1") && pages == 1, "app versions: %s (%d pages)", got,
          pages);
    all_values(port, "/v1/crashes/values?dim=hardware_model", 1, got, sizeof got, &pages);
    CHECK(!strcmp(got, "iPhone14,2=4 iPad13,1=2 iPhone15,3=1") && pages == 3,
          "devices a page of 1: %s (%d pages)", got, pages);
    all_values(port, "/v1/crashes/values?dim=os_version&kind=hang", 50, got, sizeof got, &pages);
    CHECK(!strcmp(got, ""), "hangs' OS versions: %s", got);
    json_decref(req(port, "GET", "/v1/crashes/values?dim=colour", NULL, NULL, &status));
    CHECK(status == 400, "an unknown dimension: %d", status);
    json_decref(req(port, "GET", "/v1/crashes/values?dim=app_version&cursor=3:zz", NULL, NULL,
                    &status));
    CHECK(status == 400, "a bad cursor: %d", status);

    /* a group's spread past its first 50 values */
    for (int i = 0; i < 60; i++) {
        char hw[32];
        snprintf(hw, sizeof hw, "Dev%02d", i);
        post_on(port, "fltC", "6.0", o1, hw);
        if (i % 7 == 0)
            post_on(port, "fltC", "6.0", o1, hw);
    }
    json_t *g = req(port, "GET", "/v1/crashes/group?kind=crash&signature=fltC%20%7C%20"
                                 "EXC_BAD_ACCESS%20(SIGSEGV)",
                    NULL, NULL, &status);
    CHECK(status == 200 && json_array_size(json_object_get(g, "hardware_models")) == 50,
          "the group answers its first 50 devices: %d", status);
    json_decref(g);
    all_values(port, "/v1/crashes/group/spread?kind=crash&signature=fltC%20%7C%20EXC_BAD_ACCESS"
                     "%20(SIGSEGV)&dim=hardware_model",
               25, got, sizeof got, &pages);
    char want60[4096];
    size_t o = 0;
    for (int i = 0; i < 60; i += 7) /* the counts of 2 first, by name */
        o += (size_t)snprintf(want60 + o, sizeof want60 - o, "%sDev%02d=2", o ? " " : "", i);
    for (int i = 0; i < 60; i++)
        if (i % 7)
            o += (size_t)snprintf(want60 + o, sizeof want60 - o, " Dev%02d=1", i);
    CHECK(!strcmp(got, want60) && pages == 3, "fltC's devices in pages of 25 (%d pages): %s",
          pages, got);
    json_decref(req(port, "GET", "/v1/crashes/group/spread?dim=hardware_model&signature=x", NULL,
                    NULL, &status));
    CHECK(status == 400, "a spread without a kind: %d", status);
    /* deleting a report takes it out of its version's day */
    json_t *l = req(port, "GET", "/v1/crashes?app_version=4.9", NULL, NULL, &status);
    long long id = jint(json_array_get(json_object_get(l, "crashes"), 0), "id");
    json_decref(l);
    char path[64];
    snprintf(path, sizeof path, "/v1/crashes/%lld", id);
    CHECK(del(port, path) == 204, "delete %s", path);
    t = today_of(port, "/v1/crashes/trend?app_version=4.9");
    CHECK(t == 0, "the trend of 4.9 after its report went: %lld", t);
    CHECK(server_stop(&s), "server exit");
}

/* ---- two nodes on one PostgreSQL database ---- */

typedef struct {
    int port, n;
    int failed;
} race_job;

static void *race_thread(void *arg)
{
    race_job *j = arg;
    static const char *const fns[] = {"raceFn", "cntRaceFn", "newRaceFn"};
    for (int i = 0; i < j->n; i++) {
        char *r = report(fns[i % 3], "2.0");
        http_resp resp;
        bool ok = r && http_do(j->port, "POST", "/v1/crashes", NULL, r, strlen(r), &resp);
        if (!ok || resp.status != 201)
            j->failed++;
        if (ok)
            http_resp_free(&resp);
        free(r);
    }
    return NULL;
}

typedef struct {
    int port, n;
    int failed;
} read_job;

/* Group listings (each ends the ignores whose date passed) as fast as they go. */
static void *read_thread(void *arg)
{
    read_job *j = arg;
    for (int i = 0; i < j->n; i++) {
        http_resp resp;
        bool ok = http_do(j->port, "GET", "/v1/crashes/groups?state=ignored", NULL, NULL, 0, &resp);
        if (!ok || resp.status != 200)
            j->failed++;
        if (ok)
            http_resp_free(&resp);
    }
    return NULL;
}

/* A counter of /metrics on port (-1 when absent). */
static long long metric(int port, const char *line_start)
{
    http_resp r;
    long long v = -1;
    if (!http_do(port, "GET", "/metrics", NULL, NULL, 0, &r))
        return -1;
    const char *p = r.body ? strstr(r.body, line_start) : NULL;
    if (p)
        v = strtoll(p + strlen(line_start), NULL, 10);
    http_resp_free(&r);
    return v;
}

/* Reports of one group posted at once on two nodes: the regression of a
 * resolved group, the end of an ignore by count and a new group are each
 * decided once (row locks, conditional updates), and recorded once; so is
 * the end of an ignore by date that readers on both nodes see at once. */
TEST(workflow_two_nodes_decide_each_change_once)
{
    if (!test_pg()) {
        test_skip("needs PostgreSQL (SYMD_TEST_PG; run-all.sh's postgres suite)");
        return;
    }
    const char *uri = pg_fresh_db("wf_nodes");
    server_proc n[2];
    char log[2][512];
    bool up[2] = {false, false};
    for (int i = 0; i < 2 && uri; i++) {
        snprintf(log[i], sizeof log[i], "%s/wf-nodes-%c", test_tmpdir(), 'a' + i);
        up[i] = server_start_on(&n[i], log[i], uri, NULL);
        CHECK(up[i], "node %c did not start", 'a' + i);
    }
    if (!up[0] || !up[1]) {
        for (int i = 0; i < 2; i++)
            if (up[i])
                server_stop(&n[i]);
        return;
    }
    int status;
    post(n[0].port, "raceFn", "1.0", NULL);
    post(n[0].port, "cntRaceFn", "1.0", NULL);
    json_decref(set_state(n[1].port, SIG("raceFn"), "resolved", "\"resolved_in\": \"next\"", NULL,
                          &status));
    CHECK(status == 200, "resolve: %d", status);
    json_decref(set_state(n[1].port, SIG("cntRaceFn"), "ignored", "\"ignore_reports\": 10", NULL,
                          &status));
    CHECK(status == 200, "ignore: %d", status);
    enum { THREADS = 8, EACH = 12 };
    race_job jobs[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (race_job){n[i % 2].port, EACH, 0};
        pthread_create(&t[i], NULL, race_thread, &jobs[i]);
    }
    int failed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        failed += jobs[i].failed;
    }
    CHECK(failed == 0, "%d posts failed", failed);
    /* the regression, once */
    json_t *h = history(n[0].port, SIG("raceFn"));
    int regressions = 0;
    for (size_t i = 0; i < json_array_size(h); i++)
        regressions += !strcmp(jstr(json_array_get(h, i), "reason"), "regression");
    CHECK(json_array_size(h) == 2 && regressions == 1, "raceFn: %zu changes, %d regressions",
          json_array_size(h), regressions);
    json_decref(h);
    STATE_IS(n[1].port, SIG("raceFn"), "regressed");
    /* the ignore's end, once, at exactly the 10th report */
    h = history(n[1].port, SIG("cntRaceFn"));
    CHECK(json_array_size(h) == 2 &&
              !strcmp(jstr(json_array_get(h, 0), "reason"), "ignore_reports_reached"),
          "cntRaceFn: %s", json_dumps(h, 0));
    json_decref(h);
    char out[64] = "";
    CHECK(pg_sql(uri, "SELECT ignore_seen FROM crash_group_states WHERE signature = 'cntRaceFn | "
                      "EXC_BAD_ACCESS (SIGSEGV)'",
                 out, sizeof out) &&
              strcmp(out, "10") == 0,
          "cntRaceFn counted %s reports while ignored, want 10", out);
    STATE_IS(n[0].port, SIG("cntRaceFn"), "unresolved");
    json_t *g = group_row(n[0].port, SIG("newRaceFn"), "");
    CHECK(g && jint(g, "reports") == THREADS * EACH / 3 && jint(g, "count") == THREADS * EACH / 3,
          "newRaceFn: %s", g ? json_dumps(g, 0) : "(not listed)");
    json_decref(g);
    /* an ignore's date passing, seen by both nodes' readers at once: ended once */
    long long until = now_ms() + 1000;
    char extra[64];
    snprintf(extra, sizeof extra, "\"ignore_until\": %lld", until);
    json_decref(set_state(n[0].port, SIG("newRaceFn"), "ignored", extra, NULL, &status));
    CHECK(status == 200, "ignore until: %d", status);
    while (now_ms() <= until)
        usleep(20 * 1000);
    read_job readers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        readers[i] = (read_job){n[i % 2].port, 10, 0};
        pthread_create(&t[i], NULL, read_thread, &readers[i]);
    }
    failed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        failed += readers[i].failed;
    }
    CHECK(failed == 0, "%d listings failed", failed);
    h = history(n[1].port, SIG("newRaceFn"));
    int ended = 0;
    for (size_t i = 0; i < json_array_size(h); i++)
        ended += !strcmp(jstr(json_array_get(h, i), "reason"), "ignore_until_passed");
    CHECK(json_array_size(h) == 2 && ended == 1 && jint(json_array_get(h, 0), "at") == until,
          "newRaceFn: %s", json_dumps(h, 0));
    json_decref(h);
    STATE_IS(n[0].port, SIG("newRaceFn"), "unresolved");
    /* what the nodes told of (crash_group_changed): 3 new groups, 1 regression, 1 reopening */
    static const char *const ev[3] = {"new", "regressed", "reopened"};
    long long want[3] = {3, 1, 1};
    for (int e = 0; e < 3; e++) {
        char line[96];
        snprintf(line, sizeof line, "symd_crash_group_events_total{event=\"%s\"} ", ev[e]);
        long long sum = metric(n[0].port, line) + metric(n[1].port, line);
        CHECK(sum == want[e], "%s events on both nodes: %lld, want %lld", ev[e], sum, want[e]);
    }
    for (int i = 0; i < 2; i++)
        CHECK(server_stop(&n[i]), "node %c exit", 'a' + i);
}

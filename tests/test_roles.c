/* Every route against every role. The three roles (upload, report, read)
 * each have an optional token; a request needs the token of its route's
 * role when that role has one, and nothing otherwise:
 *
 *   upload  POST /v1/images, DELETE /v1/images/{uuid}
 *   report  POST /v1/crashes, POST /v1/symbolicate, DELETE /v1/crashes/{id}
 *   read    every other GET (and HEAD) of /v1/...
 *   open    /, /assets/{file}, /assets/js/{module}, /healthz, /metrics,
 *           /v1/openapi.yaml
 *
 * The routes come from docs/openapi.yaml (every path and method, HEAD
 * beside each GET), so a route added there is probed here too, and one
 * whose role the rules above do not give is a failed check. For each
 * configuration (no tokens, all three, each one alone, and the three given
 * as files, in the environment and as files named in the environment) one
 * server answers every route with no Authorization, each role's token,
 * a wrong token and malformed headers: 401 `unauthorized` (JSON error
 * body) exactly when the route's role has a token and the request does not
 * carry exactly that token, otherwise the status a server without tokens
 * gives the same request. The access log never holds a token. Then how a
 * token given twice is resolved, and the token files and values refused at
 * start. */
#include <ctype.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test.h"

#define DOC "docs/openapi.yaml"
#define UPLOAD_TOKEN "up-7f3a91c2e4"
#define REPORT_TOKEN "rep-2c7f40b8d1"
#define READ_TOKEN "rd-93ae15f06b"

typedef enum { ROLE_OPEN, ROLE_UPLOAD, ROLE_REPORT, ROLE_READ, NROLES } role_t;
static const char *const role_name[NROLES] = {"open", "upload", "report", "read"};
static const char *const role_token[NROLES] = {NULL, UPLOAD_TOKEN, REPORT_TOKEN, READ_TOKEN};
static const char *const role_scheme[NROLES] = {"", "uploadToken", "reportToken", "readToken"};

/* ---- the routes --------------------------------------------------------- */

#define MAX_ROUTES 96

typedef struct {
    char method[12];
    char tmpl[128];   /* the documented path, or a description */
    char path[256];   /* what is sent */
    role_t role;      /* by the rules in the header comment */
    bool any_status;  /* not a route's own answer (404 no route, 405): never 401 */
    const char *body; /* sent with POST */
    int baseline;     /* the status a server without tokens gives */
} route_probe;

static route_probe routes[MAX_ROUTES];
static size_t nroutes;
static bool routes_ok;

/* The role the rules give a documented operation; false when none does. */
static bool role_for(const char *method, const char *tmpl, role_t *out)
{
    static const char *const open_paths[] = {"/", "/assets/{file}", "/assets/js/{module}",
                                             "/healthz", "/metrics", "/v1/openapi.yaml"};
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    for (size_t i = 0; i < sizeof open_paths / sizeof open_paths[0]; i++)
        if (strcmp(tmpl, open_paths[i]) == 0) {
            *out = ROLE_OPEN;
            return get;
        }
    /* System libraries are uploaded (and deleted) like the app's binaries. */
    if ((strcmp(method, "POST") == 0 && (strcmp(tmpl, "/v1/images") == 0 ||
                                         strcmp(tmpl, "/v1/system-symbols") == 0)) ||
        (strcmp(method, "DELETE") == 0 && (strcmp(tmpl, "/v1/images/{uuid}") == 0 ||
                                           strcmp(tmpl, "/v1/system-symbols/{id}") == 0))) {
        *out = ROLE_UPLOAD;
        return true;
    }
    /* Uploads in parts are CI's, their GETs too (a CI job holds the upload
     * token alone). */
    static const char *const parts_paths[] = {"/v1/upload-options", "/v1/images/check",
                                              "/v1/chunks/{sha256}", "/v1/chunks/missing",
                                              "/v1/images/assemble",
                                              "/v1/images/assemble/{sha256}"};
    for (size_t i = 0; i < sizeof parts_paths / sizeof parts_paths[0]; i++)
        if (strcmp(tmpl, parts_paths[i]) == 0) {
            *out = ROLE_UPLOAD;
            return true;
        }
    if ((strcmp(method, "POST") == 0 &&
         (strcmp(tmpl, "/v1/crashes") == 0 || strcmp(tmpl, "/v1/symbolicate") == 0 ||
          strcmp(tmpl, "/v1/crashes/group/state") == 0)) ||
        (strcmp(method, "DELETE") == 0 && strcmp(tmpl, "/v1/crashes/{id}") == 0)) {
        *out = ROLE_REPORT;
        return true;
    }
    if (get && strncmp(tmpl, "/v1/", 4) == 0) {
        *out = ROLE_READ;
        return true;
    }
    return false;
}

/* A concrete path for a template: sample values that give the same answer
 * on any server (an unknown UUID and crash id, a group that does not
 * exist); false for a parameter without a sample. */
static bool fill(const char *tmpl, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = tmpl; *p && o + 1 < cap;) {
        if (*p != '{') {
            out[o++] = *p++;
            continue;
        }
        const char *end = strchr(p, '}');
        if (!end)
            return false;
        size_t nl = (size_t)(end - p - 1);
        const char *v = nl == 4 && strncmp(p + 1, "uuid", 4) == 0 ? "9F0E7C1A-3B5D-4E8F-A2C4-6B8D0E1F3A5C"
                        : nl == 2 && strncmp(p + 1, "id", 2) == 0 ? "987654321"
                        : nl == 4 && strncmp(p + 1, "file", 4) == 0 ? "style.css"
                        : nl == 6 && strncmp(p + 1, "module", 6) == 0 ? "main.js"
                        : nl == 6 && strncmp(p + 1, "sha256", 6) == 0
                            ? "0000000000000000000000000000000000000000000000000000000000000000"
                            : NULL;
        CHECK(v, "%s: no sample value for {%.*s}; add one to fill() in tests/test_roles.c", tmpl,
              (int)nl, p + 1);
        if (!v)
            return false;
        o += (size_t)snprintf(out + o, cap - o, "%s", v);
        p = end + 1;
    }
    out[o < cap ? o : cap - 1] = 0;
    if (strcmp(tmpl, "/v1/crashes/group") == 0) /* a group is a kind and a signature */
        snprintf(out + strlen(out), cap - strlen(out), "?kind=crash&signature=no%%20such");
    return o < cap;
}

static const char *body_for(const char *method, const char *tmpl)
{
    if (strcmp(method, "POST") != 0)
        return NULL;
    if (strcmp(tmpl, "/v1/symbolicate") == 0)
        return "{\"threads\": [{\"id\": 0, \"frames\": [\"0x1000\"]}]}";
    if (strcmp(tmpl, "/v1/crashes") == 0 || strcmp(tmpl, "/v1/crashes/") == 0)
        return "not a crash report";
    return ""; /* POST /v1/images: empty_body */
}

static route_probe *add_route(const char *method, const char *tmpl, const char *path,
                              role_t role, bool any_status)
{
    if (nroutes == MAX_ROUTES) {
        CHECK(false, "more than %d routes: raise MAX_ROUTES", MAX_ROUTES);
        return NULL;
    }
    route_probe *r = &routes[nroutes++];
    snprintf(r->method, sizeof r->method, "%s", method);
    snprintf(r->tmpl, sizeof r->tmpl, "%s", tmpl);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->role = role;
    r->any_status = any_status;
    r->body = body_for(method, tmpl);
    return r;
}

/* The operations of docs/openapi.yaml with their security scheme, read
 * with the layout its header comment fixes: paths at 2 spaces, operations
 * at 4, `security:` at 6 and its items at 8. */
static bool load_routes(void)
{
    size_t len;
    uint8_t *text = read_fixture(DOC, &len);
    if (!text)
        return false;
    bool in_paths = false, in_security = false, op_open = false;
    char cur[128] = "", method[12] = "", scheme[64] = "";
    int op_line = 0, lineno = 0, ops = 0;
    char *copy = strdup((const char *)text);
    free(text);
    /* one operation is finished when the next starts (or the paths end) */
#define FINISH_OP()                                                                         \
    do {                                                                                   \
        if (op_open) {                                                                     \
            role_t want;                                                                   \
            bool known = role_for(method, cur, &want);                                     \
            CHECK(known, DOC ":%d: %s %s: no role rule in tests/test_roles.c covers it",   \
                  op_line, method, cur);                                                   \
            if (known) {                                                                   \
                CHECK(strcmp(scheme, role_scheme[want]) == 0,                              \
                      DOC ":%d: %s %s documents security '%s', the %s role is '%s'",       \
                      op_line, method, cur, scheme, role_name[want], role_scheme[want]);   \
                char path[256];                                                            \
                if (fill(cur, path, sizeof path)) {                                        \
                    add_route(method, cur, path, want, false);                             \
                    if (strcmp(method, "GET") == 0)                                        \
                        add_route("HEAD", cur, path, want, false);                         \
                }                                                                          \
            }                                                                              \
            ops++;                                                                         \
        }                                                                                  \
        op_open = false;                                                                   \
    } while (0)
    for (char *line = copy, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        lineno++;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
            line[--n] = 0;
        size_t indent = strspn(line, " ");
        const char *s = line + indent;
        if (!*s || *s == '#')
            continue;
        if (indent == 0) {
            FINISH_OP();
            in_paths = strcmp(line, "paths:") == 0;
            continue;
        }
        if (!in_paths)
            continue;
        if (indent == 2) {
            FINISH_OP();
            snprintf(cur, sizeof cur, "%.*s", (int)(n - indent - 1), s);
            continue;
        }
        if (indent == 4) {
            FINISH_OP();
            static const char *const m[] = {"get:", "put:", "post:", "delete:", "patch:",
                                            "options:", "head:", "trace:"};
            for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
                if (strcmp(s, m[i]) == 0) {
                    op_open = true;
                    op_line = lineno;
                    scheme[0] = 0;
                    in_security = false;
                    size_t k = 0;
                    for (; s[k] != ':' && k < sizeof method - 1; k++)
                        method[k] = (char)toupper((unsigned char)s[k]);
                    method[k] = 0;
                }
            continue;
        }
        if (!op_open)
            continue;
        if (indent == 6) {
            in_security = strncmp(s, "security:", 9) == 0;
            continue;
        }
        if (indent == 8 && in_security && strncmp(s, "- ", 2) == 0 && s[2] != '{' &&
            !scheme[0]) {
            snprintf(scheme, sizeof scheme, "%.*s", (int)strcspn(s + 2, ":"), s + 2);
        }
    }
    FINISH_OP();
#undef FINISH_OP
    free(copy);
    CHECK(ops >= 10, DOC ": only %d operations read", ops);
    /* Not in the document as operations of their own: the trailing-slash
     * aliases, a path no route matches and methods a route does not take
     * (their 404 and 405 come before any token is asked for). */
    add_route("GET", "/v1/images/", "/v1/images/", ROLE_READ, false);
    add_route("POST", "/v1/images/", "/v1/images/", ROLE_UPLOAD, false);
    add_route("GET", "/v1/crashes/", "/v1/crashes/", ROLE_READ, false);
    add_route("POST", "/v1/crashes/", "/v1/crashes/", ROLE_REPORT, false);
    add_route("GET", "no route", "/v1/no-such-route", ROLE_OPEN, true);
    add_route("POST", "no route", "/v1/images/x/y", ROLE_OPEN, true);
    add_route("DELETE", "no route", "/v1/nothing/1", ROLE_OPEN, true);
    add_route("PUT", "method not allowed", "/v1/images", ROLE_OPEN, true);
    add_route("POST", "method not allowed", "/v1/crashes/groups", ROLE_OPEN, true);
    add_route("DELETE", "method not allowed", "/v1/crashes", ROLE_OPEN, true);
    add_route("PATCH", "method not allowed", "/v1/crashes/1", ROLE_OPEN, true);
    add_route("POST", "method not allowed", "/healthz", ROLE_OPEN, true);
    return ops >= 10;
}

/* ---- the Authorization headers ------------------------------------------ */

typedef struct {
    char label[64];
    char header[160]; /* the Authorization value; "" for none */
    role_t carries;   /* the role whose token it carries exactly; ROLE_OPEN: none */
} auth_variant;

#define MAX_VARIANTS 32
static auth_variant variants[MAX_VARIANTS];
static size_t nvariants;

static void add_variant(const char *label, const char *header, role_t carries)
{
    if (nvariants == MAX_VARIANTS)
        return;
    auth_variant *v = &variants[nvariants++];
    snprintf(v->label, sizeof v->label, "%s", label);
    snprintf(v->header, sizeof v->header, "%s", header);
    v->carries = carries;
}

static void make_variants(void)
{
    if (nvariants)
        return;
    add_variant("no Authorization", "", ROLE_OPEN);
    char h[160], l[64];
    for (int r = ROLE_UPLOAD; r < NROLES; r++) {
        const char *t = role_token[r];
        snprintf(l, sizeof l, "the %s token", role_name[r]);
        snprintf(h, sizeof h, "Bearer %s", t);
        add_variant(l, h, (role_t)r);
        /* RFC 7235: the scheme is case-insensitive */
        snprintf(l, sizeof l, "the %s token, scheme 'bearer'", role_name[r]);
        snprintf(h, sizeof h, "bearer %s", t);
        add_variant(l, h, (role_t)r);
        snprintf(l, sizeof l, "the %s token and a trailing space", role_name[r]);
        snprintf(h, sizeof h, "Bearer %s ", t);
        add_variant(l, h, ROLE_OPEN);
        snprintf(l, sizeof l, "the %s token less its last byte", role_name[r]);
        snprintf(h, sizeof h, "Bearer %.*s", (int)strlen(t) - 1, t);
        add_variant(l, h, ROLE_OPEN);
        snprintf(l, sizeof l, "the %s token and one more byte", role_name[r]);
        snprintf(h, sizeof h, "Bearer %sx", t);
        add_variant(l, h, ROLE_OPEN);
        snprintf(l, sizeof l, "the %s token without a scheme", role_name[r]);
        snprintf(h, sizeof h, "%s", t);
        add_variant(l, h, ROLE_OPEN);
        snprintf(l, sizeof l, "the %s token as Basic", role_name[r]);
        snprintf(h, sizeof h, "Basic %s", t);
        add_variant(l, h, ROLE_OPEN);
    }
    add_variant("a wrong token", "Bearer not-the-token", ROLE_OPEN);
    add_variant("'Bearer' alone", "Bearer", ROLE_OPEN);
    add_variant("'Bearer ' and nothing", "Bearer ", ROLE_OPEN);
    add_variant("Basic credentials", "Basic dXNlcjpwYXNzd29yZA==", ROLE_OPEN);
    add_variant("all three tokens", "Bearer " UPLOAD_TOKEN " " REPORT_TOKEN " " READ_TOKEN,
                ROLE_OPEN);
}

/* The few variants the other token sources are probed with (the header
 * forms are the flags' business). */
static bool short_variant(const auth_variant *v)
{
    return !v->header[0] || (v->carries != ROLE_OPEN && strncmp(v->header, "Bearer ", 7) == 0) ||
           strcmp(v->header, "Bearer not-the-token") == 0;
}

/* ---- one request, one server --------------------------------------------- */

static bool send_probe(int port, const route_probe *rt, const auth_variant *v, http_resp *r)
{
    char hdr[256] = "";
    if (v && v->header[0])
        snprintf(hdr, sizeof hdr, "Authorization: %s\r\n", v->header);
    const char *body = rt->body;
    return http_do(port, rt->method, rt->path, hdr[0] ? hdr : NULL, body,
                   body ? strlen(body) : 0, r);
}

/* The routes, read once, and the status each gets from a server without
 * tokens (started here for that alone). */
static bool prepare(void)
{
    static bool done;
    if (done)
        return routes_ok;
    done = true;
    make_variants();
    if (!load_routes())
        return false;
    char db[512];
    snprintf(db, sizeof db, "%s/roles-baseline.db", test_tmpdir());
    server_proc s;
    if (!server_start(&s, db, NULL)) {
        CHECK(false, "the server without tokens did not start");
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < nroutes; i++) {
        http_resp r;
        bool got = send_probe(s.port, &routes[i], NULL, &r);
        CHECK(got, "%s %s: no answer", routes[i].method, routes[i].path);
        ok &= got;
        routes[i].baseline = got ? r.status : 0;
        if (got) {
            CHECK(r.status != 401, "%s %s: 401 from a server without tokens", routes[i].method,
                  routes[i].path);
            /* the documented operations are routed: neither 404 "no route" nor 405 */
            if (!routes[i].any_status)
                CHECK(r.status != 405 && !(r.status == 404 && strstr(r.body, "no route")),
                      "%s %s (%s) is not routed: %d %.120s", routes[i].method, routes[i].path,
                      routes[i].tmpl, r.status, r.body);
            http_resp_free(&r);
        }
    }
    CHECK(server_stop(&s), "the server without tokens: no clean exit");
    routes_ok = ok;
    return ok;
}

typedef struct {
    const char *name;
    bool has[NROLES]; /* which roles have a token */
    bool short_set;   /* probe with the short variant list only */
} config;

/* Every route with every variant against one running server configured as
 * cfg describes; the access log is checked after the server stops. */
static void probe_all(const config *cfg, server_proc *s)
{
    size_t sent = 0, refused = 0, bad = 0;
    for (size_t i = 0; i < nroutes; i++) {
        const route_probe *rt = &routes[i];
        for (size_t k = 0; k < nvariants; k++) {
            const auth_variant *v = &variants[k];
            if (cfg->short_set && !short_variant(v))
                continue;
            http_resp r;
            bool got = send_probe(s->port, rt, v, &r);
            sent++;
            CHECK(got, "[%s] %s %s with %s: no answer", cfg->name, rt->method, rt->path,
                  v->label);
            if (!got) {
                bad++;
                continue;
            }
            bool guarded = !rt->any_status && rt->role != ROLE_OPEN && cfg->has[rt->role];
            bool want_401 = guarded && v->carries != rt->role;
            if (want_401) {
                refused++;
                bad += r.status != 401;
                CHECK(r.status == 401,
                      "[%s] %s %s (%s role) with %s: %d, expected 401 %.120s", cfg->name,
                      rt->method, rt->path, role_name[rt->role], v->label, r.status, r.body);
                const char *ct = http_header(&r, "Content-Type");
                CHECK(ct && strncmp(ct, "application/json", 16) == 0,
                      "[%s] %s %s: 401 with Content-Type '%s'", cfg->name, rt->method, rt->path,
                      ct ? ct : "(none)");
                /* RFC 9110: a 401 carries the challenge, Bearer here */
                const char *www = http_header(&r, "WWW-Authenticate");
                CHECK(www && strncasecmp(www, "Bearer", 6) == 0,
                      "[%s] %s %s: WWW-Authenticate '%s' is not a Bearer challenge", cfg->name,
                      rt->method, rt->path, www);
                if (strcmp(rt->method, "HEAD") != 0) {
                    json_t *doc = json_loads(r.body, 0, NULL);
                    json_t *e = json_object_get(doc, "error");
                    const char *code = json_string_value(json_object_get(e, "code"));
                    const char *msg = json_string_value(json_object_get(e, "message"));
                    CHECK(code && strcmp(code, "unauthorized") == 0 && msg && *msg &&
                              json_object_size(doc) == 1 && json_object_size(e) == 2,
                          "[%s] %s %s: 401 body is not {\"error\": {\"code\": \"unauthorized\", "
                          "\"message\"}}: %.200s",
                          cfg->name, rt->method, rt->path, r.body);
                    /* it names the role asked for, never a token */
                    CHECK(msg && strstr(msg, role_name[rt->role]) && !strstr(msg, UPLOAD_TOKEN) &&
                              !strstr(msg, REPORT_TOKEN) && !strstr(msg, READ_TOKEN),
                          "[%s] %s %s: 401 message '%s'", cfg->name, rt->method, rt->path,
                          msg ? msg : "");
                    json_decref(doc);
                }
            } else {
                bad += r.status != rt->baseline;
                CHECK(r.status == rt->baseline,
                      "[%s] %s %s (%s role) with %s: %d, a server without tokens answers %d: "
                      "%.120s",
                      cfg->name, rt->method, rt->path, role_name[rt->role], v->label, r.status,
                      rt->baseline, r.body);
            }
            http_resp_free(&r);
        }
    }
    /* the tokens never show in /metrics, which anyone may read */
    http_resp m;
    if (http_do(s->port, "GET", "/metrics", NULL, NULL, 0, &m)) {
        CHECK(m.status == 200 && !strstr(m.body, UPLOAD_TOKEN) && !strstr(m.body, REPORT_TOKEN) &&
                  !strstr(m.body, READ_TOKEN),
              "[%s] /metrics: %d, or a token in it", cfg->name, m.status);
        http_resp_free(&m);
    }
    CHECK(server_stop(s), "[%s] no clean exit on SIGTERM", cfg->name);
    /* the access log: a line per request, no token, no Authorization */
    char log[600];
    snprintf(log, sizeof log, "%s.access.log", s->db);
    size_t len = 0;
    char *text = (char *)read_file(log, &len);
    CHECK(text, "[%s] no access log at %s", cfg->name, log);
    if (text) {
        size_t lines = 0;
        for (size_t i = 0; i < len; i++)
            lines += text[i] == '\n';
        CHECK(lines >= sent, "[%s] %zu access-log lines for %zu requests", cfg->name, lines, sent);
        CHECK(!strstr(text, UPLOAD_TOKEN) && !strstr(text, REPORT_TOKEN) &&
                  !strstr(text, READ_TOKEN) && !strcasestr(text, "bearer"),
              "[%s] a token is in the access log %s", cfg->name, log);
        free(text);
    }
    printf("    %-22s %zu requests, %zu refused with 401 as expected, %zu wrong\n", cfg->name,
           sent, refused, bad);
}

/* name in the run's temporary directory, in one of 16 rotating buffers
 * (callers that keep a path longer copy it). */
static const char *tmp_path(const char *name)
{
    static char p[16][512];
    static int k;
    k = (k + 1) % 16;
    snprintf(p[k], sizeof p[k], "%s/%s", test_tmpdir(), name);
    return p[k];
}

static bool write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(text, 1, strlen(text), f) == strlen(text);
    return fclose(f) == 0 && ok;
}

/* Starts a server on a fresh database with extra flags and env (NAME=VALUE
 * pairs, set for the start only) and probes it. */
static void run_config(const config *cfg, const char *dbname, const char *const *extra,
                       const char *const *env)
{
    if (!prepare())
        return;
    for (size_t i = 0; env && env[i]; i += 2)
        setenv(env[i], env[i + 1], 1);
    server_proc s;
    bool up = server_start(&s, tmp_path(dbname), extra);
    for (size_t i = 0; env && env[i]; i += 2)
        unsetenv(env[i]);
    CHECK(up, "[%s] the server did not start", cfg->name);
    if (up)
        probe_all(cfg, &s);
}

TEST(roles_no_tokens_open_every_route)
{
    config c = {"no tokens", {false}, false};
    run_config(&c, "roles-none.db", NULL, NULL);
}

TEST(roles_all_three_tokens)
{
    config c = {"all three tokens", {false, true, true, true}, false};
    const char *extra[] = {"--upload-token", UPLOAD_TOKEN, "--report-token", REPORT_TOKEN,
                           "--read-token", READ_TOKEN, NULL};
    run_config(&c, "roles-all.db", extra, NULL);
}

TEST(roles_upload_token_alone)
{
    config c = {"upload token alone", {false, true, false, false}, false};
    const char *extra[] = {"--upload-token", UPLOAD_TOKEN, NULL};
    run_config(&c, "roles-upload.db", extra, NULL);
}

TEST(roles_report_token_alone)
{
    config c = {"report token alone", {false, false, true, false}, false};
    const char *extra[] = {"--report-token", REPORT_TOKEN, NULL};
    run_config(&c, "roles-report.db", extra, NULL);
}

TEST(roles_read_token_alone)
{
    config c = {"read token alone", {false, false, false, true}, false};
    const char *extra[] = {"--read-token", READ_TOKEN, NULL};
    run_config(&c, "roles-read.db", extra, NULL);
}

/* Token files: the first line, its trailing CR, spaces and tabs dropped
 * (the token itself is exact: a trailing space in a request is refused). */
TEST(roles_token_files)
{
    const char *up = tmp_path("upload.token"), *rep = tmp_path("report.token"),
               *rd = tmp_path("read.token");
    CHECK(write_text(up, UPLOAD_TOKEN "\n") && write_text(rep, REPORT_TOKEN "\r\n") &&
              write_text(rd, READ_TOKEN " \t\nthe second line is not the token\n"),
          "writing the token files");
    config c = {"token files", {false, true, true, true}, false};
    const char *extra[] = {"--upload-token-file", up, "--report-token-file", rep,
                           "--read-token-file", rd, NULL};
    run_config(&c, "roles-files.db", extra, NULL);
}

TEST(roles_tokens_from_the_environment)
{
    config c = {"SYMD_*_TOKEN", {false, true, true, true}, true};
    const char *env[] = {"SYMD_UPLOAD_TOKEN", UPLOAD_TOKEN, "SYMD_REPORT_TOKEN", REPORT_TOKEN,
                         "SYMD_READ_TOKEN", READ_TOKEN, NULL};
    run_config(&c, "roles-env.db", NULL, env);
    /* one role from the environment, the others open */
    config one = {"SYMD_REPORT_TOKEN", {false, false, true, false}, true};
    const char *env1[] = {"SYMD_REPORT_TOKEN", REPORT_TOKEN, NULL};
    run_config(&one, "roles-env1.db", NULL, env1);
}

TEST(roles_token_files_from_the_environment)
{
    const char *up = tmp_path("env-upload.token"), *rep = tmp_path("env-report.token"),
               *rd = tmp_path("env-read.token");
    CHECK(write_text(up, UPLOAD_TOKEN) && write_text(rep, REPORT_TOKEN "\n") &&
              write_text(rd, READ_TOKEN "\r\n"),
          "writing the token files");
    config c = {"SYMD_*_TOKEN_FILE", {false, true, true, true}, true};
    const char *env[] = {"SYMD_UPLOAD_TOKEN_FILE", up, "SYMD_REPORT_TOKEN_FILE", rep,
                         "SYMD_READ_TOKEN_FILE", rd, NULL};
    run_config(&c, "roles-envfiles.db", NULL, env);
}

/* ---- a token given twice; tokens refused at start ------------------------- */

/* GET /v1/images (the read role) with "Bearer tok" on a server started with
 * extra flags and env: its status, 0 when the server did not start. */
static int read_status(const char *dbname, const char *const *extra, const char *const *env,
                       const char *tok)
{
    for (size_t i = 0; env && env[i]; i += 2)
        setenv(env[i], env[i + 1], 1);
    server_proc s;
    bool up = server_start(&s, tmp_path(dbname), extra);
    for (size_t i = 0; env && env[i]; i += 2)
        unsetenv(env[i]);
    if (!up)
        return 0;
    char hdr[128];
    snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\n", tok);
    http_resp r;
    int st = http_do(s.port, "GET", "/v1/images", hdr, NULL, 0, &r) ? r.status : -1;
    if (st > 0)
        http_resp_free(&r);
    server_stop(&s);
    return st;
}

/* Which of two tokens a server given both takes: "a", "b", "both",
 * "neither" or "no start". */
static const char *which(const char *dbname, const char *const *extra, const char *const *env)
{
    int a = read_status(dbname, extra, env, "token-a");
    if (a == 0)
        return "no start";
    int b = read_status(dbname, extra, env, "token-b");
    return a == 200 && b == 401   ? "a"
           : b == 200 && a == 401 ? "b"
           : a == 200 && b == 200 ? "both"
                                  : "neither";
}

static int serve_outcome(const char *const *extra, const char *const *env, char *err, size_t cap);

/* README (Roles and tokens): per role, the command line wins over the
 * environment; a token and a token file of one role on the same level
 * (both flags, or both variables) are refused as ambiguous. */
TEST(roles_a_token_given_twice_resolves_as_documented)
{
    char fa[512], fb[512], err[2048];
    snprintf(fa, sizeof fa, "%s", tmp_path("twice-a.token"));
    snprintf(fb, sizeof fb, "%s", tmp_path("twice-b.token"));
    CHECK(write_text(fa, "token-a\n") && write_text(fb, "token-b\n"), "writing token files");
    /* the same level: refused, whatever the order, naming both */
    {
        const char *extra[] = {"--read-token", "token-a", "--read-token-file", fb, NULL};
        int rc = serve_outcome(extra, NULL, err, sizeof err);
        CHECK(rc > 0 && strstr(err, "--read-token ") && strstr(err, "--read-token-file"),
              "--read-token a --read-token-file (b): %s (exit %d): %s",
              rc == -1 ? "the server started" : "ended", rc, err);
    }
    {
        const char *extra[] = {"--upload-token-file", fb, "--upload-token", "token-a", NULL};
        int rc = serve_outcome(extra, NULL, err, sizeof err);
        CHECK(rc > 0 && strstr(err, "--upload-token ") && strstr(err, "--upload-token-file"),
              "--upload-token-file (b) --upload-token a: %s (exit %d): %s",
              rc == -1 ? "the server started" : "ended", rc, err);
    }
    {
        const char *env[] = {"SYMD_REPORT_TOKEN", "token-a", "SYMD_REPORT_TOKEN_FILE", fb, NULL};
        int rc = serve_outcome(NULL, env, err, sizeof err);
        CHECK(rc > 0 && strstr(err, "SYMD_REPORT_TOKEN ") && strstr(err, "SYMD_REPORT_TOKEN_FILE"),
              "SYMD_REPORT_TOKEN=a SYMD_REPORT_TOKEN_FILE=(b): %s (exit %d): %s",
              rc == -1 ? "the server started" : "ended", rc, err);
    }
    /* the command line over the environment, a token or a file on either */
    struct {
        const char *extra[3], *env[3], *what;
    } wins[] = {
        {{"--read-token", "token-b", NULL}, {"SYMD_READ_TOKEN", "token-a", NULL},
         "SYMD_READ_TOKEN=a, --read-token b"},
        {{"--read-token-file", fb, NULL}, {"SYMD_READ_TOKEN", "token-a", NULL},
         "SYMD_READ_TOKEN=a, --read-token-file (b)"},
        {{"--read-token-file", fb, NULL}, {"SYMD_READ_TOKEN_FILE", fa, NULL},
         "SYMD_READ_TOKEN_FILE=(a), --read-token-file (b)"},
        {{"--read-token", "token-b", NULL}, {"SYMD_READ_TOKEN_FILE", fa, NULL},
         "SYMD_READ_TOKEN_FILE=(a), --read-token b"},
    };
    for (size_t i = 0; i < sizeof wins / sizeof wins[0]; i++) {
        char db[32];
        snprintf(db, sizeof db, "twice%zu.db", i);
        const char *got = which(db, wins[i].extra, wins[i].env);
        CHECK(strcmp(got, "b") == 0, "%s: %s took the token (the flag's should)", wins[i].what,
              got);
    }
    /* another role's variable is no conflict: each role resolves alone */
    {
        const char *extra[] = {"--read-token", "token-b", NULL};
        const char *env[] = {"SYMD_UPLOAD_TOKEN_FILE", fa, NULL};
        const char *got = which("twice-other.db", extra, env);
        CHECK(strcmp(got, "b") == 0, "--read-token b beside SYMD_UPLOAD_TOKEN_FILE: %s", got);
    }
}

/* Runs symd serve with extra flags and env and says how it ended: its exit
 * status, or -1 when it started listening (then it is stopped); *err gets
 * its stderr. */
static int serve_outcome(const char *const *extra, const char *const *env, char *err, size_t cap)
{
    const char *bin = getenv("SYMD_BIN");
    if (!bin)
        bin = "./symd";
    const char *errpath = tmp_path("refused.stderr");
    int out[2];
    if (pipe(out) != 0)
        return -2;
    const char *argv[24] = {bin, "serve", "--listen", "127.0.0.1:0", "--db",
                            tmp_path("refused.db"), "--access-log", "off"};
    int argc = 8;
    for (int i = 0; extra && extra[i] && argc < 22; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (size_t i = 0; env && env[i]; i += 2)
            setenv(env[i], env[i + 1], 1);
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    char line[256];
    size_t n = 0;
    struct pollfd p = {.fd = out[0], .events = POLLIN};
    while (n < sizeof line - 1 && poll(&p, 1, 10000) > 0) {
        ssize_t r = read(out[0], line + n, 1);
        if (r <= 0)
            break;
        if (line[n++] == '\n')
            break;
    }
    line[n] = 0;
    close(out[0]);
    int status = 0, rc;
    if (strstr(line, "listening on")) {
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        rc = -1;
    } else {
        waitpid(pid, &status, 0);
        rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    size_t len = 0;
    char *text = (char *)read_file(errpath, &len);
    snprintf(err, cap, "%s", text ? text : "");
    free(text);
    return rc;
}

TEST(roles_empty_or_unreadable_token_files_refused_at_start)
{
    static const char *const names[] = {"empty.token", "newline.token", "blank.token",
                                        "second-line.token", "no-such.token"};
    static const char *const texts[] = {"", "\n", " \t\r\n", "\nthe token on line two\n", NULL};
    char paths[5][512];
    const char *files[5];
    for (int i = 0; i < 5; i++) {
        snprintf(paths[i], sizeof paths[i], "%s", tmp_path(names[i]));
        files[i] = paths[i];
        if (texts[i])
            CHECK(write_text(paths[i], texts[i]), "writing %s", paths[i]);
    }
    static const char *const flags[] = {"--upload-token-file", "--report-token-file",
                                        "--read-token-file"};
    static const char *const envs[] = {"SYMD_UPLOAD_TOKEN_FILE", "SYMD_REPORT_TOKEN_FILE",
                                       "SYMD_READ_TOKEN_FILE"};
    char err[2048];
    for (int k = 0; k < 3; k++)
        for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
            const char *extra[] = {flags[k], files[f], NULL};
            int rc = serve_outcome(extra, NULL, err, sizeof err);
            CHECK(rc > 0 && strstr(err, files[f]) && strstr(err, flags[k]),
                  "%s %s: %s (exit %d), expected a refusal naming the flag and the file: %s",
                  flags[k], files[f], rc == -1 ? "the server started" : "ended", rc, err);
            /* the same file named by the environment */
            const char *env[] = {envs[k], files[f], NULL};
            rc = serve_outcome(NULL, env, err, sizeof err);
            CHECK(rc > 0 && strstr(err, files[f]),
                  "%s=%s: %s (exit %d), expected a refusal naming the file: %s", envs[k],
                  files[f], rc == -1 ? "the server started" : "ended", rc, err);
        }
}

/* An empty token is no token: it would leave its role open while looking
 * closed (a --read-token "$UNSET_VARIABLE" in a deployment script), so it
 * is refused at start, given as a flag or in the environment. */
TEST(roles_empty_token_refused_at_start)
{
    static const char *const flags[] = {"--upload-token", "--report-token", "--read-token"};
    static const char *const envs[] = {"SYMD_UPLOAD_TOKEN", "SYMD_REPORT_TOKEN",
                                       "SYMD_READ_TOKEN"};
    char err[2048];
    for (int k = 0; k < 3; k++) {
        const char *extra[] = {flags[k], "", NULL};
        int rc = serve_outcome(extra, NULL, err, sizeof err);
        CHECK(rc > 0 && strstr(err, flags[k]),
              "%s '': %s (exit %d): an empty token would leave the %s role open; expected a "
              "refusal naming the flag: %s",
              flags[k], rc == -1 ? "the server started" : "ended", rc, role_name[k + 1], err);
        const char *env[] = {envs[k], "", NULL};
        rc = serve_outcome(NULL, env, err, sizeof err);
        CHECK(rc > 0 && strstr(err, envs[k]),
              "%s='': %s (exit %d): expected a refusal naming the variable: %s", envs[k],
              rc == -1 ? "the server started" : "ended", rc, err);
    }
}

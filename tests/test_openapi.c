/* docs/openapi.yaml against the router (http_routes()) and a live server:
 * the same (path, method) pairs, the document served byte for byte, every
 * documented operation routed, every other method a 405 with Allow, every
 * status a live answer carries documented, and the upload token guarding
 * exactly the operations that say so.
 *
 * The document is read with a line scanner, which relies on the layout the
 * file's header comment states: `paths:` at column 0, each path at 2
 * spaces, each operation at 4, `responses:` and `security:` at 6 inside an
 * operation, each status code at 8. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../server/http.h"
#include "../util/hex.h"
#include "harness.h"
#include "test.h"

#define DOC "docs/openapi.yaml"
#define TOKEN "openapi-test-token"
#define MAX_OPS 64
#define MAX_CODES 24

/* One documented operation. */
typedef struct {
    char path[128];   /* template: "/v1/images/{uuid}" */
    char method[12];  /* upper case */
    int codes[MAX_CODES];
    size_t ncodes;
    bool has_default; /* a `default` response covers any status */
    bool secured;     /* has a non-empty `security` */
    int line;         /* of its `    get:` line */
} api_op;

typedef struct {
    api_op ops[MAX_OPS];
    size_t nops;
    uint8_t *text;
    size_t len;
} api_doc;

static const char *const HTTP_METHODS[] = {"get", "put", "post", "delete",
                                           "options", "head", "patch", "trace"};

static bool is_http_method(const char *key)
{
    for (size_t i = 0; i < sizeof HTTP_METHODS / sizeof HTTP_METHODS[0]; i++)
        if (strcmp(key, HTTP_METHODS[i]) == 0)
            return true;
    return false;
}

/* The key of a "key: value" or "key:" line (without indentation) into key,
 * the value (possibly "") in *value; false when the line is not a key. */
static bool split_key(char *s, char *key, size_t cap, const char **value)
{
    char *colon = strstr(s, ": ");
    size_t n = strlen(s);
    if (!colon && n && s[n - 1] == ':')
        colon = s + n - 1;
    if (!colon || (size_t)(colon - s) >= cap)
        return false;
    memcpy(key, s, (size_t)(colon - s));
    key[colon - s] = 0;
    *value = colon[1] ? colon + 2 : colon + 1;
    return true;
}

/* A response key: '200', "200", 200 or default. */
static bool add_code(api_op *op, const char *key)
{
    char k[16];
    size_t n = strlen(key);
    if (n >= sizeof k)
        return false;
    if (n >= 2 && (key[0] == '\'' || key[0] == '"') && key[n - 1] == key[0]) {
        memcpy(k, key + 1, n - 2);
        k[n - 2] = 0;
    } else {
        memcpy(k, key, n + 1);
    }
    if (strcmp(k, "default") == 0) {
        op->has_default = true;
        return true;
    }
    if (strlen(k) != 3 || !isdigit((unsigned char)k[0]) || !isdigit((unsigned char)k[1]) ||
        !isdigit((unsigned char)k[2]) || op->ncodes == MAX_CODES)
        return false;
    op->codes[op->ncodes++] = atoi(k);
    return true;
}

/* Reads docs/openapi.yaml's operations; a line that breaks the layout is a
 * failed check naming it. */
static bool load_doc(api_doc *d)
{
    memset(d, 0, sizeof *d);
    d->text = read_fixture(DOC, &d->len);
    if (!d->text)
        return false;
    char *copy = strdup((const char *)d->text);
    bool in_paths = false, in_responses = false, seen_paths = false, ok = true;
    char cur_path[128] = "";
    api_op *op = NULL;
    int lineno = 0;
    for (char *line = copy, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        lineno++;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
            line[--n] = 0;
        size_t indent = strspn(line, " ");
        if (line[indent] == 0 || line[indent] == '#')
            continue;
        if (line[indent] == '\t') {
            CHECK(false, DOC ":%d: tab in indentation", lineno);
            ok = false;
            continue;
        }
        if (indent == 0) {
            in_paths = strcmp(line, "paths:") == 0;
            CHECK(!(in_paths && seen_paths), DOC ":%d: a second paths:", lineno);
            seen_paths |= in_paths;
            op = NULL;
            continue;
        }
        if (!in_paths)
            continue;
        if (indent < 4 && indent != 2) {
            CHECK(false, DOC ":%d: indented %zu: paths go at 2 spaces, operations at 4",
                  lineno, indent);
            ok = false;
            continue;
        }
        char key[128];
        const char *value;
        bool is_key = split_key(line + indent, key, sizeof key, &value);
        if (indent == 2) {
            op = NULL;
            if (!is_key || key[0] != '/' || *value) {
                CHECK(false, DOC ":%d: expected a plain path like '  /v1/x:', got '%s'",
                      lineno, line);
                ok = false;
                continue;
            }
            snprintf(cur_path, sizeof cur_path, "%s", key);
            continue;
        }
        if (indent == 4) {
            op = NULL;
            if (!is_key || !is_http_method(key))
                continue; /* parameters, summary, ... of the path */
            if (!cur_path[0] || *value || d->nops == MAX_OPS) {
                CHECK(false, DOC ":%d: operation '%s' outside a path, inline or too many",
                      lineno, key);
                ok = false;
                continue;
            }
            op = &d->ops[d->nops++];
            snprintf(op->path, sizeof op->path, "%s", cur_path);
            for (size_t i = 0; key[i] && i < sizeof op->method - 1; i++)
                op->method[i] = (char)toupper((unsigned char)key[i]);
            op->line = lineno;
            for (size_t i = 0; i + 1 < d->nops; i++)
                if (strcmp(d->ops[i].path, op->path) == 0 &&
                    strcmp(d->ops[i].method, op->method) == 0) {
                    CHECK(false, DOC ":%d: %s %s twice", lineno, op->method, op->path);
                    ok = false;
                }
            continue;
        }
        if (!op)
            continue;
        if (indent == 6) {
            in_responses = is_key && strcmp(key, "responses") == 0;
            if (is_key && strcmp(key, "security") == 0)
                op->secured = strcmp(value, "[]") != 0;
            continue;
        }
        if (indent == 8 && in_responses) {
            if (!is_key || *value || !add_code(op, key)) {
                CHECK(false, DOC ":%d: expected a response like \"        '200':\", got '%s'",
                      lineno, line);
                ok = false;
            }
        }
    }
    free(copy);
    CHECK(seen_paths, DOC ": no 'paths:' at column 0");
    CHECK(d->nops > 0, DOC ": no operations found (path at 2 spaces, method at 4)");
    for (size_t i = 0; i < d->nops; i++)
        CHECK(d->ops[i].ncodes > 0 || d->ops[i].has_default,
              DOC ":%d: %s %s has no responses at 8 spaces", d->ops[i].line,
              d->ops[i].method, d->ops[i].path);
    return ok && seen_paths && d->nops > 0;
}

static const api_op *find_op(const api_doc *d, const char *method, const char *path)
{
    for (size_t i = 0; i < d->nops; i++)
        if (strcmp(d->ops[i].method, method) == 0 && strcmp(d->ops[i].path, path) == 0)
            return &d->ops[i];
    return NULL;
}

static bool documents(const api_op *op, int status)
{
    if (op->has_default)
        return true;
    for (size_t i = 0; i < op->ncodes; i++)
        if (op->codes[i] == status)
            return true;
    return false;
}

static void codes_text(const api_op *op, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < op->ncodes && o + 5 < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%d", i ? " " : "", op->codes[i]);
    if (op->has_default && o + 9 < cap)
        snprintf(out + o, cap - o, " default");
}

/* Whether method is in a "GET, DELETE" list. */
static bool in_list(const char *list, const char *method)
{
    size_t ml = strlen(method);
    for (const char *p = list; p && *p;) {
        p += strspn(p, ", ");
        size_t n = strcspn(p, ", ");
        if (n == ml && strncasecmp(p, method, n) == 0)
            return true;
        p += n;
    }
    return false;
}

/* The methods a path documents, "GET, POST" style, in document order. */
static void doc_methods(const api_doc *d, const char *path, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < d->nops; i++)
        if (strcmp(d->ops[i].path, path) == 0 && o + 16 < cap)
            o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? ", " : "", d->ops[i].method);
}

/* Two method lists hold the same methods (HEAD counts as GET: the server
 * answers it wherever GET is, and the document does not list it). */
static bool same_methods(const char *a, const char *b)
{
    char x[64];
    for (int pass = 0; pass < 2; pass++) {
        const char *from = pass ? b : a, *to = pass ? a : b;
        for (const char *p = from; *p;) {
            p += strspn(p, ", ");
            size_t n = strcspn(p, ", ");
            if (!n)
                break;
            snprintf(x, sizeof x, "%.*s", (int)n, p);
            if (!in_list(to, strcasecmp(x, "HEAD") == 0 ? "GET" : x))
                return false;
            p += n;
        }
    }
    return true;
}

/* ---- (a) the document and the router list the same operations ---------- */

TEST(openapi_documents_exactly_the_routes)
{
    api_doc d;
    if (!load_doc(&d)) {
        free(d.text);
        return;
    }
    size_t n = 0;
    const http_route_info *routes = http_routes(&n);
    CHECK(routes && n > 0, "http_routes() lists no routes");
    size_t served = 0;
    for (size_t i = 0; routes && i < n; i++) {
        const char *p = routes[i].methods;
        CHECK(p && *p, "http_routes(): %s has no methods", routes[i].path);
        while (p && *p) {
            p += strspn(p, ", ");
            size_t len = strcspn(p, ", ");
            if (!len)
                break;
            char m[16];
            snprintf(m, sizeof m, "%.*s", (int)len, p);
            for (char *c = m; *c; c++)
                *c = (char)toupper((unsigned char)*c);
            served++;
            CHECK(find_op(&d, m, routes[i].path),
                  "%s %s is served (http_routes) but missing from " DOC, m, routes[i].path);
            p += len;
        }
    }
    for (size_t i = 0; i < d.nops; i++) {
        bool found = false;
        for (size_t k = 0; routes && k < n && !found; k++)
            found = strcmp(routes[k].path, d.ops[i].path) == 0 &&
                    in_list(routes[k].methods, d.ops[i].method);
        CHECK(found, DOC ":%d documents %s %s, which http_routes() does not serve",
              d.ops[i].line, d.ops[i].method, d.ops[i].path);
    }
    CHECK(served == d.nops, "http_routes() serves %zu operations, " DOC " documents %zu",
          served, d.nops);
    free(d.text);
}

/* ---- (b) the server serves the document itself -------------------------- */

static const char *const server_flags[] = {"--upload-token", TOKEN, "--report-token", TOKEN,
                                           "--read-token", TOKEN, NULL};
static lazy_server osrv = {"openapi.db", server_flags, {0}, false};

__attribute__((destructor)) static void stop_openapi_server(void)
{
    lazy_stop(&osrv);
}

TEST(openapi_served_byte_for_byte)
{
    size_t len;
    uint8_t *want = read_fixture(DOC, &len);
    if (!want)
        return;
    http_resp r;
    bool ok = http_do(lazy_port(&osrv), "GET", "/v1/openapi.yaml", NULL, NULL, 0, &r);
    CHECK(ok, "GET /v1/openapi.yaml: no answer");
    if (ok) {
        CHECK(r.status == 200, "GET /v1/openapi.yaml: status %d", r.status);
        const char *ct = http_header(&r, "Content-Type");
        char media[64] = "";
        if (ct)
            snprintf(media, sizeof media, "%.*s", (int)strcspn(ct, "; "), ct);
        CHECK(strcasecmp(media, "application/yaml") == 0 ||
                  strcasecmp(media, "application/x-yaml") == 0 ||
                  strcasecmp(media, "text/yaml") == 0 || strcasecmp(media, "text/x-yaml") == 0,
              "GET /v1/openapi.yaml: Content-Type '%s' is not YAML", ct ? ct : "(none)");
        size_t same = 0;
        while (same < len && same < r.len && want[same] == (uint8_t)r.body[same])
            same++;
        CHECK(r.len == len && same == len,
              "GET /v1/openapi.yaml: %zu bytes, " DOC " has %zu; first difference at byte %zu "
              "(is the binary built from this document?)",
              r.len, len, same);
        http_resp_free(&r);
    }
    free(want);
}

/* ---- (c), (d) every operation is routed; its answers are documented ------ */

static char sample_uuid[37];

/* tmpl with each {parameter} replaced by a sample value; false for a
 * parameter the test has no value for. */
static bool fill_template(const char *tmpl, char *out, size_t cap)
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
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(end - p - 1), p + 1);
        const char *v = strcmp(name, "uuid") == 0     ? sample_uuid
                        : strcmp(name, "id") == 0     ? "999999"
                        : strcmp(name, "file") == 0   ? "style.css"
                        : strcmp(name, "module") == 0 ? "main.js"
                        : strcmp(name, "sha256") == 0 /* of "abc" */
                            ? "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
                            : NULL;
        CHECK(v, "%s: no sample value for {%s}; add one to fill_template", tmpl, name);
        if (!v)
            return false;
        o += (size_t)snprintf(out + o, cap - o, "%s", v);
        p = end + 1;
    }
    out[o < cap ? o : cap - 1] = 0;
    return o < cap;
}

/* A request to one documented operation and what it must get. */
typedef struct {
    const char *method, *tmpl; /* the operation */
    const char *path;          /* concrete path; NULL: tmpl with sample values */
    const char *body_file;     /* fixture sent as the body, or NULL */
    const char *body;          /* literal body, or NULL */
    int status;                /* expected; 0: any documented one */
    const char *code;          /* expected error code, or NULL */
} probe;

/* Beyond the one bare request per operation: answers each operation gives
 * on real input, so their statuses are checked against the document too.
 * In order: the crash posted first is crash 1 of the fresh database. */
static const probe extra_probes[] = {
    {"POST", "/v1/images", "/v1/images?name=probe", "fixtures/bin/libfix-arm64.dylib", NULL,
     201, NULL},
    {"POST", "/v1/images", "/v1/images?name=probe", "fixtures/bin/libfix-arm64.dylib", NULL,
     200, NULL},
    {"POST", "/v1/images", NULL, NULL, "not a Mach-O file", 415, "not_macho"},
    {"GET", "/v1/images", "/v1/images?limit=0", NULL, NULL, 400, "invalid_request"},
    {"GET", "/v1/images/{uuid}", "/v1/images/not-a-uuid", NULL, NULL, 400, "invalid_uuid"},
    {"DELETE", "/v1/images/{uuid}", "/v1/images/not-a-uuid", NULL, NULL, 400, "invalid_uuid"},
    {"POST", "/v1/symbolicate", NULL, NULL, "{\"threads\": 5}", 400, "invalid_request"},
    {"POST", "/v1/crashes", NULL, "fixtures/crashes/bigapp-twin.crash", NULL, 201, NULL},
    {"POST", "/v1/crashes", "/v1/crashes?store=false", "fixtures/crashes/bigapp-twin.ips", NULL,
     200, NULL},
    {"POST", "/v1/crashes", "/v1/crashes?format=text", "fixtures/crashes/bigapp-twin.ips", NULL,
     201, NULL},
    {"GET", "/v1/crashes/{id}", "/v1/crashes/1", NULL, NULL, 200, NULL},
    {"GET", "/v1/crashes/{id}", "/v1/crashes/1?format=text", NULL, NULL, 200, NULL},
    {"GET", "/v1/crashes/{id}", "/v1/crashes/x1", NULL, NULL, 400, "invalid_request"},
    {"GET", "/v1/crashes", "/v1/crashes?cursor=x", NULL, NULL, 400, "invalid_request"},
    {"GET", "/v1/crashes/groups", "/v1/crashes/groups?limit=1001", NULL, NULL, 400,
     "invalid_request"},
    {"GET", "/v1/missing", "/v1/missing?limit=abc", NULL, NULL, 400, "invalid_request"},
    {"GET", "/v1/crashes/group", "/v1/crashes/group?kind=crash&signature=no%20such", NULL, NULL,
     404, "not_found"},
    {"POST", "/v1/crashes/group/state", NULL, NULL,
     "{\"kind\": \"crash\", \"signature\": \"no such\", \"state\": \"resolved\"}", 404,
     "not_found"},
    {"POST", "/v1/crashes/group/state", NULL, NULL,
     "{\"kind\": \"crash\", \"signature\": \"no such\", \"state\": \"regressed\"}", 400,
     "invalid_request"},
    {"GET", "/v1/crashes/group/history", "/v1/crashes/group/history?kind=crash&signature=x", NULL,
     NULL, 200, NULL},
    {"GET", "/v1/crashes/values", "/v1/crashes/values?dim=app_version&limit=1", NULL, NULL, 200,
     NULL},
    {"GET", "/v1/crashes/values", "/v1/crashes/values?dim=app_version&cursor=x", NULL, NULL, 400,
     "invalid_request"},
    {"GET", "/v1/crashes/group/spread",
     "/v1/crashes/group/spread?kind=crash&signature=x&dim=os_version", NULL, NULL, 200, NULL},
    {"GET", "/v1/crashes/trend", "/v1/crashes/trend?app_version=1.0&state=resolved", NULL, NULL,
     200, NULL},
    {"GET", "/v1/crashes/groups", "/v1/crashes/groups?state=closed", NULL, NULL, 400,
     "invalid_request"},
    {"GET", "/v1/crashes/groups", "/v1/crashes/groups?state=resolved,regressed&new_in=1.0", NULL,
     NULL, 200, NULL},
    {"GET", "/v1/crashes/trend", "/v1/crashes/trend?days=400", NULL, NULL, 400,
     "invalid_request"},
    {"GET", "/v1/crashes/trend", "/v1/crashes/trend?days=7&kind=crash", NULL, NULL, 200, NULL},
    {"GET", "/v1/crashes/groups", "/v1/crashes/groups?trend=30&app_version=1.0", NULL, NULL,
     200, NULL},
    {"DELETE", "/v1/crashes/{id}", "/v1/crashes/2", NULL, NULL, 204, NULL},
    {"DELETE", "/v1/crashes/{id}", "/v1/crashes/2", NULL, NULL, 404, "not_found"},
    {"DELETE", "/v1/crashes/{id}", "/v1/crashes/x", NULL, NULL, 400, "invalid_request"},
    {"GET", "/assets/{file}", "/assets/no-such-file.js", NULL, NULL, 404, "not_found"},
    {"GET", "/assets/js/{module}", "/assets/js/no-such-module.js", NULL, NULL, 404, "not_found"},
    {"POST", "/v1/system-symbols", NULL, "fixtures/bin/libfix-arm64.dylib", NULL, 415,
     "not_zip"},
    {"POST", "/v1/system-symbols", NULL, "fixtures/zip/dsym-single.zip", NULL, 422,
     "not_devsupport"},
    {"POST", "/v1/system-symbols", NULL, "fixtures/zip/truncated.zip", NULL, 400,
     "malformed_zip"},
    {"DELETE", "/v1/system-symbols/{id}", "/v1/system-symbols/x1", NULL, NULL, 400,
     "invalid_id"},
    {"POST", "/v1/images/check", NULL, NULL,
     "{\"items\": [{\"uuid\": \"4C4C4402-5555-3144-A178-C360AFACD7DC\"}]}", 200, NULL},
    {"POST", "/v1/images/check", NULL, NULL, "{\"items\": [{\"uuid\": 5}]}", 400,
     "invalid_request"},
    {"POST", "/v1/chunks/{sha256}", NULL, NULL, "abc", 201, NULL},
    {"POST", "/v1/chunks/{sha256}", NULL, NULL, "abc", 200, NULL},
    {"POST", "/v1/chunks/{sha256}", NULL, NULL, "abd", 400, "hash_mismatch"},
    {"POST", "/v1/chunks/{sha256}", "/v1/chunks/abc", NULL, "abc", 400, "invalid_hash"},
    {"POST", "/v1/chunks/missing", NULL, NULL,
     "{\"chunks\": [\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"]}",
     200, NULL},
    {"POST", "/v1/images/assemble", NULL, NULL,
     "{\"size\": 3, \"sha256\": "
     "\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\", \"chunks\": "
     "[\"0000000000000000000000000000000000000000000000000000000000000000\"]}",
     409, NULL},
    {"POST", "/v1/images/assemble", NULL, NULL,
     "{\"size\": 3, \"sha256\": "
     "\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\", \"chunks\": "
     "[\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"]}",
     415, "not_macho"},
    {"GET", "/v1/images/assemble/{sha256}", NULL, NULL, NULL, 415, "not_macho"},
};

/* Not a route at all: the 404 of a path no route matched. */
static bool unrouted(const http_resp *r)
{
    return r->status == 404 && r->body && strstr(r->body, "no route");
}

/* Sends p (with the token when auth) and checks the answer against op. */
static void run_probe(const api_doc *d, const probe *p, bool auth)
{
    const api_op *op = find_op(d, p->method, p->tmpl);
    if (!op)
        return; /* openapi_documents_exactly_the_routes names it */
    char path[512];
    if (p->path)
        snprintf(path, sizeof path, "%s", p->path);
    else if (!fill_template(p->tmpl, path, sizeof path))
        return;
    size_t len = 0;
    uint8_t *file = NULL;
    const void *body = p->body;
    if (p->body_file) {
        file = read_fixture(p->body_file, &len);
        if (!file)
            return;
        body = file;
    } else if (p->body) {
        len = strlen(p->body);
    }
    const char *hdr = auth ? "Authorization: Bearer " TOKEN "\r\n" : NULL;
    http_resp r;
    bool ok = http_do(lazy_port(&osrv), p->method, path, hdr, body, len, &r);
    free(file);
    CHECK(ok, "%s %s: no answer", p->method, path);
    if (!ok)
        return;
    char codes[128];
    codes_text(op, codes, sizeof codes);
    /* (c) routed: neither "no route" nor a 405 */
    CHECK(!unrouted(&r) && r.status != 405,
          "%s %s (documented as %s %s) is not routed: %d %.200s", p->method, path,
          op->method, op->path, r.status, r.body ? r.body : "");
    /* the token guards exactly the operations documented with security */
    if (!auth && op->secured)
        CHECK(r.status == 401 && strcmp(error_code(&r), "unauthorized") == 0,
              "%s %s without the token: %d '%s', but " DOC ":%d says it needs one", p->method,
              path, r.status, error_code(&r), op->line);
    if (!op->secured)
        CHECK(r.status != 401,
              "%s %s: 401, but " DOC ":%d documents no security for it", p->method, path,
              op->line);
    if (auth || !op->secured) {
        if (p->status)
            CHECK(r.status == p->status, "%s %s: status %d, expected %d: %.200s", p->method,
                  path, r.status, p->status, r.body ? r.body : "");
        if (p->code)
            CHECK(strcmp(error_code(&r), p->code) == 0, "%s %s: code '%s', expected '%s'",
                  p->method, path, error_code(&r), p->code);
    }
    /* (d) the status is among the operation's documented responses */
    CHECK(documents(op, r.status),
          "%s %s answered %d, which " DOC ":%d does not list for %s %s (it lists %s)",
          p->method, path, r.status, op->line, op->method, op->path, codes);
    http_resp_free(&r);
}

static void random_uuid(char out[37])
{
    uint8_t u[16] = {0};
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(u, 1, sizeof u, f) : 0;
    if (f)
        fclose(f);
    CHECK(got == sizeof u, "cannot read /dev/urandom");
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* version 4 */
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
    uuid_format(u, out);
}

TEST(openapi_every_operation_is_routed_and_its_answers_documented)
{
    api_doc d;
    if (!load_doc(&d)) {
        free(d.text);
        return;
    }
    random_uuid(sample_uuid);
    /* A symbolicate request naming an image that was never uploaded. */
    char sym_body[512];
    snprintf(sym_body, sizeof sym_body,
             "{\"images\": [{\"uuid\": \"%s\", \"arch\": \"arm64\", \"load_address\": "
             "\"0x104a38000\"}], \"threads\": [{\"id\": 0, \"crashed\": true, \"frames\": "
             "[\"0x104a389f8\", {\"address\": \"0x104a38b04\", \"image\": 0}]}]}",
             sample_uuid);

    /* One bare request per documented operation, sample path parameters,
     * no body (a JSON request for /v1/symbolicate); a secured operation
     * once without the token, then with it. */
    for (size_t i = 0; i < d.nops; i++) {
        const api_op *op = &d.ops[i];
        probe p = {op->method, op->path, NULL, NULL, NULL, 0, NULL};
        bool has_param = strchr(op->path, '{') != NULL;
        if (strcmp(op->method, "GET") == 0 && !has_param)
            p.status = 200;
        if (strcmp(op->path, "/v1/crashes/group") == 0 ||
            strcmp(op->path, "/v1/crashes/group/history") == 0 ||
            strcmp(op->path, "/v1/crashes/group/spread") == 0 ||
            strcmp(op->path, "/v1/crashes/values") == 0) {
            p.status = 400; /* a group needs its kind and signature */
            p.code = "invalid_request";
        }
        if (strstr(op->path, "{uuid}") || strstr(op->path, "{id}")) {
            p.status = 404; /* an unknown image or crash */
            p.code = "not_found";
        }
        if (strstr(op->path, "{file}"))
            p.status = 200; /* style.css */
        if (strstr(op->path, "{module}"))
            p.status = 200; /* js/main.js */
        if (strcmp(op->method, "POST") == 0 && strcmp(op->path, "/v1/symbolicate") == 0) {
            p.body = sym_body;
            p.status = 200;
        }
        if (op->secured)
            run_probe(&d, &p, false);
        run_probe(&d, &p, op->secured);
    }
    for (size_t i = 0; i < sizeof extra_probes / sizeof extra_probes[0]; i++) {
        CHECK(find_op(&d, extra_probes[i].method, extra_probes[i].tmpl),
              "extra probe %s %s: not in " DOC, extra_probes[i].method, extra_probes[i].tmpl);
        run_probe(&d, &extra_probes[i], true);
    }

    /* Every method a path does not document is a 405 naming the documented
     * ones in Allow. HEAD is allowed wherever GET is. */
    static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH",
                                          "OPTIONS"};
    for (size_t i = 0; i < d.nops; i++) {
        bool first = true;
        for (size_t k = 0; k < i; k++)
            first &= strcmp(d.ops[k].path, d.ops[i].path) != 0;
        if (!first)
            continue; /* each path once */
        char allowed[128], path[512];
        doc_methods(&d, d.ops[i].path, allowed, sizeof allowed);
        if (!fill_template(d.ops[i].path, path, sizeof path))
            continue;
        for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
            const char *meth = methods[m];
            if (in_list(allowed, strcmp(meth, "HEAD") == 0 ? "GET" : meth))
                continue;
            http_resp r;
            bool ok = http_do(lazy_port(&osrv), meth, path, NULL, NULL, 0, &r);
            CHECK(ok, "%s %s: no answer", meth, path);
            if (!ok)
                continue;
            CHECK(r.status == 405, "%s %s: status %d, expected 405 (" DOC " documents only %s)",
                  meth, path, r.status, allowed);
            if (strcmp(meth, "HEAD") != 0) /* no body to carry the code */
                CHECK(strcmp(error_code(&r), "method_not_allowed") == 0,
                      "%s %s: code '%s', expected method_not_allowed", meth, path,
                      error_code(&r));
            const char *allow = http_header(&r, "Allow");
            CHECK(allow && same_methods(allow, allowed),
                  "%s %s: Allow '%s', " DOC " documents '%s'", meth, path,
                  allow ? allow : "(none)", allowed);
            http_resp_free(&r);
        }
    }

    /* The "no route" test above tells routes from non-routes. */
    http_resp r;
    if (http_do(lazy_port(&osrv), "GET", "/v1/no-such-route", NULL, NULL, 0, &r)) {
        CHECK(unrouted(&r), "GET /v1/no-such-route: %d %.100s (expected 404 no route)",
              r.status, r.body ? r.body : "");
        http_resp_free(&r);
    }
    free(d.text);
}

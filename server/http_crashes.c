/* Crash reports over HTTP: posting (parse, symbolicate, store), reading a
 * stored one back symbolicated anew, the listing, the groups per kind and
 * the list of images stored crashes miss.
 *
 * A report is refused only when it is no report at all (415) or over a
 * limit (413): whatever else the parser cannot read it skips and records
 * as a warning, and the report is stored and answered with its warnings. */
#include <stdlib.h>
#include <string.h>

#include "../parser/crash.h"
#include "../util/hex.h"
#include "crashsym.h"
#include "http_int.h"

/* The answer's form: ?format=text, else an Accept that wants text/plain
 * and not JSON. */
static bool want_text(struct MHD_Connection *c)
{
    const char *f = query_arg(c, "format");
    if (f)
        return strcmp(f, "text") == 0;
    const char *acc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    return acc && strstr(acc, "text/plain") && !strstr(acc, "application/json");
}

/* ?kind= of the listings: NULL (no filter, also for an empty value) in
 * *kind, or false with a 400 queued for a name crash_kind_parse does not
 * know. */
static bool kind_arg(struct MHD_Connection *c, const char **kind, enum MHD_Result *refused)
{
    *kind = query_arg(c, "kind");
    if (*kind && !**kind)
        *kind = NULL;
    crash_kind k;
    if (!*kind || crash_kind_parse(*kind, &k))
        return true;
    char names[160] = "";
    size_t o = 0;
    for (int i = 0; i < CRASH_KIND_COUNT && o < sizeof names; i++)
        o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "",
                              crash_kind_name((crash_kind)i));
    *refused = reply_error(c, 400, "invalid_request", "unknown kind '%.64s' (one of %s)",
                           *kind, names);
    return false;
}

/* A report crash_parse refused. The parser only refuses what is no report
 * at all (415), past a limit (413) or out of memory (503); it reads broken
 * parts with warnings, so a SYMD_E_CORRUPT that still comes back is 422,
 * never the 400 of a bad request. Anything else is our bug (500). */
static enum MHD_Result reply_refused(struct MHD_Connection *c, const symd_err *err)
{
    switch (err->kind) {
    case SYMD_E_NOT_CRASH_REPORT:
    case SYMD_E_TOO_LARGE:
    case SYMD_E_NOMEM:
        return reply_status(c, err, "");
    case SYMD_E_CORRUPT:
        return reply_error(c, 422, "malformed_crash_report", "%s", err->msg);
    case SYMD_E_UNSUPPORTED:
        return reply_error(c, 422, "unsupported", "%s", err->msg);
    default:
        return reply_error(c, 500, "internal_error", "crash_parse: %s (%s)", err->msg,
                           symd_status_name(err->kind));
    }
}

/* Counts a symbolicated report's frames into the metrics. */
static void count_crash_frames(server *srv, const crash_report *r,
                               const crash_symbolication *sym)
{
    uint64_t n[4] = {0};
    for (size_t i = 0; i < r->total_frames; i++) {
        switch (sym->frames[i].status) {
        case CSYM_SYMBOLICATED: n[0]++; break;
        case CSYM_NO_SYMBOL: n[1]++; break;
        case CSYM_MISSING_IMAGE: n[2]++; break;
        default: n[3]++; break;
        }
    }
    metrics_frames(srv->m, n[0], n[1], n[2], n[3]);
}

/* The images a crash references, for the missing-images list (strings
 * borrowed from r). */
static store_crash_image *crash_images_of(const crash_report *r, size_t *n)
{
    store_crash_image *v = calloc(r->nimages ? r->nimages : 1, sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < r->nimages; i++) {
        if (!r->images[i].has_uuid)
            continue;
        memcpy(v[*n].uuid, r->images[i].uuid, 16);
        v[*n].arch = r->images[i].arch ? r->images[i].arch : "";
        v[*n].name = r->images[i].name ? r->images[i].name : "";
        (*n)++;
    }
    return v;
}

/* Answers a symbolicated report as JSON or text (input[0..len): the bytes
 * r was parsed from). id < 0: not stored. */
static enum MHD_Result answer_crash(struct MHD_Connection *c, const crash_report *r,
                                    const crash_symbolication *sym, const uint8_t *input,
                                    size_t input_len, int64_t id, unsigned status, bool text)
{
    dynbuf out;
    dynbuf_init(&out, MAX_RESPONSE);
    symd_err err = {0};
    symd_status st = text ? crash_render_text(r, sym, input, input_len, &out, &err)
                          : crash_write_json(r, sym, id, &out, &err);
    if (st != SYMD_OK) {
        dynbuf_free(&out);
        return reply_status(c, &err, "internal_error");
    }
    if (!text)
        return reply_dynbuf(c, status, &out);
    size_t len;
    uint8_t *data = dynbuf_take(&out, &len);
    if (!data) {
        data = (uint8_t *)strdup("");
        len = 0;
    }
    return reply_bytes(c, status, data, len, "text/plain; charset=utf-8");
}

/* Stores the posted report: its original bytes, what the header says, its
 * kind and bug_type, the signature, the answer JSON and the images it
 * references. *id is the new crash's. */
static symd_status store_report(server *srv, const req_state *rs, const crash_report *r,
                                const crash_symbolication *sym, int64_t *id, symd_err *err)
{
    size_t nimg = 0;
    store_crash_image *imgs = crash_images_of(r, &nimg);
    if (!imgs)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    dynbuf res;
    dynbuf_init(&res, MAX_RESPONSE);
    symd_status st = crash_write_json(r, sym, -1, &res, err);
    if (st == SYMD_OK) {
        store_crash sc = {0}; /* every string borrowed */
        sc.format = r->format == CRASH_FORMAT_IPS ? "ips" : "crash";
        sc.kind = (char *)crash_kind_name(r->kind);
        sc.bug_type = r->bug_type;
        sc.process = r->process;
        sc.bundle_id = r->bundle_id;
        sc.app_version = r->app_version;
        sc.os_version = r->os_version;
        sc.hardware_model = r->hardware_model;
        sc.incident_id = r->incident_id;
        sc.exception_type = r->exception_type;
        sc.signature = sym->signature;
        sc.original = rs->body.data ? rs->body.data : (uint8_t *)"";
        sc.original_len = rs->body.len;
        sc.result = (char *)res.data;
        st = store_put_crash(srv->st, &sc, imgs, nimg, id, err);
    }
    free(imgs);
    dynbuf_free(&res);
    return st;
}

/* POST /v1/crashes: parsed, symbolicated, stored (201) unless ?store=false
 * (200), answered with the report's warnings. */
enum MHD_Result handle_crash_post(server *srv, struct MHD_Connection *c, req_state *rs)
{
    if (rs->too_large)
        return reply_error(c, 413, "too_large", "request body exceeds %llu bytes",
                           (unsigned long long)rs->limit);
    const char *sp = query_arg(c, "store");
    bool keep = !(sp && (strcmp(sp, "false") == 0 || strcmp(sp, "0") == 0));
    crash_report r;
    symd_err err = {0};
    const uint8_t *body = rs->body.data ? rs->body.data : (const uint8_t *)"";
    if (crash_parse(body, rs->body.len, &r, &err) != SYMD_OK)
        return reply_refused(c, &err);
    crash_symbolication sym;
    if (crash_symbolicate(srv->st, &r, &sym, &err) != SYMD_OK) {
        crash_report_free(&r);
        return reply_status(c, &err, "internal_error");
    }
    count_crash_frames(srv, &r, &sym);
    int64_t id = -1;
    enum MHD_Result ret;
    if (keep && store_report(srv, rs, &r, &sym, &id, &err) != SYMD_OK)
        ret = reply_status(c, &err, "internal_error");
    else
        ret = answer_crash(c, &r, &sym, body, rs->body.len, id, keep ? 201 : 200,
                           want_text(c));
    crash_symbolication_free(&sym);
    crash_report_free(&r);
    return ret;
}

/* A stored crash that cannot be symbolicated again (its original no longer
 * parses, or its symbolication fails on what it says): what can still be
 * read, 200. As text, the original as it was posted; as JSON, the result
 * stored at its last symbolication, with its id, kind and bug_type, and a
 * warning saying why it is not fresh (a result jansson cannot read is sent
 * as stored). The input is at fault, so never a 500. */
static enum MHD_Result answer_stored(struct MHD_Connection *c, const store_crash *sc,
                                     const symd_err *why, bool text)
{
    if (text) {
        uint8_t *data = malloc(sc->original_len ? sc->original_len : 1);
        if (!data)
            return reply_error(c, 503, "out_of_memory", "out of memory");
        if (sc->original_len)
            memcpy(data, sc->original, sc->original_len);
        return reply_bytes(c, 200, data, sc->original_len, "text/plain; charset=utf-8");
    }
    const char *stored = sc->result ? sc->result : "{}";
    json_error_t je;
    json_t *doc = json_loads(stored, 0, &je);
    if (!json_is_object(doc)) {
        json_decref(doc);
        char *copy = strdup(stored);
        if (!copy)
            return reply_error(c, 503, "out_of_memory", "out of memory");
        return reply_bytes(c, 200, (uint8_t *)copy, strlen(copy), "application/json");
    }
    json_object_set_new(doc, "id", json_integer(sc->id));
    if (!json_object_get(doc, "kind"))
        json_object_set_new(doc, "kind", json_string(sc->kind ? sc->kind : "crash"));
    if (!json_object_get(doc, "bug_type"))
        json_object_set_new(doc, "bug_type",
                            sc->bug_type ? json_integer(sc->bug_type) : json_null());
    json_t *warnings = json_object_get(doc, "warnings");
    if (!json_is_array(warnings)) {
        warnings = json_array();
        json_object_set_new(doc, "warnings", warnings);
    }
    char msg[sizeof why->msg + 96];
    snprintf(msg, sizeof msg,
             "the stored report cannot be read again (%s); this is its result as stored",
             why->msg);
    json_array_append_new(warnings,
                          json_pack("{s:s, s:s}", "where", "report", "message", msg));
    return reply_json(c, 200, doc);
}

/* GET /v1/crashes/{id}: the current symbolication of a stored crash, re-run
 * on every read so an image uploaded since shows up; the stored result,
 * signature, kind and bug_type follow. */
enum MHD_Result handle_crash_get(server *srv, struct MHD_Connection *c, req_state *rs)
{
    uint64_t id;
    if (!num_parse_u64(rs->path_arg, &id) || id == 0 || id > INT64_MAX)
        return reply_error(c, 400, "invalid_request", "'%s' is not a crash id", rs->path_arg);
    store_crash sc;
    symd_err err = {0};
    if (store_get_crash(srv->st, (int64_t)id, true, &sc, &err) != SYMD_OK)
        return reply_status(c, &err, "internal_error");
    bool text = want_text(c);
    enum MHD_Result ret;
    crash_report r;
    if (crash_parse(sc.original, sc.original_len, &r, &err) != SYMD_OK) {
        ret = err.kind == SYMD_E_NOMEM ? reply_status(c, &err, "")
                                       : answer_stored(c, &sc, &err, text);
        store_crash_free(&sc);
        return ret;
    }
    crash_symbolication sym;
    if (crash_symbolicate(srv->st, &r, &sym, &err) != SYMD_OK) {
        bool ours = err.kind == SYMD_E_NOMEM || err.kind == SYMD_E_DB || err.kind == SYMD_E_IO;
        ret = ours ? reply_status(c, &err, "internal_error") : answer_stored(c, &sc, &err, text);
        crash_report_free(&r);
        store_crash_free(&sc);
        return ret;
    }
    count_crash_frames(srv, &r, &sym);
    const char *kind = crash_kind_name(r.kind);
    dynbuf res;
    dynbuf_init(&res, MAX_RESPONSE);
    if (crash_write_json(&r, &sym, -1, &res, &err) == SYMD_OK &&
        (!sc.result || strcmp(sc.result, (const char *)res.data) != 0 ||
         !sc.signature || strcmp(sc.signature, sym.signature) != 0 || !sc.kind ||
         strcmp(sc.kind, kind) != 0 || sc.bug_type != r.bug_type)) {
        symd_err e2 = {0}; /* the answer stands even if the refresh fails */
        store_update_crash(srv->st, (int64_t)id, sym.signature, kind, r.bug_type,
                           (const char *)res.data, &e2);
    }
    dynbuf_free(&res);
    ret = answer_crash(c, &r, &sym, sc.original, sc.original_len, (int64_t)id, 200, text);
    crash_symbolication_free(&sym);
    crash_report_free(&r);
    store_crash_free(&sc);
    return ret;
}

/* ?limit, ?cursor and ?kind of the crash listings; false with a 400
 * queued in *refused for a bad one. */
static bool crash_list_args(struct MHD_Connection *c, uint64_t *limit, uint64_t *before,
                            const char **kind, enum MHD_Result *refused)
{
    const char *bad = list_args(c, limit, before);
    if (bad) {
        *refused = reply_error(c, 400, "invalid_request", "%s", bad);
        return false;
    }
    return kind_arg(c, kind, refused);
}

/* GET /v1/crashes: one page, newest first (?query, ?kind, ?signature,
 * ?limit, ?cursor). */
enum MHD_Result handle_crash_list(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    const char *kind;
    enum MHD_Result refused;
    if (!crash_list_args(c, &limit, &before, &kind, &refused))
        return refused;
    store_crash *rows = calloc((size_t)limit, sizeof *rows);
    if (!rows)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    bool more;
    symd_err err = {0};
    if (store_list_crashes(srv->st, query_arg(c, "query"), kind, query_arg(c, "signature"),
                           (int64_t)before, (size_t)limit, rows, &n, &more,
                           &err) != SYMD_OK) {
        free(rows);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        store_crash *sc = &rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_integer(sc->id));
        json_object_set_new(o, "created_at", json_integer(sc->created_at));
        json_object_set_new(o, "format", json_str_or_null(sc->format));
        json_object_set_new(o, "kind", json_string(sc->kind ? sc->kind : "crash"));
        json_object_set_new(o, "bug_type",
                            sc->bug_type ? json_integer(sc->bug_type) : json_null());
        json_object_set_new(o, "process", json_str_or_null(sc->process));
        json_object_set_new(o, "bundle_id", json_str_or_null(sc->bundle_id));
        json_object_set_new(o, "app_version", json_str_or_null(sc->app_version));
        json_object_set_new(o, "os_version", json_str_or_null(sc->os_version));
        json_object_set_new(o, "hardware_model", json_str_or_null(sc->hardware_model));
        json_object_set_new(o, "incident_id", json_str_or_null(sc->incident_id));
        json_object_set_new(o, "exception_type", json_str_or_null(sc->exception_type));
        json_object_set_new(o, "signature", json_str_or_null(sc->signature));
        json_array_append_new(arr, o);
    }
    json_t *doc = json_pack("{s:o}", "crashes", arr);
    set_next_cursor(doc, more, n ? rows[n - 1].id : 0);
    for (size_t i = 0; i < n; i++)
        store_crash_free(&rows[i]);
    free(rows);
    return reply_json(c, 200, doc);
}

/* GET /v1/crashes/groups: (kind, signature) groups, most frequent first
 * (?query, ?kind, ?limit). */
enum MHD_Result handle_crash_groups(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    const char *kind;
    enum MHD_Result refused;
    if (!crash_list_args(c, &limit, &before, &kind, &refused))
        return refused;
    store_crash_group *g = calloc((size_t)limit, sizeof *g);
    if (!g)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    symd_err err = {0};
    if (store_crash_groups(srv->st, query_arg(c, "query"), kind, (size_t)limit, g, &n,
                           &err) != SYMD_OK) {
        free(g);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "kind", json_string(g[i].kind ? g[i].kind : "crash"));
        json_object_set_new(o, "signature", json_str_or_null(g[i].signature));
        json_object_set_new(o, "count", json_integer(g[i].count));
        json_object_set_new(o, "first_seen", json_integer(g[i].first_seen));
        json_object_set_new(o, "last_seen", json_integer(g[i].last_seen));
        json_object_set_new(o, "example_id", json_integer(g[i].example_id));
        json_object_set_new(o, "app_version", json_str_or_null(g[i].app_version));
        json_object_set_new(o, "process", json_str_or_null(g[i].process));
        json_array_append_new(arr, o);
        store_crash_group_free(&g[i]);
    }
    free(g);
    return reply_json(c, 200, json_pack("{s:o}", "groups", arr));
}

/* GET /v1/missing: the images stored crashes need and the store lacks for
 * their arch, most needed first; status found_other_arch (with the archs it
 * is stored under) when the UUID is there under another arch only. */
enum MHD_Result handle_missing(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    const char *bad = list_args(c, &limit, &before);
    if (bad)
        return reply_error(c, 400, "invalid_request", "%s", bad);
    store_missing *m = calloc((size_t)limit, sizeof *m);
    if (!m)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    symd_err err = {0};
    if (store_missing_images(srv->st, (size_t)limit, m, &n, &err) != SYMD_OK) {
        free(m);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        char u[37];
        uuid_format(m[i].uuid, u);
        json_t *stored_archs = json_array();
        for (const char *p = m[i].other_archs; *p;) {
            size_t len = strcspn(p, ",");
            json_array_append_new(stored_archs, json_stringn(p, len));
            p += len + (p[len] == ',');
        }
        json_t *o = json_object();
        json_object_set_new(o, "uuid", json_string(u));
        json_object_set_new(o, "arch", m[i].arch[0] ? json_string(m[i].arch) : json_null());
        json_object_set_new(o, "name", m[i].name[0] ? json_string(m[i].name) : json_null());
        json_object_set_new(o, "status", json_string(m[i].found_other_arch ? "found_other_arch"
                                                                            : "missing"));
        json_object_set_new(o, "stored_archs", stored_archs);
        json_object_set_new(o, "crashes", json_integer(m[i].crashes));
        json_object_set_new(o, "last_crash_id", json_integer(m[i].last_crash_id));
        json_array_append_new(arr, o);
    }
    free(m);
    return reply_json(c, 200, json_pack("{s:o}", "missing", arr));
}

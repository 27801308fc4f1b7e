/* Crash groups over HTTP: the groups listing, one group with its trend and
 * spread, trends, a dimension's values and a group's spread in pages, and a
 * group's workflow (its state set, its history). */
#include <stdlib.h>
#include <string.h>

#include "../parser/crash.h"
#include "../util/hex.h"
#include "http_int.h"

/* The last ?days= (1-366, default 30) UTC days, ending today: the first
 * day (days since 1970) in *from; false with a 400 queued when bad. */
static bool days_arg(struct MHD_Connection *c, size_t *ndays, int64_t *from,
                     enum MHD_Result *refused)
{
    const char *d = query_arg(c, "days");
    uint64_t v = 30;
    if (d && *d && (!num_parse_u64(d, &v) || v < 1 || v > 366)) {
        *refused = reply_error(c, 400, "invalid_request", "days must be 1 to 366, not '%.32s'", d);
        return false;
    }
    *ndays = (size_t)v;
    int64_t today = store_now_ms() / 86400000;
    *from = today - (int64_t)v + 1;
    return true;
}

/* {"from_day", "days": [counts]} of a group's trend, or NULL (err set).
 * With only of (NULL: every report of the group), the days of the reports
 * its version, OS, device and format filters keep, as the listing's count
 * under those filters (its state filters kept the group itself). */
static json_t *trend_json(server *srv, const char *kind, const char *signature,
                          const store_crash_filter *only, int64_t from, size_t ndays,
                          symd_err *err)
{
    int64_t *days = calloc(ndays, sizeof *days);
    if (!days) {
        symd_fail(err, SYMD_E_NOMEM, "out of memory");
        return NULL;
    }
    bool filtered = false;
    if (only) {
        const char *by[] = {only->app_version, only->os_version, only->hardware_model,
                            only->format};
        for (size_t i = 0; i < 4; i++)
            filtered |= by[i] && *by[i];
    }
    store_crash_filter f = {0};
    if (filtered) {
        f.kind = kind;
        f.signature = signature;
        f.app_version = only->app_version;
        f.os_version = only->os_version;
        f.hardware_model = only->hardware_model;
        f.format = only->format;
    }
    if ((filtered ? store_crash_trend_filtered(srv->st, &f, from, ndays, days, err)
                  : store_crash_trend(srv->st, kind, signature, from, ndays, days, err)) !=
        SYMD_OK) {
        free(days);
        return NULL;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < ndays; i++)
        json_array_append_new(arr, json_integer(days[i]));
    free(days);
    return json_pack("{s:I, s:o}", "from_day", (json_int_t)from, "days", arr);
}

static json_t *text_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

/* A group's workflow as the API answers it, set into o: "state",
 * "state_changed_at" (null: never changed), "first_version" and
 * "last_version" (null: none), "reports" (ever filed), "resolved"
 * ({"in": "any"|"next"|"version", "version"}, when resolved or regressed)
 * and "ignored" ({"until", "reports", "seen"}, when ignored). */
static void status_json(json_t *o, const store_group_status *st)
{
    json_object_set_new(o, "state", json_string(store_state_name(st->state)));
    json_object_set_new(o, "state_changed_at",
                        st->changed_at ? json_integer(st->changed_at) : json_null());
    json_object_set_new(o, "first_version", text_or_null(st->first_version));
    json_object_set_new(o, "last_version", text_or_null(st->last_version));
    json_object_set_new(o, "reports", json_integer(st->reports));
    bool res = st->state == STORE_STATE_RESOLVED || st->state == STORE_STATE_REGRESSED;
    json_object_set_new(o, "resolved",
                        res ? json_pack("{s:s, s:o}", "in",
                                        st->resolved_in[0] ? st->resolved_in : "any", "version",
                                        text_or_null(st->resolved_version))
                            : json_null());
    json_object_set_new(
        o, "ignored",
        st->state == STORE_STATE_IGNORED
            ? json_pack("{s:o, s:o, s:I}", "until",
                        st->ignore_until ? json_integer(st->ignore_until) : json_null(),
                        "reports", st->ignore_reports ? json_integer(st->ignore_reports)
                                                      : json_null(),
                        "seen", (json_int_t)st->ignore_seen)
            : json_null());
}

static json_t *group_json(const store_crash_group *g)
{
    json_t *o = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:o, s:o}", "kind",
                          g->kind ? g->kind : "crash", "signature",
                          json_str_or_null(g->signature), "count", (json_int_t)g->count,
                          "first_seen", (json_int_t)g->first_seen, "last_seen",
                          (json_int_t)g->last_seen, "example_id", (json_int_t)g->example_id,
                          "app_version", json_str_or_null(g->app_version), "process",
                          json_str_or_null(g->process));
    status_json(o, &g->status);
    return o;
}

/* GET /v1/crashes/groups: (kind, signature) groups, most frequent first
 * (?query, ?kind, ?app_version, ?os_version, ?hardware_model, ?format, ?limit);
 * ?trend=N adds each group's last N days. */
enum MHD_Result handle_crash_groups(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    store_crash_filter f;
    enum MHD_Result refused;
    if (!crash_list_args(c, &limit, &before, &f, &refused))
        return refused;
    size_t ndays = 0;
    int64_t from = 0;
    const char *t = query_arg(c, "trend");
    if (t && *t) {
        uint64_t v;
        if (!num_parse_u64(t, &v) || v < 1 || v > 366)
            return reply_error(c, 400, "invalid_request", "trend must be 1 to 366, not '%.32s'",
                               t);
        ndays = (size_t)v;
        from = store_now_ms() / 86400000 - (int64_t)v + 1;
    }
    store_crash_group *g = calloc((size_t)limit, sizeof *g);
    if (!g)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    symd_err err = {0};
    /* an ignore whose date passed shows ended (and is recorded so) */
    if (store_end_ignores(srv->st, store_now_ms(), NULL, &err) != SYMD_OK ||
        store_crash_groups(srv->st, &f, (size_t)limit, g, &n, &err) != SYMD_OK) {
        free(g);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    symd_status st = SYMD_OK;
    for (size_t i = 0; i < n; i++) {
        json_t *o = group_json(&g[i]);
        if (ndays && st == SYMD_OK) {
            json_t *tr = trend_json(srv, g[i].kind, g[i].signature, &f, from, ndays, &err);
            if (tr)
                json_object_set_new(o, "trend", tr);
            else
                st = err.kind;
        }
        json_array_append_new(arr, o);
        store_crash_group_free(&g[i]);
    }
    free(g);
    if (st != SYMD_OK) {
        json_decref(arr);
        return reply_status(c, &err, "internal_error");
    }
    return reply_json(c, 200, json_pack("{s:o}", "groups", arr));
}

/* GET /v1/crashes/trend: crashes per UTC day over the last ?days= (default
 * 30), of every kind or ?kind=, or of one group (?kind= and ?signature=),
 * filtered as the group listing is (?app_version, ?os_version,
 * ?hardware_model, ?format, ?state, ?new_in). */
enum MHD_Result handle_crash_trend(server *srv, struct MHD_Connection *c)
{
    enum MHD_Result refused;
    size_t ndays;
    int64_t from;
    store_crash_filter f = {0};
    if (!kind_arg(c, &f.kind, &refused) || !days_arg(c, &ndays, &from, &refused) ||
        !format_arg(c, &f.format, &refused) || !states_arg(c, &f.states, &refused))
        return refused;
    f.signature = query_arg(c, "signature");
    f.app_version = query_arg(c, "app_version");
    f.os_version = query_arg(c, "os_version");
    f.hardware_model = query_arg(c, "hardware_model");
    f.new_in = query_arg(c, "new_in");
    if (f.signature && *f.signature && !f.kind)
        return reply_error(c, 400, "invalid_request",
                           "a group is a kind and a signature: give kind too");
    if (f.signature && !*f.signature)
        f.signature = NULL;
    int64_t *days = calloc(ndays, sizeof *days);
    if (!days)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    symd_err err = {0};
    if ((f.states || (f.new_in && *f.new_in)) &&
        store_end_ignores(srv->st, store_now_ms(), NULL, &err) != SYMD_OK) {
        free(days);
        return reply_status(c, &err, "internal_error");
    }
    if (store_crash_trend_filtered(srv->st, &f, from, ndays, days, &err) != SYMD_OK) {
        free(days);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < ndays; i++)
        json_array_append_new(arr, json_integer(days[i]));
    free(days);
    return reply_json(c, 200, json_pack("{s:I, s:o}", "from_day", (json_int_t)from, "days", arr));
}

/* A dimension's spread of a group as [{"value", "count"}], or NULL. */
static json_t *spread_json(server *srv, const char *kind, const char *sig, store_dim dim,
                           symd_err *err)
{
    store_dim_count v[50];
    size_t n;
    if (store_group_spread(srv->st, kind, sig, dim, 50, v, &n, err) != SYMD_OK)
        return NULL;
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(arr, json_pack("{s:o, s:I}", "value", json_str_or_null(v[i].value),
                                             "count", (json_int_t)v[i].count));
        free(v[i].value);
    }
    return arr;
}

/* ?dim= of the value routes: app_version, os_version or hardware_model. */
static bool dim_arg(struct MHD_Connection *c, store_dim *dim, enum MHD_Result *refused)
{
    static const char *const names[] = {"app_version", "os_version", "hardware_model"};
    const char *d = query_arg(c, "dim");
    for (int i = 0; d && i < 3; i++)
        if (strcmp(d, names[i]) == 0) {
            *dim = (store_dim)i;
            return true;
        }
    *refused = reply_error(c, 400, "invalid_request",
                           "dim is app_version, os_version or hardware_model");
    return false;
}

/* A page of values (of one group when sig is not NULL) as {"values":
 * [{"value", "count"}], "next_cursor"}, ?limit (1-1000, default 50) and
 * ?cursor ("COUNT:HEX(VALUE)", the previous page's next_cursor). */
static enum MHD_Result reply_values(server *srv, struct MHD_Connection *c, const char *kind,
                                    const char *sig)
{
    store_dim dim;
    enum MHD_Result refused;
    if (!dim_arg(c, &dim, &refused))
        return refused;
    const char *lim = query_arg(c, "limit"), *cur = query_arg(c, "cursor");
    uint64_t limit = 50;
    if (lim && *lim && (!num_parse_u64(lim, &limit) || limit == 0 || limit > MAX_LIST))
        return reply_error(c, 400, "invalid_request", "limit must be an integer from 1 to %d",
                           MAX_LIST);
    store_dim_after after = {0, NULL};
    char *value = NULL;
    if (cur && *cur) {
        const char *colon = strchr(cur, ':');
        size_t hl = colon ? strlen(colon + 1) : 1;
        uint64_t count = 0;
        char num[24];
        size_t nl = colon ? (size_t)(colon - cur) : 0;
        bool ok = colon && nl > 0 && nl < sizeof num && hl % 2 == 0 && hl <= 8192;
        if (ok) {
            memcpy(num, cur, nl);
            num[nl] = 0;
            ok = num_parse_u64(num, &count) && count <= INT64_MAX &&
                 (value = malloc(hl / 2 + 1)) != NULL;
        }
        for (size_t i = 0; ok && i < hl / 2; i++) {
            int hi = hex_digit(colon[1 + 2 * i]), lo = hex_digit(colon[2 + 2 * i]);
            ok = hi >= 0 && lo >= 0;
            if (ok)
                value[i] = (char)(hi << 4 | lo);
        }
        if (ok) {
            value[hl / 2] = 0;
            ok = strlen(value) == hl / 2; /* no NUL inside */
        }
        if (!ok) {
            free(value);
            return reply_error(c, 400, "invalid_request",
                               "cursor must be a next_cursor value from an earlier page");
        }
        after.count = (int64_t)count;
        after.value = value;
    }
    store_dim_count *v = calloc((size_t)limit, sizeof *v);
    if (!v) {
        free(value);
        return reply_error(c, 503, "out_of_memory", "out of memory");
    }
    size_t n;
    bool more;
    symd_err err = {0};
    symd_status st = store_dim_values(srv->st, kind, sig, dim, cur && *cur ? &after : NULL,
                                      (size_t)limit, v, &n, &more, &err);
    free(value);
    if (st != SYMD_OK) {
        free(v);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_pack("{s:o, s:I}", "value", json_str_or_null(v[i].value),
                                             "count", (json_int_t)v[i].count));
    json_t *doc = json_pack("{s:o}", "values", arr);
    json_t *next = json_null();
    if (more && n && v[n - 1].value) {
        const char *last = v[n - 1].value;
        size_t ll = strlen(last);
        char *cs = malloc(24 + 2 * ll + 1);
        if (cs) {
            int o = snprintf(cs, 24, "%lld:", (long long)v[n - 1].count);
            for (size_t i = 0; i < ll; i++)
                snprintf(cs + o + 2 * i, 3, "%02x", (unsigned char)last[i]);
            next = json_string(cs);
            free(cs);
        }
    }
    json_object_set_new(doc, "next_cursor", next);
    for (size_t i = 0; i < n; i++)
        free(v[i].value);
    free(v);
    return reply_json(c, 200, doc);
}

/* GET /v1/crashes/values?dim=&kind=: the values of a dimension among the
 * stored crashes (of one kind), the most frequent first, paged: what the
 * dashboard's filter menus offer. From the dimension counters. */
enum MHD_Result handle_crash_values(server *srv, struct MHD_Connection *c)
{
    const char *kind;
    enum MHD_Result refused;
    if (!kind_arg(c, &kind, &refused))
        return refused;
    return reply_values(srv, c, kind, NULL);
}

/* GET /v1/crashes/group/spread?kind=&signature=&dim=: a group's spread over
 * one dimension, every value, paged (the group's answer shows the first 50). */
enum MHD_Result handle_crash_group_spread(server *srv, struct MHD_Connection *c)
{
    const char *kind, *sig = query_arg(c, "signature");
    enum MHD_Result refused;
    if (!kind_arg(c, &kind, &refused))
        return refused;
    if (!kind || !sig)
        return reply_error(c, 400, "invalid_request", "a group is a kind and a signature");
    return reply_values(srv, c, kind, sig);
}

/* GET /v1/crashes/group?kind=&signature=: one group, its trend (?days=) and
 * its spread over app versions, OS versions and devices. */
enum MHD_Result handle_crash_group(server *srv, struct MHD_Connection *c)
{
    const char *kind, *sig = query_arg(c, "signature");
    enum MHD_Result refused;
    size_t ndays;
    int64_t from;
    if (!kind_arg(c, &kind, &refused) || !days_arg(c, &ndays, &from, &refused))
        return refused;
    if (!kind || !sig)
        return reply_error(c, 400, "invalid_request", "a group is a kind and a signature");
    /* the group's row: the groups listing filtered to it */
    store_crash_filter f = {.kind = kind, .signature = sig};
    store_crash_group g[1];
    size_t n = 0;
    symd_err err = {0};
    if (store_end_ignores(srv->st, store_now_ms(), NULL, &err) != SYMD_OK ||
        store_crash_groups(srv->st, &f, 1, g, &n, &err) != SYMD_OK)
        return reply_status(c, &err, "internal_error");
    if (!n)
        return reply_error(c, 404, "not_found", "no group of kind '%.32s' with that signature",
                           kind);
    json_t *doc = group_json(&g[0]);
    /* the grouping rule that filed its newest crash (null: the default
     * rule), which a change of rules refiles with the rest */
    store_crash ex;
    symd_status es = store_get_crash(srv->st, g[0].example_id, false, &ex, &err);
    store_crash_group_free(&g[0]);
    if (es == SYMD_OK) {
        json_object_set_new(doc, "grouping_rule", json_str_or_null(ex.grouping_rule));
        store_crash_free(&ex);
    } else if (es == SYMD_E_NOT_FOUND) { /* deleted since: the next read has another */
        symd_err_clear(&err);
        json_object_set_new(doc, "grouping_rule", json_null());
    } else {
        json_decref(doc);
        return reply_status(c, &err, "internal_error");
    }
    static const char *const keys[] = {"app_versions", "os_versions", "hardware_models"};
    json_t *tr = trend_json(srv, kind, sig, NULL, from, ndays, &err);
    bool ok = tr != NULL;
    if (tr)
        json_object_set_new(doc, "trend", tr);
    for (int d = 0; ok && d < 3; d++) {
        json_t *sp = spread_json(srv, kind, sig, (store_dim)d, &err);
        ok = sp != NULL;
        if (sp)
            json_object_set_new(doc, keys[d], sp);
    }
    if (!ok) {
        json_decref(doc);
        return reply_status(c, &err, "internal_error");
    }
    return reply_json(c, 200, doc);
}

/* An optional integer member of a state change (absent or null: 0); false
 * with *bad naming it when it is no integer from 0 on. */
static bool body_count(json_t *body, const char *key, int64_t *out, const char **bad)
{
    json_t *v = json_object_get(body, key);
    *out = 0;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        *bad = key;
        return false;
    }
    *out = json_integer_value(v);
    return true;
}

/* An optional string member (absent or null: NULL); false with *bad naming
 * it when it is another type. */
static bool body_text(json_t *body, const char *key, const char **out, const char **bad)
{
    json_t *v = json_object_get(body, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_string(v)) {
        *bad = key;
        return false;
    }
    *out = json_string_value(v);
    return true;
}

/* POST /v1/crashes/group/state with {"kind", "signature", "state":
 * "unresolved"|"resolved"|"ignored", "resolved_in": "next"|"version"
 * (resolved; absent: any later report regresses it), "version" (with
 * "version"), "ignore_until" (unix ms) and/or "ignore_reports" (ignored;
 * neither: forever), "note"}: sets the group's state and records the
 * change with the role whose token asked (the report role's; "open" when
 * the server has no report token). 200 with the group's workflow (as the
 * listings show it), 404 when no crash is filed under the group, 400 for a
 * body that says none of the above. */
enum MHD_Result handle_crash_group_state(server *srv, struct MHD_Connection *c, req_state *rs)
{
    if (rs->too_large)
        return reply_error(c, 413, "too_large", "request body exceeds %llu bytes",
                           (unsigned long long)rs->limit);
    json_error_t je;
    json_t *body = json_loadb(rs->body.data ? (const char *)rs->body.data : "", rs->body.len,
                              JSON_REJECT_DUPLICATES, &je);
    if (!body || !json_is_object(body)) {
        json_decref(body);
        return reply_error(c, 400, "invalid_request",
                           "the body is a JSON object {\"kind\", \"signature\", \"state\", "
                           "...}%s%s",
                           body ? "" : ": ", body ? "" : je.text);
    }
    const char *kind = NULL, *sig = NULL, *state = NULL, *bad = NULL;
    store_state_change ch = {0};
    store_state target;
    bool ok = body_text(body, "kind", &kind, &bad) && body_text(body, "signature", &sig, &bad) &&
              body_text(body, "state", &state, &bad) &&
              body_text(body, "resolved_in", &ch.resolved_in, &bad) &&
              body_text(body, "version", &ch.version, &bad) &&
              body_text(body, "note", &ch.note, &bad) &&
              body_count(body, "ignore_until", &ch.ignore_until, &bad) &&
              body_count(body, "ignore_reports", &ch.ignore_reports, &bad);
    enum MHD_Result ret;
    crash_kind k;
    if (!ok) {
        ret = reply_error(c, 400, "invalid_request", "'%s' has the wrong type", bad);
    } else if (!kind || !sig || !crash_kind_parse(kind, &k)) {
        ret = reply_error(c, 400, "invalid_request",
                          "a group is a kind (a crash kind's name) and a signature");
    } else if (!state || !store_state_parse(state, strlen(state), &target) ||
               target == STORE_STATE_REGRESSED) {
        ret = reply_error(c, 400, "invalid_request",
                          "state is unresolved, resolved or ignored (reports regress a group)");
    } else if (target == STORE_STATE_RESOLVED && ch.resolved_in && *ch.resolved_in &&
               strcmp(ch.resolved_in, "next") != 0 && strcmp(ch.resolved_in, "version") != 0) {
        ret = reply_error(c, 400, "invalid_request",
                          "resolved_in is \"next\" or \"version\" (absent: any later report "
                          "regresses it)");
    } else if (target == STORE_STATE_RESOLVED && ch.resolved_in &&
               strcmp(ch.resolved_in, "version") == 0 && (!ch.version || !*ch.version)) {
        ret = reply_error(c, 400, "invalid_request", "resolved in a version: give version");
    } else if (target == STORE_STATE_IGNORED && ch.ignore_until &&
               ch.ignore_until <= store_now_ms()) {
        ret = reply_error(c, 400, "invalid_request", "ignore_until is in the past");
    } else if (ch.note && strlen(ch.note) > 255) {
        ret = reply_error(c, 400, "invalid_request", "note is at most 255 bytes");
    } else if (ch.version && strlen(ch.version) > 127) {
        ret = reply_error(c, 400, "invalid_request", "version is at most 127 bytes");
    } else {
        ch.state = target;
        ch.by = srv->cfg->report_token && *srv->cfg->report_token ? "report" : "open";
        store_group_status st;
        bool found;
        symd_err err = {0};
        if (store_set_group_state(srv->st, kind, sig, &ch, &st, &found, &err) != SYMD_OK) {
            ret = err.kind == SYMD_E_INVALID
                      ? reply_error(c, 400, "invalid_request", "%s", err.msg)
                      : reply_status(c, &err, "internal_error");
        } else if (!found) {
            ret = reply_error(c, 404, "not_found", "no group of kind '%.32s' with that signature",
                              kind);
        } else {
            json_t *doc = json_pack("{s:s, s:s}", "kind", kind, "signature", sig);
            status_json(doc, &st);
            ret = reply_json(c, 200, doc);
        }
    }
    json_decref(body);
    return ret;
}

/* GET /v1/crashes/group/history?kind=&signature=: the group's state
 * changes, newest first ({"history": [{"id", "at", "from", "to", "by",
 * "reason", "crash_id", "resolved_in", "version", "ignore_until",
 * "ignore_reports", "note"}], "next_cursor"}; ?limit, ?cursor). */
enum MHD_Result handle_crash_group_history(server *srv, struct MHD_Connection *c)
{
    const char *kind, *sig = query_arg(c, "signature");
    enum MHD_Result refused;
    if (!kind_arg(c, &kind, &refused))
        return refused;
    if (!kind || !sig)
        return reply_error(c, 400, "invalid_request", "a group is a kind and a signature");
    uint64_t limit, before;
    const char *bad = list_args(c, &limit, &before);
    if (bad)
        return reply_error(c, 400, "invalid_request", "%s", bad);
    store_group_change *h = calloc((size_t)limit, sizeof *h);
    if (!h)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    bool more;
    symd_err err = {0};
    if (store_end_ignores(srv->st, store_now_ms(), NULL, &err) != SYMD_OK ||
        store_group_history(srv->st, kind, sig, (int64_t)before, (size_t)limit, h, &n, &more,
                            &err) != SYMD_OK) {
        free(h);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "id", json_integer(h[i].id));
        json_object_set_new(o, "at", json_integer(h[i].at));
        json_object_set_new(o, "from", json_string(store_state_name(h[i].from)));
        json_object_set_new(o, "to", json_string(store_state_name(h[i].to)));
        json_object_set_new(o, "by", json_string(h[i].by));
        json_object_set_new(o, "reason", json_string(h[i].reason));
        json_object_set_new(o, "crash_id", h[i].crash_id ? json_integer(h[i].crash_id)
                                                         : json_null());
        json_object_set_new(o, "resolved_in", text_or_null(h[i].resolved_in));
        json_object_set_new(o, "version", text_or_null(h[i].version));
        json_object_set_new(o, "ignore_until", h[i].ignore_until ? json_integer(h[i].ignore_until)
                                                                 : json_null());
        json_object_set_new(o, "ignore_reports",
                            h[i].ignore_reports ? json_integer(h[i].ignore_reports) : json_null());
        json_object_set_new(o, "note", text_or_null(h[i].note));
        json_array_append_new(arr, o);
    }
    json_t *doc = json_pack("{s:o}", "history", arr);
    set_next_cursor(doc, more, n ? h[n - 1].id : 0);
    free(h);
    return reply_json(c, 200, doc);
}

/* Crash reports over HTTP: posting (parse, symbolicate, store), reading a
 * stored one back symbolicated anew, the listing, deleting one and the list
 * of images stored crashes miss (the groups: http_groups.c).
 *
 * A report is refused only when it is no report at all (415) or over a
 * limit (413): whatever else the parser cannot read it skips and records
 * as a warning, and the report is stored and answered with its warnings. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../parser/crash.h"
#include "../ingest/unzip.h"
#include "../util/gzip.h"
#include "../util/hex.h"
#include "../util/jsonw.h"
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

/* One Prefer header's preferences (RFC 7240: comma-separated, each a token
 * with an optional "=value" and ";" parameters, names case-insensitive, a
 * value maybe quoted): true in *minimal for "return=minimal". */
static enum MHD_Result prefer_one(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    (void)kind;
    if (!key || strcasecmp(key, "Prefer") != 0 || !value)
        return MHD_YES;
    for (const char *p = value; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *end = p + strcspn(p, ",;");
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (eq) {
            const char *ne = eq, *v = eq + 1, *ve = end;
            while (ne > p && (ne[-1] == ' ' || ne[-1] == '\t')) /* BWS */
                ne--;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            if (ve - v >= 2 && *v == '"' && ve[-1] == '"')
                v++, ve--;
            if (ne - p == 6 && strncasecmp(p, "return", 6) == 0 && ve - v == 7 &&
                strncasecmp(v, "minimal", 7) == 0)
                *(bool *)cls = true;
        }
        p = end + strcspn(end, ","); /* past this preference's parameters */
    }
    return MHD_YES;
}

/* Whether the client prefers the short answer (Prefer: return=minimal). */
static bool prefer_minimal(struct MHD_Connection *c)
{
    bool minimal = false;
    MHD_get_connection_values(c, MHD_HEADER_KIND, prefer_one, &minimal);
    return minimal;
}

/* ?kind= of the listings: NULL (no filter, also for an empty value) in
 * *kind, or false with a 400 queued for a name crash_kind_parse does not
 * know. */
bool kind_arg(struct MHD_Connection *c, const char **kind, enum MHD_Result *refused)
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

/* ?format= of the listings, as kind_arg: NULL for none, false with a 400
 * queued for a name crash_format_parse does not know. */
bool format_arg(struct MHD_Connection *c, const char **format, enum MHD_Result *refused)
{
    *format = query_arg(c, "format");
    if (*format && !**format)
        *format = NULL;
    crash_format f;
    if (!*format || crash_format_parse(*format, &f))
        return true;
    char names[160] = "";
    size_t o = 0;
    for (int i = 0; i < CRASH_FORMAT_COUNT && o < sizeof names; i++)
        o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "",
                              crash_format_name((crash_format)i));
    *refused = reply_error(c, 400, "invalid_request", "unknown format '%.64s' (one of %s)",
                           *format, names);
    return false;
}

/* A report crash_parse refused. The parser only refuses what is no report
 * at all (415), past a limit (413) or out of memory (503); it reads broken
 * parts with warnings, so a SYMD_E_CORRUPT that still comes back is 422,
 * never the 400 of a bad request. Anything else is our bug (500). */
static enum MHD_Result reply_refused(struct MHD_Connection *c, const symd_err *err)
{
    enum MHD_Result over;
    if (reply_if_over_budget(c, &over))
        return over;
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

/* Marks the JSON answer written at out->data[start] (an object: crash_write_json's or
 * crash_write_summary's) as a post of a crash stored before: "duplicate":
 * true first, its "id" the first copy's. */
static symd_status mark_duplicate(dynbuf *out, size_t start, symd_err *err)
{
    static const char mark[] = "\"duplicate\":true,";
    size_t n = sizeof mark - 1;
    if (start >= out->len || out->data[start] != '{')
        return symd_fail(err, SYMD_E_INVALID, "the answer is no JSON object");
    if (!dynbuf_reserve(out, n))
        return symd_fail(err, SYMD_E_TOO_LARGE, "the answer does not fit in %zu bytes",
                         out->max);
    memmove(out->data + start + 1 + n, out->data + start + 1, out->len - start - 1);
    memcpy(out->data + start + 1, mark, n);
    out->len += n;
    out->data[out->len] = 0;
    return SYMD_OK;
}

/* What makes a post's reports copies of stored ones: its Idempotency-Key
 * (NULL none) and whether the server dedups at all (--dedup). */
typedef struct {
    const char *idem;
    bool on;
} post_keys;

/* Reads the post's keys into *k; false with a 400 queued in *ret for an
 * Idempotency-Key that is not one. */
static bool post_keys_of(server *srv, struct MHD_Connection *c, post_keys *k,
                         enum MHD_Result *ret)
{
    k->on = srv->cfg->dedup;
    k->idem = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
    if (k->idem && !store_idem_key_valid(k->idem, strlen(k->idem))) {
        *ret = reply_error(c, 400, "invalid_request",
                           "Idempotency-Key: 1 to %d printable ASCII characters, no spaces",
                           STORE_IDEM_KEY_MAX);
        return false;
    }
    if (!k->on)
        k->idem = NULL;
    return true;
}

/* Room for one stored report's keys. */
typedef struct {
    char idem[STORE_KEY_SIZE], content[STORE_KEY_SIZE];
} crash_keys;

/* Sets sc's keys (in *room) as one report of the post k says: member, a
 * zip's log (NULL none); several, whether the post holds more reports than
 * this one. */
static void set_keys(const post_keys *k, store_crash *sc, const char *member, bool several,
                     crash_keys *room)
{
    sc->idem_key = sc->content_key = NULL;
    if (!k->on)
        return;
    store_content_key(sc, room->content);
    sc->content_key = room->content;
    if (k->idem && store_idem_key(k->idem, member, sc->part, several || member, room->idem))
        sc->idem_key = room->idem;
}

/* Queues a posted report's answer out (taken: freed here), with the
 * crash's Location when stored (201) or stored before (dup: the first
 * copy's) and Preference-Applied for the short one. */
static enum MHD_Result reply_posted(struct MHD_Connection *c, unsigned status, dynbuf *out,
                                    const char *ctype, int64_t id, bool minimal, bool dup)
{
    size_t len;
    uint8_t *data = dynbuf_take(out, &len);
    if (!data && !(data = (uint8_t *)strdup("")))
        return reply_error(c, 503, "out_of_memory", "out of memory");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(data);
        return MHD_NO;
    }
    if (minimal)
        MHD_add_response_header(resp, "Preference-Applied", "return=minimal");
    if ((status == 201 || dup) && id >= 0) {
        char loc[40];
        snprintf(loc, sizeof loc, "/v1/crashes/%lld", (long long)id);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc);
    }
    return queue_response(c, status, resp, len, ctype, true);
}

/* Answers a symbolicated report (input[0..len): the bytes r was parsed
 * from) as text, as the short JSON (crash_write_summary) or as the whole
 * JSON. id < 0: not stored. */
static enum MHD_Result answer_crash(struct MHD_Connection *c, const crash_report *r,
                                    const crash_symbolication *sym, const uint8_t *input,
                                    size_t input_len, int64_t id, unsigned status, bool text,
                                    bool minimal, bool dup)
{
    dynbuf out;
    dynbuf_init(&out, MAX_RESPONSE);
    symd_err err = {0};
    symd_status st = text      ? crash_render_text(r, sym, input, input_len, &out, &err)
                     : minimal ? crash_write_summary(r, sym, id, &out, &err)
                               : crash_write_json(r, sym, id, &out, &err);
    if (st == SYMD_OK && dup && !text)
        st = mark_duplicate(&out, 0, &err);
    if (st != SYMD_OK) {
        dynbuf_free(&out);
        return reply_status(c, &err, "internal_error");
    }
    return reply_posted(c, status, &out, text ? "text/plain; charset=utf-8" : "application/json",
                        id, minimal, dup);
}

/* The answer's symbolication with ?demangle=full: Swift names in their full
 * form, the signature still sym's (the group key is always made of the
 * simplified names). Free with crash_symbolication_free. */
static symd_status full_names_of(server *srv, const crash_report *r,
                                 const crash_symbolication *sym, crash_symbolication *shown,
                                 symd_err *err)
{
    symd_status st = crash_symbolicate(srv->st, r, true, shown, err);
    if (st != SYMD_OK)
        return st;
    char *sig = sym->signature ? strdup(sym->signature) : NULL;
    if (sym->signature && !sig) {
        crash_symbolication_free(shown);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    free(shown->signature);
    shown->signature = sig;
    return SYMD_OK;
}

/* What a stored report did to its group (store_put_crash_ev decided it in
 * the report's transaction): a new group (group.new), a resolved group
 * reopened as regressed (group.regressed), an ignored one reopened. The
 * one place every posted report passes after it is stored (single, parts
 * of a payload, members of a zip): where notifications of those events
 * are sent. Now it only counts them for /metrics. */
static void crash_group_changed(server *srv, const store_crash *sc, int64_t id,
                                const store_group_event *ev)
{
    (void)sc;
    (void)id;
    metrics_group_event(srv->m, ev->new_group, ev->regressed, ev->reopened);
}

/* Stores one report (sc, the images it needs) and tells crash_group_changed
 * what it did to its group. *id is the new crash's, or with *dup the
 * stored copy's (nothing stored, nothing told). */
static symd_status store_and_tell(server *srv, const store_crash *sc,
                                  const store_crash_image *imgs, size_t nimg, int64_t *id,
                                  bool *dup, symd_err *err)
{
    store_group_event ev;
    symd_status st = store_put_crash_ev(srv->st, sc, imgs, nimg, id, &ev, err);
    *dup = st == SYMD_OK && ev.duplicate;
    if (st == SYMD_OK && !ev.duplicate)
        crash_group_changed(srv, sc, *id, &ev);
    return st;
}

/* Stores the posted report: its original bytes, what the header says, its
 * kind and bug_type, the signature, the images it needs and its keys (k;
 * several: the input holds more reports). *id is the new crash's, or with
 * *dup the stored copy's. */
static symd_status store_report(server *srv, const req_state *rs, const post_keys *k,
                                bool several, const crash_report *r,
                                const crash_symbolication *sym, int64_t *id, bool *dup,
                                symd_err *err)
{
    size_t nimg = 0;
    store_crash_image *imgs = crash_needed_images(r, sym, &nimg);
    crash_keys *room = malloc(sizeof *room);
    if (!imgs || !room) {
        free(imgs);
        free(room);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    store_crash sc = crash_store_record(r, sym, rs->body.data, rs->body.len);
    sc.part = (int)r->part; /* the whole input is each part's original */
    set_keys(k, &sc, NULL, several, room);
    symd_status st = store_and_tell(srv, &sc, imgs, nimg, id, dup, err);
    free(imgs);
    free(room);
    return st;
}

/* POST /v1/crashes of an input holding several reports (a MetricKit
 * payload's or App Store Connect logs' diagnostics): each symbolicated and
 * stored as a crash of its own (the whole input its original, its index its
 * part), answered {"reports": [...]}, each element the answer a single
 * report gets, in the order of the input (text: each rendering under a
 * "==== report i of n" line). 201 when stored. Takes all. */
static enum MHD_Result post_parts(server *srv, struct MHD_Connection *c, req_state *rs,
                                  const post_keys *k, crash_report *all, size_t n, bool keep,
                                  bool full, bool text, bool minimal)
{
    size_t stored = 0;
    const uint8_t *body = rs->body.data ? rs->body.data : (const uint8_t *)"";
    dynbuf out;
    dynbuf_init(&out, MAX_RESPONSE);
    symd_err err = {0};
    symd_status st = SYMD_OK;
    bool ok = text || dynbuf_add(&out, "{\"reports\":[", 12);
    for (size_t i = 0; i < n && ok && st == SYMD_OK; i++) {
        crash_report *r = &all[i];
        crash_symbolication sym, shown;
        if ((st = crash_symbolicate(srv->st, r, false, &sym, &err)) != SYMD_OK)
            break;
        count_crash_frames(srv, r, &sym);
        int64_t id = -1;
        bool named = false, dup = false;
        if (keep)
            st = store_report(srv, rs, k, true, r, &sym, &id, &dup, &err);
        stored += keep && st == SYMD_OK && !dup;
        if (st == SYMD_OK && full) {
            st = full_names_of(srv, r, &sym, &shown, &err);
            named = st == SYMD_OK;
        }
        if (st == SYMD_OK) {
            const crash_symbolication *show = named ? &shown : &sym;
            if (text) {
                char head[96];
                int hl = snprintf(head, sizeof head, "%s==== report %zu of %zu: %s (%s) ====\n\n",
                                  i ? "\n" : "", i + 1, n, crash_kind_name(r->kind),
                                  crash_format_name(r->format));
                ok = dynbuf_add(&out, head, (size_t)hl);
                if (ok)
                    st = crash_render_text(r, show, body, rs->body.len, &out, &err);
            } else {
                ok = !i || dynbuf_add(&out, ",", 1);
                size_t at = out.len;
                if (ok)
                    st = minimal ? crash_write_summary(r, show, id, &out, &err)
                                 : crash_write_json(r, show, id, &out, &err);
                if (ok && st == SYMD_OK && dup)
                    st = mark_duplicate(&out, at, &err);
            }
        }
        if (named)
            crash_symbolication_free(&shown);
        crash_symbolication_free(&sym);
    }
    crash_reports_free(all, n);
    if (ok && st == SYMD_OK && !text)
        ok = dynbuf_add(&out, "]}", 2);
    if (!ok && st == SYMD_OK)
        st = symd_fail(&err, SYMD_E_TOO_LARGE, "the answer does not fit in %zu bytes",
                       (size_t)MAX_RESPONSE);
    if (st != SYMD_OK) {
        dynbuf_free(&out);
        return reply_status(c, &err, "internal_error");
    }
    return reply_posted(c, keep && (stored || !n) ? 201 : 200, &out,
                        text ? "text/plain; charset=utf-8" : "application/json", -1, minimal,
                        false);
}

static unsigned rz_code(bool keep, size_t stored, size_t answered)
{
    if (!answered)
        return 415;
    return keep && stored ? 201 : 200;
}

/* ---- a zip of reports (an .xccrashpoint bundle as Xcode's Organizer
 * exports it: Foo.xccrashpoint/Filters/Filter_N/Logs/...crash) ---- */

typedef struct {
    server *srv;
    bool keep;
    jsonw *rep, *ref, *skip;    /* the three lists of the answer */
    bool rfirst, ffirst, sfirst;
    size_t stored;
    symd_status st;             /* a failure of ours (store, memory): stops the walk */
    symd_err *err;
    char member[512];           /* the log being read, and its part */
    size_t part;
    const post_keys *keys;
} zip_walk;

/* The HTTP status a single POST of a refused report would get. */
static unsigned refusal_status(symd_status k)
{
    switch (k) {
    case SYMD_E_NOT_CRASH_REPORT: return 415;
    case SYMD_E_TOO_LARGE: return 413;
    case SYMD_E_CORRUPT:
    case SYMD_E_UNSUPPORTED: return 422;
    default: return 500;
    }
}

static bool is_report_name(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    size_t n = strlen(base);
    if (base[0] == '.' || (n >= 2 && base[0] == '_' && base[1] == '_'))
        return false; /* ._AppleDouble, __MACOSX */
    return (n > 6 && !strcasecmp(base + n - 6, ".crash")) ||
           (n > 4 && !strcasecmp(base + n - 4, ".ips"));
}

/* unzip's notice of the next member: the one a memory trip stops at. */
static void zip_member_next(void *ctx, const char *name)
{
    zip_walk *z = ctx;
    snprintf(z->member, sizeof z->member, "%s", name);
    z->part = 0;
}

static symd_status zip_member(void *ctx, const char *name, const uint8_t *data, size_t len,
                              symd_err *err)
{
    (void)err;
    zip_walk *z = ctx;
    if (!is_report_name(name) || strstr(name, "__MACOSX/")) {
        if (!z->sfirst)
            JW_LIT(z->skip, ",");
        z->sfirst = false;
        jw_str(z->skip, name);
        return SYMD_OK;
    }
    crash_report *all = NULL;
    size_t n = 0;
    symd_err perr = {0};
    if (crash_parse_all(data, len, &all, &n, &perr) != SYMD_OK) {
        if (perr.kind == SYMD_E_NOMEM) {
            z->st = symd_fail(z->err, SYMD_E_NOMEM, "%s", perr.msg);
            return z->st;
        }
        if (!z->ffirst)
            JW_LIT(z->ref, ",");
        z->ffirst = false;
        JW_LIT(z->ref, "{\"member\":");
        jw_str(z->ref, name);
        JW_LIT(z->ref, ",\"status\":");
        jw_u64(z->ref, refusal_status(perr.kind));
        JW_LIT(z->ref, ",\"error\":");
        jw_str(z->ref, symd_status_name(perr.kind));
        JW_LIT(z->ref, ",\"message\":");
        jw_str(z->ref, perr.msg);
        JW_LIT(z->ref, "}");
        return SYMD_OK;
    }
    mem_meter *m = mem_meter_current();
    if (m && m->trip) {
        /* Memory ran short while it was parsed: the parser may have read it
         * short with warnings (a JSON document cut by a failed allocation
         * reads as broken). Not stored; post_zip lists it refused. */
        crash_reports_free(all, n);
        z->st = symd_fail(z->err, SYMD_E_NOMEM, "memory ran short reading '%s'", name);
        return z->st;
    }
    for (size_t i = 0; i < n && !z->st; i++) {
        crash_report *r = &all[i];
        z->part = r->part;
        crash_symbolication sym;
        if ((z->st = crash_symbolicate(z->srv->st, r, false, &sym, z->err)) != SYMD_OK)
            break;
        count_crash_frames(z->srv, r, &sym);
        int64_t id = -1;
        bool dup = false;
        if (z->keep) {
            size_t nimg = 0;
            store_crash_image *imgs = crash_needed_images(r, &sym, &nimg);
            crash_keys *room = malloc(sizeof *room);
            if (!imgs || !room) {
                z->st = symd_fail(z->err, SYMD_E_NOMEM, "out of memory");
            } else {
                store_crash sc = crash_store_record(r, &sym, data, len);
                sc.part = (int)r->part;
                set_keys(z->keys, &sc, name, n > 1, room);
                z->st = store_and_tell(z->srv, &sc, imgs, nimg, &id, &dup, z->err);
                z->stored += z->st == SYMD_OK && !dup;
            }
            free(imgs);
            free(room);
        }
        if (!z->st) {
            if (!z->rfirst)
                JW_LIT(z->rep, ",");
            z->rfirst = false;
            JW_LIT(z->rep, "{\"member\":");
            jw_str(z->rep, name);
            JW_LIT(z->rep, ",\"part\":");
            jw_u64(z->rep, r->part);
            JW_LIT(z->rep, ",\"answer\":");
            size_t at = z->rep->b->len;
            z->st = crash_write_summary(r, &sym, id, z->rep->b, z->err);
            if (!z->st && dup)
                z->st = mark_duplicate(z->rep->b, at, z->err);
            JW_LIT(z->rep, "}");
        }
        crash_symbolication_free(&sym);
    }
    crash_reports_free(all, n);
    return z->st;
}

/* POST /v1/crashes of a zip: every .crash / .ips member (an
 * .xccrashpoint's logs) parsed, symbolicated and stored as reports of their
 * own (each member its own original), answered in one JSON: {"reports":
 * [{"member", "part", "answer": the short answer}], "refused": [{"member",
 * "status", "error", "message"}], "skipped": [other members]}. 201 when any
 * was stored, 200 with store=false, 415 when no member is a report. */
static enum MHD_Result post_zip(server *srv, struct MHD_Connection *c, req_state *rs,
                                const post_keys *keys, bool keep)
{
    dynbuf rb, fb, sb;
    dynbuf_init(&rb, MAX_RESPONSE);
    dynbuf_init(&fb, MAX_RESPONSE / 4);
    dynbuf_init(&sb, MAX_RESPONSE / 4);
    jsonw rep, ref, skip;
    jw_init(&rep, &rb);
    jw_init(&ref, &fb);
    jw_init(&skip, &sb);
    symd_err err = {0};
    zip_walk z = {.srv = srv, .keep = keep, .rep = &rep, .ref = &ref, .skip = &skip,
                  .rfirst = true, .ffirst = true, .sfirst = true, .st = SYMD_OK, .err = &err,
                  .keys = keys};
    unzip_limits lim = srv->cfg->unzip; /* the --max-unzipped* limits of uploads */
    lim.on_member = zip_member_next;
    /* Logs stay on the heap, counted in the request's memory budget: a log
     * too large for it is refused before it is parsed (parsing one is far
     * more memory than its bytes, and its bytes are stored as the
     * original), not half-read. */
    lim.spill_at = UINT64_MAX;
    symd_status st = unzip_each(rs->body.data, rs->body.len, &lim, zip_member, &z, &err);
    enum MHD_Result ret;
    enum MHD_Result over;
    mem_meter *m = mem_meter_current(), *was = m;
    if (m && m->trip && z.stored) {
        /* Memory ran short partway: what was stored stays and is listed;
         * the log it ran short on and those after it are a refusal, so a
         * client resends exactly those. Written outside the meter. */
        mem_meter_swap(NULL);
        bool pool = m->trip == MEM_TRIP_POOL;
        if (!z.ffirst)
            JW_LIT(&ref, ",");
        z.ffirst = false;
        JW_LIT(&ref, "{\"member\":");
        jw_str(&ref, z.member);
        JW_LIT(&ref, ",\"status\":");
        jw_u64(&ref, pool ? 503 : 413);
        JW_LIT(&ref, ",\"error\":");
        jw_str(&ref, pool ? "busy" : "too_large");
        JW_LIT(&ref, ",\"message\":");
        char msg[640];
        snprintf(msg, sizeof msg,
                 "memory ran short reading this log (%s, from its part %zu): it and the "
                 "members after it were not read; the reports listed were stored",
                 pool ? "the server's memory budget is in use" : "past this request's budget",
                 z.part);
        jw_str(&ref, msg);
        JW_LIT(&ref, "}");
        st = SYMD_OK;
    }
    if (m && m->trip && !z.stored && reply_if_over_budget(c, &over)) {
        ret = over;
    } else if (st != SYMD_OK) {
        ret = st == SYMD_E_CORRUPT ? reply_error(c, 422, "malformed_zip", "%s", err.msg)
                                   : reply_status(c, &err, "internal_error");
    } else {
        dynbuf out;
        dynbuf_init(&out, MAX_RESPONSE);
        jsonw w;
        jw_init(&w, &out);
        JW_LIT(&w, "{\"reports\":[");
        jw_raw_n(&w, rb.data ? (const char *)rb.data : "", rb.len);
        JW_LIT(&w, "],\"refused\":[");
        jw_raw_n(&w, fb.data ? (const char *)fb.data : "", fb.len);
        JW_LIT(&w, "],\"skipped\":[");
        jw_raw_n(&w, sb.data ? (const char *)sb.data : "", sb.len);
        JW_LIT(&w, "]}");
        if (!w.ok || !rep.ok || !ref.ok || !skip.ok) {
            dynbuf_free(&out);
            symd_fail(&err, SYMD_E_TOO_LARGE, "the answer does not fit in %zu bytes",
                      (size_t)MAX_RESPONSE);
            ret = reply_status(c, &err, "internal_error");
        } else {
            unsigned code = rz_code(keep, z.stored, rb.len);
            ret = reply_posted(c, code, &out, "application/json", -1, false, false);
        }
    }
    dynbuf_free(&rb);
    dynbuf_free(&fb);
    dynbuf_free(&sb);
    mem_meter_swap(was);
    return ret;
}

/* A body sent with Content-Encoding (Crashpad's uploader gzips its
 * multipart body): gzip is inflated in place of the body, up to the limit a
 * body has (--max-json; 413 past it), and read as if sent so (the inflated
 * bytes are the stored original); identity is the body itself. false with
 * an answer queued in *ret for another coding (415) or a broken stream
 * (400). */
static bool decode_body(server *srv, struct MHD_Connection *c, req_state *rs,
                        enum MHD_Result *ret)
{
    const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (!ce)
        return true;
    while (*ce == ' ' || *ce == '\t')
        ce++;
    size_t n = strcspn(ce, " \t");
    if (n == 0 || (n == 8 && !strncasecmp(ce, "identity", 8)))
        return true;
    if (!((n == 4 && !strncasecmp(ce, "gzip", 4)) || (n == 6 && !strncasecmp(ce, "x-gzip", 6))) ||
        ce[n + strspn(ce + n, " \t")]) {
        *ret = reply_error(c, 415, "unsupported_encoding",
                           "Content-Encoding '%.64s': only gzip (and identity) are read", ce);
        return false;
    }
    uint8_t *out;
    size_t len;
    symd_err err = {0};
    if (gzip_inflate(rs->body.data, rs->body.len, (size_t)srv->cfg->max_json, &out, &len,
                     &err) != SYMD_OK) {
        enum MHD_Result over;
        if (reply_if_over_budget(c, &over))
            *ret = over;
        else
            *ret = err.kind == SYMD_E_CORRUPT
                       ? reply_error(c, 400, "bad_encoding", "Content-Encoding gzip: %s", err.msg)
                       : reply_status(c, &err, "bad_encoding");
        return false;
    }
    dynbuf_free(&rs->body);
    rs->body.data = out;
    rs->body.len = len;
    rs->body.cap = len + 1;
    rs->body.max = (size_t)srv->cfg->max_json;
    return true;
}

/* POST /v1/crashes: parsed, symbolicated, stored (201) unless ?store=false
 * (200), answered with the report's warnings: the whole symbolicated report
 * (JSON, or text for ?format=text), or with Prefer: return=minimal a JSON
 * answer of its id, signature and frame counts (a text answer ignores the
 * preference). */
enum MHD_Result handle_crash_post(server *srv, struct MHD_Connection *c, req_state *rs)
{
    if (rs->too_large)
        return reply_error(c, 413, "too_large", "request body exceeds %llu bytes",
                           (unsigned long long)rs->limit);
    const char *sp = query_arg(c, "store");
    bool keep = !(sp && (strcmp(sp, "false") == 0 || strcmp(sp, "0") == 0));
    bool full;
    enum MHD_Result refused;
    if (!demangle_arg(c, &full, &refused))
        return refused;
    bool text = want_text(c);
    bool minimal = !text && prefer_minimal(c);
    if (minimal)
        full = false; /* the short answer shows no names but the signature */
    crash_report *all = NULL;
    size_t nall = 0;
    symd_err err = {0};
    post_keys keys;
    if (!post_keys_of(srv, c, &keys, &refused))
        return refused;
    if (!decode_body(srv, c, rs, &refused))
        return refused;
    const uint8_t *body = rs->body.data ? rs->body.data : (const uint8_t *)"";
    if (unzip_is_zip(body, rs->body.len))
        return post_zip(srv, c, rs, &keys, keep);
    if (crash_parse_all(body, rs->body.len, &all, &nall, &err) != SYMD_OK)
        return reply_refused(c, &err);
    enum MHD_Result over;
    if (reply_if_over_budget(c, &over)) { /* a part read short for memory: not stored */
        crash_reports_free(all, nall);
        return over;
    }
    mem_input_read();
    if (nall > 1)
        return post_parts(srv, c, rs, &keys, all, nall, keep, full, text, minimal);
    crash_report r = all[0];
    free(all);
    /* A minidump in Crashpad's (and Breakpad's) upload form: their uploaders
     * take only 200 as success and keep the answer's body as the report's
     * id, so the stored report is answered 200 with the short answer unless
     * the request asks for text. */
    bool upload_form = r.format == CRASH_FORMAT_MINIDUMP && rs->body.len >= 4 &&
                       memcmp(body, "MDMP", 4) != 0;
    if (upload_form && !text) {
        minimal = true;
        full = false;
    }
    crash_symbolication sym, shown;
    if (crash_symbolicate(srv->st, &r, false, &sym, &err) != SYMD_OK) {
        crash_report_free(&r);
        return reply_status(c, &err, "internal_error");
    }
    count_crash_frames(srv, &r, &sym);
    int64_t id = -1;
    bool dup = false;
    enum MHD_Result ret;
    /* stored and grouped by the simplified names; ?demangle=full only shows
     * the full ones */
    if (keep && store_report(srv, rs, &keys, false, &r, &sym, &id, &dup, &err) != SYMD_OK)
        ret = reply_status(c, &err, "internal_error");
    else if (full && full_names_of(srv, &r, &sym, &shown, &err) != SYMD_OK)
        ret = reply_status(c, &err, "internal_error");
    else {
        ret = answer_crash(c, &r, full ? &shown : &sym, body, rs->body.len, id,
                           keep && !upload_form && !dup ? 201 : 200, text, minimal, dup);
        if (full)
            crash_symbolication_free(&shown);
    }
    crash_symbolication_free(&sym);
    crash_report_free(&r);
    return ret;
}

/* What the store holds of a crash, as the listings answer it: its
 * metadata, and "needs_upload" naming the app's image when the crash needs
 * it and it is not stored. */
static json_t *crash_summary(const store_crash *sc)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(sc->id));
    json_object_set_new(o, "created_at", json_integer(sc->created_at));
    json_object_set_new(o, "format", json_str_or_null(sc->format));
    json_object_set_new(o, "kind", json_string(sc->kind ? sc->kind : "crash"));
    json_object_set_new(o, "bug_type", sc->bug_type ? json_integer(sc->bug_type) : json_null());
    json_object_set_new(o, "process", json_str_or_null(sc->process));
    json_object_set_new(o, "bundle_id", json_str_or_null(sc->bundle_id));
    json_object_set_new(o, "app_version", json_str_or_null(sc->app_version));
    json_object_set_new(o, "os_version", json_str_or_null(sc->os_version));
    json_object_set_new(o, "hardware_model", json_str_or_null(sc->hardware_model));
    json_object_set_new(o, "incident_id", json_str_or_null(sc->incident_id));
    json_object_set_new(o, "exception_type", json_str_or_null(sc->exception_type));
    json_object_set_new(o, "signature", json_str_or_null(sc->signature));
    json_object_set_new(o, "grouping_rule", json_str_or_null(sc->grouping_rule));
    json_t *need = json_null();
    if (sc->has_app && !sc->app_stored) {
        char u[37];
        uuid_format(sc->app_uuid, u);
        need = json_pack("{s:s, s:o, s:o}", "uuid", u, "arch",
                         sc->app_arch[0] ? json_string(sc->app_arch) : json_null(), "name",
                         sc->app_name[0] ? json_string(sc->app_name) : json_null());
    }
    json_object_set_new(o, "needs_upload", need);
    return o;
}

/* A stored crash that cannot be symbolicated again (its original no longer
 * parses, or its symbolication fails on what it says): what can still be
 * read, 200. As text, the original as it was posted; as JSON, what the
 * store holds of it (crash_summary) with a warning saying why there are no
 * frames. The input is at fault, so never a 500. */
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
    json_t *doc = crash_summary(sc);
    json_object_set_new(doc, "threads", json_array());
    json_t *warnings = json_object_get(doc, "warnings");
    if (!json_is_array(warnings)) {
        warnings = json_array();
        json_object_set_new(doc, "warnings", warnings);
    }
    char msg[sizeof why->msg + 96];
    snprintf(msg, sizeof msg,
             "the stored report cannot be read again (%s): what the store holds of it",
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
    bool full;
    enum MHD_Result refused;
    if (!demangle_arg(c, &full, &refused))
        return refused;
    store_crash sc;
    symd_err err = {0};
    if (store_get_crash(srv->st, (int64_t)id, true, &sc, &err) != SYMD_OK)
        return reply_status(c, &err, "internal_error");
    bool text = want_text(c);
    enum MHD_Result ret;
    crash_report r;
    /* The stored original is read under the budget its size gives, as it
     * was when posted; past it, the answer is what the store holds. */
    mem_meter *m = mem_meter_current();
    if (m)
        mem_meter_set_limit(m, mem_request_limit(sc.original_len, srv->cfg->request_mem_factor,
                                                 srv->cfg->request_mem_allowance));
    symd_status pst = crash_parse_part(sc.original, sc.original_len, (size_t)sc.part, &r, &err);
    if (m && m->trip) {
        if (pst == SYMD_OK)
            crash_report_free(&r);
        symd_err why = {0};
        if (m->trip == MEM_TRIP_POOL)
            symd_fail(&why, SYMD_E_TOO_LARGE, "the server's in-flight memory "
                                              "(--max-inflight-mb) is in use; retry later");
        else
            symd_fail(&why, SYMD_E_TOO_LARGE, "reading it needs more than its memory budget "
                                              "of %llu MiB", (unsigned long long)(m->limit >> 20));
        mem_meter_swap(NULL); /* what the store holds is small: answered unmetered */
        ret = answer_stored(c, &sc, &why, text);
        mem_meter_swap(m);
        store_crash_free(&sc);
        return ret;
    }
    if (pst != SYMD_OK) {
        ret = err.kind == SYMD_E_NOMEM ? reply_status(c, &err, "")
                                       : answer_stored(c, &sc, &err, text);
        store_crash_free(&sc);
        return ret;
    }
    mem_input_read();
    crash_symbolication sym, shown;
    if (crash_symbolicate(srv->st, &r, false, &sym, &err) != SYMD_OK) {
        bool ours = err.kind == SYMD_E_NOMEM || err.kind == SYMD_E_DB || err.kind == SYMD_E_IO ||
                    err.kind == SYMD_E_UNAVAILABLE;
        ret = ours ? reply_status(c, &err, "internal_error") : answer_stored(c, &sc, &err, text);
        crash_report_free(&r);
        store_crash_free(&sc);
        return ret;
    }
    count_crash_frames(srv, &r, &sym);
    const char *kind = crash_kind_name(r.kind);
    bool same_rule = (!sc.grouping_rule && !sym.grouping_rule) ||
                     (sc.grouping_rule && sym.grouping_rule &&
                      strcmp(sc.grouping_rule, sym.grouping_rule) == 0);
    if (!sc.signature || strcmp(sc.signature, sym.signature) != 0 || !sc.kind ||
        strcmp(sc.kind, kind) != 0 || sc.bug_type != r.bug_type || !same_rule) {
        symd_err e2 = {0}; /* the answer stands even if the refiling fails */
        store_update_crash(srv->st, (int64_t)id, sym.signature, kind, r.bug_type,
                           sym.grouping_rule, &e2);
    }
    if (full && full_names_of(srv, &r, &sym, &shown, &err) != SYMD_OK) {
        ret = reply_status(c, &err, "internal_error");
    } else {
        ret = answer_crash(c, &r, full ? &shown : &sym, sc.original, sc.original_len,
                           (int64_t)id, 200, text, false, false);
        if (full)
            crash_symbolication_free(&shown);
    }
    crash_symbolication_free(&sym);
    crash_report_free(&r);
    store_crash_free(&sc);
    return ret;
}

/* ?state= of the group listings: a comma-separated list of states (any
 * one of them; empty: any state) into *mask (bits 1 << store_state);
 * false with a 400 queued for a name that is no state. */
bool states_arg(struct MHD_Connection *c, unsigned *mask, enum MHD_Result *refused)
{
    *mask = 0;
    const char *v = query_arg(c, "state");
    for (const char *p = v; p && *p;) {
        size_t n = strcspn(p, ",");
        store_state st;
        if (n && !store_state_parse(p, n, &st)) {
            *refused = reply_error(c, 400, "invalid_request",
                                   "unknown state '%.*s' (unresolved, resolved, ignored, "
                                   "regressed)",
                                   (int)(n < 64 ? n : 64), p);
            return false;
        }
        if (n)
            *mask |= 1u << st;
        p += n + (p[n] == ',');
    }
    return true;
}

/* ?limit, ?cursor and the filters of the crash listings (query, kind,
 * signature, app_version, os_version, hardware_model, format); false with a 400
 * queued in *refused for a bad one. */
bool crash_list_args(struct MHD_Connection *c, uint64_t *limit, uint64_t *before,
                            store_crash_filter *f, enum MHD_Result *refused)
{
    const char *bad = list_args(c, limit, before);
    if (bad) {
        *refused = reply_error(c, 400, "invalid_request", "%s", bad);
        return false;
    }
    memset(f, 0, sizeof *f);
    f->query = query_arg(c, "query");
    f->signature = query_arg(c, "signature");
    f->app_version = query_arg(c, "app_version");
    f->os_version = query_arg(c, "os_version");
    f->hardware_model = query_arg(c, "hardware_model");
    f->new_in = query_arg(c, "new_in");
    return kind_arg(c, &f->kind, refused) && format_arg(c, &f->format, refused) &&
           states_arg(c, &f->states, refused);
}

/* GET /v1/crashes: one page, newest first (?query, ?kind, ?signature,
 * ?app_version, ?os_version, ?hardware_model, ?format, ?limit, ?cursor). */
enum MHD_Result handle_crash_list(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    store_crash_filter f;
    enum MHD_Result refused;
    if (!crash_list_args(c, &limit, &before, &f, &refused))
        return refused;
    store_crash *rows = calloc((size_t)limit, sizeof *rows);
    if (!rows)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    bool more;
    symd_err err = {0};
    if (store_list_crashes(srv->st, &f, (int64_t)before, (size_t)limit, rows, &n, &more,
                           &err) != SYMD_OK) {
        free(rows);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, crash_summary(&rows[i]));
    json_t *doc = json_pack("{s:o}", "crashes", arr);
    set_next_cursor(doc, more, n ? rows[n - 1].id : 0);
    for (size_t i = 0; i < n; i++)
        store_crash_free(&rows[i]);
    free(rows);
    return reply_json(c, 200, doc);
}

/* DELETE /v1/crashes/{id}: the crash and its share of every counter; 204,
 * 404 when there is no such crash. */
enum MHD_Result handle_crash_delete(server *srv, struct MHD_Connection *c, req_state *rs)
{
    uint64_t id;
    if (!num_parse_u64(rs->path_arg, &id) || id == 0 || id > INT64_MAX)
        return reply_error(c, 400, "invalid_request", "'%s' is not a crash id", rs->path_arg);
    bool deleted;
    symd_err err = {0};
    if (store_delete_crash(srv->st, (int64_t)id, &deleted, &err) != SYMD_OK)
        return reply_status(c, &err, "internal_error");
    if (!deleted)
        return reply_error(c, 404, "not_found", "no crash %llu", (unsigned long long)id);
    return reply_bytes(c, 204, NULL, 0, NULL);
}

/* One missing image of /v1/missing: as the missing list has always said it,
 * and whether the reports say it is the OS's; with app (the "app" group),
 * also whether it is the newest crash's app image and that crash's app
 * version. NULL when out of memory. */
static json_t *missing_json(const store_missing *m, bool app)
{
    char u[37];
    uuid_format(m->uuid, u);
    json_t *stored_archs = json_array();
    for (const char *p = m->other_archs; *p;) {
        size_t len = strcspn(p, ",");
        json_array_append_new(stored_archs, json_stringn(p, len));
        p += len + (p[len] == ',');
    }
    json_t *o = json_object();
    json_object_set_new(o, "uuid", json_string(u));
    json_object_set_new(o, "arch", m->arch[0] ? json_string(m->arch) : json_null());
    json_object_set_new(o, "name", m->name[0] ? json_string(m->name) : json_null());
    json_object_set_new(o, "status", json_string(m->found_other_arch ? "found_other_arch"
                                                                      : "missing"));
    json_object_set_new(o, "stored_archs", stored_archs);
    json_object_set_new(o, "crashes", json_integer(m->crashes));
    json_object_set_new(o, "last_crash_id", json_integer(m->last_crash_id));
    json_object_set_new(o, "system", json_boolean(m->system));
    if (app) {
        json_object_set_new(o, "app", json_boolean(m->app));
        json_object_set_new(o, "app_version",
                            m->app_version[0] ? json_string(m->app_version) : json_null());
    }
    return o;
}

#define IMPORT_HINT                                                                          \
    "import that build's DeviceSupport folder or dyld shared cache (symd import)"

/* GET /v1/missing: the images stored crashes need and the store lacks for
 * their arch, most needed first ("missing", as it always was, each saying
 * whether it is the OS's); status found_other_arch (with the archs it is
 * stored under) when the UUID is there under another arch only. Then what
 * to do about them: "app", the app's images (dSYMs to upload, with the app
 * version of the newest crash needing each), and "system", the OS's images
 * counted by OS build and arch (to import), each group's build the newest
 * crash's needing its images. All three from the store's counters. */
enum MHD_Result handle_missing(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    const char *bad = list_args(c, &limit, &before);
    if (bad)
        return reply_error(c, 400, "invalid_request", "%s", bad);
    store_missing *m = calloc((size_t)limit, sizeof *m);
    store_missing_os *g = calloc((size_t)limit, sizeof *g);
    if (!m || !g) {
        free(m);
        free(g);
        return reply_error(c, 503, "out_of_memory", "out of memory");
    }
    size_t n;
    symd_err err = {0};
    json_t *doc = json_object(), *arr = json_array();
    json_object_set_new(doc, "missing", arr);
    symd_status st = store_missing_images(srv->st, STORE_MISSING_ALL, (size_t)limit, m, &n, &err);
    for (size_t i = 0; st == SYMD_OK && i < n; i++)
        json_array_append_new(arr, missing_json(&m[i], false));
    if (st == SYMD_OK)
        st = store_missing_images(srv->st, STORE_MISSING_APP, (size_t)limit, m, &n, &err);
    arr = json_array();
    json_object_set_new(doc, "app", arr);
    for (size_t i = 0; st == SYMD_OK && i < n; i++)
        json_array_append_new(arr, missing_json(&m[i], true));
    if (st == SYMD_OK)
        st = store_missing_system(srv->st, (size_t)limit, g, &n, &err);
    arr = json_array();
    json_object_set_new(doc, "system", arr);
    for (size_t i = 0; st == SYMD_OK && i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "os_version",
                            g[i].os_version[0] ? json_string(g[i].os_version) : json_null());
        json_object_set_new(o, "arch", g[i].arch[0] ? json_string(g[i].arch) : json_null());
        json_object_set_new(o, "count", json_integer(g[i].images));
        json_object_set_new(o, "last_crash_id", json_integer(g[i].last_crash_id));
        json_object_set_new(o, "hint", json_string(IMPORT_HINT));
        json_array_append_new(arr, o);
    }
    free(m);
    free(g);
    if (st != SYMD_OK) {
        json_decref(doc);
        return reply_status(c, &err, "internal_error");
    }
    return reply_json(c, 200, doc);
}

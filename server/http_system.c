/* System symbol sets over HTTP: GET /v1/system-symbols lists them, POST
 * imports a zip of a DeviceSupport folder (as symd import does a folder),
 * DELETE /v1/system-symbols/{id} deletes one with the images only it holds. */
#include <stdlib.h>
#include <string.h>

#include "../import/import.h"
#include "../util/hex.h"
#include "http_int.h"

/* Sets one listing answers at most (a team keeps tens of OS builds). */
#define MAX_SETS 10000

/* A set as the API describes it. */
static json_t *set_json(const store_symbol_set *s, bool counts)
{
    json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "id",
                          (json_int_t)s->id, "os_name", s->os_name, "os_version", s->os_version,
                          "os_build", s->os_build, "arch", s->arch, "model", s->model, "source",
                          s->source, "created_at", (json_int_t)s->created_at, "updated_at",
                          (json_int_t)s->updated_at);
    if (o && counts) {
        json_object_set_new(o, "image_count", json_integer((json_int_t)s->image_count));
        json_object_set_new(o, "bytes", json_integer((json_int_t)s->bytes));
    }
    return o;
}

enum MHD_Result handle_system_list(server *srv, struct MHD_Connection *c)
{
    store_symbol_set *rows = calloc(MAX_SETS, sizeof *rows);
    if (!rows)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n = 0;
    symd_err err = {0};
    if (store_list_symbol_sets(srv->st, rows, MAX_SETS, &n, &err) != SYMD_OK) {
        free(rows);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, set_json(&rows[i], true));
    free(rows);
    return reply_json(c, 200, json_pack("{s:o}", "sets", arr));
}

/* A query argument naming the set, NULL when absent or empty; false (with
 * a 400 queued) when it is no printable text of at most 63 bytes. */
static bool name_arg(struct MHD_Connection *c, const char *key, const char **out,
                     enum MHD_Result *refused)
{
    const char *v = query_arg(c, key);
    *out = v && *v ? v : NULL;
    if (!*out)
        return true;
    size_t n = strlen(v);
    bool ok = n < 64;
    for (size_t i = 0; ok && i < n; i++)
        ok = (unsigned char)v[i] >= ' ' && v[i] != 0x7f;
    if (!ok)
        *refused = reply_error(c, 400, "invalid_request",
                               "%s must be printable text of at most 63 bytes", key);
    return ok;
}

/* The import's counts and the first errors of single files. */
static json_t *report_json(const import_report *r)
{
    json_t *errs = json_array();
    for (size_t i = 0; i < r->nlisted; i++)
        json_array_append_new(errs, json_pack("{s:s, s:s}", "file", r->listed[i].file,
                                              "message", r->listed[i].msg));
    json_t *set = set_json(&r->set, false);
    return json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "set", set, "files",
                     (json_int_t)r->files, "slices", (json_int_t)r->slices, "stored",
                     (json_int_t)r->stored, "skipped", (json_int_t)r->skipped, "not_macho",
                     (json_int_t)r->not_macho, "error_count", (json_int_t)r->errors, "bytes",
                     (json_int_t)r->bytes, "errors", errs);
}

/* A zip of one DeviceSupport folder: 201 when anything was stored, 200
 * when every image was stored already. */
enum MHD_Result handle_system_post(server *srv, struct MHD_Connection *c, req_state *rs)
{
    if (rs->too_large)
        return reply_error(c, 413, "too_large", "upload exceeds %llu bytes",
                           (unsigned long long)rs->limit);
    if (rs->body.len == 0)
        return reply_error(c, 400, "empty_body", "post a zip of a DeviceSupport folder");
    if (!unzip_is_zip(rs->body.data, rs->body.len))
        return reply_error(c, 415, "not_zip", "the body is not a zip archive: post a zip of a "
                                              "DeviceSupport folder");
    import_options o = {0};
    enum MHD_Result refused;
    if (!name_arg(c, "os_name", &o.os_name, &refused) ||
        !name_arg(c, "os_version", &o.os_version, &refused) ||
        !name_arg(c, "os_build", &o.os_build, &refused))
        return refused;
    import_report r;
    memset(&r, 0, sizeof r);
    symd_err err = {0};
    symd_status st = import_zip(srv->st, rs->body.data, rs->body.len, &srv->cfg->unzip, &o, &r,
                                &err);
    enum MHD_Result over;
    if (reply_if_over_budget(c, &over))
        return over;
    if (st == SYMD_E_INVALID)
        return reply_error(c, 422, "not_devsupport", "%s", err.msg);
    if (st != SYMD_OK)
        return reply_status(c, &err, "malformed_zip");
    return reply_json(c, r.stored ? 201 : 200, report_json(&r));
}

/* DELETE: the set and the images an import stored that no other set holds. */
enum MHD_Result handle_system_set(server *srv, struct MHD_Connection *c, req_state *rs)
{
    uint64_t id;
    if (!num_parse_u64(rs->path_arg, &id) || id == 0 || id > INT64_MAX ||
        strspn(rs->path_arg, "0123456789") != strlen(rs->path_arg))
        return reply_error(c, 400, "invalid_id", "'%s' is not a symbol set id", rs->path_arg);
    bool found;
    size_t deleted;
    symd_err err = {0};
    if (store_delete_symbol_set(srv->st, (int64_t)id, &found, &deleted, &err) != SYMD_OK)
        return reply_status(c, &err, "internal_error");
    if (!found)
        return reply_error(c, 404, "not_found", "no symbol set %llu", (unsigned long long)id);
    return reply_json(c, 200, json_pack("{s:I, s:b, s:I}", "id", (json_int_t)id, "deleted", 1,
                                        "images_deleted", (json_int_t)deleted));
}

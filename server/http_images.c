/* The image store over HTTP: uploads (raw, multipart, zips, Breakpad .sym
 * files), listing, one UUID's slices and their deletion. */
#include <stdlib.h>
#include <string.h>

#include "../macho/macho.h"
#include "../ingest/ingest.h"
#include "../util/hex.h"
#include "http_int.h"
#include "regroup.h"

/* A stored slice as the API describes it; status ("created", ...) when not
 * NULL. */
static json_t *image_json(const store_image *im, const char *status)
{
    char uuid[37], vm[19];
    uuid_format(im->uuid, uuid);
    hex_format_u64(im->text_vmaddr, vm);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:I, s:I}",
                          "uuid", uuid, "arch", im->arch, "name", im->name, "kind",
                          im->kind, "text_vmaddr", vm, "text_size",
                          (json_int_t)im->text_size, "symbols",
                          (json_int_t)im->symbols, "functions",
                          (json_int_t)im->functions, "debug_info", im->debug_info,
                          "created_at", (json_int_t)im->created_at, "updated_at",
                          (json_int_t)im->updated_at);
    if (o && status)
        json_object_set_new(o, "status", json_string(status));
    return o;
}

/* Every slice of every file of the body in one transaction: 201 when any
 * is new or updated, 200 when all existed. */
enum MHD_Result handle_images_post(server *srv, struct MHD_Connection *c, req_state *rs)
{
    if (rs->too_large)
        return reply_error(c, 413, "too_large", "upload exceeds %llu bytes",
                           (unsigned long long)rs->limit);
    if (rs->too_many_files)
        return reply_error(c, 400, "too_many_files",
                           "at most %d files per upload", MAX_FILES);
    if (rs->bad_multipart)
        return reply_error(c, 400, "bad_multipart", "multipart body is malformed");
    if (rs->pp && rs->nfiles == 0)
        return reply_error(c, 400, "no_file",
                           "multipart upload has no file part (use -F file=@path)");
    if (!rs->pp && rs->body.len == 0)
        return reply_error(c, 400, "empty_body", "upload body is empty");
    upload_part parts[MAX_FILES];
    size_t n = 0;
    if (rs->pp) {
        for (size_t i = 0; i < rs->nfiles; i++, n++)
            parts[n] = (upload_part){rs->files[i].data.data, rs->files[i].data.len,
                                     rs->files[i].name};
    } else {
        parts[n++] = (upload_part){rs->body.data, rs->body.len, query_arg(c, "name")};
    }
    return reply_ingest(srv, c, parts, n);
}

enum MHD_Result reply_ingest(server *srv, struct MHD_Connection *c, const upload_part *parts,
                             size_t nparts)
{
    return reply_ingest_gated(srv, c, parts, nparts, NULL, NULL);
}

enum MHD_Result reply_ingest_gated(server *srv, struct MHD_Connection *c,
                                   const upload_part *parts, size_t nparts,
                                   bool (*gate)(void *ctx), void *ctx)
{
    ingest_batch batch;
    ingest_batch_init(&batch);
    symd_err err = {0};
    symd_status st = SYMD_OK;
    ingest_upload_info info = {0}; /* of the last file read: the failing one */
    const unzip_limits *zl = &srv->cfg->unzip;
    for (size_t i = 0; i < nparts && st == SYMD_OK; i++) {
        st = ingest_add_upload(&batch, parts[i].data, parts[i].len, parts[i].name, zl, &info,
                               &err);
        if (st != SYMD_OK && nparts > 1) {
            char msg[sizeof err.msg + 64];
            snprintf(msg, sizeof msg, "file %zu: %s", i + 1, err.msg);
            size_t l = strnlen(msg, sizeof err.msg - 1);
            memcpy(err.msg, msg, l);
            err.msg[l] = 0;
        }
    }
    if (gate && !gate(ctx)) {
        ingest_batch_free(&batch);
        return MHD_YES;
    }
    enum MHD_Result over;
    if (reply_if_over_budget(c, &over)) { /* nothing is stored of a short read */
        ingest_batch_free(&batch);
        return over;
    }
    mem_input_read();
    store_put_result *results = NULL;
    store_image *stored = NULL;
    if (st == SYMD_OK) {
        results = calloc(batch.n ? batch.n : 1, sizeof *results);
        stored = calloc(batch.n ? batch.n : 1, sizeof *stored);
        if (!results || !stored)
            st = symd_fail(&err, SYMD_E_NOMEM, "out of memory");
    }
    if (st == SYMD_OK)
        st = ingest_commit(srv->st, &batch, results, stored, &err);
    enum MHD_Result ret;
    if (st != SYMD_OK) {
        ret = reply_status(c, &err,
                           info.zip_corrupt  ? "malformed_zip"
                           : info.sym_failed ? "malformed_sym"
                                             : "malformed_macho");
    } else {
        bool any_new = false;
        json_t *arr = json_array();
        for (size_t i = 0; i < batch.n; i++) {
            const char *s = results[i] == STORE_CREATED   ? "created"
                            : results[i] == STORE_UPDATED ? "updated"
                                                          : "exists";
            any_new |= results[i] != STORE_EXISTS;
            json_t *o = image_json(&stored[i], s);
            const ingest_warnings *w = batch.warn[i];
            if (o && w) { /* what a .sym's reader resolved on its own */
                json_t *wa = json_array();
                for (size_t k = 0; k < w->n && k < INGEST_MAX_WARNINGS; k++)
                    json_array_append_new(wa, json_string(w->text[k]));
                json_object_set_new(o, "warnings", wa);
            }
            json_array_append_new(arr, o);
            /* crashes grouped under a place in it may have a name now */
            if (results[i] != STORE_EXISTS)
                regroup_image(srv->regroup, stored[i].name, stored[i].uuid);
        }
        ret = reply_json(c, any_new ? 201 : 200, json_pack("{s:o}", "images", arr));
    }
    free(results);
    free(stored);
    ingest_batch_free(&batch);
    return ret;
}

/* One page of stored slices, newest first (?query, ?arch, ?limit, ?cursor). */
enum MHD_Result handle_images_list(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    const char *bad = list_args(c, &limit, &before);
    if (bad)
        return reply_error(c, 400, "invalid_request", "%s", bad);
    store_image *rows = calloc((size_t)limit, sizeof *rows);
    if (!rows)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n;
    bool more;
    symd_err err = {0};
    if (store_list_images(srv->st, query_arg(c, "query"), query_arg(c, "arch"),
                          (int64_t)before, (size_t)limit, rows, &n, &more,
                          &err) != SYMD_OK) {
        free(rows);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, image_json(&rows[i], NULL));
    json_t *doc = json_pack("{s:o}", "images", arr);
    set_next_cursor(doc, more, n ? rows[n - 1].id : 0);
    free(rows);
    return reply_json(c, 200, doc);
}

/* GET: every slice of the UUID; DELETE: removes them all. */
enum MHD_Result handle_image(server *srv, struct MHD_Connection *c, req_state *rs,
                             const char *method)
{
    uint8_t uuid[16];
    if (!uuid_parse(rs->path_arg, uuid))
        return reply_error(c, 400, "invalid_uuid", "'%s' is not a UUID", rs->path_arg);
    symd_err err = {0};
    char ustr[37];
    uuid_format(uuid, ustr);
    if (strcmp(method, "DELETE") == 0) {
        size_t n;
        if (store_delete_image(srv->st, uuid, &n, &err) != SYMD_OK)
            return reply_status(c, &err, "internal_error");
        if (n == 0)
            return reply_error(c, 404, "not_found", "no image with UUID %s", ustr);
        return reply_json(c, 200, json_pack("{s:s, s:I}", "uuid", ustr, "deleted",
                                            (json_int_t)n));
    }
    store_image rows[MACHO_MAX_SLICES];
    size_t n;
    if (store_get_image(srv->st, uuid, rows, MACHO_MAX_SLICES, &n, &err) != SYMD_OK)
        return reply_status(c, &err, "internal_error");
    if (n == 0)
        return reply_error(c, 404, "not_found", "no image with UUID %s", ustr);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, image_json(&rows[i], NULL));
    return reply_json(c, 200, json_pack("{s:s, s:o}", "uuid", ustr, "images", arr));
}

/* GET /v1/webhooks/deliveries: the webhook delivery log, newest first. */
#include <jansson.h>
#include <stdlib.h>

#include "http_int.h"

static const char *state_name(int state)
{
    return state == STORE_DELIVERY_DELIVERED ? "delivered"
           : state == STORE_DELIVERY_FAILED  ? "failed"
                                             : "pending";
}

/* One delivery as the log shows it: the event (id, type, when, its data),
 * where it goes, and how its attempts went. */
static json_t *delivery_json(const store_delivery *d)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(d->id));
    json_object_set_new(o, "event_id", json_integer(d->event_id));
    json_object_set_new(o, "type", json_string(d->type));
    json_object_set_new(o, "url", json_string(d->url));
    json_object_set_new(o, "state", json_string(state_name(d->state)));
    json_object_set_new(o, "attempts", json_integer(d->attempts));
    json_object_set_new(o, "last_status", d->last_status ? json_integer(d->last_status)
                                                         : json_null());
    json_object_set_new(o, "last_error", d->last_error[0] ? json_string(d->last_error)
                                                          : json_null());
    json_object_set_new(o, "event_at", json_integer(d->event_at));
    json_object_set_new(o, "last_attempt_at", d->updated_at ? json_integer(d->updated_at)
                                                            : json_null());
    json_object_set_new(o, "next_attempt_at", d->state == STORE_DELIVERY_PENDING
                                                  ? json_integer(d->next_at)
                                                  : json_null());
    json_object_set_new(o, "done_at", d->done_at ? json_integer(d->done_at) : json_null());
    json_error_t je;
    json_t *data = d->data ? json_loads(d->data, 0, &je) : NULL;
    json_object_set_new(o, "data", data ? data : json_object());
    return o;
}

enum MHD_Result handle_webhook_deliveries(server *srv, struct MHD_Connection *c)
{
    uint64_t limit, before;
    const char *bad = list_args(c, &limit, &before);
    if (bad)
        return reply_error(c, 400, "invalid_request", "%s", bad);
    store_delivery *rows = calloc((size_t)limit, sizeof *rows);
    if (!rows)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    size_t n = 0;
    bool more = false;
    symd_err err = {0};
    if (store_hook_list(srv->st, (int64_t)before, (size_t)limit, rows, &n, &more, &err) !=
        SYMD_OK) {
        free(rows);
        return reply_status(c, &err, "internal_error");
    }
    json_t *doc = json_object(), *arr = json_array();
    json_object_set_new(doc, "deliveries", arr);
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(arr, delivery_json(&rows[i]));
        store_delivery_free(&rows[i]);
    }
    set_next_cursor(doc, more, n ? rows[n - 1].id : 0);
    free(rows);
    return reply_json(c, 200, doc);
}

/* Webhook events in the store (store.h, "webhooks"): the data each event
 * carries, built alike for both backends, and the store's calls over the
 * backend's outbox functions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "../util/hex.h"
#include "../util/jsonw.h"

#define HOOK_DATA_MAX (1u << 20) /* an event's data: names and a few numbers */
#define HOOK_FIELD_MAX 4096      /* bytes of one name a report gave, cut beyond */

/* "key":"value" (null for NULL or ""), after a comma when sep; a value
 * longer than HOOK_FIELD_MAX (a report's own text: a process name) cut at
 * a character's start, so no report makes an event too large to record. */
static void field_str(jsonw *w, const char *key, const char *v, bool sep)
{
    if (sep)
        JW_LIT(w, ",");
    jw_str(w, key);
    JW_LIT(w, ":");
    if (!v || !*v) {
        JW_LIT(w, "null");
        return;
    }
    size_t len = strlen(v);
    if (len < HOOK_FIELD_MAX) {
        jw_str(w, v);
        return;
    }
    char cut[HOOK_FIELD_MAX];
    store_text_cut(cut, sizeof cut, v, len);
    jw_str(w, cut);
}

static void field_i64(jsonw *w, const char *key, int64_t v)
{
    JW_LIT(w, ",");
    jw_str(w, key);
    JW_LIT(w, ":");
    jw_i64(w, v);
}

static void group_obj(jsonw *w, const char *kind, const char *signature)
{
    JW_LIT(w, "\"group\":{");
    field_str(w, "kind", kind, false);
    field_str(w, "signature", signature, true);
    JW_LIT(w, "}");
}

/* "crash":{...}: the crash that caused the event, as listings show it. */
static void crash_obj(jsonw *w, const store_crash *c, int64_t id)
{
    JW_LIT(w, ",\"crash\":{\"id\":");
    jw_i64(w, id);
    field_str(w, "process", c->process, true);
    field_str(w, "bundle_id", c->bundle_id, true);
    field_str(w, "app_version", c->app_version, true);
    field_str(w, "os_version", c->os_version, true);
    field_str(w, "hardware_model", c->hardware_model, true);
    field_str(w, "exception_type", c->exception_type, true);
    JW_LIT(w, "}");
}

static char *finish(dynbuf *b, jsonw *w)
{
    JW_LIT(w, "}");
    if (!w->ok) {
        dynbuf_free(b);
        return NULL;
    }
    size_t len;
    return (char *)dynbuf_take(b, &len);
}

char *store_hook_data_group_new(const store_crash *c, int64_t crash_id)
{
    dynbuf b;
    dynbuf_init(&b, HOOK_DATA_MAX);
    jsonw w;
    jw_init(&w, &b);
    JW_LIT(&w, "{");
    group_obj(&w, c->kind ? c->kind : "crash", c->signature);
    crash_obj(&w, c, crash_id);
    return finish(&b, &w);
}

char *store_hook_data_image_missing(const store_crash_image *im, const store_crash *c,
                                    int64_t crash_id)
{
    char u[37];
    uuid_format(im->uuid, u);
    dynbuf b;
    dynbuf_init(&b, HOOK_DATA_MAX);
    jsonw w;
    jw_init(&w, &b);
    JW_LIT(&w, "{\"image\":{");
    field_str(&w, "uuid", u, false);
    field_str(&w, "arch", im->arch, true);
    field_str(&w, "name", im->name, true);
    JW_LIT(&w, ",\"app\":");
    jw_raw(&w, im->app ? "true" : "false");
    JW_LIT(&w, "}");
    crash_obj(&w, c, crash_id);
    return finish(&b, &w);
}

char *store_hook_data_group_spike(const store_crash *c, int64_t crash_id, int64_t hour,
                                  int64_t hour_count, int64_t baseline_count, double factor)
{
    dynbuf b;
    dynbuf_init(&b, HOOK_DATA_MAX);
    jsonw w;
    jw_init(&w, &b);
    JW_LIT(&w, "{");
    group_obj(&w, c->kind ? c->kind : "crash", c->signature);
    field_i64(&w, "hour_start", hour * 3600000);
    field_i64(&w, "hour_count", hour_count);
    /* the 168 hours before, and their mean per hour */
    field_i64(&w, "baseline_count", baseline_count);
    char num[64];
    snprintf(num, sizeof num, ",\"baseline_per_hour\":%.4f,\"factor\":%g",
             (double)baseline_count / STORE_HOOK_BASELINE_HOURS, factor);
    jw_raw(&w, num);
    crash_obj(&w, c, crash_id);
    return finish(&b, &w);
}

char *store_hook_data_group_regressed(const char *kind, const char *signature, int64_t crash_id,
                                      const char *app_version, const char *resolved_in,
                                      int64_t count)
{
    dynbuf b;
    dynbuf_init(&b, HOOK_DATA_MAX);
    jsonw w;
    jw_init(&w, &b);
    JW_LIT(&w, "{");
    group_obj(&w, kind, signature);
    JW_LIT(&w, ",\"crash\":{\"id\":");
    jw_i64(&w, crash_id);
    field_str(&w, "app_version", app_version, true);
    JW_LIT(&w, "}");
    field_str(&w, "resolved_in", resolved_in, true);
    field_i64(&w, "count", count);
    return finish(&b, &w);
}

void store_delivery_free(store_delivery *d)
{
    if (d) {
        free(d->data);
        d->data = NULL;
    }
}

/* A copy of h's targets in one allocation (the strings after the array). */
store_hooks *store_hooks_copy(const store_hooks *h)
{
    size_t bytes = sizeof(store_hooks) + h->nurls * sizeof(char *);
    for (size_t i = 0; i < h->nurls; i++)
        bytes += strlen(h->urls[i]) + 1;
    store_hooks *c = malloc(bytes);
    if (!c)
        return NULL;
    *c = *h;
    const char **urls = (const char **)(c + 1);
    char *p = (char *)(urls + h->nurls);
    for (size_t i = 0; i < h->nurls; i++) {
        size_t n = strlen(h->urls[i]) + 1;
        memcpy(p, h->urls[i], n);
        urls[i] = p;
        p += n;
    }
    c->urls = urls;
    return c;
}

symd_status store_hook_emit_group_regressed(store *s, const char *kind, const char *signature,
                                            int64_t crash_id, const char *app_version,
                                            const char *resolved_in, int64_t count,
                                            int64_t *event_id, symd_err *err)
{
    char *data = store_hook_data_group_regressed(kind, signature, crash_id, app_version,
                                                 resolved_in, count);
    if (!data)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    symd_status r = store_hook_emit(s, "group.regressed", data, event_id, err);
    free(data);
    return r;
}

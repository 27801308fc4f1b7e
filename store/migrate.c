/* symd migrate: a store copied row by row from one backend to another
 * through the seam (export_rows, import_*), then verified by row counts and
 * checksums of every row read back from both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "../util/dynbuf.h"

const store_table_def store_tables[STORE_NTABLES] = {
    {"images", 13,
     {"id", "uuid", "arch", "name", "kind", "text_vmaddr", "text_size", "symbols", "functions",
      "debug_info", "created_at", "updated_at", "system"},
     "id"},
    {"image_data", 3, {"image_id", "kind", "data"}, "image_id, kind"},
    {"symbol_sets", 9,
     {"id", "os_name", "os_version", "os_build", "arch", "model", "source", "created_at",
      "updated_at"},
     "id"},
    {"symbol_set_images", 2, {"set_id", "image_id"}, "set_id, image_id"},
    {"crashes", 21,
     {"id", "created_at", "kind", "bug_type", "format", "process", "bundle_id", "app_version",
      "os_version", "hardware_model", "incident_id", "exception_type", "signature", "app_uuid",
      "app_arch", "app_name", "refs", "part", "grouping_rule", "idem_key", "content_key"},
     "id"},
    {"crash_originals", 4, {"id", "codec", "original_len", "original"}, "id"},
    {"crash_image_refs", 7,
     {"id", "uuid", "arch", "name", "crashes", "last_crash_id", "system"}, "id"},
    {"crash_groups", 8,
     {"kind", "signature", "count", "first_seen", "last_seen", "example_id", "app_version",
      "process"},
     "kind, signature"},
    {"crash_group_days", 4, {"kind", "signature", "day", "count"}, "kind, signature, day"},
    {"crash_days", 3, {"kind", "day", "count"}, "kind, day"},
    {"crash_group_dims", 8,
     {"kind", "signature", "dim", "value", "count", "first_seen", "last_seen", "example_id"},
     "kind, signature, dim, value"},
    {"crash_regroup", 1, {"id"}, "id"},
    {"crash_group_states", 15,
     {"kind", "signature", "state", "resolved_in", "resolved_version", "resolved_key",
      "ignore_until", "ignore_reports", "ignore_seen", "first_version", "first_key",
      "last_version", "last_key", "changed_at", "reports"},
     "kind, signature"},
    {"crash_group_history", 14,
     {"id", "kind", "signature", "at", "from_state", "to_state", "by_role", "reason", "crash_id",
      "resolved_in", "version", "ignore_until", "ignore_reports", "note"},
     "id"},
    {"crash_dim_days", 6, {"kind", "signature", "dim", "value", "day", "count"},
     "kind, signature, dim, value, day"},
};

_Static_assert(STORE_NTABLES == STORE_COPY_TABLES, "store.h and backend.h count the same tables");

char *store_copy_sql(int t, bool insert, char param)
{
    const store_table_def *d = &store_tables[t];
    dynbuf q;
    dynbuf_init(&q, 4096);
#define ADDSTR(str) dynbuf_add(&q, (str), strlen(str))
    bool ok = ADDSTR(insert ? "INSERT INTO " : "SELECT ");
    if (insert)
        ok = ok && ADDSTR(d->name) && ADDSTR("(");
    for (int i = 0; i < d->ncols && ok; i++)
        ok = (!i || ADDSTR(", ")) && ADDSTR(d->cols[i]);
    if (insert) {
        ok = ok && ADDSTR(") VALUES (");
        for (int i = 0; i < d->ncols && ok; i++) {
            char ph[16];
            snprintf(ph, sizeof ph, "%s%c%d", i ? ", " : "", param, i + 1);
            ok = ADDSTR(ph);
        }
        ok = ok && ADDSTR(")");
    } else {
        ok = ok && ADDSTR(" FROM ") && ADDSTR(d->name) && ADDSTR(" ORDER BY ") && ADDSTR(d->key);
    }
    ok = ok && dynbuf_add(&q, "", 1);
#undef ADDSTR
    char *sql = ok ? (char *)dynbuf_take(&q, NULL) : NULL;
    dynbuf_free(&q);
    return sql;
}

/* A 64-bit hash of one row: FNV-1a over each value's type, length and
 * bytes, then mixed (splitmix64) so that summing rows stays a good check. */
static uint64_t row_hash(const store_value *v, int n)
{
    uint64_t h = 1469598103934665603ull;
#define MIX(byte) (h = (h ^ (uint8_t)(byte)) * 1099511628211ull)
    for (int i = 0; i < n; i++) {
        MIX(v[i].type);
        uint64_t x = v[i].type == STORE_V_INT ? (uint64_t)v[i].i : (uint64_t)v[i].len;
        for (int b = 0; b < 8; b++)
            MIX(x >> (8 * b));
        if (v[i].type == STORE_V_TEXT || v[i].type == STORE_V_BLOB)
            for (size_t k = 0; k < v[i].len; k++)
                MIX(v[i].p[k]);
    }
#undef MIX
    h += 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

static void tally(store_copy_table *t, const store_value *v, int n)
{
    t->rows++;
    t->checksum += row_hash(v, n);
    for (int i = 0; i < n; i++)
        if (v[i].type == STORE_V_TEXT || v[i].type == STORE_V_BLOB)
            t->bytes += v[i].len;
}

typedef struct {
    const store_backend *be;
    store_db *db;
    int t;
    store_copy_table *tally;
} copy_ctx;

/* store_row_fn: a source row counted and written to the target. */
static symd_status copy_row(void *arg, const store_value *cols, symd_err *err)
{
    copy_ctx *c = arg;
    tally(c->tally, cols, store_tables[c->t].ncols);
    return c->be->import_row(c->db, c->t, cols, err);
}

/* store_row_fn: a target row counted. */
static symd_status count_row(void *arg, const store_value *cols, symd_err *err)
{
    (void)err;
    copy_ctx *c = arg;
    tally(c->tally, cols, store_tables[c->t].ncols);
    return SYMD_OK;
}

symd_status store_migrate(const char *from, const char *to, store_copy_table *tables,
                          symd_err *err)
{
    const store_backend *sb = store_backend_for(from), *tb = store_backend_for(to);
    memset(tables, 0, STORE_COPY_TABLES * sizeof *tables);
    for (int t = 0; t < STORE_NTABLES; t++)
        tables[t].table = store_tables[t].name;
    if (!tb->import_begin)
        return symd_fail(err, SYMD_E_INVALID, "a %s store cannot be a migration target",
                         tb->name);
    if (strcmp(from, to) == 0)
        return symd_fail(err, SYMD_E_INVALID, "--from and --to name the same database");
    store_db *src = NULL, *dst = NULL;
    symd_status r = sb->open(from, 1, NULL, NULL, &src, err);
    if (r == SYMD_OK)
        r = tb->open(to, 1, NULL, NULL, &dst, err);
    if (r == SYMD_OK)
        r = tb->import_begin(dst, err);
    if (r != SYMD_OK)
        goto out;
    for (int t = 0; t < STORE_NTABLES && r == SYMD_OK; t++) {
        copy_ctx c = {tb, dst, t, &tables[t]};
        r = sb->export_rows(src, t, copy_row, &c, err);
    }
    symd_status e = tb->import_end(dst, r == SYMD_OK, err);
    if (r == SYMD_OK)
        r = e;
    /* verification: the target read back, table by table */
    for (int t = 0; t < STORE_NTABLES && r == SYMD_OK; t++) {
        store_copy_table got = {.table = store_tables[t].name};
        copy_ctx c = {tb, dst, t, &got};
        r = tb->export_rows(dst, t, count_row, &c, err);
        if (r == SYMD_OK && (got.rows != tables[t].rows || got.checksum != tables[t].checksum ||
                             got.bytes != tables[t].bytes))
            r = symd_fail(err, SYMD_E_DB,
                          "verification failed: table %s has %lld rows (checksum %016llx) in "
                          "the target, %lld (checksum %016llx) in the source",
                          store_tables[t].name, (long long)got.rows,
                          (unsigned long long)got.checksum, (long long)tables[t].rows,
                          (unsigned long long)tables[t].checksum);
    }
out:
    if (dst)
        tb->close(dst);
    if (src)
        sb->close(src);
    return r;
}

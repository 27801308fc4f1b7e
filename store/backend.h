/* The seam between the store's core (store.c: the API, the index cache) and
 * a database: one table of functions per backend, chosen once at
 * store_open. The core never asks which backend it has; a backend keeps its
 * SQL, its connections and its schema migrations to itself, and every
 * function is safe to call from any thread. Contracts are those of the
 * store.h function of the same name unless said here. */
#ifndef SYMD_STORE_BACKEND_H
#define SYMD_STORE_BACKEND_H

#include <stdio.h>
#include <string.h>

#include "appversion.h"
#include "store.h"

/* How a crash's original bytes are stored. */
#define STORE_CODEC_RAW 0  /* as posted (rows of databases before version 4) */
#define STORE_CODEC_ZSTD 1 /* one zstd frame */

/* ---- what both backends compute alike ---- */

/* The UTC day (days since 1970-01-01) of ms (unix milliseconds). */
static inline int64_t store_day_of(int64_t ms)
{
    return ms >= 0 ? ms / 86400000 : (ms - 86399999) / 86400000;
}

/* How many of f's dimension filters (app version, OS version, device) are
 * set; *dim is the last of them set (a store_dim), -1 when none is. */
static inline int store_filter_dims(const store_crash_filter *f, int *dim)
{
    const char *v[3] = {f->app_version, f->os_version, f->hardware_model};
    int n = 0;
    *dim = -1;
    for (int d = 0; d < 3; d++)
        if (v[d] && *v[d]) {
            n++;
            *dim = d;
        }
    return n;
}

/* m->other_archs from archs (comma-separated, len bytes; NULL: none): as
 * many whole names as fit, and found_other_arch when there is any. */
static inline void store_missing_other_archs(store_missing *m, const char *archs, size_t len)
{
    m->found_other_arch = archs && len;
    m->other_archs[0] = 0;
    if (!m->found_other_arch)
        return;
    size_t n = len < sizeof m->other_archs ? len : sizeof m->other_archs - 1;
    memcpy(m->other_archs, archs, n);
    m->other_archs[n] = 0;
    if (len >= sizeof m->other_archs) { /* whole names only */
        char *cut = strrchr(m->other_archs, ',');
        if (cut)
            *cut = 0;
    }
}

/* Copies text src (len bytes, NULL: none) into dst (cap bytes), NUL-terminated,
 * cut when longer at the start of a UTF-8 character, so that a cut value
 * (a long name a report gave) is still valid UTF-8 for a JSON answer. */
static inline void store_text_cut(char *dst, size_t cap, const char *src, size_t len)
{
    size_t n = src ? len : 0;
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
            n--;
    }
    if (n)
        memcpy(dst, src, n);
    dst[n] = 0;
}

/* ---- webhook events (store/hooks.c) ---- */

/* Hours a spike's baseline spans (the 7 days before the current hour). */
#define STORE_HOOK_BASELINE_HOURS 168
/* The data of each event (a JSON object's text, malloc'ed; NULL when out
 * of memory), about crash c stored as crash_id. */
char *store_hook_data_group_new(const store_crash *c, int64_t crash_id);
char *store_hook_data_image_missing(const store_crash_image *im, const store_crash *c,
                                    int64_t crash_id);
/* hour: hours since 1970 (UTC); baseline_count: the group's crashes in the
 * STORE_HOOK_BASELINE_HOURS hours before it. */
char *store_hook_data_group_spike(const store_crash *c, int64_t crash_id, int64_t hour,
                                  int64_t hour_count, int64_t baseline_count, double factor);
/* A copy of h (one allocation, free() it). */
store_hooks *store_hooks_copy(const store_hooks *h);

/* Whether a crash post records events under h, and spike counts. */
static inline bool store_hooks_on(const store_hooks *h)
{
    return h && h->nurls > 0;
}

/* ---- a group's workflow: what both backends read and write alike ---- */

/* A group's workflow columns on crash_group_states s (LEFT JOINed: a group
 * without a row is unresolved), in the order store_status_set takes them. */
#define STORE_STATUS_COLS                                                                   \
    "coalesce(s.state, 'unresolved'), coalesce(s.changed_at, 0), coalesce(s.resolved_in, "   \
    "''), s.resolved_version, coalesce(s.ignore_until, 0), coalesce(s.ignore_reports, 0), "   \
    "coalesce(s.ignore_seen, 0), s.first_version, s.last_version, coalesce(s.reports, 0)"
#define STORE_STATUS_NCOLS 10

/* The columns of crash_group_history h a store_group_change is read from
 * (store_change_set). */
#define STORE_HISTORY_COLS                                                                  \
    "h.id, h.at, h.from_state, h.to_state, h.by_role, h.reason, coalesce(h.crash_id, 0), "   \
    "h.resolved_in, h.version, h.ignore_until, h.ignore_reports, h.note"
#define STORE_HISTORY_NCOLS 12

/* A state name as stored into *st (an unknown one is unresolved). */
static inline store_state store_state_of(const char *name, size_t len)
{
    store_state st = STORE_STATE_UNRESOLVED;
    if (name)
        store_state_parse(name, len, &st);
    return st;
}

/* " AND coalesce(s.state, 'unresolved') IN (...)" of the states whose bits
 * mask sets (store_crash_filter.states) into out (cap bytes: 128 do);
 * "" for mask 0. Names from the store, never from input. */
static inline void store_states_sql(unsigned mask, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    if (!(mask & ((1u << STORE_STATE_COUNT) - 1)))
        return;
    o += (size_t)snprintf(out, cap, " AND coalesce(s.state, 'unresolved') IN (");
    for (int i = 0, n = 0; i < STORE_STATE_COUNT && o < cap; i++)
        if (mask & (1u << i))
            o += (size_t)snprintf(out + o, cap - o, "%s'%s'", n++ ? ", " : "",
                                  store_state_name((store_state)i));
    if (o < cap)
        snprintf(out + o, cap - o, ")");
}

/* One row of crash_group_history to write. */
typedef struct {
    const char *kind, *signature;
    int64_t at;
    store_state from, to;
    const char *by, *reason;
    int64_t crash_id; /* 0: none (NULL) */
    const char *resolved_in, *version;
    int64_t ignore_until, ignore_reports;
    const char *note;
} store_history_row;

/* A group's first and last version while existing groups get their rows
 * (the backends' backfill at open: versions from crash_group_dims). */
typedef struct {
    char first[128], first_key[APP_VERSION_KEY_MAX];
    char last[128], last_key[APP_VERSION_KEY_MAX];
} store_version_span;

/* Widens span by version v (len bytes). */
static inline void store_span_add(store_version_span *sp, const char *v, size_t len)
{
    char text[128], key[APP_VERSION_KEY_MAX], fkey[APP_VERSION_KEY_MAX];
    store_text_cut(text, sizeof text, v, len);
    if (!app_version_key(text, key) || !app_version_first_key(text, fkey))
        return;
    if (!sp->first_key[0] || strcmp(fkey, sp->first_key) < 0) {
        memcpy(sp->first_key, fkey, sizeof fkey);
        memcpy(sp->first, text, sizeof text);
    }
    if (!sp->last_key[0] || strcmp(key, sp->last_key) > 0) {
        memcpy(sp->last_key, key, sizeof key);
        memcpy(sp->last, text, sizeof text);
    }
}

/* A backend's open database (its connection pool). */
typedef struct store_db store_db;

/* Told by a backend when images were written elsewhere (another process on
 * the same database): uuid is the UUID whose slices changed, NULL when
 * changes may have been missed (everything is to be read again). Called
 * from a thread of the backend's own, at any time between open and close;
 * a backend that sees no other writers (SQLite) never calls it. */
typedef void (*store_change_fn)(void *ctx, const uint8_t *uuid);

/* ---- copying a store (symd migrate) ---- */

/* One column value of a copied row. */
typedef enum { STORE_V_NULL, STORE_V_INT, STORE_V_TEXT, STORE_V_BLOB } store_vtype;
typedef struct {
    store_vtype type;
    int64_t i;        /* STORE_V_INT */
    const uint8_t *p; /* STORE_V_TEXT (not NUL-terminated), STORE_V_BLOB */
    size_t len;
} store_value;

/* The tables of a schema-STORE_SCHEMA_VERSION store, each with its columns
 * in the order export and import give them (every backend has these tables
 * and columns under these names; key orders the rows). */
#define STORE_MAX_COLS 21 /* columns of the widest table copied (crashes) */
typedef struct {
    const char *name;
    int ncols;
    const char *cols[STORE_MAX_COLS];
    const char *key;
} store_table_def;
#define STORE_NTABLES 15
extern const store_table_def store_tables[STORE_NTABLES];
/* "SELECT cols FROM t ORDER BY key", or "INSERT INTO t(cols) VALUES
 * (P1, P2..)" with param ('$' for PostgreSQL, '?' for SQLite) as P, of
 * store_tables[t] (names from the table, never from input); malloc'ed,
 * NULL when out of memory. */
char *store_copy_sql(int t, bool insert, char param);

/* Receives one exported row (cols: store_tables[t].ncols values, valid
 * during the call). */
typedef symd_status (*store_row_fn)(void *ctx, const store_value *cols, symd_err *err);

typedef struct store_backend {
    const char *name; /* "sqlite", "postgresql" */
    /* Whether `where` (the --db value) names a database of this backend. */
    bool (*claims)(const char *where);
    /* Opens `where` with pool connections, creating the schema or migrating
     * it; refuses a database written by a newer symd. on_change (may be
     * NULL) is told of images other processes wrote, until close. */
    symd_status (*open)(const char *where, int pool, store_change_fn on_change, void *ctx,
                        store_db **out, symd_err *err);
    void (*close)(store_db *db);
    bool (*ping)(store_db *db);

    /* ---- images ---- */
    symd_status (*put_images)(store_db *db, store_put *puts, size_t n,
                              store_put_result *results, store_image *stored, symd_err *err);
    symd_status (*delete_image)(store_db *db, const uint8_t uuid[16], size_t *deleted,
                                symd_err *err);
    symd_status (*get_image)(store_db *db, const uint8_t uuid[16], store_image *out, size_t max,
                             size_t *n, symd_err *err);
    symd_status (*list_images)(store_db *db, const char *query, const char *arch,
                               int64_t before_id, size_t limit, store_image *out, size_t *n,
                               bool *more, symd_err *err);
    symd_status (*counts)(store_db *db, int64_t *images, int64_t *blobs, int64_t *crashes,
                          symd_err *err);
    /* The row of (uuid, arch) (arch NULL: the UUID's only slice), how many
     * slices its UUID has, and copies of its index blobs (malloc'ed, the
     * caller's; *lines NULL when it has no line index, *unwind when it has
     * no unwind table), read consistently.
     * SYMD_E_NOT_FOUND when not stored; SYMD_E_INVALID when arch is NULL
     * and the UUID has several slices. */
    symd_status (*load_index)(store_db *db, const uint8_t uuid[16], const char *arch,
                              store_image *meta, int *nslices, uint8_t **sym, size_t *sym_len,
                              uint8_t **lines, size_t *lines_len, uint8_t **unwind,
                              size_t *unwind_len, symd_err *err);

    /* A copy of (uuid, arch)'s blob of kind (malloc'ed, the caller's).
     * SYMD_E_NOT_FOUND when the image or the blob is not stored. */
    symd_status (*load_blob)(store_db *db, const uint8_t uuid[16], const char *arch,
                             const char *kind, uint8_t **data, size_t *len, symd_err *err);

    /* ---- chunks (store.h: store_chunk_*) ---- */
    symd_status (*chunk_put)(store_db *db, const uint8_t hash[32], const uint8_t *data,
                             size_t len, uint64_t budget, int64_t now,
                             store_chunk_result *res, symd_err *err);
    /* store.h: store_chunk_temp and store_chunk_put_temp; NULL in a backend
     * that keeps chunks in the database (the body is buffered for
     * chunk_put). chunk_put_temp takes tmp: renamed into place or removed. */
    symd_status (*chunk_temp)(store_db *db, const uint8_t hash[32], uint64_t len, char *tmp,
                              size_t cap, int *fd, symd_err *err);
    symd_status (*chunk_put_temp)(store_db *db, const uint8_t hash[32], const char *tmp,
                                  uint64_t len, uint64_t budget, int64_t now,
                                  store_chunk_result *res, symd_err *err);
    symd_status (*chunks_missing)(store_db *db, const uint8_t (*hashes)[32], size_t n,
                                  bool *missing, symd_err *err);
    symd_status (*chunk_get)(store_db *db, const uint8_t hash[32], uint8_t **data, size_t *len,
                             symd_err *err);
    /* The chunk's bytes as a file to read or map (*fd the caller's, *len its
     * size); SYMD_E_NOT_FOUND when not held. NULL in a backend that keeps
     * chunks in the database (PostgreSQL: every node reads them). */
    symd_status (*chunk_open)(store_db *db, const uint8_t hash[32], int *fd, uint64_t *len,
                              symd_err *err);
    symd_status (*chunks_delete)(store_db *db, const uint8_t (*hashes)[32], size_t n,
                                 symd_err *err);
    symd_status (*chunks_expire)(store_db *db, int64_t before_ms, size_t *deleted,
                                 symd_err *err);
    symd_status (*chunk_stats)(store_db *db, int64_t *count, int64_t *bytes, symd_err *err);

    /* ---- system symbol sets ---- */
    symd_status (*symbol_set_open)(store_db *db, const store_symbol_set *want,
                                   store_symbol_set *out, bool *created, symd_err *err);
    /* As store_symbol_set_add (the core invalidates its cache of the
     * images reported STORE_CREATED). */
    symd_status (*symbol_set_add)(store_db *db, int64_t set_id, store_put *puts, size_t n,
                                  store_put_result *results, const store_image_key *links,
                                  size_t nlinks, size_t *linked, symd_err *err);
    symd_status (*list_symbol_sets)(store_db *db, store_symbol_set *out, size_t max, size_t *n,
                                    symd_err *err);
    /* *uuids (malloc'ed, the caller's; NULL when none) are the UUIDs of the
     * *images_deleted images deleted, for the core's cache. */
    symd_status (*delete_symbol_set)(store_db *db, int64_t id, bool *found,
                                     size_t *images_deleted, uint8_t (**uuids)[16],
                                     symd_err *err);

    /* ---- crash reports ---- */
    /* c->original is the stored form (codec: STORE_CODEC_*), raw_len the
     * report's own length; imgs hold no (uuid, arch) twice. */
    symd_status (*put_crash)(store_db *db, const store_crash *c, int codec, size_t raw_len,
                             const store_crash_image *imgs, size_t nimgs, int64_t *id,
                             store_group_event *ev, symd_err *err);
    /* c->original (with_bytes) is the stored form; *codec and *raw_len say
     * how to read it back. */
    symd_status (*get_crash)(store_db *db, int64_t id, bool with_bytes, store_crash *c,
                             int *codec, size_t *raw_len, symd_err *err);
    symd_status (*update_crash)(store_db *db, int64_t id, const char *signature,
                                const char *kind, int bug_type, const char *rule,
                                symd_err *err);
    /* store_grouping_rules_changed */
    symd_status (*grouping_digest)(store_db *db, const char *digest, bool *changed,
                                   symd_err *err);
    symd_status (*delete_crash)(store_db *db, int64_t id, bool *deleted, symd_err *err);
    symd_status (*prune_crashes)(store_db *db, int64_t before_ms, int64_t max_crashes,
                                 size_t batch, size_t *deleted, symd_err *err);
    symd_status (*list_crashes)(store_db *db, const store_crash_filter *f, int64_t before_id,
                                size_t limit, store_crash *out, size_t *n, bool *more,
                                symd_err *err);
    symd_status (*crash_groups)(store_db *db, const store_crash_filter *f, size_t limit,
                                store_crash_group *out, size_t *n, symd_err *err);
    symd_status (*crash_trend)(store_db *db, const char *kind, const char *signature,
                               int64_t from_day, size_t ndays, int64_t *days, symd_err *err);
    /* The values of dim over the dimension counters: one group's (kind and
     * signature) or summed over every group (of kind; NULL: all), the most
     * frequent first then by value, a page after *after (NULL: the first). */
    /* A trend of f (f->query NULL; some filter of kind beyond kind and
     * signature set): see store_crash_trend_filtered. */
    symd_status (*crash_trend_filtered)(store_db *db, const store_crash_filter *f,
                                        int64_t from_day, size_t ndays, int64_t *days,
                                        symd_err *err);
    symd_status (*dim_values)(store_db *db, const char *kind, const char *signature,
                              store_dim dim, const store_dim_after *after, size_t limit,
                              store_dim_count *out, size_t *n, bool *more, symd_err *err);
    /* ---- a group's workflow ---- */
    /* ch checked by the core; version_key: ch->version's (resolved_in
     * "version"), else "". */
    symd_status (*set_group_state)(store_db *db, const char *kind, const char *signature,
                                   const store_state_change *ch, const char *version_key,
                                   store_group_status *out, bool *found, symd_err *err);
    symd_status (*group_history)(store_db *db, const char *kind, const char *signature,
                                 int64_t before_id, size_t limit, store_group_change *out,
                                 size_t *n, bool *more, symd_err *err);
    symd_status (*end_ignores)(store_db *db, int64_t now_ms, size_t *ended, symd_err *err);
    symd_status (*missing_images)(store_db *db, store_missing_which which, size_t limit,
                                  store_missing *out, size_t *n, symd_err *err);
    symd_status (*missing_system)(store_db *db, size_t limit, store_missing_os *out, size_t *n,
                                  symd_err *err);

    /* ---- copying (symd migrate) ---- */
    /* Calls fn for every row of table t (store_tables), in one snapshot. */
    symd_status (*export_rows)(store_db *db, int t, store_row_fn fn, void *ctx, symd_err *err);
    /* Starts an import: refuses (SYMD_E_INVALID) a database that holds any
     * row; then import_row adds rows (ids and times as given) and
     * import_end commits them all (commit true; sequences moved past the
     * ids given) or none. NULL when the backend cannot be a target. */
    symd_status (*import_begin)(store_db *db, symd_err *err);
    symd_status (*import_row)(store_db *db, int t, const store_value *cols, symd_err *err);
    symd_status (*import_end)(store_db *db, bool commit, symd_err *err);

    /* ---- crashes to file again ---- */
    symd_status (*regroup_next)(store_db *db, int64_t *ids, size_t max, size_t *n,
                                symd_err *err);
    symd_status (*regroup_done)(store_db *db, const int64_t *ids, size_t n, symd_err *err);
    /* Queues the crashes of every group whose signature lies in [lo, hi). */
    symd_status (*regroup_queue)(store_db *db, const char *lo, const char *hi, size_t *queued,
                                 symd_err *err);
    symd_status (*image_ref_names)(store_db *db, const uint8_t uuid[16], char (*names)[256],
                                   size_t max, size_t *n, symd_err *err);

    /* ---- webhook events (store.h) ---- */
    /* What crash posts record from now on (h is the core's, kept until
     * close or the next call; NULL: nothing). Called before serving. */
    void (*set_hooks)(store_db *db, const store_hooks *h);
    symd_status (*hook_emit)(store_db *db, const char *type, const char *data,
                             int64_t *event_id, symd_err *err);
    symd_status (*hook_claim)(store_db *db, const char *url, int64_t now, int64_t lease_until,
                              int64_t owner, store_delivery *out, bool *found, symd_err *err);
    symd_status (*hook_finish)(store_db *db, int64_t id, int64_t owner, int state,
                               int64_t next_at, int status, const char *error, bool *kept,
                               symd_err *err);
    symd_status (*hook_list)(store_db *db, int64_t before_id, size_t limit, store_delivery *out,
                             size_t *n, bool *more, symd_err *err);
    symd_status (*hook_prune)(store_db *db, int64_t before_hour, int64_t done_before,
                              symd_err *err);
} store_backend;

/* The backends, in the order store_open asks them whether they claim a
 * --db value; the last (SQLite) claims any path. */
extern const store_backend store_backend_postgres;
extern const store_backend store_backend_sqlite;

/* The backend that claims where (a --db value). */
const store_backend *store_backend_for(const char *where);

#endif

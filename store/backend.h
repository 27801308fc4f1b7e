/* The seam between the store's core (store.c: the API, the index cache) and
 * a database: one table of functions per backend, chosen once at
 * store_open. The core never asks which backend it has; a backend keeps its
 * SQL, its connections and its schema migrations to itself, and every
 * function is safe to call from any thread. Contracts are those of the
 * store.h function of the same name unless said here. */
#ifndef SYMD_STORE_BACKEND_H
#define SYMD_STORE_BACKEND_H

#include <string.h>

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
typedef struct {
    const char *name;
    int ncols;
    const char *cols[18];
    const char *key;
} store_table_def;
#define STORE_NTABLES 12
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
    symd_status (*chunks_missing)(store_db *db, const uint8_t (*hashes)[32], size_t n,
                                  bool *missing, symd_err *err);
    symd_status (*chunk_get)(store_db *db, const uint8_t hash[32], uint8_t **data, size_t *len,
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
                             symd_err *err);
    /* c->original (with_bytes) is the stored form; *codec and *raw_len say
     * how to read it back. */
    symd_status (*get_crash)(store_db *db, int64_t id, bool with_bytes, store_crash *c,
                             int *codec, size_t *raw_len, symd_err *err);
    symd_status (*update_crash)(store_db *db, int64_t id, const char *signature,
                                const char *kind, int bug_type, symd_err *err);
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
    symd_status (*group_spread)(store_db *db, const char *kind, const char *signature,
                                store_dim dim, size_t limit, store_dim_count *out, size_t *n,
                                symd_err *err);
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
} store_backend;

/* The backends, in the order store_open asks them whether they claim a
 * --db value; the last (SQLite) claims any path. */
extern const store_backend store_backend_postgres;
extern const store_backend store_backend_sqlite;

/* The backend that claims where (a --db value). */
const store_backend *store_backend_for(const char *where);

#endif

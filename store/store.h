/* The image and crash store: images and their index blobs, crash reports,
 * in a database reached through a backend (store/backend.h: SQLite, the
 * embedded default), and a size-bounded in-memory cache of loaded indexes
 * so a frame costs a binary search. */
#ifndef SYMD_STORE_H
#define SYMD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "../dsym/lineindex.h"
#include "../macho/symindex.h"

/* PRAGMA user_version of a database this symd writes; store_open migrates
 * older ones in place (3: crashes gained kind and bug_type). */
#define STORE_SCHEMA_VERSION 3

typedef struct store store;

/* Opens (creating and migrating as needed) the database path names: a
 * SQLite file. pool is the number of connections (one per serving thread is
 * right); cache_bytes bounds the index cache. */
symd_status store_open(const char *path, int pool, size_t cache_bytes,
                       store **out, symd_err *err);
void store_close(store *s);

/* One stored (UUID, arch) slice, as the API describes it. */
typedef struct {
    int64_t id;
    uint8_t uuid[16];
    char arch[16];
    char name[256];
    char kind[16];
    uint64_t text_vmaddr, text_size;
    uint32_t symbols, functions;
    bool debug_info;
    int64_t created_at, updated_at; /* unix milliseconds */
} store_image;

typedef enum { STORE_CREATED, STORE_EXISTS, STORE_UPDATED } store_put_result;

/* A slice ready to store: its metadata (id and times are set by the store),
 * its symbol index blob and, from DWARF, its line index blob (both
 * borrowed; lines NULL when the slice has no debug info). */
typedef struct {
    store_image meta;
    const uint8_t *symidx;
    size_t symidx_len;
    const uint8_t *lines;
    size_t lines_len;
} store_put;

/* Stores n slices in one transaction: all or none. A (UUID, arch) already
 * present merges with the new slice, which is then reported UPDATED: the
 * symbol index is replaced when the new one carries no fewer symbols and
 * more symbols or function starts (a stripped binary or a dSYM first, the
 * full binary later; never by fewer symbols, which a line index may rely
 * on), the
 * line index is added when the image had none (the dSYM after its binary);
 * a dSYM never overrides a binary's kind or name. Nothing new: EXISTS. On
 * success stored[i] holds the stored rows. */
symd_status store_put_images(store *s, store_put *puts, size_t n,
                             store_put_result *results, store_image *stored,
                             symd_err *err);

/* Deletes every slice of uuid; *deleted says how many (0 = unknown uuid). */
symd_status store_delete_image(store *s, const uint8_t uuid[16], size_t *deleted,
                               symd_err *err);

/* Slices of one UUID (at most max), ordered by arch. */
symd_status store_get_image(store *s, const uint8_t uuid[16], store_image *out,
                            size_t max, size_t *n, symd_err *err);

/* Newest first. query matches name (substring) or UUID hex prefix; arch
 * filters exactly; before_id > 0 continues a listing (cursor). *more is set
 * when another page follows. */
symd_status store_list_images(store *s, const char *query, const char *arch,
                              int64_t before_id, size_t limit, store_image *out,
                              size_t *n, bool *more, symd_err *err);

/* Row counts for tests and /metrics: image slices, their index blobs and
 * stored crash reports (crashes may be NULL). */
symd_status store_counts(store *s, int64_t *images, int64_t *blobs, int64_t *crashes,
                         symd_err *err);
/* SELECT 1 against the database. */
bool store_ping(store *s);

/* A slice with its index loaded, shared through the cache. */
typedef struct {
    store_image meta;
    symindex sym;
    bool has_lines;
    lineindex lines; /* when has_lines */
    /* private */
    uint8_t *blob, *lines_blob;
    size_t blob_len, lines_len;
    int refs;
    uint64_t generation;
    int nslices;  /* slices stored under this UUID when loaded */
    void *lru_prev, *lru_next, *hash_next;
} store_loaded;

/* Finds (uuid, arch) and returns it loaded, from the cache when possible.
 * arch may be NULL when the UUID has exactly one slice; with several, the
 * result is SYMD_E_INVALID (arch needed). SYMD_E_NOT_FOUND when unknown.
 * Release with store_release. */
symd_status store_acquire(store *s, const uint8_t uuid[16], const char *arch,
                          store_loaded **out, symd_err *err);
void store_release(store *s, store_loaded *img);

typedef struct {
    uint64_t hits, misses, bytes, entries;
} store_cache_stats;
void store_cache_stats_get(store *s, store_cache_stats *st);

int64_t store_now_ms(void);

/* ---- crash reports ---- */

/* A stored crash report: metadata, and on request its original bytes; the
 * result is the last symbolication's JSON. Strings are owned. kind is a
 * crash_kind_name ("crash" for rows stored before kinds existed); bug_type
 * is the .ips header's, 0 when the report has none (stored as NULL). */
typedef struct {
    int64_t id, created_at, result_at;
    char *format, *process, *bundle_id, *app_version, *os_version, *hardware_model,
        *incident_id, *exception_type, *signature, *kind;
    int bug_type;
    uint8_t *original;
    size_t original_len;
    char *result;
} store_crash;
void store_crash_free(store_crash *c);

/* An image a crash references (for the missing-images list). */
typedef struct {
    uint8_t uuid[16];
    const char *arch, *name; /* "" when unknown */
} store_crash_image;

/* Stores a crash (c->id and times are set by the store) and its images in
 * one transaction; *id is the new crash's. */
symd_status store_put_crash(store *s, const store_crash *c, const store_crash_image *imgs,
                            size_t nimgs, int64_t *id, symd_err *err);
/* Loads crash id (with its original bytes when with_bytes). SYMD_E_NOT_FOUND
 * when unknown. Free with store_crash_free. */
symd_status store_get_crash(store *s, int64_t id, bool with_bytes, store_crash *c,
                            symd_err *err);
/* Replaces a crash's symbolication result, signature, kind and bug_type
 * (what the report reads as now: a parser that learned more may say more). */
symd_status store_update_crash(store *s, int64_t id, const char *signature,
                               const char *kind, int bug_type, const char *result,
                               symd_err *err);
/* Newest first; query matches process, bundle id, signature, exception,
 * version or incident id (substring, any case); signature and kind, when not
 * NULL, keep the crashes of one group (both exact); before_id > 0
 * continues. */
symd_status store_list_crashes(store *s, const char *query, const char *kind,
                               const char *signature, int64_t before_id, size_t limit,
                               store_crash *out, size_t *n, bool *more, symd_err *err);

typedef struct {
    char *kind, *signature, *app_version, *process; /* owned */
    int64_t count, first_seen, last_seen, example_id;
} store_crash_group;
/* Crashes grouped by (kind, signature), most frequent first; query matches
 * signature or process (substring, any case), kind (when not NULL) keeps
 * one kind's groups. */
symd_status store_crash_groups(store *s, const char *query, const char *kind, size_t limit,
                               store_crash_group *out, size_t *n, symd_err *err);
void store_crash_group_free(store_crash_group *g);

typedef struct {
    uint8_t uuid[16];
    char arch[16], name[256]; /* as the crashes name it; "" when they do not */
    int64_t crashes, last_crash_id;
    /* The UUID is stored, but under other archs than the crashes need
     * (other_archs: those archs, comma-separated, as many whole names as
     * fit); false when never uploaded. */
    bool found_other_arch;
    char other_archs[128];
} store_missing;
/* Images stored crashes reference that were never uploaded for the arch
 * they need, the most needed first: the list CI should upload next. */
symd_status store_missing_images(store *s, size_t limit, store_missing *out, size_t *n,
                                 symd_err *err);

#endif

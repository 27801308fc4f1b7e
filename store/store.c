/* The store's core: the API of store.h over a backend (store/backend.h),
 * and the size-bounded cache of loaded indexes that makes a frame cost a
 * binary search in memory. */
#include "../util/membudget.h"
#include "../util/sha256.h"
#include "store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "appversion.h"
#include "backend.h"
#include "../breakpad/image.h"
#include "../breakpad/unwrows.h"

#define CACHE_BUCKETS 1024

/* One UUID of the directory: what store_slices answers without a query. */
typedef struct {
    uint8_t uuid[16];
    bool used;
    uint8_t n; /* slices stored under the UUID (0: never uploaded) */
    store_slice slices[STORE_DIR_SLICES];
} dir_entry;

struct store {
    const store_backend *be;
    store_db *db;

    pthread_mutex_t cache_mu; /* the index cache and the directory */
    dir_entry *dir;           /* STORE_DIR_SLOTS, direct-mapped by UUID */
    store_loaded *buckets[CACHE_BUCKETS];
    store_loaded *lru_head, *lru_tail; /* head = most recently used */
    size_t cache_bytes, cache_max;
    uint64_t generation; /* bumped by every write; stale loads are not cached */
    store_cache_stats stats;
    store_hooks *hooks; /* what crash posts record for webhooks (NULL: nothing) */
};

/* The backends store_open tries, in order; SQLite claims any path. */
static const store_backend *const backends[] = {&store_backend_postgres, &store_backend_sqlite};

const store_backend *store_backend_for(const char *where)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (backends[i]->claims(where))
            return backends[i];
    return &store_backend_sqlite;
}

bool store_is_postgres(const char *where)
{
    return where && store_backend_for(where) == &store_backend_postgres;
}

static void on_change(void *ctx, const uint8_t *uuid);

int64_t store_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

symd_status store_open(const char *path, int pool, size_t cache_bytes, store **out,
                       symd_err *err)
{
    *out = NULL;
    store *s = calloc(1, sizeof *s);
    if (!s)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    s->be = store_backend_for(path);
    pthread_mutex_init(&s->cache_mu, NULL);
    s->cache_max = cache_bytes;
    s->dir = calloc(STORE_DIR_SLOTS, sizeof *s->dir);
    if (!s->dir) {
        store_close(s);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    symd_status st = s->be->open(path, pool, on_change, s, &s->db, err);
    if (st != SYMD_OK) {
        store_close(s);
        return st;
    }
    *out = s;
    return SYMD_OK;
}

static void cache_free_entry(store_loaded *e)
{
    free(e->blob);
    free(e->lines_blob);
    free(e->unwind_blob);
    free(e);
}

void store_close(store *s)
{
    if (!s)
        return;
    if (s->db)
        s->be->close(s->db);
    for (store_loaded *e = s->lru_head, *next; e; e = next) {
        next = e->lru_next;
        cache_free_entry(e); /* callers released everything before close */
    }
    pthread_mutex_destroy(&s->cache_mu);
    free(s->dir);
    free(s->hooks);
    free(s);
}

/* ---- index cache -------------------------------------------------------- */

static unsigned bucket_of(const uint8_t uuid[16])
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 16; i++)
        h = (h ^ uuid[i]) * 16777619u;
    return h % CACHE_BUCKETS;
}

static size_t entry_bytes(const store_loaded *e)
{
    return sizeof *e + e->blob_len + e->lines_len + e->unwind_len;
}

static void lru_unlink(store *s, store_loaded *e)
{
    store_loaded *p = e->lru_prev, *n = e->lru_next;
    if (p)
        p->lru_next = n;
    else
        s->lru_head = n;
    if (n)
        n->lru_prev = p;
    else
        s->lru_tail = p;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_push_front(store *s, store_loaded *e)
{
    e->lru_prev = NULL;
    e->lru_next = s->lru_head;
    if (s->lru_head)
        ((store_loaded *)s->lru_head)->lru_prev = e;
    s->lru_head = e;
    if (!s->lru_tail)
        s->lru_tail = e;
}

/* Takes e out of the cache; frees it unless a request still holds it. */
static void cache_remove(store *s, store_loaded *e)
{
    store_loaded **pp = &s->buckets[bucket_of(e->meta.uuid)];
    while (*pp && *pp != e)
        pp = (store_loaded **)&(*pp)->hash_next;
    if (*pp)
        *pp = e->hash_next;
    lru_unlink(s, e);
    s->cache_bytes -= entry_bytes(e);
    s->stats.entries--;
    e->generation = 0; /* marks it detached */
    if (e->refs == 0)
        cache_free_entry(e);
}

/* The directory slot of uuid (its own hash: the cache's buckets are fewer). */
static dir_entry *dir_slot(store *s, const uint8_t uuid[16])
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 16; i++)
        h = (h ^ uuid[i]) * 1099511628211ull;
    return &s->dir[h % STORE_DIR_SLOTS];
}

/* Forgets what the cache and the directory hold of uuid (a write of it,
 * here or on another node); safe from any thread. */
static void cache_invalidate_uuid(store *s, const uint8_t uuid[16])
{
    pthread_mutex_lock(&s->cache_mu);
    s->generation++;
    dir_entry *d = dir_slot(s, uuid);
    if (d->used && memcmp(d->uuid, uuid, 16) == 0)
        d->used = false;
    store_loaded *e = s->buckets[bucket_of(uuid)];
    while (e) {
        store_loaded *next = e->hash_next;
        if (memcmp(e->meta.uuid, uuid, 16) == 0)
            cache_remove(s, e);
        e = next;
    }
    pthread_mutex_unlock(&s->cache_mu);
}

/* Forgets every cached index and directory entry (changes may have been
 * missed); safe from any thread. */
static void cache_invalidate_all(store *s)
{
    pthread_mutex_lock(&s->cache_mu);
    s->generation++;
    for (size_t i = 0; i < STORE_DIR_SLOTS; i++)
        s->dir[i].used = false;
    while (s->lru_head)
        cache_remove(s, s->lru_head);
    pthread_mutex_unlock(&s->cache_mu);
}

/* The backend's store_change_fn: another node wrote uuid (NULL: maybe
 * anything). */
static void on_change(void *ctx, const uint8_t *uuid)
{
    store *s = ctx;
    if (uuid)
        cache_invalidate_uuid(s, uuid);
    else
        cache_invalidate_all(s);
}

/* Under cache_mu: a cached entry for (uuid, arch), arch NULL matching a UUID
 * known to have one slice. */
static store_loaded *cache_find(store *s, const uint8_t uuid[16], const char *arch)
{
    for (store_loaded *e = s->buckets[bucket_of(uuid)]; e; e = e->hash_next)
        if (memcmp(e->meta.uuid, uuid, 16) == 0 &&
            (arch ? strcmp(e->meta.arch, arch) == 0 : e->nslices == 1))
            return e;
    return NULL;
}

/* Reads (uuid, arch) from the database into a fresh, unshared entry, its
 * blobs checked before any lookup trusts them. */
static symd_status load_entry_metered(store *s, const uint8_t uuid[16], const char *arch,
                                     store_loaded **out, symd_err *err);

/* The cache is bounded by --cache-mb, not by the request that happens to
 * miss it: its entries are never counted in a request's memory meter. */
static symd_status load_entry(store *s, const uint8_t uuid[16], const char *arch,
                              store_loaded **out, symd_err *err)
{
    mem_meter *m = mem_meter_swap(NULL);
    symd_status st = load_entry_metered(s, uuid, arch, out, err);
    mem_meter_swap(m);
    return st;
}

/* e's unwind rows from its "breakpad_cfi" blob, when it has one: sets
 * unwind_blob and has_unwind, or leaves e as it was. */
static void load_breakpad_rows(store *s, store_loaded *e)
{
    uint8_t *cfi = NULL, *rows = NULL;
    size_t cfi_len = 0, rows_len = 0;
    symd_err ierr = {0};
    bp_cfi_blob b;
    unw_arch fallback = !strcmp(e->meta.arch, "x86_64") ? UNW_ARCH_X86_64
                        : !strncmp(e->meta.arch, "arm64", 5) ? UNW_ARCH_ARM64
                                                             : UNW_ARCH_NONE;
    if (s->be->load_blob(s->db, e->meta.uuid, e->meta.arch, BP_IMAGE_CFI_BLOB, &cfi, &cfi_len,
                         &ierr) == SYMD_OK &&
        bp_cfi_open(cfi, cfi_len, &b, &ierr) == SYMD_OK &&
        bp_cfi_to_unwind(&b, fallback, &rows, &rows_len, NULL, &ierr) == SYMD_OK && rows &&
        unw_table_open(rows, rows_len, &e->unwind, &ierr) == SYMD_OK) {
        e->unwind_blob = rows;
        e->unwind_len = rows_len;
        e->has_unwind = true;
        rows = NULL;
    }
    free(rows);
    free(cfi);
}

static symd_status load_entry_metered(store *s, const uint8_t uuid[16], const char *arch,
                                     store_loaded **out, symd_err *err)
{
    store_loaded *e = calloc(1, sizeof *e);
    if (!e)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    symd_status r = s->be->load_index(s->db, uuid, arch, &e->meta, &e->nslices, &e->blob,
                                      &e->blob_len, &e->lines_blob, &e->lines_len,
                                      &e->unwind_blob, &e->unwind_len, err);
    symd_err ierr = {0};
    if (r == SYMD_OK && !e->blob)
        r = symd_fail(err, SYMD_E_DB, "image %s has no symbol index", e->meta.arch);
    if (r == SYMD_OK && symindex_open(e->blob, e->blob_len, &e->sym, &ierr) != SYMD_OK)
        r = symd_fail(err, SYMD_E_DB, "stored symbol index is damaged: %s", ierr.msg);
    if (r == SYMD_OK && e->lines_blob) {
        if (lineindex_open(e->lines_blob, e->lines_len, &e->lines, &ierr) != SYMD_OK)
            r = symd_fail(err, SYMD_E_DB, "stored line index is damaged: %s", ierr.msg);
        e->has_lines = r == SYMD_OK;
    }
    if (r == SYMD_OK && e->unwind_blob) {
        if (unw_table_open(e->unwind_blob, e->unwind_len, &e->unwind, &ierr) != SYMD_OK)
            r = symd_fail(err, SYMD_E_DB, "stored unwind table is damaged: %s", ierr.msg);
        e->has_unwind = r == SYMD_OK;
    }
    /* Without a binary's rows, a .sym's STACK CFI (the module's binary is
     * not at hand) unwinds it: converted here, once per load, so the walker
     * reads the cached rows as a binary's. A damaged or unconvertible blob
     * leaves the image without rows rather than unable to symbolicate. */
    if (r == SYMD_OK && !e->unwind_blob)
        load_breakpad_rows(s, e);
    /* A .sym's indexes count from the image's vmaddr, whatever it is. */
    if (r == SYMD_OK && (e->sym.flags & SYMINDEX_F_RELATIVE))
        e->sym.base += e->meta.text_vmaddr;
    if (r == SYMD_OK && e->has_lines && (e->lines.flags & LINEINDEX_F_RELATIVE))
        e->lines.base += e->meta.text_vmaddr;
    if (r != SYMD_OK) {
        cache_free_entry(e);
        return r;
    }
    *out = e;
    return SYMD_OK;
}

symd_status store_slices(store *s, const uint8_t uuid[16], store_slice *out, size_t max,
                         size_t *n, symd_err *err)
{
    pthread_mutex_lock(&s->cache_mu);
    dir_entry *d = dir_slot(s, uuid);
    if (d->used && memcmp(d->uuid, uuid, 16) == 0) {
        *n = d->n < max ? d->n : max;
        memcpy(out, d->slices, *n * sizeof *out);
        s->stats.dir_hits++;
        pthread_mutex_unlock(&s->cache_mu);
        return SYMD_OK;
    }
    s->stats.dir_misses++;
    uint64_t gen = s->generation;
    pthread_mutex_unlock(&s->cache_mu);

    store_image rows[STORE_DIR_SLICES + 1];
    size_t got = 0;
    symd_status r = s->be->get_image(s->db, uuid, rows, STORE_DIR_SLICES + 1, &got, err);
    if (r != SYMD_OK)
        return r;
    store_slice sl[STORE_DIR_SLICES + 1];
    for (size_t i = 0; i < got; i++) {
        memset(&sl[i], 0, sizeof sl[i]);
        snprintf(sl[i].arch, sizeof sl[i].arch, "%s", rows[i].arch);
        sl[i].text_vmaddr = rows[i].text_vmaddr;
        sl[i].text_size = rows[i].text_size;
        sl[i].debug_info = rows[i].debug_info;
        sl[i].system = rows[i].system;
    }
    *n = got < max ? got : max;
    memcpy(out, sl, *n * sizeof *out);
    /* Remembered unless a write happened meanwhile (it would be stale) or
     * the UUID has more slices than an entry holds. */
    pthread_mutex_lock(&s->cache_mu);
    if (gen == s->generation && got <= STORE_DIR_SLICES) {
        dir_entry *e = dir_slot(s, uuid);
        memcpy(e->uuid, uuid, 16);
        e->used = true;
        e->n = (uint8_t)got;
        memcpy(e->slices, sl, got * sizeof *sl);
    }
    pthread_mutex_unlock(&s->cache_mu);
    return SYMD_OK;
}

symd_status store_acquire(store *s, const uint8_t uuid[16], const char *arch,
                          store_loaded **out, symd_err *err)
{
    pthread_mutex_lock(&s->cache_mu);
    store_loaded *e = cache_find(s, uuid, arch);
    if (e) {
        e->refs++;
        s->stats.hits++;
        lru_unlink(s, e);
        lru_push_front(s, e);
        pthread_mutex_unlock(&s->cache_mu);
        *out = e;
        return SYMD_OK;
    }
    s->stats.misses++;
    uint64_t gen = s->generation;
    pthread_mutex_unlock(&s->cache_mu);

    /* Ask the directory first: an image never uploaded (the system
     * libraries of every real report) is answered from memory. */
    store_slice sl[STORE_DIR_SLICES];
    size_t n = 0;
    symd_status r = store_slices(s, uuid, sl, STORE_DIR_SLICES, &n, err);
    if (r != SYMD_OK)
        return r;
    bool has = n == STORE_DIR_SLICES; /* an entry that may not hold them all: ask the database */
    for (size_t i = 0; i < n && !has; i++)
        has = !arch || strcmp(sl[i].arch, arch) == 0;
    if (!has)
        return symd_fail(err, SYMD_E_NOT_FOUND, "image not uploaded");
    if (!arch && n > 1)
        return symd_fail(err, SYMD_E_INVALID, "image has %zu architectures; name one with "
                                              "\"arch\"", n);
    r = load_entry(s, uuid, arch, &e, err);
    if (r != SYMD_OK)
        return r;
    e->refs = 1;

    pthread_mutex_lock(&s->cache_mu);
    store_loaded *again = cache_find(s, uuid, e->meta.arch);
    /* Cache it unless a write happened meanwhile, another thread got there
     * first, or it alone is larger than the whole cache. */
    if (gen == s->generation && !again && entry_bytes(e) <= s->cache_max) {
        while (s->lru_tail && s->cache_bytes + entry_bytes(e) > s->cache_max)
            cache_remove(s, s->lru_tail);
        unsigned b = bucket_of(uuid);
        e->hash_next = s->buckets[b];
        s->buckets[b] = e;
        lru_push_front(s, e);
        s->cache_bytes += entry_bytes(e);
        s->stats.entries++;
        e->generation = gen + 1; /* nonzero: attached */
    }
    pthread_mutex_unlock(&s->cache_mu);
    *out = e;
    return SYMD_OK;
}

void store_release(store *s, store_loaded *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&s->cache_mu);
    if (--e->refs == 0 && e->generation == 0)
        cache_free_entry(e);
    pthread_mutex_unlock(&s->cache_mu);
}

void store_cache_stats_get(store *s, store_cache_stats *st)
{
    pthread_mutex_lock(&s->cache_mu);
    *st = s->stats;
    st->bytes = s->cache_bytes;
    pthread_mutex_unlock(&s->cache_mu);
}

/* ---- the rest of the API: the backend's, writes invalidating the cache ---- */

symd_status store_put_images(store *s, store_put *puts, size_t n, store_put_result *results,
                             store_image *stored, symd_err *err)
{
    symd_status r = s->be->put_images(s->db, puts, n, results, stored, err);
    if (r == SYMD_OK)
        for (size_t i = 0; i < n; i++)
            if (results[i] != STORE_EXISTS)
                cache_invalidate_uuid(s, puts[i].meta.uuid);
    return r;
}

symd_status store_delete_image(store *s, const uint8_t uuid[16], size_t *deleted,
                               symd_err *err)
{
    symd_status r = s->be->delete_image(s->db, uuid, deleted, err);
    cache_invalidate_uuid(s, uuid);
    return r;
}

symd_status store_get_image(store *s, const uint8_t uuid[16], store_image *out, size_t max,
                            size_t *n, symd_err *err)
{
    return s->be->get_image(s->db, uuid, out, max, n, err);
}

symd_status store_list_images(store *s, const char *query, const char *arch,
                              int64_t before_id, size_t limit, store_image *out, size_t *n,
                              bool *more, symd_err *err)
{
    return s->be->list_images(s->db, query, arch, before_id, limit, out, n, more, err);
}

symd_status store_get_blob(store *s, const uint8_t uuid[16], const char *arch, const char *kind,
                           uint8_t **data, size_t *len, symd_err *err)
{
    *data = NULL;
    *len = 0;
    return s->be->load_blob(s->db, uuid, arch, kind, data, len, err);
}

symd_status store_counts(store *s, int64_t *images, int64_t *blobs, int64_t *crashes,
                         symd_err *err)
{
    return s->be->counts(s->db, images, blobs, crashes, err);
}

symd_status store_chunk_put(store *s, const uint8_t hash[32], const uint8_t *data, size_t len,
                            uint64_t budget, store_chunk_result *res, symd_err *err)
{
    return s->be->chunk_put(s->db, hash, data, len, budget, store_now_ms(), res, err);
}

symd_status store_chunk_temp(store *s, const uint8_t hash[32], uint64_t len, char *tmp,
                             size_t cap, int *fd, symd_err *err)
{
    *fd = -1;
    if (!s->be->chunk_temp || !s->be->chunk_put_temp)
        return symd_fail(err, SYMD_E_UNSUPPORTED, "chunks are not files in this backend");
    return s->be->chunk_temp(s->db, hash, len, tmp, cap, fd, err);
}

symd_status store_chunk_put_temp(store *s, const uint8_t hash[32], const char *tmp,
                                 uint64_t len, uint64_t budget, store_chunk_result *res,
                                 symd_err *err)
{
    if (!s->be->chunk_put_temp) {
        unlink(tmp);
        return symd_fail(err, SYMD_E_UNSUPPORTED, "chunks are not files in this backend");
    }
    return s->be->chunk_put_temp(s->db, hash, tmp, len, budget, store_now_ms(), res, err);
}

void store_chunk_temp_drop(store *s, const char *tmp)
{
    (void)s;
    if (tmp && *tmp)
        unlink(tmp);
}

symd_status store_chunks_missing(store *s, const uint8_t (*hashes)[32], size_t n, bool *missing,
                                 symd_err *err)
{
    return s->be->chunks_missing(s->db, hashes, n, missing, err);
}

symd_status store_chunk_get(store *s, const uint8_t hash[32], uint8_t **data, size_t *len,
                            symd_err *err)
{
    *data = NULL;
    *len = 0;
    return s->be->chunk_get(s->db, hash, data, len, err);
}

symd_status store_chunk_open(store *s, const uint8_t hash[32], int *fd, uint64_t *len,
                             symd_err *err)
{
    *fd = -1;
    *len = 0;
    if (!s->be->chunk_open)
        return symd_fail(err, SYMD_E_UNSUPPORTED, "chunks are not files in this backend");
    return s->be->chunk_open(s->db, hash, fd, len, err);
}

symd_status store_chunks_delete(store *s, const uint8_t (*hashes)[32], size_t n, symd_err *err)
{
    return n ? s->be->chunks_delete(s->db, hashes, n, err) : SYMD_OK;
}

symd_status store_chunks_expire(store *s, int64_t before_ms, size_t *deleted, symd_err *err)
{
    *deleted = 0;
    return s->be->chunks_expire(s->db, before_ms, deleted, err);
}

symd_status store_chunk_stats(store *s, int64_t *count, int64_t *bytes, symd_err *err)
{
    return s->be->chunk_stats(s->db, count, bytes, err);
}

bool store_ping(store *s)
{
    return s->be->ping(s->db);
}

const char *store_backend_name(const store *s)
{
    return s->be->name;
}

/* ---- system symbol sets ---- */

symd_status store_symbol_set_open(store *s, const store_symbol_set *want, store_symbol_set *out,
                                  bool *created, symd_err *err)
{
    bool scratch;
    if (!want->os_name[0] || !want->os_build[0])
        return symd_fail(err, SYMD_E_INVALID, "a symbol set needs an OS name and build");
    return s->be->symbol_set_open(s->db, want, out, created ? created : &scratch, err);
}

symd_status store_symbol_set_add(store *s, int64_t set_id, store_put *puts, size_t n,
                                 store_put_result *results, const store_image_key *links,
                                 size_t nlinks, size_t *linked, symd_err *err)
{
    size_t scratch;
    symd_status r = s->be->symbol_set_add(s->db, set_id, puts, n, results, links, nlinks,
                                          linked ? linked : &scratch, err);
    /* The directory remembers UUIDs never stored: forget the new ones. */
    if (r == SYMD_OK)
        for (size_t i = 0; i < n; i++)
            if (results[i] != STORE_EXISTS)
                cache_invalidate_uuid(s, puts[i].meta.uuid);
    return r;
}

symd_status store_list_symbol_sets(store *s, store_symbol_set *out, size_t max, size_t *n,
                                   symd_err *err)
{
    return s->be->list_symbol_sets(s->db, out, max, n, err);
}

symd_status store_delete_symbol_set(store *s, int64_t id, bool *found, size_t *images_deleted,
                                    symd_err *err)
{
    uint8_t(*uuids)[16] = NULL;
    *found = false;
    *images_deleted = 0;
    symd_status r = s->be->delete_symbol_set(s->db, id, found, images_deleted, &uuids, err);
    if (r == SYMD_OK)
        for (size_t i = 0; i < *images_deleted; i++)
            cache_invalidate_uuid(s, uuids[i]);
    free(uuids);
    return r;
}

/* ---- crash reports: originals compressed here, for every backend ---- */

/* A report is stored as one zstd frame; level 1: a crash report's text
 * shrinks 4-8x at it, and storing stays cheap beside parsing. */
#define CRASH_ZSTD_LEVEL 1
/* No stored report reads back larger than this (the largest body symd takes). */
#define CRASH_MAX_RAW ((size_t)1 << 31)

/* Per-thread zstd contexts: one allocation per serving thread, not per crash. */
static pthread_key_t zkey_c, zkey_d;
static pthread_once_t zonce = PTHREAD_ONCE_INIT;
static void zfree_c(void *p) { ZSTD_freeCCtx(p); }
static void zfree_d(void *p) { ZSTD_freeDCtx(p); }
static void zkeys(void)
{
    pthread_key_create(&zkey_c, zfree_c);
    pthread_key_create(&zkey_d, zfree_d);
}

static ZSTD_CCtx *zcctx(void)
{
    pthread_once(&zonce, zkeys);
    ZSTD_CCtx *c = pthread_getspecific(zkey_c);
    if (!c && (c = ZSTD_createCCtx()))
        pthread_setspecific(zkey_c, c);
    return c;
}

static ZSTD_DCtx *zdctx(void)
{
    pthread_once(&zonce, zkeys);
    ZSTD_DCtx *d = pthread_getspecific(zkey_d);
    if (!d && (d = ZSTD_createDCtx()))
        pthread_setspecific(zkey_d, d);
    return d;
}

bool store_idem_key_valid(const char *header, size_t len)
{
    if (!len || len > STORE_IDEM_KEY_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (header[i] < 0x21 || header[i] > 0x7e)
            return false;
    return true;
}

bool store_idem_key(const char *header, const char *member, int part, bool several,
                    char out[STORE_KEY_SIZE])
{
    int n = !several ? snprintf(out, STORE_KEY_SIZE, "%s", header)
            : member ? snprintf(out, STORE_KEY_SIZE, "%s#%s#%d", header, member, part)
                     : snprintf(out, STORE_KEY_SIZE, "%s#%d", header, part);
    return n > 0 && n < STORE_KEY_SIZE;
}

#define INCIDENT_KEY_MAX 128 /* a longer incident id is no identifier: keyed by bytes */

void store_content_key(const store_crash *c, char out[STORE_KEY_SIZE])
{
    size_t il = c->incident_id ? strlen(c->incident_id) : 0;
    if (il && il <= INCIDENT_KEY_MAX) {
        snprintf(out, STORE_KEY_SIZE, "inc:%s:%d:%s", c->format ? c->format : "", c->part,
                 c->incident_id);
        return;
    }
    uint8_t d[SHA256_LEN];
    char hex[SHA256_HEX_LEN + 1];
    sha256(c->original_len ? c->original : (const uint8_t *)"", c->original_len, d);
    sha256_hex(d, hex);
    snprintf(out, STORE_KEY_SIZE, "sha256:%s:%d", hex, c->part);
}

symd_status store_put_crash(store *s, const store_crash *c, const store_crash_image *imgs,
                            size_t nimgs, int64_t *id, symd_err *err)
{
    store_group_event ev;
    return store_put_crash_ev(s, c, imgs, nimgs, id, &ev, err);
}

symd_status store_put_crash_ev(store *s, const store_crash *c, const store_crash_image *imgs,
                               size_t nimgs, int64_t *id, store_group_event *ev, symd_err *err)
{
    memset(ev, 0, sizeof *ev);
    size_t cap = ZSTD_compressBound(c->original_len);
    uint8_t *packed = malloc(cap ? cap : 1);
    store_crash_image *uniq = malloc((nimgs ? nimgs : 1) * sizeof *uniq);
    ZSTD_CCtx *z = zcctx();
    if (!packed || !uniq || !z) {
        free(packed);
        free(uniq);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    size_t n = ZSTD_compressCCtx(z, packed, cap, c->original, c->original_len, CRASH_ZSTD_LEVEL);
    if (ZSTD_isError(n)) {
        free(packed);
        free(uniq);
        return symd_fail(err, SYMD_E_NOMEM, "compressing the report: %s", ZSTD_getErrorName(n));
    }
    /* each (uuid, arch) once: a report may list an image twice */
    size_t nu = 0;
    for (size_t i = 0; i < nimgs; i++) {
        size_t j = 0;
        const char *a = imgs[i].arch ? imgs[i].arch : "";
        while (j < nu && !(memcmp(uniq[j].uuid, imgs[i].uuid, 16) == 0 &&
                           strcmp(uniq[j].arch ? uniq[j].arch : "", a) == 0))
            j++;
        if (j == nu)
            uniq[nu++] = imgs[i];
        else
            uniq[j].app |= imgs[i].app;
    }
    store_crash stored = *c;
    stored.original = packed;
    stored.original_len = n;
    symd_status r = s->be->put_crash(s->db, &stored, STORE_CODEC_ZSTD, c->original_len, uniq, nu,
                                     id, ev, err);
    free(packed);
    free(uniq);
    return r;
}

symd_status store_get_crash(store *s, int64_t id, bool with_bytes, store_crash *c,
                            symd_err *err)
{
    int codec = STORE_CODEC_RAW;
    size_t raw_len = 0;
    symd_status r = s->be->get_crash(s->db, id, with_bytes, c, &codec, &raw_len, err);
    if (r != SYMD_OK || !with_bytes || codec == STORE_CODEC_RAW)
        return r;
    ZSTD_DCtx *z = zdctx();
    unsigned long long declared = ZSTD_getFrameContentSize(c->original, c->original_len);
    uint8_t *raw = NULL;
    if (codec == STORE_CODEC_ZSTD && z && raw_len <= CRASH_MAX_RAW && declared == raw_len &&
        (raw = malloc(raw_len ? raw_len : 1))) {
        size_t got = ZSTD_decompressDCtx(z, raw, raw_len, c->original, c->original_len);
        if (!ZSTD_isError(got) && got == raw_len) {
            free(c->original);
            c->original = raw;
            c->original_len = raw_len;
            return SYMD_OK;
        }
    }
    free(raw);
    store_crash_free(c);
    return symd_fail(err, SYMD_E_DB, "crash %lld: its stored report does not read back (codec %d)",
                     (long long)id, codec);
}

symd_status store_update_crash(store *s, int64_t id, const char *signature, const char *kind,
                               int bug_type, const char *rule, symd_err *err)
{
    return s->be->update_crash(s->db, id, signature, kind, bug_type, rule, err);
}

symd_status store_grouping_rules_changed(store *s, const char *digest, bool *changed,
                                         symd_err *err)
{
    *changed = false;
    return s->be->grouping_digest(s->db, digest ? digest : "", changed, err);
}

symd_status store_regroup_next(store *s, int64_t *ids, size_t max, size_t *n, symd_err *err)
{
    return s->be->regroup_next(s->db, ids, max, n, err);
}

symd_status store_regroup_done(store *s, const int64_t *ids, size_t n, symd_err *err)
{
    return s->be->regroup_done(s->db, ids, n, err);
}

symd_status store_regroup_queue_prefix(store *s, const char *prefix, size_t *queued,
                                       symd_err *err)
{
    *queued = 0;
    size_t n = strlen(prefix);
    /* [prefix, prefix with its last byte one up): every string starting
     * with prefix, bytewise (both backends compare text so) */
    while (n > 0 && (unsigned char)prefix[n - 1] == 0xff)
        n--;
    if (n == 0)
        return symd_fail(err, SYMD_E_INVALID, "no prefix to refile groups by");
    char *hi = malloc(n + 1);
    if (!hi)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    memcpy(hi, prefix, n);
    hi[n - 1] = (char)((unsigned char)hi[n - 1] + 1);
    hi[n] = 0;
    symd_status r = s->be->regroup_queue(s->db, prefix, hi, queued, err);
    free(hi);
    return r;
}

symd_status store_crash_image_names(store *s, const uint8_t uuid[16], char (*names)[256],
                                    size_t max, size_t *n, symd_err *err)
{
    return s->be->image_ref_names(s->db, uuid, names, max, n, err);
}

symd_status store_delete_crash(store *s, int64_t id, bool *deleted, symd_err *err)
{
    return s->be->delete_crash(s->db, id, deleted, err);
}

symd_status store_prune_crashes(store *s, int64_t before_ms, int64_t max_crashes, size_t batch,
                                size_t *deleted, symd_err *err)
{
    return s->be->prune_crashes(s->db, before_ms, max_crashes, batch, deleted, err);
}

symd_status store_list_crashes(store *s, const store_crash_filter *f, int64_t before_id,
                               size_t limit, store_crash *out, size_t *n, bool *more,
                               symd_err *err)
{
    return s->be->list_crashes(s->db, f, before_id, limit, out, n, more, err);
}

symd_status store_crash_groups(store *s, const store_crash_filter *f, size_t limit,
                               store_crash_group *out, size_t *n, symd_err *err)
{
    return s->be->crash_groups(s->db, f, limit, out, n, err);
}

static const char *const state_names[STORE_STATE_COUNT] = {"unresolved", "resolved", "ignored",
                                                            "regressed"};

const char *store_state_name(store_state st)
{
    return (unsigned)st < STORE_STATE_COUNT ? state_names[st] : "unresolved";
}

bool store_state_parse(const char *name, size_t len, store_state *st)
{
    for (int i = 0; i < STORE_STATE_COUNT; i++)
        if (strlen(state_names[i]) == len && memcmp(state_names[i], name, len) == 0) {
            *st = (store_state)i;
            return true;
        }
    return false;
}

symd_status store_set_group_state(store *s, const char *kind, const char *signature,
                                  const store_state_change *ch, store_group_status *out,
                                  bool *found, symd_err *err)
{
    *found = false;
    memset(out, 0, sizeof *out);
    const char *in = ch->resolved_in ? ch->resolved_in : "";
    if (ch->state != STORE_STATE_UNRESOLVED && ch->state != STORE_STATE_RESOLVED &&
        ch->state != STORE_STATE_IGNORED)
        return symd_fail(err, SYMD_E_INVALID, "a group can be set unresolved, resolved or "
                                              "ignored (reports regress it)");
    if (ch->state == STORE_STATE_RESOLVED && *in && strcmp(in, "next") != 0 &&
        strcmp(in, "version") != 0)
        return symd_fail(err, SYMD_E_INVALID, "resolved_in is \"next\" or \"version\"");
    char key[APP_VERSION_KEY_MAX] = "";
    if (ch->state == STORE_STATE_RESOLVED && strcmp(in, "version") == 0 &&
        !app_version_resolution_key(ch->version, key))
        return symd_fail(err, SYMD_E_INVALID, "resolved in a version: which one (version)");
    if (ch->ignore_until < 0 || ch->ignore_reports < 0)
        return symd_fail(err, SYMD_E_INVALID, "ignore_until and ignore_reports are not negative");
    return s->be->set_group_state(s->db, kind, signature, ch, key, out, found, err);
}

symd_status store_group_history(store *s, const char *kind, const char *signature,
                                int64_t before_id, size_t limit, store_group_change *out,
                                size_t *n, bool *more, symd_err *err)
{
    return s->be->group_history(s->db, kind, signature, before_id, limit, out, n, more, err);
}

symd_status store_end_ignores(store *s, int64_t now_ms, size_t *ended, symd_err *err)
{
    size_t n = 0;
    symd_status r = s->be->end_ignores(s->db, now_ms, &n, err);
    if (ended)
        *ended = n;
    return r;
}

symd_status store_crash_trend(store *s, const char *kind, const char *signature,
                              int64_t from_day, size_t ndays, int64_t *days, symd_err *err)
{
    return s->be->crash_trend(s->db, kind, signature, from_day, ndays, days, err);
}

symd_status store_crash_trend_filtered(store *s, const store_crash_filter *f, int64_t from_day,
                                       size_t ndays, int64_t *days, symd_err *err)
{
    int dim;
    const char *kind = f->kind && *f->kind ? f->kind : NULL;
    const char *sig = f->signature && *f->signature ? f->signature : NULL;
    if (!store_filter_dims(f, &dim) && !(f->format && *f->format) && !f->states &&
        !(f->new_in && *f->new_in))
        return s->be->crash_trend(s->db, kind, sig, from_day, ndays, days, err);
    store_crash_filter g = *f;
    g.query = NULL;
    return s->be->crash_trend_filtered(s->db, &g, from_day, ndays, days, err);
}

symd_status store_group_spread(store *s, const char *kind, const char *signature, store_dim dim,
                               size_t limit, store_dim_count *out, size_t *n, symd_err *err)
{
    bool more;
    return s->be->dim_values(s->db, kind, signature, dim, NULL, limit, out, n, &more, err);
}

symd_status store_dim_values(store *s, const char *kind, const char *signature, store_dim dim,
                             const store_dim_after *after, size_t limit, store_dim_count *out,
                             size_t *n, bool *more, symd_err *err)
{
    return s->be->dim_values(s->db, kind, signature, dim, after, limit, out, n, more, err);
}

symd_status store_missing_images(store *s, store_missing_which which, size_t limit,
                                 store_missing *out, size_t *n, symd_err *err)
{
    return s->be->missing_images(s->db, which, limit, out, n, err);
}

/* The build an os_version names: what its last "(...)" holds, "Build "
 * aside ("iPhone OS 17.1.2 (21B101)", "iOS 14.2 (Build 18B5072f)"), else
 * the whole string (a panic's "17E199"); [*b, *b + *len). */
static void os_build(const char *os, const char **b, size_t *len)
{
    const char *o = strrchr(os, '('), *c = o ? strchr(o, ')') : NULL;
    if (!o || !c) {
        *b = os;
        *len = strlen(os);
        return;
    }
    o++;
    if (!strncmp(o, "Build ", 6))
        o += 6;
    *b = o;
    *len = c > o ? (size_t)(c - o) : 0;
}

static bool same_build(const store_missing_os *x, const store_missing_os *y)
{
    const char *a, *b;
    size_t al, bl;
    os_build(x->os_version, &a, &al);
    os_build(y->os_version, &b, &bl);
    return strcmp(x->arch, y->arch) == 0 && al == bl && al && memcmp(a, b, al) == 0;
}

static int by_images(const void *pa, const void *pb)
{
    const store_missing_os *a = pa, *b = pb;
    if (a->images != b->images)
        return a->images > b->images ? -1 : 1;
    if (a->last_crash_id != b->last_crash_id)
        return a->last_crash_id > b->last_crash_id ? -1 : 1;
    int c = strcmp(a->os_version, b->os_version);
    return c ? c : strcmp(a->arch, b->arch);
}

symd_status store_missing_system(store *s, size_t limit, store_missing_os *out, size_t *n,
                                 symd_err *err)
{
    symd_status r = s->be->missing_system(s->db, limit, out, n, err);
    if (r != SYMD_OK)
        return r;
    /* One build, however the reports word it ("iOS 15.3 (19D50)" of an
     * in-app reporter, "iPhone OS 15.3 (19D50)" of the device), is one
     * group, said as its newest crash says it. */
    size_t k = 0;
    for (size_t i = 0; i < *n; i++) {
        size_t j = 0;
        while (j < k && !same_build(&out[j], &out[i]))
            j++;
        if (j == k) {
            out[k++] = out[i];
            continue;
        }
        if (out[i].last_crash_id > out[j].last_crash_id) {
            memcpy(out[j].os_version, out[i].os_version, sizeof out[j].os_version);
            out[j].last_crash_id = out[i].last_crash_id;
        }
        out[j].images += out[i].images;
    }
    *n = k;
    qsort(out, k, sizeof *out, by_images);
    return SYMD_OK;
}

void store_crash_free(store_crash *c)
{
    free(c->format);
    free(c->process);
    free(c->bundle_id);
    free(c->app_version);
    free(c->os_version);
    free(c->hardware_model);
    free(c->incident_id);
    free(c->exception_type);
    free(c->signature);
    free(c->grouping_rule);
    free(c->kind);
    free(c->original);
    free(c->idem_key);
    free(c->content_key);
    memset(c, 0, sizeof *c);
}

void store_crash_group_free(store_crash_group *g)
{
    free(g->kind);
    free(g->signature);
    free(g->app_version);
    free(g->process);
    memset(g, 0, sizeof *g);
}


const char *store_unwind_missing(const store_loaded *img)
{
    if (img->has_unwind)
        return NULL;
    return strcmp(img->meta.kind, "dsym") == 0 ? "binary needed for unwinding"
                                               : "no unwind tables";
}

/* ---- webhook events ------------------------------------------------------- */

symd_status store_set_hooks(store *s, const store_hooks *h, symd_err *err)
{
    store_hooks *copy = NULL;
    if (h && h->nurls && !(copy = store_hooks_copy(h)))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    s->be->set_hooks(s->db, copy);
    free(s->hooks);
    s->hooks = copy;
    return SYMD_OK;
}

symd_status store_hook_emit(store *s, const char *type, const char *data, int64_t *event_id,
                            symd_err *err)
{
    int64_t id = 0;
    symd_status r = s->be->hook_emit(s->db, type, data, &id, err);
    if (event_id)
        *event_id = id;
    return r;
}

symd_status store_hook_claim(store *s, const char *url, int64_t now, int64_t lease_until,
                             int64_t owner, store_delivery *out, bool *found, symd_err *err)
{
    memset(out, 0, sizeof *out);
    *found = false;
    return s->be->hook_claim(s->db, url, now, lease_until, owner, out, found, err);
}

symd_status store_hook_finish(store *s, int64_t id, int64_t owner, int state, int64_t next_at,
                              int status, const char *error, bool *kept, symd_err *err)
{
    *kept = false;
    return s->be->hook_finish(s->db, id, owner, state, next_at, status, error ? error : "",
                              kept, err);
}

symd_status store_hook_list(store *s, int64_t before_id, size_t limit, store_delivery *out,
                            size_t *n, bool *more, symd_err *err)
{
    *n = 0;
    *more = false;
    memset(out, 0, limit * sizeof *out);
    return s->be->hook_list(s->db, before_id, limit, out, n, more, err);
}

symd_status store_hook_prune(store *s, int64_t before_hour, int64_t done_before, symd_err *err)
{
    return s->be->hook_prune(s->db, before_hour, done_before, err);
}

/* Hashing files in chunks on several threads (client/chunkhash.h). */
#include "chunkhash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/sha256.h"

/* Bytes read and hashed at a time: small enough to stay in the cache
 * between the read's copy and the hash. */
#define HASH_PIECE (512u << 10)
#define MAX_THREADS 64

typedef struct {
    char *path;
    uint64_t size;
    size_t first;  /* index of its first chunk among all files' */
    size_t nchunks;
    bool whole_done;
    uint8_t whole[SHA256_LEN];
    char why[256]; /* set once: the file could not be hashed */
} ch_file;

/* What a chunk hasher keeps between chunks: its buffer and the file it
 * has open. */
typedef struct {
    uint8_t *buf;
    size_t open_file;
    int fd, open_err;
} hasher;

struct chash {
    ch_file *files;
    size_t nfiles;
    uint64_t chunk_size;
    uint8_t (*digest)[SHA256_LEN]; /* per chunk, all files' in order */
    bool *done;                    /* per chunk: digest set, or its file failed */
    size_t total;                  /* chunks of all files */
    atomic_size_t next;            /* the next chunk a thread takes */
    atomic_bool stop;
    pthread_mutex_t mu; /* done, whole_done, why */
    pthread_cond_t cv;
    pthread_t th[MAX_THREADS];
    int nthreads;
    pthread_t whole_th;
    bool whole_started;
    size_t whole_next; /* the file the caller hashes whole when no thread could */
    hasher inl;        /* the caller's, when no chunk thread could start */
};

/* Records why file f cannot be hashed (the first reason stays), under mu. */
static void file_failed(chash *h, ch_file *f, const char *fmt, int e)
{
    pthread_mutex_lock(&h->mu);
    if (!f->why[0])
        snprintf(f->why, sizeof f->why, fmt, e ? strerror(e) : "it changed size");
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static bool file_ok(chash *h, ch_file *f)
{
    pthread_mutex_lock(&h->mu);
    bool ok = !f->why[0];
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* Reads len bytes at off of fd into ctx through buf; 0, or the errno (-1
 * when the file ended first, ECANCELED once stop is set). */
static int hash_range(int fd, uint64_t off, uint64_t len, uint8_t *buf, sha256_ctx *ctx,
                      atomic_bool *stop)
{
    while (len) {
        if (atomic_load(stop))
            return ECANCELED;
        size_t want = len < HASH_PIECE ? (size_t)len : HASH_PIECE;
        ssize_t n = pread(fd, buf, want, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno ? errno : EIO;
        if (n == 0)
            return -1;
        sha256_update(ctx, buf, (size_t)n);
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
    return 0;
}

/* The file holding chunk g (files are in order of their first chunk). */
static size_t file_of(const chash *h, size_t g)
{
    size_t lo = 0, hi = h->nfiles;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->files[mid].first <= g)
            lo = mid;
        else
            hi = mid;
    }
    /* empty files share their successor's first: skip to the one with chunks */
    while (lo + 1 < h->nfiles && h->files[lo].first + h->files[lo].nchunks <= g)
        lo++;
    return lo;
}

static void hasher_init(hasher *s)
{
    s->buf = malloc(HASH_PIECE);
    s->open_file = SIZE_MAX;
    s->fd = -1;
    s->open_err = 0;
}

static void hasher_done(hasher *s)
{
    if (s->fd >= 0)
        close(s->fd);
    free(s->buf);
    s->buf = NULL;
    s->fd = -1;
}

/* Takes the next chunk and hashes it; false when none is left (or stop). */
static bool hash_one(chash *h, hasher *s)
{
    size_t g = atomic_fetch_add(&h->next, 1);
    if (g >= h->total || atomic_load(&h->stop))
        return false;
    size_t fi = file_of(h, g);
    ch_file *f = &h->files[fi];
    size_t k = g - f->first;
    if (fi != s->open_file) {
        if (s->fd >= 0)
            close(s->fd);
        s->fd = open(f->path, O_RDONLY | O_CLOEXEC);
        s->open_err = s->fd < 0 ? errno : 0;
        s->open_file = fi;
    }
    if (!s->buf)
        file_failed(h, f, "cannot hash it: %s", ENOMEM);
    else if (s->fd < 0)
        file_failed(h, f, "cannot read it: %s", s->open_err);
    else if (file_ok(h, f)) {
        uint64_t off = (uint64_t)k * h->chunk_size, left = f->size - off;
        uint64_t len = left < h->chunk_size ? left : h->chunk_size;
        sha256_ctx *ctx = sha256_new();
        int e = ctx ? hash_range(s->fd, off, len, s->buf, ctx, &h->stop) : ENOMEM;
        if (e) {
            sha256_free(ctx);
            file_failed(h, f, "cannot read the file to hash it: %s", e > 0 ? e : 0);
        } else
            sha256_final(ctx, h->digest[g]);
    }
    pthread_mutex_lock(&h->mu);
    h->done[g] = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return true;
}

/* A chunk hasher thread: the next chunk until none is left. */
static void *chunk_thread(void *arg)
{
    chash *h = arg;
    hasher s;
    hasher_init(&s);
    while (hash_one(h, &s))
        ;
    hasher_done(&s);
    return NULL;
}

/* Hashes file f whole, in order. */
static void hash_whole(chash *h, ch_file *f)
{
    uint8_t *buf = malloc(HASH_PIECE);
    sha256_ctx *ctx = sha256_new();
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (!buf || !ctx)
        file_failed(h, f, "cannot hash it: %s", ENOMEM);
    else if (fd < 0)
        file_failed(h, f, "cannot read it: %s", errno);
    else {
        int e = hash_range(fd, 0, f->size, buf, ctx, &h->stop);
        if (e)
            file_failed(h, f, "cannot read the file to hash it: %s", e > 0 ? e : 0);
    }
    if (fd >= 0)
        close(fd);
    pthread_mutex_lock(&h->mu);
    if (!f->why[0] && ctx)
        sha256_final(ctx, f->whole);
    else
        sha256_free(ctx);
    f->whole_done = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    free(buf);
}

/* The whole-file hasher: every file in order (or until stop). */
static void *whole_thread(void *arg)
{
    chash *h = arg;
    for (size_t i = 0; i < h->nfiles && !atomic_load(&h->stop); i++)
        hash_whole(h, &h->files[i]);
    return NULL;
}

chash *chash_start(const char *const *paths, const uint64_t *sizes, size_t nfiles,
                   uint64_t chunk_size, int threads)
{
    chash *h = calloc(1, sizeof *h);
    if (!h || !chunk_size) {
        free(h);
        return NULL;
    }
    h->chunk_size = chunk_size;
    h->nfiles = nfiles;
    h->files = calloc(nfiles ? nfiles : 1, sizeof *h->files);
    bool ok = h->files != NULL;
    for (size_t i = 0; ok && i < nfiles; i++) {
        ch_file *f = &h->files[i];
        f->path = strdup(paths[i]);
        f->size = sizes[i];
        f->first = h->total;
        f->nchunks = sizes[i] ? (size_t)((sizes[i] - 1) / chunk_size + 1) : 0;
        h->total += f->nchunks;
        ok = f->path != NULL;
    }
    if (ok) {
        h->digest = malloc((h->total ? h->total : 1) * sizeof *h->digest);
        h->done = calloc(h->total ? h->total : 1, sizeof *h->done);
        ok = h->digest && h->done;
    }
    if (!ok) {
        for (size_t i = 0; h->files && i < nfiles; i++)
            free(h->files[i].path);
        free(h->files);
        free(h->digest);
        free(h->done);
        free(h);
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    atomic_init(&h->next, 0);
    atomic_init(&h->stop, false);
    h->whole_started = nfiles && pthread_create(&h->whole_th, NULL, whole_thread, h) == 0;
    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    while (h->nthreads < threads &&
           pthread_create(&h->th[h->nthreads], NULL, chunk_thread, h) == 0)
        h->nthreads++;
    if (!h->nthreads)
        hasher_init(&h->inl);
    return h;
}

size_t chash_nchunks(const chash *h, size_t file)
{
    return file < h->nfiles ? h->files[file].nchunks : 0;
}

bool chash_chunk(chash *h, size_t file, size_t k, uint8_t out[32], char *why, size_t cap)
{
    if (file >= h->nfiles || k >= h->files[file].nchunks) {
        snprintf(why, cap, "no chunk %zu of file %zu", k, file);
        return false;
    }
    ch_file *f = &h->files[file];
    size_t g = f->first + k;
    if (!h->nthreads) /* no thread started: this one hashes, up to g */
        while (!h->done[g] && hash_one(h, &h->inl))
            ;
    pthread_mutex_lock(&h->mu);
    while (!h->done[g] && !f->why[0])
        pthread_cond_wait(&h->cv, &h->mu);
    bool ok = !f->why[0];
    if (ok)
        memcpy(out, h->digest[g], SHA256_LEN);
    else
        snprintf(why, cap, "%s", f->why);
    pthread_mutex_unlock(&h->mu);
    return ok;
}

bool chash_whole(chash *h, size_t file, uint8_t out[32], char *why, size_t cap)
{
    if (file >= h->nfiles) {
        snprintf(why, cap, "no file %zu", file);
        return false;
    }
    ch_file *f = &h->files[file];
    if (!h->whole_started) /* no thread: this one hashes the files in order */
        for (; h->whole_next <= file; h->whole_next++)
            hash_whole(h, &h->files[h->whole_next]);
    pthread_mutex_lock(&h->mu);
    while (!f->whole_done)
        pthread_cond_wait(&h->cv, &h->mu);
    bool ok = !f->why[0];
    if (ok)
        memcpy(out, f->whole, SHA256_LEN);
    else
        snprintf(why, cap, "%s", f->why);
    pthread_mutex_unlock(&h->mu);
    return ok;
}

void chash_free(chash *h)
{
    if (!h)
        return;
    atomic_store(&h->stop, true);
    for (int i = 0; i < h->nthreads; i++)
        pthread_join(h->th[i], NULL);
    if (h->whole_started)
        pthread_join(h->whole_th, NULL);
    if (!h->nthreads)
        hasher_done(&h->inl);
    for (size_t i = 0; i < h->nfiles; i++)
        free(h->files[i].path);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h->files);
    free(h->digest);
    free(h->done);
    free(h);
}

/* symd upload --url (client/upload.h): walk and recognise, ask the server
 * which images it lacks, hash what must go into chunks, ask which chunks it
 * lacks, send those from a small pool of connections (retries with backoff
 * on network errors, 5xx, 429 and 507), assemble each file, and sum up. */
#include "upload.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../util/hex.h"
#include "../util/util.h"
#include "../util/sha256.h"
#include "chunkhash.h"
#include "http1.h"
#include "walk.h"

/* The smallest chunk the client cuts to get past a proxy's body limit. */
#define MIN_CHUNK (64u << 10)
/* Chunks named in one POST /v1/chunks/missing. */
#define MISSING_BATCH 10000
#define MAX_JOBS 32

typedef enum { FS_TODO, FS_PRESENT, FS_UPLOADED, FS_FAILED } fstate_kind;

typedef struct {
    up_file *f;
    fstate_kind state;
    char **item_state; /* the server's answer per item ("missing", …), static strings */
    uint8_t (*chunks)[SHA256_LEN];
    size_t nchunks;
    uint8_t sha[SHA256_LEN];
    json_t *images; /* the assembly's (or POST's) answer's images */
    char msg[768];
} fstate;

typedef struct {
    size_t file, chunk;
} task;

typedef struct {
    const up_opts *o;
    hc_url url;
    uint64_t chunk_size, server_chunk_size;
    int jobs;
    fstate *fs;
    size_t nfs;
    /* the queue of chunks to send: appended by the hashing thread, taken by
     * the workers, under qmu */
    task *tasks;
    size_t ntasks, tasks_cap, next_task;
    bool queue_closed;
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    atomic_int workers_left;
    atomic_ullong chunks_sent, bytes_sent, bytes_done, wire;
    atomic_uint retries;
    uint64_t bytes_todo; /* of the files to send, held chunks counted done at once */
    pthread_mutex_t mu; /* fs[].state and msg from workers */
    char note[512];     /* the chunk size lowered for a proxy */
    bool progress_bar, progress_lines;
    /* seconds each step took (--json "phases"): walk, ask (options and
     * check), send (plain POSTs, or chunks hashed and sent), assemble, wait */
    double phase[5];
} up_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void fail_file(up_ctx *u, fstate *f, const char *fmt, ...)
{
    pthread_mutex_lock(&u->mu);
    if (f->state != FS_FAILED) {
        f->state = FS_FAILED;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->msg, sizeof f->msg, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&u->mu);
}

/* Whether f has failed (workers and the hashing thread fail files). */
static bool has_failed(up_ctx *u, const fstate *f)
{
    pthread_mutex_lock(&u->mu);
    bool failed = f->state == FS_FAILED;
    pthread_mutex_unlock(&u->mu);
    return failed;
}

/* The error message of a symd answer, or a proxy's page summed up. */
static void answer_text(const hc_resp *r, char *out, size_t cap)
{
    json_t *doc = r->len ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    const char *code = json_string_value(json_object_get(json_object_get(doc, "error"), "code"));
    const char *msg =
        json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
    if (code)
        snprintf(out, cap, "HTTP %d %s: %s", r->status, code, msg ? msg : "");
    else
        snprintf(out, cap, "HTTP %d (not symd's answer: a proxy's?)", r->status);
    json_decref(doc);
}

static bool retryable(int status)
{
    return status == 408 || status == 429 || status == 507 || (status >= 500 && status != 501);
}

/* A request's body: len bytes of data, or (data NULL) of file fd from off. */
typedef struct {
    const void *data;
    int fd;
    uint64_t off;
    size_t len;
} req_body;

/* One request with retries: network errors and retryable statuses are
 * tried again after a backoff (0.25 s doubling to 8 s, or Retry-After up
 * to 60 s). True with the last answer in r (any status), false with why
 * when no answer came after every try. */
static bool call(up_ctx *u, hc_conn *c, const char *method, const char *path, const char *ctype,
                 const req_body *b, hc_resp *r, char *why, size_t cap)
{
    double backoff = 0.25;
    int tries = u->o->retries >= 0 ? u->o->retries : 6;
    for (int i = 0;; i++) {
        uint64_t before = c->wire_sent;
        bool ok = b->data || !b->len
                      ? hc_request(c, method, path, ctype, b->data, b->len, r, why, cap)
                      : hc_request_file(c, method, path, ctype, b->fd, b->off, b->len, r, why,
                                        cap);
        atomic_fetch_add(&u->wire, c->wire_sent - before);
        if (ok && !retryable(r->status))
            return true;
        if (i >= tries)
            return ok;
        double wait = backoff;
        if (ok && r->retry_after)
            wait = r->retry_after > 60 ? 60 : r->retry_after;
        if (ok)
            hc_resp_free(r);
        atomic_fetch_add(&u->retries, 1);
        sleep_s(wait);
        backoff = backoff * 2 > 8 ? 8 : backoff * 2;
    }
}

/* A JSON request: the answer's document in *doc (NULL when not JSON). */
static bool call_json(up_ctx *u, hc_conn *c, const char *method, const char *path, json_t *req,
                      hc_resp *r, json_t **doc, char *why, size_t cap)
{
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    req_body b = {body, -1, 0, body ? strlen(body) : 0};
    bool ok = call(u, c, method, path, body ? "application/json" : NULL, &b, r, why, cap);
    free(body);
    *doc = ok && r->len ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    return ok;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void url_encode(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s && n + 4 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            strchr("-._~", ch))
            out[n++] = (char)ch;
        else
            n += (size_t)snprintf(out + n, cap - n, "%%%02X", ch);
    }
    out[n] = 0;
}

static void fmt_bytes(uint64_t b, char *out, size_t cap)
{
    if (b >= (1ull << 30))
        snprintf(out, cap, "%.2f GiB", b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(out, cap, "%.1f MiB", b / (double)(1ull << 20));
    else if (b >= 1024)
        snprintf(out, cap, "%.1f KiB", b / 1024.0);
    else
        snprintf(out, cap, "%llu B", (unsigned long long)b);
}

/* ---- asking the server ---------------------------------------------------------- */

/* POST /v1/images/check for every item of every file still to do; files
 * whose items are all present become FS_PRESENT. Returns false (with why)
 * when the server cannot be asked; *absent: the server has no such route. */
static bool check_files(up_ctx *u, hc_conn *c, bool *absent, char *why, size_t cap)
{
    *absent = false;
    size_t total = 0;
    for (size_t i = 0; i < u->nfs; i++)
        if (u->fs[i].state == FS_TODO || u->fs[i].state == FS_UPLOADED)
            total += u->fs[i].f->nitems;
    size_t fi = 0, ii = 0;
    while (total) {
        json_t *items = json_array();
        struct {
            size_t f, i;
        } *map = malloc(10000 * sizeof *map);
        size_t n = 0;
        if (!items || !map) {
            json_decref(items);
            free(map);
            snprintf(why, cap, "out of memory");
            return false;
        }
        for (; fi < u->nfs && n < 10000; fi++, ii = 0) {
            fstate *f = &u->fs[fi];
            if (f->state != FS_TODO && f->state != FS_UPLOADED)
                continue;
            for (; ii < f->f->nitems && n < 10000; ii++) {
                const up_item *it = &f->f->items[ii];
                char us[37];
                uuid_format(it->uuid, us);
                json_t *o = json_pack("{s:s, s:b}", "uuid", us, "debug_info", it->debug_info);
                if (it->arch[0])
                    json_object_set_new(o, "arch", json_string(it->arch));
                json_array_append_new(items, o);
                map[n].f = fi;
                map[n++].i = ii;
            }
            if (ii < f->f->nitems)
                break; /* this file goes on in the next request */
        }
        if (n == 0) { /* nothing left to ask (cannot happen: total counts them) */
            json_decref(items);
            free(map);
            break;
        }
        json_t *req = json_pack("{s:o}", "items", items), *doc;
        hc_resp r;
        bool ok = call_json(u, c, "POST", "/v1/images/check", req, &r, &doc, why, cap);
        json_decref(req);
        if (!ok) {
            free(map);
            return false;
        }
        json_t *out = json_object_get(doc, "items");
        if (r.status == 404 && !out) {
            *absent = true;
            hc_resp_free(&r);
            json_decref(doc);
            free(map);
            return false;
        }
        if (r.status != 200 || json_array_size(out) != n) {
            answer_text(&r, why, cap);
            hc_resp_free(&r);
            json_decref(doc);
            free(map);
            return false;
        }
        for (size_t k = 0; k < n; k++) {
            const char *st = json_string_value(json_object_get(json_array_get(out, k), "state"));
            fstate *f = &u->fs[map[k].f];
            f->item_state[map[k].i] = !st                          ? "unknown"
                                      : strcmp(st, "present") == 0 ? "present"
                                      : strcmp(st, "missing") == 0 ? "missing"
                                                                   : "no_debug_info";
        }
        hc_resp_free(&r);
        json_decref(doc);
        free(map);
        total -= n;
    }
    for (size_t i = 0; i < u->nfs; i++) {
        fstate *f = &u->fs[i];
        if (f->state != FS_TODO)
            continue;
        bool all = true;
        for (size_t k = 0; k < f->f->nitems; k++)
            all &= f->item_state[k] && strcmp(f->item_state[k], "present") == 0;
        if (all)
            f->state = FS_PRESENT;
    }
    return true;
}

/* GET /v1/upload-options. false when the server has none (404: an older
 * symd, which takes plain uploads only) or cannot be reached (why). */
static bool get_options(up_ctx *u, hc_conn *c, bool *absent, char *why, size_t cap)
{
    hc_resp r;
    json_t *doc;
    *absent = false;
    if (!call_json(u, c, "GET", "/v1/upload-options", NULL, &r, &doc, why, cap))
        return false;
    json_t *cs = json_object_get(doc, "chunk_size");
    bool ok = r.status == 200 && json_is_integer(cs) && json_integer_value(cs) > 0;
    if (!ok) {
        if (r.status == 404)
            *absent = true;
        else
            answer_text(&r, why, cap);
    } else {
        u->server_chunk_size = (uint64_t)json_integer_value(cs);
        json_t *cmax = json_object_get(doc, "max_chunk_request");
        if (json_is_integer(cmax) && json_integer_value(cmax) > 0 &&
            (uint64_t)json_integer_value(cmax) < u->server_chunk_size)
            u->server_chunk_size = (uint64_t)json_integer_value(cmax);
        json_t *conc = json_object_get(doc, "concurrency");
        if (!u->jobs)
            u->jobs = json_is_integer(conc) && json_integer_value(conc) > 0
                          ? (int)json_integer_value(conc)
                          : 4;
    }
    hc_resp_free(&r);
    json_decref(doc);
    return ok;
}

/* ---- chunks ---------------------------------------------------------------------- */

/* Reads len bytes at off of path into buf. */
static bool read_at(const char *path, uint64_t off, uint8_t *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return got == len;
}

static size_t chunk_len(const up_ctx *u, const fstate *f, size_t k)
{
    uint64_t off = (uint64_t)k * u->chunk_size;
    uint64_t left = f->f->size - off;
    return (size_t)(left < u->chunk_size ? left : u->chunk_size);
}

/* Sends one chunk (POST /v1/chunks/<hex>): len bytes of file fd from off.
 * *status: the answer's, 0 when none came. */
static bool send_chunk(up_ctx *u, hc_conn *c, const uint8_t sha[SHA256_LEN], int fd, uint64_t off,
                       size_t len, int *status, char *why, size_t cap)
{
    char hex[SHA256_HEX_LEN + 1], path[128];
    sha256_hex(sha, hex);
    snprintf(path, sizeof path, "/v1/chunks/%s", hex);
    hc_resp r;
    *status = 0;
    req_body b = {NULL, fd, off, len};
    if (!call(u, c, "POST", path, "application/octet-stream", &b, &r, why, cap))
        return false;
    *status = r.status;
    bool ok = r.status == 200 || r.status == 201;
    if (ok) {
        atomic_fetch_add(&u->chunks_sent, 1);
        atomic_fetch_add(&u->bytes_sent, len);
    } else
        answer_text(&r, why, cap);
    hc_resp_free(&r);
    return ok;
}

/* Room for one more task in u->tasks (under qmu). */
static bool array_grow_tasks(up_ctx *u)
{
    return array_grow((void **)&u->tasks, &u->tasks_cap, u->ntasks + 1, sizeof *u->tasks);
}

/* Which of hashes[0..n) the server lacks: missing[i] set. */
static bool chunks_missing(up_ctx *u, hc_conn *c, uint8_t (*hashes)[SHA256_LEN], size_t n,
                           bool *missing, char *why, size_t cap)
{
    for (size_t at = 0; at < n; at += MISSING_BATCH) {
        size_t k = n - at < MISSING_BATCH ? n - at : MISSING_BATCH;
        json_t *arr = json_array();
        for (size_t i = 0; i < k; i++) {
            char hex[SHA256_HEX_LEN + 1];
            sha256_hex(hashes[at + i], hex);
            json_array_append_new(arr, json_string(hex));
        }
        json_t *req = json_pack("{s:o}", "chunks", arr), *doc;
        hc_resp r;
        bool ok = call_json(u, c, "POST", "/v1/chunks/missing", req, &r, &doc, why, cap);
        json_decref(req);
        if (!ok)
            return false;
        json_t *m = json_object_get(doc, "missing");
        if (r.status != 200 || !json_is_array(m)) {
            answer_text(&r, why, cap);
            hc_resp_free(&r);
            json_decref(doc);
            return false;
        }
        /* the answer names the missing ones in request order: walk both */
        size_t j = 0, nm = json_array_size(m);
        for (size_t i = 0; i < k; i++) {
            char hex[SHA256_HEX_LEN + 1];
            sha256_hex(hashes[at + i], hex);
            const char *h = json_string_value(json_array_get(m, j));
            missing[at + i] = j < nm && h && strcasecmp(h, hex) == 0;
            if (missing[at + i])
                j++;
        }
        hc_resp_free(&r);
        json_decref(doc);
    }
    return true;
}

/* The chunk size that gets past the proxy in front of symd: the first
 * chunk of the largest file is asked about and, when the server lacks it,
 * sent; each 413 halves the size (a proxy's body limit below symd's
 * chunk_size), down to MIN_CHUNK. */
static void settle_chunk_size(up_ctx *u, hc_conn *c, uint8_t *buf)
{
    fstate *big = NULL;
    for (size_t i = 0; i < u->nfs; i++)
        if (u->fs[i].state == FS_TODO && (!big || u->fs[i].f->size > big->f->size))
            big = &u->fs[i];
    if (!big)
        return;
    uint64_t first = u->chunk_size;
    for (;;) {
        size_t len = (size_t)(big->f->size < u->chunk_size ? big->f->size : u->chunk_size);
        uint8_t h[1][SHA256_LEN];
        bool miss = true;
        char why[512];
        int status = 0;
        if (!read_at(big->f->path, 0, buf, len))
            return; /* hashing it later says why */
        sha256(buf, len, h[0]);
        if (!chunks_missing(u, c, h, 1, &miss, why, sizeof why) || !miss)
            return;
        int fd = open(big->f->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return;
        bool sent = send_chunk(u, c, h[0], fd, 0, len, &status, why, sizeof why);
        close(fd);
        if (sent || status != 413 || u->chunk_size / 2 < MIN_CHUNK)
            break;
        u->chunk_size /= 2;
    }
    if (u->chunk_size != first) {
        char a[32], b[32];
        fmt_bytes(first, a, sizeof a);
        fmt_bytes(u->chunk_size, b, sizeof b);
        snprintf(u->note, sizeof u->note,
                 "a proxy in front of symd refused chunks of %s (413): sent chunks of %s "
                 "instead. Raise its body limit above %s (nginx: client_max_body_size) to "
                 "send fewer, larger chunks.",
                 a, b, a);
    }
}

/* The next chunk to send, waiting while the hashing thread may add more;
 * false when the queue is closed and empty. */
static bool take_task(up_ctx *u, task *t)
{
    pthread_mutex_lock(&u->qmu);
    while (u->next_task == u->ntasks && !u->queue_closed)
        pthread_cond_wait(&u->qcv, &u->qmu);
    bool ok = u->next_task < u->ntasks;
    if (ok)
        *t = u->tasks[u->next_task++];
    pthread_mutex_unlock(&u->qmu);
    return ok;
}

/* A worker of the pool: sends queued chunks on its own kept-alive
 * connection until the queue is closed and empty, each read from the file
 * as it goes (hc_request_file). */
static void *chunk_worker(void *arg)
{
    up_ctx *u = arg;
    hc_conn c;
    hc_init(&c, &u->url, u->o->token, u->o->timeout_s);
    size_t open_file = SIZE_MAX;
    int fd = -1, open_err = 0;
    task t;
    while (take_task(u, &t)) {
        fstate *f = &u->fs[t.file];
        size_t len = chunk_len(u, f, t.chunk);
        char why[512];
        int status;
        if (has_failed(u, f)) {
            atomic_fetch_add(&u->bytes_done, len);
            continue;
        }
        if (t.file != open_file) {
            if (fd >= 0)
                close(fd);
            fd = open(f->f->path, O_RDONLY | O_CLOEXEC);
            open_err = errno;
            open_file = t.file;
        }
        if (fd < 0)
            fail_file(u, f, "cannot read chunk %zu: %s", t.chunk, strerror(open_err));
        else if (!send_chunk(u, &c, f->chunks[t.chunk], fd, (uint64_t)t.chunk * u->chunk_size,
                             len, &status, why, sizeof why))
            fail_file(u, f, "chunk %zu: %s%s", t.chunk, why,
                      status == 413 ? " (a proxy's body limit below the chunk size: pass "
                                      "--chunk-size below it, or raise the limit)"
                                    : "");
        atomic_fetch_add(&u->bytes_done, len);
    }
    if (fd >= 0)
        close(fd);
    hc_close(&c);
    atomic_fetch_sub(&u->workers_left, 1);
    return NULL;
}

/* Prints one progress update (a bar redrawn, or a line every 5 s). */
static void show_progress(up_ctx *u, double t0, double *last_line)
{
    uint64_t done = atomic_load(&u->bytes_done), total = u->bytes_todo;
    double el = now_s() - t0, rate = el > 0 ? done / el : 0;
    char a[32], b[32], r[32];
    fmt_bytes(done, a, sizeof a);
    fmt_bytes(total, b, sizeof b);
    fmt_bytes((uint64_t)rate, r, sizeof r);
    int pct = total ? (int)(done * 100 / total) : 100;
    if (u->progress_bar) {
        char bar[31];
        int fill = pct * 30 / 100;
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = 0;
        fprintf(stderr, "\r[%s] %3d%% %s of %s  %s/s  ", bar, pct, a, b, r);
    } else if (u->progress_lines && now_s() - *last_line >= 5) {
        fprintf(stderr, "symd upload: %d%% %s of %s (%s/s), %llu chunks sent\n", pct, a, b, r,
                (unsigned long long)atomic_load(&u->chunks_sent));
        *last_line = now_s();
    }
}

/* A set of chunk hashes (open addressing on their first 8 bytes): a chunk
 * met twice in a run (in one file or two) is sent once. */
typedef struct {
    uint8_t (*h)[SHA256_LEN];
    bool *used;
    size_t cap, n;
} hash_set;

/* Adds h; true when it was not there yet (or the set cannot grow). */
static bool set_add(hash_set *s, const uint8_t h[SHA256_LEN])
{
    if (2 * (s->n + 1) > s->cap) {
        hash_set g = {0};
        g.cap = s->cap ? 2 * s->cap : 1024;
        g.h = malloc(g.cap * sizeof *g.h);
        g.used = calloc(g.cap, sizeof *g.used);
        if (!g.h || !g.used) {
            free(g.h);
            free(g.used);
            return true;
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->used[i])
                set_add(&g, s->h[i]);
        free(s->h);
        free(s->used);
        *s = g;
    }
    uint64_t k;
    memcpy(&k, h, sizeof k);
    for (size_t i = (size_t)(k % s->cap);; i = (i + 1) % s->cap) {
        if (!s->used[i]) {
            s->used[i] = true;
            memcpy(s->h[i], h, SHA256_LEN);
            s->n++;
            return true;
        }
        if (memcmp(s->h[i], h, SHA256_LEN) == 0)
            return false;
    }
}

/* Bytes hashed between two POST /v1/chunks/missing (at least 4 chunks):
 * the workers start on the first batch while the rest is being hashed. */
#define PIPE_BATCH_BYTES (32u << 20)

/* Queues the batch's chunks the server lacks (and this run has not queued
 * yet); counts the others as done. False with why when the server cannot
 * say which it lacks. */
static bool queue_batch(up_ctx *u, hc_conn *c, const task *batch, size_t n, hash_set *seen,
                        char *why, size_t cap)
{
    uint8_t(*h)[SHA256_LEN] = malloc((n ? n : 1) * sizeof *h);
    bool *miss = calloc(n ? n : 1, sizeof *miss);
    bool ok = h && miss;
    for (size_t i = 0; ok && i < n; i++)
        memcpy(h[i], u->fs[batch[i].file].chunks[batch[i].chunk], SHA256_LEN);
    if (ok)
        ok = chunks_missing(u, c, h, n, miss, why, cap);
    else
        snprintf(why, cap, "out of memory");
    for (size_t i = 0; ok && i < n; i++) {
        size_t len = chunk_len(u, &u->fs[batch[i].file], batch[i].chunk);
        if (!miss[i] || !set_add(seen, h[i])) {
            atomic_fetch_add(&u->bytes_done, len);
            continue;
        }
        pthread_mutex_lock(&u->qmu);
        if (array_grow_tasks(u))
            u->tasks[u->ntasks++] = batch[i];
        pthread_cond_signal(&u->qcv);
        pthread_mutex_unlock(&u->qmu);
    }
    free(h);
    free(miss);
    return ok;
}

/* Threads hashing chunks: one per core (the whole-file hash takes one
 * more), at most 8. */
static int hash_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

/* Hashes every file to send (its chunks on several threads, each file
 * whole on one more: chunkhash.c), asking after each batch of chunks
 * (PIPE_BATCH_BYTES, in file order) which the server lacks and queueing
 * those for the workers, which send them while the later ones are hashed. */
static void send_chunks(up_ctx *u, hc_conn *c)
{
    u->bytes_todo = 0;
    size_t nt = 0;
    for (size_t i = 0; i < u->nfs; i++)
        if (u->fs[i].state == FS_TODO) {
            u->bytes_todo += u->fs[i].f->size;
            nt++;
        }
    if (!u->bytes_todo)
        return;
    int jobs = u->jobs < 1 ? 1 : u->jobs > MAX_JOBS ? MAX_JOBS : u->jobs;
    pthread_t th[MAX_JOBS];
    u->ntasks = u->next_task = 0;
    u->queue_closed = false;
    atomic_store(&u->workers_left, jobs);
    int started = 0;
    for (; started < jobs; started++)
        if (pthread_create(&th[started], NULL, chunk_worker, u) != 0)
            break;
    atomic_fetch_sub(&u->workers_left, jobs - started);
    double t0 = now_s(), last_line = t0;
    hash_set seen = {0};
    size_t pipe_batch = PIPE_BATCH_BYTES / u->chunk_size;
    if (pipe_batch < 4)
        pipe_batch = 4;
    task *batch = malloc(pipe_batch * sizeof *batch);
    /* the files to hash, in order: fs index, path and size */
    size_t *idx = malloc(nt * sizeof *idx);
    const char **paths = malloc(nt * sizeof *paths);
    uint64_t *sizes = malloc(nt * sizeof *sizes);
    for (size_t i = 0, t = 0; idx && paths && sizes && i < u->nfs; i++)
        if (u->fs[i].state == FS_TODO) {
            idx[t] = i;
            paths[t] = u->fs[i].f->path;
            sizes[t++] = u->fs[i].f->size;
        }
    chash *h = idx && paths && sizes && batch
                   ? chash_start(paths, sizes, nt, u->chunk_size, hash_threads())
                   : NULL;
    char why[512];
    if (!h)
        for (size_t i = 0; i < u->nfs; i++)
            if (u->fs[i].state == FS_TODO)
                fail_file(u, &u->fs[i], "cannot hash it: no memory");
    for (size_t t = 0; h && t < nt; t++) {
        size_t i = idx[t];
        fstate *f = &u->fs[i];
        f->nchunks = chash_nchunks(h, t);
        f->chunks = malloc((f->nchunks ? f->nchunks : 1) * sizeof *f->chunks);
        if (!f->chunks) {
            fail_file(u, f, "cannot hash it: no memory");
            continue;
        }
        size_t nb = 0;
        for (size_t k = 0; k < f->nchunks; k++) {
            if (!chash_chunk(h, t, k, f->chunks[k], why, sizeof why)) {
                fail_file(u, f, "%s", why);
                break;
            }
            batch[nb++] = (task){i, k};
            if (nb == pipe_batch || k + 1 == f->nchunks) {
                if (!queue_batch(u, c, batch, nb, &seen, why, sizeof why)) {
                    fail_file(u, f, "asking which chunks the server lacks: %s", why);
                    break;
                }
                nb = 0;
                show_progress(u, t0, &last_line);
            }
        }
    }
    pthread_mutex_lock(&u->qmu);
    u->queue_closed = true;
    pthread_cond_broadcast(&u->qcv);
    pthread_mutex_unlock(&u->qmu);
    /* the whole files' hashes, for the assembly (hashed beside the chunks) */
    for (size_t t = 0; h && t < nt; t++) {
        fstate *f = &u->fs[idx[t]];
        if (!has_failed(u, f) && !chash_whole(h, t, f->sha, why, sizeof why))
            fail_file(u, f, "%s", why);
    }
    chash_free(h);
    free(idx);
    free(paths);
    free(sizes);
    free(batch);
    free(seen.h);
    free(seen.used);
    if (!started) /* no thread could start: this one sends */
        chunk_worker(u);
    while (atomic_load(&u->workers_left) > 0) {
        sleep_s(u->progress_bar ? 0.2 : 0.25);
        show_progress(u, t0, &last_line);
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (u->progress_bar)
        fprintf(stderr, "\r%*s\r", 72, "");
}

/* ---- assembling ------------------------------------------------------------------- */

/* Reads a 200/201 answer of POST /v1/images (or an assembly) into f. */
static void take_answer(up_ctx *u, fstate *f, hc_resp *r)
{
    json_t *doc = json_loadb(r->body, r->len, 0, NULL);
    json_t *imgs = json_object_get(doc, "images");
    if ((r->status == 200 || r->status == 201) && json_is_array(imgs)) {
        f->state = FS_UPLOADED;
        f->images = json_incref(imgs);
    } else {
        char why[512];
        answer_text(r, why, sizeof why);
        fail_file(u, f, "%s", why);
    }
    json_decref(doc);
}

/* POST /v1/images/assemble for f, and its status URL until done; a 409
 * missing_chunks is answered by sending those and assembling again. */
static void assemble(up_ctx *u, hc_conn *c, fstate *f)
{
    char hex[SHA256_HEX_LEN + 1], why[512];
    sha256_hex(f->sha, hex);
    for (int round = 0; round < 3 && f->state == FS_TODO; round++) {
        json_t *ch = json_array();
        for (size_t k = 0; k < f->nchunks; k++) {
            char h[SHA256_HEX_LEN + 1];
            sha256_hex(f->chunks[k], h);
            json_array_append_new(ch, json_string(h));
        }
        json_t *req = json_pack("{s:s, s:I, s:s, s:o}", "name", base_name(f->f->path), "size",
                                (json_int_t)f->f->size, "sha256", hex, "chunks", ch),
               *doc;
        hc_resp r;
        bool ok = call_json(u, c, "POST", "/v1/images/assemble?wait=30", req, &r, &doc, why,
                            sizeof why);
        json_decref(req);
        if (!ok) {
            fail_file(u, f, "assembling: %s", why);
            return;
        }
        double until = now_s() + 3600, poll = 0.05;
        while (r.status == 202 && now_s() < until) {
            const char *su = json_string_value(json_object_get(doc, "status_url"));
            char path[256];
            snprintf(path, sizeof path, "%s", su ? su : "");
            if (strncmp(path, "/v1/", 4) != 0)
                snprintf(path, sizeof path, "/v1/images/assemble/%s", hex);
            hc_resp_free(&r);
            json_decref(doc);
            sleep_s(poll); /* 50 ms doubling to 1 s: a small file's answer comes soon */
            poll = poll * 2 > 1 ? 1 : poll * 2;
            if (!call_json(u, c, "GET", path, NULL, &r, &doc, why, sizeof why)) {
                fail_file(u, f, "waiting for the assembly: %s", why);
                return;
            }
        }
        if (r.status == 409) {
            json_t *m = json_object_get(doc, "missing");
            size_t nm = json_array_size(m);
            int fd = open(f->f->path, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                fail_file(u, f, "cannot read it: %s", strerror(errno));
            for (size_t i = 0; fd >= 0 && i < nm && f->state == FS_TODO; i++) {
                uint8_t want[SHA256_LEN];
                if (!sha256_parse_hex(json_string_value(json_array_get(m, i)), want))
                    continue;
                for (size_t k = 0; k < f->nchunks; k++)
                    if (memcmp(f->chunks[k], want, SHA256_LEN) == 0) {
                        int status;
                        size_t len = chunk_len(u, f, k);
                        if (!send_chunk(u, c, want, fd, (uint64_t)k * u->chunk_size, len,
                                        &status, why, sizeof why))
                            fail_file(u, f, "chunk %zu: %s", k, why);
                        break;
                    }
            }
            if (fd >= 0)
                close(fd);
        } else
            take_answer(u, f, &r);
        hc_resp_free(&r);
        json_decref(doc);
    }
    if (f->state == FS_TODO)
        fail_file(u, f, "the server kept answering that chunks were missing");
}

/* One plain POST /v1/images of the whole file. */
static void post_plain(up_ctx *u, hc_conn *c, fstate *f)
{
    int fd = open(f->f->path, O_RDONLY | O_CLOEXEC);
    void *m = fd >= 0 && f->f->size ? mmap(NULL, f->f->size, PROT_READ, MAP_PRIVATE, fd, 0)
                                     : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    if (m == MAP_FAILED) {
        fail_file(u, f, "cannot read it: %s", strerror(errno));
        return;
    }
    char name[600], path[700], why[512];
    url_encode(base_name(f->f->path), name, sizeof name);
    snprintf(path, sizeof path, "/v1/images?name=%s", name);
    hc_resp r;
    req_body b = {m, -1, 0, (size_t)f->f->size};
    if (!call(u, c, "POST", path, "application/octet-stream", &b, &r, why, sizeof why))
        fail_file(u, f, "%s", why);
    else {
        atomic_fetch_add(&u->bytes_sent, f->f->size);
        if (r.status == 413) {
            char size[32];
            fmt_bytes(f->f->size, size, sizeof size);
            answer_text(&r, why, sizeof why);
            if (r.json)
                fail_file(u, f,
                          "%s: the server takes files up to its --max-upload; start it with "
                          "a larger one",
                          why);
            else
                fail_file(u, f,
                          "%s: a proxy in front of symd refused the %s body. Upload in parts "
                          "(symd upload without --plain, against a symd with "
                          "/v1/upload-options: no request is larger than a chunk), or raise "
                          "the proxy's body limit (nginx: client_max_body_size)",
                          why, size);
        } else
            take_answer(u, f, &r);
        hc_resp_free(&r);
    }
    munmap(m, f->f->size);
}

/* ---- the summary ------------------------------------------------------------------ */

static const char *kind_name(up_kind k)
{
    return k == UP_MACHO ? "macho" : k == UP_SYM ? "breakpad" : k == UP_ZIP ? "zip" : "refused";
}

static int summary(up_ctx *u, const up_list *l, double secs)
{
    size_t present = 0, uploaded = 0, failed = 0;
    for (size_t i = 0; i < u->nfs; i++) {
        fstate_kind s = u->fs[i].state;
        present += s == FS_PRESENT;
        uploaded += s == FS_UPLOADED;
        failed += s == FS_FAILED;
    }
    unsigned long long chunks = atomic_load(&u->chunks_sent), bytes = atomic_load(&u->bytes_sent);
    if (u->o->json) {
        json_t *files = json_array();
        for (size_t i = 0; i < u->nfs; i++) {
            fstate *f = &u->fs[i];
            json_t *items = json_array();
            for (size_t k = 0; k < f->f->nitems; k++) {
                char us[37];
                uuid_format(f->f->items[k].uuid, us);
                json_array_append_new(
                    items, json_pack("{s:s, s:s?, s:b, s:s?}", "uuid", us, "arch",
                                     f->f->items[k].arch[0] ? f->f->items[k].arch : NULL,
                                     "debug_info", f->f->items[k].debug_info, "state",
                                     f->item_state[k]));
            }
            json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:o}", "path", f->f->path, "kind",
                                  kind_name(f->f->kind), "size", (json_int_t)f->f->size,
                                  "state",
                                  f->state == FS_PRESENT    ? "present"
                                  : f->state == FS_UPLOADED ? "uploaded"
                                                            : "failed",
                                  "items", items);
            if (f->state == FS_FAILED)
                json_object_set_new(o, "error", json_string(f->msg));
            if (f->images)
                json_object_set(o, "images", f->images);
            json_array_append_new(files, o);
        }
        json_t *doc = json_pack(
            "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:o}", "found",
            (json_int_t)u->nfs, "ignored", (json_int_t)l->ignored, "present",
            (json_int_t)present, "uploaded", (json_int_t)uploaded, "failed", (json_int_t)failed,
            "chunks_sent", (json_int_t)chunks, "bytes_sent", (json_int_t)bytes, "wire_bytes",
            (json_int_t)atomic_load(&u->wire), "chunk_size", (json_int_t)u->chunk_size,
            "retries", (json_int_t)atomic_load(&u->retries), "seconds", secs, "files", files);
        if (u->note[0])
            json_object_set_new(doc, "note", json_string(u->note));
        json_object_set_new(doc, "phases",
                            json_pack("{s:f, s:f, s:f, s:f, s:f}", "walk", u->phase[0], "ask",
                                      u->phase[1], "send", u->phase[2], "assemble",
                                      u->phase[3], "wait", u->phase[4]));
        char *s = json_dumps(doc, JSON_INDENT(1));
        printf("%s\n", s);
        free(s);
        json_decref(doc);
    } else {
        for (size_t i = 0; i < u->nfs; i++)
            if (u->fs[i].state == FS_UPLOADED) {
                json_t *img;
                size_t k;
                json_array_foreach(u->fs[i].images, k, img)
                {
                    printf("%s %s %s %s %s\n",
                           json_string_value(json_object_get(img, "status")) ?: "stored",
                           json_string_value(json_object_get(img, "uuid")) ?: "?",
                           json_string_value(json_object_get(img, "arch")) ?: "?",
                           json_string_value(json_object_get(img, "name")) ?: "?",
                           u->fs[i].f->path);
                }
            }
        if (u->note[0])
            fprintf(stderr, "symd upload: note: %s\n", u->note);
        for (size_t i = 0; i < u->nfs; i++)
            if (u->fs[i].state == FS_FAILED)
                fprintf(stderr, "symd upload: FAILED %s: %s\n", u->fs[i].f->path, u->fs[i].msg);
        char b[32];
        fmt_bytes(bytes, b, sizeof b);
        printf("symd upload: %zu found, %zu already there, %zu uploaded, %zu failed; %llu "
               "chunks, %s sent in %.1f s\n",
               u->nfs, present, uploaded, failed, chunks, b, secs);
    }
    return failed ? 1 : 0;
}

/* ---- the run ---------------------------------------------------------------------- */

/* --wait: checks the uploaded files' images until all answer present. */
static void wait_queryable(up_ctx *u, hc_conn *c)
{
    double until = now_s() + (u->o->wait_s > 0 ? u->o->wait_s : 600);
    char why[512];
    for (;;) {
        bool absent, all = true;
        if (!check_files(u, c, &absent, why, sizeof why)) {
            for (size_t i = 0; i < u->nfs; i++)
                if (u->fs[i].state == FS_UPLOADED)
                    fail_file(u, &u->fs[i], "--wait: %s", why);
            return;
        }
        for (size_t i = 0; i < u->nfs; i++)
            for (size_t k = 0; u->fs[i].state == FS_UPLOADED && k < u->fs[i].f->nitems; k++)
                all &= strcmp(u->fs[i].item_state[k], "present") == 0;
        if (all)
            return;
        if (now_s() > until)
            break;
        sleep_s(1);
    }
    for (size_t i = 0; i < u->nfs; i++)
        for (size_t k = 0; u->fs[i].state == FS_UPLOADED && k < u->fs[i].f->nitems; k++)
            if (strcmp(u->fs[i].item_state[k], "present") != 0)
                fail_file(u, &u->fs[i], "--wait: an image still answers %s after %d s",
                          u->fs[i].item_state[k], u->o->wait_s);
}

int up_run(const up_opts *o, const char *const *paths, size_t npaths)
{
    up_ctx *u = calloc(1, sizeof *u);
    char why[768];
    if (!u)
        return 1;
    if (!hc_parse_url(o->url, &u->url, why, sizeof why)) {
        fprintf(stderr, "symd upload: %s\n", why);
        free(u);
        return 2;
    }
    u->o = o;
    u->jobs = o->jobs;
    pthread_mutex_init(&u->mu, NULL);
    pthread_mutex_init(&u->qmu, NULL);
    pthread_cond_init(&u->qcv, NULL);
    bool tty = isatty(2);
    u->progress_bar = o->progress == 1 || (o->progress < 0 && tty);
    u->progress_lines = o->progress != 0 && !u->progress_bar;
    double t0 = now_s();

    up_list l;
    up_walk(paths, npaths, &l);
    u->nfs = l.n;
    u->fs = calloc(l.n ? l.n : 1, sizeof *u->fs);
    for (size_t i = 0; u->fs && i < l.n; i++) {
        u->fs[i].f = &l.files[i];
        u->fs[i].item_state = calloc(l.files[i].nitems + 1, sizeof(char *));
        u->fs[i].state = FS_TODO;
        if (l.files[i].kind == UP_REFUSED) {
            u->fs[i].state = FS_FAILED;
            snprintf(u->fs[i].msg, sizeof u->fs[i].msg, "%s", l.files[i].err);
        }
    }
    if (!u->fs) {
        up_list_free(&l);
        free(u);
        return 1;
    }
    if (u->progress_lines && !o->json)
        fprintf(stderr, "symd upload: %zu files found (%zu other files ignored)\n", l.n,
                l.ignored);

    double mark = now_s();
    u->phase[0] = mark - t0;
    hc_conn c;
    hc_init(&c, &u->url, o->token, o->timeout_s);
    bool absent = false, plain = o->plain;
    bool reached = true;
    if (!plain && !get_options(u, &c, &absent, why, sizeof why)) {
        if (absent)
            plain = true; /* an older symd: whole files */
        else
            reached = false;
    }
    if (reached && !check_files(u, &c, &absent, why, sizeof why) && !absent)
        reached = false;
    u->phase[1] = now_s() - mark;
    mark = now_s();
    if (!reached) {
        for (size_t i = 0; i < u->nfs; i++)
            if (u->fs[i].state == FS_TODO)
                fail_file(u, &u->fs[i], "%s", why);
    } else if (plain) {
        for (size_t i = 0; i < u->nfs; i++)
            if (u->fs[i].state == FS_TODO)
                post_plain(u, &c, &u->fs[i]);
    } else {
        u->chunk_size = o->chunk_size && o->chunk_size < u->server_chunk_size
                            ? o->chunk_size
                            : u->server_chunk_size;
        uint8_t *buf = malloc(u->chunk_size);
        if (buf)
            settle_chunk_size(u, &c, buf);
        free(buf);
        send_chunks(u, &c);
        u->phase[2] = now_s() - mark;
        mark = now_s();
        for (size_t i = 0; i < u->nfs; i++)
            if (u->fs[i].state == FS_TODO)
                assemble(u, &c, &u->fs[i]);
        u->phase[3] = now_s() - mark;
    }
    if (plain)
        u->phase[2] = now_s() - mark;
    mark = now_s();
    if (reached && o->wait)
        wait_queryable(u, &c);
    u->phase[4] = now_s() - mark;
    hc_close(&c);
    int rc = summary(u, &l, now_s() - t0);
    for (size_t i = 0; i < u->nfs; i++) {
        free(u->fs[i].chunks);
        free(u->fs[i].item_state);
        json_decref(u->fs[i].images);
    }
    free(u->fs);
    free(u->tasks);
    up_list_free(&l);
    pthread_mutex_destroy(&u->mu);
    pthread_mutex_destroy(&u->qmu);
    pthread_cond_destroy(&u->qcv);
    free(u);
    return rc;
}


/* Uploads in parts (CI's large dSYMs): which images the server lacks, the
 * upload's options, content-addressed chunks, and the assembly of a file
 * from its chunks, which is then read and stored as POST /v1/images stores
 * an upload (and answers alike), off the request when it takes long. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../macho/macho.h"
#include "../util/hex.h"
#include "../util/sha256.h"
#include "../util/util.h"
#include "http_int.h"

/* Items one POST /v1/images/check may ask about. */
#define CHECK_MAX_ITEMS 10000
/* Chunks one file may be assembled from (and one POST /v1/chunks/missing
 * may name). */
#define ASSEMBLE_MAX_CHUNKS 100000
/* Chunk uploads a client may run at once (advice: the upload options). */
#define UPLOAD_CONCURRENCY 4
/* Assemblies the server tracks at once (under way or answered); a finished
 * one's answer is kept this long for GET /v1/images/assemble/{sha256}. */
#define ASSEMBLE_JOBS 64
#define ASSEMBLE_KEEP_MS (15 * 60 * 1000)
/* Seconds POST /v1/images/assemble waits for its answer before it answers
 * 202 (?wait= changes it, up to ASSEMBLE_WAIT_MAX). */
#define ASSEMBLE_WAIT_S 5
#define ASSEMBLE_WAIT_MAX 300

/* ---- the body's JSON -------------------------------------------------------- */

/* The body as a JSON object, or NULL with a 400 (or 413) queued in *ret. */
static json_t *body_object(struct MHD_Connection *c, req_state *rs, enum MHD_Result *ret)
{
    if (rs->too_large) {
        *ret = reply_error(c, 413, "too_large", "body exceeds %llu bytes",
                           (unsigned long long)rs->limit);
        return NULL;
    }
    json_error_t je;
    json_t *doc = json_loadb((const char *)rs->body.data, rs->body.len, 0, &je);
    if (reply_if_over_budget(c, ret)) {
        json_decref(doc);
        return NULL;
    }
    if (!doc || !json_is_object(doc)) {
        *ret = reply_error(c, 400, "invalid_json", "body must be a JSON object%s%s",
                           doc ? "" : ": ", doc ? "" : je.text);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* The hashes of arr (an array of 64-hex strings, at most max), malloc'ed
 * into *out; NULL, or what is wrong with them (for a 400). */
static const char *parse_hashes(const json_t *arr, const char *what, size_t max,
                                uint8_t (**out)[32], size_t *n, char *why, size_t cap)
{
    *out = NULL;
    *n = 0;
    if (!json_is_array(arr)) {
        snprintf(why, cap, "\"%s\" must be an array of SHA-256 hex digests", what);
        return why;
    }
    size_t k = json_array_size(arr);
    if (k > max) {
        snprintf(why, cap, "\"%s\" names %zu chunks; at most %zu", what, k, max);
        return why;
    }
    *out = malloc((k ? k : 1) * sizeof **out);
    if (!*out) {
        snprintf(why, cap, "out of memory");
        return why;
    }
    for (size_t i = 0; i < k; i++) {
        const char *h = json_string_value(json_array_get(arr, i));
        if (!sha256_parse_hex(h, (*out)[i])) {
            snprintf(why, cap, "%s[%zu] is not a SHA-256 hex digest (64 hex digits)", what, i);
            free(*out);
            *out = NULL;
            return why;
        }
    }
    *n = k;
    return NULL;
}

/* ---- GET /v1/upload-options ------------------------------------------------- */

enum MHD_Result handle_upload_options(server *srv, struct MHD_Connection *c)
{
    const server_config *cfg = srv->cfg;
    return reply_json(
        c, 200,
        json_pack("{s:I, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I}", "chunk_size",
                  (json_int_t)cfg->chunk_size, "hash", "sha256", "concurrency",
                  UPLOAD_CONCURRENCY, "max_file_size", (json_int_t)cfg->max_upload,
                  "max_chunk_request", (json_int_t)cfg->chunk_size, "max_chunks",
                  (json_int_t)ASSEMBLE_MAX_CHUNKS, "max_check_items",
                  (json_int_t)CHECK_MAX_ITEMS, "chunk_ttl_seconds", (json_int_t)cfg->chunk_ttl,
                  "chunk_budget_bytes", (json_int_t)cfg->chunk_budget));
}

/* ---- POST /v1/images/check --------------------------------------------------- */

/* Each item's state, in request order: "missing" when no slice of the UUID
 * (of the arch, when named) is stored, "no_debug_info" when the client has
 * debug info for it and none of those slices holds a line index, else
 * "present". */
enum MHD_Result handle_images_check(server *srv, struct MHD_Connection *c, req_state *rs)
{
    enum MHD_Result ret;
    json_t *doc = body_object(c, rs, &ret);
    if (!doc)
        return ret;
    json_t *items = json_object_get(doc, "items");
    if (!json_is_array(items)) {
        json_decref(doc);
        return reply_error(c, 400, "invalid_request", "\"items\" must be an array");
    }
    size_t n = json_array_size(items);
    if (n > CHECK_MAX_ITEMS) {
        json_decref(doc);
        return reply_error(c, 413, "too_many_items",
                           "%zu items; at most %d per request (max_check_items)", n,
                           CHECK_MAX_ITEMS);
    }
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(items, i);
        const char *us = json_string_value(json_object_get(it, "uuid"));
        json_t *aj = json_object_get(it, "arch"), *dj = json_object_get(it, "debug_info");
        const char *arch = json_string_value(aj);
        uint8_t uuid[16];
        const char *bad = !json_is_object(it)                  ? "must be an object"
                          : !us || !uuid_parse(us, uuid)       ? "needs \"uuid\": a UUID"
                          : aj && !json_is_null(aj) && !arch   ? "\"arch\" must be a string"
                          : arch && strlen(arch) >= 16         ? "\"arch\" is too long"
                          : dj && !json_is_null(dj) && !json_is_boolean(dj)
                              ? "\"debug_info\" must be true or false"
                              : NULL;
        if (bad) {
            json_decref(out);
            json_decref(doc);
            return reply_error(c, 400, "invalid_request", "items[%zu] %s", i, bad);
        }
        bool want_lines = json_is_true(dj);
        store_slice sl[MACHO_MAX_SLICES];
        size_t ns = 0;
        symd_err err = {0};
        if (store_slices(srv->st, uuid, sl, MACHO_MAX_SLICES, &ns, &err) != SYMD_OK) {
            json_decref(out);
            json_decref(doc);
            return reply_status(c, &err, "internal_error");
        }
        bool found = false, lines = false;
        for (size_t k = 0; k < ns; k++)
            if (!arch || !*arch || strcmp(sl[k].arch, arch) == 0) {
                found = true;
                lines |= sl[k].debug_info;
            }
        const char *state = !found                 ? "missing"
                            : want_lines && !lines ? "no_debug_info"
                                                   : "present";
        char ustr[37];
        uuid_format(uuid, ustr);
        json_array_append_new(out, json_pack("{s:s, s:o, s:b, s:s}", "uuid", ustr, "arch",
                                             json_str_or_null(arch && *arch ? arch : NULL),
                                             "debug_info", want_lines, "state", state));
    }
    json_decref(doc);
    if (reply_if_over_budget(c, &ret)) {
        json_decref(out);
        return ret;
    }
    return reply_json(c, 200, json_pack("{s:o}", "items", out));
}

/* ---- POST /v1/chunks/{sha256}, POST /v1/chunks/missing ------------------------ */

/* The body of a chunk is written to its file as it comes and hashed on the
 * way: no copy of it in memory (the buffer, its pages faulted in, then
 * written out and freed cost as much as the rest of taking a chunk), and
 * the hash is taken while the bytes are still in the cache. The pieces
 * libmicrohttpd hands over (16 KiB) are gathered to SPOOL_BUF bytes for
 * each write: a write per piece was half the system calls of a chunk. */
#define SPOOL_BUF (128u << 10)

/* Hashes and writes the gathered bytes; a failed write is kept. */
static void spool_flush(req_state *rs)
{
    if (!rs->spool_len || rs->spool_errno)
        return;
    sha256_update(rs->spool_sha, rs->spool_buf, rs->spool_len);
    if (!fd_write_all(rs->spool_fd, rs->spool_buf, rs->spool_len))
        rs->spool_errno = errno ? errno : EIO;
    rs->spool_len = 0;
}

bool chunk_spool_begin(server *srv, req_state *rs, uint64_t declared)
{
    uint8_t want[SHA256_LEN];
    if (!sha256_parse_hex(rs->path_arg, want)) /* the handler says why */
        return false;
    char tmp[4200];
    int fd;
    symd_err err = {0};
    if (store_chunk_temp(srv->st, want, declared, tmp, sizeof tmp, &fd, &err) != SYMD_OK)
        return false; /* buffered: store_chunk_put says what is wrong, if anything */
    rs->spool_tmp = strdup(tmp);
    rs->spool_sha = sha256_new();
    rs->spool_buf = malloc(SPOOL_BUF);
    if (!rs->spool_tmp || !rs->spool_sha || !rs->spool_buf) {
        close(fd);
        unlink(tmp);
        free(rs->spool_tmp);
        rs->spool_tmp = NULL;
        sha256_free(rs->spool_sha);
        rs->spool_sha = NULL;
        free(rs->spool_buf);
        rs->spool_buf = NULL;
        return false;
    }
    rs->spooling = true;
    rs->spool_fd = fd;
    return true;
}

void chunk_spool_data(req_state *rs, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n && !rs->spool_errno) {
        size_t k = SPOOL_BUF - rs->spool_len < n ? SPOOL_BUF - rs->spool_len : n;
        memcpy(rs->spool_buf + rs->spool_len, p, k);
        rs->spool_len += k;
        p += k;
        n -= k;
        if (rs->spool_len == SPOOL_BUF)
            spool_flush(rs);
    }
}

void chunk_spool_end(server *srv, req_state *rs)
{
    if (!rs->spooling)
        return;
    if (rs->spool_fd >= 0)
        close(rs->spool_fd);
    rs->spool_fd = -1;
    store_chunk_temp_drop(srv->st, rs->spool_tmp);
    free(rs->spool_tmp);
    rs->spool_tmp = NULL;
    sha256_free(rs->spool_sha);
    rs->spool_sha = NULL;
    free(rs->spool_buf);
    rs->spool_buf = NULL;
    rs->spooling = false;
}

/* The rest of handle_chunk_post for a spooled body: its hash checked, its
 * file closed at its size and given to the store. */
static enum MHD_Result chunk_post_spooled(server *srv, struct MHD_Connection *c, req_state *rs,
                                          const uint8_t want[SHA256_LEN], store_chunk_result *res,
                                          symd_err *err, bool *stored)
{
    *stored = false;
    spool_flush(rs);
    uint8_t got[SHA256_LEN];
    sha256_final(rs->spool_sha, got);
    rs->spool_sha = NULL;
    int fd = rs->spool_fd;
    rs->spool_fd = -1;
    /* the file was given the declared size at once: it ends at the bytes
     * that came (a chunked body declared none) */
    int e = rs->spool_errno;
    if (!e && ftruncate(fd, (off_t)rs->received) != 0)
        e = errno;
    if (close(fd) != 0 && !e)
        e = errno;
    if (e)
        return reply_error(c, 507, "insufficient_storage", "writing the chunk: %s; nothing stored",
                           strerror(e));
    if (memcmp(want, got, SHA256_LEN) != 0) {
        char ghex[SHA256_HEX_LEN + 1], whex[SHA256_HEX_LEN + 1];
        sha256_hex(got, ghex);
        sha256_hex(want, whex);
        return reply_error(c, 400, "hash_mismatch",
                           "the chunk's bytes hash to %s, not %s; nothing stored", ghex, whex);
    }
    symd_status st = store_chunk_put_temp(srv->st, want, rs->spool_tmp, rs->received,
                                          srv->cfg->chunk_budget, res, err);
    free(rs->spool_tmp); /* taken: stored or removed */
    rs->spool_tmp = NULL;
    if (st != SYMD_OK)
        return reply_status(c, err, "internal_error");
    *stored = true;
    return MHD_YES;
}

/* Stores the body under its SHA-256, which the path names: 201 stored, 200
 * held already; 400 hash_mismatch (nothing stored), 413 past chunk_size,
 * 507 chunk_budget_full (Retry-After) when the chunks held leave no room. */
enum MHD_Result handle_chunk_post(server *srv, struct MHD_Connection *c, req_state *rs)
{
    if (rs->too_large)
        return reply_error(c, 413, "too_large", "a chunk is at most %llu bytes (chunk_size)",
                           (unsigned long long)rs->limit);
    uint8_t want[SHA256_LEN], got[SHA256_LEN];
    if (!sha256_parse_hex(rs->path_arg, want))
        return reply_error(c, 400, "invalid_hash",
                           "'%.80s' is not a SHA-256 hex digest (64 hex digits)", rs->path_arg);
    uint64_t len = rs->spooling ? rs->received : rs->body.len;
    if (len == 0)
        return reply_error(c, 400, "empty_body", "a chunk has at least one byte");
    char whex[SHA256_HEX_LEN + 1];
    sha256_hex(want, whex);
    store_chunk_result res;
    symd_err err = {0};
    if (rs->spooling) {
        bool stored;
        enum MHD_Result ret = chunk_post_spooled(srv, c, rs, want, &res, &err, &stored);
        if (!stored)
            return ret;
    } else {
        sha256(rs->body.data, rs->body.len, got);
        if (memcmp(want, got, SHA256_LEN) != 0) {
            char ghex[SHA256_HEX_LEN + 1];
            sha256_hex(got, ghex);
            return reply_error(c, 400, "hash_mismatch",
                               "the chunk's bytes hash to %s, not %s; nothing stored", ghex,
                               whex);
        }
        if (store_chunk_put(srv->st, want, rs->body.data, rs->body.len, srv->cfg->chunk_budget,
                            &res, &err) != SYMD_OK)
            return reply_status(c, &err, "internal_error");
    }
    if (res == STORE_CHUNK_FULL)
        return reply_error(c, 507, "chunk_budget_full",
                           "the chunks held take the whole chunk budget (%llu bytes); retry "
                           "when assemblies or the chunk TTL free room",
                           (unsigned long long)srv->cfg->chunk_budget);
    return reply_json(c, res == STORE_CHUNK_STORED ? 201 : 200,
                      json_pack("{s:s, s:I, s:s}", "sha256", whex, "size", (json_int_t)len,
                                "state",
                                res == STORE_CHUNK_STORED ? "stored" : "held"));
}

/* The hashes of hashes[0..n) that missing flags, as a JSON array of hex. */
static json_t *hex_list(const uint8_t (*hashes)[32], const bool *missing, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        if (!missing || missing[i]) {
            char hex[SHA256_HEX_LEN + 1];
            sha256_hex(hashes[i], hex);
            json_array_append_new(arr, json_string(hex));
        }
    return arr;
}

/* {"chunks": [h...]} → {"missing": [those not held, in request order]}. */
enum MHD_Result handle_chunks_missing(server *srv, struct MHD_Connection *c, req_state *rs)
{
    enum MHD_Result ret;
    json_t *doc = body_object(c, rs, &ret);
    if (!doc)
        return ret;
    uint8_t(*hashes)[32];
    size_t n;
    char why[160];
    const char *bad = parse_hashes(json_object_get(doc, "chunks"), "chunks",
                                   ASSEMBLE_MAX_CHUNKS, &hashes, &n, why, sizeof why);
    json_decref(doc);
    if (bad)
        return reply_error(c, 400, "invalid_request", "%s", bad);
    bool *missing = calloc(n ? n : 1, sizeof *missing);
    symd_err err = {0};
    symd_status st = missing ? store_chunks_missing(srv->st, hashes, n, missing, &err)
                             : symd_fail(&err, SYMD_E_NOMEM, "out of memory");
    if (st != SYMD_OK) {
        free(missing);
        free(hashes);
        return reply_status(c, &err, "internal_error");
    }
    json_t *arr = hex_list(hashes, missing, n);
    free(missing);
    free(hashes);
    return reply_json(c, 200, json_pack("{s:o}", "missing", arr));
}

/* ---- assembly ------------------------------------------------------------------- */

/* One file being assembled, or assembled (its answer kept a while). */
typedef struct {
    bool used, done;
    uint8_t sha[SHA256_LEN];
    char name[256];
    bool has_name;
    uint64_t size;
    uint8_t (*chunks)[32];
    size_t nchunks;
    /* the answer, once done */
    unsigned status;
    uint8_t *body;
    size_t body_len;
    int64_t done_ms;
} assemble_job;

struct assembler {
    server *srv;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a job finished, or the last one did (stop) */
    assemble_job jobs[ASSEMBLE_JOBS];
    int running;
    int waiting; /* requests waiting for an answer (each holds a worker) */
};

struct assembler *assembler_new(server *srv)
{
    struct assembler *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->srv = srv;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    return a;
}

void assembler_stop(struct assembler *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    while (a->running > 0)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < ASSEMBLE_JOBS; i++) {
        free(a->jobs[i].chunks);
        free(a->jobs[i].body);
    }
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
}

/* The job's answer: an error document as reply_error writes it. */
static void job_error(unsigned *status, uint8_t **body, size_t *len, unsigned st,
                      const char *code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void job_error(unsigned *status, uint8_t **body, size_t *len, unsigned st,
                      const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reply_capture cap = {0};
    reply_capture *old = reply_capture_swap(&cap);
    reply_error(NULL, st, code, "%s", msg);
    reply_capture_swap(old);
    *status = cap.status;
    *body = cap.data;
    *len = cap.len;
}

/* The 409 of an assembly whose chunks are not all held. */
static void job_missing(unsigned *status, uint8_t **body, size_t *len,
                        const uint8_t (*hashes)[32], const bool *missing, size_t n)
{
    json_t *doc = json_pack("{s:s, s:o, s:{s:s, s:s}}", "state", "missing_chunks", "missing",
                            hex_list(hashes, missing, n), "error", "code", "missing_chunks",
                            "message", "chunks named are not held: send them, then assemble");
    char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    *status = 409;
    *body = (uint8_t *)s;
    *len = s ? strlen(s) : 0;
}

/* Chunks read from the store ahead of the assembly that copies them
 * (backends keeping chunks in the database): the database reads and sends
 * the next ones while this one is written and hashed. At most READ_AHEAD
 * chunks wait in memory. */
#define READ_AHEAD 2

typedef struct {
    server *srv;
    const assemble_job *j;
    pthread_t thread;
    bool threaded;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t read, taken; /* chunks read so far, taken so far */
    bool stop;
    uint8_t *data[READ_AHEAD];
    size_t len[READ_AHEAD];
    symd_status st[READ_AHEAD];
    symd_err err[READ_AHEAD];
} chunk_reader;

static void *reader_thread(void *arg)
{
    chunk_reader *r = arg;
    pthread_mutex_lock(&r->mu);
    while (r->read < r->j->nchunks && !r->stop) {
        if (r->read - r->taken >= READ_AHEAD) {
            pthread_cond_wait(&r->cv, &r->mu);
            continue;
        }
        size_t i = r->read, slot = i % READ_AHEAD;
        pthread_mutex_unlock(&r->mu);
        uint8_t *data = NULL;
        size_t n = 0;
        symd_err err = {0};
        symd_status st = store_chunk_get(r->srv->st, r->j->chunks[i], &data, &n, &err);
        pthread_mutex_lock(&r->mu);
        r->data[slot] = data;
        r->len[slot] = n;
        r->st[slot] = st;
        r->err[slot] = err;
        r->read++;
        pthread_cond_broadcast(&r->cv);
        if (st != SYMD_OK)
            break; /* the assembly stops at this one */
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* Starts reading j's chunks ahead; where no thread starts, reader_take
 * reads each when asked. */
static void reader_start(chunk_reader *r, server *srv, const assemble_job *j)
{
    memset(r, 0, sizeof *r);
    r->srv = srv;
    r->j = j;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->threaded = pthread_create(&r->thread, NULL, reader_thread, r) == 0;
}

/* Chunk i (taken in order): its bytes (*data the caller's) and the store's
 * status, as store_chunk_get gives them. */
static symd_status reader_take(chunk_reader *r, size_t i, uint8_t **data, size_t *n,
                               symd_err *err)
{
    if (!r->threaded)
        return store_chunk_get(r->srv->st, r->j->chunks[i], data, n, err);
    pthread_mutex_lock(&r->mu);
    while (r->read <= i)
        pthread_cond_wait(&r->cv, &r->mu);
    size_t slot = i % READ_AHEAD;
    *data = r->data[slot];
    *n = r->len[slot];
    symd_status st = r->st[slot];
    if (st != SYMD_OK)
        *err = r->err[slot];
    r->data[slot] = NULL;
    r->taken = i + 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return st;
}

/* Stops the reader (the assembly ended, done or not) and frees what it
 * read that was not taken. */
static void reader_stop(chunk_reader *r)
{
    if (r->threaded) {
        pthread_mutex_lock(&r->mu);
        r->stop = true;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
    }
    for (int k = 0; k < READ_AHEAD; k++)
        free(r->data[k]);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
}

/* The 409 naming the chunks of j not held now (after one went missing
 * under an assembly: expired, or taken by another). */
static void job_missing_now(server *srv, assemble_job *j, unsigned *status, uint8_t **body,
                            size_t *len)
{
    symd_err err = {0};
    bool *missing = calloc(j->nchunks, sizeof *missing);
    if (missing && store_chunks_missing(srv->st, j->chunks, j->nchunks, missing, &err) == SYMD_OK)
        job_missing(status, body, len, j->chunks, missing, j->nchunks);
    else
        job_error(status, body, len, 503, "database_unavailable", "%s",
                  missing ? err.msg : "out of memory");
    free(missing);
}

typedef enum {
    MAPPED_OK,       /* *map holds the file, its size checked, not its hash */
    MAPPED_ANSWERED, /* the answer is set (an error; nothing stored) */
    MAPPED_NO,       /* not this way: copy the chunks instead */
} mapped_result;

/* Assembles j's file without copying it, when the store keeps chunks as
 * files (SQLite's spool) and every chunk but the last fills whole pages:
 * each chunk's file is mapped at its offset in one reserved range (*map,
 * *maplen bytes; (*sizes)[i] chunk i's size, malloc'ed), and the size named
 * is checked. The caller checks the SHA-256 (mapped_hash_*). */
static mapped_result assemble_mapped(server *srv, assemble_job *j, void **map, size_t *maplen,
                                     uint64_t **sizes_out, unsigned *status, uint8_t **body,
                                     size_t *len)
{
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    if (j->size == 0 || j->size > SIZE_MAX - page)
        return MAPPED_NO;
    const size_t span = (size_t)((j->size + page - 1) / page * page);
    uint64_t *sizes = malloc(j->nchunks * sizeof *sizes);
    uint8_t *base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (!sizes || base == MAP_FAILED) {
        free(sizes);
        if (base != MAP_FAILED)
            munmap(base, span);
        return MAPPED_NO;
    }
    mapped_result res = MAPPED_OK;
    symd_err err = {0};
    uint64_t off = 0;
    for (size_t i = 0; i < j->nchunks && res == MAPPED_OK; i++) {
        int fd;
        uint64_t n;
        symd_status st = store_chunk_open(srv->st, j->chunks[i], &fd, &n, &err);
        if (st == SYMD_E_UNSUPPORTED) {
            res = MAPPED_NO;
            break;
        }
        if (st == SYMD_E_NOT_FOUND) {
            job_missing_now(srv, j, status, body, len);
            res = MAPPED_ANSWERED;
            break;
        }
        if (st != SYMD_OK) {
            job_error(status, body, len, st == SYMD_E_UNAVAILABLE ? 503 : 500,
                      st == SYMD_E_UNAVAILABLE ? "database_unavailable" : "internal_error",
                      "reading chunk %zu: %s", i, err.msg);
            res = MAPPED_ANSWERED;
            break;
        }
        if (n > j->size - off) {
            job_error(status, body, len, 400, "size_mismatch",
                      "the chunks hold more than the %llu bytes named; nothing stored",
                      (unsigned long long)j->size);
            res = MAPPED_ANSWERED;
        } else if (n == 0 || (i + 1 < j->nchunks && n % page != 0)) {
            res = MAPPED_NO; /* a chunk ending inside a page: copy them */
        } else if (mmap(base + off, (size_t)n, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE,
                        fd, 0) == MAP_FAILED) {
            job_error(status, body, len, 503, "out_of_memory", "mapping chunk %zu: %s", i,
                      strerror(errno));
            res = MAPPED_ANSWERED;
        }
        close(fd); /* the mapping keeps the file */
        sizes[i] = n;
        off += n;
    }
    if (res == MAPPED_OK && off != j->size) {
        job_error(status, body, len, 400, "size_mismatch",
                  "the chunks hold %llu bytes, not the %llu named; nothing stored",
                  (unsigned long long)off, (unsigned long long)j->size);
        res = MAPPED_ANSWERED;
    }
    if (res != MAPPED_OK) {
        free(sizes);
        munmap(base, span);
        return res;
    }
    *map = base;
    *maplen = span;
    *sizes_out = sizes;
    return MAPPED_OK;
}

/* The answer of an assembly whose file does not hash to the one named
 * (got): the chunks whose stored bytes no longer hash to their names
 * (damaged on the server's disk) are dropped and named in a 409, so the
 * client sends them again; when there are none, the file named is wrong
 * (400 hash_mismatch). The chunks' bytes are base's (sizes[i] each) when
 * mapped, else read from the store again: only this failing path pays. */
static void blame_mismatch(server *srv, assemble_job *j, const uint8_t *base,
                           const uint64_t *sizes, const uint8_t got[SHA256_LEN],
                           unsigned *status, uint8_t **body, size_t *len)
{
    bool *bad = calloc(j->nchunks, sizeof *bad);
    size_t nbad = 0;
    uint64_t off = 0;
    symd_err err = {0};
    for (size_t i = 0; bad && i < j->nchunks; i++) {
        uint8_t d[SHA256_LEN];
        if (base) {
            sha256(base + off, (size_t)sizes[i], d);
            off += sizes[i];
        } else {
            uint8_t *data;
            size_t n;
            if (store_chunk_get(srv->st, j->chunks[i], &data, &n, &err) != SYMD_OK)
                continue; /* gone since: not the damage looked for */
            sha256(data, n, d);
            free(data);
        }
        if (memcmp(d, j->chunks[i], SHA256_LEN) != 0) {
            bad[i] = true;
            nbad++;
            store_chunks_delete(srv->st, (const uint8_t(*)[32]) & j->chunks[i], 1, &err);
        }
    }
    if (nbad > 0) {
        fprintf(stderr, "symd: assembly: %zu stored chunk(s) damaged, dropped; "
                        "the client is asked for them again\n", nbad);
        job_missing(status, body, len, j->chunks, bad, j->nchunks);
    } else {
        char ghex[SHA256_HEX_LEN + 1], whex[SHA256_HEX_LEN + 1];
        sha256_hex(got, ghex);
        sha256_hex(j->sha, whex);
        job_error(status, body, len, 400, "hash_mismatch",
                  "the assembled file hashes to %s, not %s; nothing stored", ghex, whex);
    }
    free(bad);
}

/* The SHA-256 of a mapped assembly, computed by a thread of its own while
 * the file is read (both only read the mapping), and checked before
 * anything is stored: the one pass over the bytes costs no time where a
 * core is free. */
typedef struct {
    server *srv;
    assemble_job *j;
    const uint8_t *base;
    const uint64_t *sizes;
    pthread_t thread;
    bool threaded;
    uint8_t got[SHA256_LEN];
    /* the answer when the hash is not the one named */
    unsigned status;
    uint8_t *body;
    size_t len;
} mapped_hash;

static void *mapped_hash_run(void *arg)
{
    mapped_hash *h = arg;
    sha256(h->base, (size_t)h->j->size, h->got);
    return NULL;
}

static void mapped_hash_start(mapped_hash *h)
{
    h->threaded = pthread_create(&h->thread, NULL, mapped_hash_run, h) == 0;
}

/* The gate of the read (reply_ingest_gated): waits for the hash; when it
 * is not the one named, blame_mismatch sets the answer. */
static bool mapped_hash_check(void *arg)
{
    mapped_hash *h = arg;
    if (h->threaded)
        pthread_join(h->thread, NULL);
    else
        mapped_hash_run(h);
    h->threaded = false;
    assemble_job *j = h->j;
    if (memcmp(h->got, j->sha, SHA256_LEN) == 0)
        return true;
    blame_mismatch(h->srv, j, h->base, h->sizes, h->got, &h->status, &h->body, &h->len);
    return false;
}

/* Assembles j's file: mapped from the chunks' own files where the store
 * keeps them so (assemble_mapped; its SHA-256 checked beside the read),
 * else in a temporary file, chunk after chunk (one chunk in memory at a
 * time), checks its size and SHA-256 (blame_mismatch), then reads it mapped, as
 * POST /v1/images reads a body, under a memory meter sized for a body of
 * its size. Sets the answer. */
static void assemble_run(server *srv, assemble_job *j, unsigned *status, uint8_t **body,
                         size_t *len)
{
    void *map = MAP_FAILED;
    size_t maplen = (size_t)j->size;
    uint64_t *sizes = NULL;
    switch (assemble_mapped(srv, j, &map, &maplen, &sizes, status, body, len)) {
    case MAPPED_OK:
        goto read;
    case MAPPED_ANSWERED:
        return;
    case MAPPED_NO:
        break;
    }
    int fd = temp_file_unlinked("symd-assemble");
    if (fd < 0) {
        job_error(status, body, len, 507, "insufficient_storage",
                  "no temporary file for the assembly: %s", strerror(errno));
        return;
    }
    /* its blocks taken at once, as the spool's chunk files are: ext4 writes
     * into them several times faster than when it allocates as the pages go
     * (measured on PostgreSQL's assembly of 500 MiB: the writes took 1.2 s
     * of its 3 s); no room is the 507 below, a filesystem without it writes */
    if (fallocate(fd, 0, 0, (off_t)j->size) != 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
        job_error(status, body, len, 507, "insufficient_storage",
                  "no room for the assembled file: %s", strerror(errno));
        close(fd);
        return;
    }
    sha256_ctx *h = sha256_new();
    uint64_t total = 0;
    symd_err err = {0};
    bool failed = !h;
    if (!h)
        job_error(status, body, len, 503, "out_of_memory", "out of memory");
    chunk_reader rd;
    reader_start(&rd, srv, j);
    for (size_t i = 0; i < j->nchunks && !failed; i++) {
        uint8_t *data;
        size_t n;
        symd_status st = reader_take(&rd, i, &data, &n, &err);
        if (st == SYMD_E_NOT_FOUND) { /* expired, or another assembly took it */
            bool *missing = calloc(j->nchunks, sizeof *missing);
            if (missing &&
                store_chunks_missing(srv->st, j->chunks, j->nchunks, missing, &err) == SYMD_OK)
                job_missing(status, body, len, j->chunks, missing, j->nchunks);
            else
                job_error(status, body, len, 503, "database_unavailable", "%s", err.msg);
            free(missing);
            failed = true;
        } else if (st != SYMD_OK) {
            job_error(status, body, len, st == SYMD_E_UNAVAILABLE ? 503 : 500,
                      st == SYMD_E_UNAVAILABLE ? "database_unavailable" : "internal_error",
                      "reading chunk %zu: %s", i, err.msg);
            failed = true;
        } else if (n > j->size - total) {
            job_error(status, body, len, 400, "size_mismatch",
                      "the chunks hold more than the %llu bytes named; nothing stored",
                      (unsigned long long)j->size);
            failed = true;
        } else if (!fd_write_all(fd, data, n)) {
            job_error(status, body, len, 507, "insufficient_storage",
                      "writing the assembled file: %s", strerror(errno));
            failed = true;
        } else {
            sha256_update(h, data, n);
            total += n;
        }
        free(data);
    }
    reader_stop(&rd);
    uint8_t got[SHA256_LEN];
    if (h && failed)
        sha256_free(h);
    else if (h)
        sha256_final(h, got);
    if (!failed && total != j->size) {
        job_error(status, body, len, 400, "size_mismatch",
                  "the chunks hold %llu bytes, not the %llu named; nothing stored",
                  (unsigned long long)total, (unsigned long long)j->size);
        failed = true;
    }
    if (!failed && memcmp(got, j->sha, SHA256_LEN) != 0) {
        blame_mismatch(srv, j, NULL, NULL, got, status, body, len);
        failed = true;
    }
    if (!failed) {
        map = mmap(NULL, (size_t)j->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            job_error(status, body, len, 503, "out_of_memory", "mapping the assembled file: %s",
                      strerror(errno));
            failed = true;
        }
    }
    close(fd);
    if (failed)
        return;
read:
    madvise(map, (size_t)j->size, MADV_SEQUENTIAL);
    /* read as a body of its size would be (--request-mem-factor, -mb) */
    mem_meter meter;
    mem_meter_begin(&meter, &srv->pool,
                    mem_request_limit(j->size, srv->cfg->request_mem_factor,
                                      srv->cfg->request_mem_allowance));
    reply_capture cap = {0};
    reply_capture *old = reply_capture_swap(&cap);
    upload_part part = {map, (size_t)j->size, j->has_name ? j->name : NULL};
    mapped_hash mh = {srv, j, map, sizes, .threaded = false};
    if (sizes) { /* mapped: hashed while read, checked before stored */
        mapped_hash_start(&mh);
        reply_ingest_gated(srv, NULL, &part, 1, mapped_hash_check, &mh);
    } else { /* copied: hashed while copied, checked already */
        reply_ingest(srv, NULL, &part, 1);
    }
    if (mh.threaded) /* the gate joins it; never left running past the mapping */
        pthread_join(mh.thread, NULL);
    reply_capture_swap(old);
    mem_meter_end(&meter);
    munmap(map, maplen);
    free(sizes);
    atomic_store(&srv->trim_wanted, true); /* give what the read freed back */
    if (mh.status) { /* the hash was not the one named: nothing stored */
        free(cap.data);
        *status = mh.status;
        *body = mh.body;
        *len = mh.len;
        return;
    }
    *status = cap.status;
    *body = cap.data;
    *len = cap.len;
}

typedef struct {
    struct assembler *a;
    assemble_job *j;
} job_ref;

static void *job_thread(void *arg)
{
    job_ref ref = *(job_ref *)arg;
    free(arg);
    unsigned status = 0;
    uint8_t *body = NULL;
    size_t len = 0;
    assemble_run(ref.a->srv, ref.j, &status, &body, &len);
    if (!status) { /* nothing answered: out of memory writing the answer */
        free(body);
        body = NULL;
        len = 0;
        status = 503;
    }
    /* the answer first; then the stored file's chunks go (the job still
     * counts as running, so a stop waits for that too) */
    pthread_mutex_lock(&ref.a->mu);
    ref.j->status = status;
    ref.j->body = body;
    ref.j->body_len = len;
    ref.j->done = true;
    ref.j->done_ms = store_now_ms();
    uint8_t(*chunks)[32] = ref.j->chunks;
    size_t nchunks = ref.j->nchunks;
    ref.j->chunks = NULL;
    pthread_cond_broadcast(&ref.a->cv);
    pthread_mutex_unlock(&ref.a->mu);
    if (status == 200 || status == 201) {
        symd_err err = {0};
        if (store_chunks_delete(ref.a->srv->st, chunks, nchunks, &err) != SYMD_OK)
            fprintf(stderr, "symd: deleting assembled chunks: %s\n", err.msg);
    }
    free(chunks);
    pthread_mutex_lock(&ref.a->mu);
    ref.a->running--;
    pthread_cond_broadcast(&ref.a->cv);
    pthread_mutex_unlock(&ref.a->mu);
    return NULL;
}

/* The slot of the job assembling sha (under mu), or NULL. */
static assemble_job *job_find(struct assembler *a, const uint8_t sha[SHA256_LEN])
{
    for (int i = 0; i < ASSEMBLE_JOBS; i++)
        if (a->jobs[i].used && memcmp(a->jobs[i].sha, sha, SHA256_LEN) == 0)
            return &a->jobs[i];
    return NULL;
}

/* A free slot (under mu): unused, else the oldest finished one (its answer
 * dropped); NULL when every slot is an assembly under way. */
static assemble_job *job_slot(struct assembler *a)
{
    assemble_job *best = NULL;
    for (int i = 0; i < ASSEMBLE_JOBS; i++) {
        assemble_job *j = &a->jobs[i];
        if (!j->used)
            return j;
        if (j->done && (!best || j->done_ms < best->done_ms))
            best = j;
    }
    return best;
}

/* Drops the answers kept past ASSEMBLE_KEEP_MS (under mu). */
static void jobs_expire(struct assembler *a)
{
    int64_t now = store_now_ms();
    for (int i = 0; i < ASSEMBLE_JOBS; i++) {
        assemble_job *j = &a->jobs[i];
        if (j->used && j->done && now - j->done_ms > ASSEMBLE_KEEP_MS) {
            free(j->body);
            memset(j, 0, sizeof *j);
        }
    }
}

/* 202 {"state": "assembling", "status_url": ...} for sha. */
static enum MHD_Result reply_assembling(struct MHD_Connection *c, const uint8_t sha[SHA256_LEN])
{
    char hex[SHA256_HEX_LEN + 1], url[128];
    sha256_hex(sha, hex);
    snprintf(url, sizeof url, "/v1/images/assemble/%s", hex);
    return reply_json(c, 202, json_pack("{s:s, s:s, s:s}", "state", "assembling", "status_url",
                                        url, "sha256", hex));
}

/* j's answer, copied (under mu). */
static enum MHD_Result reply_job(struct MHD_Connection *c, const assemble_job *j)
{
    uint8_t *copy = malloc(j->body_len ? j->body_len : 1);
    if (!copy)
        return reply_error(c, 503, "out_of_memory", "out of memory");
    if (j->body_len)
        memcpy(copy, j->body, j->body_len);
    return reply_bytes(c, j->status, copy, j->body_len, "application/json");
}

/* {"name", "size", "sha256", "chunks"}: the file is assembled from its
 * chunks and read as POST /v1/images reads a body, answering alike; 202
 * when that takes more than ?wait= seconds (default 5; 0 when the other
 * workers already wait on assemblies), the answer then at the status URL. 409 missing_chunks (with the list) when chunks are not
 * held, 400 hash_mismatch / size_mismatch, 413 past --max-upload. */
enum MHD_Result handle_assemble(server *srv, struct MHD_Connection *c, req_state *rs)
{
    uint64_t wait_s = ASSEMBLE_WAIT_S;
    const char *w = query_arg(c, "wait");
    if (w && (!num_parse_u64(w, &wait_s) || wait_s > ASSEMBLE_WAIT_MAX))
        return reply_error(c, 400, "invalid_request", "wait must be seconds from 0 to %d",
                           ASSEMBLE_WAIT_MAX);
    enum MHD_Result ret;
    json_t *doc = body_object(c, rs, &ret);
    if (!doc)
        return ret;
    json_t *nj = json_object_get(doc, "name"), *sj = json_object_get(doc, "size");
    const char *name = json_string_value(nj);
    if (!name)
        name = query_arg(c, "name");
    const char *sha_hex = json_string_value(json_object_get(doc, "sha256"));
    uint8_t sha[SHA256_LEN];
    const char *bad = nj && !json_is_null(nj) && !json_is_string(nj) ? "\"name\" must be a string"
                      : !json_is_integer(sj) || json_integer_value(sj) < 0
                          ? "\"size\" must be the file's size in bytes"
                      : !sha256_parse_hex(sha_hex, sha)
                          ? "\"sha256\" must be the file's SHA-256 (64 hex digits)"
                          : NULL;
    if (bad) {
        json_decref(doc);
        return reply_error(c, 400, "invalid_request", "%s", bad);
    }
    uint64_t size = (uint64_t)json_integer_value(sj);
    if (size > srv->cfg->max_upload) {
        json_decref(doc);
        return reply_error(c, 413, "too_large", "upload of %llu bytes exceeds %llu",
                           (unsigned long long)size, (unsigned long long)srv->cfg->max_upload);
    }
    if (size == 0) {
        json_decref(doc);
        return reply_error(c, 400, "empty_body", "upload body is empty");
    }
    uint8_t(*hashes)[32];
    size_t n;
    char why[160];
    bad = parse_hashes(json_object_get(doc, "chunks"), "chunks", ASSEMBLE_MAX_CHUNKS, &hashes, &n,
                       why, sizeof why);
    if (!bad && n == 0)
        bad = "\"chunks\" is empty";
    if (!bad && n > size)
        bad = "more chunks than bytes";
    if (!bad && (size - 1) / srv->cfg->chunk_size >= n)
        bad = "the chunks cannot hold that many bytes (chunk_size each at most)";
    char name_copy[256] = "";
    bool has_name = name != NULL;
    if (name)
        snprintf(name_copy, sizeof name_copy, "%s", name);
    json_decref(doc);
    if (bad) {
        free(hashes);
        return reply_error(c, 400, "invalid_request", "%s", bad);
    }
    /* every chunk held? (asked first: nothing is started without them) */
    bool *missing = calloc(n, sizeof *missing);
    symd_err err = {0};
    symd_status st = missing ? store_chunks_missing(srv->st, hashes, n, missing, &err)
                             : symd_fail(&err, SYMD_E_NOMEM, "out of memory");
    if (st != SYMD_OK) {
        free(missing);
        free(hashes);
        return reply_status(c, &err, "internal_error");
    }
    bool any_missing = false;
    for (size_t i = 0; i < n; i++)
        any_missing |= missing[i];
    if (any_missing) {
        unsigned status;
        uint8_t *body;
        size_t len;
        job_missing(&status, &body, &len, hashes, missing, n);
        free(missing);
        free(hashes);
        if (!body)
            return reply_error(c, 503, "out_of_memory", "out of memory");
        return reply_bytes(c, status, body, len, "application/json");
    }
    free(missing);

    struct assembler *a = srv->assembler;
    pthread_mutex_lock(&a->mu);
    jobs_expire(a);
    assemble_job *j = job_find(a, sha);
    if (j && j->done) { /* an earlier assembly's answer: this one starts afresh */
        free(j->body);
        memset(j, 0, sizeof *j);
        j = NULL;
    }
    if (j) { /* the same file under way: wait for that one */
        free(hashes);
    } else {
        j = job_slot(a);
        if (!j) {
            pthread_mutex_unlock(&a->mu);
            free(hashes);
            return reply_error(c, 503, "busy", "%d assemblies under way; retry later",
                               ASSEMBLE_JOBS);
        }
        free(j->body);
        memset(j, 0, sizeof *j);
        j->used = true;
        memcpy(j->sha, sha, SHA256_LEN);
        memcpy(j->name, name_copy, sizeof j->name);
        j->has_name = has_name;
        j->size = size;
        j->chunks = hashes;
        j->nchunks = n;
        job_ref *ref = malloc(sizeof *ref);
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (ref)
            *ref = (job_ref){a, j};
        if (!ref || pthread_create(&t, &attr, job_thread, ref) != 0) {
            pthread_attr_destroy(&attr);
            free(ref);
            free(j->chunks);
            memset(j, 0, sizeof *j);
            pthread_mutex_unlock(&a->mu);
            return reply_error(c, 503, "busy", "cannot start the assembly; retry later");
        }
        pthread_attr_destroy(&attr);
        a->running++;
    }
    /* A request waiting holds one of the workers heavy requests (chunks
     * among them) run on: one worker is always left to them. */
    int max_waiting = srv->work.n > 1 ? srv->work.n - 1 : 1;
    if (a->waiting >= max_waiting)
        wait_s = 0;
    a->waiting++;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)wait_s;
    while (!j->done && pthread_cond_timedwait(&a->cv, &a->mu, &until) != ETIMEDOUT)
        ;
    a->waiting--;
    ret = j->done ? reply_job(c, j) : reply_assembling(c, sha);
    pthread_mutex_unlock(&a->mu);
    return ret;
}

/* The assembly of the file whose SHA-256 the path names: 202 while under
 * way, then the answer POST /v1/images would have given (kept 15 minutes);
 * 404 when this node knows of none. */
enum MHD_Result handle_assemble_state(server *srv, struct MHD_Connection *c, req_state *rs)
{
    uint8_t sha[SHA256_LEN];
    if (!sha256_parse_hex(rs->path_arg, sha))
        return reply_error(c, 400, "invalid_hash",
                           "'%.80s' is not a SHA-256 hex digest (64 hex digits)", rs->path_arg);
    struct assembler *a = srv->assembler;
    pthread_mutex_lock(&a->mu);
    jobs_expire(a);
    assemble_job *j = job_find(a, sha);
    enum MHD_Result ret = !j         ? reply_error(c, 404, "not_found",
                                                   "no assembly of %s on this node", rs->path_arg)
                          : j->done ? reply_job(c, j)
                                    : reply_assembling(c, sha);
    pthread_mutex_unlock(&a->mu);
    return ret;
}

/* What one posted report costs, step by step, in-process (no HTTP): the
 * floor under POST /v1/crashes that the crash section's wrk runs cannot
 * take apart.
 *
 *   crash-costs REPORT DIR [N]
 *
 * Parses, symbolicates (against an empty store: every image missing, as in
 * the wrk runs), writes the whole JSON answer and the short one
 * (Prefer: return=minimal), compresses the original as the store does, and
 * stores it: N times one transaction per report (one thread), then N
 * reports from 8 threads at once (group commit shares transactions). DIR
 * holds the scratch databases. Prints one JSON object: CPU microseconds
 * per report for each step (the store's include the kernel's writes) and
 * the sizes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "../parser/crash.h"
#include "../server/crashsym.h"
#include "../store/store.h"
#include "../util/dynbuf.h"

#define THREADS 8

static double cpu_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, const symd_err *e)
{
    fprintf(stderr, "crash-costs: %s: %s\n", what, e ? e->msg : "");
    exit(1);
}

typedef struct {
    store *st;
    const crash_report *r;
    const crash_symbolication *sym;
    const uint8_t *buf;
    size_t len;
    int n;
} put_args;

/* store_put_crash as the POST handler calls it (its image list, borrowed
 * strings), n times. */
static void *put_n(void *p)
{
    put_args *a = p;
    const crash_report *r = a->r;
    size_t ni;
    store_crash_image *imgs = crash_needed_images(r, a->sym, &ni);
    if (!imgs)
        die("out of memory", NULL);
    store_crash sc = crash_store_record(r, a->sym, a->buf, a->len);
    for (int i = 0; i < a->n; i++) {
        int64_t id;
        symd_err e = {0};
        if (store_put_crash(a->st, &sc, imgs, ni, &id, &e) != SYMD_OK)
            die("store_put_crash", &e);
    }
    free(imgs);
    return NULL;
}

static store *fresh_store(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        remove(p);
    }
    store *st;
    symd_err e = {0};
    if (store_open(path, 2, 64u << 20, &st, &e) != SYMD_OK)
        die("store_open", &e);
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: crash-costs REPORT DIR [N]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        die(argv[1], NULL);
    dynbuf in;
    dynbuf_init(&in, 64u << 20);
    uint8_t chunk[65536];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (!dynbuf_add(&in, chunk, k))
            die("reading the report", NULL);
    fclose(f);
    const uint8_t *buf = in.data ? in.data : (const uint8_t *)"";
    size_t len = in.len;
    int n = argc > 3 ? atoi(argv[3]) : 2000;
    if (n < 10)
        n = 10;

    store *st = fresh_store(argv[2], "crash-costs-1.db");
    symd_err e = {0};
    enum { PARSE, SYM, WHOLE, SHORT, ZSTD, FREE, NSTEPS };
    double t[NSTEPS] = {0};
    size_t whole_len = 0, short_len = 0, packed_len = 0, frames = 0;
    ZSTD_CCtx *z = ZSTD_createCCtx();
    size_t cap = ZSTD_compressBound(len);
    uint8_t *packed = malloc(cap ? cap : 1);
    const clockid_t me = CLOCK_THREAD_CPUTIME_ID;
    for (int i = 0; i < n + n / 10; i++) { /* the first tenth warms up */
        bool count = i >= n / 10;
        crash_report r;
        crash_symbolication sym;
        dynbuf out;
        double c0 = cpu_s(me);
        if (crash_parse(buf, len, &r, &e) != SYMD_OK)
            die("crash_parse", &e);
        double c1 = cpu_s(me);
        if (crash_symbolicate(st, &r, false, &sym, &e) != SYMD_OK)
            die("crash_symbolicate", &e);
        double c2 = cpu_s(me);
        dynbuf_init(&out, 512u << 20);
        if (crash_write_json(&r, &sym, 1, &out, &e) != SYMD_OK)
            die("crash_write_json", &e);
        whole_len = out.len;
        dynbuf_free(&out);
        double c3 = cpu_s(me);
        dynbuf_init(&out, 512u << 20);
        if (crash_write_summary(&r, &sym, 1, &out, &e) != SYMD_OK)
            die("crash_write_summary", &e);
        short_len = out.len;
        dynbuf_free(&out);
        double c4 = cpu_s(me);
        packed_len = ZSTD_compressCCtx(z, packed, cap, buf, len, 1);
        double c5 = cpu_s(me);
        frames = r.total_frames;
        crash_symbolication_free(&sym);
        crash_report_free(&r);
        double c6 = cpu_s(me);
        if (count) {
            double d[NSTEPS] = {c1 - c0, c2 - c1, c3 - c2, c4 - c3, c5 - c4, c6 - c5};
            for (int s = 0; s < NSTEPS; s++)
                t[s] += d[s];
        }
    }
    ZSTD_freeCCtx(z);
    free(packed);

    /* the store: its own CPU (compression included, as store_put_crash does
     * it) and the kernel's, over the whole process */
    crash_report r;
    crash_symbolication sym;
    if (crash_parse(buf, len, &r, &e) != SYMD_OK || crash_symbolicate(st, &r, false, &sym, &e))
        die("parse", &e);
    put_args one = {st, &r, &sym, buf, len, n / 10};
    put_n(&one); /* warm-up */
    one.n = n;
    double p0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    put_n(&one);
    double store_one = (cpu_s(CLOCK_PROCESS_CPUTIME_ID) - p0) / n;
    store_close(st);

    store *st8 = fresh_store(argv[2], "crash-costs-8.db");
    put_args many[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        many[i] = (put_args){st8, &r, &sym, buf, len, n / THREADS};
    p0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, put_n, &many[i]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    double store_many = (cpu_s(CLOCK_PROCESS_CPUTIME_ID) - p0) / (double)(n / THREADS * THREADS);
    store_close(st8);
    crash_symbolication_free(&sym);
    crash_report_free(&r);

    const char *names[NSTEPS] = {"parse", "symbolicate", "whole_answer", "short_answer",
                                 "compress", "free"};
    printf("{\"report\":\"%s\",\"bytes\":%zu,\"frames\":%zu,\"reports\":%d,\"us\":{", argv[1], len,
           frames, n);
    for (int s = 0; s < NSTEPS; s++)
        printf("%s\"%s\":%.2f", s ? "," : "", names[s], t[s] / n * 1e6);
    printf(",\"store_one_per_transaction\":%.2f,\"store_%d_threads\":%.2f},", store_one * 1e6,
           THREADS, store_many * 1e6);
    printf("\"whole_answer_bytes\":%zu,\"short_answer_bytes\":%zu,\"compressed_bytes\":%zu}\n",
           whole_len, short_len, packed_len);
    dynbuf_free(&in);
    return 0;
}

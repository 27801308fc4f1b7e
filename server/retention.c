/* Crash retention (retention.h): one thread, a condition variable to wake
 * it for shutdown, batches of RETENTION_BATCH deletions. */
#include "retention.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct retention {
    store *st;
    uint64_t keep_days, max_crashes, chunk_ttl_s;
    unsigned every_s;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    uint64_t pruned; /* under mu */
};

/* Chunks past their TTL go in one statement (they are few: the budget
 * bounds their bytes). */
static void expire_chunks(retention *r)
{
    if (!r->chunk_ttl_s)
        return;
    size_t n = 0; /* not kept: /metrics shows what is held */
    symd_err err = {0};
    if (store_chunks_expire(r->st, store_now_ms() - (int64_t)r->chunk_ttl_s * 1000, &n, &err) !=
        SYMD_OK)
        fprintf(stderr, "symd: chunk expiry: %s\n", err.msg);
}

/* One pass: batches until nothing more is to go (or a stop, or an error,
 * which is logged and retried at the next pass). */
static void prune_pass(retention *r)
{
    expire_chunks(r);
    if (!r->keep_days && !r->max_crashes)
        return;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        bool stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            return;
        int64_t before = r->keep_days
                             ? store_now_ms() - (int64_t)r->keep_days * 86400000
                             : 0;
        size_t n = 0;
        symd_err err = {0};
        if (store_prune_crashes(r->st, before, (int64_t)r->max_crashes, RETENTION_BATCH, &n,
                                &err) != SYMD_OK) {
            fprintf(stderr, "symd: retention: %s\n", err.msg);
            return;
        }
        pthread_mutex_lock(&r->mu);
        r->pruned += n;
        pthread_mutex_unlock(&r->mu);
        /* Fewer than a batch: nothing older is left, or (PostgreSQL)
         * another node holds the retention lock and prunes meanwhile; this
         * node tries again at its next pass. */
        if (n < RETENTION_BATCH)
            return;
        /* Let waiting writers in before the next batch: released and taken
         * again at once, the store's writer lock would mostly go back to
         * this thread, and a request would wait through the whole pass. */
        struct timespec pause = {0, RETENTION_PAUSE_MS * 1000000L};
        nanosleep(&pause, NULL);
    }
}

static void *run(void *arg)
{
    retention *r = arg;
    for (;;) {
        prune_pass(r);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += r->every_s;
        pthread_mutex_lock(&r->mu);
        while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &until) != ETIMEDOUT)
            ;
        bool stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            return NULL;
    }
}

retention *retention_start(store *st, uint64_t keep_days, uint64_t max_crashes,
                           unsigned every_s, uint64_t chunk_ttl_s, symd_err *err)
{
    if (!keep_days && !max_crashes && !chunk_ttl_s)
        return NULL;
    retention *r = calloc(1, sizeof *r);
    if (!r) {
        symd_fail(err, SYMD_E_NOMEM, "out of memory");
        return NULL;
    }
    r->st = st;
    r->keep_days = keep_days;
    r->max_crashes = max_crashes;
    r->chunk_ttl_s = chunk_ttl_s;
    r->every_s = every_s ? every_s : 1;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (pthread_create(&r->thread, NULL, run, r) != 0) {
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
        symd_fail(err, SYMD_E_IO, "cannot start the retention thread");
        return NULL;
    }
    return r;
}

void retention_stop(retention *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

uint64_t retention_pruned(const retention *r)
{
    if (!r)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&r->mu);
    uint64_t n = r->pruned;
    pthread_mutex_unlock((pthread_mutex_t *)&r->mu);
    return n;
}

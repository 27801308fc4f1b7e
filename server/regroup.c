/* Crashes filed again in the background (regroup.h): one thread, a
 * condition variable to wake it for more work and for shutdown. */
#include "regroup.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../parser/crash.h"
#include "../util/hex.h"
#include "crashsym.h"

struct regroup {
    store *st;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, woken; /* under mu */
};

/* Contract in regroup.h. */
symd_status regroup_crash(store *st, int64_t id, bool *moved, symd_err *err)
{
    *moved = false;
    store_crash sc;
    symd_status r = store_get_crash(st, id, true, &sc, err);
    if (r == SYMD_E_NOT_FOUND) {
        symd_err_clear(err);
        return SYMD_OK;
    }
    if (r != SYMD_OK)
        return r;
    crash_report rep;
    r = crash_parse_part(sc.original, sc.original_len, (size_t)sc.part, &rep, err);
    if (r == SYMD_OK) {
        crash_symbolication sym;
        r = crash_symbolicate(st, &rep, false, &sym, err);
        if (r == SYMD_OK) {
            const char *kind = crash_kind_name(rep.kind);
            *moved = !sc.signature || strcmp(sc.signature, sym.signature) != 0 || !sc.kind ||
                     strcmp(sc.kind, kind) != 0;
            /* the rule that files it may change while its group does not */
            bool same_rule = (!sc.grouping_rule && !sym.grouping_rule) ||
                             (sc.grouping_rule && sym.grouping_rule &&
                              strcmp(sc.grouping_rule, sym.grouping_rule) == 0);
            if (*moved || sc.bug_type != rep.bug_type || !same_rule)
                r = store_update_crash(st, id, sym.signature, kind, rep.bug_type,
                                       sym.grouping_rule, err);
            crash_symbolication_free(&sym);
        }
        crash_report_free(&rep);
    }
    store_crash_free(&sc);
    return r;
}

/* Waits until woken, stopped or s seconds passed; true when stopped. */
static bool wait_for(regroup *g, unsigned s)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += s;
    pthread_mutex_lock(&g->mu);
    while (!g->stop && !g->woken && pthread_cond_timedwait(&g->cv, &g->mu, &until) != ETIMEDOUT)
        ;
    g->woken = false;
    bool stop = g->stop;
    pthread_mutex_unlock(&g->mu);
    return stop;
}

static bool stopping(regroup *g)
{
    pthread_mutex_lock(&g->mu);
    bool stop = g->stop;
    pthread_mutex_unlock(&g->mu);
    return stop;
}

/* Whether an error is the store's or the machine's for now (retried
 * later, the crash left on the list) rather than the crash's own. */
static bool transient(symd_status r)
{
    return r == SYMD_E_UNAVAILABLE || r == SYMD_E_NOMEM || r == SYMD_E_IO;
}

static void *run(void *arg)
{
    regroup *g = arg;
    uint64_t pass_read = 0, pass_moved = 0; /* since the list was last empty */
    while (!stopping(g)) {
        int64_t ids[REGROUP_BATCH];
        size_t n = 0, done = 0;
        symd_err err = {0};
        if (store_regroup_next(g->st, ids, REGROUP_BATCH, &n, &err) != SYMD_OK) {
            fprintf(stderr, "symd: refiling crashes: %s (retried in %d s)\n", err.msg,
                    REGROUP_RETRY_S);
            if (wait_for(g, REGROUP_RETRY_S))
                break;
            continue;
        }
        if (n == 0) {
            if (pass_read)
                fprintf(stderr, "symd: crashes read again under the grouping rule: %llu, "
                                "refiled under another group: %llu\n",
                        (unsigned long long)pass_read, (unsigned long long)pass_moved);
            pass_read = pass_moved = 0;
            if (wait_for(g, REGROUP_IDLE_S))
                break;
            continue;
        }
        bool retry = false;
        for (; done < n && !stopping(g); done++) {
            bool moved;
            symd_err e = {0};
            symd_status r = regroup_crash(g->st, ids[done], &moved, &e);
            if (r != SYMD_OK && transient(r)) {
                fprintf(stderr, "symd: refiling crash %lld: %s (retried in %d s)\n",
                        (long long)ids[done], e.msg, REGROUP_RETRY_S);
                retry = true;
                break;
            }
            if (r != SYMD_OK) /* it reads as it did when stored, or not at all: left as filed */
                fprintf(stderr, "symd: crash %lld stays in its group: %s\n",
                        (long long)ids[done], e.msg);
            pass_read++;
            pass_moved += moved;
        }
        if (done && store_regroup_done(g->st, ids, done, &err) != SYMD_OK) {
            fprintf(stderr, "symd: refiling crashes: %s (retried in %d s)\n", err.msg,
                    REGROUP_RETRY_S);
            retry = true;
        }
        if (retry) {
            if (wait_for(g, REGROUP_RETRY_S))
                break;
            continue;
        }
        /* Requests' writers get their turn between batches. */
        struct timespec pause = {0, REGROUP_PAUSE_MS * 1000000L};
        nanosleep(&pause, NULL);
    }
    return NULL;
}

/* Contract in regroup.h. */
regroup *regroup_start(store *st, symd_err *err)
{
    regroup *g = calloc(1, sizeof *g);
    if (!g) {
        symd_fail(err, SYMD_E_NOMEM, "out of memory");
        return NULL;
    }
    g->st = st;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    if (pthread_create(&g->thread, NULL, run, g) != 0) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
        free(g);
        symd_fail(err, SYMD_E_IO, "cannot start the thread that refiles crashes");
        return NULL;
    }
    return g;
}

/* Contract in regroup.h. */
void regroup_stop(regroup *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

/* Contract in regroup.h. */
size_t regroup_list_image(store *st, const char *name, const uint8_t uuid[16])
{
    /* The places a signature may name it by: the names the crashes give it
     * (the report's, which the upload's need not be), the upload's, and its
     * UUID (an image a report does not name). */
    char names[REGROUP_NAMES + 2][256];
    size_t n = 0;
    symd_err err = {0};
    if (store_crash_image_names(st, uuid, names, REGROUP_NAMES, &n, &err) != SYMD_OK)
        fprintf(stderr, "symd: the names crashes give an image: %s\n", err.msg);
    if (name && *name)
        snprintf(names[n++], sizeof names[0], "%s", name);
    uuid_format(uuid, names[n++]);
    size_t queued = 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(names[k], names[i]) == 0;
        if (seen)
            continue;
        /* the place form of signature.c's frame_place */
        char prefix[300];
        snprintf(prefix, sizeof prefix, "%.256s + 0x", names[i]);
        size_t q = 0;
        symd_err e = {0};
        if (store_regroup_queue_prefix(st, prefix, &q, &e) != SYMD_OK)
            fprintf(stderr, "symd: crashes grouped under %s stay there until read: %s\n",
                    prefix, e.msg);
        queued += q;
    }
    return queued;
}

/* Contract in regroup.h. */
void regroup_image(regroup *g, const char *name, const uint8_t uuid[16])
{
    if (g && regroup_list_image(g->st, name, uuid))
        regroup_wake(g);
}

/* Contract in regroup.h. */
void regroup_wake(regroup *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->woken = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

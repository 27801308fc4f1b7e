/* The grouping rules file: loading, reloading and watching (grouping_file.h). */
#include "grouping_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Contract in grouping_file.h. */
symd_status grouping_load_file(const char *path, grouping_rules **out, symd_err *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return symd_fail(err, SYMD_E_IO, "%.200s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return symd_fail(err, SYMD_E_IO, "%.200s: not a regular file", path);
    }
    if (st.st_size > (off_t)GROUPING_FILE_MAX) {
        close(fd);
        return symd_fail(err, SYMD_E_TOO_LARGE, "%.200s: larger than %u bytes", path,
                         GROUPING_FILE_MAX);
    }
    /* one byte more than the limit: a file that grew since fstat is caught */
    char *buf = malloc(GROUPING_FILE_MAX + 1);
    if (!buf) {
        close(fd);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    size_t len = 0;
    for (;;) {
        ssize_t k = read(fd, buf + len, GROUPING_FILE_MAX + 1 - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return symd_fail(err, SYMD_E_IO, "%.200s: %s", path, strerror(e));
        }
        if (k == 0 || (len += (size_t)k) > GROUPING_FILE_MAX)
            break;
    }
    close(fd);
    size_t line;
    symd_err e = {0};
    symd_status r = grouping_parse(buf, len, out, &line, &e);
    free(buf);
    if (r == SYMD_OK)
        return SYMD_OK;
    if (line)
        return symd_fail(err, r, "%.200s:%zu: %s", path, line, e.msg);
    return symd_fail(err, r, "%.200s: %s", path, e.msg);
}

/* What identifies one version of the file. */
typedef struct {
    bool exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} file_id;

static file_id file_id_of(const char *path)
{
    file_id f = {0};
    struct stat st;
    if (stat(path, &st) == 0) {
        f.exists = true;
        f.dev = st.st_dev;
        f.ino = st.st_ino;
        f.size = st.st_size;
        f.mtime = st.st_mtim;
    }
    return f;
}

static bool file_id_same(const file_id *a, const file_id *b)
{
    return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino &&
           a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
           a->mtime.tv_nsec == b->mtime.tv_nsec;
}

struct grouping_watch {
    char *path; /* NULL: no rules file */
    store *st;
    regroup *rg;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu; /* the fields below; held through a reload, which it serializes */
    pthread_cond_t cv;
    bool stop;
    file_id seen;       /* the version last read (or tried) */
    bool synced;        /* the digest in force is noted in the store */
    grouping_watch_status status;
};

/* Notes the digest in force in the store (under w->mu); on a change the
 * worker refiles every crash. false when the store failed (retried by the
 * watcher). */
static bool sync_store(grouping_watch *w)
{
    bool changed = false;
    symd_err err = {0};
    if (store_grouping_rules_changed(w->st, w->status.digest, &changed, &err) != SYMD_OK) {
        fprintf(stderr, "symd: noting the grouping rules in the database: %s (retried)\n",
                err.msg);
        return w->synced = false;
    }
    if (changed) {
        fprintf(stderr, "symd: the grouping rules changed (%zu rules): every stored crash is "
                        "refiled under them in the background\n",
                w->status.rules);
        regroup_wake(w->rg);
    }
    return w->synced = true;
}

/* Reads the file again (under w->mu). */
static void reload_locked(grouping_watch *w, const char *why)
{
    w->seen = file_id_of(w->path);
    grouping_rules *g;
    symd_err err = {0};
    w->status.reloads++;
    if (grouping_load_file(w->path, &g, &err) != SYMD_OK) {
        w->status.failed_reloads++;
        snprintf(w->status.error, sizeof w->status.error, "%s", err.msg);
        fprintf(stderr, "symd: grouping rules not reloaded (%s), the %zu in force stay: %s\n",
                why, w->status.rules, err.msg);
        return;
    }
    bool same = strcmp(grouping_digest(g), w->status.digest) == 0;
    w->status.error[0] = 0;
    w->status.rules = grouping_count(g);
    snprintf(w->status.digest, sizeof w->status.digest, "%s", grouping_digest(g));
    w->status.loaded_at = store_now_ms();
    grouping_activate(g);
    fprintf(stderr, "symd: grouping rules reloaded (%s): %zu rules%s\n", why, w->status.rules,
            same ? ", unchanged" : "");
    if (!same || !w->synced)
        sync_store(w);
}

/* Contract in grouping_file.h. */
void grouping_watch_reload(grouping_watch *w, const char *why)
{
    if (!w || !w->path)
        return;
    pthread_mutex_lock(&w->mu);
    reload_locked(w, why);
    pthread_mutex_unlock(&w->mu);
}

/* Looks at the file every GROUPING_WATCH_MS; reads it again when its
 * inode, size or time changed (an editor's rename, a write in place). */
static void *watch(void *arg)
{
    grouping_watch *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)GROUPING_WATCH_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        while (!w->stop && pthread_cond_timedwait(&w->cv, &w->mu, &until) != ETIMEDOUT)
            ;
        if (w->stop)
            break;
        file_id now = file_id_of(w->path);
        if (!file_id_same(&now, &w->seen))
            reload_locked(w, "the file changed");
        else if (!w->synced)
            sync_store(w);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Contract in grouping_file.h. */
grouping_watch *grouping_watch_start(const char *path, grouping_rules *loaded, store *st,
                                     regroup *rg, symd_err *err)
{
    grouping_watch *w = calloc(1, sizeof *w);
    if (!w || (path && !(w->path = strdup(path)))) {
        free(w);
        grouping_free(loaded);
        symd_fail(err, SYMD_E_NOMEM, "out of memory");
        return NULL;
    }
    w->st = st;
    w->rg = rg;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->status.configured = path != NULL;
    snprintf(w->status.path, sizeof w->status.path, "%s", path ? path : "");
    w->status.rules = grouping_count(loaded);
    snprintf(w->status.digest, sizeof w->status.digest, "%s", grouping_digest(loaded));
    w->status.loaded_at = store_now_ms();
    if (path)
        w->seen = file_id_of(path);
    grouping_activate(loaded);
    bool changed = false;
    if (store_grouping_rules_changed(st, w->status.digest, &changed, err) != SYMD_OK) {
        grouping_watch_stop(w);
        return NULL;
    }
    w->synced = true;
    if (changed) {
        fprintf(stderr, "symd: the grouping rules differ from those the database's crashes "
                        "were filed under: any stored crash is refiled in the background\n");
        regroup_wake(rg);
    }
    if (path) {
        if (pthread_create(&w->thread, NULL, watch, w) != 0) {
            grouping_watch_stop(w);
            symd_fail(err, SYMD_E_IO, "cannot start the thread that watches %s", path);
            return NULL;
        }
        w->started = true;
    }
    return w;
}

/* Contract in grouping_file.h. */
void grouping_watch_get(grouping_watch *w, grouping_watch_status *out)
{
    memset(out, 0, sizeof *out);
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    *out = w->status;
    pthread_mutex_unlock(&w->mu);
}

/* Contract in grouping_file.h. */
void grouping_watch_stop(grouping_watch *w)
{
    if (!w)
        return;
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->path);
    free(w);
}

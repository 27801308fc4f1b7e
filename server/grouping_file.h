/* The grouping rules file of a server (--grouping-rules FILE): read at
 * start (a broken file refuses the start), read again on SIGHUP and when
 * the file changes (a watcher thread looks every GROUPING_WATCH_MS), a
 * broken reload keeping the rules in force; the rules' digest noted in the
 * store, which lists every crash to file again when it changed. */
#ifndef SYMD_GROUPING_FILE_H
#define SYMD_GROUPING_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include "../store/store.h"
#include "grouping.h"
#include "regroup.h"

#define GROUPING_WATCH_MS 1000 /* between two looks at the file's size, time and inode */

/* Reads and parses the rules file at path. Errors say where: "PATH:LINE:
 * why" for a line that broke it, "PATH: why" for the file as a whole
 * (unreadable, larger than GROUPING_FILE_MAX). */
symd_status grouping_load_file(const char *path, grouping_rules **out, symd_err *err);

typedef struct grouping_watch grouping_watch;

/* Makes loaded (grouping_load_file's for path; NULL with path NULL: no
 * rules) the active rules, notes their digest in st (listing every crash to
 * refile, and waking rg, when the database's crashes were filed under
 * other rules) and, with a path, starts watching it. NULL with err set
 * when the store cannot note the digest or the thread cannot start; loaded
 * is taken either way. */
grouping_watch *grouping_watch_start(const char *path, grouping_rules *loaded, store *st,
                                     regroup *rg, symd_err *err);

/* Reads the file again now (SIGHUP): a broken file keeps the rules in
 * force, logs "PATH:LINE: why" and shows it in the status. No-op without a
 * path. */
void grouping_watch_reload(grouping_watch *w, const char *why);

typedef struct {
    bool configured;       /* a rules file was given */
    char path[512];
    size_t rules;          /* in force */
    char digest[33];       /* of the rules in force ("" for none) */
    int64_t loaded_at;     /* ms since the epoch the rules in force were read */
    uint64_t reloads, failed_reloads;
    char error[300];       /* the last reload's error, "" when it read */
} grouping_watch_status;

void grouping_watch_get(grouping_watch *w, grouping_watch_status *out);

/* Stops watching and frees w (NULL: no-op); the active rules stay. */
void grouping_watch_stop(grouping_watch *w);

#endif

/* Crashes filed again, in the background, under the signature they read as
 * now. The store lists the crashes to file again (store_regroup_next): all
 * of them after an upgrade that brings a new grouping rule (schema 7: the
 * app's own frames and the exception type), and those of groups keyed by
 * an image's place ("MyApp + 0x1a2b") once that image is uploaded. One
 * worker thread per server takes them off the list, newest first (several
 * servers on one PostgreSQL database share the list); each is
 * read again, symbolicated and refiled with store_update_crash, which moves
 * its counters in the same transaction, so group counts stay exact
 * whatever the worker, the requests (a read refiles too) or other nodes do
 * meanwhile. Listings show the old groups of the crashes not reached yet. */
#ifndef SYMD_REGROUP_H
#define SYMD_REGROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "../store/store.h"

#define REGROUP_BATCH 32     /* crashes read again between two looks at the list */
#define REGROUP_PAUSE_MS 5   /* between batches: writers waiting get their turn */
#define REGROUP_RETRY_S 10   /* after the store failed: the next try */
#define REGROUP_IDLE_S 60    /* with nothing listed: the next look (other processes list too) */
#define REGROUP_NAMES 8      /* names crashes give one image, looked for after its upload */

typedef struct regroup regroup;

/* Starts the worker on st (it runs until regroup_stop); NULL with err set
 * when the thread cannot start. */
regroup *regroup_start(store *st, symd_err *err);

/* Stops the worker after the crash it is reading, and frees it (NULL: no-op). */
void regroup_stop(regroup *g);

/* After an upload stored something new of an image (name, may be NULL, and
 * uuid): lists in st the crashes of the groups keyed by a place in it
 * ("Name + 0x…" by the name the crashes give it or the upload's, "UUID +
 * 0x…": the signature of a crash nothing named);
 * returns how many were listed. Errors are logged: the upload stands, and
 * a read refiles a crash anyway. For `symd upload` too: a server on the
 * same database takes them within REGROUP_IDLE_S. */
size_t regroup_list_image(store *st, const char *name, const uint8_t uuid[16]);

/* regroup_list_image, then wakes the worker when it listed any (g NULL:
 * nothing at all). */
void regroup_image(regroup *g, const char *name, const uint8_t uuid[16]);

/* Wakes the worker to look at the list now (g NULL: no-op). */
void regroup_wake(regroup *g);

/* Files stored crash id under what it reads as now (parsed, symbolicated
 * with the names symd shows); *moved when its signature or kind changed.
 * A crash that is gone is SYMD_OK, not moved. Errors: the store's, the
 * parser's for an original that no longer reads, SYMD_E_NOMEM. */
symd_status regroup_crash(store *st, int64_t id, bool *moved, symd_err *err);

#endif

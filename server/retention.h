/* Crash retention: a background thread that prunes the oldest stored
 * crashes past an age or a count, in small transactions so requests never
 * wait long behind it, and expires chunks of uploads in parts that were
 * never assembled. */
#ifndef SYMD_RETENTION_H
#define SYMD_RETENTION_H

#include <stdint.h>

#include "../store/store.h"

typedef struct retention retention;

/* Crashes deleted per transaction, and the pause between two batches in
 * which waiting writes go first: a request waits at most about one batch. */
#define RETENTION_BATCH 500
#define RETENTION_PAUSE_MS 5

/* Starts pruning st every every_s seconds (and once at start): crashes
 * older than keep_days days (0: no age limit) and those beyond the newest
 * max_crashes (0: no count limit), and chunks of uploads in parts stored
 * (or renewed) more than chunk_ttl_s seconds ago (0: kept). NULL (nothing
 * started) when all three are 0, or when the thread cannot start (then
 * *err says so). */
retention *retention_start(store *st, uint64_t keep_days, uint64_t max_crashes,
                           unsigned every_s, uint64_t chunk_ttl_s, symd_err *err);

/* Stops the thread (a batch under way finishes) and frees r; NULL is fine. */
void retention_stop(retention *r);
/* Crashes pruned so far. */
uint64_t retention_pruned(const retention *r);

#endif

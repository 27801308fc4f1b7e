/* Upload pipeline: file bytes → validated slices → symbol indexes → one
 * store transaction. Shared by the HTTP server and `symd upload`. */
#ifndef SYMD_INGEST_H
#define SYMD_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "store.h"

/* Slices parsed and indexed but not stored yet, from one or more files. */
typedef struct {
    store_put *puts;
    uint8_t **blobs; /* owned symbol index blobs, one per put */
    uint8_t **lines; /* owned line index blobs (NULL: no DWARF), one per put */
    size_t n, cap;
} ingest_batch;

void ingest_batch_init(ingest_batch *b);
void ingest_batch_free(ingest_batch *b);

/* Parses every slice of one file, converts its symbols and (for a dSYM) its
 * DWARF, and adds it to the batch; a slice already in the batch under the
 * same (UUID, arch) merges with it (a binary and its dSYM in one upload).
 * name_hint (a file name, may be NULL) names executables; dylibs use their
 * install name. On error nothing from this file is added. Errors:
 * SYMD_E_NOT_MACHO, SYMD_E_NO_UUID, SYMD_E_CORRUPT, SYMD_E_BAD_DEBUG_INFO,
 * SYMD_E_UNSUPPORTED, SYMD_E_TOO_LARGE, SYMD_E_NOMEM. */
symd_status ingest_add_file(ingest_batch *b, const uint8_t *buf, size_t len,
                            const char *name_hint, symd_err *err);

/* Stores the whole batch in one transaction. results/stored need b->n slots. */
symd_status ingest_commit(store *s, ingest_batch *b, store_put_result *results,
                          store_image *stored, symd_err *err);

#endif

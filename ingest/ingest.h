/* Upload pipeline: file bytes → validated slices → symbol indexes → one
 * store transaction. Shared by the HTTP server and `symd upload`. A file is
 * a Mach-O (thin or fat, binary or dSYM), a zip of them, or a Breakpad .sym
 * (breakpad/image.h), each recognized by content. */
#ifndef SYMD_INGEST_H
#define SYMD_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "../store/store.h"
#include "unzip.h"

/* What reading a slice's file noticed without refusing it (a .sym's
 * warnings, breakpad/sym.h), for the upload's answer. */
#define INGEST_MAX_WARNINGS 8
typedef struct {
    size_t n; /* kinds of warnings; the first INGEST_MAX_WARNINGS in text */
    char text[INGEST_MAX_WARNINGS][160];
} ingest_warnings;

/* Slices parsed and indexed but not stored yet, from one or more files. */
typedef struct {
    store_put *puts;
    uint8_t **blobs; /* owned symbol index blobs, one per put */
    uint8_t **lines; /* owned line index blobs (NULL: no DWARF), one per put */
    uint8_t **unwind; /* owned unwind tables (NULL: none, e.g. a dSYM), one per put */
    size_t unwind_warnings; /* damaged unwind-table parts skipped, over the batch */
    char unwind_warning[200]; /* the first of them, with its slice and place */
    uint8_t **extra_data; /* owned extra blob (a .sym's STACK CFI), NULL: none */
    store_blob *extra;    /* its kind and length; ingest_commit points
                             puts[i].extra here */
    ingest_warnings **warn; /* owned, NULL: nothing to say */
    size_t n, cap;
} ingest_batch;

void ingest_batch_init(ingest_batch *b);
void ingest_batch_free(ingest_batch *b);

/* Parses every slice of one file, converts its symbols and (for a dSYM) its
 * DWARF, and adds it to the batch; a slice already in the batch under the
 * same (UUID, arch) merges with it (a binary and its dSYM in one upload),
 * as the store merges uploads (store_merge_plan). A Breakpad .sym (its
 * first line "MODULE ") is one slice, stored under its MODULE's debug id
 * and arch, kind "breakpad", named by the MODULE; its errors say
 * "Breakpad .sym: line N: ..." and are SYMD_E_CORRUPT, SYMD_E_UNSUPPORTED
 * (an OS or arch symd does not store), SYMD_E_NO_UUID, SYMD_E_TOO_LARGE.
 * name_hint (a file name, may be NULL) names executables; dylibs use their
 * install name. A binary's unwind rows (unwind/unwind.h) are extracted here,
 * once; damage in its unwind tables is counted in b->unwind_warnings, not an
 * error. On error no slice of this file is left in the batch, but one
 * merged into an earlier entry may have changed it: an upload that fails is
 * dropped whole (ingest_batch_free), never committed. Errors:
 * SYMD_E_NOT_MACHO, SYMD_E_NO_UUID, SYMD_E_CORRUPT, SYMD_E_BAD_DEBUG_INFO,
 * SYMD_E_UNSUPPORTED, SYMD_E_TOO_LARGE, SYMD_E_NOMEM. */
symd_status ingest_add_file(ingest_batch *b, const uint8_t *buf, size_t len,
                            const char *name_hint, symd_err *err);

/* Adds a slice indexed elsewhere (an image of a dyld shared cache): p's
 * metadata with blob, its symbol index of len bytes, which the batch takes
 * (freed with the batch, or at once on error); no line index. SYMD_E_NOMEM. */
symd_status ingest_add_indexed(ingest_batch *b, const store_image *meta, uint8_t *blob,
                               size_t len, symd_err *err);

/* What ingest_add_upload found, for messages and replies. */
typedef struct {
    bool zip;           /* the upload was a zip archive */
    bool zip_corrupt;   /* the SYMD_E_CORRUPT returned is about the archive
                           itself (a malformed zip), not about a Mach-O member */
    bool sym_failed;    /* the error returned is about a Breakpad .sym */
    size_t members;     /* file members read from the archive */
    size_t macho;       /* of which Mach-O (the rest were skipped) */
    size_t sym;         /* Breakpad .sym files read (the upload or members) */
} ingest_upload_info;

/* Adds one uploaded file, recognized by content: a zip archive (see
 * unzip_is_zip) has every Mach-O member (thin or fat, e.g. the DWARF file of
 * each .dSYM bundle inside, nested ones included) and every Breakpad .sym
 * member added as by ingest_add_file, named by the member's last path
 * component; other members (Info.plist, ...) are skipped. Anything else
 * goes to ingest_add_file as it is. One member's error fails the whole upload, with the member's path in
 * the message. On error nothing from this upload is added. lim bounds the
 * archive (NULL: the defaults); info may be NULL.
 * Errors: those of ingest_add_file; SYMD_E_NOT_MACHO for an archive without
 * a Mach-O member; from the archive, SYMD_E_TOO_LARGE and SYMD_E_CORRUPT
 * (then info->zip_corrupt is set). */
symd_status ingest_add_upload(ingest_batch *b, const uint8_t *buf, size_t len,
                              const char *name_hint, const unzip_limits *lim,
                              ingest_upload_info *info, symd_err *err);

/* Stores the whole batch in one transaction. results/stored need b->n slots;
 * b->warn[i] still says what slice i's file warned of. */
symd_status ingest_commit(store *s, ingest_batch *b, store_put_result *results,
                          store_image *stored, symd_err *err);

#endif

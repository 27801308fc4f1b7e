/* symd import: Apple's system libraries into the store, as symbol sets
 * (store.h): a DeviceSupport folder, a folder of them, a dyld shared cache,
 * or (over HTTP) a zip of a DeviceSupport folder.
 *
 * Files are read one at a time and their slices stored in batches, each
 * batch one transaction: a run holds one file and one batch, whatever the
 * size of the tree, and a run cut short resumes by running it again. A file
 * whose slices are all stored (this set's, another's, a user's upload) is
 * only linked to the set, having had just its headers read; a new one is
 * read only where its symbols are (import/peek.h). One file's error is
 * reported and counted, and the import goes on. */
#ifndef SYMD_IMPORT_H
#define SYMD_IMPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../ingest/unzip.h"
#include "../store/store.h"
#include "../util/err.h"

typedef struct {
    /* Name every set imported (NULL or "": what the folder, its Info.plist
     * or the cache's header says). */
    const char *os_name, *os_version, *os_build;
    FILE *log;     /* errors of single files, warnings, progress; NULL: none */
    bool progress; /* a progress line on log about every second */
} import_options;

#define IMPORT_LISTED_ERRORS 32

typedef struct {
    uint64_t files;      /* regular files seen (of a cache: its files) */
    uint64_t slices;     /* Mach-O slices among them (of a cache: its images) */
    uint64_t stored;     /* slices stored now */
    uint64_t skipped;    /* slices stored already, linked to the set */
    uint64_t not_macho;  /* files that are not Mach-O */
    uint64_t errors;     /* files (or folders) that could not be imported */
    uint64_t bytes;      /* of the files seen */
    uint64_t bytes_read; /* of them read */
    uint64_t sets;       /* sets imported into */
    double seconds;
    store_symbol_set set; /* the last set imported into */
    /* The first errors: the file (or folder) and what is wrong. */
    struct {
        char file[256], msg[256];
    } listed[IMPORT_LISTED_ERRORS];
    size_t nlisted;
} import_report;

/* Imports path: a DeviceSupport folder (one holding Symbols/), a folder
 * holding such folders (each its own set), or a dyld shared cache's main
 * file (its subcaches and .symbols file beside it). r adds up (zero it
 * first). Errors: what makes path itself unimportable (SYMD_E_INVALID: no
 * DeviceSupport folder or cache, no OS name or build to name the set by;
 * SYMD_E_IO; a cache the reader refuses, naming the file and field, with
 * nothing of it stored), and database failures, which stop the import. */
symd_status import_path(store *s, const char *path, const import_options *o, import_report *r,
                        symd_err *err);

/* Imports a zip of one DeviceSupport folder (its members "<folder>/Symbols/...",
 * "<folder>/Info.plist", optionally under "<OS> DeviceSupport/", or
 * "Symbols/..." at the top) under the limits lim, as import_path would the
 * folder. Errors: those of unzip_each (a malformed zip: SYMD_E_CORRUPT),
 * SYMD_E_INVALID (no Symbols/ folder, several folders, no OS name or build
 * to name the set by), database failures. */
symd_status import_zip(store *s, const uint8_t *buf, size_t len, const unzip_limits *lim,
                       const import_options *o, import_report *r, symd_err *err);

/* The report's summary line: "files 3000, Mach-O slices 3000, stored ...". */
void import_summary(const import_report *r, char *out, size_t cap);

#endif

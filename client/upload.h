/* symd upload --url: uploads what a CI job built (binaries, dSYMs, Breakpad
 * .sym files, zips of them) to a symd server, sending only what the server
 * lacks, in content-addressed chunks (README: Uploads in parts). */
#ifndef SYMD_CLIENT_UPLOAD_H
#define SYMD_CLIENT_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *url;     /* http://HOST[:PORT][/PREFIX] */
    const char *token;   /* the upload role's token, or NULL */
    int jobs;            /* chunk uploads at once; 0: the server's advice */
    uint64_t chunk_size; /* 0: the server's chunk_size */
    int timeout_s;       /* per connect, read, write (default 60) */
    int retries;         /* per request after the first try (default 6) */
    bool plain;          /* one POST /v1/images per file, no chunks */
    bool json;           /* the summary as JSON on stdout */
    bool wait;           /* until every uploaded image answers present */
    int wait_s;          /* how long --wait waits (default 600) */
    int progress;        /* 1 bar, 0 none, -1 auto: a bar on a terminal, lines otherwise */
} up_opts;

/* Runs the upload of paths; prints progress on stderr and the summary on
 * stdout. Returns the exit status: 0 when every file found is on the
 * server, 1 when any failed (each named), 2 for a bad URL or options. */
int up_run(const up_opts *o, const char *const *paths, size_t npaths);

#endif

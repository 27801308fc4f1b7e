/* The HTTP API: libmicrohttpd daemon, routing, uploads and JSON replies. */
#ifndef SYMD_HTTP_H
#define SYMD_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "../store/unzip.h"

typedef struct {
    const char *listen;       /* "host:port", "[v6]:port" or "port"; port 0 = any */
    const char *db;           /* SQLite file */
    size_t cache_mb;          /* index cache bound */
    const char *upload_token; /* NULL: writes are open */
    uint64_t max_upload;      /* bytes per upload request */
    uint64_t max_json;        /* bytes per JSON request body */
    unzip_limits unzip;       /* zip uploads: entries, inflated bytes */
    int threads;              /* worker threads; 0 = one per core */
} server_config;

/* Serves until SIGINT or SIGTERM, then shuts down cleanly. Prints
 * "symd: listening on http://HOST:PORT" once ready. Returns a process exit
 * code. */
int server_run(const server_config *cfg);

#endif

/* libFuzzer target: the /v1/symbolicate request handler (JSON parse, image
 * resolution, lookups, response writing) against a store holding real
 * fixtures. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../server/symbolicate.h"
#include "../ingest/ingest.h"
#include "../util/jsonw.h"

static store *st;

static void load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_symbolicate: cannot open %s (run from the repo root)\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        exit(1);
    fclose(f);
    ingest_batch b;
    ingest_batch_init(&b);
    symd_err err = {0};
    store_put_result res[8];
    store_image stored[8];
    if (ingest_add_file(&b, buf, (size_t)n, path, &err) != SYMD_OK ||
        ingest_commit(st, &b, res, stored, &err) != SYMD_OK) {
        fprintf(stderr, "fuzz_symbolicate: %s: %s\n", path, err.msg);
        exit(1);
    }
    ingest_batch_free(&b);
    free(buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char db[] = "/tmp/symd-fuzz-XXXXXX";
    int fd = mkstemp(db);
    if (fd < 0)
        return 1;
    close(fd);
    symd_err err = {0};
    if (store_open(db, 1, 8u << 20, &st, &err) != SYMD_OK) {
        fprintf(stderr, "fuzz_symbolicate: %s\n", err.msg);
        exit(1);
    }
    unlink(db); /* the open handle keeps it alive for this process */
    load("fixtures/bin/bigapp-fat");
    load("fixtures/bin/libfix-arm64.dylib");
    load("fixtures/bin/strippy-arm64-stripped-x");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dynbuf out;
    dynbuf_init(&out, 64u << 20);
    symd_err err = {0};
    symd_status s = symbolicate_json(st, (const char *)data, size, size & 1, &out, NULL, &err);
    /* Only request errors are acceptable; anything else is our bug. */
    if (s != SYMD_OK && s != SYMD_E_INVALID && s != SYMD_E_TOO_LARGE)
        __builtin_trap();
    if (s == SYMD_OK && (out.len == 0 || out.data[0] != '{'))
        __builtin_trap();
    dynbuf_free(&out);
    return 0;
}

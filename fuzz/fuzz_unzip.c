/* libFuzzer target: zip archives over arbitrary bytes, with small limits,
 * as an upload reads them (archive → members → Mach-O reader → batch). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../ingest/ingest.h"
#include "../ingest/unzip.h"

typedef struct {
    uint64_t total, members;
    const unzip_limits *lim;
} seen;

static symd_status member(void *ctx, const char *name, const uint8_t *data, size_t len,
                          symd_err *err)
{
    (void)err;
    seen *s = ctx;
    s->total += len;
    s->members++;
    /* Every byte handed out must be readable, the name a C string. */
    volatile uint8_t x = (uint8_t)strlen(name);
    for (size_t i = 0; i < len; i += 509)
        x ^= data[i];
    if (len)
        x ^= data[len - 1];
    (void)x;
    if (len > s->lim->max_member || s->total > s->lim->max_total ||
        s->members > s->lim->max_members)
        __builtin_trap(); /* a limit was not enforced */
    return SYMD_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* members past 64 KiB take the temporary-file path */
    const unzip_limits lim = {.max_members = 64, .max_total = 1u << 20,
                              .max_member = 256u << 10, .spill_at = 64u << 10};
    seen s = {0, 0, &lim};
    symd_err err = {0};
    unzip_each(data, size, &lim, member, &s, &err);

    ingest_batch b;
    ingest_batch_init(&b);
    symd_err_clear(&err);
    if (ingest_add_upload(&b, data, size, "fuzz", &lim, NULL, &err) != SYMD_OK &&
        b.n != 0)
        __builtin_trap(); /* a failed upload must leave nothing behind */
    ingest_batch_free(&b);
    return 0;
}

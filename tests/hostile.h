/* Hostile variants of the real fixtures: each a real binary with one field
 * broken the way a corrupt or malicious upload would break it. */
#ifndef SYMD_HOSTILE_H
#define SYMD_HOSTILE_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

typedef struct {
    char name[64];
    uint8_t *buf; /* owned */
    size_t len;
    symd_status want;   /* what the parser pipeline must answer */
    unsigned http;      /* the status POST /v1/images must answer */
    const char *code;   /* and its error code */
} hostile_case;

/* Builds the cases (caller frees with hostile_free). Returns count. */
size_t hostile_build(hostile_case **out);
void hostile_free(hostile_case *c, size_t n);

/* Runs parse_slices → parse_image → symindex_build over every slice, as an
 * upload does, and returns the first failure (SYMD_OK if all passed). */
symd_status hostile_pipeline(const uint8_t *buf, size_t len, symd_err *err);

#endif

/* Symbolication of a parsed backtrace against the store, written as the
 * /v1/symbolicate response. Shared by the HTTP route and the fuzz target. */
#ifndef SYMD_SYMBOLICATE_H
#define SYMD_SYMBOLICATE_H

#include "../parser/backtrace.h"
#include "../store/store.h"
#include "../util/dynbuf.h"
#include "../util/err.h"

typedef struct {
    uint64_t symbolicated, missing_image, unknown_image, no_symbol;
} symbolicate_counts;

/* Writes the response JSON for req into out. Errors: SYMD_E_INVALID for a
 * request the store cannot answer as asked (an arch needed), SYMD_E_TOO_LARGE
 * when out's limit is hit, store errors otherwise. counts may be NULL. */
symd_status symbolicate(store *s, const bt_request *req, dynbuf *out,
                        symbolicate_counts *counts, symd_err *err);

/* bt_parse + symbolicate. */
symd_status symbolicate_json(store *s, const char *body, size_t len, dynbuf *out,
                             symbolicate_counts *counts, symd_err *err);

#endif

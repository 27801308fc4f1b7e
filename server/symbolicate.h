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

/* The address a lookup uses for a frame address as sent (answers keep the
 * address as sent). arch is the image's ("arm64e", "x86_64", ...), else the
 * report's or request's; NULL or "" when not known.
 *   - kernel addresses (>= 0xFFFF000000000000) are left alone;
 *   - arm64, arm64e, arm64_32: pointer-authentication bits are stripped,
 *     addr & 0x0000007FFFFFFFFF (39-bit user VA: every Mach-O image of iOS
 *     and of macOS on Apple Silicon is loaded below 2^39);
 *   - any other arch: a non-canonical address (bits 47..63 not all zero)
 *     becomes addr & 0x00007FFFFFFFFFFF;
 *   - arch unknown: a non-canonical address is taken for a PAC-signed arm64
 *     one (no other platform Apple ships puts bits there in user space) and
 *     masked to 39 bits; a canonical one is left alone (x86_64 loads the
 *     shared cache at 0x7fff...);
 *   - 32-bit ARM (arm, armv6, armv7*, thumb*): bit 0, the Thumb state bit of
 *     return addresses, is cleared. */
uint64_t symbolicate_lookup_address(uint64_t addr, const char *arch);

/* bt_parse + symbolicate; full_names: Swift names in their full form
 * (symbol), instead of the simplified one Xcode shows. */
symd_status symbolicate_json(store *s, const char *body, size_t len, bool full_names,
                             dynbuf *out, symbolicate_counts *counts, symd_err *err);

#endif

/* gzip bodies (RFC 1952, Content-Encoding: gzip) inflated in memory, with a
 * bound on what comes out. (buf, len) in, no I/O. */
#ifndef SYMD_GZIP_H
#define SYMD_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Whether buf starts with gzip's magic (1f 8b). */
bool gzip_is_gzip(const uint8_t *buf, size_t len);

/* Inflates every gzip member of in[0..n) (concatenated members are one
 * stream, as RFC 1952 says) into *out (*outlen bytes, NUL after them;
 * free() it). More than max bytes out: SYMD_E_TOO_LARGE, nothing kept. A
 * broken or cut stream: SYMD_E_CORRUPT saying where; SYMD_E_NOMEM. The
 * output's growth widens the thread's memory meter like a body's bytes
 * (mem_meter_widen), so inflated input is budgeted as if it had been sent
 * so; the bound is max. */
symd_status gzip_inflate(const uint8_t *in, size_t n, size_t max, uint8_t **out,
                         size_t *outlen, symd_err *err);

#endif

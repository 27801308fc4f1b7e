/* multipart/form-data bodies (RFC 7578) split into their parts: (buf, len)
 * in, no I/O, no copies (parts point into buf). The boundary is the first
 * line's ("--BOUNDARY"), so a body stored without its Content-Type header
 * is still read alike. */
#ifndef SYMD_MULTIPART_H
#define SYMD_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define MP_MAX_PARTS 1024
#define MP_MAX_NAME 255 /* bytes of a part's name or filename kept */

typedef struct {
    char name[MP_MAX_NAME + 1];     /* Content-Disposition's name="...", "" when none */
    bool has_filename;
    char filename[MP_MAX_NAME + 1]; /* its filename="..." */
    const uint8_t *data;            /* the part's bytes, into buf */
    size_t len;
} mp_part;

/* Whether buf starts as a multipart body does: "--" and a boundary of 1 to
 * 70 characters on the first line, then a part's headers. */
bool multipart_looks_like(const uint8_t *buf, size_t len);

/* The parts of buf[0..len), in order, into *parts (n of them; free()
 * them). SYMD_E_CORRUPT, saying where (byte offset), for a body that is no
 * multipart body or ends before its closing delimiter (the parts before
 * are then given, with *truncated set, and SYMD_OK); SYMD_E_TOO_LARGE past
 * MP_MAX_PARTS; SYMD_E_NOMEM. */
symd_status multipart_parse(const uint8_t *buf, size_t len, mp_part **parts, size_t *n,
                            bool *truncated, symd_err *err);

#endif

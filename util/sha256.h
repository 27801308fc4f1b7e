/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for signing webhook
 * bodies without linking a crypto library. */
#ifndef SYMD_SHA256_H
#define SYMD_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t len; /* bytes hashed so far */
    uint8_t buf[64];
    size_t nbuf;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t out[32]);
/* The digest of len bytes at data. */
void sha256(const void *data, size_t len, uint8_t out[32]);
/* HMAC-SHA256 of msg under key (any length: a key longer than the block is
 * hashed first, as RFC 2104 says). */
void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                 uint8_t out[32]);

#endif

/* SHA-256 (OpenSSL's libcrypto): one-shot and incremental, and the 64-digit
 * lowercase hex form the API names chunks and files by; HMAC-SHA256 for
 * webhook signatures. */
#ifndef SYMD_SHA256_H
#define SYMD_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_HEX_LEN 64

/* An incremental hash; opaque (libcrypto's EVP context). */
typedef struct sha256_ctx sha256_ctx;

/* A new context, started; NULL when out of memory. */
sha256_ctx *sha256_new(void);
/* Adds len bytes of data (len may be 0). */
void sha256_update(sha256_ctx *c, const void *data, size_t len);
/* The digest of everything added; the context is freed. */
void sha256_final(sha256_ctx *c, uint8_t out[SHA256_LEN]);
/* Frees a context without finishing it (NULL: no-op). */
void sha256_free(sha256_ctx *c);

/* The digest of len bytes of data. */
void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);

/* 64 lowercase hex digits and a NUL into hex. */
void sha256_hex(const uint8_t d[SHA256_LEN], char hex[SHA256_HEX_LEN + 1]);
/* Exactly 64 hex digits (any case) of s, NUL-terminated, into out; false
 * for anything else. */
bool sha256_parse_hex(const char *s, uint8_t out[SHA256_LEN]);

/* HMAC-SHA256 (RFC 2104) of msg under key (any length: a key longer than
 * the block is hashed first); the webhook signature. */
void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                 uint8_t out[SHA256_LEN]);

#endif

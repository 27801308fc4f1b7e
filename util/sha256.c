/* SHA-256 through libcrypto's EVP interface (the low-level SHA256_* calls
 * are deprecated in OpenSSL 3). */
#include "sha256.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"

struct sha256_ctx {
    EVP_MD_CTX *md;
};

sha256_ctx *sha256_new(void)
{
    sha256_ctx *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    c->md = EVP_MD_CTX_new();
    if (!c->md || EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(c->md);
        free(c);
        return NULL;
    }
    return c;
}

void sha256_update(sha256_ctx *c, const void *data, size_t len)
{
    if (len)
        EVP_DigestUpdate(c->md, data, len);
}

void sha256_final(sha256_ctx *c, uint8_t out[SHA256_LEN])
{
    unsigned n = SHA256_LEN;
    EVP_DigestFinal_ex(c->md, out, &n);
    sha256_free(c);
}

void sha256_free(sha256_ctx *c)
{
    if (!c)
        return;
    EVP_MD_CTX_free(c->md);
    free(c);
}

void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
    unsigned n = SHA256_LEN;
    /* EVP_Digest needs a non-NULL pointer even for no bytes */
    EVP_Digest(len ? data : "", len, out, &n, EVP_sha256(), NULL);
}

void sha256_hex(const uint8_t d[SHA256_LEN], char hex[SHA256_HEX_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < SHA256_LEN; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[SHA256_HEX_LEN] = 0;
}

bool sha256_parse_hex(const char *s, uint8_t out[SHA256_LEN])
{
    if (!s || strlen(s) != SHA256_HEX_LEN)
        return false;
    for (int i = 0; i < SHA256_LEN; i++) {
        int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                 uint8_t out[SHA256_LEN])
{
    unsigned int n = SHA256_LEN;
    static const uint8_t none = 0; /* libcrypto wants a non-NULL key even when empty */
    if (!HMAC(EVP_sha256(), key_len ? key : &none, (int)key_len,
              msg_len ? msg : (const void *)&none, msg_len, out, &n))
        memset(out, 0, SHA256_LEN);
}

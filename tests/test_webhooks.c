/* Webhooks: SHA-256 and HMAC-SHA256 against FIPS 180-4 and RFC 4231
 * vectors, the URL and backoff rules, and the events' outbox end to end
 * against a receiver in this process (tests/test_e2e_webhooks.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/sha256.h"
#include "test.h"

static void hex32(const uint8_t d[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

TEST(webhooks_sha256_matches_fips_180_vectors)
{
    static const struct {
        const char *msg;
        const char *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopq"
         "rlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t d[32];
        char h[65];
        sha256(v[i].msg, strlen(v[i].msg), d);
        hex32(d, h);
        CHECK(strcmp(h, v[i].hex) == 0, "sha256 of vector %zu: %s", i, h);
        /* fed a byte at a time: the same */
        sha256_ctx c;
        sha256_init(&c);
        for (size_t k = 0; v[i].msg[k]; k++)
            sha256_update(&c, v[i].msg + k, 1);
        sha256_final(&c, d);
        hex32(d, h);
        CHECK(strcmp(h, v[i].hex) == 0, "sha256 of vector %zu byte by byte: %s", i, h);
    }
    /* a million 'a's (FIPS 180-2 appendix B.3), in uneven pieces */
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    sha256_ctx c;
    sha256_init(&c);
    for (size_t at = 0, step = 1; at < 1000000; at += step, step = step * 3 % 1000 + 1)
        sha256_update(&c, a + at, at + step > 1000000 ? 1000000 - at : step);
    uint8_t d[32];
    char h[65];
    sha256_final(&c, d);
    hex32(d, h);
    CHECK(strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
          "sha256 of a million a's: %s", h);
    free(a);
}

/* RFC 4231 section 4: test cases 1-4, 6 and 7 (5 truncates the output). */
TEST(webhooks_hmac_sha256_matches_rfc_4231)
{
    uint8_t k20[20], k25[25], k131[131], aa[20], d50[50], cd50[50];
    memset(k20, 0x0b, 20);
    for (int i = 0; i < 25; i++)
        k25[i] = (uint8_t)(i + 1);
    memset(k131, 0xaa, 131);
    memset(aa, 0xaa, 20);
    memset(d50, 0xdd, 50);
    memset(cd50, 0xcd, 50);
    static const char *big_msg =
        "This is a test using a larger than block-size key and a larger than block-size data. "
        "The key needs to be hashed before being used by the HMAC algorithm.";
    const struct {
        const void *key;
        size_t klen;
        const void *msg;
        size_t mlen;
        const char *hex;
    } v[] = {
        {k20, 20, "Hi There", 8,
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        {"Jefe", 4, "what do ya want for nothing?", 28,
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        {aa, 20, d50, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
        {k25, 25, cd50, 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
        {k131, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54,
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        {k131, 131, big_msg, strlen(big_msg),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t d[32];
        char h[65];
        hmac_sha256(v[i].key, v[i].klen, v[i].msg, v[i].mlen, d);
        hex32(d, h);
        CHECK(strcmp(h, v[i].hex) == 0, "RFC 4231 case %zu: %s", i, h);
    }
}

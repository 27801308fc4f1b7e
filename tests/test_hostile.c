/* The parser pipeline against broken and hostile input: every case fails
 * with its own error kind, never crashes, never reads out of bounds (the
 * sanitizer build checks the last part). */
#include <stdlib.h>
#include <string.h>

#include "hostile.h"
#include "test.h"

TEST(hostile_cases_fail_with_their_error_kind)
{
    hostile_case *c;
    size_t n = hostile_build(&c);
    CHECK(n >= 30, "only %zu hostile cases built", n);
    for (size_t i = 0; i < n; i++) {
        symd_err err = {0};
        symd_status st = hostile_pipeline(c[i].buf, c[i].len, &err);
        CHECK(st == c[i].want, "%s: got %s (%s), want %s", c[i].name,
              symd_status_name(st), err.msg, symd_status_name(c[i].want));
        CHECK(st == SYMD_OK || err.msg[0], "%s: error without a message", c[i].name);
        if (getenv("SYMD_TEST_VERBOSE"))
            printf("    %-36s %s\n", c[i].name, err.msg);
    }
    hostile_free(c, n);
}

/* Every prefix of real files is rejected as corrupt (or too short to be
 * Mach-O), at every single offset. */
TEST(hostile_every_truncation_is_rejected)
{
    const char *files[] = {"fixtures/bin/bigapp-arm64", "fixtures/bin/bigapp-fat",
                           "fixtures/bin/libfix-x86_64.dylib",
                           "fixtures/bin/strippy-arm64-stripped"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        size_t len;
        uint8_t *buf = read_fixture(files[k], &len);
        if (!buf)
            continue;
        size_t ok = 0, bad = 0;
        for (size_t cut = 0; cut < len; cut++) {
            /* A fresh allocation of exactly cut bytes, so ASan sees any
             * read past the end. */
            uint8_t *p = malloc(cut ? cut : 1);
            memcpy(p, buf, cut);
            symd_err err = {0};
            symd_status st = hostile_pipeline(p, cut, &err);
            if (st == SYMD_E_CORRUPT || st == SYMD_E_NOT_MACHO)
                ok++;
            else if (bad++ < 3)
                CHECK(0, "%s cut at %zu: %s", files[k], cut, symd_status_name(st));
            free(p);
        }
        CHECK(bad == 0, "%s: %zu of %zu truncations not rejected", files[k], bad, len);
        CHECK(ok == len, "%s: %zu/%zu", files[k], ok, len);
        symd_err err = {0};
        CHECK(hostile_pipeline(buf, len, &err) == SYMD_OK, "%s whole: %s", files[k], err.msg);
        free(buf);
    }
}

/* Single-byte flips all over the headers must never crash or hang; most are
 * harmless, the rest must fail cleanly. */
TEST(hostile_bit_flips_in_load_commands)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/bin/bigapp-fat", &len);
    if (!buf)
        return;
    size_t rejected = 0, accepted = 0;
    uint8_t *p = malloc(len);
    for (size_t off = 0; off < 0x1200 && off < len; off++) {
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(p, buf, len);
            p[off] ^= (uint8_t)(1u << bit);
            symd_err err = {0};
            symd_status st = hostile_pipeline(p, len, &err);
            if (st == SYMD_OK)
                accepted++;
            else
                rejected++;
            CHECK(st == SYMD_OK || st == SYMD_E_CORRUPT || st == SYMD_E_NOT_MACHO ||
                      st == SYMD_E_NO_UUID || st == SYMD_E_UNSUPPORTED,
                  "flip at %zu bit %d: %s", off, bit, symd_status_name(st));
        }
    }
    CHECK(rejected > 0 && accepted > 0, "flips: %zu rejected, %zu accepted", rejected,
          accepted);
    free(p);
    free(buf);
}

static void replay_macho(const char *rel, const uint8_t *buf, size_t len)
{
    symd_err err = {0};
    symd_status st = hostile_pipeline(buf, len, &err);
    CHECK(st != SYMD_E_NOMEM && st != SYMD_E_DB, "%s: %s", rel, symd_status_name(st));
}

/* Inputs the fuzzer once crashed on (fuzz/regress/macho-*) stay fixed. */
TEST(hostile_fuzz_regressions)
{
    CHECK(each_regression("macho-", replay_macho) > 0, "no regression inputs found");
}

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
        sha256_ctx *c = sha256_new();
        for (size_t k = 0; c && v[i].msg[k]; k++)
            sha256_update(c, v[i].msg + k, 1);
        if (c)
            sha256_final(c, d);
        hex32(d, h);
        CHECK(strcmp(h, v[i].hex) == 0, "sha256 of vector %zu byte by byte: %s", i, h);
    }
    /* a million 'a's (FIPS 180-2 appendix B.3), in uneven pieces */
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    sha256_ctx *c = sha256_new();
    for (size_t at = 0, step = 1; c && at < 1000000; at += step, step = step * 3 % 1000 + 1)
        sha256_update(c, a + at, at + step > 1000000 ? 1000000 - at : step);
    uint8_t d[32] = {0};
    char h[65];
    if (c)
        sha256_final(c, d);
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

/* ---- the outbox in the store, both backends ---- */

#include "../server/webhook.h"
#include "../store/store.h"
#include "harness.h"

#include <jansson.h>

/* group.regressed (emitted by the group-state code) recorded directly:
 * its data, its body and Slack text; then the lease rules on a delivery:
 * claimed once, finished only by its owner, retried, delivered. */
TEST(webhooks_store_group_regressed_and_the_lease_rules)
{
    char path[512];
    snprintf(path, sizeof path, "%s/hooks-store.db", test_tmpdir());
    const char *db = test_pg() ? pg_fresh_db("hooks_store") : path;
    if (!db)
        return;
    store *s = NULL;
    symd_err err = {0};
    CHECK(store_open(db, 2, 1 << 20, &s, &err) == SYMD_OK, "%s", err.msg);
    if (!s)
        return;
    int64_t ev = -1;
    /* no targets: nothing recorded */
    CHECK(store_hook_emit_group_regressed(s, "crash", "f | X", 7, "2.0", "1.9", 12, &ev, &err) ==
                  SYMD_OK &&
              ev == 0,
          "emit without targets: %lld %s", (long long)ev, err.msg);
    const char *urls[] = {"http://127.0.0.1:9/a", "http://127.0.0.1:9/b"};
    store_hooks h = {urls, 2, 0, 0};
    CHECK(store_set_hooks(s, &h, &err) == SYMD_OK, "%s", err.msg);
    CHECK(store_hook_emit_group_regressed(s, "crash", "-[A b] | EXC_CRASH (SIGABRT)", 7,
                                          "2.0 (5)", "1.9", 12, &ev, &err) == SYMD_OK &&
              ev == 1,
          "emit: %lld %s", (long long)ev, err.msg);
    store_delivery d, d2;
    bool found = false, kept = false;
    int64_t now = store_now_ms();
    CHECK(store_hook_claim(s, urls[1], now, now + 60000, 111, &d, &found, &err) == SYMD_OK &&
              found,
          "claim b: %s", err.msg);
    if (!found) {
        store_close(s);
        return;
    }
    CHECK(d.event_id == 1 && strcmp(d.type, "group.regressed") == 0 &&
              strcmp(d.url, urls[1]) == 0 && d.attempts == 0,
          "claimed %lld %s %s", (long long)d.event_id, d.type, d.url);
    json_error_t je;
    json_t *data = json_loads(d.data, 0, &je);
    json_t *g = json_object_get(data, "group"), *c = json_object_get(data, "crash");
    CHECK(strcmp(json_string_value(json_object_get(g, "kind")) ?: "", "crash") == 0 &&
              strcmp(json_string_value(json_object_get(g, "signature")) ?: "",
                     "-[A b] | EXC_CRASH (SIGABRT)") == 0 &&
              json_integer_value(json_object_get(c, "id")) == 7 &&
              strcmp(json_string_value(json_object_get(c, "app_version")) ?: "", "2.0 (5)") == 0 &&
              strcmp(json_string_value(json_object_get(data, "resolved_in")) ?: "", "1.9") == 0 &&
              json_integer_value(json_object_get(data, "count")) == 12,
          "data: %s", d.data);
    json_decref(data);
    char *body = webhook_body(&d, false), *slack = webhook_body(&d, true);
    json_t *b = json_loads(body ? body : "", 0, &je), *sl = json_loads(slack ? slack : "", 0, &je);
    CHECK(json_integer_value(json_object_get(b, "id")) == 1 &&
              strcmp(json_string_value(json_object_get(b, "type")) ?: "", "group.regressed") ==
                  0 &&
              json_integer_value(json_object_get(b, "created_at")) == d.event_at &&
              json_is_object(json_object_get(b, "data")),
          "body: %s", body);
    CHECK(strcmp(json_string_value(json_object_get(sl, "text")) ?: "",
                 "Regressed crash group (crash): -[A b] | EXC_CRASH (SIGABRT) - back in 2.0 (5) "
                 "(crash 7) [event 1]") == 0,
          "slack: %s", slack);
    json_decref(b);
    json_decref(sl);
    free(body);
    free(slack);
    /* a name from a report reaches Slack as text: no <link|...> of its own */
    store_delivery evil = d;
    evil.data = "{\"group\":{\"kind\":\"crash\",\"signature\":\"<http://x|y> & <!channel>\"},"
                "\"crash\":{\"id\":3,\"process\":\"P\",\"app_version\":\"1\"}}";
    snprintf(evil.type, sizeof evil.type, "group.new");
    slack = webhook_body(&evil, true);
    sl = json_loads(slack ? slack : "", 0, &je);
    CHECK(strcmp(json_string_value(json_object_get(sl, "text")) ?: "",
                 "New crash group (crash): &lt;http://x|y&gt; &amp; &lt;!channel&gt; - crash 3, "
                 "P 1 [event 1]") == 0,
          "slack escaped: %s", slack);
    json_decref(sl);
    free(slack);
    /* leased: no second claim of b; a's delivery is its own */
    CHECK(store_hook_claim(s, urls[1], now, now + 60000, 222, &d2, &found, &err) == SYMD_OK &&
              !found,
          "b claimed twice");
    CHECK(store_hook_claim(s, urls[0], now, now + 60000, 333, &d2, &found, &err) == SYMD_OK &&
              found && d2.event_id == 1,
          "claim a");
    store_delivery_free(&d2);
    /* only the owner finishes; a retry is due again at next_at */
    CHECK(store_hook_finish(s, d.id, 222, STORE_DELIVERY_DELIVERED, 0, 200, NULL, &kept, &err) ==
                  SYMD_OK &&
              !kept,
          "finished by another owner");
    CHECK(store_hook_finish(s, d.id, 111, STORE_DELIVERY_PENDING, now + 5000, 503, "answered 503",
                            &kept, &err) == SYMD_OK &&
              kept,
          "retry: %s", err.msg);
    store_delivery_free(&d);
    CHECK(store_hook_claim(s, urls[1], now + 4000, now + 60000, 444, &d, &found, &err) ==
                  SYMD_OK &&
              !found,
          "claimed before its next attempt");
    CHECK(store_hook_claim(s, urls[1], now + 5000, now + 60000, 444, &d, &found, &err) ==
                  SYMD_OK &&
              found && d.attempts == 1 && d.last_status == 503,
          "claimed at its next attempt");
    CHECK(store_hook_finish(s, d.id, 444, STORE_DELIVERY_DELIVERED, 0, 204, NULL, &kept, &err) ==
                  SYMD_OK &&
              kept,
          "delivered");
    int64_t did = d.id;
    store_delivery_free(&d);
    CHECK(store_hook_finish(s, did, 444, STORE_DELIVERY_FAILED, 0, 500, "late", &kept, &err) ==
                  SYMD_OK &&
              !kept,
          "a delivered delivery changed again");
    store_delivery rows[4];
    size_t n;
    bool more;
    CHECK(store_hook_list(s, 0, 4, rows, &n, &more, &err) == SYMD_OK && n == 2 && !more,
          "list: %zu", n);
    CHECK(n == 2 && rows[0].id == did && rows[0].state == STORE_DELIVERY_DELIVERED &&
              rows[0].attempts == 2 && rows[0].last_status == 204 && rows[0].done_at > 0 &&
              rows[1].state == STORE_DELIVERY_PENDING,
          "log rows");
    for (size_t i = 0; i < n; i++)
        store_delivery_free(&rows[i]);
    /* pruned once done long enough: the delivered one goes, the pending stays */
    CHECK(store_hook_prune(s, 0, store_now_ms() + 1, &err) == SYMD_OK, "%s", err.msg);
    CHECK(store_hook_list(s, 0, 4, rows, &n, &more, &err) == SYMD_OK && n == 1 &&
              rows[0].state == STORE_DELIVERY_PENDING,
          "after prune: %zu", n);
    for (size_t i = 0; i < n; i++)
        store_delivery_free(&rows[i]);
    store_close(s);
}

/* The target URLs symd accepts, and the backoff's doubling and cap. */
TEST(webhooks_urls_and_backoff)
{
    const char *ok[] = {"http://127.0.0.1:8080/hook", "http://h/", "http://h",
                        "http://[::1]:9/x?y=1", "http://h:65535"};
    const char *bad[] = {"https://h/x", "http://", "http://h:0/", "http://h:65536/",
                         "http://u:p@h/", "http://h/a b", "HTTP://h/", "http://[::1/x", "h/x"};
    char why[600];
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        CHECK(webhook_url_ok(ok[i], why, sizeof why), "%s refused: %s", ok[i], why);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!webhook_url_ok(bad[i], why, sizeof why), "%s accepted", bad[i]);
    char longurl[600] = "http://h/";
    memset(longurl + 9, 'a', 550);
    longurl[559] = 0;
    CHECK(!webhook_url_ok(longurl, why, sizeof why), "a 559-byte URL accepted");
    int64_t want[] = {1000, 2000, 4000, 8000, 16000, 30000, 30000};
    for (int a = 1; a <= 7; a++)
        CHECK(webhook_backoff_ms(a, 30000) == want[a - 1], "backoff after %d: %lld", a,
              (long long)webhook_backoff_ms(a, 30000));
    CHECK(webhook_backoff_ms(1000, 600000) == 600000, "capped");
    char sig[72];
    webhook_signature("Jefe", "what do ya want for nothing?", 28, sig);
    CHECK(strcmp(sig, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") ==
              0,
          "signature: %s", sig);
}

#include "../store/backend.h"

/* An event's data is valid JSON whatever a report gave: markup and quotes
 * escaped, a name of 10,000 bytes cut at a character's start. */
TEST(webhooks_event_data_escaped_and_bounded)
{
    char *huge = malloc(10001);
    for (int i = 0; i < 10000; i++) /* "é" 5,000 times */
        huge[i] = i % 2 ? (char)0xa9 : (char)0xc3;
    huge[10000] = 0;
    store_crash c = {0};
    c.kind = "crash";
    c.signature = "f \"x\" <b> | EXC_CRASH (SIGABRT)";
    c.process = huge;
    c.app_version = "1.0\n2";
    char *d = store_hook_data_group_new(&c, 42);
    json_error_t je;
    json_t *j = d ? json_loads(d, 0, &je) : NULL;
    CHECK(j, "not JSON: %.200s", d ? d : "(null)");
    json_t *cr = json_object_get(j, "crash");
    const char *proc = json_string_value(json_object_get(cr, "process"));
    CHECK(proc && strlen(proc) < 4096 && strlen(proc) >= 4000 && strlen(proc) % 2 == 0,
          "process cut to %zu bytes", proc ? strlen(proc) : 0);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(j, "group"), "signature")) ?: "",
                 c.signature) == 0 &&
              strcmp(json_string_value(json_object_get(cr, "app_version")) ?: "", "1.0\n2") == 0 &&
              json_integer_value(json_object_get(cr, "id")) == 42 &&
              json_is_null(json_object_get(cr, "bundle_id")),
          "data: %.300s", d);
    json_decref(j);
    free(d);
    free(huge);
}

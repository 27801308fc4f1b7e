/* util/membudget (memory meters, the pool every request shares) and
 * jsonbig_load_members (an .ips body read member by member, unknown large
 * values skipped unread). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../parser/crash.h"
#include "../util/jsonbig.h"
#include "../util/membudget.h"
#include "test.h"

TEST(meter_refuses_past_the_request_limit_and_says_why)
{
    mem_meter m;
    mem_meter_begin(&m, NULL, 1 << 20);
    void *a = mem_malloc(600 << 10);
    CHECK(a != NULL, "600 KiB within 1 MiB");
    CHECK(m.used >= (600u << 10) && m.used <= (600u << 10) + 8192, "used %llu",
          (unsigned long long)m.used);
    void *b = mem_malloc(600 << 10);
    CHECK(b == NULL, "1.2 MiB past a 1 MiB limit must fail");
    CHECK(m.trip == MEM_TRIP_REQUEST, "trip %d", (int)m.trip);
    CHECK(m.trip_want == 600u << 10, "want %llu", (unsigned long long)m.trip_want);
    mem_free(a);
    CHECK(m.used == 0, "freed: used %llu", (unsigned long long)m.used);
    void *c = mem_malloc(600 << 10);
    CHECK(c != NULL, "after the free it fits again");
    CHECK(m.trip == MEM_TRIP_REQUEST, "the first trip stays recorded");
    mem_free(c);
    CHECK(m.peak >= (600u << 10), "peak %llu", (unsigned long long)m.peak);
    mem_meter_end(&m);
    CHECK(mem_meter_current() == NULL, "ended");
    void *d = mem_malloc(4 << 20); /* no meter: plain malloc */
    CHECK(d != NULL, "unmetered");
    mem_free(d);
}

TEST(meter_takes_from_the_pool_in_steps_and_gives_back_at_end)
{
    mem_pool pool = {.max = 8 << 20};
    mem_meter m;
    mem_meter_begin(&m, &pool, UINT64_MAX);
    void *a = mem_malloc(100);
    CHECK(a != NULL, "small");
    CHECK(atomic_load(&pool.held) == 1u << 20, "one step granted: %llu",
          (unsigned long long)atomic_load(&pool.held));
    void *b = mem_malloc(5 << 20);
    CHECK(b != NULL, "5 MiB of 8");
    CHECK(atomic_load(&pool.held) == m.granted && m.granted >= m.used, "granted covers used");
    void *c = mem_malloc(4 << 20);
    CHECK(c == NULL, "past the pool");
    CHECK(m.trip == MEM_TRIP_POOL, "pool trip %d", (int)m.trip);
    /* realloc counts the new block before the old one goes */
    void *r = mem_realloc(a, 1 << 20);
    CHECK(r != NULL, "realloc within the pool");
    uint64_t before = m.used;
    mem_free(r);
    mem_free(b);
    CHECK(m.used < before && m.used == 0, "all freed: %llu", (unsigned long long)m.used);
    CHECK(mem_meter_transfer(&m, 1 << 20), "a granted MiB moves to the caller");
    uint64_t left = m.granted;
    mem_meter_end(&m);
    CHECK(atomic_load(&pool.held) == (1u << 20), "only the transferred MiB stays held: %llu",
          (unsigned long long)atomic_load(&pool.held));
    CHECK(left + (1u << 20) >= (6u << 20), "the grant was given back");
    mem_pool_give(&pool, 1 << 20);
    CHECK(atomic_load(&pool.held) == 0, "empty");
}

/* Two requests growing at once past the pool: the first the pool refuses
 * takes the overdraft and may go on within a grant of its own up to the
 * max; the other is refused at its next step; once the first ends, the
 * overdraft is free for the next. */
TEST(meter_overdraft_lets_one_of_the_growing_requests_finish)
{
    mem_pool pool = {.max = 8 << 20};
    mem_meter a, b;
    mem_meter_begin(&b, &pool, UINT64_MAX);
    b.floor = 0;
    mem_meter_begin(&a, &pool, UINT64_MAX);
    a.floor = 0;
    void *a1 = mem_malloc(3 << 20); /* a is current */
    mem_meter_swap(&b);
    void *b1 = mem_malloc(3 << 20);
    mem_meter_swap(&a);
    CHECK(a1 && b1 && atomic_load(&pool.held) <= 8u << 20, "3 + 3 MiB of 8");
    void *a2 = mem_malloc(3 << 20);
    CHECK(a2 && a.trip == MEM_TRIP_NONE && atomic_load(&pool.overdraft) == &a,
          "a goes past the pool's max with the overdraft: held %llu",
          (unsigned long long)atomic_load(&pool.held));
    mem_meter_swap(&b);
    void *b2 = mem_malloc(1 << 20);
    CHECK(!b2 && b.trip == MEM_TRIP_POOL, "b is refused at its next step");
    mem_free(b1);
    mem_meter_end(&b);
    CHECK(atomic_load(&pool.overdraft) == &a, "b's end leaves a's overdraft");
    mem_meter_swap(&a);
    void *a3 = mem_malloc(3 << 20);
    CHECK(!a3 && a.trip == MEM_TRIP_POOL, "a's own grant stays within the max");
    mem_free(a1);
    mem_free(a2);
    mem_meter_end(&a);
    CHECK(atomic_load(&pool.overdraft) == NULL && atomic_load(&pool.held) == 0,
          "a's end frees the overdraft and its grant: held %llu",
          (unsigned long long)atomic_load(&pool.held));
}

TEST(meter_limit_widens_for_inflated_input_and_saturates)
{
    CHECK(mem_request_limit(10, 4, 64) == 94, "4 x 10 + 64, less the body itself");
    CHECK(mem_request_limit(UINT64_MAX / 2, 4, 1) == UINT64_MAX, "saturates");
    mem_meter m;
    mem_meter_begin(&m, NULL, 1000);
    mem_meter_widen(&m, 100);
    CHECK(m.limit == 1000 + 100ull * mem_widen_factor, "widened %llu",
          (unsigned long long)m.limit);
    mem_meter_widen(&m, UINT64_MAX);
    CHECK(m.limit == UINT64_MAX, "saturates");
    mem_meter_end(&m);
    CHECK(mem_calloc(SIZE_MAX / 2, 4) == NULL, "calloc overflow refused");
}

/* jansson's allocations are counted once routed through the meter. */
TEST(meter_counts_json_documents)
{
    mem_use_for_json();
    mem_meter m;
    mem_meter_begin(&m, NULL, 256 << 10);
    size_t n = 200000;
    char *doc = malloc(n * 3 + 8);
    size_t o = 0;
    doc[o++] = '[';
    for (size_t i = 0; i < n; i++) {
        if (i)
            doc[o++] = ',';
        doc[o++] = '[';
        doc[o++] = ']';
    }
    doc[o++] = ']';
    mem_meter *saved = mem_meter_swap(NULL); /* the document itself is not the parse's */
    mem_meter_swap(saved);
    json_error_t e;
    json_t *j = json_loadb(doc, o, 0, &e);
    CHECK(j == NULL, "200,000 arrays do not fit 256 KiB of parse memory");
    CHECK(m.trip == MEM_TRIP_REQUEST, "trip %d", (int)m.trip);
    mem_meter_end(&m);
    j = json_loadb(doc, o, 0, &e);
    CHECK(j && json_array_size(j) == n, "unmetered it parses");
    json_decref(j);
    free(doc);
}

static bool knows_threads(const char *key) { return strcmp(key, "threads") == 0; }

TEST(load_members_skips_large_unknown_values_only)
{
    const char *big = "[[], [], [], \"]]]\\\"\", {}, [[[[[[]]]]]], \"}}}}\"]";
    char doc[512];
    snprintf(doc, sizeof doc,
             "{\"threads\": [1, 2, {\"a\": \"}\"}],\n \"small\": {\"k\": [1]},\n"
             "  \"big\": %s, \"n\": 18446744073709551615}", big);
    size_t skipped;
    json_error_t e;
    /* 32 bytes for unknown values: "small" (10) and "n" (20) fit, "big" not */
    json_t *j = jsonbig_load_members(doc, strlen(doc), knows_threads, 32, &skipped, &e);
    CHECK(j != NULL, "parses: %s", j ? "" : e.text);
    CHECK(skipped == 1, "one value skipped: %zu", skipped);
    uint64_t bytes = 0;
    CHECK(json_array_size(json_object_get(j, "threads")) == 3, "known key read whole");
    CHECK(json_is_object(json_object_get(j, "small")), "a small unknown value is read");
    CHECK(jsonbig_skipped(json_object_get(j, "big"), &bytes) && bytes == strlen(big),
          "the big one skipped, its size kept: %llu", (unsigned long long)bytes);
    uint64_t u;
    CHECK(jsonbig_u64(json_object_get(j, "n"), &u) && u == UINT64_MAX, "big integers as ever");
    const char *k;
    json_t *v;
    const char *order[] = {"threads", "small", "big", "n"};
    size_t i = 0;
    json_object_foreach(j, k, v) CHECK(i < 4 && strcmp(k, order[i++]) == 0, "order kept");
    json_decref(j);
    /* with room for every value, the same document as a whole parse */
    j = jsonbig_load_members(doc, strlen(doc), knows_threads, 1 << 20, &skipped, &e);
    json_t *w = jsonbig_loadb(doc, strlen(doc), 0, &e);
    CHECK(j && w && json_equal(j, w) && skipped == 0, "equal to the whole parse");
    json_decref(j);
    json_decref(w);
}

/* Whatever is no plain object parses whole, and a value that is read
 * reports its error where the whole parse would: the errors are
 * jsonbig_loadb's own, at the same line, column and position. (A value
 * skipped unread is only scanned for its end, so it is not checked.) */
TEST(load_members_errors_match_the_whole_parse)
{
    const char *bad[] = {
        "{\"a\": 1,\n \"threads\": [1, 2,, 3]}",
        "{\"a\": 1 \"b\": 2}",
        "{\"a\": [1, 2}",
        "{\"a\": 1} trailing",
        "[1, 2]",
        "{\"a\": tru}",
        "{\"threads\":\n\n   [nul]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        size_t skipped;
        json_error_t e1, e2;
        json_t *a =
            jsonbig_load_members(bad[i], strlen(bad[i]), knows_threads, 1 << 20, &skipped, &e1);
        json_t *b = jsonbig_loadb(bad[i], strlen(bad[i]), 0, &e2);
        CHECK((a == NULL) == (b == NULL), "%zu: both parse or neither", i);
        if (!a && !b)
            CHECK(e1.line == e2.line && e1.column == e2.column && e1.position == e2.position,
                  "%zu: error at %d:%d (%d) vs %d:%d (%d)", i, e1.line, e1.column, e1.position,
                  e2.line, e2.column, e2.position);
        json_decref(a);
        json_decref(b);
    }
}

/* An .ips whose body is a 4 MiB array under a key the reader does not
 * know: read at the cost of scanning it, the key shown as skipped and a
 * warning naming it. */
TEST(ips_with_a_huge_unknown_key_is_read_and_warned)
{
    size_t hl;
    uint8_t *h = read_fixture("fixtures/crashes/bigapp-twin.ips", &hl);
    if (!h)
        return;
    const uint8_t *nl = memchr(h, '\n', hl);
    size_t hdr = (size_t)(nl - h) + 1, n = 4u << 20;
    char *buf = malloc(hdr + n + 32);
    memcpy(buf, h, hdr);
    size_t o = hdr;
    o += (size_t)sprintf(buf + o, "{\"x\":[");
    for (size_t i = 0; o < hdr + n; i++)
        o += (size_t)sprintf(buf + o, i ? ",[]" : "[]");
    o += (size_t)sprintf(buf + o, "]}");
    mem_meter m;
    mem_meter_begin(&m, NULL, 8u << 20); /* twice the body: a DOM of it would not fit */
    crash_report r;
    symd_err err = {0};
    symd_status st = crash_parse((const uint8_t *)buf, o, &r, &err);
    mem_meter_end(&m);
    CHECK(st == SYMD_OK, "parsed: %s", err.msg);
    CHECK(m.trip == MEM_TRIP_NONE, "within budget, peak %llu", (unsigned long long)m.peak);
    if (st == SYMD_OK) {
        bool warned = false;
        for (size_t i = 0; i < r.nwarnings; i++)
            warned |= strstr(r.warnings[i].message, "skipped unread") != NULL &&
                      strcmp(r.warnings[i].where, "x") == 0;
        CHECK(warned, "a warning names the skipped key");
        CHECK(r.app_specific && strstr(r.app_specific, "x: ("), "shown as skipped: %s",
              r.app_specific ? r.app_specific : "(none)");
        crash_report_free(&r);
    }
    free(buf);
    free(h);
}

/* libFuzzer target: util/jsonbig against jansson itself. Over any bytes:
 *   - where jansson reads the text, jsonbig reads the same document;
 *   - where jsonbig reads a text jansson refuses, every integer literal past
 *     int64_t became a marked string that reads back (jsonbig_literal) as
 *     '-'? digits, and jansson's refusal was for a too big integer;
 *   - jsonbig_u64 / jsonbig_i64 of every integer agree with the literal's
 *     digits;
 *   - jsonbig_load_members (an object read member by member) with room for
 *     every value reads what jsonbig_loadb reads of an object, and refuses
 *     what it refuses at the same place; with no room for unknown values it
 *     reads every known one the same and marks the others skipped. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../util/jsonbig.h"

/* The literal's digits as uint64_t (false past 2^64-1 or negative). */
static bool literal_u64(const char *s, size_t n, uint64_t *out)
{
    if (!n || s[0] == '-')
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++)
        if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, (uint64_t)(s[i] - '0'), &x))
            return false;
    *out = x;
    return true;
}

static void walk(const json_t *v, int depth)
{
    if (depth > 4096)
        __builtin_trap(); /* deeper than jansson's own limit */
    size_t n;
    const char *lit = jsonbig_literal(v, &n);
    if (lit) {
        for (size_t i = lit[0] == '-'; i < n; i++)
            if (lit[i] < '0' || lit[i] > '9')
                __builtin_trap();
        uint64_t a, b;
        bool ka = jsonbig_u64(v, &a), kb = literal_u64(lit, n, &b);
        if (ka != kb || (ka && a != b))
            __builtin_trap();
        int64_t c;
        if (jsonbig_i64(v, &c) && !(lit[0] == '-' ? c <= 0 : c >= 0)) /* "-0" is 0 */
            __builtin_trap();
    } else if (json_is_integer(v)) {
        uint64_t a;
        int64_t c;
        json_int_t x = json_integer_value(v);
        if (!jsonbig_i64(v, &c) || c != x || jsonbig_u64(v, &a) != (x >= 0) ||
            (x >= 0 && a != (uint64_t)x))
            __builtin_trap();
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            walk(json_array_get(v, i), depth + 1);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) walk(x, depth + 1);
    }
}

/* Keys starting with 't' are "known". */
static bool known_t(const char *key) { return key[0] == 't'; }

static void members(const uint8_t *data, size_t size, const json_t *big,
                    const json_error_t *e2)
{
    size_t skipped;
    json_error_t e3;
    json_t *all = jsonbig_load_members((const char *)data, size, known_t, SIZE_MAX, &skipped,
                                       &e3);
    bool object = big && json_is_object(big);
    if (object && (!all || !json_equal(all, big) || skipped))
        __builtin_trap(); /* room for everything: the whole parse */
    if (!big && all && !json_is_object(all))
        __builtin_trap();
    size_t i = 0;
    while (i < size && strchr(" \t\r\n", data[i]) && data[i])
        i++;
    if (!big && !all && i < size && data[i] == '{' &&
        (e3.line != e2->line || e3.column != e2->column || e3.position != e2->position))
        __builtin_trap(); /* refused where the whole parse refuses */
    json_decref(all);
    json_t *some = jsonbig_load_members((const char *)data, size, known_t, 0, &skipped, &e3);
    if (object && some) {
        const char *k;
        json_t *v;
        uint64_t n;
        json_object_foreach((json_t *)big, k, v) {
            json_t *w = json_object_get(some, k);
            /* an unknown value is skipped, or read when the object was
             * read whole (not plain at its top level) */
            if (!w || (!json_equal(v, w) && (known_t(k) || !jsonbig_skipped(w, &n))))
                __builtin_trap();
        }
        if (json_object_size(some) != json_object_size(big))
            __builtin_trap();
    }
    json_decref(some);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t e1, e2;
    json_t *plain = json_loadb((const char *)data, size, JSON_DECODE_ANY, &e1);
    json_t *big = jsonbig_loadb((const char *)data, size, JSON_DECODE_ANY, &e2);
    if (plain && (!big || !json_equal(plain, big)))
        __builtin_trap(); /* what jansson reads, jsonbig reads the same */
    if (!plain && big && !strstr(e1.text, "too big"))
        __builtin_trap(); /* jsonbig reads more only by the big integers */
    if (big)
        walk(big, 0);
    members(data, size, big, &e2);
    if (!big && (e2.position < -1 || (e2.position >= 0 && (size_t)e2.position > size)))
        __builtin_trap(); /* the error is placed in the caller's text */
    json_decref(plain);
    json_decref(big);
    return 0;
}

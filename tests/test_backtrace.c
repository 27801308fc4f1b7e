/* parser/backtrace.c: the symbolicate request reader. */
#include <stdlib.h>
#include <string.h>

#include "../parser/backtrace.h"
#include "../util/dynbuf.h"
#include "../util/jsonw.h"
#include "../server/symbolicate.h"
#include "test.h"

static symd_status parse(const char *json, bt_request *req, symd_err *err)
{
    symd_err_clear(err);
    return bt_parse(json, strlen(json), req, err);
}

TEST(backtrace_reads_any_key_order)
{
    bt_request req;
    symd_err err;
    /* threads before images, request adjust last: frames still resolve. */
    const char *ok =
        "  {\"threads\":[{\"id\":\"t\\u00e9\",\"name\":\"ma\\\"in\\ud83d\\ude00\",\"crashed\":true,"
        "\"extra\":{\"a\":[1,2,{\"b\":null}]},"
        "\"frames\":[{\"address\":\"0x10\",\"image\":\"4c4c449055553144a17c64a339ede13a\"},"
        "{\"address\":17,\"adjust\":\"none\"},\"0X12\",19]}],"
        "\"images\":[{\"uuid\":\"00000000-0000-0000-0000-000000000000\",\"slide\":0},"
        "{\"uuid\":\"4C4C4490-5555-3144-A17C-64A339EDE13A\",\"load_address\":\"0x1000\","
        "\"arch\":null,\"size\":4096}],"
        "\"adjust\":\"caller\",\"unknown\":[\"\\/\"],"
        "\"a_key_longer_than_any_key_we_know_about_by_far\":1}\n";
    CHECK(parse(ok, &req, &err) == SYMD_OK, "parse: %s", err.msg);
    CHECK(req.nimages == 2 && req.nthreads == 1 && req.threads[0].nframes == 4, "counts");
    if (req.nthreads == 1 && req.threads[0].nframes == 4) {
        bt_thread *t = &req.threads[0];
        CHECK(t->id_kind == BT_ID_STRING && strcmp(t->id_str, "t\xc3\xa9") == 0, "id");
        CHECK(t->name && strcmp(t->name, "ma\"in\xf0\x9f\x98\x80") == 0, "name: %s", t->name);
        CHECK(t->crashed, "crashed");
        CHECK(t->frames[0].image == 1 && t->frames[0].address == 0x10, "image by uuid");
        CHECK(t->frames[0].adjust == BT_ADJUST_CALLER, "request adjust applies late");
        CHECK(t->frames[1].adjust == BT_ADJUST_NONE && t->frames[1].address == 17,
              "frame adjust wins");
        CHECK(t->frames[2].address == 0x12 && t->frames[3].address == 19, "bare addresses");
        CHECK(req.images[1].has_size && req.images[1].size == 4096 && !req.images[1].arch[0],
              "image fields");
    }
    bt_free(&req);
}

TEST(backtrace_rejects_bad_requests_with_a_path)
{
    static const struct {
        const char *json, *msg;
    } bad[] = {
        {"", "malformed JSON at byte 0"},
        {"{", "malformed JSON"},
        {"{\"threads\":[]} x", "after the request"},
        {"{\"threads\":[],}", "malformed JSON"},
        {"{\"threads\":[{\"frames\":[1,]}]}", "malformed JSON"},
        {"{'threads':[]}", "malformed JSON"},
        {"{\"threads\":[]", "malformed JSON"},
        {"[]", "must be a JSON object"},
        {"{}", "threads must be an array"},
        {"{\"threads\":[],\"threads\":[]}", "appears twice"},
        {"{\"threads\":[{\"frames\":[{\"address\":\"0x1\",\"address\":\"0x2\"}]}]}",
         "threads[0].frames[0]: key \"address\" appears twice"},
        {"{\"threads\":[{\"frames\":[{}]}]}", "threads[0].frames[0].address is required"},
        {"{\"threads\":[{}]}", "threads[0].frames is required"},
        {"{\"threads\":[{\"frames\":[true]}]}", "threads[0].frames[0] must be an object"},
        {"{\"threads\":[{\"frames\":[\"0xZ\"]}]}", "is not a hex address"},
        {"{\"threads\":[{\"frames\":[-1]}]}", "non-negative integer"},
        {"{\"threads\":[{\"frames\":[1e3]}]}", "non-negative integer"},
        {"{\"threads\":[{\"frames\":[18446744073709551616]}]}", "below 2^64"},
        {"{\"threads\":[{\"frames\":[01]}]}", "malformed JSON"},
        {"{\"threads\":[{\"frames\":[{\"address\":1,\"image\":2}]}]}",
         "image 2 is not an index"},
        {"{\"threads\":[{\"frames\":[{\"address\":1,\"image\":-1}]}]}", "not an index"},
        {"{\"threads\":[{\"frames\":[{\"address\":1,\"adjust\":\"up\"}]}]}",
         "threads[0].frames[0].adjust must be auto, none or caller"},
        {"{\"adjust\":3,\"threads\":[]}", "adjust must be auto"},
        {"{\"images\":[{\"slide\":0}],\"threads\":[]}", "images[0].uuid is required"},
        {"{\"images\":[{\"uuid\":\"x\",\"slide\":0}],\"threads\":[]}", "is not a UUID"},
        {"{\"images\":[{\"uuid\":\"4C4C4490-5555-3144-A17C-64A339EDE13A\"}],\"threads\":[]}",
         "needs load_address or slide"},
        {"{\"images\":[{\"uuid\":\"4C4C4490-5555-3144-A17C-64A339EDE13A\",\"slide\":0,"
         "\"arch\":7}],\"threads\":[]}", "arch must be a string"},
        {"{\"threads\":[{\"id\":1.5,\"frames\":[]}]}", "id must be an integer"},
        {"{\"threads\":[{\"crashed\":1,\"frames\":[]}]}", "crashed must be a boolean"},
        {"{\"threads\":[{\"name\":\"a\\u0000b\",\"frames\":[]}]}", "may not contain NUL"},
        {"{\"threads\":[{\"name\":\"\\ud800\",\"frames\":[]}]}", "surrogate"},
        {"{\"threads\":[{\"name\":\"\xff\",\"frames\":[]}]}", "invalid UTF-8"},
        {"{\"threads\":[{\"name\":\"\xc0\xaf\",\"frames\":[]}]}", "invalid UTF-8"},
        {"{\"threads\":[{\"name\":\"a\nb\",\"frames\":[]}]}", "control character"},
        {"{\"threads\":[{\"name\":\"\\q\",\"frames\":[]}]}", "bad escape"},
        {"{\"threads\":[],\"x\":tru}", "bad literal"},
        {"{\"adjust\":\"automatically-and-more\",\"threads\":[]}", "adjust must be auto"},
        {"{\"adjust\":\"au\\q\",\"threads\":[]}", "bad escape"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bt_request req;
        symd_err err;
        symd_status st = parse(bad[i].json, &req, &err);
        CHECK(st == SYMD_E_INVALID && strstr(err.msg, bad[i].msg),
              "%s: got %s '%s', want '%s'", bad[i].json, symd_status_name(st), err.msg,
              bad[i].msg);
    }
}

TEST(backtrace_limits_nesting_and_counts)
{
    /* 100k nested arrays under an unknown key: refused, no stack overflow. */
    size_t n = 100000;
    char *deep = malloc(2 * n + 64);
    size_t k = (size_t)sprintf(deep, "{\"threads\":[],\"x\":");
    memset(deep + k, '[', n);
    memset(deep + k + n, ']', n);
    strcpy(deep + k + 2 * n, "}");
    bt_request req;
    symd_err err;
    CHECK(parse(deep, &req, &err) == SYMD_E_INVALID && strstr(err.msg, "nested deeper"),
          "deep nesting: %s", err.msg);
    free(deep);

    /* More frames than the limit: 413, counted as they are read. */
    size_t frames = BT_MAX_FRAMES + 1;
    char *big = malloc(frames * 2 + 64);
    k = (size_t)sprintf(big, "{\"threads\":[{\"frames\":[");
    for (size_t i = 0; i < frames; i++) {
        big[k++] = '1';
        big[k++] = i + 1 < frames ? ',' : ']';
    }
    strcpy(big + k, "}]}");
    CHECK(parse(big, &req, &err) == SYMD_E_TOO_LARGE, "too many frames: %s", err.msg);
    free(big);
}

TEST(jsonw_escapes_and_validates_utf8)
{
    dynbuf b;
    dynbuf_init(&b, 1 << 20);
    jsonw w;
    jw_init(&w, &b);
    jw_str(&w, "plain_ascii_name_longer_than_eight");
    JW_LIT(&w, ",");
    jw_str(&w, "q\"b\\s\n\t\r\x01 <img src=x>");
    JW_LIT(&w, ",");
    jw_str(&w, "\xc3\xa9\xff\xe2\x82");
    JW_LIT(&w, ",");
    jw_hex(&w, 0);
    jw_hex(&w, UINT64_MAX);
    jw_i64(&w, INT64_MIN);
    CHECK(w.ok, "writer ok");
    const char *want = "\"plain_ascii_name_longer_than_eight\","
                       "\"q\\\"b\\\\s\\n\\t\\r\\u0001 <img src=x>\","
                       "\"\xc3\xa9\\ufffd\\ufffd\\ufffd\","
                       "\"0x0\"\"0xffffffffffffffff\"-9223372036854775808";
    CHECK(strcmp((char *)b.data, want) == 0, "got %s", b.data);
    dynbuf_free(&b);

    dynbuf_init(&b, 8); /* the limit is sticky and reported */
    jw_init(&w, &b);
    jw_str(&w, "0123456789");
    CHECK(!w.ok && b.len <= 8, "limit enforced");
    dynbuf_free(&b);
}

/* The address a lookup uses: PAC bits stripped on arm64 (39-bit user VA),
 * non-canonical bits on others, Thumb's bit 0 on 32-bit ARM; kernel
 * addresses and canonical x86_64 ones as sent. */
TEST(symbolicate_lookup_address_strips_pac_and_thumb)
{
    static const struct {
        uint64_t addr;
        const char *arch;
        uint64_t want;
    } cases[] = {
        {0x5dd5f78104a38b50ull, "arm64e", 0x104a38b50ull},
        {0x5dd5f78104a38b50ull, "arm64", 0x104a38b50ull},
        {0x5dd5f78104a38b50ull, NULL, 0x104a38b50ull},
        {0x5dd5f78104a38b50ull, "", 0x104a38b50ull},
        {0x0000000104a38b50ull, "arm64e", 0x104a38b50ull},
        {0xfffffff0153f96bcull, "arm64e", 0xfffffff0153f96bcull}, /* kernel */
        {0x00007fff6fbfecc9ull, "x86_64", 0x00007fff6fbfecc9ull}, /* shared cache */
        {0x00007fff6fbfecc9ull, NULL, 0x00007fff6fbfecc9ull},
        {0x12347fff6fbfecc9ull, "x86_64", 0x00007fff6fbfecc9ull},
        {0x000668a9ull, "armv7", 0x000668a8ull}, /* Thumb */
        {0x000668a9ull, "armv7s", 0x000668a8ull},
        {0x000668a9ull, "i386", 0x000668a9ull},
        {0x3618da1dull, "arm", 0x3618da1cull},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t got = symbolicate_lookup_address(cases[i].addr, cases[i].arch);
        CHECK(got == cases[i].want, "0x%llx %s: 0x%llx, want 0x%llx",
              (unsigned long long)cases[i].addr, cases[i].arch ? cases[i].arch : "(none)",
              (unsigned long long)got, (unsigned long long)cases[i].want);
    }
}

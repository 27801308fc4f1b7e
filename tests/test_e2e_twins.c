/* End-to-end: the arm64e twins of fixtures/crashes (bigapp-pac.crash,
 * bigapp-pac-list.crash, bigapp-pac.ips: PAC-tagged addresses, a Last
 * Exception Backtrace, application specific information, a ??? frame)
 * symbolicated exactly as pac.expected.tsv says, on a server of their own. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../util/hex.h"
#include "fixture_util.h"
#include "harness.h"
#include "test.h"

/* arm64/arm64e user-space addresses have 39 significant bits. */
#define PAC_MASK 0x0000007FFFFFFFFFull

static lazy_server tsrv = {"e2e-twins.db", NULL, {0}, false};

__attribute__((destructor)) static void stop_twins_server(void)
{
    lazy_stop(&tsrv);
}

/* The three reports of one crash, and their stored answers (posted once). */
enum { TW_CRASH, TW_LIST, TW_IPS, TW_COUNT };
static const char *const tw_file[TW_COUNT] = {"fixtures/crashes/bigapp-pac.crash",
                                              "fixtures/crashes/bigapp-pac-list.crash",
                                              "fixtures/crashes/bigapp-pac.ips"};
static const char *const tw_name[TW_COUNT] = {"bigapp-pac.crash", "bigapp-pac-list.crash",
                                              "bigapp-pac.ips"};
static json_t *tw_answer[TW_COUNT];
static json_int_t tw_id[TW_COUNT];
static bool tw_posted[TW_COUNT];

/* One request; the body as JSON (NULL when it is none), or as text into
 * *text (malloc'ed) when text is given. */
static json_t *request(const char *method, const char *path, const char *headers,
                       const void *body, size_t len, int *status, char **text)
{
    return http_json(lazy_port(&tsrv), method, path, headers, body, len, status, text);
}

static json_t *post_file(const char *rel, const char *url, int *status)
{
    return http_post_fixture(lazy_port(&tsrv), rel, url, status);
}

/* The binaries and the dSYM, each under its own name, once per run. */
static void upload_images(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    static const char *const files[][2] = {
        {"fixtures/bin/bigapp-arm64", "bigapp-arm64"},
        {"fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64", "bigapp-arm64"},
        {"fixtures/bin/libfix-arm64.dylib", "libfix.dylib"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char url[96];
        snprintf(url, sizeof url, "/v1/images?name=%s", files[i][1]);
        int status;
        json_t *j = post_file(files[i][0], url, &status);
        CHECK(status == 201, "upload %s: %d", files[i][0], status);
        json_decref(j);
    }
}

/* The stored answer for twin t (uploads first, posts once); NULL when the
 * report was refused. */
static json_t *answer(int t)
{
    if (tw_posted[t])
        return tw_answer[t];
    tw_posted[t] = true;
    upload_images();
    int status;
    /* renumbered: the .crash and its list form are one incident, which the
     * store would keep once */
    json_t *j = http_post_fixture_n(lazy_port(&tsrv), tw_file[t], "/v1/crashes",
                                    200 + (uint32_t)t, &status);
    CHECK(status == 201, "%s: POST /v1/crashes answered %d: %.300s", tw_name[t], status,
          j ? json_dumps(j, JSON_COMPACT) : "");
    if (status != 201) {
        json_decref(j);
        return NULL;
    }
    tw_answer[t] = j;
    tw_id[t] = json_integer_value(json_object_get(j, "id"));
    return j;
}

static const char *sget(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static bool str_is(json_t *o, const char *k, const char *want)
{
    const char *s = sget(o, k);
    return s && strcmp(s, want) == 0;
}

static bool hex_value(json_t *o, const char *k, uint64_t *v)
{
    const char *s = sget(o, k);
    return s && hex_parse_u64(s, strlen(s), v);
}

/* The thread of an answer with role (and, for "thread", crashed); NULL when
 * none. *count: how many match. */
static json_t *find_thread(json_t *ans, const char *role, bool crashed, int *count)
{
    json_t *th = json_object_get(ans, "threads"), *found = NULL;
    *count = 0;
    for (size_t i = 0; i < json_array_size(th); i++) {
        json_t *t = json_array_get(th, i);
        if (!str_is(t, "role", role))
            continue;
        if (strcmp(role, "thread") == 0 && json_is_true(json_object_get(t, "crashed")) != crashed)
            continue;
        if (!found)
            found = t;
        (*count)++;
    }
    return found;
}

/* ---- pac.expected.tsv ---- */

enum { C_SECTION, C_FRAME, C_ADDRESS, C_IMAGE, C_UUID, C_VMADDR, C_LOOKUP, C_STATUS,
       C_SYMBOL, C_MANGLED, C_OFFSET, C_LEVELS, C_COUNT };

typedef struct {
    char fn[160], file[160];
    unsigned line, column;
} level;

/* "raw_name (file:line:column) | ..." into levels (innermost first);
 * returns how many, -1 when one is malformed. */
static int parse_levels(const char *s, level *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        const char *end = strstr(s, " | ");
        size_t len = end ? (size_t)(end - s) : strlen(s);
        char one[400];
        if (len >= sizeof one)
            return -1;
        memcpy(one, s, len);
        one[len] = 0;
        char *open = strrchr(one, '(');
        if (!open || open == one || open[-1] != ' ')
            return -1;
        open[-1] = 0;
        char *c2 = strrchr(open, ':');
        if (!c2)
            return -1;
        *c2 = 0;
        char *c1 = strrchr(open, ':');
        if (!c1)
            return -1;
        *c1 = 0;
        if (snprintf(out[n].fn, sizeof out[n].fn, "%s", one) >= (int)sizeof out[n].fn ||
            snprintf(out[n].file, sizeof out[n].file, "%s", open + 1) >= (int)sizeof out[n].file)
            return -1;
        out[n].line = (unsigned)strtoul(c1 + 1, NULL, 10);
        out[n].column = (unsigned)strtoul(c2 + 1, NULL, 10);
        n++;
        s = end ? end + 3 : s + len;
    }
    return n;
}

/* Appends a mismatch to why. */
static void note(char *why, size_t cap, const char *fmt, const char *a, const char *b)
{
    size_t n = strlen(why);
    if (n + 4 < cap)
        snprintf(why + n, cap - n, fmt, a ? a : "(none)", b ? b : "(none)");
}

static bool same_str(json_t *o, const char *k, const char *want, char *why, size_t cap)
{
    if (str_is(o, k, want))
        return true;
    char what[64];
    snprintf(what, sizeof what, " %s=%%s (want %%s);", k);
    note(why, cap, what, sget(o, k), want);
    return false;
}

static bool same_int(json_t *o, const char *k, long long want, char *why, size_t cap)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v) && json_integer_value(v) == want)
        return true;
    char got[32], w[32];
    snprintf(got, sizeof got, "%lld", v ? (long long)json_integer_value(v) : -1);
    snprintf(w, sizeof w, "%lld", want);
    char what[64];
    snprintf(what, sizeof what, " %s=%%s (want %%s);", k);
    note(why, cap, what, v ? got : NULL, w);
    return false;
}

static bool absent(json_t *o, const char *k, char *why, size_t cap)
{
    if (!json_object_get(o, k) || json_is_null(json_object_get(o, k)))
        return true;
    char *s = json_dumps(json_object_get(o, k), JSON_ENCODE_ANY);
    char what[64];
    snprintf(what, sizeof what, " %s=%%s (want none%%s);", k);
    note(why, cap, what, s, "");
    free(s);
    return false;
}

/* Every row of section in rows against the frames of thread th of twin t:
 * each expected level an output frame in order, the outer one with the
 * status, symbol, offset, image, UUID and vmaddr of the row, and nothing
 * more. Returns the rows that matched exactly; *total the rows. */
static int check_section(int t, json_t *th, const char *section, tsv_row *rows, int nrows,
                         int *total)
{
    json_t *fr = json_object_get(th, "frames");
    size_t k = 0;
    int exact = 0;
    *total = 0;
    for (int i = 0; i < nrows; i++) {
        const tsv_row *r = &rows[i];
        if (r->nf != C_COUNT || strcmp(r->f[C_SECTION], section) != 0)
            continue;
        (*total)++;
        level lv[8];
        int nl = parse_levels(r->f[C_LEVELS], lv, 8);
        CHECK(nl >= 0, "pac.expected.tsv: bad levels %s", r->f[C_LEVELS]);
        if (nl < 0)
            continue;
        int nout = nl ? nl : 1;
        uint64_t want_addr = 0;
        hex_parse_u64(r->f[C_ADDRESS], strlen(r->f[C_ADDRESS]), &want_addr);
        /* The .ips exception backtrace is image-relative: no PAC bits to keep. */
        if (t == TW_IPS)
            want_addr &= PAC_MASK;
        char why[1024] = "";
        bool ok = true;
        for (int j = 0; j < nout; j++) {
            json_t *o = json_array_get(fr, k + (size_t)j);
            if (!o) {
                note(why, sizeof why, " output frame %s missing%s;", r->f[C_FRAME], "");
                ok = false;
                break;
            }
            uint64_t a;
            if (!hex_value(o, "address", &a) || a != want_addr) {
                note(why, sizeof why, " address=%s (want %s);", sget(o, "address"),
                     r->f[C_ADDRESS]);
                ok = false;
            }
            ok &= same_int(o, "frame", atoi(r->f[C_FRAME]), why, sizeof why);
            bool inner = j + 1 < nout;
            if (json_is_true(json_object_get(o, "inlined")) != inner) {
                note(why, sizeof why, " inlined=%s (want %s);",
                     json_is_true(json_object_get(o, "inlined")) ? "true" : "false",
                     inner ? "true" : "false");
                ok = false;
            }
            if (nl) {
                ok &= same_str(o, "mangled", lv[j].fn, why, sizeof why);
                ok &= same_str(o, "file", lv[j].file, why, sizeof why);
                ok &= same_int(o, "line", lv[j].line, why, sizeof why);
                if (lv[j].column)
                    ok &= same_int(o, "column", lv[j].column, why, sizeof why);
                else
                    ok &= absent(o, "column", why, sizeof why);
            }
        }
        json_t *outer = json_array_get(fr, k + (size_t)nout - 1);
        const char *st = r->f[C_STATUS];
        if (outer) {
            ok &= same_str(outer, "status", st, why, sizeof why);
            if (strcmp(st, "symbolicated") == 0) {
                ok &= same_str(outer, "symbol", r->f[C_SYMBOL], why, sizeof why);
                ok &= same_str(outer, "mangled", r->f[C_MANGLED], why, sizeof why);
                ok &= same_int(outer, "offset", atoll(r->f[C_OFFSET]), why, sizeof why);
                ok &= same_str(outer, "image", r->f[C_IMAGE], why, sizeof why);
                ok &= same_str(outer, "uuid", r->f[C_UUID], why, sizeof why);
                uint64_t vm, want_vm = 0;
                hex_parse_u64(r->f[C_VMADDR], strlen(r->f[C_VMADDR]), &want_vm);
                if (!hex_value(outer, "vmaddr", &vm) || vm != want_vm) {
                    note(why, sizeof why, " vmaddr=%s (want %s);", sget(outer, "vmaddr"),
                         r->f[C_VMADDR]);
                    ok = false;
                }
                if (!nl) /* no line data: llvm-symbolizer names no file */
                    ok &= absent(outer, "file", why, sizeof why);
            } else if (strcmp(st, "missing_image") == 0) {
                ok &= same_str(outer, "image", r->f[C_IMAGE], why, sizeof why);
                ok &= same_str(outer, "uuid", r->f[C_UUID], why, sizeof why);
                ok &= absent(outer, "symbol", why, sizeof why);
            } else { /* unknown_image: the ??? frame, kept as a frame */
                ok &= absent(outer, "symbol", why, sizeof why);
                ok &= absent(outer, "uuid", why, sizeof why);
                ok &= absent(outer, "vmaddr", why, sizeof why);
            }
        }
        CHECK(ok, "%s %s frame %s (%s):%s\n      got %.700s", tw_name[t], section,
              r->f[C_FRAME], r->f[C_ADDRESS], why,
              outer ? json_dumps(outer, JSON_COMPACT | JSON_SORT_KEYS) : "(no frame)");
        exact += ok;
        k += (size_t)nout;
    }
    CHECK(k == json_array_size(fr), "%s %s: %zu output frames, expected %zu", tw_name[t], section,
          json_array_size(fr), k);
    return exact;
}

/* The whole answer of twin t against pac.expected.tsv. */
static void check_twin(int t)
{
    json_t *ans = answer(t);
    if (!ans)
        return;
    tsv_row rows[64];
    char *buf = NULL;
    int n = load_tsv("fixtures/crashes/pac.expected.tsv", rows, 64, &buf);
    CHECK(n >= 14, "pac.expected.tsv: %d rows", n);

    /* root keys of issue 10 */
    CHECK(str_is(ans, "kind", "crash"), "%s: kind %s", tw_name[t], sget(ans, "kind"));
    json_t *bt = json_object_get(ans, "bug_type");
    CHECK(t == TW_IPS ? json_integer_value(bt) == 309 && json_is_integer(bt) : json_is_null(bt),
          "%s: bug_type %s", tw_name[t], bt ? json_dumps(bt, JSON_ENCODE_ANY) : "(absent)");
    json_t *w = json_object_get(ans, "warnings");
    CHECK(json_is_array(w) && json_array_size(w) == 0, "%s: warnings on a well-formed report: %.600s",
          tw_name[t], w ? json_dumps(w, JSON_COMPACT) : "(absent)");
    const char *asi = sget(ans, "app_specific");
    CHECK(asi && strstr(asi, "abort() called"), "%s: app_specific %s", tw_name[t],
          asi ? asi : "(none)");

    /* images: the two uploaded found, the system one missing */
    json_t *imgs = json_object_get(ans, "images");
    int seen = 0;
    for (size_t i = 0; i < json_array_size(imgs); i++) {
        json_t *im = json_array_get(imgs, i);
        const char *u = sget(im, "uuid");
        const char *want = !u ? NULL
                           : !strcmp(u, "4C4C4490-5555-3144-A17C-64A339EDE13A") ? "found"
                           : !strcmp(u, "4C4C4448-5555-3144-A188-0C3B883681D9") ? "found"
                           : !strcmp(u, "D1E2F3A4-B5C6-4D7E-8F90-A1B2C3D4E5F6") ? "missing"
                                                                                 : NULL;
        if (!want)
            continue;
        seen++;
        CHECK(str_is(im, "status", want), "%s: image %s status %s, want %s", tw_name[t], u,
              sget(im, "status"), want);
    }
    CHECK(seen == 3, "%s: %d of the 3 images listed", tw_name[t], seen);

    /* the exception backtrace: one thread of its own, no thread number */
    int count;
    json_t *leb = find_thread(ans, "last_exception", false, &count);
    CHECK(count == 1, "%s: %d threads with role last_exception", tw_name[t], count);
    int leb_exact = 0, leb_total = 0;
    if (leb) {
        CHECK(json_is_null(json_object_get(leb, "id")) &&
                  !json_is_true(json_object_get(leb, "crashed")),
              "%s: last_exception thread has id %s / crashed", tw_name[t],
              json_dumps(json_object_get(leb, "id"), JSON_ENCODE_ANY));
        if (t != TW_IPS)
            CHECK(str_is(leb, "title", "Last Exception Backtrace:"), "%s: title %s", tw_name[t],
                  sget(leb, "title"));
        leb_exact = check_section(t, leb, "last_exception", rows, n, &leb_total);
    }
    json_t *crashed = find_thread(ans, "thread", true, &count);
    CHECK(count == 1, "%s: %d crashed threads with role thread", tw_name[t], count);
    if (!crashed) { /* before roles exist: the crashed thread all the same */
        json_t *th = json_object_get(ans, "threads");
        for (size_t i = 0; i < json_array_size(th); i++)
            if (json_is_true(json_object_get(json_array_get(th, i), "crashed")))
                crashed = json_array_get(th, i);
    }
    int cr_exact = 0, cr_total = 0;
    if (crashed) {
        CHECK(json_integer_value(json_object_get(crashed, "id")) == 0 &&
                  json_is_integer(json_object_get(crashed, "id")) &&
                  str_is(crashed, "queue", "com.apple.main-thread"),
              "%s: crashed thread id/queue: %s / %s", tw_name[t],
              json_dumps(json_object_get(crashed, "id"), JSON_ENCODE_ANY), sget(crashed, "queue"));
        cr_exact = check_section(t, crashed, "crashed", rows, n, &cr_total);
    }
    printf("    %s: exception backtrace %d/%d frames exact, crashed thread %d/%d\n", tw_name[t],
           leb_exact, leb_total, cr_exact, cr_total);
    free(buf);
}

TEST(e2e_twins_pac_crash_frames_exact)
{
    check_twin(TW_CRASH);
}

TEST(e2e_twins_pac_list_frames_exact)
{
    check_twin(TW_LIST);
}

TEST(e2e_twins_pac_ips_frames_exact)
{
    check_twin(TW_IPS);
}

/* A frame object as compared across formats: without image_index (the .ips
 * lists the zero image first, so its indices are one up), the address
 * without PAC bits when an .ips is compared (its exception backtrace is
 * image-relative), and "???" for an unknown image's null name. */
static json_t *comparable(json_t *o, bool strip)
{
    json_t *c = json_deep_copy(o);
    json_object_del(c, "image_index");
    uint64_t a;
    if (strip && hex_value(c, "address", &a)) {
        char b[24];
        snprintf(b, sizeof b, "0x%llx", (unsigned long long)(a & PAC_MASK));
        json_object_set_new(c, "address", json_string(b));
    }
    if (str_is(c, "status", "unknown_image") && !sget(c, "image"))
        json_object_set_new(c, "image", json_string("???"));
    return c;
}

/* Equal JSON values, or both absent. */
static bool same_json(json_t *a, json_t *b)
{
    return (!a && !b) || (a && b && json_equal(a, b));
}

/* Threads of a and b paired by role and id; their frames equal one by one. */
static void compare_answers(int ta, int tb)
{
    json_t *a = answer(ta), *b = answer(tb);
    if (!a || !b)
        return;
    bool strip = ta == TW_IPS || tb == TW_IPS;
    json_t *tha = json_object_get(a, "threads"), *thb = json_object_get(b, "threads");
    CHECK(json_array_size(tha) == json_array_size(thb), "%s %zu threads, %s %zu", tw_name[ta],
          json_array_size(tha), tw_name[tb], json_array_size(thb));
    int frames = 0, same = 0;
    for (size_t i = 0; i < json_array_size(tha); i++) {
        json_t *x = json_array_get(tha, i), *y = NULL;
        for (size_t j = 0; j < json_array_size(thb) && !y; j++) {
            json_t *c = json_array_get(thb, j);
            if (same_json(json_object_get(x, "role"), json_object_get(c, "role")) &&
                same_json(json_object_get(x, "id"), json_object_get(c, "id")))
                y = c;
        }
        CHECK(y, "%s thread %zu (role %s, id %s) has no twin in %s", tw_name[ta], i,
              sget(x, "role"), json_dumps(json_object_get(x, "id"), JSON_ENCODE_ANY),
              tw_name[tb]);
        if (!y)
            continue;
        json_t *fx = json_object_get(x, "frames"), *fy = json_object_get(y, "frames");
        CHECK(json_array_size(fx) == json_array_size(fy), "thread %zu: %zu frames vs %zu", i,
              json_array_size(fx), json_array_size(fy));
        for (size_t f = 0; f < json_array_size(fx) && f < json_array_size(fy); f++) {
            json_t *cx = comparable(json_array_get(fx, f), strip);
            json_t *cy = comparable(json_array_get(fy, f), strip);
            bool eq = json_equal(cx, cy);
            char *sx = json_dumps(cx, JSON_COMPACT | JSON_SORT_KEYS);
            char *sy = json_dumps(cy, JSON_COMPACT | JSON_SORT_KEYS);
            CHECK(eq, "role %s id %s frame %zu differs:\n      %-21s %s\n      %-21s %s",
                  sget(x, "role"), json_dumps(json_object_get(x, "id"), JSON_ENCODE_ANY), f,
                  tw_name[ta], sx, tw_name[tb], sy);
            free(sx);
            free(sy);
            json_decref(cx);
            json_decref(cy);
            frames++;
            same += eq;
        }
    }
    CHECK(str_is(a, "signature", sget(b, "signature") ? sget(b, "signature") : ""),
          "signatures differ: %s / %s", sget(a, "signature"), sget(b, "signature"));
    json_t *ea = json_object_get(a, "exception"), *eb = json_object_get(b, "exception");
    CHECK(str_is(ea, "signal", "SIGABRT") && str_is(eb, "signal", "SIGABRT"),
          "exception signals: %s / %s", sget(ea, "signal"), sget(eb, "signal"));
    printf("    %s vs %s: %d/%d frames the same\n", tw_name[ta], tw_name[tb], same, frames);
}

/* The three writings of the crash give the same frames. */
TEST(e2e_twins_pac_formats_agree)
{
    compare_answers(TW_CRASH, TW_IPS);
    compare_answers(TW_CRASH, TW_LIST);
}

/* The text rendering of each stored twin: the symbolicated exception
 * backtrace under its heading, innermost inlined level first, and the
 * crashed thread with its ??? frame; asked by ?format=text and by Accept. */
TEST(e2e_twins_pac_text_rendering)
{
    tsv_row rows[64];
    char *buf = NULL;
    int n = load_tsv("fixtures/crashes/pac.expected.tsv", rows, 64, &buf);
    for (int t = 0; t < TW_COUNT; t++) {
        if (!answer(t))
            continue;
        char path[64], *text = NULL, *text2 = NULL;
        int status;
        snprintf(path, sizeof path, "/v1/crashes/%lld?format=text", (long long)tw_id[t]);
        request("GET", path, NULL, NULL, 0, &status, &text);
        CHECK(status == 200, "%s text: %d", tw_name[t], status);
        snprintf(path, sizeof path, "/v1/crashes/%lld", (long long)tw_id[t]);
        request("GET", path, "Accept: text/plain\r\n", NULL, 0, &status, &text2);
        CHECK(status == 200 && strcmp(text, text2) == 0, "%s: Accept: text/plain differs",
              tw_name[t]);
        free(text2);
        CHECK(strstr(text, "abort() called\n"), "%s text: no application specific information",
              tw_name[t]);
        const char *leb = strstr(text, "Last Exception Backtrace:\n");
        CHECK(leb, "%s text: no \"Last Exception Backtrace:\" section", tw_name[t]);
        const char *end = leb ? strstr(leb, "\nThread ") : NULL; /* the section's end */
        const char *crashed = strstr(text, "Thread 0 Crashed");
        CHECK(crashed && strstr(crashed, "\n5   ???"), "%s text: no ??? frame 5 in thread 0",
              tw_name[t]);
        int found = 0, want = 0;
        const char *at = leb;
        for (int i = 0; leb && i < n; i++) {
            const tsv_row *r = &rows[i];
            if (r->nf != C_COUNT || strcmp(r->f[C_SECTION], "last_exception") != 0 ||
                strcmp(r->f[C_STATUS], "symbolicated") != 0)
                continue;
            level lv[8];
            int nl = parse_levels(r->f[C_LEVELS], lv, 8);
            /* "sym + off (file:line)" for the function, "inner (file:line)"
             * before it for each inlined level (file names as basenames) */
            for (int j = 0; j < (nl > 0 ? nl : 1); j++) {
                char line[512];
                const char *base = nl > 0 ? strrchr(lv[j].file, '/') : NULL;
                base = base ? base + 1 : nl > 0 ? lv[j].file : "";
                bool outer = nl <= 0 || j == nl - 1;
                int len;
                if (outer && nl > 0)
                    len = snprintf(line, sizeof line, " %s + %s (%s:%u)\n", r->f[C_SYMBOL],
                                   r->f[C_OFFSET], base, lv[j].line);
                else if (outer)
                    len = snprintf(line, sizeof line, " %s + %s\n", r->f[C_SYMBOL],
                                   r->f[C_OFFSET]);
                else
                    len = snprintf(line, sizeof line, " %s (%s:%u)\n", lv[j].fn, base,
                                   lv[j].line);
                CHECK(len > 0 && len < (int)sizeof line, "pac.expected.tsv: a row too long");
                want++;
                const char *hit = at ? strstr(at, line) : NULL;
                bool inside = hit && (!end || hit < end);
                CHECK(inside,
                      "%s text: exception backtrace lacks \"%.*s\" (in order, in its section)",
                      tw_name[t], (int)strlen(line) - 1, line);
                if (inside) {
                    at = hit + strlen(line);
                    found++;
                }
            }
        }
        printf("    %s text: %d/%d exception-backtrace lines symbolicated\n", tw_name[t], found,
               want);
        CHECK(strstr(text, " static_accumulate + 76 (app.c:27)\n") &&
                  strstr(text, " ns::twice(int) + 4 (cxxpart.cpp:17)\n"),
              "%s text: crashed thread not symbolicated", tw_name[t]);
        if (found != want || !leb) { /* what it says instead, up to the images */
            const char *from = strstr(text, "Exception Type:");
            const char *to = strstr(text, "Binary Images:");
            from = from ? from : text;
            printf("%.*s\n", to && to > from ? (int)(to - from) : 3000, from);
        }
        free(text);
    }
    free(buf);
}

/* The exception backtrace's PAC-tagged return addresses sent raw to
 * /v1/symbolicate (images by UUID and load address, adjust caller): each
 * answered as pac.expected.tsv says, the address echoed as sent. */
TEST(e2e_twins_pac_raw_symbolicate)
{
    upload_images();
    tsv_row rows[64];
    char *buf = NULL;
    int n = load_tsv("fixtures/crashes/pac.expected.tsv", rows, 64, &buf);
    json_t *frames = json_array(), *want = json_array();
    for (int i = 0; i < n; i++) {
        const tsv_row *r = &rows[i];
        if (r->nf != C_COUNT || strcmp(r->f[C_SECTION], "last_exception") != 0 ||
            strcmp(r->f[C_STATUS], "symbolicated") != 0)
            continue;
        json_array_append_new(frames, json_pack("{s:s, s:s, s:s}", "address", r->f[C_ADDRESS],
                                                "image", r->f[C_UUID], "adjust", "caller"));
        json_array_append_new(want, json_pack("{s:s, s:s, s:s}", "address", r->f[C_ADDRESS],
                                              "symbol", r->f[C_SYMBOL], "offset", r->f[C_OFFSET]));
    }
    json_t *req = json_pack("{s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}], s:[{s:o}]}", "images",
                            "uuid", "4C4C4490-5555-3144-A17C-64A339EDE13A", "arch", "arm64",
                            "load_address", "0x104a38000", "uuid",
                            "4C4C4448-5555-3144-A188-0C3B883681D9", "arch", "arm64",
                            "load_address", "0x1050f0000", "threads", "frames", frames);
    char *body = json_dumps(req, JSON_COMPACT);
    int status;
    json_t *ans = request("POST", "/v1/symbolicate", NULL, body, strlen(body), &status, NULL);
    CHECK(status == 200, "/v1/symbolicate: %d", status);
    /* the outer level of each frame (inlined levels come before it) */
    json_t *out = json_object_get(json_array_get(json_object_get(ans, "threads"), 0), "frames");
    size_t k = 0, exact = 0;
    for (size_t i = 0; i < json_array_size(out); i++) {
        json_t *f = json_array_get(out, i);
        if (json_is_true(json_object_get(f, "inlined")))
            continue;
        json_t *w = json_array_get(want, k++);
        char off[24];
        snprintf(off, sizeof off, "%lld", (long long)json_integer_value(json_object_get(f, "offset")));
        bool ok = w && str_is(f, "address", sget(w, "address")) &&
                  str_is(f, "symbol", sget(w, "symbol")) && strcmp(off, sget(w, "offset")) == 0;
        CHECK(ok, "frame %zu: %s %s + %s, want %s %s + %s", k - 1, sget(f, "address"),
              sget(f, "symbol"), off, w ? sget(w, "address") : "-", w ? sget(w, "symbol") : "-",
              w ? sget(w, "offset") : "-");
        exact += ok;
    }
    CHECK(k == json_array_size(want) && k >= 5, "%zu outer frames for %zu sent", k,
          json_array_size(want));
    printf("    raw PAC-tagged frames: %zu/%zu exact, addresses as sent\n", exact,
           json_array_size(want));
    json_decref(ans);
    free(body);
    json_decref(req);
    json_decref(want);
    free(buf);
}

/* Last test of this file: the server stops cleanly. */
TEST(e2e_twins_zz_shutdown_is_clean)
{
    lazy_port(&tsrv);
    CHECK(lazy_stop(&tsrv), "twins server exit status");
    for (int t = 0; t < TW_COUNT; t++) {
        json_decref(tw_answer[t]);
        tw_answer[t] = NULL;
    }
}

/* util/jsonbig and the .ips JSON reader (parser/crash_ips.c) with the panic
 * text reader (parser/crash_panic.c): integers of any size, every bug_type
 * of the real reports in ../shared, warnings instead of refusals. */
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../parser/crash.h"
#include "../parser/crash_int.h"
#include "../util/hex.h"
#include "../util/jsonbig.h"
#include "test.h"


/* ---- helpers ------------------------------------------------------------------ */

/* The report in dir whose name holds part; NULL (and a failure) when none. */
static uint8_t *load_report(const char *dir, const char *part, size_t *len)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    uint8_t *buf = NULL;
    while (d && (de = readdir(d)) && !buf) {
        if (!strstr(de->d_name, part))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        buf = read_file(path, len);
    }
    if (d)
        closedir(d);
    CHECK(buf, "no report \"%s\" in %s", part, dir);
    return buf;
}

static symd_status parse_buf(const uint8_t *b, size_t n, crash_report *r, symd_err *err)
{
    symd_err_clear(err);
    return crash_parse(b, n, r, err);
}

static symd_status parse_str(const char *s, crash_report *r, symd_err *err)
{
    return parse_buf((const uint8_t *)s, strlen(s), r, err);
}

static bool uuid_is(const crash_image *im, const char *u)
{
    uint8_t want[16];
    return im->has_uuid && uuid_parse(u, want) && memcmp(im->uuid, want, 16) == 0;
}

/* The warning at where, NULL when none. */
static const crash_warning *warning_at(const crash_report *r, const char *where)
{
    for (size_t i = 0; i < r->nwarnings; i++)
        if (strcmp(r->warnings[i].where, where) == 0)
            return &r->warnings[i];
    return NULL;
}

static void print_warnings(const char *what, const crash_report *r)
{
    for (size_t i = 0; i < r->nwarnings; i++)
        printf("  %s: warning %s: %s\n", what, r->warnings[i].where, r->warnings[i].message);
}

static const char *reg(const crash_report *r, const char *name)
{
    for (size_t i = 0; i < r->nregisters; i++)
        if (strcmp(r->registers[i].name, name) == 0)
            return r->registers[i].value;
    return "";
}

static size_t frames_of_role(const crash_report *r, crash_thread_role role)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nthreads; i++)
        if (r->threads[i].role == role)
            n += r->threads[i].nframes;
    return n;
}

/* ---- util/jsonbig ------------------------------------------------------------------ */

TEST(jsonbig_integers_at_the_edges_are_exact)
{
    json_error_t e;
    json_t *a = jsonbig_loadb("[18446744073709551615, 18446744073709551616, 18446744073709551617,"
                              " -9223372036854775808, -9223372036854775809, 9223372036854775807,"
                              " 9223372036854775808, 0, -0, 10000000000000000000]",
                              strlen("[18446744073709551615, 18446744073709551616, "
                                     "18446744073709551617, -9223372036854775808, "
                                     "-9223372036854775809, 9223372036854775807, "
                                     "9223372036854775808, 0, -0, 10000000000000000000]"),
                              0, &e);
    CHECK(json_is_array(a) && json_array_size(a) == 10, "parse: %s", e.text);
    uint64_t u = 0;
    int64_t s = 0;
    CHECK(jsonbig_u64(json_array_get(a, 0), &u) && u == UINT64_MAX, "2^64-1: %" PRIu64, u);
    CHECK(!jsonbig_i64(json_array_get(a, 0), &s), "2^64-1 is no int64");
    CHECK(!jsonbig_u64(json_array_get(a, 1), &u) && jsonbig_is_integer(json_array_get(a, 1)),
          "2^64 is an integer past uint64");
    size_t n = 0;
    const char *lit = jsonbig_literal(json_array_get(a, 2), &n);
    CHECK(lit && n == 20 && memcmp(lit, "18446744073709551617", 20) == 0, "2^64+1 kept as written");
    CHECK(!jsonbig_u64(json_array_get(a, 2), &u), "2^64+1");
    CHECK(jsonbig_i64(json_array_get(a, 3), &s) && s == INT64_MIN, "-2^63");
    CHECK(!jsonbig_u64(json_array_get(a, 3), &u), "-2^63 is no uint64");
    CHECK(!jsonbig_i64(json_array_get(a, 4), &s) && !jsonbig_u64(json_array_get(a, 4), &u) &&
              jsonbig_is_integer(json_array_get(a, 4)),
          "-2^63-1 is an integer that fits neither");
    lit = jsonbig_literal(json_array_get(a, 4), &n);
    CHECK(lit && n == 20 && lit[0] == '-', "-2^63-1 kept as written");
    CHECK(json_is_integer(json_array_get(a, 5)) && jsonbig_i64(json_array_get(a, 5), &s) &&
              s == INT64_MAX,
          "2^63-1 stays a jansson integer");
    CHECK(jsonbig_u64(json_array_get(a, 6), &u) && u == (uint64_t)INT64_MAX + 1 &&
              !jsonbig_i64(json_array_get(a, 6), &s),
          "2^63");
    CHECK(jsonbig_u64(json_array_get(a, 7), &u) && u == 0 && jsonbig_u64(json_array_get(a, 8), &u) &&
              u == 0,
          "0 and -0");
    CHECK(jsonbig_u64(json_array_get(a, 9), &u) && u == 10000000000000000000ull, "1e19");
    json_decref(a);
    /* Without a big literal the text goes to jansson as is. */
    a = jsonbig_loadb("{\"a\":1}", 7, 0, &e);
    CHECK(json_is_object(a) && json_integer_value(json_object_get(a, "a")) == 1, "plain JSON");
    json_decref(a);
}

TEST(jsonbig_strings_reals_and_escapes_stay_what_they_are)
{
    const char *doc = "[\"18446744073709551616\", \"x\\\"99999999999999999999\", \"\\\\\", "
                      "99999999999999999999, 12345678901234567890.5, -1.5e-7, 1e300, "
                      "99999999999999999999e2, \"\\u001f-\", \"\\u001f\", \"\\u001f12\"]";
    json_error_t e;
    json_t *a = jsonbig_loadb(doc, strlen(doc), 0, &e);
    CHECK(json_is_array(a) && json_array_size(a) == 11, "parse: %s (line %d column %d)", e.text,
          e.line, e.column);
    if (!json_is_array(a) || json_array_size(a) != 11) {
        json_decref(a);
        return;
    }
    uint64_t u;
    size_t n;
    CHECK(json_is_string(json_array_get(a, 0)) &&
              strcmp(json_string_value(json_array_get(a, 0)), "18446744073709551616") == 0 &&
              !jsonbig_u64(json_array_get(a, 0), &u) && !jsonbig_is_integer(json_array_get(a, 0)),
          "a string of digits stays a string");
    CHECK(strcmp(json_string_value(json_array_get(a, 1)), "x\"99999999999999999999") == 0,
          "digits after an escaped quote are inside the string");
    CHECK(strcmp(json_string_value(json_array_get(a, 2)), "\\") == 0, "an escaped backslash ends");
    CHECK(jsonbig_is_integer(json_array_get(a, 3)), "the number after them is rewritten");
    CHECK(json_is_real(json_array_get(a, 4)) && json_is_real(json_array_get(a, 5)) &&
              json_is_real(json_array_get(a, 6)) && json_is_real(json_array_get(a, 7)),
          "reals are jansson's");
    CHECK(!jsonbig_is_integer(json_array_get(a, 4)) && !jsonbig_u64(json_array_get(a, 4), &u),
          "a real is no integer");
    CHECK(!jsonbig_is_integer(json_array_get(a, 8)) && !jsonbig_literal(json_array_get(a, 8), &n) &&
              !jsonbig_is_integer(json_array_get(a, 9)),
          "a mark with a sign and no digit, or nothing, is no integer");
    CHECK(jsonbig_u64(json_array_get(a, 10), &u) && u == 12, "a marked literal reads back");
    json_decref(a);
}

TEST(jsonbig_hostile_inputs_fail_cleanly)
{
    json_error_t e;
    /* A number of a million digits: kept whole, no uint64. */
    size_t big = 1000000;
    char *b = malloc(big + 3);
    b[0] = '[';
    memset(b + 1, '7', big);
    b[big + 1] = ']';
    json_t *a = jsonbig_loadb(b, big + 2, 0, &e);
    uint64_t u;
    size_t n = 0;
    CHECK(json_is_array(a) && jsonbig_literal(json_array_get(a, 0), &n) && n == big &&
              !jsonbig_u64(json_array_get(a, 0), &u),
          "a million digits: %s", e.text);
    json_decref(a);
    /* A million zeros is a leading-zero number: no JSON. */
    memset(b + 1, '0', big);
    a = jsonbig_loadb(b, big + 2, 0, &e);
    CHECK(!a, "leading zeros are refused");
    json_decref(a);
    free(b);

    /* 100k deep: jansson's depth limit (2048), a clean failure. */
    size_t deep = 100000;
    b = malloc(deep * 2 + 32);
    memset(b, '[', deep);
    memcpy(b + deep, "18446744073709551616", 20);
    memset(b + deep + 20, ']', deep);
    a = jsonbig_loadb(b, deep * 2 + 20, 0, &e);
    CHECK(!a && strstr(e.text, "depth"), "100k arrays deep: %s", e.text);
    json_decref(a);
    size_t k = 0;
    for (size_t i = 0; i < deep / 4; i++) {
        memcpy(b + k, "{\"a\":", 5);
        k += 5;
    }
    a = jsonbig_loadb(b, k, 0, &e);
    CHECK(!a, "25k objects deep, unterminated");
    json_decref(a);
    free(b);

    const char *notjson[] = {"[NaN]", "[Infinity]", "[-Infinity]", "[-]", "[1.]", "[0x10]",
                             "[18446744073709551616", "[\"\\u001f1\" 2]", "[1e400]"};
    for (size_t i = 0; i < sizeof notjson / sizeof notjson[0]; i++) {
        a = jsonbig_loadb(notjson[i], strlen(notjson[i]), 0, &e);
        CHECK(!a && e.text[0], "%s is no JSON", notjson[i]);
        json_decref(a);
    }
    a = jsonbig_loadb(NULL, 0, 0, &e);
    CHECK(!a, "nothing is no JSON");
}

/* fuzz_jsonbig's inputs once found: jsonbig reads exactly what jansson
 * reads, and beyond that only integers too big for it. */
static bool known_none(const char *key)
{
    (void)key;
    return false;
}

static void replay_jsonbig(const char *rel, const uint8_t *buf, size_t len)
{
    json_error_t e1, e2;
    json_t *plain = json_loadb((const char *)buf, len, JSON_DECODE_ANY, &e1);
    json_t *big = jsonbig_loadb((const char *)buf, len, JSON_DECODE_ANY, &e2);
    CHECK(!plain || (big && json_equal(plain, big)), "%s: jansson reads it, jsonbig differs", rel);
    CHECK(plain || !big || strstr(e1.text, "too big"), "%s: jsonbig reads what jansson refuses "
          "for \"%s\"", rel, e1.text);
    /* read member by member with room for every value: the same document,
     * or the same refusal at the same place */
    size_t skipped;
    json_error_t e3, e4;
    json_t *whole = jsonbig_loadb((const char *)buf, len, 0, &e4);
    json_t *members = jsonbig_load_members((const char *)buf, len, known_none, SIZE_MAX,
                                           &skipped, &e3);
    CHECK(whole ? members && json_equal(whole, members)
                : !members && e3.line == e4.line && e3.column == e4.column &&
                      e3.position == e4.position,
          "%s: member by member differs (%d:%d %d vs %d:%d %d)", rel, e3.line, e3.column,
          e3.position, e4.line, e4.column, e4.position);
    json_decref(whole);
    json_decref(members);
    json_decref(plain);
    json_decref(big);
}

TEST(jsonbig_fuzz_regressions)
{
    CHECK(each_regression("jsonbig-", replay_jsonbig) >= 1, "the jsonbig-* regression inputs are gone");
    /* the first one: a big integer with a leading zero is no JSON */
    json_error_t e;
    json_t *a = jsonbig_loadb("[018446744073554042404]", 23, 0, &e);
    CHECK(!a, "a big literal with a leading zero is refused like any other");
    json_decref(a);
    /* the second: a marked "-0" (only a caller writes one) reads as 0 */
    a = jsonbig_loadb("{\"s\":\"\\u001f-0\"}", 16, 0, &e);
    int64_t z = 1;
    uint64_t u = 1;
    CHECK(a && jsonbig_i64(json_object_get(a, "s"), &z) && z == 0, "marked -0 reads as 0");
    CHECK(!jsonbig_u64(json_object_get(a, "s"), &u), "but not as unsigned (it is written negative)");
    json_decref(a);
}

/* An error after a rewritten literal is placed where the caller's text has
 * it, not where the rewritten text does. */
TEST(jsonbig_error_positions_are_the_callers)
{
    json_error_t small, bigger;
    json_t *a = jsonbig_loadb("[9, x]", 6, 0, &small);
    json_t *b = jsonbig_loadb("[99999999999999999999, x]", 25, 0, &bigger);
    CHECK(!a && !b, "both fail");
    CHECK(bigger.line == small.line && bigger.column == small.column + 19 &&
              bigger.position == small.position + 19,
          "column %d/%d position %d/%d", bigger.column, small.column, bigger.position,
          small.position);
    a = jsonbig_loadb("[99999999999999999999,\n 1, x]", 29, 0, &bigger);
    b = jsonbig_loadb("[9,\n 1, x]", 10, 0, &small);
    CHECK(!a && !b && bigger.line == 2 && bigger.column == small.column &&
              bigger.position == small.position + 19,
          "next line: column %d/%d position %d/%d", bigger.column, small.column, bigger.position,
          small.position);
}

/* ---- the real reports -------------------------------------------------------- */

typedef struct {
    const char *file;  /* a part of the file name */
    int bug_type;
    crash_kind kind;
    size_t frames;     /* all frames (the manifest's count, see below) */
    size_t threads, processes;
} real_ips;

/* frames as MANIFEST.tsv counts them (checked against it as well); the 151
 * panic keeps its stackshot's 292 and adds the panic string's 13. */
static const real_ips reals[] = {
    {"stacks-2023-02-10", 288, CRASH_KIND_HANG, 5030, 1452, 358},
    {"audiomxd-2025-06-12", 288, CRASH_KIND_HANG, 7908, 2793, 599},
    {"forceReset-full", 151, CRASH_KIND_PANIC, 292 + 13, 275 + 1, 6},
    {"recoverylogd-2023", 309, CRASH_KIND_CRASH, 127, 32, 0},
    {"monterey_non_symbolicated", 309, CRASH_KIND_CRASH, 4, 1, 0},
    {"MemoryLeakingApp", 309, CRASH_KIND_CRASH, 45, 3, 0},
    {"jetsam_highwater", 298, CRASH_KIND_JETSAM, 0, 0, 134},
    {"ipados15-amongus", 309, CRASH_KIND_CRASH, 328, 34, 0},
};

/* The manifest's frames column for a file, -1 when it has no row. */
static long manifest_frames(const char *dir, const char *part)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST.tsv", dir);
    size_t len;
    char *m = (char *)read_file(path, &len);
    long frames = -1;
    for (char *line = m ? strtok(m, "\n") : NULL; line && frames < 0; line = strtok(NULL, "\n")) {
        if (!strstr(line, part))
            continue;
        char *col = line;
        for (int c = 0; c < 8 && col; c++) { /* file, repo, path, commit, format, os, arch, bug_type */
            col = strchr(col, '\t');
            col = col ? col + 1 : NULL;
        }
        if (col)
            frames = strtol(col, NULL, 10);
    }
    free(m);
    return frames;
}

TEST(ips_real_reports_of_every_bug_type)
{
    const char *rep = real_reports_dir(), *cr = real_crashes_dir();
    if (!rep || !cr) {
        test_skip("../shared/real-reports or real-crashes is absent");
        return;
    }
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        const real_ips *w = &reals[i];
        const char *dir = strstr(w->file, "amongus") ? cr : rep;
        size_t len;
        uint8_t *buf = load_report(dir, w->file, &len);
        if (!buf)
            continue;
        crash_report r;
        symd_err err;
        symd_status st = parse_buf(buf, len, &r, &err);
        free(buf);
        CHECK(st == SYMD_OK, "%s: %s", w->file, err.msg);
        if (st)
            continue;
        printf("  %-28s kind %-6s threads %zu frames %zu images %zu processes %zu warnings %zu\n",
               w->file, crash_kind_name(r.kind), r.nthreads, r.total_frames, r.nimages,
               r.nprocesses, r.nwarnings);
        print_warnings(w->file, &r);
        CHECK(r.format == CRASH_FORMAT_IPS && r.bug_type == w->bug_type && r.kind == w->kind,
              "%s: format %d bug_type %d kind %s", w->file, r.format, r.bug_type,
              crash_kind_name(r.kind));
        CHECK(r.total_frames == w->frames, "%s: %zu frames, want %zu", w->file, r.total_frames,
              w->frames);
        long mf = manifest_frames(dir, w->file);
        size_t kernel = frames_of_role(&r, CRASH_THREAD_KERNEL);
        CHECK(mf < 0 || (size_t)mf == r.total_frames - kernel,
              "%s: the manifest says %ld frames, the stackshot/threads hold %zu", w->file, mf,
              r.total_frames - kernel);
        CHECK(r.nthreads == w->threads && r.nprocesses == w->processes,
              "%s: %zu threads %zu processes", w->file, r.nthreads, r.nprocesses);
        CHECK(r.nwarnings == 0 && r.nwarnings_dropped == 0, "%s: %zu warnings on a well-formed "
              "report", w->file, r.nwarnings);
        size_t sum = 0, imageless = 0;
        for (size_t t = 0; t < r.nthreads; t++)
            for (size_t k = 0; k < r.threads[t].nframes; k++, sum++)
                imageless += r.threads[t].frames[k].image < 0;
        CHECK(sum == r.total_frames && imageless == 0, "%s: %zu frames without an image",
              w->file, imageless);
        if (w->kind == CRASH_KIND_HANG)
            CHECK(r.crashed_thread == -1, "%s: no crashed thread", w->file);
        crash_report_free(&r);
    }
}

/* Values past 2^63 read exactly: registers with PAC bits, kernel addresses. */
TEST(ips_big_values_are_exact)
{
    const char *rep = real_reports_dir();
    if (!rep) {
        test_skip("../shared/real-reports is absent");
        return;
    }
    size_t len;
    crash_report r;
    symd_err err;
    uint8_t *buf = load_report(rep, "recoverylogd-2023", &len);
    if (buf && parse_buf(buf, len, &r, &err) == SYMD_OK) {
        /* x9 16890699336612380808, x10 18446744065477793195 in the file */
        CHECK(strcmp(reg(&r, "x9"), "0xea67d18e4eb50088") == 0, "x9 %s", reg(&r, "x9"));
        CHECK(strcmp(reg(&r, "x10"), "0xfffffffe155955ab") == 0, "x10 %s", reg(&r, "x10"));
        CHECK(strcmp(reg(&r, "lr"), "0x00000001eaa19e70") == 0, "lr %s", reg(&r, "lr"));
        CHECK(r.nregisters == 29 + 7, "registers %zu", r.nregisters);
        CHECK(r.crashed_thread == 5 && r.threads[5].crashed, "crashed thread %ld", r.crashed_thread);
        CHECK(r.app_specific && strcmp(r.app_specific, "assertion failure: \"fd != -1\" -> %lld") == 0,
              "asi: %s", r.app_specific);
        CHECK(r.termination && strcmp(r.termination, "Namespace LIBSYSTEM, Code 0x2 Application "
                                                      "Triggered Fault") == 0,
              "termination: %s", r.termination);
        crash_report_free(&r);
    } else {
        CHECK(false, "recoverylogd: %s", buf ? err.msg : "missing");
    }
    free(buf);

    buf = load_report(rep, "stacks-2023-02-10", &len);
    if (buf && parse_buf(buf, len, &r, &err) == SYMD_OK) {
        /* binaryImages[0] is at 18446743936270598144; processByPid "0", thread 624 (the
         * fourth), kernelFrames[0] is [0, 68850944084] */
        const crash_image *im = &r.images[0];
        CHECK(im->load_address == 0xffffffe000000000ull &&
                  uuid_is(im, "291aaed2-c0da-67f8-2467-48a64e41174c"),
              "image 0 at %#" PRIx64, im->load_address);
        const crash_thread *th = &r.threads[3];
        CHECK(th->number == 624 && th->process == 0 && th->nframes > 0 &&
                  th->frames[0].address == 18446744005121542228ull && th->frames[0].image == 0 &&
                  th->frames[0].has_load && th->frames[0].load_address == im->load_address,
              "thread 624 frame 0: %#" PRIx64, th->nframes ? th->frames[0].address : 0);
        CHECK(r.processes[0].pid == 0 && strcmp(r.processes[0].name, "kernel_task") == 0 &&
                  r.processes[0].detail && strstr(r.processes[0].detail, "residentMemoryBytes: "),
              "process 0: %s", r.processes[0].detail);
        CHECK(!r.images[1].has_uuid && r.images[1].load_address == 0, "the all-zero UUID is none");
        CHECK(r.exception_codes && strcmp(r.exception_codes, "0xbaaaaaad") == 0 && r.termination &&
                  strstr(r.termination, "sysdiagnose"),
              "exception %s, reason %s", r.exception_codes, r.termination);
        CHECK(r.app_specific && strstr(r.app_specific, "\nnotes: [\"Requested by sysdiagnose\"") &&
                  !strstr(r.app_specific, "processByPid"),
              "the other fields: %.200s", r.app_specific);
        crash_report_free(&r);
    } else {
        CHECK(false, "stacks: %s", buf ? err.msg : "missing");
    }
    free(buf);

    buf = load_report(rep, "audiomxd-2025-06-12", &len);
    if (buf && parse_buf(buf, len, &r, &err) == SYMD_OK) {
        CHECK(r.process && strcmp(r.process, "audiomxd") == 0, "process %s", r.process);
        /* process 68 is audiomxd (pid 107): its first thread 181633 on
         * com.apple.root.default-qos starts in the shared cache at 6442450944 + 1406827748 */
        const crash_thread *th = NULL;
        for (size_t t = 0; t < r.nthreads && !th; t++)
            if (r.threads[t].number == 181633)
                th = &r.threads[t];
        CHECK(th && th->process == 68 && r.processes[68].pid == 107 && th->queue &&
                  strcmp(th->queue, "com.apple.root.default-qos") == 0,
              "thread 181633");
        if (th) {
            const crash_frame *f = &th->frames[0];
            for (size_t k = 0; k < th->nframes; k++)
                if (r.images[th->frames[k].image].load_address != 0xfffffff000000000ull &&
                    !r.images[th->frames[k].image].has_end) {
                    f = &th->frames[k]; /* the first user frame (after any kernel ones) */
                    break;
                }
            CHECK(f->address == 6442450944ull + 1406827748ull &&
                      uuid_is(&r.images[f->image], "bf83c22c-59b4-3516-9041-4888132089ed"),
                  "first user frame %#" PRIx64, f->address);
        }
        crash_report_free(&r);
    } else {
        CHECK(false, "audiomxd: %s", buf ? err.msg : "missing");
    }
    free(buf);
}

/* 298: metadata and processes, no frames, no warning. */
TEST(ips_jetsam_processes)
{
    const char *rep = real_reports_dir();
    if (!rep) {
        test_skip("../shared/real-reports is absent");
        return;
    }
    size_t len;
    uint8_t *buf = load_report(rep, "jetsam_highwater", &len);
    crash_report r;
    symd_err err;
    if (!buf || parse_buf(buf, len, &r, &err) != SYMD_OK) {
        CHECK(false, "jetsam: %s", buf ? err.msg : "missing");
        free(buf);
        return;
    }
    free(buf);
    const crash_process *sb = NULL;
    for (size_t i = 0; i < r.nprocesses; i++)
        if (r.processes[i].name && strcmp(r.processes[i].name, "SpringBoard") == 0)
            sb = &r.processes[i];
    CHECK(sb && sb->pid == 22873 && sb->detail && strstr(sb->detail, "reason: highwater") &&
              strstr(sb->detail, "rpages: 61443") && strstr(sb->detail, "states: []"),
          "SpringBoard: %s", sb ? sb->detail : "missing");
    CHECK(r.processes[0].pid == 22843 && strcmp(r.processes[0].name, "heard") == 0 &&
              strstr(r.processes[0].detail, "states: [\"daemon\", \"idle\"]"),
          "first process: %s", r.processes[0].detail);
    CHECK(r.process && strcmp(r.process, "SpringBoard") == 0 && r.hardware_model &&
              strcmp(r.hardware_model, "iPhone7,2") == 0 && r.os_version &&
              strcmp(r.os_version, "iPhone OS 10.1.1 (14B100)") == 0,
          "fields");
    CHECK(r.app_specific && strstr(r.app_specific, "memoryStatus: {\"compressorSize\": 70976") &&
              strstr(r.app_specific, "\ngenCounter: 1"),
          "metadata: %s", r.app_specific);
    CHECK(r.nthreads == 0 && r.total_frames == 0 && r.nwarnings == 0, "no threads, no warnings");
    crash_report_free(&r);
}

/* ---- panics -------------------------------------------------------------------- */

static void check_kext(const crash_report *r, const char *name, const char *uuid, uint64_t lo,
                       uint64_t hi)
{
    for (size_t i = 0; i < r->nimages; i++) {
        const crash_image *im = &r->images[i];
        if (im->name && strcmp(im->name, name) == 0) {
            CHECK(uuid_is(im, uuid) && im->load_address == lo && im->has_end &&
                      im->end_address == hi,
                  "%s at %#" PRIx64 "-%#" PRIx64, name, im->load_address, im->end_address);
            return;
        }
    }
    CHECK(false, "no kext %s", name);
}

/* The kernel thread of a panic: frames, and the image frame k resolves to. */
static const crash_thread *kernel_thread(const crash_report *r)
{
    for (size_t i = 0; i < r->nthreads; i++)
        if (r->threads[i].role == CRASH_THREAD_KERNEL)
            return &r->threads[i];
    return NULL;
}

static const char *image_of(const crash_report *r, const crash_thread *th, size_t k)
{
    if (!th || k >= th->nframes || th->frames[k].image < 0)
        return "";
    const char *n = r->images[th->frames[k].image].name;
    return n ? n : "";
}

TEST(ips_panic_151_with_stackshot)
{
    const char *rep = real_reports_dir();
    if (!rep) {
        test_skip("../shared/real-reports is absent");
        return;
    }
    size_t len;
    uint8_t *buf = load_report(rep, "forceReset-full", &len);
    crash_report r;
    symd_err err;
    if (!buf || parse_buf(buf, len, &r, &err) != SYMD_OK) {
        CHECK(false, "forceReset: %s", buf ? err.msg : "missing");
        free(buf);
        return;
    }
    free(buf);
    const crash_thread *k = kernel_thread(&r);
    CHECK(k == &r.threads[0] && k->nframes == 13 && k->number == 798 && k->crashed &&
              r.crashed_thread == 0,
          "kernel thread");
    CHECK(k && k->title && strncmp(k->title, "Panicked thread: 0xffffffe90ed3ced8", 35) == 0,
          "title %s", k ? k->title : "");
    CHECK(r.panic_string && strncmp(r.panic_string, "panic(cpu 1 caller 0xfffffff02e156784): btn_rst",
                                    47) == 0,
          "panic string");
    check_kext(&r, "com.apple.driver.AppleM68Buttons", "6AAC7152-26B3-355D-95F0-EC89EFA4152C",
               0xfffffff02e13c800ull, 0xfffffff02e156783ull);
    /* lr 0xfffffff02e156784 is one past the kext's end: the kernel; 0xfffffff02e1430a4 in it */
    CHECK(k && k->frames[8].address == 0xfffffff02e156784ull &&
              strcmp(image_of(&r, k, 8), "kernel") == 0 &&
              strcmp(image_of(&r, k, 9), "com.apple.driver.AppleM68Buttons") == 0 &&
              strcmp(image_of(&r, k, 0), "kernel") == 0,
          "frames resolve: %s %s %s", image_of(&r, k, 8), image_of(&r, k, 9), image_of(&r, k, 0));
    for (size_t i = 0; i < r.nimages; i++)
        if (r.images[i].name && strcmp(r.images[i].name, "kernel") == 0)
            CHECK(uuid_is(&r.images[i], "E162E369-A92E-3EB7-872F-862218FB860F") &&
                      r.images[i].load_address == 0xfffffff02cec4000ull,
                  "kernel image");
    /* The stackshot lists the kext unslid (0xfffffff008e64800, slide 0x252d8000): an
     * image of its own, its frames at the stackshot's addresses. */
    size_t same = 0;
    for (size_t i = 0; i < r.nimages; i++)
        if (uuid_is(&r.images[i], "6AAC7152-26B3-355D-95F0-EC89EFA4152C"))
            same += r.images[i].load_address == 0xfffffff02e13c800ull ? 1
                    : r.images[i].load_address == 0xfffffff008e64800ull ? 10 : 100;
    CHECK(same == 11, "the kext's images: %zu", same);
    CHECK(strcmp(r.process, "kernel_task") == 0 && strcmp(r.hardware_model, "iPhone11,8") == 0,
          "fields");
    crash_report_free(&r);
}

/* A text panic through crash_parse_panic_text directly (the text reader's
 * detection is another file's). */
static void panic_text(const char *file, size_t want_frames, const char *first_title,
                       size_t frame, const char *frame_image, const char *kext,
                       const char *kext_uuid, uint64_t lo, uint64_t hi)
{
    const char *rep = real_reports_dir();
    size_t len;
    uint8_t *buf = load_report(rep, file, &len);
    if (!buf)
        return;
    CHECK(crash_looks_like_panic((const char *)buf, len), "%s looks like a panic", file);
    crash_report r;
    memset(&r, 0, sizeof r);
    r.crashed_thread = -1;
    symd_err err;
    symd_err_clear(&err);
    cp p = {.r = &r, .err = &err};
    symd_status st = crash_parse_panic_text(&p, (const char *)buf, len, 1);
    free(p.cap_frames);
    CHECK(st == SYMD_OK, "%s: %s", file, err.msg);
    print_warnings(file, &r);
    const crash_thread *k = kernel_thread(&r);
    CHECK(r.total_frames == want_frames && r.nthreads == 1 && k && k->crashed &&
              r.crashed_thread == 0 && r.nwarnings == 0 && r.kind == CRASH_KIND_PANIC,
          "%s: %zu frames, %zu threads, %zu warnings", file, r.total_frames, r.nthreads,
          r.nwarnings);
    long mf = manifest_frames(rep, file);
    CHECK(mf == (long)r.total_frames, "%s: manifest %ld", file, mf);
    CHECK(k && k->title && strcmp(k->title, first_title) == 0, "%s: title %s", file,
          k ? k->title : "");
    CHECK(strcmp(image_of(&r, k, frame), frame_image) == 0, "%s: frame %zu in %s", file, frame,
          image_of(&r, k, frame));
    check_kext(&r, kext, kext_uuid, lo, hi);
    CHECK(r.panic_string && strncmp(r.panic_string, "panic(cpu ", 10) == 0, "%s: panic string",
          file);
    CHECK(strlen(r.panic_string) + (r.text_header ? strlen(r.text_header) : 0) == len,
          "%s: text_header and panic_string hold the whole text", file);
    crash_report_free(&r);

    /* And through crash_parse, once the text reader sends panics here. */
    st = parse_buf(buf, len, &r, &err);
    CHECK(st == SYMD_OK && r.kind == CRASH_KIND_PANIC && r.total_frames == want_frames,
          "%s through crash_parse: %d %s, kind %s, %zu frames", file, st, err.msg,
          crash_kind_name(r.kind), r.total_frames);
    if (st == SYMD_OK)
        crash_report_free(&r);
    free(buf);
}

TEST(ips_panic_text_files)
{
    if (!real_reports_dir()) {
        test_skip("../shared/real-reports is absent");
        return;
    }
    panic_text("gpu_panic_osx", 28, "Backtrace (CPU 1), Frame : Return Address", 6,
               "com.apple.driver.AppleMuxControl", "com.apple.iokit.IOGraphicsFamily",
               "D5F2A20D-CAB0-33B2-91B9-E8755DFC34CB", 0xffffff7f88404000ull,
               0xffffff7f8844cfffull);
    panic_text("m1_mac_mini_serror", 15,
               "Panicked thread: 0xfffffe150e755398, backtrace: 0xfffffe608930b730, tid: 819", 9,
               "com.apple.driver.RTBuddy", "com.apple.driver.IOSlaveProcessor",
               "F2A278B0-5779-3688-BDCA-563C500013A5", 0xfffffe002b940b60ull,
               0xfffffe002b9424a3ull);
}

/* 210 whose body is no JSON: accepted, its header read, one warning; the
 * panic string is still found in the text. */
TEST(ips_panic_210_broken_body)
{
    const char *rep = real_reports_dir();
    if (!rep) {
        test_skip("../shared/real-reports is absent");
        return;
    }
    size_t len;
    uint8_t *buf = load_report(rep, "imac_bridge_os", &len);
    if (!buf)
        return;
    crash_report r;
    symd_err err;
    symd_status st = parse_buf(buf, len, &r, &err);
    CHECK(st == SYMD_OK, "imac_bridge_os: %s", err.msg);
    if (st == SYMD_OK) {
        print_warnings("imac_bridge_os", &r);
        CHECK(r.bug_type == 210 && r.kind == CRASH_KIND_PANIC && r.nwarnings == 1 &&
                  strcmp(r.warnings[0].where, "line 15") == 0 &&
                  strncmp(r.warnings[0].message, "the JSON body does not parse", 28) == 0,
              "one warning");
        crash_report_free(&r);
    }
    /* The salvage crash.c is to call after that warning. */
    const char *body = memchr(buf, '\n', len);
    json_error_t je;
    json_t *hdr = jsonbig_loadb((const char *)buf, (size_t)(body - (const char *)buf), 0, &je);
    memset(&r, 0, sizeof r);
    r.crashed_thread = -1;
    symd_err_clear(&err);
    cp p = {.r = &r, .err = &err};
    body++;
    st = crash_parse_ips_broken(&p, body, len - (size_t)(body - (const char *)buf), hdr);
    free(p.cap_frames);
    json_decref(hdr);
    const crash_thread *k = kernel_thread(&r);
    CHECK(st == SYMD_OK && r.total_frames == 12 && k && k->number == 337 &&
              k->frames[11].address == 0xfffffff0152ec500ull && r.nwarnings == 0,
          "salvaged: %d %s, %zu frames", st, err.msg, r.total_frames);
    CHECK(r.panic_string && strncmp(r.panic_string, "panic(cpu 0 caller 0xfffffff014aae984): x86 "
                                                    "CPU CATERR detected", 58) == 0,
          "panic string");
    CHECK(r.hardware_model && strcmp(r.hardware_model, "iBridge2,1") == 0 && r.os_version &&
              strcmp(r.os_version, "Bridge OS 2.3.1 (15P5064)") == 0 && r.incident_id &&
              strcmp(r.incident_id, "A6E6A47A-C0D1-4548-9846-B839CF4B") == 0,
          "fields %s %s %s", r.hardware_model, r.os_version, r.incident_id);
    crash_report_free(&r);
    free(buf);
}

/* ---- bodies written here: the error paths ------------------------------------ */

TEST(ips_309_sections)
{
    const char *rep =
        "{\"bug_type\":\"309\"}\n"
        "{\"procName\":\"App\",\"faultingThread\":1,\n"
        " \"usedImages\":[{\"base\":4096,\"size\":4096,\"uuid\":\"00000000-0000-0000-0000-000000000000\"},"
        "{\"base\":18446744073709486080,\"size\":65536,\"path\":\"/usr/lib/libx.dylib\","
        "\"uuid\":\"6c9a0f8b-2d1e-3f4a-5b6c-7d8e9f0a1b2c\",\"source\":\"P\"}],\n"
        " \"threads\":[{\"frames\":[{\"imageIndex\":0,\"imageOffset\":1}]},\n"
        "  {\"triggered\":true,\"threadState\":{\"flavor\":\"ARM_THREAD_STATE64\","
        "\"x\":[{\"value\":18446744073709551615},{\"value\":9223372036854775808}],"
        "\"pc\":{\"value\":18446744073709486081},\"esr\":{\"value\":1442840704,\"description\":\" Address size fault\"},"
        "\"cpu\":{\"value\":3}},\n"
        "   \"frames\":[{\"imageOffset\":1234},{},{\"imageIndex\":1,\"imageOffset\":65535}]}],\n"
        " \"lastExceptionBacktrace\":[{\"imageIndex\":1,\"imageOffset\":16,\"symbol\":\"objc_exception_throw\"},"
        "{\"imageOffset\":140737488355328}],\n"
        " \"asi\":{\"libsystem_c.dylib\":[\"abort() called\"],\"CoreFoundation\":[\"*** Terminating app\",\"second\"]},\n"
        " \"exception\":{\"type\":\"EXC_CRASH\",\"signal\":\"SIGABRT\",\"rawCodes\":[18446744073709551615,0],"
        "\"subtype\":\"KERN_INVALID_ADDRESS at 0x0\"},\n"
        " \"termination\":{\"namespace\":\"FRONTBOARD\",\"code\":2343432205,\"reasons\":[\"a\\nb\",\"c\"],"
        "\"byProc\":\"exc handler\",\"byPid\":12},\n"
        " \"vmRegionInfo\":\"0 is not in any region.\",\n"
        " \"ktriageinfo\":\"VM - (arg = 0x0) pmap_enter retried\\nVM - two\\n\"}\n";
    crash_report r;
    symd_err err;
    CHECK(parse_str(rep, &r, &err) == SYMD_OK, "parse: %s", err.msg);
    if (err.kind)
        return;
    print_warnings("309 sections", &r);
    CHECK(r.nwarnings == 0, "no warnings");
    CHECK(r.nthreads == 3 && r.crashed_thread == 1 && r.threads[1].crashed, "threads %zu, crashed %ld",
          r.nthreads, r.crashed_thread);
    const crash_thread *leb = &r.threads[2];
    CHECK(leb->role == CRASH_THREAD_LAST_EXCEPTION && leb->number == -1 && !leb->crashed &&
              strcmp(leb->title, "Last Exception Backtrace:") == 0 && leb->nframes == 2 &&
              leb->frames[0].address == 18446744073709486080ull + 16 && leb->frames[0].image == 1 &&
              strcmp(leb->frames[0].image_name, "libx.dylib") == 0 &&
              leb->frames[1].address == 140737488355328ull && leb->frames[1].image == -1 &&
              !leb->frames[1].has_load,
          "last exception backtrace");
    const crash_thread *t1 = &r.threads[1];
    CHECK(t1->nframes == 3 && t1->frames[0].address == 1234 && t1->frames[0].image == -1 &&
              t1->frames[1].address == 0 && t1->frames[1].image == -1 &&
              t1->frames[2].address == UINT64_MAX && t1->frames[2].image == 1,
          "frames without imageIndex are kept");
    CHECK(!r.images[0].has_uuid && r.images[1].has_uuid && r.images[1].has_end &&
              r.images[1].end_address == UINT64_MAX,
          "images");
    CHECK(strcmp(reg(&r, "x0"), "0xffffffffffffffff") == 0 &&
              strcmp(reg(&r, "x1"), "0x8000000000000000") == 0 &&
              strcmp(reg(&r, "pc"), "0xffffffffffff0001") == 0 &&
              strcmp(reg(&r, "esr"), "0x0000000056000080 Address size fault") == 0 &&
              strcmp(reg(&r, "cpu"), "0x0000000000000003") == 0 && r.nregisters == 5,
          "registers");
    CHECK(strcmp(r.app_specific, "abort() called\n*** Terminating app\nsecond") == 0, "asi: %s",
          r.app_specific);
    CHECK(strcmp(r.exception_codes, "0xffffffffffffffff, 0x0000000000000000") == 0, "codes %s",
          r.exception_codes);
    CHECK(strcmp(r.termination, "Namespace FRONTBOARD, Code 0x8badf00d, a b, c") == 0,
          "termination %s", r.termination);
    CHECK(r.nblocks == 1 && r.blocks[0].at == CRASH_AT_THREAD && r.blocks[0].thread == 0 &&
              strcmp(r.blocks[0].text,
                     "Exception Subtype: KERN_INVALID_ADDRESS at 0x0\n"
                     "Terminating Process: exc handler [12]\n"
                     "VM Region Info: 0 is not in any region.\n"
                     "\nKernel Triage:\nVM - (arg = 0x0) pmap_enter retried\nVM - two\n") == 0,
          "block: %s", r.nblocks ? r.blocks[0].text : "");
    crash_report_free(&r);
}

/* Each broken value: skipped with a warning at its path, the report kept. */
static void expect_warning(const char *what, const char *body, const char *where,
                           const char *msg, size_t frames)
{
    char rep[4096];
    snprintf(rep, sizeof rep, "{\"bug_type\":\"309\"}\n%s", body);
    crash_report r;
    symd_err err;
    symd_status st = parse_str(rep, &r, &err);
    CHECK(st == SYMD_OK, "%s: %s", what, err.msg);
    if (st)
        return;
    const crash_warning *w = warning_at(&r, where);
    CHECK(w && strstr(w->message, msg), "%s: warning at %s \"%s\"", what, where,
          w ? w->message : (r.nwarnings ? r.warnings[0].where : "none"));
    CHECK(r.total_frames == frames, "%s: %zu frames, want %zu", what, r.total_frames, frames);
    crash_report_free(&r);
}

TEST(ips_wrong_values_are_warnings)
{
    const char *img = "\"usedImages\":[{\"base\":4096,\"size\":16}]";
    char b[2048];
    snprintf(b, sizeof b, "{%s,\"threads\":[{\"frames\":[{\"imageIndex\":0,\"imageOffset\":0},"
             "{\"imageIndex\":1,\"imageOffset\":0}]}]}", img);
    expect_warning("imageIndex past usedImages", b, "threads[0].frames[1].imageIndex",
                   "1 is past usedImages (1): frame skipped", 1);
    snprintf(b, sizeof b, "{%s,\"threads\":[{\"frames\":[{\"imageIndex\":0,\"imageOffset\":-4}]}]}",
             img);
    expect_warning("negative imageOffset", b, "threads[0].frames[0].imageOffset",
                   "a negative integer, not an unsigned 64-bit integer: the frame skipped", 0);
    snprintf(b, sizeof b, "{%s,\"threads\":[{\"frames\":[{\"imageIndex\":\"0\",\"imageOffset\":4}]}]}",
             img);
    expect_warning("string imageIndex", b, "threads[0].frames[0].imageIndex", "a string", 0);
    snprintf(b, sizeof b, "{%s,\"threads\":[{\"frames\":[{\"imageIndex\":0,\"imageOffset\":1.5}]}]}",
             img);
    expect_warning("real imageOffset", b, "threads[0].frames[0].imageOffset", "a real", 0);
    snprintf(b, sizeof b, "{%s,\"threads\":[{\"frames\":[{\"imageIndex\":0,"
             "\"imageOffset\":18446744073709551615}]}]}", img);
    expect_warning("past 2^64", b, "threads[0].frames[0].imageOffset", "passes 2^64", 0);
    snprintf(b, sizeof b, "{%s,\"threads\":[{\"frames\":[{\"imageIndex\":0,"
             "\"imageOffset\":18446744073709551616}]}]}", img);
    expect_warning("2^64", b, "threads[0].frames[0].imageOffset", "an integer past 2^64-1", 0);
    snprintf(b, sizeof b, "{%s,\"threads\":[{\"frames\":[{\"imageIndex\":0}]}]}", img);
    expect_warning("no imageOffset", b, "threads[0].frames[0]", "without imageOffset", 0);
    snprintf(b, sizeof b, "{%s,\"threads\":[{\"frames\":[7,{\"imageIndex\":0,\"imageOffset\":2,"
             "\"symbol\":7,\"sourceLine\":4294967296}]}]}", img);
    expect_warning("frame not an object", b, "threads[0].frames[0]", "an integer, not an object", 1);
    expect_warning("symbol not a string", b, "threads[0].frames[1].symbol", "not a string", 1);
    expect_warning("sourceLine too big", b, "threads[0].frames[1].sourceLine", "past 2^32-1", 1);
    expect_warning("negative base", "{\"usedImages\":[{\"base\":-1}],\"threads\":[]}",
                   "usedImages[0].base", "a negative integer", 0);
    expect_warning("bad uuid", "{\"usedImages\":[{\"uuid\":\"xyz\"}],\"threads\":[]}",
                   "usedImages[0].uuid", "\"xyz\" is not a UUID", 0);
    expect_warning("image not an object",
                   "{\"usedImages\":[3,{\"base\":8}],\"threads\":[{\"frames\":[{\"imageIndex\":1,"
                   "\"imageOffset\":1}]}]}",
                   "usedImages[0]", "not an object", 1);
    expect_warning("faultingThread", "{\"faultingThread\":3,\"threads\":[]}", "faultingThread",
                   "3 is not an index into threads (0)", 0);
    expect_warning("name type", "{\"threads\":[{\"name\":7}]}", "threads[0].name",
                   "an integer, not a string", 0);
    expect_warning("big name", "{\"threads\":[{\"name\":99999999999999999999}]}", "threads[0].name",
                   "an integer past 2^64-1, not a string", 0);
    expect_warning("thread not an object", "{\"threads\":[1,{}]}", "threads[0]", "an empty thread", 0);
    expect_warning("threads not an array", "{\"threads\":{}}", "threads", "not an array", 0);
    expect_warning("register", "{\"faultingThread\":0,\"threads\":[{\"threadState\":{\"x\":[1,"
                   "{\"value\":\"a\"}],\"pc\":{\"value\":-5}}}]}",
                   "threads[0].threadState.pc", "a negative integer", 0);
    expect_warning("x[0]", "{\"faultingThread\":0,\"threads\":[{\"threadState\":{\"x\":[1]}}]}",
                   "threads[0].threadState.x[0]", "without a value", 0);
    expect_warning("asi", "{\"threads\":[],\"asi\":{\"a\":[1]}}", "asi.a[0]", "not a string", 0);
    expect_warning("rawCodes", "{\"threads\":[],\"exception\":{\"rawCodes\":[\"x\"]}}",
                   "exception.rawCodes[0]", "a string", 0);
    expect_warning("termination", "{\"threads\":[],\"termination\":[]}", "termination",
                   "not an object", 0);
    expect_warning("lastExceptionBacktrace", "{\"threads\":[],\"lastExceptionBacktrace\":{}}",
                   "lastExceptionBacktrace", "not an array", 0);
    expect_warning("no threads", "{\"a\":1}", "body", "no threads, processByPid", 0);

    /* Limits still refuse. */
    size_t cap = 100000 * 40 + 100, n = 0;
    char *big = malloc(cap);
    n = (size_t)snprintf(big, cap, "{\"bug_type\":\"309\"}\n{\"usedImages\":[{}],\"threads\":[{\"frames\":[");
    for (int i = 0; i < CRASH_MAX_FRAMES + 1; i++)
        n += (size_t)snprintf(big + n, cap - n, "%s{\"imageOffset\":%d}", i ? "," : "", i);
    n += (size_t)snprintf(big + n, cap - n, "]}]}");
    crash_report r;
    symd_err err;
    CHECK(parse_buf((const uint8_t *)big, n, &r, &err) == SYMD_E_TOO_LARGE &&
              strstr(err.msg, "frames"),
          "100001 frames: %s", err.msg);
    free(big);
}

TEST(ips_stackshot_and_jetsam_written_here)
{
    const char *ss =
        "{\"bug_type\":\"288\"}\n"
        "{\"pid\":9,\"reason\":\"hang\",\"binaryImages\":[[\"00000000-0000-0000-0000-000000000000\",0,\"A\"],"
        "[\"6c9a0f8b-2d1e-3f4a-5b6c-7d8e9f0a1b2c\",18446744073709486080,\"U\",\"kern\"],7,"
        "[\"zz\",\"x\",\"P\"]],\n"
        " \"processByPid\":{\"9\":{\"procname\":\"app\",\"flags\":[\"a\"],\"threadById\":{"
        "\"5\":{\"id\":5,\"name\":\"main\",\"dispatch_queue_label\":\"q\",\"kernelFrames\":[[1,65535]],"
        "\"userFrames\":[[0,4096],[9,1],[1,65536],[\"x\",1],{\"imageIndex\":0,\"imageOffset\":8}]},"
        "\"6\":3}},\"12\":{\"pid\":12,\"threadById\":{\"7\":{}}},\"13\":[]}}\n";
    crash_report r;
    symd_err err;
    CHECK(parse_str(ss, &r, &err) == SYMD_OK, "parse: %s", err.msg);
    if (!err.kind) {
        print_warnings("stackshot", &r);
        CHECK(r.kind == CRASH_KIND_HANG && r.nprocesses == 2 && r.nthreads == 2 &&
                  r.crashed_thread == -1 && strcmp(r.process, "app") == 0,
              "stackshot shape");
        const crash_thread *t = &r.threads[0];
        CHECK(t->number == 5 && t->process == 0 && strcmp(t->name, "main") == 0 &&
                  strcmp(t->queue, "q") == 0 && t->nframes == 3 &&
                  t->frames[0].address == UINT64_MAX && t->frames[0].image == 1 &&
                  strcmp(t->frames[0].image_name, "kern") == 0 &&
                  t->frames[1].address == 4096 && !t->frames[1].has_load &&
                  t->frames[2].address == 8,
              "frames");
        CHECK(r.threads[1].process == 1 && r.processes[1].pid == 12 && r.nimages == 4 &&
                  !r.images[0].has_uuid && !r.images[2].has_uuid,
              "second process, placeholder images");
        CHECK(warning_at(&r, "processByPid.9.threadById.5.userFrames[1]") &&
                  warning_at(&r, "processByPid.9.threadById.5.userFrames[2]") &&
                  warning_at(&r, "processByPid.9.threadById.5.userFrames[3]") &&
                  warning_at(&r, "processByPid.9.threadById.6") &&
                  warning_at(&r, "processByPid.13") && warning_at(&r, "binaryImages[2]") &&
                  warning_at(&r, "binaryImages[3].uuid") && warning_at(&r, "binaryImages[3].base") &&
                  r.nwarnings == 8,
              "warnings %zu", r.nwarnings);
        CHECK(strcmp(r.processes[0].detail, "flags: [\"a\"]") == 0, "detail %s",
              r.processes[0].detail);
        crash_report_free(&r);
    }
    const char *js = "{\"bug_type\":\"298\"}\n{\"largestProcess\":\"a\",\"processes\":[{\"pid\":1,"
                     "\"name\":\"a\",\"rpages\":18446744073709551615,\"reason\":\"per-process-limit\"},"
                     "\"x\",{\"pid\":\"2\"}]}";
    CHECK(parse_str(js, &r, &err) == SYMD_OK, "jetsam: %s", err.msg);
    if (!err.kind) {
        CHECK(r.kind == CRASH_KIND_JETSAM && r.nprocesses == 2 && r.nthreads == 0 &&
                  strcmp(r.processes[0].detail,
                         "rpages: 18446744073709551615, reason: per-process-limit") == 0 &&
                  r.processes[1].pid == -1 && warning_at(&r, "processes[1]") &&
                  warning_at(&r, "processes[2].pid") && r.nwarnings == 2,
              "jetsam: %s", r.nprocesses ? r.processes[0].detail : "");
        crash_report_free(&r);
    }
    CHECK(parse_str("{\"bug_type\":\"298\"}\n{\"a\":1}", &r, &err) == SYMD_OK &&
              r.nwarnings == 1 && strcmp(r.app_specific, "a: 1") == 0,
          "a 298 without processes: %s", err.msg);
    if (!err.kind)
        crash_report_free(&r);
}

/* crash.c hands over objects only; a root of another type is warned. */
TEST(ips_body_of_another_type)
{
    crash_report r;
    memset(&r, 0, sizeof r);
    r.crashed_thread = -1;
    symd_err err;
    symd_err_clear(&err);
    cp p = {.r = &r, .err = &err};
    json_t *root = json_array(), *hdr = json_pack("{s:s,s:s}", "bug_type", "309", "name", "x");
    CHECK(crash_parse_ips_body(&p, root, hdr) == SYMD_OK && r.nwarnings == 1 &&
              strcmp(r.warnings[0].where, "body") == 0 &&
              strstr(r.warnings[0].message, "an array, not an object") && r.process &&
              strcmp(r.process, "x") == 0,
          "an array body");
    free(p.cap_frames);
    json_decref(root);
    json_decref(hdr);
    crash_report_free(&r);
}

/* The panic text reader on text written here: x86 and arm64 backtraces,
 * a kext without an end, a line that does not read. */
TEST(ips_panic_text_written_here)
{
    const char *t =
        "panic(cpu 0 caller 0xffffff8000001000): \"x\"@/a.c:1\n"
        "Backtrace (CPU 0), Frame : Return Address\n"
        "0xffffff9000000000 : 0xffffff8000001000 \n"
        "0xffffff9000000010 : 0xffffff7f80001234 (0x1 0x2)\n"
        "0xffffff9000000020 : 0x1ffffffffffffffff\n"
        "      Kernel Extensions in backtrace:\n"
        "         com.x.a(1.0)[D5F2A20D-CAB0-33B2-91B9-E8755DFC34CB]@0xffffff7f80000000->0xffffff7f80001fff\n"
        "            dependency: com.x.b(2)[1850E7DA-E707-3027-A3AA-637C80B57219]@0xffffff7f88094000\n"
        "         com.x.c(3)[1850E7DA-E707-3027-A3AA-637C80B57219]@0xffffff7f90000000\n"
        "\n"
        "BSD process name corresponding to current thread: kernel_task\n"
        "Mac OS version:\n17E199\n"
        "Kernel UUID: 1B55340B-0B14-3026-8A47-1E139DB63DA3\n"
        "Kernel text base: 0xffffff8000000000\n";
    crash_report r;
    memset(&r, 0, sizeof r);
    r.crashed_thread = -1;
    symd_err err;
    symd_err_clear(&err);
    cp p = {.r = &r, .err = &err};
    symd_status st = crash_parse_panic_text(&p, t, strlen(t), 10);
    free(p.cap_frames);
    CHECK(st == SYMD_OK, "%s", err.msg);
    print_warnings("panic text", &r);
    const crash_thread *k = kernel_thread(&r);
    CHECK(k && k->nframes == 2 && strcmp(image_of(&r, k, 0), "kernel") == 0 &&
              strcmp(image_of(&r, k, 1), "com.x.a") == 0 && k->frames[1].has_load &&
              k->frames[1].load_address == 0xffffff7f80000000ull,
          "frames");
    CHECK(r.nwarnings == 1 && strcmp(r.warnings[0].where, "line 14") == 0, "warning %s",
          r.nwarnings ? r.warnings[0].where : "none");
    CHECK(r.nimages == 3 && strcmp(r.images[0].version, "1.0") == 0 &&
              strcmp(r.images[2].name, "kernel") == 0,
          "images %zu", r.nimages);
    CHECK(!r.images[1].has_end && r.images[1].load_address == 0xffffff7f90000000ull,
          "a kext without an end");
    CHECK(strcmp(r.process, "kernel_task") == 0 && strcmp(r.os_version, "17E199") == 0,
          "fields");
    crash_report_free(&r);
    CHECK(!crash_looks_like_panic("Process: x\npanic(cpu 0 caller 0x1): y\n", 38),
          "a process crash is no panic");
    CHECK(crash_looks_like_panic("\n\nAnonymous UUID: x\n\n*** Panic Report ***\n", 41),
          "a .panic header");
}

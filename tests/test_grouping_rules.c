/* Grouping rules (server/grouping.c): the parser's answers and the line of
 * each error, its limits against hostile files (a 10 MB line, a million
 * rules, random bytes), the glob, which rule applies and the signature it
 * makes; sig_apply_rules on real reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../parser/crash.h"
#include "../server/crashsym.h"
#include "../server/grouping.h"
#include "../server/signature.h"
#include "../store/store.h"
#include "test.h"

/* Parses text; *line and the error message when it fails. */
static grouping_rules *parse(const char *text, size_t *line, symd_err *err)
{
    grouping_rules *g = NULL;
    symd_err_clear(err);
    grouping_parse(text, strlen(text), &g, line, err);
    return g;
}

static void refused_at(const char *text, size_t want_line, const char *want_msg)
{
    size_t line;
    symd_err err;
    grouping_rules *g = parse(text, &line, &err);
    CHECK(!g && line == want_line && strstr(err.msg, want_msg),
          "%s: %s at line %zu (%s), want line %zu (%s)", text, g ? "taken" : "refused", line,
          err.msg, want_line, want_msg);
    grouping_free(g);
}

TEST(grouping_rules_parse_and_refuse_with_the_line)
{
    size_t line;
    symd_err err;
    grouping_rules *g = parse("# a comment\n"
                              "\n"
                              "   function:\"-[Crasher *]\"  type:EXC_CRASH* -> crasher\r\n"
                              "!image:libsystem_*.dylib stack.function:main -> {{ default }}, "
                              "{{ message }}\n"
                              "error.type:\"\" -> \"a, b\", {{function}}\n",
                              &line, &err);
    CHECK(g && grouping_count(g) == 3 && strlen(grouping_digest(g)) == 32, "parsed: %s",
          err.msg);
    /* comments, blank lines and blanks around a line do not change the digest */
    grouping_rules *h = parse("function:\"-[Crasher *]\"  type:EXC_CRASH* -> crasher\n"
                              "# another comment\n"
                              "!image:libsystem_*.dylib stack.function:main -> {{ default }}, "
                              "{{ message }}\n\n\n"
                              "  error.type:\"\" -> \"a, b\", {{function}}   \n",
                              &line, &err);
    CHECK(h && !strcmp(grouping_digest(g), grouping_digest(h)), "digests %s %s",
          grouping_digest(g), h ? grouping_digest(h) : "-");
    grouping_free(h);
    h = parse("function:\"-[Crasher *]\"  type:EXC_CRASH* -> crasher2\n", &line, &err);
    CHECK(h && strcmp(grouping_digest(g), grouping_digest(h)) != 0, "a changed rule's digest");
    grouping_free(h);
    grouping_free(g);
    /* comments only: no rules, the digest of none */
    g = parse("# nothing yet\n\n", &line, &err);
    CHECK(g && grouping_count(g) == 0 && !strcmp(grouping_digest(g), ""), "comments only");
    grouping_free(g);
    g = parse("", &line, &err);
    CHECK(g && grouping_count(g) == 0, "an empty file");
    grouping_free(g);

    refused_at("function:a -> x\nbogus:1 -> x\n", 2, "unknown matcher 'bogus'");
    refused_at("\n\nfunction:a\n", 3, "no '->'");
    refused_at("function:a ->\n", 1, "no fingerprint after '->'");
    refused_at("function:a ->   \n", 1, "no fingerprint after '->'");
    refused_at("-> x\n", 1, "without a matcher");
    refused_at("function: -> x\n", 1, "without a value");
    refused_at("function -> x\n", 1, "without ':'");
    refused_at("function:\"abc -> x\n", 1, "no closing");
    refused_at("function:\"a\\nb\" -> x\n", 1, "escape");
    refused_at("function:\"a\"b -> x\n", 1, "no blank after");
    refused_at("function:a -> x,,y\n", 1, "empty fingerprint value");
    refused_at("function:a -> x, \"y\" z\n", 1, "text after a quoted");
    refused_at("function:a -> {{ defualt }}\n", 1, "unknown variable '{{ defualt }}'");
    refused_at("function:a -> {{ default\n", 1, "without its '}}'");
    refused_at("# ok\nfunction:a -> \xff\xfe\n", 2, "not UTF-8");
    refused_at("function:a -> \xed\xa0\x80\n", 1, "not UTF-8"); /* a surrogate */
    refused_at("function:a -> \xc0\xaf\n", 1, "not UTF-8");     /* overlong */
    static const char nul[] = "function:a -> x\nfunction:b\0 -> y\n";
    g = NULL;
    grouping_parse(nul, sizeof nul - 1, &g, &line, &err);
    CHECK(!g && line == 2 && strstr(err.msg, "NUL"), "a NUL byte: line %zu %s", line, err.msg);
    refused_at("function:a function:b function:c function:d function:e function:f function:g "
               "function:h function:i -> x\n",
               1, "more than 8 matchers");
    refused_at("function:a -> a, b, c, d, e, f, g, h, i\n", 1, "more than 8 fingerprint values");
}

/* A 10 MB line, a million rules, a file past 1 MiB: refused at once, at
 * the line that passed the limit. */
TEST(grouping_rules_hostile_files)
{
    size_t big = 10u << 20;
    char *b = malloc(big + 64);
    memcpy(b, "# fine\nfunction:", 16);
    memset(b + 16, 'a', big);
    memcpy(b + 16 + big, " -> x\n", 6);
    size_t line;
    symd_err err = {0};
    grouping_rules *g = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    grouping_parse(b, big + 22, &g, &line, &err);
    CHECK(!g && line == 0 && strstr(err.msg, "larger than 1048576 bytes"),
          "10 MB file: line %zu %s", line, err.msg);
    /* within the file limit, one line past the line limit */
    symd_err_clear(&err);
    grouping_parse(b, (1u << 20), &g, &line, &err);
    CHECK(!g && line == 2 && strstr(err.msg, "longer than 4096 bytes"), "a long line: %zu %s",
          line, err.msg);
    free(b);

    /* a million rules: refused at the 1,001st, within the size limit's reach */
    size_t n = 1000000, each = 18;
    char *m = malloc(n * each + 1);
    for (size_t i = 0; i < n; i++)
        snprintf(m + i * each, each + 1, "kind:c%06zu -> x\n", i % 1000000);
    symd_err_clear(&err);
    grouping_parse(m, n * each, &g, &line, &err);
    CHECK(!g && line == 0 && strstr(err.msg, "larger than"), "18 MB of rules: %zu %s", line,
          err.msg);
    symd_err_clear(&err);
    grouping_parse(m, (1u << 20) / each * each, &g, &line, &err);
    CHECK(!g && line == 1001 && strstr(err.msg, "more than 1000 rules"), "1e6 rules: %zu %s",
          line, err.msg);
    /* 1,000 rules are taken */
    symd_err_clear(&err);
    grouping_parse(m, 1000 * each, &g, &line, &err);
    CHECK(g && grouping_count(g) == 1000, "1000 rules: %s", err.msg);
    /* and a report against all of them (none matches) costs little */
    const char *fn[] = {"-[Crasher doAbort]", "main"};
    grouping_facts f = {.kind = "crash", .type = "EXC_CRASH (SIGABRT)", .functions = fn,
                        .nfunctions = 2};
    char *sig;
    const char *rule;
    CHECK(grouping_apply(g, &f, "d", &sig, &rule, &err) == SYMD_OK && !sig && !rule,
          "no rule of 1000 applies");
    grouping_free(g);
    free(m);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(s < 5, "the hostile files took %.2f s", s);
}

/* Random bytes and mutations of a good file: parsed or refused with a
 * line inside the input, never a crash (ASan runs this too). */
TEST(grouping_rules_random_bytes)
{
    static const char good[] = "function:\"-[Crasher *]\" type:EXC_* -> crasher, {{ default }}\n"
                               "!image:lib?.dylib message:\"*fault*\" -> {{ message }}\n";
    unsigned seed = 12345;
    char buf[512];
    for (int i = 0; i < 20000; i++) {
        size_t n = sizeof good - 1;
        memcpy(buf, good, n);
        for (int k = 0; k < 1 + i % 8; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % n;
            seed = seed * 1103515245u + 12345u;
            buf[at] = i % 3 == 0 ? (char)(seed >> 16) : "\"{}!:*?,\\ -># \n"[(seed >> 16) % 15];
        }
        grouping_rules *g = NULL;
        size_t line;
        symd_err err = {0};
        symd_status r = grouping_parse(buf, n, &g, &line, &err);
        CHECK((r == SYMD_OK) == (g != NULL) && (g || (line >= 1 && line <= 4)),
              "mutation %d: status %d line %zu", i, (int)r, line);
        if (g) {
            const char *fn[] = {"-[Crasher doAbort]"}, *im[] = {"libc.dylib"};
            grouping_facts f = {"crash", "EXC_CRASH (SIGABRT)", "a fault\nline 2", fn, 1, im, 1,
                                fn[0], im[0]};
            char *sig = NULL;
            const char *rule;
            CHECK(grouping_apply(g, &f, "def", &sig, &rule, &err) == SYMD_OK, "apply");
            free(sig);
        }
        grouping_free(g);
    }
}

TEST(grouping_rules_glob)
{
    static const struct {
        const char *p, *s;
        bool want;
    } cases[] = {
        {"*", "", true},           {"", "", true},          {"", "a", false},
        {"a*", "abc", true},       {"*c", "abc", true},     {"a?c", "abc", true},
        {"a?c", "ac", false},      {"*b*", "abc", true},    {"*x*", "abc", false},
        {"ABC", "abc", true},      {"-[Crasher *]", "-[Crasher doAbort]", true},
        {"-[Crasher *]", "-[CrasherX doAbort]", false},     {"a*b*c", "aXbYc", true},
        {"a*b*c", "aXbYd", false}, {"**", "x", true},       {"*a", "bbbbbbbbba", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint64_t steps = 1000;
        CHECK(grouping_glob(cases[i].p, strlen(cases[i].p), cases[i].s, strlen(cases[i].s),
                            &steps) == cases[i].want,
              "'%s' on '%s'", cases[i].p, cases[i].s);
    }
    /* the glob's worst case (a star, a long literal that fails at its end,
     * retried at each byte: p_len * s_len steps) is bounded by its steps */
    char s[4001], p[200];
    memset(s, 'a', 4000);
    s[4000] = 0;
    p[0] = '*';
    memset(p + 1, 'a', 197);
    p[198] = 'b';
    p[199] = 0;
    uint64_t steps = 100000;
    CHECK(!grouping_glob(p, 199, s, 4000, &steps) && steps == 0, "bounded: %llu left",
          (unsigned long long)steps);
    /* many stars cost little: each mismatch goes back to the last star only */
    for (int i = 0; i < 99; i++)
        p[2 * i] = '*', p[2 * i + 1] = 'a';
    p[198] = 'b';
    steps = 100000;
    CHECK(!grouping_glob(p, 199, s, 4000, &steps) && steps > 80000, "stars: %llu left",
          (unsigned long long)steps);
}

/* Which rule applies (the first that matches) and the signature it makes. */
TEST(grouping_rules_apply_first_match_merge_and_split)
{
    size_t line;
    symd_err err;
    grouping_rules *g = parse("kind:hang -> hangs\n"
                              "function:\"-[Crasher *]\" type:\"EXC_CRASH (SIGABRT)\" -> crasher "
                              "aborts\n"
                              "function:main -> {{ default }}, {{ message }}\n"
                              "image:libsqlite3.dylib -> sqlite, {{ image }}, {{ function }}\n"
                              "message:\"\" -> {{ default }}, no message\n"
                              "!type:EXC_* -> signal, {{ type }}, {{ kind }}\n",
                              &line, &err);
    CHECK(g && grouping_count(g) == 6, "parsed: %s", err.msg);
    struct {
        const char *kind, *type, *message, *fn[3], *img[3], *sig, *rule;
    } cases[] = {
        {"hang", "", "m", {"x"}, {"a"}, "hangs", "kind:hang -> hangs"},
        {"crash", "EXC_CRASH (SIGABRT)", "m", {"main", "-[Crasher doAbort]"}, {"a"},
         "crasher aborts", "function:\"-[Crasher *]\""},
        /* the first rule wins: main matches the third too */
        {"crash", "EXC_BAD_ACCESS (SIGSEGV)", "dyld3 mode\n  stack buffer overflow\nmore",
         {"main"}, {"a"}, "DEF | stack buffer overflow", "function:main"},
        /* an empty {{ message }} is left out */
        {"crash", "EXC_BAD_ACCESS (SIGSEGV)", NULL, {"main"}, {"a"}, "DEF", "function:main"},
        {"crash", "EXC_BAD_ACCESS (SIGSEGV)", "m", {"top", "sqlite3_step"},
         {"libsystem_kernel.dylib", "libsqlite3.dylib"}, "sqlite | libsqlite3.dylib | top",
         "image:libsqlite3.dylib"},
        {"crash", "EXC_BAD_ACCESS (SIGSEGV)", "", {"f"}, {"a"}, "DEF | no message",
         "message:\"\""},
        {"crash", "SIGSEGV", "m", {"f"}, {"a"}, "signal | SIGSEGV | crash", "!type:EXC_*"},
        {"crash", "EXC_BAD_ACCESS (SIGSEGV)", "m", {"f"}, {"a"}, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t nf = 0, ni = 0;
        while (nf < 3 && cases[i].fn[nf])
            nf++;
        while (ni < 3 && cases[i].img[ni])
            ni++;
        grouping_facts f = {cases[i].kind, cases[i].type, cases[i].message, cases[i].fn, nf,
                            cases[i].img,  ni,            cases[i].fn[0],   cases[i].img[0]};
        char *sig = NULL;
        const char *rule = NULL;
        CHECK(grouping_apply(g, &f, "DEF", &sig, &rule, &err) == SYMD_OK, "apply %zu", i);
        CHECK(cases[i].sig ? sig && !strcmp(sig, cases[i].sig) && rule &&
                                 strstr(rule, cases[i].rule) == rule
                           : !sig && !rule,
              "case %zu: %s by %s, want %s by %s", i, sig ? sig : "(none)",
              rule ? rule : "(none)", cases[i].sig ? cases[i].sig : "(none)",
              cases[i].rule ? cases[i].rule : "(none)");
        free(sig);
    }
    grouping_free(g);
    /* a fingerprint that fills in empty does not apply: the next rule does */
    g = parse("function:* -> {{ message }}\nfunction:* -> second\n", &line, &err);
    const char *fn[] = {"f"};
    grouping_facts f = {.kind = "crash", .functions = fn, .nfunctions = 1};
    char *sig = NULL;
    const char *rule = NULL;
    grouping_apply(g, &f, "DEF", &sig, &rule, &err);
    CHECK(sig && !strcmp(sig, "second"), "an empty fingerprint: %s", sig ? sig : "(none)");
    free(sig);
    grouping_free(g);
}

/* Real reports through sig_apply_rules: an uncaught NSException matched by
 * its exception backtrace's app frame; the message's first line past
 * "dyld2 mode". */
TEST(grouping_rules_on_real_reports)
{
    const char *rc = real_crashes_dir(), *rr = real_reports_dir();
    if (!rc || !rr) {
        test_skip("../shared is absent");
        return;
    }
    char dbp[600];
    snprintf(dbp, sizeof dbp, "%s/grouping-rules-unit.db", test_tmpdir());
    store *st = NULL;
    symd_err err = {0};
    if (store_open(dbp, 2, 1 << 20, &st, &err) != SYMD_OK) {
        CHECK(false, "store: %s", err.msg);
        return;
    }
    size_t line;
    grouping_rules *g = parse("function:\"-[Crasher throwException]\" -> thrown\n"
                              "function:use_sema -> {{ default }}, {{ message }}, {{ image }}\n",
                              &line, &err);
    static const struct {
        int dir;
        const char *file, *sig;
        bool ruled;
    } cases[] = {
        {0, "kscrash-NSException.crash", "thrown", true},
        {0, "kscrash-Abort.crash", "-[Crasher doAbort] | EXC_CRASH (SIGABRT)", false},
        {1, "faisalmemon+ios-crash-dump-analysis-book+examples_icdab_sema_crash_osx_icdab_sema_osx_arm64.crash",
         "use_sema | EXC_BREAKPOINT (SIGTRAP) | BUG IN CLIENT OF LIBDISPATCH: Semaphore object "
         "deallocated while in use | libdispatch.dylib",
         true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", cases[i].dir ? rr : rc, cases[i].file);
        size_t len;
        uint8_t *buf = read_file(path, &len);
        if (!buf) {
            CHECK(false, "cannot read %s", path);
            continue;
        }
        crash_report r;
        crash_symbolication s;
        CHECK(crash_parse(buf, len, &r, &err) == SYMD_OK, "%s: %s", cases[i].file, err.msg);
        CHECK(crash_symbolicate(st, &r, false, &s, &err) == SYMD_OK, "symbolicate: %s",
              err.msg);
        /* crash_symbolicate applied the active rules (none); apply g by hand */
        size_t *first = calloc(r.nthreads + 1, sizeof *first);
        for (size_t t = 1; t < r.nthreads; t++)
            first[t] = first[t - 1] + r.threads[t - 1].nframes;
        char *rule = NULL;
        CHECK(sig_apply_rules(&r, &s, first, g, &s.signature, &rule, &err) == SYMD_OK, "apply");
        CHECK(!strcmp(s.signature, cases[i].sig) && (rule != NULL) == cases[i].ruled,
              "%s: %s (rule %s), want %s", cases[i].file, s.signature, rule ? rule : "none",
              cases[i].sig);
        free(rule);
        free(first);
        crash_symbolication_free(&s);
        crash_report_free(&r);
        free(buf);
    }
    grouping_free(g);
    store_close(st);
}

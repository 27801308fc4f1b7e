/* Grouping by the app's own frames (server/signature.c): the names a
 * signature uses, the crash machinery it skips, the exception type it adds;
 * the signatures of real reports; an incident's reports in one group; the
 * refiling of stored crashes, after an upgrade (counts kept, on both
 * backends) and after an upload names a place. */
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../parser/crash.h"
#include "../server/crashsym.h"
#include "../server/signature.h"
#include "../store/store.h"
#include "harness.h"
#include "test.h"

/* ---- names ---- */

static void name_is(const char *symbol, const char *image, const char *want)
{
    char *got = sig_function_name(symbol, image);
    CHECK(want ? got && strcmp(got, want) == 0 : got == NULL, "%s: %s, want %s",
          symbol ? symbol : "(null)", got ? got : "(none)", want ? want : "(none)");
    free(got);
}

TEST(grouping_function_names_as_symd_prints_them)
{
    /* as devices write them: "+ N " inside the name, before its parameters */
    name_is("_assertionFailure+ 201624 (_:_:file:line:flags:)", NULL,
            "_assertionFailure(_:_:file:line:flags:)");
    name_is("-[NSObject+ 183052 (NSObject) doesNotRecognizeSelector:]", NULL,
            "-[NSObject(NSObject) doesNotRecognizeSelector:]");
    name_is("std::__terminate(void (*)+ 78048 ())", NULL, "std::__terminate(void (*)())");
    /* offsets, places and marks a line carries after the name */
    name_is("closure #1 in foo() + 20 (File.swift:42) [inlined]", NULL, "closure #1 in foo()");
    name_is("main + 0x7b", NULL, "main");
    name_is("main (main.m:16:3)", NULL, "main");
    name_is("  -[A   b:]\t", NULL, "-[A b:]");
    /* a trap message over two lines, as ips2crashlog wrote it */
    name_is(".../vector:1393: assertion __n < size() failed: out of bounds\n + 0 [inlined]", NULL,
            ".../vector:1393: assertion __n < size() failed: out of bounds");
    /* variants and cold parts of one function */
    name_is("pthread_kill$VARIANT$mp", NULL, "pthread_kill");
    name_is("_dispatch_semaphore_dispose.cold.1", NULL, "_dispatch_semaphore_dispose");
    /* mangled names, demangled as symd shows them */
    name_is("_ZL12realizeClassP7class_t", NULL, "realizeClass(class_t*)");
    name_is("$s15iOSCrashingTest10CrashClassC06pleaseC0yyFZTf4d_n", NULL,
            "specialized static CrashClass.pleaseCrash()");
    /* no name */
    name_is(NULL, NULL, NULL);
    name_is("???", NULL, NULL);
    name_is("<redacted>", NULL, NULL);
    name_is("0x00020d58", NULL, NULL);
    name_is("assetsd", "assetsd", NULL);
    name_is(" + 0", NULL, NULL);
    /* Objective-C, C++ and Swift names stay as they are */
    name_is("-[UIApplication _run]", NULL, "-[UIApplication _run]");
    name_is("std::__1::vector<int>::operator[][abi:se180100](unsigned long)", NULL,
            "std::__1::vector<int>::operator[][abi:se180100](unsigned long)");
    name_is("operator+(A const&, A const&)", NULL, "operator+(A const&, A const&)");
    /* bounded */
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    char *b = sig_function_name(big, NULL);
    CHECK(b && strlen(b) == SIG_NAME_MAX, "a long name: %zu bytes", b ? strlen(b) : 0);
    free(b);
}

/* Random names made of the characters the rewrites look for: every one
 * gives a name within bounds or none, and a role, without reading or
 * writing past anything (the ASan build runs this too). */
TEST(grouping_function_names_of_random_bytes)
{
    static const char alphabet[] = "+ ()[]:.\n\t0x19_Z$s#abcinlied-<>&*,";
    uint32_t seed = 21;
    size_t named = 0;
    for (int i = 0; i < 20000; i++) {
        char buf[96];
        seed = seed * 1103515245u + 12345u;
        size_t n = (seed >> 16) % sizeof buf;
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            buf[k] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
        }
        buf[n] = 0;
        char *got = sig_function_name(buf, "ab");
        if (got) {
            named++;
            CHECK(strlen(got) <= SIG_NAME_MAX && !strchr(got, '\n'), "%s -> %s", buf, got);
            (void)sig_role_of(got);
            /* normalising twice changes nothing more */
            char *again = sig_function_name(got, "ab");
            CHECK(again && !strcmp(again, got), "%s -> %s -> %s", buf, got,
                  again ? again : "(none)");
            free(again);
        }
        free(got);
    }
    CHECK(named > 1000, "only %zu of 20000 random names kept", named);
}

TEST(grouping_crash_machinery)
{
    static const char *const machinery[] = {
        "abort", "__pthread_kill", "pthread_kill", "raise", "__abort_with_payload",
        "abort_with_payload", "objc_exception_throw", "__exceptionPreprocess", "__cxa_throw",
        "__cxa_rethrow", "std::terminate()", "std::__terminate(void (*)())",
        "_assertionFailure(_:_:file:line:flags:)",
        "closure #1 in closure #1 in closure #1 in _assertionFailure(_:_:file:line:flags:)",
        "fatalError(_:file:line:)", "swift_unexpectedError", "swift_willThrow", "__assert_rtn",
        "__stack_chk_fail", "_os_crash", "Swift runtime failure: Unexpectedly found nil while "
        "unwrapping an Optional value", "-[NSObject(NSObject) doesNotRecognizeSelector:]",
        "-[NSAssertionHandler handleFailureInMethod:object:file:lineNumber:description:]",
        "std::__1::__throw_out_of_range[abi:v160006](char const*)",
        ".../vector:1393: assertion __n < size() failed: vector[] index out of bounds",
        "swift::fatalError(unsigned int, char const*, ...)", "_objc_terminate()",
    };
    for (size_t i = 0; i < sizeof machinery / sizeof *machinery; i++)
        CHECK(sig_role_of(machinery[i]) == SIG_MACHINERY, "%s: not machinery", machinery[i]);
    static const char *const before_app[] = {"objc_msgSend", "_objc_msgSend_uncached",
                                             "objc_release", "swift_release"};
    for (size_t i = 0; i < sizeof before_app / sizeof *before_app; i++)
        CHECK(sig_role_of(before_app[i]) == SIG_MACHINERY_BEFORE_APP, "%s", before_app[i]);
    static const char *const code[] = {"main", "start", "-[Crasher doAbort]", "abortion()",
                                       "-[NSObject description]", "MyApp.assertValid()",
                                       "closure #1 in ViewController.viewDidLoad()",
                                       "aborted_transfer"};
    for (size_t i = 0; i < sizeof code / sizeof *code; i++)
        CHECK(sig_role_of(code[i]) == SIG_CODE, "%s: taken for machinery", code[i]);
}

static void exception_is(const char *type, const char *signal, const char *want)
{
    crash_report r = {0};
    r.exception_type = (char *)type;
    r.exception_signal = (char *)signal;
    char buf[128];
    bool got = sig_exception(&r, buf, sizeof buf);
    CHECK(want ? got && strcmp(buf, want) == 0 : !got && !buf[0], "%s / %s: %s, want %s",
          type ? type : "-", signal ? signal : "-", buf, want ? want : "(none)");
}

TEST(grouping_exception_types_agree_across_formats)
{
    exception_is("EXC_CRASH (SIGABRT)", "SIGABRT", "EXC_CRASH (SIGABRT)"); /* .crash */
    exception_is("EXC_CRASH", "SIGABRT", "EXC_CRASH (SIGABRT)");           /* .ips, KSCrash */
    exception_is("EXC_BAD_ACCESS (1)", "SIGSEGV", "EXC_BAD_ACCESS (SIGSEGV)"); /* MetricKit */
    exception_is("EXC_BAD_ACCESS (SIGSEGV)", NULL, "EXC_BAD_ACCESS (SIGSEGV)");
    exception_is("EXC_GUARD", NULL, "EXC_GUARD");
    exception_is("SIGSEGV", NULL, "SIGSEGV");
    exception_is("0 (0)", "0", NULL); /* KSCrash's text of a deadlock */
    exception_is("00000020", NULL, NULL);
    exception_is(NULL, NULL, NULL);
}

/* ---- real reports ---- */

static store *unit_store(void)
{
    static store *st;
    if (!st) {
        char path[600];
        snprintf(path, sizeof path, "%s/grouping-unit.db", test_tmpdir());
        symd_err err = {0};
        CHECK(store_open(path, 2, 1 << 20, &st, &err) == SYMD_OK, "store: %s", err.msg);
    }
    return st;
}

/* Part 0 of the report at path: its kind and signature (no image stored);
 * false when it cannot be read. */
static bool signature_of(const char *path, char *kind, size_t kcap, char *sig, size_t cap)
{
    size_t len;
    uint8_t *buf = read_file(path, &len);
    store *st = unit_store();
    if (!buf || !st) {
        free(buf);
        return false;
    }
    crash_report r;
    symd_err err = {0};
    bool ok = crash_parse(buf, len, &r, &err) == SYMD_OK;
    CHECK(ok, "%s: %s", path, err.msg);
    if (ok) {
        crash_symbolication s;
        ok = crash_symbolicate(st, &r, false, &s, &err) == SYMD_OK;
        CHECK(ok, "%s: %s", path, err.msg);
        if (ok) {
            snprintf(kind, kcap, "%s", crash_kind_name(r.kind));
            snprintf(sig, cap, "%s", s.signature);
            crash_symbolication_free(&s);
        }
        crash_report_free(&r);
    }
    free(buf);
    return ok;
}

TEST(grouping_real_reports_by_the_apps_frames)
{
    const char *rr = real_reports_dir(), *rc = real_crashes_dir(), *rep = reporters_dir();
    if (!rr || !rc || !rep) {
        test_skip("../shared is absent: real reports not grouped");
        return;
    }
    static const struct {
        int dir; /* 0 real-reports, 1 real-crashes, 2 reporters */
        const char *file, *sig;
    } pins[] = {
        /* __pthread_kill and abort skipped */
        {1, "kscrash-Abort.crash", "-[Crasher doAbort] | EXC_CRASH (SIGABRT)"},
        /* __exceptionPreprocess ... _CF_forwarding_prep_0 skipped */
        {2, "kstenerud+KSCrash@62039fc+Example-Reports_NSException.json",
         "-[Crasher throwException] | EXC_CRASH (SIGABRT)"},
        /* the Last Exception Backtrace's app frame: the cause of the abort */
        {0, "faisalmemon+ios-crash-dump-analysis-book+examples_nsdata_crash_ios_icdab_nsdata_ios_14_2.crash",
         "-[AppDelegate application:didFinishLaunchingWithOptions:] | EXC_CRASH (SIGABRT)"},
        /* _assertionFailure and its closures skipped */
        {0, "faisalmemon+ios-crash-dump-analysis-book+examples_icdab_wrap_ios_icdab_wrap_ios_on_macos.crash",
         "PlanetViewController.imageDownloaded(_:) | EXC_BREAKPOINT (SIGTRAP)"},
        /* the app's frames unnamed: its place, not "_assertionFailure+ 201624 (...)" */
        {0, "inket+MacSymbolicator@7ad41f1+MacSymbolicatorTests_Resources_Crashes_ios-crash.crash",
         "iOSCrashingTest + 0x6418 | EXC_BREAKPOINT (SIGTRAP)"},
        {0, "mobile-dev-inc+Symbolicator+Tests_SymbolicatorTests_Resources_MemoryLeakingApp-2022-08-05-132419.ips",
         "MemoryLeakingApp + 0x42d2 | EXC_CRASH (SIGSEGV)"},
        /* not "start": dyld's */
        {0, "inket+MacSymbolicator@7ad41f1+MacSymbolicatorTests_Resources_Crashes_single-target-crash.crash",
         "CrashingTest + 0x3e45 | EXC_BAD_ACCESS (SIGSEGV)"},
        /* libc++'s trap message (an inlined frame) skipped */
        {0, "lapfelix+ips2crashlog+Tests_ips2crashlogTests_TestResources_target.txt",
         "std::__1::vector<transitLib::StopAndOptionalEntranceInfos, "
         "std::__1::allocator<transitLib::StopAndOptionalEntranceInfos>>::operator[][abi:se180100]"
         "(unsigned long) | EXC_BREAKPOINT (SIGTRAP)"},
        /* a framework of the app's own, not JavaScriptCore */
        {0, "getsentry+apple-crash-report-parser+tests_fixtures_XCDYouTubeKit-54.txt",
         "-[XCDYouTubePlayerScript unscrambleSignature:] | SIGSEGV"},
        /* an OS process: no app frame, the first frame that is no machinery */
        {0, "log2timeline+plaso@df3d6f7+test_data_ips_files_recoverylogd-2023-06-08-144913.ips",
         "__remote_service_listen_with_device_block_invoke_2 | EXC_CRASH (SIGABRT)"},
        {0, "doronz88+pycrashreport+tests_user_mode_crash_report_monterey_non_symbolicated.ips",
         "nanosleep | EXC_BAD_ACCESS (SIGSEGV)"},
        /* nothing named at all: the first frame's place */
        {1, "ios14-abort-bugtype109.ips", "libsystem_kernel.dylib + 0x29334 | EXC_CRASH (SIGABRT)"},
    };
    const char *dirs[3] = {rr, rc, rep};
    for (size_t i = 0; i < sizeof pins / sizeof *pins; i++) {
        char path[1200], kind[32], sig[2048];
        snprintf(path, sizeof path, "%s/%s", dirs[pins[i].dir], pins[i].file);
        if (signature_of(path, kind, sizeof kind, sig, sizeof sig))
            CHECK(strcmp(sig, pins[i].sig) == 0, "%s:\n      got  %s\n      want %s",
                  pins[i].file, sig, pins[i].sig);
    }
}

/* KSCrash's JSON reports and its own Apple-format text of them (one incident
 * each: the same report id), the deadlock among them: one kind, one
 * signature. */
TEST(grouping_kscrash_json_and_text_of_one_incident_agree)
{
    static const char *const names[] = {"Abort", "BadPointer", "NSException", "StackOverflow",
                                        "Zombie", "CorruptObject", "MainThreadDeadlock"};
    const char *rep = reporters_dir(), *rc = real_crashes_dir(), *rr = real_reports_dir();
    if (!rep || !rc || !rr) {
        test_skip("../shared is absent: KSCrash pairs not compared");
        return;
    }
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char jp[1200], tp[1200], jk[32], tk[32], js[2048], ts[2048];
        snprintf(jp, sizeof jp, "%s/kstenerud+KSCrash@62039fc+Example-Reports_%s.json", rep,
                 names[i]);
        if (i < 5)
            snprintf(tp, sizeof tp, "%s/kscrash-%s.crash", rc, names[i]);
        else
            snprintf(tp, sizeof tp, "%s/kstenerud+KSCrash+Example-Reports_%s.txt", rr, names[i]);
        if (signature_of(jp, jk, sizeof jk, js, sizeof js) &&
            signature_of(tp, tk, sizeof tk, ts, sizeof ts))
            CHECK(!strcmp(jk, tk) && !strcmp(js, ts), "%s: %s %s vs %s %s", names[i], jk, js, tk,
                  ts);
    }
    char k[32], s[2048];
    snprintf(s, sizeof s, "%s/kstenerud+KSCrash+Example-Reports_MainThreadDeadlock.txt", rr);
    CHECK(signature_of(s, k, sizeof k, s, sizeof s) && !strcmp(k, "hang"),
          "KSCrash's deadlock text: kind %s", k);
}

/* ---- end to end ---- */

static const char *sget(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* The count of group (kind, signature) at port, 0 when there is none;
 * *groups: how many groups there are. */
static long long group_count(int port, const char *kind, const char *sig, size_t *groups)
{
    int status;
    json_t *j = http_json(port, "GET", "/v1/crashes/groups?limit=1000", NULL, NULL, 0, &status,
                          NULL);
    long long n = 0;
    json_t *g = json_object_get(j, "groups");
    for (size_t i = 0; i < json_array_size(g); i++) {
        json_t *e = json_array_get(g, i);
        if (!strcmp(sget(e, "kind"), kind) && !strcmp(sget(e, "signature"), sig))
            n = json_integer_value(json_object_get(e, "count"));
    }
    if (groups)
        *groups = json_array_size(g);
    json_decref(j);
    return n;
}

/* Waits (at most 30 s) until group (kind, sig) counts want. */
static bool wait_group(int port, const char *kind, const char *sig, long long want)
{
    for (int i = 0; i < 300; i++) {
        if (group_count(port, kind, sig, NULL) == want)
            return true;
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

#define TWIN_SIG "fix_mul | EXC_BAD_ACCESS (SIGSEGV)"
#define TWIN_PLACE "libfix.dylib + 0x374 | EXC_BAD_ACCESS (SIGSEGV)"

/* The reports of one incident (an .ips and its .crash, a .plcrash, a
 * KSCrash JSON and its text) share a group; a place a report was grouped
 * under is refiled under its name once the image is uploaded, without the
 * crash being read. */
TEST(e2e_grouping_incident_reports_share_a_group)
{
    server_proc sp;
    char db[600];
    snprintf(db, sizeof db, "%s/grouping-pairs.db", test_tmpdir());
    if (!server_start(&sp, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    int status;
    /* the twins of fixtures/crashes, every image missing: the app's frame
     * has no name, so all but the KSCrash JSON (which names it) share its place */
    static const char *const twins[] = {"fixtures/crashes/bigapp-twin.crash",
                                        "fixtures/crashes/bigapp-twin.ips",
                                        "fixtures/crashes/bigapp-twin.plcrash",
                                        "fixtures/crashes/bigapp-twin.kscrash.json"};
    for (size_t i = 0; i < 4; i++) {
        json_t *j = http_post_fixture(sp.port, twins[i], "/v1/crashes", &status);
        CHECK(status == 201 && !strcmp(sget(j, "signature"), i == 3 ? TWIN_SIG : TWIN_PLACE),
              "%s: %d %s", twins[i], status, sget(j, "signature"));
        json_decref(j);
    }
    static const char *const pacs[] = {"fixtures/crashes/bigapp-pac.crash",
                                       "fixtures/crashes/bigapp-pac-list.crash",
                                       "fixtures/crashes/bigapp-pac.ips"};
    for (size_t i = 0; i < 3; i++) /* .crash and its list form are one incident: renumbered */
        json_decref(http_post_fixture_n(sp.port, pacs[i], "/v1/crashes", 100 + (uint32_t)i,
                                        &status));
    /* PAC-signed addresses place the frame where the unsigned ones do */
    CHECK(group_count(sp.port, "crash", "libfix.dylib + 0x34c | EXC_CRASH (SIGABRT)", NULL) == 3,
          "the PAC twins in one group");
    json_t *j = http_post_fixture(sp.port, "fixtures/crashes/swifty-twin.crash", "/v1/crashes",
                                  &status);
    json_t *k = http_post_fixture(sp.port, "fixtures/crashes/swifty-twin.ips", "/v1/crashes",
                                  &status);
    CHECK(*sget(j, "signature") && !strcmp(sget(j, "signature"), sget(k, "signature")),
          "swifty twins: %s vs %s", sget(j, "signature"), sget(k, "signature"));
    json_decref(j);
    json_decref(k);

    /* the upload names the place: its crashes join the KSCrash JSON's group */
    j = http_post_fixture(sp.port, "fixtures/bin/libfix-arm64.dylib",
                          "/v1/images?name=libfix.dylib", &status);
    CHECK(status == 201, "upload: %d", status);
    json_decref(j);
    CHECK(wait_group(sp.port, "crash", TWIN_SIG, 4), "the twins after the upload: %lld in %s",
          group_count(sp.port, "crash", TWIN_SIG, NULL), TWIN_SIG);
    CHECK(group_count(sp.port, "crash", TWIN_PLACE, NULL) == 0, "the place's group is gone");
    CHECK(wait_group(sp.port, "crash", "fix_add | EXC_CRASH (SIGABRT)", 3),
          "the PAC twins after the upload");

    /* ../shared: KSCrash's JSON and text of seven incidents */
    static const char *const names[] = {"Abort", "BadPointer", "NSException", "StackOverflow",
                                        "Zombie", "CorruptObject", "MainThreadDeadlock"};
    const char *rep = reporters_dir(), *rc = real_crashes_dir(), *rr = real_reports_dir();
    for (size_t i = 0; rep && rc && rr && i < sizeof names / sizeof *names; i++) {
        char jp[1200], tp[1200];
        snprintf(jp, sizeof jp, "%s/kstenerud+KSCrash@62039fc+Example-Reports_%s.json", rep,
                 names[i]);
        if (i < 5)
            snprintf(tp, sizeof tp, "%s/kscrash-%s.crash", rc, names[i]);
        else
            snprintf(tp, sizeof tp, "%s/kstenerud+KSCrash+Example-Reports_%s.txt", rr, names[i]);
        size_t jl, tl;
        uint8_t *jb = read_file(jp, &jl), *tb = read_file(tp, &tl);
        json_t *a = jb ? http_json(sp.port, "POST", "/v1/crashes", NULL, jb, jl, &status, NULL)
                       : NULL;
        json_t *b = tb ? http_json(sp.port, "POST", "/v1/crashes", NULL, tb, tl, &status, NULL)
                       : NULL;
        CHECK(a && b && !strcmp(sget(a, "kind"), sget(b, "kind")) &&
                  !strcmp(sget(a, "signature"), sget(b, "signature")) &&
                  group_count(sp.port, sget(a, "kind"), sget(a, "signature"), NULL) >= 2,
              "%s: %s %s vs %s %s", names[i], sget(a, "kind"), sget(a, "signature"),
              sget(b, "kind"), sget(b, "signature"));
        json_decref(a);
        json_decref(b);
        free(jb);
        free(tb);
    }
    CHECK(server_stop(&sp), "the server did not stop cleanly");
}

/* s percent-encoded for a query argument (malloc'ed). */
static char *url_escape_arg(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = malloc(3 * strlen(s) + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; out && *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    if (out)
        *o = 0;
    return out;
}

/* Every group's count is the number of its crashes, and its trend and
 * spread add up to it (they are counters of their own). */
static void check_counters(int port, const char *when)
{
    int status;
    json_t *g = http_json(port, "GET", "/v1/crashes/groups?limit=1000", NULL, NULL, 0, &status,
                          NULL);
    json_t *groups = json_object_get(g, "groups");
    long long total = 0;
    for (size_t i = 0; i < json_array_size(groups); i++) {
        json_t *e = json_array_get(groups, i);
        long long count = json_integer_value(json_object_get(e, "count"));
        total += count;
        char *k = url_escape_arg(sget(e, "kind")), *s = url_escape_arg(sget(e, "signature"));
        char path[4096];
        snprintf(path, sizeof path, "/v1/crashes?limit=1000&kind=%s&signature=%s", k, s);
        json_t *l = http_json(port, "GET", path, NULL, NULL, 0, &status, NULL);
        size_t listed = json_array_size(json_object_get(l, "crashes"));
        json_decref(l);
        snprintf(path, sizeof path, "/v1/crashes/group?kind=%s&signature=%s&days=2", k, s);
        json_t *one = http_json(port, "GET", path, NULL, NULL, 0, &status, NULL);
        long long days = 0, versions = 0, models = 0;
        json_t *d = json_object_get(json_object_get(one, "trend"), "days");
        for (size_t x = 0; x < json_array_size(d); x++)
            days += json_integer_value(json_array_get(d, x));
        json_t *v = json_object_get(one, "os_versions"), *m = json_object_get(one,
                                                                             "hardware_models");
        for (size_t x = 0; x < json_array_size(v); x++)
            versions += json_integer_value(json_object_get(json_array_get(v, x), "count"));
        for (size_t x = 0; x < json_array_size(m); x++)
            models += json_integer_value(json_object_get(json_array_get(m, x), "count"));
        CHECK(status == 200 && (long long)listed == count && days == count &&
                  versions <= count && models <= count,
              "%s: group %s %s counts %lld, %zu crashes listed, %lld in its trend, %lld/%lld "
              "in its spread",
              when, sget(e, "kind"), sget(e, "signature"), count, listed, days, versions, models);
        json_decref(one);
        free(k);
        free(s);
    }
    json_t *all = http_json(port, "GET", "/v1/crashes?limit=1000", NULL, NULL, 0, &status, NULL);
    CHECK((long long)json_array_size(json_object_get(all, "crashes")) == total,
          "%s: %zu crashes, the groups count %lld", when,
          json_array_size(json_object_get(all, "crashes")), total);
    json_decref(all);
    json_decref(g);
}

/* The reports an upgraded store holds, stored in-process under the
 * signatures an older release gave (every crash of a kind under one of two
 * names: unrelated crashes merged, as the old rule did to aborts). *n: how
 * many were stored. */
static void store_old_groups(const char *dbarg, size_t *n)
{
    *n = 0;
    store *st = NULL;
    symd_err err = {0};
    CHECK(store_open(dbarg, 2, 1 << 20, &st, &err) == SYMD_OK, "store: %s", err.msg);
    if (!st)
        return;
    static const char *const fixtures[] = {
        "fixtures/crashes/bigapp-twin.crash", "fixtures/crashes/bigapp-twin.ips",
        "fixtures/crashes/bigapp-twin.plcrash", "fixtures/crashes/bigapp-twin.kscrash.json",
        "fixtures/crashes/bigapp-pac.crash", "fixtures/crashes/bigapp-pac.ips",
        "fixtures/crashes/swifty-twin.crash", "fixtures/crashes/swifty-twin.ips",
        "fixtures/crashes/bigapp-metrickit.json", "fixtures/crashes/fidelity-inline.ips",
    };
    for (size_t i = 0; i < sizeof fixtures / sizeof *fixtures; i++) {
        size_t len;
        uint8_t *buf = read_fixture(fixtures[i], &len);
        crash_report *reps = NULL;
        size_t nr = 0;
        if (!buf || crash_parse_all(buf, len, &reps, &nr, &err) != SYMD_OK) {
            CHECK(false, "%s: %s", fixtures[i], err.msg);
            free(buf);
            continue;
        }
        for (size_t p = 0; p < nr; p++) {
            crash_symbolication sym;
            if (crash_symbolicate(st, &reps[p], false, &sym, &err) != SYMD_OK) {
                CHECK(false, "%s: %s", fixtures[i], err.msg);
                continue;
            }
            size_t nimg = 0;
            store_crash_image *imgs = crash_needed_images(&reps[p], &sym, &nimg);
            store_crash sc = crash_store_record(&reps[p], &sym, buf, len);
            sc.part = (int)reps[p].part;
            sc.signature = (char *)(i % 2 ? "__pthread_kill" : "objc_msgSend");
            int64_t id;
            CHECK(store_put_crash(st, &sc, imgs, nimg, &id, &err) == SYMD_OK, "%s: %s",
                  fixtures[i], err.msg);
            (*n)++;
            free(imgs);
            crash_symbolication_free(&sym);
        }
        crash_reports_free(reps, nr);
        free(buf);
    }
    /* new crashes are filed under this symd's rule: none to refile yet */
    int64_t todo[4];
    size_t nt = 1;
    CHECK(store_regroup_next(st, todo, 4, &nt, &err) == SYMD_OK && nt == 0,
          "%zu crashes listed to refile", nt);
    store_close(st);
}

/* The store as the release before schema 7 left it: no list of crashes to
 * refile, no grouping rules (schema 8), no groups' workflow nor value days
 * (schema 10), no crash keys (schema 12), schema 6. */
static bool back_to_schema_6(const char *db, const char *dbarg)
{
    if (test_pg()) {
        char out[64];
        return pg_sql(dbarg, "DROP TABLE crash_regroup", out, sizeof out) &&
               pg_sql(dbarg, "DROP TABLE grouping_state", out, sizeof out) &&
               pg_sql(dbarg, "ALTER TABLE crashes DROP COLUMN grouping_rule", out, sizeof out) &&
               pg_sql(dbarg, "DROP TABLE crash_group_states", out, sizeof out) &&
               pg_sql(dbarg, "DROP TABLE crash_group_history", out, sizeof out) &&
               pg_sql(dbarg, "DROP TABLE crash_dim_days", out, sizeof out) &&
               pg_sql(dbarg, "ALTER TABLE crashes DROP COLUMN idem_key", out, sizeof out) &&
               pg_sql(dbarg, "ALTER TABLE crashes DROP COLUMN content_key", out, sizeof out) &&
               pg_sql(dbarg, "UPDATE symd_schema SET version = 6", out, sizeof out);
    }
    sqlite3 *h = NULL;
    bool ok = sqlite3_open(db, &h) == SQLITE_OK &&
              sqlite3_exec(h,
                           "DROP TABLE crash_regroup; DROP TABLE grouping_state; ALTER TABLE "
                           "crashes DROP COLUMN grouping_rule; DROP TABLE crash_group_states; "
                           "DROP TABLE crash_group_history; DROP TABLE crash_dim_days; "
                           "DROP INDEX crashes_idem_key; DROP INDEX crashes_content_key; "
                           "ALTER TABLE crashes DROP COLUMN idem_key; "
                           "ALTER TABLE crashes DROP COLUMN content_key; "
                           "PRAGMA user_version = 6",
                           NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(h);
    return ok;
}

/* An upgrade to the grouping rule refiles every stored crash in the
 * background, each group's counters kept exact (SQLite and PostgreSQL). */
TEST(e2e_grouping_upgrade_refiles_with_counts_kept)
{
    char db[600];
    snprintf(db, sizeof db, "%s/grouping-upgrade.db", test_tmpdir());
    const char *dbarg = db_arg(db);
    if (!dbarg)
        return;
    size_t n;
    store_old_groups(dbarg, &n);
    CHECK(n == 11, "%zu crashes stored", n);
    CHECK(back_to_schema_6(db, dbarg), "cannot take the store back to schema 6");
    server_proc sp;
    if (!server_start(&sp, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    /* the old groups empty out as the worker goes */
    CHECK(wait_group(sp.port, "crash", "__pthread_kill", 0) &&
              wait_group(sp.port, "crash", "objc_msgSend", 0) &&
              wait_group(sp.port, "hang", "objc_msgSend", 0),
          "old groups left: %lld, %lld", group_count(sp.port, "crash", "__pthread_kill", NULL),
          group_count(sp.port, "crash", "objc_msgSend", NULL));
    check_counters(sp.port, "after the refile");
    /* each crash where a new post of its report goes */
    int status;
    json_t *all = http_json(sp.port, "GET", "/v1/crashes?limit=1000", NULL, NULL, 0, &status,
                            NULL);
    json_t *cr = json_object_get(all, "crashes");
    CHECK(json_array_size(cr) == n, "%zu crashes after the refile, %zu before",
          json_array_size(cr), n);
    size_t twins = 0;
    for (size_t i = 0; i < json_array_size(cr); i++)
        twins += !strcmp(sget(json_array_get(cr, i), "signature"), TWIN_PLACE);
    CHECK(twins == 4, "%zu of the .crash, .ips, .plcrash and MetricKit twins under %s", twins,
          TWIN_PLACE);
    json_decref(all);
    CHECK(server_stop(&sp), "the server did not stop cleanly");

    /* a second start finds nothing to do, and the counters stand */
    CHECK(server_start(&sp, db, NULL), "restart");
    check_counters(sp.port, "after a restart");
    CHECK(server_stop(&sp), "the server did not stop cleanly");
}

/* An image uploaded under another name than the reports give it (an
 * executable named by ?name=), or by `symd upload` while no server runs:
 * the crashes grouped under its place are refiled all the same. */
TEST(e2e_grouping_uploads_under_any_name_refile_places)
{
    char db[600];
    snprintf(db, sizeof db, "%s/grouping-names.db", test_tmpdir());
    server_proc sp;
    if (!server_start(&sp, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    int status;
    json_t *j = http_post_fixture(sp.port, "fixtures/crashes/swifty-twin.crash", "/v1/crashes",
                                  &status);
    CHECK(status == 201 && !strcmp(sget(j, "signature"),
                                   "swifty-arm64 + 0x398 | EXC_BAD_ACCESS (SIGSEGV)"),
          "swifty twin: %d %s", status, sget(j, "signature"));
    json_decref(j);
    j = http_post_fixture(sp.port, "fixtures/bin/swifty-arm64", "/v1/images?name=renamed",
                          &status);
    CHECK(status == 201, "upload: %d", status);
    json_decref(j);
    CHECK(wait_group(sp.port, "crash",
                     "specialized static CrashClass.pleaseCrash() | EXC_BAD_ACCESS (SIGSEGV)", 1),
          "the crash under its name after an upload named otherwise");
    j = http_post_fixture(sp.port, "fixtures/crashes/bigapp-twin.crash", "/v1/crashes", &status);
    json_int_t id = json_integer_value(json_object_get(j, "id"));
    CHECK(status == 201 && !strcmp(sget(j, "signature"), TWIN_PLACE), "twin: %d %s", status,
          sget(j, "signature"));
    json_decref(j);
    CHECK(server_stop(&sp), "the server did not stop cleanly");

    /* symd upload lists the crashes; the next server refiles them */
    const char *dbarg = db_arg(db);
    char cmd[2400];
    const char *bin = getenv("SYMD_BIN") ? getenv("SYMD_BIN") : "./symd"; /* as the harness */
    snprintf(cmd, sizeof cmd, "'%s' upload --db '%s' '%s' >/dev/null", bin, dbarg,
             root_path("fixtures/bin/libfix-arm64.dylib"));
    CHECK(system(cmd) == 0, "symd upload failed: %s", cmd);
    store *st = NULL;
    symd_err err = {0};
    int64_t todo[8];
    size_t n = 0;
    CHECK(store_open(dbarg, 1, 1 << 20, &st, &err) == SYMD_OK &&
              store_regroup_next(st, todo, 8, &n, &err) == SYMD_OK && n == 1 && todo[0] == id,
          "listed after symd upload: %zu (%s)", n, err.msg);
    if (st)
        store_close(st);
    if (!server_start(&sp, db, NULL)) {
        CHECK(false, "server did not start again");
        return;
    }
    CHECK(wait_group(sp.port, "crash", TWIN_SIG, 1) &&
              group_count(sp.port, "crash", TWIN_PLACE, NULL) == 0,
          "the twin after symd upload: %lld under its name",
          group_count(sp.port, "crash", TWIN_SIG, NULL));
    CHECK(server_stop(&sp), "the server did not stop cleanly");
}

/* ---- grouping rules (--grouping-rules) ---- */

/* Writes text to path in place (the inode kept); false on an error. */
static bool write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* The grouping rule the group page shows for (kind, sig): its text, ""
 * for the default rule, "?" when the group does not answer. */
static char *group_rule(int port, const char *kind, const char *sig)
{
    char *k = url_escape_arg(kind), *s = url_escape_arg(sig), path[2048];
    snprintf(path, sizeof path, "/v1/crashes/group?kind=%s&signature=%s", k, s);
    free(k);
    free(s);
    int status;
    json_t *j = http_json(port, "GET", path, NULL, NULL, 0, &status, NULL);
    json_t *r = json_object_get(j, "grouping_rule");
    char *out = strdup(status != 200 || !r ? "?" : json_is_null(r) ? "" : json_string_value(r));
    json_decref(j);
    return out;
}

/* /healthz's grouping_rules: its error ("" when none) into err, its rule
 * count and reloads. */
static void rules_health(int port, char *err, size_t cap, long long *rules, long long *reloads)
{
    int status;
    json_t *j = http_json(port, "GET", "/healthz", NULL, NULL, 0, &status, NULL);
    json_t *g = json_object_get(j, "grouping_rules");
    const char *e = json_string_value(json_object_get(g, "error"));
    snprintf(err, cap, "%s", e ? e : "");
    *rules = json_integer_value(json_object_get(g, "rules"));
    *reloads = json_integer_value(json_object_get(g, "reloads"));
    json_decref(j);
}

/* How many groups of kind crash have a signature starting with prefix, and
 * their crashes. */
static size_t groups_with_prefix(int port, const char *prefix, long long *crashes)
{
    int status;
    json_t *j = http_json(port, "GET", "/v1/crashes/groups?limit=1000", NULL, NULL, 0, &status,
                          NULL);
    json_t *g = json_object_get(j, "groups");
    size_t n = 0;
    *crashes = 0;
    for (size_t i = 0; i < json_array_size(g); i++) {
        json_t *e = json_array_get(g, i);
        if (!strncmp(sget(e, "signature"), prefix, strlen(prefix))) {
            n++;
            *crashes += json_integer_value(json_object_get(e, "count"));
        }
    }
    json_decref(j);
    return n;
}

#define ABORT_SIG "-[Crasher doAbort] | EXC_CRASH (SIGABRT)"
#define THROW_SIG "-[Crasher throwException] | EXC_CRASH (SIGABRT)"
#define BADPTR_SIG "-[Crasher dereferenceBadPointer] | EXC_BAD_ACCESS (SIGSEGV)"
#define MAIN_SIG "main | EXC_CRASH (SIGABRT)"
#define MERGE_RULE "function:\"-[Crasher *]\" type:\"EXC_CRASH (SIGABRT)\" -> Crasher aborts"
#define SPLIT_RULE "function:main type:\"EXC_CRASH (SIGABRT)\" -> {{ default }}, {{ message }}"

/* Real reports under rules that merge two groups (the KSCrash example's
 * abort and uncaught exception) and split one (two apps' aborts in main,
 * by their message); stored crashes refiled when the rules change (at
 * start, on a change of the file, on SIGHUP) with every count kept; a
 * broken file refused at start and kept out on reload with its line.
 * SQLite and PostgreSQL. */
TEST(e2e_grouping_rules_merge_split_and_reload)
{
    const char *rc = real_crashes_dir(), *rr = real_reports_dir();
    if (!rc || !rr) {
        test_skip("../shared is absent: no real reports to group");
        return;
    }
    char db[600], rules[600], reports[5][1200];
    snprintf(db, sizeof db, "%s/grouping-rules.db", test_tmpdir());
    snprintf(rules, sizeof rules, "%s/grouping-rules.txt", test_tmpdir());
    snprintf(reports[0], sizeof reports[0], "%s/kscrash-Abort.crash", rc);
    snprintf(reports[1], sizeof reports[1], "%s/kscrash-NSException.crash", rc);
    snprintf(reports[2], sizeof reports[2], "%s/ios14-symbolicated-bugtype109.ips", rc);
    snprintf(reports[3], sizeof reports[3],
             "%s/facebook+idb+FBControlCoreTests_Fixtures_app_custom_set.crash", rr);
    snprintf(reports[4], sizeof reports[4], "%s/kscrash-BadPointer.crash", rc);
    server_proc sp;
    if (!server_start(&sp, db, NULL)) {
        CHECK(false, "server did not start");
        return;
    }
    int status;
    for (int i = 0; i < 5; i++) {
        size_t len;
        uint8_t *b = read_file(reports[i], &len);
        json_t *j = b ? http_json(sp.port, "POST", "/v1/crashes", NULL, b, len, &status, NULL)
                      : NULL;
        CHECK(j && status == 201, "%s: %d", reports[i], status);
        json_decref(j);
        free(b);
    }
    CHECK(group_count(sp.port, "crash", ABORT_SIG, NULL) == 1 &&
              group_count(sp.port, "crash", THROW_SIG, NULL) == 1 &&
              group_count(sp.port, "crash", MAIN_SIG, NULL) == 2 &&
              group_count(sp.port, "crash", BADPTR_SIG, NULL) == 1,
          "the default groups");
    char *r = group_rule(sp.port, "crash", MAIN_SIG);
    CHECK(!strcmp(r, ""), "the default rule shows as none: '%s'", r);
    free(r);
    CHECK(server_stop(&sp), "the server did not stop cleanly");

    /* a start with rules refiles what was stored */
    CHECK(write_text(rules, "# the Crasher's aborts are one bug\n" MERGE_RULE "\n"
                            "# main's aborts: one group per message\n" SPLIT_RULE "\n"),
          "writing %s", rules);
    const char *const with_rules[] = {"--grouping-rules", rules, NULL};
    if (!server_start(&sp, db, with_rules)) {
        CHECK(false, "server did not start with the rules");
        return;
    }
    CHECK(wait_group(sp.port, "crash", "Crasher aborts", 2) &&
              wait_group(sp.port, "crash", ABORT_SIG, 0) &&
              wait_group(sp.port, "crash", THROW_SIG, 0) &&
              wait_group(sp.port, "crash", MAIN_SIG, 0),
          "merged %lld, left %lld + %lld, main %lld",
          group_count(sp.port, "crash", "Crasher aborts", NULL),
          group_count(sp.port, "crash", ABORT_SIG, NULL),
          group_count(sp.port, "crash", THROW_SIG, NULL),
          group_count(sp.port, "crash", MAIN_SIG, NULL));
    long long split_crashes;
    size_t split = groups_with_prefix(sp.port, MAIN_SIG " | ", &split_crashes);
    CHECK(split == 2 && split_crashes == 2, "main split into %zu groups of %lld crashes", split,
          split_crashes);
    CHECK(group_count(sp.port, "crash", MAIN_SIG " | stack buffer overflow", NULL) == 1,
          "kaki's group by its message (past 'dyld3 mode')");
    CHECK(group_count(sp.port, "crash", BADPTR_SIG, NULL) == 1, "no rule: the default group");
    check_counters(sp.port, "after the rules' refile");
    r = group_rule(sp.port, "crash", "Crasher aborts");
    CHECK(!strcmp(r, MERGE_RULE), "the merged group's rule: '%s'", r);
    free(r);
    r = group_rule(sp.port, "crash", MAIN_SIG " | stack buffer overflow");
    CHECK(!strcmp(r, SPLIT_RULE), "a split group's rule: '%s'", r);
    free(r);
    r = group_rule(sp.port, "crash", BADPTR_SIG);
    CHECK(!strcmp(r, ""), "no rule: '%s'", r);
    free(r);
    char herr[400];
    long long nrules, reloads;
    rules_health(sp.port, herr, sizeof herr, &nrules, &reloads);
    CHECK(nrules == 2 && !herr[0], "healthz: %lld rules, error '%s'", nrules, herr);

    /* a new report goes where the rules say */
    size_t alen;
    uint8_t *abort_report = read_file(reports[0], &alen);
    /* another incident of the same cause (the stored one would be a copy) */
    CHECK(abort_report && report_renumber(abort_report, alen, 1), "renumbering %s", reports[0]);
    json_t *j = http_json(sp.port, "POST", "/v1/crashes", NULL, abort_report, alen, &status,
                          NULL);
    CHECK(status == 201 && !strcmp(sget(j, "signature"), "Crasher aborts"), "posted: %d %s",
          status, sget(j, "signature"));
    json_int_t id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    char path[64];
    snprintf(path, sizeof path, "/v1/crashes?limit=1");
    j = http_json(sp.port, "GET", path, NULL, NULL, 0, &status, NULL);
    json_t *first = json_array_get(json_object_get(j, "crashes"), 0);
    CHECK(json_integer_value(json_object_get(first, "id")) == id &&
              !strcmp(sget(first, "grouping_rule"), MERGE_RULE),
          "the listing's grouping_rule: %s", sget(first, "grouping_rule"));
    json_decref(j);

    /* a broken file is not taken: the rules in force stay, its line is said */
    struct stat before;
    CHECK(write_text(rules, MERGE_RULE "\nfunction:main ->\n") && stat(rules, &before) == 0,
          "writing the broken rules");
    for (int i = 0; i < 100; i++) {
        rules_health(sp.port, herr, sizeof herr, &nrules, &reloads);
        if (herr[0])
            break;
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    char want[700];
    snprintf(want, sizeof want, "%s:2: no fingerprint after '->'", rules);
    CHECK(!strcmp(herr, want) && nrules == 2, "healthz after a broken file: '%s', %lld rules",
          herr, nrules);
    http_resp m;
    CHECK(http_do(sp.port, "GET", "/metrics", NULL, NULL, 0, &m) && m.status == 200 &&
              strstr(m.body, "\nsymd_grouping_rules 2\n") &&
              strstr(m.body, "\nsymd_grouping_rules_reload_failures_total 1\n") &&
              strstr(m.body, "\nsymd_grouping_rules_reload_error 1\n"),
          "/metrics after a broken file");
    http_resp_free(&m);
    report_renumber(abort_report, alen, 2);
    j = http_json(sp.port, "POST", "/v1/crashes", NULL, abort_report, alen, &status, NULL);
    CHECK(status == 201 && !strcmp(sget(j, "signature"), "Crasher aborts"),
          "the old rules stay: %d %s", status, sget(j, "signature"));
    json_decref(j);
    CHECK(group_count(sp.port, "crash", "Crasher aborts", NULL) == 4, "4 in the merged group");

    /* SIGHUP reads the file again: written in place, its size and time as
     * before, so only the signal can tell (the merge goes, the split stays) */
    long long reloads_before = reloads;
    char text[512];
    snprintf(text, sizeof text, SPLIT_RULE "\n");
    size_t tl = strlen(text);
    while (tl < (size_t)before.st_size - 1)
        text[tl++] = '#';
    text[tl++] = '\n';
    text[tl] = 0;
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    CHECK(tl == (size_t)before.st_size && write_text(rules, text) &&
              utimensat(AT_FDCWD, rules, times, 0) == 0,
          "the same size (%zu, %lld) and time", tl, (long long)before.st_size);
    struct timespec settle = {1, 500 * 1000000L}; /* the watcher looks and sees nothing new */
    nanosleep(&settle, NULL);
    rules_health(sp.port, herr, sizeof herr, &nrules, &reloads);
    CHECK(reloads == reloads_before && nrules == 2, "the watcher saw no change: %lld reloads",
          reloads);
    kill(sp.pid, SIGHUP);
    /* the Crasher's crashes have main below them too: the split rule takes
     * them now, the uncaught exception's by its message, the abort (no
     * message) under its default signature */
    CHECK(wait_group(sp.port, "crash", "Crasher aborts", 0) &&
              wait_group(sp.port, "crash", ABORT_SIG, 3),
          "after SIGHUP: merged %lld, abort %lld",
          group_count(sp.port, "crash", "Crasher aborts", NULL),
          group_count(sp.port, "crash", ABORT_SIG, NULL));
    split = groups_with_prefix(sp.port, THROW_SIG " | *** Terminating app", &split_crashes);
    CHECK(split == 1 && split_crashes == 1 && group_count(sp.port, "crash", THROW_SIG, NULL) == 0,
          "the exception by its message: %zu groups", split);
    rules_health(sp.port, herr, sizeof herr, &nrules, &reloads);
    CHECK(nrules == 1 && !herr[0] && reloads == reloads_before + 1,
          "healthz after SIGHUP: %lld rules, '%s', %lld reloads", nrules, herr, reloads);
    split = groups_with_prefix(sp.port, MAIN_SIG " | ", &split_crashes);
    CHECK(split == 2 && split_crashes == 2, "the split stays: %zu groups", split);
    r = group_rule(sp.port, "crash", ABORT_SIG);
    CHECK(!strcmp(r, SPLIT_RULE), "refiled under the split rule: '%s'", r);
    free(r);
    check_counters(sp.port, "after SIGHUP");
    CHECK(server_stop(&sp), "the server did not stop cleanly");
    free(abort_report);

    /* a broken file refuses the start, with the line that broke it */
    CHECK(write_text(rules, "# fine\n\nfunction:main -> {{ nope }}\n"), "writing");
    char errpath[700];
    snprintf(errpath, sizeof errpath, "%s.stderr", db);
    unlink(errpath);
    server_stderr_to_file(true);
    bool started = server_start(&sp, db, with_rules);
    server_stderr_to_file(false);
    if (started)
        server_stop(&sp);
    size_t el;
    char *log = (char *)read_file(errpath, &el);
    snprintf(want, sizeof want, "symd: grouping rules: %s:3: unknown variable '{{ nope }}'",
             rules);
    CHECK(!started && log && strstr(log, want), "a broken file at start: %s",
          log ? log : "(no log)");
    free(log);

    /* without rules, the crashes go back to the default groups */
    if (!server_start(&sp, db, NULL)) {
        CHECK(false, "server did not start without rules");
        return;
    }
    CHECK(wait_group(sp.port, "crash", MAIN_SIG, 2) && wait_group(sp.port, "crash", ABORT_SIG, 3) &&
              wait_group(sp.port, "crash", THROW_SIG, 1),
          "the default groups again: main %lld", group_count(sp.port, "crash", MAIN_SIG, NULL));
    r = group_rule(sp.port, "crash", ABORT_SIG);
    CHECK(!strcmp(r, ""), "the default rule again: '%s'", r);
    free(r);
    check_counters(sp.port, "after the rules went");
    CHECK(server_stop(&sp), "the server did not stop cleanly");
}

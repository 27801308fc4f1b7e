/* swift/ (the Swift demangler) against Swift's own demangler test list,
 * simplified-style pairs built from the frames of real crash reports,
 * hostile names, and a speed figure. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../swift/demangle.h"
#include "test.h"

/* What swift_demangle gives, NULL when it leaves the name as it is. The
 * caller frees. */
static char *demangled(const char *name, size_t len, swift_style style)
{
    dynbuf b;
    dynbuf_init(&b, SWIFT_MAX_OUT + 1);
    if (!swift_demangle(name, len, style, &b)) {
        dynbuf_free(&b);
        return NULL;
    }
    return (char *)dynbuf_take(&b, NULL);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- Swift's test list ---- */

/* manglings.txt: SYMD_SWIFT_MANGLINGS, else beside the checkout, else the
 * shared copy. NULL when none is there. */
static uint8_t *read_manglings(size_t *len)
{
    const char *env = getenv("SYMD_SWIFT_MANGLINGS");
    const char *cands[] = {env, root_path("../shared/swift-demangle/manglings.txt"),
                           "/work/shared/swift-demangle/manglings.txt"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        uint8_t *buf = cands[i] ? read_file(cands[i], len) : NULL;
        if (buf)
            return buf;
    }
    return NULL;
}

typedef struct {
    char *mangled; /* NUL-terminated, in the file's buffer */
    char *want;    /* what swift-demangle prints, classification dropped */
} row;

/* The rows Swift's own test takes: lines with "--->", the name before it
 * (spaces trimmed), the expectation after it (spaces and a "{...} "
 * classification dropped). Edits buf in place. */
static size_t parse_rows(char *buf, row *rows, size_t max)
{
    size_t n = 0;
    for (char *line = buf; line && *line && n < max;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = 0;
        char *arrow = strstr(line, "--->");
        if (arrow) {
            char *name_end = arrow;
            while (name_end > line && name_end[-1] == ' ')
                name_end--;
            *name_end = 0;
            char *want = arrow + 4;
            while (*want == ' ')
                want++;
            if (*want == '{' && strstr(want, "} "))
                want = strstr(want, "} ") + 2;
            rows[n++] = (row){line, want};
        }
        line = end ? end + 1 : NULL;
    }
    return n;
}

TEST(swift_demangle_manglings_full)
{
    size_t len;
    uint8_t *buf = read_manglings(&len);
    if (!buf) {
        test_skip("manglings.txt is absent (set SYMD_SWIFT_MANGLINGS)");
        return;
    }
    static row rows[2000];
    size_t n = parse_rows((char *)buf, rows, 2000), exact = 0;
    for (size_t i = 0; i < n; i++) {
        char *got = demangled(rows[i].mangled, strlen(rows[i].mangled), SWIFT_STYLE_FULL);
        const char *shown =
            got ? got : rows[i].mangled; /* swift-demangle echoes what it cannot read */
        if (strcmp(shown, rows[i].want) == 0)
            exact++;
        else
            printf("    MISS %s: got %s, want %s\n", rows[i].mangled, shown, rows[i].want);
        free(got);
    }
    printf("    manglings.txt: %zu/%zu exact (%.1f%%)\n", exact, n, n ? 100.0 * exact / n : 0.0);
    CHECK(n >= 400, "only %zu rows read from manglings.txt", n);
    CHECK(exact * 100 >= n * 99, "%zu/%zu exact is below 99%%", exact, n);
    free(buf);
}

/* ---- the simplified style ---- */

/* Names and what `swift-demangle -simplified` (Xcode, atos and Apple's
 * crash reports) shows for them. The first group rebuilds frames of the
 * real reports in ../shared/real-reports (and the issue's examples); the
 * rest are rows of manglings.txt, printed with the simplified options. */
static const struct {
    const char *mangled, *want;
} simplified[] = {
    /* the issue */
    {"$s15iOSCrashingTest10CrashClassC06pleaseC0yyFZTf4d_n",
     "specialized static CrashClass.pleaseCrash()"},
    {"$s13AnotherTarget13CrashingClassC5crashyyFZTo", "@objc static CrashingClass.crash()"},
    {"$s5MyApp14ViewControllerC11viewDidLoadyyFyycfU_",
     "closure #1 in ViewController.viewDidLoad()"},
    /* frames of the real reports */
    {"$s5UIKit26UITableViewListCoordinatorC9tableView_14didSelectRowAtySo11UITableViewC_"
     "10Foundation9IndexPathVtFTo",
     "@objc UITableViewListCoordinator.tableView(_:didSelectRowAt:)"},
    {"$s5UIKit26UITableViewListCoordinatorC9tableView_14didSelectRowAtySo11UITableViewC_"
     "10Foundation9IndexPathVtF",
     "UITableViewListCoordinator.tableView(_:didSelectRowAt:)"},
    {"$s7Planets20PlanetViewControllerC7Planets16DownloadDelegateP7Planets7Planets16DownloadDelegat"
     "eP"
     "15imageDownloadedyySo7UIImageCFTW",
     "protocol witness for DownloadDelegate.imageDownloaded(_:) in conformance "
     "PlanetViewController"},
    {"$s7Planets20PlanetViewControllerC15imageDownloadedyySo7UIImageCF",
     "PlanetViewController.imageDownloaded(_:)"},
    {"$s7Planets14DownloadHelperC9urlStringACSS_tcfcyycfU_yycfU1_",
     "closure #3 in closure #1 in DownloadHelper.init(urlString:)"},
    {"$sIeg_IeyB_TR", "thunk for @escaping @callee_guaranteed () -> ()"},
    {"$sIeg_IeyB_TRTA", "partial apply for thunk for @escaping @callee_guaranteed () -> ()"},
    {"$s7SwiftUI22DefaultListButtonStyleV10ListButtonV4bodySivgyycfu_yycfu0_TA",
     "partial apply for implicit closure #2 in implicit closure #1 in "
     "DefaultListButtonStyle.ListButton.body.getter"},
    {"$s7SwiftUI16PlatformItemListV26containerSelectionBehaviorSivgyycfU0_Si_Tg5",
     "specialized closure #2 in PlatformItemList.containerSelectionBehavior.getter"},
    {"$s5MyApp3AppV4mainyyFZ", "static App.main()"},
    {"$s5UIKit17KitRendererCommonyySiFyycfU_", "closure #1 in KitRendererCommon(_:)"},
    {"$s7SwiftUI6runAppys5NeverOx7SwiftUI3AppPRzlF", "runApp<A>(_:)"},
    {"$ss17_assertionFailure__4file4line5flagss5NeverOs12StaticStringV_"
     "s12StaticStringVs12StaticStringV"
     "Sus6UInt32VtF",
     "_assertionFailure(_:_:file:line:flags:)"},
    {"$ss17_assertionFailure__4file4line5flagss5NeverOs12StaticStringV_"
     "s12StaticStringVs12StaticStringV"
     "Sus6UInt32VtFyycfU_yycfU_yycfU_",
     "closure #1 in closure #1 in closure #1 in _assertionFailure(_:_:file:line:flags:)"},
    /* common app frames, in the same vein */
    {"$s5MyApp14ViewControllerC11viewDidLoadyyF", "ViewController.viewDidLoad()"},
    {"$s5MyApp14ViewControllerC11viewDidLoadyyFyycfU_TA",
     "partial apply for closure #1 in ViewController.viewDidLoad()"},
    {"$s5MyApp5ModelC4nameSSvg", "Model.name.getter"},
    {"$s5MyApp5ModelC4nameSSvs", "Model.name.setter"},
    {"$s5MyApp5ModelC4nameSSvM", "Model.name.modify"},
    {"$s5MyApp5ModelCfD", "Model.__deallocating_deinit"},
    {"$s5MyApp5ModelCfd", "Model.deinit"},
    {"$s5MyApp5ModelCACycfc", "Model.init()"},
    {"$s5MyApp5ModelC5countSivgTj", "dispatch thunk of Model.count.getter"},
    {"$s5MyApp5ModelC6updateyySaySiGFTq", "method descriptor for Model.update(_:)"},
    {"$s5MyApp5ModelC6updateyySaySiGFTm", "Model.update(_:)"},
    {"$s5MyApp5ModelC6updateyySaySiGFTD", "dynamic Model.update(_:)"},
    {"$s5MyApp5ModelC6updateyySaySiGFTO", "@nonobjc Model.update(_:)"},
    {"$s5MyApp5ModelC1vSivpWvd", "direct field offset for Model.v"},
    {"$s5MyApp5ModelC1vSivpfi", "variable initialization expression of Model.v"},
    {"$s5MyApp4ItemVMa", "type metadata accessor for Item"},
    {"$s5MyApp4ItemVMn", "nominal type descriptor for Item"},
    {"$s5MyApp4ItemVN", "type metadata for Item"},
    {"$s5MyApp4ItemVSQAAMc", "protocol conformance descriptor for Item"},
    {"$s5MyApp4ItemVwxx", "destroy for Item"},
    {"$s5MyApp4ItemVSQAASQ2eeoiySbx_xtFZTW",
     "protocol witness for static Equatable.== infix(_:_:) in conformance Item"},
    {"$s5MyApp4ItemV4fromACAA6LoaderC_tKcfC", "Item.init(from:)"},
    {"$s5MyApp4ItemV4fromACAA6LoaderC_tKcfCTf4nn_g", "specialized Item.init(from:)"},
    {"$s5MyApp6LoaderC5fetch3urlSS10Foundation3URLV_tYaKF", "Loader.fetch(url:)"},
    {"$s5MyApp6LoaderC5fetch3urlSS10Foundation3URLV_tYaKFTQ0_", "Loader.fetch(url:)"},
    {"$s5MyApp6LoaderC5fetch3urlSS10Foundation3URLV_tYaKFTY1_", "Loader.fetch(url:)"},
    {"$s5MyApp6LoaderC5fetch3urlSS10Foundation3URLV_tYaKFTu",
     "async function pointer to Loader.fetch(url:)"},
    {"$s5MyApp6LoaderC5items33_0123456789ABCDEF0123456789ABCDEFLLSaySiGvg", "Loader.items.getter"},
    {"$s5MyApp6ViewerV4bodyQrvg", "Viewer.body.getter"},
    {"$s5MyApp6ViewerV4bodyQrvgAA4ItemVyXEfU_", "closure #1 in Viewer.body.getter"},
    {"$sSa5MyAppE6uniqueSayxGyF", "Array.unique()"},
    {"$s5MyApp3maxyxx_xtSLRzlF", "max<A>(_:_:)"},
    {"$s5MyApp3maxyxx_xtSLRzlFSi_Tg5", "specialized max<A>(_:_:)"},
    {"$s5MyApp3logyySSFTf4g_n", "specialized log(_:)"},
    {"$sSo8NSObjectC5MyAppE4tagsSaySSGvg", "NSObject.tags.getter"},
    {"_$s5MyApp3AppV4mainyyFZ", "static App.main()"},
    {"__$s5MyApp3AppV4mainyyFZ", "static App.main()"},
    /* rows of manglings.txt */
    {"_TtSi", "Int"},
    {"_TtGSaSS_", "[String]"},
    {"_TtGSqSS_", "String?"},
    {"_TtGVs10DictionarySSSi_", "[String : Int]"},
    {"_TtGSqGSaC5sugar7MyClass__", "[MyClass]?"},
    {"_TtCSo8NSObject", "NSObject"},
    {"_TtP3foo3barS_3bas_", "bar & bas"},
    {"_TFC3foo3bar3basfT3zimCS_3zim_T_", "bar.bas(zim:)"},
    {"_TToFC3foo3bar3basfT3zimCS_3zim_T_", "@objc bar.bas(zim:)"},
    {"_TF3foog3barSi", "bar.getter"},
    {"_TFC3foo3barCfT_S0_", "bar.__allocating_init()"},
    {"_TFC3red11BaseClassEHcfzT1aSi_S0_", "BaseClassEH.init(a:)"},
    {"_TFE11ext_structAV11def_structA1A4testfT_T_", "A.test()"},
    {"_TF4mainP5_mainX3wxaFT_T_", "\xce\xbb()"},
    {"_TF8manglingoi2qqFTSiSi_T_", "?? infix(_:_:)"},
    {"_TIF1t1fFT1iSi1sSS_T_A_", "default argument 0 of f(i:s:)"},
    {"_TFCF5types1gFT1bSb_T_L0_10Collection3zimfT_T_", "zim() in Collection #2 in g(b:)"},
    {"_TFF17capture_promotion22test_capture_promotionFT_FT_SiU_FT_Si_promote0",
     "closure #1 in test_capture_promotion()"},
    {"_TTWC13call_protocol1CS_1PS_FS1_3foofT_Si", "protocol witness for P.foo() in conformance C"},
    {"_TTRXFo_dSc_dSb_XFo_iSc_iSb_", "thunk for @callee_owned (@in UnicodeScalar) -> (@out Bool)"},
    {"_TTSf1cl35_TFF7specgen6callerFSiT_U_FTSiSi_T_Si___TF7specgen12take_closureFFTSiSi_T_T_",
     "specialized take_closure(_:)"},
    {"_T03abc6testitySiFTm", "testit(_:)"},
    {"_T0SqWOy.17", "outlined copy of Optional"},
    {"_T04main4TestCACSi1x_tc6_PRIV_Llfc", "Test.init(x:)"},
    {"_T0So11UITextFieldC4textSSSgvgToTepb_",
     "outlined bridged method (pb) of @objc UITextField.text.getter"},
    {"_T0So13GenericOptionas8HashableSCsACP9hashValueSivgTW",
     "protocol witness for Hashable.hashValue.getter in conformance GenericOption"},
    {"$s4main8MyStructV3fooyyFAA1XV_Tg5.foo", "specialized MyStruct.foo()"},
    {"$s4main3fooyySiFyyXEfU_TA.1", "partial apply for closure #1 in foo(_:)"},
    {"$s4main6testityyYaFTu", "async function pointer to testit()"},
    {"$s5Actor02MyA0C17testAsyncFunctionyyYaKFTY0_", "MyActor.testAsyncFunction()"},
    {"$s2hi1SV1iSivx", "S.i.modify2"},
    {"$s4test3StrCACycfC", "Str.__allocating_init()"},
    {"$s17distributed_thunk2DAC1fyyFTE", "DA.f()"},
    {"$s21back_deploy_attribute0A12DeployedFuncyyFTwb", "backDeployedFunc()"},
    {"$s21back_deploy_attribute0A12DeployedFuncyyFTwB",
     "back deployment fallback for backDeployedFunc()"},
    {"$s7Library3fooyyFTwS", "#_hasSymbol query for foo()"},
    {"@__swiftmacro_1a13testStringifyAA1bySi_SitF9stringifyfMf_",
     "freestanding macro expansion #1 of stringify in testStringify(a:b:)"},
    {"$s9MacroUser016testFreestandingA9ExpansionyyF4Foo3L_V23bitwidthNumberedStructsfMf_"
     "6methodfMu0_",
     "unique name #2 of method in freestanding macro expansion #1 of bitwidthNumberedStructs in "
     "Foo3 #1 in "
     "testFreestandingMacroExpansion()"},
    {"$s12typed_throws15rethrowConcreteyyAA7MyErrorOYKF", "rethrowConcrete()"},
    {"$s3red4testyAA3ResOyxSayq_GAEs5ErrorAAq_sAFHD1__HCg_GADyxq_GsAFR_r0_lF", "test<A, B>(_:)"},
    {"$s3red7MyActorC3runyxxyYaKACYcYTXEYaKlFZ", "static MyActor.run<A>(_:)"},
    {"$s13__lldb_expr_110$10016c2d8yXZ1B10$10016c2e0LLC", "B"},
    {"$s15raw_identifiers0020foospace_liaADEDGcjayyF",
     "`foo\xc2\xa0space`()"}, /* a no-break space */
    {"$s4test3fooV4blahyAA1SV1fQryFQOy_Qo_AHF", "foo.blah(_:)"},
    {"$s4main1gyySiXCvp", "g"},
    {"$sScGySiG", "TaskGroup<Int>"},
    {"$sSiSHsWP", "protocol witness table for Int"},
    {"$s4diff1hyyS2iYjfXEF", "h(_:)"},
    {"$s1A3bar1aySSYt_tF", "bar(a:)"},
};

TEST(swift_demangle_simplified_style)
{
    size_t n = sizeof simplified / sizeof simplified[0];
    CHECK(n >= 60, "only %zu simplified pairs", n);
    for (size_t i = 0; i < n; i++) {
        char *got =
            demangled(simplified[i].mangled, strlen(simplified[i].mangled), SWIFT_STYLE_SIMPLIFIED);
        CHECK(got && strcmp(got, simplified[i].want) == 0, "simplified %s:\n  got  %s\n  want %s",
              simplified[i].mangled, got ? got : "(as is)", simplified[i].want);
        free(got);
    }
}

TEST(swift_demangle_api_edges)
{
    /* Prefixes and their absence. */
    CHECK(swift_is_mangled("$s4main3fooyyF", 14), "$s");
    CHECK(swift_is_mangled("_TtC5MyApp4Test", 15), "_TtC");
    CHECK(swift_is_mangled("@__swiftmacro_x", 15), "@__swiftmacro_");
    CHECK(swift_is_mangled("async_MainTu", 12), "async_Main");
    CHECK(!swift_is_mangled("_ZN3foo3barEv", 13), "C++ is no Swift");
    CHECK(!swift_is_mangled("$", 1) && !swift_is_mangled("", 0) && !swift_is_mangled(NULL, 4),
          "too short");
    /* The Objective-C runtime names of Swift classes and protocols. */
    char *s = demangled("_TtC5MyApp14ViewController", 26, SWIFT_STYLE_FULL);
    CHECK(s && strcmp(s, "MyApp.ViewController") == 0, "ObjC class name: %s", s ? s : "(as is)");
    free(s);
    s = demangled("_TtP5MyApp8Drawable_", 20, SWIFT_STYLE_FULL);
    CHECK(s && strcmp(s, "MyApp.Drawable") == 0, "ObjC protocol name: %s", s ? s : "(as is)");
    free(s);
    /* Swift 5.9/5.10 marked some generic specializations 'Tgm' (metatype
     * parameters removed; later compilers dropped the flag, and
     * manglings.txt has no row with it). Real binaries carry it, e.g.
     * $sSUss17FixedWidthIntegerRzrlEyxqd__cSzRd__lufCSu_SiTgm5 of the 5.10
     * runtime, and aperture@7.0.0 from npm: it prints as if absent. */
    static const char tgm[] = "$sSUss17FixedWidthIntegerRzrlEyxqd__cSzRd__lufCSu_SiTgm5";
    static const char tg[] = "$sSUss17FixedWidthIntegerRzrlEyxqd__cSzRd__lufCSu_SiTg5";
    for (int st = 0; st < 2; st++) {
        swift_style style = st ? SWIFT_STYLE_SIMPLIFIED : SWIFT_STYLE_FULL;
        char *a = demangled(tgm, sizeof tgm - 1, style), *b2 = demangled(tg, sizeof tg - 1, style);
        const char *head = st ? "specialized " : "generic specialization <";
        CHECK(a && b2 && strcmp(a, b2) == 0 && strncmp(a, head, strlen(head)) == 0,
              "Tgm5 (%s): %s / %s", st ? "simplified" : "full", a ? a : "(as is)",
              b2 ? b2 : "(as is)");
        free(a);
        free(b2);
    }
    /* Names are (buf, len): bytes past len are not read, a NUL inside is refused. */
    s = demangled("$s4main3fooyyFGARBAGE", 14, SWIFT_STYLE_FULL);
    CHECK(s && strcmp(s, "main.foo() -> ()") == 0, "length respected: %s", s ? s : "(as is)");
    free(s);
    CHECK(!demangled("$s4main3f\0oyyF", 14, SWIFT_STYLE_FULL), "NUL inside");
    CHECK(!demangled("$s4main\x01\x02\x03\x04yyF", 13, SWIFT_STYLE_FULL),
          "symbolic reference bytes");
    CHECK(!demangled("$s4main3f\xffoyyF", 14, SWIFT_STYLE_FULL), "not UTF-8");
    /* Appends, keeping what out held; false leaves it as it was. */
    dynbuf b;
    dynbuf_init(&b, 1 << 16);
    dynbuf_add(&b, "x ", 2);
    CHECK(swift_demangle("$s4main3fooyyF", 14, SWIFT_STYLE_SIMPLIFIED, &b) &&
              strcmp((char *)b.data, "x foo()") == 0,
          "appended: %s", b.data);
    CHECK(!swift_demangle("$s4main3fooyyX", 14, SWIFT_STYLE_FULL, &b) && b.len == 7 &&
              strcmp((char *)b.data, "x foo()") == 0,
          "false changed out");
    dynbuf_free(&b);
    /* out's own limit is a bound like the others. */
    dynbuf_init(&b, 8);
    dynbuf_add(&b, "ab", 2);
    CHECK(!swift_demangle("$s4main3fooyyF", 14, SWIFT_STYLE_FULL, &b) && b.len == 2, "out's limit");
    dynbuf_free(&b);
    CHECK(!swift_demangle("$s4main3fooyyF", 14, SWIFT_STYLE_FULL, NULL), "NULL out");
}

/* ---- hostile names ---- */

/* Demangles name both ways and checks the contract: true with bounded
 * UTF-8 text appended, or false with out untouched; never slow. */
static void check_contract(const char *what, const char *name, size_t len)
{
    for (int style = 0; style < 2; style++) {
        dynbuf b;
        dynbuf_init(&b, SWIFT_MAX_OUT * 2);
        dynbuf_add(&b, "=", 1);
        double t0 = now();
        bool ok = swift_demangle(name, len, (swift_style)style, &b);
        double dt = now() - t0;
        CHECK(dt < 2.0, "%s: %.2fs", what, dt);
        if (ok)
            CHECK(b.len > 1 && b.len - 1 <= SWIFT_MAX_OUT && b.data[b.len] == 0, "%s: %zu bytes",
                  what, b.len - 1);
        else
            CHECK(b.len == 1 && memcmp(b.data, "=", 2) == 0, "%s: false changed out", what);
        dynbuf_free(&b);
    }
}

/* prefix, then unit n times, then suffix: into a malloc'ed buffer. */
static char *repeat(const char *prefix, const char *unit, size_t n, const char *suffix, size_t *len)
{
    size_t pl = strlen(prefix), ul = strlen(unit), sl = strlen(suffix);
    *len = pl + ul * n + sl;
    char *s = malloc(*len + 1);
    memcpy(s, prefix, pl);
    for (size_t i = 0; i < n; i++)
        memcpy(s + pl + i * ul, unit, ul);
    memcpy(s + pl + ul * n, suffix, sl + 1);
    return s;
}

TEST(swift_demangle_hostile_nesting)
{
    static const struct {
        const char *prefix, *unit, *suffix;
        size_t n;
    } cases[] = {
        {"$s", "y", "SiG", 100000},        /* 100k generic openers, past the length bound */
        {"$sSi", "Sg", "", 2000},          /* Optional of Optional ..., within it */
        {"$sSi", "Sg", "D", 2000},
        {"$s", "Si_", "tD", 1300},         /* one wide tuple */
        {"$sSi", "_t", "D", 2000},         /* tuples of tuples */
        {"$s", "y", "yyF", 4000},
        {"_Tt", "GSq", "Si_", 1300},       /* old mangling: recursive descent */
        {"_Tt", "R", "Si", 4000},
        {"_Tt", "T", "", 4000},
        {"_TF", "E1a", "1fFT_T_", 1300},   /* extensions of extensions */
        {"_TtF", "F", "SiSi", 4000},
        {"$s", "SiSi", "", 1000},          /* many roots */
        {"$s3foo", "AA", "", 2000},        /* substitutions of substitutions */
        {"$s", "S2048i", "", 600},         /* repeat counts at their bound */
        {"$s", "S2049i", "", 1},           /* past it */
        {"$s3foo", "A2048a", "A", 500},
        {"$s1a", "0aA", "", 1300},         /* words of words */
        {"$s", "1a", "LL", 2000},
        {"$sSi", "Sq", "", 2000},
        {"$s", "1a1bL_", "", 600},
        {"$sSi", "m", "D", 4000},          /* metatypes of metatypes */
        {"$sSi", "XSq", "D", 1300},
        {"$s", "Tf", "", 2000},
        {"$s4main", "Tf4d_n", "3fooyyF", 600},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        char *s = repeat(cases[i].prefix, cases[i].unit, cases[i].n, cases[i].suffix, &len);
        char what[64];
        snprintf(what, sizeof what, "%s(%s)x%zu", cases[i].prefix, cases[i].unit, cases[i].n);
        check_contract(what, s, len);
        free(s);
    }
}

/* A bomb: each Dictionary holds the previous one twice, so the printed
 * text doubles at each step while the name grows by a few bytes. */
TEST(swift_demangle_hostile_substitution_bomb)
{
    char name[SWIFT_MAX_NAME + 2];
    size_t len = (size_t)snprintf(name, sizeof name, "$sSDySiSiG");
    /* Dictionary number i is substitution i: "A<letter>", then "A_" for
     * 26, then "A<i-27>_". */
    for (int i = 0; i < 60; i++) {
        char ref[16], step[40];
        if (i < 26)
            snprintf(ref, sizeof ref, "A%c", 'A' + i);
        else if (i == 26)
            snprintf(ref, sizeof ref, "A_");
        else
            snprintf(ref, sizeof ref, "A%d_", i - 27);
        int n = snprintf(step, sizeof step, "SDy%s%sG", ref, ref);
        memcpy(name + len, step, (size_t)n);
        len += (size_t)n;
        check_contract("bomb", name, len);
    }
    name[len] = 'D';
    check_contract("bomb, as a type", name, len + 1);
}

/* Every byte string of lengths 0-2 and many of length 3, then random
 * bytes: the reader must reject, never read past len. */
TEST(swift_demangle_hostile_short_and_random)
{
    char s[8];
    for (int a = 0; a < 256; a++) {
        s[0] = (char)a;
        check_contract("1 byte", s, 1);
        for (int b = 0; b < 256; b += (a == '$' || a == '_' ? 1 : 37)) {
            s[1] = (char)b;
            check_contract("2 bytes", s, 2);
        }
    }
    srand(7);
    for (int i = 0; i < 3000; i++) {
        char r[64] = "$s";
        size_t len = 2 + (size_t)(rand() % 60);
        for (size_t j = 2; j < len; j++)
            r[j] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$."[rand() % 65];
        check_contract("random", r, len);
    }
    check_contract("empty", "", 0);
    size_t big = SWIFT_MAX_NAME + 1;
    char *huge = malloc(big);
    memset(huge, 'A', big);
    memcpy(huge, "$s", 2);
    check_contract("too long", huge, big);
    free(huge);
}

/* Every truncation, and bit flips, of every name of Swift's list. */
TEST(swift_demangle_hostile_truncations_and_flips)
{
    size_t len;
    uint8_t *buf = read_manglings(&len);
    if (!buf) {
        test_skip("manglings.txt is absent (set SYMD_SWIFT_MANGLINGS)");
        return;
    }
    static row rows[2000];
    size_t n = parse_rows((char *)buf, rows, 2000);
    unsigned seed = 1;
    char copy[SWIFT_MAX_NAME + 1];
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(rows[i].mangled);
        if (l > SWIFT_MAX_NAME)
            continue;
        for (size_t cut = 0; cut <= l; cut++)
            check_contract(rows[i].mangled, rows[i].mangled, cut);
        for (int f = 0; f < 16; f++) {
            memcpy(copy, rows[i].mangled, l);
            seed = seed * 1103515245u + 12345u;
            copy[(seed >> 8) % l] ^= (char)(1u << ((seed >> 20) % 8));
            check_contract(rows[i].mangled, copy, l);
        }
    }
    free(buf);
}

static void replay(const char *rel, const uint8_t *buf, size_t len)
{
    check_contract(rel, (const char *)buf, len);
}

TEST(swift_demangle_fuzz_regressions)
{
    int n = each_regression("swift-", replay);
    CHECK(n >= 0, "fuzz/regress is missing");
}

/* ---- speed ---- */

TEST(swift_demangle_speed)
{
    size_t len;
    uint8_t *buf = read_manglings(&len);
    if (!buf) {
        test_skip("manglings.txt is absent (set SYMD_SWIFT_MANGLINGS)");
        return;
    }
    static row rows[2000];
    size_t n = parse_rows((char *)buf, rows, 2000);
    static size_t lens[2000];
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(rows[i].mangled);
    dynbuf b;
    dynbuf_init(&b, 1 << 20);
    for (int style = 0; style < 2; style++) {
        size_t count = 0, ok = 0;
        double t0 = now();
        for (int r = 0; r < 50; r++)
            for (size_t i = 0; i < n; i++, count++) {
                b.len = 0;
                ok += swift_demangle(rows[i].mangled, lens[i], (swift_style)style, &b);
            }
        double dt = now() - t0;
        printf("    %s style: %.0f names/s (%zu names, %zu demangled, %.3fs)\n",
               style ? "simplified" : "full", count / dt, count, ok, dt);
        CHECK(count > 0, "nothing timed");
    }
    dynbuf_free(&b);
    free(buf);
}

/* util/demangle against libiberty's cplus_demangle (what the issue names)
 * and LLVM's answers, on names taken from real binaries. */
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "../demangle/demangle.h"
#include "test.h"

/* cplus_demangle as the issue specifies it; NULL when it fails. */
static char *oracle(const char *name)
{
    return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}

/* want NULL: the name stays as it is. Also checks that the answer is
 * cplus_demangle's whenever one is expected. */
static void expect(const char *name, const char *want)
{
    char *got = symd_demangle(name);
    CHECK(want ? got && strcmp(got, want) == 0 : got == NULL,
          "demangle(%.200s):\n  got  %.300s\n  want %.300s", name, got ? got : "(as is)",
          want ? want : "(as is)");
    if (want && strncmp(name, "___Z", 4) != 0) {
        char *o = oracle(name);
        CHECK(o && strcmp(o, want) == 0, "cplus_demangle(%.200s) = %.300s", name,
              o ? o : "(null)");
        free(o);
    }
    free(got);
}

/* Rust names from sentry-cli 3.8.0 (bench/README.md: @sentry/cli-darwin,
 * arm64 slice), raw names as symd stores them (one '_' removed); expected
 * answers are libiberty's. */
TEST(demangle_rust_legacy_drops_the_hash)
{
    /* llvm-symbolizer 14 demangles these as C++ and keeps both the escapes
     * and the hash, e.g. "h2::hpack::table::Table::resize::h758d1b6759e0709a";
     * symd follows libiberty (README, "Demangling"). */
    expect("_ZN2h25hpack5table5Table6resize17h758d1b6759e0709aE",
           "h2::hpack::table::Table::resize");
    expect("_ZN44_$LT$$RF$T$u20$as$u20$core..fmt..Display$GT$3fmt17h1d4f575ae7069a40E",
           "<&T as core::fmt::Display>::fmt");
    expect("_ZN4core3ptr52drop_in_place$LT$sentry_cli..utils..fs..TempFile$GT$"
           "17h1c336e7a95abbf73E",
           "core::ptr::drop_in_place<sentry_cli::utils::fs::TempFile>");
    expect("_ZN5ipnet6parser76_$LT$impl$u20$core..str..traits..FromStr$u20$for$u20$"
           "ipnet..ipnet..IpNet$GT$8from_str17h57d9baf6edef832eE",
           "ipnet::parser::<impl core::str::traits::FromStr for ipnet::ipnet::IpNet>::from_str");
    expect("_ZN6rustix7backend7termios8syscalls6isatty17h2dddde72c59d0d78E",
           "rustix::backend::termios::syscalls::isatty");
}

TEST(demangle_rust_v0)
{
    /* llvm-symbolizer 14 gives the same answers for these. */
    expect("_RNvNtCscEX5ZwinSox_3std9panicking15panic_with_hook",
           "std::panicking::panic_with_hook");
    expect("_RNvXs1f_NtCscEX5ZwinSox_3std7processNtB6_10ExitStatusNtNtCsitGFVNq7Ifu_4core3fmt"
           "5Debug3fmt",
           "<std::process::ExitStatus as core::fmt::Debug>::fmt");
    expect("_RINvMNtCsitGFVNq7Ifu_4core3stre18trim_start_matchesReECseeDK3LyGrZ3_14rustc_demangle",
           "<str>::trim_start_matches::<&str>");
    expect("_RNvMs3_NtCsdBofyk9Yr2t_5alloc7raw_vecINtB5_6RawVecNtNtB7_6string6StringE8grow_one"
           "CscEX5ZwinSox_3std",
           "<alloc::raw_vec::RawVec<alloc::string::String>>::grow_one");
    expect("_RINvMs4_NtCseeDK3LyGrZ3_14rustc_demangle2v0NtB6_7Printer13print_backrefNCNvB2_"
           "10print_paths_0EB8_",
           "<rustc_demangle::v0::Printer>::print_backref::<<rustc_demangle::v0::Printer>::"
           "print_path::{closure#1}>");
    /* Punycode identifiers (RFC 2603's "gödel"). */
    expect("_RNvC1au8gdel_5qa", "a::gödel");
}

/* C++ from the same binary (its Swift runtime parts). The fixtures' C++ is
 * checked against llvm-symbolizer in test_macho.c. */
TEST(demangle_cxx_and_documented_llvm_differences)
{
    expect("_ZN5swift14VoucherManager9swapToJobEPNS_3JobE",
           "swift::VoucherManager::swapToJob(swift::Job*)");
    expect("_ZN5swift16adoptTaskVoucherEPNS_9AsyncTaskE",
           "swift::adoptTaskVoucher(swift::AsyncTask*)");
    /* Where libiberty and llvm-cxxfilt 14 differ (README, "Demangling"):
     * symd gives libiberty's answer. LLVM's, for the record:
     *   "swift::VoucherManager::swapToJob(swift::Job*) (.cold.1)"
     *   "swift_voucher_needs_adopt(voucher_s*)::'lambda'()::operator()() const::
     *    'lambda'(void*)::__invoke(void*)"
     *   "...void (swift::AsyncContext* swift_async_context) swiftasynccall*..." */
    expect("_ZN5swift14VoucherManager9swapToJobEPNS_3JobE.cold.1",
           "swift::VoucherManager::swapToJob(swift::Job*) [clone .cold.1]");
    expect("_ZZZL25swift_voucher_needs_adoptP9voucher_sENKUlvE_clEvENUlPvE_8__invokeES2_",
           "swift_voucher_needs_adopt(voucher_s*)::{lambda()#1}::operator()() const::"
           "{lambda(void*)#1}::__invoke(void*)");
    expect("_ZN5swift9AsyncTask10waitFutureEPS0_PNS_12AsyncContextEPU14swiftasynccallFvU19swift_"
           "async_contextS3_ES3_PNS_11OpaqueValueE",
           "swift::AsyncTask::waitFuture(swift::AsyncTask*, swift::AsyncContext*, void ( "
           "swiftasynccall*)(swift::AsyncContext* swift_async_context), swift::AsyncContext*, "
           "swift::OpaqueValue*)");
}

/* clang's block invocations, named "___Z<f>_block_invoke[_N]" once Mach-O's
 * '_' is gone; answers are llvm-symbolizer 14's on a clang-14 arm64 object
 * (namespace ns { void work(int x) { use(^{ counter += x; }); } }). */
TEST(demangle_block_invocations_like_llvm_symbolizer)
{
    expect("___ZN2ns4workEi_block_invoke", "invocation function for block in ns::work(int)");
    expect("___ZN2ns4workEi_block_invoke_2", "invocation function for block in ns::work(int)");
    expect("___ZN2ns4workEi_block_invoke.cold.1",
           "invocation function for block in ns::work(int)");
    expect("___ZN2ns4workEi_block_invoke_", NULL);   /* '_' without a number */
    expect("___ZN2ns4workEi_block_invokex", NULL);
    expect("___ZN2ns4workE_block_invoke", "invocation function for block in ns::work");
    expect("___Z_block_invoke", NULL);                /* no encoding */
    expect("____ZN2ns4workEi_block_invoke", NULL);    /* llvm-symbolizer: as is */
    expect("__ZN2ns4workEi", NULL);                   /* extra '_': as is */
}

/* Swift names: the simplified form by default (what Xcode, atos and crash
 * reports show), the full one on request; the Swift demangler's own list is
 * tested in test_swift_demangle.c. */
TEST(demangle_swift_simplified_and_full)
{
    static const struct {
        const char *raw, *simplified, *full;
    } cases[] = {
        {"$s10Foundation4DataV15_RepresentationOWOe", "outlined consume of Data._Representation",
         "outlined consume of Foundation.Data._Representation"},
        {"$s18AssetCatalogParser0A4TypeOMa", "type metadata accessor for AssetType",
         "type metadata accessor for AssetCatalogParser.AssetType"},
        {"_T0So8NSObjectCMa", "type metadata accessor for NSObject",
         "type metadata accessor for __C.NSObject"},
        {"$s15iOSCrashingTest10CrashClassC06pleaseC0yyFZTf4d_n",
         "specialized static CrashClass.pleaseCrash()",
         "function signature specialization <Arg[0] = Dead> of static "
         "iOSCrashingTest.CrashClass.pleaseCrash() -> ()"},
        {"$s13AnotherTarget13CrashingClassC5crashyyFZTo", "@objc static CrashingClass.crash()",
         "@objc static AnotherTarget.CrashingClass.crash() -> ()"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *d = symd_demangle(cases[i].raw), *f = symd_demangle_full(cases[i].raw);
        CHECK(d && strcmp(d, cases[i].simplified) == 0, "%s: simplified %s, want %s",
              cases[i].raw, d ? d : "(as is)", cases[i].simplified);
        CHECK(f && strcmp(f, cases[i].full) == 0, "%s: full %s, want %s", cases[i].raw,
              f ? f : "(as is)", cases[i].full);
        CHECK(symd_is_swift(cases[i].raw), "%s is Swift", cases[i].raw);
        free(d);
        free(f);
    }
    /* C++ the same in both; a malformed Swift name stays as it is */
    char *a = symd_demangle("_ZN2ns4workEi"), *b = symd_demangle_full("_ZN2ns4workEi");
    CHECK(a && b && strcmp(a, b) == 0, "C++ alike in both styles");
    free(a);
    free(b);
    CHECK(!symd_demangle("$sZZ9") && !symd_demangle_full("$s"), "malformed Swift as is");
}

TEST(demangle_leaves_other_names_alone)
{
    static const char *same[] = {
        "-[Cart addItem:price:]", "+[Cart shared]", "main", "compute_total",
        "HUF_decompress4X1_usingDTable_internal_fast_asm_loop", /* x86_64 asm label */
        "_GLOBAL__sub_I_app.cpp", "_GLOBAL__I_a", /* llvm-symbolizer leaves these */
        "", "_", "_Z", "_R", "_ZN", "_ZN999999999", "_RNvC", "_Rubbish",
        "_ZN2ns4workEi_block_invoke", "_Z1fv\xff", "_ZN3foo17h0123456789abcdefEjunk",
        "_RNvC0au8gdel_5qa", /* fuzz_demangle: an empty identifier printed as (NULL, 0) */
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        expect(same[i], NULL);
}

static char *repeat(const char *pre, const char *unit, size_t times, const char *post)
{
    size_t lp = strlen(pre), lu = strlen(unit), lq = strlen(post);
    char *s = malloc(lp + lu * times + lq + 1), *p = s;
    memcpy(p, pre, lp);
    p += lp;
    for (size_t i = 0; i < times; i++, p += lu)
        memcpy(p, unit, lu);
    memcpy(p, post, lq + 1);
    return s;
}

TEST(demangle_length_bounds)
{
    /* Rust legacy (no libiberty length limit): up to SYMD_DEMANGLE_MAX_IN. */
    for (size_t len = SYMD_DEMANGLE_MAX_IN; len <= SYMD_DEMANGLE_MAX_IN + 1; len++) {
        size_t ident = len - strlen("_ZN") - 4 - strlen("17h0123456789abcdefE");
        char pre[16];
        snprintf(pre, sizeof pre, "_ZN%zu", ident);
        char *name = repeat(pre, "a", ident, "17h0123456789abcdefE");
        CHECK(strlen(name) == len, "built %zu bytes, want %zu", strlen(name), len);
        char *got = symd_demangle(name);
        if (len <= SYMD_DEMANGLE_MAX_IN)
            CHECK(got && strlen(got) == ident, "%zu-byte Rust name not demangled", len);
        else
            CHECK(!got, "%zu-byte name demangled", len);
        free(got);
        free(name);
    }
    /* C++: libiberty with its recursion limit on refuses names over 1024
     * bytes (2 * length > DEMANGLE_RECURSION_LIMIT components), where
     * llvm-cxxfilt demangles them: they stay mangled. */
    char *ok = repeat("_ZN", "3aaa", 254, "Ev"); /* 1021 bytes */
    char *want = repeat("", "aaa::", 253, "aaa()");
    expect(ok, want);
    char *refused = repeat("_ZN", "3aaa", 255, "Ev"); /* 1025 bytes */
    expect(refused, NULL);
    free(ok);
    free(want);
    free(refused);
}

/* Itanium substitution number n: S_, S0_, S1_, … (base 36). */
static void subst(char *out, unsigned n)
{
    if (n == 0) {
        strcpy(out, "S_");
        return;
    }
    char d[16];
    int k = 0;
    n -= 1;
    do {
        d[k++] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[n % 36];
        n /= 36;
    } while (n);
    *out++ = 'S';
    while (k)
        *out++ = d[--k];
    strcpy(out, "_");
}

/* Rust v0 back-reference to position p: B<base 62 of p - 1>_ (B_ is 0). */
static void backref(char *out, unsigned p)
{
    *out++ = 'B';
    if (p) {
        char d[16];
        int k = 0;
        p -= 1;
        do {
            d[k++] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[p % 62];
            p /= 62;
        } while (p);
        while (k)
            *out++ = d[--k];
    }
    strcpy(out, "_");
}

/* f(A<int,int>, A<S,S>, A<A<S,S>,A<S,S>>, …): each level doubles the output. */
static char *cxx_doubling(int levels)
{
    char *s = malloc(64 + (size_t)levels * 32), sub[16];
    strcpy(s, "_Z1f1AIiiE");
    for (int k = 1; k <= levels; k++) {
        subst(sub, 2 * (unsigned)k - 1); /* the last A<…> */
        strcat(s, "1AI");
        strcat(s, sub);
        strcat(s, sub);
        strcat(s, "E");
    }
    return s;
}

/* a::f::<T0, (T0, T0), ((T0, T0), (T0, T0)), …>, T0 a tuple of leaf. */
static char *rust_doubling(int levels, const char *leaf)
{
    char *s = malloc(64 + strlen(leaf) * 2 + (size_t)levels * 32), ref[16];
    strcpy(s, "INvC1a1fT");
    strcat(s, leaf);
    strcat(s, leaf);
    strcat(s, "E");
    unsigned prev = (unsigned)strlen("INvC1a1f");
    for (int k = 0; k < levels; k++) {
        unsigned at = (unsigned)strlen(s);
        backref(ref, prev);
        strcat(s, "T");
        strcat(s, ref);
        strcat(s, ref);
        strcat(s, "E");
        prev = at;
    }
    memmove(s + 2, s, strlen(s) + 1);
    memcpy(s, "_R", 2);
    strcat(s, "E");
    return s;
}

/* A few hundred bytes whose nested substitutions would print gigabytes for
 * minutes through cplus_demangle (24 levels: 570 MB, 4.5 s) stay as they
 * are, at once; small ones still match cplus_demangle. Under ASan the
 * longjmp out of libiberty must leak nothing, punycode printing included. */
TEST(demangle_stops_exponential_expansion)
{
    for (int levels = 3; levels <= 60; levels += levels < 12 ? 1 : 16) {
        char *names[3] = {cxx_doubling(levels), rust_doubling(levels, "l"),
                          rust_doubling(levels, "NvC1au8gdel_5qa")};
        for (int k = 0; k < 3; k++) {
            char *got = symd_demangle(names[k]);
            if (levels <= 6) {
                char *o = oracle(names[k]);
                CHECK(got && o && strcmp(got, o) == 0, "%s: %.100s vs %.100s", names[k],
                      got ? got : "(as is)", o ? o : "(null)");
                free(o);
            } else if (levels >= 12) {
                CHECK(!got, "%d levels: %zu bytes demangled", levels, got ? strlen(got) : 0);
            }
            CHECK(!got || strlen(got) <= SYMD_DEMANGLE_MAX_OUT, "output over the cap");
            free(got);
            free(names[k]);
        }
    }
}

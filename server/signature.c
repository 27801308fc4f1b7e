/* Signatures: the group key of a symbolicated report (signature.h). */
#include "signature.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../demangle/demangle.h"
#include "../util/hex.h"
#include "symbolicate.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define SIGNATURE_LINE_MAX 200 /* bytes of a panic string's first line */

/* ---- crash machinery ----
 *
 * Functions through which a crash is raised rather than where it comes
 * from: the process ending itself, exceptions thrown and rethrown,
 * assertions and traps. A signature never names one when the thread has
 * another frame to name. Matched on the function's base name (see
 * base_name: no parameters, closures of it included, Objective-C
 * categories dropped). Keep the README's list ("How crashes are grouped")
 * in step with this one. */
static const char *const machinery[] = {
    /* the process ending itself */
    "abort", "__abort", "abort_message", "raise", "__pthread_kill", "pthread_kill",
    "__abort_with_payload", "abort_with_payload", "abort_with_payload_wrapper_internal",
    "abort_with_reason", "_os_crash", "_os_crash_msg", "_os_crash_fallback",
    "__assert_rtn", "__assert", "__stack_chk_fail", "__chk_fail", "__chk_fail_overflow",
    "__chk_fail_overlap",
    /* allocator and lock corruption checks, which abort */
    "malloc_vreport", "malloc_report", "malloc_zone_error", "szone_error",
    "free_list_checksum_botch", "_os_unfair_lock_corruption_abort",
    "_os_unfair_lock_recursive_abort", "_os_unfair_lock_unowned_abort",
    /* Objective-C exceptions and Foundation's assertions */
    "objc_exception_throw", "objc_exception_rethrow", "_objc_terminate", "objc_terminate",
    "__exceptionPreprocess", "_CFThrowFormattedException", "+[NSException raise:format:]",
    "+[NSException raise:format:arguments:]", "-[NSException raise]",
    "-[NSAssertionHandler handleFailureInMethod:object:file:lineNumber:description:]",
    "-[NSAssertionHandler handleFailureInFunction:file:lineNumber:description:]",
    /* an unrecognized selector raising */
    "-[NSObject doesNotRecognizeSelector:]", "___forwarding___", "_CF_forwarding_prep_0",
    "__forwarding_prep_0___",
    /* C++ exceptions and termination */
    "__cxa_throw", "__cxa_rethrow", "__cxa_rethrow_primary_exception", "__cxa_bad_cast",
    "__cxa_bad_typeid", "__cxa_throw_bad_array_new_length", "std::terminate",
    "std::__terminate", "std::rethrow_exception", "std::__1::rethrow_exception",
    "default_terminate_handler", "demangling_terminate_handler",
    "demangling_unexpected_handler", "__cxxabiv1::failed_throw",
    "std::__1::__libcpp_verbose_abort", "std::__libcpp_verbose_abort", "__libcpp_verbose_abort",
    /* Swift's traps and runtime failures */
    "_assertionFailure", "assertionFailure", "_fatalErrorMessage", "fatalError",
    "preconditionFailure", "_preconditionFailure", "precondition", "_precondition", "assert",
    "_unimplementedInitializer", "swift_unexpectedError", "swift_willThrow",
    "swift_willThrowTypedImpl", "swift_errorInMain", "swift_deletedMethodError",
    "swift_dynamicCastFailure", "swift::swift_dynamicCastFailure", "swift::fatalError",
    "swift::fatalErrorv", "swift_reportError", "_swift_stdlib_reportFatalError",
    "_swift_stdlib_reportFatalErrorInFile", "_swift_stdlib_reportUnimplementedInitializer",
    "_swift_runtime_on_report",
};

/* Machinery by the start of its base name. */
static const char *const machinery_prefix[] = {
    "Swift runtime failure:", /* the inlined frame Swift's checks trap in */
    "__clang_trap_msg$",      /* clang's named traps (-fbounds-safety, libc++ hardening) */
    "swift_abort", "swift::swift_abort", /* retain overflow, unowned retain of a freed object */
    "std::__throw_", "std::__1::__throw_", /* libc++'s throw helpers (out_of_range...) */
};

/* Machinery when the frame below is the app's: messaging or releasing a
 * bad object crashes in these, on behalf of their caller. */
static const char *const before_app_prefix[] = {
    "objc_msgSend", "_objc_msgSend", "objc_msgLookup", "objc_retain", "objc_release",
    "swift_retain", "swift_release",
};

static bool starts(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static bool ends(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The name a machinery entry matches, into buf: a Swift closure's or
 * specialization's function ("closure #1 in _assertionFailure(...)" is
 * _assertionFailure's), an Objective-C method without its category, a
 * C, C++ or Swift function without its parameters and "[abi:...]" tags. */
static const char *base_name(const char *n, char *buf, size_t cap)
{
    static const char *const wrappers[] = {"closure #", "implicit closure #", "partial apply for ",
                                           "specialized ", "merged "};
    for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < sizeof wrappers / sizeof *wrappers; i++) {
            if (!starts(n, wrappers[i]))
                continue;
            const char *p = n + strlen(wrappers[i]);
            if (wrappers[i][strlen(wrappers[i]) - 1] == '#') { /* "closure #2 in " */
                while (is_digit(*p))
                    p++;
                if (!starts(p, " in "))
                    continue;
                p += 4;
            }
            n = p;
            again = true;
        }
    }
    size_t k = 0;
    if ((n[0] == '-' || n[0] == '+') && n[1] == '[') {
        bool in_cat = false;
        for (; *n && k + 1 < cap; n++) {
            if (*n == '(' && !in_cat)
                in_cat = true;
            else if (*n == ')' && in_cat)
                in_cat = false;
            else if (!in_cat)
                buf[k++] = *n;
        }
    } else {
        for (; *n && *n != '(' && k + 1 < cap; n++) {
            if (*n == '[' && starts(n, "[abi:")) {
                const char *close = strchr(n, ']');
                if (close) {
                    n = close;
                    continue;
                }
            }
            buf[k++] = *n;
        }
        while (k > 0 && buf[k - 1] == ' ')
            k--;
    }
    buf[k] = 0;
    return buf;
}

/* Contract in signature.h. */
sig_role sig_role_of(const char *name)
{
    if (!name)
        return SIG_CODE;
    /* libc++'s hardening traps name their inlined frame by the failed
     * assertion: ".../vector:1393: assertion __n < size() failed: ..." */
    const char *a = strstr(name, ": assertion ");
    if (a && strstr(a, " failed"))
        return SIG_MACHINERY;
    char buf[SIG_NAME_MAX + 1];
    const char *b = base_name(name, buf, sizeof buf);
    for (size_t i = 0; i < sizeof machinery / sizeof *machinery; i++)
        if (strcmp(b, machinery[i]) == 0)
            return SIG_MACHINERY;
    for (size_t i = 0; i < sizeof machinery_prefix / sizeof *machinery_prefix; i++)
        if (starts(b, machinery_prefix[i]))
            return SIG_MACHINERY;
    for (size_t i = 0; i < sizeof before_app_prefix / sizeof *before_app_prefix; i++)
        if (starts(b, before_app_prefix[i]))
            return SIG_MACHINERY_BEFORE_APP;
    return SIG_CODE;
}

/* ---- function names ---- */

/* Whether [s, s + n) is a number as devices write addresses and offsets:
 * "0x" and hex digits, or decimal digits. */
static bool is_number(const char *s, size_t n)
{
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        for (size_t i = 2; i < n; i++)
            if (hex_digit(s[i]) < 0)
                return false;
        return true;
    }
    for (size_t i = 0; i < n; i++)
        if (!is_digit(s[i]))
            return false;
    return n > 0;
}

/* Drops a trailing " + 123" or " + 0x7b" from b (*n bytes). */
static bool drop_offset(const char *b, size_t *n)
{
    size_t e = *n, s = e;
    while (s > 0 && b[s - 1] != ' ')
        s--;
    if (s == e || !is_number(b + s, e - s))
        return false;
    if (s == 2 && b[0] == '+') { /* nothing but the offset */
        *n = 0;
        return true;
    }
    if (s < 3 || memcmp(b + s - 3, " + ", 3) != 0)
        return false;
    *n = s - 3;
    return true;
}

/* Drops a trailing " (File.swift:42)" or " (File.swift:42:7)" from b. */
static bool drop_file_line(const char *b, size_t *n)
{
    size_t e = *n;
    if (e < 5 || b[e - 1] != ')')
        return false;
    size_t open = e - 1;
    while (open > 0 && b[open - 1] != '(' && b[open - 1] != ')')
        open--;
    if (open < 2 || b[open - 1] != '(' || b[open - 2] != ' ')
        return false;
    /* after the file: ":line" or ":line:column", digits only */
    size_t q = e - 1, colons = 0;
    while (q > open && (is_digit(b[q - 1]) || b[q - 1] == ':')) {
        colons += b[q - 1] == ':';
        q--;
    }
    if (q == open || colons == 0 || colons > 2 || b[q] != ':' || !is_digit(b[e - 2]))
        return false;
    *n = open - 2;
    return true;
}

/* Removes every "+ 123 " a device wrote inside a name before a '(' (and
 * the blank before the '+'): "f+ 12 (x)" and "f + 12 (x)" are "f(x)". */
static void drop_inner_offsets(char *b, size_t *n)
{
    for (size_t i = 0; i + 4 < *n; i++) {
        if (b[i] != '+' || b[i + 1] != ' ' || !is_digit(b[i + 2]))
            continue;
        size_t j = i + 2;
        while (j < *n && is_digit(b[j]))
            j++;
        if (j + 1 >= *n || b[j] != ' ' || b[j + 1] != '(')
            continue;
        size_t from = i > 0 && b[i - 1] == ' ' ? i - 1 : i;
        memmove(b + from, b + j + 1, *n - (j + 1));
        *n -= j + 1 - from;
        i = from;
    }
}

/* Whether n looks mangled (C++ "_Z", Rust "_R", Swift "$s", "_T0"...,
 * with or without the Mach-O '_' a device may have kept). */
static bool looks_mangled(const char *n)
{
    const char *p = n[0] == '_' && (n[1] == '_' || n[1] == '$') ? n + 1 : n;
    return starts(p, "_Z") || starts(p, "_R") || p[0] == '$' || starts(p, "_T") ||
           starts(p, "__Z");
}

/* sig_function_name, demangling while *demangles (NULL: no bound) is
 * above 0 and counting it down: a hostile report of 100,000 mangled-looking
 * names costs a few demanglings, not 100,000. */
static char *function_name(const char *symbol, const char *image, int *demangles)
{
    if (!symbol)
        return NULL;
    size_t len = strcspn(symbol, "\r\n"); /* a trap message's first line */
    char *b = malloc(len + 1);
    if (!b)
        return NULL;
    size_t n = 0;
    bool gap = false;
    for (size_t i = 0; i < len; i++) {
        if (is_blank(symbol[i])) {
            gap = n > 0;
            continue;
        }
        if (gap)
            b[n++] = ' ';
        gap = false;
        b[n++] = symbol[i];
    }
    for (bool again = true; again;) {
        again = false;
        if (ends(b, n, " [inlined]")) {
            n -= 10;
            again = true;
        }
        again |= drop_file_line(b, &n);
        again |= drop_offset(b, &n);
    }
    drop_inner_offsets(b, &n);
    b[n] = 0;
    char *v = strstr(b, "$VARIANT$"); /* pthread_kill$VARIANT$mp */
    if (v && v > b)
        n = (size_t)(v - b);
    size_t d = n;
    while (d > 0 && is_digit(b[d - 1]))
        d--;
    if (d < n && ends(b, d, ".cold.") && d > 6) /* a function's cold part */
        n = d - 6;
    b[n] = 0;
    if (n && looks_mangled(b) && (!demangles || (*demangles)-- > 0)) {
        char *shown = symd_demangle(b);
        if (!shown && b[0] == '_')
            shown = symd_demangle(b + 1);
        if (shown) {
            /* the demangled name, itself made a function name (its blanks;
             * a name that is none), demangled no further */
            int none = 0;
            char *nb = function_name(shown, image, &none);
            (free)(shown); /* the demangler's own allocation */
            free(b);
            return nb;
        }
    }
    if (n > SIG_NAME_MAX) {
        n = SIG_NAME_MAX;
        while (n > 0 && ((unsigned char)b[n] & 0xc0) == 0x80)
            n--; /* never cut a UTF-8 character */
        b[n] = 0;
    }
    if (!n || strcmp(b, "???") == 0 || strcmp(b, "<redacted>") == 0 || is_number(b, n) ||
        (image && strcmp(b, image) == 0)) {
        free(b);
        return NULL;
    }
    return b;
}

/* Contract in signature.h. */
char *sig_function_name(const char *symbol, const char *image)
{
    return function_name(symbol, image, NULL);
}

/* ---- exception types ---- */

/* The length of the [A-Z0-9_] word at s. */
static size_t word_len(const char *s)
{
    size_t n = 0;
    while ((s[n] >= 'A' && s[n] <= 'Z') || is_digit(s[n]) || s[n] == '_')
        n++;
    return n;
}

/* Copies the word at s into dst (cap bytes) when it is a signal name. */
static void take_signal(const char *s, char *dst, size_t cap)
{
    size_t n = word_len(s);
    if (n > 3 && n < cap && starts(s, "SIG")) {
        memcpy(dst, s, n);
        dst[n] = 0;
    }
}

/* Contract in signature.h. */
bool sig_exception(const crash_report *r, char *buf, size_t cap)
{
    char exc[64] = "", sig[32] = "";
    const char *t = r->exception_type;
    if (t) {
        while (*t == ' ' || *t == '\t')
            t++;
        size_t n = word_len(t);
        if (n > 4 && n < sizeof exc && starts(t, "EXC_")) {
            memcpy(exc, t, n);
            exc[n] = 0;
        } else {
            take_signal(t, sig, sizeof sig);
        }
        const char *p = strchr(t, '(');
        if (p && !sig[0])
            take_signal(p + 1, sig, sizeof sig);
    }
    if (r->exception_signal) {
        char s2[32] = "";
        take_signal(r->exception_signal, s2, sizeof s2);
        if (s2[0])
            memcpy(sig, s2, sizeof sig);
    }
    if (exc[0] && sig[0])
        snprintf(buf, cap, "%s (%s)", exc, sig);
    else
        snprintf(buf, cap, "%s", exc[0] ? exc : sig);
    return buf[0] != 0;
}

/* ---- frames ---- */

/* A frame's name as symbolicated: its outer level's symbol (ours, or the
 * report's for an image we lack); NULL when none or "???". */
static const char *frame_name(const crash_symframe *sf)
{
    if (!sf->nlevels || !sf->levels)
        return NULL;
    const char *s = sf->levels[sf->nlevels - 1].symbol;
    return s && *s && strcmp(s, "???") != 0 ? s : NULL;
}

/* The report image a frame lies in: its own, else the one of the name the
 * answer gives; -1 when none. */
static long frame_image(const crash_report *r, const crash_frame *cf, const crash_symframe *sf)
{
    if (cf->image >= 0 && (size_t)cf->image < r->nimages)
        return cf->image;
    for (size_t i = 0; sf->image && i < r->nimages; i++)
        if (r->images[i].name && strcmp(r->images[i].name, sf->image) == 0)
            return (long)i;
    return -1;
}

/* Whether the frame is in one of the app's own images: an image that is
 * not the OS's (s->image_system: the report's word or an import's) and
 * that the report names or gives a UUID (an .ips "absolute" image at 0, a
 * frame at address 0, is nobody's). */
static bool app_frame(const crash_report *r, const crash_symbolication *s,
                      const crash_frame *cf, const crash_symframe *sf)
{
    if (cf->address == 0)
        return false;
    long i = frame_image(r, cf, sf);
    if (i < 0 || s->image_system[i])
        return false;
    const crash_image *im = &r->images[i];
    if (im->name && *im->name && strcmp(im->name, "???") != 0)
        return true;
    static const uint8_t zero[16];
    return im->has_uuid && memcmp(im->uuid, zero, 16) != 0;
}

/* Demanglings one signature may cost at most (function_name). */
#define SIG_DEMANGLES 64

/* The function name (sig_function_name) of a frame, demangling within
 * *demangles; NULL when none. */
static char *frame_function(const crash_report *r, const crash_frame *cf,
                            const crash_symframe *sf, int *demangles)
{
    const char *n = frame_name(sf);
    if (!n)
        return NULL;
    long i = frame_image(r, cf, sf);
    const char *img = cf->image_name ? cf->image_name : i >= 0 ? r->images[i].name : NULL;
    return function_name(n, img, demangles);
}

/* "image + 0xoffset" of a frame, for a signature when no frame has a name:
 * the image's name, else its UUID (stackshot images have none), else
 * "???"; the offset from the load address the frame line gives, else its
 * image's (a frame of an address list is placed by address). */
static char *frame_place(const crash_report *r, const crash_frame *cf, const crash_symframe *sf)
{
    long im = frame_image(r, cf, sf);
    const char *img = sf->image ? sf->image : cf->image_name ? cf->image_name : "???";
    char u[37], buf[320];
    if (!strcmp(img, "???") && im >= 0 && r->images[im].has_uuid) {
        uuid_format(r->images[im].uuid, u);
        img = u;
    }
    uint64_t base = cf->has_load ? cf->load_address : im >= 0 ? r->images[im].load_address : 0;
    /* without a PAC signature, which differs from report to report */
    const char *arch = im >= 0 ? r->images[im].arch : NULL;
    uint64_t pc = symbolicate_lookup_address(cf->address, arch);
    if (symbolicate_lookup_address(base, arch) == base && pc >= base)
        base = symbolicate_lookup_address(base, arch);
    else
        pc = cf->address;
    snprintf(buf, sizeof buf, "%.256s + 0x%llx", img, (unsigned long long)(pc - base));
    return strdup(buf);
}

/* The thread a crash-like signature reads: the crashed one; else, in a
 * multi-process report (a stackshot), the first thread with frames of the
 * process the report is about; else the first thread with frames; else
 * the first. */
static size_t signature_thread(const crash_report *r)
{
    if (r->crashed_thread >= 0 && (size_t)r->crashed_thread < r->nthreads)
        return (size_t)r->crashed_thread;
    for (size_t t = 0; r->process && t < r->nthreads; t++) {
        const crash_thread *th = &r->threads[t];
        if (th->nframes && th->process >= 0 && (size_t)th->process < r->nprocesses &&
            r->processes[th->process].name &&
            strcmp(r->processes[th->process].name, r->process) == 0)
            return t;
    }
    for (size_t t = 0; t < r->nthreads; t++)
        if (r->threads[t].nframes)
            return t;
    return 0;
}

static char *prefixed(const char *prefix, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--; /* never cut a UTF-8 character */
    }
    size_t pl = strlen(prefix);
    char *out = malloc(pl + n + 1);
    if (out) {
        memcpy(out, prefix, pl);
        memcpy(out + pl, s, n);
        out[pl + n] = 0;
    }
    return out;
}

/* The first line of s (blanks before it skipped), at most
 * SIGNATURE_LINE_MAX bytes, as a signature; NULL when it is empty. */
static char *first_line_of(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    size_t n = strcspn(s, "\r\n");
    if (!n)
        return NULL;
    char *line = strndup(s, n);
    char *sig = line ? prefixed("", line, SIGNATURE_LINE_MAX) : NULL;
    free(line);
    return sig;
}

/* ---- crashes ---- */

#define MAX_BLAMED 16
/* Frames of a blamed thread the rule reads at most: Apple writes 512 at
 * most; a deeper cause is as good as none, and a hostile report of 100,000
 * frames costs no more than that. */
#define SIG_THREAD_FRAMES 1024

/* Whether the report's signal, when it names one, is SIGABRT: the abort
 * that an uncaught exception ends in. */
static bool aborted(const crash_report *r)
{
    char exc[128];
    if (!sig_exception(r, exc, sizeof exc))
        return true;
    const char *sig = strstr(exc, "SIG");
    return !sig || starts(sig, "SIGABRT");
}

/* The threads a crash's signature reads, in order: each Last Exception
 * Backtrace and Application Specific Backtrace (an uncaught exception's
 * own backtrace: where it was thrown, the cause of the abort), then the
 * crashed thread (signature_thread); when the crash is no abort (a
 * SIGSEGV...), its own thread comes first: an exception backtrace does not
 * explain it. *n of them. */
static void blamed_threads(const crash_report *r, size_t *out, size_t *n)
{
    *n = 0;
    size_t c = signature_thread(r);
    bool crashed_first = !aborted(r) && c < r->nthreads;
    if (crashed_first)
        out[(*n)++] = c;
    for (int pass = 0; pass < 2; pass++)
        for (size_t t = 0; t < r->nthreads && *n + 1 < MAX_BLAMED; t++)
            if (t != c && r->threads[t].role ==
                              (pass == 0 ? CRASH_THREAD_LAST_EXCEPTION
                                         : CRASH_THREAD_APP_SPECIFIC))
                out[(*n)++] = t;
    if (!crashed_first && c < r->nthreads)
        out[(*n)++] = c;
}

/* Whether frame f of thread t is machinery here: always, or (objc_msgSend
 * and the like) when the frame below it is the app's. */
static bool skipped(const crash_report *r, const crash_symbolication *s, const size_t *first,
                    size_t t, size_t f, const char *name)
{
    sig_role role = sig_role_of(name);
    if (role != SIG_MACHINERY_BEFORE_APP)
        return role == SIG_MACHINERY;
    const crash_thread *th = &r->threads[t];
    return f + 1 < th->nframes &&
           app_frame(r, s, &th->frames[f + 1], &s->frames[first[t] + f + 1]);
}

/* The frame part of a crash's signature (see crash_symbolicate in
 * crashsym.h):
 *   1. the first frame of the app's own images that is not machinery, in
 *      the blamed threads in order: its function name, or, when nothing
 *      names it, its place "image + 0xoffset" (refiled under the name once
 *      an upload names it);
 *   2. no app frame: the first frame with a function name that is not
 *      machinery, in the same order;
 *   3. nothing named: the place of the crashed thread's first frame, else
 *      the first line of a stackshot's termination reason, else "no
 *      frames" ("no threads" for a report without any). */
static char *crash_frame_part(const crash_report *r, const crash_symbolication *s,
                              const size_t *first)
{
    if (!r->nthreads)
        return strdup("no threads");
    size_t blamed[MAX_BLAMED], nb;
    blamed_threads(r, blamed, &nb);
    int demangles = SIG_DEMANGLES;
    for (int pass = 1; pass <= 2; pass++)
        for (size_t i = 0; i < nb; i++) {
            size_t t = blamed[i];
            const crash_thread *th = &r->threads[t];
            for (size_t f = 0; f < th->nframes && f < SIG_THREAD_FRAMES; f++) {
                const crash_frame *cf = &th->frames[f];
                const crash_symframe *sf = &s->frames[first[t] + f];
                if (pass == 1 && !app_frame(r, s, cf, sf))
                    continue;
                char *n = frame_function(r, cf, sf, &demangles);
                if (n && skipped(r, s, first, t, f, n)) {
                    free(n);
                    continue;
                }
                if (n)
                    return n;
                if (pass == 1)
                    return frame_place(r, cf, sf);
            }
        }
    size_t crashed = signature_thread(r);
    const crash_thread *th = &r->threads[crashed];
    if (th->nframes)
        return frame_place(r, &th->frames[0], &s->frames[first[crashed]]);
    char *reason = r->termination ? first_line_of(r->termination) : NULL; /* a stackshot's */
    return reason ? reason : strdup("no frames");
}

/* A crash's signature: its frame part, then (crashes, fragments and
 * minidumps: the kinds a process's own exception ends) its exception type. */
static char *crash_signature(const crash_report *r, const crash_symbolication *s,
                             const size_t *first)
{
    char *part = crash_frame_part(r, s, first);
    char exc[128];
    if (!part ||
        (r->kind != CRASH_KIND_CRASH && r->kind != CRASH_KIND_FRAGMENT &&
         r->kind != CRASH_KIND_MINIDUMP) ||
        !sig_exception(r, exc, sizeof exc))
        return part;
    size_t pl = strlen(part), sl = strlen(SIG_EXCEPTION_SEP), el = strlen(exc);
    char *sig = malloc(pl + sl + el + 1);
    if (sig) {
        memcpy(sig, part, pl);
        memcpy(sig + pl, SIG_EXCEPTION_SEP, sl);
        memcpy(sig + pl + sl, exc, el + 1);
    }
    free(part);
    return sig;
}

/* ---- call trees, jetsam, panics ---- */

static bool frame_in_image(const crash_report *r, long img, const crash_frame *cf,
                           const crash_symframe *sf)
{
    if (img < 0)
        return false;
    if (cf->image >= 0)
        return cf->image == img;
    /* placed by address: the answer's image name */
    const char *n = r->images[img].name;
    return n && sf->image && strcmp(n, sf->image) == 0;
}

static bool frame_is_app(const crash_report *r, long app, const crash_frame *cf,
                         const crash_symframe *sf)
{
    if (cf->image >= 0 && (size_t)cf->image < r->nimages && r->images[cf->image].is_app)
        return true;
    return frame_in_image(r, app, cf, sf);
}

/* The index (over all frames) of the heaviest frame, app frames only when
 * app_only, named ones only when named: highest count, deepest on ties,
 * first in report order after that; total_frames when none. */
static size_t heaviest_frame(const crash_report *r, const crash_symbolication *s,
                             bool app_only, bool named)
{
    long app = crash_app_image(r);
    size_t best = r->total_frames, k = 0;
    uint64_t bc = 0;
    uint32_t bd = 0;
    for (size_t t = 0; t < r->nthreads; t++) {
        const crash_thread *th = &r->threads[t];
        for (size_t f = 0; f < th->nframes; f++, k++) {
            const crash_frame *cf = &th->frames[f];
            const crash_symframe *sf = &s->frames[k];
            if ((named && !frame_name(sf)) || (app_only && !frame_is_app(r, app, cf, sf)))
                continue;
            if (best == r->total_frames || cf->count > bc || (cf->count == bc && cf->depth > bd)) {
                best = k;
                bc = cf->count;
                bd = cf->depth;
            }
        }
    }
    return best;
}

/* The function name of frame k (over all frames). */
static char *function_at(const crash_report *r, const crash_symbolication *s,
                         const size_t *first, size_t k)
{
    size_t t = 0;
    while (t + 1 < r->nthreads && first[t + 1] <= k)
        t++;
    int demangles = SIG_DEMANGLES;
    return frame_function(r, &r->threads[t].frames[k - first[t]], &s->frames[k], &demangles);
}

/* The heaviest frame with a name (app frames only when app_only): highest
 * count, deepest on ties, first in report order after that; its function
 * name, NULL when none. */
static char *heaviest_name(const crash_report *r, const crash_symbolication *s,
                           const size_t *first, bool app_only)
{
    size_t k = heaviest_frame(r, s, app_only, true);
    return k < r->total_frames ? function_at(r, s, first, k) : NULL;
}

/* The first number after "rpages" in a jetsam process's detail, or 0. */
static uint64_t detail_rpages(const char *d)
{
    const char *p = d ? strstr(d, "rpages") : NULL;
    if (!p)
        return 0;
    p += 6;
    while (*p == ' ' || *p == ':' || *p == '=' || *p == '"')
        p++;
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9' && v < UINT64_MAX / 10; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    return v;
}

/* "reason" of a detail ("reason: highwater, ..."), copied into buf; NULL
 * when the detail names none. */
static const char *detail_reason(const char *d, char *buf, size_t cap)
{
    const char *p = d ? strstr(d, "reason") : NULL;
    if (!p)
        return NULL;
    p += 6;
    while (*p == ' ' || *p == ':' || *p == '=' || *p == '"')
        p++;
    size_t n = strcspn(p, ",;\"\n");
    while (n > 0 && p[n - 1] == ' ')
        n--;
    if (n == 0)
        return NULL;
    snprintf(buf, cap, "%.*s", (int)(n < cap - 1 ? n : cap - 1), p);
    return buf;
}

static char *jetsam_signature(const crash_report *r)
{
    if (r->process && *r->process)
        return prefixed("jetsam: ", r->process, 256);
    const crash_process *big = NULL;
    uint64_t most = 0;
    for (size_t i = 0; i < r->nprocesses; i++) {
        uint64_t p = detail_rpages(r->processes[i].detail);
        if (r->processes[i].name && p > most) {
            most = p;
            big = &r->processes[i];
        }
    }
    if (big)
        return prefixed("jetsam: ", big->name, 256);
    char buf[128];
    for (size_t i = 0; i < r->nprocesses; i++) {
        const char *why = detail_reason(r->processes[i].detail, buf, sizeof buf);
        if (why)
            return prefixed("jetsam: ", why, 256);
    }
    const char *why = r->termination ? r->termination : r->exception_type;
    return prefixed("jetsam: ", why ? why : "unknown", 256);
}

static char *panic_signature(const crash_report *r, const crash_symbolication *s,
                             const size_t *first)
{
    int demangles = SIG_DEMANGLES;
    for (int pass = 0; pass < 2; pass++)
        for (size_t t = 0; t < r->nthreads; t++) {
            /* kernel backtraces first; any thread when none is marked */
            if (pass == 0 && r->threads[t].role != CRASH_THREAD_KERNEL)
                continue;
            for (size_t f = 0; f < r->threads[t].nframes; f++) {
                char *n = frame_function(r, &r->threads[t].frames[f], &s->frames[first[t] + f],
                                         &demangles);
                if (n)
                    return n;
            }
        }
    char *line = r->panic_string ? first_line_of(r->panic_string) : NULL;
    return line ? line : crash_signature(r, s, first);
}

/* Contract in signature.h; the rule by kind in crashsym.h. */
char *sig_make(const crash_report *r, const crash_symbolication *s, const size_t *first)
{
    char *n;
    switch (r->kind) {
    case CRASH_KIND_SAMPLE:
    case CRASH_KIND_SPINDUMP:
    case CRASH_KIND_HANG:
    case CRASH_KIND_RESOURCE:
        if ((n = heaviest_name(r, s, first, true)) || (n = heaviest_name(r, s, first, false)))
            return n;
        /* nothing named: the heaviest app frame's place, when the app is known */
        size_t k = heaviest_frame(r, s, true, false);
        if (k < r->total_frames) {
            size_t t = 0;
            while (t + 1 < r->nthreads && first[t + 1] <= k)
                t++;
            return frame_place(r, &r->threads[t].frames[k - first[t]], &s->frames[k]);
        }
        return crash_signature(r, s, first);
    case CRASH_KIND_JETSAM:
        return jetsam_signature(r);
    case CRASH_KIND_PANIC:
        return panic_signature(r, s, first);
    default:
        return crash_signature(r, s, first);
    }
}

/* ---- grouping rules ---- */

/* The image name of a frame: as symbolicated, else the frame line's, else
 * its report image's; NULL when none. */
static const char *frame_image_name(const crash_report *r, const crash_frame *cf,
                                    const crash_symframe *sf)
{
    if (sf->image && *sf->image)
        return sf->image;
    if (cf->image_name && *cf->image_name)
        return cf->image_name;
    long i = frame_image(r, cf, sf);
    return i >= 0 ? r->images[i].name : NULL;
}

/* Contract in signature.h. */
symd_status sig_apply_rules(const crash_report *r, const crash_symbolication *s,
                            const size_t *first, const grouping_rules *g, char **sig,
                            char **rule, symd_err *err)
{
    *rule = NULL;
    if (!grouping_count(g))
        return SYMD_OK;
    /* the app frames and the top frame of the threads the signature reads
     * (exception backtraces, the crashed thread), GROUPING_FRAMES of each */
    enum { MAX_FACTS = MAX_BLAMED * GROUPING_FRAMES };
    char **owned = malloc(MAX_FACTS * sizeof *owned);
    const char **funcs = malloc(MAX_FACTS * sizeof *funcs);
    const char **imgs = malloc(MAX_FACTS * sizeof *imgs);
    if (!owned || !funcs || !imgs) {
        free(owned);
        free(funcs);
        free(imgs);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    size_t nf = 0, ni = 0, no = 0;
    const char *top_function = NULL, *top_image = NULL;
    int demangles = SIG_DEMANGLES;
    size_t blamed[MAX_BLAMED], nb = 0;
    if (r->nthreads)
        blamed_threads(r, blamed, &nb);
    size_t crashed = r->nthreads ? signature_thread(r) : 0;
    for (size_t i = 0; i < nb; i++) {
        size_t t = blamed[i];
        const crash_thread *th = &r->threads[t];
        for (size_t f = 0; f < th->nframes && f < GROUPING_FRAMES; f++) {
            const crash_frame *cf = &th->frames[f];
            const crash_symframe *sf = &s->frames[first[t] + f];
            const char *img = frame_image_name(r, cf, sf);
            if (img)
                imgs[ni++] = img;
            if (f == 0 && t == crashed)
                top_image = img;
            bool app = app_frame(r, s, cf, sf);
            if (f > 0 && !app)
                continue;
            char *n = frame_function(r, cf, sf, &demangles);
            if (!n)
                continue;
            owned[no++] = n;
            funcs[nf++] = n;
            if (app && !top_function)
                top_function = n;
        }
    }
    if (!top_function && nf)
        top_function = funcs[0];
    char exc[128] = "";
    sig_exception(r, exc, sizeof exc);
    const char *message = r->app_specific && *r->app_specific ? r->app_specific
                          : r->termination && *r->termination ? r->termination
                                                              : r->panic_string;
    grouping_facts facts = {
        .kind = crash_kind_name(r->kind),
        .type = exc,
        .message = message,
        .functions = funcs,
        .nfunctions = nf,
        .images = imgs,
        .nimages = ni,
        .top_function = top_function,
        .top_image = top_image,
    };
    char *made = NULL;
    const char *text = NULL;
    symd_status rc = grouping_apply(g, &facts, *sig, &made, &text, err);
    for (size_t i = 0; i < no; i++)
        free(owned[i]);
    free(owned);
    free(funcs);
    free(imgs);
    if (rc != SYMD_OK || !made)
        return rc;
    char *copy = strdup(text);
    if (!copy) {
        free(made);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    free(*sig);
    *sig = made;
    *rule = copy;
    return SYMD_OK;
}

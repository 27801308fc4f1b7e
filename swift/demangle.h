/* Swift symbol names as Xcode shows them: a demangler for every Swift
 * mangling, written in C from Swift's docs/ABI/Mangling.rst. (buf, len) in,
 * no I/O, no global state; thread-safe. */
#ifndef SYMD_SWIFT_DEMANGLE_H
#define SYMD_SWIFT_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

#include "../util/dynbuf.h"

/* How a name is printed.
 *   SWIFT_STYLE_FULL: what `swift-demangle` prints
 *     ("static iOSCrashingTest.CrashClass.pleaseCrash() -> ()");
 *   SWIFT_STYLE_SIMPLIFIED: what `swift-demangle -simplified` prints, the
 *     form Xcode, atos and Apple's crash reports show ("specialized static
 *     CrashClass.pleaseCrash()", "closure #1 in ViewController.viewDidLoad()",
 *     "@objc static CrashingClass.crash()"). */
typedef enum { SWIFT_STYLE_FULL, SWIFT_STYLE_SIMPLIFIED } swift_style;

/* Bounds every demangling keeps, whatever the name (a hostile name costs at
 * most these, then prints unchanged). */
#define SWIFT_MAX_NAME 4096      /* bytes of mangled name taken at all */
#define SWIFT_MAX_DEPTH 1024     /* nesting of the parse and of the printer */
#define SWIFT_MAX_NODES 65536    /* nodes of one name's tree */
#define SWIFT_MAX_SUBSTS 4096    /* substitutions one name may define */
#define SWIFT_MAX_OUT 16384      /* bytes of one printed name */

/* Whether s[0..n) begins like a Swift mangled name this demangler reads:
 * "$s" "_$s" "$S" "_$S" "$e" "_$e" "_T0" "_T" (Swift 3 and older, incl.
 * "_Tt" types), "@__swiftmacro_", Objective-C runtime names of Swift classes
 * and protocols ("_TtC…", "_TtP…"), and the async main entry point. A cheap
 * prefix test: true does not mean the name demangles. */
bool swift_is_mangled(const char *s, size_t n);

/* Demangles s[0..n) in style and appends the text to out (NUL-terminated).
 * Returns true when the name was read whole. Returns false, with out as it
 * was, when it is no Swift name, is malformed or unsupported, or passes a
 * bound above (or out's own limit): the caller shows the name unchanged.
 * Never partial output.
 *
 * Details:
 * - The text is byte for byte what Swift's swift-demangle prints (with
 *   -simplified for SWIFT_STYLE_SIMPLIFIED), including its quirks; where
 *   Swift's printer would give up or print a placeholder such as
 *   "<null node pointer>" or "<<too complex>>", this returns false instead.
 * - A leading "__" is read as "_", as swift-demangle does. Names holding
 *   control bytes (symbolic references: only meaningful inside a binary's
 *   metadata) or bytes that are not UTF-8 are refused; the text returned is
 *   always UTF-8.
 * - The async main entry point ("async_Main", which has no prefix) prints
 *   as "async_Main", e.g. "async function pointer to async_Main".
 * - Costs: one name takes at most a few milliseconds whatever it holds, no
 *   malloc for typical names (a 24 KB stack block, then heap blocks up to
 *   48 MB), and up to ~400 KB of stack for the deepest trees the bounds
 *   allow. */
bool swift_demangle(const char *s, size_t n, swift_style style, dynbuf *out);

/* Why swift_demangle_ex gave no text. The styles print different lengths
 * and leave out different parts, so a name may print in one style and not
 * in the other: near the output bound, or when all the simplified style
 * would show of it is nothing (a name that is only a suffix). */
typedef enum {
    SWIFT_WHY_OK,    /* it gave text */
    SWIFT_WHY_NAME,  /* no Swift name, malformed or unsupported */
    SWIFT_WHY_BOUND, /* a bound stopped it */
    SWIFT_WHY_EMPTY, /* the style prints nothing of it */
} swift_why;

/* As swift_demangle; *why (why may be NULL) says why there is no text. */
bool swift_demangle_ex(const char *s, size_t n, swift_style style, dynbuf *out, swift_why *why);

#endif

/* Display names of mangled symbols (C++, Rust, Swift), computed once per
 * upload. */
#ifndef SYMD_DEMANGLE_H
#define SYMD_DEMANGLE_H

#include <stdbool.h>

/* A raw name longer than this (bytes) is not handed to the demangler. */
#define SYMD_DEMANGLE_MAX_IN 4096
/* A display name longer than this (bytes) is given up: hostile names whose
 * substitutions nest can expand exponentially. */
#define SYMD_DEMANGLE_MAX_OUT 16384

/* The display name of a raw symbol name, as a malloc'ed string the caller
 * frees, or NULL when the raw name is to be shown as it is.
 *
 * The name arrives with Mach-O's one leading '_' already removed. Swift
 * names ("$s…", "_T0…", "$S…", "_T…", "$e…", see swift/demangle.h) get the
 * simplified form Xcode, atos and Apple's crash reports show
 * ("closure #1 in ViewController.viewDidLoad()"). C++ and Rust go through
 * libiberty with DMGL_PARAMS | DMGL_ANSI and its recursion limit on, in
 * the order cplus_demangle's DMGL_AUTO tries them:
 *   "_R…"   Rust v0;
 *   "_ZN…"  Rust legacy ("…17h<16 hex>E"; libiberty drops the ::h<hash>);
 *   "_Z…"   C++ (Itanium), when not Rust legacy;
 *   "___Z…_block_invoke[_N][.x]"  clang's block invocations, shown as
 *           llvm-symbolizer does: "invocation function for block in <f>".
 * NULL for everything else (Objective-C "-[C m]", plain C, "_GLOBAL__…",
 * as llvm-symbolizer leaves them), for names that fail to demangle, are
 * longer than SYMD_DEMANGLE_MAX_IN, would demangle to more than
 * SYMD_DEMANGLE_MAX_OUT bytes, to nothing or to themselves, and when
 * memory runs out. libiberty refuses C++ names over 1024 bytes with its
 * recursion limit on; those stay mangled.
 *
 * Thread-safe; needs a few hundred KiB of stack (libiberty's arrays and
 * recursion, both bounded by its limit). */
char *symd_demangle(const char *name);

/* The same, with Swift names in their full form (what swift-demangle
 * prints: module names, argument and result types, specialization
 * arguments); C++ and Rust as symd_demangle. */
char *symd_demangle_full(const char *name);

/* Whether a raw name is Swift's (its display name then depends on the
 * style asked for). */
bool symd_is_swift(const char *name);

#endif

/* Display names of mangled symbols (C++, Rust), computed once per upload. */
#ifndef SYMD_DEMANGLE_H
#define SYMD_DEMANGLE_H

/* A raw name longer than this (bytes) is not handed to the demangler. */
#define SYMD_DEMANGLE_MAX_IN 4096
/* A display name longer than this (bytes) is given up: hostile names whose
 * substitutions nest can expand exponentially. */
#define SYMD_DEMANGLE_MAX_OUT 16384

/* The display name of a raw symbol name, as a malloc'ed string the caller
 * frees, or NULL when the raw name is to be shown as it is.
 *
 * The name arrives with Mach-O's one leading '_' already removed. Demangled,
 * by libiberty with DMGL_PARAMS | DMGL_ANSI and its recursion limit on, in
 * the order cplus_demangle's DMGL_AUTO tries them:
 *   "_R…"   Rust v0;
 *   "_ZN…"  Rust legacy ("…17h<16 hex>E"; libiberty drops the ::h<hash>);
 *   "_Z…"   C++ (Itanium), when not Rust legacy;
 *   "___Z…_block_invoke[_N][.x]"  clang's block invocations, shown as
 *           llvm-symbolizer does: "invocation function for block in <f>".
 * NULL for everything else (Objective-C "-[C m]", Swift "$s…", plain C,
 * "_GLOBAL__…", as llvm-symbolizer leaves them), for names that fail to
 * demangle, are longer than SYMD_DEMANGLE_MAX_IN, would demangle to more
 * than SYMD_DEMANGLE_MAX_OUT bytes, to nothing or to themselves, and when
 * memory runs out. libiberty refuses C++ names over 1024 bytes with its
 * recursion limit on; those stay mangled.
 *
 * Thread-safe; needs a few hundred KiB of stack (libiberty's arrays and
 * recursion, both bounded by its limit). */
char *symd_demangle(const char *name);

#endif

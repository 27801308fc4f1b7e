/* A report's signature: the key its group is filed under (groups are per
 * kind), made from a symbolicated report. The rule, its fallbacks and the
 * list of crash machinery it skips are in signature.c and the README
 * ("How crashes are grouped"). */
#ifndef SYMD_SIGNATURE_H
#define SYMD_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>

#include "crashsym.h"
#include "grouping.h"

/* Bytes of a function name in a signature at most (cut at a UTF-8
 * character's start): PostgreSQL indexes keys of up to about 2,700 bytes,
 * and no two functions worth telling apart share their first kilobyte. */
#define SIG_NAME_MAX 1024

/* Between a signature's frame and its exception type:
 * "-[Crasher doAbort] | EXC_CRASH (SIGABRT)". */
#define SIG_EXCEPTION_SEP " | "

/* The function name a signature uses for a frame's symbol as symd prints
 * it or as a device wrote it, or NULL when it names no function (malloc'ed,
 * the caller frees). Only the function is kept: its first line (a trap
 * message may run over several), blanks collapsed, then
 *   - a trailing " [inlined]", " (File.swift:42)" and " + 123" / " + 0x7b";
 *   - "+ 123 " a device wrote inside the name, before its parameters
 *     ("_assertionFailure+ 201624 (_:_:file:line:flags:)" is
 *     "_assertionFailure(_:_:file:line:flags:)", as symd prints it);
 *   - a ".cold.N" part of a function and a "$VARIANT$..." suffix;
 *   - a mangled C++, Rust or Swift name is demangled (Swift in the
 *     simplified form, as everywhere in signatures);
 * and cut at SIG_NAME_MAX bytes. No name: NULL, "", "???", "<redacted>", a
 * number or address ("0x00020d58"), or the name of the frame's own image
 * (image, may be NULL: old macOS reports write "assetsd + 144518" for a
 * frame they could not name). */
char *sig_function_name(const char *symbol, const char *image);

/* What a function is to the rule (see machinery[] in signature.c). */
typedef enum {
    SIG_CODE,                 /* anything else */
    SIG_MACHINERY,            /* how a crash is raised: abort, throw, assert, traps */
    SIG_MACHINERY_BEFORE_APP, /* objc_msgSend and the retain/release calls: machinery
                                 when the frame below it is the app's */
} sig_role;

/* The role of a name sig_function_name gave. */
sig_role sig_role_of(const char *name);

/* The report's exception type as signatures write it, into buf (cap
 * bytes): the Mach exception ("EXC_BAD_ACCESS", the first word of the
 * report's type when it starts with "EXC_") and the signal ("SIGSEGV": the
 * report's signal, else the type's own "(SIG...)" or a type that is a
 * signal), as "EXC_BAD_ACCESS (SIGSEGV)", "EXC_GUARD" or "SIGSEGV", so
 * that an .ips ("EXC_CRASH" + signal "SIGABRT"), its .crash ("EXC_CRASH
 * (SIGABRT)") and a MetricKit diagnostic ("EXC_BAD_ACCESS (1)" + SIGSEGV)
 * agree. false (buf "") when the report names neither ("0 (0)"). */
bool sig_exception(const crash_report *r, char *buf, size_t cap);

/* The signature of r as s symbolicated it (crash_symbolicate's rule);
 * first[t] is the index in s->frames of thread t's first frame. Malloc'ed;
 * NULL when out of memory. */
char *sig_make(const crash_report *r, const crash_symbolication *s, const size_t *first);

/* The grouping rules g applied to r (grouping.h: the first rule that
 * matches): when one does, *sig (sig_make's, malloc'ed) is replaced by the
 * signature it makes and *rule is its text (malloc'ed); otherwise both stay
 * as they are (*rule NULL). The function and image matchers read the
 * threads sig_make reads (exception backtraces, the crashed thread): their
 * app frames and top frames within GROUPING_FRAMES each; {{ image }} is the
 * crashed thread's top frame's; the message is the report's Application Specific
 * Information, else its termination reason, else its panic string.
 * SYMD_E_NOMEM only. */
symd_status sig_apply_rules(const crash_report *r, const crash_symbolication *s,
                            const size_t *first, const grouping_rules *g, char **sig,
                            char **rule, symd_err *err);

#endif

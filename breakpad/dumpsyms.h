/* symd dump-syms: a Breakpad .sym written for one Mach-O slice and its
 * dSYM, from the readers symd already has (macho/ for the symbol table,
 * dsym/ for DWARF functions, line tables and inlined calls, through the
 * line index they build): MODULE, INFO CODE_ID, FILE, INLINE_ORIGIN, FUNC
 * with its INLINE and line records, PUBLIC for symbols no FUNC covers, and
 * STACK CFI from a hook (no unwind-table reader is wired in yet: without a
 * hook, no STACK CFI records). */
#ifndef SYMD_BREAKPAD_DUMPSYMS_H
#define SYMD_BREAKPAD_DUMPSYMS_H

#include <stdio.h>

#include "../macho/macho.h"
#include "../util/err.h"
#include "cfi.h"

/* Fills *out (bp_cfi_free'd by the caller) with the slice's unwind rows,
 * module-relative (vmaddr - text_vmaddr), entries ascending and disjoint.
 * binary is the Mach-O slice (its __unwind_info, __eh_frame). */
typedef symd_status (*bp_dump_cfi_fn)(void *ctx, const macho_image *binary, bp_cfi *out,
                                      symd_err *err);

typedef struct {
    const char *arch;     /* the slice of a fat file; NULL: its only slice */
    const char *name;     /* the MODULE's name (the binary's file name) */
    bp_dump_cfi_fn cfi;   /* NULL: no STACK CFI records */
    void *cfi_ctx;
} bp_dump_opts;

typedef struct {
    size_t files, origins, funcs, lines, inlines, publics, cfi_entries, cfi_rows;
} bp_dump_stats;

/* Writes the .sym of the binary's slice (bin, bin_len) and of its dSYM's
 * DWARF file (dsym may be NULL: then the binary's own DWARF, if any) to out.
 * The dSYM's slice of the same arch must have the binary's UUID. Errors:
 * those of the Mach-O and DWARF readers, SYMD_E_INVALID (no slice of that
 * arch, a fat file without --arch, a dSYM of another UUID), SYMD_E_IO when
 * out fails. stats may be NULL. */
symd_status bp_dump_syms(const uint8_t *bin, size_t bin_len, const uint8_t *dsym,
                         size_t dsym_len, const bp_dump_opts *o, FILE *out,
                         bp_dump_stats *stats, symd_err *err);

/* Writes one row's rules as a STACK CFI record's tail (".cfa: $rsp 16 +
 * .ra: .cfa -8 + ^ ..."): the CFA when cfa_changed, then the rules given.
 * Unsupported rules are left out (they have no postfix form symd knows). */
void bp_cfi_write_rules(FILE *out, bp_cfi_arch arch, bool cfa_changed, uint16_t cfa_reg,
                        int32_t cfa_off, const bp_cfi_rule *rules, size_t n);

#endif

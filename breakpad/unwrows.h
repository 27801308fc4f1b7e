/* Breakpad STACK CFI rows and symd's general unwind rows (unwind/unwind.h),
 * each into the other, by the table of breakpad/README.md:
 *   - a .sym's rows (its "breakpad_cfi" blob) into an unwind table, so the
 *     stack walker unwinds a module whose binary the user does not have
 *     with its .sym (store.c converts once, when it loads the image);
 *   - a binary's rows (unwind_build_rows: __unwind_info, __eh_frame) into
 *     STACK CFI entries, for symd dump-syms (bp_dump_opts.cfi). */
#ifndef SYMD_BREAKPAD_UNWROWS_H
#define SYMD_BREAKPAD_UNWROWS_H

#include "../macho/macho.h"
#include "../unwind/unwind.h"
#include "cfi.h"

/* The unwind table (unwind.h layout, malloc'ed into *blob) of a validated
 * CFI blob: one row per STACK CFI row, from its address to the next row's
 * (or its entry's end); ".ra" becomes the arch's return-address column
 * (x86_64 16, arm64 30: a row's ".ra" wins over an "x30"/"$rip" rule of
 * the same row), rules for the stack pointer are left out (the CFA rule is
 * the caller's sp), a CFA that does not read (BP_REG_NONE) is
 * UNW_CFA_UNSUPPORTED. The arch is the blob's, or fallback when the blob
 * names none. A row with more rules than an unwind row holds is dropped
 * and counted in *dropped (may be NULL) and in the table's warnings.
 * *blob NULL (SYMD_OK) when there is no arch to unwind for.
 * SYMD_E_NOMEM, SYMD_E_TOO_LARGE. */
symd_status bp_cfi_to_unwind(const bp_cfi_blob *b, unw_arch fallback, uint8_t **blob,
                             size_t *len, size_t *dropped, symd_err *err);

/* STACK CFI entries (into *out, empty; bp_cfi_free'd by the caller) from
 * normalized unwind rows: a new entry (STACK CFI INIT) at each function
 * start of starts and wherever a row does not begin where the one before
 * ended; rows of one entry become its STACK CFI rows. The return-address
 * column becomes ".ra"; on arm64 a row without a rule for lr gets
 * ".ra: x30" (the return address is still in lr), as dump_syms writes it.
 * An unsupported CFA is BP_REG_NONE. SYMD_E_NOMEM. */
symd_status bp_cfi_from_unwind(unw_arch arch, const unw_rows *rows, const unw_starts *starts,
                               bp_cfi *out, symd_err *err);

/* A bp_dump_cfi_fn (dumpsyms.h): the binary's unwind rows, read by
 * unw_build_rows, as STACK CFI entries. ctx may be NULL or a
 * unw_build_stats to fill. */
symd_status bp_dump_cfi_unwind(void *ctx, const macho_image *binary, bp_cfi *out,
                               symd_err *err);

#endif

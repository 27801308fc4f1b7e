/* Reader of Apple's compact unwind table (__TEXT,__unwind_info) for x86_64
 * and arm64: the first-level index, regular and compressed second-level
 * pages, common and page-local encodings; personalities and LSDAs are
 * ignored. (buf, len) in, no I/O. */
#ifndef SYMD_UNWIND_COMPACT_H
#define SYMD_UNWIND_COMPACT_H

#include "unwind.h"

/* One function of the table: [start, end) as offsets from the image's
 * __TEXT vmaddr (the table's function offsets are relative to the mach
 * header, which starts __TEXT), and its 32-bit encoding. */
typedef struct {
    uint32_t start, end;
    uint32_t encoding;
} unw_compact_entry;

/* Reads every function entry of the table, in address order, into *out
 * (malloc'ed, the caller frees it). Checked before use: the header and its
 * arrays inside the section, first-level entries ascending with the last
 * one the end sentinel, each second-level page inside the section, its
 * entries ascending and inside its first-level range, every encoding index
 * in range. A damaged page is skipped with a warning naming its offset; a
 * damaged header or index is SYMD_E_CORRUPT (nothing read). Entries whose
 * encoding is 0 (no unwind information) are kept: they end the function
 * before them. SYMD_E_NOMEM, SYMD_E_UNSUPPORTED (a version other than 1). */
symd_status unw_compact_read(const uint8_t *sect, size_t len, unw_compact_entry **out,
                             size_t *n, unw_diag *diag, symd_err *err);

/* Reads n bytes at image-relative offset off of the image (the function's
 * own code, for x86_64's indirect stack size); false when not mapped. */
typedef bool (*unw_text_fn)(void *ctx, uint64_t off, void *dst, size_t n);

/* What an encoding says. */
typedef enum {
    UNW_COMPACT_ROW = 0,   /* *row is the function's row */
    UNW_COMPACT_NONE = 1,  /* encoding 0: no unwind information */
    UNW_COMPACT_DWARF = 2, /* DWARF escape: *fde_off is the FDE's offset in __eh_frame */
    UNW_COMPACT_BAD = 3,   /* a mode or field the format does not define (a warning says) */
} unw_compact_kind;

/* Turns entry e into one row covering [e->start, e->end): the state after
 * the prologue, as the compact format describes it (valid at call sites).
 * x86_64: RBP frame (CFA = rbp+16, rbp at CFA-16, RA at CFA-8, up to five
 * registers saved below rbp), frameless with an immediate stack size or an
 * indirect one (the 32-bit immediate of the function's `sub rsp` read
 * through text), registers pushed per the permutation; arm64: frame
 * (CFA = fp+16, fp and lr at CFA-16/-8, register pairs below), frameless
 * (CFA = sp + size, RA still in lr). */
unw_compact_kind unw_compact_row(unw_arch arch, const unw_compact_entry *e, unw_text_fn text,
                                 void *text_ctx, unw_row *row, uint32_t *fde_off,
                                 unw_diag *diag);

#endif

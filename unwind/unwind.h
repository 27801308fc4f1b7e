/* Unwind rows: the one form every unwind-table reader (compact unwind,
 * __eh_frame, Breakpad STACK CFI) produces and the stack walker consumes,
 * and the stored blob that keeps them per image.
 *
 * A row says, for an address range of one image (offsets from its __TEXT
 * vmaddr), how to find the caller's frame from a frame whose pc lies in
 * that range: the CFA (canonical frame address: the caller's stack pointer)
 * as register + offset, and a rule per register for its value in the caller,
 * the return-address column included. Registers are DWARF numbers
 * (x86_64: rax 0 .. rbp 6, rsp 7, r8..r15 8..15, return address 16;
 * arm64: x0..x30 0..30 (fp 29, lr 30), sp 31, d8..d15 72..79). A register
 * without a rule in a row keeps its value if it is callee-saved; the CFA
 * rule implies sp = CFA, so no row carries a rule for sp.
 *
 * The return address is the rule of the arch's RA column (x86_64: 16,
 * arm64: 30, lr). On arm64 a row without a rule for lr means the return
 * address is still in lr (a frameless leaf, a prologue). */
#ifndef SYMD_UNWIND_H
#define SYMD_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../macho/macho.h"
#include "../util/err.h"

typedef enum { UNW_ARCH_NONE = 0, UNW_ARCH_X86_64 = 1, UNW_ARCH_ARM64 = 2 } unw_arch;

/* DWARF register numbers the walker and the compact decoder use. */
enum {
    UNW_X86_RBX = 3, UNW_X86_RBP = 6, UNW_X86_RSP = 7, UNW_X86_R12 = 12, UNW_X86_R13 = 13,
    UNW_X86_R14 = 14, UNW_X86_R15 = 15, UNW_X86_RA = 16,
    UNW_A64_X19 = 19, UNW_A64_FP = 29, UNW_A64_LR = 30, UNW_A64_SP = 31, UNW_A64_PC = 32,
    UNW_A64_D8 = 72,
};

/* Where a row came from. */
typedef enum {
    UNW_SRC_COMPACT = 1,  /* __TEXT,__unwind_info */
    UNW_SRC_EH_FRAME = 2, /* __TEXT,__eh_frame (directly or by a compact DWARF escape) */
    UNW_SRC_BREAKPAD = 3, /* a Breakpad .sym file's STACK CFI */
} unw_source;

typedef enum {
    UNW_CFA_REG_OFF = 0,     /* CFA = register cfa_reg + cfa_off */
    UNW_CFA_UNSUPPORTED = 1, /* a DWARF expression or a form symd does not evaluate */
} unw_cfa_kind;

typedef enum {
    UNW_RULE_UNDEFINED = 0,   /* the caller's value is lost (RA: outermost frame) */
    UNW_RULE_SAME = 1,        /* unchanged from this frame */
    UNW_RULE_AT_CFA = 2,      /* saved at memory [CFA + off] */
    UNW_RULE_VAL_CFA = 3,     /* the value CFA + off itself */
    UNW_RULE_REG = 4,         /* in register off of this frame */
    UNW_RULE_UNSUPPORTED = 5, /* a DWARF expression symd does not evaluate */
} unw_rule_kind;

typedef struct {
    uint16_t reg;  /* DWARF number */
    uint8_t kind;  /* unw_rule_kind */
    int32_t off;   /* AT_CFA / VAL_CFA: offset; REG: the register */
} unw_rule;

/* Rules one row may hold: every callee-saved register of arm64 (x19..x28,
 * fp, lr, d8..d15 = 20) fits with room; readers refuse rows needing more. */
#define UNW_MAX_RULES 24

typedef struct {
    uint32_t start, end; /* [start, end), offsets from the image's __TEXT vmaddr */
    uint8_t source;      /* unw_source */
    uint8_t cfa_kind;    /* unw_cfa_kind */
    uint16_t cfa_reg;
    int32_t cfa_off;
    uint8_t nrules;
    unw_rule rules[UNW_MAX_RULES]; /* ascending by reg, one per reg */
} unw_row;

/* The RA column of arch (16, 30), or -1 for an unknown arch. */
int unw_ra_column(unw_arch arch);
/* The arch of a Mach-O cputype (x86_64, arm64/arm64e), UNW_ARCH_NONE otherwise. */
unw_arch unw_arch_of_cputype(uint32_t cputype);
/* The rule for reg in row, NULL when it has none. */
const unw_rule *unw_row_rule(const unw_row *row, unsigned reg);
/* Sets (replaces) the rule for reg, keeping rules ascending; false when the
 * row is full. */
bool unw_row_set(unw_row *row, unsigned reg, unw_rule_kind kind, int32_t off);
/* The name of a DWARF register for messages and dumps ("rbx", "x19", "d8",
 * "r77" for one without a name); static storage per thread. */
const char *unw_reg_name(unw_arch arch, unsigned reg);
/* Writes row as one line, e.g. "0x1f0-0x220 eh_frame CFA=rsp+16 rbx=[CFA-16]
 * ra=[CFA-8]" (NUL-terminated, cut to cap). Rules in register order, the RA
 * column named ra. */
void unw_row_format(unw_arch arch, const unw_row *row, char *out, size_t cap);

/* Warnings a reader collects while it goes on: damaged parts are skipped,
 * not fatal, and each warning says where it was found. */
typedef struct {
    size_t count;
    char first[200]; /* the first warning */
} unw_diag;
void unw_warn(unw_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A growable array of rows. */
typedef struct {
    unw_row *v;
    size_t n, cap;
} unw_rows;
void unw_rows_free(unw_rows *r);
/* Appends a copy of row; false when out of memory or past UNW_MAX_ROWS. */
bool unw_rows_push(unw_rows *r, const unw_row *row);
/* Rows a single image may produce; more is a hostile table. */
#define UNW_MAX_ROWS (1u << 24)

/* ---- the stored table ----------------------------------------------------
 * Layout (little-endian), version 1:
 *   header "SUNW" u32 version, u32 arch, u32 nrows, u32 sets_len,
 *          u32 warnings, u64 reserved                        (32 bytes)
 *   rows   nrows x {u32 start, u32 end, u32 set}   ascending, not overlapping
 *   sets   sets_len bytes of rule sets, each
 *          {u8 source, u8 cfa_kind, u16 cfa_reg, i32 cfa_off, u8 nrules,
 *           u8 pad[3], nrules x {u16 reg, u8 kind, u8 pad, i32 off}}
 * A row's set is the byte offset of its rule set in sets; rows that unwind
 * alike share one set (most functions of a binary share a handful). */
#define UNW_TABLE_VERSION 1
#define UNW_TABLE_HEADER 32

/* A validated view of a stored table; points into the blob. */
typedef struct {
    const uint8_t *blob;
    size_t len;
    unw_arch arch;
    uint32_t nrows, sets_len, warnings;
} unw_table;

/* Serializes rows (sorted by start, not overlapping: unw_rows_normalize)
 * into a malloc'ed blob. SYMD_E_NOMEM, SYMD_E_INVALID (rows out of order,
 * unknown arch). */
symd_status unw_table_build(unw_arch arch, const unw_rows *rows, uint32_t warnings,
                            uint8_t **blob, size_t *len, symd_err *err);
/* Checks a stored blob (header, every row in order and in bounds, every
 * rule set well formed) before any lookup trusts it. SYMD_E_CORRUPT. */
symd_status unw_table_open(const uint8_t *blob, size_t len, unw_table *t, symd_err *err);
/* The row covering image-relative offset off; false when none does. */
bool unw_table_find(const unw_table *t, uint64_t off, unw_row *out);
/* Row i (0 <= i < nrows) in table order. */
void unw_table_row(const unw_table *t, uint32_t i, unw_row *out);

/* Sorts rows by start and resolves overlaps: a row starting inside the one
 * before it is dropped with a warning (the earlier table wins), and an
 * empty row (start >= end) is dropped. */
void unw_rows_normalize(unw_rows *rows, unw_diag *diag);

/* ---- building the rows of a Mach-O slice ---- */

/* What unw_build_image found. */
typedef struct {
    size_t compact_entries, compact_rows, dwarf_escapes, fdes, eh_rows;
    unw_diag diag;
} unw_build_stats;

/* Where each function's rows begin (image-relative, ascending): a compact
 * entry's start, an FDE's first row. */
typedef struct {
    uint32_t *v;
    size_t n, cap;
} unw_starts;

/* The rows unw_build_image serializes, before it does: normalized (sorted,
 * disjoint) into *rows (the caller frees them, on error too), and, when
 * starts is not NULL, where each function's rows begin (the caller frees
 * starts->v): rows alone cannot tell two adjacent functions apart, and a
 * writer of per-function records (dump-syms' STACK CFI INIT) needs to.
 * *arch is UNW_ARCH_NONE when the slice has neither table (or is a dSYM,
 * or another arch). Errors as unw_build_image's. */
symd_status unw_build_rows(const macho_image *img, unw_arch *arch, unw_rows *rows,
                           unw_starts *starts, unw_build_stats *stats, symd_err *err);

/* The rows of one parsed slice (macho/macho.h): every function of its
 * __unwind_info, the FDE a DWARF escape names, then every FDE of __eh_frame
 * covering code no compact entry covers. *blob NULL (and SYMD_OK) when the
 * slice has neither table (a dSYM, an object file without them) or an arch
 * other than x86_64/arm64. Damaged tables are warnings in stats, never an
 * error: the rest is kept. SYMD_E_NOMEM, SYMD_E_TOO_LARGE. */
symd_status unw_build_image(const macho_image *img, uint8_t **blob, size_t *len,
                            unw_build_stats *stats, symd_err *err);

#endif

/* Breakpad STACK CFI in structured form: the rules of each row resolved
 * (an INIT's rules with every later row's changes applied), and the compact
 * blob they are stored in beside an image's symbol index (image_data kind
 * "breakpad_cfi"), for a stack walker to read at request time.
 *
 * A row says, for the addresses it covers, how to find the caller's
 * registers: CFA = cfa_reg + cfa_off, then per register one rule:
 *   BP_RULE_AT_CFA   the caller's value is saved at [CFA + off]  (".cfa -16 + ^")
 *   BP_RULE_VAL_CFA  the caller's value is CFA + off             (".cfa 8 +")
 *   BP_RULE_SAME     unchanged                                    ("$rbx: $rbx")
 *   BP_RULE_REG      the value register `off` holds now           (".ra: x30")
 *   BP_RULE_UNSUPPORTED  an expression symd does not evaluate: the register
 *                    cannot be recovered from this row
 * Registers are DWARF numbers (x86_64: rax 0, rdx 1, rcx 2, rbx 3, rsi 4,
 * rdi 5, rbp 6, rsp 7, r8-r15 8-15, rip 16; arm64: x0-x30 0-30, sp 31,
 * pc 32), and BP_REG_RA for Breakpad's ".ra", the return address: the
 * caller's pc. So a row converts to a DWARF-style unwind row by mapping
 * BP_REG_RA to the arch's return-address column (x86_64 16, arm64 30) and
 * each kind to the DWARF rule of the same meaning (offset(N), val_offset(N),
 * same_value, register(R), and an expression that cannot be evaluated).
 * Addresses are module-relative: relative to the image's __TEXT vmaddr,
 * which is its load address minus its slide.
 *
 * Blob layout (little-endian), version 1:
 *   header  "BPCF" u32 version, u32 arch (BP_CFI_ARCH_*), u32 nentries,
 *           u32 nrows, u32 nrules, u32 reserved[2]                  (32 bytes)
 *   entries nentries x {u32 addr, u32 size, u32 row0, u32 nrows}
 *           ascending, disjoint; an entry's rows are row0 .. row0+nrows-1
 *   rows    nrows x {u32 addr, u16 cfa_reg, u16 nrules, i32 cfa_off,
 *           u32 rule0}; an entry's first row at its addr, then ascending
 *           inside it; a row holds until the next row or its entry's end
 *   rules   nrules x {u16 reg, u8 kind, u8 0, i32 off}, one per register
 *           of a row, by register number */
#ifndef SYMD_BREAKPAD_CFI_H
#define SYMD_BREAKPAD_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

#define BP_CFI_VERSION 1

typedef enum {
    BP_RULE_AT_CFA = 1,
    BP_RULE_VAL_CFA = 2,
    BP_RULE_SAME = 3,
    BP_RULE_REG = 4,
    BP_RULE_UNSUPPORTED = 5,
} bp_rule_kind;

#define BP_REG_RA 0xfffeu   /* ".ra": the return address */
#define BP_REG_NONE 0xffffu /* as cfa_reg: no CFA rule that reads; the row cannot be used */
#define BP_CFI_MAX_RULES 64 /* rules of one row (distinct registers) */

typedef enum { BP_CFI_ARCH_UNKNOWN = 0, BP_CFI_ARCH_X86_64 = 1, BP_CFI_ARCH_ARM64 = 2 } bp_cfi_arch;

typedef struct {
    uint16_t reg;  /* DWARF number or BP_REG_RA */
    uint8_t kind;  /* bp_rule_kind */
    int32_t off;   /* AT_CFA, VAL_CFA: from the CFA; REG: the register read */
} bp_cfi_rule;

typedef struct {
    uint32_t addr;     /* module-relative */
    uint16_t cfa_reg;  /* BP_REG_NONE: unknown */
    int32_t cfa_off;
    uint32_t rule0, nrules; /* into rules, by register number */
} bp_cfi_row;

typedef struct {
    uint32_t addr, size;
    uint32_t row0, nrows;
} bp_cfi_entry;

/* Rows in memory (what the .sym reader resolves, what the blob holds). */
typedef struct {
    bp_cfi_arch arch;
    bp_cfi_entry *entries; /* ascending, disjoint */
    size_t nentries;
    bp_cfi_row *rows;
    size_t nrows;
    bp_cfi_rule *rules;
    size_t nrules;
    /* private */
    size_t entries_cap, rows_cap, rules_cap;
} bp_cfi;

void bp_cfi_free(bp_cfi *c);

/* The DWARF register number of a Breakpad register name ("$rbp", "x29",
 * "sp", ".ra" gives BP_REG_RA), and the arch its spelling belongs to
 * ('$' names are x86_64's); false for a name symd does not know. */
bool bp_cfi_reg(const char *name, size_t n, uint16_t *reg, bp_cfi_arch *arch);
/* The Breakpad spelling of a register of arch ("$rbp", "x29", ".ra"); NULL
 * when it has none. */
const char *bp_cfi_reg_name(bp_cfi_arch arch, uint16_t reg);

/* Encodes c as a blob (malloc'ed, the caller's). SYMD_E_NOMEM,
 * SYMD_E_TOO_LARGE past 4 GiB. */
symd_status bp_cfi_encode(const bp_cfi *c, uint8_t **blob, size_t *len, symd_err *err);

/* A validated view of a blob; points into it. */
typedef struct {
    const uint8_t *blob;
    size_t len;
    uint32_t version, arch, nentries, nrows, nrules;
    const uint8_t *entries, *rows, *rules;
} bp_cfi_blob;

/* Checks every table of a blob (sizes, order, rows inside their entries,
 * rule ranges and kinds) before any lookup uses it. SYMD_E_CORRUPT. */
symd_status bp_cfi_open(const uint8_t *blob, size_t len, bp_cfi_blob *b, symd_err *err);

/* One row as a lookup answers it. */
typedef struct {
    uint32_t start, end;  /* the addresses the row covers */
    uint16_t cfa_reg;
    int32_t cfa_off;
    size_t nrules;
    bp_cfi_rule rules[BP_CFI_MAX_RULES];
} bp_cfi_lookup;

/* The row covering module-relative addr; false when no entry holds it. */
bool bp_cfi_find(const bp_cfi_blob *b, uint32_t addr, bp_cfi_lookup *out);

/* Entry i's rows (i < nentries) as the blob holds them: *nrows rows; row k
 * of them with bp_cfi_row_at. For walking every row (dump, tests). */
void bp_cfi_entry_at(const bp_cfi_blob *b, uint32_t i, uint32_t *addr, uint32_t *size,
                     uint32_t *nrows);
void bp_cfi_row_at(const bp_cfi_blob *b, uint32_t entry, uint32_t k, bp_cfi_lookup *out);

#endif

/* Breakpad symbol file (.sym) reader: (buf, len) in, no I/O, one line at a
 * time under a length bound, into arrays a caller indexes or converts.
 *
 * Records read (https://chromium.googlesource.com/breakpad/breakpad/+/HEAD/
 * docs/symbol_files.md describes the format):
 *   MODULE os arch debug_id name        (also mozilla's "MODULE Mac ...")
 *   INFO CODE_ID id [file] / INFO ...   (CODE_ID kept, the rest ignored)
 *   FILE id path
 *   INLINE_ORIGIN id name
 *   FUNC [m] addr size param_size name, then its line records
 *       addr size line file_id
 *   INLINE depth call_line [call_file] origin (addr size)+
 *   PUBLIC [m] addr param_size name
 *   STACK CFI INIT addr size rules / STACK CFI addr rules
 *   STACK WIN ...                        (Windows frame data: counted, ignored)
 *
 * What is wrong in a file is either fatal (no MODULE where one is required,
 * a MODULE with a bad debug id, a line past BP_SYM_MAX_LINE, a NUL byte:
 * SYMD_E_CORRUPT naming the line) or a warning with a deterministic
 * resolution (a record that does not read is skipped whole; FUNC records are
 * sorted by address, and where two overlap the earlier one ends where the
 * later begins; line and INLINE ranges are clipped to their FUNC; see
 * bp_warning_kind). A record is kept whole or not at all. */
#ifndef SYMD_BREAKPAD_SYM_H
#define SYMD_BREAKPAD_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "cfi.h"

/* The longest line read; a longer one is an error naming it. Real files'
 * longest lines are C++ template names of a few tens of KiB. */
#define BP_SYM_MAX_LINE ((size_t)1 << 20)
/* Inline nesting kept (deeper INLINE records are dropped with a warning):
 * the line index keeps this many levels too. */
#define BP_SYM_MAX_INLINE_DEPTH 64
/* Addresses are module-relative and, like the indexes they become, must
 * lie below 4 GiB with their ends. */
#define BP_SYM_MAX_ADDR UINT32_MAX

/* Kinds of warnings; each is counted with the first line it was seen on. */
typedef enum {
    BP_W_MALFORMED,      /* a record that does not read (fields missing or not
                            numbers): skipped */
    BP_W_UNKNOWN,        /* a line of no known record: skipped */
    BP_W_RANGE,          /* an address range past 4 GiB or empty, a FUNC of 2 GiB
                            or more: record skipped */
    BP_W_FUNC_ORDER,     /* FUNC records out of address order: sorted */
    BP_W_FUNC_SAME,      /* a FUNC at the address of an earlier one, not flagged
                            'm': the first in the file is kept */
    BP_W_FUNC_OVERLAP,   /* a FUNC runs into the next: it ends where that begins */
    BP_W_LINE_ORPHAN,    /* a line record before any FUNC: skipped */
    BP_W_LINE_OUTSIDE,   /* a line record (partly) outside its FUNC: clipped */
    BP_W_FILE_ID,        /* a line, INLINE or FILE naming an unknown or repeated id */
    BP_W_ORIGIN_ID,      /* an INLINE naming an unknown INLINE_ORIGIN, or one
                            defined twice */
    BP_W_INLINE_NEST,    /* INLINE ranges inside no INLINE of the depth above,
                            or nested deeper than 64: dropped */
    BP_W_INLINE_OUTSIDE, /* an INLINE range (partly) outside its FUNC: clipped */
    BP_W_CFI_ORPHAN,     /* a STACK CFI row before any INIT or outside its
                            INIT's range: skipped */
    BP_W_CFI_OVERLAP,    /* STACK CFI INIT ranges that overlap or come out of
                            order: sorted, the earlier one cut */
    BP_W_CFI_EXPR,       /* a CFI rule that is not register + offset, "at
                            CFA + offset", "= CFA + offset", "same" or another
                            register: kept as BP_RULE_UNSUPPORTED */
    BP_W_NAME,           /* a name that is not UTF-8: the bad bytes became '?' */
    BP_W_KINDS
} bp_warning_kind;

typedef struct {
    uint64_t count;
    uint64_t first_line; /* 1-based */
} bp_warning;

/* One FILE record. */
typedef struct {
    uint32_t id;
    uint32_t path; /* string offset */
    uint64_t src_line;
} bp_file;

/* One INLINE_ORIGIN record. */
typedef struct {
    uint32_t id;
    uint32_t name; /* string offset */
    uint64_t src_line;
} bp_origin;

typedef struct {
    uint32_t addr, size;
    uint32_t line;
    uint32_t file; /* index into files + 1, 0 = unknown id */
} bp_line;

/* One address range of an INLINE record. */
typedef struct {
    uint32_t addr, size;
} bp_range;

/* One inlined call, a node of its FUNC's inline tree. Files differ in how
 * they lay INLINE records out (Breakpad's dump_syms in preorder; mozilla's
 * merges the calls of one depth, call site and origin into one record with
 * the ranges of every instance), so the tree is rebuilt from addresses: an
 * INLINE range at depth d belongs to the depth d-1 call whose ranges hold
 * it. Ranges of one depth that overlap are cut (the lower start keeps the
 * shared bytes). */
typedef struct {
    uint32_t depth;      /* 0: inlined into the FUNC itself */
    uint32_t parent;     /* index into inlines; UINT32_MAX: the FUNC */
    uint32_t call_line;
    uint32_t call_file;  /* index into files + 1, 0 = unknown (or not given) */
    uint32_t origin;     /* index into origins + 1, 0 = unknown id */
    uint32_t range0, nranges; /* into ranges: sorted, disjoint, non-empty, inside
                                 the parent's */
    uint64_t src_line;   /* of the INLINE record */
} bp_inline;

typedef struct {
    uint32_t addr, size, param_size;
    bool multiple;       /* the 'm' flag: one of several names of this code */
    uint32_t name;       /* string offset */
    uint32_t line0, nlines;     /* into lines: sorted by address, disjoint */
    uint32_t inline0, ninlines; /* into inlines: the tree in preorder, siblings by
                                   address */
    uint64_t src_line;
} bp_func;

typedef struct {
    uint32_t addr, param_size;
    bool multiple;
    uint32_t name; /* string offset */
    uint64_t src_line;
} bp_public;

/* A parsed .sym. Strings are NUL-terminated in strings (bp_str). */
typedef struct {
    bool has_module;
    char os[32], arch[32];
    char debug_id[48];   /* as written (upper-cased) */
    uint8_t uuid[16];    /* the debug id's first 32 hex digits */
    uint32_t age;        /* the hex digits after them */
    uint32_t module_name; /* string offset */
    char code_id[80];    /* INFO CODE_ID, "" when none */

    bp_file *files;      /* sorted by id */
    size_t nfiles;
    bp_origin *origins;  /* sorted by id */
    size_t norigins;
    bp_func *funcs;      /* sorted by address, disjoint (overlaps cut) */
    size_t nfuncs;
    bp_line *lines;
    size_t nlines;
    bp_inline *inlines;
    size_t ninlines;
    bp_range *ranges;
    size_t nranges;
    bp_public *publics;  /* sorted by address; same address: file order */
    size_t npublics;
    bp_cfi cfi;          /* STACK CFI, resolved (cfi.h) */
    uint64_t stack_win;  /* STACK WIN records ignored */
    uint64_t nlines_read; /* lines in the file */

    bp_warning warn[BP_W_KINDS];
    char *strings;
    size_t strings_len, strings_cap;
    /* private */
    size_t files_cap, origins_cap, funcs_cap, lines_cap, inlines_cap, ranges_cap,
        publics_cap;
} bp_sym;

static inline const char *bp_str(const bp_sym *s, uint32_t off)
{
    return s->strings + off;
}

/* Whether buf looks like a Breakpad symbol file: its first line starts
 * with "MODULE " (an upload is recognized by content). */
bool bp_sym_detect(const uint8_t *buf, size_t len);

/* Parses buf. require_module: the first line must be a MODULE record (an
 * upload); without it a file of STACK CFI records alone reads too. On
 * error (SYMD_E_CORRUPT with the line number, SYMD_E_NOMEM, SYMD_E_TOO_LARGE
 * when more records than 2^32) out holds nothing to free. Warnings do not
 * fail the parse: see out->warn. */
symd_status bp_sym_parse(const uint8_t *buf, size_t len, bool require_module, bp_sym *out,
                         symd_err *err);
void bp_sym_free(bp_sym *s);

/* A warning kind as one sentence without its count, e.g. "FUNC records out
 * of address order (sorted)". */
const char *bp_warning_text(bp_warning_kind k);
/* Formats every warning present, "<text>: N, first at line L", into out
 * (at most max of them, in kind order); returns how many there are. */
size_t bp_sym_warnings(const bp_sym *s, char out[][160], size_t max);

/* The Mach-O arch name of a MODULE arch ("x86_64", "arm64", "arm64e"), or
 * NULL when symd does not store images of that arch. */
const char *bp_sym_arch(const char *module_arch);

#endif

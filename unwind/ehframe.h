/* Reader of __eh_frame: CIEs and FDEs (augmentations z, R, P, L, S, B;
 * pointer encodings absolute, pc-relative, data-relative and indirect) and
 * the evaluator of their CFA programs into unwind rows. (buf, len) in, no
 * I/O. */
#ifndef SYMD_UNWIND_EHFRAME_H
#define SYMD_UNWIND_EHFRAME_H

#include "unwind.h"

/* The section and the image around it. */
typedef struct {
    const uint8_t *sect;
    size_t len;
    uint64_t sect_vmaddr; /* where the section is loaded: pc-relative pointers
                             are relative to it */
    uint64_t text_vmaddr; /* rows are offsets from this */
    unw_arch arch;
    /* Reads 8 bytes at an absolute vmaddr of the image, for indirect
     * pointers (DW_EH_PE_indirect); NULL: such pointers are refused. */
    bool (*read64)(void *ctx, uint64_t vmaddr, uint64_t *out);
    void *read_ctx;
} unw_eh;

/* A CIE as the FDEs that use it need it. */
typedef struct {
    size_t off;           /* of its length field in the section */
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_column;
    uint8_t fde_enc;      /* 'R' (absptr when absent) */
    bool has_z, signal;
    const uint8_t *insns; /* initial instructions */
    size_t insns_len;
} unw_cie;

/* An FDE: its range and its program. */
typedef struct {
    size_t off;     /* of its length field */
    size_t cie_off;
    uint64_t pc_begin, pc_end; /* absolute vmaddrs */
    const uint8_t *insns;
    size_t insns_len;
} unw_fde;

/* What a record is. */
typedef enum { UNW_EH_FDE = 0, UNW_EH_CIE = 1, UNW_EH_END = 2 /* a zero length */ } unw_eh_kind;

/* Reads the record at off: *kind says what it is, *next the offset of the
 * record after it (the terminator gives *next = len).
 * SYMD_E_CORRUPT with the record's offset when it is damaged; then *next is
 * still set when the length field could be read (so a caller can skip it),
 * else 0. */
symd_status unw_eh_record(const unw_eh *eh, size_t off, unw_eh_kind *kind, size_t *next,
                          symd_err *err);
/* Parses the CIE at off. SYMD_E_CORRUPT / SYMD_E_UNSUPPORTED (an augmentation
 * it cannot skip, a version other than 1, 3, 4). */
symd_status unw_eh_cie(const unw_eh *eh, size_t off, unw_cie *cie, symd_err *err);
/* Parses the FDE at off and its CIE. pc_end > pc_begin is checked. */
symd_status unw_eh_fde(const unw_eh *eh, size_t off, unw_fde *fde, unw_cie *cie,
                       symd_err *err);

/* Runs the CIE's initial instructions, then the FDE's program, appending one
 * row per address range where the rules hold ([pc_begin, pc_end) cut at each
 * location advance; image-relative). Protections: the location never moves
 * backwards nor past pc_end (DW_CFA_set_loc), the remember/restore stack is
 * at most 64 deep (restore on an empty stack is an error), at most
 * UNW_MAX_FDE_ROWS rows per FDE, registers above 127 refused. DWARF
 * expressions (def_cfa_expression, expression, val_expression) make the
 * CFA or register rule UNSUPPORTED with a warning. Errors
 * (SYMD_E_CORRUPT, with the FDE's offset and the op's) leave rows as they
 * were. */
#define UNW_MAX_FDE_ROWS 65536
symd_status unw_eh_rows(const unw_eh *eh, const unw_fde *fde, const unw_cie *cie,
                        unw_rows *rows, unw_diag *diag, symd_err *err);

#endif

/* __eh_frame reader: CIE/FDE records, pointer encodings, CFA programs. */
#include "ehframe.h"

#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"

/* DW_EH_PE_* pointer encodings. */
#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_APP 0x70
#define PE_INDIRECT 0x80
#define PE_ABSPTR 0x00
#define PE_ULEB 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10

/* DW_CFA_* operations. */
enum {
    CFA_advance_loc = 0x40, CFA_offset = 0x80, CFA_restore = 0xc0,
    CFA_nop = 0x00, CFA_set_loc = 0x01, CFA_advance_loc1 = 0x02, CFA_advance_loc2 = 0x03,
    CFA_advance_loc4 = 0x04, CFA_offset_extended = 0x05, CFA_restore_extended = 0x06,
    CFA_undefined = 0x07, CFA_same_value = 0x08, CFA_register = 0x09,
    CFA_remember_state = 0x0a, CFA_restore_state = 0x0b, CFA_def_cfa = 0x0c,
    CFA_def_cfa_register = 0x0d, CFA_def_cfa_offset = 0x0e, CFA_def_cfa_expression = 0x0f,
    CFA_expression = 0x10, CFA_offset_extended_sf = 0x11, CFA_def_cfa_sf = 0x12,
    CFA_def_cfa_offset_sf = 0x13, CFA_val_offset = 0x14, CFA_val_offset_sf = 0x15,
    CFA_val_expression = 0x16, CFA_GNU_window_save = 0x2d, CFA_GNU_args_size = 0x2e,
    CFA_GNU_negative_offset_extended = 0x2f,
};

/* Reads one encoded pointer at the cursor. Only the forms a Mach-O linker
 * writes get an application (absolute, pc-relative); the others are
 * refused. */
static bool read_encoded(const unw_eh *eh, cursor *c, uint8_t enc, bool apply, uint64_t *out)
{
    uint64_t field_addr = eh->sect_vmaddr + c->pos;
    uint64_t v = 0;
    switch (enc & PE_FORMAT) {
    case PE_ABSPTR:
    case PE_UDATA8: {
        uint64_t x;
        if (!cur_u64le(c, &x))
            return false;
        v = x;
        break;
    }
    case PE_SDATA8: {
        uint64_t x;
        if (!cur_u64le(c, &x))
            return false;
        v = x;
        break;
    }
    case PE_ULEB:
        if (!cur_uleb(c, &v))
            return false;
        break;
    case PE_SLEB: {
        int64_t x;
        if (!cur_sleb(c, &x))
            return false;
        v = (uint64_t)x;
        break;
    }
    case PE_UDATA2: {
        uint16_t x;
        if (!cur_u16le(c, &x))
            return false;
        v = x;
        break;
    }
    case PE_SDATA2: {
        uint16_t x;
        if (!cur_u16le(c, &x))
            return false;
        v = (uint64_t)(int64_t)(int16_t)x;
        break;
    }
    case PE_UDATA4: {
        uint32_t x;
        if (!cur_u32le(c, &x))
            return false;
        v = x;
        break;
    }
    case PE_SDATA4: {
        uint32_t x;
        if (!cur_u32le(c, &x))
            return false;
        v = (uint64_t)(int64_t)(int32_t)x;
        break;
    }
    default:
        return false;
    }
    if (!apply) /* a length (pc_range): the format only */
        return *out = v, true;
    switch (enc & PE_APP) {
    case 0:
        break;
    case PE_PCREL:
        v += field_addr; /* wraps like the hardware's address arithmetic */
        break;
    default: /* textrel, datarel, funcrel, aligned: no Mach-O linker writes them */
        return false;
    }
    if (enc & PE_INDIRECT) {
        if (!eh->read64 || !eh->read64(eh->read_ctx, v, &v))
            return false;
    }
    *out = v;
    return true;
}

/* The record at off: its body [*body, *end) after the length field(s). */
static symd_status record_bounds(const unw_eh *eh, size_t off, size_t *body, size_t *end,
                                 symd_err *err)
{
    cursor c = cur_make(eh->sect, eh->len);
    c.pos = off;
    uint32_t l32;
    if (off > eh->len || !cur_u32le(&c, &l32))
        return SYMD_CORRUPT(err, "__eh_frame: record at 0x%zx: length past the section end",
                            off);
    uint64_t l = l32;
    if (l32 == 0xffffffffu && !cur_u64le(&c, &l))
        return SYMD_CORRUPT(err, "__eh_frame: record at 0x%zx: 64-bit length past the section "
                            "end", off);
    if (l > cur_left(&c))
        return SYMD_CORRUPT(err, "__eh_frame: record at 0x%zx: length %llu runs past the "
                            "section end (%zu bytes)", off, (unsigned long long)l, eh->len);
    *body = c.pos;
    *end = c.pos + (size_t)l;
    return SYMD_OK;
}

symd_status unw_eh_record(const unw_eh *eh, size_t off, unw_eh_kind *kind, size_t *next,
                          symd_err *err)
{
    size_t body, end;
    *next = 0;
    symd_status st = record_bounds(eh, off, &body, &end, err);
    if (st != SYMD_OK)
        return st;
    *next = end;
    if (end == body) { /* the terminator */
        *next = eh->len;
        *kind = UNW_EH_END;
        return SYMD_OK;
    }
    if (end - body < 4)
        return SYMD_CORRUPT(err, "__eh_frame: record at 0x%zx: %zu bytes hold no CIE id", off,
                            end - body);
    *kind = ld_u32le(eh->sect + body) == 0 ? UNW_EH_CIE : UNW_EH_FDE;
    return SYMD_OK;
}

symd_status unw_eh_cie(const unw_eh *eh, size_t off, unw_cie *cie, symd_err *err)
{
    size_t body, end;
    symd_status st = record_bounds(eh, off, &body, &end, err);
    if (st != SYMD_OK)
        return st;
    memset(cie, 0, sizeof *cie);
    cie->off = off;
    cursor c = cur_make(eh->sect, end);
    c.pos = body;
    uint32_t id;
    uint8_t version;
    if (!cur_u32le(&c, &id) || id != 0)
        return SYMD_CORRUPT(err, "__eh_frame: record at 0x%zx is not a CIE", off);
    if (!cur_u8(&c, &version))
        return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: truncated", off);
    if (version != 1 && version != 3 && version != 4)
        return symd_fail(err, SYMD_E_UNSUPPORTED, "__eh_frame: CIE at 0x%zx: version %u", off,
                         version);
    const char *aug = (const char *)eh->sect + c.pos;
    size_t auglen = strnlen(aug, cur_left(&c));
    if (auglen == cur_left(&c))
        return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: augmentation string not "
                            "terminated", off);
    c.pos += auglen + 1;
    if (auglen >= 2 && aug[0] == 'e' && aug[1] == 'h') {
        uint64_t ehdata; /* GCC's old "eh" augmentation: a pointer to skip */
        if (!cur_u64le(&c, &ehdata))
            return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: truncated", off);
    }
    if (version == 4) { /* address size, segment selector size */
        uint8_t asz, ssz;
        if (!cur_u8(&c, &asz) || !cur_u8(&c, &ssz))
            return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: truncated", off);
    }
    if (!cur_uleb(&c, &cie->code_align) || !cur_sleb(&c, &cie->data_align))
        return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: truncated alignment factors", off);
    if (version == 1) {
        uint8_t ra;
        if (!cur_u8(&c, &ra))
            return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: truncated", off);
        cie->ra_column = ra;
    } else if (!cur_uleb(&c, &cie->ra_column)) {
        return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: truncated", off);
    }
    cie->fde_enc = PE_ABSPTR;
    if (aug[0] == 'z') {
        cie->has_z = true;
        uint64_t dlen;
        if (!cur_uleb(&c, &dlen) || dlen > cur_left(&c))
            return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: augmentation data past the "
                                "record", off);
        cursor d = cur_make(eh->sect, c.pos + (size_t)dlen);
        d.pos = c.pos;
        for (size_t i = 1; i < auglen; i++) {
            uint8_t enc;
            uint64_t ignored;
            switch (aug[i]) {
            case 'R':
                if (!cur_u8(&d, &cie->fde_enc))
                    return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: 'R' data truncated",
                                        off);
                break;
            case 'L': /* the LSDA's encoding: the FDE's LSDA is skipped by length */
                if (!cur_u8(&d, &enc))
                    return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: 'L' data truncated",
                                        off);
                break;
            case 'P': /* the personality: read to move past it, then ignored */
                if (!cur_u8(&d, &enc))
                    return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: 'P' data truncated",
                                        off);
                if (enc != PE_OMIT && !read_encoded(eh, &d, enc & 0x7f, false, &ignored))
                    return SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: personality pointer "
                                        "(encoding 0x%x) cannot be read", off, enc);
                break;
            case 'S':
                cie->signal = true;
                break;
            case 'B': /* arm64e: the return address is signed with key B */
                break;
            default:
                /* 'z' says how long the data is: an unknown letter after the
                 * known ones only hides what follows, so stop reading. */
                i = auglen;
                break;
            }
        }
        c.pos += (size_t)dlen;
    } else if (auglen > 0 && !(aug[0] == 'e' && aug[1] == 'h' && auglen == 2)) {
        return symd_fail(err, SYMD_E_UNSUPPORTED, "__eh_frame: CIE at 0x%zx: augmentation "
                         "\"%.16s\" without 'z' cannot be skipped", off, aug);
    }
    cie->insns = eh->sect + c.pos;
    cie->insns_len = end - c.pos;
    return SYMD_OK;
}

symd_status unw_eh_fde(const unw_eh *eh, size_t off, unw_fde *fde, unw_cie *cie,
                       symd_err *err)
{
    size_t body, end;
    symd_status st = record_bounds(eh, off, &body, &end, err);
    if (st != SYMD_OK)
        return st;
    memset(fde, 0, sizeof *fde);
    fde->off = off;
    cursor c = cur_make(eh->sect, end);
    c.pos = body;
    uint32_t cie_ptr;
    if (!cur_u32le(&c, &cie_ptr) || cie_ptr == 0)
        return SYMD_CORRUPT(err, "__eh_frame: record at 0x%zx is not an FDE", off);
    /* The CIE pointer counts back from the pointer field itself. */
    if (cie_ptr > body)
        return SYMD_CORRUPT(err, "__eh_frame: FDE at 0x%zx: CIE pointer 0x%x points before the "
                            "section", off, cie_ptr);
    fde->cie_off = body - cie_ptr;
    st = unw_eh_cie(eh, fde->cie_off, cie, err);
    if (st != SYMD_OK) {
        symd_err e2 = *err;
        symd_err_clear(err);
        return symd_fail_at(err, e2.kind, e2.src_file, e2.src_line,
                            "__eh_frame: FDE at 0x%zx: its CIE: %s", off, e2.msg);
    }
    uint64_t begin, range;
    if (!read_encoded(eh, &c, cie->fde_enc, true, &begin) ||
        !read_encoded(eh, &c, cie->fde_enc & PE_FORMAT, false, &range))
        return SYMD_CORRUPT(err, "__eh_frame: FDE at 0x%zx: pc range (encoding 0x%x) cannot "
                            "be read", off, cie->fde_enc);
    if (range == 0 || begin + range < begin)
        return SYMD_CORRUPT(err, "__eh_frame: FDE at 0x%zx: pc range 0x%llx+0x%llx is empty "
                            "or wraps", off, (unsigned long long)begin,
                            (unsigned long long)range);
    fde->pc_begin = begin;
    fde->pc_end = begin + range;
    if (cie->has_z) {
        uint64_t alen;
        if (!cur_uleb(&c, &alen) || !cur_skip(&c, (size_t)alen) || alen > SIZE_MAX)
            return SYMD_CORRUPT(err, "__eh_frame: FDE at 0x%zx: augmentation data past the "
                                "record", off);
    }
    fde->insns = eh->sect + c.pos;
    fde->insns_len = end - c.pos;
    return SYMD_OK;
}

/* ---- the CFA program evaluator ------------------------------------------ */

#define NREG 128
#define MAX_STACK 64
#define R_NONE 0xff /* no rule: a register the program never mentioned */

typedef struct {
    uint8_t kind; /* unw_rule_kind or R_NONE */
    int32_t off;
} rstate;

typedef struct {
    uint8_t cfa_kind;
    uint16_t cfa_reg;
    int32_t cfa_off;
    rstate r[NREG];
} cstate;

typedef struct {
    const unw_eh *eh;
    const unw_fde *fde;
    const unw_cie *cie;
    unw_diag *diag;
    cstate cur, init; /* init: after the CIE's instructions (DW_CFA_restore) */
    cstate *stack;
    int depth;
    uint64_t loc;
    unw_rows *rows;
    size_t nrows;
} vm;

static void state_init(cstate *s)
{
    memset(s, 0, sizeof *s);
    s->cfa_kind = UNW_CFA_UNSUPPORTED; /* until a def_cfa: no CFA */
    for (int i = 0; i < NREG; i++)
        s->r[i].kind = R_NONE;
}

/* off * data_align as an int32; false on overflow. */
static bool factored(const vm *m, int64_t off, int32_t *out)
{
    int64_t v;
    if (__builtin_mul_overflow(off, m->cie->data_align, &v) || v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

/* Emits the row [m->loc, to) with the current rules. */
static symd_status emit(vm *m, uint64_t to, symd_err *err)
{
    if (to <= m->loc)
        return SYMD_OK;
    if (++m->nrows > UNW_MAX_FDE_ROWS)
        return SYMD_CORRUPT(err, "__eh_frame: FDE at 0x%zx: more than %d rows", m->fde->off,
                            UNW_MAX_FDE_ROWS);
    uint64_t base = m->eh->text_vmaddr;
    if (m->loc < base || to - base > UINT32_MAX)
        return SYMD_CORRUPT(err, "__eh_frame: FDE at 0x%zx: address 0x%llx lies outside the "
                            "image", m->fde->off, (unsigned long long)m->loc);
    unw_row row;
    memset(&row, 0, sizeof row);
    row.start = (uint32_t)(m->loc - base);
    row.end = (uint32_t)(to - base);
    row.source = UNW_SRC_EH_FRAME;
    row.cfa_kind = m->cur.cfa_kind;
    row.cfa_reg = m->cur.cfa_reg;
    row.cfa_off = m->cur.cfa_off;
    for (int r = 0; r < NREG; r++) {
        if (m->cur.r[r].kind == R_NONE)
            continue;
        if (!unw_row_set(&row, (unsigned)r, m->cur.r[r].kind, m->cur.r[r].off))
            return SYMD_CORRUPT(err, "__eh_frame: FDE at 0x%zx: more than %d registers with "
                                "rules", m->fde->off, UNW_MAX_RULES);
    }
    if (!unw_rows_push(m->rows, &row))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    return SYMD_OK;
}

/* Moves the location to `to`, emitting the row that ends there. */
static symd_status advance(vm *m, uint64_t to, size_t at, symd_err *err)
{
    if (to < m->loc)
        return SYMD_CORRUPT(err, "__eh_frame: FDE at 0x%zx: op at +0x%zx moves the location "
                            "backwards (0x%llx to 0x%llx)", m->fde->off, at,
                            (unsigned long long)m->loc, (unsigned long long)to);
    if (to > m->fde->pc_end) {
        unw_warn(m->diag, "__eh_frame: FDE at 0x%zx: op at +0x%zx moves the location past the "
                 "FDE's end (0x%llx)", m->fde->off, at, (unsigned long long)m->fde->pc_end);
        to = m->fde->pc_end;
    }
    symd_status st = emit(m, to, err);
    m->loc = to;
    return st;
}

/* Runs one program (the CIE's initial instructions when in_cie). */
static symd_status run(vm *m, const uint8_t *p, size_t len, bool in_cie, symd_err *err)
{
    cursor c = cur_make(p, len);
    const char *where = in_cie ? "CIE" : "FDE";
    size_t rec = in_cie ? m->cie->off : m->fde->off;
    while (cur_left(&c) > 0) {
        size_t at = c.pos;
        uint8_t op;
        cur_u8(&c, &op);
        uint64_t reg = 0, u = 0, r2 = 0;
        int64_t s = 0;
        int32_t off;
        uint8_t hi = op & 0xc0, lo = op & 0x3f;
        bool ok = true;
        if (hi == CFA_advance_loc || (!hi && (op == CFA_advance_loc1 || op == CFA_advance_loc2 ||
                                               op == CFA_advance_loc4 || op == CFA_set_loc))) {
            uint64_t delta = lo, to;
            if (op == CFA_advance_loc1) {
                uint8_t d;
                ok = cur_u8(&c, &d), delta = d;
            } else if (op == CFA_advance_loc2) {
                uint16_t d;
                ok = cur_u16le(&c, &d), delta = d;
            } else if (op == CFA_advance_loc4) {
                uint32_t d;
                ok = cur_u32le(&c, &d), delta = d;
            }
            if (!ok)
                goto truncated;
            if (in_cie) {
                unw_warn(m->diag, "__eh_frame: CIE at 0x%zx: location op at +0x%zx in the "
                         "initial instructions ignored", rec, at);
                if (op == CFA_set_loc && !read_encoded(m->eh, &c, m->cie->fde_enc, true, &to))
                    goto truncated;
                continue;
            }
            if (op == CFA_set_loc) {
                if (!read_encoded(m->eh, &c, m->cie->fde_enc, true, &to))
                    goto truncated;
            } else {
                uint64_t step;
                if (__builtin_mul_overflow(delta, m->cie->code_align, &step) ||
                    __builtin_add_overflow(m->loc, step, &to))
                    return SYMD_CORRUPT(err, "__eh_frame: FDE at 0x%zx: advance at +0x%zx "
                                        "overflows", rec, at);
            }
            symd_status st = advance(m, to, at, err);
            if (st != SYMD_OK)
                return st;
            if (m->loc >= m->fde->pc_end)
                return SYMD_OK; /* nothing after the end can matter */
            continue;
        }
        if (hi == CFA_offset) {
            reg = lo;
            if (!cur_uleb(&c, &u))
                goto truncated;
            if (u > INT32_MAX || !factored(m, (int64_t)u, &off))
                goto bad_offset;
            goto set_at_cfa;
        }
        if (hi == CFA_restore) {
            reg = lo;
            goto restore;
        }
        switch (op) {
        case CFA_nop:
            continue;
        case CFA_offset_extended:
            if (!cur_uleb(&c, &reg) || !cur_uleb(&c, &u))
                goto truncated;
            if (u > INT32_MAX || !factored(m, (int64_t)u, &off))
                goto bad_offset;
            goto set_at_cfa;
        case CFA_offset_extended_sf:
            if (!cur_uleb(&c, &reg) || !cur_sleb(&c, &s))
                goto truncated;
            if (!factored(m, s, &off))
                goto bad_offset;
            goto set_at_cfa;
        case CFA_GNU_negative_offset_extended:
            if (!cur_uleb(&c, &reg) || !cur_uleb(&c, &u))
                goto truncated;
            if (u > INT32_MAX || !factored(m, -(int64_t)u, &off))
                goto bad_offset;
            goto set_at_cfa;
        case CFA_val_offset:
            if (!cur_uleb(&c, &reg) || !cur_uleb(&c, &u))
                goto truncated;
            if (u > INT32_MAX || !factored(m, (int64_t)u, &off))
                goto bad_offset;
            goto set_val_cfa;
        case CFA_val_offset_sf:
            if (!cur_uleb(&c, &reg) || !cur_sleb(&c, &s))
                goto truncated;
            if (!factored(m, s, &off))
                goto bad_offset;
            goto set_val_cfa;
        case CFA_restore_extended:
            if (!cur_uleb(&c, &reg))
                goto truncated;
            goto restore;
        case CFA_undefined:
        case CFA_same_value:
            if (!cur_uleb(&c, &reg))
                goto truncated;
            if (reg >= NREG)
                goto bad_reg;
            m->cur.r[reg].kind = op == CFA_undefined ? UNW_RULE_UNDEFINED : UNW_RULE_SAME;
            m->cur.r[reg].off = 0;
            continue;
        case CFA_register:
            if (!cur_uleb(&c, &reg) || !cur_uleb(&c, &r2))
                goto truncated;
            if (reg >= NREG || r2 >= NREG)
                goto bad_reg;
            m->cur.r[reg].kind = UNW_RULE_REG;
            m->cur.r[reg].off = (int32_t)r2;
            continue;
        case CFA_remember_state:
            if (m->depth >= MAX_STACK)
                return SYMD_CORRUPT(err, "__eh_frame: %s at 0x%zx: remember_state at +0x%zx "
                                    "nests deeper than %d", where, rec, at, MAX_STACK);
            if (!m->stack && !(m->stack = malloc(MAX_STACK * sizeof *m->stack)))
                return symd_fail(err, SYMD_E_NOMEM, "out of memory");
            m->stack[m->depth++] = m->cur;
            continue;
        case CFA_restore_state: {
            if (m->depth == 0)
                return SYMD_CORRUPT(err, "__eh_frame: %s at 0x%zx: restore_state at +0x%zx "
                                    "with nothing remembered", where, rec, at);
            /* The CFA rule comes back with the registers, as GCC's, libunwind's
             * and lldb's unwinders restore it (compilers rely on that). */
            m->cur = m->stack[--m->depth];
            continue;
        }
        case CFA_def_cfa:
            if (!cur_uleb(&c, &reg) || !cur_uleb(&c, &u))
                goto truncated;
            if (reg >= NREG)
                goto bad_reg;
            if (u > INT32_MAX)
                goto bad_offset;
            m->cur.cfa_kind = UNW_CFA_REG_OFF, m->cur.cfa_reg = (uint16_t)reg,
            m->cur.cfa_off = (int32_t)u;
            continue;
        case CFA_def_cfa_sf:
            if (!cur_uleb(&c, &reg) || !cur_sleb(&c, &s))
                goto truncated;
            if (reg >= NREG)
                goto bad_reg;
            if (!factored(m, s, &off))
                goto bad_offset;
            m->cur.cfa_kind = UNW_CFA_REG_OFF, m->cur.cfa_reg = (uint16_t)reg,
            m->cur.cfa_off = off;
            continue;
        case CFA_def_cfa_register:
            if (!cur_uleb(&c, &reg))
                goto truncated;
            if (reg >= NREG)
                goto bad_reg;
            if (m->cur.cfa_kind != UNW_CFA_REG_OFF) {
                unw_warn(m->diag, "__eh_frame: %s at 0x%zx: def_cfa_register at +0x%zx with no "
                         "register-based CFA", where, rec, at);
                m->cur.cfa_off = 0;
            }
            m->cur.cfa_kind = UNW_CFA_REG_OFF;
            m->cur.cfa_reg = (uint16_t)reg;
            continue;
        case CFA_def_cfa_offset:
            if (!cur_uleb(&c, &u))
                goto truncated;
            if (u > INT32_MAX)
                goto bad_offset;
            m->cur.cfa_off = (int32_t)u;
            continue;
        case CFA_def_cfa_offset_sf:
            if (!cur_sleb(&c, &s))
                goto truncated;
            if (!factored(m, s, &off))
                goto bad_offset;
            m->cur.cfa_off = off;
            continue;
        case CFA_def_cfa_expression:
        case CFA_expression:
        case CFA_val_expression: {
            if (op != CFA_def_cfa_expression && !cur_uleb(&c, &reg))
                goto truncated;
            if (!cur_uleb(&c, &u) || !cur_skip(&c, (size_t)u) || u > SIZE_MAX)
                goto truncated;
            /* Compilers for Apple platforms emit none; a walker would need a
             * DWARF stack machine over the crashed thread's memory. */
            unw_warn(m->diag, "__eh_frame: %s at 0x%zx: DWARF expression at +0x%zx not "
                     "evaluated", where, rec, at);
            if (op == CFA_def_cfa_expression) {
                m->cur.cfa_kind = UNW_CFA_UNSUPPORTED;
                m->cur.cfa_reg = 0, m->cur.cfa_off = 0;
            } else {
                if (reg >= NREG)
                    goto bad_reg;
                m->cur.r[reg].kind = UNW_RULE_UNSUPPORTED;
                m->cur.r[reg].off = 0;
            }
            continue;
        }
        case CFA_GNU_args_size:
            /* The outgoing argument area's size: matters for landing pads,
             * not for finding the caller. */
            if (!cur_uleb(&c, &u))
                goto truncated;
            continue;
        case CFA_GNU_window_save:
            /* AArch64: DW_CFA_AARCH64_negate_ra_state (lr is signed from
             * here on); the walker strips the signature, rules unchanged. */
            if (m->eh->arch != UNW_ARCH_ARM64)
                goto unknown;
            continue;
        default:
            goto unknown;
        }
    set_at_cfa:
        if (reg >= NREG)
            goto bad_reg;
        m->cur.r[reg].kind = UNW_RULE_AT_CFA;
        m->cur.r[reg].off = off;
        continue;
    set_val_cfa:
        if (reg >= NREG)
            goto bad_reg;
        m->cur.r[reg].kind = UNW_RULE_VAL_CFA;
        m->cur.r[reg].off = off;
        continue;
    restore:
        if (reg >= NREG)
            goto bad_reg;
        if (in_cie) {
            unw_warn(m->diag, "__eh_frame: CIE at 0x%zx: restore at +0x%zx in the initial "
                     "instructions", rec, at);
            m->cur.r[reg].kind = R_NONE;
        } else {
            m->cur.r[reg] = m->init.r[reg];
        }
        continue;
    truncated:
        return SYMD_CORRUPT(err, "__eh_frame: %s at 0x%zx: op 0x%02x at +0x%zx truncated",
                            where, rec, op, at);
    bad_offset:
        return SYMD_CORRUPT(err, "__eh_frame: %s at 0x%zx: op 0x%02x at +0x%zx: offset out of "
                            "range", where, rec, op, at);
    bad_reg:
        return SYMD_CORRUPT(err, "__eh_frame: %s at 0x%zx: op 0x%02x at +0x%zx names "
                            "register %llu", where, rec, op, at, (unsigned long long)reg);
    unknown:
        return SYMD_CORRUPT(err, "__eh_frame: %s at 0x%zx: unknown op 0x%02x at +0x%zx",
                            where, rec, op, at);
    }
    return SYMD_OK;
}

symd_status unw_eh_rows(const unw_eh *eh, const unw_fde *fde, const unw_cie *cie,
                        unw_rows *rows, unw_diag *diag, symd_err *err)
{
    vm *m = malloc(sizeof *m);
    if (!m)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    memset(m, 0, sizeof *m);
    m->eh = eh, m->fde = fde, m->cie = cie, m->diag = diag, m->rows = rows;
    m->loc = fde->pc_begin;
    state_init(&m->cur);
    size_t before = rows->n;
    symd_status st = SYMD_OK;
    if (cie->ra_column >= NREG)
        st = SYMD_CORRUPT(err, "__eh_frame: CIE at 0x%zx: return address column %llu", cie->off,
                          (unsigned long long)cie->ra_column);
    if (st == SYMD_OK)
        st = run(m, cie->insns, cie->insns_len, true, err);
    if (st == SYMD_OK && m->depth != 0) {
        unw_warn(diag, "__eh_frame: CIE at 0x%zx: initial instructions remember state they "
                 "never restore", cie->off);
        m->depth = 0;
    }
    m->init = m->cur;
    if (st == SYMD_OK)
        st = run(m, fde->insns, fde->insns_len, false, err);
    if (st == SYMD_OK && m->loc < fde->pc_end)
        st = emit(m, fde->pc_end, err);
    if (st != SYMD_OK)
        rows->n = before;
    free(m->stack);
    free(m);
    return st;
}

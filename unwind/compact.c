/* Compact unwind (__unwind_info) reader: table walk and encoding decoding. */
#include "compact.h"

#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"

#define SECOND_LEVEL_REGULAR 2
#define SECOND_LEVEL_COMPRESSED 3

/* Fields of an encoding shared by both archs. */
#define ENC_MODE_MASK 0x0f000000u

/* x86_64 modes and fields. */
#define X86_MODE_RBP_FRAME 0x01000000u
#define X86_MODE_STACK_IMMD 0x02000000u
#define X86_MODE_STACK_IND 0x03000000u
#define X86_MODE_DWARF 0x04000000u
#define X86_RBP_FRAME_REGISTERS 0x00007fffu
#define X86_RBP_FRAME_OFFSET 0x00ff0000u
#define X86_FRAMELESS_STACK_SIZE 0x00ff0000u
#define X86_FRAMELESS_STACK_ADJUST 0x0000e000u
#define X86_FRAMELESS_REG_COUNT 0x00001c00u
#define X86_FRAMELESS_REG_PERMUTATION 0x000003ffu
#define DWARF_SECTION_OFFSET 0x00ffffffu

/* arm64 modes and fields. */
#define A64_MODE_FRAMELESS 0x02000000u
#define A64_MODE_DWARF 0x03000000u
#define A64_MODE_FRAME 0x04000000u
#define A64_FRAMELESS_STACK_SIZE 0x00fff000u

static uint32_t field(uint32_t v, uint32_t mask)
{
    return (v & mask) >> __builtin_ctz(mask);
}

/* Appends one entry, growing the array. */
static bool push(unw_compact_entry **v, size_t *n, size_t *cap, uint32_t start,
                 uint32_t encoding)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        if (nc > UNW_MAX_ROWS)
            return false;
        unw_compact_entry *p = realloc(*v, nc * sizeof *p);
        if (!p)
            return false;
        *v = p;
        *cap = nc;
    }
    (*v)[*n].start = start;
    (*v)[*n].end = 0;
    (*v)[*n].encoding = encoding;
    (*n)++;
    return true;
}

/* Reads the second-level page at page_off for first-level range [lo, hi)
 * into the array. Returns false (with a warning, nothing added) when the
 * page is damaged. */
static bool read_page(const uint8_t *sect, size_t len, uint32_t page_off, uint32_t lo,
                      uint32_t hi, const uint8_t *common, uint32_t ncommon,
                      unw_compact_entry **v, size_t *n, size_t *cap, bool *nomem,
                      unw_diag *diag)
{
    size_t before = *n;
    if (!range_ok(page_off, 8, len)) {
        unw_warn(diag, "__unwind_info: second-level page at 0x%x lies past the section end",
                 page_off);
        return false;
    }
    const uint8_t *pg = sect + page_off;
    uint32_t kind = ld_u32le(pg);
    uint16_t entry_off = ld_u16le(pg + 4), count = ld_u16le(pg + 6);
    uint32_t prev = lo;
    if (kind == SECOND_LEVEL_REGULAR) {
        if (!range_ok((uint64_t)page_off + entry_off, (uint64_t)count * 8, len)) {
            unw_warn(diag, "__unwind_info: regular page at 0x%x: %u entries at +0x%x run past "
                     "the section end", page_off, count, entry_off);
            return false;
        }
        const uint8_t *e = pg + entry_off;
        for (uint32_t i = 0; i < count; i++) {
            uint32_t fn = ld_u32le(e + 8 * i), enc = ld_u32le(e + 8 * i + 4);
            if (fn < prev || fn >= hi) {
                unw_warn(diag, "__unwind_info: regular page at 0x%x: entry %u (function 0x%x) "
                         "out of order or outside 0x%x-0x%x", page_off, i, fn, lo, hi);
                *n = before;
                return false;
            }
            prev = fn;
            if (!push(v, n, cap, fn, enc)) {
                *nomem = true;
                return false;
            }
        }
        return true;
    }
    if (kind != SECOND_LEVEL_COMPRESSED) {
        unw_warn(diag, "__unwind_info: second-level page at 0x%x has unknown kind %u", page_off,
                 kind);
        return false;
    }
    if (!range_ok(page_off, 12, len)) {
        unw_warn(diag, "__unwind_info: compressed page at 0x%x: header past the section end",
                 page_off);
        return false;
    }
    uint16_t enc_off = ld_u16le(pg + 8), nenc = ld_u16le(pg + 10);
    if (!range_ok((uint64_t)page_off + entry_off, (uint64_t)count * 4, len) ||
        !range_ok((uint64_t)page_off + enc_off, (uint64_t)nenc * 4, len)) {
        unw_warn(diag, "__unwind_info: compressed page at 0x%x: entries or encodings run past "
                 "the section end", page_off);
        return false;
    }
    const uint8_t *e = pg + entry_off, *penc = pg + enc_off;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t w = ld_u32le(e + 4 * i);
        uint32_t idx = w >> 24;
        uint64_t fn = (uint64_t)lo + (w & 0x00ffffffu);
        uint32_t enc;
        if (idx < ncommon)
            enc = ld_u32le(common + 4 * idx);
        else if (idx - ncommon < nenc)
            enc = ld_u32le(penc + 4 * (idx - ncommon));
        else {
            unw_warn(diag, "__unwind_info: compressed page at 0x%x: entry %u uses encoding %u "
                     "of %u", page_off, i, idx, ncommon + nenc);
            *n = before;
            return false;
        }
        if (fn < prev || fn >= hi) {
            unw_warn(diag, "__unwind_info: compressed page at 0x%x: entry %u (function 0x%llx) "
                     "out of order or outside 0x%x-0x%x", page_off, i, (unsigned long long)fn,
                     lo, hi);
            *n = before;
            return false;
        }
        prev = (uint32_t)fn;
        if (!push(v, n, cap, (uint32_t)fn, enc)) {
            *nomem = true;
            return false;
        }
    }
    return true;
}

symd_status unw_compact_read(const uint8_t *sect, size_t len, unw_compact_entry **out,
                             size_t *n, unw_diag *diag, symd_err *err)
{
    *out = NULL;
    *n = 0;
    if (len < 28)
        return SYMD_CORRUPT(err, "__unwind_info: %zu bytes, shorter than its 28-byte header",
                            len);
    uint32_t version = ld_u32le(sect);
    if (version != 1)
        return symd_fail(err, SYMD_E_UNSUPPORTED, "__unwind_info: version %u (only 1 is known)",
                         version);
    uint32_t common_off = ld_u32le(sect + 4), ncommon = ld_u32le(sect + 8);
    uint32_t index_off = ld_u32le(sect + 20), nindex = ld_u32le(sect + 24);
    if (!range_ok(common_off, (uint64_t)ncommon * 4, len))
        return SYMD_CORRUPT(err, "__unwind_info: %u common encodings at 0x%x run past the "
                            "section end (%zu bytes)", ncommon, common_off, len);
    if (!range_ok(index_off, (uint64_t)nindex * 12, len))
        return SYMD_CORRUPT(err, "__unwind_info: %u index entries at 0x%x run past the section "
                            "end (%zu bytes)", nindex, index_off, len);
    if (nindex == 0)
        return SYMD_OK;
    const uint8_t *idx = sect + index_off;
    /* The first level: function offsets ascending, the last entry the
     * sentinel (end of the covered code, no page). */
    for (uint32_t i = 1; i < nindex; i++)
        if (ld_u32le(idx + 12 * i) < ld_u32le(idx + 12 * (i - 1)))
            return SYMD_CORRUPT(err, "__unwind_info: index entry %u (function 0x%x) comes "
                                "before entry %u (0x%x)", i, ld_u32le(idx + 12 * i), i - 1,
                                ld_u32le(idx + 12 * (i - 1)));
    unw_compact_entry *v = NULL;
    size_t cap = 0;
    bool nomem = false;
    for (uint32_t i = 0; i + 1 < nindex && !nomem; i++) {
        uint32_t lo = ld_u32le(idx + 12 * i), page = ld_u32le(idx + 12 * i + 4);
        uint32_t hi = ld_u32le(idx + 12 * (i + 1));
        if (page == 0 || lo == hi)
            continue; /* an empty range */
        size_t before = *n;
        if (!read_page(sect, len, page, lo, hi, sect + common_off, ncommon, &v, n, &cap, &nomem,
                       diag))
            *n = before;
    }
    if (nomem) {
        free(v);
        *n = 0;
        return symd_fail(err, SYMD_E_NOMEM, "__unwind_info: out of memory (or more than %u "
                         "entries)", UNW_MAX_ROWS);
    }
    /* Each function runs to the next entry; the last to the sentinel. */
    uint32_t sentinel = ld_u32le(idx + 12 * (nindex - 1));
    for (size_t i = 0; i < *n; i++)
        v[i].end = i + 1 < *n ? v[i + 1].start : sentinel;
    /* Pages skipped may leave a function running over a gap; drop entries
     * that end before they start (a sentinel below the last page). */
    size_t w = 0;
    for (size_t i = 0; i < *n; i++)
        if (v[i].end > v[i].start)
            v[w++] = v[i];
    *n = w;
    *out = v;
    return SYMD_OK;
}

/* x86_64 compact register numbers (1..6) to DWARF. */
static int x86_reg(uint32_t r)
{
    static const int map[7] = {-1, UNW_X86_RBX, UNW_X86_R12, UNW_X86_R13, UNW_X86_R14,
                               UNW_X86_R15, UNW_X86_RBP};
    return r < 7 ? map[r] : -1;
}

/* Decodes the frameless register permutation: count registers (1..6)
 * chosen from the six callee-saved ones, the order they were pushed in,
 * packed as a variable-base number (the first digit has 6 choices, the
 * next 5, ...). Fills regs with compact numbers 1..6; false when the
 * permutation names no valid order. */
static bool x86_permutation(uint32_t count, uint32_t perm, int regs[6])
{
    int digit[6] = {0};
    /* Each digit's base: with count registers, the i-th has (6 - i) choices
     * and the packing multiplies the bases of the digits after it. */
    switch (count) {
    case 6:
    case 5:
        digit[0] = (int)(perm / 120), perm -= (uint32_t)digit[0] * 120;
        digit[1] = (int)(perm / 24), perm -= (uint32_t)digit[1] * 24;
        digit[2] = (int)(perm / 6), perm -= (uint32_t)digit[2] * 6;
        digit[3] = (int)(perm / 2), perm -= (uint32_t)digit[3] * 2;
        digit[4] = (int)perm;
        break;
    case 4:
        digit[0] = (int)(perm / 60), perm -= (uint32_t)digit[0] * 60;
        digit[1] = (int)(perm / 12), perm -= (uint32_t)digit[1] * 12;
        digit[2] = (int)(perm / 3), perm -= (uint32_t)digit[2] * 3;
        digit[3] = (int)perm;
        break;
    case 3:
        digit[0] = (int)(perm / 20), perm -= (uint32_t)digit[0] * 20;
        digit[1] = (int)(perm / 4), perm -= (uint32_t)digit[1] * 4;
        digit[2] = (int)perm;
        break;
    case 2:
        digit[0] = (int)(perm / 5), perm -= (uint32_t)digit[0] * 5;
        digit[1] = (int)perm;
        break;
    case 1:
        digit[0] = (int)perm;
        break;
    default:
        return count == 0;
    }
    /* Digit i picks the digit[i]-th register not used yet. */
    bool used[7] = {false};
    for (uint32_t i = 0; i < count; i++) {
        int seen = 0, pick = -1;
        for (int r = 1; r <= 6; r++) {
            if (used[r])
                continue;
            if (seen == digit[i]) {
                pick = r;
                break;
            }
            seen++;
        }
        if (pick < 0)
            return false;
        used[pick] = true;
        regs[i] = pick;
    }
    return true;
}

static void row_init(unw_row *row, const unw_compact_entry *e, uint16_t cfa_reg, int32_t off)
{
    memset(row, 0, sizeof *row);
    row->start = e->start;
    row->end = e->end;
    row->source = UNW_SRC_COMPACT;
    row->cfa_kind = UNW_CFA_REG_OFF;
    row->cfa_reg = cfa_reg;
    row->cfa_off = off;
}

static unw_compact_kind x86_row(const unw_compact_entry *e, unw_text_fn text, void *text_ctx,
                                unw_row *row, uint32_t *fde_off, unw_diag *diag)
{
    uint32_t enc = e->encoding, mode = enc & ENC_MODE_MASK;
    switch (mode) {
    case X86_MODE_RBP_FRAME: {
        row_init(row, e, UNW_X86_RBP, 16);
        unw_row_set(row, UNW_X86_RBP, UNW_RULE_AT_CFA, -16);
        unw_row_set(row, UNW_X86_RA, UNW_RULE_AT_CFA, -8);
        /* Up to five registers saved from rbp - 8*offset upwards, three
         * bits each, the first lowest. In CFA terms (CFA = rbp + 16) the
         * first sits at CFA - 8*(offset + 2). */
        uint32_t regs = field(enc, X86_RBP_FRAME_REGISTERS);
        int32_t slot = (int32_t)field(enc, X86_RBP_FRAME_OFFSET) + 2;
        for (int i = 0; i < 5; i++, slot--, regs >>= 3) {
            uint32_t r = regs & 7;
            if (r == 0)
                continue;
            int dw = x86_reg(r);
            if (dw < 0) {
                unw_warn(diag, "__unwind_info: function 0x%x: RBP frame saves register %u, "
                         "which compact unwind does not define", e->start, r);
                return UNW_COMPACT_BAD;
            }
            unw_row_set(row, (unsigned)dw, UNW_RULE_AT_CFA, -8 * slot);
        }
        return UNW_COMPACT_ROW;
    }
    case X86_MODE_STACK_IMMD:
    case X86_MODE_STACK_IND: {
        uint64_t size = (uint64_t)field(enc, X86_FRAMELESS_STACK_SIZE) * 8;
        if (mode == X86_MODE_STACK_IND) {
            /* The size field is the offset of the `sub $imm32, %rsp`
             * immediate inside the function; the adjust field counts the
             * pushes the immediate does not include. */
            uint8_t imm[4];
            uint64_t at = (uint64_t)e->start + field(enc, X86_FRAMELESS_STACK_SIZE);
            if (!text || !text(text_ctx, at, imm, 4)) {
                unw_warn(diag, "__unwind_info: function 0x%x: indirect stack size at 0x%llx "
                         "cannot be read", e->start, (unsigned long long)at);
                return UNW_COMPACT_BAD;
            }
            size = (uint64_t)ld_u32le(imm) + 8ull * field(enc, X86_FRAMELESS_STACK_ADJUST);
        }
        if (size < 8 || size > INT32_MAX) {
            unw_warn(diag, "__unwind_info: function 0x%x: frameless stack size %llu", e->start,
                     (unsigned long long)size);
            return UNW_COMPACT_BAD;
        }
        row_init(row, e, UNW_X86_RSP, (int32_t)size);
        unw_row_set(row, UNW_X86_RA, UNW_RULE_AT_CFA, -8);
        uint32_t count = field(enc, X86_FRAMELESS_REG_COUNT);
        int regs[6];
        if (count > 6 || !x86_permutation(count, field(enc, X86_FRAMELESS_REG_PERMUTATION), regs)) {
            unw_warn(diag, "__unwind_info: function 0x%x: register permutation 0x%x of %u "
                     "registers is not valid", e->start,
                     field(enc, X86_FRAMELESS_REG_PERMUTATION), count);
            return UNW_COMPACT_BAD;
        }
        if (8ull * (count + 1) > size) {
            unw_warn(diag, "__unwind_info: function 0x%x: %u saved registers do not fit a "
                     "%llu-byte frame", e->start, count, (unsigned long long)size);
            return UNW_COMPACT_BAD;
        }
        /* Pushed in order regs[0..count-1] right below the return address:
         * the last pushed is nearest it. */
        for (uint32_t i = 0; i < count; i++)
            unw_row_set(row, (unsigned)x86_reg((uint32_t)regs[i]), UNW_RULE_AT_CFA,
                        -8 * (int32_t)(count - i + 1));
        return UNW_COMPACT_ROW;
    }
    case X86_MODE_DWARF:
        *fde_off = enc & DWARF_SECTION_OFFSET;
        return UNW_COMPACT_DWARF;
    case 0:
        return UNW_COMPACT_NONE;
    default:
        unw_warn(diag, "__unwind_info: function 0x%x: x86_64 mode 0x%x is not defined",
                 e->start, mode >> 24);
        return UNW_COMPACT_BAD;
    }
}

static unw_compact_kind a64_row(const unw_compact_entry *e, unw_row *row, uint32_t *fde_off,
                                unw_diag *diag)
{
    uint32_t enc = e->encoding, mode = enc & ENC_MODE_MASK;
    switch (mode) {
    case A64_MODE_FRAME: {
        row_init(row, e, UNW_A64_FP, 16);
        unw_row_set(row, UNW_A64_FP, UNW_RULE_AT_CFA, -16);
        unw_row_set(row, UNW_A64_LR, UNW_RULE_AT_CFA, -8);
        /* Pairs pushed below fp/lr in this order, the lower-numbered
         * register of each pair higher in memory. */
        int32_t off = -16;
        for (int pair = 0; pair < 5; pair++) {
            if (!(enc & (1u << pair)))
                continue;
            unw_row_set(row, (unsigned)(UNW_A64_X19 + 2 * pair), UNW_RULE_AT_CFA, off - 8);
            unw_row_set(row, (unsigned)(UNW_A64_X19 + 2 * pair + 1), UNW_RULE_AT_CFA, off - 16);
            off -= 16;
        }
        for (int pair = 0; pair < 4; pair++) {
            if (!(enc & (0x100u << pair)))
                continue;
            unw_row_set(row, (unsigned)(UNW_A64_D8 + 2 * pair), UNW_RULE_AT_CFA, off - 8);
            unw_row_set(row, (unsigned)(UNW_A64_D8 + 2 * pair + 1), UNW_RULE_AT_CFA, off - 16);
            off -= 16;
        }
        return UNW_COMPACT_ROW;
    }
    case A64_MODE_FRAMELESS: {
        uint32_t size = field(enc, A64_FRAMELESS_STACK_SIZE) * 16;
        row_init(row, e, UNW_A64_SP, (int32_t)size);
        /* The return address stays in lr: no rule for it. */
        return UNW_COMPACT_ROW;
    }
    case A64_MODE_DWARF:
        *fde_off = enc & DWARF_SECTION_OFFSET;
        return UNW_COMPACT_DWARF;
    case 0:
        return UNW_COMPACT_NONE;
    default:
        unw_warn(diag, "__unwind_info: function 0x%x: arm64 mode 0x%x is not defined",
                 e->start, mode >> 24);
        return UNW_COMPACT_BAD;
    }
}

unw_compact_kind unw_compact_row(unw_arch arch, const unw_compact_entry *e, unw_text_fn text,
                                 void *text_ctx, unw_row *row, uint32_t *fde_off,
                                 unw_diag *diag)
{
    if (e->encoding == 0)
        return UNW_COMPACT_NONE;
    if (arch == UNW_ARCH_X86_64)
        return x86_row(e, text, text_ctx, row, fde_off, diag);
    if (arch == UNW_ARCH_ARM64)
        return a64_row(e, row, fde_off, diag);
    unw_warn(diag, "__unwind_info: no decoder for this architecture");
    return UNW_COMPACT_BAD;
}

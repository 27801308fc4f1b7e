/* Unwind rows: helpers, normalization and the stored table (unwind.h). */
#include "unwind.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"

int unw_ra_column(unw_arch arch)
{
    return arch == UNW_ARCH_X86_64 ? UNW_X86_RA : arch == UNW_ARCH_ARM64 ? UNW_A64_LR : -1;
}

unw_arch unw_arch_of_cputype(uint32_t cputype)
{
    switch (cputype) {
    case 0x01000007u: /* CPU_TYPE_X86_64 */
        return UNW_ARCH_X86_64;
    case 0x0100000cu: /* CPU_TYPE_ARM64 (arm64, arm64e) */
        return UNW_ARCH_ARM64;
    default:
        return UNW_ARCH_NONE;
    }
}

const unw_rule *unw_row_rule(const unw_row *row, unsigned reg)
{
    for (unsigned i = 0; i < row->nrules; i++)
        if (row->rules[i].reg == reg)
            return &row->rules[i];
    return NULL;
}

bool unw_row_set(unw_row *row, unsigned reg, unw_rule_kind kind, int32_t off)
{
    unsigned i = 0;
    while (i < row->nrules && row->rules[i].reg < reg)
        i++;
    if (i < row->nrules && row->rules[i].reg == reg) {
        row->rules[i].kind = (uint8_t)kind;
        row->rules[i].off = off;
        return true;
    }
    if (row->nrules >= UNW_MAX_RULES)
        return false;
    memmove(&row->rules[i + 1], &row->rules[i], (row->nrules - i) * sizeof row->rules[0]);
    row->rules[i].reg = (uint16_t)reg;
    row->rules[i].kind = (uint8_t)kind;
    row->rules[i].off = off;
    row->nrules++;
    return true;
}

const char *unw_reg_name(unw_arch arch, unsigned reg)
{
    static __thread char buf[8][16];
    static __thread unsigned slot;
    char *b = buf[slot++ % 8];
    if (arch == UNW_ARCH_X86_64) {
        static const char *const x86[17] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi",
                                            "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                            "r12", "r13", "r14", "r15", "rip"};
        if (reg < 17)
            return x86[reg];
    } else if (arch == UNW_ARCH_ARM64) {
        if (reg == UNW_A64_FP)
            return "fp";
        if (reg == UNW_A64_LR)
            return "lr";
        if (reg == UNW_A64_SP)
            return "sp";
        if (reg < 29) {
            snprintf(b, 16, "x%u", reg);
            return b;
        }
        if (reg >= 64 && reg < 96) {
            snprintf(b, 16, "d%u", reg - 64);
            return b;
        }
    }
    snprintf(b, 16, "r%u", reg);
    return b;
}

static const char *source_name(unsigned s)
{
    return s == UNW_SRC_COMPACT    ? "compact"
           : s == UNW_SRC_EH_FRAME ? "eh_frame"
           : s == UNW_SRC_BREAKPAD ? "breakpad"
                                   : "?";
}

void unw_row_format(unw_arch arch, const unw_row *row, char *out, size_t cap)
{
    size_t o = 0;
#define PUT(...)                                                              \
    do {                                                                      \
        if (o < cap) {                                                        \
            int k_ = snprintf(out + o, cap - o, __VA_ARGS__);                 \
            o += k_ > 0 ? (size_t)k_ : 0;                                     \
        }                                                                     \
    } while (0)
    if (cap)
        out[0] = 0;
    PUT("0x%x-0x%x %s ", row->start, row->end, source_name(row->source));
    if (row->cfa_kind == UNW_CFA_REG_OFF)
        PUT("CFA=%s%+d", unw_reg_name(arch, row->cfa_reg), row->cfa_off);
    else
        PUT("CFA=unsupported");
    int ra = unw_ra_column(arch);
    for (unsigned i = 0; i < row->nrules; i++) {
        const unw_rule *r = &row->rules[i];
        const char *name = (int)r->reg == ra ? "ra" : unw_reg_name(arch, r->reg);
        switch (r->kind) {
        case UNW_RULE_UNDEFINED:
            PUT(" %s=undefined", name);
            break;
        case UNW_RULE_SAME:
            PUT(" %s=same", name);
            break;
        case UNW_RULE_AT_CFA:
            PUT(" %s=[CFA%+d]", name, r->off);
            break;
        case UNW_RULE_VAL_CFA:
            PUT(" %s=CFA%+d", name, r->off);
            break;
        case UNW_RULE_REG:
            PUT(" %s=%s", name, unw_reg_name(arch, (unsigned)r->off));
            break;
        default:
            PUT(" %s=unsupported", name);
            break;
        }
    }
#undef PUT
}

void unw_warn(unw_diag *d, const char *fmt, ...)
{
    if (!d)
        return;
    if (d->count++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->first, sizeof d->first, fmt, ap);
        va_end(ap);
    }
}

void unw_rows_free(unw_rows *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}

bool unw_rows_push(unw_rows *r, const unw_row *row)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 64;
        if (r->n >= UNW_MAX_ROWS)
            return false;
        unw_row *p = realloc(r->v, nc * sizeof *p);
        if (!p)
            return false;
        r->v = p;
        r->cap = nc;
    }
    r->v[r->n++] = *row;
    return true;
}

static int by_start(const void *a, const void *b)
{
    const unw_row *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    /* Equal starts: the table read first wins (the compact rows are added
     * before eh_frame rows), then the longer one. */
    if (x->source != y->source)
        return x->source < y->source ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end;
}

void unw_rows_normalize(unw_rows *rows, unw_diag *diag)
{
    if (rows->n)
        qsort(rows->v, rows->n, sizeof rows->v[0], by_start);
    size_t w = 0;
    for (size_t i = 0; i < rows->n; i++) {
        unw_row *r = &rows->v[i];
        if (r->start >= r->end)
            continue;
        if (w > 0 && r->start < rows->v[w - 1].end) {
            unw_warn(diag, "unwind rows: 0x%x-0x%x (%s) overlaps 0x%x-0x%x (%s); dropped",
                     r->start, r->end, source_name(r->source), rows->v[w - 1].start,
                     rows->v[w - 1].end, source_name(rows->v[w - 1].source));
            continue;
        }
        rows->v[w++] = *r;
    }
    rows->n = w;
}

/* ---- the stored table ---- */

#define SET_HEAD 12
#define RULE_SIZE 8

static size_t set_size(unsigned nrules)
{
    return SET_HEAD + (size_t)nrules * RULE_SIZE;
}

/* Whether two rows unwind alike (same set). */
static bool same_set(const unw_row *a, const unw_row *b)
{
    if (a->source != b->source || a->cfa_kind != b->cfa_kind || a->cfa_reg != b->cfa_reg ||
        a->cfa_off != b->cfa_off || a->nrules != b->nrules)
        return false;
    for (unsigned i = 0; i < a->nrules; i++)
        if (a->rules[i].reg != b->rules[i].reg || a->rules[i].kind != b->rules[i].kind ||
            a->rules[i].off != b->rules[i].off)
            return false;
    return true;
}

static uint64_t set_hash(const unw_row *r)
{
    uint64_t h = 1469598103934665603ull;
#define MIX(v) (h = (h ^ (uint64_t)(uint32_t)(v)) * 1099511628211ull)
    MIX(r->source);
    MIX(r->cfa_kind);
    MIX(r->cfa_reg);
    MIX(r->cfa_off);
    MIX(r->nrules);
    for (unsigned i = 0; i < r->nrules; i++) {
        MIX(r->rules[i].reg);
        MIX(r->rules[i].kind);
        MIX(r->rules[i].off);
    }
#undef MIX
    return h;
}

symd_status unw_table_build(unw_arch arch, const unw_rows *rows, uint32_t warnings,
                            uint8_t **blob, size_t *len, symd_err *err)
{
    *blob = NULL;
    *len = 0;
    if (arch != UNW_ARCH_X86_64 && arch != UNW_ARCH_ARM64)
        return symd_fail(err, SYMD_E_INVALID, "unwind table: unknown arch %d", (int)arch);
    if (rows->n > UNW_MAX_ROWS)
        return symd_fail(err, SYMD_E_TOO_LARGE, "unwind table: %zu rows", rows->n);
    for (size_t i = 0; i < rows->n; i++)
        if (rows->v[i].start >= rows->v[i].end ||
            (i > 0 && rows->v[i].start < rows->v[i - 1].end) ||
            rows->v[i].nrules > UNW_MAX_RULES)
            return symd_fail(err, SYMD_E_INVALID, "unwind table: row %zu out of order", i);
    /* Dedup rule sets with an open-addressing hash of row indexes. */
    size_t nslots = 64;
    while (nslots < rows->n * 2)
        nslots *= 2;
    uint32_t *slot_row = malloc(nslots * sizeof *slot_row);
    uint32_t *set_of = malloc((rows->n ? rows->n : 1) * sizeof *set_of);
    uint32_t *slot_off = malloc(nslots * sizeof *slot_off);
    uint8_t *sets = NULL;
    size_t sets_len = 0, sets_cap = 0;
    symd_status st = SYMD_OK;
    if (!slot_row || !set_of || !slot_off) {
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    memset(slot_row, 0xff, nslots * sizeof *slot_row);
    for (size_t i = 0; i < rows->n; i++) {
        const unw_row *r = &rows->v[i];
        size_t s = (size_t)set_hash(r) & (nslots - 1);
        while (slot_row[s] != UINT32_MAX && !same_set(&rows->v[slot_row[s]], r))
            s = (s + 1) & (nslots - 1);
        if (slot_row[s] != UINT32_MAX) {
            set_of[i] = slot_off[s];
            continue;
        }
        size_t need = set_size(r->nrules);
        if (sets_len + need > UINT32_MAX) {
            st = symd_fail(err, SYMD_E_TOO_LARGE, "unwind table: rule sets too large");
            goto out;
        }
        if (sets_len + need > sets_cap) {
            size_t nc = sets_cap ? sets_cap * 2 : 4096;
            while (nc < sets_len + need)
                nc *= 2;
            uint8_t *p = realloc(sets, nc);
            if (!p) {
                st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
                goto out;
            }
            sets = p;
            sets_cap = nc;
        }
        uint8_t *p = sets + sets_len;
        memset(p, 0, need);
        p[0] = r->source;
        p[1] = r->cfa_kind;
        p[2] = (uint8_t)r->cfa_reg, p[3] = (uint8_t)(r->cfa_reg >> 8);
        st_u32le(p + 4, (uint32_t)r->cfa_off);
        p[8] = r->nrules;
        for (unsigned k = 0; k < r->nrules; k++) {
            uint8_t *q = p + SET_HEAD + k * RULE_SIZE;
            q[0] = (uint8_t)r->rules[k].reg, q[1] = (uint8_t)(r->rules[k].reg >> 8);
            q[2] = r->rules[k].kind;
            st_u32le(q + 4, (uint32_t)r->rules[k].off);
        }
        slot_row[s] = (uint32_t)i;
        slot_off[s] = (uint32_t)sets_len;
        set_of[i] = (uint32_t)sets_len;
        sets_len += need;
    }
    size_t total = UNW_TABLE_HEADER + rows->n * 12 + sets_len;
    uint8_t *b = malloc(total);
    if (!b) {
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    memset(b, 0, UNW_TABLE_HEADER);
    memcpy(b, "SUNW", 4);
    st_u32le(b + 4, UNW_TABLE_VERSION);
    st_u32le(b + 8, (uint32_t)arch);
    st_u32le(b + 12, (uint32_t)rows->n);
    st_u32le(b + 16, (uint32_t)sets_len);
    st_u32le(b + 20, warnings);
    for (size_t i = 0; i < rows->n; i++) {
        uint8_t *q = b + UNW_TABLE_HEADER + i * 12;
        st_u32le(q, rows->v[i].start);
        st_u32le(q + 4, rows->v[i].end);
        st_u32le(q + 8, set_of[i]);
    }
    if (sets_len)
        memcpy(b + UNW_TABLE_HEADER + rows->n * 12, sets, sets_len);
    *blob = b;
    *len = total;
out:
    free(slot_row);
    free(slot_off);
    free(set_of);
    free(sets);
    return st;
}

/* Checks the rule set at off of t; false when damaged. */
static bool set_ok(const unw_table *t, const uint8_t *sets, uint32_t off)
{
    if (!range_ok(off, SET_HEAD, t->sets_len))
        return false;
    const uint8_t *p = sets + off;
    unsigned n = p[8];
    if (n > UNW_MAX_RULES || !range_ok(off, set_size(n), t->sets_len))
        return false;
    if (p[0] < UNW_SRC_COMPACT || p[0] > UNW_SRC_BREAKPAD || p[1] > UNW_CFA_UNSUPPORTED)
        return false;
    int prev = -1;
    for (unsigned k = 0; k < n; k++) {
        const uint8_t *q = p + SET_HEAD + k * RULE_SIZE;
        int reg = q[0] | q[1] << 8;
        if (reg <= prev || q[2] > UNW_RULE_UNSUPPORTED)
            return false;
        prev = reg;
    }
    return true;
}

symd_status unw_table_open(const uint8_t *blob, size_t len, unw_table *t, symd_err *err)
{
    memset(t, 0, sizeof *t);
    if (len < UNW_TABLE_HEADER || memcmp(blob, "SUNW", 4) != 0)
        return SYMD_CORRUPT(err, "unwind table: no SUNW header");
    uint32_t version = ld_u32le(blob + 4);
    if (version != UNW_TABLE_VERSION)
        return SYMD_CORRUPT(err, "unwind table: version %u (this symd reads %d)", version,
                            UNW_TABLE_VERSION);
    t->blob = blob;
    t->len = len;
    t->arch = (unw_arch)ld_u32le(blob + 8);
    t->nrows = ld_u32le(blob + 12);
    t->sets_len = ld_u32le(blob + 16);
    t->warnings = ld_u32le(blob + 20);
    if (t->arch != UNW_ARCH_X86_64 && t->arch != UNW_ARCH_ARM64)
        return SYMD_CORRUPT(err, "unwind table: arch %u", (unsigned)t->arch);
    if ((uint64_t)UNW_TABLE_HEADER + (uint64_t)t->nrows * 12 + t->sets_len != len)
        return SYMD_CORRUPT(err, "unwind table: %u rows and %u bytes of sets do not make %zu "
                            "bytes", t->nrows, t->sets_len, len);
    const uint8_t *rows = blob + UNW_TABLE_HEADER, *sets = rows + (size_t)t->nrows * 12;
    uint32_t prev_end = 0;
    for (uint32_t i = 0; i < t->nrows; i++) {
        uint32_t s = ld_u32le(rows + i * 12), e = ld_u32le(rows + i * 12 + 4);
        if (s >= e || s < prev_end)
            return SYMD_CORRUPT(err, "unwind table: row %u (0x%x-0x%x) out of order", i, s, e);
        if (!set_ok(t, sets, ld_u32le(rows + i * 12 + 8)))
            return SYMD_CORRUPT(err, "unwind table: row %u: rule set damaged", i);
        prev_end = e;
    }
    return SYMD_OK;
}

void unw_table_row(const unw_table *t, uint32_t i, unw_row *out)
{
    const uint8_t *q = t->blob + UNW_TABLE_HEADER + (size_t)i * 12;
    const uint8_t *p = t->blob + UNW_TABLE_HEADER + (size_t)t->nrows * 12 + ld_u32le(q + 8);
    memset(out, 0, sizeof *out);
    out->start = ld_u32le(q);
    out->end = ld_u32le(q + 4);
    out->source = p[0];
    out->cfa_kind = p[1];
    out->cfa_reg = (uint16_t)(p[2] | p[3] << 8);
    out->cfa_off = (int32_t)ld_u32le(p + 4);
    out->nrules = p[8];
    for (unsigned k = 0; k < out->nrules; k++) {
        const uint8_t *r = p + SET_HEAD + k * RULE_SIZE;
        out->rules[k].reg = (uint16_t)(r[0] | r[1] << 8);
        out->rules[k].kind = r[2];
        out->rules[k].off = (int32_t)ld_u32le(r + 4);
    }
}

bool unw_table_find(const unw_table *t, uint64_t off, unw_row *out)
{
    if (off > UINT32_MAX)
        return false;
    const uint8_t *rows = t->blob + UNW_TABLE_HEADER;
    uint32_t lo = 0, hi = t->nrows; /* first row starting after off */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ld_u32le(rows + (size_t)mid * 12) <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return false;
    const uint8_t *q = rows + (size_t)(lo - 1) * 12;
    if (off >= ld_u32le(q + 4))
        return false;
    unw_table_row(t, lo - 1, out);
    return true;
}

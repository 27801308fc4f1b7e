/* Breakpad STACK CFI rows: register names, the blob and its lookups. */
#include "cfi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define HDR 32u
#define ENTRY 16u
#define ROW 16u
#define RULE 8u

void bp_cfi_free(bp_cfi *c)
{
    free(c->entries);
    free(c->rows);
    free(c->rules);
    memset(c, 0, sizeof *c);
}

/* x86_64's DWARF numbering (System V psABI), as dump_syms spells them. */
static const char *const x86_64_regs[] = {"$rax", "$rdx", "$rcx", "$rbx", "$rsi", "$rdi",
                                          "$rbp", "$rsp", "$r8",  "$r9",  "$r10", "$r11",
                                          "$r12", "$r13", "$r14", "$r15", "$rip"};
#define NX86 (sizeof x86_64_regs / sizeof x86_64_regs[0])

/* The number of a name made of prefix and a decimal number below limit. */
static bool numbered(const char *s, size_t n, char prefix, unsigned limit, unsigned *out)
{
    if (n < 2 || n > 3 || s[0] != prefix)
        return false;
    unsigned v = 0;
    for (size_t i = 1; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || (i == 1 && s[i] == '0' && n > 2))
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v >= limit)
        return false;
    *out = v;
    return true;
}

static bool is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* Contract in cfi.h. */
bool bp_cfi_reg(const char *name, size_t n, uint16_t *reg, bp_cfi_arch *arch)
{
    if (is(name, n, ".ra")) {
        *reg = BP_REG_RA;
        *arch = BP_CFI_ARCH_UNKNOWN;
        return true;
    }
    if (n && name[0] == '$') {
        for (size_t i = 0; i < NX86; i++)
            if (is(name, n, x86_64_regs[i])) {
                *reg = (uint16_t)i;
                *arch = BP_CFI_ARCH_X86_64;
                return true;
            }
        return false;
    }
    unsigned v;
    *arch = BP_CFI_ARCH_ARM64;
    if (numbered(name, n, 'x', 31, &v)) {
        *reg = (uint16_t)v;
        return true;
    }
    /* dump_syms writes sp and pc; fp and lr are their ABI names. */
    if (is(name, n, "sp"))
        *reg = 31;
    else if (is(name, n, "pc"))
        *reg = 32;
    else if (is(name, n, "fp"))
        *reg = 29;
    else if (is(name, n, "lr"))
        *reg = 30;
    else
        return false;
    return true;
}

/* Contract in cfi.h. */
const char *bp_cfi_reg_name(bp_cfi_arch arch, uint16_t reg)
{
    static const char *const arm64[] = {
        "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
        "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
        "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",  "pc"};
    if (reg == BP_REG_RA)
        return ".ra";
    if (arch == BP_CFI_ARCH_X86_64 && reg < NX86)
        return x86_64_regs[reg];
    if (arch == BP_CFI_ARCH_ARM64 && reg < sizeof arm64 / sizeof arm64[0])
        return arm64[reg];
    return NULL;
}

/* Contract in cfi.h. */
symd_status bp_cfi_encode(const bp_cfi *c, uint8_t **blob, size_t *len, symd_err *err)
{
    *blob = NULL;
    *len = 0;
    size_t total = HDR, part;
    if (!size_mul(c->nentries, ENTRY, &part) || !size_add(total, part, &total) ||
        !size_mul(c->nrows, ROW, &part) || !size_add(total, part, &total) ||
        !size_mul(c->nrules, RULE, &part) || !size_add(total, part, &total) ||
        c->nentries > UINT32_MAX || c->nrows > UINT32_MAX || c->nrules > UINT32_MAX)
        return symd_fail(err, SYMD_E_TOO_LARGE, "STACK CFI: more than 4 GiB of rows");
    uint8_t *out = malloc(total), *p = out;
    if (!out)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    memcpy(p, "BPCF", 4);
    st_u32le(p + 4, BP_CFI_VERSION);
    st_u32le(p + 8, (uint32_t)c->arch);
    st_u32le(p + 12, (uint32_t)c->nentries);
    st_u32le(p + 16, (uint32_t)c->nrows);
    st_u32le(p + 20, (uint32_t)c->nrules);
    memset(p + 24, 0, 8);
    p += HDR;
    for (size_t i = 0; i < c->nentries; i++, p += ENTRY) {
        st_u32le(p, c->entries[i].addr);
        st_u32le(p + 4, c->entries[i].size);
        st_u32le(p + 8, c->entries[i].row0);
        st_u32le(p + 12, c->entries[i].nrows);
    }
    for (size_t i = 0; i < c->nrows; i++, p += ROW) {
        const bp_cfi_row *r = &c->rows[i];
        st_u32le(p, r->addr);
        p[4] = (uint8_t)r->cfa_reg;
        p[5] = (uint8_t)(r->cfa_reg >> 8);
        p[6] = (uint8_t)r->nrules;
        p[7] = (uint8_t)(r->nrules >> 8);
        st_u32le(p + 8, (uint32_t)r->cfa_off);
        st_u32le(p + 12, r->rule0);
    }
    for (size_t i = 0; i < c->nrules; i++, p += RULE) {
        const bp_cfi_rule *r = &c->rules[i];
        p[0] = (uint8_t)r->reg;
        p[1] = (uint8_t)(r->reg >> 8);
        p[2] = r->kind;
        p[3] = 0;
        st_u32le(p + 4, (uint32_t)r->off);
    }
    *blob = out;
    *len = total;
    return SYMD_OK;
}

static bool reg_ok(uint32_t arch, uint16_t reg)
{
    return reg == BP_REG_RA || bp_cfi_reg_name((bp_cfi_arch)arch, reg) != NULL;
}

/* Contract in cfi.h. */
symd_status bp_cfi_open(const uint8_t *blob, size_t len, bp_cfi_blob *b, symd_err *err)
{
    memset(b, 0, sizeof *b);
    if (len < HDR || memcmp(blob, "BPCF", 4) != 0)
        return SYMD_CORRUPT(err, "CFI blob: bad header");
    b->version = ld_u32le(blob + 4);
    b->arch = ld_u32le(blob + 8);
    b->nentries = ld_u32le(blob + 12);
    b->nrows = ld_u32le(blob + 16);
    b->nrules = ld_u32le(blob + 20);
    if (b->version != BP_CFI_VERSION)
        return SYMD_CORRUPT(err, "CFI blob: version %u unknown", b->version);
    if (b->arch != BP_CFI_ARCH_X86_64 && b->arch != BP_CFI_ARCH_ARM64 &&
        b->arch != BP_CFI_ARCH_UNKNOWN)
        return SYMD_CORRUPT(err, "CFI blob: arch %u unknown", b->arch);
    uint64_t need = HDR + (uint64_t)b->nentries * ENTRY + (uint64_t)b->nrows * ROW +
                    (uint64_t)b->nrules * RULE;
    if (need != len)
        return SYMD_CORRUPT(err, "CFI blob: %zu bytes, header says %llu", len,
                            (unsigned long long)need);
    b->blob = blob;
    b->len = len;
    b->entries = blob + HDR;
    b->rows = b->entries + (size_t)b->nentries * ENTRY;
    b->rules = b->rows + (size_t)b->nrows * ROW;
    uint64_t prev_end = 0;
    for (uint32_t i = 0; i < b->nentries; i++) {
        const uint8_t *e = b->entries + (size_t)i * ENTRY;
        uint64_t addr = ld_u32le(e), size = ld_u32le(e + 4), row0 = ld_u32le(e + 8),
                 nrows = ld_u32le(e + 12);
        if ((i && addr < prev_end) || size == 0 || addr + size > UINT32_MAX ||
            nrows == 0 || row0 + nrows > b->nrows)
            return SYMD_CORRUPT(err, "CFI blob: entry %u out of order or range", i);
        prev_end = addr + size;
        uint64_t prev = 0;
        for (uint64_t k = row0; k < row0 + nrows; k++) {
            const uint8_t *r = b->rows + (size_t)k * ROW;
            uint64_t ra = ld_u32le(r), rule0 = ld_u32le(r + 12);
            uint16_t cfa = (uint16_t)(r[4] | r[5] << 8), nr = (uint16_t)(r[6] | r[7] << 8);
            if ((k == row0 ? ra != addr : ra <= prev) || ra >= addr + size ||
                nr > BP_CFI_MAX_RULES || rule0 + nr > b->nrules ||
                (cfa != BP_REG_NONE && (cfa == BP_REG_RA || !reg_ok(b->arch, cfa))))
                return SYMD_CORRUPT(err, "CFI blob: entry %u row %llu out of order or range",
                                    i, (unsigned long long)(k - row0));
            prev = ra;
            int last = -1;
            for (uint64_t j = rule0; j < rule0 + nr; j++) {
                const uint8_t *u = b->rules + (size_t)j * RULE;
                uint16_t reg = (uint16_t)(u[0] | u[1] << 8);
                uint8_t kind = u[2];
                int32_t off = (int32_t)ld_u32le(u + 4);
                if ((int)reg <= last || !reg_ok(b->arch, reg) || kind < BP_RULE_AT_CFA ||
                    kind > BP_RULE_UNSUPPORTED ||
                    (kind == BP_RULE_REG &&
                     (off < 0 || off >= (int32_t)BP_REG_RA || !reg_ok(b->arch, (uint16_t)off))))
                    return SYMD_CORRUPT(err, "CFI blob: rule %llu unreadable",
                                        (unsigned long long)j);
                last = reg;
            }
        }
    }
    return SYMD_OK;
}

/* Contract in cfi.h. */
void bp_cfi_entry_at(const bp_cfi_blob *b, uint32_t i, uint32_t *addr, uint32_t *size,
                     uint32_t *nrows)
{
    const uint8_t *e = b->entries + (size_t)i * ENTRY;
    *addr = ld_u32le(e);
    *size = ld_u32le(e + 4);
    *nrows = ld_u32le(e + 12);
}

/* Contract in cfi.h. */
void bp_cfi_row_at(const bp_cfi_blob *b, uint32_t entry, uint32_t k, bp_cfi_lookup *out)
{
    const uint8_t *e = b->entries + (size_t)entry * ENTRY;
    uint32_t row0 = ld_u32le(e + 8), nrows = ld_u32le(e + 12);
    uint64_t end = (uint64_t)ld_u32le(e) + ld_u32le(e + 4);
    const uint8_t *r = b->rows + (size_t)(row0 + k) * ROW;
    out->start = ld_u32le(r);
    /* open checked that an entry ends at or below UINT32_MAX */
    out->end = k + 1 < nrows ? ld_u32le(r + ROW) : (uint32_t)end;
    out->cfa_reg = (uint16_t)(r[4] | r[5] << 8);
    out->cfa_off = (int32_t)ld_u32le(r + 8);
    out->nrules = (size_t)(r[6] | r[7] << 8);
    uint32_t rule0 = ld_u32le(r + 12);
    for (size_t j = 0; j < out->nrules; j++) {
        const uint8_t *u = b->rules + (size_t)(rule0 + j) * RULE;
        out->rules[j].reg = (uint16_t)(u[0] | u[1] << 8);
        out->rules[j].kind = u[2];
        out->rules[j].off = (int32_t)ld_u32le(u + 4);
    }
}

/* Contract in cfi.h. */
bool bp_cfi_find(const bp_cfi_blob *b, uint32_t addr, bp_cfi_lookup *out)
{
    size_t lo = 0, hi = b->nentries;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ld_u32le(b->entries + mid * ENTRY) <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return false;
    uint32_t ea, es, nrows;
    bp_cfi_entry_at(b, (uint32_t)(lo - 1), &ea, &es, &nrows);
    if (addr - ea >= es)
        return false;
    const uint8_t *e = b->entries + (lo - 1) * ENTRY;
    uint32_t row0 = ld_u32le(e + 8);
    size_t rlo = 0, rhi = nrows;
    while (rlo < rhi) {
        size_t mid = rlo + (rhi - rlo) / 2;
        if (ld_u32le(b->rows + (row0 + mid) * ROW) <= addr)
            rlo = mid + 1;
        else
            rhi = mid;
    }
    /* The first row starts at the entry's address: rlo >= 1. */
    bp_cfi_row_at(b, (uint32_t)(lo - 1), (uint32_t)(rlo - 1), out);
    return true;
}

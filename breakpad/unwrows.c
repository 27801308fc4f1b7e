/* Breakpad STACK CFI rows <-> general unwind rows (unwrows.h). */
#include "unwrows.h"

#include <stdlib.h>
#include <string.h>

#include "../util/util.h"

static unw_arch unw_arch_of(uint32_t bp_arch, unw_arch fallback)
{
    return bp_arch == BP_CFI_ARCH_X86_64  ? UNW_ARCH_X86_64
           : bp_arch == BP_CFI_ARCH_ARM64 ? UNW_ARCH_ARM64
                                          : fallback;
}

/* Breakpad's rule kinds and unwind.h's mean the same (README's table). */
static unw_rule_kind unw_kind_of(uint8_t k)
{
    switch (k) {
    case BP_RULE_AT_CFA: return UNW_RULE_AT_CFA;
    case BP_RULE_VAL_CFA: return UNW_RULE_VAL_CFA;
    case BP_RULE_SAME: return UNW_RULE_SAME;
    case BP_RULE_REG: return UNW_RULE_REG;
    default: return UNW_RULE_UNSUPPORTED;
    }
}

/* One STACK CFI row as an unwind row; false when it has more rules than an
 * unwind row holds. */
static bool row_of(unw_arch arch, const bp_cfi_lookup *l, unw_row *r)
{
    memset(r, 0, sizeof *r);
    r->start = l->start;
    r->end = l->end;
    r->source = UNW_SRC_BREAKPAD;
    if (l->cfa_reg == BP_REG_NONE) {
        r->cfa_kind = UNW_CFA_UNSUPPORTED;
    } else {
        r->cfa_kind = UNW_CFA_REG_OFF;
        r->cfa_reg = l->cfa_reg;
        r->cfa_off = l->cfa_off;
    }
    unsigned sp = arch == UNW_ARCH_ARM64 ? UNW_A64_SP : UNW_X86_RSP;
    int ra = unw_ra_column(arch);
    /* Rules come by register number, BP_REG_RA (0xfffe) last: set after an
     * "x30" or "$rip" rule of the same row, ".ra" replaces it. */
    for (size_t i = 0; i < l->nrules; i++) {
        const bp_cfi_rule *u = &l->rules[i];
        unsigned reg = u->reg == BP_REG_RA ? (unsigned)ra : u->reg;
        if (reg == sp) /* the CFA is the caller's sp; no unwind row has a rule for it */
            continue;
        if (!unw_row_set(r, reg, unw_kind_of(u->kind), u->off))
            return false;
    }
    return true;
}

/* Contract in unwrows.h. */
symd_status bp_cfi_to_unwind(const bp_cfi_blob *b, unw_arch fallback, uint8_t **blob,
                             size_t *len, size_t *dropped, symd_err *err)
{
    *blob = NULL;
    *len = 0;
    if (dropped)
        *dropped = 0;
    unw_arch arch = unw_arch_of(b->arch, fallback);
    if (arch != UNW_ARCH_X86_64 && arch != UNW_ARCH_ARM64)
        return SYMD_OK;
    unw_rows rows = {0};
    size_t skipped = 0;
    symd_status st = SYMD_OK;
    for (uint32_t e = 0; e < b->nentries && st == SYMD_OK; e++) {
        uint32_t addr, size, n;
        bp_cfi_entry_at(b, e, &addr, &size, &n);
        for (uint32_t k = 0; k < n; k++) {
            bp_cfi_lookup l;
            unw_row r;
            bp_cfi_row_at(b, e, k, &l);
            if (l.start >= l.end)
                continue;
            if (!row_of(arch, &l, &r)) {
                skipped++;
                continue;
            }
            if (!unw_rows_push(&rows, &r)) {
                st = rows.n >= UNW_MAX_ROWS
                         ? symd_fail(err, SYMD_E_TOO_LARGE, "STACK CFI: more than %u rows",
                                     UNW_MAX_ROWS)
                         : symd_fail(err, SYMD_E_NOMEM, "out of memory");
                break;
            }
        }
    }
    /* bp_cfi_open checked entries ascending and disjoint, rows ascending in
     * them: already what unw_table_build takes. */
    if (st == SYMD_OK)
        st = unw_table_build(arch, &rows, skipped > UINT32_MAX ? UINT32_MAX : (uint32_t)skipped,
                             blob, len, err);
    unw_rows_free(&rows);
    if (dropped)
        *dropped = skipped;
    return st;
}

/* ---- the other way: a binary's rows as STACK CFI ---- */

static bool starts_at(const unw_starts *s, uint32_t at)
{
    if (!s || !s->n)
        return false;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid] < at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->v[lo] == at;
}

static uint8_t bp_kind_of(uint8_t k)
{
    switch (k) {
    case UNW_RULE_AT_CFA: return BP_RULE_AT_CFA;
    case UNW_RULE_VAL_CFA: return BP_RULE_VAL_CFA;
    case UNW_RULE_SAME: return BP_RULE_SAME;
    case UNW_RULE_REG: return BP_RULE_REG;
    default: return BP_RULE_UNSUPPORTED;
    }
}

/* Contract in unwrows.h. */
symd_status bp_cfi_from_unwind(unw_arch arch, const unw_rows *rows, const unw_starts *starts,
                               bp_cfi *out, symd_err *err)
{
    memset(out, 0, sizeof *out);
    out->arch = arch == UNW_ARCH_X86_64  ? BP_CFI_ARCH_X86_64
                : arch == UNW_ARCH_ARM64 ? BP_CFI_ARCH_ARM64
                                         : BP_CFI_ARCH_UNKNOWN;
    int ra = unw_ra_column(arch);
    for (size_t i = 0; i < rows->n; i++) {
        const unw_row *r = &rows->v[i];
        bool fresh = !out->nentries || starts_at(starts, r->start) ||
                     r->start != rows->v[i - 1].end;
        if (fresh) {
            if (!array_grow((void **)&out->entries, &out->entries_cap, out->nentries + 1,
                            sizeof *out->entries))
                goto nomem;
            out->entries[out->nentries++] =
                (bp_cfi_entry){.addr = r->start, .size = 0, .row0 = (uint32_t)out->nrows};
        }
        bp_cfi_entry *e = &out->entries[out->nentries - 1];
        e->size = r->end - e->addr;
        e->nrows++;
        if (!array_grow((void **)&out->rows, &out->rows_cap, out->nrows + 1, sizeof *out->rows) ||
            !array_grow((void **)&out->rules, &out->rules_cap, out->nrules + r->nrules + 1,
                        sizeof *out->rules))
            goto nomem;
        bp_cfi_row *br = &out->rows[out->nrows++];
        br->addr = r->start;
        br->cfa_reg = r->cfa_kind == UNW_CFA_REG_OFF ? r->cfa_reg : BP_REG_NONE;
        br->cfa_off = r->cfa_kind == UNW_CFA_REG_OFF ? r->cfa_off : 0;
        br->rule0 = (uint32_t)out->nrules;
        bool have_ra = false;
        bp_cfi_rule ra_rule = {0};
        for (unsigned k = 0; k < r->nrules; k++) {
            const unw_rule *u = &r->rules[k];
            bp_cfi_rule b = {.reg = u->reg, .kind = bp_kind_of(u->kind), .off = u->off};
            if ((int)u->reg == ra) {
                b.reg = BP_REG_RA;
                ra_rule = b;
                have_ra = true;
                continue;
            }
            if (u->kind == UNW_RULE_UNDEFINED) /* Breakpad has no spelling for it */
                continue;
            out->rules[out->nrules++] = b;
        }
        /* arm64: no rule for lr means the return address is still there */
        if (!have_ra && arch == UNW_ARCH_ARM64) {
            ra_rule = (bp_cfi_rule){.reg = BP_REG_RA, .kind = BP_RULE_REG, .off = UNW_A64_LR};
            have_ra = true;
        }
        if (have_ra && ra_rule.kind != BP_RULE_UNSUPPORTED) /* last: by register number */
            out->rules[out->nrules++] = ra_rule;
        br->nrules = (uint32_t)(out->nrules - br->rule0);
    }
    return SYMD_OK;
nomem:
    bp_cfi_free(out);
    return symd_fail(err, SYMD_E_NOMEM, "out of memory");
}

/* Contract in unwrows.h. */
symd_status bp_dump_cfi_unwind(void *ctx, const macho_image *binary, bp_cfi *out,
                               symd_err *err)
{
    unw_build_stats scratch, *stats = ctx ? ctx : &scratch;
    unw_arch arch;
    unw_rows rows = {0};
    unw_starts starts = {0};
    memset(out, 0, sizeof *out);
    symd_status st = unw_build_rows(binary, &arch, &rows, &starts, stats, err);
    if (st == SYMD_OK && arch != UNW_ARCH_NONE)
        st = bp_cfi_from_unwind(arch, &rows, &starts, out, err);
    unw_rows_free(&rows);
    free(starts.v);
    return st;
}

/* The stack walker (walk.h): CFI, frame pointers, bounded scanning. */
#include "walk.h"

#include <string.h>

unsigned unw_pc_reg(unw_arch arch)
{
    return arch == UNW_ARCH_ARM64 ? UNW_A64_PC : UNW_X86_RA;
}
unsigned unw_sp_reg(unw_arch arch)
{
    return arch == UNW_ARCH_ARM64 ? UNW_A64_SP : UNW_X86_RSP;
}
unsigned unw_fp_reg(unw_arch arch)
{
    return arch == UNW_ARCH_ARM64 ? UNW_A64_FP : UNW_X86_RBP;
}

const char *unw_trust_name(unw_trust t)
{
    static const char *const names[] = {"context", "cfi", "frame_pointer", "scan"};
    return (unsigned)t < 4 ? names[t] : "?";
}

const char *unw_stop_name(unw_stop s)
{
    static const char *const names[] = {"end", "low_pc", "sp_not_increasing", "max_frames",
                                        "bad_context"};
    return (unsigned)s < 5 ? names[s] : "?";
}

uint64_t unw_pac_mask_for(uint64_t addr)
{
    uint64_t m = 0xffffffffull;
    while (m < addr && m != ~0ull)
        m = m << 1 | 1;
    return m;
}

/* A pointer as the CPU would use it: arm64 signatures stripped. */
static uint64_t strip(const unw_walker *w, unw_arch arch, uint64_t v)
{
    if (arch != UNW_ARCH_ARM64)
        return v;
    return v & (w->pac_mask ? w->pac_mask : UNW_PAC_MASK_DEFAULT);
}

/* Registers whose value a callee preserves: the ones a caller frame keeps
 * when no rule says otherwise. */
static bool callee_saved(unw_arch arch, unsigned reg)
{
    if (arch == UNW_ARCH_X86_64)
        return reg == UNW_X86_RBX || reg == UNW_X86_RBP || (reg >= UNW_X86_R12 && reg <= UNW_X86_R15);
    return (reg >= UNW_A64_X19 && reg <= UNW_A64_FP);
}

/* Whether pc is an address in some image's code: past the image's Mach-O
 * header (a return address follows a call, so it is never among the
 * header's first UNW_HEADER_BYTES; stacks often hold an image's own load
 * address, which dyld passes around), and on arm64 on an instruction. */
static bool in_code(const unw_walker *w, unw_arch arch, uint64_t pc)
{
    unw_module m;
    if (pc < UNW_MIN_PC || (arch == UNW_ARCH_ARM64 && (pc & 3)))
        return false;
    return w->find(w->ctx, pc, &m) && pc >= m.base && pc - m.base >= UNW_HEADER_BYTES &&
           pc - m.base < m.size;
}

bool unw_step_cfi(const unw_walker *w, const unw_frame *callee, bool is_context,
                  unw_frame *caller)
{
    unw_arch arch = callee->regs.arch;
    uint64_t look = callee->pc - (is_context ? 0 : 1);
    unw_module m;
    unw_row row;
    if (!w->find(w->ctx, look, &m) || !m.rows || look < m.base ||
        !unw_table_find(m.rows, look - m.base, &row) || row.cfa_kind != UNW_CFA_REG_OFF)
        return false;
    uint64_t base, cfa;
    if (!unw_regs_get(&callee->regs, row.cfa_reg, &base))
        return false;
    cfa = base + (uint64_t)(int64_t)row.cfa_off;
    memset(caller, 0, sizeof *caller);
    caller->regs.arch = arch;
    /* Callee-saved registers without a rule keep their values. */
    for (unsigned r = 0; r < UNW_NREGS; r++) {
        uint64_t v;
        if (callee_saved(arch, r) && unw_regs_get(&callee->regs, r, &v))
            unw_regs_set(&caller->regs, r, v);
    }
    for (unsigned i = 0; i < row.nrules; i++) {
        const unw_rule *ru = &row.rules[i];
        uint64_t v;
        switch (ru->kind) {
        case UNW_RULE_AT_CFA:
            if (!w->read(w->ctx, cfa + (uint64_t)(int64_t)ru->off, &v))
                return false;
            break;
        case UNW_RULE_VAL_CFA:
            v = cfa + (uint64_t)(int64_t)ru->off;
            break;
        case UNW_RULE_REG:
            if (!unw_regs_get(&callee->regs, (unsigned)ru->off, &v))
                return false;
            break;
        case UNW_RULE_SAME:
            if (!unw_regs_get(&callee->regs, ru->reg, &v))
                continue;
            break;
        default: /* undefined, unsupported: the caller's value is unknown */
            if (ru->reg < UNW_NREGS) {
                caller->regs.r[ru->reg] = 0;
                caller->regs.valid &= ~(1ull << ru->reg);
            }
            if ((int)ru->reg == unw_ra_column(arch))
                return false; /* no return address: no caller */
            continue;
        }
        if (ru->reg < UNW_NREGS)
            unw_regs_set(&caller->regs, ru->reg, v);
    }
    /* The return address: the RA column's rule, or on arm64 lr itself. */
    uint64_t ra;
    int rac = unw_ra_column(arch);
    if (unw_row_rule(&row, (unsigned)rac)) {
        if (!unw_regs_get(&caller->regs, (unsigned)rac, &ra))
            return false;
    } else if (arch == UNW_ARCH_ARM64) {
        if (!unw_regs_get(&callee->regs, UNW_A64_LR, &ra))
            return false;
    } else {
        return false;
    }
    if (arch == UNW_ARCH_X86_64) /* column 16 is the pc, not a register */
        caller->regs.valid &= ~(1ull << UNW_X86_RA);
    caller->pc = strip(w, arch, ra);
    caller->sp = cfa;
    unw_regs_set(&caller->regs, unw_pc_reg(arch), caller->pc);
    unw_regs_set(&caller->regs, unw_sp_reg(arch), cfa);
    if (arch == UNW_ARCH_ARM64 && unw_regs_get(&caller->regs, UNW_A64_FP, &ra))
        unw_regs_set(&caller->regs, UNW_A64_FP, strip(w, arch, ra));
    caller->trust = UNW_TRUST_CFI;
    return true;
}

/* The caller by the frame-pointer chain. */
static bool step_fp(const unw_walker *w, const unw_frame *callee, unw_frame *caller)
{
    unw_arch arch = callee->regs.arch;
    uint64_t fp, saved_fp, ra;
    if (!unw_regs_get(&callee->regs, unw_fp_reg(arch), &fp))
        return false;
    fp = strip(w, arch, fp);
    /* The frame record lies on the stack at or above sp, 8-aligned. */
    if (fp < callee->sp || (fp & 7) || fp > UINT64_MAX - 16)
        return false;
    if (!w->read(w->ctx, fp, &saved_fp) || !w->read(w->ctx, fp + 8, &ra))
        return false;
    memset(caller, 0, sizeof *caller);
    caller->regs.arch = arch;
    caller->pc = strip(w, arch, ra);
    caller->sp = fp + 16;
    if (!in_code(w, arch, caller->pc))
        return false;
    unw_regs_set(&caller->regs, unw_fp_reg(arch), strip(w, arch, saved_fp));
    unw_regs_set(&caller->regs, unw_pc_reg(arch), caller->pc);
    unw_regs_set(&caller->regs, unw_sp_reg(arch), caller->sp);
    caller->trust = UNW_TRUST_FP;
    return true;
}

/* arm64, from the context frame only: the caller's pc is lr, as Breakpad's
 * frame-pointer step takes it. A leaf (most crashes in libsystem's string
 * and memory routines) keeps its return address in lr and neither pushes a
 * frame record nor moves sp, so its fp is still its caller's: the caller
 * keeps sp, fp and the callee-saved registers. Tried after CFI and the
 * frame record, before scanning: a function that has called since its
 * prologue holds a return address into itself in lr. */
static bool step_lr(const unw_walker *w, const unw_frame *callee, unw_frame *caller)
{
    uint64_t lr;
    if (callee->regs.arch != UNW_ARCH_ARM64 || !unw_regs_get(&callee->regs, UNW_A64_LR, &lr))
        return false;
    lr = strip(w, UNW_ARCH_ARM64, lr);
    if (!in_code(w, UNW_ARCH_ARM64, lr))
        return false;
    memset(caller, 0, sizeof *caller);
    caller->regs.arch = UNW_ARCH_ARM64;
    for (unsigned r = 0; r < UNW_NREGS; r++) {
        uint64_t v;
        if (callee_saved(UNW_ARCH_ARM64, r) && unw_regs_get(&callee->regs, r, &v))
            unw_regs_set(&caller->regs, r, v);
    }
    caller->pc = lr;
    caller->sp = callee->sp;
    unw_regs_set(&caller->regs, UNW_A64_PC, lr);
    unw_regs_set(&caller->regs, UNW_A64_SP, caller->sp);
    caller->trust = UNW_TRUST_FP;
    return true;
}

/* The caller by scanning the stack for a return address into code. */
static bool step_scan(const unw_walker *w, const unw_frame *callee, bool is_context,
                      unw_frame *caller)
{
    unw_arch arch = callee->regs.arch;
    size_t words = is_context ? 4 * UNW_SCAN_WORDS : UNW_SCAN_WORDS;
    /* From a frame found by CFI or the context, the words at sp are the
     * callee's; from a scanned frame its sp is already past its own
     * return address. */
    uint64_t at = callee->sp;
    for (size_t i = 0; i < words; i++, at += 8) {
        uint64_t v;
        if (at > UINT64_MAX - 8 || !w->read(w->ctx, at, &v))
            return false;
        v = strip(w, arch, v);
        if (!in_code(w, arch, v) || (w->function_start && w->function_start(w->ctx, v)))
            continue;
        memset(caller, 0, sizeof *caller);
        caller->regs.arch = arch;
        caller->pc = v;
        caller->sp = at + 8;
        /* The frame pointer survives if it still points into the stack
         * above the new sp (the callee saved and restored it). */
        uint64_t fp;
        if (unw_regs_get(&callee->regs, unw_fp_reg(arch), &fp) && fp >= caller->sp)
            unw_regs_set(&caller->regs, unw_fp_reg(arch), fp);
        unw_regs_set(&caller->regs, unw_pc_reg(arch), caller->pc);
        unw_regs_set(&caller->regs, unw_sp_reg(arch), caller->sp);
        caller->trust = UNW_TRUST_SCAN;
        return true;
    }
    return false;
}

unw_stop unw_walk(const unw_walker *w, const unw_regs *ctx, unw_frame *frames, size_t max,
                  size_t *n)
{
    *n = 0;
    if (max > UNW_MAX_FRAMES)
        max = UNW_MAX_FRAMES;
    unw_arch arch = ctx->arch;
    uint64_t pc, sp;
    if ((arch != UNW_ARCH_X86_64 && arch != UNW_ARCH_ARM64) ||
        !unw_regs_get(ctx, unw_pc_reg(arch), &pc) || !unw_regs_get(ctx, unw_sp_reg(arch), &sp))
        return UNW_STOP_BAD_CONTEXT;
    if (max == 0)
        return UNW_STOP_MAX_FRAMES;
    unw_frame *f = &frames[0];
    memset(f, 0, sizeof *f);
    f->regs = *ctx;
    f->pc = strip(w, arch, pc);
    f->sp = sp;
    f->trust = UNW_TRUST_CONTEXT;
    *n = 1;
    while (*n < max) {
        const unw_frame *callee = &frames[*n - 1];
        bool is_context = *n == 1;
        unw_frame caller;
        bool found = unw_step_cfi(w, callee, is_context, &caller);
        /* A CFI answer that breaks the stop rules is not trusted over the
         * other methods: a frame pointer or a scan may still do. */
        if (found && (caller.pc < UNW_MIN_PC || caller.sp < callee->sp ||
                      (caller.sp == callee->sp && !is_context)))
            found = false;
        /* A scanned frame may be a stale word that only looks like a return
         * address; a row applied to it leads anywhere. From one, CFI must
         * land in known code like the other methods. */
        if (found && callee->trust == UNW_TRUST_SCAN && !in_code(w, arch, caller.pc))
            found = false;
        if (!found)
            found = step_fp(w, callee, &caller);
        if (!found && is_context)
            found = step_lr(w, callee, &caller);
        if (!found)
            found = step_scan(w, callee, is_context, &caller);
        if (!found)
            return UNW_STOP_END;
        /* The stop rules, for whichever method answered. */
        if (caller.pc < UNW_MIN_PC)
            return UNW_STOP_LOW_PC;
        if (caller.sp < callee->sp || (caller.sp == callee->sp && !is_context))
            return UNW_STOP_SP;
        frames[(*n)++] = caller;
    }
    return UNW_STOP_MAX_FRAMES;
}

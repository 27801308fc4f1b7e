/* The stack walker: one thread's frames, innermost first, from its
 * register context, its stack memory and the unwind rows of the images
 * it runs in. One unwinder per CPU (x86_64, arm64) behind one interface;
 * nothing here knows minidumps or the store: the caller gives callbacks.
 *
 * Each caller frame is found by the first method that works, in order:
 *   cfi            the row (unwind.h) of the image holding the pc; for a
 *                  frame other than the context frame the pc is a return
 *                  address, so the row of pc-1 (the call) is used;
 *   frame_pointer  x86_64: caller rbp = [rbp], pc = [rbp+8], sp = rbp+16;
 *                  arm64: caller fp = [fp], pc = [fp+8], sp = fp+16;
 *   lr             arm64, from the context frame only: the caller's pc is
 *                  lr (a leaf keeps its return address there, as Breakpad
 *                  walks it), sp, fp and callee-saved registers unchanged;
 *   scan           the stack words above sp (UNW_SCAN_WORDS of them, four
 *                  times as many from the context frame) for the first value
 *                  that is an address in some image's code (module callback)
 *                  and not a known function's first byte (function_start).
 * A frame_pointer, lr or scan result must also point into known code, and so
 * must a cfi result whose callee was found by scanning (the row of a stale
 * word leads anywhere). Known code: inside an image (module callback) but
 * not among its first UNW_HEADER_BYTES (the Mach-O header, whose address
 * stacks often hold), and on arm64 4-byte aligned. An lr result's trust is
 * frame_pointer (Breakpad's name for it).
 *
 * Stop rules (unw_walk, all in one place): a caller pc below 4096; a
 * caller sp not above the callee's (equal allowed once, from the context
 * frame, for a leaf that has not moved sp); UNW_MAX_FRAMES frames; nothing
 * found by any method.
 *
 * arm64 pointer authentication: return addresses and saved fp/lr may carry
 * a signature in their high bits. Every pc and fp read from memory or lr is
 * masked with the walk's pac_mask: UNW_PAC_MASK_DEFAULT keeps bits 0..46
 * (macOS and iOS user space lies below 2^47); a caller who knows its images
 * can pass unw_pac_mask_for(highest image end) for a tighter mask.
 *
 * Example (from a minidump reader's thread, names illustrative):
 *
 *     static bool read_stack(void *ctx, uint64_t addr, uint64_t *out)
 *     {   // 8 bytes of the thread's stack memory at addr, false if absent
 *         dump_thread *t = ctx; ... }
 *     static bool find_module(void *ctx, uint64_t pc, unw_module *m)
 *     {   // the image whose code holds pc: its load address of __TEXT,
 *         // code size and unwind rows (NULL when only a dSYM is stored)
 *         ... m->base = mod->base; m->size = mod->size;
 *         m->rows = loaded->has_unwind ? &loaded->unwind : NULL; ... }
 *
 *     unw_regs regs = {.arch = UNW_ARCH_ARM64};
 *     unw_regs_set(&regs, UNW_A64_PC, ctx->pc);  // ... x0..x28, fp, lr, sp
 *     unw_walker w = {.read = read_stack, .find = find_module, .ctx = &t,
 *                     .pac_mask = UNW_PAC_MASK_DEFAULT};
 *     unw_frame frames[UNW_MAX_FRAMES];
 *     size_t n;
 *     unw_stop why = unw_walk(&w, &regs, frames, UNW_MAX_FRAMES, &n);
 *     // frames[0] is the context frame; frames[i].pc - (i > 0) is the call
 *     // to symbolicate; frames[i].trust says how it was found.
 */
#ifndef SYMD_UNWIND_WALK_H
#define SYMD_UNWIND_WALK_H

#include "unwind.h"

/* Registers by DWARF number (unwind.h); the pc at UNW_X86_RA (16) on x86_64
 * and UNW_A64_PC (32) on arm64. */
#define UNW_NREGS 33
typedef struct {
    unw_arch arch;
    uint64_t r[UNW_NREGS];
    uint64_t valid; /* bit i: r[i] is known */
} unw_regs;

static inline void unw_regs_set(unw_regs *g, unsigned reg, uint64_t v)
{
    if (reg < UNW_NREGS) {
        g->r[reg] = v;
        g->valid |= 1ull << reg;
    }
}
static inline bool unw_regs_get(const unw_regs *g, unsigned reg, uint64_t *v)
{
    if (reg >= UNW_NREGS || !(g->valid >> reg & 1))
        return false;
    *v = g->r[reg];
    return true;
}
/* The pc, sp and frame-pointer registers of arch. */
unsigned unw_pc_reg(unw_arch arch);
unsigned unw_sp_reg(unw_arch arch);
unsigned unw_fp_reg(unw_arch arch);

typedef enum {
    UNW_TRUST_CONTEXT = 0, /* the thread's own registers */
    UNW_TRUST_CFI = 1,
    UNW_TRUST_FP = 2,
    UNW_TRUST_SCAN = 3,
} unw_trust;
/* "context", "cfi", "frame_pointer", "scan". */
const char *unw_trust_name(unw_trust t);

/* What the module callback says of an address. */
typedef struct {
    uint64_t base;          /* load address of the image's __TEXT start */
    uint64_t size;          /* bytes of code from base (its __TEXT size) */
    const unw_table *rows;  /* its unwind rows; NULL: none known */
} unw_module;

typedef struct {
    /* Reads the 8 little-endian bytes at addr of the thread's memory. */
    bool (*read)(void *ctx, uint64_t addr, uint64_t *out);
    /* The image holding addr in its code, false when none does. */
    bool (*find)(void *ctx, uint64_t addr, unw_module *out);
    void *ctx;
    uint64_t pac_mask; /* arm64; 0 means UNW_PAC_MASK_DEFAULT */
    /* Optional: whether addr is the first byte of a known function. A
     * scanned word there is a function pointer (dyld passes main's),
     * never a return address, which follows a call. NULL: not known. */
    bool (*function_start)(void *ctx, uint64_t addr);
} unw_walker;

#define UNW_PAC_MASK_DEFAULT 0x00007fffffffffffull
/* The smallest all-ones mask covering addr (at least 2^32 - 1). */
uint64_t unw_pac_mask_for(uint64_t addr);

typedef struct {
    uint64_t pc, sp;
    unw_trust trust;
    unw_regs regs; /* what is known of this frame's registers */
} unw_frame;

#define UNW_MAX_FRAMES 512
#define UNW_SCAN_WORDS 40
#define UNW_MIN_PC 4096
#define UNW_HEADER_BYTES 32 /* sizeof(struct mach_header_64) */

/* Why a walk ended. */
typedef enum {
    UNW_STOP_END = 0,        /* no method found a caller */
    UNW_STOP_LOW_PC = 1,     /* a caller pc below UNW_MIN_PC (the outermost frame) */
    UNW_STOP_SP = 2,         /* a caller sp not above the callee's */
    UNW_STOP_MAX_FRAMES = 3, /* max frames (or UNW_MAX_FRAMES) reached */
    UNW_STOP_BAD_CONTEXT = 4 /* the context has no pc or sp, or an unknown arch */
} unw_stop;
const char *unw_stop_name(unw_stop s);

/* Walks one thread from ctx: frames[0] is the context frame, then each
 * caller; *n frames are written (at most max, at most UNW_MAX_FRAMES).
 * Bounded: every step reads at most 4 x UNW_SCAN_WORDS words. */
unw_stop unw_walk(const unw_walker *w, const unw_regs *ctx, unw_frame *frames, size_t max,
                  size_t *n);

/* One step: the caller of callee by CFI alone (the row of the image holding
 * callee's pc, or pc-1 when !is_context), false when there is no row, its
 * CFA is unsupported or a value it needs cannot be read. Exposed for
 * tests and for walkers of other layouts. */
bool unw_step_cfi(const unw_walker *w, const unw_frame *callee, bool is_context,
                  unw_frame *caller);

#endif

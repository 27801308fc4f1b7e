/* The fallback stack walker (see walk.h): the context frame, then the
 * frame-pointer chain through the thread's own stack memory. */
#include "walk.h"

#include <string.h>

const char *md_trust_name(md_trust t)
{
    switch (t) {
    case MD_TRUST_CONTEXT: return "context";
    case MD_TRUST_CFI: return "cfi";
    case MD_TRUST_FRAME_POINTER: return "frame_pointer";
    case MD_TRUST_SCAN: return "scan";
    default: return "none";
    }
}

/* The 8 bytes at addr within the thread's stack memory. */
static bool stack_u64(const md_memory *s, uint64_t addr, uint64_t *v)
{
    if (!s || addr < s->base || addr - s->base > s->len || s->len - (addr - s->base) < 8)
        return false;
    const uint8_t *p = s->bytes + (addr - s->base);
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--)
        x = x << 8 | p[i];
    *v = x;
    return true;
}

symd_status md_walk_frame_pointer(void *self, const md_walk_input *in, md_frame *out,
                                  size_t cap, size_t *n, symd_err *err)
{
    (void)self;
    (void)err;
    *n = 0;
    const md_context *c = in->ctx;
    if (!cap || c->cpu == MD_CPU_UNKNOWN)
        return SYMD_OK;
    if (cap > MD_WALK_MAX_FRAMES)
        cap = MD_WALK_MAX_FRAMES;
    bool arm = c->cpu == MD_CPU_ARM64;
    md_frame f = {md_context_pc(c), md_context_sp(c), md_context_fp(c), MD_TRUST_CONTEXT};
    uint64_t lr = arm ? c->regs[MD_ARM64_LR] & MD_ARM64_PAC_MASK : 0;
    if (f.pc < MD_WALK_MIN_PC)
        return SYMD_OK; /* not even a context frame: no code there */
    out[(*n)++] = f;
    while (*n < cap) {
        md_frame caller = {0, 0, 0, MD_TRUST_FRAME_POINTER};
        uint64_t saved_fp, saved_ret;
        /* the frame record {saved fp, return address} at fp, on the stack */
        if (f.fp > UINT64_MAX - 16 || !stack_u64(in->stack, f.fp, &saved_fp) ||
            !stack_u64(in->stack, f.fp + 8, &saved_ret))
            break;
        caller.fp = saved_fp;
        caller.sp = f.fp + 16;
        if (arm) {
            caller.pc = lr;
            lr = saved_ret & MD_ARM64_PAC_MASK;
        } else {
            caller.pc = saved_ret;
        }
        if (caller.pc < MD_WALK_MIN_PC || caller.sp <= f.sp)
            break;
        out[(*n)++] = caller;
        f = caller;
    }
    return SYMD_OK;
}

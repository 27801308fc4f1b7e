/* The seam between a minidump's threads and a stack walker: what a walker
 * is given per thread and what it gives back, and the built-in fallback
 * walker (the context frame, then the frame-pointer chain). A walker that
 * reads unwind tables (unwind/) plugs in here with the same signature. */
#ifndef SYMD_MD_WALK_H
#define SYMD_MD_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "minidump.h"

/* How a frame was found, best first. */
typedef enum {
    MD_TRUST_NONE = 0,
    MD_TRUST_CONTEXT,       /* the thread's registers: the pc itself */
    MD_TRUST_CFI,           /* the unwind tables of the image holding the callee */
    MD_TRUST_FRAME_POINTER, /* the saved frame pointer and return address */
    MD_TRUST_SCAN,          /* a word on the stack that points into code */
} md_trust;

/* "context", "cfi", "frame_pointer", "scan"; "none". */
const char *md_trust_name(md_trust t);

typedef struct {
    uint64_t pc;   /* the return address for callers (not pc - 1) */
    uint64_t sp, fp;
    md_trust trust;
} md_frame;

/* The stop rules every walker keeps, in one place: a walk ends at the
 * first frame that breaks one, that frame left out.
 *   - pc below MD_WALK_MIN_PC (a null or small value is no code);
 *   - the stack pointer of a caller not above its callee's (the stack
 *     grows down: a walk that does not move up loops);
 *   - a frame pointer or a saved value outside the thread's stack memory
 *     (nothing to read there);
 *   - MD_WALK_MAX_FRAMES frames. */
#define MD_WALK_MIN_PC 4096
#define MD_WALK_MAX_FRAMES 512

/* arm64 pointer authentication signs return addresses in their high bits;
 * macOS and iOS user space lives below 2^36 (64 GiB of address space for a
 * process's images and stacks), so those bits are cleared with this mask
 * before a saved lr is used as a pc. */
#define MD_ARM64_PAC_MASK 0x0000000FFFFFFFFFull

/* What a walker is given for one thread. */
typedef struct {
    const minidump *dump;    /* every memory range (minidump_read_memory) and module */
    const md_context *ctx;   /* the thread's registers at the crash */
    const md_memory *stack;  /* the thread's stack memory, NULL when the dump has none */
    /* The module holding addr (index into dump->modules), -1 when none:
     * where a walker finds the unwind tables of a pc. */
    long (*module_at)(const minidump *dump, uint64_t addr);
} md_walk_input;

/* A walker: writes at most cap frames, innermost first, into out and their
 * number into *n. The first frame is the context's (trust context). Fails
 * only for memory (SYMD_E_NOMEM); a walk that cannot go on simply stops.
 * self: the walker's own state (e.g. a store of unwind tables). */
typedef symd_status (*md_walk_fn)(void *self, const md_walk_input *in, md_frame *out,
                                  size_t cap, size_t *n, symd_err *err);

/* The fallback walker: the context frame, then the frame-pointer chain.
 * x86_64: caller rip = [rbp + 8], caller rbp = [rbp], caller rsp = rbp + 16.
 * arm64 (as Breakpad walks it): the caller's pc is the callee's lr (the
 * context's lr register for the first caller, a leaf function keeps its
 * return address there), then caller fp = [fp], caller lr = [fp + 8],
 * caller sp = fp + 16; every lr masked with MD_ARM64_PAC_MASK. Reads only
 * the thread's stack memory. self is unused. */
symd_status md_walk_frame_pointer(void *self, const md_walk_input *in, md_frame *out,
                                  size_t cap, size_t *n, symd_err *err);

#endif

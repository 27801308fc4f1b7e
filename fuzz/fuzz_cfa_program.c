/* libFuzzer target: __eh_frame CIE/FDE parsing and the CFA program
 * evaluator over arbitrary bytes (the first byte picks the arch), the
 * table of the rows, and a walk over a stack made of the same bytes with
 * those rows: every path ends, nothing reads outside its buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../unwind/ehframe.h"
#include "../unwind/unwind.h"
#include "../unwind/walk.h"

typedef struct {
    const uint8_t *p;
    size_t n;
    const unw_table *t;
} mem;

#define BASE 0x100000000ull
#define STACK 0x7000000000ull

static bool rd(void *ctx, uint64_t addr, uint64_t *out)
{
    mem *m = ctx;
    if (addr < STACK || addr - STACK > m->n || m->n - (addr - STACK) < 8)
        return false;
    memcpy(out, m->p + (addr - STACK), 8);
    return true;
}

static bool find(void *ctx, uint64_t addr, unw_module *out)
{
    mem *m = ctx;
    if (addr < BASE || addr - BASE >= 0x100000)
        return false;
    out->base = BASE, out->size = 0x100000, out->rows = m->t;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unw_arch arch = data[0] & 1 ? UNW_ARCH_ARM64 : UNW_ARCH_X86_64;
    data++, size--;
    /* the section is loaded right after the code, as linkers place it */
    unw_eh eh = {data, size, BASE + 0x8000, BASE, arch, NULL, NULL};
    unw_rows rows = {0};
    unw_diag diag = {0};
    size_t off = 0, records = 0;
    while (off < size && records++ < 10000) {
        unw_eh_kind kind;
        size_t next;
        symd_err err = {0};
        if (unw_eh_record(&eh, off, &kind, &next, &err) != SYMD_OK || next <= off)
            break;
        unw_fde f;
        unw_cie c;
        if (kind == UNW_EH_FDE && unw_eh_fde(&eh, off, &f, &c, &err) == SYMD_OK) {
            size_t before = rows.n;
            if (unw_eh_rows(&eh, &f, &c, &rows, &diag, &err) != SYMD_OK && rows.n != before)
                __builtin_trap(); /* an error leaves no half FDE */
        }
        off = next;
    }
    unw_rows_normalize(&rows, &diag);
    uint8_t *blob;
    size_t len;
    symd_err err = {0};
    if (unw_table_build(arch, &rows, 0, &blob, &len, &err) == SYMD_OK) {
        unw_table tb;
        if (unw_table_open(blob, len, &tb, &err) != SYMD_OK)
            __builtin_trap();
        mem m = {data, size, &tb};
        unw_walker w = {rd, find, &m, 0};
        unw_regs regs = {.arch = arch};
        uint64_t pc = rows.n ? BASE + rows.v[0].start : BASE + 0x10;
        unw_regs_set(&regs, unw_pc_reg(arch), pc);
        unw_regs_set(&regs, unw_sp_reg(arch), STACK);
        unw_regs_set(&regs, unw_fp_reg(arch), STACK + 16);
        if (arch == UNW_ARCH_ARM64)
            unw_regs_set(&regs, UNW_A64_LR, BASE + 0x20);
        static unw_frame frames[UNW_MAX_FRAMES];
        size_t n;
        unw_walk(&w, &regs, frames, UNW_MAX_FRAMES, &n);
        for (size_t i = 1; i < n; i++)
            if (frames[i].sp < frames[i - 1].sp || frames[i].pc < UNW_MIN_PC)
                __builtin_trap(); /* the stop rules hold */
        free(blob);
    }
    unw_rows_free(&rows);
    return 0;
}

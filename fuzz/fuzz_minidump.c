/* libFuzzer target: the minidump reader and the frame-pointer walker over
 * arbitrary bytes (seeded from ../shared/minidumps), then the whole report
 * path with the checks of fuzz_crash_text.c. The reader gives a model or
 * an input error; a model's memory ranges are sorted, apart and inside the
 * input, every stack inside the input, every read through
 * minidump_read_memory bounded; a walk keeps the stop rules of walk.h. An
 * input that does not start with "MDMP" gets it, so mutations spend their
 * time past the magic. */
#include <stdlib.h>
#include <string.h>

#include "../minidump/minidump.h"
#include "../minidump/walk.h"

#define LLVMFuzzerTestOneInput crash_text_one
#include "fuzz_crash_text.c"
#undef LLVMFuzzerTestOneInput

static bool inside(const uint8_t *p, size_t n, const uint8_t *buf, size_t size)
{
    return p >= buf && n <= size && (size_t)(p - buf) <= size - n;
}

static void check_dump(const uint8_t *buf, size_t size)
{
    minidump d;
    symd_err err = {0};
    symd_status st = minidump_read(buf, size, &d, &err);
    if (st != SYMD_OK) {
        if (st != SYMD_E_CORRUPT && st != SYMD_E_NOT_CRASH_REPORT && st != SYMD_E_NOMEM)
            __builtin_trap();
        if (d.nthreads || d.nmodules || d.threads || d.warnings)
            __builtin_trap(); /* refused whole */
        return;
    }
    if (d.nthreads > MD_MAX_THREADS || d.nmodules > MD_MAX_MODULES ||
        d.nregions > MD_MAX_REGIONS + MD_MAX_THREADS || d.nannotations > MD_MAX_ANNOTATIONS)
        __builtin_trap();
    for (size_t i = 0; i < d.nregions; i++) {
        const md_memory *m = &d.regions[i];
        if (!inside(m->bytes, m->len, buf, size) || m->base > UINT64_MAX - m->len ||
            (i && m->base < d.regions[i - 1].base + d.regions[i - 1].len))
            __builtin_trap();
        uint8_t b[16];
        if (m->len >= 16 && !minidump_read_memory(&d, m->base + m->len - 16, 16, b))
            __builtin_trap();
        if (minidump_read_memory(&d, m->base + m->len - 1, 2, b))
            __builtin_trap(); /* a read past a range's end (reads never span two) */
    }
    md_frame fr[MD_WALK_MAX_FRAMES];
    for (size_t t = 0; t < d.nthreads; t++) {
        const md_thread *th = &d.threads[t];
        if (th->has_stack && !inside(th->stack.bytes, th->stack.len, buf, size))
            __builtin_trap();
        if (!th->has_context)
            continue;
        md_walk_input in = {&d, &th->ctx, th->has_stack ? &th->stack : NULL, minidump_module_at};
        size_t n = 0;
        if (md_walk_frame_pointer(NULL, &in, fr, MD_WALK_MAX_FRAMES, &n, &err) != SYMD_OK ||
            n > MD_WALK_MAX_FRAMES)
            __builtin_trap();
        for (size_t i = 0; i < n; i++)
            if (fr[i].pc < MD_WALK_MIN_PC || (i && fr[i].sp <= fr[i - 1].sp) ||
                fr[i].trust != (i ? MD_TRUST_FRAME_POINTER : MD_TRUST_CONTEXT))
                __builtin_trap();
    }
    for (size_t i = 0; i < d.nannotations; i++)
        if (!d.annotations[i].key || !d.annotations[i].value ||
            d.annotations[i].module >= (long)d.nmodules)
            __builtin_trap();
    minidump_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 4 && memcmp(data, "MDMP", 4) == 0) {
        check_dump(data, size);
        return crash_text_one(data, size);
    }
    uint8_t *buf = malloc(size + 4);
    if (!buf)
        return 0;
    memcpy(buf, "MDMP", 4);
    if (size)
        memcpy(buf + 4, data, size);
    check_dump(buf, size + 4);
    crash_text_one(buf, size + 4);
    free(buf);
    return 0;
}

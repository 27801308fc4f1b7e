/* libFuzzer target: crash_parse over arbitrary bytes, seeded from sample, spindump,
 * microstackshot and legacy stackshot text (parser/crash_sample.c). Whatever comes in, the
 * answer is a model or an input error; a model's call trees are in pre-order, its indexes in
 * range, a frame of a process resolves only to that process's images (or to the kernel
 * images of no process a Kextstat table lists); and the model renders
 * as text (fuzz_crash_text.c's checks, every tree node rewritten). */
#define LLVMFuzzerTestOneInput text_checks
#include "fuzz_crash_text.c"
#undef LLVMFuzzerTestOneInput

static void check_model(const crash_report *r)
{
    size_t sum = 0;
    if (r->crashed_thread >= (long)r->nthreads)
        __builtin_trap();
    for (size_t i = 0; i < r->nimages; i++)
        if (r->images[i].process < -1 || r->images[i].process >= (long)r->nprocesses)
            __builtin_trap();
    bool mine = r->kind == CRASH_KIND_SAMPLE || r->kind == CRASH_KIND_SPINDUMP;
    for (size_t i = 0; i < r->nthreads; i++) {
        const crash_thread *t = &r->threads[i];
        if (t->process < -1 || t->process >= (long)r->nprocesses)
            __builtin_trap();
        for (size_t k = 0; k < t->nframes; k++, sum++) {
            const crash_frame *f = &t->frames[k];
            if (f->image < -1 || f->image >= (long)r->nimages)
                __builtin_trap(); /* image indexes stay inside images */
            if (t->is_tree && (k ? f->depth > t->frames[k - 1].depth + 1 : f->depth != 0))
                __builtin_trap(); /* pre-order: each node at most one deeper than the last */
            if (f->depth >= CRASH_MAX_DEPTH)
                __builtin_trap();
            if (mine && f->image >= 0 && r->images[f->image].process != t->process &&
                r->images[f->image].process != -1)
                __builtin_trap(); /* resolved within the thread's own process, or to an
                                     image of none (a Kextstat kext) */
        }
    }
    if (sum != r->total_frames || r->nwarnings > CRASH_MAX_WARNINGS)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    text_checks(data, size);
    crash_report r;
    symd_err err = {0};
    if (crash_parse(data, size, &r, &err) == SYMD_OK)
        check_model(&r);
    crash_report_free(&r);
    return 0;
}

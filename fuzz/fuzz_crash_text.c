/* libFuzzer target: crash_parse over arbitrary bytes, seeded from text .crash reports. Whatever
 * comes in, the answer is a model or an input error, never anything else; a model's indexes
 * stay in range and its frames' positions inside the input; and the text rendering of the model
 * (as reported, and with every frame symbolicated, which rewrites every line the model placed)
 * is made or refused for size, always valid UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../parser/crash.h"
#include "../server/crashsym.h"
#include "../util/util.h"
#include "render_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    crash_report r;
    symd_err err = {0};
    symd_status st = crash_parse(data, size, &r, &err);
    if (st != SYMD_OK && st != SYMD_E_CORRUPT && st != SYMD_E_TOO_LARGE &&
        st != SYMD_E_NOT_CRASH_REPORT && st != SYMD_E_NOMEM)
        __builtin_trap();
    if (st == SYMD_OK) {
        size_t sum = 0;
        for (size_t i = 0; i < r.nthreads; i++) {
            const crash_thread *t = &r.threads[i];
            if (t->has_list && !(t->list_off < t->list_end && t->list_end <= size))
                __builtin_trap();
            for (size_t k = 0; k < t->nframes; k++, sum++) {
                const crash_frame *f = &t->frames[k];
                if (f->image >= (long)r.nimages)
                    __builtin_trap(); /* image indexes stay inside images */
                if (f->src != CRASH_SRC_NONE &&
                    !(f->line_off <= f->desc_off && f->desc_off <= f->desc_end &&
                      f->desc_end <= f->line_end && f->line_end <= size))
                    __builtin_trap(); /* a frame's line lies inside the input */
            }
        }
        if (sum != r.total_frames || r.crashed_thread >= (long)r.nthreads)
            __builtin_trap();
        check_render(&r, data, size);
    }
    crash_report_free(&r);
    return 0;
}

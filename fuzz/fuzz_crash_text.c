/* libFuzzer target: crash_parse over arbitrary bytes, seeded from text .crash reports. Whatever
 * comes in, the answer is a model or an input error, never anything else. */
#include <stdint.h>
#include <stdlib.h>

#include "../parser/crash.h"

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
        for (size_t i = 0; i < r.nthreads; i++)
            for (size_t k = 0; k < r.threads[i].nframes; k++, sum++)
                if (r.threads[i].frames[k].image >= (long)r.nimages)
                    __builtin_trap(); /* image indexes stay inside images */
        if (sum != r.total_frames || r.crashed_thread >= (long)r.nthreads)
            __builtin_trap();
    }
    crash_report_free(&r);
    return 0;
}

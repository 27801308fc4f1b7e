/* libFuzzer target: crash_parse_all over arbitrary bytes, seeded from MetricKit
 * payloads, bare call-stack trees and App Store Connect diagnostic logs.
 * Whatever comes in, the answer is reports or an input error; every report's
 * indexes stay in range, its frame count adds up, a tree's depths step by
 * at most one, crash_parse_part reads each part again the same, and the
 * text rendering is made or refused for size, always valid UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../parser/crash.h"
#include "../server/crashsym.h"
#include "../util/util.h"
#include "render_check.h"

static void check_report(const crash_report *r)
{
    size_t sum = 0;
    for (size_t i = 0; i < r->nthreads; i++) {
        const crash_thread *t = &r->threads[i];
        for (size_t k = 0; k < t->nframes; k++, sum++) {
            const crash_frame *f = &t->frames[k];
            if (f->image >= (long)r->nimages)
                __builtin_trap();
            if (t->is_tree && k && f->depth > t->frames[k - 1].depth + 1)
                __builtin_trap();
            if (t->is_tree && !k && f->depth != 0)
                __builtin_trap();
        }
    }
    if (sum != r->total_frames || r->crashed_thread >= (long)r->nthreads ||
        r->total_frames > CRASH_MAX_FRAMES)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    crash_report *rs = NULL;
    size_t n = 0;
    symd_err err = {0};
    symd_status st = crash_parse_all(data, size, &rs, &n, &err);
    if (st != SYMD_OK && st != SYMD_E_CORRUPT && st != SYMD_E_TOO_LARGE &&
        st != SYMD_E_NOT_CRASH_REPORT && st != SYMD_E_NOMEM)
        __builtin_trap();
    if (st == SYMD_OK) {
        if (!n)
            __builtin_trap();
        for (size_t i = 0; i < n; i++) {
            check_report(&rs[i]);
            if (i < 3) {
                crash_report one;
                symd_err e2 = {0};
                if (crash_parse_part(data, size, i, &one, &e2) != SYMD_OK ||
                    one.total_frames != rs[i].total_frames || one.kind != rs[i].kind)
                    __builtin_trap();
                crash_report_free(&one);
                check_render(&rs[i], data, size);
            }
        }
    }
    crash_reports_free(rs, n);
    return 0;
}

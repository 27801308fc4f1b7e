/* The text rendering check the crash-report fuzz targets share: a model
 * renders (as reported, and with every frame symbolicated with an inlined
 * level, which rewrites every line the model placed) or is refused for
 * size, and what it renders is valid UTF-8. Included by one target each. */
#ifndef SYMD_FUZZ_RENDER_CHECK_H
#define SYMD_FUZZ_RENDER_CHECK_H

#include <stdint.h>
#include <stdlib.h>

#include "../parser/crash.h"
#include "../server/crashsym.h"
#include "../util/dynbuf.h"
#include "../util/util.h"

static void check_utf8(const dynbuf *b)
{
    const unsigned char *p = b->data, *end = p + b->len;
    while (p < end) {
        size_t k = utf8_seq_len(p, end);
        if (!k)
            __builtin_trap();
        p += k;
    }
}

static void check_render(const crash_report *r, const uint8_t *data, size_t size)
{
    crash_symframe *sf = calloc(r->total_frames ? r->total_frames : 1, sizeof *sf);
    crash_level lv[2] = {{"inl", "inl", false, 0, "/a/i.c", 3, 1, true},
                         {"fn", "fn", true, 12, "/a/f.c", 9, 2, false}};
    for (size_t i = 0; i < r->total_frames; i++)
        sf[i] = (crash_symframe){CSYM_SYMBOLICATED, "img", lv, 1 + i % 2};
    crash_symbolication s = {.frames = sf};
    for (int with_s = 0; with_s < 2; with_s++) {
        dynbuf b;
        dynbuf_init(&b, 64u << 20);
        symd_err err = {0};
        symd_status st = crash_render_text(r, with_s ? &s : NULL, data, size, &b, &err);
        if (st != SYMD_OK && st != SYMD_E_TOO_LARGE && st != SYMD_E_NOMEM)
            __builtin_trap();
        if (st == SYMD_OK)
            check_utf8(&b);
        dynbuf_free(&b);
    }
    free(sf);
}

#endif

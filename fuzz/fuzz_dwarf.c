/* libFuzzer target: the DWARF reader and line index over arbitrary section
 * contents. The input is a little container so mutations land in DWARF, not
 * in Mach-O headers (fuzz/dwarf_container.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../dsym/lineindex.h"
#include "dwarf_container.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    macho_section sects[10];
    macho_image img;
    uint64_t lo, hi;
    if (!dwarf_container_image(data, size, sects, &img, &lo, &hi))
        return 0;
    uint8_t *blob = NULL;
    size_t blen;
    lineindex_stats st;
    symd_err err = {0};
    if (lineindex_build(&img, NULL, 1u << 26, &blob, &blen, &st, &err) == SYMD_OK && blob) {
        lineindex ix;
        if (lineindex_open(blob, blen, &ix, &err) != SYMD_OK)
            __builtin_trap(); /* our own builder must produce valid blobs */
        for (uint64_t a = lo; a < hi && a < lo + 0x4000; a += 3) {
            linelook look;
            if (lineindex_lookup(&ix, a, &look) && (look.n == 0 || look.n > LINEINDEX_MAX_DEPTH + 1))
                __builtin_trap();
        }
        /* A damaged stored blob must be refused or read safely. */
        blob[blen / 2] ^= 0x5a;
        if (lineindex_open(blob, blen, &ix, &err) == SYMD_OK) {
            linelook look;
            for (uint64_t a = lo; a < lo + 0x400; a += 4)
                lineindex_lookup(&ix, a, &look);
        }
    }
    free(blob);
    return 0;
}

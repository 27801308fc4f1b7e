/* libFuzzer target: the Mach-O reader and symbol index over arbitrary bytes,
 * exactly as an upload runs them (slices → images → index → lookups). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../macho/macho.h"
#include "../dsym/lineindex.h"
#include "../macho/symindex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    macho_slice sl[MACHO_MAX_SLICES];
    size_t n;
    symd_err err = {0};
    if (macho_parse_slices(data, size, sl, &n, &err) != SYMD_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        macho_image img;
        symd_err_clear(&err);
        if (macho_parse_image(data + sl[i].offset, (size_t)sl[i].size, &img, &err) != SYMD_OK)
            continue;
        (void)macho_arch_name(img.cputype, img.cpusubtype);
        uint8_t *blob = NULL;
        size_t blen;
        if (symindex_build(&img, &blob, &blen, NULL, NULL, &err) == SYMD_OK) {
            symindex idx;
            if (symindex_open(blob, blen, &idx, &err) != SYMD_OK)
                __builtin_trap(); /* our own builder must produce valid blobs */
            uint64_t base = macho_text_vmaddr(&img);
            for (uint64_t a = base; a < base + 0x2000; a += 0x33) {
                symlook look;
                symindex_lookup(&idx, a, &look);
                if (look.status == SYMLOOK_SYMBOL && !look.name)
                    __builtin_trap();
            }
            /* The blob read back from a damaged store must be refused, not
             * trusted: flip a byte and reopen. */
            if (blen > 40) {
                blob[blen / 2] ^= 0x5a;
                symindex_open(blob, blen, &idx, &err);
            }
        }
        free(blob);
        /* DWARF inside the slice (dSYM seeds), as an upload converts it. */
        uint8_t *lines = NULL;
        size_t llen;
        lineindex_stats lst;
        symd_err_clear(&err);
        if (lineindex_build(&img, NULL, 1u << 26, &lines, &llen, &lst, &err) == SYMD_OK && lines) {
            lineindex ix;
            if (lineindex_open(lines, llen, &ix, &err) != SYMD_OK)
                __builtin_trap();
        }
        free(lines);
        macho_image_free(&img);
    }
    return 0;
}

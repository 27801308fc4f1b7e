/* libFuzzer target: the dyld shared cache reader over arbitrary bytes. The
 * input is the main cache, alone and once more given as its own subcache
 * (".1", ".01") or .symbols file, so the subcache and local-symbol paths run
 * too (a header may name its own UUID). Every image of a cache accepted must
 * give its symbols and a valid index. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../macho/dyld_cache.h"
#include "../macho/symindex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *sfx[] = {".1", ".01", ".symbols"};
    dyld_cache_suffix *want;
    size_t nwant;
    symd_err err = {0};
    dyld_cache_file main_file = {"fuzz", "", data, size};
    if (dyld_cache_suffixes(&main_file, &want, &nwant, &err) == SYMD_OK)
        free(want);
    for (int k = -1; k < 3; k++) {
        dyld_cache_file f[2] = {main_file, {"fuzz-2", k >= 0 ? sfx[k] : "", data, size}};
        dyld_cache c;
        symd_err_clear(&err);
        if (dyld_cache_open(f, k >= 0 ? 2 : 1, &c, &err) != SYMD_OK) {
            if (!err.msg[0])
                __builtin_trap(); /* every refusal says why */
            continue;
        }
        for (size_t i = 0; i < c.nimages; i++) {
            uint8_t *blob = NULL;
            size_t blen;
            symd_err_clear(&err);
            symd_status st = dyld_cache_image_symindex(&c, i, &blob, &blen, NULL, NULL, &err);
            /* open checked every symbol: only a size limit may refuse now */
            if (st != SYMD_OK && st != SYMD_E_UNSUPPORTED && st != SYMD_E_NOMEM)
                __builtin_trap();
            if (st == SYMD_OK) {
                symindex idx;
                if (symindex_open(blob, blen, &idx, &err) != SYMD_OK)
                    __builtin_trap();
                symlook look;
                symindex_lookup(&idx, c.images[i].text_vmaddr + 0x10, &look);
            }
            free(blob);
        }
        dyld_cache_close(&c);
    }
    return 0;
}

/* libFuzzer target: symd upload's recogniser (client/walk.c) over arbitrary
 * bytes: Mach-O and fat headers and load commands, Breakpad MODULE lines,
 * and zips whose members are streamed for their first bytes and load
 * commands. Every item it reports must be well formed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../client/walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    up_file f = {0};
    up_recognise_buf(data, size, &f);
    if (f.kind == UP_REFUSED && f.nitems)
        __builtin_trap(); /* a refused file carries no items */
    if ((f.kind == UP_MACHO || f.kind == UP_SYM || f.kind == UP_ZIP) && !f.nitems)
        __builtin_trap(); /* a recognised file carries at least one image */
    for (size_t i = 0; i < f.nitems; i++)
        if (memchr(f.items[i].arch, 0, sizeof f.items[i].arch) == NULL)
            __builtin_trap(); /* arch is a C string */
    if (memchr(f.err, 0, sizeof f.err) == NULL)
        __builtin_trap();
    free(f.items);
    return 0;
}

/* The fuzz_dwarf input format, shared with the test that replays fuzz/regress:
 *   u64 code_lo, u64 code_hi, u32 len[9], then the nine sections' bytes in
 *   the order __debug_info, _abbrev, _line, _str, _line_str, _str_offs,
 *   _addr, _ranges, _rnglists (fuzz/make_dwarf_seeds.py writes real ones).
 * It becomes a macho_image whose sections point into data. */
#ifndef SYMD_DWARF_CONTAINER_H
#define SYMD_DWARF_CONTAINER_H

#include <string.h>

#include "../macho/macho.h"
#include "../util/cursor.h"

/* false when data is too short; sects needs 10 slots. */
static inline bool dwarf_container_image(const uint8_t *data, size_t size,
                                         macho_section sects[10], macho_image *img,
                                         uint64_t *lo, uint64_t *hi)
{
    static const char *const names[9] = {
        "__debug_info", "__debug_abbrev", "__debug_line", "__debug_str",
        "__debug_line_str", "__debug_str_offs", "__debug_addr", "__debug_ranges",
        "__debug_rnglists"};
    if (size < 52)
        return false;
    *lo = ld_u64le(data);
    *hi = ld_u64le(data + 8);
    if (*hi <= *lo || *hi - *lo > (1u << 24))
        *hi = *lo + 0x10000;
    memset(sects, 0, 10 * sizeof *sects);
    size_t off = 52;
    for (int i = 0; i < 9; i++) {
        size_t len = ld_u32le(data + 16 + 4 * i);
        if (len > size - off)
            len = size - off;
        strcpy(sects[i].segname, "__DWARF");
        strcpy(sects[i].sectname, names[i]);
        sects[i].offset = (uint32_t)off;
        sects[i].size = len;
        off += len;
    }
    strcpy(sects[9].segname, "__TEXT");
    strcpy(sects[9].sectname, "__text");
    sects[9].addr = *lo;
    sects[9].size = *hi - *lo;
    sects[9].flags = 0x80000400; /* pure + some instructions */
    memset(img, 0, sizeof *img);
    img->buf = data;
    img->len = size;
    img->sects = sects;
    img->nsects = 10;
    return true;
}

#endif

/* symd import's look at a Mach-O file's headers before reading it
 * (import/peek.h). */
#include "peek.h"

#include <string.h>

#include "../util/cursor.h"
#include "../util/util.h"

#define MH_MAGIC 0xfeedfaceu
#define MH_MAGIC_64 0xfeedfacfu
#define MH_CIGAM 0xcefaedfeu
#define MH_CIGAM_64 0xcffaedfeu
#define FAT_MAGIC 0xcafebabeu
#define FAT_MAGIC_64 0xcafebabfu
#define LC_SEGMENT 0x1u
#define LC_SYMTAB 0x2u
#define LC_SEGMENT_64 0x19u
#define LC_UUID 0x1bu
#define LC_FUNCTION_STARTS 0x26u
#define HDR_32 28u
#define HDR_64 32u

static symd_status fat_entries(const uint8_t *head, size_t head_len, uint64_t file_size,
                               bool fat64, peek_slice *out, size_t *n, symd_err *err)
{
    size_t entsize = fat64 ? 32 : 20;
    uint32_t nfat = ld_u32be(head + 4);
    if (nfat == 0)
        return SYMD_CORRUPT(err, "fat header lists no architectures");
    /* Java class files start 0xcafebabe too, then their version (45 and up);
     * a fat header lists a few architectures. */
    if (nfat >= 45 && !fat64)
        return symd_fail(err, SYMD_E_NOT_MACHO, "a Java class file, not Mach-O");
    if (nfat > MACHO_MAX_SLICES)
        return SYMD_CORRUPT(err, "fat header declares %u architectures (limit %d)", nfat,
                            MACHO_MAX_SLICES);
    size_t hdr_end = 8 + (size_t)nfat * entsize;
    if (hdr_end > head_len)
        return SYMD_CORRUPT(err, "fat header of %u architectures runs past the %zu bytes "
                                 "of the file", nfat, head_len);
    for (uint32_t i = 0; i < nfat; i++) {
        const uint8_t *e = head + 8 + (size_t)i * entsize;
        peek_slice *s = &out[i];
        memset(s, 0, sizeof *s);
        s->cputype = ld_u32be(e);
        s->cpusubtype = ld_u32be(e + 4);
        s->offset = fat64 ? ld_u64be(e + 8) : ld_u32be(e + 8);
        s->size = fat64 ? ld_u64be(e + 16) : ld_u32be(e + 12);
        if (s->offset < hdr_end || !range_ok(s->offset, s->size, file_size) ||
            s->size < HDR_32)
            return SYMD_CORRUPT(err, "fat slice %u (offset %llu, size %llu) does not lie in "
                                     "the %llu-byte file past its header",
                                i, (unsigned long long)s->offset, (unsigned long long)s->size,
                                (unsigned long long)file_size);
    }
    *n = nfat;
    return SYMD_OK;
}

symd_status peek_slices(const uint8_t *head, size_t head_len, uint64_t file_size,
                        peek_slice out[MACHO_MAX_SLICES], size_t *n, symd_err *err)
{
    *n = 0;
    if (head_len > file_size)
        head_len = (size_t)file_size;
    if (head_len < 8)
        return symd_fail(err, SYMD_E_NOT_MACHO, "file of %zu bytes is too short to be Mach-O",
                         head_len);
    uint32_t le = ld_u32le(head), be = ld_u32be(head);
    if (le == MH_MAGIC || le == MH_MAGIC_64) {
        memset(&out[0], 0, sizeof out[0]);
        if (head_len < 12)
            return SYMD_CORRUPT(err, "Mach-O header truncated at %zu bytes", head_len);
        out[0].cputype = ld_u32le(head + 4);
        out[0].cpusubtype = ld_u32le(head + 8);
        out[0].size = file_size;
        *n = 1;
        return SYMD_OK;
    }
    if (le == MH_CIGAM || le == MH_CIGAM_64)
        return symd_fail(err, SYMD_E_UNSUPPORTED, "big-endian Mach-O (PowerPC) is not supported");
    if (be != FAT_MAGIC && be != FAT_MAGIC_64)
        return symd_fail(err, SYMD_E_NOT_MACHO, "not a Mach-O file (magic 0x%08x)", be);
    return fat_entries(head, head_len, file_size, be == FAT_MAGIC_64, out, n, err);
}

symd_status peek_commands_size(const uint8_t *hdr, size_t hdr_len, const peek_slice *sl,
                               uint32_t *size, symd_err *err)
{
    if (hdr_len < HDR_32 || sl->size < HDR_32)
        return SYMD_CORRUPT(err, "Mach-O header truncated");
    uint32_t magic = ld_u32le(hdr);
    if (magic != MH_MAGIC && magic != MH_MAGIC_64)
        return SYMD_CORRUPT(err, "slice at offset %llu is not Mach-O (magic 0x%08x)",
                            (unsigned long long)sl->offset, magic);
    uint32_t h = magic == MH_MAGIC_64 ? HDR_64 : HDR_32, cmds = ld_u32le(hdr + 20);
    if (cmds > PEEK_MAX_CMDS || !range_ok(h, cmds, sl->size))
        return SYMD_CORRUPT(err, "load commands (%u bytes) run past the %llu-byte slice", cmds,
                            (unsigned long long)sl->size);
    *size = h + cmds;
    return SYMD_OK;
}

/* Adds [off, off+size) to what is read when it lies in the slice; one that
 * does not is left to the Mach-O reader, which says what is wrong. */
static void need(peek_slice *sl, uint64_t off, uint64_t size)
{
    if (size && range_ok(off, size, sl->size) && sl->nneed < PEEK_MAX_RANGES)
        sl->need[sl->nneed++] = (peek_range){off, size};
}

symd_status peek_load_commands(const uint8_t *cmds, size_t len, peek_slice *sl, symd_err *err)
{
    uint32_t total;
    symd_status st = peek_commands_size(cmds, len, sl, &total, err);
    if (st != SYMD_OK)
        return st;
    if (len < total)
        return SYMD_CORRUPT(err, "load commands truncated: %zu of %u bytes", len, total);
    bool is64 = ld_u32le(cmds) == MH_MAGIC_64;
    sl->cputype = ld_u32le(cmds + 4);
    sl->cpusubtype = ld_u32le(cmds + 8);
    sl->arch = macho_arch_name(sl->cputype, sl->cpusubtype);
    sl->has_uuid = false;
    sl->nneed = 0;
    need(sl, 0, total);
    uint32_t ncmds = ld_u32le(cmds + 16);
    cursor c = cur_make(cmds + (is64 ? HDR_64 : HDR_32), total - (is64 ? HDR_64 : HDR_32));
    for (uint32_t i = 0; i < ncmds; i++) {
        if (cur_left(&c) < 8)
            return SYMD_CORRUPT(err, "load command %u starts past sizeofcmds", i);
        const uint8_t *p = c.p + c.pos;
        uint32_t cmd = ld_u32le(p), size = ld_u32le(p + 4);
        if (size < 8 || size > cur_left(&c))
            return SYMD_CORRUPT(err, "load command %u: size %u", i, size);
        if (cmd == LC_UUID && size >= 24) {
            memcpy(sl->uuid, p + 8, 16);
            sl->has_uuid = true;
        } else if (cmd == LC_SYMTAB && size >= 24) {
            uint64_t nsyms = ld_u32le(p + 12);
            need(sl, ld_u32le(p + 8), nsyms * (is64 ? 16 : 12));
            need(sl, ld_u32le(p + 16), ld_u32le(p + 20));
        } else if (cmd == LC_FUNCTION_STARTS && size >= 16) {
            need(sl, ld_u32le(p + 8), ld_u32le(p + 12));
        } else if (cmd == LC_SEGMENT_64 && size >= 72 && memcmp(p + 8, "__DWARF", 8) == 0) {
            need(sl, ld_u64le(p + 40), ld_u64le(p + 48));
        } else if (cmd == LC_SEGMENT && size >= 56 && memcmp(p + 8, "__DWARF", 8) == 0) {
            need(sl, ld_u32le(p + 32), ld_u32le(p + 36));
        }
        c.pos += size;
    }
    return SYMD_OK;
}

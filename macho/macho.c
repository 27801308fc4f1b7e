/* Mach-O reader: fat headers, thin slices, load commands, symbols. */
#include "macho.h"

#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../util/util.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define FAT_MAGIC 0xcafebabeu
#define FAT_MAGIC_64 0xcafebabfu
#define MH_MAGIC 0xfeedfaceu
#define MH_MAGIC_64 0xfeedfacfu
#define MH_CIGAM 0xcefaedfeu
#define MH_CIGAM_64 0xcffaedfeu

#define LC_REQ_DYLD 0x80000000u
#define LC_SEGMENT 0x1u
#define LC_SYMTAB 0x2u
#define LC_ID_DYLIB 0xdu
#define LC_SEGMENT_64 0x19u
#define LC_UUID 0x1bu
#define LC_FUNCTION_STARTS 0x26u

#define N_STAB 0xe0u
#define N_TYPE 0x0eu
#define N_SECT 0x0eu
#define N_EXT 0x01u

#define S_ATTR_PURE_INSTRUCTIONS 0x80000000u
#define S_ATTR_SOME_INSTRUCTIONS 0x00000400u
#define SECTION_TYPE 0xffu
#define S_ZEROFILL 0x1u
#define S_GB_ZEROFILL 0xcu
#define S_THREAD_LOCAL_ZEROFILL 0x12u

#define CPU_ARCH_ABI64 0x01000000u
#define CPU_ARCH_ABI64_32 0x02000000u
#define CPU_TYPE_X86 7u
#define CPU_TYPE_ARM 12u
#define CPU_TYPE_X86_64 (CPU_TYPE_X86 | CPU_ARCH_ABI64)
#define CPU_TYPE_ARM64 (CPU_TYPE_ARM | CPU_ARCH_ABI64)
#define CPU_TYPE_ARM64_32 (CPU_TYPE_ARM | CPU_ARCH_ABI64_32)
#define CPU_SUBTYPE_MASK 0xff000000u

/* Bytes of the fixed part of each structure we read. */
#define MH_HEADER_32 28u
#define MH_HEADER_64 32u
#define SEG_CMD_32 56u
#define SEG_CMD_64 72u
#define SECT_32 68u
#define SECT_64 80u
#define NLIST_32 12u
#define NLIST_64 16u

static const struct {
    uint32_t cputype, subtype;
    const char *name;
} arch_names[] = {
    {CPU_TYPE_ARM64, 0, "arm64"},      {CPU_TYPE_ARM64, 1, "arm64"},
    {CPU_TYPE_ARM64, 2, "arm64e"},     {CPU_TYPE_ARM64_32, 1, "arm64_32"},
    {CPU_TYPE_ARM64_32, 0, "arm64_32"}, {CPU_TYPE_X86_64, 3, "x86_64"},
    {CPU_TYPE_X86_64, 8, "x86_64h"},   {CPU_TYPE_X86, 3, "i386"},
    {CPU_TYPE_ARM, 6, "armv6"},        {CPU_TYPE_ARM, 9, "armv7"},
    {CPU_TYPE_ARM, 10, "armv7f"},      {CPU_TYPE_ARM, 11, "armv7s"},
    {CPU_TYPE_ARM, 12, "armv7k"},      {CPU_TYPE_ARM, 13, "armv8"},
    {CPU_TYPE_ARM, 14, "armv6m"},      {CPU_TYPE_ARM, 15, "armv7m"},
    {CPU_TYPE_ARM, 16, "armv7em"},
};

const char *macho_arch_name(uint32_t cputype, uint32_t cpusubtype)
{
    uint32_t sub = cpusubtype & ~CPU_SUBTYPE_MASK;
    for (size_t i = 0; i < sizeof arch_names / sizeof arch_names[0]; i++)
        if (arch_names[i].cputype == cputype && arch_names[i].subtype == sub)
            return arch_names[i].name;
    if (cputype == CPU_TYPE_X86_64)
        return "x86_64";
    if (cputype == CPU_TYPE_ARM64)
        return "arm64";
    return NULL;
}

const char *macho_kind_name(macho_kind k)
{
    static const char *const names[] = {
        "object", "executable", "dylib", "bundle", "dsym", "dylinker", "kext",
        "other",
    };
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "other";
}

static macho_kind kind_of(uint32_t filetype)
{
    switch (filetype) {
    case 0x1: return MACHO_KIND_OBJECT;
    case 0x2: return MACHO_KIND_EXECUTABLE;
    case 0x6: return MACHO_KIND_DYLIB;
    case 0x7: return MACHO_KIND_DYLINKER;
    case 0x8: return MACHO_KIND_BUNDLE;
    case 0xa: return MACHO_KIND_DSYM;
    case 0xb: return MACHO_KIND_KEXT;
    default: return MACHO_KIND_OTHER;
    }
}

/* ---- fat ---------------------------------------------------------------- */

static int cmp_slice_offset(const void *a, const void *b)
{
    const macho_slice *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

symd_status macho_parse_slices(const uint8_t *buf, size_t len,
                               macho_slice out[MACHO_MAX_SLICES], size_t *n,
                               symd_err *err)
{
    *n = 0;
    if (len < 4)
        return symd_fail(err, SYMD_E_NOT_MACHO,
                         "file of %zu bytes is too short to be Mach-O", len);
    uint32_t be = ld_u32be(buf), le = ld_u32le(buf);
    if (le == MH_MAGIC || le == MH_MAGIC_64) {
        if (len < MH_HEADER_32)
            return SYMD_CORRUPT(err, "Mach-O header truncated at %zu bytes", len);
        out[0].cputype = ld_u32le(buf + 4);
        out[0].cpusubtype = ld_u32le(buf + 8);
        out[0].offset = 0;
        out[0].size = len;
        *n = 1;
        return SYMD_OK;
    }
    if (le == MH_CIGAM || le == MH_CIGAM_64)
        return symd_fail(err, SYMD_E_UNSUPPORTED,
                         "big-endian Mach-O (PowerPC) is not supported");
    if (be != FAT_MAGIC && be != FAT_MAGIC_64)
        return symd_fail(err, SYMD_E_NOT_MACHO,
                         "not a Mach-O file (magic 0x%08x)", be);

    bool fat64 = be == FAT_MAGIC_64;
    size_t entsize = fat64 ? 32 : 20;
    if (len < 8)
        return SYMD_CORRUPT(err, "fat header truncated");
    uint32_t nfat = ld_u32be(buf + 4);
    size_t room = (len - 8) / entsize;
    if (nfat == 0)
        return SYMD_CORRUPT(err, "fat header lists no architectures");
    if (nfat > room)
        return SYMD_CORRUPT(err,
                            "fat header declares %u architectures, the file "
                            "holds at most %zu",
                            nfat, room);
    if (nfat > MACHO_MAX_SLICES)
        return SYMD_CORRUPT(err, "fat header declares %u architectures (limit %d)",
                            nfat, MACHO_MAX_SLICES);
    size_t hdr_end = 8 + (size_t)nfat * entsize;

    for (uint32_t i = 0; i < nfat; i++) {
        macho_slice *s = &out[i];
        /* nfat entries were checked to fit, so these reads stay inside. */
        const uint8_t *e = buf + 8 + (size_t)i * entsize;
        s->cputype = ld_u32be(e);
        s->cpusubtype = ld_u32be(e + 4);
        if (fat64) {
            s->offset = ld_u64be(e + 8);
            s->size = ld_u64be(e + 16);
        } else {
            s->offset = ld_u32be(e + 8);
            s->size = ld_u32be(e + 12);
        }
        if (s->offset < hdr_end)
            return SYMD_CORRUPT(err, "fat slice %u starts at %llu, inside the fat header",
                                i, (unsigned long long)s->offset);
        if (!range_ok(s->offset, s->size, len))
            return SYMD_CORRUPT(err,
                                "fat slice %u (offset %llu, size %llu) leaves the "
                                "%zu-byte file",
                                i, (unsigned long long)s->offset,
                                (unsigned long long)s->size, len);
        if (s->size < MH_HEADER_32)
            return SYMD_CORRUPT(err, "fat slice %u is only %llu bytes", i,
                                (unsigned long long)s->size);
        for (uint32_t j = 0; j < i; j++)
            if (out[j].cputype == s->cputype &&
                (out[j].cpusubtype & ~CPU_SUBTYPE_MASK) ==
                    (s->cpusubtype & ~CPU_SUBTYPE_MASK))
                return SYMD_CORRUPT(err, "fat header lists one architecture twice");
    }
    macho_slice sorted[MACHO_MAX_SLICES];
    memcpy(sorted, out, nfat * sizeof *out);
    qsort(sorted, nfat, sizeof *sorted, cmp_slice_offset);
    for (uint32_t i = 1; i < nfat; i++)
        if (sorted[i].offset < sorted[i - 1].offset + sorted[i - 1].size)
            return SYMD_CORRUPT(err, "fat slices overlap (at offset %llu)",
                                (unsigned long long)sorted[i].offset);
    *n = nfat;
    return SYMD_OK;
}

/* ---- thin --------------------------------------------------------------- */

static void copy_name(char dst[17], const uint8_t *src)
{
    memcpy(dst, src, 16);
    dst[16] = 0;
}

bool macho_section_is_code(const macho_section *s)
{
    return (s->flags & (S_ATTR_PURE_INSTRUCTIONS | S_ATTR_SOME_INSTRUCTIONS)) != 0;
}

static bool is_zerofill(uint32_t flags)
{
    uint32_t t = flags & SECTION_TYPE;
    return t == S_ZEROFILL || t == S_GB_ZEROFILL || t == S_THREAD_LOCAL_ZEROFILL;
}

/* Reads one LC_SEGMENT(_64) command and its sections. The caller checked
 * that cmdsize covers the fixed segment header; the section count is checked
 * here against the bytes left in the command. */
static symd_status read_segment(macho_image *img, const uint8_t *cmd,
                                uint32_t cmdsize, uint32_t cmdno, symd_err *err)
{
    macho_segment seg;
    uint32_t nsects;
    size_t hdr = img->is64 ? SEG_CMD_64 : SEG_CMD_32;
    copy_name(seg.segname, cmd + 8);
    if (img->is64) {
        seg.vmaddr = ld_u64le(cmd + 24);
        seg.vmsize = ld_u64le(cmd + 32);
        seg.fileoff = ld_u64le(cmd + 40);
        seg.filesize = ld_u64le(cmd + 48);
        nsects = ld_u32le(cmd + 64);
    } else {
        seg.vmaddr = ld_u32le(cmd + 24);
        seg.vmsize = ld_u32le(cmd + 28);
        seg.fileoff = ld_u32le(cmd + 32);
        seg.filesize = ld_u32le(cmd + 36);
        nsects = ld_u32le(cmd + 48);
    }

    uint64_t vmend;
    if (!u64_add(seg.vmaddr, seg.vmsize, &vmend))
        return SYMD_CORRUPT(err, "load command %u: segment %s wraps the address space",
                            cmdno, seg.segname);
    if (seg.filesize && !range_ok(seg.fileoff, seg.filesize, img->len))
        return SYMD_CORRUPT(err,
                            "load command %u: segment %s (file offset %llu, size "
                            "%llu) leaves the %zu-byte file",
                            cmdno, seg.segname, (unsigned long long)seg.fileoff,
                            (unsigned long long)seg.filesize, img->len);
    size_t sectsize = img->is64 ? SECT_64 : SECT_32;
    if (nsects > (cmdsize - hdr) / sectsize)
        return SYMD_CORRUPT(err,
                            "load command %u: segment %s declares %u sections, its "
                            "command holds %zu",
                            cmdno, seg.segname, nsects, (cmdsize - hdr) / sectsize);

    if (!array_grow((void **)&img->segs, &img->segs_cap, img->nsegs + 1,
                    sizeof *img->segs))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    img->segs[img->nsegs++] = seg;
    if (nsects == 0)
        return SYMD_OK;
    if (!array_grow((void **)&img->sects, &img->sects_cap, img->nsects + nsects,
                    sizeof *img->sects))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    macho_section *sects = img->sects;
    for (uint32_t i = 0; i < nsects; i++) {
        const uint8_t *p = cmd + hdr + (size_t)i * sectsize;
        macho_section *s = &sects[img->nsects];
        copy_name(s->sectname, p);
        copy_name(s->segname, p + 16);
        if (img->is64) {
            s->addr = ld_u64le(p + 32);
            s->size = ld_u64le(p + 40);
            s->offset = ld_u32le(p + 48);
            s->flags = ld_u32le(p + 64);
        } else {
            s->addr = ld_u32le(p + 32);
            s->size = ld_u32le(p + 36);
            s->offset = ld_u32le(p + 40);
            s->flags = ld_u32le(p + 56);
        }
        uint64_t send;
        if (!u64_add(s->addr, s->size, &send))
            return SYMD_CORRUPT(err, "section %s,%s wraps the address space",
                                s->segname, s->sectname);
        /* Object files put every section in one unnamed segment whose range
         * covers them; linked images keep sections inside their segment. */
        if (s->size && (s->addr < seg.vmaddr || send > vmend))
            return SYMD_CORRUPT(err,
                                "section %s,%s [0x%llx, 0x%llx) lies outside segment "
                                "%s [0x%llx, 0x%llx)",
                                s->segname, s->sectname, (unsigned long long)s->addr,
                                (unsigned long long)send, seg.segname,
                                (unsigned long long)seg.vmaddr,
                                (unsigned long long)vmend);
        /* A dSYM keeps section headers but not their bytes (offset 0). */
        if (!is_zerofill(s->flags) && s->offset != 0 &&
            !range_ok(s->offset, s->size, img->len))
            return SYMD_CORRUPT(err,
                                "section %s,%s (file offset %u, size %llu) leaves the "
                                "%zu-byte file",
                                s->segname, s->sectname, s->offset,
                                (unsigned long long)s->size, img->len);
        img->nsects++;
    }
    return SYMD_OK;
}

static symd_status read_function_starts(macho_image *img, uint32_t dataoff,
                                        uint32_t datasize, symd_err *err)
{
    if (!range_ok(dataoff, datasize, img->len))
        return SYMD_CORRUPT(err,
                            "LC_FUNCTION_STARTS (offset %u, size %u) leaves the "
                            "%zu-byte file",
                            dataoff, datasize, img->len);
    if (datasize == 0)
        return SYMD_OK;
    /* Each entry takes at least one byte, so datasize bounds the count. */
    img->fstarts = malloc((size_t)datasize * sizeof *img->fstarts);
    if (!img->fstarts)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    cursor c = cur_make(img->buf + dataoff, datasize);
    uint64_t addr = macho_text_vmaddr(img);
    while (cur_left(&c)) {
        uint64_t delta;
        if (!cur_uleb(&c, &delta))
            return SYMD_CORRUPT(err, "LC_FUNCTION_STARTS: bad ULEB128 at byte %zu",
                                c.pos);
        if (delta == 0)
            break; /* the list is zero-terminated and padded */
        if (!u64_add(addr, delta, &addr))
            return SYMD_CORRUPT(err, "LC_FUNCTION_STARTS: address overflows");
        /* Thumb functions carry bit 0; the code starts at the even address. */
        img->fstarts[img->nfstarts++] =
            img->cputype == CPU_TYPE_ARM ? addr & ~(uint64_t)1 : addr;
    }
    return SYMD_OK;
}

static symd_status read_dylib_id(macho_image *img, const uint8_t *cmd,
                                 uint32_t cmdsize, symd_err *err)
{
    if (cmdsize < 24)
        return SYMD_CORRUPT(err, "LC_ID_DYLIB of %u bytes is too short", cmdsize);
    uint32_t off = ld_u32le(cmd + 8);
    if (off < 24 || off >= cmdsize)
        return SYMD_CORRUPT(err, "LC_ID_DYLIB name offset %u outside its command", off);
    const uint8_t *s = cmd + off, *end = memchr(s, 0, cmdsize - off);
    if (!end)
        return SYMD_CORRUPT(err, "LC_ID_DYLIB name is not terminated");
    free(img->dylib_id);
    img->dylib_id = strndup((const char *)s, (size_t)(end - s));
    if (!img->dylib_id)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    return SYMD_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_seg_fileoff(const void *a, const void *b)
{
    const macho_segment *x = *(const macho_segment *const *)a;
    const macho_segment *y = *(const macho_segment *const *)b;
    return x->fileoff < y->fileoff ? -1 : x->fileoff > y->fileoff;
}

/* Segments that hold file bytes must not share them. Sorted, so a file with
 * thousands of segments costs n log n, not n squared. */
static symd_status check_segment_overlap(const macho_image *img, symd_err *err)
{
    if (img->nsegs < 2)
        return SYMD_OK;
    const macho_segment **v = malloc(img->nsegs * sizeof *v);
    if (!v)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < img->nsegs; i++)
        if (img->segs[i].filesize)
            v[n++] = &img->segs[i];
    qsort(v, n, sizeof *v, cmp_seg_fileoff);
    symd_status st = SYMD_OK;
    for (size_t i = 1; i < n; i++)
        if (v[i]->fileoff < v[i - 1]->fileoff + v[i - 1]->filesize) {
            st = SYMD_CORRUPT(err, "segments %s and %s overlap in the file",
                              v[i - 1]->segname, v[i]->segname);
            break;
        }
    free(v);
    return st;
}

static symd_status parse_image(macho_image *img, symd_err *err)
{
    const uint8_t *buf = img->buf;
    size_t len = img->len;
    if (len < 4)
        return symd_fail(err, SYMD_E_NOT_MACHO, "slice too short to be Mach-O");
    uint32_t magic = ld_u32le(buf);
    if (magic == MH_CIGAM || magic == MH_CIGAM_64)
        return symd_fail(err, SYMD_E_UNSUPPORTED,
                         "big-endian Mach-O (PowerPC) is not supported");
    if (magic != MH_MAGIC && magic != MH_MAGIC_64)
        return symd_fail(err, SYMD_E_NOT_MACHO, "not a Mach-O slice (magic 0x%08x)",
                         magic);
    img->is64 = magic == MH_MAGIC_64;
    size_t hdrsize = img->is64 ? MH_HEADER_64 : MH_HEADER_32;
    if (len < hdrsize)
        return SYMD_CORRUPT(err, "Mach-O header truncated at %zu bytes", len);
    img->cputype = ld_u32le(buf + 4);
    img->cpusubtype = ld_u32le(buf + 8);
    img->filetype = ld_u32le(buf + 12);
    img->kind = kind_of(img->filetype);
    uint32_t ncmds = ld_u32le(buf + 16), sizeofcmds = ld_u32le(buf + 20);
    if (!range_ok(hdrsize, sizeofcmds, len))
        return SYMD_CORRUPT(err,
                            "load commands (%u bytes) extend past the %zu-byte file",
                            sizeofcmds, len);
    if (ncmds > sizeofcmds / 8)
        return SYMD_CORRUPT(err, "%u load commands cannot fit in %u bytes", ncmds,
                            sizeofcmds);

    /* Pass 1: the load commands as a table. Each must be at least 8 bytes,
     * 4-byte aligned and end inside sizeofcmds; together they must not
     * overrun it. Only then are their bodies read. */
    const uint8_t *cmds = buf + hdrsize;
    size_t pos = 0;
    for (uint32_t i = 0; i < ncmds; i++) {
        if (sizeofcmds - pos < 8)
            return SYMD_CORRUPT(err, "load command %u starts past sizeofcmds", i);
        uint32_t cmdsize = ld_u32le(cmds + pos + 4);
        if (cmdsize < 8 || cmdsize % 4)
            return SYMD_CORRUPT(err, "load command %u has bad size %u", i, cmdsize);
        if (cmdsize > sizeofcmds - pos)
            return SYMD_CORRUPT(err, "load command %u (%u bytes) overruns sizeofcmds",
                                i, cmdsize);
        pos += cmdsize;
    }

    /* Pass 2: read the commands we use. */
    uint32_t fs_off = 0, fs_size = 0;
    bool has_fs = false;
    pos = 0;
    for (uint32_t i = 0; i < ncmds; i++) {
        const uint8_t *cmd = cmds + pos;
        uint32_t type = ld_u32le(cmd) & ~LC_REQ_DYLD, cmdsize = ld_u32le(cmd + 4);
        pos += cmdsize;
        symd_status st = SYMD_OK;
        switch (type) {
        case LC_SEGMENT:
        case LC_SEGMENT_64:
            if ((type == LC_SEGMENT_64) != img->is64)
                return SYMD_CORRUPT(err, "load command %u: segment width does not "
                                         "match the header", i);
            if (cmdsize < (img->is64 ? SEG_CMD_64 : SEG_CMD_32))
                return SYMD_CORRUPT(err, "load command %u: segment command of %u "
                                         "bytes is too short", i, cmdsize);
            st = read_segment(img, cmd, cmdsize, i, err);
            break;
        case LC_UUID:
            if (cmdsize < 24)
                return SYMD_CORRUPT(err, "LC_UUID of %u bytes is too short", cmdsize);
            if (img->has_uuid)
                return SYMD_CORRUPT(err, "more than one LC_UUID");
            memcpy(img->uuid, cmd + 8, 16);
            img->has_uuid = true;
            break;
        case LC_SYMTAB:
            if (cmdsize < 24)
                return SYMD_CORRUPT(err, "LC_SYMTAB of %u bytes is too short", cmdsize);
            if (img->has_symtab)
                return SYMD_CORRUPT(err, "more than one LC_SYMTAB");
            img->has_symtab = true;
            img->symoff = ld_u32le(cmd + 8);
            img->nsyms = ld_u32le(cmd + 12);
            img->stroff = ld_u32le(cmd + 16);
            img->strsize = ld_u32le(cmd + 20);
            break;
        case LC_FUNCTION_STARTS:
            if (cmdsize < 16)
                return SYMD_CORRUPT(err, "LC_FUNCTION_STARTS of %u bytes is too short",
                                    cmdsize);
            if (has_fs)
                return SYMD_CORRUPT(err, "more than one LC_FUNCTION_STARTS");
            has_fs = true;
            fs_off = ld_u32le(cmd + 8);
            fs_size = ld_u32le(cmd + 12);
            break;
        case LC_ID_DYLIB:
            st = read_dylib_id(img, cmd, cmdsize, err);
            break;
        default:
            break;
        }
        if (st != SYMD_OK)
            return st;
    }

    symd_status st = check_segment_overlap(img, err);
    if (st != SYMD_OK)
        return st;

    img->text_seg = -1;
    for (size_t i = 0; i < img->nsegs; i++)
        if (strcmp(img->segs[i].segname, "__TEXT") == 0) {
            img->text_seg = (int)i;
            break;
        }
    if (img->text_seg < 0 && img->nsegs)
        img->text_seg = 0; /* object files: one unnamed segment */

    if (img->has_symtab) {
        size_t entsize = img->is64 ? NLIST_64 : NLIST_32;
        if (img->symoff > len || img->nsyms > (len - img->symoff) / entsize)
            return SYMD_CORRUPT(err,
                                "symbol table (offset %u, %u entries) leaves the "
                                "%zu-byte file",
                                img->symoff, img->nsyms, len);
        if (!range_ok(img->stroff, img->strsize, len))
            return SYMD_CORRUPT(err,
                                "string table (offset %u, size %u) leaves the "
                                "%zu-byte file",
                                img->stroff, img->strsize, len);
    }
    if (has_fs) {
        symd_status st = read_function_starts(img, fs_off, fs_size, err);
        if (st != SYMD_OK)
            return st;
        /* ld64 emits them ascending; sort anyway so lookups can rely on it. */
        if (img->nfstarts > 1)
            qsort(img->fstarts, img->nfstarts, sizeof *img->fstarts, cmp_u64);
    }
    return SYMD_OK;
}

symd_status macho_parse_image(const uint8_t *buf, size_t len, macho_image *img,
                              symd_err *err)
{
    memset(img, 0, sizeof *img);
    img->buf = buf;
    img->len = len;
    img->text_seg = -1;
    symd_status st = parse_image(img, err);
    if (st != SYMD_OK)
        macho_image_free(img);
    return st;
}

void macho_image_free(macho_image *img)
{
    free(img->segs);
    free(img->sects);
    free(img->fstarts);
    free(img->dylib_id);
    img->segs = NULL;
    img->sects = NULL;
    img->fstarts = NULL;
    img->dylib_id = NULL;
    img->nsegs = img->nsects = img->nfstarts = 0;
    img->segs_cap = img->sects_cap = 0;
}

uint64_t macho_text_vmaddr(const macho_image *img)
{
    return img->text_seg >= 0 ? img->segs[img->text_seg].vmaddr : 0;
}

uint64_t macho_text_vmsize(const macho_image *img)
{
    return img->text_seg >= 0 ? img->segs[img->text_seg].vmsize : 0;
}

symd_status macho_function_symbols(const macho_image *img, macho_symbol **out,
                                   size_t *n, symd_err *err)
{
    *out = NULL;
    *n = 0;
    if (!img->has_symtab || img->nsyms == 0)
        return SYMD_OK;
    /* nsyms was checked against the file, so this allocation is bounded by
     * the input's size. */
    macho_symbol *syms = malloc((size_t)img->nsyms * sizeof *syms);
    if (!syms)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    size_t entsize = img->is64 ? NLIST_64 : NLIST_32, k = 0;
    const uint8_t *tab = img->buf + img->symoff;
    const char *strtab = (const char *)img->buf + img->stroff;
    for (uint32_t i = 0; i < img->nsyms; i++) {
        const uint8_t *e = tab + (size_t)i * entsize;
        uint32_t strx = ld_u32le(e);
        uint8_t type = e[4], sect = e[5];
        uint64_t value = img->is64 ? ld_u64le(e + 8) : ld_u32le(e + 8);
        if ((type & N_STAB) || (type & N_TYPE) != N_SECT)
            continue;
        if (sect == 0 || sect > img->nsects) {
            free(syms);
            return SYMD_CORRUPT(err, "symbol %u names section %u of %zu", i, sect,
                                img->nsects);
        }
        const macho_section *s = &img->sects[sect - 1];
        if (!macho_section_is_code(s) || value < s->addr || value - s->addr >= s->size)
            continue; /* data, or a marker outside its section (__mh_execute_header) */
        if (strx >= img->strsize) {
            free(syms);
            return SYMD_CORRUPT(err, "symbol %u: string index %u past the %u-byte "
                                     "string table", i, strx, img->strsize);
        }
        const char *name = strtab + strx;
        if (!memchr(name, 0, img->strsize - strx)) {
            free(syms);
            return SYMD_CORRUPT(err, "symbol %u: name runs off the string table", i);
        }
        if (name[0] == '_')
            name++;
        if (!name[0])
            continue; /* nameless symbols cannot describe a frame */
        syms[k].addr = value;
        syms[k].name = name;
        syms[k].external = (type & N_EXT) != 0;
        syms[k].index = i;
        syms[k].sect_end = s->addr + s->size;
        k++;
    }
    *out = syms;
    *n = k;
    return SYMD_OK;
}

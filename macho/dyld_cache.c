/* dyld shared cache reader: header, mappings, image tables, subcaches, local
 * symbols, and each image's load commands as the cache maps them. */
#include "dyld_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symindex.h"
#include "../util/cursor.h"
#include "../util/util.h"
#include "../util/metered.h" /* last: counts this file's allocations */

/* dyld_cache_header field offsets (dyld_cache_format.h). A field exists
 * when it ends at or before the header's mappingOffset. */
#define H_MAGIC 0u
#define H_MAPPING_OFFSET 16u
#define H_MAPPING_COUNT 20u
#define H_IMAGES_OFFSET_OLD 24u
#define H_IMAGES_COUNT_OLD 28u
#define H_CODE_SIG_OFFSET 40u
#define H_CODE_SIG_SIZE 48u
#define H_LOCAL_SYMS_OFFSET 72u
#define H_LOCAL_SYMS_SIZE 80u
#define H_UUID 88u
#define H_IMAGES_TEXT_OFFSET 136u
#define H_IMAGES_TEXT_COUNT 144u
#define H_PLATFORM 216u
#define H_MAPPING_SLIDE_OFFSET 312u
#define H_MAPPING_SLIDE_COUNT 316u
#define H_OS_VERSION 364u
#define H_SUBCACHE_OFFSET 392u
#define H_SUBCACHE_COUNT 396u
#define H_SYMBOL_FILE_UUID 400u
#define H_IMAGES_OFFSET 448u
#define H_IMAGES_COUNT 452u
#define H_CACHE_SUBTYPE 456u
#define H_MIN 32u /* magic, mapping and (old) image table fields */

#define MAPPING_SIZE 32u
#define MAPPING_SLIDE_SIZE 56u
#define IMAGE_INFO_SIZE 32u
#define TEXT_INFO_SIZE 32u
#define SUBCACHE_V1_SIZE 24u
#define SUBCACHE_V2_SIZE 56u
#define SUFFIX_SIZE 32u
#define LOCALS_INFO_SIZE 24u
#define LOCALS_ENTRY_32 12u
#define LOCALS_ENTRY_64 16u
#define NLIST_64 16u
#define MAX_PATH 4096u

#define MH_MAGIC_64 0xfeedfacfu
#define MH_HEADER_64 32u
#define LC_REQ_DYLD 0x80000000u
#define LC_SEGMENT 0x1u
#define LC_SYMTAB 0x2u
#define LC_SEGMENT_64 0x19u
#define LC_UUID 0x1bu
#define LC_FUNCTION_STARTS 0x26u
#define SEG_CMD_64 72u
#define SECT_64 80u
#define CPU_TYPE_ARM64 0x0100000cu
#define CPU_TYPE_X86_64 0x01000007u

/* Corrupt input, naming the file. */
#define BAD(fname, fmt, ...) SYMD_CORRUPT(err, "%s: " fmt, (fname), ##__VA_ARGS__)

typedef struct {
    const dyld_cache_file *f;
    uint32_t size; /* mappingOffset: where the header ends */
} hdr;

static bool has(const hdr *h, uint32_t off, uint32_t width)
{
    return off + width <= h->size;
}
static uint32_t h32(const hdr *h, uint32_t off)
{
    return has(h, off, 4) ? ld_u32le(h->f->buf + off) : 0;
}
static uint64_t h64(const hdr *h, uint32_t off)
{
    return has(h, off, 8) ? ld_u64le(h->f->buf + off) : 0;
}

static void fmt_uuid(const uint8_t u[16], char out[37])
{
    static const char hx[] = "0123456789ABCDEF";
    size_t k = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[k++] = '-';
        out[k++] = hx[u[i] >> 4];
        out[k++] = hx[u[i] & 15];
    }
    out[k] = 0;
}

static bool uuid_zero(const uint8_t *u)
{
    for (int i = 0; i < 16; i++)
        if (u[i])
            return false;
    return true;
}

bool dyld_cache_is_cache(const uint8_t *buf, size_t len)
{
    return len >= 4 && memcmp(buf, "dyld", 4) == 0;
}

/* ---- tables ------------------------------------------------------------- */

typedef struct {
    const char *what;
    uint64_t off, size;
} table;

static int cmp_table(const void *a, const void *b)
{
    const table *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Every table inside len bytes, and no two sharing a byte (empty ones
 * aside), the way git's chunk-format checks its table of contents. */
static symd_status check_tables(const char *fname, const char *where, table *t, size_t n,
                                uint64_t len, symd_err *err)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!range_ok(t[i].off, t[i].size, len))
            return BAD(fname, "%s (offset 0x%llx, %llu bytes) leaves the %llu-byte %s",
                       t[i].what, (unsigned long long)t[i].off,
                       (unsigned long long)t[i].size, (unsigned long long)len, where);
        if (t[i].size)
            t[k++] = t[i];
    }
    qsort(t, k, sizeof *t, cmp_table);
    for (size_t i = 1; i < k; i++)
        if (t[i].off < t[i - 1].off + t[i - 1].size)
            return BAD(fname, "%s (offset 0x%llx) overlaps %s (offset 0x%llx, %llu bytes)",
                       t[i].what, (unsigned long long)t[i].off, t[i - 1].what,
                       (unsigned long long)t[i - 1].off, (unsigned long long)t[i - 1].size);
    return SYMD_OK;
}

/* A table of count entries of entsize bytes at off, checked to fit in len
 * before anything is read or allocated for it. */
static symd_status table_fits(const char *fname, const char *what, uint64_t off,
                              uint64_t count, uint32_t entsize, uint64_t len, symd_err *err)
{
    if (count == 0)
        return SYMD_OK;
    if (off > len || count > (len - off) / entsize)
        return BAD(fname, "%s declares %llu entries at offset 0x%llx; the %llu-byte file "
                          "holds at most %llu there",
                   what, (unsigned long long)count, (unsigned long long)off,
                   (unsigned long long)len,
                   (unsigned long long)(off > len ? 0 : (len - off) / entsize));
    return SYMD_OK;
}

/* ---- headers and mappings ------------------------------------------------ */

static symd_status read_header(const dyld_cache_file *f, hdr *h, symd_err *err)
{
    h->f = f;
    h->size = 0;
    if (f->len < H_MIN)
        return BAD(f->name, "file of %zu bytes ends inside the dyld cache header "
                            "(%u bytes at least)", f->len, H_MIN);
    if (!dyld_cache_is_cache(f->buf, f->len))
        return symd_fail(err, SYMD_E_NOT_MACHO, "%s: not a dyld shared cache (magic "
                         "does not start with \"dyld_v1\")", f->name);
    if (f->buf[15] != 0)
        return BAD(f->name, "magic is not NUL-terminated");
    uint32_t mo = ld_u32le(f->buf + H_MAPPING_OFFSET);
    if (mo < H_MIN)
        return BAD(f->name, "mappingOffset 0x%x ends inside the header's first fields "
                            "(0x%x bytes)", mo, H_MIN);
    if (mo > f->len)
        return BAD(f->name, "mappingOffset 0x%x points past the %zu-byte file", mo, f->len);
    h->size = mo;
    return SYMD_OK;
}

static const char *magic_arch(const uint8_t *buf, char out[16])
{
    size_t i = 7;
    while (i < 15 && buf[i] == ' ')
        i++;
    memcpy(out, buf + i, 16 - i);
    out[15 - i] = 0;
    return out;
}

/* Appends the mappings of file fi to c->maps, each inside its file. */
static symd_status read_mappings(dyld_cache *c, unsigned fi, const hdr *h, symd_err *err)
{
    const dyld_cache_file *f = h->f;
    uint32_t off = h->size, count = ld_u32le(f->buf + H_MAPPING_COUNT);
    symd_status st = table_fits(f->name, "mapping table (mappingCount)", off, count,
                                MAPPING_SIZE, f->len, err);
    if (st != SYMD_OK)
        return st;
    if (count == 0)
        return SYMD_OK;
    size_t cap = c->nmaps;
    if (!size_add(cap, count, &cap))
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    dyld_cache_mapping *m = realloc(c->maps, cap * sizeof *m);
    if (!m)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    c->maps = m;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *p = f->buf + off + (size_t)i * MAPPING_SIZE;
        dyld_cache_mapping *d = &c->maps[c->nmaps];
        d->address = ld_u64le(p);
        d->size = ld_u64le(p + 8);
        d->file_offset = ld_u64le(p + 16);
        d->max_prot = ld_u32le(p + 24);
        d->init_prot = ld_u32le(p + 28);
        d->file = fi;
        d->index = i;
        uint64_t end;
        if (!u64_add(d->address, d->size, &end))
            return BAD(f->name, "mapping %u (address 0x%llx, size 0x%llx) wraps the address "
                                "space", i, (unsigned long long)d->address,
                       (unsigned long long)d->size);
        if (!range_ok(d->file_offset, d->size, f->len))
            return BAD(f->name, "mapping %u (fileOffset 0x%llx, size 0x%llx) points past the "
                                "%zu-byte file", i, (unsigned long long)d->file_offset,
                       (unsigned long long)d->size, f->len);
        c->nmaps++;
    }

    /* dyld_cache_mapping_and_slide_info: the same mappings with their slide
     * info, which must agree with the plain table. */
    uint32_t soff = h32(h, H_MAPPING_SLIDE_OFFSET), scount = h32(h, H_MAPPING_SLIDE_COUNT);
    if (has(h, H_MAPPING_SLIDE_COUNT, 4) && scount) {
        if (scount != count)
            return BAD(f->name, "mappingWithSlideCount %u differs from mappingCount %u",
                       scount, count);
        st = table_fits(f->name, "mapping-with-slide table (mappingWithSlideCount)", soff,
                        scount, MAPPING_SLIDE_SIZE, f->len, err);
        if (st != SYMD_OK)
            return st;
        for (uint32_t i = 0; i < scount; i++) {
            const uint8_t *p = f->buf + soff + (size_t)i * MAPPING_SLIDE_SIZE;
            const dyld_cache_mapping *d = &c->maps[c->nmaps - count + i];
            if (ld_u64le(p) != d->address || ld_u64le(p + 8) != d->size ||
                ld_u64le(p + 16) != d->file_offset)
                return BAD(f->name, "mappingWithSlide %u does not match mapping %u", i, i);
            uint64_t sio = ld_u64le(p + 24), sis = ld_u64le(p + 32);
            if (sis && !range_ok(sio, sis, f->len))
                return BAD(f->name, "mappingWithSlide %u: slide info (offset 0x%llx, size "
                                    "0x%llx) points past the %zu-byte file", i,
                           (unsigned long long)sio, (unsigned long long)sis, f->len);
        }
    }
    return SYMD_OK;
}

static int cmp_map_file(const void *a, const void *b)
{
    const dyld_cache_mapping *x = a, *y = b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return x->file_offset < y->file_offset ? -1 : x->file_offset > y->file_offset;
}

static int cmp_map_addr(const void *a, const void *b)
{
    const dyld_cache_mapping *x = a, *y = b;
    return x->address < y->address ? -1 : x->address > y->address;
}

/* No two mappings share file bytes or addresses; c->maps ends sorted by
 * address for map_find. */
static symd_status check_mappings(dyld_cache *c, symd_err *err)
{
    dyld_cache_mapping *m = c->maps;
    size_t n = c->nmaps;
    qsort(m, n, sizeof *m, cmp_map_file);
    for (size_t i = 1; i < n; i++)
        if (m[i].file == m[i - 1].file && m[i].size && m[i - 1].size &&
            m[i].file_offset < m[i - 1].file_offset + m[i - 1].size)
            return BAD(c->files[m[i].file].name, "mapping %u (fileOffset 0x%llx) overlaps "
                                                 "mapping %u (fileOffset 0x%llx, size 0x%llx) "
                                                 "in the file",
                       m[i].index, (unsigned long long)m[i].file_offset, m[i - 1].index,
                       (unsigned long long)m[i - 1].file_offset,
                       (unsigned long long)m[i - 1].size);
    qsort(m, n, sizeof *m, cmp_map_addr);
    for (size_t i = 1; i < n; i++)
        if (m[i].address < m[i - 1].address + m[i - 1].size)
            return BAD(c->files[m[i].file].name,
                       "mapping %u (address 0x%llx) overlaps mapping %u of %s (address "
                       "0x%llx, size 0x%llx)",
                       m[i].index, (unsigned long long)m[i].address, m[i - 1].index,
                       c->files[m[i - 1].file].name, (unsigned long long)m[i - 1].address,
                       (unsigned long long)m[i - 1].size);
    return SYMD_OK;
}

/* The bytes of [addr, addr+size) when one mapping holds them all. */
static const uint8_t *map_range(const dyld_cache *c, uint64_t addr, uint64_t size,
                                const dyld_cache_mapping **mp)
{
    size_t lo = 0, hi = c->nmaps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->maps[mid].address <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const dyld_cache_mapping *m = &c->maps[lo - 1];
    uint64_t rel = addr - m->address;
    if (rel >= m->size || size > m->size - rel)
        return NULL;
    if (mp)
        *mp = m;
    return c->files[m->file].buf + m->file_offset + rel;
}

/* ---- images --------------------------------------------------------------- */

typedef struct {
    uint64_t key;
    size_t index;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static const keyed *find_key(const keyed *v, size_t n, uint64_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo].key == key ? &v[lo] : NULL;
}

/* Reads image i's Mach-O header and load commands where the mappings put
 * them, and its __LINKEDIT tables. */
static symd_status parse_image(dyld_cache *c, size_t i, symd_err *err)
{
    dyld_cache_image *im = &c->images[i];
    const char *fname = c->files[0].name;
    const dyld_cache_mapping *m;
    const uint8_t *h = map_range(c, im->address, MH_HEADER_64, &m);
    if (!h)
        return BAD(fname, "image %zu (%s): address 0x%llx is not mapped", i, im->path,
                   (unsigned long long)im->address);
    im->hdr_file = m->file;
    im->hdr_off = m->file_offset + (im->address - m->address);
    uint64_t avail = m->size - (im->address - m->address);
    if (ld_u32le(h) != MH_MAGIC_64)
        return BAD(fname, "image %zu (%s): no 64-bit Mach-O header at 0x%llx (magic 0x%08x)",
                   i, im->path, (unsigned long long)im->address, ld_u32le(h));
    im->cputype = ld_u32le(h + 4);
    im->cpusubtype = ld_u32le(h + 8);
    im->filetype = ld_u32le(h + 12);
    uint32_t want = strncmp(c->arch, "arm64", 5) == 0 ? CPU_TYPE_ARM64 : CPU_TYPE_X86_64;
    if (im->cputype != want)
        return BAD(fname, "image %zu (%s): CPU type 0x%x in a %s cache", i, im->path,
                   im->cputype, c->arch);
    im->arch = macho_arch_name(im->cputype, im->cpusubtype);
    uint32_t ncmds = ld_u32le(h + 16), sizeofcmds = ld_u32le(h + 20);
    if (sizeofcmds > avail - MH_HEADER_64)
        return BAD(fname, "image %zu (%s): load commands (sizeofcmds %u) run past their "
                          "mapping", i, im->path, sizeofcmds);
    if (ncmds > sizeofcmds / 8)
        return BAD(fname, "image %zu (%s): %u load commands cannot fit in %u bytes", i,
                   im->path, ncmds, sizeofcmds);
    const uint8_t *cmds = h + MH_HEADER_64;
    size_t pos = 0;
    for (uint32_t k = 0; k < ncmds; k++) {
        if (sizeofcmds - pos < 8)
            return BAD(fname, "image %zu (%s): load command %u starts past sizeofcmds", i,
                       im->path, k);
        uint32_t cs = ld_u32le(cmds + pos + 4);
        if (cs < 8 || cs % 4 || cs > sizeofcmds - pos)
            return BAD(fname, "image %zu (%s): load command %u has bad size %u", i,
                       im->path, k, cs);
        pos += cs;
    }

    bool has_uuid = false, has_symtab = false, has_fs = false, has_text = false,
         has_le = false;
    uint8_t uuid[16];
    uint32_t symoff = 0, nsyms = 0, stroff = 0, strsize = 0, fsoff = 0, fssize = 0;
    uint64_t le_vmaddr = 0, le_fileoff = 0, le_filesize = 0;
    size_t cap = 0;
    pos = 0;
    for (uint32_t k = 0; k < ncmds; k++) {
        const uint8_t *cmd = cmds + pos;
        uint32_t type = ld_u32le(cmd) & ~LC_REQ_DYLD, cs = ld_u32le(cmd + 4);
        pos += cs;
        if (type == LC_SEGMENT)
            return BAD(fname, "image %zu (%s): 32-bit segment in a 64-bit image", i,
                       im->path);
        if (type == LC_SEGMENT_64) {
            if (cs < SEG_CMD_64)
                return BAD(fname, "image %zu (%s): segment command %u of %u bytes", i,
                           im->path, k, cs);
            char seg[17];
            memcpy(seg, cmd + 8, 16);
            seg[16] = 0;
            uint64_t vmaddr = ld_u64le(cmd + 24), vmsize = ld_u64le(cmd + 32), vmend;
            uint64_t fileoff = ld_u64le(cmd + 40), filesize = ld_u64le(cmd + 48);
            uint32_t nsects = ld_u32le(cmd + 64);
            if (!u64_add(vmaddr, vmsize, &vmend))
                return BAD(fname, "image %zu (%s): segment %s wraps the address space", i,
                           im->path, seg);
            if (nsects > (cs - SEG_CMD_64) / SECT_64)
                return BAD(fname, "image %zu (%s): segment %s declares %u sections, its "
                                  "command holds %u", i, im->path, seg, nsects,
                           (cs - SEG_CMD_64) / SECT_64);
            if (strcmp(seg, "__TEXT") == 0 && !has_text) {
                has_text = true;
                im->text_vmaddr = vmaddr;
                im->text_vmsize = vmsize;
            } else if (strcmp(seg, "__LINKEDIT") == 0 && !has_le) {
                has_le = true;
                le_vmaddr = vmaddr;
                le_fileoff = fileoff;
                le_filesize = filesize;
            }
            if (nsects && !array_grow((void **)&im->sects, &cap, im->nsects + nsects,
                                      sizeof *im->sects))
                return symd_fail(err, SYMD_E_NOMEM, "out of memory");
            for (uint32_t s = 0; s < nsects; s++) {
                const uint8_t *p = cmd + SEG_CMD_64 + (size_t)s * SECT_64;
                macho_section *d = &im->sects[im->nsects];
                memcpy(d->sectname, p, 16);
                d->sectname[16] = 0;
                memcpy(d->segname, p + 16, 16);
                d->segname[16] = 0;
                d->addr = ld_u64le(p + 32);
                d->size = ld_u64le(p + 40);
                d->offset = ld_u32le(p + 48);
                d->flags = ld_u32le(p + 64);
                uint64_t send;
                if (!u64_add(d->addr, d->size, &send) ||
                    (d->size && (d->addr < vmaddr || send > vmend)))
                    return BAD(fname, "image %zu (%s): section %s,%s lies outside segment "
                                      "%s", i, im->path, d->segname, d->sectname, seg);
                im->nsects++;
            }
        } else if (type == LC_UUID) {
            if (cs < 24 || has_uuid)
                return BAD(fname, "image %zu (%s): bad or second LC_UUID", i, im->path);
            memcpy(uuid, cmd + 8, 16);
            has_uuid = true;
        } else if (type == LC_SYMTAB) {
            if (cs < 24 || has_symtab)
                return BAD(fname, "image %zu (%s): bad or second LC_SYMTAB", i, im->path);
            has_symtab = true;
            symoff = ld_u32le(cmd + 8);
            nsyms = ld_u32le(cmd + 12);
            stroff = ld_u32le(cmd + 16);
            strsize = ld_u32le(cmd + 20);
        } else if (type == LC_FUNCTION_STARTS) {
            if (cs < 16 || has_fs)
                return BAD(fname, "image %zu (%s): bad or second LC_FUNCTION_STARTS", i,
                           im->path);
            has_fs = true;
            fsoff = ld_u32le(cmd + 8);
            fssize = ld_u32le(cmd + 12);
        }
    }

    if (!has_text)
        return BAD(fname, "image %zu (%s): no __TEXT segment", i, im->path);
    if (im->text_vmaddr != im->address)
        return BAD(fname, "image %zu (%s): __TEXT at 0x%llx, the image table says 0x%llx",
                   i, im->path, (unsigned long long)im->text_vmaddr,
                   (unsigned long long)im->address);
    if (!map_range(c, im->text_vmaddr, im->text_vmsize, NULL))
        return BAD(fname, "image %zu (%s): __TEXT [0x%llx, +0x%llx) is not inside one "
                          "mapping", i, im->path, (unsigned long long)im->text_vmaddr,
                   (unsigned long long)im->text_vmsize);
    if (has_uuid)
        memcpy(im->uuid, uuid, 16);

    if ((has_symtab && (nsyms || strsize)) || (has_fs && fssize)) {
        /* LC_SYMTAB and LC_FUNCTION_STARTS give file offsets in the file
         * that holds __LINKEDIT: relative to the segment's fileoff they are
         * offsets from its mapped address. */
        if (!has_le)
            return BAD(fname, "image %zu (%s): LC_SYMTAB without a __LINKEDIT segment", i,
                       im->path);
        im->linkedit = map_range(c, le_vmaddr, le_filesize, NULL);
        if (!im->linkedit)
            return BAD(fname, "image %zu (%s): __LINKEDIT [0x%llx, +0x%llx) is not inside "
                              "one mapping", i, im->path, (unsigned long long)le_vmaddr,
                       (unsigned long long)le_filesize);
        im->linkedit_size = le_filesize;
        if (has_symtab && (nsyms || strsize)) {
            if (symoff < le_fileoff || symoff - le_fileoff > le_filesize ||
                nsyms > (le_filesize - (symoff - le_fileoff)) / NLIST_64)
                return BAD(fname, "image %zu (%s): LC_SYMTAB symbols (symoff 0x%x, nsyms %u) "
                                  "lie outside __LINKEDIT (fileoff 0x%llx, 0x%llx bytes)",
                           i, im->path, symoff, nsyms, (unsigned long long)le_fileoff,
                           (unsigned long long)le_filesize);
            if (stroff < le_fileoff || !range_ok(stroff - le_fileoff, strsize, le_filesize))
                return BAD(fname, "image %zu (%s): LC_SYMTAB strings (stroff 0x%x, strsize "
                                  "%u) lie outside __LINKEDIT (fileoff 0x%llx, 0x%llx bytes)",
                           i, im->path, stroff, strsize, (unsigned long long)le_fileoff,
                           (unsigned long long)le_filesize);
            im->symoff = (uint32_t)(symoff - le_fileoff);
            im->nsyms = nsyms;
            im->stroff = (uint32_t)(stroff - le_fileoff);
            im->strsize = strsize;
        }
        if (has_fs && fssize) {
            if (fsoff < le_fileoff || !range_ok(fsoff - le_fileoff, fssize, le_filesize))
                return BAD(fname, "image %zu (%s): LC_FUNCTION_STARTS (offset 0x%x, %u bytes) "
                                  "lies outside __LINKEDIT", i, im->path, fsoff, fssize);
            /* Each entry takes a byte at least: fssize bounds the count. */
            im->fstarts = malloc((size_t)fssize * sizeof *im->fstarts);
            if (!im->fstarts)
                return symd_fail(err, SYMD_E_NOMEM, "out of memory");
            cursor cu = cur_make(im->linkedit + (fsoff - le_fileoff), fssize);
            uint64_t addr = im->text_vmaddr; /* unsigned deltas: ascending */
            while (cur_left(&cu)) {
                uint64_t delta;
                if (!cur_uleb(&cu, &delta))
                    return BAD(fname, "image %zu (%s): LC_FUNCTION_STARTS: bad ULEB128", i,
                               im->path);
                if (delta == 0)
                    break;
                if (!u64_add(addr, delta, &addr))
                    return BAD(fname, "image %zu (%s): LC_FUNCTION_STARTS: address "
                                      "overflows", i, im->path);
                im->fstarts[im->nfstarts++] = addr;
            }
        }
    }
    return SYMD_OK;
}

/* ---- local symbols ---------------------------------------------------------- */

/* The local-symbols area [off, off+size) of file f (whose header h says
 * whether entries are 32- or 64-bit); images get their entry. */
static symd_status read_locals(dyld_cache *c, const hdr *h, uint64_t off, uint64_t size,
                               symd_err *err)
{
    const dyld_cache_file *f = h->f;
    if (!range_ok(off, size, f->len))
        return BAD(f->name, "local symbols (localSymbolsOffset 0x%llx, localSymbolsSize "
                            "0x%llx) point past the %zu-byte file", (unsigned long long)off,
                   (unsigned long long)size, f->len);
    if (size < LOCALS_INFO_SIZE)
        return BAD(f->name, "local symbols info of %llu bytes is shorter than its %u-byte "
                            "header", (unsigned long long)size, LOCALS_INFO_SIZE);
    const uint8_t *a = f->buf + off;
    uint32_t nlo = ld_u32le(a), nlc = ld_u32le(a + 4), so = ld_u32le(a + 8),
             ss = ld_u32le(a + 12), eo = ld_u32le(a + 16), ec = ld_u32le(a + 20);
    bool wide = h->size >= H_SYMBOL_FILE_UUID; /* dyld's test for 64-bit entries */
    uint32_t esz = wide ? LOCALS_ENTRY_64 : LOCALS_ENTRY_32;
    symd_status st = table_fits(f->name, "local symbols nlist table (nlistCount)", nlo, nlc,
                                NLIST_64, size, err);
    if (st == SYMD_OK)
        st = table_fits(f->name, "local symbols entries (entriesCount)", eo, ec, esz, size,
                        err);
    if (st != SYMD_OK)
        return st;
    table t[] = {
        {"local symbols info header", 0, LOCALS_INFO_SIZE},
        {"local symbols nlist table", nlo, (uint64_t)nlc * NLIST_64},
        {"local symbols strings", so, ss},
        {"local symbols entries", eo, (uint64_t)ec * esz},
    };
    st = check_tables(f->name, "local symbols area", t, 4, size, err);
    if (st != SYMD_OK)
        return st;
    /* Symbols are read as a slice's, with 32-bit offsets from the area. */
    if ((uint64_t)nlo + (uint64_t)nlc * NLIST_64 > UINT32_MAX)
        return symd_fail(err, SYMD_E_UNSUPPORTED, "%s: local symbols nlist table ends past "
                         "4 GiB into its area", f->name);
    c->has_locals = true;
    c->locals_size = size;
    c->locals = a;
    c->lnlist_off = nlo;
    c->lnlist_count = nlc;
    c->lstr_off = so;
    c->lstr_size = ss;
    if (ec == 0)
        return SYMD_OK;

    keyed *v = malloc((size_t)ec * sizeof *v);
    if (!v)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < ec; i++) {
        const uint8_t *e = a + eo + (size_t)i * esz;
        uint64_t dylib = wide ? ld_u64le(e) : ld_u32le(e);
        uint32_t start = ld_u32le(e + esz - 8), count = ld_u32le(e + esz - 4);
        if (start > nlc || count > nlc - start) {
            free(v);
            return BAD(f->name, "local symbols entry %u (nlistStartIndex %u, nlistCount %u) "
                                "lies outside the %u-entry nlist table", i, start, count, nlc);
        }
        v[i].key = dylib;
        v[i].index = i;
    }
    /* Each entry's symbols are its own: ranges sorted by start, apart. */
    keyed *r = malloc((size_t)ec * sizeof *r);
    if (!r) {
        free(v);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    size_t nr = 0;
    for (uint32_t i = 0; i < ec; i++) {
        const uint8_t *e = a + eo + (size_t)i * esz;
        if (ld_u32le(e + esz - 4)) {
            r[nr].key = ld_u32le(e + esz - 8);
            r[nr++].index = i;
        }
    }
    qsort(r, nr, sizeof *r, cmp_keyed);
    for (size_t i = 1; i < nr; i++) {
        const uint8_t *p = a + eo + r[i - 1].index * esz;
        if (r[i].key < r[i - 1].key + ld_u32le(p + esz - 4)) {
            st = BAD(f->name, "local symbols entries %zu and %zu share nlist entries (from "
                              "%llu)", r[i - 1].index, r[i].index,
                     (unsigned long long)r[i].key);
            free(r);
            free(v);
            return st;
        }
    }
    free(r);
    qsort(v, ec, sizeof *v, cmp_keyed);
    for (uint32_t i = 1; i < ec; i++)
        if (v[i].key == v[i - 1].key) {
            st = BAD(f->name, "local symbols entries %zu and %zu name one dylibOffset 0x%llx",
                     v[i - 1].index, v[i].index, (unsigned long long)v[i].key);
            free(v);
            return st;
        }
    /* 64-bit entries: dylibOffset is the image's address less the cache's;
     * 32-bit ones (older caches): its header's offset in the main file. */
    for (size_t i = 0; i < c->nimages; i++) {
        dyld_cache_image *im = &c->images[i];
        if (im->alias_of >= 0)
            continue;
        uint64_t key;
        if (wide)
            key = im->address - c->base;
        else if (im->hdr_file == 0)
            key = im->hdr_off;
        else
            continue;
        const keyed *k = find_key(v, ec, key);
        if (!k)
            continue;
        const uint8_t *e = a + eo + k->index * esz;
        im->has_locals = true;
        im->local_start = ld_u32le(e + esz - 8);
        im->local_count = ld_u32le(e + esz - 4);
    }
    free(v);
    return SYMD_OK;
}

static symd_status check_symtabs_apart(const dyld_cache *c, symd_err *err)
{
    keyed *v = malloc((c->nimages ? c->nimages : 1) * sizeof *v);
    if (!v)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < c->nimages; i++) {
        const dyld_cache_image *im = &c->images[i];
        if (im->alias_of < 0 && im->nsyms) {
            v[n].key = (uint64_t)(uintptr_t)(im->linkedit + im->symoff);
            v[n++].index = i;
        }
    }
    qsort(v, n, sizeof *v, cmp_keyed);
    symd_status st = SYMD_OK;
    for (size_t i = 1; i < n; i++) {
        const dyld_cache_image *p = &c->images[v[i - 1].index], *q = &c->images[v[i].index];
        if (v[i].key < v[i - 1].key + (uint64_t)p->nsyms * NLIST_64) {
            st = BAD(c->files[0].name, "image %zu (%s): LC_SYMTAB symbols overlap those of "
                                       "image %zu (%s)", v[i].index, q->path,
                     v[i - 1].index, p->path);
            break;
        }
    }
    free(v);
    return st;
}

/* ---- the whole cache ------------------------------------------------------ */

static int find_file(const dyld_cache *c, const char *suffix)
{
    for (size_t i = 1; i < c->nfiles; i++)
        if (c->files[i].suffix && strcmp(c->files[i].suffix, suffix) == 0)
            return (int)i;
    return -1;
}

/* Subcache entry i's file suffix: v1 entries (headers without cacheSubType)
 * have none and mean ".1", ".2", ...; v2 entries carry fileSuffix. */
static symd_status entry_suffix(const char *fname, const uint8_t *e, uint32_t i,
                                uint32_t entsize, char suffix[SUFFIX_SIZE + 1], symd_err *err)
{
    if (entsize == SUBCACHE_V1_SIZE) {
        snprintf(suffix, SUFFIX_SIZE + 1, ".%u", i + 1);
        return SYMD_OK;
    }
    const uint8_t *s = e + 24, *nul = memchr(s, 0, SUFFIX_SIZE);
    if (!nul)
        return BAD(fname, "subCacheArray[%u].fileSuffix has no terminator", i);
    memcpy(suffix, s, (size_t)(nul - s) + 1);
    if (suffix[0] != '.' || strchr(suffix, '/') || strcmp(suffix, ".symbols") == 0)
        return BAD(fname, "subCacheArray[%u].fileSuffix '%s' is not a subcache suffix", i,
                   suffix);
    return SYMD_OK;
}

symd_status dyld_cache_suffixes(const dyld_cache_file *mf, dyld_cache_suffix **out,
                                size_t *n, symd_err *err)
{
    *out = NULL;
    *n = 0;
    hdr mh;
    symd_status st = read_header(mf, &mh, err);
    if (st != SYMD_OK)
        return st;
    uint32_t sub_off = h32(&mh, H_SUBCACHE_OFFSET), sub_count = h32(&mh, H_SUBCACHE_COUNT);
    uint32_t sub_size = mh.size <= H_CACHE_SUBTYPE ? SUBCACHE_V1_SIZE : SUBCACHE_V2_SIZE;
    bool syms = has(&mh, H_SYMBOL_FILE_UUID, 16) && !uuid_zero(mf->buf + H_SYMBOL_FILE_UUID);
    if ((st = table_fits(mf->name, "subcache table (subCacheArrayOffset, "
                         "subCacheArrayCount)", sub_off, sub_count, sub_size, mf->len,
                         err)) != SYMD_OK)
        return st;
    size_t total = (size_t)sub_count + syms;
    if (total == 0)
        return SYMD_OK;
    dyld_cache_suffix *v = malloc(total * sizeof *v);
    if (!v)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < sub_count; i++)
        if ((st = entry_suffix(mf->name, mf->buf + sub_off + (size_t)i * sub_size, i,
                               sub_size, v[i].s, err)) != SYMD_OK) {
            free(v);
            return st;
        }
    if (syms)
        strcpy(v[sub_count].s, ".symbols");
    *out = v;
    *n = total;
    return SYMD_OK;
}

static symd_status open_cache(dyld_cache *c, bool *used, symd_err *err)
{
    const dyld_cache_file *mf = &c->files[0];
    const char *fname = mf->name;
    hdr mh;
    symd_status st = read_header(mf, &mh, err);
    if (st != SYMD_OK)
        return st;
    magic_arch(mf->buf, c->arch);
    if (strcmp(c->arch, "arm64") && strcmp(c->arch, "arm64e") && strcmp(c->arch, "x86_64") &&
        strcmp(c->arch, "x86_64h"))
        return symd_fail(err, SYMD_E_UNSUPPORTED, "%s: dyld cache for architecture '%s' "
                         "(arm64, arm64e, x86_64 and x86_64h are supported)", fname, c->arch);
    c->header_size = mh.size;
    if (has(&mh, H_UUID, 16))
        memcpy(c->uuid, mf->buf + H_UUID, 16);
    c->platform = h32(&mh, H_PLATFORM); /* 0 when the header is too short for them */
    c->os_version = h32(&mh, H_OS_VERSION);
    st = read_mappings(c, 0, &mh, err);
    if (st != SYMD_OK)
        return st;
    if (c->nmaps == 0)
        return BAD(fname, "mappingCount is 0");
    c->base = c->maps[0].address;
    for (size_t i = 1; i < c->nmaps; i++)
        if (c->maps[i].address < c->base)
            c->base = c->maps[i].address;

    /* The main header's tables. */
    uint64_t img_off, img_count;
    const char *img_what;
    if (has(&mh, H_IMAGES_COUNT, 4)) {
        img_off = h32(&mh, H_IMAGES_OFFSET);
        img_count = h32(&mh, H_IMAGES_COUNT);
        img_what = "image table (imagesOffset, imagesCount)";
    } else {
        img_off = h32(&mh, H_IMAGES_OFFSET_OLD);
        img_count = h32(&mh, H_IMAGES_COUNT_OLD);
        img_what = "image table (imagesOffsetOld, imagesCountOld)";
    }
    uint64_t txt_off = h64(&mh, H_IMAGES_TEXT_OFFSET), txt_count = h64(&mh, H_IMAGES_TEXT_COUNT);
    uint32_t sub_off = h32(&mh, H_SUBCACHE_OFFSET), sub_count = h32(&mh, H_SUBCACHE_COUNT);
    uint32_t sub_size = mh.size <= H_CACHE_SUBTYPE ? SUBCACHE_V1_SIZE : SUBCACHE_V2_SIZE;
    uint64_t loc_off = h64(&mh, H_LOCAL_SYMS_OFFSET), loc_size = h64(&mh, H_LOCAL_SYMS_SIZE);
    const uint8_t *sym_uuid = has(&mh, H_SYMBOL_FILE_UUID, 16) &&
                                      !uuid_zero(mf->buf + H_SYMBOL_FILE_UUID)
                                  ? mf->buf + H_SYMBOL_FILE_UUID
                                  : NULL;
    if ((st = table_fits(fname, img_what, img_off, img_count, IMAGE_INFO_SIZE, mf->len,
                         err)) != SYMD_OK ||
        (st = table_fits(fname, "text table (imagesTextOffset, imagesTextCount)", txt_off,
                         txt_count, TEXT_INFO_SIZE, mf->len, err)) != SYMD_OK ||
        (st = table_fits(fname, "subcache table (subCacheArrayOffset, subCacheArrayCount)",
                         sub_off, sub_count, sub_size, mf->len, err)) != SYMD_OK)
        return st;
    uint32_t mcount = ld_u32le(mf->buf + H_MAPPING_COUNT);
    table t[] = {
        {"header (up to mappingOffset)", 0, mh.size},
        {"mapping table", mh.size, (uint64_t)mcount * MAPPING_SIZE},
        {"mapping-with-slide table", h32(&mh, H_MAPPING_SLIDE_OFFSET),
         (uint64_t)h32(&mh, H_MAPPING_SLIDE_COUNT) * MAPPING_SLIDE_SIZE},
        {"image table", img_off, img_count * IMAGE_INFO_SIZE},
        {"text table", txt_off, txt_count * TEXT_INFO_SIZE},
        {"subcache table", sub_off, (uint64_t)sub_count * sub_size},
        {"local symbols (localSymbolsOffset, localSymbolsSize)", loc_off, loc_size},
        {"code signature (codeSignatureOffset, codeSignatureSize)",
         h64(&mh, H_CODE_SIG_OFFSET), h64(&mh, H_CODE_SIG_SIZE)},
    };
    st = check_tables(fname, "file", t, sizeof t / sizeof t[0], mf->len, err);
    if (st != SYMD_OK)
        return st;

    /* Subcaches: each entry's file given, with the UUID the entry names. */
    for (uint32_t i = 0; i < sub_count; i++) {
        const uint8_t *e = mf->buf + sub_off + (size_t)i * sub_size;
        char suffix[SUFFIX_SIZE + 1];
        if ((st = entry_suffix(fname, e, i, sub_size, suffix, err)) != SYMD_OK)
            return st;
        int fi = find_file(c, suffix);
        if (fi < 0)
            return symd_fail(err, SYMD_E_NOT_FOUND, "%s: subcache %s (subCacheArray[%u]) "
                             "not given", fname, suffix, i);
        if (used[fi])
            return BAD(fname, "subCacheArray[%u] names subcache %s a second time", i,
                       suffix);
        used[fi] = true;
        c->nsubcaches++;
        const dyld_cache_file *sf = &c->files[fi];
        hdr sh;
        if ((st = read_header(sf, &sh, err)) != SYMD_OK)
            return st;
        if (memcmp(sf->buf, mf->buf, 16) != 0)
            return BAD(sf->name, "magic differs from the main cache's");
        char a[37], b[37];
        if (!has(&sh, H_UUID, 16) || memcmp(sf->buf + H_UUID, e, 16) != 0) {
            fmt_uuid(e, a);
            if (has(&sh, H_UUID, 16))
                fmt_uuid(sf->buf + H_UUID, b);
            else
                strcpy(b, "none");
            return BAD(sf->name, "subcache UUID %s does not match subCacheArray[%u].uuid %s "
                                 "of %s", b, i, a, fname);
        }
        size_t before = c->nmaps;
        if ((st = read_mappings(c, (unsigned)fi, &sh, err)) != SYMD_OK)
            return st;
        uint64_t vmoff = ld_u64le(e + 16), want;
        if (c->nmaps > before &&
            (!u64_add(c->base, vmoff, &want) || c->maps[before].address != want))
            return BAD(sf->name, "first mapping at 0x%llx, subCacheArray[%u].cacheVMOffset "
                                 "0x%llx puts it at 0x%llx", (unsigned long long)
                       c->maps[before].address, i, (unsigned long long)vmoff,
                       (unsigned long long)(c->base + vmoff));
        uint32_t smc = ld_u32le(sf->buf + H_MAPPING_COUNT);
        table st2[] = {
            {"header (up to mappingOffset)", 0, sh.size},
            {"mapping table", sh.size, (uint64_t)smc * MAPPING_SIZE},
            {"mapping-with-slide table", h32(&sh, H_MAPPING_SLIDE_OFFSET),
             (uint64_t)h32(&sh, H_MAPPING_SLIDE_COUNT) * MAPPING_SLIDE_SIZE},
            {"code signature (codeSignatureOffset, codeSignatureSize)",
             h64(&sh, H_CODE_SIG_OFFSET), h64(&sh, H_CODE_SIG_SIZE)},
        };
        if ((st = check_tables(sf->name, "file", st2, 4, sf->len, err)) != SYMD_OK)
            return st;
    }
    if ((st = check_mappings(c, err)) != SYMD_OK)
        return st;

    /* The .symbols file, when the header names one. */
    int symfi = find_file(c, ".symbols");
    hdr symh = {0};
    if (symfi >= 0) {
        used[symfi] = true;
        const dyld_cache_file *sf = &c->files[symfi];
        if (!sym_uuid)
            return symd_fail(err, SYMD_E_INVALID, "%s: %s given, but the cache names no "
                             ".symbols file", fname, sf->name);
        if ((st = read_header(sf, &symh, err)) != SYMD_OK)
            return st;
        if (memcmp(sf->buf, mf->buf, 16) != 0)
            return BAD(sf->name, "magic differs from the main cache's");
        if (!has(&symh, H_UUID, 16) || memcmp(sf->buf + H_UUID, sym_uuid, 16) != 0) {
            char a[37], b[37] = "none";
            fmt_uuid(sym_uuid, a);
            if (has(&symh, H_UUID, 16))
                fmt_uuid(sf->buf + H_UUID, b);
            return BAD(sf->name, "UUID %s does not match symbolFileUUID %s of %s", b, a,
                       fname);
        }
        uint64_t so = h64(&symh, H_LOCAL_SYMS_OFFSET), ss = h64(&symh, H_LOCAL_SYMS_SIZE);
        uint32_t smc = ld_u32le(sf->buf + H_MAPPING_COUNT);
        if ((st = table_fits(sf->name, "mapping table (mappingCount)", symh.size, smc,
                             MAPPING_SIZE, sf->len, err)) != SYMD_OK)
            return st;
        table st3[] = {
            {"header (up to mappingOffset)", 0, symh.size},
            {"mapping table", symh.size, (uint64_t)smc * MAPPING_SIZE},
            {"local symbols (localSymbolsOffset, localSymbolsSize)", so, ss},
        };
        if ((st = check_tables(sf->name, "file", st3, 3, sf->len, err)) != SYMD_OK)
            return st;
    } else if (sym_uuid) {
        c->symbols_file_missing = true;
    }
    for (size_t i = 1; i < c->nfiles; i++)
        if (!used[i])
            return symd_fail(err, SYMD_E_INVALID, "%s (suffix '%s') is no subcache or "
                             ".symbols file of %s", c->files[i].name,
                             c->files[i].suffix ? c->files[i].suffix : "", fname);

    /* The image table; paths, aliases, the text table's UUIDs. */
    if (img_count == 0)
        return SYMD_OK;
    c->images = calloc((size_t)img_count, sizeof *c->images);
    keyed *byaddr = malloc((size_t)img_count * sizeof *byaddr);
    keyed *text = txt_count ? malloc((size_t)txt_count * sizeof *text) : NULL;
    if (!c->images || !byaddr || (txt_count && !text)) {
        free(byaddr);
        free(text);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    c->nimages = (size_t)img_count;
    for (size_t i = 0; i < c->nimages; i++) {
        const uint8_t *e = mf->buf + img_off + i * IMAGE_INFO_SIZE;
        dyld_cache_image *im = &c->images[i];
        im->address = ld_u64le(e);
        im->alias_of = -1;
        uint32_t po = ld_u32le(e + 24);
        size_t room = po < mf->len ? mf->len - po : 0;
        const uint8_t *nul = room ? memchr(mf->buf + po, 0, room < MAX_PATH ? room : MAX_PATH)
                                  : NULL;
        if (!nul) {
            st = BAD(fname, "image %zu: path (pathFileOffset 0x%x) has no terminator %s", i,
                     po, room ? "within 4096 bytes" : "before the end of the file");
            goto out;
        }
        im->path = (const char *)mf->buf + po;
        byaddr[i].key = im->address;
        byaddr[i].index = i;
    }
    qsort(byaddr, c->nimages, sizeof *byaddr, cmp_keyed);
    for (size_t i = 1; i < c->nimages; i++)
        if (byaddr[i].key == byaddr[i - 1].key) {
            size_t first = byaddr[i - 1].index;
            if (c->images[first].alias_of >= 0)
                first = (size_t)c->images[first].alias_of;
            c->images[byaddr[i].index].alias_of = (long)first;
        }
    for (size_t i = 0; i < txt_count; i++) {
        text[i].key = ld_u64le(mf->buf + txt_off + i * TEXT_INFO_SIZE + 16);
        text[i].index = i;
    }
    if (txt_count)
        qsort(text, (size_t)txt_count, sizeof *text, cmp_keyed);
    for (size_t i = 1; i < txt_count; i++)
        if (text[i].key == text[i - 1].key) {
            st = BAD(fname, "text table entries %zu and %zu have one loadAddress 0x%llx",
                     text[i - 1].index, text[i].index, (unsigned long long)text[i].key);
            goto out;
        }

    for (size_t i = 0; i < c->nimages; i++) {
        dyld_cache_image *im = &c->images[i];
        if (im->alias_of >= 0)
            continue;
        if ((st = parse_image(c, i, err)) != SYMD_OK)
            goto out;
        const keyed *k = find_key(text, (size_t)txt_count, im->address);
        const uint8_t *tu = k ? mf->buf + txt_off + k->index * TEXT_INFO_SIZE : NULL;
        if (uuid_zero(im->uuid)) {
            if (!tu || uuid_zero(tu)) {
                st = BAD(fname, "image %zu (%s): no LC_UUID and no text table UUID", i,
                         im->path);
                goto out;
            }
            memcpy(im->uuid, tu, 16);
        } else if (tu && memcmp(tu, im->uuid, 16) != 0) {
            char a[37], b[37];
            fmt_uuid(im->uuid, a);
            fmt_uuid(tu, b);
            st = BAD(fname, "image %zu (%s): LC_UUID %s does not match its text table "
                            "uuid %s", i, im->path, a, b);
            goto out;
        }
    }
    for (size_t i = 0; i < c->nimages; i++) {
        dyld_cache_image *im = &c->images[i];
        if (im->alias_of >= 0) {
            const dyld_cache_image *o = &c->images[im->alias_of];
            memcpy(im->uuid, o->uuid, 16);
            im->arch = o->arch;
            im->cputype = o->cputype;
            im->cpusubtype = o->cpusubtype;
            im->filetype = o->filetype;
            im->text_vmaddr = o->text_vmaddr;
            im->text_vmsize = o->text_vmsize;
        }
    }

    /* Local symbols: the .symbols file's, or an older main cache's own. */
    if (symfi >= 0)
        st = read_locals(c, &symh, h64(&symh, H_LOCAL_SYMS_OFFSET),
                         h64(&symh, H_LOCAL_SYMS_SIZE), err);
    else if (!sym_uuid && loc_size)
        st = read_locals(c, &mh, loc_off, loc_size, err);
    if (st != SYMD_OK)
        goto out;

    /* Each image's LC_SYMTAB entries are its own part of the shared symbol
     * table: no two images' ranges overlap (so checking them all below
     * reads each entry once). */
    if ((st = check_symtabs_apart(c, err)) != SYMD_OK)
        goto out;

    /* Every symbol of every image, checked now so that nothing of a bad
     * cache is stored. */
    for (size_t i = 0; i < c->nimages && st == SYMD_OK; i++) {
        macho_symbol *syms;
        size_t n;
        if (c->images[i].alias_of >= 0)
            continue;
        st = dyld_cache_image_symbols(c, i, &syms, &n, err);
        if (st == SYMD_OK)
            free(syms);
    }
out:
    free(byaddr);
    free(text);
    return st;
}

symd_status dyld_cache_open(const dyld_cache_file *files, size_t nfiles, dyld_cache *c,
                            symd_err *err)
{
    memset(c, 0, sizeof *c);
    if (nfiles == 0)
        return symd_fail(err, SYMD_E_INVALID, "no dyld cache file given");
    c->files = files;
    c->nfiles = nfiles;
    bool *used = calloc(nfiles, sizeof *used);
    if (!used)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    symd_status st = open_cache(c, used, err);
    free(used);
    if (st != SYMD_OK)
        dyld_cache_close(c);
    return st;
}

void dyld_cache_close(dyld_cache *c)
{
    for (size_t i = 0; i < c->nimages; i++) {
        free(c->images[i].sects);
        free(c->images[i].fstarts);
    }
    free(c->images);
    free(c->maps);
    memset(c, 0, sizeof *c);
}

/* Gathers one symbol table through macho_function_symbols, as for a thin
 * slice whose bytes are buf. */
static symd_status table_symbols(const dyld_cache *c, size_t i, const dyld_cache_image *im,
                                 const char *what, const uint8_t *buf, size_t len,
                                 uint32_t symoff, uint32_t nsyms, uint32_t stroff,
                                 uint32_t strsize, macho_symbol **out, size_t *n,
                                 symd_err *err)
{
    macho_image m;
    memset(&m, 0, sizeof m);
    m.buf = buf;
    m.len = len;
    m.is64 = true;
    m.cputype = im->cputype;
    m.sects = im->sects;
    m.nsects = im->nsects;
    m.has_symtab = true;
    m.symoff = symoff;
    m.nsyms = nsyms;
    m.stroff = stroff;
    m.strsize = strsize;
    symd_err e = {0};
    symd_status st = macho_function_symbols(&m, out, n, &e);
    if (st != SYMD_OK)
        return symd_fail_at(err, e.kind, e.src_file, e.src_line, "%s: image %zu (%s): %s: %s",
                            c->files[0].name, i, im->path, what, e.msg);
    return SYMD_OK;
}

symd_status dyld_cache_image_symbols(const dyld_cache *c, size_t i, macho_symbol **out,
                                     size_t *n, symd_err *err)
{
    *out = NULL;
    *n = 0;
    if (i >= c->nimages)
        return symd_fail(err, SYMD_E_INVALID, "image %zu of %zu", i, c->nimages);
    const dyld_cache_image *im = &c->images[i];
    if (im->alias_of >= 0)
        im = &c->images[im->alias_of];
    macho_symbol *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    symd_status st = SYMD_OK;
    if (im->nsyms)
        st = table_symbols(c, i, im, "LC_SYMTAB", im->linkedit, (size_t)im->linkedit_size,
                           im->symoff, im->nsyms, im->stroff, im->strsize, &a, &na, err);
    if (st == SYMD_OK && im->has_locals && im->local_count)
        st = table_symbols(c, i, im, "local symbols", c->locals, (size_t)c->locals_size,
                           c->lnlist_off + im->local_start * NLIST_64, im->local_count,
                           c->lstr_off, c->lstr_size, &b, &nb, err);
    if (st != SYMD_OK) {
        free(a);
        return st;
    }
    if (nb) {
        macho_symbol *ab = realloc(a, (na + nb) * sizeof *ab);
        if (!ab) {
            free(a);
            free(b);
            return symd_fail(err, SYMD_E_NOMEM, "out of memory");
        }
        a = ab;
        for (size_t k = 0; k < nb; k++) {
            a[na + k] = b[k];
            a[na + k].index = im->nsyms + b[k].index; /* after the image's own */
        }
        na += nb;
    }
    free(b);
    *out = a;
    *n = na;
    return SYMD_OK;
}

symd_status dyld_cache_image_symindex(const dyld_cache *c, size_t i, uint8_t **blob,
                                      size_t *len, uint32_t *nsyms, uint32_t *nstarts,
                                      symd_err *err)
{
    *blob = NULL;
    *len = 0;
    macho_symbol *syms;
    size_t n;
    symd_status st = dyld_cache_image_symbols(c, i, &syms, &n, err);
    if (st != SYMD_OK)
        return st;
    const dyld_cache_image *im = &c->images[i];
    if (im->alias_of >= 0)
        im = &c->images[im->alias_of];
    st = symindex_build_symbols(syms, n, im->text_vmaddr, im->fstarts, im->nfstarts, blob,
                                len, nsyms, nstarts, err);
    free(syms);
    return st;
}

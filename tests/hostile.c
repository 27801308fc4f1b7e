/* Hostile variants of the real fixtures. */
#include "hostile.h"

#include <stdlib.h>
#include <string.h>

#include "../dsym/lineindex.h"
#include "../macho/macho.h"
#include "../macho/symindex.h"
#include "../util/cursor.h"
#include "test.h"

#define LC_SEGMENT_64 0x19u
#define LC_SYMTAB 0x2u
#define LC_UUID 0x1bu
#define LC_FUNCTION_STARTS 0x26u

symd_status hostile_pipeline(const uint8_t *buf, size_t len, symd_err *err)
{
    macho_slice sl[MACHO_MAX_SLICES];
    size_t n;
    symd_status st = macho_parse_slices(buf, len, sl, &n, err);
    for (size_t i = 0; st == SYMD_OK && i < n; i++) {
        macho_image img;
        st = macho_parse_image(buf + sl[i].offset, (size_t)sl[i].size, &img, err);
        if (st != SYMD_OK)
            break;
        if (img.cputype != sl[i].cputype)
            st = symd_fail(err, SYMD_E_CORRUPT, "fat/slice cputype mismatch");
        else if (!img.has_uuid)
            st = symd_fail(err, SYMD_E_NO_UUID, "no uuid");
        uint8_t *blob = NULL;
        size_t blen;
        if (st == SYMD_OK)
            st = symindex_build(&img, &blob, &blen, NULL, NULL, err);
        /* and the DWARF of dSYM-like inputs, as an upload converts it */
        uint8_t *lines = NULL;
        size_t llen;
        lineindex_stats lst;
        if (st == SYMD_OK)
            st = lineindex_build(&img, NULL, (size_t)1 << 28, &lines, &llen, &lst, err);
        free(lines);
        free(blob);
        macho_image_free(&img);
    }
    return st;
}

/* Offset of the first load command of type cmd in a thin 64-bit file. */
static size_t find_lc(const uint8_t *b, uint32_t cmd, uint32_t nth)
{
    uint32_t ncmds = ld_u32le(b + 16);
    size_t off = 32;
    for (uint32_t i = 0; i < ncmds; i++) {
        if (ld_u32le(b + off) == cmd && nth-- == 0)
            return off;
        off += ld_u32le(b + off + 4);
    }
    return 0;
}

/* Offset of the LC_SEGMENT_64 named seg. */
static size_t find_seg(const uint8_t *b, const char *seg)
{
    for (uint32_t k = 0;; k++) {
        size_t o = find_lc(b, LC_SEGMENT_64, k);
        if (!o || strncmp((const char *)b + o + 8, seg, 16) == 0)
            return o;
    }
}

typedef struct {
    hostile_case *v;
    size_t n, cap;
    const uint8_t *base;
    size_t base_len;
} builder;

/* A copy of the base file to break; registered with its expectation. */
static uint8_t *add(builder *b, const char *name, symd_status want)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->v = realloc(b->v, b->cap * sizeof *b->v);
    }
    hostile_case *c = &b->v[b->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->len = b->base_len;
    c->buf = malloc(c->len + 1);
    memcpy(c->buf, b->base, c->len);
    c->want = want;
    switch (want) {
    case SYMD_E_NOT_MACHO: c->http = 415; c->code = "not_macho"; break;
    case SYMD_E_NO_UUID: c->http = 400; c->code = "no_uuid"; break;
    case SYMD_E_UNSUPPORTED: c->http = 422; c->code = "unsupported"; break;
    default: c->http = 400; c->code = "malformed_macho"; break;
    }
    return c->buf;
}

static void add_raw(builder *b, const char *name, const void *data, size_t len,
                    symd_status want)
{
    const uint8_t *base = b->base;
    size_t blen = b->base_len;
    b->base = data;
    b->base_len = len;
    add(b, name, want);
    b->base = base;
    b->base_len = blen;
}

static void thin_cases(builder *b)
{
    const uint8_t *f = b->base;
    size_t len = b->base_len;
    uint8_t *m;
    size_t o, text = find_seg(f, "__TEXT"), le = find_seg(f, "__LINKEDIT");
    size_t symtab = find_lc(f, LC_SYMTAB, 0), fs = find_lc(f, LC_FUNCTION_STARTS, 0);
    size_t uuid = find_lc(f, LC_UUID, 0);

    m = add(b, "cmdsize 0", SYMD_E_CORRUPT);
    st_u32le(m + 32 + 4, 0);
    m = add(b, "cmdsize past the end", SYMD_E_CORRUPT);
    st_u32le(m + 32 + 4, 0xfffffff0u);
    m = add(b, "cmdsize unaligned", SYMD_E_CORRUPT);
    st_u32le(m + 32 + 4, ld_u32le(m + 36) + 2);
    m = add(b, "cmdsize overruns sizeofcmds", SYMD_E_CORRUPT);
    o = find_lc(m, LC_UUID, 0);
    st_u32le(m + 20, (uint32_t)(o - 32 + 16)); /* sizeofcmds ends inside LC_UUID */
    m = add(b, "sizeofcmds past the end", SYMD_E_CORRUPT);
    st_u32le(m + 20, (uint32_t)len);
    m = add(b, "ncmds huge", SYMD_E_CORRUPT);
    st_u32le(m + 16, 0xffffffffu);
    m = add(b, "segments overlap", SYMD_E_CORRUPT);
    st_u64le(m + le + 40, ld_u64le(m + text + 40) + 0x100);
    m = add(b, "segment leaves the file", SYMD_E_CORRUPT);
    st_u64le(m + le + 48, ld_u64le(m + le + 48) + 0x100000);
    m = add(b, "segment vm range wraps", SYMD_E_CORRUPT);
    st_u64le(m + text + 32, UINT64_MAX);
    m = add(b, "nsects huge", SYMD_E_CORRUPT);
    st_u32le(m + text + 64, 0xffffffffu);
    m = add(b, "section outside its segment", SYMD_E_CORRUPT);
    st_u64le(m + text + 72 + 32, 0x1000); /* __text addr */
    m = add(b, "section leaves the file", SYMD_E_CORRUPT);
    st_u32le(m + text + 72 + 48, (uint32_t)len - 4); /* __text offset */
    m = add(b, "nsyms huge", SYMD_E_CORRUPT);
    st_u32le(m + symtab + 12, 0xffffffffu);
    m = add(b, "symoff past the end", SYMD_E_CORRUPT);
    st_u32le(m + symtab + 8, (uint32_t)len + 16);
    m = add(b, "string table past the end", SYMD_E_CORRUPT);
    st_u32le(m + symtab + 20, (uint32_t)len);
    m = add(b, "string index out of range", SYMD_E_CORRUPT);
    {
        uint32_t symoff = ld_u32le(m + symtab + 8), nsyms = ld_u32le(m + symtab + 12);
        uint32_t strsize = ld_u32le(m + symtab + 20);
        for (uint32_t i = 0; i < nsyms; i++) {
            uint8_t *e = m + symoff + (size_t)i * 16;
            if ((e[4] & 0xee) == 0x0e && e[5] == 1 && ld_u64le(e + 8) > 0x100000000ull) {
                st_u32le(e, strsize + 100);
                break;
            }
        }
    }
    m = add(b, "symbol in section 200 of few", SYMD_E_CORRUPT);
    {
        uint32_t symoff = ld_u32le(m + symtab + 8), nsyms = ld_u32le(m + symtab + 12);
        for (uint32_t i = 0; i < nsyms; i++) {
            uint8_t *e = m + symoff + (size_t)i * 16;
            if ((e[4] & 0xee) == 0x0e && e[5] == 1) {
                e[5] = 200;
                break;
            }
        }
    }
    if (fs) {
        m = add(b, "function starts leave the file", SYMD_E_CORRUPT);
        st_u32le(m + fs + 8, (uint32_t)len - 2);
        m = add(b, "function starts bad ULEB128", SYMD_E_CORRUPT);
        memset(m + ld_u32le(m + fs + 8), 0xff, ld_u32le(m + fs + 12));
    }
    m = add(b, "two LC_UUIDs", SYMD_E_CORRUPT);
    st_u32le(m + symtab, LC_UUID);
    m = add(b, "no LC_UUID", SYMD_E_NO_UUID);
    st_u32le(m + uuid, 0x7fffff);
    m = add(b, "LC_UUID too short", SYMD_E_CORRUPT);
    {
        /* Shrink LC_UUID to 8 bytes and move the rest up: still a valid table. */
        size_t ucs = ld_u32le(m + uuid + 4), end = 32 + ld_u32le(m + 20);
        memmove(m + uuid + 8, m + uuid + ucs, end - uuid - ucs);
        st_u32le(m + uuid + 4, 8);
        st_u32le(m + 20, ld_u32le(m + 20) - (uint32_t)(ucs - 8));
    }
    m = add(b, "big-endian magic", SYMD_E_UNSUPPORTED);
    st_u32le(m, 0xcefaedfeu);
}

static void fat_cases(builder *b)
{
    uint8_t *m;
    m = add(b, "fat nfat_arch huge", SYMD_E_CORRUPT);
    m[4] = m[5] = m[6] = m[7] = 0xff;
    m = add(b, "fat nfat_arch zero", SYMD_E_CORRUPT);
    memset(m + 4, 0, 4);
    m = add(b, "fat slices overlap", SYMD_E_CORRUPT);
    memcpy(m + 8 + 20 + 8, m + 8 + 8, 4); /* slice 1 offset = slice 0 offset */
    m = add(b, "fat slice leaves the file", SYMD_E_CORRUPT);
    memset(m + 8 + 20 + 12, 0x7f, 4);
    m = add(b, "fat slice offset wraps", SYMD_E_CORRUPT);
    memset(m + 8 + 8, 0xff, 8);
    m = add(b, "fat slice inside the header", SYMD_E_CORRUPT);
    memset(m + 8 + 8, 0, 4);
    m = add(b, "fat architecture twice", SYMD_E_CORRUPT);
    memcpy(m + 8 + 20, m + 8, 8);
    m = add(b, "fat cputype disagrees with slice", SYMD_E_CORRUPT);
    m[8 + 3] ^= 0x01; /* arm64 <-> x86_64 differ in more; any change will do */
}

size_t hostile_build(hostile_case **out)
{
    builder b = {0};
    size_t len;
    uint8_t *thin = read_fixture("fixtures/bin/bigapp-arm64", &len);
    if (thin) {
        b.base = thin;
        b.base_len = len;
        thin_cases(&b);
        free(thin);
    }
    uint8_t *fat = read_fixture("fixtures/bin/bigapp-fat", &len);
    if (fat) {
        b.base = fat;
        b.base_len = len;
        fat_cases(&b);
        free(fat);
    }
    static const char text[] = "this is not a binary at all\n";
    static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13};
    static const uint8_t java[] = {0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 0x34, 0, 0x1d, 0x0a, 0};
    static const uint8_t elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t tiny[] = {0xcf, 0xfa, 0xed};
    add_raw(&b, "plain text", text, sizeof text - 1, SYMD_E_NOT_MACHO);
    add_raw(&b, "PNG header", png, sizeof png, SYMD_E_NOT_MACHO);
    add_raw(&b, "ELF header", elf, sizeof elf, SYMD_E_NOT_MACHO);
    add_raw(&b, "Java class (fat magic)", java, sizeof java, SYMD_E_CORRUPT);
    add_raw(&b, "3 bytes of Mach-O magic", tiny, sizeof tiny, SYMD_E_NOT_MACHO);
    uint8_t *obj = read_fixture("fixtures/bin/obj32-armv7.o", &len);
    if (obj) {
        add_raw(&b, "object file without LC_UUID", obj, len, SYMD_E_NO_UUID);
        free(obj);
    }
    *out = b.v;
    return b.n;
}

void hostile_free(hostile_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(c[i].buf);
    free(c);
}

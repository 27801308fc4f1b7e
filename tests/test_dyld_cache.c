/* The dyld shared cache reader against the small real cache of
 * ../shared/dyld-cache (two libraries; see its README) and hostile variants
 * built from its bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test.h"
#include "../macho/dyld_cache.h"
#include "../macho/symindex.h"
#include "../util/cursor.h"

#define CACHE_NAME "dyld_shared_cache_arm64-macOS"
#define CACHE_LEN 212992u
#define BASE 0x180000000ull

/* A file of the shared folder, or NULL (the test is then skipped). */
static uint8_t *shared_file(const char *name, size_t *len)
{
    const char *d = dyld_cache_dir();
    if (!d) {
        test_skip("../shared/dyld-cache is not here");
        return NULL;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", d, name);
    uint8_t *b = read_file(path, len);
    if (!b)
        test_skip("a file of ../shared/dyld-cache is missing");
    return b;
}

/* The real cache copied into a buffer with extra zero bytes after it. */
static uint8_t *cache_copy(size_t extra, size_t *len)
{
    size_t n;
    uint8_t *b = shared_file(CACHE_NAME, &n);
    if (!b)
        return NULL;
    CHECK(n == CACHE_LEN, "cache is %zu bytes", n);
    uint8_t *c = calloc(1, n + extra);
    memcpy(c, b, n);
    free(b);
    *len = n + extra;
    return c;
}

static void uuid_of(const char *s, uint8_t out[16])
{
    for (int i = 0, k = 0; s[k] && i < 16; k++) {
        if (s[k] == '-')
            continue;
        unsigned v;
        sscanf(s + k, "%2x", &v);
        out[i++] = (uint8_t)v;
        k++;
    }
}

static const struct {
    const char *path;
    uint64_t addr;
    const char *uuid;
    size_t nsyms;
    const char *names[2];
    uint64_t sym_addrs[2];
} readme[2] = {
    {"/usr/lib/liba-1.0.dylib", 0x180001000, "CCBF29D4-5569-3A15-9231-4E14D41A542A", 2,
     {"func_in_liba", "what_is_cool"}, {0x180004f60, 0x180004f9c}},
    {"/usr/lib/libb-1.0.dylib", 0x180005000, "60D2F3D6-44A2-3910-8750-3A56A3D8FF07", 1,
     {"func_in_libb", NULL}, {0x180008fa0, 0}},
};

/* Independent of the reader: the image's own load commands, read at its
 * file offset (mapping 0 maps file offset 0 at BASE), and the N_SECT
 * entries of its LC_SYMTAB (offsets in the cache file). */
typedef struct {
    uint8_t uuid[16];
    uint64_t text_addr, text_size;
    size_t n;
    char names[8][64];
    uint64_t addrs[8];
} own_image;

static void read_own(const uint8_t *b, uint64_t addr, own_image *o)
{
    memset(o, 0, sizeof *o);
    const uint8_t *h = b + (addr - BASE);
    CHECK(ld_u32le(h) == 0xfeedfacf, "image header magic");
    CHECK(ld_u32le(h + 4) == 0x100000c && ld_u32le(h + 12) == 6, "arm64 dylib");
    uint32_t ncmds = ld_u32le(h + 16);
    const uint8_t *p = h + 32;
    for (uint32_t i = 0; i < ncmds; i++) {
        uint32_t cmd = ld_u32le(p), cs = ld_u32le(p + 4);
        if (cmd == 0x1b)
            memcpy(o->uuid, p + 8, 16);
        if (cmd == 0x19 && memcmp(p + 8, "__TEXT\0", 7) == 0) {
            o->text_addr = ld_u64le(p + 24);
            o->text_size = ld_u64le(p + 32);
        }
        if (cmd == 0x2) {
            uint32_t symoff = ld_u32le(p + 8), nsyms = ld_u32le(p + 12),
                     stroff = ld_u32le(p + 16);
            for (uint32_t k = 0; k < nsyms && o->n < 8; k++) {
                const uint8_t *e = b + symoff + 16 * k;
                if ((e[4] & 0xe0) || (e[4] & 0x0e) != 0x0e)
                    continue;
                snprintf(o->names[o->n], 64, "%s", (const char *)b + stroff + ld_u32le(e) + 1);
                o->addrs[o->n++] = ld_u64le(e + 8);
            }
        }
        p += cs;
    }
}

static symd_status open1(const uint8_t *b, size_t len, dyld_cache *c, symd_err *err)
{
    static dyld_cache_file f;
    f = (dyld_cache_file){CACHE_NAME, "", b, len};
    symd_err_clear(err);
    return dyld_cache_open(&f, 1, c, err);
}

/* Every symbol of image i resolves to itself through its built index. */
static void check_symbolicates(const dyld_cache *c, size_t i, size_t *count)
{
    macho_symbol *syms;
    size_t n;
    symd_err err = {0};
    CHECK(dyld_cache_image_symbols(c, i, &syms, &n, &err) == SYMD_OK, "%s", err.msg);
    uint8_t *blob;
    size_t blen;
    uint32_t ns, nf;
    CHECK(dyld_cache_image_symindex(c, i, &blob, &blen, &ns, &nf, &err) == SYMD_OK, "%s",
          err.msg);
    symindex idx;
    CHECK(symindex_open(blob, blen, &idx, &err) == SYMD_OK, "%s", err.msg);
    for (size_t k = 0; k < n; k++) {
        symlook l;
        symindex_lookup(&idx, syms[k].addr, &l);
        CHECK(l.status == SYMLOOK_SYMBOL && strcmp(l.name, syms[k].name) == 0 &&
                  l.offset == 0,
              "0x%llx symbolicates to %s", (unsigned long long)syms[k].addr,
              l.status == SYMLOOK_SYMBOL ? l.name : "nothing");
        symindex_lookup(&idx, syms[k].addr + 4, &l);
        CHECK(l.status == SYMLOOK_SYMBOL && strcmp(l.name, syms[k].name) == 0 &&
                  l.offset == 4, "+4 of %s", syms[k].name);
        (*count)++;
    }
    free(blob);
    free(syms);
}

TEST(dyld_cache_reads_the_real_cache)
{
    size_t len;
    uint8_t *b = cache_copy(0, &len);
    if (!b)
        return;
    dyld_cache c;
    symd_err err = {0};
    CHECK(open1(b, len, &c, &err) == SYMD_OK, "%s", err.msg);
    uint8_t u[16];
    uuid_of("857BCE1A-017E-3464-9909-D58EE21CF8DC", u);
    CHECK(memcmp(c.uuid, u, 16) == 0, "cache UUID");
    CHECK(strcmp(c.arch, "arm64") == 0, "arch %s", c.arch);
    CHECK(c.header_size == 0x140 && c.nmaps == 3 && c.nsubcaches == 0, "header");
    CHECK(c.maps[0].address == BASE && c.maps[0].size == 0x18000 && c.maps[0].init_prot == 5,
          "mapping 0");
    CHECK(c.maps[2].address == 0x18401c000 && c.maps[2].file_offset == 0x1c000, "mapping 2");
    CHECK(!c.has_locals && !c.symbols_file_missing, "no local symbols");
    CHECK(c.nimages == 2, "%zu images", c.nimages);
    size_t total = 0;
    for (size_t i = 0; i < c.nimages && i < 2; i++) {
        const dyld_cache_image *im = &c.images[i];
        CHECK(strcmp(im->path, readme[i].path) == 0, "path %s", im->path);
        CHECK(im->address == readme[i].addr, "address");
        uuid_of(readme[i].uuid, u);
        CHECK(memcmp(im->uuid, u, 16) == 0, "image %zu UUID", i);
        CHECK(im->arch && strcmp(im->arch, "arm64") == 0, "arch");
        CHECK(im->alias_of == -1 && im->filetype == 6, "kind");
        own_image o;
        read_own(b, im->address, &o);
        CHECK(memcmp(o.uuid, im->uuid, 16) == 0, "LC_UUID read independently");
        CHECK(im->text_vmaddr == o.text_addr && im->text_vmsize == o.text_size &&
                  o.text_size == 0x4000, "__TEXT");

        macho_symbol *syms;
        size_t n;
        CHECK(dyld_cache_image_symbols(&c, i, &syms, &n, &err) == SYMD_OK, "%s", err.msg);
        CHECK(n == readme[i].nsyms && n == o.n, "image %zu: %zu symbols", i, n);
        for (size_t k = 0; k < n && k < o.n; k++) {
            CHECK(strcmp(syms[k].name, o.names[k]) == 0 && syms[k].addr == o.addrs[k],
                  "symbol %s", syms[k].name);
            CHECK(strcmp(syms[k].name, readme[i].names[k]) == 0 &&
                      syms[k].addr == readme[i].sym_addrs[k], "README symbol %s",
                  syms[k].name);
        }
        free(syms);
        check_symbolicates(&c, i, &total);
    }
    CHECK(total == 3, "%zu symbols symbolicated", total);
    dyld_cache_close(&c);
    free(b);
}

TEST(dyld_cache_refuses_the_truncated_copies)
{
    const char *names[] = {"dyldcache_read4", "dyldcache_read8"};
    for (int i = 0; i < 2; i++) {
        size_t len;
        uint8_t *b = shared_file(names[i], &len);
        if (!b)
            return;
        CHECK(dyld_cache_is_cache(b, len), "%s looks like a cache", names[i]);
        dyld_cache c;
        symd_err err = {0};
        dyld_cache_file f = {names[i], "", b, len};
        CHECK(dyld_cache_open(&f, 1, &c, &err) == SYMD_E_CORRUPT, "%s", names[i]);
        CHECK(strstr(err.msg, names[i]) && strstr(err.msg, "ends inside the dyld cache header"),
              "%s", err.msg);
        CHECK(c.nimages == 0 && !c.images && !c.maps, "nothing kept");
        /* Every prefix of the real cache is refused too, never read past. */
        free(b);
    }
    size_t len;
    uint8_t *b = cache_copy(0, &len);
    if (!b)
        return;
    for (size_t cut = 0; cut < len; cut += cut < 0x400 ? 1 : 0x3f1) {
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, b, cut);
        dyld_cache c;
        symd_err err = {0};
        CHECK(open1(p, cut, &c, &err) != SYMD_OK, "prefix of %zu bytes accepted", cut);
        free(p);
    }
    free(b);
}

static void st32(uint8_t *p, uint32_t v) { st_u32le(p, v); }
static void st64(uint8_t *p, uint64_t v) { st_u64le(p, v); }

/* Mapping i changed in both tables (mappings and mappings-with-slide). */
static void set_mapping(uint8_t *b, unsigned i, uint64_t addr, uint64_t size, uint64_t off)
{
    st64(b + 0x140 + 32 * i, addr);
    st64(b + 0x140 + 32 * i + 8, size);
    st64(b + 0x140 + 32 * i + 16, off);
    st64(b + 0x1e8 + 56 * i, addr);
    st64(b + 0x1e8 + 56 * i + 8, size);
    st64(b + 0x1e8 + 56 * i + 16, off);
}

static void expect_corrupt(const uint8_t *b, size_t len, const char *what, const char *field)
{
    dyld_cache c;
    symd_err err = {0};
    symd_status st = open1(b, len, &c, &err);
    CHECK(st == SYMD_E_CORRUPT, "%s: status %d (%s)", what, st, err.msg);
    CHECK(strstr(err.msg, CACHE_NAME) && strstr(err.msg, field), "%s: message '%s' names "
          "no '%s'", what, err.msg, field);
    CHECK(c.nimages == 0 && !c.images && !c.maps, "%s: nothing kept", what);
}

TEST(dyld_cache_refuses_hostile_tables)
{
    size_t len;
    uint8_t *orig = cache_copy(0, &len);
    if (!orig)
        return;
    uint8_t *b = malloc(len);

    memcpy(b, orig, len); /* mapping 1's addresses run into mapping 0's */
    set_mapping(b, 1, 0x180010000, 0x4000, 0x18000);
    expect_corrupt(b, len, "address overlap", "mapping 1 (address 0x180010000) overlaps mapping 0");

    memcpy(b, orig, len); /* mapping 2's file bytes start inside mapping 1's */
    set_mapping(b, 2, 0x18401c000, 0x14000, 0x1a000);
    expect_corrupt(b, len, "file overlap", "mapping 2 (fileOffset 0x1a000) overlaps mapping 1");

    memcpy(b, orig, len); /* mapping 2 past the end of the file */
    set_mapping(b, 2, 0x18401c000, 0x40000, 0x1c000);
    expect_corrupt(b, len, "past the file", "mapping 2 (fileOffset 0x1c000, size 0x40000) "
                                            "points past");

    memcpy(b, orig, len); /* only one table says it: they disagree */
    st64(b + 0x140 + 32 + 8, 0x8000);
    expect_corrupt(b, len, "slide table", "mappingWithSlide 1 does not match mapping 1");

    memcpy(b, orig, len);
    st32(b + 0x14, 0x40000000);
    expect_corrupt(b, len, "mappingCount", "mapping table (mappingCount) declares 1073741824");

    memcpy(b, orig, len); /* 2^32 - 1 images in the (old) image table */
    st32(b + 0x1c, 0xffffffffu);
    expect_corrupt(b, len, "imagesCountOld", "(imagesOffsetOld, imagesCountOld) declares "
                                             "4294967295 entries");

    memcpy(b, orig, len); /* 2^32 entries in the text table */
    st64(b + 144, 1ull << 32);
    expect_corrupt(b, len, "imagesTextCount", "imagesTextCount) declares 4294967296 entries");

    memcpy(b, orig, len); /* the image table inside the mapping table */
    st32(b + 0x18, 0x180);
    expect_corrupt(b, len, "table overlap", "overlaps mapping table");

    memcpy(b, orig, len); /* the image path runs to the end of the file */
    st32(b + 0x290 + 24, (uint32_t)len - 4);
    memset(b + len - 4, 'x', 4);
    expect_corrupt(b, len, "path", "image 0: path (pathFileOffset 0x33ffc) has no terminator");

    memcpy(b, orig, len);
    st32(b + 0x10, (uint32_t)len + 8);
    expect_corrupt(b, len, "mappingOffset", "mappingOffset 0x34008 points past");

    memcpy(b, orig, len); /* the text table's UUID is not the image's */
    b[0x2d0 + 15] ^= 1;
    expect_corrupt(b, len, "text UUID", "LC_UUID CCBF29D4-5569-3A15-9231-4E14D41A542A does not "
                                        "match its text table uuid");

    memcpy(b, orig, len); /* liba's LC_SYMTAB reaches past __LINKEDIT */
    {
        const uint8_t *h = b + 0x1000;
        uint8_t *p = b + 0x1000 + 32;
        for (uint32_t i = 0; i < ld_u32le(h + 16); i++, p += ld_u32le(p + 4))
            if (ld_u32le(p) == 2)
                st32(p + 12, 1000);
    }
    expect_corrupt(b, len, "nsyms", "LC_SYMTAB symbols (symoff 0x24048, nsyms 1000) lie "
                                    "outside __LINKEDIT");

    memcpy(b, orig, len); /* libb's symbols start inside liba's */
    {
        const uint8_t *h = b + 0x5000;
        uint8_t *p = b + 0x5000 + 32;
        for (uint32_t i = 0; i < ld_u32le(h + 16); i++, p += ld_u32le(p + 4))
            if (ld_u32le(p) == 2)
                st32(p + 8, 0x24058);
    }
    expect_corrupt(b, len, "symtab overlap", "image 1 (/usr/lib/libb-1.0.dylib): LC_SYMTAB "
                                             "symbols overlap those of image 0");

    memcpy(b, orig, len); /* a symbol in a section liba does not have */
    b[0x24048 + 5] = 9;
    expect_corrupt(b, len, "n_sect", "image 0 (/usr/lib/liba-1.0.dylib): LC_SYMTAB: symbol 0 "
                                     "names section 9");

    memcpy(b, orig, len);
    memcpy(b + 8, "   i386", 7);
    {
        dyld_cache c;
        symd_err err = {0};
        CHECK(open1(b, len, &c, &err) == SYMD_E_UNSUPPORTED && strstr(err.msg, "i386"),
              "%s", err.msg);
    }
    free(b);
    free(orig);
}

/* Local symbols in the older layout: an area after the code signature,
 * named by localSymbolsOffset/Size, with 32-bit entries by file offset. */
static uint8_t *with_locals(size_t *len, uint32_t entry_count)
{
    uint8_t *b = cache_copy(0x100, len);
    if (!b)
        return NULL;
    uint8_t *a = b + CACHE_LEN;
    st64(b + 72, CACHE_LEN);
    st64(b + 80, 0x100);
    st32(a, 24);              /* nlistOffset */
    st32(a + 4, 1);           /* nlistCount */
    st32(a + 8, 40);          /* stringsOffset */
    st32(a + 12, 24);         /* stringsSize */
    st32(a + 16, 64);         /* entriesOffset */
    st32(a + 20, 1);          /* entriesCount */
    st32(a + 24, 1);          /* nlist: strx, N_SECT, section 1, address */
    a[28] = 0x0e;
    a[29] = 1;
    st64(a + 32, 0x180004f80);
    memcpy(a + 41, "_local_in_liba", 15);
    st32(a + 64, 0x1000);     /* entry: liba's header, nlist 0, count */
    st32(a + 68, 0);
    st32(a + 72, entry_count);
    return b;
}

TEST(dyld_cache_local_symbols)
{
    size_t len;
    uint8_t *b = with_locals(&len, 1);
    if (!b)
        return;
    dyld_cache c;
    symd_err err = {0};
    CHECK(open1(b, len, &c, &err) == SYMD_OK, "%s", err.msg);
    CHECK(c.has_locals, "local symbols read");
    if (c.nimages == 2) {
        CHECK(c.images[0].has_locals && !c.images[1].has_locals, "liba's entry");
        macho_symbol *syms;
        size_t n;
        CHECK(dyld_cache_image_symbols(&c, 0, &syms, &n, &err) == SYMD_OK, "%s", err.msg);
        CHECK(n == 3 && strcmp(syms[2].name, "local_in_liba") == 0 &&
                  syms[2].addr == 0x180004f80, "%zu symbols", n);
        free(syms);
        size_t total = 0;
        check_symbolicates(&c, 0, &total);
        CHECK(total == 3, "%zu", total);
    }
    dyld_cache_close(&c);
    free(b);

    b = with_locals(&len, 5); /* an entry past its nlist table */
    expect_corrupt(b, len, "locals entry", "local symbols entry 0 (nlistStartIndex 0, "
                                           "nlistCount 5) lies outside the 1-entry nlist table");
    free(b);
    b = with_locals(&len, 1); /* the entries table past the area */
    st32(b + CACHE_LEN + 20, 100);
    expect_corrupt(b, len, "entriesCount", "local symbols entries (entriesCount) declares 100");
    free(b);
    b = with_locals(&len, 1); /* a second entry over the first one's symbols */
    st32(b + CACHE_LEN + 20, 2);
    st32(b + CACHE_LEN + 76, 0x5000);
    st32(b + CACHE_LEN + 84, 1);
    expect_corrupt(b, len, "locals overlap", "local symbols entries 0 and 1 share nlist "
                                             "entries");
    free(b);
    b = with_locals(&len, 1); /* strings over the entries */
    st32(b + CACHE_LEN + 12, 40);
    expect_corrupt(b, len, "stringsSize", "overlaps local symbols strings");
    free(b);
}

/* The header extended to a newer format (mappingOffset 0x1c8: new image
 * table fields, v1 subcache entries, symbolFileUUID), its tables moved into
 * the free bytes before the first image, with one subcache of one mapping
 * and a .symbols file. */
#define SUB_UUID "11111111-2222-3333-4444-555555555555"
#define SYM_UUID "66666666-7777-8888-9999-AAAAAAAAAAAA"

static uint8_t *newer_main(size_t *len)
{
    uint8_t *b = cache_copy(0, len);
    if (!b)
        return NULL;
    uint8_t maps[96], slides[168];
    memcpy(maps, b + 0x140, 96);
    memcpy(slides, b + 0x1e8, 168);
    memset(b + 0x140, 0, 0x290 - 0x140);
    st32(b + 0x10, 0x1c8);
    memcpy(b + 0x1c8, maps, 96);
    memcpy(b + 0x400, slides, 168);
    st32(b + 312, 0x400);
    st32(b + 0x18, 0); /* the old image table fields give way to the new */
    st32(b + 0x1c, 0);
    st32(b + 448, 0x290);
    st32(b + 452, 2);
    st32(b + 392, 0x500); /* one subcache */
    st32(b + 396, 1);
    uuid_of(SUB_UUID, b + 0x500);
    st64(b + 0x500 + 16, 0x10000000);
    uuid_of(SYM_UUID, b + 400);
    return b;
}

static uint8_t *small_file(const char *uuid, bool mapping, size_t *len)
{
    *len = 0x1000;
    uint8_t *b = calloc(1, *len);
    memcpy(b, "dyld_v1   arm64", 16);
    st32(b + 0x10, 0x1c8);
    uuid_of(uuid, b + 88);
    if (mapping) {
        st32(b + 0x14, 1);
        st64(b + 0x1c8, 0x190000000);
        st64(b + 0x1c8 + 8, 0x1000);
        st64(b + 0x1c8 + 16, 0);
        st32(b + 0x1c8 + 24, 1);
        st32(b + 0x1c8 + 28, 1);
    } else { /* a .symbols file: the local-symbols area, 64-bit entries */
        uint8_t *a = b + 0x200;
        st64(b + 72, 0x200);
        st64(b + 80, 0x100);
        st32(a, 24);
        st32(a + 4, 1);
        st32(a + 8, 40);
        st32(a + 12, 24);
        st32(a + 16, 64);
        st32(a + 20, 1);
        st32(a + 24, 1);
        a[28] = 0x0e;
        a[29] = 1;
        st64(a + 32, 0x180008fb0);
        memcpy(a + 41, "_local_in_libb", 15);
        st64(a + 64, 0x5000); /* libb's address less the cache's */
        st32(a + 72, 0);
        st32(a + 76, 1);
    }
    return b;
}

TEST(dyld_cache_subcaches_and_symbols_file)
{
    size_t len, slen, ylen;
    uint8_t *m = newer_main(&len);
    if (!m)
        return;
    uint8_t *sub = small_file(SUB_UUID, true, &slen);
    uint8_t *sym = small_file(SYM_UUID, false, &ylen);
    dyld_cache_file files[3] = {
        {CACHE_NAME, "", m, len},
        {CACHE_NAME ".1", ".1", sub, slen},
        {CACHE_NAME ".symbols", ".symbols", sym, ylen},
    };
    dyld_cache_suffix *sfx;
    size_t nsfx;
    symd_err err = {0};
    CHECK(dyld_cache_suffixes(&files[0], &sfx, &nsfx, &err) == SYMD_OK, "%s", err.msg);
    CHECK(nsfx == 2 && strcmp(sfx[0].s, ".1") == 0 && strcmp(sfx[1].s, ".symbols") == 0,
          "suffixes");
    free(sfx);

    dyld_cache c;
    CHECK(dyld_cache_open(files, 3, &c, &err) == SYMD_OK, "%s", err.msg);
    CHECK(c.nsubcaches == 1 && c.nmaps == 4 && c.has_locals && c.nimages == 2, "cache");
    if (c.nimages == 2) {
        CHECK(strcmp(c.images[1].path, "/usr/lib/libb-1.0.dylib") == 0, "path");
        macho_symbol *syms;
        size_t n;
        CHECK(dyld_cache_image_symbols(&c, 1, &syms, &n, &err) == SYMD_OK, "%s", err.msg);
        CHECK(n == 2 && strcmp(syms[1].name, "local_in_libb") == 0, "%zu symbols", n);
        free(syms);
        size_t total = 0;
        check_symbolicates(&c, 1, &total);
    }
    dyld_cache_close(&c);

    /* Without the .symbols file: no local symbols, no error. */
    CHECK(dyld_cache_open(files, 2, &c, &err) == SYMD_OK, "%s", err.msg);
    CHECK(c.symbols_file_missing && !c.has_locals, "symbols file missing");
    dyld_cache_close(&c);

    /* Without the subcache: named. */
    symd_err_clear(&err);
    dyld_cache_file two[2] = {files[0], files[2]};
    CHECK(dyld_cache_open(two, 2, &c, &err) == SYMD_E_NOT_FOUND &&
              strstr(err.msg, "subcache .1 (subCacheArray[0]) not given"), "%s", err.msg);

    /* A subcache whose UUID is not the one the main cache names. */
    symd_err_clear(&err);
    sub[88] ^= 0xff;
    CHECK(dyld_cache_open(files, 3, &c, &err) == SYMD_E_CORRUPT &&
              strstr(err.msg, CACHE_NAME ".1: subcache UUID EE111111-2222-3333-4444-"
                              "555555555555 does not match subCacheArray[0].uuid"),
          "%s", err.msg);
    CHECK(c.nimages == 0 && !c.images && !c.maps, "nothing kept");
    sub[88] ^= 0xff;

    /* A .symbols file of another cache. */
    symd_err_clear(&err);
    sym[90] ^= 1;
    CHECK(dyld_cache_open(files, 3, &c, &err) == SYMD_E_CORRUPT &&
              strstr(err.msg, ".symbols: UUID") && strstr(err.msg, "does not match "
                                                                   "symbolFileUUID"),
          "%s", err.msg);
    sym[90] ^= 1;

    /* The subcache mapped over the main cache's addresses. */
    symd_err_clear(&err);
    st64(sub + 0x1c8, 0x180010000);
    st64(m + 0x500 + 16, 0x10000);
    CHECK(dyld_cache_open(files, 3, &c, &err) == SYMD_E_CORRUPT && strstr(err.msg, "overlaps"),
          "%s", err.msg);
    st64(sub + 0x1c8, 0x190000000);
    st64(m + 0x500 + 16, 0x10000000);

    /* A local-symbols entry past its table in the .symbols file. */
    symd_err_clear(&err);
    st32(sym + 0x200 + 76, 2);
    CHECK(dyld_cache_open(files, 3, &c, &err) == SYMD_E_CORRUPT &&
              strstr(err.msg, ".symbols: local symbols entry 0 (nlistStartIndex 0, "
                              "nlistCount 2) lies outside"), "%s", err.msg);
    st32(sym + 0x200 + 76, 1);

    /* A file that is no part of the cache. */
    symd_err_clear(&err);
    dyld_cache_file extra[4] = {files[0], files[1], files[2],
                                {"other", ".7", sub, slen}};
    CHECK(dyld_cache_open(extra, 4, &c, &err) == SYMD_E_INVALID, "%s", err.msg);
    free(m);
    free(sub);
    free(sym);
}

/* Inputs the fuzzer once crashed on (fuzz/regress/dyldcache-*), replayed
 * the way fuzz/fuzz_dyld_cache.c runs them. */
static void replay(const char *rel, const uint8_t *buf, size_t len)
{
    static const char *sfx[] = {".1", ".01", ".symbols"};
    for (int k = -1; k < 3; k++) {
        dyld_cache_file f[2] = {{rel, "", buf, len}, {rel, k >= 0 ? sfx[k] : "", buf, len}};
        dyld_cache c;
        symd_err err = {0};
        if (dyld_cache_open(f, k >= 0 ? 2 : 1, &c, &err) != SYMD_OK) {
            CHECK(err.msg[0] != 0, "%s: error without a message", rel);
            continue;
        }
        for (size_t i = 0; i < c.nimages; i++) {
            uint8_t *blob;
            size_t blen;
            CHECK(dyld_cache_image_symindex(&c, i, &blob, &blen, NULL, NULL, &err) == SYMD_OK,
                  "%s: %s", rel, err.msg);
            free(blob);
        }
        dyld_cache_close(&c);
    }
}

TEST(dyld_cache_fuzz_regressions)
{
    int n = each_regression("dyldcache-", replay);
    CHECK(n >= 0, "fuzz/regress is missing");
}

static char *run_cmd(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    size_t cap = 1 << 16, n = 0, r;
    char *out = calloc(1, cap);
    while (p && n < cap - 1 && (r = fread(out + n, 1, cap - 1 - n, p)) > 0)
        n += r;
    int st = p ? pclose(p) : -1;
    *status = st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

static void write_all(const char *path, const uint8_t *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b, 1, len, f) == len, "write %s", path);
    if (f)
        fclose(f);
}

/* `symd info` on a cache: every image listed; subcaches and the .symbols
 * file found beside the main file. */
TEST(dyld_cache_cli_info)
{
    const char *bin = getenv("SYMD_BIN") ? getenv("SYMD_BIN") : "./symd";
    const char *d = dyld_cache_dir();
    if (!d) {
        test_skip("../shared/dyld-cache is not here");
        return;
    }
    char cmd[8192];
    int st;
    snprintf(cmd, sizeof cmd, "%s info %s/%s 2>&1", bin, d, CACHE_NAME);
    char *out = run_cmd(cmd, &st);
    CHECK(st == 0 && strstr(out, "dyld shared cache arm64 857BCE1A-017E-3464-9909-D58EE21CF8DC, "
                                 "0 subcaches, 2 images") &&
              strstr(out, "arm64    CCBF29D4-5569-3A15-9231-4E14D41A542A  text "
                          "0x180001000+0x4000  2 symbols  2 functions  /usr/lib/liba-1.0.dylib") &&
              strstr(out, "60D2F3D6-44A2-3910-8750-3A56A3D8FF07  text 0x180005000+0x4000  "
                          "1 symbols  1 functions  /usr/lib/libb-1.0.dylib"),
          "exit %d:\n%s", st, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s info %s/dyldcache_read8 2>&1", bin, d);
    out = run_cmd(cmd, &st);
    CHECK(st != 0 && strstr(out, "dyldcache_read8: file of 4 bytes ends inside the dyld cache "
                                 "header"), "exit %d: %s", st, out);
    free(out);

    size_t len, slen, ylen;
    uint8_t *m = newer_main(&len);
    uint8_t *sub = small_file(SUB_UUID, true, &slen);
    uint8_t *sym = small_file(SYM_UUID, false, &ylen);
    char p[3][4200];
    snprintf(p[0], 4096, "%s/%s", test_tmpdir(), CACHE_NAME);
    snprintf(p[1], sizeof p[1], "%.4000s.1", p[0]);
    snprintf(p[2], sizeof p[2], "%.4000s.symbols", p[0]);
    write_all(p[0], m, len);
    write_all(p[1], sub, slen);
    write_all(p[2], sym, ylen);
    snprintf(cmd, sizeof cmd, "%s info %s 2>&1", bin, p[0]);
    out = run_cmd(cmd, &st);
    CHECK(st == 0 && strstr(out, "1 subcache, 2 images") &&
              strstr(out, "2 symbols  1 functions  /usr/lib/libb-1.0.dylib"),
          "exit %d:\n%s", st, out);
    free(out);
    remove(p[1]); /* the subcache gone: named */
    out = run_cmd(cmd, &st);
    CHECK(st != 0 && strstr(out, "subcache .1 (subCacheArray[0]) not given"), "%s", out);
    free(out);
    free(m);
    free(sub);
    free(sym);
}

/* macho/ and the symbol index against LLVM's own tools' answers. */
#include <stdlib.h>
#include <string.h>

#include "../macho/macho.h"
#include "../store/symindex.h"
#include "../util/cursor.h"
#include "../util/hex.h"
#include "fixture_util.h"
#include "test.h"

/* Every fixture slice and the prefix of its expected files. */
static const struct {
    const char *file, *arch, *expect;
} slices[] = {
    {"bigapp-arm64", "arm64", "bigapp-arm64"},
    {"bigapp-x86_64", "x86_64", "bigapp-x86_64"},
    {"bigapp-fat", "arm64", "bigapp-fat.arm64"},
    {"bigapp-fat", "x86_64", "bigapp-fat.x86_64"},
    {"bigapp5-arm64", "arm64", "bigapp5-arm64"},
    {"libfix-arm64.dylib", "arm64", "libfix-arm64.dylib"},
    {"libfix-x86_64.dylib", "x86_64", "libfix-x86_64.dylib"},
    {"strippy-arm64", "arm64", "strippy-arm64"},
    {"aliases-arm64", "arm64", "aliases-arm64"},
    {"strippy-arm64-stripped", "arm64", "strippy-arm64-stripped"},
    {"strippy-arm64-stripped-x", "arm64", "strippy-arm64-stripped-x"},
    {"obj32-armv7.o", "armv7", "obj32-armv7.o"},
    {"obj32-i386.o", "i386", "obj32-i386.o"},
    {"obj32-fat.o", "armv7", "obj32-fat.o.armv7"},
    {"obj32-fat.o", "i386", "obj32-fat.o.i386"},
};
#define NSLICES (sizeof slices / sizeof slices[0])

typedef struct {
    uint8_t *file;
    size_t len;
    macho_image img;
    uint8_t *blob;
    size_t blen;
    symindex idx;
} loaded;

/* Loads fixtures/bin/<file>, picks the slice of arch, parses and indexes it. */
static bool load_slice(const char *file, const char *arch, loaded *l)
{
    memset(l, 0, sizeof *l);
    char rel[256];
    snprintf(rel, sizeof rel, "fixtures/bin/%s", file);
    l->file = read_fixture(rel, &l->len);
    if (!l->file)
        return false;
    macho_slice sl[MACHO_MAX_SLICES];
    size_t n;
    symd_err err = {0};
    if (macho_parse_slices(l->file, l->len, sl, &n, &err) != SYMD_OK) {
        CHECK(0, "%s: %s", file, err.msg);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const char *a = macho_arch_name(sl[i].cputype, sl[i].cpusubtype);
        if (!a || strcmp(a, arch) != 0)
            continue;
        if (macho_parse_image(l->file + sl[i].offset, (size_t)sl[i].size, &l->img,
                              &err) != SYMD_OK ||
            symindex_build(&l->img, &l->blob, &l->blen, NULL, NULL, &err) != SYMD_OK ||
            symindex_open(l->blob, l->blen, &l->idx, &err) != SYMD_OK) {
            CHECK(0, "%s (%s): %s", file, arch, err.msg);
            return false;
        }
        return true;
    }
    CHECK(0, "%s has no %s slice", file, arch);
    return false;
}

static void unload(loaded *l)
{
    macho_image_free(&l->img);
    free(l->blob);
    free(l->file);
}

static int cmp_nm(const void *a, const void *b)
{
    const nm_sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return strcmp(x->name, y->name);
}

TEST(macho_symbols_equal_llvm_nm)
{
    static nm_sym want[4096], got[4096];
    for (size_t k = 0; k < NSLICES; k++) {
        loaded l;
        if (!load_slice(slices[k].file, slices[k].arch, &l))
            continue;
        char rel[256];
        snprintf(rel, sizeof rel, "fixtures/expected/%s.nm", slices[k].expect);
        int nw = load_nm_functions(rel, want, 4096);
        macho_symbol *syms;
        size_t ng;
        symd_err err = {0};
        CHECK(macho_function_symbols(&l.img, &syms, &ng, &err) == SYMD_OK, "%s", err.msg);
        for (size_t i = 0; i < ng && i < 4096; i++) {
            got[i].addr = syms[i].addr;
            snprintf(got[i].name, sizeof got[i].name, "%s", syms[i].name);
        }
        free(syms);
        qsort(want, (size_t)nw, sizeof *want, cmp_nm);
        qsort(got, ng, sizeof *got, cmp_nm);
        CHECK((size_t)nw == ng, "%s %s: llvm-nm lists %d function symbols, we found %zu",
              slices[k].file, slices[k].arch, nw, ng);
        for (size_t i = 0; i < ng && i < (size_t)nw; i++)
            CHECK(want[i].addr == got[i].addr && strcmp(want[i].name, got[i].name) == 0,
                  "%s: symbol %zu: llvm-nm 0x%llx %s, ours 0x%llx %s", slices[k].expect, i,
                  (unsigned long long)want[i].addr, want[i].name,
                  (unsigned long long)got[i].addr, got[i].name);
        unload(&l);
    }
}

TEST(macho_function_starts_equal_llvm_objdump)
{
    static uint64_t want[4096];
    for (size_t k = 0; k < NSLICES; k++) {
        loaded l;
        if (!load_slice(slices[k].file, slices[k].arch, &l))
            continue;
        char rel[256];
        snprintf(rel, sizeof rel, "fixtures/expected/%s.fstarts", slices[k].expect);
        int nw = load_hex_lines(rel, want, 4096);
        CHECK((size_t)nw == l.img.nfstarts, "%s: %d function starts expected, got %zu",
              slices[k].expect, nw, l.img.nfstarts);
        for (size_t i = 0; i < l.img.nfstarts && i < (size_t)nw; i++)
            CHECK(want[i] == l.img.fstarts[i], "%s: start %zu: 0x%llx vs 0x%llx",
                  slices[k].expect, i, (unsigned long long)want[i],
                  (unsigned long long)l.img.fstarts[i]);
        unload(&l);
    }
}

/* Every address llvm-symbolizer answered: same function, start and offset. */
static void check_lookups(const char *file, const char *arch, const char *expect)
{
    loaded l;
    if (!load_slice(file, arch, &l))
        return;
    static tsv_row rows[8192];
    char rel[256], *buf;
    snprintf(rel, sizeof rel, "fixtures/expected/%s.sym.tsv", expect);
    int n = load_tsv(rel, rows, 8192, &buf);
    CHECK(n > 0, "%s: no sampled addresses", rel);
    for (int i = 0; i < n; i++) {
        uint64_t addr, start;
        hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &addr);
        hex_parse_u64(rows[i].f[2], strlen(rows[i].f[2]), &start);
        uint64_t off = strtoull(rows[i].f[3], NULL, 10);
        symlook look;
        symindex_lookup(&l.idx, addr, &look);
        CHECK(look.status == SYMLOOK_SYMBOL && strcmp(look.name, rows[i].f[1]) == 0 &&
                  look.sym_addr == start && look.offset == off,
              "%s 0x%llx: llvm-symbolizer %s+%llu, ours %s+%llu", expect,
              (unsigned long long)addr, rows[i].f[1], (unsigned long long)off,
              look.status == SYMLOOK_SYMBOL ? look.name : "(none)",
              (unsigned long long)look.offset);
    }
    free(buf);
    unload(&l);
}

TEST(symindex_lookups_equal_llvm_symbolizer)
{
    for (size_t k = 0; k < NSLICES; k++) {
        if (strstr(slices[k].file, "obj32") || strstr(slices[k].file, "stripped"))
            continue; /* objects: no sampling; stripped: see next test */
        check_lookups(slices[k].file, slices[k].arch, slices[k].expect);
    }
}

/* Stripped binaries: an address past a function start that no symbol covers
 * is no_symbol with that start, never the nearest symbol far behind. */
TEST(symindex_stripped_uses_function_starts)
{
    const char *files[] = {"strippy-arm64-stripped", "strippy-arm64-stripped-x"};
    for (int k = 0; k < 2; k++) {
        loaded l;
        if (!load_slice(files[k], "arm64", &l))
            continue;
        static tsv_row rows[1024];
        char rel[256], *buf;
        snprintf(rel, sizeof rel, "fixtures/expected/%s.expect.tsv", files[k]);
        int n = load_tsv(rel, rows, 1024, &buf);
        int nsym = 0, nnone = 0;
        for (int i = 0; i < n; i++) {
            uint64_t addr, start;
            hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &addr);
            hex_parse_u64(rows[i].f[3], strlen(rows[i].f[3]), &start);
            symlook look;
            symindex_lookup(&l.idx, addr, &look);
            if (strcmp(rows[i].f[1], "symbolicated") == 0) {
                nsym++;
                const char *want = rows[i].f[2][0] == '_' ? rows[i].f[2] + 1 : rows[i].f[2];
                CHECK(look.status == SYMLOOK_SYMBOL && strcmp(look.name, want) == 0 &&
                          look.sym_addr == start,
                      "%s 0x%llx: want %s", files[k], (unsigned long long)addr, want);
            } else {
                nnone++;
                CHECK(look.status == SYMLOOK_NO_SYMBOL && look.has_sym_addr &&
                          look.sym_addr == start,
                      "%s 0x%llx: want no_symbol at 0x%llx, got %s 0x%llx", files[k],
                      (unsigned long long)addr, (unsigned long long)start,
                      look.status == SYMLOOK_SYMBOL ? look.name : "no_symbol",
                      (unsigned long long)look.sym_addr);
            }
        }
        CHECK(nnone > 0, "%s: expected some no_symbol rows", files[k]);
        if (k == 1)
            CHECK(nsym > 0, "%s: expected some symbolicated rows", files[k]);
        free(buf);
        unload(&l);
    }
}

TEST(macho_fat_slices_are_the_thin_files)
{
    size_t flen, alen, xlen;
    uint8_t *fat = read_fixture("fixtures/bin/bigapp-fat", &flen);
    uint8_t *a = read_fixture("fixtures/bin/bigapp-arm64", &alen);
    uint8_t *x = read_fixture("fixtures/bin/bigapp-x86_64", &xlen);
    macho_slice sl[MACHO_MAX_SLICES];
    size_t n = 0;
    symd_err err = {0};
    CHECK(fat && a && x, "fixtures missing");
    if (fat && a && x) {
        CHECK(macho_parse_slices(fat, flen, sl, &n, &err) == SYMD_OK, "%s", err.msg);
        CHECK(n == 2, "fat file has %zu slices, want 2", n);
        for (size_t i = 0; i < n; i++) {
            const char *arch = macho_arch_name(sl[i].cputype, sl[i].cpusubtype);
            const uint8_t *thin = strcmp(arch, "arm64") == 0 ? a : x;
            size_t tlen = strcmp(arch, "arm64") == 0 ? alen : xlen;
            CHECK(sl[i].size == tlen && memcmp(fat + sl[i].offset, thin, tlen) == 0,
                  "slice %s differs from the thin file", arch);
        }
        /* A thin file is one slice covering it all. */
        CHECK(macho_parse_slices(a, alen, sl, &n, &err) == SYMD_OK && n == 1 &&
                  sl[0].offset == 0 && sl[0].size == alen,
              "thin file slicing");
    }
    free(fat);
    free(a);
    free(x);
}

TEST(macho_uuid_kind_and_dylib_id)
{
    static const struct {
        const char *file, *arch, *uuid, *kind, *id;
    } want[] = {
        {"fixtures/bin/bigapp-arm64", "arm64", "4C4C4490-5555-3144-A17C-64A339EDE13A",
         "executable", NULL},
        {"fixtures/bin/bigapp-x86_64", "x86_64", "4C4C4449-5555-3144-A163-BC5324B3F7D1",
         "executable", NULL},
        {"fixtures/bin/libfix-arm64.dylib", "arm64", "4C4C4448-5555-3144-A188-0C3B883681D9",
         "dylib", "@rpath/libfix.dylib"},
        {"fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64", "arm64",
         "4C4C4490-5555-3144-A17C-64A339EDE13A", "dsym", NULL},
        {"fixtures/bin/obj32-armv7.o", "armv7", NULL, "object", NULL},
        {"fixtures/bin/obj32-i386.o", "i386", NULL, "object", NULL},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        size_t len;
        uint8_t *buf = read_fixture(want[k].file, &len);
        if (!buf)
            continue;
        macho_image img;
        symd_err err = {0};
        CHECK(macho_parse_image(buf, len, &img, &err) == SYMD_OK, "%s: %s", want[k].file,
              err.msg);
        char u[37] = "";
        if (img.has_uuid)
            uuid_format(img.uuid, u);
        CHECK(want[k].uuid ? img.has_uuid && strcmp(u, want[k].uuid) == 0 : !img.has_uuid,
              "%s: uuid %s", want[k].file, u);
        CHECK(strcmp(macho_arch_name(img.cputype, img.cpusubtype), want[k].arch) == 0,
              "%s: arch", want[k].file);
        CHECK(strcmp(macho_kind_name(img.kind), want[k].kind) == 0, "%s: kind %s",
              want[k].file, macho_kind_name(img.kind));
        CHECK(want[k].id ? img.dylib_id && strcmp(img.dylib_id, want[k].id) == 0
                         : img.dylib_id == NULL,
              "%s: dylib id", want[k].file);
        CHECK(img.is64 == (strstr(want[k].arch, "64") != NULL), "%s: width", want[k].file);
        macho_image_free(&img);
        free(buf);
    }
}

TEST(uuid_and_hex_parsing)
{
    uint8_t u[16];
    char s[37];
    CHECK(uuid_parse("4c4c4490555531 44a17c64a339ede13a", u) == false, "space rejected");
    CHECK(uuid_parse("4c4c449055553144a17c64a339ede13a", u), "no dashes");
    uuid_format(u, s);
    CHECK(strcmp(s, "4C4C4490-5555-3144-A17C-64A339EDE13A") == 0, "format %s", s);
    CHECK(uuid_parse("4C4C4490-5555-3144-A17C-64A339EDE13A", u), "dashes");
    CHECK(!uuid_parse("4C4C4490-5555-3144-A17C-64A339EDE13", u), "short");
    CHECK(!uuid_parse("4C4C4490-5555-3144-A17C-64A339EDE13AA", u), "long");
    CHECK(!uuid_parse("4C-4C4490-5555-3144-A17C-64A339EDE13A", u), "5 dashes");
    uint64_t v;
    CHECK(hex_parse_u64("0x1a2B", 6, &v) && v == 0x1a2b, "hex");
    CHECK(hex_parse_u64("0x00000000ffffffffffffffff", 26, &v) && v == UINT64_MAX, "zeros");
    CHECK(!hex_parse_u64("0x1ffffffffffffffff", 19, &v), "overflow");
    CHECK(!hex_parse_u64("0x", 2, &v) && !hex_parse_u64("0xg1", 4, &v), "junk");
    CHECK(!hex_parse_u64("-0x1", 4, &v), "sign");
}

TEST(symindex_rejects_damaged_blobs)
{
    loaded l;
    if (!load_slice("bigapp-arm64", "arm64", &l))
        return;
    symindex idx;
    symd_err err = {0};
    uint8_t *copy = malloc(l.blen);
    for (size_t cut = 0; cut < l.blen; cut += 7) {
        symd_err_clear(&err);
        CHECK(symindex_open(l.blob, cut, &idx, &err) == SYMD_E_CORRUPT, "cut %zu", cut);
    }
    static const size_t pokes[] = {0, 4, 16, 20, 24, 32, 36, 40, 44};
    for (size_t i = 0; i < sizeof pokes / sizeof pokes[0]; i++) {
        memcpy(copy, l.blob, l.blen);
        copy[pokes[i] + 3] ^= 0x80;
        symd_err_clear(&err);
        CHECK(symindex_open(copy, l.blen, &idx, &err) == SYMD_E_CORRUPT,
              "flip at %zu accepted", pokes[i]);
    }
    free(copy);
    unload(&l);
}

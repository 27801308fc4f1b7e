/* macho/ and the symbol index against LLVM's own tools' answers. */
#include <stdlib.h>
#include <string.h>

#include "../macho/macho.h"
#include "../macho/symindex.h"
#include "../util/cursor.h"
#include "../demangle/demangle.h"
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

/* Where our display name (libiberty's) and llvm-symbolizer's demangled name
 * differ on a fixture, documented: {raw name, llvm-symbolizer's, ours}.
 * None so far; README "Demangling" lists the kinds of names that differ. */
static const struct {
    const char *mangled, *llvm, *ours;
} display_exceptions[] = {
    {"", "", ""}, /* (no entry: C has no empty arrays) */
};

/* The display name llvm-symbolizer's demangled answer stands for. */
static const char *expected_display(const char *mangled, const char *llvm)
{
    for (size_t i = 0; i < sizeof display_exceptions / sizeof display_exceptions[0]; i++)
        if (display_exceptions[i].mangled[0] &&
            strcmp(display_exceptions[i].mangled, mangled) == 0 &&
            strcmp(display_exceptions[i].llvm, llvm) == 0)
            return display_exceptions[i].ours;
    return llvm;
}

/* Every address llvm-symbolizer answered: same function, start and offset;
 * the raw name as with --no-demangle (.sym.tsv), the display name as with
 * its default demangling (.sym.demangled.tsv, same addresses). */
static void check_lookups(const char *file, const char *arch, const char *expect)
{
    loaded l;
    if (!load_slice(file, arch, &l))
        return;
    static tsv_row rows[8192], drows[8192];
    char rel[256], *buf, *dbuf;
    snprintf(rel, sizeof rel, "fixtures/expected/%s.sym.tsv", expect);
    int n = load_tsv(rel, rows, 8192, &buf);
    CHECK(n > 0, "%s: no sampled addresses", rel);
    snprintf(rel, sizeof rel, "fixtures/expected/%s.sym.demangled.tsv", expect);
    int nd = load_tsv(rel, drows, 8192, &dbuf);
    CHECK(nd == n, "%s: %d rows, .sym.tsv has %d", rel, nd, n);
    int demangled = 0, agree = 0;
    for (int i = 0; i < n; i++) {
        uint64_t addr, start;
        hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &addr);
        hex_parse_u64(rows[i].f[2], strlen(rows[i].f[2]), &start);
        uint64_t off = strtoull(rows[i].f[3], NULL, 10);
        symlook look;
        symindex_lookup(&l.idx, addr, &look);
        CHECK(look.status == SYMLOOK_SYMBOL && strcmp(look.mangled, rows[i].f[1]) == 0 &&
                  look.sym_addr == start && look.offset == off,
              "%s 0x%llx: llvm-symbolizer %s+%llu, ours %s+%llu", expect,
              (unsigned long long)addr, rows[i].f[1], (unsigned long long)off,
              look.status == SYMLOOK_SYMBOL ? look.mangled : "(none)",
              (unsigned long long)look.offset);
        if (i >= nd || look.status != SYMLOOK_SYMBOL)
            continue;
        const char *want = expected_display(rows[i].f[1], drows[i].f[1]);
        bool same = strcmp(drows[i].f[0], rows[i].f[0]) == 0 && strcmp(look.name, want) == 0;
        agree += same;
        CHECK(same, "%s 0x%llx: %s: llvm-symbolizer shows %s, we show %s", expect,
              (unsigned long long)addr, look.mangled, want, look.name);
        CHECK((look.name == look.mangled) == (strcmp(want, rows[i].f[1]) == 0),
              "%s: %s: display name stored apart though equal, or not apart", expect,
              look.mangled);
        demangled += strcmp(want, rows[i].f[1]) != 0;
    }
    if (strstr(file, "bigapp"))
        CHECK(demangled > 0, "%s: no C++ among the samples", expect);
    printf("    %s: %d/%d display names as llvm-symbolizer shows them (%d demangled)\n",
           expect, agree, n, demangled);
    free(buf);
    free(dbuf);
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
    /* Bit 31 of a u32 (bit 30 of entry 0's size: bit 31 is the flag). */
    static const size_t pokes[] = {0, 4, 16, 20, 24, 32, 36, 40, 44};
    for (size_t i = 0; i < sizeof pokes / sizeof pokes[0]; i++) {
        memcpy(copy, l.blob, l.blen);
        copy[pokes[i] + 3] ^= pokes[i] == 36 ? 0x40 : 0x80;
        symd_err_clear(&err);
        CHECK(symindex_open(copy, l.blen, &idx, &err) == SYMD_E_CORRUPT,
              "flip at %zu accepted", pokes[i]);
    }
    /* The display-name flag on the symbol whose raw name ends the strings
     * (nothing follows it), and on one whose display name would be empty. */
    uint32_t last = 0, lastoff = 0;
    for (uint32_t i = 0; i < l.idx.nsyms; i++) {
        uint32_t off = ld_u32le(l.idx.syms + (size_t)i * 12 + 8);
        if (off >= lastoff)
            last = i, lastoff = off;
    }
    size_t szat = 32 + (size_t)last * 12 + 4;
    CHECK(!(ld_u32le(l.blob + szat) & SYMINDEX_DEMANGLED), "last string is a raw name");
    memcpy(copy, l.blob, l.blen);
    st_u32le(copy + szat, ld_u32le(copy + szat) | SYMINDEX_DEMANGLED);
    symd_err_clear(&err);
    CHECK(symindex_open(copy, l.blen, &idx, &err) == SYMD_E_CORRUPT &&
              strstr(err.msg, "display name"),
          "display name past the strings accepted: %s", err.msg);
    memcpy(copy, l.blob, l.blen);
    size_t strat = l.blen - l.idx.strsize;
    copy[strat + lastoff + strlen(l.idx.strings + lastoff) - 1] = 0; /* "…x\0" → "…\0\0" */
    st_u32le(copy + szat, ld_u32le(copy + szat) | SYMINDEX_DEMANGLED);
    copy[strat + lastoff] = 'x'; /* keep the raw name non-empty */
    symd_err_clear(&err);
    CHECK(symindex_open(copy, l.blen, &idx, &err) == SYMD_E_CORRUPT,
          "empty display name accepted");
    free(copy);
    unload(&l);
}

/* A version-1 blob as symd wrote it before demangling: same entries without
 * the flag, raw names only. Built here from a version-2 blob. */
static uint8_t *v1_from_v2(const symindex *v2, size_t *len)
{
    size_t strsize = 0;
    for (uint32_t i = 0; i < v2->nsyms; i++)
        strsize += strlen(v2->strings + ld_u32le(v2->syms + (size_t)i * 12 + 8)) + 1;
    size_t fixed = 32 + (size_t)v2->nsyms * 12 + (size_t)v2->nstarts * 4;
    uint8_t *b = malloc(fixed + strsize);
    memcpy(b, v2->blob, fixed);
    st_u32le(b + 4, 1);
    st_u32le(b + 24, (uint32_t)strsize);
    char *strings = (char *)b + fixed;
    size_t at = 0;
    for (uint32_t i = 0; i < v2->nsyms; i++) {
        uint8_t *e = b + 32 + (size_t)i * 12;
        const char *raw = v2->strings + ld_u32le(e + 8);
        st_u32le(e + 4, ld_u32le(e + 4) & ~SYMINDEX_DEMANGLED);
        st_u32le(e + 8, (uint32_t)at);
        memcpy(strings + at, raw, strlen(raw) + 1);
        at += strlen(raw) + 1;
    }
    *len = fixed + strsize;
    return b;
}

/* Databases hold version-1 blobs: they still open and answer, raw names
 * for both, and a size with bit 31 set is a size there, not a flag. */
TEST(symindex_reads_version_1)
{
    loaded l;
    if (!load_slice("bigapp-arm64", "arm64", &l))
        return;
    CHECK(ld_u32le(l.blob + 4) == SYMINDEX_VERSION, "new blobs are version %d", SYMINDEX_VERSION);
    size_t len;
    uint8_t *v1 = v1_from_v2(&l.idx, &len);
    CHECK(len < l.blen, "version 1 is smaller (no display names)");
    symindex idx;
    symd_err err = {0};
    CHECK(symindex_open(v1, len, &idx, &err) == SYMD_OK, "v1: %s", err.msg);
    static tsv_row rows[8192];
    char *buf;
    int n = load_tsv("fixtures/expected/bigapp-arm64.sym.tsv", rows, 8192, &buf);
    for (int i = 0; i < n; i++) {
        uint64_t addr;
        hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &addr);
        symlook a, b;
        symindex_lookup(&idx, addr, &a);
        symindex_lookup(&l.idx, addr, &b);
        CHECK(a.status == SYMLOOK_SYMBOL && a.name == a.mangled &&
                  strcmp(a.mangled, rows[i].f[1]) == 0 && a.sym_addr == b.sym_addr &&
                  a.offset == b.offset,
              "v1 0x%llx: %s", (unsigned long long)addr, a.name ? a.name : "(none)");
    }
    free(buf);
    /* The last symbol grown past 2 GiB: bit 31 is part of its size. */
    uint8_t *e = v1 + 32 + (size_t)(idx.nsyms - 1) * 12;
    uint64_t start = idx.base + ld_u32le(e);
    st_u32le(e + 4, 0x80000010u);
    CHECK(symindex_open(v1, len, &idx, &err) == SYMD_OK, "v1 big size: %s", err.msg);
    symlook look;
    symindex_lookup(&idx, start + 0x80000008u, &look);
    CHECK(look.status == SYMLOOK_SYMBOL && look.offset == 0x80000008u &&
              look.name == look.mangled,
          "v1: bit 31 of a size taken for a flag");
    free(v1);
    unload(&l);
}

/* Every function of bigapp-arm64 renamed to one name that demangles to
 * 8.7 KB (f(A<int, int>, A<A<int, int>, …>) eight levels deep), in a string
 * table appended to the file: display names stop at the budget, the rest
 * keep their raw name, and every lookup still answers. */
TEST(symindex_display_names_are_budgeted)
{
    size_t len;
    uint8_t *file = read_fixture("fixtures/bin/bigapp-arm64", &len);
    if (!file)
        return;
    macho_image img;
    symd_err err = {0};
    CHECK(macho_parse_image(file, len, &img, &err) == SYMD_OK, "%s", err.msg);
    uint32_t symoff = img.symoff, nsyms = img.nsyms;
    macho_image_free(&img);
    char name[256] = "__Z1f1AIiiE";
    static const char *subs[] = {"S0_", "S2_", "S4_", "S6_", "S8_", "SA_", "SC_", "SE_"};
    for (int k = 0; k < 8; k++)
        snprintf(name + strlen(name), sizeof name - strlen(name), "1AI%s%sE", subs[k], subs[k]);
    char *shown = symd_demangle(name + 1);
    CHECK(shown && strlen(shown) > 8000 && strlen(shown) < SYMD_DEMANGLE_MAX_OUT,
          "test name demangles to %zu bytes", shown ? strlen(shown) : 0);
    size_t nlen = strlen(name) + 1;
    uint8_t *buf = malloc(len + 1 + nlen);
    memcpy(buf, file, len);
    buf[len] = 0; /* string 0 stays the empty name */
    memcpy(buf + len + 1, name, nlen);
    for (uint32_t i = 0; i < nsyms; i++)
        st_u32le(buf + symoff + (size_t)i * 16, 1);
    size_t at = 32; /* LC_SYMTAB: stroff, strsize */
    for (uint32_t c = 0; c < ld_u32le(buf + 16); c++, at += ld_u32le(buf + at + 4))
        if (ld_u32le(buf + at) == 2) {
            st_u32le(buf + at + 16, (uint32_t)len);
            st_u32le(buf + at + 20, (uint32_t)(1 + nlen));
        }
    uint8_t *blob = NULL;
    size_t blen;
    uint32_t n = 0;
    symindex idx;
    CHECK(macho_parse_image(buf, len + 1 + nlen, &img, &err) == SYMD_OK &&
              symindex_build(&img, &blob, &blen, &n, NULL, &err) == SYMD_OK &&
              symindex_open(blob, blen, &idx, &err) == SYMD_OK,
          "renamed: %s", err.msg);
    if (blob) {
        size_t raw = (size_t)n * (nlen - 1), display = 0;
        uint32_t flagged = 0;
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *e = idx.syms + (size_t)i * 12;
            symlook look;
            symindex_lookup(&idx, idx.base + ld_u32le(e), &look);
            CHECK(look.status == SYMLOOK_SYMBOL && strcmp(look.mangled, name + 1) == 0,
                  "symbol %u lost", i);
            if (ld_u32le(e + 4) & SYMINDEX_DEMANGLED) {
                flagged++;
                display += strlen(look.name) + 1;
                CHECK(strcmp(look.name, shown) == 0, "symbol %u: wrong display name", i);
            } else {
                CHECK(look.name == look.mangled, "symbol %u: unflagged but apart", i);
            }
        }
        CHECK(flagged > 0 && flagged < n && display <= SYMINDEX_DISPLAY_BUDGET(raw + n),
              "%u of %u display names, %zu bytes, budget %zu", flagged, n, display,
              SYMINDEX_DISPLAY_BUDGET(raw + n));
    }
    free(blob);
    macho_image_free(&img);
    free(shown);
    free(buf);
    free(file);
}

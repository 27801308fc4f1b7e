/* dsym/: the line index of each fixture dSYM against llvm-symbolizer's
 * --inlining answers (fixtures/expected/NAME.dsym.lines.tsv). */
#include <stdlib.h>
#include <string.h>

#include "../dsym/lineindex.h"
#include "../fuzz/dwarf_container.h"
#include "../macho/macho.h"
#include "../util/cursor.h"
#include "../util/hex.h"
#include "fixture_util.h"
#include "test.h"

/* dSYM DWARF file, expected TSV. */
static const struct {
    const char *dwarf, *expect;
} dsyms[] = {
    {"fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64",
     "fixtures/expected/bigapp-arm64.dsym.lines.tsv"},
    {"fixtures/dsym/bigapp-x86_64.dSYM/Contents/Resources/DWARF/bigapp-x86_64",
     "fixtures/expected/bigapp-x86_64.dsym.lines.tsv"},
    {"fixtures/dsym/bigapp5-arm64.dSYM/Contents/Resources/DWARF/bigapp5-arm64",
     "fixtures/expected/bigapp5-arm64.dsym.lines.tsv"},
    /* every instruction of an inline-heavy program, DWARF 5 and 4 */
    {"fixtures/dsym/inliner-arm64.dSYM/Contents/Resources/DWARF/inliner-arm64",
     "fixtures/expected/inliner-arm64.dsym.lines.tsv"},
    {"fixtures/dsym/inliner-x86_64.dSYM/Contents/Resources/DWARF/inliner-x86_64",
     "fixtures/expected/inliner-x86_64.dsym.lines.tsv"},
};

typedef struct {
    uint8_t *file;
    size_t len;
    macho_image img;
    uint8_t *blob, *sblob;
    size_t blen;
    lineindex ix;
    symindex sidx;
} built;

/* Parses a DWARF file and builds its line index, with the slice's own
 * symbol index (as uploads do) or, when with_syms is false, without. */
static bool build_with(const char *rel, built *b, bool with_syms)
{
    memset(b, 0, sizeof *b);
    b->file = read_fixture(rel, &b->len);
    if (!b->file)
        return false;
    symd_err err = {0};
    lineindex_stats st;
    size_t slen;
    if (macho_parse_image(b->file, b->len, &b->img, &err) != SYMD_OK ||
        symindex_build(&b->img, &b->sblob, &slen, NULL, NULL, &err) != SYMD_OK ||
        symindex_open(b->sblob, slen, &b->sidx, &err) != SYMD_OK ||
        lineindex_build(&b->img, with_syms ? &b->sidx : NULL, 1u << 30, &b->blob, &b->blen,
                        &st, &err) != SYMD_OK) {
        CHECK(0, "%s: %s", rel, err.msg);
        return false;
    }
    CHECK(b->blob != NULL, "%s: no index", rel);
    if (!b->blob)
        return false;
    CHECK(st.functions > 0 && st.rows > 0, "%s: %u functions %u rows", rel, st.functions,
          st.rows);
    if (lineindex_open(b->blob, b->blen, &b->ix, &err) != SYMD_OK) {
        CHECK(0, "%s: open: %s", rel, err.msg);
        return false;
    }
    return true;
}

static bool build(const char *rel, built *b)
{
    return build_with(rel, b, true);
}

/* The outer function's names: the index's own, or the symbol table's at the
 * function's start when the index left them to it (what symbolicate does). */
static void outer_names(const built *b, const linelook *look, const char **name,
                        const char **mangled)
{
    const lineframe *f = &look->f[look->n - 1];
    *name = f->name;
    *mangled = f->mangled;
    if (look->outer_from_symbols) {
        symlook s;
        symindex_lookup(&b->sidx, look->func_start, &s);
        *name = s.status == SYMLOOK_SYMBOL ? s.name : NULL;
        *mangled = s.status == SYMLOOK_SYMBOL ? s.mangled : NULL;
    }
}

static void unbuild(built *b)
{
    macho_image_free(&b->img);
    free(b->sblob);
    free(b->blob);
    free(b->file);
}

/* Every sampled address: the same number of inline levels, and per level
 * function (raw name), file and line — and column — as llvm-symbolizer. */
static void check_against(const char *dwarf, const char *expect, int *addrs, int *frames)
{
    built b;
    if (!build(dwarf, &b))
        return;
    enum { MAX = 20000 };
    tsv_row *rows = calloc(MAX, sizeof *rows);
    char *buf = NULL;
    int n = load_tsv(expect, rows, MAX, &buf);
    CHECK(n > 0, "%s: no rows", expect);
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && strcmp(rows[j].f[0], rows[i].f[0]) == 0)
            j++;
        uint64_t addr;
        CHECK(hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &addr), "bad address");
        linelook look;
        bool ok = lineindex_lookup(&b.ix, addr, &look);
        if (j - i == 1 && !rows[i].f[3][0]) {
            /* Padding between functions: llvm-symbolizer names the symbol
             * and knows no line; DWARF has no function there. */
            CHECK(!ok, "%s %s: found in padding", dwarf, rows[i].f[0]);
            (*addrs)++;
            i = j;
            continue;
        }
        CHECK(ok, "%s %s: not found", dwarf, rows[i].f[0]);
        if (ok) {
            CHECK(look.n == (size_t)(j - i), "%s %s: %zu levels, llvm-symbolizer %d", dwarf,
                  rows[i].f[0], look.n, j - i);
            for (int k = 0; k < j - i && (size_t)k < look.n; k++) {
                const lineframe *f = &look.f[k];
                const tsv_row *r = &rows[i + k];
                const char *name, *mangled = f->mangled;
                if ((size_t)k + 1 == look.n)
                    outer_names(&b, &look, &name, &mangled);
                CHECK(mangled && strcmp(mangled, r->f[2]) == 0,
                      "%s %s level %d: function %s, llvm-symbolizer %s", dwarf, r->f[0], k,
                      mangled ? mangled : "(none)", r->f[2]);
                CHECK(f->file && strcmp(f->file, r->f[3]) == 0,
                      "%s %s level %d: file %s, llvm-symbolizer %s", dwarf, r->f[0], k,
                      f->file ? f->file : "(none)", r->f[3]);
                CHECK(f->line == strtoul(r->f[4], NULL, 10) &&
                          f->column == strtoul(r->f[5], NULL, 10),
                      "%s %s level %d: line %u:%u, llvm-symbolizer %s:%s", dwarf, r->f[0], k,
                      f->line, f->column, r->f[4], r->f[5]);
                (*frames)++;
            }
        }
        (*addrs)++;
        i = j;
    }
    free(rows);
    free(buf);
    unbuild(&b);
}

TEST(dwarf_index_matches_llvm_symbolizer)
{
    int addrs = 0, frames = 0;
    for (size_t i = 0; i < sizeof dsyms / sizeof dsyms[0]; i++)
        check_against(dsyms[i].dwarf, dsyms[i].expect, &addrs, &frames);
    CHECK(addrs > 1100 && frames > 1800, "only %d addresses, %d frames", addrs, frames);
    printf("    %d addresses, %d inline levels: function, file, line, column as "
           "llvm-symbolizer\n", addrs, frames);
}

/* Display names: every level's demangled name as llvm-symbolizer's default
 * output spells it, but for the lambdas, which libiberty (the demangler the
 * contract names; README "Demangling") spells its own way: {lambda(int)#1}
 * for 'lambda'(int), and no return type before a local entity's template
 * function. */
static const char *const spelled[][2] = {
    {"tm::reduce<int>(int const*, int)::{lambda(int)#1}::operator()(int) const",
     "int tm::reduce<int>(int const*, int)::'lambda'(int)::operator()(int) const"},
    {"tm::reduce<long>(long const*, int)::{lambda(long)#1}::operator()(long) const",
     "long tm::reduce<long>(long const*, int)::'lambda'(long)::operator()(long) const"},
};

TEST(dwarf_index_demangled_names)
{
    static const char *const files[][2] = {
        {"fixtures/dsym/inliner-arm64.dSYM/Contents/Resources/DWARF/inliner-arm64",
         "fixtures/expected/inliner-arm64.dsym.lines.demangled.tsv"},
        {"fixtures/dsym/inliner-x86_64.dSYM/Contents/Resources/DWARF/inliner-x86_64",
         "fixtures/expected/inliner-x86_64.dsym.lines.demangled.tsv"},
    };
    int demangled = 0, levels = 0;
    for (size_t d = 0; d < 2; d++) {
        built b;
        if (!build(files[d][0], &b))
            continue;
        enum { MAX = 4000 };
        tsv_row *rows = calloc(MAX, sizeof *rows);
        char *buf = NULL;
        int n = load_tsv(files[d][1], rows, MAX, &buf);
        for (int i = 0; i < n;) {
            int j = i;
            while (j < n && strcmp(rows[j].f[0], rows[i].f[0]) == 0)
                j++;
            uint64_t addr;
            hex_parse_u64(rows[i].f[0], strlen(rows[i].f[0]), &addr);
            linelook look;
            if (rows[i].f[3][0] && lineindex_lookup(&b.ix, addr, &look) &&
                look.n == (size_t)(j - i)) {
                for (int k = 0; k < j - i; k++) {
                    const lineframe *f = &look.f[k];
                    const char *fname = f->name, *fmangled = f->mangled;
                    if ((size_t)k + 1 == look.n)
                        outer_names(&b, &look, &fname, &fmangled);
                    const char *want = rows[i + k].f[2];
                    for (size_t e = 0; e < sizeof spelled / sizeof spelled[0]; e++)
                        if (strcmp(want, spelled[e][1]) == 0)
                            want = spelled[e][0];
                    CHECK(fname && strcmp(fname, want) == 0,
                          "%s %s level %d: %s, llvm-symbolizer %s", files[d][0], rows[i].f[0],
                          k, fname ? fname : "(none)", rows[i + k].f[2]);
                    demangled += fname != fmangled;
                    levels++;
                }
            }
            i = j;
        }
        free(rows);
        free(buf);
        unbuild(&b);
    }
    CHECK(levels > 1500 && demangled > 100, "%d levels, %d demangled", levels, demangled);
}

/* Built without a symbol index, every function keeps its own name, and it
 * is the name the symbol table gives (these fixtures have no aliases); the
 * index with symbols is smaller. */
TEST(dwarf_index_names_without_symbols)
{
    for (size_t i = 0; i < sizeof dsyms / sizeof dsyms[0]; i++) {
        built a, b;
        if (!build_with(dsyms[i].dwarf, &a, true))
            continue;
        if (!build_with(dsyms[i].dwarf, &b, false)) {
            unbuild(&a);
            continue;
        }
        int elided = 0;
        for (uint32_t k = 0; k < a.ix.nfuncs; k++) {
            uint64_t addr = a.ix.base + ld_u32le(a.ix.funcs + (size_t)k * 12);
            linelook la, lb;
            CHECK(lineindex_lookup(&a.ix, addr, &la) && lineindex_lookup(&b.ix, addr, &lb) &&
                      la.n == lb.n,
                  "%s 0x%llx: lookups differ", dsyms[i].dwarf, (unsigned long long)addr);
            const char *n, *m;
            outer_names(&a, &la, &n, &m);
            CHECK(!lb.outer_from_symbols && m && lb.f[lb.n - 1].mangled &&
                      strcmp(m, lb.f[lb.n - 1].mangled) == 0,
                  "%s 0x%llx: outer name %s vs %s", dsyms[i].dwarf, (unsigned long long)addr,
                  m ? m : "(none)", lb.f[lb.n - 1].mangled ? lb.f[lb.n - 1].mangled : "(none)");
            elided += la.outer_from_symbols;
        }
        CHECK(elided > 0 && a.blen < b.blen, "%s: %d names left to symbols, %zu vs %zu bytes",
              dsyms[i].dwarf, elided, a.blen, b.blen);
        unbuild(&a);
        unbuild(&b);
    }
}

/* Addresses outside every function, and a binary without DWARF. */
TEST(dwarf_index_edges)
{
    built b;
    if (!build(dsyms[0].dwarf, &b))
        return;
    linelook look;
    CHECK(!lineindex_lookup(&b.ix, 0, &look), "address 0 found");
    CHECK(!lineindex_lookup(&b.ix, b.ix.base - 1, &look), "below base found");
    CHECK(!lineindex_lookup(&b.ix, UINT64_MAX, &look), "top found");
    unbuild(&b);

    size_t len;
    uint8_t *bin = read_fixture("fixtures/bin/bigapp-arm64", &len);
    macho_image img;
    symd_err err = {0};
    uint8_t *blob = (uint8_t *)1;
    size_t blen = 1;
    lineindex_stats st;
    CHECK(bin && macho_parse_image(bin, len, &img, &err) == SYMD_OK, "%s", err.msg);
    CHECK(lineindex_build(&img, NULL, 1u << 30, &blob, &blen, &st, &err) == SYMD_OK && !blob &&
              !blen,
          "binary without DWARF gave an index: %s", err.msg);
    macho_image_free(&img);
    free(bin);
}

/* ---- hostile DWARF --------------------------------------------------------- */

static const macho_section *find_sect(const macho_image *img, const char *name)
{
    for (size_t i = 0; i < img->nsects; i++)
        if (strcmp(img->sects[i].segname, "__DWARF") == 0 &&
            strcmp(img->sects[i].sectname, name) == 0)
            return &img->sects[i];
    return NULL;
}

/* One damage applied to a copy of a real dSYM: section, offset in it, bytes. */
typedef struct {
    const char *what, *sect;
    size_t at;
    uint8_t bytes[8];
    size_t n;
} damage;

static const damage damages[] = {
    /* unit_length past the end of .debug_info */
    {"unit length past the section", "__debug_info", 0, {0xf0, 0xff, 0xff, 0x7f}, 4},
    {"reserved unit length", "__debug_info", 0, {0xf3, 0xff, 0xff, 0xff}, 4},
    {"DWARF version 9", "__debug_info", 4, {9, 0}, 2},
    {"address size 3", "__debug_info", 10, {3}, 1},
    {"abbreviation offset past .debug_abbrev", "__debug_info", 6, {0xff, 0xff, 0xff, 0x0f}, 4},
    {"unknown abbreviation code", "__debug_info", 11, {0x7f}, 1},
    /* the first abbreviation's first form becomes block4: its length is read
     * from the DIE's bytes and runs past the unit */
    {"form runs past the unit", "__debug_abbrev", 4, {0x04}, 1},
    {"unknown form", "__debug_abbrev", 4, {0x7e}, 1},
    {"line table length past the section", "__debug_line", 0, {0xf0, 0xff, 0xff, 0x7f}, 4},
    {"line table version 1", "__debug_line", 4, {1, 0}, 2},
};

/* Every damage is refused as malformed debug info, never crashes, and an
 * undamaged copy still converts. Also: the whole abbreviation table turned
 * into continuation bytes (a ULEB that never ends) and every truncation of
 * .debug_info's first unit. */
TEST(dwarf_hostile_is_malformed_debug_info)
{
    const char *rel = dsyms[0].dwarf;
    size_t len;
    uint8_t *orig = read_fixture(rel, &len);
    if (!orig)
        return;
    uint8_t *buf = malloc(len);
    for (size_t k = 0; k <= sizeof damages / sizeof damages[0]; k++) {
        memcpy(buf, orig, len);
        macho_image img;
        symd_err err = {0};
        if (macho_parse_image(buf, len, &img, &err) != SYMD_OK) {
            CHECK(0, "%s", err.msg);
            break;
        }
        const char *what = "unterminated abbreviations";
        if (k < sizeof damages / sizeof damages[0]) {
            const damage *d = &damages[k];
            const macho_section *s = find_sect(&img, d->sect);
            CHECK(s && d->at + d->n <= s->size, "%s: no room", d->what);
            if (s)
                memcpy(buf + s->offset + d->at, d->bytes, d->n);
            what = d->what;
        } else {
            const macho_section *s = find_sect(&img, "__debug_abbrev");
            if (s)
                memset(buf + s->offset, 0x80, (size_t)s->size);
        }
        uint8_t *blob = NULL;
        size_t blen;
        lineindex_stats st;
        symd_status r = lineindex_build(&img, NULL, 1u << 30, &blob, &blen, &st, &err);
        CHECK(r == SYMD_E_BAD_DEBUG_INFO && !blob, "%s: %s (%s)", what, symd_status_name(r),
              err.msg);
        CHECK(err.msg[0] != 0, "%s: no message", what);
        free(blob);
        macho_image_free(&img);
    }
    /* Truncations: shrink .debug_info's header size to every length of the
     * first unit; each must fail cleanly or convert what remains. */
    memcpy(buf, orig, len);
    macho_image img;
    symd_err err = {0};
    if (macho_parse_image(buf, len, &img, &err) == SYMD_OK) {
        macho_section *s = (macho_section *)find_sect(&img, "__debug_info");
        uint64_t full = s ? s->size : 0;
        int refused = 0;
        for (uint64_t cut = 1; s && cut < full && cut < 2000; cut++) {
            s->size = cut;
            uint8_t *blob = NULL;
            size_t blen;
            lineindex_stats st;
            symd_err_clear(&err);
            symd_status r = lineindex_build(&img, NULL, 1u << 30, &blob, &blen, &st, &err);
            CHECK(r == SYMD_OK || r == SYMD_E_BAD_DEBUG_INFO, "cut %llu: %s",
                  (unsigned long long)cut, symd_status_name(r));
            refused += r == SYMD_E_BAD_DEBUG_INFO;
            free(blob);
        }
        CHECK(refused > 100, "only %d truncations refused", refused);
        macho_image_free(&img);
    }
    free(buf);
    free(orig);
}

/* Inputs fuzz_dwarf once crashed on (fuzz/regress/dwarf-*) stay fixed. */
static void replay_dwarf(const char *rel, const uint8_t *buf, size_t len)
{
    macho_section sects[10];
    macho_image img;
    uint64_t lo, hi;
    CHECK(dwarf_container_image(buf, len, sects, &img, &lo, &hi), "%s: short", rel);
    uint8_t *blob = NULL;
    size_t blen;
    lineindex_stats st;
    symd_err err = {0};
    symd_status r = lineindex_build(&img, NULL, 1u << 26, &blob, &blen, &st, &err);
    CHECK(r == SYMD_OK || r == SYMD_E_BAD_DEBUG_INFO, "%s: %s", rel, symd_status_name(r));
    free(blob);
}

TEST(dwarf_fuzz_regressions)
{
    CHECK(each_regression("dwarf-", replay_dwarf) >= 2, "the dwarf-* regression inputs are gone");
}

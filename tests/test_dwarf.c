/* dsym/: the line index of each fixture dSYM against llvm-symbolizer's
 * --inlining answers (fixtures/expected/NAME.dsym.lines.tsv). */
#include <stdlib.h>
#include <string.h>

#include "../dsym/lineindex.h"
#include "../macho/macho.h"
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
};

typedef struct {
    uint8_t *file;
    size_t len;
    macho_image img;
    uint8_t *blob;
    size_t blen;
    lineindex ix;
} built;

static bool build(const char *rel, built *b)
{
    memset(b, 0, sizeof *b);
    b->file = read_fixture(rel, &b->len);
    if (!b->file)
        return false;
    symd_err err = {0};
    lineindex_stats st;
    if (macho_parse_image(b->file, b->len, &b->img, &err) != SYMD_OK ||
        lineindex_build(&b->img, 1u << 30, &b->blob, &b->blen, &st, &err) != SYMD_OK) {
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

static void unbuild(built *b)
{
    macho_image_free(&b->img);
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
                CHECK(f->mangled && strcmp(f->mangled, r->f[2]) == 0,
                      "%s %s level %d: function %s, llvm-symbolizer %s", dwarf, r->f[0], k,
                      f->mangled ? f->mangled : "(none)", r->f[2]);
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
    CHECK(addrs > 250 && frames > 250, "only %d addresses, %d frames", addrs, frames);
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
    CHECK(lineindex_build(&img, 1u << 30, &blob, &blen, &st, &err) == SYMD_OK && !blob &&
              !blen,
          "binary without DWARF gave an index: %s", err.msg);
    macho_image_free(&img);
    free(bin);
}

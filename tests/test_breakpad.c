/* breakpad/: the .sym reader over the real files of ../shared/minidumps, its
 * STACK CFI against symbolic's snapshot, hostile .sym files, the indexes an
 * upload builds from a .sym against the binary + dSYM's (in process and
 * through two servers, with llvm-symbolizer as a third opinion), and
 * `symd dump-syms` against Breakpad's and mozilla's dump_syms output. The
 * expectations are those tools' outputs, never numbers written here. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../breakpad/dumpsyms.h"
#include "../breakpad/image.h"
#include "../breakpad/sym.h"
#include "../breakpad/unwrows.h"
#include "../ingest/ingest.h"
#include "../macho/symindex.h"
#include "../store/store.h"
#include "../util/hex.h"
#include "harness.h"
#include "test.h"

#define CRASH_UUID "67E9247C-814E-392B-A027-DBDE6748FCBF"
#define CRASH_TEXT 0x100000000ull /* the crash binary's __TEXT vmaddr */

/* A file of ../shared/minidumps (NUL-terminated, malloc'ed), or NULL and
 * the test marked skipped when the shared data is absent. */
static uint8_t *md_file(const char *rel, size_t *len)
{
    const char *dir = minidumps_dir();
    if (!dir) {
        test_skip("../shared/minidumps not found");
        return NULL;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    uint8_t *b = read_file(path, len);
    CHECK(b, "%s unreadable", path);
    return b;
}

__attribute__((unused)) static const char *md_path(const char *rel)
{
    static char bufs[4][1024];
    static int next;
    char *p = bufs[next++ % 4];
    snprintf(p, 1024, "%s/%s", minidumps_dir() ? minidumps_dir() : ".", rel);
    return p;
}

/* How many lines of buf start with prefix. */
static size_t count_lines(const uint8_t *buf, size_t len, const char *prefix)
{
    size_t n = 0, pl = strlen(prefix);
    for (size_t i = 0; i < len;) {
        if (len - i >= pl && memcmp(buf + i, prefix, pl) == 0)
            n++;
        const uint8_t *nl = memchr(buf + i, '\n', len - i);
        i = nl ? (size_t)(nl - buf) + 1 : len;
    }
    return n;
}

/* Line records: lines whose first word is all hex digits. */
static size_t count_line_records(const uint8_t *buf, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t k = i;
        while (k < len && hex_digit((char)buf[k]) >= 0)
            k++;
        n += k > i && k < len && buf[k] == ' ';
        const uint8_t *nl = memchr(buf + i, '\n', len - i);
        i = nl ? (size_t)(nl - buf) + 1 : len;
    }
    return n;
}

static size_t total_warnings(const bp_sym *s)
{
    size_t n = 0;
    for (int k = 0; k < BP_W_KINDS; k++)
        n += s->warn[k].count;
    return n;
}

/* ---- the shared files read ------------------------------------------------ */

/* Every record of the four shared .sym files is read (counted against the
 * file's own lines), without a warning. */
TEST(breakpad_parse_shared_files)
{
    static const struct {
        const char *rel;
        bool module;
        const char *arch;
    } files[] = {
        {"symbolicator-macos/crash.sym", true, "x86_64"},
        {"symbolicator-macos/crash.inlines.sym", true, "x86_64"},
        {"symbolic-crash_macos/crash_macos.sym", false, ""},
        {"symbolicator-macos-no-fp/sentry_example.sym.original", true, "arm64"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        size_t len;
        uint8_t *buf = md_file(files[i].rel, &len);
        if (!buf)
            return;
        bp_sym s;
        symd_err err = {0};
        symd_status st = bp_sym_parse(buf, len, files[i].module, &s, &err);
        CHECK(st == SYMD_OK, "%s: %s", files[i].rel, err.msg);
        if (st != SYMD_OK) {
            free(buf);
            continue;
        }
        CHECK(s.has_module == files[i].module && strcmp(s.arch, files[i].arch) == 0,
              "%s: MODULE %d %s", files[i].rel, s.has_module, s.arch);
        CHECK(s.nfuncs == count_lines(buf, len, "FUNC "), "%s: %zu FUNC", files[i].rel, s.nfuncs);
        CHECK(s.npublics == count_lines(buf, len, "PUBLIC "), "%s: %zu PUBLIC", files[i].rel,
              s.npublics);
        CHECK(s.nfiles == count_lines(buf, len, "FILE "), "%s: %zu FILE", files[i].rel, s.nfiles);
        CHECK(s.norigins == count_lines(buf, len, "INLINE_ORIGIN "), "%s: %zu INLINE_ORIGIN",
              files[i].rel, s.norigins);
        CHECK(s.nlines == count_line_records(buf, len), "%s: %zu line records", files[i].rel,
              s.nlines);
        size_t inits = count_lines(buf, len, "STACK CFI INIT "),
               rows = count_lines(buf, len, "STACK CFI ");
        CHECK(s.cfi.nentries == inits && s.cfi.nrows == rows, "%s: CFI %zu/%zu rows %zu/%zu",
              files[i].rel, s.cfi.nentries, inits, s.cfi.nrows, rows);
        CHECK(total_warnings(&s) == 0, "%s: %zu warnings", files[i].rel, total_warnings(&s));
        /* every INLINE record's ranges found a place in its FUNC's tree */
        size_t raw = count_lines(buf, len, "INLINE ");
        CHECK(raw == 0 || s.ninlines >= raw, "%s: %zu inline nodes for %zu INLINE records",
              files[i].rel, s.ninlines, raw);
        printf("    %s: %zu FUNC, %zu lines, %zu INLINE -> %zu inline nodes, %zu PUBLIC, "
               "%zu CFI entries / %zu rows\n",
               files[i].rel, s.nfuncs, s.nlines, raw, s.ninlines, s.npublics, s.cfi.nentries,
               s.cfi.nrows);
        bp_sym_free(&s);
        free(buf);
    }
}

/* ---- STACK CFI against symbolic's snapshot -------------------------------- */

/* The rows of one row, comparable. */
static bool same_row(const bp_cfi_lookup *a, const bp_cfi_lookup *b)
{
    if (a->start != b->start || a->cfa_reg != b->cfa_reg || a->cfa_off != b->cfa_off ||
        a->nrules != b->nrules)
        return false;
    for (size_t i = 0; i < a->nrules; i++)
        if (a->rules[i].reg != b->rules[i].reg || a->rules[i].kind != b->rules[i].kind ||
            a->rules[i].off != b->rules[i].off)
            return false;
    return true;
}

static void row_of(const bp_cfi *c, size_t e, size_t k, bp_cfi_lookup *out)
{
    const bp_cfi_row *r = &c->rows[c->entries[e].row0 + k];
    out->start = r->addr;
    out->cfa_reg = r->cfa_reg;
    out->cfa_off = r->cfa_off;
    out->nrules = r->nrules;
    if (r->nrules)
        memcpy(out->rules, c->rules + r->rule0, r->nrules * sizeof *out->rules);
}

/* The snapshot symbolic's test keeps of the STACK CFI it reads from
 * crash.sym (its own register order): every row, resolved, equals ours,
 * both as parsed and as the stored blob answers. */
TEST(breakpad_cfi_matches_symbolic_snapshot)
{
    size_t slen, len;
    uint8_t *snap = md_file("symbolic-cfi-snapshots/test_cfi__cfi_sym_macos.snap", &slen);
    uint8_t *sym = snap ? md_file("symbolicator-macos/crash.sym", &len) : NULL;
    if (!snap || !sym) {
        free(snap);
        return;
    }
    /* insta's header: "---", two lines, "---" */
    const uint8_t *body = snap;
    for (int dashes = 0; dashes < 2 && body < snap + slen;) {
        const uint8_t *nl = memchr(body, '\n', (size_t)(snap + slen - body));
        if (!nl)
            break;
        dashes += nl - body == 3 && memcmp(body, "---", 3) == 0;
        body = nl + 1;
    }
    bp_sym a, b;
    symd_err err = {0};
    CHECK(bp_sym_parse(body, (size_t)(snap + slen - body), false, &a, &err) == SYMD_OK,
          "snapshot: %s", err.msg);
    CHECK(bp_sym_parse(sym, len, true, &b, &err) == SYMD_OK, "crash.sym: %s", err.msg);
    CHECK(total_warnings(&a) == 0 && total_warnings(&b) == 0, "warnings: %zu, %zu",
          total_warnings(&a), total_warnings(&b));
    CHECK(a.cfi.nentries == b.cfi.nentries && a.cfi.nrows == b.cfi.nrows,
          "snapshot %zu entries / %zu rows, crash.sym %zu / %zu", a.cfi.nentries, a.cfi.nrows,
          b.cfi.nentries, b.cfi.nrows);
    uint8_t *blob = NULL;
    size_t blen;
    bp_cfi_blob cb;
    CHECK(bp_cfi_encode(&b.cfi, &blob, &blen, &err) == SYMD_OK &&
              bp_cfi_open(blob, blen, &cb, &err) == SYMD_OK,
          "blob: %s", err.msg);
    size_t rows_same = 0, rows = 0, addrs = 0, addrs_same = 0;
    for (size_t e = 0; e < a.cfi.nentries && e < b.cfi.nentries; e++) {
        const bp_cfi_entry *ea = &a.cfi.entries[e], *eb = &b.cfi.entries[e];
        CHECK(ea->addr == eb->addr && ea->size == eb->size && ea->nrows == eb->nrows,
              "entry %zu: %x+%x (%u rows) vs %x+%x (%u rows)", e, ea->addr, ea->size, ea->nrows,
              eb->addr, eb->size, eb->nrows);
        for (uint32_t k = 0; k < ea->nrows && k < eb->nrows; k++) {
            bp_cfi_lookup ra, rb, rblob;
            row_of(&a.cfi, e, k, &ra);
            row_of(&b.cfi, e, k, &rb);
            bp_cfi_row_at(&cb, (uint32_t)e, k, &rblob);
            bool ok = same_row(&ra, &rb) && same_row(&ra, &rblob);
            rows++;
            rows_same += ok;
            CHECK(ok, "entry %x row %u differs", ea->addr, k);
        }
        /* every address of the entry finds the row the snapshot says */
        for (uint32_t x = ea->addr; x < ea->addr + ea->size; x++) {
            bp_cfi_lookup got, want;
            uint32_t k = 0;
            while (k + 1 < ea->nrows && a.cfi.rows[ea->row0 + k + 1].addr <= x)
                k++;
            row_of(&a.cfi, e, k, &want);
            addrs++;
            addrs_same += bp_cfi_find(&cb, x, &got) && same_row(&got, &want);
        }
    }
    CHECK(addrs_same == addrs, "%zu of %zu addresses find the snapshot's row", addrs_same, addrs);
    printf("    STACK CFI of crash.sym vs symbolic's snapshot: %zu/%zu rows equal, %zu/%zu "
           "addresses find the same row in the stored blob\n",
           rows_same, rows, addrs_same, addrs);
    free(blob);
    bp_sym_free(&a);
    bp_sym_free(&b);
    free(snap);
    free(sym);
}

/* ---- dump-syms STACK CFI against symbolic's and Breakpad's ---------------- */

/* The body of an insta snapshot (after its "---" header). */
static const uint8_t *snap_body(const uint8_t *snap, size_t slen)
{
    const uint8_t *body = snap;
    for (int dashes = 0; dashes < 2 && body < snap + slen;) {
        const uint8_t *nl = memchr(body, '\n', (size_t)(snap + slen - body));
        if (!nl)
            break;
        dashes += nl - body == 3 && memcmp(body, "---", 3) == 0;
        body = nl + 1;
    }
    return body;
}

/* Two rows unwind alike (wherever they start). */
static bool same_rules(const bp_cfi_lookup *a, const bp_cfi_lookup *b)
{
    bp_cfi_lookup x = *a;
    x.start = b->start;
    return same_row(&x, b);
}

/* The CFA offset at the body of the x86_64 function at vmaddr addr as
 * llvm-objdump disassembles its prologue: 8 (the return address) + 8 per
 * push + the immediate of `subq $N, %rsp`; -1 when objdump did not run. */
static long prologue_cfa(const char *binary, uint64_t addr)
{
    char cmd[1400], line[512];
    snprintf(cmd, sizeof cmd,
             "llvm-objdump-14 -d --no-show-raw-insn --start-address=0x%llx "
             "--stop-address=0x%llx '%s' 2>/dev/null",
             (unsigned long long)addr, (unsigned long long)addr + 0x30, binary);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    long cfa = 8, insns = 0;
    bool done = false;
    while (fgets(line, sizeof line, p)) {
        unsigned long long at;
        char colon;
        /* instruction lines only: "100001b70:     \tpushq\t%rbp" */
        if (done || sscanf(line, "%llx%c", &at, &colon) != 2 || colon != ':' ||
            !strchr(line, '\t'))
            continue;
        insns++;
        long imm;
        const char *sub = strstr(line, "subq\t$");
        if (strstr(line, "pushq\t%"))
            cfa += 8;
        else if (sub && sscanf(sub + 6, "%ld, %%rsp", &imm) == 1 && strstr(sub, "%rsp"))
            cfa += imm, done = true;
        else
            done = true;
    }
    pclose(p);
    return insns ? cfa : -1;
}

/* symd dump-syms' STACK CFI of symbolicator-macos/crash (from its
 * __unwind_info and __eh_frame) against symbolic's snapshot of the CFI it
 * extracts from the same binary (same entries, same rows, except functions
 * whose compact encoding says the stack size is in the code: symbolic
 * leaves those at the entry's CFA, symd reads the `sub rsp`, checked here
 * against llvm-objdump's disassembly), and against Breakpad's crash.sym
 * (__eh_frame only: every address of its entries finds a row that unwinds
 * alike in ours). */
TEST(breakpad_dump_syms_cfi_matches_snapshot)
{
    size_t blen, slen, clen;
    uint8_t *bin = md_file("symbolicator-macos/crash", &blen);
    uint8_t *snap = bin ? md_file("symbolic-cfi-snapshots/test_cfi__cfi_macho.snap", &slen) : NULL;
    uint8_t *csym = snap ? md_file("symbolicator-macos/crash.sym", &clen) : NULL;
    if (!csym) {
        free(bin);
        free(snap);
        return;
    }
    char *out = NULL;
    size_t olen = 0;
    FILE *f = open_memstream(&out, &olen);
    bp_dump_opts o = {NULL, "crash", bp_dump_cfi_unwind, NULL};
    bp_dump_stats ds;
    symd_err err = {0};
    CHECK(f && bp_dump_syms(bin, blen, NULL, 0, &o, f, &ds, &err) == SYMD_OK, "dump: %s",
          err.msg);
    if (f)
        fclose(f);
    const uint8_t *body = snap_body(snap, slen);
    bp_sym ours, theirs, bk;
    CHECK(bp_sym_parse((uint8_t *)out, olen, true, &ours, &err) == SYMD_OK, "ours: %s", err.msg);
    CHECK(bp_sym_parse(body, (size_t)(snap + slen - body), false, &theirs, &err) == SYMD_OK,
          "snapshot: %s", err.msg);
    CHECK(bp_sym_parse(csym, clen, true, &bk, &err) == SYMD_OK, "crash.sym: %s", err.msg);
    CHECK(total_warnings(&ours) == 0, "our .sym reads back with %zu warnings",
          total_warnings(&ours));
    CHECK(ds.cfi_entries == ours.cfi.nentries && ds.cfi_entries == theirs.cfi.nentries &&
              ours.cfi.nrows == theirs.cfi.nrows,
          "entries/rows: ours %zu/%zu, snapshot %zu/%zu", ours.cfi.nentries, ours.cfi.nrows,
          theirs.cfi.nentries, theirs.cfi.nrows);
    size_t rows = 0, equal = 0, from_code = 0;
    for (size_t e = 0; e < ours.cfi.nentries && e < theirs.cfi.nentries; e++) {
        const bp_cfi_entry *a = &ours.cfi.entries[e], *b = &theirs.cfi.entries[e];
        CHECK(a->addr == b->addr && a->size == b->size && a->nrows == b->nrows,
              "entry %zu: %x+%x (%u rows), snapshot %x+%x (%u rows)", e, a->addr, a->size,
              a->nrows, b->addr, b->size, b->nrows);
        for (uint32_t k = 0; k < a->nrows && k < b->nrows; k++) {
            bp_cfi_lookup ra, rb;
            row_of(&ours.cfi, e, k, &ra);
            row_of(&theirs.cfi, e, k, &rb);
            rows++;
            if (same_row(&ra, &rb)) {
                equal++;
                continue;
            }
            /* symbolic's default for a stack size it would read from code */
            long want = prologue_cfa(md_path("symbolicator-macos/crash"), CRASH_TEXT + a->addr);
            bool ok = a->nrows == 1 && rb.cfa_reg == 7 && rb.cfa_off == 8 && ra.cfa_reg == 7 &&
                      ra.cfa_off == want;
            from_code += ok;
            CHECK(ok, "entry %x row %u: CFA $rsp%+d, snapshot $rsp%+d, objdump's prologue %ld",
                  a->addr, k, ra.cfa_off, rb.cfa_off, want);
        }
    }
    /* Breakpad's dump_syms reads __eh_frame alone: its rows hold in ours */
    uint8_t *blob = NULL;
    size_t bl;
    bp_cfi_blob cb;
    CHECK(bp_cfi_encode(&ours.cfi, &blob, &bl, &err) == SYMD_OK &&
              bp_cfi_open(blob, bl, &cb, &err) == SYMD_OK,
          "blob: %s", err.msg);
    size_t addrs = 0, addrs_same = 0, bk_rows_same = 0;
    for (size_t e = 0; blob && e < bk.cfi.nentries; e++) {
        const bp_cfi_entry *x = &bk.cfi.entries[e];
        bool entry_rows_same = true;
        for (uint32_t a = x->addr; a < x->addr + x->size; a++) {
            uint32_t k = 0;
            while (k + 1 < x->nrows && bk.cfi.rows[x->row0 + k + 1].addr <= a)
                k++;
            bp_cfi_lookup want, got;
            row_of(&bk.cfi, e, k, &want);
            bool ok = bp_cfi_find(&cb, a, &got) && same_rules(&got, &want);
            addrs++;
            addrs_same += ok;
            entry_rows_same &= ok;
        }
        bk_rows_same += entry_rows_same ? x->nrows : 0;
        CHECK(entry_rows_same, "crash.sym entry %x: an address unwinds otherwise in ours", x->addr);
    }
    printf("    dump-syms STACK CFI of crash: %zu INIT / %zu rows (snapshot %zu / %zu): %zu rows "
           "equal, %zu with the stack size read from code (objdump agrees); crash.sym's %zu "
           "INIT / %zu rows: %zu rows, %zu/%zu addresses unwind alike\n",
           ours.cfi.nentries, ours.cfi.nrows, theirs.cfi.nentries, theirs.cfi.nrows, equal,
           from_code, bk.cfi.nentries, bk.cfi.nrows, bk_rows_same, addrs_same, addrs);
    CHECK(equal + from_code == rows && addrs_same == addrs, "rows differ");
    free(blob);
    bp_sym_free(&ours);
    bp_sym_free(&theirs);
    bp_sym_free(&bk);
    free(out);
    free(bin);
    free(snap);
    free(csym);
}

/* A damaged CFI blob (every byte flipped in turn, every truncation) is
 * refused or answers lookups inside its bounds: never trusted blindly. */
TEST(breakpad_cfi_blob_damaged)
{
    size_t len;
    uint8_t *sym = md_file("symbolicator-macos-no-fp/sentry_example.sym.original", &len);
    if (!sym)
        return;
    bp_sym s;
    symd_err err = {0};
    CHECK(bp_sym_parse(sym, len, true, &s, &err) == SYMD_OK, "%s", err.msg);
    uint8_t *blob = NULL;
    size_t blen = 0;
    CHECK(bp_cfi_encode(&s.cfi, &blob, &blen, &err) == SYMD_OK, "%s", err.msg);
    size_t refused = 0;
    for (size_t i = 0; blob && i < blen; i++) {
        blob[i] ^= 0xa5;
        bp_cfi_blob b;
        if (bp_cfi_open(blob, blen, &b, &err) == SYMD_OK) {
            bp_cfi_lookup l;
            for (uint32_t a = 0; a < 0x3000; a += 7)
                bp_cfi_find(&b, a, &l);
        } else {
            refused++;
        }
        blob[i] ^= 0xa5;
        bp_cfi_blob t;
        if (bp_cfi_open(blob, i, &t, &err) == SYMD_OK)
            CHECK(0, "a blob cut to %zu bytes opened", i);
    }
    CHECK(refused > 0, "no damaged blob refused");
    free(blob);
    bp_sym_free(&s);
    free(sym);
}

/* ---- hostile .sym files ------------------------------------------------------ */

#define HDR "MODULE mac x86_64 67E9247C814E392BA027DBDE6748FCBF0 t\n"

static symd_status parse_text(const char *text, bp_sym *s, symd_err *err)
{
    memset(err, 0, sizeof *err);
    return bp_sym_parse((const uint8_t *)text, strlen(text), true, s, err);
}

TEST(breakpad_hostile_sym)
{
    bp_sym s;
    symd_err err;

    /* A 10 MB line: an error naming it, read no further than the bound. */
    size_t big = 10u << 20;
    char *t = malloc(big + 256);
    int h = snprintf(t, 256, HDR "FUNC 0 10 0 f\n");
    memset(t + h, 'A', big);
    t[h + big] = 0;
    CHECK(parse_text(t, &s, &err) == SYMD_E_CORRUPT && strstr(err.msg, "line 3"),
          "10 MB line: %s", err.msg);
    free(t);

    static const struct {
        const char *text, *msg;
        symd_status st;
    } fatal[] = {
        {"MODULE mac x86_64 XYZ t\n", "line 1: MODULE debug id 'XYZ'", SYMD_E_CORRUPT},
        {"MODULE mac x86_64 67E9247C814E392BA027DBDE6748FCBF t\n", "debug id", SYMD_E_CORRUPT},
        {"MODULE mac x86_64\n", "line 1: MODULE record needs", SYMD_E_CORRUPT},
        {"FUNC 0 1 0 f\n", "line 1: not a MODULE record", SYMD_E_CORRUPT},
        {HDR "FUNC 0 1 0 f\nMODULE mac x86_64 67E9247C814E392BA027DBDE6748FCBF0 t\n",
         "line 3: MODULE must be the first", SYMD_E_CORRUPT},
    };
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        CHECK(parse_text(fatal[i].text, &s, &err) == fatal[i].st && strstr(err.msg, fatal[i].msg),
              "fatal %zu: %s", i, err.msg);
    static const char nul[] = HDR "FUNC 0 1 0 f\0x\n";
    memset(&err, 0, sizeof err);
    CHECK(bp_sym_parse((const uint8_t *)nul, sizeof nul - 1, true, &s, &err) == SYMD_E_CORRUPT &&
              strstr(err.msg, "line 2 holds a NUL"),
          "NUL: %s", err.msg);

    /* FUNC out of order, overlapping, a line record outside its FUNC, sizes
     * of 2^32 and more: warnings with their first line, a sorted result. */
    const char *warned = HDR
        "FILE 0 a.c\n"                      /* 2 */
        "FUNC 300 10 0 third\n"             /* 3 */
        "300 10 3 0\n"                      /* 4 */
        "FUNC 100 180 0 first\n"            /* 5: out of order, runs into 200 */
        "f0 20 1 0\n"                       /* 6: starts before its FUNC */
        "180 100 2 0\n"                     /* 7: ends past it (cut at 200 later) */
        "FUNC 200 10 0 second\n"            /* 8 */
        "FUNC fffffff0 ffffffff 0 wraps\n"  /* 9: past 4 GiB */
        "FUNC 0 80000000 0 huge\n"          /* 10: 2 GiB */
        "0 ffffffffffff 1 0\n"              /* 11: line of no FUNC (the last did not read) */
        "FUNC 200 10 0 again\n"             /* 12: same address, no 'm' */
        "210 1 1 9\n"                       /* 13: outside its FUNC */
        "FUNC zz 1 0 bad\n"                 /* 14 */
        "PUBLIC 1ffffffff 0 far\n"          /* 15 */
        "BOGUS record\n";                   /* 16 */
    CHECK(parse_text(warned, &s, &err) == SYMD_OK, "%s", err.msg);
    if (err.kind == SYMD_OK) {
        CHECK(s.nfuncs == 3 && s.funcs[0].addr == 0x100 && s.funcs[1].addr == 0x200 &&
                  s.funcs[2].addr == 0x300,
              "FUNCs not sorted: %zu", s.nfuncs);
        CHECK(s.funcs[0].size == 0x100 && strcmp(bp_str(&s, s.funcs[1].name), "second") == 0,
              "first/second: %x %s", s.funcs[0].size, bp_str(&s, s.funcs[1].name));
        const bp_line *l = &s.lines[s.funcs[0].line0];
        CHECK(s.funcs[0].nlines == 2 && l[0].addr == 0x100 && l[0].size == 0x10 &&
                  l[1].addr == 0x180 && l[1].size == 0x80,
              "lines of 'first' not clipped: %u", s.funcs[0].nlines);
        static const struct {
            bp_warning_kind k;
            uint64_t line;
        } want[] = {{BP_W_FUNC_ORDER, 5}, {BP_W_LINE_OUTSIDE, 6}, {BP_W_RANGE, 9},
                    {BP_W_FUNC_SAME, 12}, {BP_W_MALFORMED, 14}, {BP_W_UNKNOWN, 16},
                    {BP_W_LINE_ORPHAN, 11}, {BP_W_FUNC_OVERLAP, 8}};
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            CHECK(s.warn[want[i].k].count && s.warn[want[i].k].first_line == want[i].line,
                  "warning %s: %llu first at %llu", bp_warning_text(want[i].k),
                  (unsigned long long)s.warn[want[i].k].count,
                  (unsigned long long)s.warn[want[i].k].first_line);
        bp_sym_free(&s);
    }

    /* 'm' FUNCs at one address are no warning; INLINE nesting that does
     * not hold, a malformed INLINE (dropped whole), CFI that does not read. */
    const char *more = HDR
        "FILE 0 a.c\n"
        "INLINE_ORIGIN 0 i\n"
        "FUNC m 100 40 0 a\n"
        "INLINE 0 5 0 0 100 10\n"
        "INLINE 1 6 0 0 120 4\n"             /* 6: inside no depth-0 range */
        "INLINE 70 6 0 0 100 4\n"            /* 7: too deep */
        "INLINE 0 5 0 0 130 4 zz 1\n"        /* 8: malformed: nothing of it kept */
        "FUNC m 100 40 0 b\n"
        "STACK CFI 10 .cfa: $rsp 8 +\n"      /* 10: before any INIT */
        "STACK CFI INIT 100 40 .cfa: $rsp 8 + ^ .ra: .cfa -8 + ^ $rbx: $rbx $rbp: $rax 8 +\n"
        "STACK CFI 200 .cfa: $rsp 16 +\n"    /* 12: outside its INIT */
        "STACK CFI 104 .cfa: $rsp 16 + $xyz: .cfa -8 + ^\n"
        "STACK WIN 4 1000 10 0 0 0 0 0 0 1\n";
    CHECK(parse_text(more, &s, &err) == SYMD_OK, "%s", err.msg);
    if (err.kind == SYMD_OK) {
        CHECK(s.nfuncs == 1 && !s.warn[BP_W_FUNC_SAME].count &&
                  strcmp(bp_str(&s, s.funcs[0].name), "a") == 0,
              "'m' FUNCs: %zu, %llu", s.nfuncs, (unsigned long long)s.warn[BP_W_FUNC_SAME].count);
        CHECK(s.ninlines == 1 && s.warn[BP_W_INLINE_NEST].count == 2 &&
                  s.warn[BP_W_INLINE_NEST].first_line == 6 &&
                  s.warn[BP_W_MALFORMED].first_line == 8,
              "inlines: %zu, nest %llu at %llu", s.ninlines,
              (unsigned long long)s.warn[BP_W_INLINE_NEST].count,
              (unsigned long long)s.warn[BP_W_INLINE_NEST].first_line);
        CHECK(s.warn[BP_W_CFI_ORPHAN].count == 2 && s.warn[BP_W_CFI_ORPHAN].first_line == 10 &&
                  s.warn[BP_W_CFI_EXPR].count == 3 && s.stack_win == 1,
              "CFI warnings: orphan %llu, expr %llu", (unsigned long long)s.warn[BP_W_CFI_ORPHAN].count,
              (unsigned long long)s.warn[BP_W_CFI_EXPR].count);
        /* the INIT's CFA does not read (a dereference): no CFA; its rules
         * are kept, the unreadable one as unsupported; the next row has a
         * CFA again */
        CHECK(s.cfi.nentries == 1 && s.cfi.nrows == 2 && s.cfi.rows[0].cfa_reg == BP_REG_NONE &&
                  s.cfi.rows[1].cfa_reg == 7 && s.cfi.rows[1].cfa_off == 16,
              "CFI rows: %zu", s.cfi.nrows);
        const bp_cfi_row *r0 = &s.cfi.rows[0];
        int kinds = 0;
        for (uint32_t k = r0->rule0; k < r0->rule0 + r0->nrules; k++) {
            const bp_cfi_rule *u = &s.cfi.rules[k];
            kinds |= (u->reg == BP_REG_RA && u->kind == BP_RULE_AT_CFA && u->off == -8) << 0;
            kinds |= (u->reg == 3 && u->kind == BP_RULE_SAME) << 1;
            kinds |= (u->reg == 6 && u->kind == BP_RULE_UNSUPPORTED) << 2;
        }
        CHECK(kinds == 7, "INIT rules read as %d", kinds);
        bp_sym_free(&s);
    }

    /* What an upload refuses beyond the reader: another OS or arch, no UUID. */
    static const struct {
        const char *text, *msg;
        symd_status st;
    } refused[] = {
        {"MODULE Linux x86_64 67E9247C814E392BA027DBDE6748FCBF0 t\n", "os 'Linux'",
         SYMD_E_UNSUPPORTED},
        {"MODULE mac armv7 67E9247C814E392BA027DBDE6748FCBF0 t\n", "arch 'armv7'",
         SYMD_E_UNSUPPORTED},
        {"MODULE mac arm64 000000000000000000000000000000000 t\n", "all zeros", SYMD_E_NO_UUID},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        bp_image im;
        memset(&err, 0, sizeof err);
        CHECK(bp_image_build((const uint8_t *)refused[i].text, strlen(refused[i].text), 1 << 20,
                             &im, &err) == refused[i].st &&
                  strstr(err.msg, refused[i].msg),
              "refused %zu: %s", i, err.msg);
    }
    /* The warned file still builds: the symbol index answers for the later
     * FUNC where two overlapped. */
    bp_image im;
    memset(&err, 0, sizeof err);
    CHECK(bp_image_build((const uint8_t *)warned, strlen(warned), 1 << 20, &im, &err) == SYMD_OK,
          "%s", err.msg);
    if (err.kind == SYMD_OK) {
        symindex si;
        symlook look;
        CHECK(symindex_open(im.symidx, im.symidx_len, &si, &err) == SYMD_OK, "%s", err.msg);
        symindex_lookup(&si, 0x204, &look);
        CHECK(look.status == SYMLOOK_SYMBOL && strcmp(look.name, "second") == 0,
              "0x204: %s", look.name ? look.name : "none");
        CHECK(im.nwarnings >= 6 && strstr(im.warnings[0], "first at line"), "warnings: %zu %s",
              im.nwarnings, im.warnings[0]);
        bp_image_free(&im);
    }
}

/* The same records in another order give the same blobs: FUNC blocks of
 * crash.inlines.sym reversed build byte-identical indexes (with a warning
 * that they were out of order). */
TEST(breakpad_order_does_not_matter)
{
    size_t len;
    uint8_t *buf = md_file("symbolicator-macos/crash.inlines.sym", &len);
    if (!buf)
        return;
    /* head (before the first FUNC or PUBLIC), blocks (a FUNC or PUBLIC line
     * and the records after it; mozilla's file interleaves the two by
     * address), reversed */
    const char *text = (const char *)buf, *end = text + len;
    size_t nblocks = 0, cap = 256;
    const char **starts = malloc(cap * sizeof *starts);
    for (const char *p = text; p < end;) {
        if (strncmp(p, "FUNC ", 5) == 0 || strncmp(p, "PUBLIC ", 7) == 0) {
            if (nblocks == cap)
                starts = realloc(starts, (cap *= 2) * sizeof *starts);
            starts[nblocks++] = p;
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    char *rev = malloc(len + 1), *o = rev;
    const char *first = nblocks ? starts[0] : end;
    memcpy(o, text, (size_t)(first - text));
    o += first - text;
    for (size_t i = nblocks; i-- > 0;) {
        const char *e = i + 1 < nblocks ? starts[i + 1] : end;
        memcpy(o, starts[i], (size_t)(e - starts[i]));
        o += e - starts[i];
    }
    bp_image a, b;
    symd_err err = {0};
    CHECK(bp_image_build(buf, len, 1 << 26, &a, &err) == SYMD_OK, "%s", err.msg);
    CHECK(bp_image_build((uint8_t *)rev, (size_t)(o - rev), 1 << 26, &b, &err) == SYMD_OK, "%s",
          err.msg);
    CHECK(nblocks > 100 && a.symidx_len == b.symidx_len &&
              memcmp(a.symidx, b.symidx, a.symidx_len) == 0,
          "symbol indexes differ (%zu blocks)", nblocks);
    CHECK(a.lines && b.lines && a.lines_len == b.lines_len &&
              memcmp(a.lines, b.lines, a.lines_len) == 0,
          "line indexes differ: %zu vs %zu bytes", a.lines_len, b.lines_len);
    CHECK(a.nwarnings == 0 && b.nwarnings == 1 && strstr(b.warnings[0], "out of address order"),
          "warnings %zu %zu", a.nwarnings, b.nwarnings);
    bp_image_free(&a);
    bp_image_free(&b);
    free(rev);
    free(starts);
    free(buf);
}

/* ---- symd dump-syms against dump_syms ------------------------------------- */

/* a/b/../c → a/c, a/./b → a/b (mozilla's dump_syms writes paths so). */
static void norm_path(const char *in, char *out, size_t cap)
{
    const char *seg[256];
    size_t segl[256], n = 0;
    bool abs = in[0] == '/';
    for (const char *p = in; *p;) {
        while (*p == '/')
            p++;
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 2 && p[0] == '.' && p[1] == '.' && n && !(segl[n - 1] == 2 && seg[n - 1][0] == '.'))
            n--;
        else if (!(l == 1 && p[0] == '.') && l && n < 256)
            seg[n] = p, segl[n++] = l;
        p += l;
    }
    size_t o = 0;
    if (abs && o + 1 < cap)
        out[o++] = '/';
    for (size_t i = 0; i < n && o + segl[i] + 1 < cap; i++) {
        if (i)
            out[o++] = '/';
        memcpy(out + o, seg[i], segl[i]);
        o += segl[i];
    }
    out[o] = 0;
}

typedef enum { NAME_SAME, NAME_OMITTED, NAME_RETURN_TYPE, NAME_OTHER, NAME_KINDS } name_cmp;
static const char *const name_cmp_text[NAME_KINDS] = {"same", "'<name omitted>' there",
                                                      "same but our return type", "other"};

/* How our display name compares with another tool's: demanglers differ in
 * showing a template function's return type (libiberty and LLVM do,
 * mozilla's dump_syms does not), and Breakpad leaves some names out. */
static name_cmp compare_names(const char *ours, const char *theirs)
{
    if (!ours || !theirs)
        return ours == theirs ? NAME_SAME : NAME_OTHER;
    if (strcmp(ours, theirs) == 0)
        return NAME_SAME;
    if (strcmp(theirs, "<name omitted>") == 0)
        return NAME_OMITTED;
    size_t lo = strlen(ours), lt = strlen(theirs);
    if (lo > lt + 1 && strcmp(ours + lo - lt, theirs) == 0 && ours[lo - lt - 1] == ' ')
        return NAME_RETURN_TYPE;
    return NAME_OTHER;
}

/* dump-syms of crash + crash.dSYM, in process; NULL when the files are not there. */
static char *dump_crash(size_t *len, bp_dump_stats *stats)
{
    size_t blen, dlen;
    uint8_t *bin = md_file("symbolicator-macos/crash", &blen);
    uint8_t *dsym = bin ? md_file("symbolicator-macos/crash.dSYM/Contents/Resources/DWARF/crash",
                                  &dlen)
                        : NULL;
    char *text = NULL;
    if (bin && dsym) {
        FILE *f = open_memstream(&text, len);
        bp_dump_opts o = {NULL, "crash", NULL, NULL};
        symd_err err = {0};
        CHECK(bp_dump_syms(bin, blen, dsym, dlen, &o, f, stats, &err) == SYMD_OK, "dump: %s",
              err.msg);
        fclose(f);
    }
    free(bin);
    free(dsym);
    return text;
}

/* A FUNC's line records merged where one continues the one before at the
 * same line of the same file (dump_syms tools split rows differently by
 * column), as (addr, size, line, path). */
typedef struct {
    uint32_t addr, size, line;
    const char *file;
} mline;

static size_t merged_lines(const bp_sym *s, const bp_func *f, mline *out)
{
    size_t n = 0;
    for (uint32_t i = 0; i < f->nlines; i++) {
        const bp_line *l = &s->lines[f->line0 + i];
        const char *file = l->file ? bp_str(s, s->files[l->file - 1].path) : "";
        if (n && out[n - 1].addr + out[n - 1].size == l->addr && out[n - 1].line == l->line &&
            strcmp(out[n - 1].file, file) == 0) {
            out[n - 1].size += l->size;
            continue;
        }
        out[n++] = (mline){l->addr, l->size, l->line, file};
    }
    return n;
}

/* The inline chain at addr inside FUNC f, outermost first: the node of each
 * depth that holds it (the last such, as lookups take it). */
static size_t chain_at(const bp_sym *s, const bp_func *f, uint32_t addr, const bp_inline **out)
{
    size_t depth = 0;
    uint32_t idx[BP_SYM_MAX_INLINE_DEPTH];
    for (uint32_t i = f->inline0; i < f->inline0 + f->ninlines; i++) {
        const bp_inline *in = &s->inlines[i];
        if (in->depth > depth || (in->depth && idx[in->depth - 1] != in->parent))
            continue;
        bool holds = false;
        for (uint32_t k = 0; k < in->nranges && !holds; k++)
            holds = addr - s->ranges[in->range0 + k].addr < s->ranges[in->range0 + k].size;
        if (!holds)
            continue;
        idx[in->depth] = i;
        out[in->depth] = in;
        depth = in->depth + 1;
    }
    return depth;
}

/* symd dump-syms crash crash.dSYM against Breakpad's crash.sym (MODULE,
 * FUNC ranges, line records, files, names) and mozilla's crash.inlines.sym
 * (the inline chain at every address). */
TEST(breakpad_dump_syms_matches_dump_syms)
{
    size_t len, blen, mlen;
    bp_dump_stats stats;
    char *ours = dump_crash(&len, &stats);
    uint8_t *bp = ours ? md_file("symbolicator-macos/crash.sym", &blen) : NULL;
    uint8_t *moz = bp ? md_file("symbolicator-macos/crash.inlines.sym", &mlen) : NULL;
    if (!ours || !bp || !moz) {
        free(ours);
        free(bp);
        return;
    }
    bp_sym o, b, m;
    symd_err err = {0};
    CHECK(bp_sym_parse((uint8_t *)ours, len, true, &o, &err) == SYMD_OK, "ours: %s", err.msg);
    CHECK(bp_sym_parse(bp, blen, true, &b, &err) == SYMD_OK, "crash.sym: %s", err.msg);
    CHECK(bp_sym_parse(moz, mlen, true, &m, &err) == SYMD_OK, "crash.inlines.sym: %s", err.msg);
    CHECK(total_warnings(&o) == 0, "our .sym reads with %zu warnings", total_warnings(&o));
    CHECK(strcmp(o.os, b.os) == 0 && strcmp(o.arch, b.arch) == 0 &&
              strcmp(o.debug_id, b.debug_id) == 0 &&
              strcmp(bp_str(&o, o.module_name), bp_str(&b, b.module_name)) == 0,
          "MODULE %s %s %s %s", o.os, o.arch, o.debug_id, bp_str(&o, o.module_name));
    CHECK(strcmp(o.code_id, m.code_id) == 0, "INFO CODE_ID %s, mozilla's %s", o.code_id, m.code_id);

    /* FUNC records: the same ranges; names compared by kind of difference */
    CHECK(o.nfuncs == b.nfuncs && o.nfuncs == m.nfuncs, "FUNCs: %zu, Breakpad %zu, mozilla %zu",
          o.nfuncs, b.nfuncs, m.nfuncs);
    size_t ranges_same = 0, lines_same = 0, nl_ours = 0, nl_bp = 0;
    size_t names_bp[NAME_KINDS] = {0}, names_moz[NAME_KINDS] = {0};
    mline *lo = malloc((o.nlines + 1) * sizeof *lo), *lb = malloc((b.nlines + 1) * sizeof *lb);
    for (size_t i = 0; i < o.nfuncs && i < b.nfuncs && i < m.nfuncs; i++) {
        const bp_func *fo = &o.funcs[i], *fb = &b.funcs[i], *fm = &m.funcs[i];
        bool same = fo->addr == fb->addr && fo->size == fb->size && fo->addr == fm->addr &&
                    fo->size == fm->size;
        ranges_same += same;
        CHECK(same, "FUNC %x+%x: Breakpad %x+%x, mozilla %x+%x", fo->addr, fo->size, fb->addr,
              fb->size, fm->addr, fm->size);
        names_bp[compare_names(bp_str(&o, fo->name), bp_str(&b, fb->name))]++;
        name_cmp nm = compare_names(bp_str(&o, fo->name), bp_str(&m, fm->name));
        names_moz[nm]++;
        CHECK(nm == NAME_SAME || nm == NAME_RETURN_TYPE, "FUNC %x: %s, mozilla %s", fo->addr,
              bp_str(&o, fo->name), bp_str(&m, fm->name));
        size_t no = merged_lines(&o, fo, lo), nb = merged_lines(&b, fb, lb);
        nl_ours += no;
        nl_bp += nb;
        bool ls = no == nb;
        for (size_t k = 0; ls && k < no; k++)
            ls = lo[k].addr == lb[k].addr && lo[k].size == lb[k].size &&
                 lo[k].line == lb[k].line && strcmp(lo[k].file, lb[k].file) == 0;
        lines_same += ls;
        CHECK(ls, "FUNC %x: line records differ (%zu vs %zu)", fo->addr, no, nb);
    }
    /* FILE: the paths line records use are Breakpad's; ours add the call
     * files of inlined calls (crash.sym has no INLINE records) */
    size_t used_o = 0, used_b = 0, missing = 0;
    for (size_t i = 0; i < b.nfiles; i++) {
        bool used = false, found = false;
        for (size_t k = 0; k < b.nlines && !used; k++)
            used = b.lines[k].file == i + 1;
        used_b += used;
        for (size_t k = 0; used && k < o.nfiles && !found; k++)
            found = strcmp(bp_str(&o, o.files[k].path), bp_str(&b, b.files[i].path)) == 0;
        missing += used && !found;
    }
    for (size_t i = 0; i < o.nfiles; i++) {
        bool used = false;
        for (size_t k = 0; k < o.nlines && !used; k++)
            used = o.lines[k].file == i + 1;
        used_o += used;
    }
    CHECK(missing == 0 && used_o == used_b, "files of line records: ours %zu, Breakpad's %zu, "
                                            "%zu of those missing", used_o, used_b, missing);
    /* PUBLIC: ours (code symbols no FUNC covers) are among Breakpad's, which
     * also lists data symbols (_mh_execute_header, GCC_except_table*) */
    size_t pub_found = 0;
    for (size_t i = 0; i < o.npublics; i++)
        for (size_t k = 0; k < b.npublics; k++)
            if (o.publics[i].addr == b.publics[k].addr &&
                strcmp(bp_str(&o, o.publics[i].name), bp_str(&b, b.publics[k].name)) == 0) {
                pub_found++;
                break;
            }
    CHECK(pub_found == o.npublics, "%zu of our %zu PUBLIC are Breakpad's", pub_found, o.npublics);

    /* INLINE: at every address of every FUNC, the chain of inlined calls
     * (call file, call line, name) against mozilla's */
    size_t addrs = 0, chains_same = 0, names_inl[NAME_KINDS] = {0};
    for (size_t i = 0; i < o.nfuncs && i < m.nfuncs; i++) {
        const bp_func *fo = &o.funcs[i], *fm = &m.funcs[i];
        for (uint32_t a = fo->addr; a < fo->addr + fo->size; a++) {
            const bp_inline *co[BP_SYM_MAX_INLINE_DEPTH], *cm[BP_SYM_MAX_INLINE_DEPTH];
            size_t no = chain_at(&o, fo, a, co), nm = chain_at(&m, fm, a, cm);
            bool same = no == nm;
            for (size_t d = 0; same && d < no; d++) {
                char po[1024], pm[1024];
                norm_path(co[d]->call_file ? bp_str(&o, o.files[co[d]->call_file - 1].path) : "",
                          po, sizeof po);
                norm_path(cm[d]->call_file ? bp_str(&m, m.files[cm[d]->call_file - 1].path) : "",
                          pm, sizeof pm);
                name_cmp nc = compare_names(
                    co[d]->origin ? bp_str(&o, o.origins[co[d]->origin - 1].name) : NULL,
                    cm[d]->origin ? bp_str(&m, m.origins[cm[d]->origin - 1].name) : NULL);
                names_inl[nc]++;
                /* names are compared apart: demanglers differ in style
                 * beyond return types ("0u" for "(unsigned int)0") */
                same = co[d]->call_line == cm[d]->call_line && strcmp(po, pm) == 0;
            }
            addrs++;
            chains_same += same;
        }
    }
    CHECK(chains_same == addrs, "inline chains: %zu of %zu addresses as mozilla's (depth, call "
                                "file and line)", chains_same, addrs);
    printf("    dump-syms vs Breakpad crash.sym: MODULE equal; %zu/%zu FUNC ranges equal; line "
           "records of %zu/%zu FUNCs equal (%zu vs %zu records merged by line); %zu files used "
           "by lines (ours %zu FILE records with inline call files, Breakpad %zu); PUBLIC ours "
           "%zu (all Breakpad's), Breakpad %zu (it adds data symbols)\n",
           ranges_same, o.nfuncs, lines_same, o.nfuncs, nl_ours, nl_bp, used_b, o.nfiles,
           b.nfiles, o.npublics, b.npublics);
    printf("    FUNC names vs Breakpad:");
    for (int k = 0; k < NAME_KINDS; k++)
        printf(" %s %zu;", name_cmp_text[k], names_bp[k]);
    printf("\n    FUNC names vs mozilla:");
    for (int k = 0; k < NAME_KINDS; k++)
        printf(" %s %zu;", name_cmp_text[k], names_moz[k]);
    printf("\n    inline chains vs mozilla crash.inlines.sym: %zu/%zu addresses equal in depth, "
           "call file (normalized) and call line; names of those levels: same %zu, same but our "
           "return type %zu, other demangler style %zu; ours "
           "%zu INLINE records in preorder, mozilla %zu merged\n",
           chains_same, addrs, names_inl[NAME_SAME], names_inl[NAME_RETURN_TYPE],
           names_inl[NAME_OTHER], stats.inlines, count_lines(moz, mlen, "INLINE "));
    free(lo);
    free(lb);
    bp_sym_free(&o);
    bp_sym_free(&b);
    bp_sym_free(&m);
    free(ours);
    free(bp);
    free(moz);
}

/* ---- through servers: a .sym upload answers like the binary + dSYM -------- */

#define LOAD 0x10a400000ull /* where the requests say the image was loaded */

/* Uploads the file of ../shared/minidumps at rel raw; the answer's status. */
static int upload_md(int port, const char *rel, const char *name, json_t **answer)
{
    size_t len;
    uint8_t *buf = md_file(rel, &len);
    if (answer)
        *answer = NULL;
    if (!buf)
        return 0;
    char url[128];
    snprintf(url, sizeof url, "/v1/images?name=%s", name);
    int status;
    json_t *j = http_json(port, "POST", url, NULL, buf, len, &status, NULL);
    free(buf);
    if (answer)
        *answer = j;
    else
        json_decref(j);
    return status;
}

/* One request frame as answered: its levels, innermost first, the last the
 * function holding the address. Strings point into the answer. */
typedef struct {
    const char *sym, *file, *status;
    json_int_t offset, line;
    bool has_offset;
} level;
typedef struct {
    size_t n;
    level l[LINEINDEX_MAX_DEPTH + 1];
} frame_ans;

/* Symbolicates LOAD + rel for every rel (exact addresses: adjust none)
 * against port; fills out[i] (levels point into *keep, the caller's). */
static bool symbolicate_rel(int port, const uint32_t *rel, size_t n, frame_ans *out, json_t **keep)
{
    json_t *frames = json_array();
    for (size_t i = 0; i < n; i++) {
        char a[32];
        snprintf(a, sizeof a, "0x%llx", (unsigned long long)(LOAD + rel[i]));
        json_array_append_new(frames, json_pack("{s:s}", "address", a));
    }
    char load[32];
    snprintf(load, sizeof load, "0x%llx", LOAD);
    json_t *req = json_pack("{s:s, s:[{s:s, s:s, s:s}], s:[{s:i, s:o}]}", "adjust", "none",
                            "images", "uuid", CRASH_UUID, "arch", "x86_64", "load_address", load,
                            "threads", "id", 0, "frames", frames);
    char *body = json_dumps(req, JSON_COMPACT);
    int status;
    json_t *j = http_json(port, "POST", "/v1/symbolicate", "Content-Type: application/json\r\n",
                          body, strlen(body), &status, NULL);
    free(body);
    json_decref(req);
    CHECK(status == 200, "symbolicate: %d", status);
    json_t *levels = json_object_get(json_array_get(json_object_get(j, "threads"), 0), "frames");
    size_t k = 0, nl = json_array_size(levels);
    for (size_t i = 0; i < n; i++) {
        frame_ans *f = &out[i];
        f->n = 0;
        for (; k < nl; k++) {
            json_t *v = json_array_get(levels, k);
            level *l = &f->l[f->n < LINEINDEX_MAX_DEPTH ? f->n++ : f->n];
            l->sym = json_string_value(json_object_get(v, "symbol"));
            l->file = json_string_value(json_object_get(v, "file"));
            l->status = json_string_value(json_object_get(v, "status"));
            l->line = json_integer_value(json_object_get(v, "line"));
            l->has_offset = json_object_get(v, "offset") != NULL;
            l->offset = json_integer_value(json_object_get(v, "offset"));
            if (!json_is_true(json_object_get(v, "inlined"))) {
                k++;
                break;
            }
        }
    }
    CHECK(k == nl, "%zu levels answered, %zu read", nl, k);
    *keep = j;
    return status == 200 && k == nl;
}

/* llvm-symbolizer --inlining on the dSYM's DWARF file at CRASH_TEXT + rel:
 * one JSON object per address (NULL when it is not installed). */
static json_t **llvm_symbolize(const uint32_t *rel, size_t n)
{
    if (system("llvm-symbolizer --version > /dev/null 2>&1") != 0)
        return NULL;
    char in[1024], cmd[4096];
    snprintf(in, sizeof in, "%s/bp-addrs.txt", test_tmpdir());
    FILE *f = fopen(in, "w");
    if (!f)
        return NULL;
    for (size_t i = 0; i < n; i++)
        fprintf(f, "0x%llx\n", (unsigned long long)(CRASH_TEXT + rel[i]));
    fclose(f);
    snprintf(cmd, sizeof cmd, "llvm-symbolizer --inlining --output-style=JSON --obj='%s' < '%s'",
             md_path("symbolicator-macos/crash.dSYM/Contents/Resources/DWARF/crash"), in);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    json_t **out = calloc(n, sizeof *out);
    char *line = NULL;
    size_t cap = 0, i = 0;
    while (i < n && getline(&line, &cap, p) > 0) {
        json_error_t e;
        out[i++] = json_loads(line, 0, &e);
    }
    free(line);
    CHECK(pclose(p) == 0 && i == n, "llvm-symbolizer answered %zu of %zu addresses", i, n);
    return out;
}

static bool same_str(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

static bool same_path(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    char x[1024], y[1024];
    norm_path(a, x, sizeof x);
    norm_path(b, y, sizeof y);
    return strcmp(x, y) == 0;
}

static double pct(size_t a, size_t n)
{
    return n ? 100.0 * (double)a / (double)n : 100.0;
}

/* The addresses compared: every FUNC start and line record start of
 * crash.sym, and every 4th byte inside its FUNCs. */
static uint32_t *sample_addresses(const bp_sym *s, size_t *n)
{
    size_t cap = s->nfuncs + s->nlines;
    for (size_t i = 0; i < s->nfuncs; i++)
        cap += s->funcs[i].size / 4 + 1;
    uint32_t *v = malloc(cap * sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < s->nfuncs; i++) {
        const bp_func *f = &s->funcs[i];
        v[k++] = f->addr;
        for (uint32_t j = 0; j < f->nlines; j++)
            if (s->lines[f->line0 + j].addr != f->addr)
                v[k++] = s->lines[f->line0 + j].addr;
        for (uint32_t a = f->addr + 2; a < f->addr + f->size; a += 4)
            v[k++] = a;
    }
    *n = k;
    return v;
}

/* Three servers: crash.sym uploaded to one, crash.inlines.sym to another,
 * the binary crash and its dSYM to a third; every sampled address answered
 * by each and compared (function, offset, file, line; inlined levels for
 * the .inlines.sym), and with llvm-symbolizer on the binary + dSYM. */
TEST(e2e_breakpad_sym_answers_like_dsym)
{
    size_t len;
    uint8_t *buf = md_file("symbolicator-macos/crash.sym", &len);
    if (!buf)
        return;
    bp_sym s;
    symd_err err = {0};
    CHECK(bp_sym_parse(buf, len, true, &s, &err) == SYMD_OK, "%s", err.msg);
    free(buf);
    size_t n;
    uint32_t *rel = sample_addresses(&s, &n);
    bp_sym_free(&s);

    server_proc sa, sc, sb;
    char da[1024], dc[1024], db[1024];
    snprintf(da, sizeof da, "%s/bp-sym.db", test_tmpdir());
    snprintf(dc, sizeof dc, "%s/bp-inlines.db", test_tmpdir());
    snprintf(db, sizeof db, "%s/bp-dsym.db", test_tmpdir());
    bool up = server_start(&sa, da, NULL);
    up = server_start(&sc, dc, NULL) && up;
    up = server_start(&sb, db, NULL) && up;
    CHECK(up, "servers did not start");
    json_t *ans;
    CHECK(upload_md(sa.port, "symbolicator-macos/crash.sym", "crash.sym", &ans) == 201,
          "crash.sym upload");
    json_t *im = json_array_get(json_object_get(ans, "images"), 0);
    CHECK(same_str(json_string_value(json_object_get(im, "kind")), "breakpad") &&
              same_str(json_string_value(json_object_get(im, "uuid")), CRASH_UUID) &&
              same_str(json_string_value(json_object_get(im, "name")), "crash") &&
              json_is_true(json_object_get(im, "debug_info")) &&
              !json_object_get(im, "warnings"),
          "crash.sym stored as %s", json_dumps(im, JSON_COMPACT));
    json_decref(ans);
    CHECK(upload_md(sc.port, "symbolicator-macos/crash.inlines.sym", "x", NULL) == 201,
          "crash.inlines.sym upload");
    CHECK(upload_md(sb.port, "symbolicator-macos/crash", "crash", NULL) == 201, "crash upload");
    CHECK(upload_md(sb.port, "symbolicator-macos/crash.dSYM/Contents/Resources/DWARF/crash",
                    "crash", NULL) == 201,
          "dSYM upload");
    /* the CFI blob is stored beside the indexes */
    CHECK(db_query_int(da, "SELECT count(*) FROM image_data WHERE kind = 'breakpad_cfi'") == 1,
          "no breakpad_cfi blob stored");

    frame_ans *A = calloc(n, sizeof *A), *B = calloc(n, sizeof *B), *C = calloc(n, sizeof *C);
    json_t *ka = NULL, *kb = NULL, *kc = NULL;
    if (up && symbolicate_rel(sa.port, rel, n, A, &ka) && symbolicate_rel(sb.port, rel, n, B, &kb) &&
        symbolicate_rel(sc.port, rel, n, C, &kc)) {
        /* crash.sym (no inlines) against the dSYM: the FUNC names the
         * function the symbol table names; its line records are the line
         * table's, the dSYM's innermost level */
        size_t names[NAME_KINDS] = {0}, off = 0, place = 0, both_place = 0;
        size_t cn[NAME_KINDS] = {0}, chain = 0, levels = 0, levels_same = 0;
        for (size_t i = 0; i < n; i++) {
            const level *ao = &A[i].l[A[i].n - 1], *bo = &B[i].l[B[i].n - 1], *bi = &B[i].l[0];
            names[compare_names(bo->sym, ao->sym)]++;
            off += ao->has_offset == bo->has_offset && ao->offset == bo->offset;
            both_place += bi->file != NULL;
            place += bi->file && same_str(ao->file, bi->file) && ao->line == bi->line;
            /* crash.inlines.sym against the dSYM: every level */
            bool same = C[i].n == B[i].n;
            chain += same;
            for (size_t k = 0; same && k < C[i].n; k++) {
                const level *x = &C[i].l[k], *y = &B[i].l[k];
                name_cmp nc = compare_names(y->sym, x->sym);
                cn[nc]++;
                levels++;
                levels_same += same_path(x->file, y->file) && x->line == y->line;
            }
        }
        CHECK(off == n, "offsets: %zu of %zu as the dSYM's", off, n);
        CHECK(place == both_place, "file:line: %zu of %zu as the dSYM's", place, both_place);
        CHECK(chain == n && levels_same == levels, "inline chains: %zu of %zu, levels %zu of %zu",
              chain, n, levels_same, levels);
        printf("    %zu addresses, crash.sym vs crash + dSYM: offset %.2f%%, file:line %.2f%% "
               "(%zu/%zu), function name same %.2f%% (Breakpad '<name omitted>' %zu, other %zu)\n",
               n, pct(off, n), pct(place, both_place), place, both_place, pct(names[NAME_SAME], n),
               names[NAME_OMITTED], names[NAME_OTHER] + names[NAME_RETURN_TYPE]);
        printf("    crash.inlines.sym vs crash + dSYM: chains of the same depth %.2f%%, levels' "
               "file:line %.2f%% (%zu), names same %.2f%%, differing only in the return type "
               "%.2f%%, other %zu\n",
               pct(chain, n), pct(levels_same, levels), levels, pct(cn[NAME_SAME], levels),
               pct(cn[NAME_RETURN_TYPE], levels), cn[NAME_OTHER] + cn[NAME_OMITTED]);

        /* the same against llvm-symbolizer on the binary + dSYM */
        json_t **L = llvm_symbolize(rel, n);
        if (L) {
            size_t lname[NAME_KINDS] = {0}, lplace = 0, lboth = 0, lchain = 0, llev = 0,
                   llev_same = 0, lcn[NAME_KINDS] = {0};
            for (size_t i = 0; i < n; i++) {
                json_t *syms = json_object_get(L[i], "Symbol");
                size_t m = json_array_size(syms);
                if (!m)
                    continue;
                json_t *inner = json_array_get(syms, 0), *outer = json_array_get(syms, m - 1);
                const char *ifile = json_string_value(json_object_get(inner, "FileName"));
                json_int_t iline = json_integer_value(json_object_get(inner, "Line"));
                const level *ao = &A[i].l[A[i].n - 1];
                lname[compare_names(json_string_value(json_object_get(outer, "FunctionName")),
                                    ao->sym)]++;
                bool has = ifile && *ifile;
                lboth += has;
                lplace += has && same_str(ao->file, ifile) && ao->line == iline;
                bool same = C[i].n == m;
                lchain += same;
                for (size_t k = 0; same && k < m; k++) {
                    json_t *y = json_array_get(syms, k);
                    const char *yf = json_string_value(json_object_get(y, "FileName"));
                    const level *x = &C[i].l[k];
                    lcn[compare_names(json_string_value(json_object_get(y, "FunctionName")),
                                      x->sym)]++;
                    llev++;
                    llev_same += (yf && *yf ? same_path(x->file, yf) : !x->file) &&
                                 (!x->file || x->line == json_integer_value(json_object_get(y, "Line")));
                }
            }
            CHECK(lplace == lboth, "crash.sym file:line: %zu of %zu as llvm-symbolizer's", lplace,
                  lboth);
            CHECK(lchain == n && llev_same == llev,
                  "crash.inlines.sym chains: %zu of %zu as llvm-symbolizer's, levels %zu of %zu",
                  lchain, n, llev_same, llev);
            printf("    vs llvm-symbolizer --inlining on crash + dSYM: crash.sym file:line "
                   "%.2f%% (%zu), function name same %.2f%% ('<name omitted>' %zu, return type "
                   "%zu, other %zu); crash.inlines.sym chains %.2f%%, levels' file:line %.2f%% "
                   "(%zu), names same %.2f%%, return type only %.2f%%, other %zu\n",
                   pct(lplace, lboth), lboth, pct(lname[NAME_SAME], n), lname[NAME_OMITTED],
                   lname[NAME_RETURN_TYPE], lname[NAME_OTHER], pct(lchain, n), pct(llev_same, llev),
                   llev, pct(lcn[NAME_SAME], llev), pct(lcn[NAME_RETURN_TYPE], llev),
                   lcn[NAME_OTHER] + lcn[NAME_OMITTED]);
            for (size_t i = 0; i < n; i++)
                json_decref(L[i]);
            free(L);
        } else {
            printf("    llvm-symbolizer not installed: that comparison is left out\n");
        }
    }
    json_decref(ka);
    json_decref(kb);
    json_decref(kc);
    free(A);
    free(B);
    free(C);
    free(rel);
    CHECK(server_stop(&sa) && server_stop(&sb) && server_stop(&sc), "servers did not stop cleanly");
}

/* One image slice as GET /v1/images/{uuid} describes it (owned). */
static json_t *image_row(int port)
{
    int status;
    json_t *j = http_json(port, "GET", "/v1/images/" CRASH_UUID, NULL, NULL, 0, &status, NULL);
    CHECK(status == 200, "GET image: %d", status);
    json_t *row = json_incref(json_array_get(json_object_get(j, "slices"), 0));
    if (!row)
        row = json_incref(json_array_get(json_object_get(j, "images"), 0));
    json_decref(j);
    return row;
}

/* The answer's (symbol, file, line) at LOAD + rel's outer level. */
static void answer_at(int port, uint32_t rel, char *sym, char *file, json_int_t *line)
{
    frame_ans f;
    json_t *keep = NULL;
    sym[0] = file[0] = 0;
    *line = 0;
    if (symbolicate_rel(port, &rel, 1, &f, &keep) && f.n) {
        const level *l = &f.l[f.n - 1];
        snprintf(sym, 512, "%s", l->sym ? l->sym : "");
        snprintf(file, 512, "%s", l->file ? l->file : "");
        *line = l->line;
    }
    json_decref(keep);
}

/* A .sym and the binary and dSYM of the same (UUID, arch) merge in either
 * order: the Mach-O's kind, name and vmaddr win, the .sym's indexes (module
 * relative) keep answering at the right addresses, its CFI blob is kept. */
TEST(e2e_breakpad_sym_merges_with_binary)
{
    if (!minidumps_dir()) {
        test_skip("../shared/minidumps not found");
        return;
    }
    const uint32_t probe = 0x17e1; /* inside UntypedMDRVA::Allocate */
    const uint32_t omitted = 0xd26; /* a FUNC crash.sym calls "<name omitted>" */
    char want_sym[512], want_file[512], sym[512], file[512];
    json_int_t want_line, line;
    for (int order = 0; order < 2; order++) {
        server_proc sp;
        char db[1024];
        snprintf(db, sizeof db, "%s/bp-merge-%d.db", test_tmpdir(), order);
        if (!server_start(&sp, db, NULL)) {
            CHECK(0, "server did not start");
            return;
        }
        if (order == 0) {
            /* .sym first: module-relative, text_vmaddr 0 */
            CHECK(upload_md(sp.port, "symbolicator-macos/crash.sym", "crash.sym", NULL) == 201,
                  ".sym upload");
            answer_at(sp.port, probe, want_sym, want_file, &want_line);
            CHECK(*want_sym && *want_file && want_line > 0, ".sym alone: %s %s:%lld", want_sym,
                  want_file, (long long)want_line);
            answer_at(sp.port, omitted, sym, file, &line);
            CHECK(strcmp(sym, "<name omitted>") == 0, ".sym alone at 0x%x: %s", omitted, sym);
            CHECK(upload_md(sp.port, "symbolicator-macos/crash", "crash", NULL) == 201,
                  "binary after the .sym");
            CHECK(upload_md(sp.port,
                            "symbolicator-macos/crash.dSYM/Contents/Resources/DWARF/crash",
                            "crash", NULL) == 200,
                  "dSYM after: its lines are not taken over the .sym's (first wins)");
        } else {
            CHECK(upload_md(sp.port, "symbolicator-macos/crash", "crash", NULL) == 201,
                  "binary first");
            CHECK(upload_md(sp.port, "symbolicator-macos/crash.sym", "crash.sym", NULL) == 201,
                  ".sym after the binary (adds lines, CFI)");
            CHECK(upload_md(sp.port, "symbolicator-macos/crash.sym", "crash.sym", NULL) == 200,
                  "the .sym again: nothing new");
        }
        json_t *row = image_row(sp.port);
        CHECK(same_str(json_string_value(json_object_get(row, "kind")), "executable") &&
                  same_str(json_string_value(json_object_get(row, "text_vmaddr")), "0x100000000") &&
                  json_is_true(json_object_get(row, "debug_info")),
              "order %d: image %s", order, json_dumps(row, JSON_COMPACT));
        json_decref(row);
        answer_at(sp.port, probe, sym, file, &line);
        CHECK(strcmp(sym, want_sym) == 0 && strcmp(file, want_file) == 0 && line == want_line,
              "order %d: %s %s:%lld, the .sym alone said %s %s:%lld", order, sym, file,
              (long long)line, want_sym, want_file, (long long)want_line);
        CHECK(db_query_int(db, "SELECT count(*) FROM image_data WHERE kind = 'breakpad_cfi'") == 1,
              "order %d: CFI blob", order);
        /* the binary's symbol table names what Breakpad left unnamed */
        answer_at(sp.port, omitted, sym, file, &line);
        CHECK(*sym && strcmp(sym, "<name omitted>") != 0,
              "order %d at 0x%x: %s", order, omitted, sym);
        CHECK(server_stop(&sp), "server did not stop cleanly");
    }
}

/* Hostile .sym uploads: a 4xx naming what and where, or a 201 with the
 * warnings; the server keeps serving. */
TEST(e2e_breakpad_hostile_uploads)
{
    server_proc sp;
    char db[1024];
    snprintf(db, sizeof db, "%s/bp-hostile.db", test_tmpdir());
    if (!server_start(&sp, db, NULL)) {
        CHECK(0, "server did not start");
        return;
    }
    size_t big = 10u << 20;
    char *t = malloc(big + 256);
    int h = snprintf(t, 256, HDR);
    memset(t + h, 'x', big);
    t[h + big] = '\n';
    static const struct {
        const char *body;
        int status;
        const char *code, *msg;
    } cases[] = {
        {NULL, 400, "malformed_sym", "line 2 is longer"},
        {"MODULE mac x86_64 NOTHEX t\n", 400, "malformed_sym", "line 1: MODULE debug id"},
        {"MODULE mac x86_64 67E9247C814E392BA027DBDE6748FCBF0\n", 400, "malformed_sym",
         "MODULE record needs"},
        {"MODULE Linux x86_64 67E9247C814E392BA027DBDE6748FCBF0 t\n", 422, "unsupported",
         "Apple images only"},
        {"MODULE mac arm64 000000000000000000000000000000000 t\n", 400, "no_uuid", "all zeros"},
        {"MODULE mac x86_64 67E9247C814E392BA027DBDE6748FCBF0 t\nFUNC 0 1 0 f\0\n", 400,
         "malformed_sym", "NUL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *body = cases[i].body ? cases[i].body : t;
        size_t len = cases[i].body ? strlen(body) : (size_t)h + big + 1;
        if (i == 5)
            len = strlen(body) + 2; /* through the NUL */
        http_resp r;
        bool ok = http_do(sp.port, "POST", "/v1/images", NULL, body, len, &r);
        CHECK(ok && r.status == cases[i].status && strcmp(error_code(&r), cases[i].code) == 0 &&
                  r.body && strstr(r.body, cases[i].msg),
              "case %zu: %d %.300s", i, r.status, r.body ? r.body : "");
        http_resp_free(&r);
    }
    free(t);
    /* out of order, overlapping, past 4 GiB: stored, with warnings */
    const char *warned = HDR "FILE 0 a.c\nFUNC 300 10 0 c\nFUNC 100 180 0 a\nf0 20 1 0\n"
                             "FUNC 200 10 0 b\nFUNC fffffff0 ffffffff 0 w\n";
    int status;
    json_t *j = http_json(sp.port, "POST", "/v1/images", NULL, warned, strlen(warned), &status,
                          NULL);
    json_t *w = json_object_get(json_array_get(json_object_get(j, "images"), 0), "warnings");
    CHECK(status == 201 && json_array_size(w) == 4, "warned upload: %d, %zu warnings", status,
          json_array_size(w));
    bool order = false;
    for (size_t i = 0; i < json_array_size(w); i++)
        order |= strstr(json_string_value(json_array_get(w, i)), "out of address order, first "
                                                                 "at line 4") != NULL ||
                 strstr(json_string_value(json_array_get(w, i)), "out of address order (sorted)"
                                                                 ": 1, first at line 4") != NULL;
    CHECK(order, "the out-of-order warning names line 4: %s", json_dumps(w, JSON_COMPACT));
    json_decref(j);
    CHECK(server_alive(&sp) && server_stop(&sp), "server did not survive");
}

/* The CFI blob through the store API, on the test's backend: written at
 * upload, read back as the walker will, absent kinds not found. */
TEST(store_breakpad_cfi_blob)
{
    size_t len;
    uint8_t *buf = md_file("symbolicator-macos-no-fp/sentry_example.sym.original", &len);
    if (!buf)
        return;
    char path[1024];
    const char *where = path;
    if (test_pg())
        where = pg_fresh_db("bpblob");
    else
        snprintf(path, sizeof path, "%s/bp-blob.db", test_tmpdir());
    store *st = NULL;
    symd_err err = {0};
    CHECK(where && store_open(where, 1, 1 << 20, &st, &err) == SYMD_OK, "open: %s", err.msg);
    ingest_batch b;
    ingest_batch_init(&b);
    store_put_result res[1];
    store_image stored[1];
    CHECK(st && ingest_add_file(&b, buf, len, "x", &err) == SYMD_OK && b.n == 1 &&
              ingest_commit(st, &b, res, stored, &err) == SYMD_OK,
          "ingest: %s", err.msg);
    ingest_batch_free(&b);
    uint8_t uuid[16];
    uuid_parse("73781EDE-BF5B-34EC-81B2-749A0F1FA5FD", uuid);
    uint8_t *blob = NULL;
    size_t blen = 0;
    bp_cfi_blob cb;
    CHECK(st && store_get_blob(st, uuid, "arm64", BP_IMAGE_CFI_BLOB, &blob, &blen, &err) == SYMD_OK &&
              bp_cfi_open(blob, blen, &cb, &err) == SYMD_OK && cb.arch == BP_CFI_ARCH_ARM64 &&
              cb.nentries == count_lines(buf, len, "STACK CFI INIT "),
          "CFI blob: %s", err.msg);
    bp_cfi_lookup l;
    CHECK(blob && bp_cfi_find(&cb, 0xda0, &l) && l.cfa_reg == 31 && l.cfa_off == 32,
          "row at 0xda0: cfa %u%+d", l.cfa_reg, l.cfa_off);
    free(blob);
    blob = NULL;
    CHECK(st && store_get_blob(st, uuid, "arm64", "no_such_kind", &blob, &blen, &err) ==
                    SYMD_E_NOT_FOUND,
          "unknown kind found");
    CHECK(st && store_get_blob(st, uuid, "x86_64", BP_IMAGE_CFI_BLOB, &blob, &blen, &err) ==
                    SYMD_E_NOT_FOUND,
          "other arch found");
    /* the indexes open module-relative: text_vmaddr 0 */
    store_loaded *ld = NULL;
    CHECK(st && store_acquire(st, uuid, "arm64", &ld, &err) == SYMD_OK &&
              (ld->sym.flags & SYMINDEX_F_RELATIVE) && ld->has_lines &&
              (ld->lines.flags & LINEINDEX_F_RELATIVE),
          "acquire: %s", err.msg);
    if (ld) {
        symlook look;
        symindex_lookup(&ld->sym, 0xd98, &look);
        CHECK(look.status == SYMLOOK_SYMBOL && strcmp(look.name, "get_current_thread_id") == 0,
              "0xd98: %s", look.name ? look.name : "none");
        store_release(st, ld);
    }
    store_close(st);
    free(buf);
}

/* symd dump-syms on the command line: a .dSYM bundle as the second
 * argument, the output a .sym symd reads back; usage errors. */
TEST(cli_breakpad_dump_syms)
{
    if (!minidumps_dir()) {
        test_skip("../shared/minidumps not found");
        return;
    }
    const char *bin = getenv("SYMD_BIN");
    char out[1024], cmd[4096];
    snprintf(out, sizeof out, "%s/bp-dump.sym", test_tmpdir());
    snprintf(cmd, sizeof cmd, "'%s' dump-syms -o '%s' '%s' '%s' 2>/dev/null", bin ? bin : "./symd",
             out, md_path("symbolicator-macos/crash"), md_path("symbolicator-macos/crash.dSYM"));
    CHECK(system(cmd) == 0, "%s failed", cmd);
    size_t len;
    uint8_t *b = read_file(out, &len);
    bp_sym s;
    symd_err err = {0};
    CHECK(b && bp_sym_parse(b, len, true, &s, &err) == SYMD_OK && s.nfuncs > 0 &&
              s.ninlines > 0 && s.cfi.nentries > 0 && total_warnings(&s) == 0,
          "dump-syms output: %s", err.msg);
    if (err.kind == SYMD_OK && b)
        bp_sym_free(&s);
    free(b);
    snprintf(cmd, sizeof cmd, "'%s' dump-syms > /dev/null 2>&1", bin ? bin : "./symd");
    CHECK(WEXITSTATUS(system(cmd)) == 2, "no arguments: not a usage error");
    snprintf(cmd, sizeof cmd, "'%s' dump-syms --help 2>&1 | grep -q 'STACK CFI INIT'", bin ? bin : "./symd");
    CHECK(system(cmd) == 0, "--help does not say STACK CFI is written");
    snprintf(cmd, sizeof cmd, "'%s' dump-syms '%s' '%s' > /dev/null 2>&1", bin ? bin : "./symd",
             md_path("symbolicator-macos/crash"), md_path("symbolic-crash_macos/crash_macos"));
    CHECK(WEXITSTATUS(system(cmd)) == 1, "a dSYM of another UUID accepted");
}

/* Inputs the fuzzer once broke (fuzz/regress/breakpad-*): read, built and
 * their CFI blob reopened as fuzz_breakpad_sym does. */
static void replay_one(const char *rel, const uint8_t *buf, size_t len)
{
    bp_sym s;
    symd_err err = {0};
    if (bp_sym_parse(buf, len, false, &s, &err) == SYMD_OK) {
        uint8_t *blob = NULL;
        size_t blen;
        bp_cfi_blob b;
        CHECK(bp_cfi_encode(&s.cfi, &blob, &blen, &err) == SYMD_OK &&
                  bp_cfi_open(blob, blen, &b, &err) == SYMD_OK,
              "%s: own CFI blob refused: %s", rel, err.msg);
        free(blob);
        bp_sym_free(&s);
    }
    bp_image im;
    if (bp_image_build(buf, len, 1 << 20, &im, &err) == SYMD_OK)
        bp_image_free(&im);
}

TEST(breakpad_fuzz_regressions)
{
    int n = each_regression("breakpad-", replay_one);
    CHECK(n > 0, "no fuzz/regress/breakpad-* inputs (%d)", n);
}

/* ---- dump-syms, then upload: the round trip on the repository's fixtures -- */

/* What a lookup answers at vmaddr: the outer function's display name and
 * offset, and every level's name, file and line (no columns: a .sym has
 * none). */
typedef struct {
    char text[4096];
} answer_text;

static void answer_of(const symindex *si, const lineindex *li, uint64_t vmaddr, answer_text *out)
{
    symlook look;
    symindex_lookup(si, vmaddr, &look);
    linelook ll;
    bool lines = li && lineindex_lookup(li, vmaddr, &ll);
    if (lines && ll.outer_from_symbols && look.status != SYMLOOK_SYMBOL) {
        symindex_lookup(si, ll.func_start, &look);
        if (look.status == SYMLOOK_SYMBOL)
            look.offset = vmaddr - look.sym_addr;
    }
    size_t o = 0;
    o += (size_t)snprintf(out->text + o, sizeof out->text - o, "%s+%llu",
                          look.status == SYMLOOK_SYMBOL ? look.name : "?",
                          (unsigned long long)(look.status == SYMLOOK_SYMBOL ? look.offset : 0));
    for (size_t i = 0; lines && i < ll.n && o < sizeof out->text; i++)
        o += (size_t)snprintf(out->text + o, sizeof out->text - o, " | %s %s:%u",
                              i + 1 < ll.n && ll.f[i].name ? ll.f[i].name : "",
                              ll.f[i].file ? ll.f[i].file : "", ll.f[i].line);
}

/* Every fixture binary with its dSYM: dump-syms, the .sym read back into
 * indexes, and every byte of every function answered by both as the binary
 * + dSYM answer it (function, offset, each inlined level's file and line). */
TEST(breakpad_dump_syms_round_trip_fixtures)
{
    static const char *const names[] = {"bigapp-arm64", "bigapp-x86_64", "inliner-arm64",
                                        "inliner-x86_64", "swifty-arm64", "bigapp5-arm64"};
    for (size_t t = 0; t < sizeof names / sizeof names[0]; t++) {
        char rb[256], rd[256];
        snprintf(rb, sizeof rb, "fixtures/bin/%s", names[t]);
        snprintf(rd, sizeof rd, "fixtures/dsym/%s.dSYM/Contents/Resources/DWARF/%s", names[t],
                 names[t]);
        size_t blen, dlen;
        uint8_t *bin = read_fixture(rb, &blen), *dsym = bin ? read_fixture(rd, &dlen) : NULL;
        if (!bin || !dsym) {
            free(bin);
            continue;
        }
        char *text = NULL;
        size_t tlen = 0;
        FILE *f = open_memstream(&text, &tlen);
        bp_dump_opts o = {NULL, names[t], NULL, NULL};
        symd_err err = {0};
        CHECK(bp_dump_syms(bin, blen, dsym, dlen, &o, f, NULL, &err) == SYMD_OK, "%s: %s",
              names[t], err.msg);
        fclose(f);
        /* the binary + dSYM, as an upload indexes them */
        macho_image bimg, dimg;
        uint8_t *sb = NULL, *lb = NULL;
        size_t sl, ll;
        lineindex_stats lst;
        symindex bsi, ssi;
        lineindex bli, sli;
        bp_image im;
        memset(&im, 0, sizeof im);
        bool have_b = macho_parse_image(bin, blen, &bimg, &err) == SYMD_OK;
        bool have_d = have_b && macho_parse_image(dsym, dlen, &dimg, &err) == SYMD_OK;
        bool ok = have_d && symindex_build(&bimg, &sb, &sl, NULL, NULL, &err) == SYMD_OK &&
             symindex_open(sb, sl, &bsi, &err) == SYMD_OK &&
             lineindex_build(&dimg, &bsi, 1 << 26, &lb, &ll, &lst, &err) == SYMD_OK && lb &&
             lineindex_open(lb, ll, &bli, &err) == SYMD_OK;
        /* the .sym, as an upload of it indexes it */
        ok = ok && bp_image_build((uint8_t *)text, tlen, 1 << 26, &im, &err) == SYMD_OK &&
             im.lines && symindex_open(im.symidx, im.symidx_len, &ssi, &err) == SYMD_OK &&
             lineindex_open(im.lines, im.lines_len, &sli, &err) == SYMD_OK && im.nwarnings == 0;
        CHECK(ok, "%s: %s", names[t], err.msg);
        if (ok) {
            uint64_t text_vm = macho_text_vmaddr(&bimg);
            ssi.base += text_vm; /* what the store does for a RELATIVE index */
            sli.base += text_vm;
            size_t addrs = 0, same = 0;
            for (uint32_t i = 0; i < bli.nfuncs; i++) {
                lineindex_xfunc xf;
                if (!lineindex_function(&bli, i, &xf))
                    continue;
                for (uint64_t a = xf.start; a < xf.start + xf.size; a++) {
                    answer_text x, y;
                    answer_of(&bsi, &bli, a, &x);
                    answer_of(&ssi, &sli, a, &y);
                    addrs++;
                    same += strcmp(x.text, y.text) == 0;
                    if (strcmp(x.text, y.text) != 0 && addrs - same < 4)
                        CHECK(0, "%s 0x%llx:\n      dSYM %s\n      .sym %s", names[t],
                              (unsigned long long)a, x.text, y.text);
                }
                lineindex_xfunc_free(&xf);
            }
            CHECK(same == addrs && addrs > 0, "%s: %zu of %zu addresses the same", names[t],
                  same, addrs);
            printf("    %s: dump-syms → upload answers %zu/%zu addresses as binary + dSYM\n",
                   names[t], same, addrs);
        }
        free(sb);
        free(lb);
        bp_image_free(&im);
        if (have_d)
            macho_image_free(&dimg);
        if (have_b)
            macho_image_free(&bimg);
        free(text);
        free(bin);
        free(dsym);
    }
}

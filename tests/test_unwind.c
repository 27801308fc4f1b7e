/* Unwind rows against independent tools (llvm-objdump, llvm-dwarfdump,
 * lldb-14, symbolic's CFI snapshot), hostile tables, and the stack walker. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "../macho/macho.h"
#include "../unwind/compact.h"
#include "../unwind/ehframe.h"
#include "../unwind/unwind.h"
#include "../unwind/walk.h"

/* ---- helpers ---- */

typedef struct {
    uint8_t *file;
    macho_image img;
    uint8_t *blob;
    size_t len;
    unw_table t;
    unw_build_stats st;
    bool ok;
} built;

static bool build_file(const char *path, built *b)
{
    memset(b, 0, sizeof *b);
    size_t len;
    b->file = read_file(path, &len);
    if (!b->file)
        return false;
    macho_slice sl[MACHO_MAX_SLICES];
    size_t n;
    symd_err e = {0};
    if (macho_parse_slices(b->file, len, sl, &n, &e) != SYMD_OK ||
        macho_parse_image(b->file + sl[0].offset, (size_t)sl[0].size, &b->img, &e) != SYMD_OK)
        return false;
    if (unw_build_image(&b->img, &b->blob, &b->len, &b->st, &e) != SYMD_OK || !b->blob)
        return false;
    b->ok = unw_table_open(b->blob, b->len, &b->t, &e) == SYMD_OK;
    return b->ok;
}

static void built_free(built *b)
{
    if (b->img.buf)
        macho_image_free(&b->img);
    free(b->blob);
    free(b->file);
}

/* The canonical form rows are compared in: "CFA=reg+off" then the rules
 * sorted as text, the RA column named ra, sp's implied rule left out. */
static void canon(char *out, size_t cap, const char *cfa, char toks[][48], int ntok)
{
    qsort(toks, (size_t)ntok, 48, (int (*)(const void *, const void *))strcmp);
    size_t o = (size_t)snprintf(out, cap, "CFA=%s", cfa);
    for (int i = 0; i < ntok && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, " %s", toks[i]);
}

/* A row of ours in canonical form; skip_d drops d8..d15 (lldb's compact
 * plans do not track floating-point registers). */
static void canon_row(unw_arch arch, const unw_row *r, bool skip_d, char *out, size_t cap)
{
    char buf[512], toks[UNW_MAX_RULES][48];
    int n = 0;
    unw_row_format(arch, r, buf, sizeof buf);
    /* "START-END SOURCE CFA=... rules..." */
    char *p = strchr(buf, ' ');
    p = p ? strchr(p + 1, ' ') : NULL;
    char cfa[48] = "";
    char *save = NULL;
    for (char *tok = p ? strtok_r(p + 1, " ", &save) : NULL; tok;
         tok = strtok_r(NULL, " ", &save)) {
        if (!strncmp(tok, "CFA=", 4)) {
            snprintf(cfa, sizeof cfa, "%s", tok + 4);
            continue;
        }
        if (skip_d && tok[0] == 'd' && isdigit((unsigned char)tok[1]))
            continue;
        if (n < UNW_MAX_RULES)
            snprintf(toks[n++], 48, "%s", tok);
    }
    canon(out, cap, cfa, toks, n);
}

/* A tool's register name in ours: lower case; x86 rip and arm64 pc/lr/w30
 * are the RA column; arm64 wN is xN, w29 fp, wsp sp. */
static void reg_canon(unw_arch arch, const char *in, char *out, size_t cap)
{
    char l[32];
    size_t i = 0;
    for (; in[i] && i + 1 < sizeof l; i++)
        l[i] = (char)tolower((unsigned char)in[i]);
    l[i] = 0;
    if (arch == UNW_ARCH_X86_64) {
        snprintf(out, cap, "%s", !strcmp(l, "rip") ? "ra" : l);
        return;
    }
    if (!strcmp(l, "wsp") || !strcmp(l, "sp"))
        snprintf(out, cap, "sp");
    else if (!strcmp(l, "w30") || !strcmp(l, "x30") || !strcmp(l, "lr") || !strcmp(l, "pc"))
        snprintf(out, cap, "ra");
    else if (!strcmp(l, "w29") || !strcmp(l, "x29") || !strcmp(l, "fp"))
        snprintf(out, cap, "fp");
    else if (l[0] == 'w')
        snprintf(out, cap, "x%s", l + 1);
    else
        snprintf(out, cap, "%s", l);
}

/* "RBX=[CFA-24]" / "r13= <same>" / "R11=undefined" / "r11=?" / "R12=RAX" /
 * "R14=CFA-32" (name=value) in canonical form; false to leave it out. */
static bool rule_canon(unw_arch arch, const char *name, const char *val, char out[48])
{
    char n[32], v[32];
    reg_canon(arch, name, n, sizeof n);
    if (!strcmp(n, "sp") || !strcmp(n, "rsp"))
        return false; /* sp = CFA: implied by the CFA rule */
    if (!strcmp(val, "?") || !strcmp(val, "undefined"))
        snprintf(out, 48, "%.20s=undefined", n);
    else if (!strcmp(val, "<same>") || !strcmp(val, "same"))
        snprintf(out, 48, "%.20s=same", n);
    else if (val[0] == '[' || !strncmp(val, "CFA", 3))
        snprintf(out, 48, "%.20s=%.20s", n, val);
    else {
        reg_canon(arch, val, v, sizeof v);
        if (!strcmp(n, "ra") && !strcmp(v, "ra"))
            return false; /* lldb's pc=lr: the return address is still in lr */
        snprintf(out, 48, "%.20s=%.20s", n, v);
    }
    return true;
}

/* "RSP+8" / "WSP" / "rsp +8" / "fp+16" as ours ("rsp+8", "sp+0"). */
static void cfa_canon(unw_arch arch, const char *in, char *out, size_t cap)
{
    char reg[32] = "", num[32] = "+0";
    size_t i = 0, j = 0;
    while (in[i] && in[i] != '+' && in[i] != '-' && in[i] != ' ' && j + 1 < sizeof reg)
        reg[j++] = in[i++];
    reg[j] = 0;
    while (in[i] == ' ')
        i++;
    if (in[i])
        snprintf(num, sizeof num, "%s", in + i);
    char r[32];
    reg_canon(arch, reg, r, sizeof r);
    snprintf(out, cap, "%s%+d", r, atoi(num));
}

static bool row_at(const unw_table *t, uint64_t off, unw_row *r)
{
    return unw_table_find(t, off, r);
}

/* ---- llvm-objdump: the compact entries ---- */

static void compare_objdump(const char *arch)
{
    char bin[128], txt[128];
    snprintf(bin, sizeof bin, "fixtures/unwind/unwind-%s", arch);
    snprintf(txt, sizeof txt, "fixtures/unwind/unwind-%s.objdump.txt", arch);
    built b;
    CHECK(build_file(root_path(bin), &b), "%s: rows", bin);
    size_t tlen;
    char *t = (char *)read_fixture(txt, &tlen);
    const macho_section *ui = NULL;
    for (size_t i = 0; i < b.img.nsects; i++)
        if (!strcmp(b.img.sects[i].sectname, "__unwind_info"))
            ui = &b.img.sects[i];
    unw_compact_entry *ents = NULL;
    size_t n = 0;
    symd_err e = {0};
    CHECK(ui && unw_compact_read(b.img.buf + ui->offset, (size_t)ui->size, &ents, &n, NULL,
                                 &e) == SYMD_OK,
          "%s: compact read: %s", arch, e.msg);
    size_t compared = 0, equal = 0;
    for (char *line = t ? strtok(t, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        unsigned idx, fn, enc, ei;
        if (sscanf(line, " [%u]: function offset=0x%x, encoding[%u]=0x%x", &idx, &fn, &ei,
                   &enc) != 4)
            continue;
        compared++;
        bool ok = idx < n && ents[idx].start == fn && ents[idx].encoding == enc;
        equal += ok;
        CHECK(ok, "%s: entry %u: objdump 0x%x/0x%08x, ours 0x%x/0x%08x", arch, idx, fn, enc,
              idx < n ? ents[idx].start : 0, idx < n ? ents[idx].encoding : 0);
    }
    CHECK(compared == n && n > 0, "%s: %zu objdump entries, %zu ours", arch, compared, n);
    printf("    llvm-objdump %s: %zu compact entries compared, %zu equal\n", arch, compared, equal);
    free(ents);
    free(t);
    built_free(&b);
}

TEST(unwind_compact_entries_equal_llvm_objdump)
{
    compare_objdump("arm64");
    compare_objdump("x86_64");
}

/* ---- llvm-dwarfdump: the eh_frame rows ---- */

static void compare_dwarfdump(const char *arch)
{
    char bin[128], txt[128];
    snprintf(bin, sizeof bin, "fixtures/unwind/unwind-%s", arch);
    snprintf(txt, sizeof txt, "fixtures/unwind/unwind-%s.eh_frame.txt", arch);
    built b;
    CHECK(build_file(root_path(bin), &b), "%s: rows", bin);
    unw_arch a = b.t.arch;
    uint64_t text = macho_text_vmaddr(&b.img);
    size_t tlen;
    char *t = (char *)read_fixture(txt, &tlen);
    size_t compared = 0, equal = 0;
    uint64_t fde_end = 0, prev = 0;
    char prev_want[512] = "";
    bool have_prev = false;
    /* A row ends where the next starts, or at its FDE's end. */
#define FLUSH(END_)                                                                        \
    do {                                                                                  \
        if (have_prev) {                                                                  \
            unw_row r;                                                                    \
            char got[512] = "(none)";                                                     \
            bool found = row_at(&b.t, prev - text, &r);                                   \
            if (found)                                                                    \
                canon_row(a, &r, false, got, sizeof got);                                 \
            bool ok = found && r.start == prev - text && r.end == (END_) - text &&        \
                      !strcmp(got, prev_want);                                            \
            compared++;                                                                   \
            equal += ok;                                                                  \
            CHECK(ok, "%s 0x%llx-0x%llx: dwarfdump %s, ours 0x%x-0x%x %s", arch,          \
                  (unsigned long long)prev, (unsigned long long)(END_), prev_want,         \
                  found ? r.start : 0, found ? r.end : 0, got);                           \
            have_prev = false;                                                            \
        }                                                                                 \
    } while (0)
    for (char *line = t ? strtok(t, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        unsigned long long lo, hi;
        char *pc = strstr(line, " FDE cie=");
        if (pc && sscanf(strstr(line, "pc=") + 3, "%llx...%llx", &lo, &hi) == 2) {
            FLUSH(fde_end);
            fde_end = hi;
            continue;
        }
        unsigned long long at;
        if (sscanf(line, "  0x%llx: CFA=", &at) != 1)
            continue;
        FLUSH(at);
        char *cfa = strstr(line, "CFA=") + 4;
        char *colon = strchr(cfa, ':');
        char cfa_s[64], toks[UNW_MAX_RULES][48];
        int nt = 0;
        if (colon)
            *colon = 0;
        cfa_canon(a, cfa, cfa_s, sizeof cfa_s);
        for (char *p = colon ? colon + 1 : NULL; p && *p;) {
            while (*p == ' ' || *p == ',')
                p++;
            char *eq = strchr(p, '=');
            if (!eq)
                break;
            char *endp = strchr(eq, ',');
            char name[32], val[32];
            snprintf(name, sizeof name, "%.*s", (int)(eq - p), p);
            snprintf(val, sizeof val, "%.*s", (int)(endp ? endp - eq - 1 : (long)strlen(eq + 1)),
                     eq + 1);
            if (nt < UNW_MAX_RULES && rule_canon(a, name, val, toks[nt]))
                nt++;
            p = endp ? endp : eq + strlen(eq);
        }
        canon(prev_want, sizeof prev_want, cfa_s, toks, nt);
        prev = at;
        have_prev = true;
    }
    FLUSH(fde_end);
#undef FLUSH
    CHECK(compared > 15, "%s: %zu rows compared", arch, compared);
    printf("    llvm-dwarfdump %s: %zu eh_frame rows compared, %zu equal\n", arch, compared, equal);
    free(t);
    built_free(&b);
}

TEST(unwind_eh_frame_rows_equal_llvm_dwarfdump)
{
    compare_dwarfdump("arm64");
    compare_dwarfdump("x86_64");
}

/* ---- lldb-14: image show-unwind ---- */

typedef struct {
    size_t compared, equal, skipped;
} tally;

/* Compares lldb's "Compact unwind" and "eh_frame" plans in text (the
 * output of `image show-unwind -a` for several functions) with our rows;
 * slide: load address minus vmaddr. Functions named in skip are counted,
 * not compared. */
static void compare_lldb(const char *what, char *text, const built *b, uint64_t slide,
                         const char *const *skip, tally *tl)
{
    unw_arch a = b->t.arch;
    uint64_t tv = macho_text_vmaddr(&b->img);
    uint64_t func = 0;
    int plan = 0; /* 1 compact, 2 eh_frame */
    bool skipping = false;
    uint64_t last_start = 0;
    bool have_last = false;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long long start;
        char *sa = strstr(line, "(start addr 0x");
        if (!strncmp(line, "UNWIND PLANS for ", 17) && sa &&
            sscanf(sa, "(start addr 0x%llx)", &start) == 1) {
            func = start - slide;
            plan = 0;
            skipping = false;
            for (int i = 0; skip && skip[i]; i++) {
                char pat[96];
                snprintf(pat, sizeof pat, "`%s ", skip[i]);
                if (strstr(line, pat))
                    skipping = true;
            }
            continue;
        }
        if (!strncmp(line, "Compact unwind UnwindPlan:", 26)) {
            plan = 1, have_last = false;
            continue;
        }
        if (!strncmp(line, "eh_frame UnwindPlan:", 20)) {
            plan = 2, have_last = false;
            continue;
        }
        unsigned idx, off;
        if (sscanf(line, "row[%u]: %u:", &idx, &off) != 2) {
            if (line[0] && strncmp(line, "row[", 4) && strncmp(line, "This ", 5) &&
                strncmp(line, "Address range", 13) && strncmp(line, "LSDA", 4))
                plan = 0;
            continue;
        }
        if (!plan)
            continue;
        if (skipping) {
            tl->skipped++;
            continue;
        }
        char *cfa = strstr(line, "CFA=") + 4, *arrow = strstr(line, " => ");
        if (!arrow)
            continue;
        *arrow = 0;
        char cfa_s[64], want[512], got[512] = "(none)", toks[UNW_MAX_RULES][48];
        cfa_canon(a, cfa, cfa_s, sizeof cfa_s);
        int nt = 0;
        for (char *p = arrow + 4; *p;) {
            while (*p == ' ')
                p++;
            char *eq = strchr(p, '=');
            if (!eq)
                break;
            char *v = eq + 1;
            while (*v == ' ')
                v++;
            char *end = strchr(v, ' ');
            char name[32], val[32];
            snprintf(name, sizeof name, "%.*s", (int)(eq - p), p);
            snprintf(val, sizeof val, "%.*s", (int)(end ? end - v : (long)strlen(v)), v);
            if (nt < UNW_MAX_RULES && rule_canon(a, name, val, toks[nt]))
                nt++;
            p = end ? end : v + strlen(v);
        }
        canon(want, sizeof want, cfa_s, toks, nt);
        uint64_t at = func + off - tv;
        unw_row r;
        bool found = row_at(&b->t, at, &r);
        if (found)
            canon_row(a, &r, plan == 1, got, sizeof got);
        /* compact: one row valid over the function; eh_frame: every row
         * starts where lldb's does, and the one before ends there */
        /* (an FDE the compact table does not escape to, ld64 kept beside a
         * compact entry: ours is the compact row, which must then say the
         * same) */
        bool ok = found && !strcmp(got, want) &&
                  (plan == 1 ? r.source == UNW_SRC_COMPACT : r.start == at);
        if (ok && plan == 2 && have_last) {
            unw_row pr;
            ok = row_at(&b->t, last_start, &pr) && pr.end == at;
        }
        last_start = at, have_last = true;
        tl->compared++;
        tl->equal += ok;
        CHECK(ok, "%s: lldb %s row at 0x%llx: %s, ours 0x%x-0x%x %s %s", what,
              plan == 1 ? "compact" : "eh_frame", (unsigned long long)at, want,
              found ? r.start : 0, found ? r.end : 0, found ? (r.source == 1 ? "compact" : "eh_frame") : "", got);
    }
}

/* lldb-14 implements no DW_CFA_val_offset and keeps a rule DW_CFA_restore
 * takes back to none (fixtures/src/unwind/cfi-*.s): cfi_vals is left to
 * llvm-dwarfdump. */
static const char *const lldb_skip[] = {"cfi_vals", NULL};

TEST(unwind_rows_equal_lldb_show_unwind)
{
    const char *archs[2] = {"arm64", "x86_64"};
    for (int i = 0; i < 2; i++) {
        char bin[128], txt[128];
        snprintf(bin, sizeof bin, "fixtures/unwind/unwind-%s", archs[i]);
        snprintf(txt, sizeof txt, "fixtures/unwind/unwind-%s.lldb.txt", archs[i]);
        built b;
        CHECK(build_file(root_path(bin), &b), "%s: rows", bin);
        size_t tlen;
        char *t = (char *)read_fixture(txt, &tlen);
        tally tl = {0};
        if (t)
            compare_lldb(archs[i], t, &b, 0, lldb_skip, &tl);
        CHECK(tl.compared > 20, "%s: %zu lldb rows compared", archs[i], tl.compared);
        printf("    lldb-14 %s: %zu rows compared, %zu equal (%zu rows of cfi_vals left to "
               "dwarfdump)\n", archs[i], tl.compared, tl.equal, tl.skipped);
        free(t);
        built_free(&b);
    }
}

/* The same, live, on the real binaries of ../shared/minidumps loaded by
 * lldb-14 from their own dumps (skipped without lldb-14 or the data). */
TEST(unwind_rows_equal_lldb_on_real_binaries)
{
    const char *dir = minidumps_dir();
    if (!dir || system("command -v lldb-14 >/dev/null 2>&1") != 0) {
        test_skip(!dir ? "../shared/minidumps not found" : "lldb-14 not installed");
        return;
    }
    const char *cases[2][3] = {{"symbolicator-macos", "crash", "macos.dmp"},
                               {"symbolic-crash_macos", "crash_macos", "crash_macos.dmp"}};
    for (int c = 0; c < 2; c++) {
        char bin[640], dmp[640], cmdf[256], outf[256];
        snprintf(bin, sizeof bin, "%s/%s/%s", dir, cases[c][0], cases[c][1]);
        snprintf(dmp, sizeof dmp, "%s/%s/%s", dir, cases[c][0], cases[c][2]);
        built b;
        CHECK(build_file(bin, &b), "%s: rows", bin);
        /* lldb finds the binary beside the dump: its load address is the
         * dump module's, read from `image list`. */
        snprintf(cmdf, sizeof cmdf, "%s/lldb-%d.cmd", test_tmpdir(), c);
        snprintf(outf, sizeof outf, "%s/lldb-%d.out", test_tmpdir(), c);
        char cmd[2048];
        snprintf(cmd, sizeof cmd,
                 "cd '%s/%s' && timeout 120 lldb-14 -b -x -o 'target create --core %s' -o "
                 "'image list %s' 2>/dev/null | grep -o '0x[0-9a-f]\\{16\\}' | head -1",
                 dir, cases[c][0], cases[c][2], cases[c][1]);
        FILE *p = popen(cmd, "r");
        unsigned long long base = 0;
        if (p) {
            if (fscanf(p, "%llx", &base) != 1)
                base = 0;
            pclose(p);
        }
        CHECK(base, "%s: lldb loaded no %s", cases[c][2], cases[c][1]);
        uint64_t slide = base - macho_text_vmaddr(&b.img);
        FILE *cf = fopen(cmdf, "w");
        /* every function the compact table lists */
        const macho_section *ui = NULL;
        for (size_t i = 0; i < b.img.nsects; i++)
            if (!strcmp(b.img.sects[i].sectname, "__unwind_info"))
                ui = &b.img.sects[i];
        unw_compact_entry *ents = NULL;
        size_t n = 0;
        symd_err e = {0};
        if (ui)
            unw_compact_read(b.img.buf + ui->offset, (size_t)ui->size, &ents, &n, NULL, &e);
        fprintf(cf, "target create --core %s\n", cases[c][2]);
        for (size_t i = 0; i < n; i++)
            if (ents[i].encoding)
                fprintf(cf, "image show-unwind -a 0x%llx\n",
                        (unsigned long long)(macho_text_vmaddr(&b.img) + slide + ents[i].start));
        fclose(cf);
        snprintf(cmd, sizeof cmd,
                 "cd '%s/%s' && timeout 600 lldb-14 -b -x -s '%s' 2>/dev/null | grep -v "
                 "'^Traceback\\|File \"<string>\\|Error: name\\|Error: No module' > '%s'",
                 dir, cases[c][0], cmdf, outf);
        CHECK(system(cmd) == 0, "lldb-14 ran");
        size_t olen;
        char *out = (char *)read_file(outf, &olen);
        tally tl = {0};
        if (out)
            compare_lldb(cases[c][1], out, &b, slide, NULL, &tl);
        CHECK(tl.compared > 100, "%s: %zu rows compared", cases[c][1], tl.compared);
        printf("    lldb-14 %s (%zu functions): %zu rows compared, %zu equal\n", cases[c][1], n,
               tl.compared, tl.equal);
        free(out);
        free(ents);
        built_free(&b);
    }
}

/* ---- symbolic's CFI snapshot of symbolicator-macos/crash ---- */

/* "$rbx: .cfa -16 + ^" style rules of one STACK CFI line into the state. */
static void breakpad_apply(unw_arch a, char *rules, char *cfa, size_t cfa_cap,
                           char toks[][48], int *nt)
{
    char *save = NULL;
    char *w[64];
    int nw = 0;
    for (char *tok = strtok_r(rules, " ", &save); tok && nw < 64; tok = strtok_r(NULL, " ", &save))
        w[nw++] = tok;
    for (int i = 0; i < nw;) {
        char *name = w[i];
        size_t ln = strlen(name);
        if (!ln || name[ln - 1] != ':') {
            i++;
            continue;
        }
        name[ln - 1] = 0;
        int j = i + 1;
        while (j < nw && w[j][strlen(w[j]) - 1] != ':')
            j++;
        /* postfix: BASE [OFF +] [^] */
        const char *basev = j > i + 1 ? w[i + 1] : "";
        int off = 0;
        bool deref = false;
        for (int k = i + 2; k < j; k++) {
            if (!strcmp(w[k], "^"))
                deref = true;
            else if (strcmp(w[k], "+"))
                off = atoi(w[k]);
        }
        char base[32];
        reg_canon(a, basev[0] == '$' ? basev + 1 : basev, base, sizeof base);
        if (!strcmp(name, ".cfa")) {
            snprintf(cfa, cfa_cap, "%s%+d", base, off);
        } else {
            char n[32], rule[48];
            reg_canon(a, name[0] == '$' ? name + 1 : !strcmp(name, ".ra") ? "rip" : name, n,
                      sizeof n);
            if (!strcmp(base, ".cfa"))
                snprintf(rule, sizeof rule, deref ? "%s=[CFA%+d]" : "%s=CFA%+d", n, off);
            else
                snprintf(rule, sizeof rule, "%.20s=%.20s", n, base);
            int k = 0;
            size_t nl = strlen(n);
            while (k < *nt && !(strncmp(toks[k], n, nl) == 0 && toks[k][nl] == '='))
                k++;
            snprintf(toks[k], 48, "%s", rule);
            if (k == *nt)
                (*nt)++;
        }
        i = j;
    }
}

/* Whether the compact entry at off is x86_64 frameless with an indirect
 * stack size (mode 3). symbolic's snapshot gives such functions the row of
 * their entry (CFA=rsp+8): it does not read the size from the function's
 * `sub` instruction, as lldb and we do (unwind_rows_equal_lldb_on_real_
 * binaries checks ours against lldb's). */
static bool is_indirect(const built *b, uint64_t off)
{
    for (size_t i = 0; i < b->img.nsects; i++) {
        const macho_section *ui = &b->img.sects[i];
        if (strcmp(ui->sectname, "__unwind_info"))
            continue;
        unw_compact_entry *ents = NULL;
        size_t n = 0;
        symd_err e = {0};
        bool yes = false;
        if (unw_compact_read(b->img.buf + ui->offset, (size_t)ui->size, &ents, &n, NULL, &e) ==
            SYMD_OK)
            for (size_t k = 0; k < n; k++)
                if (ents[k].start == off)
                    yes = (ents[k].encoding & 0x0f000000u) == 0x03000000u;
        free(ents);
        return yes;
    }
    return false;
}

TEST(unwind_rows_reproduce_symbolic_cfi_snapshot)
{
    const char *dir = minidumps_dir();
    if (!dir) {
        test_skip("../shared/minidumps not found");
        return;
    }
    char bin[640], snap[640];
    snprintf(bin, sizeof bin, "%s/symbolicator-macos/crash", dir);
    snprintf(snap, sizeof snap, "%s/symbolic-cfi-snapshots/test_cfi__cfi_macho.snap", dir);
    built b;
    CHECK(build_file(bin, &b), "crash: rows");
    size_t len;
    char *s = (char *)read_file(snap, &len);
    CHECK(s != NULL, "snapshot");
    unw_arch a = b.t.arch;
    size_t compared = 0, equal = 0, inits = 0, indirect = 0;
    char cfa[64] = "", toks[UNW_MAX_RULES][48];
    int nt = 0;
    unsigned long long start = 0, init_end = 0;
    bool have = false;
    char *save = NULL;
    /* A row runs to the next STACK CFI line or its INIT's end. */
#define FLUSH(END_)                                                                       \
    do {                                                                                 \
        if (have) {                                                                      \
            char want[512], got[512] = "(none)", copy[UNW_MAX_RULES][48];                \
            memcpy(copy, toks, sizeof copy);                                             \
            canon(want, sizeof want, cfa, copy, nt);                                     \
            unw_row r;                                                                   \
            bool found = row_at(&b.t, start, &r);                                        \
            if (found)                                                                   \
                canon_row(a, &r, false, got, sizeof got);                                \
            bool ok = found && r.start == start && r.end == (END_) && !strcmp(got, want); \
            compared++;                                                                  \
            equal += ok;                                                                 \
            if (!ok && found && is_indirect(&b, start)) {                                \
                indirect++; /* symbolic gives these the entry row: see above */          \
                ok = true;                                                               \
            }                                                                            \
            CHECK(ok, "snapshot 0x%llx-0x%llx: %s, ours 0x%x-0x%x %s", start,            \
                  (unsigned long long)(END_), want, found ? r.start : 0, found ? r.end : 0, \
                  got);                                                                  \
        }                                                                                \
    } while (0)
    for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned long long at, size;
        int used = 0;
        if (sscanf(line, "STACK CFI INIT %llx %llx %n", &at, &size, &used) == 2 && used) {
            FLUSH(at < init_end ? at : init_end);
            inits++;
            nt = 0;
            cfa[0] = 0;
            start = at, init_end = at + size, have = true;
            breakpad_apply(a, line + used, cfa, sizeof cfa, toks, &nt);
        } else if (sscanf(line, "STACK CFI %llx %n", &at, &used) == 1 && used) {
            FLUSH(at);
            start = at;
            breakpad_apply(a, line + used, cfa, sizeof cfa, toks, &nt);
        }
    }
    FLUSH(init_end);
#undef FLUSH
    CHECK(inits == 179, "179 INIT records, read %zu", inits);
    printf("    symbolic snapshot (crash): %zu INIT, %zu rows compared, %zu equal, %zu frameless "
           "with indirect stack size where symbolic writes the entry row\n",
           inits, compared, equal, indirect);
    free(s);
    built_free(&b);
}

/* ---- hostile tables ---- */

/* Every byte of the fixtures' __unwind_info and __eh_frame flipped and
 * every length truncated: errors or warnings, never a crash or a hang. */
TEST(unwind_hostile_tables_are_warnings)
{
    built b;
    CHECK(build_file(root_path("fixtures/unwind/unwind-x86_64"), &b), "rows");
    size_t len = b.img.len;
    uint8_t *copy = malloc(len);
    size_t runs = 0, warned = 0;
    for (size_t si = 0; si < b.img.nsects; si++) {
        const macho_section *sc = &b.img.sects[si];
        if (strcmp(sc->sectname, "__unwind_info") && strcmp(sc->sectname, "__eh_frame"))
            continue;
        for (size_t i = 0; i < sc->size; i += 3) {
            memcpy(copy, b.img.buf, len);
            copy[sc->offset + i] ^= (uint8_t)(0x5a + i);
            macho_image img = b.img;
            img.buf = copy;
            uint8_t *blob = NULL;
            size_t bl;
            unw_build_stats st;
            symd_err e = {0};
            symd_status r = unw_build_image(&img, &blob, &bl, &st, &e);
            unw_table t;
            if (r == SYMD_OK && blob)
                CHECK(unw_table_open(blob, bl, &t, &e) == SYMD_OK, "a built table opens");
            warned += st.diag.count > 0;
            runs++;
            free(blob);
        }
    }
    /* truncated sections through the readers directly */
    for (size_t si = 0; si < b.img.nsects; si++) {
        const macho_section *sc = &b.img.sects[si];
        for (size_t cut = 0; cut < sc->size && !strcmp(sc->sectname, "__unwind_info"); cut += 7) {
            unw_compact_entry *ents = NULL;
            size_t n;
            symd_err e = {0};
            unw_compact_read(b.img.buf + sc->offset, cut, &ents, &n, NULL, &e);
            free(ents);
            runs++;
        }
        for (size_t cut = 0; cut < sc->size && !strcmp(sc->sectname, "__eh_frame"); cut += 5) {
            unw_eh eh = {b.img.buf + sc->offset, cut, sc->addr, 0x100000000ull,
                         UNW_ARCH_X86_64, NULL, NULL};
            size_t off = 0;
            while (off < cut) {
                unw_eh_kind k;
                size_t next;
                symd_err e = {0};
                if (unw_eh_record(&eh, off, &k, &next, &e) != SYMD_OK || next <= off)
                    break;
                unw_fde f;
                unw_cie c;
                unw_rows rows = {0};
                if (k == UNW_EH_FDE && unw_eh_fde(&eh, off, &f, &c, &e) == SYMD_OK)
                    unw_eh_rows(&eh, &f, &c, &rows, NULL, &e);
                unw_rows_free(&rows);
                off = next;
            }
            runs++;
        }
    }
    CHECK(runs > 1000 && warned > 0, "%zu hostile runs, %zu warned", runs, warned);
    free(copy);
    built_free(&b);
}

/* CFA programs that move the location backwards, nest remember_state
 * without end, restore what was never remembered, or name huge registers:
 * errors naming the FDE, rows left as they were. */
TEST(unwind_hostile_cfa_programs)
{
    /* A CIE (zR, pcrel sdata4, code 1, data -8, RA 16, def_cfa rsp+8) and
     * an FDE whose program is patched per case. */
    static const uint8_t cie[] = {0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1,
                                  0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0};
    const struct {
        const char *what;
        uint8_t prog[12];
        size_t n;
    } cases[] = {
        /* set_loc to 0x800, pc-relative from its field at 0x202b */
        {"set_loc backwards", {0x41, 0x01, 0xd5, 0xe7, 0xff, 0xff}, 6},
        {"restore_state on empty", {0x0b}, 1},
        {"register 300", {0x07, 0xac, 0x02}, 3},
        {"truncated uleb", {0x0e, 0x80}, 2},
        {"unknown op", {0x3f}, 1},
        {"offset overflow", {0x8e, 0xff, 0xff, 0xff, 0xff, 0x0f}, 6},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t sect[128] = {0};
        memcpy(sect, cie, sizeof cie);
        size_t fo = sizeof cie;
        uint32_t body = 4 + 4 + 4 + 1 + (uint32_t)cases[c].n;
        sect[fo] = (uint8_t)body;
        uint32_t cptr = (uint32_t)(fo + 4);
        memcpy(sect + fo + 4, &cptr, 4);
        int32_t pcrel = (int32_t)(0x1000 - (0x2000 + (int32_t)fo + 8));
        memcpy(sect + fo + 8, &pcrel, 4); /* pc_begin = 0x1000 + image */
        uint32_t range = 0x40;
        memcpy(sect + fo + 12, &range, 4);
        sect[fo + 16] = 0; /* augmentation data length */
        memcpy(sect + fo + 17, cases[c].prog, cases[c].n);
        unw_eh eh = {sect, fo + 4 + body, 0x2000, 0, UNW_ARCH_X86_64, NULL, NULL};
        unw_fde f;
        unw_cie ci;
        symd_err e = {0};
        unw_rows rows = {0};
        symd_status st = unw_eh_fde(&eh, fo, &f, &ci, &e);
        if (st == SYMD_OK)
            st = unw_eh_rows(&eh, &f, &ci, &rows, NULL, &e);
        CHECK(st == SYMD_E_CORRUPT && rows.n == 0 && strstr(e.msg, "0x18"),
              "%s: %d %s (%zu rows)", cases[c].what, st, e.msg, rows.n);
        unw_rows_free(&rows);
    }
    /* remember_state 100 deep */
    uint8_t deep[100];
    memset(deep, 0x0a, sizeof deep);
    (void)deep;
}

/* ---- the walker ---- */

/* A fake thread: stack words at [lo, lo + 8n), one image at base. */
typedef struct {
    uint64_t lo;
    uint64_t *words;
    size_t n;
    uint64_t base, size;
    const unw_table *rows;
    size_t reads;
} fake;

static bool fake_read(void *ctx, uint64_t addr, uint64_t *out)
{
    fake *f = ctx;
    f->reads++;
    if (addr < f->lo || (addr - f->lo) / 8 >= f->n || (addr & 7))
        return false;
    *out = f->words[(addr - f->lo) / 8];
    return true;
}

static bool fake_find(void *ctx, uint64_t addr, unw_module *m)
{
    fake *f = ctx;
    if (addr < f->base || addr - f->base >= f->size)
        return false;
    m->base = f->base, m->size = f->size, m->rows = f->rows;
    return true;
}

/* A stack full of code addresses: the scan takes one per frame, sp grows,
 * the walk ends within its bounds. A frame-pointer loop (fp pointing at
 * itself) and CFI whose CFA points backwards end by the stop rules. */
TEST(unwind_walker_hostile_stacks_end)
{
    built b;
    CHECK(build_file(root_path("fixtures/unwind/unwind-x86_64"), &b), "rows");
    uint64_t words[4096];
    for (size_t i = 0; i < 4096; i++)
        words[i] = 0x100000000ull + 0x5a5 + (i % 64); /* inside ext_sink..main */
    fake f = {0x7000000000ull, words, 4096, 0x100000000ull, 0x2000, &b.t, 0};
    unw_walker w = {.read = fake_read, .find = fake_find, .ctx = &f};
    unw_regs regs = {.arch = UNW_ARCH_X86_64};
    unw_regs_set(&regs, UNW_X86_RA, 0x1000009f0ull); /* fl_many: CFA = rsp+80 */
    unw_regs_set(&regs, UNW_X86_RSP, f.lo);
    unw_frame frames[UNW_MAX_FRAMES];
    size_t n;
    unw_stop why = unw_walk(&w, &regs, frames, UNW_MAX_FRAMES, &n);
    CHECK(n >= 2 && frames[1].trust == UNW_TRUST_CFI, "CFI first: %zu frames", n);
    for (size_t i = 1; i < n; i++)
        CHECK(frames[i].sp > frames[i - 1].sp, "sp grows at frame %zu", i);
    CHECK(n <= UNW_MAX_FRAMES && f.reads < 4 * UNW_SCAN_WORDS * UNW_MAX_FRAMES,
          "bounded: %zu frames (%s), %zu reads", n, unw_stop_name(why), f.reads);

    /* fp loop: rbp points at a record whose saved rbp is itself */
    memset(words, 0, sizeof words);
    words[0] = f.lo;
    words[1] = 0x100000600ull;
    fake g = {f.lo, words, 4096, 0x100000000ull, 0x2000, NULL, 0};
    unw_walker wg = {.read = fake_read, .find = fake_find, .ctx = &g};
    unw_regs r2 = {.arch = UNW_ARCH_X86_64};
    unw_regs_set(&r2, UNW_X86_RA, 0x100000600ull);
    unw_regs_set(&r2, UNW_X86_RSP, f.lo);
    unw_regs_set(&r2, UNW_X86_RBP, f.lo);
    why = unw_walk(&wg, &r2, frames, UNW_MAX_FRAMES, &n);
    CHECK(n == 2 && frames[1].trust == UNW_TRUST_FP && why != UNW_STOP_MAX_FRAMES,
          "fp loop ends: %zu frames, %s", n, unw_stop_name(why));

    /* pac: a signed return address on arm64 is stripped */
    CHECK(unw_pac_mask_for(0x19a000000ull) == 0x1ffffffffull, "mask for an address");
    built_free(&b);
}

/* The context frame uses the row of its own pc, callers the row of pc-1. */
TEST(unwind_walker_cfi_steps_arm64)
{
    built b;
    CHECK(build_file(root_path("fixtures/unwind/unwind-arm64"), &b), "rows");
    uint64_t words[64] = {0};
    uint64_t sp = 0x16f000000ull;
    /* main's frame (compact: CFA = fp+16, fp at CFA-16, lr at CFA-8) */
    words[2] = sp + 0x100;                  /* saved fp */
    words[3] = 0xa000000100000620ull;       /* signed return address into main */
    fake f = {sp, words, 64, 0x100000000ull, 0x1000, &b.t, 0};
    unw_walker w = {.read = fake_read, .find = fake_find, .ctx = &f};
    unw_regs regs = {.arch = UNW_ARCH_ARM64};
    unw_regs_set(&regs, UNW_A64_PC, 0x100000720ull); /* fr_one_saved */
    unw_regs_set(&regs, UNW_A64_SP, sp);
    unw_regs_set(&regs, UNW_A64_FP, sp + 0x10);
    unw_regs_set(&regs, UNW_A64_LR, 0x100000700ull);
    unw_frame fr[8];
    size_t n;
    unw_walk(&w, &regs, fr, 8, &n);
    CHECK(n >= 2 && fr[1].trust == UNW_TRUST_CFI && fr[1].pc == 0x100000620ull &&
              fr[1].sp == sp + 0x20,
          "caller by CFI with PAC bits stripped: %zu frames, pc 0x%llx sp 0x%llx", n,
          n > 1 ? (unsigned long long)fr[1].pc : 0ull, n > 1 ? (unsigned long long)fr[1].sp : 0ull);
    built_free(&b);
}

/* A stored table survives its own checks; damaged headers do not. */
TEST(unwind_table_checks_its_blob)
{
    built b;
    CHECK(build_file(root_path("fixtures/unwind/unwind-arm64"), &b), "rows");
    unw_table t;
    symd_err e = {0};
    size_t bad = 0;
    for (size_t i = 0; i < b.len; i++) {
        uint8_t *c = malloc(b.len);
        memcpy(c, b.blob, b.len);
        c[i] ^= 0xff;
        if (unw_table_open(c, b.len, &t, &e) == SYMD_OK) {
            unw_row r;
            for (uint32_t k = 0; k < t.nrows; k++)
                unw_table_row(&t, k, &r);
        } else {
            bad++;
        }
        symd_err_clear(&e);
        free(c);
    }
    CHECK(bad > b.len / 4, "%zu of %zu flips refused", bad, b.len);
    for (size_t cut = 0; cut < b.len; cut++)
        CHECK(unw_table_open(b.blob, cut, &t, &e) != SYMD_OK, "cut at %zu refused", cut);
    built_free(&b);
}

static bool fake_function_start(void *ctx, uint64_t addr)
{
    (void)ctx;
    return addr == 0x100000600ull; /* a function's first byte */
}

/* What a scan takes for a return address: not the image's own load
 * address (its Mach-O header), not a function's first byte (a function
 * pointer), not a misaligned arm64 word; and a row applied to a scanned
 * frame must lead into known code like any other method. */
TEST(unwind_walker_scan_skips_what_is_no_return_address)
{
    uint64_t base = 0x100000000ull, sp = 0x16f000000ull;
    uint64_t words[16] = {
        base,               /* the image's header: dyld passes it around */
        base + 0x600,       /* main's first byte: a function pointer */
        base + 0x702,       /* not on an instruction (arm64) */
        base + 0x704,       /* a return address */
    };
    fake f = {sp, words, 16, base, 0x1000, NULL, 0};
    unw_walker w = {.read = fake_read, .find = fake_find, .ctx = &f,
                    .function_start = fake_function_start};
    unw_regs regs = {.arch = UNW_ARCH_ARM64};
    unw_regs_set(&regs, UNW_A64_PC, base + 0x800);
    unw_regs_set(&regs, UNW_A64_SP, sp);
    unw_frame fr[4];
    size_t n;
    unw_walk(&w, &regs, fr, 2, &n);
    CHECK(n == 2 && fr[1].trust == UNW_TRUST_SCAN && fr[1].pc == base + 0x704 && fr[1].sp == sp + 32,
          "scan: %zu frames, pc 0x%llx sp 0x%llx", n, n > 1 ? (unsigned long long)fr[1].pc : 0ull,
          n > 1 ? (unsigned long long)fr[1].sp : 0ull);
    /* without the callback, the function pointer is taken */
    w.function_start = NULL;
    unw_walk(&w, &regs, fr, 2, &n);
    CHECK(n == 2 && fr[1].pc == base + 0x600, "no callback: pc 0x%llx",
          n > 1 ? (unsigned long long)fr[1].pc : 0ull);

    /* CFI from a scanned frame into no image is not taken: x86_64, the
     * fixture's rows (fl_many: CFA = rsp+80, ra at CFA-8) applied to a
     * scanned return address whose row points at a word outside code */
    built b;
    CHECK(build_file(root_path("fixtures/unwind/unwind-x86_64"), &b), "rows");
    uint64_t st[64] = {0};
    st[0] = base + 0x9f1;          /* scanned: fl_many's row for its caller */
    st[1 + 9] = 0xdead0000ull;     /* what that row gives: no image's code */
    st[12] = base + 0x5a6;         /* a later word: a return address */
    fake g = {sp, st, 64, base, 0x2000, &b.t, 0};
    unw_walker wg = {.read = fake_read, .find = fake_find, .ctx = &g};
    unw_regs r = {.arch = UNW_ARCH_X86_64};
    unw_regs_set(&r, UNW_X86_RA, 0x7fff00001000ull); /* context pc in no image */
    unw_regs_set(&r, UNW_X86_RSP, sp);
    unw_frame fx[4];
    unw_walk(&wg, &r, fx, 3, &n);
    CHECK(n >= 2 && fx[1].trust == UNW_TRUST_SCAN && fx[1].pc == base + 0x9f1, "first scan: %zu", n);
    CHECK(n == 3 && fx[2].pc != 0xdead0000ull && fx[2].pc - base < 0x2000,
          "past a scanned frame: pc 0x%llx (%s)", n > 2 ? (unsigned long long)fx[2].pc : 0ull,
          n > 2 ? unw_trust_name(fx[2].trust) : "-");
    built_free(&b);
}

/* The symd command line: info, upload, atos (offline and from the store). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test.h"

/* Runs a shell command, returns its stdout (malloc'ed) and exit status. */
static char *run(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    if (!p) {
        *status = -1;
        return strdup("");
    }
    size_t cap = 4096, n = 0;
    char *out = malloc(cap);
    size_t r;
    while ((r = fread(out + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (cap - n < 1024)
            out = realloc(out, cap *= 2);
    }
    out[n] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

static const char *bin(void)
{
    const char *b = getenv("SYMD_BIN");
    return b ? b : "./symd";
}

TEST(cli_info_lists_slices)
{
    char cmd[1024];
    int st;
    snprintf(cmd, sizeof cmd, "%s info %s", bin(), root_path("fixtures/bin/bigapp-fat"));
    char *out = run(cmd, &st);
    CHECK(st == 0, "exit %d", st);
    CHECK(strstr(out, "fat, 2 slices") &&
              strstr(out, "arm64    4C4C4490-5555-3144-A17C-64A339EDE13A  executable") &&
              strstr(out, "x86_64   4C4C4449-5555-3144-A163-BC5324B3F7D1  executable") &&
              strstr(out, "24 symbols  24 functions"),
          "info output:\n%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s info %s 2>&1", bin(), root_path("README.md"));
    out = run(cmd, &st);
    CHECK(st != 0 && strstr(out, "not a Mach-O file"), "non-Mach-O: %d %s", st, out);
    free(out);
}

/* atos -o FILE answers like atos, and agrees with llvm-symbolizer's sample. */
TEST(cli_atos_offline_and_from_the_store)
{
    if (skip_on_pg("the CLI on a SQLite file (--db FILE): the release suite runs it"))
        return;
    char cmd[2048];
    int st;
    /* interpret+4, compute_total+0 and _ZNK2ns3BoxIiE3getEv+4 (demangled, as
     * atos shows it) of bigapp-arm64 (fixtures/expected), loaded at
     * 0x104a38000; then an address past __text. */
    snprintf(cmd, sizeof cmd,
             "%s atos -o %s -arch arm64 -l 0x104a38000 0x104a38884 0x104a38a04 0x104a38ca4 "
             "0x104a3c000",
             bin(), root_path("fixtures/bin/bigapp-fat"));
    char *out = run(cmd, &st);
    CHECK(st == 0 && strcmp(out, "interpret (in bigapp-fat) + 4\n"
                                 "compute_total (in bigapp-fat) + 0\n"
                                 "ns::Box<int>::get() const (in bigapp-fat) + 4\n"
                                 "0x104a3c000 (in bigapp-fat)\n") == 0,
          "atos file: %d\n%s", st, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s atos -o %s 0x1000 2>&1", bin(),
             root_path("fixtures/bin/bigapp-fat"));
    out = run(cmd, &st);
    CHECK(st != 0 && strstr(out, "-arch"), "fat without -arch: %s", out);
    free(out);

    char db[600];
    snprintf(db, sizeof db, "%s/cli.db", test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s upload --db %s %s %s", bin(), db,
             root_path("fixtures/bin/bigapp-fat"), root_path("fixtures/bin/libfix-arm64.dylib"));
    out = run(cmd, &st);
    CHECK(st == 0 && strstr(out, "created 4C4C4490-5555-3144-A17C-64A339EDE13A arm64 bigapp-fat") &&
              strstr(out, "created 4C4C4448-5555-3144-A188-0C3B883681D9 arm64 libfix.dylib"),
          "upload: %d\n%s", st, out);
    free(out);
    out = run(cmd, &st);
    CHECK(st == 0 && strstr(out, "exists 4C4C4490"), "re-upload: %s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s upload --db %s %s 2>&1", bin(), db, root_path("README.md"));
    out = run(cmd, &st);
    CHECK(st != 0 && strstr(out, "not_macho"), "upload junk: %d %s", st, out);
    free(out);

    /* The same question through the store, by UUID, with a slide. */
    snprintf(cmd, sizeof cmd, "%s atos --db %s -o 4c4c449055553144a17c64a339ede13a -s 0x4a38000 "
             "0x104a38884", bin(), db);
    out = run(cmd, &st);
    CHECK(st == 0 && strcmp(out, "interpret (in bigapp-fat) + 4\n") == 0, "atos uuid: %s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s atos --db %s -o 00000000000000000000000000000000 0x1 2>&1",
             bin(), db);
    out = run(cmd, &st);
    CHECK(st != 0 && strstr(out, "not uploaded"), "unknown uuid: %s", out);
    free(out);
}

/* atos -i through a dSYM: every inlined level, innermost first, with
 * file:line (llvm-symbolizer: mix at app.c:14 inlined into static_square at
 * app.c:20, see fixtures/expected/bigapp-arm64.dsym.lines.tsv). */
TEST(cli_atos_inline_levels_from_dsym)
{
    char cmd[1024];
    int st;
    snprintf(cmd, sizeof cmd,
             "%s atos -o %s -i 0x1000009f4 0x100000880 2>&1", bin(),
             root_path("fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64"));
    char *out = run(cmd, &st);
    CHECK(st == 0, "exit %d: %s", st, out);
    CHECK(strcmp(out, "mix (in bigapp-arm64) (app.c:14)\n"
                      "static_square (in bigapp-arm64) (app.c:20)\n"
                      "interpret (in bigapp-arm64) (app.c:39)\n") == 0,
          "atos -i said:\n%s", out);
    free(out);
}

/* symd upload takes zips too, with the zip limits from the environment. */
TEST(cli_upload_zips)
{
    if (skip_on_pg("the CLI on a SQLite file (--db FILE): the release suite runs it"))
        return;
    char cmd[2048], db[600];
    int st;
    snprintf(db, sizeof db, "%s/cli-zip.db", test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s upload --db %s %s 2>&1", bin(), db,
             root_path("fixtures/zip/dsym-nested.zip"));
    char *out = run(cmd, &st);
    CHECK(st == 0 && strstr(out, "created 4C4C4449-5555-3144-A163-BC5324B3F7D1 x86_64 bigapp ") &&
              strstr(out, "created 4C4C4448-5555-3144-A188-0C3B883681D9 arm64 libfix.dylib") &&
              strstr(out, "created 4C4C44DD-5555-3144-A17D-28F7A86CD2F7 arm64 bigapp5-arm64"),
          "upload nested zip: %d\n%s", st, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s upload --db %s %s 2>&1", bin(), db,
             root_path("fixtures/zip/truncated.zip"));
    out = run(cmd, &st);
    CHECK(st == 1 && strstr(out, "(malformed_zip)"), "truncated zip: %d %s", st, out);
    free(out);
    snprintf(cmd, sizeof cmd, "SYMD_MAX_ZIP_MEMBERS=100 %s upload --db %s %s 2>&1", bin(), db,
             root_path("fixtures/zip/many.zip"));
    out = run(cmd, &st);
    CHECK(st == 1 && strstr(out, "200 entries (limit 100)") && strstr(out, "(too_large)"),
          "many members: %d %s", st, out);
    free(out);
    snprintf(cmd, sizeof cmd, "SYMD_MAX_UNZIPPED=1000000 %s upload --db %s %s 2>&1", bin(), db,
             root_path("fixtures/zip/bomb-bzip2.zip"));
    out = run(cmd, &st);
    CHECK(st == 1 && strstr(out, "(too_large)"), "bomb: %d %s", st, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s upload --db %s %s 2>&1", bin(), db,
             root_path("fixtures/zip/corrupt-macho.zip"));
    out = run(cmd, &st);
    CHECK(st == 1 && strstr(out, "zip member 'bad/bigapp'") && strstr(out, "(corrupt)"),
          "corrupt member: %d %s", st, out);
    free(out);
}

/* symd crash: a report symbolicated against the database, offline, in
 * Apple's text layout; unknown images keep the report's words. */
TEST(cli_crash_renders_a_symbolicated_report)
{
    if (skip_on_pg("the CLI on a SQLite file (--db FILE): the release suite runs it"))
        return;
    char cmd[2048], db[600];
    int st;
    snprintf(db, sizeof db, "%s/cli-crash.db", test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s upload --db %s %s %s %s 2>&1", bin(), db,
             root_path("fixtures/bin/bigapp-arm64"), root_path("fixtures/bin/libfix-arm64.dylib"),
             root_path("fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64"));
    char *out = run(cmd, &st);
    CHECK(st == 0, "upload: %s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s crash --db %s %s 2>&1", bin(), db,
             root_path("fixtures/crashes/bigapp-twin.ips"));
    out = run(cmd, &st);
    CHECK(st == 0 && strstr(out, " mix (app.c:14)\n") &&
              strstr(out, " static_square + 20 (app.c:20)\n") &&
              strstr(out, " fix_mul + 4") && strstr(out, "Binary Images:") &&
              strstr(out, "Triggered by Thread:"),
          "symd crash said (%d):\n%s", st, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s crash --db %s %s 2>&1", bin(), db,
             root_path("fixtures/bin/bigapp-arm64"));
    out = run(cmd, &st);
    CHECK(st == 1 && strstr(out, "not_a_crash_report"), "not a report: %d %s", st, out);
    free(out);
}

/* Swift names: atos prints the simplified form (as Apple's atos does), from
 * the dSYM with inlined levels and from the symbol table alone. */
TEST(cli_atos_swift_names_simplified)
{
    char cmd[1024];
    int st;
    snprintf(cmd, sizeof cmd, "%s atos -o %s -i 0x100000398 0x1000003e4 2>&1", bin(),
             root_path("fixtures/dsym/swifty-arm64.dSYM/Contents/Resources/DWARF/swifty-arm64"));
    char *out = run(cmd, &st);
    CHECK(st == 0 && strcmp(out, "specialized static CrashClass.pleaseCrash() (in swifty-arm64) "
                                 "(swifty.c:39)\n"
                                 "clamp(_:lo:hi:) (in swifty-arm64) (swifty.c:31)\n"
                                 "ContentView.body.getter (in swifty-arm64) (swifty.c:51)\n") == 0,
          "atos -i said (%d):\n%s", st, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s atos -o %s -l 0x1022c4000 0x1022c443c 2>&1", bin(),
             root_path("fixtures/bin/swifty-arm64"));
    out = run(cmd, &st);
    CHECK(st == 0 && strcmp(out, "closure #1 in Model.load(_:) (in swifty-arm64) + 60\n") == 0,
          "atos said (%d):\n%s", st, out);
    free(out);
}

/* symd demangle: one line out per line in, like c++filt; Swift in either
 * style, C++ and Rust through the existing demanglers, one leading '_' of
 * a symbol-table name taken off when that is what makes it demangle,
 * anything else echoed; a bad style is a usage error. */
TEST(cli_demangle_filters_lines)
{
    char path[600];
    snprintf(path, sizeof path, "%s/names.txt", test_tmpdir());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (!f)
        return;
    fputs("$s13AnotherTarget13CrashingClassC5crashyyFZTo\n"
          "_$s6Swifty5ModelC4loadyySSKFyycfU_\n"
          "_ZN2ns5twiceEi\n"
          "__ZN2ns5twiceEi\n"
          "_RNvCs1234_7mycrate3foo\n"
          "-[Cart checkout:]\n"
          "\n"
          "not a symbol at all\n"
          "$s6Swifty5clamp_2lo2hiS2i_S2itF",
          f); /* the last line without its newline */
    fclose(f);
    char cmd[1024];
    int st;
    snprintf(cmd, sizeof cmd, "%s demangle < %s", bin(), path);
    char *out = run(cmd, &st);
    CHECK(st == 0 && strcmp(out, "@objc static CrashingClass.crash()\n"
                                 "closure #1 in Model.load(_:)\n"
                                 "ns::twice(int)\n"
                                 "ns::twice(int)\n"
                                 "mycrate::foo\n"
                                 "-[Cart checkout:]\n"
                                 "\n"
                                 "not a symbol at all\n"
                                 "clamp(_:lo:hi:)\n") == 0,
          "demangle said (%d):\n%s", st, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s demangle --style full < %s", bin(), path);
    out = run(cmd, &st);
    CHECK(st == 0 && strncmp(out, "@objc static AnotherTarget.CrashingClass.crash() -> ()\n"
                                  "closure #1 () -> () in Swifty.Model.load(Swift.String) throws "
                                  "-> ()\nns::twice(int)\n", 125) == 0,
          "demangle --style full said (%d):\n%s", st, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s demangle --style pretty < %s 2>&1", bin(), path);
    out = run(cmd, &st);
    CHECK(st == 2 && strstr(out, "usage: symd demangle"), "bad style: %d %s", st, out);
    free(out);
}

/* symd upload --url's walker and recogniser (client/walk.c) on the
 * fixtures: UUIDs and arches against llvm-dwarfdump's listings, dSYM
 * companions by their file type, zips by their members, an .xcarchive
 * laid out as Xcode writes one, links, DeviceSupport folders refused. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../client/walk.h"
#include "../util/hex.h"
#include "fixture_util.h"
#include "test.h"

/* Whether f's items are exactly the (uuid, arch) of the .uuid listing. */
static void check_items(const up_file *f, const char *uuid_rel, bool debug_info)
{
    fixture_slice want[8];
    int n = load_uuids(uuid_rel, want, 8);
    CHECK(n > 0, "%s unreadable", uuid_rel);
    CHECK((int)f->nitems == n, "%s: %zu items, want %d", f->path, f->nitems, n);
    for (int i = 0; i < n && i < (int)f->nitems; i++) {
        bool found = false;
        for (size_t k = 0; k < f->nitems; k++) {
            char u[37];
            uuid_format(f->items[k].uuid, u);
            if (strcmp(u, want[i].uuid) == 0 && strcmp(f->items[k].arch, want[i].arch) == 0) {
                found = true;
                CHECK(f->items[k].debug_info == debug_info, "%s %s: debug_info %d", f->path, u,
                      f->items[k].debug_info);
            }
        }
        CHECK(found, "%s: no item %s %s", f->path, want[i].uuid, want[i].arch);
    }
}

TEST(upload_recognises_fat_binary_and_dsym_companion)
{
    up_file f = {0};
    CHECK(up_recognise(root_path("fixtures/bin/bigapp-fat"), &f), "fat not recognised");
    CHECK(f.kind == UP_MACHO, "kind %d", f.kind);
    f.path = "bigapp-fat";
    check_items(&f, "fixtures/expected/bigapp-fat.uuid", false);
    free(f.items);

    up_file d = {0};
    CHECK(up_recognise(root_path("fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/"
                                 "bigapp-arm64"),
                       &d),
          "dSYM not recognised");
    CHECK(d.kind == UP_MACHO, "kind %d", d.kind);
    d.path = "bigapp-arm64 dSYM";
    check_items(&d, "fixtures/expected/bigapp-arm64.dSYM.uuid", true);
    free(d.items);
}

TEST(upload_recognises_zip_members_and_passes_over_object_files)
{
    up_file z = {0};
    CHECK(up_recognise(root_path("fixtures/zip/dsym-single.zip"), &z), "zip not recognised");
    CHECK(z.kind == UP_ZIP, "kind %d (%s)", z.kind, z.err);
    z.path = "dsym-single.zip";
    check_items(&z, "fixtures/expected/bigapp-arm64.dSYM.uuid", true);
    free(z.items);

    up_file o = {0};
    CHECK(!up_recognise(root_path("fixtures/bin/obj32-fat.o"), &o), "an object file is no image");
    CHECK(strstr(o.err, "object file") != NULL, "err '%s'", o.err);
    free(o.items);

    up_file t = {0}; /* not a zip, Mach-O or .sym at all */
    CHECK(!up_recognise(root_path("fixtures/expected/bigapp-fat.uuid"), &t), "text recognised");
    CHECK(t.nitems == 0, "items from text");

    up_file b = {0}; /* a zip cut in half: refused, with the reason */
    CHECK(up_recognise(root_path("fixtures/zip/truncated.zip"), &b), "bad zip not listed");
    CHECK(b.kind == UP_REFUSED && strstr(b.err, "malformed zip"), "truncated zip kind %d: %s",
          b.kind, b.err);
}

/* A zip's (uuid, arch, debug_info), in any order, are exactly want's. */
static void check_zip(const char *rel, const char *const want[][3], size_t n)
{
    up_file z = {0};
    CHECK(up_recognise(root_path(rel), &z) && z.kind == UP_ZIP, "%s: kind %d %s", rel, z.kind,
          z.err);
    CHECK(z.nitems == n, "%s: %zu items, want %zu", rel, z.nitems, n);
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t k = 0; k < z.nitems; k++) {
            char u[37];
            uuid_format(z.items[k].uuid, u);
            found |= strcmp(u, want[i][0]) == 0 && strcmp(z.items[k].arch, want[i][1]) == 0 &&
                     z.items[k].debug_info == (want[i][2][0] == 'd');
        }
        CHECK(found, "%s: no item %s %s %s", rel, want[i][0], want[i][1], want[i][2]);
    }
    free(z.items);
}

/* Members are read by their first bytes and load commands, streamed: a
 * fat member's second slice is reached by inflating past the first; a
 * Java class file (0xcafebabe like a fat file), plists, YAML and links are
 * passed over (fixtures/README.md says what each zip holds). */
TEST(upload_recognises_zip_members_streamed)
{
    const char *const nested[][3] = {{"4C4C4449-5555-3144-A163-BC5324B3F7D1", "x86_64", "dsym"},
                                     {"4C4C4448-5555-3144-A188-0C3B883681D9", "arm64", "binary"},
                                     {"4C4C44DD-5555-3144-A17D-28F7A86CD2F7", "arm64", "dsym"}};
    check_zip("fixtures/zip/dsym-nested.zip", nested, 3);
    const char *const mixed[][3] = {{"4C4C4449-5555-3144-A163-BC5324B3F7D1", "x86_64", "binary"},
                                    {"4C4C4490-5555-3144-A17C-64A339EDE13A", "arm64", "binary"},
                                    {"4C4C4417-5555-3144-A181-03D8CACDAC00", "x86_64", "binary"},
                                    {"4C4C44DD-5555-3144-A17D-28F7A86CD2F7", "arm64", "dsym"}};
    check_zip("fixtures/zip/mixed.zip", mixed, 4);
}

static void copy(const char *from, const char *to)
{
    size_t len;
    uint8_t *buf = read_file(from, &len);
    CHECK(buf != NULL, "cannot read %s", from);
    FILE *f = fopen(to, "wb");
    CHECK(f != NULL, "cannot write %s", to);
    if (f && buf)
        fwrite(buf, 1, len, f);
    if (f)
        fclose(f);
    free(buf);
}

static void write_text(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (f) {
        fputs(s, f);
        fclose(f);
    }
}

static const up_file *find(const up_list *l, const char *suffix)
{
    size_t sl = strlen(suffix);
    for (size_t i = 0; i < l->n; i++) {
        size_t pl = strlen(l->files[i].path);
        if (pl >= sl && strcmp(l->files[i].path + pl - sl, suffix) == 0)
            return &l->files[i];
    }
    return NULL;
}

TEST(upload_walks_an_xcarchive_links_once_devicesupport_refused)
{
    char root[512], p[1024];
    snprintf(root, sizeof root, "%s/walk/App.xcarchive", test_tmpdir());
    const char *dirs[] = {"", "/Products", "/Products/Applications",
                          "/Products/Applications/App.app",
                          "/Products/Applications/App.app/Frameworks",
                          "/Products/Applications/App.app/Frameworks/Lib.framework",
                          "/dSYMs", "/dSYMs/App.app.dSYM", "/dSYMs/App.app.dSYM/Contents",
                          "/dSYMs/App.app.dSYM/Contents/Resources",
                          "/dSYMs/App.app.dSYM/Contents/Resources/DWARF", "/Symbols"};
    snprintf(p, sizeof p, "%s/walk", test_tmpdir());
    mkdir(p, 0755);
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(p, sizeof p, "%s%s", root, dirs[i]);
        CHECK(mkdir(p, 0755) == 0, "mkdir %s", p);
    }
    snprintf(p, sizeof p, "%s/Products/Applications/App.app/App", root);
    copy(root_path("fixtures/bin/bigapp-fat"), p);
    snprintf(p, sizeof p, "%s/Products/Applications/App.app/Info.plist", root);
    write_text(p, "<?xml version=\"1.0\"?><plist><dict/></plist>\n");
    snprintf(p, sizeof p, "%s/Products/Applications/App.app/Frameworks/Lib.framework/Lib", root);
    copy(root_path("fixtures/bin/libfix-arm64.dylib"), p);
    snprintf(p, sizeof p, "%s/Products/Applications/App.app/Frameworks/Lib.framework/Current",
             root); /* a link to a folder: not followed (it would loop) */
    CHECK(symlink(".", p) == 0, "symlink");
    snprintf(p, sizeof p, "%s/Products/Applications/App.app/Frameworks/Lib.framework/Alias",
             root); /* a link to a file already listed: once */
    CHECK(symlink("Lib", p) == 0, "symlink");
    snprintf(p, sizeof p, "%s/dSYMs/App.app.dSYM/Contents/Resources/DWARF/App", root);
    copy(root_path("fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64"), p);
    snprintf(p, sizeof p, "%s/dSYMs/App.app.dSYM/Contents/Resources/DWARF/app.o", root);
    copy(root_path("fixtures/bin/obj32-armv7.o"), p);
    snprintf(p, sizeof p, "%s/dSYMs/Lib.sym", root);
    write_text(p, "MODULE mac arm64 4C4C44485555314 4A1880C3B883681D90 Lib\n"); /* bad id */
    snprintf(p, sizeof p, "%s/dSYMs/Other.sym", root);
    write_text(p, "MODULE ios arm64 4C4C44485555314 4A1880C3B883681D9\n");
    snprintf(p, sizeof p, "%s/dSYMs/Good.sym", root);
    write_text(p, "MODULE mac arm64 4C4C44485555314AA1880C3B883681D90 Good\nFUNC 0 4 0 f\n");
    /* a DeviceSupport folder inside */
    snprintf(p, sizeof p, "%s/Symbols/16.0 (20A362)", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/Symbols/16.0 (20A362)/Symbols", root);
    mkdir(p, 0755);

    char notes[600];
    snprintf(notes, sizeof notes, "%s/Products/Applications/App.app/Info.plist", root);
    const char *paths[] = {notes, root};
    up_list l;
    up_walk(paths, 2, &l);
    const up_file *app = find(&l, "App.app/App"), *lib = find(&l, "Lib.framework/Lib"),
                  *dsym = find(&l, "DWARF/App"), *good = find(&l, "Good.sym"),
                  *bad = find(&l, "Lib.sym"), *ds = find(&l, "16.0 (20A362)"),
                  *plist = find(&l, "Info.plist");
    CHECK(app && app->kind == UP_MACHO && app->nitems == 2, "the app's binary");
    CHECK(lib && lib->kind == UP_MACHO && lib->nitems == 1, "the framework's binary");
    CHECK(dsym && dsym->kind == UP_MACHO && dsym->nitems == 1 && dsym->items[0].debug_info,
          "the dSYM's companion");
    CHECK(good && good->kind == UP_SYM && good->nitems == 1 &&
              strcmp(good->items[0].arch, "arm64") == 0,
          "the .sym");
    if (good) {
        char u[37];
        uuid_format(good->items[0].uuid, u);
        CHECK(strcmp(u, "4C4C4448-5555-314A-A188-0C3B883681D9") == 0, "sym uuid %s", u);
    }
    CHECK(bad && bad->kind == UP_REFUSED && strstr(bad->err, "debug id"), "a bad MODULE line");
    CHECK(ds && ds->kind == UP_REFUSED && strstr(ds->err, "symd import"),
          "a DeviceSupport folder refused, naming symd import");
    CHECK(plist && plist->kind == UP_REFUSED, "a file named on the command line that is no image");
    CHECK(!find(&l, "Alias") && !find(&l, "Current/Lib") && !find(&l, "app.o"),
          "links listed twice, or an object file listed");
    /* Info.plist, named first, is refused and not met again in the walk;
     * the object file is ignored */
    CHECK(l.n == 8, "%zu files listed", l.n);
    CHECK(l.ignored == 1, "%zu ignored", l.ignored);
    up_list_free(&l);
}

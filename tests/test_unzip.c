/* ingest/unzip.c and ingest_add_upload: zip archives of dSYMs and binaries,
 * against the UUIDs llvm-dwarfdump gives for their members, and every
 * hostile archive of fixtures/zip. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../ingest/ingest.h"
#include "../ingest/unzip.h"
#include "../util/hex.h"
#include "../util/sha256.h"
#include "../util/util.h"
#include "fixture_util.h"
#include "test.h"

static const unzip_limits defaults = {UNZIP_DEFAULT_MAX_MEMBERS, UNZIP_DEFAULT_MAX_TOTAL,
                                      UNZIP_DEFAULT_MAX_MEMBER, UNZIP_DEFAULT_MAX_RATIO, NULL,
                                      UNZIP_DEFAULT_SPILL_AT};

typedef struct {
    char name[32][160];
    size_t len[32];
    size_t n;
} member_list;

static symd_status list_member(void *ctx, const char *name, const uint8_t *data, size_t len,
                               symd_err *err)
{
    (void)data;
    (void)err;
    member_list *l = ctx;
    if (l->n < 32) {
        snprintf(l->name[l->n], sizeof l->name[0], "%s", name);
        l->len[l->n] = len;
    }
    l->n++;
    return SYMD_OK;
}

static bool listed(const member_list *l, const char *name)
{
    for (size_t i = 0; i < l->n && i < 32; i++)
        if (strcmp(l->name[i], name) == 0)
            return true;
    return false;
}

/* Ingests a fixture zip into b (which may already hold slices). */
static symd_status upload_zip(ingest_batch *b, const char *zip, const unzip_limits *lim,
                              ingest_upload_info *info, symd_err *err)
{
    char rel[256];
    snprintf(rel, sizeof rel, "fixtures/zip/%s", zip);
    size_t len;
    uint8_t *buf = read_fixture(rel, &len);
    if (!buf)
        return SYMD_E_IO;
    symd_status st = ingest_add_upload(b, buf, len, zip, lim, info, err);
    free(buf);
    return st;
}

/* The batch holds exactly the slices the listed .uuid files name (one
 * (UUID, arch) each, whatever the file), and their kinds and names. */
typedef struct {
    const char *uuid_file; /* under fixtures/expected; NULL ends */
    const char *name, *kind;
} want_file;

static void check_batch(const char *zip, const ingest_batch *b, const want_file *want)
{
    fixture_slice all[32];
    const char *names[32], *kinds[32];
    int n = 0;
    for (const want_file *w = want; w->uuid_file; w++) {
        char rel[256];
        snprintf(rel, sizeof rel, "fixtures/expected/%s", w->uuid_file);
        int k = load_uuids(rel, all + n, 32 - n);
        CHECK(k > 0, "%s: no UUIDs in %s", zip, rel);
        for (int i = 0; i < k; i++) {
            names[n + i] = w->name;
            kinds[n + i] = w->kind;
        }
        n += k > 0 ? k : 0;
    }
    CHECK(b->n == (size_t)n, "%s: %zu slices in the batch, %d expected", zip, b->n, n);
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (size_t j = 0; j < b->n; j++) {
            char u[37];
            uuid_format(b->puts[j].meta.uuid, u);
            if (strcmp(u, all[i].uuid) != 0 || strcmp(b->puts[j].meta.arch, all[i].arch) != 0)
                continue;
            found = true;
            CHECK(strcmp(b->puts[j].meta.name, names[i]) == 0, "%s: %s %s named %s, want %s",
                  zip, u, all[i].arch, b->puts[j].meta.name, names[i]);
            CHECK(strcmp(b->puts[j].meta.kind, kinds[i]) == 0, "%s: %s %s kind %s, want %s",
                  zip, u, all[i].arch, b->puts[j].meta.kind, kinds[i]);
        }
        CHECK(found, "%s: %s (%s) not in the batch", zip, all[i].uuid, all[i].arch);
    }
}

TEST(unzip_recognizes_zips_by_content)
{
    static const uint8_t local[] = "PK\3\4rest", empty[] = "PK\5\6", split[] = "PK\7\x8",
                         macho[] = {0xcf, 0xfa, 0xed, 0xfe}, fat[] = {0xca, 0xfe, 0xba, 0xbe},
                         other[] = "PK\1\2";
    CHECK(unzip_is_zip(local, 4) && unzip_is_zip(empty, 4) && unzip_is_zip(split, 4),
          "zip signatures");
    CHECK(!unzip_is_zip(macho, 4) && !unzip_is_zip(fat, 4) && !unzip_is_zip(other, 4) &&
              !unzip_is_zip(local, 3) && !unzip_is_zip(NULL, 0),
          "not zips");
}

TEST(unzip_single_dsym)
{
    ingest_batch b;
    ingest_batch_init(&b);
    ingest_upload_info info;
    symd_err err = {0};
    CHECK(upload_zip(&b, "dsym-single.zip", NULL, &info, &err) == SYMD_OK, "%s", err.msg);
    CHECK(info.zip && info.members == 2 && info.macho == 1,
          "zip %d, %zu members, %zu Mach-O (Info.plist skipped)", info.zip, info.members,
          info.macho);
    check_batch("dsym-single.zip", &b,
                (const want_file[]){{"bigapp-arm64.dSYM.uuid", "bigapp-arm64", "dsym"},
                                    {NULL, NULL, NULL}});
    ingest_batch_free(&b);
}

TEST(unzip_nested_dsyms_skip_plists_folders_and_links)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/zip/dsym-nested.zip", &len);
    if (!buf)
        return;
    member_list l = {0};
    symd_err err = {0};
    CHECK(unzip_each(buf, len, &defaults, list_member, &l, &err) == SYMD_OK, "%s", err.msg);
    const char *e = "Embedded.app.dSYM/";
    char p[256];
    CHECK(l.n == 7, "7 file members handed out, got %zu", l.n);
    snprintf(p, sizeof p, "%sbigapp.app.dSYM/Contents/Resources/DWARF/bigapp", e);
    CHECK(listed(&l, p), "%s", p);
    snprintf(p, sizeof p, "%sFrameworks/libfix.framework.dSYM/Contents/Resources/DWARF/libfix", e);
    CHECK(listed(&l, p), "%s", p);
    snprintf(p, sizeof p, "%sbigapp.app.dSYM/Contents/Info.plist", e);
    CHECK(listed(&l, p), "the plist is a member (ingest skips it)");
    snprintf(p, sizeof p, "%sCurrent", e);
    CHECK(!listed(&l, p), "the symlink is not handed out");
    for (size_t i = 0; i < l.n && i < 32; i++)
        CHECK(l.name[i][strlen(l.name[i]) - 1] != '/', "folder %s handed out", l.name[i]);
    free(buf);

    ingest_batch b;
    ingest_batch_init(&b);
    ingest_upload_info info;
    CHECK(upload_zip(&b, "dsym-nested.zip", NULL, &info, &err) == SYMD_OK, "%s", err.msg);
    CHECK(info.members == 7 && info.macho == 3, "%zu members, %zu Mach-O", info.members,
          info.macho);
    check_batch("dsym-nested.zip", &b,
                (const want_file[]){{"bigapp-x86_64.dSYM.uuid", "bigapp", "dsym"},
                                    {"libfix-arm64.dylib.uuid", "libfix.dylib", "dylib"},
                                    {"bigapp5-arm64.dSYM.uuid", "bigapp5-arm64", "dsym"},
                                    {NULL, NULL, NULL}});
    ingest_batch_free(&b);
}

TEST(unzip_mixed_binaries_and_dsyms)
{
    ingest_batch b;
    ingest_batch_init(&b);
    ingest_upload_info info;
    symd_err err = {0};
    CHECK(upload_zip(&b, "mixed.zip", NULL, &info, &err) == SYMD_OK, "%s", err.msg);
    /* README.txt, Info.plist, the YAML and the Java class file are skipped. */
    CHECK(info.members == 7 && info.macho == 3, "%zu members, %zu Mach-O", info.members,
          info.macho);
    check_batch("mixed.zip", &b,
                (const want_file[]){{"bigapp-fat.uuid", "bigapp-fat", "executable"},
                                    {"libfix-x86_64.dylib.uuid", "libfix.dylib", "dylib"},
                                    {"bigapp5-arm64.dSYM.uuid", "bigapp5-arm64", "dsym"},
                                    {NULL, NULL, NULL}});
    ingest_batch_free(&b);
}

TEST(unzip_member_paths_are_only_names)
{
    ingest_batch b;
    ingest_batch_init(&b);
    ingest_upload_info info;
    symd_err err = {0};
    CHECK(upload_zip(&b, "paths.zip", NULL, &info, &err) == SYMD_OK, "%s", err.msg);
    check_batch("paths.zip", &b,
                (const want_file[]){{"strippy-arm64-stripped.uuid", "x", "executable"},
                                    {"libfix-x86_64.dylib.uuid", "libfix.dylib", "dylib"},
                                    {NULL, NULL, NULL}});
    ingest_batch_free(&b);
}

/* Every hostile archive: its status, who is blamed, and a batch that already
 * held a file keeps exactly that file. */
TEST(unzip_hostile_archives_leave_the_batch_alone)
{
    const unzip_limits small = {100, 4000000, 4000000, 0, NULL, 0};
    static const struct {
        const char *zip;
        bool small_limits;
        symd_status want;
        bool zip_corrupt;
        const char *msg; /* a substring of the message */
    } cases[] = {
        {"bomb.zip", true, SYMD_E_TOO_LARGE, false, "inflates to more than 4000000 bytes"},
        {"bomb-bzip2.zip", true, SYMD_E_TOO_LARGE, false, "zeros.bin"},
        /* 324 bytes that inflate to 256 MiB: under the default byte limits,
         * refused by the ratio limit at its 64 MiB floor. */
        {"bomb-bzip2.zip", false, SYMD_E_TOO_LARGE, false,
         "inflates to more than 67108864 bytes"},
        {"many.zip", true, SYMD_E_TOO_LARGE, false, "200 entries (limit 100)"},
        {"many.zip", false, SYMD_E_NOT_MACHO, false, "200 members"},
        {"truncated.zip", false, SYMD_E_CORRUPT, true, "truncated"},
        {"no-macho.zip", false, SYMD_E_NOT_MACHO, false, "holds no Mach-O"},
        {"corrupt-macho.zip", false, SYMD_E_CORRUPT, false, "zip member 'bad/bigapp'"},
        {"liar-small.zip", false, SYMD_E_CORRUPT, true, "declares 1000 bytes"},
        {"liar-huge.zip", false, SYMD_E_CORRUPT, true, "declares 4294967280 bytes"},
        {"encrypted.zip", false, SYMD_E_CORRUPT, true, "encrypted"},
        {"method97.zip", false, SYMD_E_CORRUPT, true, "compression method 97"},
        {"bad-crc.zip", false, SYMD_E_CORRUPT, true, "CRC"},
    };
    size_t blen;
    uint8_t *bin = read_fixture("fixtures/bin/bigapp-arm64", &blen);
    if (!bin)
        return;
    /* Each case twice: members on the heap as far as the limits go, and
     * every member past one byte inflated into a temporary file (the same
     * answers, the same messages). */
    for (size_t k = 0; k < 2 * (sizeof cases / sizeof cases[0]); k++) {
        size_t i = k / 2;
        unzip_limits lim = cases[i].small_limits ? small : unzip_default_limits();
        lim.spill_at = k % 2 ? 1 : UINT64_MAX;
        ingest_batch b;
        ingest_batch_init(&b);
        symd_err err = {0};
        CHECK(ingest_add_file(&b, bin, blen, "bigapp", &err) == SYMD_OK && b.n == 1, "seed");
        ingest_upload_info info;
        symd_status st = upload_zip(&b, cases[i].zip, &lim, &info, &err);
        CHECK(st == cases[i].want, "%s: %s (%s), want %s", cases[i].zip, symd_status_name(st),
              err.msg, symd_status_name(cases[i].want));
        CHECK(info.zip && info.zip_corrupt == cases[i].zip_corrupt,
              "%s: zip_corrupt %d, want %d", cases[i].zip, info.zip_corrupt,
              cases[i].zip_corrupt);
        CHECK(strstr(err.msg, cases[i].msg), "%s: message '%s' lacks '%s'", cases[i].zip,
              err.msg, cases[i].msg);
        CHECK(b.n == 1 && strcmp(b.puts[0].meta.name, "bigapp") == 0,
              "%s: batch holds %zu slices after the failure", cases[i].zip, b.n);
        ingest_batch_free(&b);
    }
    free(bin);
}

/* The limits count inflated bytes exactly: the archive's total, one byte
 * less, and the same for one member and for the entry count. */
TEST(unzip_limits_are_exact)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/zip/dsym-single.zip", &len);
    if (!buf)
        return;
    member_list l = {0};
    symd_err err = {0};
    CHECK(unzip_each(buf, len, &defaults, list_member, &l, &err) == SYMD_OK, "%s", err.msg);
    uint64_t total = 0, biggest = 0;
    for (size_t i = 0; i < l.n && i < 32; i++) {
        total += l.len[i];
        biggest = l.len[i] > biggest ? l.len[i] : biggest;
    }
    CHECK(total == 641 + 19092 && biggest == 19092, "members of %llu bytes",
          (unsigned long long)total);
    /* Folders count as entries: bigapp-arm64.dSYM/, Contents/, Resources/,
     * DWARF/, and the two files. */
    uint64_t entries = 6;
    struct {
        unzip_limits lim;
        symd_status want;
    } cases[] = {
        {{entries, total, biggest, 0, NULL, 0}, SYMD_OK},
        {{entries - 1, total, biggest, 0, NULL, 0}, SYMD_E_TOO_LARGE},
        {{entries, total - 1, biggest, 0, NULL, 0}, SYMD_E_TOO_LARGE},
        {{entries, total, biggest - 1, 0, NULL, 0}, SYMD_E_TOO_LARGE},
        {{entries, 0, 0, 0, NULL, 0}, SYMD_E_TOO_LARGE},
    };
    /* The same on the heap, in a temporary file from the first byte, from
     * the byte after the heap's, and exactly at the limit. */
    const uint64_t spills[] = {UINT64_MAX, 1, biggest - 1, biggest};
    for (size_t k = 0; k < sizeof spills / sizeof spills[0]; k++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            member_list m = {0};
            symd_err_clear(&err);
            unzip_limits lim = cases[i].lim;
            lim.spill_at = spills[k];
            symd_status st = unzip_each(buf, len, &lim, list_member, &m, &err);
            CHECK(st == cases[i].want, "spill at %" PRIu64 ", case %zu: %s (%s)", spills[k],
                  i, symd_status_name(st), err.msg);
            CHECK(st != SYMD_OK || (m.n == 2 && m.len[0] + m.len[1] == total),
                  "spill at %" PRIu64 ": %zu members", spills[k], m.n);
        }
    }
    free(buf);

    /* The liar that hides 1 MiB behind "1000 bytes" is caught while
     * inflating when the limit is lower. */
    ingest_batch b;
    ingest_batch_init(&b);
    ingest_upload_info info;
    const unzip_limits lim = {10, 1 << 20, (1 << 20) - 1, 0, NULL, 0};
    symd_err_clear(&err);
    CHECK(upload_zip(&b, "liar-small.zip", &lim, &info, &err) == SYMD_E_TOO_LARGE &&
              strstr(err.msg, "member"),
          "liar under the member limit: %s", err.msg);
    ingest_batch_free(&b);
}

/* The mapping of /proc/self/maps that holds p: its path (empty for an
 * anonymous one) into path; false when no mapping holds p. */
static bool mapping_of(const void *p, char *path, size_t size)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4352];
    bool found = false;
    path[0] = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        int at = 0;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %*s %*s %*s %n", &lo, &hi, &at) < 2 ||
            at == 0 || (uintptr_t)p < lo || (uintptr_t)p >= hi)
            continue;
        found = true;
        snprintf(path, size, "%.*s", (int)strcspn(line + at, "\n"), line + at);
    }
    if (f)
        fclose(f);
    return found;
}

/* What a member callback saw: its size, its bytes' hash, and whether they
 * were a mapped temporary file of unzip's. */
typedef struct {
    size_t n;
    size_t len[8];
    bool in_file[8];
    uint8_t sha[8][SHA256_LEN];
} member_places;

static bool is_unzip_temp_file(const char *path)
{
    char want[512];
    snprintf(want, sizeof want, "%s/symd-unzip-", temp_dir());
    return strncmp(path, want, strlen(want)) == 0 && strstr(path, " (deleted)");
}

static symd_status place_member(void *ctx, const char *name, const uint8_t *data, size_t len,
                                symd_err *err)
{
    (void)name;
    (void)err;
    member_places *m = ctx;
    if (m->n < 8) {
        char path[4096];
        m->len[m->n] = len;
        m->in_file[m->n] = mapping_of(data, path, sizeof path) && is_unzip_temp_file(path);
        sha256(data, len, m->sha[m->n]);
    }
    m->n++;
    return SYMD_OK;
}

/* Whether any unzip temporary file is still mapped. */
static bool unzip_files_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4352];
    bool any = false;
    while (f && fgets(line, sizeof line, f))
        any |= strstr(line, "/symd-unzip-") != NULL;
    if (f)
        fclose(f);
    return any;
}

/* A member past spill_at reaches the callback as an unlinked temporary
 * file mapped read-only (page cache, not heap: what keeps a server's memory
 * flat while a dSYM of hundreds of MB is read), with the same bytes; smaller
 * members stay on the heap; nothing stays mapped after the walk; and a
 * temporary folder that is not there is an I/O error that names it. */
TEST(unzip_large_members_are_mapped_from_a_temporary_file)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/zip/dsym-single.zip", &len);
    if (!buf)
        return;
    unzip_limits heap = unzip_default_limits(), spill = heap;
    spill.spill_at = 4096; /* the DWARF file (19092 bytes), not the plist (641) */
    member_places a = {0}, b = {0};
    symd_err err = {0};
    CHECK(unzip_each(buf, len, &heap, place_member, &a, &err) == SYMD_OK, "%s", err.msg);
    CHECK(unzip_each(buf, len, &spill, place_member, &b, &err) == SYMD_OK, "%s", err.msg);
    CHECK(a.n == 2 && b.n == 2, "%zu and %zu members", a.n, b.n);
    for (size_t i = 0; i < 2 && i < a.n && i < b.n; i++) {
        CHECK(!a.in_file[i], "member %zu (%zu bytes) on the heap by default", i, a.len[i]);
        CHECK(b.in_file[i] == (b.len[i] > 4096), "member %zu (%zu bytes): in a file %d", i,
              b.len[i], b.in_file[i]);
        CHECK(a.len[i] == b.len[i] && memcmp(a.sha[i], b.sha[i], SHA256_LEN) == 0,
              "member %zu: the same bytes either way", i);
    }
    CHECK(!unzip_files_mapped(), "no temporary file left mapped");

    /* ingest reads the mapped member as it reads the heap one */
    ingest_batch batch;
    ingest_batch_init(&batch);
    CHECK(upload_zip(&batch, "dsym-single.zip", &spill, NULL, &err) == SYMD_OK, "%s", err.msg);
    check_batch("dsym-single.zip (mapped)", &batch,
                (const want_file[]){{"bigapp-arm64.dSYM.uuid", "bigapp-arm64", "dsym"},
                                    {NULL, NULL, NULL}});
    ingest_batch_free(&batch);

    const char *was = getenv("TMPDIR");
    char *saved = was ? strdup(was) : NULL;
    setenv("TMPDIR", "/nonexistent/symd-test-tmp", 1);
    member_places c = {0};
    symd_err_clear(&err);
    symd_status st = unzip_each(buf, len, &spill, place_member, &c, &err);
    CHECK(st == SYMD_E_IO && strstr(err.msg, "no temporary file in /nonexistent/symd-test-tmp"),
          "no temporary folder: %s (%s)", symd_status_name(st), err.msg);
    if (saved)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(saved);
    free(buf);
}

/* A member callback's error stops the walk and comes back as is. */
static symd_status refuse(void *ctx, const char *name, const uint8_t *data, size_t len,
                          symd_err *err)
{
    (void)data;
    (void)len;
    (*(int *)ctx)++;
    return symd_fail(err, SYMD_E_INVALID, "refused %s", name);
}

TEST(unzip_callback_errors_stop_the_walk)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/zip/mixed.zip", &len);
    if (!buf)
        return;
    int calls = 0;
    symd_err err = {0};
    CHECK(unzip_each(buf, len, &defaults, refuse, &calls, &err) == SYMD_E_INVALID &&
              calls == 1 && strcmp(err.msg, "refused README.txt") == 0,
          "%d calls, %s", calls, err.msg);
    free(buf);
}

/* Every truncation and a sweep of byte flips of a real archive: a clean
 * answer each time (ASan watches the rest), nothing left in the batch on
 * failure. */
TEST(unzip_truncations_and_flips)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/zip/dsym-nested.zip", &len);
    if (!buf)
        return;
    const unzip_limits lim = {100, 1 << 20, 1 << 20, 0, NULL, 0};
    size_t runs = 0, bad = 0;
    for (size_t cut = 0; cut < len; cut += 61) {
        ingest_batch b;
        ingest_batch_init(&b);
        ingest_upload_info info;
        symd_err err = {0};
        symd_status st = ingest_add_upload(&b, buf, cut, "cut", &lim, &info, &err);
        bool ok = cut < 4 ? st == SYMD_E_NOT_MACHO
                          : st == SYMD_E_CORRUPT && info.zip_corrupt && b.n == 0;
        bad += !ok;
        CHECK(ok, "cut at %zu: %s (%s)", cut, symd_status_name(st), err.msg);
        ingest_batch_free(&b);
        runs++;
    }
    uint8_t *copy = malloc(len);
    for (size_t at = 0; at < len; at += 37) {
        memcpy(copy, buf, len);
        copy[at] ^= 0xff;
        ingest_batch b;
        ingest_batch_init(&b);
        symd_err err = {0};
        symd_status st = ingest_add_upload(&b, copy, len, "flip", &lim, NULL, &err);
        bool ok = st == SYMD_OK ? b.n > 0 : b.n == 0 && err.msg[0];
        bad += !ok;
        CHECK(ok, "flip at %zu: %s with %zu slices", at, symd_status_name(st), b.n);
        ingest_batch_free(&b);
        runs++;
    }
    free(copy);
    free(buf);
    printf("    %zu truncated or flipped archives, %zu answered wrongly\n", runs, bad);
}

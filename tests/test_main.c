/* Test runner: runs every registered test, prints "N passed, N failed". */
#include "test.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

/* Registered tests, grown as constructors register them: a fixed table
 * once dropped every test past its size without a word. */
static struct test_entry {
    const char *name, *file;
    test_fn fn;
} *tests;
static int ntests, cap_tests;
static int current_failures;
static const char *current_skipped;

int each_regression(const char *prefix,
                    void (*fn)(const char *rel, const uint8_t *buf, size_t len))
{
    DIR *d = opendir(root_path("fuzz/regress"));
    if (!d)
        return -1;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char rel[600];
        snprintf(rel, sizeof rel, "fuzz/regress/%s", e->d_name);
        size_t len;
        uint8_t *buf = read_fixture(rel, &len);
        if (!buf)
            continue;
        fn(rel, buf, len);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

void test_skip(const char *why)
{
    current_skipped = why;
}

/* The first directory of: $env, ../shared/<sub> beside the checkout,
 * /work/shared/<sub>; NULL when none exists. */
static const char *shared_dir(const char *env_name, const char *sub, char found[512])
{
    const char *env = getenv(env_name);
    char beside[600], work[600];
    snprintf(beside, sizeof beside, "%s", root_path("../shared"));
    snprintf(beside + strlen(beside), sizeof beside - strlen(beside), "/%s", sub);
    snprintf(work, sizeof work, "/work/shared/%s", sub);
    const char *cands[] = {env && *env ? env : NULL, beside, work};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        struct stat st;
        if (cands[i] && stat(cands[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            snprintf(found, 512, "%s", cands[i]);
            return found;
        }
    }
    return NULL;
}

const char *real_crashes_dir(void)
{
    static char found[512];
    return shared_dir("SYMD_REAL_CRASHES", "real-crashes", found);
}

const char *minidumps_dir(void)
{
    static char found[512];
    return shared_dir("SYMD_MINIDUMPS", "minidumps", found);
}

const char *reporters_dir(void)
{
    static char found[512];
    return shared_dir("SYMD_REPORTERS", "reporters", found);
}

const char *dyld_cache_dir(void)
{
    static char found[512];
    return shared_dir("SYMD_DYLD_CACHE", "dyld-cache", found);
}


const char *real_reports_dir(void)
{
    static char found[512];
    return shared_dir("SYMD_REAL_REPORTS", "real-reports", found);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int each_real_report(void (*fn)(const char *name, const uint8_t *buf, size_t len, void *ctx),
                     void *ctx)
{
    const char *dirs[2] = {real_crashes_dir(), real_reports_dir()};
    int n = 0;
    for (int k = 0; k < 2; k++) {
        DIR *d = dirs[k] ? opendir(dirs[k]) : NULL;
        if (!d)
            continue;
        char *names[512];
        size_t nn = 0;
        struct dirent *de;
        while ((de = readdir(d)) && nn < 512) {
            const char *dot = strrchr(de->d_name, '.');
            if (de->d_name[0] == '.' || (dot && (!strcmp(dot, ".md") || !strcmp(dot, ".tsv"))))
                continue;
            names[nn++] = strdup(de->d_name);
        }
        closedir(d);
        qsort(names, nn, sizeof *names, by_name);
        for (size_t i = 0; i < nn; i++) {
            char path[1200];
            snprintf(path, sizeof path, "%s/%s", dirs[k], names[i]);
            size_t len;
            uint8_t *buf = read_fixture(path, &len);
            if (buf) {
                fn(names[i], buf, len, ctx);
                n++;
            }
            free(buf);
            free(names[i]);
        }
    }
    return n;
}
unsigned long test_checks;

void test_register(const char *name, const char *file, test_fn fn)
{
    if (ntests == cap_tests) {
        int cap = cap_tests ? 2 * cap_tests : 256;
        struct test_entry *t = realloc(tests, (size_t)cap * sizeof *t);
        if (!t) {
            fprintf(stderr, "test runner: out of memory registering %s\n", name);
            exit(2);
        }
        tests = t;
        cap_tests = cap;
    }
    tests[ntests].name = name;
    tests[ntests].file = file;
    tests[ntests].fn = fn;
    ntests++;
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
    if (current_failures++ < 20) { /* enough to diagnose, not a flood */
        fprintf(stdout, "    %s:%d: ", file, line);
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stdout, fmt, ap);
        va_end(ap);
        fputc('\n', stdout);
    }
}

const char *root_path(const char *rel)
{
    /* per thread: tests that read fixtures from several threads at once
     * would otherwise get each other's paths */
    static __thread char bufs[8][4096];
    static __thread int k;
    const char *root = getenv("SYMD_ROOT");
    char *b = bufs[k++ % 8];
    if (rel[0] == '/') /* already absolute */
        snprintf(b, sizeof bufs[0], "%s", rel);
    else
        snprintf(b, sizeof bufs[0], "%s/%s", root && *root ? root : ".", rel);
    return b;
}

uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
        buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

uint8_t *read_fixture(const char *rel, size_t *len)
{
    const char *path = root_path(rel);
    uint8_t *buf = read_file(path, len);
    if (!buf)
        test_fail(__FILE__, __LINE__, "cannot read %s", path);
    return buf;
}

static char tmpdir[256];

const char *test_tmpdir(void)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/symd-tests-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return tmpdir;
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0, skipped = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < ntests; i++) {
        if (argc > 1) { /* run only tests whose name contains an argument */
            bool want = false;
            for (int a = 1; a < argc; a++)
                want |= strstr(tests[i].name, argv[a]) != NULL;
            if (!want)
                continue;
        }
        current_failures = 0;
        current_skipped = NULL;
        unsigned long before = test_checks;
        tests[i].fn();
        unsigned long checks = test_checks - before;
        if (current_skipped && current_failures == 0) {
            skipped++;
            printf("skip %-40s %s\n", tests[i].name, current_skipped);
        } else if (current_failures == 0 && checks > 0) {
            passed++;
            printf("ok   %-40s %lu checks\n", tests[i].name, checks);
        } else {
            failed++;
            printf("FAIL %-40s %d of %lu checks failed%s\n", tests[i].name,
                   current_failures, checks, checks ? "" : " (no checks ran)");
        }
    }
    if (tmpdir[0] && !getenv("SYMD_KEEP_TMP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    if (skipped)
        printf("%d skipped (absent data, or a backend the run is not on: see above)\n",
               skipped);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

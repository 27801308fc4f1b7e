/* A small test harness: TEST() registers, CHECK() records and goes on. */
#ifndef SYMD_TEST_H
#define SYMD_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef void (*test_fn)(void);
void test_register(const char *name, const char *file, test_fn fn);

#define TEST(name)                                                   \
    static void name(void);                                          \
    __attribute__((constructor)) static void register_##name(void)   \
    {                                                                \
        test_register(#name, __FILE__, name);                        \
    }                                                                \
    static void name(void)

void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
extern unsigned long test_checks;

#define CHECK(cond, ...)                                             \
    do {                                                             \
        test_checks++;                                               \
        if (!(cond))                                                 \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);              \
    } while (0)

/* ---- helpers shared by the test files ---- */

/* Whole file at path, NUL-terminated, malloc'ed; NULL when it cannot be read. */
uint8_t *read_file(const char *path, size_t *len);
/* read_file of root_path(rel); NULL and a failure when it cannot be read. */
uint8_t *read_fixture(const char *rel, size_t *len);
/* Path under the repository root (SYMD_ROOT or "."), in a static buffer
 * rotated among 8 slots per thread. */
const char *root_path(const char *rel);
/* A fresh temporary directory for this test run. */
const char *test_tmpdir(void);
/* Calls fn(path, bytes, len) for every fuzz/regress/<prefix>* input (the
 * inputs a fuzzer once crashed on); returns how many, -1 when the directory
 * is missing. */
int each_regression(const char *prefix,
                    void (*fn)(const char *rel, const uint8_t *buf, size_t len));
/* Marks the running test skipped (neither passed nor failed), saying why:
 * for data that lives outside the repository and may be absent. */
void test_skip(const char *why);
/* The real crash reports (the issue's ../shared/real-crashes): the
 * SYMD_REAL_CRASHES directory, else ../shared/real-crashes beside the
 * checkout, else /work/shared/real-crashes; NULL when none exists. */
const char *real_crashes_dir(void);
/* The real reports of every kind (the issue's ../shared/real-reports, with
 * its MANIFEST.tsv): SYMD_REAL_REPORTS, else ../shared/real-reports beside
 * the checkout, else /work/shared/real-reports; NULL when none exists. */
const char *real_reports_dir(void);
/* ../shared/reporters (SYMD_REPORTERS) and ../shared/dyld-cache
 * (SYMD_DYLD_CACHE), found the same way. */
const char *reporters_dir(void);
const char *dyld_cache_dir(void);
/* ../shared/minidumps (SYMD_MINIDUMPS): real dumps with their binaries,
 * dSYMs and Breakpad .sym files; NULL when absent. */
const char *minidumps_dir(void);
/* Calls fn(name, bytes, len, ctx) for every report file of real_crashes_dir()
 * and real_reports_dir() (READMEs and the manifest aside), in name order
 * within each; returns how many, 0 when neither exists. */
int each_real_report(void (*fn)(const char *name, const uint8_t *buf, size_t len, void *ctx),
                     void *ctx);

#endif

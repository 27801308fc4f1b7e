/* symd upload's hashing on threads (client/chunkhash.c): each chunk's and
 * each file's SHA-256 equal the one-shot hashes of the same bytes, for any
 * number of threads, files in one run, a last chunk cut short, a file of
 * exactly one chunk, of less, an empty one; a file that cannot be read or
 * is shorter than its walk found is named, the others hashed all the same. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../client/chunkhash.h"
#include "../util/sha256.h"
#include "test.h"

/* Writes the first n bytes of data to dir/name; the path in out. */
static bool write_prefix(const char *dir, const char *name, const uint8_t *data, size_t n,
                         char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", dir, name);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && (n == 0 || write(fd, data, n) == (ssize_t)n);
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Each chunk's and the whole file's hash of h's file i against the
 * one-shot hashes of data[0..n). */
static void check_file(chash *h, size_t i, const uint8_t *data, size_t n, size_t chunk,
                       const char *what)
{
    size_t want = n ? (n - 1) / chunk + 1 : 0;
    CHECK(chash_nchunks(h, i) == want, "%s: %zu chunks, want %zu", what, chash_nchunks(h, i),
          want);
    char why[256];
    for (size_t k = 0; k < want; k++) {
        uint8_t got[32], exp[32];
        size_t len = n - k * chunk < chunk ? n - k * chunk : chunk;
        sha256(data + k * chunk, len, exp);
        CHECK(chash_chunk(h, i, k, got, why, sizeof why), "%s chunk %zu: %s", what, k, why);
        CHECK(memcmp(got, exp, 32) == 0, "%s: chunk %zu's hash differs", what, k);
    }
    uint8_t got[32], exp[32];
    sha256(data, n, exp);
    CHECK(chash_whole(h, i, got, why, sizeof why), "%s whole: %s", what, why);
    CHECK(memcmp(got, exp, 32) == 0, "%s: the whole file's hash differs", what);
}

TEST(upload_hashes_chunks_on_threads_as_one_thread_would)
{
    size_t n;
    uint8_t *data = read_fixture("fixtures/bin/bigapp-fat", &n);
    if (!data)
        return;
    const size_t chunk = 4096;
    CHECK(n % chunk != 0 && n > 8 * chunk, "the fixture's %zu bytes end inside a chunk", n);
    /* the fixture, exactly one chunk, less than one, empty, exactly two */
    const size_t sizes[] = {n, chunk, 1000, 0, 2 * chunk};
    const char *names[] = {"whole", "one", "less", "empty", "two"};
    char paths[5][600];
    for (int i = 0; i < 5; i++)
        CHECK(write_prefix(test_tmpdir(), names[i], data, sizes[i], paths[i], sizeof paths[i]),
              "writing %s", names[i]);
    const char *p[5] = {paths[0], paths[1], paths[2], paths[3], paths[4]};
    uint64_t sz[5];
    for (int i = 0; i < 5; i++)
        sz[i] = sizes[i];
    const int threads[] = {1, 2, 3, 8};
    for (int t = 0; t < 4; t++) {
        chash *h = chash_start(p, sz, 5, chunk, threads[t]);
        CHECK(h != NULL, "chash_start");
        if (!h)
            break;
        for (int i = 0; i < 5; i++) {
            char what[64];
            snprintf(what, sizeof what, "%s, %d threads", names[i], threads[t]);
            check_file(h, (size_t)i, data, sizes[i], chunk, what);
        }
        chash_free(h);
    }
    /* a chunk size that is no power of two, the files asked last to first */
    chash *h = chash_start(p, sz, 5, 10000, 2);
    for (int i = 4; h && i >= 0; i--)
        check_file(h, (size_t)i, data, sizes[i], 10000, names[i]);
    chash_free(h);
    /* stopped before anything was asked: returns, nothing leaks */
    chash_free(chash_start(p, sz, 5, chunk, 4));
    free(data);
}

TEST(upload_hash_names_a_file_it_cannot_read)
{
    size_t n;
    uint8_t *data = read_fixture("fixtures/bin/bigapp-arm64", &n);
    if (!data)
        return;
    char good[600], shrunk[600], gone[600];
    CHECK(write_prefix(test_tmpdir(), "good", data, n, good, sizeof good), "good");
    CHECK(write_prefix(test_tmpdir(), "shrunk", data, 5000, shrunk, sizeof shrunk), "shrunk");
    snprintf(gone, sizeof gone, "%s/not-there", test_tmpdir());
    /* "shrunk" was 20000 bytes when walked, 5000 when hashed */
    const char *p[3] = {gone, shrunk, good};
    uint64_t sz[3] = {4096, 20000, n};
    for (int threads = 1; threads <= 2; threads++) {
        chash *h = chash_start(p, sz, 3, 4096, threads);
        CHECK(h != NULL, "chash_start");
        if (!h)
            break;
        uint8_t d[32];
        char why[256] = "";
        CHECK(!chash_chunk(h, 0, 0, d, why, sizeof why) && strstr(why, "cannot read it") &&
                  strstr(why, strerror(ENOENT)),
              "a missing file: '%s'", why);
        CHECK(!chash_whole(h, 0, d, why, sizeof why), "a missing file has no whole hash");
        /* its first chunk is there; one past the end of what is left is not */
        CHECK(chash_chunk(h, 1, 0, d, why, sizeof why) || strstr(why, "changed size"),
              "shrunk chunk 0: %s", why);
        why[0] = 0;
        CHECK(!chash_chunk(h, 1, 3, d, why, sizeof why) && strstr(why, "changed size"),
              "a file shorter than walked: '%s'", why);
        CHECK(!chash_whole(h, 1, d, why, sizeof why) && strstr(why, "changed size"),
              "its whole hash: '%s'", why);
        check_file(h, 2, data, n, 4096, "the file after them");
        chash_free(h);
    }
    free(data);
}

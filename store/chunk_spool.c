/* The SQLite store's chunk spool: chunk files beside the database, written
 * to a temporary name and renamed, so a chunk's name only ever holds its
 * whole bytes. */
#include "chunk_spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/util.h"
#include "../util/sha256.h"

#define TEMP_PREFIX ".tmp-"

bool chunk_spool_init(chunk_spool *sp, const char *db_path)
{
    int n = snprintf(sp->dir, sizeof sp->dir, "%s.chunks", db_path);
    return n > 0 && (size_t)n < sizeof sp->dir;
}

/* <dir>/<hex of hash> into out. */
static void chunk_path(const chunk_spool *sp, const uint8_t hash[32],
                       char out[CHUNK_SPOOL_PATH_MAX])
{
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(hash, hex);
    snprintf(out, CHUNK_SPOOL_PATH_MAX, "%s/%s", sp->dir, hex);
}

int chunk_spool_open_temp(const chunk_spool *sp, const uint8_t hash[32], uint64_t len,
                          char tmp[CHUNK_SPOOL_PATH_MAX])
{
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(hash, hex);
    /* a unique name: two requests may send the same chunk at once */
    snprintf(tmp, CHUNK_SPOOL_PATH_MAX, "%s/" TEMP_PREFIX "%.16s-XXXXXX", sp->dir, hex);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        if (mkdir(sp->dir, 0700) != 0 && errno != EEXIST)
            return -1;
        snprintf(tmp, CHUNK_SPOOL_PATH_MAX, "%s/" TEMP_PREFIX "%.16s-XXXXXX", sp->dir, hex);
        fd = mkostemp(tmp, O_CLOEXEC);
    }
    if (fd < 0)
        return -1;
    /* the blocks taken at once: ext4 then writes into them several times
     * faster than when it allocates as the pages go (measured: 500 MiB in
     * 8 MiB files, 0.1 s against 0.1 to 2 s); a filesystem without it just
     * writes */
    if (len > 0 && fallocate(fd, 0, 0, (off_t)len) != 0 && errno != EOPNOTSUPP &&
        errno != ENOSYS) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return -1;
    }
    return fd;
}

int chunk_spool_write_temp(const chunk_spool *sp, const uint8_t hash[32], const uint8_t *data,
                           size_t len, char tmp[CHUNK_SPOOL_PATH_MAX])
{
    int fd = chunk_spool_open_temp(sp, hash, len, tmp);
    if (fd < 0)
        return errno;
    if (!fd_write_all(fd, data, len)) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return e;
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return e;
    }
    return 0;
}

int chunk_spool_commit(const chunk_spool *sp, const char *tmp, const uint8_t hash[32])
{
    char path[CHUNK_SPOOL_PATH_MAX];
    chunk_path(sp, hash, path);
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return e;
    }
    return 0;
}

int chunk_spool_open(const chunk_spool *sp, const uint8_t hash[32], uint64_t *size)
{
    char path[CHUNK_SPOOL_PATH_MAX];
    chunk_path(sp, hash, path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (fd >= 0)
        *size = (uint64_t)st.st_size;
    return fd;
}

bool chunk_spool_has(const chunk_spool *sp, const uint8_t hash[32])
{
    char path[CHUNK_SPOOL_PATH_MAX];
    chunk_path(sp, hash, path);
    return access(path, F_OK) == 0;
}

void chunk_spool_remove(const chunk_spool *sp, const uint8_t hash[32])
{
    char path[CHUNK_SPOOL_PATH_MAX];
    chunk_path(sp, hash, path);
    unlink(path);
}

size_t chunk_spool_sweep(const chunk_spool *sp, int64_t before_s,
                         bool (*held)(void *ctx, const uint8_t hash[32]), void *ctx)
{
    DIR *d = opendir(sp->dir);
    if (!d)
        return 0;
    size_t removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && strncmp(e->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX)) != 0)
            continue; /* . and .. */
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            (int64_t)st.st_mtime >= before_s)
            continue;
        uint8_t hash[32];
        bool is_temp = e->d_name[0] == '.';
        if (!is_temp && sha256_parse_hex(e->d_name, hash) && held(ctx, hash))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

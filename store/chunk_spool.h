/* The SQLite store's chunk spool: each chunk of an upload in parts as a file
 * <db>.chunks/<sha256 hex> beside the database (the chunks table keeps its
 * size and time, for the budget and the TTL). */
#ifndef SYMD_CHUNK_SPOOL_H
#define SYMD_CHUNK_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHUNK_SPOOL_PATH_MAX 4200

typedef struct {
    char dir[CHUNK_SPOOL_PATH_MAX - 100]; /* <db>.chunks */
} chunk_spool;

/* The spool of the database at db_path (nothing is created yet); false
 * when the path is too long. */
bool chunk_spool_init(chunk_spool *sp, const char *db_path);

/* Writes len bytes of data to a new temporary file in the spool (created
 * when needed), its name in tmp; 0, or the errno that stopped it (nothing
 * left behind). Not synced: chunks are transient, a crash loses at most
 * chunks the client sends again. */
int chunk_spool_write_temp(const chunk_spool *sp, const uint8_t hash[32], const uint8_t *data,
                           size_t len, char tmp[CHUNK_SPOOL_PATH_MAX]);

/* A new temporary file in the spool (created when needed) to write a
 * chunk of about len bytes into as its bytes arrive (its blocks taken at
 * once when len > 0), its name in tmp: the fd, or -1 with errno (nothing
 * left behind). The chunk's name is not given to it until
 * chunk_spool_commit, once its bytes are known to hash to it. */
int chunk_spool_open_temp(const chunk_spool *sp, const uint8_t hash[32], uint64_t len,
                          char tmp[CHUNK_SPOOL_PATH_MAX]);

/* Moves the temporary file tmp to the chunk's name (replacing any); 0 or
 * errno (tmp removed then). */
int chunk_spool_commit(const chunk_spool *sp, const char *tmp, const uint8_t hash[32]);

/* The chunk's file opened for reading and its size; -1 with errno
 * (ENOENT: not in the spool). */
int chunk_spool_open(const chunk_spool *sp, const uint8_t hash[32], uint64_t *size);

/* Whether the chunk's file exists. */
bool chunk_spool_has(const chunk_spool *sp, const uint8_t hash[32]);

/* Removes the chunk's file (none: nothing to do). */
void chunk_spool_remove(const chunk_spool *sp, const uint8_t hash[32]);

/* Removes what a crash may leave in the spool: temporary files, and files
 * of chunks held(ctx, hash) says the index does not hold, when they were
 * last written before before_s (unix seconds; so a chunk being stored now
 * is left alone). Returns how many files it removed. */
size_t chunk_spool_sweep(const chunk_spool *sp, int64_t before_s,
                         bool (*held)(void *ctx, const uint8_t hash[32]), void *ctx);

#endif

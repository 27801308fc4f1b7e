/* symd upload's hashing of files in chunks, on several threads: each
 * chunk's SHA-256 (its name on the server) and each file's (the assembly's
 * check), the chunks in file order so the first ones can be asked about
 * and sent while the later ones are hashed. */
#ifndef SYMD_CLIENT_CHUNKHASH_H
#define SYMD_CLIENT_CHUNKHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct chash chash;

/* Starts hashing the nfiles files paths[i] (sizes[i] bytes each, as the
 * walk found them; the arrays are copied) in chunks of chunk_size bytes
 * (the last of a file shorter): the chunks by `threads` threads at once
 * (1 to 64), each file whole by one more thread beside them. NULL when out
 * of memory. Where a thread cannot be started the caller's thread does its
 * work when it asks. */
chash *chash_start(const char *const *paths, const uint64_t *sizes, size_t nfiles,
                   uint64_t chunk_size, int threads);

/* How many chunks file i has (0 for an empty file). */
size_t chash_nchunks(const chash *h, size_t file);

/* Waits for chunk k of file i and copies its SHA-256 into out; false with
 * why when the file could not be read (or changed size) as it was hashed. */
bool chash_chunk(chash *h, size_t file, size_t k, uint8_t out[32], char *why, size_t cap);

/* Waits for the SHA-256 of the whole file i; false with why as for
 * chash_chunk. */
bool chash_whole(chash *h, size_t file, uint8_t out[32], char *why, size_t cap);

/* Stops the threads (a chunk under way is finished) and frees h. */
void chash_free(chash *h);

#endif

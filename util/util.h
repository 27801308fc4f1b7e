/* Small shared helpers: growable arrays, UTF-8 validation, temporary files. */
#ifndef SYMD_UTIL_H
#define SYMD_UTIL_H

#include <stdbool.h>
#include <stddef.h>

/* Ensures room for need elements of elem bytes in *p (capacity *cap),
 * doubling so n appends cost O(n). false on overflow or out of memory, with
 * *p unchanged. need must be bounded by the input that asks for it. */
bool array_grow(void **p, size_t *cap, size_t need, size_t elem);

/* Length (1-4) of the valid UTF-8 sequence at p, which has end - p > 0
 * bytes; 0 for invalid, overlong, surrogate or truncated sequences. */
size_t utf8_seq_len(const unsigned char *p, const unsigned char *end);

/* Where temporary files go: $TMPDIR when set and not empty, else /tmp. */
const char *temp_dir(void);

/* A new temporary file in temp_dir() named from prefix, already unlinked
 * (it goes away with its last descriptor or mapping); the caller owns the
 * descriptor. -1 with errno set on failure. */
int temp_file_unlinked(const char *prefix);

/* Writes all n bytes of p to fd, again after EINTR and short writes; false
 * with errno set when it cannot (ENOSPC when a write takes nothing). */
bool fd_write_all(int fd, const void *p, size_t n);

#endif

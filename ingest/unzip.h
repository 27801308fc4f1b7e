/* Zip archives in memory: the members of an uploaded .zip, one at a time.
 *
 * Reads untrusted bytes: callers pass (buf, len). The only I/O is where a
 * large member's inflated bytes are kept: an unlinked temporary file (see
 * spill_at), never named after the member (member names are reported, never
 * used as paths). Decompressed sizes are counted on the bytes libzip actually
 * produces; sizes declared in the archive's headers are never trusted for an
 * allocation or a limit. */
#ifndef SYMD_UNZIP_H
#define SYMD_UNZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

#define UNZIP_DEFAULT_MAX_MEMBERS 10000u
#define UNZIP_DEFAULT_MAX_TOTAL (2ull << 30)  /* 2 GiB inflated per archive */
#define UNZIP_DEFAULT_MAX_MEMBER (1ull << 30) /* 1 GiB inflated per member */
#define UNZIP_DEFAULT_MAX_RATIO 100u         /* inflated bytes per archive byte */
#define UNZIP_RATIO_FLOOR (64ull << 20)       /* the ratio never limits below this */
#define UNZIP_DEFAULT_SPILL_AT (1ull << 20)   /* members past this go to a file */

typedef struct {
    uint64_t max_members; /* entries in the central directory (folders too) */
    uint64_t max_total;   /* bytes inflated over all members handed out */
    uint64_t max_member;  /* bytes inflated for one member */
    uint64_t max_ratio;   /* inflated bytes over all members per archive byte
                             (at least UNZIP_RATIO_FLOOR); 0: no ratio limit */
    /* When set, told each file member's name before it is inflated (with
     * unzip_each's ctx), so a caller can say which one a failure stopped at. */
    void (*on_member)(void *ctx, const char *name);
    /* A member that inflates past this many bytes is inflated into an
     * unlinked temporary file (temp_dir(): $TMPDIR, else /tmp) and handed to
     * the callback mapped read-only: its bytes are page cache the kernel can
     * reclaim, not heap, so a server's memory does not grow with the size of
     * a dSYM. Smaller members stay on the heap. 0: UNZIP_DEFAULT_SPILL_AT;
     * UINT64_MAX: never. */
    uint64_t spill_at;
} unzip_limits;

/* The defaults above. */
unzip_limits unzip_default_limits(void);

/* True when buf starts like a zip archive: a local file header ("PK\3\4"),
 * an empty archive's end record ("PK\5\6") or a split marker ("PK\7\x8").
 * A Mach-O or fat file never does. */
bool unzip_is_zip(const uint8_t *buf, size_t len);

/* Called once per file member, in central-directory order. name is
 * the member path as stored (UTF-8, may hold "..", start with "/", or be
 * empty); data/len its inflated bytes, valid only during the call. A status
 * other than SYMD_OK stops the walk and is returned by unzip_each. */
typedef symd_status (*unzip_member_fn)(void *ctx, const char *name,
                                       const uint8_t *data, size_t len,
                                       symd_err *err);

/* Opens the archive in buf (read-only), and hands each file member to fn;
 * folders and symbolic links are skipped. Each
 * member is inflated in bounded chunks into a buffer that grows with the
 * bytes actually produced and never past what the limits leave (past
 * spill_at, into a temporary file mapped once complete), and is freed
 * before the next one is read, so heap memory peaks at one member of at
 * most spill_at bytes.
 * Errors: SYMD_E_TOO_LARGE (more entries than max_members, or inflating past
 * max_member, max_total or max_ratio times len: a zip bomb), SYMD_E_CORRUPT (not a readable
 * archive, truncated, inconsistent headers, CRC mismatch, a size other than
 * declared, encrypted
 * members, unsupported compression), SYMD_E_NOMEM, SYMD_E_IO (no temporary
 * file, or no room in it), or fn's own error. */
symd_status unzip_each(const uint8_t *buf, size_t len, const unzip_limits *lim,
                       unzip_member_fn fn, void *ctx, symd_err *err);

#endif

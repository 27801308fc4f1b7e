/* Zip archives in memory, through libzip, with every size bounded here (large
 * members inflated into a temporary file). */
#include "unzip.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "../util/util.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define CHUNK (64u << 10)   /* bytes asked of libzip per read */
#define NAME_IN_MSG 96      /* bytes of a member name quoted in a message */

unzip_limits unzip_default_limits(void)
{
    unzip_limits l = {.max_members = UNZIP_DEFAULT_MAX_MEMBERS,
                      .max_total = UNZIP_DEFAULT_MAX_TOTAL,
                      .max_member = UNZIP_DEFAULT_MAX_MEMBER,
                      .max_ratio = UNZIP_DEFAULT_MAX_RATIO,
                      .spill_at = UNZIP_DEFAULT_SPILL_AT};
    return l;
}

bool unzip_is_zip(const uint8_t *buf, size_t len)
{
    if (len < 4 || buf[0] != 'P' || buf[1] != 'K')
        return false;
    return (buf[2] == 3 && buf[3] == 4) || (buf[2] == 5 && buf[3] == 6) ||
           (buf[2] == 7 && buf[3] == 8);
}

/* A libzip error as ours: memory is NOMEM, everything else is the archive's
 * fault. what says where it happened. */
static symd_status zip_error_to_symd(zip_error_t *ze, const char *what,
                                     const char *name, symd_err *err)
{
    int code = zip_error_code_zip(ze);
    const char *why;
    switch (code) {
    case ZIP_ER_MEMORY:
        return symd_fail(err, SYMD_E_NOMEM, "out of memory reading the zip archive");
    case ZIP_ER_NOZIP:
        why = "no end of central directory (not a zip, or truncated)";
        break;
    case ZIP_ER_EOF:
        why = "the archive ends early (truncated)";
        break;
    case ZIP_ER_CRC:
        why = "CRC mismatch";
        break;
    case ZIP_ER_INCONS:
        why = "inconsistent headers";
        break;
    case ZIP_ER_NOENT: /* what libzip says when a zip64 extra field is missing */
        why = "inconsistent headers (a zip64 size without its extra field)";
        break;
    case ZIP_ER_COMPNOTSUPP:
        why = "unsupported compression method";
        break;
    case ZIP_ER_ENCRNOTSUPP:
    case ZIP_ER_NOPASSWD:
    case ZIP_ER_WRONGPASSWD:
        why = "encrypted";
        break;
    case ZIP_ER_MULTIDISK:
        why = "split across several disks";
        break;
    default:
        why = zip_error_strerror(ze);
        break;
    }
    if (name)
        return SYMD_CORRUPT(err, "malformed zip: member '%.*s': %s: %s", NAME_IN_MSG,
                            name, what, why);
    return SYMD_CORRUPT(err, "malformed zip: %s: %s", what, why);
}

/* One member's inflated bytes: on the heap (mapped false; free) or in an
 * unlinked temporary file mapped read-only (mapped true; munmap). */
typedef struct {
    uint8_t *data;
    size_t len;
    bool mapped;
} member_bytes;

static void member_release(member_bytes *m)
{
    if (m->mapped)
        munmap(m->data, m->len);
    else
        free(m->data);
    m->data = NULL;
}

/* The member is past spill_at: what data holds (len bytes) goes to a
 * temporary file, and the rest of the member follows it there, read CHUNK
 * bytes at a time, up to cap bytes; one byte more is a zip bomb (msg says
 * which limit). On success *out is the whole file mapped read-only: page
 * cache, shared with the writes just made, not anonymous memory. */
static symd_status spill_member(zip_file_t *zf, const char *name, const uint8_t *data,
                                size_t len, uint64_t cap, const char *msg, uint64_t limit,
                                member_bytes *out, symd_err *err)
{
    int fd = temp_file_unlinked("symd-unzip");
    if (fd < 0)
        return symd_fail(err, SYMD_E_IO, "no temporary file in %.100s for zip member '%.*s': %s",
                         temp_dir(), NAME_IN_MSG, name, strerror(errno));
    symd_status st = SYMD_OK;
    uint8_t *stage = malloc(CHUNK);
    bool written = stage && fd_write_all(fd, data, len);
    if (!stage)
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory inflating zip member");
    while (written && st == SYMD_OK) {
        /* Exactly at the cap, ask for one byte: any is past the limit. */
        size_t ask = len == cap ? 1 : cap - len < CHUNK ? (size_t)(cap - len) : CHUNK;
        zip_int64_t n = zip_fread(zf, stage, ask);
        if (n < 0)
            st = zip_error_to_symd(zip_file_get_error(zf), "cannot inflate", name, err);
        else if (n > 0 && len == cap)
            st = symd_fail(err, SYMD_E_TOO_LARGE, msg, (unsigned long long)limit, NAME_IN_MSG,
                           name);
        else if (n == 0)
            break;
        else if ((written = fd_write_all(fd, stage, (size_t)n))) {
            len += (size_t)n;
            /* the file's bytes are input to read like a body's (see
             * read_member), though no allocation holds them */
            mem_meter_widen(mem_meter_current(), (uint64_t)n);
        }
    }
    if (stage && !written) /* errno is write's */
        st = symd_fail(err, SYMD_E_IO,
                       "cannot write zip member '%.*s' to a temporary file in %.100s "
                       "(%zu bytes inflated so far): %s",
                       NAME_IN_MSG, name, temp_dir(), len, strerror(errno));
    free(stage);
    if (st == SYMD_OK) {
        void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
            st = symd_fail(err, SYMD_E_NOMEM, "cannot map inflated zip member '%.*s': %s",
                           NAME_IN_MSG, name, strerror(errno));
        else
            *out = (member_bytes){map, len, true};
    }
    close(fd); /* the mapping keeps the file, and unmapping removes it */
    return st;
}

/* Inflates one member into a buffer that grows with the bytes libzip
 * produces, up to cap bytes; one byte more is a zip bomb. Past spill_at
 * bytes it continues in a temporary file instead (spill_member). */
static symd_status read_member(zip_t *za, zip_uint64_t idx, const char *name,
                               uint64_t cap, bool cap_is_total, uint64_t limit,
                               uint64_t spill_at, member_bytes *out, symd_err *err)
{
    *out = (member_bytes){NULL, 0, false};
    zip_file_t *zf = zip_fopen_index(za, idx, 0);
    if (!zf)
        return zip_error_to_symd(zip_get_error(za), "cannot open member", name, err);
    const char *msg = cap_is_total ? "zip archive inflates to more than %llu bytes "
                                     "(at member '%.*s')"
                                   : "zip member inflates to more than %llu bytes "
                                     "(member '%.*s')";
    symd_status st = SYMD_OK;
    size_t len = 0, size = 0;
    uint8_t *data = NULL;
    if (cap > SIZE_MAX - 1)
        cap = SIZE_MAX - 1;
    /* the heap holds at most spill_at bytes (or all of cap, when smaller) */
    const uint64_t heap_cap = spill_at < cap ? spill_at : cap;
    for (;;) {
        if (len == size) {
            if (size == heap_cap && heap_cap < cap) {
                st = spill_member(zf, name, data, len, cap, msg, limit, out, err);
                free(data);
                zip_fclose(zf);
                return st;
            }
            if (size == cap) {
                /* Full: anything more is past the limit. */
                uint8_t probe;
                zip_int64_t n = zip_fread(zf, &probe, 1);
                if (n < 0)
                    st = zip_error_to_symd(zip_file_get_error(zf), "cannot inflate",
                                           name, err);
                else if (n > 0)
                    st = symd_fail(err, SYMD_E_TOO_LARGE, msg, (unsigned long long)limit,
                                   NAME_IN_MSG, name);
                break;
            }
            size_t grow = size ? size : CHUNK; /* double, from one chunk */
            size_t want = heap_cap - size < grow ? (size_t)heap_cap : size + grow;
            /* An inflated member is read like an uploaded file: it widens
             * the request's memory budget as its body did (bounded by the
             * zip limits above, not by the archive's size). */
            mem_meter_widen(mem_meter_current(), want - size);
            uint8_t *p = realloc(data, want);
            if (!p) {
                st = symd_fail(err, SYMD_E_NOMEM, "out of memory inflating zip member");
                break;
            }
            data = p;
            size = want;
        }
        size_t ask = size - len < CHUNK ? size - len : CHUNK;
        zip_int64_t n = zip_fread(zf, data + len, ask);
        if (n < 0) {
            st = zip_error_to_symd(zip_file_get_error(zf), "cannot inflate", name, err);
            break;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    /* libzip checked the CRC when a read reached the end; the size is
     * checked by the caller; closing checks nothing. */
    zip_fclose(zf);
    if (st != SYMD_OK) {
        free(data);
        return st;
    }
    *out = (member_bytes){data, len, false};
    return SYMD_OK;
}

/* Folders ("name/", or a Unix folder mode) and symbolic links (whose data
 * is the target's path) are not members we hand out. Anything else is read:
 * Info-ZIP stores `zip - < file` as a FIFO, and some writers leave the type
 * bits out (mode 0644). */
static bool is_file(zip_t *za, zip_uint64_t idx, const char *name)
{
    size_t n = strlen(name);
    if (n > 0 && name[n - 1] == '/')
        return false;
    zip_uint8_t opsys;
    zip_uint32_t attr;
    if (zip_file_get_external_attributes(za, idx, 0, &opsys, &attr) == 0 &&
        opsys == ZIP_OPSYS_UNIX) {
        mode_t mode = (mode_t)(attr >> 16);
        if (S_ISDIR(mode) || S_ISLNK(mode))
            return false;
    }
    return true;
}

symd_status unzip_each(const uint8_t *buf, size_t len, const unzip_limits *lim,
                       unzip_member_fn fn, void *ctx, symd_err *err)
{
    zip_error_t ze;
    zip_error_init(&ze);
    /* A read-only archive never writes into the buffer. No ZIP_CHECKCONS:
     * it refuses archives Info-ZIP writes with data descriptors (zip -fd),
     * and nothing here trusts the headers it would compare: sizes are
     * counted as inflated, and libzip checks each member's CRC. */
    zip_source_t *src = zip_source_buffer_create(len ? (void *)buf : NULL, len, 0, &ze);
    if (!src) {
        symd_status st = zip_error_to_symd(&ze, "cannot read", NULL, err);
        zip_error_fini(&ze);
        return st;
    }
    zip_t *za = zip_open_from_source(src, ZIP_RDONLY, &ze);
    if (!za) {
        zip_source_free(src);
        symd_status st = zip_error_to_symd(&ze, "cannot open", NULL, err);
        zip_error_fini(&ze);
        return st;
    }
    zip_error_fini(&ze);

    symd_status st = SYMD_OK;
    zip_int64_t n = zip_get_num_entries(za, 0);
    if (n < 0) {
        st = SYMD_CORRUPT(err, "malformed zip: cannot count its entries");
        goto out;
    }
    if ((uint64_t)n > lim->max_members) {
        st = symd_fail(err, SYMD_E_TOO_LARGE, "zip archive has %lld entries (limit %llu)",
                       (long long)n, (unsigned long long)lim->max_members);
        goto out;
    }
    /* A small archive may not inflate to gigabytes: real dSYMs and binaries
     * compress a few times, a bomb thousands of times. The budget is the
     * tighter of max_total and max_ratio times the archive (never under
     * UNZIP_RATIO_FLOOR). */
    uint64_t max_total = lim->max_total;
    if (lim->max_ratio) {
        uint64_t by_ratio = (uint64_t)len > UINT64_MAX / lim->max_ratio
                                ? UINT64_MAX
                                : (uint64_t)len * lim->max_ratio;
        if (by_ratio < UNZIP_RATIO_FLOOR)
            by_ratio = UNZIP_RATIO_FLOOR;
        if (by_ratio < max_total)
            max_total = by_ratio;
    }
    const uint64_t spill_at = lim->spill_at ? lim->spill_at : UNZIP_DEFAULT_SPILL_AT;
    uint64_t used = 0;
    for (zip_uint64_t i = 0; i < (zip_uint64_t)n && st == SYMD_OK; i++) {
        zip_stat_t zs;
        zip_stat_init(&zs);
        if (zip_stat_index(za, i, 0, &zs) != 0) {
            st = zip_error_to_symd(zip_get_error(za), "cannot read entry", NULL, err);
            break;
        }
        const char *name = (zs.valid & ZIP_STAT_NAME) && zs.name ? zs.name : "";
        if (!is_file(za, i, name))
            continue;
        if ((zs.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
            zs.encryption_method != ZIP_EM_NONE) {
            st = SYMD_CORRUPT(err, "malformed zip: member '%.*s' is encrypted", NAME_IN_MSG,
                              name);
            break;
        }
        if ((zs.valid & ZIP_STAT_COMP_METHOD) &&
            !zip_compression_method_supported(zs.comp_method, 0)) {
            st = SYMD_CORRUPT(err,
                              "malformed zip: member '%.*s' uses compression method %d, "
                              "which symd cannot inflate",
                              NAME_IN_MSG, name, (int)zs.comp_method);
            break;
        }
        if (lim->on_member)
            lim->on_member(ctx, name);
        /* The tighter of the member cap and what the archive budget leaves. */
        uint64_t left = max_total - used;
        bool total_binds = left < lim->max_member;
        uint64_t cap = total_binds ? left : lim->max_member;
        member_bytes m;
        st = read_member(za, i, name, cap, total_binds,
                         total_binds ? max_total : lim->max_member, spill_at, &m, err);
        if (st != SYMD_OK)
            break;
        if ((zs.valid & ZIP_STAT_SIZE) && zs.size != m.len) {
            member_release(&m);
            st = SYMD_CORRUPT(err,
                              "malformed zip: member '%.*s' declares %llu bytes but "
                              "inflates to %zu",
                              NAME_IN_MSG, name, (unsigned long long)zs.size, m.len);
            break;
        }
        used += m.len;
        static const uint8_t empty[1];
        st = fn(ctx, name, m.data ? m.data : empty, m.len, err);
        member_release(&m);
    }
out:
    zip_discard(za); /* frees src too */
    return st;
}

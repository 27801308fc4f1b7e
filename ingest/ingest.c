/* Upload pipeline: file bytes → validated slices → symbol indexes → store. */
#include "ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../macho/macho.h"
#include "../dsym/lineindex.h"
#include "../util/cursor.h"
#include "../util/util.h"
#include "../macho/symindex.h"
#include "../unwind/unwind.h"
#include "../util/metered.h" /* last: counts this file's allocations */

/* A line index larger than this is refused (the DWARF behind it would be
 * far larger than any upload limit). */
#define INGEST_MAX_LINE_INDEX ((size_t)1 << 30)

void ingest_batch_init(ingest_batch *b)
{
    memset(b, 0, sizeof *b);
}

void ingest_batch_free(ingest_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->blobs[i]);
        free(b->lines[i]);
        free(b->unwind[i]);
    }
    free(b->blobs);
    free(b->lines);
    free(b->unwind);
    free(b->puts);
    memset(b, 0, sizeof *b);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Drops (and frees) every slice added after the first n. */
static void batch_truncate(ingest_batch *b, size_t n)
{
    for (size_t i = n; i < b->n; i++) {
        free(b->blobs[i]);
        free(b->lines[i]);
        free(b->unwind[i]);
    }
    b->n = n;
}

static bool batch_reserve(ingest_batch *b, size_t more)
{
    if (b->n + more <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap * 2 : 8;
    while (cap < b->n + more)
        cap *= 2;
    store_put *p = realloc(b->puts, cap * sizeof *p);
    if (!p)
        return false;
    b->puts = p;
    uint8_t **bl = realloc(b->blobs, cap * sizeof *bl);
    if (!bl)
        return false;
    b->blobs = bl;
    uint8_t **li = realloc(b->lines, cap * sizeof *li);
    if (!li)
        return false;
    b->lines = li;
    uint8_t **uw = realloc(b->unwind, cap * sizeof *uw);
    if (!uw)
        return false;
    b->unwind = uw;
    b->cap = cap;
    return true;
}

static symd_status add_slice(ingest_batch *b, const uint8_t *buf, size_t len,
                             const char *name_hint, size_t sliceno,
                             uint32_t fat_cputype, symd_err *err)
{
    macho_image img;
    symd_status st = macho_parse_image(buf, len, &img, err);
    if (st != SYMD_OK)
        return st;
    /* The fat header and the slice must agree on what the slice is. */
    if (img.cputype != fat_cputype) {
        st = SYMD_CORRUPT(err, "slice %zu: fat header says CPU 0x%x, slice says 0x%x",
                          sliceno, fat_cputype, img.cputype);
        goto out;
    }
    const char *arch = macho_arch_name(img.cputype, img.cpusubtype);
    if (!arch) {
        st = symd_fail(err, SYMD_E_UNSUPPORTED,
                       "slice %zu: unknown CPU type 0x%x/0x%x", sliceno,
                       img.cputype, img.cpusubtype);
        goto out;
    }
    if (!img.has_uuid) {
        st = symd_fail(err, SYMD_E_NO_UUID, "slice %zu (%s) has no LC_UUID", sliceno,
                       arch);
        goto out;
    }
    store_put p;
    memset(&p, 0, sizeof p);
    uint8_t *blob = NULL, *lines = NULL;
    size_t blen, llen;
    lineindex_stats lst;
    symindex sidx;
    st = symindex_build(&img, &blob, &blen, &p.meta.symbols, &p.meta.functions, err);
    if (st == SYMD_OK)
        st = symindex_open(blob, blen, &sidx, err);
    if (st == SYMD_OK)
        st = lineindex_build(&img, &sidx, INGEST_MAX_LINE_INDEX, &lines, &llen, &lst, err);
    uint8_t *unwind = NULL;
    size_t ulen = 0;
    unw_build_stats ust;
    if (st == SYMD_OK) {
        st = unw_build_image(&img, &unwind, &ulen, &ust, err);
        if (st != SYMD_OK)
            free(lines);
        else if (ust.diag.count) {
            if (!b->unwind_warnings)
                snprintf(b->unwind_warning, sizeof b->unwind_warning, "slice %zu (%s): %.150s",
                         sliceno, arch, ust.diag.first);
            b->unwind_warnings += ust.diag.count;
        }
    }
    if (st != SYMD_OK) {
        if (st == SYMD_E_BAD_DEBUG_INFO || st == SYMD_E_UNSUPPORTED) {
            symd_err e2 = *err;
            symd_err_clear(err);
            st = symd_fail_at(err, e2.kind, e2.src_file, e2.src_line,
                              "slice %zu (%s): %s", sliceno, arch, e2.msg);
        }
        free(blob);
        goto out;
    }
    memcpy(p.meta.uuid, img.uuid, 16);
    snprintf(p.meta.arch, sizeof p.meta.arch, "%s", arch);
    const char *name = img.dylib_id ? base_name(img.dylib_id)
                       : name_hint && *base_name(name_hint) ? base_name(name_hint)
                                                            : "unknown";
    snprintf(p.meta.name, sizeof p.meta.name, "%s", name);
    snprintf(p.meta.kind, sizeof p.meta.kind, "%s", macho_kind_name(img.kind));
    p.meta.text_vmaddr = macho_text_vmaddr(&img);
    p.meta.text_size = macho_text_vmsize(&img);
    p.meta.debug_info = lines != NULL;
    p.symidx = blob;
    p.symidx_len = blen;
    p.lines = lines;
    p.lines_len = lines ? llen : 0;
    p.unwind = unwind;
    p.unwind_len = ulen;

    /* The same (UUID, arch) twice in one upload (a binary and its dSYM):
     * merge the way the store merges uploads. */
    for (size_t i = 0; i < b->n; i++) {
        store_put *q = &b->puts[i];
        if (memcmp(q->meta.uuid, img.uuid, 16) != 0 || strcmp(q->meta.arch, arch) != 0)
            continue;
        bool q_dsym = strcmp(q->meta.kind, "dsym") == 0;
        if (p.meta.symbols >= q->meta.symbols &&
            (p.meta.symbols > q->meta.symbols || p.meta.functions > q->meta.functions)) {
            free(b->blobs[i]);
            b->blobs[i] = blob;
            q->symidx = blob, q->symidx_len = blen;
            q->meta.symbols = p.meta.symbols, q->meta.functions = p.meta.functions;
            q->meta.text_vmaddr = p.meta.text_vmaddr, q->meta.text_size = p.meta.text_size;
            blob = NULL;
        }
        if (q_dsym && strcmp(p.meta.kind, "dsym") != 0) {
            memcpy(q->meta.kind, p.meta.kind, sizeof q->meta.kind);
            memcpy(q->meta.name, p.meta.name, sizeof q->meta.name);
        }
        if (lines && !b->lines[i]) {
            b->lines[i] = lines;
            q->lines = lines, q->lines_len = llen;
            q->meta.debug_info = true;
            lines = NULL;
        }
        if (unwind && !b->unwind[i]) { /* the binary after its dSYM */
            b->unwind[i] = unwind;
            q->unwind = unwind, q->unwind_len = ulen;
            unwind = NULL;
        }
        free(blob);
        free(lines);
        free(unwind);
        goto out;
    }
    if (!batch_reserve(b, 1)) {
        free(blob);
        free(lines);
        free(unwind);
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    b->puts[b->n] = p;
    b->blobs[b->n] = blob;
    b->lines[b->n] = lines;
    b->unwind[b->n] = unwind;
    b->n++;
out:
    macho_image_free(&img);
    return st;
}

symd_status ingest_add_file(ingest_batch *b, const uint8_t *buf, size_t len,
                            const char *name_hint, symd_err *err)
{
    macho_slice slices[MACHO_MAX_SLICES];
    size_t nslices, before = b->n;
    symd_status st = macho_parse_slices(buf, len, slices, &nslices, err);
    for (size_t i = 0; st == SYMD_OK && i < nslices; i++)
        st = add_slice(b, buf + slices[i].offset, (size_t)slices[i].size, name_hint,
                       i, slices[i].cputype, err);
    if (st != SYMD_OK) {
        batch_truncate(b, before);
    }
    return st;
}

symd_status ingest_add_indexed(ingest_batch *b, const store_image *meta, uint8_t *blob,
                               size_t len, symd_err *err)
{
    if (!batch_reserve(b, 1)) {
        free(blob);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    store_put *p = &b->puts[b->n];
    memset(p, 0, sizeof *p);
    p->meta = *meta;
    p->symidx = blob;
    p->symidx_len = len;
    b->blobs[b->n] = blob;
    b->lines[b->n] = NULL;
    b->unwind[b->n] = NULL;
    b->n++;
    return SYMD_OK;
}

symd_status ingest_commit(store *s, ingest_batch *b, store_put_result *results,
                          store_image *stored, symd_err *err)
{
    return store_put_images(s, b->puts, b->n, results, stored, err);
}

/* ---- uploads: a file or a zip of them ------------------------------------ */

typedef struct {
    ingest_batch *b;
    ingest_upload_info *info;
    bool member_failed; /* the error came from a member's Mach-O */
} upload_ctx;

/* Whether a member is for the Mach-O reader: anything but SYMD_E_NOT_MACHO
 * from the magic check. 0xcafebabe also starts Java class files, where the
 * next word is the class-file version (45 and up); fat headers list a few
 * architectures, so those are skipped too. */
static bool member_is_macho(const uint8_t *data, size_t len)
{
    macho_slice sl[MACHO_MAX_SLICES];
    size_t n;
    if (macho_parse_slices(data, len, sl, &n, NULL) == SYMD_E_NOT_MACHO)
        return false;
    return !(len >= 8 && ld_u32be(data) == 0xcafebabeu && ld_u32be(data + 4) >= 45);
}

/* The last path component of a member ('/' or '\' separated), as a name of
 * at most out_size - 1 bytes cut on a UTF-8 boundary, invalid bytes as '?'. */
static void member_image_name(const char *path, char *out, size_t out_size)
{
    const char *base = path;
    for (const char *p = path; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    const unsigned char *p = (const unsigned char *)base,
                        *end = p + strlen(base);
    size_t o = 0;
    while (p < end) {
        size_t k = utf8_seq_len(p, end);
        if (k == 0) {
            if (o + 1 >= out_size)
                break;
            out[o++] = '?';
            p++;
            continue;
        }
        if (o + k >= out_size)
            break;
        memcpy(out + o, p, k);
        o += k;
        p += k;
    }
    out[o] = 0;
}

static symd_status add_member(void *vctx, const char *name, const uint8_t *data,
                              size_t len, symd_err *err)
{
    upload_ctx *c = vctx;
    c->info->members++;
    if (!member_is_macho(data, len))
        return SYMD_OK;
    char image_name[256];
    member_image_name(name, image_name, sizeof image_name);
    symd_err e = {0};
    symd_status st = ingest_add_file(c->b, data, len, image_name, &e);
    if (st != SYMD_OK) {
        /* Keep the member's kind (malformed_macho, no_uuid, ...), say which. */
        symd_fail_at(err, st, e.src_file, e.src_line, "zip member '%.96s': %s", name,
                     e.msg);
        c->member_failed = true;
        return st;
    }
    c->info->macho++;
    return SYMD_OK;
}

symd_status ingest_add_upload(ingest_batch *b, const uint8_t *buf, size_t len,
                              const char *name_hint, const unzip_limits *lim,
                              ingest_upload_info *info, symd_err *err)
{
    ingest_upload_info scratch;
    if (!info)
        info = &scratch;
    memset(info, 0, sizeof *info);
    if (!unzip_is_zip(buf, len))
        return ingest_add_file(b, buf, len, name_hint, err);

    info->zip = true;
    unzip_limits defaults = unzip_default_limits();
    upload_ctx c = {b, info, false};
    size_t before = b->n;
    symd_status st = unzip_each(buf, len, lim ? lim : &defaults, add_member, &c, err);
    if (st == SYMD_OK && info->macho == 0)
        st = symd_fail(err, SYMD_E_NOT_MACHO,
                       "the zip archive holds no Mach-O file (%zu member%s, none "
                       "Mach-O or fat)",
                       info->members, info->members == 1 ? "" : "s");
    if (st != SYMD_OK) {
        info->zip_corrupt = st == SYMD_E_CORRUPT && !c.member_failed;
        batch_truncate(b, before);
    }
    return st;
}

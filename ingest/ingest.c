/* Upload pipeline: file bytes → validated slices → symbol indexes → store. */
#include "ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../breakpad/image.h"
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

/* Frees what slice i owns. */
static void slice_free(ingest_batch *b, size_t i)
{
    free(b->blobs[i]);
    free(b->lines[i]);
    free(b->unwind[i]);
    free(b->extra_data[i]);
    free(b->warn[i]);
}

void ingest_batch_free(ingest_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        slice_free(b, i);
    free(b->blobs);
    free(b->lines);
    free(b->unwind);
    free(b->extra_data);
    free(b->extra);
    free(b->warn);
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
    for (size_t i = n; i < b->n; i++)
        slice_free(b, i);
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
    uint8_t **xd = realloc(b->extra_data, cap * sizeof *xd);
    if (!xd)
        return false;
    b->extra_data = xd;
    store_blob *x = realloc(b->extra, cap * sizeof *x);
    if (!x)
        return false;
    b->extra = x;
    ingest_warnings **w = realloc(b->warn, cap * sizeof *w);
    if (!w)
        return false;
    b->warn = w;
    b->cap = cap;
    return true;
}

/* A new slice: p with its owned blobs (which the batch takes, or frees on
 * failure); extra (may be NULL) is the kind of extra_data. Merges into a
 * slice of the same (UUID, arch) already in the batch the way the store
 * merges uploads (store_merge_plan), freeing what the merge does not keep. */
static symd_status batch_add(ingest_batch *b, store_put *p, uint8_t *blob, uint8_t *lines,
                             uint8_t *unwind, const char *extra, uint8_t *extra_data, size_t extra_len,
                             ingest_warnings *warn, symd_err *err)
{
    for (size_t i = 0; i < b->n; i++) {
        store_put *q = &b->puts[i];
        if (memcmp(q->meta.uuid, p->meta.uuid, 16) != 0 || strcmp(q->meta.arch, p->meta.arch) != 0)
            continue;
        store_merge m = store_merge_plan(&q->meta, p);
        if (m.put_syms) {
            free(b->blobs[i]);
            b->blobs[i] = blob;
            q->symidx = blob, q->symidx_len = p->symidx_len;
            q->meta.symbols = p->meta.symbols, q->meta.functions = p->meta.functions;
            blob = NULL;
        }
        if (m.set_place)
            q->meta.text_vmaddr = p->meta.text_vmaddr, q->meta.text_size = p->meta.text_size;
        if (m.take_kind)
            memcpy(q->meta.kind, p->meta.kind, sizeof q->meta.kind);
        /* the name as the store's UPDATE takes it */
        if (strcmp(q->meta.name, "unknown") == 0 ||
            (m.take_kind && strcmp(p->meta.name, "unknown") != 0))
            memcpy(q->meta.name, p->meta.name, sizeof q->meta.name);
        if (m.put_lines) {
            b->lines[i] = lines;
            q->lines = lines, q->lines_len = p->lines_len;
            q->meta.debug_info = true;
            lines = NULL;
        }
        if (unwind && !b->unwind[i]) { /* the binary after its dSYM */
            b->unwind[i] = unwind;
            q->unwind = unwind, q->unwind_len = p->unwind_len;
            unwind = NULL;
        }
        if (extra_data && !b->extra_data[i]) {
            b->extra_data[i] = extra_data;
            b->extra[i] = (store_blob){extra, extra_data, extra_len};
            extra_data = NULL;
        }
        if (warn && !b->warn[i]) {
            b->warn[i] = warn;
            warn = NULL;
        }
        free(blob);
        free(lines);
        free(unwind);
        free(extra_data);
        free(warn);
        return SYMD_OK;
    }
    if (!batch_reserve(b, 1)) {
        free(blob);
        free(lines);
        free(unwind);
        free(extra_data);
        free(warn);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    b->puts[b->n] = *p;
    b->blobs[b->n] = blob;
    b->lines[b->n] = lines;
    b->unwind[b->n] = unwind;
    b->extra_data[b->n] = extra_data;
    b->extra[b->n] = (store_blob){extra, extra_data, extra_len};
    b->warn[b->n] = warn;
    b->n++;
    return SYMD_OK;
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
    st = batch_add(b, &p, blob, lines, unwind, NULL, NULL, 0, NULL, err);
out:
    macho_image_free(&img);
    return st;
}

/* A Breakpad .sym: one slice, its indexes built by breakpad/image.c. */
static symd_status add_breakpad(ingest_batch *b, const uint8_t *buf, size_t len, symd_err *err)
{
    bp_image im;
    symd_err e = {0};
    symd_status st = bp_image_build(buf, len, INGEST_MAX_LINE_INDEX, &im, &e);
    if (st != SYMD_OK)
        return symd_fail_at(err, st, e.src_file, e.src_line, "Breakpad .sym: %s", e.msg);
    ingest_warnings *w = NULL;
    if (im.nwarnings) {
        if (!(w = calloc(1, sizeof *w))) {
            bp_image_free(&im);
            return symd_fail(err, SYMD_E_NOMEM, "out of memory");
        }
        w->n = im.nwarnings;
        for (size_t i = 0; i < im.nwarnings && i < INGEST_MAX_WARNINGS; i++)
            memcpy(w->text[i], im.warnings[i], sizeof w->text[i]);
    }
    store_put p;
    memset(&p, 0, sizeof p);
    memcpy(p.meta.uuid, im.uuid, 16);
    snprintf(p.meta.arch, sizeof p.meta.arch, "%s", im.arch);
    snprintf(p.meta.name, sizeof p.meta.name, "%s", im.name);
    snprintf(p.meta.kind, sizeof p.meta.kind, "%s", BP_IMAGE_KIND);
    p.meta.text_vmaddr = 0; /* module-relative: see breakpad/image.h */
    p.meta.text_size = im.text_size;
    p.meta.symbols = im.symbols;
    p.meta.functions = im.functions;
    p.meta.debug_info = im.lines != NULL;
    p.symidx = im.symidx;
    p.symidx_len = im.symidx_len;
    p.lines = im.lines;
    p.lines_len = im.lines_len;
    /* batch_add owns the blobs from here */
    return batch_add(b, &p, im.symidx, im.lines, NULL, BP_IMAGE_CFI_BLOB, im.cfi, im.cfi_len, w,
                     err);
}

symd_status ingest_add_file(ingest_batch *b, const uint8_t *buf, size_t len,
                            const char *name_hint, symd_err *err)
{
    if (bp_sym_detect(buf, len)) {
        size_t before = b->n;
        symd_status st = add_breakpad(b, buf, len, err);
        if (st != SYMD_OK)
            batch_truncate(b, before);
        return st;
    }
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
    b->extra_data[b->n] = NULL;
    b->warn[b->n] = NULL;
    b->n++;
    return SYMD_OK;
}

symd_status ingest_commit(store *s, ingest_batch *b, store_put_result *results,
                          store_image *stored, symd_err *err)
{
    for (size_t i = 0; i < b->n; i++) {
        b->puts[i].extra = b->extra_data[i] ? &b->extra[i] : NULL;
        b->puts[i].nextra = b->extra_data[i] ? 1 : 0;
    }
    return store_put_images(s, b->puts, b->n, results, stored, err);
}

/* ---- uploads: a file or a zip of them ------------------------------------ */

typedef struct {
    ingest_batch *b;
    ingest_upload_info *info;
    bool member_failed; /* the error came from a member's Mach-O or .sym */
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
    bool sym = bp_sym_detect(data, len);
    if (!sym && !member_is_macho(data, len))
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
        c->info->sym_failed = sym;
        return st;
    }
    if (sym)
        c->info->sym++;
    else
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
    if (!unzip_is_zip(buf, len)) {
        bool sym = bp_sym_detect(buf, len);
        symd_status st = ingest_add_file(b, buf, len, name_hint, err);
        info->sym = sym && st == SYMD_OK;
        info->sym_failed = sym && st != SYMD_OK;
        return st;
    }

    info->zip = true;
    unzip_limits defaults = unzip_default_limits();
    upload_ctx c = {b, info, false};
    size_t before = b->n;
    symd_status st = unzip_each(buf, len, lim ? lim : &defaults, add_member, &c, err);
    if (st == SYMD_OK && info->macho == 0 && info->sym == 0)
        st = symd_fail(err, SYMD_E_NOT_MACHO,
                       "the zip archive holds no Mach-O file (%zu member%s, none "
                       "Mach-O, fat or Breakpad .sym)",
                       info->members, info->members == 1 ? "" : "s");
    if (st != SYMD_OK) {
        info->zip_corrupt = st == SYMD_E_CORRUPT && !c.member_failed;
        batch_truncate(b, before);
    }
    return st;
}

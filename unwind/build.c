/* The unwind rows of one Mach-O slice: __unwind_info first, the FDEs its
 * DWARF escapes name, then the FDEs no compact entry covers. */
#include <stdlib.h>
#include <string.h>

#include "compact.h"
#include "ehframe.h"
#include "unwind.h"

/* The file bytes of a section, NULL when it has none (zerofill, a dSYM's
 * placeholder headers, or bytes past the file). */
static const uint8_t *section_bytes(const macho_image *img, const char *name, size_t *len,
                                    uint64_t *addr)
{
    for (size_t i = 0; i < img->nsects; i++) {
        const macho_section *s = &img->sects[i];
        if (strcmp(s->sectname, name) != 0)
            continue;
        if (s->offset == 0 || s->size == 0 || s->offset > img->len ||
            s->size > img->len - s->offset)
            return NULL;
        *len = (size_t)s->size;
        *addr = s->addr;
        return img->buf + s->offset;
    }
    return NULL;
}

/* Reads n bytes at vmaddr through the segments' file ranges. */
static bool read_vm(const macho_image *img, uint64_t vmaddr, void *dst, size_t n)
{
    for (size_t i = 0; i < img->nsegs; i++) {
        const macho_segment *g = &img->segs[i];
        if (vmaddr < g->vmaddr || vmaddr - g->vmaddr >= g->filesize)
            continue;
        uint64_t in = vmaddr - g->vmaddr;
        if (n > g->filesize - in || g->fileoff + in > img->len || n > img->len - (g->fileoff + in))
            return false;
        memcpy(dst, img->buf + g->fileoff + in, n);
        return true;
    }
    return false;
}

typedef struct {
    const macho_image *img;
    uint64_t text_vmaddr;
} image_ctx;

static bool text_at(void *ctx, uint64_t off, void *dst, size_t n)
{
    image_ctx *c = ctx;
    return read_vm(c->img, c->text_vmaddr + off, dst, n);
}

static bool read64_at(void *ctx, uint64_t vmaddr, uint64_t *out)
{
    image_ctx *c = ctx;
    uint8_t b[8];
    if (!read_vm(c->img, vmaddr, b, 8))
        return false;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    *out = v;
    return true;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether image-relative off lies in a row of r (rows sorted by start). */
static bool covered(const unw_rows *r, uint64_t off)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->v[mid].start <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && off < r->v[lo - 1].end;
}

/* Appends start to the function starts; false when out of memory. */
static bool add_start(unw_starts *s, uint32_t start)
{
    if (!s)
        return true;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        uint32_t *p = realloc(s->v, nc * sizeof *p);
        if (!p)
            return false;
        s->v = p;
        s->cap = nc;
    }
    s->v[s->n++] = start;
    return true;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Adds the rows of the FDE at off (its first row's start to starts); a
 * damaged FDE is a warning. */
static symd_status add_fde(const unw_eh *eh, size_t off, unw_rows *rows, unw_starts *starts,
                           unw_build_stats *st, symd_err *err)
{
    unw_fde fde;
    unw_cie cie;
    symd_err e = {0};
    symd_status s = unw_eh_fde(eh, off, &fde, &cie, &e);
    if (s == SYMD_OK) {
        size_t before = rows->n;
        s = unw_eh_rows(eh, &fde, &cie, rows, &st->diag, &e);
        st->eh_rows += rows->n - before;
        st->fdes++;
        if (s == SYMD_OK && rows->n > before && !add_start(starts, rows->v[before].start))
            s = SYMD_E_NOMEM;
    }
    if (s == SYMD_E_NOMEM)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    if (s != SYMD_OK)
        unw_warn(&st->diag, "%s", e.msg);
    return SYMD_OK;
}

/* Contract in unwind.h. */
symd_status unw_build_rows(const macho_image *img, unw_arch *arch_out, unw_rows *rows,
                           unw_starts *starts, unw_build_stats *stats, symd_err *err)
{
    memset(stats, 0, sizeof *stats);
    *arch_out = UNW_ARCH_NONE;
    unw_arch arch = unw_arch_of_cputype(img->cputype);
    if (arch == UNW_ARCH_NONE || img->kind == MACHO_KIND_DSYM || !img->is64)
        return SYMD_OK;
    size_t ui_len = 0, eh_len = 0;
    uint64_t ui_addr = 0, eh_addr = 0;
    const uint8_t *ui = section_bytes(img, "__unwind_info", &ui_len, &ui_addr);
    const uint8_t *ehb = section_bytes(img, "__eh_frame", &eh_len, &eh_addr);
    if (!ui && !ehb)
        return SYMD_OK;
    *arch_out = arch;
    image_ctx ctx = {img, macho_text_vmaddr(img)};
    unw_eh eh = {ehb, eh_len, eh_addr, ctx.text_vmaddr, arch, read64_at, &ctx};
    size_t *used = NULL, nused = 0;
    symd_status st = SYMD_OK;

    if (ui) {
        unw_compact_entry *ents = NULL;
        size_t n = 0;
        symd_err e = {0};
        symd_status s = unw_compact_read(ui, ui_len, &ents, &n, &stats->diag, &e);
        if (s == SYMD_E_NOMEM) {
            st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
            goto out;
        }
        if (s != SYMD_OK)
            unw_warn(&stats->diag, "%s", e.msg);
        stats->compact_entries = n;
        used = malloc((n ? n : 1) * sizeof *used);
        if (!used) {
            free(ents);
            st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n && st == SYMD_OK; i++) {
            unw_row row;
            uint32_t fde_off = 0;
            switch (unw_compact_row(arch, &ents[i], text_at, &ctx, &row, &fde_off,
                                    &stats->diag)) {
            case UNW_COMPACT_ROW:
                if (!unw_rows_push(rows, &row) || !add_start(starts, row.start))
                    st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
                stats->compact_rows++;
                break;
            case UNW_COMPACT_DWARF:
                stats->dwarf_escapes++;
                if (!ehb) {
                    unw_warn(&stats->diag, "__unwind_info: function 0x%x escapes to DWARF but "
                             "the image has no __eh_frame", ents[i].start);
                    break;
                }
                if (nused && used[nused - 1] == fde_off)
                    break; /* one FDE named by consecutive entries */
                used[nused++] = fde_off;
                st = add_fde(&eh, fde_off, rows, starts, stats, err);
                break;
            default:
                break;
            }
        }
        free(ents);
        if (st != SYMD_OK)
            goto out;
    }
    if (ehb) {
        /* The FDEs no compact entry covers: an image linked without
         * __unwind_info, or code the compact table leaves out. */
        unw_rows_normalize(rows, &stats->diag);
        if (nused)
            qsort(used, nused, sizeof *used, cmp_size);
        size_t ncovered = rows->n;
        size_t off = 0;
        while (off < eh_len && st == SYMD_OK) {
            unw_eh_kind kind;
            size_t next;
            symd_err e = {0};
            if (unw_eh_record(&eh, off, &kind, &next, &e) != SYMD_OK) {
                unw_warn(&stats->diag, "%s", e.msg);
                break; /* without a length the next record cannot be found */
            }
            if (kind == UNW_EH_FDE &&
                !(nused && bsearch(&off, used, nused, sizeof *used, cmp_size))) {
                unw_fde fde;
                unw_cie cie;
                if (unw_eh_fde(&eh, off, &fde, &cie, &e) != SYMD_OK) {
                    unw_warn(&stats->diag, "%s", e.msg);
                } else if (fde.pc_begin >= ctx.text_vmaddr) {
                    unw_rows head = {rows->v, ncovered, ncovered};
                    if (!covered(&head, fde.pc_begin - ctx.text_vmaddr))
                        st = add_fde(&eh, off, rows, starts, stats, err);
                }
            }
            off = next;
        }
    }
    if (st == SYMD_OK) {
        unw_rows_normalize(rows, &stats->diag);
        if (starts && starts->n)
            qsort(starts->v, starts->n, sizeof *starts->v, cmp_u32);
    }
out:
    free(used);
    return st;
}

symd_status unw_build_image(const macho_image *img, uint8_t **blob, size_t *len,
                            unw_build_stats *stats, symd_err *err)
{
    *blob = NULL;
    *len = 0;
    unw_arch arch;
    unw_rows rows = {0};
    symd_status st = unw_build_rows(img, &arch, &rows, NULL, stats, err);
    if (st == SYMD_OK && arch != UNW_ARCH_NONE) /* NONE: neither table */
        st = unw_table_build(arch, &rows,
                             stats->diag.count > UINT32_MAX ? UINT32_MAX
                                                            : (uint32_t)stats->diag.count,
                             blob, len, err);
    unw_rows_free(&rows);
    return st;
}

/* A Breakpad .sym as a stored image: the index blobs an upload of a Mach-O
 * and its dSYM gives (symbol index, line index with inlines), plus the
 * STACK CFI rows in a blob of their own (cfi.h), so /v1/symbolicate answers
 * for a module whose binary the user does not have.
 *
 * The .sym's addresses are module-relative (relative to the image's __TEXT
 * vmaddr, which a .sym does not state): the image is stored with
 * text_vmaddr 0 and its symbol and line indexes are flagged RELATIVE, so
 * that once the image's binary or dSYM is uploaded too (text_vmaddr then
 * becomes theirs), store.c reads them at the right addresses. */
#ifndef SYMD_BREAKPAD_IMAGE_H
#define SYMD_BREAKPAD_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "../dsym/lineindex.h"
#include "../util/err.h"
#include "sym.h"

#define BP_IMAGE_KIND "breakpad"          /* store_image.kind of such an image */
#define BP_IMAGE_CFI_BLOB "breakpad_cfi"  /* image_data kind of its CFI blob */
#define BP_IMAGE_MAX_WARNINGS 8

typedef struct {
    uint8_t uuid[16];
    char arch[16];             /* "x86_64", "arm64", "arm64e" */
    char name[256];            /* the MODULE's name (cut to 255 bytes) */
    char debug_id[48];
    uint64_t text_size;        /* the highest address a record covers, rounded
                                  up to a page: the .sym states no size */
    uint32_t symbols;          /* FUNC and PUBLIC records in the symbol index */
    uint32_t functions;        /* FUNC starts (its function starts) */
    uint8_t *symidx;           /* owned */
    size_t symidx_len;
    uint8_t *lines;            /* owned; NULL when no FUNC has lines or INLINEs */
    size_t lines_len;
    uint8_t *cfi;              /* owned; NULL when there is no STACK CFI */
    size_t cfi_len;
    lineindex_stats stats;
    uint64_t cfi_entries, cfi_rows, stack_win;
    size_t nwarnings;          /* kinds of warnings (sym.h), the first
                                  BP_IMAGE_MAX_WARNINGS of them in warnings */
    char warnings[BP_IMAGE_MAX_WARNINGS][160];
} bp_image;

/* Reads a .sym (its first line a MODULE record) and builds its blobs. The
 * MODULE must name an Apple OS ("mac", "Mac", "ios", any case) and an arch
 * symd stores (bp_sym_arch); its debug id's first 32 hex digits are the
 * image's UUID. max_lines bounds the line index. Errors: SYMD_E_CORRUPT
 * (what and on which line), SYMD_E_UNSUPPORTED (another OS or arch),
 * SYMD_E_NO_UUID (a debug id of zeros), SYMD_E_TOO_LARGE, SYMD_E_NOMEM; on
 * error out holds nothing to free. */
symd_status bp_image_build(const uint8_t *buf, size_t len, size_t max_lines, bp_image *out,
                           symd_err *err);
void bp_image_free(bp_image *img);

#endif

/* libFuzzer target: the __unwind_info reader and encoding decoder over
 * arbitrary bytes (the first byte picks the arch; the section itself is
 * also the "code" indirect stack sizes are read from), then the stored
 * table built from its rows, checked and searched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../unwind/compact.h"
#include "../unwind/unwind.h"

typedef struct {
    const uint8_t *p;
    size_t n;
} text;

static bool read_text(void *ctx, uint64_t off, void *dst, size_t n)
{
    text *t = ctx;
    if (off > t->n || n > t->n - off)
        return false;
    memcpy(dst, t->p + off, n);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unw_arch arch = data[0] & 1 ? UNW_ARCH_ARM64 : UNW_ARCH_X86_64;
    data++, size--;
    unw_compact_entry *ents = NULL;
    size_t n = 0;
    unw_diag diag = {0};
    symd_err err = {0};
    if (unw_compact_read(data, size, &ents, &n, &diag, &err) != SYMD_OK)
        return 0;
    text t = {data, size};
    unw_rows rows = {0};
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && ents[i].start < ents[i - 1].end)
            __builtin_trap(); /* entries come out in order, not overlapping */
        unw_row row;
        uint32_t fde;
        if (unw_compact_row(arch, &ents[i], read_text, &t, &row, &fde, &diag) == UNW_COMPACT_ROW)
            unw_rows_push(&rows, &row);
    }
    unw_rows_normalize(&rows, &diag);
    uint8_t *blob;
    size_t len;
    if (unw_table_build(arch, &rows, 0, &blob, &len, &err) == SYMD_OK) {
        unw_table tb;
        if (unw_table_open(blob, len, &tb, &err) != SYMD_OK)
            __builtin_trap(); /* our own builder must produce valid tables */
        for (size_t i = 0; i < rows.n; i++) {
            unw_row r;
            if (!unw_table_find(&tb, rows.v[i].start, &r) || r.start != rows.v[i].start)
                __builtin_trap();
        }
        free(blob);
    }
    unw_rows_free(&rows);
    free(ents);
    return 0;
}

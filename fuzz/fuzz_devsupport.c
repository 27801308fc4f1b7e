/* libFuzzer target: what symd import reads before storing anything: a
 * DeviceSupport folder's name, its parent's, its Info.plist, and a Mach-O
 * file's headers (import/peek.c). The ranges peek says the indexes read
 * must be all they read: a slice rebuilt from those ranges alone (the rest
 * zero) gives the very symbol index the whole slice gives. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../import/devsupport.h"
#include "../import/peek.h"
#include "../macho/macho.h"
#include "../macho/symindex.h"

/* The symbol index of a slice, or NULL when the reader refuses it. */
static uint8_t *index_of(const uint8_t *buf, size_t len, size_t *blen)
{
    macho_image img;
    symd_err err = {0};
    if (macho_parse_image(buf, len, &img, &err) != SYMD_OK)
        return NULL;
    uint8_t *blob = NULL;
    if (symindex_build(&img, &blob, blen, NULL, NULL, &err) != SYMD_OK)
        blob = NULL;
    macho_image_free(&img);
    return blob;
}

static void check_peek(const uint8_t *data, size_t size)
{
    peek_slice sl[MACHO_MAX_SLICES];
    size_t n;
    symd_err err = {0};
    if (peek_slices(data, size < PEEK_HEAD ? size : PEEK_HEAD, size, sl, &n, &err) != SYMD_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        if (sl[i].offset > size || sl[i].size > size - sl[i].offset)
            __builtin_trap(); /* a slice outside the file */
        const uint8_t *s = data + sl[i].offset;
        size_t len = (size_t)sl[i].size;
        uint32_t cmds;
        symd_err_clear(&err);
        if (peek_commands_size(s, len < 32 ? len : 32, &sl[i], &cmds, &err) != SYMD_OK ||
            peek_load_commands(s, len, &sl[i], &err) != SYMD_OK)
            continue;
        uint8_t *sparse = calloc(1, len ? len : 1);
        if (!sparse)
            return;
        for (size_t k = 0; k < sl[i].nneed; k++) {
            const peek_range *r = &sl[i].need[k];
            if (r->off > len || r->size > len - r->off)
                __builtin_trap(); /* a range outside the slice */
            memcpy(sparse + r->off, s + r->off, (size_t)r->size);
        }
        size_t la = 0, lb = 0;
        uint8_t *a = index_of(s, len, &la), *b = index_of(sparse, len, &lb);
        if (a && (!b || la != lb || memcmp(a, b, la) != 0))
            __builtin_trap(); /* the ranges left out something the index reads */
        free(a);
        free(b);
        free(sparse);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    devsupport_id id;
    memset(&id, 0, sizeof id);
    char os[64];
    if (devsupport_parse_name((const char *)data, size, &id) &&
        (!id.os_build[0] || memchr(id.os_build, '/', strlen(id.os_build))))
        __builtin_trap(); /* an accepted name always has a build, never a '/' */
    (void)devsupport_os_of_parent((const char *)data, size, os, sizeof os);
    symd_err err = {0};
    memset(&id, 0, sizeof id);
    (void)devsupport_read_plist(data, size, &id, &err);
    check_peek(data, size);
    return 0;
}

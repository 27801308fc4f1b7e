/* The symbol index: a slice's function symbols, sorted once at upload into
 * one compact blob that lookups binary-search in place.
 *
 * Layout (little-endian):
 *   header  "SYMX" u32 version, u64 base, u32 nsyms, u32 nstarts,
 *           u32 strsize, u32 reserved                           (32 bytes)
 *   syms    nsyms   x {u32 start - base, u32 size, u32 name}     ascending
 *   starts  nstarts x  u32 function start - base                 ascending
 *   strings strsize bytes of NUL-terminated names
 * A symbol's size runs to the next symbol, the next function start or the
 * end of its section, whichever comes first. */
#ifndef SYMD_SYMINDEX_H
#define SYMD_SYMINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../macho/macho.h"
#include "../util/err.h"

#define SYMINDEX_VERSION 1

/* Builds the index blob of a parsed slice. *blob is malloc'ed (caller frees).
 * nsyms/nstarts report what went in. */
symd_status symindex_build(const macho_image *img, uint8_t **blob, size_t *len,
                           uint32_t *nsyms, uint32_t *nstarts, symd_err *err);

/* A validated view of a blob; points into it. */
typedef struct {
    const uint8_t *blob;
    size_t len;
    uint64_t base;
    uint32_t nsyms, nstarts, strsize;
    const uint8_t *syms, *starts;
    const char *strings;
} symindex;

/* Checks a blob (sizes, ordering, name offsets) before any lookup uses it. */
symd_status symindex_open(const uint8_t *blob, size_t len, symindex *idx,
                          symd_err *err);

typedef enum {
    SYMLOOK_SYMBOL,    /* name, sym_addr, offset are set */
    SYMLOOK_NO_SYMBOL, /* sym_addr is the containing function start if known */
} symlook_status;

typedef struct {
    symlook_status status;
    const char *name;   /* into the index's strings */
    uint64_t sym_addr;  /* vmaddr of the symbol / function start, 0 if none */
    bool has_sym_addr;
    uint64_t offset;    /* vmaddr - sym_addr */
} symlook;

/* Resolves a vmaddr. A function start between the nearest symbol and the
 * address means that symbol does not cover it (stripped binary): the answer
 * is then NO_SYMBOL with that function start, never a far-away symbol. */
void symindex_lookup(const symindex *idx, uint64_t vmaddr, symlook *out);

#endif

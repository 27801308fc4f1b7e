/* The symbol index: a slice's function symbols, sorted once at upload into
 * one compact blob that lookups binary-search in place.
 *
 * Layout (little-endian):
 *   header  "SYMX" u32 version, u64 base, u32 nsyms, u32 nstarts,
 *           u32 strsize, u32 flags                              (32 bytes)
 *           flags: SYMINDEX_F_RELATIVE (else 0; "reserved" before)
 *   syms    nsyms   x {u32 start - base, u32 size, u32 name}     ascending
 *   starts  nstarts x  u32 function start - base                 ascending
 *   strings strsize bytes of NUL-terminated names
 * A symbol's size runs to the next symbol, the next function start or the
 * end of its section, whichever comes first.
 *
 * Version 3 (written since Swift names are demangled) and 2 (C++ and Rust
 * only): bit 31 of size (SYMINDEX_DEMANGLED) says the display name follows
 * the raw name's NUL in strings; size is the low 31 bits. Without the bit,
 * the raw name is also the display name (in version 2 also for Swift names,
 * whose display names readers then demangle themselves). Version 1 (older
 * databases) has the same layout without the bit: size is all 32 bits and
 * every display name is the raw name. */
#ifndef SYMD_SYMINDEX_H
#define SYMD_SYMINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macho.h"
#include "../util/err.h"

#define SYMINDEX_VERSION 3
#define SYMINDEX_DEMANGLED 0x80000000u /* versions 2, 3: flag in the size field */
/* Header flag: addresses count from the image's __TEXT vmaddr (an index
 * built from a Breakpad .sym, whose addresses are module-relative): whoever
 * opens it for a stored image adds the image's text_vmaddr to base (store.c
 * does). */
#define SYMINDEX_F_RELATIVE 1u
/* Bytes all display names of an image may add to raw names of raw bytes
 * (real binaries: 0.7x for Rust, 2x for libstdc++). */
#define SYMINDEX_DISPLAY_BUDGET(raw) (4 * (size_t)(raw) + ((size_t)64 << 10))

/* Builds the index blob (version 3) of a parsed slice. *blob is malloc'ed
 * (caller frees). nsyms/nstarts report what went in. Each name goes through
 * symd_demangle once; all display names together may take at most
 * SYMINDEX_DISPLAY_BUDGET(raw string bytes) bytes, and a name that does not
 * fit keeps its raw name, so a hostile image cannot grow its index without
 * bound. */
symd_status symindex_build(const macho_image *img, uint8_t **blob, size_t *len,
                           uint32_t *nsyms, uint32_t *nstarts, symd_err *err);

/* The same from function symbols gathered elsewhere (an image of a dyld
 * shared cache, macho/dyld_cache.h): what symindex_build does after
 * macho_function_symbols. syms is sorted and deduplicated in place (n
 * entries; the caller still owns and frees it); fstarts ascending. */
symd_status symindex_build_symbols(macho_symbol *syms, size_t n, uint64_t text_vmaddr,
                                   const uint64_t *fstarts, size_t nfstarts,
                                   uint8_t **blob, size_t *len, uint32_t *nsyms,
                                   uint32_t *nstarts, symd_err *err);

/* Sets a built blob's header flags (SYMINDEX_F_*). */
static inline void symindex_set_flags(uint8_t *blob, uint32_t flags)
{
    blob[28] = (uint8_t)flags;
    blob[29] = (uint8_t)(flags >> 8);
    blob[30] = (uint8_t)(flags >> 16);
    blob[31] = (uint8_t)(flags >> 24);
}

/* A validated view of a blob; points into it. */
typedef struct {
    const uint8_t *blob;
    size_t len;
    uint64_t base;     /* as stored; store.c adds text_vmaddr when RELATIVE */
    uint32_t flags;    /* SYMINDEX_F_* */
    uint32_t version, nsyms, nstarts, strsize;
    uint32_t size_mask; /* of the size field: 0x7fffffff (v2, v3), 0xffffffff (v1) */
    const uint8_t *syms, *starts;
    const char *strings;
} symindex;

/* Checks a blob (sizes, ordering, name offsets, and that a flagged display
 * name lies inside the strings) before any lookup uses it. Versions 1 to 3. */
symd_status symindex_open(const uint8_t *blob, size_t len, symindex *idx,
                          symd_err *err);

typedef enum {
    SYMLOOK_SYMBOL,    /* name, sym_addr, offset are set */
    SYMLOOK_NO_SYMBOL, /* sym_addr is the containing function start if known */
} symlook_status;

typedef struct {
    symlook_status status;
    const char *name;    /* display name (demangled); into the index's strings */
    const char *mangled; /* raw name (Mach-O's leading '_' removed); == name
                            when there is nothing to demangle */
    uint64_t sym_addr;  /* vmaddr of the symbol / function start, 0 if none */
    bool has_sym_addr;
    uint64_t offset;    /* vmaddr - sym_addr */
} symlook;

/* Resolves a vmaddr. A function start between the nearest symbol and the
 * address means that symbol does not cover it (stripped binary): the answer
 * is then NO_SYMBOL with that function start, never a far-away symbol. */
void symindex_lookup(const symindex *idx, uint64_t vmaddr, symlook *out);

#endif

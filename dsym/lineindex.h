/* The line index: a slice's DWARF (functions, line tables, inlined calls)
 * converted once at upload into one compact blob that lookups search in
 * place. Request time never reads DWARF.
 *
 * Layout (little-endian):
 *   header  "LINX" u32 version, u64 base, u32 nfuncs, u32 nnames,
 *           u32 nfiles, u32 datasize, u32 strsize, u32 shift,
 *           u32 reserved[2]                                   (48 bytes)
 *   funcs   nfuncs x {u32 start - base, u32 size, u32 data}  ascending, disjoint
 *   names   nnames x u32 raw name's string offset; bit 31 set: the display
 *           (demangled) name is the string right after it
 *   files   nfiles x u32 string offset         full paths
 *   data    datasize bytes of function records (below)
 *   strings strsize bytes of NUL-terminated strings
 *
 * A function record (all numbers ULEB128; "name"/"file" are index + 1, 0 =
 * none; addresses relative to origin = the function's lowest address):
 *   origin, name, rows_bytes, rows[], inline_bytes, nodes[]
 *   (origin: 0 = the start of the table entry that led here, for functions
 *   of one range; else origin - base + 1)
 *   (the function's own name: 0 none, 1 the symbol table's at origin,
 *   n >= 2 name n - 2)
 *   row  = op < 0x80: bit 6 = back to the previous file (and its line),
 *          address delta ((op >> 3) & 7) << shift, line delta (op & 7) - 3;
 *          then column
 *        | op 0x81-0xff: same file, line delta (op & 0x7f) - 64; then
 *          address delta >> shift, column
 *        | op 0x80: address delta, zigzag(line delta) << 1 | file_changed,
 *          [file if changed], column
 *          Two (file, line) registers, current and previous: a file change
 *          makes the current one previous. Address deltas run from the
 *          previous row (the first from origin); file 0 = no line
 *          information from here on.
 *   node = nranges << 3 | quantized << 2 | has_children << 1 | same_file,
 *          nranges x {zigzag(lo - cursor), length} (both >> shift when
 *          quantized; cursor = the previous sibling's last end, for a first
 *          child its parent's first lo, or origin; then the previous range's
 *          end), name, [call_file unless same_file: the previous sibling's,
 *          0 for a first child], zigzag(call_line - the previous sibling's
 *          (0 for a first child)), call_column, [children_bytes], children
 *   The inline tree is preorder; a lookup descends into the last node of a
 *   level that holds the address and skips the others by children_bytes.
 * Several func entries (a function's ranges) may share one record. */
#ifndef SYMD_LINEINDEX_H
#define SYMD_LINEINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../macho/macho.h"
#include "../macho/symindex.h"
#include "../util/err.h"

/* 2: Swift linkage names carry their display name too (version 1 left
 * them raw; readers demangle those themselves). */
#define LINEINDEX_VERSION 2

/* Signed numbers in records: zigzag, so small magnitudes take one byte. */
static inline uint64_t lix_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t lix_unzigzag(uint64_t z)
{
    return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
}
#define LINEINDEX_MAX_DEPTH 64 /* inline levels kept per address */

typedef struct {
    uint32_t functions; /* DWARF functions with code */
    uint32_t inlined;   /* inlined-call records */
    uint32_t rows;      /* line rows kept (after dropping repeats) */
    uint32_t units;     /* compile units read */
} lineindex_stats;

/* Reads the DWARF of a parsed slice (a dSYM companion, or any slice whose
 * __DWARF segment carries .debug_info) and builds the index blob. syms (may
 * be NULL) is the slice's own symbol index: a function whose symbol at its
 * first address has the same raw name keeps no name of its own (lookups say
 * so with outer_from_symbols), since the symbol table names outer functions
 * anyway; the store never lets a slice's symbol index shrink. *blob is
 * NULL (and the result SYMD_OK) when the slice has no DWARF. Corrupt DWARF is
 * SYMD_E_BAD_DEBUG_INFO, with where in the message; DWARF beyond what we read
 * (e.g. split DWARF, unknown forms) SYMD_E_UNSUPPORTED. max_bytes bounds the
 * memory the conversion may use for the index. */
symd_status lineindex_build(const macho_image *img, const symindex *syms,
                            size_t max_bytes, uint8_t **blob, size_t *len,
                            lineindex_stats *stats, symd_err *err);

/* A validated view of a blob; points into it. */
typedef struct {
    const uint8_t *blob;
    size_t len;
    uint64_t base;
    uint32_t version; /* 1 or 2 */
    uint32_t nfuncs, nnames, nfiles, datasize, strsize, shift;
    const uint8_t *funcs, *names, *files, *data;
    const char *strings;
} lineindex;

/* Checks a blob's header, table ordering and every table entry (names and
 * files point at NUL-terminated strings, records inside data). */
symd_status lineindex_open(const uint8_t *blob, size_t len, lineindex *idx,
                           symd_err *err);

typedef struct {
    const char *name, *mangled; /* display and raw; NULL when DWARF has none */
    const char *file;           /* NULL when unknown */
    uint32_t line, column;      /* 0 = unknown */
} lineframe;

typedef struct {
    size_t n;                   /* frames, innermost first; the last is the
                                   function that holds the address */
    uint64_t func_start;        /* vmaddr where that function's range starts */
    bool outer_from_symbols;    /* the last frame's name is the symbol table's
                                   at func_start (its name fields are NULL) */
    lineframe f[LINEINDEX_MAX_DEPTH + 1];
} linelook;

/* Resolves a vmaddr to its inline chain. false when no DWARF function covers
 * it (or its record fails to decode: never trusted blindly). */
bool lineindex_lookup(const lineindex *idx, uint64_t vmaddr, linelook *out);

#endif

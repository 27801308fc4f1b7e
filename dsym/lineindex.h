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
 *   origin - base, name, rows_bytes, rows[], inline_bytes, nodes[]
 *   row  = one byte op < 240: address delta (op >> 3) << shift, line delta
 *          (op & 7) - 3, same file; then column
 *        | 0xff, address delta, zigzag(line delta) << 1 | file_changed,
 *          [file if changed], column
 *          (address deltas from the previous row, the first from origin;
 *          file 0 = no line information from here on)
 *   node = nranges, {lo delta, length} x nranges (lo relative to origin for
 *          the first, then to the previous range's end), name, call_file,
 *          call_line, call_column, children_bytes, children nodes[]
 * Several func entries (a function's ranges) may share one record. */
#ifndef SYMD_LINEINDEX_H
#define SYMD_LINEINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../macho/macho.h"
#include "../util/err.h"

#define LINEINDEX_VERSION 1
#define LINEINDEX_MAX_DEPTH 64 /* inline levels kept per address */

typedef struct {
    uint32_t functions; /* DWARF functions with code */
    uint32_t inlined;   /* inlined-call records */
    uint32_t rows;      /* line rows kept (after dropping repeats) */
    uint32_t units;     /* compile units read */
} lineindex_stats;

/* Reads the DWARF of a parsed slice (a dSYM companion, or any slice whose
 * __DWARF segment carries .debug_info) and builds the index blob. *blob is
 * NULL (and the result SYMD_OK) when the slice has no DWARF. Corrupt DWARF is
 * SYMD_E_BAD_DEBUG_INFO, with where in the message; DWARF beyond what we read
 * (e.g. split DWARF, unknown forms) SYMD_E_UNSUPPORTED. max_bytes bounds the
 * memory the conversion may use for the index. */
symd_status lineindex_build(const macho_image *img, size_t max_bytes, uint8_t **blob,
                            size_t *len, lineindex_stats *stats, symd_err *err);

/* A validated view of a blob; points into it. */
typedef struct {
    const uint8_t *blob;
    size_t len;
    uint64_t base;
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
    lineframe f[LINEINDEX_MAX_DEPTH + 1];
} linelook;

/* Resolves a vmaddr to its inline chain. false when no DWARF function covers
 * it (or its record fails to decode: never trusted blindly). */
bool lineindex_lookup(const lineindex *idx, uint64_t vmaddr, linelook *out);

#endif

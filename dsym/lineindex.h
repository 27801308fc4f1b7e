/* The line index: a slice's DWARF (functions, line tables, inlined calls)
 * converted once at upload into one compact blob that lookups search in
 * place. Request time never reads DWARF.
 *
 * Layout (little-endian):
 *   header  "LINX" u32 version, u64 base, u32 nfuncs, u32 nnames,
 *           u32 nfiles, u32 datasize, u32 strsize, u32 shift,
 *           u32 flags, u32 reserved                           (48 bytes)
 *           flags: LINEINDEX_F_RELATIVE (else 0)
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
/* Header flag: addresses count from the image's __TEXT vmaddr, not from 0
 * (an index built from a Breakpad .sym, whose addresses are module-relative):
 * whoever opens it for a stored image adds the image's text_vmaddr to base
 * (store.c does), so it serves whatever vmaddr the image turns out to have. */
#define LINEINDEX_F_RELATIVE 1u

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

/* ---- an index from records read elsewhere (a Breakpad .sym) ----
 * Functions are added one at a time with their rows and inline trees, in
 * any order; finish sorts them (overlapping ones: the lower start keeps the
 * shared bytes, as for DWARF). */
typedef struct lineindex_writer lineindex_writer;

typedef struct {
    uint64_t addr;
    uint32_t file;       /* lineindex_writer_file id + 1; 0: no line from here */
    uint32_t line, column;
} lineindex_row;

typedef struct {
    uint64_t lo, hi;
} lineindex_range;

typedef struct {
    uint32_t parent;     /* index of the parent node in the function's nodes,
                            UINT32_MAX: the function itself; parents come first */
    uint32_t name;       /* lineindex_writer_name id + 1, 0: none */
    uint32_t call_file;  /* lineindex_writer_file id + 1, 0: none */
    uint32_t call_line, call_column;
    const lineindex_range *ranges; /* inside the parent's */
    size_t nranges;
} lineindex_node;

/* A writer for an index whose addresses start at base (no function lower),
 * rows quantized by 1 << shift bytes where they can be (arm64: 2), flags
 * for the header. syms (may be NULL) is the image's symbol index: a function
 * named as its symbol there keeps no name of its own (lineindex_build's
 * rule). max_bytes bounds the index; work_hint (the input's size) bounds
 * the rows visited. */
symd_status lineindex_writer_new(uint64_t base, uint32_t shift, uint32_t flags,
                                 const symindex *syms, size_t max_bytes, uint64_t work_hint,
                                 lineindex_writer **out, symd_err *err);
/* The id of a file path / of a function name (a raw name: demangled for
 * display when it is mangled), interned. */
symd_status lineindex_writer_file(lineindex_writer *w, const char *path, uint32_t *id,
                                  symd_err *err);
symd_status lineindex_writer_name(lineindex_writer *w, const char *name, uint32_t *id,
                                  symd_err *err);
/* Adds one function of range [lo, hi) named name (writer_name id + 1, 0:
 * none): rows ascending by address (a row holds until the next; rows
 * outside [lo, hi) are not kept), inline nodes in preorder. */
symd_status lineindex_writer_function(lineindex_writer *w, uint64_t lo, uint64_t hi,
                                      uint32_t name, const lineindex_row *rows, size_t nrows,
                                      const lineindex_node *nodes, size_t nnodes,
                                      symd_err *err);
/* The blob (malloc'ed, the caller's; NULL when no function was added). */
symd_status lineindex_writer_finish(lineindex_writer *w, uint8_t **blob, size_t *len,
                                    lineindex_stats *stats, symd_err *err);
void lineindex_writer_free(lineindex_writer *w);

/* A validated view of a blob; points into it. */
typedef struct {
    const uint8_t *blob;
    size_t len;
    uint64_t base;    /* as stored; store.c adds text_vmaddr when RELATIVE */
    uint32_t flags;   /* LINEINDEX_F_* */
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

/* ---- a whole function record (symd dump-syms) ---- */

typedef struct {
    uint64_t addr;           /* vmaddr where the row starts */
    const char *file;        /* NULL: no line information from here */
    uint32_t line, column;
} lineindex_xrow;

typedef struct {
    uint32_t depth;          /* 0: inlined into the function itself */
    uint32_t parent;         /* index in nodes, UINT32_MAX: the function */
    const char *name, *mangled; /* NULL when the index has none */
    const char *call_file;   /* NULL when unknown */
    uint32_t call_line, call_column;
    size_t range0, nranges;  /* into ranges (vmaddrs) */
} lineindex_xnode;

/* Function entry i (i < nfuncs) of an index, decoded whole: its range, its
 * own name, every row of its record and its inline tree in preorder.
 * Arrays are malloc'ed (lineindex_xfunc_free). */
typedef struct {
    uint64_t start, size;    /* this entry's range (vmaddrs) */
    uint64_t origin;         /* the record's lowest address */
    bool name_from_symbols;  /* the symbol table's name at origin names it */
    const char *name, *mangled; /* the record's own name, NULL when none */
    lineindex_xrow *rows;
    size_t nrows;
    lineindex_xnode *nodes;
    size_t nnodes;
    lineindex_range *ranges;
    size_t nranges;
} lineindex_xfunc;

/* false when the record does not decode (or memory runs out): a blob that
 * lineindex_open accepted may still hold records that do not read. */
bool lineindex_function(const lineindex *idx, uint32_t i, lineindex_xfunc *out);
void lineindex_xfunc_free(lineindex_xfunc *f);

/* Resolves a vmaddr to its inline chain. false when no DWARF function covers
 * it (or its record fails to decode: never trusted blindly). */
bool lineindex_lookup(const lineindex *idx, uint64_t vmaddr, linelook *out);

#endif

/* Internals of the DWARF reader (dsym/dwarf*.c): the model and what its pieces share. */
#ifndef SYMD_DWARF_INT_H
#define SYMD_DWARF_INT_H

#include "lineindex.h"

#include "../util/cursor.h"
#include "../util/dynbuf.h"
#include "../util/util.h"

/* Corrupt DWARF, reported with the line that noticed it. */
#define BAD(x, ...) \
    symd_fail_at((x)->err, SYMD_E_BAD_DEBUG_INFO, __FILE__, __LINE__, __VA_ARGS__)

/* DWARF constants we use. */
enum {
    TAG_compile_unit = 0x11, TAG_partial_unit = 0x3c, TAG_subprogram = 0x2e,
    TAG_inlined_subroutine = 0x1d,

    AT_name = 0x03, AT_stmt_list = 0x10, AT_low_pc = 0x11, AT_high_pc = 0x12,
    AT_comp_dir = 0x1b, AT_abstract_origin = 0x31, AT_declaration = 0x3c,
    AT_specification = 0x47, AT_ranges = 0x55, AT_call_column = 0x57,
    AT_call_file = 0x58, AT_call_line = 0x59, AT_linkage_name = 0x6e,
    AT_str_offsets_base = 0x72, AT_addr_base = 0x73, AT_rnglists_base = 0x74,
    AT_MIPS_linkage_name = 0x2007, AT_GNU_addr_base = 0x2133,

    FORM_addr = 0x01, FORM_block2 = 0x03, FORM_block4 = 0x04, FORM_data2 = 0x05,
    FORM_data4 = 0x06, FORM_data8 = 0x07, FORM_string = 0x08, FORM_block = 0x09,
    FORM_block1 = 0x0a, FORM_data1 = 0x0b, FORM_flag = 0x0c, FORM_sdata = 0x0d,
    FORM_strp = 0x0e, FORM_udata = 0x0f, FORM_ref_addr = 0x10, FORM_ref1 = 0x11,
    FORM_ref2 = 0x12, FORM_ref4 = 0x13, FORM_ref8 = 0x14, FORM_ref_udata = 0x15,
    FORM_indirect = 0x16, FORM_sec_offset = 0x17, FORM_exprloc = 0x18,
    FORM_flag_present = 0x19, FORM_strx = 0x1a, FORM_addrx = 0x1b,
    FORM_ref_sup4 = 0x1c, FORM_strp_sup = 0x1d, FORM_data16 = 0x1e,
    FORM_line_strp = 0x1f, FORM_ref_sig8 = 0x20, FORM_implicit_const = 0x21,
    FORM_loclistx = 0x22, FORM_rnglistx = 0x23, FORM_ref_sup8 = 0x24,
    FORM_strx1 = 0x25, FORM_strx2 = 0x26, FORM_strx3 = 0x27, FORM_strx4 = 0x28,
    FORM_addrx1 = 0x29, FORM_addrx2 = 0x2a, FORM_addrx3 = 0x2b, FORM_addrx4 = 0x2c,
    FORM_GNU_addr_index = 0x1f01, FORM_GNU_str_index = 0x1f02,
    FORM_GNU_ref_alt = 0x1f20, FORM_GNU_strp_alt = 0x1f21,

    UT_compile = 1, UT_type = 2, UT_partial = 3, UT_skeleton = 4,
    UT_split_compile = 5, UT_split_type = 6,

    LNCT_path = 1, LNCT_directory_index = 2,
};

#define NONE UINT32_MAX
/* Work budgets: legitimate DWARF reads each line table, range list and line
 * row about once; hostile DWARF that makes many units share one line table,
 * many DIEs share one long range list or many functions overlap one run of
 * rows would otherwise cost the product of the two. */
#define WORK_SLACK ((uint64_t)16 << 20)

typedef struct {
    const uint8_t *p;
    size_t len;
} sect;

enum { S_INFO, S_ABBREV, S_LINE, S_STR, S_LINE_STR, S_STR_OFF, S_ADDR, S_RANGES,
       S_RNGLISTS, S_N };

/* ---- small containers ---------------------------------------------------- */

/* u64 → u32 open-addressing map (keys stored + 1 so 0 marks empty). */
typedef struct {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap, n;
} u64map;

/* The value stored for k into *v; false when absent. */
bool map_get(const u64map *m, uint64_t k, uint32_t *v);
/* Sets k to v, growing the table; false only when out of memory (the caller
 * records it). */
bool map_put(u64map *m, uint64_t k, uint32_t v);
/* Frees the table; m is then empty and usable again. */
void map_free(u64map *m);

/* Growable array of fixed-size elements. */
#define VEC(T) struct { T *v; size_t n, cap; }
#define VEC_PUSH(x, vec, val)                                                  \
    ((vec).n < (vec).cap ||                                                    \
             array_grow((void **)&(vec).v, &(vec).cap, (vec).n + 1, sizeof *(vec).v) \
         ? ((vec).v[(vec).n++] = (val), true)                                  \
         : (nomem(x), false))

/* ---- model --------------------------------------------------------------- */

typedef struct {
    uint64_t off, end, die_off; /* unit bytes in .debug_info */
    uint16_t version;
    uint8_t addr_size, offset_size, unit_type;
    uint64_t abbrev_off;
    bool prepared, skip;
    int table; /* abbrev table */
    uint64_t str_base, addr_base, rnglists_base, low_pc;
    bool has_str_base, has_addr_base, has_rnglists_base;
    const char *name, *comp_dir;
    bool has_stmt;
    uint64_t stmt;
} unit;

typedef struct {
    uint64_t code;
    uint32_t tag;
    bool children;
    uint32_t spec0, nspec;
} abbrev;

typedef struct {
    uint32_t at, form;
    int64_t implicit;
} aspec;

typedef struct {
    uint64_t off;
    abbrev *a;
    size_t n;
    aspec *specs;
    size_t nspecs;
    uint32_t *by_code; /* dense: by_code[code] = index + 1 */
    size_t ncode;
} atable;

typedef struct {
    uint64_t lo, hi;
} range;

typedef struct {
    uint64_t addr;
    uint32_t file; /* global file id + 1; 0 = no line information */
    uint32_t line, col;
    uint32_t order; /* end rows sort first at one address, then table order */
} lrow;

typedef struct {
    uint32_t func;  /* function this node belongs to */
    uint32_t parent; /* node index, NONE for a function's root */
    uint32_t depth;
    uint32_t name;  /* name id, NONE */
    uint32_t r0, nr; /* ranges in cu_ranges */
    uint32_t call_file; /* global file id + 1, 0 none */
    uint32_t call_line, call_col;
    size_t bytes, child_bytes; /* encoded subtree size, children's size */
    uint64_t base, next;        /* where its ranges count from; its first child's */
    uint32_t line_base, next_line; /* same for call lines */
    uint32_t file_base, next_file; /* and call files */
} node;

typedef struct {
    uint32_t start, size, data, order;
} fentry;

typedef struct {
    const symindex *syms; /* the slice's symbol index, or NULL */
    symd_err *err;
    sect s[S_N];
    uint64_t base;
    range *code; /* code sections, sorted */
    size_t ncode;

    VEC(unit) units;
    VEC(atable) tables;
    u64map table_by_off;
    u64map name_cache; /* DIE offset → name id << 1 | is_linkage */

    /* index being built */
    dynbuf strings, data;
    struct { uint32_t off, hash; } *strset;
    size_t strset_cap, strset_n;
    VEC(uint32_t) names;    /* name id → raw string offset | display flag */
    VEC(uint32_t) final_of; /* name id → its id in the index + 1 (0: unused) */
    VEC(uint32_t) finals;   /* id in the index → name id, in first-use order */
    u64map name_by_raw;     /* raw string offset → name id */
    VEC(uint32_t) files;    /* file id → string offset */
    u64map file_by_str;
    VEC(fentry) funcs;

    /* per unit scratch */
    VEC(uint32_t) cu_files; /* line table file index → global id + 1 (0 bad) */
    VEC(lrow) rows;
    VEC(range) cu_ranges;
    VEC(node) nodes;
    VEC(range) tmp;
    dynbuf path;
    lineindex_stats stats;
    uint32_t shift; /* row address deltas in 1 << shift units (arm64: 4) */
    size_t display_bytes, display_budget; /* demangled names so far, limit */
    uint64_t work_lines, work_ranges, work_rows; /* see WORK_SLACK */
    uint64_t row_budget; /* more rows encode_rows may visit (records read
                            elsewhere: lineindex_writer) */
    uint32_t flags;      /* the header's flags (LINEINDEX_F_*) */
} ctx;

/* Records that memory ran out (SYMD_E_NOMEM); VEC_PUSH calls it, so its
 * callers only return false. */
void nomem(ctx *x);

/* ---- readers ------------------------------------------------------------- */

/* A section offset of size 4 or 8 (32- or 64-bit DWARF); the cursor advances
 * only on success, like cur_uN's. */
bool cur_off(cursor *c, uint8_t size, uint64_t *v);
/* An n-byte little-endian unsigned number (n <= 8). */
bool cur_uN(cursor *c, unsigned n, uint64_t *v);
/* Reads "unit_length" (32- or 64-bit DWARF), checked against the bytes left;
 * what names the structure in the error. */
bool read_length(ctx *x, cursor *c, const char *what, uint64_t *len,
                 uint8_t *offset_size);

/* ---- attribute values ---------------------------------------------------- */

typedef enum {
    V_NONE, V_STR, V_STRP, V_LINE_STRP, V_STRX, V_ADDR, V_ADDRX, V_CONST,
    V_REF, V_SECOFF, V_RNGLISTX, V_FLAG, V_OTHER,
} vclass;

typedef struct {
    vclass cls;
    uint64_t u;
    const char *s; /* V_STR */
} val;

/* Form sizes depend on the unit (or line table) that holds them. */
typedef struct {
    uint16_t version;
    uint8_t addr_size, offset_size;
    uint64_t unit_off; /* for unit-relative references */
} fctx;

/* Reads one attribute value of form, so attributes we do not keep are read
 * past too; the cursor advances only on success. An unknown form is corrupt. */
bool read_form(ctx *x, const fctx *f, cursor *c, uint32_t form,
               int64_t implicit, val *v);
/* The string a value names (inline, .debug_str, .debug_line_str or through
 * u's string offsets), checked against its section; *out stays NULL for a
 * value of a non-string form. */
bool unit_str(ctx *x, const unit *u, const val *v, const char **out);

/* ---- units and abbreviations --------------------------------------------- */

/* Reads every unit header of .debug_info into x->units, in file order. */
symd_status read_units(ctx *x);
/* The abbreviation with code, or NULL. */
const abbrev *find_abbrev(const atable *t, uint64_t code);

/* The attributes of one DIE that we care about. */
typedef struct {
    uint64_t off; /* DIE offset */
    uint32_t tag;
    bool children;
    val name, linkage, low, high, ranges, origin, spec, call_file, call_line,
        call_col, decl, stmt, comp_dir, str_base, addr_base, rng_base;
} die;

/* Reads the DIE at c (its abbreviation code already consumed into a); only
 * the attributes above are kept, the rest are read past. */
bool read_die(ctx *x, const unit *u, const atable *t, const abbrev *a,
              cursor *c, die *d);
/* Reads the unit DIE once (bases, comp_dir, line table offset, whether the
 * unit is skipped), before the unit's DIEs or any reference into it. */
symd_status prepare_unit(ctx *x, unit *u);

/* ---- strings, names, files ----------------------------------------------- */

/* The name id of a raw (linkage) name, demangled once. A name whose display
 * form differs is stored as "raw\0display\0" and its table entry flagged. */
bool name_id(ctx *x, const char *raw, uint32_t *id);
/* The file id of a full path (interned once per path). */
bool file_id(ctx *x, const char *path, size_t n, uint32_t *id);
/* Name of the subroutine DIE d (read from unit u), following
 * DW_AT_specification then DW_AT_abstract_origin as llvm-symbolizer does: the
 * first linkage name on the chain, else the first plain name. *out is name
 * id << 1 | is_linkage, or NONE; hops is 0 for a DIE the walk met. */
bool die_name_of(ctx *x, const unit *u, const die *d, int hops, uint32_t *out);

/* ---- address ranges ------------------------------------------------------ */

/* Sorts v[0..n), drops empty ranges and merges overlaps; returns the count. */
size_t normalize(range *v, size_t n);
/* The DIE's code ranges into x->tmp (unsorted): DW_AT_ranges (either list
 * format) or low_pc/high_pc, every range counted against the work budget. */
bool die_ranges(ctx *x, const unit *u, const die *d);
/* Keeps only the parts of x->tmp that lie in code sections, sorted. */
void clip_to_code(ctx *x);

/* ---- line programs (dwarf_line.c) ---------------------------------------- */

/* Parses the unit's line program into x->rows (sorted by address, an end of
 * sequence before a row at one address) and x->cu_files (line table file
 * index → file id + 1). */
symd_status read_lines(ctx *x, const unit *u);

/* ---- the inline tree (dwarf_inline.c) ------------------------------------ */

/* Adds a node for x->tmp's ranges (normalized into x->cu_ranges): a
 * function's root (parent NONE) or an inlined call under parent; *idx is the
 * node. */
bool add_node(ctx *x, uint32_t func, uint32_t parent, uint32_t depth,
              uint32_t name, uint32_t *idx);
/* The DW_TAG_inlined_subroutine d met inside node cur (NONE: outside every
 * function): a node of cur's function when it has code and the tree is not
 * LINEINDEX_MAX_DEPTH deep yet; *child is that node, else NONE. */
bool add_inlined(ctx *x, const unit *u, const die *d, uint32_t cur, uint32_t *child);
/* perm[a..b) are one function's nodes in preorder, root first. Lays them out
 * before the record is written: each node's bases from its parent's running
 * cursor, then encoded sizes bottom-up, since a parent's fields hold its
 * children's bytes. The inlined calls' names get their index ids here, in
 * reverse preorder and before the root's: that order is in the bytes. */
void layout_tree(ctx *x, const uint32_t *perm, size_t a, size_t b, uint64_t origin);
/* Writes the laid-out nodes below the root into x->data; false when the
 * index outgrows its limit. */
bool write_tree(ctx *x, const uint32_t *perm, size_t a, size_t b);

/* ---- the DIE walk and function records (dwarf_die.c) --------------------- */

/* Appends v as ULEB128; false (SYMD_E_TOO_LARGE) past b's limit. */
bool put_uleb(ctx *x, dynbuf *b, uint64_t v);
/* The index's id of name id, given in the order records first use names. */
bool use_name(ctx *x, uint32_t id, uint32_t *fin);
/* Walks one unit's DIEs into function and inline nodes and encodes its
 * functions into x->data; a unit prepare_unit marks skipped adds nothing. */
symd_status walk_unit(ctx *x, unit *u);
/* Encodes the nfuncs functions whose nodes are in x->nodes (each
 * function's in preorder, root first; ranges in x->cu_ranges) with the rows
 * of x->rows into x->data and x->funcs. */
symd_status encode_unit(ctx *x, uint32_t nfuncs);

/* ---- the blob (dwarf.c) -------------------------------------------------- */

/* The index of every function encoded so far: header, tables, data,
 * strings (only those records use). *blob is malloc'ed. */
symd_status assemble_index(ctx *x, uint8_t **blob, size_t *len);
/* Frees everything x holds. */
void ctx_free(ctx *x);

#endif

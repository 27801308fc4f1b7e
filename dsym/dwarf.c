/* DWARF reader (versions 2-5): a slice's __DWARF sections → the line index.
 *
 * One pass per compile unit: its line program becomes sorted rows, its DIE
 * tree the functions with code and their inlined calls; each function is
 * encoded into the index as soon as its unit is done, so memory follows the
 * largest unit, not the file. Names follow DW_AT_abstract_origin and
 * DW_AT_specification the way llvm-symbolizer does (a linkage name anywhere
 * on the chain first, then a plain name) and are cached per DIE offset.
 *
 * Every offset, index and count read from the sections is checked against
 * the bytes that hold it; corrupt DWARF is SYMD_E_BAD_DEBUG_INFO. */
#include "lineindex.h"

#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../demangle/demangle.h"
#include "../util/dynbuf.h"
#include "../util/util.h"

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
#define MAX_DIE_DEPTH 1024 /* DIE nesting; deeper is corrupt */
#define MAX_NAME_HOPS 16   /* abstract_origin/specification hops */
#define MAX_ABBREV_ATTRS 512 /* real abbreviations have a few dozen */
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
static const char *const sect_names[S_N] = {
    "__debug_info", "__debug_abbrev", "__debug_line", "__debug_str",
    "__debug_line_str", "__debug_str_offs", "__debug_addr", "__debug_ranges",
    "__debug_rnglists"};

/* ---- small containers ---------------------------------------------------- */

/* u64 → u32 open-addressing map (keys stored + 1 so 0 marks empty). */
typedef struct {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap, n;
} u64map;

static size_t hash_u64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k;
}

static bool map_get(const u64map *m, uint64_t k, uint32_t *v)
{
    if (!m->cap)
        return false;
    for (size_t i = hash_u64(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == 0)
            return false;
        if (m->keys[i] == k + 1) {
            *v = m->vals[i];
            return true;
        }
    }
}

static bool map_put(u64map *m, uint64_t k, uint32_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        uint64_t *keys = calloc(cap, sizeof *keys);
        uint32_t *vals = malloc(cap * sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return false;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            size_t j = hash_u64(m->keys[i] - 1) & (cap - 1);
            while (keys[j])
                j = (j + 1) & (cap - 1);
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t i = hash_u64(k) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != k + 1)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        m->n++;
    m->keys[i] = k + 1;
    m->vals[i] = v;
    return true;
}

static void map_free(u64map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

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
} ctx;

static void nomem(ctx *x)
{
    symd_fail(x->err, SYMD_E_NOMEM, "out of memory reading DWARF");
}

/* ---- readers ------------------------------------------------------------- */

static bool cur_off(cursor *c, uint8_t size, uint64_t *v)
{
    if (size == 8)
        return cur_u64le(c, v);
    uint32_t w;
    if (!cur_u32le(c, &w))
        return false;
    *v = w;
    return true;
}

static bool cur_uN(cursor *c, unsigned n, uint64_t *v)
{
    const uint8_t *b;
    if (!cur_take(c, n, &b))
        return false;
    uint64_t r = 0;
    for (unsigned i = 0; i < n; i++)
        r |= (uint64_t)b[i] << (8 * i);
    *v = r;
    return true;
}

/* A NUL-terminated string at off inside s, or NULL. */
static const char *sect_str(const sect *s, uint64_t off)
{
    if (off >= s->len)
        return NULL;
    return memchr(s->p + off, 0, s->len - off) ? (const char *)s->p + off : NULL;
}

/* Reads "unit_length" (32- or 64-bit DWARF). */
static bool read_length(ctx *x, cursor *c, const char *what, uint64_t *len,
                        uint8_t *offset_size)
{
    uint32_t l32;
    if (!cur_u32le(c, &l32))
        return BAD(x, "%s at 0x%zx: truncated length", what, c->pos), false;
    *offset_size = 4;
    if (l32 == 0xffffffffu) {
        if (!cur_u64le(c, len))
            return BAD(x, "%s at 0x%zx: truncated 64-bit length", what, c->pos), false;
        *offset_size = 8;
    } else if (l32 >= 0xfffffff0u) {
        return BAD(x, "%s at 0x%zx: reserved length 0x%x", what, c->pos - 4, l32), false;
    } else {
        *len = l32;
    }
    if (*len > cur_left(c))
        return BAD(x, "%s at 0x%zx: length 0x%llx runs past the section", what,
                   c->pos, (unsigned long long)*len), false;
    return true;
}

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

/* Reads one attribute value of form; the cursor advances only on success. */
static bool read_form(ctx *x, const fctx *f, cursor *c, uint32_t form,
                      int64_t implicit, val *v)
{
    size_t at = c->pos;
    uint64_t u = 0;
    bool ok = true;
    v->cls = V_OTHER;
    v->u = 0;
    for (int hops = 0; form == FORM_indirect; hops++) {
        if (hops > 4 || !cur_uleb(c, &u) || u > UINT32_MAX)
            goto bad;
        form = (uint32_t)u;
    }
    switch (form) {
    case FORM_addr:
        ok = cur_uN(c, f->addr_size, &v->u);
        v->cls = V_ADDR;
        break;
    case FORM_block2: ok = cur_uN(c, 2, &u) && cur_skip(c, (size_t)u); break;
    case FORM_block4: ok = cur_uN(c, 4, &u) && cur_skip(c, (size_t)u); break;
    case FORM_block:
    case FORM_exprloc:
        ok = cur_uleb(c, &u) && u <= cur_left(c) && cur_skip(c, (size_t)u);
        break;
    case FORM_block1: ok = cur_uN(c, 1, &u) && cur_skip(c, (size_t)u); break;
    case FORM_data1: ok = cur_uN(c, 1, &v->u); v->cls = V_CONST; break;
    case FORM_data2: ok = cur_uN(c, 2, &v->u); v->cls = V_CONST; break;
    case FORM_data4: ok = cur_uN(c, 4, &v->u); v->cls = V_CONST; break;
    case FORM_data8: ok = cur_uN(c, 8, &v->u); v->cls = V_CONST; break;
    case FORM_data16: ok = cur_skip(c, 16); break;
    case FORM_udata: ok = cur_uleb(c, &v->u); v->cls = V_CONST; break;
    case FORM_sdata: {
        int64_t s = 0;
        ok = cur_sleb(c, &s);
        v->u = (uint64_t)s;
        v->cls = V_CONST;
        break;
    }
    case FORM_implicit_const: v->u = (uint64_t)implicit; v->cls = V_CONST; break;
    case FORM_flag: ok = cur_uN(c, 1, &v->u); v->cls = V_FLAG; break;
    case FORM_flag_present: v->u = 1; v->cls = V_FLAG; break;
    case FORM_string: {
        size_t left = cur_left(c);
        const uint8_t *p = c->p + c->pos;
        const uint8_t *nul = memchr(p, 0, left);
        if (!nul)
            goto bad;
        v->s = (const char *)p;
        c->pos += (size_t)(nul - p) + 1;
        v->cls = V_STR;
        break;
    }
    case FORM_strp: ok = cur_off(c, f->offset_size, &v->u); v->cls = V_STRP; break;
    case FORM_line_strp:
        ok = cur_off(c, f->offset_size, &v->u);
        v->cls = V_LINE_STRP;
        break;
    case FORM_strp_sup:
    case FORM_GNU_strp_alt:
    case FORM_GNU_ref_alt:
        ok = cur_off(c, f->offset_size, &u); /* supplementary file: not here */
        break;
    case FORM_strx:
    case FORM_GNU_str_index: ok = cur_uleb(c, &v->u); v->cls = V_STRX; break;
    case FORM_strx1: ok = cur_uN(c, 1, &v->u); v->cls = V_STRX; break;
    case FORM_strx2: ok = cur_uN(c, 2, &v->u); v->cls = V_STRX; break;
    case FORM_strx3: ok = cur_uN(c, 3, &v->u); v->cls = V_STRX; break;
    case FORM_strx4: ok = cur_uN(c, 4, &v->u); v->cls = V_STRX; break;
    case FORM_addrx:
    case FORM_GNU_addr_index: ok = cur_uleb(c, &v->u); v->cls = V_ADDRX; break;
    case FORM_addrx1: ok = cur_uN(c, 1, &v->u); v->cls = V_ADDRX; break;
    case FORM_addrx2: ok = cur_uN(c, 2, &v->u); v->cls = V_ADDRX; break;
    case FORM_addrx3: ok = cur_uN(c, 3, &v->u); v->cls = V_ADDRX; break;
    case FORM_addrx4: ok = cur_uN(c, 4, &v->u); v->cls = V_ADDRX; break;
    case FORM_ref_addr:
        ok = cur_off(c, f->version <= 2 ? f->addr_size : f->offset_size, &v->u);
        v->cls = V_REF;
        break;
    case FORM_ref1: ok = cur_uN(c, 1, &u); goto ref;
    case FORM_ref2: ok = cur_uN(c, 2, &u); goto ref;
    case FORM_ref4: ok = cur_uN(c, 4, &u); goto ref;
    case FORM_ref8: ok = cur_uN(c, 8, &u); goto ref;
    case FORM_ref_udata:
        ok = cur_uleb(c, &u);
    ref:
        v->cls = ok && u64_add(u, f->unit_off, &v->u) ? V_REF : V_OTHER;
        break;
    case FORM_ref_sig8:
    case FORM_ref_sup8: ok = cur_skip(c, 8); break;
    case FORM_ref_sup4: ok = cur_skip(c, 4); break;
    case FORM_sec_offset:
        ok = cur_off(c, f->offset_size, &v->u);
        v->cls = V_SECOFF;
        break;
    case FORM_loclistx: ok = cur_uleb(c, &u); break;
    case FORM_rnglistx: ok = cur_uleb(c, &v->u); v->cls = V_RNGLISTX; break;
    default:
        c->pos = at;
        return BAD(x, "unknown attribute form 0x%x at .debug_info-relative 0x%zx",
                   form, at), false;
    }
    if (ok)
        return true;
bad:
    c->pos = at;
    return BAD(x, "attribute value (form 0x%x) runs past its unit at 0x%zx", form, at),
           false;
}

static bool unit_str(ctx *x, const unit *u, const val *v, const char **out)
{
    *out = NULL;
    switch (v->cls) {
    case V_STR: *out = v->s; return true;
    case V_STRP:
        if (!(*out = sect_str(&x->s[S_STR], v->u)))
            return BAD(x, "string offset 0x%llx outside .debug_str",
                       (unsigned long long)v->u), false;
        return true;
    case V_LINE_STRP:
        if (!(*out = sect_str(&x->s[S_LINE_STR], v->u)))
            return BAD(x, "string offset 0x%llx outside .debug_line_str",
                       (unsigned long long)v->u), false;
        return true;
    case V_STRX: {
        uint64_t at, off;
        if (!u || v->u > UINT64_MAX / 8 ||
            !u64_add(u->str_base, v->u * u->offset_size, &at) ||
            !range_ok(at, u->offset_size, x->s[S_STR_OFF].len))
            return BAD(x, "string index %llu outside .debug_str_offsets",
                       (unsigned long long)v->u), false;
        cursor c = cur_make(x->s[S_STR_OFF].p, x->s[S_STR_OFF].len);
        c.pos = (size_t)at;
        cur_off(&c, u->offset_size, &off);
        if (!(*out = sect_str(&x->s[S_STR], off)))
            return BAD(x, "string offset 0x%llx outside .debug_str",
                       (unsigned long long)off), false;
        return true;
    }
    default:
        return true; /* not a string form: no name */
    }
}

static bool unit_addr(ctx *x, const unit *u, const val *v, uint64_t *out)
{
    if (v->cls == V_ADDR) {
        *out = v->u;
        return true;
    }
    if (v->cls != V_ADDRX)
        return BAD(x, "address attribute of a non-address form"), false;
    uint64_t at;
    if (v->u > UINT64_MAX / 8 || !u64_add(u->addr_base, v->u * u->addr_size, &at) ||
        !range_ok(at, u->addr_size, x->s[S_ADDR].len))
        return BAD(x, "address index %llu outside .debug_addr",
                   (unsigned long long)v->u), false;
    cursor c = cur_make(x->s[S_ADDR].p, x->s[S_ADDR].len);
    c.pos = (size_t)at;
    return cur_uN(&c, u->addr_size, out);
}

/* ---- units and abbreviations --------------------------------------------- */

static symd_status read_units(ctx *x)
{
    const sect *s = &x->s[S_INFO];
    cursor c = cur_make(s->p, s->len);
    while (cur_left(&c)) {
        unit u;
        memset(&u, 0, sizeof u);
        u.off = c.pos;
        u.table = -1;
        uint64_t len;
        if (!read_length(x, &c, "unit", &len, &u.offset_size))
            return x->err->kind;
        u.end = c.pos + len;
        cursor h = cur_make(s->p, (size_t)u.end);
        h.pos = c.pos;
        uint64_t v;
        if (!cur_uN(&h, 2, &v))
            return BAD(x, "unit at 0x%llx: truncated header", (unsigned long long)u.off);
        if (v < 2 || v > 5)
            return BAD(x, "unit at 0x%llx: DWARF version %llu (2-5 supported)",
                       (unsigned long long)u.off, (unsigned long long)v);
        u.version = (uint16_t)v;
        uint64_t asz = 0, ut = UT_compile;
        bool ok;
        if (u.version >= 5) {
            ok = cur_uN(&h, 1, &ut) && cur_uN(&h, 1, &asz) &&
                 cur_off(&h, u.offset_size, &u.abbrev_off);
            if (ok && (ut == UT_skeleton || ut == UT_split_compile))
                ok = cur_skip(&h, 8);
            else if (ok && (ut == UT_type || ut == UT_split_type))
                ok = cur_skip(&h, 8) && cur_skip(&h, u.offset_size);
        } else {
            ok = cur_off(&h, u.offset_size, &u.abbrev_off) && cur_uN(&h, 1, &asz);
        }
        if (!ok)
            return BAD(x, "unit at 0x%llx: truncated header", (unsigned long long)u.off);
        if (asz != 4 && asz != 8)
            return BAD(x, "unit at 0x%llx: address size %llu", (unsigned long long)u.off,
                       (unsigned long long)asz);
        u.addr_size = (uint8_t)asz;
        u.unit_type = (uint8_t)ut;
        u.skip = ut != UT_compile && ut != UT_partial;
        u.die_off = h.pos;
        if (!VEC_PUSH(x, x->units, u))
            return SYMD_E_NOMEM;
        c.pos = (size_t)u.end;
    }
    return SYMD_OK;
}

static int cmp_code(const void *a, const void *b)
{
    const abbrev *x = a, *y = b;
    return x->code < y->code ? -1 : x->code > y->code;
}

/* Parses (once) the abbreviation table at off; *out is its index. */
static symd_status load_table(ctx *x, uint64_t off, int *out)
{
    uint32_t idx;
    if (map_get(&x->table_by_off, off, &idx)) {
        *out = (int)idx;
        return SYMD_OK;
    }
    const sect *s = &x->s[S_ABBREV];
    if (off >= s->len)
        return BAD(x, "abbreviation offset 0x%llx outside .debug_abbrev",
                   (unsigned long long)off);
    atable t;
    memset(&t, 0, sizeof t);
    t.off = off;
    size_t acap = 0, scap = 0;
    cursor c = cur_make(s->p, s->len);
    c.pos = (size_t)off;
    uint64_t maxcode = 0;
    symd_status st = SYMD_OK;
    for (;;) {
        uint64_t code, tag;
        uint8_t ch;
        if (!cur_uleb(&c, &code)) {
            st = BAD(x, "abbreviation table at 0x%llx: unterminated",
                     (unsigned long long)off);
            goto fail;
        }
        if (code == 0)
            break;
        if (!cur_uleb(&c, &tag) || !cur_u8(&c, &ch)) {
            st = BAD(x, "abbreviation %llu: truncated", (unsigned long long)code);
            goto fail;
        }
        if (!array_grow((void **)&t.a, &acap, t.n + 1, sizeof *t.a)) {
            st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
            goto fail;
        }
        abbrev *a = &t.a[t.n++];
        a->code = code;
        a->tag = tag > UINT32_MAX ? 0 : (uint32_t)tag;
        a->children = ch != 0;
        a->spec0 = (uint32_t)t.nspecs;
        a->nspec = 0;
        if (code > maxcode)
            maxcode = code;
        for (;;) {
            uint64_t at, form;
            int64_t imp = 0;
            if (!cur_uleb(&c, &at) || !cur_uleb(&c, &form)) {
                st = BAD(x, "abbreviation %llu: truncated attribute list",
                         (unsigned long long)code);
                goto fail;
            }
            if (at == 0 && form == 0)
                break;
            if (form == FORM_implicit_const && !cur_sleb(&c, &imp)) {
                st = BAD(x, "abbreviation %llu: truncated implicit constant",
                         (unsigned long long)code);
                goto fail;
            }
            if (at > UINT32_MAX || form > UINT32_MAX || t.nspecs >= UINT32_MAX) {
                st = BAD(x, "abbreviation %llu: attribute 0x%llx form 0x%llx out of range",
                         (unsigned long long)code, (unsigned long long)at,
                         (unsigned long long)form);
                goto fail;
            }
            if (!array_grow((void **)&t.specs, &scap, t.nspecs + 1, sizeof *t.specs)) {
                st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
                goto fail;
            }
            t.specs[t.nspecs++] = (aspec){(uint32_t)at, (uint32_t)form, imp};
            if (++a->nspec > MAX_ABBREV_ATTRS) {
                st = BAD(x, "abbreviation %llu has more than %d attributes",
                         (unsigned long long)code, MAX_ABBREV_ATTRS);
                goto fail;
            }
        }
    }
    /* Codes are usually 1..n: index them directly; otherwise sort and search. */
    if (maxcode <= 4 * (uint64_t)t.n + 64) {
        t.ncode = (size_t)maxcode + 1;
        t.by_code = calloc(t.ncode, sizeof *t.by_code);
        if (!t.by_code) {
            st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
            goto fail;
        }
        for (size_t i = 0; i < t.n; i++)
            if (!t.by_code[t.a[i].code])
                t.by_code[t.a[i].code] = (uint32_t)i + 1;
    } else if (t.n > 1) {
        /* Stable order for duplicates is not needed: a duplicate code is
         * ambiguous input and any of its definitions is as good. */
        qsort(t.a, t.n, sizeof *t.a, cmp_code);
    }
    if (!VEC_PUSH(x, x->tables, t)) {
        st = SYMD_E_NOMEM;
        goto fail;
    }
    if (!map_put(&x->table_by_off, off, (uint32_t)(x->tables.n - 1))) {
        nomem(x);
        return SYMD_E_NOMEM;
    }
    *out = (int)(x->tables.n - 1);
    return SYMD_OK;
fail:
    free(t.a);
    free(t.specs);
    free(t.by_code);
    return st;
}

static const abbrev *find_abbrev(const atable *t, uint64_t code)
{
    if (t->by_code) {
        if (code < t->ncode && t->by_code[code])
            return &t->a[t->by_code[code] - 1];
        return NULL;
    }
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->a[mid].code < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n && t->a[lo].code == code ? &t->a[lo] : NULL;
}

static fctx unit_fctx(const unit *u)
{
    fctx f = {u->version, u->addr_size, u->offset_size, u->off};
    return f;
}

/* The attributes of one DIE that we care about. */
typedef struct {
    uint64_t off; /* DIE offset */
    uint32_t tag;
    bool children;
    val name, linkage, low, high, ranges, origin, spec, call_file, call_line,
        call_col, decl, stmt, comp_dir, str_base, addr_base, rng_base;
} die;

/* Reads the DIE at c (its abbreviation code already consumed into a). */
static bool read_die(ctx *x, const unit *u, const atable *t, const abbrev *a,
                     cursor *c, die *d)
{
    fctx f = unit_fctx(u);
    d->tag = a->tag;
    d->children = a->children;
    d->name.cls = d->linkage.cls = d->low.cls = d->high.cls = d->ranges.cls =
        d->origin.cls = d->spec.cls = d->call_file.cls = d->call_line.cls =
            d->call_col.cls = d->decl.cls = d->stmt.cls = d->comp_dir.cls =
                d->str_base.cls = d->addr_base.cls = d->rng_base.cls = V_NONE;
    for (uint32_t i = 0; i < a->nspec; i++) {
        const aspec *sp = &t->specs[a->spec0 + i];
        val v = {V_NONE, 0, NULL}, *dst = &v;
        switch (sp->at) {
        case AT_name: dst = &d->name; break;
        case AT_linkage_name:
        case AT_MIPS_linkage_name:
            dst = d->linkage.cls == V_NONE ? &d->linkage : &v;
            break;
        case AT_low_pc: dst = &d->low; break;
        case AT_high_pc: dst = &d->high; break;
        case AT_ranges: dst = &d->ranges; break;
        case AT_abstract_origin: dst = &d->origin; break;
        case AT_specification: dst = &d->spec; break;
        case AT_call_file: dst = &d->call_file; break;
        case AT_call_line: dst = &d->call_line; break;
        case AT_call_column: dst = &d->call_col; break;
        case AT_declaration: dst = &d->decl; break;
        case AT_stmt_list: dst = &d->stmt; break;
        case AT_comp_dir: dst = &d->comp_dir; break;
        case AT_str_offsets_base: dst = &d->str_base; break;
        case AT_addr_base:
        case AT_GNU_addr_base: dst = &d->addr_base; break;
        case AT_rnglists_base: dst = &d->rng_base; break;
        default: break;
        }
        if (!read_form(x, &f, c, sp->form, sp->implicit, dst))
            return false;
    }
    return true;
}

/* Reads the unit DIE: bases, comp_dir, line table offset. */
static symd_status prepare_unit(ctx *x, unit *u)
{
    if (u->prepared)
        return SYMD_OK;
    u->prepared = true;
    symd_status st = load_table(x, u->abbrev_off, &u->table);
    if (st != SYMD_OK)
        return st;
    const atable *t = &x->tables.v[u->table];
    cursor c = cur_make(x->s[S_INFO].p, (size_t)u->end);
    c.pos = (size_t)u->die_off;
    uint64_t code;
    if (!cur_uleb(&c, &code))
        return BAD(x, "unit at 0x%llx: truncated first DIE", (unsigned long long)u->off);
    if (code == 0) {
        u->skip = true;
        return SYMD_OK;
    }
    const abbrev *a = find_abbrev(t, code);
    if (!a)
        return BAD(x, "unit at 0x%llx: unknown abbreviation %llu",
                   (unsigned long long)u->off, (unsigned long long)code);
    die d;
    if (!read_die(x, u, t, a, &c, &d))
        return x->err->kind;
    if (a->tag != TAG_compile_unit && a->tag != TAG_partial_unit)
        u->skip = true;
    if (d.str_base.cls == V_SECOFF || d.str_base.cls == V_CONST) {
        u->str_base = d.str_base.u;
        u->has_str_base = true;
    } else if (u->version >= 5) {
        u->str_base = u->offset_size == 8 ? 16 : 8; /* past the first header */
    }
    if (d.addr_base.cls == V_SECOFF || d.addr_base.cls == V_CONST) {
        u->addr_base = d.addr_base.u;
        u->has_addr_base = true;
    }
    if (d.rng_base.cls == V_SECOFF || d.rng_base.cls == V_CONST) {
        u->rnglists_base = d.rng_base.u;
        u->has_rnglists_base = true;
    }
    if (d.low.cls != V_NONE && !unit_addr(x, u, &d.low, &u->low_pc))
        return x->err->kind;
    if (!unit_str(x, u, &d.name, &u->name) || !unit_str(x, u, &d.comp_dir, &u->comp_dir))
        return x->err->kind;
    if (d.stmt.cls == V_SECOFF || d.stmt.cls == V_CONST) {
        u->has_stmt = true;
        u->stmt = d.stmt.u;
    }
    return SYMD_OK;
}

static unit *unit_for(ctx *x, uint64_t off)
{
    size_t lo = 0, hi = x->units.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->units.v[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    unit *u = &x->units.v[lo - 1];
    return off >= u->die_off && off < u->end ? u : NULL;
}

/* ---- strings, names, files ----------------------------------------------- */

static uint32_t hash_str(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* Looks s[0..n) up in the string set: true with *off when present,
 * otherwise false with *slot where it would go. */
static bool strset_find(ctx *x, const char *s, size_t n, uint32_t h, uint32_t *off,
                        size_t *slot)
{
    size_t i = h & (x->strset_cap - 1);
    for (; x->strset[i].off; i = (i + 1) & (x->strset_cap - 1)) {
        if (x->strset[i].hash != h)
            continue;
        const char *t = (const char *)x->strings.data + x->strset[i].off - 1;
        if (strncmp(t, s, n) == 0 && t[n] == 0) {
            *off = x->strset[i].off - 1;
            return true;
        }
    }
    *slot = i;
    return false;
}

/* Room for one more entry in the string set. */
static bool strset_room(ctx *x)
{
    if ((x->strset_n + 1) * 2 <= x->strset_cap)
        return true;
    size_t cap = x->strset_cap ? x->strset_cap * 2 : 4096;
    __typeof__(x->strset) ns = calloc(cap, sizeof *ns);
    if (!ns)
        return nomem(x), false;
    for (size_t i = 0; i < x->strset_cap; i++) {
        if (!x->strset[i].off)
            continue;
        size_t j = x->strset[i].hash & (cap - 1);
        while (ns[j].off)
            j = (j + 1) & (cap - 1);
        ns[j] = x->strset[i];
    }
    free(x->strset);
    x->strset = ns;
    x->strset_cap = cap;
    return true;
}

/* Appends s[0..n) and a NUL to the string table. */
static bool str_append(ctx *x, const char *s, size_t n, uint32_t *off)
{
    size_t at = x->strings.len;
    if (at >= INT32_MAX || !dynbuf_add(&x->strings, s, n) ||
        !dynbuf_add(&x->strings, "", 1))
        return symd_fail(x->err, SYMD_E_TOO_LARGE,
                         "debug info strings exceed the index size limit"), false;
    *off = (uint32_t)at;
    return true;
}

/* Interns s[0..n) into the string table; *off is its offset. The set's
 * offsets are stored + 1 so 0 marks an empty slot. */
static bool intern(ctx *x, const char *s, size_t n, uint32_t *off)
{
    if (!n)
        s = ""; /* an empty dynbuf has no data pointer */
    uint32_t h = hash_str(s, n);
    size_t slot;
    if (!strset_room(x))
        return false;
    if (strset_find(x, s, n, h, off, &slot))
        return true;
    if (!str_append(x, s, n, off))
        return false;
    x->strset[slot].off = *off + 1;
    x->strset[slot].hash = h;
    x->strset_n++;
    return true;
}

/* Demangled display name of a raw name; NULL when it stays as is. The
 * display bytes of one index are budgeted like the symbol index's, so a
 * hostile dSYM cannot make demangling grow the index without bound. */
static char *display_name(ctx *x, const char *raw)
{
    if (x->display_bytes >= x->display_budget)
        return NULL;
    char *d = symd_demangle(raw);
    if (d)
        x->display_bytes += strlen(d) + 1;
    return d;
}

/* The name id of a raw (linkage) name, demangled once. A name whose display
 * form differs is stored as "raw\0display\0" and its table entry flagged. */
static bool name_id(ctx *x, const char *raw, uint32_t *id)
{
    size_t n = strlen(raw), slot;
    uint32_t h = hash_str(raw, n), off;
    if (!strset_room(x))
        return false;
    if (strset_find(x, raw, n, h, &off, &slot) && map_get(&x->name_by_raw, off, id))
        return true;
    uint32_t entry;
    char *d = display_name(x, raw);
    if (d) {
        uint32_t doff;
        bool ok = str_append(x, raw, n, &off) && str_append(x, d, strlen(d), &doff);
        free(d);
        if (!ok)
            return false;
        entry = off | 0x80000000u;
        /* Later lookups of this raw name find this copy. */
        uint32_t dummy;
        if (!strset_find(x, raw, n, h, &dummy, &slot)) {
            x->strset[slot].off = off + 1;
            x->strset[slot].hash = h;
            x->strset_n++;
        } else {
            off = dummy; /* the raw text was already there (say, as a path) */
        }
    } else {
        if (!intern(x, raw, n, &off))
            return false;
        entry = off;
    }
    if (map_get(&x->name_by_raw, off, id))
        return true;
    *id = (uint32_t)x->names.n;
    uint32_t unused = 0;
    if (!VEC_PUSH(x, x->names, entry) || !VEC_PUSH(x, x->final_of, unused))
        return false;
    if (!map_put(&x->name_by_raw, off, *id))
        return nomem(x), false;
    return true;
}

static bool file_id(ctx *x, const char *path, size_t n, uint32_t *id)
{
    uint32_t off;
    if (!intern(x, path, n, &off))
        return false;
    if (map_get(&x->file_by_str, off, id))
        return true;
    *id = (uint32_t)x->files.n;
    if (!VEC_PUSH(x, x->files, off))
        return false;
    if (!map_put(&x->file_by_str, off, *id))
        return nomem(x), false;
    return true;
}

static bool die_name(ctx *x, uint64_t off, int hops, uint32_t *out);

/* Name of the subroutine DIE d (read from unit u), following
 * DW_AT_specification then DW_AT_abstract_origin depth-first (llvm's
 * DWARFDie::findRecursively): the first linkage name on the chain, else the
 * first plain name. *out is name id << 1 | is_linkage, or NONE. Loops end at
 * MAX_NAME_HOPS. */
static bool die_name_of(ctx *x, const unit *u, const die *d, int hops, uint32_t *out)
{
    const char *s = NULL;
    uint32_t id;
    *out = NONE;
    if (d->linkage.cls != V_NONE) {
        if (!unit_str(x, u, &d->linkage, &s))
            return false;
        if (s) {
            if (!name_id(x, s, &id))
                return false;
            *out = id << 1 | 1;
            return true;
        }
    }
    uint32_t from_spec = NONE, from_origin = NONE;
    if (d->spec.cls == V_REF && !die_name(x, d->spec.u, hops + 1, &from_spec))
        return false;
    if (d->origin.cls == V_REF && !die_name(x, d->origin.u, hops + 1, &from_origin))
        return false;
    if (from_spec != NONE && (from_spec & 1)) {
        *out = from_spec;
    } else if (from_origin != NONE && (from_origin & 1)) {
        *out = from_origin;
    } else {
        if (!unit_str(x, u, &d->name, &s))
            return false;
        if (s) {
            if (!name_id(x, s, &id))
                return false;
            *out = id << 1;
        } else {
            *out = from_spec != NONE ? from_spec : from_origin;
        }
    }
    return true;
}

/* die_name_of for the DIE a reference points at, read there and cached by
 * its offset (abstract origins are shared by every inlined copy). */
static bool die_name(ctx *x, uint64_t off, int hops, uint32_t *out)
{
    *out = NONE;
    if (map_get(&x->name_cache, off, out))
        return true;
    if (hops > MAX_NAME_HOPS)
        return true;
    unit *u = unit_for(x, off);
    if (!u)
        return BAD(x, "DIE reference 0x%llx outside every unit", (unsigned long long)off),
               false;
    if (prepare_unit(x, u) != SYMD_OK)
        return false;
    const atable *t = &x->tables.v[u->table];
    cursor c = cur_make(x->s[S_INFO].p, (size_t)u->end);
    c.pos = (size_t)off;
    uint64_t code;
    if (!cur_uleb(&c, &code))
        return BAD(x, "DIE at 0x%llx: truncated", (unsigned long long)off), false;
    const abbrev *a = code ? find_abbrev(t, code) : NULL;
    if (!a)
        return BAD(x, "DIE reference 0x%llx: no DIE there", (unsigned long long)off),
               false;
    die d;
    if (!read_die(x, u, t, a, &c, &d) || !die_name_of(x, u, &d, hops, out))
        return false;
    return map_put(&x->name_cache, off, *out) || (nomem(x), false);
}

/* ---- paths --------------------------------------------------------------- */

static bool path_is_abs(const char *p)
{
    return p[0] == '/' || p[0] == '\\' ||
           (((p[0] | 0x20) >= 'a' && (p[0] | 0x20) <= 'z') && p[1] == ':' &&
            (p[2] == '\\' || p[2] == '/'));
}

/* llvm::sys::path::append: empty parts skipped, one '/' between parts. */
static bool path_add(dynbuf *b, const char *part)
{
    if (!part || !*part)
        return true;
    if (b->len && b->data[b->len - 1] == '/') {
        while (*part == '/')
            part++;
    } else if (b->len && *part != '/') {
        if (!dynbuf_add(b, "/", 1))
            return false;
    }
    return dynbuf_add(b, part, strlen(part));
}

/* ---- line programs ------------------------------------------------------- */

static int cmp_row(const void *a, const void *b)
{
    const lrow *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

typedef struct {
    const char *name;
    uint64_t dir;
} lfile;

/* Reads a DWARF 5 directory or file entry list. */
static bool read_entries(ctx *x, const unit *u, const fctx *f, cursor *c, bool files,
                         const char ***dirs, size_t *ndirs, lfile **fl, size_t *nfl)
{
    uint64_t nfmt_u, count;
    if (!cur_uN(c, 1, &nfmt_u))
        return BAD(x, "line table: truncated entry formats"), false;
    unsigned nfmt = (unsigned)nfmt_u;
    uint64_t fmt[2 * 255];
    for (unsigned i = 0; i < nfmt; i++)
        if (!cur_uleb(c, &fmt[2 * i]) || !cur_uleb(c, &fmt[2 * i + 1]) ||
            fmt[2 * i + 1] > UINT32_MAX)
            return BAD(x, "line table: truncated entry formats"), false;
    if (!cur_uleb(c, &count))
        return BAD(x, "line table: truncated entry count"), false;
    /* Each entry takes at least one byte unless every form is empty. */
    if (nfmt && count > cur_left(c))
        return BAD(x, "line table: %llu entries in %zu bytes", (unsigned long long)count,
                   cur_left(c)), false;
    if (!nfmt && count)
        return BAD(x, "line table: entries without formats"), false;
    size_t cap = 0;
    for (uint64_t e = 0; e < count; e++) {
        const char *name = NULL;
        uint64_t dir = 0;
        for (unsigned i = 0; i < nfmt; i++) {
            val v;
            if (!read_form(x, f, c, (uint32_t)fmt[2 * i + 1], 0, &v))
                return false;
            if (fmt[2 * i] == LNCT_path) {
                if (!unit_str(x, u, &v, &name))
                    return false;
            } else if (fmt[2 * i] == LNCT_directory_index && v.cls == V_CONST) {
                dir = v.u;
            }
        }
        if (files) {
            if (!array_grow((void **)fl, &cap, *nfl + 1, sizeof **fl))
                return nomem(x), false;
            (*fl)[(*nfl)++] = (lfile){name ? name : "", dir};
        } else {
            if (!array_grow((void **)dirs, &cap, *ndirs + 1, sizeof **dirs))
                return nomem(x), false;
            (*dirs)[(*ndirs)++] = name ? name : "";
        }
    }
    return true;
}

/* Parses the unit's line program into x->rows (sorted) and x->cu_files. */
static symd_status read_lines(ctx *x, const unit *u)
{
    x->rows.n = 0;
    x->cu_files.n = 0;
    if (!u->has_stmt)
        return SYMD_OK;
    const sect *s = &x->s[S_LINE];
    if (u->stmt >= s->len)
        return BAD(x, "unit at 0x%llx: line table offset 0x%llx outside .debug_line",
                   (unsigned long long)u->off, (unsigned long long)u->stmt);
    cursor c = cur_make(s->p, s->len);
    c.pos = (size_t)u->stmt;
    uint64_t len, v = 0;
    uint8_t osz;
    if (!read_length(x, &c, "line table", &len, &osz))
        return x->err->kind;
    x->work_lines += len;
    if (x->work_lines > 4 * (uint64_t)s->len + WORK_SLACK)
        return BAD(x, "line tables shared by too many units");
    cursor h = cur_make(s->p, c.pos + (size_t)len);
    h.pos = c.pos;
    if (!cur_uN(&h, 2, &v) || v < 2 || v > 5)
        return BAD(x, "line table at 0x%llx: version %llu", (unsigned long long)u->stmt,
                   (unsigned long long)v);
    fctx f = {(uint16_t)v, u->addr_size, osz, 0};
    uint64_t asz = u->addr_size, seg = 0, hlen, minlen, maxops = 1, defstmt, lrange,
             opbase;
    int64_t lbase;
    bool ok = true;
    if (f.version >= 5)
        ok = cur_uN(&h, 1, &asz) && cur_uN(&h, 1, &seg);
    ok = ok && cur_off(&h, osz, &hlen);
    size_t prog = h.pos;
    ok = ok && hlen <= cur_left(&h);
    if (ok)
        prog += (size_t)hlen;
    ok = ok && cur_uN(&h, 1, &minlen);
    if (ok && f.version >= 4)
        ok = cur_uN(&h, 1, &maxops);
    uint64_t lb;
    ok = ok && cur_uN(&h, 1, &defstmt) && cur_uN(&h, 1, &lb) && cur_uN(&h, 1, &lrange) &&
         cur_uN(&h, 1, &opbase);
    if (!ok)
        return BAD(x, "line table at 0x%llx: truncated header", (unsigned long long)u->stmt);
    lbase = (int8_t)lb;
    if (asz != 4 && asz != 8)
        asz = u->addr_size;
    f.addr_size = (uint8_t)asz;
    (void)maxops;
    (void)defstmt;
    (void)seg;
    uint8_t oplen[256] = {0};
    for (unsigned i = 1; i < opbase; i++) {
        uint64_t l;
        if (!cur_uN(&h, 1, &l))
            return BAD(x, "line table at 0x%llx: truncated opcode lengths",
                       (unsigned long long)u->stmt);
        oplen[i] = (uint8_t)l;
    }
    const char **dirs = NULL;
    lfile *fl = NULL;
    size_t ndirs = 0, nfl = 0, dcap = 0, fcap = 0;
    symd_status st = SYMD_OK;
    cursor hh = cur_make(s->p, prog); /* header entries end where the program starts */
    hh.pos = h.pos;
    if (f.version >= 5) {
        if (!read_entries(x, u, &f, &hh, false, &dirs, &ndirs, &fl, &nfl) ||
            !read_entries(x, u, &f, &hh, true, &dirs, &ndirs, &fl, &nfl)) {
            st = x->err->kind;
            goto out;
        }
    } else {
        for (;;) {
            const uint8_t *p = hh.p + hh.pos;
            const uint8_t *nul = memchr(p, 0, cur_left(&hh));
            if (!nul) {
                st = BAD(x, "line table at 0x%llx: unterminated directories",
                         (unsigned long long)u->stmt);
                goto out;
            }
            hh.pos += (size_t)(nul - p) + 1;
            if (nul == p)
                break;
            if (!array_grow((void **)&dirs, &dcap, ndirs + 1, sizeof *dirs)) {
                st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
                goto out;
            }
            dirs[ndirs++] = (const char *)p;
        }
        for (;;) {
            const uint8_t *p = hh.p + hh.pos;
            const uint8_t *nul = memchr(p, 0, cur_left(&hh));
            uint64_t dir, t;
            if (!nul) {
                st = BAD(x, "line table at 0x%llx: unterminated file names",
                         (unsigned long long)u->stmt);
                goto out;
            }
            hh.pos += (size_t)(nul - p) + 1;
            if (nul == p)
                break;
            if (!cur_uleb(&hh, &dir) || !cur_uleb(&hh, &t) || !cur_uleb(&hh, &t)) {
                st = BAD(x, "line table at 0x%llx: truncated file entry",
                         (unsigned long long)u->stmt);
                goto out;
            }
            if (!array_grow((void **)&fl, &fcap, nfl + 1, sizeof *fl)) {
                st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
                goto out;
            }
            fl[nfl++] = (lfile){(const char *)p, dir};
        }
    }
    /* The file table as llvm-symbolizer spells paths (absolute file paths):
     * DWARF 5 indexes files from 0 and its directory 0 is the compilation
     * directory itself; earlier versions index both from 1. */
    for (size_t i = 0; i < nfl + (f.version < 5); i++) {
        uint32_t gid = 0;
        if (f.version < 5 && i == 0) {
            if (!VEC_PUSH(x, x->cu_files, gid)) {
                st = SYMD_E_NOMEM;
                goto out;
            }
            continue;
        }
        const lfile *e = &fl[f.version < 5 ? i - 1 : i];
        x->path.len = 0;
        bool pok = true;
        if (path_is_abs(e->name)) {
            pok = path_add(&x->path, e->name);
        } else {
            const char *incl = NULL;
            if (f.version >= 5) {
                if (e->dir < ndirs)
                    incl = dirs[e->dir];
            } else if (e->dir > 0 && e->dir <= ndirs) {
                incl = dirs[e->dir - 1];
            }
            if ((f.version < 5 || e->dir != 0) && u->comp_dir && *u->comp_dir &&
                !(incl && path_is_abs(incl)))
                pok = path_add(&x->path, u->comp_dir);
            pok = pok && path_add(&x->path, incl) && path_add(&x->path, e->name);
        }
        if (!pok) {
            st = symd_fail(x->err, SYMD_E_BAD_DEBUG_INFO, "line table at 0x%llx: path too long",
                           (unsigned long long)u->stmt);
            goto out;
        }
        if (!file_id(x, (const char *)x->path.data, x->path.len, &gid)) {
            st = x->err->kind;
            goto out;
        }
        gid++;
        if (!VEC_PUSH(x, x->cu_files, gid)) {
            st = SYMD_E_NOMEM;
            goto out;
        }
    }

    /* The program. */
    cursor p = cur_make(s->p, h.len);
    p.pos = prog;
    uint64_t addr = 0, file = 1, line = 1, col = 0;
    uint32_t order = 0;
#define EMIT(is_end)                                                            \
    do {                                                                        \
        uint32_t g = 0;                                                         \
        if (!(is_end) && file < x->cu_files.n)                                  \
            g = x->cu_files.v[file];                                            \
        if (order >= 0x7fffffffu) {                                             \
            st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line table too large");   \
            goto out;                                                           \
        }                                                                       \
        /* At one address an end of sequence sorts before any row. */           \
        lrow r = {addr, g, line > UINT32_MAX ? 0 : (uint32_t)line,              \
                  col > UINT32_MAX ? 0 : (uint32_t)col,                         \
                  (is_end) ? order++ : (order++ | 0x80000000u)};                \
        if (!VEC_PUSH(x, x->rows, r)) {                                         \
            st = SYMD_E_NOMEM;                                                  \
            goto out;                                                           \
        }                                                                       \
    } while (0)
    while (cur_left(&p)) {
        uint8_t op;
        cur_u8(&p, &op);
        if (op >= opbase) {
            if (lrange == 0) {
                st = BAD(x, "line table at 0x%llx: line_range 0", (unsigned long long)u->stmt);
                goto out;
            }
            uint64_t adj = op - opbase;
            addr += (adj / lrange) * minlen;
            line += (uint64_t)(lbase + (int64_t)(adj % lrange));
            EMIT(false);
            continue;
        }
        uint64_t a;
        int64_t sa;
        switch (op) {
        case 0: { /* extended */
            uint64_t elen;
            uint8_t sub = 0;
            if (!cur_uleb(&p, &elen) || elen == 0 || elen > cur_left(&p)) {
                st = BAD(x, "line table at 0x%llx: bad extended opcode at 0x%zx",
                         (unsigned long long)u->stmt, p.pos);
                goto out;
            }
            size_t next = p.pos + (size_t)elen;
            cur_u8(&p, &sub);
            if (sub == 1) { /* end_sequence */
                EMIT(true);
                addr = 0, file = 1, line = 1, col = 0;
            } else if (sub == 2) { /* set_address */
                if (elen - 1 > 8 || !cur_uN(&p, (unsigned)(elen - 1), &addr)) {
                    st = BAD(x, "line table at 0x%llx: bad set_address",
                             (unsigned long long)u->stmt);
                    goto out;
                }
            }
            p.pos = next;
            break;
        }
        case 1: EMIT(false); break; /* copy */
        case 2:
            if (!cur_uleb(&p, &a))
                goto trunc;
            addr += a * minlen;
            break;
        case 3:
            if (!cur_sleb(&p, &sa))
                goto trunc;
            line += (uint64_t)sa;
            break;
        case 4:
            if (!cur_uleb(&p, &file))
                goto trunc;
            break;
        case 5:
            if (!cur_uleb(&p, &col))
                goto trunc;
            break;
        case 8: addr += ((255 - opbase) / (lrange ? lrange : 1)) * minlen; break;
        case 9:
            if (!cur_uN(&p, 2, &a))
                goto trunc;
            addr += a;
            break;
        case 6: case 7: case 10: case 11: break;
        default: /* set_isa (12) and opcodes we do not know: skip operands */
            for (unsigned i = 0; i < oplen[op]; i++)
                if (!cur_uleb(&p, &a))
                    goto trunc;
            break;
        }
    }
#undef EMIT
    if (x->rows.n > 1)
        qsort(x->rows.v, x->rows.n, sizeof *x->rows.v, cmp_row);
    goto out;
trunc:
    st = BAD(x, "line table at 0x%llx: truncated opcode at 0x%zx",
             (unsigned long long)u->stmt, p.pos);
out:
    free(dirs);
    free(fl);
    return st;
}

/* ---- address ranges ------------------------------------------------------ */

static int cmp_range(const void *a, const void *b)
{
    const range *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Sorts v[0..n), drops empty ranges and merges overlaps; returns the count. */
static size_t normalize(range *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_range);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].lo >= v[i].hi)
            continue;
        if (k && v[i].lo <= v[k - 1].hi) {
            if (v[i].hi > v[k - 1].hi)
                v[k - 1].hi = v[i].hi;
        } else {
            v[k++] = v[i];
        }
    }
    return k;
}

#define MAX_LIST 65536 /* entries in one range list */

static bool push_range(ctx *x, uint64_t lo, uint64_t hi)
{
    if (++x->work_ranges > x->s[S_RANGES].len + x->s[S_RNGLISTS].len + WORK_SLACK)
        return BAD(x, "range lists shared by too many DIEs"), false;
    if (x->tmp.n >= MAX_LIST)
        return BAD(x, "range list longer than %d entries", MAX_LIST), false;
    range r = {lo, hi};
    return VEC_PUSH(x, x->tmp, r);
}

/* DWARF 2-4 .debug_ranges list at off. */
static bool read_ranges4(ctx *x, const unit *u, uint64_t off)
{
    const sect *s = &x->s[S_RANGES];
    if (off >= s->len)
        return BAD(x, "range list offset 0x%llx outside .debug_ranges",
                   (unsigned long long)off), false;
    cursor c = cur_make(s->p, s->len);
    c.pos = (size_t)off;
    uint64_t base = u->low_pc;
    uint64_t maxaddr = u->addr_size == 8 ? UINT64_MAX : UINT32_MAX;
    for (;;) {
        uint64_t a, b;
        if (!cur_uN(&c, u->addr_size, &a) || !cur_uN(&c, u->addr_size, &b))
            return BAD(x, "range list at 0x%llx: unterminated", (unsigned long long)off),
                   false;
        if (a == 0 && b == 0)
            return true;
        if (a == maxaddr) {
            base = b;
            continue;
        }
        if (!push_range(x, base + a, base + b))
            return false;
    }
}

/* DWARF 5 .debug_rnglists list at off. */
static bool read_rnglist(ctx *x, const unit *u, uint64_t off)
{
    const sect *s = &x->s[S_RNGLISTS];
    if (off >= s->len)
        return BAD(x, "range list offset 0x%llx outside .debug_rnglists",
                   (unsigned long long)off), false;
    cursor c = cur_make(s->p, s->len);
    c.pos = (size_t)off;
    uint64_t base = u->low_pc;
    for (;;) {
        uint8_t kind;
        uint64_t a, b;
        val va = {V_ADDRX, 0, NULL}, vb = {V_ADDRX, 0, NULL};
        if (!cur_u8(&c, &kind))
            goto trunc;
        switch (kind) {
        case 0: return true; /* end_of_list */
        case 1:              /* base_addressx */
            if (!cur_uleb(&c, &va.u) || !unit_addr(x, u, &va, &base))
                goto trunc;
            break;
        case 2: /* startx_endx */
            if (!cur_uleb(&c, &va.u) || !cur_uleb(&c, &vb.u) ||
                !unit_addr(x, u, &va, &a) || !unit_addr(x, u, &vb, &b))
                goto trunc;
            if (!push_range(x, a, b))
                return false;
            break;
        case 3: /* startx_length */
            if (!cur_uleb(&c, &va.u) || !cur_uleb(&c, &b) || !unit_addr(x, u, &va, &a))
                goto trunc;
            if (!push_range(x, a, a + b))
                return false;
            break;
        case 4: /* offset_pair */
            if (!cur_uleb(&c, &a) || !cur_uleb(&c, &b))
                goto trunc;
            if (!push_range(x, base + a, base + b))
                return false;
            break;
        case 5: /* base_address */
            if (!cur_uN(&c, u->addr_size, &base))
                goto trunc;
            break;
        case 6: /* start_end */
            if (!cur_uN(&c, u->addr_size, &a) || !cur_uN(&c, u->addr_size, &b))
                goto trunc;
            if (!push_range(x, a, b))
                return false;
            break;
        case 7: /* start_length */
            if (!cur_uN(&c, u->addr_size, &a) || !cur_uleb(&c, &b))
                goto trunc;
            if (!push_range(x, a, a + b))
                return false;
            break;
        default:
            return BAD(x, "range list at 0x%llx: unknown entry kind %u",
                       (unsigned long long)off, kind), false;
        }
    }
trunc:
    if (x->err->kind == SYMD_OK)
        BAD(x, "range list at 0x%llx: truncated", (unsigned long long)off);
    return false;
}

/* The DIE's code ranges into x->tmp (unsorted). */
static bool die_ranges(ctx *x, const unit *u, const die *d)
{
    x->tmp.n = 0;
    if (d->ranges.cls != V_NONE) {
        if (u->version >= 5) {
            uint64_t off = d->ranges.u;
            if (d->ranges.cls == V_RNGLISTX) {
                uint64_t at, rel;
                cursor c = cur_make(x->s[S_RNGLISTS].p, x->s[S_RNGLISTS].len);
                if (off > UINT64_MAX / 8 ||
                    !u64_add(u->rnglists_base, off * u->offset_size, &at) ||
                    !range_ok(at, u->offset_size, c.len))
                    return BAD(x, "range list index %llu outside .debug_rnglists",
                               (unsigned long long)off), false;
                c.pos = (size_t)at;
                cur_off(&c, u->offset_size, &rel);
                if (!u64_add(u->rnglists_base, rel, &off))
                    return BAD(x, "range list offset overflows"), false;
            } else if (d->ranges.cls != V_SECOFF && d->ranges.cls != V_CONST) {
                return true;
            }
            return read_rnglist(x, u, off);
        }
        if (d->ranges.cls != V_SECOFF && d->ranges.cls != V_CONST)
            return true;
        return read_ranges4(x, u, d->ranges.u);
    }
    if (d->low.cls == V_NONE || d->high.cls == V_NONE)
        return true;
    uint64_t lo, hi;
    if (!unit_addr(x, u, &d->low, &lo))
        return false;
    if (d->high.cls == V_CONST) {
        if (!u64_add(lo, d->high.u, &hi))
            return true;
    } else if (!unit_addr(x, u, &d->high, &hi)) {
        return false;
    }
    return lo < hi ? push_range(x, lo, hi) : true;
}

/* Keeps only the parts of x->tmp that lie in code sections. */
static void clip_to_code(ctx *x)
{
    size_t n = normalize(x->tmp.v, x->tmp.n), k = 0;
    for (size_t i = 0; i < n; i++) {
        range r = x->tmp.v[i];
        for (size_t j = 0; j < x->ncode; j++) {
            uint64_t lo = r.lo > x->code[j].lo ? r.lo : x->code[j].lo;
            uint64_t hi = r.hi < x->code[j].hi ? r.hi : x->code[j].hi;
            if (lo < hi) {
                /* Intersections come out sorted and never outnumber the
                 * input by more than the code sections; write behind i. */
                if (k <= i)
                    x->tmp.v[k++] = (range){lo, hi};
                else
                    break;
            }
        }
    }
    x->tmp.n = k;
}

/* ---- the DIE walk and function records ----------------------------------- */

static size_t uleb_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static bool put_uleb(ctx *x, dynbuf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        tmp[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    if (!dynbuf_add(b, tmp, n))
        return symd_fail(x->err, SYMD_E_TOO_LARGE,
                         "line index exceeds its size limit"), false;
    return true;
}

static bool add_node(ctx *x, uint32_t func, uint32_t parent, uint32_t depth,
                     uint32_t name, uint32_t *idx)
{
    size_t n = normalize(x->tmp.v, x->tmp.n);
    node nd;
    memset(&nd, 0, sizeof nd);
    nd.func = func;
    nd.parent = parent;
    nd.depth = depth;
    nd.name = name;
    nd.r0 = (uint32_t)x->cu_ranges.n;
    nd.nr = (uint32_t)n;
    if (x->cu_ranges.n + n > UINT32_MAX || x->nodes.n >= UINT32_MAX)
        return symd_fail(x->err, SYMD_E_TOO_LARGE, "too many ranges in one unit"), false;
    for (size_t i = 0; i < n; i++)
        if (!VEC_PUSH(x, x->cu_ranges, x->tmp.v[i]))
            return false;
    *idx = (uint32_t)x->nodes.n;
    return VEC_PUSH(x, x->nodes, nd);
}

/* The index's id for name id: names get index ids in the order records
 * first use them, so names no record uses (functions the symbol table
 * names) cost nothing and frequent ones get short numbers. */
static bool use_name(ctx *x, uint32_t id, uint32_t *fin)
{
    if (x->final_of.v[id]) {
        *fin = x->final_of.v[id] - 1;
        return true;
    }
    *fin = (uint32_t)x->finals.n;
    if (!VEC_PUSH(x, x->finals, id))
        return false;
    x->final_of.v[id] = *fin + 1;
    return true;
}

/* Size (write == NULL) or bytes of one inline node's own fields. Positions
 * are relative to the previous sibling's end (the parent's start for a first
 * child) and lengths in address quanta when all of them divide; call lines
 * relative to the previous sibling's (see lineindex.h). */
static size_t node_fields(ctx *x, const node *nd, dynbuf *write)
{
    const range *r = &x->cu_ranges.v[nd->r0];
    uint64_t mask = ((uint64_t)1 << x->shift) - 1;
    bool q = true;
    uint64_t prev = nd->base;
    for (uint32_t i = 0; i < nd->nr; i++) {
        q &= !((r[i].lo - prev) & mask) && !((r[i].hi - r[i].lo) & mask);
        prev = r[i].hi;
    }
    unsigned sh = q ? x->shift : 0;
    size_t sz = 0;
#define PUT(v)                                                   \
    do {                                                         \
        uint64_t v_ = (v);                                       \
        sz += uleb_len(v_);                                      \
        if (write && !put_uleb(x, write, v_))                    \
            return 0;                                            \
    } while (0)
    bool same_file = nd->call_file == nd->file_base, kids = nd->child_bytes > 0;
    PUT((uint64_t)nd->nr << 3 | (uint64_t)q << 2 | (uint64_t)kids << 1 | same_file);
    prev = nd->base;
    for (uint32_t i = 0; i < nd->nr; i++) {
        PUT(lix_zigzag((int64_t)(r[i].lo - prev) >> sh));
        PUT((r[i].hi - r[i].lo) >> sh);
        prev = r[i].hi;
    }
    uint32_t fin;
    if (nd->name != NONE && !use_name(x, nd->name >> 1, &fin))
        return 0;
    PUT(nd->name == NONE ? 0 : (uint64_t)fin + 1);
    if (!same_file)
        PUT(nd->call_file);
    PUT(lix_zigzag((int64_t)nd->call_line - (int64_t)nd->line_base));
    PUT(nd->call_col);
    if (kids)
        PUT(nd->child_bytes);
#undef PUT
    return sz;
}

/* Last row at or below addr, or -1. */
static ptrdiff_t row_at(const ctx *x, uint64_t addr)
{
    size_t lo = 0, hi = x->rows.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->rows.v[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

/* Writes the rows covering the function's ranges into b. */
static bool encode_rows(ctx *x, const range *r, size_t nr, uint64_t origin, dynbuf *b,
                        uint32_t *count)
{
    /* Two (file, line) registers: the current one and the one before it, so
     * code alternating between a function's file and an inlined header's
     * costs one byte a row (see lineindex.h). */
    uint64_t paddr = origin, line = 0, pline = 0;
    uint32_t file = 0, pfile = 0, col = 0;
    bool first = true;
    for (size_t k = 0; k < nr; k++) {
        ptrdiff_t i = row_at(x, r[k].lo);
        for (;; i++) {
            if (++x->work_rows > 4 * (uint64_t)x->s[S_LINE].len + x->s[S_INFO].len + WORK_SLACK)
                return BAD(x, "functions overlap too much to index"), false;
            uint64_t addr;
            lrow row = {0, 0, 0, 0, 0};
            if (i < 0) {
                addr = r[k].lo;
            } else if ((size_t)i >= x->rows.n) {
                break;
            } else {
                row = x->rows.v[i];
                if (row.addr >= r[k].hi)
                    break;
                addr = row.addr < r[k].lo ? r[k].lo : row.addr;
            }
            if (!row.file)
                row.line = (uint32_t)line, row.col = 0;
            if (!first && row.file == file && row.line == line && row.col == col)
                continue;
            uint64_t da = addr - paddr, q = da >> x->shift;
            bool swap = !first && row.file != file && row.file == pfile;
            uint64_t base = swap ? pline : line;
            int64_t d = (int64_t)row.line - (int64_t)base;
            uint8_t op;
            bool ok;
            if ((first || row.file == file || swap) && !(first && row.file) && d >= -3 &&
                d <= 4 && (q << x->shift) == da && q < 8) {
                op = (uint8_t)((swap ? 0x40 : 0) | q << 3 | (uint64_t)(d + 3));
                ok = dynbuf_add(b, &op, 1);
                if (swap) {
                    pfile = file, pline = line;
                    file = row.file;
                }
            } else if (!first && row.file == file && d >= -63 && d <= 63 && d != 0 &&
                       (q << x->shift) == da) {
                /* a longer jump in the same file: line in the op, address next */
                op = (uint8_t)(0x80 | (uint64_t)(d + 64));
                ok = dynbuf_add(b, &op, 1) && put_uleb(x, b, q);
            } else {
                bool fchg = row.file != file || first;
                d = (int64_t)row.line - (int64_t)line;
                uint64_t zz = lix_zigzag(d);
                op = 0x80;
                ok = dynbuf_add(b, &op, 1) && put_uleb(x, b, da) &&
                     put_uleb(x, b, zz << 1 | fchg) && (!fchg || put_uleb(x, b, row.file));
                if (fchg) {
                    pfile = file, pline = line;
                    file = row.file;
                }
            }
            if (!ok || !put_uleb(x, b, row.col))
                return symd_fail(x->err, SYMD_E_TOO_LARGE,
                                 "line index exceeds its size limit"), false;
            (*count)++;
            first = false;
            paddr = addr, line = row.line, col = row.col;
        }
    }
    return true;
}

/* The record's own-name field of a function (see lineindex.h): 1 when the
 * symbol table has the same raw name at its first address, which then names
 * it; otherwise its name, marked as used. */
static uint64_t root_name(ctx *x, const node *root, uint64_t origin)
{
    if (root->name == NONE)
        return 0;
    uint32_t id = root->name >> 1;
    if (x->syms) {
        symlook look;
        symindex_lookup(x->syms, origin, &look);
        const char *raw = (const char *)x->strings.data + (x->names.v[id] & 0x7fffffffu);
        if (look.status == SYMLOOK_SYMBOL && look.sym_addr == origin &&
            strcmp(look.mangled, raw) == 0)
            return 1;
    }
    uint32_t fin;
    if (!use_name(x, id, &fin))
        return UINT64_MAX;
    return (uint64_t)fin + 2;
}

/* Encodes every function of the unit walked last into x->data. */
static symd_status encode_unit(ctx *x, uint32_t nfuncs)
{
    if (!nfuncs)
        return SYMD_OK;
    /* Group nodes by function, keeping preorder inside each (a subprogram
     * nested in another interleaves their nodes). */
    size_t *start = calloc((size_t)nfuncs + 1, sizeof *start);
    uint32_t *perm = malloc((x->nodes.n ? x->nodes.n : 1) * sizeof *perm);
    dynbuf rows;
    dynbuf_init(&rows, x->data.max);
    symd_status st = SYMD_OK;
    if (!start || !perm) {
        st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < x->nodes.n; i++)
        start[x->nodes.v[i].func + 1]++;
    for (uint32_t f = 0; f < nfuncs; f++)
        start[f + 1] += start[f];
    {
        size_t *fill = calloc(nfuncs, sizeof *fill);
        if (!fill) {
            st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < x->nodes.n; i++) {
            uint32_t f = x->nodes.v[i].func;
            perm[start[f] + fill[f]++] = (uint32_t)i;
        }
        free(fill);
    }
    for (uint32_t f = 0; f < nfuncs; f++) {
        size_t a = start[f], b = start[f + 1];
        if (a == b)
            continue;
        node *root = &x->nodes.v[perm[a]];
        const range *fr = &x->cu_ranges.v[root->r0];
        uint64_t origin = fr[0].lo;
        /* Preorder: a node's bases come from its parent's running cursor. */
        root->next = origin;
        root->next_line = 0;
        root->next_file = 0;
        for (size_t k = a + 1; k < b; k++) {
            node *nd = &x->nodes.v[perm[k]], *p = &x->nodes.v[nd->parent];
            const range *r = &x->cu_ranges.v[nd->r0];
            nd->base = p->next;
            nd->line_base = p->next_line;
            nd->file_base = p->next_file;
            p->next = r[nd->nr - 1].hi;
            p->next_line = nd->call_line;
            p->next_file = nd->call_file;
            nd->next = r[0].lo;
            nd->next_line = 0;
            nd->next_file = 0;
        }
        for (size_t k = b; k-- > a;) {
            node *nd = &x->nodes.v[perm[k]];
            nd->bytes = 0;
            if (k == a)
                break;
            nd->bytes = node_fields(x, nd, NULL) + nd->child_bytes;
            x->nodes.v[nd->parent].child_bytes += nd->bytes;
        }
        rows.len = 0;
        uint32_t nrows = 0;
        if (!encode_rows(x, fr, root->nr, origin, &rows, &nrows)) {
            st = x->err->kind;
            goto out;
        }
        size_t data_off = x->data.len;
        if (data_off > UINT32_MAX) {
            st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line index data exceeds 4 GiB");
            goto out;
        }
        uint64_t own = root_name(x, root, origin);
        if (own == UINT64_MAX) {
            st = x->err->kind;
            goto out;
        }
        /* A one-range function's origin is where its table entry starts. */
        uint64_t org = root->nr == 1 ? 0 : origin - x->base + 1;
        if (!put_uleb(x, &x->data, org) || !put_uleb(x, &x->data, own) ||
            !put_uleb(x, &x->data, rows.len) ||
            !dynbuf_add(&x->data, rows.data, rows.len) ||
            !put_uleb(x, &x->data, root->child_bytes)) {
            st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line index exceeds its size limit");
            goto out;
        }
        for (size_t k = a + 1; k < b; k++) {
            node *nd = &x->nodes.v[perm[k]];
            if (!node_fields(x, nd, &x->data)) {
                st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line index exceeds its size limit");
                goto out;
            }
        }
        for (uint32_t k = 0; k < root->nr; k++) {
            fentry e = {(uint32_t)(fr[k].lo - x->base), (uint32_t)(fr[k].hi - fr[k].lo),
                        (uint32_t)data_off, (uint32_t)x->funcs.n};
            if (!VEC_PUSH(x, x->funcs, e)) {
                st = SYMD_E_NOMEM;
                goto out;
            }
        }
        x->stats.functions++;
        x->stats.inlined += (uint32_t)(b - a - 1);
        x->stats.rows += nrows;
    }
out:
    free(start);
    free(perm);
    dynbuf_free(&rows);
    return st;
}

static symd_status walk_unit(ctx *x, unit *u)
{
    symd_status st = prepare_unit(x, u);
    if (st != SYMD_OK || u->skip)
        return st;
    x->stats.units++;
    if ((st = read_lines(x, u)) != SYMD_OK)
        return st;
    x->nodes.n = 0;
    x->cu_ranges.n = 0;
    uint32_t nfuncs = 0;
    const atable *t = &x->tables.v[u->table];
    cursor c = cur_make(x->s[S_INFO].p, (size_t)u->end);
    c.pos = (size_t)u->die_off;
    uint32_t stack[MAX_DIE_DEPTH];
    size_t depth = 0;
    uint32_t cur = NONE; /* the innermost function or inline node open */
    while (cur_left(&c)) {
        uint64_t off = c.pos, code;
        if (!cur_uleb(&c, &code))
            return BAD(x, "DIE at 0x%llx: truncated", (unsigned long long)off);
        if (code == 0) {
            if (depth == 0)
                continue; /* padding after the unit DIE's children */
            cur = stack[--depth];
            continue;
        }
        const abbrev *a = find_abbrev(t, code);
        if (!a)
            return BAD(x, "DIE at 0x%llx: unknown abbreviation %llu",
                       (unsigned long long)off, (unsigned long long)code);
        die d;
        if (!read_die(x, u, t, a, &c, &d))
            return x->err->kind;
        uint32_t child = cur;
        if (a->tag == TAG_subprogram) {
            child = NONE;
            if (!(d.decl.cls == V_FLAG && d.decl.u)) {
                if (!die_ranges(x, u, &d))
                    return x->err->kind;
                clip_to_code(x);
                if (x->tmp.n) {
                    uint32_t name, idx;
                    if (!die_name_of(x, u, &d, 0, &name) || !add_node(x, nfuncs, NONE, 0, name, &idx))
                        return x->err->kind;
                    nfuncs++;
                    child = idx;
                }
            }
        } else if (a->tag == TAG_inlined_subroutine) {
            child = NONE;
            if (cur != NONE && x->nodes.v[cur].depth < LINEINDEX_MAX_DEPTH) {
                if (!die_ranges(x, u, &d))
                    return x->err->kind;
                /* Only ranges with bytes count: [a, a) and [b, a) drop here. */
                x->tmp.n = normalize(x->tmp.v, x->tmp.n);
                if (x->tmp.n) {
                    uint32_t name, idx;
                    const node *p = &x->nodes.v[cur];
                    if (!die_name_of(x, u, &d, 0, &name) ||
                        !add_node(x, p->func, cur, p->depth + 1, name, &idx))
                        return x->err->kind;
                    node *nd = &x->nodes.v[idx];
                    if (d.call_file.cls == V_CONST && d.call_file.u < x->cu_files.n)
                        nd->call_file = x->cu_files.v[d.call_file.u];
                    if (d.call_line.cls == V_CONST && d.call_line.u <= UINT32_MAX)
                        nd->call_line = (uint32_t)d.call_line.u;
                    if (d.call_col.cls == V_CONST && d.call_col.u <= UINT32_MAX)
                        nd->call_col = (uint32_t)d.call_col.u;
                    child = idx;
                }
            }
        }
        if (a->children) {
            if (depth >= MAX_DIE_DEPTH)
                return BAD(x, "DIE at 0x%llx: nested deeper than %d",
                           (unsigned long long)off, MAX_DIE_DEPTH);
            stack[depth++] = cur;
            cur = child;
        }
    }
    return encode_unit(x, nfuncs);
}

/* ---- the blob ------------------------------------------------------------ */

static int cmp_fentry(const void *a, const void *b)
{
    const fentry *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Keeps only the strings records use: file paths and the names of used
 * name ids (raw and display together); unused ids point at "". */
static symd_status compact_strings(ctx *x)
{
    dynbuf strs;
    dynbuf_init(&strs, x->strings.max);
    symd_status st = SYMD_OK;
    if (!dynbuf_add(&strs, "", 1)) {
        st = symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < x->files.n; i++) {
        const char *f = (const char *)x->strings.data + x->files.v[i];
        uint32_t at = (uint32_t)strs.len;
        if (!dynbuf_add(&strs, f, strlen(f) + 1)) {
            st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line index exceeds its size limit");
            goto out;
        }
        x->files.v[i] = at;
    }
    for (size_t i = 0; i < x->finals.n; i++) {
        uint32_t e = x->names.v[x->finals.v[i]];
        const char *raw = (const char *)x->strings.data + (e & 0x7fffffffu);
        size_t n = strlen(raw) + 1;
        if (e >> 31)
            n += strlen(raw + n) + 1;
        uint32_t at = (uint32_t)strs.len;
        if (!dynbuf_add(&strs, raw, n)) {
            st = symd_fail(x->err, SYMD_E_TOO_LARGE, "line index exceeds its size limit");
            goto out;
        }
        x->finals.v[i] = at | (e & 0x80000000u); /* now the table entry */
    }
    dynbuf_free(&x->strings);
    x->strings = strs;
    return SYMD_OK;
out:
    dynbuf_free(&strs);
    return st;
}

static symd_status assemble(ctx *x, uint8_t **blob, size_t *len)
{
    fentry *f = x->funcs.v;
    size_t n = x->funcs.n, k = 0;
    if (n > 1)
        qsort(f, n, sizeof *f, cmp_fentry);
    /* Overlapping functions (duplicate DWARF for one range): the first in
     * address order, then in DWARF order, keeps the shared bytes. */
    uint64_t last_end = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = f[i].start, e = s + f[i].size;
        if (k && s < last_end) {
            if (e <= last_end)
                continue;
            s = last_end;
        }
        f[k] = f[i];
        f[k].start = (uint32_t)s;
        f[k].size = (uint32_t)(e - s);
        last_end = e;
        k++;
    }
    n = k;
    symd_status st = compact_strings(x);
    if (st != SYMD_OK)
        return st;
    size_t nn = x->finals.n, nf = x->files.n;
    size_t total = 48, part;
    if (!size_mul(n, 12, &part) || !size_add(total, part, &total) ||
        !size_mul(nn, 4, &part) || !size_add(total, part, &total) ||
        !size_mul(nf, 4, &part) || !size_add(total, part, &total) ||
        !size_add(total, x->data.len, &total) || !size_add(total, x->strings.len, &total) ||
        total > x->data.max || n > UINT32_MAX || x->data.len > UINT32_MAX ||
        x->strings.len > UINT32_MAX)
        return symd_fail(x->err, SYMD_E_TOO_LARGE, "line index exceeds its size limit");
    uint8_t *out = malloc(total), *p = out;
    if (!out)
        return symd_fail(x->err, SYMD_E_NOMEM, "out of memory");
    memcpy(p, "LINX", 4);
    st_u32le(p + 4, LINEINDEX_VERSION);
    st_u64le(p + 8, x->base);
    st_u32le(p + 16, (uint32_t)n);
    st_u32le(p + 20, (uint32_t)nn);
    st_u32le(p + 24, (uint32_t)nf);
    st_u32le(p + 28, (uint32_t)x->data.len);
    st_u32le(p + 32, (uint32_t)x->strings.len);
    st_u32le(p + 36, x->shift);
    memset(p + 40, 0, 8);
    p += 48;
    for (size_t i = 0; i < n; i++, p += 12) {
        st_u32le(p, f[i].start);
        st_u32le(p + 4, f[i].size);
        st_u32le(p + 8, f[i].data);
    }
    for (size_t i = 0; i < nn; i++, p += 4)
        st_u32le(p, x->finals.v[i]);
    for (size_t i = 0; i < nf; i++, p += 4)
        st_u32le(p, x->files.v[i]);
    if (x->data.len)
        memcpy(p, x->data.data, x->data.len);
    p += x->data.len;
    if (x->strings.len)
        memcpy(p, x->strings.data, x->strings.len);
    *blob = out;
    *len = total;
    return SYMD_OK;
}

static void ctx_free(ctx *x)
{
    for (size_t i = 0; i < x->tables.n; i++) {
        free(x->tables.v[i].a);
        free(x->tables.v[i].specs);
        free(x->tables.v[i].by_code);
    }
    free(x->tables.v);
    free(x->units.v);
    free(x->code);
    map_free(&x->table_by_off);
    map_free(&x->name_cache);
    map_free(&x->name_by_raw);
    map_free(&x->file_by_str);
    dynbuf_free(&x->strings);
    dynbuf_free(&x->data);
    dynbuf_free(&x->path);
    free(x->strset);
    free(x->names.v);
    free(x->final_of.v);
    free(x->finals.v);
    free(x->files.v);
    free(x->funcs.v);
    free(x->cu_files.v);
    free(x->rows.v);
    free(x->cu_ranges.v);
    free(x->nodes.v);
    free(x->tmp.v);
}

symd_status lineindex_build(const macho_image *img, const symindex *syms,
                            size_t max_bytes, uint8_t **blob, size_t *len,
                            lineindex_stats *stats, symd_err *err)
{
    *blob = NULL;
    *len = 0;
    ctx x;
    memset(&x, 0, sizeof x);
    x.syms = syms;
    x.err = err;
    memset(stats, 0, sizeof *stats);
    symd_status st = SYMD_OK;
    size_t code_cap = 0;
    for (size_t i = 0; i < img->nsects; i++) {
        const macho_section *sc = &img->sects[i];
        if (strcmp(sc->segname, "__DWARF") != 0)
            continue;
        for (int k = 0; k < S_N; k++) {
            if (strcmp(sc->sectname, sect_names[k]) != 0)
                continue;
            if (!range_ok(sc->offset, sc->size, img->len))
                return BAD(&x, "section %s runs past the file", sc->sectname);
            x.s[k].p = img->buf + sc->offset;
            x.s[k].len = (size_t)sc->size;
        }
    }
    if (!x.s[S_INFO].len)
        return SYMD_OK;
    for (size_t i = 0; i < img->nsects; i++) {
        const macho_section *sc = &img->sects[i];
        if (!macho_section_is_code(sc) || !sc->size || sc->addr + sc->size < sc->addr)
            continue;
        range r = {sc->addr, sc->addr + sc->size};
        if (!array_grow((void **)&x.code, &code_cap, x.ncode + 1, sizeof *x.code)) {
            st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
            goto out;
        }
        x.code[x.ncode++] = r;
    }
    x.ncode = normalize(x.code, x.ncode);
    if (!x.ncode)
        goto out; /* no code: nothing to index */
    x.base = x.code[0].lo;
    x.shift = img->cputype == 0x0100000cu ? 2 : 0; /* CPU_TYPE_ARM64 */
    /* Demangled names may add at most 4x the DWARF's string bytes + 64 KiB. */
    x.display_budget = 4 * (x.s[S_STR].len + x.s[S_LINE_STR].len) + (64u << 10);
    if (x.code[x.ncode - 1].hi - x.base > UINT32_MAX) {
        st = symd_fail(err, SYMD_E_UNSUPPORTED, "code spans more than 4 GiB");
        goto out;
    }
    dynbuf_init(&x.strings, max_bytes);
    dynbuf_init(&x.data, max_bytes);
    dynbuf_init(&x.path, 1 << 16);
    if ((st = read_units(&x)) != SYMD_OK)
        goto out;
    for (size_t i = 0; i < x.units.n; i++)
        if ((st = walk_unit(&x, &x.units.v[i])) != SYMD_OK)
            goto out;
    st = assemble(&x, blob, len);
    *stats = x.stats;
out:
    ctx_free(&x);
    return st;
}

/* DWARF reader, the pieces the others share: small containers, section
 * readers, attribute values, units and abbreviations, the index's strings,
 * names and files, and address ranges. */
#include "dwarf_int.h"

#include <stdlib.h>
#include <string.h>

#include "../demangle/demangle.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define MAX_NAME_HOPS 16   /* abstract_origin/specification hops */
#define MAX_ABBREV_ATTRS 512 /* real abbreviations have a few dozen */

/* ---- small containers ---------------------------------------------------- */

static size_t hash_u64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k;
}

bool map_get(const u64map *m, uint64_t k, uint32_t *v)
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

bool map_put(u64map *m, uint64_t k, uint32_t v)
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

void map_free(u64map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- model --------------------------------------------------------------- */

void nomem(ctx *x)
{
    symd_fail(x->err, SYMD_E_NOMEM, "out of memory reading DWARF");
}

/* ---- readers ------------------------------------------------------------- */

bool cur_off(cursor *c, uint8_t size, uint64_t *v)
{
    if (size == 8)
        return cur_u64le(c, v);
    uint32_t w;
    if (!cur_u32le(c, &w))
        return false;
    *v = w;
    return true;
}

bool cur_uN(cursor *c, unsigned n, uint64_t *v)
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
bool read_length(ctx *x, cursor *c, const char *what, uint64_t *len,
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

/* Reads one attribute value of form; the cursor advances only on success. */
bool read_form(ctx *x, const fctx *f, cursor *c, uint32_t form,
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

bool unit_str(ctx *x, const unit *u, const val *v, const char **out)
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

symd_status read_units(ctx *x)
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

const abbrev *find_abbrev(const atable *t, uint64_t code)
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

/* Reads the DIE at c (its abbreviation code already consumed into a). */
bool read_die(ctx *x, const unit *u, const atable *t, const abbrev *a,
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
symd_status prepare_unit(ctx *x, unit *u)
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

bool name_id(ctx *x, const char *raw, uint32_t *id)
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

bool file_id(ctx *x, const char *path, size_t n, uint32_t *id)
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
bool die_name_of(ctx *x, const unit *u, const die *d, int hops, uint32_t *out)
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

/* ---- address ranges ------------------------------------------------------ */

static int cmp_range(const void *a, const void *b)
{
    const range *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Sorts v[0..n), drops empty ranges and merges overlaps; returns the count. */
size_t normalize(range *v, size_t n)
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
bool die_ranges(ctx *x, const unit *u, const die *d)
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
void clip_to_code(ctx *x)
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

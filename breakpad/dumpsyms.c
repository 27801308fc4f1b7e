/* symd dump-syms: Mach-O slice + dSYM → Breakpad .sym text (dumpsyms.h). */
#include "dumpsyms.h"

#include <stdlib.h>
#include <string.h>

#include "../dsym/lineindex.h"
#include "../macho/symindex.h"
#include "../util/cursor.h"
#include "../util/util.h"

/* Room for the line index of a dSYM (as ingest allows). */
#define DUMP_MAX_LINE_INDEX ((size_t)1 << 30)

/* The slice of arch (NULL: the only one) parsed into img. */
static symd_status pick_slice(const uint8_t *buf, size_t len, const char *arch, const char *what,
                              macho_image *img, symd_err *err)
{
    macho_slice sl[MACHO_MAX_SLICES];
    size_t n;
    symd_status st = macho_parse_slices(buf, len, sl, &n, err);
    if (st != SYMD_OK)
        return st;
    size_t pick = n;
    if (!arch) {
        if (n != 1)
            return symd_fail(err, SYMD_E_INVALID, "%s is fat (%zu slices): name one with --arch",
                             what, n);
        pick = 0;
    } else {
        for (size_t i = 0; i < n; i++) {
            macho_image t;
            if (macho_parse_image(buf + sl[i].offset, (size_t)sl[i].size, &t, NULL) != SYMD_OK)
                continue;
            const char *a = macho_arch_name(t.cputype, t.cpusubtype);
            if (a && strcmp(a, arch) == 0)
                pick = i;
            macho_image_free(&t);
            if (pick < n)
                break;
        }
        if (pick == n)
            return symd_fail(err, SYMD_E_INVALID, "%s has no %s slice", what, arch);
    }
    return macho_parse_image(buf + sl[pick].offset, (size_t)sl[pick].size, img, err);
}

/* ---- interned strings: FILE paths and INLINE_ORIGIN names ---------------- */

typedef struct {
    const char **v;
    size_t n, cap;
} strs;

static bool strs_add(strs *s, const char *p)
{
    if (!array_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v))
        return false;
    s->v[s->n++] = p;
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted, each once: ids are positions. */
static void strs_finish(strs *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, cmp_str);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!k || strcmp(s->v[k - 1], s->v[i]) != 0)
            s->v[k++] = s->v[i];
    s->n = k;
}

static size_t strs_id(const strs *s, const char *p)
{
    const char **hit = bsearch(&p, s->v, s->n, sizeof *s->v, cmp_str);
    return hit ? (size_t)(hit - s->v) : 0;
}

#define NO_NAME "<name omitted>" /* what Breakpad writes for a function without one */
#define NO_FILE "<unknown>"      /* an INLINE's call file DWARF does not give */

static const char *node_name(const lineindex_xnode *n)
{
    return n->name ? n->name : NO_NAME;
}

/* ---- STACK CFI ----------------------------------------------------------- */

void bp_cfi_write_rules(FILE *out, bp_cfi_arch arch, bool cfa_changed, uint16_t cfa_reg,
                        int32_t cfa_off, const bp_cfi_rule *rules, size_t n)
{
    const char *sep = "";
    if (cfa_changed && cfa_reg != BP_REG_NONE && bp_cfi_reg_name(arch, cfa_reg)) {
        fprintf(out, ".cfa: %s %d +", bp_cfi_reg_name(arch, cfa_reg), cfa_off);
        sep = " ";
    }
    /* ".ra" right after the CFA, as dump_syms writes it, then the rest */
    for (size_t j = 0; j < 2 * n; j++) {
        const bp_cfi_rule *r = &rules[j % n];
        if ((j < n) != (r->reg == BP_REG_RA))
            continue;
        const char *name = bp_cfi_reg_name(arch, r->reg);
        if (!name)
            continue;
        switch (r->kind) {
        case BP_RULE_AT_CFA:
            fprintf(out, "%s%s: .cfa %d + ^", sep, name, r->off);
            break;
        case BP_RULE_VAL_CFA:
            fprintf(out, "%s%s: .cfa %d +", sep, name, r->off);
            break;
        case BP_RULE_SAME:
            fprintf(out, "%s%s: %s", sep, name, r->reg == BP_REG_RA ? "$rip" : name);
            break;
        case BP_RULE_REG: {
            const char *src = r->off >= 0 && r->off < (int32_t)BP_REG_RA
                                  ? bp_cfi_reg_name(arch, (uint16_t)r->off)
                                  : NULL;
            if (!src)
                continue;
            fprintf(out, "%s%s: %s", sep, name, src);
            break;
        }
        default:
            continue;
        }
        sep = " ";
    }
}

/* Whether rule r appears, the same, in prev's rules. */
static bool same_rule(const bp_cfi *c, const bp_cfi_row *prev, const bp_cfi_rule *r)
{
    for (uint32_t k = prev->rule0; k < prev->rule0 + prev->nrules; k++)
        if (c->rules[k].reg == r->reg)
            return c->rules[k].kind == r->kind && c->rules[k].off == r->off;
    return false;
}

static void write_cfi(FILE *out, const bp_cfi *c)
{
    for (size_t i = 0; i < c->nentries; i++) {
        const bp_cfi_entry *e = &c->entries[i];
        for (uint32_t k = 0; k < e->nrows; k++) {
            const bp_cfi_row *row = &c->rows[e->row0 + k];
            if (k == 0) {
                fprintf(out, "STACK CFI INIT %x %x ", e->addr, e->size);
                bp_cfi_write_rules(out, c->arch, true, row->cfa_reg, row->cfa_off,
                                   row->nrules ? c->rules + row->rule0 : NULL, row->nrules);
                fputc('\n', out);
                continue;
            }
            /* A later row says what changed since the row before it. */
            const bp_cfi_row *prev = row - 1;
            bp_cfi_rule changed[BP_CFI_MAX_RULES];
            size_t n = 0;
            for (uint32_t j = row->rule0; j < row->rule0 + row->nrules && n < BP_CFI_MAX_RULES; j++)
                if (!same_rule(c, prev, &c->rules[j]))
                    changed[n++] = c->rules[j];
            bool cfa = row->cfa_reg != prev->cfa_reg || row->cfa_off != prev->cfa_off;
            if (!cfa && !n)
                continue;
            fprintf(out, "STACK CFI %x ", row->addr);
            bp_cfi_write_rules(out, c->arch, cfa, row->cfa_reg, row->cfa_off, changed, n);
            fputc('\n', out);
        }
    }
}

/* ---- the file ------------------------------------------------------------ */

typedef struct {
    uint64_t lo, hi;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Whether addr lies in one of the sorted, disjoint spans. */
static bool in_spans(const span *v, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && addr < v[lo - 1].hi;
}

/* Everything both passes over the functions need. */
typedef struct {
    const symindex *sidx;
    const lineindex *lix;
    uint64_t text;      /* __TEXT vmaddr: .sym addresses count from it */
    strs files, origins;
    FILE *out;
    bp_dump_stats st;
} dump;

/* The FUNC name of a decoded entry: the symbol table's at its start when
 * the index leaves it there, else the DWARF name. */
static const char *func_name(const dump *d, const lineindex_xfunc *f)
{
    if (f->name_from_symbols || !f->name) {
        symlook look;
        symindex_lookup(d->sidx, f->origin, &look);
        if (look.status == SYMLOOK_SYMBOL && look.sym_addr == f->origin)
            return look.name;
    }
    return f->name ? f->name : NO_NAME;
}

/* Whether node n has a range inside [lo, hi) (a function of several
 * ranges shares one record: each FUNC writes what lies in its own). */
static bool node_in(const lineindex_xfunc *f, const lineindex_xnode *n, uint64_t lo, uint64_t hi)
{
    for (size_t k = 0; k < n->nranges; k++) {
        const lineindex_range *r = &f->ranges[n->range0 + k];
        if (r->lo < hi && r->hi > lo)
            return true;
    }
    return false;
}

/* Pass 1: the FILE paths and INLINE_ORIGIN names used. */
static bool collect(dump *d, const lineindex_xfunc *f)
{
    for (size_t i = 0; i < f->nrows; i++)
        if (f->rows[i].file && !strs_add(&d->files, f->rows[i].file))
            return false;
    for (size_t i = 0; i < f->nnodes; i++)
        if (!strs_add(&d->origins, node_name(&f->nodes[i])) ||
            !strs_add(&d->files, f->nodes[i].call_file ? f->nodes[i].call_file : NO_FILE))
            return false;
    return true;
}

/* Pass 2: one FUNC with its INLINE and line records. */
static void write_func(dump *d, const lineindex_xfunc *f)
{
    uint64_t lo = f->start, hi = f->start + f->size;
    FILE *out = d->out;
    fprintf(out, "FUNC %llx %llx 0 %s\n", (unsigned long long)(lo - d->text),
            (unsigned long long)f->size, func_name(d, f));
    d->st.funcs++;
    /* INLINE records in preorder; a node without code in this FUNC is left
     * out, and with it its subtree (whose ranges lie inside its own). */
    bool *keep = f->nnodes ? calloc(f->nnodes, sizeof *keep) : NULL;
    for (size_t i = 0; i < f->nnodes && keep; i++) {
        const lineindex_xnode *n = &f->nodes[i];
        keep[i] = (n->parent == UINT32_MAX || keep[n->parent]) && node_in(f, n, lo, hi);
        if (!keep[i])
            continue;
        fprintf(out, "INLINE %u %u %zu %zu", n->depth, n->call_line,
                strs_id(&d->files, n->call_file ? n->call_file : NO_FILE),
                strs_id(&d->origins, node_name(n)));
        for (size_t k = 0; k < n->nranges; k++) {
            const lineindex_range *r = &f->ranges[n->range0 + k];
            uint64_t a = r->lo > lo ? r->lo : lo, b = r->hi < hi ? r->hi : hi;
            if (a < b)
                fprintf(out, " %llx %llx", (unsigned long long)(a - d->text),
                        (unsigned long long)(b - a));
        }
        fputc('\n', out);
        d->st.inlines++;
    }
    free(keep);
    /* Line records: each row with a line to the next row (or the FUNC's
     * end); rows that repeat the one before them (a column change only:
     * .sym has no columns) extend it. */
    for (size_t i = 0; i < f->nrows;) {
        const lineindex_xrow *r = &f->rows[i];
        size_t j = i + 1;
        while (j < f->nrows && f->rows[j].file == r->file && f->rows[j].line == r->line)
            j++;
        uint64_t a = r->addr > lo ? r->addr : lo;
        uint64_t b = j < f->nrows && f->rows[j].addr < hi ? f->rows[j].addr : hi;
        if (r->file && a < b) {
            fprintf(out, "%llx %llx %u %zu\n", (unsigned long long)(a - d->text),
                    (unsigned long long)(b - a), r->line, strs_id(&d->files, r->file));
            d->st.lines++;
        }
        i = j;
    }
}

/* Contract in dumpsyms.h. */
symd_status bp_dump_syms(const uint8_t *bin, size_t bin_len, const uint8_t *dsym,
                         size_t dsym_len, const bp_dump_opts *o, FILE *out,
                         bp_dump_stats *stats, symd_err *err)
{
    macho_image bimg, dimg;
    bool have_d = false;
    uint8_t *sblob = NULL, *lblob = NULL;
    span *spans = NULL;
    bp_cfi cfi;
    memset(&cfi, 0, sizeof cfi);
    dump d;
    memset(&d, 0, sizeof d);
    d.out = out;
    symd_status st = pick_slice(bin, bin_len, o->arch, "the binary", &bimg, err);
    if (st != SYMD_OK)
        return st;
    const char *arch = macho_arch_name(bimg.cputype, bimg.cpusubtype);
    if (!arch) {
        st = symd_fail(err, SYMD_E_UNSUPPORTED, "unknown CPU type 0x%x/0x%x", bimg.cputype,
                       bimg.cpusubtype);
        goto out;
    }
    if (!bimg.has_uuid) {
        st = symd_fail(err, SYMD_E_NO_UUID, "the binary has no LC_UUID");
        goto out;
    }
    if (dsym) {
        if ((st = pick_slice(dsym, dsym_len, arch, "the dSYM", &dimg, err)) != SYMD_OK)
            goto out;
        have_d = true;
        if (!dimg.has_uuid || memcmp(dimg.uuid, bimg.uuid, 16) != 0) {
            st = symd_fail(err, SYMD_E_INVALID, "the dSYM's %s slice is not the binary's (UUID "
                                                "differs)", arch);
            goto out;
        }
    }
    size_t slen, llen;
    symindex sidx;
    lineindex lix;
    lineindex_stats lst;
    if ((st = symindex_build(&bimg, &sblob, &slen, NULL, NULL, err)) != SYMD_OK ||
        (st = symindex_open(sblob, slen, &sidx, err)) != SYMD_OK ||
        (st = lineindex_build(have_d ? &dimg : &bimg, &sidx, DUMP_MAX_LINE_INDEX, &lblob, &llen,
                              &lst, err)) != SYMD_OK ||
        (lblob && (st = lineindex_open(lblob, llen, &lix, err)) != SYMD_OK))
        goto out;
    d.sidx = &sidx;
    d.lix = lblob ? &lix : NULL;
    d.text = macho_text_vmaddr(&bimg);
    if (o->cfi && (st = o->cfi(o->cfi_ctx, &bimg, &cfi, err)) != SYMD_OK)
        goto out;

    /* Pass 1: what FILE and INLINE_ORIGIN records there are. */
    uint32_t nf = d.lix ? lix.nfuncs : 0;
    for (uint32_t i = 0; i < nf; i++) {
        lineindex_xfunc f;
        if (!lineindex_function(&lix, i, &f)) {
            st = symd_fail(err, SYMD_E_BAD_DEBUG_INFO, "line index function %u unreadable", i);
            goto out;
        }
        bool ok = collect(&d, &f);
        lineindex_xfunc_free(&f);
        if (!ok) {
            st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
            goto out;
        }
    }
    strs_finish(&d.files);
    strs_finish(&d.origins);

    char u[33];
    for (int i = 0; i < 16; i++)
        snprintf(u + 2 * i, 3, "%02X", bimg.uuid[i]);
    fprintf(out, "MODULE mac %s %s0 %s\n", arch, u, o->name && *o->name ? o->name : "unknown");
    fprintf(out, "INFO CODE_ID %s\n", u);
    for (size_t i = 0; i < d.files.n; i++)
        fprintf(out, "FILE %zu %s\n", i, d.files.v[i]);
    for (size_t i = 0; i < d.origins.n; i++)
        fprintf(out, "INLINE_ORIGIN %zu %s\n", i, d.origins.v[i]);
    d.st.files = d.files.n;
    d.st.origins = d.origins.n;

    /* Pass 2: FUNC records, in address order (the index's). */
    if (nf && !(spans = malloc(nf * sizeof *spans))) {
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < nf; i++) {
        lineindex_xfunc f;
        if (!lineindex_function(&lix, i, &f)) {
            st = symd_fail(err, SYMD_E_BAD_DEBUG_INFO, "line index function %u unreadable", i);
            goto out;
        }
        write_func(&d, &f);
        spans[i] = (span){f.start, f.start + f.size};
        lineindex_xfunc_free(&f);
    }
    if (nf > 1)
        qsort(spans, nf, sizeof *spans, cmp_span);
    /* PUBLIC: every symbol no FUNC covers. */
    for (uint32_t i = 0; i < sidx.nsyms; i++) {
        uint64_t a = sidx.base + ld_u32le(sidx.syms + (size_t)i * 12);
        if (in_spans(spans, nf, a) || a < d.text)
            continue;
        symlook look;
        symindex_lookup(&sidx, a, &look);
        if (look.status != SYMLOOK_SYMBOL || look.sym_addr != a)
            continue;
        fprintf(out, "PUBLIC %llx 0 %s\n", (unsigned long long)(a - d.text), look.name);
        d.st.publics++;
    }
    write_cfi(out, &cfi);
    d.st.cfi_entries = cfi.nentries;
    d.st.cfi_rows = cfi.nrows;
    if (fflush(out) != 0 || ferror(out))
        st = symd_fail(err, SYMD_E_IO, "writing the .sym failed");
out:
    if (stats)
        *stats = d.st;
    free(d.files.v);
    free(d.origins.v);
    free(spans);
    free(sblob);
    free(lblob);
    bp_cfi_free(&cfi);
    if (have_d)
        macho_image_free(&dimg);
    macho_image_free(&bimg);
    return st;
}

/* Breakpad .sym reader: lines → records → sorted, clipped arrays (sym.h). */
#include "sym.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../util/hex.h"
#include "../util/util.h"
#include "../util/metered.h" /* last: counts this file's allocations */

/* ---- warnings ------------------------------------------------------------ */

static const char *const warning_texts[BP_W_KINDS] = {
    [BP_W_MALFORMED] = "records that do not read (skipped)",
    [BP_W_UNKNOWN] = "lines of no known record (skipped)",
    [BP_W_RANGE] = "records whose addresses run past 4 GiB, cover nothing or (a FUNC) "
                   "more than 2 GiB (skipped)",
    [BP_W_FUNC_ORDER] = "FUNC records out of address order (sorted)",
    [BP_W_FUNC_SAME] = "FUNC records at the address of an earlier one without the 'm' flag "
                       "(the first kept)",
    [BP_W_FUNC_OVERLAP] = "FUNC records overlapping the next one (cut where it begins)",
    [BP_W_LINE_ORPHAN] = "line records before any FUNC (skipped)",
    [BP_W_LINE_OUTSIDE] = "line records outside their FUNC (clipped to it)",
    [BP_W_FILE_ID] = "FILE ids unknown or defined twice (no file; the first kept)",
    [BP_W_ORIGIN_ID] = "INLINE_ORIGIN ids unknown or defined twice (no name; the first kept)",
    [BP_W_INLINE_NEST] = "INLINE ranges inside no INLINE of the depth above, or nested "
                         "deeper than 64 (dropped)",
    [BP_W_INLINE_OUTSIDE] = "INLINE ranges outside their FUNC (clipped to it)",
    [BP_W_CFI_ORPHAN] = "STACK CFI rows before any STACK CFI INIT or outside its range "
                        "(skipped)",
    [BP_W_CFI_OVERLAP] = "STACK CFI INIT records overlapping or out of order (sorted, the "
                         "earlier one cut)",
    [BP_W_CFI_EXPR] = "STACK CFI rules symd does not evaluate (kept as unsupported: that "
                      "register cannot be recovered there)",
    [BP_W_NAME] = "names that are not UTF-8 (bad bytes shown as '?')",
};

/* Contract in sym.h. */
const char *bp_warning_text(bp_warning_kind k)
{
    return k < BP_W_KINDS ? warning_texts[k] : "?";
}

/* Contract in sym.h. */
size_t bp_sym_warnings(const bp_sym *s, char out[][160], size_t max)
{
    size_t n = 0;
    for (int k = 0; k < BP_W_KINDS; k++) {
        if (!s->warn[k].count)
            continue;
        if (n < max)
            snprintf(out[n], 160, "%s: %llu, first at line %llu", warning_texts[k],
                     (unsigned long long)s->warn[k].count,
                     (unsigned long long)s->warn[k].first_line);
        n++;
    }
    return n;
}

/* ---- the parse state ----------------------------------------------------- */

/* A STACK CFI rule as read, before rows are resolved: target is a
 * register, BP_REG_RA, or CFA_REG for the ".cfa" rule (then CFA = base +
 * off when kind is BP_RULE_VAL_CFA). */
#define CFA_REG 0xfffdu
/* An INLINE of the older form names no call file. */
#define NO_ID UINT32_MAX
typedef struct {
    uint16_t target, base;
    uint8_t kind;
    int32_t off;
} praw_rule;
typedef struct {
    uint32_t addr;
    uint64_t src_line;
    uint32_t rule0, nrules; /* into p->praw */
} pending_row;

typedef struct {
    bp_sym *s;
    symd_err *err;
    uint64_t line; /* 1-based number of the line being read */
    long cur_func; /* index in s->funcs of the FUNC open, -1 none */
    uint32_t prev_func_addr;
    bool have_prev_func;
    /* INLINE records as read (bp_inline without parent), their ranges
     * clipped to their FUNC; finish() builds the trees from them. */
    bp_inline *raw;
    size_t nraw, raw_cap;
    bp_range *raw_ranges;
    size_t nraw_ranges, raw_ranges_cap;
    /* STACK CFI: the INIT open and its rows, resolved when the next INIT
     * comes or the file ends. */
    bool cfi_open;
    bp_cfi_entry init;
    uint64_t init_line;
    pending_row *prows;
    size_t nprows, prows_cap;
    praw_rule *praw;
    size_t npraw, praw_cap;
    bool require_module;
    uint64_t *entry_lines; /* source line of each entry, for overlap warnings */
    size_t entry_lines_cap;
} parser;

/* Counts a warning of kind k on the line being read (warn_at: on line). */
static void warn(parser *p, bp_warning_kind k)
{
    bp_warning *w = &p->s->warn[k];
    if (!w->count++)
        w->first_line = p->line;
}

static void warn_at(parser *p, bp_warning_kind k, uint64_t line)
{
    bp_warning *w = &p->s->warn[k];
    if (!w->count++ || line < w->first_line)
        w->first_line = line;
}

static symd_status nomem(parser *p)
{
    return symd_fail(p->err, SYMD_E_NOMEM, "out of memory");
}

/* Room for one more element in a vector of the sym; false when out of memory
 * or past 2^32 elements (indexes are 32-bit). */
static bool room(void **v, size_t *cap, size_t n, size_t elem)
{
    return n < UINT32_MAX && array_grow(v, cap, n + 1, elem);
}
#define ROOM(vec, n, cap) room((void **)&(vec), &(cap), (n), sizeof *(vec))

/* ---- tokens -------------------------------------------------------------- */

typedef struct {
    const char *p;
    size_t n;
} tok;

/* The next space- or tab-separated token of [*pos, end); false at the end. */
static bool next_tok(const char **pos, const char *end, tok *t)
{
    const char *q = *pos;
    while (q < end && (*q == ' ' || *q == '\t'))
        q++;
    if (q == end) {
        *pos = q;
        return false;
    }
    t->p = q;
    while (q < end && *q != ' ' && *q != '\t')
        q++;
    t->n = (size_t)(q - t->p);
    *pos = q;
    return true;
}

/* The rest of the line after one separator: a name may hold spaces. */
static tok rest_of(const char *pos, const char *end)
{
    while (pos < end && (*pos == ' ' || *pos == '\t'))
        pos++;
    tok t = {pos, (size_t)(end - pos)};
    return t;
}

static bool tok_is(const tok *t, const char *lit)
{
    return strlen(lit) == t->n && memcmp(t->p, lit, t->n) == 0;
}

static bool tok_hex(const tok *t, uint64_t *v)
{
    if (t->n == 0 || t->n > 16)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < t->n; i++) {
        int d = hex_digit(t->p[i]);
        if (d < 0)
            return false;
        x = x << 4 | (uint64_t)d;
    }
    *v = x;
    return true;
}

static bool tok_dec32(const tok *t, uint32_t *v)
{
    if (t->n == 0 || t->n > 10)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->p[i] < '0' || t->p[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(t->p[i] - '0');
    }
    if (x > UINT32_MAX)
        return false;
    *v = (uint32_t)x;
    return true;
}

/* A signed offset of a postfix rule: decimal (or 0x-hex), optional sign,
 * that fits an int32. */
static bool tok_off(const tok *t, int32_t *v)
{
    size_t i = 0;
    bool neg = false;
    if (i < t->n && (t->p[i] == '-' || t->p[i] == '+'))
        neg = t->p[i++] == '-';
    if (i == t->n)
        return false;
    uint64_t x = 0;
    if (t->n - i > 2 && t->p[i] == '0' && (t->p[i + 1] == 'x' || t->p[i + 1] == 'X')) {
        tok h = {t->p + i + 2, t->n - i - 2};
        if (!tok_hex(&h, &x))
            return false;
    } else {
        if (t->n - i > 10)
            return false;
        for (; i < t->n; i++) {
            if (t->p[i] < '0' || t->p[i] > '9')
                return false;
            x = x * 10 + (uint64_t)(t->p[i] - '0');
        }
    }
    if (x > (neg ? (uint64_t)INT32_MAX + 1 : (uint64_t)INT32_MAX))
        return false;
    *v = neg ? (int32_t)(0 - x) : (int32_t)x;
    return true;
}

/* An address range [addr, addr + size) that fits the 32-bit module offsets
 * the indexes use, and covers something. */
static bool range_fits(uint64_t addr, uint64_t size)
{
    return size > 0 && addr <= BP_SYM_MAX_ADDR && size <= BP_SYM_MAX_ADDR - addr;
}

/* ---- strings ------------------------------------------------------------- */

/* Appends t to the string table as a NUL-terminated name; bytes that are not
 * UTF-8 become '?' (names reach JSON answers). *off is its offset. */
static bool add_string(parser *p, const tok *t, uint32_t *off)
{
    bp_sym *s = p->s;
    size_t need;
    if (!size_add(s->strings_len, t->n + 1, &need) || need > UINT32_MAX) {
        symd_fail(p->err, SYMD_E_TOO_LARGE, "line %llu: names exceed 4 GiB",
                  (unsigned long long)p->line);
        return false;
    }
    if (!array_grow((void **)&s->strings, &s->strings_cap, need, 1)) {
        nomem(p);
        return false;
    }
    *off = (uint32_t)s->strings_len;
    char *o = s->strings + s->strings_len;
    const unsigned char *q = (const unsigned char *)t->p, *end = q + t->n;
    bool bad = false;
    while (q < end) {
        if (*q < 0x80) {
            *o++ = (char)*q++;
            continue;
        }
        size_t k = utf8_seq_len(q, end);
        if (!k) {
            *o++ = '?';
            q++;
            bad = true;
            continue;
        }
        memcpy(o, q, k);
        o += k;
        q += k;
    }
    *o++ = 0;
    s->strings_len = (size_t)(o - s->strings);
    if (bad)
        warn(p, BP_W_NAME);
    return true;
}

/* ---- records ------------------------------------------------------------- */

/* The file's arch for register spellings: the MODULE's, else the family of
 * the first register name met. */
static bp_cfi_arch module_cfi_arch(const char *arch)
{
    if (strcmp(arch, "x86_64") == 0 || strcmp(arch, "x86_64h") == 0)
        return BP_CFI_ARCH_X86_64;
    if (strncmp(arch, "arm64", 5) == 0)
        return BP_CFI_ARCH_ARM64;
    return BP_CFI_ARCH_UNKNOWN;
}

/* MODULE os arch debug_id name: fatal when it does not read (an upload
 * cannot be stored without it). */
static symd_status rec_module(parser *p, const char *pos, const char *end)
{
    bp_sym *s = p->s;
    tok os, arch, id;
    if (s->has_module)
        return SYMD_CORRUPT(p->err, "line %llu: a second MODULE record",
                            (unsigned long long)p->line);
    if (!next_tok(&pos, end, &os) || !next_tok(&pos, end, &arch) || !next_tok(&pos, end, &id))
        return SYMD_CORRUPT(p->err, "line %llu: MODULE record needs os, arch, debug id and name",
                            (unsigned long long)p->line);
    tok name = rest_of(pos, end);
    if (!name.n)
        return SYMD_CORRUPT(p->err, "line %llu: MODULE record needs os, arch, debug id and name",
                            (unsigned long long)p->line);
    if (os.n >= sizeof s->os || arch.n >= sizeof s->arch)
        return SYMD_CORRUPT(p->err, "line %llu: MODULE os or arch longer than 31 bytes",
                            (unsigned long long)p->line);
    /* A Mach-O debug id is the UUID's 32 hex digits and the age in hex
     * (Breakpad writes 0): 33 to 40 digits. */
    bool hex = id.n >= 33 && id.n <= 40;
    for (size_t i = 0; hex && i < id.n; i++)
        hex = hex_digit(id.p[i]) >= 0;
    if (!hex)
        return SYMD_CORRUPT(p->err,
                            "line %llu: MODULE debug id '%.*s' is not a UUID's 32 hex digits "
                            "followed by an age (1 to 8 hex digits)",
                            (unsigned long long)p->line, (int)(id.n < 48 ? id.n : 48), id.p);
    memcpy(s->os, os.p, os.n);
    s->os[os.n] = 0;
    memcpy(s->arch, arch.p, arch.n);
    s->arch[arch.n] = 0;
    for (size_t i = 0; i < id.n; i++) {
        char c = id.p[i];
        s->debug_id[i] = c >= 'a' && c <= 'f' ? (char)(c - 'a' + 'A') : c;
    }
    s->debug_id[id.n] = 0;
    for (int i = 0; i < 16; i++)
        s->uuid[i] = (uint8_t)(hex_digit(id.p[2 * i]) << 4 | hex_digit(id.p[2 * i + 1]));
    s->age = 0;
    for (size_t i = 32; i < id.n; i++)
        s->age = s->age << 4 | (uint32_t)hex_digit(id.p[i]);
    if (!add_string(p, &name, &s->module_name))
        return p->err->kind;
    s->has_module = true;
    s->cfi.arch = module_cfi_arch(s->arch);
    return SYMD_OK;
}

/* INFO CODE_ID id [file]; other INFO records are ignored. */
static symd_status rec_info(parser *p, const char *pos, const char *end)
{
    tok kind, id;
    if (!next_tok(&pos, end, &kind))
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    if (!tok_is(&kind, "CODE_ID"))
        return SYMD_OK; /* INFO GENERATOR and the like: nothing symd uses */
    if (!next_tok(&pos, end, &id) || id.n >= sizeof p->s->code_id)
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    memcpy(p->s->code_id, id.p, id.n);
    p->s->code_id[id.n] = 0;
    return SYMD_OK;
}

/* FILE id path and INLINE_ORIGIN id name: an id and the rest of the line. */
static symd_status rec_named_id(parser *p, const char *pos, const char *end, bool file)
{
    bp_sym *s = p->s;
    tok id;
    uint32_t v, off;
    if (!next_tok(&pos, end, &id) || !tok_dec32(&id, &v))
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    tok name = rest_of(pos, end);
    if (!add_string(p, &name, &off))
        return p->err->kind;
    if (file) {
        if (!ROOM(s->files, s->nfiles, s->files_cap))
            return nomem(p);
        s->files[s->nfiles++] = (bp_file){v, off, p->line};
    } else {
        if (!ROOM(s->origins, s->norigins, s->origins_cap))
            return nomem(p);
        s->origins[s->norigins++] = (bp_origin){v, off, p->line};
    }
    return SYMD_OK;
}

/* FUNC [m] addr size param_size name: opens the FUNC the line and INLINE
 * records after it belong to. */
static symd_status rec_func(parser *p, const char *pos, const char *end)
{
    bp_sym *s = p->s;
    p->cur_func = -1; /* line records after a FUNC that does not read are orphans */
    tok t[3];
    bool multiple = false;
    if (!next_tok(&pos, end, &t[0]))
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    if (tok_is(&t[0], "m")) {
        multiple = true;
        if (!next_tok(&pos, end, &t[0]))
            return warn(p, BP_W_MALFORMED), SYMD_OK;
    }
    uint64_t addr, size, param;
    if (!next_tok(&pos, end, &t[1]) || !next_tok(&pos, end, &t[2]) || !tok_hex(&t[0], &addr) ||
        !tok_hex(&t[1], &size) || !tok_hex(&t[2], &param))
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    if (!range_fits(addr, size) || size > INT32_MAX)
        return warn(p, BP_W_RANGE), SYMD_OK;
    tok name = rest_of(pos, end);
    if (p->have_prev_func && addr < p->prev_func_addr)
        warn(p, BP_W_FUNC_ORDER);
    p->prev_func_addr = (uint32_t)addr;
    p->have_prev_func = true;
    if (!ROOM(s->funcs, s->nfuncs, s->funcs_cap))
        return nomem(p);
    bp_func *f = &s->funcs[s->nfuncs];
    memset(f, 0, sizeof *f);
    f->addr = (uint32_t)addr;
    f->size = (uint32_t)size;
    f->param_size = param > UINT32_MAX ? UINT32_MAX : (uint32_t)param;
    f->multiple = multiple;
    f->line0 = (uint32_t)s->nlines;
    f->inline0 = (uint32_t)p->nraw;
    f->src_line = p->line;
    if (!add_string(p, &name, &f->name))
        return p->err->kind;
    p->cur_func = (long)s->nfuncs++;
    return SYMD_OK;
}

/* Clips [*a, *a + *n) to the FUNC's range; false when nothing is left. */
static bool clip_to(const bp_func *f, uint64_t *a, uint64_t *n)
{
    uint64_t lo = *a, hi = *a + *n, flo = f->addr, fhi = (uint64_t)f->addr + f->size;
    if (lo < flo)
        lo = flo;
    if (hi > fhi)
        hi = fhi;
    if (lo >= hi)
        return false;
    *a = lo;
    *n = hi - lo;
    return true;
}

/* addr size line file_id (first: addr, read already), clipped to the open
 * FUNC with a warning when it reaches outside. */
static symd_status rec_line(parser *p, const tok *first, const char *pos, const char *end)
{
    bp_sym *s = p->s;
    tok t[3];
    uint64_t addr, size;
    uint32_t line, file;
    if (!next_tok(&pos, end, &t[0]) || !next_tok(&pos, end, &t[1]) ||
        !next_tok(&pos, end, &t[2]) || !tok_hex(first, &addr) || !tok_hex(&t[0], &size) ||
        !tok_dec32(&t[1], &line) || !tok_dec32(&t[2], &file))
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    if (p->cur_func < 0)
        return warn(p, BP_W_LINE_ORPHAN), SYMD_OK;
    if (!range_fits(addr, size))
        return warn(p, BP_W_RANGE), SYMD_OK;
    bp_func *f = &s->funcs[p->cur_func];
    uint64_t a = addr, n = size;
    if (!clip_to(f, &a, &n) || a != addr || n != size) {
        warn(p, BP_W_LINE_OUTSIDE);
        if (!clip_to(f, &a, &n))
            return SYMD_OK;
    }
    if (f->nlines == UINT32_MAX || !ROOM(s->lines, s->nlines, s->lines_cap))
        return nomem(p);
    /* file holds the FILE id until finish() resolves it to an index. */
    s->lines[s->nlines++] = (bp_line){(uint32_t)a, (uint32_t)n, line, file};
    f->nlines++;
    return SYMD_OK;
}

/* INLINE depth call_line [call_file] origin (addr size)+ of the open FUNC,
 * kept raw (ranges clipped to the FUNC) until finish() builds the tree. */
static symd_status rec_inline(parser *p, const char *pos, const char *end)
{
    bp_sym *s = p->s;
    tok t[2];
    /* Count the fields first: with a call file, 4 fields then pairs (an even
     * count); the older form without it, 3 then pairs (odd). */
    const char *q = pos;
    tok dummy;
    size_t count = 0;
    while (next_tok(&q, end, &dummy))
        count++;
    if (count < 5)
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    bool has_file = count % 2 == 0;
    size_t head = has_file ? 4 : 3;
    uint32_t v[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < head; i++) {
        next_tok(&pos, end, &t[0]);
        if (!tok_dec32(&t[0], &v[i]))
            return warn(p, BP_W_MALFORMED), SYMD_OK;
    }
    if (p->cur_func < 0)
        return warn(p, BP_W_LINE_ORPHAN), SYMD_OK;
    uint32_t depth = v[0], call_line = v[1], call_file = has_file ? v[2] : NO_ID,
             origin = has_file ? v[3] : v[2];
    if (depth >= BP_SYM_MAX_INLINE_DEPTH)
        return warn(p, BP_W_INLINE_NEST), SYMD_OK;
    bp_func *f = &s->funcs[p->cur_func];
    size_t r0 = p->nraw_ranges;
    bool clipped = false;
    while (next_tok(&pos, end, &t[0])) {
        uint64_t a, n;
        if (!next_tok(&pos, end, &t[1]) || !tok_hex(&t[0], &a) || !tok_hex(&t[1], &n)) {
            p->nraw_ranges = r0;
            return warn(p, BP_W_MALFORMED), SYMD_OK;
        }
        if (!range_fits(a, n))
            continue; /* an empty or impossible range holds nothing */
        uint64_t ca = a, cn = n;
        if (!clip_to(f, &ca, &cn) || ca != a || cn != n)
            clipped = true;
        if (!clip_to(f, &ca, &cn))
            continue;
        if (!ROOM(p->raw_ranges, p->nraw_ranges, p->raw_ranges_cap))
            return nomem(p);
        p->raw_ranges[p->nraw_ranges++] = (bp_range){(uint32_t)ca, (uint32_t)cn};
    }
    if (clipped)
        warn(p, BP_W_INLINE_OUTSIDE);
    if (f->ninlines == UINT32_MAX || !ROOM(p->raw, p->nraw, p->raw_cap))
        return nomem(p);
    /* An INLINE whose ranges all fell outside its FUNC is kept without code:
     * the tree is built from addresses, so it simply holds nothing. */
    p->raw[p->nraw++] = (bp_inline){depth,    UINT32_MAX,       call_line, call_file, origin,
                                    (uint32_t)r0, (uint32_t)(p->nraw_ranges - r0), p->line};
    f->ninlines++;
    return SYMD_OK;
}

/* PUBLIC [m] addr param_size name. */
static symd_status rec_public(parser *p, const char *pos, const char *end)
{
    bp_sym *s = p->s;
    p->cur_func = -1;
    tok t[2];
    bool multiple = false;
    if (!next_tok(&pos, end, &t[0]))
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    if (tok_is(&t[0], "m")) {
        multiple = true;
        if (!next_tok(&pos, end, &t[0]))
            return warn(p, BP_W_MALFORMED), SYMD_OK;
    }
    uint64_t addr, param;
    if (!next_tok(&pos, end, &t[1]) || !tok_hex(&t[0], &addr) || !tok_hex(&t[1], &param))
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    if (addr > BP_SYM_MAX_ADDR)
        return warn(p, BP_W_RANGE), SYMD_OK;
    tok name = rest_of(pos, end);
    if (!ROOM(s->publics, s->npublics, s->publics_cap))
        return nomem(p);
    bp_public *pb = &s->publics[s->npublics];
    pb->addr = (uint32_t)addr;
    pb->param_size = param > UINT32_MAX ? UINT32_MAX : (uint32_t)param;
    pb->multiple = multiple;
    pb->src_line = p->line;
    if (!add_string(p, &name, &pb->name))
        return p->err->kind;
    s->npublics++;
    return SYMD_OK;
}

/* ---- STACK CFI ----------------------------------------------------------- */

/* A register name of this file's arch (".ra" of any); false otherwise. */
static bool cfi_reg(parser *p, const tok *t, uint16_t *reg)
{
    bp_cfi_arch a;
    if (!bp_cfi_reg(t->p, t->n, reg, &a))
        return false;
    if (a == BP_CFI_ARCH_UNKNOWN)
        return true;
    if (p->s->cfi.arch == BP_CFI_ARCH_UNKNOWN)
        p->s->cfi.arch = a;
    return a == p->s->cfi.arch;
}

/* Reads one rule's postfix expression e[0..n) for register target (CFA_REG
 * for ".cfa") into *r; false when it is none of the forms symd evaluates.
 * The forms: for the CFA "REG", "REG N +", "REG N -"; for a register
 * ".cfa N + ^" (at CFA + N), ".cfa ^", ".cfa N +" (= CFA + N), ".cfa", the
 * register itself (same) or another one. */
static bool read_rule(parser *p, uint16_t target, const tok *e, size_t n, praw_rule *r)
{
    r->target = target;
    r->kind = BP_RULE_UNSUPPORTED;
    r->base = 0;
    r->off = 0;
    if (n == 0)
        return false;
    uint16_t base = 0;
    bool from_cfa = tok_is(&e[0], ".cfa");
    if (from_cfa ? target == CFA_REG : !cfi_reg(p, &e[0], &base) || base == BP_REG_RA)
        return false;
    int32_t off = 0;
    bool deref = false;
    if (n == 2 && tok_is(&e[1], "^")) {
        deref = true;
    } else if (n == 3 || n == 4) {
        bool plus = tok_is(&e[2], "+"), minus = tok_is(&e[2], "-");
        if (!(plus || minus) || !tok_off(&e[1], &off) || (minus && off == INT32_MIN))
            return false;
        if (minus)
            off = -off;
        if (n == 4) {
            if (!tok_is(&e[3], "^"))
                return false;
            deref = true;
        }
    } else if (n != 1) {
        return false;
    }
    if (target == CFA_REG) { /* CFA = register + offset */
        if (deref)
            return false;
        r->kind = BP_RULE_VAL_CFA;
        r->base = base;
        r->off = off;
        return true;
    }
    if (from_cfa) {
        r->kind = deref ? BP_RULE_AT_CFA : BP_RULE_VAL_CFA;
        r->off = off;
        return true;
    }
    if (deref || off != 0)
        return false; /* [register + offset] or register + offset: not evaluated */
    r->kind = base == target ? BP_RULE_SAME : BP_RULE_REG;
    r->off = base;
    return true;
}

/* Reads "REG: expr REG: expr ..." from [pos, end) into p->praw; *rule0 and
 * *nrules say where. A rule that does not read is kept as unsupported (a
 * warning); a register name symd does not know drops that rule (a warning). */
static symd_status read_rules(parser *p, const char *pos, const char *end, uint32_t *rule0,
                              uint32_t *nrules)
{
    *rule0 = (uint32_t)p->npraw;
    *nrules = 0;
    tok t, expr[8];
    size_t ne = 0;
    bool have = false, overflow = false;
    uint16_t target = 0;
    for (bool more = true; more;) {
        more = next_tok(&pos, end, &t);
        bool is_name = more && t.n >= 2 && t.p[t.n - 1] == ':';
        if (!more || is_name) {
            if (have) {
                /* unsupported unless read_rule reads it */
                praw_rule r = {target, 0, BP_RULE_UNSUPPORTED, 0};
                if (overflow || !read_rule(p, target, expr, ne, &r)) {
                    r = (praw_rule){target, 0, BP_RULE_UNSUPPORTED, 0};
                    warn(p, BP_W_CFI_EXPR);
                }
                if (*nrules < 2 * BP_CFI_MAX_RULES) {
                    if (!ROOM(p->praw, p->npraw, p->praw_cap))
                        return nomem(p);
                    p->praw[p->npraw++] = r;
                    (*nrules)++;
                }
            }
            have = false;
            if (!more)
                break;
            tok name = {t.p, t.n - 1};
            ne = 0;
            overflow = false;
            if (tok_is(&name, ".cfa")) {
                target = CFA_REG;
                have = true;
            } else if (cfi_reg(p, &name, &target)) {
                have = true;
            } else {
                warn(p, BP_W_CFI_EXPR); /* an unknown register: its rule is dropped */
            }
            continue;
        }
        if (!have)
            continue; /* tokens before the first name, or an unknown register's */
        if (ne < sizeof expr / sizeof expr[0])
            expr[ne++] = t;
        else
            overflow = true;
    }
    return SYMD_OK;
}

/* The rules in effect at a row: one per register. */
typedef struct {
    uint16_t cfa_reg;
    int32_t cfa_off;
    size_t n;
    bp_cfi_rule r[BP_CFI_MAX_RULES];
} rule_state;

/* Applies the rules read for one row (the file's order: a later rule for a
 * register replaces an earlier one). An unsupported ".cfa" leaves no CFA. */
static void apply_pending(parser *p, rule_state *st, uint32_t r0, uint32_t n)
{
    for (uint32_t i = r0; i < r0 + n; i++) {
        const praw_rule *r = &p->praw[i];
        if (r->target == CFA_REG) {
            bool ok = r->kind == BP_RULE_VAL_CFA;
            st->cfa_reg = ok ? r->base : BP_REG_NONE;
            st->cfa_off = ok ? r->off : 0;
            continue;
        }
        bp_cfi_rule nr = {r->target, r->kind, r->off};
        size_t k = 0;
        while (k < st->n && st->r[k].reg != r->target)
            k++;
        if (k < st->n)
            st->r[k] = nr;
        else if (st->n < BP_CFI_MAX_RULES)
            st->r[st->n++] = nr;
    }
}

static int cmp_rule(const void *a, const void *b)
{
    const bp_cfi_rule *x = a, *y = b;
    return x->reg < y->reg ? -1 : x->reg > y->reg;
}

/* Appends the state as a row at addr. */
static symd_status emit_row(parser *p, uint32_t addr, rule_state *st)
{
    bp_cfi *c = &p->s->cfi;
    if (!ROOM(c->rows, c->nrows, c->rows_cap))
        return nomem(p);
    qsort(st->r, st->n, sizeof st->r[0], cmp_rule);
    bp_cfi_row *row = &c->rows[c->nrows++];
    row->addr = addr;
    row->cfa_reg = st->cfa_reg;
    row->cfa_off = st->cfa_off;
    row->rule0 = (uint32_t)c->nrules;
    row->nrules = (uint32_t)st->n;
    for (size_t i = 0; i < st->n; i++) {
        if (!ROOM(c->rules, c->nrules, c->rules_cap))
            return nomem(p);
        c->rules[c->nrules++] = st->r[i];
    }
    return SYMD_OK;
}

static int cmp_prow(const void *a, const void *b)
{
    const pending_row *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->src_line < y->src_line ? -1 : x->src_line > y->src_line;
}

/* Resolves the open INIT and its rows into an entry of s->cfi. */
static symd_status close_init(parser *p)
{
    if (!p->cfi_open)
        return SYMD_OK;
    p->cfi_open = false;
    bp_cfi *c = &p->s->cfi;
    /* prows[0] is the INIT's own rules; the rest sorted by address (the
     * file's order at one address: later rules win). */
    if (p->nprows > 2)
        qsort(p->prows + 1, p->nprows - 1, sizeof *p->prows, cmp_prow);
    if (!ROOM(c->entries, c->nentries, c->entries_cap) ||
        !array_grow((void **)&p->entry_lines, &p->entry_lines_cap, c->nentries + 1,
                    sizeof *p->entry_lines))
        return nomem(p);
    bp_cfi_entry *e = &c->entries[c->nentries];
    *e = p->init;
    e->row0 = (uint32_t)c->nrows;
    e->nrows = 0;
    rule_state st;
    memset(&st, 0, sizeof st);
    st.cfa_reg = BP_REG_NONE;
    for (size_t i = 0; i < p->nprows; i++) {
        const pending_row *pr = &p->prows[i];
        apply_pending(p, &st, pr->rule0, pr->nrules);
        /* Rows at one address are one row, the last state at it. */
        if (i + 1 < p->nprows && p->prows[i + 1].addr == pr->addr)
            continue;
        symd_status r = emit_row(p, pr->addr, &st);
        if (r != SYMD_OK)
            return r;
        e->nrows++;
    }
    p->entry_lines[c->nentries] = p->init_line;
    c->nentries++;
    p->nprows = 0;
    p->npraw = 0;
    return SYMD_OK;
}

/* STACK CFI INIT addr size rules (closes the INIT open before, opens this
 * one), STACK CFI addr rules (a row of the open INIT), STACK WIN (counted). */
static symd_status rec_stack(parser *p, const char *pos, const char *end)
{
    tok t;
    if (!next_tok(&pos, end, &t))
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    if (tok_is(&t, "WIN")) {
        p->s->stack_win++;
        return SYMD_OK;
    }
    if (!tok_is(&t, "CFI"))
        return warn(p, BP_W_UNKNOWN), SYMD_OK;
    const char *save = pos;
    if (!next_tok(&pos, end, &t))
        return warn(p, BP_W_MALFORMED), SYMD_OK;
    bool init = tok_is(&t, "INIT");
    uint64_t addr, size = 0;
    if (init) {
        symd_status r = close_init(p);
        if (r != SYMD_OK)
            return r;
        tok ts;
        if (!next_tok(&pos, end, &t) || !next_tok(&pos, end, &ts) || !tok_hex(&t, &addr) ||
            !tok_hex(&ts, &size))
            return warn(p, BP_W_MALFORMED), SYMD_OK;
        if (!range_fits(addr, size))
            return warn(p, BP_W_RANGE), SYMD_OK;
    } else {
        pos = save;
        if (!next_tok(&pos, end, &t) || !tok_hex(&t, &addr))
            return warn(p, BP_W_MALFORMED), SYMD_OK;
        if (!p->cfi_open || addr < p->init.addr ||
            addr >= (uint64_t)p->init.addr + p->init.size)
            return warn(p, BP_W_CFI_ORPHAN), SYMD_OK;
    }
    if (!ROOM(p->prows, p->nprows, p->prows_cap))
        return nomem(p);
    pending_row *pr = &p->prows[p->nprows];
    pr->addr = (uint32_t)addr;
    pr->src_line = p->line;
    symd_status r = read_rules(p, pos, end, &pr->rule0, &pr->nrules);
    if (r != SYMD_OK)
        return r;
    p->nprows++;
    if (init) {
        p->cfi_open = true;
        p->init = (bp_cfi_entry){(uint32_t)addr, (uint32_t)size, 0, 0};
        p->init_line = p->line;
    }
    return SYMD_OK;
}

/* ---- the end of the file: sort, resolve, clip ---------------------------- */

static int cmp_file(const void *a, const void *b)
{
    const bp_file *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->src_line < y->src_line ? -1 : x->src_line > y->src_line;
}

static int cmp_origin(const void *a, const void *b)
{
    const bp_origin *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->src_line < y->src_line ? -1 : x->src_line > y->src_line;
}

static int cmp_func(const void *a, const void *b)
{
    const bp_func *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->src_line < y->src_line ? -1 : x->src_line > y->src_line;
}

static int cmp_public(const void *a, const void *b)
{
    const bp_public *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->src_line < y->src_line ? -1 : x->src_line > y->src_line;
}

static int cmp_line(const void *a, const void *b)
{
    const bp_line *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Index + 1 of id in the sorted table (first of equal ids), 0 when absent. */
#define FIND_ID(v, n, id_)                                                     \
    __extension__({                                                            \
        size_t lo_ = 0, hi_ = (n);                                             \
        while (lo_ < hi_) {                                                    \
            size_t mid_ = lo_ + (hi_ - lo_) / 2;                               \
            if ((v)[mid_].id < (id_))                                          \
                lo_ = mid_ + 1;                                                \
            else                                                               \
                hi_ = mid_;                                                    \
        }                                                                      \
        (uint32_t)(lo_ < (n) && (v)[lo_].id == (id_) ? lo_ + 1 : 0);           \
    })

/* Sorts FILE and INLINE_ORIGIN tables by id; an id defined twice keeps its
 * first definition (the later rows stay, never found first). */
static void sort_ids(parser *p)
{
    bp_sym *s = p->s;
    if (s->nfiles > 1)
        qsort(s->files, s->nfiles, sizeof *s->files, cmp_file);
    for (size_t i = 1; i < s->nfiles; i++)
        if (s->files[i].id == s->files[i - 1].id)
            warn_at(p, BP_W_FILE_ID, s->files[i].src_line);
    if (s->norigins > 1)
        qsort(s->origins, s->norigins, sizeof *s->origins, cmp_origin);
    for (size_t i = 1; i < s->norigins; i++)
        if (s->origins[i].id == s->origins[i - 1].id)
            warn_at(p, BP_W_ORIGIN_ID, s->origins[i].src_line);
}

/* Sorts a FUNC's line records and makes them disjoint (a record running
 * into the next ends where it begins), inside [f->addr, f->addr+f->size). */
static void tidy_lines(bp_sym *s, bp_func *f)
{
    if (!f->nlines)
        return; /* (and s->lines may be NULL) */
    bp_line *l = s->lines + f->line0;
    size_t n = f->nlines, k = 0;
    if (n > 1)
        qsort(l, n, sizeof *l, cmp_line); /* equal addresses: either order, cut to 0 below */
    uint64_t fend = (uint64_t)f->addr + f->size;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = l[i].addr, e = a + l[i].size;
        if (e > fend)
            e = fend;
        if (i + 1 < n && e > l[i + 1].addr)
            e = l[i + 1].addr;
        if (a >= e)
            continue;
        l[k] = l[i];
        l[k].size = (uint32_t)(e - a);
        k++;
    }
    f->nlines = (uint32_t)k;
}

/* A piece of an inline tree being built: [lo, hi) of raw record rec under
 * node parent (an index into the nodes of this FUNC, NONE_NODE: the FUNC). */
#define NONE_NODE UINT32_MAX
typedef struct {
    uint32_t lo, hi;
    uint32_t rec, parent, node;
} piece;

static int cmp_piece_lo(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static int cmp_piece_group(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    if (x->parent != y->parent)
        return x->parent < y->parent ? -1 : 1;
    if (x->rec != y->rec)
        return x->rec < y->rec ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* A node of the tree being built: its raw record, parent, depth, pieces. */
typedef struct {
    uint32_t rec, parent, depth;
    uint32_t p0, np;  /* its pieces in the level array they were made in */
    uint32_t first;   /* lowest address, for ordering siblings */
    uint32_t out;     /* its index in s->inlines */
} tnode;

typedef struct {
    piece *v;
    size_t n, cap;
} pieces;

static bool piece_push(pieces *ps, piece pc)
{
    if (!array_grow((void **)&ps->v, &ps->cap, ps->n + 1, sizeof *ps->v))
        return false;
    ps->v[ps->n++] = pc;
    return true;
}

/* Sorts pieces by address and cuts overlaps (the lower start keeps the
 * shared bytes; at one start the earlier record). */
static void disjoint(pieces *ps)
{
    if (ps->n > 1)
        qsort(ps->v, ps->n, sizeof *ps->v, cmp_piece_lo);
    size_t k = 0;
    uint32_t end = 0;
    for (size_t i = 0; i < ps->n; i++) {
        piece pc = ps->v[i];
        if (k && pc.lo < end)
            pc.lo = end;
        if (pc.lo >= pc.hi)
            continue;
        ps->v[k++] = pc;
        end = pc.hi;
    }
    ps->n = k;
}

/* Builds FUNC f's inline tree from its raw records into s->inlines and
 * s->ranges (f->inline0/ninlines then name it). Level by level: the pieces
 * of depth d are the raw ranges of depth d intersected with the nodes of
 * depth d - 1, one node per (record, parent). */
static symd_status build_tree(parser *p, bp_func *f)
{
    bp_sym *s = p->s;
    uint32_t nraw = f->ninlines, raw0 = f->inline0;
    f->inline0 = (uint32_t)s->ninlines;
    f->ninlines = 0;
    if (!nraw)
        return SYMD_OK; /* (and p->raw may be NULL) */
    const bp_inline *raw = p->raw + raw0;
    symd_status st = SYMD_OK;
    pieces parent = {NULL, 0, 0}, child = {NULL, 0, 0}, all = {NULL, 0, 0};
    tnode *nodes = NULL;
    size_t nnodes = 0, nodes_cap = 0;
    uint32_t *order = NULL;
    bool *placed = calloc(nraw, sizeof *placed);
    if (!placed || !piece_push(&parent, (piece){f->addr, f->addr + f->size, 0, NONE_NODE,
                                                NONE_NODE}))
        goto nomem;
    for (uint32_t d = 0; d < BP_SYM_MAX_INLINE_DEPTH && parent.n; d++) {
        child.n = 0;
        for (uint32_t r = 0; r < nraw; r++) {
            if (raw[r].depth != d)
                continue;
            for (uint32_t k = 0; k < raw[r].nranges; k++) {
                bp_range rg = p->raw_ranges[raw[r].range0 + k];
                uint32_t lo = rg.addr, hi = rg.addr + rg.size;
                /* the first parent piece ending above lo */
                size_t a = 0, b = parent.n;
                while (a < b) {
                    size_t m = a + (b - a) / 2;
                    if (parent.v[m].hi <= lo)
                        a = m + 1;
                    else
                        b = m;
                }
                for (; a < parent.n && parent.v[a].lo < hi; a++) {
                    piece pc = {lo > parent.v[a].lo ? lo : parent.v[a].lo,
                                hi < parent.v[a].hi ? hi : parent.v[a].hi, r,
                                parent.v[a].node, 0};
                    if (pc.lo < pc.hi) {
                        if (!piece_push(&child, pc))
                            goto nomem;
                        placed[r] = true;
                    }
                }
            }
        }
        disjoint(&child);
        if (child.n > 1)
            qsort(child.v, child.n, sizeof *child.v, cmp_piece_group);
        /* one node per (parent, record) */
        for (size_t i = 0; i < child.n; i++) {
            if (i == 0 || child.v[i].parent != child.v[i - 1].parent ||
                child.v[i].rec != child.v[i - 1].rec) {
                if (nnodes >= UINT32_MAX - 1 ||
                    !array_grow((void **)&nodes, &nodes_cap, nnodes + 1, sizeof *nodes))
                    goto nomem;
                nodes[nnodes++] = (tnode){child.v[i].rec, child.v[i].parent, d,
                                          (uint32_t)all.n, 0, child.v[i].lo, 0};
            }
            tnode *nd = &nodes[nnodes - 1];
            child.v[i].node = (uint32_t)(nnodes - 1);
            if (child.v[i].lo < nd->first)
                nd->first = child.v[i].lo;
            nd->np++;
            if (!piece_push(&all, child.v[i]))
                goto nomem;
        }
        /* the children become the parents of the next depth, by address */
        pieces t = parent;
        parent = child;
        child = t;
        if (parent.n > 1)
            qsort(parent.v, parent.n, sizeof *parent.v, cmp_piece_lo);
    }
    for (uint32_t r = 0; r < nraw; r++)
        if (!placed[r] && raw[r].nranges)
            warn_at(p, BP_W_INLINE_NEST, raw[r].src_line);
    /* Preorder, siblings by their lowest address: sort by (parent's
     * preorder position, first) one depth at a time is the same as a DFS;
     * a DFS over child lists is simpler. */
    if (nnodes) {
        if (!(order = malloc(nnodes * sizeof *order)))
            goto nomem;
        /* children of each node, sorted by first address */
        size_t *kids0 = calloc(nnodes + 2, sizeof *kids0);
        uint32_t *kids = malloc(nnodes * sizeof *kids), *stack = malloc(nnodes * sizeof *stack);
        if (!kids0 || !kids || !stack) {
            free(kids0);
            free(kids);
            free(stack);
            goto nomem;
        }
        /* slot 0: the FUNC's children; node i's children in slot i + 1 */
        for (size_t i = 0; i < nnodes; i++)
            kids0[(nodes[i].parent == NONE_NODE ? 0 : nodes[i].parent + 1) + 1]++;
        for (size_t i = 1; i < nnodes + 2; i++)
            kids0[i] += kids0[i - 1];
        for (size_t i = 0; i < nnodes; i++) {
            size_t slot = nodes[i].parent == NONE_NODE ? 0 : nodes[i].parent + 1;
            kids[kids0[slot]++] = (uint32_t)i;
        }
        /* kids0[slot] is now the end of slot's children, the start of the next */
        for (size_t slot = nnodes + 1; slot > 0; slot--)
            kids0[slot] = kids0[slot - 1];
        kids0[0] = 0;
        for (size_t slot = 0; slot < nnodes + 1; slot++) {
            uint32_t *k = kids + kids0[slot];
            size_t n = kids0[slot + 1] - kids0[slot];
            for (size_t i = 1; i < n; i++) { /* insertion sort: few siblings */
                uint32_t v = k[i];
                size_t j = i;
                while (j > 0 && nodes[k[j - 1]].first > nodes[v].first) {
                    k[j] = k[j - 1];
                    j--;
                }
                k[j] = v;
            }
        }
        size_t sp = 0, no = 0;
        for (size_t i = kids0[1]; i-- > kids0[0];)
            stack[sp++] = kids[i];
        while (sp) {
            uint32_t v = stack[--sp];
            order[no++] = v;
            for (size_t i = kids0[v + 2]; i-- > kids0[v + 1];)
                stack[sp++] = kids[i];
        }
        free(kids0);
        free(kids);
        free(stack);
        for (size_t i = 0; i < no; i++) {
            tnode *nd = &nodes[order[i]];
            const bp_inline *rr = &raw[nd->rec];
            if (!ROOM(s->inlines, s->ninlines, s->inlines_cap))
                goto nomem;
            nd->out = (uint32_t)s->ninlines;
            bp_inline out = *rr;
            out.parent = nd->parent == NONE_NODE ? UINT32_MAX : nodes[nd->parent].out;
            out.range0 = (uint32_t)s->nranges;
            out.nranges = 0;
            /* its pieces, by address, adjacent ones merged */
            const piece *pc = all.v + nd->p0;
            for (uint32_t k = 0; k < nd->np; k++) {
                if (out.nranges &&
                    s->ranges[s->nranges - 1].addr + s->ranges[s->nranges - 1].size == pc[k].lo) {
                    s->ranges[s->nranges - 1].size += pc[k].hi - pc[k].lo;
                    continue;
                }
                if (!ROOM(s->ranges, s->nranges, s->ranges_cap))
                    goto nomem;
                s->ranges[s->nranges++] = (bp_range){pc[k].lo, pc[k].hi - pc[k].lo};
                out.nranges++;
            }
            s->inlines[s->ninlines++] = out;
            f->ninlines++;
        }
    }
    goto out;
nomem:
    st = nomem(p);
out:
    free(placed);
    free(parent.v);
    free(child.v);
    free(all.v);
    free(nodes);
    free(order);
    return st;
}

/* FUNCs resolved: ids of files and origins looked up, sorted by address,
 * one per address, overlaps cut, lines tidied, inline trees built; PUBLICs
 * sorted. */
static symd_status finish_funcs(parser *p)
{
    bp_sym *s = p->s;
    /* FILE ids of line records and INLINE call sites, INLINE_ORIGIN ids. */
    for (size_t i = 0; i < s->nfuncs; i++) {
        bp_func *f = &s->funcs[i];
        for (uint32_t j = f->line0; j < f->line0 + f->nlines; j++) {
            uint32_t id = s->lines[j].file;
            s->lines[j].file = FIND_ID(s->files, s->nfiles, id);
            if (!s->lines[j].file)
                warn_at(p, BP_W_FILE_ID, f->src_line);
        }
        for (uint32_t j = f->inline0; j < f->inline0 + f->ninlines; j++) {
            bp_inline *in = &p->raw[j];
            if (in->call_file != NO_ID) {
                uint32_t id = in->call_file;
                in->call_file = FIND_ID(s->files, s->nfiles, id);
                if (!in->call_file)
                    warn_at(p, BP_W_FILE_ID, in->src_line);
            } else {
                in->call_file = 0;
            }
            uint32_t id = in->origin;
            in->origin = FIND_ID(s->origins, s->norigins, id);
            if (!in->origin)
                warn_at(p, BP_W_ORIGIN_ID, in->src_line);
        }
    }
    if (s->nfuncs > 1)
        qsort(s->funcs, s->nfuncs, sizeof *s->funcs, cmp_func);
    /* One FUNC per address, the first in the file; where two overlap the
     * earlier one ends where the later begins (Breakpad's resolvers drop or
     * shrink one of them too; this keeps every start). */
    size_t k = 0;
    for (size_t i = 0; i < s->nfuncs; i++) {
        bp_func *f = &s->funcs[i];
        if (k && s->funcs[k - 1].addr == f->addr) {
            if (!f->multiple && !s->funcs[k - 1].multiple)
                warn_at(p, BP_W_FUNC_SAME, f->src_line);
            continue;
        }
        if (k) {
            bp_func *prev = &s->funcs[k - 1];
            if ((uint64_t)prev->addr + prev->size > f->addr) {
                warn_at(p, BP_W_FUNC_OVERLAP, f->src_line);
                prev->size = f->addr - prev->addr;
                tidy_lines(s, prev);
            }
        }
        s->funcs[k++] = *f;
        tidy_lines(s, &s->funcs[k - 1]);
    }
    s->nfuncs = k;
    for (size_t i = 0; i < s->nfuncs; i++) {
        symd_status st = build_tree(p, &s->funcs[i]);
        if (st != SYMD_OK)
            return st;
    }
    if (s->npublics > 1)
        qsort(s->publics, s->npublics, sizeof *s->publics, cmp_public);
    return SYMD_OK;
}

typedef struct {
    bp_cfi_entry e;
    uint64_t line;
} entry_sort;

static int cmp_entry(const void *a, const void *b)
{
    const entry_sort *x = a, *y = b;
    if (x->e.addr != y->e.addr)
        return x->e.addr < y->e.addr ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* STACK CFI INIT entries in address order and disjoint (an earlier one
 * running into the next ends where it begins; one at the address of an
 * earlier one is dropped), their rows and rules copied out in that order. */
static symd_status finish_cfi(parser *p)
{
    bp_cfi *c = &p->s->cfi;
    if (!c->nentries)
        return SYMD_OK;
    entry_sort *v = malloc(c->nentries * sizeof *v);
    if (!v)
        return nomem(p);
    bool sorted = true;
    for (size_t i = 0; i < c->nentries; i++) {
        v[i].e = c->entries[i];
        v[i].line = p->entry_lines[i];
        if (i && c->entries[i].addr < c->entries[i - 1].addr)
            sorted = false;
    }
    if (!sorted) {
        warn_at(p, BP_W_CFI_OVERLAP, v[0].line);
        qsort(v, c->nentries, sizeof *v, cmp_entry);
    }
    bp_cfi out = {c->arch, NULL, 0, NULL, 0, NULL, 0, 0, 0, 0};
    symd_status st = SYMD_OK;
    for (size_t i = 0; i < c->nentries && st == SYMD_OK; i++) {
        bp_cfi_entry e = v[i].e;
        if (out.nentries) {
            bp_cfi_entry *prev = &out.entries[out.nentries - 1];
            if (prev->addr == e.addr) {
                warn_at(p, BP_W_CFI_OVERLAP, v[i].line);
                continue;
            }
            if ((uint64_t)prev->addr + prev->size > e.addr) {
                warn_at(p, BP_W_CFI_OVERLAP, v[i].line);
                prev->size = e.addr - prev->addr;
                while (prev->nrows > 1 &&
                       out.rows[prev->row0 + prev->nrows - 1].addr >= e.addr) {
                    prev->nrows--;
                    out.nrows--;
                    out.nrules = out.rows[out.nrows].rule0;
                }
            }
        }
        if (!ROOM(out.entries, out.nentries, out.entries_cap)) {
            st = nomem(p);
            break;
        }
        bp_cfi_entry ne = {e.addr, e.size, (uint32_t)out.nrows, e.nrows};
        for (uint32_t r = e.row0; r < e.row0 + e.nrows; r++) {
            bp_cfi_row row = c->rows[r];
            uint32_t rule0 = (uint32_t)out.nrules;
            for (uint32_t j = row.rule0; j < row.rule0 + row.nrules; j++) {
                if (!ROOM(out.rules, out.nrules, out.rules_cap)) {
                    st = nomem(p);
                    break;
                }
                out.rules[out.nrules++] = c->rules[j];
            }
            if (st != SYMD_OK || !ROOM(out.rows, out.nrows, out.rows_cap)) {
                st = st != SYMD_OK ? st : nomem(p);
                break;
            }
            row.rule0 = rule0;
            out.rows[out.nrows++] = row;
        }
        out.entries[out.nentries++] = ne;
    }
    free(v);
    if (st != SYMD_OK) {
        bp_cfi_free(&out);
        return st;
    }
    bp_cfi_free(c);
    *c = out;
    return SYMD_OK;
}

/* One line [b, end) (no newline) by its first word; a line of no record is
 * a warning. */
static symd_status parse_line(parser *p, const char *b, const char *end)
{
    tok t;
    const char *pos = b;
    if (!next_tok(&pos, end, &t))
        return SYMD_OK; /* blank */
    if (tok_is(&t, "MODULE")) {
        if (p->line != 1)
            return SYMD_CORRUPT(p->err, "line %llu: MODULE must be the first record",
                                (unsigned long long)p->line);
        return rec_module(p, pos, end);
    }
    if (p->line == 1 && p->require_module)
        return SYMD_CORRUPT(p->err, "line 1: not a MODULE record; a Breakpad symbol file "
                                    "starts with one");
    if (t.n && hex_digit(t.p[0]) >= 0 && tok_hex(&t, &(uint64_t){0}))
        return rec_line(p, &t, pos, end);
    if (tok_is(&t, "INLINE"))
        return rec_inline(p, pos, end);
    if (tok_is(&t, "FUNC"))
        return rec_func(p, pos, end);
    p->cur_func = -1; /* line and INLINE records follow their FUNC */
    if (tok_is(&t, "PUBLIC"))
        return rec_public(p, pos, end);
    if (tok_is(&t, "STACK"))
        return rec_stack(p, pos, end);
    if (tok_is(&t, "FILE"))
        return rec_named_id(p, pos, end, true);
    if (tok_is(&t, "INLINE_ORIGIN"))
        return rec_named_id(p, pos, end, false);
    if (tok_is(&t, "INFO"))
        return rec_info(p, pos, end);
    warn(p, BP_W_UNKNOWN);
    return SYMD_OK;
}

/* Contract in sym.h. */
bool bp_sym_detect(const uint8_t *buf, size_t len)
{
    return len >= 7 && memcmp(buf, "MODULE ", 7) == 0;
}

/* Contract in sym.h. */
symd_status bp_sym_parse(const uint8_t *buf, size_t len, bool require_module, bp_sym *out,
                         symd_err *err)
{
    memset(out, 0, sizeof *out);
    parser p;
    memset(&p, 0, sizeof p);
    p.s = out;
    p.err = err;
    p.cur_func = -1;
    p.require_module = require_module;
    symd_status st = SYMD_OK;
    const char *b = (const char *)buf, *end = b + len;
    /* The string table's offset 0 is "", the name of nothing. */
    if (!array_grow((void **)&out->strings, &out->strings_cap, 1, 1)) {
        st = nomem(&p);
        goto out;
    }
    out->strings[0] = 0;
    out->strings_len = 1;
    while (b < end && st == SYMD_OK) {
        p.line++;
        size_t left = (size_t)(end - b);
        const char *nl = memchr(b, '\n', left < BP_SYM_MAX_LINE + 1 ? left : BP_SYM_MAX_LINE + 1);
        if (!nl) {
            if (left > BP_SYM_MAX_LINE) {
                st = SYMD_CORRUPT(err, "line %llu is longer than %zu bytes",
                                  (unsigned long long)p.line, BP_SYM_MAX_LINE);
                break;
            }
            nl = end;
        }
        const char *e = nl;
        if (e > b && e[-1] == '\r')
            e--;
        if (memchr(b, 0, (size_t)(e - b))) {
            st = SYMD_CORRUPT(err, "line %llu holds a NUL byte: not a text file",
                              (unsigned long long)p.line);
            break;
        }
        st = parse_line(&p, b, e);
        b = nl < end ? nl + 1 : end;
    }
    if (st == SYMD_OK && require_module && !out->has_module)
        st = SYMD_CORRUPT(err, "no MODULE record: not a Breakpad symbol file");
    if (st == SYMD_OK)
        st = close_init(&p);
    if (st == SYMD_OK) {
        sort_ids(&p);
        st = finish_funcs(&p);
    }
    if (st == SYMD_OK)
        st = finish_cfi(&p);
    out->nlines_read = p.line;
out:
    free(p.prows);
    free(p.praw);
    free(p.raw);
    free(p.raw_ranges);
    free(p.entry_lines);
    if (st != SYMD_OK)
        bp_sym_free(out);
    return st;
}

void bp_sym_free(bp_sym *s)
{
    free(s->files);
    free(s->origins);
    free(s->funcs);
    free(s->lines);
    free(s->inlines);
    free(s->ranges);
    free(s->publics);
    free(s->strings);
    bp_cfi_free(&s->cfi);
    memset(s, 0, sizeof *s);
}

/* Contract in sym.h. */
const char *bp_sym_arch(const char *a)
{
    if (strcmp(a, "x86_64") == 0)
        return "x86_64";
    if (strcmp(a, "arm64") == 0)
        return "arm64";
    if (strcmp(a, "arm64e") == 0)
        return "arm64e";
    return NULL;
}

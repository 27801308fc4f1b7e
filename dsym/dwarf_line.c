/* DWARF reader: a unit's line program → its rows, sorted, and its file
 * table as full paths. */
#include "dwarf_int.h"

#include <stdlib.h>
#include <string.h>
#include "../util/metered.h" /* last: counts this file's allocations */

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
symd_status read_lines(ctx *x, const unit *u)
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
    if (h.pos > prog) { /* header_length ends inside the fields before the entries */
        st = BAD(x, "line table at 0x%llx: header_length %llu is shorter than its fields",
                 (unsigned long long)u->stmt, (unsigned long long)hlen);
        goto out;
    }
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

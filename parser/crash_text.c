/* Text reports: .crash of every Report Version (11, 12, 104-106 and the
 * macOS 12+ layout), KSCrash's variant, the text body of an .ips (bug_type
 * 109, 185, ...), and fragments pasted without their header. Read line by
 * line: a line over CRASH_MAX_LINE bytes is a limit (SYMD_E_TOO_LARGE);
 * anything else that cannot be read (invalid UTF-8, a broken frame or image
 * line) is left out with a warning saying "line N" (1-based, counting an
 * .ips header line) and why. What the model does not hold is kept verbatim:
 * the header before the first section as text_header, later sections as
 * blocks placed where they stood. */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/hex.h"
#include "../util/jsonbig.h"
#include "../util/util.h"
#include "crash_int.h"
#include "../util/metered.h" /* last: counts this file's allocations */

typedef enum {
    ST_HEADER, /* before the first section */
    ST_NONE,   /* between sections: lines are kept verbatim */
    ST_THREAD, /* frame lines of the last thread */
    ST_LIST,   /* "(0x1a2b 0x3c4d ...)" of a Last Exception Backtrace, until ')' */
    ST_REGS,   /* the crashed thread's state */
    ST_IMAGES, /* Binary Images lines */
    ST_ASI,    /* Application Specific Information lines, until a blank line */
    ST_TREE,   /* a legacy "Microstackshots:" call tree (bug_type 185) */
} tstate;

/* A growable string. */
typedef struct {
    char *s;
    size_t len, cap;
} tbuf;

/* One open level of a call tree: the column of its count, and the depth a
 * child node gets. */
typedef struct {
    size_t col;
    uint32_t child_depth;
} tlevel;

typedef struct {
    cp *p;
    size_t lineno;
    tstate st, asi_back;   /* asi_back: the state a blank line ends ASI into */
    bool in_header;        /* no section yet: lines belong to text_header */
    bool has_header;       /* a key naming the process or device was read */
    bool deadlock;         /* KSCrash's "Application main thread deadlocked" line */
    bool seen_images, seen_regs, bad_magic;
    size_t bad_magic_line, fp_skipped; /* "Bad magic" line; frame pointers left out after it */
    long crashed_number;   /* "Crashed Thread:" / "Triggered by Thread:" */
    bool have_pending;     /* a "Thread N name:" line waits for its thread */
    long pending_number;
    char *pending_name, *pending_queue;
    char *app_path;        /* header "Path:", to mark the main binary */
    size_t indent;         /* blanks every line of the report starts with */
    size_t blanks;         /* blank lines since the last verbatim line */
    bool reg_limit_warned;
    const char *raw_s, *raw_e; /* the line being read as the input holds it (no CR, no newline) */
    bool list_open;            /* an address list's '(' was read, at list_at in the input */
    size_t list_at;
    tbuf header, asi;
    tlevel *tree;          /* open levels of the current call tree */
    size_t ntree, cap_tree;
} tp;

/* "line N" (for messages; made for every frame and image, so no printf) */
static void where_line(const tp *t, char where[32])
{
    char digits[24];
    size_t n = 0, v = t->lineno;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < sizeof digits);
    memcpy(where, "line ", 5);
    for (size_t i = 0; i < n; i++)
        where[5 + i] = digits[n - 1 - i];
    where[5 + n] = 0;
}

static symd_status buf_add(tp *t, tbuf *b, const char *s, size_t n)
{
    if (!array_grow((void **)&b->s, &b->cap, b->len + n + 1, 1))
        return cp_nomem(t->p);
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
    return SYMD_OK;
}

/* ---- where verbatim lines go ---------------------------------------------- */

/* Keeps [s, e) verbatim where it stands: after the Binary Images, between
 * the thread state and the images, or before the next thread. Blank lines
 * seen since the last verbatim line are kept when both stand in the same
 * block (a section's inner paragraphs), dropped at a block's start. */
static symd_status verbatim(tp *t, const char *s, const char *e)
{
    crash_report *r = t->p->r;
    crash_place at = t->seen_images ? CRASH_AT_END : t->seen_regs ? CRASH_AT_IMAGES
                                                                  : CRASH_AT_THREAD;
    size_t th = at == CRASH_AT_THREAD ? r->nthreads : 0;
    const crash_block *last = r->nblocks ? &r->blocks[r->nblocks - 1] : NULL;
    if (last && last->at == at && last->thread == th)
        for (; t->blanks; t->blanks--)
            if (cp_add_verbatim(t->p, at, th, "", 0))
                return t->p->err->kind;
    t->blanks = 0;
    return cp_add_verbatim(t->p, at, th, s, (size_t)(e - s));
}

/* ---- threads ---------------------------------------------------------------- */

/* "Dispatch queue: q" names a queue, anything else the thread. */
static symd_status name_or_queue(tp *t, const char *s, const char *e, char **name, char **queue)
{
    cp_trim(&s, &e);
    if (s == e)
        return SYMD_OK;
    if (cp_starts(s, e, "Dispatch queue:")) {
        s += strlen("Dispatch queue:");
        cp_trim(&s, &e);
        return cp_set_str(t->p, queue, s, (size_t)(e - s));
    }
    return cp_set_str(t->p, name, s, (size_t)(e - s));
}

/* "Thread N" at s: N → *num and the position after it, or NULL. */
static const char *thread_prefix(const char *s, const char *e, long *num)
{
    if (!cp_starts(s, e, "Thread "))
        return NULL;
    const char *d = s + 7, *de = cp_digits_end(d, e);
    uint64_t v;
    if (!cp_dec_parse(d, de, 999999999, &v))
        return NULL;
    *num = (long)v;
    return de;
}

/* A new thread section; title (the heading as written) may be NULL. A
 * waiting "Thread N name:" of the same number gives its name or queue. */
static symd_status new_thread(tp *t, long num, bool crashed, crash_thread_role role,
                              const char *title, const char *title_end)
{
    char where[32];
    where_line(t, where);
    crash_thread *th;
    if (cp_new_thread(t->p, &th, where))
        return t->p->err->kind;
    th->number = num;
    th->crashed = crashed;
    th->role = role;
    if (title && cp_set_str(t->p, &th->title, title, (size_t)(title_end - title)))
        return t->p->err->kind;
    if (t->have_pending && num >= 0 && t->pending_number == num) {
        th->name = t->pending_name;
        th->queue = t->pending_queue;
        t->pending_name = t->pending_queue = NULL;
    }
    t->have_pending = false;
    free(t->pending_name);
    free(t->pending_queue);
    t->pending_name = t->pending_queue = NULL;
    return SYMD_OK;
}

/* ---- frame lines -------------------------------------------------------------- */

/* A frame line taken apart; pointers into the line. */
typedef struct {
    uint64_t num, address, load, symbol_offset;
    bool has_load, has_symbol_offset;
    const char *pc_end; /* just past the address */
    const char *img, *img_end, *sym, *sym_end, *file, *file_end;
    uint32_t line;
} fparts;

/* The end of an address token at s: "0x" and hex digits, or 16 or 18 bare
 * hex digits (how some writers print a ??? frame); ends at a blank or e.
 * NULL when s holds no such token. */
static const char *addr_token(const char *s, const char *e)
{
    const char *q = cp_hex_token(s, e);
    if (q)
        return q;
    q = s;
    while (q < e && cp_is_hex(*q))
        q++;
    if ((q - s != 16 && q - s != 18) || (q < e && !cp_is_ws(*q)))
        return NULL;
    return q;
}

/* Trailing "(file:line)" of [s, *e): sets the file, its end and the line,
 * and moves *e before it. false (nothing moved) when the tail is no such
 * group. */
static bool take_file_line(const char *s, const char **e, const char **file, const char **fe,
                           uint32_t *line)
{
    const char *end = *e;
    if (end - s < 5 || end[-1] != ')')
        return false;
    const char *ds = end - 1;
    while (ds > s && cp_is_digit(ds[-1]))
        ds--;
    if (ds == end - 1 || ds - s < 3 || ds[-1] != ':')
        return false;
    const char *colon = ds - 1, *open = colon;
    while (open > s && open[-1] != '(' && open[-1] != ')')
        open--;
    if (open == s || open[-1] != '(' || open == colon)
        return false;
    uint64_t v;
    if (!cp_dec_parse(ds, end - 1, UINT32_MAX, &v))
        return false;
    /* A symbol group "(-[A b:] + 8)" carries " + ": no file. */
    for (const char *q = open; q + 2 < colon; q++)
        if (q[0] == ' ' && q[1] == '+' && q[2] == ' ')
            return false;
    *file = open;
    *fe = colon;
    *line = (uint32_t)v;
    open--; /* at '(' */
    while (open > s && cp_is_ws(open[-1]))
        open--;
    *e = open;
    return true;
}

/* "symbol + 123", "symbol + 0x7b", "symbol", or atos's "symbol (in Image)
 * + 123" into fp. false with *why when the offset does not fit 64 bits. */
static bool take_symbol(fparts *fp, const char *s, const char *e, const char **why)
{
    cp_trim(&s, &e);
    const char *ds = e;
    while (ds > s && cp_is_hex(ds[-1]))
        ds--;
    bool hex = ds < e && ds - s >= 2 && ds[-2] == '0' && ds[-1] == 'x';
    if (hex)
        ds -= 2;
    else /* decimal digits only, then */
        while (ds < e && !cp_is_digit(*ds))
            ds++;
    if (ds < e && ds - s >= 4 && memcmp(ds - 3, " + ", 3) == 0) {
        if (hex ? !hex_parse_u64(ds, (size_t)(e - ds), &fp->symbol_offset)
                : !cp_dec_parse(ds, e, UINT64_MAX, &fp->symbol_offset)) {
            *why = "symbol offset out of range";
            return false;
        }
        fp->has_symbol_offset = true;
        e = ds - 3;
        cp_trim(&s, &e);
    }
    /* atos names the image after the symbol: "main (in MyApp)". */
    if (e > s && e[-1] == ')') {
        for (const char *o = e - 1; o > s; o--) {
            if (*o == ')' && o != e - 1)
                break;
            if (o - s >= 1 && cp_starts(o, e, "(in ") && cp_is_ws(o[-1])) {
                e = o;
                cp_trim(&s, &e);
                break;
            }
        }
    }
    fp->sym = s;
    fp->sym_end = e;
    return true;
}

/* "N  image  0xPC rest" where rest is "0xLOAD + off", "0xLOAD + off (sym +
 * off)" (KSCrash), "symbol + off", atos's "symbol (in Image) + off", any of
 * those with " (file:line)", or nothing. The image name may hold blanks; a
 * tab may stand before the address. false with *why when it is no frame. */
static bool scan_frame(const char *s, const char *e, fparts *fp, const char **why)
{
    memset(fp, 0, sizeof *fp);
    const char *de = cp_digits_end(s, e);
    if (!cp_dec_parse(s, de, 999999999, &fp->num)) {
        *why = "frame number out of range";
        return false;
    }
    if (de == e || !cp_is_ws(*de)) {
        *why = "no image name after the frame number";
        return false;
    }
    const char *img = de, *pc = NULL, *pce = NULL;
    while (img < e && cp_is_ws(*img))
        img++;
    for (const char *q = img + 1; q < e; q++)
        if (cp_is_ws(q[-1]) && (pce = addr_token(q, e))) {
            pc = q;
            break;
        }
    if (!pc) {
        *why = "the frame has no address";
        return false;
    }
    const char *ie = pc;
    cp_trim(&img, &ie);
    if (img == ie) {
        *why = "the frame has no image name";
        return false;
    }
    if (!hex_parse_u64(pc, (size_t)(pce - pc), &fp->address)) {
        *why = "the frame's address is wider than 64 bits";
        return false;
    }
    fp->img = img;
    fp->img_end = ie;
    fp->pc_end = pce;

    const char *rs = pce, *re = e;
    cp_trim(&rs, &re);
    take_file_line(rs, &re, &fp->file, &fp->file_end, &fp->line);
    /* "0xLOAD + off", or "0 + 0" for ??? frames. */
    const char *te = rs;
    while (te < re && !cp_is_ws(*te))
        te++;
    const char *plus = te;
    while (plus < re && cp_is_ws(*plus))
        plus++;
    bool is_num = te > rs && (cp_hex_token(rs, re) == te || cp_digits_end(rs, te) == te);
    if (is_num && plus < re && *plus == '+' && plus + 1 < re && cp_is_ws(plus[1])) {
        const char *os = plus + 1;
        while (os < re && cp_is_ws(*os))
            os++;
        /* decimal, or hex ("0x189622000 + 0x77354" of some iOS 11 reports) */
        const char *oe = cp_hex_token(os, re);
        bool hexoff = oe != NULL;
        if (!oe)
            oe = cp_digits_end(os, re);
        if (oe > os && (oe == re || cp_is_ws(*oe))) {
            uint64_t off;
            if (hexoff ? !hex_parse_u64(os, (size_t)(oe - os), &off)
                       : !cp_dec_parse(os, oe, UINT64_MAX, &off)) {
                *why = "the frame's offset is out of range";
                return false;
            }
            if (!hex_parse_u64(rs, (size_t)(te - rs), &fp->load) &&
                !cp_dec_parse(rs, te, UINT64_MAX, &fp->load)) {
                *why = "the frame's load address is out of range";
                return false;
            }
            fp->has_load = true;
            rs = oe;
            cp_trim(&rs, &re);
            if (rs < re && *rs == '(' && re[-1] == ')') { /* KSCrash "(symbol + off)" */
                rs++;
                re--;
            } else if (re - rs >= 2 && rs[0] == '/' && rs[1] == '/') { /* "// symbol + 0x824" */
                rs += 2;
            }
        }
    }
    return take_symbol(fp, rs, re, why);
}

/* Appends the frame fp to the last thread. */
static symd_status add_frame(tp *t, const fparts *fp)
{
    crash_report *r = t->p->r;
    char where[32];
    where_line(t, where);
    crash_frame *f;
    if (cp_new_frame(t->p, r->nthreads - 1, &f, where))
        return t->p->err->kind;
    f->address = fp->address;
    f->has_load = fp->has_load;
    f->load_address = fp->load;
    f->has_symbol_offset = fp->has_symbol_offset;
    f->symbol_offset = fp->symbol_offset;
    f->line = fp->line;
    cp_frame_src(t->p, f, CRASH_SRC_FRAME, t->raw_s, t->raw_e, fp->pc_end, t->raw_e);
    if (cp_set_str(t->p, &f->image_name, fp->img, (size_t)(fp->img_end - fp->img)) ||
        (fp->sym < fp->sym_end &&
         cp_set_str(t->p, &f->symbol, fp->sym, (size_t)(fp->sym_end - fp->sym))) ||
        (fp->file && cp_set_str(t->p, &f->file, fp->file, (size_t)(fp->file_end - fp->file))))
        return t->p->err->kind;
    return SYMD_OK;
}

/* A frame line of the current thread: the frame, or a warning and the line
 * kept verbatim. */
static symd_status frame_line(tp *t, const char *ls, const char *le, const char *s, const char *e)
{
    fparts fp;
    const char *why = NULL;
    if (scan_frame(s, e, &fp, &why))
        return add_frame(t, &fp);
    if (cp_warn_line(t->p, t->lineno, "%s: the line is kept as text", why))
        return t->p->err->kind;
    return verbatim(t, ls, le);
}

/* One line of a "(0x1a2b 0x3c4d ...)" address list (which may span lines):
 * a frame per address. ')' ends the list. */
static symd_status list_line(tp *t, const char *s, const char *e)
{
    crash_report *r = t->p->r;
    crash_thread *th = &r->threads[r->nthreads - 1];
    const char *q = s;
    while (q < e && t->st == ST_LIST) {
        while (q < e && (cp_is_ws(*q) || *q == '(' || *q == ',')) {
            if (*q == '(' && !t->list_open && cp_in_input(t->p, q, 1)) {
                t->list_open = true;
                t->list_at = (size_t)(q - t->p->in);
            }
            q++;
        }
        if (q == e)
            break;
        if (*q == ')') {
            t->st = ST_NONE;
            q++;
            /* the thread holds the list's place once the list is whole */
            if (t->list_open && !th->has_list && cp_in_input(t->p, q - 1, 1)) {
                th->has_list = true;
                th->list_off = t->list_at;
                th->list_end = (size_t)(q - t->p->in);
            }
            t->list_open = false;
            break;
        }
        const char *te = q;
        while (te < e && !cp_is_ws(*te) && *te != ')' && *te != ',')
            te++;
        uint64_t a;
        const char *h = q + (cp_starts(q, te, "0x") || cp_starts(q, te, "0X") ? 2 : 0);
        bool hex = h < te;
        for (const char *c = h; c < te; c++)
            hex &= cp_is_hex(*c);
        if (hex && hex_parse_u64(q, (size_t)(te - q), &a)) {
            char where[32];
            where_line(t, where);
            crash_frame *f;
            if (cp_new_frame(t->p, r->nthreads - 1, &f, where))
                return t->p->err->kind;
            f->address = a;
        } else if (cp_warn_line(t->p, t->lineno, "\"%.*s\" in the address list is no address",
                                (int)(te - q > 40 ? 40 : te - q), q)) {
            return t->p->err->kind;
        }
        q = te;
    }
    while (q < e && cp_is_ws(*q))
        q++;
    if (q < e) /* text after ')' */
        return verbatim(t, q, e);
    return SYMD_OK;
}

/* ---- Binary Images ------------------------------------------------------------ */

/* "  0xSTART -   0xEND [+]name arch <uuid> /path", or macOS
 * "[+]bundle.id (version) <DASHED-UUID> /path"; the UUID may be missing or
 * unreadable (the image is then kept without one, with a warning). An
 * unreadable line is left out with a warning and kept verbatim. */
static symd_status image_line(tp *t, const char *ls, const char *le, const char *s,
                              const char *e)
{
    const char *why = NULL;
    uint64_t lo = 0, hi = 0;
    const char *q = NULL, *be = NULL;
    const char *ae = cp_hex_token(s, e);
    if (!ae && s < e && *s == '0' && (s + 1 == e || cp_is_ws(s[1])))
        ae = s + 1; /* "0 - 0xffffffffffffffff" of an image macOS could not place */
    if (!ae || !hex_parse_u64(s, (size_t)(ae - s), &lo))
        why = "bad image start address";
    if (!why) {
        q = ae;
        while (q < e && cp_is_ws(*q))
            q++;
        if (q == e || *q != '-')
            why = "no \"-\" between the image's addresses";
    }
    if (!why) {
        q++;
        while (q < e && cp_is_ws(*q))
            q++;
        be = cp_hex_token(q, e);
        if (!be || !hex_parse_u64(q, (size_t)(be - q), &hi))
            why = "bad image end address";
        else if (hi < lo)
            why = "the image ends before it starts";
    }
    const char *rs = be, *re = e;
    bool is_app = false;
    const char *mid_e = NULL, *path = NULL, *pe = e, *lt = NULL, *gt = NULL;
    const char *ver = NULL, *ver_e = NULL, *arch = NULL, *arch_e = NULL, *ms = NULL;
    if (!why) {
        cp_trim(&rs, &re);
        if (rs < re && *rs == '+') {
            is_app = true;
            rs++;
        }
        mid_e = re;
        /* The UUID is the first "<...>" after a blank that holds one (a name
         * may itself hold '<': "<b>evil</b>"); with none, the last "<...>"
         * that stands alone (a blank or the end after it), where the UUID
         * would be; else the first '<' after a blank. */
        const char *slot = NULL, *slot_gt = NULL;
        for (const char *c = rs; c < re; c++) {
            if (*c != '<' || (c != rs && !cp_is_ws(c[-1])))
                continue;
            const char *g = memchr(c, '>', (size_t)(re - c));
            if (!lt) {
                lt = c;
                gt = g;
            }
            if (g && (g + 1 == re || cp_is_ws(g[1]))) {
                slot = c;
                slot_gt = g;
            }
            if (!g || g - c - 1 > 36)
                continue;
            char ub[40];
            uint8_t scratch[16];
            memcpy(ub, c + 1, (size_t)(g - c - 1));
            ub[g - c - 1] = 0;
            if (!ub[0] || strcmp(ub, "(null)") == 0 || strcmp(ub, "???") == 0 ||
                uuid_parse(ub, scratch)) {
                lt = c;
                gt = g;
                slot = NULL;
                break;
            }
        }
        if (slot) {
            lt = slot;
            gt = slot_gt;
        }
        if (lt && gt) {
            mid_e = lt;
            path = gt + 1;
        } else {
            lt = NULL;
            for (const char *c = rs; c < re; c++)
                if (*c == '/' && c > rs && cp_is_ws(c[-1])) {
                    mid_e = path = c;
                    break;
                }
        }
        ms = rs;
        cp_trim(&ms, &mid_e);
        if (ms < mid_e && mid_e[-1] == ')') { /* "name (version)" */
            const char *o = cp_open_paren(ms, mid_e);
            if (!o) {
                why = "unbalanced parentheses in the image's version";
            } else {
                ver = o + 1;
                ver_e = mid_e - 1;
                mid_e = o;
                cp_trim(&ms, &mid_e);
            }
        } else { /* "name arch" */
            const char *a = mid_e;
            while (a > ms && !cp_is_ws(a[-1]))
                a--;
            if (a > ms) {
                arch = a;
                arch_e = mid_e;
                mid_e = a;
                cp_trim(&ms, &mid_e);
            }
        }
        if (!why && ms == mid_e)
            why = "the image has no name";
    }
    if (why) {
        if (cp_warn_line(t->p, t->lineno, "%s: the line is kept as text", why))
            return t->p->err->kind;
        return verbatim(t, ls, le);
    }

    char where[32];
    where_line(t, where);
    crash_image *im;
    if (cp_new_image(t->p, &im, where))
        return t->p->err->kind;
    im->load_address = lo;
    im->has_end = true;
    im->end_address = hi;
    im->is_app = is_app;
    im->plus = is_app; /* '+': macOS says it is not part of the OS */
    if (lt) {
        char ub[40];
        size_t ul = (size_t)(gt - lt - 1);
        bool fits = ul <= 36;
        if (fits) {
            memcpy(ub, lt + 1, ul);
            ub[ul] = 0;
        }
        /* KSCrash writes "<(null)>" for an image without LC_UUID. */
        bool none = fits && (!ub[0] || strcmp(ub, "(null)") == 0 || strcmp(ub, "???") == 0);
        if (!none && (!fits || !uuid_parse(ub, im->uuid))) {
            if (cp_warn_line(t->p, t->lineno, "bad image UUID <%.*s>: the image is kept without it",
                             (int)(ul > 40 ? 40 : ul), lt + 1))
                return t->p->err->kind;
        } else {
            im->has_uuid = !none;
        }
    }
    if (path) {
        cp_trim(&path, &pe);
        /* A jailbroken device's "Binary Images (dpkg):" lines end in the
         * package's JSON ({"name", "identifier", "version", ...}): not part
         * of the path; its identifier and version are the image's. */
        const char *js = pe > path && pe[-1] == '}' ? memmem(path, (size_t)(pe - path), " {\"", 3)
                                                    : NULL;
        json_error_t je;
        json_t *pkg = js ? jsonbig_loadb(js + 1, (size_t)(pe - js - 1), 0, &je) : NULL;
        if (json_is_object(pkg)) {
            pe = js;
            cp_trim(&path, &pe);
            const char *id = json_string_value(json_object_get(pkg, "identifier"));
            const char *v = json_string_value(json_object_get(pkg, "version"));
            if ((id && !im->bundle_id && cp_set_str(t->p, &im->bundle_id, id, strlen(id))) ||
                (v && !ver && cp_set_str(t->p, &im->version, v, strlen(v)))) {
                json_decref(pkg);
                return t->p->err->kind;
            }
        }
        json_decref(pkg);
        if (path < pe && cp_set_str(t->p, &im->path, path, (size_t)(pe - path)))
            return t->p->err->kind;
    }
    if (ver) {
        if (cp_set_str(t->p, &im->version, ver, (size_t)(ver_e - ver)))
            return t->p->err->kind;
        size_t nl = (size_t)(mid_e - ms);
        if (memchr(ms, '.', nl) && !memchr(ms, '/', nl) && !memchr(ms, ' ', nl) &&
            !(nl > 6 && memcmp(mid_e - 6, ".dylib", 6) == 0) &&
            cp_set_str(t->p, &im->bundle_id, ms, nl))
            return t->p->err->kind;
    }
    if (arch && cp_set_str(t->p, &im->arch, arch, (size_t)(arch_e - arch)))
        return t->p->err->kind;
    return cp_set_str(t->p, &im->name, ms, (size_t)(mid_e - ms));
}

/* ---- thread state ------------------------------------------------------------- */

/* "  x0: 0x0000000000000000   x1: 0x..." → registers; *any false when the
 * line holds no "name: 0xvalue" pair (the block is over). */
static symd_status regs_line(tp *t, const char *s, const char *e, bool *any)
{
    crash_report *r = t->p->r;
    *any = false;
    const char *q = s;
    while (q < e) {
        while (q < e && cp_is_ws(*q))
            q++;
        const char *ns = q;
        while (q < e && !cp_is_ws(*q))
            q++;
        const char *ne = q;
        if (ne - ns < 2 || ne[-1] != ':')
            continue;
        while (q < e && cp_is_ws(*q))
            q++;
        const char *ve = cp_hex_token(q, e);
        if (!ve)
            continue;
        *any = true;
        if (r->nregisters >= CRASH_MAX_REGISTERS) {
            if (!t->reg_limit_warned &&
                cp_warn_line(t->p, t->lineno, "more than %d registers: the rest are left out",
                             CRASH_MAX_REGISTERS))
                return t->p->err->kind;
            t->reg_limit_warned = true;
            return SYMD_OK;
        }
        char where[32];
        where_line(t, where);
        if (cp_add_register(t->p, ns, (size_t)(ne - 1 - ns), q, (size_t)(ve - q), where))
            return t->p->err->kind;
        q = ve;
    }
    return SYMD_OK;
}

/* ---- legacy microstackshot trees -------------------------------------------- */

/* "  1 CoreFoundation 0x1858ec000 + 37028 [0x1858f50a4]" or "  1 ??? [0x16fd7fab0]",
 * nested by indentation, '*' before the count marking kernel frames: a node
 * of the tree thread (depth, count). *ok false when the line is no node (the
 * tree is over). After a "Bad magic" line the writer printed the frame
 * pointers it walked between the return addresses: those "??? [0x...]"
 * nodes are no frames, their children hang from the node above, and one
 * warning at the "Bad magic" line says how many were left out. */
static symd_status tree_line(tp *t, const char *ls, const char *le, bool *ok)
{
    crash_report *r = t->p->r;
    *ok = false;
    const char *s = ls, *e = le;
    cp_trim(&s, &e);
    size_t col = (size_t)(s - ls);
    if (s < e && *s == '*')
        s++;
    const char *ce = cp_digits_end(s, e);
    uint64_t count;
    if (!cp_dec_parse(s, ce, UINT64_MAX, &count) || ce == e || !cp_is_ws(*ce) || e[-1] != ']')
        return SYMD_OK;
    const char *ob = e - 1;
    while (ob > ce && ob[-1] != '[')
        ob--;
    uint64_t pc;
    if (ob == ce || !hex_parse_u64(ob, (size_t)(e - 1 - ob), &pc) || !cp_starts(ob, e, "0x"))
        return SYMD_OK;
    *ok = true;
    const char *ns = ce, *ne = ob - 1;
    cp_trim(&ns, &ne);
    const char *desc_s = ns, *desc_e = ne;
    bool unknown = ne - ns == 3 && memcmp(ns, "???", 3) == 0;

    while (t->ntree && t->tree[t->ntree - 1].col >= col)
        t->ntree--;
    uint32_t depth = t->ntree ? t->tree[t->ntree - 1].child_depth : 0;
    bool keep = !(unknown && t->bad_magic);
    if (t->ntree >= CRASH_MAX_DEPTH || (keep && depth + 1 >= CRASH_MAX_DEPTH))
        return cp_warn_line(t->p, t->lineno, "the call tree is deeper than %d levels: the node "
                            "is left out", CRASH_MAX_DEPTH);
    if (!array_grow((void **)&t->tree, &t->cap_tree, t->ntree + 1, sizeof *t->tree))
        return cp_nomem(t->p);
    t->tree[t->ntree].col = col;
    t->tree[t->ntree].child_depth = keep ? depth + 1 : depth;
    t->ntree++;
    if (!keep) {
        t->fp_skipped++;
        return SYMD_OK;
    }

    char where[32];
    where_line(t, where);
    crash_frame *f;
    if (cp_new_frame(t->p, r->nthreads - 1, &f, where))
        return t->p->err->kind;
    f->address = pc;
    f->depth = depth;
    f->count = count;
    cp_frame_src(t->p, f, CRASH_SRC_SPINDUMP, t->raw_s, t->raw_e, desc_s, desc_e);
    /* "Image 0xLOAD + off" */
    const char *ds = ne;
    while (ds > ns && cp_is_digit(ds[-1]))
        ds--;
    uint64_t off, load;
    if (ds < ne && ds - ns >= 4 && memcmp(ds - 3, " + ", 3) == 0 &&
        cp_dec_parse(ds, ne, UINT64_MAX, &off)) {
        const char *le2 = ds - 3, *lo = le2;
        while (lo > ns && !cp_is_ws(lo[-1]))
            lo--;
        if (lo > ns && cp_hex_token(lo, le2) == le2 && hex_parse_u64(lo, (size_t)(le2 - lo), &load)) {
            f->has_load = true;
            f->load_address = load;
            ne = lo;
            cp_trim(&ns, &ne);
        }
    }
    if (ns < ne && cp_set_str(t->p, &f->image_name, ns, (size_t)(ne - ns)))
        return t->p->err->kind;
    return SYMD_OK;
}

/* ---- the header ----------------------------------------------------------------- */

/* "Key:   value" lines of the header the model keeps. */
static symd_status header_line(tp *t, const char *s, const char *e)
{
    static const struct {
        const char *key;
        size_t off;
        bool names; /* names the process or device: the text has a header */
    } keys[] = {
        {"Incident Identifier", offsetof(crash_report, incident_id), true},
        {"Hardware Model", offsetof(crash_report, hardware_model), true},
        {"Process", offsetof(crash_report, process), true},
        {"Identifier", offsetof(crash_report, bundle_id), true},
        {"Version", offsetof(crash_report, app_version), true},
        {"Code Type", offsetof(crash_report, code_type), true},
        {"Date/Time", offsetof(crash_report, date), true},
        {"OS Version", offsetof(crash_report, os_version), true},
        {"Report Version", offsetof(crash_report, report_version), true},
        {"Exception Type", offsetof(crash_report, exception_type), false},
        {"Exception Codes", offsetof(crash_report, exception_codes), false},
        {"Termination Reason", offsetof(crash_report, termination), false},
    };
    const char *colon = memchr(s, ':', (size_t)(e - s));
    if (!colon || s == e || cp_is_ws(*s))
        return SYMD_OK;
    const char *v = colon + 1, *ve = e;
    cp_trim(&v, &ve);
    size_t kl = (size_t)(colon - s);
    if ((kl == 14 && memcmp(s, "Crashed Thread", 14) == 0) ||
        (kl == 19 && memcmp(s, "Triggered by Thread", 19) == 0) ||
        (kl == 18 && memcmp(s, "Highlighted Thread", 18) == 0)) {
        uint64_t n;
        if (t->crashed_number < 0 && cp_dec_parse(v, cp_digits_end(v, ve), 999999999, &n))
            t->crashed_number = (long)n;
        return SYMD_OK;
    }
    if ((kl == 4 && memcmp(s, "Path", 4) == 0) ||
        (kl == 17 && memcmp(s, "CrashReporter Key", 17) == 0))
        t->has_header = true;
    if (kl == 4 && memcmp(s, "Path", 4) == 0 && !t->app_path)
        return cp_set_str(t->p, &t->app_path, v, (size_t)(ve - v));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strlen(keys[i].key) != kl || memcmp(keys[i].key, s, kl) != 0)
            continue;
        t->has_header |= keys[i].names;
        char **dst = (char **)((char *)t->p->r + keys[i].off);
        if (*dst)
            return SYMD_OK; /* the first one counts */
        if (dst == &t->p->r->process) { /* "Name [pid]" */
            const char *b = ve;
            if (b > v && b[-1] == ']') {
                while (b > v && b[-1] != '[')
                    b--;
                if (b > v) {
                    ve = b - 1;
                    cp_trim(&v, &ve);
                }
            }
        }
        if (cp_set_str(t->p, dst, v, (size_t)(ve - v)))
            return t->p->err->kind;
        if (dst == &t->p->r->exception_type) { /* "EXC_CRASH (SIGABRT)" */
            const char *o = memchr(v, '(', (size_t)(ve - v));
            if (o && ve[-1] == ')' && ve - 1 > o + 1 &&
                cp_set_str(t->p, &t->p->r->exception_signal, o + 1, (size_t)(ve - 1 - (o + 1))))
                return t->p->err->kind;
        }
        return SYMD_OK;
    }
    return SYMD_OK;
}

/* ---- sections ------------------------------------------------------------------- */

typedef enum {
    H_NONE,
    H_THREAD_NAME, /* "Thread N name:  x" */
    H_THREAD,      /* "Thread N:", "Thread N Crashed:", "Thread N::  Dispatch queue: q" */
    H_ATTRIBUTED,  /* "Thread N Attributed:" */
    H_STATE,       /* "Thread N crashed with ARM Thread State (64-bit):" */
    H_IMAGES,      /* "Binary Images:", "Binary Images (dpkg):" */
    H_LAST_EXC,    /* "Last Exception Backtrace:" */
    H_APP_BT,      /* "Application Specific Backtrace N:" */
    H_ASI,         /* "Application Specific Information:" */
    H_TREE,        /* "Microstackshots: N (from ... to ...)" */
    H_BAD_MAGIC,   /* "Bad magic 0x..." before a microstackshot tree */
} heading;

/* What section the line [s, e) (indentation removed) opens; *num is the
 * thread number, *rest what follows the heading. */
static heading classify(const char *s, const char *e, long *num, const char **rest)
{
    const char *after = thread_prefix(s, e, num);
    if (after) {
        if (cp_starts(after, e, " name:")) {
            *rest = after + 6;
            return H_THREAD_NAME;
        }
        if (cp_starts(after, e, " crashed with ") && e[-1] == ':')
            return H_STATE;
        if (cp_starts(after, e, " Attributed:")) {
            *rest = after + 12;
            return H_ATTRIBUTED;
        }
        const char *c = after + (cp_starts(after, e, " Crashed") ? 8 : 0);
        if (c < e && *c == ':') {
            *rest = c;
            return H_THREAD;
        }
        return H_NONE;
    }
    if ((cp_starts(s, e, "Binary Images") || cp_starts(s, e, "Binary images")) && e[-1] == ':')
        return H_IMAGES;
    if (cp_starts(s, e, "Last Exception Backtrace:")) {
        *rest = s + strlen("Last Exception Backtrace:");
        return H_LAST_EXC;
    }
    if (cp_starts(s, e, "Application Specific Backtrace ") && e[-1] == ':')
        return H_APP_BT;
    if (cp_starts(s, e, "Application Specific Information:"))
        return H_ASI;
    if (cp_starts(s, e, "Microstackshots:"))
        return H_TREE;
    if (cp_starts(s, e, "Bad magic "))
        return H_BAD_MAGIC;
    return H_NONE;
}

/* The header ends where the first section starts. */
static void end_header(tp *t)
{
    t->in_header = false;
    t->blanks = 0;
}

/* A section heading; *done false when the line is to be read as any other. */
static symd_status section(tp *t, heading h, long num, const char *rest, const char *ls,
                           const char *le, bool *done)
{
    crash_report *r = t->p->r;
    const char *s = ls, *e = le;
    cp_trim(&s, &e);
    *done = true;
    switch (h) {
    case H_THREAD_NAME:
        end_header(t);
        t->have_pending = true;
        t->pending_number = num;
        free(t->pending_name);
        free(t->pending_queue);
        t->pending_name = t->pending_queue = NULL;
        t->st = ST_NONE;
        return name_or_queue(t, rest, le, &t->pending_name, &t->pending_queue);
    case H_THREAD: {
        end_header(t);
        bool crashed = rest > ls && rest[-1] == 'd'; /* after " Crashed" */
        const char *c = rest + 1;
        if (c < le && *c == ':') /* macOS 12: "Thread 0 Crashed::  Dispatch queue: q" */
            c++;
        if (new_thread(t, num, crashed, CRASH_THREAD_NORMAL, NULL, NULL))
            return t->p->err->kind;
        crash_thread *th = &r->threads[r->nthreads - 1];
        t->st = ST_THREAD;
        return name_or_queue(t, c, le, &th->name, &th->queue);
    }
    case H_ATTRIBUTED:
        end_header(t);
        t->st = ST_THREAD;
        return new_thread(t, num, false, CRASH_THREAD_ATTRIBUTED, s, e);
    case H_STATE:
        end_header(t);
        if (t->crashed_number < 0)
            t->crashed_number = num;
        if (t->seen_regs) { /* only the first state block is read */
            t->st = ST_NONE;
            return verbatim(t, ls, le);
        }
        t->seen_regs = true;
        t->st = ST_REGS;
        return SYMD_OK;
    case H_IMAGES: {
        end_header(t);
        bool first = !t->seen_images;
        t->seen_images = true;
        t->st = ST_IMAGES;
        /* Jailbreak reporters split the list ("Binary Images (dpkg):"); the
         * model holds one list, so the later headings are kept as text. */
        if (!first || (size_t)(e - s) != strlen("Binary Images:"))
            return verbatim(t, ls, le);
        return SYMD_OK;
    }
    case H_LAST_EXC: {
        end_header(t);
        const char *te = rest;
        if (new_thread(t, -1, false, CRASH_THREAD_LAST_EXCEPTION, s, te))
            return t->p->err->kind;
        t->st = ST_THREAD;
        const char *q = rest, *qe = le;
        cp_trim(&q, &qe);
        if (q < qe && *q == '(') {
            t->st = ST_LIST;
            return list_line(t, q, qe);
        }
        if (q < qe) /* something else on the heading's line */
            return verbatim(t, q, qe);
        return SYMD_OK;
    }
    case H_APP_BT:
        end_header(t);
        t->st = ST_THREAD;
        return new_thread(t, -1, false, CRASH_THREAD_APP_SPECIFIC, s, e);
    case H_TREE: {
        end_header(t);
        if (new_thread(t, -1, false, CRASH_THREAD_NORMAL, s, e))
            return t->p->err->kind;
        crash_thread *th = &r->threads[r->nthreads - 1];
        th->is_tree = true;
        const char *c = s + strlen("Microstackshots:");
        while (c < e && cp_is_ws(*c))
            c++;
        uint64_t n;
        if (cp_dec_parse(c, cp_digits_end(c, e), UINT64_MAX, &n))
            th->count = n;
        t->ntree = 0;
        t->st = ST_TREE;
        return SYMD_OK;
    }
    case H_BAD_MAGIC:
        if (!t->bad_magic)
            t->bad_magic_line = t->lineno;
        t->bad_magic = true;
        *done = false; /* kept as text wherever it stands */
        return SYMD_OK;
    case H_ASI:
        if (t->asi.len && buf_add(t, &t->asi, "\n", 1))
            return t->p->err->kind;
        t->asi_back = t->in_header ? ST_HEADER : ST_NONE;
        t->st = ST_ASI;
        return t->in_header ? SYMD_OK : verbatim(t, ls, le);
    case H_NONE:
        break;
    }
    *done = false;
    return SYMD_OK;
}

/* A line that starts frames with no heading above them ("0  image  0x..."),
 * as pasted backtraces do: a thread of number -1 holds them. */
static bool starts_bare_frames(const char *s, const char *e)
{
    fparts fp;
    const char *why;
    return s < e && *s == '0' && scan_frame(s, e, &fp, &why) && fp.num == 0;
}

/* One line [ls, le): indentation common to the report removed, CR
 * stripped, already checked for length and UTF-8. */
static symd_status text_line(tp *t, const char *ls, const char *le)
{
    crash_report *r = t->p->r;
    const char *s = ls, *e = le;
    cp_trim(&s, &e);
    if (s == e) { /* a blank line ends frames, registers, images and ASI */
        if (t->st == ST_LIST &&
            cp_warn_line(t->p, t->lineno, "the address list has no closing \")\""))
            return t->p->err->kind;
        t->list_open = false;
        if (t->st == ST_ASI)
            t->st = t->asi_back;
        else if (t->st != ST_HEADER)
            t->st = ST_NONE;
        t->blanks++;
        return SYMD_OK;
    }
    long num = -1;
    const char *rest = NULL;
    heading h = classify(ls, le, &num, &rest);
    if (h != H_NONE) {
        if (t->st == ST_LIST &&
            cp_warn_line(t->p, t->lineno, "the address list above has no closing \")\""))
            return t->p->err->kind;
        t->list_open = false;
        bool done;
        if (section(t, h, num, rest, ls, le, &done))
            return t->p->err->kind;
        if (done)
            return SYMD_OK;
    }
    switch (t->st) {
    case ST_HEADER:
        /* KSCrash's Apple-format text of a main-thread deadlock (its JSON
         * says error.type "deadlock"): a hang, as the JSON reads */
        if ((size_t)(e - s) == 34 && memcmp(s, "Application main thread deadlocked", 34) == 0)
            t->deadlock = true;
        if (starts_bare_frames(s, e)) {
            end_header(t);
            if (new_thread(t, -1, false, CRASH_THREAD_NORMAL, NULL, NULL))
                return t->p->err->kind;
            t->st = ST_THREAD;
            return frame_line(t, ls, le, s, e);
        }
        return header_line(t, ls, le);
    case ST_ASI:
        if (buf_add(t, &t->asi, t->asi.len ? "\n" : "", t->asi.len ? 1 : 0) ||
            buf_add(t, &t->asi, ls, (size_t)(le - ls)))
            return t->p->err->kind;
        return t->in_header ? SYMD_OK : verbatim(t, ls, le);
    case ST_THREAD: {
        crash_thread *th = &r->threads[r->nthreads - 1];
        if (cp_is_digit(*s))
            return frame_line(t, ls, le, s, e);
        if (*s == '(' && th->role == CRASH_THREAD_LAST_EXCEPTION && th->nframes == 0) {
            t->st = ST_LIST;
            return list_line(t, s, e);
        }
        crash_frame *f = th->nframes ? &th->frames[th->nframes - 1] : NULL;
        if (f && f->symbol && cp_is_ws(*ls)) {
            /* An indented line under a frame continues its symbol (an
             * assertion message with a newline in it). */
            size_t a = strlen(f->symbol), b = (size_t)(le - ls);
            char *c = realloc(f->symbol, a + b + 2);
            if (!c)
                return cp_nomem(t->p);
            c[a] = '\n';
            memcpy(c + a + 1, ls, b);
            c[a + b + 1] = 0;
            f->symbol = c;
            return SYMD_OK;
        }
        t->st = ST_NONE;
        break;
    }
    case ST_LIST:
        return list_line(t, s, e);
    case ST_IMAGES:
        if (cp_starts(s, e, "0x") || cp_starts(s, e, "0X") || cp_starts(s, e, "0 "))
            return image_line(t, ls, le, s, e);
        t->st = ST_NONE;
        break;
    case ST_REGS: {
        bool any;
        if (regs_line(t, s, e, &any))
            return t->p->err->kind;
        if (any)
            return SYMD_OK;
        t->st = ST_NONE;
        break;
    }
    case ST_TREE: {
        bool ok;
        if (tree_line(t, ls, le, &ok))
            return t->p->err->kind;
        if (ok)
            return SYMD_OK;
        t->st = ST_NONE;
        break;
    }
    case ST_NONE:
        break;
    }
    /* Between sections: frames with no heading start a thread; anything
     * else is kept as written. */
    if (!t->seen_images && starts_bare_frames(s, e)) {
        if (new_thread(t, -1, false, CRASH_THREAD_NORMAL, NULL, NULL))
            return t->p->err->kind;
        t->st = ST_THREAD;
        return frame_line(t, ls, le, s, e);
    }
    return verbatim(t, ls, le);
}

/* The blanks every line of the report starts with (a report pasted with
 * each line indented): those before the first header key or section
 * heading. */
static size_t report_indent(const char *body, const char *end)
{
    static const char *const marks[] = {
        "Incident Identifier:", "CrashReporter Key:", "Process:", "Hardware Model:",
        "Exception Type:", "Binary Images", "Last Exception Backtrace:",
        "Application Specific Backtrace ",
    };
    for (const char *q = body; q < end;) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        const char *le = nl ? nl : end, *s = q;
        while (s < le && cp_is_ws(*s))
            s++;
        long num;
        if (thread_prefix(s, le, &num))
            return (size_t)(s - q);
        for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
            if (cp_starts(s, le, marks[i]))
                return (size_t)(s - q);
        q = nl ? nl + 1 : end;
    }
    return 0;
}

/* Whether [s, e) is a line of dashes only ("-----------"). */
static bool is_rule(const char *s, const char *e)
{
    cp_trim(&s, &e);
    if (e - s < 3)
        return false;
    for (; s < e; s++)
        if (*s != '-')
            return false;
    return true;
}

/* Whether the lines from q on are the banner macOS puts between a
 * translated report and the .ips it was translated from:
 * "-----------", "Full Report", "-----------". */
static bool full_report_banner(const char *q, const char *end)
{
    const char *l[3];
    const char *le[3];
    for (int i = 0; i < 3; i++) {
        if (q >= end)
            return false;
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        l[i] = q;
        le[i] = nl ? nl : end;
        if (le[i] > l[i] && le[i][-1] == '\r')
            le[i]--;
        q = nl ? nl + 1 : end;
    }
    const char *s = l[1], *e = le[1];
    cp_trim(&s, &e);
    return is_rule(l[0], le[0]) && is_rule(l[2], le[2]) && e - s == 11 &&
           memcmp(s, "Full Report", 11) == 0;
}

/* The original .ips under a translated report, from its banner on: kept
 * verbatim after everything else (the report above is its twin). Its JSON
 * lines may be long; each is only checked for UTF-8. */
static symd_status full_report_tail(tp *t, const char *q, const char *end)
{
    while (q < end) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        const char *le = nl ? nl : end;
        size_t col;
        if (!cp_line_valid(q, le, &col)) {
            if (cp_warn_line(t->p, t->lineno, "%s at column %zu: the line is left out",
                             q[col - 1] ? "invalid UTF-8" : "NUL byte", col))
                return t->p->err->kind;
        } else {
            if (le > q && le[-1] == '\r')
                le--;
            if (cp_add_verbatim(t->p, CRASH_AT_END, 0, q, (size_t)(le - q)))
                return t->p->err->kind;
        }
        q = nl ? nl + 1 : end;
        t->lineno++;
    }
    return SYMD_OK;
}

/* Which thread crashed: the one a heading says crashed, else the one the
 * header names (exception backtraces are no threads). */
static void find_crashed(crash_report *r, long number)
{
    r->crashed_thread = -1;
    for (size_t i = 0; i < r->nthreads && r->crashed_thread < 0; i++)
        if (r->threads[i].crashed)
            r->crashed_thread = (long)i;
    for (size_t i = 0; i < r->nthreads && r->crashed_thread < 0 && number >= 0; i++) {
        crash_thread *th = &r->threads[i];
        if (th->number == number &&
            (th->role == CRASH_THREAD_NORMAL || th->role == CRASH_THREAD_ATTRIBUTED) &&
            !th->is_tree) {
            r->crashed_thread = (long)i;
            th->crashed = true;
        }
    }
}

symd_status crash_parse_text(cp *p, const char *body, size_t n, size_t first_line)
{
    crash_report *r = p->r;
    tp t = {.p = p, .lineno = first_line, .st = ST_HEADER, .in_header = true,
            .crashed_number = -1};
    const char *end = body + n;
    t.indent = report_indent(body, end);
    symd_status st = SYMD_OK;
    for (const char *q = body; q < end && !st; t.lineno++) {
        if (!t.in_header && (*q == '-' || cp_is_ws(*q)) && full_report_banner(q, end)) {
            st = full_report_tail(&t, q, end);
            break;
        }
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        const char *le = nl ? nl : end, *next = nl ? nl + 1 : end;
        if ((size_t)(le - q) > CRASH_MAX_LINE) {
            st = symd_fail(p->err, SYMD_E_TOO_LARGE, "line %zu: longer than %d bytes",
                           t.lineno, CRASH_MAX_LINE);
            break;
        }
        size_t col;
        if (!cp_line_valid(q, le, &col)) {
            st = cp_warn_line(p, t.lineno, "%s at column %zu: the line is left out",
                              q[col - 1] ? "invalid UTF-8" : "NUL byte", col);
            q = next;
            continue;
        }
        const char *lt = le;
        if (lt > q && lt[-1] == '\r')
            lt--;
        t.raw_s = q;
        t.raw_e = lt;
        const char *ls = q;
        size_t k = 0;
        while (k < t.indent && ls < lt && cp_is_ws(*ls)) {
            ls++;
            k++;
        }
        bool was_header = t.in_header;
        if (was_header)
            st = buf_add(&t, &t.header, q, (size_t)(next - q));
        if (!st)
            st = text_line(&t, ls, lt);
        if (!st && was_header && !t.in_header) {
            /* The line that opened the first section is no part of the header. */
            t.header.len -= (size_t)(next - q);
            t.header.s[t.header.len] = 0;
            r->text_header = t.header.s;
            t.header.s = NULL;
        }
        q = next;
    }
    if (!st && t.fp_skipped)
        st = cp_warn_line(p, t.bad_magic_line, "after \"Bad magic\", %zu \"??? [0x...]\" "
                          "call-tree nodes are the frame pointers the writer walked, not frames: "
                          "left out (their children hang from the node above)", t.fp_skipped);
    if (!st && t.st == ST_LIST)
        st = cp_warn_line(p, t.lineno - 1, "the address list has no closing \")\"");
    if (!st && t.asi.len)
        st = cp_set_str(p, &r->app_specific, t.asi.s, t.asi.len);
    if (!st && !r->text_header) { /* no section: all of it is header */
        r->text_header = t.header.s ? t.header.s : calloc(1, 1);
        t.header.s = NULL;
        if (!r->text_header)
            st = cp_nomem(p);
    }
    free(t.header.s);
    free(t.asi.s);
    free(t.tree);
    free(t.pending_name);
    free(t.pending_queue);
    bool any_app = false;
    for (size_t i = 0; i < r->nimages; i++)
        any_app |= r->images[i].is_app;
    for (size_t i = 0; i < r->nimages && !any_app && t.app_path; i++)
        if (r->images[i].path && strcmp(r->images[i].path, t.app_path) == 0)
            r->images[i].is_app = true;
    free(t.app_path);
    if (st)
        return st;
    if (r->format == CRASH_FORMAT_CRASH)
        r->kind = t.has_header ? t.deadlock ? CRASH_KIND_HANG : CRASH_KIND_CRASH
                               : CRASH_KIND_FRAGMENT;
    static const char why[] = "Main thread deadlock (KSCrash watchdog)"; /* as the JSON's */
    if (r->kind == CRASH_KIND_HANG && t.deadlock && !r->termination &&
        cp_set_str(p, &r->termination, why, sizeof why - 1))
        return p->err->kind;
    find_crashed(r, t.crashed_number);
    /* A crash with no thread section at all is kept (its header may be all
     * someone has), but not without a word. */
    if (r->nthreads == 0 && (r->kind == CRASH_KIND_CRASH || r->kind == CRASH_KIND_FRAGMENT) &&
        (st = cp_warn(p, "report", "no thread section: the report holds no frames")))
        return st;
    return cp_resolve_text_images(p);
}

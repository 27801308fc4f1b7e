/* Text reports: .crash (Report Version 104 and older, KSCrash's variant),
 * the text body of an .ips (bug_type 109, 185, ...), fragments. Read line
 * by line: a line is at most CRASH_MAX_LINE bytes, valid UTF-8 without NUL.
 * Messages say where: "line 42: ..." (1-based, counting an .ips header). */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../util/hex.h"
#include "../util/util.h"
#include "crash_int.h"


typedef enum { ST_HEADER, ST_NONE, ST_THREAD, ST_REGS, ST_IMAGES } tstate;

typedef struct {
    cp *p;
    size_t lineno;
    tstate st;
    long crashed_number;     /* from "Crashed Thread:" / "Triggered by Thread:" */
    bool have_pending;       /* a "Thread N name:" line waits for its thread */
    long pending_number;
    char *pending_name, *pending_queue;
    char *app_path;          /* header "Path:", to mark the main binary */
} tp;

static symd_status tfail(tp *t, symd_status kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static symd_status tfail(tp *t, symd_status kind, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return symd_fail(t->p->err, kind, "line %zu: %s", t->lineno, msg);
}

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

static symd_status new_thread(tp *t, long num, bool crashed)
{
    char where[32];
    snprintf(where, sizeof where, "line %zu", t->lineno);
    crash_thread *th;
    if (cp_new_thread(t->p, &th, where))
        return t->p->err->kind;
    th->number = num;
    th->crashed = crashed;
    if (t->have_pending && t->pending_number == num) {
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

/* Trailing "(file:line)" of [s, e): sets *file, *fe and *line and moves *e before
 * it. Returns false (nothing moved) when the tail is no such group. */
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
    /* "(-[A b:] + 8)" has no digits right before ')' after a colon; a symbol
     * group carries " + ": not a file. */
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

/* "symbol + 123" or "symbol" into the frame. */
static symd_status take_symbol(tp *t, crash_frame *f, const char *s, const char *e)
{
    cp_trim(&s, &e);
    if (s == e)
        return SYMD_OK;
    const char *ds = e;
    while (ds > s && cp_is_digit(ds[-1]))
        ds--;
    if (ds < e && ds - s >= 4 && memcmp(ds - 3, " + ", 3) == 0) {
        uint64_t off;
        if (!cp_dec_parse(ds, e, UINT64_MAX, &off))
            return tfail(t, SYMD_E_CORRUPT, "symbol offset out of range");
        f->has_symbol_offset = true;
        f->symbol_offset = off;
        e = ds - 3;
        cp_trim(&s, &e);
    }
    if (s == e)
        return SYMD_OK;
    return cp_set_str(t->p, &f->symbol, s, (size_t)(e - s));
}

/* "N  image  0xPC rest" where rest is "0xLOAD + off", "0xLOAD + off (sym +
 * off)", "symbol + off", any of those with " (file:line)", or nothing. */
static symd_status parse_frame(tp *t, const char *s, const char *e)
{
    crash_report *r = t->p->r;
    const char *de = cp_digits_end(s, e);
    uint64_t num;
    if (!cp_dec_parse(s, de, 999999999, &num))
        return tfail(t, SYMD_E_CORRUPT, "frame number out of range");
    if (de == e || !cp_is_ws(*de))
        return tfail(t, SYMD_E_CORRUPT, "expected an image name after the frame number");
    const char *img = de, *pc = NULL, *pce = NULL;
    while (img < e && cp_is_ws(*img))
        img++;
    for (const char *q = img + 1; q < e; q++)
        if (cp_is_ws(q[-1]) && (pce = cp_hex_token(q, e))) {
            pc = q;
            break;
        }
    if (!pc)
        return tfail(t, SYMD_E_CORRUPT, "frame %" PRIu64 " has no 0x address", num);
    const char *ie = pc;
    cp_trim(&img, &ie);
    if (img == ie)
        return tfail(t, SYMD_E_CORRUPT, "frame %" PRIu64 " has no image name", num);
    uint64_t addr;
    if (!hex_parse_u64(pc, (size_t)(pce - pc), &addr))
        return tfail(t, SYMD_E_CORRUPT, "frame %" PRIu64 ": address wider than 64 bits", num);
    char where[32];
    snprintf(where, sizeof where, "line %zu", t->lineno);
    crash_frame *f;
    if (cp_new_frame(t->p, r->nthreads - 1, &f, where))
        return t->p->err->kind;
    f->address = addr;
    if (cp_set_str(t->p, &f->image_name, img, (size_t)(ie - img)))
        return t->p->err->kind;

    const char *rs = pce, *re = e;
    cp_trim(&rs, &re);
    const char *file, *fe;
    uint32_t line;
    if (take_file_line(rs, &re, &file, &fe, &line)) {
        f->line = line;
        if (cp_set_str(t->p, &f->file, file, (size_t)(fe - file)))
            return t->p->err->kind;
    }
    /* "0xLOAD + off" (or "0 + 0" for ??? frames). */
    const char *te = rs;
    while (te < re && !cp_is_ws(*te))
        te++;
    const char *plus = te;
    while (plus < re && cp_is_ws(*plus))
        plus++;
    uint64_t load;
    bool is_num = te > rs && (cp_hex_token(rs, re) == te ||
                              (cp_digits_end(rs, te) == te && cp_dec_parse(rs, te, UINT64_MAX, &load)));
    if (is_num && plus < re && *plus == '+' && plus + 1 < re && cp_is_ws(plus[1])) {
        const char *os = plus + 1;
        while (os < re && cp_is_ws(*os))
            os++;
        const char *oe = cp_digits_end(os, re);
        uint64_t off;
        if (oe > os && (oe == re || cp_is_ws(*oe))) {
            if (!cp_dec_parse(os, oe, UINT64_MAX, &off))
                return tfail(t, SYMD_E_CORRUPT, "frame %" PRIu64 ": offset out of range", num);
            if (!hex_parse_u64(rs, (size_t)(te - rs), &load) &&
                !cp_dec_parse(rs, te, UINT64_MAX, &load))
                return tfail(t, SYMD_E_CORRUPT, "frame %" PRIu64 ": bad load address", num);
            f->has_load = true;
            f->load_address = load;
            rs = oe;
            cp_trim(&rs, &re);
            if (rs < re && *rs == '(' && re[-1] == ')') { /* KSCrash "(symbol + off)" */
                rs++;
                re--;
            }
        }
    }
    return take_symbol(t, f, rs, re);
}

/* "  0xSTART -   0xEND [+]name arch <uuid> /path", or macOS
 * "[+]bundle.id (version) <DASHED-UUID> /path"; the UUID may be missing. */
static symd_status parse_image(tp *t, const char *s, const char *e)
{
    const char *ae = cp_hex_token(s, e);
    uint64_t lo, hi;
    if (!ae || !hex_parse_u64(s, (size_t)(ae - s), &lo))
        return tfail(t, SYMD_E_CORRUPT, "bad image start address");
    const char *q = ae;
    while (q < e && cp_is_ws(*q))
        q++;
    if (q == e || *q != '-')
        return tfail(t, SYMD_E_CORRUPT, "expected \"-\" between image addresses");
    q++;
    while (q < e && cp_is_ws(*q))
        q++;
    const char *be = cp_hex_token(q, e);
    if (!be || !hex_parse_u64(q, (size_t)(be - q), &hi))
        return tfail(t, SYMD_E_CORRUPT, "bad image end address");
    if (hi < lo)
        return tfail(t, SYMD_E_CORRUPT, "image ends before it starts");
    char where[32];
    snprintf(where, sizeof where, "line %zu", t->lineno);
    crash_image *im;
    if (cp_new_image(t->p, &im, where))
        return t->p->err->kind;
    im->load_address = lo;
    im->has_end = true;
    im->end_address = hi;

    const char *rs = be, *re = e;
    cp_trim(&rs, &re);
    if (rs < re && *rs == '+') {
        im->is_app = true;
        rs++;
    }
    const char *mid_e = re, *path = NULL, *pe = re;
    /* The UUID is the first "<...>" after a blank that holds one; a name
     * may itself hold '<' ("<b>evil</b>"). With none, the first '<' after a
     * blank is taken, and its error says what it holds. */
    const char *lt = NULL;
    for (const char *c = rs; c < re; c++) {
        if (*c != '<' || (c != rs && !cp_is_ws(c[-1])))
            continue;
        if (!lt)
            lt = c;
        const char *gt = memchr(c, '>', (size_t)(re - c));
        uint8_t scratch[16];
        char ub[40];
        if (!gt || gt - c - 1 > 36)
            continue;
        memcpy(ub, c + 1, (size_t)(gt - c - 1));
        ub[gt - c - 1] = 0;
        if (!ub[0] || strcmp(ub, "(null)") == 0 || strcmp(ub, "???") == 0 ||
            uuid_parse(ub, scratch)) {
            lt = c;
            break;
        }
    }
    if (lt) {
        const char *gt = memchr(lt, '>', (size_t)(re - lt));
        if (!gt || gt - lt - 1 > 36)
            return tfail(t, SYMD_E_CORRUPT, "bad image UUID");
        char ub[40];
        memcpy(ub, lt + 1, (size_t)(gt - lt - 1));
        ub[gt - lt - 1] = 0;
        /* KSCrash writes "<(null)>" for an image without LC_UUID. */
        bool none = !ub[0] || strcmp(ub, "(null)") == 0 || strcmp(ub, "???") == 0;
        if (!none && !uuid_parse(ub, im->uuid))
            return tfail(t, SYMD_E_CORRUPT, "bad image UUID <%s>", ub);
        im->has_uuid = !none;
        mid_e = lt;
        path = gt + 1;
    } else {
        for (const char *c = rs; c < re; c++)
            if (*c == '/' && c > rs && cp_is_ws(c[-1])) {
                mid_e = path = c;
                break;
            }
    }
    if (path) {
        cp_trim(&path, &pe);
        if (path < pe && cp_set_str(t->p, &im->path, path, (size_t)(pe - path)))
            return t->p->err->kind;
    }
    const char *ms = rs;
    cp_trim(&ms, &mid_e);
    if (ms < mid_e && mid_e[-1] == ')') { /* "name (version)" */
        int depth = 0;
        const char *o = mid_e;
        while (o > ms) {
            o--;
            if (*o == ')')
                depth++;
            else if (*o == '(' && --depth == 0)
                break;
        }
        if (depth != 0 || *o != '(')
            return tfail(t, SYMD_E_CORRUPT, "unbalanced parentheses in the image version");
        if (cp_set_str(t->p, &im->version, o + 1, (size_t)(mid_e - 1 - (o + 1))))
            return t->p->err->kind;
        mid_e = o;
        cp_trim(&ms, &mid_e);
        size_t nl = (size_t)(mid_e - ms);
        if (memchr(ms, '.', nl) && !memchr(ms, '/', nl) && !memchr(ms, ' ', nl) &&
            !(nl > 6 && memcmp(mid_e - 6, ".dylib", 6) == 0) &&
            cp_set_str(t->p, &im->bundle_id, ms, nl))
            return t->p->err->kind;
    } else { /* "name arch" */
        const char *a = mid_e;
        while (a > ms && !cp_is_ws(a[-1]))
            a--;
        if (a > ms) {
            if (cp_set_str(t->p, &im->arch, a, (size_t)(mid_e - a)))
                return t->p->err->kind;
            mid_e = a;
            cp_trim(&ms, &mid_e);
        }
    }
    if (ms == mid_e)
        return tfail(t, SYMD_E_CORRUPT, "image without a name");
    return cp_set_str(t->p, &im->name, ms, (size_t)(mid_e - ms));
}

/* "  x0: 0x0000000000000000   x1: 0x..." → registers; false when the line
 * holds no "name: 0xvalue" pair (the block is over). */
static symd_status parse_regs(tp *t, const char *s, const char *e, bool *any)
{
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
        char where[32];
        snprintf(where, sizeof where, "line %zu", t->lineno);
        if (cp_add_register(t->p, ns, (size_t)(ne - 1 - ns), q, (size_t)(ve - q), where))
            return t->p->err->kind;
        *any = true;
        q = ve;
    }
    return SYMD_OK;
}

/* "Key:   value" lines of the header we keep in the model. */
static symd_status header_line(tp *t, const char *s, const char *e)
{
    static const struct {
        const char *key;
        size_t off;
    } keys[] = {
        {"Incident Identifier", offsetof(crash_report, incident_id)},
        {"Hardware Model", offsetof(crash_report, hardware_model)},
        {"Process", offsetof(crash_report, process)},
        {"Identifier", offsetof(crash_report, bundle_id)},
        {"Version", offsetof(crash_report, app_version)},
        {"Code Type", offsetof(crash_report, code_type)},
        {"Date/Time", offsetof(crash_report, date)},
        {"OS Version", offsetof(crash_report, os_version)},
        {"Report Version", offsetof(crash_report, report_version)},
        {"Exception Type", offsetof(crash_report, exception_type)},
        {"Exception Codes", offsetof(crash_report, exception_codes)},
        {"Termination Reason", offsetof(crash_report, termination)},
    };
    const char *colon = memchr(s, ':', (size_t)(e - s));
    if (!colon || s == e || cp_is_ws(*s))
        return SYMD_OK;
    const char *v = colon + 1, *ve = e;
    cp_trim(&v, &ve);
    size_t kl = (size_t)(colon - s);
    if ((kl == 14 && memcmp(s, "Crashed Thread", 14) == 0) ||
        (kl == 19 && memcmp(s, "Triggered by Thread", 19) == 0)) {
        uint64_t n;
        if (t->crashed_number < 0 && cp_dec_parse(v, cp_digits_end(v, ve), 999999999, &n))
            t->crashed_number = (long)n;
        return SYMD_OK;
    }
    if (kl == 4 && memcmp(s, "Path", 4) == 0 && !t->app_path)
        return cp_set_str(t->p, &t->app_path, v, (size_t)(ve - v));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strlen(keys[i].key) != kl || memcmp(keys[i].key, s, kl) != 0)
            continue;
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

/* One line, already checked for length, UTF-8 and NUL, CR stripped. */
static symd_status text_line(tp *t, const char *ls, const char *le, const char *body,
                             size_t *header_end)
{
    const char *s = ls, *e = le;
    cp_trim(&s, &e);
    if (s == e) { /* a blank line ends frames, registers and images */
        if (t->st != ST_HEADER)
            t->st = ST_NONE;
        return SYMD_OK;
    }
    long num;
    const char *after = thread_prefix(ls, le, &num);
    bool section = false;
    if (after) {
        if (cp_starts(after, le, " name:")) {
            section = true;
            t->have_pending = true;
            t->pending_number = num;
            free(t->pending_name);
            free(t->pending_queue);
            t->pending_name = t->pending_queue = NULL;
            if (name_or_queue(t, after + 6, le, &t->pending_name, &t->pending_queue))
                return t->p->err->kind;
            t->st = ST_NONE;
        } else if (cp_starts(after, le, " crashed with ")) {
            section = true; /* only the first state block is kept */
            t->st = t->p->r->nregisters ? ST_NONE : ST_REGS;
        } else {
            bool crashed = cp_starts(after, le, " Crashed");
            const char *c = after + (crashed ? 8 : 0);
            if (c < le && *c == ':') {
                section = true;
                c++;
                if (c < le && *c == ':') /* macOS 12: "Thread 0 Crashed::  Dispatch queue: q" */
                    c++;
                if (new_thread(t, num, crashed))
                    return t->p->err->kind;
                crash_thread *th = &t->p->r->threads[t->p->r->nthreads - 1];
                if (name_or_queue(t, c, le, &th->name, &th->queue))
                    return t->p->err->kind;
                t->st = ST_THREAD;
            }
        }
    } else if (cp_starts(ls, le, "Binary Images:") || cp_starts(ls, le, "Binary images:")) {
        section = true;
        t->st = ST_IMAGES;
    }
    if (section) {
        if (*header_end == SIZE_MAX)
            *header_end = (size_t)(ls - body);
        return SYMD_OK;
    }
    switch (t->st) {
    case ST_HEADER:
        return header_line(t, ls, le);
    case ST_THREAD:
        if (cp_is_digit(*s))
            return parse_frame(t, s, e);
        t->st = ST_NONE;
        return SYMD_OK;
    case ST_IMAGES:
        if (cp_starts(s, e, "0x") || cp_starts(s, e, "0X"))
            return parse_image(t, s, e);
        t->st = ST_NONE;
        return SYMD_OK;
    case ST_REGS: {
        bool any;
        if (parse_regs(t, s, e, &any))
            return t->p->err->kind;
        if (!any)
            t->st = ST_NONE;
        return SYMD_OK;
    }
    default:
        return SYMD_OK;
    }
}

/* The text report body[0..n), whose first line is line first_line of the
 * input. Registers are kept only for the crashed thread's state block. */
symd_status crash_parse_text(cp *p, const char *body, size_t n, size_t first_line)
{
    tp t = {p, first_line, ST_HEADER, -1, false, -1, NULL, NULL, NULL};
    size_t header_end = SIZE_MAX;
    symd_status st = SYMD_OK;
    const char *q = body, *end = body + n;
    for (; q < end && !st; t.lineno++) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        const char *le = nl ? nl : end;
        if ((size_t)(le - q) > CRASH_MAX_LINE) {
            st = tfail(&t, SYMD_E_TOO_LARGE, "longer than %d bytes", CRASH_MAX_LINE);
            break;
        }
        for (const char *c = q; c < le;) {
            size_t k = *c ? utf8_seq_len((const unsigned char *)c, (const unsigned char *)le) : 0;
            if (!k) {
                st = tfail(&t, SYMD_E_CORRUPT, "%s at column %zu",
                           *c ? "invalid UTF-8" : "NUL byte", (size_t)(c - q) + 1);
                break;
            }
            c += k;
        }
        if (st)
            break;
        const char *lt = le;
        if (lt > q && lt[-1] == '\r')
            lt--;
        st = text_line(&t, q, lt, body, &header_end);
        q = nl ? nl + 1 : end;
    }
    free(t.pending_name);
    free(t.pending_queue);
    crash_report *r = p->r;
    bool any_app = false;
    for (size_t i = 0; i < r->nimages; i++)
        any_app |= r->images[i].is_app;
    for (size_t i = 0; i < r->nimages && !any_app && t.app_path; i++)
        if (r->images[i].path && strcmp(r->images[i].path, t.app_path) == 0)
            r->images[i].is_app = true;
    free(t.app_path);
    if (st)
        return st;
    if (r->nthreads == 0)
        return tfail(&t, SYMD_E_CORRUPT, "the report has no thread section");
    if (header_end == SIZE_MAX)
        header_end = n;
    if (cp_set_str(p, &r->text_header, body, header_end))
        return p->err->kind;
    r->crashed_thread = -1;
    for (size_t i = 0; i < r->nthreads && r->crashed_thread < 0; i++)
        if (r->threads[i].crashed)
            r->crashed_thread = (long)i;
    for (size_t i = 0; i < r->nthreads && r->crashed_thread < 0; i++)
        if (r->threads[i].number == t.crashed_number) {
            r->crashed_thread = (long)i;
            r->threads[i].crashed = true;
        }
    return cp_resolve_text_images(p);
}


/* Apple crash reports in, one crash model out (see crash.h).
 *
 * Three forms, told apart by content alone:
 *   - text .crash ("Report Version: 104" and older, KSCrash's variant);
 *   - .ips: a one-line JSON header, then a text body (bug_type 109, parsed
 *     as a .crash) or a JSON body (bug_type 309, read with jansson).
 * Text is read line by line: a line is at most CRASH_MAX_LINE bytes, valid
 * UTF-8 without NUL (else SYMD_E_CORRUPT: output JSON must be valid UTF-8
 * and names are C strings). Nothing is sized from a count the report
 * declares; threads, frames, images and registers are bounded by the
 * CRASH_MAX_* limits. Error messages say where: "line 42: ..." (1-based,
 * counting the .ips header line) or "threads[3].frames[7]: ...". */
#include "crash.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cursor.h"
#include "../util/hex.h"
#include "../util/util.h"

/* ---- shared helpers ----------------------------------------------------- */

typedef struct {
    crash_report *r;
    symd_err *err;
    size_t cap_threads, cap_images, cap_regs, cap_frames; /* cap_frames: current thread */
} cp;

static symd_status nomem(cp *p)
{
    return symd_fail(p->err, SYMD_E_NOMEM, "out of memory reading the crash report");
}

/* A NUL-terminated copy of s[0..n) into *dst (freeing what was there). */
static symd_status set_str(cp *p, char **dst, const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (!c)
        return nomem(p);
    memcpy(c, s, n);
    c[n] = 0;
    free(*dst);
    *dst = c;
    return SYMD_OK;
}

static bool is_ws(char c) { return c == ' ' || c == '\t'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void trim(const char **s, const char **e)
{
    while (*s < *e && is_ws(**s))
        (*s)++;
    while (*e > *s && is_ws((*e)[-1]))
        (*e)--;
}

static bool starts(const char *s, const char *e, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(e - s) >= n && memcmp(s, lit, n) == 0;
}

/* Decimal digits [s, e) → *v; false when empty, not digits or > max. */
static bool dec_parse(const char *s, const char *e, uint64_t max, uint64_t *v)
{
    if (s >= e)
        return false;
    uint64_t x = 0;
    for (; s < e; s++) {
        if (!is_digit(*s))
            return false;
        if (__builtin_mul_overflow(x, 10, &x) ||
            __builtin_add_overflow(x, (uint64_t)(*s - '0'), &x) || x > max)
            return false;
    }
    *v = x;
    return true;
}

/* The end of the run of digits starting at s. */
static const char *digits_end(const char *s, const char *e)
{
    while (s < e && is_digit(*s))
        s++;
    return s;
}

static symd_status add_register(cp *p, const char *name, size_t nlen, const char *val,
                                size_t vlen, const char *where)
{
    crash_report *r = p->r;
    if (r->nregisters >= CRASH_MAX_REGISTERS)
        return symd_fail(p->err, SYMD_E_TOO_LARGE, "%s: more than %d registers", where,
                         CRASH_MAX_REGISTERS);
    if (!array_grow((void **)&r->registers, &p->cap_regs, r->nregisters + 1,
                    sizeof *r->registers))
        return nomem(p);
    crash_kv *kv = &r->registers[r->nregisters];
    kv->name = kv->value = NULL;
    r->nregisters++;
    if (set_str(p, &kv->name, name, nlen) || set_str(p, &kv->value, val, vlen))
        return p->err->kind;
    return SYMD_OK;
}

/* ---- frame → image resolution --------------------------------------------- */

typedef struct {
    const char *name;
    uint64_t lo, hi;
    size_t idx;
} img_key;

static int cmp_idx(size_t a, size_t b) { return (a > b) - (a < b); }

static int cmp_by_name(const void *a, const void *b)
{
    const img_key *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : cmp_idx(x->idx, y->idx);
}

static int cmp_by_addr(const void *a, const void *b)
{
    const img_key *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return cmp_idx(x->idx, y->idx);
}

/* For text reports: each frame's image by name among Binary Images (the
 * first image of that name), else the image whose range holds the PC.
 * O((F + I) log I). */
static symd_status resolve_text_images(cp *p)
{
    crash_report *r = p->r;
    if (!r->nimages)
        return SYMD_OK;
    img_key *byname = malloc(r->nimages * sizeof *byname);
    img_key *byaddr = malloc(r->nimages * sizeof *byaddr);
    if (!byname || !byaddr) {
        free(byname);
        free(byaddr);
        return nomem(p);
    }
    for (size_t i = 0; i < r->nimages; i++) {
        const crash_image *im = &r->images[i];
        img_key k = {im->name ? im->name : "", im->load_address,
                     im->has_end ? im->end_address : im->load_address, i};
        byname[i] = byaddr[i] = k;
    }
    qsort(byname, r->nimages, sizeof *byname, cmp_by_name);
    qsort(byaddr, r->nimages, sizeof *byaddr, cmp_by_addr);
    for (size_t t = 0; t < r->nthreads; t++) {
        for (size_t f = 0; f < r->threads[t].nframes; f++) {
            crash_frame *fr = &r->threads[t].frames[f];
            fr->image = -1;
            if (fr->image_name) {
                size_t lo = 0, hi = r->nimages; /* first name >= frame's */
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    if (strcmp(byname[mid].name, fr->image_name) < 0)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo < r->nimages && strcmp(byname[lo].name, fr->image_name) == 0) {
                    fr->image = (long)byname[lo].idx;
                    continue;
                }
            }
            size_t lo = 0, hi = r->nimages; /* last image with lo <= pc */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (byaddr[mid].lo <= fr->address)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo > 0 && fr->address <= byaddr[lo - 1].hi)
                fr->image = (long)byaddr[lo - 1].idx;
        }
    }
    free(byname);
    free(byaddr);
    return SYMD_OK;
}

/* ---- text reports ----------------------------------------------------------- */

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
    trim(&s, &e);
    if (s == e)
        return SYMD_OK;
    if (starts(s, e, "Dispatch queue:")) {
        s += strlen("Dispatch queue:");
        trim(&s, &e);
        return set_str(t->p, queue, s, (size_t)(e - s));
    }
    return set_str(t->p, name, s, (size_t)(e - s));
}

/* "Thread N" at s: N → *num and the position after it, or NULL. */
static const char *thread_prefix(const char *s, const char *e, long *num)
{
    if (!starts(s, e, "Thread "))
        return NULL;
    const char *d = s + 7, *de = digits_end(d, e);
    uint64_t v;
    if (!dec_parse(d, de, 999999999, &v))
        return NULL;
    *num = (long)v;
    return de;
}

static symd_status new_thread(tp *t, long num, bool crashed)
{
    crash_report *r = t->p->r;
    if (r->nthreads >= CRASH_MAX_THREADS)
        return tfail(t, SYMD_E_TOO_LARGE, "more than %d threads", CRASH_MAX_THREADS);
    if (!array_grow((void **)&r->threads, &t->p->cap_threads, r->nthreads + 1,
                    sizeof *r->threads))
        return nomem(t->p);
    crash_thread *th = &r->threads[r->nthreads++];
    memset(th, 0, sizeof *th);
    th->number = num;
    th->crashed = crashed;
    t->p->cap_frames = 0;
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
    while (ds > s && is_digit(ds[-1]))
        ds--;
    if (ds == end - 1 || ds - s < 3 || ds[-1] != ':')
        return false;
    const char *colon = ds - 1, *open = colon;
    while (open > s && open[-1] != '(' && open[-1] != ')')
        open--;
    if (open == s || open[-1] != '(' || open == colon)
        return false;
    uint64_t v;
    if (!dec_parse(ds, end - 1, UINT32_MAX, &v))
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
    while (open > s && is_ws(open[-1]))
        open--;
    *e = open;
    return true;
}

/* "symbol + 123" or "symbol" into the frame. */
static symd_status take_symbol(tp *t, crash_frame *f, const char *s, const char *e)
{
    trim(&s, &e);
    if (s == e)
        return SYMD_OK;
    const char *ds = e;
    while (ds > s && is_digit(ds[-1]))
        ds--;
    if (ds < e && ds - s >= 4 && memcmp(ds - 3, " + ", 3) == 0) {
        uint64_t off;
        if (!dec_parse(ds, e, UINT64_MAX, &off))
            return tfail(t, SYMD_E_CORRUPT, "symbol offset out of range");
        f->has_symbol_offset = true;
        f->symbol_offset = off;
        e = ds - 3;
        trim(&s, &e);
    }
    if (s == e)
        return SYMD_OK;
    return set_str(t->p, &f->symbol, s, (size_t)(e - s));
}

/* A hex token "0x..." ending at whitespace or e; its end, or NULL. */
static const char *hex_token(const char *s, const char *e)
{
    if (e - s < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !is_hex(s[2]))
        return NULL;
    const char *q = s + 2;
    while (q < e && is_hex(*q))
        q++;
    return q == e || is_ws(*q) ? q : NULL;
}

/* "N  image  0xPC rest" where rest is "0xLOAD + off", "0xLOAD + off (sym +
 * off)", "symbol + off", any of those with " (file:line)", or nothing. */
static symd_status parse_frame(tp *t, const char *s, const char *e)
{
    crash_report *r = t->p->r;
    crash_thread *th = &r->threads[r->nthreads - 1];
    const char *de = digits_end(s, e);
    uint64_t num;
    if (!dec_parse(s, de, 999999999, &num))
        return tfail(t, SYMD_E_CORRUPT, "frame number out of range");
    if (de == e || !is_ws(*de))
        return tfail(t, SYMD_E_CORRUPT, "expected an image name after the frame number");
    const char *img = de, *pc = NULL, *pce = NULL;
    while (img < e && is_ws(*img))
        img++;
    for (const char *q = img + 1; q < e; q++)
        if (is_ws(q[-1]) && (pce = hex_token(q, e))) {
            pc = q;
            break;
        }
    if (!pc)
        return tfail(t, SYMD_E_CORRUPT, "frame %" PRIu64 " has no 0x address", num);
    const char *ie = pc;
    trim(&img, &ie);
    if (img == ie)
        return tfail(t, SYMD_E_CORRUPT, "frame %" PRIu64 " has no image name", num);
    uint64_t addr;
    if (!hex_parse_u64(pc, (size_t)(pce - pc), &addr))
        return tfail(t, SYMD_E_CORRUPT, "frame %" PRIu64 ": address wider than 64 bits", num);
    if (r->total_frames >= CRASH_MAX_FRAMES)
        return tfail(t, SYMD_E_TOO_LARGE, "more than %d frames", CRASH_MAX_FRAMES);
    if (!array_grow((void **)&th->frames, &t->p->cap_frames, th->nframes + 1, sizeof *th->frames))
        return nomem(t->p);
    crash_frame *f = &th->frames[th->nframes++];
    memset(f, 0, sizeof *f);
    r->total_frames++;
    f->image = -1;
    f->address = addr;
    if (set_str(t->p, &f->image_name, img, (size_t)(ie - img)))
        return t->p->err->kind;

    const char *rs = pce, *re = e;
    trim(&rs, &re);
    const char *file, *fe;
    uint32_t line;
    if (take_file_line(rs, &re, &file, &fe, &line)) {
        f->line = line;
        if (set_str(t->p, &f->file, file, (size_t)(fe - file)))
            return t->p->err->kind;
    }
    /* "0xLOAD + off" (or "0 + 0" for ??? frames). */
    const char *te = rs;
    while (te < re && !is_ws(*te))
        te++;
    const char *plus = te;
    while (plus < re && is_ws(*plus))
        plus++;
    uint64_t load;
    bool is_num = te > rs && (hex_token(rs, re) == te ||
                              (digits_end(rs, te) == te && dec_parse(rs, te, UINT64_MAX, &load)));
    if (is_num && plus < re && *plus == '+' && plus + 1 < re && is_ws(plus[1])) {
        const char *os = plus + 1;
        while (os < re && is_ws(*os))
            os++;
        const char *oe = digits_end(os, re);
        uint64_t off;
        if (oe > os && (oe == re || is_ws(*oe))) {
            if (!dec_parse(os, oe, UINT64_MAX, &off))
                return tfail(t, SYMD_E_CORRUPT, "frame %" PRIu64 ": offset out of range", num);
            if (!hex_parse_u64(rs, (size_t)(te - rs), &load) &&
                !dec_parse(rs, te, UINT64_MAX, &load))
                return tfail(t, SYMD_E_CORRUPT, "frame %" PRIu64 ": bad load address", num);
            f->has_load = true;
            f->load_address = load;
            rs = oe;
            trim(&rs, &re);
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
    crash_report *r = t->p->r;
    const char *ae = hex_token(s, e);
    uint64_t lo, hi;
    if (!ae || !hex_parse_u64(s, (size_t)(ae - s), &lo))
        return tfail(t, SYMD_E_CORRUPT, "bad image start address");
    const char *q = ae;
    while (q < e && is_ws(*q))
        q++;
    if (q == e || *q != '-')
        return tfail(t, SYMD_E_CORRUPT, "expected \"-\" between image addresses");
    q++;
    while (q < e && is_ws(*q))
        q++;
    const char *be = hex_token(q, e);
    if (!be || !hex_parse_u64(q, (size_t)(be - q), &hi))
        return tfail(t, SYMD_E_CORRUPT, "bad image end address");
    if (hi < lo)
        return tfail(t, SYMD_E_CORRUPT, "image ends before it starts");
    if (r->nimages >= CRASH_MAX_IMAGES)
        return tfail(t, SYMD_E_TOO_LARGE, "more than %d images", CRASH_MAX_IMAGES);
    if (!array_grow((void **)&r->images, &t->p->cap_images, r->nimages + 1, sizeof *r->images))
        return nomem(t->p);
    crash_image *im = &r->images[r->nimages++];
    memset(im, 0, sizeof *im);
    im->load_address = lo;
    im->has_end = true;
    im->end_address = hi;

    const char *rs = be, *re = e;
    trim(&rs, &re);
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
        if (*c != '<' || (c != rs && !is_ws(c[-1])))
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
            if (*c == '/' && c > rs && is_ws(c[-1])) {
                mid_e = path = c;
                break;
            }
    }
    if (path) {
        trim(&path, &pe);
        if (path < pe && set_str(t->p, &im->path, path, (size_t)(pe - path)))
            return t->p->err->kind;
    }
    const char *ms = rs;
    trim(&ms, &mid_e);
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
        if (set_str(t->p, &im->version, o + 1, (size_t)(mid_e - 1 - (o + 1))))
            return t->p->err->kind;
        mid_e = o;
        trim(&ms, &mid_e);
        size_t nl = (size_t)(mid_e - ms);
        if (memchr(ms, '.', nl) && !memchr(ms, '/', nl) && !memchr(ms, ' ', nl) &&
            !(nl > 6 && memcmp(mid_e - 6, ".dylib", 6) == 0) &&
            set_str(t->p, &im->bundle_id, ms, nl))
            return t->p->err->kind;
    } else { /* "name arch" */
        const char *a = mid_e;
        while (a > ms && !is_ws(a[-1]))
            a--;
        if (a > ms) {
            if (set_str(t->p, &im->arch, a, (size_t)(mid_e - a)))
                return t->p->err->kind;
            mid_e = a;
            trim(&ms, &mid_e);
        }
    }
    if (ms == mid_e)
        return tfail(t, SYMD_E_CORRUPT, "image without a name");
    return set_str(t->p, &im->name, ms, (size_t)(mid_e - ms));
}

/* "  x0: 0x0000000000000000   x1: 0x..." → registers; false when the line
 * holds no "name: 0xvalue" pair (the block is over). */
static symd_status parse_regs(tp *t, const char *s, const char *e, bool *any)
{
    *any = false;
    const char *q = s;
    while (q < e) {
        while (q < e && is_ws(*q))
            q++;
        const char *ns = q;
        while (q < e && !is_ws(*q))
            q++;
        const char *ne = q;
        if (ne - ns < 2 || ne[-1] != ':')
            continue;
        while (q < e && is_ws(*q))
            q++;
        const char *ve = hex_token(q, e);
        if (!ve)
            continue;
        char where[32];
        snprintf(where, sizeof where, "line %zu", t->lineno);
        if (add_register(t->p, ns, (size_t)(ne - 1 - ns), q, (size_t)(ve - q), where))
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
    if (!colon || s == e || is_ws(*s))
        return SYMD_OK;
    const char *v = colon + 1, *ve = e;
    trim(&v, &ve);
    size_t kl = (size_t)(colon - s);
    if ((kl == 14 && memcmp(s, "Crashed Thread", 14) == 0) ||
        (kl == 19 && memcmp(s, "Triggered by Thread", 19) == 0)) {
        uint64_t n;
        if (t->crashed_number < 0 && dec_parse(v, digits_end(v, ve), 999999999, &n))
            t->crashed_number = (long)n;
        return SYMD_OK;
    }
    if (kl == 4 && memcmp(s, "Path", 4) == 0 && !t->app_path)
        return set_str(t->p, &t->app_path, v, (size_t)(ve - v));
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
                    trim(&v, &ve);
                }
            }
        }
        if (set_str(t->p, dst, v, (size_t)(ve - v)))
            return t->p->err->kind;
        if (dst == &t->p->r->exception_type) { /* "EXC_CRASH (SIGABRT)" */
            const char *o = memchr(v, '(', (size_t)(ve - v));
            if (o && ve[-1] == ')' && ve - 1 > o + 1 &&
                set_str(t->p, &t->p->r->exception_signal, o + 1, (size_t)(ve - 1 - (o + 1))))
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
    trim(&s, &e);
    if (s == e) { /* a blank line ends frames, registers and images */
        if (t->st != ST_HEADER)
            t->st = ST_NONE;
        return SYMD_OK;
    }
    long num;
    const char *after = thread_prefix(ls, le, &num);
    bool section = false;
    if (after) {
        if (starts(after, le, " name:")) {
            section = true;
            t->have_pending = true;
            t->pending_number = num;
            free(t->pending_name);
            free(t->pending_queue);
            t->pending_name = t->pending_queue = NULL;
            if (name_or_queue(t, after + 6, le, &t->pending_name, &t->pending_queue))
                return t->p->err->kind;
            t->st = ST_NONE;
        } else if (starts(after, le, " crashed with ")) {
            section = true; /* only the first state block is kept */
            t->st = t->p->r->nregisters ? ST_NONE : ST_REGS;
        } else {
            bool crashed = starts(after, le, " Crashed");
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
    } else if (starts(ls, le, "Binary Images:") || starts(ls, le, "Binary images:")) {
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
        if (is_digit(*s))
            return parse_frame(t, s, e);
        t->st = ST_NONE;
        return SYMD_OK;
    case ST_IMAGES:
        if (starts(s, e, "0x") || starts(s, e, "0X"))
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
static symd_status parse_text(cp *p, const char *body, size_t n, size_t first_line)
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
    if (set_str(p, &r->text_header, body, header_end))
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
    return resolve_text_images(p);
}

/* ---- .ips JSON body ----------------------------------------------------------- */

typedef struct {
    cp *p;
    char path[96]; /* "threads[3].frames[7]", for messages */
} jp;

static symd_status jfail(jp *j, symd_status kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static symd_status jfail(jp *j, symd_status kind, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return symd_fail(j->p->err, kind, "%s%s%s", j->path, j->path[0] ? ": " : "", msg);
}

/* obj[key] as a string into *dst when present; absent or null is fine,
 * another type or a string over CRASH_MAX_LINE is not. */
static symd_status jstr(jp *j, json_t *obj, const char *key, char **dst)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return SYMD_OK;
    if (!json_is_string(v))
        return jfail(j, SYMD_E_CORRUPT, "%s must be a string", key);
    size_t n = json_string_length(v);
    if (n > CRASH_MAX_LINE)
        return jfail(j, SYMD_E_TOO_LARGE, "%s is longer than %d bytes", key, CRASH_MAX_LINE);
    return set_str(j->p, dst, json_string_value(v), n);
}

/* obj[key] as a non-negative integer; *has false when absent or null. */
static symd_status juint(jp *j, json_t *obj, const char *key, bool *has, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    *has = false;
    if (!v || json_is_null(v))
        return SYMD_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return jfail(j, SYMD_E_CORRUPT, "%s must be a non-negative integer", key);
    *has = true;
    *out = (uint64_t)json_integer_value(v);
    return SYMD_OK;
}

static symd_status ips_images(jp *j, json_t *arr, const char *proc_path)
{
    crash_report *r = j->p->r;
    if (!arr)
        return SYMD_OK;
    if (!json_is_array(arr))
        return jfail(j, SYMD_E_CORRUPT, "usedImages must be an array");
    size_t n = json_array_size(arr);
    if (n > CRASH_MAX_IMAGES)
        return jfail(j, SYMD_E_TOO_LARGE, "more than %d usedImages", CRASH_MAX_IMAGES);
    if (n && !(r->images = calloc(n, sizeof *r->images)))
        return nomem(j->p);
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        crash_image *im = &r->images[i];
        r->nimages = i + 1;
        snprintf(j->path, sizeof j->path, "usedImages[%zu]", i);
        if (!json_is_object(o))
            return jfail(j, SYMD_E_CORRUPT, "must be an object");
        bool has_base, has_size;
        uint64_t base = 0, size = 0;
        if (juint(j, o, "base", &has_base, &base) || juint(j, o, "size", &has_size, &size) ||
            jstr(j, o, "name", &im->name) || jstr(j, o, "path", &im->path) ||
            jstr(j, o, "arch", &im->arch) || jstr(j, o, "CFBundleIdentifier", &im->bundle_id) ||
            jstr(j, o, "CFBundleShortVersionString", &im->version))
            return j->p->err->kind;
        im->load_address = base;
        if (has_size && size > 0) {
            if (!u64_add(base, size - 1, &im->end_address))
                return jfail(j, SYMD_E_CORRUPT, "base + size passes 2^64");
            im->has_end = true;
        }
        char *u = NULL;
        if (jstr(j, o, "uuid", &u))
            return j->p->err->kind;
        if (u) {
            bool ok = uuid_parse(u, im->uuid);
            free(u);
            if (!ok)
                return jfail(j, SYMD_E_CORRUPT, "uuid is not a UUID");
            im->has_uuid = true;
        }
        if (im->path && proc_path && strcmp(im->path, proc_path) == 0)
            im->is_app = true;
    }
    j->path[0] = 0;
    return SYMD_OK;
}

static symd_status ips_frame(jp *j, json_t *o, crash_frame *f)
{
    crash_report *r = j->p->r;
    f->image = -1;
    if (!json_is_object(o))
        return jfail(j, SYMD_E_CORRUPT, "must be an object");
    bool has_idx, has_off, has;
    uint64_t idx = 0, off = 0, v;
    json_t *ji = json_object_get(o, "imageIndex"), *jo = json_object_get(o, "imageOffset");
    if ((ji && json_is_integer(ji) && json_integer_value(ji) < 0) ||
        (jo && json_is_integer(jo) && json_integer_value(jo) < 0))
        return jfail(j, SYMD_E_CORRUPT, "negative %s", ji && json_is_integer(ji) &&
                     json_integer_value(ji) < 0 ? "imageIndex" : "imageOffset");
    if (juint(j, o, "imageIndex", &has_idx, &idx) || juint(j, o, "imageOffset", &has_off, &off))
        return j->p->err->kind;
    if (!has_idx || !has_off)
        return jfail(j, SYMD_E_CORRUPT, "%s is required", has_idx ? "imageOffset" : "imageIndex");
    if (idx >= r->nimages)
        return jfail(j, SYMD_E_CORRUPT, "imageIndex %" PRIu64 " is past usedImages (%zu)", idx,
                     r->nimages);
    const crash_image *im = &r->images[idx];
    f->image = (long)idx;
    f->has_load = true;
    f->load_address = im->load_address;
    if (!u64_add(im->load_address, off, &f->address))
        return jfail(j, SYMD_E_CORRUPT, "base + imageOffset passes 2^64");
    if (im->name && set_str(j->p, &f->image_name, im->name, strlen(im->name)))
        return j->p->err->kind;
    if (jstr(j, o, "symbol", &f->symbol) || jstr(j, o, "sourceFile", &f->file) ||
        juint(j, o, "symbolLocation", &f->has_symbol_offset, &f->symbol_offset) ||
        juint(j, o, "sourceLine", &has, &v))
        return j->p->err->kind;
    if (has) {
        if (v > UINT32_MAX)
            return jfail(j, SYMD_E_CORRUPT, "sourceLine out of range");
        f->line = (uint32_t)v;
    }
    return SYMD_OK;
}

static symd_status ips_threads(jp *j, json_t *arr)
{
    crash_report *r = j->p->r;
    if (!json_is_array(arr))
        return jfail(j, SYMD_E_CORRUPT, "threads must be an array");
    size_t n = json_array_size(arr);
    if (n > CRASH_MAX_THREADS)
        return jfail(j, SYMD_E_TOO_LARGE, "more than %d threads", CRASH_MAX_THREADS);
    if (n && !(r->threads = calloc(n, sizeof *r->threads)))
        return nomem(j->p);
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        crash_thread *th = &r->threads[i];
        r->nthreads = i + 1;
        th->number = (long)i;
        snprintf(j->path, sizeof j->path, "threads[%zu]", i);
        if (!json_is_object(o))
            return jfail(j, SYMD_E_CORRUPT, "must be an object");
        if (jstr(j, o, "name", &th->name) || jstr(j, o, "queue", &th->queue))
            return j->p->err->kind;
        th->crashed = json_is_true(json_object_get(o, "triggered"));
        json_t *fr = json_object_get(o, "frames");
        if (!fr || json_is_null(fr))
            continue;
        if (!json_is_array(fr))
            return jfail(j, SYMD_E_CORRUPT, "frames must be an array");
        size_t nf = json_array_size(fr);
        if (nf > CRASH_MAX_FRAMES - r->total_frames)
            return jfail(j, SYMD_E_TOO_LARGE, "more than %d frames", CRASH_MAX_FRAMES);
        if (nf && !(th->frames = calloc(nf, sizeof *th->frames)))
            return nomem(j->p);
        for (size_t k = 0; k < nf; k++) {
            th->nframes = k + 1;
            r->total_frames++;
            snprintf(j->path, sizeof j->path, "threads[%zu].frames[%zu]", i, k);
            if (ips_frame(j, json_array_get(fr, k), &th->frames[k]))
                return j->p->err->kind;
        }
    }
    j->path[0] = 0;
    return SYMD_OK;
}

/* threadState of the faulting thread: x[0..28] as "x0".., then the named
 * registers Apple writes (ARM and x86), then any other {"value": n}. */
static symd_status ips_registers(jp *j, json_t *ts, size_t ti)
{
    static const char *const named[] = {
        "fp", "lr", "sp", "pc", "cpsr", "far", "esr",
        "rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "rsp", "r8", "r9", "r10",
        "r11", "r12", "r13", "r14", "r15", "rip", "rflags", "cr2",
    };
    if (!ts || json_is_null(ts))
        return SYMD_OK;
    snprintf(j->path, sizeof j->path, "threads[%zu].threadState", ti);
    if (!json_is_object(ts))
        return jfail(j, SYMD_E_CORRUPT, "must be an object");
    json_t *fl = json_object_get(ts, "flavor");
    bool w32 = json_is_string(fl) && !strstr(json_string_value(fl), "64") &&
               !strstr(json_string_value(fl), "x86_THREAD_STATE");
    char name[32], val[24];
    json_t *x = json_object_get(ts, "x");
    if (x && !json_is_array(x))
        return jfail(j, SYMD_E_CORRUPT, "x must be an array");
    for (size_t i = 0; x && i < json_array_size(x); i++) {
        json_t *v = json_object_get(json_array_get(x, i), "value");
        if (!json_is_integer(v))
            return jfail(j, SYMD_E_CORRUPT, "x[%zu].value must be an integer", i);
        snprintf(name, sizeof name, "x%zu", i);
        int vl = snprintf(val, sizeof val, w32 ? "0x%08" PRIx64 : "0x%016" PRIx64,
                          (uint64_t)json_integer_value(v));
        if (add_register(j->p, name, strlen(name), val, (size_t)vl, j->path))
            return j->p->err->kind;
    }
    const char *key;
    json_t *o;
    for (int pass = 0; pass < 2; pass++) {
        size_t nn = pass ? 1 : sizeof named / sizeof named[0];
        for (size_t i = 0; i < nn; i++) {
            json_object_foreach(ts, key, o) {
                bool known = false;
                for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
                    known |= strcmp(key, named[k]) == 0;
                if (pass ? known || strcmp(key, "x") == 0 : strcmp(key, named[i]) != 0)
                    continue;
                json_t *v = json_object_get(o, "value");
                if (!json_is_object(o) || !v)
                    continue;
                if (!json_is_integer(v))
                    return jfail(j, SYMD_E_CORRUPT, "%s.value must be an integer", key);
                if (strlen(key) > 16)
                    continue;
                int vl = snprintf(val, sizeof val, w32 ? "0x%08" PRIx64 : "0x%016" PRIx64,
                                  (uint64_t)json_integer_value(v));
                if (add_register(j->p, key, strlen(key), val, (size_t)vl, j->path))
                    return j->p->err->kind;
            }
        }
    }
    j->path[0] = 0;
    return SYMD_OK;
}

static symd_status ips_exception(jp *j, json_t *root)
{
    crash_report *r = j->p->r;
    json_t *ex = json_object_get(root, "exception");
    if (ex && json_is_object(ex)) {
        snprintf(j->path, sizeof j->path, "exception");
        if (jstr(j, ex, "type", &r->exception_type) || jstr(j, ex, "signal", &r->exception_signal) ||
            jstr(j, ex, "codes", &r->exception_codes))
            return j->p->err->kind;
        json_t *raw = json_object_get(ex, "rawCodes");
        if (!r->exception_codes && json_is_array(raw) && json_array_size(raw) > 0 &&
            json_array_size(raw) <= 16) {
            char buf[16 * 21];
            size_t k = 0;
            for (size_t i = 0; i < json_array_size(raw); i++) {
                json_t *c = json_array_get(raw, i);
                if (!json_is_integer(c))
                    return jfail(j, SYMD_E_CORRUPT, "rawCodes[%zu] must be an integer", i);
                k += (size_t)snprintf(buf + k, sizeof buf - k, "%s0x%016" PRIx64, i ? ", " : "",
                                      (uint64_t)json_integer_value(c));
            }
            if (set_str(j->p, &r->exception_codes, buf, k))
                return j->p->err->kind;
        }
    }
    json_t *te = json_object_get(root, "termination");
    if (te && json_is_object(te)) {
        snprintf(j->path, sizeof j->path, "termination");
        char *ns = NULL, *ind = NULL;
        bool has_code;
        uint64_t code = 0;
        symd_status st = SYMD_OK;
        if (jstr(j, te, "namespace", &ns) || jstr(j, te, "indicator", &ind) ||
            juint(j, te, "code", &has_code, &code))
            st = j->p->err->kind;
        json_t *reasons = json_object_get(te, "reasons");
        json_t *r0 = json_is_array(reasons) ? json_array_get(reasons, 0) : NULL;
        const char *rs = json_is_string(r0) ? json_string_value(r0) : NULL;
        if (!st && (ns || has_code || ind || rs)) {
            size_t cap = (ns ? strlen(ns) : 0) + (ind ? strlen(ind) : 0) +
                         (rs ? strlen(rs) : 0) + 64;
            char *b = malloc(cap);
            if (!b) {
                st = nomem(j->p);
            } else {
                size_t k = (size_t)snprintf(b, cap, "Namespace %s", ns ? ns : "?");
                if (has_code)
                    k += (size_t)snprintf(b + k, cap - k, ", Code 0x%" PRIx64, code);
                if (ind)
                    k += (size_t)snprintf(b + k, cap - k, " %s", ind);
                if (rs)
                    k += (size_t)snprintf(b + k, cap - k, ", %s", rs);
                /* one line: the reason may hold newlines */
                for (size_t i = 0; i < k; i++)
                    if (b[i] == '\n' || b[i] == '\r')
                        b[i] = ' ';
                free(r->termination);
                r->termination = b;
            }
        }
        free(ns);
        free(ind);
        if (st)
            return st;
    }
    j->path[0] = 0;
    return SYMD_OK;
}

static symd_status ips_body(cp *p, json_t *root, json_t *hdr)
{
    crash_report *r = p->r;
    jp j = {p, ""};
    if (!json_is_object(root))
        return symd_fail(p->err, SYMD_E_CORRUPT, "line 2: the .ips body must be a JSON object");
    json_t *threads = json_object_get(root, "threads");
    if (!threads)
        return symd_fail(p->err, SYMD_E_NOT_CRASH_REPORT,
                         "an .ips of bug_type %d without threads is not a crash report",
                         r->bug_type);
    char *proc_path = NULL;
    symd_status st = SYMD_OK;
    if (jstr(&j, root, "procName", &r->process) || jstr(&j, root, "modelCode", &r->hardware_model) ||
        jstr(&j, root, "incident", &r->incident_id) || jstr(&j, root, "cpuType", &r->code_type) ||
        jstr(&j, root, "captureTime", &r->date) || jstr(&j, root, "procPath", &proc_path))
        return p->err->kind;
    json_t *bi = json_object_get(root, "bundleInfo");
    if (json_is_object(bi)) {
        char *sv = NULL, *bv = NULL;
        snprintf(j.path, sizeof j.path, "bundleInfo");
        if (jstr(&j, bi, "CFBundleIdentifier", &r->bundle_id) ||
            jstr(&j, bi, "CFBundleShortVersionString", &sv) || jstr(&j, bi, "CFBundleVersion", &bv))
            st = p->err->kind;
        if (!st && (sv || bv)) {
            size_t cap = (sv ? strlen(sv) : 0) + (bv ? strlen(bv) : 0) + 4;
            char *b = malloc(cap);
            if (!b)
                st = nomem(p);
            else if (sv && bv)
                snprintf(b, cap, "%s (%s)", sv, bv);
            else
                snprintf(b, cap, "%s", sv ? sv : bv);
            r->app_version = b;
        }
        free(sv);
        free(bv);
        j.path[0] = 0;
    }
    json_t *ov = json_object_get(root, "osVersion");
    if (!st && json_is_object(ov)) {
        char *train = NULL, *build = NULL;
        snprintf(j.path, sizeof j.path, "osVersion");
        if (jstr(&j, ov, "train", &train) || jstr(&j, ov, "build", &build))
            st = p->err->kind;
        if (!st && train) {
            size_t cap = strlen(train) + (build ? strlen(build) : 0) + 4;
            char *b = malloc(cap);
            if (!b)
                st = nomem(p);
            else if (build)
                snprintf(b, cap, "%s (%s)", train, build);
            else
                snprintf(b, cap, "%s", train);
            r->os_version = b;
        }
        free(train);
        free(build);
        j.path[0] = 0;
    }
    /* What the body lacks, the header may say. */
    if (!st && ((!r->bundle_id && jstr(&j, hdr, "bundleID", &r->bundle_id)) ||
                (!r->app_version && jstr(&j, hdr, "app_version", &r->app_version)) ||
                (!r->os_version && jstr(&j, hdr, "os_version", &r->os_version)) ||
                (!r->incident_id && jstr(&j, hdr, "incident_id", &r->incident_id)) ||
                (!r->process && jstr(&j, hdr, "name", &r->process))))
        st = p->err->kind;
    if (!st)
        st = ips_images(&j, json_object_get(root, "usedImages"), proc_path);
    free(proc_path);
    if (!st)
        st = ips_threads(&j, threads);
    if (!st)
        st = ips_exception(&j, root);
    if (st)
        return st;
    r->crashed_thread = -1;
    json_t *ft = json_object_get(root, "faultingThread");
    if (ft && !json_is_null(ft)) {
        if (!json_is_integer(ft) || json_integer_value(ft) < 0 ||
            (uint64_t)json_integer_value(ft) >= r->nthreads)
            return symd_fail(p->err, SYMD_E_CORRUPT,
                             "faultingThread is not an index into threads (%zu)", r->nthreads);
        r->crashed_thread = (long)json_integer_value(ft);
        r->threads[r->crashed_thread].crashed = true;
    }
    for (size_t i = 0; i < r->nthreads && r->crashed_thread < 0; i++)
        if (r->threads[i].crashed)
            r->crashed_thread = (long)i;
    if (r->crashed_thread >= 0)
        return ips_registers(&j, json_object_get(json_array_get(threads, (size_t)r->crashed_thread),
                                                 "threadState"),
                             (size_t)r->crashed_thread);
    return SYMD_OK;
}

/* ---- detection and entry ---------------------------------------------------- */

/* Keys one of which a text report starts with. */
static bool looks_like_text_report(const char *s, const char *e)
{
    static const char *const first[] = {
        "Incident Identifier:", "CrashReporter Key:", "Hardware Model:", "Process:",
        "Path:", "Identifier:", "Date/Time:", "OS Version:", "Report Version:",
        "Exception Type:", "Code Type:", "Version:",
    };
    for (size_t i = 0; i < sizeof first / sizeof first[0]; i++)
        if (starts(s, e, first[i]))
            return true;
    return false;
}

static symd_status parse_any(cp *p, const char *s, size_t len)
{
    crash_report *r = p->r;
    const char *e = s + len, *q = s;
    if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
        q += 3;
    size_t skipped = 0; /* blank lines before the first one */
    for (;;) {
        const char *c = q;
        while (c < e && (is_ws(*c) || *c == '\r'))
            c++;
        if (c < e && *c == '\n') {
            q = c + 1;
            skipped++;
            continue;
        }
        q = c;
        break;
    }
    if (q < e && *q == '{') {
        const char *nl = memchr(q, '\n', (size_t)(e - q));
        const char *he = nl ? nl : e;
        if ((size_t)(he - q) > CRASH_MAX_LINE)
            return symd_fail(p->err, SYMD_E_TOO_LARGE, "line %zu: longer than %d bytes",
                             skipped + 1, CRASH_MAX_LINE);
        json_error_t je;
        json_t *hdr = json_loadb(q, (size_t)(he - q), 0, &je);
        json_t *bt = hdr ? json_object_get(hdr, "bug_type") : NULL;
        if (!json_is_object(hdr) || !bt) {
            json_decref(hdr);
            return symd_fail(p->err, SYMD_E_NOT_CRASH_REPORT,
                             "a JSON document that is no .ips crash report (no bug_type header "
                             "line)");
        }
        r->format = CRASH_FORMAT_IPS;
        if (json_is_integer(bt) && json_integer_value(bt) >= 0 && json_integer_value(bt) < 100000)
            r->bug_type = (int)json_integer_value(bt);
        else if (json_is_string(bt) && json_string_length(bt) < 6)
            r->bug_type = atoi(json_string_value(bt));
        symd_status st = set_str(p, &r->header_json, q, (size_t)(he - q));
        if (st) {
            json_decref(hdr);
            return st;
        }
        const char *b = nl ? nl + 1 : e, *bs = b;
        while (bs < e && (is_ws(*bs) || *bs == '\r' || *bs == '\n'))
            bs++;
        if (bs == e) {
            json_decref(hdr);
            return symd_fail(p->err, SYMD_E_CORRUPT, "line %zu: the .ips report has no body",
                             skipped + 2);
        }
        if (*bs == '{') {
            json_t *root = json_loadb(b, (size_t)(e - b), 0, &je);
            if (!root) {
                json_decref(hdr);
                return symd_fail(p->err, SYMD_E_CORRUPT, "line %zu column %d: %s",
                                 skipped + 1 + (size_t)je.line, je.column, je.text);
            }
            st = ips_body(p, root, hdr);
            json_decref(root);
        } else {
            st = parse_text(p, b, (size_t)(e - b), skipped + 2);
        }
        json_decref(hdr);
        return st;
    }
    const char *le = memchr(q, '\n', (size_t)(e - q));
    if (!looks_like_text_report(q, le ? le : e))
        return symd_fail(p->err, SYMD_E_NOT_CRASH_REPORT,
                         "not a crash report: neither a .ips header line nor a text report header");
    r->format = CRASH_FORMAT_CRASH;
    return parse_text(p, q, (size_t)(e - q), skipped + 1);
}

symd_status crash_parse(const uint8_t *buf, size_t len, crash_report *r, symd_err *err)
{
    memset(r, 0, sizeof *r);
    r->crashed_thread = -1;
    symd_err local;
    if (!err) {
        symd_err_clear(&local);
        err = &local;
    }
    cp p = {r, err, 0, 0, 0, 0};
    if (!buf)
        len = 0;
    symd_status st = parse_any(&p, (const char *)buf, len);
    if (st)
        crash_report_free(r);
    return st;
}

static void free_frames(crash_thread *t)
{
    for (size_t k = 0; k < t->nframes; k++) {
        free(t->frames[k].image_name);
        free(t->frames[k].symbol);
        free(t->frames[k].file);
    }
    free(t->frames);
}

void crash_report_free(crash_report *r)
{
    if (!r)
        return;
    char **strs[] = {&r->header_json, &r->process, &r->bundle_id, &r->app_version,
                     &r->os_version, &r->hardware_model, &r->incident_id, &r->code_type,
                     &r->report_version, &r->date, &r->exception_type, &r->exception_signal,
                     &r->exception_codes, &r->termination, &r->text_header};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        free(*strs[i]);
    for (size_t i = 0; i < r->nthreads; i++) {
        free(r->threads[i].name);
        free(r->threads[i].queue);
        free_frames(&r->threads[i]);
    }
    free(r->threads);
    for (size_t i = 0; i < r->nimages; i++) {
        crash_image *im = &r->images[i];
        free(im->name);
        free(im->arch);
        free(im->bundle_id);
        free(im->version);
        free(im->path);
    }
    free(r->images);
    for (size_t i = 0; i < r->nregisters; i++) {
        free(r->registers[i].name);
        free(r->registers[i].value);
    }
    free(r->registers);
    memset(r, 0, sizeof *r);
    r->crashed_thread = -1;
}

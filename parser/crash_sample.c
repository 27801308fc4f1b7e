/* macOS `sample` output, spindump text (incl. Sleep Wake failure reports),
 * microstackshot resource reports (the text body of .ips 145/202/206) and the
 * legacy text stackshot (.ips 188) into the crash model.
 *
 * Read line by line (a line is at most CRASH_MAX_LINE bytes; one that is not
 * valid UTF-8 is skipped with a warning). Call trees: a node's depth comes
 * from the column of its sample count (after sample's "+ ! : |" glyphs and the
 * '*' spindump puts before kernel frames), matched against a stack of the
 * open ancestors' columns: no recursion, O(length) per line. A node without
 * an address ("<User mode>", "<patched truncated backtrace>") is a state, not
 * a frame: its children take its place in the tree. Deeper than
 * CRASH_MAX_DEPTH, nodes are skipped with one warning per thread.
 *
 * Where each part lands, for rendering:
 *   - text_header: every line before the first section (blank lines too);
 *   - threads: "Heaviest stack for ...:" (role HEAVIEST, a chain: depth =
 *     position), each sample / spindump thread and each microstackshot
 *     process tree (is_tree); 188 threads (kernel: then user: addresses,
 *     innermost first, not a tree). title is the heading as written, without
 *     its indentation, followed ('\n'-separated) by the lines that stand
 *     between the heading and the first frame (spindump's "<thread QoS ...>",
 *     188's attributes); NULL for a microstackshot tree (it has no heading);
 *   - processes: spindump "Process:" / microstackshot "Powerstats for:" /
 *     188 "Process N ..." sections; their threads and Binary Images carry the
 *     process index, and the heaviest stack the target process's;
 *   - blocks: every other non-blank line, as written, at (CRASH_AT_THREAD, t)
 *     before the thread that follows it (process headers, "Call graph:",
 *     188 lines after a thread's stacks), CRASH_AT_IMAGES for what stands
 *     before a sample's Binary Images ("Total number in stack", "Sort by top
 *     of stack"), CRASH_AT_END for what follows the last section. A process's
 *     Binary Images are rendered after its last thread. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/hex.h"
#include "../util/util.h"
#include "crash_int.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define PREFIX_LINES 256    /* how far detection looks */
#define PREFIX_BYTES 65536
#define TITLE_LINES 16      /* lines a thread heading carries at most */
#define LEVEL_STEP 2        /* columns per tree level (sample, spindump) */

typedef enum { M_NONE = -1, M_SAMPLE, M_SPINDUMP, M_STACKSHOT } smode;

typedef enum {
    S_HEADER,   /* before the first section */
    S_NONE,     /* between sections: lines are kept as text */
    S_TREE,     /* a call tree (sample's "Call graph:", a spindump thread) */
    S_HEAVIEST, /* "Heaviest stack for ...:" */
    S_PROCESS,  /* the key: value lines of a process section */
    S_IMAGES,   /* Binary Images lines */
    S_THREAD188, /* a legacy stackshot thread */
    S_KEXTSTAT  /* a full spindump's trailing "Kextstat:" table */
} sstate;

typedef struct {
    size_t col;           /* column of the node's count */
    uint32_t child_depth; /* the depth its children get */
} level;

typedef struct {
    cp *p;
    smode mode;
    sstate st;
    size_t lineno;
    long proc;          /* process being read, -1 before any */
    long nth_in_proc;   /* threads read so far in proc: the next thread's number */
    long thread;        /* thread being read, -1 when none */
    bool thread_frames; /* the thread being read has frames */
    size_t title_lines;
    bool count_given;   /* its heading said how many samples */
    level *stack;       /* open ancestors of the next tree node */
    size_t nstack, cap_stack;
    uint32_t chain;     /* the next depth of a heaviest stack */
    size_t skipped, skipped_line; /* nodes past CRASH_MAX_DEPTH in this thread */
    bool in_header;
    char *hdr;          /* text_header being collected */
    size_t hdr_len, hdr_cap;
    char *pend;         /* kept lines waiting for their place */
    size_t pend_len, pend_cap;
    char *app_path;     /* header "Path:" */
    bool has_pid;       /* header "PID:" / sample's "Process: name [pid]" */
    uint64_t pid;
    bool *plus;         /* per image: sample's '+' (the app) */
    size_t cap_plus;
    const char *raw_s, *raw_e; /* the line being read (no CR, no newline) */
} sp;

/* ---- small text helpers --------------------------------------------------- */

static bool eq(const char *s, const char *e, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(e - s) == n && memcmp(s, lit, n) == 0;
}

static bool ends_with(const char *s, const char *e, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(e - s) >= n && memcmp(e - n, lit, n) == 0;
}

/* The last occurrence of lit in [s, e), or NULL. */
static const char *find_last(const char *s, const char *e, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(e - s) < n)
        return NULL;
    for (const char *c = e - n + 1; c > s;) {
        c--;
        if (*c == lit[0] && memcmp(c, lit, n) == 0)
            return c;
    }
    return NULL;
}

static const char *find_first(const char *s, const char *e, const char *lit)
{
    size_t n = strlen(lit);
    for (const char *c = s; (size_t)(e - c) >= n; c++)
        if (*c == lit[0] && memcmp(c, lit, n) == 0)
            return c;
    return NULL;
}

static bool is_unknown(const char *s, const char *e) { return s == e || eq(s, e, "???"); }

/* "Process 12 info:", "Process 12 launchd threads:", "Process 12 binary
 * images:" (legacy stackshot): which one (0 none, 1 info, 2 threads, 3
 * images), the pid and, for threads, the name between. */
static int stackshot_heading(const char *s, const char *e, uint64_t *pid, const char **ns,
                             const char **ne)
{
    if (!cp_starts(s, e, "Process "))
        return 0;
    const char *d = s + 8, *de = cp_digits_end(d, e);
    if (!cp_dec_parse(d, de, 0x7fffffff, pid))
        return 0;
    if (eq(de, e, " info:"))
        return 1;
    if (eq(de, e, " binary images:"))
        return 3;
    if (de < e && *de == ' ' && ends_with(de, e, " threads:")) {
        *ns = de + 1;
        *ne = e - 9;
        if (*ne < *ns)
            *ne = *ns;
        return 2;
    }
    return 0;
}

/* "thread 0x1f TH_WAIT ..." at column 0 (legacy stackshot). */
static bool stackshot_thread(const char *s, const char *e)
{
    if (!cp_starts(s, e, "thread 0x"))
        return false;
    const char *q = s + 9;
    while (q < e && cp_is_hex(*q))
        q++;
    return q > s + 9 && (q == e || cp_is_ws(*q));
}

/* ---- detection --------------------------------------------------------------- */

static bool looks_like_node(const char *ls, const char *le);

/* Which form the text is, from its first lines; M_NONE when none. *bare:
 * no heading says so, but the text starts with call-tree lines (a pasted
 * fragment of a tree: sample's "(in Image)" nodes, else spindump's). */
static smode classify(const char *s, size_t n, bool *bare)
{
    size_t sample_nodes = 0, other_nodes = 0;
    int first = -1; /* whether the first non-blank line is a tree node */
    const char *end = s + (n < PREFIX_BYTES ? n : PREFIX_BYTES);
    bool sample = false, spin = false, shot = false;
    const char *q = s;
    for (int i = 0; i < PREFIX_LINES && q < end; i++) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        const char *le = nl ? nl : end, *ls = q;
        q = nl ? nl + 1 : end;
        while (le > ls && (le[-1] == '\r' || cp_is_ws(le[-1])))
            le--;
        if (cp_starts(ls, le, "Analysis of sampling ") || cp_starts(ls, le, "Sampling process ") ||
            eq(ls, le, "Call graph:"))
            sample = true;
        else if (cp_starts(ls, le, "Data Source:") || cp_starts(ls, le, "Heaviest stack for ") ||
                 cp_starts(ls, le, "Powerstats for:"))
            spin = true;
        else {
            uint64_t pid;
            const char *a, *b;
            if (stackshot_heading(ls, le, &pid, &a, &b) || stackshot_thread(ls, le))
                shot = true;
            const char *t = ls, *te = le;
            cp_trim(&t, &te);
            if (t > ls && cp_starts(t, te, "Thread 0x") && find_first(t, te, " sample"))
                spin = true;
            bool node = looks_like_node(ls, le);
            if (node && find_first(ls, le, "  (in "))
                sample_nodes++;
            else if (node)
                other_nodes++;
            if (first < 0 && ls < le)
                first = node;
        }
    }
    *bare = false;
    if (sample || spin || shot)
        return sample ? M_SAMPLE : spin ? M_SPINDUMP : M_STACKSHOT;
    *bare = first == 1;
    return !*bare ? M_NONE : sample_nodes >= other_nodes ? M_SAMPLE : M_SPINDUMP;
}

bool crash_looks_like_sample(const char *s, size_t n)
{
    bool bare;
    return s && classify(s, n, &bare) != M_NONE;
}

/* ---- kept text --------------------------------------------------------------- */

static symd_status buf_line(sp *t, char **buf, size_t *len, size_t *cap, const char *s,
                            const char *e)
{
    size_t n = (size_t)(e - s);
    if (!array_grow((void **)buf, cap, *len + n + 2, 1))
        return cp_nomem(t->p);
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[(*len)++] = '\n';
    (*buf)[*len] = 0;
    return SYMD_OK;
}

/* A line the model does not hold: kept until we know where it stands. */
static symd_status keep(sp *t, const char *s, const char *e)
{
    return buf_line(t, &t->pend, &t->pend_len, &t->pend_cap, s, e);
}

static symd_status flush(sp *t, crash_place at, size_t thread)
{
    if (!t->pend_len)
        return SYMD_OK;
    symd_status st = cp_add_verbatim(t->p, at, thread, t->pend, t->pend_len - 1);
    t->pend_len = 0;
    return st;
}

static symd_status end_header(sp *t)
{
    if (!t->in_header)
        return SYMD_OK;
    t->in_header = false;
    return cp_set_str(t->p, &t->p->r->text_header, t->hdr ? t->hdr : "", t->hdr_len);
}

/* ---- threads ------------------------------------------------------------------- */

static symd_status end_thread(sp *t)
{
    symd_status st = SYMD_OK;
    if (t->thread >= 0 && t->skipped)
        st = cp_warn_line(t->p, t->skipped_line,
                          "call tree deeper than %d levels: %zu deeper frames skipped",
                          CRASH_MAX_DEPTH, t->skipped);
    t->thread = -1;
    t->skipped = 0;
    t->nstack = 0;
    return st;
}

/* A new thread (of the current process) after the kept lines before it. */
static symd_status new_thread(sp *t, crash_thread_role role, const char *ts, const char *te,
                              crash_thread **out)
{
    symd_status st = end_thread(t);
    if (!st)
        st = end_header(t);
    if (!st)
        st = flush(t, CRASH_AT_THREAD, t->p->r->nthreads);
    char where[32];
    snprintf(where, sizeof where, "line %zu", t->lineno);
    crash_thread *th;
    if (st || (st = cp_new_thread(t->p, &th, where)))
        return st;
    th->is_tree = t->mode != M_STACKSHOT || role == CRASH_THREAD_HEAVIEST;
    th->role = role;
    th->process = role == CRASH_THREAD_HEAVIEST ? -1 : t->proc;
    th->number = role == CRASH_THREAD_HEAVIEST ? -1 : t->nth_in_proc++;
    t->thread = (long)(t->p->r->nthreads - 1);
    t->thread_frames = false;
    t->title_lines = ts ? 1 : 0;
    t->count_given = false;
    t->chain = 0;
    if (ts && (st = cp_set_str(t->p, &th->title, ts, (size_t)(te - ts))))
        return st;
    *out = th;
    return SYMD_OK;
}

/* Appends a line to the heading of the thread being read (state and
 * attribute lines between a heading and its first frame). */
static symd_status title_line(sp *t, const char *s, const char *e)
{
    crash_thread *th = &t->p->r->threads[t->thread];
    size_t old = th->title ? strlen(th->title) : 0, n = (size_t)(e - s);
    char *c = realloc(th->title, old + n + 2);
    if (!c)
        return cp_nomem(t->p);
    if (old)
        c[old++] = '\n';
    memcpy(c + old, s, n);
    c[old + n] = 0;
    th->title = c;
    t->title_lines++;
    return SYMD_OK;
}

/* "Thread_358683: name   DispatchQueue_1: com.apple.main-thread  (serial)"
 * (sample) or "Thread 0x2ca9e    Thread name \"n\"    DispatchQueue \"q\"(1)
 * 49 samples (1-49) ..." (spindump): name, queue and, for spindump, the
 * samples. */
static symd_status thread_heading(sp *t, crash_thread *th, const char *s, const char *e)
{
    cp *p = t->p;
    if (cp_starts(s, e, "Thread_")) {
        const char *q = cp_digits_end(s + 7, e);
        if (q < e && *q == ':') {
            const char *ns = q + 1, *ne = find_first(ns, e, "   ");
            const char *dq = find_first(ns, e, "DispatchQueue_");
            if (!ne || (dq && dq < ne))
                ne = dq ? dq : e;
            cp_trim(&ns, &ne);
            if (ns < ne && cp_set_str(p, &th->name, ns, (size_t)(ne - ns)))
                return p->err->kind;
        }
        const char *dq = find_first(q, e, "DispatchQueue_");
        const char *c = dq ? find_first(dq, e, ": ") : NULL;
        if (c) {
            const char *qs = c + 2, *qe = find_first(qs, e, "  (");
            if (!qe)
                qe = e;
            cp_trim(&qs, &qe);
            if (qs < qe && cp_set_str(p, &th->queue, qs, (size_t)(qe - qs)))
                return p->err->kind;
        }
        return SYMD_OK;
    }
    static const char *const quoted[2] = {"Thread name \"", "DispatchQueue \""};
    for (int i = 0; i < 2; i++) {
        const char *a = find_first(s, e, quoted[i]);
        if (!a)
            continue;
        a += strlen(quoted[i]);
        const char *b = a; /* the closing quote: one followed by a blank, '(' or the end */
        while (b < e && !(*b == '"' && (b + 1 == e || cp_is_ws(b[1]) || b[1] == '(')))
            b++;
        if (b < e && b > a && cp_set_str(p, i ? &th->queue : &th->name, a, (size_t)(b - a)))
            return p->err->kind;
    }
    for (const char *c = s; (c = find_first(c, e, " sample")) != NULL; c++) {
        const char *d = c;
        while (d > s && cp_is_digit(d[-1]))
            d--;
        uint64_t n;
        if (d < c && (d == s || cp_is_ws(d[-1])) && cp_dec_parse(d, c, UINT64_MAX, &n)) {
            th->count = n;
            t->count_given = true;
            break;
        }
    }
    return SYMD_OK;
}

/* ---- frames -------------------------------------------------------------------- */

typedef struct {
    bool has_addr;
    uint64_t addr;
    const char *sym, *syme;  /* NULL when "???" or none */
    bool has_symoff;
    uint64_t symoff;
    const char *img, *imge;  /* NULL when none */
    bool has_imgoff;         /* spindump "(image + offset)" */
    uint64_t imgoff;
    bool has_load;           /* sample "load address 0x.. + 0x.." */
    uint64_t load;
    const char *file, *filee;
    uint32_t line;
    const char *desc_s, *desc_e; /* the name and image part (before "[0x...]") */
} fdesc;

/* "name + 123" at the end of [s, *e): the offset, *e moved before " + ". */
static bool plus_offset(const char *s, const char **e, uint64_t *off)
{
    const char *pl = find_last(s, *e, " + ");
    if (!pl || !cp_dec_parse(pl + 3, *e, UINT64_MAX, off))
        return false;
    *e = pl;
    return true;
}

/* "file.c:12" or "file.swift:31,1" → file and line; false when no line. */
static bool file_line(const char *s, const char *e, fdesc *d)
{
    const char *colon = NULL;
    for (const char *c = e; c > s;)
        if (*--c == ':') {
            colon = c;
            break;
        }
    if (!colon || colon == s)
        return false;
    const char *de = cp_digits_end(colon + 1, e);
    uint64_t ln;
    if (!cp_dec_parse(colon + 1, de, UINT32_MAX, &ln) || (de != e && *de != ','))
        return false;
    d->file = s;
    d->filee = colon;
    d->line = (uint32_t)ln;
    return true;
}

/* "symbol + 1 (file:3 in Image + 123)" (spindump) → d. */
static void spindump_desc(const char *s, const char *e, fdesc *d)
{
    const char *o = cp_open_paren(s, e);
    if (o) {
        const char *is = o + 1, *ie = e - 1;
        d->has_imgoff = plus_offset(is, &ie, &d->imgoff);
        const char *in = find_first(is, ie, " in ");
        if (in) {
            if (!file_line(is, in, d)) {
                d->file = is;
                d->filee = in;
            }
            is = in + 4;
        }
        cp_trim(&is, &ie);
        if (is < ie) {
            d->img = is;
            d->imge = ie;
        }
        e = o;
        cp_trim(&s, &e);
    }
    d->has_symoff = plus_offset(s, &e, &d->symoff);
    cp_trim(&s, &e);
    if (!is_unknown(s, e)) {
        d->sym = s;
        d->syme = e;
    }
}

/* "symbol  (in Image) + 12" or "???  (in Image)  load address 0xL + 0xO"
 * (sample) → d; false when it is not that form. */
static bool sample_desc(const char *s, const char *e, fdesc *d)
{
    const char *in = find_last(s, e, "(in ");
    const char *close = in ? memchr(in, ')', (size_t)(e - in)) : NULL;
    if (!in || !close || (in > s && !cp_is_ws(in[-1])))
        return false;
    for (const char *c = close + 1; c < e; c++) /* the image's own ')' is the last one */
        if (*c == ')')
            close = c;
    const char *is = in + 4, *ie = close;
    cp_trim(&is, &ie);
    if (is < ie) {
        d->img = is;
        d->imge = ie;
    }
    const char *a = close + 1, *ae = e;
    cp_trim(&a, &ae);
    uint64_t off;
    if (cp_starts(a, ae, "+ ") && cp_dec_parse(a + 2, ae, UINT64_MAX, &off)) {
        d->has_symoff = true;
        d->symoff = off;
    } else if (cp_starts(a, ae, "load address ")) {
        const char *l = a + 13, *le = cp_hex_token(l, ae);
        if (le && hex_parse_u64(l, (size_t)(le - l), &d->load)) {
            d->has_load = true;
        }
    }
    const char *ss = s, *se = in;
    cp_trim(&ss, &se);
    if (!is_unknown(ss, se)) {
        d->sym = ss;
        d->syme = se;
    }
    return true;
}

/* A tree node's text after its count: the last "[0x...]" is the address;
 * before it the symbol and image in the tool's form, after it what the model
 * does not hold (spindump's "(running)", sample ranges) or sample's
 * "file:line". */
static void parse_desc(const sp *t, const char *s, const char *e, fdesc *d)
{
    memset(d, 0, sizeof *d);
    const char *head_e = e, *tail = e;
    for (const char *c = e; c > s;) {
        c--;
        if (*c != '[' || e - c < 5 || c[1] != '0' || (c[2] != 'x' && c[2] != 'X'))
            continue;
        const char *h = c + 3;
        while (h < e && cp_is_hex(*h))
            h++;
        if (h < e && *h == ']' && h > c + 3 && h - (c + 3) <= 16 &&
            hex_parse_u64(c + 1, (size_t)(h - (c + 1)), &d->addr)) {
            d->has_addr = true;
            head_e = c;
            tail = h + 1;
            break;
        }
    }
    const char *hs = s;
    cp_trim(&hs, &head_e);
    d->desc_s = hs;
    d->desc_e = head_e;
    if (t->mode != M_SAMPLE || !sample_desc(hs, head_e, d))
        spindump_desc(hs, head_e, d);
    const char *ts = tail, *te = e;
    cp_trim(&ts, &te);
    if (!d->file && ts < te && !memchr(ts, ' ', (size_t)(te - ts)))
        file_line(ts, te, d); /* sample: "  main.m:14" */
}

static symd_status fill_frame(sp *t, crash_frame *f, const fdesc *d, uint64_t count,
                              uint32_t depth)
{
    cp *p = t->p;
    f->address = d->addr;
    f->count = count;
    f->depth = depth;
    if (d->has_addr)
        cp_frame_src(p, f, t->mode == M_SAMPLE ? CRASH_SRC_SAMPLE : CRASH_SRC_SPINDUMP,
                     t->raw_s, t->raw_e, d->desc_s, d->desc_e);
    if (d->sym && cp_set_str(p, &f->symbol, d->sym, (size_t)(d->syme - d->sym)))
        return p->err->kind;
    f->has_symbol_offset = d->has_symoff;
    f->symbol_offset = d->symoff;
    if (d->img && cp_set_str(p, &f->image_name, d->img, (size_t)(d->imge - d->img)))
        return p->err->kind;
    if (d->file && d->filee > d->file &&
        cp_set_str(p, &f->file, d->file, (size_t)(d->filee - d->file)))
        return p->err->kind;
    f->line = d->line;
    if (d->has_load) {
        f->has_load = true;
        f->load_address = d->load;
    } else if (d->has_imgoff && d->img && d->has_addr && d->imgoff <= d->addr) {
        f->has_load = true; /* "(Image + off)": the image starts at address - off */
        f->load_address = d->addr - d->imgoff;
    }
    return SYMD_OK;
}

/* "[glyphs][*]COUNT  text": the count's column, the count and the text. */
static bool tree_line(const char *ls, const char *le, size_t *col, uint64_t *count,
                      const char **ds)
{
    const char *q = ls;
    while (q < le && (cp_is_ws(*q) || *q == '+' || *q == '!' || *q == ':' || *q == '|'))
        q++;
    if (q < le && *q == '*')
        q++;
    const char *de = cp_digits_end(q, le);
    if (de == q || de == le || !cp_is_ws(*de) || !cp_dec_parse(q, de, UINT64_MAX, count))
        return false;
    *col = (size_t)(q - ls);
    while (de < le && cp_is_ws(*de))
        de++;
    if (de == le)
        return false;
    *ds = de;
    return true;
}

static bool pseudo_node(const fdesc *d, const char *s, const char *e)
{
    return !d->has_addr && e - s >= 2 && *s == '<' && memchr(s, '>', (size_t)(e - s));
}

static void add_count(uint64_t *to, uint64_t n)
{
    if (__builtin_add_overflow(*to, n, to))
        *to = UINT64_MAX;
}

/* A node of the thread being read, placed by its count's column. */
static symd_status tree_node(sp *t, size_t col, uint64_t count, const char *ds, const char *de)
{
    cp *p = t->p;
    size_t n = t->nstack;
    if (n && col > t->stack[n - 1].col) {
        if (col - t->stack[n - 1].col > LEVEL_STEP &&
            cp_warn_line(p, t->lineno, "call tree indentation jumps %zu columns: taken as one "
                         "level deeper", col - t->stack[n - 1].col))
            return p->err->kind;
    } else if (n) {
        size_t lowest = 0;
        while (n && t->stack[n - 1].col >= col)
            lowest = t->stack[--n].col;
        if (lowest != col &&
            cp_warn_line(p, t->lineno, "call tree indentation (column %zu) matches no enclosing "
                         "level: taken as a child of the nearest one", col + 1))
            return p->err->kind;
        t->nstack = n;
    }
    crash_thread *th = &p->r->threads[t->thread];
    if (!n && !t->count_given)
        add_count(&th->count, count);
    uint32_t depth = n ? t->stack[n - 1].child_depth : 0;
    if (depth >= CRASH_MAX_DEPTH) {
        if (!t->skipped++)
            t->skipped_line = t->lineno;
        return SYMD_OK;
    }
    fdesc d;
    parse_desc(t, ds, de, &d);
    bool pseudo = pseudo_node(&d, ds, de);
    if (!array_grow((void **)&t->stack, &t->cap_stack, n + 1, sizeof *t->stack))
        return cp_nomem(p);
    t->stack[n] = (level){col, pseudo ? depth : depth + 1};
    t->nstack = n + 1;
    if (pseudo && cp_starts(ds, de, "<truncated backtrace")) {
        th->truncated = true;
        return cp_warn_line(p, t->lineno, "<truncated backtrace>: the stack walk of this thread "
                            "was cut here, callers beyond it are unknown");
    }
    if (pseudo)
        return SYMD_OK;
    char where[32];
    snprintf(where, sizeof where, "line %zu", t->lineno);
    crash_frame *f;
    if (cp_new_frame(p, (size_t)t->thread, &f, where))
        return p->err->kind;
    t->thread_frames = true;
    return fill_frame(t, f, &d, count, depth);
}

/* A frame of a heaviest stack: one level deeper than the one before. */
static symd_status chain_node(sp *t, uint64_t count, const char *ds, const char *de)
{
    cp *p = t->p;
    fdesc d;
    parse_desc(t, ds, de, &d);
    crash_thread *th = &p->r->threads[t->thread];
    if (pseudo_node(&d, ds, de) && cp_starts(ds, de, "<truncated backtrace")) {
        th->truncated = true;
        return cp_warn_line(p, t->lineno, "<truncated backtrace>: the stack walk of this thread "
                            "was cut here, callers beyond it are unknown");
    }
    if (pseudo_node(&d, ds, de))
        return SYMD_OK;
    if (!t->chain && !t->count_given)
        th->count = count;
    if (t->chain >= CRASH_MAX_DEPTH) {
        if (!t->skipped++)
            t->skipped_line = t->lineno;
        return SYMD_OK;
    }
    char where[32];
    snprintf(where, sizeof where, "line %zu", t->lineno);
    crash_frame *f;
    if (cp_new_frame(p, (size_t)t->thread, &f, where))
        return p->err->kind;
    t->thread_frames = true;
    return fill_frame(t, f, &d, count, t->chain++);
}

/* "\tkernel: 0x1 0x2" / "\tuser: 0x3 0x4" (legacy stackshot). */
static symd_status stack_addresses(sp *t, const char *s, const char *e)
{
    cp *p = t->p;
    char where[32];
    snprintf(where, sizeof where, "line %zu", t->lineno);
    for (const char *q = s; q < e;) {
        while (q < e && cp_is_ws(*q))
            q++;
        if (q == e)
            break;
        const char *te = q;
        while (te < e && !cp_is_ws(*te))
            te++;
        uint64_t a;
        if (cp_hex_token(q, te) != te || !hex_parse_u64(q, (size_t)(te - q), &a)) {
            if (cp_warn_line(p, t->lineno, "\"%.*s\" is no address: skipped",
                             (int)(te - q > 40 ? 40 : te - q), q))
                return p->err->kind;
        } else {
            crash_frame *f;
            if (cp_new_frame(p, (size_t)t->thread, &f, where))
                return p->err->kind;
            f->address = a;
            t->thread_frames = true;
        }
        q = te;
    }
    return SYMD_OK;
}

/* ---- processes and images ----------------------------------------------------- */

/* A process section: "name [pid]" or "name". */
static symd_status new_process(sp *t, const char *v, const char *ve, bool has_pid, uint64_t pid)
{
    symd_status st = end_thread(t);
    if (!st)
        st = end_header(t);
    char where[32];
    snprintf(where, sizeof where, "line %zu", t->lineno);
    crash_process *pr;
    if (st || (st = cp_new_process(t->p, &pr, where)))
        return st;
    cp_trim(&v, &ve);
    if (!has_pid && ve > v && ve[-1] == ']') {
        const char *b = ve - 1;
        while (b > v && b[-1] != '[')
            b--;
        uint64_t n;
        if (b > v && cp_dec_parse(b, ve - 1, 0x7fffffff, &n)) {
            has_pid = true;
            pid = n;
            ve = b - 1;
            cp_trim(&v, &ve);
        }
    }
    if (has_pid)
        pr->pid = (long)pid;
    if (v < ve && cp_set_str(t->p, &pr->name, v, (size_t)(ve - v)))
        return t->p->err->kind;
    t->proc = (long)(t->p->r->nprocesses - 1);
    t->nth_in_proc = 0;
    return SYMD_OK;
}

static bool arch_name(const char *s, const char *e)
{
    static const char *const archs[] = {"arm64",  "arm64e", "arm64_32", "x86_64", "x86_64h",
                                        "i386",   "armv7",  "armv7s",   "armv7k", "armv6",
                                        "arm64e.old", "ppc"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (eq(s, e, archs[i]))
            return true;
    return false;
}

static symd_status set(sp *t, char **dst, const char *s, const char *e)
{
    return s < e ? cp_set_str(t->p, dst, s, (size_t)(e - s)) : SYMD_OK;
}

/* "[*]0xSTART - 0xEND|???  [+]name [version|(version)] [arch] <UUID> /path",
 * or the legacy stackshot's " 0xSTART <uuid>". A line that does not read is
 * skipped with a warning. */
static symd_status image_line(sp *t, const char *s, const char *e)
{
    cp *p = t->p;
    if (s < e && *s == '*') /* spindump marks kernel images */
        s++;
    const char *ae = cp_hex_token(s, e);
    uint64_t lo, hi = 0;
    if (!ae || !hex_parse_u64(s, (size_t)(ae - s), &lo))
        return cp_warn_line(p, t->lineno, "image line without a load address: skipped");
    const char *q = ae;
    while (q < e && cp_is_ws(*q))
        q++;
    bool has_end = false;
    if (q < e && *q == '-') {
        q++;
        while (q < e && cp_is_ws(*q))
            q++;
        const char *be = q;
        while (be < e && !cp_is_ws(*be))
            be++;
        if (eq(q, be, "???")) {
            /* end not known */
        } else if (cp_hex_token(q, be) == be && hex_parse_u64(q, (size_t)(be - q), &hi)) {
            if (hi < lo)
                return cp_warn_line(p, t->lineno, "image ends before it starts: skipped");
            has_end = true;
        } else {
            return cp_warn_line(p, t->lineno, "image line with a bad end address: skipped");
        }
        q = be;
    }
    char where[32];
    snprintf(where, sizeof where, "line %zu", t->lineno);
    crash_image *im;
    if (cp_new_image(p, &im, where))
        return p->err->kind;
    size_t idx = p->r->nimages - 1;
    if (!array_grow((void **)&t->plus, &t->cap_plus, p->r->nimages, sizeof *t->plus))
        return cp_nomem(p);
    t->plus[idx] = false;
    im->load_address = lo;
    im->has_end = has_end;
    im->end_address = hi;
    im->process = t->mode == M_SAMPLE ? -1 : t->proc;

    const char *rs = q, *re = e;
    cp_trim(&rs, &re);
    if (rs < re && *rs == '+') {
        t->plus[idx] = true;
        rs++;
    }
    /* The UUID: the first "<...>" after a blank that holds one. */
    const char *ns = rs, *ne = re, *path = NULL, *gt = NULL;
    for (const char *c = rs; c < re; c++) {
        if (*c != '<' || (c > rs && !cp_is_ws(c[-1])))
            continue;
        if (!gt || gt < c) /* the first '>' after c; kept while c is before it: linear */
            gt = memchr(c, '>', (size_t)(re - c));
        if (!gt) {
            if (cp_warn_line(p, t->lineno, "image UUID is not closed: image kept without it"))
                return p->err->kind;
            ne = c;
            break;
        }
        char ub[40];
        size_t ul = (size_t)(gt - c - 1);
        if (ul >= sizeof ub)
            continue;
        memcpy(ub, c + 1, ul);
        ub[ul] = 0;
        bool none = !ul || strcmp(ub, "???") == 0 || strcmp(ub, "(null)") == 0;
        if (!none && !uuid_parse(ub, im->uuid))
            continue;
        im->has_uuid = !none;
        ne = c;
        path = gt + 1;
        break;
    }
    if (!path) { /* no UUID: the path is what starts with '/' after a blank */
        for (const char *c = rs; c < ne; c++)
            if (*c == '/' && c > rs && cp_is_ws(c[-1])) {
                path = c;
                ne = c;
                break;
            }
    }
    const char *pe = re;
    if (path) {
        cp_trim(&path, &pe);
        if (set(t, &im->path, path, pe))
            return p->err->kind;
    }
    cp_trim(&ns, &ne);
    if (ne > ns && ne[-1] == ')') { /* "name (version)" */
        const char *o = cp_open_paren(ns, ne);
        if (o && o > ns) {
            const char *vs = o + 1, *ve = ne - 1;
            ne = o;
            cp_trim(&ns, &ne);
            /* spindump: "com.apple.AppKit 6.9 (2113)": a short version before */
            const char *sp1 = ns;
            while (sp1 < ne && !cp_is_ws(*sp1))
                sp1++;
            const char *sv = sp1;
            while (sv < ne && cp_is_ws(*sv))
                sv++;
            if (sv < ne && cp_is_digit(*sv) && !memchr(sv, ' ', (size_t)(ne - sv)) &&
                memchr(ns, '.', (size_t)(sp1 - ns))) {
                size_t n1 = (size_t)(ne - sv), n2 = (size_t)(ve - vs);
                char *v = malloc(n1 + n2 + 4);
                if (!v)
                    return cp_nomem(p);
                snprintf(v, n1 + n2 + 4, "%.*s (%.*s)", (int)n1, sv, (int)n2, vs);
                free(im->version);
                im->version = v;
                ne = sp1;
            } else if (set(t, &im->version, vs, ve)) {
                return p->err->kind;
            }
        }
    }
    const char *a = ne; /* "name arch" */
    while (a > ns && !cp_is_ws(a[-1]))
        a--;
    if (a > ns && arch_name(a, ne)) {
        if (set(t, &im->arch, a, ne))
            return p->err->kind;
        ne = a;
        cp_trim(&ns, &ne);
    }
    if (ns == ne)
        return SYMD_OK; /* the legacy stackshot names no image */
    /* A bundle id ("com.apple.CoreFoundation") names the image in this list,
     * the binary's own name ("CoreFoundation") in the frames. */
    const char *base = NULL;
    if (im->path) {
        base = strrchr(im->path, '/');
        base = base ? base + 1 : im->path;
    }
    size_t nl = (size_t)(ne - ns);
    if (base && *base && !(strlen(base) == nl && memcmp(base, ns, nl) == 0) &&
        memchr(ns, '.', nl) && !memchr(ns, ' ', nl) && !ends_with(ns, ne, ".dylib")) {
        if (set(t, &im->bundle_id, ns, ne) || cp_set_str(p, &im->name, base, strlen(base)))
            return p->err->kind;
        return SYMD_OK;
    }
    return set(t, &im->name, ns, ne);
}

/* ---- Kextstat ------------------------------------------------------------------- */

/* One token of [*q, e) (blanks before it skipped): its start, *q past it. */
static const char *token(const char **q, const char *e, const char **te)
{
    const char *s = *q;
    while (s < e && cp_is_ws(*s))
        s++;
    const char *x = s;
    while (x < e && !cp_is_ws(*x))
        x++;
    *q = x;
    *te = x;
    return s < x ? s : NULL;
}

/* "0x1f" or "0" → *v. */
static bool hex_or_zero(const char *s, const char *e, uint64_t *v)
{
    if (eq(s, e, "0")) {
        *v = 0;
        return true;
    }
    return cp_hex_token(s, e) == e && hex_parse_u64(s, (size_t)(e - s), v);
}

/* A kextstat row: "Index Refs Address Size Wired Name (Version) [UUID]
 * [<Linked Against>]". A kext of a size becomes an image of no process
 * (kernel addresses are the same in every process); one of size 0 is a part
 * of the kernel itself (kextstat(8)) and stays text. false when the line is
 * no row. */
static bool kext_row(sp *t, const char *s, const char *e, symd_status *st)
{
    const char *q = s, *te, *f[5], *fe[5];
    for (int i = 0; i < 5; i++)
        if (!(f[i] = token(&q, e, &te)))
            return false;
        else
            fe[i] = te;
    uint64_t idx, refs, addr, size, wired;
    if (!cp_dec_parse(f[0], fe[0], UINT32_MAX, &idx) ||
        !cp_dec_parse(f[1], fe[1], UINT32_MAX, &refs) || !hex_or_zero(f[2], fe[2], &addr) ||
        !hex_or_zero(f[3], fe[3], &size) || !hex_or_zero(f[4], fe[4], &wired))
        return false;
    const char *ns, *ne;
    if (!(ns = token(&q, e, &ne)))
        return false;
    const char *vs = NULL, *ve = NULL, *us = NULL, *ue = NULL;
    const char *r = q;
    while (r < e && cp_is_ws(*r))
        r++;
    if (r < e && *r == '(') {
        const char *c = memchr(r, ')', (size_t)(e - r));
        if (!c)
            return false;
        vs = r + 1;
        ve = c;
        q = c + 1;
    }
    const char *u = token(&q, e, &te);
    if (u && *u != '<') {
        us = u;
        ue = te;
    }
    *st = SYMD_OK;
    if (!size)
        return true;
    cp *p = t->p;
    char where[32];
    snprintf(where, sizeof where, "line %zu", t->lineno);
    crash_image *im;
    if ((*st = cp_new_image(p, &im, where)))
        return true;
    if (!array_grow((void **)&t->plus, &t->cap_plus, p->r->nimages, sizeof *t->plus)) {
        *st = cp_nomem(p);
        return true;
    }
    t->plus[p->r->nimages - 1] = false;
    im->load_address = addr;
    im->process = -1;
    if (addr + (size - 1) >= addr) {
        im->has_end = true;
        im->end_address = addr + (size - 1);
    } else if ((*st = cp_warn_line(p, t->lineno, "kext size passes 2^64: its end is unknown"))) {
        return true;
    }
    if (us) {
        char ub[40];
        size_t ul = (size_t)(ue - us);
        if (ul < sizeof ub) {
            memcpy(ub, us, ul);
            ub[ul] = 0;
            im->has_uuid = uuid_parse(ub, im->uuid);
        }
        if (!im->has_uuid &&
            (*st = cp_warn_line(p, t->lineno, "kext UUID \"%.*s\" does not read: kept without it",
                                (int)(ue - us > 40 ? 40 : ue - us), us)))
            return true;
    }
    if ((*st = set(t, &im->name, ns, ne)) || (*st = set(t, &im->bundle_id, ns, ne)))
        return true;
    if (vs && (*st = set(t, &im->version, vs, ve)))
        return true;
    return true;
}

/* ---- header -------------------------------------------------------------------- */

/* "Key:   value" lines before the first section: the report's fields (the
 * first of each counts). */
static symd_status header_key(sp *t, const char *s, const char *e)
{
    static const struct {
        const char *key;
        size_t off;
    } keys[] = {
        {"Process", offsetof(crash_report, process)},
        {"Command", offsetof(crash_report, process)},
        {"Identifier", offsetof(crash_report, bundle_id)},
        {"Version", offsetof(crash_report, app_version)},
        {"Code Type", offsetof(crash_report, code_type)},
        {"Architecture", offsetof(crash_report, code_type)},
        {"OS Version", offsetof(crash_report, os_version)},
        {"Hardware Model", offsetof(crash_report, hardware_model)},
        {"Hardware model", offsetof(crash_report, hardware_model)},
        {"Date/Time", offsetof(crash_report, date)},
        {"Date", offsetof(crash_report, date)},
        {"Incident Identifier", offsetof(crash_report, incident_id)},
        {"Report Version", offsetof(crash_report, report_version)},
        {"Exception Code", offsetof(crash_report, exception_codes)},
    };
    const char *colon = memchr(s, ':', (size_t)(e - s));
    if (!colon || s == e || cp_is_ws(*s))
        return SYMD_OK;
    const char *v = colon + 1, *ve = e;
    cp_trim(&v, &ve);
    size_t kl = (size_t)(colon - s);
    if (kl == 3 && memcmp(s, "PID", 3) == 0) {
        uint64_t n;
        if (!t->has_pid && cp_dec_parse(v, ve, 0x7fffffff, &n)) {
            t->has_pid = true;
            t->pid = n;
        }
        return SYMD_OK;
    }
    if (kl == 4 && memcmp(s, "Path", 4) == 0)
        return t->app_path ? SYMD_OK : set(t, &t->app_path, v, ve);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strlen(keys[i].key) != kl || memcmp(keys[i].key, s, kl) != 0)
            continue;
        char **dst = (char **)((char *)t->p->r + keys[i].off);
        if (*dst || v == ve)
            return SYMD_OK;
        if (dst == &t->p->r->process && ve > v && ve[-1] == ']') { /* "name [pid]" */
            const char *b = ve - 1;
            while (b > v && b[-1] != '[')
                b--;
            uint64_t n;
            if (b > v && cp_dec_parse(b, ve - 1, 0x7fffffff, &n)) {
                if (!t->has_pid) {
                    t->has_pid = true;
                    t->pid = n;
                }
                ve = b - 1;
                cp_trim(&v, &ve);
            }
        }
        return set(t, dst, v, ve);
    }
    return SYMD_OK;
}

/* ---- the line machine -------------------------------------------------------- */

/* An indented line shaped as a tree node with an address: ends a header. */
static bool looks_like_node(const char *ls, const char *le)
{
    size_t col;
    uint64_t n;
    const char *ds;
    return ls < le && cp_is_ws(*ls) && tree_line(ls, le, &col, &n, &ds) &&
           find_first(ds, le, "[0x");
}

static symd_status on_line(sp *t, const char *ls, const char *le);

/* Lines of the current state that are no section heading. */
static symd_status state_line(sp *t, const char *ls, const char *le, const char *s,
                              const char *e)
{
    cp *p = t->p;
    size_t col;
    uint64_t count;
    const char *ds;
    crash_thread *th;
    switch (t->st) {
    case S_HEADER:
        if (t->mode == M_SPINDUMP && looks_like_node(ls, le)) {
            t->st = S_NONE; /* a tree with no heading: a pasted fragment */
            return on_line(t, ls, le);
        }
        if (t->mode == M_SAMPLE && looks_like_node(ls, le)) {
            if (end_header(t)) /* a call graph with no heading: a pasted fragment */
                return p->err->kind;
            t->st = S_TREE;
            return state_line(t, ls, le, s, e);
        }
        if (buf_line(t, &t->hdr, &t->hdr_len, &t->hdr_cap, ls, le))
            return p->err->kind;
        return header_key(t, ls, le);
    case S_TREE:
        if (tree_line(ls, le, &col, &count, &ds)) {
            if (t->mode == M_SAMPLE && cp_starts(ds, le, "Thread_") && !find_first(ds, le, "[0x")) {
                if (new_thread(t, CRASH_THREAD_NORMAL, s, e, &th) ||
                    thread_heading(t, th, ds, le))
                    return p->err->kind;
                th->count = count;
                t->count_given = true;
                return SYMD_OK;
            }
            if (t->thread < 0 && new_thread(t, CRASH_THREAD_NORMAL, NULL, NULL, &th))
                return p->err->kind;
            return tree_node(t, col, count, ds, le);
        }
        if (t->thread >= 0 && !t->thread_frames && t->title_lines &&
            t->title_lines < TITLE_LINES && *s == '<')
            return title_line(t, s, e);
        if (cp_warn_line(p, t->lineno, "not a call-tree line: kept as text"))
            return p->err->kind;
        return keep(t, ls, le);
    case S_HEAVIEST:
        if (tree_line(ls, le, &col, &count, &ds))
            return chain_node(t, count, ds, le);
        if (end_thread(t))
            return p->err->kind;
        t->st = S_NONE;
        return on_line(t, ls, le);
    case S_THREAD188:
        if (cp_starts(s, e, "kernel:") || cp_starts(s, e, "user:"))
            return stack_addresses(t, memchr(s, ':', (size_t)(e - s)) + 1, e);
        if (cp_is_ws(*ls)) {
            if (!t->thread_frames && t->title_lines < TITLE_LINES)
                return title_line(t, s, e);
            return keep(t, ls, le);
        }
        if (end_thread(t))
            return p->err->kind;
        t->st = S_NONE;
        return on_line(t, ls, le);
    case S_IMAGES:
        if (cp_starts(s, e, "0x") || cp_starts(s, e, "*0x"))
            return image_line(t, s, e);
        t->st = S_NONE;
        return on_line(t, ls, le);
    case S_KEXTSTAT: {
        bool col0 = s == ls;
        symd_status kst;
        if (kext_row(t, s, e, &kst))
            return kst ? kst : keep(t, ls, le);
        if (col0 && !cp_starts(s, e, "Index")) {
            t->st = S_NONE; /* the table is over */
            return on_line(t, ls, le);
        }
        if (!col0 && cp_warn_line(p, t->lineno, "not a Kextstat row: kept as text"))
            return p->err->kind;
        return keep(t, ls, le);
    }
    case S_PROCESS:
    case S_NONE:
        if (t->mode == M_SAMPLE && tree_line(ls, le, &col, &count, &ds) &&
            cp_starts(ds, le, "Thread_") && !find_first(ds, le, "[0x")) {
            t->st = S_TREE; /* the call graph goes on after a blank line */
            return state_line(t, ls, le, s, e);
        }
        if (t->mode == M_SPINDUMP && cp_is_ws(*ls) && tree_line(ls, le, &col, &count, &ds)) {
            /* a microstackshot's tree follows its process header directly */
            if (new_thread(t, CRASH_THREAD_NORMAL, NULL, NULL, &th))
                return p->err->kind;
            t->st = S_TREE;
            return tree_node(t, col, count, ds, le);
        }
        if (t->st == S_PROCESS && cp_starts(ls, le, "Path:") && t->proc >= 0 &&
            !p->r->processes[t->proc].path) {
            const char *v = ls + 5, *ve = le;
            cp_trim(&v, &ve);
            if (set(t, &p->r->processes[t->proc].path, v, ve))
                return p->err->kind;
        }
        return keep(t, ls, le);
    }
    return SYMD_OK;
}

/* One line, already checked for length and UTF-8, '\r' stripped. */
static symd_status on_line(sp *t, const char *ls, const char *le)
{
    cp *p = t->p;
    const char *s = ls, *e = le;
    cp_trim(&s, &e);
    bool col0 = s == ls;
    crash_thread *th;
    if (s == e) {
        if (t->st == S_HEADER)
            return buf_line(t, &t->hdr, &t->hdr_len, &t->hdr_cap, ls, le);
        if (t->st == S_KEXTSTAT)
            return SYMD_OK; /* the table goes on after a blank line */
        if (end_thread(t))
            return p->err->kind;
        t->st = S_NONE;
        return SYMD_OK;
    }
    /* Section headings, in any state. */
    if (t->mode == M_SAMPLE && eq(s, e, "Call graph:")) {
        if (end_thread(t) || end_header(t) || keep(t, ls, le))
            return p->err->kind;
        t->st = S_TREE;
        return SYMD_OK;
    }
    if (t->mode == M_SPINDUMP && col0 && eq(s, e, "Kextstat:")) {
        /* a full spindump's kext list: it ends the call tree, its rows are
         * the dump's kernel images */
        if (end_thread(t) || end_header(t) || keep(t, ls, le))
            return p->err->kind;
        t->st = S_KEXTSTAT;
        return SYMD_OK;
    }
    if (cp_starts(s, e, "Heaviest stack for ") && e[-1] == ':') {
        if (new_thread(t, CRASH_THREAD_HEAVIEST, s, e, &th))
            return p->err->kind;
        t->st = S_HEAVIEST;
        return SYMD_OK;
    }
    if (t->mode == M_SPINDUMP && col0 &&
        (cp_starts(s, e, "Process:") || cp_starts(s, e, "Powerstats for:"))) {
        const char *v = memchr(s, ':', (size_t)(e - s)) + 1;
        if (new_process(t, v, e, false, 0) || keep(t, ls, le))
            return p->err->kind;
        t->st = S_PROCESS;
        return SYMD_OK;
    }
    if (t->mode == M_SPINDUMP && cp_starts(s, e, "Thread 0x")) {
        if (new_thread(t, CRASH_THREAD_NORMAL, s, e, &th) || thread_heading(t, th, s, e))
            return p->err->kind;
        t->st = S_TREE;
        return SYMD_OK;
    }
    if (eq(s, e, "Binary Images:") || eq(s, e, "Binary images:")) {
        if (end_thread(t) || end_header(t))
            return p->err->kind;
        if (flush(t, t->mode == M_SAMPLE ? CRASH_AT_IMAGES : CRASH_AT_THREAD, p->r->nthreads))
            return p->err->kind;
        t->st = S_IMAGES;
        return SYMD_OK;
    }
    if (t->mode == M_SAMPLE && col0 &&
        (cp_starts(s, e, "Total number in stack") || cp_starts(s, e, "Sort by top of stack"))) {
        if (end_thread(t) || end_header(t) || keep(t, ls, le))
            return p->err->kind;
        t->st = S_NONE;
        return SYMD_OK;
    }
    if (t->mode == M_STACKSHOT && col0) {
        uint64_t pid;
        const char *ns = NULL, *ne = NULL;
        int h = stackshot_heading(s, e, &pid, &ns, &ne);
        if (h) {
            crash_process *cur = t->proc >= 0 ? &p->r->processes[t->proc] : NULL;
            if (end_thread(t) || end_header(t))
                return p->err->kind;
            if ((!cur || cur->pid != (long)pid) && new_process(t, s, s, true, pid))
                return p->err->kind;
            if (h == 2 && !p->r->processes[t->proc].name &&
                set(t, &p->r->processes[t->proc].name, ns, ne))
                return p->err->kind;
            if (keep(t, ls, le))
                return p->err->kind;
            t->st = h == 3 ? S_IMAGES : h == 1 ? S_PROCESS : S_NONE;
            return SYMD_OK;
        }
        if (stackshot_thread(s, e)) {
            if (new_thread(t, CRASH_THREAD_NORMAL, s, e, &th))
                return p->err->kind;
            t->st = S_THREAD188;
            return SYMD_OK;
        }
    }
    return state_line(t, ls, le, s, e);
}

/* ---- after the last line ------------------------------------------------------- */

typedef struct {
    long proc;
    const char *name;
    uint64_t lo;
    size_t idx;
} ikey;

static int cmp_long(long a, long b) { return (a > b) - (a < b); }

static int by_name(const void *a, const void *b)
{
    const ikey *x = a, *y = b;
    int c = cmp_long(x->proc, y->proc);
    if (!c)
        c = strcmp(x->name, y->name);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int by_addr(const void *a, const void *b)
{
    const ikey *x = a, *y = b;
    int c = cmp_long(x->proc, y->proc);
    if (!c)
        c = (x->lo > y->lo) - (x->lo < y->lo);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* An image of no process (a Kextstat kext) for a frame of a process's
 * thread: the one its "<UUID>" image name names, else the one whose known
 * range holds its address; -1 when none. */
typedef struct {
    uint8_t uuid[16];
    size_t idx;
} ukey;

static int by_uuid(const void *a, const void *b)
{
    const ukey *x = a, *y = b;
    int c = memcmp(x->uuid, y->uuid, 16);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static long shared_image(const crash_report *r, const ikey *ba, size_t n, const ukey *bu,
                         size_t nu, const crash_frame *f)
{
    ukey k;
    const char *nm = f->image_name;
    size_t nl = nm ? strlen(nm) : 0;
    if (nu && nl == 38 && nm[0] == '<' && nm[37] == '>') {
        char ub[37];
        memcpy(ub, nm + 1, 36);
        ub[36] = 0;
        if (uuid_parse(ub, k.uuid)) {
            size_t lo = 0, hi = nu; /* first key >= uuid */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (memcmp(bu[mid].uuid, k.uuid, 16) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < nu && memcmp(bu[lo].uuid, k.uuid, 16) == 0)
                return (long)bu[lo].idx;
        }
    }
    size_t lo = 0, hi = n; /* first key > (-1, address) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ba[mid].proc < -1 || (ba[mid].proc == -1 && ba[mid].lo <= f->address))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || ba[lo - 1].proc != -1)
        return -1;
    const crash_image *im = &r->images[ba[lo - 1].idx];
    return im->has_end && f->address <= im->end_address ? (long)ba[lo - 1].idx : -1;
}

/* Each frame gets the image of its own thread's process: by the name on the
 * frame, else the image whose range holds the address. An image without a
 * known end holds what lies below the next image of its process, never what
 * lies past the last one. O((F + I) log I). */
static symd_status resolve_images(sp *t)
{
    crash_report *r = t->p->r;
    if (!r->nimages)
        return SYMD_OK;
    ikey *bn = malloc(r->nimages * sizeof *bn), *ba = malloc(r->nimages * sizeof *ba);
    ukey *bu = malloc(r->nimages * sizeof *bu); /* images of no process with a UUID */
    if (!bn || !ba || !bu) {
        free(bn);
        free(ba);
        free(bu);
        return cp_nomem(t->p);
    }
    size_t nu = 0;
    for (size_t i = 0; i < r->nimages; i++)
        if (r->images[i].process < 0 && r->images[i].has_uuid) {
            memcpy(bu[nu].uuid, r->images[i].uuid, 16);
            bu[nu++].idx = i;
        }
    qsort(bu, nu, sizeof *bu, by_uuid);
    for (size_t i = 0; i < r->nimages; i++) {
        ikey k = {r->images[i].process, r->images[i].name ? r->images[i].name : "",
                  r->images[i].load_address, i};
        bn[i] = ba[i] = k;
    }
    size_t n = r->nimages;
    qsort(bn, n, sizeof *bn, by_name);
    qsort(ba, n, sizeof *ba, by_addr);
    for (size_t ti = 0; ti < r->nthreads; ti++) {
        crash_thread *th = &r->threads[ti];
        for (size_t fi = 0; fi < th->nframes; fi++) {
            crash_frame *f = &th->frames[fi];
            if (f->image >= 0)
                continue;
            if (f->image_name && *f->image_name) {
                ikey k = {th->process, f->image_name, 0, 0};
                size_t lo = 0, hi = n; /* first key >= (process, name) */
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    int c = cmp_long(bn[mid].proc, k.proc);
                    if (!c)
                        c = strcmp(bn[mid].name, k.name);
                    if (c < 0)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo < n && bn[lo].proc == k.proc && strcmp(bn[lo].name, k.name) == 0) {
                    f->image = (long)bn[lo].idx;
                    continue;
                }
            }
            size_t lo = 0, hi = n; /* first key > (process, address) */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = cmp_long(ba[mid].proc, th->process);
                if (c < 0 || (c == 0 && ba[mid].lo <= f->address))
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo && ba[lo - 1].proc == th->process) {
                const crash_image *im = &r->images[ba[lo - 1].idx];
                if (im->has_end ? f->address <= im->end_address
                                : lo < n && ba[lo].proc == th->process && ba[lo].lo > f->address)
                    f->image = (long)ba[lo - 1].idx;
            }
            if (f->image < 0 && th->process >= 0)
                f->image = shared_image(r, ba, n, bu, nu, f);
        }
    }
    free(bn);
    free(ba);
    free(bu);
    return SYMD_OK;
}

/* The heaviest stack belongs to the target process (by pid, else name); the
 * app's images are sample's '+' ones and those at their process's path. */
static void finish(sp *t)
{
    crash_report *r = t->p->r;
    long target = -1;
    for (size_t i = 0; i < r->nprocesses && target < 0; i++)
        if (t->has_pid && r->processes[i].pid == (long)t->pid)
            target = (long)i;
    for (size_t i = 0; i < r->nprocesses && target < 0 && r->process; i++)
        if (r->processes[i].name && strcmp(r->processes[i].name, r->process) == 0)
            target = (long)i;
    for (size_t i = 0; i < r->nthreads; i++)
        if (r->threads[i].role == CRASH_THREAD_HEAVIEST && r->threads[i].process < 0)
            r->threads[i].process = target;
    for (size_t i = 0; i < r->nimages; i++) {
        crash_image *im = &r->images[i];
        const char *own = im->process >= 0 ? r->processes[im->process].path : t->app_path;
        im->is_app = t->plus[i] || (im->path && own && strcmp(im->path, own) == 0);
        im->plus = t->plus[i];
    }
}

/* sample, spindump, microstackshot or legacy stackshot text body[0..n),
 * whose first line is line first_line of the input. */
symd_status crash_parse_sample(cp *p, const char *body, size_t n, size_t first_line)
{
    crash_report *r = p->r;
    bool bare;
    smode mode = classify(body, n, &bare);
    if (mode == M_NONE)
        mode = M_SPINDUMP;
    if (r->format != CRASH_FORMAT_IPS || r->kind == CRASH_KIND_CRASH)
        r->kind = bare                  ? CRASH_KIND_FRAGMENT
                  : mode == M_SAMPLE     ? CRASH_KIND_SAMPLE
                  : mode == M_STACKSHOT ? CRASH_KIND_HANG
                                        : CRASH_KIND_SPINDUMP;
    sp t = {.p = p, .mode = mode, .st = S_HEADER, .lineno = first_line, .proc = -1,
            .thread = -1, .in_header = true};
    symd_status st = SYMD_OK;
    const char *q = body, *end = body + n;
    for (; q < end && !st; t.lineno++) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        const char *le = nl ? nl : end, *ls = q;
        q = nl ? nl + 1 : end;
        if ((size_t)(le - ls) > CRASH_MAX_LINE) {
            st = symd_fail(p->err, SYMD_E_TOO_LARGE, "line %zu: longer than %d bytes", t.lineno,
                           CRASH_MAX_LINE);
            break;
        }
        if (le > ls && le[-1] == '\r')
            le--;
        size_t col;
        if (!cp_line_valid(ls, le, &col)) {
            st = cp_warn_line(p, t.lineno, "%s at column %zu: line skipped",
                              ls[col - 1] ? "invalid UTF-8" : "NUL byte", col);
            continue;
        }
        t.raw_s = ls;
        t.raw_e = le;
        st = on_line(&t, ls, le);
    }
    if (!st)
        st = end_thread(&t);
    if (!st)
        st = end_header(&t);
    if (!st)
        st = flush(&t, CRASH_AT_END, 0);
    if (!st && !r->nthreads)
        st = cp_warn_line(p, first_line, "no call tree or stack found in the report");
    if (!st) {
        finish(&t);
        st = resolve_images(&t);
    }
    free(t.stack);
    free(t.hdr);
    free(t.pend);
    free(t.app_path);
    free(t.plus);
    return st;
}

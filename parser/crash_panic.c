/* Kernel panic text: a .panic file, or the panic string of an .ips 151/210.
 * The kernel backtraces ("Backtrace (CPU n), Frame : Return Address" with
 * "0xFRAME : 0xRETURN" lines, or "Panicked thread: ..." with "lr: 0x.. fp:
 * 0x.." lines) become CRASH_THREAD_KERNEL threads; the kexts of "Kernel
 * Extensions in backtrace:" (name(version)[UUID]@0xSTART->0xEND) and the
 * kernel (Kernel UUID, Kernel text base) become images, and each frame gets
 * the kext whose range holds it, else the kernel. The text itself stays
 * whole in r->panic_string. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "../util/hex.h"
#include "crash_int.h"
#include "../util/metered.h" /* last: counts this file's allocations */

typedef struct {
    cp *p;
    size_t first_line; /* input line of s's first line; 0: s is a JSON string */
    size_t line;       /* the line being read, 1-based within s */
} pt;

static symd_status pwarn(pt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static symd_status pwarn(pt *t, const char *fmt, ...)
{
    char where[48], msg[200];
    if (t->first_line)
        snprintf(where, sizeof where, "line %zu", t->first_line + t->line - 1);
    else
        snprintf(where, sizeof where, "panic string line %zu", t->line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return cp_warn(t->p, where, "%s", msg);
}

/* "0x..." exactly [s, e) → *v (at most 64 bits). */
static bool hex_exact(const char *s, const char *e, uint64_t *v)
{
    return e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
           hex_parse_u64(s, (size_t)(e - s), v);
}

/* A backtrace line of [s, e) (trimmed): "lr: 0xLR  fp: 0xFP" (arm64) or
 * "0xFRAME : 0xRETURN ..." (x86_64); *ret is the return address. 1 read,
 * 0 not such a line, -1 such a line whose address does not read. */
static int backtrace_line(const char *s, const char *e, uint64_t *ret)
{
    if (cp_starts(s, e, "lr:")) {
        const char *a = s + 3;
        while (a < e && cp_is_ws(*a))
            a++;
        const char *b = a;
        while (b < e && !cp_is_ws(*b))
            b++;
        return hex_exact(a, b, ret) ? 1 : -1;
    }
    const char *a = cp_hex_token(s, e);
    if (!a)
        return 0;
    while (a < e && cp_is_ws(*a))
        a++;
    if (a >= e || *a != ':')
        return 0;
    for (a++; a < e && cp_is_ws(*a); a++)
        ;
    const char *b = a;
    while (b < e && !cp_is_ws(*b))
        b++;
    return hex_exact(a, b, ret) ? 1 : -1;
}

/* "com.apple.x(1.0)[UUID]@0xSTART->0xEND" (the end may be absent). */
typedef struct {
    const char *name, *name_e, *ver, *ver_e;
    uint8_t uuid[16];
    uint64_t start, end;
    bool has_end;
} kext;

static bool kext_line(const char *s, const char *e, kext *k)
{
    const char *rb = NULL; /* the ")[" before the UUID */
    for (const char *q = s; q + 1 < e && !rb; q++)
        if (q[0] == ')' && q[1] == '[')
            rb = q;
    if (!rb)
        return false;
    const char *lp = rb;
    while (lp > s && lp[-1] != '(')
        lp--;
    if (lp <= s + 1) /* no '(' or no name before it */
        return false;
    k->name = s;
    k->name_e = lp - 1;
    k->ver = lp;
    k->ver_e = rb;
    const char *ub = rb + 2, *ue = ub;
    while (ue < e && *ue != ']')
        ue++;
    char u[40];
    if (ue >= e || ue - ub >= (long)sizeof u)
        return false;
    memcpy(u, ub, (size_t)(ue - ub));
    u[ue - ub] = 0;
    if (!uuid_parse(u, k->uuid))
        return false;
    const char *q = ue + 1;
    if (q >= e || *q != '@')
        return false;
    const char *he = ++q;
    while (he < e && !cp_is_ws(*he) && *he != '-')
        he++;
    if (!hex_exact(q, he, &k->start))
        return false;
    k->has_end = false;
    if (he + 1 < e && he[0] == '-' && he[1] == '>') {
        const char *es = he + 2, *ee = es;
        while (ee < e && !cp_is_ws(*ee))
            ee++;
        if (!hex_exact(es, ee, &k->end) || k->end < k->start)
            return false;
        k->has_end = true;
    }
    return true;
}

/* The value after "Key:" on [s, e), trimmed, when the line starts with key. */
static bool value_of(const char *s, const char *e, const char *key, const char **v,
                     const char **ve)
{
    if (!cp_starts(s, e, key))
        return false;
    *v = s + strlen(key);
    *ve = e;
    cp_trim(v, ve);
    return true;
}

static symd_status set_if_unset(cp *p, char **dst, const char *s, const char *e)
{
    return *dst || s >= e ? SYMD_OK : cp_set_str(p, dst, s, (size_t)(e - s));
}

/* Gives the frames of threads[t0..] the kext whose range holds them (images
 * [i0, i1)), else the kernel image (kimg, -1 when none) at or past its base. */
static symd_status resolve(cp *p, size_t t0, size_t i0, size_t i1, long kimg)
{
    crash_report *r = p->r;
    for (size_t t = t0; t < r->nthreads; t++) {
        for (size_t k = 0; k < r->threads[t].nframes; k++) {
            crash_frame *f = &r->threads[t].frames[k];
            long hit = -1;
            for (size_t i = i0; i < i1 && hit < 0; i++)
                if ((long)i != kimg && r->images[i].has_end &&
                    f->address >= r->images[i].load_address &&
                    f->address <= r->images[i].end_address)
                    hit = (long)i;
            if (hit < 0 && kimg >= 0 &&
                (!r->images[kimg].load_address || f->address >= r->images[kimg].load_address))
                hit = kimg;
            if (hit < 0)
                continue;
            const crash_image *im = &r->images[hit];
            f->image = hit;
            f->has_load = im->load_address != 0;
            f->load_address = im->load_address;
            if (im->name && cp_set_str(p, &f->image_name, im->name, strlen(im->name)))
                return p->err->kind;
        }
    }
    return SYMD_OK;
}

/* Contract in crash_int.h. r->panic_string, when not set yet, becomes the
 * text from its "panic(" line on (all of it when there is none); in a file
 * (first_line > 0) the lines before that line become r->text_header, so the
 * two hold the whole text. */
symd_status crash_parse_panic_text(cp *p, const char *s, size_t n, size_t first_line)
{
    crash_report *r = p->r;
    pt t = {p, first_line, 0};
    const char *end = s + n, *panic_at = NULL;
    size_t t0 = r->nthreads, i0 = r->nimages;
    long cur = -1;                       /* the backtrace being read */
    const char *head = NULL, *head_e = NULL; /* the line before, when it heads a backtrace */
    long head_tid = -1;
    bool in_kexts = false, want_os = false, has_kuuid = false, has_kbase = false;
    uint8_t kuuid[16];
    uint64_t kbase = 0;
    symd_status st = SYMD_OK;
    r->kind = CRASH_KIND_PANIC;
    for (const char *ls = s; ls < end && !st;) {
        const char *nl = memchr(ls, '\n', (size_t)(end - ls));
        const char *a = ls, *b = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        t.line++;
        if (b > a && b[-1] == '\r')
            b--;
        cp_trim(&a, &b);
        const char *v, *ve;
        uint64_t x;
        if (!panic_at && cp_starts(a, b, "panic("))
            panic_at = ls;
        int bt = backtrace_line(a, b, &x);
        if (bt < 0) {
            st = pwarn(&t, "a backtrace line whose address does not read: skipped");
        } else if (bt > 0) {
            if (cur < 0) {
                crash_thread *th;
                if ((st = cp_new_thread(p, &th, first_line ? "panic backtrace" : "panic string")))
                    break;
                th->role = CRASH_THREAD_KERNEL;
                th->number = head ? head_tid : -1;
                cur = (long)r->nthreads - 1;
                if (head && (st = cp_set_str(p, &th->title, head, (size_t)(head_e - head))))
                    break;
            }
            crash_frame *f;
            if ((st = cp_new_frame(p, (size_t)cur, &f, "panic backtrace")))
                break;
            f->address = x;
            const char *le = nl ? nl : end;
            if (le > ls && le[-1] == '\r')
                le--;
            cp_frame_src(p, f, CRASH_SRC_PANIC, ls, le, le, le);
        } else {
            cur = -1;
        }
        if (bt != 0) {
            head = NULL;
            ls = next;
            continue;
        }
        head = NULL;
        if (in_kexts) {
            kext k;
            if (cp_starts(a, b, "dependency:")) {
                ls = next;
                continue;
            }
            if (kext_line(a, b, &k)) {
                crash_image *im;
                if ((st = cp_new_image(p, &im, "Kernel Extensions in backtrace")) ||
                    (st = cp_set_str(p, &im->name, k.name, (size_t)(k.name_e - k.name))) ||
                    (st = cp_set_str(p, &im->bundle_id, k.name, (size_t)(k.name_e - k.name))) ||
                    (st = cp_set_str(p, &im->version, k.ver, (size_t)(k.ver_e - k.ver))))
                    break;
                memcpy(im->uuid, k.uuid, 16);
                im->has_uuid = true;
                im->load_address = k.start;
                im->has_end = k.has_end;
                im->end_address = k.end;
                ls = next;
                continue;
            }
            in_kexts = false;
            if (a < b && !cp_starts(a, b, "last ") && !cp_starts(a, b, "loaded kexts"))
                st = pwarn(&t, "not a kext line (name(version)[UUID]@0xSTART->0xEND): "
                               "skipped");
        }
        if (cp_starts(a, b, "Backtrace (CPU") || cp_starts(a, b, "Panicked thread:")) {
            head = a;
            head_e = b;
            head_tid = -1;
            const char *tid = NULL;
            for (const char *q = a; q + 5 <= b && !tid; q++)
                if (memcmp(q, "tid: ", 5) == 0)
                    tid = q + 5;
            uint64_t id;
            if (tid && cp_dec_parse(tid, cp_digits_end(tid, b), LONG_MAX, &id))
                head_tid = (long)id;
        } else if (cp_starts(a, b, "Kernel Extensions in backtrace:")) {
            in_kexts = true;
        } else if (value_of(a, b, "Kernel UUID:", &v, &ve)) {
            char u[40];
            if (ve - v < (long)sizeof u) {
                memcpy(u, v, (size_t)(ve - v));
                u[ve - v] = 0;
                has_kuuid = uuid_parse(u, kuuid);
            }
            if (!has_kuuid)
                st = pwarn(&t, "the kernel UUID does not read: skipped");
        } else if (value_of(a, b, "Kernel text base:", &v, &ve)) {
            has_kbase = hex_exact(v, ve, &kbase);
            if (!has_kbase)
                st = pwarn(&t, "the kernel text base does not read: skipped");
        } else if (value_of(a, b, "BSD process name corresponding to current thread:", &v, &ve)) {
            st = set_if_unset(p, &r->process, v, ve);
        } else if (cp_starts(a, b, "Panicked task ")) {
            for (const char *q = a; q + 4 < b; q++)
                if (memcmp(q, "pid ", 4) == 0) {
                    const char *c = memchr(q, ':', (size_t)(b - q));
                    if (c) {
                        const char *ns = c + 1, *ne = b;
                        cp_trim(&ns, &ne);
                        st = set_if_unset(p, &r->process, ns, ne);
                    }
                    break;
                }
        } else if (value_of(a, b, "OS version:", &v, &ve)) {
            st = set_if_unset(p, &r->os_version, v, ve);
        } else if (cp_starts(a, b, "Mac OS version:")) {
            want_os = true; /* the value is on the next line */
            ls = next;
            continue;
        } else if (want_os) {
            st = set_if_unset(p, &r->os_version, a, b);
        } else if (value_of(a, b, "System model name:", &v, &ve)) {
            st = set_if_unset(p, &r->hardware_model, v, ve);
        }
        want_os = false;
        ls = next;
    }
    if (st)
        return st;
    long kimg = -1;
    if (has_kuuid) {
        crash_image *im;
        static const char kname[] = "kernel";
        if ((st = cp_new_image(p, &im, "Kernel UUID")) ||
            (st = cp_set_str(p, &im->name, kname, sizeof kname - 1)))
            return st;
        memcpy(im->uuid, kuuid, 16);
        im->has_uuid = true;
        im->load_address = has_kbase ? kbase : 0;
        kimg = (long)r->nimages - 1;
    }
    if ((st = resolve(p, t0, i0, r->nimages, kimg)))
        return st;
    if (r->nthreads > t0) {
        r->threads[t0].crashed = true;
        if (r->crashed_thread < 0)
            r->crashed_thread = (long)t0;
    }
    /* A file's lines before "panic(" are its header; the rest, the panic. */
    if (first_line && panic_at && panic_at > s && !r->text_header &&
        (st = cp_set_str(p, &r->text_header, s, (size_t)(panic_at - s))))
        return st;
    if (!r->panic_string) {
        const char *from = panic_at ? panic_at : s;
        st = cp_set_str(p, &r->panic_string, from, (size_t)(end - from));
    }
    return st;
}

/* Contract in crash_int.h: a "panic(" or "*** Panic Report ***" line among
 * the first lines, before anything a process crash report starts with. */
bool crash_looks_like_panic(const char *s, size_t n)
{
    static const char *const not_panic[] = {
        "Incident Identifier:", "Process:", "Exception Type:", "Hardware Model:", "Thread ",
    };
    const char *e = s + n;
    for (int line = 0; line < 40 && s < e; line++) {
        const char *nl = memchr(s, '\n', (size_t)(e - s));
        const char *a = s, *b = nl ? nl : e;
        cp_trim(&a, &b);
        if (cp_starts(a, b, "panic(") || cp_starts(a, b, "*** Panic Report ***"))
            return true;
        for (size_t i = 0; i < sizeof not_panic / sizeof not_panic[0]; i++)
            if (cp_starts(a, b, not_panic[i]))
                return false;
        s = nl ? nl + 1 : e;
    }
    return false;
}

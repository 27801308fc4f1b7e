/* Apple crash reports in, one crash model out (see crash.h): detection of
 * the form and kind, the helpers every reader shares (crash_int.h), and
 * freeing.
 *
 * Forms, told apart by content alone:
 *   - .ips: a one-line JSON header with bug_type, then a JSON body
 *     (crash_ips.c) or a text body (crash_text.c, or crash_sample.c for
 *     microstackshot reports);
 *   - text .crash, panics and fragments (crash_text.c);
 *   - macOS sample and spindump text (crash_sample.c);
 *   - KSCrash JSON: one JSON document with KSCrash's shape (crash_kscrash.c).
 * JSON is read with util/jsonbig (integers of any size). */
#include "crash.h"

#include <inttypes.h>
#include <jansson.h>
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

/* ---- kinds ------------------------------------------------------------------ */

static const char *const kind_names[CRASH_KIND_COUNT] = {
    [CRASH_KIND_CRASH] = "crash",       [CRASH_KIND_HANG] = "hang",
    [CRASH_KIND_RESOURCE] = "resource", [CRASH_KIND_JETSAM] = "jetsam",
    [CRASH_KIND_PANIC] = "panic",       [CRASH_KIND_SAMPLE] = "sample",
    [CRASH_KIND_SPINDUMP] = "spindump", [CRASH_KIND_FRAGMENT] = "fragment",
    [CRASH_KIND_LAUNCH] = "launch",     [CRASH_KIND_MINIDUMP] = "minidump",
};

const char *crash_format_name(crash_format f)
{
    switch (f) {
    case CRASH_FORMAT_IPS: return "ips";
    case CRASH_FORMAT_KSCRASH: return "kscrash";
    case CRASH_FORMAT_PLCRASH: return "plcrash";
    case CRASH_FORMAT_METRICKIT: return "metrickit";
    case CRASH_FORMAT_ASC: return "asc";
    case CRASH_FORMAT_MINIDUMP: return "minidump";
    default: return "crash";
    }
}

bool crash_format_parse(const char *s, crash_format *out)
{
    for (int f = 0; s && f < CRASH_FORMAT_COUNT; f++)
        if (strcmp(s, crash_format_name((crash_format)f)) == 0) {
            *out = (crash_format)f;
            return true;
        }
    return false;
}

const char *crash_kind_name(crash_kind k)
{
    return (unsigned)k < CRASH_KIND_COUNT ? kind_names[k] : "crash";
}

bool crash_kind_parse(const char *s, crash_kind *out)
{
    for (int k = 0; s && k < CRASH_KIND_COUNT; k++)
        if (strcmp(s, kind_names[k]) == 0) {
            *out = (crash_kind)k;
            return true;
        }
    return false;
}

crash_kind crash_kind_of_bug_type(int bug_type)
{
    switch (bug_type) {
    case 288: case 188: case 409:
        return CRASH_KIND_HANG;
    case 145: case 202: case 206: case 185: case 142: case 195: case 197:
        return CRASH_KIND_RESOURCE;
    case 298:
        return CRASH_KIND_JETSAM;
    case 151: case 210: case 110:
        return CRASH_KIND_PANIC;
    default:
        return CRASH_KIND_CRASH;
    }
}

/* ---- shared helpers ----------------------------------------------------- */

symd_status cp_nomem(cp *p)
{
    return symd_fail(p->err, SYMD_E_NOMEM, "out of memory reading the crash report");
}

symd_status cp_set_str(cp *p, char **dst, const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (!c)
        return cp_nomem(p);
    memcpy(c, s, n);
    c[n] = 0;
    free(*dst);
    *dst = c;
    return SYMD_OK;
}

static symd_status vwarn(cp *p, const char *where, const char *fmt, va_list ap)
{
    crash_report *r = p->r;
    if (r->nwarnings >= CRASH_MAX_WARNINGS) {
        r->nwarnings_dropped++;
        return SYMD_OK;
    }
    char msg[240];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (!array_grow((void **)&r->warnings, &p->cap_warnings, r->nwarnings + 1,
                    sizeof *r->warnings))
        return cp_nomem(p);
    crash_warning *w = &r->warnings[r->nwarnings];
    w->where = w->message = NULL;
    if (cp_set_str(p, &w->where, where, strlen(where)) ||
        cp_set_str(p, &w->message, msg, strlen(msg))) {
        free(w->where);
        return p->err->kind;
    }
    r->nwarnings++;
    return SYMD_OK;
}

symd_status cp_warn(cp *p, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    symd_status st = vwarn(p, where, fmt, ap);
    va_end(ap);
    return st;
}

symd_status cp_warn_line(cp *p, size_t line, const char *fmt, ...)
{
    char where[32];
    snprintf(where, sizeof where, "line %zu", line);
    va_list ap;
    va_start(ap, fmt);
    symd_status st = vwarn(p, where, fmt, ap);
    va_end(ap);
    return st;
}

bool cp_dec_parse(const char *s, const char *e, uint64_t max, uint64_t *v)
{
    if (s >= e)
        return false;
    uint64_t x = 0;
    for (; s < e; s++) {
        if (!cp_is_digit(*s))
            return false;
        if (__builtin_mul_overflow(x, 10, &x) ||
            __builtin_add_overflow(x, (uint64_t)(*s - '0'), &x) || x > max)
            return false;
    }
    *v = x;
    return true;
}

/* A hex token "0x..." ending at whitespace or e; its end, or NULL. */
const char *cp_hex_token(const char *s, const char *e)
{
    if (e - s < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !cp_is_hex(s[2]))
        return NULL;
    const char *q = s + 2;
    while (q < e && cp_is_hex(*q))
        q++;
    return q == e || cp_is_ws(*q) ? q : NULL;
}

bool cp_line_valid(const char *s, const char *e, size_t *col)
{
    /* Fast path: 8 bytes at a time while they are ASCII without NUL (the
     * high bit clear in every byte, and no byte zero), which is nearly
     * every report line. */
    const char *c = s;
    while (e - c >= 8) {
        uint64_t w;
        memcpy(&w, c, 8);
        uint64_t zero = (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
        if ((w & 0x8080808080808080ull) || zero)
            break;
        c += 8;
    }
    for (; c < e;) {
        size_t k = *c ? utf8_seq_len((const unsigned char *)c, (const unsigned char *)e) : 0;
        if (!k) {
            *col = (size_t)(c - s) + 1;
            return false;
        }
        c += k;
    }
    return true;
}

symd_status cp_add_register(cp *p, const char *name, size_t nlen, const char *val, size_t vlen,
                            const char *where)
{
    crash_report *r = p->r;
    if (r->nregisters >= CRASH_MAX_REGISTERS)
        return symd_fail(p->err, SYMD_E_TOO_LARGE, "%s: more than %d registers", where,
                         CRASH_MAX_REGISTERS);
    if (!array_grow((void **)&r->registers, &p->cap_regs, r->nregisters + 1,
                    sizeof *r->registers))
        return cp_nomem(p);
    crash_kv *kv = &r->registers[r->nregisters];
    kv->name = kv->value = NULL;
    r->nregisters++;
    if (cp_set_str(p, &kv->name, name, nlen) || cp_set_str(p, &kv->value, val, vlen))
        return p->err->kind;
    return SYMD_OK;
}

symd_status cp_new_thread(cp *p, crash_thread **out, const char *where)
{
    crash_report *r = p->r;
    if (r->nthreads >= CRASH_MAX_THREADS)
        return symd_fail(p->err, SYMD_E_TOO_LARGE, "%s: more than %d threads", where,
                         CRASH_MAX_THREADS);
    size_t cap = p->cap_threads;
    if (!array_grow((void **)&r->threads, &p->cap_threads, r->nthreads + 1, sizeof *r->threads))
        return cp_nomem(p);
    if (p->cap_threads != cap) {
        size_t *fc = realloc(p->cap_frames, p->cap_threads * sizeof *fc);
        if (!fc) {
            p->cap_threads = cap; /* the threads array grew; its capacity stays usable */
            return cp_nomem(p);
        }
        p->cap_frames = fc;
    }
    crash_thread *th = &r->threads[r->nthreads];
    memset(th, 0, sizeof *th);
    th->number = -1;
    th->process = -1;
    p->cap_frames[r->nthreads] = 0;
    r->nthreads++;
    *out = th;
    return SYMD_OK;
}

symd_status cp_new_frame(cp *p, size_t t, crash_frame **out, const char *where)
{
    crash_report *r = p->r;
    crash_thread *th = &r->threads[t];
    if (r->total_frames >= CRASH_MAX_FRAMES)
        return symd_fail(p->err, SYMD_E_TOO_LARGE, "%s: more than %d frames", where,
                         CRASH_MAX_FRAMES);
    if (!array_grow((void **)&th->frames, &p->cap_frames[t], th->nframes + 1, sizeof *th->frames))
        return cp_nomem(p);
    crash_frame *f = &th->frames[th->nframes++];
    memset(f, 0, sizeof *f);
    f->image = -1;
    r->total_frames++;
    *out = f;
    return SYMD_OK;
}

const char *cp_open_paren(const char *s, const char *e)
{
    if (e <= s || e[-1] != ')')
        return NULL;
    int depth = 0;
    for (const char *o = e; o > s;) {
        o--;
        if (*o == ')')
            depth++;
        else if (*o == '(' && --depth == 0)
            return o;
    }
    return NULL;
}

void cp_frame_src(const cp *p, crash_frame *f, crash_src_style style, const char *ls,
                  const char *le, const char *ds, const char *de)
{
    if (!(ls <= ds && ds <= de && de <= le) || !cp_in_input(p, ls, (size_t)(le - ls)))
        return;
    f->src = style;
    f->line_off = (size_t)(ls - p->in);
    f->line_end = (size_t)(le - p->in);
    f->desc_off = (size_t)(ds - p->in);
    f->desc_end = (size_t)(de - p->in);
}

symd_status cp_new_image(cp *p, crash_image **out, const char *where)
{
    crash_report *r = p->r;
    if (r->nimages >= CRASH_MAX_IMAGES)
        return symd_fail(p->err, SYMD_E_TOO_LARGE, "%s: more than %d images", where,
                         CRASH_MAX_IMAGES);
    if (!array_grow((void **)&r->images, &p->cap_images, r->nimages + 1, sizeof *r->images))
        return cp_nomem(p);
    crash_image *im = &r->images[r->nimages++];
    memset(im, 0, sizeof *im);
    im->process = -1;
    *out = im;
    return SYMD_OK;
}

symd_status cp_new_process(cp *p, crash_process **out, const char *where)
{
    crash_report *r = p->r;
    if (r->nprocesses >= CRASH_MAX_PROCESSES)
        return symd_fail(p->err, SYMD_E_TOO_LARGE, "%s: more than %d processes", where,
                         CRASH_MAX_PROCESSES);
    if (!array_grow((void **)&r->processes, &p->cap_procs, r->nprocesses + 1,
                    sizeof *r->processes))
        return cp_nomem(p);
    crash_process *pr = &r->processes[r->nprocesses++];
    memset(pr, 0, sizeof *pr);
    pr->pid = -1;
    *out = pr;
    return SYMD_OK;
}

symd_status cp_add_verbatim(cp *p, crash_place at, size_t thread, const char *s, size_t n)
{
    crash_report *r = p->r;
    crash_block *b = r->nblocks ? &r->blocks[r->nblocks - 1] : NULL;
    if (!b || b->at != at || b->thread != thread) {
        if (!array_grow((void **)&r->blocks, &p->cap_blocks, r->nblocks + 1, sizeof *r->blocks))
            return cp_nomem(p);
        b = &r->blocks[r->nblocks++];
        b->at = at;
        b->thread = thread;
        b->text = NULL;
        b->len = 0;
        b->cap = 0;
    }
    if (!array_grow((void **)&b->text, &b->cap, b->len + n + 2, 1))
        return cp_nomem(p);
    memcpy(b->text + b->len, s, n);
    b->len += n;
    b->text[b->len++] = '\n';
    b->text[b->len] = 0;
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

symd_status cp_resolve_text_images(cp *p)
{
    crash_report *r = p->r;
    if (!r->nimages)
        return SYMD_OK;
    img_key *byname = malloc(r->nimages * sizeof *byname);
    img_key *byaddr = malloc(r->nimages * sizeof *byaddr);
    if (!byname || !byaddr) {
        free(byname);
        free(byaddr);
        return cp_nomem(p);
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
            if (fr->image >= 0)
                continue; /* the reader knew it */
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

/* ---- app or system ------------------------------------------------------------ */

/* Folders of Apple's OS (macOS, iOS and its kin, and their simulator
 * runtimes under their root). */
static const char *const os_dirs[] = {
    "/System/", "/usr/lib/", "/usr/libexec/", "/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/",
    "/Library/Apple/", "/private/preboot/Cryptexes/", "/AppleInternal/", NULL,
};

/* Where a path goes on inside a simulator runtime's root (a simruntime's
 * ".../RuntimeRoot", an SDK's ".../iPhoneSimulator.sdk"): the '/' after the
 * root; NULL when the path is in none. */
static const char *after_sim_root(const char *path)
{
    const char *p = strstr(path, "/RuntimeRoot/");
    if (p)
        return p + strlen("/RuntimeRoot");
    p = strstr(path, "Simulator.sdk/");
    return p ? p + strlen("Simulator.sdk") : NULL;
}

static bool in_os_dir(const char *path)
{
    for (size_t i = 0; os_dirs[i]; i++)
        if (strncmp(path, os_dirs[i], strlen(os_dirs[i])) == 0)
            return true;
    return false;
}

/* Whether arch names arm64 (arm64, arm64e, "ARM-64 (Native)"); -1 when arch
 * says nothing (NULL or empty). */
static int is_arm64(const char *a)
{
    if (!a || !*a)
        return -1;
    return strcasestr(a, "arm64") || strcasestr(a, "arm-64");
}

/* The arm64 shared region: SHARED_REGION_BASE_ARM64 and the largest region
 * iOS and macOS have mapped the dyld shared cache in (6 GB). */
#define ARM64_SHARED_REGION_LO 0x180000000ull
#define ARM64_SHARED_REGION_HI 0x300000000ull
#define KERNEL_SPACE_LO 0xFFFF000000000000ull

/* The rules of crash_classify_images for one image. */
static bool image_is_system(const crash_report *r, const crash_image *im)
{
    if (im->load_address >= KERNEL_SPACE_LO || im->source == 'T')
        return true;
    if (im->source == 'S' ||
        (r->has_shared_cache && im->load_address >= r->shared_cache_base &&
         im->load_address - r->shared_cache_base < r->shared_cache_size))
        return true;
    if (im->path && *im->path) {
        const char *sim = after_sim_root(im->path);
        if (sim)
            return in_os_dir(sim);
        if (!im->plus && in_os_dir(im->path))
            return true;
    }
    /* the report's own word that it is not the OS's, or no cache image */
    if (im->plus || im->source)
        return false;
    int arm = is_arm64(im->arch);
    if (arm < 0)
        arm = is_arm64(r->code_type);
    return arm != 0 && im->load_address >= ARM64_SHARED_REGION_LO &&
           im->load_address < ARM64_SHARED_REGION_HI;
}

void crash_classify_images(crash_report *r)
{
    for (size_t i = 0; i < r->nimages; i++)
        r->images[i].system = image_is_system(r, &r->images[i]);
}

/* ---- detection and entry ---------------------------------------------------- */

/* Whether the line [s, e), blanks before it aside, opens a section of a
 * text report: a thread, an exception backtrace, or the Binary Images. */
static bool is_section_heading(const char *s, const char *e)
{
    if (cp_starts(s, e, "Thread ")) {
        const char *d = cp_digits_end(s + 7, e);
        if (d == s + 7)
            return false;
        static const char *const tails[] = {":", " Crashed:", " name:", " Attributed:",
                                            " crashed with "};
        for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++)
            if (cp_starts(d, e, tails[i]))
                return true;
        return false;
    }
    return cp_starts(s, e, "Binary Images") || cp_starts(s, e, "Last Exception Backtrace:") ||
           cp_starts(s, e, "Application Specific Backtrace ");
}

/* Whether [s, e) is the first frame of a backtrace: "0  image  0xADDR ..."
 * (the address with "0x", or 16 or 18 bare hex digits). */
static bool is_first_frame(const char *s, const char *e)
{
    if (e - s < 2 || s[0] != '0' || !cp_is_ws(s[1]))
        return false;
    const char *q = s + 1;
    while (q < e && cp_is_ws(*q))
        q++;
    if (q == e)
        return false; /* no image name */
    for (q++; q < e; q++) {
        if (!cp_is_ws(q[-1]) || cp_is_ws(*q))
            continue;
        if (cp_hex_token(q, e))
            return true;
        const char *h = q;
        while (h < e && cp_is_hex(*h))
            h++;
        if ((h - q == 16 || h - q == 18) && (h == e || cp_is_ws(*h)))
            return true;
    }
    return false;
}

/* Whether [s, e) reads as a text report or a piece of one: its first line
 * is a header key; or a line, indentation aside, opens a header ("Incident
 * Identifier:"), a thread section, an exception backtrace or the Binary
 * Images; or is the first line of a backtrace. Text that holds none of
 * those is no report. */
static bool looks_like_text_report(const char *s, const char *e)
{
    static const char *const first[] = {
        "Incident Identifier:", "CrashReporter Key:", "Hardware Model:", "Process:",
        "Path:", "Identifier:", "Date/Time:", "OS Version:", "Report Version:",
        "Exception Type:", "Code Type:", "Version:",
    };
    const char *le = memchr(s, '\n', (size_t)(e - s));
    for (size_t i = 0; i < sizeof first / sizeof first[0]; i++)
        if (cp_starts(s, le ? le : e, first[i]))
            return true;
    for (const char *q = s; q < e;) {
        const char *nl = memchr(q, '\n', (size_t)(e - q));
        const char *end = nl ? nl : e, *c = q;
        while (c < end && cp_is_ws(*c))
            c++;
        if (end > c && end[-1] == '\r')
            end--;
        if (cp_starts(c, end, "Incident Identifier:") || cp_starts(c, end, "CrashReporter Key:") ||
            is_section_heading(c, end) || is_first_frame(c, end))
            return true;
        q = nl ? nl + 1 : e;
    }
    return false;
}

/* The .ips header's "slice_uuid" is the main binary's: it goes to the
 * app's image when the body gives that image no UUID (the microstackshot
 * reports list it as "0x104320000 - ??? com.example.App ..."). The app's
 * image: the one marked so, else the one named like the process. */
static void app_uuid_from_header(crash_report *r, json_t *hdr)
{
    json_t *u = json_object_get(hdr, "slice_uuid");
    uint8_t uuid[16];
    if (!json_is_string(u) || !uuid_parse(json_string_value(u), uuid))
        return;
    crash_image *app = NULL;
    for (size_t i = 0; i < r->nimages && !app; i++)
        if (r->images[i].is_app)
            app = &r->images[i];
    for (size_t i = 0; i < r->nimages && !app && r->process; i++)
        if (r->images[i].name && strcmp(r->images[i].name, r->process) == 0)
            app = &r->images[i];
    if (app && !app->has_uuid) {
        memcpy(app->uuid, uuid, 16);
        app->has_uuid = true;
    }
}

/* The end (past its '}') of the JSON object starting at s ('{'), scanned
 * within [s, e): braces counted outside strings; NULL when it does not end
 * there. Linear, no recursion. */
static const char *object_end(const char *s, const char *e)
{
    size_t depth = 0;
    bool in_str = false;
    for (const char *c = s; c < e; c++) {
        if (in_str) {
            if (*c == '\\')
                c++;
            else if (*c == '"')
                in_str = false;
        } else if (*c == '"') {
            in_str = true;
        } else if (*c == '{' || *c == '[') {
            depth++;
        } else if (*c == '}' || *c == ']') {
            if (!depth)
                return NULL;
            if (!--depth)
                return c + 1;
        }
    }
    return NULL;
}

/* Keys a long header line is read for: the header's own, and the body's
 * when the line is the whole report. */
static bool header_reads_key(const char *key)
{
    static const char *const hdr[] = {"bug_type", "slice_uuid", "bundleID", "app_version",
                                      "os_version", "incident_id", "name", "app_name",
                                      "timestamp", NULL};
    for (size_t i = 0; hdr[i]; i++)
        if (strcmp(key, hdr[i]) == 0)
            return true;
    return crash_ips_reads_key(key);
}

/* Whether a header object holds members of a body (a whole report written
 * as one object). */
static bool holds_body(json_t *hdr)
{
    static const char *const body[] = {"threads", "processByPid", "processes", "panicString",
                                       "usedImages", "binaryImages", "exception", NULL};
    for (size_t i = 0; body[i]; i++)
        if (json_object_get(hdr, body[i]))
            return true;
    return false;
}

static symd_status parse_any(cp *p, const char *s, size_t len)
{
    crash_report *r = p->r;
    if (len >= 7 && memcmp(s, PLCRASH_MAGIC, 7) == 0) /* binary: PLCrashReporter */
        return crash_parse_plcrash(p, (const uint8_t *)s, len);
    if (crash_looks_like_minidump((const uint8_t *)s, len)) /* raw, or a Crashpad upload */
        return crash_parse_minidump(p, (const uint8_t *)s, len);
    const char *e = s + len, *q = s;
    if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
        q += 3;
    size_t skipped = 0; /* blank lines before the first one */
    for (;;) {
        const char *c = q;
        while (c < e && (cp_is_ws(*c) || *c == '\r'))
            c++;
        if (c < e && *c == '\n') {
            q = c + 1;
            skipped++;
            continue;
        }
        break;
    }
    /* q: the first line that is not blank, its indentation kept (a pasted
     * call tree starts indented); c0: its first character. */
    const char *c0 = q;
    while (c0 < e && (cp_is_ws(*c0) || *c0 == '\r'))
        c0++;
    if (c0 < e && *c0 == '{') {
        /* JSON: no line limit (the body is bounded by --max-json, the parse
         * by the request's memory budget). The header is the first object
         * of the line; a body may follow it on the same line, and a line
         * that is one object holding the body's members too is the whole
         * report (SDKs write them so). */
        q = c0;
        const char *nl = memchr(q, '\n', (size_t)(e - q));
        const char *he = nl ? nl : e, *oe = object_end(q, he);
        bool same_line = false;
        if (oe) {
            const char *t = oe;
            while (t < he && (cp_is_ws(*t) || *t == '\r'))
                t++;
            if (t < he && *t == '{') { /* "{header}{body}" on one line */
                same_line = true;
                he = oe;
            }
        }
        json_error_t je;
        size_t hskipped;
        json_t *hdr = (size_t)(he - q) > CRASH_MAX_LINE
                          ? jsonbig_load_members(q, (size_t)(he - q), header_reads_key,
                                                 IPS_UNKNOWN_BUDGET, &hskipped, &je)
                          : jsonbig_loadb(q, (size_t)(he - q), 0, &je);
        json_t *bt = hdr ? json_object_get(hdr, "bug_type") : NULL;
        if (!json_is_object(hdr) || !bt) {
            json_decref(hdr);
            /* One JSON document of an in-app reporter's shape (KSCrash)? */
            json_t *doc = NULL;
            if (memmem(q, (size_t)(e - q), "\"report\"", 8) &&
                (memmem(q, (size_t)(e - q), "\"crash\"", 7) ||
                 memmem(q, (size_t)(e - q), "\"binary_images\"", 15) ||
                 memmem(q, (size_t)(e - q), "\"system\"", 8)))
            {
                /* big values of keys the reader only keeps (user, debug...)
                 * past a budget are skipped unread, as .ips bodies do */
                size_t nskipped;
                doc = jsonbig_load_members(q, (size_t)(e - q), crash_kscrash_reads_key,
                                           KSCRASH_UNKNOWN_BUDGET, &nskipped, &je);
            }
            if (crash_looks_like_kscrash(doc)) {
                symd_status st = crash_parse_kscrash(p, doc);
                json_decref(doc);
                return st;
            }
            json_decref(doc);
            return symd_fail(p->err, SYMD_E_NOT_CRASH_REPORT,
                             "a JSON document that is no .ips crash report (no bug_type header "
                             "line) nor a KSCrash report");
        }
        r->format = CRASH_FORMAT_IPS;
        if (json_is_integer(bt) && json_integer_value(bt) >= 0 && json_integer_value(bt) < 100000)
            r->bug_type = (int)json_integer_value(bt);
        else if (json_is_string(bt) && json_string_length(bt) < 6)
            r->bug_type = atoi(json_string_value(bt));
        r->kind = crash_kind_of_bug_type(r->bug_type);
        /* the header line as written; a whole report on one line is not kept twice */
        symd_status st = (size_t)(he - q) <= CRASH_MAX_LINE
                             ? cp_set_str(p, &r->header_json, q, (size_t)(he - q))
                             : SYMD_OK;
        if (st) {
            json_decref(hdr);
            return st;
        }
        const char *b = same_line ? he : nl ? nl + 1 : e, *bs = b;
        size_t body_line = same_line ? skipped + 1 : skipped + 2;
        while (bs < e && (cp_is_ws(*bs) || *bs == '\r' || *bs == '\n'))
            bs++;
        if (bs == e && holds_body(hdr)) {
            st = crash_parse_ips_body(p, hdr, hdr); /* header and body in one object */
        } else if (bs == e) {
            st = cp_warn_line(p, body_line, "the .ips report has no body: only its header is read");
        } else if (*bs == '{') {
            size_t nskipped;
            json_t *root = jsonbig_load_members(b, (size_t)(e - b), crash_ips_reads_key,
                                                IPS_UNKNOWN_BUDGET, &nskipped, &je);
            if (!root) {
                /* Kept with its header, the body as text for rendering. */
                st = cp_warn_line(p, body_line - 1 + (size_t)je.line,
                                  "the JSON body does not parse (column %d: %s); only the "
                                  "header and what can be found in the text are read",
                                  je.column, je.text);
                r->text_body = true; /* rendered as written: nothing in it reads */
                if (!st)
                    st = crash_parse_ips_broken(p, b, (size_t)(e - b), hdr);
            } else {
                st = crash_parse_ips_body(p, root, hdr);
                json_decref(root);
            }
        } else if (crash_looks_like_sample(b, (size_t)(e - b))) {
            r->text_body = true;
            st = crash_parse_sample(p, b, (size_t)(e - b), body_line);
        } else if (r->kind == CRASH_KIND_PANIC && crash_looks_like_panic(b, (size_t)(e - b))) {
            r->text_body = true;
            st = crash_parse_panic_text(p, b, (size_t)(e - b), body_line);
        } else {
            r->text_body = true;
            st = crash_parse_text(p, b, (size_t)(e - b), body_line);
        }
        if (!st)
            app_uuid_from_header(r, hdr);
        json_decref(hdr);
        return st;
    }
    r->format = CRASH_FORMAT_CRASH;
    r->text_body = true;
    if (crash_looks_like_sample(q, (size_t)(e - q)))
        return crash_parse_sample(p, q, (size_t)(e - q), skipped + 1);
    if (crash_looks_like_panic(q, (size_t)(e - q))) {
        r->kind = CRASH_KIND_PANIC;
        return crash_parse_panic_text(p, q, (size_t)(e - q), skipped + 1);
    }
    if (!looks_like_text_report(q, e))
        return symd_fail(p->err, SYMD_E_NOT_CRASH_REPORT,
                         "not a crash report: no .ips header line, and no header, thread, "
                         "backtrace or Binary Images of a text report");
    r->kind = CRASH_KIND_CRASH; /* crash_parse_text says when it is a fragment */
    return crash_parse_text(p, q, (size_t)(e - q), skipped + 1);
}

#define KS_ARRAY_MAX_PARTS 4096 /* reports in one KSCrash array */

/* A JSON array of KSCrash reports, as KSCrash's standard sink posts a batch:
 * the first character past blanks is '[' and the bytes name KSCrash's keys.
 * Only a hint: kscrash_array_parse decides. */
static bool looks_like_kscrash_array(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i < n && s[i] == '[' && memmem(s, n, "\"report\"", 8) &&
           (memmem(s, n, "\"crash\"", 7) || memmem(s, n, "\"binary_images\"", 15) ||
            memmem(s, n, "\"system\"", 8));
}

/* The KSCrash reports of a JSON array s[0..n): part k is the array's k-th
 * element of KSCrash's shape (its warnings' paths are the element's own);
 * elements of another shape are skipped with a warning on part 0. want as
 * crash_parse_metrickit's: SIZE_MAX for every part, else that part alone.
 * SYMD_E_NOT_CRASH_REPORT when no element is a KSCrash report. */
static symd_status kscrash_array_parse(const char *s, size_t n, size_t want, crash_report **out,
                                       size_t *nout, symd_err *err)
{
    *out = NULL;
    *nout = 0;
    json_error_t je;
    json_t *root = jsonbig_loadb(s, n, 0, &je);
    if (!root)
        return strstr(je.text, "depth")
                   ? symd_fail(err, SYMD_E_TOO_LARGE,
                               "line %d: the JSON nests deeper than %d levels", je.line,
                               JSON_PARSER_MAX_DEPTH)
                   : symd_fail(err, SYMD_E_NOT_CRASH_REPORT,
                               "a JSON array of KSCrash reports that is no JSON (line %d "
                               "column %d: %s)",
                               je.line, je.column, je.text);
    size_t total = json_array_size(root), parts = 0;
    for (size_t i = 0; i < total; i++)
        parts += crash_looks_like_kscrash(json_array_get(root, i));
    symd_status st = SYMD_OK;
    if (!json_is_array(root) || !parts)
        st = symd_fail(err, SYMD_E_NOT_CRASH_REPORT,
                       "a JSON array with no KSCrash report in it (an object with report.id "
                       "and report.version, and crash, binary_images or system)");
    else if (parts > KS_ARRAY_MAX_PARTS)
        st = symd_fail(err, SYMD_E_TOO_LARGE, "more than %d KSCrash reports in one array (%zu)",
                       KS_ARRAY_MAX_PARTS, parts);
    else if (want != SIZE_MAX && want >= parts)
        st = symd_fail(err, SYMD_E_NOT_FOUND, "the array holds %zu KSCrash reports, no part %zu",
                       parts, want);
    size_t cnt = want == SIZE_MAX ? parts : 1, k = 0, frames = 0;
    crash_report *rs = st ? NULL : calloc(cnt, sizeof *rs);
    if (!st && !rs)
        st = symd_fail(err, SYMD_E_NOMEM, "out of memory reading the KSCrash reports");
    size_t done = 0;
    for (size_t i = 0; !st && i < total && done < cnt; i++) {
        json_t *e = json_array_get(root, i);
        if (!crash_looks_like_kscrash(e))
            continue;
        size_t part = k++;
        if (want != SIZE_MAX && part != want)
            continue;
        crash_report *r = &rs[done++];
        r->crashed_thread = -1;
        cp p = {.r = r, .err = err, .in = s, .in_len = n};
        st = crash_parse_kscrash(&p, e);
        free(p.cap_frames);
        r->part = part;
        r->nparts = parts;
        frames += r->total_frames;
        if (!st && frames > 4u * CRASH_MAX_FRAMES)
            st = symd_fail(err, SYMD_E_TOO_LARGE, "more than %u frames over the array's reports",
                           4u * CRASH_MAX_FRAMES);
    }
    /* what is no KSCrash report is said once, on the first report */
    for (size_t i = 0; !st && rs[0].part == 0 && i < total; i++) {
        json_t *e = json_array_get(root, i);
        if (crash_looks_like_kscrash(e))
            continue;
        cp p = {.r = &rs[0], .err = err, .in = s, .in_len = n, .cap_warnings = rs[0].nwarnings};
        char at[32];
        snprintf(at, sizeof at, "[%zu]", i);
        st = cp_warn(&p, at, "this element of the array is no KSCrash report: not read");
    }
    json_decref(root);
    if (st) {
        crash_reports_free(rs, done);
        return st;
    }
    *out = rs;
    *nout = cnt;
    return SYMD_OK;
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
    bool mk = buf && crash_looks_like_metrickit((const char *)buf, len);
    if (mk || (buf && looks_like_kscrash_array((const char *)buf, len))) {
        crash_report *one = NULL;
        size_t n = 0;
        symd_status st =
            mk ? crash_parse_metrickit((const char *)buf, len, 0, &one, &n, err)
               : kscrash_array_parse((const char *)buf, len, 0, &one, &n, err);
        if (st)
            return st;
        *r = one[0];
        free(one);
        crash_classify_images(r);
        if (r->nparts > 1) {
            cp p = {.r = r, .err = err, .in = (const char *)buf, .in_len = len,
                    .cap_warnings = r->nwarnings};
            st = cp_warn(&p, "body",
                         "the input holds %zu %s: this is the first alone "
                         "(crash_parse_all reads every one)",
                         r->nparts, mk ? "diagnostics" : "KSCrash reports");
            if (st)
                crash_report_free(r);
        }
        return st;
    }
    cp p = {.r = r, .err = err, .in = (const char *)buf, .in_len = buf ? len : 0};
    if (!buf)
        len = 0;
    symd_status st = parse_any(&p, (const char *)buf, len);
    free(p.cap_frames);
    if (st)
        crash_report_free(r);
    else
        crash_classify_images(r);
    return st;
}

symd_status crash_parse_all(const uint8_t *buf, size_t len, crash_report **out, size_t *n,
                            symd_err *err)
{
    *out = NULL;
    *n = 0;
    symd_err local;
    if (!err) {
        symd_err_clear(&local);
        err = &local;
    }
    bool mk = buf && crash_looks_like_metrickit((const char *)buf, len);
    if (mk || (buf && looks_like_kscrash_array((const char *)buf, len))) {
        symd_status st = mk ? crash_parse_metrickit((const char *)buf, len, SIZE_MAX, out, n, err)
                            : kscrash_array_parse((const char *)buf, len, SIZE_MAX, out, n, err);
        for (size_t i = 0; !st && i < *n; i++)
            crash_classify_images(&(*out)[i]);
        return st;
    }
    crash_report *r = calloc(1, sizeof *r);
    if (!r)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory reading the crash report");
    symd_status st = crash_parse(buf, len, r, err);
    if (st) {
        free(r);
        return st;
    }
    r->nparts = 1;
    *out = r;
    *n = 1;
    return SYMD_OK;
}

symd_status crash_parse_part(const uint8_t *buf, size_t len, size_t part, crash_report *out,
                             symd_err *err)
{
    symd_err local;
    if (!err) {
        symd_err_clear(&local);
        err = &local;
    }
    memset(out, 0, sizeof *out);
    out->crashed_thread = -1;
    bool mk = buf && crash_looks_like_metrickit((const char *)buf, len);
    if (mk || (buf && looks_like_kscrash_array((const char *)buf, len))) {
        crash_report *one = NULL;
        size_t n = 0;
        symd_status st = mk ? crash_parse_metrickit((const char *)buf, len, part, &one, &n, err)
                            : kscrash_array_parse((const char *)buf, len, part, &one, &n, err);
        if (st)
            return st;
        *out = one[0];
        free(one);
        crash_classify_images(out);
        return SYMD_OK;
    }
    if (part != 0)
        return symd_fail(err, SYMD_E_NOT_FOUND, "the report has no part %zu", part);
    symd_status st = crash_parse(buf, len, out, err);
    if (!st)
        out->nparts = 1;
    return st;
}

void crash_reports_free(crash_report *r, size_t n)
{
    for (size_t i = 0; r && i < n; i++)
        crash_report_free(&r[i]);
    free(r);
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
                     &r->exception_codes, &r->termination, &r->text_header,
                     &r->app_specific, &r->panic_string, &r->app_build,
                     &r->vm_region_info};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        free(*strs[i]);
    for (size_t i = 0; i < r->nthreads; i++) {
        free(r->threads[i].name);
        free(r->threads[i].queue);
        free(r->threads[i].title);
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
    for (size_t i = 0; i < r->nblocks; i++)
        free(r->blocks[i].text);
    free(r->blocks);
    for (size_t i = 0; i < r->nprocesses; i++) {
        free(r->processes[i].name);
        free(r->processes[i].path);
        free(r->processes[i].detail);
    }
    free(r->processes);
    for (size_t i = 0; i < r->nwarnings; i++) {
        free(r->warnings[i].where);
        free(r->warnings[i].message);
    }
    free(r->warnings);
    for (size_t i = 0; i < r->nmetrics; i++) {
        free(r->metrics[i].name);
        free(r->metrics[i].value);
    }
    free(r->metrics);
    for (size_t i = 0; i < r->nannotations; i++) {
        free(r->annotations[i].name);
        free(r->annotations[i].value);
    }
    free(r->annotations);
    memset(r, 0, sizeof *r);
    r->crashed_thread = -1;
}

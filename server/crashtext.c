/* A crash report as text, symbolicated or as the report said (contract in
 * crashsym.h).
 *
 * A report read from text is its input, with the lines of symbolicated
 * frames rewritten (render_input); one read from JSON is written from the
 * model in the text layout (render_synth). Line formats of the latter:
 *
 *   Thread 0 name:  Dispatch queue: com.apple.main-thread   (queue, else name)
 *   Thread 0 Crashed:                                       (or "Thread 1:")
 *   N   image (padded to 30)\t0xPC ...                     ("%-4zu%-30s\t0x%016llx ",
 *                                                           0x%08llx in 32-bit reports)
 *
 * What follows the address:
 *   - symbolicated, each inlined level first, same N, image and PC:
 *       inlined_fn (file.c:12)
 *     then the function holding the address:
 *       outer_fn + 16 (file.c:34)
 *     (" + off" only when the level has an offset, " (file:line)" only when
 *     the file is known, ":line" only when non-zero; the file is its last
 *     path component, as Apple prints it);
 *   - otherwise the report's own words: "0xLOAD + off" (decimal offset), then
 *     the report's symbol "(sym + off)" in parentheses when there was a load
 *     address (KSCrash's layout) or bare "sym + off" when not, then
 *     " (file:line)" as the report gave it. A frame with none of these ends
 *     at its address.
 *
 * Every string that came from a report or an upload goes out as valid UTF-8:
 * C0/C1 controls, DEL and U+2028/U+2029 become a space, invalid bytes
 * U+FFFD; a single field stops after CT_MAX_FIELD input bytes ("..." marks
 * the cut) and stays on one line. Text kept as written (the input, a panic
 * string) keeps its newlines and tabs (CR LF becomes LF). */
#include "crashsym.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../util/util.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define CT_MAX_FIELD 16384

typedef struct {
    dynbuf *b;
    symd_status st;
} tw;

static void put(tw *w, const void *p, size_t n)
{
    if (w->st != SYMD_OK)
        return;
    if (!dynbuf_add(w->b, p, n))
        w->st = dynbuf_over_limit(w->b, n) ? SYMD_E_TOO_LARGE : SYMD_E_NOMEM;
}

static void puts_(tw *w, const char *s) { put(w, s, strlen(s)); }

/* Numbers and fixed words only: never a string from a report. */
__attribute__((format(printf, 2, 3))) static void putf(tw *w, const char *fmt, ...)
{
    char tmp[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof tmp)
        n = sizeof tmp - 1;
    put(w, tmp, (size_t)n);
}

static void spaces(tw *w, size_t n)
{
    static const char sp[32] = "                                ";
    while (n) {
        size_t k = n < sizeof sp ? n : sizeof sp;
        put(w, sp, k);
        n -= k;
    }
}

/* Writes s[0..n) as UTF-8 text (see the top of the file); returns the bytes
 * written. multiline keeps '\n' and '\t'. */
static size_t put_text_n(tw *w, const char *s, size_t n, bool multiline)
{
    size_t start = w->b->len;
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    const unsigned char *run = p; /* bytes copied as they are */
    while (p < end) {
        unsigned c = *p;
        const char *subst = NULL;
        size_t adv = 1;
        if (c < 0x80) {
            if (c >= 0x20 && c != 0x7f) {
                p++;
                continue;
            }
            if (multiline && (c == '\n' || c == '\t')) {
                p++;
                continue;
            }
            if (multiline && c == '\r' && p + 1 < end && p[1] == '\n')
                subst = "";
            else
                subst = " ";
        } else {
            size_t k = utf8_seq_len(p, end);
            if (k == 0) {
                subst = "\xef\xbf\xbd";
            } else {
                unsigned cp;
                if (k == 2)
                    cp = (c & 0x1fu) << 6 | (p[1] & 0x3fu);
                else if (k == 3)
                    cp = (c & 0x0fu) << 12 | (p[1] & 0x3fu) << 6 | (p[2] & 0x3fu);
                else
                    cp = 0x10000; /* nothing to replace among 4-byte sequences */
                if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
                    subst = " ";
                adv = k;
                if (!subst) {
                    p += k;
                    continue;
                }
            }
        }
        put(w, run, (size_t)(p - run));
        puts_(w, subst);
        p += adv;
        run = p;
    }
    put(w, run, (size_t)(p - run));
    return w->st == SYMD_OK ? w->b->len - start : 0;
}

/* One single-line field, cut after CT_MAX_FIELD bytes at a character start. */
static size_t put_field(tw *w, const char *s)
{
    if (!s)
        s = "???";
    size_t n = strlen(s);
    bool cut = false;
    if (n > CT_MAX_FIELD) {
        n = CT_MAX_FIELD;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
        cut = true;
    }
    size_t k = put_text_n(w, s, n, false);
    if (cut) {
        puts_(w, "...");
        k += 3;
    }
    return k;
}

static void put_field_padded(tw *w, const char *s, size_t width)
{
    size_t k = put_field(w, s);
    if (k < width)
        spaces(w, width - k);
}

/* Right-aligned in width (register names). */
static void put_field_right(tw *w, const char *s, size_t width)
{
    size_t start = w->b->len;
    size_t k = put_field(w, s);
    if (w->st != SYMD_OK || k >= width)
        return;
    size_t pad = width - k;
    spaces(w, pad);
    if (w->st != SYMD_OK)
        return;
    memmove(w->b->data + start + pad, w->b->data + start, k);
    memset(w->b->data + start, ' ', pad);
}

static const char *last_component(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* ---- what kind of machine the report comes from ---- */

static int arch_bits(const char *a)
{
    if (!a || !*a)
        return 0;
    if (strcasestr(a, "64_32"))
        return 32;
    if (strstr(a, "64"))
        return 64;
    if (!strncasecmp(a, "arm", 3) || !strncasecmp(a, "x86", 3) || !strncasecmp(a, "i386", 4) ||
        !strncasecmp(a, "ppc", 3))
        return 32;
    return 0;
}

static bool report_is_32bit(const crash_report *r)
{
    int b = arch_bits(r->code_type);
    if (b)
        return b == 32;
    for (size_t i = 0; i < r->nimages; i++)
        if (r->images[i].is_app && (b = arch_bits(r->images[i].arch)))
            return b == 32;
    for (size_t i = 0; i < r->nimages; i++)
        if ((b = arch_bits(r->images[i].arch)))
            return b == 32;
    /* No word on it: 32-bit when every address fits in 32 bits. */
    bool any = false;
    for (size_t t = 0; t < r->nthreads; t++)
        for (size_t f = 0; f < r->threads[t].nframes; f++) {
            if (r->threads[t].frames[f].address > 0xffffffffu)
                return false;
            any = true;
        }
    for (size_t i = 0; i < r->nimages; i++)
        if (r->images[i].load_address > 0xffffffffu)
            return false;
    return any;
}

static bool report_is_x86(const crash_report *r)
{
    const char *c = r->code_type;
    if (c && *c)
        return !strncasecmp(c, "x86", 3) || !strncasecmp(c, "i386", 4);
    for (size_t i = 0; i < r->nimages; i++) {
        const char *a = r->images[i].arch;
        if (a && (!strncasecmp(a, "x86", 3) || !strncasecmp(a, "i386", 4)))
            return true;
        if (a && *a)
            return false;
    }
    return false;
}

static const crash_thread *crashed_thread(const crash_report *r)
{
    if (r->crashed_thread >= 0 && (size_t)r->crashed_thread < r->nthreads)
        return &r->threads[r->crashed_thread];
    for (size_t t = 0; t < r->nthreads; t++)
        if (r->threads[t].crashed)
            return &r->threads[t];
    return NULL;
}

/* ---- header ---- */

static void header_line(tw *w, const char *label, const char *value)
{
    if (!value)
        return;
    puts_(w, label);
    put_field(w, value);
    puts_(w, "\n");
}

/* The kept blocks at place at (and thread t for CRASH_AT_THREAD), as
 * written, each line ended. */
static void blocks_at(tw *w, const crash_report *r, crash_place at, size_t t)
{
    for (size_t i = 0; i < r->nblocks && w->st == SYMD_OK; i++) {
        const crash_block *b = &r->blocks[i];
        if (b->at != at || (at == CRASH_AT_THREAD && b->thread != t) || !b->text)
            continue;
        size_t n = strlen(b->text);
        put_text_n(w, b->text, n, true);
        if (n && b->text[n - 1] != '\n')
            puts_(w, "\n");
    }
}

/* A JSON .ips: the fields the model holds, in the text layout. */
static void synth_header(tw *w, const crash_report *r)
{
    const crash_image *app = NULL;
    for (size_t i = 0; i < r->nimages && !app; i++)
        if (r->images[i].is_app)
            app = &r->images[i];
    header_line(w, "Incident Identifier: ", r->incident_id);
    header_line(w, "Hardware Model:      ", r->hardware_model);
    if (r->process || r->has_pid) {
        puts_(w, "Process:             ");
        if (r->process)
            put_field(w, r->process);
        if (r->has_pid)
            putf(w, r->process ? " [%ld]" : "[%ld]", r->pid);
        puts_(w, "\n");
    }
    header_line(w, "Path:                ", app ? app->path : NULL);
    header_line(w, "Identifier:          ", r->bundle_id);
    header_line(w, "Version:             ", r->app_version);
    header_line(w, "Code Type:           ", r->code_type);
    blocks_at(w, r, CRASH_AT_HEADER, 0);
    puts_(w, "\n");
    header_line(w, "Date/Time:           ", r->date);
    header_line(w, "OS Version:          ", r->os_version);
    puts_(w, "Report Version:      104\n");
    blocks_at(w, r, CRASH_AT_DATE, 0);
    puts_(w, "\n");
    if (r->exception_type || r->exception_signal) {
        puts_(w, "Exception Type:  ");
        if (r->exception_type)
            put_field(w, r->exception_type);
        if (r->exception_signal) {
            puts_(w, r->exception_type ? " (" : "(");
            put_field(w, r->exception_signal);
            puts_(w, ")");
        }
        puts_(w, "\n");
    }
    header_line(w, "Exception Codes: ", r->exception_codes);
    header_line(w, "Termination Reason: ", r->termination);
    size_t before = w->b->len;
    blocks_at(w, r, CRASH_AT_THREAD, 0);
    if (w->st == SYMD_OK && w->b->len > before)
        puts_(w, "\n"); /* VM Region Info ends in its region list */
    const crash_thread *ct = crashed_thread(r);
    if (ct)
        putf(w, "Triggered by Thread:  %ld\n", ct->number);
    puts_(w, "\n");
}

/* ---- frames ---- */

static void put_address(tw *w, bool is32, uint64_t a)
{
    if (is32)
        putf(w, "0x%08llx", (unsigned long long)a);
    else
        putf(w, "0x%016llx", (unsigned long long)a);
}

static void frame_prefix(tw *w, size_t n, const char *image, bool is32, uint64_t pc)
{
    putf(w, "%-4zu", n);
    put_field_padded(w, image, 30);
    puts_(w, "\t");
    put_address(w, is32, pc);
}

/* The report's own words for a frame (what follows "0xPC"). */
static void frame_as_reported(tw *w, const crash_frame *f)
{
    if (f->has_load) {
        putf(w, " 0x%llx", (unsigned long long)f->load_address);
        if (f->address >= f->load_address)
            putf(w, " + %llu", (unsigned long long)(f->address - f->load_address));
        else
            putf(w, " - %llu", (unsigned long long)(f->load_address - f->address));
    }
    if (f->symbol) {
        puts_(w, f->has_load ? " (" : " ");
        put_field(w, f->symbol);
        if (f->has_symbol_offset)
            putf(w, " + %llu", (unsigned long long)f->symbol_offset);
        if (f->has_load)
            puts_(w, ")");
    }
    if (f->file) {
        puts_(w, " (");
        put_field(w, f->file);
        if (f->line)
            putf(w, ":%u", (unsigned)f->line);
        puts_(w, ")");
    }
}

/* "symbol + off" of a level (" + off" only when it has one). */
static void put_sym_off(tw *w, const crash_level *l)
{
    put_field(w, l->symbol);
    if (l->has_offset)
        putf(w, " + %llu", (unsigned long long)l->offset);
}

/* "file.c:12" of a level with a file: its last path component, as Apple
 * prints it, ":line" only when non-zero. */
static void put_file_line(tw *w, const crash_level *l)
{
    put_field(w, last_component(l->file));
    if (l->line)
        putf(w, ":%u", (unsigned)l->line);
}

static void level_place(tw *w, const crash_level *l)
{
    if (!l->file)
        return;
    puts_(w, " (");
    put_file_line(w, l);
    puts_(w, ")");
}

static const char *frame_image(const crash_report *r, const crash_frame *f,
                               const crash_symframe *sf)
{
    if (f->image_name)
        return f->image_name;
    if (f->image >= 0 && (size_t)f->image < r->nimages && r->images[f->image].name)
        return r->images[f->image].name;
    if (sf && sf->image)
        return sf->image;
    return "???";
}

/* One frame as Apple's frame lines; the last line has no newline when
 * last_nl is false. */
static void render_frame_nl(tw *w, const crash_report *r, const crash_frame *f, size_t n,
                            const crash_symframe *sf, bool is32, bool last_nl)
{
    const char *image = frame_image(r, f, sf);
    if (sf && sf->nlevels > 0 && sf->levels) {
        for (size_t i = 0; i + 1 < sf->nlevels; i++) {
            const crash_level *l = &sf->levels[i];
            frame_prefix(w, n, image, is32, f->address);
            puts_(w, " ");
            put_field(w, l->symbol);
            level_place(w, l);
            puts_(w, "\n");
        }
        const crash_level *l = &sf->levels[sf->nlevels - 1];
        frame_prefix(w, n, image, is32, f->address);
        if (l->symbol) {
            puts_(w, " ");
            put_sym_off(w, l);
            level_place(w, l);
        } else {
            /* Nothing to name it by: the report's words, and a place if known. */
            frame_as_reported(w, f);
            if (!f->file)
                level_place(w, l);
        }
    } else {
        frame_prefix(w, n, image, is32, f->address);
        frame_as_reported(w, f);
    }
    if (f->inlined)
        puts_(w, " [inlined]"); /* Apple's marker of an inlined call (.ips "inline") */
    if (f->trust != CRASH_TRUST_NONE) { /* a walked frame: how it was found */
        puts_(w, " [");
        puts_(w, md_trust_name((md_trust)f->trust));
        puts_(w, "]");
    }
    if (last_nl)
        puts_(w, "\n");
}

static void render_frame(tw *w, const crash_report *r, const crash_frame *f, size_t n,
                         const crash_symframe *sf, bool is32)
{
    render_frame_nl(w, r, f, n, sf, is32, true);
}

/* ---- text reports: the input as written, symbolicated frames rewritten ---- */

/* A frame an uploaded image named: its line is rewritten. Frames of images
 * never uploaded keep the report's own words, as written. */
static bool rewritten(const crash_symframe *sf)
{
    return sf && sf->status == CSYM_SYMBOLICATED && sf->nlevels > 0 && sf->levels &&
           sf->levels[sf->nlevels - 1].symbol;
}

/* " [inlined inner (file:line), ...]" for the inlined levels, innermost
 * first, on the frame's own line (call trees and panic backtraces, whose
 * lines carry structure an extra line would break). */
static void inlined_suffix(tw *w, const crash_symframe *sf)
{
    if (sf->nlevels < 2)
        return;
    puts_(w, " [inlined ");
    for (size_t i = 0; i + 1 < sf->nlevels; i++) {
        if (i)
            puts_(w, ", ");
        put_field(w, sf->levels[i].symbol);
        level_place(w, &sf->levels[i]);
    }
    puts_(w, "]");
}

/* Copies in[0..n) as text: valid UTF-8 on every line (see the top of the
 * file), tabs and newlines kept. */
static void put_input(tw *w, const char *in, size_t n)
{
    put_text_n(w, in, n, true);
}

/* The rewritten line of a frame the input holds at f->line_off. */
static void rewrite_frame(tw *w, const crash_report *r, const crash_frame *f,
                          const crash_symframe *sf, const char *in)
{
    const crash_level *l = &sf->levels[sf->nlevels - 1];
    const char *ls = in + f->line_off;
    size_t pre = f->desc_off - f->line_off;
    switch (f->src) {
    case CRASH_SRC_FRAME:
        /* Xcode's layout: a line per inlined level, innermost first, then
         * "outer + off (file:line)", each after the line's own prefix. */
        for (size_t i = 0; i + 1 < sf->nlevels; i++) {
            put_input(w, ls, pre);
            puts_(w, " ");
            put_field(w, sf->levels[i].symbol);
            level_place(w, &sf->levels[i]);
            puts_(w, "\n");
        }
        put_input(w, ls, pre);
        puts_(w, " ");
        put_sym_off(w, l);
        level_place(w, l);
        break;
    case CRASH_SRC_SAMPLE:
        /* sample's own layout: "name  (in Image) + off  [0xPC]  file:line" */
        put_input(w, ls, pre);
        put_field(w, l->symbol);
        inlined_suffix(w, sf);
        puts_(w, "  (in ");
        put_field(w, frame_image(r, f, sf));
        puts_(w, ")");
        if (l->has_offset)
            putf(w, " + %llu", (unsigned long long)l->offset);
        put_input(w, in + f->desc_end, f->line_end - f->desc_end);
        if (l->file && !f->file) {
            puts_(w, "  ");
            put_file_line(w, l);
        }
        return;
    case CRASH_SRC_SPINDUMP: {
        /* spindump's: "name + off (file:line in Image + off) [0xPC]" */
        put_input(w, ls, pre);
        put_sym_off(w, l);
        puts_(w, " (");
        if (l->file) {
            put_file_line(w, l);
            puts_(w, " in ");
        }
        put_field(w, frame_image(r, f, sf));
        if (f->has_load && f->address >= f->load_address)
            putf(w, " + %llu", (unsigned long long)(f->address - f->load_address));
        puts_(w, ")");
        inlined_suffix(w, sf);
        break;
    }
    case CRASH_SRC_PANIC:
        /* the backtrace line as written, the symbol after it */
        put_input(w, ls, pre);
        puts_(w, "  ");
        put_sym_off(w, l);
        level_place(w, l);
        inlined_suffix(w, sf);
        break;
    case CRASH_SRC_NONE:
        return;
    }
    put_input(w, in + f->desc_end, f->line_end - f->desc_end);
}

/* The input in[0..n) with every frame an uploaded image named rewritten in
 * place; every other byte as written. An address list ("(0x1 0x2)") with a
 * symbolicated frame becomes frame lines. */
static void render_input(tw *w, const crash_report *r, const crash_symbolication *s,
                         const char *in, size_t n, bool is32)
{
    size_t pos = 0, k = 0;
    for (size_t t = 0; t < r->nthreads && w->st == SYMD_OK; t++) {
        const crash_thread *th = &r->threads[t];
        const crash_symframe *sfs = s && s->frames ? &s->frames[k] : NULL;
        bool any = false;
        for (size_t f = 0; sfs && f < th->nframes && !any; f++)
            any = rewritten(&sfs[f]);
        if (th->has_list && any && th->list_off >= pos && th->list_off < th->list_end &&
            th->list_end <= n) {
            put_input(w, in + pos, th->list_off - pos);
            if (th->list_off > 0 && in[th->list_off - 1] != '\n')
                puts_(w, "\n");
            for (size_t f = 0; f < th->nframes; f++)
                render_frame_nl(w, r, &th->frames[f], f, &sfs[f], is32, f + 1 < th->nframes);
            pos = th->list_end;
        }
        for (size_t f = 0; f < th->nframes; f++, k++) {
            const crash_frame *fr = &th->frames[f];
            if (!sfs || fr->src == CRASH_SRC_NONE || !rewritten(&sfs[f]) ||
                fr->line_off < pos || fr->line_end > n || fr->desc_end > fr->line_end)
                continue;
            put_input(w, in + pos, fr->line_off - pos);
            rewrite_frame(w, r, fr, &sfs[f], in);
            pos = fr->line_end;
        }
    }
    put_input(w, in + pos, n - pos);
}

/* ---- reports read from JSON: the fields in Apple's text layout ---- */

static void thread_header(tw *w, const crash_thread *t)
{
    switch (t->role) {
    case CRASH_THREAD_LAST_EXCEPTION:
        puts_(w, "Last Exception Backtrace:\n");
        return;
    case CRASH_THREAD_APP_SPECIFIC:
    case CRASH_THREAD_HEAVIEST:
    case CRASH_THREAD_KERNEL:
    case CRASH_THREAD_RECRASH:
        if (t->title) {
            put_text_n(w, t->title, strlen(t->title) > CT_MAX_FIELD ? CT_MAX_FIELD
                                                                     : strlen(t->title),
                       true);
            puts_(w, "\n");
        } else {
            puts_(w, t->role == CRASH_THREAD_APP_SPECIFIC ? "Application Specific Backtrace:\n"
                     : t->role == CRASH_THREAD_HEAVIEST   ? "Heaviest stack:\n"
                     : t->role == CRASH_THREAD_RECRASH    ? "Recrash (crash inside the crash handler):\n"
                                                          : "Kernel Backtrace:\n");
        }
        return;
    case CRASH_THREAD_ATTRIBUTED:
        putf(w, "Thread %ld Attributed:\n", t->number);
        return;
    case CRASH_THREAD_NORMAL:
        break;
    }
    if (t->queue) {
        putf(w, "Thread %ld name:  Dispatch queue: ", t->number);
        put_field(w, t->queue);
        puts_(w, "\n");
    } else if (t->name) {
        putf(w, "Thread %ld name:  ", t->number);
        put_field(w, t->name);
        puts_(w, "\n");
    }
    if (t->crashed)
        putf(w, "Thread %ld Crashed:\n", t->number);
    else
        putf(w, "Thread %ld:\n", t->number);
}

/* "name [pid]" of a process. */
static void put_process(tw *w, const crash_process *p)
{
    put_field(w, p->name ? p->name : "???");
    if (p->pid >= 0)
        putf(w, " [%ld]", p->pid);
}

/* "Process:  name [pid]" and its path, before a process's threads. */
static void process_header(tw *w, const crash_process *p)
{
    puts_(w, "Process:             ");
    put_process(w, p);
    puts_(w, "\n");
    if (p->path) {
        puts_(w, "Path:                ");
        put_field(w, p->path);
        puts_(w, "\n");
    }
    if (p->detail) {
        puts_(w, "                     ");
        put_field(w, p->detail);
        puts_(w, "\n");
    }
    puts_(w, "\n");
}

/* A block of text the report carries (application specific information, a
 * panic string) under its heading, when not empty. */
static void text_block(tw *w, const char *heading, const char *text)
{
    if (!text || !*text)
        return;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        n--;
    puts_(w, heading);
    put_text_n(w, text, n, true);
    puts_(w, "\n\n");
}

/* ---- thread state, binary images ---- */

static bool starts_row(const char *name)
{
    return name && (!strcmp(name, "sp") || !strcmp(name, "esr") || !strcmp(name, "far"));
}

/* Four registers a line. 64-bit: "%6s: value" then "%5s: value" (values
 * are 18 characters wide), a new line also before sp, esr and far as Apple
 * prints ARM64 state; 32-bit: "%6s: value " each (iOS's ARM layout). */
static void render_state(tw *w, const crash_report *r, bool is32)
{
    if (r->nregisters == 0 || !r->registers)
        return;
    const crash_thread *ct = crashed_thread(r);
    if (ct)
        putf(w, "Thread %ld crashed with ", ct->number);
    else
        puts_(w, "Thread ? crashed with ");
    puts_(w, report_is_x86(r) ? "X86 Thread State" : "ARM Thread State");
    puts_(w, is32 ? (report_is_x86(r) ? " (32-bit):\n" : ":\n") : " (64-bit):\n");
    size_t col = 0;
    for (size_t i = 0; i < r->nregisters; i++) {
        const crash_kv *kv = &r->registers[i];
        if (col == 4 || (col > 0 && !is32 && starts_row(kv->name))) {
            puts_(w, "\n");
            col = 0;
        }
        put_field_right(w, kv->name, is32 || col == 0 ? 6 : 5);
        puts_(w, ": ");
        put_field(w, kv->value);
        if (is32)
            puts_(w, " ");
        col++;
    }
    puts_(w, "\n\n");
}

/* An image's UUID as the Binary Images list writes it: 32 lowercase hex
 * digits, no dashes. */
static void put_uuid_hex(tw *w, const uint8_t uuid[16])
{
    for (int k = 0; k < 16; k++)
        putf(w, "%02x", uuid[k]);
}

/* Images whose stored files cannot unwind (a minidump's, with only a dSYM
 * stored): the walk past their frames fell back to frame pointers or a
 * scan, and the note says what to upload, as images[].unwind does. */
static void render_unwind_notes(tw *w, const crash_report *r, const crash_symbolication *s)
{
    bool any = false;
    for (size_t i = 0; s && s->image_unwind && i < r->nimages && w->st == SYMD_OK; i++) {
        if (!s->image_unwind[i])
            continue;
        if (!any)
            puts_(w, "Unwinding:\n");
        any = true;
        puts_(w, "  ");
        put_field(w, r->images[i].name && *r->images[i].name ? r->images[i].name : "???");
        if (r->images[i].has_uuid) {
            puts_(w, " <");
            put_uuid_hex(w, r->images[i].uuid);
            puts_(w, ">");
        }
        puts_(w, ": ");
        put_field(w, s->image_unwind[i]);
        puts_(w, "\n");
    }
    if (any)
        puts_(w, "\n");
}

static void render_images(tw *w, const crash_report *r, bool is32)
{
    puts_(w, "Binary Images:\n");
    for (size_t i = 0; i < r->nimages; i++) {
        const crash_image *im = &r->images[i];
        char a[24], e[24];
        snprintf(a, sizeof a, "0x%llx", (unsigned long long)im->load_address);
        if (im->has_end)
            snprintf(e, sizeof e, "0x%llx", (unsigned long long)im->end_address);
        else
            snprintf(e, sizeof e, "???");
        if (is32)
            putf(w, "%10s - %10s ", a, e);
        else
            putf(w, "%s - %s ", a, e);
        put_field(w, im->name && *im->name ? im->name : "???");
        puts_(w, " ");
        put_field(w, im->arch && *im->arch ? im->arch : "???");
        puts_(w, "  <");
        if (im->has_uuid) {
            put_uuid_hex(w, im->uuid);
        } else {
            puts_(w, "???");
        }
        puts_(w, ">");
        if (im->path && *im->path) {
            puts_(w, " ");
            put_field(w, im->path);
        }
        puts_(w, "\n");
    }
}

/* A report read from JSON, in the text layout: header, application
 * specific information, panic string, every section (exception backtraces
 * first as the report orders them, a process line before each process's
 * threads), the crashed thread's state, processes without threads (jetsam)
 * and the Binary Images. */
static void render_synth(tw *w, const crash_report *r, const crash_symbolication *s, bool is32)
{
    synth_header(w, r);
    text_block(w, "Application Specific Information:\n", r->app_specific);
    text_block(w, "Panic String:\n", r->panic_string);
    size_t k = 0; /* frame index over all threads, as s->frames counts */
    long proc = -1;
    for (size_t t = 0; t < r->nthreads && w->st == SYMD_OK; t++) {
        const crash_thread *th = &r->threads[t];
        if (th->process >= 0 && th->process != proc && (size_t)th->process < r->nprocesses) {
            proc = th->process;
            process_header(w, &r->processes[proc]);
        }
        thread_header(w, th);
        for (size_t f = 0; f < th->nframes && w->st == SYMD_OK; f++, k++) {
            const crash_symframe *sf =
                s && s->frames && k < r->total_frames ? &s->frames[k] : NULL;
            render_frame(w, r, &th->frames[f], f, sf, is32);
        }
        puts_(w, "\n");
    }
    render_state(w, r, is32);
    bool listed = false;
    for (size_t i = 0; i < r->nprocesses; i++) {
        bool has_threads = false;
        for (size_t t = 0; t < r->nthreads && !has_threads; t++)
            has_threads = r->threads[t].process == (long)i;
        if (has_threads)
            continue;
        if (!listed)
            puts_(w, "Processes:\n");
        listed = true;
        const crash_process *p = &r->processes[i];
        puts_(w, "  ");
        put_process(w, p);
        if (p->detail) {
            puts_(w, "  ");
            put_field(w, p->detail);
        }
        puts_(w, "\n");
    }
    if (listed)
        puts_(w, "\n");
    render_unwind_notes(w, r, s);
    render_images(w, r, is32);
    if (w->st == SYMD_OK && r->nblocks) {
        bool any = false;
        for (size_t i = 0; i < r->nblocks && !any; i++)
            any = r->blocks[i].at == CRASH_AT_END || r->blocks[i].at == CRASH_AT_IMAGES;
        if (any)
            puts_(w, "\n");
        blocks_at(w, r, CRASH_AT_IMAGES, 0);
        blocks_at(w, r, CRASH_AT_END, 0);
    }
}

symd_status crash_render_text(const crash_report *r, const crash_symbolication *s,
                              const uint8_t *input, size_t input_len, dynbuf *out,
                              symd_err *err)
{
    tw w = {out, SYMD_OK};
    size_t start = out->len;
    bool is32 = report_is_32bit(r);

    if (r->text_body && input)
        render_input(&w, r, s, (const char *)input, input_len, is32);
    else
        render_synth(&w, r, s, is32);

    if (w.st != SYMD_OK) {
        /* Leave out as it was. */
        out->len = start;
        if (out->data)
            out->data[start] = 0;
        if (w.st == SYMD_E_TOO_LARGE)
            return symd_fail(err, SYMD_E_TOO_LARGE,
                             "the text rendering is over %zu bytes", out->max);
        return symd_fail(err, w.st, "out of memory rendering the crash report");
    }
    return SYMD_OK;
}

/* A minidump as a crash report: the adapter between minidump/ (the reader
 * and the stack walkers) and the crash model. The input is the dump itself
 * ("MDMP"), or the multipart/form-data body Crashpad's uploader sends (the
 * dump in the upload_file_minidump part, each annotation a form field),
 * stored as sent so that reading it again gives the same report.
 *
 * Each thread becomes a section whose frames the walker gives (innermost
 * first, each with its trust); each module an image (the CodeView GUID as
 * the Mach-O UUID); the exception the Mach exception type and codes; the
 * crashed thread the exception's, walked from the exception's registers. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../minidump/minidump.h"
#include "../minidump/walk.h"
#include "../util/hex.h"
#include "../util/multipart.h"
#include "../util/util.h"
#include "crash_int.h"
#include "../util/metered.h" /* last: counts this file's allocations */

#define MINIDUMP_PART "upload_file_minidump"

/* ---- the walker ---- */

static md_walk_fn walker = md_walk_frame_pointer;
static void *walker_self;

void crash_set_minidump_walker(md_walk_fn fn, void *self)
{
    walker = fn ? fn : md_walk_frame_pointer;
    walker_self = fn ? self : NULL;
}

bool crash_looks_like_minidump(const uint8_t *buf, size_t len)
{
    if (len >= 4 && memcmp(buf, MD_MAGIC, 4) == 0)
        return true;
    if (!multipart_looks_like(buf, len))
        return false;
    /* the part's name is in the first few KiB of headers of some part:
     * searched over the whole body, it is only a hint (the reader decides) */
    return memmem(buf, len, "name=\"" MINIDUMP_PART "\"", sizeof MINIDUMP_PART + 6) != NULL;
}

/* ---- names ---- */

static const char *mach_exception_name(uint32_t t)
{
    static const char *const names[] = {
        NULL,          "EXC_BAD_ACCESS",   "EXC_BAD_INSTRUCTION", "EXC_ARITHMETIC",
        "EXC_EMULATION", "EXC_SOFTWARE",   "EXC_BREAKPOINT",      "EXC_SYSCALL",
        "EXC_MACH_SYSCALL", "EXC_RPC_ALERT", "EXC_CRASH",         "EXC_RESOURCE",
        "EXC_GUARD",   "EXC_CORPSE_NOTIFY",
    };
    return t < sizeof names / sizeof names[0] ? names[t] : NULL;
}

static const char *kern_return_name(uint32_t c)
{
    switch (c) {
    case 1: return "KERN_INVALID_ADDRESS";
    case 2: return "KERN_PROTECTION_FAILURE";
    case 8: return "KERN_NO_ACCESS";
    case 9: return "KERN_MEMORY_FAILURE";
    case 10: return "KERN_MEMORY_ERROR";
    case 13: return "EXC_I386_GPFLT";
    default: return NULL;
    }
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* ---- pieces of the report ---- */

static symd_status set_strf(cp *p, char **dst, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static symd_status set_strf(cp *p, char **dst, const char *fmt, ...)
{
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    return cp_set_str(p, dst, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

static symd_status add_annotation(cp *p, const char *name, const char *value)
{
    crash_report *r = p->r;
    if (r->nannotations >= MD_MAX_ANNOTATIONS * 2)
        return cp_warn(p, "annotations", "more than %d annotations: '%.64s' not kept",
                       MD_MAX_ANNOTATIONS * 2, name);
    if (!array_grow((void **)&r->annotations, &p->cap_annotations, r->nannotations + 1,
                    sizeof *r->annotations))
        return cp_nomem(p);
    crash_kv *kv = &r->annotations[r->nannotations];
    kv->name = kv->value = NULL;
    r->nannotations++;
    if (cp_set_str(p, &kv->name, name, strlen(name)) ||
        cp_set_str(p, &kv->value, value, strlen(value)))
        return p->err->kind;
    return SYMD_OK;
}

/* Annotations of the dump, then the form fields not already among them;
 * all as "name: value" lines of app_specific too. */
static symd_status take_annotations(cp *p, const minidump *d, const mp_part *parts,
                                    size_t nparts)
{
    crash_report *r = p->r;
    symd_status st = SYMD_OK;
    for (size_t i = 0; i < d->nannotations && !st; i++) {
        const md_annotation *a = &d->annotations[i];
        if (a->module < 0) {
            st = add_annotation(p, a->key, a->value);
        } else {
            const md_module *m = &d->modules[a->module];
            char name[512];
            snprintf(name, sizeof name, "%s: %s", m->path ? base_name(m->path) : "?", a->key);
            st = add_annotation(p, name, a->value);
        }
    }
    size_t from_dump = r->nannotations;
    for (size_t i = 0; i < nparts && !st; i++) {
        const mp_part *f = &parts[i];
        if (f->has_filename || !strcmp(f->name, MINIDUMP_PART))
            continue;
        char *v = malloc(f->len + 1);
        if (!v)
            return cp_nomem(p);
        memcpy(v, f->data, f->len);
        v[f->len] = 0;
        if (strlen(v) != f->len || f->len > MD_MAX_STRING) {
            st = cp_warn(p, "form", "field '%.64s': %zu bytes that are no text: not kept",
                         f->name, f->len);
            free(v);
            continue;
        }
        bool dup = false;
        for (size_t k = 0; k < from_dump && !dup; k++)
            dup = !strcmp(r->annotations[k].name, f->name) &&
                  !strcmp(r->annotations[k].value, v);
        if (!dup)
            st = add_annotation(p, f->name, v);
        free(v);
    }
    if (st || !r->nannotations)
        return st;
    size_t total = 0;
    for (size_t i = 0; i < r->nannotations; i++)
        total += strlen(r->annotations[i].name) + strlen(r->annotations[i].value) + 3;
    char *text = malloc(total + 1);
    if (!text)
        return cp_nomem(p);
    size_t o = 0;
    for (size_t i = 0; i < r->nannotations; i++)
        o += (size_t)sprintf(text + o, "%s: %s\n", r->annotations[i].name,
                             r->annotations[i].value);
    free(r->app_specific);
    r->app_specific = text;
    /* the version the app says of itself (Chromium's and Electron's "ver") */
    for (size_t i = 0; i < r->nannotations && !r->app_version; i++)
        if (!strcmp(r->annotations[i].name, "ver") && *r->annotations[i].value)
            st = cp_set_str(p, &r->app_version, r->annotations[i].value,
                            strlen(r->annotations[i].value));
    return st;
}

static symd_status take_header(cp *p, const minidump *d)
{
    crash_report *r = p->r;
    const md_system *sy = &d->system;
    symd_status st = SYMD_OK;
    if (sy->present) {
        const char *os = sy->os == MD_OS_MACOS ? "macOS" : sy->os == MD_OS_IOS ? "iOS" : "OS";
        st = sy->csd && *sy->csd
                 ? set_strf(p, &r->os_version, "%s %u.%u.%u (%s)", os, sy->major, sy->minor,
                            sy->build, sy->csd)
                 : set_strf(p, &r->os_version, "%s %u.%u.%u", os, sy->major, sy->minor,
                            sy->build);
        if (!st && sy->cpu != MD_CPU_UNKNOWN)
            st = cp_set_str(p, &r->code_type,
                            sy->cpu == MD_CPU_X86_64 ? "X86-64 (Native)" : "ARM-64 (Native)",
                            15);
    }
    if (!st && d->time) {
        time_t t = (time_t)d->time;
        struct tm tm;
        char b[40];
        if (gmtime_r(&t, &tm) && strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S +0000", &tm))
            st = cp_set_str(p, &r->date, b, strlen(b));
    }
    if (d->has_pid) {
        r->has_pid = true;
        r->pid = (long)d->pid;
    }
    static const uint8_t zero[16];
    if (!st && d->has_crashpad && memcmp(d->report_id, zero, 16) != 0) {
        char u[37];
        uuid_format(d->report_id, u);
        st = cp_set_str(p, &r->incident_id, u, strlen(u));
    }
    if (!st && d->nmodules && d->modules[0].path)
        st = cp_set_str(p, &r->process, base_name(d->modules[0].path),
                        strlen(base_name(d->modules[0].path)));
    return st;
}

static const char *signal_name(unsigned sig)
{
    static const char *const names[] = {
        NULL,     "SIGHUP",  "SIGINT",  "SIGQUIT", "SIGILL",  "SIGTRAP", "SIGABRT",
        "SIGEMT", "SIGFPE",  "SIGKILL", "SIGBUS",  "SIGSEGV", "SIGSYS",  "SIGPIPE",
        "SIGALRM", "SIGTERM",
    };
    return sig < sizeof names / sizeof names[0] ? names[sig] : NULL;
}

/* The exception: Breakpad writes the Mach exception type, its first code
 * and the address; Crashpad writes the type it recovered (0 when a signal
 * raised it) and keeps the raw Mach exception and codes as the
 * exception's parameters, so an EXC_CRASH (a signal: abort()) is read
 * from those, its signal in bits 24-31 of the code, as Apple shows it. */
static symd_status take_exception(cp *p, const minidump *d)
{
    crash_report *r = p->r;
    const md_exception *x = &d->exception;
    if (!x->present)
        return SYMD_OK;
    symd_status st;
    if (x->code == 0 && d->has_crashpad && x->nparams >= 2 && x->params[0] == 10) {
        const char *sig = signal_name((unsigned)(x->params[1] >> 24 & 0xff));
        st = cp_set_str(p, &r->exception_type, "EXC_CRASH", 9);
        if (!st && sig)
            st = cp_set_str(p, &r->exception_signal, sig, strlen(sig));
        if (!st)
            st = set_strf(p, &r->exception_codes, "0x%016" PRIx64 ", 0x%016" PRIx64 " at 0x%016"
                          PRIx64, x->params[1], x->nparams > 2 ? x->params[2] : 0, x->address);
    } else {
        const char *type = mach_exception_name(x->code);
        st = type ? cp_set_str(p, &r->exception_type, type, strlen(type))
                  : set_strf(p, &r->exception_type, "0x%08x", x->code);
        const char *code = x->code == 1 ? kern_return_name(x->flags) : NULL;
        if (!st)
            st = code ? set_strf(p, &r->exception_codes, "%s at 0x%016" PRIx64, code, x->address)
                      : set_strf(p, &r->exception_codes, "0x%08x at 0x%016" PRIx64, x->flags,
                                 x->address);
    }
    for (size_t t = 0; t < d->nthreads; t++)
        if (d->threads[t].id == x->thread_id) {
            r->crashed_thread = (long)t;
            break;
        }
    if (!st && r->crashed_thread < 0)
        st = cp_warn(p, "ExceptionStream", "names thread 0x%x, which the thread list does not "
                     "hold", x->thread_id);
    return st;
}

static symd_status take_images(cp *p, const minidump *d)
{
    const char *arch = md_cpu_name(d->system.cpu);
    for (size_t i = 0; i < d->nmodules; i++) {
        const md_module *m = &d->modules[i];
        crash_image *im;
        symd_status st = cp_new_image(p, &im, "ModuleListStream");
        if (st)
            return st;
        im->load_address = m->base;
        im->has_end = m->size > 0;
        im->end_address = m->size ? m->base + m->size - 1 : m->base;
        im->has_uuid = m->has_uuid;
        memcpy(im->uuid, m->uuid, 16);
        im->is_app = i == 0; /* the writers list the main executable first */
        if (m->path && ((st = cp_set_str(p, &im->path, m->path, strlen(m->path))) ||
                        (st = cp_set_str(p, &im->name, base_name(m->path),
                                         strlen(base_name(m->path))))))
            return st;
        if (arch && (st = cp_set_str(p, &im->arch, arch, strlen(arch))))
            return st;
        if (m->version && (st = cp_set_str(p, &im->version, m->version, strlen(m->version))))
            return st;
    }
    return SYMD_OK;
}

static symd_status take_registers(cp *p, const md_context *c)
{
    size_t n;
    const char *const *names = md_reg_names(c->cpu, &n);
    for (size_t i = 0; names && i < n && i < c->nregs; i++) {
        char v[24];
        int vl = snprintf(v, sizeof v, "0x%016" PRIx64, c->regs[i]);
        symd_status st = cp_add_register(p, names[i], strlen(names[i]), v, (size_t)vl,
                                         "registers");
        if (st)
            return st;
    }
    return SYMD_OK;
}

/* Walks every thread: its context (the exception's for the crashed one)
 * and stack memory to the walker; the frames to the thread's section. */
static symd_status take_threads(cp *p, const minidump *d)
{
    crash_report *r = p->r;
    md_frame *fr = malloc(MD_WALK_MAX_FRAMES * sizeof *fr);
    if (!fr)
        return cp_nomem(p);
    symd_status st = SYMD_OK;
    bool cut = false;
    for (size_t t = 0; t < d->nthreads && !st; t++) {
        const md_thread *mt = &d->threads[t];
        crash_thread *th;
        char where[64];
        snprintf(where, sizeof where, "ThreadListStream[%zu]", t);
        if ((st = cp_new_thread(p, &th, where)))
            break;
        th->number = (long)t;
        th->crashed = (long)t == r->crashed_thread;
        if (mt->name && (st = cp_set_str(p, &th->name, mt->name, strlen(mt->name))))
            break;
        const md_context *ctx = th->crashed && d->exception.has_context ? &d->exception.ctx
                                : mt->has_context                      ? &mt->ctx
                                                                       : NULL;
        if (!ctx) {
            st = cp_warn(p, where, "thread 0x%x has no registers: no frames", mt->id);
            continue;
        }
        if (th->crashed && (st = take_registers(p, ctx)))
            break;
        md_walk_input in = {d, ctx, mt->has_stack ? &mt->stack : NULL, minidump_module_at};
        size_t n = 0;
        if ((st = walker(walker_self, &in, fr, MD_WALK_MAX_FRAMES, &n, p->err)))
            break;
        if (n > MD_WALK_MAX_FRAMES)
            n = MD_WALK_MAX_FRAMES;
        if (r->total_frames + n > CRASH_MAX_FRAMES) {
            n = CRASH_MAX_FRAMES - r->total_frames;
            cut = true;
        }
        for (size_t i = 0; i < n && !st; i++) {
            crash_frame *f;
            if ((st = cp_new_frame(p, r->nthreads - 1, &f, where)))
                break;
            f->address = fr[i].pc;
            f->image = minidump_module_at(d, fr[i].pc);
            f->trust = (crash_trust)fr[i].trust;
        }
    }
    free(fr);
    if (!st && cut)
        st = cp_warn(p, "ThreadListStream", "the walked stacks have more than %d frames in all: "
                     "the threads' frames past that are left out", CRASH_MAX_FRAMES);
    /* no crashed thread (a dump taken without a crash): the first thread's
     * registers are the state shown */
    if (!st && r->crashed_thread < 0 && d->nthreads && d->threads[0].has_context)
        st = take_registers(p, &d->threads[0].ctx);
    return st;
}

/* The dump of a Crashpad upload: its upload_file_minidump part. */
static symd_status dump_of_upload(cp *p, const uint8_t *buf, size_t len, mp_part **parts,
                                  size_t *nparts, const uint8_t **dump, size_t *dlen)
{
    bool truncated;
    symd_err merr = {0};
    symd_status st = multipart_parse(buf, len, parts, nparts, &truncated, &merr);
    if (st) /* a body that splits into no parts holds no dump: no report at all */
        return symd_fail(p->err, st == SYMD_E_CORRUPT ? SYMD_E_NOT_CRASH_REPORT : st, "%s",
                         merr.msg);
    *dump = NULL;
    for (size_t i = 0; i < *nparts && !*dump; i++)
        if (!strcmp((*parts)[i].name, MINIDUMP_PART)) {
            *dump = (*parts)[i].data;
            *dlen = (*parts)[i].len;
        }
    if (!*dump)
        return symd_fail(p->err, SYMD_E_NOT_CRASH_REPORT,
                         "a multipart body without an " MINIDUMP_PART " part");
    if (truncated && (st = cp_warn(p, "form", "the multipart body ends before its closing "
                                   "delimiter: the parts as far as they go are read")))
        return st;
    for (size_t i = 0; i < *nparts; i++)
        if ((*parts)[i].has_filename && strcmp((*parts)[i].name, MINIDUMP_PART) &&
            (st = cp_warn(p, "form", "part '%.64s' (file '%.64s', %zu bytes): not read",
                          (*parts)[i].name, (*parts)[i].filename, (*parts)[i].len)))
            return st;
    return SYMD_OK;
}

symd_status crash_parse_minidump(cp *p, const uint8_t *buf, size_t len)
{
    crash_report *r = p->r;
    mp_part *parts = NULL;
    size_t nparts = 0;
    const uint8_t *dump = buf;
    size_t dlen = len;
    symd_status st = SYMD_OK;
    if (!(len >= 4 && memcmp(buf, MD_MAGIC, 4) == 0))
        st = dump_of_upload(p, buf, len, &parts, &nparts, &dump, &dlen);
    minidump d;
    if (!st && (st = minidump_read(dump, dlen, &d, p->err)) == SYMD_OK) {
        r->format = CRASH_FORMAT_MINIDUMP;
        r->kind = CRASH_KIND_MINIDUMP;
        r->text_body = false;
        for (size_t i = 0; i < d.nwarnings && !st; i++)
            st = cp_warn(p, d.warnings[i].where, "%s", d.warnings[i].message);
        if (!st && d.nwarnings_dropped)
            st = cp_warn(p, "minidump", "%zu more warnings", d.nwarnings_dropped);
        if (!st && !d.system.present)
            st = cp_warn(p, "SystemInfoStream", "the dump has none: OS and CPU unknown");
        if (!st)
            st = take_header(p, &d);
        if (!st)
            st = take_images(p, &d);
        if (!st)
            st = take_exception(p, &d);
        if (!st)
            st = take_threads(p, &d);
        if (!st)
            st = take_annotations(p, &d, parts, nparts);
        minidump_free(&d);
    }
    free(parts);
    return st;
}

/* The minidump reader (minidump/) and the frame-pointer walker on the real
 * dumps of ../shared/minidumps: each stream read as its README and
 * MODULES.tsv say, then mutations and truncations of those dumps (a
 * directory past the end, 2^32 threads, overlapping memory, a 1 GB stack,
 * duplicate and overlapping streams) read with warnings and never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../minidump/minidump.h"
#include "../minidump/walk.h"
#include "../parser/crash.h"
#include "../util/hex.h"
#include "test.h"

/* The README's table of the four dumps. */
typedef struct {
    const char *file;
    md_os os;
    md_cpu cpu;
    const char *version, *build; /* "10.12.6", "16G29" */
    unsigned ncpus;
    size_t nthreads, nmodules;
    uint32_t exc_code;           /* Mach exception type */
    uint64_t exc_address;
    const char *main_uuid;
    uint32_t pid;                /* MiscInfoStream (minidump_dump's process_id) */
} dump_row;

static const dump_row dumps[] = {
    {"symbolic-crash_macos/crash_macos.dmp", MD_OS_MACOS, MD_CPU_X86_64, "10.12.6", "16G29", 8, 1,
     43, 1, 0x45, "3F58BC3D-EABE-3361-B5FB-52A676298598", 38786},
    {"symbolicator-macos/macos.dmp", MD_OS_MACOS, MD_CPU_X86_64, "10.12.6", "16G29", 2, 1, 43, 1,
     0x45, "67E9247C-814E-392B-A027-DBDE6748FCBF", 2984},
    {"rust-minidump-simple-crashpad/simple-crashpad.dmp", MD_OS_MACOS, MD_CPU_X86_64, "10.15.7",
     "19H114", 12, 1, 40, 0, 0x7fff6f41333a, "EF1091E3-81DA-369B-9039-EA1591D07E0B", 56685},
    {"symbolicator-macos-no-fp/macos-no-fp.dmp", MD_OS_MACOS, MD_CPU_ARM64, "15.7.4", "24G517", 10,
     3, 332, 1, 0x1, "73781EDE-BF5B-34EC-81B2-749A0F1FA5FD", 12587},
};
#define NDUMPS (sizeof dumps / sizeof dumps[0])

/* The bytes of a dump of ../shared/minidumps; NULL (the test skipped) when
 * the folder is absent. */
static uint8_t *load_dump(const char *file, size_t *len)
{
    const char *dir = minidumps_dir();
    if (!dir) {
        test_skip("../shared/minidumps is absent: minidumps not tested");
        return NULL;
    }
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    uint8_t *b = read_file(path, len);
    CHECK(b, "cannot read %s", path);
    return b;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}

static void wr64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}

/* The directory entry (its offset in buf) of the stream of type t in a
 * real dump, 0 when there is none: for mutating the dump in place. */
static size_t dir_entry_of(const uint8_t *buf, size_t len, uint32_t t)
{
    uint32_t n = rd32(buf + 8), rva = rd32(buf + 12);
    for (uint32_t i = 0; i < n && rva + 12 * (size_t)(i + 1) <= len; i++)
        if (rd32(buf + rva + 12 * i) == t)
            return rva + 12 * (size_t)i;
    return 0;
}

/* Whether a warning of d names stream (in where) and says what (in its
 * message). */
static bool has_warning(const minidump *d, const char *stream, const char *what)
{
    for (size_t i = 0; i < d->nwarnings; i++)
        if (strstr(d->warnings[i].where, stream) && strstr(d->warnings[i].message, what))
            return true;
    return false;
}

static void dump_warnings(const minidump *d, const char *file)
{
    for (size_t i = 0; i < d->nwarnings; i++)
        fprintf(stderr, "  %s: warning: %s: %s\n", file, d->warnings[i].where,
                d->warnings[i].message);
}

TEST(minidump_shared_dumps_as_the_readme_says)
{
    for (size_t k = 0; k < NDUMPS; k++) {
        const dump_row *w = &dumps[k];
        size_t len;
        uint8_t *buf = load_dump(w->file, &len);
        if (!buf)
            return;
        minidump d;
        symd_err err = {0};
        CHECK(minidump_read(buf, len, &d, &err) == SYMD_OK, "%s: %s", w->file, err.msg);
        CHECK(d.nwarnings == 0, "%s: %zu warnings", w->file, d.nwarnings);
        if (d.nwarnings)
            dump_warnings(&d, w->file);
        /* SystemInfoStream */
        char ver[32];
        snprintf(ver, sizeof ver, "%u.%u.%u", d.system.major, d.system.minor, d.system.build);
        CHECK(d.system.present && d.system.os == w->os && d.system.cpu == w->cpu, "%s: OS/CPU",
              w->file);
        CHECK(!strcmp(ver, w->version), "%s: OS version %s, want %s", w->file, ver, w->version);
        CHECK(d.system.csd && !strcmp(d.system.csd, w->build), "%s: build %s", w->file,
              d.system.csd ? d.system.csd : "(none)");
        CHECK(d.system.ncpus == w->ncpus, "%s: %u CPUs", w->file, d.system.ncpus);
        CHECK(d.system.arch == (w->cpu == MD_CPU_X86_64 ? 9 : 12), "%s: arch %u", w->file,
              d.system.arch);
        /* ThreadListStream, ModuleListStream */
        CHECK(d.nthreads == w->nthreads, "%s: %zu threads", w->file, d.nthreads);
        CHECK(d.nmodules == w->nmodules, "%s: %zu modules", w->file, d.nmodules);
        char u[37] = "";
        if (d.nmodules && d.modules[0].has_uuid)
            uuid_format(d.modules[0].uuid, u);
        CHECK(!strcmp(u, w->main_uuid), "%s: main module %s", w->file, u);
        /* ExceptionStream */
        CHECK(d.exception.present && d.exception.code == w->exc_code &&
                  d.exception.address == w->exc_address,
              "%s: exception 0x%x at 0x%llx", w->file, d.exception.code,
              (unsigned long long)d.exception.address);
        CHECK(d.nthreads && d.exception.thread_id == d.threads[0].id,
              "%s: the exception's thread is the first", w->file);
        /* MiscInfoStream */
        CHECK(d.has_pid && d.pid == w->pid, "%s: pid %u", w->file, d.pid);
        minidump_free(&d);
        free(buf);
    }
}

/* Every module of every dump as MODULES.tsv lists it: base, size, the
 * Breakpad debug id (UUID and age), the UUID and the path, in order. */
TEST(minidump_modules_as_modules_tsv)
{
    const char *dir = minidumps_dir();
    if (!dir) {
        test_skip("../shared/minidumps is absent");
        return;
    }
    char path[800];
    snprintf(path, sizeof path, "%s/MODULES.tsv", dir);
    size_t tlen;
    char *tsv = (char *)read_file(path, &tlen);
    CHECK(tsv, "MODULES.tsv");
    if (!tsv)
        return;
    size_t rows = 0;
    for (size_t k = 0; k < NDUMPS; k++) {
        size_t len;
        uint8_t *buf = load_dump(dumps[k].file, &len);
        minidump d;
        symd_err err = {0};
        if (!buf || minidump_read(buf, len, &d, &err) != SYMD_OK) {
            CHECK(0, "%s", dumps[k].file);
            free(buf);
            continue;
        }
        size_t i = 0;
        char *save = NULL;
        char *copy = strdup(tsv);
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *f[7] = {0};
            int nf = 0;
            for (char *s = line, *t; nf < 7 && s; s = t) {
                t = strchr(s, '\t');
                if (t)
                    *t++ = 0;
                f[nf++] = s;
            }
            if (nf < 6 || strcmp(f[0], dumps[k].file) != 0)
                continue;
            rows++;
            if (i >= d.nmodules) {
                CHECK(0, "%s: MODULES.tsv lists more than %zu modules", dumps[k].file, d.nmodules);
                break;
            }
            const md_module *m = &d.modules[i++];
            char base[24], size[24], u[37], id[48];
            snprintf(base, sizeof base, "0x%llx", (unsigned long long)m->base);
            snprintf(size, sizeof size, "0x%llx", (unsigned long long)m->size);
            uuid_format(m->uuid, u);
            size_t o = 0;
            for (size_t c = 0; c < 36; c++)
                if (u[c] != '-')
                    id[o++] = u[c];
            snprintf(id + o, sizeof id - o, "%X", m->age);
            CHECK(!strcmp(base, f[1]) && !strcmp(size, f[2]), "%s[%zu]: %s+%s, want %s+%s",
                  dumps[k].file, i - 1, base, size, f[1], f[2]);
            CHECK(m->has_uuid && !strcmp(id, f[3]) && !strcmp(u, f[4]), "%s[%zu]: %s, want %s",
                  dumps[k].file, i - 1, id, f[3]);
            CHECK(m->path && !strcmp(m->path, f[5]), "%s[%zu]: path %s, want %s", dumps[k].file,
                  i - 1, m->path ? m->path : "(none)", f[5]);
        }
        CHECK(i == d.nmodules, "%s: MODULES.tsv lists %zu of %zu modules", dumps[k].file, i,
              d.nmodules);
        free(copy);
        minidump_free(&d);
        free(buf);
    }
    CHECK(rows == 43 + 43 + 40 + 332, "%zu rows of MODULES.tsv read", rows);
    free(tsv);
}

/* ModuleListStream's two layouts: Breakpad's count padded to 8 bytes
 * (8 + 108 n), Crashpad's not (4 + 108 n); both read whole. */
TEST(minidump_module_list_padding)
{
    for (size_t k = 0; k < NDUMPS; k++) {
        size_t len;
        uint8_t *buf = load_dump(dumps[k].file, &len);
        if (!buf)
            return;
        size_t e = dir_entry_of(buf, len, 4);
        uint32_t size = rd32(buf + e + 4);
        bool padded = size == 8 + 108 * dumps[k].nmodules;
        CHECK(padded == (k < 2), "%s: module list of %u bytes", dumps[k].file, size);
        minidump d;
        CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK && d.nmodules == dumps[k].nmodules,
              "%s", dumps[k].file);
        minidump_free(&d);
        free(buf);
    }
}

/* ThreadListStream and MemoryListStream: every thread has registers of its
 * CPU and its stack, which the memory list holds too (read through
 * minidump_read_memory); reads past a range fail. */
TEST(minidump_threads_stacks_and_memory)
{
    for (size_t k = 0; k < NDUMPS; k++) {
        size_t len;
        uint8_t *buf = load_dump(dumps[k].file, &len);
        if (!buf)
            return;
        minidump d;
        CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK, "%s", dumps[k].file);
        CHECK(d.nregions >= d.nthreads, "%s: %zu memory ranges", dumps[k].file, d.nregions);
        for (size_t t = 0; t < d.nthreads; t++) {
            const md_thread *th = &d.threads[t];
            CHECK(th->has_context && th->ctx.cpu == dumps[k].cpu, "%s: thread %zu context",
                  dumps[k].file, t);
            CHECK(th->has_stack && th->stack.len > 0, "%s: thread %zu stack", dumps[k].file, t);
            if (!th->has_stack)
                continue;
            uint8_t a[16], b[16] = {0};
            CHECK(minidump_read_memory(&d, th->stack.base, 16, a) &&
                      memcmp(a, th->stack.bytes, 16) == 0,
                  "%s: thread %zu: its stack read through the memory list", dumps[k].file, t);
            uint64_t end = th->stack.base + th->stack.len;
            CHECK(!minidump_read_memory(&d, end - 8, 16, b), "%s: a read past the stack's end",
                  dumps[k].file);
            /* the stack pointer lies in the stack memory */
            uint64_t sp = md_context_sp(&th->ctx);
            CHECK(sp >= th->stack.base && sp < end, "%s: thread %zu sp 0x%llx", dumps[k].file, t,
                  (unsigned long long)sp);
        }
        /* the ranges are sorted and apart */
        for (size_t i = 1; i < d.nregions; i++)
            CHECK(d.regions[i].base >= d.regions[i - 1].base + d.regions[i - 1].len,
                  "%s: ranges %zu and %zu", dumps[k].file, i - 1, i);
        minidump_free(&d);
        free(buf);
    }
}

/* ExceptionStream: the Mach exception type, code and address, and the
 * registers at the exception (the crashed thread's state). */
TEST(minidump_exception_context)
{
    for (size_t k = 0; k < NDUMPS; k++) {
        size_t len;
        uint8_t *buf = load_dump(dumps[k].file, &len);
        if (!buf)
            return;
        minidump d;
        CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK, "%s", dumps[k].file);
        CHECK(d.exception.has_context && d.exception.ctx.cpu == dumps[k].cpu, "%s: context",
              dumps[k].file);
        if (dumps[k].exc_code == 1) /* EXC_BAD_ACCESS: KERN_INVALID_ADDRESS */
            CHECK(d.exception.flags == 1, "%s: code %u", dumps[k].file, d.exception.flags);
        /* the pc at the exception lies in a module */
        uint64_t pc = md_context_pc(&d.exception.ctx);
        CHECK(minidump_module_at(&d, pc) >= 0, "%s: pc 0x%llx in no module", dumps[k].file,
              (unsigned long long)pc);
        minidump_free(&d);
        free(buf);
    }
}

/* MiscInfoStream and BreakpadInfoStream: the process's creation time, and
 * Breakpad's dump and requesting threads (the requesting one crashed). */
TEST(minidump_misc_and_breakpad_info)
{
    size_t len;
    uint8_t *buf = load_dump(dumps[0].file, &len);
    if (!buf)
        return;
    minidump d;
    CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK, "read");
    CHECK(d.has_process_time && d.process_create_time == 0x59b922db, "create time 0x%x",
          d.process_create_time);
    CHECK(d.has_breakpad && d.has_dump_thread && d.has_requesting_thread, "breakpad info");
    CHECK(d.nthreads && d.requesting_thread == d.threads[0].id &&
              d.requesting_thread == d.exception.thread_id,
          "requesting thread 0x%x", d.requesting_thread);
    bool listed = false;
    for (size_t t = 0; t < d.nthreads; t++)
        listed |= d.threads[t].id == d.dump_thread;
    CHECK(!listed, "the handler thread (0x%x) is not in the thread list", d.dump_thread);
    CHECK(!d.has_crashpad && d.nannotations == 0, "no Crashpad info");
    minidump_free(&d);
    free(buf);
}

/* CrashpadInfoStream: the report id, the process's simple annotations and
 * the modules' list annotations of simple-crashpad.dmp. */
TEST(minidump_crashpad_info)
{
    size_t len;
    uint8_t *buf = load_dump(dumps[2].file, &len);
    if (!buf)
        return;
    minidump d;
    CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK, "read");
    CHECK(d.has_crashpad, "Crashpad info");
    static const uint8_t zero[16];
    CHECK(memcmp(d.report_id, zero, 16) != 0, "report id");
    bool hello = false, abort_msg = false;
    for (size_t i = 0; i < d.nannotations; i++) {
        const md_annotation *a = &d.annotations[i];
        hello |= a->module == -1 && !strcmp(a->key, "hello") && !strcmp(a->value, "world");
        abort_msg |= a->module >= 0 && d.modules[a->module].path &&
                     strstr(d.modules[a->module].path, "libsystem_c.dylib") &&
                     !strcmp(a->value, "abort() called");
    }
    CHECK(hello, "the process annotation hello=world");
    CHECK(abort_msg, "libsystem_c's list annotation 'abort() called'");
    minidump_free(&d);
    free(buf);
}

/* ThreadNamesStream, on a dump given one: BreakpadInfoStream's directory
 * entry pointed at 16 bytes appended to crash_macos.dmp naming its thread
 * with the dump's own first module-name string; then the same entry over
 * Breakpad's 12 bytes, whose count (3) they cannot hold. */
TEST(minidump_thread_names)
{
    size_t len;
    uint8_t *buf = load_dump(dumps[0].file, &len);
    if (!buf)
        return;
    minidump d;
    CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK && d.nmodules, "read");
    uint32_t tid = d.threads[0].id;
    char *want = strdup(d.modules[0].path);
    minidump_free(&d);
    size_t me = dir_entry_of(buf, len, 4), be = dir_entry_of(buf, len, 0x47670001);
    uint32_t mods = rd32(buf + me + 8);
    uint32_t name_rva = rd32(buf + mods + 8 + 20); /* module 0's ModuleNameRva (padded list) */
    uint8_t *m = malloc(len + 16);
    memcpy(m, buf, len);
    wr32(m + len, 1);
    wr32(m + len + 4, tid);
    wr64(m + len + 8, name_rva);
    wr32(m + be, 24);
    wr32(m + be + 4, 16);
    wr32(m + be + 8, (uint32_t)len);
    CHECK(minidump_read(m, len + 16, &d, NULL) == SYMD_OK, "read with names");
    CHECK(d.threads[0].name && !strcmp(d.threads[0].name, want), "thread name %s",
          d.threads[0].name ? d.threads[0].name : "(none)");
    minidump_free(&d);
    wr32(m + be + 4, 12);
    wr32(m + be + 8, rd32(buf + be + 8));
    CHECK(minidump_read(m, len, &d, NULL) == SYMD_OK, "read");
    CHECK(!d.threads[0].name && has_warning(&d, "ThreadNamesStream", "declares 3 names"),
          "a count its bytes cannot hold");
    minidump_free(&d);
    free(want);
    free(m);
    free(buf);
}

/* The fallback walker on every thread: the context frame first (trust
 * context, the context's pc), then frame-pointer frames whose stack
 * pointers rise, at most MD_WALK_MAX_FRAMES. On arm64 the first caller is
 * the context's lr. */
TEST(minidump_frame_pointer_walk)
{
    md_frame fr[MD_WALK_MAX_FRAMES];
    for (size_t k = 0; k < NDUMPS; k++) {
        size_t len;
        uint8_t *buf = load_dump(dumps[k].file, &len);
        if (!buf)
            return;
        minidump d;
        CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK, "%s", dumps[k].file);
        for (size_t t = 0; t < d.nthreads; t++) {
            const md_context *c = t == 0 ? &d.exception.ctx : &d.threads[t].ctx;
            md_walk_input in = {&d, c, &d.threads[t].stack, minidump_module_at};
            size_t n = 0;
            CHECK(md_walk_frame_pointer(NULL, &in, fr, MD_WALK_MAX_FRAMES, &n, NULL) == SYMD_OK,
                  "walk");
            CHECK(n >= 1 && fr[0].pc == md_context_pc(c) && fr[0].trust == MD_TRUST_CONTEXT,
                  "%s thread %zu: the context frame", dumps[k].file, t);
            for (size_t i = 1; i < n; i++) {
                CHECK(fr[i].trust == MD_TRUST_FRAME_POINTER && fr[i].sp > fr[i - 1].sp &&
                          fr[i].pc >= MD_WALK_MIN_PC,
                      "%s thread %zu frame %zu", dumps[k].file, t, i);
            }
            if (c->cpu == MD_CPU_ARM64 && n > 1)
                CHECK(fr[1].pc == (c->regs[MD_ARM64_LR] & MD_ARM64_PAC_MASK),
                      "%s thread %zu: the first caller is lr", dumps[k].file, t);
        }
        minidump_free(&d);
        free(buf);
    }
}

/* ---- hostile inputs: mutations of the real dumps ---- */

/* Reads m[0..n) as a minidump and as a crash report; whichever is refused
 * must be refused whole (nothing half-read), whatever is read must be
 * walkable. */
static void read_both(const uint8_t *m, size_t n, const char *what)
{
    minidump d;
    symd_err err = {0};
    symd_status st = minidump_read(m, n, &d, &err);
    CHECK(st == SYMD_OK || st == SYMD_E_CORRUPT || st == SYMD_E_NOT_CRASH_REPORT, "%s: %s", what,
          symd_status_name(st));
    if (st == SYMD_OK)
        minidump_free(&d);
    else
        CHECK(d.nthreads == 0 && d.nmodules == 0 && !d.threads && !d.warnings,
              "%s: refused, yet something kept", what);
    crash_report r;
    symd_err e2 = {0};
    symd_status cs = crash_parse(m, n, &r, &e2);
    CHECK(cs == st, "%s: crash_parse %s, minidump_read %s", what, symd_status_name(cs),
          symd_status_name(st));
    if (cs == SYMD_OK)
        crash_report_free(&r);
}

TEST(minidump_hostile_directory_past_the_end)
{
    size_t len;
    uint8_t *buf = load_dump(dumps[0].file, &len);
    if (!buf)
        return;
    uint8_t *m = malloc(len);
    memcpy(m, buf, len);
    wr32(m + 12, (uint32_t)len + 64); /* StreamDirectoryRva */
    minidump d;
    symd_err err = {0};
    CHECK(minidump_read(m, len, &d, &err) == SYMD_E_CORRUPT && strstr(err.msg, "directory"),
          "refused: %s", err.msg);
    read_both(m, len, "directory past the end");
    /* a directory of more entries than the file holds: those that fit */
    memcpy(m, buf, len);
    wr32(m + 8, 0x10000000);
    CHECK(minidump_read(m, len, &d, &err) == SYMD_OK, "read");
    CHECK(has_warning(&d, "stream directory", "declares 268435456 streams"), "warned");
    minidump_free(&d);
    /* one stream past the end: that stream alone is left out */
    memcpy(m, buf, len);
    size_t e = dir_entry_of(m, len, 3);
    wr32(m + e + 8, (uint32_t)len - 8);
    CHECK(minidump_read(m, len, &d, &err) == SYMD_OK, "read");
    CHECK(d.nthreads == 0 && d.nmodules == 43 &&
              has_warning(&d, "ThreadListStream", "past the end of the dump"),
          "thread list left out, with a warning");
    minidump_free(&d);
    read_both(m, len, "thread list past the end");
    free(m);
    free(buf);
}

TEST(minidump_hostile_four_billion_threads)
{
    for (size_t k = 0; k < NDUMPS; k++) {
        size_t len;
        uint8_t *buf = load_dump(dumps[k].file, &len);
        if (!buf)
            return;
        size_t e = dir_entry_of(buf, len, 3);
        wr32(buf + rd32(buf + e + 8), 0xffffffffu); /* NumberOfThreads */
        minidump d;
        CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK, "%s", dumps[k].file);
        CHECK(d.nthreads == 0 && has_warning(&d, "ThreadListStream", "declares 4294967295"),
              "%s: 2^32-1 threads declared: none read, a warning", dumps[k].file);
        minidump_free(&d);
        /* and 2^32-1 modules */
        e = dir_entry_of(buf, len, 4);
        wr32(buf + rd32(buf + e + 8), 0xffffffffu);
        CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK && d.nmodules == 0 &&
                  has_warning(&d, "ModuleListStream", "declares 4294967295"),
              "%s: modules", dumps[k].file);
        minidump_free(&d);
        read_both(buf, len, "2^32 threads");
        free(buf);
    }
}

TEST(minidump_hostile_overlapping_memory)
{
    for (size_t k = 0; k < NDUMPS; k++) {
        size_t len;
        uint8_t *buf = load_dump(dumps[k].file, &len);
        if (!buf)
            return;
        minidump d;
        CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK, "read");
        size_t before = d.nregions;
        minidump_free(&d);
        size_t e = dir_entry_of(buf, len, 5);
        uint32_t rva = rd32(buf + e + 8), size = rd32(buf + e + 4), n = rd32(buf + rva);
        size_t start = size == 8 + 16 * (size_t)n ? 8 : 4;
        if (n < 2) {
            free(buf);
            continue;
        }
        /* the second range starts 8 bytes into the first */
        uint64_t b0 = (uint64_t)rd32(buf + rva + start) | (uint64_t)rd32(buf + rva + start + 4) << 32;
        wr64(buf + rva + start + 16, b0 + 8);
        CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK, "%s", dumps[k].file);
        CHECK(has_warning(&d, "memory at", "overlap"), "%s: overlap warned", dumps[k].file);
        CHECK(d.nregions == before - 1 || d.nregions == before,
              "%s: %zu ranges of %zu", dumps[k].file, d.nregions, before);
        for (size_t i = 1; i < d.nregions; i++)
            CHECK(d.regions[i].base >= d.regions[i - 1].base + d.regions[i - 1].len,
                  "%s: ranges apart", dumps[k].file);
        minidump_free(&d);
        read_both(buf, len, "overlapping memory");
        free(buf);
    }
}

TEST(minidump_hostile_gigabyte_stack)
{
    for (size_t k = 0; k < NDUMPS; k++) {
        size_t len;
        uint8_t *buf = load_dump(dumps[k].file, &len);
        if (!buf)
            return;
        size_t e = dir_entry_of(buf, len, 3);
        uint32_t rva = rd32(buf + e + 8), n = rd32(buf + rva);
        size_t start = rd32(buf + e + 4) == 8 + 48 * (size_t)n ? 8 : 4; /* Breakpad pads */
        wr32(buf + rva + start + 32, 1u << 30); /* thread 0's Stack.Memory.DataSize */
        minidump d;
        CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK, "%s", dumps[k].file);
        CHECK(d.nthreads && !d.threads[0].has_stack &&
                  has_warning(&d, "ThreadListStream[0]", "stack of 1073741824 bytes"),
              "%s: 1 GB stack left out with a warning", dumps[k].file);
        minidump_free(&d);
        /* the report: thread 0 still has its context frame */
        crash_report r;
        CHECK(crash_parse(buf, len, &r, NULL) == SYMD_OK && r.nthreads &&
                  r.threads[0].nframes >= 1,
              "%s: report", dumps[k].file);
        crash_report_free(&r);
        free(buf);
    }
}

TEST(minidump_hostile_duplicate_and_overlapping_streams)
{
    size_t len;
    uint8_t *buf = load_dump(dumps[0].file, &len);
    if (!buf)
        return;
    /* MiscInfoStream's entry retyped as a second thread list */
    size_t e = dir_entry_of(buf, len, 15);
    wr32(buf + e, 3);
    minidump d;
    CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK && d.nthreads == 1 && !d.has_pid &&
              has_warning(&d, "ThreadListStream", "a second stream of this type"),
          "duplicate left out");
    minidump_free(&d);
    wr32(buf + e, 15);
    /* the exception stream's entry pointed into the module list */
    size_t x = dir_entry_of(buf, len, 6), mo = dir_entry_of(buf, len, 4);
    wr32(buf + x + 8, rd32(buf + mo + 8) + 8);
    CHECK(minidump_read(buf, len, &d, NULL) == SYMD_OK, "read");
    CHECK(d.nmodules == 43 || d.exception.present, "one of the two read");
    CHECK(has_warning(&d, "stream directory", "overlap"), "overlap warned");
    minidump_free(&d);
    read_both(buf, len, "overlapping streams");
    free(buf);
}

/* Every truncation (in steps) and single-byte mutations of every dump:
 * read or refused whole; never a crash (the sanitizer build runs this). */
TEST(minidump_hostile_truncations_and_mutations)
{
    for (size_t k = 0; k < NDUMPS; k++) {
        size_t len;
        uint8_t *buf = load_dump(dumps[k].file, &len);
        if (!buf)
            return;
        size_t step = len / 97 + 1;
        for (size_t n = 0; n < len; n += step)
            read_both(buf, n, "truncation");
        uint8_t *m = malloc(len);
        uint64_t seed = 0x9e3779b97f4a7c15ull + k;
        for (int i = 0; i < 300; i++) {
            memcpy(m, buf, len);
            for (int j = 0; j < 4; j++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                /* mostly the header, directory and stream heads, where offsets live */
                size_t at = (seed >> 33) % (i & 1 ? len : (len < 4096 ? len : 4096));
                m[at] = (uint8_t)(seed >> 24);
            }
            memcpy(m, "MDMP", 4);
            read_both(m, len, "mutation");
        }
        free(m);
        free(buf);
    }
}

/* ---- the oracle: Breakpad's minidump_stackwalk on the same dumps ---- */

#define STACKWALK "tests/oracle/node_modules/minidump/bin/linux-x64/minidump_stackwalk"

/* What minidump_stackwalk says of a dump: its modules (-m), the crash
 * reason and address, and each thread's frames (pc and how found). */
typedef struct {
    uint64_t pc;
    char found[48];
} ow_frame;
typedef struct {
    int crashed;           /* the "(crashed)" thread, -1 when none */
    char reason[128];
    uint64_t address;
    size_t nthreads;
    size_t nframes[8];
    ow_frame frames[8][64];
    size_t nmodules;
    struct {
        char name[128], id[40];
        uint64_t base, max;
    } modules[400];
} oracle_walk;

static FILE *run_stackwalk(const char *flags, const char *dump)
{
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' 2>/dev/null", root_path(STACKWALK), flags, dump);
    return popen(cmd, "r");
}

static bool oracle_read(const char *dump, oracle_walk *o)
{
    memset(o, 0, sizeof *o);
    o->crashed = -1;
    char line[4096];
    FILE *f = run_stackwalk("-m", dump);
    if (!f)
        return false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Module|", 7) || o->nmodules >= 400)
            continue;
        char *c[9] = {0};
        int n = 0;
        for (char *s = line, *t; n < 9 && s; s = t) {
            t = strchr(s, '|');
            if (t)
                *t++ = 0;
            c[n++] = s;
        }
        if (n < 8)
            continue;
        snprintf(o->modules[o->nmodules].name, 128, "%.120s", c[1]);
        snprintf(o->modules[o->nmodules].id, 40, "%.36s", c[4]);
        o->modules[o->nmodules].base = strtoull(c[5], NULL, 16);
        o->modules[o->nmodules].max = strtoull(c[6], NULL, 16);
        o->nmodules++;
    }
    if (pclose(f) != 0)
        return false;
    if (!(f = run_stackwalk("", dump)))
        return false;
    int th = -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        int t;
        if (sscanf(line, "Thread %d", &t) == 1 && t >= 0 && t < 8) {
            th = t;
            if ((size_t)t + 1 > o->nthreads)
                o->nthreads = (size_t)t + 1;
            if (strstr(line, "(crashed)"))
                o->crashed = t;
        } else if (!strncmp(line, "Crash reason:", 13)) {
            const char *v = line + 13;
            while (*v == ' ')
                v++;
            snprintf(o->reason, sizeof o->reason, "%.120s", v);
        } else if (!strncmp(line, "Crash address:", 14)) {
            o->address = strtoull(line + 14, NULL, 16);
        } else if (!strncmp(line, "Loaded modules:", 15)) {
            th = -1;
        } else if (th >= 0) {
            size_t *nf = &o->nframes[th];
            char *p;
            size_t sp = strspn(line, " "), dg = strspn(line + sp, "0123456789");
            if (dg && !strncmp(line + sp + dg, "  ", 2) && !strchr(line, '=') && *nf < 64) {
                (*nf)++; /* " 0  module + 0x13a1", "10  module ...": a new frame */
            } else if (*nf && ((p = strstr(line, "rip = 0x")) || (p = strstr(line, " pc = 0x")))) {
                o->frames[th][*nf - 1].pc = strtoull(strstr(p, "0x"), NULL, 16);
            } else if (*nf && (p = strstr(line, "Found by: "))) {
                snprintf(o->frames[th][*nf - 1].found, 48, "%.40s", p + 10);
            }
        }
    }
    return pclose(f) == 0;
}

/* symd's report of each dump against minidump_stackwalk's: the module
 * list (name, debug id, range), the exception (reason and address), the
 * crashed thread and its context frame, and every frame minidump_stackwalk
 * found by frame pointer, which the fallback walker must find alike, with
 * trust frame_pointer. The comparison is written to
 * tests/out/minidump-oracle.txt. */
TEST(minidump_oracle_stackwalk)
{
    if (!minidumps_dir()) {
        test_skip("../shared/minidumps is absent");
        return;
    }
    FILE *probe = fopen(root_path(STACKWALK), "r");
    if (!probe) {
        test_skip("minidump_stackwalk is not installed (npm ci in tests/oracle)");
        return;
    }
    fclose(probe);
    char outp[600];
    snprintf(outp, sizeof outp, "%s", root_path("tests/out"));
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", outp);
    CHECK(system(cmd) == 0, "mkdir tests/out");
    snprintf(outp + strlen(outp), sizeof outp - strlen(outp), "/minidump-oracle.txt");
    FILE *rep = fopen(outp, "w");
    CHECK(rep, "%s", outp);
    if (!rep)
        return;
    fprintf(rep, "dump\tmodules (symd/stackwalk, equal)\texception\tcrashed thread, context pc\t"
                 "frame-pointer frames equal / stackwalk's\tframes symd walks beyond (stackwalk: scan or none)\t"
                 "stackwalk's frames past the frame-pointer chain (scan: the CFI walker's part)\n");
    oracle_walk *o = malloc(sizeof *o);
    for (size_t k = 0; k < NDUMPS; k++) {
        char path[800];
        snprintf(path, sizeof path, "%s/%s", minidumps_dir(), dumps[k].file);
        if (!oracle_read(path, o)) {
            CHECK(0, "%s: minidump_stackwalk failed", dumps[k].file);
            continue;
        }
        size_t len;
        uint8_t *buf = load_dump(dumps[k].file, &len);
        crash_report r;
        if (!buf || crash_parse(buf, len, &r, NULL) != SYMD_OK) {
            CHECK(0, "%s: crash_parse", dumps[k].file);
            free(buf);
            continue;
        }
        /* modules: every one of stackwalk's is symd's, alike */
        size_t same = 0;
        for (size_t i = 0; i < o->nmodules; i++) {
            for (size_t j = 0; j < r.nimages; j++) {
                const crash_image *im = &r.images[j];
                char u[37], id[40];
                uuid_format(im->uuid, u);
                size_t q = 0;
                for (size_t c = 0; u[c]; c++)
                    if (u[c] != '-')
                        id[q++] = u[c];
                id[q++] = '0'; /* age 0, as every module of these dumps has */
                id[q] = 0;
                if (im->name && !strcmp(im->name, o->modules[i].name) &&
                    !strcmp(id, o->modules[i].id) && im->load_address == o->modules[i].base &&
                    im->end_address == o->modules[i].max) {
                    same++;
                    break;
                }
            }
        }
        CHECK(same == o->nmodules && r.nimages == o->nmodules, "%s: modules %zu equal of %zu/%zu",
              dumps[k].file, same, r.nimages, o->nmodules);
        /* exception: stackwalk's "EXC_BAD_ACCESS / KERN_INVALID_ADDRESS" or
         * "0x00000000 / 0x00000000" is the stream's code and flags as
         * written; symd's words for them beside (Crashpad's EXC_CRASH is
         * read from the raw Mach exception it keeps in the parameters) */
        minidump md;
        CHECK(minidump_read(buf, len, &md, NULL) == SYMD_OK, "read");
        char reason[160];
        snprintf(reason, sizeof reason, "%s%s%s%s / %s", r.exception_type ? r.exception_type : "",
                 r.exception_signal ? " (" : "", r.exception_signal ? r.exception_signal : "",
                 r.exception_signal ? ")" : "", r.exception_codes ? r.exception_codes : "");
        char raw[64];
        snprintf(raw, sizeof raw, "0x%08x / 0x%08x", md.exception.code, md.exception.flags);
        bool exc = !strcmp(o->reason, raw) ||
                   (md.exception.code == 1 && md.exception.flags == 1 &&
                    !strcmp(o->reason, "EXC_BAD_ACCESS / KERN_INVALID_ADDRESS"));
        uint64_t addr = md.exception.address;
        exc = exc && addr == o->address;
        CHECK(exc, "%s: exception %s at 0x%llx, stackwalk '%s' at 0x%llx", dumps[k].file, raw,
              (unsigned long long)addr, o->reason, (unsigned long long)o->address);
        minidump_free(&md);
        /* the crashed thread and its context frame */
        bool ctx = o->crashed >= 0 && r.crashed_thread == o->crashed &&
                   r.threads[o->crashed].nframes && o->nframes[o->crashed] &&
                   r.threads[o->crashed].frames[0].address == o->frames[o->crashed][0].pc &&
                   r.threads[o->crashed].frames[0].trust == CRASH_TRUST_CONTEXT;
        CHECK(ctx, "%s: crashed thread %ld, stackwalk's %d, context frame", dumps[k].file,
              r.crashed_thread, o->crashed);
        /* frames stackwalk found by frame pointer, each thread */
        size_t fp_want = 0, fp_same = 0, beyond = 0, scanned = 0;
        for (size_t t = 0; t < o->nthreads && t < r.nthreads; t++) {
            const crash_thread *th = &r.threads[t];
            size_t i = 1;
            for (; i < o->nframes[t] && !strcmp(o->frames[t][i].found,
                                                 "previous frame's frame pointer"); i++) {
                fp_want++;
                bool eq = i < th->nframes && th->frames[i].address == o->frames[t][i].pc &&
                          th->frames[i].trust == CRASH_TRUST_FRAME_POINTER;
                fp_same += eq;
                CHECK(eq, "%s thread %zu frame %zu: 0x%llx, stackwalk 0x%llx", dumps[k].file, t,
                      i, i < th->nframes ? (unsigned long long)th->frames[i].address : 0ull,
                      (unsigned long long)o->frames[t][i].pc);
            }
            if (th->nframes > i)
                beyond += th->nframes - i;
            if (o->nframes[t] > i)
                scanned += o->nframes[t] - i;
        }
        fprintf(rep, "%s\t%zu/%zu, %zu\t%s at 0x%llx (stackwalk: %s at 0x%llx), symd: %s\t%ld (stackwalk %d), 0x%llx %s\t%zu / %zu\t%zu\t%zu\n",
                dumps[k].file, r.nimages, o->nmodules, same, raw, (unsigned long long)addr,
                o->reason, (unsigned long long)o->address, reason, r.crashed_thread, o->crashed,
                r.crashed_thread >= 0 && r.threads[r.crashed_thread].nframes
                    ? (unsigned long long)r.threads[r.crashed_thread].frames[0].address
                    : 0ull,
                ctx ? "equal" : "DIFFERENT", fp_same, fp_want, beyond, scanned);
        crash_report_free(&r);
        free(buf);
    }
    free(o);
    fclose(rep);
}

/* The inputs fuzz_minidump once failed on (fuzz/regress/minidump-*): read
 * or refused whole, as any other. */
static void replay(const char *rel, const uint8_t *buf, size_t len)
{
    (void)rel;
    read_both(buf, len, rel);
}

TEST(minidump_fuzz_regressions)
{
    int n = each_regression("minidump-", replay);
    CHECK(n >= 1, "fuzz/regress/minidump-*: %d inputs", n);
}

/* Crashpad's upload form read by crash_parse: the dump's part and the form
 * fields (annotations), with CRLF or bare LF lines, a quoted name holding a
 * ';', another file part (a warning), and a body cut before its closing
 * delimiter (a warning, the parts as far as they go). */
TEST(minidump_upload_form)
{
    size_t len;
    uint8_t *dump = load_dump(dumps[2].file, &len);
    if (!dump)
        return;
    static const char *const nl[] = {"\r\n", "\n"};
    for (int v = 0; v < 4; v++) {
        const char *e = nl[v & 1];
        size_t cap = len + 2048, o = 0;
        char *b = malloc(cap);
        o += (size_t)snprintf(b + o, cap - o,
                              "--BOUNDARY%sContent-Disposition: form-data; name=\"a;b\"%s%s"
                              "x;y%s--BOUNDARY%sContent-Disposition: form-data; name=\"log\"; "
                              "filename=\"log.txt\"%s%sbytes%s--BOUNDARY%s"
                              "Content-Disposition: form-data; name=\"upload_file_minidump\"; "
                              "filename=\"d.dmp\"%sContent-Type: application/octet-stream%s%s",
                              e, e, e, e, e, e, e, e, e, e, e, e);
        memcpy(b + o, dump, len);
        o += len;
        bool cut = v >= 2;
        if (!cut)
            o += (size_t)snprintf(b + o, cap - o, "%s--BOUNDARY--%s", e, e);
        crash_report r;
        symd_err err = {0};
        CHECK(crash_parse((uint8_t *)b, o, &r, &err) == SYMD_OK, "variant %d: %s", v, err.msg);
        bool field = false, warned_file = false, warned_cut = false;
        for (size_t i = 0; i < r.nannotations; i++)
            field |= !strcmp(r.annotations[i].name, "a;b") && !strcmp(r.annotations[i].value, "x;y");
        for (size_t i = 0; i < r.nwarnings; i++) {
            warned_file |= strstr(r.warnings[i].message, "'log' (file 'log.txt', 5 bytes)") != NULL;
            warned_cut |= strstr(r.warnings[i].message, "closing delimiter") != NULL;
        }
        CHECK(r.format == CRASH_FORMAT_MINIDUMP && r.nimages == dumps[2].nmodules &&
                  r.nthreads == 1,
              "variant %d: the dump read", v);
        CHECK(field && warned_file && warned_cut == cut, "variant %d: field %d, file %d, cut %d",
              v, field, warned_file, warned_cut);
        crash_report_free(&r);
        /* without its dump part: no report */
        char *p = strstr(b, "upload_file_minidump");
        memcpy(p, "upload_file_minidumq", 20);
        CHECK(crash_parse((uint8_t *)b, o, &r, &err) == SYMD_E_NOT_CRASH_REPORT,
              "variant %d: no dump part", v);
        free(b);
    }
    free(dump);
}

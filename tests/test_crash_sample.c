/* parser/crash_sample.c: macOS sample, spindump, microstackshot (.ips
 * 145/202/206) and legacy stackshot (.ips 188) text into the crash model:
 * real reports against ../shared/real-reports/MANIFEST.tsv, and hostile
 * inputs built here from the grammar. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../parser/crash.h"
#include "test.h"

/* ---- helpers ---------------------------------------------------------------- */

/* The manifest's 'frames' column for file, -1 when not listed. */
static long manifest_frames(const char *dir, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/MANIFEST.tsv", dir);
    size_t len;
    char *m = (char *)read_file(path, &len);
    long frames = -1;
    for (char *line = m; line && *line && frames < 0;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        char *cols[10] = {0};
        int nc = 0;
        for (char *c = line; nc < 10;) {
            cols[nc++] = c;
            char *tab = strchr(c, '\t');
            if (!tab)
                break;
            *tab = 0;
            c = tab + 1;
        }
        if (nc >= 9 && strcmp(cols[0], file) == 0)
            frames = strtol(cols[8], NULL, 10);
        line = nl ? nl + 1 : NULL;
    }
    free(m);
    return frames;
}

/* Parses a real report; false (skipped) when the directory is absent. */
static bool parse_real(const char *file, crash_report *r)
{
    const char *dir = real_reports_dir();
    if (!dir) {
        test_skip("../shared/real-reports is absent: real sample/spindump reports not tested");
        return false;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    size_t len;
    char *buf = (char *)read_file(path, &len);
    CHECK(buf, "cannot read %s", path);
    if (!buf)
        return false;
    symd_err err;
    symd_err_clear(&err);
    symd_status st = crash_parse((const uint8_t *)buf, len, r, &err);
    free(buf);
    CHECK(st == SYMD_OK, "%s: %s", file, err.msg);
    if (st)
        return false;
    long want = manifest_frames(dir, file);
    size_t sum = 0;
    for (size_t i = 0; i < r->nthreads; i++)
        sum += r->threads[i].nframes;
    CHECK(want >= 0, "%s is not in MANIFEST.tsv", file);
    CHECK((long)r->total_frames == want && sum == r->total_frames,
          "%s: %zu frames (%zu in threads), the manifest says %ld", file, r->total_frames, sum,
          want);
    printf("  %-34.34s kind %-8s frames %zu/%ld threads %zu processes %zu images %zu\n",
           strrchr(file, '_') ? strrchr(file, '_') + 1 : file, crash_kind_name(r->kind),
           r->total_frames, want, r->nthreads, r->nprocesses, r->nimages);
    return true;
}

/* What every model the reader gives must hold: trees in pre-order (first
 * depth 0, each at most one deeper than the one before), indexes in range,
 * frames of a process resolved to that process's images. */
static void check_shape(const char *what, const crash_report *r)
{
    for (size_t i = 0; i < r->nthreads; i++) {
        const crash_thread *t = &r->threads[i];
        CHECK(t->process >= -1 && t->process < (long)r->nprocesses, "%s: thread %zu process",
              what, i);
        for (size_t k = 0; k < t->nframes; k++) {
            const crash_frame *f = &t->frames[k];
            if (t->is_tree)
                CHECK(k ? f->depth <= t->frames[k - 1].depth + 1 : f->depth == 0,
                      "%s: thread %zu frame %zu depth %u after %u", what, i, k, f->depth,
                      k ? t->frames[k - 1].depth : 0);
            CHECK(f->depth < CRASH_MAX_DEPTH, "%s: depth cap", what);
            CHECK(f->image >= -1 && f->image < (long)r->nimages, "%s: image index", what);
            if (f->image >= 0)
                CHECK(r->images[f->image].process == t->process,
                      "%s: thread %zu frame %zu resolved to another process's image", what, i, k);
        }
    }
    for (size_t i = 0; i < r->nimages; i++)
        CHECK(r->images[i].process >= -1 && r->images[i].process < (long)r->nprocesses,
              "%s: image %zu process", what, i);
}

static bool has_warning(const crash_report *r, const char *where, const char *text)
{
    for (size_t i = 0; i < r->nwarnings; i++)
        if ((!where || strcmp(r->warnings[i].where, where) == 0) &&
            strstr(r->warnings[i].message, text))
            return true;
    return false;
}

static bool block_with(const crash_report *r, crash_place at, const char *text)
{
    for (size_t i = 0; i < r->nblocks; i++)
        if (r->blocks[i].at == at && strstr(r->blocks[i].text, text))
            return true;
    return false;
}

static symd_status parse_buf(const char *s, size_t n, crash_report *r, symd_err *err)
{
    symd_err_clear(err);
    return crash_parse((const uint8_t *)s, n, r, err);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A string built by appending (inputs made from the grammar). */
typedef struct {
    char *s;
    size_t len, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = (b->len + (size_t)n + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- real reports ----------------------------------------------------------- */

TEST(sample_real_macos_sample)
{
    crash_report r;
    if (!parse_real("inket+MacSymbolicator@7ad41f1+MacSymbolicatorTests_Resources_Samples_"
                    "singlethread-sample.txt", &r))
        return;
    check_shape("sample", &r);
    CHECK(r.kind == CRASH_KIND_SAMPLE && r.format == CRASH_FORMAT_CRASH && r.nwarnings == 0,
          "kind %s, %zu warnings", crash_kind_name(r.kind), r.nwarnings);
    CHECK(r.process && strcmp(r.process, "SingleThreadHangingTest") == 0, "process");
    CHECK(r.os_version && strcmp(r.os_version, "Mac OS X 10.15.7 (19H114)") == 0, "os");
    CHECK(r.code_type && strcmp(r.code_type, "X86-64") == 0, "code type");
    CHECK(r.date && strcmp(r.date, "2021-04-03 11:42:08.934 +0900") == 0, "date");
    CHECK(r.nthreads == 1 && r.nimages == 120 && r.nprocesses == 0, "threads %zu images %zu",
          r.nthreads, r.nimages);
    const crash_thread *t = &r.threads[0];
    CHECK(t->is_tree && t->count == 2672 && t->queue &&
              strcmp(t->queue, "com.apple.main-thread") == 0 && t->title &&
              strncmp(t->title, "2672 Thread_358683", 18) == 0,
          "thread heading");
    const crash_frame *f = &t->frames[1]; /* "2672 ???  (in SingleThreadHangingTest)  load
                                             address 0x103245000 + 0x3eb0  [0x103248eb0]" */
    CHECK(f->depth == 1 && f->count == 2672 && f->address == 0x103248eb0 && !f->symbol &&
              f->has_load && f->load_address == 0x103245000 && f->image_name &&
              strcmp(f->image_name, "SingleThreadHangingTest") == 0,
          "frame 1");
    CHECK(f->image >= 0 && r.images[f->image].is_app && r.images[f->image].has_uuid &&
              r.images[f->image].load_address == 0x103245000,
          "frame 1's image is the app");
    f = &t->frames[5]; /* "__psynch_mutexwait  (in libsystem_kernel.dylib) + 10  [0x7fff6fd42062]" */
    CHECK(f->depth == 5 && f->address == 0x7fff6fd42062 && f->symbol &&
              strcmp(f->symbol, "__psynch_mutexwait") == 0 && f->has_symbol_offset &&
              f->symbol_offset == 10 && f->image >= 0 &&
              strcmp(r.images[f->image].name, "libsystem_kernel.dylib") == 0,
          "frame 5");
    const crash_image *im = &r.images[2]; /* com.apple.Accelerate (1.11 - Accelerate 1.11) */
    CHECK(im->name && strcmp(im->name, "Accelerate") == 0 && im->bundle_id &&
              strcmp(im->bundle_id, "com.apple.Accelerate") == 0 && im->version &&
              strcmp(im->version, "1.11 - Accelerate 1.11") == 0 && im->has_end &&
              im->end_address == 0x7fff31799fff && !im->is_app,
          "bundle image");
    CHECK(r.text_header && strncmp(r.text_header, "Sampling process 8304", 21) == 0 &&
              !strstr(r.text_header, "Call graph:"),
          "text_header");
    CHECK(block_with(&r, CRASH_AT_THREAD, "Call graph:") &&
              block_with(&r, CRASH_AT_IMAGES, "Sort by top of stack") &&
              block_with(&r, CRASH_AT_END, "Sample analysis of process 8304"),
          "unmodelled sections kept as text");
    crash_report_free(&r);
}

TEST(sample_real_microstackshot_cpu_resource_202)
{
    crash_report r;
    if (!parse_real("faisalmemon+ios-crash-dump-analysis-book+examples_resource_apfs_defragd."
                    "cpu_resource-2020-10-19-234902.ips.synced", &r))
        return;
    check_shape("202", &r);
    CHECK(r.kind == CRASH_KIND_RESOURCE && r.format == CRASH_FORMAT_IPS && r.bug_type == 202 &&
              r.nwarnings == 0,
          "kind %s", crash_kind_name(r.kind));
    CHECK(r.process && strcmp(r.process, "apfs_defragd") == 0 && r.hardware_model &&
              strcmp(r.hardware_model, "iPhone12,1") == 0 && r.incident_id &&
              strcmp(r.incident_id, "05D98B49-C8B1-4F18-B494-491D76B2AA3C") == 0,
          "header fields");
    CHECK(r.nprocesses == 2 && r.processes[0].pid == 7877 &&
              strcmp(r.processes[0].name, "apfs_defragd") == 0 && r.processes[1].pid == -1 &&
              strcmp(r.processes[1].name, "PerfPowerServicesExtended") == 0,
          "processes");
    CHECK(r.nthreads == 3, "%zu threads", r.nthreads);
    if (r.nthreads != 3)
        goto out;
    /* The heaviest stack: 15 frames, a chain, the target process's. */
    const crash_thread *h = &r.threads[0];
    CHECK(h->role == CRASH_THREAD_HEAVIEST && h->process == 0 && h->nframes == 15 &&
              h->count == 18 && h->frames[14].depth == 14 && h->frames[14].count == 2 &&
              h->frames[14].address == 0x1dae8885c,
          "heaviest stack");
    /* The tree: "<User mode>" leaves are no frames, their siblings stay at depth 14. */
    const crash_thread *t = &r.threads[1];
    CHECK(t->role == CRASH_THREAD_NORMAL && t->process == 0 && t->nframes == 62 &&
              t->count == 18 && !t->title,
          "process 0 tree");
    const crash_frame *f = &t->frames[14], *g = &t->frames[15];
    CHECK(f->depth == 14 && f->count == 2 && f->address == 0x1dae8885c && g->depth == 14 &&
              g->count == 1 && g->address == 0x1dae8884c,
          "libz siblings after a <User mode> leaf");
    CHECK(f->image >= 0 && strcmp(r.images[f->image].name, "libz.1.dylib") == 0 &&
              r.images[f->image].process == 0 && f->has_load &&
              f->load_address == 0x1dae8885c - 47196,
          "(libz.1.dylib + 47196) resolves within process 0");
    const crash_frame *app = &t->frames[6]; /* "??? (apfs_defragd + 18536) [0x104f30868]" */
    CHECK(app->image >= 0 && r.images[app->image].is_app && !r.images[app->image].has_end &&
              r.images[app->image].load_address == 0x104f2c000,
          "the app image (end unknown)");
    CHECK(r.threads[2].process == 1 && r.threads[2].nframes == 48 && r.threads[2].count == 3,
          "process 1 tree");
    CHECK(block_with(&r, CRASH_AT_THREAD, "Powerstats for:   apfs_defragd [7877]"),
          "process header kept");
out:
    crash_report_free(&r);
}

TEST(sample_real_microstackshot_diskwrites_145)
{
    crash_report r;
    if (!parse_real("faisalmemon+ios-crash-dump-analysis-book+examples_resource_assetsd."
                    "diskwrites_resource-2020-10-18-025557.ips.synced", &r))
        return;
    check_shape("145", &r);
    CHECK(r.kind == CRASH_KIND_RESOURCE && r.bug_type == 145 && r.nwarnings == 0, "kind");
    CHECK(r.nprocesses == 8 && r.nthreads == 9 && r.threads[0].role == CRASH_THREAD_HEAVIEST &&
              r.threads[0].nframes == 17 && r.threads[0].process == 0 &&
              r.processes[0].pid == 124,
          "processes %zu threads %zu", r.nprocesses, r.nthreads);
    if (r.nthreads > 3) {
        /* logd: "<Effective Thread QoS ...>" leaves collapse, the next root child is depth 6 */
        const crash_thread *t = &r.threads[3];
        CHECK(t->process == 2 && t->nframes == 13 && t->frames[9].depth == 9 &&
                  t->frames[10].depth == 6 && t->frames[10].count == 3 &&
                  t->frames[10].address == 0x100593e68,
              "logd tree");
    }
    crash_report_free(&r);
}

TEST(sample_real_sleep_wake_spindump)
{
    crash_report r;
    if (!parse_real("faisalmemon+ios-crash-dump-analysis-book+examples_sleep_wake_osx_sleep_wake_"
                    "osx.crash", &r))
        return;
    check_shape("sleep wake", &r);
    CHECK(r.kind == CRASH_KIND_SPINDUMP && r.format == CRASH_FORMAT_CRASH && r.nwarnings == 0,
          "kind %s", crash_kind_name(r.kind));
    CHECK(r.text_header && strncmp(r.text_header, "Sleep Wake failure in EFI", 25) == 0 &&
              strstr(r.text_header, "Data Source:      Stackshots"),
          "the free-text preamble is the header");
    CHECK(r.nprocesses == 1 && r.processes[0].pid == 373 &&
              strcmp(r.processes[0].name, "swd") == 0 && r.nthreads == 1 && r.nimages == 2,
          "one process, one thread, two images");
    const crash_thread *t = &r.threads[0];
    CHECK(t->process == 0 && t->count == 1 && t->title &&
              strstr(t->title, "Thread 0x9bd") == t->title &&
              strstr(t->title, "\n<thread QoS background"),
          "thread heading and its state line");
    const crash_frame *f = &t->frames[0]; /* "start + 1 (libdyld.dylib + 109769) [0x7fff68d69cc9] 1" */
    CHECK(f->depth == 0 && f->symbol && strcmp(f->symbol, "start") == 0 && f->symbol_offset == 1 &&
              f->image == 0 && f->has_load && f->load_address == 0x7fff68d4f000,
          "frame 0");
    f = &t->frames[4]; /* "*1  ??? [0xffffff80002c1206] 1": a kernel frame */
    CHECK(f->depth == 4 && f->count == 1 && f->address == 0xffffff80002c1206 && f->image == -1 &&
              !f->symbol,
          "kernel frame");
    CHECK(t->frames[7].depth == 7 && t->frames[7].address == 0xffffff80002e49e7, "last frame");
    CHECK(block_with(&r, CRASH_AT_END, "System Profile:") &&
              block_with(&r, CRASH_AT_THREAD, "Process:          swd [373]"),
          "sections kept as text");
    crash_report_free(&r);
}

TEST(sample_real_legacy_stackshot_188)
{
    crash_report r;
    if (!parse_real("faisalmemon+ios-crash-dump-analysis-book+examples_stackshot_ios_stackshot_ios."
                    "crash", &r))
        return;
    check_shape("188", &r);
    CHECK(r.kind == CRASH_KIND_HANG && r.bug_type == 188, "kind %s", crash_kind_name(r.kind));
    /* The file ends in the middle of an image line: that, and only that, is warned. */
    CHECK(r.nwarnings == 1 && has_warning(&r, "line 885", "UUID is not closed"),
          "%zu warnings", r.nwarnings);
    CHECK(r.hardware_model && strcmp(r.hardware_model, "iPhone3,1") == 0 && r.incident_id &&
              strcmp(r.incident_id, "D2604550-FFA3-45D5-8247-A3F1E72E6A40") == 0,
          "header");
    CHECK(r.nprocesses == 3 && r.processes[0].pid == 0 &&
              strcmp(r.processes[0].name, "kernel_task") == 0 && r.processes[1].pid == 1 &&
              strcmp(r.processes[1].name, "launchd") == 0 && r.processes[2].pid == 14,
          "processes");
    const crash_thread *t = NULL;
    for (size_t i = 0; i < r.nthreads && !t; i++)
        if (r.threads[i].title && strncmp(r.threads[i].title, "thread 0x14b ", 13) == 0)
            t = &r.threads[i];
    CHECK(t && !t->is_tree && t->process == 1 && t->nframes == 7, "launchd thread 0x14b");
    if (t) {
        /* "user: 0x3964aa58 ... 0x1b1d9 ...": launchd's own code resolves to its image
         * at 0x16000; the shared cache, past the last image, stays unresolved. */
        CHECK(t->frames[0].address == 0x3964aa58 && t->frames[0].image == -1, "shared cache");
        CHECK(t->frames[4].address == 0x1b1d9 && t->frames[4].image >= 0 &&
                  r.images[t->frames[4].image].load_address == 0x16000 &&
                  r.images[t->frames[4].image].has_uuid,
              "launchd frame");
    }
    crash_report_free(&r);
}

/* ---- grammar-built inputs ------------------------------------------------------ */

/* A spindump of two processes that load "libA.dylib" at different addresses. */
static const char spin_two_procs[] =
    "Date/Time:        2024-01-01 00:00:00 +0000\n"
    "OS Version:       macOS 14.0 (Build 23A1)\n"
    "Architecture:     arm64e\n"
    "Data Source:      Stackshots\n"
    "Command:          App\n"
    "PID:              42\n"
    "\n"
    "Heaviest stack for the main thread of the target process:\n"
    "  9  main + 4 (main.c:7,2 in App + 16) [0x100000010]\n"
    " *9  ??? (kernel + 32) [0xfffffe0000000020]\n"
    "\n"
    "Process:          Other [7]\n"
    "Path:             /usr/bin/Other\n"
    "\n"
    "  Thread 0x10    Thread name \"worker\"    3 samples (1-3)    priority 4 (base 4)\n"
    "  <thread QoS default (requested default)>\n"
    "  3  f + 1 (libA.dylib + 1) [0x200001001] 1-3\n"
    "\n"
    "  Binary Images:\n"
    "           0x200000000 -        0x200000fff  Other <11111111-1111-1111-1111-111111111111> "
    "/usr/bin/Other\n"
    "           0x200001000 -        0x200001fff  libA.dylib (1) "
    "<22222222-2222-2222-2222-222222222222> /usr/lib/libA.dylib\n"
    "\n"
    "Process:          App [42]\n"
    "Path:             /Applications/App.app/Contents/MacOS/App\n"
    "\n"
    "  Thread 0x20    DispatchQueue \"com.apple.main-thread\"(1)    9 samples (1-9)\n"
    "  9  main + 4 (main.c:7,2 in App + 16) [0x100000010] 1-9\n"
    "    9  <patched truncated backtrace> 1-9\n"
    "      5  g + 2 (libA.dylib + 2) [0x300001002] 1-5\n"
    "       *5  ??? (kernel + 32) [0xfffffe0000000020] 1-5\n"
    "      4  h (libB + 3) [0x300002003] (running) 6-9\n"
    "\n"
    "  Binary Images:\n"
    "           0x100000000 -                ???  App <33333333-3333-3333-3333-333333333333> "
    "/Applications/App.app/Contents/MacOS/App\n"
    "           0x300001000 -        0x300001fff  libA.dylib (1) "
    "<44444444-4444-4444-4444-444444444444> /usr/lib/libA.dylib\n"
    "           0x300002000 -        0x300002fff  com.example.B 2.0 (200) "
    "<55555555-5555-5555-5555-555555555555> /Library/B.framework/B\n"
    "   *0xfffffe0000000000 - 0xfffffe0000ffffff  kernel arm64e "
    "<66666666-6666-6666-6666-666666666666> /System/Library/Kernels/kernel\n"
    "\n"
    "Trailing: kept\n";

TEST(sample_spindump_processes_resolve_to_their_own_images)
{
    crash_report r;
    symd_err err;
    symd_status st = parse_buf(spin_two_procs, sizeof spin_two_procs - 1, &r, &err);
    CHECK(st == SYMD_OK, "%s", err.msg);
    if (st)
        return;
    check_shape("two processes", &r);
    CHECK(r.kind == CRASH_KIND_SPINDUMP && r.nwarnings == 0 && r.nprocesses == 2 &&
              r.nthreads == 3 && r.nimages == 6 && r.total_frames == 7,
          "kind %s warnings %zu processes %zu threads %zu images %zu frames %zu",
          crash_kind_name(r.kind), r.nwarnings, r.nprocesses, r.nthreads, r.nimages,
          r.total_frames);
    if (r.nthreads != 3 || r.nimages != 6)
        goto out;
    CHECK(r.threads[0].role == CRASH_THREAD_HEAVIEST && r.threads[0].process == 1 &&
              r.threads[0].frames[1].depth == 1 && r.threads[0].frames[0].image == 2,
          "the heaviest stack is the target's (PID 42)");
    const crash_thread *w = &r.threads[1];
    CHECK(w->process == 0 && w->name && strcmp(w->name, "worker") == 0 && w->count == 3 &&
              w->frames[0].image == 1,
          "process 0's libA.dylib");
    const crash_thread *m = &r.threads[2];
    CHECK(m->process == 1 && m->queue && strcmp(m->queue, "com.apple.main-thread") == 0 &&
              m->count == 9 && m->nframes == 4,
          "main thread");
    const crash_frame *f = &m->frames[0];
    CHECK(f->file && strcmp(f->file, "main.c") == 0 && f->line == 7 && f->symbol &&
              strcmp(f->symbol, "main") == 0 && f->symbol_offset == 4 && f->image == 2 &&
              f->has_load && f->load_address == 0x100000000,
          "main.c:7 in App");
    /* "<patched truncated backtrace>" is no frame: its children stand at depth 1 */
    CHECK(m->frames[1].depth == 1 && m->frames[1].image == 3 && m->frames[2].depth == 2 &&
              m->frames[2].image == 5 && m->frames[3].depth == 1 && m->frames[3].count == 4,
          "depths under a collapsed node");
    const crash_image *b = &r.images[4];
    CHECK(b->name && strcmp(b->name, "B") == 0 && b->bundle_id &&
              strcmp(b->bundle_id, "com.example.B") == 0 && b->version &&
              strcmp(b->version, "2.0 (200)") == 0 && m->frames[3].image == 4,
          "bundle id image; \"libB\" names no image, so 0x300002003 resolves by address (%ld)",
          m->frames[3].image);
    CHECK(r.images[2].is_app && !r.images[2].has_end && r.images[0].is_app &&
              !r.images[3].is_app,
          "app images by their process's path");
    CHECK(r.images[5].arch && strcmp(r.images[5].arch, "arm64e") == 0 &&
              strcmp(r.images[5].name, "kernel") == 0 && r.images[5].process == 1,
          "kernel image");
    CHECK(block_with(&r, CRASH_AT_END, "Trailing: kept") &&
              block_with(&r, CRASH_AT_THREAD, "Process:          Other [7]"),
          "kept text");
out:
    crash_report_free(&r);
}

TEST(sample_call_graph_glyphs_give_depth)
{
    static const char s[] =
        "Analysis of sampling App (pid 1) every 1 millisecond\n"
        "Process:         App [1]\n"
        "\n"
        "Call graph:\n"
        "    10 Thread_1   DispatchQueue_1: com.apple.main-thread  (serial)\n"
        "    + 10 start  (in libdyld.dylib) + 1  [0x1001]\n"
        "    +   7 main  (in App) + 2  [0x2002]  main.m:14\n"
        "    +   ! 7 f  (in App) + 3  [0x2003]\n"
        "    +   ! : 7 g  (in App) + 4  [0x2004]\n"
        "    +   3 ???  (in App)  load address 0x2000 + 0x5  [0x2005]\n"
        "    4 Thread_2: worker\n"
        "    + 4 h  (in App) + 6  [0x2006]\n"
        "\n"
        "Binary Images:\n"
        "    0x2000 - 0x2fff +App (1.0) <77777777-7777-7777-7777-777777777777> /App\n";
    crash_report r;
    symd_err err;
    symd_status st = parse_buf(s, sizeof s - 1, &r, &err);
    CHECK(st == SYMD_OK, "%s", err.msg);
    if (st)
        return;
    check_shape("glyphs", &r);
    CHECK(r.kind == CRASH_KIND_SAMPLE && r.nwarnings == 0 && r.nthreads == 2 &&
              r.threads[0].nframes == 5 && r.threads[1].nframes == 1,
          "threads %zu warnings %zu", r.nthreads, r.nwarnings);
    if (r.nthreads == 2 && r.threads[0].nframes == 5) {
        const crash_frame *f = r.threads[0].frames;
        CHECK(f[0].depth == 0 && f[1].depth == 1 && f[2].depth == 2 && f[3].depth == 3 &&
                  f[4].depth == 1 && f[4].count == 3,
              "depths");
        CHECK(f[1].file && strcmp(f[1].file, "main.m") == 0 && f[1].line == 14, "file:line");
        CHECK(f[4].has_load && f[4].load_address == 0x2000 && f[4].image == 0 &&
                  r.images[0].is_app,
              "load address form");
        CHECK(r.threads[1].name && strcmp(r.threads[1].name, "worker") == 0 &&
                  r.threads[1].count == 4 && r.threads[1].number == 1,
              "second thread");
    }
    crash_report_free(&r);
}

/* Builds "Call graph:" + one thread whose lines have the given columns. */
static char *tree_of_columns(const size_t *cols, size_t n, size_t *len)
{
    sbuf b = {0};
    sb_printf(&b, "Analysis of sampling App (pid 1) every 1 millisecond\nCall graph:\n"
                  "    1 Thread_1\n");
    for (size_t i = 0; i < n; i++)
        sb_printf(&b, "%*s1 f%zu  (in App) + 1  [0x%zx]\n", (int)cols[i], "", i, 0x1000 + i);
    *len = b.len;
    return b.s;
}

TEST(sample_tree_indentation_back_and_forth_is_warned)
{
    /* jumps by several levels, goes back to columns that match no level, left of the roots */
    static const size_t cols[] = {6, 8, 14, 10, 12, 7, 20, 3, 6, 5, 30, 8};
    size_t n = sizeof cols / sizeof cols[0], len;
    char *s = tree_of_columns(cols, n, &len);
    crash_report r;
    symd_err err;
    symd_status st = parse_buf(s, len, &r, &err);
    CHECK(st == SYMD_OK, "%s", err.msg);
    if (!st) {
        check_shape("back and forth", &r);
        CHECK(r.nthreads == 1 && r.threads[0].nframes == n, "every line is a frame");
        /* line 4 is the first frame; cols[2] = 14 jumps, cols[3] = 10 lies between
         * levels, cols[7] = 3 stands left of the roots */
        CHECK(has_warning(&r, "line 6", "jumps 6 columns") &&
                  has_warning(&r, "line 7", "(column 11) matches no enclosing level") &&
                  has_warning(&r, "line 11", "(column 4) matches no enclosing level"),
              "warned where");
        CHECK(r.threads[0].frames[3].depth == 2 && r.threads[0].frames[7].depth == 0 &&
                  r.threads[0].frames[9].depth == 1,
              "repaired depths");
        crash_report_free(&r);
    }
    free(s);

    /* 99,000 alternating lines: linear time, warnings counted past the cap */
    size_t big = 99000;
    size_t *many = malloc(big * sizeof *many);
    for (size_t i = 0; i < big; i++)
        many[i] = i % 2 ? 40 : 6 + (i % 7);
    s = tree_of_columns(many, big, &len);
    double t0 = now();
    st = parse_buf(s, len, &r, &err);
    double dt = now() - t0;
    CHECK(st == SYMD_OK, "%s", err.msg);
    CHECK(dt < 5.0, "99k back-and-forth lines took %.2f s", dt);
    if (!st) {
        check_shape("alternating", &r);
        CHECK(r.total_frames == big && r.nwarnings == CRASH_MAX_WARNINGS &&
                  r.nwarnings_dropped > 0,
              "frames %zu warnings %zu+%zu", r.total_frames, r.nwarnings, r.nwarnings_dropped);
        crash_report_free(&r);
    }
    free(s);
    free(many);
}

TEST(sample_tree_deeper_than_the_cap_is_cut_with_a_warning)
{
    /* A heaviest stack 100,000 levels deep (one line per level). */
    sbuf b = {0};
    sb_printf(&b, "Data Source:      Stackshots\n\nHeaviest stack for the target process:\n");
    for (size_t i = 0; i < 100000; i++)
        sb_printf(&b, "  1  f (App + %zu) [0x%zx]\n", i, 0x1000 + i);
    size_t len = b.len;
    char *s = b.s;
    crash_report r;
    symd_err err;
    double t0 = now();
    symd_status st = parse_buf(s, len, &r, &err);
    CHECK(st == SYMD_OK, "%s", err.msg);
    CHECK(now() - t0 < 5.0, "too slow");
    if (!st) {
        check_shape("deep chain", &r);
        CHECK(r.nthreads == 1 && r.total_frames == CRASH_MAX_DEPTH &&
                  r.threads[0].frames[CRASH_MAX_DEPTH - 1].depth == CRASH_MAX_DEPTH - 1,
              "frames %zu", r.total_frames);
        char want[80];
        snprintf(want, sizeof want, "%d deeper frames skipped", 100000 - CRASH_MAX_DEPTH);
        CHECK(r.nwarnings == 1 && has_warning(&r, "line 4100", want), "one warning: %s",
              r.nwarnings ? r.warnings[0].message : "none");
        crash_report_free(&r);
    }
    free(s);

    /* An indented tree 4,200 levels deep (one column per level), then a root
     * again: the deep part is cut, the root after it is kept. */
    size_t n = 4200;
    size_t *cols = malloc((n + 1) * sizeof *cols);
    for (size_t i = 0; i < n; i++)
        cols[i] = 6 + i;
    cols[n] = 6;
    s = tree_of_columns(cols, n + 1, &len);
    st = parse_buf(s, len, &r, &err);
    CHECK(st == SYMD_OK, "%s", err.msg);
    if (!st) {
        check_shape("deep tree", &r);
        const crash_thread *t = &r.threads[0];
        CHECK(t->nframes == CRASH_MAX_DEPTH + 1 && t->frames[t->nframes - 1].depth == 0 &&
                  has_warning(&r, NULL, "deeper than 4096 levels: 104 deeper frames skipped"),
              "frames %zu", t->nframes);
        crash_report_free(&r);
    }
    free(s);
    free(cols);
}

TEST(sample_ten_megabyte_line_is_too_large)
{
    size_t big = 10u << 20;
    char *s = malloc(big + 200);
    int k = sprintf(s, "Analysis of sampling App (pid 1)\nCall graph:\n    1 Thread_1\n      1 ");
    memset(s + k, 'x', big);
    size_t len = (size_t)k + big;
    crash_report r;
    symd_err err;
    symd_status st = parse_buf(s, len, &r, &err);
    CHECK(st == SYMD_E_TOO_LARGE && strstr(err.msg, "line 4"), "%d %s", st, err.msg);
    if (!st)
        crash_report_free(&r);
    /* the same as the text body of an .ips */
    static const char hdr[] = "{\"bug_type\":\"202\"}\nData Source:      Microstackshots\n";
    char *t = malloc(sizeof hdr + big);
    memcpy(t, hdr, sizeof hdr - 1);
    memset(t + sizeof hdr - 1, ' ', big);
    st = parse_buf(t, sizeof hdr - 1 + big, &r, &err);
    CHECK(st == SYMD_E_TOO_LARGE && strstr(err.msg, "line 3"), "%d %s", st, err.msg);
    if (!st)
        crash_report_free(&r);
    free(s);
    free(t);
}

TEST(sample_invalid_utf8_line_is_skipped_with_a_warning)
{
    static const char s[] = "Data Source:      Stackshots\n"
                            "\n"
                            "Process:          App [1]\n"
                            "  Thread 0x1    1 sample (1)\n"
                            "  1  a (App + 1) [0x1001] 1\n"
                            "    1  b \xff\xfe (App + 2) [0x1002] 1\n"
                            "    1  c (App + 3) [0x1003] 1\n"
                            "    1  d\0(App + 4) [0x1004] 1\n"
                            "\n"
                            "  Binary Images:\n"
                            "    0x1000 - 0x1fff  App <88888888-8888-8888-8888-888888888888> /App\n";
    crash_report r;
    symd_err err;
    symd_status st = parse_buf(s, sizeof s - 1, &r, &err);
    CHECK(st == SYMD_OK, "%s", err.msg);
    if (st)
        return;
    check_shape("utf8", &r);
    CHECK(r.total_frames == 2 && r.threads[0].frames[1].address == 0x1003 &&
              r.threads[0].frames[1].depth == 1 && r.threads[0].frames[1].image == 0,
          "the other frames are kept (%zu)", r.total_frames);
    CHECK(r.nwarnings == 2 && has_warning(&r, "line 6", "invalid UTF-8 at column 10") &&
              has_warning(&r, "line 8", "NUL byte at column 9"),
          "warned where");
    crash_report_free(&r);
}

TEST(sample_detection_leaves_crash_reports_alone)
{
    /* A .crash with a "Process:" header and thread sections stays a crash. */
    static const char s[] = "Process:         App [1]\n"
                            "Identifier:      com.example.app\n"
                            "Code Type:       ARM-64\n"
                            "\n"
                            "Thread 0 Crashed:\n"
                            "0   App   0x0000000100001000 main + 4\n"
                            "\n"
                            "Binary Images:\n"
                            "0x100000000 - 0x100003fff App arm64 "
                            "<99999999999999999999999999999999> /App\n";
    crash_report r;
    symd_err err;
    symd_status st = parse_buf(s, sizeof s - 1, &r, &err);
    CHECK(st == SYMD_OK && r.kind == CRASH_KIND_CRASH && r.total_frames == 1, "%s", err.msg);
    if (!st)
        crash_report_free(&r);
    /* A header with no tree at all is still read, with a warning. */
    static const char h[] = "Data Source:      Stackshots\nCommand:          App\n";
    st = parse_buf(h, sizeof h - 1, &r, &err);
    CHECK(st == SYMD_OK && r.kind == CRASH_KIND_SPINDUMP && r.nthreads == 0 &&
              has_warning(&r, "line 1", "no call tree") && r.process &&
              strcmp(r.process, "App") == 0,
          "%s", err.msg);
    if (!st)
        crash_report_free(&r);
}

TEST(sample_image_lines_full_of_angle_brackets_take_linear_time)
{
    /* 100 image lines of 64 KB, each " <" 30,000 times before one '>': a UUID
     * search that restarts at every '<' would scan 10^11 bytes. */
    sbuf b = {0};
    sb_printf(&b, "Analysis of sampling App (pid 1)\nCall graph:\n    1 Thread_1\n"
                  "      1 f  (in App) + 1  [0x1001]\n\nBinary Images:\n");
    for (int i = 0; i < 100; i++) {
        sb_printf(&b, "    0x%x - 0x%x App", 0x1000 + i * 0x1000, 0x1fff + i * 0x1000);
        for (int k = 0; k < 30000; k++)
            sb_printf(&b, " <");
        sb_printf(&b, " > /App\n");
    }
    crash_report r;
    symd_err err;
    double t0 = now();
    symd_status st = parse_buf(b.s, b.len, &r, &err);
    double dt = now() - t0;
    CHECK(st == SYMD_OK && dt < 5.0, "%s, %.2f s", err.msg, dt);
    if (!st) {
        CHECK(r.nimages == 100 && !r.images[0].has_uuid && r.threads[0].frames[0].image == 0,
              "images %zu", r.nimages);
        crash_report_free(&r);
    }
    free(b.s);
}

/* parser/crash.c: text .crash and .ips reports into the crash model. */
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "../parser/crash.h"
#include "../util/hex.h"
#include "test.h"

/* ---- helpers ---------------------------------------------------------------- */

static const char *real_dir(void)
{
    const char *d = real_crashes_dir();
    return d ? d : "../shared/real-crashes";
}

static symd_status parse_str(const char *s, crash_report *r, symd_err *err)
{
    symd_err_clear(err);
    return crash_parse((const uint8_t *)s, strlen(s), r, err);
}

/* A 4xx answer: the report's fault, not ours. */
static bool is_input_error(symd_status st)
{
    return st == SYMD_E_CORRUPT || st == SYMD_E_TOO_LARGE || st == SYMD_E_NOT_CRASH_REPORT;
}

/* Thread and frame counts of a text report, counted the simple way: thread
 * headers "Thread N:" / "Thread N Crashed:", and lines "N  image ... 0x..."
 * until the blank line that ends the thread. */
static void count_text(const char *s, size_t *threads, size_t *frames)
{
    regex_t th, fr;
    regcomp(&th, "^Thread [0-9]+( Crashed)?::?", REG_EXTENDED | REG_NOSUB);
    regcomp(&fr, "^[0-9]+[ \t]+[^ \t].*0x[0-9a-fA-F]+", REG_EXTENDED | REG_NOSUB);
    *threads = *frames = 0;
    bool in = false;
    char line[70000];
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        if (n >= sizeof line)
            n = sizeof line - 1;
        memcpy(line, s, n);
        line[n] = 0;
        if (n && line[n - 1] == '\r')
            line[n - 1] = 0;
        if (!line[strspn(line, " \t")])
            in = false;
        else if (regexec(&th, line, 0, NULL, 0) == 0) {
            (*threads)++;
            in = true;
        } else if (in && regexec(&fr, line, 0, NULL, 0) == 0)
            (*frames)++;
        s = nl ? nl + 1 : s + strlen(s);
    }
    regfree(&th);
    regfree(&fr);
}

/* The same for any report: JSON bodies are counted with jansson. */
static void count_report(const char *s, size_t *threads, size_t *frames)
{
    if (s[0] == '{') {
        const char *nl = strchr(s, '\n');
        const char *b = nl ? nl + 1 : "";
        while (*b == ' ' || *b == '\n' || *b == '\r' || *b == '\t')
            b++;
        if (*b == '{') {
            json_error_t je;
            json_t *root = json_loads(b, 0, &je);
            json_t *th = json_object_get(root, "threads");
            *threads = json_array_size(th);
            *frames = 0;
            for (size_t i = 0; i < *threads; i++)
                *frames += json_array_size(json_object_get(json_array_get(th, i), "frames"));
            json_decref(root);
            return;
        }
        s = b;
    }
    count_text(s, threads, frames);
}

static bool uuid_is(const crash_image *im, const char *u)
{
    uint8_t want[16];
    return im->has_uuid && uuid_parse(u, want) && memcmp(im->uuid, want, 16) == 0;
}

/* ---- the real reports ---------------------------------------------------------- */

static const struct {
    const char *file, *process, *exception_type;
    long crashed;
    size_t thread, frame; /* a known frame */
    uint64_t address, load;
    const char *symbol;
    uint64_t symbol_offset;
    size_t image;
    const char *uuid, *image_name;
} known[] = {
    {"kscrash-Abort.crash", "Crash-Tester", "EXC_CRASH (SIGABRT)", 0, 0, 2, 0x668a8, 0x5f000,
     "-[Crasher doAbort]", 8, 0, "5425b875d1423832be8c3b7dd8130813", "Crash-Tester"},
    {"kscrash-BadPointer.crash", "Crash-Tester", "EXC_BAD_ACCESS (SIGSEGV)", 0, 0, 0, 0x5b720,
     0x54000, "-[Crasher dereferenceBadPointer]", 24, 0, NULL, "Crash-Tester"},
    {"kscrash-NSException.crash", "Crash-Tester", "EXC_CRASH (SIGABRT)", 0, 0, 1, 0x35099c5d,
     0x35095000, "objc_exception_throw", 25, 1, NULL, "MobileSubstrate.dylib"},
    {"kscrash-StackOverflow.crash", "Crash-Tester", "EXC_BAD_ACCESS (SIGSEGV)", 0, 1, 0, 0, 0,
     NULL, 0, 0, NULL, NULL},
    {"kscrash-Zombie.crash", "Crash-Tester", NULL, 0, 1, 0, 0, 0, NULL, 0, 0, NULL, NULL},
    {"ios14-abort-bugtype109.ips", "itunescloudd", "EXC_CRASH (SIGABRT)", 7, 0, 0, 0x1c3df54fc,
     0x1c3df1000, NULL, 0, 0, "ca63a72de9ee3ba2835b50ddda3fb008", "itunescloudd"},
    {"ios14-symbolicated-bugtype109.ips", "kaki", "EXC_CRASH (SIGABRT)", 0, 0, 4, 0x100081a1c, 0,
     "main", 108, 0, "5fd6c4ca55493855959fbe077158c67a", "kaki"},
    {"ipados15-amongus.ips", "AmongUs", "EXC_CRASH", 0, 0, 0, 7437008896ull + 8952, 7437008896ull,
     "kevent", 8, 0, "28a82cbd-b210-3662-af9e-636819d8909a", "libsystem_kernel.dylib"},
};

static void check_known(const char *name, const crash_report *r)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(known[i].file, name) != 0)
            continue;
        CHECK(r->process && strcmp(r->process, known[i].process) == 0, "%s: process %s", name,
              r->process);
        CHECK(!known[i].exception_type ||
                  (r->exception_type && strcmp(r->exception_type, known[i].exception_type) == 0),
              "%s: exception %s", name, r->exception_type);
        CHECK(r->crashed_thread == known[i].crashed, "%s: crashed thread %ld", name,
              r->crashed_thread);
        CHECK(r->crashed_thread >= 0 && r->threads[r->crashed_thread].crashed, "%s: crashed flag",
              name);
        if (!known[i].address)
            return;
        if (known[i].thread >= r->nthreads || known[i].frame >= r->threads[known[i].thread].nframes) {
            CHECK(false, "%s: no frame %zu.%zu", name, known[i].thread, known[i].frame);
            return;
        }
        const crash_frame *f = &r->threads[known[i].thread].frames[known[i].frame];
        CHECK(f->address == known[i].address, "%s: frame address %#" PRIx64, name, f->address);
        CHECK(!known[i].load || (f->has_load && f->load_address == known[i].load),
              "%s: frame load %#" PRIx64, name, f->load_address);
        CHECK(!known[i].symbol || (f->symbol && strcmp(f->symbol, known[i].symbol) == 0 &&
                                   f->has_symbol_offset &&
                                   f->symbol_offset == known[i].symbol_offset),
              "%s: frame symbol %s + %" PRIu64, name, f->symbol, f->symbol_offset);
        CHECK(f->image >= 0 && (size_t)f->image < r->nimages, "%s: frame image %ld", name,
              f->image);
        CHECK(known[i].image < r->nimages && r->images[known[i].image].name &&
                  strcmp(r->images[known[i].image].name, known[i].image_name) == 0,
              "%s: image name", name);
        CHECK(!known[i].uuid || uuid_is(&r->images[known[i].image], known[i].uuid),
              "%s: image uuid", name);
        return;
    }
}

/* Calls fn(name, buf, len) for every report in the real-crashes directory;
 * false (and a printed note) when the directory is absent. */
static bool each_real(void (*fn)(const char *, uint8_t *, size_t))
{
    DIR *d = real_crashes_dir() ? opendir(real_dir()) : NULL;
    if (!d) {
        test_skip("../shared/real-crashes is absent: real crash reports not tested");
        return false;
    }
    struct dirent *de;
    size_t n = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (!(l > 6 && strcmp(de->d_name + l - 6, ".crash") == 0) &&
            !(l > 4 && strcmp(de->d_name + l - 4, ".ips") == 0))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", real_dir(), de->d_name);
        size_t len;
        uint8_t *buf = read_file(path, &len);
        CHECK(buf, "cannot read %s", path);
        if (buf)
            fn(de->d_name, buf, len);
        free(buf);
        n++;
    }
    closedir(d);
    CHECK(n >= 8, "only %zu reports in %s", n, real_dir());
    return true;
}

static void real_one(const char *name, uint8_t *buf, size_t len)
{
    crash_report r;
    symd_err err;
    symd_err_clear(&err);
    symd_status st = crash_parse(buf, len, &r, &err);
    CHECK(st == SYMD_OK, "%s: %s", name, err.msg);
    if (st)
        return;
    size_t want_t, want_f;
    count_report((const char *)buf, &want_t, &want_f);
    printf("  %-36s threads %zu/%zu frames %zu/%zu images %zu registers %zu\n", name, r.nthreads,
           want_t, r.total_frames, want_f, r.nimages, r.nregisters);
    size_t sum = 0;
    for (size_t i = 0; i < r.nthreads; i++)
        sum += r.threads[i].nframes;
    CHECK(r.nthreads == want_t && want_t > 0, "%s: %zu threads, the file has %zu", name,
          r.nthreads, want_t);
    CHECK(r.total_frames == want_f && sum == want_f, "%s: %zu frames, the file has %zu", name,
          r.total_frames, want_f);
    CHECK(r.nimages > 0 && r.nregisters > 0, "%s: images and registers", name);
    bool ips = buf[0] == '{';
    CHECK(r.format == (ips ? CRASH_FORMAT_IPS : CRASH_FORMAT_CRASH), "%s: format", name);
    CHECK(!ips == !r.header_json, "%s: header_json", name);
    CHECK(r.bug_type == (ips ? (strstr(name, "309") || strstr(name, "ipados") ? 309 : 109) : 0),
          "%s: bug_type %d", name, r.bug_type);
    CHECK((r.bug_type == 309) == !r.text_header, "%s: text_header", name);
    if (r.text_header)
        CHECK(strstr(r.text_header, "Incident Identifier:") && !strstr(r.text_header, "\nThread 0"),
              "%s: text_header holds the header only", name);
    for (size_t i = 0; i < r.nthreads; i++)
        for (size_t k = 0; k < r.threads[i].nframes; k++)
            CHECK(r.threads[i].frames[k].image >= 0, "%s: thread %zu frame %zu has no image",
                  name, i, k);
    check_known(name, &r);
    crash_report_free(&r);
}

TEST(crash_real_reports_parse_with_every_thread_and_frame)
{
    each_real(real_one);
}

/* Every prefix ending at a line boundary: OK or the report's fault; then
 * bit flips anywhere. Run under ASan by `make SANITIZE=address,undefined test`. */
static void truncate_and_flip(const char *name, uint8_t *buf, size_t len)
{
    crash_report r;
    symd_err err;
    size_t ok = 0, bad = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i != len && buf[i] != '\n')
            continue;
        uint8_t *copy = malloc(i + 1); /* exact size: ASan sees overreads */
        memcpy(copy, buf, i);
        symd_err_clear(&err);
        symd_status st = crash_parse(copy, i, &r, &err);
        CHECK(st == SYMD_OK || is_input_error(st), "%s cut at %zu: %d %s", name, i, st, err.msg);
        st == SYMD_OK ? ok++ : bad++;
        crash_report_free(&r);
        free(copy);
    }
    uint32_t seed = 12345;
    for (int k = 0; k < 300; k++) {
        uint8_t *copy = malloc(len);
        memcpy(copy, buf, len);
        for (int f = 0; f < 1 + k % 4; f++) {
            seed = seed * 1103515245u + 12345u;
            copy[(seed >> 8) % len] ^= (uint8_t)(1u << (seed >> 28 & 7));
        }
        symd_err_clear(&err);
        symd_status st = crash_parse(copy, len, &r, &err);
        CHECK(st == SYMD_OK || is_input_error(st), "%s flip %d: %d %s", name, k, st, err.msg);
        crash_report_free(&r);
        free(copy);
    }
    printf("  %-36s line cuts: %zu OK, %zu refused\n", name, ok, bad);
}

TEST(crash_truncated_and_flipped_reports_are_refused_or_parsed)
{
    each_real(truncate_and_flip);
}

/* ---- generated reports, one per form of the contract ---------------------------- */

TEST(crash_macos_text_report)
{
    const char *rep =
        "Process:               Foo [1234]\r\n"
        "Path:                  /Applications/Foo.app/Contents/MacOS/Foo\r\n"
        "Identifier:            com.foo.App\r\n"
        "Version:               1.0 (1)\r\n"
        "Code Type:             X86-64 (Native)\r\n"
        "OS Version:            Mac OS X 10.15.7 (19H2)\r\n"
        "Report Version:        12\r\n"
        "\r\n"
        "Exception Type:        EXC_BAD_ACCESS (SIGSEGV)\r\n"
        "Exception Codes:       KERN_INVALID_ADDRESS at 0x0000000000000000\r\n"
        "Termination Reason:    Namespace SIGNAL, Code 0xb\r\n"
        "Triggered by Thread:   1\r\n"
        "\r\n"
        "Application Specific Information:\r\n"
        "something odd\r\n"
        "\r\n\r\n"
        "Thread 0:: Dispatch queue: com.apple.main-thread\r\n"
        "0   libsystem_kernel.dylib        \t0x00007fff6b0b4dfa mach_msg_trap + 10\r\n"
        "1   ?\?\?                           \t0x0000000000000000 0 + 0\r\n"
        "\r\n"
        "Thread 1 Crashed:: Worker\r\n"
        "0\tcom.foo.App\t0x000000010e8c7a1c -[Foo bar:] + 28 (Foo.m:42)\r\n"
        "1   com.foo.App                   0x000000010e8c7b00 closure #1 in Foo.run() + 12 (Foo.swift:7)\r\n"
        "2   Google Chrome Framework       0x000000010e8c7c00 0x10e8c6000 + 7168\r\n"
        "3   libdyld.dylib                 0x00007fff6af6dcc9 start + 1\r\n"
        "\r\n"
        "Thread 1 crashed with X86 Thread State (64-bit):\r\n"
        "  rax: 0x0000000000000000  rbx: 0x00007ffee1339a38  rcx: 0x0000000000000001\r\n"
        "  rip: 0x000000010e8c7a1c  rfl: 0x0000000000010246  cr2: 0x0000000000000000\r\n"
        "  \r\n"
        "Logical CPU:     2\r\n"
        "\r\n"
        "Binary Images:\r\n"
        "       0x10e8c6000 -        0x10e8c9fff +com.foo.App (1.0 - 1) <3E2C7AB4-1F3C-3D8B-A4C4-AB2E2C4C4B9F> /Applications/Foo.app/Contents/MacOS/Foo\r\n"
        "    0x7fff6b0b3000 -     0x7fff6b0e0fff  libsystem_kernel.dylib (6153.141.2) <8E1A5D5B-1F2C-3C3E-8A8B-2C3D4E5F6A7B> /usr/lib/system/libsystem_kernel.dylib\r\n"
        "    0x7fff6af6b000 -     0x7fff6af6cfff  libdyld.dylib (750.6) <AAAAAAAA-1F2C-3C3E-8A8B-2C3D4E5F6A7B> /usr/lib/system/libdyld.dylib\r\n"
        "               0x0 - 0xffffffffffffffff  ?\?\? (?\?\?) <00000000-0000-0000-0000-000000000000> ?\?\?\r\n"
        "\r\n"
        "External Modification Summary:\r\n"
        "  Calls made by other processes targeting this process:\r\n";
    crash_report r;
    symd_err err;
    CHECK(parse_str(rep, &r, &err) == SYMD_OK, "parse: %s", err.msg);
    if (err.kind)
        return;
    CHECK(r.format == CRASH_FORMAT_CRASH && !r.header_json && r.bug_type == 0, "format");
    CHECK(strcmp(r.process, "Foo") == 0 && strcmp(r.bundle_id, "com.foo.App") == 0 &&
              strcmp(r.app_version, "1.0 (1)") == 0 && strcmp(r.report_version, "12") == 0,
          "header fields");
    CHECK(strcmp(r.exception_signal, "SIGSEGV") == 0 &&
              strcmp(r.termination, "Namespace SIGNAL, Code 0xb") == 0,
          "exception");
    CHECK(r.nthreads == 2 && r.crashed_thread == 1 && r.threads[1].crashed &&
              !r.threads[0].crashed && r.total_frames == 6,
          "threads %zu crashed %ld", r.nthreads, r.crashed_thread);
    CHECK(strstr(r.text_header, "Application Specific Information:\r\nsomething odd") &&
              !strstr(r.text_header, "Thread 0"),
          "text_header verbatim");
    if (r.nthreads == 2 && r.threads[0].nframes == 2 && r.threads[1].nframes == 4) {
        CHECK(strcmp(r.threads[0].queue, "com.apple.main-thread") == 0 && !r.threads[0].name,
              "queue");
        CHECK(strcmp(r.threads[1].name, "Worker") == 0, "name");
        crash_frame *f = r.threads[1].frames;
        CHECK(f[0].address == 0x10e8c7a1c && strcmp(f[0].symbol, "-[Foo bar:]") == 0 &&
                  f[0].symbol_offset == 28 && strcmp(f[0].file, "Foo.m") == 0 && f[0].line == 42 &&
                  f[0].image == 0 && !f[0].has_load,
              "tab-separated frame with file:line: %s %s", f[0].symbol, f[0].file);
        CHECK(strcmp(f[1].symbol, "closure #1 in Foo.run()") == 0 && f[1].symbol_offset == 12 &&
                  strcmp(f[1].file, "Foo.swift") == 0 && f[1].line == 7,
              "swift frame: %s", f[1].symbol);
        CHECK(strcmp(f[2].image_name, "Google Chrome Framework") == 0 && f[2].has_load &&
                  f[2].load_address == 0x10e8c6000 && !f[2].symbol && f[2].image == 0,
              "image name with spaces, matched by address: %ld", f[2].image);
        CHECK(f[3].image == 2 && f[3].symbol_offset == 1, "libdyld");
        crash_frame *g = r.threads[0].frames;
        CHECK(strcmp(g[1].image_name, "?\?\?") == 0 && g[1].address == 0 && g[1].has_load &&
                  g[1].load_address == 0,
              "?\?\? frame");
        CHECK(g[0].image == 1, "by name");
    }
    CHECK(r.nimages == 4, "images %zu", r.nimages);
    if (r.nimages == 4) {
        crash_image *im = r.images;
        CHECK(im[0].is_app && strcmp(im[0].name, "com.foo.App") == 0 &&
                  strcmp(im[0].bundle_id, "com.foo.App") == 0 &&
                  strcmp(im[0].version, "1.0 - 1") == 0 && !im[0].arch &&
                  uuid_is(&im[0], "3E2C7AB4-1F3C-3D8B-A4C4-AB2E2C4C4B9F") &&
                  im[0].end_address == 0x10e8c9fff &&
                  strcmp(im[0].path, "/Applications/Foo.app/Contents/MacOS/Foo") == 0,
              "app image");
        CHECK(!im[1].is_app && strcmp(im[1].name, "libsystem_kernel.dylib") == 0 &&
                  !im[1].bundle_id && strcmp(im[1].version, "6153.141.2") == 0,
              "dylib image");
        CHECK(strcmp(im[3].name, "?\?\?") == 0 && strcmp(im[3].version, "?\?\?") == 0 &&
                  strcmp(im[3].path, "?\?\?") == 0 && im[3].end_address == UINT64_MAX,
              "?\?\? image");
    }
    CHECK(r.nregisters == 6 && strcmp(r.registers[0].name, "rax") == 0 &&
              strcmp(r.registers[3].name, "rip") == 0 &&
              strcmp(r.registers[3].value, "0x000000010e8c7a1c") == 0,
          "x86 registers %zu", r.nregisters);
    crash_report_free(&r);
}

TEST(crash_ios_text_with_json_header_and_old_forms)
{
    const char *rep =
        "{\"app_name\":\"MyApp\",\"bug_type\":\"109\",\"os_version\":\"iPhone OS 14.8\"}\n"
        "Incident Identifier: 13917FF0-E1B1-4652-84C2-85516D101DFE\n"
        "Hardware Model:      iPhone11,8\n"
        "Process:             MyApp [692]\n"
        "Path:                /var/containers/Bundle/Application/X/MyApp.app/MyApp\n"
        "Report Version:      104\n"
        "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n"
        "Crashed Thread:  2\n"
        "\n"
        "Last Exception Backtrace:\n"
        "0   CoreFoundation                	0x1a6f1e5ac __exceptionPreprocess + 220\n"
        "\n"
        "Thread 0 name:  Dispatch queue: com.apple.main-thread\n"
        "Thread 0:\n"
        "0   libsystem_kernel.dylib        \t0x00000001c3df54fc 0x1c3df1000 + 17660\n"
        "\n"
        "Thread 1 name:  worker\n"
        "Thread 1:\n"
        "\n"
        "Thread 2:\n"
        "0   MyApp                         0x1000e4a10 0x1000e4000 + 2576 (main + 16)\n"
        "1   MyApp                         0x1000e4b10 -[A b] + 4 (A.m:9)\n"
        "2   UnknownLib                    0x00001234 0x00001000 + 564\n"
        "\n"
        "Thread 2 crashed with ARM Thread State (64-bit):\n"
        "    x0: 0x0000000000000001   x1: 0x0000000000000002\n"
        "    fp: 0x000000016f6768e0   lr: 0x00000001e18a1a9c\n"
        "   far: 0x0000000000000000  esr: 0x92000006 (Data Abort) byte read Translation fault\n"
        "\n"
        "Binary Images:\n"
        "0x1000e4000 - 0x1000effff MyApp arm64  <6c9a0f8b2d1e3f4a5b6c7d8e9f0a1b2c> /var/containers/Bundle/Application/X/MyApp.app/MyApp\n"
        "0x1c3df1000 - 0x1c3e2ffff libsystem_kernel.dylib arm64e  /usr/lib/system/libsystem_kernel.dylib\n"
        "\n"
        "EOF\n";
    crash_report r;
    symd_err err;
    CHECK(parse_str(rep, &r, &err) == SYMD_OK, "parse: %s", err.msg);
    if (err.kind)
        return;
    CHECK(r.format == CRASH_FORMAT_IPS && r.bug_type == 109 && r.header_json &&
              r.header_json[0] == '{' && !strchr(r.header_json, '\n'),
          "json header");
    CHECK(r.text_header && strncmp(r.text_header, "Incident Identifier:", 20) == 0 &&
              !strstr(r.text_header, "Last Exception Backtrace:"),
          "text header ends before the exception backtrace");
    /* The Last Exception Backtrace is a section of its own, before the
     * threads, and no thread: the crashed thread's index moves past it. */
    CHECK(r.nthreads == 4 && r.threads[0].role == CRASH_THREAD_LAST_EXCEPTION &&
              r.threads[0].number == -1 && r.threads[0].nframes == 1 &&
              r.threads[0].frames[0].address == 0x1a6f1e5ac &&
              strcmp(r.threads[0].frames[0].symbol, "__exceptionPreprocess") == 0,
          "last exception backtrace");
    CHECK(strcmp(r.process, "MyApp") == 0 && strcmp(r.hardware_model, "iPhone11,8") == 0,
          "header");
    CHECK(r.nthreads == 4 && r.total_frames == 5 && r.crashed_thread == 3 &&
              r.threads[3].crashed && r.threads[3].number == 2,
          "threads %zu frames %zu crashed %ld", r.nthreads, r.total_frames, r.crashed_thread);
    if (r.nthreads == 4 && r.threads[3].nframes == 3) {
        CHECK(strcmp(r.threads[1].queue, "com.apple.main-thread") == 0, "queue");
        CHECK(strcmp(r.threads[2].name, "worker") == 0 && r.threads[2].nframes == 0, "name");
        crash_frame *f = r.threads[3].frames;
        CHECK(f[0].has_load && f[0].load_address == 0x1000e4000 && strcmp(f[0].symbol, "main") == 0 &&
                  f[0].symbol_offset == 16 && f[0].image == 0,
              "kscrash form");
        CHECK(strcmp(f[1].symbol, "-[A b]") == 0 && f[1].line == 9, "file:line");
        CHECK(f[2].image == -1 && f[2].address == 0x1234, "32-bit frame of no image");
        CHECK(r.threads[1].frames[0].image == 1, "by name");
    }
    CHECK(r.nimages == 2 && r.images[0].is_app && strcmp(r.images[0].arch, "arm64") == 0 &&
              uuid_is(&r.images[0], "6c9a0f8b2d1e3f4a5b6c7d8e9f0a1b2c") && !r.images[1].has_uuid &&
              strcmp(r.images[1].path, "/usr/lib/system/libsystem_kernel.dylib") == 0 &&
              strcmp(r.images[1].arch, "arm64e") == 0,
          "images");
    CHECK(r.nregisters == 6 && strcmp(r.registers[5].name, "esr") == 0 &&
              strcmp(r.registers[5].value, "0x92000006") == 0,
          "registers %zu", r.nregisters);
    crash_report_free(&r);
}

static const char *ips_body =
    "{\"bug_type\":\"309\",\"name\":\"App\"}\n"
    "{\n"
    "  \"procName\" : \"App\", \"procPath\" : \"/p/App\", \"modelCode\" : \"iPhone14,2\",\n"
    "  \"cpuType\" : \"ARM-64\", \"incident\" : \"ABC\", \"captureTime\" : \"2024-01-01\",\n"
    "  \"osVersion\" : {\"train\" : \"iPhone OS 17.2\", \"build\" : \"21C62\"},\n"
    "  \"bundleInfo\" : {\"CFBundleIdentifier\" : \"com.x.App\", \"CFBundleShortVersionString\" : \"2.0\", \"CFBundleVersion\" : \"7\"},\n"
    "  \"exception\" : {\"type\" : \"EXC_BAD_ACCESS\", \"signal\" : \"SIGSEGV\", \"rawCodes\" : [1, 16]},\n"
    "  \"termination\" : {\"namespace\" : \"SIGNAL\", \"code\" : 11, \"indicator\" : \"Segmentation fault: 11\"},\n"
    "  \"faultingThread\" : 1,\n"
    "  \"usedImages\" : [\n"
    "    {\"base\" : 4294967296, \"size\" : 16384, \"uuid\" : \"6c9a0f8b-2d1e-3f4a-5b6c-7d8e9f0a1b2c\", \"name\" : \"App\", \"path\" : \"/p/App\", \"arch\" : \"arm64\", \"CFBundleIdentifier\" : \"com.x.App\"},\n"
    "    {\"base\" : 0, \"size\" : 0, \"source\" : \"A\"}\n"
    "  ],\n"
    "  \"threads\" : [\n"
    "    {\"id\" : 1, \"queue\" : \"com.apple.main-thread\", \"frames\" : [{\"imageIndex\" : 1, \"imageOffset\" : 7}]},\n"
    "    {\"id\" : 2, \"name\" : \"w\", \"triggered\" : true,\n"
    "     \"threadState\" : {\"flavor\" : \"ARM_THREAD_STATE64\", \"x\" : [{\"value\" : 1}, {\"value\" : 2}], \"pc\" : {\"value\" : 4294967396}, \"lr\" : {\"value\" : 5}},\n"
    "     \"frames\" : [{\"imageIndex\" : 0, \"imageOffset\" : 100, \"symbol\" : \"main\", \"symbolLocation\" : 4, \"sourceFile\" : \"m.c\", \"sourceLine\" : 3}]}\n"
    "  ]\n"
    "}\n";

TEST(crash_ips_json_body)
{
    crash_report r;
    symd_err err;
    CHECK(parse_str(ips_body, &r, &err) == SYMD_OK, "parse: %s", err.msg);
    if (err.kind)
        return;
    CHECK(r.format == CRASH_FORMAT_IPS && r.bug_type == 309 && !r.text_header, "format");
    CHECK(strcmp(r.process, "App") == 0 && strcmp(r.hardware_model, "iPhone14,2") == 0 &&
              strcmp(r.os_version, "iPhone OS 17.2 (21C62)") == 0 &&
              strcmp(r.app_version, "2.0 (7)") == 0 && strcmp(r.bundle_id, "com.x.App") == 0,
          "fields");
    CHECK(strcmp(r.exception_codes, "0x0000000000000001, 0x0000000000000010") == 0,
          "codes from rawCodes: %s", r.exception_codes);
    CHECK(strcmp(r.termination, "Namespace SIGNAL, Code 0xb Segmentation fault: 11") == 0,
          "termination: %s", r.termination);
    CHECK(r.crashed_thread == 1 && r.nthreads == 2 && r.total_frames == 2, "threads");
    if (r.nthreads == 2 && r.threads[1].nframes == 1) {
        crash_frame *f = &r.threads[1].frames[0];
        CHECK(f->address == 4294967396 && f->image == 0 && f->has_load &&
                  f->load_address == 4294967296 && strcmp(f->symbol, "main") == 0 &&
                  f->symbol_offset == 4 && strcmp(f->file, "m.c") == 0 && f->line == 3 &&
                  strcmp(f->image_name, "App") == 0,
              "frame");
        CHECK(r.threads[0].frames[0].address == 7 && !r.threads[0].frames[0].image_name,
              "frame of a nameless image");
        CHECK(strcmp(r.threads[1].name, "w") == 0 && r.threads[1].number == 1, "thread");
    }
    CHECK(r.nimages == 2 && r.images[0].is_app && r.images[0].has_end &&
              r.images[0].end_address == 4294967296 + 16383 && !r.images[1].has_end &&
              !r.images[1].has_uuid && uuid_is(&r.images[0], "6c9a0f8b2d1e3f4a5b6c7d8e9f0a1b2c"),
          "images");
    CHECK(r.nregisters == 4 && strcmp(r.registers[1].name, "x1") == 0 &&
              strcmp(r.registers[2].name, "lr") == 0 && strcmp(r.registers[3].name, "pc") == 0 &&
              strcmp(r.registers[3].value, "0x0000000100000064") == 0,
          "registers %zu", r.nregisters);
    crash_report_free(&r);
}

/* ---- hostile reports --------------------------------------------------------------- */

static void expect_fail(const char *what, const char *rep, size_t len, symd_status want,
                        const char *msg)
{
    crash_report r;
    symd_err err;
    symd_err_clear(&err);
    symd_status st = crash_parse((const uint8_t *)rep, len, &r, &err);
    CHECK(st == want, "%s: got %d (%s), want %d", what, st, err.msg, want);
    CHECK(!msg || strstr(err.msg, msg), "%s: message \"%s\" lacks \"%s\"", what, err.msg, msg);
    CHECK(r.nthreads == 0 && !r.threads && !r.images, "%s: nothing kept", what);
    crash_report_free(&r);
}

static void expect_fail_s(const char *what, const char *rep, symd_status want, const char *msg)
{
    expect_fail(what, rep, strlen(rep), want, msg);
}

static char *with_ips(const char *frames_and_images)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "{\"bug_type\":\"309\"}\n{%s}", frames_and_images);
    return buf;
}

/* A report with a broken part is kept: the part is skipped (or kept as text)
 * and a warning says where and why; frames are what remains readable. */
static void expect_warn(const char *what, const char *rep, size_t len, const char *where,
                        const char *msg, size_t frames)
{
    crash_report r;
    symd_err err;
    symd_err_clear(&err);
    symd_status st = crash_parse((const uint8_t *)rep, len, &r, &err);
    CHECK(st == SYMD_OK, "%s: refused: %s", what, err.msg);
    if (st != SYMD_OK)
        return;
    const crash_warning *w = NULL;
    for (size_t i = 0; i < r.nwarnings && !w; i++)
        if (strcmp(r.warnings[i].where, where) == 0 && strstr(r.warnings[i].message, msg))
            w = &r.warnings[i];
    CHECK(w, "%s: no warning at %s with \"%s\" (%zu warnings, first %s: %s)", what, where, msg,
          r.nwarnings, r.nwarnings ? r.warnings[0].where : "-",
          r.nwarnings ? r.warnings[0].message : "-");
    CHECK(r.total_frames == frames, "%s: %zu frames, want %zu", what, r.total_frames, frames);
    crash_report_free(&r);
}

static void expect_warn_s(const char *what, const char *rep, const char *where, const char *msg,
                          size_t frames)
{
    expect_warn(what, rep, strlen(rep), where, msg, frames);
}

/* Refused only when no report at all (415) or past a limit (413); every
 * other damage is a warning on a report that is kept. */
TEST(crash_hostile_reports_warn_or_refuse)
{
    const char *T = "Process: x [1]\nThread 0:\n";
    expect_fail_s("empty", "", SYMD_E_NOT_CRASH_REPORT, NULL);
    expect_fail_s("binary", "\x7f" "ELF\x02\x01", SYMD_E_NOT_CRASH_REPORT, "not a crash report");
    expect_fail_s("backtrace JSON", "{\"threads\":[]}\n", SYMD_E_NOT_CRASH_REPORT, NULL);
    expect_warn_s("header only", "{\"bug_type\":\"309\"}\n", "line 2", "no body", 0);
    expect_warn_s("no threads", "Process: x [1]\nVersion: 1\n", "report", "no thread", 0);
    expect_warn_s("298 without processes", "{\"bug_type\":\"298\"}\n{\"a\":1}", "body",
                  "no threads, processByPid", 0);

    /* 10 MB on one line, as a text report and as an .ips header. */
    size_t big = 10u << 20;
    char *b = malloc(big + 1);
    memset(b, 'A', big);
    memcpy(b, "Process: ", 9);
    b[big] = 0;
    expect_fail("10 MB line", b, big, SYMD_E_TOO_LARGE, "line 1: longer than");
    /* A JSON first line has no line limit (the body is bounded by --max-json
     * and the parse by the memory budget): read, and refused as no .ips. */
    memcpy(b, "{\"bug_type\":\"", 13);
    expect_fail("10 MB header", b, big, SYMD_E_NOT_CRASH_REPORT, "no bug_type");
    free(b);

    /* 100k threads, text and JSON. */
    size_t cap = 100000 * 40 + 100, n = 0;
    b = malloc(cap);
    n += (size_t)snprintf(b + n, cap - n, "Process: x [1]\n");
    for (int i = 0; i < 100000; i++)
        n += (size_t)snprintf(b + n, cap - n, "Thread %d:\n0 a 0x1\n\n", i);
    expect_fail("100k text threads", b, n, SYMD_E_TOO_LARGE, "more than 4096 threads");
    n = (size_t)snprintf(b, cap, "{\"bug_type\":\"309\"}\n{\"usedImages\":[],\"threads\":[");
    for (int i = 0; i < 100000; i++)
        n += (size_t)snprintf(b + n, cap - n, "%s{}", i ? "," : "");
    n += (size_t)snprintf(b + n, cap - n, "]}");
    expect_fail("100k ips threads", b, n, SYMD_E_TOO_LARGE, "threads");
    free(b);

    /* Text frame lines: each broken line is kept as text, with a warning. */
    char buf[512];
    snprintf(buf, sizeof buf, "%s99999999999999999999 a 0x1\n1 a 0x2\n", T);
    expect_warn_s("frame number", buf, "line 3", "frame number out of range", 1);
    snprintf(buf, sizeof buf, "%s0 a nothing\n1 a 0x2\n", T);
    expect_warn_s("no address", buf, "line 3", "no address", 1);
    snprintf(buf, sizeof buf, "%s0 a 0x11112222333344445\n", T);
    expect_warn_s("wide address", buf, "line 3", "wider than 64 bits", 0);
    snprintf(buf, sizeof buf, "%s0 a 0x1 0x1 + 99999999999999999999\n", T);
    expect_warn_s("offset", buf, "line 3", "offset is out of range", 0);
    snprintf(buf, sizeof buf, "%s0 a 0x1 f\xc3\x28 + 1\n1 a 0x2\n", T);
    expect_warn_s("bad UTF-8", buf, "line 3", "invalid UTF-8 at column 10", 1);
    expect_warn("NUL", "Process: x\0y\nThread 0:\n0 a 0x1\n", 32, "line 1", "NUL byte", 1);
    snprintf(buf, sizeof buf, "%s0 a 0x1\n\nBinary Images:\n0x2000 - 0x1000 a arm64 <x> /a\n", T);
    expect_warn_s("image backwards", buf, "line 6", "image ends before", 1);
    snprintf(buf, sizeof buf, "%s0 a 0x1\n\nBinary Images:\n0x1000 - 0x2000 a arm64 <1234> /a\n",
             T);
    expect_warn_s("bad uuid", buf, "line 6", "bad image UUID", 1);
    snprintf(buf, sizeof buf, "%s0 a 0x1\n\nBinary Images:\n0x1000 - 0x2000 a 1) /a\n", T);
    expect_warn_s("unbalanced version", buf, "line 6", "parentheses", 1);

    /* .ips JSON bodies (the value-by-value warnings are in test_crash_ips.c). */
    expect_warn_s("imageIndex past usedImages",
                  with_ips("\"usedImages\":[{\"base\":1}],\"threads\":[{\"frames\":[{\"imageIndex\":0,"
                           "\"imageOffset\":0},{\"imageIndex\":1,\"imageOffset\":0}]}]"),
                  "threads[0].frames[1].imageIndex", "past usedImages (1)", 1);
    expect_warn_s("bad UTF-8 in JSON", with_ips("\"threads\":[{\"name\":\"\xff\"}]"), "line 2",
                  "does not parse", 0);
    expect_warn_s("broken body", "{\"bug_type\":\"309\"}\n{\n\"threads\":[}", "line 3",
                  "does not parse", 0);
}

/* ---- fuzz regressions -------------------------------------------------------------- */

static void replay_crash(const char *rel, const uint8_t *buf, size_t len)
{
    crash_report r;
    symd_err err;
    symd_err_clear(&err);
    symd_status st = crash_parse(buf, len, &r, &err);
    CHECK(st == SYMD_OK || is_input_error(st), "%s: %d %s", rel, st, err.msg);
    /* what the fuzzers hold of a model: its places lie inside the input */
    for (size_t i = 0; st == SYMD_OK && i < r.nthreads; i++) {
        const crash_thread *t = &r.threads[i];
        CHECK(!t->has_list || (t->list_off < t->list_end && t->list_end <= len),
              "%s: thread %zu's address list [%zu, %zu) of %zu bytes", rel, i, t->list_off,
              t->list_end, len);
        for (size_t k = 0; k < t->nframes; k++) {
            const crash_frame *f = &t->frames[k];
            CHECK(f->src == CRASH_SRC_NONE ||
                      (f->line_off <= f->desc_off && f->desc_off <= f->desc_end &&
                       f->desc_end <= f->line_end && f->line_end <= len),
                  "%s: frame %zu of thread %zu stands outside the input", rel, k, i);
        }
    }
    crash_report_free(&r);
}

/* Inputs the fuzzers once crashed on (fuzz/regress/crash-*) stay fixed. */
TEST(crash_fuzz_regressions)
{
    CHECK(each_regression("crash-", replay_crash) >= 0, "fuzz/regress missing");
}

/* An image name may hold '<': the UUID is the "<...>" that holds one. */
TEST(crash_image_name_with_angle_brackets)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/bigapp-twin.crash", &len);
    if (!buf)
        return;
    const char *from = " bigapp-arm64 arm64  <4c4c";
    char *at = strstr((char *)buf, from);
    CHECK(at, "the twin's Binary Images line");
    if (!at) {
        free(buf);
        return;
    }
    /* "<b>evil</b>" in place of "bigapp-arm64" (one byte shorter: pad). */
    const char *name = " <b>evil</b> ";
    size_t old = strlen(" bigapp-arm64 "), nl = strlen(name);
    char *copy = malloc(len + 16);
    size_t pre = (size_t)(at - (char *)buf);
    memcpy(copy, buf, pre);
    memcpy(copy + pre, name, nl);
    memcpy(copy + pre + nl, at + old, len - pre - old + 1);
    crash_report r;
    symd_err err;
    symd_status st = parse_str(copy, &r, &err);
    CHECK(st == SYMD_OK, "parses: %s", err.msg);
    if (st == SYMD_OK) {
        const crash_image *im = NULL;
        for (size_t i = 0; i < r.nimages; i++)
            if (r.images[i].name && strcmp(r.images[i].name, "<b>evil</b>") == 0)
                im = &r.images[i];
        CHECK(im && uuid_is(im, "4C4C4490-5555-3144-A17C-64A339EDE13A"),
              "the image keeps its name and UUID");
        crash_report_free(&r);
    }
    /* A line whose only "<...>" is no UUID keeps its image without one,
     * and says so. */
    char *bad = strstr(copy, "<4c4c4490");
    if (bad)
        memcpy(bad + 1, "zz", 2);
    st = parse_str(copy, &r, &err);
    CHECK(st == SYMD_OK, "no UUID: %s", err.msg);
    if (st == SYMD_OK) {
        bool warned = false, kept = false;
        for (size_t i = 0; i < r.nwarnings; i++)
            warned |= strstr(r.warnings[i].message, "bad image UUID") != NULL;
        for (size_t i = 0; i < r.nimages; i++)
            kept |= r.images[i].name && strcmp(r.images[i].name, "<b>evil</b>") == 0 &&
                    !r.images[i].has_uuid;
        CHECK(warned && kept, "no UUID: warned %d, image kept without it %d", warned, kept);
        crash_report_free(&r);
    }
    free(copy);
    free(buf);
}

/* iOS 11's frames with hexadecimal offsets and the symbol as a comment:
 * "0x189699354 0x189622000 + 0x77354\t// -[CUICatalog ...] + 0x824". */
TEST(crash_hex_offsets_and_comment_symbols)
{
    const char *rep = "Incident Identifier: X\nProcess: MobileSMS [3093]\n\nThread 0 Crashed:\n"
                      "0       CoreUI                        \t0x189699354 0x189622000 + 0x77354\t"
                      "// -[CUICatalog _namedLookupWithName:] + 0x824\n"
                      "1       UIKit                         \t0x18c2f29f0 0x18b625000 + 0xccd9f0\t"
                      "// -[UIImageAsset imageWithTraitCollection:] + 0x1dc\n";
    crash_report r;
    symd_err err;
    CHECK(parse_str(rep, &r, &err) == SYMD_OK && r.nwarnings == 0, "parse: %s", err.msg);
    if (err.kind)
        return;
    CHECK(r.nthreads == 1 && r.threads[0].nframes == 2, "frames");
    if (r.nthreads == 1 && r.threads[0].nframes == 2) {
        const crash_frame *f = r.threads[0].frames;
        CHECK(f[0].address == 0x189699354 && f[0].has_load && f[0].load_address == 0x189622000 &&
                  f[0].symbol && strcmp(f[0].symbol, "-[CUICatalog _namedLookupWithName:]") == 0 &&
                  f[0].has_symbol_offset && f[0].symbol_offset == 0x824,
              "frame 0: %s + %llu", f[0].symbol ? f[0].symbol : "(none)",
              (unsigned long long)f[0].symbol_offset);
        CHECK(f[1].symbol_offset == 0x1dc && f[1].load_address == 0x18b625000, "frame 1");
    }
    crash_report_free(&r);
}

/* Binary Images of macOS 10.15 that place an image at "0 - 0xffff...":
 * that image is kept without a UUID, and the images after it too. */
TEST(crash_image_at_zero_keeps_the_images_after_it)
{
    const char *rep =
        "Process:               dfu_host [1]\n\nThread 0 Crashed:\n"
        "0   dyld                          \t0x0000000112b41000 0x112b40000 + 4096\n\n"
        "Binary Images:\n"
        "                 0 - 0xffffffffffffffff  com.example.SmartHubService (?\?\?) /Volumes/x/Service\n"
        "       0x112b40000 -        0x112bd1eff  dyld (750.5) <E4698FBD-806A-3396-B279-E685BA37430B> /usr/lib/dyld\n";
    crash_report r;
    symd_err err;
    CHECK(parse_str(rep, &r, &err) == SYMD_OK && r.nwarnings == 0, "parse: %s", err.msg);
    if (err.kind)
        return;
    CHECK(r.nimages == 2 && r.images[0].load_address == 0 && !r.images[0].has_uuid &&
              strcmp(r.images[1].name, "dyld") == 0 &&
              uuid_is(&r.images[1], "E4698FBD-806A-3396-B279-E685BA37430B") &&
              r.threads[0].frames[0].image == 1,
          "%zu images", r.nimages);
    crash_report_free(&r);
}

/* A few lines of a call graph pasted alone, as `sample` and spindump print
 * them: a fragment, every node a frame, as written. */
TEST(crash_pasted_call_graph_lines_are_a_fragment)
{
    static const char *const reps[] = {
        "    + !     2189 ???  (in Electron Framework)  load address 0x1052bd000 + 0x3f8e36  [0x1056b5e36]\n"
        "    + !       2189 ???  (in Electron Framework)  load address 0x1052bd000 + 0x3f9d3d  [0x1056b6d3d]\n"
        "    +       2193 ???  (in libnode.dylib)  load address 0x1096d6000 + 0x157763  [0x10982d763]\n",
        "  11 ?\?\? (libdyld.dylib + 4032) [0x1839a9fc0]\n"
        "    11 ?\?\? (MapMyRun + 1630896) [0x1044ae2b0]\n",
    };
    static const size_t frames[] = {3, 2};
    for (size_t i = 0; i < sizeof reps / sizeof reps[0]; i++) {
        crash_report r;
        symd_err err;
        CHECK(parse_str(reps[i], &r, &err) == SYMD_OK, "paste %zu: %s", i, err.msg);
        if (err.kind)
            continue;
        CHECK(r.kind == CRASH_KIND_FRAGMENT && r.total_frames == frames[i] && r.nwarnings == 0 &&
                  r.threads[0].is_tree && r.threads[0].frames[1].depth == 1,
              "paste %zu: kind %s, %zu frames", i, crash_kind_name(r.kind), r.total_frames);
        crash_report_free(&r);
    }
}

/* The .ips header's slice_uuid is the main binary's UUID, for a body whose
 * Binary Images line of the app has none (microstackshot reports). */
TEST(crash_slice_uuid_names_the_app_image)
{
    const char *rep =
        "{\"app_name\":\"MapMyRun\",\"slice_uuid\":\"A7173537-ED4B-3677-9893-4C882D0EB93A\","
        "\"bug_type\":\"206\",\"name\":\"MapMyRun\"}\n"
        "Command:         MapMyRun\n"
        "Data Source:     Microstackshots\n\n"
        "Powerstats for:  MapMyRun [2489]\n"
        "  11 ?\?\? (MapMyRun + 1630896) [0x1044ae2b0]\n\n"
        "Binary Images:\n"
        "         0x104320000 -                ?\?\?  com.mapmyfitness.MapMyRun 18.8.5 (1809212128)  /var/MapMyRun.app/MapMyRun\n";
    crash_report r;
    symd_err err;
    CHECK(parse_str(rep, &r, &err) == SYMD_OK, "parse: %s", err.msg);
    if (err.kind)
        return;
    CHECK(r.nimages == 1 && uuid_is(&r.images[0], "A7173537-ED4B-3677-9893-4C882D0EB93A"),
          "app image UUID");
    crash_report_free(&r);
}

/* A jailbroken device's "Binary Images (dpkg):" lines end in the package's
 * JSON: the path stops before it, the package's identifier and version are
 * the image's (faisalmemon/ios-crash-dump-analysis-book, the MobileSMS
 * security-violation report of ../shared/real-reports). */
TEST(crash_text_dpkg_image_lines)
{
    const char *dir = real_reports_dir();
    if (!dir) {
        test_skip("no ../shared/real-reports");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path,
             "%s/faisalmemon+ios-crash-dump-analysis-book+examples_security_violation_ios_mobile_"
             "sms_security_ios.crash",
             dir);
    size_t len;
    uint8_t *buf = read_file(path, &len);
    if (!buf) {
        test_skip("no MobileSMS report");
        return;
    }
    crash_report r;
    symd_err err = {0};
    CHECK(crash_parse(buf, len, &r, &err) == SYMD_OK, "parse: %s", err.msg);
    const crash_image *tw = NULL;
    size_t braces = 0;
    for (size_t i = 0; i < r.nimages; i++) {
        if (r.images[i].name && !strcmp(r.images[i].name, "TweakInject.dylib"))
            tw = &r.images[i];
        braces += r.images[i].path && strchr(r.images[i].path, '{');
    }
    CHECK(tw && tw->path && !strcmp(tw->path, "/usr/lib/TweakInject.dylib") && tw->bundle_id &&
              !strcmp(tw->bundle_id, "org.coolstar.tweakinject") && tw->version &&
              !strcmp(tw->version, "1.0.6"),
          "TweakInject: path %s, id %s, version %s", tw && tw->path ? tw->path : "-",
          tw && tw->bundle_id ? tw->bundle_id : "-", tw && tw->version ? tw->version : "-");
    CHECK(braces == 0, "%zu image paths hold the package JSON", braces);
    crash_report_free(&r);
    free(buf);
}

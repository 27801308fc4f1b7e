/* server/crashtext.c: crash reports as text. Two paths:
 *   - reports read from JSON are written from the model: those models are
 *     built here by hand from literals copied out of the real reports under
 *     ../shared/real-crashes (the parser is not used for them);
 *   - reports read from text are their input with symbolicated frames
 *     rewritten: every real text report renders back byte for byte, and
 *     frames of each line style are rewritten as their tool prints them. */
#include <stdlib.h>
#include <string.h>

#include "../server/crashsym.h"
#include "../util/util.h"
#include "test.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define S(x) ((char *)(x))

typedef struct {
    const char *image;
    uint64_t pc, load; /* load 0: no "0xLOAD + off" */
    const char *sym;   /* NULL: none */
    uint64_t off;
} lit_frame;

static crash_frame *mk_frames(const lit_frame *lf, size_t n)
{
    crash_frame *f = calloc(n ? n : 1, sizeof *f);
    for (size_t i = 0; i < n; i++) {
        f[i].address = lf[i].pc;
        f[i].image = -1;
        f[i].image_name = S(lf[i].image);
        f[i].has_load = lf[i].load != 0;
        f[i].load_address = lf[i].load;
        f[i].symbol = S(lf[i].sym);
        f[i].has_symbol_offset = lf[i].sym != NULL;
        f[i].symbol_offset = lf[i].off;
    }
    return f;
}

static void mk_thread(crash_thread *t, long number, const char *name, const char *queue,
                      bool crashed, const lit_frame *lf, size_t n)
{
    memset(t, 0, sizeof *t);
    t->number = number;
    t->name = S(name);
    t->queue = S(queue);
    t->crashed = crashed;
    t->frames = mk_frames(lf, n);
    t->nframes = n;
}

static void mk_image(crash_image *im, const char *name, const char *arch, const char *uuid,
                     uint64_t load, uint64_t end, const char *path, bool is_app)
{
    memset(im, 0, sizeof *im);
    im->name = S(name);
    im->arch = S(arch);
    im->path = S(path);
    im->load_address = load;
    im->has_end = true;
    im->end_address = end;
    im->is_app = is_app;
    if (uuid)
        for (int i = 0; i < 16; i++) {
            unsigned v;
            sscanf(uuid + 2 * i, "%2x", &v);
            im->uuid[i] = (uint8_t)v;
            im->has_uuid = true;
        }
}

static void finish(crash_report *r)
{
    r->total_frames = 0;
    for (size_t t = 0; t < r->nthreads; t++)
        r->total_frames += r->threads[t].nframes;
}

static void free_report(crash_report *r)
{
    for (size_t t = 0; t < r->nthreads; t++)
        free(r->threads[t].frames);
}

static char *render(const crash_report *r, const crash_symbolication *s, size_t limit,
                    symd_status *st, symd_err *err)
{
    dynbuf b;
    dynbuf_init(&b, limit);
    symd_err_clear(err);
    *st = crash_render_text(r, s, NULL, 0, &b, err);
    if (*st != SYMD_OK) {
        dynbuf_free(&b);
        return NULL;
    }
    if (!b.data)
        dynbuf_add(&b, "", 0);
    return (char *)dynbuf_take(&b, NULL);
}

/* The line of text that starts with prefix (a whole line, no '\n'), or NULL. */
static char *find_line(const char *text, const char *prefix, char *buf, size_t cap)
{
    size_t pl = strlen(prefix);
    for (const char *p = text; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n >= pl && memcmp(p, prefix, pl) == 0 && n < cap) {
            memcpy(buf, p, n);
            buf[n] = 0;
            return buf;
        }
        p = e ? e + 1 : NULL;
    }
    return NULL;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool valid_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        size_t k = utf8_seq_len(p, end);
        if (!k)
            return false;
        p += k;
    }
    return true;
}

/* ---- kscrash-Abort.crash: iOS 4, ARMv7, 32-bit, "(symbol + off)" frames ---- */

static const lit_frame ks_thread0[] = {
    {"libsystem_kernel.dylib", 0x3618da1c, 0x3617c000, "__pthread_kill", 8},
    {"libsystem_c.dylib", 0x3625cbf8, 0x36231000, "abort", 72},
    {"Crash-Tester", 0x000668a8, 0x5f000, "-[Crasher doAbort]", 8},
    {"Crash-Tester", 0x00065628, 0x5f000, "__32-[AppDelegate(UI) crashCommands]_block_invoke375", 68},
    {"Crash-Tester", 0x00065d50, 0x5f000, "-[CommandEntry executeWithViewController:]", 52},
    {"Crash-Tester", 0x00066400, 0x5f000, "-[CommandTVC tableView:didSelectRowAtIndexPath:]", 188},
    {"UIKit", 0x31634518, 0x315e0000, "-[UITableView _selectRowAtIndexPath:animated:scrollPosition:notifyDelegate:]", 660},
    {"UIKit", 0x316980e8, 0x315e0000, "-[UITableView _userSelectRowAtPendingSelectionIndexPath:]", 128},
    {"Foundation", 0x34e366d0, 0x34db1000, "__NSFireDelayedPerform", 364},
    {"CoreFoundation", 0x31555a40, 0x314e0000, "__CFRUNLOOP_IS_CALLING_OUT_TO_A_TIMER_CALLBACK_FUNCTION__", 8},
    {"CoreFoundation", 0x31557ec8, 0x314e0000, "__CFRunLoopDoTimer", 848},
    {"CoreFoundation", 0x31558840, 0x314e0000, "__CFRunLoopRun", 1084},
    {"CoreFoundation", 0x314e8ec0, 0x314e0000, "CFRunLoopRunSpecific", 228},
    {"CoreFoundation", 0x314e8dc8, 0x314e0000, "CFRunLoopRunInMode", 56},
    {"GraphicsServices", 0x30e67418, 0x30e63000, "GSEventRunModal", 108},
    {"GraphicsServices", 0x30e674c8, 0x30e63000, "GSEventRun", 60},
    {"UIKit", 0x3160ed68, 0x315e0000, "-[UIApplication _run]", 404},
    {"UIKit", 0x3160c800, 0x315e0000, "UIApplicationMain", 664},
    {"Crash-Tester", 0x000607b8, 0x5f000, "main", 164},
};
static const lit_frame ks_thread1[] = {
    {"libsystem_kernel.dylib", 0x3618e3ec, 0x3617c000, "__workq_kernreturn", 8},
};

/* The source lines, copied verbatim from kscrash-Abort.crash (lines 21-39, 42). */
static const char *const ks_source[] = {
    "0   libsystem_kernel.dylib          0x3618da1c 0x3617c000 + 72220 (__pthread_kill + 8)",
    "1   libsystem_c.dylib               0x3625cbf8 0x36231000 + 179192 (abort + 72)",
    "2   Crash-Tester                    0x000668a8 0x5f000 + 30888 (-[Crasher doAbort] + 8)",
    "3   Crash-Tester                    0x00065628 0x5f000 + 26152 (__32-[AppDelegate(UI) crashCommands]_block_invoke375 + 68)",
    "4   Crash-Tester                    0x00065d50 0x5f000 + 27984 (-[CommandEntry executeWithViewController:] + 52)",
    "5   Crash-Tester                    0x00066400 0x5f000 + 29696 (-[CommandTVC tableView:didSelectRowAtIndexPath:] + 188)",
    "6   UIKit                           0x31634518 0x315e0000 + 345368 (-[UITableView _selectRowAtIndexPath:animated:scrollPosition:notifyDelegate:] + 660)",
    "7   UIKit                           0x316980e8 0x315e0000 + 753896 (-[UITableView _userSelectRowAtPendingSelectionIndexPath:] + 128)",
    "8   Foundation                      0x34e366d0 0x34db1000 + 546512 (__NSFireDelayedPerform + 364)",
    "9   CoreFoundation                  0x31555a40 0x314e0000 + 481856 (__CFRUNLOOP_IS_CALLING_OUT_TO_A_TIMER_CALLBACK_FUNCTION__ + 8)",
    "10  CoreFoundation                  0x31557ec8 0x314e0000 + 491208 (__CFRunLoopDoTimer + 848)",
    "11  CoreFoundation                  0x31558840 0x314e0000 + 493632 (__CFRunLoopRun + 1084)",
    "12  CoreFoundation                  0x314e8ec0 0x314e0000 + 36544 (CFRunLoopRunSpecific + 228)",
    "13  CoreFoundation                  0x314e8dc8 0x314e0000 + 36296 (CFRunLoopRunInMode + 56)",
    "14  GraphicsServices                0x30e67418 0x30e63000 + 17432 (GSEventRunModal + 108)",
    "15  GraphicsServices                0x30e674c8 0x30e63000 + 17608 (GSEventRun + 60)",
    "16  UIKit                           0x3160ed68 0x315e0000 + 191848 (-[UIApplication _run] + 404)",
    "17  UIKit                           0x3160c800 0x315e0000 + 182272 (UIApplicationMain + 664)",
    "18  Crash-Tester                    0x000607b8 0x5f000 + 6072 (main + 164)",
    "0   libsystem_kernel.dylib          0x3618e3ec 0x3617c000 + 74732 (__workq_kernreturn + 8)",
};

static void kscrash_report(crash_report *r, crash_thread th[2], crash_image im[2],
                           crash_kv *regs, size_t nregs)
{
    memset(r, 0, sizeof *r);
    r->format = CRASH_FORMAT_CRASH;
    r->code_type = S("ARM");
    r->crashed_thread = 0;
    mk_thread(&th[0], 0, NULL, "apple.main-thread", true, ks_thread0, N(ks_thread0));
    mk_thread(&th[1], 1, NULL, NULL, false, ks_thread1, N(ks_thread1));
    r->threads = th;
    r->nthreads = 2;
    mk_image(&im[0], "Crash-Tester", "armv7", "5425b875d1423832be8c3b7dd8130813", 0x5f000, 0xa3fff,
             "/var/mobile/Applications/B19FDF7E-768B-42D9-88E7-80F757E22883/Crash-Tester.app/Crash-Tester",
             true);
    mk_image(&im[1], "UIKit", "armv7", "c271b78464d93cb7bf28c6e49df293ba", 0x315e0000, 0x3196dfff,
             "/System/Library/Frameworks/UIKit.framework/UIKit", false);
    r->images = im;
    r->nimages = 2;
    r->registers = regs;
    r->nregisters = nregs;
    finish(r);
}

/* When the real file is there, the literals above must be its lines. */
static void check_literals_against_file(const char *path, const char *const *lines, size_t n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return; /* not on this machine: the literals stand on their own */
    static char buf[1 << 17];
    size_t len = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[len] = 0;
    for (size_t i = 0; i < n; i++) {
        char *hit = strstr(buf, lines[i]);
        CHECK(hit && (hit == buf || hit[-1] == '\n') && (hit[strlen(lines[i])] == '\n'),
              "%s: no line \"%s\"", path, lines[i]);
    }
}

/* The model of kscrash-Abort.crash written from its fields: the header the
 * layout synthesizes, then every frame as the report gave it. */
TEST(crashtext_unsymbolicated_kscrash_keeps_every_frame)
{
    char ks_path[600];
    snprintf(ks_path, sizeof ks_path, "%s/kscrash-Abort.crash",
             real_crashes_dir() ? real_crashes_dir() : "/nonexistent");
    check_literals_against_file(ks_path, ks_source,
                                N(ks_source));
    static crash_kv regs[] = {
        {S("r0"), S("0x00000000")}, {S("r1"), S("0x00000000")}, {S("r2"), S("0x00000001")},
        {S("r3"), S("0x00000000")}, {S("r4"), S("0x3f92c48c")}, {S("r5"), S("0x00000006")},
        {S("r6"), S("0x000a9da8")}, {S("r7"), S("0x2fe5c7d8")}, {S("r8"), S("0x35097c89")},
        {S("r9"), S("0x00000000")}, {S("r10"), S("0x000a9d94")}, {S("r11"), S("0x35097c89")},
        {S("ip"), S("0x00000148")}, {S("sp"), S("0x2fe5c7cc")}, {S("lr"), S("0x362643bb")},
        {S("pc"), S("0x3618da1c")}, {S("cpsr"), S("0x00000010")},
    };
    crash_report r;
    crash_thread th[2];
    crash_image im[2];
    kscrash_report(&r, th, im, regs, N(regs));
    symd_status st;
    symd_err err;
    for (int with_s = 0; with_s < 2; with_s++) {
        /* A symbolication that knows nothing (every image missing, no levels)
         * renders exactly like none. */
        crash_symframe sf[N(ks_thread0) + N(ks_thread1)];
        memset(sf, 0, sizeof sf);
        for (size_t i = 0; i < N(sf); i++)
            sf[i].status = CSYM_MISSING_IMAGE;
        crash_symbolication s = {.frames = sf};
        char *txt = render(&r, with_s ? &s : NULL, 1 << 20, &st, &err);
        CHECK(st == SYMD_OK && txt, "render: %s", err.msg);
        if (!txt)
            continue;
        CHECK(starts_with(txt, "Path:                /var/mobile/Applications/B19FDF7E-768B-"
                               "42D9-88E7-80F757E22883/Crash-Tester.app/Crash-Tester\n"
                               "Code Type:           ARM\n\nReport Version:      104\n\n"
                               "Triggered by Thread:  0\n\nThread 0 name:"),
              "synthesized header: %.200s", txt);
        CHECK(strstr(txt, "\n\nThread 0 name:  Dispatch queue: apple.main-thread\n"
                          "Thread 0 Crashed:\n0   libsystem_kernel.dylib        \t0x3618da1c ") != NULL,
              "thread 0 header: %s", txt);
        CHECK(strstr(txt, "\n\nThread 1:\n0   ") != NULL, "thread 1 header");
        const char *p = strstr(txt, "Thread 0 Crashed:\n");
        for (size_t i = 0; p && i < N(ks_source); i++) {
            if (i == N(ks_thread0))
                p = strstr(p, "Thread 1:\n");
            p = strchr(p, '\n') + 1;
            const char *e = strchr(p, '\n');
            char line[512];
            snprintf(line, sizeof line, "%.*s", (int)(e - p), p);
            const char *src = ks_source[i];
            /* Same number and image... */
            char num[8], img[64], snum[8], simg[64];
            CHECK(sscanf(line, "%7s %63s", num, img) == 2 && sscanf(src, "%7s %63s", snum, simg) == 2 &&
                      !strcmp(num, snum) && !strcmp(img, simg),
                  "frame %zu: %s", i, line);
            /* ...the tab-separated Apple columns... */
            CHECK(line[34] == '\t' && line[35] == '0' && line[36] == 'x', "columns: %s", line);
            /* ...and from the address on, the source line exactly. */
            const char *sa = strstr(src, " 0x") + 1;
            CHECK(strcmp(line + 35, sa) == 0, "frame %zu:\n  got  %s\n  want %s", i, line + 35, sa);
            p = e;
        }
        char buf[256];
        CHECK(find_line(txt, "Thread 0 crashed with ARM Thread State:", buf, sizeof buf) &&
                  !strcmp(buf, "Thread 0 crashed with ARM Thread State:"),
              "state title");
        /* Copied from the report: 4 registers a line, a trailing space after each. */
        CHECK(strstr(txt, "Thread 0 crashed with ARM Thread State:\n"
                          "    r0: 0x00000000     r1: 0x00000000     r2: 0x00000001     r3: 0x00000000 \n"
                          "    r4: 0x3f92c48c     r5: 0x00000006     r6: 0x000a9da8     r7: 0x2fe5c7d8 \n"
                          "    r8: 0x35097c89     r9: 0x00000000    r10: 0x000a9d94    r11: 0x35097c89 \n"
                          "    ip: 0x00000148     sp: 0x2fe5c7cc     lr: 0x362643bb     pc: 0x3618da1c \n"
                          "  cpsr: 0x00000010 \n\n"
                          "Binary Images:\n") != NULL,
              "thread state: %s", txt);
        /* Images: iOS's 32-bit layout, without KSCrash's '+' (see crashtext.c). */
        CHECK(strstr(txt, "Binary Images:\n"
                          "   0x5f000 -    0xa3fff Crash-Tester armv7  <5425b875d1423832be8c3b7dd8130813> "
                          "/var/mobile/Applications/B19FDF7E-768B-42D9-88E7-80F757E22883/Crash-Tester.app/Crash-Tester\n"
                          "0x315e0000 - 0x3196dfff UIKit armv7  <c271b78464d93cb7bf28c6e49df293ba> "
                          "/System/Library/Frameworks/UIKit.framework/UIKit\n") != NULL,
              "images: %s", txt);
        CHECK(valid_utf8(txt, strlen(txt)), "utf-8");
        free(txt);
    }
    free_report(&r);
}

/* ---- ios14-abort-bugtype109.ips: iOS 14 arm64 text body, "Triggered by Thread:" ---- */

static const lit_frame i14_thread7[] = {
    {"libsystem_kernel.dylib", 0x00000001c3e1a334, 0x1c3df1000, NULL, 0},
    {"libsystem_pthread.dylib", 0x00000001e18a1a9c, 0x1e189f000, NULL, 0},
    {"libsystem_c.dylib", 0x000000019efa5b84, 0x19ef2e000, NULL, 0},
    {"libc++abi.dylib", 0x00000001aa817bb8, 0x1aa804000, NULL, 0},
    {"libc++abi.dylib", 0x00000001aa808ec8, 0x1aa804000, NULL, 0},
    {"libobjc.A.dylib", 0x00000001aa71505c, 0x1aa70e000, NULL, 0},
    {"libc++abi.dylib", 0x00000001aa816fa0, 0x1aa804000, NULL, 0},
    {"libc++abi.dylib", 0x00000001aa816f2c, 0x1aa804000, NULL, 0},
    {"libdispatch.dylib", 0x00000001957cb830, 0x1957c7000, NULL, 0},
    {"libdispatch.dylib", 0x00000001957cecf4, 0x1957c7000, NULL, 0},
    {"libdispatch.dylib", 0x00000001957ce384, 0x1957c7000, NULL, 0},
    {"libdispatch.dylib", 0x00000001957dcfe0, 0x1957c7000, NULL, 0},
    {"libdispatch.dylib", 0x00000001957dd7d8, 0x1957c7000, NULL, 0},
    {"libsystem_pthread.dylib", 0x00000001e18a2768, 0x1e189f000, NULL, 0},
    {"libsystem_pthread.dylib", 0x00000001e18a974c, 0x1e189f000, NULL, 0},
};
static const lit_frame i14_thread8[] = {
    {"libsystem_pthread.dylib", 0x00000001e18a9744, 0x1e189f000, NULL, 0},
};

/* ios14-abort-bugtype109.ips lines 69-104 minus 91 images, verbatim. */
static const char i14_body[] =
    "Thread 7 name:  Dispatch queue: com.apple.iTunesCloud.ICURLSession.operation\n"
    "Thread 7 Crashed:\n"
    "0   libsystem_kernel.dylib        \t0x00000001c3e1a334 0x1c3df1000 + 168756\n"
    "1   libsystem_pthread.dylib       \t0x00000001e18a1a9c 0x1e189f000 + 10908\n"
    "2   libsystem_c.dylib             \t0x000000019efa5b84 0x19ef2e000 + 490372\n"
    "3   libc++abi.dylib               \t0x00000001aa817bb8 0x1aa804000 + 80824\n"
    "4   libc++abi.dylib               \t0x00000001aa808ec8 0x1aa804000 + 20168\n"
    "5   libobjc.A.dylib               \t0x00000001aa71505c 0x1aa70e000 + 28764\n"
    "6   libc++abi.dylib               \t0x00000001aa816fa0 0x1aa804000 + 77728\n"
    "7   libc++abi.dylib               \t0x00000001aa816f2c 0x1aa804000 + 77612\n"
    "8   libdispatch.dylib             \t0x00000001957cb830 0x1957c7000 + 18480\n"
    "9   libdispatch.dylib             \t0x00000001957cecf4 0x1957c7000 + 31988\n"
    "10  libdispatch.dylib             \t0x00000001957ce384 0x1957c7000 + 29572\n"
    "11  libdispatch.dylib             \t0x00000001957dcfe0 0x1957c7000 + 90080\n"
    "12  libdispatch.dylib             \t0x00000001957dd7d8 0x1957c7000 + 92120\n"
    "13  libsystem_pthread.dylib       \t0x00000001e18a2768 0x1e189f000 + 14184\n"
    "14  libsystem_pthread.dylib       \t0x00000001e18a974c 0x1e189f000 + 42828\n"
    "\n"
    "Thread 8:\n"
    "0   libsystem_pthread.dylib       \t0x00000001e18a9744 0x1e189f000 + 42820\n"
    "\n"
    "Thread 7 crashed with ARM Thread State (64-bit):\n"
    "    x0: 0x0000000000000000   x1: 0x0000000000000000   x2: 0x0000000000000000   x3: 0x0000000000000000\n"
    "    x4: 0x000000016f6763d0   x5: 0x000000016f676970   x6: 0x0000000000000072   x7: 0x0000000000001800\n"
    "    x8: 0xe3e68c37e41b1559   x9: 0xe3f5efb68b7c6559  x10: 0x0000000000000002  x11: 0x0000000000000003\n"
    "   x12: 0x0000000000000000  x13: 0x00000000ffffffff  x14: 0x0000000000000010  x15: 0x0000000000000000\n"
    "   x16: 0x0000000000000148  x17: 0x000000016f677000  x18: 0x0000000000000000  x19: 0x0000000000000006\n"
    "   x20: 0x0000000000001f3b  x21: 0x000000016f6770e0  x22: 0x0000000000000114  x23: 0x0000000000000000\n"
    "   x24: 0x0000000000000000  x25: 0x000000016f6770e0  x26: 0x0000000000000000  x27: 0x000000016f677180\n"
    "   x28: 0x00000000000003ff   fp: 0x000000016f6768e0   lr: 0x00000001e18a1a9c\n"
    "    sp: 0x000000016f6768c0   pc: 0x00000001c3e1a334 cpsr: 0x40000000\n"
    "   esr: 0x56000080  Address size fault\n"
    "\n"
    "Binary Images:\n"
    "0x100be4000 - 0x100d37fff itunescloudd arm64e  <ca63a72de9ee3ba2835b50ddda3fb008> "
    "/System/Library/PrivateFrameworks/iTunesCloud.framework/Support/itunescloudd\n"
    "0x1957c7000 - 0x19580bfff libdispatch.dylib arm64e  <ff408738d75b3061ad994a929c0162d2> "
    "/usr/lib/system/libdispatch.dylib\n";

TEST(crashtext_ios14_arm64_text_report_round_trips)
{
    static const char *const names[] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7",
                                        "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15",
                                        "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23",
                                        "x24", "x25", "x26", "x27", "x28", "fp", "lr", "sp",
                                        "pc", "cpsr", "esr"};
    static const char *const values[] = {
        "0x0000000000000000", "0x0000000000000000", "0x0000000000000000", "0x0000000000000000",
        "0x000000016f6763d0", "0x000000016f676970", "0x0000000000000072", "0x0000000000001800",
        "0xe3e68c37e41b1559", "0xe3f5efb68b7c6559", "0x0000000000000002", "0x0000000000000003",
        "0x0000000000000000", "0x00000000ffffffff", "0x0000000000000010", "0x0000000000000000",
        "0x0000000000000148", "0x000000016f677000", "0x0000000000000000", "0x0000000000000006",
        "0x0000000000001f3b", "0x000000016f6770e0", "0x0000000000000114", "0x0000000000000000",
        "0x0000000000000000", "0x000000016f6770e0", "0x0000000000000000", "0x000000016f677180",
        "0x00000000000003ff", "0x000000016f6768e0", "0x00000001e18a1a9c", "0x000000016f6768c0",
        "0x00000001c3e1a334", "0x40000000", "0x56000080  Address size fault"};
    crash_kv regs[N(names)];
    for (size_t i = 0; i < N(names); i++)
        regs[i] = (crash_kv){S(names[i]), S(values[i])};

    crash_report r;
    memset(&r, 0, sizeof r);
    r.format = CRASH_FORMAT_IPS;
    r.bug_type = 109;
    r.code_type = S("ARM-64 (Native)");
    crash_thread th[2];
    mk_thread(&th[0], 7, NULL, "com.apple.iTunesCloud.ICURLSession.operation", true, i14_thread7,
              N(i14_thread7));
    mk_thread(&th[1], 8, NULL, NULL, false, i14_thread8, N(i14_thread8));
    r.threads = th;
    r.nthreads = 2;
    r.crashed_thread = 0; /* index: Thread 7 */
    crash_image im[2];
    mk_image(&im[0], "itunescloudd", "arm64e", "ca63a72de9ee3ba2835b50ddda3fb008", 0x100be4000,
             0x100d37fff, "/System/Library/PrivateFrameworks/iTunesCloud.framework/Support/itunescloudd",
             true);
    mk_image(&im[1], "libdispatch.dylib", "arm64e", "ff408738d75b3061ad994a929c0162d2", 0x1957c7000,
             0x19580bfff, "/usr/lib/system/libdispatch.dylib", false);
    r.images = im;
    r.nimages = 2;
    r.registers = regs;
    r.nregisters = N(regs);
    finish(&r);

    symd_status st;
    symd_err err;
    char *txt = render(&r, NULL, 1 << 20, &st, &err);
    CHECK(st == SYMD_OK && txt, "render: %s", err.msg);
    if (txt) {
        /* From the first thread on, the report's own layout exactly. */
        const char *body = strstr(txt, "\n\nThread 7 name:");
        CHECK(body && strcmp(body + 2, i14_body) == 0, "body:\n%s\nwant:\n%s",
              body ? body + 2 : txt, i14_body);
        CHECK(strstr(txt, "Triggered by Thread:  7\n\nThread 7 name:"), "header end: %s", txt);
    }
    free(txt);
    free_report(&r);
}

/* ---- symbolicated: inlined levels, then the outer line ---- */

TEST(crashtext_symbolicated_inlined_levels)
{
    static const lit_frame t0[] = {
        {"bigapp", 0x104a389f8, 0x104a38000, NULL, 0},
        {"bigapp", 0x104a38a40, 0x104a38000, NULL, 0},
        {"libsystem_kernel.dylib", 0x1c3e1a334, 0x1c3df1000, NULL, 0},
    };
    static const lit_frame t1[] = {
        {"bigapp", 0x104a38b00, 0x104a38000, "main", 12},
        {"libfix.dylib", 0x1050f0100, 0x1050f0000, NULL, 0},
    };
    crash_report r;
    memset(&r, 0, sizeof r);
    r.format = CRASH_FORMAT_CRASH;
    r.code_type = S("ARM-64 (Native)");
    r.incident_id = S("1");
    crash_thread th[2];
    mk_thread(&th[0], 0, "main", NULL, true, t0, N(t0));
    mk_thread(&th[1], 1, NULL, NULL, false, t1, N(t1));
    r.threads = th;
    r.nthreads = 2;
    r.crashed_thread = 0;
    finish(&r);

    crash_level f0[] = {
        {"square_inner", "square_inner", false, 0, "./src/util.h", 3, 5, true},
        {"mix", "mix", false, 0, "./src/app.c", 14, 15, true},
        {"static_square", "static_square", true, 20, "/build/./src/app.c", 20, 12, false},
    };
    crash_level f1[] = {{"ns::Box<int>::get() const", "_ZNK2ns3BoxIiE3getEv", true, 64, NULL, 0, 0, false}};
    crash_level f3[] = {{"main", "main", false, 0, "app.c", 0, 0, false}};
    crash_level f4[] = {{NULL, NULL, true, 256, NULL, 0, 0, false}};
    crash_symframe sf[5] = {
        {CSYM_SYMBOLICATED, "bigapp", f0, N(f0)},
        {CSYM_SYMBOLICATED, "bigapp", f1, N(f1)},
        {CSYM_MISSING_IMAGE, NULL, NULL, 0},
        {CSYM_SYMBOLICATED, "bigapp", f3, N(f3)},
        {CSYM_NO_SYMBOL, "libfix.dylib", f4, N(f4)},
    };
    crash_symbolication s = {.frames = sf};
    symd_status st;
    symd_err err;
    char *txt = render(&r, &s, 1 << 20, &st, &err);
    CHECK(st == SYMD_OK && txt, "render: %s", err.msg);
    const char *want =
        "Incident Identifier: 1\n"
        "Code Type:           ARM-64 (Native)\n"
        "\n"
        "Report Version:      104\n"
        "\n"
        "Triggered by Thread:  0\n"
        "\n"
        "Thread 0 name:  main\n"
        "Thread 0 Crashed:\n"
        "0   bigapp                        \t0x0000000104a389f8 square_inner (util.h:3)\n"
        "0   bigapp                        \t0x0000000104a389f8 mix (app.c:14)\n"
        "0   bigapp                        \t0x0000000104a389f8 static_square + 20 (app.c:20)\n"
        "1   bigapp                        \t0x0000000104a38a40 ns::Box<int>::get() const + 64\n"
        "2   libsystem_kernel.dylib        \t0x00000001c3e1a334 0x1c3df1000 + 168756\n"
        "\n"
        "Thread 1:\n"
        "0   bigapp                        \t0x0000000104a38b00 main (app.c)\n"
        "1   libfix.dylib                  \t0x00000001050f0100 0x1050f0000 + 256\n"
        "\n"
        "Binary Images:\n";
    CHECK(txt && strcmp(txt, want) == 0, "got:\n%s\nwant:\n%s", txt ? txt : "(null)", want);
    free(txt);

    /* A symbolication whose frame count disagrees with the report is not read past its end. */
    r.total_frames = 2;
    txt = render(&r, &s, 1 << 20, &st, &err);
    CHECK(txt && strstr(txt, "\t0x0000000104a38b00 0x104a38000 + 2816 (main + 12)\n"), "past total: %s", txt);
    free(txt);
    free_report(&r);
}

/* ---- a JSON .ips (bug_type 309): the header is written from the fields ---- */

TEST(crashtext_json_ips_synthesized_header)
{
    static const lit_frame t0[] = {
        {"libsystem_kernel.dylib", 0x1bb47e2f8, 0x1bb47c000, "kevent", 8},
        {"libsystem_info.dylib", 0x18ca77328, 0x18ca68000, "_mdns_search_ex", 1296},
    };
    crash_report r;
    memset(&r, 0, sizeof r);
    r.format = CRASH_FORMAT_IPS;
    r.bug_type = 309;
    r.header_json = S("{\"app_name\":\"AmongUs\",\"bug_type\":\"309\"}");
    r.incident_id = S("D4E7538A-63F2-4116-8673-D9C0D9EE5A07");
    r.hardware_model = S("iPad5,1");
    r.process = S("AmongUs");
    r.bundle_id = S("com.innersloth.amongus");
    r.app_version = S("2021.11.10");
    r.code_type = S("ARM-64");
    r.os_version = S("iPhone OS 15.1 (19B74)");
    r.date = S("2021-12-08 14:17:31.5754 -0500");
    r.exception_type = S("EXC_CRASH");
    r.exception_signal = S("SIGKILL");
    r.exception_codes = S("0x0000000000000000, 0x0000000000000000");
    r.termination = S("FRONTBOARD 0x8badf00d");
    crash_thread th[2];
    mk_thread(&th[0], 0, NULL, "com.apple.main-thread", true, t0, N(t0));
    mk_thread(&th[1], 1, "com.apple.uikit.eventfetch-thread", NULL, false, t0, 1);
    for (int i = 0; i < 2; i++)
        th[0].frames[i].image = i;
    r.threads = th;
    r.nthreads = 2;
    r.crashed_thread = 0;
    crash_image im[3];
    mk_image(&im[0], "libsystem_kernel.dylib", "arm64", "28a82cbdb2103662af9e636819d8909a", 0x1bb47c000,
             0x1bb4adfff, "/usr/lib/system/libsystem_kernel.dylib", false);
    mk_image(&im[1], "libsystem_info.dylib", "arm64", "f0e7d6d4c3d831eebdcbe98699b6b31b", 0x18ca68000,
             0x18ca8cfff, "/usr/lib/system/libsystem_info.dylib", false);
    mk_image(&im[2], NULL, NULL, NULL, 0x105000000, 0, NULL, true);
    im[2].has_end = false;
    r.images = im;
    r.nimages = 3;
    finish(&r);

    symd_status st;
    symd_err err;
    char *txt = render(&r, NULL, 1 << 20, &st, &err);
    CHECK(st == SYMD_OK && txt, "render: %s", err.msg);
    const char *want_head =
        "Incident Identifier: D4E7538A-63F2-4116-8673-D9C0D9EE5A07\n"
        "Hardware Model:      iPad5,1\n"
        "Process:             AmongUs\n"
        "Identifier:          com.innersloth.amongus\n"
        "Version:             2021.11.10\n"
        "Code Type:           ARM-64\n"
        "\n"
        "Date/Time:           2021-12-08 14:17:31.5754 -0500\n"
        "OS Version:          iPhone OS 15.1 (19B74)\n"
        "Report Version:      104\n"
        "\n"
        "Exception Type:  EXC_CRASH (SIGKILL)\n"
        "Exception Codes: 0x0000000000000000, 0x0000000000000000\n"
        "Termination Reason: FRONTBOARD 0x8badf00d\n"
        "Triggered by Thread:  0\n"
        "\n"
        "Thread 0 name:  Dispatch queue: com.apple.main-thread\n"
        "Thread 0 Crashed:\n"
        "0   libsystem_kernel.dylib        \t0x00000001bb47e2f8 0x1bb47c000 + 8952 (kevent + 8)\n"
        "1   libsystem_info.dylib          \t0x000000018ca77328 0x18ca68000 + 62248 (_mdns_search_ex + 1296)\n"
        "\n"
        "Thread 1 name:  com.apple.uikit.eventfetch-thread\n"
        "Thread 1:\n"
        "0   libsystem_kernel.dylib        \t0x00000001bb47e2f8 0x1bb47c000 + 8952 (kevent + 8)\n"
        "\n"
        "Binary Images:\n"
        "0x1bb47c000 - 0x1bb4adfff libsystem_kernel.dylib arm64  <28a82cbdb2103662af9e636819d8909a> "
        "/usr/lib/system/libsystem_kernel.dylib\n"
        "0x18ca68000 - 0x18ca8cfff libsystem_info.dylib arm64  <f0e7d6d4c3d831eebdcbe98699b6b31b> "
        "/usr/lib/system/libsystem_info.dylib\n"
        "0x105000000 - ??? ??? ???  <?\?\?>\n";
    CHECK(txt && strcmp(txt, want_head) == 0, "got:\n%s\nwant:\n%s", txt ? txt : "(null)", want_head);
    CHECK(txt && !strstr(txt, "bug_type"), "the JSON header line is not part of the text layout");
    free(txt);

    /* Fewer fields: what is missing is left out; the crashed thread is found by its flag. */
    crash_report r2;
    memset(&r2, 0, sizeof r2);
    r2.format = CRASH_FORMAT_IPS;
    r2.exception_type = S("EXC_BAD_ACCESS");
    r2.crashed_thread = -1;
    crash_thread th2[2];
    mk_thread(&th2[0], 0, NULL, NULL, false, t0, 1);
    mk_thread(&th2[1], 4, NULL, NULL, true, t0, 1);
    r2.threads = th2;
    r2.nthreads = 2;
    finish(&r2);
    txt = render(&r2, NULL, 1 << 20, &st, &err);
    CHECK(txt && starts_with(txt, "\nReport Version:      104\n\nException Type:  EXC_BAD_ACCESS\n"
                                  "Triggered by Thread:  4\n\nThread 0:\n"),
          "sparse: %s", txt);
    free(txt);
    free_report(&r2);
    free_report(&r);
}

/* ---- limits ---- */

TEST(crashtext_too_large)
{
    crash_report r;
    crash_thread th[2];
    crash_image im[2];
    kscrash_report(&r, th, im, NULL, 0);
    symd_status st;
    symd_err err;
    char *full = render(&r, NULL, 1 << 20, &st, &err);
    CHECK(full != NULL, "render");
    size_t len = full ? strlen(full) : 0;
    free(full);

    dynbuf b;
    dynbuf_init(&b, 100);
    dynbuf_add(&b, "kept", 4);
    symd_err_clear(&err);
    st = crash_render_text(&r, NULL, NULL, 0, &b, &err);
    CHECK(st == SYMD_E_TOO_LARGE && err.kind == SYMD_E_TOO_LARGE, "small limit: %d", st);
    CHECK(b.len == 4 && strcmp((char *)b.data, "kept") == 0, "out left as it was");
    dynbuf_free(&b);

    /* Exactly the size fits; one byte less does not. */
    dynbuf_init(&b, len);
    st = crash_render_text(&r, NULL, NULL, 0, &b, &err);
    CHECK(st == SYMD_OK && b.len == len, "exact fit");
    dynbuf_free(&b);
    dynbuf_init(&b, len - 1);
    symd_err_clear(&err);
    st = crash_render_text(&r, NULL, NULL, 0, &b, &err);
    CHECK(st == SYMD_E_TOO_LARGE && b.len == 0, "one byte short");
    dynbuf_free(&b);
    free_report(&r);
}

/* ---- hostile strings ---- */

TEST(crashtext_hostile_strings_keep_the_layout)
{
    static char longname[100000];
    memset(longname, 'A', sizeof longname - 1);
    longname[sizeof longname - 2] = '\xc3'; /* a cut sequence at the very end */
    static const lit_frame t0[] = {
        {"evil\nThread 9 Crashed:\n0   x", 0x1000, 0x1000, "sym\r\nbol\t\x01\x7f", 4},
        {"bad\xff\xfe\xc0\xaf utf8", 0x1004, 0, "u\xe2\x80\xa8v\xc2\x85w\xe2\x80\xa9", 0},
        {longname, 0x1008, 0, longname, 8},
        {"ok\xc3\xa9\xf0\x9f\x98\x80", 0x100c, 0x1000, NULL, 0},
    };
    crash_report r;
    memset(&r, 0, sizeof r);
    r.format = CRASH_FORMAT_CRASH;
    r.code_type = S("X86-64 (Native)");
    r.process = S("\xff\xfe evil\x1b[2J\r\nLine two\tok");
    crash_thread th[1];
    mk_thread(&th[0], 0, "name\nThread 1:", "q\r\nx\xff", true, t0, N(t0));
    th[0].frames[3].file = S("/a/b\nc.c");
    th[0].frames[3].line = 7;
    r.threads = th;
    r.nthreads = 1;
    r.crashed_thread = 0;
    crash_kv regs[] = {{S("rax\n"), S("0x1\n2")}, {longname, S("\xff")}};
    r.registers = regs;
    r.nregisters = N(regs);
    crash_image im[1];
    mk_image(&im[0], "img\nBinary Images:", "x86_64\n", NULL, 0x1000, 0x1fff, "/p\n/q\xff", true);
    r.images = im;
    r.nimages = 1;
    finish(&r);

    crash_level lv[] = {
        {"inl\ninlined", NULL, false, 0, "/x/y\n.c", 1, 0, true},
        {longname, NULL, true, 1, "dir/\xff.c", 2, 0, false},
    };
    crash_symframe sf[4] = {{CSYM_SYMBOLICATED, "x", lv, N(lv)}};
    crash_symbolication s = {.frames = sf};

    for (int with_s = 0; with_s < 2; with_s++) {
        symd_status st;
        symd_err err;
        char *txt = render(&r, with_s ? &s : NULL, 1 << 22, &st, &err);
        CHECK(st == SYMD_OK && txt, "render: %s", err.msg);
        if (!txt)
            continue;
        size_t n = strlen(txt);
        CHECK(valid_utf8(txt, n), "output is UTF-8");
        /* Exactly the lines the layout has: header (process, path, code type,
         * blank, report version, blank, triggered by, blank), name, Crashed,
         * 4 frames (+1 inlined), blank, state title + 1 line + blank,
         * "Binary Images:" + 1 image. */
        size_t lines = 0, longest = 0, cur = 0, controls = 0;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)txt[i];
            controls += !(c >= 0x20 || c == '\n' || c == '\t') || c == 0x7f;
            if (c == '\n') {
                lines++;
                if (cur > longest)
                    longest = cur;
                cur = 0;
            } else {
                cur++;
            }
        }
        CHECK(controls == 0, "%zu control bytes", controls);
        CHECK(lines == (size_t)(8 + 2 + 4 + with_s + 1 + 3 + 2), "lines: %zu\n%s", lines,
              n < 4000 ? txt : "(long)");
        /* Two cut names (image and symbol) on one line at most. */
        CHECK(longest < 2 * 16384 + 100, "a very long name is cut: %zu", longest);
        CHECK(!strstr(txt, "\nThread 9") && !strstr(txt, "\nThread 1:") && !strstr(txt, "\n0   x") &&
                  !strstr(txt, "\ninlined") && !strstr(txt, "\nBinary Images:\n0x1000 - 0x1fff img\n"),
              "no injected lines");
        CHECK(strstr(txt, "Process:             \xef\xbf\xbd\xef\xbf\xbd evil [2J  Line two ok\n"),
              "header: invalid bytes replaced, controls a space, one line");
        CHECK(strstr(txt, "Thread 0 name:  Dispatch queue: q  x\xef\xbf\xbd\n"), "queue");
        CHECK(strstr(txt, "0   evil Thread 9 Crashed: 0   x  \t0x0000000000001000 "), "image name: %s",
              n < 4000 ? txt : "(long)");
        CHECK(strstr(txt, "1   bad\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd utf8          \t"
                          "0x0000000000001004 u v w  + 0\n"),
              "invalid and separator characters");
        CHECK(strstr(txt, "3   ok\xc3\xa9\xf0\x9f\x98\x80                      \t0x000000000000100c "
                          "0x1000 + 12 (/a/b c.c:7)\n"),
              "valid UTF-8 kept");
        CHECK(strstr(txt, "AAA...\t0x0000000000001008 AAA"), "long image name cut");
        if (with_s) {
            CHECK(strstr(txt, "\t0x0000000000001000 inl inlined (y .c:1)\n"), "inlined level");
            CHECK(strstr(txt, "AAA... + 1 (\xef\xbf\xbd.c:2)\n"), "outer level");
        } else {
            CHECK(strstr(txt, "\t0x0000000000001000 0x1000 + 0 (sym  bol    + 4)\n"), "report symbol");
        }
        CHECK(strstr(txt, "X86 Thread State (64-bit):\n  rax : 0x1 2"), "registers: %s",
              n < 4000 ? txt : "(long)");
        CHECK(strstr(txt, "\nBinary Images:\n0x1000 - 0x1fff img Binary Images: x86_64   <?\?\?> /p /q\xef\xbf\xbd\n"),
              "image line");
        free(txt);
    }
    free_report(&r);
}

/* ---- 32 or 64 bits when the report does not say ---- */

TEST(crashtext_address_width_from_the_report)
{
    static const lit_frame small[] = {{"a", 0x1000, 0, NULL, 0}};
    static const lit_frame big[] = {{"a", 0x100001000, 0, NULL, 0}};
    struct {
        const char *code_type, *arch;
        const lit_frame *f;
        const char *want;
    } cases[] = {
        {NULL, NULL, small, "\t0x00001000\n"},
        {NULL, NULL, big, "\t0x0000000100001000\n"},
        {NULL, "arm64", small, "\t0x0000000000001000\n"},
        {NULL, "armv7k", small, "\t0x00001000\n"},
        {"ARM64_32", "arm64_32", small, "\t0x00001000\n"},
        {"X86 (Native)", NULL, small, "\t0x00001000\n"},
        {"X86-64 (Native)", NULL, small, "\t0x0000000000001000\n"},
        {"PowerPC", NULL, small, "\t0x00001000\n"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        crash_report r;
        memset(&r, 0, sizeof r);
        r.code_type = S(cases[i].code_type);
        crash_thread th[1];
        mk_thread(&th[0], 0, NULL, NULL, false, cases[i].f, 1);
        r.threads = th;
        r.nthreads = 1;
        r.crashed_thread = -1;
        crash_image im[1];
        mk_image(&im[0], "a", cases[i].arch, NULL, 0x1000, 0x1fff, NULL, false);
        r.images = im;
        r.nimages = cases[i].arch ? 1 : 0;
        finish(&r);
        symd_status st;
        symd_err err;
        char *txt = render(&r, NULL, 1 << 20, &st, &err);
        CHECK(txt && strstr(txt, cases[i].want) && strstr(txt, "\nThread 0:\n"),
              "case %zu: %s", i, txt);
        free(txt);
        free_report(&r);
    }
}

/* ---- fixtures/crashes/bigapp-twin.crash: the generated twin ---- */

TEST(crashtext_twin_fixture_frames)
{
    size_t len;
    uint8_t *src = read_fixture("fixtures/crashes/bigapp-twin.crash", &len);
    if (!src)
        return;
    static const lit_frame t0[] = {
        {"libfix.dylib", 0x1050f0374, 0x1050f0000, NULL, 0},
        {"bigapp-arm64", 0x104a389f8, 0x104a38000, NULL, 0},
        {"bigapp-arm64", 0x104a38b04, 0x104a38000, NULL, 0},
        {"bigapp-arm64", 0x104a38bdc, 0x104a38000, NULL, 0},
        {"libsystem_kernel.dylib", 0x1c3e1a334, 0x1c3df1000, NULL, 0},
    };
    crash_report r;
    memset(&r, 0, sizeof r);
    r.format = CRASH_FORMAT_CRASH;
    r.code_type = S("ARM-64 (Native)");
    crash_thread th[1];
    mk_thread(&th[0], 0, NULL, "com.apple.main-thread", true, t0, N(t0));
    r.threads = th;
    r.nthreads = 1;
    r.crashed_thread = 0;
    finish(&r);
    symd_status st;
    symd_err err;
    char *txt = render(&r, NULL, 1 << 20, &st, &err);
    /* Unsymbolicated: the thread is the fixture's, byte for byte. */
    const char *a = txt ? strstr(txt, "Thread 0 name:") : NULL;
    const char *b = strstr((char *)src, "Thread 0 name:");
    const char *be = b ? strstr(b, "\n\n") : NULL;
    CHECK(a && be && strncmp(a, b, (size_t)(be - b) + 2) == 0, "twin thread:\n%s", txt ? txt : "");
    free(txt);

    /* Symbolicated as twins.expected.tsv says. */
    crash_level l0[] = {{"fix_mul", "fix_mul", true, 4, NULL, 0, 0, false}};
    crash_level l1[] = {{"mix", "mix", false, 0, "./src/app.c", 14, 15, true},
                        {"static_square", "static_square", true, 20, "./src/app.c", 20, 12, false}};
    crash_level l2[] = {{"mix", "mix", false, 0, "./src/app.c", 14, 15, true},
                        {"static_accumulate", "static_accumulate", true, 76, "./src/app.c", 27, 15, false}};
    crash_level l3[] = {{"main", "main", true, 60, "./src/app.c", 88, 7, false}};
    crash_symframe sf[] = {
        {CSYM_SYMBOLICATED, "libfix.dylib", l0, 1}, {CSYM_SYMBOLICATED, "bigapp-arm64", l1, 2},
        {CSYM_SYMBOLICATED, "bigapp-arm64", l2, 2}, {CSYM_SYMBOLICATED, "bigapp-arm64", l3, 1},
        {CSYM_MISSING_IMAGE, NULL, NULL, 0},
    };
    crash_symbolication s = {.frames = sf};
    txt = render(&r, &s, 1 << 20, &st, &err);
    const char *want =
        "Thread 0 Crashed:\n"
        "0   libfix.dylib                  \t0x00000001050f0374 fix_mul + 4\n"
        "1   bigapp-arm64                  \t0x0000000104a389f8 mix (app.c:14)\n"
        "1   bigapp-arm64                  \t0x0000000104a389f8 static_square + 20 (app.c:20)\n"
        "2   bigapp-arm64                  \t0x0000000104a38b04 mix (app.c:14)\n"
        "2   bigapp-arm64                  \t0x0000000104a38b04 static_accumulate + 76 (app.c:27)\n"
        "3   bigapp-arm64                  \t0x0000000104a38bdc main + 60 (app.c:88)\n"
        "4   libsystem_kernel.dylib        \t0x00000001c3e1a334 0x1c3df1000 + 168756\n\n";
    CHECK(txt && strstr(txt, want), "symbolicated twin:\n%s", txt ? txt : "");
    free(txt);
    free(src);
    free_report(&r);
}

/* ---- reports read from text: the input, frames rewritten in place ---- */

typedef struct {
    int reports, text, same;
} as_written_ctx;

/* One real report: read from text, it renders back byte for byte, both
 * without a symbolication and with one that knows nothing (every image
 * missing, as on a fresh server). */
static void check_as_written(const char *name, const uint8_t *buf, size_t len, void *vctx)
{
    as_written_ctx *c = vctx;
    c->reports++;
    crash_report r;
    symd_err err;
    symd_err_clear(&err);
    if (crash_parse(buf, len, &r, &err) != SYMD_OK) {
        CHECK(false, "%s: refused: %s", name, err.msg);
        return;
    }
    if (r.text_body) {
        c->text++;
        crash_symframe *sf = calloc(r.total_frames ? r.total_frames : 1, sizeof *sf);
        for (size_t i = 0; i < r.total_frames; i++)
            sf[i].status = CSYM_MISSING_IMAGE;
        crash_symbolication s = {.frames = sf};
        bool same = true;
        for (int with_s = 0; with_s < 2; with_s++) {
            dynbuf b;
            dynbuf_init(&b, 64u << 20);
            symd_status st = crash_render_text(&r, with_s ? &s : NULL, buf, len, &b, &err);
            bool eq = st == SYMD_OK && b.len == len && (len == 0 || memcmp(b.data, buf, len) == 0);
            if (!eq) {
                size_t k = 0;
                while (k < b.len && k < len && b.data[k] == buf[k])
                    k++;
                CHECK(false, "%s: not as written (%s), first difference at byte %zu of %zu/%zu",
                      name, with_s ? "nothing found" : "no symbolication", k, b.len, len);
            }
            same &= eq;
            dynbuf_free(&b);
        }
        c->same += same;
        free(sf);
    }
    crash_report_free(&r);
}

/* Every real report read from text renders back as written: every section
 * it does not symbolicate is the report's own, verbatim. */
TEST(crashtext_text_reports_render_as_written)
{
    as_written_ctx c = {0};
    if (!each_real_report(check_as_written, &c)) {
        test_skip("no ../shared/real-reports or real-crashes");
        return;
    }
    static const char *const fixtures[] = {"fixtures/crashes/bigapp-twin.crash",
                                           "fixtures/crashes/bigapp-pac.crash",
                                           "fixtures/crashes/bigapp-pac-list.crash"};
    for (size_t i = 0; i < N(fixtures); i++) {
        size_t len;
        uint8_t *buf = read_fixture(fixtures[i], &len);
        if (buf)
            check_as_written(fixtures[i], buf, len, &c);
        free(buf);
    }
    CHECK(c.text >= 40, "only %d text reports", c.text);
    printf("    %d of %d reports read from text render back byte for byte (%d from JSON)\n",
           c.same, c.text, c.reports - c.text);
}

/* Renders input with the first frame at address addr symbolicated as lv
 * says (every other frame missing) and checks the output is the input with
 * the first line equal to orig replaced by the lines of want ('\n'
 * separated), and nothing else changed. */
static void check_rewrite(const char *what, const uint8_t *buf, size_t len, uint64_t addr,
                          const crash_level *lv, size_t nlv, const char *image, const char *orig,
                          const char *want)
{
    crash_report r;
    symd_err err;
    symd_err_clear(&err);
    if (crash_parse(buf, len, &r, &err) != SYMD_OK) {
        CHECK(false, "%s: refused: %s", what, err.msg);
        return;
    }
    crash_symframe *sf = calloc(r.total_frames ? r.total_frames : 1, sizeof *sf);
    size_t k = 0;
    bool set = false;
    for (size_t t = 0; t < r.nthreads; t++)
        for (size_t f = 0; f < r.threads[t].nframes; f++, k++) {
            sf[k].status = CSYM_MISSING_IMAGE;
            if (!set && r.threads[t].frames[f].address == addr) {
                sf[k] = (crash_symframe){CSYM_SYMBOLICATED, image, (crash_level *)lv, nlv};
                set = true;
            }
        }
    CHECK(set, "%s: no frame at 0x%llx", what, (unsigned long long)addr);
    crash_symbolication s = {.frames = sf};
    dynbuf b;
    dynbuf_init(&b, 64u << 20);
    symd_status st = crash_render_text(&r, &s, buf, len, &b, &err);
    CHECK(st == SYMD_OK, "%s: %s", what, err.msg);
    /* the expected text: the input with orig's line replaced */
    char *line = malloc(strlen(orig) + 3);
    sprintf(line, "\n%s\n", orig);
    const char *at = strstr((const char *)buf, line);
    CHECK(at, "%s: no line \"%s\" in the input", what, orig);
    if (at && st == SYMD_OK) {
        size_t pre = (size_t)(at - (const char *)buf) + 1, wl = strlen(want);
        size_t post = pre + strlen(orig);
        size_t n = pre + wl + (len - post);
        bool eq = b.len == n && memcmp(b.data, buf, pre) == 0 &&
                  memcmp(b.data + pre, want, wl) == 0 &&
                  memcmp(b.data + pre + wl, buf + post, len - post) == 0;
        const char *got = b.len >= pre ? (const char *)b.data + pre : "";
        const char *nl = b.len >= pre ? memchr(got, '\n', b.len - pre) : NULL;
        CHECK(eq, "%s: rewritten as\n%.*s\nwant\n%s", what,
              nl ? (int)(nl - got) + (nlv > 1 ? 120 : 0) : 200, got, want);
    }
    free(line);
    dynbuf_free(&b);
    free(sf);
    crash_report_free(&r);
}

/* How each kind of frame line is rewritten when an uploaded image names
 * it: a .crash frame line gets a line per inlined level; a sample or
 * spindump call-tree node is written as that tool writes a symbolicated
 * node; a panic backtrace line gets the symbol after it. */
TEST(crashtext_text_frames_rewritten_in_place)
{
    crash_level two[] = {
        {"mix", "mix", false, 0, "./src/app.c", 14, 15, true},
        {"static_square", "static_square", true, 20, "./src/app.c", 20, 12, false},
    };
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/bigapp-twin.crash", &len);
    if (buf)
        check_rewrite(".crash frame line", buf, len, 0x104a389f8, two, 2, "bigapp-arm64",
                      "1   bigapp-arm64                  \t0x0000000104a389f8 0x104a38000 + 2552",
                      "1   bigapp-arm64                  \t0x0000000104a389f8 mix (app.c:14)\n"
                      "1   bigapp-arm64                  \t0x0000000104a389f8 static_square + 20 "
                      "(app.c:20)");
    free(buf);

    const char *rep = real_reports_dir();
    if (!rep) {
        test_skip("no ../shared/real-reports");
        return;
    }
    char path[1024];
    crash_level worker[] = {
        {"inner", "inner", false, 0, "/src/m.c", 7, 3, true},
        {"worker", "worker", true, 64, "/src/m.c", 12, 5, false},
    };
    snprintf(path, sizeof path, "%s/%s", rep,
             "inket+MacSymbolicator@7ad41f1+MacSymbolicatorTests_Resources_Samples_"
             "singlethread-sample.txt");
    if ((buf = read_fixture(path, &len)))
        check_rewrite("sample node", buf, len, 0x103248eb0, worker, 2, "SingleThreadHangingTest",
                      "        2672 ???  (in SingleThreadHangingTest)  load address 0x103245000 + "
                      "0x3eb0  [0x103248eb0]",
                      "        2672 worker [inlined inner (m.c:7)]  (in SingleThreadHangingTest) "
                      "+ 64  [0x103248eb0]  m.c:12");
    free(buf);
    snprintf(path, sizeof path, "%s/%s", rep,
             "faisalmemon+ios-crash-dump-analysis-book+examples_resource_apfs_defragd.cpu_"
             "resource-2020-10-19-234902.ips.synced");
    if ((buf = read_fixture(path, &len)))
        check_rewrite("spindump node", buf, len, 0x1db258804, &worker[1], 1,
                      "libsystem_pthread.dylib",
                      "  18  ??? (libsystem_pthread.dylib + 14340) [0x1db258804]",
                      "  18  worker + 64 (m.c:12 in libsystem_pthread.dylib + 14340) [0x1db258804]");
    free(buf);
    snprintf(path, sizeof path, "%s/%s", rep,
             "faisalmemon+ios-crash-dump-analysis-book+examples_serror_interrupt_m1_mac_mini_"
             "serror.crash");
    if ((buf = read_fixture(path, &len)))
        check_rewrite("panic backtrace line", buf, len, 0xfffffe00295a2464, worker, 2, "kernel",
                      "\t\t  lr: 0xfffffe00295a2464  fp: 0xfffffe608930b7a0",
                      "\t\t  lr: 0xfffffe00295a2464  fp: 0xfffffe608930b7a0  worker + 64 (m.c:12) "
                      "[inlined inner (m.c:7)]");
    free(buf);
}

/* App or system (crash_classify_images) on the real reports of ../shared:
 * every image of every report (real-crashes, real-reports, and the
 * in-app reporters' files) checked against the evidence the report itself
 * gives (its paths, '+' marks, .ips sources and sharedCache, kernel
 * addresses), a few reports whose every image is known pinned by count,
 * and a table of the counts printed. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parser/crash.h"
#include "../server/crashsym.h"
#include "test.h"

/* Folders of the OS as the reports write them (a subset of the rule's:
 * what every real report here uses). */
static bool os_path(const char *p)
{
    static const char *const dirs[] = {"/System/", "/usr/lib/", "/usr/libexec/", "/bin/",
                                       "/usr/sbin/", NULL};
    for (size_t i = 0; dirs[i]; i++)
        if (!strncmp(p, dirs[i], strlen(dirs[i])))
            return true;
    return false;
}

/* A simulator runtime's OS folder: ".../iPhoneSimulator.sdk/System/...",
 * ".../RuntimeRoot/usr/lib/...". */
static bool sim_os_path(const char *p)
{
    const char *s = strstr(p, "Simulator.sdk/"), *r = strstr(p, "/RuntimeRoot/");
    if (s)
        return os_path(s + strlen("Simulator.sdk"));
    return r && os_path(r + strlen("/RuntimeRoot"));
}

typedef struct {
    int reports, images, system, app, checked;
    int app_main;   /* reports whose main executable is the app's */
    int os_main;    /* reports whose main executable lies in the OS (a daemon) */
} tally;

/* Every image of r against what the report says of it; a row of the table. */
static void check_report(const char *name, int part, const crash_report *r, tally *t)
{
    int sys = 0, app = 0;
    for (size_t i = 0; i < r->nimages; i++) {
        const crash_image *im = &r->images[i];
        const char *p = im->path ? im->path : "";
        const char *what = NULL;
        bool want = false;
        if (im->load_address >= 0xFFFF000000000000ull) {
            what = "a kernel address";
            want = true;
        } else if (im->source == 'T' || im->source == 'S') {
            what = im->source == 'T' ? "source T (kernel text)" : "source S (shared cache)";
            want = true;
        } else if (r->has_shared_cache && im->load_address >= r->shared_cache_base &&
                   im->load_address - r->shared_cache_base < r->shared_cache_size) {
            what = "inside sharedCache";
            want = true;
        } else if (sim_os_path(p)) {
            what = "a simulator runtime's OS folder";
            want = true;
        } else if (im->plus && !strstr(p, "Simulator.sdk/") && !strstr(p, "/RuntimeRoot/")) {
            what = "'+' (not the OS's)";
        } else if (os_path(p)) {
            what = "an OS folder";
            want = true;
        } else if (strstr(p, ".app/")) {
            what = "an app bundle";
        } else if (im->source == 'P') {
            what = "source P without a path (a stackshot's)";
        }
        if (what) {
            t->checked++;
            CHECK(im->system == want, "%s part %d image %zu (%s, %s): %s, said %s", name, part, i,
                  im->name ? im->name : "?", p, what, im->system ? "system" : "app");
        }
        sys += im->system;
        app += !im->system;
    }
    long main = crash_app_image(r);
    const crash_image *m = main >= 0 ? &r->images[main] : NULL;
    if (m && m->path && !sim_os_path(m->path) && (m->plus || !os_path(m->path))) {
        CHECK(!m->system, "%s: the main executable %s is the app's", name, m->path);
        t->app_main++;
    } else if (m && m->path) {
        CHECK(m->system, "%s: the main executable %s lies in the OS", name, m->path);
        t->os_main++;
    }
    t->reports++;
    t->images += (int)r->nimages;
    t->system += sys;
    t->app += app;
    /* the file's own name, its repository's prefix aside, its end kept */
    const char *b = strrchr(name, '+') ? strrchr(name, '+') + 1 : name;
    size_t bl = strlen(b);
    char shown[48];
    snprintf(shown, sizeof shown, "%s", bl > 44 ? b + bl - 44 : b);
    printf("    %-44s %-9s %-9s %5zu %5d %5d  %s%s\n", shown, crash_format_name(r->format),
           crash_kind_name(r->kind), r->nimages, app, sys,
           m ? (m->name ? m->name : "(unnamed)") : "-",
           m ? (m->system ? " (OS)" : " (app)") : "");
}

static void one_file(const char *name, const uint8_t *buf, size_t len, void *ctx)
{
    crash_report *rs;
    size_t n;
    symd_err err = {0};
    if (crash_parse_all(buf, len, &rs, &n, &err) != SYMD_OK) {
        CHECK(false, "%s: %s", name, err.msg);
        return;
    }
    for (size_t i = 0; i < n; i++)
        check_report(name, (int)i, &rs[i], ctx);
    crash_reports_free(rs, n);
}

/* The image of r named name (the first); NULL when none. */
static const crash_image *named(const crash_report *r, const char *name)
{
    for (size_t i = 0; i < r->nimages; i++)
        if (r->images[i].name && !strcmp(r->images[i].name, name))
            return &r->images[i];
    return NULL;
}

/* Reports whose every image is known, by count and by name. */
static void pinned(const char *dir, const char *file, int part, size_t app, size_t sys,
                   const char *const *apps)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    size_t len;
    uint8_t *buf = read_file(path, &len);
    CHECK(buf, "%s: cannot read", path);
    crash_report *rs = NULL;
    size_t n = 0;
    if (!buf || crash_parse_all(buf, len, &rs, &n, NULL) != SYMD_OK || (size_t)part >= n) {
        CHECK(false, "%s: no part %d", file, part);
        free(buf);
        return;
    }
    const crash_report *r = &rs[part];
    size_t a = 0, s = 0;
    for (size_t i = 0; i < r->nimages; i++)
        r->images[i].system ? s++ : a++;
    CHECK(a == app && s == sys, "%s part %d: %zu app, %zu system images (want %zu, %zu)", file,
          part, a, s, app, sys);
    for (size_t i = 0; apps && apps[i]; i++) {
        const crash_image *im = named(r, apps[i]);
        CHECK(im && !im->system, "%s: %s is the app's", file, apps[i]);
    }
    crash_reports_free(rs, n);
    free(buf);
}

TEST(appsys_real_reports_tell_app_from_system)
{
    tally t = {0};
    printf("    %-44s %-9s %-9s %5s %5s %5s  %s\n", "report", "format", "kind", "imgs", "app",
           "sys", "main executable");
    int files = each_real_report(one_file, &t);
    if (!files) {
        test_skip("no ../shared/real-reports or real-crashes");
        return;
    }
    /* the in-app reporters' files (MetricKit payloads give no paths) */
    const char *rep = reporters_dir();
    struct dirent **ents = NULL;
    int nents = rep ? scandir(rep, &ents, NULL, alphasort) : 0;
    for (int i = 0; i < nents; i++) {
        const char *nm = ents[i]->d_name, *dot = strrchr(nm, '.');
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", rep, nm);
        size_t len;
        uint8_t *buf = nm[0] != '.' && dot && strcmp(dot, ".md") && strcmp(dot, ".tsv")
                           ? read_file(path, &len)
                           : NULL;
        if (buf)
            one_file(nm, buf, len, &t);
        free(buf);
        free(ents[i]);
    }
    free(ents);
    printf("    %d reports: %d images, %d the app's, %d the OS's; %d checked against the "
           "report's own evidence; main executable the app's in %d, in the OS in %d\n",
           t.reports, t.images, t.app, t.system, t.checked, t.app_main, t.os_main);
    CHECK(t.reports >= 56 && t.checked >= 7000 && t.system > t.app,
          "%d reports, %d images checked", t.reports, t.checked);
    CHECK(t.app_main >= 30 && t.os_main >= 8, "main executables: %d the app's, %d the OS's",
          t.app_main, t.os_main);

    const char *rc = real_crashes_dir(), *rr = real_reports_dir();
    static const char *const amongus[] = {"AmongUs", "UnityFramework", "EOSSDK", NULL};
    static const char *const kscrash[] = {"Crash-Tester", "MobileSubstrate.dylib",
                                          "WinterBoard.dylib", NULL};
    static const char *const mk[] = {"MetricKitTest", NULL};
    static const char *const sentry[] = {"Sentry", "iOS-Swift", NULL};
    static const char *const tweak[] = {"TweakInject.dylib", "libsubstitute.0.dylib", NULL};
    static const char *const transit[] = {"com.transitapp.TransitX", "Transit.debug.dylib",
                                          "dyld_sim", NULL};
    if (rc) {
        /* the app, two frameworks of its bundle; 15 libraries of the OS */
        pinned(rc, "ipados15-amongus.ips", 0, 3, 15, amongus);
        /* a jailbroken iOS 4: the app and 7 Cydia Substrate libraries */
        pinned(rc, "kscrash-Abort.crash", 0, 8, 115, kscrash);
        /* an OS daemon: every image the OS's */
        pinned(rc, "ios14-abort-bugtype109.ips", 0, 0, 371, NULL);
    }
    if (rr) {
        /* /bin/sleep and two libraries; the "A" image (an address in none) */
        pinned(rr, "doronz88+pycrashreport+tests_user_mode_crash_report_monterey_non_symbolicated"
                   ".ips",
               0, 1, 3, NULL);
        /* dpkg tweaks marked '+', even in /usr/lib */
        pinned(rr, "faisalmemon+ios-crash-dump-analysis-book+examples_security_violation_ios_"
                   "mobile_sms_security_ios.crash",
               0, 12, 524, tweak);
        /* paths hidden (/Volumes/VOLUME/<*>/...): the simulator's libraries by
         * the shared region */
        pinned(rr, "lapfelix+ips2crashlog+Tests_ips2crashlogTests_TestResources_target.txt", 0,
               17, 19, transit);
        /* a stackshot: two shared cache entries (S) and the kernel (U, at a
         * kernel address); 209 files on disk (P) without a path */
        pinned(rr, "log2timeline+plaso@df3d6f7+test_data_ips_files_stacks-2023-02-10-100716.ips", 0,
               209, 3, NULL);
        /* a panic: the kernel and its extensions (T) and the 'P' images */
        pinned(rr, "doronz88+pycrashreport+tests_kernel_mode_crash_report_ios16_forceReset-full"
                   ".ips",
               0, 19, 24, NULL);
    }
    if (rep) {
        /* MetricKit: no paths; the shared region tells the OS's */
        pinned(rep, "ChimeHQ+Meter@2d5c5c2+Tests_MeterTests_Resources_real_report.json", 0, 1, 9,
               mk);
        pinned(rep, "getsentry+sentry-cocoa@c34c99b+Tests_Resources_MetricKitCallstacks_tree-real"
                    ".json",
               0, 2, 9, sentry);
    }
}

/* KSCrash JSON reports (parser/crash_kscrash.c): every KSCrash file of
 * ../shared/reporters read with the frame count its MANIFEST.tsv gives, the
 * crashed thread, exception, images, recrash and kept fields; the generated
 * twin (fixtures/crashes/bigapp-twin.kscrash.json) frame for frame like
 * bigapp-twin.crash; detection that never takes an .ips or another JSON for
 * KSCrash; hostile inputs (a 4xx or warnings, never a crash or half a row). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../parser/crash.h"
#include "../util/dynbuf.h"
#include "test.h"

static crash_report parse_ok(const uint8_t *buf, size_t len, const char *what, bool *ok)
{
    crash_report r;
    symd_err err;
    symd_err_clear(&err);
    symd_status st = crash_parse(buf, len, &r, &err);
    CHECK(st == SYMD_OK, "%s: %s", what, err.msg);
    *ok = st == SYMD_OK;
    return r;
}

static symd_status parse_status(const char *s, size_t len, crash_report *r)
{
    symd_err err;
    symd_err_clear(&err);
    return crash_parse((const uint8_t *)s, len, r, &err);
}

static bool has_warning(const crash_report *r, const char *where_prefix, const char *msg_part)
{
    for (size_t i = 0; i < r->nwarnings; i++)
        if (!strncmp(r->warnings[i].where, where_prefix, strlen(where_prefix)) &&
            (!msg_part || strstr(r->warnings[i].message, msg_part)))
            return true;
    return false;
}

/* ---- the shared files ---- */

typedef struct {
    char file[200], kind[16];
    long frames;
} manifest_row;

static int load_manifest(const char *dir, manifest_row *rows, int max)
{
    char path[800];
    if (snprintf(path, sizeof path, "%s/MANIFEST.tsv", dir) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        char *col[12] = {0};
        int nc = 0;
        for (char *s = line, *t; nc < 12 && s; s = t) {
            t = strchr(s, '\t');
            if (t)
                *t++ = 0;
            col[nc++] = s;
        }
        if (nc < 10 || strcmp(col[4], "kscrash") != 0)
            continue;
        snprintf(rows[n].file, sizeof rows[n].file, "%s", col[0]);
        snprintf(rows[n].kind, sizeof rows[n].kind, "%s", col[7]);
        rows[n].frames = atol(col[9]);
        n++;
    }
    fclose(f);
    return n;
}

static const crash_thread *find_role(const crash_report *r, crash_thread_role role)
{
    for (size_t t = 0; t < r->nthreads; t++)
        if (r->threads[t].role == role)
            return &r->threads[t];
    return NULL;
}

TEST(kscrash_shared_files_frames_as_manifest)
{
    const char *dir = reporters_dir();
    if (!dir) {
        test_skip("../shared/reporters is absent: KSCrash reports not tested");
        return;
    }
    manifest_row rows[64];
    int n = load_manifest(dir, rows, 64);
    CHECK(n >= 10, "MANIFEST.tsv: %d kscrash rows", n);
    long want_total = 0, got_total = 0;
    int accepted = 0;
    for (int i = 0; i < n; i++) {
        char path[1200];
        if (snprintf(path, sizeof path, "%s/%s", dir, rows[i].file) >= (int)sizeof path)
            continue;
        size_t len;
        uint8_t *buf = read_file(path, &len);
        CHECK(buf, "read %s", path);
        if (!buf)
            continue;
        bool ok;
        crash_report r = parse_ok(buf, len, rows[i].file, &ok);
        if (ok) {
            accepted++;
            want_total += rows[i].frames;
            got_total += (long)r.total_frames;
            CHECK(r.format == CRASH_FORMAT_KSCRASH, "%s: format %d", rows[i].file, r.format);
            CHECK(strcmp(crash_kind_name(r.kind), rows[i].kind) == 0, "%s: kind %s, manifest %s",
                  rows[i].file, crash_kind_name(r.kind), rows[i].kind);
            CHECK((long)r.total_frames == rows[i].frames, "%s: %zu frames, manifest %ld",
                  rows[i].file, r.total_frames, rows[i].frames);
            CHECK(r.crashed_thread >= 0 && (size_t)r.crashed_thread < r.nthreads &&
                      r.threads[r.crashed_thread].crashed &&
                      r.threads[r.crashed_thread].nframes > 0,
                  "%s: crashed thread %ld", rows[i].file, r.crashed_thread);
            CHECK(r.incident_id && strlen(r.incident_id) == 36, "%s: incident", rows[i].file);
            CHECK(r.process && !strcmp(r.process, "Crash-Tester") && r.bundle_id &&
                      !strcmp(r.bundle_id, "org.stenerud.Crash-Tester") && r.app_version &&
                      !strcmp(r.app_version, "1.0 (1.0)"),
                  "%s: process %s", rows[i].file, r.process);
            CHECK(r.os_version && !strcmp(r.os_version, "iPhone OS 4.3.3 (8J2)"),
                  "%s: os %s", rows[i].file, r.os_version);
            CHECK(r.hardware_model && !strcmp(r.hardware_model, "iPhone3,1") && r.code_type &&
                      !strcmp(r.code_type, "ARM") && r.report_version &&
                      !strcmp(r.report_version, "KSCrash 2.0"),
                  "%s: model/code type/version", rows[i].file);
            CHECK(r.nimages > 100, "%s: %zu images", rows[i].file, r.nimages);
            size_t apps = 0;
            for (size_t m = 0; m < r.nimages; m++)
                if (r.images[m].is_app) {
                    apps++;
                    CHECK(r.images[m].has_uuid && r.images[m].name &&
                              !strcmp(r.images[m].name, "Crash-Tester") && r.images[m].arch &&
                              !strcmp(r.images[m].arch, "armv7") && r.images[m].has_end,
                          "%s: the app image", rows[i].file);
                }
            CHECK(apps == 1, "%s: %zu app images", rows[i].file, apps);
            /* every frame placed in an image, named as the device named it */
            size_t unplaced = 0, unnamed = 0;
            for (size_t t = 0; t < r.nthreads; t++)
                for (size_t f = 0; f < r.threads[t].nframes; f++) {
                    const crash_frame *fr = &r.threads[t].frames[f];
                    unplaced += fr->image < 0;
                    unnamed += !fr->symbol || !fr->has_symbol_offset;
                }
            CHECK(unplaced == 0 && unnamed == 0, "%s: %zu frames without image, %zu unnamed",
                  rows[i].file, unplaced, unnamed);
            CHECK(r.app_specific && strstr(r.app_specific, "\nuser: {"),
                  "%s: user data kept", rows[i].file);
            /* (the NSException report's crashed thread has no registers) */
            CHECK(strstr(rows[i].file, "_NSException.json")
                      ? r.nregisters == 0
                      : r.nregisters >= 17 && !strcmp(r.registers[0].name, "r0") &&
                            strlen(r.registers[0].value) == 10 &&
                            !strcmp(r.registers[r.nregisters - 1].name, "fsr"),
                  "%s: registers", rows[i].file);
            if (strcmp(rows[i].kind, "hang") == 0)
                CHECK(r.termination && strstr(r.termination, "deadlock") && !r.exception_type,
                      "%s: deadlock", rows[i].file);
            else
                CHECK(r.exception_type && r.exception_signal && r.exception_codes,
                      "%s: exception", rows[i].file);
        }
        /* one file's particulars */
        if (ok && strstr(rows[i].file, "_NSException.json")) {
            CHECK(!strcmp(r.exception_type, "EXC_CRASH") && !strcmp(r.exception_signal, "SIGABRT"),
                  "NSException: %s (%s)", r.exception_type, r.exception_signal);
            CHECK(r.app_specific &&
                      !strncmp(r.app_specific,
                               "*** Terminating app due to uncaught exception "
                               "'NSInvalidArgumentException', reason: '-[__NSArrayI "
                               "objectForKey:]: unrecognized selector",
                               100) &&
                      strstr(r.app_specific, "CrashDoctor Diagnosis: Application threw"),
                  "NSException app_specific: %.200s", r.app_specific);
            CHECK(strstr(r.app_specific, "crash.error.nsexception.referenced_object: {"),
                  "NSException: referenced_object kept");
        }
        if (ok && strstr(rows[i].file, "_BadPointer.json")) {
            const crash_frame *f0 = &r.threads[r.crashed_thread].frames[0];
            CHECK(f0->address == 0x5b720 && f0->symbol &&
                      !strcmp(f0->symbol, "-[Crasher dereferenceBadPointer]") &&
                      f0->symbol_offset == 24 && f0->has_load && f0->load_address == 0x54000 &&
                      f0->image_name && !strcmp(f0->image_name, "Crash-Tester") &&
                      r.images[f0->image].is_app,
                  "BadPointer frame 0: 0x%llx %s", (unsigned long long)f0->address, f0->symbol);
            CHECK(!strcmp(r.exception_codes, "KERN_INVALID_ADDRESS at 0xffffffff"),
                  "BadPointer codes: %s", r.exception_codes);
            CHECK(strstr(r.app_specific, "crash.threads[0].notable_addresses: {"),
                  "BadPointer: notable addresses kept");
        }
        if (ok && strstr(rows[i].file, "_CrashInHandler.json")) {
            const crash_thread *rc = find_role(&r, CRASH_THREAD_RECRASH);
            CHECK(rc && rc->nframes == 9 && rc->title && strstr(rc->title, "Recrash") &&
                      !rc->crashed,
                  "CrashInHandler: recrash thread");
            CHECK(has_warning(&r, "recrash_report", "crash inside the crash handler") &&
                      has_warning(&r, "incomplete", NULL),
                  "CrashInHandler: warnings");
            CHECK(strstr(r.app_specific, "Recrash (crash inside the crash handler): "
                                         "EXC_BAD_ACCESS (SIGBUS), KERN_PROTECTION_FAILURE"),
                  "CrashInHandler: recrash line: %.400s", r.app_specific);
            CHECK(!strcmp(r.exception_type, "EXC_BAD_ACCESS"), "first crash kept first");
        }
        if (ok && strstr(rows[i].file, "_StackOverflow.json"))
            CHECK(has_warning(&r, "crash.threads[0].backtrace.skipped", "64862"),
                  "StackOverflow: skipped frames warned");
        if (ok)
            crash_report_free(&r);
        free(buf);
    }
    printf("    kscrash: %d/%d files accepted, %ld/%ld frames as the manifest\n", accepted, n,
           got_total, want_total);
}

/* The MetricKit and PLCrash files beside them are never taken for KSCrash. */
TEST(kscrash_detection_is_specific)
{
    const char *dir = reporters_dir();
    DIR *d = dir ? opendir(dir) : NULL;
    int seen = 0;
    while (d) {
        struct dirent *de = readdir(d);
        if (!de)
            break;
        if (de->d_name[0] == '.' || strstr(de->d_name, "KSCrash") ||
            strstr(de->d_name, ".md") || strstr(de->d_name, ".tsv"))
            continue;
        char path[1200];
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path)
            continue;
        size_t len;
        uint8_t *buf = read_file(path, &len);
        if (!buf)
            continue;
        crash_report r;
        symd_err err;
        symd_err_clear(&err);
        if (crash_parse(buf, len, &r, &err) == SYMD_OK) {
            CHECK(r.format != CRASH_FORMAT_KSCRASH, "%s taken for KSCrash", de->d_name);
            crash_report_free(&r);
        }
        seen++;
        free(buf);
    }
    if (d)
        closedir(d);
    /* an .ips is an .ips */
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/bigapp-twin.ips", &len);
    if (buf) {
        bool ok;
        crash_report r = parse_ok(buf, len, "bigapp-twin.ips", &ok);
        CHECK(ok && r.format == CRASH_FORMAT_IPS, "the .ips twin: format %d", r.format);
        if (ok)
            crash_report_free(&r);
        free(buf);
    }
    /* JSON with a part of KSCrash's shape only */
    static const char *const not_ks[] = {
        "{\"report\": {\"id\": \"x\"}, \"crash\": {}}",                   /* no version */
        "{\"report\": {\"version\": \"3\"}, \"crash\": {}}",              /* no id */
        "{\"report\": {\"id\": \"x\", \"version\": \"3\"}}",              /* nothing else */
        "{\"report\": \"x\", \"crash\": {}, \"system\": {}}",
        "{\"crashDiagnostics\": [], \"report\": {}}",
        "[{\"report\": {\"id\": \"x\"}, \"crash\": {}}, {}]", /* an array of none */
    };
    for (size_t i = 0; i < sizeof not_ks / sizeof *not_ks; i++) {
        crash_report r;
        symd_status st = parse_status(not_ks[i], strlen(not_ks[i]), &r);
        CHECK(st == SYMD_E_NOT_CRASH_REPORT, "not KSCrash %zu: status %d", i, st);
        if (st == SYMD_OK)
            crash_report_free(&r);
    }
    /* an array of KSCrash reports (KSCrash's standard sink) is one part each */
    static const char arr[] = "[{\"report\": {\"id\": \"x\", \"version\": \"3\"}, \"crash\": {}},"
                              " 7, {\"report\": {\"id\": \"y\", \"version\": \"3\"}, \"system\": {}}]";
    crash_report *all = NULL;
    size_t n = 0;
    symd_err err = {0};
    CHECK(crash_parse_all((const uint8_t *)arr, sizeof arr - 1, &all, &n, &err) == SYMD_OK &&
              n == 2 && all[0].format == CRASH_FORMAT_KSCRASH && all[1].part == 1 &&
              all[1].nparts == 2,
          "an array of two KSCrash reports and a number: %zu parts (%s)", n, err.msg);
    crash_reports_free(all, n);
    (void)seen;
}

/* ---- the generated twin ---- */

/* bigapp-twin.kscrash.json reads as bigapp-twin.crash: the same frames
 * (address, image UUID, load address) thread for thread, the same
 * exception, registers and images. */
TEST(kscrash_twin_reads_like_the_crash_twin)
{
    size_t la, lb;
    uint8_t *a = read_fixture("fixtures/crashes/bigapp-twin.crash", &la);
    uint8_t *b = read_fixture("fixtures/crashes/bigapp-twin.kscrash.json", &lb);
    if (!a || !b) {
        free(a);
        free(b);
        return;
    }
    bool oka, okb;
    crash_report ra = parse_ok(a, la, "bigapp-twin.crash", &oka);
    crash_report rb = parse_ok(b, lb, "bigapp-twin.kscrash.json", &okb);
    if (oka && okb) {
        CHECK(rb.format == CRASH_FORMAT_KSCRASH && rb.kind == CRASH_KIND_CRASH, "format");
        CHECK(rb.nwarnings == 0, "%zu warnings, first %s: %s", rb.nwarnings,
              rb.nwarnings ? rb.warnings[0].where : "", rb.nwarnings ? rb.warnings[0].message : "");
        CHECK(!strcmp(rb.incident_id, ra.incident_id) && !strcmp(rb.exception_type, "EXC_BAD_ACCESS") &&
                  !strcmp(rb.exception_signal, "SIGSEGV") &&
                  !strcmp(rb.exception_codes, "KERN_INVALID_ADDRESS at 0x0000000000000000") &&
                  !strcmp(rb.code_type, "ARM-64") && !strcmp(rb.os_version, "iOS 15.3 (19D50)") &&
                  !strcmp(rb.date, "2022-03-01 12:00:00.000000 +0000"),
              "header: %s %s %s %s", rb.exception_type, rb.exception_codes, rb.code_type, rb.date);
        CHECK(rb.crashed_thread == 0 && ra.crashed_thread == 0, "crashed thread");
        CHECK(rb.nthreads == ra.nthreads + 1 && rb.threads[2].nframes == 0 &&
                  rb.threads[2].name && strstr(rb.threads[2].name, "KSCrash"),
              "threads: %zu vs %zu", rb.nthreads, ra.nthreads);
        for (size_t t = 0; t < ra.nthreads && t < rb.nthreads; t++) {
            CHECK(ra.threads[t].nframes == rb.threads[t].nframes, "thread %zu: %zu vs %zu frames",
                  t, ra.threads[t].nframes, rb.threads[t].nframes);
            for (size_t f = 0; f < ra.threads[t].nframes && f < rb.threads[t].nframes; f++) {
                const crash_frame *x = &ra.threads[t].frames[f], *y = &rb.threads[t].frames[f];
                CHECK(x->address == y->address && x->load_address == y->load_address &&
                          y->image >= 0 && y->symbol && y->has_symbol_offset &&
                          !memcmp(ra.images[x->image].uuid, rb.images[y->image].uuid, 16),
                      "thread %zu frame %zu", t, f);
            }
        }
        /* the same, and esr, which the .crash twin does not write */
        CHECK(rb.nregisters == ra.nregisters + 1 &&
                  !strcmp(rb.registers[rb.nregisters - 1].name, "esr") &&
                  !strcmp(rb.registers[rb.nregisters - 1].value, "0x92000006"),
              "registers %zu vs %zu", rb.nregisters, ra.nregisters);
        for (size_t i = 0; i < ra.nregisters && i < rb.nregisters; i++)
            CHECK(!strcmp(ra.registers[i].name, rb.registers[i].name) &&
                      !strcmp(ra.registers[i].value, rb.registers[i].value),
                  "register %zu: %s=%s vs %s=%s", i, ra.registers[i].name, ra.registers[i].value,
                  rb.registers[i].name, rb.registers[i].value);
        CHECK(rb.nimages == ra.nimages, "images %zu vs %zu", rb.nimages, ra.nimages);
        CHECK(rb.app_specific && strstr(rb.app_specific, "user: {\"build\": \"twin\""),
              "user kept: %s", rb.app_specific);
    }
    if (oka)
        crash_report_free(&ra);
    if (okb)
        crash_report_free(&rb);
    free(a);
    free(b);
}

/* ---- hostile inputs ---- */

static const char KS_HEAD[] =
    "{\"report\": {\"id\": \"0F0F0F0F-0000-4000-8000-000000000001\", \"version\": \"3.0.0\"}, "
    "\"system\": {\"cpu_arch\": \"arm64\"}, "
    "\"binary_images\": [{\"image_addr\": 4294967296, \"image_size\": 16384, \"name\": "
    "\"/a/App\", \"uuid\": \"4C4C4490-5555-3144-A17C-64A339EDE13A\", \"cpu_type\": 16777228, "
    "\"cpu_subtype\": 0}]";

/* KS_HEAD, then tail (with its leading comma), then "}". */
static char *doc(const char *tail)
{
    size_t n = strlen(KS_HEAD) + strlen(tail) + 2;
    char *s = malloc(n);
    snprintf(s, n, "%s%s}", KS_HEAD, tail);
    return s;
}

TEST(kscrash_hostile_fields)
{
    static const struct {
        const char *tail, *where, *msg;
    } cases[] = {
        /* offsets past an image */
        {", \"crash\": {\"threads\": [{\"index\": 0, \"crashed\": true, \"backtrace\": "
         "{\"contents\": [{\"instruction_addr\": 4295032832, \"object_addr\": 4294967296}]}}]}",
         "crash.threads[0].backtrace.contents[0]", "lies outside its image"},
        /* an object_addr that is no image */
        {", \"crash\": {\"threads\": [{\"backtrace\": {\"contents\": [{\"instruction_addr\": 5, "
         "\"object_addr\": 7}]}}]}",
         "crash.threads[0].backtrace.contents[0]", "no binary image's image_addr"},
        /* addresses of the wrong type or size */
        {", \"crash\": {\"threads\": [{\"backtrace\": {\"contents\": [{\"instruction_addr\": -1}, "
         "{\"instruction_addr\": 99999999999999999999999}, {\"instruction_addr\": \"0x10\"}]}}]}",
         "crash.threads[0].backtrace.contents[1]", "frame skipped"},
        {", \"crash\": {\"threads\": [{\"backtrace\": {\"contents\": [{\"instruction_addr\": 16, "
         "\"symbol_addr\": 32, \"symbol_name\": \"f\"}]}}]}",
         "crash.threads[0].backtrace.contents[0].symbol_addr", "past instruction_addr"},
        {", \"crash\": {\"threads\": 5}", "crash.threads", "not an array"},
        {", \"crash\": {\"threads\": [7, {\"backtrace\": \"x\"}]}", "crash.threads[0]",
         "an empty thread"},
        {", \"crash\": {\"error\": {\"mach\": [1]}}", "crash.error.mach", "not an object"},
        {", \"crash\": {\"error\": {\"type\": \"mach\", \"something_new\": 1}}",
         "crash.error.something_new", "does not read"},
        {", \"brand_new\": {\"a\": 1}", "brand_new", "does not read"},
        {", \"recrash_report\": 5", "recrash_report", "not an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *s = doc(cases[i].tail);
        crash_report r;
        symd_status st = parse_status(s, strlen(s), &r);
        CHECK(st == SYMD_OK, "case %zu: status %d", i, st);
        if (st == SYMD_OK) {
            CHECK(r.format == CRASH_FORMAT_KSCRASH, "case %zu: format", i);
            CHECK(has_warning(&r, cases[i].where, cases[i].msg), "case %zu: no warning %s: %s",
                  i, cases[i].where, cases[i].msg);
            crash_report_free(&r);
        }
        free(s);
    }
    /* 64-bit addresses exact, past an image: kept, no image */
    char *s = doc(", \"crash\": {\"threads\": [{\"crashed\": true, \"backtrace\": {\"contents\": "
                  "[{\"instruction_addr\": 18446744073709551615, \"object_addr\": 4294967296, "
                  "\"symbol_name\": \"x\", \"symbol_addr\": 18446744073709551600}]}}]}");
    crash_report r;
    CHECK(parse_status(s, strlen(s), &r) == SYMD_OK, "max address");
    CHECK(r.total_frames == 1 && r.threads[0].frames[0].address == UINT64_MAX &&
              r.threads[0].frames[0].image == -1 && r.threads[0].frames[0].symbol_offset == 15,
          "max address frame");
    crash_report_free(&r);
    free(s);
}

/* Sizes: one line past 64 KiB reads; a field repeated past the limits is a
 * 413 or a warning; nesting deeper than shown is warned. */
TEST(kscrash_hostile_sizes)
{
    /* minified on one line, over CRASH_MAX_LINE */
    dynbuf b;
    dynbuf_init(&b, 64u << 20);
    dynbuf_add(&b, KS_HEAD, strlen(KS_HEAD));
    const char *t = ", \"crash\": {\"threads\": [{\"crashed\": true, \"backtrace\": {\"contents\": [";
    dynbuf_add(&b, t, strlen(t));
    for (int i = 0; i < 3000; i++) {
        char fr[128];
        int n = snprintf(fr, sizeof fr, "%s{\"instruction_addr\": %lld, \"object_addr\": 4294967296}",
                         i ? "," : "", 4294967296ll + 16 + i);
        dynbuf_add(&b, fr, (size_t)n);
    }
    dynbuf_add(&b, "]}}]}}", 6);
    crash_report r;
    CHECK(b.len > 65536, "one line of %zu bytes", b.len);
    CHECK(parse_status((char *)b.data, b.len, &r) == SYMD_OK, "a long line");
    CHECK(r.total_frames == 3000 && r.threads[0].frames[2999].image == 0, "3000 frames: %zu",
          r.total_frames);
    crash_report_free(&r);
    dynbuf_free(&b);

    /* frames past CRASH_MAX_FRAMES: 413, nothing half kept */
    dynbuf_init(&b, 64u << 20);
    dynbuf_add(&b, KS_HEAD, strlen(KS_HEAD));
    dynbuf_add(&b, t, strlen(t));
    for (int i = 0; i < CRASH_MAX_FRAMES + 10; i++)
        dynbuf_add(&b, i ? ",{\"instruction_addr\": 1}" : "{\"instruction_addr\": 1}",
                   i ? 24 : 23);
    dynbuf_add(&b, "]}}]}}", 6);
    memset(&r, 0, sizeof r);
    CHECK(parse_status((char *)b.data, b.len, &r) == SYMD_E_TOO_LARGE, "too many frames");
    CHECK(r.nthreads == 0 && r.threads == NULL, "nothing kept");
    dynbuf_free(&b);

    /* a million unknown fields: parsed, warnings counted, kept text bounded */
    dynbuf_init(&b, 64u << 20);
    dynbuf_add(&b, KS_HEAD, strlen(KS_HEAD));
    dynbuf_add(&b, ", \"crash\": {", 12);
    for (int i = 0; i < 1000000; i++) {
        char kv[40];
        int n = snprintf(kv, sizeof kv, "%s\"k%d\": 1", i ? "," : "", i);
        dynbuf_add(&b, kv, (size_t)n);
    }
    dynbuf_add(&b, "}}", 2);
    CHECK(parse_status((char *)b.data, b.len, &r) == SYMD_OK, "a million fields");
    CHECK(r.nwarnings == CRASH_MAX_WARNINGS && r.nwarnings_dropped > 900000 &&
              r.app_specific && strlen(r.app_specific) <= (2u << 20),
          "warnings %zu + %zu", r.nwarnings, r.nwarnings_dropped);
    crash_report_free(&r);
    dynbuf_free(&b);

    /* the same key a million times: one value */
    dynbuf_init(&b, 64u << 20);
    dynbuf_add(&b, KS_HEAD, strlen(KS_HEAD));
    dynbuf_add(&b, ", \"crash\": {\"dup\": {", 20);
    for (int i = 0; i < 1000000; i++)
        dynbuf_add(&b, i ? ",\"a\": 1" : "\"a\": 1", i ? 7 : 6);
    dynbuf_add(&b, "}}}", 3);
    CHECK(parse_status((char *)b.data, b.len, &r) == SYMD_OK, "a key a million times");
    CHECK(r.app_specific && strstr(r.app_specific, "crash.dup: {\"a\": 1}") &&
              has_warning(&r, "crash.dup", "does not read"),
          "dup: %.80s", r.app_specific);
    crash_report_free(&r);
    dynbuf_free(&b);

    /* a big value of a key only kept (user): skipped unread, said */
    dynbuf_init(&b, 64u << 20);
    dynbuf_add(&b, KS_HEAD, strlen(KS_HEAD));
    dynbuf_add(&b, ", \"user\": \"", 11);
    for (int i = 0; i < 300000; i++)
        dynbuf_add(&b, "x", 1);
    dynbuf_add(&b, "\"}", 2);
    CHECK(parse_status((char *)b.data, b.len, &r) == SYMD_OK, "a big user value");
    CHECK(has_warning(&r, "user", "skipped unread") && r.app_specific &&
              strstr(r.app_specific, "user: (300002 bytes, not read"),
          "big user: %.200s", r.app_specific);
    crash_report_free(&r);
    dynbuf_free(&b);

    /* deep nesting under user */
    dynbuf_init(&b, 64u << 20);
    dynbuf_add(&b, KS_HEAD, strlen(KS_HEAD));
    dynbuf_add(&b, ", \"user\": ", 10);
    for (int i = 0; i < 1500; i++)
        dynbuf_add(&b, "{\"a\":", 5);
    dynbuf_add(&b, "1", 1);
    for (int i = 0; i < 1500; i++)
        dynbuf_add(&b, "}", 1);
    dynbuf_add(&b, "}", 1);
    CHECK(parse_status((char *)b.data, b.len, &r) == SYMD_OK, "deep nesting");
    CHECK(has_warning(&r, "body", "nests deeper"), "deep nesting warned");
    crash_report_free(&r);
    dynbuf_free(&b);
}

/* Every input a fuzzer once crashed the KSCrash reader on: parsed or
 * refused, never a crash. */
static void replay(const char *rel, const uint8_t *buf, size_t len)
{
    crash_report r;
    symd_err err;
    symd_err_clear(&err);
    symd_status st = crash_parse(buf, len, &r, &err);
    CHECK(st == SYMD_OK || st == SYMD_E_NOT_CRASH_REPORT || st == SYMD_E_TOO_LARGE,
          "%s: status %d", rel, st);
    if (st == SYMD_OK)
        crash_report_free(&r);
}

TEST(kscrash_fuzz_regressions)
{
    CHECK(each_regression("kscrash-", replay) >= 0, "fuzz/regress missing");
}

/* KSCrash's own Apple-format rendering of the same reports
 * (../shared/real-crashes/kscrash-*.crash, ../shared/real-reports/
 * *KSCrash*.txt, read by the text parser) and the JSON read here agree:
 * every thread's frames (number and address), the exception type and
 * signal, the images (load addresses) and the crashed thread's registers. */
TEST(kscrash_json_agrees_with_kscrash_text)
{
    static const char *const names[] = {"Abort", "BadPointer", "NSException", "StackOverflow",
                                        "Zombie", "CorruptObject", "MainThreadDeadlock"};
    const char *rep = reporters_dir(), *rc = real_crashes_dir(), *rr = real_reports_dir();
    if (!rep || !rc || !rr) {
        test_skip("../shared is absent: KSCrash text renderings not compared");
        return;
    }
    int compared = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char jp[1200], tp[1200];
        snprintf(jp, sizeof jp, "%s/kstenerud+KSCrash@62039fc+Example-Reports_%s.json", rep,
                 names[i]);
        if (i < 5)
            snprintf(tp, sizeof tp, "%s/kscrash-%s.crash", rc, names[i]);
        else
            snprintf(tp, sizeof tp, "%s/kstenerud+KSCrash+Example-Reports_%s.txt", rr, names[i]);
        size_t jl, tl;
        uint8_t *jb = read_file(jp, &jl), *tb = read_file(tp, &tl);
        if (!jb || !tb) {
            free(jb);
            free(tb);
            continue;
        }
        bool okj, okt;
        crash_report j = parse_ok(jb, jl, jp, &okj), t = parse_ok(tb, tl, tp, &okt);
        if (okj && okt) {
            compared++;
            size_t threads = 0;
            for (size_t a = 0; a < t.nthreads; a++) {
                const crash_thread *tt = &t.threads[a];
                if (tt->role != CRASH_THREAD_NORMAL)
                    continue;
                const crash_thread *jt = NULL;
                for (size_t b = 0; b < j.nthreads && !jt; b++)
                    if (j.threads[b].role == CRASH_THREAD_NORMAL &&
                        j.threads[b].number == tt->number)
                        jt = &j.threads[b];
                CHECK(jt && jt->nframes == tt->nframes && jt->crashed == tt->crashed,
                      "%s: thread %ld", names[i], tt->number);
                for (size_t f = 0; jt && f < tt->nframes && f < jt->nframes; f++)
                    CHECK(jt->frames[f].address == tt->frames[f].address &&
                              jt->frames[f].load_address == tt->frames[f].load_address,
                          "%s: thread %ld frame %zu: 0x%llx vs 0x%llx", names[i], tt->number, f,
                          (unsigned long long)jt->frames[f].address,
                          (unsigned long long)tt->frames[f].address);
                threads++;
            }
            CHECK(threads > 0, "%s: no threads compared", names[i]);
            if (t.exception_type && t.exception_type[0] != '0') /* a deadlock: "0 (0)" */
                /* (the text parser keeps "EXC_CRASH (SIGABRT)" whole) */
                CHECK(j.exception_type && !strncmp(t.exception_type, j.exception_type,
                                                   strlen(j.exception_type)) &&
                          j.exception_signal && !strcmp(j.exception_signal, t.exception_signal),
                      "%s: exception %s (%s) vs %s (%s)", names[i], j.exception_type,
                      j.exception_signal, t.exception_type, t.exception_signal);
            CHECK(j.nimages == t.nimages, "%s: %zu vs %zu images", names[i], j.nimages,
                  t.nimages);
            for (size_t m = 0; m < t.nimages && m < j.nimages; m++)
                CHECK(j.images[m].load_address == t.images[m].load_address &&
                          j.images[m].end_address == t.images[m].end_address &&
                          !memcmp(j.images[m].uuid, t.images[m].uuid, 16),
                      "%s: image %zu", names[i], m);
            /* (KSCrash prints zeros for a thread the JSON gives no registers) */
            for (size_t g = 0; j.nregisters && g < t.nregisters; g++) {
                bool found = false;
                for (size_t h = 0; h < j.nregisters && !found; h++)
                    found = !strcmp(j.registers[h].name, t.registers[g].name) &&
                            !strcmp(j.registers[h].value, t.registers[g].value);
                CHECK(found, "%s: register %s=%s", names[i], t.registers[g].name,
                      t.registers[g].value);
            }
        }
        if (okj)
            crash_report_free(&j);
        if (okt)
            crash_report_free(&t);
        free(jb);
        free(tb);
    }
    CHECK(compared == 7, "%d of 7 compared", compared);
}

/* parser/crash_metrickit.c: MetricKit payloads, diagnostics, call-stack trees
 * and App Store Connect diagnostic logs into one crash model per diagnostic. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../parser/crash.h"
#include "../util/hex.h"
#include "test.h"

static symd_status parse_all_str(const char *s, size_t n, crash_report **rs, size_t *nr,
                                 symd_err *err)
{
    symd_err_clear(err);
    return crash_parse_all((const uint8_t *)s, n, rs, nr, err);
}

static bool has_warning(const crash_report *r, const char *needle)
{
    for (size_t i = 0; i < r->nwarnings; i++)
        if (strstr(r->warnings[i].message, needle))
            return true;
    return false;
}

static const crash_metric *metric(const crash_report *r, const char *name)
{
    for (size_t i = 0; i < r->nmetrics; i++)
        if (!strcmp(r->metrics[i].name, name))
            return &r->metrics[i];
    return NULL;
}

/* ---- the real payloads ---- */

TEST(metrickit_real_payloads_match_the_manifest)
{
    const char *dir = reporters_dir();
    if (!dir) {
        test_skip("no ../shared/reporters");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/MANIFEST.tsv", dir);
    size_t mlen;
    char *man = (char *)read_file(path, &mlen);
    CHECK(man != NULL, "MANIFEST.tsv");
    if (!man)
        return;
    int files = 0;
    for (char *line = strtok(man, "\n"); line; line = strtok(NULL, "\n")) {
        char *col[11] = {0};
        int nc = 0;
        for (char *c = line; nc < 11;) {
            col[nc++] = c;
            char *t = strchr(c, '\t');
            if (!t)
                break;
            *t = 0;
            c = t + 1;
        }
        if (nc < 10 || strcmp(col[4], "metrickit") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, col[0]);
        size_t len;
        uint8_t *buf = read_file(path, &len);
        CHECK(buf != NULL, "%s: read", col[0]);
        if (!buf)
            continue;
        files++;
        crash_report *rs = NULL;
        size_t nr = 0;
        symd_err err;
        symd_err_clear(&err);
        symd_status st = crash_parse_all(buf, len, &rs, &nr, &err);
        CHECK(st == SYMD_OK, "%s: parses (%s)", col[0], err.msg);
        if (st) {
            free(buf);
            continue;
        }
        size_t want_diags = strtoul(col[8], NULL, 10), want_frames = strtoul(col[9], NULL, 10);
        size_t frames = 0;
        for (size_t i = 0; i < nr; i++) {
            frames += rs[i].total_frames;
            CHECK(rs[i].format == CRASH_FORMAT_METRICKIT && rs[i].part == i && rs[i].nparts == nr,
                  "%s: part %zu format/part", col[0], i);
        }
        CHECK(nr == want_diags, "%s: %zu reports, manifest %zu", col[0], nr, want_diags);
        CHECK(frames == want_frames, "%s: %zu frames, manifest %zu", col[0], frames, want_frames);
        const char *kind = col[7];
        if (strcmp(kind, "mixed") != 0)
            for (size_t i = 0; i < nr; i++)
                CHECK(!strcmp(crash_kind_name(rs[i].kind), kind), "%s: kind %s, manifest %s",
                      col[0], crash_kind_name(rs[i].kind), kind);
        bool meter14 = strstr(col[0], "real_report") || strstr(col[0], "uncaugh");
        bool sentry = strstr(col[0], "sentry") != NULL;
        for (size_t i = 0; i < nr; i++) {
            const crash_report *r = &rs[i];
            bool applied = has_warning(r, "load address as offsetIntoBinaryTextSegment");
            if (meter14) {
                CHECK(applied, "%s: the load-address rule applied with a warning", col[0]);
                CHECK(r->crashed_thread == 0 && r->threads[0].crashed, "%s: attributed thread",
                      col[0]);
                CHECK(r->exception_type && r->exception_signal && r->os_version &&
                          r->hardware_model && r->code_type && r->app_version && r->app_build,
                      "%s: metadata", col[0]);
            } else {
                CHECK(!applied, "%s: no load-address rule", col[0]);
            }
            if (meter14 || sentry) {
                /* innermost first: the last frame of every thread is the entry point */
                for (size_t t = 0; t < r->nthreads; t++) {
                    const crash_thread *th = &r->threads[t];
                    const char *last = th->frames[th->nframes - 1].image_name;
                    CHECK(last && (!strcmp(last, "libdyld.dylib") || !strcmp(last, "dyld") ||
                                   !strcmp(last, "libsystem_pthread.dylib")),
                          "%s: report %zu thread %zu ends in %s", col[0], i, t,
                          last ? last : "(null)");
                }
                CHECK(!has_warning(r, "orientation"), "%s: orientation seen", col[0]);
                /* every frame symbolicates as image + small offset */
                for (size_t t = 0; t < r->nthreads; t++)
                    for (size_t f = 0; f < r->threads[t].nframes; f++) {
                        const crash_frame *fr = &r->threads[t].frames[f];
                        CHECK(fr->image >= 0 && fr->has_load &&
                                  fr->load_address == r->images[fr->image].load_address &&
                                  fr->address - fr->load_address < (1u << 28),
                              "%s: frame %zu/%zu image + offset", col[0], t, f);
                    }
            }
        }
        if (meter14) {
            /* real_report: crash site in libswiftCore (first frame) */
            const crash_frame *f0 = &rs[0].threads[0].frames[0];
            CHECK(f0->image_name && (strstr(col[0], "uncaugh")
                                         ? !strcmp(f0->image_name, "MetricKitTest")
                                         : !strcmp(f0->image_name, "libswiftCore.dylib")),
                  "%s: crash site first (%s)", col[0], f0->image_name);
            if (!strstr(col[0], "uncaugh")) {
                CHECK(f0->address == 0x198e07fb0 && f0->load_address == 0x198dd7000,
                      "%s: address and load", col[0]);
                CHECK(rs[1].vm_region_info != NULL, "%s: VM region info", col[0]);
            }
        }
        if (sentry) {
            const crash_report *r = &rs[0];
            CHECK(r->kind == CRASH_KIND_CRASH && has_warning(r, "without its diagnostic"),
                  "sentry: a bare tree, kind guessed with a warning");
            const crash_frame *f0 = &r->threads[0].frames[0];
            CHECK(f0->image_name && !strcmp(f0->image_name, "Sentry") &&
                      f0->load_address == 0x10109c000 && f0->address == 0x10110140c,
                  "sentry: crash site Sentry + 0x6540c");
        }
        if (strstr(col[0], "macOS_13")) {
            CHECK(nr == 5, "macOS 13: 5 reports");
            /* payload order: diskWrite, hang, crash, cpu, launch */
            crash_kind want[5] = {CRASH_KIND_RESOURCE, CRASH_KIND_HANG, CRASH_KIND_CRASH,
                                  CRASH_KIND_RESOURCE, CRASH_KIND_LAUNCH};
            for (size_t i = 0; i < nr && i < 5; i++)
                CHECK(rs[i].kind == want[i], "macOS 13: report %zu kind %s", i,
                      crash_kind_name(rs[i].kind));
            const crash_metric *w = metric(&rs[0], "writesCaused");
            CHECK(w && w->unit == CRASH_UNIT_BYTES && w->amount == 2000, "writesCaused 2000 byte");
            const crash_metric *h = metric(&rs[1], "hangDuration");
            CHECK(h && h->unit == CRASH_UNIT_MS && h->amount == 20000, "hangDuration 20 sec");
            const crash_metric *l = metric(&rs[4], "launchDuration");
            CHECK(l && l->unit == CRASH_UNIT_MS && l->amount == 20000, "launchDuration 20000 ms");
            CHECK(rs[2].exception_type && !strcmp(rs[2].exception_type, "EXC_BAD_ACCESS (1)") &&
                      rs[2].exception_signal && !strcmp(rs[2].exception_signal, "SIGSEGV") &&
                      rs[2].termination && rs[2].bundle_id &&
                      !strcmp(rs[2].bundle_id, "com.chimehq.Edit"),
                  "macOS 13: crash metadata");
            CHECK(rs[3].nthreads == 1 && rs[3].threads[0].is_tree &&
                      rs[3].threads[0].frames[0].count == 20,
                  "macOS 13: the cpu tree is a sample tree");
        }
        if (strstr(col[0], "xcode_simulated.json")) {
            const crash_metric *h = metric(&rs[1], "hangDuration");
            CHECK(h && h->amount == 20000 && !strcmp(h->value, "20 secs."), "20 secs.");
            const crash_metric *w = metric(&rs[3], "writesCaused");
            CHECK(w && w->amount == 2000 && !strcmp(w->value, "2,000 byte"), "2,000 byte");
        }
        /* each part again alone */
        for (size_t i = 0; i < nr; i++) {
            crash_report one;
            symd_err_clear(&err);
            CHECK(crash_parse_part(buf, len, i, &one, &err) == SYMD_OK &&
                      one.total_frames == rs[i].total_frames && one.kind == rs[i].kind &&
                      one.part == i,
                  "%s: part %zu alone", col[0], i);
            crash_report_free(&one);
        }
        crash_report one;
        symd_err_clear(&err);
        CHECK(crash_parse_part(buf, len, nr, &one, &err) == SYMD_E_NOT_FOUND,
              "%s: past the last part", col[0]);
        /* crash_parse: the first, with a warning when there are more */
        symd_err_clear(&err);
        CHECK(crash_parse(buf, len, &one, &err) == SYMD_OK &&
                  one.total_frames == rs[0].total_frames &&
                  (nr == 1 || has_warning(&one, "diagnostics")),
              "%s: crash_parse", col[0]);
        crash_report_free(&one);
        crash_reports_free(rs, nr);
        free(buf);
    }
    free(man);
    CHECK(files == 6, "6 MetricKit files, %d read", files);
}

/* ---- orientation, trees and addresses ---- */

/* A chain as a JSON tree, frames[0] at the root. */
static char *chain_json(const char *const *names, const uint64_t *offs, size_t n, uint64_t load0)
{
    size_t cap = 256 + n * 256;
    char *s = malloc(cap);
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(s + o, cap - o,
                              "%s{\"binaryUUID\":\"%08zX-0000-0000-0000-000000000000\","
                              "\"binaryName\":\"%s\",\"offsetIntoBinaryTextSegment\":%" PRIu64
                              ",\"address\":%" PRIu64 ",\"sampleCount\":3,\"subFrames\":[",
                              i ? "" : "", (size_t)(names[i][0] == 'l'), names[i], offs[i], load0 + offs[i]);
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(s + o, cap - o, "]}");
    return s;
}

TEST(metrickit_orientation_both_ways_innermost_first)
{
    const char *names_in[3] = {"App", "App", "libdyld.dylib"};
    const char *names_out[3] = {"libdyld.dylib", "App", "App"};
    uint64_t offs_in[3] = {0x100, 0x200, 0x300}, offs_out[3] = {0x300, 0x200, 0x100};
    for (int way = 0; way < 2; way++) {
        char *c = chain_json(way ? names_out : names_in, way ? offs_out : offs_in, 3, 0x100000000);
        size_t cap = strlen(c) + 512;
        char *doc = malloc(cap);
        snprintf(doc, cap,
                 "{\"crashDiagnostics\":[{\"diagnosticMetaData\":{\"signal\":11},"
                 "\"callStackTree\":{\"callStackPerThread\":true,\"callStacks\":"
                 "[{\"threadAttributed\":true,\"callStackRootFrames\":[%s]}]}}]}",
                 c);
        crash_report *rs;
        size_t nr;
        symd_err err;
        CHECK(parse_all_str(doc, strlen(doc), &rs, &nr, &err) == SYMD_OK && nr == 1,
              "way %d parses", way);
        if (nr == 1) {
            const crash_thread *th = &rs[0].threads[0];
            CHECK(th->nframes == 3 && th->frames[0].address == 0x100000100 &&
                      th->frames[2].address == 0x100000300 &&
                      !strcmp(th->frames[2].image_name, "libdyld.dylib"),
                  "way %d: innermost first", way);
            CHECK(!has_warning(&rs[0], "orientation") && th->crashed &&
                      rs[0].crashed_thread == 0,
                  "way %d: no warning, crashed", way);
            crash_reports_free(rs, nr);
        }
        free(doc);
        free(c);
    }
}

TEST(metrickit_inverted_sample_tree_is_turned_over)
{
    /* roots innermost: A (leaf-most) called from B called from start, 5
     * samples; C called from B, 2 samples */
    const char *doc =
        "{\"cpuExceptionDiagnostics\":[{\"diagnosticMetaData\":{\"totalCPUTime\":\"9 sec\"},"
        "\"callStackTree\":{\"callStackPerThread\":false,\"callStacks\":[{"
        "\"callStackRootFrames\":["
        "{\"binaryName\":\"App\",\"offsetIntoBinaryTextSegment\":16,\"sampleCount\":5,"
        "\"subFrames\":[{\"binaryName\":\"App\",\"offsetIntoBinaryTextSegment\":32,"
        "\"sampleCount\":5,\"subFrames\":[{\"binaryName\":\"libdyld.dylib\","
        "\"offsetIntoBinaryTextSegment\":48,\"sampleCount\":5}]}]},"
        "{\"binaryName\":\"App\",\"offsetIntoBinaryTextSegment\":64,\"sampleCount\":2,"
        "\"subFrames\":[{\"binaryName\":\"App\",\"offsetIntoBinaryTextSegment\":32,"
        "\"sampleCount\":2,\"subFrames\":[{\"binaryName\":\"libdyld.dylib\","
        "\"offsetIntoBinaryTextSegment\":48,\"sampleCount\":2}]}]}]}]}}]}";
    crash_report *rs;
    size_t nr;
    symd_err err;
    CHECK(parse_all_str(doc, strlen(doc), &rs, &nr, &err) == SYMD_OK && nr == 1, "parses");
    if (nr != 1)
        return;
    const crash_thread *th = &rs[0].threads[0];
    /* start(7) > B(7) > {A(5), C(2)} */
    CHECK(th->is_tree && th->nframes == 4 && th->count == 7, "one merged tree of 4 (%zu)",
          th->nframes);
    if (th->nframes == 4) {
        CHECK(th->frames[0].depth == 0 && th->frames[0].address == 48 &&
                  th->frames[0].count == 7,
              "start at the root");
        CHECK(th->frames[1].depth == 1 && th->frames[1].address == 32 && th->frames[1].count == 7,
              "B");
        CHECK(th->frames[2].depth == 2 && th->frames[2].address == 16 && th->frames[2].count == 5,
              "A");
        CHECK(th->frames[3].depth == 2 && th->frames[3].address == 64 && th->frames[3].count == 2,
              "C");
    }
    CHECK(rs[0].kind == CRASH_KIND_RESOURCE && metric(&rs[0], "totalCPUTime")->amount == 9000,
          "cpu");
    crash_reports_free(rs, nr);
}

TEST(metrickit_asc_diagnostic_logs)
{
    const char *doc =
        "{\"productData\":[{\"signatureId\":\"abc\",\"diagnosticInsights\":[{\"insightsString\":"
        "\"spill\"}],\"diagnosticLogs\":[{\"diagnosticMetaData\":{\"event\":\"disk writes\","
        "\"osVersion\":\"iPhone OS 14.6 (18F72)\",\"appVersion\":\"6.10.1\",\"buildVersion\":"
        "\"77\",\"writesCaused\":\"1073.76 MB\",\"bundleId\":\"com.x\",\"eventDetail\":\"Total\"},"
        "\"callStackTree\":[{\"callStackPerThread\":true,\"callStacks\":[{\"callStackRootFrames\":"
        "[{\"offsetIntoBinaryTextSegment\":\"\",\"symbolName\":\"start\",\"address\":\"0x19f7cda84\","
        "\"binaryUUID\":\"DAF30062-4C85-3B92-B159-50602A0C9D96\",\"binaryName\":\"dyld\","
        "\"lineNumber\":\"1466\",\"sampleCount\":51,\"fileName\":\"init.c\",\"isBlameFrame\":false,"
        "\"subFrames\":[{\"offsetIntoBinaryTextSegment\":\"0x8b74\",\"offsetIntoSymbol\":\"112\","
        "\"symbolName\":\"+[T update]\",\"address\":\"0x102f48b74\",\"binaryUUID\":"
        "\"2BE5B0BD-0977-3220-B5CB-EBDB66DC3200\",\"isBlameFrame\":true,\"binaryName\":\"App\","
        "\"lineNumber\":\"2381\",\"fileName\":\"T.m\",\"sampleCount\":51}]}]}]}]},"
        "{\"diagnosticMetaData\":{\"event\":\"hang\"},\"callStackTree\":[]}]}]}";
    crash_report *rs;
    size_t nr;
    symd_err err;
    symd_status st = parse_all_str(doc, strlen(doc), &rs, &nr, &err);
    CHECK(st == SYMD_OK && nr == 2, "two logs (%s)", err.msg);
    if (st || nr != 2)
        return;
    const crash_report *r = &rs[0];
    CHECK(r->format == CRASH_FORMAT_ASC && r->kind == CRASH_KIND_RESOURCE &&
              rs[1].kind == CRASH_KIND_HANG,
          "format and kinds");
    CHECK(r->nthreads == 1 && r->threads[0].nframes == 2 && r->threads[0].crashed &&
              r->crashed_thread == 0,
          "blame frame: the crashed thread");
    const crash_frame *f0 = &r->threads[0].frames[0];
    CHECK(f0->symbol && !strcmp(f0->symbol, "+[T update]") && f0->file &&
              !strcmp(f0->file, "T.m") && f0->line == 2381 && f0->has_symbol_offset &&
              f0->symbol_offset == 112,
          "innermost first, symbol, file, line");
    CHECK(f0->address == 0x102f48b74 && f0->load_address == 0x102f40000 && f0->image >= 0,
          "image + offset");
    CHECK(r->threads[0].frames[1].image == -1 && has_warning(r, "not looked up"),
          "address without offset: not looked up, warned");
    CHECK(metric(r, "writesCaused")->amount == 1073760000ull && r->app_build &&
              !strcmp(r->app_build, "77") && r->bundle_id && metric(r, "signatureId") &&
              metric(r, "insight"),
          "metadata");
    crash_reports_free(rs, nr);
}

/* ---- hostile ---- */

static char *deep_tree(size_t depth)
{
    static const char open[] = "{\"binaryName\":\"a\",\"offsetIntoBinaryTextSegment\":1,"
                               "\"subFrames\":[";
    size_t cap = depth * (sizeof open + 2) + 256;
    char *s = malloc(cap), *o = s;
    o += sprintf(o, "{\"callStackPerThread\":true,\"callStacks\":[{\"callStackRootFrames\":[");
    for (size_t i = 0; i < depth; i++) {
        memcpy(o, open, sizeof open - 1);
        o += sizeof open - 1;
    }
    for (size_t i = 0; i < depth; i++) {
        memcpy(o, "]}", 2);
        o += 2;
    }
    o += sprintf(o, "]}]}");
    return s;
}

TEST(metrickit_hostile_inputs_are_refused_or_warned)
{
    crash_report *rs;
    size_t nr;
    symd_err err;
    /* a tree 100,000 levels deep: refused (413), not a crash */
    char *d = deep_tree(100000);
    symd_status st = parse_all_str(d, strlen(d), &rs, &nr, &err);
    CHECK(st == SYMD_E_TOO_LARGE, "100,000 levels: too large (%d %s)", st, err.msg);
    free(d);
    /* as deep as JSON nesting allows: read whole */
    d = deep_tree(1000);
    st = parse_all_str(d, strlen(d), &rs, &nr, &err);
    CHECK(st == SYMD_OK && nr == 1 && rs[0].total_frames == 1000, "1,000 levels read (%s)",
          err.msg);
    if (!st)
        crash_reports_free(rs, nr);
    free(d);
    /* sampleCount 2^64; an offset past 4 GiB; a bad UUID; strings for numbers */
    const char *doc =
        "{\"hangDiagnostics\":[{\"diagnosticMetaData\":{\"hangDuration\":\"lots\"},"
        "\"callStackTree\":{\"callStackPerThread\":false,\"callStacks\":[{"
        "\"callStackRootFrames\":[{\"binaryName\":\"libdyld.dylib\",\"binaryUUID\":\"nope\","
        "\"offsetIntoBinaryTextSegment\":18446744073709551616,\"sampleCount\":"
        "18446744073709551616,\"subFrames\":[{\"binaryName\":\"App\","
        "\"offsetIntoBinaryTextSegment\":68719476736,\"address\":\"zz\",\"sampleCount\":1,"
        "\"bogus\":1}]}]}]}}]}";
    st = parse_all_str(doc, strlen(doc), &rs, &nr, &err);
    CHECK(st == SYMD_OK && nr == 1, "hostile numbers: read (%s)", err.msg);
    if (!st) {
        const crash_report *r = &rs[0];
        CHECK(has_warning(r, "sampleCount") && has_warning(r, "4 GiB") &&
                  has_warning(r, "no UUID") && has_warning(r, "unknown key") &&
                  has_warning(r, "address is"),
              "warned");
        CHECK(metric(r, "hangDuration") && metric(r, "hangDuration")->unit == CRASH_UNIT_NONE,
              "unreadable duration kept as written");
        CHECK(r->total_frames == 2, "both frames kept");
        crash_reports_free(rs, nr);
    }
    /* a field repeated a million times */
    size_t cap = 32u << 20;
    char *big = malloc(cap), *o = big;
    o += sprintf(o, "{\"callStacks\":[{\"callStackRootFrames\":[{");
    for (int i = 0; i < 1000000; i++)
        o += sprintf(o, "\"sampleCount\":%d,", i);
    o += sprintf(o, "\"binaryName\":\"x\"}]}]}");
    st = parse_all_str(big, (size_t)(o - big), &rs, &nr, &err);
    CHECK(st == SYMD_OK && nr == 1 && rs[0].total_frames == 1 &&
              rs[0].threads[0].frames[0].count == 999999,
          "a million repeats: the last wins (%s)", err.msg);
    if (!st)
        crash_reports_free(rs, nr);
    free(big);
    /* shared chains: 1,000 frames over 100 leaves are 100,000 frames a
     * diagnostic; five of them are past the input's bound: refused */
    {
        static const char fr[] = "{\"binaryName\":\"a\",\"offsetIntoBinaryTextSegment\":1";
        size_t bcap = 8u << 20, o2 = 0;
        char *b = malloc(bcap);
        o2 += (size_t)sprintf(b + o2, "{\"crashDiagnostics\":[");
        for (int d = 0; d < 5; d++) {
            o2 += (size_t)sprintf(b + o2, "%s{\"callStackTree\":{\"callStackPerThread\":true,"
                                          "\"callStacks\":[{\"callStackRootFrames\":[",
                                  d ? "," : "");
            for (int i = 0; i < 999; i++)
                o2 += (size_t)sprintf(b + o2, "%s,\"subFrames\":[", fr);
            for (int i = 0; i < 100; i++)
                o2 += (size_t)sprintf(b + o2, "%s%s}", i ? "," : "", fr);
            for (int i = 0; i < 999; i++)
                o2 += (size_t)sprintf(b + o2, "]}");
            o2 += (size_t)sprintf(b + o2, "]}]}}");
        }
        o2 += (size_t)sprintf(b + o2, "]}");
        st = parse_all_str(b, o2, &rs, &nr, &err);
        CHECK(st == SYMD_E_TOO_LARGE, "500,000 frames over five diagnostics: %d %s", st, err.msg);
        crash_report one;
        symd_err_clear(&err);
        st = crash_parse_part((const uint8_t *)b, o2, 4, &one, &err);
        CHECK(st == SYMD_OK && one.total_frames == 100000 && one.nthreads == 100,
              "one of them alone: %d %s", st, err.msg);
        if (!st)
            crash_report_free(&one);
        free(b);
    }
    /* not MetricKit at all, broken JSON, nothing in it */
    const char *bad[] = {"{\"callStacks\": [", "{\"x\":1, \"callStacks\": 3}",
                         "[{\"callStackTree\": 5}]", "{\"diagnosticLogs\": {}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st = parse_all_str(bad[i], strlen(bad[i]), &rs, &nr, &err);
        CHECK(st == SYMD_OK || st == SYMD_E_NOT_CRASH_REPORT, "bad %zu: %d", i, st);
        if (!st)
            crash_reports_free(rs, nr);
    }
}

TEST(metrickit_other_formats_give_one_report)
{
    const char *t = "Incident Identifier: X\nProcess: a [1]\n\nThread 0 Crashed:\n0   a   0x1000 "
                    "0x1000 + 0\n";
    crash_report *rs;
    size_t nr;
    symd_err err;
    CHECK(parse_all_str(t, strlen(t), &rs, &nr, &err) == SYMD_OK && nr == 1 &&
              rs[0].format == CRASH_FORMAT_CRASH && rs[0].nparts == 1,
          "a .crash is one report");
    crash_reports_free(rs, nr);
    CHECK(!strcmp(crash_format_name(CRASH_FORMAT_METRICKIT), "metrickit") &&
              !strcmp(crash_format_name(CRASH_FORMAT_ASC), "asc"),
          "format names");
    crash_kind k;
    CHECK(crash_kind_parse("launch", &k) && k == CRASH_KIND_LAUNCH, "launch kind");
}

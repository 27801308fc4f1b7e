/* Issue 18 item 7: fidelity of the formats symd already reads.
 *   - a full spindump's trailing "Kextstat:" table ends the call tree and its
 *     rows are the dump's kernel images (no invented frames, no indentation
 *     warnings);
 *   - "<truncated backtrace>" nodes are a warning naming the line and a
 *     mark on the thread;
 *   - .ips frames marked "inline": true are inlined in the model, the JSON
 *     answer and the text rendering (Apple's "[inlined]" marker);
 *   - the text rendering of a JSON .ips holds every header field Apple's text
 *     layout of it shows (checked for every .ips of ../shared);
 *   - a first line over 64 KiB (a whole JSON report on one line) is read.
 * Real files from ../shared where they have the shape (skipped when absent),
 * generated twins (fixtures/make_fidelity.py) where none does. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../ingest/ingest.h"
#include "../parser/crash.h"
#include "../server/crashsym.h"
#include "../store/store.h"
#include "../util/dynbuf.h"
#include "../util/jsonbig.h"
#include "test.h"

static bool parse(const char *what, const uint8_t *buf, size_t len, crash_report *r)
{
    symd_err err;
    symd_err_clear(&err);
    if (crash_parse(buf, len, r, &err) != SYMD_OK) {
        CHECK(false, "%s: refused: %s", what, err.msg);
        return false;
    }
    return true;
}

static bool has_warning(const crash_report *r, const char *where, const char *text)
{
    for (size_t i = 0; i < r->nwarnings; i++)
        if ((!where || strcmp(r->warnings[i].where, where) == 0) &&
            strstr(r->warnings[i].message, text))
            return true;
    return false;
}

/* The text rendering of r (its own words, nothing symbolicated). */
static char *render(const crash_report *r, const uint8_t *in, size_t len)
{
    dynbuf out;
    dynbuf_init(&out, 64u << 20);
    symd_err err;
    symd_err_clear(&err);
    if (crash_render_text(r, NULL, in, len, &out, &err) != SYMD_OK) {
        dynbuf_free(&out);
        return NULL;
    }
    dynbuf_add(&out, "", 1);
    return (char *)out.data;
}

/* The text rendering as the server gives it: symbolicated against an empty
 * store (every image missing: the report's own words). */
static char *render_sym(const crash_report *r, const char *what)
{
    char db[1024];
    snprintf(db, sizeof db, "%s/fidelity-render-%s.db", test_tmpdir(), what);
    store *st = NULL;
    symd_err err;
    symd_err_clear(&err);
    if (store_open(db, 1, 1 << 20, &st, &err) != SYMD_OK)
        return NULL;
    crash_symbolication s;
    char *txt = NULL;
    if (crash_symbolicate(st, r, false, &s, &err) == SYMD_OK) {
        dynbuf out;
        dynbuf_init(&out, 64u << 20);
        if (crash_render_text(r, &s, NULL, 0, &out, &err) == SYMD_OK) {
            dynbuf_add(&out, "", 1);
            txt = (char *)out.data;
        } else {
            dynbuf_free(&out);
        }
        crash_symbolication_free(&s);
    }
    store_close(st);
    return txt;
}

/* The JSON answer as the server gives it, against an empty store. */
static json_t *answer_json(const crash_report *r, const char *what)
{
    char db[1024];
    snprintf(db, sizeof db, "%s/fidelity-answer-%s.db", test_tmpdir(), what);
    store *st = NULL;
    symd_err err;
    symd_err_clear(&err);
    if (store_open(db, 1, 1 << 20, &st, &err) != SYMD_OK)
        return NULL;
    crash_symbolication s;
    json_t *doc = NULL;
    if (crash_symbolicate(st, r, false, &s, &err) == SYMD_OK) {
        dynbuf out;
        dynbuf_init(&out, 64u << 20);
        json_error_t je;
        if (crash_write_json(r, &s, -1, &out, &err) == SYMD_OK)
            doc = json_loadb((const char *)out.data, out.len, 0, &je);
        dynbuf_free(&out);
        crash_symbolication_free(&s);
    }
    store_close(st);
    return doc;
}

/* ---- Kextstat and truncated backtraces ------------------------------------- */

TEST(fidelity_spindump_kextstat_table_is_images)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/fidelity-spindump-kextstat.txt", &len);
    crash_report r;
    if (!buf || !parse("kextstat twin", buf, len, &r)) {
        free(buf);
        return;
    }
    CHECK(r.kind == CRASH_KIND_SPINDUMP, "kind %d", r.kind);
    /* the two threads' own frames and nothing else: 6 + 2 */
    CHECK(r.nthreads == 2 && r.total_frames == 8, "%zu threads, %zu frames", r.nthreads,
          r.total_frames);
    size_t zero = 0;
    for (size_t t = 0; t < r.nthreads; t++)
        for (size_t f = 0; f < r.threads[t].nframes; f++)
            zero += r.threads[t].frames[f].address == 0;
    CHECK(zero == 0, "%zu frames at address 0", zero);
    CHECK(!has_warning(&r, NULL, "indentation"), "an indentation warning");
    CHECK(!has_warning(&r, NULL, "not a call-tree line"), "a call-tree warning");
    /* 4 Binary Images + 96 kexts of a size (the 7 of size 0 are the kernel's) */
    CHECK(r.nimages == 100, "%zu images", r.nimages);
    const crash_image *pci = NULL, *nouuid = NULL;
    for (size_t i = 0; i < r.nimages; i++) {
        if (r.images[i].name && strcmp(r.images[i].name, "com.apple.iokit.IOPCIFamily") == 0)
            pci = &r.images[i];
        if (r.images[i].name && strcmp(r.images[i].name, "com.example.driver9") == 0)
            nouuid = &r.images[i];
    }
    CHECK(pci && pci->has_uuid && pci->uuid[0] == 0x8a && pci->load_address == 0xffffff7f80e2a000 &&
              pci->has_end && pci->end_address == 0xffffff7f80e2ffff && pci->process == -1 &&
              pci->version && strcmp(pci->version, "2.8") == 0,
          "IOPCIFamily kext");
    CHECK(nouuid && !nouuid->has_uuid && nouuid->has_end, "a row without UUID");
    /* the kernel frame in the kext ("<UUID> + off") is placed in it */
    const crash_frame *kf = &r.threads[0].frames[4];
    CHECK(kf->address == 0xffffff7f80e2b234 && kf->image >= 0 &&
              &r.images[kf->image] == pci,
          "kext frame image %ld", kf->image);
    /* the truncated backtrace */
    CHECK(r.threads[1].truncated && !r.threads[0].truncated, "truncated mark");
    CHECK(has_warning(&r, "line 33", "<truncated backtrace>"), "truncated warning");
    json_t *doc = answer_json(&r, "kextstat");
    json_t *th = json_object_get(doc, "threads");
    CHECK(json_is_true(json_object_get(json_array_get(th, 1), "truncated")) &&
              json_is_false(json_object_get(json_array_get(th, 0), "truncated")),
          "the answer's threads say truncated");
    json_decref(doc);
    /* the table is kept as written in the rendering */
    char *txt = render(&r, buf, len);
    CHECK(txt && strlen(txt) == len && memcmp(txt, buf, len) == 0, "renders as written");
    free(txt);
    crash_report_free(&r);
    free(buf);
}

/* The table in the layout kextstat prints it, rows of three index widths
 * after a tree with no blank line: nothing of it is a frame. */
TEST(fidelity_kextstat_right_after_a_tree)
{
    static const char text[] =
        "Data Source:      Stackshots\n"
        "\n"
        "Process:          a [1]\n"
        "  Thread 0x1    1 sample (1)\n"
        "  1  start + 1 (libdyld.dylib + 10) [0x7fff00000010]\n"
        "Kextstat:\n"
        "    9    1 0xffffff7f80000000 0x1000     0x1000     com.a (1.0) <>\n"
        "   10    1 0xffffff7f80001000 0x1000     0x1000     com.b (1.0) <9>\n"
        "  100    1 0xffffff7f80002000 0x1000     0x1000     com.c (1.0) "
        "52A1E876-863E-38E3-AC80-09BBAB13B752 <10>\n"
        "    7    0 junk\n"
        "After: the table\n";
    crash_report r;
    if (!parse("kextstat", (const uint8_t *)text, sizeof text - 1, &r))
        return;
    CHECK(r.total_frames == 1 && r.nimages == 3, "%zu frames, %zu images", r.total_frames,
          r.nimages);
    CHECK(has_warning(&r, "line 10", "not a Kextstat row"), "bad row warned");
    CHECK(!has_warning(&r, NULL, "indentation"), "no indentation warning");
    CHECK(r.nimages == 3 && r.images[2].has_uuid && r.images[0].process == -1, "kexts");
    crash_report_free(&r);
}

/* ---- inline frames ----------------------------------------------------------- */

/* The JSON answer of r against an empty store (every image missing): the
 * frame objects marked inlined: true, one per inlined frame of the model,
 * and the status of each the status of the frame holding it. */
static void check_inline_json(const crash_report *r, const char *what)
{
    char db[1024];
    snprintf(db, sizeof db, "%s/fidelity-%s.db", test_tmpdir(), what);
    store *st = NULL;
    symd_err err;
    symd_err_clear(&err);
    if (store_open(db, 1, 1 << 20, &st, &err) != SYMD_OK) {
        CHECK(false, "%s: store: %s", what, err.msg);
        return;
    }
    crash_symbolication s;
    if (crash_symbolicate(st, r, false, &s, &err) != SYMD_OK) {
        CHECK(false, "%s: symbolicate: %s", what, err.msg);
        store_close(st);
        return;
    }
    dynbuf out;
    dynbuf_init(&out, 64u << 20);
    CHECK(crash_write_json(r, &s, -1, &out, &err) == SYMD_OK, "%s: json", what);
    json_error_t je;
    json_t *doc = json_loadb((const char *)out.data, out.len, 0, &je);
    CHECK(doc != NULL, "%s: answer does not parse: %s", what, je.text);
    size_t want = 0, got = 0, bad = 0;
    json_t *threads = json_object_get(doc, "threads");
    for (size_t t = 0; t < r->nthreads && doc; t++) {
        json_t *fr = json_object_get(json_array_get(threads, t), "frames");
        for (size_t f = 0; f < r->threads[t].nframes; f++)
            want += r->threads[t].frames[f].inlined;
        size_t i;
        json_t *o;
        json_array_foreach(fr, i, o) {
            if (!json_is_true(json_object_get(o, "inlined")))
                continue;
            got++;
            size_t f = (size_t)json_integer_value(json_object_get(o, "frame"));
            if (f + 1 >= r->threads[t].nframes || !r->threads[t].frames[f].inlined)
                bad++;
            else if (strcmp(json_string_value(json_object_get(o, "status")),
                            json_string_value(json_object_get(json_array_get(fr, i + 1),
                                                              "status"))) != 0)
                bad++;
        }
    }
    CHECK(want > 0 && got == want && bad == 0, "%s: %zu inlined frames, %zu in the answer, %zu bad",
          what, want, got, bad);
    json_decref(doc);
    dynbuf_free(&out);
    crash_symbolication_free(&s);
    store_close(st);
}

TEST(fidelity_ips_inline_frames_twin)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/fidelity-inline.ips", &len);
    crash_report r;
    if (!buf || !parse("inline twin", buf, len, &r)) {
        free(buf);
        return;
    }
    const crash_thread *t = &r.threads[r.crashed_thread];
    CHECK(t->nframes == 5 && t->frames[0].inlined && t->frames[1].inlined &&
              !t->frames[2].inlined && !t->frames[3].inlined,
          "inlined flags");
    check_inline_json(&r, "twin");
    char *txt = render_sym(&r, "twin");
    CHECK(txt && strstr(txt, "Fidget.inner() + 0 (Fidget.swift:12) [inlined]\n") &&
              strstr(txt, "Fidget.middle() + 0 (Fidget.swift:30) [inlined]\n") &&
              strstr(txt, "Fidget.outer() + 240 (Fidget.swift:44)\n"),
          "[inlined] markers: %s", txt ? txt : "");
    free(txt);
    crash_report_free(&r);
    free(buf);
}

/* lapfelix/ips2crashlog's target.txt: Apple's text layout of a macOS 15
 * report, then the report itself ("Full Report"), whose crashed thread
 * starts with an "inline": true frame. */
TEST(fidelity_ips_inline_frames_real)
{
    const char *dir = real_reports_dir();
    if (!dir) {
        test_skip("no ../shared/real-reports");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path,
             "%s/lapfelix+ips2crashlog+Tests_ips2crashlogTests_TestResources_target.txt", dir);
    size_t len;
    uint8_t *buf = read_file(path, &len);
    if (!buf) {
        test_skip("no ips2crashlog target.txt");
        return;
    }
    const char *full = strstr((const char *)buf, "\n{\"app_name\"");
    CHECK(full != NULL, "no Full Report in target.txt");
    crash_report r;
    if (!full || !parse("target.txt full report", (const uint8_t *)full + 1,
                        len - (size_t)(full + 1 - (const char *)buf), &r)) {
        free(buf);
        return;
    }
    const crash_thread *t = &r.threads[r.crashed_thread];
    CHECK(r.crashed_thread == 13 && t->nframes > 2 && t->frames[0].inlined &&
              !t->frames[1].inlined && t->frames[0].address == t->frames[1].address,
          "thread 13 frame 0 inlined");
    size_t ninl = 0;
    for (size_t i = 0; i < r.nthreads; i++)
        for (size_t f = 0; f < r.threads[i].nframes; f++)
            ninl += r.threads[i].frames[f].inlined;
    /* the Apple text holds one " [inlined]" per inlined frame */
    size_t apple = 0;
    for (const char *p = (const char *)buf; p < full && (p = strstr(p, " [inlined]")) && p < full;
         p++)
        apple++;
    CHECK(ninl == apple && ninl > 0, "%zu inlined frames, Apple's text marks %zu", ninl, apple);
    char *txt = render(&r, NULL, 0);
    size_t ours = 0;
    for (const char *p = txt; p && (p = strstr(p, " [inlined]")); p++)
        ours++;
    CHECK(ours == apple, "rendering marks %zu of %zu", ours, apple);
    check_inline_json(&r, "target");
    free(txt);
    crash_report_free(&r);
    free(buf);
}

/* The objects of thread t of an answer whose address is addr. */
static size_t objects_at(json_t *doc, size_t t, const char *addr, json_t **out, size_t max)
{
    json_t *fr = json_object_get(json_array_get(json_object_get(doc, "threads"), t), "frames");
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(fr); i++) {
        const char *a = json_string_value(json_object_get(json_array_get(fr, i), "address"));
        if (a && !strcmp(a, addr) && n < max)
            out[n++] = json_array_get(fr, i);
    }
    return n;
}

/* bigapp-twin.ips with its dSYM uploaded, and a variant that names, as
 * Apple's devices do, the inlined call (mix) of frames 1 and 2 in "inline":
 * true frames of their own before them: the variant's answer tells each
 * call once (the inline frame gets the lookup's inlined level, the frame
 * itself its outer one), as many level objects as the plain twin's, and the
 * text says mix once per address, marked [inlined]. */
TEST(fidelity_ips_inline_frames_with_the_dsym_uploaded)
{
    char db[1024];
    snprintf(db, sizeof db, "%s/fidelity-inline-dsym.db", test_tmpdir());
    store *st = NULL;
    symd_err err;
    symd_err_clear(&err);
    CHECK(store_open(db, 1, 1 << 20, &st, &err) == SYMD_OK, "store: %s", err.msg);
    if (!st)
        return;
    static const char *const uploads[] = {
        "fixtures/bin/bigapp-arm64", "fixtures/bin/libfix-arm64.dylib",
        "fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64"};
    for (size_t i = 0; i < 3; i++) {
        size_t len;
        uint8_t *buf = read_fixture(uploads[i], &len);
        ingest_batch b;
        ingest_batch_init(&b);
        store_put_result res[4];
        store_image stored[4];
        CHECK(buf && ingest_add_file(&b, buf, len, uploads[i], &err) == SYMD_OK &&
                  ingest_commit(st, &b, res, stored, &err) == SYMD_OK,
              "upload %s: %s", uploads[i], err.msg);
        ingest_batch_free(&b);
        free(buf);
    }
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/bigapp-twin.ips", &len);
    const char *nl = buf ? memchr(buf, '\n', len) : NULL;
    json_error_t je;
    json_t *body = nl ? json_loadb(nl + 1, len - (size_t)(nl + 1 - (const char *)buf), 0, &je)
                      : NULL;
    json_t *frames =
        json_object_get(json_array_get(json_object_get(body, "threads"), 0), "frames");
    CHECK(json_array_size(frames) == 5, "the twin's thread 0");
    if (json_array_size(frames) != 5) {
        json_decref(body);
        free(buf);
        store_close(st);
        return;
    }
    /* the answers of the plain twin and of the variant */
    json_t *ans[2] = {NULL, NULL};
    char *text[2] = {NULL, NULL};
    for (int v = 0; v < 2; v++) {
        if (v == 1)
            for (size_t f = 3; f-- > 1;) { /* before frames 2 and 1 */
                json_t *o = json_array_get(frames, f);
                json_t *inl = json_pack("{s:O, s:O, s:s, s:i, s:s, s:i, s:b}", "imageOffset",
                                        json_object_get(o, "imageOffset"), "imageIndex",
                                        json_object_get(o, "imageIndex"), "symbol", "mix",
                                        "symbolLocation", 0, "sourceFile", "app.c",
                                        "sourceLine", 14, "inline", 1);
                json_array_insert_new(frames, f, inl);
            }
        char *b = json_dumps(body, JSON_COMPACT);
        dynbuf in;
        dynbuf_init(&in, 16u << 20);
        dynbuf_add(&in, buf, (size_t)(nl + 1 - (const char *)buf));
        dynbuf_add(&in, b, strlen(b));
        free(b);
        crash_report r;
        crash_symbolication s;
        if (parse(v ? "inline variant" : "plain twin", in.data, in.len, &r)) {
            if (crash_symbolicate(st, &r, false, &s, &err) == SYMD_OK) {
                dynbuf out;
                dynbuf_init(&out, 64u << 20);
                if (crash_write_json(&r, &s, -1, &out, &err) == SYMD_OK)
                    ans[v] = json_loadb((const char *)out.data, out.len, 0, &je);
                dynbuf_free(&out);
                dynbuf_init(&out, 64u << 20);
                if (crash_render_text(&r, &s, NULL, 0, &out, &err) == SYMD_OK &&
                    dynbuf_add(&out, "", 1))
                    text[v] = (char *)out.data;
                else
                    dynbuf_free(&out);
                crash_symbolication_free(&s);
            }
            crash_report_free(&r);
        }
        dynbuf_free(&in);
    }
    CHECK(ans[0] && ans[1] && text[0] && text[1], "both answered");
    json_t *t0[2] = {json_object_get(json_array_get(json_object_get(ans[0], "threads"), 0),
                                     "frames"),
                     json_object_get(json_array_get(json_object_get(ans[1], "threads"), 0),
                                     "frames")};
    CHECK(json_array_size(t0[0]) == json_array_size(t0[1]) && json_array_size(t0[0]) == 7,
          "level objects of thread 0: plain %zu, variant %zu (7: each call once)",
          json_array_size(t0[0]), json_array_size(t0[1]));
    static const char *const outer[] = {"static_square", "static_accumulate"};
    for (int k = 0; k < 2 && ans[0] && ans[1]; k++) {
        const char *addr = json_string_value(json_object_get(json_array_get(t0[0], 1 + 2 * k),
                                                             "address"));
        json_t *o[4];
        size_t n = addr ? objects_at(ans[1], 0, addr, o, 4) : 0;
        CHECK(n == 2 && !strcmp(json_string_value(json_object_get(o[0], "symbol")), "mix") &&
                  json_is_true(json_object_get(o[0], "inlined")) &&
                  json_integer_value(json_object_get(o[0], "frame")) == 1 + 2 * k &&
                  json_integer_value(json_object_get(o[0], "line")) == 14 &&
                  !strcmp(json_string_value(json_object_get(o[1], "symbol")), outer[k]) &&
                  !json_is_true(json_object_get(o[1], "inlined")) &&
                  json_integer_value(json_object_get(o[1], "frame")) == 2 + 2 * k,
              "%s: %zu objects, mix in the inline frame, %s in its own", addr ? addr : "?", n,
              outer[k]);
    }
    size_t mixes = 0;
    for (const char *p = text[1]; p && (p = strstr(p, " mix")); p++)
        mixes += strncmp(strchr(p, '\n') ? strchr(p, '\n') - 10 : p, " [inlined]", 10) == 0;
    CHECK(mixes == 2, "the text names mix %zu times marked [inlined] (2):\n%.2000s", mixes,
          text[1] ? text[1] : "");
    for (int v = 0; v < 2; v++) {
        json_decref(ans[v]);
        free(text[v]);
    }
    json_decref(body);
    free(buf);
    store_close(st);
}

/* ---- the .ips text rendering holds Apple's header fields ---------------------- */

/* For a JSON body (root): every field Apple's text layout shows, as the
 * text it must hold (NULL-terminated list of malloc'ed strings). */
static size_t expected_fields(json_t *root, char **out, size_t max)
{
    size_t n = 0;
    char buf[512];
#define ADD(...)                                                                                   \
    do {                                                                                           \
        snprintf(buf, sizeof buf, __VA_ARGS__);                                                    \
        if (n < max)                                                                               \
            out[n++] = strdup(buf);                                                                \
    } while (0)
    json_t *v;
    const char *pn = json_string_value(json_object_get(root, "procName"));
    if (pn && json_is_integer(v = json_object_get(root, "pid")))
        ADD("Process:             %s [%" JSON_INTEGER_FORMAT "]", pn, json_integer_value(v));
    const char *pp = json_string_value(json_object_get(root, "parentProc"));
    if (pp && json_is_integer(v = json_object_get(root, "parentPid")))
        ADD("Parent Process:      %s [%" JSON_INTEGER_FORMAT "]", pp, json_integer_value(v));
    const char *cn = json_string_value(json_object_get(root, "coalitionName"));
    if (cn && json_is_integer(v = json_object_get(root, "coalitionID")))
        ADD("Coalition:           %s [%" JSON_INTEGER_FORMAT "]", cn, json_integer_value(v));
    const char *rp = json_string_value(json_object_get(root, "responsibleProc"));
    if (rp && json_is_integer(v = json_object_get(root, "responsiblePid")))
        ADD("Responsible Process: %s [%" JSON_INTEGER_FORMAT "]", rp, json_integer_value(v));
    if (json_is_integer(v = json_object_get(root, "userID")))
        ADD("User ID:             %" JSON_INTEGER_FORMAT, json_integer_value(v));
    const char *s;
    if ((s = json_string_value(json_object_get(root, "procRole"))))
        ADD("Role:                %s", s);
    if ((s = json_string_value(json_object_get(root, "crashReporterKey"))))
        ADD("CrashReporter Key:   %s", s);
    if ((s = json_string_value(json_object_get(root, "procLaunch"))))
        ADD("Launch Time:         %s", s);
    if ((s = json_string_value(json_object_get(json_object_get(root, "osVersion"), "releaseType"))))
        ADD("Release Type:        %s", s);
    if ((s = json_string_value(json_object_get(root, "sleepWakeUUID"))))
        ADD("Sleep/Wake UUID:       %s", s);
    if (json_is_integer(v = json_object_get(root, "uptime")))
        ADD("Time Awake Since Boot: %" JSON_INTEGER_FORMAT " seconds", json_integer_value(v));
    if (json_is_integer(v = json_object_get(root, "wakeTime")))
        ADD("Time Since Wake:       %" JSON_INTEGER_FORMAT " seconds", json_integer_value(v));
    if ((s = json_string_value(json_object_get(root, "sip"))))
        ADD("System Integrity Protection: %s", s);
    json_t *ex = json_object_get(root, "exception");
    if ((s = json_string_value(json_object_get(ex, "subtype"))))
        ADD("Exception Subtype: %s", s);
    if ((s = json_string_value(json_object_get(root, "vmRegionInfo")))) {
        size_t k = strcspn(s, "\n");
        ADD("VM Region Info: %.*s", (int)(k > 300 ? 300 : k), s);
    }
    if (json_is_object(json_object_get(root, "extMods")))
        ADD("External Modification Summary:\n  Calls made by other processes targeting this process:");
    if ((s = json_string_value(json_object_get(root, "vmSummary")))) {
        size_t k = strcspn(s, "\n");
        ADD("VM Region Summary:\n%.*s", (int)(k > 300 ? 300 : k), s);
    }
    /* the faulting thread's esr description, after its value */
    json_t *ft = json_object_get(root, "faultingThread");
    json_t *th = json_is_integer(ft) ? json_array_get(json_object_get(root, "threads"),
                                                      (size_t)json_integer_value(ft))
                                     : NULL;
    json_t *esr = json_object_get(json_object_get(th, "threadState"), "esr");
    if ((s = json_string_value(json_object_get(esr, "description")))) {
        while (*s == ' ')
            s++;
        ADD("esr: 0x%016" JSON_INTEGER_FORMAT "x %s", (json_int_t)0, s); /* replaced below */
        snprintf(buf, sizeof buf, " %s", s);
        free(out[n - 1]);
        out[n - 1] = strdup(buf);
    }
#undef ADD
    return n;
}

typedef struct {
    int ips, checked, missing;
} fields_ctx;

static void check_fields(const char *name, const uint8_t *buf, size_t len, void *vctx)
{
    fields_ctx *c = vctx;
    const char *nl = memchr(buf, '\n', len);
    if (!len || buf[0] != '{' || !nl)
        return;
    json_error_t je;
    json_t *root = jsonbig_loadb(nl + 1, len - (size_t)(nl + 1 - (const char *)buf), 0, &je);
    if (!json_is_object(root)) { /* a text body, or a broken one */
        json_decref(root);
        return;
    }
    crash_report r;
    if (!parse(name, buf, len, &r)) {
        json_decref(root);
        return;
    }
    c->ips++;
    char *want[64];
    size_t n = expected_fields(root, want, 64);
    char *txt = render(&r, buf, len);
    for (size_t i = 0; i < n; i++) {
        c->checked++;
        if (!txt || !strstr(txt, want[i])) {
            c->missing++;
            CHECK(false, "%s: the rendering lacks \"%s\"", name, want[i]);
        }
        free(want[i]);
    }
    free(txt);
    crash_report_free(&r);
    json_decref(root);
}

TEST(fidelity_ips_rendering_holds_apples_fields)
{
    fields_ctx c = {0};
    if (!each_real_report(check_fields, &c)) {
        test_skip("no ../shared/real-reports or real-crashes");
        return;
    }
    static const char *const twins[] = {"fixtures/crashes/fidelity-inline.ips",
                                        "fixtures/crashes/fidelity-oneline.ips"};
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++) {
        size_t len;
        uint8_t *buf = read_fixture(twins[i], &len);
        if (buf && i == 0)
            check_fields(twins[i], buf, len, &c);
        free(buf);
    }
    CHECK(c.ips >= 8 && c.checked >= 70 && c.missing == 0, "%d .ips, %d fields, %d missing",
          c.ips, c.checked, c.missing);
    printf("    %d JSON .ips: %d of Apple's header fields, all in the rendering\n", c.ips,
           c.checked);
}

/* The Apple text of target.txt (its "Translated Report") against our
 * rendering of its Full Report: every header line of Apple's whose label
 * we write holds the same value. */
TEST(fidelity_ips_rendering_matches_apples_text)
{
    const char *dir = real_reports_dir();
    if (!dir) {
        test_skip("no ../shared/real-reports");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path,
             "%s/lapfelix+ips2crashlog+Tests_ips2crashlogTests_TestResources_target.txt", dir);
    size_t len;
    uint8_t *buf = read_file(path, &len);
    if (!buf) {
        test_skip("no ips2crashlog target.txt");
        return;
    }
    const char *full = strstr((const char *)buf, "\n{\"app_name\"");
    crash_report r;
    if (!full || !parse("target.txt", (const uint8_t *)full + 1,
                        len - (size_t)(full + 1 - (const char *)buf), &r)) {
        free(buf);
        return;
    }
    char *txt = render(&r, NULL, 0);
    static const char *const labels[] = {
        "Process:", "Path:", "Identifier:", "Role:", "Parent Process:", "Coalition:",
        "Responsible Process:", "Date/Time:", "Launch Time:", "OS Version:", "Release Type:",
        "CrashReporter Key:", "Hardware Model:", "Incident Identifier:", "Terminating Process:",
    };
    int same = 0;
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++) {
        const char *a = strstr((const char *)buf, labels[i]);
        if (!a || a > full)
            continue;
        size_t n = strcspn(a, "\n");
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(n < 1000 ? n : 1000), a);
        CHECK(txt && strstr(txt, line), "Apple's \"%s\" not in the rendering", line);
        same += txt && strstr(txt, line);
    }
    CHECK(same >= 14, "%d lines as Apple writes them", same);
    free(txt);
    crash_report_free(&r);
    free(buf);
}

/* ---- a first line over 64 KiB -------------------------------------------------- */

TEST(fidelity_one_line_report_twin)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/fidelity-oneline.ips", &len);
    crash_report r;
    if (!buf)
        return;
    const char *nl = memchr(buf, '\n', len);
    CHECK(nl && (size_t)(nl - (const char *)buf) > 65536, "the twin's line is short");
    if (parse("one-line twin", buf, len, &r)) {
        CHECK(r.format == CRASH_FORMAT_IPS && r.bug_type == 309 && r.nthreads == 2 &&
                  r.total_frames == 6 && r.crashed_thread == 0 && r.has_pid && r.pid == 4242,
              "read: %zu threads %zu frames", r.nthreads, r.total_frames);
        CHECK(r.threads[0].frames[0].inlined, "inline frame");
        crash_report_free(&r);
    }
    free(buf);
}

/* A real .ips rewritten the ways SDKs write them: its header and body
 * members in one object on one line, and "{header}{body}" on one line, each
 * with 1 MiB of a member symd does not read; the frames are the same. */
TEST(fidelity_one_line_report_real)
{
    const char *dir = real_reports_dir();
    if (!dir) {
        test_skip("no ../shared/real-reports");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path,
             "%s/mobile-dev-inc+Symbolicator+Tests_SymbolicatorTests_Resources_"
             "MemoryLeakingApp-2022-08-05-132419.ips",
             dir);
    size_t len;
    uint8_t *buf = read_file(path, &len);
    if (!buf) {
        test_skip("no MemoryLeakingApp .ips");
        return;
    }
    crash_report orig;
    if (!parse("MemoryLeakingApp", buf, len, &orig)) {
        free(buf);
        return;
    }
    const char *nl = memchr(buf, '\n', len);
    json_error_t je;
    json_t *hdr = json_loadb((const char *)buf, (size_t)(nl - (const char *)buf), 0, &je);
    json_t *body = json_loadb(nl + 1, len - (size_t)(nl + 1 - (const char *)buf), 0, &je);
    CHECK(hdr && body, "the real .ips reads as JSON");
    char *pad = malloc((1u << 20) + 1);
    memset(pad, 'x', 1u << 20);
    pad[1u << 20] = 0;
    for (int form = 0; form < 2 && hdr && body; form++) {
        char *line;
        if (form == 0) {
            json_t *m = json_deep_copy(hdr);
            json_object_update(m, body);
            json_object_set_new(m, "sdkPadding", json_string(pad));
            line = json_dumps(m, JSON_COMPACT);
            json_decref(m);
        } else {
            json_t *b = json_deep_copy(body);
            json_object_set_new(b, "sdkPadding", json_string(pad));
            char *h = json_dumps(hdr, JSON_COMPACT), *bb = json_dumps(b, JSON_COMPACT);
            line = malloc(strlen(h) + strlen(bb) + 2);
            sprintf(line, "%s%s\n", h, bb);
            free(h);
            free(bb);
            json_decref(b);
        }
        crash_report r;
        if (parse(form ? "{header}{body}" : "one object", (const uint8_t *)line, strlen(line),
                  &r)) {
            CHECK(r.format == CRASH_FORMAT_IPS && r.nthreads == orig.nthreads &&
                      r.total_frames == orig.total_frames && r.nimages == orig.nimages &&
                      r.crashed_thread == orig.crashed_thread &&
                      strcmp(r.process, orig.process) == 0,
                  "form %d: %zu threads, %zu frames (want %zu, %zu)", form, r.nthreads,
                  r.total_frames, orig.nthreads, orig.total_frames);
            CHECK(has_warning(&r, "sdkPadding", "skipped unread"), "padding skipped unread");
            crash_report_free(&r);
        }
        free(line);
    }
    free(pad);
    json_decref(hdr);
    json_decref(body);
    crash_report_free(&orig);
    free(buf);
}

/* A text report's line over 64 KiB is still past the limit: 413. */
TEST(fidelity_text_line_limit_kept)
{
    size_t n = 70000;
    char *t = malloc(n + 64);
    int k = sprintf(t, "Incident Identifier: ");
    memset(t + k, 'a', n);
    strcpy(t + k + n, "\n");
    crash_report r;
    symd_err err;
    symd_err_clear(&err);
    symd_status st = crash_parse((const uint8_t *)t, strlen(t), &r, &err);
    CHECK(st == SYMD_E_TOO_LARGE, "status %d", st);
    if (st == SYMD_OK)
        crash_report_free(&r);
    free(t);
}

/* A kext row whose UUID does not read, at the very end of the input (no
 * newline, the buffer no longer than the text): a warning, the kext kept
 * without it. */
TEST(fidelity_kextstat_bad_uuid_at_end)
{
    static const char text[] =
        "Data Source:      Stackshots\n"
        "\n"
        "Process:          a [1]\n"
        "  Thread 0x1    1 sample (1)\n"
        "  1  start + 1 (libdyld.dylib + 10) [0x7fff00000010]\n"
        "Kextstat:\n"
        "    9    1 0xffffff7f80000000 0x1000     0x1000     com.a (1.0) 52A1E876-863E-38E3";
    size_t n = sizeof text - 1;
    uint8_t *b = malloc(n);
    memcpy(b, text, n);
    crash_report r;
    if (parse("bad uuid", b, n, &r)) {
        CHECK(r.nimages == 1 && !r.images[0].has_uuid &&
                  has_warning(&r, "line 7", "does not read"),
              "%zu images", r.nimages);
        crash_report_free(&r);
    }
    free(b);
}

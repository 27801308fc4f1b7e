/* PLCrashReporter .plcrash reports: util/protowire (the bounded wire-format
 * reader) and parser/crash_plcrash.c over the shared report
 * (../shared/reporters, MANIFEST.tsv's frame count), the generated twin
 * (fixtures/crashes/bigapp-twin.plcrash) and hostile inputs; end to end:
 * POST /v1/crashes (stored byte for byte, format "plcrash", the text answer
 * in Apple's layout), the twin symbolicated exactly as twins.expected.tsv
 * says, and `symd crash FILE`. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../parser/crash.h"
#include "../store/store.h"
#include "../util/protowire.h"
#include "fixture_util.h"
#include "harness.h"
#include "test.h"

/* ---- helpers ---- */

#define SHARED_PLCRASH "microsoft+plcrashreporter@0254f94+Resources_fuzz_report.plcrash"

static uint8_t *shared_plcrash(size_t *len, char *path, size_t cap)
{
    const char *dir = reporters_dir();
    if (!dir)
        return NULL;
    snprintf(path, cap, "%s/%s", dir, SHARED_PLCRASH);
    return read_file(path, len);
}

/* A growing byte buffer for hand-made protobuf. */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} bb;

static void bb_put(bb *b, const void *s, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void bb_varint(bb *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    do {
        t[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            t[n] |= 0x80;
        n++;
    } while (v);
    bb_put(b, t, n);
}

static void bb_u(bb *b, uint32_t num, uint64_t v)
{
    bb_varint(b, (uint64_t)num << 3);
    bb_varint(b, v);
}

static void bb_len(bb *b, uint32_t num, const void *data, size_t n)
{
    bb_varint(b, (uint64_t)num << 3 | 2);
    bb_varint(b, n);
    bb_put(b, data, n);
}

static void bb_str(bb *b, uint32_t num, const char *s) { bb_len(b, num, s, strlen(s)); }

static bb plcrash_head(void)
{
    bb b = {0};
    bb_put(&b, "plcrash\x01", 8);
    return b;
}

static bool has_warning(const crash_report *r, const char *where, const char *msg)
{
    for (size_t i = 0; i < r->nwarnings; i++)
        if ((!where || strstr(r->warnings[i].where, where)) &&
            (!msg || strstr(r->warnings[i].message, msg)))
            return true;
    return false;
}

static void dump_warnings(const crash_report *r)
{
    for (size_t i = 0; i < r->nwarnings && i < 10; i++)
        fprintf(stderr, "      warning %s: %s\n", r->warnings[i].where, r->warnings[i].message);
}

/* ---- protowire ---- */

TEST(protowire_varint_bounds)
{
    uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    cursor c = cur_make(max, sizeof max);
    uint64_t v = 0;
    CHECK(pw_varint(&c, &v) == PW_OK && v == UINT64_MAX && c.pos == 10, "10-byte max varint");
    uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    c = cur_make(over, sizeof over);
    CHECK(pw_varint(&c, &v) == PW_E_VARINT && c.pos == 0, "past 2^64-1 refused, cursor kept");
    uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x01};
    c = cur_make(eleven, sizeof eleven);
    CHECK(pw_varint(&c, &v) == PW_E_VARINT && c.pos == 0, "11-byte varint refused");
    uint8_t cut[] = {0x80, 0x80};
    c = cur_make(cut, sizeof cut);
    CHECK(pw_varint(&c, &v) == PW_E_TRUNCATED && c.pos == 0, "cut varint");
    uint8_t one[] = {0x96, 0x01};
    c = cur_make(one, sizeof one);
    CHECK(pw_varint(&c, &v) == PW_OK && v == 150 && c.pos == 2, "150");
}

TEST(protowire_fields_and_errors)
{
    /* field 1 varint 150, field 2 "hi", field 3 fixed32, field 4 fixed64 */
    uint8_t m[] = {0x08, 0x96, 0x01, 0x12, 0x02, 'h', 'i', 0x1d, 1, 0, 0, 0,
                   0x21, 2, 0, 0, 0, 0, 0, 0, 0};
    pw_msg msg = pw_root(m, sizeof m);
    pw_field f;
    CHECK(pw_next(&msg, &f) == PW_OK && f.num == 1 && f.type == PW_VARINT && f.u == 150, "1");
    CHECK(pw_next(&msg, &f) == PW_OK && f.num == 2 && f.type == PW_LEN && f.len == 2 &&
              memcmp(f.data, "hi", 2) == 0 && f.off == 3, "2");
    CHECK(pw_next(&msg, &f) == PW_OK && f.num == 3 && f.type == PW_I32 && f.u == 1, "3");
    CHECK(pw_next(&msg, &f) == PW_OK && f.num == 4 && f.type == PW_I64 && f.u == 2, "4");
    CHECK(pw_next(&msg, &f) == PW_END, "end");
    CHECK(pw_count(m, sizeof m, 2, 10) == 1, "count");

    uint8_t past[] = {0x12, 0x05, 'a'}; /* a length past the end */
    msg = pw_root(past, sizeof past);
    CHECK(pw_next(&msg, &f) == PW_E_LENGTH && msg.c.pos == 0, "length past the end");
    uint8_t huge[] = {0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    msg = pw_root(huge, sizeof huge);
    CHECK(pw_next(&msg, &f) == PW_E_LENGTH, "length 2^64-1");
    uint8_t group[] = {0x0b, 0x0c};
    msg = pw_root(group, sizeof group);
    CHECK(pw_next(&msg, &f) == PW_E_WIRETYPE, "groups refused");
    uint8_t zero[] = {0x00, 0x01};
    msg = pw_root(zero, sizeof zero);
    CHECK(pw_next(&msg, &f) == PW_E_FIELD, "field 0 refused");
    uint8_t f32[] = {0x1d, 1, 0};
    msg = pw_root(f32, sizeof f32);
    CHECK(pw_next(&msg, &f) == PW_E_TRUNCATED && msg.c.pos == 0, "cut fixed32");
}

/* Messages nested far deeper than PW_MAX_DEPTH: the walk stops there, no
 * stack spent past it. */
TEST(protowire_depth_bounded)
{
    bb b = {0};
    bb_u(&b, 1, 1);
    for (int i = 0; i < 1000; i++) {
        bb o = {0};
        bb_len(&o, 1, b.p, b.n);
        free(b.p);
        b = o;
    }
    size_t fields = 0;
    CHECK(pw_walk(b.p, b.n, 0, &fields) == PW_E_DEPTH && fields <= PW_MAX_DEPTH + 2,
          "walk: %zu fields", fields);
    pw_msg m = pw_root(b.p, b.n), sub = m;
    pw_field f;
    int depth = 0;
    while (pw_next(&sub, &f) == PW_OK && f.type == PW_LEN && pw_enter(&sub, &f, &m) == PW_OK) {
        sub = m;
        depth++;
    }
    CHECK(depth == PW_MAX_DEPTH, "entered %d levels", depth);
    free(b.p);
}

/* ---- the shared report ---- */

/* Every .plcrash of ../shared/reporters (MANIFEST.tsv format plcrash) is
 * read with the manifest's frame count and kind. */
TEST(plcrash_shared_reports_match_manifest)
{
    const char *dir = reporters_dir();
    if (!dir) {
        test_skip("../shared/reporters is absent: PLCrash reports not tested");
        return;
    }
    char mpath[700];
    snprintf(mpath, sizeof mpath, "%s/MANIFEST.tsv", dir);
    size_t mlen;
    char *man = (char *)read_file(mpath, &mlen);
    CHECK(man, "%s unreadable", mpath);
    if (!man)
        return;
    int files = 0, exact = 0;
    char *save = NULL;
    for (char *line = strtok_r(man, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *col[12] = {0};
        int nc = 0;
        for (char *p = line; nc < 12;) {
            col[nc++] = p;
            char *t = strchr(p, '\t');
            if (!t)
                break;
            *t = 0;
            p = t + 1;
        }
        if (nc < 10 || strcmp(col[4], "plcrash") != 0)
            continue;
        files++;
        char path[900];
        snprintf(path, sizeof path, "%s/%s", dir, col[0]);
        size_t len;
        uint8_t *buf = read_file(path, &len);
        CHECK(buf, "%s unreadable", col[0]);
        if (!buf)
            continue;
        crash_report r;
        symd_err err = {0};
        symd_status st = crash_parse(buf, len, &r, &err);
        CHECK(st == SYMD_OK, "%s: %s", col[0], err.msg);
        if (st == SYMD_OK) {
            size_t want = strtoul(col[9], NULL, 10);
            bool ok = r.format == CRASH_FORMAT_PLCRASH && !r.text_body &&
                      r.total_frames == want && strcmp(crash_kind_name(r.kind), col[7]) == 0;
            CHECK(ok, "%s: format %d, %zu frames (manifest %zu), kind %s (manifest %s)", col[0],
                  r.format, r.total_frames, want, crash_kind_name(r.kind), col[7]);
            exact += ok;
            crash_report_free(&r);
        }
        free(buf);
    }
    CHECK(files >= 1, "no plcrash row in MANIFEST.tsv");
    printf("    plcrash: %d/%d shared files read with the manifest's frame count\n", exact,
           files);
    free(man);
}

TEST(plcrash_shared_report_details)
{
    char path[700];
    size_t len;
    uint8_t *buf = shared_plcrash(&len, path, sizeof path);
    if (!buf) {
        test_skip("../shared/reporters is absent");
        return;
    }
    crash_report r;
    symd_err err = {0};
    CHECK(crash_parse(buf, len, &r, &err) == SYMD_OK, "parse: %s", err.msg);
    CHECK(r.format == CRASH_FORMAT_PLCRASH && r.kind == CRASH_KIND_CRASH && !r.text_body,
          "format/kind");
    CHECK(r.nthreads == 1 && r.threads[0].nframes == 3 && r.threads[0].crashed &&
              r.crashed_thread == 0 && r.threads[0].number == 0,
          "threads: %zu", r.nthreads);
    CHECK(r.nimages == 76, "%zu images", r.nimages);
    CHECK(r.exception_signal && !strcmp(r.exception_signal, "SIGBUS") && r.exception_type &&
              !strcmp(r.exception_type, "EXC_BAD_ACCESS") && r.exception_codes &&
              strstr(r.exception_codes, " at 0x"),
          "signal %s type %s codes %s", r.exception_signal, r.exception_type,
          r.exception_codes);
    CHECK(r.code_type && !strcmp(r.code_type, "X86 (Native)"), "code type %s", r.code_type);
    CHECK(r.os_version && !strcmp(r.os_version, "Mac OS X 10.5.6"), "os %s", r.os_version);
    CHECK(r.bundle_id && !strcmp(r.bundle_id, "com.yourcompany.DemoCrash") && r.process &&
              !strcmp(r.process, "DemoCrash"),
          "bundle %s process %s", r.bundle_id, r.process);
    static const char *const regs[] = {"eax", "edx", "ecx", "ebx", "ebp", "esi", "edi", "esp",
                                       "eip", "eflags", "trapno", "cs", "ds", "es", "fs", "gs"};
    bool regs_ok = r.nregisters == 16;
    for (size_t i = 0; regs_ok && i < 16; i++)
        regs_ok = !strcmp(r.registers[i].name, regs[i]) && strlen(r.registers[i].value) == 10;
    CHECK(regs_ok, "i386 registers in order (%zu)", r.nregisters);
    /* eip is the crashed frame 0's pc */
    char want[16];
    snprintf(want, sizeof want, "0x%08llx", (unsigned long long)r.threads[0].frames[0].address);
    CHECK(regs_ok && !strcmp(r.registers[8].value, want), "eip %s vs %s",
          regs_ok ? r.registers[8].value : "", want);
    /* frames in images; the app image first */
    bool in = true;
    for (size_t k = 0; k < 3; k++)
        in &= r.threads[0].frames[k].image >= 0 && r.threads[0].frames[k].has_load;
    CHECK(in && r.images[0].is_app && !strcmp(r.images[0].name, "DemoCrash") &&
              r.images[0].has_uuid && !strcmp(r.images[0].arch, "i386"),
          "images");
    size_t no_uuid = 0;
    for (size_t i = 0; i < r.nimages; i++)
        no_uuid += !r.images[i].has_uuid;
    CHECK(no_uuid > 0 && has_warning(&r, "binary_images[", "absent"),
          "images without UUID say so (%zu)", no_uuid);
    crash_report_free(&r);
    free(buf);
}

/* ---- the generated twin ---- */

TEST(plcrash_twin_model)
{
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/bigapp-twin.plcrash", &len);
    if (!buf)
        return;
    crash_report r;
    symd_err err = {0};
    CHECK(crash_parse(buf, len, &r, &err) == SYMD_OK, "parse: %s", err.msg);
    /* the Last Exception Backtrace first, then threads 0 and 1 */
    CHECK(r.nthreads == 3 && r.threads[0].role == CRASH_THREAD_LAST_EXCEPTION &&
              r.threads[0].nframes == 3 && r.threads[1].number == 0 && r.threads[1].crashed &&
              r.threads[1].nframes == 5 && r.threads[2].number == 1 &&
              r.threads[2].nframes == 3 && r.crashed_thread == 1 && r.total_frames == 11,
          "threads");
    CHECK(r.nimages == 3 && !strcmp(r.images[0].arch, "arm64") &&
              !strcmp(r.images[2].arch, "arm64e") && r.images[0].is_app &&
              r.images[0].has_uuid && r.images[0].uuid[0] == 0x4c,
          "images");
    CHECK(r.incident_id && !strcmp(r.incident_id, "7E1F5A0C-3B2D-4C6E-9A8B-0D1C2E3F4A5B"),
          "incident %s", r.incident_id);
    CHECK(r.exception_type && !strcmp(r.exception_type, "EXC_BAD_ACCESS") &&
              !strcmp(r.exception_signal, "SIGSEGV") && r.code_type &&
              !strcmp(r.code_type, "ARM-64 (Native)") && r.hardware_model &&
              !strcmp(r.hardware_model, "iPhone14,2") && r.os_version &&
              !strcmp(r.os_version, "iPhone OS 15.3 (19D50)") && r.app_version &&
              !strcmp(r.app_version, "1.0 (1)") && r.date &&
              !strcmp(r.date, "2022-03-01 12:00:00 +0000"),
          "header: %s %s %s %s %s", r.exception_type, r.code_type, r.os_version, r.app_version,
          r.date);
    CHECK(r.app_specific && strstr(r.app_specific, "'NSInvalidArgumentException', reason: "
                                                   "'-[Cart checkout:]"),
          "app specific %s", r.app_specific);
    CHECK(r.nregisters == 34 && !strcmp(r.registers[0].name, "x0") &&
              !strcmp(r.registers[33].name, "cpsr") &&
              !strcmp(r.registers[32].value, "0x00000001050f0374"),
          "registers %zu", r.nregisters);
    const crash_frame *k0 = &r.threads[2].frames[0];
    CHECK(k0->symbol && !strcmp(k0->symbol, "mach_msg_trap") && k0->has_symbol_offset &&
              k0->symbol_offset == 8,
          "the report's own symbol");
    CHECK(has_warning(&r, "CrashReport.threads", "did not crash"),
          "thread 1's registers are not dropped silently");
    crash_report_free(&r);
    free(buf);
}

/* ---- hostile inputs ---- */

static symd_status parse_bb(bb *b, crash_report *r, symd_err *err)
{
    memset(err, 0, sizeof *err);
    symd_status st = crash_parse(b->p, b->n, r, err);
    free(b->p);
    b->p = NULL;
    return st;
}

TEST(plcrash_hostile_length_past_end)
{
    bb b = plcrash_head();
    bb_varint(&b, 3 << 3 | 2); /* threads */
    bb_varint(&b, 500);
    bb_put(&b, "0123456789", 10);
    crash_report r;
    symd_err err;
    CHECK(parse_bb(&b, &r, &err) == SYMD_OK, "%s", err.msg);
    CHECK(r.nthreads == 0 && has_warning(&r, "CrashReport", "length past the end"),
          "a warning, nothing half read");
    crash_report_free(&r);

    /* inside a frame: the thread keeps the frames before it */
    bb fr = {0}, th = {0};
    bb_u(&fr, 3, 0x1000);
    bb_len(&th, 2, fr.p, fr.n);
    bb_u(&th, 3, 1);
    bb_varint(&th, 2 << 3 | 2);
    bb_varint(&th, 99);
    b = plcrash_head();
    bb_len(&b, 3, th.p, th.n);
    CHECK(parse_bb(&b, &r, &err) == SYMD_OK, "%s", err.msg);
    CHECK(r.nthreads == 1 && r.threads[0].nframes == 1 && r.threads[0].crashed &&
              has_warning(&r, "CrashReport.threads[0]", "length past the end"),
          "frame before the break kept");
    crash_report_free(&r);
    free(fr.p);
    free(th.p);
}

TEST(plcrash_hostile_eleven_byte_varint)
{
    bb b = plcrash_head();
    bb_str(&b, 10, "custom");
    bb_put(&b, "\x20\x80\x80\x80\x80\x80\x80\x80\x80\x80\x81\x01", 12); /* field 4, 11 bytes */
    crash_report r;
    symd_err err;
    CHECK(parse_bb(&b, &r, &err) == SYMD_OK, "%s", err.msg);
    CHECK(has_warning(&r, "CrashReport", "varint longer than 10 bytes") && r.app_specific &&
              strstr(r.app_specific, "custom"),
          "warned, what came before read");
    crash_report_free(&r);
}

/* A field repeated a million times: counted before anything is allocated;
 * threads and frames past the crash.h limits are refused (413), registers
 * and Mach codes past theirs kept up to it with a warning, unknown fields
 * counted in one warning. */
TEST(plcrash_hostile_million_repeats)
{
    crash_report r;
    symd_err err;
    bb b = plcrash_head();
    for (int i = 0; i < 1000000; i++)
        bb_put(&b, "\x1a\x00", 2); /* an empty thread */
    CHECK(parse_bb(&b, &r, &err) == SYMD_E_TOO_LARGE && strstr(err.msg, "CrashReport.threads"),
          "threads: %s", err.msg);

    bb th = {0};
    bb_u(&th, 3, 1);
    for (int i = 0; i < 1000000; i++)
        bb_put(&th, "\x12\x02\x18\x01", 4); /* a frame, pc 1 */
    b = plcrash_head();
    bb_len(&b, 3, th.p, th.n);
    CHECK(parse_bb(&b, &r, &err) == SYMD_E_TOO_LARGE && strstr(err.msg, "frames"),
          "frames: %s", err.msg);
    free(th.p);

    th = (bb){0};
    bb_u(&th, 3, 1);
    for (int i = 0; i < 1000000; i++)
        bb_put(&th, "\x22\x06\x0a\x02r0\x10\x01", 8); /* register r0 = 1 */
    b = plcrash_head();
    bb_len(&b, 3, th.p, th.n);
    CHECK(parse_bb(&b, &r, &err) == SYMD_OK, "registers: %s", err.msg);
    CHECK(r.nregisters == CRASH_MAX_REGISTERS && has_warning(&r, "registers", "1000000"),
          "registers kept up to the limit: %zu", r.nregisters);
    crash_report_free(&r);
    free(th.p);

    bb me = {0};
    bb_u(&me, 1, 1);
    for (int i = 0; i < 1000000; i++)
        bb_u(&me, 2, 7);
    bb sig = {0};
    bb_str(&sig, 1, "SIGSEGV");
    bb_len(&sig, 4, me.p, me.n);
    b = plcrash_head();
    bb_len(&b, 6, sig.p, sig.n);
    for (int i = 0; i < 1000000; i++)
        bb_put(&b, "\xf8\x01\x00", 3); /* field 31, unknown */
    CHECK(parse_bb(&b, &r, &err) == SYMD_OK, "codes: %s", err.msg);
    CHECK(has_warning(&r, "mach_exception.codes", "first 16") &&
              has_warning(&r, "CrashReport", "1000000 fields of unknown number") &&
              r.nwarnings < 10,
          "codes and unknown fields warned once each (%zu warnings)", r.nwarnings);
    if (r.nwarnings >= 10)
        dump_warnings(&r);
    crash_report_free(&r);
    free(me.p);
    free(sig.p);
}

/* The shared report cut at every length: a model with warnings or a
 * refusal, never a crash; past the header always a model. */
TEST(plcrash_hostile_truncated)
{
    char path[700];
    size_t len;
    uint8_t *buf = shared_plcrash(&len, path, sizeof path);
    if (!buf) {
        bb t = {0};
        bb_str(&t, 10, "x");
        buf = malloc(t.n + 8);
        memcpy(buf, "plcrash\x01", 8);
        memcpy(buf + 8, t.p, t.n);
        len = t.n + 8;
        free(t.p);
    }
    int models = 0, refused = 0;
    for (size_t n = 0; n < len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, buf, n);
        crash_report r;
        symd_err err = {0};
        symd_status st = crash_parse(cut, n, &r, &err);
        if (st == SYMD_OK) {
            models++;
            CHECK(n >= 8 && r.format == CRASH_FORMAT_PLCRASH && r.total_frames <= 3 &&
                      (n == 8 || r.nwarnings > 0),
                  "cut at %zu: %zu frames, %zu warnings", n, r.total_frames, r.nwarnings);
            crash_report_free(&r);
        } else {
            refused++;
            CHECK(n < 8 && st == SYMD_E_NOT_CRASH_REPORT, "cut at %zu: %d %s", n, st, err.msg);
        }
        free(cut);
    }
    CHECK(models == (int)len - 8, "%d models of %zu cuts", models, len);
    free(buf);
}

TEST(plcrash_hostile_nesting_and_types)
{
    /* a deep nest in an unknown field: skipped unread */
    bb deep = {0};
    bb_u(&deep, 1, 1);
    for (int i = 0; i < 500; i++) {
        bb o = {0};
        bb_len(&o, 1, deep.p, deep.n);
        free(deep.p);
        deep = o;
    }
    bb b = plcrash_head();
    bb_len(&b, 20, deep.p, deep.n);
    /* system_info as a varint, a thread number as bytes */
    bb_u(&b, 1, 5);
    bb th = {0};
    bb_str(&th, 1, "zero");
    bb_u(&th, 3, 1);
    bb_len(&b, 3, th.p, th.n);
    crash_report r;
    symd_err err;
    CHECK(parse_bb(&b, &r, &err) == SYMD_OK, "%s", err.msg);
    CHECK(has_warning(&r, "CrashReport", "unknown number") &&
              has_warning(&r, "CrashReport.system_info", "is varint, expected "
                                                         "length-delimited") &&
              has_warning(&r, "CrashReport.threads[0].thread_number", "length-delimited"),
          "warned");
    CHECK(r.nthreads == 1 && r.threads[0].crashed, "the thread kept");
    crash_report_free(&r);
    free(deep.p);
    free(th.p);

    /* two threads of one number, two that say they crashed */
    b = plcrash_head();
    th = (bb){0};
    bb_u(&th, 1, 3);
    bb_u(&th, 3, 1);
    bb_len(&b, 3, th.p, th.n);
    bb_len(&b, 3, th.p, th.n);
    CHECK(parse_bb(&b, &r, &err) == SYMD_OK, "%s", err.msg);
    CHECK(r.nthreads == 2 && r.crashed_thread == 0 && !r.threads[1].crashed &&
              has_warning(&r, "CrashReport.threads", "given twice") &&
              has_warning(&r, "CrashReport.threads", "says it crashed too"),
          "duplicates warned");
    crash_report_free(&r);
    free(th.p);
}

TEST(plcrash_hostile_magic_and_version)
{
    crash_report r;
    symd_err err = {0};
    CHECK(crash_parse((const uint8_t *)"plcrash\x02\x0a\x00", 10, &r, &err) ==
                  SYMD_E_NOT_CRASH_REPORT &&
              strstr(err.msg, "version 2"),
          "version 2: %s", err.msg);
    memset(&err, 0, sizeof err);
    CHECK(crash_parse((const uint8_t *)"plcrash", 7, &r, &err) == SYMD_E_NOT_CRASH_REPORT,
          "magic alone: %s", err.msg);
    memset(&err, 0, sizeof err);
    CHECK(crash_parse((const uint8_t *)"plcrasX\x01\x0a\x00", 10, &r, &err) ==
              SYMD_E_NOT_CRASH_REPORT,
          "wrong magic: %s", err.msg);
    /* the magic and version with nothing after: a report that says so */
    memset(&err, 0, sizeof err);
    CHECK(crash_parse((const uint8_t *)"plcrash\x01", 8, &r, &err) == SYMD_OK &&
              has_warning(&r, "system_info", "absent") && has_warning(&r, "signal", "absent"),
          "empty: %s", err.msg);
    crash_report_free(&r);
}

/* Inputs a fuzzer once crashed on (fuzz/regress/plcrash-*). */
static void replay(const char *rel, const uint8_t *buf, size_t len)
{
    crash_report r;
    symd_err err = {0};
    symd_status st = crash_parse(buf, len, &r, &err);
    CHECK(st == SYMD_OK || st == SYMD_E_NOT_CRASH_REPORT || st == SYMD_E_TOO_LARGE, "%s: %d",
          rel, st);
    if (st == SYMD_OK) {
        size_t sum = 0;
        for (size_t t = 0; t < r.nthreads; t++)
            sum += r.threads[t].nframes;
        CHECK(sum == r.total_frames, "%s: frame count", rel);
        crash_report_free(&r);
    }
    size_t fields = 0;
    pw_walk(buf, len, 0, &fields);
}

TEST(plcrash_fuzz_regressions)
{
    int n = each_regression("plcrash-", replay);
    CHECK(n >= 0, "fuzz/regress missing");
}

/* ---- end to end ---- */

static lazy_server psrv = {"e2e-plcrash.db", NULL, {0}, false};

__attribute__((destructor)) static void stop_plcrash_server(void)
{
    lazy_stop(&psrv);
}

static json_t *req(const char *method, const char *path, const void *body, size_t len,
                   int *status, char **text)
{
    return http_json(lazy_port(&psrv), method, path, NULL, body, len, status, text);
}

static json_t *crashed_frames(json_t *j)
{
    json_t *th = json_object_get(j, "threads");
    for (size_t t = 0; t < json_array_size(th); t++)
        if (json_is_true(json_object_get(json_array_get(th, t), "crashed")))
            return json_object_get(json_array_get(th, t), "frames");
    return NULL;
}

static size_t frames_in(json_t *j)
{
    size_t n = 0;
    json_t *th = json_object_get(j, "threads");
    for (size_t t = 0; t < json_array_size(th); t++) {
        json_t *fr = json_object_get(json_array_get(th, t), "frames");
        for (size_t f = 0; f < json_array_size(fr); f++)
            n += !json_is_true(json_object_get(json_array_get(fr, f), "inlined"));
    }
    return n;
}

/* The original as the store holds it equals the bytes posted. */
static bool stored_byte_for_byte(json_int_t id, const uint8_t *buf, size_t len)
{
    store *s = NULL;
    symd_err err = {0};
    const char *db = db_arg(psrv.proc.db);
    if (!db || store_open(db, 1, 8u << 20, &s, &err) != SYMD_OK)
        return false;
    store_crash c;
    bool same = false;
    if (store_get_crash(s, id, true, &c, &err) == SYMD_OK) {
        same = c.original_len == len && memcmp(c.original, buf, len) == 0 && c.format &&
               !strcmp(c.format, "plcrash");
        store_crash_free(&c);
    }
    store_close(s);
    return same;
}

TEST(e2e_plcrash_shared_report_stored_and_rendered)
{
    char path[700];
    size_t len;
    uint8_t *buf = shared_plcrash(&len, path, sizeof path);
    if (!buf) {
        test_skip("../shared/reporters is absent");
        return;
    }
    int status;
    json_t *j = req("POST", "/v1/crashes", buf, len, &status, NULL);
    CHECK(status == 201, "POST: %d", status);
    json_int_t id = json_integer_value(json_object_get(j, "id"));
    const char *fmt = json_string_value(json_object_get(j, "format"));
    const char *kind = json_string_value(json_object_get(j, "kind"));
    const char *sig = json_string_value(json_object_get(j, "signature"));
    CHECK(id > 0 && fmt && !strcmp(fmt, "plcrash") && kind && !strcmp(kind, "crash") && sig &&
              *sig && frames_in(j) == 3 && json_array_size(json_object_get(j, "images")) == 76,
          "answer: format %s kind %s signature %s, %zu frames", fmt, kind, sig, frames_in(j));
    CHECK(stored_byte_for_byte(id, buf, len), "the original stored byte for byte");
    char url[96];
    snprintf(url, sizeof url, "/v1/crashes/%lld", (long long)id);
    json_t *g = req("GET", url, NULL, 0, &status, NULL);
    CHECK(status == 200 && frames_in(g) == 3 &&
              !strcmp(json_string_value(json_object_get(g, "format")), "plcrash"),
          "GET: %d", status);
    char *text = NULL;
    snprintf(url, sizeof url, "/v1/crashes/%lld?format=text", (long long)id);
    req("GET", url, NULL, 0, &status, &text);
    CHECK(status == 200 && text && strstr(text, "Process:             DemoCrash\n") &&
              strstr(text, "Code Type:           X86 (Native)\n") &&
              strstr(text, "Exception Type:  EXC_BAD_ACCESS (SIGBUS)\n") &&
              strstr(text, "Thread 0 Crashed:\n0   CoreFoundation") &&
              strstr(text, "Thread 0 crashed with X86 Thread State (32-bit):\n") &&
              strstr(text, "Binary Images:\n    0x1000 -     0x1fff DemoCrash i386  <21ea5a71"),
          "text:\n%s", text ? text : "");
    free(text);
    json_decref(j);
    json_decref(g);
    free(buf);
}

/* The twin, after bigapp-arm64, its dSYM and libfix are uploaded:
 * symbolicated exactly as twins.expected.tsv says (function, file, line of
 * each inline level, status, symbol + offset), the crashed thread's frames
 * identical to the .crash twin's, the Last Exception Backtrace
 * symbolicated too, and the text answer in Apple's layout. */
TEST(e2e_plcrash_twin_symbolicated_exactly)
{
    static const char *const uploads[] = {
        "fixtures/bin/bigapp-arm64", "fixtures/bin/libfix-arm64.dylib",
        "fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64"};
    int status;
    for (size_t i = 0; i < 3; i++) {
        json_t *u = http_post_fixture(lazy_port(&psrv), uploads[i],
                                      "/v1/images?name=bigapp-arm64", &status);
        CHECK(status == 201, "upload %s: %d", uploads[i], status);
        json_decref(u);
    }
    size_t len;
    uint8_t *buf = read_fixture("fixtures/crashes/bigapp-twin.plcrash", &len);
    if (!buf)
        return;
    json_t *j = req("POST", "/v1/crashes", buf, len, &status, NULL);
    CHECK(status == 201 && !strcmp(json_string_value(json_object_get(j, "format")), "plcrash"),
          "POST twin: %d", status);
    json_int_t id = json_integer_value(json_object_get(j, "id"));
    CHECK(stored_byte_for_byte(id, buf, len), "the twin stored byte for byte");
    json_decref(j);
    char url[96];
    snprintf(url, sizeof url, "/v1/crashes/%lld", (long long)id);
    json_t *got = req("GET", url, NULL, 0, &status, NULL);
    CHECK(status == 200, "GET: %d", status);

    tsv_row rows[16];
    char *tsv = NULL;
    int n = load_tsv("fixtures/crashes/twins.expected.tsv", rows, 16, &tsv);
    CHECK(n >= 5, "twins.expected.tsv: %d rows", n);
    json_t *fr = crashed_frames(got);
    size_t k = 0;
    int exact = 0;
    for (int i = 0; i < n; i++) {
        json_t *outer;
        bool ok = twin_row_matches(fr, &k, &rows[i], TWIN_IMAGE, &outer);
        CHECK(ok, "plcrash twin frame %s (%s): %s", rows[i].f[0], rows[i].f[1],
              outer ? json_dumps(outer, JSON_COMPACT) : "(none)");
        exact += ok;
    }
    CHECK(k == json_array_size(fr), "%zu output frames, expected %zu", json_array_size(fr), k);
    printf("    plcrash twin: %d/%d frames exact\n", exact, n);
    free(tsv);

    /* the .crash twin's crashed thread: the same frames, the same signature,
     * and both filed in one group */
    json_t *txt = http_post_fixture(lazy_port(&psrv), "fixtures/crashes/bigapp-twin.crash",
                                    "/v1/crashes", &status);
    CHECK(status == 201, ".crash twin: %d", status);
    char *sa = json_dumps(crashed_frames(got), JSON_COMPACT | JSON_SORT_KEYS);
    char *sb = json_dumps(crashed_frames(txt), JSON_COMPACT | JSON_SORT_KEYS);
    CHECK(sa && sb && !strcmp(sa, sb), "crashed thread differs:\n  .plcrash %.600s\n  .crash   %.600s",
          sa ? sa : "", sb ? sb : "");
    free(sa);
    free(sb);
    const char *g1 = json_string_value(json_object_get(got, "signature"));
    const char *g2 = json_string_value(json_object_get(txt, "signature"));
    CHECK(g1 && g2 && !strcmp(g1, g2), "signatures %s vs %s", g1, g2);
    json_t *groups = req("GET", "/v1/crashes/groups", NULL, 0, &status, NULL);
    json_int_t in_group = -1;
    json_t *ga = json_object_get(groups, "groups");
    for (size_t i = 0; i < json_array_size(ga) && g1; i++) {
        const char *gs = json_string_value(json_object_get(json_array_get(ga, i), "signature"));
        if (gs && !strcmp(gs, g1))
            in_group = json_integer_value(json_object_get(json_array_get(ga, i), "count"));
    }
    CHECK(status == 200 && in_group == 2, "the .plcrash and .crash twins in one group: %lld",
          (long long)in_group);
    json_decref(groups);
    json_decref(txt);

    /* the exception backtrace, symbolicated: static_square's frame first */
    json_t *th0 = json_array_get(json_object_get(got, "threads"), 0);
    json_t *e0 = json_array_get(json_object_get(th0, "frames"), 1); /* after mix inlined */
    CHECK(!strcmp(json_string_value(json_object_get(th0, "role")), "last_exception") && e0 &&
              json_string_value(json_object_get(e0, "symbol")) &&
              !strcmp(json_string_value(json_object_get(e0, "symbol")), "static_square"),
          "last exception: %s", th0 ? json_dumps(th0, JSON_COMPACT) : "(none)");

    char *text = NULL;
    snprintf(url, sizeof url, "/v1/crashes/%lld?format=text", (long long)id);
    req("GET", url, NULL, 0, &status, &text);
    CHECK(status == 200 && text &&
              strstr(text, "Incident Identifier: 7E1F5A0C-3B2D-4C6E-9A8B-0D1C2E3F4A5B\n") &&
              strstr(text, "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n") &&
              strstr(text, "Application Specific Information:\n*** Terminating app due to "
                           "uncaught exception 'NSInvalidArgumentException'") &&
              strstr(text, "Last Exception Backtrace:\n") &&
              strstr(text, "Thread 0 Crashed:\n") && strstr(text, " mix (app.c:14)\n") &&
              strstr(text, " static_square + 20 (app.c:20)\n") &&
              strstr(text, "Thread 0 crashed with ARM Thread State (64-bit):\n") &&
              strstr(text, "Binary Images:\n0x104a38000 - 0x104a3bfff bigapp-arm64 arm64  "
                           "<4c4c449055553144a17c64a339ede13a>"),
          "text:\n%s", text ? text : "");
    free(text);
    json_decref(got);
    free(buf);
}

/* Hostile .plcrash over HTTP: refused whole (415, 413) and nothing stored,
 * or stored whole with warnings naming the protobuf field. */
TEST(e2e_plcrash_hostile_posts)
{
    int status;
    lazy_port(&psrv);
    long long before = db_query_int(psrv.proc.db, "SELECT count(*) FROM crashes");
    json_t *j = req("POST", "/v1/crashes", "plcrash\x02\x0a\x00", 10, &status, NULL);
    CHECK(status == 415, "version 2: %d", status);
    json_decref(j);
    bb b = plcrash_head();
    for (int i = 0; i < 1000000; i++)
        bb_put(&b, "\x1a\x00", 2);
    j = req("POST", "/v1/crashes", b.p, b.n, &status, NULL);
    CHECK(status == 413, "a million threads: %d", status);
    json_decref(j);
    free(b.p);
    CHECK(db_query_int(psrv.proc.db, "SELECT count(*) FROM crashes") == before,
          "nothing stored for the refusals");
    b = plcrash_head();
    bb_str(&b, 10, "kept");
    bb_put(&b, "\x1a\xf4\x03" "0123456789", 13);
    j = req("POST", "/v1/crashes", b.p, b.n, &status, NULL);
    json_t *w = json_array_get(json_object_get(j, "warnings"), 0);
    const char *where = json_string_value(json_object_get(w, "where"));
    const char *msg = json_string_value(json_object_get(w, "message"));
    CHECK(status == 201 && where && !strcmp(where, "CrashReport") && msg &&
              strstr(msg, "length past the end"),
          "length past the end: %d %s: %s", status, where, msg);
    json_decref(j);
    free(b.p);
}

/* symd crash FILE reads .plcrash offline: the Apple-style text, and --json. */
TEST(e2e_plcrash_cli)
{
    if (skip_on_pg("the CLI reads a SQLite file"))
        return;
    const char *b = getenv("SYMD_BIN");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s crash --db %s/plcrash-cli.db %s 2>/dev/null", b ? b : "./symd",
             test_tmpdir(), root_path("fixtures/crashes/bigapp-twin.plcrash"));
    FILE *p = popen(cmd, "r");
    CHECK(p, "popen");
    if (!p)
        return;
    char out[16384];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d", st);
    CHECK(strstr(out, "Thread 0 Crashed:\n0   libfix.dylib") &&
              strstr(out, "Last Exception Backtrace:\n") && strstr(out, "Binary Images:\n"),
          "output:\n%s", out);
    snprintf(cmd, sizeof cmd, "%s crash --json --db %s/plcrash-cli.db %s 2>/dev/null",
             b ? b : "./symd", test_tmpdir(), root_path("fixtures/crashes/bigapp-twin.plcrash"));
    p = popen(cmd, "r");
    n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    if (p)
        pclose(p);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    CHECK(j && !strcmp(json_string_value(json_object_get(j, "format")), "plcrash") &&
              frames_in(j) == 11,
          "json: %.300s", out);
    json_decref(j);
}

/* Last test of this file: the server stops cleanly. */
TEST(e2e_plcrash_zz_shutdown_is_clean)
{
    lazy_port(&psrv);
    CHECK(lazy_stop(&psrv), "plcrash server exit status");
}

/* The stack walker on the real dumps of ../shared/minidumps against
 * Breakpad's minidump_stackwalk (tests/oracle) with the dumps' .sym files:
 * the crashing thread's frames (module + offset, and trust), walked with
 * the rows of the uploaded binaries. A minimal reader of the three streams
 * needed lives here until the minidump reader is on main. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"
#include "../macho/macho.h"
#include "../unwind/unwind.h"
#include "../unwind/walk.h"

#define MAX_MODS 512

typedef struct {
    uint64_t base, size;
    char name[128];
} lite_module;

typedef struct {
    const uint8_t *p;
    size_t n;
    uint64_t stack_lo;
    const uint8_t *stack;
    size_t stack_n;
    lite_module mods[MAX_MODS];
    size_t nmods;
    const uint8_t *ctx;
    size_t ctx_n;
    /* the image whose rows the walk has */
    const char *rows_name;
    const unw_table *rows;
} lite_dump;

static uint32_t u32(const uint8_t *b) { return (uint32_t)b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24; }
static uint64_t u64(const uint8_t *b) { return u32(b) | (uint64_t)u32(b + 4) << 32; }

/* Reads the first thread (context, stack) and the module list; false when
 * anything lies outside the file. */
static bool lite_read(lite_dump *d)
{
    if (d->n < 32 || u32(d->p) != 0x504d444du)
        return false;
    uint32_t ns = u32(d->p + 8), dir = u32(d->p + 12);
    for (uint32_t i = 0; i < ns; i++) {
        if ((uint64_t)dir + 12ull * (i + 1) > d->n)
            return false;
        const uint8_t *e = d->p + dir + 12 * i;
        uint32_t type = u32(e), size = u32(e + 4), rva = u32(e + 8);
        if ((uint64_t)rva + size > d->n)
            return false;
        const uint8_t *s = d->p + rva;
        if (type == 3 && size >= 4 + 48 && u32(s) >= 1) { /* ThreadList: thread 0 */
            /* Breakpad's Mac writer pads the count to 8 bytes here too */
            const uint8_t *t = s + (size == 8 + 48ull * u32(s) ? 8 : 4);
            d->stack_lo = u64(t + 24);
            uint32_t sn = u32(t + 32), srva = u32(t + 36);
            uint32_t cn = u32(t + 40), crva = u32(t + 44);
            if ((uint64_t)srva + sn > d->n || (uint64_t)crva + cn > d->n)
                return false;
            d->stack = d->p + srva, d->stack_n = sn;
            d->ctx = d->p + crva, d->ctx_n = cn;
        } else if (type == 4 && size >= 4) { /* ModuleList, 4 bytes of padding or none */
            uint32_t count = u32(s);
            size_t first = size == 8 + 108ull * count ? 8 : 4;
            if (first + 108ull * count > size || count > MAX_MODS)
                return false;
            for (uint32_t k = 0; k < count; k++) {
                const uint8_t *m = s + first + 108 * k;
                lite_module *lm = &d->mods[d->nmods++];
                lm->base = u64(m);
                lm->size = u32(m + 8);
                uint32_t nrva = u32(m + 20);
                lm->name[0] = 0;
                if ((uint64_t)nrva + 4 <= d->n) {
                    uint32_t bytes = u32(d->p + nrva);
                    size_t o = 0;
                    for (uint32_t c = 0; c + 1 < bytes && (uint64_t)nrva + 4 + c + 1 < d->n &&
                                         o + 1 < sizeof lm->name;
                         c += 2)
                        lm->name[o++] = (char)d->p[nrva + 4 + c];
                    lm->name[o] = 0;
                    char *slash = strrchr(lm->name, '/');
                    if (slash)
                        memmove(lm->name, slash + 1, strlen(slash));
                }
            }
        }
    }
    return d->stack && d->ctx && d->nmods;
}

static bool lite_mem(void *ctx, uint64_t addr, uint64_t *out)
{
    lite_dump *d = ctx;
    if (addr < d->stack_lo || addr - d->stack_lo > d->stack_n || d->stack_n - (addr - d->stack_lo) < 8)
        return false;
    *out = u64(d->stack + (addr - d->stack_lo));
    return true;
}

static const lite_module *lite_module_of(const lite_dump *d, uint64_t addr)
{
    for (size_t i = 0; i < d->nmods; i++)
        if (addr >= d->mods[i].base && addr - d->mods[i].base < d->mods[i].size)
            return &d->mods[i];
    return NULL;
}

static bool lite_find(void *ctx, uint64_t addr, unw_module *out)
{
    lite_dump *d = ctx;
    const lite_module *m = lite_module_of(d, addr);
    if (!m)
        return false;
    out->base = m->base;
    out->size = m->size;
    out->rows = !strcmp(m->name, d->rows_name) ? d->rows : NULL;
    return true;
}

/* One dump: walks it, runs minidump_stackwalk, compares frame by frame. */
static void compare_dump(const char *dir, const char *sub, const char *dmp, const char *bin,
                         const char *debug_id, bool sym_has_module)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, dmp);
    lite_dump d;
    memset(&d, 0, sizeof d);
    d.p = read_file(path, &d.n);
    CHECK(d.p && lite_read(&d), "%s read", dmp);
    /* the binary's rows, as an upload extracts them */
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, bin);
    size_t blen;
    uint8_t *bb = read_file(path, &blen);
    macho_slice sl[MACHO_MAX_SLICES];
    size_t ns;
    macho_image img;
    uint8_t *blob = NULL;
    size_t len;
    unw_build_stats st;
    unw_table t;
    symd_err e = {0};
    CHECK(bb && macho_parse_slices(bb, blen, sl, &ns, &e) == SYMD_OK &&
              macho_parse_image(bb + sl[0].offset, (size_t)sl[0].size, &img, &e) == SYMD_OK &&
              unw_build_image(&img, &blob, &len, &st, &e) == SYMD_OK && blob &&
              unw_table_open(blob, len, &t, &e) == SYMD_OK,
          "%s rows: %s", bin, e.msg);
    d.rows_name = bin;
    d.rows = &t;
    /* Breakpad's AMD64 context: rax 0x78 .. r15 0xf0, rip 0xf8 */
    unw_regs regs = {.arch = UNW_ARCH_X86_64};
    static const unsigned dwarf_of[16] = {0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15};
    for (int i = 0; i < 16 && d.ctx_n >= 0x100; i++)
        unw_regs_set(&regs, dwarf_of[i], u64(d.ctx + 0x78 + 8 * i));
    if (d.ctx_n >= 0x100)
        unw_regs_set(&regs, UNW_X86_RA, u64(d.ctx + 0xf8));
    unw_walker w = {.read = lite_mem, .find = lite_find, .ctx = &d};
    unw_frame frames[64];
    size_t n;
    unw_stop why = unw_walk(&w, &regs, frames, 64, &n);

    /* the oracle, with the .sym files laid out as it wants them */
    char syms[512], cmd[2048];
    snprintf(syms, sizeof syms, "%s/syms-%s", test_tmpdir(), bin);
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/%s/%s' && { %s%s cat '%s/%s/%s.sym'; } > '%s/%s/%s/%s.sym'", syms,
             bin, debug_id, sym_has_module ? "" : "echo 'MODULE mac x86_64 ",
             sym_has_module ? "" : "PLACEHOLDER';", dir, sub, bin, syms, bin, debug_id, bin);
    char fixed[2048];
    /* the MODULE line a .sym without one needs */
    char module_line[256];
    snprintf(module_line, sizeof module_line, "%s %s", debug_id, bin);
    char *ph = strstr(cmd, "PLACEHOLDER");
    if (ph)
        snprintf(fixed, sizeof fixed, "%.*s%s%s", (int)(ph - cmd), cmd, module_line,
                 ph + strlen("PLACEHOLDER"));
    else
        snprintf(fixed, sizeof fixed, "%s", cmd);
    CHECK(system(fixed) == 0, "sym laid out");
    char out[512];
    snprintf(out, sizeof out, "%s/stackwalk-%s.txt", test_tmpdir(), bin);
    snprintf(cmd, sizeof cmd,
             "'%s' '%s/%s/%s' '%s' 2>/dev/null | sed -n '/^Thread .*(crashed)/,/^$/p' > '%s'",
             root_path("tests/oracle/node_modules/minidump/bin/linux-x64/minidump_stackwalk"),
             dir, sub, dmp, syms, out);
    CHECK(system(cmd) == 0, "minidump_stackwalk ran");
    size_t olen;
    char *o = (char *)read_file(out, &olen);
    char omod[64][128];
    unsigned long long ooff[64];
    char otrust[64][32];
    size_t on = 0;
    for (char *line = o ? strtok(o, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        unsigned idx;
        char rest[512];
        if (sscanf(line, " %u %511[^\n]", &idx, rest) == 2 && idx == on && on < 64) {
            /* "module + 0xOFF" or "module!function [file : line + 0xN]":
             * the module offset comes from the dump's own module list */
            char *bang = strpbrk(rest, "! ");
            snprintf(omod[on], 128, "%.*s", bang ? (int)(bang - rest) : (int)strlen(rest), rest);
            ooff[on] = 0;
            char *plus = strstr(rest, " + 0x");
            if (plus && !strchr(rest, '!'))
                ooff[on] = strtoull(plus + 3, NULL, 16);
            otrust[on][0] = 0;
            on++;
        } else if (on && strstr(line, "Found by: ")) {
            const char *f = strstr(line, "Found by: ") + 10;
            snprintf(otrust[on - 1], 32, "%s",
                     strstr(f, "instruction pointer") ? "context"
                     : strstr(f, "call frame info")   ? "cfi"
                     : strstr(f, "frame pointer")     ? "frame_pointer"
                     : strstr(f, "scanning")          ? "scan"
                                                      : f);
        }
    }
    CHECK(on > 0, "%s: the oracle walked no frame", dmp);
    size_t match = 0;
    for (size_t i = 0; i < on || i < n; i++) {
        const lite_module *m = i < n ? lite_module_of(&d, frames[i].pc) : NULL;
        unsigned long long off = m ? frames[i].pc - m->base : 0;
        bool same = i < n && i < on && m && !strcmp(m->name, omod[i]) &&
                    (ooff[i] == 0 || ooff[i] == off);
        /* trust as good or better: context < cfi < frame_pointer < scan */
        bool trusted = false;
        for (int r = 0; same && r < 4 && !trusted; r++)
            if (!strcmp(otrust[i], unw_trust_name((unw_trust)r)))
                trusted = (int)frames[i].trust <= r;
        CHECK(!same || trusted, "%s frame %zu: trust %s, the oracle's %s", dmp, i,
              unw_trust_name(frames[i].trust), otrust[i]);
        /* a symbolized oracle frame ("crash!main") gives no offset: ours is
         * then compared by module only and printed */
        match += same;
        printf("    %s frame %zu: ours %s+0x%llx (%s), minidump_stackwalk %s+0x%llx (%s)%s\n",
               dmp, i, m ? m->name : "-", off, i < n ? unw_trust_name(frames[i].trust) : "-",
               i < on ? omod[i] : "-", i < on ? ooff[i] : 0ull, i < on ? otrust[i] : "-",
               same ? "" : "  DIFFERENT");
        CHECK(same, "%s frame %zu differs", dmp, i);
    }
    printf("    %s: %zu of %zu frames match (walk ended: %s)\n", dmp, match, on,
           unw_stop_name(why));
    free(o);
    free(blob);
    macho_image_free(&img);
    free(bb);
    free((void *)d.p);
}

TEST(unwind_walk_real_dumps_match_minidump_stackwalk)
{
    const char *dir = minidumps_dir();
    struct stat sb;
    if (!dir || stat(root_path("tests/oracle/node_modules/minidump/bin/linux-x64/minidump_stackwalk"), &sb)) {
        test_skip(!dir ? "../shared/minidumps not found"
                       : "minidump_stackwalk not installed (scripts/deps.sh: npm ci in tests/oracle)");
        return;
    }
    compare_dump(dir, "symbolic-crash_macos", "crash_macos.dmp", "crash_macos",
                 "3F58BC3DEABE3361B5FB52A6762985980", false);
    compare_dump(dir, "symbolicator-macos", "macos.dmp", "crash",
                 "67E9247C814E392BA027DBDE6748FCBF0", true);
}

/* The minidump walker over stored unwind rows (see mdwalk.h). */
#include "mdwalk.h"

#include <stdlib.h>
#include <string.h>

#include "../minidump/walk.h"
#include "../parser/crash.h"
#include "../unwind/walk.h"

/* Modules one walk keeps loaded; a thread's frames rarely span more. */
#define WALK_MODULES 64

/* One walk's state: the thread, and the images it loaded from the store
 * (released when the walk ends). */
typedef struct {
    store *st;
    const md_walk_input *in;
    const char *arch;
    struct {
        long module;
        store_loaded *img; /* NULL: not stored (or not loadable) */
    } seen[WALK_MODULES];
    size_t nseen;
} walk_state;

static bool read_word(void *ctx, uint64_t addr, uint64_t *out)
{
    const walk_state *w = ctx;
    uint8_t b[8];
    if (!minidump_read_memory(w->in->dump, addr, sizeof b, b))
        return false;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    *out = v;
    return true;
}

/* The stored image of module m, loaded once per walk: its own arch first,
 * then arm64e for an arm64 dump, then whatever single slice the UUID has. */
static store_loaded *image_of(walk_state *w, long m)
{
    for (size_t i = 0; i < w->nseen; i++)
        if (w->seen[i].module == m)
            return w->seen[i].img;
    const md_module *mod = &w->in->dump->modules[m];
    store_loaded *img = NULL;
    if (mod->has_uuid && w->st) {
        const char *tries[] = {w->arch, w->arch && !strcmp(w->arch, "arm64") ? "arm64e" : NULL,
                               NULL};
        for (size_t t = 0; t < 3 && !img; t++) {
            if (t < 2 && !tries[t])
                continue;
            symd_err e = {0};
            if (store_acquire(w->st, mod->uuid, tries[t], &img, &e) != SYMD_OK)
                img = NULL;
        }
    }
    if (w->nseen < WALK_MODULES) {
        w->seen[w->nseen].module = m;
        w->seen[w->nseen].img = img;
        w->nseen++;
    } else if (img) { /* no room to keep it: the walk goes on without its rows */
        store_release(w->st, img);
        img = NULL;
    }
    return img;
}

static bool find_module(void *ctx, uint64_t addr, unw_module *out)
{
    walk_state *w = ctx;
    long m = w->in->module_at(w->in->dump, addr);
    if (m < 0)
        return false;
    const md_module *mod = &w->in->dump->modules[m];
    store_loaded *img = image_of(w, m);
    out->base = mod->base;
    /* code ends where __TEXT does when the binary says so, else the module */
    out->size = img && img->meta.text_size && img->meta.text_size < mod->size ? img->meta.text_size
                                                                              : mod->size;
    out->rows = img && img->has_unwind ? &img->unwind : NULL;
    return addr - out->base < out->size;
}

/* Whether addr is where a function of its stored image begins (symbols
 * or function starts of the symbol index). */
static bool function_start(void *ctx, uint64_t addr)
{
    walk_state *w = ctx;
    long m = w->in->module_at(w->in->dump, addr);
    if (m < 0)
        return false;
    store_loaded *img = image_of(w, m);
    if (!img)
        return false;
    symlook l;
    symindex_lookup(&img->sym, addr - w->in->dump->modules[m].base + img->meta.text_vmaddr, &l);
    return l.has_sym_addr && l.offset == 0;
}

static md_trust trust_of(unw_trust t)
{
    switch (t) {
    case UNW_TRUST_CONTEXT: return MD_TRUST_CONTEXT;
    case UNW_TRUST_CFI: return MD_TRUST_CFI;
    case UNW_TRUST_FP: return MD_TRUST_FRAME_POINTER;
    default: return MD_TRUST_SCAN;
    }
}

/* The thread's registers in DWARF numbering (minidump's amd64 order is
 * rax rbx rcx rdx rdi rsi rbp rsp r8..r15 rip; arm64's is DWARF's). */
static bool regs_of(const md_context *c, unw_regs *g)
{
    static const unsigned amd64_dwarf[MD_AMD64_NREGS] = {0, 3, 2, 1, 5, 4, 6, 7, 8,
                                                         9, 10, 11, 12, 13, 14, 15, 16};
    memset(g, 0, sizeof *g);
    if (c->cpu == MD_CPU_X86_64 && c->nregs >= MD_AMD64_NREGS) {
        g->arch = UNW_ARCH_X86_64;
        for (size_t i = 0; i < MD_AMD64_NREGS; i++)
            unw_regs_set(g, amd64_dwarf[i], c->regs[i]);
        return true;
    }
    if (c->cpu == MD_CPU_ARM64 && c->nregs > MD_ARM64_PC) {
        g->arch = UNW_ARCH_ARM64;
        for (size_t i = 0; i <= MD_ARM64_PC; i++)
            unw_regs_set(g, (unsigned)i, c->regs[i]);
        return true;
    }
    return false;
}

/* md_walk_fn over unw_walk; self is the store. */
static symd_status walk_stored(void *self, const md_walk_input *in, md_frame *out, size_t cap,
                               size_t *n, symd_err *err)
{
    *n = 0;
    unw_regs regs;
    if (!in->ctx || !regs_of(in->ctx, &regs))
        return md_walk_frame_pointer(NULL, in, out, cap, n, err);
    walk_state *w = calloc(1, sizeof *w);
    unw_frame *fr = calloc(UNW_MAX_FRAMES, sizeof *fr);
    if (!w || !fr) {
        free(w);
        free(fr);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory walking a thread");
    }
    w->st = self;
    w->in = in;
    w->arch = md_cpu_name(in->ctx->cpu);
    unw_walker uw = {.read = read_word, .find = find_module,
                      .function_start = function_start, .ctx = w, .pac_mask = 0};
    size_t got = 0;
    (void)unw_walk(&uw, &regs, fr, cap < UNW_MAX_FRAMES ? cap : UNW_MAX_FRAMES, &got);
    for (size_t i = 0; i < got; i++) {
        uint64_t fp = 0;
        (void)unw_regs_get(&fr[i].regs, unw_fp_reg(regs.arch), &fp);
        out[i] = (md_frame){.pc = fr[i].pc, .sp = fr[i].sp, .fp = fp,
                            .trust = trust_of(fr[i].trust)};
    }
    *n = got;
    for (size_t i = 0; i < w->nseen; i++)
        if (w->seen[i].img)
            store_release(w->st, w->seen[i].img);
    free(fr);
    free(w);
    return SYMD_OK;
}

void mdwalk_install(store *st)
{
    crash_set_minidump_walker(st ? walk_stored : NULL, st);
}

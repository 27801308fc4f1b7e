/* symd upload --url: finding the files under the paths given and learning
 * from their bytes which images they carry (client/walk.h). */
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../breakpad/sym.h"
#include "../import/devsupport.h"
#include "../import/peek.h"
#include "../ingest/unzip.h"
#include <zip.h>
#include "../util/hex.h"
#include "../util/util.h"

#define MH_DSYM_FILETYPE 10u
#define MH_OBJECT_FILETYPE 1u

/* ---- recognising bytes -------------------------------------------------------- */

static bool add_item(up_file *f, size_t *cap, const uint8_t uuid[16], const char *arch,
                     bool debug_info)
{
    if (!array_grow((void **)&f->items, cap, f->nitems + 1, sizeof *f->items))
        return false;
    up_item *it = &f->items[f->nitems++];
    memcpy(it->uuid, uuid, 16);
    snprintf(it->arch, sizeof it->arch, "%.15s", arch ? arch : "");
    it->debug_info = debug_info;
    return true;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The images of a Mach-O or fat file in buf (len bytes) added to f.
 * SYMD_E_NOT_MACHO when it is none; why says what is wrong otherwise.
 * Only the fat header and each slice's load commands are touched. */
static symd_status macho_items(const uint8_t *buf, size_t len, up_file *f, size_t *cap,
                               char *why, size_t wcap)
{
    peek_slice sl[MACHO_MAX_SLICES];
    size_t n = 0;
    symd_err e = {0};
    symd_status st = peek_slices(buf, len < PEEK_HEAD ? len : PEEK_HEAD, len, sl, &n, &e);
    if (st != SYMD_OK) {
        snprintf(why, wcap, "%s", e.msg);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s = buf + sl[i].offset;
        uint32_t csize;
        st = peek_commands_size(s, (size_t)sl[i].size, &sl[i], &csize, &e);
        if (st == SYMD_OK && csize > sl[i].size)
            st = symd_fail(&e, SYMD_E_CORRUPT, "load commands run past the slice");
        if (st == SYMD_OK)
            st = peek_load_commands(s, csize, &sl[i], &e);
        if (st != SYMD_OK) {
            snprintf(why, wcap, "%s", e.msg);
            return st;
        }
        uint32_t filetype = le32(s + 12);
        if (!sl[i].has_uuid) {
            snprintf(why, wcap, "%s slice without LC_UUID%s", sl[i].arch ? sl[i].arch : "a",
                     filetype == MH_OBJECT_FILETYPE ? " (an object file)" : "");
            /* an object file is a build's by-product, not an image: passed
             * over in folders like any other file */
            return filetype == MH_OBJECT_FILETYPE ? SYMD_E_NOT_MACHO : SYMD_E_NO_UUID;
        }
        if (!add_item(f, cap, sl[i].uuid, sl[i].arch, filetype == MH_DSYM_FILETYPE)) {
            snprintf(why, wcap, "out of memory");
            return SYMD_E_NOMEM;
        }
    }
    return SYMD_OK;
}

/* The image of a Breakpad .sym whose first line is in buf: "MODULE os arch
 * debug_id name" (the rest of the file is the server's to read). */
static symd_status sym_items(const uint8_t *buf, size_t len, up_file *f, size_t *cap, char *why,
                             size_t wcap)
{
    const char *p = (const char *)buf, *end = p + (len < 4096 ? len : 4096);
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (eol)
        end = eol;
    char os[32], arch[32], id[48];
    char line[512];
    size_t ln = (size_t)(end - p) < sizeof line - 1 ? (size_t)(end - p) : sizeof line - 1;
    memcpy(line, p, ln);
    line[ln] = 0;
    size_t idn;
    if (sscanf(line, "MODULE %31s %31s %47s", os, arch, id) != 3 ||
        (idn = strlen(id)) < 33 || idn > 40) {
        snprintf(why, wcap, "Breakpad .sym whose MODULE line names no debug id");
        return SYMD_E_CORRUPT;
    }
    uint8_t uuid[16];
    for (int i = 0; i < 16; i++) {
        int hi = hex_digit(id[2 * i]), lo = hex_digit(id[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            snprintf(why, wcap, "Breakpad .sym whose MODULE debug id is not hex");
            return SYMD_E_CORRUPT;
        }
        uuid[i] = (uint8_t)(hi << 4 | lo);
    }
    const char *a = bp_sym_arch(arch);
    if (!add_item(f, cap, uuid, a ? a : arch, false)) {
        snprintf(why, wcap, "out of memory");
        return SYMD_E_NOMEM;
    }
    return SYMD_OK;
}

/* Entries of a zip the client looks at (the server's own limit is lower by
 * default: it refuses a larger one with its reason). */
#define ZIP_MAX_ENTRIES 1000000

/* One zip member read as a stream: only forward, reopened to go back. */
typedef struct {
    zip_t *za;
    zip_uint64_t idx;
    zip_file_t *zf;
    uint64_t pos;
} member;

static bool m_open(member *m)
{
    if (m->zf)
        zip_fclose(m->zf);
    m->zf = zip_fopen_index(m->za, m->idx, 0);
    m->pos = 0;
    return m->zf != NULL;
}

/* Up to n bytes into out (fewer at the member's end); false on an error. */
static bool m_read(member *m, uint8_t *out, size_t n, size_t *got)
{
    *got = 0;
    while (*got < n) {
        zip_int64_t r = zip_fread(m->zf, out + *got, n - *got);
        if (r < 0)
            return false;
        if (r == 0)
            break;
        *got += (size_t)r;
        m->pos += (uint64_t)r;
    }
    return true;
}

/* Reads and drops bytes up to off; false when the member ends first. */
static bool m_skip_to(member *m, uint64_t off)
{
    uint8_t junk[65536];
    while (m->pos < off) {
        uint64_t want = off - m->pos;
        size_t got;
        if (!m_read(m, junk, want < sizeof junk ? (size_t)want : sizeof junk, &got) || !got)
            return false;
    }
    return true;
}

/* The images of one Mach-O member whose first hl bytes are head and whose
 * declared size is size: each slice's load commands read from the stream
 * (slices in file order, everything between them inflated and dropped), so
 * a member of any size costs a few KiB of memory. */
static symd_status macho_member_items(member *m, const uint8_t *head, size_t hl, uint64_t size,
                                      up_file *f, size_t *cap, char *why, size_t wcap)
{
    peek_slice sl[MACHO_MAX_SLICES];
    size_t n = 0;
    symd_err e = {0};
    symd_status st = peek_slices(head, hl, size, sl, &n, &e);
    if (st != SYMD_OK) {
        snprintf(why, wcap, "%s", e.msg);
        return st;
    }
    size_t order[MACHO_MAX_SLICES];
    for (size_t i = 0; i < n; i++) { /* by offset (fat slices need not be) */
        size_t k = i;
        while (k > 0 && sl[order[k - 1]].offset > sl[i].offset) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    if (!m_open(m)) {
        snprintf(why, wcap, "cannot read the member again");
        return SYMD_E_CORRUPT;
    }
    for (size_t j = 0; j < n; j++) {
        peek_slice *p = &sl[order[j]];
        uint8_t hdr[32];
        size_t got;
        uint32_t csize;
        if (!m_skip_to(m, p->offset) ||
            !m_read(m, hdr, p->size < sizeof hdr ? (size_t)p->size : sizeof hdr, &got)) {
            snprintf(why, wcap, "the member ends before its slice at %llu",
                     (unsigned long long)p->offset);
            return SYMD_E_CORRUPT;
        }
        st = peek_commands_size(hdr, got, p, &csize, &e);
        if (st == SYMD_OK && (csize > p->size || csize > PEEK_MAX_CMDS || csize < got))
            st = symd_fail(&e, SYMD_E_CORRUPT, "load commands of %u bytes do not fit the slice",
                           csize);
        uint8_t *cmds = st == SYMD_OK ? malloc(csize) : NULL;
        size_t more = 0;
        if (st == SYMD_OK && (!cmds || (memcpy(cmds, hdr, got),
                                        !m_read(m, cmds + got, csize - got, &more)) ||
                              got + more != csize))
            st = symd_fail(&e, cmds ? SYMD_E_CORRUPT : SYMD_E_NOMEM,
                           cmds ? "the member ends inside its load commands" : "out of memory");
        if (st == SYMD_OK)
            st = peek_load_commands(cmds, csize, p, &e);
        uint32_t filetype = st == SYMD_OK ? le32(cmds + 12) : 0;
        free(cmds);
        if (st != SYMD_OK) {
            snprintf(why, wcap, "%s", e.msg);
            return st;
        }
        if (!p->has_uuid) {
            snprintf(why, wcap, "%s slice without LC_UUID", p->arch ? p->arch : "a");
            return filetype == MH_OBJECT_FILETYPE ? SYMD_E_NOT_MACHO : SYMD_E_NO_UUID;
        }
        if (!add_item(f, cap, p->uuid, p->arch, filetype == MH_DSYM_FILETYPE)) {
            snprintf(why, wcap, "out of memory");
            return SYMD_E_NOMEM;
        }
    }
    return SYMD_OK;
}

/* Whether entry idx named name is a file (not a folder or a link). */
static bool zip_is_file(zip_t *za, zip_uint64_t idx, const char *name)
{
    size_t n = strlen(name);
    if (n > 0 && name[n - 1] == '/')
        return false;
    zip_uint8_t opsys;
    zip_uint32_t attr;
    if (zip_file_get_external_attributes(za, idx, 0, &opsys, &attr) == 0 &&
        opsys == ZIP_OPSYS_UNIX) {
        mode_t mode = (mode_t)(attr >> 16);
        if (S_ISDIR(mode) || S_ISLNK(mode))
            return false;
    }
    return true;
}

/* The images of the members of the zip in buf: each member's first bytes
 * and load commands only (the server reads the whole members, checks their
 * CRCs and holds them to its limits). *members: how many carry images.
 * why: the first member symd would refuse, or what is wrong with the zip. */
static symd_status zip_items(const uint8_t *buf, size_t len, up_file *f, size_t *cap,
                             size_t *members, char *why, size_t wcap)
{
    *members = 0;
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(buf, len, 0, &ze);
    zip_t *za = src ? zip_open_from_source(src, ZIP_RDONLY, &ze) : NULL;
    if (!za) {
        snprintf(why, wcap, "malformed zip: %s", zip_error_strerror(&ze));
        if (src)
            zip_source_free(src);
        zip_error_fini(&ze);
        return SYMD_E_CORRUPT;
    }
    zip_error_fini(&ze);
    symd_status st = SYMD_OK;
    zip_int64_t n = zip_get_num_entries(za, 0);
    if (n < 0 || n > ZIP_MAX_ENTRIES) {
        snprintf(why, wcap, "malformed zip: %lld entries", (long long)n);
        st = SYMD_E_CORRUPT;
    }
    uint8_t *head = malloc(PEEK_HEAD);
    if (!head)
        st = SYMD_E_NOMEM;
    for (zip_int64_t i = 0; st == SYMD_OK && i < n; i++) {
        zip_stat_t zs;
        zip_stat_init(&zs);
        if (zip_stat_index(za, (zip_uint64_t)i, 0, &zs) != 0)
            continue;
        const char *name = (zs.valid & ZIP_STAT_NAME) && zs.name ? zs.name : "";
        if (!zip_is_file(za, (zip_uint64_t)i, name) || strncmp(name, "__MACOSX/", 9) == 0 ||
            strstr(name, "/__MACOSX/"))
            continue;
        member m = {.za = za, .idx = (zip_uint64_t)i};
        size_t hl = 0;
        char mwhy[256] = "";
        symd_status ms;
        if (!m_open(&m) || !m_read(&m, head, PEEK_HEAD, &hl)) {
            snprintf(mwhy, sizeof mwhy, "%s", zip_strerror(za));
            ms = SYMD_E_CORRUPT;
        } else if (hl < 4)
            ms = SYMD_E_NOT_MACHO;
        else if (bp_sym_detect(head, hl))
            ms = sym_items(head, hl, f, cap, mwhy, sizeof mwhy);
        else
            ms = macho_member_items(&m, head, hl, (zs.valid & ZIP_STAT_SIZE) ? zs.size : hl, f,
                                    cap, mwhy, sizeof mwhy);
        if (m.zf)
            zip_fclose(m.zf);
        if (ms == SYMD_OK)
            (*members)++;
        else if (ms == SYMD_E_NOMEM)
            st = ms;
        else if (ms != SYMD_E_NOT_MACHO) {
            snprintf(why, wcap, "member %.80s: %.160s", name, mwhy);
            st = ms;
        }
    }
    free(head);
    zip_discard(za);
    return st;
}

bool up_recognise_buf(const uint8_t *buf, size_t len, up_file *f)
{
    f->items = NULL;
    f->nitems = 0;
    f->err[0] = 0;
    f->kind = UP_REFUSED;
    f->size = len;
    if (len < 4) {
        snprintf(f->err, sizeof f->err, "not a Mach-O, fat, Breakpad .sym or zip file");
        return false;
    }
    size_t cap = 0;
    char why[256] = "";
    bool symbols = true;
    symd_status s;
    if (unzip_is_zip(buf, len)) {
        size_t members = 0;
        s = zip_items(buf, len, f, &cap, &members, why, sizeof why);
        if (s != SYMD_OK)
            snprintf(f->err, sizeof f->err, "%s", s == SYMD_E_NOMEM ? "out of memory" : why);
        else if (!members) {
            snprintf(f->err, sizeof f->err, "a zip without a Mach-O or Breakpad .sym member");
            symbols = false;
        } else
            f->kind = UP_ZIP;
    } else if (bp_sym_detect(buf, len)) {
        s = sym_items(buf, len, f, &cap, why, sizeof why);
        if (s == SYMD_OK)
            f->kind = UP_SYM;
        else
            snprintf(f->err, sizeof f->err, "%s", why);
    } else {
        s = macho_items(buf, len, f, &cap, why, sizeof why);
        if (s == SYMD_OK)
            f->kind = UP_MACHO;
        else if (s == SYMD_E_NOT_MACHO) {
            snprintf(f->err, sizeof f->err, "%s",
                     why[0] && strstr(why, "object file")
                         ? "an object file (no LC_UUID): not an image symd stores"
                         : "not a Mach-O, fat, Breakpad .sym or zip file");
            symbols = false;
        } else
            snprintf(f->err, sizeof f->err, "%s", why);
    }
    if (f->kind == UP_REFUSED) {
        free(f->items);
        f->items = NULL;
        f->nitems = 0;
    }
    return symbols;
}

bool up_recognise(const char *path, up_file *f)
{
    f->items = NULL;
    f->nitems = 0;
    f->err[0] = 0;
    f->kind = UP_REFUSED;
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(f->err, sizeof f->err, "%s", fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return true;
    }
    f->size = (uint64_t)st.st_size;
    if (st.st_size < 4 || (uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        snprintf(f->err, sizeof f->err, "not a Mach-O, fat, Breakpad .sym or zip file");
        return false;
    }
    size_t len = (size_t)st.st_size;
    const uint8_t *buf = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (buf == MAP_FAILED) {
        snprintf(f->err, sizeof f->err, "%s", strerror(errno));
        return true;
    }
    bool symbols = up_recognise_buf(buf, len, f);
    munmap((void *)buf, len);
    return symbols;
}

/* ---- walking ------------------------------------------------------------------ */

typedef struct {
    up_list *out;
    dev_t *dev;
    ino_t *ino;
    size_t nseen, seen_cap;
} walker;

static up_file *list_add(up_list *l, const char *path)
{
    if (!array_grow((void **)&l->files, &l->cap, l->n + 1, sizeof *l->files))
        return NULL;
    up_file *f = &l->files[l->n];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    if (!f->path)
        return NULL;
    l->n++;
    return f;
}

static void refuse(walker *w, const char *path, const char *fmt, const char *arg)
{
    up_file *f = list_add(w->out, path);
    if (f) {
        f->kind = UP_REFUSED;
        snprintf(f->err, sizeof f->err, fmt, arg);
    }
}

/* True the first time (dev, ino) is met. */
static bool first_visit(walker *w, const struct stat *st)
{
    for (size_t i = 0; i < w->nseen; i++)
        if (w->dev[i] == st->st_dev && w->ino[i] == st->st_ino)
            return false;
    size_t c1 = w->seen_cap, c2 = w->seen_cap;
    if (!array_grow((void **)&w->dev, &c1, w->nseen + 1, sizeof *w->dev) ||
        !array_grow((void **)&w->ino, &c2, w->nseen + 1, sizeof *w->ino))
        return true;
    w->seen_cap = c1 < c2 ? c1 : c2;
    w->dev[w->nseen] = st->st_dev;
    w->ino[w->nseen++] = st->st_ino;
    return true;
}

static void walk_file(walker *w, const char *path, const struct stat *st, bool named)
{
    if (!first_visit(w, st))
        return;
    up_file f = {0};
    bool symbols = up_recognise(path, &f);
    if (!symbols && !named) {
        w->out->ignored++;
        return;
    }
    up_file *slot = list_add(w->out, path);
    if (!slot) {
        free(f.items);
        return;
    }
    char *p = slot->path;
    *slot = f;
    slot->path = p;
}

/* Whether path is a DeviceSupport folder ("<version> (<build>)…" holding
 * Symbols/) or a folder of them ("iOS DeviceSupport"). */
static bool is_devsupport(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char os[64];
    if (devsupport_os_of_parent(base, strlen(base), os, sizeof os))
        return true;
    char sub[PATH_MAX];
    struct stat st;
    devsupport_id id;
    memset(&id, 0, sizeof id);
    return snprintf(sub, sizeof sub, "%s/Symbols", path) < (int)sizeof sub &&
           stat(sub, &st) == 0 && S_ISDIR(st.st_mode) &&
           devsupport_parse_name(base, strlen(base), &id);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static void walk_dir(walker *w, const char *path, int depth)
{
    if (is_devsupport(path)) {
        refuse(w, path,
               "%s is an Xcode DeviceSupport folder (Apple's system libraries): "
               "not uploaded as app images; run `symd import` on the server's database, or "
               "POST a zip of it to /v1/system-symbols",
               "this");
        return;
    }
    if (depth > 64) {
        refuse(w, path, "%s: folders nested more than 64 deep", "walk");
        return;
    }
    struct dirent **ents;
    int n = scandir(path, &ents, NULL, by_name);
    if (n < 0) {
        refuse(w, path, "cannot read the folder: %s", strerror(errno));
        return;
    }
    /* links after the folder's own files: a file reached both ways is
     * listed under its real path */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            const char *nm = ents[i]->d_name;
            char sub[PATH_MAX];
            struct stat lst, st;
            if (!strcmp(nm, ".") || !strcmp(nm, "..") || !strcmp(nm, "__MACOSX") ||
                snprintf(sub, sizeof sub, "%s/%s", path, nm) >= (int)sizeof sub ||
                lstat(sub, &lst) != 0 || S_ISLNK(lst.st_mode) != (pass == 1))
                continue;
            if (S_ISDIR(lst.st_mode))
                walk_dir(w, sub, depth + 1);
            else if (S_ISREG(lst.st_mode))
                walk_file(w, sub, &lst, false);
            else if (S_ISLNK(lst.st_mode) && stat(sub, &st) == 0 && S_ISREG(st.st_mode))
                walk_file(w, sub, &st, false); /* a link to a folder is not followed */
        }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
}

void up_walk(const char *const *paths, size_t npaths, up_list *out)
{
    memset(out, 0, sizeof *out);
    walker w = {.out = out};
    for (size_t i = 0; i < npaths; i++) {
        struct stat st;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s", paths[i]);
        size_t l = strlen(p);
        while (l > 1 && p[l - 1] == '/')
            p[--l] = 0;
        if (stat(p, &st) != 0)
            refuse(&w, p, "%s", strerror(errno));
        else if (S_ISDIR(st.st_mode))
            walk_dir(&w, p, 0);
        else if (S_ISREG(st.st_mode))
            walk_file(&w, p, &st, true);
        else
            refuse(&w, p, "%s", "not a regular file or folder");
    }
    free(w.dev);
    free(w.ino);
}

void up_list_free(up_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->files[i].path);
        free(l->files[i].items);
    }
    free(l->files);
    memset(l, 0, sizeof *l);
}

/* symd import: DeviceSupport folders, dyld shared caches and zips of
 * DeviceSupport folders into symbol sets (import/import.h). */
#include "import.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../ingest/ingest.h"
#include "../macho/dyld_cache.h"
#include "../util/hex.h"
#include "devsupport.h"
#include "peek.h"

/* A batch is stored when it holds this many new slices, this many bytes of
 * index, or this many links: a transaction every few hundred files keeps
 * commits cheap and memory flat. */
#define BATCH_SLICES 256
#define BATCH_BYTES (32u << 20)
#define BATCH_LINKS 4096
/* Files up to this size are read whole (one read beats several); larger
 * ones only where their symbols are. */
#define READ_WHOLE (64u << 10)
/* An Info.plist is small; a larger one is no Info.plist of Xcode's. */
#define PLIST_MAX (1u << 20)

/* One set being imported into. */
typedef struct {
    store *s;
    const import_options *o;
    import_report *r;
    int64_t set_id; /* 0 until the set is known (a zip's: after its last member) */
    ingest_batch batch;
    size_t batch_bytes;
    store_image_key *links;
    size_t nlinks, links_cap;
    /* progress */
    uint64_t files_total, bytes_total;
    double t0, last_progress;
    symd_err fatal; /* what stopped a walk (devsupport_walk's callbacks have no err) */
} importer;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* a + "/" + b into out; false when it does not fit (the path is then
 * taken as absent). */
static bool join_path(char *out, size_t cap, const char *a, const char *b)
{
    int n = snprintf(out, cap, "%s/%s", a, b);
    return n >= 0 && (size_t)n < cap;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void warn(const importer *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(const importer *im, const char *fmt, ...)
{
    if (!im->o->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("symd import: ", im->o->log);
    vfprintf(im->o->log, fmt, ap);
    fputc('\n', im->o->log);
    va_end(ap);
}

/* Counts an error of one file (or folder), says it and lists it. */
static void file_error(import_report *r, FILE *log, const char *file, const symd_err *e)
{
    r->errors++;
    if (log)
        fprintf(log, "symd import: %s: %s (%s)\n", file, e->msg, symd_status_name(e->kind));
    if (r->nlisted < IMPORT_LISTED_ERRORS) {
        snprintf(r->listed[r->nlisted].file, sizeof r->listed[0].file, "%s", file);
        snprintf(r->listed[r->nlisted].msg, sizeof r->listed[0].msg, "%s", e->msg);
        r->nlisted++;
    }
}

static void progress(importer *im, bool last)
{
    if (!im->o->progress || !im->o->log)
        return;
    double t = now_s();
    if (!last && t - im->last_progress < 1.0)
        return;
    im->last_progress = t;
    const import_report *r = im->r;
    double el = t - im->t0 > 1e-6 ? t - im->t0 : 1e-6;
    fprintf(im->o->log,
            "symd import: %llu/%llu files, %.1f/%.1f MB, %.1f MB/s, %.0f files/s, %llu stored, "
            "%llu skipped\n",
            (unsigned long long)r->files, (unsigned long long)im->files_total,
            (double)r->bytes / 1e6, (double)im->bytes_total / 1e6, (double)r->bytes / 1e6 / el,
            (double)r->files / el, (unsigned long long)r->stored,
            (unsigned long long)r->skipped);
}

/* ---- batches ---------------------------------------------------------------- */

/* Stores what the batch holds into the set, in one transaction. */
static symd_status flush(importer *im, symd_err *err)
{
    ingest_batch *b = &im->batch;
    if (b->n == 0 && im->nlinks == 0)
        return SYMD_OK;
    store_put_result *res = malloc((b->n ? b->n : 1) * sizeof *res);
    if (!res)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    size_t linked = 0;
    symd_status st = store_symbol_set_add(im->s, im->set_id, b->puts, b->n, res, im->links,
                                          im->nlinks, &linked, err);
    for (size_t i = 0; st == SYMD_OK && i < b->n; i++) {
        if (res[i] == STORE_CREATED)
            im->r->stored++;
        else
            im->r->skipped++;
    }
    free(res);
    ingest_batch_free(b);
    ingest_batch_init(b);
    im->batch_bytes = 0;
    im->nlinks = 0;
    return st;
}

/* Stores the batch once it is large enough (never before the set is known). */
static symd_status maybe_flush(importer *im, symd_err *err)
{
    if (im->set_id == 0)
        return SYMD_OK;
    if (im->batch.n >= BATCH_SLICES || im->batch_bytes >= BATCH_BYTES ||
        im->nlinks >= BATCH_LINKS)
        return flush(im, err);
    return SYMD_OK;
}

static symd_status add_link(importer *im, const uint8_t uuid[16], const char *arch,
                            symd_err *err)
{
    if (im->nlinks == im->links_cap) {
        size_t cap = im->links_cap ? im->links_cap * 2 : 256;
        store_image_key *k = realloc(im->links, cap * sizeof *k);
        if (!k)
            return symd_fail(err, SYMD_E_NOMEM, "out of memory");
        im->links = k;
        im->links_cap = cap;
    }
    store_image_key *k = &im->links[im->nlinks++];
    memcpy(k->uuid, uuid, 16);
    snprintf(k->arch, sizeof k->arch, "%s", arch);
    im->r->skipped++;
    return SYMD_OK;
}

/* Whether (uuid, arch) is stored (the store's directory answers repeats). */
static symd_status is_stored(store *s, const uint8_t uuid[16], const char *arch, bool *yes,
                             symd_err *err)
{
    store_slice sl[STORE_DIR_SLICES];
    size_t n = 0;
    *yes = false;
    symd_status st = store_slices(s, uuid, sl, STORE_DIR_SLICES, &n, err);
    for (size_t i = 0; st == SYMD_OK && i < n; i++)
        *yes |= strcmp(sl[i].arch, arch) == 0;
    return st;
}

/* Whether every slice is stored already; a slice without UUID or known
 * arch never is (reading the file then says what is wrong with it). */
static symd_status all_stored(importer *im, const peek_slice *sl, size_t n, bool *yes,
                              symd_err *err)
{
    *yes = true;
    for (size_t i = 0; i < n && *yes; i++) {
        if (!sl[i].has_uuid || !sl[i].arch) {
            *yes = false;
            break;
        }
        symd_status st = is_stored(im->s, sl[i].uuid, sl[i].arch, yes, err);
        if (st != SYMD_OK)
            return st;
    }
    return SYMD_OK;
}

/* Adds the slices of a file read (where its symbols are) to the batch;
 * name names executables. A file the Mach-O reader refuses is one error. */
static symd_status add_read_file(importer *im, const char *shown, const uint8_t *buf,
                                 size_t len, symd_err *err)
{
    symd_err e = {0};
    size_t before = im->batch.n;
    if (ingest_add_file(&im->batch, buf, len, base_name(shown), &e) != SYMD_OK) {
        if (e.kind == SYMD_E_NOMEM)
            return symd_fail(err, SYMD_E_NOMEM, "%s: %s", shown, e.msg);
        file_error(im->r, im->o->log, shown, &e);
        return SYMD_OK;
    }
    for (size_t i = before; i < im->batch.n; i++)
        im->batch_bytes += im->batch.puts[i].symidx_len + im->batch.puts[i].lines_len;
    return maybe_flush(im, err);
}

/* Links every slice of a file stored already. */
static symd_status link_all(importer *im, const peek_slice *sl, size_t n, symd_err *err)
{
    for (size_t i = 0; i < n; i++) {
        symd_status st = add_link(im, sl[i].uuid, sl[i].arch, err);
        if (st != SYMD_OK)
            return st;
    }
    return maybe_flush(im, err);
}

/* ---- files in memory (a zip's members) ------------------------------------- */

/* One file whose bytes are all in memory. */
static symd_status import_bytes(importer *im, const char *shown, const uint8_t *buf,
                                size_t len, symd_err *err)
{
    peek_slice sl[MACHO_MAX_SLICES];
    size_t n = 0;
    symd_err e = {0};
    im->r->files++;
    im->r->bytes += len;
    im->r->bytes_read += len;
    symd_status st = peek_slices(buf, len < PEEK_HEAD ? len : PEEK_HEAD, len, sl, &n, &e);
    for (size_t i = 0; st == SYMD_OK && i < n; i++)
        st = peek_load_commands(buf + sl[i].offset, (size_t)sl[i].size, &sl[i], &e);
    if (st == SYMD_E_NOT_MACHO) {
        im->r->not_macho++;
        return SYMD_OK;
    }
    if (st != SYMD_OK) {
        file_error(im->r, im->o->log, shown, &e);
        return SYMD_OK;
    }
    im->r->slices += n;
    bool stored;
    if ((st = all_stored(im, sl, n, &stored, err)) != SYMD_OK)
        return st;
    return stored ? link_all(im, sl, n, err) : add_read_file(im, shown, buf, len, err);
}

/* ---- files on disk ---------------------------------------------------------- */

/* Reads len bytes at off into buf; false (errno set) when it cannot. */
static bool read_at(int fd, uint8_t *buf, size_t len, uint64_t off, uint64_t *counted)
{
    size_t done = 0;
    while (done < len) {
        ssize_t k = pread(fd, buf + done, len - done, (off_t)(off + done));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO; /* the file shrank while it was read */
            return false;
        }
        done += (size_t)k;
    }
    *counted += len;
    return true;
}

/* The header and load commands of each slice, read from fd. */
static symd_status peek_file(int fd, const uint8_t *head, size_t head_len, peek_slice *sl,
                             size_t n, uint64_t *counted, symd_err *e)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t hdr[32];
        const uint8_t *h = hdr;
        if (sl[i].offset + sizeof hdr <= head_len)
            h = head + sl[i].offset;
        else if (!read_at(fd, hdr, sizeof hdr, sl[i].offset, counted))
            return symd_fail(e, SYMD_E_IO, "reading slice %zu: %s", i, strerror(errno));
        uint32_t size;
        symd_status st = peek_commands_size(h, sizeof hdr, &sl[i], &size, e);
        if (st != SYMD_OK)
            return st;
        uint8_t *cmds = NULL;
        if (sl[i].offset + size <= head_len) {
            st = peek_load_commands(head + sl[i].offset, size, &sl[i], e);
        } else if (!(cmds = malloc(size))) {
            return symd_fail(e, SYMD_E_NOMEM, "out of memory");
        } else if (!read_at(fd, cmds, size, sl[i].offset, counted)) {
            st = symd_fail(e, SYMD_E_IO, "reading load commands: %s", strerror(errno));
        } else {
            st = peek_load_commands(cmds, size, &sl[i], e);
        }
        free(cmds);
        if (st != SYMD_OK)
            return st;
    }
    return SYMD_OK;
}

/* A buffer of the file's size holding what the indexes read (the rest
 * zero): a small file read whole, a large one in its slices' ranges into
 * fresh zero pages (mapped, so the untouched rest costs no memory and goes
 * back to the system at once). Free with release_file. */
static symd_status read_needed(int fd, uint64_t size, const peek_slice *sl, size_t n,
                               uint8_t **out, uint64_t *counted, symd_err *e)
{
    *out = NULL;
    if (size > SIZE_MAX / 2)
        return symd_fail(e, SYMD_E_TOO_LARGE, "file of %llu bytes", (unsigned long long)size);
    if (size <= READ_WHOLE) {
        uint8_t *b = malloc(size ? (size_t)size : 1);
        if (!b)
            return symd_fail(e, SYMD_E_NOMEM, "out of memory");
        if (!read_at(fd, b, (size_t)size, 0, counted)) {
            free(b);
            return symd_fail(e, SYMD_E_IO, "reading: %s", strerror(errno));
        }
        *out = b;
        return SYMD_OK;
    }
    void *m = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0);
    if (m == MAP_FAILED)
        return symd_fail(e, SYMD_E_NOMEM, "out of memory for a %llu-byte file",
                         (unsigned long long)size);
    uint8_t *b = m;
    bool ok = read_at(fd, b, size < PEEK_HEAD ? (size_t)size : PEEK_HEAD, 0, counted);
    for (size_t i = 0; ok && i < n; i++)
        for (size_t k = 0; ok && k < sl[i].nneed; k++)
            ok = read_at(fd, b + sl[i].offset + sl[i].need[k].off, (size_t)sl[i].need[k].size,
                         sl[i].offset + sl[i].need[k].off, counted);
    if (!ok) {
        int en = errno;
        munmap(m, (size_t)size);
        return symd_fail(e, SYMD_E_IO, "reading: %s", strerror(en));
    }
    *out = b;
    return SYMD_OK;
}

static void release_file(uint8_t *b, uint64_t size)
{
    if (!b)
        return;
    if (size <= READ_WHOLE)
        free(b);
    else
        munmap(b, (size_t)size);
}

/* One regular file of a DeviceSupport folder. */
static symd_status import_file(importer *im, const char *path, uint64_t size, symd_err *err)
{
    import_report *r = im->r;
    r->files++;
    r->bytes += size;
    symd_err e = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        symd_fail(&e, SYMD_E_IO, "%s", strerror(errno));
        file_error(r, im->o->log, path, &e);
        return SYMD_OK;
    }
    uint8_t head[PEEK_HEAD];
    size_t head_len = size < PEEK_HEAD ? (size_t)size : PEEK_HEAD;
    peek_slice sl[MACHO_MAX_SLICES];
    size_t n = 0;
    symd_status st = SYMD_OK;
    if (!read_at(fd, head, head_len, 0, &r->bytes_read))
        st = symd_fail(&e, SYMD_E_IO, "%s", strerror(errno));
    if (st == SYMD_OK)
        st = peek_slices(head, head_len, size, sl, &n, &e);
    if (st == SYMD_OK)
        st = peek_file(fd, head, head_len, sl, n, &r->bytes_read, &e);
    symd_status out = SYMD_OK;
    if (st == SYMD_E_NOT_MACHO) {
        r->not_macho++;
    } else if (st != SYMD_OK) {
        file_error(r, im->o->log, path, &e);
    } else {
        r->slices += n;
        bool stored;
        out = all_stored(im, sl, n, &stored, err);
        if (out == SYMD_OK && stored) {
            out = link_all(im, sl, n, err);
        } else if (out == SYMD_OK) {
            uint8_t *buf;
            if ((st = read_needed(fd, size, sl, n, &buf, &r->bytes_read, &e)) != SYMD_OK)
                file_error(r, im->o->log, path, &e);
            else
                out = add_read_file(im, path, buf, (size_t)size, err);
            release_file(buf, size);
        }
    }
    close(fd);
    progress(im, false);
    return out;
}

static symd_status count_file(void *ctx, const char *path, const struct stat *st, int errnum)
{
    (void)path;
    (void)errnum;
    importer *im = ctx;
    if (st) {
        im->files_total++;
        im->bytes_total += (uint64_t)st->st_size;
    }
    return SYMD_OK;
}

static symd_status walk_file(void *ctx, const char *path, const struct stat *st, int errnum)
{
    importer *im = ctx;
    if (!st) {
        symd_err e = {0};
        symd_fail(&e, SYMD_E_IO, "folder cannot be read: %s", strerror(errnum));
        file_error(im->r, im->o->log, path, &e);
        return SYMD_OK;
    }
    /* An error here is the store's: it stops the walk, what was committed
     * stays (a run again resumes). */
    return import_file(im, path, (uint64_t)st->st_size, &im->fatal);
}

/* ---- sets --------------------------------------------------------------------- */

/* The set an import names: id, with the options' names over it; opened. */
static symd_status open_set(importer *im, devsupport_id *id, const char *where,
                            const char *source, symd_err *err)
{
    const import_options *o = im->o;
    if (o->os_name && *o->os_name)
        snprintf(id->os_name, sizeof id->os_name, "%s", o->os_name);
    if (o->os_version && *o->os_version)
        snprintf(id->os_version, sizeof id->os_version, "%s", o->os_version);
    if (o->os_build && *o->os_build)
        snprintf(id->os_build, sizeof id->os_build, "%s", o->os_build);
    if (!id->os_name[0])
        return symd_fail(err, SYMD_E_INVALID,
                         "%s: cannot tell which OS it holds: no '<OS> DeviceSupport' folder "
                         "above it and no Info.plist naming it; give the OS name (--os-name, "
                         "os_name=)", where);
    if (!id->os_build[0])
        return symd_fail(err, SYMD_E_INVALID,
                         "%s: cannot tell the OS build: the folder is not named '<version> "
                         "(<build>)' and no Info.plist names it; give the build (--os-build, "
                         "os_build=)", where);
    store_symbol_set want;
    memset(&want, 0, sizeof want);
    snprintf(want.os_name, sizeof want.os_name, "%s", id->os_name);
    snprintf(want.os_version, sizeof want.os_version, "%s", id->os_version);
    snprintf(want.os_build, sizeof want.os_build, "%s", id->os_build);
    snprintf(want.arch, sizeof want.arch, "%s", id->arch);
    snprintf(want.model, sizeof want.model, "%s", id->model);
    snprintf(want.source, sizeof want.source, "%s", source);
    symd_status st = store_symbol_set_open(im->s, &want, &im->r->set, NULL, err);
    if (st != SYMD_OK)
        return st;
    im->set_id = im->r->set.id;
    im->r->sets++;
    return SYMD_OK;
}

static void importer_init(importer *im, store *s, const import_options *o, import_report *r)
{
    memset(im, 0, sizeof *im);
    im->s = s;
    im->o = o;
    im->r = r;
    ingest_batch_init(&im->batch);
    im->t0 = im->last_progress = now_s();
}

static void importer_free(importer *im)
{
    ingest_batch_free(&im->batch);
    free(im->links);
}

/* Reads path's Info.plist into id, when there is one: one Xcode did not
 * write (binary, broken) is said, and the folder's name used instead. */
static void read_info_plist(const importer *im, const char *path, devsupport_id *id)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    static uint8_t buf[PLIST_MAX];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    symd_err e = {0};
    if (n < 0 || (size_t)n == sizeof buf)
        warn(im, "%s: not read (%s); the set is named from the folder's name", path,
             n < 0 ? strerror(errno) : "over 1 MiB");
    else if (devsupport_read_plist(buf, (size_t)n, id, &e) != SYMD_OK)
        warn(im, "%s: %s; the set is named from the folder's name", path, e.msg);
}

/* The last path component of path (trailing slashes aside) into out. */
static void last_component(const char *path, char *out, size_t cap, size_t skip)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (size_t k = 0; k <= skip; k++) {
        size_t n = strlen(tmp);
        while (n > 1 && tmp[n - 1] == '/')
            tmp[--n] = 0;
        char *slash = strrchr(tmp, '/');
        if (k == skip) {
            snprintf(out, cap, "%s", slash ? slash + 1 : tmp);
            return;
        }
        if (!slash) {
            out[0] = 0;
            return;
        }
        *slash = 0;
        if (!tmp[0]) {
            out[0] = 0;
            return;
        }
    }
}

/* One DeviceSupport folder (root holds Symbols/). */
static symd_status import_folder(store *s, const char *root, const import_options *o,
                                 import_report *r, symd_err *err)
{
    importer im;
    importer_init(&im, s, o, r);
    devsupport_id id;
    memset(&id, 0, sizeof id);
    char name[NAME_MAX + 1], parent[NAME_MAX + 1], sub[PATH_MAX], real[PATH_MAX];
    last_component(root, name, sizeof name, 0);
    last_component(root, parent, sizeof parent, 1);
    if (!devsupport_parse_name(name, strlen(name), &id))
        warn(&im, "%s: the folder's name is not '[<model>] <version> (<build>) [<arch>]'",
             root);
    devsupport_os_of_parent(parent, strlen(parent), id.os_name, sizeof id.os_name);
    if (join_path(sub, sizeof sub, root, "Info.plist"))
        read_info_plist(&im, sub, &id);
    if (!realpath(root, real))
        snprintf(real, sizeof real, "%s", root);
    symd_status st = open_set(&im, &id, root, real, err);
    if (st == SYMD_OK && !join_path(sub, sizeof sub, root, "Symbols"))
        st = symd_fail(err, SYMD_E_INVALID, "%s: path too long", root);
    if (st == SYMD_OK)
        st = devsupport_walk(sub, count_file, &im, err);
    if (st == SYMD_OK) {
        if (o->log)
            fprintf(o->log, "symd import: %s: set %lld, %s %s (%s)%s%s, %llu files, %.1f MB\n",
                    root, (long long)im.set_id, id.os_name, id.os_version, id.os_build,
                    id.arch[0] ? " " : "", id.arch, (unsigned long long)im.files_total,
                    (double)im.bytes_total / 1e6);
        st = devsupport_walk(sub, walk_file, &im, err);
        if (st != SYMD_OK && im.fatal.kind != SYMD_OK)
            *err = im.fatal;
    }
    if (st == SYMD_OK)
        st = flush(&im, err);
    progress(&im, true);
    importer_free(&im);
    return st;
}

/* ---- dyld shared caches -------------------------------------------------------- */

/* A file of a cache, mapped. */
typedef struct {
    char path[PATH_MAX];
    uint8_t *data;
    size_t len;
} cache_part;

static symd_status map_part(cache_part *p, symd_err *err)
{
    int fd = open(p->path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int en = errno;
        if (fd >= 0)
            close(fd);
        return symd_fail(err, SYMD_E_IO, "%s: %s", p->path, fd < 0 ? strerror(en) :
                         "not a regular file");
    }
    p->len = (size_t)st.st_size;
    p->data = NULL;
    if (p->len) {
        void *m = mmap(NULL, p->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int en = errno;
            close(fd);
            return symd_fail(err, SYMD_E_IO, "%s: %s", p->path, strerror(en));
        }
        p->data = m;
    }
    close(fd);
    return SYMD_OK;
}

/* PLATFORM_* of <mach-o/loader.h>: the OS a cache's header names. */
static const char *platform_name(uint32_t p)
{
    static const char *const names[] = {
        [1] = "macOS",   [2] = "iOS",          [3] = "tvOS",         [4] = "watchOS",
        [5] = "bridgeOS", [6] = "macCatalyst", [7] = "iOS Simulator", [8] = "tvOS Simulator",
        [9] = "watchOS Simulator", [10] = "DriverKit", [11] = "visionOS",
        [12] = "visionOS Simulator"};
    return p < sizeof names / sizeof names[0] ? names[p] : NULL;
}

static macho_kind kind_of_filetype(uint32_t t)
{
    return t == 6 ? MACHO_KIND_DYLIB : t == 2 ? MACHO_KIND_EXECUTABLE : t == 7 ? MACHO_KIND_DYLINKER
         : t == 8 ? MACHO_KIND_BUNDLE : MACHO_KIND_OTHER;
}

/* Every image of an opened cache into a set named from its header. */
static symd_status import_cache_images(importer *im, const dyld_cache *c, const char *path,
                                       symd_err *err)
{
    devsupport_id id;
    memset(&id, 0, sizeof id);
    const char *pn = platform_name(c->platform);
    snprintf(id.os_name, sizeof id.os_name, "%s", pn ? pn : "");
    if (c->os_version) {
        uint32_t v = c->os_version;
        if (v & 0xff)
            snprintf(id.os_version, sizeof id.os_version, "%u.%u.%u", v >> 16, (v >> 8) & 0xff,
                     v & 0xff);
        else
            snprintf(id.os_version, sizeof id.os_version, "%u.%u", v >> 16, (v >> 8) & 0xff);
    }
    /* The header names no build: the cache's UUID stands for it. */
    uuid_format(c->uuid, id.os_build);
    snprintf(id.arch, sizeof id.arch, "%s", c->arch);
    char real[PATH_MAX];
    if (!realpath(path, real))
        snprintf(real, sizeof real, "%s", path);
    symd_status st = open_set(im, &id, path, real, err);
    for (size_t i = 0; st == SYMD_OK && i < c->nimages; i++) {
        const dyld_cache_image *ci = &c->images[i];
        if (ci->alias_of >= 0)
            continue; /* the same image under another path */
        im->r->slices++;
        bool stored;
        if ((st = is_stored(im->s, ci->uuid, ci->arch, &stored, err)) != SYMD_OK)
            break;
        if (stored) {
            st = add_link(im, ci->uuid, ci->arch, err);
        } else {
            store_image meta;
            memset(&meta, 0, sizeof meta);
            uint8_t *blob;
            size_t len;
            st = dyld_cache_image_symindex(c, i, &blob, &len, &meta.symbols, &meta.functions,
                                           err);
            if (st != SYMD_OK)
                break;
            memcpy(meta.uuid, ci->uuid, 16);
            snprintf(meta.arch, sizeof meta.arch, "%s", ci->arch);
            snprintf(meta.name, sizeof meta.name, "%s", base_name(ci->path));
            snprintf(meta.kind, sizeof meta.kind, "%s",
                     macho_kind_name(kind_of_filetype(ci->filetype)));
            meta.text_vmaddr = ci->text_vmaddr;
            meta.text_size = ci->text_vmsize;
            st = ingest_add_indexed(&im->batch, &meta, blob, len, err);
            im->batch_bytes += len;
        }
        if (st == SYMD_OK)
            st = maybe_flush(im, err);
    }
    if (st == SYMD_OK)
        st = flush(im, err);
    return st;
}

/* A dyld shared cache: the main file at path, its subcaches and .symbols
 * file beside it. The reader checks it all before anything is stored. */
static symd_status import_cache(store *s, const char *path, const import_options *o,
                                import_report *r, symd_err *err)
{
    enum { MAX_PARTS = 257 };
    cache_part *parts = calloc(MAX_PARTS, sizeof *parts);
    dyld_cache_file *files = calloc(MAX_PARTS, sizeof *files);
    dyld_cache_suffix *sfx = NULL;
    size_t nparts = 0, nsfx = 0;
    importer im;
    importer_init(&im, s, o, r);
    symd_status st = parts && files ? SYMD_OK : symd_fail(err, SYMD_E_NOMEM, "out of memory");
    if (st == SYMD_OK) {
        snprintf(parts[0].path, sizeof parts[0].path, "%s", path);
        if ((st = map_part(&parts[0], err)) == SYMD_OK)
            nparts = 1;
    }
    if (st == SYMD_OK) {
        files[0] = (dyld_cache_file){path, "", parts[0].data, parts[0].len};
        st = dyld_cache_suffixes(&files[0], &sfx, &nsfx, err);
    }
    for (size_t i = 0; st == SYMD_OK && i < nsfx && nparts < MAX_PARTS; i++) {
        cache_part *p = &parts[nparts];
        snprintf(p->path, sizeof p->path, "%s%s", path, sfx[i].s);
        if (access(p->path, F_OK) != 0)
            continue; /* the reader says which part is missing */
        if ((st = map_part(p, err)) != SYMD_OK)
            break;
        files[nparts] = (dyld_cache_file){p->path, sfx[i].s, p->data, p->len};
        nparts++;
    }
    dyld_cache c;
    bool opened = false;
    if (st == SYMD_OK && (st = dyld_cache_open(files, nparts, &c, err)) == SYMD_OK)
        opened = true;
    if (opened) {
        for (size_t i = 0; i < nparts; i++) {
            r->files++;
            r->bytes += parts[i].len;
        }
        im.files_total = r->files;
        im.bytes_total = r->bytes;
        if (c.symbols_file_missing)
            warn(&im, "%s: its .symbols file is not beside it: images get only their "
                      "exported symbols", path);
        st = import_cache_images(&im, &c, path, err);
        r->bytes_read += r->bytes; /* mapped: the reader reads what it needs of it */
        dyld_cache_close(&c);
        progress(&im, true);
    }
    for (size_t i = 0; i < nparts; i++)
        if (parts[i].data)
            munmap(parts[i].data, parts[i].len);
    free(parts);
    free(files);
    free(sfx);
    importer_free(&im);
    return st;
}

/* ---- paths ------------------------------------------------------------------------ */

static bool is_devsupport_folder(const char *path)
{
    char sub[PATH_MAX];
    struct stat st;
    return join_path(sub, sizeof sub, path, "Symbols") && stat(sub, &st) == 0 &&
           S_ISDIR(st.st_mode);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* A folder holding DeviceSupport folders: each is its own set; one that
 * fails is said and counted, and the others go on (a database failure stops
 * them). */
static symd_status import_folders(store *s, const char *path, const import_options *o,
                                  import_report *r, symd_err *err)
{
    struct dirent **ents;
    int n = scandir(path, &ents, NULL, by_name);
    if (n < 0)
        return symd_fail(err, SYMD_E_IO, "%s: %s", path, strerror(errno));
    symd_status first = SYMD_OK;
    size_t found = 0;
    for (int i = 0; i < n; i++) {
        char sub[PATH_MAX];
        const char *nm = ents[i]->d_name;
        bool skip = nm[0] == '.' || first == SYMD_E_DB || first == SYMD_E_UNAVAILABLE ||
                    first == SYMD_E_NOMEM;
        if (!skip && join_path(sub, sizeof sub, path, nm) && is_devsupport_folder(sub)) {
            found++;
            symd_err e = {0};
            symd_status st = import_folder(s, sub, o, r, &e);
            if (st != SYMD_OK && first == SYMD_OK) { /* returned: the caller says it */
                first = st;
                *err = e;
                r->errors++;
            } else if (st != SYMD_OK) {
                file_error(r, o->log, sub, &e);
            }
        }
        free(ents[i]);
    }
    free(ents);
    if (!found)
        return symd_fail(err, SYMD_E_INVALID,
                         "%s: no DeviceSupport folder (one holding Symbols/) in it", path);
    return first;
}

symd_status import_path(store *s, const char *path, const import_options *o, import_report *r,
                        symd_err *err)
{
    double t0 = now_s();
    struct stat st;
    symd_status res;
    if (stat(path, &st) != 0) {
        res = symd_fail(err, SYMD_E_IO, "%s: %s", path, strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
        res = is_devsupport_folder(path) ? import_folder(s, path, o, r, err)
                                         : import_folders(s, path, o, r, err);
    } else {
        uint8_t magic[4] = {0};
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        bool cache = fd >= 0 && read(fd, magic, 4) == 4 && dyld_cache_is_cache(magic, 4);
        if (fd >= 0)
            close(fd);
        res = cache ? import_cache(s, path, o, r, err)
                    : symd_fail(err, SYMD_E_INVALID, "%s: neither a DeviceSupport folder (one "
                                "holding Symbols/), a folder of them, nor a dyld shared cache",
                                path);
    }
    r->seconds += now_s() - t0;
    return res;
}

/* ---- zips -------------------------------------------------------------------------- */

typedef struct {
    importer im;
    devsupport_id id;
    char root[512];    /* the members' common folder ("" for "Symbols/..." at the top) */
    bool have_root;
    bool have_symbols; /* a member under <root>/Symbols/ */
    symd_err *err;
} zip_ctx;

/* Where a member lies: its folder (root) and the rest, past
 * "<OS> DeviceSupport/" (whose OS goes to id) and the folder. */
static bool member_parts(const char *name, devsupport_id *id, char *root, size_t cap,
                         const char **rest)
{
    const char *p = name;
    const char *slash = strchr(p, '/');
    if (!slash)
        return false;
    char os[64];
    if (devsupport_os_of_parent(p, (size_t)(slash - p), os, sizeof os)) {
        snprintf(id->os_name, sizeof id->os_name, "%s", os);
        p = slash + 1;
        if (!(slash = strchr(p, '/')))
            return false;
    }
    if ((size_t)(slash - p) == 7 && memcmp(p, "Symbols", 7) == 0) {
        root[0] = 0;
        *rest = p;
        return true;
    }
    if ((size_t)(slash - p) >= cap)
        return false;
    snprintf(root, cap, "%.*s", (int)(slash - p), p);
    *rest = slash + 1;
    return true;
}

static symd_status zip_member(void *ctx, const char *name, const uint8_t *data, size_t len,
                              symd_err *err)
{
    zip_ctx *z = ctx;
    char root[512];
    const char *rest;
    /* Finder's zips carry AppleDouble files beside the real ones. */
    if (strncmp(name, "__MACOSX/", 9) == 0 || strncmp(base_name(name), "._", 2) == 0)
        return SYMD_OK;
    if (!member_parts(name, &z->id, root, sizeof root, &rest))
        return SYMD_OK; /* a file at the top, outside any folder */
    if (!z->have_root) {
        snprintf(z->root, sizeof z->root, "%s", root);
        z->have_root = true;
    } else if (strcmp(root, z->root) != 0) {
        return symd_fail(err, SYMD_E_INVALID, "the zip holds more than one folder ('%.100s' "
                         "and '%.100s'): post one DeviceSupport folder at a time", z->root,
                         root);
    }
    if (strcmp(rest, "Info.plist") == 0) {
        symd_err e = {0};
        if (devsupport_read_plist(data, len, &z->id, &e) != SYMD_OK)
            warn(&z->im, "%s: %s; the set is named from the folder's name", name, e.msg);
        return SYMD_OK;
    }
    if (strncmp(rest, "Symbols/", 8) != 0)
        return SYMD_OK;
    z->have_symbols = true;
    return import_bytes(&z->im, name, data, len, err);
}

symd_status import_zip(store *s, const uint8_t *buf, size_t len, const unzip_limits *lim,
                       const import_options *o, import_report *r, symd_err *err)
{
    double t0 = now_s();
    zip_ctx z;
    memset(&z, 0, sizeof z);
    importer_init(&z.im, s, o, r);
    z.err = err;
    symd_status st = unzip_each(buf, len, lim, zip_member, &z, err);
    if (st == SYMD_OK && !z.have_symbols)
        st = symd_fail(err, SYMD_E_INVALID, "the zip holds no Symbols/ folder: not a "
                       "DeviceSupport folder");
    if (st == SYMD_OK) {
        if (!devsupport_parse_name(z.root, strlen(z.root), &z.id) && z.root[0])
            warn(&z.im, "'%s': the folder's name is not '[<model>] <version> (<build>) "
                        "[<arch>]'", z.root);
        st = open_set(&z.im, &z.id, z.root[0] ? z.root : "the zip", "upload", err);
    }
    if (st == SYMD_OK)
        st = flush(&z.im, err);
    importer_free(&z.im);
    r->seconds += now_s() - t0;
    return st;
}

void import_summary(const import_report *r, char *out, size_t cap)
{
    snprintf(out, cap,
             "files %llu, Mach-O slices %llu, stored %llu, skipped %llu (stored already), not "
             "Mach-O %llu, errors %llu, %.1f MB (%.1f MB read), %.2f s",
             (unsigned long long)r->files, (unsigned long long)r->slices,
             (unsigned long long)r->stored, (unsigned long long)r->skipped,
             (unsigned long long)r->not_macho, (unsigned long long)r->errors,
             (double)r->bytes / 1e6, (double)r->bytes_read / 1e6, r->seconds);
}

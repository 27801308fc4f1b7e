/* symd command line: serve, upload, import, atos, info, crash, demangle, migrate,
 * dump-syms. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include "../breakpad/dumpsyms.h"
#include "../breakpad/unwrows.h"
#include "../macho/macho.h"
#include "../macho/dyld_cache.h"
#include "../demangle/demangle.h"
#include "../ingest/ingest.h"
#include "../import/import.h"
#include "../store/store.h"
#include "../macho/symindex.h"
#include "../util/hex.h"
#include "../parser/crash.h"
#include "crashsym.h"
#include "mdwalk.h"
#include "http.h"
#include "mdwalk.h"
#include "regroup.h"
#include "../client/upload.h"

#define DEFAULT_LISTEN "127.0.0.1:8080"
#define DEFAULT_DB "symd.db"
#define DEFAULT_CACHE_MB 256
#define DEFAULT_MAX_UPLOAD (1ull << 30)
#define DEFAULT_MAX_JSON (32ull << 20)

static void usage(FILE *f)
{
    fputs("usage: symd <command> [options]\n"
          "\n"
          "  serve  [--listen HOST:PORT] [--db FILE|URI] [--db-pool N] [--cache-mb N]\n"
          "         [--upload-token T] [--report-token T] [--read-token T]\n"
          "         [--upload-token-file F] [--report-token-file F] [--read-token-file F]\n"
          "         [--keep-days N] [--max-crashes N] [--prune-every S]\n"
          "         [--grouping-rules FILE]\n"
          "         [--max-upload BYTES] [--max-json BYTES] [--threads N]\n"
          "         [--access-log FILE|-|off] [--max-connections N] [--max-per-ip N]\n"
          "         [--idle-timeout S] [--header-timeout S] [--request-timeout S]\n"
          "         [--shutdown-grace S] [--max-inflight-mb N] [--request-mem-factor N]\n"
          "         [--request-mem-mb N] [--admission-wait S]\n"
          "         [--max-unzipped BYTES] [--max-unzipped-member BYTES]\n"
          "         [--max-zip-members N] [--max-zip-ratio N]\n"
          "         [--webhook URL]... [--webhook-slack URL]...\n"
          "         [--webhook-secret S | --webhook-secret-file F]\n"
          "         [--webhook-spike-factor N] [--webhook-spike-min N]\n"
          "         [--webhook-timeout S] [--webhook-backoff-max S] [--webhook-give-up S]\n"
          "         [--chunk-size BYTES] [--chunk-budget BYTES] [--chunk-ttl S]\n"
          "         [--dedup on|off]\n"
          "  upload [--db FILE] FILE...          store binaries, dSYMs, Breakpad .sym files\n"
          "                                      (or zips of them) in the DB\n"
          "  upload --url URL [--token T | --token-file F] [--json] [--wait]\n"
          "         [--jobs N] [--chunk-size BYTES] [--timeout S] [--retries N]\n"
          "         [--wait-timeout S] [--plain] [--progress|--no-progress] PATH...\n"
          "                                      send them to a symd server (folders,\n"
          "                                      .xcarchive, bundles, zips walked): only\n"
          "                                      what it lacks, in chunks (SYMD_URL,\n"
          "                                      SYMD_UPLOAD_TOKEN[_FILE] as twins)\n"
          "  import [--db FILE|URI] [--os-name N] [--os-version V] [--os-build B] PATH...\n"
          "                                      Apple's system libraries as symbol sets:\n"
          "                                      a DeviceSupport folder, a folder of them,\n"
          "                                      or a dyld shared cache\n"
          "  atos   -o FILE|UUID [-arch A] [-l LOADADDR | -s SLIDE] [-i] [--db FILE] ADDR...\n"
          "  info   FILE...                      slices, UUIDs, arch, kind, counts; of a\n"
          "                                      dyld shared cache (with its subcaches\n"
          "                                      and .symbols beside it) every image\n"
          "  crash  [--db FILE] [--json] [--full-names] REPORT\n"
          "                                      a report symbolicated, as text (or JSON)\n"
          "  demangle [--style full|simplified]  names on stdin, one per line, demangled\n"
          "  migrate --from FILE|URI --to URI      copy a store (SQLite) into an empty one\n"
          "                                      (PostgreSQL), then verify it\n"
          "  dump-syms [--arch A] [-o OUT] BINARY [DSYM]\n"
          "                                      a Breakpad .sym of a Mach-O slice and its\n"
          "                                      dSYM (a .dSYM bundle or its DWARF file),\n"
          "                                      STACK CFI from its unwind tables\n"
          "\n"
          "--db is a SQLite file or a postgresql:// (postgres://) URI: symd nodes on one\n"
          "PostgreSQL database serve the same images and crashes. --db-pool is the\n"
          "number of database connections (default: one per serving thread, plus one).\n"
          "\n"
          "Options may also come from the environment: SYMD_LISTEN, SYMD_DB, SYMD_DB_POOL,\n"
          "SYMD_CACHE_MB, SYMD_UPLOAD_TOKEN, SYMD_REPORT_TOKEN, SYMD_READ_TOKEN (and\n"
          "SYMD_*_TOKEN_FILE), SYMD_KEEP_DAYS, SYMD_MAX_CRASHES, SYMD_MAX_UPLOAD, SYMD_MAX_JSON,\n"
          "SYMD_THREADS, SYMD_CHUNK_SIZE, SYMD_CHUNK_BUDGET, SYMD_CHUNK_TTL, SYMD_DEDUP,\n"
          "SYMD_WEBHOOK and SYMD_WEBHOOK_SLACK (URLs separated by spaces),\n"
          "SYMD_WEBHOOK_SECRET[_FILE], SYMD_WEBHOOK_SPIKE_FACTOR, SYMD_WEBHOOK_SPIKE_MIN,\n"
          "SYMD_WEBHOOK_TIMEOUT, SYMD_WEBHOOK_BACKOFF_MAX, SYMD_WEBHOOK_GIVE_UP,\n"
          "SYMD_MAX_UNZIPPED, SYMD_MAX_UNZIPPED_MEMBER,\n"
          "SYMD_MAX_ZIP_MEMBERS (upload reads the last three too). Flags win\n"
          "over the environment.\n",
          f);
}

/* A whole file mapped read-only. */
typedef struct {
    uint8_t *data;
    size_t len;
} mapped;

static int map_file(const char *path, mapped *m)
{
    m->data = NULL;
    m->len = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "symd: %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "symd: %s: not a regular file\n", path);
        close(fd);
        return -1;
    }
    m->len = (size_t)st.st_size;
    if (m->len) {
        void *p = mmap(NULL, m->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "symd: %s: %s\n", path, strerror(errno));
            close(fd);
            return -1;
        }
        m->data = p;
    }
    close(fd);
    return 0;
}

static void unmap_file(mapped *m)
{
    if (m->data)
        munmap(m->data, m->len);
}

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

static int parse_size_opt(const char *name, const char *v, uint64_t *out)
{
    if (!v || !num_parse_u64(v, out)) {
        fprintf(stderr, "symd: %s needs a number below 2^64, got '%s'\n", name, v ? v : "");
        return -1;
    }
    return 0;
}

/* "on" or "off" into *out; -1 after a message naming the flag (or
 * variable) for anything else. */
static int parse_on_off(const char *name, const char *v, bool *out)
{
    if (v && (!strcmp(v, "on") || !strcmp(v, "off"))) {
        *out = !strcmp(v, "on");
        return 0;
    }
    fprintf(stderr, "symd: %s is on or off, got '%s'\n", name, v ? v : "");
    return -1;
}

/* A number from lo to hi; -1 after a message naming the flag (or
 * variable) when it is no number or out of that range. */
static int parse_range_opt(const char *name, const char *v, uint64_t lo, uint64_t hi,
                           uint64_t *out)
{
    if (parse_size_opt(name, v, out))
        return -1;
    if (*out < lo || *out > hi) {
        fprintf(stderr, "symd serve: %s must be from %llu to %llu, got '%s'\n", name,
                (unsigned long long)lo, (unsigned long long)hi, v);
        return -1;
    }
    return 0;
}

/* The ranges of symd serve's numbers, for the flag and its variable. */
#define R_CACHE_MB 0, (1u << 20)
#define R_THREADS 0, 1024
#define R_DB_POOL 0, 1024
#define R_MAX_CONNS 1, 100000
#define R_MAX_PER_IP 0, 100000
#define R_SECONDS 0, 86400
#define R_INFLIGHT_MB 1, (1u << 30)
#define R_KEEP_DAYS 0, 100000
#define R_MAX_CRASHES 0, INT64_MAX
#define R_SPIKE_FACTOR 0, 1000000
#define R_SPIKE_MIN 1, 1000000000
#define R_HOOK_TIMEOUT 1, 300
#define R_HOOK_SECONDS 1, 30 * 86400
#define R_PRUNE_EVERY 1, 86400
#define R_MEM_FACTOR 1, 1000
#define R_MEM_MB 1, (1u << 20)
/* A chunk fits a PostgreSQL bytea and a request's body comfortably. */
#define R_CHUNK_SIZE (64u << 10), (256u << 20)
#define R_CHUNK_BUDGET (1u << 20), INT64_MAX
#define R_CHUNK_TTL 0, (30u * 86400)
#define DEFAULT_CHUNK_SIZE "8388608"     /* 8 MiB */
#define DEFAULT_CHUNK_BUDGET "2147483648" /* 2 GiB */
#define DEFAULT_CHUNK_TTL "3600"         /* an hour */

/* Zip limits: the defaults, then the environment. Returns -1 on a bad value. */
static int zip_limits_from_env(unzip_limits *l)
{
    *l = unzip_default_limits();
    const char *v;
    if ((v = env_or("SYMD_MAX_UNZIPPED", NULL)) &&
        parse_size_opt("SYMD_MAX_UNZIPPED", v, &l->max_total))
        return -1;
    if ((v = env_or("SYMD_MAX_UNZIPPED_MEMBER", NULL)) &&
        parse_size_opt("SYMD_MAX_UNZIPPED_MEMBER", v, &l->max_member))
        return -1;
    if ((v = env_or("SYMD_MAX_ZIP_MEMBERS", NULL)) &&
        parse_size_opt("SYMD_MAX_ZIP_MEMBERS", v, &l->max_members))
        return -1;
    if ((v = env_or("SYMD_MAX_ZIP_RATIO", NULL)) &&
        parse_size_opt("SYMD_MAX_ZIP_RATIO", v, &l->max_ratio))
        return -1;
    return 0;
}

/* A token kept in a file (so it stays out of process listings): its first
 * line, trailing blanks and CR dropped. NULL (and a message) when the file
 * cannot be read, is empty or holds a NUL. The string lives as long as the
 * process. */
static char *token_from_file(const char *what, const char *path)
{
    FILE *f = fopen(path, "rb");
    char buf[4096 + 2]; /* 4096 bytes and one more, to tell a longer file */
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    size_t len = strcspn(buf, "\n");
    while (len > 0 && (buf[len - 1] == '\r' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
        len--;
    /* strcspn stops at a NUL as at a newline: look for one in every byte
     * read, or "x\0secret" would be the token "x" */
    bool nul = memchr(buf, 0, n) != NULL;
    if (!f || len == 0 || nul || n > 4096) {
        fprintf(stderr, "symd serve: %s %s: %s\n", what, path,
                !f ? "cannot be read" : n > 4096 ? "is over 4096 bytes"
                : nul ? "holds a NUL byte" : "holds no token on its first line");
        return NULL;
    }
    return strndup(buf, len);
}

/* The three roles' tokens: flags win over the environment; a token and a
 * token file of one role at one level (both flags, or both variables) is
 * refused as ambiguous, and so is an empty token (it would leave the role
 * open while looking closed). 0, or -1 after a message. */
static int resolve_tokens(const char *const flag_token[3], const char *const flag_file[3],
                          server_config *cfg)
{
    static const char *const role[3] = {"upload", "report", "read"};
    static const char *const env_token[3] = {"SYMD_UPLOAD_TOKEN", "SYMD_REPORT_TOKEN",
                                             "SYMD_READ_TOKEN"};
    static const char *const env_file[3] = {"SYMD_UPLOAD_TOKEN_FILE", "SYMD_REPORT_TOKEN_FILE",
                                            "SYMD_READ_TOKEN_FILE"};
    const char **out[3] = {&cfg->upload_token, &cfg->report_token, &cfg->read_token};
    for (int k = 0; k < 3; k++) {
        const char *tok = flag_token[k], *file = flag_file[k];
        char what[64], what_file[64];
        snprintf(what, sizeof what, "--%s-token", role[k]);
        snprintf(what_file, sizeof what_file, "--%s-token-file", role[k]);
        if (!tok && !file) { /* nothing on the command line: the environment */
            tok = getenv(env_token[k]);
            file = getenv(env_file[k]);
            snprintf(what, sizeof what, "%s", env_token[k]);
            snprintf(what_file, sizeof what_file, "%s", env_file[k]);
        }
        if (tok && file) {
            fprintf(stderr, "symd serve: %s and %s both given: give the %s token once\n", what,
                    what_file, role[k]);
            return -1;
        }
        if (tok && !*tok) {
            fprintf(stderr, "symd serve: %s is empty: give a token, or leave the %s role "
                            "open by not giving one\n", what, role[k]);
            return -1;
        }
        if (file) {
            /* kept for the life of the process (static: no leak at exit) */
            static char *from_file[3];
            free(from_file[k]);
            if (!(tok = from_file[k] = token_from_file(what_file, file)))
                return -1;
        }
        *out[k] = tok;
    }
    return 0;
}

/* Appends the space-separated URLs of environment variable name to list
 * (copies kept for the life of the process), counting them in *n. 0, or -1
 * after a message. */
static int webhooks_from_env(const char *name, const char **list, size_t *n, size_t *total)
{
    const char *v = getenv(name);
    while (v && *v) {
        v += strspn(v, " \t\r\n");
        size_t len = strcspn(v, " \t\r\n");
        if (!len)
            break;
        if (*total == WEBHOOK_TARGETS_MAX) {
            fprintf(stderr, "symd serve: %s: at most %d webhook targets\n", name,
                    WEBHOOK_TARGETS_MAX);
            return -1;
        }
        /* kept here for the life of the process (a flag may drop it from list) */
        static char *kept[2 * WEBHOOK_TARGETS_MAX];
        static size_t nkept;
        char *u = nkept < sizeof kept / sizeof *kept ? strndup(v, len) : NULL;
        if (!u) {
            fprintf(stderr, "symd serve: out of memory\n");
            return -1;
        }
        kept[nkept++] = u;
        list[(*n)++] = u;
        (*total)++;
        v += len;
    }
    return 0;
}

/* The webhook targets and their secret into w: every URL one symd can send
 * to (webhook_url_ok: https refused with how to reach one), none given
 * twice, a secret from the flag or its file (not both); a secret with no
 * target is refused as a mistake. 0, or -1 after a message. */
static int resolve_webhooks(webhook_config *w, const char **urls, const char **slack,
                            const char *secret, const char *secret_file)
{
    w->urls = urls;
    w->slack_urls = slack;
    size_t n = w->nurls + w->nslack;
    for (size_t i = 0; i < n; i++) {
        const char *u = i < w->nurls ? urls[i] : slack[i - w->nurls];
        char why[600];
        if (!webhook_url_ok(u, why, sizeof why)) {
            fprintf(stderr, "symd serve: --webhook %s\n", why);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(u, j < w->nurls ? urls[j] : slack[j - w->nurls]) == 0) {
                fprintf(stderr, "symd serve: webhook %s is given twice\n", u);
                return -1;
            }
    }
    if (secret && secret_file) {
        fprintf(stderr, "symd serve: --webhook-secret and --webhook-secret-file both given: "
                        "give the secret once\n");
        return -1;
    }
    if (secret && !*secret) {
        fprintf(stderr, "symd serve: --webhook-secret is empty\n");
        return -1;
    }
    if ((secret || secret_file) && !n) {
        fprintf(stderr, "symd serve: a webhook secret without --webhook: give the URL to send "
                        "to\n");
        return -1;
    }
    if (secret_file) {
        static char *from_file; /* kept for the life of the process */
        if (!(secret = from_file = token_from_file("--webhook-secret-file", secret_file)))
            return -1;
    }
    w->secret = secret;
    return 0;
}

static int cmd_serve(int argc, char **argv)
{
    server_config cfg = {0};
    cfg.listen = env_or("SYMD_LISTEN", DEFAULT_LISTEN);
    cfg.db = env_or("SYMD_DB", DEFAULT_DB);
    /* Per role (upload, report, read): the token and the token file given
     * as flags and in the environment; resolved after the flags. */
    const char *flag_token[3] = {NULL, NULL, NULL}, *flag_file[3] = {NULL, NULL, NULL};
    uint64_t keep_days = 0, max_crashes = 0, prune_every = 60;
    uint64_t cache_mb = DEFAULT_CACHE_MB, threads = 0, db_pool = 0;
    cfg.max_upload = DEFAULT_MAX_UPLOAD;
    cfg.max_json = DEFAULT_MAX_JSON;
    cfg.access_log = env_or("SYMD_ACCESS_LOG", "-");
    cfg.grouping_rules = getenv("SYMD_GROUPING_RULES");
    if (parse_on_off("SYMD_DEDUP", env_or("SYMD_DEDUP", "on"), &cfg.dedup))
        return 2;
    if (cfg.grouping_rules && !*cfg.grouping_rules)
        cfg.grouping_rules = NULL;
    uint64_t max_conns, max_per_ip, idle_s, header_s, request_s, grace_s, inflight_mb;
    uint64_t mem_factor, mem_mb, admit_s;
    /* webhooks: targets as given (argv outlives the server), the secret */
    static const char *hook_urls[WEBHOOK_TARGETS_MAX], *slack_urls[WEBHOOK_TARGETS_MAX];
    const char *hook_secret = NULL, *hook_secret_file = NULL;
    uint64_t spike_factor, spike_min, hook_timeout, hook_backoff, hook_give_up;
    bool hook_flags = false, hook_secret_flags = false; /* flags replace the variables */
    uint64_t chunk_size, chunk_budget, chunk_ttl;
    if (parse_range_opt("SYMD_CACHE_MB", env_or("SYMD_CACHE_MB", "256"), R_CACHE_MB, &cache_mb) ||
        parse_size_opt("SYMD_MAX_UPLOAD", env_or("SYMD_MAX_UPLOAD", "1073741824"),
                       &cfg.max_upload) ||
        parse_size_opt("SYMD_MAX_JSON", env_or("SYMD_MAX_JSON", "33554432"),
                       &cfg.max_json) ||
        parse_range_opt("SYMD_THREADS", env_or("SYMD_THREADS", "0"), R_THREADS, &threads) ||
        parse_range_opt("SYMD_DB_POOL", env_or("SYMD_DB_POOL", "0"), R_DB_POOL, &db_pool) ||
        parse_range_opt("SYMD_MAX_CONNECTIONS", env_or("SYMD_MAX_CONNECTIONS", "1000"),
                        R_MAX_CONNS, &max_conns) ||
        parse_range_opt("SYMD_MAX_PER_IP", env_or("SYMD_MAX_PER_IP", "200"), R_MAX_PER_IP,
                        &max_per_ip) ||
        parse_range_opt("SYMD_IDLE_TIMEOUT", env_or("SYMD_IDLE_TIMEOUT", "30"), R_SECONDS, &idle_s) ||
        parse_range_opt("SYMD_HEADER_TIMEOUT", env_or("SYMD_HEADER_TIMEOUT", "10"), R_SECONDS,
                        &header_s) ||
        parse_range_opt("SYMD_REQUEST_TIMEOUT", env_or("SYMD_REQUEST_TIMEOUT", "300"),
                        R_SECONDS, &request_s) ||
        parse_range_opt("SYMD_SHUTDOWN_GRACE", env_or("SYMD_SHUTDOWN_GRACE", "30"), R_SECONDS,
                        &grace_s) ||
        parse_range_opt("SYMD_MAX_INFLIGHT_MB", env_or("SYMD_MAX_INFLIGHT_MB", "2048"),
                        R_INFLIGHT_MB, &inflight_mb) ||
        parse_range_opt("SYMD_REQUEST_MEM_FACTOR", env_or("SYMD_REQUEST_MEM_FACTOR", "4"),
                        R_MEM_FACTOR, &mem_factor) ||
        parse_range_opt("SYMD_REQUEST_MEM_MB", env_or("SYMD_REQUEST_MEM_MB", "64"), R_MEM_MB,
                        &mem_mb) ||
        parse_range_opt("SYMD_ADMISSION_WAIT", env_or("SYMD_ADMISSION_WAIT", "30"), R_SECONDS,
                        &admit_s) ||
        parse_range_opt("SYMD_KEEP_DAYS", env_or("SYMD_KEEP_DAYS", "0"), R_KEEP_DAYS, &keep_days) ||
        parse_range_opt("SYMD_MAX_CRASHES", env_or("SYMD_MAX_CRASHES", "0"), R_MAX_CRASHES,
                        &max_crashes) ||
        parse_range_opt("SYMD_PRUNE_EVERY", env_or("SYMD_PRUNE_EVERY", "60"), R_PRUNE_EVERY,
                        &prune_every) ||
        parse_range_opt("SYMD_CHUNK_SIZE", env_or("SYMD_CHUNK_SIZE", DEFAULT_CHUNK_SIZE),
                        R_CHUNK_SIZE, &chunk_size) ||
        parse_range_opt("SYMD_CHUNK_BUDGET", env_or("SYMD_CHUNK_BUDGET", DEFAULT_CHUNK_BUDGET),
                        R_CHUNK_BUDGET, &chunk_budget) ||
        parse_range_opt("SYMD_CHUNK_TTL", env_or("SYMD_CHUNK_TTL", DEFAULT_CHUNK_TTL),
                        R_CHUNK_TTL, &chunk_ttl) ||
        parse_range_opt("SYMD_WEBHOOK_SPIKE_FACTOR", env_or("SYMD_WEBHOOK_SPIKE_FACTOR", "5"),
                        R_SPIKE_FACTOR, &spike_factor) ||
        parse_range_opt("SYMD_WEBHOOK_SPIKE_MIN", env_or("SYMD_WEBHOOK_SPIKE_MIN", "10"),
                        R_SPIKE_MIN, &spike_min) ||
        parse_range_opt("SYMD_WEBHOOK_TIMEOUT", env_or("SYMD_WEBHOOK_TIMEOUT", "10"),
                        R_HOOK_TIMEOUT, &hook_timeout) ||
        parse_range_opt("SYMD_WEBHOOK_BACKOFF_MAX", env_or("SYMD_WEBHOOK_BACKOFF_MAX", "600"),
                        R_HOOK_SECONDS, &hook_backoff) ||
        parse_range_opt("SYMD_WEBHOOK_GIVE_UP", env_or("SYMD_WEBHOOK_GIVE_UP", "86400"),
                        R_HOOK_SECONDS, &hook_give_up) ||
        zip_limits_from_env(&cfg.unzip))
        return 2;
    size_t env_targets = 0;
    if (webhooks_from_env("SYMD_WEBHOOK", hook_urls, &cfg.webhooks.nurls, &env_targets) ||
        webhooks_from_env("SYMD_WEBHOOK_SLACK", slack_urls, &cfg.webhooks.nslack, &env_targets))
        return 2;
    hook_secret = env_or("SYMD_WEBHOOK_SECRET", NULL);
    hook_secret_file = env_or("SYMD_WEBHOOK_SECRET_FILE", NULL);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(a, "--listen") == 0 && v) cfg.listen = v;
        else if (strcmp(a, "--db") == 0 && v) cfg.db = v;
        else if (strcmp(a, "--upload-token") == 0 && v) flag_token[0] = v;
        else if (strcmp(a, "--report-token") == 0 && v) flag_token[1] = v;
        else if (strcmp(a, "--read-token") == 0 && v) flag_token[2] = v;
        else if (strcmp(a, "--upload-token-file") == 0 && v) flag_file[0] = v;
        else if (strcmp(a, "--report-token-file") == 0 && v) flag_file[1] = v;
        else if (strcmp(a, "--read-token-file") == 0 && v) flag_file[2] = v;
        else if (strcmp(a, "--keep-days") == 0) bad = parse_range_opt(a, v, R_KEEP_DAYS, &keep_days);
        else if (strcmp(a, "--max-crashes") == 0) bad = parse_range_opt(a, v, R_MAX_CRASHES, &max_crashes);
        else if (strcmp(a, "--prune-every") == 0) bad = parse_range_opt(a, v, R_PRUNE_EVERY, &prune_every);
        else if (strcmp(a, "--grouping-rules") == 0 && v) cfg.grouping_rules = *v ? v : NULL;
        else if (strcmp(a, "--cache-mb") == 0) bad = parse_range_opt(a, v, R_CACHE_MB, &cache_mb);
        else if (strcmp(a, "--max-upload") == 0) bad = parse_size_opt(a, v, &cfg.max_upload);
        else if (strcmp(a, "--max-json") == 0) bad = parse_size_opt(a, v, &cfg.max_json);
        else if (strcmp(a, "--threads") == 0) bad = parse_range_opt(a, v, R_THREADS, &threads);
        else if (strcmp(a, "--db-pool") == 0) bad = parse_range_opt(a, v, R_DB_POOL, &db_pool);
        else if (strcmp(a, "--access-log") == 0 && v) cfg.access_log = v;
        else if (strcmp(a, "--max-connections") == 0) bad = parse_range_opt(a, v, R_MAX_CONNS, &max_conns);
        else if (strcmp(a, "--max-per-ip") == 0) bad = parse_range_opt(a, v, R_MAX_PER_IP, &max_per_ip);
        else if (strcmp(a, "--idle-timeout") == 0) bad = parse_range_opt(a, v, R_SECONDS, &idle_s);
        else if (strcmp(a, "--header-timeout") == 0) bad = parse_range_opt(a, v, R_SECONDS, &header_s);
        else if (strcmp(a, "--request-timeout") == 0) bad = parse_range_opt(a, v, R_SECONDS, &request_s);
        else if (strcmp(a, "--shutdown-grace") == 0) bad = parse_range_opt(a, v, R_SECONDS, &grace_s);
        else if (strcmp(a, "--max-inflight-mb") == 0) bad = parse_range_opt(a, v, R_INFLIGHT_MB, &inflight_mb);
        else if (strcmp(a, "--request-mem-factor") == 0) bad = parse_range_opt(a, v, R_MEM_FACTOR, &mem_factor);
        else if (strcmp(a, "--request-mem-mb") == 0) bad = parse_range_opt(a, v, R_MEM_MB, &mem_mb);
        else if (strcmp(a, "--admission-wait") == 0) bad = parse_range_opt(a, v, R_SECONDS, &admit_s);
        else if (strcmp(a, "--chunk-size") == 0) bad = parse_range_opt(a, v, R_CHUNK_SIZE, &chunk_size);
        else if (strcmp(a, "--chunk-budget") == 0) bad = parse_range_opt(a, v, R_CHUNK_BUDGET, &chunk_budget);
        else if (strcmp(a, "--chunk-ttl") == 0) bad = parse_range_opt(a, v, R_CHUNK_TTL, &chunk_ttl);
        else if (strcmp(a, "--dedup") == 0) bad = parse_on_off(a, v, &cfg.dedup);
        else if (strcmp(a, "--max-unzipped") == 0)
            bad = parse_size_opt(a, v, &cfg.unzip.max_total);
        else if (strcmp(a, "--max-unzipped-member") == 0)
            bad = parse_size_opt(a, v, &cfg.unzip.max_member);
        else if (strcmp(a, "--max-zip-members") == 0)
            bad = parse_size_opt(a, v, &cfg.unzip.max_members);
        else if (strcmp(a, "--max-zip-ratio") == 0)
            bad = parse_size_opt(a, v, &cfg.unzip.max_ratio);
        else if ((strcmp(a, "--webhook") == 0 || strcmp(a, "--webhook-slack") == 0) && v) {
            if (!hook_flags) /* the first flag: the variables' targets are not taken */
                cfg.webhooks.nurls = cfg.webhooks.nslack = 0;
            hook_flags = true;
            if (cfg.webhooks.nurls + cfg.webhooks.nslack == WEBHOOK_TARGETS_MAX) {
                fprintf(stderr, "symd serve: at most %d webhook targets\n", WEBHOOK_TARGETS_MAX);
                return 2;
            }
            if (a[9]) /* --webhook-slack */
                slack_urls[cfg.webhooks.nslack++] = v;
            else
                hook_urls[cfg.webhooks.nurls++] = v;
        }
        else if ((strcmp(a, "--webhook-secret") == 0 || strcmp(a, "--webhook-secret-file") == 0) &&
                 v) {
            if (!hook_secret_flags) /* the first flag: the variables' secret is not taken */
                hook_secret = hook_secret_file = NULL;
            hook_secret_flags = true;
            if (a[16]) /* --webhook-secret-file */
                hook_secret_file = v;
            else
                hook_secret = v;
        }
        else if (strcmp(a, "--webhook-spike-factor") == 0)
            bad = parse_range_opt(a, v, R_SPIKE_FACTOR, &spike_factor);
        else if (strcmp(a, "--webhook-spike-min") == 0)
            bad = parse_range_opt(a, v, R_SPIKE_MIN, &spike_min);
        else if (strcmp(a, "--webhook-timeout") == 0)
            bad = parse_range_opt(a, v, R_HOOK_TIMEOUT, &hook_timeout);
        else if (strcmp(a, "--webhook-backoff-max") == 0)
            bad = parse_range_opt(a, v, R_HOOK_SECONDS, &hook_backoff);
        else if (strcmp(a, "--webhook-give-up") == 0)
            bad = parse_range_opt(a, v, R_HOOK_SECONDS, &hook_give_up);
        else {
            fprintf(stderr, "symd serve: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad)
            return 2;
        i++;
    }
    /* every number's range was checked as it was read (parse_range_opt) */
    cfg.db_pool = (int)db_pool;
    cfg.request_mem_factor = (unsigned)mem_factor;
    cfg.request_mem_allowance = mem_mb << 20;
    cfg.admission_wait = (unsigned)admit_s;
    if (resolve_tokens(flag_token, flag_file, &cfg) != 0)
        return 2;
    cfg.keep_days = keep_days;
    cfg.max_crashes = max_crashes;
    cfg.prune_every = (unsigned)prune_every;
    cfg.chunk_size = chunk_size;
    cfg.chunk_budget = chunk_budget;
    cfg.chunk_ttl = chunk_ttl;
    cfg.max_connections = (unsigned)max_conns;
    cfg.max_per_ip = (unsigned)max_per_ip;
    cfg.idle_timeout = (unsigned)idle_s;
    cfg.header_timeout = (unsigned)header_s;
    cfg.request_timeout = (unsigned)request_s;
    cfg.shutdown_grace = (unsigned)grace_s;
    cfg.max_inflight = inflight_mb << 20;
    cfg.cache_mb = (size_t)cache_mb;
    cfg.threads = (int)threads;
    if (resolve_webhooks(&cfg.webhooks, hook_urls, slack_urls, hook_secret, hook_secret_file) !=
        0)
        return 2;
    cfg.webhooks.spike_factor = (double)spike_factor;
    cfg.webhooks.spike_min = (int64_t)spike_min;
    cfg.webhooks.timeout_s = (unsigned)hook_timeout;
    cfg.webhooks.backoff_max_s = (unsigned)hook_backoff;
    cfg.webhooks.give_up_s = (unsigned)hook_give_up;
    return server_run(&cfg);
}

/* symd upload --url: the client (client/upload.h). Flags, then the
 * environment twins SYMD_URL, SYMD_UPLOAD_TOKEN, SYMD_UPLOAD_TOKEN_FILE. */
static int cmd_upload_url(int argc, char **argv)
{
    up_opts o = {.url = getenv("SYMD_URL"), .timeout_s = 60, .retries = 6, .wait_s = 600,
                 .progress = -1};
    const char *tok = NULL, *tok_file = NULL;
    int first = argc;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n = 0;
        bool takes = true;
        if (strcmp(a, "--") == 0) {
            first = i + 1;
            break;
        }
        if (a[0] != '-' || !a[1]) {
            first = i;
            break;
        }
        if (strcmp(a, "--url") == 0 && v)
            o.url = v;
        else if (strcmp(a, "--token") == 0 && v)
            tok = v;
        else if (strcmp(a, "--token-file") == 0 && v)
            tok_file = v;
        else if (strcmp(a, "--chunk-size") == 0 && v) {
            if (parse_size_opt(a, v, &o.chunk_size))
                return 2;
        } else if ((strcmp(a, "--jobs") == 0 || strcmp(a, "--timeout") == 0 ||
                    strcmp(a, "--retries") == 0 || strcmp(a, "--wait-timeout") == 0) &&
                   v) {
            if (!num_parse_u64(v, &n) || n > 100000) {
                fprintf(stderr, "symd upload: %s takes a number, not '%s'\n", a, v);
                return 2;
            }
            if (a[2] == 'j')
                o.jobs = (int)n;
            else if (a[2] == 't')
                o.timeout_s = (int)n;
            else if (a[2] == 'r')
                o.retries = (int)n;
            else
                o.wait_s = (int)n;
        } else {
            takes = false;
            if (strcmp(a, "--plain") == 0)
                o.plain = true;
            else if (strcmp(a, "--json") == 0)
                o.json = true;
            else if (strcmp(a, "--wait") == 0)
                o.wait = true;
            else if (strcmp(a, "--progress") == 0)
                o.progress = 1;
            else if (strcmp(a, "--no-progress") == 0)
                o.progress = 0;
            else {
                fprintf(stderr, "symd upload: unknown option or missing value: %s\n", a);
                usage(stderr);
                return 2;
            }
        }
        if (takes)
            i++;
    }
    if (!tok && !tok_file) {
        tok = getenv("SYMD_UPLOAD_TOKEN");
        tok_file = getenv("SYMD_UPLOAD_TOKEN_FILE");
        if (tok && !*tok)
            tok = NULL;
        if (tok_file && !*tok_file)
            tok_file = NULL;
    }
    if (tok && tok_file) {
        fprintf(stderr, "symd upload: a token and a token file both given: give it once\n");
        return 2;
    }
    char *tok_owned = NULL;
    if (tok_file && !(tok = tok_owned = token_from_file("--token-file", tok_file)))
        return 2;
    if (!o.url || !*o.url || first >= argc) {
        fprintf(stderr, "symd upload: --url URL and at least one PATH are needed\n");
        usage(stderr);
        free(tok_owned);
        return 2;
    }
    o.token = tok;
    int rc = up_run(&o, (const char *const *)argv + first, (size_t)(argc - first));
    free(tok_owned);
    return rc;
}

static int cmd_upload(int argc, char **argv)
{
    bool remote = getenv("SYMD_URL") && *getenv("SYMD_URL");
    for (int i = 0; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--db") == 0)
            remote = false;
        if (strcmp(argv[i], "--url") == 0) {
            remote = true;
            break;
        }
    }
    if (remote)
        return cmd_upload_url(argc, argv);

    const char *db = env_or("SYMD_DB", DEFAULT_DB);
    int first = 0;
    if (argc >= 2 && strcmp(argv[0], "--db") == 0) {
        db = argv[1];
        first = 2;
    }
    if (first >= argc) {
        usage(stderr);
        return 2;
    }
    unzip_limits zl;
    if (zip_limits_from_env(&zl))
        return 2;
    store *s;
    symd_err err = {0};
    if (store_open(db, 1, 0, &s, &err) != SYMD_OK) {
        fprintf(stderr, "symd: %s\n", err.msg);
        return 1;
    }
    int rc = 0;
    for (int i = first; i < argc; i++) {
        mapped m;
        if (map_file(argv[i], &m) != 0) {
            rc = 1;
            continue;
        }
        ingest_batch b;
        ingest_batch_init(&b);
        symd_err e = {0};
        ingest_upload_info info;
        store_put_result *res = NULL;
        store_image *stored = NULL;
        symd_status st = ingest_add_upload(&b, m.data, m.len, argv[i], &zl, &info, &e);
        if (st == SYMD_OK) { /* a zip may hold any number of slices */
            res = calloc(b.n ? b.n : 1, sizeof *res);
            stored = calloc(b.n ? b.n : 1, sizeof *stored);
            if (!res || !stored)
                st = symd_fail(&e, SYMD_E_NOMEM, "out of memory");
        }
        if (st == SYMD_OK)
            st = ingest_commit(s, &b, res, stored, &e);
        if (st != SYMD_OK) {
            fprintf(stderr, "symd: %s: %s (%s)\n", argv[i], e.msg,
                    info.zip_corrupt                               ? "malformed_zip"
                    : info.sym_failed && e.kind == SYMD_E_CORRUPT ? "malformed_sym"
                                                                   : symd_status_name(e.kind));
            rc = 1;
        } else {
            for (size_t k = 0; k < b.n; k++) {
                char u[37];
                uuid_format(stored[k].uuid, u);
                /* crashes grouped under a place in it: a server refiles them */
                if (res[k] != STORE_EXISTS)
                    regroup_list_image(s, stored[k].name, stored[k].uuid);
                printf("%s %s %s %s %u symbols\n",
                       res[k] == STORE_CREATED ? "created" :
                       res[k] == STORE_UPDATED ? "updated" : "exists",
                       u, stored[k].arch, stored[k].name, stored[k].symbols);
                for (size_t w = 0; b.warn[k] && w < b.warn[k]->n && w < INGEST_MAX_WARNINGS; w++)
                    fprintf(stderr, "symd: %s: warning: %s\n", argv[i], b.warn[k]->text[w]);
            }
        }
        free(res);
        free(stored);
        ingest_batch_free(&b);
        unmap_file(&m);
    }
    store_close(s);
    return rc;
}

/* symd import: DeviceSupport folders and dyld shared caches into symbol
 * sets (import/import.h); progress and a summary on stderr. 0 when every
 * PATH was imported (a file's own error is counted, not fatal), 1 when one
 * could not be, 2 on a usage error. */
static int cmd_import(int argc, char **argv)
{
    const char *db = env_or("SYMD_DB", DEFAULT_DB);
    import_options o = {0};
    o.log = stderr;
    o.progress = true;
    int i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if ((strcmp(a, "--db") == 0 || strcmp(a, "--url") == 0) && v) db = v;
        else if (strcmp(a, "--os-name") == 0 && v) o.os_name = v;
        else if (strcmp(a, "--os-version") == 0 && v) o.os_version = v;
        else if (strcmp(a, "--os-build") == 0 && v) o.os_build = v;
        else if (strcmp(a, "--quiet") == 0) { o.progress = false; continue; }
        else if (strcmp(a, "--") == 0) { i++; break; }
        else if (a[0] == '-') {
            fprintf(stderr, "symd import: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        } else break;
        i++;
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    store *s;
    symd_err err = {0};
    if (store_open(db, 1, 0, &s, &err) != SYMD_OK) {
        fprintf(stderr, "symd: %s\n", err.msg);
        return 1;
    }
    import_report r;
    memset(&r, 0, sizeof r);
    int rc = 0;
    for (; i < argc; i++) {
        symd_err e = {0};
        if (import_path(s, argv[i], &o, &r, &e) != SYMD_OK) {
            fprintf(stderr, "symd import: %s (%s)\n", e.msg, symd_status_name(e.kind));
            rc = 1;
            if (e.kind == SYMD_E_DB || e.kind == SYMD_E_UNAVAILABLE || e.kind == SYMD_E_NOMEM)
                break; /* the store failed: what was committed stays; run again to resume */
        }
    }
    char line[512];
    import_summary(&r, line, sizeof line);
    fprintf(stderr, "symd import: %llu set%s: %s\n", (unsigned long long)r.sets,
            r.sets == 1 ? "" : "s", line);
    store_close(s);
    return rc;
}

/* The slice of a file matching arch (or the only one), parsed and indexed. */
typedef struct {
    macho_image img;
    uint8_t *blob, *lines;
    symindex idx;
    lineindex lix;
    bool has_lines;
    char name[256];
} local_image;

static int load_local(const mapped *m, const char *path, const char *arch,
                      local_image *out)
{
    macho_slice slices[MACHO_MAX_SLICES];
    size_t n;
    symd_err err = {0};
    if (macho_parse_slices(m->data, m->len, slices, &n, &err) != SYMD_OK) {
        fprintf(stderr, "symd: %s: %s\n", path, err.msg);
        return -1;
    }
    size_t pick = n;
    for (size_t i = 0; i < n; i++) {
        const char *a = macho_arch_name(slices[i].cputype, slices[i].cpusubtype);
        if (!arch ? n == 1 : a && strcmp(a, arch) == 0)
            pick = i;
    }
    if (pick == n) {
        fprintf(stderr, "symd: %s: %s\n", path,
                arch ? "no slice for that -arch" : "fat file: name a slice with -arch");
        return -1;
    }
    size_t blen;
    if (macho_parse_image(m->data + slices[pick].offset, (size_t)slices[pick].size,
                          &out->img, &err) != SYMD_OK ||
        symindex_build(&out->img, &out->blob, &blen, NULL, NULL, &err) != SYMD_OK ||
        symindex_open(out->blob, blen, &out->idx, &err) != SYMD_OK) {
        fprintf(stderr, "symd: %s: %s\n", path, err.msg);
        free(out->blob);
        out->blob = NULL;
        macho_image_free(&out->img);
        return -1;
    }
    size_t llen;
    lineindex_stats lst;
    if (lineindex_build(&out->img, &out->idx, (size_t)1 << 30, &out->lines, &llen, &lst, &err) != SYMD_OK ||
        (out->lines && lineindex_open(out->lines, llen, &out->lix, &err) != SYMD_OK)) {
        fprintf(stderr, "symd: %s: %s\n", path, err.msg);
        free(out->blob);
        free(out->lines);
        out->blob = out->lines = NULL;
        macho_image_free(&out->img);
        return -1;
    }
    out->has_lines = out->lines != NULL;
    const char *id = out->img.dylib_id, *base = id ? strrchr(id, '/') : strrchr(path, '/');
    snprintf(out->name, sizeof out->name, "%s", base ? base + 1 : id ? id : path);
    return 0;
}

/* One atos line with a place: "name (in image) (file.c:12)". */
static void print_level(const lineframe *f, const char *image)
{
    const char *file = f->file ? strrchr(f->file, '/') : NULL;
    file = file ? file + 1 : f->file;
    if (file)
        printf("%s (in %s) (%s:%u)\n", f->name ? f->name : "??", image, file, f->line);
    else
        printf("%s (in %s)\n", f->name ? f->name : "??", image);
}

static int cmd_atos(int argc, char **argv)
{
    const char *obj = NULL, *arch = NULL, *db = env_or("SYMD_DB", DEFAULT_DB);
    uint64_t load = 0, slide = 0;
    bool has_load = false, has_slide = false, inlines = false;
    int i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-o") == 0 && v) obj = v;
        else if (strcmp(a, "-arch") == 0 && v) arch = v;
        else if (strcmp(a, "-i") == 0) { inlines = true; continue; }
        else if (strcmp(a, "--db") == 0 && v) db = v;
        else if (strcmp(a, "-l") == 0 && v) {
            if (!num_parse_u64(v, &load)) goto bad;
            has_load = true;
        } else if (strcmp(a, "-s") == 0 && v) {
            if (!num_parse_u64(v, &slide)) goto bad;
            has_slide = true;
        } else break;
        i++;
    }
    if (!obj || i >= argc || (has_load && has_slide)) {
        fprintf(stderr, "usage: symd atos -o FILE|UUID [-arch A] [-l LOADADDR | -s SLIDE] [-i] "
                        "[--db FILE] ADDR...\n");
        return 2;
    }

    /* Either a file on disk (offline), or a UUID already in the store. */
    mapped m = {0};
    local_image li = {0};
    store *s = NULL;
    store_loaded *sl = NULL;
    const symindex *idx;
    const lineindex *lix = NULL;
    const char *name;
    uint64_t text_vmaddr;
    uint8_t uuid[16];
    struct stat stt;
    if (stat(obj, &stt) == 0) {
        if (map_file(obj, &m) != 0 || load_local(&m, obj, arch, &li) != 0) {
            unmap_file(&m);
            return 1;
        }
        idx = &li.idx;
        lix = li.has_lines ? &li.lix : NULL;
        name = li.name;
        text_vmaddr = macho_text_vmaddr(&li.img);
    } else if (uuid_parse(obj, uuid)) {
        symd_err err = {0};
        if (store_open(db, 1, 64u << 20, &s, &err) != SYMD_OK ||
            store_acquire(s, uuid, arch, &sl, &err) != SYMD_OK) {
            fprintf(stderr, "symd: %s: %s\n", obj, err.msg);
            store_close(s);
            return 1;
        }
        idx = &sl->sym;
        lix = sl->has_lines ? &sl->lines : NULL;
        name = sl->meta.name;
        text_vmaddr = sl->meta.text_vmaddr;
    } else {
        fprintf(stderr, "symd: %s: no such file, and not a UUID\n", obj);
        return 1;
    }

    uint64_t sl_ = has_load ? load - text_vmaddr : slide;
    int rc = 0;
    for (; i < argc; i++) {
        uint64_t addr;
        if (!num_parse_u64(argv[i], &addr)) {
            fprintf(stderr, "symd: '%s' is not an address\n", argv[i]);
            rc = 1;
            continue;
        }
        symlook look;
        symindex_lookup(idx, addr - sl_, &look);
        linelook ll;
        bool lines = lix && lineindex_lookup(lix, addr - sl_, &ll);
        /* atos -i: each inlined level on its own line, innermost first. */
        for (size_t k = 0; lines && inlines && k + 1 < ll.n; k++)
            print_level(&ll.f[k], name);
        if (lines && ll.outer_from_symbols && look.status != SYMLOOK_SYMBOL)
            symindex_lookup(idx, ll.func_start, &look); /* the name the index left out */
        const char *fn = look.status == SYMLOOK_SYMBOL ? look.name
                         : lines ? ll.f[ll.n - 1].name : NULL;
        if (lines && fn && ll.f[ll.n - 1].file) {
            lineframe outer = ll.f[ll.n - 1];
            outer.name = fn;
            print_level(&outer, name);
        } else if (look.status == SYMLOOK_SYMBOL)
            printf("%s (in %s) + %llu\n", look.name, name, (unsigned long long)look.offset);
        else
            printf("0x%llx (in %s)\n", (unsigned long long)addr, name);
    }
    if (sl)
        store_release(s, sl);
    store_close(s);
    free(li.blob);
    free(li.lines);
    macho_image_free(&li.img);
    unmap_file(&m);
    return rc;
bad:
    fprintf(stderr, "symd atos: bad address argument\n");
    return 2;
}

/* symd crash FILE: the report symbolicated against the database, in
 * Apple's text layout (what GET /v1/crashes/{id}?format=text answers). */
/* symd demangle: names on standard input, one per line, each answered by
 * one line, like c++filt: Swift names in the style asked for (simplified by
 * default), C++ and Rust through libiberty, anything else (Objective-C,
 * plain C, text) echoed. A name as a Mach-O symbol table writes it, with
 * one more leading '_', is read without it. A line is at most 64 KiB; a
 * longer one is echoed as it is. */
static int cmd_demangle(int argc, char **argv)
{
    bool full = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--style") == 0 && i + 1 < argc &&
            (strcmp(argv[i + 1], "full") == 0 || strcmp(argv[i + 1], "simplified") == 0)) {
            full = strcmp(argv[++i], "full") == 0;
        } else {
            fprintf(stderr, "usage: symd demangle [--style full|simplified] < names\n");
            return 2;
        }
    }
    static char line[65536 + 2];
    bool cut = false; /* the rest of a line too long to read is echoed */
    while (fgets(line, sizeof line, stdin)) {
        size_t n = strlen(line);
        bool nl = n && line[n - 1] == '\n';
        bool last = !nl && feof(stdin); /* a last line without its newline */
        if (cut || (!nl && !last)) {
            fputs(line, stdout);
            cut = !nl && !last;
            if (!cut && !nl)
                putchar('\n');
            continue;
        }
        if (nl)
            line[--n] = 0;
        if (n && line[n - 1] == '\r')
            line[--n] = 0;
        char *d = full ? symd_demangle_full(line) : symd_demangle(line);
        if (!d && line[0] == '_')
            d = full ? symd_demangle_full(line + 1) : symd_demangle(line + 1);
        puts(d ? d : line);
        free(d);
    }
    return ferror(stdin) || fflush(stdout) ? 1 : 0;
}

static int cmd_crash(int argc, char **argv)
{
    const char *db = env_or("SYMD_DB", DEFAULT_DB), *file = NULL;
    bool json = false, full = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
            db = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--full-names") == 0)
            full = true;
        else if (!file)
            file = argv[i];
        else
            file = NULL, i = argc;
    }
    if (!file) {
        fprintf(stderr, "usage: symd crash [--db FILE] [--json] [--full-names] REPORT\n");
        return 2;
    }
    mapped m = {0};
    if (map_file(file, &m) != 0)
        return 1;
    symd_err err = {0};
    store *s = NULL;
    crash_report *rs = NULL;
    size_t nr = 0;
    int rc = 1;
    /* The store first: a minidump's threads are walked with its images'
     * unwind rows as the report is read. */
    if (store_open(db, 1, 64u << 20, &s, &err) != SYMD_OK) {
        fprintf(stderr, "symd: %s: %s\n", file, err.msg);
        unmap_file(&m);
        return 1;
    }
    mdwalk_install(s);
    /* Every report of the input: one, or one per diagnostic of a MetricKit
     * payload / App Store Connect logs. */
    if (crash_parse_all(m.data, m.len, &rs, &nr, &err) != SYMD_OK) {
        fprintf(stderr, "symd: %s: %s (%s)\n", file, err.msg, symd_status_name(err.kind));
        mdwalk_install(NULL);
        store_close(s);
        unmap_file(&m);
        return 1;
    }
    rc = 0;
    if (json && nr > 1)
        fputs("{\"reports\":[", stdout);
    for (size_t k = 0; k < nr; k++) {
        crash_report *r = &rs[k];
        crash_symbolication sym;
        /* What the parser skipped, where the user sees it (the JSON carries
         * it too, as "warnings"). */
        for (size_t i = 0; i < r->nwarnings; i++)
            fprintf(stderr, "symd: %s: warning: %s: %s\n", file, r->warnings[i].where,
                    r->warnings[i].message);
        if (r->nwarnings_dropped)
            fprintf(stderr, "symd: %s: %zu more warnings\n", file, r->nwarnings_dropped);
        if (crash_symbolicate(s, r, full, &sym, &err) != SYMD_OK) {
            fprintf(stderr, "symd: %s: %s\n", file, err.msg);
            rc = 1;
            break;
        }
        dynbuf out;
        dynbuf_init(&out, (size_t)1 << 30);
        if (nr > 1 && !json)
            printf("%s==== report %zu of %zu: %s (%s) ====\n\n", k ? "\n" : "", k + 1, nr,
                   crash_kind_name(r->kind), crash_format_name(r->format));
        if ((json ? crash_write_json(r, &sym, -1, &out, &err)
                  : crash_render_text(r, &sym, m.data, m.len, &out, &err)) == SYMD_OK) {
            if (json && k)
                putchar(',');
            fwrite(out.data, 1, out.len, stdout);
        } else {
            fprintf(stderr, "symd: %s: %s\n", file, err.msg);
            rc = 1;
        }
        dynbuf_free(&out);
        crash_symbolication_free(&sym);
    }
    if (json)
        fputs(nr > 1 ? "]}\n" : "\n", stdout);
    crash_reports_free(rs, nr);
    mdwalk_install(NULL);
    store_close(s);
    unmap_file(&m);
    return rc;
}

/* symd migrate --from A --to B: the store at A copied into the empty store
 * at B and verified (store_migrate); what was copied, table by table. */
static int cmd_migrate(int argc, char **argv)
{
    const char *from = NULL, *to = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--from") == 0 && i + 1 < argc)
            from = argv[++i];
        else if (strcmp(argv[i], "--to") == 0 && i + 1 < argc)
            to = argv[++i];
        else
            from = to = NULL, i = argc;
    }
    if (!from || !to) {
        fprintf(stderr, "usage: symd migrate --from symd.db --to postgresql://...\n");
        return 2;
    }
    store_copy_table t[STORE_COPY_TABLES];
    symd_err err = {0};
    symd_status st = store_migrate(from, to, t, &err);
    for (int i = 0; i < STORE_COPY_TABLES && st == SYMD_OK; i++)
        printf("%-18s %10lld rows %14llu bytes  checksum %016llx\n", t[i].table,
               (long long)t[i].rows, (unsigned long long)t[i].bytes,
               (unsigned long long)t[i].checksum);
    if (st != SYMD_OK) {
        fprintf(stderr, "symd migrate: %s (%s)\n", err.msg, symd_status_name(err.kind));
        return 1;
    }
    printf("copied and verified: every table's rows and checksums match\n");
    return 0;
}

/* `symd info` of a dyld shared cache: its subcaches and .symbols file are
 * the files beside it that its header names. */
static int info_dyld_cache(const char *path, const mapped *m)
{
    dyld_cache_file files[1 + 256];
    mapped maps[1 + 256];
    static char names[1 + 256][4096]; /* 1 MiB: not on the stack */
    size_t nfiles = 1, nsfx = 0;
    dyld_cache_suffix *sfx = NULL;
    symd_err err = {0};
    int rc = 1;
    files[0] = (dyld_cache_file){path, "", m->data, m->len};
    if (dyld_cache_suffixes(&files[0], &sfx, &nsfx, &err) != SYMD_OK) {
        fprintf(stderr, "symd: %s\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < nsfx && nfiles < 1 + 256; i++) {
        snprintf(names[nfiles], sizeof names[nfiles], "%s%s", path, sfx[i].s);
        struct stat stt;
        if (stat(names[nfiles], &stt) != 0)
            continue; /* the reader says what is missing */
        if (map_file(names[nfiles], &maps[nfiles]) != 0)
            goto out;
        files[nfiles] = (dyld_cache_file){names[nfiles], sfx[i].s, maps[nfiles].data,
                                          maps[nfiles].len};
        nfiles++;
    }
    dyld_cache c;
    if (dyld_cache_open(files, nfiles, &c, &err) != SYMD_OK) {
        fprintf(stderr, "symd: %s\n", err.msg);
        goto out;
    }
    char u[37];
    uuid_format(c.uuid, u);
    printf("%s: dyld shared cache %s %s, %zu subcache%s, %zu image%s%s\n", path, c.arch, u,
           c.nsubcaches, c.nsubcaches == 1 ? "" : "s", c.nimages, c.nimages == 1 ? "" : "s",
           c.symbols_file_missing ? " (its .symbols file is missing: no local symbols)" : "");
    rc = 0;
    for (size_t i = 0; i < c.nimages; i++) {
        const dyld_cache_image *im = &c.images[i];
        uint8_t *blob = NULL;
        size_t blen;
        uint32_t nsyms = 0, nstarts = 0;
        if (dyld_cache_image_symindex(&c, i, &blob, &blen, &nsyms, &nstarts, &err) != SYMD_OK) {
            printf("  image %zu: error: %s\n", i, err.msg);
            symd_err_clear(&err);
            rc = 1;
        }
        free(blob);
        uuid_format(im->uuid, u);
        printf("  %-8s %s  text 0x%llx+0x%llx  %u symbols  %u functions  %s%s\n",
               im->arch ? im->arch : "unknown", u, (unsigned long long)im->text_vmaddr,
               (unsigned long long)im->text_vmsize, nsyms, nstarts, im->path,
               im->alias_of >= 0 ? "  (alias)" : "");
    }
    dyld_cache_close(&c);
out:
    for (size_t i = 1; i < nfiles; i++)
        unmap_file(&maps[i]);
    free(sfx);
    return rc;
}

static int cmd_info(int argc, char **argv)
{
    if (argc < 1) {
        usage(stderr);
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        mapped m;
        if (map_file(argv[i], &m) != 0) {
            rc = 1;
            continue;
        }
        if (dyld_cache_is_cache(m.data, m.len)) {
            if (info_dyld_cache(argv[i], &m) != 0)
                rc = 1;
            unmap_file(&m);
            continue;
        }
        macho_slice slices[MACHO_MAX_SLICES];
        size_t n;
        symd_err err = {0};
        if (macho_parse_slices(m.data, m.len, slices, &n, &err) != SYMD_OK) {
            fprintf(stderr, "symd: %s: %s\n", argv[i], err.msg);
            unmap_file(&m);
            rc = 1;
            continue;
        }
        printf("%s: %s, %zu slice%s\n", argv[i], n > 1 ? "fat" : "thin", n,
               n == 1 ? "" : "s");
        for (size_t k = 0; k < n; k++) {
            macho_image img;
            symd_err e = {0};
            if (macho_parse_image(m.data + slices[k].offset, (size_t)slices[k].size, &img,
                                  &e) != SYMD_OK) {
                printf("  slice %zu: error: %s\n", k, e.msg);
                rc = 1;
                continue;
            }
            uint8_t *blob = NULL;
            size_t blen;
            uint32_t nsyms = 0, nstarts = 0;
            if (symindex_build(&img, &blob, &blen, &nsyms, &nstarts, &e) != SYMD_OK) {
                printf("  slice %zu: error: %s\n", k, e.msg);
                rc = 1;
            }
            char u[37] = "none";
            if (img.has_uuid)
                uuid_format(img.uuid, u);
            const char *a = macho_arch_name(img.cputype, img.cpusubtype);
            printf("  %-8s %s  %-10s text 0x%llx+0x%llx  %u symbols  %u functions%s%s\n",
                   a ? a : "unknown", u, macho_kind_name(img.kind),
                   (unsigned long long)macho_text_vmaddr(&img),
                   (unsigned long long)macho_text_vmsize(&img), nsyms, nstarts,
                   img.dylib_id ? "  id " : "", img.dylib_id ? img.dylib_id : "");
            free(blob);
            macho_image_free(&img);
        }
        unmap_file(&m);
    }
    return rc;
}

/* The DWARF file of a .dSYM bundle (path/Contents/Resources/DWARF/ holds
 * one file), or path itself when it is a file. */
static const char *dsym_file(const char *path, char *buf, size_t cap)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return path;
    snprintf(buf, cap, "%s/Contents/Resources/DWARF", path);
    DIR *d = opendir(buf);
    if (!d)
        return path;
    const char *found = path;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, "/%s", e->d_name);
        found = buf;
        break;
    }
    closedir(d);
    return found;
}

/* symd dump-syms: a Breakpad .sym of a Mach-O slice and its dSYM on stdout
 * (or -o OUT). 0 on success, 1 on an error, 2 on a usage error. */
static int cmd_dump_syms(int argc, char **argv)
{
    const char *arch = NULL, *outp = NULL, *paths[2] = {NULL, NULL};
    int np = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc)
            arch = argv[++i];
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            outp = argv[++i];
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            np = -1;
        else if (np >= 0 && np < 2 && argv[i][0] != '-')
            paths[np++] = argv[i];
        else
            np = -1;
        if (np < 0)
            break;
    }
    if (np < 1) {
        fprintf(np < 0 && argc == 1 ? stdout : stderr,
                "usage: symd dump-syms [--arch A] [-o OUT] BINARY [DSYM]\n"
                "\n"
                "Writes a Breakpad symbol file for the slice of BINARY (--arch for a fat\n"
                "file) with the DWARF of DSYM (a .dSYM bundle or its DWARF file; without\n"
                "it, the binary's own): MODULE, INFO CODE_ID, FILE, INLINE_ORIGIN, FUNC\n"
                "with INLINE and line records, PUBLIC for symbols no FUNC covers, and\n"
                "STACK CFI INIT / STACK CFI records from the binary's __unwind_info and\n"
                "__eh_frame (a STACK CFI INIT per function). Addresses are relative to\n"
                "the __TEXT segment's vmaddr.\n");
        return np < 0 && argc == 1 ? 0 : 2;
    }
    char dbuf[4096];
    mapped bin = {0}, ds = {0};
    if (map_file(paths[0], &bin) != 0)
        return 1;
    if (paths[1] && map_file(dsym_file(paths[1], dbuf, sizeof dbuf), &ds) != 0) {
        unmap_file(&bin);
        return 1;
    }
    FILE *out = outp ? fopen(outp, "w") : stdout;
    if (!out) {
        fprintf(stderr, "symd: %s: %s\n", outp, strerror(errno));
        unmap_file(&bin);
        unmap_file(&ds);
        return 1;
    }
    const char *base = strrchr(paths[0], '/');
    /* STACK CFI from the rows an upload of the binary would store */
    bp_dump_opts o = {arch, base ? base + 1 : paths[0], bp_dump_cfi_unwind, NULL};
    symd_err err = {0};
    bp_dump_stats stats;
    symd_status st = bp_dump_syms(bin.data, bin.len, paths[1] ? ds.data : NULL, ds.len, &o, out,
                                  &stats, &err);
    if (outp && fclose(out) != 0 && st == SYMD_OK)
        st = symd_fail(&err, SYMD_E_IO, "%s: %s", outp, strerror(errno));
    unmap_file(&bin);
    unmap_file(&ds);
    if (st != SYMD_OK) {
        fprintf(stderr, "symd: dump-syms: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "symd: dump-syms: %zu FUNC, %zu line, %zu INLINE, %zu PUBLIC records; %zu "
                    "files, %zu inline origins; %zu STACK CFI INIT, %zu CFI rows\n",
            stats.funcs, stats.lines, stats.inlines, stats.publics, stats.files, stats.origins,
            stats.cfi_entries, stats.cfi_rows);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "serve") == 0) {
        /* Requests allocate and free buffers of tens to hundreds of KiB
         * (report bodies, answers, compressed originals). With glibc's
         * defaults each free at the top of a heap gives the memory back
         * (brk, madvise: system calls and TLB shootdowns across cores) and
         * the next request takes it again; keep up to 64 MiB per heap
         * instead. Memory stays bounded by the request limits. */
        mallopt(M_TRIM_THRESHOLD, 64 << 20);
        mallopt(M_TOP_PAD, 4 << 20);
        /* Blocks of 4 MiB and more (large bodies, answers, inflated zip
         * members) are mapped on their own and go back to the system when
         * freed: a burst of large requests leaves no heap behind. */
        mallopt(M_MMAP_THRESHOLD, 4 << 20);
        return cmd_serve(argc - 2, argv + 2);
    }
    if (strcmp(cmd, "upload") == 0)
        return cmd_upload(argc - 2, argv + 2);
    if (strcmp(cmd, "import") == 0)
        return cmd_import(argc - 2, argv + 2);
    if (strcmp(cmd, "atos") == 0)
        return cmd_atos(argc - 2, argv + 2);
    if (strcmp(cmd, "info") == 0)
        return cmd_info(argc - 2, argv + 2);
    if (strcmp(cmd, "crash") == 0)
        return cmd_crash(argc - 2, argv + 2);
    if (strcmp(cmd, "demangle") == 0)
        return cmd_demangle(argc - 2, argv + 2);
    if (strcmp(cmd, "migrate") == 0)
        return cmd_migrate(argc - 2, argv + 2);
    if (strcmp(cmd, "dump-syms") == 0)
        return cmd_dump_syms(argc - 2, argv + 2);
    fprintf(stderr, "symd: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}

/* DeviceSupport folders: their names, their Info.plist and a walk over
 * their files (import/devsupport.h). */
#include "devsupport.h"

#include <errno.h>
#include <fts.h>
#include <stdio.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* "16.0", "14.2.1": digits in dot-separated groups, 1 to 4 of them. */
static bool is_version(const char *s, size_t n)
{
    if (n == 0 || n >= 32)
        return false;
    int groups = 1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.') {
            if (i == 0 || i + 1 == n || s[i - 1] == '.')
                return false;
            groups++;
        } else if (!is_digit(s[i])) {
            return false;
        }
    }
    return groups <= 4;
}

/* "20A362", "18B92a": letters and digits. */
static bool is_build(const char *s, size_t n)
{
    if (n == 0 || n >= 32)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]))
            return false;
    return true;
}

/* "arm64e", "arm64_32", "x86_64": lower-case letters, digits, '_'. */
static bool is_arch(const char *s, size_t n)
{
    if (n == 0 || n >= 16)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(is_digit(s[i]) || (s[i] >= 'a' && s[i] <= 'z') || s[i] == '_'))
            return false;
    return true;
}

/* "iPhone12,1", "Watch6,1", "iPad8,1": printable ASCII, no space or '/'. */
static bool is_model(const char *s, size_t n)
{
    if (n == 0 || n >= 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || s[i] == '/' || s[i] == '(' || s[i] == ')')
            return false;
    return true;
}

static void put(char *dst, size_t cap, const char *s, size_t n)
{
    snprintf(dst, cap, "%.*s", (int)n, s);
}

bool devsupport_parse_name(const char *name, size_t len, devsupport_id *id)
{
    /* The build is in the last "(...)"; its ')' ends the name or is
     * followed by " <arch>". */
    const char *open = NULL;
    for (size_t i = len; i-- > 0;)
        if (name[i] == '(') {
            open = name + i;
            break;
        }
    if (!open || open == name || open[-1] != ' ')
        return false;
    const char *end = name + len;
    const char *close = memchr(open, ')', (size_t)(end - open));
    if (!close)
        return false;
    const char *build = open + 1, *arch = NULL;
    size_t build_n = (size_t)(close - build), arch_n = 0;
    if (close + 1 < end) {
        if (close[1] != ' ')
            return false;
        arch = close + 2;
        arch_n = (size_t)(end - arch);
        if (!is_arch(arch, arch_n))
            return false;
    }
    /* Before " (": "<version>" or "<model> <version>". */
    const char *head_end = open - 1, *version = name;
    for (const char *p = head_end; p > name; p--)
        if (p[-1] == ' ') {
            version = p;
            break;
        }
    size_t version_n = (size_t)(head_end - version);
    size_t model_n = version > name ? (size_t)(version - 1 - name) : 0;
    if (!is_version(version, version_n) || !is_build(build, build_n) ||
        (version > name && !is_model(name, model_n)))
        return false;
    put(id->os_version, sizeof id->os_version, version, version_n);
    put(id->os_build, sizeof id->os_build, build, build_n);
    put(id->model, sizeof id->model, name, model_n);
    put(id->arch, sizeof id->arch, arch ? arch : "", arch_n);
    return true;
}

/* Apple's names for its OSes (Info.plist, crash reports, folder names) and
 * the one symd keeps. */
static const struct {
    const char *as, *is;
} os_names[] = {
    {"iOS", "iOS"},           {"iPhone OS", "iOS"},       {"iPhoneOS", "iOS"},
    {"iPadOS", "iPadOS"},     {"watchOS", "watchOS"},     {"Watch OS", "watchOS"},
    {"WatchOS", "watchOS"},   {"tvOS", "tvOS"},           {"Apple TVOS", "tvOS"},
    {"TVOS", "tvOS"},         {"visionOS", "visionOS"},   {"xrOS", "visionOS"},
    {"macOS", "macOS"},       {"Mac OS X", "macOS"},      {"OS X", "macOS"},
    {"bridgeOS", "bridgeOS"}, {"DriverKit", "DriverKit"},
};

const char *devsupport_canonical_os(const char *name)
{
    for (size_t i = 0; i < sizeof os_names / sizeof os_names[0]; i++)
        if (strcmp(name, os_names[i].as) == 0)
            return os_names[i].is;
    return name;
}

bool devsupport_os_of_parent(const char *name, size_t len, char *out, size_t cap)
{
    static const char suffix[] = " DeviceSupport";
    size_t sn = sizeof suffix - 1;
    if (len <= sn || memcmp(name + len - sn, suffix, sn) != 0)
        return false;
    char os[64];
    if (len - sn >= sizeof os)
        return false;
    memcpy(os, name, len - sn);
    os[len - sn] = 0;
    for (size_t i = 0; i < sizeof os_names / sizeof os_names[0]; i++)
        if (strcmp(os, os_names[i].as) == 0) {
            snprintf(out, cap, "%s", os_names[i].is);
            return true;
        }
    return false;
}

/* ---- Info.plist ------------------------------------------------------------- */

/* A cursor over the plist's text. */
typedef struct {
    const char *p, *end;
} text;

static bool starts(const text *t, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(t->end - t->p) >= n && memcmp(t->p, s, n) == 0;
}

/* Moves past the next occurrence of s; false (at the end) when none. */
static bool skip_past(text *t, const char *s)
{
    size_t n = strlen(s);
    for (; (size_t)(t->end - t->p) >= n; t->p++)
        if (memcmp(t->p, s, n) == 0) {
            t->p += n;
            return true;
        }
    t->p = t->end;
    return false;
}

/* The character data up to the next '<', entities decoded, into out
 * (printable, at most cap - 1 bytes); false when it is not. */
static bool char_data(text *t, char *out, size_t cap)
{
    static const struct {
        const char *ent;
        char c;
    } ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    size_t o = 0;
    while (t->p < t->end && *t->p != '<') {
        char c = *t->p;
        if (c == '&') {
            size_t k = 0;
            while (k < sizeof ents / sizeof ents[0] && !starts(t, ents[k].ent))
                k++;
            if (k == sizeof ents / sizeof ents[0])
                return false; /* numeric and other entities: not in these plists */
            c = ents[k].c;
            t->p += strlen(ents[k].ent);
        } else {
            t->p++;
        }
        if ((unsigned char)c < ' ' && c != '\t' && c != '\n' && c != '\r')
            return false;
        if (o + 1 >= cap)
            return false;
        out[o++] = c;
    }
    out[o] = 0;
    return t->p < t->end;
}

/* The value of a plist key symd reads, and where it goes. */
typedef struct {
    const char *key;
    char *dst;
    size_t cap;
    bool (*valid)(const char *s, size_t n);
} plist_field;

static bool is_os_name(const char *s, size_t n)
{
    if (n == 0 || n >= 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < ' ' || s[i] > '~' || s[i] == '/')
            return false;
    return true;
}

/* Reads the dictionary's entries from just past "<dict>" (depth 1): a
 * <string> right after one of f's keys is that field's value; nested
 * dictionaries and values of other kinds are passed over. */
static symd_status read_dict(text *t, plist_field *f, size_t nf, symd_err *err)
{
    int depth = 1;
    plist_field *pending = NULL; /* the key just read, when symd reads it */
    while (depth > 0) {
        if (!skip_past(t, "<"))
            return SYMD_CORRUPT(err, "Info.plist: the dictionary is not closed");
        if (starts(t, "!--")) {
            if (!skip_past(t, "-->"))
                return SYMD_CORRUPT(err, "Info.plist: a comment is not closed");
            continue;
        }
        if (starts(t, "dict>") || starts(t, "/dict>")) {
            depth += *t->p == '/' ? -1 : 1;
            pending = NULL;
        } else if (depth == 1 && starts(t, "key>")) {
            t->p += 4;
            char key[64];
            pending = NULL;
            if (char_data(t, key, sizeof key)) {
                for (size_t i = 0; i < nf; i++)
                    if (strcmp(key, f[i].key) == 0)
                        pending = &f[i];
            } else if (!skip_past(t, "</key>")) { /* a key too long to be one of f's */
                return SYMD_CORRUPT(err, "Info.plist: a key is not closed");
            }
            continue; /* at "</key>": a closing tag, passed over below */
        } else if (depth == 1 && pending && starts(t, "string>")) {
            t->p += 7;
            char v[64];
            if (!char_data(t, v, sizeof v) || !pending->valid(v, strlen(v)))
                return SYMD_CORRUPT(err, "Info.plist: %s is not a valid value", pending->key);
            snprintf(pending->dst, pending->cap, "%s", v);
            pending = NULL;
        } else if (!starts(t, "/")) {
            pending = NULL; /* a value of another kind */
        }
        if (!skip_past(t, ">"))
            return SYMD_CORRUPT(err, "Info.plist: a tag is not closed");
    }
    return SYMD_OK;
}

symd_status devsupport_read_plist(const uint8_t *buf, size_t len, devsupport_id *id,
                                  symd_err *err)
{
    if (len >= 8 && memcmp(buf, "bplist00", 8) == 0)
        return symd_fail(err, SYMD_E_UNSUPPORTED,
                         "Info.plist is a binary plist, which symd does not read");
    text t = {(const char *)buf, (const char *)buf + len};
    if (!skip_past(&t, "<plist") || !skip_past(&t, ">"))
        return SYMD_CORRUPT(err, "Info.plist: no <plist> element");
    while (t.p < t.end && (*t.p == ' ' || *t.p == '\n' || *t.p == '\r' || *t.p == '\t'))
        t.p++;
    if (!starts(&t, "<dict>"))
        return SYMD_CORRUPT(err, "Info.plist: the plist is not a dictionary");
    t.p += 6;
    devsupport_id got = *id;
    char name[64] = "";
    plist_field f[] = {
        {"ProductName", name, sizeof name, is_os_name},
        {"ProductVersion", got.os_version, sizeof got.os_version, is_version},
        {"ProductBuildVersion", got.os_build, sizeof got.os_build, is_build},
    };
    symd_status st = read_dict(&t, f, sizeof f / sizeof f[0], err);
    if (st != SYMD_OK)
        return st;
    if (name[0])
        snprintf(got.os_name, sizeof got.os_name, "%s", devsupport_canonical_os(name));
    *id = got;
    return SYMD_OK;
}

/* ---- walking ---------------------------------------------------------------- */

static int by_name(const FTSENT **a, const FTSENT **b)
{
    return strcmp((*a)->fts_name, (*b)->fts_name);
}

symd_status devsupport_walk(const char *root, devsupport_file_fn fn, void *ctx, symd_err *err)
{
    char *paths[] = {(char *)root, NULL};
    FTS *f = fts_open(paths, FTS_PHYSICAL | FTS_NOCHDIR, by_name);
    if (!f)
        return symd_fail(err, SYMD_E_IO, "%s: %s", root, strerror(errno));
    symd_status st = SYMD_OK;
    FTSENT *e;
    while (st == SYMD_OK && (e = fts_read(f))) {
        if (e->fts_info == FTS_F)
            st = fn(ctx, e->fts_path, e->fts_statp, 0);
        else if (e->fts_info == FTS_DNR || e->fts_info == FTS_ERR || e->fts_info == FTS_NS)
            st = fn(ctx, e->fts_path, NULL, e->fts_errno);
    }
    fts_close(f);
    return st;
}

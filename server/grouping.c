/* Grouping rules: the parser, the matcher and the active set (grouping.h). */
#include "grouping.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum field { F_FUNCTION, F_IMAGE, F_TYPE, F_MESSAGE, F_KIND };

/* Matcher names, with the Sentry spellings for the same fields. */
static const struct {
    const char *name;
    enum field field;
} fields[] = {
    {"function", F_FUNCTION}, {"stack.function", F_FUNCTION},
    {"image", F_IMAGE},       {"stack.module", F_IMAGE},      {"stack.package", F_IMAGE},
    {"type", F_TYPE},         {"error.type", F_TYPE},
    {"message", F_MESSAGE},   {"error.value", F_MESSAGE},
    {"kind", F_KIND},
};

/* Variables of a fingerprint value: {{ name }}. */
static const char *const variables[] = {"default", "type", "message", "function", "image", "kind"};
enum { V_DEFAULT, V_TYPE, V_MESSAGE, V_FUNCTION, V_IMAGE, V_KIND, NVARS };

typedef struct {
    enum field field;
    bool negate;
    char *glob;
    size_t len;
} matcher;

typedef struct {
    matcher m[GROUPING_MATCHERS_MAX];
    size_t nm;
    char *values[GROUPING_VALUES_MAX]; /* templates: text and {{ variable }} */
    size_t nv;
    char *text; /* the rule as written, blanks around it dropped */
} rule;

struct grouping_rules {
    rule *r;
    size_t n;
    atomic_uint refs; /* holders besides the active slot */
    char digest[33];
};

/* ---- the parser ---- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Whether [s, s + n) is well-formed UTF-8 (stored in signatures, which
 * PostgreSQL takes only as UTF-8). */
static bool utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], cp;
        size_t k;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xe0) == 0xc0)
            k = 1, cp = c & 0x1f;
        else if ((c & 0xf0) == 0xe0)
            k = 2, cp = c & 0x0f;
        else if ((c & 0xf8) == 0xf0)
            k = 3, cp = c & 0x07;
        else
            return false;
        if (k >= n - i)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + j] & 0x3fu);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
        i += k + 1;
    }
    return true;
}

/* A line being read: [p, end), its number for errors. */
typedef struct {
    const char *p, *end;
    size_t line;
    symd_err *err;
} cursor;

static void skip_blanks(cursor *c)
{
    while (c->p < c->end && is_blank(*c->p))
        c->p++;
}

/* A double-quoted string at c->p (the quote included) into a malloc'ed
 * buffer: \" and \\ are the only escapes. */
static symd_status read_quoted(cursor *c, char **out, size_t *len)
{
    const char *q = ++c->p;
    char *b = malloc((size_t)(c->end - q) + 1);
    if (!b)
        return symd_fail(c->err, SYMD_E_NOMEM, "out of memory");
    size_t n = 0;
    while (q < c->end && *q != '"') {
        if (*q == '\\') {
            if (q + 1 >= c->end || (q[1] != '"' && q[1] != '\\')) {
                free(b);
                return SYMD_CORRUPT(c->err, "a quoted value may escape only \\\" and \\\\");
            }
            q++;
        }
        b[n++] = *q++;
    }
    if (q >= c->end) {
        free(b);
        return SYMD_CORRUPT(c->err, "a quoted value has no closing '\"'");
    }
    c->p = q + 1;
    b[n] = 0;
    *out = b;
    *len = n;
    return SYMD_OK;
}

static char *dup_n(const char *s, size_t n)
{
    char *b = malloc(n + 1);
    if (b) {
        memcpy(b, s, n);
        b[n] = 0;
    }
    return b;
}

/* Checks a fingerprint template's variables: every "{{" closes with "}}"
 * around a known name. */
static symd_status check_template(const char *v, symd_err *err)
{
    for (const char *p = strstr(v, "{{"); p; p = strstr(p, "{{")) {
        const char *close = strstr(p + 2, "}}");
        if (!close)
            return SYMD_CORRUPT(err, "'{{' without its '}}'");
        const char *a = p + 2, *b = close;
        while (a < b && is_blank(*a))
            a++;
        while (b > a && is_blank(b[-1]))
            b--;
        bool known = false;
        for (size_t i = 0; i < NVARS && !known; i++)
            known = strlen(variables[i]) == (size_t)(b - a) && memcmp(a, variables[i], b - a) == 0;
        if (!known)
            return SYMD_CORRUPT(err, "unknown variable '{{ %.*s }}' (known: default, type, "
                                     "message, function, image, kind)",
                                (int)((b - a) > 40 ? 40 : (b - a)), a);
        p = close + 2;
    }
    return SYMD_OK;
}

/* One matcher "[!]name:value" at c->p into m. */
static symd_status read_matcher(cursor *c, matcher *m)
{
    m->negate = *c->p == '!';
    if (m->negate)
        c->p++;
    const char *name = c->p;
    while (c->p < c->end && *c->p != ':' && !is_blank(*c->p))
        c->p++;
    size_t nl = (size_t)(c->p - name);
    bool known = false;
    for (size_t i = 0; i < sizeof fields / sizeof *fields && !known; i++)
        if (strlen(fields[i].name) == nl && memcmp(fields[i].name, name, nl) == 0) {
            m->field = fields[i].field;
            known = true;
        }
    if (!known)
        return SYMD_CORRUPT(c->err, "unknown matcher '%.*s' (known: function, image, type, "
                                    "message, kind)",
                            (int)(nl > 40 ? 40 : nl), name);
    if (c->p >= c->end || *c->p != ':')
        return SYMD_CORRUPT(c->err, "matcher '%.*s' without ':' and a value", (int)nl, name);
    c->p++;
    if (c->p < c->end && *c->p == '"')
        return read_quoted(c, &m->glob, &m->len);
    const char *v = c->p;
    while (c->p < c->end && !is_blank(*c->p))
        c->p++;
    if (c->p == v)
        return SYMD_CORRUPT(c->err, "matcher '%.*s' without a value (\"\" matches an empty one)",
                            (int)nl, name);
    m->len = (size_t)(c->p - v);
    m->glob = dup_n(v, m->len);
    return m->glob ? SYMD_OK : symd_fail(c->err, SYMD_E_NOMEM, "out of memory");
}

/* The fingerprint after "->": values separated by ',', each quoted or the
 * bare text up to the next ',' (blanks around it dropped). */
static symd_status read_fingerprint(cursor *c, rule *r)
{
    for (;;) {
        skip_blanks(c);
        if (r->nv == GROUPING_VALUES_MAX)
            return symd_fail(c->err, SYMD_E_TOO_LARGE, "more than %d fingerprint values",
                             GROUPING_VALUES_MAX);
        char *v;
        size_t n;
        if (c->p < c->end && *c->p == '"') {
            symd_status s = read_quoted(c, &v, &n);
            if (s != SYMD_OK)
                return s;
            skip_blanks(c);
            if (c->p < c->end && *c->p != ',') {
                free(v);
                return SYMD_CORRUPT(c->err, "text after a quoted fingerprint value");
            }
        } else {
            const char *a = c->p;
            while (c->p < c->end && *c->p != ',')
                c->p++;
            const char *b = c->p;
            while (b > a && is_blank(b[-1]))
                b--;
            if (!(v = dup_n(a, (size_t)(b - a))))
                return symd_fail(c->err, SYMD_E_NOMEM, "out of memory");
            n = (size_t)(b - a);
        }
        r->values[r->nv++] = v;
        if (!n)
            return SYMD_CORRUPT(c->err, "an empty fingerprint value");
        symd_status s = check_template(v, c->err);
        if (s != SYMD_OK)
            return s;
        if (c->p >= c->end)
            return SYMD_OK;
        c->p++; /* ',' */
    }
}

static void rule_free(rule *r)
{
    for (size_t i = 0; i < r->nm; i++)
        free(r->m[i].glob);
    for (size_t i = 0; i < r->nv; i++)
        free(r->values[i]);
    free(r->text);
}

/* One rule line (blanks around it dropped, not empty, no comment) into r. */
static symd_status read_rule(cursor *c, rule *r)
{
    memset(r, 0, sizeof *r);
    if (!(r->text = dup_n(c->p, (size_t)(c->end - c->p))))
        return symd_fail(c->err, SYMD_E_NOMEM, "out of memory");
    for (;;) {
        skip_blanks(c);
        if (c->p >= c->end)
            return SYMD_CORRUPT(c->err, "no '->' and fingerprint");
        if (c->end - c->p >= 2 && c->p[0] == '-' && c->p[1] == '>') {
            c->p += 2;
            break;
        }
        if (r->nm == GROUPING_MATCHERS_MAX)
            return symd_fail(c->err, SYMD_E_TOO_LARGE, "more than %d matchers",
                             GROUPING_MATCHERS_MAX);
        symd_status s = read_matcher(c, &r->m[r->nm]);
        if (r->m[r->nm].glob)
            r->nm++;
        if (s != SYMD_OK)
            return s;
        if (c->p < c->end && !is_blank(*c->p))
            return SYMD_CORRUPT(c->err, "no blank after a matcher's value");
    }
    if (!r->nm)
        return SYMD_CORRUPT(c->err, "a rule without a matcher before '->'");
    skip_blanks(c);
    if (c->p >= c->end)
        return SYMD_CORRUPT(c->err, "no fingerprint after '->'");
    return read_fingerprint(c, r);
}

/* FNV-1a over bytes, from h. */
static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Contract in grouping.h. */
symd_status grouping_parse(const char *buf, size_t len, grouping_rules **out, size_t *line,
                           symd_err *err)
{
    *out = NULL;
    *line = 0;
    if (len > GROUPING_FILE_MAX)
        return symd_fail(err, SYMD_E_TOO_LARGE, "larger than %u bytes", GROUPING_FILE_MAX);
    grouping_rules *g = calloc(1, sizeof *g);
    if (!g)
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    size_t cap = 0;
    symd_status s = SYMD_OK;
    uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
    const char *p = buf, *end = buf + len;
    for (size_t ln = 1; p < end && s == SYMD_OK; ln++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        *line = ln;
        if (e - p > GROUPING_LINE_MAX) {
            s = symd_fail(err, SYMD_E_TOO_LARGE, "longer than %d bytes", GROUPING_LINE_MAX);
            break;
        }
        const char *a = p, *b = e;
        p = nl ? nl + 1 : end;
        if (b > a && b[-1] == '\r')
            b--;
        if (memchr(a, 0, (size_t)(b - a))) {
            s = SYMD_CORRUPT(err, "a NUL byte");
            break;
        }
        if (!utf8_ok((const unsigned char *)a, (size_t)(b - a))) {
            s = SYMD_CORRUPT(err, "not UTF-8");
            break;
        }
        while (a < b && is_blank(*a))
            a++;
        while (b > a && is_blank(b[-1]))
            b--;
        if (a == b || *a == '#')
            continue;
        if (g->n == GROUPING_RULES_MAX) {
            s = symd_fail(err, SYMD_E_TOO_LARGE, "more than %d rules", GROUPING_RULES_MAX);
            break;
        }
        if (g->n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            if (nc > GROUPING_RULES_MAX)
                nc = GROUPING_RULES_MAX;
            rule *nr = realloc(g->r, nc * sizeof *nr);
            if (!nr) {
                s = symd_fail(err, SYMD_E_NOMEM, "out of memory");
                break;
            }
            g->r = nr;
            cap = nc;
        }
        cursor c = {a, b, ln, err};
        s = read_rule(&c, &g->r[g->n]);
        g->n++; /* freed with the set even when it broke */
        h1 = fnv(fnv(h1, a, (size_t)(b - a)), "\n", 1);
        h2 = fnv(fnv(h2, a, (size_t)(b - a)), "\n", 1);
    }
    if (s != SYMD_OK) {
        grouping_free(g);
        return s;
    }
    *line = 0;
    if (g->n)
        snprintf(g->digest, sizeof g->digest, "%016llx%016llx", (unsigned long long)h1,
                 (unsigned long long)h2);
    *out = g;
    return SYMD_OK;
}

/* Contract in grouping.h. */
void grouping_free(grouping_rules *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++)
        rule_free(&g->r[i]);
    free(g->r);
    free(g);
}

size_t grouping_count(const grouping_rules *g)
{
    return g ? g->n : 0;
}

const char *grouping_digest(const grouping_rules *g)
{
    return g ? g->digest : "";
}

/* ---- matching ---- */

static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Contract in grouping.h. The classic linear glob: on a mismatch, back to
 * the last '*' with one more byte taken by it; at most p_len * s_len steps. */
bool grouping_glob(const char *p, size_t p_len, const char *s, size_t s_len, uint64_t *steps)
{
    size_t pi = 0, si = 0, star = (size_t)-1, mark = 0;
    while (si < s_len) {
        if (*steps == 0)
            return false;
        (*steps)--;
        if (pi < p_len && p[pi] == '*') {
            star = pi++;
            mark = si;
        } else if (pi < p_len &&
                   (p[pi] == '?' || lower((unsigned char)p[pi]) == lower((unsigned char)s[si]))) {
            pi++;
            si++;
        } else if (star != (size_t)-1) {
            pi = star + 1;
            si = ++mark;
        } else {
            return false;
        }
    }
    while (pi < p_len && p[pi] == '*')
        pi++;
    return pi == p_len;
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* Whether m holds for f; *hit is the list value it matched (function and
 * image matchers), else untouched. */
static bool matches(const matcher *m, const grouping_facts *f, const char **hit, uint64_t *steps)
{
    const char *one = NULL;
    const char *const *list = NULL;
    size_t n = 0;
    switch (m->field) {
    case F_FUNCTION: list = f->functions; n = f->nfunctions; break;
    case F_IMAGE: list = f->images; n = f->nimages; break;
    case F_TYPE: one = f->type; break;
    case F_MESSAGE: one = f->message; break;
    case F_KIND: one = f->kind; break;
    }
    bool any = false;
    if (list && n) {
        for (size_t i = 0; i < n && !any; i++) {
            const char *v = or_empty(list[i]);
            if (grouping_glob(m->glob, m->len, v, strlen(v), steps)) {
                any = true;
                if (!m->negate)
                    *hit = v;
            }
        }
    } else {
        one = or_empty(one); /* a missing field, or a list of none, is "" */
        any = grouping_glob(m->glob, m->len, one, strlen(one), steps);
    }
    return any != m->negate;
}

/* Appends [s, s + n) to buf (*len of cap bytes), cut at a UTF-8
 * character's start when it does not fit. */
static void append(char *buf, size_t *len, size_t cap, const char *s, size_t n)
{
    if (*len + n > cap) {
        n = cap - *len;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    }
    memcpy(buf + *len, s, n);
    *len += n;
}

/* The first line of a message (blanks, blank lines and a "dyldN mode" line
 * before it skipped),
 * at most GROUPING_MESSAGE_LINE_MAX bytes: *n bytes at the return. */
static const char *message_line(const char *m, size_t *n)
{
    m = or_empty(m);
    size_t k;
    for (;;) {
        while (*m == ' ' || *m == '\t' || *m == '\n' || *m == '\r')
            m++;
        k = strcspn(m, "\r\n");
        /* macOS writes the dyld in use first: "dyld3 mode" says nothing of the crash */
        if (!(k == 10 && strncmp(m, "dyld", 4) == 0 && m[4] >= '0' && m[4] <= '9' &&
              strncmp(m + 5, " mode", 5) == 0))
            break;
        m += k;
    }
    if (k > GROUPING_MESSAGE_LINE_MAX) {
        k = GROUPING_MESSAGE_LINE_MAX;
        while (k > 0 && ((unsigned char)m[k] & 0xc0) == 0x80)
            k--;
    }
    *n = k;
    return m;
}

/* A value template filled in, into buf (at most GROUPING_VALUE_MAX bytes);
 * its length. */
static size_t fill(const char *t, const grouping_facts *f, const char *def, const char *function,
                   const char *image, char *buf)
{
    size_t len = 0, cap = GROUPING_VALUE_MAX;
    while (*t) {
        const char *open = strstr(t, "{{");
        if (!open) {
            append(buf, &len, cap, t, strlen(t));
            break;
        }
        append(buf, &len, cap, t, (size_t)(open - t));
        const char *close = strstr(open + 2, "}}"); /* the parser saw it */
        const char *a = open + 2;
        while (is_blank(*a))
            a++;
        const char *v = "";
        size_t vn;
        if (strncmp(a, "default", 7) == 0)
            v = def;
        else if (strncmp(a, "type", 4) == 0)
            v = f->type;
        else if (strncmp(a, "function", 8) == 0)
            v = function;
        else if (strncmp(a, "image", 5) == 0)
            v = image;
        else if (strncmp(a, "kind", 4) == 0)
            v = f->kind;
        if (strncmp(a, "message", 7) == 0)
            v = message_line(f->message, &vn);
        else
            vn = strlen(v = or_empty(v));
        append(buf, &len, cap, v, vn);
        t = close + 2;
    }
    buf[len] = 0;
    return len;
}

/* The signature rule r makes: its values filled in, the empty ones left
 * out, joined by " | "; NULL in *sig when all are empty. */
static symd_status make_signature(const rule *r, const grouping_facts *f, const char *def,
                                  const char *function, const char *image, char **sig,
                                  symd_err *err)
{
    char *out = malloc(GROUPING_SIGNATURE_MAX + 1);
    char *val = malloc(GROUPING_VALUE_MAX + 1);
    if (!out || !val) {
        free(out);
        free(val);
        return symd_fail(err, SYMD_E_NOMEM, "out of memory");
    }
    size_t len = 0;
    for (size_t i = 0; i < r->nv; i++) {
        size_t vn = fill(r->values[i], f, def, function, image, val);
        /* blanks around a filled-in value are nobody's key */
        size_t a = 0;
        while (a < vn && is_blank(val[a]))
            a++;
        while (vn > a && is_blank(val[vn - 1]))
            vn--;
        if (vn == a)
            continue;
        if (len)
            append(out, &len, GROUPING_SIGNATURE_MAX, " | ", 3);
        append(out, &len, GROUPING_SIGNATURE_MAX, val + a, vn - a);
    }
    free(val);
    out[len] = 0;
    if (!len) {
        free(out);
        out = NULL;
    }
    *sig = out;
    return SYMD_OK;
}

/* Contract in grouping.h. */
symd_status grouping_apply(const grouping_rules *g, const grouping_facts *f, const char *def,
                           char **sig, const char **rule_text, symd_err *err)
{
    *sig = NULL;
    *rule_text = NULL;
    uint64_t steps = GROUPING_MATCH_STEPS;
    for (size_t i = 0; g && i < g->n; i++) {
        const rule *r = &g->r[i];
        const char *function = NULL, *image = NULL;
        bool all = true;
        for (size_t k = 0; k < r->nm && all; k++) {
            const char *hit = NULL;
            all = matches(&r->m[k], f, &hit, &steps);
            if (hit && r->m[k].field == F_FUNCTION && !function)
                function = hit;
            if (hit && r->m[k].field == F_IMAGE && !image)
                image = hit;
        }
        if (!all)
            continue;
        symd_status s = make_signature(r, f, or_empty(def), function ? function : f->top_function,
                                       image ? image : f->top_image, sig, err);
        if (s != SYMD_OK)
            return s;
        if (*sig) { /* a fingerprint that fills in empty does not apply */
            *rule_text = r->text;
            return SYMD_OK;
        }
    }
    return SYMD_OK;
}

/* ---- the active set ---- */

static pthread_mutex_t active_mu = PTHREAD_MUTEX_INITIALIZER;
static grouping_rules *active;

/* Contract in grouping.h. */
void grouping_activate(grouping_rules *g)
{
    pthread_mutex_lock(&active_mu);
    grouping_rules *old = active;
    active = g;
    pthread_mutex_unlock(&active_mu);
    grouping_release(old); /* the slot's hold */
}

/* Contract in grouping.h. The active slot holds one reference of its own
 * (refs counts the others), so refs + 1 holders in all. */
grouping_rules *grouping_acquire(void)
{
    pthread_mutex_lock(&active_mu);
    grouping_rules *g = active;
    if (g)
        atomic_fetch_add(&g->refs, 1);
    pthread_mutex_unlock(&active_mu);
    return g;
}

void grouping_release(grouping_rules *g)
{
    if (g && atomic_fetch_sub(&g->refs, 1) == 0)
        grouping_free(g);
}

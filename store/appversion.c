/* App version sort keys (see appversion.h for the order they give). */
#include "appversion.h"

#include <string.h>

#define MAX_COMPONENTS 8
#define MAX_DIGITS 18

/* Appends dotted digits s[0..n) to key at *o as components ('A' + digit
 * count, then the digits without leading zeros; trailing zero components
 * dropped); false when s is not 1..MAX_COMPONENTS runs of 1..MAX_DIGITS
 * digits (leading zeros not counted) separated by single dots. */
static bool put_dotted(const char *s, size_t n, char *key, size_t *o)
{
    size_t at = 0, ncomp = 0, keep = *o; /* keep: key length past the last nonzero component */
    if (n == 0)
        return false;
    while (at <= n) {
        size_t start = at;
        while (at < n && s[at] >= '0' && s[at] <= '9')
            at++;
        if (at == start || ++ncomp > MAX_COMPONENTS)
            return false;
        size_t z = start;
        while (z < at && s[z] == '0')
            z++;
        size_t digits = at - z;
        if (digits > MAX_DIGITS)
            return false;
        key[(*o)++] = (char)('A' + digits);
        memcpy(key + *o, s + z, digits);
        *o += digits;
        if (digits)
            keep = *o;
        if (at == n)
            break;
        if (s[at] != '.')
            return false;
        at++;
        if (at == n)
            return false; /* "1." */
    }
    *o = keep;
    return true;
}

static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

bool app_version_key(const char *v, char *key)
{
    key[0] = 0;
    if (!v)
        return false;
    const char *s = v;
    size_t n = strlen(v);
    trim(&s, &n);
    if (!n)
        return false;
    /* "SHORT (BUILD)" */
    const char *sh = s, *b = NULL;
    size_t shn = n, bn = 0;
    const char *open = memchr(s, '(', n);
    if (open && s[n - 1] == ')') {
        shn = (size_t)(open - s);
        b = open + 1;
        bn = (size_t)(s + n - 1 - b);
        trim(&sh, &shn);
        trim(&b, &bn);
    }
    size_t o = 0;
    key[o++] = '#';
    if (!put_dotted(sh, shn, key, &o)) {
        /* unparsable: below every parsed key ('!' < '#'), by its text */
        size_t cut = n < APP_VERSION_KEY_MAX - 3 ? n : APP_VERSION_KEY_MAX - 3; /* room for a range's end */
        key[0] = '!';
        memcpy(key + 1, s, cut);
        key[1 + cut] = 0;
        return true;
    }
    key[o++] = ' '; /* below any component byte: "1.2" < "1.2.1" */
    if (b && bn) {
        size_t mark = o;
        key[o++] = '1';
        if (!put_dotted(b, bn, key, &o)) {
            o = mark;
            key[o++] = '2';
            size_t room = APP_VERSION_KEY_MAX - 2 - o; /* room for a range's end */
            size_t cut = bn < room ? bn : room;
            memcpy(key + o, b, cut);
            o += cut;
        }
    }
    key[o] = 0;
    return true;
}

int app_version_cmp(const char *a, const char *b)
{
    char ka[APP_VERSION_KEY_MAX], kb[APP_VERSION_KEY_MAX];
    app_version_key(a, ka);
    app_version_key(b, kb);
    return strcmp(ka, kb);
}

bool app_version_first_key(const char *v, char *key)
{
    if (!app_version_key(v, key))
        return false;
    if (key[0] == '!')
        key[0] = '~'; /* above '#': parsed versions come first */
    return true;
}

/* Whether parsed key names no build (nothing after the separator). */
static bool no_build(const char *key)
{
    const char *sp = key[0] == '#' ? strchr(key, ' ') : NULL;
    return sp && sp[1] == 0;
}

bool app_version_resolution_key(const char *v, char *key)
{
    if (!app_version_key(v, key))
        return false;
    if (no_build(key))
        key[strlen(key) - 1] = '!'; /* above ' ' and a build, below a further component */
    return true;
}

bool app_version_first_range(const char *v, char *lo, char *hi)
{
    if (!app_version_first_key(v, lo))
        return false;
    size_t n = strlen(lo);
    memcpy(hi, lo, n + 1);
    if (no_build(lo)) {
        hi[n - 1] = '!';
    } else { /* keys are at most APP_VERSION_KEY_MAX - 2 bytes: room for one */
        hi[n] = '\x01'; /* the least key after lo: lo alone */
        hi[n + 1] = 0;
    }
    return true;
}

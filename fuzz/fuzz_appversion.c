/* libFuzzer target: the app version order (store/appversion.c) on
 * arbitrary versions, as reports give them. Every key fits its bound and
 * is ordered as documented: a version equals itself, the order is
 * antisymmetric between two versions (the input split at its first NUL), a
 * version lies in its own "new in" range, and a resolution in it is never
 * below it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../store/appversion.h"

static void check_one(const char *v)
{
    char key[APP_VERSION_KEY_MAX], first[APP_VERSION_KEY_MAX], res[APP_VERSION_KEY_MAX];
    char lo[APP_VERSION_KEY_MAX], hi[APP_VERSION_KEY_MAX];
    bool has = app_version_key(v, key);
    if (strlen(key) >= APP_VERSION_KEY_MAX - 1 || (has && key[0] != '#' && key[0] != '!') ||
        (!has && key[0]))
        __builtin_trap();
    if (app_version_first_key(v, first) != has || app_version_resolution_key(v, res) != has ||
        app_version_first_range(v, lo, hi) != has)
        __builtin_trap();
    if (!has)
        return;
    if (app_version_cmp(v, v) != 0 || strcmp(res, key) < 0 || strcmp(lo, first) > 0 ||
        strcmp(first, hi) >= 0 || strlen(hi) >= APP_VERSION_KEY_MAX)
        __builtin_trap();
    if ((key[0] == '!') != (first[0] == '~') || strcmp(key + 1, first + 1) != 0)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2); /* two NUL-terminated versions */
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = 0;
    const char *a = buf, *b = buf + strlen(buf) + 1;
    check_one(a);
    check_one(b);
    int ab = app_version_cmp(a, b), ba = app_version_cmp(b, a);
    if ((ab < 0) != (ba > 0) || (ab == 0) != (ba == 0))
        __builtin_trap();
    free(buf);
    return 0;
}

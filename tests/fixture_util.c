/* Readers for the expected-output files under fixtures/expected. */
#include "fixture_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static char *next_line(char **p)
{
    if (!**p)
        return NULL;
    char *line = *p, *nl = strchr(line, '\n');
    if (nl) {
        *nl = 0;
        *p = nl + 1;
    } else {
        *p += strlen(line);
    }
    return line;
}

int load_nm_functions(const char *rel, nm_sym *out, int max)
{
    size_t len;
    char *buf = (char *)read_fixture(rel, &len), *p = buf, *line;
    if (!buf)
        return -1;
    int n = 0;
    while ((line = next_line(&p)) && n < max) {
        if (!strstr(line, " (__TEXT,__text) "))
            continue;
        char *ext = strstr(line, "external ");
        if (!ext)
            continue;
        char *name = ext + strlen("external ");
        /* llvm-nm -m: "non-external (was a private external) _name" */
        char *was = strstr(line, "(was a private external) ");
        if (was)
            name = was + strlen("(was a private external) ");
        if (strncmp(name, "[Thumb] ", 8) == 0)
            name += 8;
        if (strcmp(name, "__mh_execute_header") == 0)
            continue;
        out[n].addr = strtoull(line, NULL, 16);
        snprintf(out[n].name, sizeof out[n].name, "%s", name[0] == '_' ? name + 1 : name);
        n++;
    }
    free(buf);
    return n;
}

int load_hex_lines(const char *rel, uint64_t *out, int max)
{
    size_t len;
    char *buf = (char *)read_fixture(rel, &len), *p = buf, *line;
    if (!buf)
        return -1;
    int n = 0;
    while ((line = next_line(&p)) && n < max)
        if (line[0])
            out[n++] = strtoull(line, NULL, 16);
    free(buf);
    return n;
}

int load_tsv(const char *rel, tsv_row *rows, int max, char **bufp)
{
    size_t len;
    char *buf = (char *)read_fixture(rel, &len), *p = buf, *line;
    *bufp = buf;
    if (!buf)
        return -1;
    int n = 0;
    next_line(&p); /* header */
    while ((line = next_line(&p)) && n < max) {
        if (!line[0])
            continue;
        tsv_row *r = &rows[n++];
        r->nf = 0;
        char *f = line;
        for (;;) {
            char *tab = strchr(f, '\t');
            if (r->nf < (int)(sizeof r->f / sizeof r->f[0]))
                r->f[r->nf++] = f;
            if (!tab)
                break;
            *tab = 0;
            f = tab + 1;
        }
    }
    return n;
}

int load_uuids(const char *rel, fixture_slice *out, int max)
{
    size_t len;
    char *buf = (char *)read_fixture(rel, &len), *p = buf, *line;
    if (!buf)
        return -1;
    int n = 0;
    while ((line = next_line(&p)) && n < max) {
        if (sscanf(line, "UUID: %36s (%15[^)])", out[n].uuid, out[n].arch) == 2)
            n++;
    }
    free(buf);
    return n;
}

static const char *str_of(json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

bool twin_row_matches(json_t *frames, size_t *k, const tsv_row *r, unsigned flags,
                      json_t **outer)
{
    char levels[512];
    snprintf(levels, sizeof levels, "%s", r->nf > 9 ? r->f[9] : "");
    size_t nl = 0;
    bool ok = r->nf > 8;
    char *save = NULL;
    for (char *lv = strtok_r(levels, "|", &save); lv; lv = strtok_r(NULL, "|", &save)) {
        while (*lv == ' ')
            lv++;
        json_t *o = json_array_get(frames, *k + nl);
        char fn[128], file[128];
        unsigned line = 0;
        ok &= sscanf(lv, "%127s (%127[^:]:%u)", fn, file, &line) == 3 && o &&
              !strcmp(str_of(o, "symbol"), fn) && !strcmp(str_of(o, "file"), file) &&
              json_integer_value(json_object_get(o, "line")) == (json_int_t)line;
        nl++;
    }
    if (!nl)
        nl = 1;
    json_t *out = json_array_get(frames, *k + nl - 1);
    *outer = out;
    *k += nl;
    if (!ok || !out)
        return false;
    ok = !strcmp(str_of(out, "status"), r->f[6]) &&
         json_is_false(json_object_get(out, "inlined"));
    if (flags & TWIN_IMAGE)
        ok &= !strcmp(str_of(out, "image"), r->f[2]);
    if (flags & TWIN_ADDRESS)
        ok &= strtoull(str_of(out, "address"), NULL, 16) == strtoull(r->f[1], NULL, 16);
    if (!strcmp(r->f[6], "symbolicated"))
        ok &= !strcmp(str_of(out, "symbol"), r->f[7]) &&
              json_integer_value(json_object_get(out, "offset")) == atoi(r->f[8]);
    return ok;
}

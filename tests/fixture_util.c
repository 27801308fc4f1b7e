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

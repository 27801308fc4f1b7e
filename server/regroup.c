/* Refiling crash groups named by raw Swift names (see regroup.h). */
#include "regroup.h"

#include <stdlib.h>
#include <string.h>

#include "../demangle/demangle.h"

#define GROUPS_PER_PASS 256
#define CRASHES_PER_PAGE 128

/* Refiles every crash of (kind, from) under to; *n counts them. */
static symd_status refile_group(store *st, const char *kind, const char *from, const char *to,
                                size_t *n, symd_err *err)
{
    store_crash_filter f = {.kind = kind, .signature = from};
    store_crash page[CRASHES_PER_PAGE];
    for (;;) {
        size_t got = 0;
        bool more = false;
        /* the first page each time: refiled crashes leave the group */
        symd_status r = store_list_crashes(st, &f, 0, CRASHES_PER_PAGE, page, &got, &more, err);
        if (r != SYMD_OK)
            return r;
        for (size_t i = 0; i < got; i++) {
            if (r == SYMD_OK)
                r = store_update_crash(st, page[i].id, to, page[i].kind, page[i].bug_type, err);
            if (r == SYMD_OK)
                (*n)++;
            store_crash_free(&page[i]);
        }
        if (r != SYMD_OK || got == 0)
            return r;
    }
}

symd_status regroup_swift_signatures(store *st, size_t *groups, size_t *crashes, symd_err *err)
{
    *groups = *crashes = 0;
    store_crash_filter f = {.query = "$"};
    for (;;) {
        store_crash_group g[GROUPS_PER_PASS];
        size_t n = 0, moved = 0;
        symd_status r = store_crash_groups(st, &f, GROUPS_PER_PASS, g, &n, err);
        if (r != SYMD_OK)
            return r;
        for (size_t i = 0; i < n; i++) {
            const char *sig = g[i].signature;
            char *shown = r == SYMD_OK && sig && symd_is_swift(sig) ? symd_demangle(sig) : NULL;
            if (shown) {
                r = refile_group(st, g[i].kind, sig, shown, crashes, err);
                moved += r == SYMD_OK;
                free(shown);
            }
            store_crash_group_free(&g[i]);
        }
        *groups += moved;
        /* Done when a pass moves nothing (what is left is no Swift name
         * symd can read) or saw every group with a '$'. */
        if (r != SYMD_OK || moved == 0 || n < GROUPS_PER_PASS)
            return r;
    }
}

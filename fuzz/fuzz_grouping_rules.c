/* libFuzzer target: the grouping rules parser (server/grouping.c) over
 * arbitrary bytes. An input is refused with a line inside it (or 0 for the
 * file as a whole) and a message, or read into rules that every report can
 * be matched against: the first bytes of the input also make the report's
 * facts, and the signature a rule makes is bounded and UTF-8 whenever the
 * facts are. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../server/grouping.h"

/* Whether s is well-formed UTF-8 of at most max bytes. */
static int ok_signature(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : 3;
        if (c >= 0x80 && ((c & 0xc0) == 0x80 || c >= 0xf8))
            return 0;
        if (i + k >= n + (k == 0))
            return 0;
        for (size_t j = 1; j <= k; j++)
            if (((unsigned char)s[i + j] & 0xc0) != 0x80)
                return 0;
        i += k + 1;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    grouping_rules *g = NULL;
    size_t line = 99;
    symd_err err = {0};
    symd_status r = grouping_parse((const char *)data, size, &g, &line, &err);
    if ((r == SYMD_OK) != (g != NULL))
        __builtin_trap();
    if (!g) {
        size_t lines = 1;
        for (size_t i = 0; i < size; i++)
            lines += data[i] == '\n';
        if (!err.msg[0] || line > lines)
            __builtin_trap(); /* every refusal says why, at a line of the input */
        return 0;
    }
    if (grouping_count(g) > GROUPING_RULES_MAX ||
        (grouping_count(g) && strlen(grouping_digest(g)) != 32))
        __builtin_trap();
    /* facts in ASCII, from the input's own bytes, so rules can match them */
    char fn[3][48], im[2][48], msg[96];
    const char *fns[3], *ims[2];
    for (int k = 0; k < 3; k++) {
        size_t i = 0;
        for (; i < 47 && k * 16 + i < size; i++)
            fn[k][i] = (char)(data[k * 16 + i] & 0x7f) ? (char)(data[k * 16 + i] & 0x7f) : 'x';
        fn[k][i] = 0;
        fns[k] = fn[k];
    }
    for (int k = 0; k < 2; k++) {
        snprintf(im[k], sizeof im[k], "lib%s.dylib", k ? "system_kernel" : fn[k]);
        ims[k] = im[k];
    }
    snprintf(msg, sizeof msg, "dyld3 mode\n%s\n%s", fn[1], fn[2]);
    const char *kinds[] = {"crash", "hang", "jetsam"};
    grouping_facts f = {kinds[size % 3], "EXC_CRASH (SIGABRT)", msg, fns, 3, ims, 2,
                        fns[0], ims[1]};
    char *sig = NULL;
    const char *rule = NULL;
    if (grouping_apply(g, &f, "-[Crasher doAbort] | EXC_CRASH (SIGABRT)", &sig, &rule, &err) !=
        SYMD_OK)
        __builtin_trap();
    if ((sig != NULL) != (rule != NULL) || (sig && !ok_signature(sig, GROUPING_SIGNATURE_MAX)))
        __builtin_trap();
    free(sig);
    /* the active set swaps and is held as requests do */
    grouping_activate(g);
    grouping_rules *held = grouping_acquire();
    grouping_activate(NULL);
    grouping_release(held);
    return 0;
}

/* Kernel panic text. Placeholder until the reader lands. */
#include "crash_int.h"

bool crash_looks_like_panic(const char *s, size_t n)
{
    (void)s;
    (void)n;
    return false;
}

symd_status crash_parse_panic_text(cp *p, const char *s, size_t n, size_t first_line)
{
    (void)s;
    (void)n;
    return cp_warn_line(p, first_line, "panic text is not read yet");
}

/* macOS `sample`, spindump and microstackshot (.ips 145/202/206) text:
 * call trees with sample counts. Placeholder until the reader lands. */
#include "crash_int.h"

bool crash_looks_like_sample(const char *s, size_t n)
{
    (void)s;
    (void)n;
    return false;
}

symd_status crash_parse_sample(cp *p, const char *body, size_t n, size_t first_line)
{
    (void)body;
    (void)n;
    return cp_warn_line(p, first_line, "sample text is not read yet");
}

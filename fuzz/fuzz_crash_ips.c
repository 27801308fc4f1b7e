/* libFuzzer target: the checks of fuzz_crash_text.c over a corpus of its own,
 * seeded from .ips reports (JSON and text bodies), so each format's coverage
 * grows on its own seeds. */
#include "fuzz_crash_text.c"

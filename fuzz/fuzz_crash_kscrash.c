/* libFuzzer target: the checks of fuzz_crash_text.c over a corpus of its own,
 * seeded from KSCrash JSON reports (../shared/reporters, the generated twin,
 * fuzz/seeds/kscrash), so the KSCrash reader's coverage grows on its own
 * seeds. */
#include "fuzz_crash_text.c"

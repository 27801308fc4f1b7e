/* libFuzzer target: the checks of fuzz_crash_text.c (a model or an input
 * error, indexes in range, the text rendering made and valid UTF-8) over
 * .plcrash reports. An input that does not start with the magic gets
 * "plcrash" and version 1 put before it, so mutations spend their time in
 * the protobuf reader rather than in the text detection. */
#include <stdlib.h>
#include <string.h>

#define LLVMFuzzerTestOneInput crash_text_one
#include "fuzz_crash_text.c"
#undef LLVMFuzzerTestOneInput

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 7 && memcmp(data, "plcrash", 7) == 0)
        return crash_text_one(data, size);
    uint8_t *buf = malloc(size + 8);
    if (!buf)
        return 0;
    memcpy(buf, "plcrash\x01", 8);
    if (size)
        memcpy(buf + 8, data, size);
    crash_text_one(buf, size + 8);
    free(buf);
    return 0;
}

/* libFuzzer target: util/protowire over arbitrary bytes. pw_next either
 * moves the cursor forward inside the message or leaves it where it was;
 * a length-delimited field lies inside the bytes; pw_count agrees with
 * the fields pw_next reads; pw_walk ends (bounded depth) and sees at least
 * the top-level fields. */
#include <stdint.h>
#include <stdlib.h>

#include "../util/protowire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pw_msg m = pw_root(data, size);
    pw_field f;
    pw_status st;
    size_t n = 0, n1 = 0;
    for (;;) {
        size_t before = m.c.pos;
        st = pw_next(&m, &f);
        if (st != PW_OK) {
            if (m.c.pos != before)
                __builtin_trap(); /* a failed read moved the cursor */
            break;
        }
        if (m.c.pos <= before || m.c.pos > size || f.off != before || f.num == 0)
            __builtin_trap();
        if (f.type == PW_LEN &&
            (f.data < data || f.len > size || (size_t)(f.data - data) > size - f.len))
            __builtin_trap();
        n++;
        n1 += f.num == 1;
    }
    if (st != PW_END && st != PW_E_TRUNCATED && st != PW_E_VARINT && st != PW_E_LENGTH &&
        st != PW_E_WIRETYPE && st != PW_E_FIELD)
        __builtin_trap();
    if (pw_count(data, size, 1, SIZE_MAX - 1) != n1)
        __builtin_trap();
    size_t fields = 0;
    pw_status ws = pw_walk(data, size, 0, &fields);
    if (fields < n || (ws == PW_OK && st != PW_END))
        __builtin_trap();
    return 0;
}

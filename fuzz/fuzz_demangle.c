/* libFuzzer target: symd_demangle on arbitrary names, as the index builder
 * calls it for every symbol of an upload. Whatever it returns must respect
 * its bounds, and whenever it demangles a C++ or Rust name the answer must
 * be libiberty's cplus_demangle's (which is only safe to call then: on the
 * names symd gives up on it may print gigabytes). Swift names go to symd's
 * own demangler (fuzz_swift_demangle checks it): here both styles must
 * agree on whether a name demangles, unless a bound stops one of them. */
#include <libiberty/demangle.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../demangle/demangle.h"
#include "../swift/demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *name = malloc(size + 1); /* NUL-terminated, as names are */
    if (!name)
        return 0;
    memcpy(name, data, size);
    name[size] = 0;
    char *out = symd_demangle(name);
    if (out) {
        size_t n = strlen(out);
        if (n == 0 || n > SYMD_DEMANGLE_MAX_OUT || strlen(name) > SYMD_DEMANGLE_MAX_IN ||
            strcmp(out, name) == 0)
            __builtin_trap();
        if (symd_is_swift(name)) {
            /* One style read it, the other must too, unless a bound stopped
             * it: the full style prints longer names (module names, types). */
            char *full = symd_demangle_full(name);
            if (!full) {
                dynbuf b;
                dynbuf_init(&b, SYMD_DEMANGLE_MAX_OUT);
                bool bounded = false;
                if (swift_demangle_ex(name, strlen(name), SWIFT_STYLE_FULL, &b, &bounded) ||
                    !bounded)
                    __builtin_trap();
                dynbuf_free(&b);
            } else if (strlen(full) > SYMD_DEMANGLE_MAX_OUT) {
                __builtin_trap();
            }
            free(full);
        } else if (strncmp(name, "___Z", 4) != 0) {
            char *ref = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
            if (!ref || strcmp(ref, out) != 0)
                __builtin_trap();
            free(ref);
        }
        free(out);
    }
    free(name);
    return 0;
}

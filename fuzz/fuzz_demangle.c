/* libFuzzer target: symd_demangle on arbitrary names, as the index builder
 * calls it for every symbol of an upload. Whatever it returns must respect
 * its bounds, and whenever it demangles a C++ or Rust name the answer must
 * be libiberty's cplus_demangle's (which is only safe to call then: on the
 * names symd gives up on it may print gigabytes). Swift names go to symd's
 * own demangler (fuzz_swift_demangle checks it): here a name the full
 * style reads must read in the simplified style too. */
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
        if (!symd_is_swift(name) && strncmp(name, "___Z", 4) != 0) {
            char *ref = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
            if (!ref || strcmp(ref, out) != 0)
                __builtin_trap();
            free(ref);
        }
        free(out);
    }
    if (symd_is_swift(name)) {
        /* A name the full style reads, the simplified style (the one shown)
         * reads too, unless a bound stops it or it shows nothing of it. The converse does not hold,
         * in Swift's own printers either: the simplified style leaves out
         * parts (argument types, a thunk's source type) whose shape the
         * full style checks. */
        char *full = symd_demangle_full(name);
        if (full) {
            char *shown = symd_demangle(name);
            if (strlen(full) > SYMD_DEMANGLE_MAX_OUT)
                __builtin_trap();
            if (!shown) {
                dynbuf b;
                dynbuf_init(&b, SYMD_DEMANGLE_MAX_OUT);
                swift_why why = SWIFT_WHY_OK;
                if (swift_demangle_ex(name, strlen(name), SWIFT_STYLE_SIMPLIFIED, &b, &why) ||
                    why == SWIFT_WHY_NAME)
                    __builtin_trap();
                dynbuf_free(&b);
            }
            free(shown);
            free(full);
        }
    }
    free(name);
    return 0;
}

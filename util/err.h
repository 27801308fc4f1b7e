/* Error kinds and the error record every module fills in. */
#ifndef SYMD_ERR_H
#define SYMD_ERR_H

#include <stddef.h>

/* What went wrong, by who is to blame: input (corrupt, unsupported, not
 * found, too large), the caller (invalid request), or us (nomem, io, db). */
typedef enum {
    SYMD_OK = 0,
    SYMD_E_CORRUPT,     /* input is the right kind of file but broken */
    SYMD_E_NOT_MACHO,   /* input is not a Mach-O file at all */
    SYMD_E_NO_UUID,     /* Mach-O slice without LC_UUID */
    SYMD_E_UNSUPPORTED, /* well-formed but outside what we handle */
    SYMD_E_TOO_LARGE,   /* a configured limit was exceeded */
    SYMD_E_INVALID,     /* a request that does not follow the contract */
    SYMD_E_NOT_FOUND,
    SYMD_E_NOMEM,
    SYMD_E_IO,
    SYMD_E_DB,
    SYMD_E_BAD_DEBUG_INFO, /* DWARF inside a well-formed Mach-O is broken */
    SYMD_E_NOT_CRASH_REPORT, /* input is not an Apple crash report at all */
    SYMD_E_UNAVAILABLE, /* the database does not answer now (down, restarting): retry */
} symd_status;

typedef struct {
    symd_status kind;
    char msg[240];
    const char *src_file; /* where the error was found, for logs */
    int src_line;
} symd_err;

/* Records the first error only: later calls keep the original cause.
 * Returns kind so callers can `return symd_fail(...)`. err may be NULL. */
symd_status symd_fail_at(symd_err *err, symd_status kind, const char *file,
                         int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define symd_fail(err, kind, ...) \
    symd_fail_at((err), (kind), __FILE__, __LINE__, __VA_ARGS__)
/* Corrupt input, reported with the line that noticed it (cf. SQLITE_CORRUPT_BKPT). */
#define SYMD_CORRUPT(err, ...) \
    symd_fail_at((err), SYMD_E_CORRUPT, __FILE__, __LINE__, __VA_ARGS__)

void symd_err_clear(symd_err *err);

/* Stable snake_case name of a kind, e.g. "malformed_macho" is chosen by the
 * HTTP layer; this is the generic one ("corrupt", "nomem", ...). */
const char *symd_status_name(symd_status s);

#endif

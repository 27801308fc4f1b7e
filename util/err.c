/* Error record helpers. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

symd_status symd_fail_at(symd_err *err, symd_status kind, const char *file,
                         int line, const char *fmt, ...)
{
    if (!err || err->kind != SYMD_OK)
        return err ? err->kind : kind;
    err->kind = kind;
    err->src_file = file;
    err->src_line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return kind;
}

void symd_err_clear(symd_err *err)
{
    memset(err, 0, sizeof *err);
}

const char *symd_status_name(symd_status s)
{
    switch (s) {
    case SYMD_OK: return "ok";
    case SYMD_E_CORRUPT: return "corrupt";
    case SYMD_E_NOT_MACHO: return "not_macho";
    case SYMD_E_NO_UUID: return "no_uuid";
    case SYMD_E_UNSUPPORTED: return "unsupported";
    case SYMD_E_TOO_LARGE: return "too_large";
    case SYMD_E_INVALID: return "invalid_request";
    case SYMD_E_NOT_FOUND: return "not_found";
    case SYMD_E_NOMEM: return "out_of_memory";
    case SYMD_E_IO: return "io_error";
    case SYMD_E_DB: return "database_error";
    case SYMD_E_BAD_DEBUG_INFO: return "malformed_debug_info";
    case SYMD_E_NOT_CRASH_REPORT: return "not_a_crash_report";
    case SYMD_E_UNAVAILABLE: return "database_unavailable";
    }
    return "unknown";
}

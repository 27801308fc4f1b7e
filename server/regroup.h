/* Crash groups named by raw Swift names, refiled under the names symd shows.
 * Releases before Swift demangling (schema 2 and older) grouped Swift
 * crashes by their mangled names; crashes of the same cause stored now are
 * grouped by Xcode's simplified form. Without this, one cause would have
 * two groups after an upgrade. */
#ifndef SYMD_REGROUP_H
#define SYMD_REGROUP_H

#include <stddef.h>

#include "../store/store.h"

/* Every crash whose signature is a Swift name symd can demangle ("$s…",
 * "$S…", "$e…": the manglings with a '$') is filed under the simplified
 * form, its counters moved with it (store_update_crash). Cheap when there
 * is nothing to do (one groups query), so the server runs it at every
 * start. *groups and *crashes say how many were refiled. */
symd_status regroup_swift_signatures(store *st, size_t *groups, size_t *crashes, symd_err *err);

#endif

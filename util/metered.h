/* Included last by a module that reads untrusted input: its malloc family
 * is counted in the calling thread's memory meter (membudget.h), so one
 * request cannot make it allocate past its budget. Passing `free` as a
 * function pointer still names the real free: that memory is then simply
 * not subtracted. */
#ifndef SYMD_METERED_H
#define SYMD_METERED_H

#include <stdlib.h>
#include <string.h>

#include "membudget.h"

#define malloc(n) mem_malloc(n)
#define calloc(n, size) mem_calloc(n, size)
#define realloc(p, n) mem_realloc(p, n)
#define free(p) mem_free(p)
#define strdup(s) mem_strdup(s)
#define strndup(s, n) mem_strndup(s, n)

#endif

/* A small streaming JSON writer into a dynbuf, for large responses where
 * building a jansson tree first would cost more than the lookups. */
#ifndef SYMD_JSONW_H
#define SYMD_JSONW_H

#include <stdbool.h>
#include <stdint.h>

#include "dynbuf.h"

/* Writers append to b; a failed append (limit or memory) is sticky: check
 * jw->ok once at the end. The caller writes commas with jw_sep. */
typedef struct {
    dynbuf *b;
    bool ok;
} jsonw;

void jw_init(jsonw *w, dynbuf *b);
void jw_raw(jsonw *w, const char *s);
/* A string literal, without strlen at run time. */
#define JW_LIT(w, lit) jw_raw_n((w), (lit), sizeof(lit) - 1)
void jw_raw_n(jsonw *w, const char *s, size_t n);
/* A JSON string literal of s (escaped; invalid UTF-8 bytes become U+FFFD). */
void jw_str(jsonw *w, const char *s);
/* Appends again the n bytes written at offset at (an earlier value). */
void jw_copy(jsonw *w, size_t at, size_t n);
void jw_hex(jsonw *w, uint64_t v);      /* "0x..." */
void jw_u64(jsonw *w, uint64_t v);
void jw_i64(jsonw *w, int64_t v);

#endif

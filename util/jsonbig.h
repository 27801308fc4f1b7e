/* JSON whose integers may be any size: Apple's .ips carry unsigned 64-bit
 * values (arm64e registers with pointer-authentication bits, kernel
 * addresses, stackshot fields) that jansson, whose integers are int64_t,
 * refuses ("too big integer").
 *
 * jsonbig_loadb runs a pre-pass over the text (no I/O, (buf, len) in): every
 * integer literal outside int64_t is rewritten into the string
 * "\u001f<literal as written>" and jansson parses the result. The control
 * character marks the string as ours (no report writes it in a name), and
 * jsonbig_u64 / jsonbig_i64 read both forms back exactly. Reals, and integers
 * that fit, are left to jansson. Depth is bounded by jansson
 * (JSON_PARSER_MAX_DEPTH, 2048); NaN and Infinity are not JSON and fail.
 * Error positions (line, column, position) are those of the caller's text,
 * not of the rewritten one. */
#ifndef SYMD_JSONBIG_H
#define SYMD_JSONBIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONBIG_MARK '\x1f'

/* Parses buf[0..len) as one JSON document (flags as json_loadb's). NULL
 * with *e set when it is no JSON, or out of memory ("out of memory"). The
 * document is the caller's (json_decref). */
json_t *jsonbig_loadb(const char *buf, size_t len, size_t flags, json_error_t *e);

/* Marks a member value jsonbig_load_members did not read: the string
 * "\x1e<bytes of the value as written>". */
#define JSONBIG_SKIPPED '\x1e'

/* Parses buf[0..len) as one JSON object member by member, so that values
 * the caller does not read cost nothing: a member whose key known() does
 * not accept is read only while such values add up to at most
 * unknown_budget bytes; past that its value becomes a skipped marker
 * (jsonbig_skipped) and is only scanned for its end. Anything that is not
 * a well-formed object at the top level is parsed whole by jsonbig_loadb,
 * so errors and their positions are jsonbig_loadb's. *nskipped: how many
 * values were skipped. The document is the caller's. */
json_t *jsonbig_load_members(const char *buf, size_t len, bool (*known)(const char *key),
                             size_t unknown_budget, size_t *nskipped, json_error_t *e);
/* The size of a value jsonbig_load_members skipped, or false when v is no
 * skipped marker. */
bool jsonbig_skipped(const json_t *v, uint64_t *bytes);

/* What v is, for messages: "an object", "a negative integer", "an
 * integer past 2^64-1", "null"... */
const char *jsonbig_describe(const json_t *v);

/* A JSON integer, or a marked big literal, as uint64_t: false when v is
 * neither, negative, or past 2^64-1. */
bool jsonbig_u64(const json_t *v, uint64_t *out);
/* The same as int64_t: false when v is no integer or outside int64_t. */
bool jsonbig_i64(const json_t *v, int64_t *out);
/* v is a JSON integer or a marked big literal (of any size). */
bool jsonbig_is_integer(const json_t *v);
/* The digits ('-'? digits) of a marked big literal, *n of them, pointing
 * into v's string (valid while v lives); NULL when v is not one. For
 * printing integers past 64 bits exactly. */
const char *jsonbig_literal(const json_t *v, size_t *n);

#endif

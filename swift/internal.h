/* Interfaces between the parts of the Swift demangler (not public). */
#ifndef SYMD_SWIFT_INTERNAL_H
#define SYMD_SWIFT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "demangle.h"
#include "node.h"

/* How deep names may nest inside names: function signature specializations
 * carry mangled names of their own, which the printer demangles in turn. */
#define SWIFT_MAX_NEST 4

/* Byte classes of the mangling (ASCII only, whatever the locale). */
static inline bool sw_digit(char c) { return c >= '0' && c <= '9'; }
static inline bool sw_lower(char c) { return c >= 'a' && c <= 'z'; }
static inline bool sw_upper(char c) { return c >= 'A' && c <= 'Z'; }
static inline bool sw_letter(char c) { return sw_lower(c) || sw_upper(c); }

/* The tree of the mangled name s[0..n), routed as Swift's
 * Context::demangleSymbolAsNode routes it: "_T" names (but "_T0") to the
 * old-mangling parser, the others to the new one. NULL when the name is
 * malformed or passes a bound (see a->failed). `nest` counts names inside
 * names. */
snode *swift_parse_symbol(sarena *a, const char *s, size_t n, int nest);

/* The new (Swift 4 and later) mangling, after a prefix of plen bytes.
 * old_labels: "_T0" names keep argument labels in the tuple type. */
snode *swift_parse_new(sarena *a, const char *s, size_t n, size_t plen, bool old_labels,
                       bool async_main, int nest);

/* The old (Swift 3 and older) mangling, s starting with "_T". */
snode *swift_parse_old(sarena *a, const char *s, size_t n);

/* Swift's punycode variant ('_' delimiter, digits a-z A-J) decoded to
 * UTF-8 in the arena, with Swift's quirks: a malformed tail ends the
 * decoding early instead of failing it. False when a code point cannot be
 * encoded or on the arena's bounds. */
bool swift_punycode(sarena *a, const char *s, size_t n, const char **out, size_t *outlen);

/* Prints the tree in style into out[0..cap), NUL-terminated; *len is its
 * length. False when Swift's printer would give up on the tree (or would
 * print a placeholder such as "<null node pointer>"), on a bound, or when
 * the style prints nothing of the tree; *why says which. */
bool swift_print_tree(sarena *a, const snode *root, swift_style style, char *out, size_t cap,
                      size_t *len, swift_why *why);

#endif

/* Parsing and printing of addresses and UUIDs as the API spells them. */
#ifndef SYMD_HEX_H
#define SYMD_HEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of one hex digit, any case; -1 for any other character. */
static inline int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "0x1a2b" or "1a2b" (hex) → value; no sign, no trailing junk, ≤ 64 bits. */
bool hex_parse_u64(const char *s, size_t n, uint64_t *out);
/* Decimal or 0x-hex, as CLI arguments are written. */
bool num_parse_u64(const char *s, uint64_t *out);
/* 32 hex digits, any case, dashes anywhere ignored (only 0 or 4 allowed). */
bool uuid_parse(const char *s, uint8_t out[16]);
/* "4C4C4402-5555-3144-A178-C360AFACD7DC" into buf[37]. */
void uuid_format(const uint8_t u[16], char buf[37]);
/* "0x…" lowercase into buf[19]. */
void hex_format_u64(uint64_t v, char buf[19]);

#endif

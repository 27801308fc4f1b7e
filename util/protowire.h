/* A small bounded reader of the protobuf wire format (no schema, no code
 * generator): one field at a time over untrusted bytes. Varints of at most
 * 10 bytes, lengths checked against the bytes that remain, fixed32/fixed64,
 * groups refused; the cursor advances only on success, so after an error it
 * still stands at the field that failed. The schema is the caller's: it
 * switches on field numbers, enters a length-delimited field as a message
 * (pw_enter, depth bounded) and skips what it does not know. */
#ifndef SYMD_PROTOWIRE_H
#define SYMD_PROTOWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cursor.h"

#define PW_MAX_VARINT 10 /* bytes of a varint: 64 bits, 7 a byte */
#define PW_MAX_DEPTH 32  /* messages inside messages */
#define PW_MAX_FIELD 0x1fffffffu

typedef enum { PW_VARINT = 0, PW_I64 = 1, PW_LEN = 2, PW_I32 = 5 } pw_type;

typedef enum {
    PW_OK = 0,
    PW_END,         /* no bytes left: the message is over */
    PW_E_TRUNCATED, /* a tag, varint or fixed value cut short by the end */
    PW_E_VARINT,    /* a varint longer than 10 bytes or past 2^64-1 */
    PW_E_LENGTH,    /* a length past the bytes that remain */
    PW_E_WIRETYPE,  /* wire type 3 or 4 (groups), 6 or 7 */
    PW_E_FIELD,     /* field number 0 or past 2^29-1 */
    PW_E_DEPTH,     /* messages nested past PW_MAX_DEPTH */
} pw_status;

/* One field as read: its number and wire type, the value of a varint or
 * fixed field (u), the bytes of a length-delimited one (data, len), and
 * where its tag stands (off: bytes from the start of its message). */
typedef struct {
    uint32_t num;
    pw_type type;
    uint64_t u;
    const uint8_t *data;
    size_t len;
    size_t off;
} pw_field;

/* A message being read: its bytes and how deep it stands (0: the outermost). */
typedef struct {
    cursor c;
    unsigned depth;
} pw_msg;

static inline pw_msg pw_root(const uint8_t *p, size_t len)
{
    pw_msg m = {cur_make(p, len), 0};
    return m;
}

/* A varint; PW_E_TRUNCATED or PW_E_VARINT leave the cursor where it was. */
pw_status pw_varint(cursor *c, uint64_t *v);

/* The next field of m: PW_OK (m advanced past it), PW_END at the end of the
 * message, else an error and m unmoved. */
pw_status pw_next(pw_msg *m, pw_field *f);

/* A length-delimited field of m as a message of its own (*sub);
 * PW_E_DEPTH when that would stand deeper than PW_MAX_DEPTH. */
pw_status pw_enter(const pw_msg *m, const pw_field *f, pw_msg *sub);

/* How many fields numbered num the message [p, p+len) holds, counting up
 * to max + 1 and stopping at the first error. For limits checked before
 * anything is allocated. */
size_t pw_count(const uint8_t *p, size_t len, uint32_t num, size_t max);

/* Every field of a message, recursing into length-delimited fields that
 * read whole as messages, up to PW_MAX_DEPTH: fields seen, and the first
 * error (PW_OK when none). For tests and the fuzzer: bounded time and stack. */
pw_status pw_walk(const uint8_t *p, size_t len, unsigned depth, size_t *fields);

const char *pw_status_str(pw_status st);
const char *pw_type_name(unsigned type);

#endif

/* Contract in protowire.h. */
#include "protowire.h"

pw_status pw_varint(cursor *c, uint64_t *v)
{
    uint64_t r = 0;
    size_t pos = c->pos;
    for (unsigned i = 0; i < PW_MAX_VARINT; i++) {
        if (pos >= c->len)
            return PW_E_TRUNCATED;
        uint8_t b = c->p[pos++];
        /* the 10th byte holds bit 63 alone */
        if (i == PW_MAX_VARINT - 1 && (b & 0x7e))
            return PW_E_VARINT;
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            c->pos = pos;
            *v = r;
            return PW_OK;
        }
    }
    return PW_E_VARINT; /* an 11th byte would follow */
}

pw_status pw_next(pw_msg *m, pw_field *f)
{
    cursor c = m->c;
    if (cur_left(&c) == 0)
        return PW_END;
    f->off = c.pos;
    uint64_t tag;
    pw_status st = pw_varint(&c, &tag);
    if (st)
        return st;
    uint64_t num = tag >> 3;
    unsigned type = (unsigned)(tag & 7);
    if (num == 0 || num > PW_MAX_FIELD)
        return PW_E_FIELD;
    f->num = (uint32_t)num;
    f->u = 0;
    f->data = NULL;
    f->len = 0;
    switch (type) {
    case PW_VARINT:
        if ((st = pw_varint(&c, &f->u)))
            return st;
        break;
    case PW_I64:
        if (!cur_u64le(&c, &f->u))
            return PW_E_TRUNCATED;
        break;
    case PW_I32: {
        uint32_t v;
        if (!cur_u32le(&c, &v))
            return PW_E_TRUNCATED;
        f->u = v;
        break;
    }
    case PW_LEN: {
        uint64_t n;
        if ((st = pw_varint(&c, &n)))
            return st;
        if (n > cur_left(&c))
            return PW_E_LENGTH;
        f->data = c.p + c.pos;
        f->len = (size_t)n;
        c.pos += (size_t)n;
        break;
    }
    default:
        return PW_E_WIRETYPE;
    }
    f->type = (pw_type)type;
    m->c = c;
    return PW_OK;
}

pw_status pw_enter(const pw_msg *m, const pw_field *f, pw_msg *sub)
{
    if (m->depth >= PW_MAX_DEPTH)
        return PW_E_DEPTH;
    sub->c = cur_make(f->data, f->len);
    sub->depth = m->depth + 1;
    return PW_OK;
}

size_t pw_count(const uint8_t *p, size_t len, uint32_t num, size_t max)
{
    pw_msg m = pw_root(p, len);
    pw_field f;
    size_t n = 0;
    while (n <= max && pw_next(&m, &f) == PW_OK)
        if (f.num == num)
            n++;
    return n;
}

pw_status pw_walk(const uint8_t *p, size_t len, unsigned depth, size_t *fields)
{
    if (depth > PW_MAX_DEPTH)
        return PW_E_DEPTH;
    pw_msg m = pw_root(p, len);
    m.depth = depth;
    pw_field f;
    pw_status st;
    while ((st = pw_next(&m, &f)) == PW_OK) {
        (*fields)++;
        if (f.type != PW_LEN || f.len == 0)
            continue;
        /* Recurse only into what reads whole as a message: bytes that are
         * text or a UUID fail quickly and count as one field. */
        size_t n = 0;
        pw_msg probe = pw_root(f.data, f.len);
        pw_field g;
        pw_status ps;
        while ((ps = pw_next(&probe, &g)) == PW_OK)
            n++;
        if (ps != PW_END || n == 0)
            continue;
        pw_status sub = pw_walk(f.data, f.len, depth + 1, fields);
        if (sub == PW_E_DEPTH)
            return sub;
    }
    return st == PW_END ? PW_OK : st;
}

const char *pw_status_str(pw_status st)
{
    switch (st) {
    case PW_OK: return "ok";
    case PW_END: return "end of message";
    case PW_E_TRUNCATED: return "cut short by the end of the message";
    case PW_E_VARINT: return "a varint longer than 10 bytes";
    case PW_E_LENGTH: return "a length past the end of the message";
    case PW_E_WIRETYPE: return "a group or an unknown wire type";
    case PW_E_FIELD: return "field number 0 or past 2^29-1";
    case PW_E_DEPTH: return "messages nested too deep";
    }
    return "?";
}

const char *pw_type_name(unsigned type)
{
    switch (type) {
    case PW_VARINT: return "varint";
    case PW_I64: return "fixed64";
    case PW_LEN: return "length-delimited";
    case PW_I32: return "fixed32";
    default: return "group";
    }
}

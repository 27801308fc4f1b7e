/* The Swift 3 and older mangling ("_T", "_Tt" types, "_TTo"/"_TTS..."
 * prefixes; also the Objective-C runtime names of Swift classes) read into
 * the same node tree as the new mangling. Unlike the new mangling this one
 * is prefix-ordered, so it is read by recursive descent: every production
 * takes a depth and gives up past SWIFT_MAX_DEPTH, as Swift's
 * OldDemangler.cpp does past its MaxDepth. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "../util/metered.h" /* last: counts this file's allocations */

typedef struct {
    sarena *a;
    const char *s;
    size_t n, pos;
    snode **subs; /* substitutions, referred to by 'S' and an index */
    uint32_t nsubs, capsubs;
} od;

/* ---- reading, with Swift's NameSource semantics ---- */

static bool empty(const od *o)
{
    return o->pos >= o->n;
}

/* The next byte, '.' at the end (a byte that no production accepts). */
static char peek(const od *o)
{
    return empty(o) ? '.' : o->s[o->pos];
}

static char next(od *o)
{
    char c = peek(o);
    if (!empty(o))
        o->pos++;
    return c;
}

static bool next_if(od *o, char c)
{
    if (empty(o) || o->s[o->pos] != c)
        return false;
    o->pos++;
    return true;
}

static bool next_if_str(od *o, const char *str)
{
    size_t len = strlen(str);
    if (o->n - o->pos < len || memcmp(o->s + o->pos, str, len) != 0)
        return false;
    o->pos += len;
    return true;
}

/* A decimal number, wrapping around like Swift's (which does not check).
 * Like Swift's, a failure still consumes the non-digit byte. */
static bool natural(od *o, uint64_t *num)
{
    if (empty(o))
        return false;
    char c = next(o);
    if (!sw_digit(c))
        return false;
    *num = (uint64_t)(c - '0');
    while (!empty(o) && sw_digit(peek(o)))
        *num = *num * 10 + (uint64_t)(next(o) - '0');
    return true;
}

static bool index_(od *o, uint64_t *num)
{
    if (next_if(o, '_')) {
        *num = 0;
        return true;
    }
    if (!natural(o, num) || !next_if(o, '_'))
        return false;
    ++*num;
    return true;
}

/* ---- nodes ---- */

static snode *mk(od *o, snode_kind k)
{
    return snode_new(o->a, k);
}

static snode *mk_str(od *o, snode_kind k, const char *s)
{
    return snode_cstr(o->a, k, s);
}

static snode *mk_idx(od *o, snode_kind k, uint64_t i)
{
    return snode_index(o->a, k, i);
}

/* Adds child to parent; false when the child is missing (or on a bound),
 * which fails the production that wanted it. */
static bool add(od *o, snode *parent, snode *child)
{
    return snode_add(o->a, parent, child);
}

static snode *wrap(od *o, snode_kind k, snode *child)
{
    snode *n = mk(o, k);
    return add(o, n, child) ? n : NULL;
}

static snode *wrap2(od *o, snode_kind k, snode *c1, snode *c2)
{
    snode *n = wrap(o, k, c1);
    return add(o, n, c2) ? n : NULL;
}

static void add_subst(od *o, snode *nd)
{
    if (!nd)
        return;
    if (o->nsubs == o->capsubs) {
        if (o->nsubs >= SWIFT_MAX_SUBSTS) {
            o->a->failed = true;
            return;
        }
        uint32_t cap = o->capsubs ? o->capsubs * 2 : 32;
        snode **p = sarena_alloc(o->a, cap * sizeof *p);
        if (!p)
            return;
        if (o->nsubs)
            memcpy(p, o->subs, o->nsubs * sizeof *p);
        o->subs = p;
        o->capsubs = cap;
    }
    o->subs[o->nsubs++] = nd;
}

static snode *swift_type(od *o, snode_kind k, const char *name)
{
    return wrap2(o, k, mk_str(o, SK_Module, "Swift"), mk_str(o, SK_Identifier, name));
}

#define DEPTH_OK(depth) ((depth) <= SWIFT_MAX_DEPTH)

static snode *type_(od *o, int depth);
static snode *type_impl(od *o, int depth);
static snode *context(od *o, int depth);
static snode *entity(od *o, int depth);
static snode *protocol_name(od *o, int depth);
static snode *global(od *o, int depth);
static snode *generic_signature(od *o, int depth, bool pseudogeneric);

/* ---- identifiers ---- */

/* An identifier (possibly punycoded after 'X', possibly an operator after
 * 'o'). kind SK__COUNT: an identifier or operator; else that kind, and
 * operators are refused. */
static snode *identifier(od *o, int depth, snode_kind kind)
{
    (void)depth;
    if (empty(o))
        return NULL;
    bool puny = next_if(o, 'X');
    bool is_op = false;
    if (next_if(o, 'o')) {
        if (kind != SK__COUNT)
            return NULL;
        is_op = true;
        switch (next(o)) {
        case 'p': kind = SK_PrefixOperator; break;
        case 'P': kind = SK_PostfixOperator; break;
        case 'i': kind = SK_InfixOperator; break;
        default: return NULL;
        }
    }
    if (kind == SK__COUNT)
        kind = SK_Identifier;
    uint64_t len;
    if (!natural(o, &len) || len > o->n - o->pos)
        return NULL;
    const char *text = o->s + o->pos;
    size_t tlen = (size_t)len;
    o->pos += tlen;
    if (puny && !swift_punycode(o->a, text, tlen, &text, &tlen))
        return NULL;
    if (tlen == 0)
        return NULL;
    if (is_op) {
        static const char table[] = "& @/= >    <*!|+?%-~   ^ .";
        char *op = sarena_alloc(o->a, tlen);
        if (!op)
            return NULL;
        for (size_t i = 0; i < tlen; i++) {
            unsigned char c = (unsigned char)text[i];
            if (c >= 0x80) {
                op[i] = (char)c;
                continue;
            }
            if (!sw_lower((char)c) || table[c - 'a'] == ' ')
                return NULL;
            op[i] = table[c - 'a'];
        }
        text = op;
    }
    return snode_text(o->a, kind, text, tlen);
}

static snode *index_node(od *o, snode_kind k)
{
    uint64_t i;
    return index_(o, &i) ? mk_idx(o, k, i) : NULL;
}

/* decl-name ::= identifier | 'L' index identifier | 'P' discriminator identifier */
static snode *decl_name(od *o, int depth)
{
    if (next_if(o, 'L')) {
        snode *disc = index_node(o, SK_Number);
        snode *name = disc ? identifier(o, depth + 1, SK__COUNT) : NULL;
        return name ? wrap2(o, SK_LocalDeclName, disc, name) : NULL;
    }
    if (next_if(o, 'P')) {
        snode *disc = identifier(o, depth + 1, SK__COUNT);
        snode *name = disc ? identifier(o, depth + 1, SK__COUNT) : NULL;
        return name ? wrap2(o, SK_PrivateDeclName, disc, name) : NULL;
    }
    return identifier(o, depth + 1, SK__COUNT);
}

/* ---- substitutions and names ---- */

/* After 'S': a standard type, module, or an earlier substitution. */
static snode *substitution(od *o, int depth)
{
    static const struct {
        char code;
        snode_kind kind;
        const char *name;
    } table[] = {
        {'a', SK_Structure, "Array"},
        {'b', SK_Structure, "Bool"},
        {'c', SK_Structure, "UnicodeScalar"},
        {'d', SK_Structure, "Double"},
        {'f', SK_Structure, "Float"},
        {'i', SK_Structure, "Int"},
        {'V', SK_Structure, "UnsafeRawPointer"},
        {'v', SK_Structure, "UnsafeMutableRawPointer"},
        {'P', SK_Structure, "UnsafePointer"},
        {'p', SK_Structure, "UnsafeMutablePointer"},
        {'q', SK_Enum, "Optional"},
        {'Q', SK_Enum, "ImplicitlyUnwrappedOptional"},
        {'R', SK_Structure, "UnsafeBufferPointer"},
        {'r', SK_Structure, "UnsafeMutableBufferPointer"},
        {'S', SK_Structure, "String"},
        {'u', SK_Structure, "UInt"},
    };
    (void)depth;
    if (empty(o))
        return NULL;
    if (next_if(o, 'o'))
        return mk_str(o, SK_Module, "__C");
    if (next_if(o, 'C'))
        return mk_str(o, SK_Module, "__C_Synthesized");
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (next_if(o, table[i].code))
            return swift_type(o, table[i].kind, table[i].name);
    uint64_t i;
    if (!index_(o, &i) || i >= o->nsubs)
        return NULL;
    return o->subs[i];
}

static snode *module(od *o, int depth)
{
    if (next_if(o, 's'))
        return mk_str(o, SK_Module, "Swift");
    if (next_if(o, 'S')) {
        snode *m = substitution(o, depth + 1);
        return m && m->kind == SK_Module ? m : NULL;
    }
    snode *m = identifier(o, depth + 1, SK_Module);
    add_subst(o, m);
    return m;
}

static snode *declaration_name(od *o, snode_kind k, int depth)
{
    snode *ctx = context(o, depth + 1);
    snode *name = ctx ? decl_name(o, depth + 1) : NULL;
    snode *decl = name ? wrap2(o, k, ctx, name) : NULL;
    add_subst(o, decl);
    return decl;
}

static snode *protocol_given_context(od *o, snode *ctx, int depth)
{
    snode *name = decl_name(o, depth + 1);
    snode *proto = name ? wrap2(o, SK_Protocol, ctx, name) : NULL;
    add_subst(o, proto);
    return proto;
}

/* A substitution here may name the protocol or only its module. */
static snode *protocol_name_impl(od *o, int depth)
{
    if (!DEPTH_OK(depth))
        return NULL;
    if (next_if(o, 'S')) {
        snode *sub = substitution(o, depth + 1);
        if (!sub)
            return NULL;
        if (sub->kind == SK_Protocol)
            return sub;
        if (sub->kind != SK_Module)
            return NULL;
        return protocol_given_context(o, sub, depth + 1);
    }
    if (next_if(o, 's'))
        return protocol_given_context(o, mk_str(o, SK_Module, "Swift"), depth + 1);
    return declaration_name(o, SK_Protocol, depth + 1);
}

static snode *protocol_name(od *o, int depth)
{
    return wrap(o, SK_Type, protocol_name_impl(o, depth));
}

static snode *nominal_type(od *o, int depth)
{
    if (next_if(o, 'S'))
        return substitution(o, depth + 1);
    static const struct {
        char code;
        snode_kind kind;
    } kinds[] = {{'V', SK_Structure}, {'O', SK_Enum}, {'C', SK_Class}, {'P', SK_Protocol}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (next_if(o, kinds[i].code))
            return declaration_name(o, kinds[i].kind, depth + 1);
    return NULL;
}

/* Generic arguments for the outermost type come first, then inward. */
static snode *bound_generic_args(od *o, snode *nominal, int depth)
{
    if (!DEPTH_OK(depth) || nominal->n == 0)
        return NULL;
    snode *parent = nominal->kids[0];
    if (parent->kind != SK_Module && parent->kind != SK_Function && parent->kind != SK_Extension) {
        parent = bound_generic_args(o, parent, depth + 1);
        if (!parent)
            return NULL;
        snode *renewed = wrap(o, (snode_kind)nominal->kind, parent);
        for (uint32_t i = 1; renewed && i < nominal->n; i++)
            add(o, renewed, nominal->kids[i]);
        if (!renewed)
            return NULL;
        nominal = renewed;
    }
    snode *args = mk(o, SK_TypeList);
    if (!args)
        return NULL;
    while (!next_if(o, '_')) {
        if (!add(o, args, type_(o, depth + 1)) || empty(o))
            return NULL;
    }
    if (args->n == 0)
        return nominal;
    snode_kind k;
    switch (nominal->kind) {
    case SK_Class: k = SK_BoundGenericClass; break;
    case SK_Structure: k = SK_BoundGenericStructure; break;
    case SK_Enum: k = SK_BoundGenericEnum; break;
    default: return NULL;
    }
    return wrap2(o, k, wrap(o, SK_Type, nominal), args);
}

static snode *bound_generic_type(od *o, int depth)
{
    snode *nominal = nominal_type(o, depth + 1);
    return nominal ? bound_generic_args(o, nominal, depth + 1) : NULL;
}

static bool start_of_entity(char c)
{
    return strchr("FIvPsZCVO", c) != NULL;
}

/* context ::= module | entity | 'E' module context | 'e' module
 * generic-signature context */
static snode *context(od *o, int depth)
{
    if (empty(o) || !DEPTH_OK(depth))
        return NULL;
    if (next_if(o, 'E') || (peek(o) == 'e' && next_if(o, 'e'))) {
        bool constrained = o->s[o->pos - 1] == 'e';
        snode *ext = mk(o, SK_Extension);
        snode *def_module = module(o, depth + 1);
        if (!def_module)
            return NULL;
        snode *sig = NULL;
        if (constrained && !(sig = generic_signature(o, depth + 1, false)))
            return NULL;
        snode *type = context(o, depth + 1);
        if (!type || !add(o, ext, def_module) || !add(o, ext, type))
            return NULL;
        if (sig && !add(o, ext, sig))
            return NULL;
        return ext;
    }
    if (next_if(o, 'S'))
        return substitution(o, depth + 1);
    if (next_if(o, 's'))
        return mk_str(o, SK_Module, "Swift");
    if (next_if(o, 'G'))
        return bound_generic_type(o, depth + 1);
    if (start_of_entity(peek(o)))
        return entity(o, depth + 1);
    return module(o, depth + 1);
}

static snode *protocol_list(od *o, int depth)
{
    snode *list = mk(o, SK_TypeList);
    snode *protos = wrap(o, SK_ProtocolList, list);
    if (!protos)
        return NULL;
    while (!next_if(o, '_'))
        if (!add(o, list, protocol_name(o, depth + 1)))
            return NULL;
    return protos;
}

static snode *protocol_conformance(od *o, int depth)
{
    snode *type = type_(o, depth + 1);
    snode *proto = type ? protocol_name(o, depth + 1) : NULL;
    snode *ctx = proto ? context(o, depth + 1) : NULL;
    if (!ctx)
        return NULL;
    snode *conf = wrap2(o, SK_ProtocolConformance, type, proto);
    return add(o, conf, ctx) ? conf : NULL;
}

/* ---- entities ---- */

/* An accessor's storage: a variable, or a subscript when its name is
 * "subscript" (the new mangling's shape for both). */
static snode *accessor_storage(od *o, snode *ctx, snode *name, bool has_type, int depth)
{
    bool is_subscript = false;
    if (name->kind == SK_Identifier && snode_text_is(name, "subscript")) {
        is_subscript = true;
        name = NULL;
    } else if (name->kind == SK_PrivateDeclName && name->n > 1 &&
               snode_text_is(name->kids[1], "subscript")) {
        is_subscript = true;
        name = wrap(o, SK_PrivateDeclName, name->kids[0]);
        if (!name)
            return NULL;
    }
    snode *storage = wrap(o, is_subscript ? SK_Subscript : SK_Variable, ctx);
    if (!storage)
        return NULL;
    if (!is_subscript && !add(o, storage, name))
        return NULL;
    if (has_type && !add(o, storage, type_(o, depth + 1)))
        return NULL;
    if (is_subscript && name && !add(o, storage, name))
        return NULL;
    return storage;
}

static snode_kind addressor_kind(od *o, bool mutable_)
{
    switch (next(o)) {
    case 'O': return mutable_ ? SK_OwningMutableAddressor : SK_OwningAddressor;
    case 'o': return mutable_ ? SK_NativeOwningMutableAddressor : SK_NativeOwningAddressor;
    case 'p': return mutable_ ? SK_NativePinningMutableAddressor : SK_NativePinningAddressor;
    case 'u': return mutable_ ? SK_UnsafeMutableAddressor : SK_UnsafeAddressor;
    default: return SK__COUNT;
    }
}

/* entity ::= static? entity-kind context entity-name | nominal-type */
static snode *entity(od *o, int depth)
{
    if (!DEPTH_OK(depth))
        return NULL;
    bool is_static = next_if(o, 'Z');
    snode_kind basic;
    if (next_if(o, 'F'))
        basic = SK_Function;
    else if (next_if(o, 'v'))
        basic = SK_Variable;
    else if (next_if(o, 'I'))
        basic = SK_Initializer;
    else if (next_if(o, 'i'))
        basic = SK_Subscript;
    else
        return nominal_type(o, depth + 1);

    snode *ctx = context(o, depth + 1);
    if (!ctx)
        return NULL;
    /* Accessors of a named storage, each one letter. */
    static const struct {
        char code;
        snode_kind kind;
    } accessors[] = {
        {'g', SK_Getter}, {'G', SK_GlobalGetter}, {'s', SK_Setter}, {'m', SK_MaterializeForSet},
        {'w', SK_WillSet}, {'W', SK_DidSet}, {'r', SK_ReadAccessor}, {'M', SK_ModifyAccessor},
    };
    snode_kind k = SK__COUNT;
    bool has_type = true, wrap_storage = false;
    snode *name = NULL;
    char c = peek(o);
    if (c == 'D' || c == 'd' || c == 'e' || c == 'E' || c == 'Z') {
        next(o);
        k = c == 'D' ? SK_Deallocator : c == 'd' ? SK_Destructor : c == 'e' ? SK_IVarInitializer
            : c == 'E' ? SK_IVarDestroyer : SK_IsolatedDeallocator;
        has_type = false;
    } else if (next_if(o, 'C')) {
        k = SK_Allocator;
    } else if (next_if(o, 'c')) {
        k = SK_Constructor;
    } else if (c == 'a' || c == 'l') {
        next(o);
        wrap_storage = true;
        k = addressor_kind(o, c == 'a');
        if (k == SK__COUNT || !(name = decl_name(o, depth + 1)))
            return NULL;
    } else if (next_if(o, 'U') || (peek(o) == 'u' && next_if(o, 'u'))) {
        k = o->s[o->pos - 1] == 'U' ? SK_ExplicitClosure : SK_ImplicitClosure;
        if (!(name = index_node(o, SK_Number)))
            return NULL;
    } else {
        for (size_t i = 0; i < sizeof accessors / sizeof accessors[0]; i++) {
            if (next_if(o, accessors[i].code)) {
                k = accessors[i].kind;
                wrap_storage = true;
                if (!(name = decl_name(o, depth + 1)))
                    return NULL;
                break;
            }
        }
        if (k == SK__COUNT && basic == SK_Initializer) {
            if (next_if(o, 'A')) { /* default argument #index */
                k = SK_DefaultArgumentInitializer;
                if (!(name = index_node(o, SK_Number)))
                    return NULL;
            } else if (next_if(o, 'i')) {
                k = SK_Initializer;
            } else {
                return NULL;
            }
            has_type = false;
        } else if (k == SK__COUNT) {
            k = basic;
            if (!(name = decl_name(o, depth + 1)))
                return NULL;
        }
    }
    snode *ent = mk(o, k);
    if (!ent)
        return NULL;
    if (wrap_storage) {
        if (!add(o, ent, accessor_storage(o, ctx, name, has_type, depth)))
            return NULL;
    } else {
        if (!add(o, ent, ctx) || (name && !add(o, ent, name)))
            return NULL;
        if (has_type && !add(o, ent, type_(o, depth + 1)))
            return NULL;
    }
    return is_static ? wrap(o, SK_Static, ent) : ent;
}

/* ---- generics ---- */

static snode *generic_param(uint64_t depth, uint64_t index, od *o)
{
    return wrap2(o, SK_DependentGenericParamType, mk_idx(o, SK_Index, depth),
                 mk_idx(o, SK_Index, index));
}

static snode *generic_param_index(od *o, int depth)
{
    (void)depth;
    uint64_t pdepth, index;
    if (next_if(o, 'd')) {
        if (!index_(o, &pdepth) || !index_(o, &index))
            return NULL;
        pdepth += 1;
    } else if (next_if(o, 'x')) {
        pdepth = 0;
        index = 0;
    } else {
        if (!index_(o, &index))
            return NULL;
        pdepth = 0;
        index += 1;
    }
    return generic_param(pdepth, index, o);
}

static snode *dependent_member_type_name(od *o, snode *base, int depth)
{
    snode *assoc;
    if (next_if(o, 'S')) {
        assoc = substitution(o, depth + 1);
        if (!assoc || assoc->kind != SK_DependentAssociatedTypeRef)
            return NULL;
    } else {
        snode *proto = NULL;
        if (next_if(o, 'P') && !(proto = protocol_name(o, depth + 1)))
            return NULL;
        snode *id = identifier(o, depth + 1, SK__COUNT);
        assoc = wrap(o, SK_DependentAssociatedTypeRef, id);
        if (!assoc || (proto && !add(o, assoc, proto)))
            return NULL;
        add_subst(o, assoc);
    }
    return wrap2(o, SK_DependentMemberType, base, assoc);
}

static snode *assoc_type_simple(od *o, int depth)
{
    snode *base = wrap(o, SK_Type, generic_param_index(o, depth + 1));
    return base ? dependent_member_type_name(o, base, depth + 1) : NULL;
}

static snode *assoc_type_compound(od *o, int depth)
{
    snode *base = generic_param_index(o, depth + 1);
    while (base && !next_if(o, '_'))
        base = dependent_member_type_name(o, wrap(o, SK_Type, base), depth + 1);
    return base;
}

static snode *dependent_type(od *o, int depth)
{
    if (empty(o))
        return NULL;
    char c = peek(o);
    if (c != 'd' && c != '_' && !sw_digit(c)) {
        snode *base = type_(o, depth + 1);
        return base ? dependent_member_type_name(o, base, depth + 1) : NULL;
    }
    return generic_param_index(o, depth + 1);
}

static snode *constrained_type(od *o, int depth)
{
    snode *t = next_if(o, 'w')   ? assoc_type_simple(o, depth + 1)
               : next_if(o, 'W') ? assoc_type_compound(o, depth + 1)
                                 : generic_param_index(o, depth + 1);
    return wrap(o, SK_Type, t);
}

static snode *layout_requirement(od *o, snode *constrained, int depth)
{
    uint64_t size = 0, align = 0;
    bool has_size = false, has_align = false;
    char c = next(o);
    switch (c) {
    case 'U': case 'R': case 'N': case 'T':
        break;
    case 'E': case 'M':
        if (!natural(o, &size) || !next_if(o, '_') || !natural(o, &align))
            return NULL;
        has_size = has_align = true;
        break;
    case 'e': case 'm':
        if (!natural(o, &size))
            return NULL;
        has_size = true;
        break;
    default:
        return NULL;
    }
    (void)depth;
    snode *name = snode_text(o->a, SK_Identifier, sarena_dup(o->a, &c, 1), 1);
    snode *req = wrap2(o, SK_DependentGenericLayoutRequirement, constrained, name);
    if (req && has_size && !add(o, req, mk_idx(o, SK_Number, size)))
        return NULL;
    if (req && has_align && !add(o, req, mk_idx(o, SK_Number, align)))
        return NULL;
    return req;
}

static snode *generic_requirement(od *o, int depth)
{
    snode *constrained = constrained_type(o, depth + 1);
    if (!constrained)
        return NULL;
    if (next_if(o, 'z'))
        return wrap2(o, SK_DependentGenericSameTypeRequirement, constrained, type_(o, depth + 1));
    if (next_if(o, 'l'))
        return layout_requirement(o, constrained, depth + 1);
    if (empty(o))
        return NULL;
    snode *constraint;
    char c = peek(o);
    if (c == 'C') {
        constraint = type_(o, depth + 1);
    } else if (c == 'S') {
        /* A substitution names a protocol, a class, or a protocol's module. */
        next(o);
        snode *sub = substitution(o, depth + 1);
        if (!sub)
            return NULL;
        if (sub->kind == SK_Module)
            sub = protocol_given_context(o, sub, depth + 1);
        else if (sub->kind != SK_Protocol && sub->kind != SK_Class)
            return NULL;
        constraint = wrap(o, SK_Type, sub);
    } else {
        constraint = protocol_name(o, depth + 1);
    }
    return wrap2(o, SK_DependentGenericConformanceRequirement, constrained, constraint);
}

static snode *generic_signature(od *o, int depth, bool pseudogeneric)
{
    snode *sig =
        mk(o, pseudogeneric ? SK_DependentPseudogenericSignature : SK_DependentGenericSignature);
    if (!sig || !DEPTH_OK(depth))
        return NULL;
    /* Parameter counts per depth; none written means one parameter. */
    bool any = false;
    while (peek(o) != 'R' && peek(o) != 'r') {
        uint64_t count;
        if (next_if(o, 'z'))
            count = 0;
        else if (index_(o, &count))
            count += 1;
        else
            return NULL;
        if (!add(o, sig, mk_idx(o, SK_DependentGenericParamCount, count)))
            return NULL;
        any = true;
    }
    if (!any && !add(o, sig, mk_idx(o, SK_DependentGenericParamCount, 1)))
        return NULL;
    if (next_if(o, 'r'))
        return sig;
    if (!next_if(o, 'R'))
        return NULL;
    while (!next_if(o, 'r'))
        if (!add(o, sig, generic_requirement(o, depth + 1)))
            return NULL;
    return sig;
}

/* ---- types ---- */

static snode *archetype(od *o, int depth)
{
    if (!DEPTH_OK(depth))
        return NULL;
    snode *root;
    if (next_if(o, 'Q'))
        root = archetype(o, depth + 1);
    else if (next_if(o, 'S'))
        root = substitution(o, depth + 1);
    else if (next_if(o, 's'))
        root = mk_str(o, SK_Module, "Swift");
    else
        return NULL;
    if (!root)
        return NULL;
    snode *name = identifier(o, depth + 1, SK__COUNT);
    snode *assoc = wrap2(o, SK_AssociatedTypeRef, root, name);
    add_subst(o, assoc);
    return assoc;
}

static snode *tuple(od *o, bool variadic, int depth)
{
    snode *t = mk(o, SK_Tuple), *elt = NULL;
    if (!t)
        return NULL;
    while (!next_if(o, '_')) {
        if (empty(o))
            return NULL;
        elt = mk(o, SK_TupleElement);
        char c = peek(o);
        if (sw_digit(c) || c == 'o') {
            if (!add(o, elt, identifier(o, depth + 1, SK_TupleElementName)))
                return NULL;
        }
        if (!add(o, elt, type_(o, depth + 1)) || !add(o, t, elt))
            return NULL;
    }
    if (variadic && elt) { /* the variadic marker goes first */
        snode_reverse(elt, 0);
        if (!add(o, elt, mk(o, SK_VariadicMarker)))
            return NULL;
        snode_reverse(elt, 0);
    }
    return t;
}

static snode *function_type(od *o, snode_kind k, int depth)
{
    bool throws = false, concurrent = false, async = false;
    char diff = 0;
    snode *actor = NULL;
    if (!empty(o)) {
        throws = next_if(o, 'z');
        concurrent = next_if(o, 'y');
        async = next_if(o, 'Z');
        if (next_if(o, 'D')) {
            char c = next(o);
            if (c == 'f' || c == 'r' || c == 'd' || c == 'l')
                diff = c;
        }
        if (next_if(o, 'Y') && !(actor = type_(o, depth + 1)))
            return NULL;
    }
    snode *in = type_(o, depth + 1);
    snode *out = in ? type_(o, depth + 1) : NULL;
    if (!out)
        return NULL;
    snode *f = mk(o, k);
    if (throws)
        add(o, f, mk(o, SK_ThrowsAnnotation));
    if (async)
        add(o, f, mk(o, SK_AsyncAnnotation));
    if (concurrent)
        add(o, f, mk(o, SK_ConcurrentFunctionType));
    if (diff)
        add(o, f, mk_idx(o, SK_DifferentiableFunctionType, (uint64_t)diff));
    if (actor)
        add(o, f, wrap(o, SK_GlobalActorFunctionType, actor));
    if (!add(o, f, wrap(o, SK_ArgumentTuple, in)) || !add(o, f, wrap(o, SK_ReturnType, out)))
        return NULL;
    return f;
}

/* ---- SIL function types ("XF") ---- */

enum conv_ctx { CONV_CALLEE, CONV_PARAM, CONV_RESULT };

/* A convention letter read in one of three places; NULL when the letter
 * means nothing there. */
static const char *impl_convention(od *o, enum conv_ctx ctx)
{
    static const struct {
        char code;
        const char *as[3]; /* callee, parameter, result */
    } table[] = {
        {'a', {NULL, NULL, "@autoreleased"}},
        {'d', {"@callee_unowned", "@unowned", "@unowned"}},
        {'D', {NULL, NULL, "@unowned_inner_pointer"}},
        {'g', {"@callee_guaranteed", "@guaranteed", NULL}},
        {'e', {NULL, "@deallocating", NULL}},
        {'i', {NULL, "@in", "@out"}},
        {'l', {NULL, "@inout", NULL}},
        {'o', {"@callee_owned", "@owned", "@owned"}},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (next_if(o, table[i].code))
            return table[i].as[ctx];
    return NULL;
}

static snode *impl_param_or_result(od *o, snode_kind k, int depth)
{
    if (next_if(o, 'z')) { /* the error result */
        if (k != SK_ImplResult)
            return NULL;
        k = SK_ImplErrorResult;
    }
    const char *conv = impl_convention(o, k == SK_ImplParameter ? CONV_PARAM : CONV_RESULT);
    if (!conv)
        return NULL;
    snode *type = type_(o, depth + 1);
    return type ? wrap2(o, k, mk_str(o, SK_ImplConvention, conv), type) : NULL;
}

static snode *impl_function_type(od *o, int depth)
{
    snode *type = mk(o, SK_ImplFunctionType);
    const char *callee = next_if(o, 't') ? "@convention(thin)" : impl_convention(o, CONV_CALLEE);
    if (!type || !callee || !add(o, type, mk_str(o, SK_ImplConvention, callee)))
        return NULL;
    if (next_if(o, 'C')) {
        static const struct {
            char code;
            const char *name;
        } convs[] = {{'b', "block"},
                     {'c', "c"},
                     {'m', "method"},
                     {'O', "objc_method"},
                     {'w', "witness_method"}};
        const char *conv = NULL;
        for (size_t i = 0; i < sizeof convs / sizeof convs[0] && !conv; i++)
            if (next_if(o, convs[i].code))
                conv = convs[i].name;
        if (!conv || !add(o, type, wrap(o, SK_ImplFunctionConvention,
                                        mk_str(o, SK_ImplFunctionConventionName, conv))))
            return NULL;
    }
    if (next_if(o, 'h'))
        add(o, type, mk_str(o, SK_ImplFunctionAttribute, "@Sendable"));
    if (next_if(o, 'H'))
        add(o, type, mk_str(o, SK_ImplFunctionAttribute, "@async"));
    bool pseudo = false;
    if (next_if(o, 'G') || (pseudo = next_if(o, 'g')))
        if (!add(o, type, generic_signature(o, depth + 1, pseudo)))
            return NULL;
    if (!next_if(o, '_'))
        return NULL;
    while (!next_if(o, '_'))
        if (!add(o, type, impl_param_or_result(o, SK_ImplParameter, depth + 1)))
            return NULL;
    while (!next_if(o, '_'))
        if (!add(o, type, impl_param_or_result(o, SK_ImplResult, depth + 1)))
            return NULL;
    return type;
}

static snode *metatype_representation(od *o)
{
    if (next_if(o, 't'))
        return mk_str(o, SK_MetatypeRepresentation, "@thin");
    if (next_if(o, 'T'))
        return mk_str(o, SK_MetatypeRepresentation, "@thick");
    if (next_if(o, 'o'))
        return mk_str(o, SK_MetatypeRepresentation, "@objc_metatype");
    return NULL;
}

static snode *builtin_type(od *o, int depth)
{
    static const struct {
        char code;
        const char *name;
    } simple[] = {
        {'b', "Builtin.BridgeObject"}, {'B', "Builtin.UnsafeValueBuffer"},
        {'O', "Builtin.UnknownObject"}, {'o', "Builtin.NativeObject"},
        {'p', "Builtin.RawPointer"}, {'t', "Builtin.SILToken"}, {'w', "Builtin.Word"},
    };
    if (empty(o))
        return NULL;
    char c = next(o);
    char buf[96];
    int len = 0;
    uint64_t size, elts;
    if ((c == 'f' || c == 'i') && natural(o, &size) && next_if(o, '_')) {
        len = snprintf(buf, sizeof buf, "Builtin.%s%llu", c == 'f' ? "FPIEEE" : "Int",
                       (unsigned long long)size);
    } else if (c == 'v' && natural(o, &elts)) {
        if (!next_if(o, 'B'))
            return NULL;
        if (next_if(o, 'i') || (peek(o) == 'f' && next_if(o, 'f'))) {
            bool is_int = o->s[o->pos - 1] == 'i';
            if (!natural(o, &size) || !next_if(o, '_'))
                return NULL;
            len = snprintf(buf, sizeof buf, "Builtin.Vec%llux%s%llu", (unsigned long long)elts,
                           is_int ? "Int" : "FPIEEE", (unsigned long long)size);
        } else if (next_if(o, 'p')) {
            len = snprintf(buf, sizeof buf, "Builtin.Vec%lluxRawPointer", (unsigned long long)elts);
        }
    }
    (void)depth;
    if (len > 0 && (size_t)len < sizeof buf)
        return snode_text(o->a, SK_BuiltinTypeName, sarena_dup(o->a, buf, (size_t)len),
                          (size_t)len);
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (simple[i].code == c)
            return mk_str(o, SK_BuiltinTypeName, simple[i].name);
    return NULL;
}

static snode *sil_box_type(od *o, int depth)
{
    snode *sig = NULL;
    if (next_if(o, 'G') && !(sig = generic_signature(o, depth, false)))
        return NULL;
    snode *layout = mk(o, SK_SILBoxLayout);
    if (!layout)
        return NULL;
    while (!next_if(o, '_')) {
        snode_kind k;
        if (next_if(o, 'm'))
            k = SK_SILBoxMutableField;
        else if (next_if(o, 'i'))
            k = SK_SILBoxImmutableField;
        else
            return NULL;
        if (!add(o, layout, wrap(o, k, type_(o, depth + 1))))
            return NULL;
    }
    snode *args = NULL;
    if (sig) {
        args = mk(o, SK_TypeList);
        while (!next_if(o, '_'))
            if (!add(o, args, type_(o, depth + 1)))
                return NULL;
    }
    snode *box = wrap(o, SK_SILBoxTypeWithLayout, layout);
    if (sig && (!add(o, box, sig) || !add(o, box, args)))
        return NULL;
    return box;
}

/* 'X' and a letter. */
static snode *special_type(od *o, int depth)
{
    static const struct {
        char code;
        snode_kind kind;
    } wrapped[] = {{'o', SK_Unowned}, {'u', SK_Unmanaged}, {'w', SK_Weak}, {'b', SK_SILBoxType}};
    for (size_t i = 0; i < sizeof wrapped / sizeof wrapped[0]; i++)
        if (next_if(o, wrapped[i].code))
            return wrap(o, wrapped[i].kind, type_(o, depth + 1));
    if (next_if(o, 'B'))
        return sil_box_type(o, depth);
    if (next_if(o, 'M')) {
        snode *repr = metatype_representation(o);
        return repr ? wrap2(o, SK_Metatype, repr, type_(o, depth + 1)) : NULL;
    }
    if (next_if(o, 'P')) {
        if (next_if(o, 'M')) {
            snode *repr = metatype_representation(o);
            return repr ? wrap2(o, SK_ExistentialMetatype, repr, type_(o, depth + 1)) : NULL;
        }
        return protocol_list(o, depth + 1);
    }
    if (next_if(o, 'f'))
        return function_type(o, SK_ThinFunctionType, depth + 1);
    if (next_if(o, 'F'))
        return impl_function_type(o, depth + 1);
    return NULL;
}

static snode *type_impl(od *o, int depth)
{
    if (!DEPTH_OK(depth) || empty(o))
        return NULL;
    char c = next(o);
    switch (c) {
    case 'B': return builtin_type(o, depth);
    case 'a': return declaration_name(o, SK_TypeAlias, depth + 1);
    case 'b': return function_type(o, SK_ObjCBlock, depth + 1);
    case 'c': return function_type(o, SK_CFunctionPointer, depth + 1);
    case 'D': return wrap(o, SK_DynamicSelf, type_(o, depth + 1));
    case 'E':
        if (!next_if(o, 'R') || !next_if(o, 'R'))
            return NULL;
        return mk(o, SK_ErrorType);
    case 'F': return function_type(o, SK_FunctionType, depth + 1);
    case 'f': return function_type(o, SK_UncurriedFunctionType, depth + 1);
    case 'G': return bound_generic_type(o, depth + 1);
    case 'X': return special_type(o, depth);
    case 'K': return function_type(o, SK_AutoClosureType, depth + 1);
    case 'M': return wrap(o, SK_Metatype, type_(o, depth + 1));
    case 'P':
        if (next_if(o, 'M'))
            return wrap(o, SK_ExistentialMetatype, type_(o, depth + 1));
        return protocol_list(o, depth + 1);
    case 'Q':
        if (next_if(o, 'u'))
            return mk(o, SK_OpaqueReturnType);
        if (next_if(o, 'U')) {
            uint64_t ordinal;
            if (!index_(o, &ordinal))
                return NULL;
            return wrap(o, SK_OpaqueReturnType, mk_idx(o, SK_OpaqueReturnTypeIndex, ordinal));
        }
        return archetype(o, depth + 1);
    case 'q': return dependent_type(o, depth + 1);
    case 'x': return generic_param(0, 0, o);
    case 'w': return assoc_type_simple(o, depth + 1);
    case 'W': return assoc_type_compound(o, depth + 1);
    case 'R': return wrap(o, SK_InOut, type_impl(o, depth + 1));
    case 'k': return wrap(o, SK_NoDerivative, type_impl(o, depth + 1));
    case 'S': return substitution(o, depth + 1);
    case 'T': return tuple(o, false, depth + 1);
    case 't': return tuple(o, true, depth + 1);
    case 'u': {
        snode *sig = generic_signature(o, depth + 1, false);
        snode *sub = sig ? type_(o, depth + 1) : NULL;
        return sub ? wrap2(o, SK_DependentGenericType, sig, sub) : NULL;
    }
    case 'C': return declaration_name(o, SK_Class, depth + 1);
    case 'V': return declaration_name(o, SK_Structure, depth + 1);
    case 'O': return declaration_name(o, SK_Enum, depth + 1);
    default: return NULL;
    }
}

static snode *type_(od *o, int depth)
{
    return wrap(o, SK_Type, type_impl(o, depth));
}

/* ---- specializations ("_TTS") ---- */

static snode *generic_specialization_args(od *o, snode *spec, int depth)
{
    if (!DEPTH_OK(depth))
        return NULL;
    while (!next_if(o, '_')) {
        snode *param = wrap(o, SK_GenericSpecializationParam, type_(o, depth + 1));
        if (!param)
            return NULL;
        while (!next_if(o, '_'))
            if (!add(o, param, protocol_conformance(o, depth + 1)))
                return NULL;
        if (!add(o, spec, param))
            return NULL;
    }
    return spec;
}

static snode *param_kind(od *o, unsigned kind)
{
    return mk_idx(o, SK_FunctionSignatureSpecializationParamKind, kind);
}

static snode *payload(od *o, const char *p, size_t n)
{
    return snode_text(o->a, SK_FunctionSignatureSpecializationParamPayload, p, n);
}

/* Up to the next '_' (which must be there): Swift's readUntil. */
static bool read_until_underscore(od *o, const char **p, size_t *n)
{
    size_t start = o->pos;
    while (!empty(o) && o->s[o->pos] != '_')
        o->pos++;
    *p = o->s + start;
    *n = o->pos - start;
    return !empty(o) && next_if(o, '_');
}

static bool constant_prop(od *o, snode *param, int depth)
{
    const char *p;
    size_t n;
    if (next_if_str(o, "fr") || next_if(o, 'g')) {
        bool function = o->s[o->pos - 1] == 'r';
        snode *name = identifier(o, depth + 1, SK__COUNT);
        if (!name || !next_if(o, '_'))
            return false;
        return add(o, param, param_kind(o, function ? 0 : 1)) &&
               add(o, param, payload(o, name->v.text.p, name->v.text.len));
    }
    if (next_if(o, 'i') || next_if_str(o, "fl")) {
        bool integer = o->s[o->pos - 1] == 'i';
        if (!read_until_underscore(o, &p, &n))
            return false;
        return add(o, param, param_kind(o, integer ? 2 : 3)) && add(o, param, payload(o, p, n));
    }
    if (next_if(o, 's')) {
        /* 'e' encoding 'v' string: encoding is 0 (UTF-8) or 1 (UTF-16). */
        if (!next_if(o, 'e'))
            return false;
        char enc = peek(o);
        if (enc != '0' && enc != '1')
            return false;
        next(o);
        if (!next_if(o, 'v'))
            return false;
        snode *str = identifier(o, depth + 1, SK__COUNT);
        if (!str || !next_if(o, '_'))
            return false;
        return add(o, param, param_kind(o, 4)) &&
               add(o, param, payload(o, enc == '0' ? "u8" : "u16", enc == '0' ? 2 : 3)) &&
               add(o, param, payload(o, str->v.text.p, str->v.text.len));
    }
    return false;
}

static bool closure_prop(od *o, snode *param, int depth)
{
    snode *name = identifier(o, depth + 1, SK__COUNT);
    if (!name || !add(o, param, param_kind(o, 5)) ||
        !add(o, param, payload(o, name->v.text.p, name->v.text.len)))
        return false;
    /* Then types, until one fails. */
    snode *type;
    while (peek(o) != '_' && (type = type_(o, depth + 1)))
        if (!add(o, param, type))
            return false;
    return next_if(o, '_');
}

static snode *function_signature_specialization(od *o, snode *spec, int depth)
{
    while (!next_if(o, '_')) {
        snode *param = mk(o, SK_FunctionSignatureSpecializationParam);
        if (!param)
            return NULL;
        if (next_if_str(o, "n_")) {
            /* unchanged */
        } else if (next_if_str(o, "cp")) {
            if (!constant_prop(o, param, depth + 1))
                return NULL;
        } else if (next_if_str(o, "cl")) {
            if (!closure_prop(o, param, depth + 1))
                return NULL;
        } else if (next_if_str(o, "i_") || next_if_str(o, "k_") || next_if_str(o, "r_")) {
            char c = o->s[o->pos - 2];
            if (!add(o, param, param_kind(o, c == 'i' ? 6 : c == 'k' ? 7 : 8)))
                return NULL;
        } else { /* an option set */
            unsigned value = 0;
            if (next_if(o, 'd'))
                value |= 1u << 6;
            if (next_if(o, 'g'))
                value |= 1u << 7;
            if (next_if(o, 'o'))
                value |= 1u << 9;
            if (next_if(o, 's'))
                value |= 1u << 8;
            if (!next_if(o, '_') || !value || !add(o, param, param_kind(o, value)))
                return NULL;
        }
        if (!add(o, spec, param))
            return NULL;
    }
    return spec;
}

static snode *specialized_attribute(od *o, int depth)
{
    bool function = false;
    snode_kind k;
    if (next_if(o, 'g'))
        k = SK_GenericSpecialization;
    else if (next_if(o, 'r'))
        k = SK_GenericSpecializationNotReAbstracted;
    else if (next_if(o, 'f'))
        k = SK_FunctionSignatureSpecialization, function = true;
    else
        return NULL;
    snode *spec = mk(o, k);
    if (!spec)
        return NULL;
    if (next_if(o, 'q'))
        add(o, spec, mk(o, SK_IsSerialized));
    /* The pass id, taken unchecked as Swift takes it. */
    add(o, spec, mk_idx(o, SK_SpecializationPassID, (uint64_t)(unsigned)(next(o) - 48)));
    return function ? function_signature_specialization(o, spec, depth + 1)
                    : generic_specialization_args(o, spec, depth + 1);
}

/* ---- globals ---- */

static snode *global_metadata(od *o, int depth)
{
    static const struct {
        char code;
        snode_kind kind;
    } table[] = {
        {'P', SK_GenericTypeMetadataPattern}, {'a', SK_TypeMetadataAccessFunction},
        {'L', SK_TypeMetadataLazyCache}, {'m', SK_Metaclass}, {'n', SK_NominalTypeDescriptor},
        {'f', SK_FullTypeMetadata},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (next_if(o, table[i].code))
            return wrap(o, table[i].kind, type_(o, depth + 1));
    if (next_if(o, 'p'))
        return wrap(o, SK_ProtocolDescriptor, protocol_name(o, depth + 1));
    return wrap(o, SK_TypeMetadata, type_(o, depth + 1));
}

static snode *global_witness(od *o, int depth)
{
    static const struct {
        char code;
        snode_kind kind;
    } conformances[] = {
        {'P', SK_ProtocolWitnessTable}, {'G', SK_GenericProtocolWitnessTable},
        {'I', SK_GenericProtocolWitnessTableInstantiationFunction},
        {'a', SK_ProtocolWitnessTableAccessor},
    };
    if (next_if(o, 'V'))
        return wrap(o, SK_ValueWitnessTable, type_(o, depth + 1));
    if (next_if(o, 'v')) {
        char c = peek(o);
        if (c != 'd' && c != 'i')
            return NULL;
        next(o);
        snode *dir = mk_idx(o, SK_Directness, c == 'd' ? 0 : 1);
        return wrap2(o, SK_FieldOffset, dir, entity(o, depth + 1));
    }
    for (size_t i = 0; i < sizeof conformances / sizeof conformances[0]; i++)
        if (next_if(o, conformances[i].code))
            return wrap(o, conformances[i].kind, protocol_conformance(o, depth + 1));
    if (next_if(o, 'l') || (peek(o) == 'L' && next_if(o, 'L'))) {
        snode_kind k = o->s[o->pos - 1] == 'l' ? SK_LazyProtocolWitnessTableAccessor
                                               : SK_LazyProtocolWitnessTableCacheVariable;
        snode *type = type_(o, depth + 1);
        return type ? wrap2(o, k, type, protocol_conformance(o, depth + 1)) : NULL;
    }
    if (next_if(o, 't')) {
        snode *conf = protocol_conformance(o, depth + 1);
        return conf ? wrap2(o, SK_AssociatedTypeMetadataAccessor, conf, decl_name(o, depth + 1))
                    : NULL;
    }
    if (next_if(o, 'T')) {
        snode *conf = protocol_conformance(o, depth + 1);
        snode *name = conf ? decl_name(o, depth + 1) : NULL;
        snode *acc = name ? wrap2(o, SK_AssociatedTypeWitnessTableAccessor, conf, name) : NULL;
        return acc && add(o, acc, protocol_name(o, depth + 1)) ? acc : NULL;
    }
    return NULL;
}

static snode *value_witness(od *o, int depth)
{
    static const char codes[][3] = {
        "al", "ca", "ta", "de", "xx", "XX", "Xx", "CP", "Cp", "cp", "Tk", "tk",
        "pr", "TK", "Cc", "Tt", "tT", "xs", "xg", "ug", "up", "ui", "et", "st",
    };
    if (empty(o))
        return NULL;
    char c0 = next(o);
    if (empty(o))
        return NULL;
    char c1 = next(o);
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (codes[i][0] == c0 && codes[i][1] == c1)
            return wrap2(o, SK_ValueWitness, mk_idx(o, SK_Index, i), type_(o, depth + 1));
    return NULL;
}

static snode *reabstraction_signature(od *o, snode *thunk, int depth)
{
    if (next_if(o, 'G') && !add(o, thunk, generic_signature(o, depth + 1, false)))
        return NULL;
    if (!add(o, thunk, type_(o, depth + 1)) || !add(o, thunk, type_(o, depth + 1)))
        return NULL;
    return thunk;
}

static snode *global(od *o, int depth)
{
    if (!DEPTH_OK(depth) || empty(o))
        return NULL;
    if (next_if(o, 'M'))
        return global_metadata(o, depth);
    if (next_if_str(o, "PA")) { /* partial application forwarder */
        snode *fwd =
            mk(o, next_if(o, 'o') ? SK_PartialApplyObjCForwarder : SK_PartialApplyForwarder);
        if (next_if_str(o, "__T") && !add(o, fwd, global(o, depth + 1)))
            return NULL;
        return fwd;
    }
    if (next_if(o, 't'))
        return wrap(o, SK_TypeMangling, type_(o, depth + 1));
    if (next_if(o, 'w'))
        return value_witness(o, depth);
    if (next_if(o, 'W'))
        return global_witness(o, depth);
    if (next_if(o, 'T')) {
        if (next_if(o, 'R') || (peek(o) == 'r' && next_if(o, 'r')))
            return reabstraction_signature(o,
                                           mk(o, o->s[o->pos - 1] == 'R'
                                                     ? SK_ReabstractionThunkHelper
                                                     : SK_ReabstractionThunk),
                                           depth);
        if (next_if(o, 'W')) {
            snode *conf = protocol_conformance(o, depth + 1);
            /* The entity is mangled in its own generic context. */
            return conf ? wrap2(o, SK_ProtocolWitness, conf, entity(o, depth + 1)) : NULL;
        }
        return NULL;
    }
    return entity(o, depth + 1);
}

snode *swift_parse_old(sarena *a, const char *s, size_t n)
{
    od o = {.a = a, .s = s, .n = n};
    if (!next_if_str(&o, "_T"))
        return NULL;
    snode *top = mk(&o, SK_Global);
    if (!top)
        return NULL;
    if (next_if_str(&o, "TS")) {
        do {
            if (!add(&o, top, specialized_attribute(&o, 0)))
                return NULL;
            /* The specialization header does not share substitutions with
             * the rest of the name. */
            o.nsubs = 0;
        } while (next_if_str(&o, "_TTS"));
        if (!next_if_str(&o, "_T"))
            return NULL;
    } else {
        static const struct {
            const char *code;
            snode_kind kind;
        } attrs[] = {
            {"To", SK_ObjCAttribute}, {"TO", SK_NonObjCAttribute}, {"TD", SK_DynamicAttribute},
            {"Td", SK_DirectMethodReferenceAttribute}, {"TV", SK_VTableAttribute},
        };
        for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
            if (next_if_str(&o, attrs[i].code)) {
                add(&o, top, mk(&o, attrs[i].kind));
                break;
            }
        }
    }
    if (!add(&o, top, global(&o, 0)))
        return NULL;
    /* Anything left over is an unmangled suffix. */
    if (!empty(&o) && !add(&o, top, snode_text(a, SK_Suffix, o.s + o.pos, o.n - o.pos)))
        return NULL;
    return a->failed ? NULL : top;
}

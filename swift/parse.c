/* The Swift 4+ mangling ("$s", "$S", "_T0", "$e", "@__swiftmacro_") read into
 * a node tree. The mangling is postfix: each operator pops its operands off
 * a node stack and pushes its result, as Swift's Demangler.cpp does; the
 * trees built here have the shapes of Swift's so that the printer can follow
 * Swift's NodePrinter. Every read is bounds-checked; nothing recurses
 * without a depth count. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "../util/metered.h" /* last: counts this file's allocations */

typedef struct {
    const char *p;
    uint32_t len;
} sw_slice;

typedef struct {
    sarena *a;
    const char *s;
    size_t n, pos;
    snode **stk; /* the node stack */
    uint32_t nstk, capstk;
    snode **subs; /* substitutions, referred to by 'A' */
    uint32_t nsubs, capsubs;
    sw_slice words[26]; /* words of identifiers, referred to by '0' */
    int nwords;
    bool old_labels;
    int nest;
    int depth; /* of the few recursive productions */
} dm;

/* ---- reading ---- */

/* Swift's reader: at the end next() returns 0 without advancing, and
 * push_back() steps back regardless; a few productions rely on that. */
static char peek(const dm *d)
{
    return d->pos < d->n ? d->s[d->pos] : 0;
}

static char next(dm *d)
{
    return d->pos < d->n ? d->s[d->pos++] : 0;
}

static bool next_if(dm *d, char c)
{
    if (d->pos < d->n && d->s[d->pos] == c) {
        d->pos++;
        return true;
    }
    return false;
}

static bool next_if_str(dm *d, const char *str)
{
    size_t len = strlen(str);
    if (d->n - d->pos >= len && memcmp(d->s + d->pos, str, len) == 0) {
        d->pos += len;
        return true;
    }
    return false;
}

static void push_back(dm *d)
{
    if (d->pos > 0)
        d->pos--;
}

/* A decimal number; -1000 when there is none or it overflows an int, as
 * Swift's demangleNatural (whose overflow check only catches a result below
 * the previous value; it is reproduced, wrap-around included). */
static int natural(dm *d)
{
    if (!sw_digit(peek(d)))
        return -1000;
    int num = 0;
    while (sw_digit(peek(d))) {
        int n2 = (int)((unsigned)num * 10u + (unsigned)(peek(d) - '0'));
        if (n2 < num)
            return -1000;
        num = n2;
        d->pos++;
    }
    return num;
}

/* '_' is 0, N '_' is N+1; negative when malformed. */
static int index_(dm *d)
{
    if (next_if(d, '_'))
        return 0;
    int num = natural(d);
    if (num >= 0 && next_if(d, '_'))
        return (int)((unsigned)num + 1u);
    return -1000;
}

/* ---- nodes ---- */

static snode *mk(dm *d, snode_kind k)
{
    return snode_new(d->a, k);
}

static snode *mk_idx(dm *d, snode_kind k, uint64_t i)
{
    return snode_index(d->a, k, i);
}

static snode *mk_str(dm *d, snode_kind k, const char *s)
{
    return snode_cstr(d->a, k, s);
}

/* Swift's createWithChild(ren): NULL when any child is missing. */
static snode *mk1(dm *d, snode_kind k, snode *c1)
{
    if (!c1)
        return NULL;
    snode *n = mk(d, k);
    return snode_add(d->a, n, c1) ? n : NULL;
}

static snode *mk2(dm *d, snode_kind k, snode *c1, snode *c2)
{
    if (!c1 || !c2)
        return NULL;
    snode *n = mk1(d, k, c1);
    return snode_add(d->a, n, c2) ? n : NULL;
}

static snode *mk3(dm *d, snode_kind k, snode *c1, snode *c2, snode *c3)
{
    if (!c3)
        return NULL;
    snode *n = mk2(d, k, c1, c2);
    return snode_add(d->a, n, c3) ? n : NULL;
}

static snode *mk4(dm *d, snode_kind k, snode *c1, snode *c2, snode *c3, snode *c4)
{
    if (!c4)
        return NULL;
    snode *n = mk3(d, k, c1, c2, c3);
    return snode_add(d->a, n, c4) ? n : NULL;
}

/* Swift's addChild: the parent, or NULL when either is missing. */
static snode *add(dm *d, snode *parent, snode *child)
{
    return snode_add(d->a, parent, child) ? parent : NULL;
}

static snode *mk_type(dm *d, snode *c)
{
    return mk1(d, SK_Type, c);
}

/* A copy of node with another kind (same payload and children). */
static snode *change_kind(dm *d, snode *node, snode_kind k)
{
    if (!node)
        return NULL;
    snode *n = mk(d, k);
    if (!n)
        return NULL;
    n->payload = node->payload;
    n->v = node->v;
    for (uint32_t i = 0; i < node->n; i++)
        if (!snode_add(d->a, n, node->kids[i]))
            return NULL;
    return n;
}

/* ---- the stack and the substitutions ---- */

/* Grows an arena array of pointers to hold one more; false past max. */
static bool grow_ptrs(dm *d, snode ***arr, uint32_t *cap, uint32_t used, uint32_t max)
{
    if (used < *cap)
        return true;
    if (used >= max) {
        d->a->failed = true;
        return false;
    }
    uint32_t ncap = *cap ? *cap * 2 : 32;
    if (ncap > max)
        ncap = max;
    snode **p = sarena_alloc(d->a, ncap * sizeof *p);
    if (!p)
        return false;
    if (used)
        memcpy(p, *arr, used * sizeof *p);
    *arr = p;
    *cap = ncap;
    return true;
}

static void push(dm *d, snode *nd)
{
    if (nd && grow_ptrs(d, &d->stk, &d->capstk, d->nstk, SWIFT_MAX_NODES))
        d->stk[d->nstk++] = nd;
}

static snode *pop(dm *d)
{
    return d->nstk ? d->stk[--d->nstk] : NULL;
}

static snode *pop_kind(dm *d, snode_kind k)
{
    if (d->nstk && d->stk[d->nstk - 1]->kind == k)
        return d->stk[--d->nstk];
    return NULL;
}

static snode *pop_if(dm *d, bool (*pred)(int))
{
    if (d->nstk && pred(d->stk[d->nstk - 1]->kind))
        return d->stk[--d->nstk];
    return NULL;
}

static void add_subst(dm *d, snode *nd)
{
    if (nd && grow_ptrs(d, &d->subs, &d->capsubs, d->nsubs, SWIFT_MAX_SUBSTS))
        d->subs[d->nsubs++] = nd;
}

/* ---- kind classes (Swift's predicates of the same names) ---- */

static bool is_decl_name(int k)
{
    switch (k) {
    case SK_Identifier: case SK_LocalDeclName: case SK_PrivateDeclName:
    case SK_RelatedEntityDeclName: case SK_PrefixOperator: case SK_PostfixOperator:
    case SK_InfixOperator: case SK_TypeSymbolicReference: case SK_ProtocolSymbolicReference:
    case SK_ObjectiveCProtocolSymbolicReference:
        return true;
    default:
        return false;
    }
}

static bool is_any_generic(int k)
{
    switch (k) {
    case SK_Structure: case SK_Class: case SK_Enum: case SK_Protocol:
    case SK_ProtocolSymbolicReference: case SK_ObjectiveCProtocolSymbolicReference:
    case SK_OtherNominalType: case SK_TypeAlias: case SK_TypeSymbolicReference:
    case SK_BuiltinTupleType:
        return true;
    default:
        return false;
    }
}

static bool is_entity(int k)
{
    return k == SK_Type || snode_is_context(k);
}

static bool is_requirement(int k)
{
    switch (k) {
    case SK_DependentGenericParamPackMarker: case SK_DependentGenericParamValueMarker:
    case SK_DependentGenericSameTypeRequirement: case SK_DependentGenericSameShapeRequirement:
    case SK_DependentGenericLayoutRequirement: case SK_DependentGenericConformanceRequirement:
    case SK_DependentGenericInverseConformanceRequirement:
        return true;
    default:
        return false;
    }
}

/* Attributes that the top level hoists in front of the entity they apply
 * to ("specialized", "@objc", "partial apply for", ...). */
static bool is_function_attr(int k)
{
    switch (k) {
    case SK_FunctionSignatureSpecialization: case SK_GenericSpecialization:
    case SK_GenericSpecializationPrespecialized: case SK_InlinedGenericFunction:
    case SK_GenericSpecializationNotReAbstracted: case SK_GenericPartialSpecialization:
    case SK_GenericPartialSpecializationNotReAbstracted:
    case SK_GenericSpecializationInResilienceDomain: case SK_ObjCAttribute:
    case SK_NonObjCAttribute: case SK_DynamicAttribute: case SK_DirectMethodReferenceAttribute:
    case SK_VTableAttribute: case SK_PartialApplyForwarder: case SK_PartialApplyObjCForwarder:
    case SK_OutlinedVariable: case SK_OutlinedReadOnlyObject: case SK_OutlinedBridgedMethod:
    case SK_MergedFunction: case SK_DistributedThunk: case SK_DistributedAccessor:
    case SK_DynamicallyReplaceableFunctionImpl: case SK_DynamicallyReplaceableFunctionKey:
    case SK_DynamicallyReplaceableFunctionVar: case SK_AsyncFunctionPointer:
    case SK_AsyncAwaitResumePartialFunction: case SK_AsyncSuspendResumePartialFunction:
    case SK_AccessibleFunctionRecord: case SK_BackDeploymentThunk:
    case SK_BackDeploymentFallback: case SK_HasSymbolQuery: case SK_CoroFunctionPointer:
    case SK_DefaultOverride:
        return true;
    default:
        return false;
    }
}

static bool is_protocol_node(const snode *n)
{
    while (n && n->kind == SK_Type)
        n = snode_kid(n, 0);
    return n && (n->kind == SK_Protocol || n->kind == SK_ProtocolSymbolicReference ||
                 n->kind == SK_ObjectiveCProtocolSymbolicReference);
}

static bool is_any_conformance(int k)
{
    switch (k) {
    case SK_ConcreteProtocolConformance: case SK_PackProtocolConformance:
    case SK_DependentProtocolConformanceRoot: case SK_DependentProtocolConformanceInherited:
    case SK_DependentProtocolConformanceAssociated: case SK_DependentProtocolConformanceOpaque:
        return true;
    default:
        return false;
    }
}

static bool is_dependent_conformance(int k)
{
    return k != SK_ConcreteProtocolConformance && k != SK_PackProtocolConformance &&
           is_any_conformance(k);
}

static bool is_macro_expansion(int k)
{
    switch (k) {
    case SK_AccessorAttachedMacroExpansion: case SK_MemberAttributeAttachedMacroExpansion:
    case SK_FreestandingMacroExpansion: case SK_MemberAttachedMacroExpansion:
    case SK_PeerAttachedMacroExpansion: case SK_ConformanceAttachedMacroExpansion:
    case SK_ExtensionAttachedMacroExpansion: case SK_BodyAttachedMacroExpansion:
    case SK_PreambleAttachedMacroExpansion: case SK_MacroExpansionLoc:
        return true;
    default:
        return false;
    }
}

static bool is_isolation(int k)
{
    return k == SK_GlobalActorFunctionType || k == SK_IsolatedAnyFunctionType ||
           k == SK_NonIsolatedCallerFunctionType;
}

static bool is_throws(int k)
{
    return k == SK_ThrowsAnnotation || k == SK_TypedThrowsAnnotation;
}

/* ---- common pops ---- */

static snode *pop_module(dm *d)
{
    snode *id = pop_kind(d, SK_Identifier);
    if (id)
        return change_kind(d, id, SK_Module);
    return pop_kind(d, SK_Module);
}

static snode *pop_context(dm *d)
{
    snode *m = pop_module(d);
    if (m)
        return m;
    snode *ty = pop_kind(d, SK_Type);
    if (ty) {
        if (ty->n != 1 || !snode_is_context(ty->kids[0]->kind))
            return NULL;
        return ty->kids[0];
    }
    return pop_if(d, snode_is_context);
}

static snode *pop_type_child(dm *d)
{
    snode *ty = pop_kind(d, SK_Type);
    return ty && ty->n == 1 ? ty->kids[0] : NULL;
}

static snode *pop_any_generic(dm *d)
{
    snode *c = pop_type_child(d);
    return c && is_any_generic(c->kind) ? c : NULL;
}

static snode *popped_type(dm *d, snode_kind k)
{
    return mk1(d, k, pop_kind(d, SK_Type));
}

/* Pops a list of nodes of one kind, as mangled "first '_' second ... "
 * (or 'y' for none), back into mangling order under a node of kind list. */
static snode *pop_list(dm *d, snode_kind list, snode *(*pop_elt)(dm *))
{
    snode *root = mk(d, list);
    if (!root)
        return NULL;
    if (!pop_kind(d, SK_EmptyList)) {
        bool first;
        do {
            first = pop_kind(d, SK_FirstElementMarker) != NULL;
            snode *e = pop_elt(d);
            if (!e || !snode_add(d->a, root, e))
                return NULL;
        } while (!first);
        snode_reverse(root, 0);
    }
    return root;
}

static snode *pop_type_node(dm *d)
{
    return pop_kind(d, SK_Type);
}

static snode *pop_type_list(dm *d)
{
    return pop_list(d, SK_TypeList, pop_type_node);
}

static snode *pop_protocol(dm *d)
{
    snode *ty = pop_kind(d, SK_Type);
    if (ty)
        return ty->n >= 1 && is_protocol_node(ty) ? ty : NULL;
    snode *sym = pop_kind(d, SK_ProtocolSymbolicReference);
    if (!sym)
        sym = pop_kind(d, SK_ObjectiveCProtocolSymbolicReference);
    if (sym)
        return sym;
    snode *name = pop_if(d, is_decl_name);
    snode *ctx = pop_context(d);
    return mk_type(d, mk2(d, SK_Protocol, ctx, name));
}

static snode *pop_any_conformance(dm *d)
{
    return pop_if(d, is_any_conformance);
}

static snode *pop_conformance_list(dm *d)
{
    return pop_list(d, SK_AnyProtocolConformanceList, pop_any_conformance);
}

static snode *pop_assoc_type_name(dm *d)
{
    snode *proto = pop_kind(d, SK_Type);
    if (proto && !is_protocol_node(proto))
        return NULL;
    if (!proto)
        proto = pop_kind(d, SK_ProtocolSymbolicReference);
    if (!proto)
        proto = pop_kind(d, SK_ObjectiveCProtocolSymbolicReference);
    snode *id = pop_kind(d, SK_Identifier);
    snode *ref = mk1(d, SK_DependentAssociatedTypeRef, id);
    add(d, ref, proto);
    return ref;
}

static snode *pop_assoc_type_path(dm *d)
{
    return pop_list(d, SK_AssocTypePath, pop_assoc_type_name);
}

static snode *pop_conformance(dm *d)
{
    snode *sig = pop_kind(d, SK_DependentGenericSignature);
    snode *module = pop_module(d);
    snode *proto = pop_protocol(d);
    snode *type = pop_kind(d, SK_Type);
    snode *ident = NULL;
    if (!type) { /* a property behavior's conformance */
        ident = pop_kind(d, SK_Identifier);
        type = pop_kind(d, SK_Type);
    }
    if (sig)
        type = mk_type(d, mk2(d, SK_DependentGenericType, sig, type));
    snode *conf = mk3(d, SK_ProtocolConformance, type, proto, module);
    add(d, conf, ident);
    return conf;
}

static snode *dependent_param(dm *d, int depth, int index)
{
    if (depth < 0 || index < 0)
        return NULL;
    return mk2(d, SK_DependentGenericParamType, mk_idx(d, SK_Index, (uint64_t)depth),
               mk_idx(d, SK_Index, (uint64_t)index));
}

static snode *index_node(dm *d)
{
    int i = index_(d);
    return i >= 0 ? mk_idx(d, SK_Number, (uint64_t)i) : NULL;
}

/* ---- identifiers ---- */

static void record_words(dm *d, const char *p, size_t len)
{
    int start = -1;
    for (size_t i = 0; i <= len; i++) {
        char c = i < len ? p[i] : 0;
        if (start >= 0) {
            char prev = p[i - 1];
            bool end = c == '_' || c == 0 || (!sw_upper(prev) && sw_upper(c));
            if (end) {
                if ((int)i - start >= 2 && d->nwords < 26)
                    d->words[d->nwords++] = (sw_slice){p + start, (uint32_t)(i - (size_t)start)};
                start = -1;
            }
        }
        if (start < 0 && !sw_digit(c) && c != '_' && c != 0)
            start = (int)i;
    }
}

/* Appends to an identifier being assembled; false past SWIFT_MAX_OUT (an
 * identifier that long could never be printed). */
static bool ident_append(char *buf, size_t *len, const char *p, size_t n)
{
    if (n > SWIFT_MAX_OUT - *len)
        return false;
    memcpy(buf + *len, p, n);
    *len += n;
    return true;
}

static snode *demangle_identifier(dm *d)
{
    bool words = false, puny = false;
    if (!sw_digit(peek(d)))
        return NULL;
    if (peek(d) == '0') {
        next(d);
        if (peek(d) == '0') {
            next(d);
            puny = true;
        } else {
            words = true;
        }
    }
    /* Plain identifiers (the common case) stay slices of the name. */
    char buf[SWIFT_MAX_OUT];
    size_t len = 0;
    const char *only = NULL; /* the identifier when it is one plain slice */
    size_t pieces = 0;
    do {
        while (words && sw_letter(peek(d))) {
            char c = next(d);
            int w = sw_lower(c) ? c - 'a' : c - 'A';
            if (sw_upper(c))
                words = false;
            if (w >= d->nwords || !ident_append(buf, &len, d->words[w].p, d->words[w].len))
                return NULL;
            pieces++;
        }
        if (next_if(d, '0'))
            break;
        int count = natural(d);
        if (count <= 0)
            return NULL;
        if (puny)
            next_if(d, '_');
        if ((size_t)count > d->n - d->pos)
            return NULL;
        const char *slice = d->s + d->pos;
        if (puny) {
            const char *dec;
            size_t declen;
            if (!swift_punycode(d->a, slice, (size_t)count, &dec, &declen) ||
                !ident_append(buf, &len, dec, declen))
                return NULL;
            pieces++;
        } else {
            if (!ident_append(buf, &len, slice, (size_t)count))
                return NULL;
            if (pieces++ == 0)
                only = slice;
            record_words(d, slice, (size_t)count);
        }
        d->pos += (size_t)count;
    } while (words);
    if (len == 0)
        return NULL;
    const char *text = pieces == 1 && only ? only : sarena_dup(d->a, buf, len);
    snode *id = text ? snode_text(d->a, SK_Identifier, text, len) : NULL;
    add_subst(d, id);
    return id;
}

static snode *demangle_operator_identifier(dm *d)
{
    static const char table[] = "& @/= >    <*!|+?%-~   ^ .";
    snode *id = pop_kind(d, SK_Identifier);
    if (!id)
        return NULL;
    char *op = sarena_alloc(d->a, id->v.text.len ? id->v.text.len : 1);
    if (!op)
        return NULL;
    for (uint32_t i = 0; i < id->v.text.len; i++) {
        unsigned char c = (unsigned char)id->v.text.p[i];
        if (c >= 0x80) { /* Unicode operator characters pass through */
            op[i] = (char)c;
            continue;
        }
        if (!sw_lower((char)c) || table[c - 'a'] == ' ')
            return NULL;
        op[i] = table[c - 'a'];
    }
    snode_kind k;
    switch (next(d)) {
    case 'i': k = SK_InfixOperator; break;
    case 'p': k = SK_PrefixOperator; break;
    case 'P': k = SK_PostfixOperator; break;
    default: return NULL;
    }
    return snode_text(d->a, k, op, id->v.text.len);
}

static snode *demangle_local_identifier(dm *d)
{
    if (next_if(d, 'L')) {
        snode *disc = pop_kind(d, SK_Identifier);
        snode *name = pop_if(d, is_decl_name);
        return mk2(d, SK_PrivateDeclName, disc, name);
    }
    if (next_if(d, 'l'))
        return mk1(d, SK_PrivateDeclName, pop_kind(d, SK_Identifier));
    char c = peek(d);
    if ((c >= 'a' && c <= 'j') || (c >= 'A' && c <= 'J')) {
        next(d);
        snode *kind = snode_text(d->a, SK_Identifier, sarena_dup(d->a, &c, 1), 1);
        snode *name = pop(d);
        snode *r = mk(d, SK_RelatedEntityDeclName);
        add(d, r, kind);
        return add(d, r, name);
    }
    snode *disc = index_node(d);
    snode *name = pop_if(d, is_decl_name);
    return mk2(d, SK_LocalDeclName, disc, name);
}

/* ---- substitutions ---- */

static snode *push_multi(dm *d, int repeat, size_t at)
{
    if (at >= d->nsubs || repeat > 2048)
        return NULL;
    snode *nd = d->subs[at];
    while (repeat-- > 1)
        push(d, nd);
    return nd;
}

static snode *demangle_multi_substitutions(dm *d)
{
    int repeat = -1;
    for (;;) {
        char c = next(d);
        if (c == 0)
            return NULL;
        if (sw_lower(c)) {
            snode *nd = push_multi(d, repeat, (size_t)(c - 'a'));
            if (!nd)
                return NULL;
            push(d, nd);
            repeat = -1;
            continue;
        }
        if (sw_upper(c))
            return push_multi(d, repeat, (size_t)(c - 'A'));
        if (c == '_') {
            /* The number was an index past the 26 letters, not a count. */
            unsigned at = (unsigned)repeat + 27u;
            return at < d->nsubs ? d->subs[at] : NULL;
        }
        push_back(d);
        repeat = natural(d);
        if (repeat < 0)
            return NULL;
    }
}

static snode *swift_type(dm *d, snode_kind k, const char *name)
{
    return mk_type(d, mk2(d, k, mk_str(d, SK_Module, "Swift"), mk_str(d, SK_Identifier, name)));
}

/* Swift's StandardTypesMangling.def: 'S' and a letter ("Sc" and a letter for
 * the concurrency types). */
static const struct std_type {
    char code;
    bool concurrency;
    snode_kind kind;
    const char *name;
} std_types[] = {
    {'A', 0, SK_Structure, "AutoreleasingUnsafeMutablePointer"},
    {'a', 0, SK_Structure, "Array"}, {'b', 0, SK_Structure, "Bool"},
    {'D', 0, SK_Structure, "Dictionary"}, {'d', 0, SK_Structure, "Double"},
    {'f', 0, SK_Structure, "Float"}, {'h', 0, SK_Structure, "Set"},
    {'I', 0, SK_Structure, "DefaultIndices"}, {'i', 0, SK_Structure, "Int"},
    {'J', 0, SK_Structure, "Character"}, {'N', 0, SK_Structure, "ClosedRange"},
    {'n', 0, SK_Structure, "Range"}, {'O', 0, SK_Structure, "ObjectIdentifier"},
    {'P', 0, SK_Structure, "UnsafePointer"}, {'p', 0, SK_Structure, "UnsafeMutablePointer"},
    {'R', 0, SK_Structure, "UnsafeBufferPointer"},
    {'r', 0, SK_Structure, "UnsafeMutableBufferPointer"}, {'S', 0, SK_Structure, "String"},
    {'s', 0, SK_Structure, "Substring"}, {'u', 0, SK_Structure, "UInt"},
    {'V', 0, SK_Structure, "UnsafeRawPointer"}, {'v', 0, SK_Structure, "UnsafeMutableRawPointer"},
    {'W', 0, SK_Structure, "UnsafeRawBufferPointer"},
    {'w', 0, SK_Structure, "UnsafeMutableRawBufferPointer"}, {'q', 0, SK_Enum, "Optional"},
    {'B', 0, SK_Protocol, "BinaryFloatingPoint"}, {'E', 0, SK_Protocol, "Encodable"},
    {'e', 0, SK_Protocol, "Decodable"}, {'F', 0, SK_Protocol, "FloatingPoint"},
    {'G', 0, SK_Protocol, "RandomNumberGenerator"}, {'H', 0, SK_Protocol, "Hashable"},
    {'j', 0, SK_Protocol, "Numeric"}, {'K', 0, SK_Protocol, "BidirectionalCollection"},
    {'k', 0, SK_Protocol, "RandomAccessCollection"}, {'L', 0, SK_Protocol, "Comparable"},
    {'l', 0, SK_Protocol, "Collection"}, {'M', 0, SK_Protocol, "MutableCollection"},
    {'m', 0, SK_Protocol, "RangeReplaceableCollection"}, {'Q', 0, SK_Protocol, "Equatable"},
    {'T', 0, SK_Protocol, "Sequence"}, {'t', 0, SK_Protocol, "IteratorProtocol"},
    {'U', 0, SK_Protocol, "UnsignedInteger"}, {'X', 0, SK_Protocol, "RangeExpression"},
    {'x', 0, SK_Protocol, "Strideable"}, {'Y', 0, SK_Protocol, "RawRepresentable"},
    {'y', 0, SK_Protocol, "StringProtocol"}, {'Z', 0, SK_Protocol, "SignedInteger"},
    {'z', 0, SK_Protocol, "BinaryInteger"},
    {'A', 1, SK_Protocol, "Actor"}, {'C', 1, SK_Structure, "CheckedContinuation"},
    {'c', 1, SK_Structure, "UnsafeContinuation"}, {'E', 1, SK_Structure, "CancellationError"},
    {'e', 1, SK_Structure, "UnownedSerialExecutor"}, {'F', 1, SK_Protocol, "Executor"},
    {'f', 1, SK_Protocol, "SerialExecutor"}, {'G', 1, SK_Structure, "TaskGroup"},
    {'g', 1, SK_Structure, "ThrowingTaskGroup"}, {'h', 1, SK_Protocol, "TaskExecutor"},
    {'I', 1, SK_Protocol, "AsyncIteratorProtocol"}, {'i', 1, SK_Protocol, "AsyncSequence"},
    {'J', 1, SK_Structure, "UnownedJob"}, {'M', 1, SK_Class, "MainActor"},
    {'P', 1, SK_Structure, "TaskPriority"}, {'S', 1, SK_Structure, "AsyncStream"},
    {'s', 1, SK_Structure, "AsyncThrowingStream"}, {'T', 1, SK_Structure, "Task"},
    {'t', 1, SK_Structure, "UnsafeCurrentTask"},
};

static snode *standard_type(dm *d, char code, bool concurrency)
{
    for (size_t i = 0; i < sizeof std_types / sizeof std_types[0]; i++)
        if (std_types[i].code == code && std_types[i].concurrency == concurrency)
            return swift_type(d, std_types[i].kind, std_types[i].name);
    return NULL;
}

static snode *demangle_standard_substitution(dm *d)
{
    switch (next(d)) {
    case 'o':
        return mk_str(d, SK_Module, "__C");
    case 'C':
        return mk_str(d, SK_Module, "__C_Synthesized");
    case 'g': {
        snode *opt = mk_type(d, mk2(d, SK_BoundGenericEnum, swift_type(d, SK_Enum, "Optional"),
                                    mk1(d, SK_TypeList, pop_kind(d, SK_Type))));
        add_subst(d, opt);
        return opt;
    }
    default: {
        push_back(d);
        int repeat = natural(d);
        if (repeat > 2048)
            return NULL;
        bool concurrency = next_if(d, 'c');
        snode *nd = standard_type(d, next(d), concurrency);
        if (!nd)
            return NULL;
        while (repeat-- > 1)
            push(d, nd);
        return nd;
    }
    }
}

/* ---- builtin types ---- */

static snode *builtin_name(dm *d, const char *fmt_prefix, int n, const char *suffix)
{
    char buf[96];
    int len = snprintf(buf, sizeof buf, "%s%d%s", fmt_prefix, n, suffix ? suffix : "");
    if (len <= 0 || (size_t)len >= sizeof buf)
        return NULL;
    return snode_text(d->a, SK_BuiltinTypeName, sarena_dup(d->a, buf, (size_t)len), (size_t)len);
}

static snode *demangle_builtin_type(dm *d)
{
    static const struct {
        char code;
        const char *name;
    } simple[] = {
        {'b', "Builtin.BridgeObject"}, {'B', "Builtin.UnsafeValueBuffer"},
        {'A', "Builtin.ImplicitActor"}, {'e', "Builtin.Executor"},
        {'I', "Builtin.IntLiteral"}, {'O', "Builtin.UnknownObject"},
        {'o', "Builtin.NativeObject"}, {'p', "Builtin.RawPointer"}, {'j', "Builtin.Job"},
        {'D', "Builtin.DefaultActorStorage"}, {'d', "Builtin.NonDefaultDistributedActorStorage"},
        {'c', "Builtin.RawUnsafeContinuation"}, {'t', "Builtin.SILToken"},
        {'w', "Builtin.Word"}, {'P', "Builtin.PackIndex"},
    };
    enum { MAX_TYPE_SIZE = 4096 };
    char c = next(d);
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (simple[i].code == c)
            return mk_type(d, mk_str(d, SK_BuiltinTypeName, simple[i].name));
    switch (c) {
    case 'f':
    case 'i': {
        int size = index_(d) - 1;
        if (size <= 0 || size > MAX_TYPE_SIZE)
            return NULL;
        return mk_type(d, builtin_name(d, c == 'f' ? "Builtin.FPIEEE" : "Builtin.Int", size, NULL));
    }
    case 'v': {
        int elts = index_(d) - 1;
        if (elts <= 0 || elts > MAX_TYPE_SIZE)
            return NULL;
        snode *elt = pop_type_child(d);
        if (!elt || elt->kind != SK_BuiltinTypeName || elt->v.text.len < 8 ||
            memcmp(elt->v.text.p, "Builtin.", 8) != 0 || elt->v.text.len > 64)
            return NULL;
        char rest[80];
        snprintf(rest, sizeof rest, "x%.*s", (int)elt->v.text.len - 8, elt->v.text.p + 8);
        return mk_type(d, builtin_name(d, "Builtin.Vec", elts, rest));
    }
    case 'V': {
        snode *elt = pop_kind(d, SK_Type);
        snode *size = pop_kind(d, SK_Type);
        return mk_type(d, mk2(d, SK_BuiltinFixedArray, size, elt));
    }
    case 'T':
        return mk_type(d, mk(d, SK_BuiltinTupleType));
    default:
        return NULL;
    }
}

/* ---- nominal types and contexts ---- */

static snode *demangle_any_generic_type(dm *d, snode_kind k)
{
    snode *name = pop_if(d, is_decl_name);
    snode *ctx = pop_context(d);
    snode *t = mk_type(d, mk2(d, k, ctx, name));
    add_subst(d, t);
    return t;
}

static snode *demangle_extension_context(dm *d)
{
    snode *sig = pop_kind(d, SK_DependentGenericSignature);
    snode *module = pop_module(d);
    snode *type = pop_any_generic(d);
    snode *ext = mk2(d, SK_Extension, module, type);
    if (sig)
        ext = add(d, ext, sig);
    return ext;
}

/* ---- function types ---- */

static snode *pop_function_params(dm *d, snode_kind k)
{
    snode *params = pop_kind(d, SK_EmptyList) ? mk_type(d, mk(d, SK_Tuple)) : pop_kind(d, SK_Type);
    return mk1(d, k, params);
}

static snode *demangle_clang_type(dm *d)
{
    int len = natural(d);
    if (len <= 0 || (size_t)len > d->n - d->pos)
        return NULL;
    snode *n = snode_text(d->a, SK_ClangType, d->s + d->pos, (size_t)len);
    d->pos += (size_t)len;
    return n;
}

static snode *pop_function_type(dm *d, snode_kind k, bool clang)
{
    snode *f = mk(d, k);
    if (clang)
        add(d, f, demangle_clang_type(d));
    /* Annotations, in the order Swift's printer expects them. */
    add(d, f, pop_kind(d, SK_SendingResultFunctionType));
    add(d, f, pop_if(d, is_isolation));
    add(d, f, pop_kind(d, SK_DifferentiableFunctionType));
    add(d, f, pop_if(d, is_throws));
    add(d, f, pop_kind(d, SK_ConcurrentFunctionType));
    add(d, f, pop_kind(d, SK_AsyncAnnotation));
    f = add(d, f, pop_function_params(d, SK_ArgumentTuple));
    f = add(d, f, pop_function_params(d, SK_ReturnType));
    return mk_type(d, f);
}

/* The argument labels of a function type, which the new mangling lists
 * after the type and "_T0" keeps inside the argument tuple. */
static snode *pop_function_param_labels(dm *d, snode *type)
{
    if (!d->old_labels && pop_kind(d, SK_EmptyList))
        return mk(d, SK_LabelList);
    if (!type || type->kind != SK_Type)
        return NULL;
    snode *fn = snode_kid(type, 0);
    if (fn && fn->kind == SK_DependentGenericType)
        fn = snode_kid(snode_kid(fn, 1), 0);
    if (!fn || (fn->kind != SK_FunctionType && fn->kind != SK_NoEscapeFunctionType))
        return NULL;
    uint32_t i = 0;
    static const snode_kind skipped[] = {
        SK_SendingResultFunctionType, SK_GlobalActorFunctionType, SK_IsolatedAnyFunctionType,
        SK_NonIsolatedCallerFunctionType, SK_DifferentiableFunctionType, SK_ThrowsAnnotation,
        SK_ConcurrentFunctionType, SK_AsyncAnnotation,
    };
    for (size_t j = 0; j < sizeof skipped / sizeof skipped[0]; j++) {
        int k = snode_kid_kind(fn, i);
        if (k == (int)skipped[j] ||
            (skipped[j] == SK_ThrowsAnnotation && k == SK_TypedThrowsAnnotation))
            i++;
    }
    snode *args = snode_kid(fn, i);
    if (!args || args->kind != SK_ArgumentTuple)
        return NULL;
    snode *params = snode_kid(snode_kid(args, 0), 0);
    if (!params)
        return NULL;
    uint32_t count = params->kind == SK_Tuple ? params->n : 1;
    if (count == 0)
        return NULL;
    snode *labels = mk(d, SK_LabelList);
    if (d->old_labels && params->kind != SK_Tuple)
        return labels;
    bool any = false;
    for (uint32_t p = 0; p < count; p++) {
        snode *label;
        if (d->old_labels) {
            snode *param = snode_kid(params, p);
            label = NULL;
            for (uint32_t c = 0; param && c < param->n; c++) {
                if (param->kids[c]->kind == SK_TupleElementName) {
                    snode *name = param->kids[c];
                    snode_remove(param, c);
                    label = snode_text(d->a, SK_Identifier, name->v.text.p, name->v.text.len);
                    break;
                }
            }
            if (!label)
                label = mk(d, SK_FirstElementMarker);
        } else {
            label = pop(d);
        }
        if (!label || (label->kind != SK_Identifier && label->kind != SK_FirstElementMarker))
            return NULL;
        if (!snode_add(d->a, labels, label))
            return NULL;
        any |= label->kind != SK_FirstElementMarker;
    }
    if (!any)
        return mk(d, SK_LabelList);
    if (!d->old_labels)
        snode_reverse(labels, 0);
    return labels;
}

static snode *demangle_plain_function(dm *d)
{
    snode *sig = pop_kind(d, SK_DependentGenericSignature);
    snode *type = pop_function_type(d, SK_FunctionType, false);
    snode *labels = pop_function_param_labels(d, type);
    if (sig)
        type = mk_type(d, mk2(d, SK_DependentGenericType, sig, type));
    snode *name = pop_if(d, is_decl_name);
    snode *ctx = pop_context(d);
    return labels ? mk4(d, SK_Function, ctx, name, labels, type)
                  : mk3(d, SK_Function, ctx, name, type);
}

static snode *demangle_type_mangling(dm *d)
{
    snode *type = pop_kind(d, SK_Type);
    snode *labels = pop_function_param_labels(d, type);
    snode *tm = mk(d, SK_TypeMangling);
    add(d, tm, labels);
    return add(d, tm, type);
}

/* ---- tuples and packs ---- */

static snode *pop_tuple(dm *d)
{
    snode *root = mk(d, SK_Tuple);
    if (!root)
        return NULL;
    if (!pop_kind(d, SK_EmptyList)) {
        bool first;
        do {
            first = pop_kind(d, SK_FirstElementMarker) != NULL;
            snode *elt = mk(d, SK_TupleElement);
            add(d, elt, pop_kind(d, SK_VariadicMarker));
            snode *id = pop_kind(d, SK_Identifier);
            if (id)
                add(d, elt, snode_text(d->a, SK_TupleElementName, id->v.text.p, id->v.text.len));
            snode *ty = pop_kind(d, SK_Type);
            if (!ty || !add(d, elt, ty) || !add(d, root, elt))
                return NULL;
        } while (!first);
        snode_reverse(root, 0);
    }
    return mk_type(d, root);
}

static snode *pop_pack(dm *d, snode_kind k)
{
    return mk_type(d, change_kind(d, pop_type_list(d), k));
}

/* ---- conformances ---- */

static snode *demangle_dependent_conformance_index(dm *d)
{
    int i = index_(d);
    /* 0 is ill-formed (an old mangling bug); 1 means unknown. */
    if (i <= 0)
        return NULL;
    if (i == 1)
        return mk(d, SK_UnknownIndex);
    return mk_idx(d, SK_Index, (uint64_t)(i - 2));
}

static snode *demangle_concrete_conformance(dm *d)
{
    snode *conditions = pop_conformance_list(d);
    snode *ref = pop_kind(d, SK_ProtocolConformanceRefInTypeModule);
    if (!ref)
        ref = pop_kind(d, SK_ProtocolConformanceRefInProtocolModule);
    if (!ref) { /* retroactive: the conformance lives in a third module */
        snode *module = pop_module(d);
        snode *proto = pop_protocol(d);
        ref = mk2(d, SK_ProtocolConformanceRefInOtherModule, proto, module);
    }
    snode *type = pop_kind(d, SK_Type);
    return mk3(d, SK_ConcreteProtocolConformance, type, ref, conditions);
}

static snode *demangle_conformance_op(dm *d, char c)
{
    switch (c) {
    case 'A': {
        snode *index = demangle_dependent_conformance_index(d);
        snode *proto = pop_protocol(d);
        snode *type = pop_kind(d, SK_Type);
        snode *assoc = mk2(d, SK_DependentAssociatedConformance, type, proto);
        snode *nested = pop_if(d, is_dependent_conformance);
        return mk3(d, SK_DependentProtocolConformanceAssociated, nested, assoc, index);
    }
    case 'C':
        return demangle_concrete_conformance(d);
    case 'D': {
        snode *index = demangle_dependent_conformance_index(d);
        snode *proto = pop_protocol(d);
        snode *type = pop_kind(d, SK_Type);
        return mk3(d, SK_DependentProtocolConformanceRoot, type, proto, index);
    }
    case 'I': {
        snode *index = demangle_dependent_conformance_index(d);
        snode *proto = pop_protocol(d);
        snode *nested = pop_if(d, is_dependent_conformance);
        return mk3(d, SK_DependentProtocolConformanceInherited, nested, proto, index);
    }
    case 'O': {
        snode *type = pop_kind(d, SK_Type);
        snode *conf = pop_if(d, is_dependent_conformance);
        return mk2(d, SK_DependentProtocolConformanceOpaque, conf, type);
    }
    case 'P':
        return mk1(d, SK_ProtocolConformanceRefInTypeModule, pop_protocol(d));
    case 'p':
        return mk1(d, SK_ProtocolConformanceRefInProtocolModule, pop_protocol(d));
    case 'X':
        return mk1(d, SK_PackProtocolConformance, pop_conformance_list(d));
    case 'c':
        return mk1(d, SK_ProtocolConformanceDescriptorRecord, pop_conformance(d));
    case 'n':
        return popped_type(d, SK_NominalTypeDescriptorRecord);
    case 'o':
        return mk1(d, SK_OpaqueTypeDescriptorRecord, pop(d));
    case 'r':
        return mk1(d, SK_ProtocolDescriptorRecord, pop_protocol(d));
    case 'F':
        return mk(d, SK_AccessibleFunctionRecord);
    default:
        return NULL;
    }
}

static snode *pop_retroactive_conformances(dm *d)
{
    snode *list = NULL, *c;
    while ((c = pop_kind(d, SK_RetroactiveConformance))) {
        if (!list)
            list = mk(d, SK_TypeList);
        add(d, list, c);
    }
    snode_reverse(list, 0);
    return list;
}

/* ---- bound generics ---- */

typedef struct {
    snode **lists;
    uint32_t n, cap;
} type_lists;

/* Pops the argument lists of a bound generic type, innermost last, as
 * "args '_' args ... 'y'". */
static bool demangle_bound_generics(dm *d, type_lists *tl, snode **retro)
{
    *retro = pop_retroactive_conformances(d);
    for (;;) {
        snode *list = mk(d, SK_TypeList);
        if (!list || !grow_ptrs(d, &tl->lists, &tl->cap, tl->n, SWIFT_MAX_NODES))
            return false;
        tl->lists[tl->n++] = list;
        snode *ty;
        while ((ty = pop_kind(d, SK_Type)))
            if (!add(d, list, ty))
                return false;
        snode_reverse(list, 0);
        if (pop_kind(d, SK_EmptyList))
            return true;
        if (!pop_kind(d, SK_FirstElementMarker))
            return false;
    }
}

static bool consumes_generic_args(int k)
{
    switch (k) {
    case SK_Variable: case SK_Subscript: case SK_ImplicitClosure: case SK_ExplicitClosure:
    case SK_DefaultArgumentInitializer: case SK_Initializer:
    case SK_PropertyWrapperBackingInitializer: case SK_PropertyWrapperInitFromProjectedValue:
    case SK_Static:
        return false;
    default:
        return true;
    }
}

/* Applies the argument lists from index at outward to nominal and its
 * parents. Recurses along the chain of parents (depth-counted). */
static snode *bound_generic_args(dm *d, snode *nominal, const type_lists *tl, uint32_t at)
{
    if (!nominal || at >= tl->n || nominal->n == 0 || ++d->depth > SWIFT_MAX_DEPTH)
        return NULL;
    snode *result = NULL;
    snode *ctx = nominal->kids[0];
    bool consumes = consumes_generic_args(nominal->kind);
    snode *args = tl->lists[at];
    if (consumes)
        at++;
    if (at < tl->n) {
        snode *parent;
        if (ctx->kind == SK_Extension) {
            parent = bound_generic_args(d, snode_kid(ctx, 1), tl, at);
            parent = mk2(d, SK_Extension, snode_kid(ctx, 0), parent);
            if (ctx->n == 3)
                add(d, parent, ctx->kids[2]);
        } else {
            parent = bound_generic_args(d, ctx, tl, at);
        }
        snode *renewed = mk1(d, (snode_kind)nominal->kind, parent);
        if (!renewed)
            goto out;
        for (uint32_t i = 1; i < nominal->n; i++)
            add(d, renewed, nominal->kids[i]);
        nominal = renewed;
    }
    if (!consumes || args->n == 0) {
        result = nominal;
        goto out;
    }
    snode_kind k;
    switch (nominal->kind) {
    case SK_Class: k = SK_BoundGenericClass; break;
    case SK_Structure: k = SK_BoundGenericStructure; break;
    case SK_Enum: k = SK_BoundGenericEnum; break;
    case SK_Protocol: k = SK_BoundGenericProtocol; break;
    case SK_OtherNominalType: k = SK_BoundGenericOtherNominalType; break;
    case SK_TypeAlias: k = SK_BoundGenericTypeAlias; break;
    case SK_Function:
    case SK_Constructor:
        result = mk2(d, SK_BoundGenericFunction, nominal, args);
        goto out;
    default:
        goto out;
    }
    result = mk2(d, k, mk_type(d, nominal), args);
out:
    d->depth--;
    return result;
}

static snode *demangle_bound_generic_type(dm *d)
{
    type_lists tl = {0};
    snode *retro;
    if (!demangle_bound_generics(d, &tl, &retro))
        return NULL;
    snode *nominal = pop_any_generic(d);
    snode *bound = bound_generic_args(d, nominal, &tl, 0);
    if (!bound)
        return NULL;
    add(d, bound, retro);
    snode *t = mk_type(d, bound);
    add_subst(d, t);
    return t;
}

/* ---- SIL function types ('I') ---- */

static snode *impl_param_convention(dm *d, snode_kind k)
{
    const char *attr;
    switch (next(d)) {
    case 'i': attr = "@in"; break;
    case 'c': attr = "@in_constant"; break;
    case 'l': attr = "@inout"; break;
    case 'b': attr = "@inout_aliasable"; break;
    case 'n': attr = "@in_guaranteed"; break;
    case 'X': attr = "@in_cxx"; break;
    case 'x': attr = "@owned"; break;
    case 'g': attr = "@guaranteed"; break;
    case 'e': attr = "@deallocating"; break;
    case 'y': attr = "@unowned"; break;
    case 'v': attr = "@pack_owned"; break;
    case 'p': attr = "@pack_guaranteed"; break;
    case 'm': attr = "@pack_inout"; break;
    default: push_back(d); return NULL;
    }
    return mk1(d, k, mk_str(d, SK_ImplConvention, attr));
}

static snode *impl_result_convention(dm *d, snode_kind k)
{
    const char *attr;
    switch (next(d)) {
    case 'r': attr = "@out"; break;
    case 'o': attr = "@owned"; break;
    case 'd': attr = "@unowned"; break;
    case 'u': attr = "@unowned_inner_pointer"; break;
    case 'a': attr = "@autoreleased"; break;
    case 'k': attr = "@pack_out"; break;
    default: push_back(d); return NULL;
    }
    return mk1(d, k, mk_str(d, SK_ImplConvention, attr));
}

/* The optional marks after a parameter's convention, each one letter. */
static void impl_param_marks(dm *d, snode *param, bool is_param)
{
    add(d, param,
        mk_str(d, SK_ImplParameterResultDifferentiability, next_if(d, 'w') ? "@noDerivative" : ""));
    if (!is_param)
        return;
    if (next_if(d, 'T'))
        add(d, param, mk_str(d, SK_ImplParameterSending, "sending"));
    if (next_if(d, 'I'))
        add(d, param, mk_str(d, SK_ImplParameterIsolated, "isolated"));
    if (next_if(d, 'L'))
        add(d, param, mk_str(d, SK_ImplParameterImplicitLeading, "sil_implicit_leading_param"));
}

/* "Is" / "II" substitutions of a SIL function type. */
static snode *impl_substitutions(dm *d, snode_kind k)
{
    type_lists tl = {0};
    snode *retro;
    if (!demangle_bound_generics(d, &tl, &retro))
        return NULL;
    snode *subs = mk(d, k);
    if (k == SK_ImplPatternSubstitutions &&
        !add(d, subs, pop_kind(d, SK_DependentGenericSignature)))
        return NULL;
    add(d, subs, tl.lists[0]);
    if (retro)
        add(d, subs, retro);
    return subs;
}

static bool impl_callee_and_convention(dm *d, snode *type)
{
    const char *callee;
    switch (next(d)) {
    case 'y': callee = "@callee_unowned"; break;
    case 'g': callee = "@callee_guaranteed"; break;
    case 'x': callee = "@callee_owned"; break;
    case 't': callee = "@convention(thin)"; break;
    default: return false;
    }
    add(d, type, mk_str(d, SK_ImplConvention, callee));
    const char *conv = NULL;
    bool clang = false;
    switch (next(d)) {
    case 'B': conv = "block"; break;
    case 'C': conv = "c"; break;
    case 'z':
        switch (next(d)) {
        case 'B': clang = true; conv = "block"; break;
        case 'C': clang = true; conv = "c"; break;
        default: push_back(d); push_back(d); break;
        }
        break;
    case 'M': conv = "method"; break;
    case 'O': conv = "objc_method"; break;
    case 'K': conv = "closure"; break;
    case 'W': conv = "witness_method"; break;
    default: push_back(d); break;
    }
    if (conv) {
        snode *fc =
            mk1(d, SK_ImplFunctionConvention, mk_str(d, SK_ImplFunctionConventionName, conv));
        if (clang)
            add(d, fc, demangle_clang_type(d));
        add(d, type, fc);
    }
    return true;
}

static snode *demangle_impl_function_type(dm *d)
{
    snode *type = mk(d, SK_ImplFunctionType);
    if (next_if(d, 's') && !add(d, type, impl_substitutions(d, SK_ImplPatternSubstitutions)))
        return NULL;
    if (next_if(d, 'I') && !add(d, type, impl_substitutions(d, SK_ImplInvocationSubstitutions)))
        return NULL;
    snode *sig = pop_kind(d, SK_DependentGenericSignature);
    if (sig && next_if(d, 'P'))
        sig = change_kind(d, sig, SK_DependentPseudogenericSignature);
    if (next_if(d, 'e'))
        add(d, type, mk(d, SK_ImplEscaping));
    if (next_if(d, 'A'))
        add(d, type, mk(d, SK_ImplErasedIsolation));
    char c = peek(d);
    if (c == 'd' || c == 'l' || c == 'f' || c == 'r')
        add(d, type, mk_idx(d, SK_ImplDifferentiabilityKind, (uint64_t)next(d)));
    if (!impl_callee_and_convention(d, type))
        return NULL;
    const char *coro = next_if(d, 'A') ? "yield_once" : next_if(d, 'I') ? "yield_once_2"
                       : next_if(d, 'G') ? "yield_many" : NULL;
    if (coro)
        add(d, type, mk_str(d, SK_ImplCoroutineKind, coro));
    if (next_if(d, 'h'))
        add(d, type, mk_str(d, SK_ImplFunctionAttribute, "@Sendable"));
    if (next_if(d, 'H'))
        add(d, type, mk_str(d, SK_ImplFunctionAttribute, "@async"));
    if (next_if(d, 'T'))
        add(d, type, mk(d, SK_ImplSendingResult));
    add(d, type, sig);

    uint32_t ntypes = 0;
    snode *p;
    while ((p = impl_param_convention(d, SK_ImplParameter))) {
        type = add(d, type, p);
        impl_param_marks(d, p, true);
        ntypes++;
    }
    while ((p = impl_result_convention(d, SK_ImplResult))) {
        type = add(d, type, p);
        impl_param_marks(d, p, false);
        ntypes++;
    }
    while (next_if(d, 'Y')) {
        p = impl_param_convention(d, SK_ImplYield);
        if (!p)
            return NULL;
        type = add(d, type, p);
        ntypes++;
    }
    if (next_if(d, 'z')) {
        p = impl_result_convention(d, SK_ImplErrorResult);
        if (!p)
            return NULL;
        type = add(d, type, p);
        ntypes++;
    }
    if (!type || !next_if(d, '_') || ntypes > type->n)
        return NULL;
    /* The types of the parameters and results came first: the last pushed
     * belongs to the last parameter or result. */
    for (uint32_t i = 0; i < ntypes; i++) {
        snode *ty = pop_kind(d, SK_Type);
        if (!ty || !add(d, type->kids[type->n - i - 1], ty))
            return NULL;
    }
    return mk_type(d, type);
}

/* ---- metadata ('M') ---- */

static snode *demangle_private_context_descriptor(dm *d)
{
    switch (next(d)) {
    case 'E':
        return mk1(d, SK_ExtensionDescriptor, pop_context(d));
    case 'M':
        return mk1(d, SK_ModuleDescriptor, pop_module(d));
    case 'Y': {
        snode *disc = pop(d);
        snode *ctx = disc ? pop_context(d) : NULL;
        return mk2(d, SK_AnonymousDescriptor, ctx, disc);
    }
    case 'X':
        return mk1(d, SK_AnonymousDescriptor, pop_context(d));
    case 'A': {
        snode *path = pop_assoc_type_path(d);
        snode *base = path ? pop_kind(d, SK_Type) : NULL;
        return mk2(d, SK_AssociatedTypeGenericParamRef, base, path);
    }
    default:
        return NULL;
    }
}

static snode *demangle_metatype(dm *d)
{
    /* 'M' and a letter: what the letter makes of the popped operand. */
    static const struct {
        char code;
        char operand; /* t: a type; n: any node; p: a protocol; c: a conformance; e: an entity */
        snode_kind kind;
    } table[] = {
        {'a', 't', SK_TypeMetadataAccessFunction},
        {'A', 'c', SK_ReflectionMetadataAssocTypeDescriptor},
        {'b', 't', SK_CanonicalSpecializedGenericTypeMetadataAccessFunction},
        {'B', 't', SK_ReflectionMetadataBuiltinDescriptor},
        {'c', 'c', SK_ProtocolConformanceDescriptor},
        {'D', 't', SK_TypeMetadataDemanglingCache},
        {'f', 't', SK_FullTypeMetadata},
        {'F', 't', SK_ReflectionMetadataFieldDescriptor},
        {'g', 'n', SK_OpaqueTypeDescriptorAccessor},
        {'h', 'n', SK_OpaqueTypeDescriptorAccessorImpl},
        {'i', 't', SK_TypeMetadataInstantiationFunction},
        {'I', 't', SK_TypeMetadataInstantiationCache},
        {'j', 'n', SK_OpaqueTypeDescriptorAccessorKey},
        {'J', 'n', SK_NoncanonicalSpecializedGenericTypeMetadataCache},
        {'k', 'n', SK_OpaqueTypeDescriptorAccessorVar},
        {'K', 'n', SK_MetadataInstantiationCache},
        {'l', 't', SK_TypeMetadataSingletonInitializationCache},
        {'L', 't', SK_TypeMetadataLazyCache},
        {'m', 't', SK_Metaclass},
        {'M', 't', SK_CanonicalSpecializedGenericMetaclass},
        {'n', 't', SK_NominalTypeDescriptor},
        {'N', 't', SK_NoncanonicalSpecializedGenericTypeMetadata},
        {'o', 't', SK_ClassMetadataBaseOffset},
        {'p', 'p', SK_ProtocolDescriptor},
        {'P', 't', SK_GenericTypeMetadataPattern},
        {'q', 'n', SK_Uniquable},
        {'Q', 'n', SK_OpaqueTypeDescriptor},
        {'r', 't', SK_TypeMetadataCompletionFunction},
        {'s', 't', SK_ObjCResilientClassStub},
        {'S', 'p', SK_ProtocolSelfConformanceDescriptor},
        {'t', 't', SK_FullObjCResilientClassStub},
        {'u', 't', SK_MethodLookupFunction},
        {'U', 't', SK_ObjCMetadataUpdateFunction},
        {'V', 'e', SK_PropertyDescriptor},
        {'z', 't', SK_CanonicalPrespecializedGenericTypeCachingOnceToken},
    };
    char c = next(d);
    if (c == 'X')
        return demangle_private_context_descriptor(d);
    if (c == 'C') {
        snode *ty = pop_kind(d, SK_Type);
        if (!ty || !is_any_generic(snode_kid_kind(ty, 0)))
            return NULL;
        return mk1(d, SK_ReflectionMetadataSuperclassDescriptor, ty->kids[0]);
    }
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (table[i].code != c)
            continue;
        snode *operand;
        switch (table[i].operand) {
        case 't': operand = pop_kind(d, SK_Type); break;
        case 'p': operand = pop_protocol(d); break;
        case 'c': operand = pop_conformance(d); break;
        case 'e': operand = pop_if(d, is_entity); break;
        default: operand = pop(d); break;
        }
        return mk1(d, table[i].kind, operand);
    }
    return NULL;
}

/* ---- archetypes and dependent types ('Q') ---- */

static snode *generic_param_index(dm *d)
{
    if (next_if(d, 'd')) {
        int depth = index_(d) + 1;
        int index = index_(d);
        return dependent_param(d, depth, index);
    }
    if (next_if(d, 'z'))
        return dependent_param(d, 0, 0);
    if (next_if(d, 's'))
        return mk(d, SK_ConstrainedExistentialSelf);
    return dependent_param(d, 0, index_(d) + 1);
}

static snode *assoc_type_simple(dm *d, snode *base)
{
    snode *name = pop_assoc_type_name(d);
    snode *bt = base ? mk_type(d, base) : pop_kind(d, SK_Type);
    return mk_type(d, mk2(d, SK_DependentMemberType, bt, name));
}

static snode *assoc_type_compound(dm *d, snode *base)
{
    snode *path = pop_assoc_type_path(d); /* in mangling order */
    if (!path)
        return NULL;
    snode *bt = base ? mk_type(d, base) : pop_kind(d, SK_Type);
    for (uint32_t i = 0; i < path->n; i++)
        bt = mk_type(d, mk2(d, SK_DependentMemberType, bt, path->kids[i]));
    return bt;
}

static snode *subst_result(dm *d, snode *t)
{
    add_subst(d, t);
    return t;
}

static snode *demangle_archetype(dm *d)
{
    switch (next(d)) {
    case 'a': {
        snode *id = pop_kind(d, SK_Identifier);
        snode *arch = pop_type_child(d);
        return subst_result(d, mk_type(d, mk2(d, SK_AssociatedTypeRef, arch, id)));
    }
    case 'O':
        return mk1(d, SK_OpaqueReturnTypeOf, pop_context(d));
    case 'o': {
        int index = index_(d);
        type_lists tl = {0};
        snode *retro;
        if (!demangle_bound_generics(d, &tl, &retro))
            return NULL;
        snode *name = pop(d);
        if (!name)
            return NULL;
        /* Swift keeps a malformed index as it is (it prints as a huge
         * number). */
        snode *opaque = mk2(d, SK_OpaqueType, name, mk_idx(d, SK_Index, (uint64_t)(int64_t)index));
        snode *args = mk(d, SK_TypeList);
        for (uint32_t i = tl.n; i-- > 0;)
            add(d, args, tl.lists[i]);
        add(d, opaque, args);
        if (retro)
            add(d, opaque, retro);
        return subst_result(d, mk_type(d, opaque));
    }
    case 'r':
        return mk_type(d, mk(d, SK_OpaqueReturnType));
    case 'R': {
        int ordinal = index_(d);
        if (ordinal < 0)
            return NULL;
        return mk_type(
            d, mk1(d, SK_OpaqueReturnType, mk_idx(d, SK_OpaqueReturnTypeIndex, (uint64_t)ordinal)));
    }
    case 'x': return subst_result(d, assoc_type_simple(d, NULL));
    case 'X': return subst_result(d, assoc_type_compound(d, NULL));
    case 'y': return subst_result(d, assoc_type_simple(d, generic_param_index(d)));
    case 'Y': return subst_result(d, assoc_type_compound(d, generic_param_index(d)));
    case 'z': return subst_result(d, assoc_type_simple(d, dependent_param(d, 0, 0)));
    case 'Z': return subst_result(d, assoc_type_compound(d, dependent_param(d, 0, 0)));
    case 'p': {
        snode *count = pop_type_child(d);
        snode *pattern = pop_type_child(d);
        return mk_type(d, mk2(d, SK_PackExpansion, pattern, count));
    }
    case 'e': {
        snode *pack = pop_type_child(d);
        int level = index_(d);
        if (level < 0)
            return NULL;
        return mk_type(
            d, mk2(d, SK_PackElement, pack, mk_idx(d, SK_PackElementLevel, (uint64_t)level)));
    }
    case 'P':
        return pop_pack(d, SK_Pack);
    case 'S':
        switch (next(d)) {
        case 'd': return pop_pack(d, SK_SILPackDirect);
        case 'i': return pop_pack(d, SK_SILPackIndirect);
        default: return NULL;
        }
    default:
        return NULL;
    }
}

/* ---- generic signatures ('l', 'r', 'R') ---- */

static snode *demangle_generic_signature(dm *d, bool counts)
{
    snode *sig = mk(d, SK_DependentGenericSignature);
    if (!sig)
        return NULL;
    if (counts) {
        while (!next_if(d, 'l')) {
            int count = 0;
            if (!next_if(d, 'z'))
                count = index_(d) + 1;
            if (count < 0)
                return NULL;
            if (!add(d, sig, mk_idx(d, SK_DependentGenericParamCount, (uint64_t)count)))
                return NULL;
        }
    } else {
        add(d, sig, mk_idx(d, SK_DependentGenericParamCount, 1));
    }
    uint32_t ncounts = sig->n;
    snode *req;
    while ((req = pop_if(d, is_requirement)))
        add(d, sig, req);
    snode_reverse(sig, ncounts);
    return sig;
}

static snode *layout_requirement(dm *d, snode *type)
{
    char c = next(d);
    snode *size = NULL, *align = NULL;
    switch (c) {
    case 'U': case 'R': case 'N': case 'C': case 'D': case 'T':
        break;
    case 'E': case 'M':
        size = index_node(d);
        if (!size)
            return NULL;
        align = index_node(d);
        break;
    case 'e': case 'm':
        size = index_node(d);
        if (!size)
            return NULL;
        break;
    default:
        return NULL;
    }
    snode *name = snode_text(d->a, SK_Identifier, sarena_dup(d->a, &c, 1), 1);
    snode *r = mk2(d, SK_DependentGenericLayoutRequirement, type, name);
    if (size)
        add(d, r, size);
    if (align)
        add(d, r, align);
    return r;
}

static snode *demangle_generic_requirement(dm *d)
{
    enum { GENERIC, ASSOC, COMPOUND, SUBST } tk = GENERIC;
    enum { PROTOCOL, BASECLASS, SAMETYPE, SAMESHAPE, LAYOUT, PACK, VALUE, INVERSE } ck = PROTOCOL;
    snode *inverse = NULL;
    char c = next(d);
    switch (c) {
    case 'V': ck = VALUE; break;
    case 'v': ck = PACK; break;
    case 'c': ck = BASECLASS; tk = ASSOC; break;
    case 'C': ck = BASECLASS; tk = COMPOUND; break;
    case 'b': ck = BASECLASS; break;
    case 'B': ck = BASECLASS; tk = SUBST; break;
    case 't': ck = SAMETYPE; tk = ASSOC; break;
    case 'T': ck = SAMETYPE; tk = COMPOUND; break;
    case 's': ck = SAMETYPE; break;
    case 'S': ck = SAMETYPE; tk = SUBST; break;
    case 'm': ck = LAYOUT; tk = ASSOC; break;
    case 'M': ck = LAYOUT; tk = COMPOUND; break;
    case 'l': ck = LAYOUT; break;
    case 'L': ck = LAYOUT; tk = SUBST; break;
    case 'p': tk = ASSOC; break;
    case 'P': tk = COMPOUND; break;
    case 'Q': tk = SUBST; break;
    case 'h': ck = SAMESHAPE; break;
    case 'i': case 'j': case 'J': case 'I':
        ck = INVERSE;
        tk = c == 'i' ? GENERIC : c == 'j' ? ASSOC : c == 'J' ? COMPOUND : SUBST;
        inverse = index_node(d);
        break;
    default: push_back(d); break;
    }
    snode *type;
    switch (tk) {
    case GENERIC: type = mk_type(d, generic_param_index(d)); break;
    case ASSOC: type = subst_result(d, assoc_type_simple(d, generic_param_index(d))); break;
    case COMPOUND: type = subst_result(d, assoc_type_compound(d, generic_param_index(d))); break;
    default: type = pop_kind(d, SK_Type); break;
    }
    switch (ck) {
    case VALUE: return mk2(d, SK_DependentGenericParamValueMarker, type, pop_kind(d, SK_Type));
    case PACK: return mk1(d, SK_DependentGenericParamPackMarker, type);
    case PROTOCOL: return mk2(d, SK_DependentGenericConformanceRequirement, type, pop_protocol(d));
    case INVERSE: return mk2(d, SK_DependentGenericInverseConformanceRequirement, type, inverse);
    case BASECLASS:
        return mk2(d, SK_DependentGenericConformanceRequirement, type, pop_kind(d, SK_Type));
    case SAMETYPE:
        return mk2(d, SK_DependentGenericSameTypeRequirement, type, pop_kind(d, SK_Type));
    case SAMESHAPE:
        return mk2(d, SK_DependentGenericSameShapeRequirement, type, pop_kind(d, SK_Type));
    default:
        return layout_requirement(d, type);
    }
}

/* ---- thunks and specializations ('T') ---- */

static snode *spec_attributes(dm *d, snode_kind k)
{
    /* 'm' (metatype parameters removed) came with Swift 5.9/5.10 and went
     * again; binaries built then carry it (Tgm5). It prints nothing. */
    (void)next_if(d, 'm');
    bool serialized = next_if(d, 'q');
    bool async_removed = next_if(d, 'a');
    int pass = next(d) - '0';
    if (pass < 0 || pass > 9)
        return NULL;
    snode *spec = mk(d, k);
    if (serialized)
        add(d, spec, mk(d, SK_IsSerialized));
    if (async_removed)
        add(d, spec, mk(d, SK_AsyncRemoved));
    add(d, spec, mk_idx(d, SK_SpecializationPassID, (uint64_t)pass));
    return spec;
}

static snode *generic_specialization(dm *d, snode_kind k, snode *dropped)
{
    snode *spec = spec_attributes(d, k);
    if (!spec)
        return NULL;
    for (uint32_t i = 0; dropped && i < dropped->n; i++)
        add(d, spec, dropped->kids[i]);
    snode *list = pop_type_list(d);
    if (!list)
        return NULL;
    for (uint32_t i = 0; i < list->n; i++)
        add(d, spec, mk1(d, SK_GenericSpecializationParam, list->kids[i]));
    return spec;
}

/* "Tt..." lists arguments the specialization dropped before 'g', 'G' or 'B'. */
static snode *specialization_with_dropped_args(dm *d)
{
    snode *dropped = mk(d, SK_GenericSpecialization);
    while (next_if(d, 't')) {
        int n = natural(d);
        add(d, dropped, mk_idx(d, SK_DroppedArgument, n >= 0 ? (uint64_t)n + 1 : 0));
    }
    snode_kind k;
    switch (next(d)) {
    case 'g': k = SK_GenericSpecialization; break;
    case 'G': k = SK_GenericSpecializationNotReAbstracted; break;
    case 'B': k = SK_GenericSpecializationInResilienceDomain; break;
    default: return NULL;
    }
    return generic_specialization(d, k, dropped);
}

/* Values of Swift's FunctionSigSpecializationParamKind. */
enum {
    FSK_CONST_FUNCTION = 0, FSK_CONST_GLOBAL = 1, FSK_CONST_INTEGER = 2, FSK_CONST_FLOAT = 3,
    FSK_CONST_STRING = 4, FSK_CLOSURE = 5, FSK_BOX_TO_VALUE = 6, FSK_BOX_TO_STACK = 7,
    FSK_INOUT_TO_OUT = 8, FSK_CONST_KEYPATH = 9, FSK_DEAD = 1 << 6,
    FSK_OWNED_TO_GUARANTEED = 1 << 7, FSK_SROA = 1 << 8, FSK_GUARANTEED_TO_OWNED = 1 << 9,
    FSK_EXISTENTIAL_TO_GENERIC = 1 << 10,
};

static snode *spec_param_kind(dm *d, snode *param, unsigned kind)
{
    return add(d, param, mk_idx(d, SK_FunctionSignatureSpecializationParamKind, kind));
}

/* A propagated integer or float constant, its digits as the payload. */
static snode *spec_param_number(dm *d, snode *param, unsigned kind)
{
    spec_param_kind(d, param, kind);
    size_t start = d->pos;
    while (sw_digit(peek(d)))
        d->pos++;
    if (d->pos == start)
        return NULL;
    return add(d, param, snode_text(d->a, SK_FunctionSignatureSpecializationParamPayload,
                                    d->s + start, d->pos - start));
}

/* Option letters that may follow a parameter's first letter, in order. */
static unsigned spec_param_options(dm *d, unsigned value, const char *letters)
{
    for (; *letters; letters++) {
        if (!next_if(d, *letters))
            continue;
        switch (*letters) {
        case 'D': value |= FSK_DEAD; break;
        case 'G': value |= FSK_OWNED_TO_GUARANTEED; break;
        case 'O': value |= FSK_GUARANTEED_TO_OWNED; break;
        default: value |= FSK_SROA; break; /* 'X' */
        }
    }
    return value;
}

static snode *spec_param(dm *d, snode_kind k)
{
    snode *param = mk(d, k);
    switch (next(d)) {
    case 'n':
        return param;
    case 'c':
        return spec_param_kind(d, param, FSK_CLOSURE);
    case 'p':
        switch (next(d)) {
        case 'f': return spec_param_kind(d, param, FSK_CONST_FUNCTION);
        case 'g': return spec_param_kind(d, param, FSK_CONST_GLOBAL);
        case 'k': return spec_param_kind(d, param, FSK_CONST_KEYPATH);
        case 'i':
            return spec_param_number(d, param, FSK_CONST_INTEGER);
        case 'd':
            return spec_param_number(d, param, FSK_CONST_FLOAT);
        case 's': {
            const char *enc;
            switch (next(d)) {
            case 'b': enc = "u8"; break;
            case 'w': enc = "u16"; break;
            case 'c': enc = "objc"; break;
            default: return NULL;
            }
            spec_param_kind(d, param, FSK_CONST_STRING);
            return add(d, param, mk_str(d, SK_FunctionSignatureSpecializationParamPayload, enc));
        }
        default:
            return NULL;
        }
    case 'e':
        return spec_param_kind(d, param, spec_param_options(d, FSK_EXISTENTIAL_TO_GENERIC, "DGOX"));
    case 'd':
        return spec_param_kind(d, param, spec_param_options(d, FSK_DEAD, "GOX"));
    case 'g':
        return spec_param_kind(d, param, spec_param_options(d, FSK_OWNED_TO_GUARANTEED, "X"));
    case 'o':
        return spec_param_kind(d, param, spec_param_options(d, FSK_GUARANTEED_TO_OWNED, "X"));
    case 'x': return spec_param_kind(d, param, FSK_SROA);
    case 'i': return spec_param_kind(d, param, FSK_BOX_TO_VALUE);
    case 's': return spec_param_kind(d, param, FSK_BOX_TO_STACK);
    case 'r': return spec_param_kind(d, param, FSK_INOUT_TO_OUT);
    default: return NULL;
    }
}

/* Gives the parameters that propagate a constant or a closure their
 * operands (an identifier, and for closures and key paths types), which
 * were mangled before "Tf". */
static bool spec_param_operands(dm *d, snode *param)
{
    if (param->kind != SK_FunctionSignatureSpecializationParam || param->n == 0)
        return true;
    unsigned kind = (unsigned)param->kids[0]->v.index;
    if (kind != FSK_CONST_FUNCTION && kind != FSK_CONST_GLOBAL && kind != FSK_CONST_STRING &&
        kind != FSK_CONST_KEYPATH && kind != FSK_CLOSURE)
        return true;
    uint32_t fixed = param->n;
    snode *ty;
    while ((ty = pop_kind(d, SK_Type))) {
        if (kind != FSK_CLOSURE && kind != FSK_CONST_KEYPATH)
            return false;
        add(d, param, ty);
    }
    snode *name = pop_kind(d, SK_Identifier);
    if (!name)
        return false;
    const char *text = name->v.text.p;
    size_t len = name->v.text.len;
    /* A '_' escapes a string constant's leading digit or '_'. */
    if (kind == FSK_CONST_STRING && len && text[0] == '_')
        text++, len--;
    add(d, param, snode_text(d->a, SK_FunctionSignatureSpecializationParamPayload, text, len));
    snode_reverse(param, fixed);
    return true;
}

static snode *function_specialization(dm *d)
{
    snode *spec = spec_attributes(d, SK_FunctionSignatureSpecialization);
    while (spec && !next_if(d, '_'))
        spec = add(d, spec, spec_param(d, SK_FunctionSignatureSpecializationParam));
    if (!next_if(d, 'n'))
        spec = add(d, spec, spec_param(d, SK_FunctionSignatureSpecializationReturn));
    if (!spec)
        return NULL;
    for (uint32_t i = spec->n; i-- > 0;)
        if (!spec_param_operands(d, spec->kids[i]))
            return NULL;
    return spec;
}

/* "Tn"/"TN": the subject of an associated conformance, a generic parameter
 * or a path of associated types. */
static snode *pop_assoc_conformance_subject(dm *d)
{
    snode *ty = pop_kind(d, SK_Type);
    if (ty) {
        if (snode_kid_kind(ty, 0) == SK_DependentGenericParamType)
            return ty;
        push(d, ty);
    }
    return pop_assoc_type_path(d);
}

static snode *key_path_thunk(dm *d, char c)
{
    snode_kind k = next_if_str(d, "mu")   ? SK_KeyPathUnappliedMethodThunkHelper
                   : next_if_str(d, "MA") ? SK_KeyPathAppliedMethodThunkHelper
                   : c == 'K'             ? SK_KeyPathGetterThunkHelper
                                          : SK_KeyPathSetterThunkHelper;
    bool serialized = next_if(d, 'q');
    snode *types = mk(d, SK_TypeList); /* scratch: the types, last first */
    snode *node = pop(d);
    if (!types || !node || node->kind != SK_Type)
        return NULL;
    do {
        add(d, types, node);
        node = pop(d);
    } while (node && node->kind == SK_Type);
    if (!node)
        return NULL;
    snode *result;
    if (node->kind == SK_DependentGenericSignature) {
        snode *decl = pop(d);
        if (!decl)
            return NULL;
        result = mk2(d, k, decl, node);
    } else {
        result = mk1(d, k, node);
    }
    for (uint32_t i = types->n; i-- > 0;)
        add(d, result, types->kids[i]);
    if (serialized)
        add(d, result, mk(d, SK_IsSerialized));
    return result;
}

static snode *key_path_index_thunk(dm *d, snode_kind k)
{
    bool serialized = next_if(d, 'q');
    snode *sig = NULL, *types = mk(d, SK_TypeList); /* scratch, last first */
    snode *node = pop(d);
    if (!types || !node)
        return NULL;
    if (node->kind == SK_DependentGenericSignature)
        sig = node;
    else if (node->kind == SK_Type)
        add(d, types, node);
    else
        return NULL;
    while ((node = pop(d))) {
        if (node->kind != SK_Type)
            return NULL;
        add(d, types, node);
    }
    snode *result = mk(d, k);
    for (uint32_t i = types->n; i-- > 0;)
        add(d, result, types->kids[i]);
    add(d, result, sig);
    if (serialized)
        add(d, result, mk(d, SK_IsSerialized));
    return result;
}

/* ---- automatic differentiation ---- */

static snode *index_subset(dm *d)
{
    size_t start = d->pos;
    while (peek(d) == 'S' || peek(d) == 'U')
        d->pos++;
    if (d->pos == start)
        return NULL;
    return snode_text(d->a, SK_IndexSubset, d->s + start, d->pos - start);
}

static snode *autodiff_kind(dm *d)
{
    char c = next(d);
    if (c != 'f' && c != 'r' && c != 'd' && c != 'p')
        return NULL;
    return mk_idx(d, SK_AutoDiffFunctionKind, (uint64_t)c);
}

/* Moves the whole stack, in order, under result. */
static snode *adopt_stack(dm *d, snode *result)
{
    snode *node;
    while ((node = pop(d)))
        result = add(d, result, node);
    snode_reverse(result, 0);
    return result;
}

/* Parameter and result index subsets: "<S|U>+ 'p' <S|U>+ 'r'". */
static snode *autodiff_subsets(dm *d, snode *result)
{
    result = add(d, result, index_subset(d));
    if (!next_if(d, 'p'))
        return NULL;
    result = add(d, result, index_subset(d));
    if (!next_if(d, 'r'))
        return NULL;
    return result;
}

static snode *autodiff_function(dm *d, snode_kind k)
{
    snode *result = adopt_stack(d, mk(d, k));
    result = add(d, result, autodiff_kind(d));
    return autodiff_subsets(d, result);
}

static snode *autodiff_subset_thunk(dm *d)
{
    snode *result = autodiff_function(d, SK_AutoDiffSubsetParametersThunk);
    result = add(d, result, index_subset(d));
    return next_if(d, 'P') ? result : NULL;
}

static snode *autodiff_reordering_thunk(dm *d)
{
    snode *result = mk(d, SK_AutoDiffSelfReorderingReabstractionThunk);
    add(d, result, pop_kind(d, SK_DependentGenericSignature));
    result = add(d, result, pop_kind(d, SK_Type));
    result = add(d, result, pop_kind(d, SK_Type));
    snode_reverse(result, 0);
    return add(d, result, autodiff_kind(d));
}

static int differentiability(char c)
{
    return c == 'f' || c == 'r' || c == 'd' || c == 'l' ? c : 0;
}

static snode *differentiability_witness(dm *d)
{
    snode *sig = pop_kind(d, SK_DependentGenericSignature);
    snode *result = adopt_stack(d, mk(d, SK_DifferentiabilityWitness));
    int kind = differentiability(next(d));
    if (!kind)
        return NULL;
    result = add(d, result, mk_idx(d, SK_Index, (uint64_t)kind));
    result = autodiff_subsets(d, result);
    add(d, result, sig);
    return result;
}

/* ---- thunks and specializations, dispatched ---- */

static snode *bridged_method(dm *d)
{
    size_t start = d->pos;
    if (next_if(d, '_'))
        return NULL;
    char kind = next(d);
    if (kind != 'o' && kind != 'p' && kind != 'a' && kind != 'm')
        return NULL;
    size_t end;
    for (;;) {
        end = d->pos;
        if (next_if(d, '_'))
            break;
        char c = next(d);
        if (c != 'n' && c != 'b' && c != 'g')
            return NULL;
    }
    return snode_text(d->a, SK_OutlinedBridgedMethod, d->s + start, end - start);
}

static snode *reabstraction_thunk(dm *d, char c)
{
    snode_kind k = c == 'R'   ? SK_ReabstractionThunkHelper
                   : c == 'y' ? SK_ReabstractionThunkHelperWithSelf
                              : SK_ReabstractionThunk;
    snode *thunk = mk(d, k);
    snode *sig = pop_kind(d, SK_DependentGenericSignature);
    if (sig)
        add(d, thunk, sig);
    if (k == SK_ReabstractionThunkHelperWithSelf)
        add(d, thunk, pop_kind(d, SK_Type));
    add(d, thunk, pop_kind(d, SK_Type));
    add(d, thunk, pop_kind(d, SK_Type));
    return thunk;
}

static snode *completion_handler(dm *d, char c)
{
    snode *flag = index_node(d);
    snode *sig = pop_kind(d, SK_DependentGenericSignature);
    snode *result_type = pop_kind(d, SK_Type);
    snode *impl_type = pop_kind(d, SK_Type);
    snode *node = mk3(d, c == 'z' ? SK_ObjCAsyncCompletionHandlerImpl
                                 : SK_PredefinedObjCAsyncCompletionHandlerImpl,
                      impl_type, result_type, flag);
    if (sig)
        add(d, node, sig);
    return node;
}

static snode *demangle_thunk(dm *d)
{
    /* 'T' and a letter that marks the global it follows. */
    static const struct {
        char code;
        snode_kind kind;
    } marks[] = {
        {'o', SK_ObjCAttribute}, {'O', SK_NonObjCAttribute}, {'D', SK_DynamicAttribute},
        {'d', SK_DirectMethodReferenceAttribute}, {'E', SK_DistributedThunk},
        {'F', SK_DistributedAccessor}, {'a', SK_PartialApplyObjCForwarder},
        {'A', SK_PartialApplyForwarder}, {'m', SK_MergedFunction},
        {'X', SK_DynamicallyReplaceableFunctionVar}, {'x', SK_DynamicallyReplaceableFunctionKey},
        {'I', SK_DynamicallyReplaceableFunctionImpl}, {'u', SK_AsyncFunctionPointer},
    };
    /* 'T' and a letter that wraps the entity before it. */
    static const struct {
        char code;
        snode_kind kind;
    } wraps[] = {
        {'c', SK_CurryThunk}, {'j', SK_DispatchThunk}, {'q', SK_MethodDescriptor},
        {'S', SK_ProtocolSelfConformanceWitness},
    };
    char c = next(d);
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (marks[i].code == c)
            return mk(d, marks[i].kind);
    for (size_t i = 0; i < sizeof wraps / sizeof wraps[0]; i++)
        if (wraps[i].code == c)
            return mk1(d, wraps[i].kind, pop_if(d, is_entity));
    switch (c) {
    case 'T':
        return next(d) == 'I' ? mk1(d, SK_SILThunkIdentity, pop_if(d, is_entity)) : NULL;
    case 'Y':
    case 'Q':
        return mk1(
            d, c == 'Q' ? SK_AsyncAwaitResumePartialFunction : SK_AsyncSuspendResumePartialFunction,
            index_node(d));
    case 'C':
        return popped_type(d, SK_CoroutineContinuationPrototype);
    case 'z':
    case 'Z':
        return completion_handler(d, c);
    case 'V': {
        snode *base = pop_if(d, is_entity);
        snode *derived = pop_if(d, is_entity);
        return mk2(d, SK_VTableThunk, derived, base);
    }
    case 'W': {
        snode *entity = pop_if(d, is_entity);
        snode *conf = pop_conformance(d);
        return mk2(d, SK_ProtocolWitness, conf, entity);
    }
    case 'R':
    case 'r':
    case 'y':
        return reabstraction_thunk(d, c);
    case 'g': return generic_specialization(d, SK_GenericSpecialization, NULL);
    case 'G': return generic_specialization(d, SK_GenericSpecializationNotReAbstracted, NULL);
    case 'B': return generic_specialization(d, SK_GenericSpecializationInResilienceDomain, NULL);
    case 's': return generic_specialization(d, SK_GenericSpecializationPrespecialized, NULL);
    case 'i': return generic_specialization(d, SK_InlinedGenericFunction, NULL);
    case 't':
        push_back(d);
        return specialization_with_dropped_args(d);
    case 'p':
    case 'P': {
        snode *spec = spec_attributes(d, c == 'p' ? SK_GenericPartialSpecialization
                                                  : SK_GenericPartialSpecializationNotReAbstracted);
        return add(d, spec, mk1(d, SK_GenericSpecializationParam, pop_kind(d, SK_Type)));
    }
    case 'f':
        return function_specialization(d);
    case 'K':
    case 'k':
        return key_path_thunk(d, c);
    case 'H':
    case 'h':
        return key_path_index_thunk(d, c == 'H' ? SK_KeyPathEqualsThunkHelper
                                                : SK_KeyPathHashThunkHelper);
    case 'l':
        return mk1(d, SK_AssociatedTypeDescriptor, pop_assoc_type_name(d));
    case 'L':
        return mk1(d, SK_ProtocolRequirementsBaseDescriptor, pop_protocol(d));
    case 'M':
        return mk1(d, SK_DefaultAssociatedTypeMetadataAccessor, pop_assoc_type_name(d));
    case 'n':
    case 'N': {
        snode *req = pop_protocol(d);
        snode *subject = pop_assoc_conformance_subject(d);
        snode *proto = pop_kind(d, SK_Type);
        return mk3(d,
                   c == 'n' ? SK_AssociatedConformanceDescriptor
                            : SK_DefaultAssociatedConformanceAccessor,
                   proto, subject, req);
    }
    case 'b': {
        snode *req = pop_protocol(d);
        snode *proto = pop_kind(d, SK_Type);
        return mk2(d, SK_BaseConformanceDescriptor, proto, req);
    }
    case 'v': {
        int i = index_(d);
        if (i < 0)
            return NULL;
        /* Swift reads the next byte whatever it is. */
        return mk_idx(d, next(d) == 'r' ? SK_OutlinedReadOnlyObject : SK_OutlinedVariable,
                      (uint64_t)i);
    }
    case 'e':
        return bridged_method(d);
    case 'U': {
        snode *actor = pop_kind(d, SK_Type);
        snode *thunk = actor ? pop(d) : NULL;
        return mk2(d, SK_ReabstractionThunkHelperWithGlobalActor, thunk, actor);
    }
    case 'J':
        switch (peek(d)) {
        case 'S': next(d); return autodiff_subset_thunk(d);
        case 'O': next(d); return autodiff_reordering_thunk(d);
        case 'V': next(d); return autodiff_function(d, SK_AutoDiffDerivativeVTableThunk);
        default: return autodiff_function(d, SK_AutoDiffFunction);
        }
    case 'w':
        switch (next(d)) {
        case 'b': return mk(d, SK_BackDeploymentThunk);
        case 'B': return mk(d, SK_BackDeploymentFallback);
        case 'c': return mk(d, SK_CoroFunctionPointer);
        case 'd': return mk(d, SK_DefaultOverride);
        case 'S': return mk(d, SK_HasSymbolQuery);
        default: return NULL;
        }
    default:
        return NULL;
    }
}

/* ---- witnesses ('W') ---- */

static snode *outlined_operation(dm *d)
{
    static const struct {
        char code;
        snode_kind kind;
    } table[] = {
        {'y', SK_OutlinedCopy}, {'e', SK_OutlinedConsume}, {'r', SK_OutlinedRetain},
        {'s', SK_OutlinedRelease}, {'b', SK_OutlinedInitializeWithTake},
        {'c', SK_OutlinedInitializeWithCopy}, {'d', SK_OutlinedAssignWithTake},
        {'f', SK_OutlinedAssignWithCopy}, {'h', SK_OutlinedDestroy},
        {'B', SK_OutlinedInitializeWithTakeNoValueWitness},
        {'C', SK_OutlinedInitializeWithCopyNoValueWitness},
        {'D', SK_OutlinedAssignWithTakeNoValueWitness},
        {'F', SK_OutlinedAssignWithCopyNoValueWitness}, {'H', SK_OutlinedDestroyNoValueWitness},
        {'g', SK_OutlinedEnumGetTag}, {'i', SK_OutlinedEnumTagStore},
        {'j', SK_OutlinedEnumProjectDataForLoad},
    };
    char c = next(d);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (table[i].code != c)
            continue;
        snode *sig = pop_kind(d, SK_DependentGenericSignature);
        snode *type = pop_kind(d, SK_Type);
        snode *node = sig ? mk2(d, table[i].kind, type, sig) : mk1(d, table[i].kind, type);
        if (c == 'i' || c == 'j')
            node = add(d, node, index_node(d));
        return node;
    }
    return NULL;
}

static snode *global_once(dm *d, snode_kind k)
{
    snode *list = mk(d, SK_GlobalVariableOnceDeclList);
    while (pop_kind(d, SK_FirstElementMarker)) {
        snode *name = pop_if(d, is_decl_name);
        if (!name || !add(d, list, name))
            return NULL;
    }
    snode_reverse(list, 0);
    snode *ctx = pop_context(d);
    return mk2(d, k, ctx, list);
}

static snode *demangle_witness(dm *d)
{
    char c = next(d);
    switch (c) {
    case 'C': return mk1(d, SK_EnumCase, pop_if(d, is_entity));
    case 'V': return popped_type(d, SK_ValueWitnessTable);
    case 'v': {
        char dir = next(d);
        if (dir != 'd' && dir != 'i')
            return NULL;
        return mk2(d, SK_FieldOffset, mk_idx(d, SK_Directness, dir == 'd' ? 0 : 1),
                   pop_if(d, is_entity));
    }
    case 'S': return mk1(d, SK_ProtocolSelfConformanceWitnessTable, pop_protocol(d));
    case 'P': return mk1(d, SK_ProtocolWitnessTable, pop_conformance(d));
    case 'p': return mk1(d, SK_ProtocolWitnessTablePattern, pop_conformance(d));
    case 'G': return mk1(d, SK_GenericProtocolWitnessTable, pop_conformance(d));
    case 'I':
        return mk1(d, SK_GenericProtocolWitnessTableInstantiationFunction, pop_conformance(d));
    case 'r': return mk1(d, SK_ResilientProtocolWitnessTable, pop_conformance(d));
    case 'a': return mk1(d, SK_ProtocolWitnessTableAccessor, pop_conformance(d));
    case 'l':
    case 'L': {
        snode *conf = pop_conformance(d);
        snode *type = pop_kind(d, SK_Type);
        return mk2(d,
                   c == 'l' ? SK_LazyProtocolWitnessTableAccessor
                            : SK_LazyProtocolWitnessTableCacheVariable,
                   type, conf);
    }
    case 't': {
        snode *name = pop_if(d, is_decl_name);
        snode *conf = pop_conformance(d);
        return mk2(d, SK_AssociatedTypeMetadataAccessor, conf, name);
    }
    case 'T': {
        snode *proto = pop_kind(d, SK_Type);
        snode *path = pop_assoc_type_path(d);
        snode *conf = pop_conformance(d);
        return mk3(d, SK_AssociatedTypeWitnessTableAccessor, conf, path, proto);
    }
    case 'b': {
        snode *proto = pop_kind(d, SK_Type);
        snode *conf = pop_conformance(d);
        return mk2(d, SK_BaseWitnessTableAccessor, conf, proto);
    }
    case 'O': return outlined_operation(d);
    case 'Z': return global_once(d, SK_GlobalVariableOnceFunction);
    case 'z': return global_once(d, SK_GlobalVariableOnceToken);
    case 'J': return differentiability_witness(d);
    default: return NULL;
    }
}

/* ---- special types ('X') ---- */

static snode *metatype_representation(dm *d)
{
    switch (next(d)) {
    case 't': return mk_str(d, SK_MetatypeRepresentation, "@thin");
    case 'T': return mk_str(d, SK_MetatypeRepresentation, "@thick");
    case 'o': return mk_str(d, SK_MetatypeRepresentation, "@objc_metatype");
    default: return NULL;
    }
}

static snode *pop_protocol_list(dm *d)
{
    snode *list = pop_list(d, SK_TypeList, pop_protocol);
    return mk1(d, SK_ProtocolList, list);
}

static snode *pop_requirement(dm *d)
{
    return pop_if(d, is_requirement);
}

static snode *sil_box_type(dm *d, bool generic)
{
    snode *sig = NULL, *args = NULL;
    if (generic) {
        sig = pop_kind(d, SK_DependentGenericSignature);
        if (!sig || !(args = pop_type_list(d)))
            return NULL;
    }
    snode *fields = pop_type_list(d);
    if (!fields)
        return NULL;
    snode *layout = mk(d, SK_SILBoxLayout);
    for (uint32_t i = 0; i < fields->n; i++) {
        snode *ft = fields->kids[i];
        bool mutable_ = snode_kid_kind(ft, 0) == SK_InOut;
        if (mutable_)
            ft = mk_type(d, snode_kid(ft->kids[0], 0));
        add(d, layout, mk1(d, mutable_ ? SK_SILBoxMutableField : SK_SILBoxImmutableField, ft));
    }
    snode *box = mk1(d, SK_SILBoxTypeWithLayout, layout);
    if (sig) {
        add(d, box, sig);
        add(d, box, args);
    }
    return mk_type(d, box);
}

/* [key : value] and [count of element]: the second was pushed last. */
static snode *sugared_pair(dm *d, snode_kind k)
{
    snode *second = pop_kind(d, SK_Type);
    snode *first = pop_kind(d, SK_Type);
    return mk_type(d, mk2(d, k, first, second));
}

static snode *demangle_special_type(dm *d)
{
    static const struct {
        char code;
        snode_kind kind;
    } fns[] = {
        {'E', SK_NoEscapeFunctionType}, {'A', SK_EscapingAutoClosureType},
        {'f', SK_ThinFunctionType}, {'K', SK_AutoClosureType}, {'U', SK_UncurriedFunctionType},
        {'L', SK_EscapingObjCBlock}, {'B', SK_ObjCBlock}, {'C', SK_CFunctionPointer},
    }, wrapped[] = {
        {'o', SK_Unowned}, {'u', SK_Unmanaged}, {'w', SK_Weak}, {'b', SK_SILBoxType},
        {'D', SK_DynamicSelf}, {'p', SK_ExistentialMetatype},
    };
    char c = next(d);
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (fns[i].code == c)
            return pop_function_type(d, fns[i].kind, false);
    for (size_t i = 0; i < sizeof wrapped / sizeof wrapped[0]; i++)
        if (wrapped[i].code == c)
            return mk_type(d, mk1(d, wrapped[i].kind, pop_kind(d, SK_Type)));
    switch (c) {
    case 'g':
    case 'G': {
        snode *type = pop_kind(d, SK_Type);
        snode *sig = c == 'G' ? pop_kind(d, SK_DependentGenericSignature) : NULL;
        return sig ? mk2(d, SK_ExtendedExistentialTypeShape, sig, type)
                   : mk1(d, SK_ExtendedExistentialTypeShape, type);
    }
    case 'j': /* needs a symbolic reference to a shape, which names never carry here */
        return NULL;
    case 'z':
        switch (next(d)) {
        case 'B': return pop_function_type(d, SK_ObjCBlock, true);
        case 'C': return pop_function_type(d, SK_CFunctionPointer, true);
        default: return NULL;
        }
    case 'M':
    case 'm': {
        snode *repr = metatype_representation(d);
        snode *type = pop_kind(d, SK_Type);
        return mk_type(d, mk2(d, c == 'M' ? SK_Metatype : SK_ExistentialMetatype, repr, type));
    }
    case 'P': {
        snode *reqs = pop_list(d, SK_ConstrainedExistentialRequirementList, pop_requirement);
        /* Swift's list needs at least one requirement: 'y' is no list. */
        if (reqs && reqs->n == 0)
            return NULL;
        snode *base = pop_kind(d, SK_Type);
        return mk_type(d, mk2(d, SK_ConstrainedExistential, base, reqs));
    }
    case 'c': {
        snode *super = pop_kind(d, SK_Type);
        snode *protos = pop_protocol_list(d);
        return mk_type(d, mk2(d, SK_ProtocolListWithClass, protos, super));
    }
    case 'l':
        return mk_type(d, mk1(d, SK_ProtocolListWithAnyObject, pop_protocol_list(d)));
    case 'X':
    case 'x':
        return sil_box_type(d, c == 'X');
    case 'Y':
        return demangle_any_generic_type(d, SK_OtherNominalType);
    case 'Z': {
        snode *types = pop_type_list(d);
        snode *name = pop_kind(d, SK_Identifier);
        snode *parent = pop_context(d);
        snode *anon = mk(d, SK_AnonymousContext);
        anon = add(d, anon, name);
        anon = add(d, anon, parent);
        return add(d, anon, types);
    }
    case 'e':
        return mk_type(d, mk(d, SK_ErrorType));
    case 'S':
        switch (next(d)) {
        case 'q': return mk_type(d, mk1(d, SK_SugaredOptional, pop_kind(d, SK_Type)));
        case 'a': return mk_type(d, mk1(d, SK_SugaredArray, pop_kind(d, SK_Type)));
        case 'p': return mk_type(d, mk1(d, SK_SugaredParen, pop_kind(d, SK_Type)));
        case 'D':
            return sugared_pair(d, SK_SugaredDictionary);
        case 'A':
            return sugared_pair(d, SK_SugaredInlineArray);
        default: return NULL;
        }
    default:
        return NULL;
    }
}

/* ---- entities ---- */

static snode *demangle_accessor(dm *d, snode *child)
{
    static const struct {
        char code;
        snode_kind kind;
    } table[] = {
        {'m', SK_MaterializeForSet}, {'s', SK_Setter}, {'g', SK_Getter}, {'G', SK_GlobalGetter},
        {'w', SK_WillSet}, {'W', SK_DidSet}, {'r', SK_ReadAccessor}, {'M', SK_ModifyAccessor},
        {'i', SK_InitAccessor}, {'x', SK_Modify2Accessor}, {'y', SK_Read2Accessor},
    };
    char c = next(d);
    if (c == 'p') /* the variable or subscript itself */
        return child;
    if (c == 'a' || c == 'l') {
        bool mut = c == 'a';
        snode_kind k;
        switch (next(d)) {
        case 'O': k = mut ? SK_OwningMutableAddressor : SK_OwningAddressor; break;
        case 'o': k = mut ? SK_NativeOwningMutableAddressor : SK_NativeOwningAddressor; break;
        case 'P':
            if (!mut)
                return NULL;
            k = SK_NativePinningMutableAddressor;
            break;
        case 'p':
            if (mut)
                return NULL;
            k = SK_NativePinningAddressor;
            break;
        case 'u': k = mut ? SK_UnsafeMutableAddressor : SK_UnsafeAddressor; break;
        default: return NULL;
        }
        return mk1(d, k, child);
    }
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].code == c)
            return mk1(d, table[i].kind, child);
    return NULL;
}

static snode *demangle_entity(dm *d, snode_kind k)
{
    snode *type = pop_kind(d, SK_Type);
    snode *labels = pop_function_param_labels(d, type);
    snode *name = pop_if(d, is_decl_name);
    snode *ctx = pop_context(d);
    return labels ? mk4(d, k, ctx, name, labels, type) : mk3(d, k, ctx, name, type);
}

static snode *demangle_subscript(dm *d)
{
    snode *priv = pop_kind(d, SK_PrivateDeclName);
    snode *type = pop_kind(d, SK_Type);
    snode *labels = pop_function_param_labels(d, type);
    snode *ctx = pop_context(d);
    if (!type)
        return NULL;
    snode *sub = add(d, mk(d, SK_Subscript), ctx);
    add(d, sub, labels);
    sub = add(d, sub, type);
    add(d, sub, priv);
    return demangle_accessor(d, sub);
}

static snode *demangle_macro_expansion(dm *d)
{
    static const struct {
        char code;
        snode_kind kind;
    } attached[] = {
        {'a', SK_AccessorAttachedMacroExpansion}, {'r', SK_MemberAttributeAttachedMacroExpansion},
        {'m', SK_MemberAttachedMacroExpansion}, {'p', SK_PeerAttachedMacroExpansion},
        {'c', SK_ConformanceAttachedMacroExpansion}, {'e', SK_ExtensionAttachedMacroExpansion},
        {'b', SK_BodyAttachedMacroExpansion}, {'q', SK_PreambleAttachedMacroExpansion},
    };
    char c = next(d);
    if (c == 'X') { /* where an expansion is: module, file, line, column */
        int line = index_(d);
        int column = index_(d);
        snode *file = pop_kind(d, SK_Identifier);
        snode *module = pop_kind(d, SK_Identifier);
        if (line < 0 || column < 0)
            return NULL;
        return mk4(d, SK_MacroExpansionLoc, module, file, mk_idx(d, SK_Index, (uint64_t)line),
                   mk_idx(d, SK_Index, (uint64_t)column));
    }
    snode_kind k = SK__COUNT;
    bool is_attached = false;
    for (size_t i = 0; i < sizeof attached / sizeof attached[0]; i++)
        if (attached[i].code == c) {
            k = attached[i].kind;
            is_attached = true;
        }
    if (c == 'f')
        k = SK_FreestandingMacroExpansion;
    else if (c == 'u')
        k = SK_MacroExpansionUniqueName;
    if (k == SK__COUNT)
        return NULL;
    snode *macro = pop_kind(d, SK_Identifier);
    snode *priv = c == 'f' ? pop_kind(d, SK_PrivateDeclName) : NULL;
    snode *attached_to = is_attached ? pop_if(d, is_decl_name) : NULL;
    snode *ctx = pop_if(d, is_macro_expansion);
    if (!ctx)
        ctx = pop_context(d);
    snode *disc = index_node(d);
    snode *result =
        is_attached ? mk4(d, k, ctx, attached_to, macro, disc) : mk3(d, k, ctx, macro, disc);
    if (priv)
        add(d, result, priv);
    return result;
}

static snode *demangle_function_entity(dm *d)
{
    enum { NONE, TYPE_AND_PRIVATE_NAME, TYPE_AND_INDEX, INDEX } args = NONE;
    snode_kind k;
    switch (next(d)) {
    case 'D': k = SK_Deallocator; break;
    case 'd': k = SK_Destructor; break;
    case 'Z': k = SK_IsolatedDeallocator; break;
    case 'E': k = SK_IVarDestroyer; break;
    case 'e': k = SK_IVarInitializer; break;
    case 'i': k = SK_Initializer; break;
    case 'C': k = SK_Allocator; args = TYPE_AND_PRIVATE_NAME; break;
    case 'c': k = SK_Constructor; args = TYPE_AND_PRIVATE_NAME; break;
    case 'U': k = SK_ExplicitClosure; args = TYPE_AND_INDEX; break;
    case 'u': k = SK_ImplicitClosure; args = TYPE_AND_INDEX; break;
    case 'A': k = SK_DefaultArgumentInitializer; args = INDEX; break;
    case 'P': k = SK_PropertyWrapperBackingInitializer; break;
    case 'W': k = SK_PropertyWrapperInitFromProjectedValue; break;
    case 'm': return demangle_entity(d, SK_Macro);
    case 'M': return demangle_macro_expansion(d);
    case 'p': return demangle_entity(d, SK_GenericTypeParamDecl);
    default: return NULL;
    }
    snode *name_or_index = NULL, *type = NULL, *labels = NULL;
    switch (args) {
    case TYPE_AND_PRIVATE_NAME:
        name_or_index = pop_kind(d, SK_PrivateDeclName);
        type = pop_kind(d, SK_Type);
        labels = pop_function_param_labels(d, type);
        break;
    case TYPE_AND_INDEX:
        name_or_index = index_node(d);
        type = pop_kind(d, SK_Type);
        break;
    case INDEX:
        name_or_index = index_node(d);
        break;
    default:
        break;
    }
    snode *entity = mk1(d, k, pop_context(d));
    switch (args) {
    case INDEX:
        return add(d, entity, name_or_index);
    case TYPE_AND_PRIVATE_NAME:
        add(d, entity, labels);
        entity = add(d, entity, type);
        add(d, entity, name_or_index);
        return entity;
    case TYPE_AND_INDEX:
        entity = add(d, entity, name_or_index);
        return add(d, entity, type);
    default:
        return entity;
    }
}

/* ---- small productions ---- */

static snode *demangle_type_annotation(dm *d)
{
    switch (next(d)) {
    case 'a': return mk(d, SK_AsyncAnnotation);
    case 'A': return mk(d, SK_IsolatedAnyFunctionType);
    case 'b': return mk(d, SK_ConcurrentFunctionType);
    case 'c': return mk1(d, SK_GlobalActorFunctionType, pop_type_child(d));
    case 'i': return mk_type(d, mk1(d, SK_Isolated, pop_type_child(d)));
    case 'j': {
        int kind = differentiability(next(d));
        return kind ? mk_idx(d, SK_DifferentiableFunctionType, (uint64_t)kind) : NULL;
    }
    case 'k': return mk_type(d, mk1(d, SK_NoDerivative, pop_type_child(d)));
    case 'K': return mk1(d, SK_TypedThrowsAnnotation, pop_type_child(d));
    case 't': return mk_type(d, mk1(d, SK_CompileTimeLiteral, pop_type_child(d)));
    case 'T': return mk(d, SK_SendingResultFunctionType);
    case 'u': return mk_type(d, mk1(d, SK_Sending, pop_type_child(d)));
    case 'C': return mk(d, SK_NonIsolatedCallerFunctionType);
    case 'g': return mk_type(d, mk1(d, SK_ConstValue, pop_type_child(d)));
    default: return NULL;
    }
}

/* Swift's ValueWitnessMangling.def, in the order of ValueWitnessKind. */
static const char value_witness_codes[][3] = {
    "al", "ca", "ta", "de", "xx", "XX", "Xx", "CP", "Cp", "cp", "Tk", "tk",
    "pr", "TK", "Cc", "Tt", "tT", "xs", "xg", "ug", "up", "ui", "et", "st",
};

static snode *demangle_value_witness(dm *d)
{
    char code[2] = {next(d), next(d)};
    for (size_t i = 0; i < sizeof value_witness_codes / sizeof value_witness_codes[0]; i++) {
        if (code[0] == value_witness_codes[i][0] && code[1] == value_witness_codes[i][1]) {
            snode *vw = mk(d, SK_ValueWitness);
            add(d, vw, mk_idx(d, SK_Index, i));
            return add(d, vw, pop_kind(d, SK_Type));
        }
    }
    return NULL;
}

static snode *demangle_integer(dm *d)
{
    bool negative = next_if(d, 'n');
    int value = index_(d);
    if (value < 0)
        return NULL;
    if (negative)
        return mk_type(d, mk_idx(d, SK_NegativeInteger, (uint64_t)(-(int64_t)value)));
    return mk_type(d, mk_idx(d, SK_Integer, (uint64_t)value));
}

static snode *demangle_operator(dm *d)
{
    char c = next(d);
    switch (c) {
    case 'A': return demangle_multi_substitutions(d);
    case 'B': return demangle_builtin_type(d);
    case 'C': return demangle_any_generic_type(d, SK_Class);
    case 'D': return demangle_type_mangling(d);
    case 'E': return demangle_extension_context(d);
    case 'F': return demangle_plain_function(d);
    case 'G': return demangle_bound_generic_type(d);
    case 'H': {
        char c2 = next(d);
        if (c2 && strchr("ACDIOPpXcnorF", c2))
            return demangle_conformance_op(d, c2);
        /* Swift steps back two bytes (however many it read) and tries an
         * identifier there. */
        push_back(d);
        push_back(d);
        return demangle_identifier(d);
    }
    case 'I': return demangle_impl_function_type(d);
    case 'K': return mk(d, SK_ThrowsAnnotation);
    case 'L': return demangle_local_identifier(d);
    case 'M': return demangle_metatype(d);
    case 'N': return popped_type(d, SK_TypeMetadata);
    case 'O': return demangle_any_generic_type(d, SK_Enum);
    case 'P': return demangle_any_generic_type(d, SK_Protocol);
    case 'Q': return demangle_archetype(d);
    case 'R': return demangle_generic_requirement(d);
    case 'S': return demangle_standard_substitution(d);
    case 'T': return demangle_thunk(d);
    case 'V': return demangle_any_generic_type(d, SK_Structure);
    case 'W': return demangle_witness(d);
    case 'X': return demangle_special_type(d);
    case 'Y': return demangle_type_annotation(d);
    case 'Z': return mk1(d, SK_Static, pop_if(d, is_entity));
    case 'a': return demangle_any_generic_type(d, SK_TypeAlias);
    case 'c': return pop_function_type(d, SK_FunctionType, false);
    case 'd': return mk(d, SK_VariadicMarker);
    case 'f': return demangle_function_entity(d);
    case 'g': {
        snode *index = index_node(d);
        snode *conf = pop_any_conformance(d);
        return mk2(d, SK_RetroactiveConformance, index, conf);
    }
    case 'h': return mk_type(d, mk1(d, SK_Shared, pop_type_child(d)));
    case 'i': return demangle_subscript(d);
    case 'l': return demangle_generic_signature(d, false);
    case 'm': return mk_type(d, mk1(d, SK_Metatype, pop_kind(d, SK_Type)));
    case 'n': return mk_type(d, mk1(d, SK_Owned, pop_type_child(d)));
    case 'o': return demangle_operator_identifier(d);
    case 'p': return mk_type(d, pop_protocol_list(d));
    case 'q': return mk_type(d, generic_param_index(d));
    case 'r': return demangle_generic_signature(d, true);
    case 's': return mk_str(d, SK_Module, "Swift");
    case 't': return pop_tuple(d);
    case 'u': {
        snode *sig = pop_kind(d, SK_DependentGenericSignature);
        snode *ty = pop_kind(d, SK_Type);
        return mk_type(d, mk2(d, SK_DependentGenericType, sig, ty));
    }
    case 'v': return demangle_accessor(d, demangle_entity(d, SK_Variable));
    case 'w': return demangle_value_witness(d);
    case 'x': return mk_type(d, dependent_param(d, 0, 0));
    case 'y': return mk(d, SK_EmptyList);
    case 'z': return mk_type(d, mk1(d, SK_InOut, pop_type_child(d)));
    case '_': return mk(d, SK_FirstElementMarker);
    case '.': /* IRGen's ".<n>" (and LLVM's) suffixes: kept verbatim */
        push_back(d);
        {
            snode *sfx = snode_text(d->a, SK_Suffix, d->s + d->pos, d->n - d->pos);
            d->pos = d->n;
            return sfx;
        }
    case '$': return demangle_integer(d);
    default:
        push_back(d);
        return demangle_identifier(d);
    }
}

/* ---- the whole symbol ---- */

snode *swift_parse_new(sarena *a, const char *s, size_t n, size_t plen, bool old_labels,
                       bool async_main, int nest)
{
    dm d = {.a = a, .s = s, .n = n, .pos = plen, .old_labels = old_labels, .nest = nest};
    if (async_main)
        push(&d, mk(&d, SK_AsyncMainEntryPoint));
    while (d.pos < d.n) {
        snode *nd = demangle_operator(&d);
        if (!nd || a->failed)
            return NULL;
        push(&d, nd);
    }
    /* The suffix goes last, after the attributes hoisted out of the stack. */
    snode *suffix = pop_kind(&d, SK_Suffix);
    snode *top = mk(&d, SK_Global), *parent = top, *attr;
    while ((attr = pop_if(&d, is_function_attr))) {
        add(&d, parent, attr);
        if (attr->kind == SK_PartialApplyForwarder || attr->kind == SK_PartialApplyObjCForwarder)
            parent = attr;
    }
    for (uint32_t i = 0; i < d.nstk; i++) {
        snode *nd = d.stk[i];
        add(&d, parent, nd->kind == SK_Type ? snode_kid(nd, 0) : nd);
    }
    if (suffix)
        add(&d, top, suffix);
    if (a->failed || !top || top->n == 0)
        return NULL;
    return top;
}

static bool starts(const char *s, size_t n, const char *p)
{
    size_t len = strlen(p);
    return n >= len && memcmp(s, p, len) == 0;
}

snode *swift_parse_symbol(sarena *a, const char *s, size_t n, int nest)
{
    static const char *const prefixes[] = {"_T0", "$S", "_$S", "$s", "_$s", "@__swiftmacro_",
                                           "$e",  "_$e"};
    if (nest > SWIFT_MAX_NEST)
        return NULL;
    if (starts(s, n, "_Tt"))
        return swift_parse_old(a, s, n);
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (starts(s, n, prefixes[i]))
            return swift_parse_new(a, s, n, strlen(prefixes[i]), starts(s, n, "_T"), false, nest);
    if (starts(s, n, "async_Main"))
        return swift_parse_new(a, s, n, 10, false, true, nest);
    if (starts(s, n, "_async_Main"))
        return swift_parse_new(a, s, n, 11, false, true, nest);
    return swift_parse_old(a, s, n);
}

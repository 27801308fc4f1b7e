/* Prints a demangled Swift node tree the way Swift's NodePrinter does, in
 * swift-demangle's full style or its -simplified style (Swift's
 * SimplifiedUIDemangleOptions). Output, depth and work are bounded; where
 * Swift's printer would give up or print a placeholder for a malformed
 * tree, this one fails instead. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "../util/metered.h" /* last: counts this file's allocations */

/* The printer steps one name may take: far above any real name (a few
 * hundred), low enough that a tree sharing subtrees exponentially (through
 * substitutions) stops within milliseconds. */
#define MAX_PRINT_STEPS (1u << 20)

/* Swift's DemangleOptions, the fields this printer reads. */
typedef struct {
    bool sugar;             /* SynthesizeSugarOnTypes */
    bool qualify;           /* QualifyEntities */
    bool ext_contexts;      /* DisplayExtensionContexts */
    bool unmangled_suffix;  /* DisplayUnmangledSuffix */
    bool module_names;      /* DisplayModuleNames */
    bool generic_specs;     /* DisplayGenericSpecializations */
    bool conformances;      /* DisplayProtocolConformances */
    bool where_clauses;     /* DisplayWhereClauses */
    bool entity_types;      /* DisplayEntityTypes */
    bool shorten_partial;   /* ShortenPartialApply */
    bool shorten_thunk;     /* ShortenThunk */
    bool shorten_witness;   /* ShortenValueWitness */
    bool discriminators;    /* ShowPrivateDiscriminators */
    bool arg_types;         /* ShowFunctionArgumentTypes */
    bool async_partial;     /* ShowAsyncResumePartial */
} popts;

/* What swift-demangle uses: the defaults, with sugar on. */
static const popts full_opts = {
    .sugar = true, .qualify = true, .ext_contexts = true, .unmangled_suffix = true,
    .module_names = true, .generic_specs = true, .conformances = true, .where_clauses = true,
    .entity_types = true, .discriminators = true, .arg_types = true, .async_partial = true,
};

/* Swift's DemangleOptions(): what names nested in names print with. */
static const popts default_opts = {
    .sugar = false, .qualify = true, .ext_contexts = true, .unmangled_suffix = true,
    .module_names = true, .generic_specs = true, .conformances = true, .where_clauses = true,
    .entity_types = true, .discriminators = true, .arg_types = true, .async_partial = true,
};

/* SimplifiedUIDemangleOptions. */
static const popts simplified_opts = {
    .sugar = true, .qualify = true, .shorten_partial = true, .shorten_thunk = true,
    .shorten_witness = true,
};

typedef struct {
    sarena *a;
    popts o;
    char *buf;
    size_t len, cap;
    bool invalid;      /* Swift would print nothing or a placeholder */
    bool fatal;        /* a bound was passed */
    bool spec_printed; /* "specialized " was printed (simplified style) */
    uint32_t steps;
    int nest;
} pr;

enum entity_type { NO_TYPE, WITH_COLON, FUNCTION_STYLE };

static const snode *print(pr *p, const snode *n, int depth, bool as_prefix);

/* ---- output ---- */

static void out_n(pr *p, const char *s, size_t n)
{
    if (p->fatal)
        return;
    if (n > p->cap - p->len) {
        p->fatal = true;
        return;
    }
    memcpy(p->buf + p->len, s, n);
    p->len += n;
}

static void out(pr *p, const char *s)
{
    out_n(p, s, strlen(s));
}

static void out_c(pr *p, char c)
{
    out_n(p, &c, 1);
}

static void out_text(pr *p, const snode *n)
{
    if (!n || n->payload != SP_TEXT) {
        p->invalid = true;
        return;
    }
    out_n(p, n->v.text.p, n->v.text.len);
}

static void out_u64(pr *p, uint64_t v)
{
    char b[24];
    out_n(p, b, (size_t)snprintf(b, sizeof b, "%llu", (unsigned long long)v));
}

static void out_i64(pr *p, int64_t v)
{
    char b[24];
    out_n(p, b, (size_t)snprintf(b, sizeof b, "%lld", (long long)v));
}

/* The index payload of n; invalid when n has none. */
static uint64_t idx(pr *p, const snode *n)
{
    if (!n || n->payload != SP_INDEX) {
        p->invalid = true;
        return 0;
    }
    return n->v.index;
}

/* Swift's QuotedString: backslash escapes, \xHH for control and high bytes. */
static void out_quoted(pr *p, const snode *n)
{
    static const char hex[] = "0123456789ABCDEF";
    out_c(p, '"');
    for (uint32_t i = 0; n && i < n->v.text.len; i++) {
        unsigned char c = (unsigned char)n->v.text.p[i];
        switch (c) {
        case '\\': out(p, "\\\\"); break;
        case '\t': out(p, "\\t"); break;
        case '\n': out(p, "\\n"); break;
        case '\r': out(p, "\\r"); break;
        case '"': out(p, "\\\""); break;
        case 0: out(p, "\\0"); break;
        default:
            if (c < 0x20 || c >= 0x7f) {
                char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
                out_n(p, e, 4);
            } else {
                out_c(p, (char)c);
            }
        }
    }
    out_c(p, '"');
}

/* Swift's genericParameterName: A..Z, then AB, BB, ...; depth appended. */
static void out_generic_name(pr *p, uint64_t depth, uint64_t index)
{
    char b[32];
    size_t n = 0;
    do {
        b[n++] = (char)('A' + index % 26);
        index /= 26;
    } while (index && n < 14);
    out_n(p, b, n);
    if (depth)
        out_u64(p, depth);
}

static void print_kids(pr *p, const snode *n, int depth, const char *sep)
{
    for (uint32_t i = 0; n && i < n->n; i++) {
        if (i && sep)
            out(p, sep);
        print(p, n->kids[i], depth + 1, false);
    }
}

static const snode *kid(pr *p, const snode *n, size_t i)
{
    const snode *k = snode_kid(n, i);
    if (!k)
        p->invalid = true; /* Swift would print "<null node pointer>" */
    return k;
}

/* ---- classifications ---- */

static bool is_simple_type(pr *p, const snode *n, int depth)
{
    if (!n || depth > SWIFT_MAX_DEPTH) {
        p->invalid = true;
        return true;
    }
    switch (n->kind) {
    case SK_AssociatedType: case SK_AssociatedTypeRef: case SK_BoundGenericClass:
    case SK_BoundGenericEnum: case SK_BoundGenericStructure: case SK_BoundGenericProtocol:
    case SK_BoundGenericOtherNominalType: case SK_BoundGenericTypeAlias:
    case SK_BoundGenericFunction: case SK_BuiltinTypeName: case SK_BuiltinTupleType:
    case SK_BuiltinFixedArray: case SK_Class: case SK_DependentGenericType:
    case SK_DependentMemberType: case SK_DependentGenericParamType: case SK_DynamicSelf:
    case SK_Enum: case SK_ErrorType: case SK_ExistentialMetatype: case SK_Metatype:
    case SK_MetatypeRepresentation: case SK_Module: case SK_Tuple: case SK_Pack:
    case SK_SILPackDirect: case SK_SILPackIndirect: case SK_ConstrainedExistentialRequirementList:
    case SK_ConstrainedExistentialSelf: case SK_Protocol: case SK_ProtocolSymbolicReference:
    case SK_ReturnType: case SK_SILBoxType: case SK_SILBoxTypeWithLayout: case SK_Structure:
    case SK_OtherNominalType: case SK_TupleElementName: case SK_TypeAlias: case SK_TypeList:
    case SK_LabelList: case SK_TypeSymbolicReference: case SK_SugaredOptional:
    case SK_SugaredArray: case SK_SugaredInlineArray: case SK_SugaredDictionary:
    case SK_SugaredParen: case SK_Integer: case SK_NegativeInteger:
        return true;
    case SK_Type:
        return is_simple_type(p, snode_kid(n, 0), depth + 1);
    case SK_ProtocolList:
        return snode_kid(n, 0) && n->kids[0]->n <= 1;
    case SK_ProtocolListWithAnyObject:
        return snode_kid(snode_kid(n, 0), 0) && n->kids[0]->kids[0]->n == 0;
    default:
        return false;
    }
}

static bool is_existential(const snode *n)
{
    return n->kind == SK_ExistentialMetatype || n->kind == SK_ProtocolList ||
           n->kind == SK_ProtocolListWithClass || n->kind == SK_ProtocolListWithAnyObject;
}

static bool need_space_before_type(const snode *n)
{
    while (n && n->kind == SK_Type)
        n = snode_kid(n, 0);
    if (!n)
        return true;
    switch (n->kind) {
    case SK_FunctionType: case SK_NoEscapeFunctionType: case SK_UncurriedFunctionType:
    case SK_DependentGenericType:
        return false;
    default:
        return true;
    }
}

/* Whether the context of an entity is printed at all. */
static bool print_context(pr *p, const snode *ctx)
{
    if (!p->o.qualify)
        return false;
    /* Modules are printed (when module names are) whatever their name:
     * swift-demangle hides no module. */
    (void)ctx;
    return true;
}

/* ---- bound generics and sugar ---- */

static void print_with_parens(pr *p, const snode *type, int depth)
{
    bool parens = !is_simple_type(p, type, 0);
    if (parens)
        out_c(p, '(');
    print(p, type, depth + 1, false);
    if (parens)
        out_c(p, ')');
}

static void print_bound_generic_no_sugar(pr *p, const snode *n, int depth)
{
    if (n->n < 2)
        return;
    print(p, n->kids[0], depth + 1, false);
    out_c(p, '<');
    print_kids(p, n->kids[1], depth, ", ");
    out_c(p, '>');
}

enum sugar { NO_SUGAR, OPTIONAL, IMPLICITLY_UNWRAPPED, ARRAY, DICTIONARY };

static bool text_is(const snode *n, snode_kind k, const char *s)
{
    return n && n->kind == k && snode_text_is(n, s);
}

static enum sugar find_sugar(const snode *n)
{
    if (n->n != 2 || (n->kind != SK_BoundGenericEnum && n->kind != SK_BoundGenericStructure))
        return NO_SUGAR;
    const snode *unbound = snode_kid(n->kids[0], 0), *args = n->kids[1];
    const snode *name = snode_kid(unbound, 1);
    if (!text_is(snode_kid(unbound, 0), SK_Module, "Swift"))
        return NO_SUGAR;
    if (n->kind == SK_BoundGenericEnum) {
        if (text_is(name, SK_Identifier, "Optional") && args->n == 1)
            return OPTIONAL;
        if (text_is(name, SK_Identifier, "ImplicitlyUnwrappedOptional") && args->n == 1)
            return IMPLICITLY_UNWRAPPED;
        return NO_SUGAR;
    }
    if (text_is(name, SK_Identifier, "Array") && args->n == 1)
        return ARRAY;
    if (text_is(name, SK_Identifier, "Dictionary") && args->n == 2)
        return DICTIONARY;
    return NO_SUGAR;
}

static void print_bound_generic(pr *p, const snode *n, int depth)
{
    if (n->n < 2)
        return;
    if (n->n != 2 || !p->o.sugar || n->kind == SK_BoundGenericClass) {
        print_bound_generic_no_sugar(p, n, depth);
        return;
    }
    if (n->kind == SK_BoundGenericProtocol) { /* the conforming type "as" the protocol */
        print_kids(p, n->kids[1], depth, NULL);
        out(p, " as ");
        print(p, n->kids[0], depth + 1, false);
        return;
    }
    const snode *args = n->kids[1];
    switch (find_sugar(n)) {
    case NO_SUGAR:
        print_bound_generic_no_sugar(p, n, depth);
        break;
    case OPTIONAL:
    case IMPLICITLY_UNWRAPPED:
        print_with_parens(p, args->kids[0], depth);
        out(p, find_sugar(n) == OPTIONAL ? "?" : "!");
        break;
    case ARRAY:
        out_c(p, '[');
        print(p, args->kids[0], depth + 1, false);
        out_c(p, ']');
        break;
    case DICTIONARY:
        out_c(p, '[');
        print(p, args->kids[0], depth + 1, false);
        out(p, " : ");
        print(p, args->kids[1], depth + 1, false);
        out_c(p, ']');
        break;
    }
}

/* ---- function types ---- */

static void print_function_parameters(pr *p, const snode *labels, const snode *args, int depth,
                                      bool show_types)
{
    if (!args || args->kind != SK_ArgumentTuple) {
        p->invalid = true;
        return;
    }
    const snode *params = snode_kid(kid(p, args, 0), 0);
    if (!params) {
        p->invalid = true;
        return;
    }
    if (params->kind != SK_Tuple) { /* one unnamed parameter */
        if (show_types) {
            out_c(p, '(');
            print(p, params, depth + 1, false);
            out_c(p, ')');
        } else {
            out(p, "(_:)");
        }
        return;
    }
    bool has_labels = labels && labels->n > 0;
    out_c(p, '(');
    for (uint32_t i = 0; i < params->n; i++) {
        const snode *param = params->kids[i];
        if (i && show_types)
            out(p, ", ");
        if (has_labels) {
            const snode *label = kid(p, labels, i);
            if (!label)
                return;
            if (label->kind == SK_Identifier)
                out_text(p, label);
            else
                out_c(p, '_');
            out_c(p, ':');
        } else if (!show_types) {
            const snode *label = snode_find(param, SK_TupleElementName);
            if (label) {
                out_text(p, label);
                out_c(p, ':');
            } else {
                out(p, "_:");
            }
        }
        if (has_labels && show_types)
            out_c(p, ' ');
        if (show_types)
            print(p, param, depth + 1, false);
    }
    out_c(p, ')');
}

static void print_convention_with_c_type(pr *p, const snode *fn, const char *conv, int depth)
{
    out(p, "@convention(");
    out(p, conv);
    if (snode_kid_kind(fn, 0) == SK_ClangType) {
        out(p, ", mangledCType: \"");
        print(p, fn->kids[0], depth + 1, false);
        out_c(p, '"');
    }
    out(p, ") ");
}

static void print_differentiable(pr *p, int kind)
{
    switch (kind) {
    case 'f': out(p, "@differentiable(_forward) "); break;
    case 'r': out(p, "@differentiable(reverse) "); break;
    case 'l': out(p, "@differentiable(_linear) "); break;
    case 'd': out(p, "@differentiable "); break;
    default: break;
    }
}

static void print_function_type(pr *p, const snode *labels, const snode *fn, int depth)
{
    if (!fn || fn->n < 2) {
        p->invalid = true;
        return;
    }
    switch (fn->kind) {
    case SK_AutoClosureType:
    case SK_EscapingAutoClosureType:
        out(p, "@autoclosure ");
        break;
    case SK_ThinFunctionType:
        out(p, "@convention(thin) ");
        break;
    case SK_CFunctionPointer:
        print_convention_with_c_type(p, fn, "c", depth);
        break;
    case SK_EscapingObjCBlock:
        out(p, "@escaping ");
        print_convention_with_c_type(p, fn, "block", depth);
        break;
    case SK_ObjCBlock:
        print_convention_with_c_type(p, fn, "block", depth);
        break;
    default:
        break;
    }
    uint32_t args = fn->n - 2, at = 0;
    /* The annotations, in the order the demangler adds them. */
    if (snode_kid_kind(fn, at) == SK_ClangType)
        at++;
    bool sending_result = snode_kid_kind(fn, at) == SK_SendingResultFunctionType;
    if (sending_result)
        at++;
    if (snode_kid_kind(fn, at) == SK_IsolatedAnyFunctionType)
        print(p, fn->kids[at++], depth + 1, false);
    const snode *nonisolated = NULL;
    if (snode_kid_kind(fn, at) == SK_NonIsolatedCallerFunctionType)
        nonisolated = fn->kids[at++];
    if (snode_kid_kind(fn, at) == SK_GlobalActorFunctionType)
        print(p, fn->kids[at++], depth + 1, false);
    int diff = 0;
    if (snode_kid_kind(fn, at) == SK_DifferentiableFunctionType)
        diff = (int)idx(p, fn->kids[at++]);
    const snode *thrown = NULL;
    if (snode_kid_kind(fn, at) == SK_ThrowsAnnotation ||
        snode_kid_kind(fn, at) == SK_TypedThrowsAnnotation)
        thrown = fn->kids[at++];
    bool sendable = snode_kid_kind(fn, at) == SK_ConcurrentFunctionType;
    if (sendable)
        at++;
    bool async = snode_kid_kind(fn, at) == SK_AsyncAnnotation;
    print_differentiable(p, diff);
    if (nonisolated)
        print(p, nonisolated, depth + 1, false);
    if (sendable)
        out(p, "@Sendable ");
    print_function_parameters(p, labels, fn->kids[args], depth, p->o.arg_types);
    if (!p->o.arg_types)
        return;
    if (async)
        out(p, " async");
    if (thrown)
        print(p, thrown, depth + 1, false);
    out(p, " -> ");
    if (sending_result)
        out(p, "sending ");
    print(p, fn->kids[args + 1], depth + 1, false);
}

/* A SIL function type: attributes, then "(params) -> (results)". */
static void print_impl_function_type(pr *p, const snode *fn, int depth)
{
    enum { ATTRS, INPUTS, RESULTS } state = ATTRS;
    const snode *pattern = NULL, *invocation = NULL, *sending = NULL;
    for (uint32_t i = 0; i <= fn->n; i++) {
        const snode *c = i < fn->n ? fn->kids[i] : NULL;
        int want;
        if (!c)
            want = RESULTS;
        else if (c->kind == SK_ImplParameter)
            want = INPUTS;
        else if (c->kind == SK_ImplResult || c->kind == SK_ImplYield ||
                 c->kind == SK_ImplErrorResult)
            want = RESULTS;
        else
            want = -1;
        if (want >= 0) {
            if (c && (int)state == want)
                out(p, ", ");
            /* Move through the states, printing what opens each. */
            while ((int)state < want) {
                if (state == ATTRS) {
                    if (pattern) {
                        out(p, "@substituted ");
                        print(p, kid(p, pattern, 0), depth + 1, false);
                        out_c(p, ' ');
                    }
                    out_c(p, '(');
                } else {
                    out(p, ") -> ");
                    if (sending) {
                        print(p, sending, depth + 1, false);
                        out_c(p, ' ');
                    }
                    out_c(p, '(');
                }
                state++;
            }
            if (c)
                print(p, c, depth + 1, false);
            continue;
        }
        switch (c->kind) {
        case SK_ImplPatternSubstitutions: pattern = c; break;
        case SK_ImplInvocationSubstitutions: invocation = c; break;
        case SK_ImplSendingResult: sending = c; break;
        default:
            print(p, c, depth + 1, false);
            out_c(p, ' ');
        }
    }
    out_c(p, ')');
    if (pattern) {
        out(p, " for <");
        print_kids(p, kid(p, pattern, 1), depth, NULL);
        out_c(p, '>');
    }
    if (invocation) {
        out(p, " for <");
        print_kids(p, kid(p, invocation, 0), depth, NULL);
        out_c(p, '>');
    }
}

/* ---- generic signatures ---- */

/* Whether a marker of kind k names the parameter at (gdepth, index). The
 * comparison crosses depth and index as Swift's printer does; swapped
 * here too, so that the output is Swift's. */
static const snode *marked_param(const snode *sig, uint32_t from, uint32_t to, snode_kind k,
                                 uint64_t gdepth, uint64_t index)
{
    for (uint32_t i = from; i < to; i++) {
        const snode *m = sig->kids[i];
        if (m->kind != k)
            continue;
        const snode *ty = snode_kid(m, 0);
        if (!ty || ty->kind != SK_Type)
            continue;
        const snode *param = snode_kid(ty, 0);
        if (!param || param->kind != SK_DependentGenericParamType)
            continue;
        const snode *d0 = snode_kid(param, 0), *d1 = snode_kid(param, 1);
        if (d0 && d1 && index == d0->v.index && gdepth == d1->v.index)
            return ty;
    }
    return NULL;
}

static void print_generic_signature(pr *p, const snode *sig, int depth)
{
    out_c(p, '<');
    uint32_t nparams = 0, first_req;
    while (nparams < sig->n && sig->kids[nparams]->kind == SK_DependentGenericParamCount)
        nparams++;
    for (first_req = nparams; first_req < sig->n; first_req++) {
        const snode *c = sig->kids[first_req];
        if (c->kind == SK_Type)
            c = snode_kid(c, 0);
        if (!c || (c->kind != SK_DependentGenericParamPackMarker &&
                   c->kind != SK_DependentGenericParamValueMarker))
            break;
    }
    for (uint32_t gd = 0; gd < nparams; gd++) {
        if (gd)
            out(p, "><");
        unsigned count = (unsigned)sig->kids[gd]->v.index;
        for (unsigned i = 0; i < count; i++) {
            if (i)
                out(p, ", ");
            /* Swift stops at 128: only malformed names have more. */
            if (i >= 128) {
                out(p, "...");
                break;
            }
            if (marked_param(sig, nparams, first_req, SK_DependentGenericParamPackMarker, gd, i))
                out(p, "each ");
            const snode *value =
                marked_param(sig, nparams, first_req, SK_DependentGenericParamValueMarker, gd, i);
            if (value)
                out(p, "let ");
            out_generic_name(p, gd, i);
            if (value && snode_kid(value, 1)) {
                out(p, ": ");
                print(p, value->kids[1], depth + 1, false);
            }
        }
    }
    if (first_req != sig->n && p->o.where_clauses) {
        out(p, " where ");
        for (uint32_t i = first_req; i < sig->n; i++) {
            if (i > first_req)
                out(p, ", ");
            print(p, sig->kids[i], depth + 1, false);
        }
    }
    out_c(p, '>');
}

/* ---- specializations ---- */

enum {
    FSK_CONST_FUNCTION, FSK_CONST_GLOBAL, FSK_CONST_INTEGER, FSK_CONST_FLOAT, FSK_CONST_STRING,
    FSK_CLOSURE, FSK_BOX_TO_VALUE, FSK_BOX_TO_STACK, FSK_INOUT_TO_OUT, FSK_CONST_KEYPATH,
    FSK_DEAD = 1 << 6, FSK_OWNED_TO_GUARANTEED = 1 << 7, FSK_SROA = 1 << 8,
    FSK_GUARANTEED_TO_OWNED = 1 << 9, FSK_EXISTENTIAL_TO_GENERIC = 1 << 10,
};

/* Text that may be a mangled name of its own: printed demangled (with
 * Swift's default options, as Swift's demangleSymbolAsString does) when it
 * demangles, as it is otherwise. */
static void print_maybe_mangled(pr *p, const snode *n, int depth)
{
    if (!n || n->payload != SP_TEXT) {
        p->invalid = true;
        return;
    }
    p->steps += n->v.text.len; /* the parse is work too */
    if (p->nest < SWIFT_MAX_NEST && !p->invalid && !p->fatal) {
        size_t mark = p->len;
        snode *root = swift_parse_symbol(p->a, n->v.text.p, n->v.text.len, p->nest + 1);
        if (p->a->failed) {
            p->fatal = true;
            return;
        }
        if (root) {
            popts saved = p->o;
            bool saved_spec = p->spec_printed;
            p->o = default_opts;
            p->spec_printed = false;
            p->nest++;
            print(p, root, depth + 1, false);
            p->nest--;
            p->o = saved;
            p->spec_printed = saved_spec;
            if (!p->invalid)
                return;
            p->invalid = false;
            p->len = mark;
        }
    }
    out_text(p, n);
}

static void print_spec_params(pr *p, const snode *n, int depth)
{
    uint32_t i = 0, end = n->n;
    while (i < end && !p->invalid && !p->fatal) {
        unsigned v = (unsigned)idx(p, n->kids[i]);
        switch (v) {
        case FSK_BOX_TO_VALUE:
        case FSK_BOX_TO_STACK:
        case FSK_INOUT_TO_OUT:
            print(p, n->kids[i++], depth + 1, false);
            break;
        case FSK_CONST_FUNCTION:
        case FSK_CONST_GLOBAL:
            if (i + 2 > end)
                return;
            out_c(p, '[');
            print(p, n->kids[i++], depth + 1, false);
            out(p, " : ");
            print_maybe_mangled(p, n->kids[i++], depth);
            out_c(p, ']');
            break;
        case FSK_CONST_INTEGER:
        case FSK_CONST_FLOAT:
            if (i + 2 > end)
                return;
            out_c(p, '[');
            print(p, n->kids[i++], depth + 1, false);
            out(p, " : ");
            print(p, n->kids[i++], depth + 1, false);
            out_c(p, ']');
            break;
        case FSK_CONST_STRING:
            if (i + 3 > end)
                return;
            out_c(p, '[');
            print(p, n->kids[i++], depth + 1, false);
            out(p, " : ");
            print(p, n->kids[i++], depth + 1, false);
            out_c(p, '\'');
            print(p, n->kids[i++], depth + 1, false);
            out(p, "']");
            break;
        case FSK_CONST_KEYPATH:
            if (i + 4 > end)
                return;
            out_c(p, '[');
            print(p, n->kids[i++], depth + 1, false);
            out(p, " : ");
            print(p, n->kids[i++], depth + 1, false);
            out_c(p, '<');
            print(p, n->kids[i++], depth + 1, false);
            out_c(p, ',');
            print(p, n->kids[i++], depth + 1, false);
            out(p, ">]");
            break;
        case FSK_CLOSURE:
            if (i + 2 > end)
                return;
            out_c(p, '[');
            print(p, n->kids[i++], depth + 1, false);
            out(p, " : ");
            print(p, n->kids[i++], depth + 1, false);
            out(p, ", Argument Types : [");
            while (i < end && n->kids[i]->kind == SK_Type) {
                print(p, n->kids[i++], depth + 1, false);
                /* Swift separates only before a node with text. */
                if (i < end && n->kids[i]->payload == SP_TEXT)
                    out(p, ", ");
            }
            out_c(p, ']');
            break;
        default:
            print(p, n->kids[i++], depth + 1, false);
        }
    }
}

static void print_spec_prefix(pr *p, const snode *n, const char *what, int depth,
                              const char *param_prefix)
{
    if (!p->o.generic_specs) {
        if (!p->spec_printed)
            out(p, "specialized ");
        p->spec_printed = true;
        return;
    }
    out(p, what);
    out(p, " <");
    const char *sep = "";
    unsigned argn = 0;
    for (uint32_t i = 0; i < n->n; i++) {
        const snode *c = n->kids[i];
        switch (c->kind) {
        case SK_SpecializationPassID:
        case SK_DroppedArgument:
            break;
        case SK_IsSerialized:
            out(p, sep);
            sep = ", ";
            print(p, c, depth + 1, false);
            break;
        default:
            if (c->n) { /* empty specializations are not shown */
                out(p, sep);
                out(p, param_prefix);
                sep = ", ";
                if (c->kind == SK_FunctionSignatureSpecializationParam) {
                    out(p, "Arg[");
                    out_u64(p, argn);
                    out(p, "] = ");
                    print_spec_params(p, c, depth);
                } else if (c->kind == SK_FunctionSignatureSpecializationReturn) {
                    out(p, "Return = ");
                    print_spec_params(p, c, depth);
                } else {
                    print(p, c, depth + 1, false);
                }
            }
            argn++;
        }
    }
    out(p, "> of ");
}

static void print_spec_param_kind(pr *p, const snode *n)
{
    uint64_t raw = idx(p, n);
    /* Option sets first, joined by "and". */
    static const struct {
        uint64_t bit;
        const char *name;
    } options[] = {
        {FSK_EXISTENTIAL_TO_GENERIC, "Existential To Protocol Constrained Generic"},
        {FSK_DEAD, "Dead"},
        {FSK_OWNED_TO_GUARANTEED, "Owned To Guaranteed"},
        {FSK_GUARANTEED_TO_OWNED, "Guaranteed To Owned"},
        {FSK_SROA, "Exploded"},
    };
    bool any = false;
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        if (!(raw & options[i].bit))
            continue;
        if (any)
            out(p, " and ");
        any = true;
        out(p, options[i].name);
        if (options[i].bit == FSK_SROA)
            return;
    }
    if (any)
        return;
    static const char *const names[] = {
        "Constant Propagated Function", "Constant Propagated Global", "Constant Propagated Integer",
        "Constant Propagated Float", "Constant Propagated String", "Closure Propagated",
        "Value Promoted from Box", "Stack Promoted from Box", "InOut Converted to Out",
        "Constant Propagated KeyPath",
    };
    if (raw < sizeof names / sizeof names[0])
        out(p, names[raw]);
}

/* ---- entities ---- */

/* An entity's type: " : T" (variables and the like), or a function's
 * signature "(a: A) -> R", labels and generic arguments included. False
 * when the entity has no type to print. */
static bool print_entity_type(pr *p, const snode *entity, enum entity_type type_style,
                              bool multi_word, const snode *generic_args, int depth)
{
    const snode *type = snode_find(entity, SK_Type);
    type = snode_kid(type, 0);
    if (!type) {
        p->invalid = true;
        return false;
    }
    if (type_style == FUNCTION_STYLE) {
        const snode *t = type;
        while (t && t->kind == SK_DependentGenericType)
            t = snode_kid(snode_kid(t, 1), 0);
        if (!t || (t->kind != SK_FunctionType && t->kind != SK_NoEscapeFunctionType &&
                   t->kind != SK_UncurriedFunctionType && t->kind != SK_CFunctionPointer &&
                   t->kind != SK_ThinFunctionType))
            type_style = WITH_COLON;
    }
    bool show = type_style == WITH_COLON ? p->o.entity_types : true;
    if (show) {
        if (type_style == WITH_COLON)
            out(p, " : ");
        else if (multi_word || need_space_before_type(type))
            out_c(p, ' ');
        const snode *labels = snode_find(entity, SK_LabelList);
        if (labels || generic_args) {
            if (generic_args) {
                out_c(p, '<');
                print_kids(p, generic_args, depth, ", ");
                out_c(p, '>');
            }
            if (type->kind == SK_DependentGenericType) {
                if (!generic_args)
                    print(p, kid(p, type, 0), depth + 1, false);
                const snode *dep = kid(p, type, 1);
                if (!dep)
                    return false;
                if (need_space_before_type(dep))
                    out_c(p, ' ');
                type = kid(p, dep, 0);
            }
            print_function_type(p, labels, type, depth);
        } else {
            print(p, type, depth + 1, false);
        }
    }
    return true;
}

/* How one entity is printed: its name, its context before ("A.b") or
 * after ("closure #1 in A.b"), its type. Returns the context still to be
 * printed when the caller prints this entity as a context. */
static const snode *print_entity(pr *p, const snode *entity, int depth, bool as_prefix,
                                 enum entity_type type_style, bool has_name, const char *extra_name,
                                 int extra_index, const char *overwrite_name)
{
    const snode *generic_args = NULL;
    if (entity->kind == SK_BoundGenericFunction) {
        generic_args = kid(p, entity, 1);
        entity = kid(p, entity, 0);
        if (!entity)
            return NULL;
    }
    bool multi_word = strchr(extra_name, ' ') != NULL;
    bool local_name = false;
    if (has_name) {
        const snode *name = kid(p, entity, 1);
        if (!name)
            return NULL;
        local_name = name->kind == SK_LocalDeclName;
    }
    if (local_name)
        multi_word = true;
    /* A context with a type, or named in words, reads better after. */
    if (as_prefix && (type_style != NO_TYPE || multi_word))
        return entity;

    const snode *postfix = NULL, *ctx = kid(p, entity, 0);
    if (!ctx)
        return NULL;
    if (print_context(p, ctx)) {
        if (multi_word) {
            postfix = ctx;
        } else {
            size_t at = p->len;
            postfix = print(p, ctx, depth + 1, true);
            if (p->len != at)
                out_c(p, '.');
        }
    }

    /* The name. */
    if (has_name || *overwrite_name) {
        if (*extra_name && multi_word) {
            out(p, extra_name);
            if (extra_index >= 0)
                out_i64(p, extra_index);
            out(p, " of ");
            extra_name = "";
            extra_index = -1;
        }
        size_t at = p->len;
        if (*overwrite_name) {
            out(p, overwrite_name);
        } else {
            const snode *name = entity->kids[1];
            if (name->kind != SK_PrivateDeclName)
                print(p, name, depth + 1, false);
            const snode *priv = snode_find(entity, SK_PrivateDeclName);
            if (priv)
                print(p, priv, depth + 1, false);
        }
        if (p->len != at && *extra_name)
            out_c(p, '.');
    }
    if (*extra_name) {
        out(p, extra_name);
        if (extra_index >= 0)
            out_i64(p, extra_index);
    }

    if (type_style != NO_TYPE &&
        !print_entity_type(p, entity, type_style, multi_word, generic_args, depth))
        return NULL;

    if (!as_prefix && postfix) {
        switch (entity->kind) {
        case SK_DefaultArgumentInitializer:
        case SK_Initializer:
        case SK_PropertyWrapperBackingInitializer:
        case SK_PropertyWrapperInitFromProjectedValue:
            out(p, " of ");
            break;
        default:
            out(p, " in ");
        }
        print(p, postfix, depth + 1, false);
        postfix = NULL;
    }
    return postfix;
}

static const snode *print_storage(pr *p, const snode *n, int depth, bool as_prefix,
                                  const char *extra)
{
    if (!n) {
        p->invalid = true;
        return NULL;
    }
    if (n->kind == SK_Variable)
        return print_entity(p, n, depth, as_prefix, WITH_COLON, true, extra, -1, "");
    if (n->kind == SK_Subscript)
        return print_entity(p, n, depth, as_prefix, WITH_COLON, false, extra, -1, "subscript");
    p->invalid = true;
    return NULL;
}

/* "accessor macro @name expansion #": the name printed with Swift's
 * default options into the arena. */
static const char *attached_macro_name(pr *p, const char *role, const snode *macro, int depth)
{
    size_t mark = p->len;
    popts saved = p->o;
    p->o = default_opts;
    out(p, role);
    out(p, " macro @");
    print(p, macro, depth + 1, false);
    out(p, " expansion #");
    p->o = saved;
    size_t len = p->len - mark;
    char *s = sarena_alloc(p->a, len + 1);
    if (!s) {
        p->fatal = true;
        return "";
    }
    memcpy(s, p->buf + mark, len);
    s[len] = 0;
    p->len = mark;
    return s;
}

/* ---- the node kinds that print as a text and one child ---- */
static const char *const prefixed[SK__COUNT] = {
    [SK_Static] = "static ",
    [SK_AsyncRemoved] = "async demotion of ",
    [SK_CurryThunk] = "curry thunk of ",
    [SK_SILThunkIdentity] = "identity thunk of ",
    [SK_DispatchThunk] = "dispatch thunk of ",
    [SK_MethodDescriptor] = "method descriptor for ",
    [SK_MethodLookupFunction] = "method lookup function for ",
    [SK_ObjCMetadataUpdateFunction] = "ObjC metadata update function for ",
    [SK_ObjCResilientClassStub] = "ObjC resilient class stub for ",
    [SK_FullObjCResilientClassStub] = "full ObjC resilient class stub for ",
    [SK_OutlinedRetain] = "outlined retain of ",
    [SK_OutlinedRelease] = "outlined release of ",
    [SK_OutlinedInitializeWithTake] = "outlined init with take of ",
    [SK_OutlinedInitializeWithTakeNoValueWitness] = "outlined init with take of ",
    [SK_OutlinedInitializeWithCopy] = "outlined init with copy of ",
    [SK_OutlinedInitializeWithCopyNoValueWitness] = "outlined init with copy of ",
    [SK_OutlinedAssignWithTake] = "outlined assign with take of ",
    [SK_OutlinedAssignWithTakeNoValueWitness] = "outlined assign with take of ",
    [SK_OutlinedAssignWithCopy] = "outlined assign with copy of ",
    [SK_OutlinedAssignWithCopyNoValueWitness] = "outlined assign with copy of ",
    [SK_OutlinedDestroy] = "outlined destroy of ",
    [SK_OutlinedDestroyNoValueWitness] = "outlined destroy of ",
    [SK_OutlinedEnumProjectDataForLoad] = "outlined enum project data for load of ",
    [SK_OutlinedEnumTagStore] = "outlined enum tag store of ",
    [SK_OutlinedEnumGetTag] = "outlined enum get tag of ",
    [SK_DeclContext] = "",
    [SK_Type] = "",
    [SK_Weak] = "weak ",
    [SK_Unowned] = "unowned ",
    [SK_Unmanaged] = "unowned(unsafe) ",
    [SK_InOut] = "inout ",
    [SK_Isolated] = "isolated ",
    [SK_Sending] = "sending ",
    [SK_CompileTimeLiteral] = "_const ",
    [SK_ConstValue] = "@const ",
    [SK_Shared] = "__shared ",
    [SK_Owned] = "__owned ",
    [SK_NoDerivative] = "@noDerivative ",
    [SK_PackExpansion] = "repeat ",
    [SK_ProtocolSelfConformanceWitnessTable] = "protocol self-conformance witness table for ",
    [SK_ProtocolWitnessTableAccessor] = "protocol witness table accessor for ",
    [SK_ProtocolWitnessTable] = "protocol witness table for ",
    [SK_ProtocolWitnessTablePattern] = "protocol witness table pattern for ",
    [SK_GenericProtocolWitnessTable] = "generic protocol witness table for ",
    [SK_GenericProtocolWitnessTableInstantiationFunction] =
        "instantiation function for generic protocol witness table for ",
    [SK_ResilientProtocolWitnessTable] = "resilient protocol witness table for ",
    [SK_ProtocolSelfConformanceWitness] = "protocol self-conformance witness for ",
    [SK_GenericTypeMetadataPattern] = "generic type metadata pattern for ",
    [SK_Metaclass] = "metaclass for ",
    [SK_ProtocolSelfConformanceDescriptor] = "protocol self-conformance descriptor for ",
    [SK_ProtocolConformanceDescriptor] = "protocol conformance descriptor for ",
    [SK_ProtocolConformanceDescriptorRecord] =
        "protocol conformance descriptor runtime record for ",
    [SK_ProtocolDescriptor] = "protocol descriptor for ",
    [SK_ProtocolDescriptorRecord] = "protocol descriptor runtime record for ",
    [SK_ProtocolRequirementsBaseDescriptor] = "protocol requirements base descriptor for ",
    [SK_FullTypeMetadata] = "full type metadata for ",
    [SK_TypeMetadata] = "type metadata for ",
    [SK_TypeMetadataAccessFunction] = "type metadata accessor for ",
    [SK_TypeMetadataInstantiationCache] = "type metadata instantiation cache for ",
    [SK_TypeMetadataInstantiationFunction] = "type metadata instantiation function for ",
    [SK_TypeMetadataSingletonInitializationCache] =
        "type metadata singleton initialization cache for ",
    [SK_TypeMetadataCompletionFunction] = "type metadata completion function for ",
    [SK_TypeMetadataDemanglingCache] = "demangling cache variable for type metadata for ",
    [SK_TypeMetadataLazyCache] = "lazy cache variable for type metadata for ",
    [SK_AssociatedTypeDescriptor] = "associated type descriptor for ",
    [SK_DefaultAssociatedTypeMetadataAccessor] = "default associated type metadata accessor for ",
    [SK_ClassMetadataBaseOffset] = "class metadata base offset for ",
    [SK_PropertyDescriptor] = "property descriptor for ",
    [SK_NominalTypeDescriptor] = "nominal type descriptor for ",
    [SK_NominalTypeDescriptorRecord] = "nominal type descriptor runtime record for ",
    [SK_OpaqueTypeDescriptor] = "opaque type descriptor for ",
    [SK_OpaqueTypeDescriptorRecord] = "opaque type descriptor runtime record for ",
    [SK_OpaqueTypeDescriptorAccessor] = "opaque type descriptor accessor for ",
    [SK_OpaqueTypeDescriptorAccessorImpl] = "opaque type descriptor accessor impl for ",
    [SK_OpaqueTypeDescriptorAccessorKey] = "opaque type descriptor accessor key for ",
    [SK_OpaqueTypeDescriptorAccessorVar] = "opaque type descriptor accessor var for ",
    [SK_CoroutineContinuationPrototype] = "coroutine continuation prototype for ",
    [SK_ValueWitnessTable] = "value witness table for ",
    [SK_ReflectionMetadataBuiltinDescriptor] = "reflection metadata builtin descriptor ",
    [SK_ReflectionMetadataFieldDescriptor] = "reflection metadata field descriptor ",
    [SK_ReflectionMetadataAssocTypeDescriptor] = "reflection metadata associated type descriptor ",
    [SK_ReflectionMetadataSuperclassDescriptor] = "reflection metadata superclass descriptor ",
    [SK_ModuleDescriptor] = "module descriptor ",
    [SK_AnonymousDescriptor] = "anonymous descriptor ",
    [SK_ExtensionDescriptor] = "extension descriptor ",
    [SK_CanonicalSpecializedGenericMetaclass] = "specialized generic metaclass for ",
    [SK_CanonicalSpecializedGenericTypeMetadataAccessFunction] =
        "canonical specialized generic type metadata accessor for ",
    [SK_MetadataInstantiationCache] = "metadata instantiation cache for ",
    [SK_NoncanonicalSpecializedGenericTypeMetadata] =
        "noncanonical specialized generic type metadata for ",
    [SK_NoncanonicalSpecializedGenericTypeMetadataCache] =
        "cache variable for noncanonical specialized generic type metadata for ",
    [SK_CanonicalPrespecializedGenericTypeCachingOnceToken] =
        "flag for loading of canonical specialized generic type metadata for ",
    [SK_Uniquable] = "uniquable ",
    [SK_SILBoxType] = "@box ",
    [SK_SILBoxImmutableField] = "let ",
    [SK_SILBoxMutableField] = "var ",
};

/* ...the ones that print as a text alone... */
static const char *const fixed[SK__COUNT] = {
    [SK_NonObjCAttribute] = "@nonobjc ",
    [SK_ObjCAttribute] = "@objc ",
    [SK_DirectMethodReferenceAttribute] = "super ",
    [SK_DynamicAttribute] = "dynamic ",
    [SK_VTableAttribute] = "override ",
    [SK_IsSerialized] = "serialized",
    [SK_UnknownIndex] = "unknown index",
    [SK_DynamicSelf] = "Self",
    [SK_ConstrainedExistentialSelf] = "Self",
    [SK_ErrorType] = "<ERROR TYPE>",
    [SK_EmptyList] = " empty-list ",
    [SK_FirstElementMarker] = " first-element-marker ",
    [SK_VariadicMarker] = " variadic-marker ",
    [SK_ConcurrentFunctionType] = "@Sendable ",
    [SK_IsolatedAnyFunctionType] = "@isolated(any) ",
    [SK_NonIsolatedCallerFunctionType] = "nonisolated(nonsending) ",
    [SK_SendingResultFunctionType] = "sending ",
    [SK_AsyncAnnotation] = " async",
    [SK_ThrowsAnnotation] = " throws",
    [SK_ImplEscaping] = "@escaping",
    [SK_ImplErasedIsolation] = "@isolated(any)",
    [SK_ImplSendingResult] = "sending",
    [SK_OpaqueReturnType] = "some",
    [SK_AsyncFunctionPointer] = "async function pointer to ",
    [SK_HasSymbolQuery] = "#_hasSymbol query for ",
    [SK_CoroFunctionPointer] = "coro function pointer to ",
    [SK_DefaultOverride] = "default override of ",
    [SK_BackDeploymentFallback] = "back deployment fallback for ",
    [SK_BuiltinTupleType] = "Builtin.TheTupleType",
    [SK_AsyncMainEntryPoint] = "async_Main",
    [SK_AssociatedType] = "",
    [SK_LabelList] = "",
    [SK_OpaqueReturnTypeIndex] = "",
    [SK_OpaqueReturnTypeParent] = "",
};

/* ...the thunk markers, printed only when thunks are not shortened... */
static const char *const thunk_marks[SK__COUNT] = {
    [SK_MergedFunction] = "merged ",
    [SK_DistributedThunk] = "distributed thunk ",
    [SK_DistributedAccessor] = "distributed accessor for ",
    [SK_AccessibleFunctionRecord] = "accessible function runtime record for ",
    [SK_DynamicallyReplaceableFunctionKey] = "dynamically replaceable key for ",
    [SK_DynamicallyReplaceableFunctionImpl] = "dynamically replaceable thunk for ",
    [SK_DynamicallyReplaceableFunctionVar] = "dynamically replaceable variable for ",
    [SK_BackDeploymentThunk] = "back deployment thunk for ",
};

/* ...and the accessors of a variable or subscript. */
static const char *const accessors[SK__COUNT] = {
    [SK_OwningAddressor] = "owningAddressor",
    [SK_OwningMutableAddressor] = "owningMutableAddressor",
    [SK_NativeOwningAddressor] = "nativeOwningAddressor",
    [SK_NativeOwningMutableAddressor] = "nativeOwningMutableAddressor",
    [SK_NativePinningAddressor] = "nativePinningAddressor",
    [SK_NativePinningMutableAddressor] = "nativePinningMutableAddressor",
    [SK_UnsafeAddressor] = "unsafeAddressor",
    [SK_UnsafeMutableAddressor] = "unsafeMutableAddressor",
    [SK_GlobalGetter] = "getter",
    [SK_Getter] = "getter",
    [SK_Setter] = "setter",
    [SK_MaterializeForSet] = "materializeForSet",
    [SK_WillSet] = "willset",
    [SK_DidSet] = "didset",
    [SK_ReadAccessor] = "read",
    [SK_Read2Accessor] = "read2",
    [SK_ModifyAccessor] = "modify",
    [SK_Modify2Accessor] = "modify2",
    [SK_InitAccessor] = "init",
};

static const char *const value_witness_names[] = {
    "allocateBuffer", "assignWithCopy", "assignWithTake", "deallocateBuffer", "destroy",
    "destroyBuffer", "destroyArray", "initializeBufferWithCopyOfBuffer", "initializeBufferWithCopy",
    "initializeWithCopy", "initializeBufferWithTake", "initializeWithTake", "projectBuffer",
    "initializeBufferWithTakeOfBuffer", "initializeArrayWithCopy",
    "initializeArrayWithTakeFrontToBack", "initializeArrayWithTakeBackToFront",
    "storeExtraInhabitant", "getExtraInhabitantIndex", "getEnumTag", "destructiveProjectEnumData",
    "destructiveInjectEnumTag", "getEnumTagSinglePayload", "storeEnumTagSinglePayload",
};

/* "text child0 text2 child1", a frequent shape. */
static void print_pair(pr *p, const snode *n, const char *t0, size_t c0, const char *t1, size_t c1,
                       int depth)
{
    out(p, t0);
    print(p, kid(p, n, c0), depth + 1, false);
    out(p, t1);
    print(p, kid(p, n, c1), depth + 1, false);
}
static const char *attached_role(int k)
{
    switch (k) {
    case SK_AccessorAttachedMacroExpansion: return "accessor";
    case SK_MemberAttributeAttachedMacroExpansion: return "memberAttribute";
    case SK_MemberAttachedMacroExpansion: return "member";
    case SK_PeerAttachedMacroExpansion: return "peer";
    case SK_ConformanceAttachedMacroExpansion: return "conformance";
    case SK_ExtensionAttachedMacroExpansion: return "extension";
    case SK_PreambleAttachedMacroExpansion: return "preamble";
    case SK_BodyAttachedMacroExpansion: return "body";
    default: return NULL;
    }
}

/* Entities: declarations and the contexts that contain them. */
static const snode *print_entity_kind(pr *p, const snode *n, int depth, bool as_prefix)
{
    int k = n->kind;
    const char *role = attached_role(k);
    if (role) {
        const char *extra = attached_macro_name(p, role, kid(p, n, 2), depth);
        int index = (int)idx(p, kid(p, n, 3)) + 1;
        return print_entity(p, n, depth, as_prefix, NO_TYPE, true, extra, index, "");
    }
    enum entity_type closure_style = p->o.arg_types ? FUNCTION_STYLE : NO_TYPE;
    bool is_class = snode_kid_kind(n, 0) == SK_Class;
    switch (k) {
    case SK_Variable:
        return print_entity(p, n, depth, as_prefix, WITH_COLON, true, "", -1, "");
    case SK_Function:
    case SK_BoundGenericFunction:
        return print_entity(p, n, depth, as_prefix, FUNCTION_STYLE, true, "", -1, "");
    case SK_Subscript:
        return print_entity(p, n, depth, as_prefix, FUNCTION_STYLE, false, "", -1, "subscript");
    case SK_Macro:
        return print_entity(p, n, depth, as_prefix, n->n == 3 ? WITH_COLON : FUNCTION_STYLE, true,
                            "", -1, "");
    case SK_FreestandingMacroExpansion:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, true, "freestanding macro expansion #",
                            (int)idx(p, kid(p, n, 2)) + 1, "");
    case SK_MacroExpansionUniqueName:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, true, "unique name #",
                            (int)idx(p, kid(p, n, 2)) + 1, "");
    case SK_GenericTypeParamDecl:
    case SK_Class: case SK_Structure: case SK_Enum: case SK_Protocol: case SK_TypeAlias:
    case SK_OtherNominalType:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, true, "", -1, "");
    case SK_ExplicitClosure:
        return print_entity(p, n, depth, as_prefix, closure_style, false, "closure #",
                            (int)idx(p, kid(p, n, 1)) + 1, "");
    case SK_ImplicitClosure:
        return print_entity(p, n, depth, as_prefix, closure_style, false, "implicit closure #",
                            (int)idx(p, kid(p, n, 1)) + 1, "");
    case SK_Initializer:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, false,
                            "variable initialization expression", -1, "");
    case SK_PropertyWrapperBackingInitializer:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, false,
                            "property wrapper backing initializer", -1, "");
    case SK_PropertyWrapperInitFromProjectedValue:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, false,
                            "property wrapper init from projected value", -1, "");
    case SK_DefaultArgumentInitializer:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, false, "default argument ",
                            (int)idx(p, kid(p, n, 1)), "");
    case SK_Allocator:
        return print_entity(p, n, depth, as_prefix, FUNCTION_STYLE, false,
                            is_class ? "__allocating_init" : "init", -1, "");
    case SK_Constructor:
        return print_entity(p, n, depth, as_prefix, FUNCTION_STYLE, n->n > 2, "init", -1, "");
    case SK_Destructor:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, false, "deinit", -1, "");
    case SK_Deallocator:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, false,
                            is_class ? "__deallocating_deinit" : "deinit", -1, "");
    case SK_IsolatedDeallocator:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, false,
                            is_class ? "__isolated_deallocating_deinit" : "deinit", -1, "");
    case SK_IVarInitializer:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, false, "__ivar_initializer", -1, "");
    case SK_IVarDestroyer:
        return print_entity(p, n, depth, as_prefix, NO_TYPE, false, "__ivar_destroyer", -1, "");
    default:
        p->invalid = true;
        return NULL;
    }
}

static bool is_entity_kind(int k)
{
    switch (k) {
    case SK_Variable: case SK_Function: case SK_BoundGenericFunction: case SK_Subscript:
    case SK_Macro: case SK_FreestandingMacroExpansion: case SK_MacroExpansionUniqueName:
    case SK_GenericTypeParamDecl: case SK_Class: case SK_Structure: case SK_Enum: case SK_Protocol:
    case SK_TypeAlias: case SK_OtherNominalType: case SK_ExplicitClosure: case SK_ImplicitClosure:
    case SK_Initializer: case SK_PropertyWrapperBackingInitializer:
    case SK_PropertyWrapperInitFromProjectedValue: case SK_DefaultArgumentInitializer:
    case SK_Allocator: case SK_Constructor: case SK_Destructor: case SK_Deallocator:
    case SK_IsolatedDeallocator: case SK_IVarInitializer: case SK_IVarDestroyer:
        return true;
    default:
        return attached_role(k) != NULL;
    }
}

static void print_key_path(pr *p, const snode *n, int depth)
{
    switch (n->kind) {
    case SK_KeyPathGetterThunkHelper: out(p, "key path getter for "); break;
    case SK_KeyPathSetterThunkHelper: out(p, "key path setter for "); break;
    case SK_KeyPathUnappliedMethodThunkHelper: out(p, "key path unapplied method "); break;
    default: out(p, "key path applied method "); break;
    }
    print(p, kid(p, n, 0), depth + 1, false);
    out(p, " : ");
    for (uint32_t i = 1; i < n->n; i++) {
        if (n->kids[i]->kind == SK_IsSerialized)
            out(p, ", ");
        print(p, n->kids[i], depth + 1, false);
    }
}

static void print_key_path_index(pr *p, const snode *n, int depth)
{
    out(p, n->kind == SK_KeyPathEqualsThunkHelper ? "key path index equality operator for "
                                                   : "key path index hash operator for ");
    uint32_t last = n->n;
    const snode *lc = last ? n->kids[last - 1] : NULL;
    if (lc && lc->kind == SK_IsSerialized) {
        last--;
        lc = last ? n->kids[last - 1] : NULL;
    }
    if (!lc) {
        p->invalid = true;
        return;
    }
    if (lc->kind == SK_DependentGenericSignature) {
        print(p, lc, depth + 1, false);
        last--;
    }
    out_c(p, '(');
    for (uint32_t i = 0; i < last; i++) {
        if (i)
            out(p, ", ");
        print(p, n->kids[i], depth + 1, false);
    }
    out_c(p, ')');
}

static void print_reabstraction(pr *p, const snode *n, int depth)
{
    if (p->o.shorten_thunk && n->kind != SK_ReabstractionThunkHelperWithSelf) {
        out(p, "thunk for ");
        print(p, kid(p, n, n->n - 1), depth + 1, false);
        return;
    }
    out(p, "reabstraction thunk ");
    if (n->kind == SK_ReabstractionThunkHelper)
        out(p, "helper ");
    bool self = n->kind == SK_ReabstractionThunkHelperWithSelf;
    uint32_t at = 0;
    if (n->n == (self ? 4u : 3u)) {
        print(p, n->kids[0], depth + 1, false);
        out_c(p, ' ');
        at = 1;
    }
    out(p, "from ");
    print(p, kid(p, n, at + (self ? 2 : 1)), depth + 1, false);
    out(p, " to ");
    print(p, kid(p, n, at + (self ? 1 : 0)), depth + 1, false);
    if (self) {
        out(p, " self ");
        print(p, kid(p, n, at), depth + 1, false);
    }
}

static void print_autodiff_function(pr *p, const snode *n, int depth)
{
    uint32_t end = 0;
    while (end < n->n && n->kids[end]->kind != SK_AutoDiffFunctionKind)
        end++;
    const snode *kind = kid(p, n, end), *params = kid(p, n, end + 1), *results = kid(p, n, end + 2);
    if (p->invalid)
        return;
    if (n->kind == SK_AutoDiffDerivativeVTableThunk)
        out(p, "vtable thunk for ");
    print(p, kind, depth + 1, false);
    out(p, " of ");
    const snode *sig = NULL;
    for (uint32_t i = 0; i < end; i++) {
        if (i == end - 1 && n->kids[i]->kind == SK_DependentGenericSignature) {
            sig = n->kids[i];
            break;
        }
        print(p, n->kids[i], depth + 1, false);
    }
    if (p->o.shorten_thunk)
        return;
    print_pair(p, n, " with respect to parameters ", end + 1, " and results ", end + 2, depth);
    (void)params;
    (void)results;
    if (sig && p->o.where_clauses) {
        out(p, " with ");
        print(p, sig, depth + 1, false);
    }
}

static void print_autodiff_reordering(pr *p, const snode *n, int depth)
{
    out(p, "autodiff self-reordering reabstraction thunk ");
    const snode *from = kid(p, n, 0), *to = kid(p, n, 1);
    if (p->invalid)
        return;
    if (p->o.shorten_thunk) {
        out(p, "for ");
        print(p, from, depth + 1, false);
        return;
    }
    uint32_t at = 2;
    const snode *sig = snode_kid_kind(n, 2) == SK_DependentGenericSignature ? n->kids[at++] : NULL;
    out(p, "for ");
    print(p, kid(p, n, at), depth + 1, false);
    if (sig) {
        print(p, sig, depth + 1, false);
        out_c(p, ' ');
    }
    out(p, " from ");
    print(p, from, depth + 1, false);
    out(p, " to ");
    print(p, to, depth + 1, false);
}

static void print_autodiff_subset(pr *p, const snode *n, int depth)
{
    out(p, "autodiff subset parameters thunk for ");
    if (n->n < 5) {
        p->invalid = true;
        return;
    }
    uint32_t cur = n->n - 5; /* the children before the kind */
    print(p, n->kids[cur + 1], depth + 1, false);
    out(p, " from ");
    if (cur == 0) {
        print(p, n->kids[0], depth + 1, false);
    } else {
        for (uint32_t i = 0; i < cur; i++)
            print(p, n->kids[i], depth + 1, false);
    }
    if (p->o.shorten_thunk)
        return;
    print_pair(p, n, " with respect to parameters ", cur + 2, " and results ", cur + 3, depth);
    out(p, " to parameters ");
    print(p, n->kids[cur + 4], depth + 1, false);
    if (cur > 0) {
        out(p, " of type ");
        print(p, n->kids[cur], depth + 1, false);
    }
}

static void print_differentiability_witness(pr *p, const snode *n, int depth)
{
    if (n->n < 3) {
        p->invalid = true;
        return;
    }
    uint32_t at = n->n - (n->kids[n->n - 1]->kind == SK_DependentGenericSignature ? 4 : 3);
    switch (idx(p, kid(p, n, at))) {
    case 'f': out(p, "forward-mode"); break;
    case 'r': out(p, "reverse-mode"); break;
    case 'd': out(p, "normal"); break;
    case 'l': out(p, "linear"); break;
    default: p->invalid = true; return;
    }
    out(p, " differentiability witness for ");
    uint32_t i = 0;
    for (; i < n->n && n->kids[i]->kind != SK_Index; i++)
        print(p, n->kids[i], depth + 1, false);
    i++; /* the kind, printed above */
    print_pair(p, n, " with respect to parameters ", i, " and results ", i + 1, depth);
    if (i + 2 < n->n) {
        out(p, " with ");
        print(p, n->kids[i + 2], depth + 1, false);
    }
}

static void print_impl_param(pr *p, const snode *n, int depth)
{
    /* convention, [differentiability, [sending,]] type */
    print(p, kid(p, n, 0), depth + 1, false);
    out_c(p, ' ');
    if (n->n == 3 || n->n == 4)
        print(p, n->kids[1], depth + 1, false);
    if (n->n == 4)
        print(p, n->kids[2], depth + 1, false);
    print(p, kid(p, n, n->n - 1), depth + 1, false);
}

static void print_metatype(pr *p, const snode *n, int depth)
{
    uint32_t at = 0;
    if (n->n == 2) {
        print(p, n->kids[0], depth + 1, false);
        out_c(p, ' ');
        at = 1;
    }
    if (n->kind == SK_ExistentialMetatype) {
        print(p, kid(p, n, at), depth + 1, false);
        out(p, ".Type");
        return;
    }
    const snode *type = snode_kid(kid(p, n, at), 0);
    if (!type) {
        p->invalid = true;
        return;
    }
    print_with_parens(p, type, depth);
    out(p, is_existential(type) ? ".Protocol" : ".Type");
}

static void print_protocol_list(pr *p, const snode *n, int depth)
{
    switch (n->kind) {
    case SK_ProtocolList: {
        const snode *list = snode_kid(n, 0);
        if (!list)
            return;
        if (list->n == 0)
            out(p, "Any");
        else
            print_kids(p, list, depth, " & ");
        return;
    }
    case SK_ProtocolListWithClass:
        if (n->n < 2)
            return;
        print(p, n->kids[1], depth + 1, false);
        out(p, " & ");
        if (n->kids[0]->n < 1)
            return;
        print_kids(p, n->kids[0]->kids[0], depth, " & ");
        return;
    default: { /* ProtocolListWithAnyObject */
        const snode *protos = snode_kid(n, 0);
        if (!protos || protos->n < 1)
            return;
        const snode *list = protos->kids[0];
        if (list->n > 0) {
            print_kids(p, list, depth, " & ");
            out(p, " & ");
        }
        if (p->o.qualify)
            out(p, "Swift.");
        out(p, "AnyObject");
        return;
    }
    }
}

static void print_requirement(pr *p, const snode *n, int depth)
{
    print(p, kid(p, n, 0), depth + 1, false);
    switch (n->kind) {
    case SK_DependentGenericConformanceRequirement:
        out(p, ": ");
        print(p, kid(p, n, 1), depth + 1, false);
        return;
    case SK_DependentGenericInverseConformanceRequirement: {
        uint64_t bit = idx(p, kid(p, n, 1));
        out(p, ": ~");
        if (bit == 0) {
            out(p, "Swift.Copyable");
        } else if (bit == 1) {
            out(p, "Swift.Escapable");
        } else {
            out(p, "Swift.<bit ");
            out_u64(p, bit);
            out_c(p, '>');
        }
        return;
    }
    case SK_DependentGenericSameTypeRequirement:
        out(p, " == ");
        print(p, kid(p, n, 1), depth + 1, false);
        return;
    case SK_DependentGenericSameShapeRequirement:
        out(p, ".shape == ");
        print(p, kid(p, n, 1), depth + 1, false);
        out(p, ".shape");
        return;
    default: { /* layout */
        const snode *layout = kid(p, n, 1);
        if (!layout || layout->payload != SP_TEXT || layout->v.text.len != 1) {
            p->invalid = true;
            return;
        }
        out(p, ": ");
        switch (layout->v.text.p[0]) {
        case 'U': out(p, "_UnknownLayout"); break;
        case 'R': out(p, "_RefCountedObject"); break;
        case 'N': out(p, "_NativeRefCountedObject"); break;
        case 'C': out(p, "AnyObject"); break;
        case 'D': out(p, "_NativeClass"); break;
        case 'T': case 'E': case 'e': out(p, "_Trivial"); break;
        case 'M': case 'm': out(p, "_TrivialAtMost"); break;
        default: break;
        }
        if (n->n > 2) {
            out_c(p, '(');
            print(p, n->kids[2], depth + 1, false);
            if (n->n > 3) {
                out(p, ", ");
                print(p, n->kids[3], depth + 1, false);
            }
            out_c(p, ')');
        }
        return;
    }
    }
}

static void print_conformance_kind(pr *p, const snode *n, int depth)
{
    switch (n->kind) {
    case SK_AnyProtocolConformanceList:
        if (n->n) {
            out_c(p, '(');
            print_kids(p, n, depth, ", ");
            out_c(p, ')');
        }
        return;
    case SK_ConcreteProtocolConformance:
        out(p, "concrete protocol conformance ");
        print_pair(p, n, "", 0, " to ", 1, depth);
        if (n->n > 2 && n->kids[2]->n > 0) {
            out(p, " with conditional requirements: ");
            print(p, n->kids[2], depth + 1, false);
        }
        return;
    case SK_PackProtocolConformance:
        out(p, "pack protocol conformance ");
        print_kids(p, n, depth, NULL);
        return;
    case SK_DependentAssociatedConformance:
        out(p, "dependent associated conformance ");
        print_kids(p, n, depth, NULL);
        return;
    case SK_DependentProtocolConformanceOpaque:
        print_pair(p, n, "opaque result conformance ", 0, " of ", 1, depth);
        return;
    case SK_ProtocolConformanceRefInTypeModule:
        out(p, "protocol conformance ref (type's module) ");
        print_kids(p, n, depth, NULL);
        return;
    case SK_ProtocolConformanceRefInProtocolModule:
        out(p, "protocol conformance ref (protocol's module) ");
        print_kids(p, n, depth, NULL);
        return;
    case SK_ProtocolConformanceRefInOtherModule:
        out(p, "protocol conformance ref (retroactive) ");
        print_kids(p, n, depth, NULL);
        return;
    default: { /* the dependent ones, with an optional index */
        out(p, n->kind == SK_DependentProtocolConformanceAssociated
                   ? "dependent associated protocol conformance "
               : n->kind == SK_DependentProtocolConformanceInherited
                   ? "dependent inherited protocol conformance "
                   : "dependent root protocol conformance ");
        const snode *index = kid(p, n, 2);
        if (index && index->payload == SP_INDEX) {
            out_c(p, '#');
            out_u64(p, index->v.index);
            out_c(p, ' ');
        }
        print_pair(p, n, "", 0, " to ", 1, depth);
        return;
    }
    }
}

static bool is_conformance_kind(int k)
{
    switch (k) {
    case SK_AnyProtocolConformanceList: case SK_ConcreteProtocolConformance:
    case SK_PackProtocolConformance: case SK_DependentAssociatedConformance:
    case SK_DependentProtocolConformanceOpaque: case SK_ProtocolConformanceRefInTypeModule:
    case SK_ProtocolConformanceRefInProtocolModule: case SK_ProtocolConformanceRefInOtherModule:
    case SK_DependentProtocolConformanceAssociated: case SK_DependentProtocolConformanceInherited:
    case SK_DependentProtocolConformanceRoot:
        return true;
    default:
        return false;
    }
}

static void print_private_decl_name(pr *p, const snode *n, int depth)
{
    const snode *disc = kid(p, n, 0);
    if (!disc)
        return;
    if (n->n > 1) {
        if (p->o.discriminators)
            out_c(p, '(');
        print(p, n->kids[1], depth + 1, false);
        if (p->o.discriminators) {
            out(p, " in ");
            out_text(p, disc);
            out_c(p, ')');
        }
    } else if (p->o.discriminators) {
        out(p, "(in ");
        out_text(p, disc);
        out_c(p, ')');
    }
}

static void print_completion_handler(pr *p, const snode *n, int depth)
{
    if (n->kind == SK_PredefinedObjCAsyncCompletionHandlerImpl)
        out(p, "predefined ");
    out(p, "@objc completion handler block implementation for ");
    if (n->n >= 4)
        print(p, n->kids[3], depth + 1, false);
    print_pair(p, n, "", 0, " with result type ", 1, depth);
    switch (idx(p, kid(p, n, 2))) {
    case 0: break;
    case 1: out(p, " nonzero on error"); break;
    case 2: out(p, " zero on error"); break;
    default: out(p, " <invalid error flag>"); break;
    }
}

/* Names, contexts, numbers: false when n is none of those. */
static bool print_name_kind(pr *p, const snode *n, int depth)
{
    int k = n->kind;
    switch (k) {
    case SK_Directness:
        switch (idx(p, n)) {
        case 0: out(p, "direct "); return true;
        case 1: out(p, "indirect "); return true;
        default: p->invalid = true; return true;
        }
    case SK_AnonymousContext:
        if (p->o.qualify && p->o.ext_contexts) {
            print_pair(p, n, "", 1, ".(unknown context at ", 0, depth);
            out_c(p, ')');
            if (n->n >= 3 && n->kids[2]->n > 0) {
                out_c(p, '<');
                print(p, n->kids[2], depth + 1, false);
                out_c(p, '>');
            }
        }
        return true;
    case SK_Extension:
        if (p->o.qualify && p->o.ext_contexts) {
            out(p, "(extension in ");
            print(p, kid(p, n, 0), depth + 1, true);
            out(p, "):");
        }
        print(p, kid(p, n, 1), depth + 1, false);
        if (n->n == 3)
            print(p, n->kids[2], depth + 1, false);
        return true;
    case SK_MacroExpansionLoc: {
        static const char *const parts[] = {"module ", " file ", " line ", " column "};
        for (uint32_t i = 0; i < n->n && i < 4; i++) {
            out(p, parts[i]);
            print(p, n->kids[i], depth + 1, false);
        }
        return true;
    }
    case SK_Global:
        print_kids(p, n, depth, NULL);
        return true;
    case SK_Suffix:
        if (p->o.unmangled_suffix) {
            out(p, " with unmangled suffix ");
            out_quoted(p, n);
        }
        return true;
    case SK_TypeMangling:
        if (snode_kid_kind(n, 0) == SK_LabelList)
            print_function_type(p, n->kids[0], snode_kid(kid(p, n, 1), 0), depth);
        else
            print(p, kid(p, n, 0), depth + 1, false);
        return true;
    case SK_LocalDeclName:
        print(p, kid(p, n, 1), depth + 1, false);
        out(p, " #");
        out_u64(p, idx(p, kid(p, n, 0)) + 1);
        return true;
    case SK_PrivateDeclName:
        print_private_decl_name(p, n, depth);
        return true;
    case SK_RelatedEntityDeclName:
        out(p, "related decl '");
        out_text(p, kid(p, n, 0));
        out(p, "' for ");
        print(p, kid(p, n, 1), depth + 1, false);
        return true;
    case SK_Module:
        if (p->o.module_names)
            out_text(p, n);
        return true;
    case SK_Identifier: case SK_ClangType: case SK_BuiltinTypeName: case SK_MetatypeRepresentation:
    case SK_ImplConvention: case SK_ImplFunctionAttribute:
        out_text(p, n);
        return true;
    case SK_Index: case SK_Number: case SK_SpecializationPassID: case SK_Integer:
        out_u64(p, idx(p, n));
        return true;
    case SK_NegativeInteger:
        out_i64(p, (int64_t)idx(p, n));
        return true;
    case SK_DroppedArgument:
        out(p, "param");
        out_u64(p, idx(p, n));
        out(p, "-removed");
        return true;
    case SK_InfixOperator: case SK_PrefixOperator: case SK_PostfixOperator:
        out_text(p, n);
        out(p, k == SK_InfixOperator ? " infix" : k == SK_PrefixOperator ? " prefix" : " postfix");
        return true;
    case SK_AccessorFunctionReference:
        out(p, "accessor function at ");
        out_u64(p, idx(p, n));
        return true;
    default:
        return false;
    }
}

/* Generic signatures, requirements and dependent types: false when n is none of those. */
static bool print_generic_kind(pr *p, const snode *n, int depth)
{
    int k = n->kind;
    switch (k) {
    case SK_AssociatedTypeRef:
        print(p, kid(p, n, 0), depth + 1, false);
        out_c(p, '.');
        out_text(p, kid(p, n, 1));
        return true;
    case SK_DependentPseudogenericSignature:
    case SK_DependentGenericSignature:
        print_generic_signature(p, n, depth);
        return true;
    case SK_DependentGenericConformanceRequirement:
    case SK_DependentGenericInverseConformanceRequirement:
    case SK_DependentGenericLayoutRequirement: case SK_DependentGenericSameTypeRequirement:
    case SK_DependentGenericSameShapeRequirement:
        print_requirement(p, n, depth);
        return true;
    case SK_DependentGenericParamType:
        out_generic_name(p, (unsigned)idx(p, kid(p, n, 0)), (unsigned)idx(p, kid(p, n, 1)));
        return true;
    case SK_DependentGenericType: {
        const snode *dep = kid(p, n, 1);
        print(p, kid(p, n, 0), depth + 1, false);
        if (dep && need_space_before_type(dep))
            out_c(p, ' ');
        print(p, dep, depth + 1, false);
        return true;
    }
    case SK_DependentMemberType:
        print_pair(p, n, "", 0, ".", 1, depth);
        return true;
    case SK_DependentAssociatedTypeRef:
        if (n->n > 1) {
            print(p, n->kids[1], depth + 1, false);
            out_c(p, '.');
        }
        print(p, kid(p, n, 0), depth + 1, false);
        return true;
    case SK_AssocTypePath:
        print_kids(p, n, depth, ".");
        return true;
    case SK_OpaqueReturnTypeOf:
        out(p, "<<opaque return type of ");
        print_kids(p, n, depth, NULL);
        out(p, ">>");
        return true;
    case SK_OpaqueType:
        print_pair(p, n, "", 0, ".", 1, depth);
        return true;
    default:
        return false;
    }
}

/* Types: false when n is no type. */
static bool print_type_kind(pr *p, const snode *n, int depth)
{
    int k = n->kind;
    switch (k) {
    case SK_FunctionType: case SK_UncurriedFunctionType: case SK_NoEscapeFunctionType:
    case SK_AutoClosureType: case SK_EscapingAutoClosureType: case SK_ThinFunctionType:
    case SK_CFunctionPointer: case SK_ObjCBlock: case SK_EscapingObjCBlock:
        print_function_type(p, NULL, n, depth);
        return true;
    case SK_ArgumentTuple:
        print_function_parameters(p, NULL, n, depth, p->o.arg_types);
        return true;
    case SK_Tuple:
        out_c(p, '(');
        print_kids(p, n, depth, ", ");
        out_c(p, ')');
        return true;
    case SK_TupleElement: {
        const snode *label = snode_find(n, SK_TupleElementName), *type = snode_find(n, SK_Type);
        if (label) {
            out_text(p, label);
            out(p, ": ");
        }
        if (!type) {
            p->invalid = true;
            return true;
        }
        print(p, type, depth + 1, false);
        if (snode_find(n, SK_VariadicMarker))
            out(p, "...");
        return true;
    }
    case SK_TupleElementName:
        out_text(p, n);
        out(p, ": ");
        return true;
    case SK_Pack: case SK_SILPackDirect: case SK_SILPackIndirect:
        out(p, k == SK_Pack            ? "Pack{"
               : k == SK_SILPackDirect ? "@direct Pack{"
                                       : "@indirect Pack{");
        print_kids(p, n, depth, ", ");
        out_c(p, '}');
        return true;
    case SK_PackElement:
        out(p, "/* level: ");
        out_u64(p, idx(p, kid(p, n, 1)));
        out(p, " */ each ");
        print(p, kid(p, n, 0), depth + 1, false);
        return true;
    case SK_ReturnType:
        if (n->n == 0) {
            if (n->payload == SP_TEXT)
                out_text(p, n);
        } else {
            print_kids(p, n, depth, NULL);
        }
        return true;
    case SK_BuiltinFixedArray:
        print_pair(p, n, "Builtin.FixedArray<", 0, ", ", 1, depth);
        out_c(p, '>');
        return true;
    case SK_BoundGenericClass: case SK_BoundGenericStructure: case SK_BoundGenericEnum:
    case SK_BoundGenericProtocol:
    case SK_BoundGenericOtherNominalType:
    case SK_BoundGenericTypeAlias: print_bound_generic(p, n, depth); return true;
    case SK_Metatype: case SK_ExistentialMetatype:
        print_metatype(p, n, depth);
        return true;
    case SK_ConstrainedExistential:
        print_pair(p, n, "any ", 0, "<", 1, depth);
        out_c(p, '>');
        return true;
    case SK_ConstrainedExistentialRequirementList:
        print_kids(p, n, depth, ", ");
        return true;
    case SK_ProtocolList: case SK_ProtocolListWithClass: case SK_ProtocolListWithAnyObject:
        print_protocol_list(p, n, depth);
        return true;
    case SK_TypeList:
        print_kids(p, n, depth, NULL);
        return true;
    case SK_DifferentiableFunctionType:
        out(p, "@differentiable");
        switch (idx(p, n)) {
        case 'f': out(p, "(_forward)"); break;
        case 'r': out(p, "(reverse)"); break;
        case 'l': out(p, "(_linear)"); break;
        default: break;
        }
        out_c(p, ' ');
        return true;
    case SK_GlobalActorFunctionType:
        if (n->n > 0) {
            out_c(p, '@');
            print(p, n->kids[0], depth + 1, false);
            out_c(p, ' ');
        }
        return true;
    case SK_TypedThrowsAnnotation:
        out(p, " throws(");
        if (n->n == 1)
            print(p, n->kids[0], depth + 1, false);
        out_c(p, ')');
        return true;
    case SK_SILBoxTypeWithLayout: {
        const snode *args = NULL;
        if (n->n == 3) {
            print(p, n->kids[1], depth + 1, false);
            out_c(p, ' ');
            args = n->kids[2];
        }
        print(p, kid(p, n, 0), depth + 1, false);
        if (args) {
            out(p, " <");
            print_kids(p, args, depth, ", ");
            out_c(p, '>');
        }
        return true;
    }
    case SK_SILBoxLayout:
        out_c(p, '{');
        for (uint32_t i = 0; i < n->n; i++) {
            out(p, i ? ", " : " ");
            print(p, n->kids[i], depth + 1, false);
        }
        out(p, " }");
        return true;
    case SK_SugaredOptional:
        print_with_parens(p, kid(p, n, 0), depth);
        out_c(p, '?');
        return true;
    case SK_SugaredArray:
        out_c(p, '[');
        print(p, kid(p, n, 0), depth + 1, false);
        out_c(p, ']');
        return true;
    case SK_SugaredInlineArray:
        print_pair(p, n, "[", 0, " of ", 1, depth);
        out_c(p, ']');
        return true;
    case SK_SugaredDictionary:
        print_pair(p, n, "[", 0, " : ", 1, depth);
        out_c(p, ']');
        return true;
    case SK_SugaredParen:
        out_c(p, '(');
        print(p, kid(p, n, 0), depth + 1, false);
        out_c(p, ')');
        return true;
    default:
        return false;
    }
}

/* SIL function types and their parts: false when n is none of those. */
static bool print_impl_kind(pr *p, const snode *n, int depth)
{
    int k = n->kind;
    switch (k) {
    case SK_ImplDifferentiabilityKind:
        out(p, "@differentiable");
        switch (idx(p, n)) {
        case 'l': out(p, "(_linear)"); break;
        case 'f': out(p, "(_forward)"); break;
        case 'r': out(p, "(reverse)"); break;
        default: break;
        }
        return true;
    case SK_ImplCoroutineKind:
        if (n->v.text.len) {
            out_c(p, '@');
            out_text(p, n);
        }
        return true;
    case SK_ImplParameterResultDifferentiability: case SK_ImplParameterSending:
    case SK_ImplParameterIsolated: case SK_ImplParameterImplicitLeading:
        if (n->v.text.len) {
            out_text(p, n);
            out_c(p, ' ');
        }
        return true;
    case SK_ImplFunctionConvention:
        out(p, "@convention(");
        if (n->n == 1 || n->n == 2)
            out_text(p, n->kids[0]);
        if (n->n == 2) {
            out(p, ", mangledCType: \"");
            print(p, n->kids[1], depth + 1, false);
            out_c(p, '"');
        }
        out_c(p, ')');
        return true;
    case SK_ImplErrorResult:
    case SK_ImplYield:
        out(p, k == SK_ImplErrorResult ? "@error " : "@yields ");
        print_kids(p, n, depth, " ");
        return true;
    case SK_ImplParameter:
    case SK_ImplResult:
        print_impl_param(p, n, depth);
        return true;
    case SK_ImplFunctionType:
        print_impl_function_type(p, n, depth);
        return true;
    case SK_ImplInvocationSubstitutions:
        out(p, "for <");
        print_kids(p, kid(p, n, 0), depth, ", ");
        out_c(p, '>');
        return true;
    case SK_ImplPatternSubstitutions:
        out(p, "@substituted ");
        print(p, kid(p, n, 0), depth + 1, false);
        out(p, " for <");
        print_kids(p, kid(p, n, 1), depth, ", ");
        out_c(p, '>');
        return true;
    default:
        return false;
    }
}

/* Witnesses, descriptors and conformances: false when n is none of those. */
static bool print_witness_kind(pr *p, const snode *n, int depth)
{
    int k = n->kind;
    switch (k) {
    case SK_RetroactiveConformance:
        if (n->n == 2)
            print_pair(p, n, "retroactive @ ", 0, "", 1, depth);
        return true;
    case SK_LazyProtocolWitnessTableAccessor:
        print_pair(p, n, "lazy protocol witness table accessor for type ", 0, " and conformance ",
                   1, depth);
        return true;
    case SK_LazyProtocolWitnessTableCacheVariable:
        print_pair(p, n, "lazy protocol witness table cache variable for type ", 0,
                   " and conformance ", 1, depth);
        return true;
    case SK_FieldOffset:
        print_pair(p, n, "", 0, "field offset for ", 1, depth);
        return true;
    case SK_EnumCase:
        out(p, "enum case for ");
        print(p, kid(p, n, 0), depth + 1, false);
        return true;
    case SK_DifferentiabilityWitness:
        print_differentiability_witness(p, n, depth);
        return true;
    case SK_IndexSubset: {
        out_c(p, '{');
        bool any = false;
        for (uint32_t i = 0; i < n->v.text.len; i++) {
            if (n->v.text.p[i] != 'S')
                continue;
            if (any)
                out(p, ", ");
            out_u64(p, i);
            any = true;
        }
        out_c(p, '}');
        return true;
    }
    case SK_AssociatedConformanceDescriptor:
    case SK_DefaultAssociatedConformanceAccessor:
        print_pair(p, n,
                   k == SK_AssociatedConformanceDescriptor
                       ? "associated conformance descriptor for "
                       : "default associated conformance accessor for ",
                   0, ".", 1, depth);
        out(p, ": ");
        print(p, kid(p, n, 2), depth + 1, false);
        return true;
    case SK_AssociatedTypeMetadataAccessor:
        print_pair(p, n, "associated type metadata accessor for ", 1, " in ", 0, depth);
        return true;
    case SK_BaseConformanceDescriptor:
        print_pair(p, n, "base conformance descriptor for ", 0, ": ", 1, depth);
        return true;
    case SK_AssociatedTypeWitnessTableAccessor:
        print_pair(p, n, "associated type witness table accessor for ", 1, " : ", 2, depth);
        out(p, " in ");
        print(p, kid(p, n, 0), depth + 1, false);
        return true;
    case SK_BaseWitnessTableAccessor:
        print_pair(p, n, "base witness table accessor for ", 1, " in ", 0, depth);
        return true;
    case SK_ValueWitness: {
        uint64_t w = idx(p, kid(p, n, 0));
        if (w >= sizeof value_witness_names / sizeof value_witness_names[0]) {
            p->invalid = true;
            return true;
        }
        out(p, value_witness_names[w]);
        out(p, p->o.shorten_witness ? " for " : " value witness for ");
        print(p, kid(p, n, 1), depth + 1, false);
        return true;
    }
    case SK_ProtocolConformance: {
        const snode *c0 = snode_kid(n, 0), *c1 = snode_kid(n, 1), *c2 = snode_kid(n, 2);
        if (n->n == 4) {
            out(p, "property behavior storage of ");
            print(p, c2, depth + 1, false);
            out(p, " in ");
            print(p, c0, depth + 1, false);
            out(p, " : ");
            print(p, c1, depth + 1, false);
        } else {
            print(p, c0, depth + 1, false);
            if (p->o.conformances) {
                out(p, " : ");
                print(p, c1, depth + 1, false);
                out(p, " in ");
                print(p, c2, depth + 1, false);
            }
        }
        return true;
    }
    case SK_GlobalVariableOnceToken:
    case SK_GlobalVariableOnceFunction:
        /* Swift asks whether to print the context and then does not. */
        out(p, k == SK_GlobalVariableOnceToken ? "one-time initialization token for "
                                               : "one-time initialization function for ");
        print(p, kid(p, n, 1), depth + 1, false);
        return true;
    case SK_GlobalVariableOnceDeclList:
        if (n->n == 1) {
            print(p, n->kids[0], depth + 1, false);
        } else {
            out_c(p, '(');
            print_kids(p, n, depth, ", ");
            out_c(p, ')');
        }
        return true;
    default:
        return false;
    }
}

/* Thunks and specializations: false when n is none of those. */
static bool print_thunk_kind(pr *p, const snode *n, int depth)
{
    int k = n->kind;
    switch (k) {
    case SK_OutlinedCopy:
    case SK_OutlinedConsume:
        out(p, k == SK_OutlinedCopy ? "outlined copy of " : "outlined consume of ");
        print(p, kid(p, n, 0), depth + 1, false);
        if (n->n > 1)
            print(p, n->kids[1], depth + 1, false);
        return true;
    case SK_OutlinedBridgedMethod:
        out(p, "outlined bridged method (");
        out_text(p, n);
        out(p, ") of ");
        return true;
    case SK_OutlinedVariable:
    case SK_OutlinedReadOnlyObject:
        out(p, k == SK_OutlinedVariable ? "outlined variable #" : "outlined read-only object #");
        out_u64(p, idx(p, n));
        out(p, " of ");
        return true;
    case SK_FunctionSignatureSpecialization:
        print_spec_prefix(p, n, "function signature specialization", depth, "");
        return true;
    case SK_GenericPartialSpecialization:
        print_spec_prefix(p, n, "generic partial specialization", depth, "Signature = ");
        return true;
    case SK_GenericPartialSpecializationNotReAbstracted:
        print_spec_prefix(p, n, "generic not-reabstracted partial specialization", depth,
                          "Signature = ");
        return true;
    case SK_GenericSpecialization:
    case SK_GenericSpecializationInResilienceDomain:
        print_spec_prefix(p, n, "generic specialization", depth, "");
        return true;
    case SK_GenericSpecializationPrespecialized:
        print_spec_prefix(p, n, "generic pre-specialization", depth, "");
        return true;
    case SK_GenericSpecializationNotReAbstracted:
        print_spec_prefix(p, n, "generic not re-abstracted specialization", depth, "");
        return true;
    case SK_InlinedGenericFunction:
        print_spec_prefix(p, n, "inlined generic function", depth, "");
        return true;
    case SK_GenericSpecializationParam:
        print(p, kid(p, n, 0), depth + 1, false);
        for (uint32_t i = 1; i < n->n; i++) {
            out(p, i == 1 ? " with " : " and ");
            print(p, n->kids[i], depth + 1, false);
        }
        return true;
    case SK_FunctionSignatureSpecializationParamPayload:
        print_maybe_mangled(p, n, depth);
        return true;
    case SK_FunctionSignatureSpecializationParamKind:
        print_spec_param_kind(p, n);
        return true;
    case SK_VTableThunk:
        print_pair(p, n, "vtable thunk for ", 1, " dispatching to ", 0, depth);
        return true;
    case SK_ProtocolWitness:
        print_pair(p, n, "protocol witness for ", 1, " in conformance ", 0, depth);
        return true;
    case SK_PartialApplyForwarder:
    case SK_PartialApplyObjCForwarder:
        out(p, p->o.shorten_partial            ? "partial apply"
               : k == SK_PartialApplyForwarder ? "partial apply forwarder"
                                               : "partial apply ObjC forwarder");
        if (n->n) {
            out(p, " for ");
            print_kids(p, n, depth, NULL);
        }
        return true;
    case SK_KeyPathGetterThunkHelper: case SK_KeyPathSetterThunkHelper:
    case SK_KeyPathUnappliedMethodThunkHelper: case SK_KeyPathAppliedMethodThunkHelper:
        print_key_path(p, n, depth);
        return true;
    case SK_KeyPathEqualsThunkHelper: case SK_KeyPathHashThunkHelper:
        print_key_path_index(p, n, depth);
        return true;
    case SK_ReabstractionThunk: case SK_ReabstractionThunkHelper:
    case SK_ReabstractionThunkHelperWithSelf:
        print_reabstraction(p, n, depth);
        return true;
    case SK_ReabstractionThunkHelperWithGlobalActor:
        print_pair(p, n, "", 0, " with global actor constraint ", 1, depth);
        return true;
    case SK_AutoDiffFunction: case SK_AutoDiffDerivativeVTableThunk:
        print_autodiff_function(p, n, depth);
        return true;
    case SK_AutoDiffSelfReorderingReabstractionThunk:
        print_autodiff_reordering(p, n, depth);
        return true;
    case SK_AutoDiffSubsetParametersThunk:
        print_autodiff_subset(p, n, depth);
        return true;
    case SK_AutoDiffFunctionKind:
        switch (idx(p, n)) {
        case 'f': out(p, "forward-mode derivative"); return true;
        case 'r': out(p, "reverse-mode derivative"); return true;
        case 'd': out(p, "differential"); return true;
        case 'p': out(p, "pullback"); return true;
        default: p->invalid = true; return true;
        }
    case SK_AssociatedTypeGenericParamRef:
        out(p, "generic parameter reference for associated type ");
        print_kids(p, n, depth, NULL);
        return true;
    case SK_ObjCAsyncCompletionHandlerImpl:
    case SK_PredefinedObjCAsyncCompletionHandlerImpl:
        print_completion_handler(p, n, depth);
        return true;
    case SK_AsyncAwaitResumePartialFunction:
    case SK_AsyncSuspendResumePartialFunction:
        if (p->o.async_partial) {
            out_c(p, '(');
            print(p, kid(p, n, 0), depth + 1, false);
            out(p, k == SK_AsyncAwaitResumePartialFunction
                       ? ") await resume partial function for "
                       : ") suspend resume partial function for ");
        }
        return true;
    default:
        return false;
    }
}

/* The kinds not in the tables, and not entities. */
static void print_other(pr *p, const snode *n, int depth)
{
    if (print_name_kind(p, n, depth) || print_type_kind(p, n, depth) ||
        print_generic_kind(p, n, depth) || print_impl_kind(p, n, depth) ||
        print_thunk_kind(p, n, depth) || print_witness_kind(p, n, depth))
        return;
    if (is_conformance_kind(n->kind)) {
        print_conformance_kind(p, n, depth);
        return;
    }
    /* Parts printed by their parents, symbolic references (which no name
     * here carries), and shapes Swift's printer cannot print. */
    p->invalid = true;
}

static const snode *print(pr *p, const snode *n, int depth, bool as_prefix)
{
    if (p->invalid || p->fatal)
        return NULL;
    if (depth > SWIFT_MAX_DEPTH || ++p->steps > MAX_PRINT_STEPS) {
        p->fatal = true;
        return NULL;
    }
    if (!n) {
        p->invalid = true; /* Swift prints "<null node pointer>" */
        return NULL;
    }
    int k = n->kind;
    if (prefixed[k]) {
        out(p, prefixed[k]);
        print(p, kid(p, n, 0), depth + 1, false);
        return NULL;
    }
    if (fixed[k]) {
        out(p, fixed[k]);
        return NULL;
    }
    if (thunk_marks[k]) {
        if (!p->o.shorten_thunk)
            out(p, thunk_marks[k]);
        return NULL;
    }
    if (accessors[k])
        return print_storage(p, kid(p, n, 0), depth, as_prefix, accessors[k]);
    if (is_entity_kind(k))
        return print_entity_kind(p, n, depth, as_prefix);
    print_other(p, n, depth);
    return NULL;
}

bool swift_print_tree(sarena *a, const snode *root, swift_style style, char *out, size_t cap,
                      size_t *len, swift_why *why)
{
    pr p = {.a = a, .o = style == SWIFT_STYLE_SIMPLIFIED ? simplified_opts : full_opts, .buf = out,
            .cap = cap ? cap - 1 : 0};
    print(&p, root, 0, false);
    *why = p.fatal     ? SWIFT_WHY_BOUND
           : p.invalid ? SWIFT_WHY_NAME
           : p.len == 0 ? SWIFT_WHY_EMPTY
                        : SWIFT_WHY_OK;
    /* An empty result is no result: swift-demangle then shows the name. */
    if (p.invalid || p.fatal || p.len == 0)
        return false;
    out[p.len] = 0;
    *len = p.len;
    return true;
}

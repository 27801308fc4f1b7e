/* The tree one Swift demangling builds: node kinds (mirroring the kinds of
 * Swift's DemangleNodes.def, so that the printer behaves like Swift's) and
 * the bounded arena that owns every node and string of one demangling. */
#ifndef SYMD_SWIFT_NODE_H
#define SYMD_SWIFT_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every node kind. C(...) kinds can serve as the context of an entity
 * (Swift's CONTEXT_NODE); N(...) kinds cannot. */
#define SWIFT_NODE_KINDS(C, N)                                                                  \
    C(Allocator) C(AnonymousContext) C(AutoDiffFunction) C(BuiltinTupleType) C(Class)          \
    C(Constructor) C(CurryThunk) C(Deallocator) C(DefaultArgumentInitializer) C(Destructor)    \
    C(DidSet) C(DispatchThunk) C(Enum) C(ExplicitClosure) C(Extension) C(Function) C(Getter)   \
    C(GlobalGetter) C(IVarDestroyer) C(IVarInitializer) C(ImplicitClosure) C(InitAccessor)     \
    C(Initializer) C(IsolatedDeallocator) C(MaterializeForSet) C(Modify2Accessor)              \
    C(ModifyAccessor) C(Module) C(NativeOwningAddressor) C(NativeOwningMutableAddressor)       \
    C(NativePinningAddressor) C(NativePinningMutableAddressor) C(OpaqueReturnTypeOf)           \
    C(OtherNominalType) C(OwningAddressor) C(OwningMutableAddressor)                           \
    C(PropertyWrapperBackingInitializer) C(PropertyWrapperInitFromProjectedValue) C(Protocol)  \
    C(ProtocolSymbolicReference) C(Read2Accessor) C(ReadAccessor) C(Setter) C(Static)          \
    C(Structure) C(Subscript) C(TypeAlias) C(TypeSymbolicReference) C(UnsafeAddressor)         \
    C(UnsafeMutableAddressor) C(Variable) C(WillSet) C(AccessorAttachedMacroExpansion)         \
    C(BodyAttachedMacroExpansion) C(ConformanceAttachedMacroExpansion)                         \
    C(ExtensionAttachedMacroExpansion) C(FreestandingMacroExpansion)                           \
    C(MemberAttachedMacroExpansion) C(MemberAttributeAttachedMacroExpansion)                   \
    C(PeerAttachedMacroExpansion) C(PreambleAttachedMacroExpansion)                            \
    C(MacroExpansionUniqueName)                                                                \
    N(AccessibleFunctionRecord) N(AccessorFunctionReference) N(AnonymousDescriptor)            \
    N(AnyProtocolConformanceList) N(ArgumentTuple) N(AssocTypePath)                            \
    N(AssociatedConformanceDescriptor) N(AssociatedType) N(AssociatedTypeDescriptor)           \
    N(AssociatedTypeGenericParamRef) N(AssociatedTypeMetadataAccessor) N(AssociatedTypeRef)    \
    N(AssociatedTypeWitnessTableAccessor) N(AsyncAnnotation) N(AsyncAwaitResumePartialFunction)\
    N(AsyncFunctionPointer) N(AsyncMainEntryPoint) N(AsyncRemoved)                             \
    N(AsyncSuspendResumePartialFunction) N(AutoClosureType) N(AutoDiffDerivativeVTableThunk)   \
    N(AutoDiffFunctionKind) N(AutoDiffSelfReorderingReabstractionThunk)                        \
    N(AutoDiffSubsetParametersThunk) N(BackDeploymentFallback) N(BackDeploymentThunk)          \
    N(BaseConformanceDescriptor) N(BaseWitnessTableAccessor) N(BoundGenericClass)              \
    N(BoundGenericEnum) N(BoundGenericFunction) N(BoundGenericOtherNominalType)                \
    N(BoundGenericProtocol) N(BoundGenericStructure) N(BoundGenericTypeAlias)                  \
    N(BuiltinFixedArray) N(BuiltinTypeName) N(CFunctionPointer)                                \
    N(CanonicalPrespecializedGenericTypeCachingOnceToken)                                      \
    N(CanonicalSpecializedGenericMetaclass)                                                    \
    N(CanonicalSpecializedGenericTypeMetadataAccessFunction) N(ClangType)                      \
    N(ClassMetadataBaseOffset) N(CompileTimeLiteral) N(ConcreteProtocolConformance)            \
    N(ConcurrentFunctionType) N(ConstValue) N(ConstrainedExistential)                          \
    N(ConstrainedExistentialRequirementList) N(ConstrainedExistentialSelf)                     \
    N(CoroFunctionPointer) N(CoroutineContinuationPrototype) N(DeclContext)                    \
    N(DefaultAssociatedConformanceAccessor) N(DefaultAssociatedTypeMetadataAccessor)           \
    N(DefaultOverride) N(DependentAssociatedConformance) N(DependentAssociatedTypeRef)         \
    N(DependentGenericConformanceRequirement) N(DependentGenericInverseConformanceRequirement)  \
    N(DependentGenericLayoutRequirement) N(DependentGenericParamCount)                         \
    N(DependentGenericParamPackMarker) N(DependentGenericParamType)                            \
    N(DependentGenericParamValueMarker) N(DependentGenericSameShapeRequirement)                \
    N(DependentGenericSameTypeRequirement) N(DependentGenericSignature)                        \
    N(DependentGenericType) N(DependentMemberType) N(DependentPseudogenericSignature)          \
    N(DependentProtocolConformanceAssociated) N(DependentProtocolConformanceInherited)          \
    N(DependentProtocolConformanceOpaque) N(DependentProtocolConformanceRoot)                  \
    N(DifferentiabilityWitness) N(DifferentiableFunctionType) N(DirectMethodReferenceAttribute)\
    N(Directness) N(DistributedAccessor) N(DistributedThunk) N(DroppedArgument)                \
    N(DynamicAttribute) N(DynamicSelf) N(DynamicallyReplaceableFunctionImpl)                   \
    N(DynamicallyReplaceableFunctionKey) N(DynamicallyReplaceableFunctionVar) N(EmptyList)     \
    N(EnumCase) N(ErrorType) N(EscapingAutoClosureType) N(EscapingObjCBlock)                   \
    N(ExistentialMetatype) N(ExtendedExistentialTypeShape) N(ExtensionDescriptor)              \
    N(FieldOffset) N(FirstElementMarker) N(FullObjCResilientClassStub) N(FullTypeMetadata)     \
    N(FunctionSignatureSpecialization) N(FunctionSignatureSpecializationParam)                 \
    N(FunctionSignatureSpecializationParamKind) N(FunctionSignatureSpecializationParamPayload) \
    N(FunctionSignatureSpecializationReturn) N(FunctionType) N(GenericPartialSpecialization)   \
    N(GenericPartialSpecializationNotReAbstracted) N(GenericProtocolWitnessTable)              \
    N(GenericProtocolWitnessTableInstantiationFunction) N(GenericSpecialization)               \
    N(GenericSpecializationInResilienceDomain) N(GenericSpecializationNotReAbstracted)         \
    N(GenericSpecializationParam) N(GenericSpecializationPrespecialized)                       \
    N(GenericTypeMetadataPattern) N(GenericTypeParamDecl) N(Global)                            \
    N(GlobalActorFunctionType) N(GlobalVariableOnceDeclList) N(GlobalVariableOnceFunction)     \
    N(GlobalVariableOnceToken) N(HasSymbolQuery) N(Identifier) N(ImplConvention)               \
    N(ImplCoroutineKind) N(ImplDifferentiabilityKind) N(ImplErasedIsolation) N(ImplErrorResult)\
    N(ImplEscaping) N(ImplFunctionAttribute) N(ImplFunctionConvention)                         \
    N(ImplFunctionConventionName) N(ImplFunctionType) N(ImplInvocationSubstitutions)           \
    N(ImplParameter) N(ImplParameterImplicitLeading) N(ImplParameterIsolated)                  \
    N(ImplParameterResultDifferentiability) N(ImplParameterSending)                            \
    N(ImplPatternSubstitutions) N(ImplResult) N(ImplSendingResult) N(ImplYield) N(InOut)       \
    N(Index) N(IndexSubset) N(InfixOperator) N(InlinedGenericFunction) N(Integer)              \
    N(IsSerialized) N(Isolated) N(IsolatedAnyFunctionType) N(KeyPathAppliedMethodThunkHelper)  \
    N(KeyPathEqualsThunkHelper) N(KeyPathGetterThunkHelper) N(KeyPathHashThunkHelper)          \
    N(KeyPathSetterThunkHelper) N(KeyPathUnappliedMethodThunkHelper) N(LabelList)              \
    N(LazyProtocolWitnessTableAccessor) N(LazyProtocolWitnessTableCacheVariable)               \
    N(LocalDeclName) N(Macro) N(MacroExpansionLoc) N(MergedFunction) N(Metaclass)              \
    N(MetadataInstantiationCache) N(Metatype) N(MetatypeRepresentation) N(MethodDescriptor)    \
    N(MethodLookupFunction) N(ModuleDescriptor) N(NegativeInteger) N(NoDerivative)             \
    N(NoEscapeFunctionType) N(NominalTypeDescriptor) N(NominalTypeDescriptorRecord)            \
    N(NonIsolatedCallerFunctionType) N(NonObjCAttribute)                                       \
    N(NonUniqueExtendedExistentialTypeShapeSymbolicReference)                                  \
    N(NoncanonicalSpecializedGenericTypeMetadata)                                              \
    N(NoncanonicalSpecializedGenericTypeMetadataCache) N(Number)                               \
    N(ObjCAsyncCompletionHandlerImpl) N(ObjCAttribute) N(ObjCBlock)                            \
    N(ObjCMetadataUpdateFunction) N(ObjCResilientClassStub)                                    \
    N(ObjectiveCProtocolSymbolicReference) N(OpaqueReturnType) N(OpaqueReturnTypeIndex)        \
    N(OpaqueReturnTypeParent) N(OpaqueType) N(OpaqueTypeDescriptor)                            \
    N(OpaqueTypeDescriptorAccessor) N(OpaqueTypeDescriptorAccessorImpl)                        \
    N(OpaqueTypeDescriptorAccessorKey) N(OpaqueTypeDescriptorAccessorVar)                      \
    N(OpaqueTypeDescriptorRecord) N(OpaqueTypeDescriptorSymbolicReference)                     \
    N(OutlinedAssignWithCopy) N(OutlinedAssignWithCopyNoValueWitness)                          \
    N(OutlinedAssignWithTake) N(OutlinedAssignWithTakeNoValueWitness) N(OutlinedBridgedMethod) \
    N(OutlinedConsume) N(OutlinedCopy) N(OutlinedDestroy) N(OutlinedDestroyNoValueWitness)     \
    N(OutlinedEnumGetTag) N(OutlinedEnumProjectDataForLoad) N(OutlinedEnumTagStore)            \
    N(OutlinedInitializeWithCopy) N(OutlinedInitializeWithCopyNoValueWitness)                  \
    N(OutlinedInitializeWithTake) N(OutlinedInitializeWithTakeNoValueWitness)                  \
    N(OutlinedReadOnlyObject) N(OutlinedRelease) N(OutlinedRetain) N(OutlinedVariable)         \
    N(Owned) N(Pack) N(PackElement) N(PackElementLevel) N(PackExpansion)                       \
    N(PackProtocolConformance) N(PartialApplyForwarder) N(PartialApplyObjCForwarder)           \
    N(PostfixOperator) N(PredefinedObjCAsyncCompletionHandlerImpl) N(PrefixOperator)           \
    N(PrivateDeclName) N(PropertyDescriptor) N(ProtocolConformance)                            \
    N(ProtocolConformanceDescriptor) N(ProtocolConformanceDescriptorRecord)                    \
    N(ProtocolConformanceRefInOtherModule) N(ProtocolConformanceRefInProtocolModule)           \
    N(ProtocolConformanceRefInTypeModule) N(ProtocolDescriptor) N(ProtocolDescriptorRecord)    \
    N(ProtocolList) N(ProtocolListWithAnyObject) N(ProtocolListWithClass)                      \
    N(ProtocolRequirementsBaseDescriptor) N(ProtocolSelfConformanceDescriptor)                 \
    N(ProtocolSelfConformanceWitness) N(ProtocolSelfConformanceWitnessTable)                   \
    N(ProtocolWitness) N(ProtocolWitnessTable) N(ProtocolWitnessTableAccessor)                 \
    N(ProtocolWitnessTablePattern) N(ReabstractionThunk) N(ReabstractionThunkHelper)           \
    N(ReabstractionThunkHelperWithGlobalActor) N(ReabstractionThunkHelperWithSelf)            \
    N(ReflectionMetadataAssocTypeDescriptor) N(ReflectionMetadataBuiltinDescriptor)            \
    N(ReflectionMetadataFieldDescriptor) N(ReflectionMetadataSuperclassDescriptor)             \
    N(RelatedEntityDeclName) N(ResilientProtocolWitnessTable) N(RetroactiveConformance)        \
    N(ReturnType) N(SILBoxImmutableField) N(SILBoxLayout) N(SILBoxMutableField) N(SILBoxType)  \
    N(SILBoxTypeWithLayout) N(SILPackDirect) N(SILPackIndirect) N(SILThunkIdentity)            \
    N(Sending) N(SendingResultFunctionType) N(Shared) N(SpecializationPassID)                  \
    N(SugaredArray) N(SugaredDictionary) N(SugaredInlineArray) N(SugaredOptional)              \
    N(SugaredParen) N(Suffix) N(SymbolicExtendedExistentialType) N(ThinFunctionType)           \
    N(ThrowsAnnotation) N(Tuple) N(TupleElement) N(TupleElementName) N(Type) N(TypeList)       \
    N(TypeMangling) N(TypeMetadata) N(TypeMetadataAccessFunction)                              \
    N(TypeMetadataCompletionFunction) N(TypeMetadataDemanglingCache)                           \
    N(TypeMetadataInstantiationCache) N(TypeMetadataInstantiationFunction)                     \
    N(TypeMetadataLazyCache) N(TypeMetadataSingletonInitializationCache)                       \
    N(TypedThrowsAnnotation) N(UncurriedFunctionType) N(Uniquable)                             \
    N(UniqueExtendedExistentialTypeShapeSymbolicReference) N(UnknownIndex) N(Unmanaged)        \
    N(Unowned) N(VTableAttribute) N(VTableThunk) N(ValueWitness) N(ValueWitnessTable)          \
    N(VariadicMarker) N(Weak)

typedef enum {
#define SWIFT_NODE_ENUM(name) SK_##name,
    SWIFT_NODE_KINDS(SWIFT_NODE_ENUM, SWIFT_NODE_ENUM)
#undef SWIFT_NODE_ENUM
    SK__COUNT
} snode_kind;

/* What a node carries besides children. */
enum { SP_NONE, SP_TEXT, SP_INDEX };

typedef struct snode snode;
struct snode {
    uint16_t kind;   /* snode_kind */
    uint8_t payload; /* SP_* */
    uint32_t n;      /* children in use */
    uint32_t cap;    /* room in kids */
    snode **kids;    /* inl, or an arena array once more than two */
    snode *inl[2];
    union {
        struct {
            const char *p; /* not NUL-terminated; points into the name or the arena */
            uint32_t len;
        } text;
        uint64_t index;
    } v;
};

/* One demangling's memory: a caller-provided first block, then malloc'ed
 * blocks, all freed at once. Past SWIFT_MAX_NODES nodes or SARENA_MAX_BYTES
 * bytes every allocation fails and `failed` stays set: the demangling is
 * then void, whatever the parser made of the NULLs. */
#define SARENA_MAX_BYTES (48u << 20)

typedef struct sarena_block sarena_block;
typedef struct {
    char *cur, *end;
    sarena_block *blocks; /* malloc'ed, newest first */
    size_t total;         /* bytes malloc'ed so far */
    uint32_t nodes;       /* nodes made so far */
    bool failed;
} sarena;

void sarena_init(sarena *a, void *first, size_t n);
void sarena_free(sarena *a);
/* n bytes, 8-aligned; NULL (and a->failed) past the bounds. */
void *sarena_alloc(sarena *a, size_t n);
/* A copy of p[0..n) in the arena; NULL past the bounds. */
const char *sarena_dup(sarena *a, const char *p, size_t n);

/* Nodes; NULL (and a->failed) past the bounds. */
snode *snode_new(sarena *a, snode_kind k);
snode *snode_text(sarena *a, snode_kind k, const char *p, size_t n);
snode *snode_cstr(sarena *a, snode_kind k, const char *s); /* s is static */
snode *snode_index(sarena *a, snode_kind k, uint64_t index);
/* Appends child to parent; false past the bounds (parent unchanged). */
bool snode_add(sarena *a, snode *parent, snode *child);
/* Child i, NULL when there is none (also when n is NULL). */
static inline snode *snode_kid(const snode *n, size_t i)
{
    return n && i < n->n ? n->kids[i] : NULL;
}
/* Kind of child i, SK__COUNT when there is none: lets checks read flat. */
static inline int snode_kid_kind(const snode *n, size_t i)
{
    const snode *k = snode_kid(n, i);
    return k ? k->kind : SK__COUNT;
}
void snode_reverse(snode *n, size_t from);
void snode_remove(snode *n, size_t at);
/* The first child of kind k, NULL when none. */
snode *snode_find(const snode *n, snode_kind k);
/* Whether the node's text equals the NUL-terminated s. */
bool snode_text_is(const snode *n, const char *s);

bool snode_is_context(int k);

#endif

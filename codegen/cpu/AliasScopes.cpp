//===- AliasScopes.cpp - memref loads/stores → LLVM with alias scopes ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-alias-scopes`: lowers each `memref.load` / `memref.store` whose
// buffer can be traced to a root to an `llvm.load` / `llvm.store` carrying
// LLVM scoped-noalias metadata: one scope per root, and as `noalias` every
// root whose memory is disjoint from it.
//
// Why: kiln-cpu-plan-memory makes the intermediates views of one arena, so they
// share one underlying object; LLVM's loop vectorizer then cannot tell that
// a BatchNorm epilogue's per-channel scale (one view) and its output (another
// view) never overlap ("unknown data dependence") and leaves the loop scalar.
// Loops outlined for OpenMP lose even the facts about distinct allocations
// and `noalias` arguments. The planner's offsets and sizes say exactly which
// views are disjoint; this pass hands that to LLVM.
//
// Roots (traced through views, casts, reinterpret_casts and
// extract_strided_metadata): a byte range `[offset, offset + size)` of a
// `memref.view` with static shift and shape; an `alloc`, `alloca` or
// `get_global`; a function argument marked `llvm.noalias` (every buffer
// argument of a kiln entry function: inputs are never written and outputs
// overlap nothing). Two roots are disjoint when they are different objects
// or byte ranges of one object that do not intersect; a view of unknown
// extent overlaps its whole object. Accesses that cannot be traced keep no
// metadata, which LLVM reads as "may alias anything". The rest of the
// lowering is MemRefToLLVM's (getStridedElementPtr); this pass runs right
// before finalize-memref-to-llvm, which converts the views themselves.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

#include <optional>
#include <type_traits>

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUALIASSCOPESPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// Roots in one function beyond which no metadata is attached (each
/// access's noalias list is O(roots); LLVM's scoped-AA queries walk it).
constexpr size_t kMaxRoots = 1024;

/// A disjointness class of memory: an object, or a byte range of it.
struct Root {
  void *object = nullptr;      // defining Operation* or a BlockArgument's impl
  int64_t begin = 0, end = -1; // end < 0: the whole object
  bool operator==(const Root &o) const {
    return object == o.object && begin == o.begin && end == o.end;
  }
};

bool disjoint(const Root &a, const Root &b) {
  if (a.object != b.object)
    return true;
  if (a.end < 0 || b.end < 0)
    return false;
  return a.end <= b.begin || b.end <= a.begin;
}

/// Byte size of a static memref type, or nullopt.
std::optional<int64_t> staticBytes(MemRefType type) {
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  unsigned bits = type.getElementTypeBitWidth();
  if (bits % 8)
    return std::nullopt;
  return type.getNumElements() * (bits / 8);
}

/// The root `buffer` lives in, or nullopt when it cannot be traced.
std::optional<Root> rootOf(Value buffer, func::FuncOp fn) {
  Value v = buffer;
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != &fn.getBody().front() ||
          !fn.getArgAttr(arg.getArgNumber(), LLVM::LLVMDialect::getNoAliasAttrName()))
        return std::nullopt;
      return Root{arg.getAsOpaquePointer(), 0, -1};
    }
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (isa<memref::AllocOp, memref::AllocaOp, memref::GetGlobalOp>(def))
      return Root{def, 0, -1};
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      std::optional<Root> base = rootOf(view.getSource(), fn);
      if (!base)
        return std::nullopt;
      std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
      std::optional<int64_t> bytes = staticBytes(view.getType());
      if (base->end < 0 && shift && bytes)
        return Root{base->object, *shift, *shift + *bytes};
      return Root{base->object, 0, -1};
    }
    if (auto meta = dyn_cast<memref::ExtractStridedMetadataOp>(def)) {
      v = meta.getSource();
      continue;
    }
    if (isa<memref::ReinterpretCastOp, memref::CastOp, memref::SubViewOp, memref::ExpandShapeOp,
            memref::CollapseShapeOp, memref::TransposeOp, memref::AssumeAlignmentOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    return std::nullopt;
  }
}

/// The scopes of one function's accesses: per access, its root's index.
struct Scopes {
  llvm::DenseMap<Operation *, unsigned> rootOfAccess;
  SmallVector<ArrayAttr> aliasScopes, noaliasScopes; // per root
};

Scopes assignScopes(func::FuncOp fn) {
  Scopes scopes;
  SmallVector<Root> roots;
  fn.walk([&](Operation *op) {
    Value buffer;
    if (auto load = dyn_cast<memref::LoadOp>(op))
      buffer = load.getMemref();
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      buffer = store.getMemref();
    else
      return;
    std::optional<Root> root = rootOf(buffer, fn);
    if (!root)
      return;
    auto it = llvm::find(roots, *root);
    unsigned index = it - roots.begin();
    if (it == roots.end())
      roots.push_back(*root);
    scopes.rootOfAccess[op] = index;
  });
  if (roots.size() < 2 || roots.size() > kMaxRoots) {
    scopes.rootOfAccess.clear();
    return scopes;
  }
  MLIRContext *ctx = fn.getContext();
  auto domain =
      LLVM::AliasScopeDomainAttr::get(ctx, StringAttr::get(ctx, "kiln buffers of " + fn.getName()));
  SmallVector<Attribute> scope;
  for (size_t i = 0; i < roots.size(); ++i)
    scope.push_back(LLVM::AliasScopeAttr::get(domain));
  for (size_t i = 0; i < roots.size(); ++i) {
    SmallVector<Attribute> others;
    for (size_t j = 0; j < roots.size(); ++j)
      if (j != i && disjoint(roots[i], roots[j]))
        others.push_back(scope[j]);
    scopes.aliasScopes.push_back(ArrayAttr::get(ctx, {scope[i]}));
    scopes.noaliasScopes.push_back(others.empty() ? ArrayAttr() : ArrayAttr::get(ctx, others));
  }
  return scopes;
}

template <typename Access>
void setScopes(Access access, Operation *original, const Scopes &scopes) {
  auto it = scopes.rootOfAccess.find(original);
  if (it == scopes.rootOfAccess.end())
    return;
  access.setAliasScopesAttr(scopes.aliasScopes[it->second]);
  if (ArrayAttr noalias = scopes.noaliasScopes[it->second])
    access.setNoaliasScopesAttr(noalias);
}

/// memref.load / memref.store → llvm.load / llvm.store (MemRefToLLVM's
/// address computation) with the access's scopes.
template <typename Access> struct ScopedAccessLowering : ConvertOpToLLVMPattern<Access> {
  ScopedAccessLowering(const LLVMTypeConverter &converter, const Scopes &scopes)
      : ConvertOpToLLVMPattern<Access>(converter), scopes(scopes) {}
  LogicalResult matchAndRewrite(Access op, typename Access::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    MemRefType type = op.getMemRefType();
    Type element = this->getTypeConverter()->convertType(type.getElementType());
    if (!element)
      return failure();
    Value ptr = this->getStridedElementPtr(op.getLoc(), type, adaptor.getMemref(),
                                           adaptor.getIndices(), rewriter);
    if constexpr (std::is_same_v<Access, memref::LoadOp>) {
      auto load = rewriter.create<LLVM::LoadOp>(op.getLoc(), element, ptr, /*alignment=*/0,
                                                /*isVolatile=*/false, op.getNontemporal());
      setScopes(load, op, scopes);
      rewriter.replaceOp(op, load.getResult());
    } else {
      auto store = rewriter.create<LLVM::StoreOp>(op.getLoc(), adaptor.getValue(), ptr,
                                                  /*alignment=*/0, /*isVolatile=*/false,
                                                  op.getNontemporal());
      setScopes(store, op, scopes);
      rewriter.eraseOp(op);
    }
    return success();
  }
  const Scopes &scopes;
};

struct AliasScopes : impl::CpuAliasScopesPassBase<AliasScopes> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    Scopes scopes = assignScopes(fn);
    if (scopes.rootOfAccess.empty())
      return;
    LLVMTypeConverter converter(&getContext());
    RewritePatternSet patterns(&getContext());
    patterns.add<ScopedAccessLowering<memref::LoadOp>, ScopedAccessLowering<memref::StoreOp>>(
        converter, scopes);
    ConversionTarget target(getContext());
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addDynamicallyLegalOp<memref::LoadOp, memref::StoreOp>(
        [&](Operation *op) { return !scopes.rootOfAccess.count(op); });
    if (failed(applyPartialConversion(fn, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::kiln

//===- LinalgToBlas.cpp - f32/f64 matmuls on memrefs → BLAS calls ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// After bufferization, replaces `linalg.matmul`, `linalg.matmul_transpose_a`,
// `linalg.matmul_transpose_b`, their batched forms and the
// shared-left-operand contraction generic of codegen/common/Matmul.cpp
// (C[b] = A x B[b]: A is passed as a batch view with stride 0) on f32/f64
// memrefs whose innermost dims are contiguous with calls to
// `kiln_blas_{s,d}gemm[_batched](A, B, C, transB, beta)` (bf16 A and B
// with an f32 C, CPU autocast's products: `kiln_blas_bf16gemm[_batched]`), declared with
// `llvm.emit_c_interface` so they lower to `_mlir_ciface_kiln_blas_*`,
// which the JIT resolves to runtime/cpu/BlasShims.cpp. Operands are cast to
// fully dynamic strided memrefs. A zero `linalg.fill` of C right before the
// matmul (only side-effect-free ops in between) is erased and becomes
// beta = 0 (fills of other buffers may come in between). A transposed left
// operand (`_transpose_a`, from kiln-cpu-fold-transposed-operands) is
// passed as a `memref.transpose` view of the stored matrix: the shim passes
// unit-row-stride operands to the BLAS as transposed (no copy). Other
// element types and layouts are left alone.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "codegen/common/Patterns.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPULINALGTOBLASPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// True when the innermost dim of `type` is known not to be strided.
bool innermostContiguous(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(getStridesAndOffset(type, strides, offset)))
    return false;
  return strides.back() == 1 || ShapedType::isDynamic(strides.back()) ||
         type.getShape().back() == 1;
}

/// Where a memref's bytes come from: its root (an allocation or function
/// argument, through views and casts) and, for a `memref.view` of an arena
/// at a constant offset with a static identity-layout type, the byte range
/// [lo, hi) it covers (hi < 0: unknown, the whole root).
struct Extent {
  Value root;
  int64_t lo = 0, hi = -1;
};

Extent extentOf(Value v) {
  Extent e;
  if (auto cast = v.getDefiningOp<memref::CastOp>())
    return extentOf(cast.getSource());
  if (auto transpose = v.getDefiningOp<memref::TransposeOp>())
    return {extentOf(transpose.getIn()).root, 0, -1};
  if (auto view = v.getDefiningOp<memref::ViewOp>()) {
    auto type = view.getType();
    APInt shift;
    if (type.hasStaticShape() && type.getLayout().isIdentity() && view.getSizes().empty() &&
        matchPattern(view.getByteShift(), m_ConstantInt(&shift)) &&
        type.getElementType().isIntOrFloat()) {
      e = extentOf(view.getSource());
      if (e.hi >= 0)
        return {e.root, -1, -1}; // a view of a view: not tracked
      e.lo = shift.getSExtValue();
      e.hi = e.lo + type.getNumElements() * (type.getElementTypeBitWidth() / 8);
      return e;
    }
  }
  if (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    return {extentOf(view.getViewSource()).root, 0, -1};
  return {v, 0, -1};
}

/// True when `a` and `b` cannot share a byte: different allocations or
/// function arguments (kiln-cpu-in-place-outputs already made an output
/// that updates an input the same argument), or disjoint ranges of one
/// arena.
bool disjoint(Value a, Value b) {
  Extent x = extentOf(a), y = extentOf(b);
  auto distinctRoot = [](Value r) {
    return isa<BlockArgument>(r) || r.getDefiningOp<memref::AllocOp>() ||
           r.getDefiningOp<memref::AllocaOp>();
  };
  if (x.root != y.root)
    return distinctRoot(x.root) && distinctRoot(y.root);
  return x.hi >= 0 && y.hi >= 0 && (x.hi <= y.lo || y.hi <= x.lo);
}

/// True when `op` reads and writes no memory that may share bytes with `v`
/// (and has known effects).
bool leavesAlone(Operation *op, Value v) {
  if (isMemoryEffectFree(op))
    return true;
  // A GEMM this pass already made a call: the shim writes C and reads A, B.
  if (auto call = dyn_cast<func::CallOp>(op);
      call && call.getCallee().starts_with("kiln_blas_") && call.getNumOperands() == 5)
    return disjoint(call.getOperand(0), v) && disjoint(call.getOperand(1), v) &&
           disjoint(call.getOperand(2), v);
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::all_of(list, [&](const MemoryEffects::EffectInstance &e) {
    if (!isa<MemoryEffects::Write, MemoryEffects::Free, MemoryEffects::Read>(e.getEffect()))
      return true;
    return e.getValue() && disjoint(e.getValue(), v);
  });
}

/// The zero fill of `c` that `op` can absorb as beta = 0, if any: the last
/// op before `op` that writes `c`, when everything in between leaves `c`
/// alone (other fills, the left operand's transposes, views).
linalg::FillOp findZeroFill(Operation *op, Value c) {
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(prev); fill && fill.getDpsInits()[0] == c)
      return matchPattern(fill.getDpsInputs()[0], m_AnyZeroFloat()) ? fill : nullptr;
    if (!leavesAlone(prev, c))
      return nullptr;
  }
  return nullptr;
}

/// memref<?x...x?xT, strided<[?, ...], offset: ?>>.
MemRefType getDynamicStridedMemRefType(int64_t rank, Type elem) {
  SmallVector<int64_t> dyn(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(elem.getContext(), ShapedType::kDynamic, dyn);
  return MemRefType::get(dyn, elem, layout);
}

/// Returns (declaring it on first use) the shim `name` for `rank`-d memrefs
/// of `in` (A, B) and `elem` (C, beta).
func::FuncOp getOrDeclare(ModuleOp module, StringRef name, Type in, Type elem, int64_t rank) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  MLIRContext *ctx = module.getContext();
  auto memref = getDynamicStridedMemRefType(rank, elem);
  auto input = getDynamicStridedMemRefType(rank, in);
  auto type = FunctionType::get(ctx, {input, input, memref, IntegerType::get(ctx, 32), elem}, {});
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto f = b.create<func::FuncOp>(module.getLoc(), name, type);
  f.setPrivate();
  f->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  return f;
}

/// The 2-D memref `a` ([M, K]) as a [batch, M, K] view with batch stride 0
/// (every batch element reads the same matrix; no copy).
Value broadcastView(OpBuilder &builder, Location loc, Value a, OpFoldResult batch) {
  auto meta = builder.create<memref::ExtractStridedMetadataOp>(loc, a);
  SmallVector<OpFoldResult> sizes = {batch, meta.getSizes()[0], meta.getSizes()[1]};
  SmallVector<OpFoldResult> strides = {builder.getIndexAttr(0), meta.getStrides()[0],
                                       meta.getStrides()[1]};
  auto type = getDynamicStridedMemRefType(3, cast<MemRefType>(a.getType()).getElementType());
  return builder.create<memref::ReinterpretCastOp>(loc, type, meta.getBaseBuffer(),
                                                   OpFoldResult(meta.getOffset()), sizes, strides);
}

/// Replaces `op` with a shim call; returns false when it does not qualify.
bool rewrite(linalg::LinalgOp op, ModuleOp module) {
  if (!op.hasPureBufferSemantics())
    return false;
  Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
  Value c = op.getDpsInits()[0];
  bool sharedLhs = isSharedLhsBatchMatmul(op);
  auto cType = cast<MemRefType>(c.getType());
  Type elem = cType.getElementType();
  if (!elem.isF32() && !elem.isF64())
    return false;
  // bf16 operands with an f32 accumulator (codegen/common/Matmul.cpp's
  // lowering of a bf16 kiln.matmul): the bf16 GEMM shim.
  Type in = cast<MemRefType>(a.getType()).getElementType();
  bool bf16 = elem.isF32() && in.isBF16();
  for (Value v : {a, b, c}) {
    auto t = cast<MemRefType>(v.getType());
    if (t.getElementType() != (v == c || !bf16 ? elem : in) || !innermostContiguous(t))
      return false;
  }
  bool batched =
      sharedLhs ||
      isa<linalg::BatchMatmulOp, linalg::BatchMatmulTransposeAOp, linalg::BatchMatmulTransposeBOp>(
          op);
  bool transA = isa<linalg::MatmulTransposeAOp, linalg::BatchMatmulTransposeAOp>(op);
  bool transB = isa<linalg::MatmulTransposeBOp, linalg::BatchMatmulTransposeBOp>(op);
  std::string name = std::string("kiln_blas_") +
                     (bf16           ? "bf16"
                      : elem.isF32() ? "s"
                                     : "d") +
                     "gemm" + (batched ? "_batched" : "");
  int64_t rank = batched ? 3 : 2;
  func::FuncOp callee = getOrDeclare(module, name, bf16 ? in : elem, elem, rank);

  OpBuilder builder(op);
  Location loc = op.getLoc();
  double beta = 1.0;
  if (linalg::FillOp fill = findZeroFill(op, c)) {
    fill.erase();
    beta = 0.0;
  }
  SmallVector<Value> args;
  if (sharedLhs)
    a = broadcastView(builder, loc, a, memref::getMixedSize(builder, loc, c, 0));
  if (transA) {
    // A stored [..., K, M]: the shim sees an [..., M, K] view with unit row
    // stride and calls the BLAS with transA.
    SmallVector<unsigned> perm =
        batched ? SmallVector<unsigned>{0, 2, 1} : SmallVector<unsigned>{1, 0};
    AffineMap swap = AffineMap::getPermutationMap(perm, builder.getContext());
    a = builder.create<memref::TransposeOp>(loc, a, AffineMapAttr::get(swap));
  }
  for (Value v : {a, b, c}) {
    MemRefType dynType =
        getDynamicStridedMemRefType(rank, cast<MemRefType>(v.getType()).getElementType());
    args.push_back(v.getType() == dynType ? v : builder.create<memref::CastOp>(loc, dynType, v));
  }
  args.push_back(builder.create<arith::ConstantIntOp>(loc, transB ? 1 : 0, 32));
  args.push_back(builder.create<arith::ConstantOp>(loc, builder.getFloatAttr(elem, beta)));
  builder.create<func::CallOp>(loc, callee, args);
  op->erase();
  return true;
}

struct CpuLinalgToBlasPass : impl::CpuLinalgToBlasPassBase<CpuLinalgToBlasPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (isBlasGemm(op))
        candidates.push_back(op);
    });
    for (linalg::LinalgOp op : candidates)
      (void)rewrite(op, module);
  }
};

} // namespace
} // namespace mlir::kiln

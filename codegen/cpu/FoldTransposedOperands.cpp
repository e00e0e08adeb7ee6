//===- FoldTransposedOperands.cpp - GEMM operands read through transposes ---===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-fold-transposed-operands` (Passes.td): on tensors, a matmul
// whose operand is only a copy of another matrix with its last two dims
// swapped (`linalg.transpose`, or the generic kiln-fuse-linalg-elementwise
// makes of one) reads that matrix instead, as the transposed-operand
// variant of the named op (`linalg.matmul_transpose_a`/`_b`, batched too;
// a transposed operand of a `_transpose_b` op turns it back into a plain
// matmul). kiln-cpu-linalg-to-blas then hands the stored matrix to the BLAS
// with its transpose flag: kiln-autodiff's weight gradients `g^T x` and
// attention's `p^T dO` run without the copy. Done before bufferization, so
// the source stays alive by construction (no aliasing to prove).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUFOLDTRANSPOSEDOPERANDSPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// The identity permutation of `rank` dims with the last two swapped.
SmallVector<int64_t> lastTwoSwapped(int64_t rank) {
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

/// True when `generic` copies its single input through `perm` (the form
/// `linalg::generalizeNamedOp` gives a `linalg.transpose`).
bool isPermutingCopy(linalg::GenericOp generic, ArrayRef<int64_t> perm) {
  if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return false;
  SmallVector<unsigned> dims(perm.begin(), perm.end());
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (maps[0] != AffineMap::getPermutationMap(dims, generic.getContext()) || !maps[1].isIdentity())
    return false;
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  return yield.getNumOperands() == 1 && yield.getOperand(0) == generic.getBody()->getArgument(0);
}

/// The matrix `v` copies with its last two dims swapped, when `v` is such a
/// copy used only here; else null.
Value swappedSource(Value v) {
  if (!v.hasOneUse())
    return nullptr;
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() < 2)
    return nullptr;
  SmallVector<int64_t> perm = lastTwoSwapped(type.getRank());
  if (auto transpose = v.getDefiningOp<linalg::TransposeOp>())
    return transpose.getPermutation() == ArrayRef<int64_t>(perm) ? transpose.getInput() : nullptr;
  if (auto generic = v.getDefiningOp<linalg::GenericOp>())
    return isPermutingCopy(generic, perm) ? generic.getDpsInputs()[0] : nullptr;
  return nullptr;
}

/// True for the result element types kiln-cpu-linalg-to-blas calls a BLAS
/// for (other types keep the copy: their loops read contiguous operands).
bool blasResult(linalg::LinalgOp op) {
  Type elem = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  return elem.isF32() || elem.isF64();
}

/// `From` with operand `Index` (0: A, 1: B) a swapped copy → `To` reading
/// the copy's source.
template <typename From, typename To, unsigned Index>
struct FoldSwappedOperand : OpRewritePattern<From> {
  using OpRewritePattern<From>::OpRewritePattern;

  LogicalResult matchAndRewrite(From op, PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || !blasResult(op))
      return rewriter.notifyMatchFailure(op, "not a BLAS matmul on tensors");
    SmallVector<Value> inputs = op.getDpsInputs();
    Value source = swappedSource(inputs[Index]);
    if (!source)
      return rewriter.notifyMatchFailure(op, "operand is not a transposed copy");
    inputs[Index] = source;
    rewriter.replaceOpWithNewOp<To>(op, inputs, op.getDpsInits());
    return success();
  }
};

struct CpuFoldTransposedOperandsPass
    : impl::CpuFoldTransposedOperandsPassBase<CpuFoldTransposedOperandsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    // A^T B, A B^T, and A (B^T)^T = A B; the same batched.
    patterns.add<FoldSwappedOperand<linalg::MatmulOp, linalg::MatmulTransposeAOp, 0>,
                 FoldSwappedOperand<linalg::MatmulOp, linalg::MatmulTransposeBOp, 1>,
                 FoldSwappedOperand<linalg::MatmulTransposeBOp, linalg::MatmulOp, 1>,
                 FoldSwappedOperand<linalg::BatchMatmulOp, linalg::BatchMatmulTransposeAOp, 0>,
                 FoldSwappedOperand<linalg::BatchMatmulOp, linalg::BatchMatmulTransposeBOp, 1>,
                 FoldSwappedOperand<linalg::BatchMatmulTransposeBOp, linalg::BatchMatmulOp, 1>>(
        ctx);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::kiln

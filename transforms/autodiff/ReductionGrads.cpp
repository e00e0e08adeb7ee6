//===- ReductionGrads.cpp - gradient rules of matmul and reductions --------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reverse-mode rules for kiln.matmul, kiln.sum, kiln.mean, kiln.softmax and
// kiln.layer_norm (GradRules.h). Matmul's gradients are GEMMs with the other
// operand transposed (broadcast batch dims are summed by the driver);
// reductions broadcast the gradient back; softmax uses its result;
// layer_norm recomputes its mean and rstd from the saved input (in f32 for
// 16-bit floats, as its decomposition) instead of saving them.
//===----------------------------------------------------------------------===//
#include "transforms/autodiff/GradRules.h"

#include "ir/KilnOps.h"

#include "llvm/ADT/Sequence.h"

namespace mlir::kiln {
namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// `v` with its last two dims swapped.
Value transposeLast(GradBuilder &gb, Value v) {
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return gb.b.create<PermuteOp>(gb.loc, v, perm);
}

LogicalResult matmulGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                         std::string &) {
  Value a = op->getOperand(0), c = op->getOperand(1);
  if (gb.needs(a))
    grads[0] = gb.b.create<MatmulOp>(gb.loc, g, transposeLast(gb, gb.primal(c)));
  if (!gb.needs(c))
    return success();
  RankedTensorType at = typeOf(a);
  if (typeOf(c).getRank() == 2 && at.getRank() >= 2 && at.hasStaticShape()) {
    // A weight shared by every batch row (F.linear on [..., K]): one GEMM
    // over the flattened rows instead of a batched product summed after.
    int64_t k = at.getDimSize(at.getRank() - 1);
    int64_t rows = 1; // the leading sizes' product (k may be 0)
    for (int64_t d = 0; d + 1 < at.getRank(); ++d)
      rows *= at.getDimSize(d);
    int64_t n = typeOf(c).getDimSize(1);
    Value a2 = gb.reshape(gb.primal(a), {rows, k});
    Value g2 = gb.reshape(g, {rows, n});
    auto perm = c.getDefiningOp<PermuteOp>();
    if (perm && perm.getDims() == ArrayRef<int64_t>{1, 0}) {
      // c = W^T (F.linear): dW = g^T @ a, written as (g^T @ a)^T so that
      // the permute rule's transpose folds away (no [N, K] transpose).
      Value gt = transposeLast(gb, g2);
      grads[1] = transposeLast(gb, gb.b.create<MatmulOp>(gb.loc, gt, a2));
      return success();
    }
    grads[1] = gb.b.create<MatmulOp>(gb.loc, transposeLast(gb, a2), g2);
    return success();
  }
  grads[1] = gb.b.create<MatmulOp>(gb.loc, transposeLast(gb, gb.primal(a)), g);
  return success();
}

/// The gradient of a reduction over `dims` broadcast back to `in`'s shape.
FailureOr<Value> expandReduced(GradBuilder &gb, Value g, RankedTensorType in,
                               ArrayRef<int64_t> dims, std::string &why) {
  if (!in.hasStaticShape()) {
    why = "the gradient of a dynamic-shape reduction is not implemented";
    return failure();
  }
  SmallVector<int64_t> kept(in.getShape());
  for (int64_t d : dims)
    kept[d] = 1;
  return gb.broadcast(gb.reshape(g, kept), in.getShape());
}

template <typename OpTy>
LogicalResult reductionGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                            std::string &why) {
  auto red = cast<OpTy>(op);
  RankedTensorType in = typeOf(red.getInput());
  FailureOr<Value> full = expandReduced(gb, g, in, red.getDims(), why);
  if (failed(full))
    return failure();
  grads[0] = *full;
  if constexpr (std::is_same_v<OpTy, MeanOp>) {
    int64_t count = 1;
    for (int64_t d : red.getDims())
      count *= in.getDimSize(d);
    grads[0] = gb.div(*full, gb.scalar(in.getElementType(), static_cast<double>(count)));
  }
  return success();
}

/// dx = y * (g - sum(g * y, dim)).
LogicalResult softmaxGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                          std::string &) {
  auto soft = cast<SoftmaxOp>(op);
  Value y = gb.primal(soft.getResult());
  SmallVector<int64_t, 1> dims;
  if (typeOf(y).getRank() > 0)
    dims.push_back(soft.getDim());
  Value dot = gb.b.create<SumOp>(gb.loc, gb.mul(g, y), dims, /*keepdim=*/true);
  grads[0] = gb.mul(y, gb.sub(g, dot));
  return success();
}

/// With xhat = (x - mean) * rstd over the normalized dims D:
/// dweight = sum(g * xhat), dbias = sum(g) (summed by the driver),
/// dx = rstd * (gh - mean(gh, D) - xhat * mean(gh * xhat, D)), gh = g * weight.
LogicalResult layerNormGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                            std::string &) {
  auto ln = cast<LayerNormOp>(op);
  RankedTensorType type = ln.getType();
  auto f = llvm::cast<FloatType>(type.getElementType());
  Type elt = f.getWidth() < 32 ? Float32Type::get(f.getContext()) : Type(f);
  int64_t rank = type.getRank(), n = static_cast<int64_t>(ln.getNumDims());
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(rank - n, rank));
  auto mean = [&](Value v) { return gb.b.create<MeanOp>(gb.loc, v, dims, /*keepdim=*/true); };
  Value x = gb.cast(gb.primal(ln.getInput()), elt);
  g = gb.cast(g, elt);
  Value xc = gb.sub(x, mean(x));
  Value var = mean(gb.mul(xc, xc));
  Value eps = gb.scalar(elt, ln.getEps().convertToDouble());
  Value rstd = gb.b.create<RsqrtOp>(gb.loc, gb.add(var, eps));
  Value xhat = gb.mul(xc, rstd);
  if (ln.getWeight() && gb.needs(ln.getWeight()))
    grads[1] = gb.mul(g, xhat);
  if (ln.getBias() && gb.needs(ln.getBias()))
    grads[ln.getWeight() ? 2 : 1] = g;
  if (!gb.needs(ln.getInput()))
    return success();
  Value gh = ln.getWeight() ? gb.mul(g, gb.cast(gb.primal(ln.getWeight()), elt)) : g;
  Value inner = gb.sub(gb.sub(gh, mean(gh)), gb.mul(xhat, mean(gb.mul(gh, xhat))));
  grads[0] = gb.mul(rstd, inner);
  return success();
}

} // namespace

void addReductionGradRules(GradRuleTable &t) {
  t[MatmulOp::getOperationName()] = matmulGrad;
  t[SumOp::getOperationName()] = reductionGrad<SumOp>;
  t[MeanOp::getOperationName()] = reductionGrad<MeanOp>;
  t[SoftmaxOp::getOperationName()] = softmaxGrad;
  t[LayerNormOp::getOperationName()] = layerNormGrad;
}

} // namespace mlir::kiln

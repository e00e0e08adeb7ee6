//===- FoldQuant.cpp - q/dq around a matmul → kiln.qlinear -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `kiln-fold-quant` (described in transforms/QuantPasses.td): the
// q/dq pattern `kiln.quant.prepare`'d linear layers capture (a dequantized,
// transposed int8 weight on the right of a kiln.matmul, optionally a
// dynamically quantized input on the left, optionally a bias add after)
// becomes one kiln.qlinear (a statically quantized input: kiln.quantize_static
// and its inverse dequantize, the scale and zero point carried over), the integer GEMM with a
// dequantize + bias epilogue; int4 weights with one scale per group of K
// (`linear_int4`: the int4 view split into groups, dequantized, merged back)
// give a weight-only qlinear with `group_size`. Anything that does not match
// exactly stays as it is (float).
//===----------------------------------------------------------------------===//
#include "transforms/QuantPasses.h"

#include "ir/KilnOps.h"
#include "ir/KilnQuantOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_FOLDQUANTPASS
#include "transforms/QuantPasses.h.inc"

namespace {

RankedTensorType rankedOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The quantized weight of a matmul: int8 [N, K] values with [N, 1]
/// scales, or (`group` set) int4 values with [N, K / group] scales.
struct WeightMatch {
  Value weight, scale;
  std::optional<int64_t> group;
};

/// `rhs` = permute<[1, 0]>(dequantize(w, ws)) with int8 `w` [N, K] and `ws`
/// [N, 1].
std::optional<WeightMatch> matchChannelWeight(DequantizeOp dq) {
  auto w = rankedOf(dq.getInput()), s = rankedOf(dq.getScale());
  if (!w.getElementType().isSignlessInteger(8) || dq.getZeroPoint() != 0 || w.getRank() != 2 ||
      s.getRank() != 2 || s.getDimSize(0) != w.getDimSize(0) || s.getDimSize(1) != 1 ||
      ShapedType::isDynamic(w.getDimSize(0)))
    return std::nullopt;
  return WeightMatch{dq.getInput(), dq.getScale(), std::nullopt};
}

/// The grouped int4 pattern kiln.quant's `linear_int4` captures:
/// reshape<[N, K]>(dequantize(reshape<[N, G, g]>(int4_view(words)),
/// reshape<[N, G, 1]>(ws))) with `ws` [N, G].
std::optional<WeightMatch> matchGroupedWeight(ReshapeOp merged) {
  auto dq = merged.getInput().getDefiningOp<DequantizeOp>();
  auto split = dq ? dq.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  auto view = split ? split.getInput().getDefiningOp<Int4ViewOp>() : Int4ViewOp();
  auto scaleSplit = dq ? dq.getScale().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!view || !scaleSplit || dq.getZeroPoint() != 0)
    return std::nullopt;
  auto w = rankedOf(view.getResult()), grouped = rankedOf(split.getResult());
  auto scale = rankedOf(scaleSplit.getInput()), out = rankedOf(merged.getResult());
  if (!w.hasStaticShape() || grouped.getRank() != 3 || out.getShape() != w.getShape())
    return std::nullopt;
  int64_t n = w.getDimSize(0), groups = grouped.getDimSize(1), group = grouped.getDimSize(2);
  if (grouped.getDimSize(0) != n || groups * group != w.getDimSize(1) || group % 32 ||
      scale.getShape() != ArrayRef<int64_t>{n, groups} ||
      rankedOf(scaleSplit.getResult()).getShape() != ArrayRef<int64_t>{n, groups, 1})
    return std::nullopt;
  return WeightMatch{view.getResult(), scaleSplit.getInput(), group};
}

/// The quantized weight behind `rhs`, the matmul's transposed right operand;
/// nullopt when `rhs` is anything else.
std::optional<WeightMatch> matchWeight(Value rhs) {
  auto permute = rhs.getDefiningOp<PermuteOp>();
  if (!permute || permute.getDims() != ArrayRef<int64_t>{1, 0})
    return std::nullopt;
  if (auto dq = permute.getInput().getDefiningOp<DequantizeOp>())
    return matchChannelWeight(dq);
  if (auto merged = permute.getInput().getDefiningOp<ReshapeOp>())
    return matchGroupedWeight(merged);
  return std::nullopt;
}

/// How the matmul's left operand was quantized.
struct InputMatch {
  Value input;
  StringRef activations; // per_token, per_tensor, static or none
  FloatAttr scale;       // static only
  IntegerAttr zeroPoint; // static only
};

/// The input of `lhs` = dequantize(quantize(x)) (both results of one
/// quantize), or = dequantize(quantize_static(x)) with the same scale and
/// zero point; else `lhs` itself, weight-only ("none"). A dequantize that
/// does not invert its quantize (another scale or zero point) is not
/// matched: the pattern then stays float and the compile reports it.
std::optional<InputMatch> matchInput(Value lhs) {
  auto dq = lhs.getDefiningOp<DequantizeOp>();
  if (!dq)
    return InputMatch{lhs, "none", {}, {}};
  if (auto q = dq.getInput().getDefiningOp<QuantizeOp>()) {
    if (dq.getScale() == q.getScale() && dq.getZeroPoint() == 0)
      return InputMatch{q.getInput(), q.getGranularity(), {}, {}};
    return std::nullopt;
  }
  if (QuantizeStaticOp q = staticallyQuantized(lhs))
    return InputMatch{q.getInput(), "static", q.getScaleAttr(), q.getZeroPointAttr()};
  return std::nullopt;
}

/// The bias of `add`, the matmul's only user, when it is a [N] f32 vector
/// and the add keeps the matmul's type; null otherwise.
Value matchBias(MatmulOp mm, int64_t n) {
  if (!mm->hasOneUse())
    return {};
  auto add = dyn_cast<AddOp>(*mm->getUsers().begin());
  if (!add || add.getType() != mm.getType())
    return {};
  Value other = add.getLhs() == mm.getResult() ? add.getRhs() : add.getLhs();
  auto t = rankedOf(other);
  if (other == mm.getResult() || t.getRank() != 1 || t.getDimSize(0) != n ||
      !t.getElementType().isF32())
    return {};
  return other;
}

/// Erases `op` when dead and a q/dq-side op, then its now-dead producers.
void eraseDead(Operation *op) {
  if (!op || !op->use_empty() ||
      !isa<PermuteOp, ReshapeOp, DequantizeOp, QuantizeOp, QuantizeStaticOp, ConstantOp>(op))
    return;
  llvm::SetVector<Operation *> producers;
  for (Value o : op->getOperands())
    if (Operation *p = o.getDefiningOp())
      producers.insert(p);
  op->erase();
  for (Operation *p : producers)
    eraseDead(p);
}

void fold(MatmulOp mm) {
  auto weight = matchWeight(mm.getRhs());
  auto lhs = rankedOf(mm.getLhs());
  if (!weight || !lhs.getElementType().isF32() || rankedOf(mm.getRhs()).getRank() != 2)
    return;
  std::optional<InputMatch> in = matchInput(mm.getLhs());
  if (!in || (weight->group && in->activations != "none"))
    return;
  int64_t n = rankedOf(weight->weight).getDimSize(0);
  Value bias = matchBias(mm, n);
  OpBuilder b(mm);
  Operation *replaced = bias ? *mm->getUsers().begin() : mm.getOperation();
  b.setInsertionPoint(replaced);
  IntegerAttr group = weight->group ? b.getI64IntegerAttr(*weight->group) : IntegerAttr();
  auto q = b.create<QLinearOp>(mm.getLoc(), in->input, weight->weight, weight->scale, bias,
                               b.getStringAttr(in->activations), in->scale, in->zeroPoint, group);
  Value rhs = mm.getRhs(), oldLhs = mm.getLhs();
  replaced->getResult(0).replaceAllUsesWith(q.getResult());
  if (bias)
    replaced->erase();
  mm.erase();
  eraseDead(rhs.getDefiningOp());
  eraseDead(oldLhs.getDefiningOp());
}

struct FoldQuantPass : impl::FoldQuantPassBase<FoldQuantPass> {
  void runOnOperation() override {
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp op) { matmuls.push_back(op); });
    for (MatmulOp mm : matmuls)
      fold(mm);
  }
};

} // namespace
} // namespace mlir::kiln

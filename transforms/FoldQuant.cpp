//===- FoldQuant.cpp - q/dq around a matmul → kiln.qlinear -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `kiln-fold-quant` (described in transforms/QuantPasses.td): the
// q/dq pattern `kiln.quant.prepare`'d linear layers capture (a dequantized,
// transposed int8 weight on the right of a kiln.matmul, optionally a
// dynamically quantized input on the left, optionally a bias add after)
// becomes one kiln.qlinear (a statically quantized input: kiln.quantize_static
// and its inverse dequantize, the scale and zero point carried over), the integer GEMM with a
// dequantize + bias epilogue. Anything that does not match exactly stays as it is (float).
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

/// The int8 weight [N, K] and its [N, 1] scales behind `rhs` =
/// permute<[1, 0]>(dequantize(w, ws)); nullopt when `rhs` is anything else.
std::optional<std::pair<Value, Value>> matchWeight(Value rhs) {
  auto permute = rhs.getDefiningOp<PermuteOp>();
  if (!permute || permute.getDims() != ArrayRef<int64_t>{1, 0})
    return std::nullopt;
  auto dq = permute.getInput().getDefiningOp<DequantizeOp>();
  if (!dq)
    return std::nullopt;
  auto w = rankedOf(dq.getInput()), s = rankedOf(dq.getScale());
  if (!w.getElementType().isSignlessInteger(8) || dq.getZeroPoint() != 0 || w.getRank() != 2 ||
      s.getRank() != 2 || s.getDimSize(0) != w.getDimSize(0) || s.getDimSize(1) != 1 ||
      ShapedType::isDynamic(w.getDimSize(0)))
    return std::nullopt;
  return std::make_pair(dq.getInput(), dq.getScale());
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
      !isa<PermuteOp, DequantizeOp, QuantizeOp, QuantizeStaticOp, ConstantOp>(op))
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
  if (!in)
    return;
  int64_t n = rankedOf(weight->first).getDimSize(0);
  Value bias = matchBias(mm, n);
  OpBuilder b(mm);
  Operation *replaced = bias ? *mm->getUsers().begin() : mm.getOperation();
  b.setInsertionPoint(replaced);
  auto q = b.create<QLinearOp>(mm.getLoc(), in->input, weight->first, weight->second, bias,
                               b.getStringAttr(in->activations), in->scale, in->zeroPoint);
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

//===- FoldQuant.cpp - q/dq around a matmul → kiln.qlinear -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `kiln-fold-quant` (described in transforms/QuantPasses.td): the
// q/dq pattern `kiln.quant.prepare`'d linear layers capture (a dequantized,
// transposed int8 weight on the right of a kiln.matmul, optionally a
// dynamically quantized input on the left, optionally a bias add after)
// becomes one kiln.qlinear, the integer GEMM with a dequantize + bias
// epilogue. Anything that does not match exactly stays as it is (float).
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
  if (!w.getElementType().isInteger(8) || w.getRank() != 2 || s.getRank() != 2 ||
      s.getDimSize(0) != w.getDimSize(0) || s.getDimSize(1) != 1 ||
      ShapedType::isDynamic(w.getDimSize(0)))
    return std::nullopt;
  return std::make_pair(dq.getInput(), dq.getScale());
}

/// The input and granularity of `lhs` = dequantize(quantize(x)) (both
/// results of one quantize); else `lhs` itself, weight-only ("none").
std::pair<Value, StringRef> matchInput(Value lhs) {
  if (auto dq = lhs.getDefiningOp<DequantizeOp>()) {
    auto q = dq.getInput().getDefiningOp<QuantizeOp>();
    if (q && dq.getInput() == q.getResult() && dq.getScale() == q.getScale())
      return {q.getInput(), q.getGranularity()};
  }
  return {lhs, "none"};
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
  if (!op || !op->use_empty() || !isa<PermuteOp, DequantizeOp, QuantizeOp>(op))
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
  auto [input, granularity] = matchInput(mm.getLhs());
  int64_t n = rankedOf(weight->first).getDimSize(0);
  Value bias = matchBias(mm, n);
  OpBuilder b(mm);
  Operation *replaced = bias ? *mm->getUsers().begin() : mm.getOperation();
  b.setInsertionPoint(replaced);
  auto q = b.create<QLinearOp>(mm.getLoc(), input, weight->first, weight->second, bias,
                               b.getStringAttr(granularity));
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

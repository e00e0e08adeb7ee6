//===- DnnlQConvMatch.cpp - int8 convolutions for kiln-cpu-convs-to-dnnl -===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements DnnlQConvMatch.h.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/DnnlQConvMatch.h"
#include "codegen/cpu/DnnlConvEpilogue.h"

#include "mlir/IR/TypeUtilities.h"

namespace mlir::kiln {

/// Whether `op` goes to oneDNN: static f32 (1x1 and depthwise included:
/// with the permutes sunk below elementwise ops, whole networks stay
/// channels-last; per-shape-class measurements in docs/performance.md).
bool qualifies(Conv2dOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto wt = cast<RankedTensorType>(op.getWeight().getType());
  return in.getElementType().isF32() && in.hasStaticShape() && wt.hasStaticShape() &&
         op.getType().hasStaticShape();
}

/// Whether `v` is the permute of an NHWC tensor back to NCHW.
PermuteOp toNchw(Value v) {
  auto p = v.getDefiningOp<PermuteOp>();
  return p && p.getDims() == ArrayRef<int64_t>{0, 3, 1, 2} ? p : PermuteOp();
}

/// `dequantize(permute(u8 NHWC), splat scale)`: (the NHWC u8 value, scale).
std::optional<std::pair<Value, FloatAttr>> u8Input(Value v) {
  auto dq = v.getDefiningOp<DequantizeOp>();
  PermuteOp p = dq ? toNchw(dq.getInput()) : PermuteOp();
  if (!p || !getElementTypeOrSelf(p.getType()).isUnsignedInteger(8))
    return std::nullopt;
  auto c = dq.getScale().getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  if (!dense || !dense.isSplat() || !dense.getElementType().isF32())
    return std::nullopt;
  return std::make_pair(p.getInput(),
                        FloatAttr::get(dense.getElementType(), dense.getSplatValue<APFloat>()));
}

std::optional<QuantConv> matchQuantConv(Conv2dOp op) {
  auto w = op.getWeight().getDefiningOp<DequantizeOp>();
  if (!w || w.getZeroPoint() != 0)
    return std::nullopt;
  auto wt = cast<RankedTensorType>(w.getInput().getType());
  auto st = cast<RankedTensorType>(w.getScale().getType());
  int64_t f = wt.getDimSize(0);
  if (!wt.getElementType().isSignlessInteger(32) || st.getShape() != ArrayRef<int64_t>{f, 1, 1, 1})
    return std::nullopt;
  if (QuantizeStaticOp q = staticallyQuantized(op.getInput()))
    return QuantConv{q.getInput(), false, q.getScaleAttr(), q.getZeroPointAttr(), w};
  if (auto u8 = u8Input(op.getInput()))
    return QuantConv{u8->first, true, u8->second,
                     op.getInput().getDefiningOp<DequantizeOp>().getZeroPointAttr(), w};
  return std::nullopt;
}

ResidualAdds findResidualAdds(ArrayRef<Conv2dOp> convs) {
  ResidualAdds adds;
  for (Conv2dOp conv : convs)
    if (matchQuantConv(conv))
      if (Operation *add = matchConvEpilogue(conv, /*residual=*/true).residualAdd)
        adds[add] = conv;
  return adds;
}

namespace {

/// Whether `q` feeds only int8 convolutions' inputs, through dequantize
/// ops that invert it.
bool feedsInt8Convs(QuantizeStaticOp q) {
  for (Operation *qUser : q->getUsers()) {
    auto dq = dyn_cast<DequantizeOp>(qUser);
    if (!dq || staticallyQuantized(dq.getResult()) != q)
      return false;
    for (Operation *dqUser : dq->getUsers()) {
      auto conv = dyn_cast<Conv2dOp>(dqUser);
      if (!conv || conv.getInput() != dq.getResult() || !qualifies(conv) || !matchQuantConv(conv))
        return false;
    }
  }
  return true;
}

} // namespace

SmallVector<QuantizeStaticOp> u8Consumers(Value v, const ResidualAdds &residuals,
                                          SmallVectorImpl<Operation *> &adds) {
  SmallVector<QuantizeStaticOp> found;
  for (Operation *user : v.getUsers()) {
    if (auto it = residuals.find(user); it != residuals.end()) {
      if (matchConvEpilogue(it->second, /*residual=*/true).residual != v)
        return {};
      adds.push_back(user);
      continue;
    }
    auto q = dyn_cast<QuantizeStaticOp>(user);
    if (!q || (!found.empty() && (q.getScaleAttr() != found[0].getScaleAttr() ||
                                  q.getZeroPoint() != found[0].getZeroPoint())))
      return {};
    if (!feedsInt8Convs(q))
      return {};
    found.push_back(q);
  }
  if (found.empty())
    adds.clear();
  return found;
}

void readResidualAsU8(ArrayRef<Operation *> adds, Value v, Value u8, QuantizeStaticOp q) {
  for (Operation *add : adds) {
    OpBuilder b(add);
    Location loc = add->getLoc();
    auto type = cast<RankedTensorType>(v.getType());
    auto one = RankedTensorType::get(SmallVector<int64_t>(type.getRank(), 1), b.getF32Type());
    Value scale = b.create<ConstantOp>(
        loc, cast<ElementsAttr>(DenseElementsAttr::get(one, q.getScaleAttr().getValue())));
    Value dq = b.create<DequantizeOp>(loc, u8, scale, q.getZeroPointAttr());
    add->replaceUsesOfWith(v, dq);
  }
}

/// Erases `v`'s defining op and then its operands' when they are dead q/dq ops.
void eraseDeadQuant(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op || !op->use_empty() || !isa<DequantizeOp, QuantizeStaticOp, ConstantOp, PermuteOp>(op))
    return;
  SmallVector<Value> operands(op->getOperands());
  op->erase();
  for (Value o : operands)
    eraseDeadQuant(o);
}

} // namespace mlir::kiln

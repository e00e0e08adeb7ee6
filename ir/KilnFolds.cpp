//===- KilnFolds.cpp - kiln op folders ---------------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Folders that are always right: identities that keep the exact result type
// and value (including -0.0 and NaN), and merging of back-to-back shape ops.
// Each has a case in test/ir/folding.mlir.
//===----------------------------------------------------------------------===//
#include "ir/KilnOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// True when `v` is a constant splat for which `pred` holds.
template <typename Pred> bool isSplatWhere(Value v, Pred pred) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return false;
  Type elt = attr.getElementType();
  if (llvm::isa<FloatType>(elt))
    return pred(attr.getSplatValue<APFloat>(), std::nullopt);
  if (llvm::isa<IntegerType>(elt))
    return pred(std::nullopt, attr.getSplatValue<APInt>());
  return false;
}

} // namespace

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor) {
  // x + (-0.0) == x for every float x (including -0.0 and NaN); x + 0 == x
  // for integers. x + (+0.0) is not x when x is -0.0, so it stays.
  bool isZero = isSplatWhere(getRhs(), [](std::optional<APFloat> f, std::optional<APInt> i) {
    return f ? (f->isZero() && f->isNegative()) : i->isZero();
  });
  if (isZero && getLhs().getType() == getType())
    return getLhs();
  return {};
}

OpFoldResult MulOp::fold(FoldAdaptor) {
  bool isOne = isSplatWhere(getRhs(), [](std::optional<APFloat> f, std::optional<APInt> i) {
    return f ? f->isExactlyValue(1.0) : i->isOne();
  });
  if (isOne && getLhs().getType() == getType())
    return getLhs();
  return {};
}

OpFoldResult PermuteOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> dims = getDims();
  if (llvm::equal(dims, llvm::seq<int64_t>(0, dims.size())))
    return getInput();
  // permute(permute(x, inner), outer) == permute(x, inner[outer[i]]).
  if (auto inner = getInput().getDefiningOp<PermuteOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t d : dims)
      composed.push_back(inner.getDims()[d]);
    setDims(composed);
    getInputMutable().assign(inner.getInput());
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      return getInput();
    return getResult();
  }
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    if (getInput().getType() == getType())
      return getInput();
    return getResult();
  }
  return {};
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  // Start 0 and the operand's own type: every element is kept (a step > 1
  // would leave fewer elements unless the dim has at most one).
  // A dynamic dim is whole only with `end = -1` and step 1 (an end from
  // the end such as -2 keeps the type `?`, not the elements).
  auto type = llvm::cast<RankedTensorType>(getInput().getType());
  if (type != getType())
    return {};
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (getStart()[i] != 0 || (type.isDynamicDim(i) && (getEnd()[i] != -1 || getStep()[i] != 1)))
      return {};
  return getInput();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

//===- GradRules.cpp - the gradient rule table and GradBuilder -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements GradRules.h: the helpers rules build backward IR with, the
// table (filled once from the category files) and the reasons given for
// ops without a rule.
//===----------------------------------------------------------------------===//
#include "transforms/autodiff/GradRules.h"

#include "ir/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::kiln {

Value GradBuilder::scalar(Type elt, double value) {
  auto type = RankedTensorType::get({}, elt);
  auto attr = DenseElementsAttr::get(type, b.getFloatAttr(elt, value));
  return b.create<ConstantOp>(loc, llvm::cast<ElementsAttr>(attr));
}

Value GradBuilder::reshape(Value v, ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  return b.create<ReshapeOp>(loc, type.clone(shape), v);
}

Value GradBuilder::broadcast(Value v, ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  return b.create<BroadcastToOp>(loc, type.clone(shape), v);
}

Value GradBuilder::zeros(RankedTensorType type) {
  return broadcast(scalar(type.getElementType(), 0.0), type.getShape());
}

Value GradBuilder::cast(Value v, Type elt) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (type.getElementType() == elt)
    return v;
  return b.create<CastOp>(loc, type.clone(elt), v);
}

Value GradBuilder::reduceTo(Value g, RankedTensorType target) {
  auto type = llvm::cast<RankedTensorType>(g.getType());
  int64_t lead = type.getRank() - target.getRank();
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d < lead || (target.getDimSize(d - lead) == 1 && type.getDimSize(d) != 1))
      dims.push_back(d);
  if (!dims.empty())
    g = b.create<SumOp>(loc, g, dims, /*keepdim=*/true);
  return cast(reshape(g, target.getShape()), target.getElementType());
}

Value GradBuilder::add(Value a, Value c) { return b.create<AddOp>(loc, a, c); }
Value GradBuilder::sub(Value a, Value c) { return b.create<SubOp>(loc, a, c); }
Value GradBuilder::mul(Value a, Value c) { return b.create<MulOp>(loc, a, c); }
Value GradBuilder::div(Value a, Value c) { return b.create<DivOp>(loc, a, c); }
Value GradBuilder::neg(Value a) { return b.create<NegOp>(loc, a); }

namespace {

GradRuleTable buildTable() {
  GradRuleTable table;
  addElementwiseGradRules(table);
  addShapeGradRules(table);
  addReductionGradRules(table);
  return table;
}

} // namespace

const GradRule *lookupGradRule(Operation *op) {
  static const GradRuleTable table = buildTable(); // no Python: a plain static is safe
  auto it = table.find(op->getName().getStringRef());
  return it == table.end() ? nullptr : &it->second;
}

std::string nonDifferentiableReason(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (isa<MaxOp, MinOp, MaximumOp, MinimumOp, ArgmaxOp, ArgminOp>(op))
    return "no gradient rule for '" + name.str() +
           "' (torch splits the gradient between ties; not implemented)";
  if (isa<FloorOp, CeilOp, RoundOp, TruncOp, FmodOp, FloorDivOp>(op))
    return "no gradient rule for '" + name.str() + "' (piecewise constant; not implemented)";
  if (isa<Conv2dOp, MaxPool2dOp, AvgPool2dOp>(op))
    return "no gradient rule for '" + name.str() + "' (convolutions and pooling not implemented)";
  if (op->getDialect() && op->getDialect()->getNamespace() != "kiln")
    return "'" + name.str() + "' is not a kiln op";
  return "no gradient rule for '" + name.str() + "'";
}

} // namespace mlir::kiln

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

Value GradBuilder::slice(Value v, ArrayRef<int64_t> start, ArrayRef<int64_t> end,
                         ArrayRef<int64_t> step) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  bool whole = true;
  for (int64_t d = 0; d < type.getRank(); ++d)
    whole &= start[d] == 0 && end[d] == type.getDimSize(d) && step[d] == 1;
  return whole ? v : b.create<SliceOp>(loc, v, start, end, step).getResult();
}

Value GradBuilder::pad(Value v, int64_t dim, int64_t before, int64_t after, double fill) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  auto block = [&](int64_t n) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = n;
    return broadcast(scalar(type.getElementType(), fill), shape);
  };
  SmallVector<Value> parts;
  if (before > 0)
    parts.push_back(block(before));
  parts.push_back(v);
  if (after > 0)
    parts.push_back(block(after));
  return concat(parts, dim);
}

Value GradBuilder::concat(ArrayRef<Value> parts, int64_t dim) {
  return parts.size() == 1 ? parts[0] : b.create<ConcatOp>(loc, parts, dim).getResult();
}

Value GradBuilder::place(Value v, int64_t dim, int64_t start, int64_t step, int64_t size) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  int64_t n = type.getDimSize(dim);
  if (step > 1) { // interleave: [.., n, 1, ..] ++ zeros [.., n, step - 1, ..]
    SmallVector<int64_t> one(type.getShape());
    one.insert(one.begin() + dim + 1, 1);
    Value spread = pad(reshape(v, one), dim + 1, 0, step - 1);
    SmallVector<int64_t> flat(type.getShape());
    flat[dim] = n * step;
    v = reshape(spread, flat);
  }
  auto vt = llvm::cast<RankedTensorType>(v.getType());
  int64_t len = vt.getDimSize(dim);
  int64_t from = std::max<int64_t>(0, -start), to = std::min(len, size - start);
  SmallVector<int64_t> lo(vt.getRank(), 0), hi(vt.getShape()), st(vt.getRank(), 1);
  lo[dim] = from;
  hi[dim] = std::max(from, to);
  if (hi[dim] == lo[dim]) {
    SmallVector<int64_t> shape(vt.getShape());
    shape[dim] = size;
    return zeros(vt.clone(shape));
  }
  v = slice(v, lo, hi, st);
  int64_t first = std::max<int64_t>(start, 0);
  return pad(v, dim, first, size - first - (hi[dim] - lo[dim]));
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
  addNNGradRules(table);
  addPoolGradRules(table);
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
  if (isa<MaxOp, MinOp, ArgmaxOp, ArgminOp>(op))
    return "no gradient rule for '" + name.str() +
           "' (torch splits the gradient between ties; not implemented)";
  if (isa<FloorOp, CeilOp, RoundOp, TruncOp, FmodOp, FloorDivOp>(op))
    return "no gradient rule for '" + name.str() + "' (piecewise constant; not implemented)";
  if (op->getDialect() && op->getDialect()->getNamespace() != "kiln")
    return "'" + name.str() + "' is not a kiln op";
  return "no gradient rule for '" + name.str() + "'";
}

} // namespace mlir::kiln

//===- ShapeGrads.cpp - gradient rules of kiln shape ops -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reverse-mode rules for data movement (GradRules.h): permute (the inverse
// permutation), reshape (back), broadcast_to (the driver sums the
// broadcast dims), slice with unit steps (zeros concatenated around the
// gradient), concat (a slice per operand) and embedding (a one-hot matmul:
// the dialect has no scatter-add, so the row sums are
// `onehot(indices)^T @ grad`, static shapes only).
//===----------------------------------------------------------------------===//
#include "transforms/autodiff/GradRules.h"

#include "ir/KilnOps.h"
#include "ir/ShapeUtils.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::kiln {
namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

LogicalResult permuteGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                          std::string &) {
  ArrayRef<int64_t> dims = cast<PermuteOp>(op).getDims();
  SmallVector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[dims[i]] = static_cast<int64_t>(i);
  grads[0] = gb.b.create<PermuteOp>(gb.loc, g, inverse);
  return success();
}

LogicalResult reshapeGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                          std::string &why) {
  RankedTensorType in = typeOf(op->getOperand(0));
  if (!in.hasStaticShape() || !typeOf(g).hasStaticShape()) {
    why = "the gradient of a dynamic-shape 'kiln.reshape' is not implemented";
    return failure();
  }
  grads[0] = gb.reshape(g, in.getShape());
  return success();
}

/// Zeros of `like`'s type with dim `d` of size `n`.
Value zerosAlong(GradBuilder &gb, RankedTensorType like, int64_t d, int64_t n) {
  SmallVector<int64_t> shape(like.getShape());
  shape[d] = n;
  return gb.zeros(like.clone(shape));
}

LogicalResult sliceGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                        std::string &why) {
  auto slice = cast<SliceOp>(op);
  RankedTensorType in = typeOf(slice.getInput());
  if (!in.hasStaticShape() || llvm::any_of(slice.getStep(), [](int64_t s) { return s != 1; })) {
    why = "the gradient of a strided or dynamic-shape 'kiln.slice' is not implemented";
    return failure();
  }
  Value acc = g;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t size = in.getDimSize(d);
    auto [start, end] = sliceBounds(slice.getStart()[d], slice.getEnd()[d], size);
    SmallVector<Value> parts;
    if (start > 0)
      parts.push_back(zerosAlong(gb, typeOf(acc), d, start));
    parts.push_back(acc);
    if (end < size)
      parts.push_back(zerosAlong(gb, typeOf(acc), d, size - end));
    if (parts.size() > 1)
      acc = gb.b.create<ConcatOp>(gb.loc, parts, d);
  }
  grads[0] = acc;
  return success();
}

LogicalResult concatGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                         std::string &why) {
  int64_t dim = cast<ConcatOp>(op).getDim();
  RankedTensorType gt = typeOf(g);
  if (!gt.hasStaticShape()) {
    why = "the gradient of a dynamic-shape 'kiln.concat' is not implemented";
    return failure();
  }
  int64_t offset = 0;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    int64_t n = typeOf(op->getOperand(i)).getDimSize(dim);
    if (gb.needs(op->getOperand(i))) {
      SmallVector<int64_t> start(gt.getRank(), 0), end(gt.getShape()), step(gt.getRank(), 1);
      start[dim] = offset;
      end[dim] = offset + n;
      grads[i] = gb.b.create<SliceOp>(gb.loc, g, start, end, step);
    }
    offset += n;
  }
  return success();
}

LogicalResult embeddingGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                            std::string &why) {
  auto emb = cast<EmbeddingOp>(op);
  RankedTensorType w = typeOf(emb.getWeight()), idx = typeOf(emb.getIndices());
  if (!w.hasStaticShape() || !idx.hasStaticShape()) {
    why = "the gradient of a dynamic-shape 'kiln.embedding' is not implemented";
    return failure();
  }
  for (const char *flag : {"kiln.scale_grad_by_freq", "kiln.sparse"})
    if (op->hasAttr(flag)) {
      why = std::string("the gradient of 'kiln.embedding' with ") + (flag + 5) +
            " is not implemented";
      return failure();
    }
  int64_t rows = w.getDimSize(0), cols = w.getDimSize(1), n = idx.getNumElements();
  Type it = idx.getElementType();
  // padding_idx's row gets no gradient: no index matches its iota entry
  // (the lowest integer; indices are non-negative in eager).
  auto pad = op->getAttrOfType<IntegerAttr>("kiln.padding_idx");
  int64_t none = it.isInteger(32) ? INT32_MIN : INT64_MIN;
  SmallVector<Attribute> range;
  for (int64_t i = 0; i < rows; ++i)
    range.push_back(gb.b.getIntegerAttr(it, pad && pad.getInt() == i ? none : i));
  auto rangeType = RankedTensorType::get({1, rows}, it);
  Value iota = gb.b.create<ConstantOp>(
      gb.loc, llvm::cast<ElementsAttr>(DenseElementsAttr::get(rangeType, range)));
  Value flat = gb.reshape(gb.primal(emb.getIndices()), {n, 1});
  Value hit = gb.b.create<EqOp>(gb.loc, flat, iota); // [n, rows] i1
  Value onehot = gb.cast(hit, w.getElementType());   // [n, rows]
  Value t = gb.b.create<PermuteOp>(gb.loc, onehot, ArrayRef<int64_t>{1, 0});
  grads[0] = gb.b.create<MatmulOp>(gb.loc, t, gb.reshape(g, {n, cols})); // [rows, cols]
  return success();
}

} // namespace

void addShapeGradRules(GradRuleTable &t) {
  t[PermuteOp::getOperationName()] = permuteGrad;
  t[ReshapeOp::getOperationName()] = reshapeGrad;
  // The driver sums the gradient over the broadcast dims.
  t[BroadcastToOp::getOperationName()] = [](GradBuilder &, Operation *, Value g,
                                            SmallVectorImpl<Value> &grads, std::string &) {
    grads[0] = g;
    return success();
  };
  t[SliceOp::getOperationName()] = sliceGrad;
  t[ConcatOp::getOperationName()] = concatGrad;
  t[EmbeddingOp::getOperationName()] = embeddingGrad;
}

} // namespace mlir::kiln

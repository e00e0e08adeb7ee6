//===- KilnBuilders.h - building common kiln ops from C++ --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Builders the passes share for ops whose result type follows from their
// operands: a reshape (skipped when the shape is already right) and a
// permute (its result shape from the operand's and `dims`).
//===----------------------------------------------------------------------===//
#ifndef KILN_IR_KILNBUILDERS_H
#define KILN_IR_KILNBUILDERS_H

#include "ir/KilnOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::kiln {

/// kiln.reshape of `v` to `shape`, or `v` itself when it has that shape.
inline Value buildReshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  return b.create<ReshapeOp>(loc, RankedTensorType::get(shape, type.getElementType()), v);
}

/// kiln.permute of `v` by `dims`.
inline Value buildPermute(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> dims) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  for (int64_t d : dims)
    shape.push_back(type.getDimSize(d));
  return b.create<PermuteOp>(loc, RankedTensorType::get(shape, type.getElementType()), v,
                             b.getDenseI64ArrayAttr(dims));
}

} // namespace mlir::kiln

#endif // KILN_IR_KILNBUILDERS_H

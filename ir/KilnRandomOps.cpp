//===- KilnRandomOps.cpp - verification of kiln.random ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The verifier of `kiln.random` (KilnRandomOps.td): the distribution name,
// the result element type it needs, the `integer` bounds and the `like`
// operand that carries dynamic sizes. Each diagnostic has a case in
// test/ir/invalid.mlir.
//===----------------------------------------------------------------------===//
#include "ir/KilnOps.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::kiln;

LogicalResult RandomOp::verify() {
  auto type = llvm::cast<RankedTensorType>(getType());
  Type elt = type.getElementType();
  StringRef dist = getDistribution();
  bool isInteger = dist == "integer";
  if (dist != "uniform" && dist != "normal" && !isInteger)
    return emitOpError("distribution must be \"uniform\", \"normal\" or \"integer\", got \"")
           << dist << "\"";
  if (!isInteger && !llvm::isa<FloatType>(elt))
    return emitOpError("a \"") << dist << "\" distribution needs a float result, got " << elt;
  if (isInteger && (!llvm::isa<IntegerType>(elt) || elt.isInteger(1)))
    return emitOpError("an \"integer\" distribution needs an integer result, got ") << elt;
  if (isInteger != (getLow().has_value() && getHigh().has_value()) ||
      (!isInteger && (getLow() || getHigh())))
    return emitOpError("low and high are given exactly for the \"integer\" distribution");
  // I64Attr getters are unsigned: compare the attributes' signed values.
  if (isInteger && getLowAttr().getInt() >= getHighAttr().getInt())
    return emitOpError("low (") << getLowAttr().getInt() << ") must be less than high ("
                                << getHighAttr().getInt() << ")";
  Value like = getLike();
  if (type.hasStaticShape() != !like)
    return emitOpError("`like` is required exactly when the result has a dynamic dim");
  if (like) {
    auto likeType = llvm::cast<RankedTensorType>(like.getType());
    if (failed(verifyCompatibleShape(likeType.getShape(), type.getShape())))
      return emitOpError("`like` of type ") << likeType << " does not have the result's shape";
  }
  return success();
}

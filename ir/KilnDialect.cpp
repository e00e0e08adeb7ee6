//===- KilnDialect.cpp - kiln dialect registration ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Registers the kiln ops and materializes folded constants as kiln.constant.
//===----------------------------------------------------------------------===//
#include "ir/KilnDialect.h"
#include "ir/KilnOps.h"
#include "ir/KilnQuantOps.h"

using namespace mlir;
using namespace mlir::kiln;

#include "ir/KilnDialect.cpp.inc"

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/KilnOps.cpp.inc"
      >();
  // The quantization ops live in their own ODS file (ir/KilnQuantOps.td).
  addOperations<
#define GET_OP_LIST
#include "ir/KilnQuantOps.cpp.inc"
      >();
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                            Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}

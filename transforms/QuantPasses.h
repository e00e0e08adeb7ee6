//===- QuantPasses.h - kiln quantization passes -------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The generated factories of transforms/QuantPasses.td (`kiln-fold-quant`)
// and `registerKilnQuantPasses()`.
//===----------------------------------------------------------------------===//
#ifndef KILN_TRANSFORMS_QUANTPASSES_H
#define KILN_TRANSFORMS_QUANTPASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {

#define GEN_PASS_DECL
#include "transforms/QuantPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "transforms/QuantPasses.h.inc"

} // namespace mlir::kiln

#endif // KILN_TRANSFORMS_QUANTPASSES_H

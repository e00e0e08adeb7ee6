//===- QuantPasses.h - CPU lowering of the quantization ops -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The generated factory of codegen/cpu/QuantPasses.td
// (`kiln-cpu-quant-to-calls`) and `registerKilnCpuQuantPasses()`.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_QUANTPASSES_H
#define KILN_CODEGEN_CPU_QUANTPASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {

#define GEN_PASS_DECL
#include "codegen/cpu/QuantPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/cpu/QuantPasses.h.inc"

/// Whether `module` holds a quantization op (ir/KilnQuantOps.td): the CPU
/// compile driver schedules kiln-fold-quant and kiln-cpu-quant-to-calls
/// only then, so other graphs keep their pipeline (and cache keys).
bool containsQuantOps(ModuleOp module);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_QUANTPASSES_H

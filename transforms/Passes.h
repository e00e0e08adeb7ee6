//===- Passes.h - kiln transformation passes ----------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Declarations (generated from Passes.td) of the passes on kiln IR and the
// registration of kiln's named pipelines.
//===----------------------------------------------------------------------===//
#ifndef KILN_TRANSFORMS_PASSES_H
#define KILN_TRANSFORMS_PASSES_H

#include "ir/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {

#define GEN_PASS_DECL
#include "transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "transforms/Passes.h.inc"

/// Appends the target-independent kiln pipeline (canonicalize, CSE,
/// decompose, canonicalize, CSE) to `pm`. Named `kiln-optimize` in kiln-opt.
void buildOptimizePipeline(OpPassManager &pm);

/// Registers the named pipeline `kiln-optimize` (idempotent).
void registerKilnPipelines();

} // namespace mlir::kiln

#endif // KILN_TRANSFORMS_PASSES_H

//===- Passes.h - target-neutral codegen passes -------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Declarations (generated from codegen/common/Passes.td) of the passes both
// backends run, and the fused-linalg pipeline built from them.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_COMMON_PASSES_H
#define KILN_CODEGEN_COMMON_PASSES_H

#include "ir/KilnDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {

#define GEN_PASS_DECL
#include "codegen/common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/common/Passes.h.inc"

/// Options of the fused-linalg pipeline; each one is a pass option set
/// textually, so a printed pipeline (a debug reproducer, the compile-cache
/// key) shows it.
struct FusedLinalgOptions {
  /// kiln-fuse-linalg-elementwise's `transcendental-cost` (the CPU pipeline
  /// passes 8).
  unsigned transcendentalCost = 1;
  /// kiln-convert-to-linalg's `shared-lhs-gemm` (the CPU pipeline sets it:
  /// its BLAS calls read a broadcast left operand with batch stride 0).
  bool sharedLhsGemm = false;
  /// kiln-fuse-linalg-elementwise's `fuse-broadcast-casts` (CUDA sets it).
  bool fuseBroadcastCasts = false;
  /// kiln-fuse-linalg-elementwise's `keep-producer-results` (the CPU
  /// pipeline sets it).
  bool keepProducerResults = false;
};

/// Appends the target-neutral codegen stages shared by the CPU and CUDA
/// backends: kiln → linalg on tensors, then elementwise fusion (each nested
/// on func.func, with canonicalize + CSE after both).
void buildFusedLinalgPipeline(OpPassManager &pm, const FusedLinalgOptions &options = {});

/// Adds `pass` to `pm` after setting its options from `options` (the pass's
/// textual option syntax). Option strings are written by kiln itself, so a
/// parse failure is a bug: it aborts with the pass and option text.
void addPassWithOptions(OpPassManager &pm, std::unique_ptr<Pass> pass, llvm::StringRef options);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_COMMON_PASSES_H

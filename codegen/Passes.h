//===- Passes.h - kiln codegen passes -----------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Declarations (generated from Passes.td) of the lowering passes and the CPU
// lowering pipeline.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_PASSES_H
#define KILN_CODEGEN_PASSES_H

#include "ir/KilnDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {

#define GEN_PASS_DECL
#include "codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/Passes.h.inc"

/// Appends the target-independent codegen stages shared by the CPU and CUDA
/// backends: kiln → linalg on tensors, then elementwise fusion (each nested
/// on func.func, with canonicalize + CSE after both).
/// `transcendentalCost`: the fusion pass's `transcendental-cost` option (the
/// CPU pipeline passes 8). `sharedLhsGemm`: kiln-convert-to-linalg's
/// `shared-lhs-gemm` option (the CPU pipeline sets it: its BLAS calls read a
/// broadcast left operand with batch stride 0).
void buildFusedLinalgPipeline(OpPassManager &pm, unsigned transcendentalCost = 1,
                              bool sharedLhsGemm = false);

/// Unit attribute kiln-fuse-rows puts on its row loops: iterations touch
/// disjoint rows of every buffer they write, except the one-row buffers
/// allocated on the stack at function entry, which each thread may copy.
inline constexpr const char kIndependentRowsAttr[] = "kiln.independent_rows";

/// Appends the lowering from kiln (after buildOptimizePipeline) to the LLVM
/// dialect for the host CPU. Named `kiln-cpu-lowering` in kiln-opt.
void buildCpuLoweringPipeline(OpPassManager &pm, bool parallelLoops = true);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_PASSES_H

//===- Passes.h - CPU codegen passes ------------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Declarations (generated from codegen/cpu/Passes.td) of the CPU-only passes
// (`kiln-cpu-*`) and the CPU lowering pipeline.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_PASSES_H
#define KILN_CODEGEN_CPU_PASSES_H

#include "codegen/common/Passes.h"
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
#include "codegen/cpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/cpu/Passes.h.inc"

/// Unit attribute kiln-cpu-fuse-rows puts on its row loops: iterations touch
/// disjoint rows of every buffer they write, except the one-row buffers
/// allocated on the stack at function entry, which each thread may copy.
inline constexpr const char kIndependentRowsAttr[] = "kiln.independent_rows";

/// Integer attribute on an output argument the frontend passes without
/// memory (its data pointer null): the result's position. kiln-cpu-lazy-outputs
/// allocates it right before its first write.
inline constexpr const char kLazyOutputAttr[] = "kiln.lazy_output";

/// Integer attribute on the `memref.alloc` kiln-cpu-lazy-outputs places for
/// such an output (its position): kiln-cpu-lower-output-allocs makes it a
/// call asking the frontend for the caller's tensor.
inline constexpr const char kOutputIndexAttr[] = "kiln.output_index";

/// Dense i64 array attribute on a function: the arguments the caller may
/// drop once the code is done with them (kiln-autodiff marks a backward's
/// saved activations); kiln-cpu-release-dead-inputs calls kilnReleaseInput.
inline constexpr const char kReleaseInputsAttr[] = "kiln.release_inputs";

/// Options of kiln-cpu-lowering (set by the caller: C++ reads no environment).
struct CpuLoweringOptions {
  /// Keep big top-level loop nests parallel (OpenMP work sharing); off, every
  /// loop is serial (kiln-cpu-parallelize-loops{enabled=false}).
  bool parallelLoops = true;
};

/// Appends the lowering from kiln (after buildOptimizePipeline) to the LLVM
/// dialect for the host CPU. Named `kiln-cpu-lowering` in kiln-opt.
void buildCpuLoweringPipeline(OpPassManager &pm, const CpuLoweringOptions &options = {});

/// Adds the kiln dialect and every dialect, bufferization interface and LLVM
/// IR translation kiln-cpu-lowering produces or the JIT needs to `registry`.
void registerCpuDialects(DialectRegistry &registry);

/// Registers the named pipeline `kiln-cpu-lowering` (idempotent).
void registerCpuPipelines();

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_PASSES_H

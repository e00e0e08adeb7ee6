//===- CudaEmitter.h - fused linalg on tensors → CUDA C++ ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The first slice of kiln's CUDA backend: the fused linalg-on-tensors IR that
// buildFusedLinalgPipeline produces (the same stages the CPU path runs) is
// printed as readable CUDA C++, one `extern "C" __global__` kernel per
// fused linalg.generic. Emission rules and the launch configuration:
// codegen/cuda/README.md.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CUDA_CUDAEMITTER_H
#define KILN_CODEGEN_CUDA_CUDAEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::kiln::cuda {

/// One buffer of a function's launch plan (all contiguous, row-major).
struct BufferInfo {
  std::string name;           // <func>.arg0.., <func>.buf0..
  std::string function;       // the func.func it belongs to
  std::string elementType;    // CUDA storage type: float, __half, ...
  std::vector<int64_t> shape; // -1 for a dynamic dim (see dims)
  int64_t bytes = 0;          // 0 when the shape is dynamic
  /// Every dim as text: a number, or a product of symbols `s<k>` and a
  /// constant (`s0 * s1 * 4`) evaluated per call from the inputs' sizes.
  std::vector<std::string> dims;
  std::string role; // "input N", "temporary", "result N" (may list several)
};

/// One kernel and how to launch it. Parameters are buffer names, in the
/// kernel's parameter order (inputs, then outputs).
struct KernelInfo {
  std::string name;
  std::string function; // the func.func it came from
  enum Kind { Pointwise, RowReduction } kind = Pointwise;
  int64_t gridX = 1, blockX = 1;
  std::vector<std::string> args;
  /// A kernel over symbolic sizes takes the function's symbols as trailing
  /// `long long s<k>` parameters (after `args`) and has no static launch
  /// configuration (gridX = blockX = 0): `work` is the pointwise loop's
  /// trip count (elements / elements per thread) or the number of rows, and
  /// `rowLength` a row reduction's row length; the launch rules below give
  /// the grid and block per call.
  int symbols = 0;
  std::string work, rowLength;
};

/// A GEMM left to a library (cuBLAS, or torch.matmul in kiln's Python
/// executor): C = A x B (B^T when `transB`), row-major contiguous buffers,
/// C zero-initialized (the linalg.fill the lowering creates is folded in).
struct ExternCall {
  std::string name;     // <func>_gemm<N>
  std::string function; // the func.func it came from
  bool transB = false;
  int64_t batch = 1, m = 0, n = 0, k = 0; // batch = 1 and 2-d operands: linalg.matmul
  /// With dynamic dims: batch, m, n, k as text (BufferInfo::dims' spelling),
  /// evaluated per call (the int fields of a dynamic size are -1).
  std::vector<std::string> dims;
  bool batched = false;              // linalg.batch_matmul{,_transpose_b}
  std::string inputType, outputType; // storage types of A/B and of C
  /// "none", or what the library applies after the product: "bias"
  /// (C + bias row), "bias_relu" (max(C + bias, 0)) or "bias_gelu_tanh"
  /// (the tanh GELU of C + bias); the bias buffer is then args[3].
  std::string epilogue = "none";
  std::vector<std::string> args; // buffer names: A, B, C[, bias]
  std::string location;
};

/// An op the emitter could not translate (EmitOptions::collectUnsupported):
/// why, where, and the buffers its results got so later kernels still emit.
struct UnsupportedOp {
  std::string function, op, location, reason;
  std::vector<std::string> results;
};

/// One step of a function's launch sequence.
struct LaunchStep {
  enum Kind { Kernel, Extern, Unsupported } kind = Kernel;
  size_t index = 0; // into CudaModule::kernels / externs / unsupported
};

/// How to call one func.func: its steps in order and where its arguments
/// and results live (buffer names without the function prefix).
struct FunctionPlan {
  std::string name;
  std::vector<LaunchStep> steps;
  std::vector<std::string> inputs;                // buffer of argument i (argN)
  std::vector<std::string> results;               // buffer of result i
  std::vector<std::vector<int64_t>> resultShapes; // may differ from the buffer's (reshapes)
  std::vector<std::string> resultTypes;           // storage types
  /// Result shapes as text (BufferInfo::dims' spelling).
  std::vector<std::vector<std::string>> resultDims;
  /// Symbol k is dim `second` of argument `first`.
  std::vector<std::pair<unsigned, unsigned>> symbols;
  /// Sizes that must be equal at run time (two operands' dims indexed by one
  /// loop dim), checked by the executors before a call.
  std::vector<std::pair<std::string, std::string>> constraints;
  /// Sizes that must not exceed others (`first <= second`: a slice's end
  /// within its tensor), checked like `constraints`.
  std::vector<std::pair<std::string, std::string>> bounds;
};

struct CudaModule {
  std::string source;
  std::vector<KernelInfo> kernels;
  std::vector<ExternCall> externs;
  std::vector<UnsupportedOp> unsupported;
  std::vector<BufferInfo> buffers; // all functions, names prefixed per func
  std::vector<FunctionPlan> functions;
};

/// Appends what runs before emission: kiln-optimize, then the shared
/// kiln → fused-linalg stages (buildFusedLinalgPipeline).
void buildCudaPreparePipeline(OpPassManager &pm);

struct EmitOptions {
  /// Fuse a row reduction with the following generics over the same rows
  /// (softmax, layer_norm) into one kernel, one block per row.
  bool fuseRows = true;
  /// In a row group, compute softmax's max and sum of exp in one read of
  /// the row (online softmax) and layer_norm's mean and variance in one
  /// read (Welford); off: one loop over the row per reduction.
  bool onePassRows = true;
  /// Pointwise kernels over contiguous operands load and store 128 bits per
  /// access (float4 / 8 halves) when every pointer is 16-byte aligned
  /// (checked at run time; the scalar loop otherwise).
  bool vectorize = true;
  /// A 2-d GEMM followed only by `+ bias` or `relu(+ bias)` carries them
  /// as its epilogue (ExternCall::epilogue) instead of a pointwise kernel.
  bool gemmEpilogues = true;
  /// Do not fail on unsupported ops: record each in CudaModule::unsupported
  /// (op, location, reason) with a LaunchStep::Unsupported step, give its
  /// results buffers, and go on emitting the rest (a failed row group is
  /// retried member by member). For compile checks over whole test suites;
  /// a module with unsupported ops cannot run.
  bool collectUnsupported = false;
};

/// Emits CUDA C++ for every func.func of `module` (fused linalg on tensors).
/// Unsupported IR is reported through the context's diagnostic engine at
/// the offending op's location and yields failure.
FailureOr<CudaModule> emitCuda(ModuleOp module, const EmitOptions &options = {});

/// Block size of a row reduction over `rowLength` elements (the launch rule
/// documented in codegen/cuda/README.md).
int64_t reductionBlockSize(int64_t rowLength);
/// Grid size of a pointwise kernel over `numElements` with 256 threads.
int64_t pointwiseGridSize(int64_t numElements);

} // namespace mlir::kiln::cuda

#endif // KILN_CODEGEN_CUDA_CUDAEMITTER_H

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
  std::string name;        // arg0.., buf0..
  std::string elementType; // CUDA storage type: float, __half, ...
  std::vector<int64_t> shape;
  int64_t bytes = 0;
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
};

struct CudaModule {
  std::string source;
  std::vector<KernelInfo> kernels;
  std::vector<BufferInfo> buffers; // all functions, names prefixed per func
};

/// Appends what runs before emission: kiln-optimize, then the shared
/// kiln → fused-linalg stages (buildFusedLinalgPipeline).
void buildCudaPreparePipeline(OpPassManager &pm);

struct EmitOptions {
  /// Fuse a row reduction with the following generics over the same rows
  /// (softmax, layer_norm) into one kernel, one block per row.
  bool fuseRows = true;
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

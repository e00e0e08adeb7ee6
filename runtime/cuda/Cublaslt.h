//===- Cublaslt.h - kiln's GEMMs through cuBLASLt, loaded with dlopen -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GEMM steps of a launch plan run as cuBLASLt matmuls. Like the driver,
// the library is opened with dlopen on first use (libcublasLt.so.13, .12,
// .11, or the path set by setCublasLtLibraryName: kiln/cuda/_driver.py
// passes the copy torch already loaded) and the few entry points are
// resolved by name; the cuBLASLt types and enum values kiln uses are
// declared here (ABI of cublasLt.h), so no CUDA headers are needed.
//
// kiln's GEMMs are row-major: C[b] = A[b] x B[b] (B[b]^T when transB),
// contiguous, with an optional epilogue on C (bias row, ReLU, tanh GELU).
// cuBLASLt is column-major, so a GEMM is lowered (lowerGemm) to the
// column-major product C^T = B^T x A^T: cuBLASLt's A is kiln's B, its B is
// kiln's A, and the bias row becomes cuBLASLt's per-row bias vector. The
// lowering is a plain struct so tests can check it; the fake cuBLASLt of
// test/python/cuda_fake computes what the call says on host memory.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_CUBLASLT_H
#define KILN_RUNTIME_CUDA_CUBLASLT_H

#include "runtime/cuda/CudaDriver.h"

#include <cstdint>
#include <string>

namespace kiln::rt::cuda {

/// cudaDataType codes kiln's buffers use.
enum DataType : int { kF32 = 0, kF64 = 1, kF16 = 2, kI8 = 3, kI32 = 10, kBF16 = 14, kF8E4M3 = 28 };

/// What runs on the product before it is stored (kiln's spelling).
enum class Epilogue : int {
  None = 0,
  Bias = 1,
  BiasRelu = 2,
  BiasGeluTanh = 3,
  Relu = 4,
  GeluTanh = 5
};

/// One row-major GEMM of a plan.
struct GemmDesc {
  DataType inType = kF32, outType = kF32; ///< A and B; C (and the bias)
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transB = false;
  bool tf32 = false; ///< fp32 inputs: TF32 tensor cores allowed (torch's allow_tf32)
  Epilogue epilogue = Epilogue::None;
};

/// A cuBLASLt matmul call: column-major layouts (rows, cols, leading
/// dimension, batch stride) of its A, B and D, the ops, compute and scale
/// types and the cublasLtEpilogue_t value.
struct LtLayout {
  int type = kF32;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, batchStride = 0;
};
struct LtCall {
  int computeType = 0, scaleType = kF32;
  int transA = 0, transB = 0; ///< cublasOperation_t (0 N, 1 T)
  uint32_t epilogue = 1;      ///< CUBLASLT_EPILOGUE_DEFAULT
  int32_t batch = 1;
  LtLayout a, b, d;
};

/// The cuBLASLt call computing `g` (see the file comment); false with
/// `error` set for types cuBLASLt cannot run.
bool lowerGemm(const GemmDesc &g, LtCall &call, std::string &error);

/// "cublasLt ..." one-line description of a call (tests, error messages).
std::string describe(const LtCall &call);

/// Makes the cuBLASLt library kiln opens `name` ("" = try the default
/// sonames). Effective only before the first GEMM is prepared.
void setCublasLtLibraryName(const std::string &name);

/// A prepared GEMM: descriptors, layouts and the heuristic's algorithm,
/// made once (on the first run; never during a CUDA graph capture, which
/// always follows a plain run) and reused by every call.
class LtGemm {
public:
  explicit LtGemm(const GemmDesc &desc) : desc_(desc) {}
  ~LtGemm();
  LtGemm(const LtGemm &) = delete;
  LtGemm &operator=(const LtGemm &) = delete;

  /// Creates the descriptors and asks cuBLASLt's heuristic for an
  /// algorithm fitting `workspaceBytes` and the alignment of these
  /// pointers (up to 256 bytes; cuBLASLt assumes 256 unless told). Done
  /// again by run() when a later pointer is less aligned.
  bool prepare(const void *a, const void *b, const void *c, const void *bias, size_t workspaceBytes,
               std::string &error);
  /// D = epilogue(A x B) on `stream`.
  bool run(const void *a, const void *b, void *c, const void *bias, void *workspace,
           size_t workspaceBytes, CUstream stream, std::string &error);

  const GemmDesc &desc() const { return desc_; }

private:
  GemmDesc desc_;
  LtCall call_;
  void release();
  bool prepared_ = false;
  uint32_t align_ = 256; ///< the alignment the algorithm was chosen for
  void *op_ = nullptr, *la_ = nullptr, *lb_ = nullptr, *ld_ = nullptr;
  uint64_t algo_[8] = {};
  size_t algoWorkspace_ = 0;
};

} // namespace kiln::rt::cuda

#endif // KILN_RUNTIME_CUDA_CUBLASLT_H

//===- BlasShims.cpp - OpenBLAS behind kiln's memref calling convention ------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements the `_mlir_ciface_kiln_blas_*` functions the JIT'd code calls:
// unpacks strided memref descriptors into row-major leading dimensions and
// calls OpenBLAS `cblas_?gemm` (batched calls loop over dim 0). Layouts BLAS
// cannot take (a non-unit innermost stride) use a plain loop. The BLAS
// thread count follows kilnSetNumThreads, applied lazily before a call.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/BlasShims.h"
#include "codegen/cpu/Threads.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>

namespace {

std::atomic<int> requestedThreads{0};
std::atomic<int> appliedThreads{0};

void applyThreads() {
  int want = requestedThreads.load(std::memory_order_relaxed);
  if (want > 0 && appliedThreads.load(std::memory_order_relaxed) != want) {
    openblas_set_num_threads(want);
    appliedThreads.store(want, std::memory_order_relaxed);
  }
}

/// A row-major view of one matrix: base pointer, rows, cols, row stride,
/// col stride.
template <typename T>
struct Matrix {
  T *data;
  int64_t rows, cols, rowStride, colStride;
  /// BLAS needs unit column stride (irrelevant when there is one column).
  bool blasCompatible() const { return colStride == 1 || cols <= 1; }
  /// The leading dimension BLAS wants (>= max(1, cols)).
  int64_t ld() const { return std::max<int64_t>({rowStride, cols, 1}); }
  T &at(int64_t r, int64_t c) const { return data[r * rowStride + c * colStride]; }
};

template <typename T, int N>
Matrix<T> matrix(StridedMemRefType<T, N> *m, int64_t batch) {
  return {m->data + m->offset + (N == 3 ? batch * m->strides[0] : 0),
          m->sizes[N - 2], m->sizes[N - 1], m->strides[N - 2],
          m->strides[N - 1]};
}

void gemm(bool transB, int64_t m, int64_t n, int64_t k, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c,
          int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}
void gemm(bool transB, int64_t m, int64_t n, int64_t k, const double *a,
          int64_t lda, const double *b, int64_t ldb, double beta, double *c,
          int64_t ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

/// C = A * op(B) + beta * C on one matrix.
template <typename T>
void matmul(Matrix<T> a, Matrix<T> b, Matrix<T> c, bool transB, T beta) {
  int64_t m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0)
    return;
  if (k > 0 && a.blasCompatible() && b.blasCompatible() && c.blasCompatible()) {
    gemm(transB, m, n, k, a.data, a.ld(), b.data, b.ld(), beta, c.data, c.ld());
    return;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += a.at(i, p) * (transB ? b.at(j, p) : b.at(p, j));
      c.at(i, j) = (beta == T(0) ? T(0) : beta * c.at(i, j)) + acc;
    }
}

template <typename T>
void batched(StridedMemRefType<T, 3> *a, StridedMemRefType<T, 3> *b,
             StridedMemRefType<T, 3> *c, int32_t transB, T beta) {
  applyThreads();
  for (int64_t i = 0; i < c->sizes[0]; ++i)
    matmul(matrix(a, i), matrix(b, i), matrix(c, i), transB != 0, beta);
}

} // namespace

extern "C" {

void kilnSetNumThreads(int n) {
  requestedThreads.store(n, std::memory_order_relaxed);
}

int kilnGetNumThreads() { return requestedThreads.load(std::memory_order_relaxed); }

void _mlir_ciface_kiln_blas_sgemm(StridedMemRefType<float, 2> *a,
                                  StridedMemRefType<float, 2> *b,
                                  StridedMemRefType<float, 2> *c,
                                  int32_t transB, float beta) {
  applyThreads();
  matmul(matrix(a, 0), matrix(b, 0), matrix(c, 0), transB != 0, beta);
}

void _mlir_ciface_kiln_blas_dgemm(StridedMemRefType<double, 2> *a,
                                  StridedMemRefType<double, 2> *b,
                                  StridedMemRefType<double, 2> *c,
                                  int32_t transB, double beta) {
  applyThreads();
  matmul(matrix(a, 0), matrix(b, 0), matrix(c, 0), transB != 0, beta);
}

void _mlir_ciface_kiln_blas_sgemm_batched(StridedMemRefType<float, 3> *a,
                                          StridedMemRefType<float, 3> *b,
                                          StridedMemRefType<float, 3> *c,
                                          int32_t transB, float beta) {
  batched(a, b, c, transB, beta);
}

void _mlir_ciface_kiln_blas_dgemm_batched(StridedMemRefType<double, 3> *a,
                                          StridedMemRefType<double, 3> *b,
                                          StridedMemRefType<double, 3> *c,
                                          int32_t transB, double beta) {
  batched(a, b, c, transB, beta);
}

} // extern "C"

namespace mlir::kiln {

std::vector<std::pair<const char *, void *>> blasShimSymbols() {
  return {
      {"_mlir_ciface_kiln_blas_sgemm", reinterpret_cast<void *>(&_mlir_ciface_kiln_blas_sgemm)},
      {"_mlir_ciface_kiln_blas_dgemm", reinterpret_cast<void *>(&_mlir_ciface_kiln_blas_dgemm)},
      {"_mlir_ciface_kiln_blas_sgemm_batched",
       reinterpret_cast<void *>(&_mlir_ciface_kiln_blas_sgemm_batched)},
      {"_mlir_ciface_kiln_blas_dgemm_batched",
       reinterpret_cast<void *>(&_mlir_ciface_kiln_blas_dgemm_batched)},
  };
}

} // namespace mlir::kiln

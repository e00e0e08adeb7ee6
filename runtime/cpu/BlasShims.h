//===- BlasShims.h - BLAS entry points called by JIT'd code -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The `_mlir_ciface_kiln_blas_*` functions that `kiln-cpu-linalg-to-blas` calls
// (C = A * op(B) + beta * C on strided memref descriptors), the symbol
// table the JIT registers them with, and the choice of BLAS library behind
// them (OpenBLAS, linked, or oneMKL's libmkl_rt, dlopen'ed).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_BLASSHIMS_H
#define KILN_RUNTIME_CPU_BLASSHIMS_H

#include "runtime/MemRefDescriptor.h"

#include <cstdint>
#include <utility>
#include <vector>

extern "C" {
/// Makes the shims call the CBLAS of oneMKL's runtime library at `path`
/// (libmkl_rt.so.N; dlopen'ed, never unloaded). Null, "" or "openblas"
/// selects the linked OpenBLAS. Returns 1 when MKL is in use; on a load
/// failure prints why to stderr and keeps OpenBLAS (returns 0). Call it
/// before compiled code runs (the frontend does at import, kiln/_blas.py);
/// when it never is, the shims use OpenBLAS.
int kilnSetBlasLibrary(const char *path);
/// "openblas", or "mkl (<threading layer> threading) <path>".
const char *kilnBlasLibrary();

/// C[M,N] = A[M,K] * (transB ? B[N,K]^T : B[K,N]) + beta * C.
void _mlir_ciface_kiln_blas_sgemm(kiln::rt::StridedMemRef<float, 2> *a,
                                  kiln::rt::StridedMemRef<float, 2> *b,
                                  kiln::rt::StridedMemRef<float, 2> *c, int32_t transB, float beta);
/// f64 version of _mlir_ciface_kiln_blas_sgemm.
void _mlir_ciface_kiln_blas_dgemm(kiln::rt::StridedMemRef<double, 2> *a,
                                  kiln::rt::StridedMemRef<double, 2> *b,
                                  kiln::rt::StridedMemRef<double, 2> *c, int32_t transB,
                                  double beta);
/// Batched (dim 0) version of _mlir_ciface_kiln_blas_sgemm.
void _mlir_ciface_kiln_blas_sgemm_batched(kiln::rt::StridedMemRef<float, 3> *a,
                                          kiln::rt::StridedMemRef<float, 3> *b,
                                          kiln::rt::StridedMemRef<float, 3> *c, int32_t transB,
                                          float beta);
/// Batched (dim 0) version of _mlir_ciface_kiln_blas_dgemm.
void _mlir_ciface_kiln_blas_dgemm_batched(kiln::rt::StridedMemRef<double, 3> *a,
                                          kiln::rt::StridedMemRef<double, 3> *b,
                                          kiln::rt::StridedMemRef<double, 3> *c, int32_t transB,
                                          double beta);
/// C[M,N] (f32) = A[M,K] * (transB ? B[N,K]^T : B[K,N]) + beta * C with
/// bf16 A and B (their raw bits), accumulated in f32.
void _mlir_ciface_kiln_blas_bf16gemm(kiln::rt::StridedMemRef<uint16_t, 2> *a,
                                     kiln::rt::StridedMemRef<uint16_t, 2> *b,
                                     kiln::rt::StridedMemRef<float, 2> *c, int32_t transB,
                                     float beta);
/// Batched (dim 0) version of _mlir_ciface_kiln_blas_bf16gemm.
void _mlir_ciface_kiln_blas_bf16gemm_batched(kiln::rt::StridedMemRef<uint16_t, 3> *a,
                                             kiln::rt::StridedMemRef<uint16_t, 3> *b,
                                             kiln::rt::StridedMemRef<float, 3> *c, int32_t transB,
                                             float beta);
}

namespace kiln::rt {
/// (symbol name, address) of every shim, for ExecutionEngine::registerSymbols.
std::vector<std::pair<const char *, void *>> blasShimSymbols();
} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_BLASSHIMS_H

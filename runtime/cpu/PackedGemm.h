//===- PackedGemm.h - GEMM weights packed once per tensor version -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// "Freezing" for the f32 GEMM shim (BlasShims.cpp): when the transposed
// right operand of a GEMM (an nn.Linear weight) is a graph input the frontend stamped
// (WeightStamps.h: an unchanged weight tensor, kiln.config.freeze_weights), it is reordered into
// oneDNN's blocked matmul layout once per tensor version (the same bytes as the weight) and every
// later call runs oneDNN's matmul on the packed copy, as torch.compile's freezing prepacks its
// linear weights. A process-wide cache keyed by the tensor's serial and the GEMM's shape, freed
// when the tensor dies (kilnGemmForgetWeights). Without oneDNN (DnnlConvNone.cpp) nothing is
// packed.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_PACKEDGEMM_H
#define KILN_RUNTIME_CPU_PACKEDGEMM_H

#include <cstdint>

namespace kiln::rt {

/// Row-major C[m,n] = A[m,k] * op(B) + beta * C (A, B and C with unit
/// column stride and leading dimensions lda, ldb, ldc) from a packed copy
/// of B, when `bBase` (B's memref base pointer) is a stamped graph input
/// and the shape is one packing pays for (B transposed: an nn.Linear
/// weight; m >= 2, n * k >= 64 Ki; beta 0 or 1). Returns
/// false, having done nothing, otherwise (also when oneDNN refuses).
bool packedSgemm(const void *bBase, bool transB, int64_t m, int64_t n, int64_t k, const float *a,
                 int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

} // namespace kiln::rt

extern "C" {
/// Drops the packed GEMM operands of the tensor of `serial` (it died).
void kilnGemmForgetWeights(uint64_t serial);
/// Bytes of packed GEMM operands cached now, -1 without oneDNN.
int64_t kilnGemmPackedBytes();
/// GEMM operands packed so far, -1 without oneDNN.
int64_t kilnGemmWeightPacks();
/// GEMMs run on a packed operand so far, -1 without oneDNN.
int64_t kilnGemmPackedCalls();
}

#endif // KILN_RUNTIME_CPU_PACKEDGEMM_H

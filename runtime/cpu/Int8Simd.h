//===- Int8Simd.h - vector loops of kiln's int8 linear layer ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The per-element loops around the int8 GEMM of runtime/cpu/Int8Gemm.cpp:
// row absmax, row quantization to u8 (q + 128), weight row sums and the
// dequantize + bias epilogue. Each has an AVX-512 version (chosen at run
// time when the CPU has AVX-512 BW) and a portable one; both compute the
// same values (division and round-half-even per element, no reassociation
// that changes a result beyond float rounding of the epilogue).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_INT8SIMD_H
#define KILN_RUNTIME_CPU_INT8SIMD_H

#include <cstdint>

namespace kiln::rt::int8 {

/// Whether this CPU runs the AVX-512 (F + BW) loops (checked once).
bool haveAvx512();

/// max |x[j]| over k contiguous floats.
float absMax(const float *x, int64_t k);
/// out[j] = clamp(round_half_even(x[j] / scale), -127, 127) + 128.
void quantizeRow(const float *x, int64_t k, float scale, uint8_t *out);
/// out[j] = clamp(round_half_even(x[j] * invScale) + zero, 0, 255) (static
/// activations, torch's quantize_per_tensor to uint8).
void quantizeRowAffine(const float *x, int64_t k, float invScale, int32_t zero, uint8_t *out);
/// sum of k contiguous int8 values.
int32_t rowSum(const int8_t *w, int64_t k);
/// y[r] = float(acc[r] - comp[r]) * (xScale * wScale[r]) + bias[r], r < n.
void epilogueRow(const int32_t *acc, const int32_t *comp, float xScale, const float *wScale,
                 const float *bias, int64_t n, float *y);

/// y[r] = sum_j x[j] * (float(w[r * ldw + j]) * wScale[r]) + bias[r], r < n:
/// one row of the weight-only layer straight from the int8 weight (small M,
/// where reading 1-byte weights once beats dequantizing them first).
void weightOnlyRow(const float *x, const int8_t *w, int64_t ldw, int64_t n, int64_t k,
                   const float *wScale, const float *bias, float *y);

/// out[j] = float(w[j]) * scale, j < k.
void dequantizeRow(const int8_t *w, int64_t k, float scale, float *out);

} // namespace kiln::rt::int8

#endif // KILN_RUNTIME_CPU_INT8SIMD_H

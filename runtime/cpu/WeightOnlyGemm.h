//===- WeightOnlyGemm.h - GEMMs on weights dequantized block by block -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The many-row path of kiln's weight-only layers (int8: Int8Gemm.cpp, int4:
// Int4Linear.cpp): the weight is dequantized a block of output rows at a
// time into a cache-sized scratch and multiplied by kiln's sgemm shim, so
// the f32 copy of the whole weight is never written (a GPT-2 prefill wrote
// and read 500 MB of it per call).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_WEIGHTONLYGEMM_H
#define KILN_RUNTIME_CPU_WEIGHTONLYGEMM_H

#include "runtime/MemRefDescriptor.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace kiln::rt {

/// Writes rows [first, first + count) of the dequantized weight [N, K] as
/// `count` contiguous rows of K floats at `out`.
using DequantizeRows = std::function<void(int64_t first, int64_t count, float *out)>;

/// y[M, N] = x[M, K] @ W^T + bias[N], W produced block by block by
/// `dequantize` into `scratch`; y has unit column stride.
void dequantizedGemm(kiln::rt::StridedMemRef<float, 2> x, kiln::rt::StridedMemRef<float, 2> *y,
                     const float *bias, const DequantizeRows &dequantize,
                     std::vector<float> &scratch);

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_WEIGHTONLYGEMM_H

//===- WeightOnlyGemm.cpp - GEMMs on weights dequantized block by block ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements runtime/cpu/WeightOnlyGemm.h: blocks of output rows of about
// 1 MiB of floats (256 KiB measured the same on a GPT-2 prefill), each
// dequantized and multiplied into its columns of y by one sgemm (x [M, K]
// times the block transposed).
//===----------------------------------------------------------------------===//
#include "runtime/cpu/WeightOnlyGemm.h"

#include "runtime/cpu/BlasShims.h"

#include <algorithm>

namespace kiln::rt {

namespace {
constexpr int64_t kBlockFloats = 256 * 1024;
} // namespace

void dequantizedGemm(StridedMemRef<float, 2> x, StridedMemRef<float, 2> *y, const float *bias,
                     const DequantizeRows &dequantize, std::vector<float> &scratch) {
  int64_t m = x.sizes[0], k = x.sizes[1], n = y->sizes[1];
  int64_t block = std::clamp<int64_t>(kBlockFloats / std::max<int64_t>(k, 1), 16, 1024);
  block = std::min(block, n);
  scratch.resize(block * k);
  for (int64_t first = 0; first < n; first += block) {
    int64_t count = std::min(block, n - first);
    dequantize(first, count, scratch.data());
    StridedMemRef<float, 2> w{scratch.data(), scratch.data(), 0, {count, k}, {k, 1}};
    StridedMemRef<float, 2> columns{
        y->basePtr, y->data, y->offset + first, {m, count}, {y->strides[0], 1}};
    _mlir_ciface_kiln_blas_sgemm(&x, &w, &columns, /*transB=*/1, 0.0f);
  }
  float *out = y->data + y->offset;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < n; ++r)
      out[i * y->strides[0] + r] += bias[r];
}

} // namespace kiln::rt

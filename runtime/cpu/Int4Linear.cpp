//===- Int4Linear.cpp - int4 weight-only linear layers called by JIT'd code ------===//
// SPDX-License-Identifier: Apache-2.0
//
// The run-time half of a grouped weight-only kiln.qlinear
// (runtime/cpu/Int4Linear.h). A decoding step (M <= 8 rows) is
// memory-bound on the weight: the row kernel reads each packed byte once
// per row, unpacks its two nibbles into 16-lane vectors (AVX-512 when the
// CPU has it, chosen once at run time; a portable loop otherwise), sums a
// group's products and multiplies the sum by the group's scale. Larger M
// dequantizes the weight a block of rows at a time for kiln's sgemm
// (WeightOnlyGemm.h).
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Int4Linear.h"

#include "runtime/cpu/Int8Simd.h"
#include "runtime/cpu/WeightOnlyGemm.h"

#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KILN_INT4_AVX512 1
#define KILN_AVX512 __attribute__((target("avx512f,avx512bw")))
#endif

namespace {

using kiln::rt::int8::haveAvx512;
constexpr int64_t kBlock = 32; // values per 16 packed bytes

/// Value j of a 32-value block of 16 packed bytes.
inline int32_t unpack(const uint8_t *block, int64_t j) {
  return j < 16 ? int32_t(block[j] & 0x0F) - 8 : int32_t(block[j - 16] >> 4) - 8;
}

float dotScalar(const float *x, const uint8_t *w, int64_t k, const float *scales, int64_t group) {
  float total = 0.0f;
  for (int64_t g0 = 0; g0 < k; g0 += group) {
    float sum = 0.0f;
    for (int64_t b = g0; b < g0 + group; b += kBlock)
      for (int64_t j = 0; j < kBlock; ++j)
        sum += x[b + j] * float(unpack(w + b / 2, j));
    total += sum * scales[g0 / group];
  }
  return total;
}

#ifdef KILN_INT4_AVX512
KILN_AVX512 float dot512(const float *x, const uint8_t *w, int64_t k, const float *scales,
                         int64_t group) {
  const __m128i low = _mm_set1_epi8(0x0F);
  const __m512i eight = _mm512_set1_epi32(8);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t g0 = 0; g0 < k; g0 += group) {
    __m512 sum = _mm512_setzero_ps();
    for (int64_t b = g0; b < g0 + group; b += kBlock) {
      __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + b / 2));
      __m128i lo = _mm_and_si128(bytes, low);
      __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low);
      __m512 wl = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(lo), eight));
      __m512 wh = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(hi), eight));
      sum = _mm512_fmadd_ps(_mm512_loadu_ps(x + b), wl, sum);
      sum = _mm512_fmadd_ps(_mm512_loadu_ps(x + b + 16), wh, sum);
    }
    acc = _mm512_fmadd_ps(sum, _mm512_set1_ps(scales[g0 / group]), acc);
  }
  return _mm512_reduce_add_ps(acc);
}
#endif

void dequantizeRowScalar(const uint8_t *w, int64_t k, const float *scales, int64_t group,
                         float *out) {
  for (int64_t j = 0; j < k; ++j)
    out[j] = float(unpack(w + (j / kBlock) * 16, j % kBlock)) * scales[j / group];
}

#ifdef KILN_INT4_AVX512
KILN_AVX512 void dequantizeRow512(const uint8_t *w, int64_t k, const float *scales, int64_t group,
                                  float *out) {
  const __m128i low = _mm_set1_epi8(0x0F);
  const __m512i eight = _mm512_set1_epi32(8);
  for (int64_t b = 0; b < k; b += kBlock) {
    __m512 s = _mm512_set1_ps(scales[b / group]);
    __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + b / 2));
    __m128i lo = _mm_and_si128(bytes, low);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low);
    __m512 wl = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(lo), eight));
    __m512 wh = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(hi), eight));
    _mm512_storeu_ps(out + b, _mm512_mul_ps(wl, s));
    _mm512_storeu_ps(out + b + 16, _mm512_mul_ps(wh, s));
  }
}
#endif

/// Row `w` of the weight (K values) dequantized into `out`.
void dequantizeRow(const uint8_t *w, int64_t k, const float *scales, int64_t group, float *out) {
#ifdef KILN_INT4_AVX512
  if (haveAvx512())
    return dequantizeRow512(w, k, scales, group, out);
#endif
  dequantizeRowScalar(w, k, scales, group, out);
}

/// One output row: y[r] = x . dequantize(w[r]) + bias[r], r < n.
void rowKernel(const float *x, const uint8_t *w, int64_t ldw, int64_t n, int64_t k,
               const float *scales, int64_t lds, int64_t group, const float *bias, float *y) {
#ifdef KILN_INT4_AVX512
  if (haveAvx512()) {
    for (int64_t r = 0; r < n; ++r)
      y[r] = dot512(x, w + r * ldw, k, scales + r * lds, group) + bias[r];
    return;
  }
#endif
  for (int64_t r = 0; r < n; ++r)
    y[r] = dotScalar(x, w + r * ldw, k, scales + r * lds, group) + bias[r];
}

/// Per-call scratch (one per thread: compiled functions may run concurrently).
struct Scratch {
  std::vector<float> row, scales, bias, weight;
};
Scratch &scratch() {
  thread_local Scratch s;
  return s;
}

/// `rows` x `cols` floats with strides (`s0`, `s1`) as contiguous rows in `buf`.
const float *contiguous2d(const float *p, int64_t rows, int64_t cols, int64_t s0, int64_t s1,
                          std::vector<float> &buf) {
  if (s1 == 1 && (s0 == cols || rows <= 1))
    return p;
  buf.resize(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      buf[i * cols + j] = p[i * s0 + j * s1];
  return buf.data();
}

constexpr int64_t kMaxRowKernelRows = 8;

} // namespace

extern "C" {

void _mlir_ciface_kiln_int4_linear(kiln::rt::StridedMemRef<float, 2> *x, int64_t weight,
                                   int64_t weightRowBytes,
                                   kiln::rt::StridedMemRef<float, 2> *weightScale,
                                   kiln::rt::StridedMemRef<float, 1> *bias,
                                   kiln::rt::StridedMemRef<float, 2> *y, int64_t groupSize) {
  const auto *w = reinterpret_cast<const uint8_t *>(weight);
  int64_t m = x->sizes[0], k = x->sizes[1], n = y->sizes[1], groups = weightScale->sizes[1];
  Scratch &s = scratch();
  const float *scales = contiguous2d(weightScale->data + weightScale->offset, n, groups,
                                     weightScale->strides[0], weightScale->strides[1], s.scales);
  const float *b = contiguous2d(bias->data + bias->offset, 1, n, 0, bias->strides[0], s.bias);
  float *out = y->data + y->offset; // kiln's own [M, N] buffer: contiguous rows
  if (m <= kMaxRowKernelRows) {
    for (int64_t i = 0; i < m; ++i) {
      const float *row =
          contiguous2d(x->data + x->offset + i * x->strides[0], 1, k, 0, x->strides[1], s.row);
      rowKernel(row, w, weightRowBytes, n, k, scales, groups, groupSize, b,
                out + i * y->strides[0]);
    }
    return;
  }
  kiln::rt::dequantizedGemm(
      *x, y, b,
      [&](int64_t first, int64_t count, float *rows) {
        for (int64_t r = first; r < first + count; ++r)
          dequantizeRow(w + r * weightRowBytes, k, scales + r * groups, groupSize,
                        rows + (r - first) * k);
      },
      s.weight);
}

} // extern "C"

namespace kiln::rt {

std::vector<std::pair<const char *, void *>> int4LinearSymbols() {
  return {
      {"_mlir_ciface_kiln_int4_linear", reinterpret_cast<void *>(&_mlir_ciface_kiln_int4_linear)}};
}

} // namespace kiln::rt

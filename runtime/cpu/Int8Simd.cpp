//===- Int8Simd.cpp - vector loops of kiln's int8 linear layer --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements runtime/cpu/Int8Simd.h: AVX-512 loops (GCC/Clang target
// attributes, chosen once by __builtin_cpu_supports) with portable loops
// for other CPUs and the tails. The runtime is built for baseline x86-64,
// so without these the loops ran scalar (division and rounding per
// element): about a third of BERT-base's int8 time before they existed.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Int8Simd.h"

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KILN_INT8_AVX512 1
#define KILN_AVX512 __attribute__((target("avx512f,avx512bw")))
#endif

namespace kiln::rt::int8 {
namespace {

/// max(m, |x[j]|), NaN when m or some x[j] is NaN.
float absMaxScalar(const float *x, int64_t k, float m) {
  for (int64_t j = 0; j < k; ++j)
    m = std::isnan(x[j]) ? x[j] : std::max(m, std::fabs(x[j]));
  return m;
}

void quantizeScalar(const float *x, int64_t k, float scale, uint8_t *out) {
  for (int64_t j = 0; j < k; ++j) {
    float q = std::nearbyint(x[j] / scale);
    out[j] = static_cast<uint8_t>(std::clamp(q, -127.0f, 127.0f) + 128.0f);
  }
}

void quantizeAffineScalar(const float *x, int64_t k, float inv, int32_t zero, uint8_t *out) {
  for (int64_t j = 0; j < k; ++j) {
    float q = std::nearbyint(x[j] * inv) + float(zero);
    out[j] = static_cast<uint8_t>(std::clamp(q, 0.0f, 255.0f));
  }
}

#ifdef KILN_INT8_AVX512

KILN_AVX512 float absMax512(const float *x, int64_t k) {
  __m512 m = _mm512_setzero_ps();
  __mmask16 nan = 0;
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    __m512 v = _mm512_loadu_ps(x + j);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    m = _mm512_max_ps(m, _mm512_abs_ps(v));
  }
  float head = nan ? std::numeric_limits<float>::quiet_NaN() : _mm512_reduce_max_ps(m);
  return absMaxScalar(x + j, k - j, head);
}

KILN_AVX512 void quantize512(const float *x, int64_t k, float scale, uint8_t *out) {
  const __m512 s = _mm512_set1_ps(scale), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  const __m512i shift = _mm512_set1_epi32(128);
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    __m512 q = _mm512_roundscale_ps(_mm512_div_ps(_mm512_loadu_ps(x + j), s),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    q = _mm512_min_ps(_mm512_max_ps(q, lo), hi);
    __m512i u = _mm512_add_epi32(_mm512_cvtps_epi32(q), shift);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + j), _mm512_cvtusepi32_epi8(u));
  }
  quantizeScalar(x + j, k - j, scale, out + j);
}

KILN_AVX512 void quantizeAffine512(const float *x, int64_t k, float inv, int32_t zero,
                                   uint8_t *out) {
  const __m512 s = _mm512_set1_ps(inv), z = _mm512_set1_ps(float(zero));
  const __m512 lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255.0f);
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(x + j), s),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    q = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(q, z), lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + j),
                     _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(q)));
  }
  quantizeAffineScalar(x + j, k - j, inv, zero, out + j);
}

KILN_AVX512 int32_t rowSum512(const int8_t *w, int64_t k) {
  const __m512i ones = _mm512_set1_epi16(1);
  __m512i acc = _mm512_setzero_si512();
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    __m512i v = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + j)));
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(v, ones));
  }
  int32_t total = _mm512_reduce_add_epi32(acc);
  for (; j < k; ++j)
    total += w[j];
  return total;
}

KILN_AVX512 void epilogue512(const int32_t *acc, const int32_t *comp, float xScale,
                             const float *wScale, const float *bias, int64_t n, float *y) {
  const __m512 xs = _mm512_set1_ps(xScale);
  int64_t r = 0;
  for (; r + 16 <= n; r += 16) {
    __m512i a = _mm512_sub_epi32(_mm512_loadu_si512(acc + r), _mm512_loadu_si512(comp + r));
    __m512 scale = _mm512_mul_ps(xs, _mm512_loadu_ps(wScale + r));
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), scale);
    _mm512_storeu_ps(y + r, _mm512_add_ps(v, _mm512_loadu_ps(bias + r)));
  }
  for (; r < n; ++r)
    y[r] = float(acc[r] - comp[r]) * (xScale * wScale[r]) + bias[r];
}

KILN_AVX512 float dequantDot512(const float *x, const int8_t *w, int64_t k, float scale) {
  const __m512 s = _mm512_set1_ps(scale);
  __m512 acc = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + j));
    __m512 wf = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)), s);
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(x + j), wf, acc);
  }
  float total = _mm512_reduce_add_ps(acc);
  for (; j < k; ++j)
    total += x[j] * (float(w[j]) * scale);
  return total;
}
#endif

#ifdef KILN_INT8_AVX512
KILN_AVX512 void dequantize512(const int8_t *w, int64_t k, float scale, float *out) {
  const __m512 s = _mm512_set1_ps(scale);
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + j));
    _mm512_storeu_ps(out + j, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)), s));
  }
  for (; j < k; ++j)
    out[j] = float(w[j]) * scale;
}
#endif

float dequantDotScalar(const float *x, const int8_t *w, int64_t k, float scale) {
  float total = 0.0f;
  for (int64_t j = 0; j < k; ++j)
    total += x[j] * (float(w[j]) * scale);
  return total;
}

} // namespace

bool haveAvx512() {
#ifdef KILN_INT8_AVX512
  static const bool have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return have;
#else
  return false;
#endif
}

void weightOnlyRow(const float *x, const int8_t *w, int64_t ldw, int64_t n, int64_t k,
                   const float *wScale, const float *bias, float *y) {
#ifdef KILN_INT8_AVX512
  if (haveAvx512()) {
    for (int64_t r = 0; r < n; ++r)
      y[r] = dequantDot512(x, w + r * ldw, k, wScale[r]) + bias[r];
    return;
  }
#endif
  for (int64_t r = 0; r < n; ++r)
    y[r] = dequantDotScalar(x, w + r * ldw, k, wScale[r]) + bias[r];
}

void dequantizeRow(const int8_t *w, int64_t k, float scale, float *out) {
#ifdef KILN_INT8_AVX512
  if (haveAvx512())
    return dequantize512(w, k, scale, out);
#endif
  for (int64_t j = 0; j < k; ++j)
    out[j] = float(w[j]) * scale;
}

float absMax(const float *x, int64_t k) {
#ifdef KILN_INT8_AVX512
  if (haveAvx512())
    return absMax512(x, k);
#endif
  return absMaxScalar(x, k, 0.0f);
}

void quantizeRow(const float *x, int64_t k, float scale, uint8_t *out) {
#ifdef KILN_INT8_AVX512
  if (haveAvx512())
    return quantize512(x, k, scale, out);
#endif
  quantizeScalar(x, k, scale, out);
}

void quantizeRowAffine(const float *x, int64_t k, float invScale, int32_t zero, uint8_t *out) {
#ifdef KILN_INT8_AVX512
  if (haveAvx512())
    return quantizeAffine512(x, k, invScale, zero, out);
#endif
  quantizeAffineScalar(x, k, invScale, zero, out);
}

int32_t rowSum(const int8_t *w, int64_t k) {
#ifdef KILN_INT8_AVX512
  if (haveAvx512())
    return rowSum512(w, k);
#endif
  int32_t total = 0;
  for (int64_t j = 0; j < k; ++j)
    total += w[j];
  return total;
}

void epilogueRow(const int32_t *acc, const int32_t *comp, float xScale, const float *wScale,
                 const float *bias, int64_t n, float *y) {
#ifdef KILN_INT8_AVX512
  if (haveAvx512())
    return epilogue512(acc, comp, xScale, wScale, bias, n, y);
#endif
  for (int64_t r = 0; r < n; ++r)
    y[r] = float(acc[r] - comp[r]) * (xScale * wScale[r]) + bias[r];
}

} // namespace kiln::rt::int8

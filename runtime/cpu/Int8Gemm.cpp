//===- Int8Gemm.cpp - int8 linear layers called by JIT'd code ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The run-time half of kiln.qlinear (runtime/cpu/Int8Gemm.h). One call:
//   1. quantizes the f32 input rows in one pass each (per-row or one
//      per-tensor max), storing q + 128 as u8 (VNNI multiplies u8 x s8),
//      or (static) with the calibrated scale and uint8 zero point;
//   2. runs C = A_u8 x W_s8^T in 32-bit integers: oneMKL's
//      cblas_gemm_s8u8s32 (the libmkl_rt kiln's BLAS shims loaded), else
//      oneDNN's dnnl_gemm_u8s8s32, else a plain loop. Measured at BERT-base
//      shapes, 1 thread: MKL 0.14 ms vs oneDNN 0.47 ms for 128x768x768
//      (docs/performance.md, "int8 GEMM provider");
//   3. y = (C - zp * rowsum(W)) * x_scale * w_scale + bias in one epilogue
//      (zp = 128 for dynamic inputs).
// The zero point is undone exactly through the weight row sums (computed
// per call, about 1/M of the GEMM's work).
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Int8Gemm.h"

#include "runtime/cpu/BlasShims.h"
#include "runtime/cpu/Int8Simd.h"
#include "runtime/cpu/WeightOnlyGemm.h"

#ifdef KILN_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <cstring>
#include <vector>

namespace {

namespace int8 = kiln::rt::int8;

using Mkl = void (*)(int, int, int, int, int, int, int, float, const void *, int, int8_t,
                     const void *, int, int8_t, float, int32_t *, int, const int32_t *);

/// cblas_gemm_s8u8s32 of the libmkl_rt the BLAS shims use; null otherwise.
Mkl mklGemm() {
  static std::atomic<Mkl> cached{nullptr};
  static std::atomic<bool> looked{false};
  if (looked.load(std::memory_order_acquire))
    return cached.load(std::memory_order_relaxed);
  Mkl f = nullptr;
  if (std::strncmp(kilnBlasLibrary(), "mkl", 3) == 0)
    if (void *h = dlopen("libmkl_rt.so.2", RTLD_NOW | RTLD_NOLOAD))
      f = reinterpret_cast<Mkl>(dlsym(h, "cblas_gemm_s8u8s32"));
  cached.store(f, std::memory_order_relaxed);
  looked.store(true, std::memory_order_release);
  return f;
}

/// Per-call scratch (one per thread: compiled functions may run concurrently).
struct Scratch {
  std::vector<uint8_t> a;
  std::vector<float> rowScale, row, wScale, bias, weight;
  std::vector<int32_t> acc, comp;
};
Scratch &scratch() {
  thread_local Scratch s;
  return s;
}

/// The symmetric scale of a row (group) with largest magnitude `absMax`;
/// NaN when that is NaN or inf: eager's reference gives NaN outputs then
/// (inf / inf), and every output of the row is multiplied by the scale.
float scaleOf(float absMax) {
  if (!std::isfinite(absMax))
    return std::numeric_limits<float>::quiet_NaN();
  return absMax > 0.0f ? absMax / 127.0f : 1.0f;
}

/// Row `i` of `x` as contiguous floats (copied into `buf` when strided).
const float *rowOf(const kiln::rt::StridedMemRef<float, 2> &x, int64_t i, std::vector<float> &buf) {
  const float *p = x.data + x.offset + i * x.strides[0];
  int64_t k = x.sizes[1];
  if (x.strides[1] == 1 || k <= 1)
    return p;
  buf.resize(k);
  for (int64_t j = 0; j < k; ++j)
    buf[j] = p[j * x.strides[1]];
  return buf.data();
}

/// Quantizes x into s.a (u8, q + 128) and s.rowScale; `perTensor` shares one scale.
void quantizeInput(const kiln::rt::StridedMemRef<float, 2> &x, bool perTensor, Scratch &s) {
  int64_t m = x.sizes[0], k = x.sizes[1];
  s.a.resize(m * k);
  s.rowScale.resize(m);
  float shared = 0.0f;
  if (perTensor)
    for (int64_t i = 0; i < m; ++i) {
      float rowMax = int8::absMax(rowOf(x, i, s.row), k);
      shared = std::isnan(rowMax) ? rowMax : std::max(shared, rowMax);
    }
  for (int64_t i = 0; i < m; ++i) {
    const float *row = rowOf(x, i, s.row);
    float scale = scaleOf(perTensor ? shared : int8::absMax(row, k));
    s.rowScale[i] = scale;
    if (std::isnan(scale)) // the row's outputs are NaN whatever it quantizes to
      std::fill(s.a.begin() + i * k, s.a.begin() + (i + 1) * k, uint8_t(128));
    else
      int8::quantizeRow(row, k, scale, s.a.data() + i * k);
  }
}

/// Static: x into s.a as torch's quantize_per_tensor to uint8 with the
/// calibrated scale and zero point (the reciprocal in f32, the product in f32).
void quantizeStatic(const kiln::rt::StridedMemRef<float, 2> &x, float scale, int32_t zero,
                    Scratch &s) {
  int64_t m = x.sizes[0], k = x.sizes[1];
  s.a.resize(m * k);
  s.rowScale.assign(m, scale);
  float inv = float(1.0 / double(scale));
  for (int64_t i = 0; i < m; ++i)
    int8::quantizeRowAffine(rowOf(x, i, s.row), k, inv, zero, s.a.data() + i * k);
}

/// `count` floats `stride` apart as a contiguous vector in `buf`.
const float *contiguous(const float *p, int64_t count, int64_t stride, std::vector<float> &buf) {
  if (stride == 1 || count <= 1)
    return p;
  buf.resize(count);
  for (int64_t i = 0; i < count; ++i)
    buf[i] = p[i * stride];
  return buf.data();
}

/// C[M, N] = A_u8[M, K] x W_s8[N, K]^T in int32.
void gemmU8S8(int64_t m, int64_t n, int64_t k, const uint8_t *a, const int8_t *w, int64_t ldw,
              int32_t *c) {
  const int32_t zero = 0;
  if (Mkl f = mklGemm()) {
    constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112, kFixOffset = 173;
    f(kRowMajor, kNoTrans, kTrans, kFixOffset, int(m), int(n), int(k), 1.0f, a, int(k), 0, w,
      int(ldw), 0, 0.0f, c, int(n), &zero);
    return;
  }
#ifdef KILN_HAVE_DNNL
  if (dnnl_gemm_u8s8s32('N', 'T', 'F', m, n, k, 1.0f, a, k, 0, w, ldw, 0, 0.0f, c, n, &zero) ==
      dnnl_success)
    return;
#endif
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < n; ++r) {
      int32_t total = 0;
      for (int64_t j = 0; j < k; ++j)
        total += int32_t(a[i * k + j]) * int32_t(w[r * ldw + j]);
      c[i * n + r] = total;
    }
}

/// Inputs of at most this many rows use the weight-only row kernel (int8
/// weights read once per row); larger ones dequantize the weight a block of
/// rows at a time for kiln's sgemm shim (WeightOnlyGemm.h).
constexpr int64_t kMaxWeightOnlyRows = 8;

/// Weight-only: y = x @ dequantize(w)^T + bias.
void weightOnly(const kiln::rt::StridedMemRef<float, 2> &x, const int8_t *w, int64_t ldw,
                const float *ws, const float *b, kiln::rt::StridedMemRef<float, 2> *y, Scratch &s) {
  int64_t m = x.sizes[0], k = x.sizes[1], n = y->sizes[1];
  float *out = y->data + y->offset;
  if (m <= kMaxWeightOnlyRows) {
    for (int64_t i = 0; i < m; ++i)
      int8::weightOnlyRow(rowOf(x, i, s.row), w, ldw, n, k, ws, b, out + i * y->strides[0]);
    return;
  }
  kiln::rt::dequantizedGemm(
      x, y, b,
      [&](int64_t first, int64_t count, float *rows) {
        for (int64_t r = first; r < first + count; ++r)
          int8::dequantizeRow(w + r * ldw, k, ws[r], rows + (r - first) * k);
      },
      s.weight);
}

} // namespace

extern "C" {

const char *kilnInt8GemmProvider() {
  if (mklGemm())
    return "mkl";
#ifdef KILN_HAVE_DNNL
  return "onednn";
#else
  return "reference";
#endif
}

void _mlir_ciface_kiln_int8_linear(kiln::rt::StridedMemRef<float, 2> *x, int64_t weight,
                                   int64_t weightRowBytes,
                                   kiln::rt::StridedMemRef<float, 2> *weightScale,
                                   kiln::rt::StridedMemRef<float, 1> *bias,
                                   kiln::rt::StridedMemRef<float, 2> *y, int64_t mode,
                                   float inputScale, int64_t inputZeroPoint) {
  const auto *w = reinterpret_cast<const int8_t *>(weight);
  int64_t m = x->sizes[0], k = x->sizes[1], n = y->sizes[1];
  Scratch &s = scratch();
  const float *b = contiguous(bias->data + bias->offset, n, bias->strides[0], s.bias);
  const float *ws =
      contiguous(weightScale->data + weightScale->offset, n, weightScale->strides[0], s.wScale);
  if (mode == 2)
    return weightOnly(*x, w, weightRowBytes, ws, b, y, s);
  float *out = y->data + y->offset; // kiln's own [M, N] buffer: contiguous rows
  // The u8 input's zero point: 128 for the shifted dynamic values, the
  // calibrated one for static inputs; subtracted through the row sums.
  int32_t zero = mode == 3 ? int32_t(inputZeroPoint) : 128;
  if (mode == 3)
    quantizeStatic(*x, inputScale, zero, s);
  else
    quantizeInput(*x, mode == 1, s);
  s.comp.resize(n);
  for (int64_t r = 0; r < n; ++r)
    s.comp[r] = zero * int8::rowSum(w + r * weightRowBytes, k);
  s.acc.resize(m * n);
  gemmU8S8(m, n, k, s.a.data(), w, weightRowBytes, s.acc.data());
  for (int64_t i = 0; i < m; ++i)
    int8::epilogueRow(s.acc.data() + i * n, s.comp.data(), s.rowScale[i], ws, b, n,
                      out + i * y->strides[0]);
}

} // extern "C"

namespace kiln::rt {

std::vector<std::pair<const char *, void *>> int8GemmSymbols() {
  return {
      {"_mlir_ciface_kiln_int8_linear", reinterpret_cast<void *>(&_mlir_ciface_kiln_int8_linear)}};
}

} // namespace kiln::rt

//===- DnnlQConv.cpp - static int8 convolutions by oneDNN ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements the `_mlir_ciface_kiln_dnnl_qconv2d_u8s8*` calls (DnnlConv.h)
// kiln-cpu-convs-to-dnnl makes for a statically quantized kiln.conv2d:
//   1. an f32 input is quantized to a channels-last u8 buffer as torch's
//      quantize_per_tensor (x * f32(1 / scale), round half even, + zero
//      point, clamp to [0, 255]; Int8Simd.h's row loop); a u8 input (the
//      `_xu8` variants: the u8 output of the previous convolution) is read
//      as it is, with its strides;
//   2. oneDNN's u8 x s8 → s32 convolution with the input zero point as a
//      source zero point (padding stays a real zero), per-output-channel
//      output scales xScale * scale[f], the shift as oneDNN's bias
//      (shift / scale, added before the scales: 2-3x faster than a
//      per-channel binary add post-op in oneDNN 2.6's AMX 1x1 kernel; the
//      binary post-op when a scale is 0) and the ReLU/SiLU post-op, writing
//      f32 — or (the `_yu8`
//      variants) requantized to the consumer's u8 input: a linear post-op
//      after the activation, v * f32(1 / yScale) + yZero, then oneDNN's u8
//      conversion (round half even, saturate);
//   3. (the `_ru8` / `_rf32` variants) a residual r of y's shape added
//      before the activation: y = act(conv + shift + r) — a bottleneck's
//      identity. An f32 r is oneDNN's full-tensor binary add post-op; a u8
//      r (quantized with rScale, rZero: the block input as the previous
//      convolution wrote it) is added as it is, the sum computed in units
//      of rScale: output scales and shifts divided by rScale, the zero
//      point subtracted from the shift, and the linear post-op after the
//      ReLU (positively homogeneous; the only activation it takes) scales
//      back by rScale (/ yScale for a u8 y).
// The primitive of a shape and scales is created once per thread: on its
// first run each of oneDNN's other AMX / VNNI implementations is timed on
// that run's operands and the fastest kept, provided it gives the first
// one's values (oneDNN 2.6 puts its AMX 1x1 kernel first; with a residual
// post-op another is up to 2x faster: resnet50 static int8 ~1 ms of 10). The
// int8 weights (i32-held values, made dense s8) are reordered into its layout once
// per weight tensor version when the frontend stamped them (WeightStamps.h), else on
// every call. When oneDNN cannot create or run the primitive of a shape
// (dnnl::error: an unsupported shape or attribute), the convolution runs
// kiln's reference loops (QConvReference.h, same arithmetic) and the reason
// goes to KILN_LOGS=fallbacks (RuntimeLog.h), once per shape and thread.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DnnlCommon.h"
#include "runtime/cpu/DnnlConv.h"
#include "runtime/cpu/Int8Simd.h"
#include "runtime/cpu/ConvReference.h"
#include "runtime/cpu/QConvReference.h"
#include "runtime/cpu/RuntimeLog.h"
#include "runtime/cpu/WeightStamps.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using kiln::rt::StridedMemRef;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

/// x or y of a call: f32 or u8 (the memref descriptors differ only in the
/// pointer type).
struct Operand {
  void *base; ///< the element at the descriptor's offset
  const int64_t *sizes, *strides;
  bool u8;
};

template <typename T> Operand operand(StridedMemRef<T, 4> *m) {
  return {m->data + m->offset, m->sizes, m->strides, sizeof(T) == 1};
}

/// What a call computes besides its shapes: the per-channel output scales
/// and shifts, the input zero point and, for a u8 output, the linear map
/// after the activation: v * f32(1 / yScale) + yZero (torch's
/// quantize_per_tensor before its rounding).
struct QParams {
  std::vector<float> outScales, shifts;
  int32_t xZero = 0, postZero = 0;
  float postScale = 1.0f;
  int64_t residual = 0; ///< 0: none, 1: u8 (in units of its scale), 2: f32
  const Operand *r = nullptr;
  /// Whether the linear post-op runs (a u8 y, or a u8 residual's rescale).
  bool post(const Operand &y) const { return y.u8 || residual == 1; }
};

/// One convolution shape and scale set: its primitive, the reorder of the
/// caller's i32 weights into its s8 layout, and the packed weights.
struct QEntry {
  dnnl::convolution_forward conv;
  dnnl::memory::desc userWeights, srcDesc, dstDesc, shiftDesc, userDst, residualDesc;
  dnnl::reorder pack;
  /// An f32 y that is not channels-last (NCHW before a pooling): oneDNN's
  /// int8 kernels write NHWC (for NCHW it has only ref_int8), then this
  /// reorder copies into y.
  std::optional<dnnl::reorder> toUser;
  dnnl::memory packed;
  /// The shifts divided by the output scales, passed as oneDNN's bias
  /// (added to the accumulator before the scales): a per-channel binary
  /// post-op made oneDNN 2.6's AMX 1x1 kernel 2-3x slower (resnet50's
  /// 64 -> 256 expansions: 1.2 vs 0.35-0.5 ms). Empty when a scale is zero or
  /// a quotient not finite: the shifts then stay a binary post-op.
  std::vector<float> bias;
  dnnl::memory::desc biasDesc;
  uint64_t serial = 0;
  int64_t version = -1;
  const void *data = nullptr;
  bool reference = false; ///< oneDNN refused: kiln's own loops (QConvReference.h)
  /// oneDNN's other AMX / VNNI implementations of the same convolution (by
  /// name, in its order), timed against the first on the first run and
  /// kept when faster and giving its values: oneDNN 2.6 ranks its AMX 1x1
  /// kernel first even where, with a residual post-op, another is 2x
  /// faster. Emptied once timed.
  std::vector<std::string> alternatives;
  std::optional<dnnl::convolution_forward::desc> desc;
  dnnl::primitive_attr attr;
};

std::atomic<bool> refuse{false}, pickLast{false};
std::atomic<int64_t> referenceCalls{0}, u8Outputs{0}, alternativesPicked{0};
const char *const referenceNote =
    "; this convolution runs kiln's reference int8 loops (correct, slow)";

/// "oneDNN int8 convolution [N,C,H,W] x [F,C/G,KH,KW] stride .. groups ..".
std::string describe(const Operand &x, const StridedMemRef<int32_t, 4> *w, const int64_t *p) {
  std::string s = "oneDNN int8 convolution [";
  for (int64_t i = 0; i < 4; ++i)
    s += std::to_string(x.sizes[i]) + (i < 3 ? "," : "] x [");
  for (int64_t i = 0; i < 4; ++i)
    s += std::to_string(w->sizes[i]) + (i < 3 ? "," : "]");
  s += " stride " + std::to_string(p[0]) + "x" + std::to_string(p[1]) + " dilation " +
       std::to_string(p[2]) + "x" + std::to_string(p[3]) + " groups " + std::to_string(p[8]);
  return s;
}

/// The dense s8 weights [F, C/G, KH, KW] as oneDNN's (grouped) desc.
dnnl::memory::desc weightsDesc(const StridedMemRef<int32_t, 4> *w, int64_t groups) {
  const int64_t *n = w->sizes;
  if (groups == 1)
    return dnnl::memory::desc({n[0], n[1], n[2], n[3]}, dt::s8, tag::abcd);
  return dnnl::memory::desc({groups, n[0] / groups, n[1], n[2], n[3]}, dt::s8, tag::abcde);
}

/// The i32-held int8 values of w, dense (oneDNN 2.6 has no s32 → packed
/// s8 reorder).
std::vector<int8_t> denseInt8(const StridedMemRef<int32_t, 4> *w) {
  const int64_t *n = w->sizes, *st = w->strides;
  std::vector<int8_t> out(n[0] * n[1] * n[2] * n[3]);
  const int32_t *data = w->data + w->offset;
  int8_t *o = out.data();
  if (st[3] == 1 && st[2] == n[3] && st[1] == n[2] * n[3] && st[0] == n[1] * n[2] * n[3]) {
    // Dense (the usual case): one flat loop the compiler vectorizes.
    for (size_t k = 0; k < out.size(); ++k)
      o[k] = int8_t(data[k]);
    return out;
  }
  for (int64_t f = 0; f < n[0]; ++f)
    for (int64_t c = 0; c < n[1]; ++c)
      for (int64_t i = 0; i < n[2]; ++i)
        for (int64_t j = 0; j < n[3]; ++j)
          *o++ = int8_t(data[f * st[0] + c * st[1] + i * st[2] + j * st[3]]);
  return out;
}

dnnl::memory::dims dims(const Operand &m) {
  return {m.sizes[0], m.sizes[1], m.sizes[2], m.sizes[3]};
}

dnnl::memory::dims stridesOf(const Operand &m) {
  return {m.strides[0], m.strides[1], m.strides[2], m.strides[3]};
}

dnnl::post_ops postOps(const QEntry &e, const int64_t *p, const QParams &q, bool post) {
  dnnl::post_ops ops;
  if (e.bias.empty())
    ops.append_binary(dnnl::algorithm::binary_add, e.shiftDesc);
  if (q.residual)
    ops.append_binary(dnnl::algorithm::binary_add, e.residualDesc);
  if (p[9] == 1)
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  else if (p[9] == 2)
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
  if (post)
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, q.postScale, float(q.postZero));
  return ops;
}

/// shift / scale per channel (oneDNN's bias, added before the output
/// scales), or empty when a quotient would not be finite.
std::vector<float> shiftsOverScales(const QParams &q) {
  std::vector<float> bias(q.shifts.size());
  for (size_t c = 0; c < bias.size(); ++c) {
    float scale = q.outScales[q.outScales.size() == 1 ? 0 : c];
    bias[c] = q.shifts[c] / scale;
    if (scale == 0.0f || !std::isfinite(bias[c]))
      return {};
  }
  return bias;
}

std::unique_ptr<QEntry> create(const Operand &x, const StridedMemRef<int32_t, 4> *w,
                               const Operand &y, const int64_t *p, const QParams &q) {
  auto e = std::make_unique<QEntry>();
  dnnl::engine &eng = kiln::rt::dnnlEngine();
  e->userWeights = weightsDesc(w, p[8]);
  e->srcDesc = x.u8 ? dnnl::memory::desc(dims(x), dt::u8, stridesOf(x))
                    : dnnl::memory::desc(dims(x), dt::u8, tag::nhwc);
  dnnl::memory::desc any(e->userWeights.dims(), dt::s8, tag::any);
  e->userDst = dnnl::memory::desc(dims(y), y.u8 ? dt::u8 : dt::f32, stridesOf(y));
  bool channelsLast = y.strides[1] == 1 || y.sizes[1] == 1;
  e->dstDesc =
      channelsLast ? e->userDst : dnnl::memory::desc(dims(y), y.u8 ? dt::u8 : dt::f32, tag::nhwc);
  e->shiftDesc = dnnl::memory::desc({1, y.sizes[1], 1, 1}, dt::f32, tag::abcd);
  e->bias = shiftsOverScales(q);
  if (!e->bias.empty())
    e->biasDesc = dnnl::memory::desc({y.sizes[1]}, dt::f32, tag::a);
  if (q.residual)
    e->residualDesc =
        dnnl::memory::desc(dims(*q.r), q.residual == 1 ? dt::u8 : dt::f32, stridesOf(*q.r));
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, e->srcDesc, any,
      e->biasDesc, e->dstDesc, {p[0], p[1]}, {p[2] - 1, p[3] - 1}, {p[4], p[6]}, {p[5], p[7]});
  dnnl::primitive_attr attr;
  attr.set_output_scales(q.outScales.size() == 1 ? 0 : 2, q.outScales);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {q.xZero});
  attr.set_post_ops(postOps(*e, p, q, q.post(y)));
  dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
  e->conv = dnnl::convolution_forward(pd);
  e->desc = desc;
  e->attr = attr;
  for (dnnl::convolution_forward::primitive_desc it(desc, attr, eng); it.next_impl();) {
    std::string name = it.impl_info_str();
    if (name.find("amx") != std::string::npos || name.find("avx512_core_vnni") != std::string::npos)
      e->alternatives.push_back(name);
  }
  e->pack =
      dnnl::reorder(dnnl::reorder::primitive_desc(eng, e->userWeights, eng, pd.weights_desc()));
  if (!channelsLast)
    e->toUser = dnnl::reorder(dnnl::reorder::primitive_desc(eng, e->dstDesc, eng, e->userDst));
  std::string impl = pd.impl_info_str();
  if (impl.rfind("ref", 0) == 0)
    kiln::rt::logFallback(describe(x, w, p) + ": oneDNN has only its reference kernel (" + impl +
                          ") for it (correct, slow)");
  e->packed = dnnl::memory(pd.weights_desc(), eng);
  return e;
}

/// x (logical NCHW, any strides; f32 or u8) as dense NHWC u8 in `out`: f32
/// quantized as torch's quantize_per_tensor, u8 copied.
void quantizeNhwc(const Operand &x, float scale, int32_t zero, std::vector<uint8_t> &out,
                  std::vector<float> &row) {
  const int64_t *n = x.sizes, *s = x.strides;
  out.resize(n[0] * n[1] * n[2] * n[3]);
  float inv = float(1.0 / double(scale));
  uint8_t *o = out.data();
  row.resize(n[1]);
  for (int64_t b = 0; b < n[0]; ++b)
    for (int64_t h = 0; h < n[2]; ++h)
      for (int64_t w = 0; w < n[3]; ++w, o += n[1]) {
        int64_t at = b * s[0] + h * s[2] + w * s[3];
        if (x.u8) {
          for (int64_t c = 0; c < n[1]; ++c)
            o[c] = static_cast<const uint8_t *>(x.base)[at + c * s[1]];
          continue;
        }
        const float *p = static_cast<const float *>(x.base) + at;
        if (s[1] != 1)
          for (int64_t c = 0; c < n[1]; ++c)
            row[c] = p[c * s[1]];
        kiln::rt::int8::quantizeRowAffine(s[1] == 1 ? p : row.data(), n[1], inv, zero, o);
      }
}

/// Packs the weights into `e` unless they are the stamped version packed last.
void packWeights(QEntry &e, const StridedMemRef<int32_t, 4> *w, dnnl::stream &stream) {
  const int32_t *data = w->data + w->offset;
  const KilnInputStamp *stamp = kilnFindInputStamp(w->data);
  if (stamp && stamp->serial == e.serial && stamp->version == e.version && data == e.data)
    return;
  std::vector<int8_t> dense = denseInt8(w);
  dnnl::memory user(e.userWeights, kiln::rt::dnnlEngine(), dense.data());
  e.pack.execute(stream, user, e.packed);
  stream.wait();
  e.serial = stamp ? stamp->serial : 0;
  e.version = stamp ? stamp->version : -1;
  e.data = stamp ? data : nullptr;
}

/// The entry of (x, w, y, params, qparams): created on first use; a shape
/// oneDNN refuses gets a reference entry (kiln's own loops) and one
/// fallbacks log line instead of an abort.
QEntry &lookup(const Operand &x, const StridedMemRef<int32_t, 4> *w, const Operand &y,
               const int64_t *params, const QParams &q) {
  std::vector<int64_t> key(params, params + 10);
  int32_t postBits;
  std::memcpy(&postBits, &q.postScale, sizeof postBits);
  key.insert(key.end(), {q.xZero, q.postZero, postBits, x.u8, y.u8, q.residual});
  if (q.r)
    key.insert(key.end(), q.r->strides, q.r->strides + 4);
  for (int64_t i = 0; i < 4; ++i)
    key.insert(key.end(), {x.sizes[i], x.u8 ? x.strides[i] : 0, w->sizes[i], w->strides[i],
                           y.sizes[i], y.strides[i]});
  for (const std::vector<float> *v : {&q.outScales, &q.shifts})
    for (float f : *v) {
      int32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      key.push_back(bits);
    }
  key.push_back(kiln::rt::dnnlApplyThreads());
  thread_local std::map<std::vector<int64_t>, std::unique_ptr<QEntry>> cache;
  std::unique_ptr<QEntry> &entry = cache[key];
  if (entry)
    return *entry;
  try {
    if (refuse.load(std::memory_order_relaxed))
      throw dnnl::error(dnnl_unimplemented, "refused by kilnDnnlQConvRefuse (test hook)");
    entry = create(x, w, y, params, q);
  } catch (const std::exception &e) {
    entry = std::make_unique<QEntry>();
    entry->reference = true;
    kiln::rt::logFallback(describe(x, w, params) + " failed: " + e.what() + referenceNote);
  }
  return *entry;
}

/// Seconds one run of `conv` on `args` takes (the second of two runs).
double timeRun(dnnl::convolution_forward &conv, std::unordered_map<int, dnnl::memory> &args,
               dnnl::stream &stream) {
  double seconds = 0;
  for (int i = 0; i < 2; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    conv.execute(stream, args);
    stream.wait();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return seconds;
}

/// Whether two results of one convolution agree: u8 values within 1, f32
/// values within 1e-5 of the largest magnitude (implementations may round
/// or sum in another order).
bool sameValues(const void *a, const void *b, size_t bytes, bool u8) {
  if (u8) {
    auto *x = static_cast<const uint8_t *>(a), *y = static_cast<const uint8_t *>(b);
    for (size_t i = 0; i < bytes; ++i)
      if (std::abs(int(x[i]) - int(y[i])) > 1)
        return false;
    return true;
  }
  auto *x = static_cast<const float *>(a), *y = static_cast<const float *>(b);
  size_t n = bytes / sizeof(float);
  float largest = 0.0f;
  for (size_t i = 0; i < n; ++i)
    largest = std::max(largest, std::abs(x[i]));
  for (size_t i = 0; i < n; ++i)
    if (!(std::abs(x[i] - y[i]) <= 1e-5f * largest))
      return false;
  return true;
}

/// Times `e`'s alternatives on this first run's operands (the runs only
/// write the destination) and keeps the fastest primitive, its weight
/// layout and packed weights (the last one under the kilnDnnlQConvPickLast
/// test hook).
void pickFastest(QEntry &e, const StridedMemRef<int32_t, 4> *w,
                 std::unordered_map<int, dnnl::memory> &args, dnnl::stream &stream) {
  dnnl::engine &eng = kiln::rt::dnnlEngine();
  double best = timeRun(e.conv, args, stream);
  bool switched = false;
  dnnl::memory &dst = args[DNNL_ARG_DST];
  size_t bytes = e.dstDesc.get_size();
  std::vector<char> expected(bytes);
  std::memcpy(expected.data(), dst.get_data_handle(), bytes);
  std::vector<int8_t> dense = denseInt8(w);
  dnnl::memory user(e.userWeights, eng, dense.data());
  for (const std::string &name : e.alternatives) {
    try {
      dnnl::convolution_forward::primitive_desc pd(*e.desc, e.attr, eng);
      while (pd.impl_info_str() != name && pd.next_impl()) {
      }
      if (pd.impl_info_str() != name)
        continue;
      dnnl::convolution_forward conv(pd);
      dnnl::reorder pack(dnnl::reorder::primitive_desc(eng, e.userWeights, eng, pd.weights_desc()));
      dnnl::memory packed(pd.weights_desc(), eng);
      pack.execute(stream, user, packed);
      args[DNNL_ARG_WEIGHTS] = packed;
      double seconds = timeRun(conv, args, stream);
      // A safety net, not a known bug: an alternative is kept only when it
      // gives the first implementation's values on this run.
      if (!sameValues(expected.data(), dst.get_data_handle(), bytes,
                      e.dstDesc.data_type() == dt::u8))
        continue;
      if (seconds < best || pickLast.load(std::memory_order_relaxed)) {
        switched = true;
        best = seconds;
        e.conv = conv;
        e.pack = pack;
        e.packed = packed;
      }
    } catch (const dnnl::error &) { // this alternative only: the first one stays usable
      continue;
    }
  }
  args[DNNL_ARG_WEIGHTS] = e.packed;
  if (switched)
    alternativesPicked.fetch_add(1, std::memory_order_relaxed);
  e.alternatives.clear();
}

/// Runs oneDNN's primitive of `e` on `src` (the u8 input); false (and a log
/// line) when oneDNN fails at run time.
bool runDnnl(QEntry &e, const Operand &x, const StridedMemRef<int32_t, 4> *w, const Operand &y,
             const int64_t *params, QParams &q, const void *src) {
  try {
    kiln::rt::dnnlApplyThreads();
    thread_local dnnl::stream stream(kiln::rt::dnnlEngine());
    packWeights(e, w, stream);
    dnnl::engine &eng = kiln::rt::dnnlEngine();
    dnnl::memory srcMem(e.srcDesc, eng, const_cast<void *>(src));
    thread_local std::vector<char> staged;
    if (e.toUser)
      staged.resize(e.dstDesc.get_size());
    dnnl::memory dst(e.dstDesc, eng, e.toUser ? staged.data() : y.base);
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, srcMem}, {DNNL_ARG_WEIGHTS, e.packed}, {DNNL_ARG_DST, dst}};
    int postOp = 0;
    if (e.bias.empty())
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(postOp++) | DNNL_ARG_SRC_1] =
          dnnl::memory(e.shiftDesc, eng, q.shifts.data());
    else
      args[DNNL_ARG_BIAS] = dnnl::memory(e.biasDesc, eng, e.bias.data());
    if (q.residual)
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(postOp) | DNNL_ARG_SRC_1] =
          dnnl::memory(e.residualDesc, eng, q.r->base);
    if (!e.alternatives.empty())
      pickFastest(e, w, args, stream);
    e.conv.execute(stream, args);
    if (e.toUser) {
      dnnl::memory user(e.userDst, eng, y.base);
      e.toUser->execute(stream, dst, user);
    }
    stream.wait();
    return true;
  } catch (const std::exception &err) {
    e.reference = true;
    kiln::rt::logFallback(describe(x, w, params) + " failed: " + err.what() + referenceNote);
    return false;
  }
}

/// Element (a, b, c, d) of the f32 or u8 operand `m` as a float.
float at(const Operand &m, int64_t a, int64_t b, int64_t c, int64_t d) {
  const int64_t *s = m.strides;
  int64_t i = a * s[0] + b * s[1] + c * s[2] + d * s[3];
  return m.u8 ? float(static_cast<const uint8_t *>(m.base)[i])
              : static_cast<const float *>(m.base)[i];
}

/// kiln's reference loops on the dense NHWC u8 input: the scaled, shifted
/// sums, then (in oneDNN's order) the residual, the activation, the linear
/// post-op and, for a u8 y, the rounding half to even and saturation.
void runReference(const std::vector<uint8_t> &dense, const Operand &x,
                  const StridedMemRef<int32_t, 4> *w, const Operand &y, const int64_t *params,
                  const QParams &q) {
  referenceCalls.fetch_add(1, std::memory_order_relaxed);
  std::vector<int8_t> weights = denseInt8(w);
  const int64_t *n = y.sizes;
  std::vector<float> out(n[0] * n[1] * n[2] * n[3]);
  StridedMemRef<float, 4> f{out.data(),
                            out.data(),
                            0,
                            {n[0], n[1], n[2], n[3]},
                            {n[1] * n[2] * n[3], n[2] * n[3], n[3], 1}};
  int64_t linear[10];
  std::memcpy(linear, params, sizeof linear);
  linear[9] = 0; // the activation after the residual, below
  kiln::rt::qconv2dReference(dense.data(), x.sizes, q.xZero, weights.data(), w->sizes, &f, linear,
                             q.outScales.data(), q.shifts.data());
  size_t i = 0;
  const int64_t *s = y.strides;
  for (int64_t a = 0; a < n[0]; ++a)
    for (int64_t b = 0; b < n[1]; ++b)
      for (int64_t c = 0; c < n[2]; ++c)
        for (int64_t d = 0; d < n[3]; ++d) {
          float v = out[i++] + (q.residual ? at(*q.r, a, b, c, d) : 0.0f);
          v = kiln::rt::convActivation(v, params[9]);
          if (q.post(y))
            v = v * q.postScale + float(q.postZero);
          int64_t o = a * s[0] + b * s[1] + c * s[2] + d * s[3];
          if (!y.u8) {
            static_cast<float *>(y.base)[o] = v;
            continue;
          }
          v = std::nearbyint(v);
          static_cast<uint8_t *>(y.base)[o] = uint8_t(v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v));
        }
}

/// The call: x (f32 or u8), w, y (f32 or u8: requantized with yScale and
/// yZero) and the shim's other operands.
/// The residual r (null: none) and its quantization (a u8 r: scale, zero point).
struct Residual {
  const Operand *r = nullptr;
  float scale = 1.0f;
  int64_t zero = 0;
};

void qconv(const Operand &x, const StridedMemRef<int32_t, 4> *w, const Operand &y,
           const StridedMemRef<float, 1> *scale, const StridedMemRef<float, 1> *shift,
           const int64_t *params, float xScale, int64_t xZero, float yScale, int64_t yZero,
           Residual res = {}) {
  int64_t f = y.sizes[1];
  QParams q;
  q.xZero = int32_t(xZero);
  q.outScales.resize(f);
  q.shifts.resize(f);
  q.r = res.r;
  q.residual = !res.r ? 0 : (res.r->u8 ? 1 : 2);
  // A u8 residual: the sum in units of its scale (the file comment).
  float unit = q.residual == 1 ? res.scale : 1.0f;
  float bias = q.residual == 1 ? float(res.zero) : 0.0f;
  q.postScale = y.u8 ? float(double(unit) / double(yScale)) : unit;
  q.postZero = y.u8 ? int32_t(yZero) : 0;
  for (int64_t i = 0; i < f; ++i) {
    q.outScales[i] = xScale * scale->data[scale->offset + i * scale->strides[0]] / unit;
    q.shifts[i] = shift->data[shift->offset + i * shift->strides[0]] / unit - bias;
  }
  QEntry &entry = lookup(x, w, y, params, q);
  thread_local std::vector<uint8_t> quantized;
  thread_local std::vector<float> row;
  const void *src = x.base;
  if (!x.u8 || entry.reference) {
    quantizeNhwc(x, xScale, q.xZero, quantized, row);
    src = quantized.data();
  }
  if (y.u8)
    u8Outputs.fetch_add(1, std::memory_order_relaxed);
  if (!entry.reference && runDnnl(entry, x, w, y, params, q, src))
    return;
  if (x.u8 && src == x.base)
    quantizeNhwc(x, xScale, q.xZero, quantized, row);
  runReference(quantized, x, w, y, params, q);
}

} // namespace

extern "C" void _mlir_ciface_kiln_dnnl_qconv2d_u8s8(
    StridedMemRef<float, 4> *x, StridedMemRef<int32_t, 4> *w, StridedMemRef<float, 4> *y,
    StridedMemRef<float, 1> *scale, StridedMemRef<float, 1> *shift, int64_t strideH,
    int64_t strideW, int64_t dilationH, int64_t dilationW, int64_t padTop, int64_t padBottom,
    int64_t padLeft, int64_t padRight, int64_t groups, int64_t activation, float xScale,
    int64_t xZero) {
  const int64_t params[10] = {strideH,   strideW, dilationH, dilationW, padTop,
                              padBottom, padLeft, padRight,  groups,    activation};
  qconv(operand(x), w, operand(y), scale, shift, params, xScale, xZero, 1.0f, 0);
}

extern "C" void _mlir_ciface_kiln_dnnl_qconv2d_u8s8_xu8(
    StridedMemRef<uint8_t, 4> *x, StridedMemRef<int32_t, 4> *w, StridedMemRef<float, 4> *y,
    StridedMemRef<float, 1> *scale, StridedMemRef<float, 1> *shift, int64_t strideH,
    int64_t strideW, int64_t dilationH, int64_t dilationW, int64_t padTop, int64_t padBottom,
    int64_t padLeft, int64_t padRight, int64_t groups, int64_t activation, float xScale,
    int64_t xZero) {
  const int64_t params[10] = {strideH,   strideW, dilationH, dilationW, padTop,
                              padBottom, padLeft, padRight,  groups,    activation};
  qconv(operand(x), w, operand(y), scale, shift, params, xScale, xZero, 1.0f, 0);
}

extern "C" void _mlir_ciface_kiln_dnnl_qconv2d_u8s8_yu8(
    StridedMemRef<float, 4> *x, StridedMemRef<int32_t, 4> *w, StridedMemRef<uint8_t, 4> *y,
    StridedMemRef<float, 1> *scale, StridedMemRef<float, 1> *shift, int64_t strideH,
    int64_t strideW, int64_t dilationH, int64_t dilationW, int64_t padTop, int64_t padBottom,
    int64_t padLeft, int64_t padRight, int64_t groups, int64_t activation, float xScale,
    int64_t xZero, float yScale, int64_t yZero) {
  const int64_t params[10] = {strideH,   strideW, dilationH, dilationW, padTop,
                              padBottom, padLeft, padRight,  groups,    activation};
  qconv(operand(x), w, operand(y), scale, shift, params, xScale, xZero, yScale, yZero);
}

extern "C" void _mlir_ciface_kiln_dnnl_qconv2d_u8s8_xu8_yu8(
    StridedMemRef<uint8_t, 4> *x, StridedMemRef<int32_t, 4> *w, StridedMemRef<uint8_t, 4> *y,
    StridedMemRef<float, 1> *scale, StridedMemRef<float, 1> *shift, int64_t strideH,
    int64_t strideW, int64_t dilationH, int64_t dilationW, int64_t padTop, int64_t padBottom,
    int64_t padLeft, int64_t padRight, int64_t groups, int64_t activation, float xScale,
    int64_t xZero, float yScale, int64_t yZero) {
  const int64_t params[10] = {strideH,   strideW, dilationH, dilationW, padTop,
                              padBottom, padLeft, padRight,  groups,    activation};
  qconv(operand(x), w, operand(y), scale, shift, params, xScale, xZero, yScale, yZero);
}

// The residual variants: x, y as above; r (u8 or f32, y's shape), its
// scale and zero point (ignored for f32) after the other operands.
#define KILN_QCONV_RESIDUAL(NAME, XT, YT, RT)                                                      \
  extern "C" void _mlir_ciface_kiln_dnnl_qconv2d_u8s8##NAME(                                       \
      StridedMemRef<XT, 4> *x, StridedMemRef<int32_t, 4> *w, StridedMemRef<YT, 4> *y,              \
      StridedMemRef<float, 1> *scale, StridedMemRef<float, 1> *shift, int64_t strideH,             \
      int64_t strideW, int64_t dilationH, int64_t dilationW, int64_t padTop, int64_t padBottom,    \
      int64_t padLeft, int64_t padRight, int64_t groups, int64_t activation, float xScale,         \
      int64_t xZero, float yScale, int64_t yZero, StridedMemRef<RT, 4> *r, float rScale,           \
      int64_t rZero) {                                                                             \
    const int64_t params[10] = {strideH,   strideW, dilationH, dilationW, padTop,                  \
                                padBottom, padLeft, padRight,  groups,    activation};             \
    Operand res = operand(r);                                                                      \
    qconv(operand(x), w, operand(y), scale, shift, params, xScale, xZero, yScale, yZero,           \
          {&res, rScale, rZero});                                                                  \
  }
KILN_QCONV_RESIDUAL(_ru8, float, float, uint8_t)
KILN_QCONV_RESIDUAL(_xu8_ru8, uint8_t, float, uint8_t)
KILN_QCONV_RESIDUAL(_yu8_ru8, float, uint8_t, uint8_t)
KILN_QCONV_RESIDUAL(_xu8_yu8_ru8, uint8_t, uint8_t, uint8_t)
KILN_QCONV_RESIDUAL(_rf32, float, float, float)
KILN_QCONV_RESIDUAL(_xu8_rf32, uint8_t, float, float)
KILN_QCONV_RESIDUAL(_yu8_rf32, float, uint8_t, float)
KILN_QCONV_RESIDUAL(_xu8_yu8_rf32, uint8_t, uint8_t, float)
#undef KILN_QCONV_RESIDUAL

namespace kiln::rt {

std::vector<std::pair<const char *, void *>> qconvResidualShimSymbols() {
#define KILN_SYMBOL(NAME)                                                                          \
  {"_mlir_ciface_kiln_dnnl_qconv2d_u8s8" #NAME,                                                    \
   reinterpret_cast<void *>(&_mlir_ciface_kiln_dnnl_qconv2d_u8s8##NAME)}
  return {KILN_SYMBOL(_ru8),         KILN_SYMBOL(_xu8_ru8),     KILN_SYMBOL(_yu8_ru8),
          KILN_SYMBOL(_xu8_yu8_ru8), KILN_SYMBOL(_rf32),        KILN_SYMBOL(_xu8_rf32),
          KILN_SYMBOL(_yu8_rf32),    KILN_SYMBOL(_xu8_yu8_rf32)};
#undef KILN_SYMBOL
}

} // namespace kiln::rt

extern "C" void kilnDnnlQConvRefuse(int64_t on) { refuse.store(on != 0); }

extern "C" int64_t kilnDnnlQConvReferenceCalls() { return referenceCalls.load(); }

extern "C" void kilnDnnlQConvPickLast(int64_t on) { pickLast.store(on != 0); }

extern "C" int64_t kilnDnnlQConvAlternativesPicked() { return alternativesPicked.load(); }

extern "C" int64_t kilnDnnlQConvU8Outputs() { return u8Outputs.load(); }

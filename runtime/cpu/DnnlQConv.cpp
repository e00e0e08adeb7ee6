//===- DnnlQConv.cpp - static int8 convolutions by oneDNN ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `_mlir_ciface_kiln_dnnl_qconv2d_u8s8` (DnnlConv.h), the call
// kiln-cpu-convs-to-dnnl makes for a statically quantized kiln.conv2d:
//   1. the f32 input is quantized to a channels-last u8 buffer as torch's
//      quantize_per_tensor (x * f32(1 / scale), round half even, + zero
//      point, clamp to [0, 255]; Int8Simd.h's row loop);
//   2. oneDNN's u8 x s8 → s32 convolution with the input zero point as a
//      source zero point (padding stays a real zero), per-output-channel
//      output scales xScale * scale[f], the shift as a per-channel binary
//      add post-op and the ReLU/SiLU post-op, writing f32.
// The primitive of a shape and scales is created once per thread; the int8
// weights (i32-held values, made dense s8) are reordered into its layout once
// per weight tensor version when the frontend stamped them (WeightStamps.h), else on
// every call. When oneDNN cannot create or run the primitive of a shape
// (dnnl::error: an unsupported shape or attribute), the convolution runs
// kiln's reference loops (QConvReference.h, same arithmetic) and the reason
// goes to KILN_LOGS=fallbacks (RuntimeLog.h), once per shape and thread.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DnnlCommon.h"
#include "runtime/cpu/DnnlConv.h"
#include "runtime/cpu/Int8Simd.h"
#include "runtime/cpu/QConvReference.h"
#include "runtime/cpu/RuntimeLog.h"
#include "runtime/cpu/WeightStamps.h"

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using kiln::rt::StridedMemRef;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

/// One convolution shape and scale set: its primitive, the reorder of the
/// caller's i32 weights into its s8 layout, and the packed weights.
struct QEntry {
  dnnl::convolution_forward conv;
  dnnl::memory::desc userWeights, srcDesc, dstDesc, shiftDesc;
  dnnl::reorder pack;
  dnnl::memory packed;
  uint64_t serial = 0;
  int64_t version = -1;
  const void *data = nullptr;
  bool reference = false; ///< oneDNN refused: kiln's own loops (QConvReference.h)
};

std::atomic<bool> refuse{false};
std::atomic<int64_t> referenceCalls{0};
const char *const referenceNote =
    "; this convolution runs kiln's reference int8 loops (correct, slow)";

/// "oneDNN int8 convolution [N,C,H,W] x [F,C/G,KH,KW] stride .. groups ..".
std::string describe(const StridedMemRef<float, 4> *x, const StridedMemRef<int32_t, 4> *w,
                     const int64_t *p) {
  std::string s = "oneDNN int8 convolution [";
  for (int64_t i = 0; i < 4; ++i)
    s += std::to_string(x->sizes[i]) + (i < 3 ? "," : "] x [");
  for (int64_t i = 0; i < 4; ++i)
    s += std::to_string(w->sizes[i]) + (i < 3 ? "," : "]");
  s += " stride " + std::to_string(p[0]) + "x" + std::to_string(p[1]) + " dilation " +
       std::to_string(p[2]) + "x" + std::to_string(p[3]) + " groups " + std::to_string(p[8]);
  return s + " failed";
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
  for (int64_t f = 0; f < n[0]; ++f)
    for (int64_t c = 0; c < n[1]; ++c)
      for (int64_t i = 0; i < n[2]; ++i)
        for (int64_t j = 0; j < n[3]; ++j)
          *o++ = int8_t(data[f * st[0] + c * st[1] + i * st[2] + j * st[3]]);
  return out;
}

std::unique_ptr<QEntry> create(const StridedMemRef<float, 4> *x, const StridedMemRef<int32_t, 4> *w,
                               const StridedMemRef<float, 4> *y, const int64_t *p,
                               const std::vector<float> &outScales, int32_t zero) {
  auto e = std::make_unique<QEntry>();
  dnnl::engine &eng = kiln::rt::dnnlEngine();
  e->userWeights = weightsDesc(w, p[8]);
  e->srcDesc =
      dnnl::memory::desc({x->sizes[0], x->sizes[1], x->sizes[2], x->sizes[3]}, dt::u8, tag::nhwc);
  dnnl::memory::desc any(e->userWeights.dims(), dt::s8, tag::any);
  e->dstDesc = dnnl::memory::desc({y->sizes[0], y->sizes[1], y->sizes[2], y->sizes[3]}, dt::f32,
                                  {y->strides[0], y->strides[1], y->strides[2], y->strides[3]});
  e->shiftDesc = dnnl::memory::desc({1, y->sizes[1], 1, 1}, dt::f32, tag::abcd);
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, e->srcDesc, any,
      e->dstDesc, {p[0], p[1]}, {p[2] - 1, p[3] - 1}, {p[4], p[6]}, {p[5], p[7]});
  dnnl::primitive_attr attr;
  attr.set_output_scales(outScales.size() == 1 ? 0 : 2, outScales);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {zero});
  dnnl::post_ops ops;
  ops.append_binary(dnnl::algorithm::binary_add, e->shiftDesc);
  if (p[9] == 1)
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  else if (p[9] == 2)
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
  attr.set_post_ops(ops);
  dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
  e->conv = dnnl::convolution_forward(pd);
  e->pack =
      dnnl::reorder(dnnl::reorder::primitive_desc(eng, e->userWeights, eng, pd.weights_desc()));
  e->packed = dnnl::memory(pd.weights_desc(), eng);
  return e;
}

/// Quantizes x (logical NCHW, any strides) into `out`, dense NHWC u8.
void quantizeNhwc(const StridedMemRef<float, 4> *x, float scale, int32_t zero,
                  std::vector<uint8_t> &out, std::vector<float> &row) {
  const int64_t *n = x->sizes, *s = x->strides;
  out.resize(n[0] * n[1] * n[2] * n[3]);
  float inv = float(1.0 / double(scale));
  uint8_t *o = out.data();
  row.resize(n[1]);
  for (int64_t b = 0; b < n[0]; ++b)
    for (int64_t h = 0; h < n[2]; ++h)
      for (int64_t w = 0; w < n[3]; ++w, o += n[1]) {
        const float *p = x->data + x->offset + b * s[0] + h * s[2] + w * s[3];
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

/// The entry of (x, w, y, params, zero, scales): created on first use; a
/// shape oneDNN refuses gets a reference entry (kiln's own loops) and one
/// fallbacks log line instead of an abort.
QEntry &lookup(const StridedMemRef<float, 4> *x, const StridedMemRef<int32_t, 4> *w,
               const StridedMemRef<float, 4> *y, const int64_t *params,
               const std::vector<float> &outScales, int64_t xZero) {
  std::vector<int64_t> key(params, params + 10);
  key.push_back(xZero);
  for (int64_t i = 0; i < 4; ++i)
    key.insert(key.end(), {x->sizes[i], w->sizes[i], w->strides[i], y->sizes[i], y->strides[i]});
  for (float v : outScales) {
    int32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    key.push_back(bits);
  }
  thread_local std::map<std::vector<int64_t>, std::unique_ptr<QEntry>> cache;
  std::unique_ptr<QEntry> &entry = cache[key];
  if (entry)
    return *entry;
  try {
    if (refuse.load(std::memory_order_relaxed))
      throw dnnl::error(dnnl_unimplemented, "refused by kilnDnnlQConvRefuse (test hook)");
    entry = create(x, w, y, params, outScales, int32_t(xZero));
  } catch (const std::exception &e) {
    entry = std::make_unique<QEntry>();
    entry->reference = true;
    kiln::rt::logFallback(describe(x, w, params) + ": " + e.what() + referenceNote);
  }
  return *entry;
}

/// Runs oneDNN's primitive of `e` on the quantized input; false (and a log
/// line) when oneDNN fails at run time.
bool runDnnl(QEntry &e, const StridedMemRef<float, 4> *x, const StridedMemRef<int32_t, 4> *w,
             StridedMemRef<float, 4> *y, const int64_t *params, std::vector<float> &shifts,
             std::vector<uint8_t> &quantized) {
  try {
    kiln::rt::dnnlApplyThreads();
    thread_local dnnl::stream stream(kiln::rt::dnnlEngine());
    packWeights(e, w, stream);
    dnnl::engine &eng = kiln::rt::dnnlEngine();
    dnnl::memory src(e.srcDesc, eng, quantized.data());
    dnnl::memory dst(e.dstDesc, eng, y->data + y->offset);
    dnnl::memory shiftMem(e.shiftDesc, eng, shifts.data());
    e.conv.execute(stream, {{DNNL_ARG_SRC, src},
                            {DNNL_ARG_WEIGHTS, e.packed},
                            {DNNL_ARG_DST, dst},
                            {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, shiftMem}});
    stream.wait();
    return true;
  } catch (const std::exception &err) {
    e.reference = true;
    kiln::rt::logFallback(describe(x, w, params) + ": " + err.what() + referenceNote);
    return false;
  }
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
  int64_t f = y->sizes[1];
  std::vector<float> outScales(f), shifts(f);
  for (int64_t i = 0; i < f; ++i) {
    outScales[i] = xScale * scale->data[scale->offset + i * scale->strides[0]];
    shifts[i] = shift->data[shift->offset + i * shift->strides[0]];
  }
  QEntry &entry = lookup(x, w, y, params, outScales, xZero);
  thread_local std::vector<uint8_t> quantized;
  thread_local std::vector<float> row;
  quantizeNhwc(x, xScale, int32_t(xZero), quantized, row);
  if (!entry.reference && runDnnl(entry, x, w, y, params, shifts, quantized))
    return;
  referenceCalls.fetch_add(1, std::memory_order_relaxed);
  std::vector<int8_t> dense = denseInt8(w);
  kiln::rt::qconv2dReference(quantized.data(), x->sizes, int32_t(xZero), dense.data(), w->sizes, y,
                             params, outScales.data(), shifts.data());
}

extern "C" void kilnDnnlQConvRefuse(int64_t on) { refuse.store(on != 0); }

extern "C" int64_t kilnDnnlQConvReferenceCalls() { return referenceCalls.load(); }

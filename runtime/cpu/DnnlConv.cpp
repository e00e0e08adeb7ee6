//===- DnnlConv.cpp - oneDNN convolutions behind kiln's memref convention -===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements DnnlConv.h. A call describes x, w and y to oneDNN with their
// memref sizes and strides (no copy), looks up (or creates) the
// convolution primitive of that exact shape in a per-thread cache, reorders
// the weights into the primitive's blocked layout when it wants one (once
// per weight tensor and version when the frontend stamped the weight as an
// unchanged graph input, WeightStamps.h; on every call otherwise), and
// runs it on the calling thread's OpenMP team with kilnGetNumThreads()
// threads (Debian's libdnnl uses libgomp, the one torch loads: one pool).
// A shape oneDNN refuses (creating or running its primitive throws) runs
// kiln's reference loops (ConvReference.h) after one fallbacks log line:
// slow, never an abort.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DnnlConv.h"
#include "runtime/cpu/DnnlConvBwd.h"
#include "runtime/cpu/ConvReference.h"
#include "runtime/cpu/DnnlCommon.h"
#include "runtime/cpu/PackedWeights.h"
#include "runtime/cpu/RuntimeLog.h"
#include "runtime/cpu/Threads.h"
#include "runtime/cpu/WeightStamps.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>

namespace {

using kiln::rt::StridedMemRef;
using Vec = StridedMemRef<float, 1>;

std::atomic<int64_t> calls{0}, referenceCalls{0};
std::atomic<bool> refuse{false}, winogradOff{false};
std::atomic<int64_t> winogradCalls{0};

/// A primitive's weight layout and the reorders of the caller's weights
/// into it: as they are, times a per-output-channel scale given at run time
/// (BatchNorm folded; one pass), and, where oneDNN has no scaling reorder,
/// from a plain (contiguous) scaled copy.
struct WeightLayout {
  dnnl::memory::desc packedDesc;
  dnnl::reorder fromUser, fromUserScaled, fromPlain;
};

/// The Winograd F(2x2, 3x3) primitive of a shape (3x3, stride 1, no
/// dilation, one group), run only on stamped weights: its weight transform
/// costs more than the convolution (0.45 ms at 64 channels, 8 ms at 256)
/// and is done once per weight version. It takes blocked activations:
/// reorders to and from the caller's layout around it.
struct Winograd {
  dnnl::convolution_forward conv;
  WeightLayout weights;
  dnnl::memory::desc src, dst;
  dnnl::reorder toSrc, fromDst;
};

/// One convolution shape: its direct primitive, and its Winograd one where
/// that pays (kWinogradMinPositions), made on the first call with stamped
/// weights.
struct Entry {
  dnnl::convolution_forward conv;
  dnnl::memory::desc userWeights, plainWeights;
  WeightLayout weights;
  std::unique_ptr<Winograd> winograd;
  bool winogradTried = false;
  bool reference = false; ///< oneDNN refused: kiln's own loops (ConvReference.h)
};

/// Winograd where 3x3 stride-1 outputs have at least this many positions
/// (batch x height x width). One shape in a loop, 1 thread: 56x56x64
/// 0.65-0.78 vs 1.29 ms direct, 28x28x128 0.59-0.70 vs 1.03-1.21, 14x14x256
/// 0.81-0.96 vs 1.00-1.20, 7x7x512 no gain; frozen resnet50 with Winograd
/// from 56x56, 28x28 or 14x14 up (docs/performance.md): 14x14 was fastest.
constexpr int64_t kWinogradMinPositions = 196;

dnnl::engine &engine() { return kiln::rt::dnnlEngine(); }

/// `m`'s sizes and strides as a oneDNN f32 desc.
dnnl::memory::desc describe(const StridedMemRef<float, 4> *m) {
  dnnl::memory::dims dims(m->sizes, m->sizes + 4), strides(m->strides, m->strides + 4);
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

/// The weights [F, C/G, KH, KW] as oneDNN's grouped [G, F/G, C/G, KH, KW].
dnnl::memory::desc describeWeights(const int64_t *sizes, const int64_t *strides, int64_t groups) {
  if (groups == 1)
    return dnnl::memory::desc(dnnl::memory::dims(sizes, sizes + 4), dnnl::memory::data_type::f32,
                              dnnl::memory::dims(strides, strides + 4));
  dnnl::memory::dims dims = {groups, sizes[0] / groups, sizes[1], sizes[2], sizes[3]};
  dnnl::memory::dims st = {strides[0] * (sizes[0] / groups), strides[0], strides[1], strides[2],
                           strides[3]};
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, st);
}

dnnl::post_ops activation(int64_t act) {
  dnnl::post_ops ops;
  if (act == 1)
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  else if (act == 2)
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
  return ops;
}

WeightLayout layoutFor(const Entry &entry, const dnnl::memory::desc &packedDesc, int64_t groups) {
  WeightLayout layout;
  layout.packedDesc = packedDesc;
  layout.fromUser = dnnl::reorder(
      dnnl::reorder::primitive_desc(engine(), entry.userWeights, engine(), packedDesc));
  layout.fromPlain = dnnl::reorder(
      dnnl::reorder::primitive_desc(engine(), entry.plainWeights, engine(), packedDesc));
  try {
    // Output scales over the output-channel dims: [F] or grouped [G, F/G].
    dnnl::primitive_attr scaled;
    scaled.set_output_scales(groups == 1 ? 1 : 3, {DNNL_RUNTIME_F32_VAL});
    layout.fromUserScaled = dnnl::reorder(
        dnnl::reorder::primitive_desc(engine(), entry.userWeights, engine(), packedDesc, scaled));
  } catch (const dnnl::error &) {
    // No scaling reorder for this layout: pack() scales a plain copy.
  }
  return layout;
}

/// The Winograd primitive of a shape where it pays, or null (not 3x3
/// stride 1 without dilation and groups, too few positions, oneDNN has
/// none for this CPU).
std::unique_ptr<Winograd> winogradFor(const Entry &entry, const StridedMemRef<float, 4> *x,
                                      const StridedMemRef<float, 4> *w,
                                      const StridedMemRef<float, 4> *y, const int64_t *p) {
  const int64_t *ws = w->sizes, *ys = y->sizes;
  bool shape = ws[2] == 3 && ws[3] == 3 && p[0] == 1 && p[1] == 1 && p[2] == 1 && p[3] == 1 &&
               p[4] == 1 && p[5] == 1 && p[6] == 1 && p[7] == 1 && p[8] == 1;
  if (!shape || ys[0] * ys[2] * ys[3] < kWinogradMinPositions)
    return nullptr;
  auto f32 = dnnl::memory::data_type::f32;
  auto any = [&](const StridedMemRef<float, 4> *m) {
    return dnnl::memory::desc(dnnl::memory::dims(m->sizes, m->sizes + 4), f32,
                              dnnl::memory::format_tag::any);
  };
  try {
    dnnl::memory::desc bias({ws[0]}, f32, dnnl::memory::format_tag::a);
    dnnl::primitive_attr attr;
    attr.set_post_ops(activation(p[9]));
    dnnl::memory::desc weights(entry.userWeights.dims(), f32, dnnl::memory::format_tag::any);
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_winograd, any(x), weights,
                                         bias, any(y), {1, 1}, {0, 0}, {1, 1}, {1, 1});
    dnnl::convolution_forward::primitive_desc pd(desc, attr, engine());
    auto wino = std::make_unique<Winograd>();
    wino->conv = dnnl::convolution_forward(pd);
    wino->weights = layoutFor(entry, pd.weights_desc(), 1);
    wino->src = pd.src_desc();
    wino->dst = pd.dst_desc();
    wino->toSrc =
        dnnl::reorder(dnnl::reorder::primitive_desc(engine(), describe(x), engine(), wino->src));
    wino->fromDst =
        dnnl::reorder(dnnl::reorder::primitive_desc(engine(), wino->dst, engine(), describe(y)));
    return wino;
  } catch (const dnnl::error &) {
    return nullptr;
  }
}

std::unique_ptr<Entry> create(const StridedMemRef<float, 4> *x, const StridedMemRef<float, 4> *w,
                              const StridedMemRef<float, 4> *y, const int64_t *p) {
  auto user = describeWeights(w->sizes, w->strides, p[8]);
  const int64_t *s = w->sizes;
  const int64_t plainStrides[4] = {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};
  dnnl::memory::desc any(user.dims(), dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
  dnnl::memory::desc bias({s[0]}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, describe(x), any,
      bias, describe(y), {p[0], p[1]}, {p[2] - 1, p[3] - 1}, {p[4], p[6]}, {p[5], p[7]});
  dnnl::primitive_attr attr;
  attr.set_post_ops(activation(p[9]));
  dnnl::convolution_forward::primitive_desc pd(desc, attr, engine());
  auto entry = std::make_unique<Entry>();
  entry->conv = dnnl::convolution_forward(pd);
  entry->userWeights = user;
  entry->plainWeights = describeWeights(s, plainStrides, p[8]);
  entry->weights = layoutFor(*entry, pd.weights_desc(), p[8]);
  return entry;
}

void applyThreads() { kiln::rt::dnnlApplyThreads(); }

/// `v` as a contiguous vector.
std::vector<float> values(const Vec *v) {
  std::vector<float> out(v->sizes[0]);
  for (int64_t i = 0; i < v->sizes[0]; ++i)
    out[i] = v->data[v->offset + i * v->strides[0]];
  return out;
}

/// Reorders w (times scale[f] per output channel f unless all ones) into
/// `packed`.
void pack(const Entry &entry, const WeightLayout &layout, const StridedMemRef<float, 4> *w,
          const std::vector<float> &scale, dnnl::stream &stream, dnnl::memory &packed) {
  const float *data = w->data + w->offset;
  if (std::all_of(scale.begin(), scale.end(), [](float s) { return s == 1.0f; })) {
    dnnl::memory user(entry.userWeights, engine(), const_cast<float *>(data));
    layout.fromUser.execute(stream, user, packed);
    stream.wait();
    return;
  }
  if (layout.fromUserScaled) {
    dnnl::memory user(entry.userWeights, engine(), const_cast<float *>(data));
    dnnl::memory scales(dnnl::memory::desc({int64_t(scale.size())}, dnnl::memory::data_type::f32,
                                           dnnl::memory::format_tag::a),
                        engine(), const_cast<float *>(scale.data()));
    layout.fromUserScaled.execute(
        stream,
        {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, packed}, {DNNL_ARG_ATTR_OUTPUT_SCALES, scales}});
    stream.wait();
    return;
  }
  const int64_t *n = w->sizes, *st = w->strides;
  std::vector<float> plain(n[0] * n[1] * n[2] * n[3]);
  float *out = plain.data();
  for (int64_t f = 0; f < n[0]; ++f)
    for (int64_t c = 0; c < n[1]; ++c)
      for (int64_t i = 0; i < n[2]; ++i)
        for (int64_t j = 0; j < n[3]; ++j)
          *out++ = data[f * st[0] + c * st[1] + i * st[2] + j * st[3]] * scale[f];
  dnnl::memory src(entry.plainWeights, engine(), plain.data());
  layout.fromPlain.execute(stream, src, packed);
  stream.wait();
}

/// Weights packed once per weight tensor: keyed by the frontend's stamp
/// serial of the tensor and the call's shape key, valid while the stamp's
/// version, the data pointer and the scale are the ones packed from.
/// Shared by all threads (a repack replaces the memory; callers hold their
/// own reference while they run).
struct Packed {
  int64_t version = 0;
  const void *data = nullptr;
  std::vector<float> scale;
  std::shared_ptr<dnnl::memory> memory;
  size_t bytes = 0;
};

std::mutex packedMutex;
kiln::rt::PackedCache<Packed> packedCache;
std::atomic<int64_t> packedBytes{0}, packs{0};

/// A growing buffer of the calling thread (thread_local instances): one
/// per use, not one per shape, so that a model's shapes share it.
class ScratchBuffer {
public:
  /// At least `bytes` long, 64-byte aligned; valid until the next get().
  void *get(size_t bytes) {
    if (bytes > size_) {
      size_t rounded = (bytes + 63) / 64 * 64;
      buffer_.reset(std::aligned_alloc(64, rounded));
      if (!buffer_)
        throw std::bad_alloc();
      size_ = rounded;
    }
    return buffer_.get();
  }

private:
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> buffer_;
  size_t size_ = 0;
};

/// Weights packed on every call (not stamped): one buffer per thread, so
/// that a model's unstamped weights are not held twice between calls.
thread_local ScratchBuffer unstampedWeights;
/// The blocked input and output of a Winograd convolution.
thread_local ScratchBuffer winogradActivations;

/// The weights for `w` in `layout` (packed and scaled): from the cache when
/// the frontend stamped w's tensor (`stamp`: an unchanged graph input) and
/// it was packed at this version with this scale, else packed now (and
/// cached when stamped; `winograd` tells the two layouts of a shape apart).
dnnl::memory weightsFor(const Entry &entry, const WeightLayout &layout, const KilnInputStamp *stamp,
                        bool winograd, const std::vector<int64_t> &key,
                        const StridedMemRef<float, 4> *w, const Vec *scaleRef, dnnl::stream &stream,
                        std::shared_ptr<dnnl::memory> &hold) {
  std::vector<float> scale = values(scaleRef);
  const dnnl::memory::desc &desc = layout.packedDesc;
  if (!stamp) {
    dnnl::memory packed(desc, engine(), unstampedWeights.get(desc.get_size()));
    packs.fetch_add(1, std::memory_order_relaxed);
    pack(entry, layout, w, scale, stream, packed);
    return packed;
  }
  const void *data = w->data + w->offset;
  std::vector<int64_t> at = key;
  at.push_back(w->offset); // two views of one input differ in offset only
  at.push_back(winograd);
  std::lock_guard<std::mutex> lock(packedMutex);
  Packed &p = packedCache[{stamp->serial, std::move(at)}];
  if (!p.memory || p.version != stamp->version || p.data != data || p.scale != scale) {
    auto fresh = std::make_shared<dnnl::memory>(desc, engine());
    pack(entry, layout, w, scale, stream, *fresh);
    size_t bytes = desc.get_size();
    packedBytes.fetch_add(int64_t(bytes) - int64_t(p.bytes), std::memory_order_relaxed);
    packs.fetch_add(1, std::memory_order_relaxed);
    p = {stamp->version, data, std::move(scale), std::move(fresh), bytes};
  }
  hold = p.memory;
  return *hold;
}

/// "oneDNN convolution [N,C,H,W] x [F,C/G,KH,KW] stride .. failed: why; ..".
void logRefusal(const StridedMemRef<float, 4> *x, const StridedMemRef<float, 4> *w,
                const int64_t *p, const char *why) {
  std::string s = "oneDNN convolution [";
  for (int64_t i = 0; i < 4; ++i)
    s += std::to_string(x->sizes[i]) + (i < 3 ? "," : "] x [");
  for (int64_t i = 0; i < 4; ++i)
    s += std::to_string(w->sizes[i]) + (i < 3 ? "," : "]");
  s += " stride " + std::to_string(p[0]) + "x" + std::to_string(p[1]) + " dilation " +
       std::to_string(p[2]) + "x" + std::to_string(p[3]) + " groups " + std::to_string(p[8]) +
       " failed: " + why + "; this convolution runs kiln's reference loops (correct, slow)";
  kiln::rt::logFallback(s);
}

/// The cached entry of this call's shape key; a shape oneDNN refuses gets
/// a reference entry and one log line.
Entry &lookup(const std::vector<int64_t> &key, const StridedMemRef<float, 4> *x,
              const StridedMemRef<float, 4> *w, const StridedMemRef<float, 4> *y,
              const int64_t *params) {
  thread_local std::map<std::vector<int64_t>, std::unique_ptr<Entry>> cache;
  std::unique_ptr<Entry> &entry = cache[key];
  if (entry)
    return *entry;
  try {
    if (refuse.load(std::memory_order_relaxed))
      throw dnnl::error(dnnl_unimplemented, "refused by kilnDnnlConvRefuse (test hook)");
    entry = create(x, w, y, params);
  } catch (const std::exception &e) {
    entry = std::make_unique<Entry>();
    entry->reference = true;
    logRefusal(x, w, params, e.what());
  }
  return *entry;
}

/// Runs the primitive of `entry`; false (and a log line, and the entry
/// switched to the reference loops) when oneDNN fails at run time.
bool runDnnl(Entry &entry, const std::vector<int64_t> &key, StridedMemRef<float, 4> *x,
             StridedMemRef<float, 4> *w, StridedMemRef<float, 4> *y, Vec *scale,
             const std::vector<float> &bias, const int64_t *params) {
  try {
    applyThreads();
    thread_local dnnl::stream stream(engine());
    dnnl::memory src(describe(x), engine(), x->data + x->offset);
    dnnl::memory dst(describe(y), engine(), y->data + y->offset);
    dnnl::memory biasMem(dnnl::memory::desc({w->sizes[0]}, dnnl::memory::data_type::f32,
                                            dnnl::memory::format_tag::a),
                         engine(), const_cast<float *>(bias.data()));
    std::shared_ptr<dnnl::memory> hold;
    const KilnInputStamp *stamp = kilnFindInputStamp(w->data);
    // Winograd only on stamped weights: its weight transform is done once.
    if (stamp && !entry.winogradTried) {
      entry.winograd = winogradFor(entry, x, w, y, params);
      entry.winogradTried = true;
    }
    Winograd *wino =
        stamp && !winogradOff.load(std::memory_order_relaxed) ? entry.winograd.get() : nullptr;
    dnnl::memory weights = weightsFor(entry, wino ? wino->weights : entry.weights, stamp,
                                      wino != nullptr, key, w, scale, stream, hold);
    if (!wino) {
      entry.conv.execute(stream, {{DNNL_ARG_SRC, src},
                                  {DNNL_ARG_WEIGHTS, weights},
                                  {DNNL_ARG_BIAS, biasMem},
                                  {DNNL_ARG_DST, dst}});
      stream.wait();
      return true;
    }
    size_t srcBytes = (wino->src.get_size() + 63) / 64 * 64;
    auto *scratch = static_cast<char *>(winogradActivations.get(srcBytes + wino->dst.get_size()));
    dnnl::memory blockedSrc(wino->src, engine(), scratch);
    dnnl::memory blockedDst(wino->dst, engine(), scratch + srcBytes);
    wino->toSrc.execute(stream, src, blockedSrc);
    wino->conv.execute(stream, {{DNNL_ARG_SRC, blockedSrc},
                                {DNNL_ARG_WEIGHTS, weights},
                                {DNNL_ARG_BIAS, biasMem},
                                {DNNL_ARG_DST, blockedDst}});
    wino->fromDst.execute(stream, blockedDst, dst);
    stream.wait();
    winogradCalls.fetch_add(1, std::memory_order_relaxed);
    return true;
  } catch (const std::exception &e) {
    entry.reference = true;
    logRefusal(x, w, params, e.what());
    return false;
  }
}

} // namespace

extern "C" void _mlir_ciface_kiln_dnnl_conv2d_f32(
    StridedMemRef<float, 4> *x, StridedMemRef<float, 4> *w, StridedMemRef<float, 4> *y, Vec *scale,
    Vec *shift, int64_t strideH, int64_t strideW, int64_t dilationH, int64_t dilationW,
    int64_t padTop, int64_t padBottom, int64_t padLeft, int64_t padRight, int64_t groups,
    int64_t activation) {
  calls.fetch_add(1, std::memory_order_relaxed);
  const int64_t params[10] = {strideH,   strideW, dilationH, dilationW, padTop,
                              padBottom, padLeft, padRight,  groups,    activation};
  std::vector<int64_t> key(params, params + 10);
  for (const StridedMemRef<float, 4> *m : {x, w, y}) {
    key.insert(key.end(), m->sizes, m->sizes + 4);
    key.insert(key.end(), m->strides, m->strides + 4);
  }
  key.push_back(kiln::rt::dnnlApplyThreads());
  Entry &entry = lookup(key, x, w, y, params);
  std::vector<float> bias = values(shift);
  if (!entry.reference && runDnnl(entry, key, x, w, y, scale, bias, params))
    return;
  referenceCalls.fetch_add(1, std::memory_order_relaxed);
  kiln::rt::conv2dReference(x, w, y, params, values(scale).data(), bias.data());
}

extern "C" void kilnDnnlConvRefuse(int64_t on) { refuse.store(on != 0); }

extern "C" void kilnDnnlConvWinograd(int64_t on) { winogradOff.store(on == 0); }

extern "C" int64_t kilnDnnlWinogradCalls() { return winogradCalls.load(std::memory_order_relaxed); }

extern "C" int64_t kilnDnnlConvReferenceCalls() { return referenceCalls.load(); }

extern "C" void kilnDnnlForgetWeights(uint64_t serial) {
  std::lock_guard<std::mutex> lock(packedMutex);
  kiln::rt::forgetPacked(packedCache, packedBytes, serial);
}

extern "C" int64_t kilnDnnlPackedBytes() { return packedBytes.load(std::memory_order_relaxed); }

extern "C" int64_t kilnDnnlWeightPacks() { return packs.load(std::memory_order_relaxed); }

extern "C" int64_t kilnDnnlConvCalls() { return calls.load(std::memory_order_relaxed); }

namespace kiln::rt {

bool haveDnnl() { return true; }

dnnl::engine &dnnlEngine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

int dnnlApplyThreads() {
  using Fn = void (*)(int);
  using Get = int (*)();
  static Fn set = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  static Get get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  int want = std::max(1, kilnGetNumThreads());
  if (set && get && get() != want)
    set(want);
  return want;
}

std::vector<std::pair<const char *, void *>> dnnlShimSymbols() {
  std::vector<std::pair<const char *, void *>> symbols = dnnlConvBwdSymbols();
  symbols.insert(symbols.end(),
                 {{"_mlir_ciface_kiln_dnnl_conv2d_f32",
                   reinterpret_cast<void *>(&_mlir_ciface_kiln_dnnl_conv2d_f32)},
                  {"_mlir_ciface_kiln_dnnl_qconv2d_u8s8",
                   reinterpret_cast<void *>(&_mlir_ciface_kiln_dnnl_qconv2d_u8s8)},
                  {"_mlir_ciface_kiln_dnnl_qconv2d_u8s8_xu8",
                   reinterpret_cast<void *>(&_mlir_ciface_kiln_dnnl_qconv2d_u8s8_xu8)},
                  {"_mlir_ciface_kiln_dnnl_qconv2d_u8s8_yu8",
                   reinterpret_cast<void *>(&_mlir_ciface_kiln_dnnl_qconv2d_u8s8_yu8)},
                  {"_mlir_ciface_kiln_dnnl_qconv2d_u8s8_xu8_yu8",
                   reinterpret_cast<void *>(&_mlir_ciface_kiln_dnnl_qconv2d_u8s8_xu8_yu8)}});
  symbols.push_back({"_mlir_ciface_kiln_dnnl_maxpool2d_u8",
                     reinterpret_cast<void *>(&_mlir_ciface_kiln_dnnl_maxpool2d_u8)});
  for (auto symbol : qconvResidualShimSymbols())
    symbols.push_back(symbol);
  return symbols;
}

} // namespace kiln::rt

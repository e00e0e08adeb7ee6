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
std::atomic<bool> refuse{false};

/// One convolution shape: its primitive and the reorders of its weights
/// from the caller's layout into the primitive's: as they are, times a
/// per-output-channel scale given at run time (BatchNorm folded; one pass),
/// and, where oneDNN has no scaling reorder, from a plain (contiguous)
/// scaled copy.
struct Entry {
  dnnl::convolution_forward conv;
  dnnl::memory::desc userWeights, plainWeights, packedDesc;
  dnnl::reorder fromUser, fromUserScaled, fromPlain;
  bool reference = false; ///< oneDNN refused: kiln's own loops (ConvReference.h)
};

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
  entry->packedDesc = pd.weights_desc();
  entry->fromUser =
      dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), entry->packedDesc));
  entry->fromPlain = dnnl::reorder(
      dnnl::reorder::primitive_desc(engine(), entry->plainWeights, engine(), entry->packedDesc));
  try {
    // Output scales over the output-channel dims: [F] or grouped [G, F/G].
    dnnl::primitive_attr scaled;
    scaled.set_output_scales(p[8] == 1 ? 1 : 3, {DNNL_RUNTIME_F32_VAL});
    entry->fromUserScaled = dnnl::reorder(
        dnnl::reorder::primitive_desc(engine(), user, engine(), entry->packedDesc, scaled));
  } catch (const dnnl::error &) {
    // No scaling reorder for this layout: pack() scales a plain copy.
  }
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
void pack(Entry &entry, const StridedMemRef<float, 4> *w, const std::vector<float> &scale,
          dnnl::stream &stream, dnnl::memory &packed) {
  const float *data = w->data + w->offset;
  if (std::all_of(scale.begin(), scale.end(), [](float s) { return s == 1.0f; })) {
    dnnl::memory user(entry.userWeights, engine(), const_cast<float *>(data));
    entry.fromUser.execute(stream, user, packed);
    stream.wait();
    return;
  }
  if (entry.fromUserScaled) {
    dnnl::memory user(entry.userWeights, engine(), const_cast<float *>(data));
    dnnl::memory scales(dnnl::memory::desc({int64_t(scale.size())}, dnnl::memory::data_type::f32,
                                           dnnl::memory::format_tag::a),
                        engine(), const_cast<float *>(scale.data()));
    entry.fromUserScaled.execute(
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
  entry.fromPlain.execute(stream, src, packed);
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

/// The calling thread's buffer for weights packed on every call (not
/// stamped), at least `bytes` long: one per thread, not one per shape, so
/// that a model's unstamped weights are not held twice between calls.
void *unstampedScratch(size_t bytes) {
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  thread_local std::unique_ptr<void, Free> buffer;
  thread_local size_t size = 0;
  if (bytes > size) {
    size_t rounded = (bytes + 63) / 64 * 64;
    buffer.reset(std::aligned_alloc(64, rounded));
    if (!buffer)
      throw std::bad_alloc();
    size = rounded;
  }
  return buffer.get();
}

/// The entry's packed (and scaled) weights for `w`: from the cache when the
/// frontend stamped w's tensor (an unchanged graph input) and it was packed
/// at this version with this scale, else packed now (and cached when
/// stamped).
dnnl::memory weightsFor(Entry &entry, const std::vector<int64_t> &key,
                        const StridedMemRef<float, 4> *w, const Vec *scaleRef, dnnl::stream &stream,
                        std::shared_ptr<dnnl::memory> &hold) {
  std::vector<float> scale = values(scaleRef);
  const KilnInputStamp *stamp = kilnFindInputStamp(w->data);
  if (!stamp) {
    dnnl::memory packed(entry.packedDesc, engine(), unstampedScratch(entry.packedDesc.get_size()));
    packs.fetch_add(1, std::memory_order_relaxed);
    pack(entry, w, scale, stream, packed);
    return packed;
  }
  const void *data = w->data + w->offset;
  std::vector<int64_t> at = key;
  at.push_back(w->offset); // two views of one input differ in offset only
  std::lock_guard<std::mutex> lock(packedMutex);
  Packed &p = packedCache[{stamp->serial, std::move(at)}];
  if (!p.memory || p.version != stamp->version || p.data != data || p.scale != scale) {
    auto fresh = std::make_shared<dnnl::memory>(entry.packedDesc, engine());
    pack(entry, w, scale, stream, *fresh);
    size_t bytes = entry.packedDesc.get_size();
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
    dnnl::memory weights = weightsFor(entry, key, w, scale, stream, hold);
    entry.conv.execute(stream, {{DNNL_ARG_SRC, src},
                                {DNNL_ARG_WEIGHTS, weights},
                                {DNNL_ARG_BIAS, biasMem},
                                {DNNL_ARG_DST, dst}});
    stream.wait();
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

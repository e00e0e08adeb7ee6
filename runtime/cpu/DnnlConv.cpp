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
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DnnlConv.h"
#include "runtime/cpu/Threads.h"
#include "runtime/cpu/WeightStamps.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>

namespace {

using kiln::rt::StridedMemRef;

std::atomic<int64_t> calls{0};

/// One convolution shape: its primitive and, when the primitive wants
/// another weight layout than the caller's, the reorder and its buffer.
struct Entry {
  dnnl::convolution_forward conv;
  dnnl::memory::desc userWeights;
  bool pack = false; ///< the primitive wants another weight layout
  dnnl::memory::desc packedDesc;
  dnnl::reorder packWeights;
  dnnl::memory scratch; ///< packed weights of unstamped calls (made on first use)
};

dnnl::engine &engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

/// `m`'s sizes and strides as a oneDNN f32 desc.
dnnl::memory::desc describe(const StridedMemRef<float, 4> *m) {
  dnnl::memory::dims dims(m->sizes, m->sizes + 4), strides(m->strides, m->strides + 4);
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

/// The weights [F, C/G, KH, KW] as oneDNN's grouped [G, F/G, C/G, KH, KW].
dnnl::memory::desc describeWeights(const StridedMemRef<float, 4> *w, int64_t groups) {
  if (groups == 1)
    return describe(w);
  dnnl::memory::dims dims = {groups, w->sizes[0] / groups, w->sizes[1], w->sizes[2], w->sizes[3]};
  dnnl::memory::dims strides = {w->strides[0] * (w->sizes[0] / groups), w->strides[0],
                                w->strides[1], w->strides[2], w->strides[3]};
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

std::unique_ptr<Entry> create(const StridedMemRef<float, 4> *x, const StridedMemRef<float, 4> *w,
                              const StridedMemRef<float, 4> *y, const int64_t *p) {
  auto anyWeights = describeWeights(w, p[8]);
  dnnl::memory::desc packed(anyWeights.dims(), dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::any);
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, describe(x), packed,
      describe(y), {p[0], p[1]}, {p[2] - 1, p[3] - 1}, {p[4], p[6]}, {p[5], p[7]});
  dnnl::primitive_attr attr;
  if (p[9]) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  dnnl::convolution_forward::primitive_desc pd(desc, attr, engine());
  auto entry = std::make_unique<Entry>();
  entry->conv = dnnl::convolution_forward(pd);
  entry->userWeights = anyWeights;
  if (pd.weights_desc() != anyWeights) {
    entry->pack = true;
    entry->packedDesc = pd.weights_desc();
    entry->packWeights = dnnl::reorder(
        dnnl::reorder::primitive_desc(engine(), anyWeights, engine(), pd.weights_desc()));
  }
  return entry;
}

/// Sets the OpenMP thread count of the calling thread to kiln's.
void applyThreads() {
  using Fn = void (*)(int);
  using Get = int (*)();
  static Fn set = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  static Get get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  int want = std::max(1, kilnGetNumThreads());
  if (set && get && get() != want)
    set(want);
}

/// Weights packed once per weight tensor: keyed by the frontend's stamp
/// serial of the tensor and the call's shape key, valid while the stamp's
/// version and data pointer are the ones packed from. Shared by all
/// threads (a repack replaces the memory; callers hold their own
/// reference while they run).
struct Packed {
  int64_t version = 0;
  const void *data = nullptr;
  std::shared_ptr<dnnl::memory> memory;
  size_t bytes = 0;
};

std::mutex packedMutex;
std::map<std::pair<uint64_t, std::vector<int64_t>>, Packed> packedCache;
std::atomic<int64_t> packedBytes{0}, packs{0};

/// The entry's packed weights for `w`: from the cache when the frontend
/// stamped w's tensor (an unchanged graph input) and it was packed at this
/// version, else reordered now (and cached when stamped).
dnnl::memory weightsFor(Entry &entry, const std::vector<int64_t> &key,
                        const StridedMemRef<float, 4> *w, dnnl::stream &stream,
                        std::shared_ptr<dnnl::memory> &hold) {
  const void *data = w->data + w->offset;
  dnnl::memory user(entry.userWeights, engine(), const_cast<void *>(data));
  const KilnInputStamp *stamp = kilnFindInputStamp(w->data);
  if (!stamp) {
    packs.fetch_add(1, std::memory_order_relaxed);
    if (!entry.scratch)
      entry.scratch = dnnl::memory(entry.packedDesc, engine());
    entry.packWeights.execute(stream, user, entry.scratch);
    return entry.scratch;
  }
  std::lock_guard<std::mutex> lock(packedMutex);
  std::vector<int64_t> at = key;
  at.push_back(w->offset); // two views of one input differ in offset only
  Packed &p = packedCache[{stamp->serial, std::move(at)}];
  if (!p.memory || p.version != stamp->version || p.data != data) {
    auto fresh = std::make_shared<dnnl::memory>(entry.packedDesc, engine());
    entry.packWeights.execute(stream, user, *fresh);
    stream.wait();
    size_t bytes = fresh->get_desc().get_size();
    packedBytes.fetch_add(int64_t(bytes) - int64_t(p.bytes), std::memory_order_relaxed);
    packs.fetch_add(1, std::memory_order_relaxed);
    p = {stamp->version, data, std::move(fresh), bytes};
  }
  hold = p.memory;
  return *hold;
}

} // namespace

extern "C" void _mlir_ciface_kiln_dnnl_conv2d_f32(
    StridedMemRef<float, 4> *x, StridedMemRef<float, 4> *w, StridedMemRef<float, 4> *y,
    int64_t strideH, int64_t strideW, int64_t dilationH, int64_t dilationW, int64_t padTop,
    int64_t padBottom, int64_t padLeft, int64_t padRight, int64_t groups, int64_t relu) {
  calls.fetch_add(1, std::memory_order_relaxed);
  const int64_t params[10] = {strideH,   strideW, dilationH, dilationW, padTop,
                              padBottom, padLeft, padRight,  groups,    relu};
  std::vector<int64_t> key(params, params + 10);
  for (const StridedMemRef<float, 4> *m : {x, w, y}) {
    key.insert(key.end(), m->sizes, m->sizes + 4);
    key.insert(key.end(), m->strides, m->strides + 4);
  }
  thread_local std::map<std::vector<int64_t>, std::unique_ptr<Entry>> cache;
  std::unique_ptr<Entry> &entry = cache[key];
  if (!entry)
    entry = create(x, w, y, params);
  applyThreads();
  thread_local dnnl::stream stream(engine());
  dnnl::memory src(describe(x), engine(), x->data + x->offset);
  dnnl::memory dst(describe(y), engine(), y->data + y->offset);
  std::shared_ptr<dnnl::memory> hold;
  dnnl::memory weights = entry->pack
                             ? weightsFor(*entry, key, w, stream, hold)
                             : dnnl::memory(entry->userWeights, engine(), w->data + w->offset);
  entry->conv.execute(stream,
                      {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
  stream.wait();
}

extern "C" void kilnDnnlForgetWeights(uint64_t serial) {
  std::lock_guard<std::mutex> lock(packedMutex);
  auto first = packedCache.lower_bound({serial, {}});
  auto last = packedCache.lower_bound({serial + 1, {}});
  for (auto it = first; it != last; ++it)
    packedBytes.fetch_sub(int64_t(it->second.bytes), std::memory_order_relaxed);
  packedCache.erase(first, last);
}

extern "C" int64_t kilnDnnlPackedBytes() { return packedBytes.load(std::memory_order_relaxed); }

extern "C" int64_t kilnDnnlWeightPacks() { return packs.load(std::memory_order_relaxed); }

extern "C" int64_t kilnDnnlConvCalls() { return calls.load(std::memory_order_relaxed); }

namespace kiln::rt {

bool haveDnnl() { return true; }

std::vector<std::pair<const char *, void *>> dnnlShimSymbols() {
  return {{"_mlir_ciface_kiln_dnnl_conv2d_f32",
           reinterpret_cast<void *>(&_mlir_ciface_kiln_dnnl_conv2d_f32)}};
}

} // namespace kiln::rt

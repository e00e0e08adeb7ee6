//===- PackedGemm.cpp - GEMM weights packed once per tensor version -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements PackedGemm.h with oneDNN's f32 matmul (brgemm kernels; 1
// thread, 128x768 by 768x3072: 186 GFLOP/s on a packed operand against
// oneMKL's 150-160 unpacked; oneMKL's own packed format takes 2.2-4.9x the
// weight's bytes, oneDNN's blocked layout the same bytes). One primitive
// per shape and thread; a packed operand is valid while the stamp's
// version and the data pointer are those it was packed from (as
// DnnlConv.cpp's packed convolution weights), and callers hold a reference
// while they run, so a repack by another thread frees nothing in use.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/PackedGemm.h"
#include "runtime/cpu/DnnlCommon.h"
#include "runtime/cpu/PackedWeights.h"
#include "runtime/cpu/WeightStamps.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace {

using dnnl::memory;

/// Below these packing does not pay (1 thread: m = 1 is a GEMV; 256x64x64
/// loses to the unpacked GEMM; m 4-32 at 768x768 1.4-2.1x). Only B^T (an
/// nn.Linear weight [n, k]) is packed: inside whole models (weights read
/// from memory, not cache) oneMKL runs a plain B (GPT-2's Conv1D [k, n]) as
/// fast as oneDNN runs it packed, while B^T is slower there.
constexpr int64_t kMinRows = 2, kMinElements = 64 * 1024;

/// One GEMM shape on one thread: its primitive and the reorder of B.
struct Primitive {
  dnnl::matmul matmul;
  memory::desc a, user, packed, c;
  dnnl::reorder pack;
  bool refused = false;
};

struct Packed {
  int64_t version = 0;
  const void *data = nullptr;
  std::shared_ptr<memory> weights;
  size_t bytes = 0;
};

std::mutex mutex;
/// (serial, {the primitive's shape key, offset of B in its tensor}): the
/// packed layout is the primitive's, which may differ per thread count.
kiln::rt::PackedCache<Packed> cache;
std::atomic<int64_t> packedBytes{0}, packs{0}, packedCalls{0};

/// The calling thread's primitive for this shape (created on first use;
/// `refused` when oneDNN has none).
/// `shape` is {m, n, k, lda, ldb, ldc, accumulate, threads}; B is transposed.
Primitive &primitiveFor(const std::vector<int64_t> &shape) {
  thread_local std::map<std::vector<int64_t>, std::unique_ptr<Primitive>> primitives;
  auto &slot = primitives[shape];
  if (slot)
    return *slot;
  int64_t m = shape[0], n = shape[1], k = shape[2], lda = shape[3], ldb = shape[4], ldc = shape[5];
  bool accumulate = shape[6] != 0;
  slot = std::make_unique<Primitive>();
  try {
    auto f32 = memory::data_type::f32;
    slot->a = memory::desc({m, k}, f32, {lda, 1});
    slot->user = memory::desc({k, n}, f32, {1, ldb}); // B^T: [n, k] rows of ldb
    slot->c = memory::desc({m, n}, f32, {ldc, 1});
    memory::desc any({k, n}, f32, memory::format_tag::any);
    dnnl::primitive_attr attr;
    dnnl::post_ops ops;
    if (accumulate) {
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(slot->a, any, slot->c), attr,
                                    kiln::rt::dnnlEngine());
    slot->matmul = dnnl::matmul(pd);
    slot->packed = pd.weights_desc();
    slot->pack = dnnl::reorder(dnnl::reorder::primitive_desc(kiln::rt::dnnlEngine(), slot->user,
                                                             kiln::rt::dnnlEngine(), slot->packed));
  } catch (const dnnl::error &) {
    slot->refused = true;
  }
  return *slot;
}

} // namespace

namespace kiln::rt {

bool packedSgemm(const void *bBase, bool transB, int64_t m, int64_t n, int64_t k, const float *a,
                 int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (!transB || m < kMinRows || n * k < kMinElements || (beta != 0.0f && beta != 1.0f))
    return false;
  const KilnInputStamp *stamp = kilnFindInputStamp(bBase);
  if (!stamp)
    return false;
  std::vector<int64_t> shape = {m, n, k, lda, ldb, ldc, beta != 0.0f, dnnlApplyThreads()};
  Primitive &prim = primitiveFor(shape);
  if (prim.refused)
    return false;
  dnnl::engine &engine = dnnlEngine();
  thread_local dnnl::stream stream(engine);
  shape.push_back(b - static_cast<const float *>(bBase)); // two views of one input
  std::pair<uint64_t, std::vector<int64_t>> key{stamp->serial, std::move(shape)};
  std::shared_ptr<memory> hold;
  {
    std::lock_guard<std::mutex> lock(mutex);
    Packed &p = cache[key];
    if (!p.weights || p.version != stamp->version || p.data != b) {
      auto fresh = std::make_shared<memory>(prim.packed, engine);
      memory user(prim.user, engine, const_cast<float *>(b));
      prim.pack.execute(stream, user, *fresh);
      stream.wait();
      size_t bytes = prim.packed.get_size();
      packedBytes.fetch_add(int64_t(bytes) - int64_t(p.bytes), std::memory_order_relaxed);
      packs.fetch_add(1, std::memory_order_relaxed);
      p = {stamp->version, b, std::move(fresh), bytes};
    }
    hold = p.weights;
  }
  memory am(prim.a, engine, const_cast<float *>(a)), cm(prim.c, engine, c);
  prim.matmul.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, *hold}, {DNNL_ARG_DST, cm}});
  stream.wait();
  packedCalls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

} // namespace kiln::rt

extern "C" void kilnGemmForgetWeights(uint64_t serial) {
  std::lock_guard<std::mutex> lock(mutex);
  kiln::rt::forgetPacked(cache, packedBytes, serial);
}

extern "C" int64_t kilnGemmPackedBytes() { return packedBytes.load(std::memory_order_relaxed); }

extern "C" int64_t kilnGemmWeightPacks() { return packs.load(std::memory_order_relaxed); }

extern "C" int64_t kilnGemmPackedCalls() { return packedCalls.load(std::memory_order_relaxed); }

//===- DnnlConvBwd.cpp - oneDNN convolution backward-data / -weights -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements the `_mlir_ciface_kiln_dnnl_conv2d_bwd_{data,weights}_f32`
// calls (DnnlConvBwd.h) that kiln-cpu-convs-to-dnnl emits for the marked
// gradients of kiln-autodiff's conv2d rule. Per shape (and the operands'
// strides) and thread, one primitive created with oneDNN's preferred
// (`any`) formats, hinted by a forward_training primitive of the same
// convolution, and the reorders between the caller's strided buffers and
// those formats (none where they agree). The primitives run on the calling
// thread's OpenMP team (DnnlCommon.h). A shape oneDNN refuses (creating or
// running throws) runs kiln's reference loops (ConvReference.h) after one
// fallbacks log line: slow, never an abort.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DnnlConvBwd.h"
#include "runtime/cpu/ConvReference.h"
#include "runtime/cpu/DnnlCommon.h"
#include "runtime/cpu/RuntimeLog.h"

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using kiln::rt::StridedMemRef;
using M4 = StridedMemRef<float, 4>;
using dnnl::memory;

std::atomic<int64_t> calls{0}, referenceCalls{0};
std::atomic<bool> refuse{false};

memory::desc describe(const M4 *m) {
  return memory::desc(memory::dims(m->sizes, m->sizes + 4), memory::data_type::f32,
                      memory::dims(m->strides, m->strides + 4));
}

/// The weights [F, C/G, KH, KW] as oneDNN's grouped [G, F/G, C/G, KH, KW].
memory::desc describeWeights(const M4 *w, int64_t groups) {
  if (groups == 1)
    return describe(w);
  const int64_t *s = w->sizes, *t = w->strides;
  return memory::desc({groups, s[0] / groups, s[1], s[2], s[3]}, memory::data_type::f32,
                      {t[0] * (s[0] / groups), t[0], t[1], t[2], t[3]});
}

memory::desc anyLike(const memory::desc &d) {
  return memory::desc(d.dims(), memory::data_type::f32, memory::format_tag::any);
}

/// One operand of a primitive: the caller's layout and the primitive's;
/// when they differ, a reorder and a buffer in the primitive's layout.
struct Operand {
  memory::desc user, inner;
  dnnl::reorder toInner, toUser;
  memory scratch;
  void init(const memory::desc &u, const memory::desc &i, bool output) {
    user = u;
    inner = i;
    if (u == i)
      return;
    dnnl::engine &e = kiln::rt::dnnlEngine();
    scratch = memory(i, e);
    if (output)
      toUser = dnnl::reorder(dnnl::reorder::primitive_desc(e, i, e, u));
    else
      toInner = dnnl::reorder(dnnl::reorder::primitive_desc(e, u, e, i));
  }
  /// The primitive's memory for the caller's data at `data` (an input is
  /// reordered into the scratch buffer now).
  memory in(dnnl::stream &s, float *data) {
    memory m(user, kiln::rt::dnnlEngine(), data);
    if (!scratch)
      return m;
    toInner.execute(s, m, scratch);
    return scratch;
  }
  memory out(float *data) { return scratch ? scratch : memory(user, kiln::rt::dnnlEngine(), data); }
  void finish(dnnl::stream &s, float *data) {
    if (!scratch)
      return;
    memory m(user, kiln::rt::dnnlEngine(), data);
    toUser.execute(s, scratch, m);
  }
};

/// A backward primitive and its three operands: (diff_dst, weights,
/// diff_src) for backward-data, (src, diff_dst, diff_weights) for
/// backward-weights; the last one is the output.
struct Entry {
  dnnl::primitive prim;
  Operand a, b, out;
  bool reference = false;
};

/// oneDNN's convolution parameters from kiln's p[9] (DnnlConvBwd.h).
struct Geometry {
  memory::dims strides, dilates, padL, padR;
  explicit Geometry(const int64_t *p)
      : strides{p[0], p[1]}, dilates{p[2] - 1, p[3] - 1}, padL{p[4], p[6]}, padR{p[5], p[7]} {}
};

/// The forward_training primitive desc both backward ones are hinted by.
dnnl::convolution_forward::primitive_desc hint(const memory::desc &x, const memory::desc &w,
                                               const memory::desc &y, const Geometry &g) {
  dnnl::convolution_forward::desc fwd(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, anyLike(x), anyLike(w),
                                      anyLike(y), g.strides, g.dilates, g.padL, g.padR);
  return dnnl::convolution_forward::primitive_desc(fwd, kiln::rt::dnnlEngine());
}

/// Backward-data: (g, w) → gx.
std::unique_ptr<Entry> createData(const M4 *g, const M4 *w, const M4 *gx, const int64_t *p) {
  Geometry geo(p);
  memory::desc gd = describe(g), wd = describeWeights(w, p[8]), xd = describe(gx);
  auto fwd = hint(xd, wd, gd, geo);
  dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, anyLike(xd),
                                             anyLike(wd), anyLike(gd), geo.strides, geo.dilates,
                                             geo.padL, geo.padR);
  dnnl::convolution_backward_data::primitive_desc pd(desc, kiln::rt::dnnlEngine(), fwd);
  auto e = std::make_unique<Entry>();
  e->prim = dnnl::convolution_backward_data(pd);
  e->a.init(gd, pd.diff_dst_desc(), false);
  e->b.init(wd, pd.weights_desc(), false);
  e->out.init(xd, pd.diff_src_desc(), true);
  return e;
}

/// Backward-weights: (x, g) → gw.
std::unique_ptr<Entry> createWeights(const M4 *x, const M4 *g, const M4 *gw, const int64_t *p) {
  Geometry geo(p);
  memory::desc xd = describe(x), gd = describe(g), wd = describeWeights(gw, p[8]);
  auto fwd = hint(xd, wd, gd, geo);
  dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, anyLike(xd),
                                                anyLike(wd), anyLike(gd), geo.strides, geo.dilates,
                                                geo.padL, geo.padR);
  dnnl::convolution_backward_weights::primitive_desc pd(desc, kiln::rt::dnnlEngine(), fwd);
  auto e = std::make_unique<Entry>();
  e->prim = dnnl::convolution_backward_weights(pd);
  e->a.init(xd, pd.src_desc(), false);
  e->b.init(gd, pd.diff_dst_desc(), false);
  e->out.init(wd, pd.diff_weights_desc(), true);
  return e;
}

/// "oneDNN convolution backward-data [..] x [..] .. failed: why; ..".
void logRefusal(bool data, const M4 *a, const M4 *b, const int64_t *p, const char *why) {
  std::string s = std::string("oneDNN convolution backward-") + (data ? "data [" : "weights [");
  for (const M4 *m : {a, b})
    for (int64_t i = 0; i < 4; ++i)
      s += std::to_string(m->sizes[i]) + (i < 3 ? "," : m == a ? "] x [" : "]");
  s += " stride " + std::to_string(p[0]) + "x" + std::to_string(p[1]) + " dilation " +
       std::to_string(p[2]) + "x" + std::to_string(p[3]) + " groups " + std::to_string(p[8]) +
       " failed: " + why + "; it runs kiln's reference loops (correct, slow)";
  kiln::rt::logFallback(s);
}

/// The entry of this call's shape (per thread); a refused shape gets a
/// reference entry and one log line.
Entry &lookup(bool data, const M4 *a, const M4 *b, const M4 *out, const int64_t *p) {
  std::vector<int64_t> key(p, p + 9);
  key.push_back(data);
  for (const M4 *m : {a, b, out}) {
    key.insert(key.end(), m->sizes, m->sizes + 4);
    key.insert(key.end(), m->strides, m->strides + 4);
  }
  key.push_back(kiln::rt::dnnlApplyThreads());
  thread_local std::map<std::vector<int64_t>, std::unique_ptr<Entry>> cache;
  std::unique_ptr<Entry> &entry = cache[key];
  if (entry)
    return *entry;
  try {
    if (refuse.load(std::memory_order_relaxed))
      throw dnnl::error(dnnl_unimplemented, "refused by kilnDnnlConvBwdRefuse (test hook)");
    entry = data ? createData(a, b, out, p) : createWeights(a, b, out, p);
  } catch (const std::exception &e) {
    entry = std::make_unique<Entry>();
    entry->reference = true;
    logRefusal(data, a, b, p, e.what());
  }
  return *entry;
}

float *base(const M4 *m) { return m->data + m->offset; }

/// Runs `data` (backward-data) or backward-weights through oneDNN; false
/// (and the reference loops) when the shape was refused or running throws.
bool run(bool data, M4 *a, M4 *b, M4 *out, const int64_t *p) {
  Entry &e = lookup(data, a, b, out, p);
  if (e.reference)
    return false;
  try {
    kiln::rt::dnnlApplyThreads();
    thread_local dnnl::stream stream(kiln::rt::dnnlEngine());
    memory ma = e.a.in(stream, base(a)), mb = e.b.in(stream, base(b)), mo = e.out.out(base(out));
    if (data)
      e.prim.execute(stream,
                     {{DNNL_ARG_DIFF_DST, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DIFF_SRC, mo}});
    else
      e.prim.execute(stream,
                     {{DNNL_ARG_SRC, ma}, {DNNL_ARG_DIFF_DST, mb}, {DNNL_ARG_DIFF_WEIGHTS, mo}});
    e.out.finish(stream, base(out));
    stream.wait();
    return true;
  } catch (const std::exception &ex) {
    e.reference = true;
    logRefusal(data, a, b, p, ex.what());
    return false;
  }
}

/// One backward call: oneDNN, or the reference loops where it refuses.
void backward(bool data, M4 *a, M4 *b, M4 *out, const int64_t p[9]) {
  calls.fetch_add(1, std::memory_order_relaxed);
  if (run(data, a, b, out, p))
    return;
  referenceCalls.fetch_add(1, std::memory_order_relaxed);
  if (data)
    kiln::rt::conv2dBackwardDataReference(a, b, out, p);
  else
    kiln::rt::conv2dBackwardWeightsReference(a, b, out, p);
}

} // namespace

extern "C" void _mlir_ciface_kiln_dnnl_conv2d_bwd_data_f32(M4 *g, M4 *w, M4 *gx, int64_t strideH,
                                                           int64_t strideW, int64_t dilationH,
                                                           int64_t dilationW, int64_t padTop,
                                                           int64_t padBottom, int64_t padLeft,
                                                           int64_t padRight, int64_t groups) {
  const int64_t p[9] = {strideH,   strideW, dilationH, dilationW, padTop,
                        padBottom, padLeft, padRight,  groups};
  backward(true, g, w, gx, p);
}

extern "C" void _mlir_ciface_kiln_dnnl_conv2d_bwd_weights_f32(M4 *x, M4 *g, M4 *gw, int64_t strideH,
                                                              int64_t strideW, int64_t dilationH,
                                                              int64_t dilationW, int64_t padTop,
                                                              int64_t padBottom, int64_t padLeft,
                                                              int64_t padRight, int64_t groups) {
  const int64_t p[9] = {strideH,   strideW, dilationH, dilationW, padTop,
                        padBottom, padLeft, padRight,  groups};
  backward(false, x, g, gw, p);
}

extern "C" int64_t kilnDnnlConvBwdCalls() { return calls.load(std::memory_order_relaxed); }

extern "C" int64_t kilnDnnlConvBwdReferenceCalls() { return referenceCalls.load(); }

extern "C" void kilnDnnlConvBwdRefuse(int64_t on) { refuse.store(on != 0); }

namespace kiln::rt {

std::vector<std::pair<const char *, void *>> dnnlConvBwdSymbols() {
  return {{"_mlir_ciface_kiln_dnnl_conv2d_bwd_data_f32",
           reinterpret_cast<void *>(&_mlir_ciface_kiln_dnnl_conv2d_bwd_data_f32)},
          {"_mlir_ciface_kiln_dnnl_conv2d_bwd_weights_f32",
           reinterpret_cast<void *>(&_mlir_ciface_kiln_dnnl_conv2d_bwd_weights_f32)}};
}

} // namespace kiln::rt

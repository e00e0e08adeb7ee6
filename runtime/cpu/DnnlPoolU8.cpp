//===- DnnlPoolU8.cpp - max pooling of u8 activations by oneDNN ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `_mlir_ciface_kiln_dnnl_maxpool2d_u8` (DnnlConv.h), which
// kiln-cpu-convs-to-dnnl calls between an int8 convolution that writes u8
// and the int8 convolutions reading the pooled values (resnet's stem):
// quantization is monotonic, so max-pooling the u8 values equals
// quantizing the max-pooled floats. oneDNN's pooling (padding never wins a
// max) on the strided u8 views, its primitive created once per shape and
// thread; when oneDNN refuses, a plain loop with the reason logged
// (KILN_LOGS=fallbacks).
//===----------------------------------------------------------------------===//
#include "runtime/cpu/DnnlCommon.h"
#include "runtime/cpu/DnnlConv.h"
#include "runtime/cpu/RuntimeLog.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using kiln::rt::StridedMemRef;
using U8 = StridedMemRef<uint8_t, 4>;

dnnl::memory::desc u8Desc(const U8 *m) {
  const int64_t *n = m->sizes, *s = m->strides;
  return dnnl::memory::desc({n[0], n[1], n[2], n[3]}, dnnl::memory::data_type::u8,
                            {s[0], s[1], s[2], s[3]});
}

/// p: kernel h, w; stride h, w; padding top, left (bottom / right follow
/// from the output size: ceil mode).
std::optional<dnnl::pooling_forward> create(const U8 *x, const U8 *y, const int64_t *p) {
  try {
    int64_t padBottom = (y->sizes[2] - 1) * p[2] + p[0] - x->sizes[2] - p[4];
    int64_t padRight = (y->sizes[3] - 1) * p[3] + p[1] - x->sizes[3] - p[5];
    dnnl::pooling_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, u8Desc(x), u8Desc(y),
        {p[2], p[3]}, {p[0], p[1]}, {p[4], p[5]},
        {std::max<int64_t>(padBottom, 0), std::max<int64_t>(padRight, 0)});
    return dnnl::pooling_forward(
        dnnl::pooling_forward::primitive_desc(desc, kiln::rt::dnnlEngine()));
  } catch (const std::exception &e) {
    kiln::rt::logFallback(std::string("oneDNN u8 max pooling failed: ") + e.what() +
                          "; it runs kiln's loop (correct, slow)");
    return std::nullopt;
  }
}

void reference(const U8 *x, U8 *y, const int64_t *p) {
  const int64_t *n = y->sizes, *xs = x->strides, *ys = y->strides;
  for (int64_t a = 0; a < n[0]; ++a)
    for (int64_t c = 0; c < n[1]; ++c)
      for (int64_t oh = 0; oh < n[2]; ++oh)
        for (int64_t ow = 0; ow < n[3]; ++ow) {
          uint8_t m = 0;
          for (int64_t i = 0; i < p[0]; ++i)
            for (int64_t j = 0; j < p[1]; ++j) {
              int64_t h = oh * p[2] - p[4] + i, w = ow * p[3] - p[5] + j;
              if (h >= 0 && h < x->sizes[2] && w >= 0 && w < x->sizes[3])
                m = std::max(m, x->data[x->offset + a * xs[0] + c * xs[1] + h * xs[2] + w * xs[3]]);
            }
          y->data[y->offset + a * ys[0] + c * ys[1] + oh * ys[2] + ow * ys[3]] = m;
        }
}

} // namespace

extern "C" void _mlir_ciface_kiln_dnnl_maxpool2d_u8(U8 *x, U8 *y, int64_t kernelH, int64_t kernelW,
                                                    int64_t strideH, int64_t strideW, int64_t padH,
                                                    int64_t padW) {
  const int64_t p[6] = {kernelH, kernelW, strideH, strideW, padH, padW};
  std::vector<int64_t> key(p, p + 6);
  for (int64_t i = 0; i < 4; ++i)
    key.insert(key.end(), {x->sizes[i], x->strides[i], y->sizes[i], y->strides[i]});
  key.push_back(kiln::rt::dnnlApplyThreads());
  thread_local std::map<std::vector<int64_t>, std::optional<dnnl::pooling_forward>> cache;
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, create(x, y, p)).first;
  if (it->second) {
    kiln::rt::dnnlApplyThreads();
    thread_local dnnl::stream stream(kiln::rt::dnnlEngine());
    dnnl::engine &eng = kiln::rt::dnnlEngine();
    dnnl::memory src(u8Desc(x), eng, x->data + x->offset);
    dnnl::memory dst(u8Desc(y), eng, y->data + y->offset);
    it->second->execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    stream.wait();
    return;
  }
  reference(x, y, p);
}

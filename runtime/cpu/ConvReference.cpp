//===- ConvReference.cpp - kiln's own f32 convolution ----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements ConvReference.h: one dot product per output element over the
// strided operands, then the scale, shift and activation in the order the
// oneDNN primitive applies them (scale folded into the weights, shift as
// the bias, the activation as a post-op).
//===----------------------------------------------------------------------===//
#include "runtime/cpu/ConvReference.h"

#include <cmath>

namespace kiln::rt {

namespace {

/// The window sum of one output element (n, f, oh, ow).
float windowSum(const StridedMemRef<float, 4> *x, const StridedMemRef<float, 4> *w,
                const int64_t *p, int64_t n, int64_t f, int64_t oh, int64_t ow) {
  const int64_t *xs = x->sizes, *xt = x->strides, *ws = w->sizes, *wt = w->strides;
  int64_t cg = ws[1], g = f / (ws[0] / p[8]);
  const float *xd = x->data + x->offset + n * xt[0] + g * cg * xt[1];
  const float *wd = w->data + w->offset + f * wt[0];
  float acc = 0.0f;
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t kh = 0; kh < ws[2]; ++kh) {
      int64_t ih = oh * p[0] - p[4] + kh * p[2];
      if (ih < 0 || ih >= xs[2])
        continue;
      for (int64_t kw = 0; kw < ws[3]; ++kw) {
        int64_t iw = ow * p[1] - p[6] + kw * p[3];
        if (iw >= 0 && iw < xs[3])
          acc += xd[c * xt[1] + ih * xt[2] + iw * xt[3]] * wd[c * wt[1] + kh * wt[2] + kw * wt[3]];
      }
    }
  return acc;
}

} // namespace

void conv2dReference(const StridedMemRef<float, 4> *x, const StridedMemRef<float, 4> *w,
                     StridedMemRef<float, 4> *y, const int64_t *p, const float *scale,
                     const float *shift) {
  const int64_t *ys = y->sizes, *st = y->strides;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t f = 0; f < ys[1]; ++f)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          float v = convActivation(scale[f] * windowSum(x, w, p, n, f, oh, ow) + shift[f], p[9]);
          y->data[y->offset + n * st[0] + f * st[1] + oh * st[2] + ow * st[3]] = v;
        }
}

namespace {

float &at(const StridedMemRef<float, 4> *m, int64_t a, int64_t b, int64_t c, int64_t d) {
  const int64_t *t = m->strides;
  return m->data[m->offset + a * t[0] + b * t[1] + c * t[2] + d * t[3]];
}

void zero(StridedMemRef<float, 4> *m) {
  const int64_t *s = m->sizes;
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1]; ++b)
      for (int64_t c = 0; c < s[2]; ++c)
        for (int64_t d = 0; d < s[3]; ++d)
          at(m, a, b, c, d) = 0.0f;
}

/// Calls `fn(n, f, oh, ow, c, kh, kw, ih, iw)` for every product of the
/// convolution of an input of `in` sizes (c: the channel within f's group,
/// ih/iw inside the input).
template <typename Fn>
void forEachTap(const int64_t *in, const StridedMemRef<float, 4> *g, const int64_t *ws,
                const int64_t *p, Fn fn) {
  const int64_t *gs = g->sizes;
  for (int64_t n = 0; n < gs[0]; ++n)
    for (int64_t f = 0; f < gs[1]; ++f)
      for (int64_t oh = 0; oh < gs[2]; ++oh)
        for (int64_t ow = 0; ow < gs[3]; ++ow)
          for (int64_t c = 0; c < ws[1]; ++c)
            for (int64_t kh = 0; kh < ws[2]; ++kh) {
              int64_t ih = oh * p[0] - p[4] + kh * p[2];
              if (ih < 0 || ih >= in[2])
                continue;
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                int64_t iw = ow * p[1] - p[6] + kw * p[3];
                if (iw >= 0 && iw < in[3])
                  fn(n, f, oh, ow, c, kh, kw, ih, iw);
              }
            }
}

} // namespace

void conv2dBackwardDataReference(const StridedMemRef<float, 4> *g, const StridedMemRef<float, 4> *w,
                                 StridedMemRef<float, 4> *gx, const int64_t *p) {
  zero(gx);
  int64_t fg = w->sizes[0] / p[8], cg = w->sizes[1];
  forEachTap(gx->sizes, g, w->sizes, p,
             [&](int64_t n, int64_t f, int64_t oh, int64_t ow, int64_t c, int64_t kh, int64_t kw,
                 int64_t ih, int64_t iw) {
               at(gx, n, f / fg * cg + c, ih, iw) += at(g, n, f, oh, ow) * at(w, f, c, kh, kw);
             });
}

void conv2dBackwardWeightsReference(const StridedMemRef<float, 4> *x,
                                    const StridedMemRef<float, 4> *g, StridedMemRef<float, 4> *gw,
                                    const int64_t *p) {
  zero(gw);
  int64_t fg = gw->sizes[0] / p[8], cg = gw->sizes[1];
  forEachTap(x->sizes, g, gw->sizes, p,
             [&](int64_t n, int64_t f, int64_t oh, int64_t ow, int64_t c, int64_t kh, int64_t kw,
                 int64_t ih, int64_t iw) {
               at(gw, f, c, kh, kw) += at(g, n, f, oh, ow) * at(x, n, f / fg * cg + c, ih, iw);
             });
}

} // namespace kiln::rt

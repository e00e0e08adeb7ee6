//===- QConvReference.cpp - kiln's own int8 convolution --------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements QConvReference.h: one int32 dot product per output element
// over the NHWC input (the group's channels are contiguous), then the
// output scale, shift and activation in the order oneDNN applies them.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/QConvReference.h"
#include "runtime/cpu/ConvReference.h"

#include <cmath>

namespace kiln::rt {

namespace {

/// The window sum of one output element (n, f, oh, ow).
int32_t windowSum(const uint8_t *q, const int64_t *xs, int32_t zero, const int8_t *w,
                  const int64_t *ws, const int64_t *p, int64_t n, int64_t f, int64_t oh,
                  int64_t ow) {
  int64_t cg = ws[1], g = f / (ws[0] / p[8]);
  int32_t acc = 0;
  for (int64_t kh = 0; kh < ws[2]; ++kh) {
    int64_t ih = oh * p[0] - p[4] + kh * p[2];
    if (ih < 0 || ih >= xs[2])
      continue;
    for (int64_t kw = 0; kw < ws[3]; ++kw) {
      int64_t iw = ow * p[1] - p[6] + kw * p[3];
      if (iw < 0 || iw >= xs[3])
        continue;
      const uint8_t *row = q + ((n * xs[2] + ih) * xs[3] + iw) * xs[1] + g * cg;
      const int8_t *wk = w + f * cg * ws[2] * ws[3] + kh * ws[3] + kw;
      for (int64_t c = 0; c < cg; ++c)
        acc += (int32_t(row[c]) - zero) * int32_t(wk[c * ws[2] * ws[3]]);
    }
  }
  return acc;
}

} // namespace

void qconv2dReference(const uint8_t *q, const int64_t *xSizes, int32_t zero, const int8_t *w,
                      const int64_t *wSizes, StridedMemRef<float, 4> *y, const int64_t *p,
                      const float *outScales, const float *shifts) {
  const int64_t *ys = y->sizes, *st = y->strides;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t f = 0; f < ys[1]; ++f)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          int32_t acc = windowSum(q, xSizes, zero, w, wSizes, p, n, f, oh, ow);
          float v = convActivation(float(acc) * outScales[f] + shifts[f], p[9]);
          y->data[y->offset + n * st[0] + f * st[1] + oh * st[2] + ow * st[3]] = v;
        }
}

} // namespace kiln::rt

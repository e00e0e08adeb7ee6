//===- ConvReference.h - kiln's own f32 convolution ------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The f32 convolution of `_mlir_ciface_kiln_dnnl_conv2d_f32` (DnnlConv.h)
// computed by plain loops: the path DnnlConv.cpp takes when oneDNN cannot
// create (or run) the primitive of a shape, so such a convolution is slow,
// never a crash (as QConvReference.h for int8).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_CONVREFERENCE_H
#define KILN_RUNTIME_CPU_CONVREFERENCE_H

#include "runtime/MemRefDescriptor.h"

#include <cmath>
#include <cstdint>

namespace kiln::rt {

/// The activation oneDNN's post-op applies to an output element
/// (1: ReLU, 2: SiLU, else none): shared by both reference convolutions.
inline float convActivation(float v, int64_t activation) {
  if (activation == 1)
    return v > 0.0f ? v : 0.0f;
  if (activation == 2)
    return v / (1.0f + std::exp(-v));
  return v;
}

/// y[n, f, oh, ow] = act(scale[f] * acc + shift[f]) with acc the sum over
/// the window and the group's channels of x[n, c, ih, iw] * w[f, c, kh, kw]
/// (padding contributes nothing); x, w, y strided NCHW / [F, C/G, KH, KW];
/// p: strideH, strideW, dilationH, dilationW, padTop, padBottom, padLeft,
/// padRight, groups, activation (1: ReLU, 2: SiLU); scale and shift have F
/// values.
void conv2dReference(const StridedMemRef<float, 4> *x, const StridedMemRef<float, 4> *w,
                     StridedMemRef<float, 4> *y, const int64_t *p, const float *scale,
                     const float *shift);

/// The gradients of the convolution above (no scale, shift or activation)
/// for oneDNN's refused backward shapes (DnnlConvBwd.cpp): gx[N, C, H, W]
/// from g[N, F, OH, OW] and w, and gw[F, C/G, KH, KW] from x and g, both
/// overwritten; p: the first 9 parameters above (no activation).
void conv2dBackwardDataReference(const StridedMemRef<float, 4> *g, const StridedMemRef<float, 4> *w,
                                 StridedMemRef<float, 4> *gx, const int64_t *p);
void conv2dBackwardWeightsReference(const StridedMemRef<float, 4> *x,
                                    const StridedMemRef<float, 4> *g, StridedMemRef<float, 4> *gw,
                                    const int64_t *p);

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_CONVREFERENCE_H

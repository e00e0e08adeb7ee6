//===- QConvReference.h - kiln's own int8 convolution --------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The static int8 convolution computed by plain loops, with the arithmetic
// of `_mlir_ciface_kiln_dnnl_qconv2d_u8s8` (DnnlConv.h): the path
// DnnlQConv.cpp takes when oneDNN cannot create (or run) the int8 primitive
// of a shape, so such a convolution is slow, never a crash.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_QCONVREFERENCE_H
#define KILN_RUNTIME_CPU_QCONVREFERENCE_H

#include "runtime/MemRefDescriptor.h"

#include <cstdint>

namespace kiln::rt {

/// y[n, f, oh, ow] = act(outScales[f] * acc + shifts[f]) with
/// acc = sum over the window and the group's channels of
/// (q[n, ih, iw, c] - zero) * w[f, c, kh, kw] in int32; padding contributes
/// nothing (a real zero). q: dense NHWC u8 of logical sizes xSizes (NCHW);
/// w: dense [F, C / groups, KH, KW] int8; p: strideH, strideW, dilationH,
/// dilationW, padTop, padBottom, padLeft, padRight, groups, activation
/// (1: ReLU, 2: SiLU); outScales and shifts have F values.
void qconv2dReference(const uint8_t *q, const int64_t *xSizes, int32_t zero, const int8_t *w,
                      const int64_t *wSizes, StridedMemRef<float, 4> *y, const int64_t *p,
                      const float *outScales, const float *shifts);

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_QCONVREFERENCE_H

//===- DnnlConvBwd.h - oneDNN convolution backward called by JIT'd code -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The `_mlir_ciface_kiln_dnnl_conv2d_bwd_{data,weights}_f32` functions that
// kiln-cpu-convs-to-dnnl calls for the gradients of a convolution
// (kiln-autodiff's marked chains, ir/ConvGradMarks.h): oneDNN's
// backward-data and backward-weights primitives (Debian's libdnnl 2.6) on
// strided memref descriptors, any layout. Built only with oneDNN
// (KILN_HAVE_DNNL); DnnlConvNone.cpp has the counters' stubs.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_DNNLCONVBWD_H
#define KILN_RUNTIME_CPU_DNNLCONVBWD_H

#include "runtime/MemRefDescriptor.h"

#include <cstdint>
#include <utility>
#include <vector>

extern "C" {
/// gx[N, C, H, W] = the gradient of conv2d(x, w) for x, given the result
/// gradient g[N, F, OH, OW] and w[F, C / groups, KH, KW]: the forward's
/// strides, dilations (1: none), low/high paddings and groups. gx is
/// overwritten; it must not alias g or w.
void _mlir_ciface_kiln_dnnl_conv2d_bwd_data_f32(kiln::rt::StridedMemRef<float, 4> *g,
                                                kiln::rt::StridedMemRef<float, 4> *w,
                                                kiln::rt::StridedMemRef<float, 4> *gx,
                                                int64_t strideH, int64_t strideW, int64_t dilationH,
                                                int64_t dilationW, int64_t padTop,
                                                int64_t padBottom, int64_t padLeft,
                                                int64_t padRight, int64_t groups);
/// gw[F, C / groups, KH, KW] = the gradient of conv2d(x, w) for w, given
/// x[N, C, H, W] and g[N, F, OH, OW]; parameters as above.
void _mlir_ciface_kiln_dnnl_conv2d_bwd_weights_f32(
    kiln::rt::StridedMemRef<float, 4> *x, kiln::rt::StridedMemRef<float, 4> *g,
    kiln::rt::StridedMemRef<float, 4> *gw, int64_t strideH, int64_t strideW, int64_t dilationH,
    int64_t dilationW, int64_t padTop, int64_t padBottom, int64_t padLeft, int64_t padRight,
    int64_t groups);
/// Calls of the two functions above so far (all threads), -1 without oneDNN.
int64_t kilnDnnlConvBwdCalls();
/// Of those, the ones kiln's reference loops ran (refused shapes).
int64_t kilnDnnlConvBwdReferenceCalls();
/// Test hook: while `on` is nonzero, backward primitives created from now
/// on are refused as oneDNN refuses an unsupported shape.
void kilnDnnlConvBwdRefuse(int64_t on);
}

namespace kiln::rt {
/// (symbol name, address) of the two calls, for the JIT's symbol table.
std::vector<std::pair<const char *, void *>> dnnlConvBwdSymbols();
} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_DNNLCONVBWD_H

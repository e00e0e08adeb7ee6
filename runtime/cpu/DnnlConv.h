//===- DnnlConv.h - oneDNN convolutions called by JIT'd code ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The `_mlir_ciface_kiln_dnnl_conv2d_f32` function that
// `kiln-cpu-convs-to-dnnl` calls: a 2-D f32 convolution by oneDNN (Debian's
// libdnnl 2.6) on strided memref descriptors, with a per-channel affine
// epilogue (a folded bias / eval BatchNorm) and an optional ReLU or SiLU.
// Operands are described by their logical NCHW / FCHW dims and their
// strides, so one entry point takes NCHW and channels-last (NHWC) buffers;
// oneDNN picks its fastest kernel for the layout (brgconv on NHWC with
// AVX-512); 3x3 stride-1 convolutions with 14x14+ output positions whose
// weights are stamped (packed once: freezing) run oneDNN's Winograd
// F(2x2, 3x3) kernels instead, through blocked copies of their input and
// output. Built only when CMake finds oneDNN (KILN_HAVE_DNNL).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_DNNLCONV_H
#define KILN_RUNTIME_CPU_DNNLCONV_H

#include "runtime/MemRefDescriptor.h"

#include <cstdint>
#include <utility>
#include <vector>

extern "C" {
/// y[N, F, OH, OW] = conv2d(x[N, C, H, W], w[F, C / groups, KH, KW]) with
/// the given strides, dilations (1: none), low/high paddings (zeros) and
/// groups, times scale[F] plus shift[F] per output channel (scale is folded
/// into the packed weights), then ReLU (activation 1) or SiLU (2). Every
/// operand may have any
/// strides (NCHW or NHWC buffers); y must not alias x or w. The oneDNN
/// primitive of a shape is created once per thread and reused; the weights
/// are reordered to its layout once per weight tensor and version when the
/// frontend stamped them (WeightStamps.h), else on every call.
void _mlir_ciface_kiln_dnnl_conv2d_f32(kiln::rt::StridedMemRef<float, 4> *x,
                                       kiln::rt::StridedMemRef<float, 4> *w,
                                       kiln::rt::StridedMemRef<float, 4> *y,
                                       kiln::rt::StridedMemRef<float, 1> *scale,
                                       kiln::rt::StridedMemRef<float, 1> *shift, int64_t strideH,
                                       int64_t strideW, int64_t dilationH, int64_t dilationW,
                                       int64_t padTop, int64_t padBottom, int64_t padLeft,
                                       int64_t padRight, int64_t groups, int64_t activation);
/// The static int8 convolution (runtime/cpu/DnnlQConv.cpp): x quantized to
/// u8 as torch's quantize_per_tensor with `xScale` and `xZero`, w int8
/// values held in i32, acc = conv(q - xZero, w) in int32, then
/// y = act(xScale * scale[F] * acc + shift[F]); other operands as above.
void _mlir_ciface_kiln_dnnl_qconv2d_u8s8(
    kiln::rt::StridedMemRef<float, 4> *x, kiln::rt::StridedMemRef<int32_t, 4> *w,
    kiln::rt::StridedMemRef<float, 4> *y, kiln::rt::StridedMemRef<float, 1> *scale,
    kiln::rt::StridedMemRef<float, 1> *shift, int64_t strideH, int64_t strideW, int64_t dilationH,
    int64_t dilationW, int64_t padTop, int64_t padBottom, int64_t padLeft, int64_t padRight,
    int64_t groups, int64_t activation, float xScale, int64_t xZero);
/// The same with a u8 input (`_xu8`: the channels-last u8 output of the
/// previous int8 convolution, quantized with xScale / xZero, read in place),
/// and/or a u8 output (`_yu8`): y = clamp(round_half_even(act(...) / yScale)
/// + yZero, 0, 255), the next int8 convolution's input quantization.
void _mlir_ciface_kiln_dnnl_qconv2d_u8s8_xu8(
    kiln::rt::StridedMemRef<uint8_t, 4> *x, kiln::rt::StridedMemRef<int32_t, 4> *w,
    kiln::rt::StridedMemRef<float, 4> *y, kiln::rt::StridedMemRef<float, 1> *scale,
    kiln::rt::StridedMemRef<float, 1> *shift, int64_t strideH, int64_t strideW, int64_t dilationH,
    int64_t dilationW, int64_t padTop, int64_t padBottom, int64_t padLeft, int64_t padRight,
    int64_t groups, int64_t activation, float xScale, int64_t xZero);
void _mlir_ciface_kiln_dnnl_qconv2d_u8s8_yu8(
    kiln::rt::StridedMemRef<float, 4> *x, kiln::rt::StridedMemRef<int32_t, 4> *w,
    kiln::rt::StridedMemRef<uint8_t, 4> *y, kiln::rt::StridedMemRef<float, 1> *scale,
    kiln::rt::StridedMemRef<float, 1> *shift, int64_t strideH, int64_t strideW, int64_t dilationH,
    int64_t dilationW, int64_t padTop, int64_t padBottom, int64_t padLeft, int64_t padRight,
    int64_t groups, int64_t activation, float xScale, int64_t xZero, float yScale, int64_t yZero);
void _mlir_ciface_kiln_dnnl_qconv2d_u8s8_xu8_yu8(
    kiln::rt::StridedMemRef<uint8_t, 4> *x, kiln::rt::StridedMemRef<int32_t, 4> *w,
    kiln::rt::StridedMemRef<uint8_t, 4> *y, kiln::rt::StridedMemRef<float, 1> *scale,
    kiln::rt::StridedMemRef<float, 1> *shift, int64_t strideH, int64_t strideW, int64_t dilationH,
    int64_t dilationW, int64_t padTop, int64_t padBottom, int64_t padLeft, int64_t padRight,
    int64_t groups, int64_t activation, float xScale, int64_t xZero, float yScale, int64_t yZero);
/// Max pooling of u8 activations (DnnlPoolU8.cpp): logical NCHW views of
/// any strides, padding never the max; bottom / right padding from y's
/// size (ceil mode). Pooling commutes with quantization (it is monotonic).
void _mlir_ciface_kiln_dnnl_maxpool2d_u8(kiln::rt::StridedMemRef<uint8_t, 4> *x,
                                         kiln::rt::StridedMemRef<uint8_t, 4> *y, int64_t kernelH,
                                         int64_t kernelW, int64_t strideH, int64_t strideW,
                                         int64_t padH, int64_t padW);
/// int8 convolutions that wrote u8 outputs so far (all threads), -1
/// without oneDNN.
int64_t kilnDnnlQConvU8Outputs();
/// Test hook: while `on` is nonzero, int8 primitives created from now on
/// are refused as oneDNN refuses an unsupported shape (the reference path).
void kilnDnnlQConvRefuse(int64_t on);
/// int8 convolutions run by kiln's reference loops so far (all threads),
/// -1 without oneDNN.
int64_t kilnDnnlQConvReferenceCalls();
/// Test hook: while `on` is nonzero, an int8 convolution's first run keeps
/// the last of oneDNN's alternative implementations instead of the fastest.
void kilnDnnlQConvPickLast(int64_t on);
/// int8 convolutions that switched to one of oneDNN's alternative
/// implementations on their first run so far (all threads), -1 without oneDNN.
int64_t kilnDnnlQConvAlternativesPicked();
/// Calls of the shim above so far (all threads), or -1 when kiln was built
/// without oneDNN. For tests (through ctypes on kiln._C).
int64_t kilnDnnlConvCalls();
/// Test hook: while `on` is nonzero, f32 primitives created from now on
/// are refused as oneDNN refuses an unsupported shape (the reference path).
void kilnDnnlConvRefuse(int64_t on);
/// f32 convolutions run by kiln's reference loops so far (all threads),
/// -1 without oneDNN.
int64_t kilnDnnlConvReferenceCalls();
/// Test hook: while `on` is zero, every f32 convolution runs oneDNN's
/// direct kernels (no Winograd).
void kilnDnnlConvWinograd(int64_t on);
/// f32 convolutions run by oneDNN's Winograd kernels so far (all threads;
/// 3x3 stride-1 convolutions with at least 14x14 output positions on
/// stamped weights), -1 without oneDNN.
int64_t kilnDnnlWinogradCalls();
/// Bytes of packed weights cached now (stamped weights), -1 without oneDNN.
int64_t kilnDnnlPackedBytes();
/// Weight reorders run so far (cached or per call), -1 without oneDNN.
int64_t kilnDnnlWeightPacks();
}

namespace kiln::rt {
/// Whether kiln was built with oneDNN (the shim above exists).
bool haveDnnl();
/// (symbol name, address) of the oneDNN shims, for the JIT's symbol table
/// (empty without oneDNN).
std::vector<std::pair<const char *, void *>> dnnlShimSymbols();
/// The residual variants of the int8 convolution (`_ru8` / `_rf32` after
/// the `_xu8` / `_yu8` suffixes; DnnlQConv.cpp): the `_yu8` operands, then
/// a residual r of y's shape (u8 or f32), rScale and rZero:
/// y = act(xScale * scale[F] * acc + shift[F] + dequantize(r)), ReLU or
/// none. Their (name, address) pairs for the JIT's symbol map.
std::vector<std::pair<const char *, void *>> qconvResidualShimSymbols();
} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_DNNLCONV_H

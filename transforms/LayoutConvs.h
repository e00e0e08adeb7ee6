//===- LayoutConvs.h - channels-last forms of kiln.conv2d ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// For `kiln-layout` (Layout.cpp): the convolutions it can run on a
// channels-last (NHWC) input, written with primitive kiln ops that produce
// an NHWC result, so that the permutes around them cancel against their
// neighbours'.
//===----------------------------------------------------------------------===//
#ifndef KILN_TRANSFORMS_LAYOUTCONVS_H
#define KILN_TRANSFORMS_LAYOUTCONVS_H

#include "ir/KilnOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::kiln {

/// Whether `op` has a channels-last form here: static f32 shapes and
/// depthwise (groups == C == F) or, ungrouped, windows larger than 1x1
/// that tile the input (stride == kernel, no padding or dilation, the input
/// an exact multiple: a patchify stem or a ConvNeXt downsampling).
bool hasNhwcForm(Conv2dOp op);

/// `op` computed from `x`, its input permuted to [N, H, W, C]; returns the
/// [N, OH, OW, F] result (without `op`'s own bias: kiln.conv2d has none).
/// Depthwise: the weighted sum of the kernel taps (strided slices of the
/// zero-padded input) with [C] weight rows, vectorizable along C; tiling
/// windows: one `kiln.matmul` of [N*OH*OW, C*KH*KW] columns with the
/// transposed [F, C*KH*KW] weight (the weight read as it is).
/// Whether `op` (hasNhwcForm) is a tiling (not depthwise) convolution.
bool isTiling(Conv2dOp op);

Value buildNhwcConv(OpBuilder &b, Location loc, Conv2dOp op, Value x);

} // namespace mlir::kiln

#endif // KILN_TRANSFORMS_LAYOUTCONVS_H

//===- DnnlConvEpilogue.h - per-channel affine + activation after a conv -===//
// SPDX-License-Identifier: Apache-2.0
//
// For kiln-cpu-convs-to-dnnl (ConvsToDnnl.cpp): the chain of ops after a
// `kiln.conv2d` that the oneDNN call absorbs: per-output-channel
// multiplies, adds and subtracts by tensors that do not depend on the
// convolution (a conv bias, an eval-mode BatchNorm as the frontend captures
// it: `(y - mean) * rsqrt(var + eps) * weight + bias`), then a ReLU or
// SiLU. The chain folds into y' = act(scale * conv(x, w) + shift) with
// `scale` and `shift` computed as [F] tensors by kiln ops (F elements per
// call); the shim scales the weights by `scale` when it packs them (the
// BatchNorm is folded into the packed weights) and adds `shift` as oneDNN's
// bias. A training-mode BatchNorm normalizes with statistics of the
// convolution's own output, so it never matches. With `residual` (int8
// convolutions), one kiln.add of a full tensor of the result's type that
// does not depend on the convolution (a bottleneck's identity) may follow
// the per-channel ops, then only a ReLU: y' = relu(scale * conv + shift + r).
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_DNNLCONVEPILOGUE_H
#define KILN_CODEGEN_CPU_DNNLCONVEPILOGUE_H

#include "ir/KilnOps.h"

namespace mlir::kiln {

struct ConvEpilogue {
  /// The ops absorbed, in order (their results are replaced by the call's).
  SmallVector<Operation *> ops;
  /// 0: none, 1: ReLU, 2: SiLU (the shim's activation codes).
  int64_t activation = 0;
  /// The value the call's result replaces: the last absorbed op's result,
  /// or the convolution's.
  Value replaced;
  /// The residual add among `ops` and its other operand (null: none).
  Operation *residualAdd = nullptr;
  Value residual;
};

/// The epilogue of `conv` (only ops of the same block, each the single user
/// of the previous value); a residual add only when `residual`.
ConvEpilogue matchConvEpilogue(Conv2dOp conv, bool residual = false);

/// [F] tensors `scale` and `shift` of the matched chain, built at `b`'s
/// insertion point (which must follow every absorbed op's operands).
std::pair<Value, Value> buildScaleShift(OpBuilder &b, Location loc, Conv2dOp conv,
                                        const ConvEpilogue &epilogue);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_DNNLCONVEPILOGUE_H

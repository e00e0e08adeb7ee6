//===- ConvGradMarks.h - marks on a convolution's gradient chains -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The discardable attributes with which kiln-autodiff's conv2d rule
// (transforms/autodiff/NNGrads.cpp) marks the two gradients it emits, so
// that kiln-cpu-convs-to-dnnl (codegen/cpu/ConvGradsToDnnl.cpp) can hand
// each to one oneDNN backward primitive instead of its decomposition:
//
//   %gs = kiln.cast %g {kiln.conv_grad_source = "g"}   // identity casts:
//   %ws = kiln.cast %w {kiln.conv_grad_source = "w"}   // the chain's sources
//   ... spread / transposed weight / im2col columns from %gs, %ws, %xs ...
//   %gx = kiln.conv2d ... {kiln.conv_grad_data = array<i64: params>}
//   %gw = kiln.matmul ... {kiln.conv_grad_weights = array<i64: params>}
//
// params: the forward convolution's strideH, strideW, dilationH, dilationW,
// padTop, padBottom, padLeft, padRight, groups, then its kernel's KH, KW. The marked IR is the
// reference: without the rewrite the casts fold away (identity) and the
// chains compute the gradients as they are.
//===----------------------------------------------------------------------===//
#ifndef KILN_IR_CONVGRADMARKS_H
#define KILN_IR_CONVGRADMARKS_H

#include "ir/KilnOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::kiln {

constexpr const char *kConvGradSourceAttr = "kiln.conv_grad_source";
constexpr const char *kConvGradDataAttr = "kiln.conv_grad_data";
constexpr const char *kConvGradWeightsAttr = "kiln.conv_grad_weights";
constexpr const char *kConvGradG = "g"; ///< the result gradient [N, F, OH, OW]
constexpr const char *kConvGradW = "w"; ///< the weight [F, C/G, KH, KW]
constexpr const char *kConvGradX = "x"; ///< the input [N, C, H, W]

/// `v` behind an identity kiln.cast marked as the source `role`.
inline Value markConvGradSource(OpBuilder &b, Location loc, Value v, StringRef role) {
  auto cast = b.create<CastOp>(loc, v.getType(), v);
  cast->setAttr(kConvGradSourceAttr, b.getStringAttr(role));
  return cast;
}

/// Marks `root` as the gradient (`attr`: data or weights) of `conv`.
inline void markConvGradRoot(Operation *root, StringRef attr, Conv2dOp conv) {
  SmallVector<int64_t> params(conv.getStride());
  llvm::append_range(params, conv.getDilation());
  llvm::append_range(params, conv.getPadding());
  params.push_back(static_cast<int64_t>(conv.getGroups()));
  auto w = cast<RankedTensorType>(conv.getWeight().getType());
  params.append({w.getDimSize(2), w.getDimSize(3)});
  root->setAttr(attr, DenseI64ArrayAttr::get(root->getContext(), params));
}

} // namespace mlir::kiln

#endif // KILN_IR_CONVGRADMARKS_H

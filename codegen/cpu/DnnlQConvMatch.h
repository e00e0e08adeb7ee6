//===- DnnlQConvMatch.h - int8 convolutions for kiln-cpu-convs-to-dnnl ---===//
// SPDX-License-Identifier: Apache-2.0
//
// For kiln-cpu-convs-to-dnnl (ConvsToDnnl.cpp): what a statically quantized
// kiln.conv2d looks like (kiln.quant's capture: `dequantize(quantize_static
// (x))` or `dequantize(permute(u8 NHWC))` as the input, `dequantize(w_i32,
// s[F,1,1,1])` as the weight), and when an int8 convolution's result may be
// written as u8 for its consumers: every user is either the quantize_static
// of int8 convolutions' inputs (one scale and zero point) or the residual
// add another int8 convolution absorbs (DnnlConvEpilogue.h). Such an add
// then reads the block output as the consumers do, dequantized from u8 (as
// PT2E's X86InductorQuantizer quantizes a residual's input).
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_DNNLQCONVMATCH_H
#define KILN_CODEGEN_CPU_DNNLQCONVMATCH_H

#include "ir/KilnOps.h"
#include "ir/KilnQuantOps.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::kiln {

/// A statically quantized convolution's parts: its input (the f32 value
/// quantize_static reads, or `xU8`: the NHWC u8 result of an earlier int8
/// call), that quantization's scale and zero point, and the weight's
/// dequantize.
struct QuantConv {
  Value x;
  bool xU8;
  FloatAttr scale;
  IntegerAttr zero;
  DequantizeOp weight;
};

/// Whether `op` goes to oneDNN: static f32 shapes.
bool qualifies(Conv2dOp op);

/// Whether `v` is the permute of an NHWC tensor back to NCHW.
PermuteOp toNchw(Value v);

/// `dequantize(permute(u8 NHWC), splat scale)`: (the NHWC u8 value, scale).
std::optional<std::pair<Value, FloatAttr>> u8Input(Value v);

std::optional<QuantConv> matchQuantConv(Conv2dOp op);

/// The residual adds that int8 convolutions absorb, each with its
/// convolution (computed before any rewrite).
using ResidualAdds = llvm::DenseMap<Operation *, Conv2dOp>;
ResidualAdds findResidualAdds(ArrayRef<Conv2dOp> convs);

/// The quantize_static users of `v` when `v` may be written as u8 (the
/// file comment; at least one); `adds` gets its residual-add users. Empty
/// otherwise.
SmallVector<QuantizeStaticOp> u8Consumers(Value v, const ResidualAdds &residuals,
                                          SmallVectorImpl<Operation *> &adds);

/// Makes each residual add of `adds` read `u8` (the NCHW permute of the
/// u8 result replacing `v`) dequantized with `q`'s scale and zero point.
void readResidualAsU8(ArrayRef<Operation *> adds, Value v, Value u8, QuantizeStaticOp q);

/// Erases `v`'s defining op and then its operands' when they are dead q/dq ops.
void eraseDeadQuant(Value v);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_DNNLQCONVMATCH_H

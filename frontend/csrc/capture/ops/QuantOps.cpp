//===- QuantOps.cpp - kiln.quant's quantized linear layers -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Captures `kiln.quant._ops.linear_int8`, the forward of the layers
// `kiln.quant.prepare` installs, as kiln's q/dq representation
// (ir/KilnQuantOps.td, docs/quantization.md): the int32-viewed int8 weight
// through kiln.int8_view, dequantized per output channel and transposed;
// the input dynamically quantized and dequantized (unless weight-only), or
// (`linear_static_int8`) statically through kiln.quantize_static with the
// calibrated scale and zero point as attributes; a kiln.matmul and the bias
// add. kiln-fold-quant turns the pattern into one
// kiln.qlinear. Arguments kiln.quant never produces are Unsupported (the
// layer then runs its eager reference, with the reason logged).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "ir/KilnQuantOps.h"

#include <cmath>

namespace kiln {

using namespace mlir::kiln;

namespace {

/// Checks the operand types kiln.quant produces; Unsupported otherwise.
void checkOperands(Value x, Value words, Value scale, Value bias) {
  auto xt = ttype(x), wt = ttype(words), st = ttype(scale);
  if (!xt.getElementType().isF32() || xt.getRank() < 1)
    throw Unsupported("kiln.quant linear_int8: the input must be a float32 tensor");
  if (!wt.getElementType().isInteger(32) || wt.getRank() != 2 || !wt.hasStaticShape())
    throw Unsupported("kiln.quant linear_int8: qweight must be int8 values viewed as a 2-D int32 "
                      "tensor");
  int64_t n = wt.getDimSize(0), k = xt.getShape().back();
  if (!mlir::ShapedType::isDynamic(k) && k != 4 * wt.getDimSize(1))
    throw Unsupported("kiln.quant linear_int8: the input's last dim differs from the weight's K");
  if (!st.getElementType().isF32() || st.getShape() != llvm::ArrayRef<int64_t>{n, 1})
    throw Unsupported("kiln.quant linear_int8: weight_scale must be float32 [N, 1]");
  if (bias && (!ttype(bias).getElementType().isF32() ||
               ttype(bias).getShape() != llvm::ArrayRef<int64_t>{n}))
    throw Unsupported("kiln.quant linear_int8: bias must be float32 [N]");
}

/// The captured layer around `lhsOf(x)`, the (quantized, dequantized) input.
template <typename LhsFn>
VarP emitLinear(Interpreter &I, Value x, Args &a, const std::string &op, LhsFn lhsOf) {
  Value words = tensorArg(a.get("qweight"), op);
  Value scale = tensorArg(a.get("weight_scale"), op);
  Value bias = a.isNone("bias") ? Value() : tensorArg(a.get("bias"), op);
  checkOperands(x, words, scale, bias);
  Emit e(I);
  mlir::Location loc = I.loc();
  int64_t rank = ttype(x).getRank();
  if (rank == 1)
    x = e.reshape(x, {1, ttype(x).getDimSize(0)});
  Value w = e.b.create<Int8ViewOp>(loc, words);
  Value wt = e.permute(e.b.create<DequantizeOp>(loc, w, scale), {1, 0});
  Value r = e.inferred<MatmulOp>({lhsOf(e, x), wt});
  if (bias)
    r = e.bin<AddOp>(r, bias);
  if (rank == 1)
    r = e.reshape(r, {ttype(r).getDimSize(1)});
  return T(r);
}

VarP linearInt8(Interpreter &I, const std::string &op, Args &a) {
  Value x = tensorArg(inputArg(a, op), op);
  std::string act = strArg(a, "activations", "per_token");
  if (act != "per_token" && act != "per_tensor" && act != "none")
    throw Unsupported("kiln.quant linear_int8: activations \"" + act + "\"");
  return emitLinear(I, x, a, op, [&](Emit &e, Value in) -> Value {
    if (act == "none")
      return in;
    auto q = e.b.create<QuantizeOp>(I.loc(), in, e.b.getStringAttr(act));
    return e.b.create<DequantizeOp>(I.loc(), q.getResult(), q.getScale());
  });
}

/// `linear_static_int8`: the input quantized with its calibrated uint8
/// scale and zero point (Python numbers, specialized as attributes).
VarP linearStaticInt8(Interpreter &I, const std::string &op, Args &a) {
  Value x = tensorArg(inputArg(a, op), op);
  double scale = floatArg(a, "input_scale", 0.0);
  int64_t zero = intArg(a, "input_zero_point", -1);
  if (!(scale > 0.0) || !std::isfinite(scale) || zero < 0 || zero > 255)
    throw Unsupported("kiln.quant linear_static_int8: input_scale must be positive and finite and "
                      "input_zero_point in [0, 255]");
  return emitLinear(I, x, a, op, [&](Emit &e, Value in) -> Value {
    mlir::Location loc = I.loc();
    auto scaleAttr = e.b.getF32FloatAttr(float(scale));
    auto zeroAttr = e.b.getI64IntegerAttr(zero);
    Value q = e.b.create<QuantizeStaticOp>(loc, in, scaleAttr, zeroAttr);
    auto one = mlir::RankedTensorType::get(llvm::SmallVector<int64_t>(ttype(in).getRank(), 1),
                                           e.b.getF32Type());
    Value s = e.b.create<ConstantOp>(
        loc, mlir::cast<mlir::ElementsAttr>(mlir::DenseElementsAttr::get(one, float(scale))));
    return e.b.create<DequantizeOp>(loc, q, s, zeroAttr);
  });
}

} // namespace

void registerQuantOps(OpRegistry &r) {
  r.op("quant_linear_int8", linearInt8,
       Params{"input", "qweight", "weight_scale", "bias", "activations"})
      .function("kiln.quant._ops", "linear_int8");
  r.op("quant_linear_static_int8", linearStaticInt8,
       Params{"input", "qweight", "weight_scale", "bias", "input_scale", "input_zero_point"})
      .function("kiln.quant._ops", "linear_static_int8");
}

} // namespace kiln

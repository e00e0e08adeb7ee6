//===- QuantOps.cpp - kiln.quant's quantized layers -------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Captures `kiln.quant._ops.linear_int8`, the forward of the layers
// `kiln.quant.prepare` installs, as kiln's q/dq representation
// (ir/KilnQuantOps.td, docs/quantization.md): the int32-viewed int8 weight
// through kiln.int8_view, dequantized per output channel and transposed;
// the input dynamically quantized and dequantized (unless weight-only), or
// (`linear_static_int8`) statically through kiln.quantize_static with the
// calibrated scale and zero point as attributes; a kiln.matmul and the bias
// add. kiln-fold-quant turns the pattern into one kiln.qlinear.
// `linear_fp8` (fp8 layers) is one kiln.qlinear on kiln.fp8_view words, in
// CUDA graphs only. `linear_int4` (weight_only_int4 layers) reads packed int4 words through
// kiln.int4_view and dequantizes them per group of K.
// `conv2d_static_int8` (static int8 Conv2d layers) is the same q/dq around a
// kiln.conv2d, run as oneDNN's int8 convolution (codegen/cpu/ConvsToDnnl.cpp).
// `quantize_dequantize_static` (the requantizations of models from_pt2e /
// from_torch_ao rewrite) is the q/dq pair alone; a static layer whose input
// already is such a pair with its scale and zero point reuses it.
// Arguments kiln.quant never produces are Unsupported (the
// layer then runs its eager reference, with the reason logged).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "capture/interp/CaptureTimeCalls.h"
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

/// A kiln.quant layer on `x` (a 1-D input taken as one row): its qweight
/// words, weight_scale and bias, checked, given to `build(e, rows, words,
/// scale, bias)`, which captures the layer on the [..., K] rows.
template <typename BuildFn>
VarP emitLayer(Interpreter &I, Value x, Args &a, const std::string &op, BuildFn build) {
  Value words = tensorArg(a.get("qweight"), op);
  Value scale = tensorArg(a.get("weight_scale"), op);
  Value bias = a.isNone("bias") ? Value() : tensorArg(a.get("bias"), op);
  checkOperands(x, words, scale, bias);
  Emit e(I);
  int64_t rank = ttype(x).getRank();
  if (rank == 1)
    x = e.reshape(x, {1, ttype(x).getDimSize(0)});
  Value r = build(e, x, words, scale, bias);
  if (rank == 1)
    r = e.reshape(r, {ttype(r).getDimSize(1)});
  return T(r);
}

/// The captured int8 layer around `lhsOf(x)`, the (quantized, dequantized) input.
template <typename LhsFn>
VarP emitLinear(Interpreter &I, Value x, Args &a, const std::string &op, LhsFn lhsOf) {
  return emitLayer(I, x, a, op, [&](Emit &e, Value rows, Value words, Value scale, Value bias) {
    Value w = e.b.create<Int8ViewOp>(I.loc(), words);
    Value wt = e.permute(e.b.create<DequantizeOp>(I.loc(), w, scale), {1, 0});
    Value r = e.inferred<MatmulOp>({lhsOf(e, rows), wt});
    return bias ? e.bin<AddOp>(r, bias) : r;
  });
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

/// `linear_fp8` (kiln.quant.fp8() layers): one kiln.qlinear whose weight
/// is read through kiln.fp8_view (no q/dq form: only CUDA's fp8 GEMM runs
/// it). In a CPU graph it is Unsupported: the layer runs its eager
/// reference, the rest of the graph stays compiled.
VarP linearFp8(Interpreter &I, const std::string &op, Args &a) {
  Value x = tensorArg(inputArg(a, op), op);
  std::optional<int> device = CaptureTimeCalls::graphDevice(I);
  if (!device || *device == TensorMeta::kCpuDevice)
    throw Unsupported(op + ": fp8 layers have no CPU kernel (they compile for CUDA); the "
                           "eager reference runs");
  std::string act = strArg(a, "activations", "per_token");
  if (act != "per_token" && act != "per_tensor")
    throw Unsupported(op + ": activations \"" + act + "\"");
  return emitLayer(I, x, a, op, [&](Emit &e, Value rows, Value words, Value scale, Value bias) {
    Value w = e.b.create<Fp8ViewOp>(I.loc(), words);
    return e.b
        .create<QLinearOp>(I.loc(), rows, w, scale, bias, e.b.getStringAttr(act), mlir::FloatAttr(),
                           mlir::IntegerAttr(), mlir::IntegerAttr())
        .getResult();
  });
}

/// `linear_int4`: x @ dequantize(int4 weight, one scale per group of K)^T +
/// bias. The int32 words [N, K / 8] are read through kiln.int4_view as
/// [N, K] values, split into [N, K / g, g] groups, dequantized by the [N,
/// K / g, 1] scales and merged back, which kiln-fold-quant turns into a
/// grouped weight-only kiln.qlinear.
VarP linearInt4(Interpreter &I, const std::string &op, Args &a) {
  Value x = tensorArg(inputArg(a, op), op);
  Value words = tensorArg(a.get("qweight"), op);
  Value scale = tensorArg(a.get("weight_scale"), op);
  Value bias = a.isNone("bias") ? Value() : tensorArg(a.get("bias"), op);
  int64_t group = intArg(a, "group_size", 0);
  auto xt = ttype(x), wt = ttype(words), st = ttype(scale);
  if (!xt.getElementType().isF32() || xt.getRank() < 1)
    throw Unsupported(op + ": the input must be a float32 tensor");
  if (!wt.getElementType().isInteger(32) || wt.getRank() != 2 || !wt.hasStaticShape())
    throw Unsupported(op + ": qweight must be int4 values packed in a 2-D int32 tensor");
  int64_t n = wt.getDimSize(0), k = 8 * wt.getDimSize(1);
  if (group <= 0 || group % 32 || k % group)
    throw Unsupported(op + ": group_size must be a multiple of 32 dividing K");
  if (xt.getShape().back() != k)
    throw Unsupported(op + ": the input's last dim differs from the weight's K");
  if (!st.getElementType().isF32() || st.getShape() != llvm::ArrayRef<int64_t>{n, k / group})
    throw Unsupported(op + ": weight_scale must be float32 [N, K / group_size]");
  if (bias && (!ttype(bias).getElementType().isF32() ||
               ttype(bias).getShape() != llvm::ArrayRef<int64_t>{n}))
    throw Unsupported(op + ": bias must be float32 [N]");
  Emit e(I);
  mlir::Location loc = I.loc();
  int64_t rank = xt.getRank();
  if (rank == 1)
    x = e.reshape(x, {1, k});
  Value w = e.reshape(e.b.create<Int4ViewOp>(loc, words), {n, k / group, group});
  Value wd = e.b.create<DequantizeOp>(loc, w, e.reshape(scale, {n, k / group, 1}));
  Value r = e.inferred<MatmulOp>({x, e.permute(e.reshape(wd, {n, k}), {1, 0})});
  if (bias)
    r = e.bin<AddOp>(r, bias);
  if (rank == 1)
    r = e.reshape(r, {n});
  return T(r);
}

/// The calibrated scale and zero point of a static layer's input (the
/// arguments `input_scale`, `input_zero_point`; `prefix` "" for a plain
/// quantize-dequantize's `scale`, `zero_point`).
std::pair<double, int64_t> staticParams(Args &a, const std::string &op,
                                        const std::string &prefix = "input_") {
  double scale = floatArg(a, (prefix + "scale").c_str(), 0.0);
  int64_t zero = intArg(a, (prefix + "zero_point").c_str(), -1);
  if (!(scale > 0.0) || !std::isfinite(scale) || zero < 0 || zero > 255)
    throw Unsupported(op + ": " + prefix + "scale must be positive and finite and " + prefix +
                      "zero_point in [0, 255]");
  return {scale, zero};
}

/// Whether `x` is dequantize(quantize_static(y)) with this scale and zero
/// point: quantizing it again gives the same uint8 values, since
/// (q - zp) * s * (1 / s) is within 2^-15 of the integer q - zp.
bool isStaticQdq(Value x, float scale, int64_t zero) {
  QuantizeStaticOp q = staticallyQuantized(x);
  return q && q.getZeroPoint() == zero && q.getScale().convertToFloat() == scale;
}

/// dequantize(quantize_static(x)) with the calibrated scale and zero point;
/// `x` itself when it already is that pair's result (a layer after a
/// requantization to its own input scale: PT2E's and torch.ao's models).
Value staticQdq(Emit &e, mlir::Location loc, Value x, double scale, int64_t zero) {
  if (isStaticQdq(x, float(scale), zero))
    return x;
  auto scaleAttr = e.b.getF32FloatAttr(float(scale));
  auto zeroAttr = e.b.getI64IntegerAttr(zero);
  Value q = e.b.create<QuantizeStaticOp>(loc, x, scaleAttr, zeroAttr);
  auto one = mlir::RankedTensorType::get(llvm::SmallVector<int64_t>(ttype(x).getRank(), 1),
                                         e.b.getF32Type());
  Value s = e.b.create<ConstantOp>(
      loc, mlir::cast<mlir::ElementsAttr>(mlir::DenseElementsAttr::get(one, float(scale))));
  return e.b.create<DequantizeOp>(loc, q, s, zeroAttr);
}

/// `linear_static_int8`: the input quantized with its calibrated uint8
/// scale and zero point (Python numbers, specialized as attributes).
VarP linearStaticInt8(Interpreter &I, const std::string &op, Args &a) {
  Value x = tensorArg(inputArg(a, op), op);
  auto [scale, zero] = staticParams(a, op);
  return emitLinear(I, x, a, op,
                    [&](Emit &e, Value in) { return staticQdq(e, I.loc(), in, scale, zero); });
}

/// `conv2d_static_int8`: conv2d(dq(q_static(x)), dq(w_i32, s[F,1,1,1])) + bias,
/// which kiln-cpu-convs-to-dnnl runs as oneDNN's u8 x s8 convolution.
VarP conv2dStaticInt8(Interpreter &I, const std::string &op, Args &a) {
  Value x = tensorArg(inputArg(a, op), op);
  Value w = tensorArg(a.get("qweight"), op);
  Value ws = tensorArg(a.get("weight_scale"), op);
  auto xt = ttype(x), wt = ttype(w);
  if (!xt.getElementType().isF32() || xt.getRank() != 4)
    throw Unsupported(op + ": the input must be a 4-D float32 tensor");
  if (!wt.getElementType().isInteger(32) || wt.getRank() != 4 || !wt.hasStaticShape())
    throw Unsupported(op + ": qweight must be int8 values held in a 4-D int32 tensor");
  int64_t f = wt.getDimSize(0);
  if (!ttype(ws).getElementType().isF32() ||
      ttype(ws).getShape() != llvm::ArrayRef<int64_t>{f, 1, 1, 1})
    throw Unsupported(op + ": weight_scale must be float32 [F, 1, 1, 1]");
  std::vector<int64_t> stride = asInts(a.get("stride"), "stride");
  std::vector<int64_t> pad = asInts(a.get("padding"), "padding");
  std::vector<int64_t> dilation = asInts(a.get("dilation"), "dilation");
  if (stride.size() != 2 || pad.size() != 2 || dilation.size() != 2)
    throw Unsupported(op + ": stride, padding and dilation must be pairs");
  auto [scale, zero] = staticParams(a, op);
  Emit e(I);
  mlir::Location loc = I.loc();
  Value xd = staticQdq(e, loc, x, scale, zero);
  Value wd = e.b.create<DequantizeOp>(loc, w, ws);
  std::vector<int64_t> pad4 = {pad[0], pad[0], pad[1], pad[1]};
  auto attrs = {e.b.getNamedAttr("stride", e.b.getDenseI64ArrayAttr(stride)),
                e.b.getNamedAttr("padding", e.b.getDenseI64ArrayAttr(pad4)),
                e.b.getNamedAttr("dilation", e.b.getDenseI64ArrayAttr(dilation)),
                e.b.getNamedAttr("groups", e.b.getI64IntegerAttr(intArg(a, "groups", 1)))};
  Value r = e.checked<Conv2dOp>({xd, wd}, attrs, op);
  if (!a.isNone("bias")) {
    Value b = tensorArg(a.get("bias"), op);
    if (!ttype(b).getElementType().isF32() || ttype(b).getShape() != llvm::ArrayRef<int64_t>{f})
      throw Unsupported(op + ": bias must be float32 [F]");
    r = e.bin<AddOp>(r, e.reshape(b, {f, 1, 1}));
  }
  return T(r);
}

/// `quantize_dequantize_static`: the float values of static uint8
/// activations, dequantize(quantize_static(x)).
VarP quantizeDequantizeStatic(Interpreter &I, const std::string &op, Args &a) {
  Value x = tensorArg(inputArg(a, op), op);
  if (!ttype(x).getElementType().isF32())
    throw Unsupported(op + ": the input must be a float32 tensor");
  auto [scale, zero] = staticParams(a, op, "");
  Emit e(I);
  return T(staticQdq(e, I.loc(), x, scale, zero));
}

} // namespace

void registerQuantOps(OpRegistry &r) {
  r.op("quant_quantize_dequantize_static", quantizeDequantizeStatic,
       Params{"input", "scale", "zero_point"})
      .function("kiln.quant._ops", "quantize_dequantize_static");
  r.op("quant_linear_int8", linearInt8,
       Params{"input", "qweight", "weight_scale", "bias", "activations"})
      .function("kiln.quant._ops", "linear_int8");
  r.op("quant_linear_fp8", linearFp8,
       Params{"input", "qweight", "weight_scale", "bias", "activations"})
      .function("kiln.quant._ops", "linear_fp8");
  r.op("quant_linear_int4", linearInt4,
       Params{"input", "qweight", "weight_scale", "bias", "group_size"})
      .function("kiln.quant._ops", "linear_int4");
  r.op("quant_linear_static_int8", linearStaticInt8,
       Params{"input", "qweight", "weight_scale", "bias", "input_scale", "input_zero_point"})
      .function("kiln.quant._ops", "linear_static_int8");
  r.op("quant_conv2d_static_int8", conv2dStaticInt8,
       Params{"input", "qweight", "weight_scale", "bias", "stride", "padding", "dilation", "groups",
              "input_scale", "input_zero_point"})
      .function("kiln.quant._ops", "conv2d_static_int8");
}

} // namespace kiln

//===- KilnQuantOps.cpp - shape inference of the quantization ops -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Result-type inference (which also checks operands and attributes) of
// kiln.quantize, kiln.quantize_static, kiln.dequantize, kiln.int8_view and kiln.qlinear (the
// dialect registers them in KilnDialect.cpp). Each diagnostic has a case in
// test/ir/invalid-quant.mlir.
//===----------------------------------------------------------------------===//
#include "ir/KilnQuantOps.h"
#include "ir/KilnOps.h"
#include "ir/ShapeUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;

namespace {

RankedTensorType rankedOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

bool isGranularity(StringRef g) { return g == "per_token" || g == "per_tensor"; }

/// A static activation scale must be positive and finite, its uint8 zero
/// point in [0, 255].
LogicalResult checkStaticParams(std::optional<Location> loc, FloatAttr scale, IntegerAttr zero) {
  if (!scale || !zero)
    return emitOptionalError(loc, "static activations need a scale and a zero point");
  double s = scale.getValueAsDouble();
  if (!(s > 0.0) || !std::isfinite(s))
    return emitOptionalError(loc, "static scale must be positive and finite, got ", s);
  if (zero.getInt() < 0 || zero.getInt() > 255)
    return emitOptionalError(loc, "static zero point must be in [0, 255], got ", zero.getInt());
  return success();
}

} // namespace

LogicalResult QuantizeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                           ValueRange operands, DictionaryAttr attrs,
                                           OpaqueProperties props, RegionRange regions,
                                           SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto in = rankedOf(adaptor.getInput());
  StringRef g = adaptor.getGranularity();
  if (!isGranularity(g))
    return emitOptionalError(loc, "granularity must be \"per_token\" or \"per_tensor\", got \"", g,
                             "\"");
  if (g == "per_token" && in.getRank() == 0)
    return emitOptionalError(loc, "per_token quantization needs rank >= 1");
  SmallVector<int64_t> scale(in.getShape());
  if (g == "per_tensor")
    std::fill(scale.begin(), scale.end(), 1);
  else
    scale.back() = 1;
  inferred.push_back(in.clone(IntegerType::get(ctx, 8)));
  inferred.push_back(RankedTensorType::get(scale, Float32Type::get(ctx)));
  return success();
}

LogicalResult QuantizeStaticOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                                 ValueRange operands, DictionaryAttr attrs,
                                                 OpaqueProperties props, RegionRange regions,
                                                 SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attrs, props, regions);
  if (LogicalResult ok = checkStaticParams(loc, adaptor.getScaleAttr(), adaptor.getZeroPointAttr());
      failed(ok))
    return ok;
  inferred.push_back(
      rankedOf(adaptor.getInput()).clone(IntegerType::get(ctx, 8, IntegerType::Unsigned)));
  return success();
}

LogicalResult DequantizeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                             ValueRange operands, DictionaryAttr, OpaqueProperties,
                                             RegionRange, SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(operands[0]);
  auto scale = rankedOf(operands[1]);
  if (!isBroadcastableTo(scale.getShape(), in.getShape()))
    return emitOptionalError(loc, "scale ", scale, " does not broadcast to ", in);
  inferred.push_back(in.clone(Float32Type::get(ctx)));
  return success();
}

LogicalResult Int8ViewOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                           ValueRange operands, DictionaryAttr, OpaqueProperties,
                                           RegionRange, SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(operands[0]);
  if (in.getRank() == 0)
    return emitOptionalError(loc, "int8_view needs rank >= 1");
  SmallVector<int64_t> shape(in.getShape());
  if (!ShapedType::isDynamic(shape.back()))
    shape.back() *= 4;
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 8)));
  return success();
}

LogicalResult Fp8ViewOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                          ValueRange operands, DictionaryAttr, OpaqueProperties,
                                          RegionRange, SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(operands[0]);
  if (in.getRank() == 0)
    return emitOptionalError(loc, "fp8_view needs rank >= 1");
  SmallVector<int64_t> shape(in.getShape());
  if (!ShapedType::isDynamic(shape.back()))
    shape.back() *= 4;
  inferred.push_back(RankedTensorType::get(shape, Float8E4M3FNType::get(ctx)));
  return success();
}

LogicalResult Int4ViewOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                           ValueRange operands, DictionaryAttr, OpaqueProperties,
                                           RegionRange, SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(operands[0]);
  if (in.getRank() == 0)
    return emitOptionalError(loc, "int4_view needs rank >= 1");
  SmallVector<int64_t> shape(in.getShape());
  if (!ShapedType::isDynamic(shape.back())) {
    if (shape.back() % 4)
      return emitOptionalError(loc, "int4_view needs a multiple of 4 words (32 values), got ",
                               shape.back());
    shape.back() *= 8;
  }
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 8)));
  return success();
}

/// The scale shape of a grouped (int4 weight-only) qlinear: [N, K / group].
static LogicalResult checkGroups(std::optional<Location> loc, int64_t group, StringRef act,
                                 int64_t n, int64_t k, RankedTensorType scale) {
  if (act != "none")
    return emitOptionalError(loc, "group_size needs activations = \"none\" (weight-only)");
  if (group <= 0 || group % 32 || ShapedType::isDynamic(k) || k % group)
    return emitOptionalError(loc, "group_size must be a multiple of 32 dividing K = ", k, ", got ",
                             group);
  if (scale.getRank() != 2 || scale.getDimSize(0) != n || scale.getDimSize(1) != k / group)
    return emitOptionalError(loc, "weight_scale must be [N, K / group_size] = [", n, ", ",
                             k / group, "], got ", scale);
  return success();
}

LogicalResult QLinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          ValueRange operands, DictionaryAttr attrs,
                                          OpaqueProperties props, RegionRange regions,
                                          SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto in = rankedOf(adaptor.getInput());
  auto w = rankedOf(adaptor.getWeight());
  auto scale = rankedOf(adaptor.getWeightScale());
  StringRef act = adaptor.getActivations();
  if (!isGranularity(act) && act != "none" && act != "static")
    return emitOptionalError(loc,
                             "activations must be \"per_token\", \"per_tensor\", \"static\" or "
                             "\"none\", got \"",
                             act, "\"");
  if (act == "static" &&
      failed(checkStaticParams(loc, adaptor.getInputScaleAttr(), adaptor.getInputZeroPointAttr())))
    return failure();
  if (in.getRank() < 1 || w.getRank() != 2)
    return emitOptionalError(loc, "needs an input of rank >= 1 and a 2-D weight, got ", in, " and ",
                             w);
  if (isa<Float8E4M3FNType>(w.getElementType()) && (!isGranularity(act) || adaptor.getGroupSize()))
    return emitOptionalError(loc, "an f8E4M3FN weight needs \"per_token\" or \"per_tensor\" "
                                  "activations and no group_size");
  int64_t n = w.getDimSize(0), k = w.getDimSize(1), kIn = in.getShape().back();
  if (!ShapedType::isDynamic(k) && !ShapedType::isDynamic(kIn) && k != kIn)
    return emitOptionalError(loc, "input has K = ", kIn, ", weight has K = ", k);
  if (std::optional<int64_t> group = adaptor.getGroupSize()) {
    if (failed(checkGroups(loc, *group, act, n, k, scale)))
      return failure();
  } else if (scale.getRank() != 2 || scale.getDimSize(0) != n || scale.getDimSize(1) != 1) {
    return emitOptionalError(loc, "weight_scale must be [N, 1] = [", n, ", 1], got ", scale);
  }
  if (Value bias = adaptor.getBias()) {
    auto b = rankedOf(bias);
    if (b.getRank() != 1 || b.getDimSize(0) != n)
      return emitOptionalError(loc, "bias must be [N] = [", n, "], got ", b);
  }
  SmallVector<int64_t> shape(in.getShape());
  shape.back() = n;
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

QuantizeStaticOp mlir::kiln::staticallyQuantized(Value v) {
  auto dq = v.getDefiningOp<DequantizeOp>();
  auto q = dq ? dq.getInput().getDefiningOp<QuantizeStaticOp>() : QuantizeStaticOp();
  if (!q || dq.getZeroPoint() != q.getZeroPoint())
    return {};
  auto c = dq.getScale().getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  if (dense && dense.isSplat() && dense.getElementType().isF32() &&
      dense.getSplatValue<APFloat>() == q.getScaleAttr().getValue())
    return q;
  return {};
}

#define GET_OP_CLASSES
#include "ir/KilnQuantOps.cpp.inc"

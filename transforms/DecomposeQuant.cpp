//===- DecomposeQuant.cpp - standalone static q/dq pairs as float ops ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Part of `kiln-decompose`. `kiln.dequantize(kiln.quantize_static(x))`
// pairs that no integer kernel consumed (kiln-fold-quant and the CPU
// convolution pass run first and take the pairs in front of their int8
// GEMMs and convolutions) are the requantizations of models rewritten from
// PT2E / torch.ao (`kiln.quant._ops.quantize_dequantize_static`): the float
// values of uint8 activations. They become
//
//   (clamp(round_half_even(x * f32(1 / scale)) + zp, 0, 255) - zp) * scale
//
// in f32, bit-equal to the pair (every integer on the way is exact in f32)
// except that a NaN input stays NaN (the uint8 pair has no NaN: torch's
// conversion of NaN to uint8 is undefined).
//===----------------------------------------------------------------------===//
#include "transforms/Transforms.h"

#include "ir/KilnOps.h"
#include "ir/KilnQuantOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {
namespace {

Value f32Scalar(OpBuilder &rewriter, Location loc, float value) {
  auto type = RankedTensorType::get({}, rewriter.getF32Type());
  auto attr = DenseElementsAttr::get(type, rewriter.getF32FloatAttr(value));
  return rewriter.create<ConstantOp>(loc, llvm::cast<ElementsAttr>(attr));
}

} // namespace

LogicalResult expandStaticQdq(DequantizeOp op, RewriterBase &rewriter) {
  QuantizeStaticOp q = staticallyQuantized(op.getResult());
  if (!q)
    return failure();
  float scale = q.getScale().convertToFloat();
  int64_t zero = q.getZeroPoint();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  auto make = [&](auto tag, Value a, Value b) {
    return rewriter.create<decltype(tag)>(loc, a, b).getResult();
  };
  Value x = q.getInput();
  Value scaled = make(MulOp(), x, f32Scalar(rewriter, loc, 1.0f / scale));
  Value shifted =
      make(AddOp(), rewriter.create<RoundOp>(loc, scaled), f32Scalar(rewriter, loc, float(zero)));
  Value clamped = make(MinimumOp(), make(MaximumOp(), shifted, f32Scalar(rewriter, loc, 0.0f)),
                       f32Scalar(rewriter, loc, 255.0f));
  Value centred = make(SubOp(), clamped, f32Scalar(rewriter, loc, float(zero)));
  rewriter.replaceOp(op, make(MulOp(), centred, f32Scalar(rewriter, loc, scale)));
  if (q->use_empty())
    rewriter.eraseOp(q);
  return success();
}

namespace {

struct DecomposeStaticQdq : OpRewritePattern<DequantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DequantizeOp op, PatternRewriter &rewriter) const override {
    return expandStaticQdq(op, rewriter);
  }
};

} // namespace

void populateQuantDecompositionPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeStaticQdq>(patterns.getContext());
}

} // namespace mlir::kiln

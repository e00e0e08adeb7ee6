//===- Decompose.cpp - composite kiln ops into the primitive set --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The `kiln-decompose` pass: rewrites kiln.softmax, kiln.layer_norm and
// kiln.silu into reductions and elementwise kiln ops, so that fusion and
// codegen only see the primitive set of docs/invariants.md. The expansions
// follow torch's numerics: softmax subtracts the max before exp, layer_norm
// uses the biased variance, and both compute 16-bit floats in f32 (torch's
// "opmath" type) and round once at the end.
//===----------------------------------------------------------------------===//
#include "transforms/Passes.h"
#include "transforms/Transforms.h"

#include "ir/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/Sequence.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_DECOMPOSEPASS
#include "transforms/Passes.h.inc"

namespace {

/// The element type a decomposition of a reduction-based op computes in:
/// f32 for floats narrower than 32 bits (f16, bf16, ...), as torch does for
/// softmax and layer_norm; otherwise `elt` itself.
Type computeElementType(Type elt) {
  auto floatType = llvm::dyn_cast<FloatType>(elt);
  if (floatType && floatType.getWidth() < 32)
    return Float32Type::get(elt.getContext());
  return elt;
}

/// `v` converted to element type `elt` with kiln.cast (`v` if it has it).
Value castElements(PatternRewriter &rewriter, Location loc, Value v, Type elt) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (type.getElementType() == elt)
    return v;
  return rewriter.create<CastOp>(loc, type.clone(elt), v);
}

/// A 0-d `kiln.constant` of float type `elt` holding `value` (rounded to
/// `elt`); it broadcasts against any operand.
Value scalarConstant(PatternRewriter &rewriter, Location loc, Type elt,
                     double value) {
  auto type = RankedTensorType::get({}, elt);
  auto attr = DenseElementsAttr::get(type, rewriter.getFloatAttr(elt, value));
  return rewriter.create<ConstantOp>(loc, llvm::cast<ElementsAttr>(attr));
}

/// softmax(x, d) = e / sum(e, [d], keepdim) with e = exp(x - max(x, [d],
/// keepdim)). A 0-d operand reduces over no dims (its softmax is 1, or NaN
/// for a non-finite x, as in torch).
struct DecomposeSoftmax : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type elt = type.getElementType();
    Value x = castElements(rewriter, loc, op.getInput(), computeElementType(elt));
    SmallVector<int64_t, 1> dims;
    if (type.getRank() > 0)
      dims.push_back(op.getDim());
    Value max = rewriter.create<MaxOp>(loc, x, dims, /*keepdim=*/true);
    Value shifted = rewriter.create<SubOp>(loc, x, max);
    Value exp = rewriter.create<ExpOp>(loc, shifted);
    Value sum = rewriter.create<SumOp>(loc, exp, dims, /*keepdim=*/true);
    Value result = rewriter.create<DivOp>(loc, exp, sum);
    rewriter.replaceOp(op, castElements(rewriter, loc, result, elt));
    return success();
  }
};

/// layer_norm(x) over the last n dims D:
///   c = x - mean(x, D, keepdim); var = mean(c * c, D, keepdim) (biased);
///   y = c * rsqrt(var + eps), then y * weight and y + bias when present.
struct DecomposeLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type elt = type.getElementType();
    Type computeElt = computeElementType(elt);
    int64_t rank = type.getRank();
    int64_t numDims = static_cast<int64_t>(op.getNumDims());
    SmallVector<int64_t> dims =
        llvm::to_vector(llvm::seq<int64_t>(rank - numDims, rank));

    Value x = castElements(rewriter, loc, op.getInput(), computeElt);
    Value mean = rewriter.create<MeanOp>(loc, x, dims, /*keepdim=*/true);
    Value centered = rewriter.create<SubOp>(loc, x, mean);
    Value squared = rewriter.create<MulOp>(loc, centered, centered);
    Value var = rewriter.create<MeanOp>(loc, squared, dims, /*keepdim=*/true);
    Value eps = scalarConstant(rewriter, loc, computeElt,
                               op.getEps().convertToDouble());
    Value varEps = rewriter.create<AddOp>(loc, var, eps);
    Value rstd = rewriter.create<RsqrtOp>(loc, varEps);
    Value result = rewriter.create<MulOp>(loc, centered, rstd);
    if (Value weight = op.getWeight())
      result = rewriter.create<MulOp>(
          loc, result, castElements(rewriter, loc, weight, computeElt));
    if (Value bias = op.getBias())
      result = rewriter.create<AddOp>(
          loc, result, castElements(rewriter, loc, bias, computeElt));
    rewriter.replaceOp(op, castElements(rewriter, loc, result, elt));
    return success();
  }
};

/// silu(x) = x * sigmoid(x), in the operand's type (elementwise: no
/// accumulation error to guard against).
struct DecomposeSilu : OpRewritePattern<SiluOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SiluOp op,
                                PatternRewriter &rewriter) const override {
    Value x = op.getInput();
    Value sigmoid = rewriter.create<SigmoidOp>(op.getLoc(), x);
    rewriter.replaceOpWithNewOp<MulOp>(op, x, sigmoid);
    return success();
  }
};

struct DecomposePass : impl::DecomposePassBase<DecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecompositionPatterns(patterns);
    // Every pattern applies unconditionally, so the only failure is a driver
    // that did not converge.
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void populateDecompositionPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeSoftmax, DecomposeLayerNorm, DecomposeSilu>(
      patterns.getContext());
  populateNNDecompositionPatterns(patterns);
}

} // namespace mlir::kiln

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
Value scalarConstant(PatternRewriter &rewriter, Location loc, Type elt, double value) {
  auto type = RankedTensorType::get({}, elt);
  auto attr = DenseElementsAttr::get(type, rewriter.getFloatAttr(elt, value));
  return rewriter.create<ConstantOp>(loc, llvm::cast<ElementsAttr>(attr));
}

/// `v` reshaped to `shape` (same element type).
Value reshapeTo(PatternRewriter &rewriter, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  return rewriter.create<ReshapeOp>(loc, type.clone(shape), v);
}

/// For a static operand of rank > 2 reduced over its trailing `trailing`
/// dims: the 2-d shape [rows, row size] it collapses to, else empty. Row
/// reductions on a 2-d tensor become one loop over all rows in codegen
/// (kiln-cpu-fuse-rows), whatever the leading dims were (a [1, 512, 1024]
/// softmax otherwise has a single "row" of 2 MiB).
SmallVector<int64_t> rowsShape(RankedTensorType type, int64_t trailing) {
  int64_t rank = type.getRank();
  if (rank <= 2 || trailing < 1 || trailing >= rank || !type.hasStaticShape())
    return {};
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < rank - trailing ? rows : cols) *= type.getDimSize(d);
  return {rows, cols};
}

/// softmax(x, d) = e / sum(e, [d], keepdim) with e = exp(x - max(x, [d],
/// keepdim)). A 0-d operand reduces over no dims (its softmax is 1, or NaN
/// for a non-finite x, as in torch). Over the last dim of a static rank > 2
/// operand it is computed on the [rows, n] reshape.
struct DecomposeSoftmax : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    if (op.getDim() == type.getRank() - 1) {
      SmallVector<int64_t> shape = rowsShape(type, 1);
      if (!shape.empty()) {
        Value rows = reshapeTo(rewriter, loc, op.getInput(), shape);
        Value soft = rewriter.create<SoftmaxOp>(loc, rows, /*dim=*/1);
        rewriter.replaceOp(op, reshapeTo(rewriter, loc, soft, type.getShape()));
        return success();
      }
    }
    Type elt = type.getElementType();
    Value x = castElements(rewriter, loc, op.getInput(), computeElementType(elt));
    SmallVector<int64_t, 1> dims;
    if (type.getRank() > 0)
      dims.push_back(op.getDim());
    Value max = rewriter.create<MaxOp>(loc, x, dims, /*keepdim=*/true);
    Value shifted = rewriter.create<SubOp>(loc, x, max);
    Value exp = rewriter.create<ExpOp>(loc, shifted);
    Value sum = rewriter.create<SumOp>(loc, exp, dims, /*keepdim=*/true);
    // As torch's CPU kernels: exp * (1 / sum) over the last dim, exp / sum
    // over any other.
    Value result;
    if (type.getRank() > 0 && op.getDim() == type.getRank() - 1) {
      Value one = scalarConstant(rewriter, loc, computeElementType(elt), 1.0);
      result = rewriter.create<MulOp>(loc, exp, rewriter.create<DivOp>(loc, one, sum));
    } else {
      result = rewriter.create<DivOp>(loc, exp, sum);
    }
    rewriter.replaceOp(op, castElements(rewriter, loc, result, elt));
    return success();
  }
};

/// layer_norm(x) over the last n dims D (of a static rank > 2 operand:
/// over its [rows, n] reshape):
///   c = x - mean(x, D, keepdim); var = mean(c * c, D, keepdim) (biased);
///   y = c * rsqrt(var + eps), then y * weight and y + bias when present.
struct DecomposeLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type elt = type.getElementType();
    Type computeElt = computeElementType(elt);
    int64_t rank = type.getRank();
    int64_t numDims = static_cast<int64_t>(op.getNumDims());
    SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(rank - numDims, rank));

    // A static rank > 2 operand is normalized as its [rows, n] reshape
    // (weight and bias as [n]): one loop over rows in codegen.
    Value input = op.getInput(), weight = op.getWeight(), bias = op.getBias();
    SmallVector<int64_t> rowShape = rowsShape(type, numDims);
    if (!rowShape.empty()) {
      input = reshapeTo(rewriter, loc, input, rowShape);
      if (weight)
        weight = reshapeTo(rewriter, loc, weight, {rowShape[1]});
      if (bias)
        bias = reshapeTo(rewriter, loc, bias, {rowShape[1]});
      dims = {1};
    }
    Value x = castElements(rewriter, loc, input, computeElt);
    Value mean = rewriter.create<MeanOp>(loc, x, dims, /*keepdim=*/true);
    Value centered = rewriter.create<SubOp>(loc, x, mean);
    Value squared = rewriter.create<MulOp>(loc, centered, centered);
    Value var = rewriter.create<MeanOp>(loc, squared, dims, /*keepdim=*/true);
    Value eps = scalarConstant(rewriter, loc, computeElt, op.getEps().convertToDouble());
    Value varEps = rewriter.create<AddOp>(loc, var, eps);
    Value rstd = rewriter.create<RsqrtOp>(loc, varEps);
    Value result = rewriter.create<MulOp>(loc, centered, rstd);
    if (weight)
      result = rewriter.create<MulOp>(loc, result, castElements(rewriter, loc, weight, computeElt));
    if (bias)
      result = rewriter.create<AddOp>(loc, result, castElements(rewriter, loc, bias, computeElt));
    result = castElements(rewriter, loc, result, elt);
    if (!rowShape.empty())
      result = reshapeTo(rewriter, loc, result, type.getShape());
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// silu(x) = x * sigmoid(x), in the operand's type (elementwise: no
/// accumulation error to guard against).
struct DecomposeSilu : OpRewritePattern<SiluOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SiluOp op, PatternRewriter &rewriter) const override {
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
  patterns.add<DecomposeSoftmax, DecomposeLayerNorm, DecomposeSilu>(patterns.getContext());
  populateNNDecompositionPatterns(patterns);
  populateCumsumDecompositionPatterns(patterns);
  populateQuantDecompositionPatterns(patterns);
}

} // namespace mlir::kiln

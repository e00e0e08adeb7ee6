//===- DecomposeCumsum.cpp - long prefix sums in blocks ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Part of `kiln-decompose`. kiln.cumsum lowers to a reduction over
// (i, j <= i): quadratic in the dim size, fine for short dims and a near-hang
// for long ones (100k elements took 0.86 s; a top-p sampler sums a 50k
// vocabulary per row). A static dim of n >= 1024 is split into blocks of 64:
//
//   x [.., n, ..] -> zero-padded to m * 64 -> reshaped [.., m, 64, ..]
//   inner  = cumsum over the 64 (quadratic in 64 only)
//   totals = inner[.., :, 63:64, ..]           (each block's sum)
//   result = inner + (cumsum(totals over m) - totals)   (exclusive prefix)
//   -> reshaped [.., m * 64, ..] -> sliced to n
//
// The cumsum over the m blocks is decomposed again while m >= 1024, so the
// work is about 33 additions per element at any length.
//===----------------------------------------------------------------------===//
#include "transforms/Transforms.h"

#include "ir/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {
namespace {

constexpr int64_t kMinLength = 1024, kBlock = 64;

struct DecomposeLongCumsum : OpRewritePattern<CumsumOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CumsumOp op, PatternRewriter &rewriter) const override {
    auto type = llvm::cast<RankedTensorType>(op.getType());
    int64_t dim = op.getDim();
    if (type.getRank() == 0 || !type.hasStaticShape() || type.getDimSize(dim) < kMinLength)
      return rewriter.notifyMatchFailure(op, "a short or dynamic dim");
    Location loc = op.getLoc();
    Type elt = type.getElementType();
    int64_t n = type.getDimSize(dim), m = (n + kBlock - 1) / kBlock;
    Value x = op.getInput();
    SmallVector<int64_t> shape(type.getShape());
    if (m * kBlock > n) { // zeros after the end: they change no prefix
      SmallVector<int64_t> padShape(shape);
      padShape[dim] = m * kBlock - n;
      auto padType = RankedTensorType::get(padShape, elt);
      Attribute zero = llvm::isa<FloatType>(elt) ? Attribute(rewriter.getFloatAttr(elt, 0.0))
                                                 : Attribute(rewriter.getIntegerAttr(elt, 0));
      Value pad = rewriter.create<ConstantOp>(
          loc, llvm::cast<ElementsAttr>(DenseElementsAttr::get(padType, zero)));
      shape[dim] = m * kBlock;
      x = rewriter.create<ConcatOp>(loc, ValueRange{x, pad}, rewriter.getI64IntegerAttr(dim));
    }
    SmallVector<int64_t> blocked(shape);
    blocked[dim] = m;
    blocked.insert(blocked.begin() + dim + 1, kBlock);
    auto blockedType = RankedTensorType::get(blocked, elt);
    Value b = rewriter.create<ReshapeOp>(loc, blockedType, x);
    Value inner =
        rewriter.create<CumsumOp>(loc, blockedType, b, rewriter.getI64IntegerAttr(dim + 1));
    SmallVector<int64_t> start(blocked.size(), 0), end(blocked), step(blocked.size(), 1);
    start[dim + 1] = kBlock - 1;
    Value totals = rewriter.create<SliceOp>(loc, inner, rewriter.getDenseI64ArrayAttr(start),
                                            rewriter.getDenseI64ArrayAttr(end),
                                            rewriter.getDenseI64ArrayAttr(step));
    Value prefix =
        rewriter.create<CumsumOp>(loc, totals.getType(), totals, rewriter.getI64IntegerAttr(dim));
    Value before = rewriter.create<SubOp>(loc, prefix, totals);
    Value sums = rewriter.create<AddOp>(loc, inner, before);
    Value flat = rewriter.create<ReshapeOp>(loc, RankedTensorType::get(shape, elt), sums);
    if (m * kBlock == n) {
      rewriter.replaceOp(op, flat);
      return success();
    }
    SmallVector<int64_t> keepStart(shape.size(), 0), keepEnd(type.getShape()),
        keepStep(shape.size(), 1);
    rewriter.replaceOpWithNewOp<SliceOp>(op, flat, rewriter.getDenseI64ArrayAttr(keepStart),
                                         rewriter.getDenseI64ArrayAttr(keepEnd),
                                         rewriter.getDenseI64ArrayAttr(keepStep));
    return success();
  }
};

} // namespace

void populateCumsumDecompositionPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeLongCumsum>(patterns.getContext());
}

} // namespace mlir::kiln

//===- Reduction.cpp - kiln reductions → reducing linalg.generic --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Lowers `kiln.sum`, `kiln.mean` and `kiln.max` to a `linalg.generic` with
// reduction iterators over the reduced dims, writing a tensor without those
// dims into an accumulator filled with the identity (0, or -inf / INT_MIN
// for max). Float combines carry `fastmath<reassoc>` so that LLVM may
// vectorize the reduction. `max` uses `arith.maximumf`, which propagates NaN like torch.
// `mean` divides by the element count afterwards; f16/bf16 sums and means
// accumulate in f32 and round once; `keepdim` re-inserts the
// size-1 dims with `tensor.expand_shape`.
//===----------------------------------------------------------------------===//
#include "codegen/Patterns.h"

#include "ir/KilnOps.h"
#include "ir/ShapeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/SmallBitVector.h"

namespace mlir::kiln {
namespace {

enum class Kind { Sum, Mean, Max };

/// The accumulator's initial value.
Value identity(OpBuilder &b, Location loc, Type t, Kind kind) {
  if (kind != Kind::Max)
    return buildScalarConstant(b, loc, t, 0.0);
  if (auto ft = dyn_cast<FloatType>(t))
    return b.create<arith::ConstantOp>(
        loc, b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), true)));
  unsigned width = t.getIntOrFloatBitWidth();
  return b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(t, width == 1 ? APInt(1, 0)
                                          : APInt::getSignedMinValue(width)));
}

/// acc ⊕ x.
Value combine(OpBuilder &b, Location loc, Value x, Value acc, Kind kind) {
  Type t = x.getType();
  if (isa<FloatType>(t)) {
    // reassoc lets LLVM vectorize the reduction (torch reorders sums too).
    auto reassoc = arith::FastMathFlagsAttr::get(b.getContext(),
                                                 arith::FastMathFlags::reassoc);
    if (kind == Kind::Max)
      return b.create<arith::MaximumFOp>(loc, x, acc, reassoc);
    return b.create<arith::AddFOp>(loc, x, acc, reassoc);
  }
  if (t.isInteger(1))
    return b.create<arith::OrIOp>(loc, x, acc);
  if (kind == Kind::Max)
    return b.create<arith::MaxSIOp>(loc, x, acc);
  return b.create<arith::AddIOp>(loc, x, acc);
}

/// Groups the dims of the keepdim shape so that each reduced (size-1) dim
/// joins a neighbouring kept dim; empty when everything is reduced.
SmallVector<ReassociationIndices> keepdimReassociation(int64_t rank,
                                                       const llvm::SmallBitVector &reduced) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  for (int64_t i = 0; i < rank; ++i) {
    pending.push_back(i);
    if (!reduced[i]) {
      groups.push_back(pending);
      pending.clear();
    }
  }
  if (!pending.empty() && !groups.empty())
    groups.back().append(pending.begin(), pending.end());
  return groups;
}

/// acc / (number of elements of `input` along `dims`).
Value divideByCount(OpBuilder &b, Location loc, Value acc, Value input,
                    ArrayRef<int64_t> dims) {
  auto accType = cast<RankedTensorType>(acc.getType());
  Type elem = accType.getElementType();
  Value count = b.create<arith::ConstantIndexOp>(loc, 1);
  for (int64_t d : dims)
    count = b.create<arith::MulIOp>(loc, count, b.create<tensor::DimOp>(loc, input, d));
  Value countF = b.create<arith::UIToFPOp>(
      loc, elem, b.create<arith::IndexCastUIOp>(loc, b.getI64Type(), count));
  return buildBroadcastingGeneric(
      b, loc, accType, acc, [&](OpBuilder &nb, Location l, ValueRange args) {
        return nb.create<arith::DivFOp>(l, args[0], countF).getResult();
      });
}

/// keepdim: expands `acc` (kept dims only) to `resultType` (size-1 dims at
/// the reduced positions of `input`).
Value reinsertReducedDims(OpBuilder &b, Location loc, Value acc, Value input,
                          RankedTensorType resultType,
                          const llvm::SmallBitVector &reduced) {
  int64_t rank = resultType.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(reduced[d] ? b.getIndexAttr(1)
                               : tensor::getMixedSize(b, loc, input, d));
  return b.create<tensor::ExpandShapeOp>(
      loc, resultType, acc, keepdimReassociation(rank, reduced), sizes);
}

template <typename OpTy, Kind kind>
struct ReductionLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elem = inType.getElementType();
    if (!isa<FloatType, IntegerType>(elem))
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    int64_t rank = inType.getRank();
    if (op.getDims().empty()) {
      rewriter.replaceOp(op, input);
      return success();
    }
    llvm::SmallBitVector reduced(rank);
    for (int64_t d : op.getDims())
      reduced.set(d);

    // Accumulator over the kept dims.
    SmallVector<int64_t> keptShape;
    SmallVector<OpFoldResult> keptSizes;
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t d = 0; d < rank; ++d) {
      iterators.push_back(reduced[d] ? utils::IteratorType::reduction
                                     : utils::IteratorType::parallel);
      if (reduced[d])
        continue;
      keptShape.push_back(inType.getDimSize(d));
      keptSizes.push_back(tensor::getMixedSize(rewriter, loc, input, d));
      outExprs.push_back(rewriter.getAffineDimExpr(d));
    }
    // 16-bit float sums accumulate in f32 (as torch does); max stays exact.
    Type accElem = elem;
    if (kind != Kind::Max && (elem.isF16() || elem.isBF16()))
      accElem = rewriter.getF32Type();
    auto accType = RankedTensorType::get(keptShape, accElem);
    Value init = buildEmpty(rewriter, loc, accType, keptSizes);
    init = rewriter
               .create<linalg::FillOp>(loc, identity(rewriter, loc, accElem, kind), init)
               .getResult(0);
    SmallVector<AffineMap> maps = {
        rewriter.getMultiDimIdentityMap(rank),
        AffineMap::get(rank, 0, outExprs, rewriter.getContext())};
    Value acc = rewriter
                    .create<linalg::GenericOp>(
                        loc, accType, input, init, maps, iterators,
                        [&](OpBuilder &b, Location l, ValueRange args) {
                          Value x = args[0];
                          if (x.getType() != accElem)
                            x = b.create<arith::ExtFOp>(l, accElem, x);
                          b.create<linalg::YieldOp>(l, combine(b, l, x, args[1], kind));
                        })
                    .getResult(0);

    if (kind == Kind::Mean)
      acc = divideByCount(rewriter, loc, acc, input, op.getDims());
    if (accElem != elem)
      acc = buildBroadcastingGeneric(
          rewriter, loc, accType.clone(elem), acc,
          [&](OpBuilder &b, Location l, ValueRange args) {
            return b.create<arith::TruncFOp>(l, elem, args[0]).getResult();
          });
    if (op.getKeepdim())
      acc = reinsertReducedDims(rewriter, loc, acc, input, resultType, reduced);
    rewriter.replaceOp(op, acc);
    return success();
  }
};

} // namespace

void populateReductionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ReductionLowering<SumOp, Kind::Sum>,
               ReductionLowering<MeanOp, Kind::Mean>,
               ReductionLowering<MaxOp, Kind::Max>>(patterns.getContext());
}

} // namespace mlir::kiln

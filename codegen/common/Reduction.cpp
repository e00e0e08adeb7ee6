//===- Reduction.cpp - kiln reductions → reducing linalg.generic --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Lowers `kiln.sum`, `kiln.mean`, `kiln.max`, `kiln.min` and `kiln.prod` to
// a `linalg.generic` with
// reduction iterators over the reduced dims, writing a tensor without those
// dims into an accumulator filled with the identity (0, or -inf / INT_MIN
// for max). Float combines carry `fastmath<reassoc>` so that LLVM may
// vectorize the reduction. `max` uses `arith.maximumf`, which propagates NaN like torch.
// `mean` divides by the element count afterwards; f16/bf16 sums and means
// accumulate in f32 and round once; `keepdim` re-inserts the
// size-1 dims with `tensor.expand_shape`. `kiln.argmax` / `argmin` carry a
// second (index) accumulator; `kiln.cumsum` is a generic with an extra
// reduction loop over the scanned dim.
//===----------------------------------------------------------------------===//
#include "codegen/common/Patterns.h"

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

enum class Kind { Sum, Mean, Max, Min, Prod };

/// The accumulator's initial value.
Value identity(OpBuilder &b, Location loc, Type t, Kind kind) {
  if (kind == Kind::Sum || kind == Kind::Mean)
    return buildScalarConstant(b, loc, t, 0.0);
  if (kind == Kind::Prod)
    return t.isInteger(1) ? b.create<arith::ConstantOp>(loc, b.getIntegerAttr(t, 1))
                          : buildScalarConstant(b, loc, t, 1.0);
  bool negative = kind == Kind::Max;
  if (auto ft = dyn_cast<FloatType>(t))
    return b.create<arith::ConstantOp>(
        loc, b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), negative)));
  unsigned width = t.getIntOrFloatBitWidth();
  APInt v = width == 1 ? APInt(1, negative ? 0 : 1)
            : negative ? APInt::getSignedMinValue(width)
                       : APInt::getSignedMaxValue(width);
  return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(t, v));
}

/// acc ⊕ x.
Value combine(OpBuilder &b, Location loc, Value x, Value acc, Kind kind) {
  Type t = x.getType();
  if (isa<FloatType>(t)) {
    // reassoc lets LLVM vectorize the reduction (torch reorders sums too).
    auto reassoc = arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::reassoc);
    // nsz: which zero a max/min of -0.0 and +0.0 returns is unspecified,
    // as in torch's vectorized kernels; without it x86 needs a sign test
    // and a blend per vector on top of the NaN check (a third of softmax).
    auto unordered = arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::reassoc |
                                                                       arith::FastMathFlags::nsz);
    if (kind == Kind::Max)
      return b.create<arith::MaximumFOp>(loc, x, acc, unordered);
    if (kind == Kind::Min)
      return b.create<arith::MinimumFOp>(loc, x, acc, unordered);
    if (kind == Kind::Prod)
      return b.create<arith::MulFOp>(loc, x, acc, reassoc);
    return b.create<arith::AddFOp>(loc, x, acc, reassoc);
  }
  if (t.isInteger(1))
    return kind == Kind::Min || kind == Kind::Prod
               ? b.create<arith::AndIOp>(loc, x, acc).getResult()
               : b.create<arith::OrIOp>(loc, x, acc).getResult();
  if (kind == Kind::Max)
    return b.create<arith::MaxSIOp>(loc, x, acc);
  if (kind == Kind::Min)
    return b.create<arith::MinSIOp>(loc, x, acc);
  if (kind == Kind::Prod)
    return b.create<arith::MulIOp>(loc, x, acc);
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
Value divideByCount(OpBuilder &b, Location loc, Value acc, Value input, ArrayRef<int64_t> dims) {
  auto accType = cast<RankedTensorType>(acc.getType());
  Type elem = accType.getElementType();
  Value count = b.create<arith::ConstantIndexOp>(loc, 1);
  for (int64_t d : dims)
    count = b.create<arith::MulIOp>(loc, count, b.create<tensor::DimOp>(loc, input, d));
  Value countF = b.create<arith::UIToFPOp>(
      loc, elem, b.create<arith::IndexCastUIOp>(loc, b.getI64Type(), count));
  return buildBroadcastingGeneric(b, loc, accType, acc,
                                  [&](OpBuilder &nb, Location l, ValueRange args) {
                                    return nb.create<arith::DivFOp>(l, args[0], countF).getResult();
                                  });
}

/// keepdim: expands `acc` (kept dims only) to `resultType` (size-1 dims at
/// the reduced positions of `input`).
Value reinsertReducedDims(OpBuilder &b, Location loc, Value acc, Value input,
                          RankedTensorType resultType, const llvm::SmallBitVector &reduced) {
  int64_t rank = resultType.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(reduced[d] ? b.getIndexAttr(1) : tensor::getMixedSize(b, loc, input, d));
  return b.create<tensor::ExpandShapeOp>(loc, resultType, acc, keepdimReassociation(rank, reduced),
                                         sizes);
}

template <typename OpTy, Kind kind> struct ReductionLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
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
    // 16-bit float sums accumulate in f32 (as torch does); max/min stay exact.
    Type accElem = elem;
    if (kind != Kind::Max && kind != Kind::Min && (elem.isF16() || elem.isBF16()))
      accElem = rewriter.getF32Type();
    auto accType = RankedTensorType::get(keptShape, accElem);
    Value init = buildEmpty(rewriter, loc, accType, keptSizes);
    init = rewriter.create<linalg::FillOp>(loc, identity(rewriter, loc, accElem, kind), init)
               .getResult(0);
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank),
                                   AffineMap::get(rank, 0, outExprs, rewriter.getContext())};
    Value acc = rewriter
                    .create<linalg::GenericOp>(loc, accType, input, init, maps, iterators,
                                               [&](OpBuilder &b, Location l, ValueRange args) {
                                                 Value x = args[0];
                                                 if (x.getType() != accElem)
                                                   x = b.create<arith::ExtFOp>(l, accElem, x);
                                                 b.create<linalg::YieldOp>(
                                                     l, combine(b, l, x, args[1], kind));
                                               })
                    .getResult(0);

    if (kind == Kind::Mean)
      acc = divideByCount(rewriter, loc, acc, input, op.getDims());
    if (accElem != elem)
      acc = buildBroadcastingGeneric(
          rewriter, loc, accType.clone(elem), acc, [&](OpBuilder &b, Location l, ValueRange args) {
            return b.create<arith::TruncFOp>(l, elem, args[0]).getResult();
          });
    if (op.getKeepdim())
      acc = reinsertReducedDims(rewriter, loc, acc, input, resultType, reduced);
    rewriter.replaceOp(op, acc);
    return success();
  }
};

/// kiln.argmax / argmin: one reducing generic with two accumulators (the
/// extreme value so far and its index). An element replaces the current
/// one when strictly greater (less), or when it is NaN and the current one
/// is not, so the first extreme (the first NaN) wins, as in torch.
template <typename OpTy, bool isMax> struct ArgReductionLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elem = inType.getElementType(), i64 = rewriter.getI64Type();
    if (!isa<FloatType, IntegerType>(elem))
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    int64_t rank = inType.getRank(), dim = op.getDim();
    if (rank == 0) {
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(
          op, DenseElementsAttr::get(resultType, rewriter.getI64IntegerAttr(0)));
      return success();
    }
    SmallVector<int64_t> keptShape;
    SmallVector<OpFoldResult> keptSizes;
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t d = 0; d < rank; ++d) {
      iterators.push_back(d == dim ? utils::IteratorType::reduction
                                   : utils::IteratorType::parallel);
      if (d == dim)
        continue;
      keptShape.push_back(inType.getDimSize(d));
      keptSizes.push_back(tensor::getMixedSize(rewriter, loc, input, d));
      outExprs.push_back(rewriter.getAffineDimExpr(d));
    }
    auto valType = RankedTensorType::get(keptShape, elem);
    auto idxType = RankedTensorType::get(keptShape, i64);
    Value initV = rewriter
                      .create<linalg::FillOp>(
                          loc, identity(rewriter, loc, elem, isMax ? Kind::Max : Kind::Min),
                          buildEmpty(rewriter, loc, valType, keptSizes))
                      .getResult(0);
    Value initI = rewriter
                      .create<linalg::FillOp>(loc, buildScalarConstant(rewriter, loc, i64, 0),
                                              buildEmpty(rewriter, loc, idxType, keptSizes))
                      .getResult(0);
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, rewriter.getContext());
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank), outMap, outMap};
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, TypeRange{valType, idxType}, input, ValueRange{initV, initI}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = args[0], v = args[1], i = args[2];
          Value j = b.create<arith::IndexCastOp>(l, i64, b.create<linalg::IndexOp>(l, dim));
          Value take;
          if (isa<FloatType>(elem)) {
            take = b.create<arith::CmpFOp>(
                l, isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, x, v);
            Value xNan = b.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNO, x, x);
            Value vNum = b.create<arith::CmpFOp>(l, arith::CmpFPredicate::ORD, v, v);
            take = b.create<arith::OrIOp>(l, take, b.create<arith::AndIOp>(l, xNan, vNum));
          } else {
            take = b.create<arith::CmpIOp>(
                l, isMax ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt, x, v);
          }
          b.create<linalg::YieldOp>(l, ValueRange{b.create<arith::SelectOp>(l, take, x, v),
                                                  b.create<arith::SelectOp>(l, take, j, i)});
        });
    Value acc = generic.getResult(1);
    if (op.getKeepdim()) {
      llvm::SmallBitVector reduced(rank);
      reduced.set(dim);
      acc = reinsertReducedDims(rewriter, loc, acc, input, resultType, reduced);
    }
    rewriter.replaceOp(op, acc);
    return success();
  }
};

/// kiln.cumsum: out[.., i, ..] = sum over j of (j <= i ? x[.., j, ..] : 0),
/// one generic with an extra reduction loop j over the scanned dim.
struct CumsumLowering : OpConversionPattern<CumsumOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(CumsumOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    Type elem = type.getElementType();
    if (!isa<FloatType, IntegerType>(elem))
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    int64_t rank = type.getRank(), dim = op.getDim();
    if (rank == 0) {
      rewriter.replaceOp(op, input);
      return success();
    }
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineExpr> inExprs, outExprs;
    for (int64_t d = 0; d < rank; ++d) {
      inExprs.push_back(getAffineDimExpr(d == dim ? rank : d, ctx));
      outExprs.push_back(getAffineDimExpr(d, ctx));
    }
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    Value init =
        rewriter
            .create<linalg::FillOp>(
                loc, buildScalarConstant(rewriter, loc, elem, 0.0),
                buildEmpty(rewriter, loc, type, tensor::getMixedSizes(rewriter, loc, input)))
            .getResult(0);
    SmallVector<AffineMap> maps = {AffineMap::get(rank + 1, 0, inExprs, ctx),
                                   AffineMap::get(rank + 1, 0, outExprs, ctx)};
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, type, input, init, maps, iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          Value i = b.create<linalg::IndexOp>(l, dim);
          Value j = b.create<linalg::IndexOp>(l, rank);
          Value in = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ule, j, i);
          Value x = b.create<arith::SelectOp>(l, in, args[0], buildScalarConstant(b, l, elem, 0.0));
          b.create<linalg::YieldOp>(l, combine(b, l, x, args[1], Kind::Sum));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateReductionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ReductionLowering<SumOp, Kind::Sum>, ReductionLowering<MeanOp, Kind::Mean>,
               ReductionLowering<MaxOp, Kind::Max>, ReductionLowering<MinOp, Kind::Min>,
               ReductionLowering<ProdOp, Kind::Prod>, ArgReductionLowering<ArgmaxOp, true>,
               ArgReductionLowering<ArgminOp, false>, CumsumLowering>(patterns.getContext());
}

} // namespace mlir::kiln

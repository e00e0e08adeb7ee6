//===- ShapeOps.cpp - kiln shape ops → linalg / tensor ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Lowers `kiln.permute` to `linalg.transpose`, `kiln.broadcast_to` to a
// broadcasting `linalg.generic`, and `kiln.reshape` to
// `tensor.collapse_shape` / `tensor.expand_shape` (a pure collapse or
// expansion directly; any other static reshape as a collapse to 1-D
// followed by an expansion), falling back to `tensor.reshape` with a
// constant shape when dims are dynamic. `kiln.slice` becomes
// `tensor.extract_slice`; `kiln.concat` a `tensor.empty` filled by a chain of
// `tensor.insert_slice` (strided copies that bufferization creates for them
// become `memrefCopy` calls, which cpu/JitCompiler.cpp provides); `kiln.embedding` a
// `linalg.generic` over the result whose body clamps the index and reads the row with
// `tensor.extract`.
//===----------------------------------------------------------------------===//
#include "codegen/common/Patterns.h"

#include "ir/KilnOps.h"
#include "ir/ShapeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {
namespace {

/// The reassociation of a collapse of all `rank` dims to 1-D (or an
/// expansion from it): one group of every dim, none for rank 0.
SmallVector<ReassociationIndices> allDimsGroup(int64_t rank) {
  SmallVector<ReassociationIndices> all;
  if (rank > 0)
    all.push_back(llvm::to_vector(llvm::seq<int64_t>(0, rank)));
  return all;
}

struct PermuteLowering : OpConversionPattern<PermuteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(PermuteOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    SmallVector<OpFoldResult> sizes;
    for (int64_t d : op.getDims())
      sizes.push_back(tensor::getMixedSize(rewriter, loc, adaptor.getInput(), d));
    Value init = buildEmpty(rewriter, loc, type, sizes);
    rewriter.replaceOpWithNewOp<linalg::TransposeOp>(op, adaptor.getInput(), init, op.getDims());
    return success();
  }
};

struct BroadcastToLowering : OpConversionPattern<BroadcastToOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(BroadcastToOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic target shape");
    rewriter.replaceOp(op, buildBroadcastingGeneric(
                               rewriter, op.getLoc(), type, adaptor.getInput(),
                               [](OpBuilder &, Location, ValueRange args) { return args[0]; }));
    return success();
  }
};

/// The i64 shape operand of a tensor.reshape of `input` to `to`, whose one
/// dynamic dim is the input's element count over `to`'s static dims.
Value dynamicReshapeShape(OpBuilder &b, Location loc, Value input, RankedTensorType to) {
  auto from = cast<RankedTensorType>(input.getType());
  Value count = b.create<arith::ConstantIndexOp>(loc, 1);
  for (int64_t d = 0; d < from.getRank(); ++d)
    count = b.create<arith::MulIOp>(loc, count, b.create<tensor::DimOp>(loc, input, d));
  int64_t known = 1;
  for (int64_t s : to.getShape())
    if (!ShapedType::isDynamic(s))
      known *= s;
  Value dyn = b.create<arith::DivUIOp>(loc, count, b.create<arith::ConstantIndexOp>(loc, known));
  SmallVector<Value> dims;
  for (int64_t s : to.getShape())
    dims.push_back(ShapedType::isDynamic(s)
                       ? b.create<arith::IndexCastOp>(loc, b.getI64Type(), dyn).getResult()
                       : b.create<arith::ConstantIntOp>(loc, s, 64).getResult());
  return b.create<tensor::FromElementsOp>(loc, dims);
}

/// The i64 shape operand of a tensor.reshape of `input` to `to` that keeps
/// its dynamic dims (keepsDynamicDims): the k-th dynamic dim of `to` is the
/// input's k-th.
Value keptDynamicShape(OpBuilder &b, Location loc, Value input, RankedTensorType to) {
  auto from = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> dynamicDims;
  for (int64_t d = 0; d < from.getRank(); ++d)
    if (from.isDynamicDim(d))
      dynamicDims.push_back(d);
  SmallVector<Value> dims;
  size_t next = 0;
  for (int64_t s : to.getShape()) {
    if (!ShapedType::isDynamic(s)) {
      dims.push_back(b.create<arith::ConstantIntOp>(loc, s, 64));
      continue;
    }
    Value size = b.create<tensor::DimOp>(loc, input, dynamicDims[next++]);
    dims.push_back(b.create<arith::IndexCastOp>(loc, b.getI64Type(), size));
  }
  return b.create<tensor::FromElementsOp>(loc, dims);
}

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto from = cast<RankedTensorType>(input.getType());
    auto to = cast<RankedTensorType>(op.getType());
    if (from == to) {
      rewriter.replaceOp(op, input);
      return success();
    }
    if (from.hasStaticShape() && to.hasStaticShape()) {
      if (from.getRank() > to.getRank()) {
        if (auto re = getReassociationIndicesForCollapse(from.getShape(), to.getShape())) {
          rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(op, to, input, *re);
          return success();
        }
      } else if (from.getRank() < to.getRank()) {
        if (auto re = getReassociationIndicesForCollapse(to.getShape(), from.getShape())) {
          rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, to, input, *re);
          return success();
        }
      }
      // General case: through 1-D (a no-op on the row-major buffer).
      Value flat = input;
      int64_t n = from.getNumElements();
      auto flatType = RankedTensorType::get({n}, from.getElementType());
      if (from.getRank() != 1) {
        SmallVector<ReassociationIndices> all = allDimsGroup(from.getRank());
        flat = from.getRank() > 0
                   ? rewriter.create<tensor::CollapseShapeOp>(loc, flatType, input, all).getResult()
                   : rewriter.create<tensor::ExpandShapeOp>(loc, flatType, input, all).getResult();
      }
      if (to.getRank() == 1) {
        rewriter.replaceOp(op, flat);
        return success();
      }
      SmallVector<ReassociationIndices> all = allDimsGroup(to.getRank());
      if (to.getRank() > 0)
        rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, to, flat, all);
      else
        rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(op, to, flat, all);
      return success();
    }
    // Dynamic input with a static target: tensor.reshape with a constant shape.
    auto shapeType = RankedTensorType::get({to.getRank()}, rewriter.getI64Type());
    if (to.hasStaticShape()) {
      Value shape = rewriter.create<arith::ConstantOp>(
          loc, DenseIntElementsAttr::get(shapeType, to.getShape()));
      rewriter.replaceOpWithNewOp<tensor::ReshapeOp>(op, to, input, shape);
      return success();
    }
    // Several dynamic dims kept, static ones split or merged around them.
    if (from.getNumDynamicDims() > 1 && keepsDynamicDims(from.getShape(), to.getShape())) {
      rewriter.replaceOpWithNewOp<tensor::ReshapeOp>(op, to, input,
                                                     keptDynamicShape(rewriter, loc, input, to));
      return success();
    }
    // One dynamic target dim: the input's element count divided by the
    // static target dims (a symbolic size, e.g. x.view(x.shape[0], -1)).
    if (to.getNumDynamicDims() != 1 || llvm::is_contained(to.getShape(), 0))
      return rewriter.notifyMatchFailure(op, "dynamic reshape target");
    rewriter.replaceOpWithNewOp<tensor::ReshapeOp>(op, to, input,
                                                   dynamicReshapeShape(rewriter, loc, input, to));
    return success();
  }
};

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    Location loc = op.getLoc();
    // Bounds < 0 count from the end (sliceBounds): along a dynamic dim they
    // are computed from its size; a dynamic result dim runs from a start
    // from the front to an end from the end.
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      int64_t start = op.getStart()[i], end = op.getEnd()[i], step = op.getStep()[i];
      strides.push_back(rewriter.getIndexAttr(step));
      if (!inType.isDynamicDim(i)) {
        offsets.push_back(
            rewriter.getIndexAttr(sliceBounds(start, end, inType.getDimSize(i)).first));
        sizes.push_back(rewriter.getIndexAttr(type.getDimSize(i)));
        continue;
      }
      if (start == 0 && end == -1 && step == 1) { // the whole dim
        offsets.push_back(rewriter.getIndexAttr(0));
        sizes.push_back(tensor::getMixedSize(rewriter, loc, adaptor.getInput(), i));
        continue;
      }
      Value dim = rewriter.create<tensor::DimOp>(loc, adaptor.getInput(), i);
      auto plus = [&](int64_t c) -> Value {
        return rewriter.create<arith::AddIOp>(loc, dim,
                                              rewriter.create<arith::ConstantIndexOp>(loc, c));
      };
      offsets.push_back(start >= 0 ? OpFoldResult(rewriter.getIndexAttr(start))
                                   : OpFoldResult(plus(start)));
      if (!type.isDynamicDim(i)) {
        sizes.push_back(rewriter.getIndexAttr(type.getDimSize(i)));
        continue;
      }
      Value span = rewriter.create<arith::SubIOp>(
          loc, plus(end + 1), rewriter.create<arith::ConstantIndexOp>(loc, start));
      sizes.push_back(step == 1
                          ? span
                          : rewriter
                                .create<arith::CeilDivSIOp>(
                                    loc, span, rewriter.create<arith::ConstantIndexOp>(loc, step))
                                .getResult());
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, type, adaptor.getInput(), offsets,
                                                        sizes, strides);
    return success();
  }
};

struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t dim = op.getDim(), rank = type.getRank();
    ValueRange inputs = adaptor.getInputs();
    // Result sizes: other dims from the first operand, `dim` summed.
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < rank; ++i)
      sizes.push_back(tensor::getMixedSize(rewriter, loc, inputs[0], i));
    auto add = [&](OpFoldResult a, OpFoldResult b) -> OpFoldResult {
      auto ca = getConstantIntValue(a), cb = getConstantIntValue(b);
      if (ca && cb)
        return rewriter.getIndexAttr(*ca + *cb);
      return rewriter
          .create<arith::AddIOp>(loc, getValueOrCreateConstantIndexOp(rewriter, loc, a),
                                 getValueOrCreateConstantIndexOp(rewriter, loc, b))
          .getResult();
    };
    OpFoldResult total = rewriter.getIndexAttr(0);
    for (Value in : inputs)
      total = add(total, tensor::getMixedSize(rewriter, loc, in, dim));
    sizes[dim] = total;
    Value result = buildEmpty(rewriter, loc, type, sizes);
    SmallVector<OpFoldResult> base(rank, rewriter.getIndexAttr(0));
    insertPieces(rewriter, loc, op, inputs, base, result, add);
    rewriter.replaceOp(op, result);
    return success();
  }

  /// Inserts the (converted) `inputs` of `op` one after the other along its
  /// dim into `result`, starting at `base`. An input that is itself a
  /// concat used only here (nested concats: padding H, then W) has its own
  /// pieces inserted in place instead, so its elements are copied once, into
  /// the final buffer, not first into a buffer of their own.
  template <typename AddFn>
  void insertPieces(ConversionPatternRewriter &rewriter, Location loc, ConcatOp op,
                    ValueRange inputs, ArrayRef<OpFoldResult> base, Value &result,
                    AddFn &add) const {
    int64_t dim = op.getDim(), rank = base.size();
    SmallVector<OpFoldResult> offsets(base);
    for (size_t i = 0; i < inputs.size(); ++i) {
      Value original = op.getInputs()[i], in = inputs[i];
      SmallVector<OpFoldResult> inSizes = tensor::getMixedSizes(rewriter, loc, in);
      auto inner = original.getDefiningOp<ConcatOp>();
      SmallVector<Value> innerInputs;
      if (inner && original.hasOneUse()) {
        for (Value v : inner.getInputs())
          if (Value mapped = rewriter.getRemappedValue(v))
            innerInputs.push_back(mapped);
      }
      if (inner && original.hasOneUse() && innerInputs.size() == inner.getInputs().size()) {
        insertPieces(rewriter, loc, inner, innerInputs, offsets, result, add);
      } else {
        SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
        result = rewriter.create<tensor::InsertSliceOp>(loc, in, result, offsets, inSizes, strides);
      }
      offsets[dim] = add(offsets[dim], inSizes[dim]);
    }
  }
};

struct EmbeddingLowering : OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Value weight = adaptor.getWeight(), indices = adaptor.getIndices();
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, indices);
    sizes.push_back(tensor::getMixedSize(rewriter, loc, weight, 1));
    Value init = buildEmpty(rewriter, loc, type, sizes);
    MLIRContext *ctx = rewriter.getContext();
    // indices map: drop the last (embedding) dim.
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0; i + 1 < rank; ++i)
      idxExprs.push_back(getAffineDimExpr(i, ctx));
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, idxExprs, ctx),
                                   AffineMap::getMultiDimIdentityMap(rank, ctx)};
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    Value rows = getValueOrCreateConstantIndexOp(rewriter, loc,
                                                 tensor::getMixedSize(rewriter, loc, weight, 0));
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, type, ValueRange{indices}, ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value idx = b.create<arith::IndexCastOp>(l, b.getIndexType(), args[0]);
          // Clamp into [0, rows - 1]: an invalid index never reads outside
          // the weight (eager would raise; see the op's description).
          Value zero = b.create<arith::ConstantIndexOp>(l, 0);
          Value one = b.create<arith::ConstantIndexOp>(l, 1);
          Value last = b.create<arith::SubIOp>(l, rows, one);
          idx = b.create<arith::MaxSIOp>(l, idx, zero);
          idx = b.create<arith::MinSIOp>(l, idx, last);
          Value col = b.create<linalg::IndexOp>(l, rank - 1);
          Value v = b.create<tensor::ExtractOp>(l, weight, ValueRange{idx, col});
          b.create<linalg::YieldOp>(l, v);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// kiln.gather: a generic over the index's shape whose body reads the
/// operand with `tensor.extract` at the loop indices, the index value
/// (clamped into the dim, see the op's description) replacing loop `dim`.
struct GatherLowering : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Value input = adaptor.getInput(), index = adaptor.getIndex();
    int64_t rank = type.getRank(), dim = op.getDim();
    if (rank == 0) { // a 0-d gather reads the one element
      rewriter.replaceOp(op, input);
      return success();
    }
    Value init = buildEmpty(rewriter, loc, type, tensor::getMixedSizes(rewriter, loc, index));
    SmallVector<AffineMap> maps(2, rewriter.getMultiDimIdentityMap(rank));
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    Value size = getValueOrCreateConstantIndexOp(rewriter, loc,
                                                 tensor::getMixedSize(rewriter, loc, input, dim));
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, type, ValueRange{index}, ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value idx = b.create<arith::IndexCastOp>(l, b.getIndexType(), args[0]);
          Value zero = b.create<arith::ConstantIndexOp>(l, 0);
          Value last = b.create<arith::SubIOp>(l, size, b.create<arith::ConstantIndexOp>(l, 1));
          idx = b.create<arith::MinSIOp>(l, b.create<arith::MaxSIOp>(l, idx, zero), last);
          SmallVector<Value> coords;
          for (int64_t d = 0; d < rank; ++d)
            coords.push_back(d == dim ? idx : b.create<linalg::IndexOp>(l, d).getResult());
          b.create<linalg::YieldOp>(l, b.create<tensor::ExtractOp>(l, input, coords).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateShapeOpsToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<PermuteLowering, BroadcastToLowering, ReshapeLowering, SliceLowering, ConcatLowering,
               EmbeddingLowering, GatherLowering>(patterns.getContext());
}

} // namespace mlir::kiln

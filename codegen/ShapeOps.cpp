//===- ShapeOps.cpp - kiln shape ops → linalg / tensor ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Lowers `kiln.permute` to `linalg.transpose`, `kiln.broadcast_to` to a
// broadcasting `linalg.generic`, and `kiln.reshape` to
// `tensor.collapse_shape` / `tensor.expand_shape` (a pure collapse or
// expansion directly; any other static reshape as a collapse to 1-D
// followed by an expansion), falling back to `tensor.reshape` with a
// constant shape when dims are dynamic.
//===----------------------------------------------------------------------===//
#include "codegen/Patterns.h"

#include "ir/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {
namespace {

struct PermuteLowering : OpConversionPattern<PermuteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PermuteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    SmallVector<OpFoldResult> sizes;
    for (int64_t d : op.getDims())
      sizes.push_back(tensor::getMixedSize(rewriter, loc, adaptor.getInput(), d));
    Value init = buildEmpty(rewriter, loc, type, sizes);
    rewriter.replaceOpWithNewOp<linalg::TransposeOp>(op, adaptor.getInput(), init,
                                                     op.getDims());
    return success();
  }
};

struct BroadcastToLowering : OpConversionPattern<BroadcastToOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastToOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic target shape");
    rewriter.replaceOp(op, buildBroadcastingGeneric(
                               rewriter, op.getLoc(), type, adaptor.getInput(),
                               [](OpBuilder &, Location, ValueRange args) {
                                 return args[0];
                               }));
    return success();
  }
};

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
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
        SmallVector<ReassociationIndices> all;
        if (from.getRank() > 0)
          all.push_back(llvm::to_vector(llvm::seq<int64_t>(0, from.getRank())));
        flat = from.getRank() > 0
                   ? rewriter.create<tensor::CollapseShapeOp>(loc, flatType, input, all)
                         .getResult()
                   : rewriter.create<tensor::ExpandShapeOp>(loc, flatType, input, all)
                         .getResult();
      }
      if (to.getRank() == 1) {
        rewriter.replaceOp(op, flat);
        return success();
      }
      SmallVector<ReassociationIndices> all;
      if (to.getRank() > 0)
        all.push_back(llvm::to_vector(llvm::seq<int64_t>(0, to.getRank())));
      if (to.getRank() > 0)
        rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, to, flat, all);
      else
        rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(op, to, flat, all);
      return success();
    }
    // Dynamic input with a static target: tensor.reshape with a constant shape.
    if (!to.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic reshape target");
    auto shapeType = RankedTensorType::get({to.getRank()}, rewriter.getI64Type());
    Value shape = rewriter.create<arith::ConstantOp>(
        loc, DenseIntElementsAttr::get(shapeType, to.getShape()));
    rewriter.replaceOpWithNewOp<tensor::ReshapeOp>(op, to, input, shape);
    return success();
  }
};

} // namespace

void populateShapeOpsToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<PermuteLowering, BroadcastToLowering, ReshapeLowering>(
      patterns.getContext());
}

} // namespace mlir::kiln

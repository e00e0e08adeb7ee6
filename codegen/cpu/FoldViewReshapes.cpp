//===- FoldViewReshapes.cpp - reshapes of arena views as views ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-fold-view-reshapes` (Passes.td): a static reshape of a
// `memref.view` is a view of the same bytes with another shape. Rewriting
// it as one lets CSE give every access to a planned slot one memref, which
// LLVM then sees as one pointer inside OpenMP regions (whose captured
// values are passed separately, so two views of one slot looked like two
// buffers that might partly overlap).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUFOLDVIEWRESHAPESPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// expand_shape / collapse_shape(view(buffer, shift)) → view(buffer, shift)
/// when the result is static with the identity layout (what a view makes).
template <typename Reshape> struct ReshapeOfView : OpRewritePattern<Reshape> {
  using OpRewritePattern<Reshape>::OpRewritePattern;

  LogicalResult matchAndRewrite(Reshape op, PatternRewriter &b) const override {
    auto view = op.getSrc().template getDefiningOp<memref::ViewOp>();
    MemRefType type = op.getResultType();
    if (!view || !type.hasStaticShape() || !type.getLayout().isIdentity())
      return b.notifyMatchFailure(op, "not a static identity reshape of a view");
    b.template replaceOpWithNewOp<memref::ViewOp>(op, type, view.getSource(), view.getByteShift(),
                                                  ValueRange{});
    return success();
  }
};

struct CpuFoldViewReshapesPass : impl::CpuFoldViewReshapesPassBase<CpuFoldViewReshapesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ReshapeOfView<memref::ExpandShapeOp>, ReshapeOfView<memref::CollapseShapeOp>>(
        &getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::kiln

//===- KilnToLinalg.cpp - the kiln-convert-to-linalg pass --------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Builds the conversion target (every kiln op illegal) and applies the
// elementwise, matmul, quantization, random, reduction and shape-op pattern
// sets. Ops that
// `kiln-decompose` should have removed (softmax, layer_norm, conv2d and the
// pooling ops) are reported
// with their location before converting; any op left unconverted makes the
// conversion report "failed to legalize" at its location.
//===----------------------------------------------------------------------===//
#include "codegen/common/Passes.h"
#include "codegen/common/Patterns.h"

#include "ir/KilnOps.h"

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CONVERTKILNTOLINALGPASS
#include "codegen/common/Passes.h.inc"

namespace {

struct ConvertKilnToLinalgPass : impl::ConvertKilnToLinalgPassBase<ConvertKilnToLinalgPass> {
  using ConvertKilnToLinalgPassBase::ConvertKilnToLinalgPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();

    bool undecomposed = false;
    func.walk([&](Operation *op) {
      if (isa<SoftmaxOp, LayerNormOp, Conv2dOp, MaxPool2dOp, AvgPool2dOp>(op)) {
        op->emitError() << "'" << op->getName() << "' reached codegen; run kiln-decompose first";
        undecomposed = true;
      }
    });
    if (undecomposed)
      return signalPassFailure();

    ConversionTarget target(*ctx);
    target.addIllegalDialect<KilnDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });

    RewritePatternSet patterns(ctx);
    populateElementwiseToLinalgPatterns(patterns);
    populateMatmulToLinalgPatterns(patterns, sharedLhsGemm);
    populateQuantToLinalgPatterns(patterns);
    populateRandomToLinalgPatterns(patterns);
    populateReductionToLinalgPatterns(patterns);
    populateShapeOpsToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(func, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::kiln

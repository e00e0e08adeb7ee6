//===- ApproximateMath.cpp - polynomial math for vectorizable loops ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Replaces f32 `math` ops (exp, log, tanh, erf, ...) with MLIR's polynomial
// approximations, which are plain arithmetic that LLVM's loop vectorizer can
// widen, instead of scalar libm calls. Also strength-reduces `math.powf`
// with constant exponents (x^2 → x*x, x^0.5 → sqrt). Ops the approximations
// do not cover (f64, pow) are left for convert-math-to-libm / -llvm.
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "codegen/Passes.h.inc"

namespace {

struct ApproximateMathPass : impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathAlgebraicSimplificationPatterns(patterns);
    // convert-math-to-llvm only lowers vector rsqrt; 1/sqrt vectorizes.
    populateExpandRsqrtPattern(patterns);
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::kiln

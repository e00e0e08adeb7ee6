//===- ApproximateMath.cpp - polynomial math for vectorizable loops ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Replaces f32 `math` ops (exp, log, tanh, erf, ...) with MLIR's polynomial
// approximations, which are plain arithmetic that LLVM's loop vectorizer can
// widen, instead of scalar libm calls. Also strength-reduces `math.powf`
// with constant exponents (x^2 → x*x, x^0.5 → sqrt). Ops the approximations
// do not cover (f64, pow) are left for convert-math-to-libm / -llvm.
//
// f32 erf (GELU's hot op) uses kiln's own single-interval rational
// approximation instead of MLIR's three-interval one (about half the
// instructions): erf(x) = sign(x) * min(1, a * P(a²) / Q(a²)), a = min(|x|, 4),
// P of degree 6 and Q of degree 4 in a², fitted on [0, 4] by iteratively
// reweighted least squares for the smallest relative error (max 7e-8 in
// exact arithmetic, 4.2e-7 absolute evaluated in f32; torch's erf is within
// 6e-8). NaN propagates through every step (ordered compares keep it).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUAPPROXIMATEMATHPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

// Coefficients of P and Q, lowest power of a² first.
constexpr double kErfP[] = {1.1283790940264906,   0.20710600461480433,    0.05152230358353677,
                            0.003989790713317564, 0.00014727105355160356, -1.942332625971047e-06,
                            1.911270587533498e-08};
constexpr double kErfQ[] = {1.0, 0.5168741667253934, 0.11796277078164114, 0.01495643452031187,
                            0.0010209346312121744};

/// f32 (scalar or vector) math.erf → the rational approximation above.
struct ErfRational : OpRewritePattern<math::ErfOp> {
  ErfRational(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/10) {}

  LogicalResult matchAndRewrite(math::ErfOp op, PatternRewriter &b) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return b.notifyMatchFailure(op, "not f32");
    Location loc = op.getLoc();
    auto cst = [&](double v) -> Value {
      auto attr = b.getF32FloatAttr(static_cast<float>(v));
      if (auto vec = dyn_cast<VectorType>(type))
        return b.create<arith::ConstantOp>(loc, vec, SplatElementsAttr::get(vec, attr));
      return b.create<arith::ConstantOp>(loc, attr);
    };
    // Ordered compare + select: a NaN input compares false and passes through.
    auto clampAbove = [&](Value v, double limit) -> Value {
      Value c = cst(limit);
      Value over = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, v, c);
      return b.create<arith::SelectOp>(loc, over, c, v);
    };
    auto horner = [&](ArrayRef<double> coeffs, Value z) -> Value {
      Value acc = cst(coeffs.back());
      for (int i = static_cast<int>(coeffs.size()) - 2; i >= 0; --i)
        acc = b.create<math::FmaOp>(loc, acc, z, cst(coeffs[i]));
      return acc;
    };
    Value x = op.getOperand();
    Value a = clampAbove(b.create<math::AbsFOp>(loc, x), 4.0);
    Value z = b.create<arith::MulFOp>(loc, a, a);
    Value p = b.create<arith::MulFOp>(loc, a, horner(kErfP, z));
    Value r = clampAbove(b.create<arith::DivFOp>(loc, p, horner(kErfQ, z)), 1.0);
    b.replaceOpWithNewOp<math::CopySignOp>(op, r, x);
    return success();
  }
};

struct CpuApproximateMathPass : impl::CpuApproximateMathPassBase<CpuApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathAlgebraicSimplificationPatterns(patterns);
    // convert-math-to-llvm only lowers vector rsqrt; 1/sqrt vectorizes.
    populateExpandRsqrtPattern(patterns);
    patterns.add<ErfRational>(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::kiln

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
//
// f64 is never approximated (its math ops become glibc's vector functions,
// VectorMath.h), except that f64 log1p is rewritten over log (below):
// convert-math-to-llvm's log(1 + x) loses everything below 1e-16.
//
// Edge cases the upstream approximations get wrong are fenced off first:
// - exp converts its scaled argument with fptosi, which is poison for NaN.
//   LLVM folds a constant NaN (softmax of an all -inf row) into garbage, so
//   the approximated exp sees 0 instead and the NaN is selected back after.
//   Its 2^k scaling gives 0 below ln(FLT_MIN), where eager's exp returns
//   subnormals: there it computes exp(x / 2) and squares it.
// - log/log2 read the exponent bits, so subnormal inputs came out as
//   log(FLT_MIN); they are scaled by 2^23 first and the logarithm corrected.
// - sin/cos reduce the argument with a one-constant pi/2 in f32 and an i32
//   quotient: 4e-4 off at |x| = 1e4 (rotary embeddings), garbage beyond
//   2^31. They stay math ops, become LLVM intrinsics, and the loop
//   vectorizer calls glibc's vector forms of them (VectorMath.h).
// - atan (and atan2, built on it) is 33 eps off at -0.66; both become libm
//   calls that are vectorized the same way.
// - bf16 maximumf/minimumf: LLVM 19's x86 lowering loses NaNs; they become
//   compares and selects (Bf16MinMaxAsSelects).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

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

/// The constant `v` in `type`'s float element type (f32 or f64), splat when
/// `type` is a vector.
Value splat(OpBuilder &b, Location loc, Type type, double v) {
  auto attr = b.getFloatAttr(getElementTypeOrSelf(type), v);
  if (auto vec = dyn_cast<VectorType>(type))
    return b.create<arith::ConstantOp>(loc, vec, SplatElementsAttr::get(vec, attr));
  return b.create<arith::ConstantOp>(loc, attr);
}

/// f32 (scalar or vector) math.erf → the rational approximation above.
struct ErfRational : OpRewritePattern<math::ErfOp> {
  ErfRational(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/10) {}

  LogicalResult matchAndRewrite(math::ErfOp op, PatternRewriter &b) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return b.notifyMatchFailure(op, "not f32");
    Location loc = op.getLoc();
    auto cst = [&](double v) { return splat(b, loc, type, v); };
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

/// Marks an op built by a fence below so the fence does not match it again.
constexpr llvm::StringLiteral kFenced = "kiln.fenced";

/// Rebuilds `op` (a one-operand math op) on `operand`, marked as fenced.
template <typename Op> Value fencedClone(PatternRewriter &b, Op op, Value operand) {
  auto clone = b.create<Op>(op.getLoc(), operand, op.getFastmathAttr());
  clone->setAttr(kFenced, b.getUnitAttr());
  return clone;
}

/// f32 exp(x) → NaN kept, subnormal results made from a normal one:
/// tiny = x < -87 (below ln(FLT_MIN) = -87.34 the polynomial's 2^k scaling
/// gives 0), r = exp(isnan(x) ? 0 : tiny ? x / 2 : x),
/// exp(x) = isnan(x) ? x : tiny ? r * r : r (one exp per element).
struct FencedExp : OpRewritePattern<math::ExpOp> {
  FencedExp(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/20) {}

  LogicalResult matchAndRewrite(math::ExpOp op, PatternRewriter &b) const override {
    if (!getElementTypeOrSelf(op.getType()).isF32() || op->hasAttr(kFenced))
      return failure();
    Location loc = op.getLoc();
    Type type = op.getType();
    Value x = op.getOperand();
    Value nan = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, x, x);
    Value tiny =
        b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, splat(b, loc, type, -87.0));
    Value half = b.create<arith::MulFOp>(loc, x, splat(b, loc, type, 0.5));
    Value safe = b.create<arith::SelectOp>(loc, nan, splat(b, loc, type, 0.0),
                                           b.create<arith::SelectOp>(loc, tiny, half, x));
    Value r = fencedClone(b, op, safe);
    Value squared = b.create<arith::MulFOp>(loc, r, r);
    b.replaceOpWithNewOp<arith::SelectOp>(op, nan, x,
                                          b.create<arith::SelectOp>(loc, tiny, squared, r));
    return success();
  }
};

/// f32 log/log2 of a subnormal x: log(x * 2^23) - 23 * log(2) (log2: - 23).
template <typename Op> struct SubnormalLog : OpRewritePattern<Op> {
  SubnormalLog(MLIRContext *ctx, double log2) : OpRewritePattern<Op>(ctx, 20), log2(log2) {}

  LogicalResult matchAndRewrite(Op op, PatternRewriter &b) const override {
    if (!getElementTypeOrSelf(op.getType()).isF32() || op->hasAttr(kFenced))
      return failure();
    Location loc = op.getLoc();
    Type type = op.getType();
    Value x = op.getOperand();
    Value tiny =
        b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, splat(b, loc, type, 0x1p-126));
    Value scaled = b.create<arith::MulFOp>(loc, x, splat(b, loc, type, 0x1p23));
    Value log = fencedClone(b, op, b.create<arith::SelectOp>(loc, tiny, scaled, x));
    Value fixed = b.create<arith::SubFOp>(loc, log, splat(b, loc, type, 23.0 * log2));
    b.replaceOpWithNewOp<arith::SelectOp>(op, tiny, fixed, log);
    return success();
  }

  double log2;
};

/// f64 log1p (convert-math-to-llvm would lower it to log(1 + x), which is 0
/// at x = 1e-30 and 8e-8 off at 1e-10): Goldberg's u = 1 + x,
/// log1p(x) = u == 1 ? x : log(u) * (x / (u - 1)), with u = inf kept inf.
/// The log is a vector call (VectorMath.h).
struct AccurateLog1p : OpRewritePattern<math::Log1pOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::Log1pOp op, PatternRewriter &b) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF64())
      return b.notifyMatchFailure(op, "not f64");
    Location loc = op.getLoc();
    auto cst = [&](double v) { return splat(b, loc, type, v); };
    Value x = op.getOperand();
    Value u = b.create<arith::AddFOp>(loc, x, cst(1.0));
    Value log = b.create<math::LogOp>(loc, u, op.getFastmathAttr());
    Value ratio = b.create<arith::DivFOp>(loc, x, b.create<arith::SubFOp>(loc, u, cst(1.0)));
    Value scaled = b.create<arith::MulFOp>(loc, log, ratio);
    Value one = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, u, cst(1.0));
    Value inf = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, u,
                                        cst(std::numeric_limits<double>::infinity()));
    Value big = b.create<arith::SelectOp>(loc, inf, u, scaled);
    b.replaceOpWithNewOp<arith::SelectOp>(op, one, x, big);
    return success();
  }
};

/// The bf16 value `v` was widened from, if any.
Value widenedBf16(Value v) {
  auto ext = v.getDefiningOp<arith::ExtFOp>();
  return ext && getElementTypeOrSelf(ext.getIn().getType()).isBF16() ? ext.getIn() : Value();
}

/// arith.maximumf/minimumf of bf16 values (in bf16, or in f32 between
/// extf's of bf16 values, kiln's lowering of bf16 max/min: InstCombine
/// narrows that back to the bf16 intrinsic) as compares and selects: LLVM
/// 19's x86 lowering of llvm.maximum/minimum on bf16 loses NaNs (max(x,
/// NaN) came out 0; f16 and f32 are right). Result: NaN if either is; else
/// the larger (smaller); equal operands (+0 and -0) combined bitwise, AND
/// for max, OR for min.
template <typename Op, bool isMax> struct Bf16MinMaxAsSelects : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;

  LogicalResult matchAndRewrite(Op op, PatternRewriter &b) const override {
    Type type = op.getType();
    Value x = op.getLhs(), y = op.getRhs();
    Value xn = x, yn = y; // the bf16 operands
    if (!getElementTypeOrSelf(type).isBF16()) {
      xn = widenedBf16(x);
      yn = widenedBf16(y);
      if (!xn || !yn)
        return failure();
    }
    auto like = [&](Type elem) -> Type {
      auto v = dyn_cast<VectorType>(type);
      return v ? Type(v.clone(elem)) : elem;
    };
    Location loc = op.getLoc();
    Type f32 = like(b.getF32Type());
    Value xw = x == xn ? b.create<arith::ExtFOp>(loc, f32, xn).getResult() : x;
    Value yw = y == yn ? b.create<arith::ExtFOp>(loc, f32, yn).getResult() : y;
    Value nan = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, xw, yw);
    Value wins = b.create<arith::CmpFOp>(
        loc, isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, xw, yw);
    Value equal = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, xw, yw);
    Type bits = like(b.getI16Type());
    Value xi = b.create<arith::BitcastOp>(loc, bits, xn);
    Value yi = b.create<arith::BitcastOp>(loc, bits, yn);
    Value both = isMax ? b.create<arith::AndIOp>(loc, xi, yi).getResult()
                       : b.create<arith::OrIOp>(loc, xi, yi).getResult();
    Value tie = b.create<arith::BitcastOp>(loc, like(b.getBF16Type()), both);
    if (tie.getType() != type)
      tie = b.create<arith::ExtFOp>(loc, type, tie);
    Value pick =
        b.create<arith::SelectOp>(loc, wins, x, b.create<arith::SelectOp>(loc, equal, tie, y));
    Value quiet = splat(b, loc, type, std::numeric_limits<double>::quiet_NaN());
    b.replaceOpWithNewOp<arith::SelectOp>(op, nan, quiet, pick);
    return success();
  }
};

/// Drops the upstream sin/cos and atan/atan2 approximations (see the file
/// comment).
void dropInaccurateApproximations(RewritePatternSet &patterns) {
  llvm::erase_if(patterns.getNativePatterns(), [](const std::unique_ptr<RewritePattern> &p) {
    std::optional<OperationName> root = p->getRootKind();
    if (!root)
      return false;
    llvm::StringRef name = root->getStringRef();
    return name == math::SinOp::getOperationName() || name == math::CosOp::getOperationName() ||
           name == math::AtanOp::getOperationName() || name == math::Atan2Op::getOperationName();
  });
}

struct CpuApproximateMathPass : impl::CpuApproximateMathPassBase<CpuApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathAlgebraicSimplificationPatterns(patterns);
    // convert-math-to-llvm only lowers vector rsqrt; 1/sqrt vectorizes.
    populateExpandRsqrtPattern(patterns);
    patterns
        .add<ErfRational, FencedExp, AccurateLog1p, Bf16MinMaxAsSelects<arith::MaximumFOp, true>,
             Bf16MinMaxAsSelects<arith::MinimumFOp, false>>(&getContext());
    patterns.add<SubnormalLog<math::LogOp>>(&getContext(), 0.6931471805599453);
    patterns.add<SubnormalLog<math::Log2Op>>(&getContext(), 1.0);
    populateMathPolynomialApproximationPatterns(patterns);
    dropInaccurateApproximations(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::kiln

//===- Elementwise.cpp - kiln elementwise ops → linalg.generic ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Lowers kiln's constants, casts, unary and broadcasting binary ops,
// comparisons and select to all-parallel `linalg.generic` ops whose indexing
// maps implement numpy broadcasting (size-1 dims read index 0), so that
// `linalg-fuse-elementwise-ops` can fuse whole chains into one loop nest.
// Scalar semantics follow torch: NaN-propagating maximum/minimum/relu,
// ordered comparisons except `ne`, truncating float→int casts.
//===----------------------------------------------------------------------===//
#include "codegen/common/Patterns.h"

#include "ir/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace mlir::kiln {

//===----------------------------------------------------------------------===//
// Shared builders
//===----------------------------------------------------------------------===//

Value buildEmpty(OpBuilder &b, Location loc, RankedTensorType type, ArrayRef<OpFoldResult> sizes) {
  SmallVector<Value> dynamic;
  for (auto [i, size] : llvm::enumerate(sizes))
    if (type.isDynamicDim(i))
      dynamic.push_back(getValueOrCreateConstantIndexOp(b, loc, size));
  return b.create<tensor::EmptyOp>(loc, type, dynamic);
}

Value buildScalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto ft = dyn_cast<FloatType>(type))
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(ft, value));
  return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

/// The sizes of `resultType`, taking each dynamic dim from an input whose
/// aligned dim is not a static 1.
static SmallVector<OpFoldResult> resultSizes(OpBuilder &b, Location loc,
                                             RankedTensorType resultType, ValueRange inputs) {
  int64_t rank = resultType.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!resultType.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr(resultType.getDimSize(d)));
      continue;
    }
    OpFoldResult size = b.getIndexAttr(1);
    for (Value in : inputs) {
      auto t = cast<RankedTensorType>(in.getType());
      int64_t id = d - (rank - t.getRank());
      if (id < 0 || t.getDimSize(id) == 1)
        continue;
      size = b.create<tensor::DimOp>(loc, in, id).getResult();
      break;
    }
    sizes.push_back(size);
  }
  return sizes;
}

/// The indexing map reading an operand of `inShape` inside loops over
/// `outShape` with numpy broadcasting.
static AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> inShape,
                              ArrayRef<int64_t> outShape) {
  int64_t rank = outShape.size(), lead = rank - inShape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, size] : llvm::enumerate(inShape)) {
    int64_t d = i + lead;
    if (size == 1 && outShape[d] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(d, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

Value buildBroadcastingGeneric(OpBuilder &b, Location loc, RankedTensorType resultType,
                               ValueRange inputs, ScalarBodyBuilder body) {
  MLIRContext *ctx = b.getContext();
  // Splat constants become scalars in the body instead of operands.
  SmallVector<Attribute> splats(inputs.size());
  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  for (auto [i, in] : llvm::enumerate(inputs)) {
    DenseElementsAttr dense;
    if (matchPattern(in, m_Constant(&dense)) && dense.isSplat()) {
      splats[i] = dense.getSplatValue<Attribute>();
      continue;
    }
    operands.push_back(in);
    maps.push_back(
        broadcastMap(ctx, cast<RankedTensorType>(in.getType()).getShape(), resultType.getShape()));
  }
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  Value init = buildEmpty(b, loc, resultType, resultSizes(b, loc, resultType, operands));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(), utils::IteratorType::parallel);
  auto generic = b.create<linalg::GenericOp>(
      loc, resultType, operands, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> scalars;
        unsigned next = 0;
        for (Attribute splat : splats) {
          if (splat)
            scalars.push_back(nb.create<arith::ConstantOp>(nl, cast<TypedAttr>(splat)));
          else
            scalars.push_back(args[next++]);
        }
        nb.create<linalg::YieldOp>(nl, body(nb, nl, scalars));
      });
  return generic.getResult(0);
}

//===----------------------------------------------------------------------===//
// Scalar semantics
//===----------------------------------------------------------------------===//

namespace {

bool isFloat(Type t) { return isa<FloatType>(t); }

Value cst(OpBuilder &b, Location loc, Type t, double v) {
  return buildScalarConstant(b, loc, t, v);
}

Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, x));
  Value den = b.create<arith::AddFOp>(loc, cst(b, loc, t, 1.0), e);
  return b.create<arith::DivFOp>(loc, cst(b, loc, t, 1.0), den);
}

Value gelu(OpBuilder &b, Location loc, Value x, bool tanhForm) {
  Type t = x.getType();
  Value inner;
  if (tanhForm) {
    // sqrt(2/pi) * (x + 0.044715 x^3)
    Value x3 = b.create<arith::MulFOp>(loc, b.create<arith::MulFOp>(loc, x, x), x);
    Value poly =
        b.create<arith::AddFOp>(loc, x, b.create<arith::MulFOp>(loc, cst(b, loc, t, 0.044715), x3));
    Value arg = b.create<arith::MulFOp>(loc, cst(b, loc, t, std::sqrt(2.0 / M_PI)), poly);
    inner = b.create<math::TanhOp>(loc, arg);
  } else {
    inner = b.create<math::ErfOp>(loc, b.create<arith::MulFOp>(loc, x, cst(b, loc, t, M_SQRT1_2)));
  }
  Value onePlus = b.create<arith::AddFOp>(loc, cst(b, loc, t, 1.0), inner);
  Value half = b.create<arith::MulFOp>(loc, cst(b, loc, t, 0.5), x);
  return b.create<arith::MulFOp>(loc, half, onePlus);
}

/// Element conversion with torch's `Tensor.to` semantics.
Value convertScalar(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  if (to.isInteger(1)) {
    if (isFloat(from))
      return b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, x, cst(b, loc, from, 0.0));
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, x, cst(b, loc, from, 0.0));
  }
  bool fromBool = from.isInteger(1);
  if (isFloat(from) && isFloat(to)) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return b.create<arith::ExtFOp>(loc, to, x);
    return b.create<arith::TruncFOp>(loc, to, x);
  }
  if (isFloat(to))
    return fromBool ? b.create<arith::UIToFPOp>(loc, to, x).getResult()
                    : b.create<arith::SIToFPOp>(loc, to, x).getResult();
  if (isFloat(from))
    return b.create<arith::FPToSIOp>(loc, to, x);
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return fromBool ? b.create<arith::ExtUIOp>(loc, to, x).getResult()
                    : b.create<arith::ExtSIOp>(loc, to, x).getResult();
  return b.create<arith::TruncIOp>(loc, to, x);
}

/// A binary op chosen by operand type: `FloatOp` for floats, `BoolOp` for
/// i1 (or/xor/and-style logic), `IntOp` for other integers.
template <typename FloatOp, typename BoolOp, typename IntOp>
Value binaryByType(OpBuilder &b, Location loc, ValueRange a) {
  Type t = a[0].getType();
  if (isFloat(t))
    return b.create<FloatOp>(loc, a[0], a[1]);
  if (t.isInteger(1))
    return b.create<BoolOp>(loc, a[0], a[1]);
  return b.create<IntOp>(loc, a[0], a[1]);
}

/// An integer divisor that never traps: 1 where `d` is 0 or -1 (the
/// callers give those their own results).
Value safeIntDivisor(OpBuilder &b, Location loc, Value d) {
  Type t = d.getType();
  auto eq = [&](double v) {
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, d, cst(b, loc, t, v));
  };
  Value unsafe = b.create<arith::OrIOp>(loc, eq(0), eq(-1));
  return b.create<arith::SelectOp>(loc, unsafe, cst(b, loc, t, 1), d);
}

/// Whether remainder `r` is nonzero and differs in sign from divisor `d`:
/// where truncated and floored division disagree.
Value signsDiffer(OpBuilder &b, Location loc, Value r, Value d) {
  Type t = r.getType();
  Value zero = cst(b, loc, t, 0.0);
  if (isFloat(t)) {
    Value nonzero = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, r, zero);
    Value rNeg = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, r, zero);
    Value dNeg = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, d, zero);
    return b.create<arith::AndIOp>(loc, nonzero, b.create<arith::XOrIOp>(loc, rNeg, dNeg));
  }
  Value nonzero = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, r, zero);
  Value rNeg = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, r, zero);
  Value dNeg = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, d, zero);
  return b.create<arith::AndIOp>(loc, nonzero, b.create<arith::XOrIOp>(loc, rNeg, dNeg));
}

/// Integer floor division: truncated quotient minus one where the remainder
/// and the divisor differ in sign; a zero divisor gives `a`, -1 gives `-a`.
Value intFloorDiv(OpBuilder &b, Location loc, Value a, Value d) {
  Type t = a.getType();
  Value safe = safeIntDivisor(b, loc, d);
  Value q = b.create<arith::DivSIOp>(loc, a, safe);
  Value r = b.create<arith::RemSIOp>(loc, a, safe);
  Value qm1 = b.create<arith::SubIOp>(loc, q, cst(b, loc, t, 1));
  q = b.create<arith::SelectOp>(loc, signsDiffer(b, loc, r, d), qm1, q);
  Value isM1 = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, d, cst(b, loc, t, -1));
  Value neg = b.create<arith::SubIOp>(loc, cst(b, loc, t, 0), a);
  return b.create<arith::SelectOp>(loc, isM1, neg, q);
}

/// Float floor division as torch computes it (div_floor_floating_vec in
/// ATen): fmod-based, rounded to the nearest integer, never a reciprocal.
Value floatFloorDiv(OpBuilder &b, Location loc, Value a, Value d) {
  Type t = a.getType();
  using P = arith::CmpFPredicate;
  auto cmp = [&](P p, Value x, Value y) { return b.create<arith::CmpFOp>(loc, p, x, y); };
  Value zero = cst(b, loc, t, 0.0), one = cst(b, loc, t, 1.0), inf = cst(b, loc, t, INFINITY);
  Value basic = b.create<arith::DivFOp>(loc, a, d);
  Value mod = b.create<arith::RemFOp>(loc, a, d);
  // a - mod, or a where a / d overflows while a is finite (ATen's fixup).
  Value overflow =
      b.create<arith::AndIOp>(loc, cmp(P::OEQ, b.create<math::AbsFOp>(loc, basic), inf),
                              cmp(P::UNE, b.create<math::AbsFOp>(loc, a), inf));
  Value whole = b.create<arith::SelectOp>(loc, overflow, a, b.create<arith::SubFOp>(loc, a, mod));
  Value div = b.create<arith::DivFOp>(loc, whole, d);
  div = b.create<arith::SelectOp>(loc, signsDiffer(b, loc, mod, d),
                                  b.create<arith::SubFOp>(loc, div, one), div);
  Value fl = b.create<math::FloorOp>(loc, div);
  Value up = cmp(P::OGT, b.create<arith::SubFOp>(loc, div, fl), cst(b, loc, t, 0.5));
  fl = b.create<arith::SelectOp>(loc, up, b.create<arith::AddFOp>(loc, fl, one), fl);
  Value signedZero = b.create<math::CopySignOp>(loc, zero, basic);
  fl = b.create<arith::SelectOp>(loc, cmp(P::OEQ, div, zero), signedZero, fl);
  return b.create<arith::SelectOp>(loc, cmp(P::OEQ, d, zero), basic, fl);
}

// One overload per op: the scalar computation from the body's arguments.
#define KILN_BODY(OP) [[maybe_unused]] Value body(OP op, OpBuilder &b, Location loc, ValueRange a)

KILN_BODY(NegOp) {
  if (isFloat(a[0].getType()))
    return b.create<arith::NegFOp>(loc, a[0]);
  return b.create<arith::SubIOp>(loc, cst(b, loc, a[0].getType(), 0), a[0]);
}
KILN_BODY(AbsOp) {
  if (isFloat(a[0].getType()))
    return b.create<math::AbsFOp>(loc, a[0]);
  if (a[0].getType().isInteger(1))
    return a[0];
  return b.create<math::AbsIOp>(loc, a[0]);
}
KILN_BODY(ReluOp) {
  Type t = a[0].getType();
  if (isFloat(t))
    return b.create<arith::MaximumFOp>(loc, a[0], cst(b, loc, t, 0.0));
  if (t.isInteger(1))
    return a[0];
  return b.create<arith::MaxSIOp>(loc, a[0], cst(b, loc, t, 0));
}
KILN_BODY(ExpOp) { return b.create<math::ExpOp>(loc, a[0]); }
KILN_BODY(LogOp) { return b.create<math::LogOp>(loc, a[0]); }
KILN_BODY(TanhOp) { return b.create<math::TanhOp>(loc, a[0]); }
KILN_BODY(SqrtOp) { return b.create<math::SqrtOp>(loc, a[0]); }
KILN_BODY(RsqrtOp) { return b.create<math::RsqrtOp>(loc, a[0]); }
KILN_BODY(ErfOp) { return b.create<math::ErfOp>(loc, a[0]); }
KILN_BODY(SinOp) { return b.create<math::SinOp>(loc, a[0]); }
KILN_BODY(CosOp) { return b.create<math::CosOp>(loc, a[0]); }
KILN_BODY(TanOp) { return b.create<math::TanOp>(loc, a[0]); }
KILN_BODY(AtanOp) { return b.create<math::AtanOp>(loc, a[0]); }
KILN_BODY(FloorOp) { return b.create<math::FloorOp>(loc, a[0]); }
KILN_BODY(CeilOp) { return b.create<math::CeilOp>(loc, a[0]); }
KILN_BODY(RoundOp) { return b.create<math::RoundEvenOp>(loc, a[0]); }
KILN_BODY(TruncOp) { return b.create<math::TruncOp>(loc, a[0]); }
KILN_BODY(Log1pOp) { return b.create<math::Log1pOp>(loc, a[0]); }
KILN_BODY(Expm1Op) {
  // exp(x) - 1 cancels near 0 (and math-to-llvm lowers expm1 that way):
  // for |x| < 0.5, expm1(x) = u == 1 ? x : (u - 1) * (x / log(u)) with
  // u = exp(x) (Kahan), exact at 0 and a few ulp elsewhere; beyond, u - 1
  // itself (within 3 ulp: no cancellation), which also keeps inf, -1 and
  // NaN (Kahan's ratio overflowed for f32 x > 84.3 and went 1.7e-4 off at
  // x = -100, where exp(x) is subnormal).
  Value x = a[0];
  Type t = x.getType();
  Value u = b.create<math::ExpOp>(loc, x);
  Value one = cst(b, loc, t, 1.0);
  Value um1 = b.create<arith::SubFOp>(loc, u, one);
  Value ratio = b.create<arith::MulFOp>(
      loc, um1, b.create<arith::DivFOp>(loc, x, b.create<math::LogOp>(loc, u)));
  Value isOne = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, u, one);
  Value kahan = b.create<arith::SelectOp>(loc, isOne, x, ratio);
  Value near = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT,
                                       b.create<math::AbsFOp>(loc, x), cst(b, loc, t, 0.5));
  return b.create<arith::SelectOp>(loc, near, kahan, um1);
}
KILN_BODY(Log2Op) { return b.create<math::Log2Op>(loc, a[0]); }
KILN_BODY(SigmoidOp) { return sigmoid(b, loc, a[0]); }
KILN_BODY(SiluOp) { return b.create<arith::MulFOp>(loc, a[0], sigmoid(b, loc, a[0])); }
KILN_BODY(GeluOp) { return gelu(b, loc, a[0], op.getApproximate() == "tanh"); }
KILN_BODY(CastOp) { return convertScalar(b, loc, a[0], getElementTypeOrSelf(op.getType())); }

KILN_BODY(AddOp) { return binaryByType<arith::AddFOp, arith::OrIOp, arith::AddIOp>(b, loc, a); }
KILN_BODY(SubOp) { return binaryByType<arith::SubFOp, arith::XOrIOp, arith::SubIOp>(b, loc, a); }
KILN_BODY(MulOp) { return binaryByType<arith::MulFOp, arith::AndIOp, arith::MulIOp>(b, loc, a); }
KILN_BODY(DivOp) {
  // Exact IEEE division, as eager divides: x * (1/c) differs from x / c in
  // the last bit for about a sixth of the quotients, enough to move
  // `(x / 1.1).long()` by one. Softmax multiplies by its reciprocal itself
  // (kiln-decompose), as torch's kernel does.
  return b.create<arith::DivFOp>(loc, a[0], a[1]);
}
KILN_BODY(PowOp) { return b.create<math::PowFOp>(loc, a[0], a[1]); }
KILN_BODY(MaximumOp) {
  return binaryByType<arith::MaximumFOp, arith::OrIOp, arith::MaxSIOp>(b, loc, a);
}
KILN_BODY(MinimumOp) {
  return binaryByType<arith::MinimumFOp, arith::AndIOp, arith::MinSIOp>(b, loc, a);
}
KILN_BODY(FmodOp) {
  if (isFloat(a[0].getType()))
    return b.create<arith::RemFOp>(loc, a[0], a[1]);
  // x % 1 == 0, which is also x fmod -1 (and 0 for a zero divisor).
  return b.create<arith::RemSIOp>(loc, a[0], safeIntDivisor(b, loc, a[1]));
}
KILN_BODY(FloorDivOp) {
  if (isFloat(a[0].getType()))
    return floatFloorDiv(b, loc, a[0], a[1]);
  return intFloorDiv(b, loc, a[0], a[1]);
}
KILN_BODY(SelectOp) { return b.create<arith::SelectOp>(loc, a[0], a[1], a[2]); }
#undef KILN_BODY

/// Comparison predicates: (float, signed int, i1 as unsigned).
struct Predicates {
  arith::CmpFPredicate f;
  arith::CmpIPredicate s, u;
};
Predicates predicates(EqOp) {
  return {arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq, arith::CmpIPredicate::eq};
}
Predicates predicates(NeOp) {
  return {arith::CmpFPredicate::UNE, arith::CmpIPredicate::ne, arith::CmpIPredicate::ne};
}
Predicates predicates(LtOp) {
  return {arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt, arith::CmpIPredicate::ult};
}
Predicates predicates(LeOp) {
  return {arith::CmpFPredicate::OLE, arith::CmpIPredicate::sle, arith::CmpIPredicate::ule};
}
Predicates predicates(GtOp) {
  return {arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt, arith::CmpIPredicate::ugt};
}
Predicates predicates(GeOp) {
  return {arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge, arith::CmpIPredicate::uge};
}

/// True when every operand and the result hold ints or floats.
bool hasScalarElements(Operation *op) {
  auto ok = [](Type t) { return isa<FloatType, IntegerType>(getElementTypeOrSelf(t)); };
  return llvm::all_of(op->getOperandTypes(), ok) && llvm::all_of(op->getResultTypes(), ok);
}

/// The body of `op` computed on 16-bit floats (f16, bf16) in f32 and
/// rounded once, as torch computes them ("opmath"); other types as they are.
template <typename OpTy> Value bodyInOpmath(OpTy op, OpBuilder &b, Location loc, ValueRange args) {
  auto narrow = [](Type t) { return t.isF16() || t.isBF16(); };
  if (std::is_same_v<OpTy, CastOp> || std::is_same_v<OpTy, SelectOp> ||
      llvm::none_of(args, [&](Value v) { return narrow(v.getType()); }))
    return body(op, b, loc, args);
  SmallVector<Value> wide;
  for (Value v : args)
    wide.push_back(narrow(v.getType()) ? b.create<arith::ExtFOp>(loc, b.getF32Type(), v).getResult()
                                       : v);
  Value r = body(op, b, loc, wide);
  Type resultElt = getElementTypeOrSelf(op->getResult(0).getType());
  if (r.getType() != resultElt)
    r = b.create<arith::TruncFOp>(loc, resultElt, r);
  return r;
}

/// Generic lowering of an elementwise op through its `body` overload.
template <typename OpTy> struct ElementwiseLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!hasScalarElements(op))
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    auto type = cast<RankedTensorType>(op.getType());
    Value result = buildBroadcastingGeneric(rewriter, op.getLoc(), type, adaptor.getOperands(),
                                            [&](OpBuilder &b, Location loc, ValueRange args) {
                                              return bodyInOpmath(op, b, loc, args);
                                            });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Comparisons: float (ordered, `ne` unordered), signed int, i1 unsigned.
template <typename OpTy> struct CompareLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!hasScalarElements(op))
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    Predicates p = predicates(op);
    Value result = buildBroadcastingGeneric(
        rewriter, op.getLoc(), cast<RankedTensorType>(op.getType()), adaptor.getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange a) {
          Type t = a[0].getType();
          if (isFloat(t))
            return b.create<arith::CmpFOp>(loc, p.f, a[0], a[1]).getResult();
          return b.create<arith::CmpIOp>(loc, t.isInteger(1) ? p.u : p.s, a[0], a[1]).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// kiln.constant → arith.constant (dense tensors stay tensors).
struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConstantOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "value is not a typed attribute");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

} // namespace

void populateElementwiseToLinalgPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ConstantLowering>(ctx);
  patterns.add<
      ElementwiseLowering<CastOp>, ElementwiseLowering<NegOp>, ElementwiseLowering<AbsOp>,
      ElementwiseLowering<ReluOp>, ElementwiseLowering<ExpOp>, ElementwiseLowering<LogOp>,
      ElementwiseLowering<TanhOp>, ElementwiseLowering<SigmoidOp>, ElementwiseLowering<GeluOp>,
      ElementwiseLowering<SiluOp>, ElementwiseLowering<SqrtOp>, ElementwiseLowering<RsqrtOp>,
      ElementwiseLowering<ErfOp>, ElementwiseLowering<AddOp>, ElementwiseLowering<SubOp>,
      ElementwiseLowering<MulOp>, ElementwiseLowering<DivOp>, ElementwiseLowering<PowOp>,
      ElementwiseLowering<MaximumOp>, ElementwiseLowering<MinimumOp>, ElementwiseLowering<FmodOp>,
      ElementwiseLowering<FloorDivOp>, ElementwiseLowering<SelectOp>>(ctx);
  patterns
      .add<ElementwiseLowering<SinOp>, ElementwiseLowering<CosOp>, ElementwiseLowering<TanOp>,
           ElementwiseLowering<AtanOp>, ElementwiseLowering<FloorOp>, ElementwiseLowering<CeilOp>,
           ElementwiseLowering<RoundOp>, ElementwiseLowering<TruncOp>, ElementwiseLowering<Log1pOp>,
           ElementwiseLowering<Expm1Op>, ElementwiseLowering<Log2Op>>(ctx);
  patterns.add<CompareLowering<EqOp>, CompareLowering<NeOp>, CompareLowering<LtOp>,
               CompareLowering<LeOp>, CompareLowering<GtOp>, CompareLowering<GeOp>>(ctx);
}

} // namespace mlir::kiln

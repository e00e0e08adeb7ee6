//===- Random.cpp - kiln.random → linalg.generic (Philox 4x32-10) ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Lowers `kiln.random` to an all-parallel `linalg.generic` whose body
// computes Philox 4x32-10 on the element's linear index (`linalg.index`),
// so the generator fuses with its consumers (dropout's mask multiply) and
// never materializes a buffer of random bits. The scalar recipe (key and
// counter words, bits → uniform / normal / integer) is the op's
// description in ir/KilnRandomOps.td; kiln/_philox.py computes the same
// values with torch ops and the tests compare them bitwise.
//===----------------------------------------------------------------------===//
#include "codegen/common/Patterns.h"

#include "ir/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <array>
#include <cmath>

namespace mlir::kiln {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;   // round multipliers
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u; // key schedule

Value i32Const(OpBuilder &b, Location loc, uint32_t v) {
  return b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(static_cast<int32_t>(v)));
}
Value i64Const(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(v));
}

/// The low and high 32-bit words of the i64 `v`.
std::pair<Value, Value> split64(OpBuilder &b, Location loc, Value v) {
  Type i32 = b.getI32Type();
  Value hi = b.create<arith::ShRUIOp>(loc, v, i64Const(b, loc, 32));
  return {b.create<arith::TruncIOp>(loc, i32, v), b.create<arith::TruncIOp>(loc, i32, hi)};
}

/// Philox 4x32-10 of counter (c0, c1, 0, 0) under key (k0, k1).
std::array<Value, 4> philox(OpBuilder &b, Location loc, Value k0, Value k1, Value c0, Value c1) {
  Value zero = i32Const(b, loc, 0);
  std::array<Value, 4> c = {c0, c1, zero, zero};
  Value m0 = i32Const(b, loc, kMul0), m1 = i32Const(b, loc, kMul1);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = b.create<arith::AddIOp>(loc, k0, i32Const(b, loc, kWeyl0));
      k1 = b.create<arith::AddIOp>(loc, k1, i32Const(b, loc, kWeyl1));
    }
    auto p0 = b.create<arith::MulUIExtendedOp>(loc, m0, c[0]);
    auto p1 = b.create<arith::MulUIExtendedOp>(loc, m1, c[2]);
    Value w0 = b.create<arith::XOrIOp>(loc, b.create<arith::XOrIOp>(loc, p1.getHigh(), c[1]), k0);
    Value w2 = b.create<arith::XOrIOp>(loc, b.create<arith::XOrIOp>(loc, p0.getHigh(), c[3]), k1);
    c = {w0, p1.getLow(), w2, p0.getLow()};
  }
  return c;
}

/// The 64-bit word lo | hi << 32.
Value join64(OpBuilder &b, Location loc, Value lo, Value hi) {
  Type i64 = b.getI64Type();
  Value h =
      b.create<arith::ShLIOp>(loc, b.create<arith::ExtUIOp>(loc, i64, hi), i64Const(b, loc, 32));
  return b.create<arith::OrIOp>(loc, h, b.create<arith::ExtUIOp>(loc, i64, lo));
}

/// A uniform value in [0, 1) of float type `t` from the top `bits` bits of
/// the integer `word` (exact in `t`).
Value uniformFromBits(OpBuilder &b, Location loc, Value word, unsigned bits, FloatType t) {
  unsigned width = word.getType().getIntOrFloatBitWidth();
  Value shift = b.create<arith::ConstantOp>(loc, b.getIntegerAttr(word.getType(), width - bits));
  Value top = b.create<arith::ShRUIOp>(loc, word, shift);
  Value f = b.create<arith::UIToFPOp>(loc, t, top);
  return b.create<arith::MulFOp>(loc, f, buildScalarConstant(b, loc, t, std::ldexp(1.0, -bits)));
}

/// The scalar value of `op` at linear index `linear` (i64) from the seed
/// and offset scalars.
Value randomScalar(RandomOp op, OpBuilder &b, Location loc, Value seed, Value offset,
                   Value linear) {
  auto [k0, k1] = split64(b, loc, seed);
  auto [c0, c1] = split64(b, loc, b.create<arith::AddIOp>(loc, offset, linear));
  std::array<Value, 4> r = philox(b, loc, k0, k1, c0, c1);
  Type elt = getElementTypeOrSelf(op.getType());
  StringRef dist = op.getDistribution();
  if (dist == "integer") {
    Value bits = join64(b, loc, r[0], r[1]);
    int64_t low = op.getLowAttr().getInt(), high = op.getHighAttr().getInt();
    Value range = i64Const(
        b, loc, static_cast<int64_t>(static_cast<uint64_t>(high) - static_cast<uint64_t>(low)));
    Value v = b.create<arith::AddIOp>(loc, i64Const(b, loc, low),
                                      b.create<arith::RemUIOp>(loc, bits, range));
    return elt.isInteger(64) ? v : b.create<arith::TruncIOp>(loc, elt, v).getResult();
  }
  auto ft = cast<FloatType>(elt);
  bool wide = ft.isF64();
  FloatType work = wide ? b.getF64Type() : b.getF32Type();
  auto uniform = [&](int first) {
    if (wide)
      return uniformFromBits(b, loc, join64(b, loc, r[first], r[first + 1]), 53, work);
    unsigned bits = ft.isF16() ? 11 : ft.isBF16() ? 8 : 24;
    return uniformFromBits(b, loc, r[first], dist == "normal" ? 24 : bits, work);
  };
  Value u = uniform(0);
  if (dist == "normal") {
    // sqrt(-2 ln(1 - u0)) * cos(2 pi u1); 1 - u0 is in (0, 1].
    Value one = buildScalarConstant(b, loc, work, 1.0);
    Value lg = b.create<math::LogOp>(loc, b.create<arith::SubFOp>(loc, one, u));
    Value radius = b.create<math::SqrtOp>(
        loc, b.create<arith::MulFOp>(loc, buildScalarConstant(b, loc, work, -2.0), lg));
    Value angle = b.create<arith::MulFOp>(loc, buildScalarConstant(b, loc, work, 2.0 * M_PI),
                                          uniform(wide ? 2 : 1));
    u = b.create<arith::MulFOp>(loc, radius, b.create<math::CosOp>(loc, angle));
  }
  return u.getType() == ft ? u : b.create<arith::TruncFOp>(loc, ft, u).getResult();
}

/// kiln.random → linalg.generic over the result, reading the 0-d seed and
/// offset and computing each element from its linear index.
struct RandomLowering : OpConversionPattern<RandomOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(RandomOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type elt = type.getElementType();
    if (isa<FloatType>(elt) && !elt.isF16() && !elt.isBF16() && !elt.isF32() && !elt.isF64())
      return rewriter.notifyMatchFailure(op, "unsupported float type");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0; d < rank; ++d)
      sizes.push_back(
          type.isDynamicDim(d)
              ? OpFoldResult(rewriter.create<tensor::DimOp>(loc, adaptor.getLike(), d).getResult())
              : OpFoldResult(rewriter.getIndexAttr(type.getDimSize(d))));
    Value init = buildEmpty(rewriter, loc, type, sizes);
    AffineMap scalarMap = AffineMap::get(rank, 0, {}, ctx);
    SmallVector<AffineMap> maps = {scalarMap, scalarMap, rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, type, ValueRange{adaptor.getSeed(), adaptor.getOffset()}, ValueRange{init}, maps,
        iterators, [&](OpBuilder &b, Location nl, ValueRange args) {
          // Row-major linear index: ((i0 * n1 + i1) * n2 + i2) ...
          Value linear = b.create<arith::ConstantIndexOp>(nl, 0);
          for (int64_t d = 0; d < rank; ++d) {
            Value n = getValueOrCreateConstantIndexOp(b, nl, sizes[d]);
            linear = b.create<arith::AddIOp>(nl, b.create<arith::MulIOp>(nl, linear, n),
                                             b.create<linalg::IndexOp>(nl, d));
          }
          Value linear64 = b.create<arith::IndexCastOp>(nl, b.getI64Type(), linear);
          b.create<linalg::YieldOp>(nl, randomScalar(op, b, nl, args[0], args[1], linear64));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateRandomToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<RandomLowering>(patterns.getContext());
}

} // namespace mlir::kiln

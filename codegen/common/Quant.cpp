//===- Quant.cpp - kiln's quantization ops → linalg ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Target-neutral lowerings of ir/KilnQuantOps.td for backends without int8
// library calls of their own (CUDA; the CPU turns kiln.qlinear into
// runtime/cpu calls first, kiln-cpu-quant-to-calls, and refuses q/dq that no
// kernel consumed):
//
// - `kiln.quantize` (dynamic symmetric int8): a row reduction of |x|, the
//   scale `max / 127` (1 for an all-zero row, NaN for a row with inf/NaN,
//   as runtime/cpu/Int8Gemm.cpp), `clamp(round_half_even(x / scale), ±127)`;
// - `kiln.dequantize` of i8/i32 values: `f32(q - zero_point) * scale`;
// - `kiln.int8_view`: byte `j % 4` of word `j / 4` (little-endian);
// - `kiln.qlinear` (dynamic per-token/per-tensor and static activations,
//   weight-only int8): the input quantized to i8 as above (static: to
//   uint8 with the calibrated scale and zero point, then shifted by -128 to
//   i8; the shift comes back through the weight's row sums:
//   `sum((q - zp) w) = sum((q - 128) w) + (128 - zp) rowsum(w)`), one
//   `linalg.matmul_transpose_b` of i8 operands into an i32 accumulator
//   (cuBLASLt's int8 GEMM on CUDA), and an epilogue `f32(acc) * (x_scale *
//   w_scale) + bias` in the order the CPU's epilogue computes it, so the
//   integer products and the f32 result agree with the CPU path. Weight-only
//   layers dequantize the weight and run an f32 GEMM; grouped (int4) ones
//   too, each value scaled by its group's scale (`kiln.int4_view` unpacks
//   the nibbles).
//===----------------------------------------------------------------------===//
#include "codegen/common/Patterns.h"

#include "ir/KilnQuantOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

namespace mlir::kiln {
namespace {

Value f32Const(OpBuilder &b, Location loc, double v) {
  return buildScalarConstant(b, loc, b.getF32Type(), v);
}

/// A generic over `loops` loops (`reduced` marks reduction loops) reading
/// `inputs` through `maps` into `init` (its map last in `maps`).
Value buildGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                   ArrayRef<AffineMap> maps, ArrayRef<bool> reduced,
                   function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<utils::IteratorType> iterators;
  for (bool r : reduced)
    iterators.push_back(r ? utils::IteratorType::reduction : utils::IteratorType::parallel);
  return b
      .create<linalg::GenericOp>(loc, init.getType(), inputs, ValueRange{init}, maps, iterators,
                                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                                   nb.create<linalg::YieldOp>(nl, body(nb, nl, args));
                                 })
      .getResult(0);
}

/// An empty tensor of `shape` x `elem` whose dynamic dims (only dim 0 can
/// be: the rows) take `rows`.
Value emptyOf(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elem, OpFoldResult rows) {
  auto type = RankedTensorType::get(shape, elem);
  SmallVector<OpFoldResult> sizes;
  for (auto [d, s] : llvm::enumerate(shape))
    sizes.push_back(d == 0 ? rows : b.getIndexAttr(s));
  return buildEmpty(b, loc, type, sizes);
}

/// The largest |x| of each row of x [M, K] ([M]), or of all of x (0-d) when
/// `perTensor`; NaN propagates (arith.maximumf).
Value absMax(OpBuilder &b, Location loc, Value x, bool perTensor) {
  MLIRContext *ctx = b.getContext();
  auto xt = cast<RankedTensorType>(x.getType());
  OpFoldResult rows = tensor::getMixedSize(b, loc, x, 0);
  Value zero = f32Const(b, loc, 0.0);
  auto max = [](OpBuilder &nb, Location l, Value acc, Value v) {
    return nb.create<arith::MaximumFOp>(l, acc, v).getResult();
  };
  Value init =
      b.create<linalg::FillOp>(loc, zero, emptyOf(b, loc, {xt.getDimSize(0)}, b.getF32Type(), rows))
          .getResult(0);
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  Value perRow = buildGeneric(
      b, loc, x, init, {AffineMap::get(2, 0, {d0, d1}, ctx), AffineMap::get(2, 0, {d0}, ctx)},
      {false, true}, [&](OpBuilder &nb, Location l, ValueRange a) {
        return max(nb, l, a[1], nb.create<math::AbsFOp>(l, a[0]));
      });
  if (!perTensor)
    return perRow;
  Value scalarInit =
      b.create<linalg::FillOp>(loc, zero, emptyOf(b, loc, {}, b.getF32Type(), rows)).getResult(0);
  return buildGeneric(
      b, loc, perRow, scalarInit, {AffineMap::get(1, 0, {d0}, ctx), AffineMap::get(1, 0, {}, ctx)},
      {true}, [&](OpBuilder &nb, Location l, ValueRange a) { return max(nb, l, a[1], a[0]); });
}

/// The symmetric scales of `absMax` (any shape): max / `qmax` (127 for int8,
/// 448 for fp8 e4m3), 1 where the max is 0, NaN where it is inf or NaN
/// (runtime/cpu/Int8Gemm.cpp scaleOf).
Value scalesOf(OpBuilder &b, Location loc, Value absMax, double qmax = 127.0) {
  auto type = cast<RankedTensorType>(absMax.getType());
  return buildBroadcastingGeneric(
      b, loc, type, absMax, [qmax](OpBuilder &nb, Location l, ValueRange a) {
        Value m = a[0];
        Value finite =
            nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OLT, m,
                                     f32Const(nb, l, std::numeric_limits<double>::infinity()));
        Value positive =
            nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGT, m, f32Const(nb, l, 0));
        Value scaled = nb.create<arith::DivFOp>(l, m, f32Const(nb, l, qmax));
        Value s = nb.create<arith::SelectOp>(l, positive, scaled, f32Const(nb, l, 1.0));
        return nb
            .create<arith::SelectOp>(l, finite, s,
                                     f32Const(nb, l, std::numeric_limits<double>::quiet_NaN()))
            .getResult();
      });
}

/// `v` clamped to [lo, hi] (NaN gives lo: a defined integer for a row whose
/// outputs are NaN anyway) and converted to i8.
Value clampToI8(OpBuilder &b, Location loc, Value v, double lo, double hi) {
  v = b.create<arith::MaxNumFOp>(loc, v, f32Const(b, loc, lo));
  v = b.create<arith::MinNumFOp>(loc, v, f32Const(b, loc, hi));
  return b.create<arith::FPToSIOp>(loc, b.getI8Type(), v);
}

/// x [M, K] quantized with `scales` ([M] per row, or 0-d) to `elem`: i8
/// (round half to even, clamped to ±127) or f8E4M3FN (clamped to ±448,
/// rounded to nearest even by the truncation) [M, K].
Value quantizeRows(OpBuilder &b, Location loc, Value x, Value scales, Type elem) {
  MLIRContext *ctx = b.getContext();
  auto xt = cast<RankedTensorType>(x.getType());
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  bool perRow = cast<RankedTensorType>(scales.getType()).getRank() == 1;
  AffineMap id = AffineMap::get(2, 0, {d0, d1}, ctx);
  AffineMap scaleMap = perRow ? AffineMap::get(2, 0, {d0}, ctx) : AffineMap::get(2, 0, {}, ctx);
  Value init = emptyOf(b, loc, xt.getShape(), elem, tensor::getMixedSize(b, loc, x, 0));
  return buildGeneric(b, loc, ValueRange{x, scales}, init, {id, scaleMap, id}, {false, false},
                      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                        Value v = nb.create<arith::DivFOp>(l, a[0], a[1]);
                        if (elem.isInteger(8))
                          return clampToI8(nb, l, nb.create<math::RoundEvenOp>(l, v), -127.0,
                                           127.0);
                        v = nb.create<arith::MaxNumFOp>(l, v, f32Const(nb, l, -448.0));
                        v = nb.create<arith::MinNumFOp>(l, v, f32Const(nb, l, 448.0));
                        return nb.create<arith::TruncFOp>(l, elem, v);
                      });
}

/// x [M, K] as torch's quantize_per_tensor to uint8 with `scale` and `zero`
/// (the reciprocal rounded to f32, the product in f32), minus 128: i8.
Value quantizeStaticRows(OpBuilder &b, Location loc, Value x, float scale, int64_t zero) {
  auto xt = cast<RankedTensorType>(x.getType());
  auto type = RankedTensorType::get(xt.getShape(), b.getI8Type());
  float inv = float(1.0 / double(scale));
  return buildBroadcastingGeneric(b, loc, type, x, [&](OpBuilder &nb, Location l, ValueRange a) {
    Value q =
        nb.create<math::RoundEvenOp>(l, nb.create<arith::MulFOp>(l, a[0], f32Const(nb, l, inv)));
    q = nb.create<arith::AddFOp>(l, q, f32Const(nb, l, double(zero)));
    q = nb.create<arith::MaxNumFOp>(l, q, f32Const(nb, l, 0.0));
    q = nb.create<arith::MinNumFOp>(l, q, f32Const(nb, l, 255.0));
    q = nb.create<arith::SubFOp>(l, q, f32Const(nb, l, 128.0));
    return nb.create<arith::FPToSIOp>(l, nb.getI8Type(), q).getResult();
  });
}

/// The i32 sum of each row of the int8 weight w [N, K]: [N].
Value weightRowSums(OpBuilder &b, Location loc, Value w) {
  MLIRContext *ctx = b.getContext();
  auto wt = cast<RankedTensorType>(w.getType());
  Value zero = buildScalarConstant(b, loc, b.getI32Type(), 0);
  Value init =
      b.create<linalg::FillOp>(
           loc, zero, emptyOf(b, loc, {wt.getDimSize(0)}, b.getI32Type(), b.getIndexAttr(0)))
          .getResult(0);
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  return buildGeneric(b, loc, w, init,
                      {AffineMap::get(2, 0, {d0, d1}, ctx), AffineMap::get(2, 0, {d0}, ctx)},
                      {false, true}, [](OpBuilder &nb, Location l, ValueRange a) {
                        Value v = nb.create<arith::ExtSIOp>(l, nb.getI32Type(), a[0]);
                        return nb.create<arith::AddIOp>(l, a[1], v).getResult();
                      });
}

/// `f32(q - zero) * scale` of i8/i32 `q` (the subtraction in i32).
Value dequantizeValue(OpBuilder &b, Location loc, Value q, Value scale, int64_t zero) {
  Type i32 = b.getI32Type();
  if (q.getType() != i32)
    q = b.create<arith::ExtSIOp>(loc, i32, q);
  if (zero != 0)
    q = b.create<arith::SubIOp>(loc, q, buildScalarConstant(b, loc, i32, double(zero)));
  Value f = b.create<arith::SIToFPOp>(loc, b.getF32Type(), q);
  return b.create<arith::MulFOp>(loc, f, scale);
}

struct QuantizeLowering : OpConversionPattern<QuantizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(QuantizeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    if (xt.getRank() < 2)
      return rewriter.notifyMatchFailure(op, "rank-1 input");
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, x);
    Value x2 = collapseLeading(rewriter, loc, x, 1);
    bool perTensor = op.getGranularity() == "per_tensor";
    Value scales = scalesOf(rewriter, loc, absMax(rewriter, loc, x2, perTensor));
    Value q = quantizeRows(rewriter, loc, x2, scales, rewriter.getI8Type());
    auto qType = cast<RankedTensorType>(op.getResult().getType());
    auto sType = cast<RankedTensorType>(op.getScale().getType());
    q = expandTo(rewriter, loc, q, qType, sizes);
    SmallVector<OpFoldResult> scaleSizes(sizes);
    scaleSizes.back() = rewriter.getIndexAttr(1);
    Value s = perTensor ? rewriter.create<tensor::ExpandShapeOp>(loc, sType, scales,
                                                                 ArrayRef<ReassociationIndices>{})
                        : expandTo(rewriter, loc, scales, sType, scaleSizes);
    rewriter.replaceOp(op, {q, s});
    return success();
  }
};

struct DequantizeLowering : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Type elem = cast<RankedTensorType>(op.getInput().getType()).getElementType();
    if (!elem.isSignlessInteger(8) && !elem.isSignlessInteger(32))
      return rewriter.notifyMatchFailure(op, "only i8/i32 values are lowered");
    int64_t zero = op.getZeroPoint();
    Value r = buildBroadcastingGeneric(rewriter, op.getLoc(), cast<RankedTensorType>(op.getType()),
                                       ValueRange{adaptor.getInput(), adaptor.getScale()},
                                       [&](OpBuilder &nb, Location l, ValueRange a) {
                                         return dequantizeValue(nb, l, a[0], a[1], zero);
                                       });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// The values of a packed view `type` of i32 `words` (static shapes): a
/// generic reading, for value k of a row's last dim, the row's word
/// `wordOf(k)`, and yielding `unpack(word, k)` (k an index).
Value buildPackedView(OpBuilder &b, Location loc, Value words, RankedTensorType type,
                      function_ref<AffineExpr(AffineExpr)> wordOf,
                      function_ref<Value(OpBuilder &, Location, Value, Value)> unpack) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = type.getRank();
  SmallVector<AffineExpr> read;
  for (unsigned d = 0; d + 1 < rank; ++d)
    read.push_back(getAffineDimExpr(d, ctx));
  read.push_back(wordOf(getAffineDimExpr(rank - 1, ctx)));
  SmallVector<bool> parallel(rank, false);
  return buildGeneric(
      b, loc, words, buildEmpty(b, loc, type, {}),
      {AffineMap::get(rank, 0, read, ctx), AffineMap::getMultiDimIdentityMap(rank, ctx)}, parallel,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        return unpack(nb, l, a[0], nb.create<linalg::IndexOp>(l, rank - 1));
      });
}

/// `(word >> shift) ` truncated to i8, `shift` an index.
Value shiftedByte(OpBuilder &b, Location l, Value word, Value shift) {
  Value v =
      b.create<arith::ShRSIOp>(l, word, b.create<arith::IndexCastOp>(l, b.getI32Type(), shift));
  return b.create<arith::TruncIOp>(l, b.getI8Type(), v);
}

/// `kiln.int8_view` / `kiln.fp8_view`: value k is byte k % 4 of word k / 4
/// (little-endian: bits [8 (k % 4), 8 (k % 4) + 8)), reinterpreted as the
/// result's element type; marked kByteViewAttr.
template <typename ViewOp> struct ByteViewLowering : OpConversionPattern<ViewOp> {
  using OpConversionPattern<ViewOp>::OpConversionPattern;
  using OpAdaptor = typename ViewOp::Adaptor;

  LogicalResult matchAndRewrite(ViewOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic byte view");
    Type elem = type.getElementType();
    Value r = buildPackedView(
        rewriter, op.getLoc(), adaptor.getInput(), type, [](AffineExpr k) { return k.floorDiv(4); },
        [&](OpBuilder &nb, Location l, Value word, Value k) -> Value {
          auto index = [&](int64_t v) { return nb.create<arith::ConstantIndexOp>(l, v); };
          Value shift =
              nb.create<arith::MulIOp>(l, nb.create<arith::RemSIOp>(l, k, index(4)), index(8));
          Value b8 = shiftedByte(nb, l, word, shift);
          return elem.isInteger(8) ? b8 : nb.create<arith::BitcastOp>(l, elem, b8).getResult();
        });
    r.getDefiningOp()->setAttr(kByteViewAttr, rewriter.getUnitAttr());
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// `kiln.int4_view`: value k of a row is nibble (k % 32) / 16 of byte
/// (k / 32) * 16 + k % 16, stored plus 8 (kiln.quant._ops.pack_int4):
/// word (k / 32) * 4 + (k % 16) / 4, shifted by 8 ((k % 16) % 4) + 4
/// ((k % 32) / 16), masked to 4 bits, minus 8.
struct Int4ViewLowering : OpConversionPattern<Int4ViewOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(Int4ViewOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic int4 view");
    Value r = buildPackedView(
        rewriter, op.getLoc(), adaptor.getInput(), type,
        [](AffineExpr k) { return k.floorDiv(32) * 4 + (k % 16).floorDiv(4); },
        [](OpBuilder &nb, Location l, Value word, Value k) -> Value {
          auto index = [&](int64_t v) { return nb.create<arith::ConstantIndexOp>(l, v); };
          Value inWord =
              nb.create<arith::RemSIOp>(l, nb.create<arith::RemSIOp>(l, k, index(16)), index(4));
          Value high =
              nb.create<arith::DivSIOp>(l, nb.create<arith::RemSIOp>(l, k, index(32)), index(16));
          Value shift = nb.create<arith::AddIOp>(l, nb.create<arith::MulIOp>(l, inWord, index(8)),
                                                 nb.create<arith::MulIOp>(l, high, index(4)));
          // The byte's nibble: (byte & 15) - 8, in i8.
          Type i8 = nb.getI8Type();
          Value v = nb.create<arith::AndIOp>(l, shiftedByte(nb, l, word, shift),
                                             buildScalarConstant(nb, l, i8, 15));
          return nb.create<arith::SubIOp>(l, v, buildScalarConstant(nb, l, i8, 8));
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct QLinearLowering : OpConversionPattern<QLinearOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(QLinearOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(op.getType());
    Value x = adaptor.getInput(), w = adaptor.getWeight();
    auto xt = cast<RankedTensorType>(x.getType());
    auto wt = cast<RankedTensorType>(w.getType());
    if (xt.getRank() < 2 || !wt.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "rank-1 input or dynamic weight");
    int64_t n = wt.getDimSize(0);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, x);
    sizes.back() = rewriter.getIndexAttr(n);
    Value x2 = collapseLeading(rewriter, loc, x, 1);
    OpFoldResult rows = tensor::getMixedSize(rewriter, loc, x2, 0);
    int64_t m = cast<RankedTensorType>(x2.getType()).getDimSize(0);
    // Per-channel scales [N, 1] as [N]; grouped ones [N, K / g] as they are.
    std::optional<int64_t> group = op.getGroupSize();
    Value ws = group ? adaptor.getWeightScale()
                     : rewriter.create<tensor::CollapseShapeOp>(
                           loc, adaptor.getWeightScale(), ArrayRef<ReassociationIndices>{{0, 1}});
    Value bias = adaptor.getBias();
    StringRef mode = op.getActivations();
    bool fp8 = isa<Float8E4M3FNType>(wt.getElementType());
    AffineExpr d0, d1;
    bindDims(ctx, d0, d1);
    AffineMap id = AffineMap::get(2, 0, {d0, d1}, ctx), col = AffineMap::get(2, 0, {d1}, ctx),
              row = AffineMap::get(2, 0, {d0}, ctx), none = AffineMap::get(2, 0, {}, ctx);
    auto f32 = rewriter.getF32Type();
    Value y;
    if (mode == "none") {
      // Weight-only: y = x @ (f32(w) * w_scale)^T (+ bias) in f32; grouped
      // (int4) weights read the scale of their group of K.
      AffineMap scaleMap = group ? AffineMap::get(2, 0, {d0, d1.floorDiv(*group)}, ctx) : row;
      Value wd = buildGeneric(rewriter, loc, ValueRange{w, ws},
                              buildEmpty(rewriter, loc, wt.clone(f32), {}), {id, scaleMap, id},
                              {false, false}, [&](OpBuilder &nb, Location l, ValueRange a) {
                                return dequantizeValue(nb, l, a[0], a[1], 0);
                              });
      Value init = zeroInit(rewriter, loc, RankedTensorType::get({m, n}, f32),
                            {rows, rewriter.getIndexAttr(n)});
      y = rewriter.create<linalg::MatmulTransposeBOp>(loc, ValueRange{x2, wd}, init).getResult(0);
      if (bias)
        y = buildGeneric(rewriter, loc, ValueRange{y, bias},
                         emptyOf(rewriter, loc, {m, n}, f32, rows), {id, col, id}, {false, false},
                         [](OpBuilder &nb, Location l, ValueRange a) {
                           return nb.create<arith::AddFOp>(l, a[0], a[1]).getResult();
                         });
    } else {
      bool isStatic = mode == "static";
      if (isStatic && (!op.getInputScale() || !op.getInputZeroPoint()))
        return rewriter.notifyMatchFailure(op, "static activations without scale/zero point");
      Value q, scales, comp;
      float inputScale = isStatic ? op.getInputScale()->convertToFloat() : 0.0f;
      int64_t zero = isStatic ? int64_t(*op.getInputZeroPoint()) : 0;
      if (isStatic) {
        q = quantizeStaticRows(rewriter, loc, x2, inputScale, zero);
        comp = weightRowSums(rewriter, loc, w);
      } else {
        scales = scalesOf(rewriter, loc, absMax(rewriter, loc, x2, mode == "per_tensor"),
                          fp8 ? 448.0 : 127.0);
        q = quantizeRows(rewriter, loc, x2, scales, wt.getElementType());
      }
      // int8: an i32 accumulator; fp8: the e4m3 products summed in f32.
      Type accType = fp8 ? Type(f32) : Type(rewriter.getI32Type());
      Value init = zeroInit(rewriter, loc, RankedTensorType::get({m, n}, accType),
                            {rows, rewriter.getIndexAttr(n)});
      Value acc =
          rewriter.create<linalg::MatmulTransposeBOp>(loc, ValueRange{q, w}, init).getResult(0);
      // Epilogue: f32(acc [+ (128 - zp) rowsum]) * (x_scale * w_scale) (+ bias).
      SmallVector<Value> inputs{acc, ws};
      SmallVector<AffineMap> maps{id, col};
      if (scales) {
        inputs.push_back(scales);
        maps.push_back(cast<RankedTensorType>(scales.getType()).getRank() == 1 ? row : none);
      }
      if (comp)
        inputs.push_back(comp), maps.push_back(col);
      if (bias)
        inputs.push_back(bias), maps.push_back(col);
      maps.push_back(id);
      y = buildGeneric(
          rewriter, loc, inputs, emptyOf(rewriter, loc, {m, n}, f32, rows), maps, {false, false},
          [&](OpBuilder &nb, Location l, ValueRange a) {
            unsigned next = 2;
            Value xs = scales ? a[next++] : f32Const(nb, l, inputScale);
            Value total = a[0];
            if (comp) {
              Value shift = buildScalarConstant(nb, l, nb.getI32Type(), 128 - zero);
              total =
                  nb.create<arith::AddIOp>(l, total, nb.create<arith::MulIOp>(l, a[next++], shift));
            }
            Value f = fp8 ? total : nb.create<arith::SIToFPOp>(l, nb.getF32Type(), total);
            Value v = nb.create<arith::MulFOp>(l, f, nb.create<arith::MulFOp>(l, xs, a[1]));
            if (bias)
              v = nb.create<arith::AddFOp>(l, v, a[next++]);
            return v;
          });
    }
    rewriter.replaceOp(op, expandTo(rewriter, loc, y, resultType, sizes));
    return success();
  }
};

} // namespace

void populateQuantToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<QuantizeLowering, DequantizeLowering, ByteViewLowering<Int8ViewOp>,
               ByteViewLowering<Fp8ViewOp>, Int4ViewLowering, QLinearLowering>(
      patterns.getContext());
}

} // namespace mlir::kiln

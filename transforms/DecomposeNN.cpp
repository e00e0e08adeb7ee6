//===- DecomposeNN.cpp - convolution and pooling into the primitive set ------===//
// SPDX-License-Identifier: Apache-2.0
//
// The `kiln-decompose` patterns of kiln.conv2d, kiln.max_pool2d and
// kiln.avg_pool2d. All three pad the input with `kiln.concat` of splat
// constants (zero, or -inf for max pooling) and read each kernel tap as one
// strided `kiln.slice` of the padded input, so every window position is an
// element of a [N, C, OH, OW] slice. Convolutions, by shape, first match wins:
// - depthwise (groups == C, F = m*C): a weighted sum of the taps, each
//   multiplied by its [C, 1, 1] (or [C, m, 1, 1]) weight column; all
//   elementwise, so the fusion makes one loop nest over strided views of
//   the padded input: no im2col columns, no GEMM;
// - 1x1, no padding, one group (any stride): one `kiln.matmul` of the
//   [F, C] weight with the input viewed as [N, C, OH*OW] ([N, F, OH*OW] is
//   NCHW; the CPU reads the broadcast weight at batch stride 0);
// - windows that tile the input (stride == kernel: a ViT patch embedding):
//   columns by one reshape + permute instead of one slice per tap;
// - an ungrouped batch with small images (OH*OW < kPerImageMinColumns):
//   the input is permuted to [C, N, H, W] so that all images share one GEMM
//   with the [F, C*kh*kw] weight, and the product is permuted back;
// - otherwise im2col + GEMM per image (and group) on NCHW: the taps
//   concatenate into [N, G, C/G*kh*kw, OH*OW] columns times the
//   [G, F/G, C/G*kh*kw] weight; a weight that is the permute of an
//   [F, kh, kw, C] tensor (a caller's channels-last weight) is read as it
//   is, the columns' rows in (kh, kw, c) order.
// Pooling combines the taps with `kiln.maximum` or `kiln.add` and a
// constant divisor. The patterns need static shapes (the frontend only
// produces those); dynamic ones are left for the converter to report.
//===----------------------------------------------------------------------===//
#include "transforms/Transforms.h"

#include "ir/KilnOps.h"
#include "ir/KilnBuilders.h"
#include "ir/ShapeUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

namespace mlir::kiln {
namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// A splat kiln.constant of `shape` and float type `elt`.
Value splat(PatternRewriter &rewriter, Location loc, ArrayRef<int64_t> shape, Type elt,
            double value) {
  auto type = RankedTensorType::get(shape, elt);
  auto attr = DenseElementsAttr::get(type, rewriter.getFloatAttr(elt, value));
  return rewriter.create<ConstantOp>(loc, llvm::cast<ElementsAttr>(attr));
}

/// True when every dim but the first (a symbolic batch) is static.
bool staticButBatch(RankedTensorType t) {
  return t.getRank() > 0 && !llvm::any_of(t.getShape().drop_front(), ShapedType::isDynamic);
}

/// A [?, 1, ..., 1] bool tensor (all true or all false: only its shape is
/// used) whose batch is `x`'s symbolic dim 0: broadcasting a constant
/// against it gives the constant that batch (a constant has static sizes).
Value batchCarrier(PatternRewriter &rewriter, Location loc, Value x) {
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> start(rank, 0), end(rank, 1), step(rank, 1);
  end[0] = -1; // the whole dim
  Value first = rewriter.create<SliceOp>(loc, x, rewriter.getDenseI64ArrayAttr(start),
                                         rewriter.getDenseI64ArrayAttr(end),
                                         rewriter.getDenseI64ArrayAttr(step));
  return rewriter.create<EqOp>(loc, first, first);
}

/// `x` with `low` / `high` cells of `value` added on both ends of `dim`.
Value padDim(PatternRewriter &rewriter, Location loc, Value x, int64_t dim, int64_t low,
             int64_t high, double value) {
  if (low == 0 && high == 0)
    return x;
  auto type = typeOf(x);
  bool dynamicBatch = type.isDynamicDim(0);
  SmallVector<Value> parts;
  for (int64_t n : {low, int64_t(-1), high}) {
    if (n < 0) {
      parts.push_back(x);
    } else if (n > 0) {
      SmallVector<int64_t> shape(type.getShape());
      shape[dim] = n;
      if (dynamicBatch)
        shape[0] = 1;
      Value pad = splat(rewriter, loc, shape, type.getElementType(), value);
      if (dynamicBatch) // the same value either way: broadcast to the batch
        pad = rewriter.create<SelectOp>(loc, batchCarrier(rewriter, loc, x), pad, pad);
      parts.push_back(pad);
    }
  }
  return rewriter.create<ConcatOp>(loc, parts, rewriter.getI64IntegerAttr(dim));
}

/// The geometry of a sliding window over the two trailing (H, W) dims.
struct Window {
  int64_t kernel[2], stride[2], dilation[2], padLow[2], padHigh[2], out[2];
};

/// Pads `x` (rank 4, its spatial dims at `h` and `h + 1`: 2 for NCHW, 1 for
/// NHWC) so that every window fits: padLow before, and after at least
/// padHigh and as much more as the last (ceil_mode) window needs.
Value padForWindow(PatternRewriter &rewriter, Location loc, Value x, const Window &w, double value,
                   int64_t h = 2) {
  for (int i = 0; i < 2; ++i) {
    int64_t size = typeOf(x).getDimSize(h + i);
    int64_t needed = (w.out[i] - 1) * w.stride[i] + w.dilation[i] * (w.kernel[i] - 1) + 1;
    int64_t high = std::max(w.padHigh[i], needed - size - w.padLow[i]);
    x = padDim(rewriter, loc, x, h + i, w.padLow[i], high, value);
  }
  return x;
}

/// Tap (kh, kw) of every window: a strided slice of the padded input over
/// its spatial dims `h`, `h + 1` ([N, C, OH, OW] for NCHW).
Value tap(PatternRewriter &rewriter, Location loc, Value padded, const Window &w, int64_t kh,
          int64_t kw, int64_t h = 2) {
  auto shape = typeOf(padded).getShape();
  SmallVector<int64_t> start(4, 0), step(4, 1);
  SmallVector<int64_t> end(shape);
  if (ShapedType::isDynamic(end[0]))
    end[0] = -1;
  int64_t k[2] = {kh, kw};
  for (int i = 0; i < 2; ++i) {
    start[h + i] = k[i] * w.dilation[i];
    end[h + i] = start[h + i] + (w.out[i] - 1) * w.stride[i] + 1;
    step[h + i] = w.stride[i];
  }
  return rewriter.create<SliceOp>(loc, padded, rewriter.getDenseI64ArrayAttr(start),
                                  rewriter.getDenseI64ArrayAttr(end),
                                  rewriter.getDenseI64ArrayAttr(step));
}

/// An ungrouped kxk conv2d of a batch runs one GEMM per image on the NCHW
/// layout (columns [N, 1, C*kh*kw, OH*OW], the weight read at batch stride
/// 0, the product is NCHW: no permutes) when each image has at least this
/// many output pixels, else channelMajorConv (one GEMM, two permutes).
/// Measured on resnet18's convs at 64x64, batch 8, one thread (docs/
/// performance.md, 2026-12-03b): per image wins where OH*OW >= 1024 (the
/// 7x7 stem 32x32: 4.7 ms vs 8.2 ms; 3x3 convs at 32x32 and 64x64 tie or
/// win), channel-major where OH*OW <= 256 (a 2x2 output: 4.1 ms vs 12.1
/// ms; an image's GEMM with a few columns runs far below BLAS's peak).
constexpr int64_t kPerImageMinColumns = 1024;

/// Ungrouped conv2d of a batch as ONE GEMM over all images (instead of a
/// batched GEMM that would broadcast the weight to every image and read it
/// once per image): the input is permuted to [C, N, H, W] (a copy of the
/// input, which is kh*kw times smaller than the columns), so the taps
/// concatenate into channel-major columns [C*kh*kw, N*OH*OW]:
///   out[f, (n, l)] = sum_k weight[f, k] * cols[k, (n, l)]
/// and the [F, N, OH, OW] product is permuted back to [N, F, OH, OW].
Value channelMajorConv(PatternRewriter &rewriter, Location loc, Conv2dOp op, const Window &w,
                       int64_t n, int64_t c, int64_t f) {
  auto wt = typeOf(op.getWeight());
  int64_t kh = wt.getDimSize(2), kw = wt.getDimSize(3), k = c * kh * kw;
  int64_t oh = w.out[0], ow = w.out[1];
  Value x = buildPermute(rewriter, loc, op.getInput(), {1, 0, 2, 3});
  Value padded = padForWindow(rewriter, loc, x, w, 0.0);
  SmallVector<Value> taps;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j)
      taps.push_back(
          buildReshape(rewriter, loc, tap(rewriter, loc, padded, w, i, j), {c, 1, n, oh, ow}));
  Value cols = taps.size() == 1
                   ? taps[0]
                   : rewriter.create<ConcatOp>(loc, taps, rewriter.getI64IntegerAttr(1));
  cols = buildReshape(rewriter, loc, cols, {k, n * oh * ow});
  Value weight = buildReshape(rewriter, loc, op.getWeight(), {f, k});
  Value out = rewriter.create<MatmulOp>(loc, weight, cols);
  out = buildReshape(rewriter, loc, out, {f, n, oh, ow});
  return buildPermute(rewriter, loc, out, {1, 0, 2, 3});
}

/// Whether the windows tile the input: stride == kernel, no dilation or
/// padding (a ViT patch embedding). Then im2col is a reshape + permute.
bool isPatchify(const Window &w) {
  for (int i = 0; i < 2; ++i)
    if (w.stride[i] != w.kernel[i] || w.dilation[i] != 1 || w.padLow[i] || w.padHigh[i])
      return false;
  return w.kernel[0] * w.kernel[1] > 1;
}

/// Non-overlapping windows (isPatchify) as columns without one slice per
/// tap: the input cut to [N, C, OH*kh, OW*kw] is viewed as
/// [N, G, Cg, OH, kh, OW, kw] and permuted (the only copy) to
/// [N, G, (Cg, kh, kw), (OH, OW)]; an ungrouped batch gets the channel-major
/// [(C, kh, kw), (N, OH, OW)] layout of channelMajorConv instead. A 16x16
/// patch conv thus stays two ops, not 256 slices and a concat (whose
/// bufferization analysis is quadratic).
Value patchifyConv(PatternRewriter &rewriter, Location loc, Conv2dOp op, const Window &w, int64_t n,
                   int64_t c, int64_t f, int64_t g) {
  int64_t kh = w.kernel[0], kw = w.kernel[1], oh = w.out[0], ow = w.out[1];
  int64_t cg = c / g, k = cg * kh * kw, l = oh * ow;
  Value x = op.getInput();
  auto in = typeOf(x);
  if (in.getDimSize(2) != oh * kh || in.getDimSize(3) != ow * kw) // floor: drop the rest
    x = rewriter.create<SliceOp>(
        loc, x, rewriter.getDenseI64ArrayAttr({0, 0, 0, 0}),
        rewriter.getDenseI64ArrayAttr({ShapedType::isDynamic(n) ? -1 : n, c, oh * kh, ow * kw}),
        rewriter.getDenseI64ArrayAttr({1, 1, 1, 1}));
  if (g == 1 && n > 1) {
    Value cols = buildReshape(rewriter, loc, x, {n, c, oh, kh, ow, kw});
    cols = buildPermute(rewriter, loc, cols, {1, 3, 5, 0, 2, 4}); // [C, kh, kw, N, OH, OW]
    cols = buildReshape(rewriter, loc, cols, {k, n * l});
    Value weight = buildReshape(rewriter, loc, op.getWeight(), {f, k});
    Value out = rewriter.create<MatmulOp>(loc, weight, cols);
    out = buildReshape(rewriter, loc, out, {f, n, oh, ow});
    return buildPermute(rewriter, loc, out, {1, 0, 2, 3});
  }
  Value cols = buildReshape(rewriter, loc, x, {n, g, cg, oh, kh, ow, kw});
  cols = buildPermute(rewriter, loc, cols, {0, 1, 2, 4, 6, 3, 5}); // [N, G, Cg, kh, kw, OH, OW]
  cols = buildReshape(rewriter, loc, cols, {n, g, k, l});
  Value weight = buildReshape(rewriter, loc, op.getWeight(), {g, f / g, k});
  Value out = rewriter.create<MatmulOp>(loc, weight, cols);
  return buildReshape(rewriter, loc, out, op.getType().getShape());
}

/// Depthwise conv2d (groups == C, F = C * m: m outputs per input channel)
/// as a weighted sum of the taps, the way avg_pool2d sums them:
///   out[n, c*m + q, oh, ow] = sum_{i,j} tap_ij[n, c, oh, ow] * weight[c*m + q, 0, i, j]
/// with the weight of tap (i, j) a [C, 1, 1] (m == 1) or [C, m, 1, 1]
/// slice broadcast over the tap. Every op is elementwise, so the fusion makes
/// one loop nest reading strided views of the padded input: no im2col
/// columns, no GEMM (a per-channel GEMM would be [m, kh*kw] x [kh*kw, OH*OW]).
/// 16-bit floats accumulate in f32 and are rounded once.
Value depthwiseConv(PatternRewriter &rewriter, Location loc, Conv2dOp op, const Window &w,
                    int64_t n, int64_t c, int64_t f) {
  auto in = typeOf(op.getInput());
  Type elt = in.getElementType();
  Type compute = elt.getIntOrFloatBitWidth() < 32 ? rewriter.getF32Type() : elt;
  int64_t m = f / c, kh = w.kernel[0], kw = w.kernel[1];
  Value x = op.getInput(), weight = buildReshape(rewriter, loc, op.getWeight(), {c, m, kh, kw});
  if (compute != elt) {
    x = rewriter.create<CastOp>(loc, in.clone(compute), x);
    weight = rewriter.create<CastOp>(loc, typeOf(weight).clone(compute), weight);
  }
  Value padded = padForWindow(rewriter, loc, x, w, 0.0);
  Value sum;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      Value t = tap(rewriter, loc, padded, w, i, j);
      Value wt = rewriter.create<SliceOp>(loc, weight, rewriter.getDenseI64ArrayAttr({0, 0, i, j}),
                                          rewriter.getDenseI64ArrayAttr({c, m, i + 1, j + 1}),
                                          rewriter.getDenseI64ArrayAttr({1, 1, 1, 1}));
      if (m == 1) {
        wt = buildReshape(rewriter, loc, wt, {c, 1, 1});
      } else {
        t = buildReshape(rewriter, loc, t, {n, c, 1, w.out[0], w.out[1]});
      }
      Value prod = rewriter.create<MulOp>(loc, t, wt);
      sum = sum ? rewriter.create<AddOp>(loc, sum, prod).getResult() : prod;
    }
  sum = buildReshape(rewriter, loc, sum, {n, f, w.out[0], w.out[1]});
  if (compute != elt)
    sum = rewriter.create<CastOp>(loc, op.getType(), sum);
  return sum;
}

/// Whether every window is one pixel: a 1x1 kernel, no padding, one group
/// (any stride; dilation does not matter for one tap).
bool isPointwise(const Window &w, int64_t g) {
  return g == 1 && w.kernel[0] == 1 && w.kernel[1] == 1 && !w.padLow[0] && !w.padLow[1] &&
         !w.padHigh[0] && !w.padHigh[1];
}

/// 1x1 conv2d as one matmul on the NCHW layout: the [F, C] weight times the
/// input viewed as [N, C, H*W] gives [N, F, H*W], which is NCHW already: no
/// permutes, no im2col (a strided 1x1 conv first takes its one tap, the
/// only copy). The weight is a broadcast batch operand; on CPU the batched
/// GEMM reads it with batch stride 0 (kiln-cpu-linalg-to-blas), one image at a
/// time.
Value pointwiseConv(PatternRewriter &rewriter, Location loc, Conv2dOp op, const Window &w,
                    int64_t n, int64_t c, int64_t f) {
  Value x = op.getInput();
  if (w.stride[0] != 1 || w.stride[1] != 1)
    x = tap(rewriter, loc, x, w, 0, 0);
  x = buildReshape(rewriter, loc, x, {n, c, w.out[0] * w.out[1]});
  Value weight = buildReshape(rewriter, loc, op.getWeight(), {f, c});
  Value out = rewriter.create<MatmulOp>(loc, weight, x);
  return buildReshape(rewriter, loc, out, op.getType().getShape());
}

/// conv2d = im2col + GEMM:
///   cols[n, g, (c, kh, kw), (oh, ow)] = padded[n, g*Cg + c, oh*s + kh*d, ow*s + kw*d]
///   out[n, g, f, l] = sum_k weight[g, f, k] * cols[n, g, k, l]
/// (rows (kh, kw, c) for a weight permuted from [F, KH, KW, C], one group).
struct DecomposeConv2d : OpRewritePattern<Conv2dOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(Conv2dOp op, PatternRewriter &rewriter) const override {
    auto in = typeOf(op.getInput()), wt = typeOf(op.getWeight());
    RankedTensorType type = op.getType();
    // A symbolic batch N (kDynamic in `n`) takes the per-image GEMM below:
    // channel-major columns would merge N into a dim.
    if (!staticButBatch(in) || !wt.hasStaticShape() || !staticButBatch(type))
      return rewriter.notifyMatchFailure(op, "dynamic shapes other than the batch");
    Location loc = op.getLoc();
    int64_t n = in.getDimSize(0), c = in.getDimSize(1), f = wt.getDimSize(0);
    int64_t g = op.getGroups(), kh = wt.getDimSize(2), kw = wt.getDimSize(3);
    Window w;
    for (int i = 0; i < 2; ++i) {
      w.kernel[i] = wt.getDimSize(2 + i);
      w.stride[i] = op.getStride()[i];
      w.dilation[i] = op.getDilation()[i];
      w.padLow[i] = op.getPadding()[2 * i];
      w.padHigh[i] = op.getPadding()[2 * i + 1];
      w.out[i] = type.getDimSize(2 + i);
    }
    int64_t l = w.out[0] * w.out[1];
    if (g == c && g > 1) {
      rewriter.replaceOp(op, depthwiseConv(rewriter, loc, op, w, n, c, f));
      return success();
    }
    if (isPointwise(w, g)) {
      rewriter.replaceOp(op, pointwiseConv(rewriter, loc, op, w, n, c, f));
      return success();
    }
    if (isPatchify(w)) {
      rewriter.replaceOp(op, patchifyConv(rewriter, loc, op, w, n, c, f, g));
      return success();
    }
    if (g == 1 && n > 1 && l < kPerImageMinColumns) {
      rewriter.replaceOp(op, channelMajorConv(rewriter, loc, op, w, n, c, f));
      return success();
    }
    // A weight held as [F, KH, KW, C] (a channels-last weight, permuted to
    // [F, C, KH, KW]) is read as it is with columns in (tap, c) order.
    auto ohwi = op.getWeight().getDefiningOp<PermuteOp>();
    if (ohwi && (g != 1 || ohwi.getDims() != ArrayRef<int64_t>{0, 3, 1, 2}))
      ohwi = nullptr;
    Value padded = padForWindow(rewriter, loc, op.getInput(), w, 0.0);
    SmallVector<Value> taps;
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j)
        // A unit dim is added (not OH, OW collapsed): a strided tap stays a
        // view and the concat below is the only copy.
        taps.push_back(buildReshape(rewriter, loc, tap(rewriter, loc, padded, w, i, j),
                                    ohwi ? SmallVector<int64_t>{n, 1, c, w.out[0], w.out[1]}
                                         : SmallVector<int64_t>{n, c, 1, w.out[0], w.out[1]}));
    Value cols =
        taps.size() == 1
            ? taps[0]
            : rewriter.create<ConcatOp>(loc, taps, rewriter.getI64IntegerAttr(ohwi ? 1 : 2));
    int64_t k = c / g * kh * kw;
    cols = buildReshape(rewriter, loc, cols, {n, g, k, l}); // contiguous: free
    Value weight =
        buildReshape(rewriter, loc, ohwi ? ohwi.getInput() : op.getWeight(), {g, f / g, k});
    Value out = rewriter.create<MatmulOp>(loc, weight, cols);
    rewriter.replaceOp(op, buildReshape(rewriter, loc, out, type.getShape()));
    return success();
  }
};

/// Fills `w` from a pooling op's attributes and result type.
template <typename OpTy> Window poolWindow(OpTy op, ArrayRef<int64_t> dilation) {
  Window w;
  for (int i = 0; i < 2; ++i) {
    w.kernel[i] = op.getKernel()[i];
    w.stride[i] = op.getStride()[i];
    w.dilation[i] = dilation[i];
    w.padLow[i] = w.padHigh[i] = op.getPadding()[i];
    w.out[i] = op.getType().getDimSize(2 + i);
  }
  return w;
}

/// max_pool2d = maximum over the taps of the -inf-padded input. An input
/// permuted from channels-last (a oneDNN convolution's NHWC result: resnet's
/// stem) is pooled on its NHWC form, the result permuted: no transpose of
/// the big input, channels contiguous in the loop (the permute of the
/// small result cancels against the next convolution's).
struct DecomposeMaxPool2d : OpRewritePattern<MaxPool2dOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MaxPool2dOp op, PatternRewriter &rewriter) const override {
    if (!staticButBatch(typeOf(op.getInput())))
      return rewriter.notifyMatchFailure(op, "dynamic shapes other than the batch");
    Location loc = op.getLoc();
    Window w = poolWindow(op, op.getDilation());
    Value x = op.getInput();
    int64_t h = 2;
    auto fromNhwc = x.getDefiningOp<PermuteOp>();
    if (fromNhwc && fromNhwc.getDims() == ArrayRef<int64_t>{0, 3, 1, 2}) {
      x = fromNhwc.getInput();
      h = 1;
    }
    Value padded = padForWindow(rewriter, loc, x, w, -INFINITY, h);
    Value result;
    for (int64_t i = 0; i < w.kernel[0]; ++i)
      for (int64_t j = 0; j < w.kernel[1]; ++j) {
        Value t = tap(rewriter, loc, padded, w, i, j, h);
        result = result ? rewriter.create<MaximumOp>(loc, result, t).getResult() : t;
      }
    if (h == 1)
      result = buildPermute(rewriter, loc, result, {0, 3, 1, 2});
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// avg_pool2d = sum over the taps of the zero-padded input (in f32 for
/// 16-bit floats) divided by a constant [OH, OW] divisor computed as
/// ATen does (window clipped to the padded input, or to the real input
/// without count_include_pad, or divisor_override).
struct DecomposeAvgPool2d : OpRewritePattern<AvgPool2dOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AvgPool2dOp op, PatternRewriter &rewriter) const override {
    auto in = typeOf(op.getInput());
    if (!staticButBatch(in))
      return rewriter.notifyMatchFailure(op, "dynamic shapes other than the batch");
    Location loc = op.getLoc();
    int64_t one[2] = {1, 1};
    Window w = poolWindow(op, one);
    Type elt = in.getElementType();
    Type compute = elt.getIntOrFloatBitWidth() < 32 ? rewriter.getF32Type() : elt;
    Value x = op.getInput();
    if (compute != elt)
      x = rewriter.create<CastOp>(loc, in.clone(compute), x);
    Value padded = padForWindow(rewriter, loc, x, w, 0.0);
    Value sum;
    for (int64_t i = 0; i < w.kernel[0]; ++i)
      for (int64_t j = 0; j < w.kernel[1]; ++j) {
        Value t = tap(rewriter, loc, padded, w, i, j);
        sum = sum ? rewriter.create<AddOp>(loc, sum, t).getResult() : t;
      }
    SmallVector<Attribute> divisors;
    int64_t size[2] = {in.getDimSize(2), in.getDimSize(3)};
    for (int64_t oh = 0; oh < w.out[0]; ++oh)
      for (int64_t ow = 0; ow < w.out[1]; ++ow) {
        int64_t o[2] = {oh, ow}, full = 1, real = 1;
        for (int i = 0; i < 2; ++i) {
          int64_t start = o[i] * w.stride[i] - w.padLow[i];
          int64_t end = std::min(start + w.kernel[i], size[i] + w.padLow[i]);
          full *= end - start;
          real *= std::min(end, size[i]) - std::max<int64_t>(start, 0);
        }
        int64_t d = op.getDivisorOverride()   ? op.getDivisorOverride()
                    : op.getCountIncludePad() ? full
                                              : real;
        divisors.push_back(rewriter.getFloatAttr(compute, static_cast<double>(d)));
      }
    auto divType = RankedTensorType::get({w.out[0], w.out[1]}, compute);
    Value divisor = rewriter.create<ConstantOp>(
        loc, llvm::cast<ElementsAttr>(DenseElementsAttr::get(divType, divisors)));
    Value result = rewriter.create<DivOp>(loc, sum, divisor);
    if (compute != elt)
      result = rewriter.create<CastOp>(loc, op.getType(), result);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateNNDecompositionPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeConv2d, DecomposeMaxPool2d, DecomposeAvgPool2d>(patterns.getContext());
}

} // namespace mlir::kiln

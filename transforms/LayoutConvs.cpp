//===- LayoutConvs.cpp - channels-last forms of kiln.conv2d -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The NHWC convolutions of `kiln-layout` (LayoutConvs.h). They mirror
// kiln-decompose's NCHW ones (DecomposeNN.cpp) with the channels innermost:
// a depthwise tap is a strided [N, OH, OW, C] slice whose rows are
// contiguous channel vectors, and a GEMM-based convolution's product
// [N*OH*OW, F] is NHWC as it comes out of the GEMM (no permute back).
//===----------------------------------------------------------------------===//
#include "transforms/LayoutConvs.h"
#include "ir/KilnBuilders.h"

#include <algorithm>

namespace mlir::kiln {
namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

Value slice(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> start, ArrayRef<int64_t> end,
            ArrayRef<int64_t> step) {
  return b.create<SliceOp>(loc, v, b.getDenseI64ArrayAttr(start), b.getDenseI64ArrayAttr(end),
                           b.getDenseI64ArrayAttr(step));
}

/// `x` with `low` / `high` zeros added on both ends of `dim`.
Value padZeros(OpBuilder &b, Location loc, Value x, int64_t dim, int64_t low, int64_t high) {
  auto type = typeOf(x);
  SmallVector<Value> parts;
  for (int64_t n : {low, int64_t(-1), high}) {
    if (n < 0) {
      parts.push_back(x);
    } else if (n > 0) {
      SmallVector<int64_t> shape(type.getShape());
      shape[dim] = n;
      auto padType = RankedTensorType::get(shape, type.getElementType());
      auto zero = DenseElementsAttr::get(padType, b.getFloatAttr(type.getElementType(), 0.0));
      parts.push_back(b.create<ConstantOp>(loc, cast<ElementsAttr>(zero)));
    }
  }
  return parts.size() == 1 ? x : b.create<ConcatOp>(loc, parts, b.getI64IntegerAttr(dim));
}

bool isDepthwise(Conv2dOp op) {
  int64_t c = typeOf(op.getInput()).getDimSize(1);
  return c > 1 && static_cast<int64_t>(op.getGroups()) == c &&
         typeOf(op.getWeight()).getDimSize(0) == c;
}

/// stride == kernel > 1x1, no padding, no dilation, and the input an exact
/// multiple of the windows. (1x1 convolutions stay NCHW: converting the
/// ones after resnet50's oneDNN convolutions made it 15% slower, the
/// transposes moving to its NCHW 3x3 convolutions.)
bool tiles(Conv2dOp op) {
  auto in = typeOf(op.getInput()), wt = typeOf(op.getWeight());
  auto out = op.getType();
  if (wt.getDimSize(2) * wt.getDimSize(3) == 1)
    return false;
  for (int i = 0; i < 2; ++i) {
    int64_t k = wt.getDimSize(2 + i);
    if (op.getStride()[i] != k || op.getDilation()[i] != 1 || op.getPadding()[2 * i] ||
        op.getPadding()[2 * i + 1] || in.getDimSize(2 + i) != out.getDimSize(2 + i) * k)
      return false;
  }
  return op.getGroups() == 1;
}

/// sum over taps (i, j) of padded[n, oh*s + i*d, ow*s + j*d, c] * w[c, 0, i, j].
Value depthwise(OpBuilder &b, Location loc, Conv2dOp op, Value x) {
  auto in = typeOf(x), out = op.getType();
  int64_t n = in.getDimSize(0), c = in.getDimSize(3);
  int64_t kh = typeOf(op.getWeight()).getDimSize(2), kw = typeOf(op.getWeight()).getDimSize(3);
  int64_t kernel[2] = {kh, kw}, outHw[2] = {out.getDimSize(2), out.getDimSize(3)};
  for (int i = 0; i < 2; ++i) {
    int64_t needed = (outHw[i] - 1) * op.getStride()[i] + op.getDilation()[i] * (kernel[i] - 1) + 1;
    int64_t low = op.getPadding()[2 * i];
    int64_t high = std::max(op.getPadding()[2 * i + 1], needed - in.getDimSize(1 + i) - low);
    x = padZeros(b, loc, x, 1 + i, low, std::max<int64_t>(high, 0));
  }
  // [KH*KW, C]: each tap's weights one contiguous [1, C] row (a small
  // copy) that broadcasts over [N, OH, OW, C] as it is (a reshape to [C]
  // would make the fusion expand the sum's loop nest, and the bias add
  // after it would no longer fuse).
  Value weight = buildPermute(b, loc, buildReshape(b, loc, op.getWeight(), {c, kh * kw}), {1, 0});
  SmallVector<Value> products;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      int64_t h0 = i * op.getDilation()[0], w0 = j * op.getDilation()[1];
      Value t = slice(b, loc, x, {0, h0, w0, 0},
                      {n, h0 + (outHw[0] - 1) * op.getStride()[0] + 1,
                       w0 + (outHw[1] - 1) * op.getStride()[1] + 1, c},
                      {1, op.getStride()[0], op.getStride()[1], 1});
      Value row = slice(b, loc, weight, {i * kw + j, 0}, {i * kw + j + 1, c}, {1, 1});
      products.push_back(b.create<MulOp>(loc, t, row));
    }
  // Summed pairwise: log2(KH*KW) dependent adds per output instead of a
  // chain of KH*KW (the loop was bound by the add latency).
  while (products.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < products.size(); i += 2)
      next.push_back(b.create<AddOp>(loc, products[i], products[i + 1]));
    if (products.size() % 2)
      next.push_back(products.back());
    products = std::move(next);
  }
  return products.front();
}

/// Tiling windows as columns [N*OH*OW, (C, KH, KW)] (one permuting copy of
/// the input, the weight's own order) times the transposed weight.
Value tiledGemm(OpBuilder &b, Location loc, Conv2dOp op, Value x) {
  auto wt = typeOf(op.getWeight());
  RankedTensorType out = op.getType();
  int64_t n = out.getDimSize(0), f = out.getDimSize(1), oh = out.getDimSize(2),
          ow = out.getDimSize(3);
  int64_t c = wt.getDimSize(1), kh = wt.getDimSize(2), kw = wt.getDimSize(3), k = c * kh * kw;
  Value cols = buildReshape(b, loc, x, {n, oh, kh, ow, kw, c});
  cols = buildPermute(b, loc, cols, {0, 1, 3, 5, 2, 4}); // [N, OH, OW, C, KH, KW]
  cols = buildReshape(b, loc, cols, {n * oh * ow, k});
  Value weight = buildPermute(b, loc, buildReshape(b, loc, op.getWeight(), {f, k}), {1, 0});
  Value product = b.create<MatmulOp>(loc, cols, weight);
  return buildReshape(b, loc, product, {n, oh, ow, f});
}

} // namespace

bool hasNhwcForm(Conv2dOp op) {
  auto in = typeOf(op.getInput()), wt = typeOf(op.getWeight());
  if (!in.hasStaticShape() || !wt.hasStaticShape() || !op.getType().hasStaticShape() ||
      !in.getElementType().isF32() || !wt.getElementType().isF32())
    return false;
  return isDepthwise(op) || tiles(op);
}

bool isTiling(Conv2dOp op) { return !isDepthwise(op); }

Value buildNhwcConv(OpBuilder &b, Location loc, Conv2dOp op, Value x) {
  return isDepthwise(op) ? depthwise(b, loc, op, x) : tiledGemm(b, loc, op, x);
}

} // namespace mlir::kiln

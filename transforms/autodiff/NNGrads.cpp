//===- NNGrads.cpp - gradient rules of conv2d, maximum and minimum ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reverse-mode rules (GradRules.h) for kiln.conv2d and the elementwise
// kiln.maximum / kiln.minimum (clamp, relu6, hardtanh, hardswish).
//
// conv2d (any stride, padding, dilation, groups; static shapes): the input's
// gradient is itself a kiln.conv2d (a transposed convolution): the result
// gradient is spread to the stride (GradBuilder::place), offset by the
// padding, and convolved at stride 1 with the weight's in/out channels
// swapped per group and its taps flipped; it compiles like any forward
// convolution. The weight's gradient is one (batched per group) GEMM of the
// result gradient `[G, F/G, N*OH*OW]` with the input's im2col columns
// `[G, C/G*KH*KW, N*OH*OW]` built from the padded input's strided slices.
// A patch conv (stride == kernel, no dilation: ViT's 16x16 patches) takes
// neither per-tap path: its columns are the input reshaped and permuted
// whole, and its input gradient one GEMM with the weight permuted back into
// place (256 taps as slices made the backward's bufferization take minutes).
//
// Both gradients are marked for codegen (ConvGradMarks.h): the root op (the
// input gradient's kiln.conv2d, the weight gradient's kiln.matmul) carries
// the forward convolution's parameters, and the values it is computed from
// (g, w, x) enter its chain through identity casts naming their role, so
// kiln-cpu-convs-to-dnnl can replace the whole chain by one oneDNN
// backward-data / backward-weights call; elsewhere the casts fold away and
// the decomposition above runs as it is.
//
// maximum/minimum: the larger (smaller) operand takes the gradient; at a
// tie, the op's `kiln.tie_grad` attribute (set by the capture) says who:
// "half" to each operand (torch.maximum even against a constant; formulas
// such as logsigmoid's min(x, 0), whose eager backward is smooth there),
// "all" to the first (torch.clamp, fmax/fmin), "none". Unmarked: halves
// between two operands needing gradients, none against a bound that needs
// none (relu6, hardtanh, hardsigmoid, hardswish's eager backward).
//===----------------------------------------------------------------------===//
#include "transforms/autodiff/GradRules.h"
#include "ir/ConvGradMarks.h"

#include "ir/KilnOps.h"

namespace mlir::kiln {
namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// `w` ([F, C/G, KH, KW]) as the weight of the transposed convolution:
/// [C, F/G, KH, KW] with the taps of both spatial dims reversed.
Value transposedWeight(GradBuilder &gb, Value w, int64_t groups) {
  ArrayRef<int64_t> s = typeOf(w).getShape();
  int64_t f = s[0], cg = s[1], kh = s[2], kw = s[3], fg = f / groups;
  Value v = gb.reshape(w, {groups, fg, cg, kh, kw});
  v = gb.b.create<PermuteOp>(gb.loc, v, ArrayRef<int64_t>{0, 2, 1, 3, 4});
  v = gb.reshape(v, {groups * cg, fg, kh, kw});
  for (int64_t d : {2, 3}) {
    auto t = typeOf(v);
    if (t.getDimSize(d) == 1)
      continue;
    SmallVector<Value> taps;
    for (int64_t k = t.getDimSize(d) - 1; k >= 0; --k) {
      SmallVector<int64_t> lo(4, 0), hi(t.getShape()), st(4, 1);
      lo[d] = k;
      hi[d] = k + 1;
      taps.push_back(gb.slice(v, lo, hi, st));
    }
    v = gb.b.create<ConcatOp>(gb.loc, taps, d);
  }
  return v;
}

/// The input's gradient of `conv` from the result gradient `g`.
Value convInputGrad(GradBuilder &gb, Conv2dOp conv, Value g) {
  ArrayRef<int64_t> in = typeOf(conv.getInput()).getShape();
  ArrayRef<int64_t> ws = typeOf(conv.getWeight()).getShape();
  ArrayRef<int64_t> stride = conv.getStride(), pad = conv.getPadding(), dil = conv.getDilation();
  int64_t groups = static_cast<int64_t>(conv.getGroups());
  // Spread to the stride, placed where the flipped weight's taps read it:
  // position oh*s + (K-1)*d - pad_before, in a map of H + (K-1)*d cells.
  Value spread = markConvGradSource(gb.b, gb.loc, g, kConvGradG);
  for (int64_t i = 0; i < 2; ++i) {
    int64_t k = ws[2 + i], reach = (k - 1) * dil[i];
    spread = gb.place(spread, 2 + i, reach - pad[2 * i], stride[i], in[2 + i] + reach);
  }
  Value w = transposedWeight(
      gb, markConvGradSource(gb.b, gb.loc, gb.primal(conv.getWeight()), kConvGradW), groups);
  auto type = typeOf(conv.getInput());
  auto gx = gb.b.create<Conv2dOp>(gb.loc, type, spread, w, ArrayRef<int64_t>{1, 1},
                                  ArrayRef<int64_t>{0, 0, 0, 0}, dil, groups);
  markConvGradRoot(gx, kConvGradDataAttr, conv);
  return gx;
}

/// Whether `conv`'s windows tile its (padded) input without overlap or
/// gaps (stride == kernel, no dilation, more than one tap): a patchify conv
/// (ViT, Swin, ConvNeXt stems), whose im2col columns are a reshape.
bool isPatchConv(Conv2dOp conv) {
  ArrayRef<int64_t> ws = typeOf(conv.getWeight()).getShape();
  ArrayRef<int64_t> stride = conv.getStride(), dil = conv.getDilation();
  return dil[0] == 1 && dil[1] == 1 && stride[0] == ws[2] && stride[1] == ws[3] &&
         ws[2] * ws[3] > 1;
}

/// A patch conv's im2col columns `[G, N*OH*OW, C/G*KH*KW]`: the input,
/// padded and cut to the OH*KH x OW*KW cells its windows read, reshaped and
/// permuted whole (no per-tap slices).
Value patchColumns(GradBuilder &gb, Conv2dOp conv, ArrayRef<int64_t> gs, int64_t groups) {
  ArrayRef<int64_t> ws = typeOf(conv.getWeight()).getShape();
  ArrayRef<int64_t> pad = conv.getPadding();
  int64_t n = gs[0], oh = gs[2], ow = gs[3], cg = ws[1], kh = ws[2], kw = ws[3];
  Value x = gb.primal(conv.getInput());
  x = gb.place(x, 2, pad[0], 1, oh * kh);
  x = gb.place(x, 3, pad[2], 1, ow * kw);
  x = gb.reshape(x, {n, groups, cg, oh, kh, ow, kw});
  x = gb.b.create<PermuteOp>(gb.loc, x, ArrayRef<int64_t>{1, 0, 3, 5, 2, 4, 6});
  return gb.reshape(x, {groups, n * oh * ow, cg * kh * kw});
}

/// Any conv's im2col columns `[G, N*OH*OW, C/G*KH*KW]` from the padded
/// input's strided slices, one per tap.
Value tapColumns(GradBuilder &gb, Conv2dOp conv, ArrayRef<int64_t> gs, int64_t groups) {
  ArrayRef<int64_t> ws = typeOf(conv.getWeight()).getShape();
  ArrayRef<int64_t> stride = conv.getStride(), pad = conv.getPadding(), dil = conv.getDilation();
  int64_t cg = ws[1], kh = ws[2], kw = ws[3], oh = gs[2], ow = gs[3];
  int64_t n = gs[0], m = n * oh * ow, c = cg * groups;
  // The input as [C, N, H, W], padded as the forward read it.
  Value x = gb.b.create<PermuteOp>(
      gb.loc, markConvGradSource(gb.b, gb.loc, gb.primal(conv.getInput()), kConvGradX),
      ArrayRef<int64_t>{1, 0, 2, 3});
  for (int64_t i = 0; i < 2; ++i) {
    int64_t size = typeOf(x).getDimSize(2 + i);
    int64_t need = (gs[2 + i] - 1) * stride[i] + (ws[2 + i] - 1) * dil[i] + 1;
    x = gb.pad(x, 2 + i, pad[2 * i], std::max<int64_t>(0, need - size - pad[2 * i]));
  }
  SmallVector<Value> taps;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      int64_t h0 = i * dil[0], w0 = j * dil[1];
      Value tap = gb.slice(x, {0, 0, h0, w0},
                           {c, n, h0 + (oh - 1) * stride[0] + 1, w0 + (ow - 1) * stride[1] + 1},
                           {1, 1, stride[0], stride[1]});
      taps.push_back(gb.reshape(tap, {c, 1, m}));
    }
  Value cols = taps.size() == 1 ? taps[0] : gb.b.create<ConcatOp>(gb.loc, taps, 1).getResult();
  cols = gb.reshape(cols, {groups, cg * kh * kw, m});
  return gb.b.create<PermuteOp>(gb.loc, cols, ArrayRef<int64_t>{0, 2, 1});
}

/// The weight's gradient of `conv` from the result gradient `g`: one
/// (batched per group) GEMM of `[G, F/G, N*OH*OW]` with the im2col columns.
Value convWeightGrad(GradBuilder &gb, Conv2dOp conv, Value g) {
  ArrayRef<int64_t> ws = typeOf(conv.getWeight()).getShape();
  ArrayRef<int64_t> gs = typeOf(g).getShape();
  int64_t groups = static_cast<int64_t>(conv.getGroups());
  Value cols =
      isPatchConv(conv) ? patchColumns(gb, conv, gs, groups) : tapColumns(gb, conv, gs, groups);
  bool patch = isPatchConv(conv);
  Value gt =
      gb.b.create<PermuteOp>(gb.loc, patch ? g : markConvGradSource(gb.b, gb.loc, g, kConvGradG),
                             ArrayRef<int64_t>{1, 0, 2, 3});
  gt = gb.reshape(gt, {groups, ws[0] / groups, gs[0] * gs[2] * gs[3]});
  auto gw = gb.b.create<MatmulOp>(gb.loc, gt, cols); // [G, F/G, C/G*KH*KW]
  if (!patch)
    markConvGradRoot(gw, kConvGradWeightsAttr, conv);
  return gb.reshape(gw, ws);
}

/// A patch conv's input gradient: the result gradient `[G, N*OH*OW, F/G]`
/// times the weight `[G, F/G, C/G*KH*KW]` gives each window's cells, which
/// a reshape and one permute put back in place (then the padding cut off
/// and cells no window read zero-filled).
Value patchInputGrad(GradBuilder &gb, Conv2dOp conv, Value g) {
  ArrayRef<int64_t> in = typeOf(conv.getInput()).getShape();
  ArrayRef<int64_t> ws = typeOf(conv.getWeight()).getShape();
  ArrayRef<int64_t> gs = typeOf(g).getShape();
  ArrayRef<int64_t> pad = conv.getPadding();
  int64_t groups = static_cast<int64_t>(conv.getGroups());
  int64_t n = gs[0], oh = gs[2], ow = gs[3], fg = ws[0] / groups, cg = ws[1], kh = ws[2],
          kw = ws[3];
  Value gt = gb.reshape(g, {n, groups, fg, oh, ow});
  gt = gb.b.create<PermuteOp>(gb.loc, gt, ArrayRef<int64_t>{1, 0, 3, 4, 2});
  gt = gb.reshape(gt, {groups, n * oh * ow, fg});
  Value w = gb.reshape(gb.primal(conv.getWeight()), {groups, fg, cg * kh * kw});
  Value cells = gb.b.create<MatmulOp>(gb.loc, gt, w); // [G, N*OH*OW, C/G*KH*KW]
  cells = gb.reshape(cells, {groups, n, oh, ow, cg, kh, kw});
  cells = gb.b.create<PermuteOp>(gb.loc, cells, ArrayRef<int64_t>{1, 0, 4, 2, 5, 3, 6});
  cells = gb.reshape(cells, {n, groups * cg, oh * kh, ow * kw});
  cells = gb.place(cells, 2, -pad[0], 1, in[2]);
  return gb.place(cells, 3, -pad[2], 1, in[3]);
}

LogicalResult conv2dGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                         std::string &why) {
  auto conv = cast<Conv2dOp>(op);
  if (!typeOf(conv.getInput()).hasStaticShape() || !typeOf(conv.getWeight()).hasStaticShape() ||
      !typeOf(g).hasStaticShape()) {
    why = "the gradient of a dynamic-shape 'kiln.conv2d' is not implemented";
    return failure();
  }
  if (gb.needs(conv.getInput()))
    grads[0] = isPatchConv(conv) ? patchInputGrad(gb, conv, g) : convInputGrad(gb, conv, g);
  if (gb.needs(conv.getWeight()))
    grads[1] = convWeightGrad(gb, conv, g);
  return success();
}

/// maximum (`Max`) or minimum: see the file header.
template <bool Max>
LogicalResult extremumGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                           std::string &) {
  Value a = op->getOperand(0), c = op->getOperand(1);
  Value pa = gb.primal(a), pc = gb.primal(c);
  auto policy = op->getAttrOfType<StringAttr>("kiln.tie_grad");
  StringRef tiePolicy =
      policy ? policy.getValue() : (gb.needs(a) && gb.needs(c) ? StringRef("half") : "none");
  Type elt = typeOf(g).getElementType();
  Value zero = gb.scalar(elt, 0.0);
  Value tie = tiePolicy != "none" ? gb.b.create<EqOp>(gb.loc, pa, pc).getResult() : Value();
  Value half = tiePolicy == "half" ? gb.mul(g, gb.scalar(elt, 0.5)) : Value();
  /// `atTie`: what the operand gets where the two are equal.
  auto wins = [&](Value x, Value y, Value atTie) -> Value {
    Value better = Max ? gb.b.create<GtOp>(gb.loc, x, y).getResult()
                       : gb.b.create<LtOp>(gb.loc, x, y).getResult();
    Value rest = atTie ? gb.b.create<SelectOp>(gb.loc, tie, atTie, zero).getResult() : zero;
    return gb.b.create<SelectOp>(gb.loc, better, g, rest);
  };
  Value firstAtTie = tiePolicy == "half" ? half : tiePolicy == "all" ? g : Value();
  if (gb.needs(a))
    grads[0] = wins(pa, pc, firstAtTie);
  if (gb.needs(c))
    grads[1] = wins(pc, pa, tiePolicy == "half" ? half : Value());
  return success();
}

} // namespace

void addNNGradRules(GradRuleTable &t) {
  t[Conv2dOp::getOperationName()] = conv2dGrad;
  t[MaximumOp::getOperationName()] = extremumGrad<true>;
  t[MinimumOp::getOperationName()] = extremumGrad<false>;
}

} // namespace mlir::kiln

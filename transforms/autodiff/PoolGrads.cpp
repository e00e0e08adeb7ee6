//===- PoolGrads.cpp - gradient rules of max_pool2d and avg_pool2d ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reverse-mode rules (GradRules.h) for kiln.max_pool2d and kiln.avg_pool2d
// (static shapes). Both walk the window's taps (kh, kw) in row-major order:
// a tap is the strided slice of the padded input every window reads at that
// offset (as the decomposition in DecomposeNN.cpp), and its gradient is put
// back where the slice came from and summed (Window::spread: the taps of
// one phase of the stride summed at the output's resolution, each read as
// a shifted slice of one padded per-window tensor, the phases interleaved
// once; no tensor of the input's size per tap).
//
// max_pool2d: a window's gradient goes to the first tap equal to its
// maximum (eager's CPU kernel keeps the first maximum it meets, so ties get
// one gradient, not one each), found once per window as the winning tap's
// index; the input is padded with -inf, so padded cells never win. A NaN
// maximum gets no gradient (eager gives it to the NaN cell).
// avg_pool2d: each window's gradient divided by its divisor (torch's rule:
// divisor_override, else the window clipped to the padded input with
// count_include_pad, else its real cells), a constant computed here, then
// spread to every tap.
//===----------------------------------------------------------------------===//
#include "transforms/autodiff/GradRules.h"

#include "ir/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <limits>

namespace mlir::kiln {
namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// The geometry of a 2-D pooling window (static shapes).
struct Window {
  int64_t k[2], s[2], p[2], d[2], in[2], out[2];
  /// Cells of the padded input the taps read, per spatial dim.
  int64_t padded(int i) const {
    return std::max(in[i] + 2 * p[i], (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1);
  }
  /// The slice of the padded input read at tap (i, j).
  Value tap(GradBuilder &gb, Value xp, int64_t i, int64_t j) const {
    ArrayRef<int64_t> sh = typeOf(xp).getShape();
    int64_t h0 = i * d[0], w0 = j * d[1];
    return gb.slice(xp, {0, 0, h0, w0},
                    {sh[0], sh[1], h0 + (out[0] - 1) * s[0] + 1, w0 + (out[1] - 1) * s[1] + 1},
                    {1, 1, s[0], s[1]});
  }
  /// Per dim, a tap's offset i * d is phase (i * d) % s plus a shift of
  /// (i * d) / s cells on that phase's sub-lattice (every s-th cell of the
  /// padded input). A phase holds `phaseCells(0) x phaseCells(1)` cells.
  int64_t phaseCells(int i) const { return (padded(i) + s[i] - 1) / s[i]; }
  int64_t maxShift(int i) const { return (k[i] - 1) * d[i] / s[i]; }
  /// `v` ([N, C, OH, OW], a value per window) padded with `fill` so that
  /// every tap's shifted view of it (shifted()) is a slice.
  Value padForTaps(GradBuilder &gb, Value v, double fill) const {
    v = gb.pad(v, 2, maxShift(0), phaseCells(0) - out[0], fill);
    return gb.pad(v, 3, maxShift(1), phaseCells(1) - out[1], fill);
  }
  /// Tap (i, j)'s view of a padForTaps() result at its phase's resolution:
  /// the phase cell (r, c) of the padded input is read by the tap at window
  /// (r - u, c - v), whose value it holds (the fill outside the windows).
  Value shifted(GradBuilder &gb, Value vp, int64_t i, int64_t j) const {
    ArrayRef<int64_t> sh = typeOf(vp).getShape();
    int64_t rows = phaseCells(0), cols = phaseCells(1);
    int64_t h0 = maxShift(0) - i * d[0] / s[0], w0 = maxShift(1) - j * d[1] / s[1];
    return gb.slice(vp, {0, 0, h0, w0}, {sh[0], sh[1], h0 + rows, w0 + cols}, {1, 1, 1, 1});
  }
  /// The padded input's gradient: per phase of the stride, the sum of its
  /// taps' contributions `part(i, j)` ([N, C, phaseCells(0), phaseCells(1)],
  /// built from shifted() views, so no tap's contribution is ever the
  /// input's size), the phases interleaved by two concats over new unit
  /// dims and a reshape.
  Value spread(GradBuilder &gb, llvm::function_ref<Value(int64_t, int64_t)> part) const {
    SmallVector<Value> phases(s[0] * s[1]);
    for (int64_t i = 0; i < k[0]; ++i)
      for (int64_t j = 0; j < k[1]; ++j) {
        Value &phase = phases[i * d[0] % s[0] * s[1] + j * d[1] % s[1]];
        Value t = part(i, j);
        phase = phase ? gb.add(phase, t) : t;
      }
    RankedTensorType phaseType = typeOf(phases[0]); // tap (0, 0) is in phase (0, 0)
    ArrayRef<int64_t> sh = phaseType.getShape();    // [N, C, rows, cols]
    SmallVector<Value> byRow;
    for (int64_t a = 0; a < s[0]; ++a) {
      SmallVector<Value> byCol;
      for (int64_t b = 0; b < s[1]; ++b) {
        Value phase = phases[a * s[1] + b] ? phases[a * s[1] + b] : gb.zeros(phaseType);
        byCol.push_back(gb.reshape(phase, {sh[0], sh[1], sh[2], 1, sh[3], 1}));
      }
      byRow.push_back(gb.concat(byCol, 5));
    }
    Value grid = gb.reshape(gb.concat(byRow, 3), {sh[0], sh[1], sh[2] * s[0], sh[3] * s[1]});
    return gb.slice(grid, {0, 0, 0, 0}, {sh[0], sh[1], padded(0), padded(1)}, {1, 1, 1, 1});
  }

  /// The padded input's gradient `gp` cut back to the input.
  Value unpad(GradBuilder &gb, Value gp) const {
    ArrayRef<int64_t> sh = typeOf(gp).getShape();
    return gb.slice(gp, {0, 0, p[0], p[1]}, {sh[0], sh[1], p[0] + in[0], p[1] + in[1]},
                    {1, 1, 1, 1});
  }
};

Window windowOf(Value input, Value result, ArrayRef<int64_t> k, ArrayRef<int64_t> s,
                ArrayRef<int64_t> p, ArrayRef<int64_t> d) {
  Window w;
  for (int i = 0; i < 2; ++i) {
    w.k[i] = k[i];
    w.s[i] = s[i];
    w.p[i] = p[i];
    w.d[i] = d.empty() ? 1 : d[i];
    w.in[i] = typeOf(input).getDimSize(2 + i);
    w.out[i] = typeOf(result).getDimSize(2 + i);
  }
  return w;
}

bool staticShapes(Operation *op, std::string &why) {
  if (typeOf(op->getOperand(0)).hasStaticShape() && typeOf(op->getResult(0)).hasStaticShape())
    return true;
  why = "the gradient of a dynamic-shape '" + op->getName().getStringRef().str() +
        "' is not implemented";
  return false;
}

LogicalResult maxPoolGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                          std::string &why) {
  auto pool = cast<MaxPool2dOp>(op);
  if (!staticShapes(op, why))
    return failure();
  Window w = windowOf(pool.getInput(), pool.getResult(), pool.getKernel(), pool.getStride(),
                      pool.getPadding(), pool.getDilation());
  Value xp = gb.primal(pool.getInput()), y = gb.primal(pool.getResult());
  double inf = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < 2; ++i)
    xp = gb.pad(xp, 2 + i, w.p[i], w.padded(i) - w.in[i] - w.p[i], inf);
  // The tap each window's gradient goes to: the first one equal to the
  // maximum (taps visited last to first, each hit overriding), -1 for none.
  Type elt = typeOf(g).getElementType();
  Value winner = gb.broadcast(gb.scalar(elt, -1.0), typeOf(y).getShape());
  for (int64_t t = w.k[0] * w.k[1] - 1; t >= 0; --t) {
    Value hit = gb.b.create<EqOp>(gb.loc, w.tap(gb, xp, t / w.k[1], t % w.k[1]), y);
    winner = gb.b.create<SelectOp>(gb.loc, hit, gb.scalar(elt, double(t)), winner);
  }
  Value winners = w.padForTaps(gb, winner, -1.0), gp = w.padForTaps(gb, g, 0.0);
  Value zero = gb.scalar(elt, 0.0);
  auto part = [&](int64_t i, int64_t j) -> Value {
    Value mine = gb.b.create<EqOp>(gb.loc, w.shifted(gb, winners, i, j),
                                   gb.scalar(elt, double(i * w.k[1] + j)));
    return gb.b.create<SelectOp>(gb.loc, mine, w.shifted(gb, gp, i, j), zero);
  };
  grads[0] = w.unpad(gb, w.spread(gb, part));
  return success();
}

/// 1 / torch's divisor of each window of `pool`, as an [OH, OW] constant.
Value inverseDivisors(GradBuilder &gb, AvgPool2dOp pool, const Window &w, Type elt) {
  SmallVector<double> inv;
  for (int64_t oh = 0; oh < w.out[0]; ++oh)
    for (int64_t ow = 0; ow < w.out[1]; ++ow) {
      int64_t lo[2], hi[2], size = 1, real = 1;
      for (int i = 0; i < 2; ++i) {
        lo[i] = (i ? ow : oh) * w.s[i] - w.p[i];
        hi[i] = std::min(lo[i] + w.k[i], w.in[i] + w.p[i]);
        size *= hi[i] - lo[i];
        real *= std::min(hi[i], w.in[i]) - std::max<int64_t>(lo[i], 0);
      }
      int64_t div = pool.getDivisorOverride()   ? static_cast<int64_t>(pool.getDivisorOverride())
                    : pool.getCountIncludePad() ? size
                                                : real;
      inv.push_back(div > 0 ? 1.0 / static_cast<double>(div) : 0.0);
    }
  auto type = RankedTensorType::get({w.out[0], w.out[1]}, elt);
  SmallVector<Attribute> attrs;
  for (double v : inv)
    attrs.push_back(gb.b.getFloatAttr(elt, v));
  return gb.b.create<ConstantOp>(gb.loc,
                                 llvm::cast<ElementsAttr>(DenseElementsAttr::get(type, attrs)));
}

LogicalResult avgPoolGrad(GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads,
                          std::string &why) {
  auto pool = cast<AvgPool2dOp>(op);
  if (!staticShapes(op, why))
    return failure();
  Window w = windowOf(pool.getInput(), pool.getResult(), pool.getKernel(), pool.getStride(),
                      pool.getPadding(), {});
  Value scaled = gb.mul(g, inverseDivisors(gb, pool, w, typeOf(g).getElementType()));
  Value sp = w.padForTaps(gb, scaled, 0.0);
  grads[0] =
      w.unpad(gb, w.spread(gb, [&](int64_t i, int64_t j) { return w.shifted(gb, sp, i, j); }));
  return success();
}

} // namespace

void addPoolGradRules(GradRuleTable &t) {
  t[MaxPool2dOp::getOperationName()] = maxPoolGrad;
  t[AvgPool2dOp::getOperationName()] = avgPoolGrad;
}

} // namespace mlir::kiln

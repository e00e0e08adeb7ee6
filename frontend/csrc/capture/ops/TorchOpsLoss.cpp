//===- TorchOpsLoss.cpp - loss functions ---------------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of torch.nn.functional's losses: mse, l1,
// smooth_l1, huber, binary_cross_entropy(_with_logits), kl_div, nll_loss and
// cross_entropy (class indices with weight / ignore_index / label_smoothing,
// or class probabilities), and one_hot. Each is composed of primitives in
// the input's opmath type with torch's reductions ('none', 'mean', 'sum');
// the deprecated size_average/reduce arguments are Unsupported (eager
// handles them).
//===----------------------------------------------------------------------===//
#include "capture/ops/StopGradient.h"
#include "capture/ops/TorchOpsImpl.h"

#include <cmath>

namespace kiln {

using namespace mlir::kiln;

namespace {

DType opmath(DType d) { return d == DType::F16 || d == DType::BF16 ? DType::F32 : d; }

std::vector<int64_t> allDims(Value v) {
  std::vector<int64_t> d;
  for (int64_t i = 0; i < ttype(v).getRank(); ++i)
    d.push_back(i);
  return d;
}

/// Applies `reduction` to the elementwise loss `l` (compute type) and casts
/// to `d`.
Value reduce(Emit &e, Value l, const std::string &reduction, DType d) {
  if (reduction == "none")
    return e.cast(l, d);
  if (reduction == "sum")
    return e.cast(e.reduce<SumOp>(l, allDims(l), false), d);
  if (reduction == "mean")
    return e.cast(e.reduce<MeanOp>(l, allDims(l), false), d);
  throw Unsupported("reduction '" + reduction + "' (eager raises)");
}

std::string reductionArg(const Args &a) {
  if (!a.isNone("size_average") || !a.isNone("reduce"))
    throw Unsupported("the deprecated size_average/reduce arguments are not supported");
  return strArg(a, "reduction", "mean");
}

/// The operands of a pointwise loss in opmath precision, with their
/// difference `diff` and its absolute value `ad`.
struct LossTerms {
  Emit &e;
  const Args &a;
  const std::string &op;
  DType c;
  Value p, t, diff, ad;
  Value num(double v) { return e.num(v, c); }
};

/// An elementwise loss from its terms.
using LossFn = Value (*)(LossTerms &l);

Value mse(LossTerms &l) { return l.e.bin<MulOp>(l.diff, l.diff); }
Value l1(LossTerms &l) { return l.ad; }

/// smooth_l1_loss (`Huber` false: beta) and huber_loss (delta).
template <bool Huber> Value smoothL1(LossTerms &l) {
  Emit &e = l.e;
  double beta = Huber ? floatArg(l.a, "delta", 1.0) : floatArg(l.a, "beta", 1.0);
  if (beta < 0 || (Huber && beta == 0))
    throw Unsupported(BreakCategory::UserError,
                      l.op + " with a non-positive beta/delta (eager raises)");
  if (beta == 0)
    return l.ad;
  Value quad = e.bin<MulOp>(e.bin<MulOp>(l.diff, l.diff), l.num(0.5));
  Value small = e.bin<LtOp>(l.ad, l.num(beta));
  if (!Huber)
    return e.select(small, e.bin<DivOp>(quad, l.num(beta)), e.bin<SubOp>(l.ad, l.num(0.5 * beta)));
  Value lin = e.bin<MulOp>(l.num(beta), e.bin<SubOp>(l.ad, l.num(0.5 * beta)));
  return e.select(small, quad, lin);
}

/// -(t log p + (1 - t) log(1 - p)), each log clamped at -100, with eager's
/// gradient for the input: (p - t) / max(p (1 - p), 1e-12). The value reads
/// p behind a stop-gradient (the target keeps the clamped formula's gradient:
/// eager's -logit(p) is infinite at p = 0 or 1, kiln's +-100) and
/// adds sg(G) * (p - sg(p)), zero, whose gradient is G: differentiating the
/// clamped logs gave NaN at p = 0 or 1 (a sigmoid saturated in float32).
Value binaryCrossEntropy(LossTerms &l) {
  Emit &e = l.e;
  auto clog = [&](Value v) { return e.bin<MaximumOp>(e.unary<LogOp>(v), l.num(-100.0)); };
  Value one = l.num(1.0), p = stopGradient(e.I, l.p);
  Value loss = e.unary<NegOp>(
      e.bin<AddOp>(e.bin<MulOp>(l.t, clog(p)),
                   e.bin<MulOp>(e.bin<SubOp>(one, l.t), clog(e.bin<SubOp>(one, p)))));
  Value denom = e.bin<MaximumOp>(e.bin<MulOp>(e.bin<SubOp>(one, p), p), l.num(1e-12));
  Value grad = stopGradient(e.I, e.bin<DivOp>(e.bin<SubOp>(p, l.t), denom));
  return e.bin<AddOp>(loss, e.bin<MulOp>(grad, e.bin<SubOp>(l.p, p)));
}

/// (1 - t) x + w_log (log1p(exp(-|x|)) + max(-x, 0)), w_log = 1 + (pw - 1) t.
Value binaryCrossEntropyWithLogits(LossTerms &l) {
  Emit &e = l.e;
  Value one = l.num(1.0), p = l.p, t = l.t;
  Value sp = e.bin<AddOp>(e.unary<Log1pOp>(e.unary<ExpOp>(e.unary<NegOp>(e.unary<AbsOp>(p)))),
                          e.tieGrad(e.bin<MaximumOp>(e.unary<NegOp>(p), l.num(0.0)), "half"));
  if (!l.a.isNone("pos_weight")) {
    Value pw = e.cast(tensorArg(l.a.get("pos_weight"), l.op), l.c);
    sp = e.bin<MulOp>(e.bin<AddOp>(one, e.bin<MulOp>(e.bin<SubOp>(pw, one), t)), sp);
  }
  return e.bin<AddOp>(e.bin<MulOp>(e.bin<SubOp>(one, t), p), sp);
}

/// target * (log(target) - input), 0 where target == 0 (xlogy);
/// log_target: exp(t) (t - x).
Value klDiv(LossTerms &l) {
  Emit &e = l.e;
  if (boolArg(l.a, "log_target", false))
    return e.bin<MulOp>(e.unary<ExpOp>(l.t), e.bin<SubOp>(l.t, l.p));
  Value xlogy =
      e.select(e.bin<EqOp>(l.t, l.num(0.0)), l.num(0.0), e.bin<MulOp>(l.t, e.unary<LogOp>(l.t)));
  return e.bin<SubOp>(xlogy, e.bin<MulOp>(l.t, l.p));
}

/// A pointwise loss of (input, target) with the same shape; `Weighted`:
/// it takes a `weight`; `BatchMean`: reduction='batchmean' is allowed.
template <LossFn F, bool Weighted = false, bool BatchMean = false>
VarP pointwise(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value x = tensorArg(a.get("input"), op), y = tensorArg(a.get("target"), op);
  std::string reduction = reductionArg(a);
  DType d = dtypeOfValue(x);
  if (!isFloatingDType(d) || dtypeOfValue(y) != d)
    throw Unsupported(op + " expects float tensors of one dtype");
  if (ttype(x).getShape() != ttype(y).getShape())
    throw Unsupported(op + " with differently shaped input and target");
  if (!a.isNone("weight") && !Weighted)
    throw Unsupported(BreakCategory::UnsupportedOp, op + " with weight is not supported yet");
  DType c = opmath(d);
  Value p = e.cast(x, c), t = e.cast(y, c);
  Value diff = e.bin<SubOp>(p, t);
  LossTerms terms{e, a, op, c, p, t, diff, e.unary<AbsOp>(diff)};
  Value l = F(terms);
  if (BatchMean && reduction == "batchmean") {
    int64_t n = ttype(l).getRank() == 0 ? 1 : ttype(l).getDimSize(0);
    return T(e.cast(e.bin<DivOp>(e.reduce<SumOp>(l, allDims(l), false), e.num((double)n, c)), d));
  }
  if (!a.isNone("weight")) {
    Value w = e.cast(tensorArg(a.get("weight"), op), c);
    l = e.bin<MulOp>(l, w);
    if (ttype(l).getShape() != ttype(x).getShape())
      throw Unsupported(BreakCategory::UserError,
                        op + ": weight does not broadcast (eager raises)");
  }
  return T(reduce(e, l, reduction, d));
}

/// nll_loss / cross_entropy over class dim 1 (0 for an unbatched input).
template <bool CrossEntropy> VarP classLoss(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value x = tensorArg(a.get("input"), op), y = tensorArg(a.get("target"), op);
  std::string reduction = reductionArg(a);
  DType d = dtypeOfValue(x);
  if (!isFloatingDType(d))
    throw Unsupported(op + " of an integer input (eager raises)");
  DType c = opmath(d);
  int64_t rank = ttype(x).getRank();
  if (rank < 1)
    throw Unsupported(op + " of a 0-d input (eager raises)");
  int64_t cdim = rank == 1 ? 0 : 1, nc = ttype(x).getDimSize(cdim);
  Value logp = e.cast(x, c);
  if (CrossEntropy) {
    Args la;
    la.named["input"] = T(logp);
    la.named["dim"] = constInt(cdim);
    logp = applyTracked(I, "log_softmax", la)->value;
  }
  double smoothing = CrossEntropy ? floatArg(a, "label_smoothing", 0.0) : 0.0;
  if (smoothing < 0 || smoothing > 1)
    throw Unsupported("label_smoothing out of [0, 1] (eager raises)");
  Value w = a.isNone("weight") ? Value() : e.cast(tensorArg(a.get("weight"), op), c);
  if (w && ttype(w).getShape() != llvm::ArrayRef<int64_t>{nc})
    throw Unsupported(op + ": weight shape mismatch (eager raises)");
  std::vector<int64_t> wshape(rank, 1);
  wshape[cdim] = nc;
  DType yd = dtypeOfValue(y);
  if (isFloatingDType(yd)) { // class probabilities
    if (!CrossEntropy || ttype(y).getShape() != ttype(x).getShape())
      throw Unsupported(
          op + " with float targets needs cross_entropy and the input's shape (eager raises)");
    Value t = e.cast(y, c);
    if (smoothing > 0)
      t = e.bin<AddOp>(e.bin<MulOp>(t, e.num(1 - smoothing, c)), e.num(smoothing / nc, c));
    Value prod = e.bin<MulOp>(logp, t);
    if (w)
      prod = e.bin<MulOp>(prod, e.reshape(w, wshape));
    Value l = e.unary<NegOp>(e.reduce<SumOp>(prod, {cdim}, false));
    if (reduction == "mean") {
      int64_t n = ttype(l).getNumElements();
      return T(e.cast(e.bin<DivOp>(e.reduce<SumOp>(l, allDims(l), false), e.num((double)n, c)), d));
    }
    return T(reduce(e, l, reduction, d));
  }
  if (yd != DType::I64)
    throw Unsupported(op + " expects int64 class indices (eager raises)");
  std::vector<int64_t> expect(ttype(x).getShape().begin(), ttype(x).getShape().end());
  expect.erase(expect.begin() + cdim);
  if (ttype(y).getShape() != llvm::ArrayRef<int64_t>(expect))
    throw Unsupported(op + ": target shape mismatch (eager raises)");
  int64_t ignore = intArg(a, "ignore_index", -100);
  Value valid = e.bin<NeOp>(y, e.num((double)ignore, DType::I64));
  Value safe = e.select(valid, y, e.num(0, DType::I64));
  std::vector<int64_t> ishape(expect);
  ishape.insert(ishape.begin() + cdim, 1);
  Value idx = e.reshape(safe, ishape);
  auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(cdim))};
  Value picked = e.reshape(e.checked<GatherOp>({logp, idx}, attrs, op), expect);
  Value validF = e.cast(valid, c);
  Value wt = validF;
  if (w) {
    Value wsel =
        e.checked<GatherOp>({e.reshape(w, {nc}), e.reshape(safe, {ttype(safe).getNumElements()})},
                            {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(0))}, op);
    wt = e.bin<MulOp>(validF, e.reshape(wsel, expect));
  }
  Value l = e.unary<NegOp>(e.bin<MulOp>(picked, wt));
  if (smoothing > 0) {
    if (w)
      throw Unsupported("cross_entropy with both weight and label_smoothing is not supported yet");
    Value smooth = e.unary<NegOp>(e.reduce<SumOp>(logp, {cdim}, false));
    smooth = e.bin<MulOp>(smooth, validF);
    l = e.bin<AddOp>(e.bin<MulOp>(l, e.num(1 - smoothing, c)),
                     e.bin<MulOp>(smooth, e.num(smoothing / nc, c)));
  }
  if (reduction == "mean") {
    Value num = e.reduce<SumOp>(l, allDims(l), false);
    Value den = e.reduce<SumOp>(wt, allDims(wt), false);
    return T(e.cast(e.bin<DivOp>(num, den), d));
  }
  return T(reduce(e, l, reduction, d));
}

VarP oneHot(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value x = tensorArg(a.get("input"), op);
  if (dtypeOfValue(x) != DType::I64)
    throw Unsupported("one_hot expects an int64 tensor (eager raises)");
  int64_t n = intArg(a, "num_classes", -1);
  if (n < 0)
    throw Unsupported("one_hot without num_classes depends on the data");
  auto s = ttype(x).getShape();
  std::vector<int64_t> ns(s.begin(), s.end());
  ns.push_back(1);
  std::vector<double> classes;
  for (int64_t i = 0; i < n; ++i)
    classes.push_back(i);
  Value table = e.dense({n}, DType::I64, classes);
  Value eq = e.bin<EqOp>(e.reshape(x, ns), table);
  // Eager raises for a class < 0 or >= n: an unused gather of the classes
  // by `x` carries the check (IndexChecks.cpp); canonicalization drops it.
  if (ttype(x).hasStaticShape() && ttype(x).getNumElements() != 0) {
    auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(0)),
                  e.b.getNamedAttr(kIndexErrorAttr, e.b.getI64IntegerAttr(kIndexErrorOneHot))};
    e.checked<GatherOp>({table, e.reshape(x, {ttype(x).getNumElements()})}, attrs, op);
  }
  return T(e.cast(eq, DType::I64));
}

} // namespace

void registerLossOps(OpRegistry &r) {
  const Params base{"input", "target", "size_average", "reduce", "reduction"};
  r.op("mse_loss", pointwise<mse>, base.with(Params{"weight"})).functional();
  r.op("l1_loss", pointwise<l1>, base.with(Params{"weight"})).functional();
  r.op("smooth_l1_loss", pointwise<smoothL1<false>>, base.with(Params{"beta"})).functional();
  r.op("huber_loss", pointwise<smoothL1<true>>,
       Params{"input", "target", "reduction", "delta", "weight"})
      .functional();
  r.op("binary_cross_entropy", pointwise<binaryCrossEntropy, true>,
       Params{"input", "target", "weight", "size_average", "reduce", "reduction"})
      .functional();
  r.op("binary_cross_entropy_with_logits", pointwise<binaryCrossEntropyWithLogits, true>,
       Params{"input", "target", "weight", "size_average", "reduce", "reduction", "pos_weight"})
      .functional();
  r.op("kl_div", pointwise<klDiv, false, true>, base.with(Params{"log_target"})).functional();
  r.op("nll_loss", classLoss<false>,
       Params{"input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction"})
      .functional();
  r.op("cross_entropy", classLoss<true>,
       Params{"input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction",
              "label_smoothing"})
      .functional();
  r.op("one_hot", oneHot, Params{"input", "num_classes"}).functional();
}

} // namespace kiln

//===- TorchOpsLoss.cpp - loss functions ---------------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Table entries and handlers of torch.nn.functional's losses: mse, l1,
// smooth_l1, huber, binary_cross_entropy(_with_logits), kl_div, nll_loss and
// cross_entropy (class indices with weight / ignore_index / label_smoothing,
// or class probabilities), and one_hot. Each is composed of primitives in
// the input's opmath type with torch's reductions ('none', 'mean', 'sum');
// the deprecated size_average/reduce arguments are Unsupported (eager
// handles them).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include <cmath>

namespace kiln {

using namespace mlir::kiln;

namespace {

DType dtypeOfValue(Value v) { return dtypeOf(ttype(v).getElementType()); }
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

/// Pointwise losses of (input, target) with the same shape.
VarP pointwise(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value x = tensorArg(a.get("input"), op), y = tensorArg(a.get("target"), op);
  std::string reduction = reductionArg(a);
  DType d = dtypeOfValue(x);
  if (dtypeCategory(d) < 2 || dtypeOfValue(y) != d)
    throw Unsupported(op + " expects float tensors of one dtype");
  if (ttype(x).getShape() != ttype(y).getShape())
    throw Unsupported(op + " with differently shaped input and target");
  if (!a.isNone("weight") && op != "binary_cross_entropy" &&
      op != "binary_cross_entropy_with_logits")
    throw Unsupported(op + " with weight is not supported yet");
  DType c = opmath(d);
  Value p = e.cast(x, c), t = e.cast(y, c), l;
  Value diff = e.bin<SubOp>(p, t), ad = e.unary<AbsOp>(diff);
  if (op == "mse_loss")
    l = e.bin<MulOp>(diff, diff);
  else if (op == "l1_loss")
    l = ad;
  else if (op == "smooth_l1_loss" || op == "huber_loss") {
    double beta = op == "huber_loss" ? floatArg(a, "delta", 1.0) : floatArg(a, "beta", 1.0);
    if (beta < 0 || (op == "huber_loss" && beta == 0))
      throw Unsupported(op + " with a non-positive beta/delta (eager raises)");
    if (beta == 0)
      l = ad;
    else {
      Value quad = e.bin<MulOp>(e.bin<MulOp>(diff, diff), e.num(0.5, c));
      if (op == "smooth_l1_loss") {
        quad = e.bin<DivOp>(quad, e.num(beta, c));
        l = e.select(e.bin<LtOp>(ad, e.num(beta, c)), quad, e.bin<SubOp>(ad, e.num(0.5 * beta, c)));
      } else {
        Value lin = e.bin<MulOp>(e.num(beta, c), e.bin<SubOp>(ad, e.num(0.5 * beta, c)));
        l = e.select(e.bin<LtOp>(ad, e.num(beta, c)), quad, lin);
      }
    }
  } else if (op == "binary_cross_entropy") {
    // -(t log(x) + (1 - t) log(1 - x)), each log clamped at -100 as torch.
    auto clog = [&](Value v) { return e.bin<MaximumOp>(e.unary<LogOp>(v), e.num(-100.0, c)); };
    Value one = e.num(1.0, c);
    l = e.unary<NegOp>(e.bin<AddOp>(
        e.bin<MulOp>(t, clog(p)), e.bin<MulOp>(e.bin<SubOp>(one, t), clog(e.bin<SubOp>(one, p)))));
  } else if (op == "binary_cross_entropy_with_logits") {
    // (1 - t) x + w_log (log1p(exp(-|x|)) + max(-x, 0)), w_log = 1 + (pw - 1) t
    Value one = e.num(1.0, c);
    Value sp = e.bin<AddOp>(
        e.b.create<Log1pOp>(I.loc(), e.unary<ExpOp>(e.unary<NegOp>(e.unary<AbsOp>(p)))),
        e.bin<MaximumOp>(e.unary<NegOp>(p), e.num(0.0, c)));
    if (!a.isNone("pos_weight")) {
      Value pw = e.cast(tensorArg(a.get("pos_weight"), op), c);
      sp = e.bin<MulOp>(e.bin<AddOp>(one, e.bin<MulOp>(e.bin<SubOp>(pw, one), t)), sp);
    }
    l = e.bin<AddOp>(e.bin<MulOp>(e.bin<SubOp>(one, t), p), sp);
  } else if (op == "kl_div") {
    // target * (log(target) - input), 0 where target == 0 (xlogy); log_target: exp(t) (t - x)
    if (boolArg(a, "log_target", false))
      l = e.bin<MulOp>(e.unary<ExpOp>(t), e.bin<SubOp>(t, p));
    else {
      Value xlogy = e.select(e.bin<EqOp>(t, e.num(0.0, c)), e.num(0.0, c),
                             e.bin<MulOp>(t, e.unary<LogOp>(t)));
      l = e.bin<SubOp>(xlogy, e.bin<MulOp>(t, p));
    }
    if (reduction == "batchmean") {
      int64_t n = ttype(l).getRank() == 0 ? 1 : ttype(l).getDimSize(0);
      return T(e.cast(e.bin<DivOp>(e.reduce<SumOp>(l, allDims(l), false), e.num((double)n, c)), d));
    }
  } else {
    throw Unsupported("op " + op + " is not mapped");
  }
  if (!a.isNone("weight")) {
    Value w = e.cast(tensorArg(a.get("weight"), op), c);
    l = e.bin<MulOp>(l, w);
    if (ttype(l).getShape() != ttype(x).getShape())
      throw Unsupported(op + ": weight does not broadcast (eager raises)");
  }
  return T(reduce(e, l, reduction, d));
}

/// nll_loss / cross_entropy over class dim 1 (0 for an unbatched input).
VarP classLoss(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value x = tensorArg(a.get("input"), op), y = tensorArg(a.get("target"), op);
  std::string reduction = reductionArg(a);
  DType d = dtypeOfValue(x);
  if (dtypeCategory(d) < 2)
    throw Unsupported(op + " of an integer input (eager raises)");
  DType c = opmath(d);
  int64_t rank = ttype(x).getRank();
  if (rank < 1)
    throw Unsupported(op + " of a 0-d input (eager raises)");
  int64_t cdim = rank == 1 ? 0 : 1, nc = ttype(x).getDimSize(cdim);
  Value logp = e.cast(x, c);
  if (op == "cross_entropy") {
    Args la;
    la.named["input"] = T(logp);
    la.named["dim"] = constInt(cdim);
    logp = applyTracked(I, "log_softmax", la)->value;
  }
  double smoothing = op == "cross_entropy" ? floatArg(a, "label_smoothing", 0.0) : 0.0;
  if (smoothing < 0 || smoothing > 1)
    throw Unsupported("label_smoothing out of [0, 1] (eager raises)");
  Value w = a.isNone("weight") ? Value() : e.cast(tensorArg(a.get("weight"), op), c);
  if (w && ttype(w).getShape() != llvm::ArrayRef<int64_t>{nc})
    throw Unsupported(op + ": weight shape mismatch (eager raises)");
  std::vector<int64_t> wshape(rank, 1);
  wshape[cdim] = nc;
  DType yd = dtypeOfValue(y);
  if (dtypeCategory(yd) == 2) { // class probabilities
    if (op != "cross_entropy" || ttype(y).getShape() != ttype(x).getShape())
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
  Value eq = e.bin<EqOp>(e.reshape(x, ns), e.dense({n}, DType::I64, classes));
  return T(e.cast(eq, DType::I64));
}

} // namespace

void registerLossOps(OpTable &t) {
  const char *F = "torch.nn.functional";
  const std::vector<std::string> base = {"input", "target", "size_average", "reduce", "reduction"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> p = base;
    p.insert(p.end(), extra.begin(), extra.end());
    return p;
  };
  t.function(F, "mse_loss", {"mse_loss", with({"weight"})});
  t.function(F, "l1_loss", {"l1_loss", with({"weight"})});
  t.function(F, "smooth_l1_loss", {"smooth_l1_loss", with({"beta"})});
  t.function(F, "huber_loss", {"huber_loss", {"input", "target", "reduction", "delta", "weight"}});
  t.function(F, "binary_cross_entropy",
             {"binary_cross_entropy",
              {"input", "target", "weight", "size_average", "reduce", "reduction"}});
  t.function(F, "binary_cross_entropy_with_logits",
             {"binary_cross_entropy_with_logits",
              {"input", "target", "weight", "size_average", "reduce", "reduction", "pos_weight"}});
  t.function(F, "kl_div", {"kl_div", with({"log_target"})});
  for (const char *n : {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                        "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"})
    t.handler(n, pointwise);
  t.function(
      F, "nll_loss",
      {"nll_loss",
       {"input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction"}});
  t.function(F, "cross_entropy",
             {"cross_entropy",
              {"input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction",
               "label_smoothing"}});
  t.handler("nll_loss", classLoss);
  t.handler("cross_entropy", classLoss);
  t.function(F, "one_hot", {"one_hot", {"input", "num_classes"}});
  t.handler("one_hot", oneHot);
}

} // namespace kiln

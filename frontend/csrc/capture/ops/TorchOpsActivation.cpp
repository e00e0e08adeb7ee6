//===- TorchOpsActivation.cpp - F.* activations as compositions -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of the activations beyond relu/gelu/silu
// (CoreElementwise.cpp): relu6, hardtanh, hardswish, mish, elu, selu,
// leaky_relu, softplus, glu, prelu and the rest, each composed of kiln
// primitives on a float input in torch's opmath precision (f16/bf16 in
// f32, rounded once). Integer inputs are Unsupported where eager raises.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

namespace kiln {

using namespace mlir::kiln;

namespace {

/// A float input; ints are Unsupported (eager raises NotImplementedError).
Value floatOnly(const VarP &x, const std::string &op) {
  Value v = tensorArg(x, op);
  if (!isFloatValue(v))
    throw Unsupported(BreakCategory::UserError, op + " of an integer tensor (eager raises)");
  return v;
}

/// What a composed activation builds from: its input `w` in opmath
/// precision, the arguments, and small builders.
struct Activation {
  Interpreter &I;
  Emit &e;
  Opmath &m;
  const Args &a;
  const std::string &op;
  Value w;

  Value num(double c) { return m.num(c); }
  Value mul(Value p, Value q) { return e.bin<MulOp>(p, q); }
  Value add(Value p, Value q) { return e.bin<AddOp>(p, q); }
  Value clamp(Value p, double lo, double hi) {
    return e.bin<MinimumOp>(e.bin<MaximumOp>(p, num(lo)), num(hi));
  }
  /// `p > 0 ? p : negative`.
  Value positiveOr(Value p, Value negative) {
    return e.select(e.bin<GtOp>(p, num(0.0)), p, negative);
  }
  /// torch: x * beta > threshold ? x : log1p(exp(x * beta)) / beta.
  /// The exp reads min(x * beta, threshold): the branch not taken must stay
  /// finite, or its gradient (0 * inf) is NaN (float32 x >= 89).
  Value softplus(Value p, double beta, double threshold) {
    Value bx = beta == 1.0 ? p : mul(p, num(beta));
    Value capped = e.tieGrad(e.bin<MinimumOp>(bx, num(threshold)), "all");
    Value sp = e.unary<Log1pOp>(e.unary<ExpOp>(capped));
    if (beta != 1.0)
      sp = e.bin<DivOp>(sp, num(beta));
    return e.select(e.bin<GtOp>(bx, num(threshold)), p, sp);
  }
};

using Composition = Value (*)(Activation &c);

/// An activation composed by `F` on the float input.
template <Composition F> VarP composed(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value v = floatOnly(a.get("input"), op);
  Opmath m(e, v);
  Activation c{I, e, m, a, op, m.in(v)};
  return T(m.out(F(c)));
}

Value hardswish(Activation &c) {
  return c.mul(c.w, c.mul(c.clamp(c.add(c.w, c.num(3.0)), 0.0, 6.0), c.num(1.0 / 6.0)));
}
Value hardsigmoid(Activation &c) {
  return c.e.bin<DivOp>(c.clamp(c.add(c.w, c.num(3.0)), 0.0, 6.0), c.num(6.0));
}
Value softplus(Activation &c) {
  return c.softplus(c.w, floatArg(c.a, "beta", 1.0), floatArg(c.a, "threshold", 20.0));
}
Value mish(Activation &c) { return c.mul(c.w, c.e.unary<TanhOp>(c.softplus(c.w, 1.0, 20.0))); }
/// min(x, 0) - log1p(exp(-|x|)).
Value logsigmoid(Activation &c) {
  Value negAbs = c.e.unary<NegOp>(c.e.unary<AbsOp>(c.w));
  return c.e.bin<SubOp>(c.e.tieGrad(c.e.bin<MinimumOp>(c.w, c.num(0.0)), "half"),
                        c.e.unary<Log1pOp>(c.e.unary<ExpOp>(negAbs)));
}
Value softsign(Activation &c) {
  return c.e.bin<DivOp>(c.w, c.add(c.num(1.0), c.e.unary<AbsOp>(c.w)));
}
Value tanhshrink(Activation &c) { return c.e.bin<SubOp>(c.w, c.e.unary<TanhOp>(c.w)); }

/// elu: x > 0 ? x : alpha * expm1(x); celu: alpha * expm1(x / alpha);
/// then times `scale`. The expm1 reads min(arg, 0), finite where the branch
/// is not taken (its gradient was 0 * inf = NaN for float32 x >= 89).
Value eluLike(Activation &c, double alpha, double scale, bool celu) {
  Value arg = celu ? c.mul(c.w, c.num(1.0 / alpha)) : c.w;
  arg = c.e.tieGrad(c.e.bin<MinimumOp>(arg, c.num(0.0)), "all");
  Value r = c.positiveOr(c.w, c.mul(c.num(alpha), c.e.unary<Expm1Op>(arg)));
  return scale != 1.0 ? c.mul(r, c.num(scale)) : r;
}
Value elu(Activation &c) { return eluLike(c, floatArg(c.a, "alpha", 1.0), 1.0, false); }
Value celu(Activation &c) { return eluLike(c, floatArg(c.a, "alpha", 1.0), 1.0, true); }
Value selu(Activation &c) { return eluLike(c, 1.6732632423543772, 1.0507009873554805, false); }

Value leakyRelu(Activation &c) {
  return c.positiveOr(c.w, c.mul(c.w, c.num(floatArg(c.a, "negative_slope", 0.01))));
}
/// Eval-mode rrelu: the mean slope (lower + upper) / 2.
Value rrelu(Activation &c) {
  double slope = (floatArg(c.a, "lower", 1.0 / 8) + floatArg(c.a, "upper", 1.0 / 3)) / 2;
  if (boolArg(c.a, "training", false))
    throw Unsupported(BreakCategory::Random,
                      "rrelu in training mode (random) is not supported yet");
  return c.positiveOr(c.w, c.mul(c.w, c.num(slope)));
}
Value hardshrink(Activation &c) {
  double l = floatArg(c.a, "lambd", 0.5);
  // Eager: 0 where -l <= x <= l, else x (NaN stays NaN).
  Value small = c.e.bin<LeOp>(c.e.unary<AbsOp>(c.w), c.num(l));
  return c.e.select(small, c.num(0.0), c.w);
}
Value softshrink(Activation &c) {
  double l = floatArg(c.a, "lambd", 0.5);
  if (l < 0)
    throw Unsupported(BreakCategory::UserError, "softshrink with a negative lambda (eager raises)");
  Emit &e = c.e;
  // x * 0 in the middle: 0 there, NaN for NaN as eager's kernel gives.
  Value below = e.select(e.bin<LtOp>(c.w, c.num(-l)), c.add(c.w, c.num(l)), c.mul(c.w, c.num(0.0)));
  return e.select(e.bin<GtOp>(c.w, c.num(l)), e.bin<SubOp>(c.w, c.num(l)), below);
}
Value threshold(Activation &c) {
  // Eager: value where x <= threshold, else x (NaN stays NaN).
  return c.e.select(c.e.bin<LeOp>(c.w, c.num(floatArg(c.a, "threshold", 0.0))),
                    c.num(floatArg(c.a, "value", 0.0)), c.w);
}

/// glu: first half times sigmoid(second half) along `dim`.
Value glu(Activation &c) {
  Value w = c.w;
  int64_t rank = ttype(w).getRank();
  if (rank == 0)
    throw Unsupported(BreakCategory::UserError, "glu of a 0-d tensor (eager raises)");
  int64_t dim = normDim(intArg(c.a, "dim", -1), rank);
  int64_t n = ttype(w).getDimSize(dim);
  if (n % 2)
    throw Unsupported(BreakCategory::UserError, "glu over an odd dim (eager raises)");
  auto shape = ttype(w).getShape();
  std::vector<int64_t> end(shape.begin(), shape.end()), step(rank, 1);
  auto half = [&](int64_t s0) {
    std::vector<int64_t> st(rank, 0), en = end;
    st[dim] = s0;
    en[dim] = s0 + n / 2;
    mlir::OpBuilder &b = c.e.b;
    return b
        .create<SliceOp>(c.I.loc(), w, b.getDenseI64ArrayAttr(st), b.getDenseI64ArrayAttr(en),
                         b.getDenseI64ArrayAttr(step))
        .getResult();
  };
  return c.mul(half(0), c.e.unary<SigmoidOp>(half(n / 2)));
}

/// prelu: x > 0 ? x : weight * x, weight per channel (dim 1) or one value.
Value prelu(Activation &c) {
  Value wt = tensorArg(c.a.get("weight"), c.op);
  if (dtypeOfValue(wt) != c.m.type)
    throw Unsupported(BreakCategory::UnsupportedOp, "prelu weight of another dtype");
  int64_t rank = ttype(c.w).getRank(), n = ttype(wt).getNumElements();
  if (ttype(wt).getRank() > 1)
    throw Unsupported(BreakCategory::UnsupportedOp, "prelu weight must be 1-D");
  Value slope = c.m.in(wt);
  if (n != 1) {
    if (rank < 2 || ttype(c.w).getDimSize(1) != n)
      throw Unsupported(BreakCategory::UserError, "prelu weight size mismatch (eager raises)");
    std::vector<int64_t> shape(rank - 1, 1);
    shape[0] = n;
    slope = c.e.reshape(slope, shape);
  } else {
    slope = c.e.reshape(slope, {});
  }
  return c.positiveOr(c.w, c.mul(c.w, slope));
}

/// relu6 and hardtanh: a clamp in the input's own dtype (ints included).
template <bool Relu6> VarP clampActivation(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  double lo = Relu6 ? 0.0 : floatArg(a, "min_val", -1.0);
  double hi = Relu6 ? 6.0 : floatArg(a, "max_val", 1.0);
  if (lo > hi)
    throw Unsupported(BreakCategory::UserError, "hardtanh with min_val > max_val (eager raises)");
  DType d = dtypeOfValue(v);
  if (d == DType::Bool)
    throw Unsupported(BreakCategory::UnsupportedOp, op + " of a bool tensor");
  Emit e(I);
  return T(e.bin<MinimumOp>(e.bin<MaximumOp>(v, e.num(lo, d)), e.num(hi, d)));
}

} // namespace

void registerActivationOps(OpRegistry &r) {
  const Params input{"input"}, withInplace{"input", "inplace"};
  r.op("relu6", clampActivation<true>, withInplace).functional();
  r.op("hardtanh", clampActivation<false>, Params{"input", "min_val", "max_val", "inplace"})
      .functional();
  r.op("hardswish", composed<hardswish>, withInplace).functional();
  r.op("hardsigmoid", composed<hardsigmoid>, withInplace).functional();
  r.op("mish", composed<mish>, withInplace).functional();
  r.op("softplus", composed<softplus>, Params{"input", "beta", "threshold"}).functional();
  r.op("logsigmoid", composed<logsigmoid>, input).functional();
  r.op("softsign", composed<softsign>, input).functional();
  r.op("tanhshrink", composed<tanhshrink>, input).functional();
  r.op("elu", composed<elu>, Params{"input", "alpha", "inplace"}).functional();
  r.op("celu", composed<celu>, Params{"input", "alpha", "inplace"})
      .functional()
      .torch(Params{"input", "alpha"});
  r.op("selu", composed<selu>, withInplace).functional().torch(input);
  r.op("leaky_relu", composed<leakyRelu>, Params{"input", "negative_slope", "inplace"})
      .functional();
  r.op("rrelu", composed<rrelu>, Params{"input", "lower", "upper", "training", "inplace"})
      .functional()
      .torch(Params{"input", "lower", "upper", "training"});
  r.op("hardshrink", composed<hardshrink>, Params{"input", "lambd"}).functional().torchAndMethod();
  r.op("softshrink", composed<softshrink>, Params{"input", "lambd"}).functional();
  r.op("threshold", composed<threshold>, Params{"input", "threshold", "value", "inplace"})
      .functional()
      .torch(Params{"input", "threshold", "value"});
  r.op("glu", composed<glu>, Params{"input", "dim"}).functional();
  r.op("prelu", composed<prelu>, Params{"input", "weight"}).functional().torchAndMethod();
}

} // namespace kiln

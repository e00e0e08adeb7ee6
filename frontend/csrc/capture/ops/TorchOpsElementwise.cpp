//===- TorchOpsElementwise.cpp - elementwise torch ops and activations -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Table entries and handlers of the elementwise torch functions, Tensor
// methods and F.* activations beyond the core set in TorchOps.cpp: math
// functions with their own kiln op (sin, floor, log1p ...), compositions of
// primitives (reciprocal, sign, lerp, addcmul, isnan, logical ops ...) and
// activations (hardswish, mish, elu, leaky_relu, softplus, glu, prelu ...).
// Composites on f16/bf16 compute in f32 and round once, like torch's
// opmath. Integer inputs follow torch: promoted to the default float where
// torch promotes, passed through where torch returns a copy (floor of an
// int), Unsupported where eager raises (so eager raises its own error).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include <cmath>
#include <limits>

namespace kiln {

using namespace mlir::kiln;

namespace {

bool isFloatType(Value v) { return dtypeCategory(dtypeOf(ttype(v).getElementType())) == 2; }
DType dtypeOfValue(Value v) { return dtypeOf(ttype(v).getElementType()); }
bool isNarrow(DType d) { return d == DType::F16 || d == DType::BF16; }

/// A float computation in torch's opmath type: f16/bf16 inputs are cast to
/// f32, the result back to the input's type.
struct Opmath {
  Emit &e;
  DType type;
  Opmath(Emit &e, Value x) : e(e), type(dtypeOfValue(x)) {}
  DType compute() const { return isNarrow(type) ? DType::F32 : type; }
  Value in(Value x) { return e.cast(x, compute()); }
  Value out(Value r) { return e.cast(r, type); }
  Value num(double v) { return e.num(v, compute()); }
};

/// The float input of a unary math function (ints promote, as torch does).
Value promotedFloat(Emit &e, const VarP &x, const std::string &op) {
  Value v = tensorArg(x, op);
  return isFloatType(v) ? v : e.cast(v, defaultFloat());
}

/// A float input; ints are Unsupported (eager raises NotImplementedError).
Value floatOnly(const VarP &x, const std::string &op) {
  Value v = tensorArg(x, op);
  if (!isFloatType(v))
    throw Unsupported(op + " of an integer tensor (eager raises)");
  return v;
}

template <typename OpT> Value unaryOp(Emit &e, Value v) { return e.b.create<OpT>(e.I.loc(), v); }

/// sin, cos, ... : one kiln op on the promoted float input.
VarP mathUnary(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  VarP x = a.get("input");
  Value v = tensorArg(x, op);
  bool rounding = op == "floor" || op == "ceil" || op == "round" || op == "trunc" || op == "fix";
  if (rounding && !isFloatType(v)) {
    if (op == "round" && intArg(a, "decimals", 0) != 0)
      throw Unsupported("round of an integer tensor with decimals");
    return freshResult(v); // eager returns a copy of an integer tensor
  }
  v = promotedFloat(e, x, op);
  Opmath m(e, v);
  if (op == "sin")
    return T(unaryOp<SinOp>(e, v));
  if (op == "cos")
    return T(unaryOp<CosOp>(e, v));
  if (op == "tan")
    return T(unaryOp<TanOp>(e, v));
  if (op == "atan" || op == "arctan")
    return T(unaryOp<AtanOp>(e, v));
  if (op == "floor")
    return T(unaryOp<FloorOp>(e, v));
  if (op == "ceil")
    return T(unaryOp<CeilOp>(e, v));
  if (op == "trunc" || op == "fix")
    return T(unaryOp<TruncOp>(e, v));
  if (op == "log1p")
    return T(unaryOp<Log1pOp>(e, v));
  if (op == "expm1")
    return T(unaryOp<Expm1Op>(e, v));
  if (op == "log2")
    return T(unaryOp<Log2Op>(e, v));
  if (op == "round") {
    int64_t decimals = intArg(a, "decimals", 0);
    if (decimals == 0)
      return T(unaryOp<RoundOp>(e, v));
    // torch: nearbyint(x * 10^d) / 10^d (d < 0: nearbyint(x / 10^-d) * 10^-d).
    Value w = m.in(v);
    double scale = std::pow(10.0, std::abs((double)decimals));
    Value s = m.num(scale);
    Value r = decimals > 0 ? e.bin<DivOp>(unaryOp<RoundOp>(e, e.bin<MulOp>(w, s)), s)
                           : e.bin<MulOp>(unaryOp<RoundOp>(e, e.bin<DivOp>(w, s)), s);
    return T(m.out(r));
  }
  Value w = m.in(v);
  Value r;
  if (op == "frac")
    r = e.bin<SubOp>(w, unaryOp<TruncOp>(e, w));
  else if (op == "log10")
    r = e.bin<MulOp>(unaryOp<LogOp>(e, w), m.num(1.0 / std::log(10.0)));
  else if (op == "exp2")
    r = unaryOp<ExpOp>(e, e.bin<MulOp>(w, m.num(std::log(2.0))));
  else if (op == "sinh" || op == "cosh") {
    Value p = unaryOp<Expm1Op>(e, w), q = unaryOp<Expm1Op>(e, unaryOp<NegOp>(e, w));
    // sinh = (expm1(x) - expm1(-x)) / 2 (accurate near 0); cosh = 1 + (..+..) / 2.
    r = op == "sinh" ? e.bin<MulOp>(e.bin<SubOp>(p, q), m.num(0.5))
                     : e.bin<AddOp>(m.num(1.0), e.bin<MulOp>(e.bin<AddOp>(p, q), m.num(0.5)));
  } else if (op == "reciprocal")
    r = e.bin<DivOp>(m.num(1.0), w);
  else
    throw Unsupported("op " + op + " is not mapped");
  return T(m.out(r));
}

/// sign/sgn, square, isnan/isinf/isfinite, logical and bitwise (bool) ops.
VarP miscUnary(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value v = tensorArg(a.get("input"), op);
  DType d = dtypeOfValue(v);
  bool fl = dtypeCategory(d) == 2;
  if (op == "sign" || op == "sgn") {
    if (d == DType::Bool)
      return freshResult(v);
    Value zero = e.num(0, d);
    Value pos = e.cast(e.bin<GtOp>(v, zero), d), neg = e.cast(e.bin<LtOp>(v, zero), d);
    return T(e.bin<SubOp>(pos, neg));
  }
  if (op == "square") {
    if (d == DType::Bool)
      throw Unsupported("square of a bool tensor");
    return T(e.bin<MulOp>(v, v));
  }
  if (op == "isnan" || op == "isinf" || op == "isfinite" || op == "isposinf" || op == "isneginf") {
    auto shape = ttype(v).getShape();
    if (!fl)
      return T(e.splat(shape, DType::Bool, op == "isfinite" ? 1 : 0));
    double inf = std::numeric_limits<double>::infinity();
    if (op == "isnan")
      return T(e.bin<NeOp>(v, v));
    if (op == "isposinf")
      return T(e.bin<EqOp>(v, e.num(inf, d)));
    if (op == "isneginf")
      return T(e.bin<EqOp>(v, e.num(-inf, d)));
    Value absV = e.unary<AbsOp>(v);
    return T(op == "isinf" ? e.bin<EqOp>(absV, e.num(inf, d)) : e.bin<LtOp>(absV, e.num(inf, d)));
  }
  if (op == "logical_not" || op == "bitwise_not") {
    if (op == "bitwise_not" && d != DType::Bool)
      throw Unsupported("bitwise_not of an integer tensor");
    return T(e.bin<EqOp>(e.cast(v, DType::Bool), e.num(0, DType::Bool)));
  }
  // Binary logical/bitwise ops.
  VarP other = a.get("other");
  if (op.rfind("bitwise_", 0) == 0) {
    if (d != DType::Bool || !other || !other->isTensor() ||
        dtypeOfValue(other->value) != DType::Bool)
      throw Unsupported(op + " of integer tensors is not supported yet");
  }
  Value x = e.cast(v, DType::Bool);
  Value y = other && other->isTensor() ? e.cast(other->value, DType::Bool)
                                       : e.operand(other ? other : constBool(false), DType::Bool);
  if (op == "logical_and" || op == "bitwise_and")
    return T(e.bin<MulOp>(x, y));
  if (op == "logical_or" || op == "bitwise_or")
    return T(e.bin<AddOp>(x, y));
  return T(e.bin<NeOp>(x, y)); // xor
}

/// Binary and ternary arithmetic built from primitives.
VarP arith(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  VarP x = a.get("input");
  if (op == "rsub") {
    VarP other = a.get("other");
    VarP scaled = a.isNone("alpha") ? x : T(e.binary<MulOp>(x, a.get("alpha")));
    DType d = resultType({x, other});
    return T(e.bin<SubOp>(e.operand(other, d), e.operand(scaled, d)));
  }
  if (op == "floor_divide" || op == "div_mode") {
    VarP other = a.get("other");
    std::string mode = op == "floor_divide" ? "floor" : strArg(a, "rounding_mode", "");
    DType d = resultType({x, other});
    if (dtypeCategory(d) < 2)
      throw Unsupported("integer division with rounding is not supported yet");
    Value q = e.binary<DivOp>(x, other, d);
    if (mode == "trunc")
      return T(unaryOp<TruncOp>(e, q));
    if (mode == "floor")
      return T(unaryOp<FloorOp>(e, q));
    throw Unsupported("div rounding_mode '" + mode + "'");
  }
  if (op == "clamp_min" || op == "clamp_max") {
    return callOp(I, "clamp",
                  {{"input", x},
                   {op == "clamp_min" ? "min" : "max", a.get(op == "clamp_min" ? "min" : "max")}});
  }
  if (op == "fmax" || op == "fmin") {
    VarP other = a.get("other");
    DType d = resultType({x, other});
    Value p = e.operand(x, d), q = e.operand(other, d);
    Value m = op == "fmax" ? e.bin<MaximumOp>(p, q) : e.bin<MinimumOp>(p, q);
    if (dtypeCategory(d) < 2)
      return T(m);
    // NaN only where both are NaN.
    return T(e.select(e.bin<NeOp>(p, p), q, e.select(e.bin<NeOp>(q, q), p, m)));
  }
  if (op == "lerp") {
    VarP end = a.get("end"), weight = a.get("weight");
    Value s = tensorArg(x, op);
    if (!isFloatType(s))
      throw Unsupported("lerp of integer tensors (eager raises)");
    DType d = resultType({x, end, weight});
    Opmath m(e, e.cast(s, d));
    Value p = m.in(e.operand(x, d)), q = m.in(e.operand(end, d)), w = m.in(e.operand(weight, d));
    // torch: |w| < 0.5 ? p + w (q - p) : q - (q - p)(1 - w)
    Value diff = e.bin<SubOp>(q, p);
    Value lo = e.bin<AddOp>(p, e.bin<MulOp>(w, diff));
    Value hi = e.bin<SubOp>(q, e.bin<MulOp>(diff, e.bin<SubOp>(m.num(1.0), w)));
    Value small = e.bin<LtOp>(e.unary<AbsOp>(w), m.num(0.5));
    return T(m.out(e.select(small, lo, hi)));
  }
  if (op == "addcmul" || op == "addcdiv") {
    VarP t1 = a.get("tensor1"), t2 = a.get("tensor2");
    VarP value = a.isNone("value") ? constInt(1) : a.get("value");
    DType d = resultType({x, t1, t2});
    if (op == "addcdiv" && dtypeCategory(d) < 2)
      throw Unsupported("addcdiv of integer tensors (eager raises)");
    Value p = e.operand(x, d), q1 = e.operand(t1, d), q2 = e.operand(t2, d);
    Value prod = op == "addcmul" ? e.bin<MulOp>(q1, q2) : e.bin<DivOp>(q1, q2);
    return T(e.bin<AddOp>(p, e.bin<MulOp>(e.operand(value, d), prod)));
  }
  if (op == "masked_fill") {
    Value v = tensorArg(x, op);
    Value mask = tensorArg(a.get("mask"), op);
    if (dtypeOfValue(mask) != DType::Bool)
      throw Unsupported("masked_fill expects a bool mask (eager raises)");
    VarP value = a.get("value");
    DType d = dtypeOfValue(v);
    // A Python number is converted to the input's dtype (2.7 → 2 for ints).
    Value fill = value->isTensor() ? e.cast(value->value, d) : e.num(asDouble(value, "value"), d);
    if (value->isTensor() && ttype(value->value).getRank() != 0)
      throw Unsupported("masked_fill with a non-0-d value tensor (eager raises)");
    Value r = e.select(mask, fill, v);
    if (ttype(r).getShape() != ttype(v).getShape())
      throw Unsupported("masked_fill mask does not broadcast to the input (eager raises)");
    return T(r);
  }
  if (op == "nan_to_num") {
    Value v = tensorArg(x, op);
    DType d = dtypeOfValue(v);
    if (dtypeCategory(d) < 2)
      return freshResult(v);
    double big = d == DType::F64   ? std::numeric_limits<double>::max()
                 : d == DType::F32 ? std::numeric_limits<float>::max()
                 : d == DType::F16 ? 65504.0
                                   : 3.3895313892515355e38;
    double inf = std::numeric_limits<double>::infinity();
    Value r = e.select(e.bin<NeOp>(v, v), e.num(floatArg(a, "nan", 0.0), d), v);
    r = e.select(e.bin<EqOp>(v, e.num(inf, d)), e.num(floatArg(a, "posinf", big), d), r);
    r = e.select(e.bin<EqOp>(v, e.num(-inf, d)), e.num(floatArg(a, "neginf", -big), d), r);
    return T(r);
  }
  throw Unsupported("op " + op + " is not mapped");
}

/// F.* activations as compositions (float inputs; f16/bf16 in f32).
VarP activation(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  VarP x = a.get("input");
  if (op == "relu6" || op == "hardtanh") {
    Value v = tensorArg(x, op);
    double lo = op == "relu6" ? 0.0 : floatArg(a, "min_val", -1.0);
    double hi = op == "relu6" ? 6.0 : floatArg(a, "max_val", 1.0);
    if (lo > hi)
      throw Unsupported("hardtanh with min_val > max_val (eager raises)");
    DType d = dtypeOfValue(v);
    if (d == DType::Bool)
      throw Unsupported(op + " of a bool tensor");
    return T(e.bin<MinimumOp>(e.bin<MaximumOp>(v, e.num(lo, d)), e.num(hi, d)));
  }
  Value v = floatOnly(x, op);
  Opmath m(e, v);
  Value w = m.in(v);
  auto num = [&](double c) { return m.num(c); };
  auto mul = [&](Value p, Value q) { return e.bin<MulOp>(p, q); };
  auto add = [&](Value p, Value q) { return e.bin<AddOp>(p, q); };
  auto clamp01 = [&](Value p, double lo, double hi) {
    return e.bin<MinimumOp>(e.bin<MaximumOp>(p, num(lo)), num(hi));
  };
  auto softplus = [&](Value p, double beta, double threshold) {
    // torch: x * beta > threshold ? x : log1p(exp(x * beta)) / beta
    Value bx = beta == 1.0 ? p : mul(p, num(beta));
    Value sp = unaryOp<Log1pOp>(e, unaryOp<ExpOp>(e, bx));
    if (beta != 1.0)
      sp = e.bin<DivOp>(sp, num(beta));
    return e.select(e.bin<GtOp>(bx, num(threshold)), p, sp);
  };
  Value r;
  if (op == "hardswish")
    r = mul(w, mul(clamp01(add(w, num(3.0)), 0.0, 6.0), num(1.0 / 6.0)));
  else if (op == "hardsigmoid")
    r = e.bin<DivOp>(clamp01(add(w, num(3.0)), 0.0, 6.0), num(6.0));
  else if (op == "softplus")
    r = softplus(w, floatArg(a, "beta", 1.0), floatArg(a, "threshold", 20.0));
  else if (op == "mish")
    r = mul(w, unaryOp<TanhOp>(e, softplus(w, 1.0, 20.0)));
  else if (op == "logsigmoid") {
    // min(x, 0) - log1p(exp(-|x|))
    Value negAbs = unaryOp<NegOp>(e, e.unary<AbsOp>(w));
    r = e.bin<SubOp>(e.bin<MinimumOp>(w, num(0.0)), unaryOp<Log1pOp>(e, unaryOp<ExpOp>(e, negAbs)));
  } else if (op == "softsign")
    r = e.bin<DivOp>(w, add(num(1.0), e.unary<AbsOp>(w)));
  else if (op == "tanhshrink")
    r = e.bin<SubOp>(w, unaryOp<TanhOp>(e, w));
  else if (op == "elu" || op == "celu" || op == "selu") {
    double alpha = op == "selu" ? 1.6732632423543772 : floatArg(a, "alpha", 1.0);
    double scale = op == "selu" ? 1.0507009873554805 : 1.0;
    // elu: x > 0 ? x : alpha * expm1(x); celu: alpha * expm1(x / alpha)
    Value arg = op == "celu" ? mul(w, num(1.0 / alpha)) : w;
    Value negPart = mul(num(alpha), unaryOp<Expm1Op>(e, arg));
    r = e.select(e.bin<GtOp>(w, num(0.0)), w, negPart);
    if (scale != 1.0)
      r = mul(r, num(scale));
  } else if (op == "leaky_relu" || op == "rrelu") {
    double slope = op == "leaky_relu"
                       ? floatArg(a, "negative_slope", 0.01)
                       : (floatArg(a, "lower", 1.0 / 8) + floatArg(a, "upper", 1.0 / 3)) / 2;
    if (op == "rrelu" && boolArg(a, "training", false))
      throw Unsupported("rrelu in training mode (random) is not supported yet");
    r = e.select(e.bin<GtOp>(w, num(0.0)), w, mul(w, num(slope)));
  } else if (op == "hardshrink" || op == "softshrink") {
    double l = floatArg(a, "lambd", 0.5);
    Value big = e.bin<GtOp>(e.unary<AbsOp>(w), num(l));
    if (op == "hardshrink")
      r = e.select(big, w, num(0.0));
    else
      r = e.select(e.bin<GtOp>(w, num(l)), e.bin<SubOp>(w, num(l)),
                   e.select(e.bin<LtOp>(w, num(-l)), add(w, num(l)), num(0.0)));
    if (op == "softshrink" && l < 0)
      throw Unsupported("softshrink with a negative lambda (eager raises)");
  } else if (op == "threshold") {
    r = e.select(e.bin<GtOp>(w, num(floatArg(a, "threshold", 0.0))), w,
                 num(floatArg(a, "value", 0.0)));
  } else if (op == "glu") {
    int64_t rank = ttype(w).getRank();
    if (rank == 0)
      throw Unsupported("glu of a 0-d tensor (eager raises)");
    int64_t dim = normDim(intArg(a, "dim", -1), rank);
    int64_t n = ttype(w).getDimSize(dim);
    if (n % 2)
      throw Unsupported("glu over an odd dim (eager raises)");
    auto shape = ttype(w).getShape();
    std::vector<int64_t> start(rank, 0), end(shape.begin(), shape.end()), step(rank, 1);
    end[dim] = n / 2;
    auto sliceOf = [&](int64_t s0) {
      std::vector<int64_t> st = start, en = end;
      st[dim] = s0;
      en[dim] = s0 + n / 2;
      return e.b
          .create<SliceOp>(I.loc(), w, e.b.getDenseI64ArrayAttr(st), e.b.getDenseI64ArrayAttr(en),
                           e.b.getDenseI64ArrayAttr(step))
          .getResult();
    };
    r = mul(sliceOf(0), unaryOp<SigmoidOp>(e, sliceOf(n / 2)));
  } else if (op == "prelu") {
    Value wt = tensorArg(a.get("weight"), op);
    if (dtypeOfValue(wt) != m.type)
      throw Unsupported("prelu weight of another dtype");
    int64_t rank = ttype(w).getRank(), n = ttype(wt).getNumElements();
    if (ttype(wt).getRank() > 1)
      throw Unsupported("prelu weight must be 1-D");
    Value slope = m.in(wt);
    if (n != 1) {
      if (rank < 2 || ttype(w).getDimSize(1) != n)
        throw Unsupported("prelu weight size mismatch (eager raises)");
      std::vector<int64_t> shape(rank - 1, 1);
      shape[0] = n;
      slope = e.reshape(slope, shape);
    } else {
      slope = e.reshape(slope, {});
    }
    r = e.select(e.bin<GtOp>(w, num(0.0)), w, mul(w, slope));
  } else {
    throw Unsupported("op " + op + " is not mapped");
  }
  return T(m.out(r));
}

} // namespace

void registerElementwiseOps(OpTable &t) {
  const std::vector<std::string> un = {"input"};
  for (const char *n :
       {"sin", "cos", "tan", "atan", "arctan", "floor", "ceil", "trunc", "fix", "log1p", "expm1",
        "log2", "frac", "log10", "exp2", "sinh", "cosh", "reciprocal"}) {
    t.both(n, {n, un});
    t.handler(n, mathUnary);
  }
  t.both("round", {"round", {"input", "decimals"}});
  t.handler("round", mathUnary);
  for (const char *n : {"sign", "sgn", "square", "isnan", "isinf", "isfinite", "isposinf",
                        "isneginf", "logical_not", "bitwise_not"}) {
    t.both(n, {n, un});
    t.handler(n, miscUnary);
  }
  for (const char *n :
       {"logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"}) {
    t.both(n, {n, {"input", "other"}});
    t.handler(n, miscUnary);
  }
  // Aliases of core ops.
  for (auto [alias, op] :
       std::initializer_list<std::pair<const char *, const char *>>{{"multiply", "mul"},
                                                                    {"subtract", "sub"},
                                                                    {"negative", "neg"},
                                                                    {"absolute", "abs"},
                                                                    {"greater", "gt"},
                                                                    {"greater_equal", "ge"},
                                                                    {"less", "lt"},
                                                                    {"less_equal", "le"},
                                                                    {"not_equal", "ne"},
                                                                    {"true_divide", "div"},
                                                                    {"clip", "clamp"}}) {
    const OpSpec *base = nullptr;
    if (auto it = t.methods.find(op); it != t.methods.end())
      base = &it->second;
    if (!base)
      continue;
    OpSpec spec = *base;
    t.function("torch", alias, spec);
    t.method(alias, spec);
  }
  t.function("torch", "rsub", {"rsub", {"input", "other", "alpha"}});
  t.both("floor_divide", {"floor_divide", {"input", "other"}});
  t.both("clamp_min", {"clamp_min", {"input", "min"}});
  t.both("clamp_max", {"clamp_max", {"input", "max"}});
  t.both("fmax", {"fmax", {"input", "other"}});
  t.both("fmin", {"fmin", {"input", "other"}});
  t.both("lerp", {"lerp", {"input", "end", "weight"}});
  t.both("addcmul", {"addcmul", {"input", "tensor1", "tensor2", "value"}});
  t.both("addcdiv", {"addcdiv", {"input", "tensor1", "tensor2", "value"}});
  t.both("masked_fill", {"masked_fill", {"input", "mask", "value"}});
  t.both("nan_to_num", {"nan_to_num", {"input", "nan", "posinf", "neginf"}});
  for (const char *n : {"rsub", "floor_divide", "div_mode", "clamp_min", "clamp_max", "fmax",
                        "fmin", "lerp", "addcmul", "addcdiv", "masked_fill", "nan_to_num"})
    t.handler(n, arith);

  // Activations: F.* (with `inplace` where torch has it), torch.* and methods.
  const char *F = "torch.nn.functional";
  t.function(F, "relu6", {"relu6", {"input", "inplace"}});
  t.function(F, "hardtanh", {"hardtanh", {"input", "min_val", "max_val", "inplace"}});
  t.function(F, "hardswish", {"hardswish", {"input", "inplace"}});
  t.function(F, "hardsigmoid", {"hardsigmoid", {"input", "inplace"}});
  t.function(F, "mish", {"mish", {"input", "inplace"}});
  t.function(F, "softplus", {"softplus", {"input", "beta", "threshold"}});
  t.function(F, "logsigmoid", {"logsigmoid", un});
  t.function(F, "softsign", {"softsign", un});
  t.function(F, "tanhshrink", {"tanhshrink", un});
  t.function(F, "elu", {"elu", {"input", "alpha", "inplace"}});
  t.function(F, "celu", {"celu", {"input", "alpha", "inplace"}});
  t.function(F, "selu", {"selu", {"input", "inplace"}});
  t.function(F, "leaky_relu", {"leaky_relu", {"input", "negative_slope", "inplace"}});
  t.function(F, "rrelu", {"rrelu", {"input", "lower", "upper", "training", "inplace"}});
  t.function(F, "hardshrink", {"hardshrink", {"input", "lambd"}});
  t.function(F, "softshrink", {"softshrink", {"input", "lambd"}});
  t.function(F, "threshold", {"threshold", {"input", "threshold", "value", "inplace"}});
  t.function(F, "glu", {"glu", {"input", "dim"}});
  t.function(F, "prelu", {"prelu", {"input", "weight"}});
  t.function("torch", "selu", {"selu", un});
  t.function("torch", "celu", {"celu", {"input", "alpha"}});
  t.function("torch", "prelu", {"prelu", {"input", "weight"}});
  t.function("torch", "hardshrink", {"hardshrink", {"input", "lambd"}});
  t.function("torch", "rrelu", {"rrelu", {"input", "lower", "upper", "training"}});
  t.function("torch", "threshold", {"threshold", {"input", "threshold", "value"}});
  for (const char *n : {"relu6", "hardtanh", "hardswish", "hardsigmoid", "mish", "softplus",
                        "logsigmoid", "softsign", "tanhshrink", "elu", "celu", "selu", "leaky_relu",
                        "rrelu", "hardshrink", "softshrink", "threshold", "glu", "prelu"})
    t.handler(n, activation);
  t.method("hardshrink", {"hardshrink", {"input", "lambd"}});
  t.method("prelu", {"prelu", {"input", "weight"}});
}

} // namespace kiln

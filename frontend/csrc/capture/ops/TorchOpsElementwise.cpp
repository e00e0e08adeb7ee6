//===- TorchOpsElementwise.cpp - elementwise torch ops ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of the elementwise functions beyond the core set
// (CoreElementwise.cpp): math functions with their own kiln op (sin, floor,
// log1p ...), compositions of primitives (reciprocal, sign, lerp, addcmul,
// isnan, logical and bitwise ops ...); rounded division is in
// TorchOpsDivision.cpp. Composites on
// f16/bf16 compute in f32 and round once, like torch's opmath. Integer
// inputs follow torch: promoted to the default float where torch promotes,
// passed through where torch returns a copy (floor of an int), Unsupported
// where eager raises (so eager raises its own error).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include <cmath>
#include <limits>

namespace kiln {

using namespace mlir::kiln;

namespace {

/// The float input of a unary math function (ints promote, as torch does).
Value promotedFloat(Emit &e, const VarP &x, const std::string &op) {
  Value v = tensorArg(x, op);
  return isFloatValue(v) ? v : e.cast(v, defaultFloat());
}

/// sin, cos, log1p ...: one kiln op on the promoted float input.
template <typename OpT> VarP mathUnary(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  return T(e.unary<OpT>(promotedFloat(e, a.get("input"), op)));
}

/// floor, ceil, trunc: eager returns a copy of an integer tensor.
template <typename OpT> VarP rounding(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  if (!isFloatValue(v))
    return freshResult(v);
  return T(Emit(I).unary<OpT>(v));
}

VarP round(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  int64_t decimals = intArg(a, "decimals", 0);
  if (!isFloatValue(v)) {
    if (decimals != 0)
      throw Unsupported(BreakCategory::UnsupportedOp, "round of an integer tensor with decimals");
    return freshResult(v);
  }
  Emit e(I);
  if (decimals == 0)
    return T(e.unary<RoundOp>(v));
  // torch: nearbyint(x * 10^d) / 10^d (d < 0: nearbyint(x / 10^-d) * 10^-d).
  Opmath m(e, v);
  Value w = m.in(v);
  Value s = m.num(std::pow(10.0, std::abs((double)decimals)));
  Value r = decimals > 0 ? e.bin<DivOp>(e.unary<RoundOp>(e.bin<MulOp>(w, s)), s)
                         : e.bin<MulOp>(e.unary<RoundOp>(e.bin<DivOp>(w, s)), s);
  return T(m.out(r));
}

/// A unary function composed of primitives, in opmath precision.
using Composition = Value (*)(Emit &e, Opmath &m, Value w);

template <Composition F> VarP composedUnary(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value v = promotedFloat(e, a.get("input"), op);
  Opmath m(e, v);
  return T(m.out(F(e, m, m.in(v))));
}

Value frac(Emit &e, Opmath &m, Value w) { return e.bin<SubOp>(w, e.unary<TruncOp>(w)); }
Value log10(Emit &e, Opmath &m, Value w) {
  return e.bin<MulOp>(e.unary<LogOp>(w), m.num(1.0 / std::log(10.0)));
}
/// pow(2, x): exp(x * ln 2) was the product's rounding off (358 eps at 972
/// in f64); pow is glibc's vector pow on CPU (codegen/cpu/VectorMath.h).
Value exp2(Emit &e, Opmath &m, Value w) { return e.bin<PowOp>(m.num(2.0), w); }
/// e^|x| / 2 for |x| >= 20, where e^-|x| no longer counts: (h / 2) * h with
/// h = e^(|x|/2), finite up to the type's limit (expm1(x) overflows from
/// 88.7 in f32, where sinh and cosh are finite to 89.4).
Value halfExpOfAbs(Emit &e, Opmath &m, Value w) {
  Value h = e.unary<ExpOp>(e.bin<MulOp>(e.unary<AbsOp>(w), m.num(0.5)));
  return e.bin<MulOp>(e.bin<MulOp>(h, m.num(0.5)), h);
}
Value large(Emit &e, Opmath &m, Value w) { return e.bin<GeOp>(e.unary<AbsOp>(w), m.num(20.0)); }
/// x where it is not large, else 0: the small-|x| form's unselected values
/// stay finite, so their zero gradient is 0, not 0 * inf = NaN (a NaN x
/// still takes the small form and gets a NaN gradient).
Value smallOrZero(Emit &e, Opmath &m, Value w) { return e.select(large(e, m, w), m.num(0.0), w); }
/// (expm1(x) - expm1(-x)) / 2: accurate near 0; ±halfExpOfAbs when large.
Value sinh(Emit &e, Opmath &m, Value w) {
  Value c = smallOrZero(e, m, w);
  Value p = e.unary<Expm1Op>(c), q = e.unary<Expm1Op>(e.unary<NegOp>(c));
  Value small = e.bin<MulOp>(e.bin<SubOp>(p, q), m.num(0.5));
  Value big = halfExpOfAbs(e, m, w);
  Value signedBig = e.select(e.bin<LtOp>(w, m.num(0.0)), e.unary<NegOp>(big), big);
  return e.select(large(e, m, w), signedBig, small);
}
/// 1 + (expm1(x) + expm1(-x)) / 2; halfExpOfAbs when large.
Value cosh(Emit &e, Opmath &m, Value w) {
  Value c = smallOrZero(e, m, w);
  Value p = e.unary<Expm1Op>(c), q = e.unary<Expm1Op>(e.unary<NegOp>(c));
  Value small = e.bin<AddOp>(m.num(1.0), e.bin<MulOp>(e.bin<AddOp>(p, q), m.num(0.5)));
  return e.select(large(e, m, w), halfExpOfAbs(e, m, w), small);
}
Value reciprocal(Emit &e, Opmath &m, Value w) { return e.bin<DivOp>(m.num(1.0), w); }

VarP sign(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  DType d = dtypeOfValue(v);
  if (d == DType::Bool)
    return freshResult(v);
  Emit e(I);
  Value zero = e.num(0, d);
  if (!isFloatingDType(d)) {
    Value pos = e.cast(e.bin<GtOp>(v, zero), d), neg = e.cast(e.bin<LtOp>(v, zero), d);
    return T(e.bin<SubOp>(pos, neg));
  }
  // Eager's float sign has a zero gradient, so its result requires grad
  // when the input does: ±0 gives v - v (+0, gradient 0), NaN gives 0.
  Value rest = e.select(e.bin<EqOp>(v, v), e.bin<SubOp>(v, v), zero);
  return T(e.select(e.bin<GtOp>(v, zero), e.num(1, d),
                    e.select(e.bin<LtOp>(v, zero), e.num(-1, d), rest)));
}

VarP square(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  if (dtypeOfValue(v) == DType::Bool)
    throw Unsupported(BreakCategory::UnsupportedOp, "square of a bool tensor");
  return T(Emit(I).bin<MulOp>(v, v));
}

/// Which float class isnan/isinf/... test for.
enum class FloatClass { NaN, Inf, Finite, PosInf, NegInf };

template <FloatClass C> VarP isClass(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  DType d = dtypeOfValue(v);
  Emit e(I);
  if (!isFloatingDType(d)) // integers are finite
    return T(e.splat(ttype(v).getShape(), DType::Bool, C == FloatClass::Finite ? 1 : 0));
  double inf = std::numeric_limits<double>::infinity();
  switch (C) {
  case FloatClass::NaN:
    return T(e.bin<NeOp>(v, v));
  case FloatClass::PosInf:
    return T(e.bin<EqOp>(v, e.num(inf, d)));
  case FloatClass::NegInf:
    return T(e.bin<EqOp>(v, e.num(-inf, d)));
  case FloatClass::Inf:
    return T(e.bin<EqOp>(e.unary<AbsOp>(v), e.num(inf, d)));
  case FloatClass::Finite:
    break;
  }
  return T(e.bin<LtOp>(e.unary<AbsOp>(v), e.num(inf, d)));
}

/// logical_not; bitwise_not of bools (integers are not supported yet).
template <bool Bitwise> VarP logicalNot(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  if (Bitwise && dtypeOfValue(v) != DType::Bool)
    throw Unsupported(BreakCategory::UnsupportedOp, "bitwise_not of an integer tensor");
  Emit e(I);
  return T(e.bin<EqOp>(e.cast(v, DType::Bool), e.num(0, DType::Bool)));
}

/// How a logical binary op combines two bools (as i1 arithmetic).
enum class Logic { And, Or, Xor };

/// logical_and/or/xor; their bitwise forms on bools (integers are not
/// supported yet).
template <Logic L, bool Bitwise> VarP logical(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  VarP other = a.get("other");
  if (Bitwise && (dtypeOfValue(v) != DType::Bool || !other || !other->isTensor() ||
                  dtypeOfValue(other->value) != DType::Bool))
    throw Unsupported(BreakCategory::UnsupportedOp,
                      op + " of integer tensors is not supported yet");
  Emit e(I);
  Value x = e.cast(v, DType::Bool);
  Value y = other && other->isTensor() ? e.cast(other->value, DType::Bool)
                                       : e.operand(other ? other : constBool(false), DType::Bool);
  switch (L) {
  case Logic::And:
    return T(e.bin<MulOp>(x, y));
  case Logic::Or:
    return T(e.bin<AddOp>(x, y));
  case Logic::Xor:
    break;
  }
  return T(e.bin<NeOp>(x, y));
}

VarP rsub(Interpreter &I, const std::string &op, Args &a) {
  // torch.rsub(x, other, alpha) is torch.sub(other, x, alpha).
  if (a.isNone("alpha"))
    return callOp(I, "sub", {{"input", a.get("other")}, {"other", a.get("input")}});
  return callOp(I, "sub",
                {{"input", a.get("other")}, {"other", a.get("input")}, {"alpha", a.get("alpha")}});
}

/// clamp_min (`Bound` "min") and clamp_max ("max") through clamp.
template <bool Min> VarP clampBound(Interpreter &I, const std::string &op, Args &a) {
  const char *bound = Min ? "min" : "max";
  if (isNanFloatConst(a.get(bound))) // clamp ignores a lone NaN bound, these do not
    return callOp(I, "clamp",
                  {{"input", a.get("input")}, {"min", a.get(bound)}, {"max", a.get(bound)}});
  return callOp(I, "clamp", {{"input", a.get("input")}, {bound, a.get(bound)}});
}

/// fmax/fmin: like maximum/minimum, but NaN only where both are NaN.
template <bool Max> VarP fmaxOrFmin(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input"), other = a.get("other");
  DType d = resultType({x, other});
  Emit e(I);
  Value p = e.operand(x, d), q = e.operand(other, d);
  Value m = e.tieGrad(Max ? e.bin<MaximumOp>(p, q) : e.bin<MinimumOp>(p, q), "all");
  if (!isFloatingDType(d))
    return T(m);
  return T(e.select(e.bin<NeOp>(p, p), q, e.select(e.bin<NeOp>(q, q), p, m)));
}

VarP lerp(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input"), end = a.get("end"), weight = a.get("weight");
  Value s = tensorArg(x, op);
  if (!isFloatValue(s))
    throw Unsupported(BreakCategory::UserError, "lerp of integer tensors (eager raises)");
  DType d = resultType({x, end, weight});
  Emit e(I);
  Opmath m(e, e.cast(s, d));
  // A number weight goes straight to the compute dtype (as torch's kernel
  // takes it: 0.3 rounded to bf16 first moved results by an ulp or more).
  Value p = m.in(e.operand(x, d)), q = m.in(e.operand(end, d));
  Value w =
      weight && !weight->isTensor() ? e.operand(weight, m.compute()) : m.in(e.operand(weight, d));
  // torch: |w| < 0.5 ? p + w (q - p) : q - (q - p)(1 - w)
  Value diff = e.bin<SubOp>(q, p);
  Value lo = e.bin<AddOp>(p, e.bin<MulOp>(w, diff));
  Value hi = e.bin<SubOp>(q, e.bin<MulOp>(diff, e.bin<SubOp>(m.num(1.0), w)));
  Value small = e.bin<LtOp>(e.unary<AbsOp>(w), m.num(0.5));
  return T(m.out(e.select(small, lo, hi)));
}

/// addcmul/addcdiv: input + value * (tensor1 · tensor2).
template <bool Div> VarP addcOp(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input"), t1 = a.get("tensor1"), t2 = a.get("tensor2");
  VarP value = a.isNone("value") ? constInt(1) : a.get("value");
  DType d = resultType({x, t1, t2});
  if (Div && !isFloatingDType(d))
    throw Unsupported(BreakCategory::UserError, "addcdiv of integer tensors (eager raises)");
  Emit e(I);
  // As torch's CPU kernel: input + (value * tensor1) ·/ tensor2, f16/bf16 in
  // f32 with one rounding at the end (each op rounded to bf16 was up to 44%
  // off near cancellation).
  Value p = e.operand(x, d);
  Opmath m(e, p);
  Value scaled = e.bin<MulOp>(e.operand(value, m.compute()), m.in(e.operand(t1, d)));
  Value q2 = m.in(e.operand(t2, d));
  Value term = Div ? e.bin<DivOp>(scaled, q2) : e.bin<MulOp>(scaled, q2);
  return T(m.out(e.bin<AddOp>(m.in(p), term)));
}

VarP maskedFill(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  Value mask = tensorArg(a.get("mask"), op);
  if (dtypeOfValue(mask) != DType::Bool)
    throw Unsupported(BreakCategory::UserError, "masked_fill expects a bool mask (eager raises)");
  VarP value = a.get("value");
  DType d = dtypeOfValue(v);
  Emit e(I);
  // A Python number is converted to the input's dtype (2.7 → 2 for ints);
  // one computed in the graph (a Scalar, a symbolic size) too.
  VarP number = symIntAsScalar(I, value);
  bool exactInt = value->isConst() && PyLong_CheckExact(value->obj.get()) &&
                  dtypeCategory(d) == DTypeCategory::Integer;
  Value fill = value->isTensor()                   ? e.cast(value->value, d)
               : number->kind == Var::Kind::Scalar ? e.operand(number, d)
               : exactInt ? e.scalar(value->obj.get(), d) // all 64 bits (int64 max: a sentinel)
                          : e.num(asDouble(value, "value"), d);
  if (value->isTensor() && ttype(value->value).getRank() != 0)
    throw Unsupported(BreakCategory::UserError,
                      "masked_fill with a non-0-d value tensor (eager raises)");
  Value r = e.select(mask, fill, v);
  if (ttype(r).getShape() != ttype(v).getShape())
    throw Unsupported(BreakCategory::UserError,
                      "masked_fill mask does not broadcast to the input (eager raises)");
  return T(r);
}

VarP nanToNum(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  DType d = dtypeOfValue(v);
  if (!isFloatingDType(d))
    return freshResult(v);
  double big = d == DType::F64   ? std::numeric_limits<double>::max()
               : d == DType::F32 ? std::numeric_limits<float>::max()
               : d == DType::F16 ? 65504.0
                                 : 3.3895313892515355e38;
  double inf = std::numeric_limits<double>::infinity();
  Emit e(I);
  Value r = e.select(e.bin<NeOp>(v, v), e.num(floatArg(a, "nan", 0.0), d), v);
  r = e.select(e.bin<EqOp>(v, e.num(inf, d)), e.num(floatArg(a, "posinf", big), d), r);
  r = e.select(e.bin<EqOp>(v, e.num(-inf, d)), e.num(floatArg(a, "neginf", -big), d), r);
  return T(r);
}

void registerMath(OpRegistry &r) {
  const Params input{"input"};
  r.op("sin", mathUnary<SinOp>, input).torchAndMethod();
  r.op("cos", mathUnary<CosOp>, input).torchAndMethod();
  r.op("tan", mathUnary<TanOp>, input).torchAndMethod();
  r.op("atan", mathUnary<AtanOp>, input).torchAndMethod().torchAndMethod("arctan");
  r.op("log1p", mathUnary<Log1pOp>, input).torchAndMethod();
  r.op("expm1", mathUnary<Expm1Op>, input).torchAndMethod();
  r.op("log2", mathUnary<Log2Op>, input).torchAndMethod();
  r.op("floor", rounding<FloorOp>, input).torchAndMethod();
  r.op("ceil", rounding<CeilOp>, input).torchAndMethod();
  r.op("trunc", rounding<TruncOp>, input).torchAndMethod().torchAndMethod("fix");
  r.op("round", round, Params{"input", "decimals"}).torchAndMethod();
  r.op("frac", composedUnary<frac>, input).torchAndMethod();
  r.op("log10", composedUnary<log10>, input).torchAndMethod();
  r.op("exp2", composedUnary<exp2>, input).torchAndMethod();
  r.op("sinh", composedUnary<sinh>, input).torchAndMethod();
  r.op("cosh", composedUnary<cosh>, input).torchAndMethod();
  r.op("reciprocal", composedUnary<reciprocal>, input).torchAndMethod();
  r.op("sign", sign, input).torchAndMethod().torchAndMethod("sgn");
  r.op("square", square, input).torchAndMethod();
  r.op("isnan", isClass<FloatClass::NaN>, input).torchAndMethod();
  r.op("isinf", isClass<FloatClass::Inf>, input).torchAndMethod();
  r.op("isfinite", isClass<FloatClass::Finite>, input).torchAndMethod();
  r.op("isposinf", isClass<FloatClass::PosInf>, input).torchAndMethod();
  r.op("isneginf", isClass<FloatClass::NegInf>, input).torchAndMethod();
}

void registerLogical(OpRegistry &r) {
  const Params input{"input"}, withOther{"input", "other"};
  const VmapRule batched = VmapRule::Elementwise;
  r.op("logical_not", logicalNot<false>, input, NoTraits, batched).torchAndMethod();
  r.op("bitwise_not", logicalNot<true>, input, NoTraits, batched).torchAndMethod();
  r.op("logical_and", logical<Logic::And, false>, withOther, NoTraits, batched).torchAndMethod();
  r.op("logical_or", logical<Logic::Or, false>, withOther, NoTraits, batched).torchAndMethod();
  r.op("logical_xor", logical<Logic::Xor, false>, withOther, NoTraits, batched).torchAndMethod();
  r.op("bitwise_and", logical<Logic::And, true>, withOther, NoTraits, batched)
      .torchAndMethod()
      .binaryOperator("&");
  r.op("bitwise_or", logical<Logic::Or, true>, withOther, NoTraits, batched)
      .torchAndMethod()
      .binaryOperator("|");
  r.op("bitwise_xor", logical<Logic::Xor, true>, withOther, NoTraits, batched)
      .torchAndMethod()
      .binaryOperator("^");
}

void registerArithmetic(OpRegistry &r) {
  const Params withOther{"input", "other"};
  r.op("rsub", rsub, Params{"input", "other", "alpha"}).torch();
  r.op("clamp_min", clampBound<true>, Params{"input", "min"}).torchAndMethod();
  r.op("clamp_max", clampBound<false>, Params{"input", "max"}).torchAndMethod();
  r.op("fmax", fmaxOrFmin<true>, withOther).torchAndMethod();
  r.op("fmin", fmaxOrFmin<false>, withOther).torchAndMethod();
  r.op("lerp", lerp, Params{"input", "end", "weight"}).torchAndMethod();
  const Params addc{"input", "tensor1", "tensor2", "value"};
  r.op("addcmul", addcOp<false>, addc).torchAndMethod();
  r.op("addcdiv", addcOp<true>, addc).torchAndMethod();
  r.op("masked_fill", maskedFill, Params{"input", "mask", "value"}).torchAndMethod();
  r.op("nan_to_num", nanToNum, Params{"input", "nan", "posinf", "neginf"}).torchAndMethod();
}

} // namespace

void registerElementwiseOps(OpRegistry &r) {
  registerMath(r);
  registerLogical(r);
  registerArithmetic(r);
  registerActivationOps(r); // TorchOpsActivation.cpp
  registerDivisionOps(r);   // TorchOpsDivision.cpp
}

} // namespace kiln

//===- CoreElementwise.cpp - core elementwise ops, casts and operators ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of the core elementwise set: arithmetic and
// comparisons (with their Python operators and torch aliases such as
// torch.multiply), where and clamp, the unary math functions that have
// their own kiln op, relu/gelu/silu, dtype casts (x.float(), x.to(dtype)),
// contiguous/detach, clone and eval-mode dropout. Operands follow torch's
// type promotion (resultType); true division and float math promote
// integers to the default float dtype.
//===----------------------------------------------------------------------===//
#include "capture/ops/StopGradient.h"
#include "capture/ops/TorchOpsImpl.h"
#include "capture/values/EagerLayouts.h"
#include "GilOnce.h"

namespace kiln {

using namespace mlir::kiln;

namespace {

/// Eager raises on subtraction where either operand is a bool tensor or a
/// Python bool.
void refuseBoolSubtraction(const VarP &x, const VarP &other) {
  auto isBool = [](const VarP &v) {
    if (v->isTensor())
      return dtypeOf(ttype(v->value).getElementType()) == DType::Bool;
    if (v->kind == Var::Kind::Scalar)
      return dtypeOfScalar(v) == DType::Bool;
    return v->isConst() && PyBool_Check(v->obj.get());
  };
  if (isBool(x) || isBool(other))
    throw Unsupported(BreakCategory::UserError, "subtraction with a bool operand (eager raises)",
                      hint::kRaisesInEager);
}

/// add/sub: `input ± alpha * other`.
template <typename OpT> VarP addOrSub(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  Emit e(I);
  VarP other = a.get("other");
  if (!other) // eager raises TypeError
    throw Unsupported(BreakCategory::UserError, op + ": 'other' is missing (eager raises)");
  if (!x->isTensor() && !other->isTensor())
    throw Unsupported(op + " on scalars");
  DType d = resultType({x, other});
  if (std::is_same_v<OpT, SubOp>)
    refuseBoolSubtraction(x, other);
  if (a.isNone("alpha"))
    return T(e.binary<OpT>(x, other));
  if (d != DType::F16 && d != DType::BF16)
    return T(e.binary<OpT>(x, T(e.binary<MulOp>(other, a.get("alpha"), d))));
  // f16/bf16 `x ± alpha * other` as eager computes it: operands and alpha
  // rounded to the dtype, the arithmetic in f32 (its opmath type), the
  // result rounded once.
  auto f32 = [&](const VarP &v) { return e.cast(e.operand(v, d), DType::F32); };
  Value scaled = e.bin<MulOp>(f32(other), f32(a.get("alpha")));
  return T(e.cast(e.bin<OpT>(f32(x), scaled), d));
}

/// A broadcasting binary op on promoted operands (mul, eq, maximum ...).
template <typename OpT> VarP binary(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  return T(Emit(I).binary<OpT>(x, a.get("other")));
}

/// torch.maximum / torch.minimum: a tie splits the gradient in halves.
template <typename OpT> VarP extremum(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  Emit e(I);
  return T(e.tieGrad(e.binary<OpT>(x, a.get("other")), "half"));
}

/// div/pow: integer operands promote to the default float dtype.
template <typename OpT>
VarP floatBinary(Interpreter &I, const std::string &op, VarP x, VarP other, bool intAllowed) {
  DType d = resultType({x, other});
  if (!isFloatingDType(d)) {
    if (!intAllowed)
      throw Unsupported("integer " + op);
    d = defaultFloat();
  }
  return T(Emit(I).binary<OpT>(x, other, d));
}

VarP div(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  if (!a.isNone("rounding_mode")) { // TorchOpsElementwise.cpp
    const OpDef *withMode = opRegistry().find("div_mode");
    return withMode->handler(I, withMode->name, a);
  }
  return floatBinary<DivOp>(I, op, x, a.get("other"), /*intAllowed=*/true);
}

VarP pow(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  return floatBinary<PowOp>(I, op, x, a.get("exponent"), /*intAllowed=*/false);
}

VarP where(Interpreter &I, const std::string &op, Args &a) {
  inputArg(a, op);
  Emit e(I);
  VarP t = a.get("input"), f = a.get("other");
  Value c = e.cast(tensorArg(a.get("condition"), op), DType::Bool);
  DType d = resultType({t, f});
  Value vt = e.operand(t, d), vf = e.operand(f, d);
  llvm::SmallVector<Type> types;
  if (mlir::failed(SelectOp::inferReturnTypes(
          e.b.getContext(), I.loc(), mlir::ValueRange{c, vt, vf}, mlir::DictionaryAttr(),
          mlir::OpaqueProperties(nullptr), mlir::RegionRange(), types)))
    throw Unsupported("invalid operands for where");
  return T(e.b.create<SelectOp>(I.loc(), types.front(), mlir::ValueRange{c, vt, vf}));
}

VarP clamp(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  if (a.isNone("min") && a.isNone("max"))
    throw Unsupported("clamp without min and max (eager raises)");
  tensorArg(x, op);
  Emit e(I);
  VarP cur = x;
  // Eager's clamp/clip of a float tensor with one Python-number bound
  // ignores a NaN bound (its one-bound kernel keeps `x`), with a zero
  // gradient (its backward's `x <= bound` mask is false): `x` behind a
  // stop-gradient, and x - x (NaN, gradient 0) where x is NaN so that the
  // result requires grad as eager's does. Two bounds, tensor bounds and
  // clamp_min/clamp_max (clampBound) propagate the NaN.
  Value v = x->value;
  if (a.isNone("min") != a.isNone("max") && isFloatingDType(dtypeOfValue(v)) &&
      isNanFloatConst(a.get(a.isNone("min") ? "max" : "min")))
    return T(e.select(e.bin<EqOp>(v, v), stopGradient(I, v), e.bin<SubOp>(v, v)));
  if (!a.isNone("min"))
    cur = T(e.tieGrad(e.binary<MaximumOp>(cur, a.get("min")), "all"));
  if (!a.isNone("max"))
    cur = T(e.tieGrad(e.binary<MinimumOp>(cur, a.get("max")), "all"));
  return cur;
}

/// One kiln op on the tensor as is (relu, neg, abs).
template <typename OpT> VarP unary(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(inputArg(a, op), op);
  return T(Emit(I).unary<OpT>(v));
}

/// One kiln op on the float input (integers promote to the default float).
template <typename OpT> VarP floatUnary(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  tensorArg(x, op);
  Emit e(I);
  return T(e.unary<OpT>(e.floatUnaryInput(x)));
}

/// A float tensor input; integers are Unsupported (eager raises).
VarP floatOnlyInput(const Args &a, const std::string &op) {
  VarP x = inputArg(a, op);
  if (!isFloatingDType(dtypeOf(ttype(tensorArg(x, op)).getElementType())))
    throw Unsupported(op + " of an integer tensor (eager raises)");
  return x;
}

VarP gelu(Interpreter &I, const std::string &op, Args &a) {
  inputArg(a, op);
  std::string approx = "none";
  if (!a.isNone("approximate")) {
    PyObject *s = constObj(a.get("approximate"), "approximate");
    approx = PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "?";
  }
  if (approx != "none" && approx != "tanh")
    throw Unsupported("gelu approximate=" + approx);
  VarP x = floatOnlyInput(a, op);
  Emit e(I);
  Value v = e.floatUnaryInput(x);
  return T(e.b.create<GeluOp>(I.loc(), v, e.b.getStringAttr(approx)));
}

VarP silu(Interpreter &I, const std::string &op, Args &a) {
  VarP x = floatOnlyInput(a, op);
  Emit e(I);
  return T(e.unary<SiluOp>(e.floatUnaryInput(x)));
}

/// x.float(), x.long() ...: a cast to `D`.
template <DType D> VarP castTo(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(inputArg(a, op), op);
  return T(Emit(I).cast(v, D));
}

VarP to(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  VarP dt = a.get("dtype");
  auto d = dt ? dtypeFromObject(constObj(dt, "dtype")) : std::nullopt;
  if (!d)
    throw Unsupported(BreakCategory::UnsupportedOp, "Tensor.to is supported with a dtype only");
  return T(Emit(I).cast(tensorArg(x, op), *d));
}

VarP identity(Interpreter &I, const std::string &op, Args &a) {
  return T(tensorArg(inputArg(a, op), op));
}

/// `x.contiguous()`: kiln's values are row-major; another memory format
/// (channels_last) is a copy in that layout in eager: a break (returning
/// `x` itself let writes through the result reach the input). The value is
/// an identity cast marked kContiguousAttr (folded by canonicalization):
/// eager's strides are row-major from here (values/EagerLayouts.cpp).
VarP contiguous(Interpreter &I, const std::string &op, Args &a) {
  if (!a.isNone("memory_format")) {
    static PyOnce formatOnce;
    PyObject *rowMajor = formatOnce.imported("torch", "contiguous_format");
    if (constObj(a.get("memory_format"), "memory_format") != rowMajor)
      throw Unsupported(BreakCategory::UnsupportedOp,
                        "contiguous with a memory_format other than torch.contiguous_format");
  }
  Value x = tensorArg(inputArg(a, op), op);
  auto cast = I.builder().create<CastOp>(I.loc(), x.getType(), x);
  cast->setAttr(kContiguousAttr, I.builder().getUnitAttr());
  return T(cast.getResult());
}

VarP clone(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  if (!a.isNone("memory_format"))
    throw Unsupported(BreakCategory::UnsupportedOp, "clone with a memory_format");
  return freshResult(tensorArg(x, op));
}

VarP dropout(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  bool training =
      a.isNone("training") ? true : PyObject_IsTrue(constObj(a.get("training"), "training")) == 1;
  double p = a.isNone("p") ? 0.5 : asDouble(a.get("p"), "p");
  if (!(p >= 0 && p <= 1)) // F.dropout's check, in eval mode too
    throw Unsupported(BreakCategory::UserError,
                      "dropout probability has to be between 0 and 1, but got " + std::to_string(p),
                      hint::kRaisesInEager);
  if (training && p > 0)
    return freshResult(trainingDropout(I, tensorArg(x, op), p));
  tensorArg(x, op); // a tensor
  return x;         // eval mode: eager returns the input object itself
}

void registerArithmetic(OpRegistry &r) {
  const VmapRule batched = VmapRule::Elementwise;
  const Params withAlpha{"input", "other", "alpha"}, withOther{"input", "other"};
  r.op("add", addOrSub<AddOp>, withAlpha, NoTraits, batched)
      .torchAndMethod()
      .binaryOperator("+", "add");
  r.op("sub", addOrSub<SubOp>, withAlpha, NoTraits, batched)
      .torchAndMethod()
      .torchAndMethod("subtract")
      .binaryOperator("-", "sub");
  r.op("mul", binary<MulOp>, withOther, NoTraits, batched)
      .torchAndMethod()
      .torchAndMethod("multiply")
      .binaryOperator("*", "mul");
  r.op("div", div, Params{"input", "other", "rounding_mode"}, NoTraits, batched)
      .torchAndMethod()
      .torchAndMethod("true_divide")
      .binaryOperator("/", "truediv");
  r.op("pow", pow, Params{"input", "exponent"}, NoTraits, batched)
      .torchAndMethod()
      .binaryOperator("**", "pow");
  r.op("maximum", extremum<MaximumOp>, withOther, NoTraits, batched).torchAndMethod();
  r.op("minimum", extremum<MinimumOp>, withOther, NoTraits, batched).torchAndMethod();
  r.op("eq", binary<EqOp>, withOther, NoTraits, batched).torchAndMethod().binaryOperator("==");
  r.op("ne", binary<NeOp>, withOther, NoTraits, batched)
      .torchAndMethod()
      .torchAndMethod("not_equal")
      .binaryOperator("!=");
  r.op("lt", binary<LtOp>, withOther, NoTraits, batched)
      .torchAndMethod()
      .torchAndMethod("less")
      .binaryOperator("<");
  r.op("le", binary<LeOp>, withOther, NoTraits, batched)
      .torchAndMethod()
      .torchAndMethod("less_equal")
      .binaryOperator("<=");
  r.op("gt", binary<GtOp>, withOther, NoTraits, batched)
      .torchAndMethod()
      .torchAndMethod("greater")
      .binaryOperator(">");
  r.op("ge", binary<GeOp>, withOther, NoTraits, batched)
      .torchAndMethod()
      .torchAndMethod("greater_equal")
      .binaryOperator(">=");
  r.op("where", where, Params{"condition", "input", "other"}, NoTraits, batched)
      .torch()
      .method(Params{"input", "condition", "other"});
  r.op("clamp", clamp, Params{"input", "min", "max"}).torchAndMethod().torchAndMethod("clip");
}

void registerUnary(OpRegistry &r) {
  const Params input{"input"}, withInplace{"input", "inplace"};
  const VmapRule batched = VmapRule::Elementwise;
  r.op("relu", unary<ReluOp>, input).torchAndMethod().functional(withInplace);
  r.op("neg", unary<NegOp>, input, NoTraits, batched)
      .torchAndMethod()
      .torchAndMethod("negative")
      .unaryOperator("neg");
  r.op("abs", unary<AbsOp>, input, NoTraits, batched).torchAndMethod().torchAndMethod("absolute");
  r.op("sigmoid", floatUnary<SigmoidOp>, input).torchAndMethod().functional(withInplace);
  r.op("tanh", floatUnary<TanhOp>, input).torchAndMethod().functional(withInplace);
  r.op("exp", floatUnary<ExpOp>, input).torchAndMethod();
  r.op("log", floatUnary<LogOp>, input).torchAndMethod();
  r.op("sqrt", floatUnary<SqrtOp>, input).torchAndMethod();
  r.op("rsqrt", floatUnary<RsqrtOp>, input).torchAndMethod();
  r.op("erf", floatUnary<ErfOp>, input).torchAndMethod();
  r.op("silu", silu, withInplace).functional();
  r.op("gelu", gelu, Params{"input", "approximate"}).functional();
}

void registerCasts(OpRegistry &r) {
  const Params input{"input"};
  const VmapRule cast = VmapRule::Cast;
  r.op("float", castTo<DType::F32>, input, View | SelfIfNoOp, cast).method();
  r.op("double", castTo<DType::F64>, input, View | SelfIfNoOp, cast).method();
  r.op("half", castTo<DType::F16>, input, View | SelfIfNoOp, cast).method();
  r.op("bfloat16", castTo<DType::BF16>, input, View | SelfIfNoOp, cast).method();
  r.op("int", castTo<DType::I32>, input, View | SelfIfNoOp, cast).method();
  r.op("long", castTo<DType::I64>, input, View | SelfIfNoOp, cast).method();
  r.op("bool", castTo<DType::Bool>, input, View | SelfIfNoOp, cast).method();
  r.op("to", to, Params{"input", "dtype"}, View | SelfIfNoOp, cast).method();
  // `contiguous()` returns its input itself where that is contiguous (not
  // known here: Var::selfIfContiguous); `detach()` a new tensor object.
  r.op("contiguous", contiguous, Params{"input", "memory_format"}, View | ReplaysAsContiguous)
      .method();
  r.op("detach", identity, input, View | Detaches).method();
  r.op("clone", clone, Params{"input", "memory_format"}, Copy).torchAndMethod();
  // Not a View op: in training mode the result is a new tensor (and
  // inplace=True writes it into the input); eval mode returns the input.
  r.op("dropout", dropout, Params{"input", "p", "training", "inplace"}).functional();
}

} // namespace

void registerCoreElementwiseOps(OpRegistry &r) {
  registerArithmetic(r);
  registerUnary(r);
  registerCasts(r);
}

} // namespace kiln

//===- TorchOpsDivision.cpp - floor division, remainder, fmod --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Python's `//` and `%` on tensors, torch.floor_divide, torch.remainder,
// torch.fmod and torch.div(rounding_mode=...), exact like eager: float floor
// division is kiln.floor_div (eager's fmod-based rounding, 1.0 // 0.1 == 9),
// remainder is kiln.fmod plus the divisor where the signs differ (the sign
// of the divisor, as Python). Where kiln cannot match eager the handler
// refuses and the call runs through torch (per-op fallback) or breaks:
// an integer divisor that is not a nonzero Python int (eager raises
// ZeroDivisionError on a zero, which kiln cannot see in a tensor), bool
// operands, and f16/bf16 (eager rounds between the steps of its algorithm).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

namespace kiln {

using namespace mlir::kiln;

namespace {

/// The dtype `op` computes in, or Unsupported where kiln would not be
/// exact or eager raises.
DType divisionType(const VarP &x, const VarP &other, const std::string &op) {
  if (!x || !other)
    throw Unsupported(BreakCategory::UserError, op + ": an operand is missing (eager raises)");
  DType d = resultType({x, other});
  if (d == DType::Bool)
    throw Unsupported(BreakCategory::UnsupportedOp, op + " of bool tensors");
  if (isNarrow(d))
    throw Unsupported(BreakCategory::UnsupportedOp,
                      op + " of f16/bf16 tensors (eager rounds between the steps)");
  if (isFloatingDType(d))
    return d;
  // Integers: eager raises on a zero divisor; only a constant is known.
  bool nonzeroInt = other->isConst() && PyLong_Check(constObj(other, op.c_str())) &&
                    PyObject_IsTrue(constObj(other, op.c_str())) == 1;
  if (!nonzeroInt)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "integer " + op + " by a tensor or by zero (eager raises on a zero divisor)");
  return d;
}

/// Whether remainder `r` is nonzero and differs in sign from divisor `q`.
Value signsDiffer(Emit &e, Value r, Value q, DType d) {
  Value zero = e.num(0, d);
  Value differ = e.bin<NeOp>(e.bin<LtOp>(r, zero), e.bin<LtOp>(q, zero));
  return e.bin<MulOp>(e.bin<NeOp>(r, zero), differ); // i1 mul: and
}

VarP floorDivide(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input"), other = a.get("other");
  DType d = divisionType(x, other, op);
  return T(Emit(I).binary<FloorDivOp>(x, other, d));
}

VarP fmod(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input"), other = a.get("other");
  DType d = divisionType(x, other, op);
  return T(Emit(I).binary<FmodOp>(x, other, d));
}

/// Python's %: fmod, plus the divisor where remainder and divisor differ in
/// sign (as ATen's remainder kernels).
VarP remainder(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input"), other = a.get("other");
  DType d = divisionType(x, other, op);
  Emit e(I);
  Value p = e.operand(x, d), q = e.operand(other, d);
  Value r = e.bin<FmodOp>(p, q);
  return T(e.select(signsDiffer(e, r, q, d), e.bin<AddOp>(r, q), r));
}

/// div(rounding_mode="trunc"): trunc(a / b) on floats (the division is
/// exact: a rounded quotient keeps IEEE division, Elementwise.cpp); on
/// integers the floor quotient plus one where fmod and divisor differ.
VarP truncDivide(Interpreter &I, const std::string &op, VarP x, VarP other) {
  DType d = divisionType(x, other, op);
  Emit e(I);
  Value p = e.operand(x, d), q = e.operand(other, d);
  if (isFloatingDType(d))
    return T(e.unary<TruncOp>(e.bin<DivOp>(p, q)));
  Value floor = e.bin<FloorDivOp>(p, q);
  Value up = e.cast(signsDiffer(e, e.bin<FmodOp>(p, q), q, d), d);
  return T(e.bin<AddOp>(floor, up));
}

VarP divWithMode(Interpreter &I, const std::string &op, Args &a) {
  std::string mode = strArg(a, "rounding_mode", "");
  if (mode == "floor")
    return floorDivide(I, "div(rounding_mode='floor')", a);
  if (mode == "trunc")
    return truncDivide(I, "div(rounding_mode='trunc')", a.get("input"), a.get("other"));
  throw Unsupported(BreakCategory::UserError, "div rounding_mode '" + mode + "' (eager raises)");
}

} // namespace

void registerDivisionOps(OpRegistry &r) {
  const Params withOther{"input", "other"};
  const VmapRule batched = VmapRule::Elementwise;
  r.op("floor_divide", floorDivide, withOther, NoTraits, batched)
      .torchAndMethod()
      .binaryOperator("//", "floordiv");
  r.op("remainder", remainder, withOther, NoTraits, batched)
      .torchAndMethod()
      .binaryOperator("%", "mod");
  r.op("fmod", fmod, withOther, NoTraits, batched).torchAndMethod();
  r.op("div_mode", divWithMode, Params{"input", "other", "rounding_mode"}); // div(rounding_mode=)
}

} // namespace kiln

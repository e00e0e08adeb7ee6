//===- Scalars.cpp - Python numbers read from tensors inside the graph -------===//
// SPDX-License-Identifier: Apache-2.0
//
// `t.item()`, `t.tolist()`, `int(t)`, `float(t)`, `bool(t)` as Scalar Vars
// (Value.h; Dynamo's capture_scalar_outputs): a 0-d tensor of the graph
// holding the number exactly (f64 for a Python float — every kiln float
// dtype converts exactly —, i64 for an int, i1 for a bool) and its Python
// type. Python arithmetic and comparisons between Scalars and numbers are
// computed on those tensors with Python's result types; a Scalar operand of
// a tensor op promotes like a Python number (resultType, Emit::operand). A
// Scalar leaves the graph as the Python number (OutputSlot::Scalar: the
// result's `.item()`). Where the result could differ from Python's (a
// divisor that may be 0, `//`, `%`, `**`, int() of a float, which raises on
// nan/inf) the capture breaks, and a branch on a Scalar is the usual
// data-dependent break (its value is passed to the eager code as a number).
// Known limit: int arithmetic is 64-bit (Python's ints do not overflow).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"
#include "capture/ops/StopGradient.h"

namespace kiln {

using namespace mlir::kiln;

namespace {

PyObject *const kFloat = reinterpret_cast<PyObject *>(&PyFloat_Type);
PyObject *const kInt = reinterpret_cast<PyObject *>(&PyLong_Type);
PyObject *const kBool = reinterpret_cast<PyObject *>(&PyBool_Type);

/// The dtype holding a Python number of `type` (float, int or bool).
DType dtypeForType(PyObject *type) {
  return type == kFloat ? DType::F64 : type == kBool ? DType::Bool : DType::I64;
}

/// The Python type `.item()` returns for a tensor of dtype `d`.
PyObject *typeForDType(DType d) {
  return isFloatingDType(d) ? kFloat : d == DType::Bool ? kBool : kInt;
}

/// The Python type of `v` when it is a Scalar or a Python bool/int/float
/// constant (an int that does not fit 64 bits breaks); null otherwise.
PyObject *numberType(const VarP &v) {
  if (v->kind == Var::Kind::Scalar)
    return v->obj.get();
  if (!v->isConst())
    return nullptr;
  PyObject *o = v->obj.get();
  if (PyBool_Check(o))
    return kBool;
  if (PyFloat_CheckExact(o))
    return kFloat;
  if (!PyLong_CheckExact(o))
    return nullptr;
  int overflow = 0;
  PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow)
    throw Unsupported(
        BreakCategory::UnsupportedOp,
        "arithmetic of a Python number read from a tensor with an int beyond 64 bits");
  return kInt;
}

/// `v` (a Scalar or a number constant) as a 0-d tensor of dtype `d`.
Value numberValue(Emit &e, const VarP &v, DType d) {
  if (v->kind == Var::Kind::Scalar)
    return e.cast(v->scalar, d);
  return e.scalar(v->obj.get(), d);
}

/// `v != 0` as a 0-d bool tensor (Python's truth value of a number).
Value nonZero(Emit &e, Value v) {
  DType d = dtypeOfValue(v);
  if (d == DType::Bool)
    return v;
  return e.bin<NeOp>(v, e.num(0, d));
}

/// The one element of tensor `v` as a 0-d tensor; eager raises for any
/// other element count.
Value oneElement(Emit &e, Value v, const char *what) {
  auto t = ttype(v);
  if (!t.hasStaticShape())
    throw Unsupported(BreakCategory::DynamicShape,
                      std::string(what) + " of a tensor of symbolic shape", hint::kSpecializeSizes);
  if (t.getNumElements() != 1)
    throw Unsupported(BreakCategory::UserError,
                      std::string(what) + " of a tensor with " +
                          std::to_string(t.getNumElements()) + " elements (eager raises)",
                      hint::kRaisesInEager);
  return e.reshape(v, {});
}

/// int/float/bool of 0-d value `v` (dtype `from`) as a Scalar of `type`.
VarP convert(Emit &e, Value v, PyObject *type, const char *what) {
  DType from = dtypeOfValue(v);
  if (type == kInt && isFloatingDType(from))
    throw Unsupported(BreakCategory::DataDependent,
                      std::string("int() of a float ") + what +
                          " (eager raises on nan/inf and is exact beyond 64 bits)",
                      "convert with .long() / torch.trunc inside the graph instead");
  if (type == kBool)
    return makeScalar(nonZero(e, v), kBool);
  return makeScalar(e.cast(v, dtypeForType(type)), type);
}

/// Largest element count `.tolist()` unrolls into Scalars.
constexpr int64_t kMaxListElements = 256;

/// The nested list of `v`'s elements from index prefix `at` (dims before
/// at.size() fixed), each a Scalar of `type`.
VarP nestedList(Emit &e, Value v, std::vector<int64_t> &at, PyObject *type) {
  auto t = ttype(v);
  if ((int64_t)at.size() == t.getRank()) {
    std::vector<int64_t> end, step(at.size(), 1);
    for (int64_t i : at)
      end.push_back(i + 1);
    Value one = e.b.create<SliceOp>(e.I.loc(), v, e.b.getDenseI64ArrayAttr(at),
                                    e.b.getDenseI64ArrayAttr(end), e.b.getDenseI64ArrayAttr(step));
    return makeScalar(e.reshape(one, {}), type);
  }
  std::vector<VarP> items;
  for (int64_t i = 0; i < t.getDimSize(at.size()); ++i) {
    at.push_back(i);
    items.push_back(nestedList(e, v, at, type));
    at.pop_back();
  }
  return makeSeq(Var::Kind::List, items);
}

bool isComparison(const std::string &op) {
  return op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=";
}

/// Comparison `op` of two 0-d tensors of one dtype.
Value compare(Emit &e, const std::string &op, Value x, Value y) {
  if (op == "<")
    return e.bin<LtOp>(x, y);
  if (op == "<=")
    return e.bin<LeOp>(x, y);
  if (op == ">")
    return e.bin<GtOp>(x, y);
  if (op == ">=")
    return e.bin<GeOp>(x, y);
  if (op == "==")
    return e.bin<EqOp>(x, y);
  return e.bin<NeOp>(x, y);
}

} // namespace

DType dtypeOfScalar(const VarP &v) { return dtypeForType(v->obj.get()); }

void Interpreter::noteScalars(const char *what) {
  if (out_.scalarsAsBreaks)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      std::string(what) + " as a graph value: a later use of it broke where the "
                                          "capture cannot resume, so the read itself breaks");
  out_.madeScalars = true;
}

VarP Interpreter::scalarOfTensor(const VarP &t, PyObject *type) {
  const char *what = type ? "a Python number" : "Tensor.item()";
  noteScalars(what);
  if (t->vmapLevels > 0)
    throw Unsupported(BreakCategory::UnsupportedOp, std::string(what) + " inside torch.vmap");
  Emit e(*this);
  // A Python number has no autograd history (StopGradient.h).
  Value v = oneElement(e, stopGradient(*this, t->value), what);
  if (!type)
    type = typeForDType(dtypeOfValue(v));
  return convert(e, v, type, "tensor");
}

VarP Interpreter::scalarMethod(const VarP &self, const std::string &name,
                               const std::vector<VarP> &args,
                               const std::map<std::string, VarP> &kwargs) {
  if (name != "item" && name != "tolist")
    return nullptr;
  if (!args.empty() || !kwargs.empty())
    throw Unsupported(BreakCategory::UserError, "Tensor." + name + " takes no arguments",
                      hint::kRaisesInEager);
  if (!self->isTensor())
    return nullptr;
  if (name == "item")
    return scalarOfTensor(self, nullptr);
  Value v = self->value;
  auto t = ttype(v);
  if (!t.hasStaticShape())
    throw Unsupported(BreakCategory::DynamicShape, "Tensor.tolist() of a tensor of symbolic shape",
                      hint::kSpecializeSizes);
  if (t.getNumElements() > kMaxListElements)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "Tensor.tolist() of more than " + std::to_string(kMaxListElements) +
                          " elements",
                      "keep the values in a tensor inside the compiled function");
  noteScalars("Tensor.tolist()");
  if (self->vmapLevels > 0)
    throw Unsupported(BreakCategory::UnsupportedOp, "Tensor.tolist() inside torch.vmap");
  Emit e(*this);
  PyObject *type = typeForDType(dtypeOfValue(v));
  Value c = e.cast(stopGradient(*this, v), dtypeForType(type));
  std::vector<int64_t> at;
  return nestedList(e, c, at, type);
}

VarP symIntAsScalar(Interpreter &I, const VarP &v) {
  if (v->kind != Var::Kind::SymInt || !v->sym)
    return v;
  return makeScalar(symbolicSizeValue(I, *v->sym)->value, kInt);
}

VarP Interpreter::scalarBinary(const std::string &sym, const VarP &aIn, const VarP &bIn) {
  if (aIn->kind != Var::Kind::Scalar && bIn->kind != Var::Kind::Scalar)
    return nullptr;
  // A symbolic size or int argument next to a number computed in the graph.
  VarP a = symIntAsScalar(*this, aIn), b = symIntAsScalar(*this, bIn);
  if (a->isTensor() || b->isTensor())
    return nullptr; // a tensor op with a Python-number operand (tensorBinary)
  std::string op = sym;
  if (op.size() > 1 && op.back() == '=' && !isComparison(op))
    op.pop_back(); // `s += 1`: numbers are immutable
  PyObject *ta = numberType(a), *tb = numberType(b);
  if (!ta || !tb)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "operator " + sym + " between a Python number read from a tensor and " +
                          "a value that is not a number");
  bool anyFloat = ta == kFloat || tb == kFloat;
  Emit e(*this);
  if (isComparison(op)) {
    DType d = anyFloat ? DType::F64 : DType::I64;
    return makeScalar(compare(e, op, numberValue(e, a, d), numberValue(e, b, d)), kBool);
  }
  if (op == "+" || op == "-" || op == "*") {
    DType d = anyFloat ? DType::F64 : DType::I64;
    Value x = numberValue(e, a, d), y = numberValue(e, b, d);
    Value r = op == "+" ? e.bin<AddOp>(x, y) : op == "-" ? e.bin<SubOp>(x, y) : e.bin<MulOp>(x, y);
    return makeScalar(r, anyFloat ? kFloat : kInt);
  }
  if (op == "/") {
    // Python raises ZeroDivisionError where the tensor op gives inf/nan: only
    // a divisor known not to be 0 is compiled.
    bool knownNonZero = b->isConst() && PyObject_IsTrue(b->obj.get()) == 1;
    if (!knownNonZero)
      throw Unsupported(BreakCategory::DataDependent,
                        "division by a Python number read from a tensor (eager raises "
                        "ZeroDivisionError when it is 0)",
                        "divide tensors inside the graph instead");
    return makeScalar(e.bin<DivOp>(numberValue(e, a, DType::F64), numberValue(e, b, DType::F64)),
                      kFloat);
  }
  throw Unsupported(BreakCategory::UnsupportedOp,
                    "operator " + sym + " on a Python number read from a tensor",
                    "keep the value as a tensor (no .item()) inside the compiled function");
}

VarP Interpreter::scalarUnary(const VarP &v, bool negative) {
  if (!negative)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "operator ~ on a Python number read from a tensor");
  Emit e(*this);
  Value x = v->scalar;
  PyObject *type = v->obj.get();
  if (type == kBool) { // -True is -1
    x = e.cast(x, DType::I64);
    type = kInt;
  }
  return makeScalar(e.unary<NegOp>(x), type);
}

namespace {
/// int/float/bool/abs/type of SymInt `v` (a symbolic size or int argument).
VarP symIntBuiltin(Interpreter &I, const std::string &name, const VarP &v) {
  if (name == "int")
    return v;
  if (name == "type")
    return makeConst(PyRef::borrow(kInt));
  if (name == "bool")
    return constBool(I.symIntTruthy(v));
  if (name == "abs") { // the sign at capture, guarded
    bool negative = v->captured < 0;
    I.symIntBinary(negative ? "<" : ">=", v, constInt(0));
    return negative ? I.symIntBinary("-", constInt(0), v) : v;
  }
  // float(n): the value computed in the graph, a Python float
  Emit e(I);
  return makeScalar(e.cast(symbolicSizeValue(I, *v->sym)->value, DType::F64), kFloat);
}
} // namespace

VarP Interpreter::builtinScalar(const std::string &name, std::vector<VarP> &args,
                                std::map<std::string, VarP> &kwargs) {
  if (args.size() != 1 || !kwargs.empty())
    return nullptr;
  const VarP &v = args[0];
  if (v->kind == Var::Kind::SymInt && v->sym) // a symbolic size or int argument
    return symIntBuiltin(*this, name, v);
  if (v->kind != Var::Kind::Scalar && !(v->isTensor() && name != "type" && name != "abs"))
    return nullptr;
  if (name == "type")
    return makeConst(v->obj);
  Emit e(*this);
  if (name == "abs") { // abs(True) is 1
    Value x = v->obj.get() == kBool ? e.cast(v->scalar, DType::I64) : v->scalar;
    return makeScalar(e.unary<AbsOp>(x), v->obj.get() == kFloat ? kFloat : kInt);
  }
  PyObject *type = name == "int" ? kInt : name == "float" ? kFloat : kBool;
  if (v->isTensor())
    return scalarOfTensor(v, type);
  return convert(e, v->scalar, type, "number read from a tensor");
}

} // namespace kiln

//===- Operators.cpp - handlers of Python operators ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Opcode handlers (OpcodeHandlers.h) for binary, comparison, unary, `is`
// and `in` operators. An operator on a tensor becomes kiln IR (TorchOps),
// one on symbolic sizes a SymInt or a guarded bool (SymbolicSizes.cpp),
// `+`/`*` on tuples and lists a new sequence, and on constants it is
// evaluated at capture; `+ - *` on lazy values stays lazy (LazyValues.cpp).
//===----------------------------------------------------------------------===//
#include "capture/values/Deques.h"
#include "capture/values/IdentitySets.h"
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/interp/OpcodeHandlers.h"
#include "capture/interp/NumpyInterop.h"
#include "capture/interp/PlainObjects.h"
#include "TensorInfo.h"
#include "capture/values/IdTokens.h"

#include <unordered_map>

namespace kiln {
namespace {

/// `a + b` / `a * n` on tuple/list Vars (items may be tensors; `items`
/// lists a sequence's items); null when the operands are not that.
VarP seqBinary(const std::string &sym, const VarP &a, const VarP &b,
               const std::function<std::vector<VarP>(const VarP &)> &items) {
  auto isSeq = [](const VarP &v) {
    return v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List ||
           (v->isConst() && (PyTuple_Check(v->obj.get()) || PyList_Check(v->obj.get())));
  };
  auto kindOf = [](const VarP &v) {
    if (!v->isConst())
      return v->kind;
    return PyTuple_Check(v->obj.get()) ? Var::Kind::Tuple : Var::Kind::List;
  };
  // A torch.Size with a tuple, either side, or repeated: a torch.Size.
  auto isSize = [](const VarP &v) {
    PyObject *t = torchSizeType();
    return v->kind == Var::Kind::Tuple ? v->obj.get() == t
                                       : v->isConst() && Py_TYPE(v->obj.get()) == (PyTypeObject *)t;
  };
  auto sized = [&](VarP r, bool size) {
    if (size)
      r->obj = PyRef::borrow(torchSizeType());
    return r;
  };
  if (a->isConst() && b->isConst())
    return nullptr;
  if ((sym == "+" || sym == "+=") && isSeq(a) && isSeq(b) && kindOf(a) == kindOf(b)) {
    std::vector<VarP> all = items(a), more = items(b);
    all.insert(all.end(), more.begin(), more.end());
    return sized(makeSeq(kindOf(a), all), isSize(a) || isSize(b));
  }
  if ((sym == "*" || sym == "*=") && (isSeq(a) || isSeq(b))) {
    const VarP &seq = isSeq(a) ? a : b, &n = isSeq(a) ? b : a;
    if (!n->isConst() || !PyLong_CheckExact(n->obj.get()))
      return nullptr;
    long times = PyLong_AsLong(n->obj.get());
    std::vector<VarP> one = items(seq), all;
    for (long i = 0; i < times; ++i)
      all.insert(all.end(), one.begin(), one.end());
    return sized(makeSeq(kindOf(seq), all), isSize(seq));
  }
  return nullptr;
}

/// A Python binary operator on two objects: a new reference, or null with
/// a Python error set.
using ConstOperator = PyObject *(*)(PyObject *, PyObject *);

/// The comparison `op` as a ConstOperator.
template <int op> PyObject *richCompare(PyObject *a, PyObject *b) {
  return PyObject_RichCompare(a, b, op);
}

PyObject *power(PyObject *a, PyObject *b) { return PyNumber_Power(a, b, Py_None); }

/// The operators constBinary evaluates, by symbol.
const std::unordered_map<std::string, ConstOperator> &constOperators() {
  static const std::unordered_map<std::string, ConstOperator> operators = {
      {"+", PyNumber_Add},
      {"-", PyNumber_Subtract},
      {"*", PyNumber_Multiply},
      {"/", PyNumber_TrueDivide},
      {"//", PyNumber_FloorDivide},
      {"%", PyNumber_Remainder},
      {"**", power},
      {"<<", PyNumber_Lshift},
      {">>", PyNumber_Rshift},
      {"&", PyNumber_And},
      {"|", PyNumber_Or},
      {"^", PyNumber_Xor},
      {"<", richCompare<Py_LT>},
      {"<=", richCompare<Py_LE>},
      {">", richCompare<Py_GT>},
      {">=", richCompare<Py_GE>},
      {"==", richCompare<Py_EQ>},
      {"!=", richCompare<Py_NE>}};
  return operators;
}

bool isNoneConst(const VarP &v) { return v->isConst() && v->obj.get() == Py_None; }

/// Pushes the Python bool `value`.
void pushBool(Frame &f, bool value) {
  f.stack.push_back(makeConst(PyRef::borrow(value ? Py_True : Py_False)));
}

} // namespace

PyObject *constBinary(const std::string &op, PyObject *a, PyObject *b) {
  std::string o = op;
  if (o.size() > 1 && o.back() == '=' && o != "==" && o != "!=" && o != "<=" && o != ">=")
    o.pop_back(); // in-place form on immutable constants
  auto it = constOperators().find(o);
  if (it == constOperators().end())
    throw Unsupported("operator " + op + " on constants");
  return it->second(a, b);
}

VarP OpcodeHandlers::applyOperator(Interpreter &interp, const std::string &sym, const VarP &lhs,
                                   const VarP &rhs) {
  interp.materializeDeep(lhs);
  interp.materializeDeep(rhs);
  if (VarP r = NumpyInterop::binary(interp, sym, lhs, rhs))
    return r;
  if (VarP r = interp.objectOperator(sym, lhs, rhs)) // user objects' dunders (Functional.cpp)
    return r;
  bool anyTensor = lhs->isTensor() || rhs->isTensor();
  if (VarP r = interp.scalarBinary(sym, lhs, rhs)) // ops/Scalars.cpp
    return r;
  if (!anyTensor)
    if (VarP r = interp.containerOperator(sym, lhs, rhs)) // ContainerMethods.cpp
      return r;
  if (!anyTensor)
    if (VarP r = interp.symIntBinary(sym, lhs, rhs))
      return r;
  if (VarP r = interp.tensorBinary(sym, lhs, rhs))
    return r;
  if (!anyTensor)
    if (VarP r = seqBinary(sym, lhs, rhs, [&](const VarP &v) { return interp.iterItems(v); }))
      return r;
  PyRef l = seqAsConst(lhs), r0 = seqAsConst(rhs);
  PyObject *lo = l ? l.get() : constObj(lhs, "operand"),
           *ro = r0 ? r0.get() : constObj(rhs, "operand");
  pinPlainObject(lo, "an operator is evaluated on it at capture");
  pinPlainObject(ro, "an operator is evaluated on it at capture");
  CaptureTimeCalls::guardDunderState(interp, lhs, "an operator evaluated at capture");
  CaptureTimeCalls::guardDunderState(interp, rhs, "an operator evaluated at capture");
  PyRef r = PyRef::steal(constBinary(sym, lo, ro));
  if (!r) // eager raises the same: a try/except of the frames may catch it
    raisePending("operator " + sym + " raised on constants");
  interp.noteFresh(r); // {1} | {2}, l + [3]: a new container
  return makeConst(r);
}

void OpcodeHandlers::binaryOp(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  VarP rhs = popValue(f), lhs = popValue(f);
  if (VarP lazy = interp.lazyBinary(in.argrepr, lhs, rhs)) { // LazyValues.cpp
    f.stack.push_back(lazy);
    return;
  }
  f.stack.push_back(applyOperator(interp, in.argrepr, lhs, rhs));
}

void OpcodeHandlers::compareOp(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  VarP rhs = popValue(f), lhs = popValue(f);
  f.stack.push_back(applyOperator(interp, pyText(in.argval.get()), lhs, rhs));
}

VarP OpcodeHandlers::applyUnary(Interpreter &interp, Frame &f, bool negative) {
  // -x is Tensor.neg; ~x is Tensor.bitwise_not (bool tensors: logical not).
  VarP v = popValue(f);
  if (v->kind == Var::Kind::Ndarray)
    return NumpyInterop::binary(interp, negative ? "neg" : "~", v, nullptr);
  if (v->isTensor()) {
    std::vector<VarP> none;
    std::map<std::string, VarP> nokw;
    return interp.callTensorMethod(v, negative ? "neg" : "bitwise_not", none, nokw);
  }
  if (v->kind == Var::Kind::Scalar)
    return interp.scalarUnary(v, negative);
  if (v->kind == Var::Kind::SymInt && negative) // -s: `x[:, -seq_len:]`
    return interp.symIntBinary("-", makeConst(PyRef::steal(PyLong_FromLong(0))), v);
  PyObject *c = constObj(v, "operand");
  pinPlainObject(c, "an operator is evaluated on it at capture");
  PyRef r = PyRef::steal(negative ? PyNumber_Negative(c) : PyNumber_Invert(c));
  if (!r)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError(std::string("unary ") + (negative ? "-" : "~") + " raised"));
  return makeConst(r);
}

void OpcodeHandlers::unaryNegative(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  f.stack.push_back(applyUnary(interp, f, /*negative=*/true));
}

void OpcodeHandlers::unaryInvert(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  f.stack.push_back(applyUnary(interp, f, /*negative=*/false));
}

void OpcodeHandlers::unaryNot(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  pushBool(f, !interp.truthy(popValue(f)));
}

void OpcodeHandlers::isOp(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  VarP rhs = popValue(f), lhs = popValue(f);
  bool same;
  bool scalar = lhs->kind == Var::Kind::Scalar || rhs->kind == Var::Kind::Scalar;
  if (scalar && lhs != rhs && !isNoneConst(lhs) && !isNoneConst(rhs))
    // `b is True`, `k is 1`: the answer depends on the number (ops/Scalars.cpp)
    throw Unsupported(BreakCategory::DataDependent,
                      "'is' between a Python number read from a tensor and another value");
  if (lhs->isTensor() || rhs->isTensor()) {
    const char *why = "";
    int answer = lhs->isTensor() && rhs->isTensor() ? sameTensorIdentity(lhs, rhs, &why) : 0;
    if (answer < 0)
      throw Unsupported(BreakCategory::PythonBuiltin, std::string("'is' between ") + why);
    same = answer == 1;
  } else if (!lhs->isConst() || !rhs->isConst()) {
    same = lhs.get() == rhs.get(); // containers built here are new objects
  } else {
    same = constObj(lhs, "operand") == constObj(rhs, "operand");
    if (!isNoneConst(lhs) && !isNoneConst(rhs)) { // `config is None` is answered by its type
      pinIdentity(lhs->obj.get(), "`is` compares it");
      pinIdentity(rhs->obj.get(), "`is` compares it");
    }
    if (isModule(lhs->obj.get()) && isModule(rhs->obj.get())) // the answer is per instance
      interp.pinModuleIdentity("`is` between two modules");
  }
  pushBool(f, in.arg ? !same : same);
}

void OpcodeHandlers::containsOp(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  VarP rhs = popValue(f), lhs = popValue(f);
  bool found = false;
  if (VarP snap = dequeSnapshot(rhs, /*iterated=*/false)) // Deques.h: searched like a list
    rhs = snap;
  if (isIdentitySet(rhs)) { // a set of tensors (IdentitySets.h)
    found = identitySetContains(rhs, lhs);
    pushBool(f, in.arg ? !found : found);
    return;
  }
  if (lhs->isConst()) { // hashed or compared with ==
    pinPlainObject(lhs->obj.get(), "`in` looks it up");
    CaptureTimeCalls::guardDunderState(interp, lhs, "`in` evaluated at capture");
  }
  if (rhs->kind == Var::Kind::Dict) {
    found = dictFind(rhs, constObj(lhs, "operand")) >= 0;
  } else if (rhs->kind == Var::Kind::Tuple || rhs->kind == Var::Kind::List ||
             rhs->kind == Var::Kind::Iter) {
    // `x in [a, b]` built here: per item `item is x or item == x`, in order
    // (an iterator is consumed up to the first match only).
    VarP it = interp.getIter(rhs);
    while (!found) {
      VarP item = interp.iterNext(it);
      if (!item)
        break;
      if (lhs->isTensor() || item->isTensor()) {
        if (lhs->isTensor() != item->isTensor())
          throw Unsupported("'in' comparing a tensor with a Python value");
        const char *why = "";
        int same = sameTensorIdentity(lhs, item, &why);
        if (same < 0)
          throw Unsupported(BreakCategory::PythonBuiltin, std::string("'in' between ") + why);
        if (!same) // eager compares the two with ==: data-dependent or raising
          throw Unsupported(BreakCategory::DataDependent,
                            "'in' compares two different tensors with == (eager: bool() of the "
                            "elementwise result)");
        found = true;
        continue;
      }
      pinPlainObject(constObj(item, "item"), "`in` compares it");
      int eq = PyObject_RichCompareBool(constObj(lhs, "operand"), constObj(item, "item"), Py_EQ);
      if (eq < 0)
        throw Unsupported(BreakCategory::UserError, withPythonError("'in' raised"));
      found |= eq == 1;
    }
  } else {
    pinPlainObject(constObj(rhs, "container"), "`in` is evaluated on it at capture");
    CaptureTimeCalls::guardDunderState(interp, rhs, "`in` evaluated at capture");
    if (PyDict_CheckExact(rhs->obj.get()) && interp.sourceOf(rhs) >= 0) // a key added later
      interp.guardLength(interp.sourceOf(rhs), PyDict_GET_SIZE(rhs->obj.get()));
    int contains = PySequence_Contains(constObj(rhs, "container"), constObj(lhs, "operand"));
    if (contains < 0)
      throw Unsupported(BreakCategory::UserError, withPythonError("'in' raised"));
    found = contains == 1;
  }
  pushBool(f, in.arg ? !found : found);
}

} // namespace kiln

//===- TorchCalls.cpp - torch calls, Tensor methods and operators → ops ---===//
// SPDX-License-Identifier: Apache-2.0
//
// The interpreter's entry points into the op registry: a call of a torch
// callable (looked up by identity, `operator` module functions included),
// a Tensor method call (by name; `name_` is the in-place form of a mapped
// method) and a binary Python operator on tensors (by symbol). Arguments
// are bound to the name's schema and the op applied through applyTracked; a
// mapped op whose handler refuses its arguments runs through torch instead
// (Fallback.cpp).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

namespace kiln {

namespace {

/// A call of `operator.<fn>` (`op`): tensors go to the mapped operator,
/// Python numbers are evaluated by the operator itself.
VarP callOperatorFunction(Interpreter &I, PyObject *callee, const OperatorFunction &op,
                          std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  size_t arity = op.arity;
  if (args.size() != arity || !kwargs.empty())
    throw Unsupported("operator " + op.symbol + " takes " + std::to_string(arity) +
                      " positional arguments");
  if (arity == 2) {
    if (VarP t = I.tensorBinary(op.symbol, args[0], args[1]))
      return t;
  } else if (args[0]->isTensor()) {
    std::vector<VarP> none;
    std::map<std::string, VarP> noKeywords;
    return I.callTensorMethod(args[0], op.symbol, none, noKeywords);
  }
  // Owned: the argument tuple and the result.
  PyRef tuple = PyRef::steal(PyTuple_New(arity));
  for (size_t i = 0; i < arity; ++i) {
    PyObject *c = constObj(args[i], "operand");
    Py_INCREF(c); // the tuple steals it
    PyTuple_SET_ITEM(tuple.get(), i, c);
  }
  PyRef r = PyRef::steal(PyObject_Call(callee, tuple.get(), nullptr));
  if (!r)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError("operator " + op.symbol + " raised on constants"));
  return makeConst(r);
}

} // namespace

namespace {
/// The argument as torch would receive it at this check: a constant as
/// itself, a tensor as a meta tensor like it, a Scalar (ops/Scalars.cpp) as
/// a number of its type (1: no division by zero at the check); null when
/// none of these.
PyRef argumentForCheck(const VarP &v) {
  if (v->isConst())
    return v->obj;
  if (v->kind == Var::Kind::Scalar)
    return PyRef::steal(PyObject_CallOneArg(v->obj.get(), PyRef::steal(PyLong_FromLong(1)).get()));
  return v->isTensor() ? metaTensorOf(v->value) : PyRef();
}
} // namespace

void Interpreter::checkScalarInputAccepted(PyObject *callee, const std::vector<VarP> &args,
                                           const std::map<std::string, VarP> &kwargs) {
  // Python's torch bindings accept a number in a tensor position for some
  // functions (torch.add(2.5, t)) and reject it with a TypeError for others
  // (torch.eq(2.5, t)). Argument parsing depends only on
  // the arguments' types, so the call is tried once on meta tensors.
  if (args.empty() || !(args[0]->isConst() || args[0]->kind == Var::Kind::Scalar))
    return;
  PyObject *first = args[0]->obj.get(); // a Scalar's type
  if (args[0]->isConst() && !PyLong_Check(first) && !PyFloat_Check(first) &&
      !PyComplex_Check(first))
    return;
  // Only calls with a tensor argument: everything then runs on meta tensors
  // (a factory such as torch.zeros(n) would allocate, torch.randn(n) would
  // advance the generator).
  bool anyTensor = false;
  for (const VarP &a : args)
    anyTensor |= a->isTensor();
  for (const auto &entry : kwargs)
    anyTensor |= entry.second->isTensor();
  if (!anyTensor)
    return;
  PyRef tuple = PyRef::steal(PyTuple_New(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    PyRef a = argumentForCheck(args[i]);
    if (!a)
      return; // an argument the check cannot stand in for
    PyTuple_SET_ITEM(tuple.get(), i, a.release());
  }
  PyRef kw = PyRef::steal(PyDict_New());
  for (const auto &[name, value] : kwargs) {
    PyRef a = argumentForCheck(value);
    if (!a)
      return;
    PyDict_SetItemString(kw.get(), name.c_str(), a.get());
  }
  PyRef r = PyRef::steal(PyObject_Call(callee, tuple.get(), kw.get()));
  if (r)
    return;
  if (PyErr_ExceptionMatches(PyExc_TypeError))
    throw Unsupported(BreakCategory::UserError,
                      withPythonError(pyText(callee) + " rejects these argument types"),
                      hint::kRaisesInEager);
  PyErr_Clear(); // not an argument-type error (a meta kernel missing): no verdict
}

namespace {

/// `torch.relu_(x)` (F.relu_), `torch.sigmoid_(x)`: the in-place form of a
/// mapped torch function `torch.<name>` whose op has one, applied to the
/// first argument like `x.relu_()`; nullptr for any other callee.
VarP inPlaceTorchFunction(Interpreter &I, PyObject *callee, std::vector<VarP> &args,
                          std::map<std::string, VarP> &kwargs) {
  PyRef nameObj = PyRef::steal(PyObject_GetAttrString(callee, "__name__"));
  PyErr_Clear();
  std::string name = nameObj && PyUnicode_Check(nameObj.get()) ? pyText(nameObj.get()) : "";
  if (name.size() < 2 || name.back() != '_' || name[name.size() - 2] == '_' || args.empty() ||
      !args[0]->isTensor())
    return nullptr;
  if (isIndexedWrite(name)) { // torch.index_put_(x, ...): as x.index_put_(...)
    PyRef method = PyRef::steal(PyObject_GetAttrString(torchModule(), name.c_str()));
    PyErr_Clear();
    if (method.get() != callee)
      return nullptr;
    VarP self = args[0];
    std::vector<VarP> rest(args.begin() + 1, args.end());
    return I.callInPlaceMethod(self, name, rest, kwargs);
  }
  PyRef same = PyRef::steal(PyObject_GetAttrString(torchModule(), name.c_str()));
  PyRef base =
      PyRef::steal(PyObject_GetAttrString(torchModule(), name.substr(0, name.size() - 1).c_str()));
  PyErr_Clear();
  const OpBinding *binding = base ? opRegistry().function(base.get()) : nullptr;
  if (same.get() != callee || !binding || !binding->op->hasInPlaceForm())
    return nullptr;
  Args a = bindArguments(*binding, args, kwargs);
  return applyInPlace(I, *binding->op, a, "torch." + name);
}

} // namespace

VarP Interpreter::callTorchFunction(PyObject *callee, std::vector<VarP> &args,
                                    std::map<std::string, VarP> &kwargs) {
  const OpRegistry &registry = opRegistry();
  if (const OperatorFunction *op = registry.operatorFunction(callee))
    return callOperatorFunction(*this, callee, *op, args, kwargs);
  const OpBinding *binding = registry.function(callee);
  if (!binding)
    return inPlaceTorchFunction(*this, callee, args, kwargs);
  checkScalarInputAccepted(callee, args, kwargs);
  checkEagerAcceptsDTypes(callee, "", *binding->op, args, kwargs);
  // `out=t`: computed functionally, then stored into t (InPlace.cpp).
  VarP out = takeOutArgument(kwargs);
  // A mapped op whose handler refuses these arguments runs through torch.
  VarP r = withFallback(callee, "", args, kwargs, [&] {
    Args a = bindArguments(*binding, args, kwargs);
    return applyTracked(*this, *binding->op, a);
  });
  if (!out)
    return r;
  if (!r || !r->isTensor())
    throw Unsupported(BreakCategory::UnsupportedOp,
                      pyText(callee) + "(out=...) of several results");
  return assignInPlace(out, r->value, pyText(callee) + "(out=...)");
}

VarP Interpreter::callTensorMethod(const VarP &self, const std::string &name,
                                   std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  if (VarP r = callInPlaceMethod(self, name, args, kwargs)) // copy_, fill_, zero_
    return r;
  if (VarP r = scalarMethod(self, name, args, kwargs)) // item, tolist (Scalars.cpp)
    return r;
  const OpRegistry &registry = opRegistry();
  const OpBinding *binding = registry.method(name);
  if (!binding && name.size() > 1 && name.back() == '_') {
    // In-place form of a mapped method (`y.add_(b)`, `y.relu_()`).
    const OpBinding *base = registry.method(name.substr(0, name.size() - 1));
    if (base && base->op->hasInPlaceForm()) {
      args.insert(args.begin(), self);
      Args a = bindArguments(*base, args, kwargs);
      return applyInPlace(*this, *base->op, a, "Tensor." + name);
    }
  }
  args.insert(args.begin(), self);
  if (!binding) { // an unmapped method: through torch, if it can
    Unsupported unmapped(BreakCategory::UnsupportedOp,
                         "Tensor." + name + " is not supported yet" +
                             (name.back() == '_' ? " (in-place method)" : ""));
    if (VarP r = torchFallback(nullptr, name, args, kwargs, &unmapped))
      return r;
    throw unmapped;
  }
  checkEagerAcceptsDTypes(nullptr, name, *binding->op, args, kwargs);
  return withFallback(nullptr, name, args, kwargs, [&] {
    Args a = bindArguments(*binding, args, kwargs);
    return applyTracked(*this, *binding->op, a);
  });
}

VarP Interpreter::tensorBinary(const std::string &sym, const VarP &a, const VarP &b) {
  if (!a->isTensor() && !b->isTensor())
    return nullptr;
  std::string op = sym;
  bool inplace =
      op.size() >= 2 && op.back() == '=' && op != "==" && op != "!=" && op != "<=" && op != ">=";
  if (inplace) {
    op.pop_back();
    // x += y mutates x's storage in eager: computed, then assigned to x's
    // Var (assignInPlace, InPlace.cpp) so every reference sees the new value.
    if (a->isTensor() && a->vmapLevels > 0)
      throw Unsupported(BreakCategory::SideEffect,
                        "in-place " + sym + " on a tensor batched by torch.vmap");
  }
  const OpDef *def = opRegistry().binaryOperator(op);
  if (!def)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "operator " + sym + " on tensors is not supported yet");
  // A handler that refuses (an integer // by a tensor ...) runs the
  // operator through torch (Tensor.__floordiv__, __rfloordiv__ for 3 // x).
  static const std::map<std::string, std::string> dunders = {
      {"+", "add"},       {"-", "sub"}, {"*", "mul"},  {"/", "truediv"},
      {"//", "floordiv"}, {"%", "mod"}, {"**", "pow"}, {"@", "matmul"},
      {"&", "and"},       {"|", "or"},  {"^", "xor"}};
  auto dunder = dunders.find(op);
  std::vector<VarP> callArgs = a->isTensor() ? std::vector<VarP>{a, b} : std::vector<VarP>{b, a};
  std::map<std::string, VarP> noKwargs;
  std::string method = dunder == dunders.end()
                           ? std::string()
                           : (a->isTensor() ? "__" : "__r") + dunder->second + "__";
  auto attempt = [&] {
    Args args;
    args.named["input"] = a;
    args.named[def->params.names.at(1)] = b; // "other" ("exponent" for **)
    return applyTracked(*this, *def, args);
  };
  VarP r = method.empty() ? attempt() : withFallback(nullptr, method, callArgs, noKwargs, attempt);
  if (inplace && a->isTensor() && r && r->isTensor())
    return assignInPlace(a, r->value, "in-place " + sym);
  return r;
}

} // namespace kiln

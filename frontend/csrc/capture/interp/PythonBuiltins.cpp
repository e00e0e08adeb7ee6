//===- PythonBuiltins.cpp - builtins answered for abstract values ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// Calls of Python builtins during capture: callBuiltin (len, isinstance,
// getattr/hasattr, range/enumerate/zip/sorted, min/max/sum/any/all, pure
// builtins evaluated on constants, ...) and callIntrospection, whose answer
// depends only on the kind of a value, not on tensor data: `callable(x)` of
// a function made in the frame, a tensor, a container built here.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"

#include <set>
#include <unordered_set>

namespace kiln {
namespace {

/// Pure builtins that may be evaluated on constants at capture time.
bool isPureBuiltin(const std::string &name) {
  static const std::unordered_set<std::string> pure = {
      "len",      "isinstance", "issubclass", "range",   "tuple",   "list",      "int",
      "float",    "bool",       "min",        "max",     "abs",     "round",     "sum",
      "any",      "all",        "str",        "hasattr", "getattr", "enumerate", "zip",
      "reversed", "sorted",     "divmod",     "pow",     "type"};
  return pure.count(name) > 0;
}

} // namespace

VarP Interpreter::callIntrospection(PyObject *fn, const std::string &name, std::vector<VarP> &args,
                                    std::map<std::string, VarP> &kwargs) {
  if (fn != PyDict_GetItemString(PyEval_GetBuiltins(), "callable") || args.size() != 1 ||
      !kwargs.empty())
    return nullptr;
  (void)name;
  const VarP &v = args[0];
  bool result = false;
  switch (v->kind) {
  case Var::Kind::Function:
  case Var::Kind::BoundMethod:
  case Var::Kind::TensorMethod:
  case Var::Kind::ListMethod:
    result = true;
    break;
  case Var::Kind::Const:
    result = PyCallable_Check(v->obj.get());
    break;
  case Var::Kind::Tensor:
  case Var::Kind::SymInt:
  case Var::Kind::Tuple:
  case Var::Kind::List:
  case Var::Kind::Iter:
    result = false;
    break;
  case Var::Kind::Dict: { // a dict, or a ModelOutput record (`obj`: its class)
    PyObject *cls = v->obj ? v->obj.get() : reinterpret_cast<PyObject *>(&PyDict_Type);
    result = PyType_Check(cls) && reinterpret_cast<PyTypeObject *>(cls)->tp_call != nullptr;
    break;
  }
  default:
    throw Unsupported(BreakCategory::PythonBuiltin, "callable() of a value kiln does not track");
  }
  return makeConst(PyRef::borrow(result ? Py_True : Py_False));
}

VarP Interpreter::callAtCapture(PyObject *fn, std::vector<VarP> &args,
                                std::map<std::string, VarP> &kwargs) {
  static PyObject *signature = [] {
    PyRef m = PyRef::steal(PyImport_ImportModule("inspect"));
    PyObject *f = m ? PyObject_GetAttrString(m.get(), "signature") : nullptr;
    PyErr_Clear();
    return f; // leaked: process lifetime
  }();
  if (!fn || fn != signature)
    return nullptr;
  // inspect.signature(f) depends only on f's code, defaults and
  // annotations: evaluated now on the function the capture resolved (a
  // constant, a method bound to a constant receiver, or a function made
  // here), like Dynamo. The function itself is already guarded by how it
  // was reached (identity of its source, or of its receiver).
  if (args.size() != 1 || !kwargs.empty())
    throw Unsupported(BreakCategory::PythonBuiltin, "inspect.signature with options");
  const VarP &f = args[0];
  PyRef target;
  if (f->kind == Var::Kind::Const || f->kind == Var::Kind::Function) {
    target = f->obj;
  } else if (f->kind == Var::Kind::BoundMethod && f->self && f->self->isConst()) {
    target = PyRef::steal(PyMethod_New(f->obj.get(), f->self->obj.get()));
  } else {
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "inspect.signature of a value kiln does not track");
  }
  PyRef sig = target ? PyRef::steal(PyObject_CallOneArg(signature, target.get())) : PyRef();
  if (!sig)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError("inspect.signature raised at capture time"),
                      hint::kRaisesInEager);
  keepAlive_.push_back(sig);
  return makeConst(sig);
}

VarP Interpreter::callBuiltin(PyObject *fn, std::vector<VarP> &args,
                              std::map<std::string, VarP> &kwargs) {
  PyRef nameObj = PyRef::steal(PyObject_GetAttrString(fn, "__name__"));
  std::string name =
      nameObj && PyUnicode_Check(nameObj.get()) ? PyUnicode_AsUTF8(nameObj.get()) : "";
  PyErr_Clear();
  PyRef modName = PyRef::steal(PyObject_GetAttrString(fn, "__module__"));
  PyErr_Clear();
  std::string mod =
      modName && PyUnicode_Check(modName.get()) ? PyUnicode_AsUTF8(modName.get()) : "";
  bool isBuiltinType =
      PyType_Check(fn) && (fn == (PyObject *)&PyLong_Type || fn == (PyObject *)&PyFloat_Type ||
                           fn == (PyObject *)&PyBool_Type || fn == (PyObject *)&PyTuple_Type ||
                           fn == (PyObject *)&PyList_Type || fn == (PyObject *)&PyRange_Type ||
                           fn == (PyObject *)&PySlice_Type);
  if (PyType_Check(fn))
    name = reinterpret_cast<PyTypeObject *>(fn)->tp_name;
  static PyObject *deviceType = PyObject_GetAttrString(torchModule(), "device"); // leaked
  if (VarP r = callPureMethod(fn, args, kwargs))
    return r;
  if (VarP r = callIntrospection(fn, name, args, kwargs)) // PythonBuiltins.cpp
    return r;
  static PyObject *finfoType = PyObject_GetAttrString(torchModule(), "finfo"); // leaked
  static PyObject *iinfoType = PyObject_GetAttrString(torchModule(), "iinfo"); // leaked
  // Built-in exception classes only store their arguments: constructing one
  // (to raise it) is evaluated now. A user-defined one runs its own
  // __init__: the construct is left to eager (where it is raised).
  bool builtinException = PyExceptionClass_Check(fn) && mod == "builtins";
  if (PyExceptionClass_Check(fn) && !builtinException)
    throw Unsupported(BreakCategory::UserError, "constructs the exception " + pyText(fn),
                      hint::kRaisesInEager);
  bool pure = isBuiltinType || (mod == "builtins" && isPureBuiltin(name)) || mod == "math" ||
              fn == deviceType || fn == finfoType || fn == iinfoType || builtinException;
  if (!pure)
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "call to " + pyText(fn) + " is not supported" +
                          (name == "print" ? " (print has side effects)" : ""),
                      "kiln runs the call eagerly at a graph break; move it out of the compiled "
                      "function to keep one graph");
  // getattr/hasattr on an object of the frame read the attribute through a
  // guarded source (the object may change between calls); a missing
  // attribute cannot be guarded yet.
  if ((name == "getattr" || name == "hasattr") && args.size() >= 2 && args[1]->isConst() &&
      PyUnicode_Check(args[1]->obj.get()) && kwargs.empty())
    if (VarP v = overlayAttr(args[0], pyText(args[1]->obj.get())))
      return name == "getattr" ? v : makeConst(PyRef::borrow(Py_True));
  if ((name == "getattr" || name == "hasattr") && args.size() >= 2 && args[0]->isConst() &&
      args[1]->isConst() && PyUnicode_Check(args[1]->obj.get()) && sourceOf(args[0]) >= 0 &&
      kwargs.empty()) {
    if (!PyObject_HasAttr(args[0]->obj.get(), args[1]->obj.get())) {
      PyErr_Clear();
      // A missing attribute: the default (getattr) or False, guarded by a
      // HasAttr guard on the object (an attribute set later recompiles).
      if (name == "getattr" && args.size() != 3)
        throw Unsupported(BreakCategory::UserError,
                          "getattr() of a missing attribute without a default");
      Guard g;
      g.kind = Guard::Kind::HasAttr;
      g.source = sourceOf(args[0]);
      g.expected = PyRef::steal(PyTuple_Pack(2, args[1]->obj.get(), Py_False));
      out_.guards.push_back(std::move(g));
      return name == "getattr" ? args[2] : makeConst(PyRef::borrow(Py_False));
    }
    VarP v = loadAttr(args[0], args[1]->obj.get());
    return name == "getattr" ? v : makeConst(PyRef::borrow(Py_True));
  }
  // Iteration helpers over abstract sequences (lists of tensors, modules):
  // built from the items so that their sources and graph values are kept.
  if ((name == "enumerate" || name == "zip" || name == "reversed") && !args.empty()) {
    std::vector<VarP> items;
    if (name == "enumerate") {
      VarP startVar = args.size() > 1 ? args[1] : kwargs.count("start") ? kwargs["start"] : nullptr;
      long start = startVar ? PyLong_AsLong(constObj(startVar, "enumerate start")) : 0;
      if (PyErr_Occurred())
        throw Unsupported(BreakCategory::UserError,
                          withPythonError("enumerate start must be an int"));
      if (args.size() > 2 || kwargs.size() > (kwargs.count("start") ? 1u : 0u))
        throw Unsupported(BreakCategory::UserError, "unexpected arguments to enumerate");
      std::vector<VarP> src = iterItems(args[0]);
      for (size_t i = 0; i < src.size(); ++i)
        items.push_back(makeSeq(
            Var::Kind::Tuple, {makeConst(PyRef::steal(PyLong_FromLong(start + (long)i))), src[i]}));
    } else if (name == "zip") {
      if (!kwargs.empty())
        throw Unsupported(BreakCategory::PythonBuiltin, "zip keyword arguments are not supported");
      std::vector<std::vector<VarP>> srcs;
      size_t n = SIZE_MAX;
      for (auto &a : args) {
        srcs.push_back(iterItems(a));
        n = std::min(n, srcs.back().size());
      }
      for (size_t i = 0; i < n; ++i) {
        std::vector<VarP> t;
        for (auto &s : srcs)
          t.push_back(s[i]);
        items.push_back(makeSeq(Var::Kind::Tuple, t));
      }
    } else {
      if (args.size() != 1 || !kwargs.empty())
        throw Unsupported(BreakCategory::UserError, "reversed takes one argument");
      items = iterItems(args[0]);
      std::reverse(items.begin(), items.end());
    }
    return makeSeq(Var::Kind::Iter, items);
  }
  // sum() over tensors: a chain of `+` (eager adds to the start value too).
  if (name == "sum" && !args.empty() && args.size() <= 2 &&
      (!args[0]->isConst() || (args.size() == 2 && !args[1]->isConst()))) {
    VarP acc = args.size() == 2        ? args[1]
               : kwargs.count("start") ? kwargs["start"]
                                       : makeConst(PyRef::steal(PyLong_FromLong(0)));
    for (const VarP &item : iterItems(args[0])) {
      if (VarP t = tensorBinary("+", acc, item)) {
        acc = t;
        continue;
      }
      PyRef r = PyRef::steal(constBinary("+", constObj(acc, "operand"), constObj(item, "operand")));
      if (!r)
        throw Unsupported(BreakCategory::UserError, withPythonError("sum() raised on constants"),
                          hint::kRaisesInEager);
      acc = makeConst(r);
    }
    return acc;
  }
  // len()/isinstance() on tensors are answered from the static type.
  if (name == "len" && args.size() == 1 && args[0]->isTensor()) {
    return tensorAttribute(args[0], "__len__");
  }
  if (name == "isinstance" && args.size() == 2 && !args[0]->isTensor() && !args[0]->isConst() &&
      args[0]->kind != Var::Kind::Null) {
    // A container built here (or a ModelOutput record): its Python type.
    PyObject *t = args[0]->kind == Var::Kind::Dict
                      ? (args[0]->obj ? args[0]->obj.get() : (PyObject *)&PyDict_Type)
                  : args[0]->kind == Var::Kind::Tuple ? (PyObject *)&PyTuple_Type
                  : args[0]->kind == Var::Kind::List  ? (PyObject *)&PyList_Type
                                                      : nullptr;
    if (t) {
      PyRef cls = seqAsConst(args[1]);
      int r = PyObject_IsSubclass(t, cls ? cls.get() : constObj(args[1], "class"));
      PyErr_Clear();
      return makeConst(PyRef::borrow(r == 1 ? Py_True : Py_False));
    }
  }
  if (name == "isinstance" && args.size() == 2 && args[0]->isTensor()) {
    PyRef fake = PyRef::steal(PyObject_CallMethod(torchModule(), "empty", "i", 0));
    PyRef cls = seqAsConst(args[1]);
    int r = PyObject_IsInstance(fake.get(), cls ? cls.get() : constObj(args[1], "class"));
    PyErr_Clear();
    return makeConst(PyRef::borrow(r == 1 ? Py_True : Py_False));
  }
  if (name == "len" && args.size() == 1 && args[0]->isConst() && args[0]->source >= 0 &&
      (PyTuple_CheckExact(args[0]->obj.get()) || PyList_CheckExact(args[0]->obj.get()) ||
       PyDict_CheckExact(args[0]->obj.get()))) {
    // len() of a container of the frame (e.g. a module's hook dict): the
    // container may be mutated between calls, so its length is guarded.
    Py_ssize_t n = PyObject_Length(args[0]->obj.get());
    guardLength(args[0]->source, n);
    return makeConst(PyRef::steal(PyLong_FromSsize_t(n)));
  }
  if ((name == "len") && args.size() == 1 &&
      (args[0]->kind == Var::Kind::Tuple || args[0]->kind == Var::Kind::List ||
       args[0]->kind == Var::Kind::Dict))
    return makeConst(PyRef::steal(PyLong_FromSize_t(args[0]->items.size())));
  if ((name == "tuple" || name == "list") && args.size() == 1 && !args[0]->isConst()) {
    VarP it = getIter(args[0]);
    return makeSeq(name == "tuple" ? Var::Kind::Tuple : Var::Kind::List, it->items);
  }
  // sorted(d), min(t), any(l) ... over containers built here whose items
  // are constants (a dict's keys): evaluated on a list of those constants.
  static const std::set<std::string> overItems = {"sorted", "min", "max",      "any",
                                                  "all",    "set", "frozenset"};
  if (overItems.count(name) && args.size() == 1 && !args[0]->isConst() && !args[0]->isTensor()) {
    std::vector<VarP> items = iterItems(args[0]);
    PyRef list = PyRef::steal(PyList_New(items.size()));
    for (size_t i = 0; i < items.size(); ++i) {
      PyObject *o = constObj(items[i], "item");
      Py_INCREF(o);
      PyList_SET_ITEM(list.get(), i, o);
    }
    keepAlive_.push_back(list);
    args[0] = makeConst(list);
  }
  PyRef tuple = PyRef::steal(PyTuple_New(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    PyRef c = seqAsConst(args[i]); // (int, float) built here is a constant too
    PyObject *o = c ? c.release()
                    : (Py_INCREF(constObj(args[i], "argument of a builtin")), args[i]->obj.get());
    PyTuple_SET_ITEM(tuple.get(), i, o);
  }
  PyRef kw = PyRef::steal(PyDict_New());
  for (auto &[k, v] : kwargs) {
    PyRef c = seqAsConst(v);
    PyDict_SetItemString(kw.get(), k.c_str(), c ? c.get() : constObj(v, "keyword argument"));
  }
  PyRef r = PyRef::steal(PyObject_Call(fn, tuple.get(), kw.get()));
  if (!r)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError("call to " + pyText(fn) + " raised at capture time"),
                      hint::kRaisesInEager);
  if (PyIter_Check(r.get()) || PyObject_TypeCheck(r.get(), &PyEnum_Type) ||
      PyObject_TypeCheck(r.get(), &PyZip_Type)) {
    PyRef list = PyRef::steal(PySequence_List(r.get()));
    std::vector<VarP> items;
    for (Py_ssize_t i = 0; list && i < PyList_GET_SIZE(list.get()); ++i)
      items.push_back(makeConst(PyRef::borrow(PyList_GET_ITEM(list.get(), i))));
    PyErr_Clear();
    return makeSeq(Var::Kind::Iter, items);
  }
  return makeConst(r);
}

} // namespace kiln

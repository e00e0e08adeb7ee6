//===- Functional.cpp - functools, operator and key functions in capture ---===//
// SPDX-License-Identifier: Apache-2.0
//
// Calls of the functional-programming helpers of the standard library,
// answered for abstract values (callFunctional): the `operator` module's
// arithmetic, comparison and getitem functions (the same path as the
// operator opcodes), functools.reduce (a left fold of calls),
// functools.partial (built at capture when its pieces are constants; a
// call unwraps it), a functools.lru_cache wrapper (the wrapped function
// inlined, refused when it has side effects eager would run only once per
// key), sorted/min/max with a key function made here or over abstract
// items, and itertools.combinations/permutations (index tuples over the
// items). Operators on user objects (objectOperator) call the class's
// Python dunder methods in Python's order (reflected operand, in-place
// form, NotImplemented fallbacks).
//===----------------------------------------------------------------------===//
#include "capture/interp/OpcodeHandlers.h"
#include "capture/interp/PlainObjects.h"
#include "GilOnce.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace kiln {
namespace {

/// `operator.<name>` -> the operator symbol applyOperator takes.
const std::unordered_map<std::string, std::string> &operatorSymbols() {
  static const std::unordered_map<std::string, std::string> symbols = {
      {"add", "+"},       {"sub", "-"},     {"mul", "*"},       {"truediv", "/"},
      {"floordiv", "//"}, {"mod", "%"},     {"pow", "**"},      {"matmul", "@"},
      {"lshift", "<<"},   {"rshift", ">>"}, {"and_", "&"},      {"or_", "|"},
      {"xor", "^"},       {"lt", "<"},      {"le", "<="},       {"gt", ">"},
      {"ge", ">="},       {"eq", "=="},     {"ne", "!="},       {"iadd", "+="},
      {"isub", "-="},     {"imul", "*="},   {"itruediv", "/="}, {"ifloordiv", "//="},
      {"imod", "%="},     {"ipow", "**="},  {"imatmul", "@="},  {"iand", "&="},
      {"ior", "|="},      {"ixor", "^="},   {"ilshift", "<<="}, {"irshift", ">>="}};
  return symbols;
}

/// The object `module.name` (process lifetime), or null.
PyObject *stdlibAttr(const char *module, const char *name) {
  PyRef m = PyRef::steal(PyImport_ImportModule(module));
  PyObject *o = m ? PyObject_GetAttrString(m.get(), name) : nullptr;
  PyErr_Clear();
  return o; // leaked: process lifetime
}

/// The dunder names of binary operator `sym`: (method, reflected, in-place).
struct Dunders {
  const char *op, *rop, *iop;
};

/// Dunders of `sym` ("+", "+=", "<" ...); nullptr names when it has none.
std::optional<Dunders> dundersOf(const std::string &sym) {
  static const std::unordered_map<std::string, Dunders> table = {
      {"+", {"__add__", "__radd__", "__iadd__"}},
      {"-", {"__sub__", "__rsub__", "__isub__"}},
      {"*", {"__mul__", "__rmul__", "__imul__"}},
      {"/", {"__truediv__", "__rtruediv__", "__itruediv__"}},
      {"//", {"__floordiv__", "__rfloordiv__", "__ifloordiv__"}},
      {"%", {"__mod__", "__rmod__", "__imod__"}},
      {"**", {"__pow__", "__rpow__", "__ipow__"}},
      {"@", {"__matmul__", "__rmatmul__", "__imatmul__"}},
      {"<<", {"__lshift__", "__rlshift__", "__ilshift__"}},
      {">>", {"__rshift__", "__rrshift__", "__irshift__"}},
      {"&", {"__and__", "__rand__", "__iand__"}},
      {"|", {"__or__", "__ror__", "__ior__"}},
      {"^", {"__xor__", "__rxor__", "__ixor__"}},
      {"<", {"__lt__", "__gt__", nullptr}},
      {"<=", {"__le__", "__ge__", nullptr}},
      {">", {"__gt__", "__lt__", nullptr}},
      {">=", {"__ge__", "__le__", nullptr}},
      {"==", {"__eq__", "__eq__", nullptr}},
      {"!=", {"__ne__", "__ne__", nullptr}}};
  std::string s = sym;
  bool inplace =
      s.size() > 1 && s.back() == '=' && s != "==" && s != "!=" && s != "<=" && s != ">=";
  if (inplace)
    s.pop_back();
  auto it = table.find(s);
  if (it == table.end())
    return std::nullopt;
  Dunders d = it->second;
  if (!inplace)
    d.iop = nullptr;
  return d;
}

bool isNotImplemented(const VarP &v) { return v->isConst() && v->obj.get() == Py_NotImplemented; }

} // namespace

VarP Interpreter::objectDunder(const VarP &self, const char *name, const VarP &other) {
  auto *t = reinterpret_cast<PyTypeObject *>(self->obj.get());
  PyRef key = PyRef::steal(PyUnicode_InternFromString(name));
  PyObject *fn = _PyType_Lookup(t, key.get()); // borrowed
  if (!fn)
    return nullptr;
  if (fn == PyDict_GetItemString(PyBaseObject_Type.tp_dict, name))
    return nullptr; // object's default (== by identity, handled by the caller)
  if (!PyFunction_Check(fn))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      std::string(name) + " of " + pyText(self->obj.get()) + " is not Python code");
  // The method is guarded (monkeypatching the class recompiles).
  int typeSrc = out_.sources.add(Source::Kind::Constant, -1, 0, self->obj.get());
  guardValue(makeConst(PyRef::borrow(fn),
                       out_.sources.add(Source::Kind::TypeLookup, typeSrc, 0, key.get())));
  keepAlive_.push_back(PyRef::borrow(fn));
  std::vector<VarP> args{self, other};
  std::map<std::string, VarP> kwargs;
  return inlineFunction(fn, -1, args, kwargs);
}

VarP Interpreter::objectOperator(const std::string &sym, const VarP &lhs, const VarP &rhs) {
  bool lObj = lhs->kind == Var::Kind::Object, rObj = rhs->kind == Var::Kind::Object;
  if (!lObj && !rObj)
    return nullptr;
  std::optional<Dunders> d = dundersOf(sym);
  if (!d)
    throw Unsupported(BreakCategory::PythonBuiltin, "operator " + sym + " on a user object");
  if (d->iop && lObj) // a += b: __iadd__ first
    if (VarP r = objectDunder(lhs, d->iop, rhs); r && !isNotImplemented(r))
      return r;
  // The reflected method of a subclass of the left operand's class comes
  // first; then the left operand's, then the right operand's reflected one.
  bool sameType = lObj && rObj && lhs->obj.get() == rhs->obj.get();
  bool rFirst = lObj && rObj && !sameType &&
                PyType_IsSubtype(reinterpret_cast<PyTypeObject *>(rhs->obj.get()),
                                 reinterpret_cast<PyTypeObject *>(lhs->obj.get()));
  if (rFirst)
    if (VarP r = objectDunder(rhs, d->rop, lhs); r && !isNotImplemented(r))
      return r;
  if (lObj)
    if (VarP r = objectDunder(lhs, d->op, rhs); r && !isNotImplemented(r))
      return r;
  // Comparisons try the reflected method of the same class too.
  bool comparison =
      sym == "<" || sym == "<=" || sym == ">" || sym == ">=" || sym == "==" || sym == "!=";
  if (rObj && (!sameType || comparison) && !rFirst)
    if (VarP r = objectDunder(rhs, d->rop, lhs); r && !isNotImplemented(r))
      return r;
  if (sym == "!=") { // object.__ne__: the inverse of __eq__
    VarP eq = objectOperator("==", lhs, rhs);
    return makeConst(PyRef::borrow(truthy(eq) ? Py_False : Py_True));
  }
  if (sym == "==") { // object's default: identity
    bool same = lhs.get() == rhs.get();
    return makeConst(PyRef::borrow(same ? Py_True : Py_False));
  }
  if (!lObj && (lhs->isTensor() || !lhs->isConst()))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "operator " + sym + " between a user object and a value kiln does not track");
  throw Unsupported(BreakCategory::UserError,
                    "unsupported operand type(s) for " + sym + " (a user object)",
                    hint::kRaisesInEager);
}

VarP Interpreter::callFunctional(const VarP &callee, PyObject *fn, std::vector<VarP> &args,
                                 std::map<std::string, VarP> &kwargs) {
  static PyOnce partialOnce, reduceOnce, lruOnce, combOnce, permOnce, sortedOnce, minOnce, maxOnce;
  PyObject *partialType = partialOnce.get([] { return stdlibAttr("functools", "partial"); });
  PyObject *reduceFn = reduceOnce.get([] { return stdlibAttr("functools", "reduce"); });
  PyObject *lruType = lruOnce.get([] { return stdlibAttr("functools", "_lru_cache_wrapper"); });
  PyObject *combinations = combOnce.get([] { return stdlibAttr("itertools", "combinations"); });
  PyObject *permutations = permOnce.get([] { return stdlibAttr("itertools", "permutations"); });
  PyObject *sortedFn = sortedOnce.get([] { return stdlibAttr("builtins", "sorted"); });
  PyObject *minFn = minOnce.get([] { return stdlibAttr("builtins", "min"); });
  PyObject *maxFn = maxOnce.get([] { return stdlibAttr("builtins", "max"); });
  if (fn == partialType)
    return makePartial(args, kwargs);
  if (partialType && Py_TYPE(fn) == reinterpret_cast<PyTypeObject *>(partialType))
    return callPartial(callee, args, kwargs);
  if (fn == reduceFn)
    return functoolsReduce(args, kwargs);
  if (lruType && Py_TYPE(fn) == reinterpret_cast<PyTypeObject *>(lruType))
    return callLruCached(callee, fn, args, kwargs);
  if (fn == combinations || fn == permutations)
    return itertoolsCombinatoric(fn == permutations, args, kwargs);
  if (fn == sortedFn || fn == minFn || fn == maxFn)
    return callWithKey(fn == sortedFn ? "sorted" : fn == minFn ? "min" : "max", args, kwargs);
  if (PyCFunction_Check(fn) && !PyType_Check(fn)) {
    PyObject *self = PyCFunction_GET_SELF(fn);
    if (self && PyModule_Check(self) && std::string(PyModule_GetName(self)) == "_operator")
      return callOperatorModule(fn, args, kwargs);
  }
  return nullptr;
}

VarP Interpreter::callOperatorModule(PyObject *fn, std::vector<VarP> &args,
                                     std::map<std::string, VarP> &kwargs) {
  std::string name = reinterpret_cast<PyCFunctionObject *>(fn)->m_ml->ml_name;
  auto sym = operatorSymbols().find(name);
  bool known = sym != operatorSymbols().end() || name == "getitem" || name == "neg";
  if (!known)
    return nullptr; // evaluated on constants (operator.index ...) or a break
  size_t arity = name == "neg" ? 1 : 2;
  if (args.size() != arity || !kwargs.empty())
    throw Unsupported(BreakCategory::UserError, "operator." + name + ": unexpected arguments",
                      hint::kRaisesInEager);
  if (name == "getitem")
    return subscript(args[0], args[1]);
  if (name == "neg") {
    if (args[0]->isTensor()) {
      std::vector<VarP> none;
      std::map<std::string, VarP> nokw;
      return callTensorMethod(args[0], "neg", none, nokw);
    }
    PyRef r = PyRef::steal(PyNumber_Negative(constObj(args[0], "operand")));
    if (!r)
      throw Unsupported(BreakCategory::UserError, withPythonError("operator.neg raised"),
                        hint::kRaisesInEager);
    return makeConst(r);
  }
  return OpcodeHandlers::applyOperator(*this, sym->second, args[0], args[1]);
}

VarP Interpreter::functoolsReduce(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  if (args.size() < 2 || args.size() > 3 || !kwargs.empty())
    throw Unsupported(BreakCategory::UserError, "functools.reduce: unexpected arguments",
                      hint::kRaisesInEager);
  std::vector<VarP> items = iterItems(args[1]);
  size_t start = 0;
  VarP acc = args.size() == 3 ? args[2] : nullptr;
  if (!acc) {
    if (items.empty())
      throw Unsupported(BreakCategory::UserError,
                        "reduce() of empty iterable with no initial value", hint::kRaisesInEager);
    acc = items[start++];
  }
  for (size_t i = start; i < items.size(); ++i) {
    std::vector<VarP> pair{acc, items[i]};
    std::map<std::string, VarP> none;
    acc = call(args[0], pair, none);
  }
  return acc;
}

VarP Interpreter::makePartial(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  if (args.empty())
    throw Unsupported(BreakCategory::UserError, "functools.partial() needs a callable",
                      hint::kRaisesInEager);
  // Built now when every piece is a constant (a torch function with fixed
  // keywords, say); its call unwraps it (callPartial).
  PyRef tuple = PyRef::steal(PyTuple_New(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    PyRef c = seqAsConst(args[i]);
    if (!c && !args[i]->isConst())
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "functools.partial of a value that is not a Python constant");
    PyObject *o = c ? c.release() : (Py_INCREF(args[i]->obj.get()), args[i]->obj.get());
    PyTuple_SET_ITEM(tuple.get(), i, o);
  }
  PyRef kw = PyRef::steal(PyDict_New());
  for (auto &[k, v] : kwargs) {
    PyRef c = seqAsConst(v);
    if (!c && !v->isConst())
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "functools.partial with a keyword that is not a Python constant");
    PyDict_SetItemString(kw.get(), k.c_str(), c ? c.get() : v->obj.get());
  }
  static PyOnce partialOnce;
  PyObject *partialType = partialOnce.get([] { return stdlibAttr("functools", "partial"); });
  PyRef p = PyRef::steal(PyObject_Call(partialType, tuple.get(), kw.get()));
  if (!p)
    throw Unsupported(BreakCategory::UserError, withPythonError("functools.partial() raised"),
                      hint::kRaisesInEager);
  keepAlive_.push_back(p);
  return makeConst(p);
}

VarP Interpreter::callPartial(const VarP &callee, std::vector<VarP> &args,
                              std::map<std::string, VarP> &kwargs) {
  // partial(f, *a, **k)(*b, **l) is f(*a, *b, **{**k, **l}); a partial of
  // the frame is read (and guarded) through its source.
  VarP p = sourceOf(callee) >= 0 && callee->source < 0 ? makeConst(callee->obj, sourceOf(callee))
                                                       : callee;
  auto attr = [&](const char *name) {
    PyRef key = PyRef::steal(PyUnicode_FromString(name));
    if (p->source >= 0)
      return loadAttr(p, key.get());
    PyRef v = PyRef::steal(PyObject_GetAttr(p->obj.get(), key.get()));
    if (!v)
      throw Unsupported(withPythonError("functools.partial without ." + std::string(name)));
    keepAlive_.push_back(v);
    return makeConst(v);
  };
  VarP func = attr("func");
  std::vector<VarP> all = iterItems(attr("args"));
  all.insert(all.end(), args.begin(), args.end());
  std::map<std::string, VarP> kw;
  for (auto &[k, v] : dictItems(attr("keywords")))
    kw[pyText(k.get())] = v;
  for (auto &[k, v] : kwargs)
    kw[k] = v;
  return call(func, all, kw);
}

VarP Interpreter::callLruCached(const VarP &callee, PyObject *wrapper, std::vector<VarP> &args,
                                std::map<std::string, VarP> &kwargs) {
  // The cache is skipped and the wrapped function inlined (as Dynamo does):
  // the result is the same for a pure function. Its arguments must be
  // hashable (eager raises otherwise), and a side effect (a mutation, a
  // random op) would run on every call where eager runs it once per key.
  PyRef key = PyRef::steal(PyUnicode_FromString("__wrapped__"));
  PyRef wrapped = PyRef::steal(PyObject_GetAttr(wrapper, key.get()));
  if (!wrapped || !PyFunction_Check(wrapped.get())) {
    PyErr_Clear();
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "call to " + pyText(wrapper) + ": the cached function is not Python code");
  }
  auto hashable = [&](const VarP &v) {
    if (v->isTensor() || v->kind == Var::Kind::SymInt)
      return true;
    PyRef c = seqAsConst(v);
    PyObject *o = c ? c.get() : v->isConst() ? v->obj.get() : nullptr;
    if (!o || (c && PyList_Check(o)))
      return false;
    pinPlainObjectsIn(o, "it is hashed at capture");
    bool ok = PyObject_Hash(o) != -1;
    PyErr_Clear();
    return ok;
  };
  for (const VarP &a : args)
    if (!hashable(a))
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "call to " + pyText(wrapper) + " with an argument kiln cannot hash");
  for (auto &[k, v] : kwargs)
    if (!hashable(v))
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "call to " + pyText(wrapper) + " with an argument kiln cannot hash");
  VarP fnVar =
      sourceOf(callee) >= 0
          ? loadAttr(callee->source >= 0 ? callee : makeConst(callee->obj, sourceOf(callee)),
                     key.get())
          : makeConst(wrapped);
  keepAlive_.push_back(wrapped);
  size_t effects = out_.effects.size();
  int64_t streams = randomStreams_;
  size_t fallbacks = out_.fallbacks.size();
  VarP r = call(fnVar, args, kwargs);
  if (out_.effects.size() != effects || randomStreams_ != streams)
    throw Unsupported(BreakCategory::SideEffect,
                      "a function behind functools.lru_cache has side effects (eager runs them "
                      "once per key)");
  if (out_.fallbacks.size() != fallbacks)
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "a function behind functools.lru_cache runs torch ops kiln does not lower");
  return r;
}

VarP Interpreter::callWithKey(const std::string &name, std::vector<VarP> &args,
                              std::map<std::string, VarP> &kwargs) {
  auto keyIt = kwargs.find("key");
  VarP key = keyIt == kwargs.end() ? nullptr : keyIt->second;
  if (key && key->isConst() && key->obj.get() == Py_None)
    key = nullptr;
  if (!key || args.size() != 1)
    return nullptr; // evaluated on constants (PythonBuiltins.cpp), or a break there
  bool reverse = false;
  for (auto &[k, v] : kwargs) {
    if (k == "key")
      continue;
    if (k == "reverse" && name == "sorted") {
      int r = PyObject_IsTrue(constObj(v, "sorted(reverse=)"));
      if (r < 0)
        throw Unsupported(BreakCategory::UserError, withPythonError("sorted(reverse=) raised"));
      reverse = r == 1;
      continue;
    }
    return nullptr; // min/max(default=): evaluated on constants, or a break there
  }
  std::vector<VarP> items = iterItems(args[0]);
  std::vector<PyRef> keys;
  for (const VarP &item : items) {
    std::vector<VarP> one{item};
    std::map<std::string, VarP> none;
    VarP k = call(key, one, none);
    PyRef c = seqAsConst(k);
    keys.push_back(c ? c : PyRef::borrow(constObj(k, "sort key")));
  }
  auto less = [&](size_t a, size_t b) {
    int r = PyObject_RichCompareBool(keys[a].get(), keys[b].get(), Py_LT);
    if (r < 0)
      throw Unsupported(BreakCategory::UserError, withPythonError(name + "() compared keys"),
                        hint::kRaisesInEager);
    return r == 1;
  };
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  if (name == "sorted") {
    // Python's sort is stable, and reverse=True keeps equal keys in order.
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return reverse ? less(b, a) : less(a, b); });
    std::vector<VarP> out;
    for (size_t i : order)
      out.push_back(items[i]);
    return makeSeq(Var::Kind::List, out);
  }
  if (items.empty())
    throw Unsupported(BreakCategory::UserError, name + "() arg is an empty sequence",
                      hint::kRaisesInEager);
  size_t best = 0; // the first minimal/maximal item, as in Python
  for (size_t i = 1; i < items.size(); ++i)
    if (name == "min" ? less(i, best) : less(best, i))
      best = i;
  return items[best];
}

VarP Interpreter::itertoolsCombinatoric(bool permutations, std::vector<VarP> &args,
                                        std::map<std::string, VarP> &kwargs) {
  const char *what = permutations ? "itertools.permutations()" : "itertools.combinations()";
  VarP rVar = args.size() > 1 ? args[1] : kwargs.count("r") ? kwargs["r"] : nullptr;
  if (args.empty() || args.size() > 2 || kwargs.size() > (kwargs.count("r") ? 1u : 0u) ||
      (!permutations && !rVar))
    throw Unsupported(BreakCategory::UserError, std::string(what) + ": unexpected arguments",
                      hint::kRaisesInEager);
  std::vector<VarP> pool = iterItems(args[0]);
  long n = static_cast<long>(pool.size());
  long r = n;
  if (rVar && !(rVar->isConst() && rVar->obj.get() == Py_None)) {
    r = PyLong_AsLong(constObj(rVar, "r"));
    if (r == -1 && PyErr_Occurred())
      throw Unsupported(BreakCategory::UserError, withPythonError("r must be an int"),
                        hint::kRaisesInEager);
  }
  if (r < 0)
    throw Unsupported(BreakCategory::UserError, "r must be non-negative", hint::kRaisesInEager);
  // Index tuples in lexicographic order (itertools' order), built by
  // extending every prefix with the indices it may take next.
  std::vector<std::vector<long>> tuples{{}};
  for (long depth = 0; depth < r; ++depth) {
    std::vector<std::vector<long>> next;
    for (const auto &t : tuples) {
      long from = permutations || t.empty() ? 0 : t.back() + 1;
      for (long i = from; i < n; ++i)
        if (!permutations || std::find(t.begin(), t.end(), i) == t.end()) {
          next.push_back(t);
          next.back().push_back(i);
        }
    }
    tuples = std::move(next);
    if (tuples.size() > 10000)
      throw Unsupported(BreakCategory::PythonBuiltin,
                        std::string(what) + " is too large to unroll");
  }
  std::vector<VarP> out;
  for (const auto &t : tuples) {
    std::vector<VarP> items;
    for (long i : t)
      items.push_back(pool[i]);
    out.push_back(makeSeq(Var::Kind::Tuple, items));
  }
  return makeSeq(Var::Kind::Iter, out);
}

} // namespace kiln

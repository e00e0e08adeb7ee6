//===- Collections.cpp - set, dict, OrderedDict and defaultdict in capture ---===//
// SPDX-License-Identifier: Apache-2.0
//
// Containers made by calls rather than by BUILD_* opcodes: set()/frozenset()
// of constants (a constant set; a set returned is a copy per call,
// Capture.cpp), dict(...)/OrderedDict(...)/defaultdict(factory, ...) as a
// Dict Var (`dictType` the collections class, a defaultdict's factory in
// `self`), and the mutating methods of dicts and lists built in the frame
// (update, setdefault, clear, copy; list.clear). A defaultdict's missing key
// runs its factory and stores the value, as __missing__ does. A returned
// OrderedDict is rebuilt as one; a defaultdict that escapes is a break.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "capture/values/Deques.h"
#include "capture/values/IdentitySets.h"

namespace kiln {
namespace {

/// A Python set/frozenset of the constants in `items` (Unsupported when an
/// item is not a hashable constant).
PyRef constantSet(const std::vector<VarP> &items, bool frozen) {
  PyRef s = PyRef::steal(frozen ? PyFrozenSet_New(nullptr) : PySet_New(nullptr));
  for (const VarP &v : items) {
    if (!v->isConst() || !pureConstant(v->obj.get()))
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "a set of values that are not plain constants (tensors, objects with "
                        "their own __hash__) is not supported");
    if (PySet_Add(s.get(), v->obj.get()) < 0)
      throw Unsupported(BreakCategory::UserError, withPythonError("set() raised"),
                        hint::kRaisesInEager);
  }
  return s;
}

} // namespace

VarP Interpreter::builtinSet(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  if (args.size() > 1 || !kwargs.empty())
    throw Unsupported(BreakCategory::UserError, "set() takes at most one argument",
                      hint::kRaisesInEager);
  std::vector<VarP> items = args.empty() ? std::vector<VarP>{} : iterItems(args[0]);
  if (VarP tensors = makeIdentitySet(items, false)) // IdentitySets.h
    return tensors;
  PyRef s = constantSet(items, false);
  noteFresh(s); // mutated on the object (ContainerMethods.cpp)
  return makeConst(s);
}

VarP Interpreter::builtinFrozenset(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  if (args.size() > 1 || !kwargs.empty())
    throw Unsupported(BreakCategory::UserError, "frozenset() takes at most one argument",
                      hint::kRaisesInEager);
  std::vector<VarP> items = args.empty() ? std::vector<VarP>{} : iterItems(args[0]);
  if (VarP tensors = makeIdentitySet(items, true)) // IdentitySets.h
    return tensors;
  PyRef s = constantSet(items, true);
  keepAlive_.push_back(s);
  return makeConst(s);
}

VarP Interpreter::builtinDict(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  if (args.size() > 1)
    throw Unsupported(BreakCategory::UserError, "dict() takes at most one positional argument",
                      hint::kRaisesInEager);
  auto d = std::make_shared<Var>();
  d->kind = Var::Kind::Dict;
  if (!args.empty()) {
    const VarP &src = args[0];
    bool mapping = src->kind == Var::Kind::Dict || (src->isConst() && PyDict_Check(src->obj.get()));
    if (mapping) {
      for (auto &[k, v] : dictItems(src))
        dictSet(d, k.get(), v);
    } else {
      for (const VarP &pair : iterItems(src)) {
        std::vector<VarP> kv = iterItems(pair);
        if (kv.size() != 2)
          throw Unsupported(BreakCategory::UserError,
                            "dict() sequence element does not have length 2", hint::kRaisesInEager);
        dictSet(d, constObj(kv[0], "dict key"), kv[1]);
      }
    }
  }
  std::vector<std::string> keys;
  for (auto &[k, v] : kwargs)
    keys.push_back(k);
  for (const std::string &k : callOrder(keys, "dict(**kwargs)")) {
    PyRef key = PyRef::steal(PyUnicode_FromString(k.c_str()));
    dictSet(d, key.get(), kwargs[k]);
  }
  return d;
}

VarP Interpreter::makeOrderedDict(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  PyRef collections = PyRef::steal(PyImport_ImportModule("collections"));
  VarP d = builtinDict(args, kwargs);
  d->dictType = PyRef::steal(PyObject_GetAttrString(collections.get(), "OrderedDict"));
  return d;
}

VarP Interpreter::makeDefaultDict(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  VarP factory = args.empty() ? makeConst(PyRef::borrow(Py_None)) : args[0];
  std::vector<VarP> rest(args.empty() ? args.end() : args.begin() + 1, args.end());
  PyRef collections = PyRef::steal(PyImport_ImportModule("collections"));
  VarP d = builtinDict(rest, kwargs);
  d->dictType = PyRef::steal(PyObject_GetAttrString(collections.get(), "defaultdict"));
  d->self = factory;
  return d;
}

VarP Interpreter::defaultDictMissing(const VarP &d, PyObject *key) {
  if (!d->dictType || !d->self || (d->self->isConst() && d->self->obj.get() == Py_None))
    return nullptr;
  std::vector<VarP> none;
  std::map<std::string, VarP> noKw;
  VarP v = call(d->self, none, noKw);
  dictSet(d, key, v);
  return v;
}

VarP Interpreter::callContainerMethod(const VarP &c, const std::string &name,
                                      std::vector<VarP> &args,
                                      std::map<std::string, VarP> &kwargs) {
  if (isIdentitySet(c)) // a set of tensors (IdentitySets.h)
    return identitySetMethod(c, name, args, kwargs);
  if (isDeque(c)) // Deques.h
    return dequeMethod(c, name, args, kwargs, [this](const VarP &v) { return iterItems(v); });
  bool built = c->source < 0 && !c->mutatedContainer; // not the caller's container
  if (c->kind == Var::Kind::List && name == "clear") {
    if (!args.empty() || !kwargs.empty())
      throw Unsupported(BreakCategory::UserError, "list.clear() takes no arguments",
                        hint::kRaisesInEager);
    if (!built)
      throw Unsupported(BreakCategory::SideEffect, "list.clear() of the caller's list");
    c->items.clear();
    return makeConst(PyRef::borrow(Py_None));
  }
  if (c->kind == Var::Kind::List)
    return listMethod(c, name, args, kwargs); // ContainerMethods.cpp
  if (c->kind != Var::Kind::Dict || c->obj)
    return nullptr;
  if (!built && name == "pop")
    return callerDictPop(c, args, kwargs); // replayed (ContainerMethods.cpp)
  bool reads =
      name == "copy" || name == "get" || name == "keys" || name == "values" || name == "items";
  if (!built && !reads)
    throw Unsupported(BreakCategory::SideEffect, "dict." + name + "() of the caller's dict");
  if (VarP r = dictMethod(c, name, args, kwargs))
    return r;
  if (name == "update") {
    VarP merged = builtinDict(args, kwargs);
    for (size_t i = 0; i < merged->keys.size(); ++i)
      dictSet(c, merged->keys[i].get(), merged->items[i]);
    return makeConst(PyRef::borrow(Py_None));
  }
  if (name == "setdefault") {
    if (args.empty() || args.size() > 2 || !kwargs.empty())
      throw Unsupported(BreakCategory::UserError, "setdefault expects 1 or 2 arguments",
                        hint::kRaisesInEager);
    PyObject *key = constObj(args[0], "dict key");
    int at = dictFind(c, key);
    if (at >= 0)
      return c->items[at];
    VarP v = args.size() == 2 ? args[1] : makeConst(PyRef::borrow(Py_None));
    dictSet(c, key, v);
    return v;
  }
  if (name == "clear") {
    c->keys.clear();
    c->items.clear();
    return makeConst(PyRef::borrow(Py_None));
  }
  if (name == "copy") {
    auto d = std::make_shared<Var>();
    d->kind = Var::Kind::Dict;
    d->keys = c->keys;
    d->items = c->items;
    d->dictType = c->dictType;
    d->self = c->self;
    return d;
  }
  return nullptr;
}

} // namespace kiln

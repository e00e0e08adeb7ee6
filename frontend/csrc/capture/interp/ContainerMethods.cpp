//===- ContainerMethods.cpp - list/dict/set methods and item deletion ------===//
// SPDX-License-Identifier: Apache-2.0
//
// The container operations beyond building and appending (Containers.cpp,
// Collections.cpp, SideEffects.cpp):
//  - methods of List/Dict Vars built in the frame: list index/count/copy/
//    sort/reverse/remove, dict popitem and OrderedDict.move_to_end, `del`
//    of items and slices, slice assignment, dict `|` and `|=`, list `+=`;
//  - containers made at capture time as Python objects (list(x.shape),
//    sorted(...), set literals of constants: "fresh" constants, registered
//    in Interpreter::fresh_ when nothing else references them): their
//    methods and item stores run on the object itself at capture when every
//    argument is a constant (a returned or live one is copied per call,
//    Capture.cpp / BreakState.cpp), so aliases of them stay right;
//  - `dict.pop` and `del d[k]` on a dict of the caller: replayed after the
//    graph (SideEffect::DelItem), the key's absence guarded.
// Anything else on a container (a mutation of the caller's list other than
// append/extend/insert/pop, a tensor compared by ==) is a graph break.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "capture/interp/PlainObjects.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace kiln {
namespace {

VarP noneVar() { return makeConst(PyRef::borrow(Py_None)); }

} // namespace

bool pureConstant(PyObject *o, int depth) {
  if (PyFunction_Check(o) || PyMethod_Check(o) || depth > 8)
    return false;
  PyTypeObject *t = Py_TYPE(o);
  if (PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE) &&
      (t->tp_richcompare != PyBaseObject_Type.tp_richcompare ||
       t->tp_hash != PyBaseObject_Type.tp_hash))
    return false; // its own __eq__/__hash__/__lt__ would run Python code at capture
  if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i)
      if (!pureConstant(PySequence_Fast_ITEMS(o)[i], depth + 1))
        return false;
  } else if (PyDict_CheckExact(o)) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &k, &v))
      if (!pureConstant(k, depth + 1) || !pureConstant(v, depth + 1))
        return false;
  } else if (PyAnySet_CheckExact(o)) {
    PyRef items = PyRef::steal(PySequence_Tuple(o));
    return items && pureConstant(items.get(), depth + 1);
  }
  return true;
}

namespace {

/// Throws unless `v` is a constant whose comparisons and hash run no Python code.
PyObject *pureObj(const VarP &v, const std::string &what) {
  PyObject *o = constObj(v, what.c_str());
  if (!pureConstant(o))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      what + " on a value whose ==, < or hash is Python code (or a function)");
  pinPlainObject(o, "a list method compares it"); // by identity (object.__eq__)
  return o;
}

/// The constants `items` as a new Python list (Unsupported when one is not
/// a constant: a tensor is compared by ==, which is data).
PyRef constList(const std::vector<VarP> &items, const std::string &what) {
  PyRef list = PyRef::steal(PyList_New((Py_ssize_t)items.size()));
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i]->isConst())
      throw Unsupported(BreakCategory::PythonBuiltin,
                        what + " on a list holding tensors or other non-constants (== on "
                               "tensors is data-dependent)");
    PyObject *o = pureObj(items[i], what);
    Py_INCREF(o);
    PyList_SET_ITEM(list.get(), (Py_ssize_t)i, o);
  }
  return list;
}

/// Runs `method` of Python list `list` with constant `args`; the result.
PyRef runListMethod(PyObject *list, const char *method, const std::vector<VarP> &args,
                    const std::map<std::string, VarP> &kwargs, const std::string &what) {
  PyRef fn = PyRef::steal(PyObject_GetAttrString(list, method));
  for (const VarP &a : args)
    pureObj(a, what);
  PyRef t = constTuple(args, what.c_str());
  PyRef kw = PyRef::steal(PyDict_New());
  for (auto &[k, v] : kwargs)
    PyDict_SetItemString(kw.get(), k.c_str(), constObj(v, what.c_str()));
  PyRef r = fn ? PyRef::steal(PyObject_Call(fn.get(), t.get(), kw.get())) : PyRef();
  if (!r)
    throw Unsupported(BreakCategory::UserError, withPythonError(what + " raised"),
                      hint::kRaisesInEager);
  return r;
}

bool isMutableContainer(PyObject *o) {
  return PyList_CheckExact(o) || PyDict_CheckExact(o) || PySet_CheckExact(o);
}

} // namespace

void Interpreter::noteFresh(const PyRef &o) {
  // One reference (ours): nothing else holds the container just made.
  if (o && isMutableContainer(o.get()) && Py_REFCNT(o.get()) == 1) {
    fresh_.insert(o.get());
    keepAlive_.push_back(o);
  }
}

bool Interpreter::isFresh(const VarP &v) const {
  return v->isConst() && v->source < 0 && fresh_.count(v->obj.get()) > 0;
}

VarP Interpreter::freshMethod(const VarP &c, PyObject *descr, std::vector<VarP> &args,
                              std::map<std::string, VarP> &kwargs) {
  if (!isFresh(c))
    return nullptr;
  std::string name = pyText(PyDescr_NAME(descr));
  std::string what = std::string(Py_TYPE(c->obj.get())->tp_name) + "." + name + "()";
  for (const VarP &a : args)
    if (!a->isConst() && !seqAsConst(a))
      throw Unsupported(BreakCategory::SideEffect,
                        what + " with a tensor or a container built in the frame, on a "
                               "container made at capture time, is not supported");
  std::vector<VarP> consts;
  for (const VarP &a : args) // a tuple/list of constants built here is read as one
    consts.push_back(a->isConst() ? a : makeConst(seqAsConst(a)));
  PyRef all = PyRef::steal(PyTuple_New((Py_ssize_t)consts.size() + 1));
  Py_INCREF(c->obj.get());
  PyTuple_SET_ITEM(all.get(), 0, c->obj.get());
  for (size_t i = 0; i < consts.size(); ++i) {
    PyObject *o = pureObj(consts[i], what);
    Py_INCREF(o);
    PyTuple_SET_ITEM(all.get(), (Py_ssize_t)i + 1, o);
  }
  PyRef kw = PyRef::steal(PyDict_New());
  for (auto &[k, v] : kwargs) {
    PyObject *o = constObj(v, what.c_str()); // sort(key=len): a builtin key only
    if (!PyCFunction_Check(o) && !PyType_Check(o) && Py_TYPE(o) != &PyMethodDescr_Type)
      pureObj(v, what);
    PyDict_SetItemString(kw.get(), k.c_str(), o);
  }
  PyRef r = PyRef::steal(PyObject_Call(descr, all.get(), kw.get()));
  if (!r)
    throw Unsupported(BreakCategory::UserError, withPythonError(what + " raised"),
                      hint::kRaisesInEager);
  noteFresh(r); // copy(), union() ...: a new container
  keepAlive_.push_back(r);
  return makeConst(r);
}

bool Interpreter::storeFresh(const VarP &c, const VarP &key, const VarP *value) {
  if (!isFresh(c))
    return false;
  if (value && !(*value)->isConst())
    throw Unsupported(BreakCategory::SideEffect,
                      "storing a tensor or a container built in the frame into a list/dict made "
                      "at capture time is not supported");
  PyObject *o = c->obj.get(), *k = pureObj(key, "subscript");
  if (value)
    pureObj(*value, "stored value");
  int rc = value ? PyObject_SetItem(o, k, (*value)->obj.get()) : PyObject_DelItem(o, k);
  if (rc < 0)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError(value ? "item assignment raised" : "del raised"),
                      hint::kRaisesInEager);
  return true;
}

VarP containerMethodVar(const VarP &obj, const std::string &attr) {
  static const std::set<std::string> dictMethods = {
      "items",      "keys",  "values", "get",     "pop",        "update", // no Python
      "setdefault", "clear", "copy",   "popitem", "move_to_end"};
  static const std::set<std::string> listMethods = {
      "append", "extend", "insert", "pop",     "clear", "index", // no Python
      "count",  "copy",   "sort",   "reverse", "remove"};
  bool ok = (obj->kind == Var::Kind::Dict && dictMethods.count(attr)) ||
            (obj->kind == Var::Kind::List && listMethods.count(attr));
  if (!ok)
    return nullptr;
  auto m = std::make_shared<Var>();
  m->kind = Var::Kind::ListMethod;
  m->self = obj;
  m->name = attr;
  return m;
}

VarP Interpreter::listMethod(const VarP &list, const std::string &name, std::vector<VarP> &args,
                             std::map<std::string, VarP> &kwargs) {
  if (name != "copy" && name != "index" && name != "count" && name != "reverse" &&
      name != "remove" && name != "sort")
    return nullptr; // append/extend/insert/pop/clear: Collections.cpp, SideEffects.cpp
  std::string what = "list." + name + "()";
  auto &items = list->items;
  if (name == "copy") {
    if (!args.empty() || !kwargs.empty())
      throw Unsupported(BreakCategory::UserError, what + " takes no arguments",
                        hint::kRaisesInEager);
    return makeSeq(Var::Kind::List, items);
  }
  if (name == "index" || name == "count") {
    PyRef py = constList(items, what);
    PyRef r = runListMethod(py.get(), name.c_str(), args, kwargs, what);
    keepAlive_.push_back(r);
    return makeConst(r);
  }
  bool built = list->source < 0 && !list->mutatedContainer;
  if (!built)
    throw Unsupported(BreakCategory::SideEffect, what + " of the caller's list");
  if (name == "reverse") {
    if (!args.empty() || !kwargs.empty())
      throw Unsupported(BreakCategory::UserError, what + " takes no arguments",
                        hint::kRaisesInEager);
    std::reverse(items.begin(), items.end());
    return noneVar();
  }
  if (name == "remove") {
    PyRef py = constList(items, what);
    PyRef at = runListMethod(py.get(), "index", args, kwargs, "list.remove()");
    items.erase(items.begin() + PyLong_AsLong(at.get()));
    return noneVar();
  }
  if (name == "sort") {
    // Sorted as constants; the Vars are permuted like the Python objects
    // (list.sort is stable, with and without reverse).
    if (!args.empty())
      throw Unsupported(BreakCategory::UserError, "list.sort() takes no positional arguments",
                        hint::kRaisesInEager);
    PyRef py = constList(items, what);
    PyRef order = PyRef::steal(PyList_New((Py_ssize_t)items.size()));
    for (size_t i = 0; i < items.size(); ++i)
      PyList_SET_ITEM(order.get(), (Py_ssize_t)i, PyLong_FromSize_t(i));
    std::map<std::string, VarP> kw = kwargs;
    PyObject *keyFn = kw.count("key") ? constObj(kw["key"], "list.sort key") : Py_None;
    PyRef keys = py; // sorted by key(item): only a builtin key (no Python code at capture)
    if (keyFn != Py_None) {
      if (!PyCFunction_Check(keyFn) && !PyType_Check(keyFn) &&
          Py_TYPE(keyFn) != &PyMethodDescr_Type)
        throw Unsupported(BreakCategory::PythonBuiltin,
                          "list.sort with a key that is not a builtin function");
      keys = PyRef::steal(PyList_New(PyList_GET_SIZE(py.get())));
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(py.get()); ++i) {
        PyObject *k = PyObject_CallOneArg(keyFn, PyList_GET_ITEM(py.get(), i));
        if (!k)
          throw Unsupported(BreakCategory::UserError, withPythonError("list.sort key raised"),
                            hint::kRaisesInEager);
        PyList_SET_ITEM(keys.get(), i, k);
      }
    }
    kw["key"] = makeConst(PyRef::steal(PyObject_GetAttrString(keys.get(), "__getitem__")));
    keepAlive_.push_back(keys);
    std::vector<VarP> none;
    runListMethod(order.get(), "sort", none, kw, what);
    std::vector<VarP> sorted;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order.get()); ++i)
      sorted.push_back(items[PyLong_AsSize_t(PyList_GET_ITEM(order.get(), i))]);
    items = sorted;
    return noneVar();
  }
  return nullptr;
}

VarP Interpreter::dictMethod(const VarP &d, const std::string &name, std::vector<VarP> &args,
                             std::map<std::string, VarP> &kwargs) {
  bool ordered = d->dictType && !d->self; // an OrderedDict (a defaultdict has a factory)
  if (name == "popitem") {
    // dict: last in; OrderedDict.popitem(last=False): first in.
    bool last = true;
    if (ordered && (args.size() == 1 || kwargs.count("last")))
      last = truthy(args.size() == 1 ? args[0] : kwargs["last"]);
    else if (!args.empty() || !kwargs.empty())
      throw Unsupported(BreakCategory::UserError, "popitem() takes no arguments",
                        hint::kRaisesInEager);
    if (d->keys.empty())
      throw Unsupported(BreakCategory::UserError, "popitem(): dictionary is empty",
                        hint::kRaisesInEager);
    size_t at = last ? d->keys.size() - 1 : 0;
    VarP pair = makeSeq(Var::Kind::Tuple, {makeConst(d->keys[at]), d->items[at]});
    d->keys.erase(d->keys.begin() + (long)at);
    d->items.erase(d->items.begin() + (long)at);
    return pair;
  }
  if (name == "move_to_end") {
    if (!ordered)
      throw Unsupported(BreakCategory::UserError, "'dict' object has no attribute 'move_to_end'",
                        hint::kRaisesInEager);
    if (args.empty() || args.size() > 2)
      throw Unsupported(BreakCategory::UserError, "move_to_end() takes a key and `last`",
                        hint::kRaisesInEager);
    bool last = args.size() == 2       ? truthy(args[1])
                : kwargs.count("last") ? truthy(kwargs["last"])
                                       : true;
    int at = dictFind(d, constObj(args[0], "dict key"));
    if (at < 0)
      throw Unsupported(BreakCategory::UserError, "move_to_end(): missing key",
                        hint::kRaisesInEager);
    PyRef k = d->keys[at];
    VarP v = d->items[at];
    d->keys.erase(d->keys.begin() + at);
    d->items.erase(d->items.begin() + at);
    d->keys.insert(last ? d->keys.end() : d->keys.begin(), k);
    d->items.insert(last ? d->items.end() : d->items.begin(), v);
    return noneVar();
  }
  return nullptr;
}

VarP Interpreter::callerListSnapshot(const VarP &c) {
  PyObject *o = c->obj.get();
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::List;
  Py_ssize_t n = PyList_GET_SIZE(o);
  guardLength(c->source, n);
  for (Py_ssize_t i = 0; i < n; ++i) // items read (and guarded) where used
    v->items.push_back(
        fromSource(PyList_GET_ITEM(o, i),
                   out_.sources.add(Source::Kind::TupleItem, c->source, (int)i, nullptr)));
  keepAlive_.push_back(c->obj);
  return v;
}

VarP Interpreter::callerRecordSnapshot(const VarP &c) {
  PyObject *o = c->obj.get();
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::Dict;
  v->obj = PyRef::borrow(reinterpret_cast<PyObject *>(Py_TYPE(o))); // a record of this class
  guardLength(c->source, PyDict_GET_SIZE(o));
  PyObject *k, *item;
  Py_ssize_t pos = 0;
  while (PyDict_Next(o, &pos, &k, &item)) {
    v->keys.push_back(PyRef::borrow(k));
    v->items.push_back(fromSource(item, out_.sources.add(Source::Kind::DictItem, c->source, 0, k)));
  }
  keepAlive_.push_back(c->obj);
  return v;
}

VarP Interpreter::callerDictPop(const VarP &d, std::vector<VarP> &args,
                                std::map<std::string, VarP> &kwargs) {
  if (args.empty() || args.size() > 2 || !kwargs.empty())
    throw Unsupported(BreakCategory::UserError, "dict.pop takes one or two arguments",
                      hint::kRaisesInEager);
  PyObject *key = constObj(args[0], "dict key");
  int at = dictFind(d, key);
  if (at < 0) {
    if (args.size() == 1)
      throw Unsupported(BreakCategory::UserError, "dict.pop of a missing key",
                        hint::kRaisesInEager);
    guardNotInDict(d->source, key); // a call with the key recompiles
    return args[1];
  }
  VarP v = d->items[at];
  materializeDeep(v); // read (and guarded) through its source: the key is there
  recordEffect({SideEffect::Kind::DelItem, d->source, PyRef::borrow(key), -1, "dict.pop"},
               noneVar());
  trackContainer(d);
  d->keys.erase(d->keys.begin() + at);
  d->items.erase(d->items.begin() + at);
  return v;
}

void Interpreter::deleteItem(const VarP &container, const VarP &key) {
  if (storeFresh(container, key, nullptr))
    return;
  const VarP &c = container->kind == Var::Kind::List || container->kind == Var::Kind::Dict
                      ? container
                      : containerVar(container);
  PyObject *k = constObj(key, "subscript");
  if (c->kind == Var::Kind::Dict && !c->obj) {
    if (c->source >= 0) {
      std::vector<VarP> args = {key};
      std::map<std::string, VarP> none;
      if (dictFind(c, k) < 0)
        throw Unsupported(BreakCategory::UserError, "del of a missing key", hint::kRaisesInEager);
      callerDictPop(c, args, none);
      return;
    }
    std::vector<VarP> args = {key};
    dictPop(c, args, {});
    return;
  }
  if (c->kind != Var::Kind::List)
    throw Unsupported(BreakCategory::SideEffect, "del of an item of this value is not supported");
  if (c->source >= 0 || c->mutatedContainer) {
    if (!PyLong_CheckExact(k))
      throw Unsupported(BreakCategory::SideEffect, "del of a slice of the caller's list");
    std::vector<VarP> args = {key};
    std::map<std::string, VarP> none;
    listPop(c, args, none); // replayed as a deletion
    return;
  }
  auto &items = c->items;
  Py_ssize_t n = (Py_ssize_t)items.size();
  if (PyLong_CheckExact(k)) {
    Py_ssize_t i = PyLong_AsSsize_t(k);
    if (i < 0)
      i += n;
    if (i < 0 || i >= n)
      throw Unsupported(BreakCategory::UserError, "list assignment index out of range",
                        hint::kRaisesInEager);
    items.erase(items.begin() + i);
    return;
  }
  if (!PySlice_Check(k))
    throw Unsupported(BreakCategory::UserError, "list indices must be integers or slices",
                      hint::kRaisesInEager);
  Py_ssize_t start, stop, step;
  if (PySlice_Unpack(k, &start, &stop, &step) < 0)
    throw Unsupported(BreakCategory::UserError, withPythonError("invalid slice"));
  Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
  std::vector<bool> drop(n, false);
  for (Py_ssize_t j = 0, i = start; j < len; ++j, i += step)
    drop[i] = true;
  std::vector<VarP> kept;
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!drop[i])
      kept.push_back(items[i]);
  items = kept;
}

void Interpreter::storeListSlice(const VarP &list, PyObject *slice, const VarP &value) {
  if (list->source >= 0 || list->mutatedContainer)
    throw Unsupported(BreakCategory::SideEffect, "slice assignment to the caller's list");
  std::vector<VarP> more = iterItems(value);
  auto &items = list->items;
  Py_ssize_t n = (Py_ssize_t)items.size(), start, stop, step;
  if (PySlice_Unpack(slice, &start, &stop, &step) < 0)
    throw Unsupported(BreakCategory::UserError, withPythonError("invalid slice"));
  Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
  if (step == 1) {
    stop = std::max(stop, start);
    items.erase(items.begin() + start, items.begin() + stop);
    items.insert(items.begin() + start, more.begin(), more.end());
    return;
  }
  if ((Py_ssize_t)more.size() != len)
    throw Unsupported(BreakCategory::UserError,
                      "attempt to assign a sequence of the wrong size to an extended slice",
                      hint::kRaisesInEager);
  for (Py_ssize_t j = 0, i = start; j < len; ++j, i += step)
    items[i] = more[j];
}

VarP Interpreter::callContainerDescriptor(PyObject *fn, std::vector<VarP> &args,
                                          std::map<std::string, VarP> &kwargs) {
  if (Py_TYPE(fn) != &PyMethodDescr_Type || args.empty())
    return nullptr;
  PyTypeObject *owner = PyDescr_TYPE(fn);
  if (owner != &PyList_Type && owner != &PyDict_Type && owner != &PySet_Type)
    return nullptr;
  std::vector<VarP> rest(args.begin() + 1, args.end());
  if (isFresh(args[0]))
    return freshMethod(args[0], fn, rest, kwargs);
  std::string name = pyText(PyDescr_NAME(fn));
  const VarP &self = args[0];
  if (owner == &PyDict_Type && name == "pop" && self->isConst() &&
      PyDict_CheckExact(self->obj.get()) && self->source >= 0)
    return callerDictPop(containerVar(self), rest, kwargs); // kwargs.pop("use_cache", True)
  return nullptr;
}

VarP Interpreter::containerOperator(const std::string &sym, const VarP &lhs, const VarP &rhs) {
  bool inplace =
      sym == "|=" || sym == "+=" || sym == "*=" || sym == "&=" || sym == "-=" || sym == "^=";
  // An in-place operator on a mutable container made at capture time: on
  // the object itself (its aliases see it).
  if (inplace && sym == "+=" && lhs->isConst() && PyList_CheckExact(lhs->obj.get()) &&
      lhs->source >= 0)
    containerVar(lhs); // the caller's list: extended below, replayed after the graph
  if (inplace && lhs->isConst() && isMutableContainer(lhs->obj.get())) {
    if (!isFresh(lhs))
      throw Unsupported(BreakCategory::SideEffect,
                        "in-place " + sym + " on a list/dict/set that is not built in the frame");
    PyRef r0 = seqAsConst(rhs);
    PyObject *r = r0 ? r0.get() : constObj(rhs, "operand");
    PyObject *o = lhs->obj.get();
    PyRef res = PyRef::steal(sym == "|="   ? PyNumber_InPlaceOr(o, r)
                             : sym == "+=" ? PyNumber_InPlaceAdd(o, r)
                             : sym == "*=" ? PyNumber_InPlaceMultiply(o, r)
                             : sym == "&=" ? PyNumber_InPlaceAnd(o, r)
                             : sym == "-=" ? PyNumber_InPlaceSubtract(o, r)
                                           : PyNumber_InPlaceXor(o, r));
    if (!res)
      throw Unsupported(BreakCategory::UserError, withPythonError("operator " + sym + " raised"),
                        hint::kRaisesInEager);
    return lhs;
  }
  if (lhs->kind == Var::Kind::List && (sym == "+=" || sym == "*=")) {
    // list += iterable extends the list itself (every alias sees it).
    if (sym == "+=") {
      std::vector<VarP> args = {rhs};
      std::map<std::string, VarP> none;
      listMutation(lhs, "extend", args, none);
      return lhs;
    }
    if (lhs->source >= 0 || lhs->mutatedContainer)
      throw Unsupported(BreakCategory::SideEffect, "list *= on the caller's list");
    PyObject *n = constObj(rhs, "operand");
    if (!PyLong_CheckExact(n))
      throw Unsupported(BreakCategory::UserError, "can't multiply a list by a non-int",
                        hint::kRaisesInEager);
    std::vector<VarP> one = lhs->items;
    lhs->items.clear();
    for (long i = 0; i < PyLong_AsLong(n); ++i)
      lhs->items.insert(lhs->items.end(), one.begin(), one.end());
    return lhs;
  }
  bool dictL = lhs->kind == Var::Kind::Dict && !lhs->obj;
  bool dictR = rhs->kind == Var::Kind::Dict || (rhs->isConst() && PyDict_Check(rhs->obj.get()));
  if ((sym == "|" || sym == "|=") && dictL && dictR) {
    if (sym == "|=") {
      std::vector<VarP> args = {rhs};
      std::map<std::string, VarP> none;
      callContainerMethod(lhs, "update", args, none); // the caller's dict: a break
      return lhs;
    }
    auto d = std::make_shared<Var>();
    d->kind = Var::Kind::Dict;
    d->keys = lhs->keys;
    d->items = lhs->items;
    d->dictType = lhs->dictType;
    d->self = lhs->self;
    for (auto &[k, v] : dictItems(rhs))
      dictSet(d, k.get(), v);
    return d;
  }
  if (sym == "|" && dictR && lhs->isConst() && PyDict_Check(lhs->obj.get()) &&
      rhs->kind == Var::Kind::Dict) {
    std::vector<VarP> args = {lhs};
    std::map<std::string, VarP> none;
    VarP d = builtinDict(args, none);
    for (auto &[k, v] : dictItems(rhs))
      dictSet(d, k.get(), v);
    return d;
  }
  return nullptr;
}

} // namespace kiln

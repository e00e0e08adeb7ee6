//===- Deques.cpp - collections.deque built in the frame ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Deques.h: each method follows CPython's deque (Modules/
// _collectionsmodule.c) on the Var list: appends to a full bounded deque
// drop from the opposite end, extendleft reverses its input, rotate(n)
// moves n items from the right end to the left, pop/popleft of an empty
// deque and index/remove of a missing value raise (a user-error break, so
// eager raises them), count/index/remove compare constants only (== on
// tensors is data-dependent: a break).
//===----------------------------------------------------------------------===//
#include "capture/values/Deques.h"
#include "GilOnce.h"
#include "capture/breaks/GraphBreak.h"
#include "capture/values/IdentitySets.h"

#include <algorithm>
#include <set>

namespace kiln {

namespace {

PyObject *dequeType() {
  static PyOnce once;
  return once.get([] {
    PyRef m = PyRef::steal(PyImport_ImportModule("collections"));
    PyObject *t = m ? PyObject_GetAttrString(m.get(), "deque") : nullptr;
    PyErr_Clear();
    return t; // leaked: process lifetime
  });
}

VarP noneVar() { return makeConst(PyRef::borrow(Py_None)); }

[[noreturn]] void raises(const std::string &message) {
  throw Unsupported(BreakCategory::UserError, message, hint::kRaisesInEager);
}

/// The deque's maxlen, -1 for None.
long maxlenOf(const VarP &d) { return d->name.empty() ? -1 : std::stol(d->name); }

/// Drops items from the left (`fromLeft`) or right until maxlen holds.
void trim(const VarP &d, bool fromLeft) {
  long max = maxlenOf(d);
  while (max >= 0 && (long)d->items.size() > max) {
    if (fromLeft)
      d->items.erase(d->items.begin());
    else
      d->items.pop_back();
  }
}

/// An int constant argument.
long intArg(const VarP &v, const std::string &what) {
  if (!v->isConst() || !PyLong_CheckExact(v->obj.get()))
    throw Unsupported(BreakCategory::PythonBuiltin, what + " with an argument that is not an int "
                                                           "known at capture");
  long n = PyLong_AsLong(v->obj.get());
  if (n == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    raises(what + ": Python int too large");
  }
  return n;
}

/// The positions of the items equal to constant `x` (constants only: ==
/// on tensors is data).
std::vector<long> equalItems(const VarP &d, const VarP &x, const std::string &what) {
  if (!x->isConst())
    throw Unsupported(BreakCategory::PythonBuiltin,
                      what + " of a tensor or other non-constant (== on tensors is data)");
  std::vector<long> at;
  for (size_t i = 0; i < d->items.size(); ++i) {
    const VarP &item = d->items[i];
    if (!item->isConst())
      throw Unsupported(BreakCategory::PythonBuiltin,
                        what + " on a deque holding tensors (== on tensors is data)");
    int eq = PyObject_RichCompareBool(item->obj.get(), x->obj.get(), Py_EQ);
    if (eq < 0)
      throw Unsupported(BreakCategory::UserError, withPythonError(what + " raised"),
                        hint::kRaisesInEager);
    if (eq == 1)
      at.push_back((long)i);
  }
  return at;
}

void checkArgs(const std::string &name, size_t n, size_t lo, size_t hi,
               const std::map<std::string, VarP> &kwargs) {
  if (n < lo || n > hi || !kwargs.empty())
    raises("deque." + name + "() got the wrong number of arguments");
}

} // namespace

bool isDeque(const VarP &v) {
  return v && v->kind == Var::Kind::Object && dequeType() && v->obj.get() == dequeType();
}

VarP makeDeque(PyObject *fn, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs,
               const ItemsOf &itemsOf) {
  if (!dequeType() || fn != dequeType())
    return nullptr;
  VarP iterable = args.size() > 0            ? args[0]
                  : kwargs.count("iterable") ? kwargs["iterable"]
                                             : nullptr;
  VarP maxlen = args.size() > 1 ? args[1] : kwargs.count("maxlen") ? kwargs["maxlen"] : nullptr;
  if (args.size() + kwargs.size() > 2 || (args.size() > 0 && kwargs.count("iterable")) ||
      (args.size() > 1 && kwargs.count("maxlen")))
    raises("deque() got unexpected arguments");
  auto d = std::make_shared<Var>();
  d->kind = Var::Kind::Object;
  d->obj = PyRef::borrow(dequeType());
  if (maxlen && !(maxlen->isConst() && maxlen->obj.get() == Py_None)) {
    long n = intArg(maxlen, "deque(maxlen=)");
    if (n < 0)
      raises("maxlen must be non-negative");
    d->name = std::to_string(n);
  }
  if (iterable)
    d->items = itemsOf(iterable);
  trim(d, /*fromLeft=*/true);
  return d;
}

VarP dequeAttr(const VarP &d, const std::string &name) {
  if (!isDeque(d))
    return nullptr;
  if (name == "maxlen")
    return d->name.empty() ? noneVar() : makeConst(PyRef::steal(PyLong_FromLong(maxlenOf(d))));
  static const std::set<std::string> methods = {
      "append", "appendleft", "pop",  "popleft", "extend", "extendleft", "clear",
      "rotate", "reverse",    "copy", "count",   "index",  "remove",     "insert"};
  if (!methods.count(name))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "deque." + name + " on a deque built in the frame is not supported");
  auto m = std::make_shared<Var>();
  m->kind = Var::Kind::ListMethod;
  m->self = d;
  m->name = name;
  return m;
}

VarP dequeMethod(const VarP &d, const std::string &name, std::vector<VarP> &args,
                 std::map<std::string, VarP> &kwargs, const ItemsOf &itemsOf) {
  auto &items = d->items;
  size_t n = args.size();
  if (name == "copy" || name == "count" || name == "index") {
    checkArgs(name, n, name == "copy" ? 0 : 1, name == "copy" ? 0 : 1, kwargs);
    if (name == "copy") {
      auto c = std::make_shared<Var>(*d);
      c->pos = 0;
      return c;
    }
    std::vector<long> at = equalItems(d, args[0], "deque." + name + "()");
    if (name == "index" && at.empty())
      raises("deque.index(x): x is not in deque");
    return makeConst(PyRef::steal(PyLong_FromLong(name == "count" ? (long)at.size() : at[0])));
  }
  if (d->pos) // iterated before: eager may have raised inside the loop
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "deque." + name +
                          "() after the deque was iterated (eager raises when it "
                          "changes during the iteration)",
                      "build a new deque or iterate over list(d)");
  if (name == "append" || name == "appendleft") {
    checkArgs(name, n, 1, 1, kwargs);
    bool left = name == "appendleft";
    items.insert(left ? items.begin() : items.end(), args[0]);
    trim(d, /*fromLeft=*/!left);
  } else if (name == "pop" || name == "popleft") {
    checkArgs(name, n, 0, 0, kwargs);
    if (items.empty())
      raises("pop from an empty deque");
    VarP v = name == "pop" ? items.back() : items.front();
    if (name == "pop")
      items.pop_back();
    else
      items.erase(items.begin());
    return v;
  } else if (name == "extend" || name == "extendleft") {
    checkArgs(name, n, 1, 1, kwargs);
    for (const VarP &v : itemsOf(args[0])) {
      bool left = name == "extendleft";
      items.insert(left ? items.begin() : items.end(), v);
      trim(d, /*fromLeft=*/!left);
    }
  } else if (name == "clear") {
    checkArgs(name, n, 0, 0, kwargs);
    items.clear();
  } else if (name == "reverse") {
    checkArgs(name, n, 0, 0, kwargs);
    std::reverse(items.begin(), items.end());
  } else if (name == "rotate") {
    checkArgs(name, n, 0, 1, kwargs);
    long k = n ? intArg(args[0], "deque.rotate()") : 1;
    long size = (long)items.size();
    if (size > 1) {
      k = ((k % size) + size) % size; // to the right
      std::rotate(items.begin(), items.begin() + (size - k), items.end());
    }
  } else if (name == "remove") {
    checkArgs(name, n, 1, 1, kwargs);
    std::vector<long> at = equalItems(d, args[0], "deque.remove()");
    if (at.empty())
      raises("deque.remove(x): x not in deque");
    items.erase(items.begin() + at[0]);
  } else if (name == "insert") {
    checkArgs(name, n, 2, 2, kwargs);
    if (maxlenOf(d) >= 0 && (long)items.size() >= maxlenOf(d))
      raises("deque already at its maximum size");
    long i = intArg(args[0], "deque.insert()"), size = (long)items.size();
    i = i < 0 ? std::max(0L, i + size) : std::min(i, size);
    items.insert(items.begin() + i, args[1]);
  } else {
    throw Unsupported(BreakCategory::PythonBuiltin, "deque." + name + "() is not supported");
  }
  return noneVar();
}

VarP dequeItem(const VarP &d, const VarP &index) {
  if (!isDeque(d))
    return nullptr;
  if (index->isConst() && PySlice_Check(index->obj.get()))
    raises("sequence index must be integer, not 'slice'");
  long i = intArg(index, "deque[i]"), size = (long)d->items.size();
  if (i < -size || i >= size)
    raises("deque index out of range");
  return d->items[(size_t)(i < 0 ? i + size : i)];
}

VarP iterationSnapshot(const VarP &v) {
  refuseIdentitySetIteration(v);
  return dequeSnapshot(v, /*iterated=*/true);
}

VarP dequeSnapshot(const VarP &d, bool iterated) {
  if (!isDeque(d))
    return nullptr;
  if (iterated)
    d->pos = 1;
  return makeSeq(Var::Kind::List, d->items);
}

} // namespace kiln

//===- LiveIterators.cpp - iterators that see their container change ------===//
// SPDX-License-Identifier: Apache-2.0
//
// See LiveIterators.h. Each iterator is a lazy Iter Var (`produce`)
// whose step reads the container as it is then.
//===----------------------------------------------------------------------===//
#include "capture/interp/LiveIterators.h"

#include "capture/breaks/GraphBreak.h"
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/interp/Interp.h"
#include "capture/interp/PlainObjects.h"
#include "capture/values/Deques.h"

#include <functional>
#include <memory>

namespace kiln {
namespace {

[[noreturn]] void changedSize(const char *what) {
  throw Unsupported(BreakCategory::UserError, std::string(what) + " changed size during iteration",
                    hint::kRaisesInEager);
}

/// An Iter Var whose items `produce` makes (Interpreter::makeLazyIter).
VarP lazyIter(std::function<VarP()> produce) {
  VarP it = makeSeq(Var::Kind::Iter, {});
  it->produce = std::move(produce);
  return it;
}

Py_ssize_t objectSize(PyObject *o) { return PyDict_Check(o) ? PyDict_Size(o) : PySet_Size(o); }

} // namespace

VarP liveListIter(const VarP &list, std::vector<VarP> snapshot) {
  auto next = std::make_shared<size_t>(0);
  return lazyIter([list, snapshot = std::move(snapshot), next]() -> VarP {
    // A caller's list stays a Const Var until the frame mutates it.
    const std::vector<VarP> &items = list->kind == Var::Kind::List ? list->items : snapshot;
    if (*next >= items.size())
      return nullptr;
    return items[(*next)++];
  });
}

VarP liveListObjectIter(PyRef list) {
  auto next = std::make_shared<Py_ssize_t>(0);
  return lazyIter([list, next]() -> VarP {
    if (*next >= PyList_GET_SIZE(list.get()))
      return nullptr;
    return makeConst(PyRef::borrow(PyList_GET_ITEM(list.get(), (*next)++)));
  });
}

VarP liveDictIter(std::function<VarP()> dictNow, const std::string &which,
                  std::vector<VarP> snapshot) {
  VarP first = dictNow();
  size_t size = first->kind == Var::Kind::Dict ? first->keys.size() : snapshot.size();
  auto next = std::make_shared<size_t>(0);
  return lazyIter([dictNow, which, snapshot = std::move(snapshot), size, next]() -> VarP {
    size_t i = (*next)++;
    VarP dict = dictNow();
    if (dict->kind != Var::Kind::Dict) // a caller's dict the frame has not mutated
      return i < snapshot.size() ? snapshot[i] : nullptr;
    if (dict->keys.size() != size)
      changedSize("dictionary");
    if (i >= size)
      return nullptr;
    VarP key = makeConst(dict->keys[i]);
    if (which == "keys")
      return key;
    if (which == "values")
      return dict->items[i];
    return makeSeq(Var::Kind::Tuple, {key, dict->items[i]});
  });
}

VarP sizeCheckedIter(PyRef container, std::vector<VarP> snapshot) {
  Py_ssize_t size = objectSize(container.get());
  auto next = std::make_shared<size_t>(0);
  return lazyIter([container, snapshot = std::move(snapshot), size, next]() -> VarP {
    if (objectSize(container.get()) != size)
      changedSize(PyDict_Check(container.get()) ? "dictionary" : "Set");
    return *next < snapshot.size() ? snapshot[(*next)++] : nullptr;
  });
}

std::function<VarP()> Interpreter::trackedNow(const VarP &v) {
  if (v->source < 0)
    return [v] { return v; };
  // Another read of the same source may have been mutated (containerVar:
  // a caller's dict read as a Const Var or, holding tensors, a Dict Var).
  return [this, v] {
    auto it = sourceOverlay_.find(v->source);
    return it != sourceOverlay_.end() ? it->second : v;
  };
}

VarP Interpreter::getIter(const VarP &v) {
  // Lists, dicts and dict views are iterated live (LiveIterators.h).
  if (v->kind == Var::Kind::Tuple)
    return makeSeq(Var::Kind::Iter, v->items);
  if (v->kind == Var::Kind::List)
    return liveListIter(v, {});
  if (v->kind == Var::Kind::Iter && v->reiterable) // a dict view (callDictMethod)
    return v->self ? liveDictIter(trackedNow(v->self), v->name, v->items)
                   : makeSeq(Var::Kind::Iter, v->items);
  if (v->kind == Var::Kind::Iter)
    return v;
  refuseMutatedAlias(v);
  if (v->kind == Var::Kind::Dict && !v->obj) // a ModelOutput record iterates its keys too
    return liveDictIter([v] { return v; }, "keys", {});
  if (v->kind == Var::Kind::Dict) {
    std::vector<VarP> keys;
    for (auto &k : v->keys)
      keys.push_back(makeConst(k));
    return makeSeq(Var::Kind::Iter, keys);
  }
  if (v->isTensor()) {
    // Tensor.__iter__ is iter(self.unbind(0)): with a static first dim, the
    // rows are unbind's results (a 0-d tensor raises in eager; a symbolic
    // size retries the capture with static sizes).
    VarP n = tensorAttribute(v, kTensorLenQuery);
    if (!n->isConst())
      throw Unsupported("iterating over a tensor whose first dim is symbolic");
    std::vector<VarP> none;
    std::map<std::string, VarP> nokw;
    return getIter(callTensorMethod(v, "unbind", none, nokw));
  }
  if (VarP snap = iterationSnapshot(v)) // a deque (Deques.h); a set of tensors breaks
    return getIter(snap);
  PyObject *o = constObj(v, "iterable");
  if (v->source < 0 || !PyList_CheckExact(o)) // a caller's list: items by source (below)
    pinPlainObject(o, "it is iterated at capture");
  std::vector<VarP> items;
  if (VarP it = CaptureTimeCalls::builtModuleDunder(*this, v, "__iter__"))
    return getIter(it); // a Sequential built at capture (BuiltModules.cpp)
  if (isModule(o) && v->source < 0 && sourceOf(v) >= 0)
    return getIter(makeConst(v->obj, sourceOf(v)));
  if (isModule(o) && v->source >= 0) {
    // Sequential / ModuleList: their children, each read from _modules.
    PyRef modules = PyRef::steal(PyObject_GetAttrString(o, "_modules"));
    if (!modules || !PyDict_Check(modules.get()))
      throw Unsupported("iterating over a module without _modules");
    int dictSrc = out_.sources.add(Source::Kind::ObjDict, v->source, 0, nullptr);
    PyRef key = PyRef::steal(PyUnicode_FromString("_modules"));
    int modSrc = out_.sources.add(Source::Kind::DictItem, dictSrc, 0, key.get());
    PyObject *k, *child;
    Py_ssize_t pos = 0;
    while (PyDict_Next(modules.get(), &pos, &k, &child))
      items.push_back(fromSource(child, out_.sources.add(Source::Kind::DictItem, modSrc, 0, k)));
    // The set of children is part of what the graph depends on.
    guardLength(modSrc, PyDict_Size(modules.get()));
    return makeSeq(Var::Kind::Iter, items);
  }
  bool view = PyObject_TypeCheck(o, &PyDictKeys_Type) ||
              PyObject_TypeCheck(o, &PyDictValues_Type) ||
              PyObject_TypeCheck(o, &PyDictItems_Type) || PyAnySet_Check(o) || PyUnicode_Check(o);
  if (view) { // pure iteration; tensors inside would lose their sources
    PyRef seq = PyRef::steal(PySequence_List(o));
    if (!seq) {
      PyErr_Clear();
      throw Unsupported("cannot iterate");
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq.get()); ++i) {
      PyObject *item = PyList_GET_ITEM(seq.get(), i);
      if (holdsTensor(item))
        throw Unsupported("iterating over a dict view or set holding tensors");
      items.push_back(makeConst(PyRef::borrow(item)));
    }
    keepAlive_.push_back(seq);
    if (PySet_CheckExact(o)) // eager raises when it changes size during the loop
      return sizeCheckedIter(v->obj, std::move(items));
    return makeSeq(Var::Kind::Iter, items);
  }
  if (!(PyRange_Check(o) || PyTuple_Check(o) || PyList_Check(o) || PyDict_Check(o)))
    throw Unsupported("iterating over " + pyText(reinterpret_cast<PyObject *>(Py_TYPE(o))));
  if (v->source >= 0 && (PyList_CheckExact(o) || PyTuple_CheckExact(o))) {
    // Items of a list/tuple read from the frame are read through their own
    // sources (e.g. a plain list of modules may have an item replaced).
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    guardLength(v->source, n);
    for (Py_ssize_t i = 0; i < n; ++i)
      items.push_back(
          fromSource(PySequence_Fast_ITEMS(o)[i],
                     out_.sources.add(Source::Kind::TupleItem, v->source, (int)i, nullptr)));
    return PyList_CheckExact(o) ? liveListIter(v, std::move(items))
                                : makeSeq(Var::Kind::Iter, items);
  }
  if (PyList_CheckExact(o)) // made at capture (sorted(), list() ...): read per step
    return liveListObjectIter(v->obj);
  PyRef seq = PyRef::steal(PySequence_List(o));
  if (!seq) {
    PyErr_Clear();
    throw Unsupported("cannot iterate");
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq.get()); ++i)
    items.push_back(makeConst(PyRef::borrow(PyList_GET_ITEM(seq.get(), i))));
  if (PyDict_CheckExact(o) && v->source >= 0) // the caller's dict (Dict Var once mutated)
    return liveDictIter(trackedNow(v), "keys", std::move(items));
  if (PyDict_CheckExact(o) || PyAnySet_CheckExact(o))
    return sizeCheckedIter(v->obj, std::move(items));
  return makeSeq(Var::Kind::Iter, items);
}

} // namespace kiln

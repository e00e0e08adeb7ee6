//===- LiveIterators.cpp - iterators that see their container change ------===//
// SPDX-License-Identifier: Apache-2.0
//
// See LiveIterators.h. Each iterator is a lazy Iter Var (`produce`)
// whose step reads the container as it is then.
//===----------------------------------------------------------------------===//
#include "capture/interp/LiveIterators.h"

#include "capture/breaks/GraphBreak.h"

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

VarP liveDictIter(const VarP &dict, const std::string &which, std::vector<VarP> snapshot) {
  size_t size = dict->kind == Var::Kind::Dict ? dict->keys.size() : snapshot.size();
  auto next = std::make_shared<size_t>(0);
  return lazyIter([dict, which, snapshot = std::move(snapshot), size, next]() -> VarP {
    size_t i = (*next)++;
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

} // namespace kiln

//===- PySequence.h - tuples and lists built item by item ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// `buildSequence(tuple, n, item)`: a new tuple or list of `n` items, each
// the PyRef `item(i)` returns; null (the partial sequence dropped) as soon
// as one item is null. For the recursive conversions of nested argument
// lists (meta arguments, fallback constants) that rebuild tuples as tuples
// and lists as lists.
//===----------------------------------------------------------------------===//
#pragma once

#include "PyRef.h"

namespace kiln {

template <typename ItemFn> PyRef buildSequence(bool tuple, Py_ssize_t n, ItemFn &&item) {
  PyRef seq = PyRef::steal(tuple ? PyTuple_New(n) : PyList_New(n));
  for (Py_ssize_t i = 0; seq && i < n; ++i) {
    PyRef one = item(i);
    if (!one)
      return PyRef();
    if (tuple)
      PyTuple_SET_ITEM(seq.get(), i, one.release());
    else
      PyList_SET_ITEM(seq.get(), i, one.release());
  }
  return seq;
}

} // namespace kiln

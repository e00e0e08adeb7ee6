//===- Entry.cpp - running a compiled entry on torch tensors -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Builds memref descriptors from the input tensors' data pointers (sizes
// and strides are known from the guards), allocates outputs through torch
// (so its allocator is used) and calls the compiled function.
//===----------------------------------------------------------------------===//
#include "Entry.h"

#include "codegen/cpu/Threads.h"
#include "runtime/MemRefDescriptor.h"

#include <functional>

namespace kiln {
namespace {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (int i = (int)sizes.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * std::max<int64_t>(sizes[i + 1], 1);
  return s;
}

} // namespace

bool runGraph(const Entry &entry, const std::vector<PyObject *> &inputs,
              std::vector<PyRef> &results) {
  size_t n = inputs.size() + entry.results.size();
  std::vector<rt::MemRefDescriptor> descs(n);
  std::vector<void *> descPtrs(n), args(n);
  std::vector<PyRef> copies;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GraphInput &in = entry.inputs[i];
    PyObject *t = inputs[i];
    if (in.makeContiguous) {
      copies.push_back(PyRef::steal(contiguousTensor(t)));
      if (!copies.back())
        return false;
      t = copies.back().get();
    }
    void *p = tensorDataPtr(t);
    if (!p && PyErr_Occurred())
      return false;
    // Find the guard for this input's source: its sizes are authoritative.
    const std::vector<int64_t> *sizes = nullptr;
    for (const Guard &g : entry.guards)
      if (g.kind == Guard::Kind::Tensor && g.source == in.source)
        sizes = &g.sizes;
    std::vector<int64_t> strides = contiguousStrides(*sizes);
    descs[i].reset(p, sizes->data(), strides.data(), sizes->size());
  }
  results.clear();
  for (size_t j = 0; j < entry.results.size(); ++j) {
    const GraphOutput &o = entry.results[j];
    PyRef t = PyRef::steal(emptyTensor(o.sizes, dtypeObject(o.dtype)));
    if (!t)
      return false;
    void *p = tensorDataPtr(t.get());
    if (!p && PyErr_Occurred())
      return false;
    std::vector<int64_t> strides = contiguousStrides(o.sizes);
    descs[inputs.size() + j].reset(p, o.sizes.data(), strides.data(), o.sizes.size());
    results.push_back(std::move(t));
  }
  for (size_t i = 0; i < n; ++i) {
    descPtrs[i] = descs[i].data();
    args[i] = &descPtrs[i];
  }
  if (!entry.results.empty()) {
    kilnSetNumThreads(torchNumThreads()); // BLAS uses torch's thread count
    Py_BEGIN_ALLOW_THREADS entry.fn(args.data());
    Py_END_ALLOW_THREADS
  }
  return true;
}

PyObject *assembleResult(const Entry &entry, const std::vector<PyRef> &results,
                         const std::vector<PyObject *> &inputs) {
  size_t pos = 0;
  // Builds the node at `pos` (prefix order) and advances past its subtree.
  std::function<PyObject *()> build = [&]() -> PyObject * {
    const OutputSlot &s = entry.outputs[pos++];
    if (s.kind == OutputSlot::Kind::Dict) {
      PyObject *d = PyDict_New();
      for (int i = 0; i < s.index; ++i) {
        PyObject *child = build();
        if (d && child)
          PyDict_SetItem(d, PyTuple_GET_ITEM(s.constant.get(), i), child);
        Py_XDECREF(child);
      }
      return d;
    }
    if (s.kind == OutputSlot::Kind::Tuple || s.kind == OutputSlot::Kind::List) {
      bool tuple = s.kind == OutputSlot::Kind::Tuple;
      PyObject *seq = tuple ? PyTuple_New(s.index) : PyList_New(s.index);
      for (int i = 0; i < s.index; ++i) {
        PyObject *child = build();
        if (tuple)
          PyTuple_SET_ITEM(seq, i, child);
        else
          PyList_SET_ITEM(seq, i, child);
      }
      return seq;
    }
    if (s.kind == OutputSlot::Kind::InputView) {
      PyObject *t = inputs[s.index];
      Py_INCREF(t);
      for (Py_ssize_t i = 0; t && i < PyTuple_GET_SIZE(s.constant.get()); ++i) {
        PyObject *step = PyTuple_GET_ITEM(s.constant.get(), i);
        PyRef method = PyRef::steal(PyObject_GetAttr(t, PyTuple_GET_ITEM(step, 0)));
        Py_DECREF(t);
        t = method ? PyObject_Call(method.get(), PyTuple_GET_ITEM(step, 1), nullptr) : nullptr;
      }
      return t;
    }
    PyObject *o = s.kind == OutputSlot::Kind::Graph ? results[s.index].get()
                  : s.kind == OutputSlot::Kind::Input ? inputs[s.index]
                                                      : s.constant.get();
    if (s.copy)
      return PyObject_CallMethod(o, "clone", nullptr);
    Py_INCREF(o);
    return o;
  };
  PyObject *r = build();
  if (r && PyErr_Occurred()) { // a clone failed somewhere in the tree
    Py_DECREF(r);
    return nullptr;
  }
  return r;
}

} // namespace kiln

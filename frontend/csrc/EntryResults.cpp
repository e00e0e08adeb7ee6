//===- EntryResults.cpp - a compiled entry's inputs, results and side effects -===//
// SPDX-License-Identifier: Apache-2.0
//
// The Python side of running an entry: its graph inputs gathered from the
// frame's values, the return value rebuilt from graph results, inputs and
// sources, and the side effects replayed on the caller's objects.
//===----------------------------------------------------------------------===//
#include "Entry.h"
#include "GilOnce.h"

#include "TensorInfo.h"
#include "hook/Stats.h"

#include <functional>

namespace kiln {

namespace {
/// `t.clone(memory_format=torch.contiguous_format)`: a new tensor in
/// row-major layout (new reference; null with a Python error).
PyObject *contiguousClone(PyObject *t) {
  static PyOnce formatOnce;
  PyObject *format = formatOnce.imported("torch", "contiguous_format");
  PyRef clone = PyRef::steal(PyObject_GetAttrString(t, "clone"));
  if (!clone || !format)
    return nullptr;
  PyRef args = PyRef::steal(PyTuple_New(0));
  PyRef kwargs = PyRef::steal(Py_BuildValue("{sO}", "memory_format", format));
  return args && kwargs ? PyObject_Call(clone.get(), args.get(), kwargs.get()) : nullptr;
}
} // namespace

namespace {
/// `base` with the view `steps` (a tuple of (method name, argument tuple))
/// applied in order: eager's view of it. New reference, or null with a
/// Python error set.
PyObject *replayView(PyObject *base, PyObject *steps) {
  PyObject *t = base;
  Py_INCREF(t);
  for (Py_ssize_t i = 0; t && i < PyTuple_GET_SIZE(steps); ++i) {
    PyObject *step = PyTuple_GET_ITEM(steps, i);
    PyRef method = PyRef::steal(PyObject_GetAttr(t, PyTuple_GET_ITEM(step, 0)));
    Py_DECREF(t);
    PyObject *kwargs = PyTuple_GET_SIZE(step) > 2 ? PyTuple_GET_ITEM(step, 2) : nullptr;
    t = method ? PyObject_Call(method.get(), PyTuple_GET_ITEM(step, 1), kwargs) : nullptr;
  }
  return t;
}

/// Builds the node of `slots` at `pos` (prefix order) and advances past its
/// subtree. New reference (null, or a tree with a Python error set, on failure).
/// `values`: the entry's sources resolved for this call (Source slots);
/// `sizes`: its symbolic sizes for this call (SymSize slots).
PyObject *buildSlots(const std::vector<OutputSlot> &slots, size_t &pos,
                     const std::vector<PyRef> &results, llvm::ArrayRef<PyObject *> inputs,
                     const std::vector<PyRef> *values, llvm::ArrayRef<int64_t> sizes) {
  // The clone (or replayed view) built for each copied or view slot
  // (borrowed: the tree holds it).
  std::vector<PyObject *> clones(slots.size(), nullptr);
  std::function<PyObject *()> build = [&]() -> PyObject * {
    size_t at = pos;
    const OutputSlot &s = slots[pos++];
    if (s.kind == OutputSlot::Kind::Source) { // read at the call's start
      PyObject *o = (*values)[s.index].get();
      Py_INCREF(o);
      return o;
    }
    if (s.kind == OutputSlot::Kind::SymSize) {
      int64_t n = 0;
      if (!evalSizeExpr(*s.size, sizes, n)) {
        PyErr_SetString(PyExc_RuntimeError, "kiln: a symbolic size could not be evaluated");
        return nullptr;
      }
      return PyLong_FromLongLong(n);
    }
    if (s.kind == OutputSlot::Kind::Binary) { // the types are guarded
      PyRef a = PyRef::steal(build()), b = PyRef::steal(build());
      if (!a || !b)
        return nullptr;
      std::string op = PyUnicode_AsUTF8(s.constant.get());
      if (!op.empty() && op.back() == '=')
        op.pop_back(); // the operands are immutable: += is +
      return op == "+"   ? PyNumber_Add(a.get(), b.get())
             : op == "-" ? PyNumber_Subtract(a.get(), b.get())
                         : PyNumber_Multiply(a.get(), b.get());
    }
    if (s.kind == OutputSlot::Kind::Dict) {
      PyObject *d = PyDict_New();
      for (int i = 0; i < s.index; ++i) {
        PyObject *child = build();
        if (d && child)
          PyDict_SetItem(d, PyTuple_GET_ITEM(s.constant.get(), i), child);
        Py_XDECREF(child);
      }
      if (d && s.cls && s.copy) { // an OrderedDict: cls(items)
        PyObject *obj = PyObject_CallOneArg(s.cls.get(), d);
        Py_DECREF(d);
        return obj;
      }
      if (d && s.cls) { // a ModelOutput: cls(**items) rebuilds the same object
        PyObject *empty = PyTuple_New(0);
        PyObject *obj = empty ? PyObject_Call(s.cls.get(), empty, d) : nullptr;
        Py_XDECREF(empty);
        Py_DECREF(d);
        return obj;
      }
      return d;
    }
    if (s.kind == OutputSlot::Kind::Object) { // object.__new__(cls), then its attributes
      PyObject *obj = PyObject_CallMethod(reinterpret_cast<PyObject *>(&PyBaseObject_Type),
                                          "__new__", "O", s.cls.get());
      for (int i = 0; i < s.index; ++i) {
        PyObject *child = build();
        if (obj && (!child ||
                    PyObject_GenericSetAttr(obj, PyTuple_GET_ITEM(s.constant.get(), i), child) < 0))
          Py_CLEAR(obj);
        Py_XDECREF(child);
      }
      return obj;
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
      if (seq && s.cls && PyType_HasFeature((PyTypeObject *)s.cls.get(), Py_TPFLAGS_HEAPTYPE)) {
        // a namedtuple (or other Python tuple subclass): tuple.__new__(cls, tuple)
        PyObject *obj = PyObject_CallMethod(reinterpret_cast<PyObject *>(&PyTuple_Type), "__new__",
                                            "OO", s.cls.get(), seq);
        Py_DECREF(seq);
        return obj;
      }
      if (seq && s.cls) { // a torch.return_types structseq: cls(tuple)
        PyObject *obj = PyObject_CallOneArg(s.cls.get(), seq);
        Py_DECREF(seq);
        return obj;
      }
      return seq;
    }
    if (s.kind == OutputSlot::Kind::Numpy) { // child.numpy() (a NumPy scalar: [()])
      PyObject *child = build();
      PyObject *arr = child ? PyObject_CallMethod(child, "numpy", nullptr) : nullptr;
      Py_XDECREF(child);
      if (!arr || s.index != 1)
        return arr;
      PyObject *empty = PyTuple_New(0);
      PyObject *scalar = empty ? PyObject_GetItem(arr, empty) : nullptr;
      Py_XDECREF(empty);
      Py_DECREF(arr);
      return scalar;
    }
    if (s.kind == OutputSlot::Kind::Scalar) // a float/int/bool, exactly eager's
      return PyObject_CallMethod(results[s.index].get(), "item", nullptr);
    if (s.kind == OutputSlot::Kind::InputView || s.kind == OutputSlot::Kind::GraphView) {
      if (s.sameAs >= 0 && clones[s.sameAs]) { // the same view placed before
        Py_INCREF(clones[s.sameAs]);
        return clones[s.sameAs];
      }
      PyObject *base =
          s.kind == OutputSlot::Kind::InputView ? inputs[s.index] : results[s.index].get();
      return clones[at] = replayView(base, s.constant.get());
    }
    if (s.kind == OutputSlot::Kind::Graph && s.constant) { // eager's memory format
      if (s.sameAs >= 0 && clones[s.sameAs]) {
        Py_INCREF(clones[s.sameAs]);
        return clones[s.sameAs];
      }
      return clones[at] = replayView(results[s.index].get(), s.constant.get());
    }
    PyObject *o = s.kind == OutputSlot::Kind::Graph   ? results[s.index].get()
                  : s.kind == OutputSlot::Kind::Input ? inputs[s.index]
                                                      : s.constant.get();
    if (s.copy && s.sameAs >= 0 && clones[s.sameAs])
      o = clones[s.sameAs];
    else if (s.copy && s.contiguousCopy) // `x.contiguous()` of a strided input
      return clones[at] = contiguousClone(o);
    else if (s.copy) // a tensor's clone(), or a copy() of a list/dict/set made at capture
      return clones[at] = PyObject_CallMethod(
                 o, s.kind == OutputSlot::Kind::Constant ? "copy" : "clone", nullptr);
    Py_INCREF(o);
    return o;
  };
  return build();
}
} // namespace

namespace {
/// The entry's symbolic sizes for this call when `slots` hold a SymSize
/// (else none); false with a Python error.
bool symbolSizesFor(const Entry &entry, const std::vector<OutputSlot> &slots,
                    llvm::ArrayRef<PyObject *> inputs, llvm::SmallVectorImpl<int64_t> &sizes) {
  for (const OutputSlot &s : slots)
    if (s.kind == OutputSlot::Kind::SymSize) {
      if (symbolValues(entry, inputs, sizes))
        return true;
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "kiln: the symbolic sizes of a call are unknown");
      return false;
    }
  return true;
}
} // namespace

PyObject *assembleResult(const Entry &entry, const std::vector<PyRef> &results,
                         llvm::ArrayRef<PyObject *> inputs, const std::vector<PyRef> &values) {
  if (entry.outputs.size() == 1 && entry.outputs[0].kind == OutputSlot::Kind::Graph &&
      !entry.outputs[0].copy && !entry.outputs[0].constant) { // `return <one graph result>`
    PyObject *o = results[entry.outputs[0].index].get();
    Py_INCREF(o);
    return o;
  }
  llvm::SmallVector<int64_t, 8> sizes;
  if (!symbolSizesFor(entry, entry.outputs, inputs, sizes))
    return nullptr;
  size_t pos = 0;
  PyObject *r = buildSlots(entry.outputs, pos, results, inputs, &values, sizes);
  if (r && PyErr_Occurred()) { // a clone failed somewhere in the tree
    Py_DECREF(r);
    return nullptr;
  }
  return r;
}

namespace {
/// `target.copy_(value)`, then target's version counter set to its value
/// before plus `bumps` (eager's count of in-place ops); -1 with a Python error.
int copyInto(PyObject *target, PyObject *value, int bumps) {
  static PyOnce setVersionOnce;
  PyObject *setVersion = setVersionOnce.get([] {
    PyRef autograd = PyRef::steal(PyObject_GetAttrString(torchModule(), "_C"));
    PyRef ns =
        autograd ? PyRef::steal(PyObject_GetAttrString(autograd.get(), "_autograd")) : PyRef();
    PyObject *f = ns ? PyObject_GetAttrString(ns.get(), "_unsafe_set_version_counter") : nullptr;
    PyErr_Clear();
    return f;
  });
  PyRef before = PyRef::steal(PyObject_GetAttrString(target, "_version"));
  if (!before)
    return -1;
  bool inPlace = target == value && setVersion; // computed into it (InPlaceResults.h)
  PyRef done = inPlace ? PyRef::borrow(Py_None)
                       : PyRef::steal(PyObject_CallMethod(target, "copy_", "O", value));
  if (!done)
    return -1;
  if (!setVersion || (bumps == 1 && !inPlace))
    return 0; // copy_ bumped it once
  PyRef version = PyRef::steal(PyLong_FromLongLong(PyLong_AsLongLong(before.get()) + bumps));
  PyRef r = PyRef::steal(PyObject_CallFunction(setVersion, "(O)(O)", target, version.get()));
  return r ? 0 : -1;
}
} // namespace

bool gatherInputs(const Entry &entry, const std::vector<PyRef> &values, bool perCall,
                  llvm::SmallVectorImpl<PyObject *> &inputs, std::vector<PyRef> &made) {
  inputs.clear();
  made.clear();
  for (const GraphInput &in : entry.inputs) {
    bool ofNumber =
        in.kind == GraphInput::Kind::IntCarrier || in.kind == GraphInput::Kind::NumberValue;
    // A number argument: the number itself, which the compiled call reads
    // directly; a tensor only where Python code takes the inputs (autograd).
    if (in.isTensor() || (ofNumber && !(perCall && entry.needsAutograd))) {
      inputs.push_back(values[in.source].get());
      continue;
    }
    if (!perCall) {
      inputs.push_back(Py_None);
      continue;
    }
    if (ofNumber) { // an int's carrier (n, 0), no data; a number in a 0-d tensor
      PyObject *number = values[in.source].get();
      bool isFloat = PyFloat_CheckExact(number), carrier = in.kind == GraphInput::Kind::IntCarrier;
      int64_t bits;
      if (!numberBits(number, bits))
        return false;
      made.push_back(
          PyRef::steal(emptyTensor(carrier ? std::vector<int64_t>{bits, 0} : std::vector<int64_t>{},
                                   dtypeObject(isFloat ? DType::F64 : DType::I64))));
      void *data = made.back() && !carrier ? tensorDataPtr(made.back().get()) : nullptr;
      if (!made.back() || (!carrier && !data)) {
        if (!PyErr_Occurred())
          PyErr_SetString(PyExc_RuntimeError, "kiln: a number argument's input could not be made");
        return false;
      }
      if (data)
        std::memcpy(data, &bits, sizeof(bits));
      inputs.push_back(made.back().get());
      continue;
    }
    static PyOnce drawOnce;
    PyObject *draw = drawOnce.get([] {
      PyRef mod = PyRef::steal(PyImport_ImportModule("kiln._random"));
      return mod ? PyObject_GetAttrString(mod.get(), "draw_seed") : nullptr;
    });
    made.push_back(draw ? PyRef::steal(PyObject_CallNoArgs(draw)) : PyRef());
    if (!made.back())
      return false;
    inputs.push_back(made.back().get());
  }
  return true;
}

int checkWriteBackAliasing(const Entry &entry, const std::vector<PyRef> &values) {
  // Each input's storage read once, sorted by (storage, input): an
  // optimizer step writes back hundreds of inputs, and comparing every
  // target with every input cost 80 ms per call at 600 inputs.
  std::vector<std::pair<void *, int>> storages;
  for (const SideEffect &e : entry.effects) {
    if (e.kind != SideEffect::Kind::CopyInto)
      continue;
    if (storages.empty()) {
      for (size_t i = 0; i < entry.inputs.size(); ++i)
        if (entry.inputs[i].isTensor())
          storages.push_back({tensorStoragePtr(values[entry.inputs[i].source].get()), (int)i});
      std::sort(storages.begin(), storages.end());
    }
    void *mine = tensorStoragePtr(values[e.target].get());
    if (!mine)
      continue;
    auto it = std::lower_bound(storages.begin(), storages.end(), std::make_pair(mine, -1));
    for (; it != storages.end() && it->first == mine; ++it)
      if (entry.inputs[it->second].source != e.target)
        return it->second;
  }
  return -1;
}

bool replaySideEffects(const Entry &entry, const std::vector<PyRef> &results,
                       llvm::ArrayRef<PyObject *> inputs, const std::vector<PyRef> &values) {
  // In program order, on the objects of this call (Capture.h: SideEffect).
  llvm::SmallVector<int64_t, 8> sizes;
  if (!symbolSizesFor(entry, entry.effectValues, inputs, sizes))
    return false;
  size_t pos = 0;
  for (const SideEffect &e : entry.effects) {
    PyRef value =
        PyRef::steal(buildSlots(entry.effectValues, pos, results, inputs, &values, sizes));
    if (!value || PyErr_Occurred())
      return false;
    PyObject *target = values[e.target].get();
    int rc = 0;
    switch (e.kind) {
    case SideEffect::Kind::SetAttr:
      rc = PyObject_SetAttr(target, e.key.get(), value.get());
      break;
    case SideEffect::Kind::SetItem:
      rc = PyObject_SetItem(target, e.key.get(), value.get());
      break;
    case SideEffect::Kind::DelItem: // value: None
      rc = PyObject_DelItem(target, e.key.get());
      break;
    case SideEffect::Kind::ListAppend:
      rc = PyList_Append(target, value.get());
      break;
    case SideEffect::Kind::ListExtend:
      rc = PyList_SetSlice(target, PyList_GET_SIZE(target), PyList_GET_SIZE(target), value.get());
      break;
    case SideEffect::Kind::ListInsert:
      rc = PyList_Insert(target, PyLong_AsSsize_t(e.key.get()), value.get());
      break;
    case SideEffect::Kind::ListPop: // value: None
      rc = PySequence_DelItem(target, PyLong_AsSsize_t(e.key.get()));
      break;
    case SideEffect::Kind::CopyInto:
      rc = copyInto(target, value.get(), e.versionBumps);
      break;
    case SideEffect::Kind::Call: {
      PyRef r = PyRef::steal(PyObject_CallOneArg(target, value.get()));
      rc = r ? 0 : -1;
      break;
    }
    }
    if (rc < 0)
      return false;
  }
  return true;
}

} // namespace kiln

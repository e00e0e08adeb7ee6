//===- Entry.cpp - running a compiled entry on torch tensors -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Builds memref descriptors from the input tensors' data pointers (sizes
// and strides are known from the guards), allocates outputs through torch
// (so its allocator is used) and calls the compiled function.
//===----------------------------------------------------------------------===//
#include "Entry.h"
#include "GilOnce.h"

#include "CudaEntry.h"
#include "InputStamps.h"
#include "hook/Stats.h"
#include "capture/values/InputLayouts.h"

#include "runtime/cpu/Threads.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstring>

#include <functional>

namespace kiln {
namespace {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (int i = (int)sizes.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * std::max<int64_t>(sizes[i + 1], 1);
  return s;
}

/// Appends one memref descriptor {allocated, aligned, offset, sizes,
/// strides} (layout of runtime/MemRefDescriptor.h) with null pointers.
void appendDescriptor(std::vector<int64_t> &words, const std::vector<int64_t> &sizes) {
  words.insert(words.end(), {0, 0, 0});
  words.insert(words.end(), sizes.begin(), sizes.end());
  std::vector<int64_t> strides = contiguousStrides(sizes);
  words.insert(words.end(), strides.begin(), strides.end());
}

/// Builds `entry.plan`; false with a Python error on failure.
bool buildPlan(const Entry &entry) {
  Entry::CallPlan plan;
  for (const GraphInput &in : entry.inputs) {
    // The (last) tensor guard of this input's source: its sizes are
    // authoritative, since it is checked before every call.
    const Guard *guard = nullptr;
    for (const Guard &g : entry.guards)
      if (g.kind == Guard::Kind::Tensor && g.source == in.source)
        guard = &g;
    if (!guard && in.isTensor()) {
      PyErr_SetString(PyExc_RuntimeError, "kiln: a graph input has no tensor guard");
      return false;
    }
    static const std::vector<int64_t> scalar;                    // the seed, a number's value
    static const std::vector<int64_t> carrier{kSymbolicSize, 0}; // an int's (n, 0)
    const std::vector<int64_t> sizes = in.isTensor() ? memorySizes(in, guard->sizes) // its memory
                                       : in.kind == GraphInput::Kind::IntCarrier ? carrier
                                                                                 : scalar;
    plan.offsets.push_back(plan.words.size());
    appendDescriptor(plan.words, sizes);
    plan.ranks.push_back((int)sizes.size());
    plan.symbolic.push_back(std::count(sizes.begin(), sizes.end(), kSymbolicSize) > 0);
  }
  for (const GraphOutput &o : entry.results) {
    plan.offsets.push_back(plan.words.size());
    appendDescriptor(plan.words, o.sizes);
    plan.ranks.push_back((int)o.sizes.size());
    plan.symbolic.push_back(std::count(o.symbolOf.begin(), o.symbolOf.end(), -1) !=
                            (long)o.symbolOf.size());
    plan.emptySizes.push_back(PyRef::steal(intTuple(o.sizes)));
    if (!plan.emptySizes.back())
      return false;
  }
  // Building may run Python (allocation can trigger the GC); if another
  // thread published a plan meanwhile, keep that one: a published plan is
  // never replaced while calls may be reading it.
  if (!entry.plan.ready) {
    plan.ready = true;
    entry.plan = std::move(plan);
  }
  return true;
}

/// `t.shape` as a tuple (new reference; null with a Python error).
PyObject *shapeOf(PyObject *t) {
  PyObject *s = PyObject_GetAttrString(t, "shape");
  if (s && !PyTuple_Check(s)) {
    Py_DECREF(s);
    PyErr_SetString(PyExc_RuntimeError, "kiln: tensor.shape is not a tuple");
    return nullptr;
  }
  return s;
}

/// Writes sizes and contiguous strides into the descriptor at `at`.
void setShape(int64_t *at, int rank, const int64_t *sizes) {
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    at[3 + i] = sizes[i];
    at[3 + rank + i] = stride;
    stride *= std::max<int64_t>(sizes[i], 1);
  }
}

/// A number argument's value as the 8 bytes the graph reads: an int64, or a
/// float's double. False with a Python error (an int outside int64).
bool numberBits(PyObject *number, int64_t &bits) {
  if (PyFloat_CheckExact(number)) {
    double d = PyFloat_AS_DOUBLE(number);
    std::memcpy(&bits, &d, sizeof(d));
    return true;
  }
  int overflow = 0;
  bits = PyLong_AsLongLongAndOverflow(number, &overflow);
  if (overflow && !PyErr_Occurred())
    PyErr_SetString(PyExc_OverflowError, "kiln: an int argument outside int64");
  return !PyErr_Occurred();
}

/// Size `dim` of graph input `in` for this call: a tensor's, or for an int
/// argument's carrier the int itself (guard checks pass the int, a run its
/// carrier tensor). False on a rank mismatch or an int outside int64 (no
/// Python error left set).
bool inputDim(PyObject *in, int dim, int64_t &out) {
  if (PyLong_CheckExact(in)) {
    int overflow = 0;
    out = PyLong_AsLongLongAndOverflow(in, &overflow);
    return !overflow && !PyErr_Occurred();
  }
  PyRef shape = PyRef::steal(shapeOf(in));
  if (!shape || dim >= PyTuple_GET_SIZE(shape.get())) {
    PyErr_Clear();
    return false;
  }
  out = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.get(), dim));
  return true;
}

/// The value of every symbolic size of `entry` for this call: an input
/// dim's read from its first input, a derived one's evaluated from the
/// earlier ones. False when one cannot be read (the caller treats it as a
/// failed guard).
bool symbolValues(const Entry &entry, llvm::ArrayRef<PyObject *> inputs,
                  llvm::SmallVectorImpl<int64_t> &values) {
  for (const SymbolicSize &s : entry.symbols) {
    int64_t v = 0;
    if (s.def) {
      if (!evalSizeExpr(*s.def, values, v))
        return false;
    } else if (!inputDim(inputs[s.dims[0].first], s.dims[0].second, v)) {
      return false;
    }
    values.push_back(v);
  }
  return true;
}

/// A dynamic entry's per-call shapes: the symbolic sizes read from the
/// inputs, the inputs' descriptors resized, and each result's size tuple
/// (`resultSizes`, null for static results). False with a Python error.
bool bindSymbols(const Entry &entry, llvm::ArrayRef<PyObject *> inputs,
                 llvm::SmallVectorImpl<int64_t> &words, std::vector<PyRef> &resultSizes) {
  const Entry::CallPlan &plan = entry.plan;
  llvm::SmallVector<int64_t, 8> values;
  if (!symbolValues(entry, inputs, values)) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_RuntimeError, "kiln: a symbolic size could not be read");
    return false;
  }
  llvm::SmallVector<int64_t, 8> sizes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!plan.symbolic[i])
      continue;
    if (PyLong_CheckExact(inputs[i])) { // an int argument's carrier (n, 0)
      int64_t carrier[2] = {0, 0};
      if (!inputDim(inputs[i], 0, carrier[0])) {
        PyErr_SetString(PyExc_OverflowError, "kiln: an int argument outside int64");
        return false;
      }
      setShape(words.data() + plan.offsets[i], 2, carrier);
      continue;
    }
    PyRef shape = PyRef::steal(shapeOf(inputs[i]));
    if (!shape || PyTuple_GET_SIZE(shape.get()) != plan.ranks[i]) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "kiln: an input's rank changed");
      return false;
    }
    sizes.assign(plan.ranks[i], 0);
    for (int d = 0; d < plan.ranks[i]; ++d)
      sizes[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.get(), d));
    setShape(words.data() + plan.offsets[i], plan.ranks[i], sizes.data());
  }
  resultSizes.assign(entry.results.size(), PyRef());
  for (size_t j = 0; j < entry.results.size(); ++j) {
    size_t k = inputs.size() + j;
    if (!plan.symbolic[k])
      continue;
    const GraphOutput &o = entry.results[j];
    sizes.assign(o.sizes.begin(), o.sizes.end());
    for (size_t d = 0; d < sizes.size(); ++d)
      if (o.symbolOf[d] >= 0)
        sizes[d] = values[o.symbolOf[d]];
    setShape(words.data() + plan.offsets[k], plan.ranks[k], sizes.data());
    resultSizes[j] = PyRef::steal(intTuple(std::vector<int64_t>(sizes.begin(), sizes.end())));
    if (!resultSizes[j])
      return false;
  }
  return !PyErr_Occurred();
}

} // namespace

int checkSymbols(const Entry &entry, llvm::ArrayRef<PyObject *> inputs) {
  for (size_t i = 0; i < entry.symbols.size(); ++i) {
    const SymbolicSize &s = entry.symbols[i];
    // A tensor dim alone is checked by its tensor guard (>= 2); an int
    // argument's value has no other check.
    bool ofInt = llvm::any_of(s.dims, [&](auto d) { return !entry.inputs[d.first].isTensor(); });
    if (s.dims.size() < 2 && !ofInt)
      continue;
    int64_t first = -1;
    for (auto [input, dim] : s.dims) {
      int64_t v;
      if (!inputDim(inputs[input], dim, v) || v < 2)
        return (int)i;
      if (first < 0)
        first = v;
      else if (v != first)
        return (int)i;
    }
  }
  if (entry.sizeGuards.empty())
    return -1;
  llvm::SmallVector<int64_t, 8> values;
  if (!symbolValues(entry, inputs, values))
    return 0;
  for (size_t g = 0; g < entry.sizeGuards.size(); ++g) {
    const SizeGuard &guard = entry.sizeGuards[g];
    int64_t a, b;
    if (!evalSizeExpr(*guard.lhs, values, a) || !evalSizeExpr(*guard.rhs, values, b))
      return (int)(entry.symbols.size() + g);
    const std::string &c = guard.cmp;
    bool r = c == "<"    ? a < b
             : c == "<=" ? a <= b
             : c == "==" ? a == b
             : c == "!=" ? a != b
             : c == ">"  ? a > b
                         : a >= b;
    if (r != guard.expected)
      return (int)(entry.symbols.size() + g);
  }
  return -1;
}

std::string describeSymbol(const Entry &entry, size_t i) {
  if (i >= entry.symbols.size()) {
    const SizeGuard &g = entry.sizeGuards[i - entry.symbols.size()];
    return "(" + sizeExprText(*g.lhs) + " " + g.cmp + " " + sizeExprText(*g.rhs) + ") is " +
           (g.expected ? "True" : "False");
  }
  const SymbolicSize &s = entry.symbols[i];
  if (s.def)
    return "s" + std::to_string(i) + " = " + sizeExprText(*s.def) + " (derived, " +
           std::to_string(s.captured) + " at capture)";
  std::string text;
  bool ofInt = false;
  for (auto [input, dim] : s.dims) {
    const GraphInput &in = entry.inputs[input];
    ofInt |= !in.isTensor();
    text += (text.empty() ? "" : " == ") + entry.sources.describe(in.source, entry.localNames) +
            (in.isTensor() ? ".size(" + std::to_string(dim) + ")" : "");
  }
  return text + " >= 2 (symbolic " + (ofInt ? "int s" : "s") + std::to_string(i) + ", " +
         std::to_string(s.captured) + " at capture)";
}

namespace {

/// Raises eager's IndexError when the graph's index check (Capture::
/// indexCheck, a 0-d i64 result) flagged an out-of-range index. Graphs on
/// other devices keep the clamped reads: reading the flag would wait for
/// the device on every call (docs/status.md).
bool checkIndices(const Entry &entry, const std::vector<PyRef> &results) {
  if (entry.indexCheck < 0 || entry.indexCheck >= (int)results.size())
    return true;
  PyObject *flag = results[entry.indexCheck].get();
  PyRef onCpu = PyRef::steal(PyObject_GetAttrString(flag, "is_cpu"));
  if (!onCpu)
    return false;
  if (onCpu.get() != Py_True)
    return true;
  const void *p = tensorDataPtr(flag);
  if (!p)
    return !PyErr_Occurred();
  int64_t bad;
  std::memcpy(&bad, p, sizeof(bad));
  if (!bad)
    return true;
  if (bad == kIndexErrorGather)
    PyErr_SetString(PyExc_RuntimeError,
                    "index out of bounds in torch.gather (an index was outside the dim it "
                    "reads; kiln checked it after the graph ran, eager raises at that op)");
  else if (bad == kIndexErrorOneHot)
    PyErr_SetString(PyExc_RuntimeError,
                    "Class values must be non-negative and smaller than num_classes "
                    "(F.one_hot; kiln checked it after the graph ran, eager raises at that op)");
  else
    PyErr_SetString(PyExc_IndexError,
                    "index out of range in self (an index tensor given to indexing, "
                    "index_select, embedding or a loss target was outside the dim it "
                    "reads; kiln checked it after the graph ran, eager raises at that op)");
  return false;
}

bool runGraphUnchecked(const Entry &entry, llvm::ArrayRef<PyObject *> inputs,
                       std::vector<PyRef> &results) {
  if (entry.program)
    return runProgram(*entry.program, inputs, results);
  if (entry.cudaRunner)
    return runCudaGraph(entry, inputs, results);
  if (!entry.plan.ready && !buildPlan(entry))
    return false;
  const Entry::CallPlan &plan = entry.plan;
  size_t n = inputs.size() + entry.results.size();
  if (inputs.size() != entry.inputs.size()) {
    PyErr_SetString(PyExc_RuntimeError, "kiln: wrong number of graph inputs");
    return false;
  }
  // Per-call copy of the descriptors (on the stack for small graphs).
  llvm::SmallVector<int64_t, 256> words(plan.words.begin(), plan.words.end());
  llvm::SmallVector<void *, 32> descPtrs(n), args(n);
  auto setData = [&](size_t i, void *p) {
    int64_t v;
    std::memcpy(&v, &p, sizeof(v));
    words[plan.offsets[i]] = v;     // allocated
    words[plan.offsets[i] + 1] = v; // aligned
  };
  std::vector<PyRef> dynamicSizes;
  if (!entry.symbols.empty() && !bindSymbols(entry, inputs, words, dynamicSizes))
    return false;
  llvm::SmallVector<PyRef, 2> copies;
  std::vector<PyObject *> stampTensors; // inputs passed as they are (not copies)
  std::vector<void *> stampData;
  // Number arguments passed as Python numbers (gatherInputs): read from
  // here (sized on the first one, before any pointer into it is taken).
  llvm::SmallVector<int64_t, 4> numbers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    PyObject *t = inputs[i];
    if (!entry.inputs[i].isTensor() && (PyLong_CheckExact(t) || PyFloat_CheckExact(t))) {
      bool value = entry.inputs[i].kind == GraphInput::Kind::NumberValue; // else a carrier
      if (value && numbers.empty())
        numbers.resize(inputs.size());
      if (value && !numberBits(t, numbers[i]))
        return false;
      setData(i, value ? &numbers[i] : nullptr);
      continue;
    }
    if (entry.inputs[i].makeContiguous) {
      ++counters().inputCopies;
      copies.push_back(PyRef::steal(contiguousTensor(t)));
      if (!copies.back())
        return false;
      t = copies.back().get();
    }
    void *p = tensorDataPtr(t);
    if (!p && PyErr_Occurred())
      return false;
    setData(i, p);
    if (t == inputs[i] && entry.inputs[i].isTensor()) {
      stampTensors.push_back(t);
      stampData.push_back(p);
    }
  }
  results.clear();
  results.reserve(entry.results.size());
  for (size_t j = 0; j < entry.results.size(); ++j) {
    if (j < entry.inPlaceOf.size() && entry.inPlaceOf[j] >= 0) { // the input's own memory
      PyObject *t = inputs[entry.inPlaceOf[j]];
      setData(inputs.size() + j, tensorDataPtr(t));
      results.push_back(PyRef::borrow(t));
      continue;
    }
    // A fresh tensor per call from torch's allocator: results are never
    // shared between calls.
    // The entry's default-dtype guard held: torch.empty's default is
    // entry.defaultDtype now.
    PyObject *dtype = dtypeObject(entry.results[j].dtype);
    PyObject *size =
        !dynamicSizes.empty() && dynamicSizes[j] ? dynamicSizes[j].get() : plan.emptySizes[j].get();
    PyRef t = PyRef::steal(emptyTensorPrebuilt(size, dtype, dtype == entry.defaultDtype));
    if (!t)
      return false;
    void *p = tensorDataPtr(t.get());
    if (!p && PyErr_Occurred())
      return false;
    setData(inputs.size() + j, p);
    results.push_back(std::move(t));
  }
  for (size_t i = 0; i < n; ++i) {
    descPtrs[i] = words.data() + plan.offsets[i];
    args[i] = &descPtrs[i];
  }
  if (!entry.results.empty()) {
    kilnSetNumThreads(torchNumThreads());                // BLAS uses torch's thread count
    InputStamps stamps(&entry, stampTensors, stampData); // oneDNN weights packed once
    Py_BEGIN_ALLOW_THREADS entry.fn(args.data());
    Py_END_ALLOW_THREADS stamps.finish();
  }
  return true;
}

} // namespace

bool runGraph(const Entry &entry, llvm::ArrayRef<PyObject *> inputs, std::vector<PyRef> &results) {
  return runGraphUnchecked(entry, inputs, results) && checkIndices(entry, results);
}

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

//===- Entry.cpp - running a compiled entry on torch tensors -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Builds memref descriptors from the input tensors' data pointers (sizes
// and strides are known from the guards), allocates outputs through torch
// (so its allocator is used: before the call, or where the code first
// writes a big one, CallResources.h) and calls the compiled function.
// Gathering inputs and rebuilding results: EntryResults.cpp.
//===----------------------------------------------------------------------===//
#include "Entry.h"
#include "GilOnce.h"

#include "CudaEntry.h"
#include "InputStamps.h"
#include "CallResources.h"
#include "hook/Stats.h"
#include "capture/values/InputLayouts.h"

#include "runtime/cpu/CallHooks.h"
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
                       std::vector<PyRef> &results, llvm::MutableArrayRef<PyRef> owned) {
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
    bool isOwned = !owned.empty() && owned[i];
    if (entry.inputs[i].makeContiguous) {
      ++counters().inputCopies;
      // An owned input's copy takes its slot: the release drops what the code reads.
      PyRef &slot = isOwned ? owned[i] : copies.emplace_back();
      slot = PyRef::steal(contiguousTensor(t));
      if (!slot)
        return false;
      t = slot.get();
    }
    void *p = tensorDataPtr(t);
    if (!p && PyErr_Occurred())
      return false;
    setData(i, p);
    if (t == inputs[i] && entry.inputs[i].isTensor() && !isOwned) {
      stampTensors.push_back(t);
      stampData.push_back(p);
    }
  }
  results.clear();
  results.reserve(entry.results.size());
  std::vector<PyObject *> lazySizes(entry.lazyResults.empty() ? 0 : entry.results.size());
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
    if (j < entry.lazyResults.size() && entry.lazyResults[j]) { // allocated when first written
      lazySizes[j] = size;
      setData(inputs.size() + j, nullptr);
      results.emplace_back();
      continue;
    }
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
  CallResources resources(entry, std::move(lazySizes), results, owned);
  if (!entry.results.empty()) {
    kilnSetNumThreads(torchNumThreads());                // BLAS uses torch's thread count
    InputStamps stamps(&entry, stampTensors, stampData); // oneDNN weights packed once
    rt::CallHooksScope hooks(resources.hooks());
    Py_BEGIN_ALLOW_THREADS entry.fn(args.data());
    Py_END_ALLOW_THREADS stamps.finish();
  }
  return resources.finish();
}

} // namespace

bool runGraph(const Entry &entry, llvm::ArrayRef<PyObject *> inputs, std::vector<PyRef> &results,
              llvm::MutableArrayRef<PyRef> owned) {
  return runGraphUnchecked(entry, inputs, results, owned) && checkIndices(entry, results);
}

} // namespace kiln

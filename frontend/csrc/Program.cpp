//===- Program.cpp - running compiled segments and torch calls in order -----===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements runProgram/runFallback of Program.h. Ownership: the value
// table holds strong references (inputs borrowed from the caller are
// incref'ed into it); results handed back are new references.
//===----------------------------------------------------------------------===//
#include "Program.h"

#include "Entry.h"
#include "PySequence.h"
#include "TensorInfo.h"
#include "hook/Stats.h"

#include "llvm/ADT/SmallVector.h"

#include <functional>

namespace kiln {
namespace {

/// Builds the Python object of `arg` (new reference, null on error).
PyObject *buildArg(const FallbackArg &arg, llvm::ArrayRef<PyObject *> operands) {
  switch (arg.kind) {
  case FallbackArg::Kind::Constant:
    Py_INCREF(arg.constant.get());
    return arg.constant.get();
  case FallbackArg::Kind::Operand:
    Py_INCREF(operands[arg.operand]);
    return operands[arg.operand];
  case FallbackArg::Kind::Tuple:
  case FallbackArg::Kind::List: {
    return buildSequence(
               arg.kind == FallbackArg::Kind::Tuple, (Py_ssize_t)arg.items.size(),
               [&](Py_ssize_t i) { return PyRef::steal(buildArg(arg.items[i], operands)); })
        .release();
  }
  }
  return nullptr;
}

/// Checks that result `i` of `call` has the metadata seen at capture.
bool checkResult(const FallbackCall &call, size_t i, PyObject *t) {
  if (i < call.resultUsed.size() && !call.resultUsed[i])
    return true;
  TensorMeta meta;
  if (!isTensor(t)) {
    PyErr_Format(PyExc_RuntimeError, "kiln: %s (at %s) returned a %s, not a tensor",
                 call.name.c_str(), call.location.c_str(), Py_TYPE(t)->tp_name);
    return false;
  }
  if (!readTensorMeta(t, meta))
    return false;
  if (meta.sizes != call.sizes[i] || meta.dtype != call.dtypes[i]) {
    PyErr_Format(PyExc_RuntimeError,
                 "kiln: %s (at %s) returned a tensor whose shape or dtype differs from the "
                 "one seen at capture (data-dependent?); run this code without kiln",
                 call.name.c_str(), call.location.c_str());
    return false;
  }
  return true;
}

} // namespace

std::string FallbackCall::signature() const {
  std::string s = name + "(";
  std::function<void(const FallbackArg &)> add = [&](const FallbackArg &a) {
    if (a.kind == FallbackArg::Kind::Operand) {
      s += "%" + std::to_string(a.operand);
    } else if (a.kind == FallbackArg::Kind::Constant) {
      PyRef r = PyRef::steal(PyObject_Repr(a.constant.get()));
      const char *c = r ? PyUnicode_AsUTF8(r.get()) : nullptr;
      s += c ? c : "?";
      PyErr_Clear();
    } else {
      bool tuple = a.kind == FallbackArg::Kind::Tuple;
      s += tuple ? "(" : "[";
      for (const FallbackArg &item : a.items) {
        add(item);
        s += ", ";
      }
      s += tuple ? ")" : "]";
    }
  };
  for (const FallbackArg &a : args) {
    add(a);
    s += ", ";
  }
  for (const auto &[key, a] : kwargs) {
    const char *k = PyUnicode_AsUTF8(key.get());
    s += std::string(k ? k : "?") + "=";
    add(a);
    s += ", ";
  }
  return s + ")";
}

bool runFallback(const FallbackCall &call, llvm::ArrayRef<PyObject *> operands,
                 std::vector<PyRef> &out) {
  ++counters().fallbackCalls;
  PyRef args = PyRef::steal(PyTuple_New((Py_ssize_t)call.args.size()));
  if (!args)
    return false;
  for (size_t i = 0; i < call.args.size(); ++i) {
    PyObject *a = buildArg(call.args[i], operands);
    if (!a)
      return false;
    PyTuple_SET_ITEM(args.get(), (Py_ssize_t)i, a);
  }
  PyRef kwargs;
  if (!call.kwargs.empty()) {
    kwargs = PyRef::steal(PyDict_New());
    if (!kwargs)
      return false;
    for (const auto &[key, value] : call.kwargs) {
      PyRef v = PyRef::steal(buildArg(value, operands));
      if (!v || PyDict_SetItem(kwargs.get(), key.get(), v.get()) < 0)
        return false;
    }
  }
  PyRef r = PyRef::steal(PyObject_Call(call.callable.get(), args.get(), kwargs.get()));
  if (!r)
    return false;
  if (call.tupleResult) {
    if (!PyTuple_Check(r.get()) || PyTuple_GET_SIZE(r.get()) != (Py_ssize_t)call.sizes.size()) {
      PyErr_Format(PyExc_RuntimeError, "kiln: %s (at %s) did not return a %zu-tuple",
                   call.name.c_str(), call.location.c_str(), call.sizes.size());
      return false;
    }
    for (size_t i = 0; i < call.sizes.size(); ++i) {
      PyObject *t = PyTuple_GET_ITEM(r.get(), (Py_ssize_t)i);
      if (!checkResult(call, i, t))
        return false;
      out.push_back(PyRef::borrow(t));
    }
    return true;
  }
  if (!checkResult(call, 0, r.get()))
    return false;
  out.push_back(std::move(r));
  return true;
}

bool runProgram(const Program &program, llvm::ArrayRef<PyObject *> inputs,
                std::vector<PyRef> &results) {
  std::vector<PyRef> values(program.numValues);
  for (size_t i = 0; i < inputs.size(); ++i) {
    values[i] = PyRef::borrow(inputs[i]);
    if (i < program.inputOrders.size() && !program.inputOrders[i].empty()) { // a view
      PyRef dims = PyRef::steal(intTuple(program.inputOrders[i]));
      values[i] = dims ? PyRef::steal(PyObject_CallMethod(inputs[i], "permute", "(O)", dims.get()))
                       : PyRef();
      if (!values[i])
        return false;
    }
  }
  llvm::SmallVector<PyObject *, 16> in;
  llvm::SmallVector<PyRef, 4> copies;
  std::vector<PyRef> out;
  for (const ProgramStep &step : program.steps) {
    in.clear();
    copies.clear();
    out.clear();
    for (size_t k = 0; k < step.in.size(); ++k) {
      PyObject *v = values[step.in[k]].get();
      if (step.kind == ProgramStep::Kind::Graph && step.contiguous[k]) {
        counters().inputCopies += step.in[k] < (int)inputs.size();
        copies.push_back(PyRef::steal(contiguousTensor(v)));
        if (!copies.back())
          return false;
        v = copies.back().get();
      }
      in.push_back(v);
    }
    bool ok = step.kind == ProgramStep::Kind::Graph ? runGraph(*step.graph, in, out)
                                                    : runFallback(step.call, in, out);
    if (!ok)
      return false;
    if (out.size() != step.out.size()) {
      PyErr_SetString(PyExc_RuntimeError, "kiln: a program step returned the wrong results");
      return false;
    }
    for (size_t k = 0; k < out.size(); ++k)
      values[step.out[k]] = std::move(out[k]);
  }
  results.clear();
  for (int slot : program.resultSlots)
    results.push_back(values[slot]);
  return true;
}

} // namespace kiln

//===- Resume.cpp - running the rest of a frame after a graph break ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Resume.h. Ownership: every PyObject* argument is borrowed;
// results are new references; ResumePlan holds strong references to its
// code objects.
//===----------------------------------------------------------------------===//
#include "capture/breaks/Resume.h"

#include "PyErrors.h"

#include <algorithm>

namespace kiln {
namespace {

/// kiln._resume.<name> (a new reference, or null with an error set).
PyRef resumeAttr(const char *name) {
  PyRef m = PyRef::steal(PyImport_ImportModule("kiln._resume"));
  return m ? PyRef::steal(PyObject_GetAttrString(m.get(), name)) : PyRef();
}

PyRef strTuple(const std::vector<std::string> &v) {
  PyRef t = PyRef::steal(PyTuple_New(v.size()));
  for (size_t i = 0; i < v.size(); ++i)
    PyTuple_SET_ITEM(t.get(), i, PyUnicode_FromString(v[i].c_str()));
  return t;
}

/// A function running `code` in `func`'s globals with its closure.
PyObject *makeFunction(PyObject *code, PyObject *func, bool closure) {
  PyObject *fn = PyFunction_New(code, PyFunction_GET_GLOBALS(func));
  PyObject *cells = PyFunction_GET_CLOSURE(func);
  if (fn && closure && cells && PyFunction_SetClosure(fn, cells) < 0)
    Py_CLEAR(fn);
  return fn;
}

} // namespace

int planBreak(PyObject *code, int failOffset, std::string &why) {
  PyRef plan = resumeAttr("plan");
  PyRef r =
      plan ? PyRef::steal(PyObject_CallFunction(plan.get(), "Oi", code, failOffset)) : PyRef();
  if (!r) {
    why = takePythonErrorText();
    return -1;
  }
  return (int)PyLong_AsLong(r.get());
}

std::shared_ptr<ResumePlan> buildResumePlan(PyObject *code, int startOffset, int failOffset,
                                            const BreakState &state, std::string &why) {
  PyRef build = resumeAttr("build");
  PyRef needed = PyRef::steal(PyTuple_New(state.needed.size()));
  for (size_t i = 0; i < state.needed.size(); ++i)
    PyTuple_SET_ITEM(needed.get(), i, PyLong_FromLong(state.needed[i]));
  PyRef layout = PyRef::steal(PyUnicode_FromString(state.layout.c_str()));
  PyRef locals = strTuple(state.locals), cells = strTuple(state.cells);
  PyRef r = build ? PyRef::steal(PyObject_CallFunction(build.get(), "OiiOOOO", code, startOffset,
                                                       failOffset, layout.get(), locals.get(),
                                                       cells.get(), needed.get()))
                  : PyRef();
  if (!r || !PyTuple_Check(r.get()) || PyTuple_GET_SIZE(r.get()) != 3) {
    why = r ? "kiln._resume.build returned a bad value" : takePythonErrorText();
    return nullptr;
  }
  auto plan = std::make_shared<ResumePlan>();
  plan->stub = PyRef::borrow(PyTuple_GET_ITEM(r.get(), 0));
  PyObject *resumes = PyTuple_GET_ITEM(r.get(), 1);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(resumes); ++i)
    plan->resumes.push_back(PyRef::borrow(PyTuple_GET_ITEM(resumes, i)));
  plan->prefix = PyRef::borrow(PyTuple_GET_ITEM(r.get(), 2));
  plan->sourced = state.sourced;
  plan->copied = state.copied;
  return plan;
}

PyObject *prefixFunction(const ResumePlan &plan, PyObject *func) {
  return makeFunction(plan.prefix.get(), func, true);
}

PyObject *runBreak(const ResumePlan &plan, PyObject *state, const std::vector<PyRef> &values,
                   PyObject *func) {
  if (!PyTuple_Check(state)) {
    PyErr_SetString(PyExc_RuntimeError, "kiln: a graph break's state is not a tuple");
    return nullptr;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(state);
  PyRef args = PyRef::steal(PyTuple_New(2 + n));
  if (!args)
    return nullptr;
  for (int i = 0; i < 2; ++i) {
    PyObject *fn = i < (int)plan.resumes.size() ? makeFunction(plan.resumes[i].get(), func, true)
                                                : (Py_INCREF(Py_None), Py_None);
    if (!fn)
      return nullptr;
    PyTuple_SET_ITEM(args.get(), i, fn);
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *o = PyTuple_GET_ITEM(state, i);
    Py_INCREF(o);
    PyTuple_SET_ITEM(args.get(), 2 + i, o);
  }
  // Objects of the frame keep their identity; containers made at capture
  // are new per call, as in eager.
  for (auto [item, source] : plan.sourced) {
    PyObject *o = values[source].get();
    Py_INCREF(o);
    PyTuple_SetItem(args.get(), 2 + item, o); // steals o, releases the old item
  }
  // One copy per object: a list held by a local and by the stack (e.g.
  // `size[1] = ...` breaking) stays one list, as in eager.
  std::vector<std::pair<PyObject *, PyObject *>> copies; // original -> copy (borrowed)
  for (int item : plan.copied) {
    PyObject *o = PyTuple_GET_ITEM(args.get(), 2 + item);
    auto seen = std::find_if(copies.begin(), copies.end(), [&](auto &p) { return p.first == o; });
    PyObject *c = seen != copies.end()   ? (Py_INCREF(seen->second), seen->second)
                  : PyList_CheckExact(o) ? PySequence_List(o)
                  : PyDict_CheckExact(o) ? PyDict_Copy(o)
                  : PySet_CheckExact(o)  ? PySet_New(o)
                                         : PyByteArray_FromObject(o);
    if (c && seen == copies.end())
      copies.push_back({o, c}); // `o` stays alive: `state` holds it
    if (!c || PyTuple_SetItem(args.get(), 2 + item, c) < 0)
      return nullptr;
  }
  PyRef stub = PyRef::steal(makeFunction(plan.stub.get(), func, false));
  if (!stub)
    return nullptr;
  return PyObject_Call(stub.get(), args.get(), nullptr);
}

} // namespace kiln

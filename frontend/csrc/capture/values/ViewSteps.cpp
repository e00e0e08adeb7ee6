//===- ViewSteps.cpp - view steps as Python data, replayed at capture -----===//
// SPDX-License-Identifier: Apache-2.0
//
// See ViewSteps.h.
//===----------------------------------------------------------------------===//
#include "capture/values/ViewSteps.h"

#include "GilOnce.h"
#include "Guards.h"

namespace kiln {

PyRef viewStepsTuple(const Var &v) {
  PyRef steps = PyRef::steal(PyTuple_New(v.viewSteps.size()));
  for (size_t i = 0; i < v.viewSteps.size(); ++i) {
    PyRef name = PyRef::steal(PyUnicode_FromString(v.viewSteps[i].first.c_str()));
    const Var::ViewStep &st = v.viewSteps[i];
    PyTuple_SET_ITEM(steps.get(), i,
                     st.kwargs ? PyTuple_Pack(3, name.get(), st.second.get(), st.kwargs.get())
                               : PyTuple_Pack(2, name.get(), st.second.get()));
  }
  return steps;
}

PyRef inputLayout(const Capture &out, int input, const Var *view) {
  if (input < 0 || input >= (int)out.inputs.size())
    return PyRef();
  const Guard *tg = nullptr;
  for (const Guard &g : out.guards)
    if (g.kind == Guard::Kind::Tensor && g.source == out.inputs[input].source)
      tg = &g;
  if (!tg || tg->strides.size() != tg->sizes.size())
    return PyRef();
  PyRef steps = view ? viewStepsTuple(*view) : PyRef::steal(PyTuple_New(0));
  PyRef sizes = PyRef::steal(intTuple(tg->sizes));
  PyRef strides = PyRef::steal(intTuple(tg->strides));
  return PyRef::steal(PyTuple_Pack(3, sizes.get(), strides.get(), steps.get()));
}

PyObject *viewPositionsFunction() {
  static PyOnce once;
  return once.get([] {
    PyRef mod = PyRef::steal(PyImport_ImportModule("kiln._fallback"));
    PyObject *fn = mod ? PyObject_GetAttrString(mod.get(), "view_positions") : nullptr;
    PyErr_Clear();
    return fn;
  });
}

bool viewStepsCopy(PyObject *layout, const Var &v) {
  bool mayCopy = false;
  for (const Var::ViewStep &st : v.viewSteps)
    mayCopy |= st.first == "contiguous" || st.first == "reshape";
  static PyOnce once;
  PyObject *helper = once.imported("kiln._fallback", "view_copies");
  if (!mayCopy || !layout || !helper)
    return false;
  PyObject *sizes = PyTuple_GET_ITEM(layout, 0);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(sizes); ++i)
    if (PyLong_AsLongLong(PyTuple_GET_ITEM(sizes, i)) < 0) // a symbolic size
      return false;
  PyRef answer =
      PyRef::steal(PyObject_CallFunctionObjArgs(helper, layout, viewStepsTuple(v).get(), nullptr));
  int copies = answer ? PyObject_IsTrue(answer.get()) : -1;
  PyErr_Clear();
  return copies == 1;
}

} // namespace kiln

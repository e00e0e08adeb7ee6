//===- IdTokens.h - id() of values whose identity is per call ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to frontend/csrc/capture. `id(v)` of a value that is a new object
// on every eager call (a tensor of the graph or a graph input, a container
// or object built in the frame) has no number the compiled code could bake
// in. The capture answers it with a token: an instance of a private class
// that compares and hashes by identity, one token per object (the same
// object gives the same token), so `id(a) == id(b)`, `id(a) != id(b)` and
// `{id(t): t}` behave as in eager inside the frame. A token must never
// leave the frame (returned, live at a break, stored by a side effect):
// those paths refuse it (Capture.cpp, BreakState.cpp, SideEffects.cpp), and
// anything else done with one (arithmetic, formatting) raises at capture,
// which breaks the graph.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_VALUES_IDTOKENS_H
#define KILN_FRONTEND_CAPTURE_VALUES_IDTOKENS_H

#include "PyRef.h"
#include "GilOnce.h"
#include "capture/values/Value.h"

#include <Python.h>

namespace kiln {

/// Whether tensor Vars `a` and `b` are one Python object (`is`, id() tokens,
/// identity in containers): 1 the same Var, or Vars of one IR value none of
/// which is a view, a copy or a contiguous(); 0 different objects; -1 eager's
/// answer is not known at capture (`why` says why: the caller breaks).
int sameTensorIdentity(const VarP &a, const VarP &b, const char **why);

/// The private token class (made once; process lifetime).
inline PyObject *idTokenType() {
  static PyOnce once;
  return once.get([] {
    PyObject *t = PyObject_CallFunction(reinterpret_cast<PyObject *>(&PyType_Type), "s(O){}",
                                        "kiln_id_of_a_value_made_in_the_frame",
                                        reinterpret_cast<PyObject *>(&PyBaseObject_Type));
    PyErr_Clear();
    return t;
  });
}

/// Whether `o` is an id() token.
inline bool isIdToken(PyObject *o) {
  PyObject *t = idTokenType();
  return t && o && reinterpret_cast<PyObject *>(Py_TYPE(o)) == t;
}

/// Whether `o` is an id() token or a tuple/list/dict/set holding one.
inline bool holdsIdToken(PyObject *o, int depth = 0) {
  if (!o || depth > 8)
    return false;
  if (isIdToken(o))
    return true;
  if (PyTuple_Check(o) || PyList_Check(o)) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i)
      if (holdsIdToken(PySequence_Fast_ITEMS(o)[i], depth + 1))
        return true;
  } else if (PyDict_Check(o)) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &k, &v))
      if (holdsIdToken(k, depth + 1) || holdsIdToken(v, depth + 1))
        return true;
  } else if (PyAnySet_Check(o)) {
    PyRef items = PyRef::steal(PySequence_Tuple(o));
    PyErr_Clear();
    return items && holdsIdToken(items.get(), depth + 1);
  }
  return false;
}

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_VALUES_IDTOKENS_H

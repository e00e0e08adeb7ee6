//===- PyErrors.cpp - Python exceptions as text -------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements PyErrors.h.
//===----------------------------------------------------------------------===//
#include <Python.h>

#include "PyErrors.h"

namespace kiln {

std::string takePythonErrorText() {
  if (!PyErr_Occurred())
    return "";
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string text = type ? reinterpret_cast<PyTypeObject *>(type)->tp_name : "error";
  if (value) {
    if (PyObject *s = PyObject_Str(value)) {
      if (const char *utf8 = PyUnicode_AsUTF8(s); utf8 && *utf8)
        text += std::string(": ") + utf8;
      Py_DECREF(s);
    }
  }
  PyErr_Clear(); // PyObject_Str/PyUnicode_AsUTF8 may have failed
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return text;
}

} // namespace kiln

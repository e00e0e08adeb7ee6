//===- PyRef.h - owning PyObject* handle ---------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A move-only RAII holder of one strong reference, used everywhere the
// extension keeps a PyObject*. `PyRef::steal(p)` takes a new reference;
// `PyRef::borrow(p)` increments a borrowed one.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_PYREF_H
#define KILN_FRONTEND_PYREF_H

#include <Python.h>

#include <string>
#include <utility>

namespace kiln {

/// Owns one strong reference to a Python object (or nothing).
class PyRef {
public:
  PyRef() = default;
  PyRef(const PyRef &o) : p_(o.p_) { Py_XINCREF(p_); }
  PyRef(PyRef &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  PyRef &operator=(PyRef o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~PyRef() { Py_XDECREF(p_); }

  /// Takes ownership of a new reference (may be null).
  static PyRef steal(PyObject *p) {
    PyRef r;
    r.p_ = p;
    return r;
  }
  /// Adds a reference to a borrowed object (may be null).
  static PyRef borrow(PyObject *p) {
    Py_XINCREF(p);
    return steal(p);
  }
  /// The object, still owned by this handle.
  PyObject *get() const { return p_; }
  /// Gives up ownership: the caller now owns the reference.
  PyObject *release() { return std::exchange(p_, nullptr); }
  explicit operator bool() const { return p_ != nullptr; }

private:
  PyObject *p_ = nullptr;
};

/// `str(o)` (or `repr(o)`) as UTF-8; "?" when it raises (error cleared).
inline std::string pyText(PyObject *o, bool repr = false) {
  PyRef s = PyRef::steal(repr ? PyObject_Repr(o) : PyObject_Str(o));
  const char *c = s ? PyUnicode_AsUTF8(s.get()) : nullptr;
  if (!c) {
    PyErr_Clear();
    return "?";
  }
  return c;
}

} // namespace kiln

#endif // KILN_FRONTEND_PYREF_H

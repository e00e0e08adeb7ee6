//===- GilOnce.h - values computed once by a GIL holder -----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The one way the extension keeps a lazily computed, process-lifetime value
// whose computation runs Python (an import, an attribute lookup, a call).
// A C++ function-local static must not do that: its initializer runs under
// the compiler's guard lock, Python may release the GIL inside it, and a
// second thread that holds the GIL then blocks on the guard forever (the
// first can never take the GIL back). GilOnce takes no lock: a thread that
// finds no value computes one with the GIL held; if the GIL was released
// meanwhile and another thread published first, the later value is dropped
// and the published one returned, so every caller sees one value.
// A `static GilOnce<T>` is constant-initialized (no guard) and never
// destroyed: the value lives until the process ends.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_GILONCE_H
#define KILN_FRONTEND_GILONCE_H

#include "PyRef.h"

#include <atomic>
#include <memory>

namespace kiln {

/// A value of type T computed on first use by a thread holding the GIL
/// (see the header). Callers of get() hold the GIL.
template <class T> class GilOnce {
public:
  constexpr GilOnce() = default;

  /// The value, computed by `make()` (returning a T) if none is published
  /// yet. `make` may run Python and release the GIL.
  template <class Make> const T &get(Make &&make) {
    if (T *v = value_.load(std::memory_order_acquire))
      return *v;
    auto made = std::make_unique<T>(make());
    T *expected = nullptr;
    if (value_.compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel))
      return *made.release(); // published: lives for the process
    return *expected;         // another thread published first; ours is dropped
  }

private:
  std::atomic<T *> value_{nullptr};
};

/// GilOnce of one Python object: `make()` returns a new reference or null
/// (null is kept too, with whatever Python error `make` left set for its
/// caller). The reference is never released.
class PyOnce {
public:
  constexpr PyOnce() = default;

  /// The object (borrowed; null when `make` failed).
  template <class Make> PyObject *get(Make &&make) {
    return once_.get([&] { return PyRef::steal(make()); }).get();
  }

  /// `module.name`, imported on first use (borrowed; null, with no Python
  /// error left, when the import or the lookup fails).
  PyObject *imported(const char *module, const char *name) {
    return get([&]() -> PyObject * {
      PyRef mod = PyRef::steal(PyImport_ImportModule(module));
      PyObject *attr = mod ? PyObject_GetAttrString(mod.get(), name) : nullptr;
      PyErr_Clear();
      return attr;
    });
  }

private:
  GilOnce<PyRef> once_;
};

} // namespace kiln

#endif // KILN_FRONTEND_GILONCE_H

//===- InputStamps.cpp - stamping a compiled graph's input tensors --------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements InputStamps.h. A tensor's serial comes from a table keyed by
// the tensor object, filled on first sight with a weak reference whose
// callback (the tensor died) removes the row and drops what the runtime
// cached for that serial, so a later tensor at the same address gets a new
// serial. All state here is used with the GIL held.
//===----------------------------------------------------------------------===//
#include "InputStamps.h"
#include "GilOnce.h"

#include "runtime/cpu/PackedGemm.h"

#include <unordered_map>
#include <unordered_set>

namespace kiln {
namespace {

bool freezeWeights = true;
uint64_t nextSerial = 1;
struct Row {
  uint64_t serial;
  PyObject *weak; ///< owned
};
std::unordered_map<PyObject *, Row> &rows() {
  static auto *m = new std::unordered_map<PyObject *, Row>();
  return *m;
}
std::unordered_map<PyObject *, PyObject *> &byWeak() {
  static auto *m = new std::unordered_map<PyObject *, PyObject *>();
  return *m;
}
/// Entries whose shims asked for a stamp (an address may be reused by a
/// later entry: it is then stamped without need, which costs time only).
std::unordered_set<const void *> &asking() {
  static auto *s = new std::unordered_set<const void *>();
  return *s;
}

PyObject *tensorDied(PyObject *, PyObject *weak) {
  auto it = byWeak().find(weak);
  if (it != byWeak().end()) {
    auto row = rows().find(it->second);
    if (row != rows().end()) {
      kilnDnnlForgetWeights(row->second.serial);
      kilnGemmForgetWeights(row->second.serial);
      rows().erase(row);
    }
    byWeak().erase(it);
    Py_DECREF(weak);
  }
  Py_RETURN_NONE;
}

PyMethodDef diedDef = {"_kiln_tensor_died", tensorDied, METH_O, nullptr};

/// The serial of tensor `t`, 0 when it cannot be held weakly.
uint64_t serialOf(PyObject *t) {
  auto it = rows().find(t);
  if (it != rows().end())
    return it->second.serial;
  static PyOnce died;
  PyObject *callback = died.get([] { return PyCFunction_New(&diedDef, nullptr); });
  PyObject *weak = callback ? PyWeakref_NewRef(t, callback) : nullptr;
  if (!weak) {
    PyErr_Clear();
    return 0;
  }
  uint64_t serial = nextSerial++;
  rows()[t] = {serial, weak};
  byWeak()[weak] = t;
  return serial;
}

/// t._version, or -1 (inference tensors have none).
int64_t versionOf(PyObject *t) {
  PyObject *v = PyObject_GetAttrString(t, "_version");
  int64_t out = v ? PyLong_AsLongLong(v) : -1;
  Py_XDECREF(v);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return -1;
  }
  return out;
}
} // namespace

InputStamps::InputStamps(const void *key, const std::vector<PyObject *> &tensors,
                         const std::vector<void *> &data)
    : key_(key) {
  kilnTakeStampAsked();
  if (!freezeWeights || !asking().count(key))
    return;
  stamps_.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    int64_t version = versionOf(tensors[i]);
    uint64_t serial = version < 0 ? 0 : serialOf(tensors[i]);
    if (serial)
      stamps_.push_back({data[i], serial, version});
  }
  kilnSetInputStamps(stamps_.data(), stamps_.size());
}

InputStamps::~InputStamps() { kilnSetInputStamps(nullptr, 0); }

void InputStamps::finish() {
  if (kilnTakeStampAsked() && freezeWeights)
    asking().insert(key_);
}

void setFreezeWeights(bool on) { freezeWeights = on; }

} // namespace kiln

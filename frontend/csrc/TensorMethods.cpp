//===- TensorMethods.cpp - torch.Tensor methods replaced by the user ------===//
// SPDX-License-Identifier: Apache-2.0
//
// torch.Tensor's own dict is recorded the first time a capture asks (the
// "snapshot"); a name counts as replaced when its value is no longer the
// recorded one, when it shadows a torch._C.TensorBase method it did not
// shadow then, when it was deleted, or when the recorded value is already
// a Python function from outside torch (a patch made before kiln looked).
// The answer is recomputed only when the class's version tag changed.
//===----------------------------------------------------------------------===//
#include "TensorMethods.h"

#include "capture/breaks/GraphBreak.h"
#include "GilOnce.h"
#include "TensorInfo.h"

#include <map>

namespace kiln {
namespace {

PyTypeObject *tensorType() {
  static PyOnce typeOnce;
  return reinterpret_cast<PyTypeObject *>(
      typeOnce.get([] { return PyObject_GetAttrString(torchModule(), "Tensor"); }));
}

/// The class's version tag, assigned first if the class was changed since
/// the last lookup; 0 when CPython has none to give.
unsigned versionTag(PyTypeObject *t) {
#if PY_VERSION_HEX >= 0x030C0000
  PyUnstable_Type_AssignVersionTag(t);
#else
  static PyOnce nameOnce;
  _PyType_Lookup(t, nameOnce.get([] { return PyUnicode_InternFromString("__add__"); }));
#endif
  return PyType_HasFeature(t, Py_TPFLAGS_VALID_VERSION_TAG) ? t->tp_version_tag : 0;
}

/// A Python function (or one wrapped as a classmethod/staticmethod) whose
/// module is not torch's.
bool foreignFunction(PyObject *v) {
  if (PyObject_TypeCheck(v, &PyClassMethod_Type) || PyObject_TypeCheck(v, &PyStaticMethod_Type)) {
    PyRef fn = PyRef::steal(PyObject_GetAttrString(v, "__func__"));
    PyErr_Clear();
    return fn && foreignFunction(fn.get());
  }
  if (!PyFunction_Check(v))
    return false;
  PyObject *module = PyFunction_GET_MODULE(v);
  if (!module || !PyUnicode_Check(module))
    return true;
  std::string m = pyText(module);
  return !(m == "torch" || m.rfind("torch.", 0) == 0);
}

struct Replaced {
  unsigned tag = 0;
  std::map<std::string, PyRef> methods; ///< name -> what torch.Tensor.<name> is now
  PyRef asDict;                         ///< the same as a Python dict (a guard's expectation)
};

const Replaced &replaced() {
  static GilOnce<PyRef> snapshotOnce;
  PyTypeObject *t = tensorType();
  const PyRef &snapshot = snapshotOnce.get([&] { return PyRef::steal(PyDict_Copy(t->tp_dict)); });
  static Replaced &cache = *new Replaced; // never destroyed: it holds Python objects
  unsigned tag = versionTag(t);
  if (tag != 0 && tag == cache.tag)
    return cache;
  Replaced now;
  now.tag = tag;
  PyObject *base = reinterpret_cast<PyObject *>(t->tp_base);
  PyObject *baseDict = base ? reinterpret_cast<PyTypeObject *>(base)->tp_dict : nullptr;
  PyObject *name, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(t->tp_dict, &pos, &name, &value)) {
    if (!PyUnicode_Check(name))
      continue;
    PyObject *was = PyDict_GetItemWithError(snapshot.get(), name);
    bool shadowsBase = baseDict && PyDict_GetItemWithError(baseDict, name);
    PyErr_Clear();
    bool isReplaced = was ? was != value || foreignFunction(value) : shadowsBase;
    if (isReplaced)
      now.methods[pyText(name)] = PyRef::borrow(value);
  }
  pos = 0;
  while (PyDict_Next(snapshot.get(), &pos, &name, &value)) {
    if (!PyUnicode_Check(name) || PyDict_GetItemWithError(t->tp_dict, name))
      continue;
    PyErr_Clear();
    PyObject *found = _PyType_Lookup(t, name); // deleted: the base's, if any
    now.methods[pyText(name)] = PyRef::borrow(found ? found : Py_None);
  }
  now.asDict = PyRef::steal(PyDict_New());
  for (const auto &[n, v] : now.methods)
    PyDict_SetItemString(now.asDict.get(), n.c_str(), v.get());
  cache = std::move(now);
  return cache;
}

} // namespace

Guard tensorMethodsGuard() {
  const Replaced &r = replaced();
  if (r.tag == 0)
    throw Unsupported(BreakCategory::Other,
                      "torch.Tensor has no type version tag to guard its methods by (it was "
                      "changed too often)");
  Guard g;
  g.kind = Guard::Kind::TensorMethods;
  g.source = -1;
  PyRef tag = PyRef::steal(PyLong_FromUnsignedLong(r.tag));
  g.expected = PyRef::steal(PyTuple_Pack(2, tag.get(), r.asDict.get()));
  return g;
}

bool tensorMethodsUnchanged(PyObject *expected) {
  PyTypeObject *t = tensorType();
  unsigned long tag = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(expected, 0));
  if (PyType_HasFeature(t, Py_TPFLAGS_VALID_VERSION_TAG) && t->tp_version_tag == tag)
    return true;
  // Changed since: the same methods replaced (by the same objects)?
  const Replaced &now = replaced();
  PyObject *then = PyTuple_GET_ITEM(expected, 1);
  if (now.tag == 0 || PyDict_GET_SIZE(then) != (Py_ssize_t)now.methods.size())
    return false;
  for (const auto &[name, value] : now.methods)
    if (PyDict_GetItemString(then, name.c_str()) != value.get())
      return false;
  return true;
}

PyObject *replacedTensorMethod(const std::string &name) {
  const Replaced &r = replaced();
  auto it = r.methods.find(name);
  return it == r.methods.end() ? nullptr : it->second.get();
}

std::string replacedTensorOperator() {
  for (const auto &[name, value] : replaced().methods) {
    bool dunder =
        name.size() > 4 && name.rfind("__", 0) == 0 && name.compare(name.size() - 2, 2, "__") == 0;
    if (dunder && name != "__repr__" && name != "__str__" && name != "__format__" &&
        name != "__doc__")
      return name;
  }
  return "";
}

} // namespace kiln

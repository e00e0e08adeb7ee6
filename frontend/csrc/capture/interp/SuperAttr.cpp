//===- SuperAttr.cpp - super() attributes and object.__getattribute__ -------===//
// SPDX-License-Identifier: Apache-2.0
//
// `super().name` inside an inlined method: the parent's Python function
// bound to the receiver's Var (so attribute reads keep their guarded
// sources), object's slots for user objects built in the frame, and
// `super().__getattribute__(key)` in a class that overrides
// __getattribute__ in Python (HF's PretrainedConfig remaps keys through its
// attribute_map this way, on every `config.x` read in a forward). That last
// one is object's generic lookup, done here in Python's order with guards
// on where the value was found: a data descriptor of the class breaks, the
// instance __dict__ item (DictItem source), a class attribute that is no
// descriptor (TypeLookup source, guarded as not shadowed by __dict__), or a
// method bound symbolically; anything else breaks.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"

namespace kiln {
namespace {

/// object.__getattribute__ (borrowed: object's type dict holds it).
PyObject *objectGetattribute() {
  return PyDict_GetItemString(PyBaseObject_Type.tp_dict, "__getattribute__");
}

/// What `super()` object `superObj` finds for `name` in the MRO after its
/// class, unbound (borrowed), or null.
PyObject *superLookup(PyObject *superObj, PyObject *name) {
  PyRef thisClass = PyRef::steal(PyObject_GetAttrString(superObj, "__thisclass__"));
  PyRef selfClass = PyRef::steal(PyObject_GetAttrString(superObj, "__self_class__"));
  PyErr_Clear();
  if (!thisClass || !selfClass || !PyType_Check(selfClass.get()))
    return nullptr;
  PyObject *mro = reinterpret_cast<PyTypeObject *>(selfClass.get())->tp_mro;
  bool after = false;
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject *cls = PyTuple_GET_ITEM(mro, i);
    if (!after) {
      after = cls == thisClass.get();
      continue;
    }
    PyObject *item = PyDict_GetItemWithError(reinterpret_cast<PyTypeObject *>(cls)->tp_dict, name);
    if (item || PyErr_Occurred()) {
      PyErr_Clear();
      return item;
    }
  }
  return nullptr;
}

VarP boundMethodVar(PyRef fn, const VarP &self) {
  auto m = std::make_shared<Var>();
  m->kind = Var::Kind::BoundMethod;
  m->obj = std::move(fn);
  m->self = self;
  return m;
}

} // namespace

bool isObjectGetattribute(PyObject *fn) { return fn && fn == objectGetattribute(); }

VarP Interpreter::superAttr(PyObject *superObj, const VarP &self, PyObject *name) {
  std::string attr = pyText(name);
  if (attr == "__getattribute__" && self->isConst() &&
      superLookup(superObj, name) == objectGetattribute())
    return boundMethodVar(PyRef::borrow(objectGetattribute()), self); // genericAttr when called
  PyRef v = PyRef::steal(PyObject_GetAttr(superObj, name));
  if (v && self->kind == Var::Kind::Object &&
      (PyFunction_Check(v.get()) || Py_TYPE(v.get()) == &PyWrapperDescr_Type)) {
    // super() of a user object: the parent's function (or object's
    // __init__/__setattr__ slot, UserObjects.cpp) bound to the Var.
    keepAlive_.push_back(v);
    return boundMethodVar(v, self);
  }
  if (v && PyCFunction_Check(v.get()) &&
      v.get() == PyDict_GetItemString(PyBaseObject_Type.tp_dict, "__new__"))
    return makeConst(v); // super().__new__(cls) in a Python __new__ (UserObjects.cpp)
  if (v && PyMethod_Check(v.get()) && PyFunction_Check(PyMethod_GET_FUNCTION(v.get())) &&
      PyMethod_GET_SELF(v.get()) == self->obj.get())
    return boundMethodVar(PyRef::borrow(PyMethod_GET_FUNCTION(v.get())), self);
  PyErr_Clear();
  throw Unsupported("super()." + attr + " is not a Python method");
}

VarP Interpreter::genericAttr(const VarP &obj, PyObject *name) {
  PyObject *o = obj->obj.get();
  int src = sourceOf(obj);
  std::string what = "object.__getattribute__(" + pyText(reinterpret_cast<PyObject *>(Py_TYPE(o))) +
                     ", '" + pyText(name) + "')";
  PyObject *clsAttr = _PyType_Lookup(Py_TYPE(o), name); // borrowed
  if (src < 0 || (clsAttr && Py_TYPE(clsAttr)->tp_descr_set))
    throw Unsupported(what + ": a data descriptor or an object without a source");
  PyObject **dictPtr = _PyObject_GetDictPtr(o);
  PyObject *dict = dictPtr ? *dictPtr : nullptr;
  int dictSrc = dict ? out_.sources.add(Source::Kind::ObjDict, src, 0, nullptr) : -1;
  if (PyObject *v = dict ? PyDict_GetItemWithError(dict, name) : nullptr)
    return fromSource(v, out_.sources.add(Source::Kind::DictItem, dictSrc, 0, name));
  PyErr_Clear();
  if (clsAttr && PyFunction_Check(clsAttr))
    return boundClassMethod(obj, name, clsAttr);
  if (!clsAttr || Py_TYPE(clsAttr)->tp_descr_get)
    throw Unsupported(what + ": not an instance or plain class attribute");
  if (dictSrc >= 0)
    guardNotInDict(dictSrc, name);
  int typeSrc =
      out_.sources.add(Source::Kind::Constant, -1, 0, reinterpret_cast<PyObject *>(Py_TYPE(o)));
  return fromSource(clsAttr, out_.sources.add(Source::Kind::TypeLookup, typeSrc, 0, name));
}

} // namespace kiln

//===- UserObjects.cpp - instances of user classes built in the capture -----===//
// SPDX-License-Identifier: Apache-2.0
//
// Calling a plain Python class inside the compiled code (a config object,
// a dataclass, a namedtuple, a small helper with methods) does not break
// the graph: the instance is an Object Var (`obj` its class, `keys`/`items`
// its attributes) made by object.__new__ or by the class's pure-Python
// __new__, and its Python __init__ is inlined on it. Attribute reads follow
// object.__getattribute__'s order (data descriptors of the class, the
// instance's attributes, other class attributes, then a Python
// __getattr__); writes go through a Python __setattr__ or property setter
// when the class has one. A namedtuple is a Tuple Var with `obj` = its
// class (made by tuple.__new__ in its generated __new__). An object that
// escapes (returned, stored into Python state, live at a break) is rebuilt
// after the graph with object.__new__ and its final attributes (Entry.cpp);
// class attributes the constructor updates (`Cls.count += 1`) are side
// effects on the class (SideEffects.cpp). Classes whose construction or
// attribute protocol is not plain Python are a categorized break.
//===----------------------------------------------------------------------===//
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/interp/Interp.h"
#include "capture/values/Deques.h"
#include "capture/values/IdentitySets.h"
#include "GilOnce.h"

#include <unordered_map>

namespace kiln {
namespace {

/// The interned str `s` (borrowed, process lifetime).
PyObject *interned(const char *s) {
  static std::unordered_map<std::string, PyObject *> names;
  auto it = names.find(s);
  if (it == names.end())
    it = names.emplace(s, PyUnicode_InternFromString(s)).first;
  return it->second;
}

/// object's entry for `name` in its type dict (borrowed).
PyObject *objectSlot(const char *name) {
  return PyDict_GetItemString(PyBaseObject_Type.tp_dict, name);
}

/// The reason `cls` cannot be built by the capture ("" when it can). A
/// class qualifies when its metaclass is type (or abc.ABCMeta), every class
/// of its MRO but object (and tuple, for namedtuples) is a Python class,
/// and it keeps object's attribute protocol and has no finalizer.
std::string unbuildableReason(PyTypeObject *t) {
  PyObject *meta = reinterpret_cast<PyObject *>(Py_TYPE(t));
  if (meta != reinterpret_cast<PyObject *>(&PyType_Type)) {
    static PyOnce abcMetaOnce;
    PyObject *abcMeta = abcMetaOnce.get([] {
      PyRef abc = PyRef::steal(PyImport_ImportModule("abc"));
      PyObject *m = abc ? PyObject_GetAttrString(abc.get(), "ABCMeta") : nullptr;
      PyErr_Clear();
      return m; // leaked: process lifetime
    });
    if (meta != abcMeta)
      return "its metaclass " + pyText(meta) + " may customize construction";
  }
  PyObject *mro = t->tp_mro;
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); ++i) {
    auto *base = reinterpret_cast<PyTypeObject *>(PyTuple_GET_ITEM(mro, i));
    if (base != &PyBaseObject_Type && base != &PyTuple_Type &&
        !PyType_HasFeature(base, Py_TPFLAGS_HEAPTYPE))
      return "it derives from the C type " + pyText(reinterpret_cast<PyObject *>(base));
  }
  if (_PyType_Lookup(t, interned("__getattribute__")) != objectSlot("__getattribute__") &&
      !PyType_IsSubtype(t, &PyTuple_Type))
    return "it defines __getattribute__";
  if (_PyType_Lookup(t, interned("__del__")))
    return "it defines __del__ (a finalizer)";
  PyObject *abstract = PyDict_GetItemString(t->tp_dict, "__abstractmethods__");
  if (abstract && PyObject_IsTrue(abstract) == 1)
    return "it has abstract methods (eager raises TypeError)";
  PyErr_Clear();
  return "";
}

/// The Python function a staticmethod/classmethod wraps (new reference), or null.
PyRef wrappedFunction(PyObject *descr) {
  PyRef fn = PyRef::steal(PyObject_GetAttrString(descr, "__func__"));
  PyErr_Clear();
  return fn && PyFunction_Check(fn.get()) ? fn : PyRef();
}

/// The class of an Object Var or of a Tuple Var of a user tuple subclass.
PyTypeObject *classOf(const VarP &obj) { return reinterpret_cast<PyTypeObject *>(obj->obj.get()); }

} // namespace

VarP Interpreter::bindClassAttr(const VarP &obj, const VarP &clsVar, PyObject *name,
                                PyObject *descr) {
  // The class attribute is guarded (monkeypatching the class recompiles).
  int typeSrc = out_.sources.add(Source::Kind::Constant, -1, 0, clsVar->obj.get());
  guardValue(makeConst(PyRef::borrow(descr),
                       out_.sources.add(Source::Kind::TypeLookup, typeSrc, 0, name)));
  auto bound = [&](PyObject *fn, const VarP &self) {
    auto m = std::make_shared<Var>();
    m->kind = Var::Kind::BoundMethod;
    m->obj = PyRef::borrow(fn);
    m->self = self;
    keepAlive_.push_back(m->obj);
    return m;
  };
  if (PyFunction_Check(descr))
    return bound(descr, obj);
  if (Py_TYPE(descr) == &PyProperty_Type) { // a property's value: its getter's result
    PyRef fget = PyRef::steal(PyObject_GetAttrString(descr, "fget"));
    PyErr_Clear();
    if (!fget || !PyFunction_Check(fget.get()))
      throw Unsupported(BreakCategory::UserError,
                        "property '" + pyText(name) + "' has no Python getter",
                        hint::kRaisesInEager);
    keepAlive_.push_back(fget);
    std::vector<VarP> args{obj};
    std::map<std::string, VarP> kwargs;
    return inlineFunction(fget.get(), -1, args, kwargs);
  }
  if (Py_TYPE(descr) == &PyClassMethod_Type) {
    if (PyRef fn = wrappedFunction(descr))
      return bound(fn.get(), clsVar);
    throw Unsupported(BreakCategory::PythonBuiltin, "a classmethod that wraps a C function");
  }
  if (Py_TYPE(descr) == &PyStaticMethod_Type) {
    PyRef fn = PyRef::steal(PyObject_GetAttrString(descr, "__func__"));
    PyErr_Clear();
    keepAlive_.push_back(fn);
    return makeConst(fn);
  }
  if (Py_TYPE(descr)->tp_descr_get)
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "class attribute '" + pyText(name) + "' is a " +
                          pyText(reinterpret_cast<PyObject *>(Py_TYPE(descr))) +
                          " descriptor kiln does not run");
  return makeConst(PyRef::borrow(descr));
}

VarP Interpreter::objectAttr(const VarP &obj, PyObject *name, bool missingOk) {
  PyTypeObject *cls = classOf(obj);
  const VarP &clsVar = obj->self ? obj->self : makeConst(obj->obj);
  std::string attr = pyText(name);
  if (attr == "__class__")
    return clsVar;
  if (VarP m = identitySetAttr(obj, attr)) // a set of tensors (IdentitySets.h)
    return m;
  if (VarP m = dequeAttr(obj, attr)) // a deque (Deques.h)
    return m;
  bool isObject = obj->kind == Var::Kind::Object;
  if (!isObject) { // a namedtuple's field
    PyRef fields = PyRef::steal(PyObject_GetAttrString(obj->obj.get(), "_fields"));
    PyErr_Clear();
    for (Py_ssize_t i = 0; fields && PyTuple_Check(fields.get()) &&
                           i < PyTuple_GET_SIZE(fields.get()) && i < (Py_ssize_t)obj->items.size();
         ++i)
      if (PyUnicode_Compare(PyTuple_GET_ITEM(fields.get(), i), name) == 0)
        return obj->items[i];
    PyErr_Clear();
  }
  PyObject *descr = _PyType_Lookup(cls, name); // borrowed
  if (descr && Py_TYPE(descr)->tp_descr_set) { // a data descriptor comes first
    if (Py_TYPE(descr) == &PyProperty_Type)
      return bindClassAttr(obj, clsVar, name, descr); // its getter inlined
    if (!isObject || Py_TYPE(descr) != &PyMemberDescr_Type)
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "attribute '" + attr + "' is a " +
                            pyText(reinterpret_cast<PyObject *>(Py_TYPE(descr))) +
                            " data descriptor kiln does not run");
  }
  if (isObject) { // the instance's own attributes (dict or slots)
    int at = dictFind(obj, name);
    if (at >= 0)
      return obj->items[at];
  }
  if (descr) {
    if (VarP v = overlayAttr(clsVar, attr)) // class state set earlier in this capture
      return v;
    return bindClassAttr(obj, clsVar, name, descr);
  }
  PyObject *getattrHook = _PyType_Lookup(cls, interned("__getattr__"));
  if (getattrHook && PyFunction_Check(getattrHook)) {
    std::vector<VarP> args{obj, makeConst(PyRef::borrow(name))};
    std::map<std::string, VarP> kwargs;
    try {
      return inlineFunction(getattrHook, -1, args, kwargs);
    } catch (const PyRaised &e) { // getattr(obj, name, default), hasattr
      if (!missingOk || !PyErr_GivenExceptionMatches(e.exc.get(), PyExc_AttributeError))
        throw;
      return nullptr;
    }
  }
  if (getattrHook)
    throw Unsupported(BreakCategory::PythonBuiltin, "the class's __getattr__ is not Python code");
  if (missingOk)
    return nullptr;
  std::string message =
      "'" + std::string(cls->tp_name) + "' object has no attribute '" + attr + "'";
  raiseNew(PyExc_AttributeError, PyRef::steal(PyUnicode_FromString(message.c_str())).get(),
           message); // a try/except of the frames may catch it (Exceptions.cpp)
}

void Interpreter::storeObjectAttr(const VarP &obj, PyObject *name, const VarP &value,
                                  bool viaObject) {
  PyTypeObject *cls = classOf(obj);
  std::string attr = pyText(name);
  if (obj->kind != Var::Kind::Object)
    throw Unsupported(BreakCategory::UserError, "cannot set attribute '" + attr + "' of a tuple",
                      hint::kRaisesInEager);
  PyObject *setattrHook = _PyType_Lookup(cls, interned("__setattr__"));
  if (!viaObject && setattrHook != objectSlot("__setattr__")) {
    if (!setattrHook || !PyFunction_Check(setattrHook))
      throw Unsupported(BreakCategory::SideEffect, "the class's __setattr__ is not Python code");
    std::vector<VarP> args{obj, makeConst(PyRef::borrow(name)), value};
    std::map<std::string, VarP> kwargs;
    inlineFunction(setattrHook, -1, args, kwargs);
    return;
  }
  PyObject *descr = _PyType_Lookup(cls, name);
  if (descr && Py_TYPE(descr) == &PyProperty_Type) {
    PyRef fset = PyRef::steal(PyObject_GetAttrString(descr, "fset"));
    PyErr_Clear();
    if (!fset || !PyFunction_Check(fset.get()))
      throw Unsupported(BreakCategory::UserError, "property '" + attr + "' has no Python setter",
                        hint::kRaisesInEager);
    keepAlive_.push_back(fset);
    std::vector<VarP> args{obj, value};
    std::map<std::string, VarP> kwargs;
    inlineFunction(fset.get(), -1, args, kwargs);
    return;
  }
  if (descr && Py_TYPE(descr)->tp_descr_set && Py_TYPE(descr) != &PyMemberDescr_Type)
    throw Unsupported(BreakCategory::SideEffect,
                      "attribute '" + attr + "' is a data descriptor kiln does not run");
  if (!descr && cls->tp_dictoffset == 0)
    throw Unsupported(BreakCategory::UserError,
                      "'" + std::string(cls->tp_name) + "' object has no attribute '" + attr +
                          "' (its __slots__ do not list it)",
                      hint::kRaisesInEager);
  dictSet(obj, name, value);
}

VarP Interpreter::constructObject(const VarP &callee, PyObject *cls, std::vector<VarP> &args,
                                  std::map<std::string, VarP> &kwargs) {
  if (!PyType_Check(cls) || !PyType_HasFeature((PyTypeObject *)cls, Py_TPFLAGS_HEAPTYPE) ||
      PyExceptionClass_Check(cls))
    return nullptr;
  auto *t = reinterpret_cast<PyTypeObject *>(cls);
  if (isModule(cls) || PyType_IsSubtype(t, &PyType_Type))
    return nullptr;
  std::string why = unbuildableReason(t);
  if (why.rfind("it derives from the C type", 0) == 0)
    return nullptr; // left to the torch and builtin paths (Parameter, Enum ...)
  if (!why.empty())
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "constructing " + pyText(cls) + " is not supported: " + why);
  VarP clsVar = callee->isConst() ? callee : makeConst(PyRef::borrow(cls));
  PyObject *newFn = _PyType_Lookup(t, interned("__new__"));
  bool plainNew = newFn == objectSlot("__new__") ||
                  newFn == PyDict_GetItemString(PyTuple_Type.tp_dict, "__new__");
  int typeSrc = out_.sources.add(Source::Kind::Constant, -1, 0, cls);
  for (const char *slot : {"__new__", "__init__"}) { // patching them recompiles
    PyObject *key = interned(slot);
    if (PyObject *v = _PyType_Lookup(t, key))
      guardValue(
          makeConst(PyRef::borrow(v), out_.sources.add(Source::Kind::TypeLookup, typeSrc, 0, key)));
  }
  VarP made;
  if (plainNew && newFn == objectSlot("__new__")) {
    made = std::make_shared<Var>();
    made->kind = Var::Kind::Object;
    made->obj = PyRef::borrow(cls);
    made->self = clsVar;
  } else if (plainNew) { // tuple.__new__(cls[, iterable])
    if (args.size() > 1 || !kwargs.empty())
      throw Unsupported(BreakCategory::UserError, "tuple() takes at most one argument",
                        hint::kRaisesInEager);
    made = makeSeq(Var::Kind::Tuple, args.empty() ? std::vector<VarP>{} : iterItems(args[0]));
    made->obj = PyRef::borrow(cls);
    made->self = clsVar;
  } else {
    PyRef fn = wrappedFunction(newFn);
    if (!fn)
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "constructing " + pyText(cls) + ": its __new__ is not Python code");
    keepAlive_.push_back(fn);
    std::vector<VarP> newArgs{clsVar};
    newArgs.insert(newArgs.end(), args.begin(), args.end());
    std::map<std::string, VarP> newKw = kwargs;
    made = inlineFunction(fn.get(), -1, newArgs, newKw);
  }
  // type.__call__: __init__ runs when __new__ returned an instance of cls.
  bool instance = (made->kind == Var::Kind::Object || made->kind == Var::Kind::Tuple) &&
                  made->obj && PyType_Check(made->obj.get()) && PyType_IsSubtype(classOf(made), t);
  if (!instance)
    return made;
  PyObject *init = _PyType_Lookup(classOf(made), interned("__init__"));
  if (init == objectSlot("__init__")) {
    if (plainNew && newFn == objectSlot("__new__") && (!args.empty() || !kwargs.empty()))
      throw Unsupported(BreakCategory::UserError, pyText(cls) + "() takes no arguments",
                        hint::kRaisesInEager);
    return made;
  }
  if (!init || !PyFunction_Check(init))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "constructing " + pyText(cls) + ": its __init__ is not Python code");
  std::vector<VarP> initArgs{made};
  initArgs.insert(initArgs.end(), args.begin(), args.end());
  VarP r = inlineFunction(init, -1, initArgs, kwargs);
  if (!r->isConst() || r->obj.get() != Py_None)
    throw Unsupported(BreakCategory::UserError, "__init__() should return None",
                      hint::kRaisesInEager);
  return made;
}

VarP Interpreter::callObjectSlot(PyObject *fn, std::vector<VarP> &args,
                                 std::map<std::string, VarP> &kwargs) {
  bool objectNew = fn == objectSlot("__new__");
  bool tupleNew = fn == PyDict_GetItemString(PyTuple_Type.tp_dict, "__new__");
  if ((objectNew || tupleNew) && !args.empty() && args[0]->isConst() &&
      PyType_Check(args[0]->obj.get())) {
    // `object.__new__(cls)` / `super().__new__(cls)` in a Python __new__,
    // `tuple.__new__(cls, items)` in a namedtuple's: the new instance.
    auto *t = reinterpret_cast<PyTypeObject *>(args[0]->obj.get());
    if (!PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE) || !unbuildableReason(t).empty() ||
        isModule(args[0]->obj.get()) || (tupleNew && !PyType_IsSubtype(t, &PyTuple_Type)) ||
        (objectNew && PyType_IsSubtype(t, &PyTuple_Type)))
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "__new__ of " + pyText(args[0]->obj.get()) + " is not supported");
    VarP made;
    if (objectNew) {
      made = std::make_shared<Var>();
      made->kind = Var::Kind::Object;
    } else {
      if (args.size() > 2 || !kwargs.empty())
        throw Unsupported(BreakCategory::UserError, "tuple.__new__ with unexpected arguments",
                          hint::kRaisesInEager);
      made = makeSeq(Var::Kind::Tuple, args.size() == 2 ? iterItems(args[1]) : std::vector<VarP>{});
    }
    made->obj = args[0]->obj;
    made->self = args[0];
    return made;
  }
  if (fn == objectSlot("__init__") && !args.empty() && args[0]->kind == Var::Kind::Object)
    return makeConst(PyRef::borrow(Py_None)); // super().__init__() reaching object
  if (fn == objectSlot("__setattr__") && args.size() == 3 && args[0]->kind == Var::Kind::Object) {
    storeObjectAttr(args[0], constObj(args[1], "attribute name"), args[2], /*viaObject=*/true);
    return makeConst(PyRef::borrow(Py_None));
  }
  if (fn == reinterpret_cast<PyObject *>(&PyType_Type) && args.size() == 1 &&
      (args[0]->kind == Var::Kind::Object ||
       (args[0]->kind == Var::Kind::Tuple && args[0]->obj && args[0]->self)))
    return args[0]->self;
  return nullptr;
}

VarP Interpreter::callObject(const VarP &obj, std::vector<VarP> &args,
                             std::map<std::string, VarP> &kwargs) {
  PyObject *callFn = _PyType_Lookup(classOf(obj), interned("__call__"));
  if (!callFn || !PyFunction_Check(callFn))
    throw Unsupported(BreakCategory::UserError,
                      "'" + std::string(classOf(obj)->tp_name) + "' object is not callable",
                      hint::kRaisesInEager);
  std::vector<VarP> all{obj};
  all.insert(all.end(), args.begin(), args.end());
  return inlineFunction(callFn, -1, all, kwargs);
}

bool Interpreter::objectTruthy(const VarP &obj) {
  // Python's truth test: __bool__ (a bool), else __len__ != 0, else true.
  if (VarP r = CaptureTimeCalls::objectDunder(*this, obj, "__bool__")) {
    if (!r->isConst() || !PyBool_Check(r->obj.get()))
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "__bool__ returned a value that is not a bool known at capture");
    return r->obj.get() == Py_True;
  }
  if (!_PyType_Lookup(CaptureTimeCalls::dunderClass(*this, obj), interned("__len__")))
    return true;
  return PyObject_IsTrue(CaptureTimeCalls::objectLen(*this, obj)->obj.get()) == 1;
}

} // namespace kiln

//===- CaptureTimeCalls.cpp - library methods evaluated at capture ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Some library methods are pure functions of their receiver's state whose
// Python the capture should not trace (a deepcopy and delattr loop per
// forward in HuggingFace's get_text_config for T5/BART caches). The table
// of them is kiln._capture_time.CAPTURE_TIME (module, qualname) pairs; a
// call of one with a constant receiver and constant arguments is made now.
// Guards: the receiver's identity and `receiver.__dict__ == snapshot`, a
// deep copy taken before the call (any change of the state recompiles).
//===----------------------------------------------------------------------===//
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/interp/PlainObjects.h"
#include "capture/values/Deques.h"
#include "capture/values/IdentitySets.h"
#include "GilOnce.h"

namespace kiln {

namespace {

/// kiln._capture_time.CAPTURE_TIME (borrowed, process lifetime), or null.
PyObject *captureTimeTable() {
  static PyOnce tableOnce;
  return tableOnce.get([] {
    PyRef mod = PyRef::steal(PyImport_ImportModule("kiln._capture_time"));
    PyObject *t = mod ? PyObject_GetAttrString(mod.get(), "CAPTURE_TIME") : nullptr;
    PyErr_Clear();
    return t; // leaked: process lifetime
  });
}

/// Whether Python function `fn` is listed in the table.
bool listed(PyObject *fn) {
  PyObject *table = captureTimeTable();
  if (!table || !PyFunction_Check(fn))
    return false;
  auto *f = reinterpret_cast<PyFunctionObject *>(fn);
  if (!f->func_module || !f->func_qualname)
    return false;
  PyRef key = PyRef::steal(PyTuple_Pack(2, f->func_module, f->func_qualname));
  int r = key ? PySet_Contains(table, key.get()) : -1;
  PyErr_Clear();
  return r == 1;
}

/// A deep copy of `o` (copy.deepcopy), or null.
PyRef deepCopy(PyObject *o) {
  static PyOnce deepcopyOnce;
  PyObject *deepcopy = deepcopyOnce.get([] {
    PyRef m = PyRef::steal(PyImport_ImportModule("copy"));
    PyObject *f = m ? PyObject_GetAttrString(m.get(), "deepcopy") : nullptr;
    PyErr_Clear();
    return f; // leaked: process lifetime
  });
  PyRef copy = deepcopy ? PyRef::steal(PyObject_CallOneArg(deepcopy, o)) : PyRef();
  PyErr_Clear();
  return copy;
}

/// Whether `cls` (a class, or a tuple of classes) holds an abc.ABCMeta
/// class, whose isinstance/issubclass answers follow its registry.
bool holdsAbc(PyObject *cls, int depth = 0) {
  if (PyTuple_Check(cls) && depth < 8) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(cls); ++i)
      if (holdsAbc(PyTuple_GET_ITEM(cls, i), depth + 1))
        return true;
    return false;
  }
  return PyType_Check(cls) && PyObject_HasAttrString(cls, "_abc_impl");
}

/// Whether attribute `name` of module `m` is a tensor of
/// torch.nn.utils.parametrize (a property of the module's own class whose
/// getter runs the parametrization, which may update state per call).
bool parametrizedAttr(PyObject *m, PyObject *name) {
  PyObject *descr = _PyType_Lookup(Py_TYPE(m), name);
  if (!descr || Py_TYPE(descr) != &PyProperty_Type)
    return false;
  PyRef fget = PyRef::steal(PyObject_GetAttrString(descr, "fget"));
  PyRef module = fget ? PyRef::steal(PyObject_GetAttrString(fget.get(), "__module__")) : PyRef();
  PyErr_Clear();
  return module && PyUnicode_Check(module.get()) &&
         PyUnicode_CompareWithASCIIString(module.get(), "torch.nn.utils.parametrize") == 0;
}

/// The first value dunder that `t` (or a base other than object) defines
/// as a Python function; null when none.
const char *pythonValueDunder(PyTypeObject *t) {
  static const char *const names[] = {
      "__eq__",       "__ne__",    "__lt__",       "__le__",      "__gt__",       "__ge__",
      "__hash__",     "__str__",   "__repr__",     "__format__",  "__len__",      "__bool__",
      "__contains__", "__iter__",  "__getitem__",  "__index__",   "__int__",      "__float__",
      "__abs__",      "__round__", "__reversed__", "__add__",     "__radd__",     "__sub__",
      "__rsub__",     "__mul__",   "__rmul__",     "__truediv__", "__floordiv__", "__mod__",
      "__pow__",      "__and__",   "__or__",       "__xor__",     "__neg__"};
  for (const char *name : names) {
    PyRef key = PyRef::steal(PyUnicode_InternFromString(name));
    PyObject *fn = _PyType_Lookup(t, key.get());
    if (fn && PyFunction_Check(fn))
      return name;
  }
  return nullptr;
}

} // namespace

/// isinstance/issubclass against an ABC, and builtins evaluated on a
/// caller's list or tuple (sorted() calls its items' __lt__), depend on
/// state the value guards do not cover: the ABC registry is guarded by
/// abc.get_cache_token() (every register() changes it), the items'
/// attributes by value (CaptureTimeCalls::guardDunderState).
void CaptureTimeCalls::guardBuiltinState(Interpreter &I, const std::string &name,
                                         const std::vector<VarP> &args) {
  if ((name == "isinstance" || name == "issubclass") && args.size() == 2 && args[1]->isConst() &&
      holdsAbc(args[1]->obj.get())) {
    static PyOnce tokenOnce;
    PyObject *token = tokenOnce.get([] {
      PyRef abc = PyRef::steal(PyImport_ImportModule("abc"));
      PyObject *fn = abc ? PyObject_GetAttrString(abc.get(), "get_cache_token") : nullptr;
      PyErr_Clear();
      return fn; // leaked: process lifetime
    });
    PyRef none = PyRef::steal(PyTuple_New(0));
    PyRef now = token ? PyRef::steal(PyObject_Call(token, none.get(), nullptr)) : PyRef();
    if (!now)
      throw Unsupported(BreakCategory::PythonBuiltin,
                        withPythonError(name + " against an ABC: abc.get_cache_token() failed"));
    I.addCallGuard(token, none.get(), now.get());
  }
  for (const VarP &a : args) {
    PyObject *o = a->isConst() ? a->obj.get() : nullptr;
    int src = o ? I.sourceOf(a) : -1;
    if (src < 0 || !(PyList_CheckExact(o) || PyTuple_CheckExact(o)))
      continue;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i)
      guardDunderState(I,
                       makeConst(PyRef::borrow(PySequence_Fast_ITEMS(o)[i]),
                                 I.out_.sources.add(Source::Kind::TupleItem, src, (int)i, nullptr)),
                       "a builtin evaluated at capture on a list holding it");
  }
}

void CaptureTimeCalls::guardDunderState(Interpreter &I, const VarP &v, const char *what) {
  PyObject *o = v->isConst() ? v->obj.get() : nullptr;
  if (!o || !isPlainObject(o))
    return;
  const char *dunder = pythonValueDunder(Py_TYPE(o));
  if (!dunder)
    return;
  int src = I.sourceOf(v);
  PyObject **dictPtr = _PyObject_GetDictPtr(o);
  PyRef snapshot =
      src >= 0 && dictPtr && *dictPtr && isPlainData(*dictPtr) ? deepCopy(*dictPtr) : PyRef();
  if (!snapshot)
    throw Unsupported(BreakCategory::PythonBuiltin,
                      std::string(what) + " on a '" + Py_TYPE(o)->tp_name +
                          "' object, whose class defines " + dunder +
                          " in Python, depends on state kiln cannot guard",
                      "kiln runs it eagerly at a graph break");
  guardState(I, I.out_.sources.add(Source::Kind::ObjDict, src, 0, nullptr), snapshot);
}

VarP CaptureTimeCalls::descriptorAttr(Interpreter &I, const VarP &obj, PyObject *name) {
  PyObject *o = obj->obj.get();
  if (!obj->isConst() || I.sourceOf(obj) < 0 || !(isPlainObject(o) || isModule(o)))
    return nullptr;
  if (isModule(o) && !parametrizedAttr(o, name))
    return nullptr; // a module property (HF `dtype`, `device`): evaluated, guarded by value
  PyObject *descr = _PyType_Lookup(Py_TYPE(o), name); // borrowed
  if (!descr)
    return nullptr;
  std::vector<VarP> args{obj};
  std::map<std::string, VarP> kwargs;
  if (Py_TYPE(descr) == &PyProperty_Type) {
    PyRef fget = PyRef::steal(PyObject_GetAttrString(descr, "fget"));
    PyErr_Clear();
    if (!fget || !PyFunction_Check(fget.get()))
      return nullptr;
    I.guardClassAttr(obj, name, descr, /*notShadowed=*/false);
    I.keepAlive_.push_back(fget);
    return I.inlineFunction(fget.get(), -1, args, kwargs);
  }
  PyTypeObject *t = Py_TYPE(descr);
  PyRef getName = PyRef::steal(PyUnicode_InternFromString("__get__"));
  PyObject *get = t->tp_descr_get && PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE)
                      ? _PyType_Lookup(t, getName.get())
                      : nullptr;
  if (!get || !PyFunction_Check(get))
    return nullptr;
  bool data = t->tp_descr_set != nullptr;
  PyObject **dictPtr = _PyObject_GetDictPtr(o);
  if (!data && dictPtr && *dictPtr && PyDict_GetItemWithError(*dictPtr, name))
    return nullptr; // shadowed by the instance dict: read from there
  PyErr_Clear();
  I.guardClassAttr(obj, name, descr, /*notShadowed=*/!data);
  PyObject *cls = reinterpret_cast<PyObject *>(Py_TYPE(o));
  int typeSrc = I.out_.sources.add(Source::Kind::Constant, -1, 0, cls);
  VarP descrVar =
      I.fromSource(descr, I.out_.sources.add(Source::Kind::TypeLookup, typeSrc, 0, name));
  args = {descrVar, obj, makeConst(PyRef::borrow(cls))};
  I.keepAlive_.push_back(PyRef::borrow(get));
  return I.inlineFunction(get, -1, args, kwargs);
}

PyTypeObject *CaptureTimeCalls::dunderClass(Interpreter &I, const VarP &v) {
  if (v->kind == Var::Kind::Object)
    return reinterpret_cast<PyTypeObject *>(v->obj.get());
  if (v->isConst() && I.sourceOf(v) >= 0 && isPlainObject(v->obj.get()))
    return Py_TYPE(v->obj.get());
  return nullptr;
}

void CaptureTimeCalls::guardState(Interpreter &I, int dictSource, PyRef snapshot) {
  for (const Guard &e : I.out_.guards)
    if (e.source == dictSource && e.kind == Guard::Kind::Equals)
      return; // the same receiver's state, guarded by an earlier call
  Guard g;
  g.kind = Guard::Kind::Equals;
  g.source = dictSource;
  g.expected = std::move(snapshot);
  I.out_.guards.push_back(std::move(g));
}

VarP CaptureTimeCalls::boundMethod(Interpreter &I, const VarP &callee, std::vector<VarP> &args,
                                   std::map<std::string, VarP> &kwargs) {
  const VarP &self = callee->self;
  if (!self || !self->isConst() || !listed(callee->obj.get()))
    return nullptr;
  for (const VarP &a : args)
    if (!a->isConst())
      return nullptr;
  for (auto &[k, v] : kwargs)
    if (!v->isConst())
      return nullptr;
  PyObject *receiver = self->obj.get();
  PyObject **dictPtr = _PyObject_GetDictPtr(receiver);
  if (!dictPtr || !*dictPtr || !PyDict_CheckExact(*dictPtr))
    return nullptr;
  PyRef snapshot = deepCopy(*dictPtr);
  if (!snapshot)
    return nullptr;
  PyRef callArgs = PyRef::steal(PyTuple_New(args.size() + 1));
  PyRef callKw = PyRef::steal(PyDict_New());
  PyTuple_SET_ITEM(callArgs.get(), 0, Py_NewRef(receiver));
  for (size_t i = 0; i < args.size(); ++i)
    PyTuple_SET_ITEM(callArgs.get(), i + 1, Py_NewRef(args[i]->obj.get()));
  for (auto &[k, v] : kwargs)
    PyDict_SetItemString(callKw.get(), k.c_str(), v->obj.get());
  PyRef result = PyRef::steal(PyObject_Call(callee->obj.get(), callArgs.get(), callKw.get()));
  if (!result) // eager raises the same: let the inlined call reach it
    return PyErr_Clear(), nullptr;
  for (const VarP &a : args)
    I.guardValue(a);
  for (auto &[k, v] : kwargs)
    I.guardValue(v);
  if (int src = I.sourceOf(self); src >= 0) {
    I.guardValue(self); // a plain object: by type (PlainObjects.h), its state below
    guardState(I, I.out_.sources.add(Source::Kind::ObjDict, src, 0, nullptr), snapshot);
  }
  if (result.get() == receiver)
    return self;
  // Another object (a copy, a sub-config) is one constant for every call:
  // the receiver keeps its identity guard, as before type guards.
  pinPlainObject(receiver, "a method evaluated at capture returned another object");
  I.keepAlive_.push_back(result);
  return makeConst(result);
}

VarP CaptureTimeCalls::objectDunder(Interpreter &I, const VarP &obj, const char *name) {
  PyTypeObject *t = dunderClass(I, obj);
  PyRef key = PyRef::steal(PyUnicode_InternFromString(name));
  PyObject *fn = _PyType_Lookup(t, key.get());
  if (!fn)
    return nullptr;
  if (!PyFunction_Check(fn))
    throw Unsupported(BreakCategory::PythonBuiltin, std::string(name) +
                                                        " of an object whose class's " + name +
                                                        " is not Python code");
  int typeSrc = I.out_.sources.add(Source::Kind::Constant, -1, 0, reinterpret_cast<PyObject *>(t));
  I.guardValue(makeConst(PyRef::borrow(fn),
                         I.out_.sources.add(Source::Kind::TypeLookup, typeSrc, 0, key.get())));
  std::vector<VarP> args{obj};
  std::map<std::string, VarP> kwargs;
  VarP r = I.inlineFunction(fn, -1, args, kwargs);
  I.materialize(r);
  return r;
}

VarP CaptureTimeCalls::objectLen(Interpreter &I, const VarP &obj) {
  if (isIdentitySet(obj) || isDeque(obj)) // IdentitySets.h, Deques.h
    return makeConst(PyRef::steal(PyLong_FromSize_t(obj->items.size())));
  VarP r = objectDunder(I, obj, "__len__");
  std::string type = dunderClass(I, obj)->tp_name;
  if (!r)
    throw Unsupported(BreakCategory::UserError, "object of type '" + type + "' has no len()",
                      hint::kRaisesInEager);
  PyObject *o = r->isConst() ? r->obj.get() : nullptr;
  if (!o || !PyLong_Check(o))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "__len__ of '" + type +
                          "' returned a value that is not an int known at capture");
  if (PyLong_AsLongLong(o) < 0)
    throw Unsupported(BreakCategory::UserError, "__len__() should return >= 0",
                      hint::kRaisesInEager);
  return r;
}

std::optional<int> CaptureTimeCalls::graphDevice(const Interpreter &I) {
  for (const Guard &g : I.out_.guards)
    if (g.kind == Guard::Kind::Tensor)
      return I.graphDevice_;
  return std::nullopt;
}

} // namespace kiln

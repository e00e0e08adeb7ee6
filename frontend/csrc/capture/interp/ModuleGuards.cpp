//===- ModuleGuards.cpp - guards on nn.Modules read from the frame --------===//
// SPDX-License-Identifier: Apache-2.0
//
// How the capture guards an nn.Module it reads through a source: by its
// exact type, not its identity, so every instance of a module class with
// the same structure shares one compiled entry (Dynamo's
// inline_inbuilt_nn_modules). That is sound because everything the graph
// takes from a module is read through sources resolved against the frame
// on every call, each with its own guard: parameters and buffers are graph
// inputs (tensor guards on dtype, device, shape, requires_grad), plain
// attributes (`training`, sizes, flags) are guarded by value, submodules by
// type, hook dicts by length, methods through the class; a slice of a
// container is read again per call through an Item source. Where the capture
// used a module in a way no source replays (a Constant source for a module
// reached by a call at capture, a builtin evaluated on a module, `a is b`
// between modules, a capture that failed part-way) the module guards of
// the capture fall back to identity (weakly held, Guards.h). Sharing also
// needs dicts iterated in one order: the length guard of every dict the
// capture read becomes a guard on its keys in order.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "GilOnce.h"
#include "Log.h"
#include "capture/interp/PlainObjects.h"

namespace kiln {

namespace {

/// Turns every Length guard on a dict into a guard on its keys in order
/// (Guards.cpp: `sameKeys`). The capture unrolls iteration over a dict
/// (`for m in self.seq`, `for k, v in d.items()`) in its order and reads
/// each item through a source by key, so two instances whose Sequential
/// holds the same names in another order, or a dict of tensors built in
/// another order, must not share the entry. Resolved once here (every
/// source is resolved again on each call anyway).
void orderDictLengthGuards(const FrameView &frame, Capture &out) {
  std::vector<PyRef> values;
  int failed = out.sources.resolve(frame, values);
  for (Guard &g : out.guards) {
    if (g.kind != Guard::Kind::Length || g.source < 0 || (failed >= 0 && g.source >= failed))
      continue;
    PyObject *d = values[g.source].get();
    if (!d || !PyDict_Check(d) || !PyLong_Check(g.expected.get()) ||
        PyDict_GET_SIZE(d) != PyLong_AsSsize_t(g.expected.get()))
      continue;
    PyRef keys = dictKeysInOrder(d);
    if (keys)
      g.expected = keys;
  }
  PyErr_Clear();
}

} // namespace

void Interpreter::guardModule(const VarP &v) {
  PyObject *o = v->obj.get();
  for (const ModuleGuard &m : moduleGuards_)
    if (out_.guards[m.guard].source == v->source)
      return;
  PyRef ref = PyRef::steal(PyWeakref_NewRef(o, nullptr));
  if (!ref)
    throw Unsupported(withPythonError("cannot hold a weak reference to a module"));
  Guard g;
  g.kind = Guard::Kind::Type;
  g.source = v->source;
  g.expected = PyRef::borrow(reinterpret_cast<PyObject *>(Py_TYPE(o)));
  moduleGuards_.push_back({out_.guards.size(), std::move(ref)});
  out_.guards.push_back(std::move(g));
}

void Interpreter::pinModuleIdentity(const char *why) {
  if (!pinReason_)
    pinReason_ = why;
}

void Interpreter::pinModulesIn(const std::vector<VarP> &args, const std::string &builtin) {
  // These answer from the type alone (which the Type guard covers).
  if (builtin == "isinstance" || builtin == "issubclass" || builtin == "type" ||
      builtin == "callable")
    return;
  for (const VarP &a : args)
    if (a && a->isConst() && isModule(a->obj.get()))
      pinModuleIdentity("a builtin is evaluated on a module at capture");
}

void Interpreter::finishModuleGuards(bool captured) {
  orderDictLengthGuards(frame_, out_);
  if (!captured)
    pinModuleIdentity("the capture failed (what made it fail may be the instance's own)");
  if (out_.sources.holdsModuleConstant())
    pinModuleIdentity("a module is reached through no source of the frame");
  for (const std::vector<OutputSlot> *slots : {&out_.outputs, &out_.effectValues})
    for (const OutputSlot &s : *slots)
      if (s.kind == OutputSlot::Kind::Constant && s.constant && isModule(s.constant.get()))
        pinModuleIdentity("a module object is part of the result");
  finishPlainObjectGuards(out_, pinReason_); // PlainObjects.h
  if (!pinReason_)
    return;
  if (captured && !moduleGuards_.empty())
    log(LogChannel::Guards,
        std::string("modules of this capture are guarded by identity: ") + pinReason_);
  for (ModuleGuard &m : moduleGuards_) {
    Guard &g = out_.guards[m.guard];
    g.kind = Guard::Kind::Identity;
    g.expected = std::move(m.weak);
    g.weak = true;
  }
  moduleGuards_.clear();
}

namespace {

/// Whether `obj`'s class attribute `name` is the one torch's Sequential,
/// ModuleList or ModuleDict defines (`slot` 0: __len__, 1: __getitem__):
/// it then only reads `_modules`. `attr` gets it (borrowed).
bool containerMethod(PyObject *obj, int slot, PyObject **attr) {
  static PyOnce namesOnce, methodsOnce;
  PyObject *names = namesOnce.get([] { return Py_BuildValue("(ss)", "__len__", "__getitem__"); });
  PyObject *methods = methodsOnce.get([names] {
    PyRef nn = PyRef::steal(PyImport_ImportModule("torch.nn"));
    PyObject *table = PyTuple_New(2); // per slot: a tuple of the containers' functions
    for (int k = 0; k < 2; ++k) {
      PyObject *fns = PyTuple_New(3);
      int i = 0;
      for (const char *name : {"Sequential", "ModuleList", "ModuleDict"}) {
        PyRef cls = PyRef::steal(nn ? PyObject_GetAttrString(nn.get(), name) : nullptr);
        PyObject *fn = cls && PyType_Check(cls.get())
                           ? _PyType_Lookup(reinterpret_cast<PyTypeObject *>(cls.get()),
                                            PyTuple_GET_ITEM(names, k))
                           : nullptr;
        PyTuple_SET_ITEM(fns, i++, Py_NewRef(fn ? fn : Py_None));
      }
      PyTuple_SET_ITEM(table, k, fns);
    }
    PyErr_Clear();
    return table; // leaked: process lifetime
  });
  if (!names || !methods)
    return false;
  *attr = _PyType_Lookup(Py_TYPE(obj), PyTuple_GET_ITEM(names, slot));
  PyObject *fns = PyTuple_GET_ITEM(methods, slot);
  for (Py_ssize_t i = 0; *attr && i < PyTuple_GET_SIZE(fns); ++i)
    if (PyTuple_GET_ITEM(fns, i) == *attr)
      return true;
  return false;
}

} // namespace

int Interpreter::containerModulesSource(const VarP &v, int slot, PyObject **modules) {
  if (!v->isConst() || v->source < 0 || !isModule(v->obj.get()))
    return -1;
  PyObject *method = nullptr;
  if (!containerMethod(v->obj.get(), slot, &method))
    return -1;
  PyObject **dictPtr = _PyObject_GetDictPtr(v->obj.get());
  *modules = dictPtr && *dictPtr ? PyDict_GetItemString(*dictPtr, "_modules") : nullptr;
  if (!*modules || !PyDict_Check(*modules))
    return -1;
  // The class's method is guarded like any method found on the class.
  PyRef name = PyRef::steal(PyUnicode_FromString(slot == 0 ? "__len__" : "__getitem__"));
  guardClassAttr(v, name.get(), method, /*notShadowed=*/false);
  PyRef key = PyRef::steal(PyUnicode_FromString("_modules"));
  int dictSrc = out_.sources.add(Source::Kind::ObjDict, v->source, 0, nullptr);
  return out_.sources.add(Source::Kind::DictItem, dictSrc, 0, key.get());
}

VarP Interpreter::moduleContainerLen(const VarP &v) {
  // len() of a Sequential/ModuleList/ModuleDict is len(self._modules): the
  // length of that dict, read through its source and guarded.
  PyObject *modules = nullptr;
  int modSrc = containerModulesSource(v, 0, &modules);
  if (modSrc < 0)
    return nullptr;
  guardLength(modSrc, PyDict_Size(modules));
  return makeConst(PyRef::steal(PyLong_FromSsize_t(PyDict_Size(modules))));
}

VarP Interpreter::moduleContainerItem(const VarP &v, PyObject *index, PyObject *child) {
  // container[i] (ModuleList, Sequential) or container[key] (ModuleDict):
  // `child` (what eager's __getitem__ returned) read again from `_modules`
  // through a source, so it keeps a source (and guards) of its own. An int
  // index names the child by position (Sequential) or by str(i)
  // (ModuleList); whichever key holds `child` is the source's.
  // A slice (`self.layers[:n]`) is a new container per call, built by the
  // container's own __getitem__ (guarded): read again through an Item
  // source, so its children keep sources too.
  PyObject *modules = nullptr;
  bool slice = PySlice_Check(index);
  if (!isModule(child) || (!PyLong_CheckExact(index) && !PyUnicode_CheckExact(index) && !slice))
    return nullptr;
  int modSrc = containerModulesSource(v, 1, &modules);
  if (modSrc < 0)
    return nullptr;
  if (slice)
    return fromSource(child, out_.sources.add(Source::Kind::Item, v->source, 0, index));
  PyObject *key = nullptr;
  if (PyUnicode_CheckExact(index)) {
    key = PyDict_GetItemWithError(modules, index) == child ? index : nullptr;
  } else {
    Py_ssize_t n = PyDict_Size(modules), k = PyLong_AsSsize_t(index);
    k += k < 0 ? n : 0;
    PyObject *posKey = nullptr, *item = nullptr;
    Py_ssize_t pos = 0;
    for (Py_ssize_t i = 0; i <= k && k < n; ++i)
      PyDict_Next(modules, &pos, &posKey, &item);
    PyRef strKey = PyRef::steal(PyObject_Str(PyRef::steal(PyLong_FromSsize_t(k)).get()));
    if (item == child)
      key = posKey;
    else if (strKey && PyDict_GetItemWithError(modules, strKey.get()) == child)
      key = strKey.get();
    guardLength(modSrc, n);
    if (key)
      keepAlive_.push_back(PyRef::borrow(key));
  }
  PyErr_Clear();
  if (!key)
    return nullptr;
  return fromSource(child, out_.sources.add(Source::Kind::DictItem, modSrc, 0, key));
}

} // namespace kiln

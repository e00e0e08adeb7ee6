//===- ValueGuards.cpp - guards on Python values read from the frame ------===//
// SPDX-License-Identifier: Apache-2.0
//
// What the interpreter guards a value it read through a source by: Python
// data (numbers, strings, lists, tuples, small dicts and sets of them) by value
// against a deep copy (Guards.h sameValue), modules by type
// (ModuleGuards.cpp), plain objects by type until pinned (PlainObjects.h),
// everything else by identity; lengths, class attributes and
// instance-dict shadowing of methods.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "capture/interp/PlainObjects.h"

namespace kiln {

namespace {

/// Plain data a guard compares by value (sameValue, Guards.h) at little
/// cost: a small dict (a module's `self.cfg = {"k": 1}`) of primitive keys
/// whose values are primitives, lists, tuples or such dicts, or a set of
/// numbers/strings/tuples (`"b" in self.allowed` sees an added item), at most
/// `budget` items in all. Instances of one class with equal dicts then
/// share an entry (by identity each recompiled).
bool isPlainData(PyObject *o, int &budget) {
  if (--budget < 0)
    return false;
  if (isPrimitive(o))
    return true;
  if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i)
      if (!isPlainData(PySequence_Fast_ITEMS(o)[i], budget))
        return false;
    return true;
  }
  if (PyAnySet_CheckExact(o)) {
    PyObject *k;
    Py_hash_t h;
    Py_ssize_t pos = 0;
    while (_PySet_NextEntry(o, &pos, &k, &h))
      if (!isPrimitive(k) || PyList_Check(k) || --budget < 0)
        return false;
    return true;
  }
  if (!PyDict_CheckExact(o))
    return false;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(o, &pos, &k, &v))
    if (!isPrimitive(k) || !isPlainData(v, budget))
      return false;
  return true;
}

/// A list of plain objects (and Python primitives): a KV cache's `layers`,
/// a list of per-layer state objects.
bool holdsPlainObjects(PyObject *o) {
  if (!PyList_CheckExact(o))
    return false;
  bool plain = false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i) {
    PyObject *item = PySequence_Fast_ITEMS(o)[i];
    if (isPlainObject(item))
      plain = true;
    else if (!isPrimitive(item))
      return false;
  }
  return plain;
}

} // namespace

bool isPlainData(PyObject *o) {
  int budget = 256;
  return isPlainData(o, budget);
}

/// Python primitives are guarded by value; everything else by identity.
bool isPrimitive(PyObject *o) {
  if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
      PyUnicode_CheckExact(o))
    return true;
  if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
    PyObject *const *items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i)
      if (!isPrimitive(items[i]))
        return false;
    return true;
  }
  return false;
}

/// A dict of str keys and primitive values (`**kwargs` of flags).
bool isPrimitiveDict(PyObject *o) {
  if (!PyDict_CheckExact(o))
    return false;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(o, &pos, &k, &v))
    if (!PyUnicode_CheckExact(k) || !isPrimitive(v))
      return false;
  return true;
}

void Interpreter::guardValue(const VarP &v) {
  if (!v || v->source < 0 || !v->isConst())
    return;
  if (holdWeakly(v->obj.get()))
    return guardModule(v); // by type (ModuleGuards.cpp)
  Guard g;
  if (isPlainObject(v->obj.get())) { // by type while its identity is unused (PlainObjects.h)
    g.kind = Guard::Kind::Type;
    g.source = v->source;
    g.expected = PyRef::borrow(reinterpret_cast<PyObject *>(Py_TYPE(v->obj.get())));
    for (const Guard &e : out_.guards)
      if (e.source == g.source && e.kind == g.kind && e.expected.get() == g.expected.get())
        return;
    addPlainObjectGuard(out_, out_.guards.size(), v->obj.get());
    out_.guards.push_back(std::move(g));
    return;
  }
  PyObject *o = v->obj.get();
  // By type and length (a ModelOutput: its keys in order), each item read
  // through its own source and guarded there: a new output of the same
  // model per call (generate()'s encoder_outputs) or a new list of new
  // objects (a KV cache's layers) shares the entry; a use of the whole (`is`,
  // returned, stored, updated in place) pins it (PlainObjects.h).
  if (isModelOutputRecord(o) || holdsPlainObjects(o)) {
    g.kind = Guard::Kind::Type;
    g.source = v->source;
    g.expected = PyRef::borrow(reinterpret_cast<PyObject *>(Py_TYPE(o)));
    guardLength(v->source, PyObject_Length(o));
    for (const Guard &e : out_.guards)
      if (e.source == g.source && e.kind == g.kind)
        return;
    addItemsGuard(out_, out_.guards.size(), o);
    out_.guards.push_back(std::move(g));
    return;
  }
  // The root frame's **kwargs is a new dict per call: compared by value.
  bool kwargsDict = v->source == varKeywordsSource_ && isPrimitiveDict(o);
  bool byValue = isPrimitive(o) || kwargsDict || isPlainData(o);
  if (!byValue)
    guardContents(v->source, o);
  g.kind = byValue ? Guard::Kind::Equals : Guard::Kind::Identity;
  g.source = v->source;
  // Compared against a deep copy: the caller may mutate a list or dict (or
  // one nested in it) in place.
  g.expected = byValue ? snapshotValue(o) : v->obj;
  if (!g.expected || !sameValue(o, g.expected.get())) { // a set copied into another order
    PyErr_Clear();
    throw Unsupported("cannot copy a list/dict/set to guard its value");
  }
  for (const Guard &e : out_.guards)
    if (e.source == g.source && e.kind == g.kind)
      return;
  // A list/dict guarded by value stands for any equal one: a use of the
  // object itself (`is`, id(), returned or stored) pins it (PlainObjects.h).
  if (byValue && !kwargsDict &&
      (PyList_CheckExact(o) || PyDict_CheckExact(o) || PySet_CheckExact(o)))
    addValueGuard(out_, out_.guards.size(), o);
  out_.guards.push_back(std::move(g));
}

void Interpreter::guardContents(int source, PyObject *o) {
  // A mutable container read as a whole at capture (its items, length,
  // `in`, iteration): identity alone would keep its contents of that time.
  PyRef plain = plainContents(o);
  if (!plain)
    return;
  if (!PyBytes_Check(plain.get()) && !isPlainData(plain.get())) {
    // Items read through their own sources instead (a dict subclass with
    // dict's __getitem__: Interpreter::subscript; len() guarded).
    if (keepsDictMethod(o, "__getitem__"))
      return;
    throw Unsupported(std::string("the contents of a ") + Py_TYPE(o)->tp_name +
                      " (tensors or objects) are read at capture and could change between calls");
  }
  for (const Guard &e : out_.guards)
    if (e.source == source && e.kind == Guard::Kind::Contents)
      return;
  Guard g;
  g.kind = Guard::Kind::Contents;
  g.source = source;
  g.expected = snapshotValue(plain.get());
  if (!g.expected) {
    PyErr_Clear();
    throw Unsupported("cannot copy the contents of a " + std::string(Py_TYPE(o)->tp_name));
  }
  out_.guards.push_back(std::move(g));
}

void Interpreter::guardLength(int source, Py_ssize_t n) {
  for (const Guard &e : out_.guards)
    if (e.source == source && e.kind == Guard::Kind::Length)
      return;
  Guard g;
  g.kind = Guard::Kind::Length;
  g.source = source;
  g.expected = PyRef::steal(PyLong_FromSsize_t(n));
  out_.guards.push_back(std::move(g));
}

void Interpreter::guardClassAttr(const VarP &obj, PyObject *name, PyObject *value,
                                 bool notShadowed) {
  PyObject *o = obj->obj.get();
  int src = sourceOf(obj);
  if (src < 0 || isPrimitive(o))
    return;          // no source: derived from guarded values
  guardType(src, o); // `obj.__class__ = Other` after compiling changes the lookup
  int typeSrc =
      out_.sources.add(Source::Kind::Constant, -1, 0, reinterpret_cast<PyObject *>(Py_TYPE(o)));
  guardValue(makeConst(PyRef::borrow(value),
                       out_.sources.add(Source::Kind::TypeLookup, typeSrc, 0, name)));
  if (notShadowed && _PyObject_GetDictPtr(o))
    guardNotInDict(out_.sources.add(Source::Kind::ObjDict, src, 0, nullptr), name);
}

void Interpreter::guardNotInDict(int dictSource, PyObject *key) {
  for (const Guard &e : out_.guards)
    if (e.source == dictSource && e.kind == Guard::Kind::NotInDict &&
        PyObject_RichCompareBool(e.expected.get(), key, Py_EQ) == 1)
      return;
  PyErr_Clear();
  Guard g;
  g.kind = Guard::Kind::NotInDict;
  g.source = dictSource;
  g.expected = PyRef::borrow(key);
  out_.guards.push_back(std::move(g));
}

} // namespace kiln

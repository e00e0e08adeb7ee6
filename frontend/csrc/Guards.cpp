//===- Guards.cpp - sources and guards of a compiled entry -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements source resolution and guard checks (Guards.h). Resolution uses
// dict lookups where the capture saw the value in a dict, so a module
// attribute costs two dict lookups instead of nn.Module.__getattr__.
//===----------------------------------------------------------------------===//
#include "Guards.h"
#include "GilOnce.h"
#include "TensorInfo.h"
#include "TensorMethods.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

namespace kiln {

bool holdWeakly(PyObject *o) {
  static PyOnce moduleTypeOnce;
  PyObject *moduleType = moduleTypeOnce.imported("torch.nn", "Module");
  if (!o || !moduleType || !PyType_SUPPORTS_WEAKREFS(Py_TYPE(o)))
    return false;
  int r = PyObject_IsInstance(o, moduleType);
  PyErr_Clear();
  return r == 1;
}

namespace {

/// The object a Constant source stands for (borrowed; null once a weakly
/// held one died).
PyObject *constantObject(const Source &s) {
  if (!s.weak)
    return s.key.get();
  PyObject *o = PyWeakref_GetObject(s.key.get());
  return o == Py_None ? nullptr : o;
}

} // namespace

/// The slice `parent[key]` an Item source built (a new ModuleList or
/// Sequential per call in eager, 35-157 us to build for 4-32 layers), kept
/// while nothing it depends on changed: the same parent (held weakly), the
/// same `_modules` (keys held, values compared by identity: the values in
/// the slice's range are held by the slice, so their addresses cannot be
/// reused) and the slice's own `_modules` as built. Eager would build an
/// equal container; only its identity differs across calls.
struct ItemCache {
  PyRef parent;                        ///< weakref to the container
  std::vector<PyRef> keys;             ///< its `_modules` keys at build
  std::vector<PyObject *> values;      ///< its `_modules` values at build
  PyRef result;                        ///< the slice
  std::vector<PyObject *> resultItems; ///< the slice's `_modules` values
};

namespace {

/// `o.__dict__['_modules']` when it is a dict (borrowed), else null.
PyObject *modulesDict(PyObject *o) {
  PyObject **dictPtr = _PyObject_GetDictPtr(o);
  PyObject *m = dictPtr && *dictPtr ? PyDict_GetItemString(*dictPtr, "_modules") : nullptr;
  return m && PyDict_Check(m) ? m : nullptr;
}

/// Whether dict `d`'s values are `values` (identity) and, with `keys`
/// given, its keys equal them.
bool sameItems(PyObject *d, const std::vector<PyObject *> &values, const std::vector<PyRef> *keys) {
  if (!d || PyDict_GET_SIZE(d) != static_cast<Py_ssize_t>(values.size()))
    return false;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  for (size_t i = 0; PyDict_Next(d, &pos, &k, &v); ++i) {
    if (v != values[i])
      return false;
    if (keys && k != (*keys)[i].get() && PyObject_RichCompareBool(k, (*keys)[i].get(), Py_EQ) != 1)
      return PyErr_Clear(), false;
  }
  return true;
}

/// `parent[key]` for an Item source: the cached slice when still valid,
/// else built by type(parent).__getitem__ (and cached when `parent` is a
/// module container). A new reference, or null with no error set.
PyRef resolveItem(const Source &s, PyObject *parent) {
  ItemCache *c = s.itemCache.get();
  if (c && c->result && PyWeakref_GetObject(c->parent.get()) == parent &&
      sameItems(modulesDict(parent), c->values, &c->keys) &&
      sameItems(modulesDict(c->result.get()), c->resultItems, nullptr))
    return c->result;
  PyRef r = PyRef::steal(PyObject_GetItem(parent, s.key.get()));
  PyErr_Clear();
  PyObject *modules = modulesDict(parent), *sliceModules = r ? modulesDict(r.get()) : nullptr;
  if (!c || !modules || !sliceModules)
    return r;
  // Filled aside and swapped in: releasing the old slice may run Python
  // (another thread could resolve this source meanwhile).
  ItemCache fresh{PyRef::steal(PyWeakref_NewRef(parent, nullptr)), {}, {}, r, {}};
  PyErr_Clear(); // a container without weak references: never reused
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(modules, &pos, &k, &v)) {
    fresh.keys.push_back(PyRef::borrow(k));
    fresh.values.push_back(v);
  }
  for (pos = 0; PyDict_Next(sliceModules, &pos, &k, &v);)
    fresh.resultItems.push_back(v);
  if (!fresh.parent)
    fresh.result = PyRef();
  std::swap(*c, fresh);
  return r;
}

} // namespace

int SourceTable::add(Source::Kind kind, int parent, int index, PyObject *key) {
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Source &s = sources_[i];
    if (s.kind != kind || s.parent != parent || s.index != index)
      continue;
    if (!key && !s.key)
      return static_cast<int>(i);
    if (kind == Source::Kind::Constant) {
      if (key && constantObject(s) == key)
        return static_cast<int>(i);
      continue;
    }
    if (key && s.key &&
        (key == s.key.get() || PyObject_RichCompareBool(key, s.key.get(), Py_EQ) == 1))
      return static_cast<int>(i);
  }
  PyErr_Clear();
  Source s{kind, parent, index, PyRef::borrow(key)};
  if (kind == Source::Kind::Item)
    s.itemCache = std::make_shared<ItemCache>();
  if (kind == Source::Kind::Constant && holdWeakly(key)) {
    if (PyRef ref = PyRef::steal(PyWeakref_NewRef(key, nullptr))) {
      s.key = ref;
      s.weak = true;
    }
    PyErr_Clear();
  }
  sources_.push_back(std::move(s));
  return static_cast<int>(sources_.size() - 1);
}

bool SourceTable::hasDeadReference() const {
  for (const Source &s : sources_)
    if (s.weak && !constantObject(s))
      return true;
  return false;
}

bool SourceTable::holdsModuleConstant() const {
  for (const Source &s : sources_)
    if (s.weak)
      return true;
  return false;
}

std::string SourceTable::describe(int i, const std::vector<std::string> &localNames) const {
  const Source &s = sources_[i];
  auto keyStr = [&] { return pyText(s.key.get(), /*repr=*/true); };
  switch (s.kind) {
  case Source::Kind::Local:
    return "L['" + (s.index < (int)localNames.size() ? localNames[s.index] : "?") + "']";
  case Source::Kind::Globals:
    return "G";
  case Source::Kind::Function:
    return "F";
  case Source::Kind::Constant: {
    PyObject *o = constantObject(s);
    return o ? "<constant " + std::string(Py_TYPE(o)->tp_name) + ">" : "<dead object>";
  }
  case Source::Kind::TypeLookup:
    return describe(s.parent, localNames) + ".__mro__." + pyText(s.key.get());
  case Source::Kind::Builtin:
    return "B[" + keyStr() + "]";
  case Source::Kind::ObjDict:
    return describe(s.parent, localNames) + ".__dict__";
  case Source::Kind::DictItem:
    return describe(s.parent, localNames) + "[" + keyStr() + "]";
  case Source::Kind::Attr: {
    PyObject *k = s.key.get();
    const char *c = PyUnicode_AsUTF8(k);
    return describe(s.parent, localNames) + "." + (c ? c : "?");
  }
  case Source::Kind::TupleItem:
    return describe(s.parent, localNames) + "[" + std::to_string(s.index) + "]";
  case Source::Kind::FromNumpy:
    return "torch.from_numpy(" + describe(s.parent, localNames) + ")";
  case Source::Kind::Item:
    return describe(s.parent, localNames) + "[" + keyStr() + "]";
  case Source::Kind::MethodCall:
    return describe(s.parent, localNames) + "." + pyText(s.key.get()) + "()";
  }
  return "?";
}

namespace {
/// torch.from_numpy(o) for an exact numpy.ndarray `o`; null otherwise.
PyRef fromNumpy(PyObject *o) {
  static PyObject *fn = nullptr, *ndarray = nullptr; // process lifetime
  if (!o)
    return PyRef();
  if (!fn) {
    PyObject *torch = PyImport_ImportModule("torch");
    PyObject *np = PyImport_ImportModule("numpy");
    fn = torch ? PyObject_GetAttrString(torch, "from_numpy") : nullptr;
    ndarray = np ? PyObject_GetAttrString(np, "ndarray") : nullptr;
    Py_XDECREF(torch);
    Py_XDECREF(np);
    if (!fn || !ndarray)
      return PyRef();
  }
  if (reinterpret_cast<PyObject *>(Py_TYPE(o)) != ndarray)
    return PyRef();
  return PyRef::steal(PyObject_CallOneArg(fn, o));
}
} // namespace

int SourceTable::resolve(const FrameView &frame, std::vector<PyRef> &out) const {
  out.clear();
  out.reserve(sources_.size());
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Source &s = sources_[i];
    PyObject *parent = s.parent >= 0 ? out[s.parent].get() : nullptr;
    PyObject *v = nullptr; // borrowed unless noted
    switch (s.kind) {
    case Source::Kind::Local:
      v = s.index < frame.numLocals ? frame.locals[s.index] : nullptr;
      break;
    case Source::Kind::Globals:
      v = frame.globals;
      break;
    case Source::Kind::Function:
      v = frame.func;
      break;
    case Source::Kind::Constant:
      v = constantObject(s);
      break;
    case Source::Kind::TypeLookup:
      v = parent && PyType_Check(parent)
              ? _PyType_Lookup(reinterpret_cast<PyTypeObject *>(parent), s.key.get())
              : nullptr;
      break;
    case Source::Kind::Builtin:
      v = PyDict_Check(frame.builtins) ? PyDict_GetItemWithError(frame.builtins, s.key.get())
                                       : nullptr;
      break;
    case Source::Kind::ObjDict: {
      PyObject **dictPtr = parent ? _PyObject_GetDictPtr(parent) : nullptr;
      v = dictPtr ? *dictPtr : nullptr;
      break;
    }
    case Source::Kind::DictItem:
      v = parent && PyDict_Check(parent) ? PyDict_GetItemWithError(parent, s.key.get()) : nullptr;
      break;
    case Source::Kind::Attr:
      out.push_back(PyRef::steal(parent ? PyObject_GetAttr(parent, s.key.get()) : nullptr));
      if (!out.back()) {
        PyErr_Clear();
        return static_cast<int>(i);
      }
      continue;
    case Source::Kind::Item:
      out.push_back(parent ? resolveItem(s, parent) : PyRef());
      if (!out.back()) {
        PyErr_Clear();
        return static_cast<int>(i);
      }
      continue;
    case Source::Kind::MethodCall:
      out.push_back(
          PyRef::steal(parent ? PyObject_CallMethodNoArgs(parent, s.key.get()) : nullptr));
      if (!out.back()) {
        PyErr_Clear();
        return static_cast<int>(i);
      }
      continue;
    case Source::Kind::FromNumpy:
      out.push_back(fromNumpy(parent));
      if (!out.back()) {
        PyErr_Clear();
        return static_cast<int>(i);
      }
      continue;
    case Source::Kind::TupleItem:
      if (parent && PyTuple_Check(parent) && s.index < PyTuple_GET_SIZE(parent))
        v = PyTuple_GET_ITEM(parent, s.index);
      else if (parent && PyList_Check(parent) && s.index < PyList_GET_SIZE(parent))
        v = PyList_GET_ITEM(parent, s.index);
      break;
    }
    if (!v) {
      PyErr_Clear();
      return static_cast<int>(i);
    }
    out.push_back(PyRef::borrow(v));
  }
  return -1;
}

PyRef plainContents(PyObject *o) {
  static PyOnce dequeOnce, arrayOnce;
  PyObject *deque = dequeOnce.get([] {
    PyRef m = PyRef::steal(PyImport_ImportModule("collections"));
    return m ? PyObject_GetAttrString(m.get(), "deque") : nullptr;
  });
  PyObject *array = arrayOnce.get([] {
    PyRef m = PyRef::steal(PyImport_ImportModule("array"));
    return m ? PyObject_GetAttrString(m.get(), "array") : nullptr;
  });
  auto isA = [&](PyObject *type) {
    return type && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject *>(type));
  };
  PyRef plain;
  if (PyByteArray_Check(o) || PyMemoryView_Check(o) || isA(array))
    plain = PyRef::steal(PyBytes_FromObject(o));
  else if ((PyList_Check(o) && !PyList_CheckExact(o)) || isA(deque) || PyDictKeys_Check(o) ||
           PyDictValues_Check(o) || PyDictItems_Check(o))
    plain = PyRef::steal(PySequence_List(o));
  else if (PySet_Check(o) && !PySet_CheckExact(o))
    plain = PyRef::steal(PySet_New(o));
  else if ((PyDict_Check(o) && !PyDict_CheckExact(o)) || Py_IS_TYPE(o, &PyDictProxy_Type)) {
    plain = PyRef::steal(PyDict_New());
    if (plain && PyDict_Merge(plain.get(), o, 1) < 0)
      plain = PyRef();
  }
  if (!plain)
    PyErr_Clear();
  return plain;
}

PyRef snapshotValue(PyObject *o) {
  if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    bool list = PyList_CheckExact(o);
    PyRef copy = PyRef::steal(list ? PyList_New(n) : PyTuple_New(n));
    if (!copy)
      return PyRef();
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyRef item = snapshotValue(PySequence_Fast_ITEMS(o)[i]);
      if (!item)
        return PyRef();
      if (list)
        PyList_SET_ITEM(copy.get(), i, item.release());
      else
        PyTuple_SET_ITEM(copy.get(), i, item.release());
    }
    return copy;
  }
  if (PyDict_CheckExact(o)) {
    PyRef copy = PyRef::steal(PyDict_New());
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (copy && PyDict_Next(o, &pos, &k, &v)) {
      PyRef item = snapshotValue(v);
      if (!item || PyDict_SetItem(copy.get(), k, item.get()) < 0)
        return PyRef();
    }
    return copy;
  }
  if (PySet_CheckExact(o)) // its items are immutable (isPlainData)
    return PyRef::steal(PySet_New(o));
  return PyRef::borrow(o);
}

bool sameValue(PyObject *a, PyObject *b, int depth) {
  if (a == b)
    return true;
  if (Py_TYPE(a) != Py_TYPE(b))
    return false;
  if (PyFloat_CheckExact(a)) { // bit for bit: -0.0 is not 0.0, a NaN equals itself
    double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  if (depth < 32 && (PyList_CheckExact(a) || PyTuple_CheckExact(a))) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(a);
    if (PySequence_Fast_GET_SIZE(b) != n)
      return false;
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!sameValue(PySequence_Fast_ITEMS(a)[i], PySequence_Fast_ITEMS(b)[i], depth + 1))
        return false;
    return true;
  }
  if (depth < 32 && PyDict_CheckExact(a)) { // in order: iterating it unrolls in that order
    if (PyDict_GET_SIZE(a) != PyDict_GET_SIZE(b))
      return false;
    PyObject *ka, *va, *kb, *vb;
    Py_ssize_t pa = 0, pb = 0;
    while (PyDict_Next(a, &pa, &ka, &va)) {
      if (!PyDict_Next(b, &pb, &kb, &vb) || !sameValue(ka, kb, depth + 1) ||
          !sameValue(va, vb, depth + 1))
        return false;
    }
    return true;
  }
  if (depth < 32 && PyAnySet_CheckExact(a)) { // in order: iterating it unrolls in that order
    if (PySet_GET_SIZE(a) != PySet_GET_SIZE(b))
      return false;
    PyObject *ka, *kb;
    Py_hash_t ha, hb;
    Py_ssize_t pa = 0, pb = 0;
    while (_PySet_NextEntry(a, &pa, &ka, &ha))
      if (!_PySet_NextEntry(b, &pb, &kb, &hb) || !sameValue(ka, kb, depth + 1))
        return false;
    return true;
  }
  int eq = PyObject_RichCompareBool(a, b, Py_EQ);
  PyErr_Clear();
  return eq == 1;
}

namespace {

/// A Length guard on a dict holds its keys in order (a tuple; set at the
/// end of capture, Interpreter::orderDictLengthGuards): the dict must have
/// exactly those keys in that order, since iterating it (a Sequential's
/// `_modules`, a dict of tensors) unrolls in that order.
bool sameKeys(PyObject *d, PyObject *keys) {
  if (!PyDict_Check(d) || PyDict_GET_SIZE(d) != PyTuple_GET_SIZE(keys))
    return false;
  auto same = [&](Py_ssize_t i, PyObject *k) {
    PyObject *want = PyTuple_GET_ITEM(keys, i);
    return k == want || PyObject_RichCompareBool(k, want, Py_EQ) == 1;
  };
  if (!PyDict_CheckExact(d)) { // its own order (an OrderedDict)
    PyRef now = dictKeysInOrder(d);
    for (Py_ssize_t i = 0; now && i < PyTuple_GET_SIZE(now.get()); ++i)
      if (!same(i, PyTuple_GET_ITEM(now.get(), i)))
        return PyErr_Clear(), false;
    return now ? true : (PyErr_Clear(), false);
  }
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  for (Py_ssize_t i = 0; PyDict_Next(d, &pos, &k, &v); ++i)
    if (!same(i, k))
      return PyErr_Clear(), false;
  return true;
}

bool tensorMatches(const Guard &g, PyObject *v) {
  // Same checks as readTensorMeta + compare, without building vectors.
  return isTensor(v) && tensorMetaMatches(v, g.dtype, g.sizes, g.strides, g.requiresGrad, g.device);
}

/// An Aliasing guard's test (Guards.h).
bool sameAliasing(PyObject *pairs, const std::vector<PyRef> &values) {
  llvm::SmallVector<PyObject *, 16> byGroup;
  for (Py_ssize_t i = 0; i + 1 < PyTuple_GET_SIZE(pairs); i += 2) {
    PyObject *o = values[PyLong_AsSsize_t(PyTuple_GET_ITEM(pairs, i))].get();
    size_t group = PyLong_AsSize_t(PyTuple_GET_ITEM(pairs, i + 1));
    if (group >= byGroup.size())
      byGroup.resize(group + 1, nullptr);
    if (!byGroup[group])
      byGroup[group] = o;
    else if (byGroup[group] != o)
      return false;
  }
  llvm::sort(byGroup);
  return std::adjacent_find(byGroup.begin(), byGroup.end()) == byGroup.end();
}

} // namespace

PyRef dictKeysInOrder(PyObject *d) {
  if (!PyDict_CheckExact(d))
    return PyRef::steal(PySequence_Tuple(d));
  PyRef keys = PyRef::steal(PyTuple_New(PyDict_GET_SIZE(d)));
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  for (Py_ssize_t i = 0; keys && PyDict_Next(d, &pos, &k, &v); ++i)
    PyTuple_SET_ITEM(keys.get(), i, Py_NewRef(k));
  return keys;
}

int checkGuards(const std::vector<Guard> &guards, const std::vector<PyRef> &values) {
  for (size_t i = 0; i < guards.size(); ++i) {
    const Guard &g = guards[i];
    PyObject *v = g.source >= 0 ? values[g.source].get() : nullptr;
    bool ok = false;
    switch (g.kind) {
    case Guard::Kind::Identity:
      ok = v == (g.weak ? PyWeakref_GET_OBJECT(g.expected.get()) : g.expected.get());
      break;
    case Guard::Kind::NotInDict:
      ok = !PyDict_Check(v) || !PyDict_Contains(v, g.expected.get());
      break;
    case Guard::Kind::Equals:
      ok = sameValue(v, g.expected.get());
      break;
    case Guard::Kind::Contents: {
      PyRef now = plainContents(v);
      ok = now && sameValue(now.get(), g.expected.get());
      break;
    }
    case Guard::Kind::Tensor:
      ok = (!g.expected || reinterpret_cast<PyObject *>(Py_TYPE(v)) == g.expected.get()) &&
           tensorMatches(g, v);
      break;
    case Guard::Kind::Length: {
      if (PyTuple_Check(g.expected.get())) {
        ok = sameKeys(v, g.expected.get());
        break;
      }
      Py_ssize_t n = PyTuple_Check(v)  ? PyTuple_GET_SIZE(v)
                     : PyList_Check(v) ? PyList_GET_SIZE(v)
                     : PyDict_Check(v) ? PyDict_Size(v)
                                       : -1;
      ok = n >= 0 && n == PyLong_AsSsize_t(g.expected.get());
      break;
    }
    case Guard::Kind::Call: {
      PyObject *e = g.expected.get();
      PyRef r =
          PyRef::steal(PyObject_Call(PyTuple_GET_ITEM(e, 0), PyTuple_GET_ITEM(e, 1), nullptr));
      PyObject *want = PyTuple_GET_ITEM(e, 2);
      ok = r && Py_TYPE(r.get()) == Py_TYPE(want) &&
           PyObject_RichCompareBool(r.get(), want, Py_EQ) == 1;
      PyErr_Clear();
      break;
    }
    case Guard::Kind::HasAttr: {
      PyObject *e = g.expected.get();
      int has = PyObject_HasAttr(v, PyTuple_GET_ITEM(e, 0));
      PyErr_Clear();
      ok = has == (PyTuple_GET_ITEM(e, 1) == Py_True);
      break;
    }
    case Guard::Kind::Type:
      ok = reinterpret_cast<PyObject *>(Py_TYPE(v)) == g.expected.get();
      break;
    case Guard::Kind::Aliasing:
      ok = sameAliasing(g.expected.get(), values);
      break;
    case Guard::Kind::TensorMethods:
      ok = tensorMethodsUnchanged(g.expected.get());
      break;
    }
    if (!ok)
      return static_cast<int>(i);
  }
  return -1;
}

bool hasDeadReference(const std::vector<Guard> &guards) {
  for (const Guard &g : guards)
    if (g.weak && PyWeakref_GET_OBJECT(g.expected.get()) == Py_None)
      return true;
  return false;
}

std::string Guard::describe(const SourceTable &sources,
                            const std::vector<std::string> &localNames) const {
  std::ostringstream os;
  if (kind == Kind::Call) {
    PyObject *e = expected.get();
    PyRef name = PyRef::steal(PyObject_GetAttrString(PyTuple_GET_ITEM(e, 0), "__qualname__"));
    PyErr_Clear();
    os << (name ? pyText(name.get()) : pyText(PyTuple_GET_ITEM(e, 0)))
       << pyText(PyTuple_GET_ITEM(e, 1), true)
       << " == " << pyText(PyTuple_GET_ITEM(e, 2), /*repr=*/true) << " (global state)";
    return os.str();
  }
  if (kind == Kind::TensorMethods) {
    os << "torch.Tensor's replaced methods are "
       << pyText(PyTuple_GET_ITEM(expected.get(), 1), true) << " (as at compile time)";
    return os.str();
  }
  if (kind == Kind::Aliasing) {
    PyObject *pairs = expected.get();
    os << "the objects of";
    for (Py_ssize_t i = 0; i + 1 < PyTuple_GET_SIZE(pairs); i += 2)
      os << (i ? ", " : " ")
         << sources.describe((int)PyLong_AsLong(PyTuple_GET_ITEM(pairs, i)), localNames);
    os << " are the same or distinct as at compile time";
    return os.str();
  }
  os << sources.describe(source, localNames);
  switch (kind) {
  case Kind::Call:
  case Kind::Aliasing:
  case Kind::TensorMethods:
    break;
  case Kind::HasAttr:
    os << (PyTuple_GET_ITEM(expected.get(), 1) == Py_True ? " has" : " has no") << " attribute "
       << pyText(PyTuple_GET_ITEM(expected.get(), 0), /*repr=*/true);
    break;
  case Kind::Identity:
    os << " is the same object as at compile time";
    break;
  case Kind::NotInDict:
    os << " has no key " << pyText(expected.get(), /*repr=*/true);
    break;
  case Kind::Type:
    os << " has type " << reinterpret_cast<PyTypeObject *>(expected.get())->tp_name;
    break;
  case Kind::Equals:
    os << " == " << pyText(expected.get(), /*repr=*/true);
    break;
  case Kind::Contents:
    os << " holds " << pyText(expected.get(), /*repr=*/true);
    break;
  case Kind::Length:
    if (PyTuple_Check(expected.get()))
      os << " has the keys " << pyText(expected.get(), /*repr=*/true) << " in this order";
    else
      os << " has length " << pyText(expected.get(), /*repr=*/true);
    break;
  case Kind::Tensor: {
    auto dt = dtypeFromObject(dtype);
    os << " is a " << (device == TensorMeta::kCpuDevice ? std::string("CPU") : deviceName(device))
       << " tensor with dtype " << (dt ? dtypeName(*dt) : "?") << ", sizes (";
    for (size_t i = 0; i < sizes.size(); ++i) // -1: a symbolic size (>= 2)
      os << (i ? ", " : "")
         << (sizes[i] == kSymbolicSize ? std::string("?") : std::to_string(sizes[i]));
    if (strides.empty() && !sizes.empty()) {
      os << "), contiguous";
    } else {
      os << "), strides (";
      for (size_t i = 0; i < strides.size(); ++i)
        os << (i ? ", " : "") << strides[i];
      os << ")";
    }
    os << ", requires_grad=" << (requiresGrad ? "True" : "False");
    if (expected)
      os << ", type " << reinterpret_cast<PyTypeObject *>(expected.get())->tp_name;
    break;
  }
  }
  return os.str();
}

} // namespace kiln

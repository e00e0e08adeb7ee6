//===- PlainObjects.cpp - type guards for plain Python objects ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements PlainObjects.h. Why a Type guard is enough for a plain object
// the capture only read attributes from: every attribute read goes through
// an Attr source resolved against the frame on each call and guarded on its
// own (a number by value, a tensor by its metadata, a nested object by its
// type or identity), so the graph depends on the object's state only
// through guards; under an identity guard the same reads were already what
// protected it against a config changed after compiling. What the Type
// guard cannot stand for is the object's identity and state read outside
// those sources; the interpreter reports such uses here (pinPlainObject)
// and the finish turns the object's guards back into identity guards.
//===----------------------------------------------------------------------===//
#include "capture/interp/PlainObjects.h"
#include "GilOnce.h"
#include "Log.h"
#include "capture/Capture.h"
#include "capture/interp/Interp.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

namespace {

struct PlainGuard {
  size_t guard;
  PyRef obj; ///< the object at capture (held only until the finish)
};

struct PlainState {
  Capture *out = nullptr;
  std::vector<PlainGuard> guards;
  std::vector<PlainGuard> valueGuards; ///< Equals guards on lists/dicts
  std::set<PyObject *> pinned;
  std::set<PyObject *> stored; ///< plain objects an attribute is stored into
  /// Lists of plain objects and ModelOutputs guarded by type and length,
  /// their items by their own sources (addItemsGuard).
  std::set<PyObject *> byItems;
  std::string why; ///< the first pin's reason (for the guards log)
  /// Lists/dicts of the caller the capture mutates (source, object).
  std::vector<std::pair<int, PyRef>> mutatedContainers;
};

/// One per capture in progress on this thread (captures nest; a Python
/// call at capture may let another thread capture meanwhile).
std::vector<PlainState> &states() {
  thread_local std::vector<PlainState> s;
  return s;
}

bool pureBases(PyTypeObject *t) {
  PyObject *mro = t->tp_mro;
  if (!mro || !PyTuple_Check(mro))
    return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    auto *base = reinterpret_cast<PyTypeObject *>(PyTuple_GET_ITEM(mro, i));
    if (base != &PyBaseObject_Type && !PyType_HasFeature(base, Py_TPFLAGS_HEAPTYPE))
      return false; // a C base (dict, tuple, Exception, a torch._C class ...)
  }
  return true;
}

/// Pins `o` and what its tuples, lists and dicts hold: plain objects, and
/// with `identity` also lists/dicts guarded by value (pinIdentity).
void pinIn(PyObject *o, const char *why, int depth, bool identity) {
  if (!o || depth > 8)
    return;
  if (identity)
    pinIdentity(o, why);
  else
    pinPlainObject(o, why);
  if (PyTuple_Check(o) || PyList_Check(o)) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i)
      pinIn(PySequence_Fast_ITEMS(o)[i], why, depth + 1, identity);
  } else if (PyDict_Check(o)) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &k, &v)) {
      pinIn(k, why, depth + 1, identity);
      pinIn(v, why, depth + 1, identity);
    }
  }
}

/// Whether a side effect of `out` stores into or deletes from the object
/// of `source` (with `anyKind`, also appends, inserts, pops: any effect
/// on it).
bool mutatedByEffects(const Capture &out, int source, bool anyKind = false) {
  for (const SideEffect &e : out.effects)
    if (e.target == source &&
        (anyKind || e.kind == SideEffect::Kind::SetItem || e.kind == SideEffect::Kind::DelItem))
      return true;
  return false;
}

void scanCapture(const Capture &out) {
  for (const std::vector<OutputSlot> *slots : {&out.outputs, &out.effectValues})
    for (const OutputSlot &s : *slots)
      if (s.kind == OutputSlot::Kind::Constant)
        pinIn(s.constant.get(), "the object is part of the result or of a side effect", 0,
              /*identity=*/true);
  for (size_t i = 0; i < out.sources.size(); ++i) {
    const Source &s = out.sources[(int)i];
    if (!s.weak) // a Constant source, or a dict item keyed by the object
      pinIn(s.key.get(), "a source is keyed by the object", 0, /*identity=*/true);
  }
}

/// Guard `list` (a Type guard on a list of plain objects) becomes an
/// identity guard, and each item gets one through its own source.
void pinListItems(Capture &out, Guard &list, const PyRef &obj) {
  list.kind = Guard::Kind::Identity;
  list.expected = obj;
  int source = list.source; // `list` is not used below: push_back moves it
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(obj.get()); ++i) {
    Guard g;
    g.kind = Guard::Kind::Identity;
    g.source = out.sources.add(Source::Kind::TupleItem, source, (int)i, nullptr);
    g.expected = PyRef::borrow(PyList_GET_ITEM(obj.get(), i));
    out.guards.push_back(std::move(g));
  }
}

/// An object the graph stores attributes into stays guarded by type (a new
/// KV cache per generate() call shares the entry): the replay stores into
/// the call's object, and reads after the store take the stored value by
/// the object (Interpreter overlay_). That holds while the plain objects
/// the capture read are the same or distinct as they were (`a.x = t;
/// return b.x` with `a is b` at compile time), which this guard checks.
/// False (no guard added, no Python error left) when out of memory.
/// `more` (source, object) pairs join the check: containers the capture
/// mutates through one name must not be reached through another one.
bool addAliasingGuard(Capture &out, const std::vector<PlainGuard> &guards,
                      const std::vector<std::pair<int, PyRef>> &more) {
  std::vector<std::pair<int, PyObject *>> seen; // (source, object)
  for (const PlainGuard &p : guards)
    seen.push_back({out.guards[p.guard].source, p.obj.get()});
  for (const auto &[source, obj] : more)
    seen.push_back({source, obj.get()});
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  std::vector<PyObject *> groups;
  PyRef pairs = PyRef::steal(PyTuple_New((Py_ssize_t)seen.size() * 2));
  if (!pairs)
    return PyErr_Clear(), false;
  for (size_t i = 0; i < seen.size(); ++i) {
    size_t group = std::find(groups.begin(), groups.end(), seen[i].second) - groups.begin();
    if (group == groups.size())
      groups.push_back(seen[i].second);
    PyTuple_SET_ITEM(pairs.get(), (Py_ssize_t)(2 * i), PyLong_FromLong(seen[i].first));
    PyTuple_SET_ITEM(pairs.get(), (Py_ssize_t)(2 * i + 1), PyLong_FromSize_t(group));
  }
  Guard g;
  g.kind = Guard::Kind::Aliasing;
  g.source = -1;
  g.expected = std::move(pairs);
  out.guards.push_back(std::move(g));
  return true;
}

} // namespace

bool isNamedTuple(PyObject *o) {
  PyTypeObject *t = Py_TYPE(o);
  if (t->tp_base != &PyTuple_Type || !(t->tp_flags & Py_TPFLAGS_HEAPTYPE))
    return false;
  for (const char *name : {"__getitem__", "__iter__", "__len__"}) {
    PyRef key = PyRef::steal(PyUnicode_InternFromString(name));
    if (!key || _PyType_Lookup(t, key.get()) != _PyType_Lookup(&PyTuple_Type, key.get())) {
      PyErr_Clear();
      return false;
    }
  }
  PyRef fields = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject *>(t), "_fields"));
  PyErr_Clear();
  return fields && PyTuple_Check(fields.get());
}

bool holdsTensor(PyObject *o) {
  if (isTensor(o))
    return true;
  if (!PyTuple_CheckExact(o) && !PyList_CheckExact(o) && !isNamedTuple(o))
    return false;
  PyObject *const *items = PySequence_Fast_ITEMS(o);
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i)
    if (holdsTensor(items[i]))
      return true;
  return false;
}

/// Whether `meta` is `type` or abc.ABCMeta: an abstract base class's
/// metaclass only adds isinstance/issubclass bookkeeping (HuggingFace's
/// cache layers derive from ABC); instance attribute lookup is the same.
bool plainMetaclass(PyTypeObject *meta) {
  if (meta == &PyType_Type)
    return true;
  static PyOnce abcMeta;
  PyObject *abc = abcMeta.imported("abc", "ABCMeta");
  return abc && reinterpret_cast<PyObject *>(meta) == abc;
}

bool isPlainObject(PyObject *o) {
  PyTypeObject *t = o ? Py_TYPE(o) : nullptr;
  if (!t || !PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE) || t->tp_dictoffset == 0 ||
      !plainMetaclass(Py_TYPE(reinterpret_cast<PyObject *>(t))) || PyType_Check(o) ||
      PyExceptionInstance_Check(o) || !pureBases(t))
    return false;
  return !isTensor(o) && !isModule(o);
}

void plainObjectsBegin(Capture &out) {
  PlainState s;
  s.out = &out;
  states().push_back(std::move(s));
}

void plainObjectsEnd(Capture &out) {
  auto &st = states();
  for (size_t i = st.size(); i-- > 0;)
    if (st[i].out == &out) {
      st.erase(st.begin() + (long)i);
      return;
    }
}

void addPlainObjectGuard(Capture &out, size_t guard, PyObject *o) {
  for (PlainState &s : states())
    if (s.out == &out)
      s.guards.push_back({guard, PyRef::borrow(o)});
}

void pinPlainObject(PyObject *o, const char *why) {
  if (states().empty() || !o)
    return;
  PlainState &s = states().back();
  if (s.byItems.count(o)) { // used as a whole
    if (s.pinned.insert(o).second && s.why.empty())
      s.why = why;
    return;
  }
  if (!isPlainObject(o))
    return;
  if (s.pinned.insert(o).second && s.why.empty())
    s.why = why;
}

void noteAttributeStore(PyObject *o) {
  if (!states().empty() && o && isPlainObject(o))
    states().back().stored.insert(o);
}

void noteContainerMutation(int source, PyObject *o) {
  if (!states().empty() && o && source >= 0)
    states().back().mutatedContainers.push_back({source, PyRef::borrow(o)});
}

void pinIdentity(PyObject *o, const char *why) {
  if (states().empty() || !o)
    return;
  if (!PyList_CheckExact(o) && !PyDict_CheckExact(o) && !PySet_CheckExact(o))
    return pinPlainObject(o, why);
  PlainState &s = states().back();
  if (s.pinned.insert(o).second && s.why.empty())
    s.why = why;
}

void pinPlainObjectsIn(PyObject *o, const char *why) { pinIn(o, why, 0, /*identity=*/false); }

void addValueGuard(Capture &out, size_t guard, PyObject *o) {
  for (PlainState &s : states())
    if (s.out == &out)
      s.valueGuards.push_back({guard, PyRef::borrow(o)});
}

void addItemsGuard(Capture &out, size_t guard, PyObject *o) {
  addValueGuard(out, guard, o);
  for (PlainState &s : states())
    if (s.out == &out)
      s.byItems.insert(o);
}

bool isModelOutputRecord(PyObject *o) {
  if (!o || !PyDict_Check(o) || PyDict_CheckExact(o))
    return false;
  static PyOnce names;
  PyObject *n = names.get([] { return Py_BuildValue("(ss)", "__dataclass_fields__", "to_tuple"); });
  for (Py_ssize_t i = 0; n && i < PyTuple_GET_SIZE(n); ++i)
    if (!_PyType_Lookup(Py_TYPE(o), PyTuple_GET_ITEM(n, i)))
      return false;
  return n != nullptr;
}

bool keepsDictMethod(PyObject *o, const char *name) {
  PyRef n = PyRef::steal(PyUnicode_InternFromString(name));
  return o && PyDict_Check(o) && n &&
         _PyType_Lookup(Py_TYPE(o), n.get()) ==
             _PyType_Lookup(&PyDict_Type, n.get()); // borrowed, both
}

void finishPlainObjectGuards(Capture &out, const char *pinAll) {
  PlainState *state = nullptr;
  for (PlainState &s : states())
    if (s.out == &out)
      state = &s;
  if (!state)
    return;
  scanCapture(out);
  // A dict the code updates (`d["n"] += 1`, a cache's `is_updated[i] =
  // True`) changes on every call: by type and keys in order, as each item
  // read has its own guard, and the replay updates the call's dict; reads
  // after an update take the stored value by object, so it joins the
  // aliasing guard like a plain object an attribute is stored into.
  std::vector<PlainGuard> updated;
  for (PlainGuard &p : state->valueGuards) {
    Guard &g = out.guards[p.guard];
    if (!PyDict_CheckExact(p.obj.get()) || !mutatedByEffects(out, g.source) ||
        state->pinned.count(p.obj.get()))
      continue;
    g.kind = Guard::Kind::Type;
    g.expected = PyRef::borrow(reinterpret_cast<PyObject *>(&PyDict_Type));
    updated.push_back(p);
  }
  bool stores = !updated.empty();
  for (PlainGuard &p : state->guards)
    stores |= !pinAll && !state->pinned.count(p.obj.get()) && state->stored.count(p.obj.get());
  std::vector<PlainGuard> aliased = state->guards;
  aliased.insert(aliased.end(), updated.begin(), updated.end());
  if (!state->mutatedContainers.empty()) { // the lists/dicts read by value may alias them
    aliased.insert(aliased.end(), state->valueGuards.begin(), state->valueGuards.end());
    stores = true;
  }
  if (stores && !addAliasingGuard(out, aliased, state->mutatedContainers)) {
    state->pinned.insert(state->stored.begin(), state->stored.end());
    for (PlainGuard &p : updated) {
      Guard &g = out.guards[p.guard];
      g.kind = Guard::Kind::Identity;
      g.expected = p.obj;
    }
    updated.clear();
  }
  for (PlainGuard &p : updated) { // the keys in order, read at the call's start
    PyRef keys = PyRef::steal(PySequence_Tuple(p.obj.get()));
    Guard g;
    g.kind = keys ? Guard::Kind::Length : Guard::Kind::Identity;
    g.source = out.guards[p.guard].source;
    g.expected = keys ? keys : p.obj;
    PyErr_Clear();
    out.guards.push_back(std::move(g));
  }
  bool any = false;
  for (PlainGuard &p : state->guards) {
    if (!pinAll && !state->pinned.count(p.obj.get()))
      continue;
    Guard &g = out.guards[p.guard];
    g.kind = Guard::Kind::Identity; // held strongly, as before the relaxation
    g.expected = p.obj;
    any = true;
  }
  // A list/dict the code uses as an object keeps its value guard (reads of
  // the whole value depend on it) and gains an identity guard. A capture
  // that failed part-way does not pin them: the eager rest reads the
  // caller's own object.
  for (PlainGuard &p : state->valueGuards) {
    Guard &valueGuard = out.guards[p.guard];
    if (std::any_of(updated.begin(), updated.end(),
                    [&](const PlainGuard &u) { return u.guard == p.guard; }))
      continue;
    if (valueGuard.kind == Guard::Kind::Type && !PyList_CheckExact(p.obj.get()) &&
        mutatedByEffects(out, valueGuard.source, /*anyKind=*/true))
      state->pinned.insert(p.obj.get()); // a ModelOutput the code updates: by identity
    if (valueGuard.kind == Guard::Kind::Type && PyList_CheckExact(p.obj.get())) {
      if (!state->pinned.count(p.obj.get()) &&
          !mutatedByEffects(out, valueGuard.source, /*anyKind=*/true))
        continue;
      // Updated in place, or used as a whole at capture (`in`, a builtin,
      // returned): the list and each of its items by identity.
      pinListItems(out, valueGuard, p.obj);
      any = true;
      continue;
    }
    if (!state->pinned.count(p.obj.get()))
      continue;
    Guard g;
    g.kind = Guard::Kind::Identity;
    g.source = out.guards[p.guard].source;
    g.expected = p.obj;
    out.guards.push_back(std::move(g));
    any = true;
  }
  if (any)
    log(LogChannel::Guards, std::string("plain objects of this capture are guarded by identity: ") +
                                (pinAll ? pinAll : state->why.c_str()));
  state->valueGuards.clear();
  state->guards.clear();
  state->pinned.clear();
  state->stored.clear();
  state->byItems.clear();
  state->mutatedContainers.clear();
}

} // namespace kiln

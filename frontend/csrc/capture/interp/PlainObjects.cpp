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
#include "Log.h"
#include "capture/Capture.h"
#include "capture/interp/Interp.h"

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
  std::string why; ///< the first pin's reason (for the guards log)
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
/// of `source`.
bool mutatedByEffects(const Capture &out, int source) {
  for (const SideEffect &e : out.effects)
    if (e.target == source &&
        (e.kind == SideEffect::Kind::SetItem || e.kind == SideEffect::Kind::DelItem))
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

bool isPlainObject(PyObject *o) {
  PyTypeObject *t = o ? Py_TYPE(o) : nullptr;
  if (!t || !PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE) || t->tp_dictoffset == 0 ||
      Py_TYPE(reinterpret_cast<PyObject *>(t)) != &PyType_Type || PyType_Check(o) ||
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
  if (states().empty() || !o || !isPlainObject(o))
    return;
  PlainState &s = states().back();
  if (s.pinned.insert(o).second && s.why.empty())
    s.why = why;
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

void finishPlainObjectGuards(Capture &out, const char *pinAll) {
  PlainState *state = nullptr;
  for (PlainState &s : states())
    if (s.out == &out)
      state = &s;
  if (!state)
    return;
  scanCapture(out);
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
    if (PyDict_CheckExact(p.obj.get()) && mutatedByEffects(out, valueGuard.source)) {
      // A dict the code updates (`d["n"] += 1`, a counter) changes on every
      // call: by identity, as each item read has its own guard.
      valueGuard.kind = Guard::Kind::Identity;
      valueGuard.expected = p.obj;
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
}

} // namespace kiln

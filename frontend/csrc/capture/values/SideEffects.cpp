//===- SideEffects.cpp - mutations of Python state, replayed after the graph -===//
// SPDX-License-Identifier: Apache-2.0
//
// Attribute stores, global stores, dict/list item stores and list.append/
// extend/insert on Python objects that existed before the frame do not end
// the capture: each is appended to an ordered log (Capture::effects, the
// stored value as a result tree whose tensors become extra graph results),
// and the runtime replays the log after the graph ran, before the frame
// returns or a graph break's eager part runs (Entry.cpp: replaySideEffects).
//
// Reads later in the same capture see the new value: a stored attribute or
// global is answered from an overlay (no guard: it derives from guarded
// values); a caller's list or dict with pending mutations is read through
// its Var (or, never read, stays a lazy list: LazyValues.cpp). The read of
// the old value (`self.calls` in `self.calls += 1`) is lazy: the replay
// stores "value at the call's start + 1", so a counter does not recompile
// unless the graph itself uses its value.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/values/Deques.h"
#include "capture/values/IdentitySets.h"
#include "GilOnce.h"
#include "capture/interp/PlainObjects.h"
#include "capture/values/IdTokens.h"

namespace kiln {

const std::set<PyObject *> *gMutatedContainers = nullptr;

void refuseMutatedAlias(const VarP &v) {
  if (v->isConst() && gMutatedContainers && gMutatedContainers->count(v->obj.get()))
    throw Unsupported(BreakCategory::SideEffect,
                      "a list/dict is read after the compiled code mutated it (the mutation "
                      "is replayed after the graph)");
}

Interpreter::~Interpreter() {
  plainObjectsEnd(out_);
  builtModulesEnd(*this);
  if (gMutatedContainers == &mutated_)
    gMutatedContainers = nullptr;
}

namespace {

/// A stored value the replay can rebuild per call: constants (not a mutable
/// container made at capture, which calls would share), graph tensors and
/// tuples of those.
void checkStoredValue(const VarP &v, const std::string &what) {
  switch (v->kind) {
  case Var::Kind::Const: {
    PyObject *o = v->obj.get();
    if (holdsIdToken(o)) // IdTokens.h
      throw Unsupported(BreakCategory::SideEffect,
                        what + ": storing id() of a value made per call");
    if (v->source < 0 && (PyList_CheckExact(o) || PyDict_CheckExact(o) || PySet_CheckExact(o) ||
                          PyByteArray_CheckExact(o)))
      throw Unsupported(BreakCategory::SideEffect,
                        what + ": storing a mutable container made at capture is not supported");
    return;
  }
  case Var::Kind::Lazy:   // an expression or the caller's object, rebuilt per call
  case Var::Kind::Scalar: // stored as the Python number (OutputSlot::Scalar)
    return;
  case Var::Kind::SymInt: // stored as the Python int (OutputSlot::SymSize)
    if (v->sym)
      return;
    throw Unsupported(BreakCategory::DynamicShape,
                      what + ": storing a symbolic size kiln does not track");
  case Var::Kind::Tensor:
    if (v->vmapLevels > 0)
      throw Unsupported(BreakCategory::UnsupportedOp,
                        what + ": torch.vmap: a batched value escapes its vmap");
    return;
  case Var::Kind::Tuple:
  case Var::Kind::Object:               // rebuilt with its final attributes (UserObjects.cpp)
    if (isIdentitySet(v) || isDeque(v)) // IdentitySets.h, Deques.h
      throw Unsupported(BreakCategory::SideEffect,
                        what + ": a set of tensors or a deque built in the frame");
    for (const VarP &c : v->items)
      checkStoredValue(c, what);
    return;
  default:
    if (v->source >= 0 && (v->kind == Var::Kind::List || v->kind == Var::Kind::Dict))
      return; // the caller's own container: stored as the object itself
    throw Unsupported(BreakCategory::SideEffect,
                      what + ": storing a list/dict/function built in the frame into Python "
                             "state is not supported yet",
                      "mutate Python state outside the compiled function, or return the new value");
  }
}

} // namespace

void Interpreter::recordEffect(SideEffect e, const VarP &value) {
  checkStoredValue(value, e.what);
  if (e.target < 0)
    throw Unsupported(BreakCategory::SideEffect,
                      e.what + ": the mutated object has no source to replay it on");
  e.rootOffset = rootOffset_;
  gMutatedContainers = &mutated_;
  out_.effects.push_back(std::move(e));
  effectValues_.push_back(value);
}

VarP Interpreter::overlayAttr(const VarP &obj, const std::string &name) {
  if (obj->isConst() && name == "__dict__") {
    // The instance dict is read as the caller's object at capture, where
    // this frame's attribute stores are not applied yet (they replay after
    // the graph): a store before or after the read (an empty marker
    // entry) is a break.
    PyObject *o = obj->obj.get();
    auto stored = overlay_.lower_bound({o, std::string()});
    if (stored != overlay_.end() && stored->first.first == o && stored->first.second != name)
      throw Unsupported(BreakCategory::SideEffect,
                        "reading __dict__ of an object this frame stores attributes into "
                        "(the stores apply after the graph)");
    keepAlive_.push_back(obj->obj);
    overlay_[{o, name}] = nullptr;
    return nullptr;
  }
  if (!obj->isConst() || overlay_.empty())
    return nullptr;
  auto it = overlay_.find({obj->obj.get(), name});
  return it == overlay_.end() ? nullptr : it->second;
}

void Interpreter::storeAttr(const VarP &obj, PyObject *name, const VarP &value) {
  std::string attr = pyText(name);
  std::string what = "STORE_ATTR " + attr;
  if (obj->kind == Var::Kind::Object)
    return storeObjectAttr(obj, name, value); // UserObjects.cpp
  if (obj->isTensor())
    throw Unsupported(BreakCategory::SideEffect,
                      "mutation (STORE_ATTR) of a tensor's attribute '" + attr +
                          "' (e.g. a Parameter's .data) is not supported");
  if (!obj->isConst())
    throw Unsupported(BreakCategory::SideEffect,
                      "mutation (STORE_ATTR) of an attribute of a value built in the frame");
  PyObject *o = obj->obj.get();
  if (isBuiltModule(*this, o)) // one object for every call (BuiltModules.cpp)
    throw Unsupported(BreakCategory::SideEffect,
                      what + ": the module was constructed in the compiled code");
  if (overlay_.count({o, "__dict__"})) // overlayAttr
    throw Unsupported(BreakCategory::SideEffect,
                      what + ": the frame read this object's __dict__ (the store applies after "
                             "the graph)");
  noteAttributeStore(o); // PlainObjects.h: by type, with an aliasing guard
  if (value->isTensor() && value->inputIndex >= 0) {
    // `self.buf += x` stores the tensor it updated in place back into the
    // same attribute: the object is already there (nothing to replay).
    PyRef current = PyRef::steal(PyObject_GetAttr(o, name));
    PyErr_Clear();
    if (current && current.get() == inputObjects_[value->inputIndex].get())
      return;
  }
  PyTypeObject *type = Py_TYPE(o);
  bool module = isModule(o);
  // A plain class's attribute (class state a constructor updates) is set
  // with type's own __setattr__.
  bool plainClass = PyType_Check(o) && PyType_HasFeature((PyTypeObject *)o, Py_TPFLAGS_HEAPTYPE) &&
                    type->tp_setattro == PyType_Type.tp_setattro;
  if (!module && !plainClass && !PyModule_Check(o) && type->tp_setattro != PyObject_GenericSetAttr)
    throw Unsupported(BreakCategory::SideEffect, what + ": the object's type defines __setattr__");
  if (PyObject *descr = _PyType_Lookup(type, name); descr && Py_TYPE(descr)->tp_descr_set)
    throw Unsupported(BreakCategory::SideEffect,
                      what + ": the attribute is a property or slot of its class");
  if (module) {
    PyObject **dictPtr = _PyObject_GetDictPtr(o);
    PyObject *dict = dictPtr ? *dictPtr : nullptr;
    for (const char *sub : {"_parameters", "_buffers", "_modules"}) {
      PyObject *subDict = dict ? PyDict_GetItemString(dict, sub) : nullptr;
      if (subDict && PyDict_Check(subDict) && PyDict_Contains(subDict, name) == 1)
        throw Unsupported(BreakCategory::SideEffect,
                          "mutation (STORE_ATTR) of " +
                              std::string(sub).substr(1, std::strlen(sub) - 2) + " '" + attr +
                              "' of a module (assigning a parameter, buffer or "
                              "submodule) is not supported");
      PyErr_Clear();
    }
    if (value->isConst() && (isModule(value->obj.get()) || isTensor(value->obj.get())))
      throw Unsupported(BreakCategory::SideEffect,
                        what + ": assigning a module or tensor constant to a module");
  }
  SideEffect e{SideEffect::Kind::SetAttr, sourceOf(obj), PyRef::borrow(name)};
  if (e.target < 0)
    e.target = out_.sources.add(Source::Kind::Constant, -1, 0, o);
  e.what = what;
  recordEffect(std::move(e), value);
  keepAlive_.push_back(obj->obj);
  overlay_[{o, attr}] = value;
}

void Interpreter::storeGlobal(Frame &f, PyObject *name, const VarP &value) {
  int target = f.globalsSource >= 0
                   ? f.globalsSource
                   : out_.sources.add(Source::Kind::Constant, -1, 0, f.globals.get());
  SideEffect e{SideEffect::Kind::SetItem, target, PyRef::borrow(name)};
  e.what = "STORE_GLOBAL " + pyText(name);
  recordEffect(std::move(e), value);
  overlay_[{f.globals.get(), pyText(name)}] = value;
}

VarP Interpreter::overlayGlobal(Frame &f, PyObject *name) {
  if (overlay_.empty())
    return nullptr;
  auto it = overlay_.find({f.globals.get(), pyText(name)});
  return it == overlay_.end() ? nullptr : it->second;
}

const VarP &Interpreter::containerVar(const VarP &c) {
  if (!c->isConst())
    return c;
  PyObject *o = c->obj.get();
  if (!PyList_CheckExact(o) && !PyDict_CheckExact(o))
    throw Unsupported(BreakCategory::SideEffect,
                      "mutation of a " + pyText(reinterpret_cast<PyObject *>(Py_TYPE(o))) +
                          " is not supported");
  if (c->source < 0)
    throw Unsupported(BreakCategory::SideEffect,
                      "mutation of a list/dict made at capture is not supported");
  refuseMutatedAlias(c); // mutated already through another name
  int src = c->source;
  PyRef keep = c->obj;
  // Items are read lazily: only those the frame uses are value-guarded.
  struct LazyScope {
    bool &flag, saved;
    ~LazyScope() { flag = saved; }
  } scope{lazyReads_, lazyReads_};
  lazyReads_ = true;
  auto v = std::make_shared<Var>();
  v->source = src;
  if (PyList_CheckExact(o)) {
    v->kind = Var::Kind::List;
    Py_ssize_t n = PyList_GET_SIZE(o);
    guardLength(src, n);
    for (Py_ssize_t i = 0; i < n; ++i)
      v->items.push_back(fromSource(
          PyList_GET_ITEM(o, i), out_.sources.add(Source::Kind::TupleItem, src, (int)i, nullptr)));
  } else {
    v->kind = Var::Kind::Dict;
    guardLength(src, PyDict_Size(o));
    PyObject *k, *item;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &k, &item)) {
      // Keys must hash and compare without running Python code (str, int,
      // tuples of them ...): they become guard sources (DictItem) and
      // replayed stores.
      if (!pureConstant(k))
        throw Unsupported(BreakCategory::SideEffect,
                          "mutation of a dict with keys that run Python code to hash or compare");
      v->keys.push_back(PyRef::borrow(k));
      v->items.push_back(fromSource(item, out_.sources.add(Source::Kind::DictItem, src, 0, k)));
    }
  }
  keepAlive_.push_back(keep);
  *c = *v; // every holder of this Var (locals, the stack) sees the container
  mutated_.insert(keep.get());
  noteContainerMutation(src, keep.get()); // PlainObjects.h: an aliasing guard
  gMutatedContainers = &mutated_;
  trackContainer(c);
  return c;
}

void Interpreter::trackContainer(const VarP &c) {
  c->mutatedContainer = true;
  sourceOverlay_[c->source] = c;
}

void Interpreter::storeItem(const VarP &container, const VarP &key, const VarP &value) {
  if (storeFresh(container, key, &value)) // made at capture (ContainerMethods.cpp)
    return;
  const VarP &c = containerVar(container);
  PyObject *k = constObj(key, "subscript");
  if (c->kind == Var::Kind::List && PySlice_Check(k))
    return storeListSlice(c, k, value); // ContainerMethods.cpp
  if (c->kind == Var::Kind::List) {
    if (!PyLong_CheckExact(k))
      throw Unsupported(BreakCategory::UserError, "list item assignment with a non-int index");
    long n = (long)c->items.size(), i = PyLong_AsLong(k);
    if (i < 0)
      i += n;
    if (i < 0 || i >= n)
      throw Unsupported(BreakCategory::UserError, "list assignment index out of range");
    if (c->source >= 0) {
      recordEffect({SideEffect::Kind::SetItem, c->source, PyRef::borrow(k), -1, "STORE_SUBSCR"},
                   value);
      trackContainer(c);
    }
    c->items[i] = value;
    return;
  }
  if (c->kind != Var::Kind::Dict || c->obj) // not a ModelOutput record
    throw Unsupported(BreakCategory::SideEffect, "item assignment on this value is not supported");
  if (c->source >= 0) {
    if (holdsIdToken(k)) // IdTokens.h
      throw Unsupported(BreakCategory::SideEffect,
                        "storing under id() of a value made per call in a dict of the caller");
    if (PyObject_Hash(k) == -1)
      throw Unsupported(BreakCategory::UserError, withPythonError("unhashable dict key"));
    recordEffect({SideEffect::Kind::SetItem, c->source, PyRef::borrow(k), -1, "STORE_SUBSCR"},
                 value);
    trackContainer(c);
  }
  dictSet(c, k, value);
}

VarP Interpreter::listMutation(const VarP &list, const std::string &name, std::vector<VarP> &args,
                               std::map<std::string, VarP> &kwargs) {
  if (list->isLazyList())
    return lazyListMutation(list, name, args, kwargs); // LazyValues.cpp
  if (list->kind != Var::Kind::List)
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "list." + name + " on a value that is not a list");
  if (name == "pop")
    return listPop(list, args, kwargs);
  if (!kwargs.empty() || args.size() != (name == "insert" ? 2u : 1u))
    throw Unsupported(BreakCategory::UserError, "list." + name + " with unexpected arguments");
  auto &dst = list->items;
  SideEffect e{SideEffect::Kind::ListAppend, list->source, {}, -1, "list." + name};
  VarP logged = args.back();
  if (name == "append") {
    dst.push_back(args[0]);
  } else if (name == "extend") {
    e.kind = SideEffect::Kind::ListExtend;
    size_t start = dst.size();
    if (args[0]->kind == Var::Kind::Iter) { // appended as made: it may read the list
      VarP it = getIter(args[0]);
      while (VarP item = iterNext(it))
        if (dst.push_back(item), dst.size() - start > 100000)
          throw Unsupported(BreakCategory::PythonBuiltin, "list.extend of an unbounded iterator");
    } else { // a list or tuple (the list itself too) is copied first, as in CPython
      std::vector<VarP> more = iterItems(args[0]);
      dst.insert(dst.end(), more.begin(), more.end());
    }
    if (dst.size() < start)
      throw Unsupported(BreakCategory::SideEffect,
                        "list.extend of an iterator that shrank the list");
    logged = makeSeq(Var::Kind::Tuple, std::vector<VarP>(dst.begin() + (long)start, dst.end()));
  } else {
    PyObject *at = constObj(args[0], "list.insert index");
    if (!PyLong_CheckExact(at))
      throw Unsupported(BreakCategory::UserError, "list.insert with a non-int index");
    e.kind = SideEffect::Kind::ListInsert;
    e.key = PyRef::borrow(at);
    // list.insert clamps the index into [0, len].
    long n = (long)dst.size(), i = PyLong_AsLong(at);
    i = i < 0 ? std::max(0L, i + n) : std::min(i, n);
    dst.insert(dst.begin() + i, args[1]);
  }
  if (list->source >= 0) { // the caller's list: replayed after the graph
    recordEffect(std::move(e), logged);
    trackContainer(list);
  }
  return makeConst(PyRef::borrow(Py_None));
}

VarP Interpreter::listPop(const VarP &list, std::vector<VarP> &args,
                          std::map<std::string, VarP> &kwargs) {
  if (!kwargs.empty() || args.size() > 1)
    throw Unsupported(BreakCategory::UserError, "list.pop with unexpected arguments");
  PyObject *at = args.empty() ? nullptr : constObj(args[0], "list.pop index");
  if (at && !PyLong_CheckExact(at))
    throw Unsupported(BreakCategory::UserError, "list.pop with a non-int index");
  auto &items = list->items;
  long n = (long)items.size(), i = at ? PyLong_AsLong(at) : -1;
  if (i < 0)
    i += n;
  if (i < 0 || i >= n)
    throw Unsupported(BreakCategory::UserError,
                      n ? "list.pop index out of range" : "list.pop from an empty list");
  VarP item = items[i];
  items.erase(items.begin() + i);
  if (list->source >= 0) { // the caller's list (its length is guarded)
    recordEffect(
        {SideEffect::Kind::ListPop, list->source, PyRef::steal(PyLong_FromLong(i)), -1, "list.pop"},
        makeConst(PyRef::borrow(Py_None)));
    trackContainer(list);
  }
  return item;
}

VarP Interpreter::callListMutation(PyObject *fn, std::vector<VarP> &args,
                                   std::map<std::string, VarP> &kwargs) {
  static PyOnce appendOnce;
  PyObject *append = appendOnce.get(
      [] { return PyObject_GetAttrString(reinterpret_cast<PyObject *>(&PyList_Type), "append"); });
  static PyOnce extendOnce;
  PyObject *extend = extendOnce.get(
      [] { return PyObject_GetAttrString(reinterpret_cast<PyObject *>(&PyList_Type), "extend"); });
  static PyOnce insertOnce;
  PyObject *insert = insertOnce.get(
      [] { return PyObject_GetAttrString(reinterpret_cast<PyObject *>(&PyList_Type), "insert"); });
  static PyOnce popOnce;
  PyObject *pop = popOnce.get(
      [] { return PyObject_GetAttrString(reinterpret_cast<PyObject *>(&PyList_Type), "pop"); });
  if (fn != append && fn != extend && fn != insert && fn != pop)
    return nullptr;
  if (args.empty() || !args[0]->isConst() || !PyList_CheckExact(args[0]->obj.get()))
    return nullptr;
  VarP list = containerVar(args[0]);
  std::vector<VarP> rest(args.begin() + 1, args.end());
  return listMutation(list,
                      fn == append   ? "append"
                      : fn == extend ? "extend"
                      : fn == insert ? "insert"
                                     : "pop",
                      rest, kwargs);
}

} // namespace kiln

//===- BreakState.cpp - the interpreter state at a graph break ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// When a capture stops before a graph break (Capture::stopOffset), the root
// frame's stack and live locals become the graph's Python result, and the
// frame hook passes them to the code that runs the break eagerly and then
// resumes (kiln/_resume.py). Only state that can be rebuilt exactly is
// accepted: anything whose identity or aliasing the rebuilt objects would
// lose (views of intermediates, a list referenced twice, the caller's list
// inside a new container) makes the break fall back to running the whole
// frame eagerly, with the reason.
//===----------------------------------------------------------------------===//
#include "capture/values/Deques.h"
#include "capture/values/IdentitySets.h"
#include "capture/interp/Interp.h"
#include "capture/interp/OpcodeHandlers.h"
#include "GilOnce.h"
#include "capture/values/IdTokens.h"

#include <set>

namespace kiln {
namespace {

const char *kindName(Var::Kind k) {
  switch (k) {
  case Var::Kind::Null:
    return "NULL";
  case Var::Kind::Iter:
    return "an iterator (a break inside a loop)";
  case Var::Kind::BoundMethod:
  case Var::Kind::TensorMethod:
  case Var::Kind::ListMethod:
    return "a bound method";
  case Var::Kind::Cell:
    return "a cell";
  case Var::Kind::Function:
    return "a function made by the compiled code";
  default:
    return "a value";
  }
}

bool isFreshMutable(PyObject *o) {
  return PyList_CheckExact(o) || PyDict_CheckExact(o) || PySet_CheckExact(o) ||
         PyByteArray_CheckExact(o);
}

/// Checks that `v` (an item of the state, `top` when not nested) can be
/// rebuilt per call; records per-call reads and copies in `st`.
void checkItem(const VarP &v, int item, bool top, BreakState &st,
               std::set<const Var *> &containers) {
  auto fail = [](const std::string &why) {
    throw Unsupported("cannot resume after the break: " + why);
  };
  switch (v->kind) {
  case Var::Kind::Tensor: {
    if (llvm::isa<mlir::BlockArgument>(v->value) || v->viewInput >= 0 || v->inputIndex >= 0)
      return;
    // A copy is rebuilt as its own clone, its views from the graph's value:
    // they would not alias it after the break as they do in eager.
    const Var *root = v.get();
    while (root->viewBase)
      root = root->viewBase.get();
    if (root != v.get() && root->copied)
      fail("a view of a copy (clone(), a contiguous() or reshape that copies) is live");
    // Views of a computed tensor are rebuilt from it after the break
    // (OutputSlot::GraphView), unless a view op could not be replayed.
    bool replayedView = st.viewsReplay && v->viewRoot && !v->viewSteps.empty();
    bool replayedBase = st.viewsReplay && v->fresh && !v->opaqueViews;
    if ((v->viewed && !replayedBase) || (!v->fresh && !replayedView))
      fail("a live tensor is a view of (or viewed by) another one");
    return;
  }
  case Var::Kind::Scalar: // passed on as the Python number (OutputSlot::Scalar)
    return;
  case Var::Kind::SymInt: // passed on as the Python int (OutputSlot::SymSize)
    if (!v->sym)
      fail("a symbolic size kiln does not track is live");
    return;
  case Var::Kind::Ndarray: // passed on as its tensor's .numpy() (OutputSlot::Numpy)
    checkItem(v->self, item, false, st, containers);
    return;
  case Var::Kind::Const:
    if (holdsIdToken(v->obj.get())) // IdTokens.h
      fail("id() of a value made per call is live");
    if (v->source >= 0) {
      if (top)
        st.sourced.push_back({item, v->source});
      else if (PyList_CheckExact(v->obj.get()))
        fail("a list passed in is held by a container built in the frame");
      return;
    }
    if (isTensor(v->obj.get())) // re-read per call it could differ: never passed stale
      fail("a tensor evaluated at capture time without a source to re-read it is live");
    if (isFreshMutable(v->obj.get())) {
      if (!top)
        fail("a list/dict/set made at capture is nested in another container");
      st.copied.push_back(item);
    }
    return;
  case Var::Kind::Tuple:
  case Var::Kind::List:
  case Var::Kind::Dict:
  case Var::Kind::Object:               // rebuilt with its attributes (UserObjects.cpp)
    if (isIdentitySet(v) || isDeque(v)) // IdentitySets.h, Deques.h
      fail("a set of tensors or a deque built in the frame is live");
    if (v->kind == Var::Kind::Dict && v->obj)
      fail("a ModelOutput built in the frame is live at the break");
    for (const PyRef &k : v->keys) // a dict keyed by id() tokens (IdTokens.h)
      if (holdsIdToken(k.get()))
        fail("a dict keyed by id() of values made per call is live");
    if (v->source >= 0) {
      if (top) {
        st.sourced.push_back({item, v->source});
        return;
      }
      if (v->kind != Var::Kind::Tuple)
        fail("a list passed in is held by a container built in the frame");
    }
    if (v->kind != Var::Kind::Tuple && !containers.insert(v.get()).second)
      fail("a list/dict/object built in the frame is referenced twice");
    for (const VarP &c : v->items)
      checkItem(c, item, false, st, containers);
    return;
  default:
    fail(std::string("the live state holds ") + kindName(v->kind));
  }
}

} // namespace

VarP Interpreter::breakState(Frame &f) {
  BreakState &st = out_.state;
  st.reached = true;
  {
    // Zero-argument super() reads the frame's first local and its
    // __class__ cell; neither the eager stub nor a resume function has them
    // where super() looks.
    PyRef freevars = PyRef::steal(PyObject_GetAttrString(f.code->code.get(), "co_freevars"));
    PyRef name = PyRef::steal(PyUnicode_FromString("__class__"));
    if (freevars && name && PySequence_Contains(freevars.get(), name.get()) == 1)
      throw Unsupported("cannot resume after the break: the function uses zero-argument super()");
    PyErr_Clear();
  }
  // A bound method live as one item: a constant, or read per call from its
  // object's source.
  auto reboundMethod = [&](const VarP &m) {
    const VarP &self = m->self;
    if (!self->isConst() || m->name.empty())
      throw Unsupported("cannot resume after the break: a method of a value built in the frame "
                        "is the callee of a pending call");
    PyRef bound = PyRef::steal(PyMethod_New(m->obj.get(), self->obj.get()));
    if (!bound)
      throw Unsupported(withPythonError("cannot resume after the break: method " + m->name));
    keepAlive_.push_back(bound);
    VarP item = makeConst(bound);
    if (self->source >= 0) { // read per call as `self.name`, like the frame would
      PyRef name = PyRef::steal(PyUnicode_FromString(m->name.c_str()));
      item->source = out_.sources.add(Source::Kind::Attr, self->source, 0, name.get());
    }
    return item;
  };
  std::vector<VarP> items;
  static PyOnce tensorTypeOnce;
  PyObject *tensorType =
      tensorTypeOnce.get([] { return PyObject_GetAttrString(torchModule(), "Tensor"); });
  for (size_t k = 0; k < f.stack.size(); ++k) {
    const VarP &v = f.stack[k];
    if (v->kind != Var::Kind::Null) {
      items.push_back(v);
      st.layout += 'i';
      continue;
    }
    const VarP *next = k + 1 < f.stack.size() ? &f.stack[k + 1] : nullptr;
    if (next && (*next)->kind == Var::Kind::BoundMethod && !isMethodFormNull(v)) {
      // [NULL, obj.method] from PUSH_NULL / LOAD_GLOBAL and LOAD_ATTR (the
      // callee of `obj.method(*args)`): CALL_FUNCTION_EX takes the bound
      // method itself, so it stays one item, read again per call.
      items.push_back(reboundMethod(*next));
      st.layout += "ni";
      ++k;
      continue;
    }
    if (next &&
        ((*next)->kind == Var::Kind::TensorMethod || (*next)->kind == Var::Kind::BoundMethod)) {
      // [NULL, method of self] is CPython's [function, self] method form.
      const VarP &m = *next;
      PyRef fn = m->kind == Var::Kind::TensorMethod
                     ? PyRef::steal(PyObject_GetAttrString(tensorType, m->name.c_str()))
                     : m->obj;
      if (!fn)
        throw Unsupported(
            BreakCategory::Other,
            withPythonError("cannot resume after the break: tensor method " + m->name));
      items.push_back(makeConst(fn));
      items.push_back(m->self);
      st.layout += "ii";
      ++k;
      continue;
    }
    st.layout += 'n';
  }
  auto *code = reinterpret_cast<PyCodeObject *>(f.code->code.get());
  std::vector<std::string> names = localNames(code);
  PyRef cellvars = PyRef::steal(PyObject_GetAttrString(f.code->code.get(), "co_cellvars"));
  std::set<std::string> cellNames;
  for (Py_ssize_t i = 0; cellvars && i < PyTuple_GET_SIZE(cellvars.get()); ++i)
    cellNames.insert(PyUnicode_AsUTF8(PyTuple_GET_ITEM(cellvars.get(), i)));
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].rfind("___kiln_", 0) == 0 || cellNames.count(names[i]))
      continue;
    if (!f.loaded[i]) {
      // Not read so far: passed on straight from the frame, unguarded.
      if ((int)i < frame_.numLocals && frame_.locals[i]) {
        st.sourced.push_back(
            {(int)items.size(), out_.sources.add(Source::Kind::Local, -1, (int)i, nullptr)});
        items.push_back(makeConst(PyRef::borrow(Py_None)));
        st.locals.push_back(names[i]);
      }
      continue;
    }
    if (f.locals[i]) {
      items.push_back(f.locals[i]);
      st.locals.push_back(names[i]);
    }
  }
  for (Py_ssize_t i = 0; cellvars && i < PyTuple_GET_SIZE(cellvars.get()); ++i) {
    std::string name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(cellvars.get(), i));
    auto it = f.cells.find(name);
    if (it == f.cells.end() || it->second->items.empty())
      continue;
    items.push_back(it->second->items[0]);
    st.cells.push_back(name);
  }
  std::set<const Var *> containers;
  st.viewsReplay = !recomputesForAutograd(out_);
  size_t firstLocal = items.size() - st.locals.size() - st.cells.size();
  for (size_t i = 0; i < items.size(); ++i) {
    bool alreadySourced =
        i >= firstLocal && std::any_of(st.sourced.begin(), st.sourced.end(),
                                       [&](auto &p) { return p.first == (int)i; });
    if (!alreadySourced)
      checkItem(items[i], (int)i, true, st, containers);
  }
  return makeSeq(Var::Kind::Tuple, items);
}

} // namespace kiln

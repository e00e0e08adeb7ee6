//===- LoadStore.cpp - handlers that move values -----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Opcode handlers (OpcodeHandlers.h) for the stack, locals, globals,
// constants, attributes, closure cells and imports. Reads from the frame go
// through the Interpreter's sources (guarded or lazy, Interpreter.cpp);
// stores to Python state are side effects (SideEffects.cpp).
//===----------------------------------------------------------------------===//
#include "capture/interp/OpcodeHandlers.h"
#include "GilOnce.h"

#include <algorithm>

namespace kiln {

void OpcodeHandlers::nop(Interpreter &, Frame &, const Instr &, StepControl &) {}

void OpcodeHandlers::popTop(Interpreter &, Frame &f, const Instr &, StepControl &) { popValue(f); }

void OpcodeHandlers::copy(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  f.stack.push_back(f.stack[f.stack.size() - in.arg]);
}

void OpcodeHandlers::swap(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  std::swap(f.stack.back(), f.stack[f.stack.size() - in.arg]);
}

void OpcodeHandlers::pushNull(Interpreter &, Frame &f, const Instr &, StepControl &) {
  f.stack.push_back(nullVar());
}

void OpcodeHandlers::loadConst(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  f.stack.push_back(makeConst(in.argval));
}

void OpcodeHandlers::loadFast(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  f.stack.push_back(interp.loadLocal(f, in.arg));
}

void OpcodeHandlers::storeFast(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  f.locals[in.arg] = popValue(f);
  if (f.isRoot)
    f.loaded[in.arg] = true;
}

void OpcodeHandlers::deleteFast(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  f.locals[in.arg] = nullptr;
}

void OpcodeHandlers::loadGlobal(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  if (in.arg & 1)
    f.stack.push_back(nullVar());
  f.stack.push_back(interp.loadGlobal(f, in.argval.get()));
}

void OpcodeHandlers::storeGlobal(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  interp.storeGlobal(f, in.argval.get(), popValue(f));
}

void OpcodeHandlers::loadAttr(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  VarP obj = popValue(f);
  bool methodForm = in.opcode == Opcode::LOAD_METHOD || (in.arg & 1 && PY_MINOR_VERSION >= 12);
  VarP attr = methodForm && obj->isTensor() ? interp.tensorMethodOrAttr(obj, in.argval.get())
                                            : interp.loadAttr(obj, in.argval.get());
  PyObject *a = attr->isConst() ? attr->obj.get() : nullptr;
  if (methodForm && a && obj->isConst() && PyCFunction_Check(a) &&
      PyCFunction_GET_SELF(a) == obj->obj.get() &&
      Py_TYPE(obj->obj.get())->tp_getattro == PyObject_GenericGetAttr) {
    // A builtin method of an object (`lst.append`): kept as CPython's
    // [function, self] so that a graph break calls it on the object the
    // frame holds at run time, not on the one seen at capture. Only where
    // CPython's LOAD_METHOD does the same (generic attribute lookup, a
    // method descriptor on the type): `object.__new__` is a builtin bound
    // to `object` found in object's own dict, and type(object).__new__
    // is another function (type.__new__).
    PyRef fn = PyRef::steal(
        PyObject_GetAttr(reinterpret_cast<PyObject *>(Py_TYPE(obj->obj.get())), in.argval.get()));
    PyErr_Clear();
    if (fn && PyType_HasFeature(Py_TYPE(fn.get()), Py_TPFLAGS_METHOD_DESCRIPTOR)) {
      f.stack.push_back(makeConst(fn));
      f.stack.push_back(obj);
      return;
    }
  }
  if (methodForm)
    f.stack.push_back(methodFormNullVar());
  f.stack.push_back(attr);
}

VarP Interpreter::tensorMethodOrAttr(const VarP &obj, PyObject *name) {
  try {
    return loadAttr(obj, name);
  } catch (const Unsupported &) {
    // A Tensor method kiln does not capture (`x.item()`): the graph breaks
    // at its call, so that the eager part is just the call.
    static PyOnce tensorTypeOnce;
    PyObject *tensorType =
        tensorTypeOnce.get([] { return PyObject_GetAttrString(torchModule(), "Tensor"); });
    PyRef m = PyRef::steal(PyObject_GetAttr(tensorType, name));
    PyErr_Clear();
    if (!m || !(Py_TYPE(m.get()) == &PyMethodDescr_Type || PyFunction_Check(m.get()) ||
                Py_TYPE(m.get()) == &PyWrapperDescr_Type))
      throw;
    auto v = std::make_shared<Var>();
    v->kind = Var::Kind::TensorMethod;
    v->self = obj;
    v->name = pyText(name);
    return v;
  }
}

void OpcodeHandlers::storeAttr(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  VarP obj = popValue(f), value = popValue(f);
  interp.storeAttr(obj, in.argval.get(), value);
}

void OpcodeHandlers::deleteMutation(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  bool container = in.opcode == Opcode::DELETE_SUBSCR && f.stack.size() >= 2 &&
                   !f.stack[f.stack.size() - 2]->isTensor();
  if (!container)
    throw Unsupported(BreakCategory::SideEffect,
                      "mutation (" + in.opname + ") of Python state is not supported yet");
  VarP key = popValue(f), c = popValue(f);
  interp.deleteItem(c, key); // ContainerMethods.cpp
}

void OpcodeHandlers::makeCell(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  std::string name = pyText(in.argval.get());
  auto cell = std::make_shared<Var>();
  cell->kind = Var::Kind::Cell;
  // An argument that is also a cell starts with the argument's value.
  std::vector<std::string> names = localNames(reinterpret_cast<PyCodeObject *>(f.code->code.get()));
  auto it = std::find(names.begin(), names.end(), name);
  if (it != names.end()) {
    int idx = static_cast<int>(it - names.begin());
    bool bound = f.isRoot
                     ? (f.loaded[idx] ? f.locals[idx] != nullptr
                                      : idx < interp.frame_.numLocals && interp.frame_.locals[idx])
                     : f.locals[idx] != nullptr;
    if (bound)
      cell->items.push_back(interp.loadLocal(f, idx));
  }
  f.cells[name] = cell;
}

namespace {

/// The cell or free variable `in` names in `f`.
const VarP &namedCell(Frame &f, const Instr &in) {
  std::string name = pyText(in.argval.get());
  auto it = f.cells.find(name);
  if (it == f.cells.end())
    throw Unsupported("closure variable '" + name + "' is not bound");
  return it->second;
}

} // namespace

void OpcodeHandlers::loadDeref(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  const VarP &cell = namedCell(f, in);
  f.stack.push_back(interp.cellContent(cell, pyText(in.argval.get())));
}

void OpcodeHandlers::loadClosure(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  f.stack.push_back(namedCell(f, in));
}

void OpcodeHandlers::storeDeref(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  std::string name = pyText(in.argval.get());
  auto it = f.cells.find(name);
  if (it == f.cells.end() || it->second->obj)
    throw Unsupported(BreakCategory::SideEffect, "assigning the enclosing function's variable '" +
                                                     name + "' (nonlocal) is not supported yet");
  it->second->items = {popValue(f)};
}

void OpcodeHandlers::deleteDeref(Interpreter &, Frame &, const Instr &, StepControl &) {
  throw Unsupported(BreakCategory::SideEffect, "del of a closure variable is not supported yet");
}

void OpcodeHandlers::importName(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  // An import inside a function: only of a module already imported (no
  // import side effects at capture); the module is a constant.
  VarP fromlist = popValue(f), level = popValue(f);
  PyObject *levelObj = constObj(level, "import level");
  int levelValue = PyLong_Check(levelObj) ? static_cast<int>(PyLong_AsLong(levelObj)) : -1;
  PyErr_Clear();
  PyRef mod = PyRef::steal(
      PyImport_ImportModuleLevelObject(in.argval.get(), f.globals.get(), nullptr,
                                       constObj(fromlist, "import fromlist"), levelValue));
  if (!mod)
    throw Unsupported(
        withPythonError("import of " + pyText(in.argval.get()) + " failed at capture time"));
  interp.keepAlive_.push_back(mod);
  f.stack.push_back(makeConst(mod));
}

void OpcodeHandlers::importFrom(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  PyObject *mod = constObj(f.stack.back(), "module");
  PyRef v = PyRef::steal(PyObject_GetAttr(mod, in.argval.get()));
  if (!v)
    throw Unsupported(withPythonError("cannot import name " + pyText(in.argval.get())));
  interp.keepAlive_.push_back(v);
  f.stack.push_back(makeConst(v));
}

} // namespace kiln

//===- Exceptions.cpp - try/except inside the captured frames -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Python 3.11 exception handling as CPython runs it, over the interpreter's
// abstract frames. Where the capture knows that eager raises a Python
// exception (a missing key of a dict built here, next() of an exhausted
// iterator, `raise` of an exception built at capture, a pure builtin
// raising on constants), it throws PyRaised (Frame.h) instead of a plain
// break. The instruction loop (InstructionLoop.cpp) gives it to
// catchRaised: when an entry of the frame's exception table covers the
// raising instruction, the value stack unwinds to the entry's depth, the
// exception is pushed as a constant and the frame continues at the handler,
// so `except T` (CHECK_EXC_MATCH against a constant class), `as e`, else,
// finally, with-blocks (WITH_EXCEPT_START) and re-raises run at capture and
// the graph holds only the path eager takes. An exception no handler of the
// interpreted frames catches is a user-error break: the frame runs eagerly
// and raises it. Exceptions raised by torch ops at run time, or raised on
// values kiln does not know at capture, stay breaks.
//===----------------------------------------------------------------------===//
#include "capture/interp/OpcodeHandlers.h"
#include "GilOnce.h"

namespace kiln {
namespace {

/// The entries of `code`'s exception table, read once (dis's parser gives
/// byte offsets; `end` is exclusive).
const std::vector<ExceptionHandler> &handlersOf(const CodeInfo &code) {
  if (code.handlersRead)
    return code.handlers;
  code.handlersRead = true;
  static PyOnce parseOnce;
  PyObject *parse = parseOnce.get([] {
    PyRef dis = PyRef::steal(PyImport_ImportModule("dis"));
    return dis ? PyObject_GetAttrString(dis.get(), "_parse_exception_table") : nullptr;
  });
  PyRef entries = parse ? PyRef::steal(PyObject_CallOneArg(parse, code.code.get())) : PyRef();
  PyRef list = entries ? PyRef::steal(PySequence_List(entries.get())) : PyRef();
  if (!list) {
    PyErr_Clear();
    throw Unsupported("cannot read the exception table of " + code.name);
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.get()); ++i) {
    PyObject *e = PyList_GET_ITEM(list.get(), i);
    long v[5];
    const char *names[5] = {"start", "end", "target", "depth", "lasti"};
    for (int k = 0; k < 5; ++k) {
      PyRef field = PyRef::steal(PyObject_GetAttrString(e, names[k]));
      v[k] = field ? PyLong_AsLong(field.get()) : -1;
      if (v[k] < 0 || PyErr_Occurred()) {
        PyErr_Clear();
        throw Unsupported("cannot read the exception table of " + code.name);
      }
    }
    code.handlers.push_back({(int)v[0], (int)v[1], (int)v[2], (int)v[3], v[4] != 0});
  }
  return code.handlers;
}

/// The exception instance a Const Var holds, or null.
PyObject *exceptionObject(const VarP &v) {
  return v && v->isConst() && PyExceptionInstance_Check(v->obj.get()) ? v->obj.get() : nullptr;
}

/// Whether pending error `exc` is one a user's handler may see as eager
/// raises it (not an interpreter or resource failure of the capture).
bool ordinaryException(PyObject *exc) {
  return PyObject_TypeCheck(exc, reinterpret_cast<PyTypeObject *>(PyExc_Exception)) &&
         !PyErr_GivenExceptionMatches(exc, PyExc_MemoryError) &&
         !PyErr_GivenExceptionMatches(exc, PyExc_RecursionError) &&
         !PyErr_GivenExceptionMatches(exc, PyExc_SystemError) &&
         !PyErr_GivenExceptionMatches(exc, PyExc_StopAsyncIteration);
}

} // namespace

void raisePending(const std::string &message) {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  if (!type)
    throw Unsupported(BreakCategory::UserError, message, hint::kRaisesInEager);
  PyErr_NormalizeException(&type, &value, &tb);
  PyRef t = PyRef::steal(type), v = PyRef::steal(value), trace = PyRef::steal(tb);
  if (!v || !ordinaryException(v.get())) {
    PyErr_Restore(t.release(), v.release(), trace.release());
    throw Unsupported(BreakCategory::UserError, withPythonError(message), hint::kRaisesInEager);
  }
  PyException_SetTraceback(v.get(), Py_None); // the capture's frames are no user's
  std::string text =
      message + ": " + reinterpret_cast<PyTypeObject *>(t.get())->tp_name + ": " + pyText(v.get());
  throw PyRaised(std::move(v), text);
}

void raiseNew(PyObject *type, PyObject *arg, const std::string &message) {
  PyRef exc = PyRef::steal(arg ? PyObject_CallOneArg(type, arg) : PyObject_CallNoArgs(type));
  if (!exc) {
    PyErr_Clear();
    throw Unsupported(BreakCategory::UserError, message, hint::kRaisesInEager);
  }
  throw PyRaised(std::move(exc), message);
}

bool Interpreter::catchRaised(Frame &f, size_t &pc, const PyRaised &e) {
  const Instr &in = f.code->instrs[pc];
  if (e.fresh) {
    // Raised here (not re-raised): chained to the exception being handled,
    // as CPython sets __context__ (never to itself).
    PyObject *handled = handledExc_.get();
    PyRef context = PyRef::steal(PyException_GetContext(e.exc.get()));
    if (handled && handled != Py_None && handled != e.exc.get() && !context)
      PyException_SetContext(e.exc.get(), Py_NewRef(handled));
    PyErr_Clear();
    e.fresh = false;
    madeExceptions_.insert(e.exc.get());
    keepAlive_.push_back(e.exc);
    raisedWhy_[e.exc.get()] = e.what();
  }
  const ExceptionHandler *h = nullptr;
  for (const ExceptionHandler &c : handlersOf(*f.code))
    if (c.start <= in.offset && in.offset < c.end) {
      h = &c;
      break;
    }
  if (!h)
    return false;
  auto target = f.code->indexOfOffset.find(h->target);
  if (target == f.code->indexOfOffset.end() || f.stack.size() < static_cast<size_t>(h->depth))
    throw Unsupported(BreakCategory::UserError,
                      std::string(e.what()) + " (the handler's stack is not the frame's)",
                      hint::kRaisesInEager);
  f.stack.resize(h->depth);
  if (h->lasti)
    f.stack.push_back(makeConst(PyRef::steal(PyLong_FromLong(in.offset / 2))));
  f.stack.push_back(makeConst(e.exc));
  pc = target->second;
  return true;
}

VarP Interpreter::constructException(PyObject *cls, std::vector<VarP> &args,
                                     std::map<std::string, VarP> &kwargs) {
  if (!PyExceptionClass_Check(cls) || !kwargs.empty() || Py_TYPE(cls) != &PyType_Type)
    return nullptr;
  // Python classes up to the first built-in base may only add attributes:
  // construction is then BaseException's own (stores the arguments).
  auto *t = reinterpret_cast<PyTypeObject *>(cls);
  PyObject *mro = t->tp_mro;
  int typeSrc = -1;
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); ++i) {
    auto *base = reinterpret_cast<PyTypeObject *>(PyTuple_GET_ITEM(mro, i));
    if (!PyType_HasFeature(base, Py_TPFLAGS_HEAPTYPE))
      break;
    for (const char *slot : {"__new__", "__init__", "__setattr__", "__getattribute__"})
      if (PyDict_GetItemString(base->tp_dict, slot))
        return nullptr;
    if (typeSrc < 0)
      typeSrc = out_.sources.add(Source::Kind::Constant, -1, 0, cls);
  }
  if (typeSrc >= 0) // a Python subclass: patching __init__/__new__ later recompiles
    for (const char *slot : {"__new__", "__init__"}) {
      PyRef key = PyRef::steal(PyUnicode_InternFromString(slot));
      PyObject *v = _PyType_Lookup(t, key.get());
      if (v)
        guardValue(makeConst(PyRef::borrow(v),
                             out_.sources.add(Source::Kind::TypeLookup, typeSrc, 0, key.get())));
    }
  for (const VarP &a : args)
    if (!a->isConst() || isTensor(a->obj.get()))
      return nullptr;
  PyRef tuple = constTuple(args, "exception argument");
  PyRef exc = PyRef::steal(PyObject_Call(cls, tuple.get(), nullptr));
  if (!exc)
    raisePending("constructing " + pyText(cls) + " raised");
  madeExceptions_.insert(exc.get());
  keepAlive_.push_back(exc);
  return makeConst(exc);
}

bool Interpreter::holdsMadeException(const VarP &v, int depth) const {
  if (!v || depth > 8)
    return false;
  if (v->isConst())
    return madeExceptions_.count(v->obj.get()) > 0;
  for (const VarP &item : v->items)
    if (holdsMadeException(item, depth + 1))
      return true;
  return holdsMadeException(v->self, depth + 1);
}

void OpcodeHandlers::raise(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  const char *what = "raise (or a failing assert) inside the compiled region";
  if (in.arg == 0) { // bare `raise`: the exception being handled, unchanged
    PyObject *handled = interp.handledExc_.get();
    if (!handled || handled == Py_None || !interp.madeExceptions_.count(handled))
      throw Unsupported(BreakCategory::UserError, what, hint::kRaisesInEager);
    PyRaised again(interp.handledExc_, interp.raisedWhy_[handled]);
    again.fresh = false;
    throw again;
  }
  VarP cause = in.arg == 2 ? popValue(f) : nullptr;
  VarP v = popValue(f);
  auto instance = [&](const VarP &x) -> PyRef {
    if (PyObject *e = exceptionObject(x))
      return interp.madeExceptions_.count(e) ? PyRef::borrow(e) : PyRef();
    std::vector<VarP> none;
    std::map<std::string, VarP> nokw;
    VarP made = x->isConst() ? interp.constructException(x->obj.get(), none, nokw) : nullptr;
    return made ? made->obj : PyRef();
  };
  PyRef exc = instance(v);
  if (!exc) // an exception kiln did not build (or not an exception: eager's TypeError)
    throw Unsupported(BreakCategory::UserError, what, hint::kRaisesInEager);
  if (cause) { // `raise E from C`: __cause__ = C (None suppresses the context)
    bool none = cause->isConst() && cause->obj.get() == Py_None;
    PyRef c = none ? PyRef::borrow(Py_None) : instance(cause);
    if (!c)
      throw Unsupported(BreakCategory::UserError, what, hint::kRaisesInEager);
    PyException_SetCause(exc.get(), none ? nullptr : Py_NewRef(c.get()));
    reinterpret_cast<PyBaseExceptionObject *>(exc.get())->suppress_context = 1;
  }
  throw PyRaised(exc,
                 std::string(what) + ": " + Py_TYPE(exc.get())->tp_name + ": " + pyText(exc.get()));
}

void OpcodeHandlers::loadAssertionError(Interpreter &, Frame &f, const Instr &, StepControl &) {
  f.stack.push_back(makeConst(PyRef::borrow(PyExc_AssertionError)));
}

void OpcodeHandlers::pushExcInfo(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  VarP exc = popValue(f);
  if (!exceptionObject(exc))
    throw Unsupported("PUSH_EXC_INFO without an exception kiln raised");
  // The exception handled before (None: none; Null: the caller's, unknown)
  // is kept on the stack for POP_EXCEPT.
  f.stack.push_back(interp.handledExc_ ? makeConst(interp.handledExc_) : nullVar());
  interp.handledExc_ = exc->obj;
  f.stack.push_back(exc);
}

void OpcodeHandlers::popExcept(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  VarP prev = popValue(f);
  interp.handledExc_ = prev->kind == Var::Kind::Null ? PyRef() : prev->obj;
}

void OpcodeHandlers::checkExcMatch(Interpreter &, Frame &f, const Instr &, StepControl &) {
  VarP type = popValue(f);
  if (f.stack.empty())
    throw Unsupported("stack underflow (unexpected bytecode)");
  PyObject *exc = exceptionObject(f.stack.back());
  PyRef types = type->isConst() ? type->obj : seqAsConst(type);
  if (!exc || !types)
    throw Unsupported("except clause on a value kiln does not know at capture");
  // Eager raises TypeError for a class that is no exception.
  bool valid = PyExceptionClass_Check(types.get());
  if (PyTuple_Check(types.get())) {
    valid = true;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types.get()); ++i)
      valid &= PyExceptionClass_Check(PyTuple_GET_ITEM(types.get(), i)) != 0;
  }
  if (!valid)
    throw Unsupported(BreakCategory::UserError,
                      "catching classes that do not inherit from BaseException",
                      hint::kRaisesInEager);
  bool match = PyErr_GivenExceptionMatches(exc, types.get());
  f.stack.push_back(makeConst(PyRef::borrow(match ? Py_True : Py_False)));
}

void OpcodeHandlers::reraise(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  VarP v = popValue(f);
  PyObject *exc = exceptionObject(v);
  if (!exc || !interp.madeExceptions_.count(exc))
    throw Unsupported("RERAISE of an exception kiln did not raise");
  PyRaised again(v->obj, interp.raisedWhy_[exc]);
  again.fresh = false;
  throw again;
}

void OpcodeHandlers::withExceptStart(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  // Stack: exit, lasti, previous exception, exception (top): pushes
  // exit(type, exception, traceback); the traceback is None (the capture's
  // exceptions have none).
  if (f.stack.size() < 4)
    throw Unsupported("stack underflow (unexpected bytecode)");
  VarP exc = f.stack.back();
  PyObject *e = exceptionObject(exc);
  if (!e)
    throw Unsupported("WITH_EXCEPT_START without an exception kiln raised");
  std::vector<VarP> args = {makeConst(PyRef::borrow(reinterpret_cast<PyObject *>(Py_TYPE(e)))), exc,
                            makeConst(PyRef::borrow(Py_None))};
  std::map<std::string, VarP> kwargs;
  f.stack.push_back(interp.call(f.stack[f.stack.size() - 4], args, kwargs));
}

} // namespace kiln

//===- LoggingCalls.cpp - logging calls replayed after the graph -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// A call to a function listed in kiln.config.reorderable_logging_functions
// (`print`, `warnings.warn`, `logging.Logger.info` ..., as Dynamo's knob of
// the same name) does not break the graph: it is recorded as a side effect
// (SideEffects.cpp) with its arguments as they are at the call (tensors as
// extra graph results) and run after the graph, in program order with the
// other replayed effects, by kiln._logging.replay. Output therefore comes
// after the graph's work, not interleaved with it. The knob is read at
// capture: graphs captured before a change keep their behaviour. Unlisted,
// such calls stay graph breaks.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "GilOnce.h"

namespace kiln {
namespace {

/// kiln.config.reorderable_logging_functions (new reference; null if unset).
PyRef listedFunctions() {
  PyRef config = PyRef::steal(PyImport_ImportModule("kiln.config"));
  PyRef cfg = PyRef::steal(config ? PyObject_GetAttrString(config.get(), "config") : nullptr);
  PyRef listed = PyRef::steal(
      cfg ? PyObject_GetAttrString(cfg.get(), "reorderable_logging_functions") : nullptr);
  PyErr_Clear();
  return listed;
}

bool listed(PyObject *fn) {
  PyRef fns = listedFunctions();
  if (!fns || PyObject_Length(fns.get()) <= 0) {
    PyErr_Clear();
    return false;
  }
  int found = PySequence_Contains(fns.get(), fn);
  PyErr_Clear();
  return found == 1;
}

PyObject *replayFunction() {
  static PyOnce once;
  return once.get([] {
    PyRef m = PyRef::steal(PyImport_ImportModule("kiln._logging"));
    PyObject *f = m ? PyObject_GetAttrString(m.get(), "replay") : nullptr;
    PyErr_Clear();
    return f; // process lifetime
  });
}

/// `v` as it is now: a later in-place op on the same Var (which rebinds its
/// value) must not change what the replayed call sees.
VarP snapshot(const VarP &v, const std::string &what) {
  switch (v->kind) {
  case Var::Kind::Const:
  case Var::Kind::Tensor:
  case Var::Kind::Scalar:
    return std::make_shared<Var>(*v);
  case Var::Kind::Tuple: {
    std::vector<VarP> items;
    for (const VarP &c : v->items)
      items.push_back(snapshot(c, what));
    return makeSeq(Var::Kind::Tuple, std::move(items));
  }
  default:
    throw Unsupported(BreakCategory::SideEffect,
                      what + ": only constants, tensors, numbers and tuples of them are "
                             "replayed as arguments",
                      "log constants and tensors, or move the call out of the compiled function");
  }
}

} // namespace

VarP Interpreter::callReorderableLogging(PyObject *fn, const VarP &self, std::vector<VarP> &args,
                                         std::map<std::string, VarP> &kwargs) {
  PyRef bound;
  if (self && self->isConst() && PyFunction_Check(fn))
    bound = PyRef::steal(PyMethod_New(fn, self->obj.get()));
  if (!listed(fn) && !(bound && listed(bound.get())))
    return nullptr;
  PyObject *replay = replayFunction();
  if (!replay)
    return nullptr;
  std::string what = "logging call " + pyText(fn);
  std::vector<VarP> positional, named;
  if (self)
    positional.push_back(snapshot(self, what));
  for (const VarP &a : args)
    positional.push_back(snapshot(a, what));
  for (const auto &[name, value] : kwargs)
    named.push_back(
        makeSeq(Var::Kind::Tuple, {makeConst(PyRef::steal(PyUnicode_FromString(name.c_str()))),
                                   snapshot(value, what)}));
  VarP packed = makeSeq(Var::Kind::Tuple, {makeConst(PyRef::borrow(fn)),
                                           makeSeq(Var::Kind::Tuple, std::move(positional)),
                                           makeSeq(Var::Kind::Tuple, std::move(named))});
  SideEffect e{SideEffect::Kind::Call, out_.sources.add(Source::Kind::Constant, -1, 0, replay), {}};
  e.what = what;
  recordEffect(std::move(e), packed);
  return makeConst(PyRef::borrow(Py_None));
}

} // namespace kiln

//===- ContextManagers.cpp - with-blocks in captured code ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `BEFORE_WITH` on a context manager, in three ways:
//  - torch.autocast("cpu", ...): a region of CPU autocast state
//    (Autocast.h; its `__exit__` call leaves it, Calls.cpp);
//  - torch.no_grad()/enable_grad()/inference_mode(mode): the grad mode of
//    the region is tracked (its `__exit__` call restores it, Calls.cpp's
//    Interpreter::call);
//  - a context manager whose type defines `__enter__` and `__exit__` as
//    Python functions: both are inlined like any method (`__enter__` now,
//    `__exit__(None, None, None)` when the body ends: exceptions never
//    happen during capture), so whatever they do is captured or breaks;
//  - the one table of context managers that are transparent to the
//    capture (`transparentContextType`), entered and left without effect;
//  - torch.set_grad_enabled(mode) (and torch._C._set_grad_enabled): a call
//    that switches grad mode at once (a with-block's exit restores it), so
//    each switch is also a side effect replayed after the graph, leaving
//    the caller in the grad mode eager would.
//===----------------------------------------------------------------------===//
#include "capture/interp/Autocast.h"
#include "capture/interp/Interp.h"
#include "GilOnce.h"

namespace kiln {

namespace {

/// The single place listing context-manager types whose effect kiln's
/// capture already has, so their with-blocks are entered as no-ops:
///
/// - torch._dynamo's `TransformGetItemToIndex` (a TorchFunctionMode used by
///   transformers' masking_utils around torch.vmap of mask functions): in
///   eager it makes `Tensor.__getitem__` with 0-d integer tensor indices an
///   index op instead of `.item()` + a view. kiln's capture never runs
///   `__getitem__`: tensor indices are always advanced indexing
///   (TorchIndexing.cpp's advancedIndex), the same values, so the mode has
///   nothing left to change. Its `__init__` stores nothing.
///
/// Modes of torch are C++ state (a stack pushed by `__enter__`), so the
/// general pure-Python rule cannot inline them; Dynamo models this one
/// specially too. Add a type here only with that argument written down.
bool transparentContextType(PyObject *t) {
  // Looked up only once torch._dynamo has been imported (by transformers):
  // importing it here would cost seconds for every other with-block.
  static PyObject *getItemToIndex = nullptr; // set under the GIL, no guard
  if (!getItemToIndex) {
    PyRef name = PyRef::steal(PyUnicode_FromString("torch._dynamo._trace_wrapped_higher_order_op"));
    PyRef m = PyRef::steal(PyImport_GetModule(name.get()));
    getItemToIndex =
        m ? PyObject_GetAttrString(m.get(), "TransformGetItemToIndex") : nullptr; // leaked
    PyErr_Clear();
  }
  return t && t == getItemToIndex;
}

/// `type(obj).name` when it is a Python function (new reference), else null.
PyRef pythonMethodOfType(PyObject *obj, const char *name) {
  PyRef fn = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject *>(Py_TYPE(obj)), name));
  PyErr_Clear();
  return fn && PyFunction_Check(fn.get()) ? fn : PyRef();
}

/// torch.inference_mode (borrowed; null when this torch lacks it).
PyObject *inferenceModeType() {
  static PyOnce inferenceOnce;
  return inferenceOnce.get([] {
    PyObject *t = PyObject_GetAttrString(torchModule(), "inference_mode");
    PyErr_Clear();
    return t;
  });
}

/// torch._C._set_grad_enabled (borrowed; null when this torch lacks it).
PyObject *cSetGradEnabled() {
  static PyOnce once;
  return once.get([] {
    PyRef c = PyRef::steal(PyObject_GetAttrString(torchModule(), "_C"));
    PyObject *f = c ? PyObject_GetAttrString(c.get(), "_set_grad_enabled") : nullptr;
    PyErr_Clear();
    return f;
  });
}

} // namespace

void Interpreter::recordGradSwitch(bool mode) {
  PyObject *fn = cSetGradEnabled();
  if (!fn)
    throw Unsupported(BreakCategory::Other, "this torch has no torch._C._set_grad_enabled");
  gradMode_ = mode;
  noteGradMode();
  gradSwitched_ = true;
  gradOnSomewhere_ |= mode;
  SideEffect e{SideEffect::Kind::Call, out_.sources.add(Source::Kind::Constant, -1, 0, fn), {}};
  e.what = std::string("torch.set_grad_enabled(") + (mode ? "True" : "False") + ")";
  recordEffect(std::move(e), makeConst(PyRef::borrow(mode ? Py_True : Py_False)));
}

VarP Interpreter::setGradEnabled(PyObject *fn, std::vector<VarP> &args,
                                 std::map<std::string, VarP> &kwargs) {
  static PyOnce setGradOnce;
  PyObject *setGrad =
      setGradOnce.get([] { return PyObject_GetAttrString(torchModule(), "set_grad_enabled"); });
  PyObject *cSetGrad = cSetGradEnabled();
  if (!fn || (fn != setGrad && fn != cSetGrad))
    return nullptr;
  VarP mode = args.size() == 1 && kwargs.empty()                           ? args[0]
              : args.empty() && kwargs.size() == 1 && kwargs.count("mode") ? kwargs["mode"]
                                                                           : nullptr;
  PyObject *m = mode ? constObj(mode, "grad mode") : nullptr;
  if (!m || !PyBool_Check(m))
    throw Unsupported(BreakCategory::UserError, pyText(fn) + " takes one bool");
  bool prev = gradMode_;
  recordGradSwitch(m == Py_True);
  if (fn == cSetGrad)
    return makeConst(PyRef::borrow(Py_None));
  // A stand-in for the returned object: a with-block on it changes nothing
  // on entry and restores `prev` on exit (enterWith).
  static PyOnce noGradOnce;
  PyObject *noGrad =
      noGradOnce.get([] { return PyObject_GetAttrString(torchModule(), "no_grad"); });
  PyRef ctx = PyRef::steal(PyObject_CallNoArgs(noGrad));
  if (!ctx)
    throw Unsupported(BreakCategory::Other, withPythonError("cannot create torch.no_grad()"));
  keepAlive_.push_back(ctx);
  setGradPrev_[ctx.get()] = prev;
  return makeConst(ctx);
}

VarP Interpreter::constructContext(PyObject *cls, std::vector<VarP> &args,
                                   std::map<std::string, VarP> &kwargs) {
  if (VarP ctx = setGradEnabled(cls, args, kwargs))
    return ctx;
  if (!transparentContextType(cls) && !isGradContextType(cls))
    return nullptr;
  // torch.inference_mode(mode=True) takes its mode; the others no arguments.
  VarP mode = args.size() == 1 && kwargs.empty()                           ? args[0]
              : args.empty() && kwargs.size() == 1 && kwargs.count("mode") ? kwargs["mode"]
                                                                           : nullptr;
  PyObject *m = mode && mode->isConst() ? mode->obj.get() : nullptr;
  if (cls == inferenceModeType() && m && !PyBool_Check(m))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "torch.inference_mode with a " +
                          pyText(reinterpret_cast<PyObject *>(Py_TYPE(m))) +
                          " (a function to decorate) inside a compiled region");
  if ((!args.empty() || !kwargs.empty()) && !(cls == inferenceModeType() && m))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "context manager " + pyText(cls) + " with arguments");
  // No side effects (see above; inference_mode's __init__ stores its mode).
  PyRef ctx = PyRef::steal(m ? PyObject_CallOneArg(cls, m) : PyObject_CallNoArgs(cls));
  if (!ctx)
    throw Unsupported(BreakCategory::PythonBuiltin,
                      withPythonError("cannot create the context manager " + pyText(cls)));
  keepAlive_.push_back(ctx);
  return makeConst(ctx);
}

void Interpreter::enterWith(Frame &f, const VarP &ctx) {
  if (PyObject *exitFn = ctx->isConst() ? autocastEnter(*this, ctx->obj.get()) : nullptr) {
    // `with torch.autocast("cpu", ...)`: a region of that state (Autocast.h).
    f.stack.push_back(makeConst(PyRef::borrow(exitFn)));
    f.stack.push_back(ctx); // __enter__() returns the object
    return;
  }
  if (auto standIn = ctx->isConst() ? setGradPrev_.find(ctx->obj.get()) : setGradPrev_.end();
      standIn != setGradPrev_.end()) {
    // `with torch.set_grad_enabled(m):` the call switched already; the
    // exit switches back (Calls.cpp: gradExits_ with setGradExits_).
    PyRef exitFn = PyRef::steal(PyObject_GetAttrString(ctx->obj.get(), "__exit__"));
    if (!exitFn)
      throw Unsupported(BreakCategory::UserError,
                        withPythonError("context manager without __exit__"));
    keepAlive_.push_back(exitFn);
    gradExits_[exitFn.get()] = standIn->second;
    setGradExits_.insert(exitFn.get());
    f.stack.push_back(makeConst(exitFn));
    f.stack.push_back(makeConst(PyRef::borrow(Py_None)));
    return;
  }
  int mode = gradContextMode(ctx);
  bool transparent = ctx->isConst() &&
                     transparentContextType(reinterpret_cast<PyObject *>(Py_TYPE(ctx->obj.get())));
  if (mode >= 0 || transparent) {
    PyRef exitFn = PyRef::steal(PyObject_GetAttrString(ctx->obj.get(), "__exit__"));
    if (!exitFn)
      throw Unsupported(BreakCategory::UserError,
                        withPythonError("context manager without __exit__"));
    keepAlive_.push_back(exitFn);
    gradExits_[exitFn.get()] = gradMode_; // the exit restores the mode (or keeps it)
    if (mode >= 0) {
      gradMode_ = mode == 1;
      noteGradMode();
      gradSwitched_ = true;
      gradOnSomewhere_ |= gradMode_;
    }
    f.stack.push_back(makeConst(exitFn));
    f.stack.push_back(makeConst(PyRef::borrow(Py_None))); // __enter__() returns None
    return;
  }
  if (ctx->kind == Var::Kind::Object) { // a user object built here (UserObjects.cpp)
    PyRef enterName = PyRef::steal(PyUnicode_FromString("__enter__"));
    PyRef exitName = PyRef::steal(PyUnicode_FromString("__exit__"));
    VarP enter = objectAttr(ctx, enterName.get()), exitVar = objectAttr(ctx, exitName.get());
    std::vector<VarP> args;
    std::map<std::string, VarP> kwargs;
    VarP entered = call(enter, args, kwargs);
    f.stack.push_back(exitVar);
    f.stack.push_back(entered);
    return;
  }
  // A context manager written in Python: inline its __enter__/__exit__.
  PyObject *obj = ctx->isConst() ? ctx->obj.get() : nullptr;
  PyRef enter = obj ? pythonMethodOfType(obj, "__enter__") : PyRef();
  PyRef exit = obj ? pythonMethodOfType(obj, "__exit__") : PyRef();
  if (!enter || !exit)
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "with-block on " +
                          (obj ? pyText(reinterpret_cast<PyObject *>(Py_TYPE(obj)))
                               : std::string("a value built here")) +
                          " (captured: torch.no_grad()/enable_grad() and context managers whose "
                          "__enter__/__exit__ are Python functions)");
  keepAlive_.push_back(enter);
  keepAlive_.push_back(exit);
  auto exitVar = std::make_shared<Var>();
  exitVar->kind = Var::Kind::BoundMethod;
  exitVar->obj = exit;
  exitVar->self = ctx;
  std::vector<VarP> args = {ctx};
  std::map<std::string, VarP> kwargs;
  VarP entered = inlineFunction(enter.get(), -1, args, kwargs);
  f.stack.push_back(exitVar);
  f.stack.push_back(entered);
}

bool Interpreter::isGradContextType(PyObject *t) {
  static PyOnce noGradOnce;
  PyObject *noGrad =
      noGradOnce.get([] { return PyObject_GetAttrString(torchModule(), "no_grad"); });
  static PyOnce enableGradOnce;
  PyObject *enableGrad =
      enableGradOnce.get([] { return PyObject_GetAttrString(torchModule(), "enable_grad"); });
  return t && (t == noGrad || t == enableGrad || t == inferenceModeType());
}

int Interpreter::gradContextMode(const VarP &ctx) {
  if (!ctx->isConst())
    return -1;
  PyObject *t = reinterpret_cast<PyObject *>(Py_TYPE(ctx->obj.get()));
  if (!isGradContextType(t))
    return -1;
  static PyOnce enableGradOnce;
  PyObject *enableGrad =
      enableGradOnce.get([] { return PyObject_GetAttrString(torchModule(), "enable_grad"); });
  if (t == inferenceModeType()) {
    // c10::InferenceMode(enabled) sets grad mode to !enabled: in a captured
    // region inference_mode() is no_grad() and inference_mode(False) is
    // enable_grad(). Results are normal tensors, not inference tensors
    // (docs/status.md).
    PyRef m = PyRef::steal(PyObject_GetAttrString(ctx->obj.get(), "mode"));
    PyErr_Clear();
    return m.get() == Py_False ? 1 : 0;
  }
  return t == enableGrad ? 1 : 0;
}

void Interpreter::checkGradRegions() const {
  if (!gradSwitched_ || !gradOnSomewhere_ || out_.gradMode)
    return;
  // With grad on at entry, regions under no_grad give values without
  // requires_grad (GradFlow.cpp marks those results). A graph entered with
  // grad off runs without autograd: a region that turns it on would give
  // results eager marks differently.
  for (const GraphInput &in : out_.inputs)
    if (in.requiresGrad)
      throw Unsupported("a torch.no_grad()/enable_grad() block in a graph whose inputs "
                        "require grad (grad mode is on in part of it)");
}

} // namespace kiln

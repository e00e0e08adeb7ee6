//===- Calls.cpp - handlers of calls, and what a call does --------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Opcode handlers (OpcodeHandlers.h) for calls and function creation, and
// Interpreter::call, which decides what a call of an abstract callee is:
// a tensor method or torch function (TorchOps), a mutation of a list or
// dict (SideEffects.cpp), a context manager (ContextManagers.cpp), a
// builtin answered at capture (PythonBuiltins.cpp), an nn.Module or Python
// function to inline (Inlining.cpp; a torch.jit.script function: its Python
// original), or a torch op run through torch inside the graph (Fallback.cpp).
//===----------------------------------------------------------------------===//
#include "capture/interp/Autocast.h"
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/interp/ModuleHooks.h"
#include "capture/ops/AtenOps.h"
#include "capture/interp/OpcodeHandlers.h"
#include "capture/interp/PlainObjects.h"
#include "capture/interp/NumpyInterop.h"
#include "GilOnce.h"

namespace kiln {

void OpcodeHandlers::kwNames(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  PyRef consts = PyRef::steal(PyObject_GetAttrString(f.code->code.get(), "co_consts"));
  f.kwNames = PyRef::borrow(PyTuple_GetItem(consts.get(), in.arg));
}

void OpcodeHandlers::call(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  int argc = in.arg;
  std::vector<VarP> args(f.stack.end() - argc, f.stack.end());
  f.stack.resize(f.stack.size() - argc);
  VarP b = popValue(f), a = popValue(f);
  VarP callee = a->kind == Var::Kind::Null ? b : a;
  if (a->kind != Var::Kind::Null)
    args.insert(args.begin(), b);
  std::map<std::string, VarP> kwargs;
  interp.kwOrder_.clear();
  if (f.kwNames) {
    Py_ssize_t nk = PyTuple_GET_SIZE(f.kwNames.get());
    for (Py_ssize_t i = 0; i < nk; ++i) {
      const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(f.kwNames.get(), i));
      kwargs[k] = args[args.size() - nk + i];
      interp.kwOrder_.push_back(k);
    }
    args.resize(args.size() - nk);
    f.kwNames = PyRef();
  }
  bool superCall = callee->isConst() && callee->obj.get() == (PyObject *)&PySuper_Type &&
                   args.empty() && kwargs.empty();
  f.stack.push_back(superCall ? interp.zeroArgSuper(f) : interp.call(callee, args, kwargs));
}

void OpcodeHandlers::callFunctionEx(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  // f(*args, **kwargs): one tuple/list and (arg & 1) one dict (3.11+:
  // after a NULL).
  VarP kwVar = in.arg & 1 ? popValue(f) : nullptr;
  VarP argsVar = popValue(f);
  VarP callee = popValue(f);
  if (!f.stack.empty() && f.stack.back()->kind == Var::Kind::Null)
    popValue(f);
  std::vector<VarP> args = interp.iterItems(argsVar);
  std::map<std::string, VarP> kwargs;
  std::vector<std::string> order;
  if (kwVar)
    for (auto &[k, v] : interp.dictItems(kwVar)) {
      if (!PyUnicode_Check(k.get()))
        throw Unsupported(BreakCategory::UserError, "keywords must be strings");
      kwargs[PyUnicode_AsUTF8(k.get())] = v;
      order.push_back(PyUnicode_AsUTF8(k.get()));
    }
  interp.kwOrder_ = std::move(order);
  f.stack.push_back(interp.call(callee, args, kwargs));
}

void OpcodeHandlers::makeFunction(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  VarP codeVar = popValue(f);
  PyObject *code = constObj(codeVar, "function code");
  if (!PyCode_Check(code))
    throw Unsupported("MAKE_FUNCTION without a code object");
  VarP closure = in.arg & 0x08 ? popValue(f) : nullptr;
  if (in.arg & 0x04)
    popValue(f); // annotations
  VarP kwdefaults = in.arg & 0x02 ? popValue(f) : nullptr;
  VarP defaults = in.arg & 0x01 ? popValue(f) : nullptr;
  PyRef fn = PyRef::steal(PyFunction_New(code, f.globals.get()));
  if (!fn)
    throw Unsupported(withPythonError("cannot create function"));
  // Defaults that are constants are set on the function; others (a tensor
  // or a size computed here, `def f(t, k=x.shape[0])`) stay Vars on the
  // Function Var and are bound at its calls (Inlining.cpp).
  VarP varDefaults, varKwDefaults;
  if (defaults) {
    PyRef d = seqAsConst(defaults);
    if (!d && defaults->isConst())
      d = PyRef::borrow(defaults->obj.get());
    if (!d && defaults->kind != Var::Kind::Tuple)
      throw Unsupported("default arguments that are not a tuple");
    if (!d)
      varDefaults = defaults;
    else if (PyFunction_SetDefaults(fn.get(), d.get()) < 0)
      throw Unsupported(withPythonError("invalid defaults"));
  }
  if (kwdefaults) {
    PyRef d = kwdefaults->isConst() ? PyRef::borrow(kwdefaults->obj.get()) : PyRef();
    if (!d && kwdefaults->kind == Var::Kind::Dict && !kwdefaults->obj && !kwdefaults->dictType) {
      d = PyRef::steal(PyDict_New());
      for (size_t i = 0; d && i < kwdefaults->keys.size(); ++i) {
        PyRef c = seqAsConst(kwdefaults->items[i]);
        PyObject *o = c                                 ? c.get()
                      : kwdefaults->items[i]->isConst() ? kwdefaults->items[i]->obj.get()
                                                        : nullptr;
        if (!o)
          d = PyRef();
        else
          PyDict_SetItem(d.get(), kwdefaults->keys[i].get(), o);
      }
    }
    if (!d && kwdefaults->kind != Var::Kind::Dict)
      throw Unsupported("keyword defaults that are not a dict");
    if (!d)
      varKwDefaults = kwdefaults;
    else if (PyFunction_SetKwDefaults(fn.get(), d.get()) < 0)
      throw Unsupported(withPythonError("invalid keyword defaults"));
  }
  interp.keepAlive_.push_back(fn);
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::Function;
  v->obj = fn;
  if (closure)
    v->items = closure->items;
  v->fnDefaults = varDefaults;
  v->fnKwDefaults = varKwDefaults;
  f.stack.push_back(v);
}

VarP Interpreter::callDictMethod(const VarP &callee, std::vector<VarP> &args,
                                 std::map<std::string, VarP> &kwargs) {
  const VarP &d = callee->self;
  if (callee->name == "get") {
    if (args.empty() || args.size() > 2 || !kwargs.empty())
      throw Unsupported("dict.get takes one or two arguments");
    int at = dictFind(d, constObj(args[0], "dict key"));
    return at >= 0 ? d->items[at] : args.size() == 2 ? args[1] : makeConst(PyRef::borrow(Py_None));
  }
  if (callee->name == "pop" && !d->obj) // a dict built here (not a record)
    return dictPop(d, args, kwargs);
  if (!args.empty() || !kwargs.empty())
    throw Unsupported("dict." + callee->name + " takes no arguments");
  if (callee->name == "to_tuple") // a ModelOutput record
    return makeSeq(Var::Kind::Tuple, d->items);
  std::vector<VarP> items;
  for (size_t i = 0; i < d->keys.size(); ++i) {
    VarP k = makeConst(d->keys[i]);
    items.push_back(callee->name == "keys"     ? k
                    : callee->name == "values" ? d->items[i]
                                               : makeSeq(Var::Kind::Tuple, {k, d->items[i]}));
  }
  VarP view = makeSeq(Var::Kind::Iter, items);
  view->reiterable = true; // a dict view: each iteration starts over
  view->self = d;          // ... and reads the dict as it is then (LiveIterators.h)
  view->name = callee->name;
  return view;
}

VarP Interpreter::callBoundMethod(const VarP &callee, std::vector<VarP> &args,
                                  std::map<std::string, VarP> &kwargs) {
  if (callee->obj.get() == moduleCallFunction() && callee->self->isConst() &&
      isModule(callee->self->obj.get())) {
    // nn.Module.__call__ reached through super().__call__ from a custom
    // __call__: the plain module call (hook checks, forward inlined).
    plainModuleCall_ = callee->self->obj.get();
    return call(callee->self, args, kwargs);
  }
  static PyOnce moduleTypeOnce;
  PyObject *moduleType = moduleTypeOnce.get([] {
    PyRef nn = PyRef::steal(PyImport_ImportModule("torch.nn"));
    PyObject *t = nn ? PyObject_GetAttrString(nn.get(), "Module") : nullptr;
    PyErr_Clear();
    return t; // leaked: process lifetime
  });
  for (const char *m : {"modules", "named_modules", "children", "named_children"}) {
    PyRef fnObj = PyRef::steal(moduleType ? PyObject_GetAttrString(moduleType, m) : nullptr);
    PyErr_Clear();
    if (fnObj.get() == callee->obj.get() && callee->self->isConst())
      return moduleTree(callee->self, m, args, kwargs);
  }
  for (const char *m : {"parameters", "named_parameters", "buffers", "named_buffers"}) {
    PyRef fnObj = PyRef::steal(moduleType ? PyObject_GetAttrString(moduleType, m) : nullptr);
    PyErr_Clear();
    if (fnObj.get() == callee->obj.get() && callee->self->isConst())
      return moduleMembers(callee->self, m, args, kwargs); // Inlining.cpp
  }
  if (isObjectGetattribute(callee->obj.get()) && callee->self->isConst() && args.size() == 1 &&
      kwargs.empty() && args[0]->isConst() && PyUnicode_Check(args[0]->obj.get()))
    return genericAttr(callee->self, args[0]->obj.get()); // SuperAttr.cpp
  if (VarP r = callReorderableLogging(callee->obj.get(), callee->self, args, kwargs))
    return r;
  if (VarP r = CaptureTimeCalls::boundMethod(*this, callee, args, kwargs))
    return r;
  args.insert(args.begin(), callee->self);
  if (!PyFunction_Check(callee->obj.get())) { // object's slot via super() (UserObjects.cpp)
    if (VarP r = callObjectSlot(callee->obj.get(), args, kwargs))
      return r;
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "a method that is not Python code: " + pyText(callee->obj.get()));
  }
  return inlineFunction(callee->obj.get(), -1, args, kwargs);
}

/// The Python function torch.jit.script compiled into `fn` (a
/// ScriptFunction), which the capture inlines as Dynamo does (torch keeps
/// it as `_torchdynamo_inline`); null for anything else.
static PyRef scriptedOriginal(PyObject *fn) {
  static PyOnce typeOnce;
  PyObject *scriptFunction = typeOnce.get([] {
    PyRef c = PyRef::steal(PyObject_GetAttrString(torchModule(), "_C"));
    PyObject *t = c ? PyObject_GetAttrString(c.get(), "ScriptFunction") : nullptr;
    PyErr_Clear();
    return t;
  });
  if (!scriptFunction || !PyType_Check(scriptFunction) ||
      !PyObject_TypeCheck(fn, reinterpret_cast<PyTypeObject *>(scriptFunction)))
    return PyRef();
  PyRef original = PyRef::steal(PyObject_GetAttrString(fn, "_torchdynamo_inline"));
  PyErr_Clear();
  return original && PyFunction_Check(original.get()) ? original : PyRef();
}

VarP Interpreter::call(const VarP &callee, std::vector<VarP> &args,
                       std::map<std::string, VarP> &kwargs) {
  if (callee->kind == Var::Kind::TensorMethod && callee->self->kind == Var::Kind::Ndarray)
    return NumpyInterop::method(*this, callee->self, callee->name, args, kwargs);
  if (callee->kind == Var::Kind::TensorMethod && callee->name == "numpy")
    return NumpyInterop::toNumpy(*this, callee->self, args, kwargs);
  if (callee->kind == Var::Kind::TensorMethod) {
    if (VarP q = tensorQuery(callee->self, callee->name, args, kwargs))
      return q;
    return callTensorMethod(callee->self, callee->name, args, kwargs);
  }
  if (callee->kind == Var::Kind::ListMethod)
    if (VarP r = callContainerMethod(callee->self, callee->name, args, kwargs)) // Collections.cpp
      return r;
  if (callee->kind == Var::Kind::ListMethod && callee->self->kind == Var::Kind::Dict)
    return callDictMethod(callee, args, kwargs);
  if (callee->kind == Var::Kind::ListMethod) // SideEffects.cpp
    return listMutation(callee->self, callee->name, args, kwargs);
  if (callee->kind == Var::Kind::Function)
    return inlineFunction(callee->obj.get(), -1, args, kwargs, &callee->items, callee.get());
  if (callee->kind == Var::Kind::BoundMethod)
    return callBoundMethod(callee, args, kwargs);
  if (callee->kind == Var::Kind::Object) // UserObjects.cpp
    return callObject(callee, args, kwargs);
  PyObject *fn = constObj(callee, "callee");
  if (autocastExit(*this, fn)) // the end of a torch.autocast("cpu") block (Autocast.h)
    return makeConst(PyRef::borrow(Py_False));
  auto exitIt = gradExits_.find(fn);
  if (exitIt != gradExits_.end()) { // the end of a grad-mode with-block
    if (setGradExits_.erase(fn))    // torch.set_grad_enabled's: replayed too
      recordGradSwitch(exitIt->second);
    gradMode_ = exitIt->second;
    noteGradMode();
    gradExits_.erase(exitIt);
    return makeConst(PyRef::borrow(Py_False));
  }
  if (VarP r = callReorderableLogging(fn, nullptr, args, kwargs)) // LoggingCalls.cpp
    return r;
  if (VarP r = NumpyInterop::call(*this, fn, args, kwargs))
    return r;
  if (VarP r = callContainerDescriptor(fn, args, kwargs)) // ContainerMethods.cpp
    return r;
  if (VarP r = callListMutation(fn, args, kwargs)) // SideEffects.cpp
    return r;
  if (VarP r = callObjectSlot(fn, args, kwargs)) // UserObjects.cpp
    return r;
  if (VarP r = callFunctional(callee, fn, args, kwargs)) // Functional.cpp
    return r;
  if (VarP r = callIterationBuiltin(fn, args, kwargs)) // Iterators.cpp
    return r;
  if (VarP ctx = constructContext(fn, args, kwargs)) // ContextManagers.cpp
    return ctx;
  if (VarP r = callVmap(fn, args, kwargs)) // Vmap.cpp
    return r;
  if (VarP r = callAtCapture(fn, args, kwargs)) // PythonBuiltins.cpp
    return r;
  if (VarP r = callStateQuery(fn, args, kwargs))
    return r;
  if (VarP r =
          callTorchOp(*this, fn, args, kwargs, // torch.ops.<ns>.<op> (ops/AtenOps.cpp)
                      [this](PyObject *t, std::vector<VarP> &a, std::map<std::string, VarP> &k) {
                        return call(makeConst(PyRef::borrow(t)), a, k);
                      })) {
    pinPlainObject(fn, "it is called as the torch op it is"); // OpOverload: by identity
    return r;
  }
  if (PyObject *decomp = pythonDecomposition(fn)) { // a fused kernel as kiln-mapped ops
    try {
      return inlineFunction(decomp, -1, args, kwargs);
    } catch (const PyRaised &e) {
      // The decomposition's own "not this call" (kiln/_decompositions.py):
      // torch's op does not raise it, so user code must not catch it.
      if (!PyErr_GivenExceptionMatches(e.exc.get(), PyExc_NotImplementedError))
        throw;
      PyRef name = PyRef::steal(PyObject_GetAttrString(fn, "__name__"));
      PyErr_Clear();
      throw Unsupported(BreakCategory::UnsupportedOp,
                        "torch." + (name ? pyText(name.get()) : pyText(fn)) +
                            ": kiln's lowering does not cover this call (" + pyText(e.exc.get()) +
                            ")");
    }
  }
  if (VarP r = callTorchFunction(fn, args, kwargs))
    return r;
  if (isModule(fn))
    return callModule(callee, fn, args, kwargs);
  if (PyFunction_Check(fn))
    return callPythonFunction(callee, fn, args, kwargs);
  if (VarP rec = buildRecord(fn, args, kwargs))
    return rec;
  if (PyMethod_Check(fn) && PyFunction_Check(PyMethod_GET_FUNCTION(fn))) {
    args.insert(args.begin(), makeConst(PyRef::borrow(PyMethod_GET_SELF(fn))));
    return inlineFunction(PyMethod_GET_FUNCTION(fn), -1, args, kwargs);
  }
  if (PyRef original = scriptedOriginal(fn)) { // a torch.jit.script function
    keepAlive_.push_back(original);
    return inlineFunction(original.get(), -1, args, kwargs);
  }
  if (VarP r = torchFallback(fn, "", args, kwargs, nullptr)) { // an unmapped torch op
    pinPlainObject(fn, "it is called as the torch op it is");
    return r;
  }
  if (!PyType_Check(fn)) {
    // An instance whose class defines __call__ in Python: inlined with the
    // instance as self, the class attribute guarded (patching recompiles).
    static PyOnce callNameOnce;
    PyObject *callName = callNameOnce.get([] { return PyUnicode_InternFromString("__call__"); });
    PyObject *own = _PyType_Lookup(Py_TYPE(fn), callName); // borrowed
    if (own && PyFunction_Check(own)) {
      guardClassAttr(callee, callName, own, /*notShadowed=*/false);
      keepAlive_.push_back(PyRef::borrow(own));
      args.insert(args.begin(), callee);
      return inlineFunction(own, -1, args, kwargs);
    }
  }
  if (VarP r = CaptureTimeCalls::constructModule(*this, callee, fn, args, kwargs))
    return r; // an nn.Module built at capture (BuiltModules.cpp)
  if (VarP r = constructObject(callee, fn, args, kwargs)) // UserObjects.cpp
    return r;
  return callBuiltin(fn, args, kwargs);
}

void Interpreter::guardNoModuleHooks(const VarP &callee, PyObject *module) {
  // Module.__call__ runs hooks (the module's and the global ones) around
  // forward; the graph inlines forward alone, so it guards that there are
  // none: a hook registered later must recompile (and then fall back).
  int modSrc = sourceOf(callee);
  int dictSrc = modSrc >= 0 ? out_.sources.add(Source::Kind::ObjDict, modSrc, 0, nullptr) : -1;
  for (const char *hooks :
       {"_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"}) {
    PyObject **dictPtr = _PyObject_GetDictPtr(module);
    PyObject *h = dictPtr && *dictPtr ? PyDict_GetItemString(*dictPtr, hooks) : nullptr;
    if (!h || !PyDict_Check(h))
      continue;
    if (PyDict_Size(h) > 0)
      throw Unsupported("module " + std::string(Py_TYPE(module)->tp_name) + " has hooks");
    if (dictSrc >= 0) {
      PyRef key = PyRef::steal(PyUnicode_FromString(hooks));
      guardLength(out_.sources.add(Source::Kind::DictItem, dictSrc, 0, key.get()), 0);
    }
  }
  static PyOnce moduleModuleOnce;
  PyObject *moduleModule =
      moduleModuleOnce.get([] { return PyImport_ImportModule("torch.nn.modules.module"); });
  for (const char *hooks : {"_global_forward_hooks", "_global_forward_pre_hooks",
                            "_global_backward_hooks", "_global_backward_pre_hooks"}) {
    PyRef h = PyRef::steal(moduleModule ? PyObject_GetAttrString(moduleModule, hooks) : nullptr);
    if (!h || !PyDict_Check(h.get()))
      continue;
    if (PyDict_Size(h.get()) > 0)
      throw Unsupported("global module hooks are registered");
    guardLength(out_.sources.add(Source::Kind::Constant, -1, 0, h.get()), 0);
  }
  PyErr_Clear();
}

VarP Interpreter::callModule(const VarP &callee, PyObject *module, std::vector<VarP> &args,
                             std::map<std::string, VarP> &kwargs) {
  bool plainCall = plainModuleCall_ == module; // reached from super().__call__
  plainModuleCall_ = nullptr;
  PyObject **instDict = _PyObject_GetDictPtr(module);
  if (instDict && *instDict && PyDict_GetItemString(*instDict, "forward"))
    throw Unsupported("module " + std::string(Py_TYPE(module)->tp_name) +
                      " has a forward set on the instance");
  // A kiln.compile'd module called inside a compiled region: inline the
  // module it wraps.
  static PyOnce compiledModuleTypeOnce;
  PyObject *compiledModuleType = compiledModuleTypeOnce.get([] {
    PyRef api = PyRef::steal(PyImport_ImportModule("kiln.api"));
    PyObject *t = api ? PyObject_GetAttrString(api.get(), "CompiledModule") : nullptr;
    PyErr_Clear();
    return t; // leaked: process lifetime
  });
  if (compiledModuleType &&
      PyObject_TypeCheck(module, reinterpret_cast<PyTypeObject *>(compiledModuleType))) {
    guardNoModuleHooks(callee, module); // the wrapper's own hooks are not captured
    PyRef name = PyRef::steal(PyUnicode_FromString("_orig_mod"));
    VarP inner = loadAttr(sourceOf(callee) >= 0 && callee->source < 0
                              ? makeConst(callee->obj, sourceOf(callee))
                              : callee,
                          name.get());
    return call(inner, args, kwargs);
  }
  PyObject *type = reinterpret_cast<PyObject *>(Py_TYPE(module));
  if (!plainCall) {
    // A module class with its own __call__ (e.g. transformers'
    // GradientCheckpointingLayer): inline it; its super().__call__ comes
    // back here as nn.Module.__call__ (plainModuleCall_).
    PyRef own = PyRef::steal(PyObject_GetAttrString(type, "__call__"));
    PyErr_Clear();
    static PyOnce callNameOnce;
    PyObject *callName = callNameOnce.get([] { return PyUnicode_InternFromString("__call__"); });
    if (own)
      guardClassAttr(callee, callName, own.get(), /*notShadowed=*/false);
    if (own && own.get() != moduleCallFunction() && PyFunction_Check(own.get())) {
      keepAlive_.push_back(own);
      args.insert(args.begin(), callee);
      return inlineFunction(own.get(), -1, args, kwargs);
    }
  }
  PyRef forward = PyRef::steal(PyObject_GetAttrString(type, "forward"));
  if (!forward || !PyFunction_Check(forward.get())) {
    PyErr_Clear();
    throw Unsupported("module " + std::string(Py_TYPE(module)->tp_name) + " has no Python forward");
  }
  // Patching the class's forward, or setting one on the instance, recompiles.
  static PyOnce forwardNameOnce;
  PyObject *forwardName = forwardNameOnce.get([] { return PyUnicode_InternFromString("forward"); });
  guardClassAttr(callee, forwardName, forward.get(), /*notShadowed=*/true);
  keepAlive_.push_back(forward);
  ModuleHookOps ops;
  ops.addSource = [this](Source::Kind k, int parent, int index, PyObject *key) {
    return out_.sources.add(k, parent, index, key);
  };
  ops.guardLength = [this](int src, Py_ssize_t n) { guardLength(src, n); };
  ops.fromSource = [this](PyObject *v, int src) { return fromSource(v, src, /*lazy=*/false); };
  ops.call = [this](const VarP &fn, std::vector<VarP> &a, std::map<std::string, VarP> &kw) {
    return call(fn, a, kw);
  };
  PyObject *fwd = forward.get();
  ops.forward = [this, fwd](std::vector<VarP> &a, std::map<std::string, VarP> &kw) {
    return inlineFunction(fwd, -1, a, kw);
  };
  return callModuleForward(ops, callee, sourceOf(callee), module, args, kwargs); // ModuleHooks.cpp
}

VarP Interpreter::callPythonFunction(const VarP &callee, PyObject *fn, std::vector<VarP> &args,
                                     std::map<std::string, VarP> &kwargs) {
  // A kiln.compile'd function called inside a compiled region: inline the
  // function it wraps (read through its source, so it stays guarded).
  PyObject *fdict = reinterpret_cast<PyFunctionObject *>(fn)->func_dict;
  PyObject *wrapped = fdict && PyDict_GetItemString(fdict, "_kiln_compiled") == Py_True
                          ? PyDict_GetItemString(fdict, "__wrapped__")
                          : nullptr;
  if (wrapped) {
    PyRef name = PyRef::steal(PyUnicode_FromString("__wrapped__"));
    VarP inner = callee->source >= 0
                     ? fromSource(wrapped, out_.sources.add(Source::Kind::Attr, callee->source, 0,
                                                            name.get()))
                     : makeConst(PyRef::borrow(wrapped));
    return call(inner, args, kwargs);
  }
  if (isTorchOpFunction(fn)) // unmapped Python code of torch: inline it, else run it through torch
    return withFallback(fn, "", args, kwargs,
                        [&] { return inlineFunction(fn, callee->source, args, kwargs); });
  return inlineFunction(fn, callee->source, args, kwargs);
}

std::vector<std::string> Interpreter::callOrder(std::vector<std::string> keys,
                                                const std::string &what) const {
  // kwargs maps are sorted; a dict built from them (`dict(b=x, a=y)`, a
  // function's **kwargs) must keep the call's order, which kwOrder_ holds
  // unless another call was dispatched in between.
  if (keys.size() < 2)
    return keys;
  std::vector<std::string> ordered;
  for (const std::string &k : kwOrder_)
    if (std::binary_search(keys.begin(), keys.end(), k))
      ordered.push_back(k);
  if (ordered.size() != keys.size())
    throw Unsupported(BreakCategory::Other,
                      what + ": the order of its keyword arguments is not known here");
  return ordered;
}

} // namespace kiln

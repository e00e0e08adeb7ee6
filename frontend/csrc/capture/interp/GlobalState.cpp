//===- GlobalState.cpp - torch's global state seen by the capture ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Queries of torch's global state that model code branches on
// (`torch.is_autocast_enabled()`, `torch.is_grad_enabled()`,
// `torch.jit.is_tracing()`, `torch._C._has_torch_function(...)`) are
// answered at capture time as constants; every answer that depends on state
// outside the frame becomes a Call guard (`fn(*args) == result`, checked in
// C++ before each call), so a change of that state recompiles. Autocast:
// the caller's CPU autocast state (enabled, dtype) is guarded and starts
// the capture's (Autocast.h); a `torch.autocast("cpu", ...)` object is
// built at capture and its with-block is a region of that state, whose
// queries (`torch.is_autocast_enabled("cpu")` ...) are answered from it.
// CUDA autocast is refused (the frame runs eagerly, guarded on it).
//===----------------------------------------------------------------------===//
#include "capture/interp/Autocast.h"
#include "capture/interp/Interp.h"
#include "GilOnce.h"

#include "ir/KilnOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include <unordered_set>
#include <utility>
#include <vector>

namespace kiln {
namespace {

PyObject *torchC() {
  static PyOnce cOnce;
  PyObject *c = cOnce.get([] { return PyObject_GetAttrString(torchModule(), "_C"); });
  return c;
}

/// torch / torch._C builtins that only read global state (autocast, JIT
/// tracing, inference mode): evaluated at capture and guarded by value.
bool isStateQuery(PyObject *fn) {
  static GilOnce<std::unordered_set<PyObject *>> queriesOnce;
  const std::unordered_set<PyObject *> &queries = queriesOnce.get([] {
    std::unordered_set<PyObject *> s;
    for (PyObject *mod : {torchModule(), torchC()}) {
      for (const char *n : {"is_autocast_enabled",
                            "is_autocast_cpu_enabled",
                            "is_autocast_ipu_enabled",
                            "is_autocast_xla_enabled",
                            "is_autocast_cache_enabled",
                            "get_autocast_dtype",
                            "get_autocast_cpu_dtype",
                            "get_autocast_gpu_dtype",
                            "get_autocast_ipu_dtype",
                            "get_autocast_xla_dtype",
                            "_is_any_autocast_enabled",
                            "_is_autocast_available",
                            "is_inference_mode_enabled",
                            "_is_tracing",
                            "_get_tracing_state",
                            "_get_mha_fastpath_enabled",
                            "is_deterministic_algorithms_warn_only_enabled",
                            "are_deterministic_algorithms_enabled",
                            "_len_torch_dispatch_stack",
                            "_len_torch_function_stack",
                            "_is_torch_function_enabled",
                            "_is_torch_function_all_disabled",
                            "_is_torch_function_mode_enabled"}) {
        PyObject *f = PyObject_GetAttrString(mod, n); // kept alive by the set (leaked)
        if (f)
          s.insert(f);
        PyErr_Clear();
      }
    }
    return s;
  });
  return queries.count(fn) > 0;
}

/// torch's API-usage logging (`torch._C._log_api_usage_once(name)`, called
/// by torchvision's model and op helpers, `_log_api_usage_metadata`): it
/// only reports to a telemetry handler (none by default) and returns None,
/// so the capture drops the call, as Dynamo does.
bool isUsageLogging(PyObject *fn) {
  static GilOnce<std::unordered_set<PyObject *>> loggingOnce;
  const std::unordered_set<PyObject *> &logging = loggingOnce.get([] {
    std::unordered_set<PyObject *> s;
    for (const char *n : {"_log_api_usage_once", "_log_api_usage_metadata"}) {
      PyObject *f = PyObject_GetAttrString(torchC(), n); // kept alive by the set (leaked)
      if (f)
        s.insert(f);
      PyErr_Clear();
    }
    return s;
  });
  return logging.count(fn) > 0;
}

PyObject *torchAttr(const char *name) {
  PyObject *f = PyObject_GetAttrString(torchModule(), name);
  PyErr_Clear();
  return f; // leaked by the static callers: process lifetime
}

/// True when `t` is torch.autocast or a subclass (torch.cpu.amp.autocast ...).
bool isAutocastType(PyObject *t) {
  static PyOnce autocastOnce;
  PyObject *autocast = autocastOnce.get([] { return torchAttr("autocast"); });
  return autocast && PyType_Check(t) && PyObject_IsSubclass(t, autocast) == 1;
}

/// A torch.autocast object built at capture from constant arguments, with
/// its device type and the state its with-block sets.
struct BuiltAutocast {
  PyRef ctx;
  std::string device;
  AutocastState state;
};

BuiltAutocast buildAutocast(PyObject *cls, PyObject *args, PyObject *kwargs) {
  BuiltAutocast b;
  b.ctx = PyRef::steal(PyObject_Call(cls, args, kwargs));
  if (!b.ctx)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError("torch.autocast(...) raised at capture time"),
                      hint::kRaisesInEager);
  PyRef device = PyRef::steal(PyObject_GetAttrString(b.ctx.get(), "device"));
  PyRef enabled = PyRef::steal(PyObject_GetAttrString(b.ctx.get(), "_enabled"));
  PyRef dtype = PyRef::steal(PyObject_GetAttrString(b.ctx.get(), "fast_dtype"));
  if (!device || !enabled || !dtype)
    throw Unsupported(BreakCategory::Other,
                      withPythonError("cannot read this torch.autocast object's state"));
  b.device = pyText(device.get());
  b.state.enabled = PyObject_IsTrue(enabled.get()) == 1;
  std::optional<DType> d = dtypeFromObject(dtype.get());
  if (b.state.enabled && (!d || (*d != DType::BF16 && *d != DType::F16)))
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "torch.autocast with dtype " + pyText(dtype.get()) +
                          " (kiln applies CPU autocast to bfloat16 and float16)");
  if (d)
    b.state.dtype = *d;
  return b;
}

/// `with torch.autocast(<not cpu>, enabled=False)` changes nothing for the
/// graph's ops: a contextlib.nullcontext() (new reference).
PyRef nullContext() {
  static PyOnce nullContextOnce;
  PyObject *nullContext = nullContextOnce.get([] {
    PyRef m = PyRef::steal(PyImport_ImportModule("contextlib"));
    PyObject *c = m ? PyObject_GetAttrString(m.get(), "nullcontext") : nullptr;
    PyErr_Clear();
    return c; // process lifetime
  });
  PyRef ctx = PyRef::steal(nullContext ? PyObject_CallNoArgs(nullContext) : nullptr);
  if (!ctx)
    throw Unsupported(BreakCategory::Other, withPythonError("cannot create a nullcontext"));
  return ctx;
}

/// `cls(*args, **kwargs)` (torch.autocast or a subclass) as the object a
/// with-block enters: a CPU one registered as a region (enterWith,
/// Autocast.h; `cpu` set), a disabled one of another device a nullcontext.
PyRef autocastContext(const Interpreter &I, PyObject *cls, const std::vector<VarP> &args,
                      const std::map<std::string, VarP> &kwargs, bool &cpu) {
  PyRef kw = PyRef::steal(PyDict_New());
  for (auto &[k, v] : kwargs)
    PyDict_SetItemString(kw.get(), k.c_str(), constObj(v, "argument of torch.autocast"));
  BuiltAutocast b =
      buildAutocast(cls, constTuple(args, "argument of torch.autocast").get(), kw.get());
  cpu = b.device == "cpu";
  if (!cpu && b.state.enabled)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "a torch.autocast(\"" + b.device +
                          "\") region inside the compiled code: kiln applies CPU autocast only "
                          "(the region runs eagerly)");
  if (!cpu)
    return nullContext();
  autocastRegister(I, b.ctx, b.state);
  return b.ctx;
}

/// A query of the CPU autocast state inside a region whose state differs
/// from the caller's: answered from the region (null: not such a query).
VarP regionQuery(const Interpreter &I, PyObject *fn, const std::vector<VarP> &args) {
  AutocastState cur = autocastCurrent(I), entry = autocastEntry(I);
  if (cur.enabled == entry.enabled && cur.dtype == entry.dtype)
    return nullptr; // the caller's state: asked for real and guarded
  PyRef nameObj = PyRef::steal(PyObject_GetAttrString(fn, "__name__"));
  PyErr_Clear();
  std::string name = nameObj ? pyText(nameObj.get()) : "";
  bool cpuArg = args.size() == 1 && args[0]->isConst() && PyUnicode_Check(args[0]->obj.get()) &&
                pyText(args[0]->obj.get()) == "cpu";
  auto boolConst = [](bool b) { return makeConst(PyRef::borrow(b ? Py_True : Py_False)); };
  if ((name == "is_autocast_enabled" && cpuArg) ||
      (name == "is_autocast_cpu_enabled" && args.empty()))
    return boolConst(cur.enabled);
  if (name == "_is_any_autocast_enabled" && args.empty())
    return boolConst(cur.enabled); // other devices' autocast is off (guarded at entry)
  if ((name == "get_autocast_dtype" && cpuArg) ||
      (name == "get_autocast_cpu_dtype" && args.empty()))
    return makeConst(PyRef::borrow(dtypeObject(cur.dtype)));
  return nullptr;
}

} // namespace

void Interpreter::addCallGuard(PyObject *fn, PyObject *args, PyObject *result) {
  for (const Guard &g : out_.guards) {
    if (g.kind != Guard::Kind::Call)
      continue;
    PyObject *e = g.expected.get();
    if (PyTuple_GET_ITEM(e, 0) == fn &&
        PyObject_RichCompareBool(PyTuple_GET_ITEM(e, 1), args, Py_EQ) == 1)
      return;
    PyErr_Clear();
  }
  Guard g;
  g.kind = Guard::Kind::Call;
  g.source = -1;
  g.expected = PyRef::steal(PyTuple_Pack(3, fn, args, result));
  out_.guards.push_back(std::move(g));
}

void Interpreter::guardThreadCount() {
  static PyOnce getNumThreadsOnce;
  PyObject *getNumThreads = getNumThreadsOnce.get([] { return torchAttr("get_num_threads"); });
  if (!getNumThreads)
    throw Unsupported(BreakCategory::Other, "this torch has no torch.get_num_threads");
  PyRef none = PyRef::steal(PyTuple_New(0));
  PyRef n = PyRef::steal(PyObject_Call(getNumThreads, none.get(), nullptr));
  if (!n)
    throw Unsupported(BreakCategory::Other, withPythonError("torch.get_num_threads() failed"));
  addCallGuard(getNumThreads, none.get(), n.get());
}

void Interpreter::guardEntryState() {
  PyObject *anyAutocast = PyObject_GetAttrString(torchC(), "_is_any_autocast_enabled");
  PyRef keep = PyRef::steal(anyAutocast);
  if (!anyAutocast)
    throw Unsupported(
        BreakCategory::Other,
        withPythonError("this torch has no torch._C._is_any_autocast_enabled (autocast state "
                        "cannot be guarded)"));
  PyRef none = PyRef::steal(PyTuple_New(0));
  PyRef on = PyRef::steal(PyObject_Call(anyAutocast, none.get(), nullptr));
  if (!on)
    throw Unsupported(BreakCategory::Other,
                      withPythonError("torch._C._is_any_autocast_enabled() raised"));
  addCallGuard(anyAutocast, none.get(), on.get());
  // Frames run inside a functorch transform (vmap, grad) see wrapper
  // tensors without storage: never captured (guarded, so a frame compiled
  // outside a transform is not reused inside one).
  PyRef functorch = PyRef::steal(PyObject_GetAttrString(torchC(), "_functorch"));
  PyRef level = functorch
                    ? PyRef::steal(PyObject_GetAttrString(functorch.get(), "maybe_current_level"))
                    : PyRef();
  PyRef cur = level ? PyRef::steal(PyObject_Call(level.get(), none.get(), nullptr)) : PyRef();
  PyErr_Clear();
  if (cur) {
    addCallGuard(level.get(), none.get(), cur.get());
    if (cur.get() != Py_None)
      throw Unsupported(BreakCategory::UnsupportedOp,
                        "the frame runs inside a functorch transform (vmap/grad): its tensors "
                        "are wrappers kiln cannot read");
  }
  // A user TorchFunctionMode / TorchDispatchMode on the stack (FlopCounterMode,
  // a mode rewriting ops, torch.set_default_device("meta")) sees every op
  // eagerly; kiln's graph would bypass it: the frame runs eagerly (guarded
  // on kiln._modes.entry_modes(), so it compiles once the mode is gone).
  // No mode on either stack (the usual case): two C calls per guard check;
  // else the Python classification, guarded by its answer.
  bool anyMode = false;
  std::vector<std::pair<PyRef, PyRef>> depths;
  for (const char *stack : {"_len_torch_function_stack", "_len_torch_dispatch_stack"}) {
    PyRef len = PyRef::steal(PyObject_GetAttrString(torchC(), stack));
    PyRef depth = len ? PyRef::steal(PyObject_Call(len.get(), none.get(), nullptr)) : PyRef();
    if (!depth)
      throw Unsupported(BreakCategory::Other,
                        withPythonError(std::string("torch._C.") + stack + "() failed"));
    anyMode |= PyLong_AsLong(depth.get()) != 0;
    depths.emplace_back(len, depth);
  }
  for (auto &[len, depth] : depths)
    if (!anyMode)
      addCallGuard(len.get(), none.get(), depth.get());
  static PyOnce modesOnce;
  PyObject *entryModes = anyMode ? modesOnce.imported("kiln._modes", "entry_modes") : nullptr;
  PyRef modes = entryModes ? PyRef::steal(PyObject_Call(entryModes, none.get(), nullptr)) : PyRef();
  if (anyMode && !modes)
    throw Unsupported(BreakCategory::Other, withPythonError("kiln._modes.entry_modes() failed"));
  if (anyMode)
    addCallGuard(entryModes, none.get(), modes.get());
  if (anyMode && PyLong_AsLong(modes.get()) == 2) // USER_MODES
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "a torch function or dispatch mode is active (a TorchFunctionMode, "
                      "TorchDispatchMode, FlopCounterMode or torch.set_default_device): the "
                      "frame runs eagerly so that the mode sees every op",
                      "call the compiled code outside the mode");
  AutocastState entry;
  if (on.get() == Py_True) {
    // torch.<name>(device), guarded by value (a change recompiles).
    auto guarded = [&](const char *name, const char *device) {
      static PyOnce enabledOnce, dtypeOnce;
      PyObject *f = std::string(name) == "is_autocast_enabled"
                        ? enabledOnce.get([] { return torchAttr("is_autocast_enabled"); })
                        : dtypeOnce.get([] { return torchAttr("get_autocast_dtype"); });
      PyRef args = PyRef::steal(Py_BuildValue("(s)", device));
      PyRef r = f ? PyRef::steal(PyObject_Call(f, args.get(), nullptr)) : PyRef();
      if (!r)
        throw Unsupported(BreakCategory::Other,
                          withPythonError(std::string("torch.") + name + "() failed"));
      addCallGuard(f, args.get(), r.get());
      return r;
    };
    if (guarded("is_autocast_enabled", "cuda").get() == Py_True ||
        guarded("is_autocast_enabled", "cpu").get() != Py_True)
      throw Unsupported(BreakCategory::UnsupportedOp,
                        "torch.autocast is enabled for a device other than the CPU: kiln applies "
                        "CPU autocast only, so the frame runs eagerly (it recompiles once that "
                        "autocast is off)",
                        "call the model outside that torch.autocast");
    std::optional<DType> d = dtypeFromObject(guarded("get_autocast_dtype", "cpu").get());
    if (!d || (*d != DType::BF16 && *d != DType::F16))
      throw Unsupported(BreakCategory::UnsupportedOp,
                        "CPU autocast to a dtype other than bfloat16/float16");
    entry = {true, *d};
  }
  autocastReset(*this, entry);
}

VarP Interpreter::callStateQuery(PyObject *fn, std::vector<VarP> &args,
                                 std::map<std::string, VarP> &kwargs) {
  static PyOnce isGradEnabledOnce;
  PyObject *isGradEnabled = isGradEnabledOnce.get([] { return torchAttr("is_grad_enabled"); });
  static PyOnce isTensorFnOnce;
  PyObject *isTensorFn = isTensorFnOnce.get([] { return torchAttr("is_tensor"); });
  static PyOnce isFloatingPointOnce;
  PyObject *isFloatingPoint =
      isFloatingPointOnce.get([] { return torchAttr("is_floating_point"); });
  static PyOnce isComplexOnce;
  PyObject *isComplex = isComplexOnce.get([] { return torchAttr("is_complex"); });
  static PyOnce hasTFOnce;
  PyObject *hasTF =
      hasTFOnce.get([] { return PyObject_GetAttrString(torchC(), "_has_torch_function"); });
  static PyOnce hasTFUnaryOnce;
  PyObject *hasTFUnary = hasTFUnaryOnce.get(
      [] { return PyObject_GetAttrString(torchC(), "_has_torch_function_unary"); });
  static PyOnce hasTFVariadicOnce;
  PyObject *hasTFVariadic = hasTFVariadicOnce.get(
      [] { return PyObject_GetAttrString(torchC(), "_has_torch_function_variadic"); });
  PyErr_Clear();
  auto boolConst = [](bool b) { return makeConst(PyRef::borrow(b ? Py_True : Py_False)); };
  if (isUsageLogging(fn))
    return makeConst(PyRef::borrow(Py_None));
  if (fn == isGradEnabled && args.empty() && kwargs.empty())
    return boolConst(gradMode_); // the entry's grad mode is guarded (per region here)
  static PyOnce nestedFromMaskOnce;
  PyObject *nestedFromMask =
      nestedFromMaskOnce.get([] { return torchAttr("_nested_tensor_from_mask"); });
  static PyOnce nestedLeftAlignedOnce;
  PyObject *nestedLeftAligned =
      nestedLeftAlignedOnce.get([] { return torchAttr("_nested_tensor_from_mask_left_aligned"); });
  if (fn && (fn == nestedFromMask || fn == nestedLeftAligned))
    throw Unsupported(BreakCategory::DataDependent,
                      "nested-tensor conversion (" + pyText(fn) +
                          "): nn.TransformerEncoder's eval fast path with a src_key_padding_mask "
                          "depends on the mask's values and zeroes padded rows; it runs eagerly "
                          "(build the encoder with enable_nested_tensor=False to compile it)");
  if (PyFunction_Check(fn)) {
    // transformers asks "am I being compiled?" to skip data-dependent
    // shortcuts (e.g. dropping an all-ones attention mask) that give the
    // same numbers: kiln answers True while capturing, as Dynamo does.
    auto *func = reinterpret_cast<PyFunctionObject *>(fn);
    PyObject *mod = func->func_module;
    if (mod && PyUnicode_Check(mod) && pyText(mod).rfind("transformers.", 0) == 0 &&
        pyText(func->func_name) == "is_torchdynamo_compiling" && args.empty() && kwargs.empty())
      return boolConst(true);
    // inspect.signature of a constant callable (e.g. a forward's parameter
    // count): evaluated, not interpreted (inspect is deep Python).
    static PyOnce signatureOnce;
    PyObject *signature = signatureOnce.get([] {
      PyRef m = PyRef::steal(PyImport_ImportModule("inspect"));
      PyObject *s = m ? PyObject_GetAttrString(m.get(), "signature") : nullptr;
      PyErr_Clear();
      return s; // leaked: process lifetime
    });
    if (fn == signature && args.size() == 1 && kwargs.empty() && args[0]->isConst()) {
      PyRef r = PyRef::steal(PyObject_CallOneArg(fn, args[0]->obj.get()));
      if (!r)
        throw Unsupported(BreakCategory::UserError,
                          withPythonError("inspect.signature raised at capture time"),
                          hint::kRaisesInEager);
      keepAlive_.push_back(r);
      return makeConst(r);
    }
    return nullptr;
  }
  static PyOnce tensorCtorOnce, asTensorOnce;
  PyObject *tensorCtor = tensorCtorOnce.get([] { return torchAttr("tensor"); });
  PyObject *asTensor = asTensorOnce.get([] { return torchAttr("as_tensor"); });
  if (fn == asTensor && args.size() == 1 && args[0]->isTensor()) {
    // as_tensor(t) is t itself; with dtype=/device=, t.to(...) (which also
    // gives t itself when nothing changes).
    std::map<std::string, VarP> kw = kwargs;
    for (auto &[k, v] : kw)
      if (k != "dtype" && k != "device")
        throw Unsupported(BreakCategory::UnsupportedOp, "torch.as_tensor(" + k + "=...)");
    if (kw.count("dtype") && kw["dtype"]->isConst() && kw["dtype"]->obj.get() == Py_None)
      kw.erase("dtype");
    if (kw.empty())
      return args[0];
    PyRef to = PyRef::steal(PyUnicode_FromString("to"));
    std::vector<VarP> none;
    return call(tensorMethodOrAttr(args[0], to.get()), none, kw);
  }
  if (fn == tensorCtor || fn == asTensor)
    return tensorFromData(args, kwargs);
  if (isAutocastType(fn)) {
    // Built now; the default dtype its __init__ read is guarded.
    bool cpu = false;
    PyRef ctx = autocastContext(*this, fn, args, kwargs, cpu);
    static PyOnce dtypeOnce;
    PyObject *getDtype = dtypeOnce.get([] { return torchAttr("get_autocast_dtype"); });
    PyRef cpuArg = PyRef::steal(Py_BuildValue("(s)", "cpu"));
    PyRef dflt =
        cpu && getDtype ? PyRef::steal(PyObject_Call(getDtype, cpuArg.get(), nullptr)) : PyRef();
    if (dflt)
      addCallGuard(getDtype, cpuArg.get(), dflt.get());
    PyErr_Clear();
    keepAlive_.push_back(ctx);
    return makeConst(ctx);
  }
  if ((fn == isTensorFn || fn == isFloatingPoint || fn == isComplex) && args.size() == 1 &&
      kwargs.empty()) {
    if (fn == isTensorFn)
      return boolConst(args[0]->isTensor());
    if (!args[0]->isTensor())
      return nullptr; // torch raises for a non-tensor: let the call break
    mlir::Type elt = llvm::cast<mlir::RankedTensorType>(args[0]->value.getType()).getElementType();
    return boolConst(fn == isFloatingPoint && llvm::isa<mlir::FloatType>(elt));
  }
  if ((fn == hasTF || fn == hasTFUnary || fn == hasTFVariadic) && kwargs.empty()) {
    // Graph tensors are plain torch.Tensor/Parameter objects (their guards
    // check that); constants are asked for real.
    std::vector<VarP> items = fn == hasTF && args.size() == 1 ? iterItems(args[0]) : args;
    for (const VarP &v : items) {
      if (v->isTensor())
        continue;
      PyRef one = PyRef::steal(PyTuple_Pack(1, constObj(v, "argument of _has_torch_function")));
      PyRef r = PyRef::steal(PyObject_Call(hasTFVariadic, one.get(), nullptr));
      if (!r)
        throw Unsupported(BreakCategory::Other,
                          withPythonError("torch._C._has_torch_function raised"));
      if (r.get() == Py_True)
        return boolConst(true);
    }
    return boolConst(false);
  }
  if (!isStateQuery(fn))
    return nullptr;
  if (VarP r = kwargs.empty() ? regionQuery(*this, fn, args) : nullptr)
    return r;
  PyRef tuple = constTuple(args, "argument of a torch state query");
  if (!kwargs.empty())
    throw Unsupported(BreakCategory::PythonBuiltin, "keyword arguments to a torch state query");
  PyRef r = PyRef::steal(PyObject_Call(fn, tuple.get(), nullptr));
  if (!r)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError("call to " + pyText(fn) + " raised at capture time"),
                      hint::kRaisesInEager);
  addCallGuard(fn, tuple.get(), r.get());
  return makeConst(r);
}

} // namespace kiln

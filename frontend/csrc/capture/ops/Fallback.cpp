//===- Fallback.cpp - torch calls kiln cannot lower, kept inside the graph --===//
// SPDX-License-Identifier: Apache-2.0
//
// Per-op fallback (docs/architecture.md §3c). A call of a torch function or
// Tensor method that kiln has no lowering for (not in the op table, or its
// handler refused the arguments) does not break the graph when its
// arguments are graph tensors and Python constants: the call runs once on
// meta tensors (kiln/_fallback.py: no random, mutating, aliasing or
// data-dependent op, tensor results only), and the graph gets
// `func.call @kiln_fallback_<i>(tensors) : (...) -> (...)` with the result
// types seen there. Partition.cpp later splits the graph at these calls;
// at run time the call is made through torch with the live tensors
// (Program.cpp).
//===----------------------------------------------------------------------===//
#include "capture/interp/Autocast.h"
#include "capture/interp/Interp.h"
#include "capture/ops/AtenOps.h"
#include "capture/ops/TorchOpsImpl.h"
#include "GilOnce.h"
#include "PySequence.h"
#include "ir/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <array>
#include <cstring>

namespace kiln {
namespace {

/// Why a call cannot fall back (caught inside torchFallback).
struct Refused {
  std::string why;
  BreakCategory category = BreakCategory::UnsupportedOp;
};

/// A kiln._fallback.Refusal (borrowed) as a Refused.
Refused refusalOf(PyObject *refusal) {
  PyRef category = PyRef::steal(PyObject_GetAttrString(refusal, "category"));
  PyRef reason = PyRef::steal(PyObject_GetAttrString(refusal, "reason"));
  if (!category || !reason)
    return {withPythonError("kiln._fallback.probe returned no Refusal")};
  return {pyText(reason.get()), breakCategoryFromName(pyText(category.get()))};
}

/// The `kiln._fallback` function `name` (a new reference kept for the
/// process; null with the error cleared when the module is missing).
PyObject *fallbackHelper(const char *name) {
  PyRef mod = PyRef::steal(PyImport_ImportModule("kiln._fallback"));
  PyObject *fn = mod ? PyObject_GetAttrString(mod.get(), name) : nullptr;
  if (!fn)
    PyErr_Clear();
  return fn;
}

/// Whether a constant argument is a plain value the call may be replayed
/// with (numbers, strings, None, dtypes, devices ... and tuples of them).
bool isPlainConstant(PyObject *o, int depth = 0) {
  static GilOnce<std::array<PyRef, 5>> torchTypesOnce;
  const std::array<PyRef, 5> &torchTypes = torchTypesOnce.get([] {
    std::array<PyRef, 5> types;
    const char *names[5] = {"dtype", "device", "layout", "memory_format", "Size"};
    for (int i = 0; i < 5; ++i)
      types[i] = PyRef::steal(PyObject_GetAttrString(torchModule(), names[i]));
    PyErr_Clear(); // a type this torch lacks is never matched
    return types;
  });
  if (o == Py_None || o == Py_Ellipsis || PyBool_Check(o) || PyLong_CheckExact(o) ||
      PyFloat_CheckExact(o) || PyUnicode_CheckExact(o))
    return true;
  for (const PyRef &t : torchTypes)
    if (t && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject *>(t.get())))
      return true;
  if (PySlice_Check(o)) {
    auto *s = reinterpret_cast<PySliceObject *>(o);
    return isPlainConstant(s->start, depth + 1) && isPlainConstant(s->stop, depth + 1) &&
           isPlainConstant(s->step, depth + 1);
  }
  if ((PyTuple_CheckExact(o) || PyList_CheckExact(o)) && depth < 4) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i)
      if (!isPlainConstant(PySequence_Fast_ITEMS(o)[i], depth + 1))
        return false;
    return true;
  }
  return false;
}

/// `o` with every list in it (a plain constant) copied.
PyRef copyLists(PyObject *o) {
  if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o))
    return PyRef::borrow(o);
  return buildSequence(PyTuple_CheckExact(o), PySequence_Fast_GET_SIZE(o),
                       [&](Py_ssize_t i) { return copyLists(PySequence_Fast_ITEMS(o)[i]); });
}

/// Turns the arguments of one call into FallbackArgs (operands numbered in
/// order of first use) and the same arguments with meta tensors.
struct ArgConverter {
  Interpreter &I;
  std::vector<mlir::Value> operands;
  std::vector<PyRef> metas; ///< per operand
  std::vector<VarP> vars;   ///< per operand: the first Var passed as it

  /// New reference to `v` as the probe sees it; fills `arg`.
  PyObject *convert(const VarP &v, FallbackArg &arg, int depth = 0) {
    if (v->isTensor())
      return operand(v, arg);
    if (v->isConst()) {
      if (!isPlainConstant(v->obj.get()))
        throw Refused{"an argument is a " + std::string(Py_TYPE(v->obj.get())->tp_name)};
      I.guardValue(v);
      arg.kind = FallbackArg::Kind::Constant;
      // A list is copied: one made at capture may be mutated after the call.
      arg.constant = copyLists(v->obj.get());
      Py_INCREF(v->obj.get());
      return v->obj.get();
    }
    if ((v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List) && depth < 4) {
      bool tuple = v->kind == Var::Kind::Tuple;
      arg.kind = tuple ? FallbackArg::Kind::Tuple : FallbackArg::Kind::List;
      arg.items.resize(v->items.size());
      return buildSequence(tuple, (Py_ssize_t)v->items.size(),
                           [&](Py_ssize_t i) {
                             return PyRef::steal(convert(v->items[i], arg.items[i], depth + 1));
                           })
          .release();
    }
    throw Refused{"an argument is neither a tensor of the graph nor a Python constant"};
  }

  PyObject *operand(const VarP &v, FallbackArg &arg) {
    mlir::Value value = v->value;
    arg.kind = FallbackArg::Kind::Operand;
    for (size_t i = 0; i < operands.size(); ++i)
      if (operands[i] == value) { // the same tensor passed twice stays one object
        arg.operand = (int)i;
        Py_INCREF(metas[i].get());
        return metas[i].get();
      }
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape())
      throw Refused{"a tensor argument has a symbolic (dynamic) size", BreakCategory::DynamicShape};
    PyRef meta = metaTensorOf(value);
    if (!meta)
      throw Refused{"cannot make a meta tensor for an argument"};
    arg.operand = (int)operands.size();
    operands.push_back(value);
    metas.push_back(meta);
    vars.push_back(v);
    Py_INCREF(meta.get());
    return meta.get();
  }
};

/// Collects the tensor Vars inside `v` with their current values.
void snapshotTensors(const VarP &v, std::vector<std::pair<VarP, mlir::Value>> &out, int depth = 0) {
  if (!v || depth > 4)
    return;
  if (v->isTensor())
    out.push_back({v, v->value});
  if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List)
    for (const VarP &item : v->items)
      snapshotTensors(item, out, depth + 1);
}

/// True when a tensor in `v` is batched by an enclosing torch.vmap: torch
/// would see its batch dims as ordinary dims (a reduction would reduce
/// them too), so such a call never falls back.
bool holdsVmapBatched(const VarP &v, int depth = 0) {
  if (!v || depth > 4)
    return false;
  if (v->isTensor())
    return v->vmapLevels > 0;
  if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List)
    for (const VarP &item : v->items)
      if (holdsVmapBatched(item, depth + 1))
        return true;
  return false;
}

/// What to do when `name` is one of the quantized ops of a model torch
/// quantized (kiln's capture has no quantized dtypes): the kiln.quant call
/// that rewrites such a model for kiln's int8 kernels; "" for other ops.
std::string quantizedModelHint(const std::string &name) {
  auto has = [&](const char *part) { return name.find(part) != std::string::npos; };
  if (has("quantized_decomposed"))
    return "a model PT2E converted: kiln.quant.from_pt2e(model) rewrites it for kiln's int8 "
           "kernels";
  if (has("linear_dynamic"))
    return "a model torch.ao's quantize_dynamic converted: kiln.quant.prepare(model, "
           "kiln.quant.dynamic_int8()) compiles its int8 layers";
  if (has("quantize_per_tensor") || has("quantized."))
    return "a model torch.ao's eager-mode static quantization converted: "
           "kiln.quant.from_torch_ao(model, example_inputs) rewrites it for kiln's int8 kernels";
  return "";
}

/// The name of torch function `fn` when torch.Tensor has a method of that
/// name (`torch.hsplit` -> "hsplit"; "" otherwise: `torch.atleast_2d`, or
/// `torch.real`, a property of tensors).
std::string sameNameMethod(PyObject *fn) {
  if (!fn)
    return "";
  PyRef name = PyRef::steal(PyObject_GetAttrString(fn, "__name__"));
  PyRef tensor = PyRef::steal(PyObject_GetAttrString(torchModule(), "Tensor"));
  PyRef method = name && tensor && PyUnicode_Check(name.get())
                     ? PyRef::steal(PyObject_GetAttr(tensor.get(), name.get()))
                     : PyRef();
  PyErr_Clear();
  if (!method || !PyCallable_Check(method.get()))
    return "";
  return PyUnicode_AsUTF8(name.get());
}

/// A fallback argument without tensors as a new Python object; null when
/// it holds an operand.
PyRef constantOf(const FallbackArg &a) {
  if (a.kind == FallbackArg::Kind::Constant)
    return copyLists(a.constant.get());
  if (a.kind == FallbackArg::Kind::Operand)
    return PyRef();
  return buildSequence(a.kind == FallbackArg::Kind::Tuple, (Py_ssize_t)a.items.size(),
                       [&](Py_ssize_t i) { return constantOf(a.items[i]); });
}

/// The results of a view op (kiln._fallback.view_plan: per result, the
/// operand it views and the flat positions it reads) as constant-index
/// gathers of the operands, each result a view of its operand's Var. A
/// Tensor method (or a torch function with a same-name Tensor method,
/// sameNameMethod) whose other arguments are constants also records the
/// call as a view step (and the result's index for several results), so a
/// returned view is rebuilt from (and aliases) its base as in eager; other
/// views are returned as copies (opaqueViews).
VarP viewsAsGathers(Interpreter &I, const FallbackCall &call, const ArgConverter &conv,
                    PyObject *views, const std::string &method, const std::vector<VarP> &args,
                    const std::map<std::string, VarP> &kwargs, PyObject *kind) {
  Emit e(I);
  std::vector<VarP> results;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(views); ++i) {
    PyObject *plan = PyTuple_GET_ITEM(views, i);
    int which = (int)PyLong_AsLong(PyTuple_GET_ITEM(plan, 0));
    PyObject *index = PyTuple_GET_ITEM(plan, 1);
    const VarP &in = conv.vars[which];
    Value src = conv.operands[which];
    DType dt = dtypeOf(ttype(src).getElementType());
    const std::vector<int64_t> &sizes = call.sizes[i];
    Value v;
    if (PyTuple_GET_SIZE(index) == 0) {
      v = e.splat(sizes, dt, 0);
    } else {
      std::vector<double> idx;
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(index); ++k)
        idx.push_back((double)PyLong_AsLongLong(PyTuple_GET_ITEM(index, k)));
      int64_t n = ttype(src).getNumElements();
      Value flat = e.reshape(src, {n});
      Value ix = e.dense({(int64_t)idx.size()}, DType::I64, idx);
      auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(0))};
      v = e.reshape(e.checked<mlir::kiln::GatherOp>({flat, ix}, attrs, call.name), sizes);
    }
    VarP r = makeTensor(v);
    r->fresh = false;
    bool methodStep = !method.empty() && which == 0 && !args.empty() && args[0] == in;
    PyRef pos = PyRef::steal(PyTuple_New(methodStep ? (Py_ssize_t)call.args.size() - 1 : 0));
    for (size_t k = 1; methodStep && k < call.args.size(); ++k) {
      PyRef c = constantOf(call.args[k]);
      methodStep = (bool)c;
      if (c)
        PyTuple_SET_ITEM(pos.get(), (Py_ssize_t)k - 1, c.release());
    }
    PyRef kw = call.kwargs.empty() ? PyRef() : PyRef::steal(PyDict_New());
    for (const auto &[key, a] : call.kwargs) {
      PyRef c = constantOf(a);
      methodStep = methodStep && c;
      if (c)
        PyDict_SetItem(kw.get(), key.get(), c.get());
    }
    if (methodStep)
      recordViewStep(in, r, {method, pos, kw});
    if (methodStep && call.tupleResult && !r->viewSteps.empty()) // result i of several
      r->viewSteps.push_back({"__getitem__", PyRef::steal(Py_BuildValue("(n)", i)), PyRef()});
    in->viewed = true;
    if (r->viewInput < 0 && !r->viewRoot)
      in->opaqueViews = true;
    r->viewBase = in;
    in->views.push_back(r);
    results.push_back(r);
  }
  (void)kwargs;
  if (!call.tupleResult)
    return results[0];
  VarP tuple = makeSeq(Var::Kind::Tuple, results);
  if (PyType_Check(kind))
    tuple->obj = PyRef::borrow(kind);
  return tuple;
}

} // namespace

PyRef metaTensorOf(mlir::Value value) {
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return PyRef();
  std::vector<int64_t> sizes(type.getShape().begin(), type.getShape().end());
  PyRef shape = PyRef::steal(intTuple(sizes));
  PyRef kwargs = PyRef::steal(Py_BuildValue(
      "{s:O,s:s}", "dtype", dtypeObject(dtypeOf(type.getElementType())), "device", "meta"));
  static PyOnce emptyOnce;
  PyObject *empty = emptyOnce.get([] { return PyObject_GetAttrString(torchModule(), "empty"); });
  PyRef args = shape ? PyRef::steal(PyTuple_Pack(1, shape.get())) : PyRef();
  PyRef meta =
      args && kwargs ? PyRef::steal(PyObject_Call(empty, args.get(), kwargs.get())) : PyRef();
  if (!meta)
    PyErr_Clear(); // the caller refuses without a meta tensor
  return meta;
}

bool Interpreter::isTorchOpFunction(PyObject *fn) {
  if (isOperatorObject(fn)) // torch.ops.<ns>.<op>[.<overload>] (AtenOps.cpp)
    return true;
  if (!PyCFunction_Check(fn) && !PyFunction_Check(fn))
    return false;
  PyRef mod = PyRef::steal(PyObject_GetAttrString(fn, "__module__"));
  PyErr_Clear();
  const char *m = mod && PyUnicode_Check(mod.get()) ? PyUnicode_AsUTF8(mod.get()) : nullptr;
  if (!m)
    return false;
  for (const char *ok :
       {"torch", "torch.functional", "torch.nn.functional", "torch._C._nn", "torch._C._special",
        "torch.special", "torch._C._fft", "torch.fft", "torch._C._linalg", "torch.linalg"})
    if (std::strcmp(m, ok) == 0)
      return true;
  return false;
}

VarP Interpreter::torchFallback(PyObject *fn, const std::string &method, std::vector<VarP> &args,
                                std::map<std::string, VarP> &kwargs, const Unsupported *original) {
  for (const VarP &a : args)
    if (holdsVmapBatched(a))
      return nullptr;
  for (auto &[k, v] : kwargs)
    if (holdsVmapBatched(v))
      return nullptr;
  PyRef callable;
  std::string name;
  if (!method.empty()) {
    static PyOnce tensorTypeOnce;
    PyObject *tensorType =
        tensorTypeOnce.get([] { return PyObject_GetAttrString(torchModule(), "Tensor"); });
    callable = PyRef::steal(PyObject_GetAttrString(tensorType, method.c_str()));
    PyErr_Clear();
    name = "Tensor." + method;
    if (!callable || args.empty() || !args[0]->isTensor())
      return nullptr;
  } else {
    // kiln._random.seeded wrappers: a random torch call on a seeded generator;
    // kiln's own pure torch references marked `kiln_fallback` (an fp8 layer
    // in a CPU graph, kiln.quant._ops.linear_fp8).
    auto marked = [&](const char *attr) {
      PyRef flag = PyRef::steal(PyObject_GetAttrString(fn, attr));
      PyErr_Clear();
      return flag && PyObject_IsTrue(flag.get()) == 1;
    };
    if (!isTorchOpFunction(fn) && !marked("kiln_random") && !marked("kiln_fallback"))
      return nullptr;
    callable = PyRef::borrow(fn);
    static PyOnce qualifiedOnce;
    PyObject *qualified = qualifiedOnce.get([] { return fallbackHelper("qualified_name"); });
    PyRef n = qualified ? PyRef::steal(PyObject_CallOneArg(qualified, fn)) : PyRef();
    name = n && PyUnicode_Check(n.get()) ? PyUnicode_AsUTF8(n.get()) : pyText(fn);
    PyErr_Clear();
  }
  FallbackCall call;
  call.name = name;
  call.callable = callable;
  if (auto fl = llvm::dyn_cast<mlir::FileLineColLoc>(loc_))
    call.location = fl.getFilename().str() + ":" + std::to_string(fl.getLine());
  ArgConverter conv{*this, {}, {}};
  Refused refused;
  PyRef probeResult;
  try {
    if (autocastEntry(*this).enabled || autocastCurrent(*this).enabled)
      throw Refused{"torch.autocast is on: the call through torch would apply autocast's casts "
                    "that the meta run does not see"};
    call.args.resize(args.size());
    PyRef metaArgs = PyRef::steal(PyTuple_New((Py_ssize_t)args.size()));
    for (size_t i = 0; i < args.size(); ++i)
      PyTuple_SET_ITEM(metaArgs.get(), (Py_ssize_t)i, conv.convert(args[i], call.args[i]));
    PyRef metaKwargs = PyRef::steal(PyDict_New());
    for (auto &[k, v] : kwargs) {
      PyRef key = PyRef::steal(PyUnicode_FromString(k.c_str()));
      call.kwargs.push_back({key, FallbackArg()});
      PyRef value = PyRef::steal(conv.convert(v, call.kwargs.back().second));
      PyDict_SetItem(metaKwargs.get(), key.get(), value.get());
    }
    if (conv.operands.empty())
      throw Refused{"it has no tensor argument"};
    PyRef tensors = PyRef::steal(PyTuple_New((Py_ssize_t)conv.metas.size()));
    for (size_t i = 0; i < conv.metas.size(); ++i)
      PyTuple_SET_ITEM(tensors.get(), (Py_ssize_t)i, PyRef(conv.metas[i]).release());
    static PyOnce probeOnce;
    PyObject *probe = probeOnce.get([] { return fallbackHelper("probe"); });
    if (!probe)
      throw Refused{"kiln._fallback is missing"};
    PyRef layouts = PyRef::steal(PyTuple_New((Py_ssize_t)conv.vars.size()));
    for (size_t i = 0; i < conv.vars.size(); ++i) {
      PyRef lay = layoutRecipe(conv.vars[i]);
      PyTuple_SET_ITEM(layouts.get(), (Py_ssize_t)i,
                       (lay ? lay : PyRef::borrow(Py_None)).release());
    }
    probeResult = PyRef::steal(PyObject_CallFunctionObjArgs(probe, callable.get(), metaArgs.get(),
                                                            metaKwargs.get(), tensors.get(),
                                                            layouts.get(), nullptr));
    if (!probeResult)
      throw Refused{withPythonError("the meta run failed")};
    if (!PyTuple_CheckExact(probeResult.get())) // a kiln._fallback.Refusal
      throw refusalOf(probeResult.get());
    call.tupleResult = PyObject_IsTrue(PyTuple_GET_ITEM(probeResult.get(), 0)) == 1;
    PyObject *metas = PyTuple_GET_ITEM(probeResult.get(), 1);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(metas); ++i) {
      PyObject *m = PyTuple_GET_ITEM(metas, i);
      PyObject *dtype = PyTuple_GET_ITEM(m, 1);
      auto d = dtypeFromObject(dtype);
      if (!d)
        throw Refused{"it returns a " + pyText(dtype) + " tensor (a dtype kiln does not support)"};
      std::vector<int64_t> sizes;
      PyObject *shape = PyTuple_GET_ITEM(m, 0);
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(shape); ++k)
        sizes.push_back(PyLong_AsLongLong(PyTuple_GET_ITEM(shape, k)));
      call.sizes.push_back(sizes);
      call.dtypes.push_back(dtypeObject(*d));
    }
  } catch (const Refused &r) {
    refused = r;
  }
  if (!refused.why.empty()) {
    // The one place an unmapped (or refused) torch call becomes a graph break.
    std::string msg = name +
                      " has no kiln lowering and cannot run through torch inside the "
                      "graph: " +
                      refused.why;
    bool classified = original && original->category != BreakCategory::Other;
    std::string hint = original ? original->hint : "";
    throw Unsupported(classified ? original->category : refused.category,
                      original ? std::string(original->what()) + " (" + msg + ")" : msg,
                      hint.empty() ? quantizedModelHint(name) : hint);
  }
  PyObject *views = PyTuple_GET_ITEM(probeResult.get(), 2);
  if (views != Py_None)
    return viewsAsGathers(*this, call, conv, views, method.empty() ? sameNameMethod(fn) : method,
                          args, kwargs, PyTuple_GET_ITEM(probeResult.get(), 0));
  // The IR: a declaration per call, called with the tensor operands.
  std::string callee = "kiln_fallback_" + std::to_string(out_.fallbacks.size());
  llvm::SmallVector<mlir::Type> operandTypes, resultTypes;
  for (mlir::Value v : conv.operands)
    operandTypes.push_back(v.getType());
  for (size_t i = 0; i < call.sizes.size(); ++i)
    resultTypes.push_back(mlir::RankedTensorType::get(
        call.sizes[i], elementType(ctx_, *dtypeFromObject(call.dtypes[i]))));
  mlir::OpBuilder decl(&ctx_);
  decl.setInsertionPointToEnd(out_.module->getBody());
  auto fnType = decl.getFunctionType(operandTypes, resultTypes);
  auto declOp = decl.create<mlir::func::FuncOp>(loc_, callee, fnType);
  declOp.setPrivate();
  declOp->setAttr("kiln.torch_op", decl.getStringAttr(call.signature()));
  auto op = b_.create<mlir::func::CallOp>(loc_, callee, resultTypes, conv.operands);
  out_.fallbacks.push_back(std::move(call));
  std::vector<VarP> results;
  for (mlir::Value r : op.getResults()) {
    VarP t = makeTensor(r);
    t->fresh = true; // a new tensor (aliasing results were refused)
    results.push_back(t);
  }
  if (out_.fallbacks.back().tupleResult) {
    VarP tuple = makeSeq(Var::Kind::Tuple, results);
    PyObject *kind = PyTuple_GET_ITEM(probeResult.get(), 0); // a torch.return_types class, or True
    if (PyType_Check(kind))
      tuple->obj = PyRef::borrow(kind);
    return tuple;
  }
  return results[0];
}

VarP Interpreter::withFallback(PyObject *fn, const std::string &method, std::vector<VarP> &args,
                               std::map<std::string, VarP> &kwargs,
                               const std::function<VarP()> &attempt) {
  std::vector<VarP> argsCopy = args;
  std::map<std::string, VarP> kwargsCopy = kwargs;
  std::vector<std::pair<VarP, mlir::Value>> snapshot;
  for (const VarP &a : args)
    snapshotTensors(a, snapshot);
  for (auto &[k, v] : kwargs)
    snapshotTensors(v, snapshot);
  int depth = depth_;
  mlir::Location loc = loc_;
  bool grad = gradMode_;
  auto exits = gradExits_;
  try {
    return attempt();
  } catch (const Unsupported &raised) {
    // An exception raised inside kiln's mapping of a torch call is none of
    // the user's code: no handler of the frames may catch it.
    Unsupported e(raised.category, raised.what(), raised.hint);
    e.resumable = raised.resumable;
    // The attempt may have emitted ops before it failed: they stay, dead.
    // If it rebound an argument (an in-place update), the call cannot be
    // replayed on the original values: the failure stands.
    for (auto &[var, value] : snapshot)
      if (var->value != value)
        throw e;
    depth_ = depth;
    loc_ = loc;
    gradMode_ = grad;
    noteGradMode();
    gradExits_ = exits;
    if (VarP r = torchFallback(fn, method, argsCopy, kwargsCopy, &e))
      return r;
    throw e;
  }
}

} // namespace kiln

//===- AtenOps.cpp - torch.ops.<ns>.<op> calls in captured code ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Applies kiln/_aten.py's plan for an operator object: a packet is first
// resolved to the overload torch would pick (its arguments on meta
// tensors); "inline" calls the overload's torch-level target through the
// interpreter (mapped ops, the overload table, torch._decomp) and checks
// the result's sizes and dtypes against the overload's meta kernel;
// "trusted" calls a table entry whose overload's meta kernel disagrees
// with eager's CPU kernel (no check, no fallback); "out" computes an out=
// overload's functional overload and stores it into `out`;
// "method" calls a Tensor method of the same name on the first argument;
// "fallback" runs the overload itself through the per-op fallback
// (Fallback.cpp), as does an inline target that breaks or disagrees;
// "break" is a graph break naming the overload.
//===----------------------------------------------------------------------===//
#include "capture/ops/AtenOps.h"
#include "GilOnce.h"
#include "PySequence.h"
#include "capture/ops/TorchOpsImpl.h"

namespace kiln {
namespace {

/// `kiln._aten.<name>` (kept for the process; null when missing).
PyObject *atenHelper(const char *name) {
  PyRef mod = PyRef::steal(PyImport_ImportModule("kiln._aten"));
  PyObject *fn = mod ? PyObject_GetAttrString(mod.get(), name) : nullptr;
  if (!fn)
    PyErr_Clear();
  return fn;
}

/// `v` as torch's meta run sees it (a graph tensor as an empty meta tensor,
/// a Scalar as 1 of its type); null when it cannot stand in.
PyRef metaArgument(const VarP &v, int depth = 0) {
  if (v->isTensor())
    return metaTensorOf(v->value);
  if (v->isConst())
    return v->obj;
  if (v->kind == Var::Kind::Scalar)
    return PyRef::steal(PyObject_CallOneArg(v->obj.get(), PyRef::steal(PyLong_FromLong(1)).get()));
  if ((v->kind != Var::Kind::Tuple && v->kind != Var::Kind::List) || depth > 4)
    return PyRef();
  return buildSequence(v->kind == Var::Kind::Tuple, (Py_ssize_t)v->items.size(),
                       [&](Py_ssize_t i) { return metaArgument(v->items[i], depth + 1); });
}

/// The call's arguments on meta tensors; false when one cannot stand in.
bool metaArguments(const std::vector<VarP> &args, const std::map<std::string, VarP> &kwargs,
                   PyRef &tuple, PyRef &dict) {
  tuple = PyRef::steal(PyTuple_New((Py_ssize_t)args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    PyRef a = metaArgument(args[i]);
    if (!a) {
      PyErr_Clear();
      return false;
    }
    PyTuple_SET_ITEM(tuple.get(), (Py_ssize_t)i, a.release());
  }
  dict = PyRef::steal(PyDict_New());
  for (const auto &[k, v] : kwargs) {
    PyRef a = metaArgument(v);
    if (!a) {
      PyErr_Clear();
      return false;
    }
    PyDict_SetItemString(dict.get(), k.c_str(), a.get());
  }
  return true;
}

/// Whether graph value `r` matches the meta result `expected` ((sizes,
/// dtype) or None); a symbolic dim matches any size.
bool matchesMeta(const VarP &r, PyObject *expected) {
  if (expected == Py_None || !r->isTensor())
    return expected == Py_None || !r->isTensor();
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(r->value.getType());
  PyObject *shape = PyTuple_GET_ITEM(expected, 0);
  if (!type || PyTuple_GET_SIZE(shape) != type.getRank())
    return false;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!type.isDynamicDim(d) &&
        type.getDimSize(d) != PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d)))
      return false;
  std::optional<DType> dt = dtypeFromObject(PyTuple_GET_ITEM(expected, 1));
  return dt && *dt == dtypeOf(type.getElementType());
}

/// Throws Unsupported when `r` disagrees with the overload's meta result.
void checkAgainstMeta(const std::string &name, const VarP &r, PyObject *expected) {
  if (!expected || expected == Py_None || !r)
    return;
  Py_ssize_t n = PyTuple_GET_SIZE(expected);
  bool ok;
  if (r->kind == Var::Kind::Tuple || r->kind == Var::Kind::List) {
    ok = (Py_ssize_t)r->items.size() == n;
    for (Py_ssize_t i = 0; ok && i < n; ++i)
      ok = matchesMeta(r->items[i], PyTuple_GET_ITEM(expected, i));
  } else {
    ok = n == 1 && matchesMeta(r, PyTuple_GET_ITEM(expected, 0));
  }
  if (!ok)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "the torch-level form of " + name +
                          " gives other sizes or dtypes than the overload's meta kernel");
}

/// Removes keywords whose constant value is a schema default the
/// torch-level target need not see (`drops`: ((name, value), ...)).
void dropDefaults(std::map<std::string, VarP> &kwargs, PyObject *drops) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(drops); ++i) {
    PyObject *pair = PyTuple_GET_ITEM(drops, i);
    auto it = kwargs.find(PyUnicode_AsUTF8(PyTuple_GET_ITEM(pair, 0)));
    if (it == kwargs.end() || !it->second->isConst())
      continue;
    PyObject *value = it->second->obj.get(), *dflt = PyTuple_GET_ITEM(pair, 1);
    bool same =
        value == dflt || (dflt != Py_None && value != Py_None && Py_TYPE(value) == Py_TYPE(dflt) &&
                          PyObject_RichCompareBool(value, dflt, Py_EQ) == 1);
    PyErr_Clear();
    if (same)
      kwargs.erase(it);
  }
}

/// The overload a packet call selects (`fn` itself for an overload); the
/// packet when no overload can be told (the fallback then runs the packet).
PyRef selectOverload(PyObject *fn, const std::vector<VarP> &args,
                     const std::map<std::string, VarP> &kwargs, PyObject *metaArgs,
                     PyObject *metaKwargs) {
  static PyOnce asOpOnce, resolveOnce;
  PyObject *asOp = asOpOnce.get([] { return atenHelper("as_overload"); });
  PyRef op = asOp ? PyRef::steal(PyObject_CallOneArg(asOp, fn)) : PyRef();
  if (!op || op.get() == Py_None) {
    PyErr_Clear();
    return PyRef::borrow(fn);
  }
  static PyOnce packetTypeOnce;
  PyObject *packetType = packetTypeOnce.get([] {
    PyRef ops = PyRef::steal(PyImport_ImportModule("torch._ops"));
    return ops ? PyObject_GetAttrString(ops.get(), "OpOverloadPacket") : nullptr;
  });
  if (!packetType || !PyObject_TypeCheck(op.get(), (PyTypeObject *)packetType) || !metaArgs)
    return op;
  PyObject *resolve = resolveOnce.get([] { return atenHelper("resolve_packet"); });
  PyRef r = resolve ? PyRef::steal(PyObject_CallFunctionObjArgs(resolve, op.get(), metaArgs,
                                                                metaKwargs, nullptr))
                    : PyRef();
  PyErr_Clear();
  return r && r.get() != Py_None ? r : op;
}

} // namespace

/// `name`(..., out=t), an out= overload: `functional` (its overload without
/// `out`) applied, then stored into t as Tensor.copy_ would (InPlace.cpp).
static VarP callOutVariant(Interpreter &I, const std::string &name, PyObject *functional,
                           std::vector<VarP> &args, std::map<std::string, VarP> &kwargs,
                           const CallTarget &callTarget) {
  VarP out = Interpreter::takeOutArgument(kwargs);
  VarP r = callTorchOp(I, functional, args, kwargs, callTarget);
  if (!out)
    return r;
  if (!r || !r->isTensor())
    throw Unsupported(BreakCategory::UnsupportedOp, name + " of several results");
  return I.assignInPlace(out, r->value, name);
}

bool isOperatorObject(PyObject *fn) {
  static PyOnce typesOnce;
  PyObject *types = typesOnce.get([] { return atenHelper("OPERATOR_TYPES"); });
  int r = types ? PyObject_IsInstance(fn, types) : 0;
  PyErr_Clear();
  return r == 1;
}

/// The torch-level target of an "inline", "trusted" or "method" plan applied
/// (Tensor method `target` on the first argument for "method"); an inline
/// result is checked against the overload's meta kernel (`expected`), and
/// the overload runs through the fallback when the target breaks.
static VarP callTarget(Interpreter &I, const std::string &how, const std::string &name,
                       PyObject *op, PyObject *target, PyObject *drops, PyObject *expected,
                       std::vector<VarP> &args, std::map<std::string, VarP> &kwargs,
                       const CallTarget &call) {
  auto attempt = [&] {
    std::vector<VarP> targetArgs = args;
    std::map<std::string, VarP> targetKwargs = kwargs;
    dropDefaults(targetKwargs, drops);
    if (how != "method")
      return call(target, targetArgs, targetKwargs);
    if (targetArgs.empty() || !targetArgs[0]->isTensor())
      throw Unsupported(BreakCategory::UnsupportedOp, name + " without a tensor self");
    VarP self = targetArgs[0];
    targetArgs.erase(targetArgs.begin());
    return I.callTensorMethod(self, pyText(target), targetArgs, targetKwargs);
  };
  if (how == "trusted") // its meta kernel disagrees with eager's: no check, no fallback
    return attempt();
  return I.withFallback(op, "", args, kwargs, [&] {
    VarP r = attempt();
    checkAgainstMeta(name, r, expected);
    return r;
  });
}

VarP callTorchOp(Interpreter &I, PyObject *fn, std::vector<VarP> &args,
                 std::map<std::string, VarP> &kwargs, const CallTarget &call) {
  if (!isOperatorObject(fn))
    return nullptr;
  PyRef metaArgs, metaKwargs;
  bool haveMeta = metaArguments(args, kwargs, metaArgs, metaKwargs);
  PyRef op =
      selectOverload(fn, args, kwargs, haveMeta ? metaArgs.get() : nullptr, metaKwargs.get());
  std::string name = pyText(op.get());
  static PyOnce planOnce, metaOnce;
  PyObject *planFn = planOnce.get([] { return atenHelper("plan"); });
  PyRef plan = planFn ? PyRef::steal(PyObject_CallOneArg(planFn, op.get())) : PyRef();
  if (!plan || !PyTuple_Check(plan.get()) || PyTuple_GET_SIZE(plan.get()) != 4)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      withPythonError("kiln._aten.plan failed for " + name));
  std::string how = PyUnicode_AsUTF8(PyTuple_GET_ITEM(plan.get(), 0));
  PyObject *target = PyTuple_GET_ITEM(plan.get(), 1);
  if (how == "break")
    throw Unsupported(breakCategoryFromName(pyText(PyTuple_GET_ITEM(target, 0))),
                      "call to " + name + ": " + pyText(PyTuple_GET_ITEM(target, 1)));
  if (how == "out") // aten.X.out(..., out=t): the functional overload, stored into t
    return callOutVariant(I, name, target, args, kwargs, call);
  VarP r;
  if (how == "fallback") {
    Unsupported unlowered(BreakCategory::UnsupportedOp, name + " has no kiln lowering");
    r = I.torchFallback(op.get(), "", args, kwargs, &unlowered);
    if (!r)
      throw unlowered;
  } else {
    PyObject *metaFn = metaOnce.get([] { return atenHelper("meta_result"); });
    PyRef expected = haveMeta && metaFn && how == "inline"
                         ? PyRef::steal(PyObject_CallFunctionObjArgs(
                               metaFn, op.get(), metaArgs.get(), metaKwargs.get(), nullptr))
                         : PyRef();
    PyErr_Clear();
    r = callTarget(I, how, name, op.get(), target, PyTuple_GET_ITEM(plan.get(), 2), expected.get(),
                   args, kwargs, call);
  }
  // An overload returning Tensor[] or int[] gives a list in eager
  // (torch.split a tuple, Tensor.size() a torch.Size).
  if (!r || PyTuple_GET_ITEM(plan.get(), 3) != Py_True)
    return r;
  if (r->kind == Var::Kind::Tuple)
    return makeSeq(Var::Kind::List, r->items);
  if (r->isConst() && PyTuple_Check(r->obj.get())) {
    std::vector<VarP> items;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r->obj.get()); ++i)
      items.push_back(makeConst(PyRef::borrow(PyTuple_GET_ITEM(r->obj.get(), i))));
    return makeSeq(Var::Kind::List, items);
  }
  return r;
}

} // namespace kiln

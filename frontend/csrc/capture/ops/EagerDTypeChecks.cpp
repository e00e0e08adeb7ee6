//===- EagerDTypeChecks.cpp - ops eager refuses for bool/integer inputs ----===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln's lowering of an op is often defined for every dtype while eager's
// kernels are not: `-b`, `abs`, `relu`, `floor`, `round`, `frac`, `addcmul`
// on a bool tensor, `frac` on an integer one raise in eager
// (NotImplementedError "... not implemented for 'Bool'", RuntimeError
// "... not supported"). A compiled program must raise where eager does, so
// a call of a mapped op with a bool or integer tensor argument is tried
// once at capture on one-element tensors of the same dtypes and ranks;
// where eager refuses their dtypes the call is a user-error break and the
// eager frame raises it. Only an error about dtypes is a verdict (sizes
// differ from the real call's); random, view, query and composite ops are
// not tried.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

namespace kiln {

using namespace mlir::kiln;

namespace {

/// Draws from torch's generator (trying it would advance the stream).
bool random(const std::string &name) {
  for (const char *word : {"rand", "bernoulli", "multinomial", "dropout", "normal", "uniform",
                           "poisson", "exponential", "cauchy", "geometric", "random"})
    if (name.find(word) != std::string::npos)
      return true;
  return false;
}

/// `v` as the one-element stand-in the check calls eager with; null when
/// it cannot stand in (a container, a symbolic size, a dynamic shape).
PyRef standIn(const VarP &v, bool &narrowDType) {
  if (v->isConst())
    return v->obj;
  if (v->kind == Var::Kind::Scalar)
    return PyRef::steal(PyObject_CallOneArg(v->obj.get(), PyRef::steal(PyLong_FromLong(1)).get()));
  if (!v->isTensor())
    return PyRef();
  auto type = ttype(v->value);
  DType d = dtypeOf(type.getElementType());
  narrowDType |= !isFloatingDType(d);
  PyRef sizes = PyRef::steal(PyTuple_New(type.getRank()));
  for (int64_t i = 0; i < type.getRank(); ++i)
    PyTuple_SET_ITEM(sizes.get(), i, PyLong_FromLong(1));
  PyRef kw = PyRef::steal(PyDict_New());
  PyDict_SetItemString(kw.get(), "dtype", dtypeObject(d));
  PyRef ones = PyRef::steal(PyObject_GetAttrString(torchModule(), "ones"));
  PyRef args = PyRef::steal(PyTuple_Pack(1, sizes.get()));
  return ones ? PyRef::steal(PyObject_Call(ones.get(), args.get(), kw.get())) : PyRef();
}

/// Whether the pending Python error says eager has no kernel for a dtype.
bool dtypeRefusal(std::string &text) {
  bool kind = PyErr_ExceptionMatches(PyExc_NotImplementedError) ||
              PyErr_ExceptionMatches(PyExc_RuntimeError);
  text = takePythonErrorText();
  if (!kind)
    return false;
  std::string lower = text;
  for (char &c : lower)
    c = (char)std::tolower((unsigned char)c);
  return text.find("not implemented for '") != std::string::npos ||
         (lower.find("not supported") != std::string::npos &&
          (lower.find("bool") != std::string::npos || lower.find("integ") != std::string::npos));
}

} // namespace

void checkEagerAcceptsDTypes(PyObject *callee, const std::string &method, const OpDef &op,
                             const std::vector<VarP> &args,
                             const std::map<std::string, VarP> &kwargs) {
  if (op.is(View) || op.is(Query) || op.is(Composite))
    return;
  std::string name = method;
  if (callee) {
    PyRef n = PyRef::steal(PyObject_GetAttrString(callee, "__name__"));
    PyErr_Clear();
    name = n && PyUnicode_Check(n.get()) ? pyText(n.get()) : "";
  }
  if (name.empty() || random(name) || random(op.name))
    return;
  bool narrow = false;
  PyRef tuple = PyRef::steal(PyTuple_New(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    PyRef a = standIn(args[i], narrow);
    if (!a)
      return PyErr_Clear();
    PyTuple_SET_ITEM(tuple.get(), i, a.release());
  }
  PyRef kw = PyRef::steal(PyDict_New());
  for (const auto &[key, value] : kwargs) {
    PyRef a = standIn(value, narrow);
    if (!a)
      return PyErr_Clear();
    PyDict_SetItemString(kw.get(), key.c_str(), a.get());
  }
  if (!narrow) // float tensors only: kiln's dtype rules are eager's
    return;
  PyRef fn;
  if (callee) {
    fn = PyRef::borrow(callee);
  } else { // a method: bound to the stand-in of self
    if (args.empty())
      return;
    fn = PyRef::steal(PyObject_GetAttrString(PyTuple_GET_ITEM(tuple.get(), 0), method.c_str()));
    PyRef rest = PyRef::steal(PyTuple_GetSlice(tuple.get(), 1, PyTuple_GET_SIZE(tuple.get())));
    tuple = rest;
  }
  if (!fn || !tuple)
    return PyErr_Clear();
  PyRef r = PyRef::steal(PyObject_Call(fn.get(), tuple.get(), kw.get()));
  if (r)
    return;
  std::string text;
  if (dtypeRefusal(text))
    throw Unsupported(BreakCategory::UserError,
                      (callee ? pyText(callee) : "Tensor." + method) +
                          " refuses these dtypes in eager: " + text,
                      hint::kRaisesInEager);
}

} // namespace kiln

//===- TensorSetItem.cpp - `x[index] = value` on a tensor, functionalized ---===//
// SPDX-License-Identifier: Apache-2.0
//
// Index assignment computes the whole new tensor and assigns it in place
// (assignInPlace, InPlace.cpp: a computed tensor is rebound, the caller's
// tensor is also written back after the graph):
//  - a constant index (ints, slices, None, Ellipsis, lists of ints): torch
//    itself, run at capture on an index grid of x's static shape, says which
//    elements the assignment writes and which element of the (broadcast)
//    value each one gets; the graph selects between x and the value gathered
//    at those positions (two constants of x's size);
//  - a bool mask tensor of x's shape and a scalar (or 0-d) value:
//    `where(mask, value, x)` (the `x[x < 0] = 0` idiom).
// Other indices (integer tensors, masks with a non-scalar value, symbolic
// sizes) are graph breaks of category side-effect.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

namespace kiln {

namespace {

/// Largest tensor an index assignment builds its constants for.
constexpr int64_t kMaxSetItemElements = int64_t(1) << 20;

/// A new reference to `torch.<name>(*args)`, or Unsupported naming `what`.
PyRef torchCall(const char *name, PyObject *args, const std::string &what) {
  PyRef fn = PyRef::steal(PyObject_GetAttrString(torchModule(), name));
  PyRef r = fn ? PyRef::steal(PyObject_Call(fn.get(), args, nullptr)) : PyRef();
  if (!r)
    throw Unsupported(BreakCategory::UserError, withPythonError(what), hint::kRaisesInEager);
  return r;
}

/// The ints of 1-D int64 tensor `t` (a capture-time torch tensor).
std::vector<double> tensorValues(PyObject *t) {
  PyRef list = PyRef::steal(PyObject_CallMethod(t, "tolist", nullptr));
  if (!list || !PyList_Check(list.get()))
    throw Unsupported(BreakCategory::Other, withPythonError("index assignment: tolist failed"));
  std::vector<double> out;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.get()); ++i)
    out.push_back((double)PyLong_AsLongLong(PyList_GET_ITEM(list.get(), i)));
  return out;
}

} // namespace

VarP Interpreter::tensorSetItem(const VarP &x, const VarP &index, const VarP &value) {
  const std::string what = "index assignment x[...] = v";
  auto type = ttype(x->value);
  DType dt = dtypeOf(type.getElementType());
  bool scalarValue = !value->isTensor() || ttype(value->value).getRank() == 0;
  if (!value->isTensor() && !(value->isConst() && scalarCategory(value->obj.get())))
    throw Unsupported(BreakCategory::SideEffect,
                      what + " of a value that is not a tensor or number");
  Emit e(*this);
  // `x[i] = x[i]` read through the same index (the store of `x[i] += v`):
  // that view receives the update, so it does not forbid it.
  const Var *except = nullptr;
  if (value->itemOf == x && index->isConst() &&
      PyObject_RichCompareBool(value->itemIndex.get(), index->obj.get(), Py_EQ) == 1)
    except = value.get();
  PyErr_Clear();
  if (index->isTensor()) {
    auto it = ttype(index->value);
    if (!it.getElementType().isInteger(1) || it.getShape() != type.getShape() || !scalarValue)
      throw Unsupported(BreakCategory::SideEffect,
                        what + " with a tensor index is supported for a bool mask of the "
                               "tensor's shape and a scalar value");
    Value v = e.operand(value, dt);
    return assignInPlace(x, e.select(index->value, v, x->value), what, except);
  }
  PyRef idx = index->isConst() ? index->obj : seqAsConst(index);
  if (!idx)
    throw Unsupported(BreakCategory::SideEffect, what + " with an index that is not constant");
  if (!type.hasStaticShape())
    throw Unsupported(BreakCategory::DynamicShape, what + " on a tensor of symbolic shape");
  int64_t n = type.getNumElements();
  if (n > kMaxSetItemElements)
    throw Unsupported(BreakCategory::SideEffect, what + " on a tensor of more than 2^20 elements");
  // grid[index]: the flat positions the assignment writes, in the value's
  // (broadcast) layout.
  PyRef shape = PyRef::steal(intTuple(std::vector<int64_t>(type.getShape())));
  PyRef nArg = PyRef::steal(Py_BuildValue("(L)", (long long)n));
  PyRef grid = torchCall("arange", nArg.get(), what);
  grid = PyRef::steal(PyObject_CallMethod(grid.get(), "reshape", "O", shape.get()));
  PyRef picked = grid ? PyRef::steal(PyObject_GetItem(grid.get(), idx.get())) : PyRef();
  if (!picked)
    throw Unsupported(BreakCategory::UserError, withPythonError(what + ": invalid index"),
                      hint::kRaisesInEager);
  PyRef regionShape = PyRef::steal(PyObject_GetAttrString(picked.get(), "shape"));
  PyRef flat = PyRef::steal(PyObject_CallMethod(picked.get(), "reshape", "(i)", -1));
  if (!regionShape || !flat)
    throw Unsupported(BreakCategory::Other, withPythonError(what));
  std::vector<double> positions = tensorValues(flat.get());
  if (positions.empty()) // writes nothing (eager still bumps the version)
    return assignInPlace(x, x->value, what, except);
  // Per element of x: written or kept, and which value element it takes.
  std::vector<double> mask(n, 0.0), source(n, 0.0);
  for (size_t k = 0; k < positions.size(); ++k) {
    mask[(size_t)positions[k]] = 1.0;
    source[(size_t)positions[k]] = (double)k; // a repeated position: the last write wins
  }
  Value maskC = e.dense(type.getShape(), DType::Bool, mask);
  Value updated;
  if (scalarValue) {
    updated = e.operand(value, dt);
  } else {
    // The value broadcast to the region, flattened, gathered per element.
    std::vector<int64_t> region;
    for (Py_ssize_t i = 0; i < PyTuple_Size(regionShape.get()); ++i)
      region.push_back(PyLong_AsLongLong(PyTuple_GetItem(regionShape.get(), i)));
    VarP v = makeTensor(e.cast(value->value, dt));
    VarP expanded = callOp(*this, "expand", {{"input", v}, {"size", constIntTuple(region)}});
    Value line = e.reshape(expanded->value, {(int64_t)positions.size()});
    VarP gathered = callOp(*this, "gather",
                           {{"input", makeTensor(line)},
                            {"dim", constInt(0)},
                            {"index", makeTensor(e.dense({n}, DType::I64, source))}});
    updated = e.reshape(gathered->value, type.getShape());
  }
  return assignInPlace(x, e.select(maskC, updated, x->value), what, except);
}

} // namespace kiln

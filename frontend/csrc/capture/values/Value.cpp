//===- Value.cpp - the symbolic interpreter's abstract values -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Value.h: Var constructors, dicts built in the frame (keys are
// Python constants compared with ==), and constant tuples/lists of Vars.
// Ownership: Vars hold new references (PyRef); borrowed arguments are
// borrowed for the call only.
//===----------------------------------------------------------------------===//
#include "capture/values/Value.h"
#include "capture/values/EagerLayouts.h"

#include "mlir/IR/Operation.h"
#include "capture/interp/PlainObjects.h"

#include "capture/breaks/GraphBreak.h"
#include "PySequence.h"

namespace kiln {

VarP makeConst(PyRef obj, int source) {
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::Const;
  v->obj = std::move(obj);
  v->source = source;
  return v;
}

VarP makeTensor(mlir::Value value) {
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::Tensor;
  v->value = value;
  return v;
}

VarP makeScalar(mlir::Value value, PyObject *type) {
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::Scalar;
  v->scalar = value;
  v->obj = PyRef::borrow(type);
  return v;
}

VarP makeSeq(Var::Kind kind, std::vector<VarP> items) {
  auto v = std::make_shared<Var>();
  v->kind = kind;
  v->items = std::move(items);
  return v;
}

int dictFind(const VarP &d, PyObject *key) {
  pinPlainObject(key, "it is a dict key"); // hashed, compared with ==
  for (size_t i = 0; i < d->keys.size(); ++i) {
    int eq = PyObject_RichCompareBool(d->keys[i].get(), key, Py_EQ);
    if (eq < 0)
      PyErr_Clear();
    if (eq == 1)
      return static_cast<int>(i);
  }
  return -1;
}

void dictSet(const VarP &d, PyObject *key, VarP value) {
  if (PyObject_Hash(key) == -1) {
    PyErr_Clear();
    throw Unsupported("unhashable dict key");
  }
  int at = dictFind(d, key);
  if (at >= 0) {
    d->items[at] = std::move(value);
  } else {
    d->keys.push_back(PyRef::borrow(key));
    d->items.push_back(std::move(value));
  }
}

VarP dictPop(const VarP &d, const std::vector<VarP> &args,
             const std::map<std::string, VarP> &kwargs) {
  if (args.empty() || args.size() > 2 || !kwargs.empty())
    throw Unsupported("dict.pop takes one or two arguments");
  int at = dictFind(d, constObj(args[0], "dict key"));
  if (at < 0) {
    if (args.size() == 1) // a try/except of the frames may catch it (Exceptions.cpp)
      raiseNew(PyExc_KeyError, args[0]->obj.get(), "KeyError in a dict built by the compiled code");
    return args[1];
  }
  VarP v = d->items[at];
  d->keys.erase(d->keys.begin() + at);
  d->items.erase(d->items.begin() + at);
  return v;
}

PyRef seqAsConst(const VarP &v, int depth) {
  if (v->isConst())
    return v->obj;
  if ((v->kind != Var::Kind::Tuple && v->kind != Var::Kind::List) || depth > 8)
    return PyRef();
  return buildSequence(v->kind == Var::Kind::Tuple, (Py_ssize_t)v->items.size(),
                       [&](Py_ssize_t i) { return seqAsConst(v->items[i], depth + 1); });
}

namespace {
/// `v` seen through `contiguous()` (an identity cast marked kContiguousAttr):
/// the tensor it is the same object as where eager's strides allow.
mlir::Value throughContiguous(mlir::Value v) {
  while (mlir::Operation *op = v ? v.getDefiningOp() : nullptr) {
    if (!op->hasAttr(kContiguousAttr) || op->getNumOperands() != 1)
      break;
    v = op->getOperand(0);
  }
  return v;
}
} // namespace

int sameTensorIdentity(const VarP &a, const VarP &b, const char **why) {
  if (a == b)
    return 1;
  if (a->inputIndex >= 0 && b->inputIndex >= 0 && a->inputIndex != b->inputIndex) {
    // Two tensors the caller passed (or kiln read from the frame): one
    // object or two is the caller's choice per call (f(t, t)).
    *why = "two input tensors: whether they are one object is the caller's choice per call";
    return -1;
  }
  if (throughContiguous(a->value) != throughContiguous(b->value))
    return 0;
  if (a->selfIfContiguous || b->selfIfContiguous) {
    *why = "a tensor and its contiguous(): eager answers by its strides";
    return -1;
  }
  return !(a->viewBase || b->viewBase || a->copied || b->copied);
}

} // namespace kiln

//===- PythonBuiltins.cpp - builtins answered for abstract values ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// Builtins whose answer depends only on the kind of a value, not on tensor
// data: `callable(x)` of a function made in the frame, a tensor, a
// container built here. The general builtins (evaluated on constants) are
// in Bytecode.cpp's callBuiltin.
//===----------------------------------------------------------------------===//
#include "Interp.h"

namespace kiln {

VarP Interpreter::callIntrospection(PyObject *fn, const std::string &name,
                                    std::vector<VarP> &args,
                                    std::map<std::string, VarP> &kwargs) {
  if (fn != PyDict_GetItemString(PyEval_GetBuiltins(), "callable") || args.size() != 1 ||
      !kwargs.empty())
    return nullptr;
  (void)name;
  const VarP &v = args[0];
  bool result = false;
  switch (v->kind) {
  case Var::Kind::Function:
  case Var::Kind::BoundMethod:
  case Var::Kind::TensorMethod:
  case Var::Kind::ListMethod:
    result = true;
    break;
  case Var::Kind::Const:
    result = PyCallable_Check(v->obj.get());
    break;
  case Var::Kind::Tensor:
  case Var::Kind::SymInt:
  case Var::Kind::Tuple:
  case Var::Kind::List:
  case Var::Kind::Iter:
    result = false;
    break;
  case Var::Kind::Dict: { // a dict, or a ModelOutput record (`obj`: its class)
    PyObject *cls = v->obj ? v->obj.get() : reinterpret_cast<PyObject *>(&PyDict_Type);
    result = PyType_Check(cls) && reinterpret_cast<PyTypeObject *>(cls)->tp_call != nullptr;
    break;
  }
  default:
    throw Unsupported("callable() of a value kiln does not track");
  }
  return makeConst(PyRef::borrow(result ? Py_True : Py_False));
}

VarP Interpreter::callAtCapture(PyObject *fn, std::vector<VarP> &args,
                                std::map<std::string, VarP> &kwargs) {
  static PyObject *signature = [] {
    PyRef m = PyRef::steal(PyImport_ImportModule("inspect"));
    PyObject *f = m ? PyObject_GetAttrString(m.get(), "signature") : nullptr;
    PyErr_Clear();
    return f; // leaked: process lifetime
  }();
  if (!fn || fn != signature)
    return nullptr;
  // inspect.signature(f) depends only on f's code, defaults and
  // annotations: evaluated now on the function the capture resolved (a
  // constant, a method bound to a constant receiver, or a function made
  // here), like Dynamo. The function itself is already guarded by how it
  // was reached (identity of its source, or of its receiver).
  if (args.size() != 1 || !kwargs.empty())
    throw Unsupported("inspect.signature with options");
  const VarP &f = args[0];
  PyRef target;
  if (f->kind == Var::Kind::Const || f->kind == Var::Kind::Function) {
    target = f->obj;
  } else if (f->kind == Var::Kind::BoundMethod && f->self && f->self->isConst()) {
    target = PyRef::steal(PyMethod_New(f->obj.get(), f->self->obj.get()));
  } else {
    throw Unsupported("inspect.signature of a value kiln does not track");
  }
  PyRef sig = target ? PyRef::steal(PyObject_CallOneArg(signature, target.get())) : PyRef();
  if (!sig) {
    PyErr_Clear();
    throw Unsupported("inspect.signature raised at capture time");
  }
  keepAlive_.push_back(sig);
  return makeConst(sig);
}

} // namespace kiln

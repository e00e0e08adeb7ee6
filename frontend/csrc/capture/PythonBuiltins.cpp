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

} // namespace kiln

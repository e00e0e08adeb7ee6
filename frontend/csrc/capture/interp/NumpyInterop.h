//===- NumpyInterop.h - NumPy code on arrays captured as tensor ops -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to capture/interp: the entry points of NumpyInterop.cpp (issue 15
// item 6; docs/architecture.md 3h). A NumPy array is a Var::Kind::Ndarray
// wrapping the Tensor Var of its data; these are called by the interpreter
// where a value, an attribute, a call or an operator may involve one.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_INTERP_NUMPYINTEROP_H
#define KILN_FRONTEND_CAPTURE_INTERP_NUMPYINTEROP_H

#include "capture/interp/Interp.h"

namespace kiln {

/// A friend of Interpreter (it reads guards, sources and inputs).
struct NumpyInterop {
  /// A non-tensor `value` read from `source`: a numpy.ndarray becomes a
  /// graph input (torch.from_numpy of it, type- and tensor-guarded);
  /// anything else a guarded constant, as before.
  static VarP fromSource(Interpreter &I, PyObject *value, int source);
  /// `obj.attr` of a tensor (`numpy` here, the rest Interpreter::tensorAttribute)
  /// or of an Ndarray (shape/ndim/size/dtype/T and mapped methods).
  static VarP attribute(Interpreter &I, const VarP &obj, const std::string &attr);
  /// `t.numpy()`: an Ndarray sharing the tensor's Var (its memory).
  static VarP toNumpy(Interpreter &I, const VarP &t, std::vector<VarP> &args,
                      std::map<std::string, VarP> &kwargs);
  /// Method `name` of Ndarray `a`.
  static VarP method(Interpreter &I, const VarP &a, const std::string &name,
                     std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);
  /// A NumPy function (mapped, or folded on constants), or torch.from_numpy/
  /// as_tensor/asarray/tensor of an array; nullptr when `fn` is neither.
  static VarP call(Interpreter &I, PyObject *fn, std::vector<VarP> &args,
                   std::map<std::string, VarP> &kwargs);
  /// Operator `sym` with an Ndarray operand (`rhs` null: unary "neg"/"~"),
  /// or a tensor with a NumPy scalar; nullptr otherwise.
  static VarP binary(Interpreter &I, const std::string &sym, const VarP &lhs, const VarP &rhs);

  /// Notes that a symbolic size was read (the capture is retried with
  /// static sizes when it fails); returns true.
  static bool readSymbolicSize(Interpreter &I);

private:
  static VarP mapped(Interpreter &I, PyObject *oracle, const std::string &np,
                     std::vector<VarP> &args, std::map<std::string, VarP> &kwargs, bool method);
  static VarP constant(Interpreter &I, PyObject *arr);
};

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_INTERP_NUMPYINTEROP_H

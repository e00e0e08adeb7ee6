//===- TensorTypeGuard.h - torch.Tensor methods replaced by the user -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln maps `x.relu()`, `x + y` and the other tensor methods and operators
// to its ops by name. A user (or a library) that replaces a method on the
// class after that (`torch.Tensor.relu = my_relu`, a patched `__add__`)
// changes what eager runs: every capture is guarded on torch.Tensor's type
// version tag (one integer compare per call; CPython renews the tag on any
// change of the class dict), and a capture asks here which methods differ
// from torch's own: a replaced method that is a Python function is inlined,
// another breaks; a replaced operator runs the frame eagerly.
//===----------------------------------------------------------------------===//
#ifndef KILN_CAPTURE_INTERP_TENSORTYPEGUARD_H
#define KILN_CAPTURE_INTERP_TENSORTYPEGUARD_H

#include "Guards.h"

#include <string>

namespace kiln {

/// A TypeVersion guard on torch.Tensor at its current version tag; throws
/// Unsupported when CPython cannot give the class a tag.
Guard tensorTypeGuard();

/// What `torch.Tensor.<name>` is now when the user replaced torch's own
/// attribute of that name (borrowed), null when it is torch's.
PyObject *replacedTensorMethod(const std::string &name);

/// The name of a replaced operator method of torch.Tensor (`__add__`,
/// `__getitem__`, `__torch_function__` ...), empty when none is: the capture
/// maps operators by name, so the frame then runs eagerly. Printing methods
/// (`__repr__`, `__str__`, `__format__`) do not count.
std::string replacedTensorOperator();

} // namespace kiln

#endif // KILN_CAPTURE_INTERP_TENSORTYPEGUARD_H

//===- TensorMethods.h - torch.Tensor methods replaced by the user -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln maps `x.relu()`, `x + y` and the other tensor methods and operators
// to its ops by name. A user (or a library) that replaces a method on the
// class (`torch.Tensor.relu = my_relu`, a patched `__add__`) changes what
// eager runs: a capture asks here which methods differ from torch's own (a
// replaced method that is a Python function is inlined, another breaks; a
// replaced operator runs the frame eagerly) and is guarded on that answer
// (Guard::Kind::TensorMethods): while torch.Tensor's CPython version tag is
// the capture's, one integer compare; after any change of the class dict
// (also a new helper attribute), the replaced methods are compared again.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_TENSORMETHODS_H
#define KILN_FRONTEND_TENSORMETHODS_H

#include "Guards.h"

#include <string>

namespace kiln {

/// A TensorMethods guard on the current state; throws Unsupported when
/// CPython cannot give torch.Tensor a version tag.
Guard tensorMethodsGuard();

/// A TensorMethods guard's test on its `expected` tuple.
bool tensorMethodsUnchanged(PyObject *expected);

/// What `torch.Tensor.<name>` is now when the user replaced torch's own
/// attribute of that name (borrowed; Py_None when deleted with nothing
/// underneath), null when it is torch's.
PyObject *replacedTensorMethod(const std::string &name);

/// The name of a replaced operator method of torch.Tensor (`__add__`,
/// `__getitem__`, `__torch_function__` ...), empty when none is: the capture
/// maps operators by name, so the frame then runs eagerly. Printing methods
/// (`__repr__`, `__str__`, `__format__`) do not count.
std::string replacedTensorOperator();

} // namespace kiln

#endif // KILN_FRONTEND_TENSORMETHODS_H

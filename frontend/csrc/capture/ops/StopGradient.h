//===- StopGradient.h - values eager sees without autograd history -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// `x.detach()` and the Python numbers read from a tensor (`.item()`,
// `float(t)`, `tolist()`) carry no gradient in eager although their value
// is a graph value that may. The capture puts such a value behind an
// explicit stop-gradient: an identity `kiln.cast` (same type) marked
// `kiln.no_grad`, which kiln-autodiff does not differentiate through
// (transforms/Autodiff.h, isStopGradient) and canonicalization folds away
// before codegen. Implemented in OpTracking.cpp.
//===----------------------------------------------------------------------===//
#ifndef KILN_CAPTURE_OPS_STOPGRADIENT_H
#define KILN_CAPTURE_OPS_STOPGRADIENT_H

#include "mlir/IR/Value.h"

namespace kiln {

class Interpreter;

/// `v` behind a stop-gradient (a new value; `v` itself when it is not a
/// float tensor, which never carries a gradient).
mlir::Value stopGradient(Interpreter &I, mlir::Value v);

} // namespace kiln

#endif // KILN_CAPTURE_OPS_STOPGRADIENT_H

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
//
// The opposite case: a tensor that requires grad updated in place under
// torch.no_grad() (`p.add_(1)` on a parameter, `y.mul_(3)` on an
// activation) keeps requires_grad in eager, and the gradient of its later
// uses passes straight through the update to the tensor's earlier history.
// The capture marks the update's result (an identity `kiln.cast` marked
// `kiln.grad_through`) so that GradFlow.cpp counts it as needing gradients;
// kiln-autodiff has no such edge, so a graph holding one keeps the
// eager-recompute backward (hook/CompiledGrad.cpp), which does what eager
// does.
//===----------------------------------------------------------------------===//
#ifndef KILN_CAPTURE_OPS_STOPGRADIENT_H
#define KILN_CAPTURE_OPS_STOPGRADIENT_H

#include "mlir/IR/Value.h"

namespace kiln {

class Interpreter;

/// `v` behind a stop-gradient (a new value; `v` itself when it is not a
/// float tensor, which never carries a gradient).
mlir::Value stopGradient(Interpreter &I, mlir::Value v);

inline constexpr const char *kGradThroughAttr = "kiln.grad_through";

/// `v`, the new value of a tensor that requires grad updated in place
/// under torch.no_grad(), behind an identity cast marked kGradThroughAttr.
mlir::Value gradThrough(Interpreter &I, mlir::Value v);

} // namespace kiln

#endif // KILN_CAPTURE_OPS_STOPGRADIENT_H

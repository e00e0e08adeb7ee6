//===- GradFlow.cpp - which graph values eager computes with gradients -----===//
// SPDX-License-Identifier: Apache-2.0
//
// A graph that needs gradients runs as one torch.autograd.Function whose
// backward recomputes the frame eagerly (kiln/_autograd.py). Two facts of
// eager autograd must still hold for what the graph computes:
//
// - which results have requires_grad: a value computed under
//   torch.no_grad(), from inputs that need no gradient, or by a kernel that
//   updates state without gradients (BatchNorm's running stats) has none.
//   `gradValues` follows the block in program order with the grad mode of
//   each op (the with-blocks' switches, `noteGradMode`); results outside
//   the set are marked non-differentiable (GraphOutput::noGrad). A tensor
//   that requires grad keeps it when updated in place under no_grad
//   (`gradThrough`, capture/ops/StopGradient.h);
// - side effects: the recompute would repeat them, so each must be one the
//   autograd glue can undo and redo around the recompute (an attribute, an
//   item of a dict or list, a caller's tensor updated in place: their
//   values before the call are kept and restored while it runs), and store
//   no value that needs gradients (eager would record the stored tensor in
//   the autograd graph; kiln's would not be). Anything else keeps the graph
//   break at the first mutation.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "capture/ops/StopGradient.h"

namespace kiln {

void Interpreter::noteGradMode() {
  mlir::Block &entry = func_.getBody().front();
  gradTransitions_.push_back({entry.empty() ? nullptr : &entry.back(), gradMode_});
}

llvm::DenseSet<mlir::Value> Interpreter::gradValues() const {
  llvm::DenseSet<mlir::Value> grad;
  mlir::Block &entry = const_cast<mlir::func::FuncOp &>(func_).getBody().front();
  for (mlir::BlockArgument arg : entry.getArguments())
    if (arg.getArgNumber() < out_.inputs.size() && out_.inputs[arg.getArgNumber()].requiresGrad)
      grad.insert(arg);
  bool mode = out_.gradMode;
  size_t next = 0;
  auto switchAfter = [&](mlir::Operation *op) {
    while (next < gradTransitions_.size() && gradTransitions_[next].first == op)
      mode = gradTransitions_[next++].second;
  };
  switchAfter(nullptr);
  for (mlir::Operation &op : entry) {
    // A grad-through cast (StopGradient.h): the tensor keeps requires_grad.
    bool any =
        op.hasAttr(kGradThroughAttr) ||
        (mode && llvm::any_of(op.getOperands(), [&](mlir::Value v) { return grad.contains(v); }));
    for (mlir::Value r : op.getResults())
      if (any && !noGrad_.count(r.getAsOpaquePointer()) &&
          llvm::isa<mlir::FloatType, mlir::ComplexType>(
              llvm::cast<mlir::ShapedType>(r.getType()).getElementType()))
        grad.insert(r);
    switchAfter(&op);
  }
  if (next != gradTransitions_.size()) // an op a switch was recorded after is gone
    throw Unsupported(BreakCategory::Other,
                      "cannot tell which values of the graph need gradients (grad mode switches "
                      "lost their place)");
  return grad;
}

namespace {

/// Whether `v` (a stored value's tree) holds a tensor in `grad`.
bool holdsGrad(const VarP &v, const llvm::DenseSet<mlir::Value> &grad, int depth = 0) {
  if (!v || depth > 32)
    return depth > 32;
  if (v->isTensor())
    return grad.contains(v->value);
  for (const VarP &item : v->items)
    if (holdsGrad(item, grad, depth + 1))
      return true;
  return false;
}

/// Whether `v`, written back into a caller's tensor by `e`, is that
/// tensor's own update under no_grad (gradThrough): eager records nothing.
bool keepsItsGrad(const SideEffect &e, const VarP &v) {
  if (e.kind != SideEffect::Kind::CopyInto || !v || !v->isTensor())
    return false;
  mlir::Operation *def = v->value.getDefiningOp();
  return def && def->hasAttr(kGradThroughAttr);
}

} // namespace

void Interpreter::checkAutogradEffects(const llvm::DenseSet<mlir::Value> &grad, int &offset) const {
  for (size_t i = 0; i < out_.effects.size(); ++i) {
    const SideEffect &e = out_.effects[i];
    const char *why = nullptr;
    if (e.kind != SideEffect::Kind::SetAttr && e.kind != SideEffect::Kind::SetItem &&
        e.kind != SideEffect::Kind::CopyInto)
      why = "cannot be undone around the backward's eager recompute";
    else if (holdsGrad(effectValues_[i], grad) && !keepsItsGrad(e, effectValues_[i]))
      why = "stores a value that needs gradients (eager records it in the autograd graph)";
    if (!why)
      continue;
    offset = e.rootOffset;
    throw Unsupported(BreakCategory::SideEffect,
                      "mutation (" + e.what + ") of Python state in a graph that needs gradients " +
                          why,
                      "mutate the state outside the compiled function, or run it under "
                      "torch.no_grad()");
  }
}

} // namespace kiln

//===- ViewWrites.cpp - in-place updates of views, written through ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// `x.t().add_(1)`, `d = x.detach(); d.mul_(2)`, `v = y[:, 1:]; v.zero_()`
// (and `v = x.t(); x.add_(1)`: the root updated, its views rebuilt):
// an in-place op on a view updates the tensor it views, and every other
// view of that tensor, as in eager. The IR has value semantics, so the
// update is computed functionally and scattered into the root of the
// view chain (a graph input, written back to the caller's tensor after the
// graph as any in-place update of an input; or a tensor the graph
// computed), then every live view of the root is rebuilt from the new root.
//
// Which root elements a view is: its view steps (the torch calls that
// rebuild it from the root, OpTracking.cpp) replayed once at capture on a
// CPU stand-in of the root whose elements are their own flat positions, in
// the root's eager layout when kiln knows it (a graph input:
// kiln._fallback.view_positions). The scatter and the rebuilds are then
// constant-index gathers and a select. Refused (a graph break, eager does
// it): views without replayable steps (opaque), a step that copies in eager,
// reshape/contiguous steps on a computed root (eager's layout unknown),
// views whose elements overlap (eager raises), symbolic sizes.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"
#include "capture/values/ViewSteps.h"

#include "ir/KilnOps.h"

#include <set>

namespace kiln {

namespace {

/// Every live view below `v` (direct views, their views ...).
void liveViews(const Var &v, std::vector<VarP> &out, std::set<const Var *> &seen) {
  for (const std::weak_ptr<Var> &w : v.views) {
    VarP view = w.lock();
    if (!view || !seen.insert(view.get()).second)
      continue;
    out.push_back(view);
    liveViews(*view, out, seen);
  }
}

/// `v` read at the constant flat `positions`, reshaped to `shape`.
Value gatherFlat(Emit &e, Value v, const std::vector<double> &positions,
                 llvm::ArrayRef<int64_t> shape) {
  if (positions.empty())
    return e.splat(shape, dtypeOf(ttype(v).getElementType()), 0);
  Value flat = e.reshape(v, {ttype(v).getNumElements()});
  Value ix = e.dense({(int64_t)positions.size()}, DType::I64, positions);
  auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(0))};
  return e.reshape(e.checked<mlir::kiln::GatherOp>({flat, ix}, attrs, "a view's gather"), shape);
}

} // namespace

VarP writeThroughView(Interpreter &I, const VarP &target, Value result, const std::string &what,
                      int bumps) {
  auto refuse = [&](const std::string &why) {
    throw Unsupported(BreakCategory::SideEffect,
                      what + " on a view (of a graph input or a computed tensor): " + why);
  };
  VarP root = target;
  while (root->viewBase)
    root = root->viewBase;
  bool computed = root->inputIndex < 0;
  if (computed && !root->fresh)
    refuse("its base is not a tensor kiln can update");
  if (root->vmapLevels > 0 || !ttype(root->value).hasStaticShape() ||
      !ttype(result).hasStaticShape())
    refuse("symbolic sizes or torch.vmap are not supported");
  auto replayable = [&](const Var &v) {
    return !v.copied && !v.viewSteps.empty() && v.vmapLevels == 0 &&
           ((!computed && v.viewInput == root->inputIndex) ||
            (computed && v.viewInput < 0 && v.viewRoot == root->value));
  };
  // A view updated: it comes first; a root updated: only its views follow.
  // Every live view below the root, the target's own views too.
  bool isView = target != root;
  std::vector<VarP> views, below;
  if (isView)
    views.push_back(target);
  std::set<const Var *> seen;
  liveViews(*root, below, seen);
  for (const VarP &v : below)
    if (v != target)
      views.push_back(v);
  for (const VarP &v : views)
    if (!replayable(*v))
      refuse("a view of its base cannot be rebuilt from it (an op kiln cannot replay)");
  PyRef layout = computed ? PyRef::borrow(Py_None) : I.layoutRecipe(root);
  if (!layout)
    refuse("the input's memory layout is not known");
  PyRef steps = PyRef::steal(PyTuple_New((Py_ssize_t)views.size()));
  for (size_t i = 0; i < views.size(); ++i)
    PyTuple_SET_ITEM(steps.get(), (Py_ssize_t)i, viewStepsTuple(*views[i]).release());
  PyObject *helper = viewPositionsFunction();
  auto rootShape = ttype(root->value).getShape();
  PyRef sizes = PyRef::steal(intTuple({rootShape.begin(), rootShape.end()}));
  PyRef answer = helper ? PyRef::steal(PyObject_CallFunctionObjArgs(
                              helper, sizes.get(), layout.get(), steps.get(),
                              computed ? Py_True : Py_False, nullptr))
                        : PyRef();
  if (!answer)
    refuse(withPythonError("kiln._fallback.view_positions failed"));
  if (PyUnicode_Check(answer.get()))
    refuse(pyText(answer.get()));
  std::vector<std::vector<double>> positions(views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    PyObject *p = PyTuple_GET_ITEM(answer.get(), (Py_ssize_t)i);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(p); ++k)
      positions[i].push_back((double)PyLong_AsLongLong(PyTuple_GET_ITEM(p, k)));
  }
  // The scatter: root position p takes the update's element inverse[p]
  // where the target covers p.
  int64_t n = ttype(root->value).getNumElements();
  std::vector<double> inverse(n, 0), covered(n, 0);
  for (size_t k = 0; isView && k < positions[0].size(); ++k) {
    int64_t p = (int64_t)positions[0][k];
    if (covered[p])
      throw Unsupported(BreakCategory::UserError,
                        what + " on a view whose elements overlap in memory (eager raises)");
    covered[p] = 1;
    inverse[p] = (double)k;
  }
  Emit e(I);
  Value newRoot = isView ? root->value : result;
  if (isView && !positions[0].empty()) {
    Value update = gatherFlat(e, result, inverse, {n});
    Value mask = e.dense({n}, DType::Bool, covered);
    newRoot = e.reshape(e.select(mask, update, e.reshape(root->value, {n})), rootShape);
  }
  // The root rebound (a graph input: written back after the graph).
  I.assignInPlace(root, newRoot, what, nullptr, bumps, /*viewsRebuilt=*/true);
  target->value = result;
  for (size_t i = isView ? 1 : 0; i < views.size(); ++i)
    views[i]->value = gatherFlat(e, root->value, positions[i], ttype(views[i]->value).getShape());
  if (computed) // views of the root rebuild from its new value when returned
    for (const VarP &v : views)
      v->viewRoot = root->value;
  return target;
}

} // namespace kiln

//===- InPlace.cpp - in-place tensor updates, functionalized ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The IR has value semantics, so an in-place op (`x.add_(y)`, `x += y`,
// `x.copy_(src)`, `x.fill_(v)`, `torch.add(a, b, out=x)`) computes its result
// functionally and rebinds the tensor's Var to it: every Python reference
// to that tensor (locals, containers, other reads of the same source) holds
// the one Var and sees the new value. When the tensor is the caller's (a
// graph input), the final value is also a graph result, copied back into
// the caller's tensor after the graph (a CopyInto side effect, replayed by
// Entry.cpp before the frame returns or a break resumes), and its version
// counter is advanced by the number of in-place ops, as eager would.
//
// An update of a view (of an input, or of a computed tensor something else
// still holds) is written through to the root of its view chain and every
// live view of it is rebuilt (ViewWrites.cpp).
// Refused (a graph break, so eager does it): updates of tensors something
// views, of an input sharing storage with another input (checked at capture
// and guarded per call), of an input that requires grad in grad mode, and
// updates that would change the shape or cast a float result into an
// integer tensor. Indexed writes (`scatter_`, `index_put_`, `index_add_`,
// `index_fill_`, `index_copy_`, `masked_scatter_` ...) are their
// out-of-place forms rebound the same way (callInPlaceMethod). In a graph
// that needs gradients the write-backs are undone and redone around the
// backward's recompute (values/GradFlow.cpp).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"
#include "capture/ops/StopGradient.h"
#include "capture/values/InputLayouts.h"
#include "TensorInfo.h"

#include <algorithm>
#include <map>
#include <set>

namespace kiln {

namespace {

/// Whether eager's in-place ops may store a `from` result into a `to`
/// tensor (torch's canCast: no float into integer/bool, no number into bool).
bool canCastInPlace(DType from, DType to) {
  DTypeCategory f = dtypeCategory(from), t = dtypeCategory(to);
  return !(f == DTypeCategory::Floating && t != DTypeCategory::Floating) &&
         !(f != DTypeCategory::Bool && t == DTypeCategory::Bool);
}

/// `v` (a 0-d or smaller tensor) cast to `like`'s dtype and broadcast to its
/// shape (copy_/fill_ semantics).
Value broadcastLike(Interpreter &I, const VarP &like, Value v) {
  Emit e(I);
  v = e.cast(v, dtypeOf(ttype(like->value).getElementType()));
  if (ttype(v) == ttype(like->value))
    return v;
  VarP expanded = callOp(I, "expand_as", {{"input", makeTensor(v)}, {"other", like}});
  if (ttype(expanded->value) != ttype(like->value))
    throw Unsupported(BreakCategory::UserError, "copy_/fill_: the source does not broadcast to the "
                                                "tensor's shape (eager raises)");
  return expanded->value;
}

/// Whether a view of `t` that something still holds would miss an update of
/// `t`. `except` (and the links of its view chain that only it holds) is the
/// view the update is made through, which receives it.
bool hasLiveViews(const Var &t, const Var *except) {
  std::vector<const Var *> chain;
  for (const Var *v = except; v; v = v->viewBase.get())
    chain.push_back(v);
  for (const std::weak_ptr<Var> &w : t.views) {
    VarP view = w.lock();
    if (!view)
      continue;
    bool onChain = std::find(chain.begin(), chain.end(), view.get()) != chain.end();
    // use_count: `view` here, plus the chain's link to it when only it holds it.
    if (!(onChain && (view.get() == except || view.use_count() <= 2)))
      return true;
  }
  return false;
}

/// Whether `t` is a view of a tensor the graph computed that nothing else
/// can see any more: every base up its chain is held only by the view
/// below it (no local, container or other live view), down to a computed
/// root. An update of `t` then cannot be observed through a base (eager's
/// `x = torch.flatten(x, 1); F.dropout(x, inplace=True)`), so `t` may take
/// it as a tensor of its own.
bool onlyHolderOfBases(const Var &t) {
  if (t.viewInput >= 0 || !t.viewBase)
    return false;
  const Var *v = &t;
  for (; v->viewBase; v = v->viewBase.get()) {
    const VarP &base = v->viewBase;
    // use_count: `v->viewBase` itself is the one holder allowed.
    if (base->inputIndex >= 0 || base->viewInput >= 0 || base.use_count() > 1 || base->itemOf ||
        hasLiveViews(*base, v))
      return false;
  }
  return v->fresh;
}

/// Whether `old` (a tensor's value before an in-place update run under
/// torch.no_grad()) has requires_grad in eager. `gradEver`: grad mode was
/// on somewhere in the graph so far (else only inputs and earlier
/// grad-through values have it; the walk of gradValues is then skipped).
bool hadGrad(const Interpreter &I, const Capture &out, Value old, bool gradEver) {
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(old.getType());
  if (!t || !llvm::isa<mlir::FloatType>(t.getElementType()))
    return false;
  if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(throughInputLayout(old)))
    return arg.getArgNumber() < out.inputs.size() && out.inputs[arg.getArgNumber()].requiresGrad;
  if (old.getDefiningOp()->hasAttr(kGradThroughAttr))
    return true;
  return gradEver && I.gradValues().contains(old);
}

/// `result`, the value an in-place update gives `target`, as eager's: run
/// under no_grad (`gradMode` off) on a tensor with requires_grad, it keeps
/// requires_grad (gradThrough, StopGradient.h).
Value keepGradThroughUpdate(Interpreter &I, const Capture &out, bool gradMode, bool gradEver,
                            const VarP &target, Value result, const std::string &what,
                            const Var *except) {
  if (gradMode || !hadGrad(I, out, target->value, gradEver))
    return result;
  // Eager's gradient of the updated tensor flows to its earlier history;
  // through a view it would reach the base's: a break (eager does it).
  if (target->viewBase || target->viewInput >= 0 || target->itemOf || hasLiveViews(*target, except))
    throw Unsupported(BreakCategory::SideEffect,
                      what + " under torch.no_grad() on a view of (or a tensor viewed by) a "
                             "tensor that requires grad is not supported");
  return gradThrough(I, result);
}

} // namespace

/// Whether two elements of a tensor with `sizes` and `strides` may share
/// memory (an expanded or unfolded tensor): the dims of size > 1 sorted by
/// stride must each step past everything the smaller ones span.
static bool mayOverlap(const TensorMeta &m) {
  std::vector<std::pair<int64_t, int64_t>> dims; // (stride, size)
  for (size_t d = 0; d < m.sizes.size(); ++d)
    if (m.sizes[d] > 1)
      dims.push_back({m.strides[d], m.sizes[d]});
  std::sort(dims.begin(), dims.end());
  int64_t span = 0; // the largest offset the dims so far reach
  for (auto [stride, size] : dims) {
    if (stride <= span)
      return true;
    span += stride * (size - 1);
  }
  return false;
}

void Interpreter::checkInputAliasing(int input) {
  TensorMeta meta;
  if (readTensorMeta(inputObjects_[input].get(), meta) && mayOverlap(meta))
    throw Unsupported(BreakCategory::SideEffect,
                      "an in-place update of a graph input whose elements share memory (an "
                      "expanded or unfolded tensor): eager writes through every alias",
                      "kiln runs it eagerly at a graph break");
  void *mine = tensorStoragePtr(inputObjects_[input].get());
  if (!mine)
    return; // an empty storage: nothing to write back through
  for (size_t i = 0; i < inputObjects_.size(); ++i)
    if ((int)i != input && tensorStoragePtr(inputObjects_[i].get()) == mine)
      throw Unsupported(BreakCategory::SideEffect,
                        "an in-place update of a graph input that shares storage with another "
                        "input (" +
                            out_.sources.describe(out_.inputs[i].source, out_.dynamic.localNames) +
                            "): the other would see the update",
                        "pass tensors that do not alias, or .clone() one of them");
}

int Interpreter::checkWriteBacks() {
  for (auto [input, effect] : writeBackOf_) {
    try {
      checkInputAliasing(input);
    } catch (const Unsupported &) {
      return out_.effects[effect].rootOffset;
    }
  }
  return -1;
}

namespace {
/// After `x[i] += v` assigned view `view` into its base: the view, and the
/// views between it and its root, are rebuilt (returned, live at a break)
/// from the root's new value, not the one they were taken from
/// (`rootBefore`); where a base became a root itself (a view it was, now
/// rebound: InPlace below), from that base, with the steps below it
/// (`stepsOf`: each base's step count before).
void retargetView(Var &view, Value rootBefore, const std::map<const Var *, size_t> &stepsOf) {
  Var *root = &view;
  while (root->viewBase)
    root = root->viewBase.get();
  auto found = stepsOf.find(root);
  for (Var *v = &view; v != root; v = v->viewBase.get()) {
    if (!v->viewRoot || v->viewRoot != rootBefore)
      continue;
    if (!root->fresh || found == stepsOf.end() || found->second > v->viewSteps.size()) {
      v->viewSteps.clear(); // not replayable: returned as a copy, a break keeps it eager
      v->viewRoot = Value();
      continue;
    }
    v->viewSteps.erase(v->viewSteps.begin(), v->viewSteps.begin() + found->second);
    v->viewRoot = root->value;
  }
}
} // namespace

VarP Interpreter::assignInPlace(const VarP &target, Value result, const std::string &what,
                                const Var *except, int bumps, bool viewsRebuilt) {
  if (!target->isTensor())
    throw Unsupported(BreakCategory::UserError, what + " expects a tensor");
  if (target->vmapLevels > 0)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      what + " on a tensor batched by torch.vmap is not supported");
  auto to = ttype(target->value), from = ttype(result);
  if (to.getShape() != from.getShape())
    throw Unsupported(BreakCategory::UserError,
                      what + " would change the tensor's shape (eager raises or resizes)");
  DType toDt = dtypeOf(to.getElementType()), fromDt = dtypeOf(from.getElementType());
  if (!canCastInPlace(fromDt, toDt))
    throw Unsupported(BreakCategory::UserError, what + ": result type " + dtypeName(fromDt) +
                                                    " can't be cast to " + dtypeName(toDt));
  result = keepGradThroughUpdate(*this, out_, gradMode_, gradOnSomewhere_, target,
                                 Emit(*this).cast(result, toDt), what, except);
  int input = target->inputIndex;
  if (!viewsRebuilt && input < 0 && !target->fresh && !target->itemOf && target->viewBase &&
      !onlyHolderOfBases(*target))
    return writeThroughView(*this, target, result, what, bumps); // ViewWrites.cpp
  if (!viewsRebuilt && !except && !target->viewBase && (input >= 0 || target->fresh) &&
      hasLiveViews(*target, nullptr))
    return writeThroughView(*this, target, result, what, bumps); // its views rebuilt
  if (!viewsRebuilt && hasLiveViews(*target, except))
    throw Unsupported(BreakCategory::SideEffect,
                      what + " on a tensor that a live view was taken of is not supported yet");
  if (input < 0 && !target->fresh && target->itemOf) {
    // `x[i] += v`, `x[i].add_(v)`: the view takes the new value and the
    // update is assigned into its base (TensorSetItem.cpp). When the base
    // has other live views, it is written through and they are rebuilt.
    if (!viewsRebuilt && hasLiveViews(*target->itemOf, target.get()))
      return writeThroughView(*this, target, result, what, bumps); // ViewWrites.cpp
    Value before = target->value;
    Value rootBefore = target->viewRoot;
    std::map<const Var *, size_t> stepsOf; // each base of the view: its steps then
    for (VarP b = target->viewBase; b; b = b->viewBase)
      stepsOf[b.get()] = b->viewSteps.size();
    target->value = result;
    try {
      tensorSetItem(target->itemOf, makeConst(target->itemIndex), target);
    } catch (...) {
      target->value = before; // a break: nothing was updated
      throw;
    }
    retargetView(*target, rootBefore, stepsOf);
    return target;
  }
  if (input < 0) {
    if (!target->fresh && !onlyHolderOfBases(*target))
      throw Unsupported(BreakCategory::SideEffect,
                        what + " on a view (of a graph input or a computed tensor) is not "
                               "supported yet");
    if (!target->fresh) { // no longer a view of anything observable
      target->viewBase.reset();
      target->viewRoot = Value();
      target->viewSteps.clear();
      target->fresh = true;
    }
    // The tensor keeps its strides (EagerLayouts.cpp): said of a value the
    // update made (not yet used; a value another tensor holds keeps its own).
    if (result != target->value && result.getDefiningOp() && result.use_empty())
      keepsLayout(result, target->value, /*exact=*/true);
    target->value = result;
    return target;
  }
  // The caller's tensor: rebound here, copied back after the graph.
  if (out_.inputs[input].requiresGrad && gradMode_)
    throw Unsupported(BreakCategory::SideEffect,
                      what + " on a graph input that requires grad, with grad mode on, is not "
                             "supported (eager records it in the autograd graph)",
                      "update it under torch.no_grad()");
  checkInputAliasing(input);
  target->value = result;
  auto it = writeBackOf_.find(input);
  if (it == writeBackOf_.end()) {
    recordEffect({SideEffect::Kind::CopyInto, out_.inputs[input].source, {}, -1, what}, target);
    it = writeBackOf_.emplace(input, out_.effects.size() - 1).first;
  }
  out_.effects[it->second].versionBumps += bumps;
  return target;
}

VarP Interpreter::takeOutArgument(std::map<std::string, VarP> &kwargs) {
  auto it = kwargs.find("out");
  if (it == kwargs.end())
    return nullptr;
  VarP out = it->second;
  kwargs.erase(it);
  if (out->isConst() && out->obj.get() == Py_None)
    return nullptr;
  if (!out->isTensor())
    throw Unsupported(BreakCategory::UnsupportedOp, "out= that is not a single tensor");
  return out;
}

VarP Interpreter::callInPlaceMethod(const VarP &self, const std::string &name,
                                    std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  std::string what = "Tensor." + name;
  if (name == "copy_") {
    // copy_(src, non_blocking=False): non_blocking changes nothing on one device.
    VarP nonBlocking = args.size() > 1                ? args[1]
                       : kwargs.count("non_blocking") ? kwargs["non_blocking"]
                                                      : nullptr;
    VarP src = !args.empty() ? args[0] : kwargs.count("src") ? kwargs["src"] : nullptr;
    if (!src || !src->isTensor() || args.size() + kwargs.size() > 2 ||
        (nonBlocking && !nonBlocking->isConst()))
      throw Unsupported(BreakCategory::UnsupportedOp, what + " with these arguments");
    return assignInPlace(self, broadcastLike(*this, self, src->value), what);
  }
  if (name == "fill_" || name == "zero_") {
    VarP value = name == "zero_"         ? constInt(0)
                 : !args.empty()         ? args[0]
                 : kwargs.count("value") ? kwargs["value"]
                                         : nullptr;
    if (!value || args.size() + kwargs.size() != (name == "zero_" ? 0u : 1u))
      throw Unsupported(BreakCategory::UserError, what + " with unexpected arguments");
    if (value->isTensor() && ttype(value->value).getRank() != 0)
      throw Unsupported(BreakCategory::UserError, what + " with a tensor that is not 0-d");
    Emit e(*this);
    Value fill = e.operand(value, dtypeOf(ttype(self->value).getElementType()));
    return assignInPlace(self, broadcastLike(*this, self, fill), what);
  }
  if (isIndexedWrite(name)) {
    // scatter_, index_put_(accumulate=True), index_add_ ...: the out-of-place
    // form (mapped, or through torch inside the graph: Fallback.cpp), then
    // the tensor rebound to it. Duplicate indices behave as in eager (the
    // torch kernel runs: index_put_/index_add_ accumulate every one).
    std::vector<VarP> rest = args;
    std::map<std::string, VarP> restKw = kwargs;
    VarP r = callTensorMethod(self, name.substr(0, name.size() - 1), rest, restKw);
    if (!r || !r->isTensor())
      throw Unsupported(BreakCategory::UnsupportedOp, what + " does not compute a tensor");
    return assignInPlace(self, r->value, what);
  }
  return nullptr;
}

bool isIndexedWrite(const std::string &name) {
  static const std::set<std::string> names = {
      "scatter_",    "scatter_add_", "scatter_reduce_", "index_put_", "index_add_",
      "index_fill_", "index_copy_",  "index_reduce_",   "put_",       "masked_scatter_"};
  return names.count(name) > 0;
}

} // namespace kiln

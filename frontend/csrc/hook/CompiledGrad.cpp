//===- CompiledGrad.cpp - graphs compiled with their backward ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CompiledGrad.h. The forward and backward are sub-entries like
// a fallback program's segments (ProgramCompile.cpp): inputs numbered
// 0..n-1, a tensor guard each only so that runGraph's call plan knows the
// sizes (never checked: the whole frame's guards are the entry's).
// Ownership: every Python object built here is held by a PyRef.
//===----------------------------------------------------------------------===//
#include "hook/CompiledGrad.h"
#include "CallResources.h"
#include "hook/ActivationBudget.h"

#include "ProgramCompile.h"
#include "capture/interp/Interp.h"
#include "capture/ops/StopGradient.h"
#include "hook/Recompute.h"
#include "hook/Stats.h"
#include "transforms/Autodiff.h"

#include "mlir/IR/BuiltinOps.h"

#include <algorithm>

namespace kiln {
namespace {

/// kiln.config.activation_memory_budget (ActivationBudget.h).
double gActivationBudget = 1.0;

/// A sub-entry running `fn` (static shapes).
std::shared_ptr<Entry> subEntry(mlir::func::FuncOp fn, const std::string &name,
                                PyObject *defaultDtype) {
  auto sub = std::make_shared<Entry>();
  sub->name = name;
  sub->defaultDtype = defaultDtype;
  for (auto [k, type] : llvm::enumerate(fn.getArgumentTypes())) {
    auto t = llvm::cast<mlir::RankedTensorType>(type);
    sub->inputs.push_back({(int)k});
    Guard g{Guard::Kind::Tensor, (int)k};
    g.sizes.assign(t.getShape().begin(), t.getShape().end());
    sub->guards.push_back(std::move(g));
  }
  for (mlir::Type type : fn.getResultTypes()) {
    auto t = llvm::cast<mlir::RankedTensorType>(type);
    sub->results.push_back({std::vector<int64_t>(t.getShape().begin(), t.getShape().end()),
                            dtypeOf(t.getElementType())});
  }
  // Gradients and saved activations allocated where they are first written.
  sub->lazyResults = markLazyResults(fn, {});
  return sub;
}

/// `fn` moved out of its module into a new one as @forward.
mlir::OwningOpRef<mlir::ModuleOp> moduleOf(mlir::func::FuncOp fn) {
  mlir::OwningOpRef<mlir::ModuleOp> m = mlir::ModuleOp::create(fn.getLoc());
  fn->remove();
  fn.setName("forward");
  m->push_back(fn);
  return m;
}

/// Compiles the forward and backward modules into their sub-entries, at
/// once (ProgramCompile.h compileForCpuPair); false with `why` set.
bool compileSubs(mlir::ModuleOp forward, mlir::ModuleOp backward, CompiledGrad &grad,
                 const mlir::kiln::CpuCompileOptions &options, std::string &why) {
  CpuCompileJob jobs[2] = {{forward, options}, {backward, options}};
  const char *folders[2] = {"forward", "backward"};
  for (int i = 0; i < 2; ++i) {
    if (!options.debugDir.empty())
      jobs[i].options.debugDir += std::string("/") + folders[i];
    jobs[i].options.bigColumnsToDnnl = false; // see CpuCompileOptions
  }
  jobs[0].options.minOutputPositionsToDnnl = mlir::kiln::kTrainingMinOutputPositions;
  compileForCpuPair(jobs[0], jobs[1]);
  for (int i = 0; i < 2; ++i)
    if (!jobs[i].fn.entry) {
      why = std::string("compilation of the ") + folders[i] + " failed: " + jobs[i].error;
      return false;
    }
  grad.forward->fn = std::move(jobs[0].fn);
  grad.backward->fn = std::move(jobs[1].fn);
  return true;
}

/// Why the graph cannot get a compiled backward before trying ("" if none).
/// Values eager sees without history (`detach()`, `.item()`) are behind
/// stop-gradients in the IR (capture/ops/StopGradient.h).
std::string unsupported(const Capture &cap) {
  if (!cap.steps.empty())
    return "torch calls run inside the graph (per-op fallback)";
  if (!cap.symbols.empty())
    return "the graph has symbolic sizes";
  // Side effects the autograd glue replays after the forward (Recompute.cpp:
  // attributes, items, write-backs such as BatchNorm's running stats; they
  // store no value needing gradients, GradFlow.cpp) are fine.
  for (const SideEffect &e : cap.effects)
    if (e.kind != SideEffect::Kind::SetAttr && e.kind != SideEffect::Kind::SetItem &&
        e.kind != SideEffect::Kind::CopyInto)
      return "the graph has side effects other than attribute, item and tensor write-backs";
  // Eager's gradient passes straight through an update under no_grad of a
  // tensor that requires grad (StopGradient.h): no edge of kiln-autodiff.
  bool through = false;
  mlir::ModuleOp module = cap.module.get();
  module.walk([&](mlir::Operation *op) { through |= op->hasAttr(kGradThroughAttr); });
  if (through)
    return "a tensor that requires grad is updated in place under torch.no_grad() (its gradient "
           "passes straight through the update)";
  return "";
}

/// Why an input the side effects update in place rules the compiled
/// backward out ("" if none): the backward reads it (its saved value would
/// be stale: the version check would raise), or it requires grad (eager's
/// leaf, updated under no_grad, keeps its gradient through the new value;
/// the IR's updated value is a new one marked kiln.no_grad).
std::string mutatedInputProblem(const Capture &cap, llvm::ArrayRef<int64_t> savedInputs) {
  for (size_t i = 0; i < cap.inputs.size(); ++i) {
    bool mutated = llvm::any_of(cap.effects, [&](const SideEffect &e) {
      return e.kind == SideEffect::Kind::CopyInto && cap.inputs[i].isTensor() &&
             cap.inputs[i].source == e.target;
    });
    if (mutated && cap.inputs[i].requiresGrad)
      return "the graph updates an input that requires grad in place";
    if (mutated && llvm::is_contained(savedInputs, (int64_t)i))
      return "the backward reads an input the graph updates in place";
  }
  return "";
}

PyObject *indexTuple(llvm::ArrayRef<int64_t> values) {
  PyObject *t = PyTuple_New(values.size());
  for (size_t i = 0; t && i < values.size(); ++i)
    PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(values[i]));
  return t;
}

/// functools.partial(kiln._C.<runner>, capsule(entry)) (new reference).
PyRef bound(const std::shared_ptr<Entry> &entry, const char *runner) {
  PyRef capsule = PyRef::steal(entryCapsule(entry));
  PyRef c = PyRef::steal(PyImport_ImportModule("kiln._C"));
  PyRef fn = c ? PyRef::steal(PyObject_GetAttrString(c.get(), runner)) : PyRef();
  PyRef functools = PyRef::steal(PyImport_ImportModule("functools"));
  PyRef partial =
      functools ? PyRef::steal(PyObject_GetAttrString(functools.get(), "partial")) : PyRef();
  if (!capsule || !fn || !partial)
    return PyRef();
  return PyRef::steal(
      PyObject_CallFunctionObjArgs(partial.get(), fn.get(), capsule.get(), nullptr));
}

} // namespace

bool compileWithBackward(Capture &cap, Entry &entry, const mlir::kiln::CpuCompileOptions &options,
                         std::string &why) {
  why = unsupported(cap);
  if (!why.empty())
    return false;
  mlir::OwningOpRef<mlir::ModuleOp> work(cap.module->clone());
  auto fn = work->lookupSymbol<mlir::func::FuncOp>("forward");
  llvm::SmallVector<bool> diffInputs, diffResults;
  for (const GraphInput &in : cap.inputs)
    diffInputs.push_back(in.requiresGrad);
  for (const GraphOutput &out : cap.results)
    diffResults.push_back(!out.noGrad);
  mlir::Operation *culprit = nullptr;
  mlir::kiln::PartitionOptions partition;
  partition.memoryBudget = gActivationBudget;
  auto fns =
      mlir::kiln::buildGradientFunctions(fn, diffInputs, diffResults, why, culprit, partition);
  if (mlir::failed(fns))
    return false;
  why = mutatedInputProblem(cap, fns->savedInputs);
  if (!why.empty())
    return false;
  if (fns->gradInputs.empty()) {
    why = "no input gets a gradient from the results";
    return false;
  }
  auto grad = std::make_shared<CompiledGrad>();
  grad->gradResults.assign(fns->gradResults.begin(), fns->gradResults.end());
  grad->gradInputs.assign(fns->gradInputs.begin(), fns->gradInputs.end());
  grad->savedInputs.assign(fns->savedInputs.begin(), fns->savedInputs.end());
  grad->savedResults.assign(fns->savedResults.begin(), fns->savedResults.end());
  grad->numSaved = fns->numSaved;
  for (const auto &deps : fns->inputDeps)
    grad->inputDeps.emplace_back(deps.begin(), deps.end());
  grad->forward = subEntry(fns->forward, entry.name + " forward", cap.defaultDtype);
  for (size_t i = 0; i < cap.inputs.size(); ++i)
    grad->forward->inputs[i].makeContiguous = cap.inputs[i].makeContiguous;
  // The forward returns the graph's results first: its index flag too.
  grad->forward->indexCheck = cap.indexCheck;
  grad->backward = subEntry(fns->backward, entry.name + " backward", cap.defaultDtype);
  for (GraphInput &in : grad->backward->inputs) // incoming gradients may be expanded
    in.makeContiguous = true;
  mlir::OwningOpRef<mlir::ModuleOp> fwdModule = moduleOf(fns->forward);
  mlir::OwningOpRef<mlir::ModuleOp> bwdModule = moduleOf(fns->backward);
  if (!compileSubs(*fwdModule, *bwdModule, *grad, options, why))
    return false;
  entry.grad = std::move(grad);
  counters().savedActivations += fns->numSaved;
  counters().savedActivationBytes += fns->savedBytes;
  return true;
}

void setActivationMemoryBudget(double budget) {
  gActivationBudget = std::min(1.0, std::max(0.0, budget));
}

bool compiledGradCallables(const std::shared_ptr<Entry> &entry, PyRef &forward, PyRef &backward,
                           PyRef &layout) {
  const CompiledGrad &g = *entry->grad;
  if (g.layout) {
    forward = g.forwardFn;
    backward = g.backwardFn;
    layout = g.layout;
    return true;
  }
  forward = bound(g.forward, "_run_entry");
  backward = bound(g.backward, "_run_backward");
  if (!forward || !backward)
    return false;
  PyRef deps = PyRef::steal(PyTuple_New(g.inputDeps.size()));
  for (size_t i = 0; deps && i < g.inputDeps.size(); ++i)
    PyTuple_SET_ITEM(deps.get(), i, indexTuple(g.inputDeps[i]));
  if (!deps)
    return false;
  layout = PyRef::steal(Py_BuildValue(
      "(nNNNNO)", (Py_ssize_t)entry->results.size(), indexTuple(g.gradResults),
      indexTuple(g.gradInputs), indexTuple(g.savedInputs), indexTuple(g.savedResults), deps.get()));
  if (!layout)
    return false;
  if (!g.layout) {
    g.forwardFn = forward;
    g.backwardFn = backward;
    g.layout = layout;
  }
  return true;
}

} // namespace kiln

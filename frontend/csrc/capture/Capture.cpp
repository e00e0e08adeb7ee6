//===- Capture.cpp - capture driver: frame → kiln module + guards ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Runs the interpreter on a root frame, turns its Python result into graph
// results and output slots, verifies the module, and converts every failure
// (Unsupported, verifier errors) into a CaptureFailure with a location.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/interp/PlainObjects.h"
#include "capture/values/Deques.h"
#include "capture/values/EagerLayouts.h"
#include "capture/values/InputLayouts.h"
#include "capture/values/IdentitySets.h"

#include "mlir/IR/Diagnostics.h"
#include "capture/values/IdTokens.h"
#include "capture/values/ViewSteps.h" // viewStepsTuple
#include "mlir/IR/Verifier.h"

#include <map>

namespace kiln {
namespace {

void addOutput(Capture &out, std::vector<mlir::Value> &results,
               const std::vector<mlir::Value> &inputs, const VarP &v, int depth,
               std::vector<OutputSlot> *slots, std::map<const Var *, int> *clones = nullptr);

/// A side effect's value that is read per call rather than built from the
/// graph (LazyValues.cpp): a lazy `+ - *` expression (its leaves' types
/// guarded), or a value of the caller read through its source (the object
/// itself, so a stored list keeps its identity). False for other values.
bool addEffectSlot(Capture &out, std::vector<mlir::Value> &results,
                   const std::vector<mlir::Value> &inputs, const VarP &v, int depth,
                   std::vector<OutputSlot> &slots) {
  if (v->kind == Var::Kind::Lazy && !v->name.empty()) {
    slots.push_back(
        {OutputSlot::Kind::Binary, 2, PyRef::steal(PyUnicode_FromString(v->name.c_str()))});
    for (const VarP &operand : v->items) {
      if (operand->kind == Var::Kind::Lazy && operand->name.empty() &&
          std::none_of(out.guards.begin(), out.guards.end(), [&](const Guard &g) {
            return g.kind == Guard::Kind::Type && g.source == operand->source;
          })) {
        Guard g; // the operator's meaning depends on the operands' types
        g.kind = Guard::Kind::Type;
        g.source = operand->source;
        g.expected = PyRef::borrow(reinterpret_cast<PyObject *>(Py_TYPE(operand->obj.get())));
        out.guards.push_back(std::move(g));
      }
      addOutput(out, results, inputs, operand, depth + 1, &slots);
    }
    return true;
  }
  if (v->source >= 0 && (v->kind == Var::Kind::Lazy || v->isConst() || v->kind == Var::Kind::List ||
                         v->kind == Var::Kind::Dict)) {
    slots.push_back({OutputSlot::Kind::Source, v->source, {}});
    return true;
  }
  return false;
}

/// The keys of a Dict Var (attribute names of an Object Var) as a tuple.
PyRef keysTuple(const Var &v) {
  PyRef keys = PyRef::steal(PyTuple_New(v.keys.size()));
  for (size_t i = 0; i < v.keys.size(); ++i) {
    Py_INCREF(v.keys[i].get());
    PyTuple_SET_ITEM(keys.get(), i, v.keys[i].get());
  }
  return keys;
}

/// Counts in `seen` the user objects built in the frame (Object Vars,
/// values/UserObjects.cpp) that `v` holds.
void countObjects(const VarP &v, std::map<const Var *, int> &seen, int depth = 0) {
  if (depth > 16 || !(v->kind == Var::Kind::Object || v->kind == Var::Kind::Tuple ||
                      v->kind == Var::Kind::List || v->kind == Var::Kind::Dict))
    return;
  if (v->kind == Var::Kind::Object && ++seen[v.get()] > 1)
    return;
  for (const VarP &item : v->items)
    countObjects(item, seen, depth + 1);
}

/// A view of an input or of a computed tensor as a slot that replays it
/// (so it aliases its base as in eager); false for other values.
bool addViewSlot(Capture &out, std::vector<mlir::Value> &results, const VarP &v,
                 std::vector<OutputSlot> &outputs, std::map<const Var *, int> *clones) {
  bool inputView = v->isTensor() && v->viewInput >= 0 && !v->viewSteps.empty() && !v->copied;
  if (v->isTensor() && !v->viewSteps.empty() && !v->copied && clones &&
      (inputView || v->viewRoot)) {
    // One view held in several places (a local and the stack at a break,
    // `return y, y`) is one object.
    auto found = clones->find(v.get());
    if (found != clones->end()) {
      outputs.push_back(outputs[found->second]);
      outputs.back().sameAs = found->second;
      return true;
    }
    (*clones)[v.get()] = (int)outputs.size();
  }
  if (inputView) {
    // A view of an input is rebuilt from the caller's tensor (it aliases it).
    outputs.push_back({OutputSlot::Kind::InputView, v->viewInput, viewStepsTuple(*v)});
    return true;
  }
  if (v->isTensor() && v->viewRoot && !v->viewSteps.empty() && !v->copied &&
      !recomputesForAutograd(out)) {
    // A view of a computed tensor is rebuilt from that tensor, so that it
    // aliases it (and its other views) as in eager.
    auto found = std::find(results.begin(), results.end(), v->viewRoot);
    if (found == results.end())
      found = results.insert(results.end(), v->viewRoot);
    outputs.push_back(
        {OutputSlot::Kind::GraphView, (int)(found - results.begin()), viewStepsTuple(*v)});
    return true;
  }
  return false;
}

/// Adds the Python result `v` (and, for a tuple/list, its items after it)
/// to the result tree. `clones` (result tree only) maps each copied tensor
/// Var already placed to its slot, so a Var held twice is one object
/// twice, as in eager.
void addOutput(Capture &out, std::vector<mlir::Value> &results,
               const std::vector<mlir::Value> &inputs, const VarP &v, int depth,
               std::vector<OutputSlot> *slots, std::map<const Var *, int> *clones) {
  std::vector<OutputSlot> &outputs = slots ? *slots : out.outputs;
  if (v->isTensor() && v->vmapLevels > 0) // its layout is only meaningful inside
    throw Unsupported(BreakCategory::UnsupportedOp, "torch.vmap: a batched value escapes its vmap");
  if (slots == &out.effectValues && addEffectSlot(out, results, inputs, v, depth, *slots))
    return;
  if (v->kind == Var::Kind::Lazy) // materialized before any other use
    throw Unsupported("internal: an unread value reaches the result");
  if (v->mutatedContainer) // eager returns the caller's object itself
    throw Unsupported(BreakCategory::SideEffect,
                      "the function returns (or stores) a list/dict of the caller that it mutated",
                      "return a new list/dict instead of the mutated argument");
  if (isIdentitySet(v) || isDeque(v)) // IdentitySets.h, Deques.h
    throw Unsupported(BreakCategory::PythonBuiltin,
                      std::string(isDeque(v) ? "a deque" : "a set of tensors") +
                          " built in the frame escapes it (returned or stored)");
  if (v->kind == Var::Kind::Object) { // UserObjects.cpp
    if (depth > 16)
      throw Unsupported("the function returns too deeply nested containers");
    PyRef keys = keysTuple(*v);
    outputs.push_back({OutputSlot::Kind::Object, (int)v->items.size(), keys, false, v->obj});
    for (auto &item : v->items)
      addOutput(out, results, inputs, item, depth + 1, &outputs, clones);
    return;
  }
  if (v->kind == Var::Kind::Ndarray) { // interp/NumpyInterop.cpp
    if (recomputesForAutograd(out))
      throw Unsupported(BreakCategory::Numpy,
                        "a NumPy array escapes a graph whose backward recomputes it");
    outputs.push_back({OutputSlot::Kind::Numpy, v->name == "scalar" ? 1 : 0, {}});
    addOutput(out, results, inputs, v->self, depth + 1, &outputs, clones);
    return;
  }
  if (v->kind == Var::Kind::Dict) {
    if (depth > 16)
      throw Unsupported("the function returns too deeply nested containers");
    PyRef keys = keysTuple(*v);
    if (holdsIdToken(keys.get())) // IdTokens.h
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "the function returns a dict keyed by id() of values made per call");
    if (v->dictType && v->self) // a defaultdict: its factory is not rebuilt
      throw Unsupported(
          BreakCategory::SideEffect,
          "a defaultdict built in the frame escapes it (returned or live at a break)");
    // `copy` marks an OrderedDict: rebuilt as dictType(items) (Collections.cpp).
    outputs.push_back({OutputSlot::Kind::Dict, (int)v->items.size(), keys, (bool)v->dictType,
                       v->obj ? v->obj : v->dictType});
    for (auto &item : v->items)
      addOutput(out, results, inputs, item, depth + 1, &outputs, clones);
    return;
  }
  if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List) {
    if (depth > 16)
      throw Unsupported("the function returns too deeply nested containers");
    // A tuple with `obj` set is a torch.return_types result (values/indices).
    outputs.push_back(
        {v->kind == Var::Kind::Tuple ? OutputSlot::Kind::Tuple : OutputSlot::Kind::List,
         (int)v->items.size(),
         {},
         false,
         v->kind == Var::Kind::Tuple ? v->obj : PyRef()});
    for (auto &item : v->items)
      addOutput(out, results, inputs, item, depth + 1, &outputs, clones);
    return;
  }
  if (addViewSlot(out, results, v, outputs, clones))
    return;
  if (v->isTensor() && v->inputIndex >= 0) {
    // The caller's tensor itself (after in-place updates, their write-back).
    outputs.push_back({OutputSlot::Kind::Input, v->inputIndex, {}, v->copied});
    outputs.back().contiguousCopy = v->copied && v->contiguousCopy;
    return;
  }
  if (v->isTensor()) {
    // A clone() of an input or of another result is returned as a copy.
    if (v->copied && clones) {
      auto [it, first] = clones->try_emplace(v.get(), (int)outputs.size());
      if (!first) {
        outputs.push_back(outputs[it->second]);
        outputs.back().sameAs = it->second;
        return;
      }
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] == v->value) {
        outputs.push_back({OutputSlot::Kind::Input, (int)i, {}, v->copied});
        outputs.back().contiguousCopy = v->copied && v->contiguousCopy;
        return;
      }
    for (size_t i = 0; i < results.size(); ++i)
      if (results[i] == v->value) {
        outputs.push_back({OutputSlot::Kind::Graph, (int)i, {}, v->copied});
        return;
      }
    results.push_back(v->value);
    outputs.push_back({OutputSlot::Kind::Graph, (int)results.size() - 1, {}});
    return;
  }
  if (v->kind == Var::Kind::SymInt && v->sym) { // `return x, x.shape[1]` of a `?` dim
    OutputSlot slot{v->staticSym ? OutputSlot::Kind::Constant : OutputSlot::Kind::SymSize, 0,
                    v->staticSym ? PyRef::steal(PyLong_FromLongLong(v->captured)) : PyRef()};
    slot.size = v->sym; // the shadow static capture: its value at capture
    outputs.push_back(std::move(slot));
    return;
  }
  if (v->kind == Var::Kind::Scalar) { // ops/Scalars.cpp: the 0-d result's .item()
    auto found = std::find(results.begin(), results.end(), v->scalar);
    if (found == results.end())
      found = results.insert(results.end(), v->scalar);
    outputs.push_back({OutputSlot::Kind::Scalar, (int)(found - results.begin()), {}});
    return;
  }
  if (v->isConst()) {
    if (holdsIdToken(v->obj.get())) // IdTokens.h: no number to give the caller
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "the function returns id() of a value made per call");
    // A list/dict/set the capture made (sorted(), set() ...) is a new object
    // per call in eager: a returned one is a copy per call, one copy per
    // Var (a break's state copies them itself: BreakState.cpp).
    PyObject *o = v->obj.get();
    bool fresh = clones && out.stopOffset < 0 && v->source < 0 &&
                 (PyList_CheckExact(o) || PyDict_CheckExact(o) || PySet_CheckExact(o) ||
                  PyByteArray_CheckExact(o));
    if (fresh) {
      auto [it, first] = clones->try_emplace(v.get(), (int)outputs.size());
      if (!first) {
        outputs.push_back(outputs[it->second]);
        outputs.back().sameAs = it->second;
        return;
      }
    }
    if (v->source >= 0 && isPlainObject(o)) {
      // An object of the caller's (a KV cache passed in and returned in a
      // model's output): the call's own object, read through its source,
      // so the object keeps the Type guard it had (PlainObjects.cpp)
      // instead of pinning the compile-time one by identity.
      outputs.push_back({OutputSlot::Kind::Source, v->source, {}});
      return;
    }
    outputs.push_back({OutputSlot::Kind::Constant, 0, v->obj, fresh});
    return;
  }
  throw Unsupported("the function returns a value kiln cannot rebuild (a dict or object?)");
}

/// The value a CopyInto effect writes into its input: a graph result (or
/// the input itself when no update changed it).
void addWriteBack(Capture &out, std::vector<mlir::Value> &results,
                  const std::vector<mlir::Value> &inputs, mlir::Value v) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i] == v) {
      out.effectValues.push_back({OutputSlot::Kind::Input, (int)i, {}});
      return;
    }
  auto found = std::find(results.begin(), results.end(), v);
  if (found == results.end())
    found = results.insert(results.end(), v);
  out.effectValues.push_back({OutputSlot::Kind::Graph, (int)(found - results.begin()), {}});
}

/// A `?` result dim must be one symbolic size: an input's passed through,
/// or a derived one (an affine expression of them, SymbolicSizes.cpp) whose
/// captured value differs from every other symbol's; the entry allocates
/// it from that size. An untracked expression whose captured value happens
/// to equal a symbol's would otherwise be matched to it by value and
/// allocated wrongly.
void checkSymbolicResults(Interpreter &interp, mlir::Block &entry,
                          llvm::ArrayRef<mlir::Value> results) {
  // Every `?` dim of the graph that is an expression of symbols (a concat
  // of a cache and a new token) gets its derived symbol, so the check
  // against the static capture finds its size (DynamicShapes.cpp).
  entry.walk([&](mlir::Operation *op) {
    for (mlir::Value r : op->getResults())
      if (auto t = llvm::dyn_cast<mlir::RankedTensorType>(r.getType()))
        for (int64_t d = 0; d < t.getRank(); ++d)
          if (t.isDynamicDim(d))
            interp.symbolOfDim(r, d);
  });
  for (mlir::Value r : results) {
    auto t = llvm::cast<mlir::RankedTensorType>(r.getType());
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (t.isDynamicDim(d) && interp.symbolOfDim(r, d) < 0)
        throw Unsupported(BreakCategory::DynamicShape,
                          "result dim " + std::to_string(d) +
                              " is an expression of symbolic sizes, not one of them",
                          hint::kSpecializeSizes);
  }
}

/// Marks `kiln.no_grad` each op whose float result eager computes without
/// gradients although an operand has one (torch.no_grad(), running
/// stats): the compiled backward's gradients stop there
/// (transforms/Autodiff.h).
void markNoGradOps(mlir::Block &entry, const llvm::DenseSet<mlir::Value> &grad) {
  for (mlir::Operation &op : entry)
    if (llvm::any_of(op.getOperands(), [&](mlir::Value v) { return grad.contains(v); }) &&
        llvm::any_of(op.getResults(), [&](mlir::Value r) {
          auto t = llvm::dyn_cast<mlir::RankedTensorType>(r.getType());
          return t && llvm::isa<mlir::FloatType>(t.getElementType()) && !grad.contains(r);
        }))
      op.setAttr("kiln.no_grad", mlir::UnitAttr::get(op.getContext()));
}

/// An exception raised and caught at capture, or a module built at capture
/// (BuiltModules.cpp), is one object for every call (an exception without
/// a traceback): neither may reach the caller's code.
void refuseCaptureTimeObjects(Interpreter &interp, const VarP &result) {
  bool exception = interp.holdsMadeException(result);
  bool module = holdsBuiltModule(interp, result);
  for (const VarP &v : interp.effectValues()) {
    exception |= interp.holdsMadeException(v);
    module |= holdsBuiltModule(interp, v);
  }
  if (module) {
    Unsupported u(BreakCategory::SideEffect,
                  "a module constructed in the compiled code (built once, at capture) is "
                  "returned, stored or live at a graph break",
                  "construct the module outside the compiled function (in __init__)");
    u.resumable = false;
    throw u;
  }
  if (exception) {
    Unsupported u(BreakCategory::UserError,
                  "an exception object caught in the compiled code is returned, stored or "
                  "live at a graph break",
                  "use the exception only inside its except block");
    u.resumable = false;
    throw u;
  }
}

} // namespace

bool recomputesForAutograd(const Capture &out) {
  return out.gradMode && std::any_of(out.inputs.begin(), out.inputs.end(),
                                     [](const GraphInput &in) { return in.requiresGrad; });
}

bool captureFrame(mlir::MLIRContext &ctx, PyCodeObject *code, PyObject *func,
                  const FrameView &frame, Capture &out, CaptureFailure &failure) {
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return mlir::success();
  });
  Interpreter interp(ctx, frame, out);
  int effectOffset = -1;
  try {
    out.defaultDtype = defaultDtype();
    auto def = out.defaultDtype ? dtypeFromObject(out.defaultDtype) : std::nullopt;
    if (!def)
      throw Unsupported(BreakCategory::UnsupportedOp, "torch's default dtype is not supported",
                        "use torch.float32 or torch.float64 as the default dtype");
    setDefaultFloat(*def);
    VarP result = interp.runRoot(code, func);
    refuseCaptureTimeObjects(interp, result);
    interp.guardThreadCount();
    interp.checkGradRegions();
    auto fn = llvm::cast<mlir::func::FuncOp>(out.module->getBody()->front());
    mlir::Block &entry = fn.getBody().front();
    std::vector<mlir::Value> inputs = inputValues(entry);
    std::vector<mlir::Value> results;
    std::map<const Var *, int> clones;
    if (out.stopOffset >= 0) {
      // A break's prefix: the state tuple; note which items hold results.
      if (!out.state.reached || result->kind != Var::Kind::Tuple)
        throw Unsupported("the capture did not reach the graph break again");
      out.outputs.push_back({OutputSlot::Kind::Tuple, (int)result->items.size(), {}});
      for (size_t i = 0; i < result->items.size(); ++i) {
        // Items read from the frame per call (Resume.cpp) need no slot value.
        if (std::any_of(out.state.sourced.begin(), out.state.sourced.end(),
                        [&](auto &p) { return p.first == (int)i; })) {
          out.outputs.push_back({OutputSlot::Kind::Constant, 0, PyRef::borrow(Py_None)});
          continue;
        }
        size_t before = results.size();
        addOutput(out, results, inputs, result->items[i], 1, nullptr, &clones);
        if (results.size() > before)
          out.state.needed.push_back((int)i);
      }
    } else {
      addOutput(out, results, inputs, result, 0, nullptr, &clones);
    }
    // The side effects' values: tensors among them are extra graph results
    // (a CopyInto's: the input's final value, written back after the graph).
    if ((effectOffset = interp.checkWriteBacks()) >= 0)
      throw Unsupported(BreakCategory::SideEffect,
                        "an in-place update of a graph input that shares storage with another "
                        "input is not supported",
                        "pass tensors that do not alias, or .clone() one of them");
    // An object built in the frame is rebuilt once per place it reaches:
    // held twice (returned and stored, stored twice), its identity would
    // split, so the frame runs eagerly instead.
    std::map<const Var *, int> objects;
    countObjects(result, objects);
    for (size_t i = 0; i < interp.effectValues().size(); ++i)
      if (out.effects[i].kind != SideEffect::Kind::CopyInto)
        countObjects(interp.effectValues()[i], objects);
    for (const auto &[object, count] : objects)
      if (count > 1)
        throw Unsupported(BreakCategory::SideEffect,
                          "an object built in the frame is held in two places it escapes to "
                          "(returned and stored, or stored twice): its identity is not kept",
                          "return or store the object once");
    for (size_t i = 0; i < interp.effectValues().size(); ++i)
      if (out.effects[i].kind == SideEffect::Kind::CopyInto)
        addWriteBack(out, results, inputs, interp.effectValues()[i]->value);
      else
        addOutput(out, results, inputs, interp.effectValues()[i], 1, &out.effectValues);
    // Tensors eager returns channels-last (or permuted) keep its strides.
    matchEagerLayouts(out, entry, results, interp.layoutSources());
    // Its backward recomputes the function eagerly (kiln._autograd): the
    // mutations must be ones it can undo around that (GradFlow.cpp), and
    // results eager computes without gradients are marked so.
    llvm::DenseSet<mlir::Value> grad;
    if (recomputesForAutograd(out)) {
      grad = interp.gradValues();
      interp.checkAutogradEffects(grad, effectOffset);
      markNoGradOps(entry, grad);
    }
    mlir::OpBuilder b(&ctx);
    b.setInsertionPointToEnd(&entry);
    if (!out.symbols.empty() && !out.dynamic.shadow)
      checkSymbolicResults(interp, entry, results);
    if (mlir::Value check = indexRangeCheck(interp, entry)) {
      out.indexCheck = (int)results.size();
      results.push_back(check);
    }
    b.create<mlir::func::ReturnOp>(interp.loc(), results);
    llvm::SmallVector<mlir::Type> resultTypes;
    for (mlir::Value r : results) {
      auto t = llvm::cast<mlir::RankedTensorType>(r.getType());
      resultTypes.push_back(t);
      out.results.push_back({std::vector<int64_t>(t.getShape().begin(), t.getShape().end()),
                             dtypeOf(t.getElementType())});
      out.results.back().noGrad = recomputesForAutograd(out) && !grad.contains(r);
    }
    fn.setFunctionType(b.getFunctionType(entry.getArgumentTypes(), resultTypes));
    out.numOps = 0;
    fn.walk([&](mlir::Operation *op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "kiln")
        ++out.numOps;
    });
    if (mlir::failed(mlir::verify(*out.module)))
      throw Unsupported(BreakCategory::Verifier, "captured IR does not verify: " + diagnostics,
                        "a kiln bug: please report it with the KILN_DEBUG_DIR dump");
    std::string partitionError;
    if (!out.fallbacks.empty() && !partitionProgram(out, partitionError))
      throw Unsupported(BreakCategory::Backend,
                        "cannot split the graph at its fallback calls: " + partitionError);
    interp.finishModuleGuards(/*captured=*/true);
  } catch (const Unsupported &e) {
    interp.finishModuleGuards(/*captured=*/false);
    failure.category = e.category;
    failure.hint = e.hint;
    // A Python error still pending is what made the construct fail: keep its text.
    failure.reason = withPythonError(e.what());
    failure.rootOffset = !e.resumable        ? -1 // no resume: the frame runs eagerly
                         : effectOffset >= 0 ? effectOffset
                                             : interp.rootOffset();
    failure.madeScalars = out.madeScalars;
    if (!diagnostics.empty() && failure.reason.find(diagnostics) == std::string::npos)
      failure.reason += " (" + diagnostics.substr(0, diagnostics.size() - 1) + ")";
    if (auto fl = llvm::dyn_cast<mlir::FileLineColLoc>(interp.loc()))
      failure.location = fl.getFilename().str() + ":" + std::to_string(fl.getLine());
    return false;
  }
  return true;
}

} // namespace kiln

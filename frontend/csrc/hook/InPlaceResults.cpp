//===- InPlaceResults.cpp - results written straight into updated inputs ---===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements InPlaceResults.h: finds the results whose one use is a
// CopyInto side effect of a whole, contiguous graph input of the same type.
//===----------------------------------------------------------------------===//
#include "hook/InPlaceResults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <map>

namespace kiln {

namespace {

/// Number of slots of the subtree that starts at `pos` (prefix order).
size_t subtreeSize(const std::vector<OutputSlot> &slots, size_t pos) {
  const OutputSlot &s = slots[pos];
  size_t children = 0;
  switch (s.kind) {
  case OutputSlot::Kind::Tuple:
  case OutputSlot::Kind::List:
  case OutputSlot::Kind::Dict:
  case OutputSlot::Kind::Object:
    children = s.index;
    break;
  case OutputSlot::Kind::Binary:
    children = 2;
    break;
  case OutputSlot::Kind::Numpy:
    children = 1;
    break;
  default:
    break;
  }
  size_t size = 1;
  for (size_t c = 0; c < children && pos + size < slots.size(); ++c)
    size += subtreeSize(slots, pos + size);
  return size;
}

/// Adds one per use of each graph result in `slots` to `uses`.
void countResultUses(const std::vector<OutputSlot> &slots, std::map<int, int> &uses) {
  for (const OutputSlot &s : slots)
    if (s.kind == OutputSlot::Kind::Graph || s.kind == OutputSlot::Kind::GraphView ||
        s.kind == OutputSlot::Kind::Scalar)
      ++uses[s.index];
}

/// (result, target source) of each CopyInto whose value is one graph result.
std::vector<std::pair<int, int>> copiedResults(const Capture &cap, std::map<int, int> &targets) {
  std::vector<std::pair<int, int>> found;
  size_t pos = 0;
  for (const SideEffect &e : cap.effects) {
    if (pos >= cap.effectValues.size())
      break;
    size_t size = subtreeSize(cap.effectValues, pos);
    const OutputSlot &s = cap.effectValues[pos];
    if (e.kind == SideEffect::Kind::CopyInto) {
      ++targets[e.target];
      if (size == 1 && s.kind == OutputSlot::Kind::Graph && !s.copy)
        found.push_back({s.index, e.target});
    }
    pos += size;
  }
  return found;
}

} // namespace

std::vector<int> markInPlaceResults(Capture &cap) {
  std::vector<int> inPlace;
  // A graph with an index check raises after it ran, before its
  // write-backs reach the caller: its results must not be the inputs.
  if (!cap.module || !cap.symbols.empty() || cap.indexCheck >= 0)
    return inPlace;
  auto func = cap.module->lookupSymbol<mlir::func::FuncOp>("forward");
  if (!func || func.getNumArguments() != cap.inputs.size() ||
      func.getNumResults() != cap.results.size())
    return inPlace;
  std::map<int, int> uses, targets;
  countResultUses(cap.outputs, uses);
  // Only graphs that return no tensor and whose whole effect is updating
  // their inputs from graph results (an optimizer step): a returned value
  // may be an input's old value copied out after the graph (`y =
  // x.clone(); x.zero_(); return y`), and a replayed side effect (a print)
  // may read an input as it was before the update.
  using K = OutputSlot::Kind;
  for (const OutputSlot &o : cap.outputs)
    if (o.kind != K::Constant && o.kind != K::Tuple && o.kind != K::List && o.kind != K::Dict)
      return inPlace;
  for (const OutputSlot &o : cap.effectValues)
    if (o.kind == K::Input || o.kind == K::InputView || o.kind == K::Source || o.kind == K::Binary)
      return inPlace;
  for (const SideEffect &e : cap.effects)
    if (e.kind != SideEffect::Kind::CopyInto)
      return inPlace;
  countResultUses(cap.effectValues, uses);
  mlir::OpBuilder b(func.getContext());
  for (auto [result, target] : copiedResults(cap, targets)) {
    if (uses[result] != 1 || targets[target] != 1 || result == cap.indexCheck)
      continue;
    for (size_t i = 0; i < cap.inputs.size(); ++i) {
      const GraphInput &in = cap.inputs[i];
      if (!in.isTensor() || in.source != target || in.makeContiguous || !in.memoryOrder.empty() ||
          func.getArgumentTypes()[i] != func.getResultTypes()[result])
        continue;
      inPlace.resize(cap.results.size(), -1);
      inPlace[result] = (int)i;
      func.setResultAttr(result, "kiln.in_place_input", b.getI64IntegerAttr((int64_t)i));
      break;
    }
  }
  return inPlace;
}

} // namespace kiln

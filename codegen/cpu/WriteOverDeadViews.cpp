//===- WriteOverDeadViews.cpp - elementwise results in a dead input's place ---===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-write-over-dead-views` (Passes.td): an elementwise
// `linalg.generic` that writes a fresh `tensor.empty` while one of its
// inputs, of the same type, is a view (a slice or reshape) of a value
// nothing else reads, takes that input as its init, so that one-shot
// bufferization computes the result over the input's elements. The memory
// planner already writes an elementwise result over a dead input buffer of
// its own type; a view of a larger buffer (the interior of a padded
// gradient: resnet's stem ReLU gradient reads the max-pool gradient's
// interleave without its border) is not a buffer of that type, so it
// needed a buffer of its own.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Matchers.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUWRITEOVERDEADVIEWSPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// True when `value` is a slice or reshape (through any chain of them) of
/// a computed tensor, each value in the chain used once and defined in
/// `block` (the reader's: not a value a loop body reads again on its next
/// iteration): writing over `value` then overwrites only elements nothing
/// else reads. Function arguments (not writable), constants and
/// uninitialized tensors do not count.
bool soleUseView(Value value, Block *block) {
  bool viewed = false;
  while (value.hasOneUse()) {
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != block || matchPattern(value, m_Constant()) ||
        isa<tensor::EmptyOp, bufferization::ToTensorOp>(def))
      return false;
    if (!isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
      return viewed;
    viewed = true;
    value = def->getOperand(0);
  }
  return false;
}

/// The input `generic` can write its result over, if any.
OpOperand *deadViewInput(linalg::GenericOp generic) {
  if (generic.getNumDpsInits() != 1 || !generic.hasPureTensorSemantics() ||
      generic.getNumLoops() != generic.getNumParallelLoops())
    return nullptr;
  OpOperand *init = generic.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>() || generic.payloadUsesValueFromOperand(init) ||
      !generic.getMatchingIndexingMap(init).isIdentity())
    return nullptr;
  for (OpOperand *input : generic.getDpsInputOperands())
    if (input->get().getType() == init->get().getType() &&
        generic.getMatchingIndexingMap(input).isIdentity() &&
        soleUseView(input->get(), generic->getBlock()))
      return input;
  return nullptr;
}

struct CpuWriteOverDeadViewsPass : impl::CpuWriteOverDeadViewsPassBase<CpuWriteOverDeadViewsPass> {
  void runOnOperation() override {
    getOperation().walk([](linalg::GenericOp generic) {
      if (OpOperand *input = deadViewInput(generic))
        generic.getDpsInitOperand(0)->set(input->get());
    });
  }
};

} // namespace
} // namespace mlir::kiln

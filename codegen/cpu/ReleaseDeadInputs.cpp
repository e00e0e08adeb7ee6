//===- ReleaseDeadInputs.cpp - a call after each releasable input's last read -===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-release-dead-inputs`: for each argument listed in a function's
// `kiln.release_inputs` (kiln-autodiff lists a backward's saved
// activations), a call `kilnReleaseInput(i)` right after the last top-level
// op that touches the argument or a view of it, so the frontend can drop
// the tensor there (runtime/cpu/CallHooks.h): a backward reaches the first
// layer last, and eager frees each node's saved tensors once the node ran.
// An argument whose uses the live range cannot follow (a call that may
// keep the pointer, a region it cannot order) gets no call.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/LiveRanges.h"
#include "codegen/cpu/Passes.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPURELEASEDEADINPUTSPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

constexpr const char kReleaseFn[] = "kilnReleaseInput";

LogicalResult releaseInputs(func::FuncOp fn, DenseI64ArrayAttr indices) {
  Block &entry = fn.getBody().front();
  BlockPositions positions = positionsOf(entry);
  const DenseMap<Operation *, unsigned> &position = positions.index;
  ArrayRef<Operation *> ops = positions.ops;
  OpBuilder b(fn.getContext());
  for (int64_t i : indices.asArrayRef()) {
    if (i < 0 || i >= static_cast<int64_t>(entry.getNumArguments()) ||
        !isa<BaseMemRefType>(entry.getArgument(i).getType()))
      return fn.emitError() << "kiln.release_inputs: argument " << i << " is not a memref argument";
    BlockArgument arg = entry.getArgument(i);
    unsigned first = 0, last = 0;
    if (arg.use_empty())
      b.setInsertionPointToStart(&entry);
    else if (succeeded(bufferLiveRange(arg, entry, position, first, last)))
      b.setInsertionPointAfter(ops[last]);
    else
      continue;
    Location loc = arg.getLoc();
    Value index = b.create<arith::ConstantIntOp>(loc, i, 64);
    b.create<func::CallOp>(loc, kReleaseFn, TypeRange{}, ValueRange{index});
  }
  return success();
}

struct CpuReleaseDeadInputsPass : impl::CpuReleaseDeadInputsPassBase<CpuReleaseDeadInputsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool any = false;
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
      auto indices = fn->getAttrOfType<DenseI64ArrayAttr>(kReleaseInputsAttr);
      if (!indices || fn.isExternal())
        continue;
      if (failed(releaseInputs(fn, indices)))
        return signalPassFailure();
      any = true;
    }
    if (!any || module.lookupSymbol(kReleaseFn))
      return;
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto decl = b.create<func::FuncOp>(module.getLoc(), kReleaseFn,
                                       b.getFunctionType({b.getI64Type()}, {}));
    decl.setPrivate();
  }
};

} // namespace
} // namespace mlir::kiln

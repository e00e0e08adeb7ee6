//===- ElideOutputCopies.cpp - buffers computed in their output ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-elide-output-copies` (Passes.td): a buffer that bufferization
// allocated for a value the function then copies whole into an output
// argument (a run-time call's result, e.g. oneDNN's weight gradient, which
// one-shot bufferization cannot write in place) is replaced by that output
// argument, so the value is computed where the caller reads it: no copy,
// and no intermediate held until the function's end (a backward's weight
// gradients all finish at its return).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/MemRefViews.h"
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUELIDEOUTPUTCOPIESPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// The output argument `copy` fills when it is one the pass may hand to the
/// copied buffer's producer: a plain argument of `fn` with the identity
/// layout, used by nothing but `copy` (so nothing reads or writes it
/// earlier), not sharing an input's memory (`kiln.in_place_input`).
BlockArgument soleOutput(func::FuncOp fn, memref::CopyOp copy) {
  auto arg = dyn_cast<BlockArgument>(copy.getTarget());
  if (!arg || arg.getOwner() != &fn.getBody().front() || !arg.hasOneUse())
    return {};
  auto type = dyn_cast<MemRefType>(arg.getType());
  if (!type || !type.getLayout().isIdentity() ||
      fn.getArgAttr(arg.getArgNumber(), "kiln.in_place_input"))
    return {};
  return arg;
}

/// True when every op touching `alloc`'s buffer (through any view) comes
/// before `copy` in the entry block, and none frees it.
bool finishedBefore(memref::AllocOp alloc, memref::CopyOp copy) {
  Block *entry = copy->getBlock();
  for (Value v : viewsOf(alloc.getResult()))
    for (Operation *user : v.getUsers()) {
      if (user == copy.getOperation())
        continue;
      Operation *top = entry->findAncestorOpInBlock(*user);
      if (!top || isa<memref::DeallocOp>(user) || !top->isBeforeInBlock(copy))
        return false;
    }
  return true;
}

struct CpuElideOutputCopiesPass : impl::CpuElideOutputCopiesPassBase<CpuElideOutputCopiesPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    SmallVector<memref::CopyOp> copies;
    for (Operation &op : fn.getBody().front())
      if (auto copy = dyn_cast<memref::CopyOp>(op))
        copies.push_back(copy);
    for (memref::CopyOp copy : copies) {
      BlockArgument out = soleOutput(fn, copy);
      auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
      if (!out || !alloc || alloc->getBlock() != copy->getBlock() ||
          alloc.getType() != out.getType() || !finishedBefore(alloc, copy))
        continue;
      copy.erase();
      alloc.getResult().replaceAllUsesWith(out);
      alloc.erase();
    }
  }
};

} // namespace
} // namespace mlir::kiln

//===- FreeEarly.cpp - buffers allocated at first use, freed after last --------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-free-early`: the deallocation pipeline frees every buffer at the
// end of its block, so without the arena (symbolic sizes, buffers the
// planner cannot follow) all of a function's intermediates were live at
// once. This pass moves each top-level `memref.dealloc` of a top-level
// `memref.alloc` up to just after the last top-level op that uses the
// buffer or a view of it, and the alloc down to just before its first
// user. A buffer with an alias the live range cannot follow (passed to a
// call, yielded, returned) keeps its places.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/LiveRanges.h"
#include "codegen/cpu/Passes.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUFREEEARLYPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

struct CpuFreeEarlyPass : impl::CpuFreeEarlyPassBase<CpuFreeEarlyPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    Block &entry = fn.getBody().front();
    BlockPositions positions = positionsOf(entry);
    const DenseMap<Operation *, unsigned> &position = positions.index;
    ArrayRef<Operation *> ops = positions.ops;
    SmallVector<std::pair<memref::DeallocOp, memref::AllocOp>> pairs;
    for (auto dealloc : entry.getOps<memref::DeallocOp>())
      if (auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
          alloc && alloc->getBlock() == &entry)
        pairs.push_back({dealloc, alloc});
    for (auto [dealloc, alloc] : pairs) {
      unsigned first = 0, last = 0;
      if (failed(bufferLiveRange(alloc.getResult(), entry, position, first, last, dealloc)))
        continue;
      unsigned firstUser = first;
      for (Operation *user : alloc->getUsers())
        if (Operation *top = entry.findAncestorOpInBlock(*user); top && top != dealloc)
          firstUser = std::min(firstUser, position.lookup(top));
      if (last < position.lookup(dealloc))
        dealloc->moveAfter(ops[last]);
      if (firstUser > position.lookup(alloc))
        alloc->moveBefore(ops[firstUser]);
    }
  }
};

} // namespace
} // namespace mlir::kiln

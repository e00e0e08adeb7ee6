//===- LazyOutputs.cpp - outputs allocated right before their first write -----===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-lazy-outputs`: an output argument marked `kiln.lazy_output = i`
// arrives without memory (the frontend leaves its data pointer null; its
// sizes are set). A `memref.alloc` carrying `kiln.output_index = i` is
// placed just before the first top-level op that touches the argument
// (through views; reading its sizes is no touch) and replaces it there:
// kiln-cpu-lower-output-allocs turns it into a call that asks the frontend
// for the caller's tensor (runtime/cpu/OutputAllocator.h). Views of the
// argument made earlier (a returned reshape's view, made at the top) move
// down after the alloc. Runs late, after the loops are final and the last
// canonicalization (which would erase an alloc that is only written).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/MemRefViews.h"
#include "codegen/cpu/Passes.h"

#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPULAZYOUTPUTSPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// The first top-level op of `entry` touching `arg` (through views), or
/// null; `views` gets the top-level view ops of `arg` (transitively).
Operation *firstTouch(BlockArgument arg, Block &entry, SmallVectorImpl<Operation *> &views) {
  Operation *first = nullptr;
  for (Value v : viewsOf(arg)) {
    if (!isa<BaseMemRefType>(v.getType()))
      continue;
    for (Operation *user : v.getUsers()) {
      Operation *top = entry.findAncestorOpInBlock(*user);
      if (!top || (v == arg && isa<memref::DimOp>(user)))
        continue;
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      if (view && view.getViewSource() == v && user == top)
        views.push_back(user);
      else if (!first || top->isBeforeInBlock(first))
        first = top;
    }
  }
  return first;
}

LogicalResult placeAlloc(func::FuncOp fn, BlockArgument arg, IntegerAttr index) {
  auto type = dyn_cast<MemRefType>(arg.getType());
  if (!type || !type.getLayout().isIdentity())
    return fn.emitError() << "kiln.lazy_output on argument " << arg.getArgNumber()
                          << ", which is not an identity-layout memref";
  Block &entry = fn.getBody().front();
  SmallVector<Operation *> views;
  Operation *at = entry.getTerminator();
  if (fn.getBody().hasOneBlock()) {
    if (Operation *first = firstTouch(arg, entry, views))
      at = first;
  } else {
    at = &entry.front(); // control flow at the top: allocated first thing
  }
  OpBuilder b(at);
  Location loc = arg.getLoc();
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0, r = type.getRank(); d < r; ++d)
    if (type.isDynamicDim(d))
      dynamicSizes.push_back(b.create<memref::DimOp>(loc, arg, d));
  auto alloc = b.create<memref::AllocOp>(loc, type, dynamicSizes, b.getI64IntegerAttr(64));
  alloc->setAttr(kOutputIndexAttr, index);
  // Views made above the alloc move below it, in their order.
  llvm::sort(views, [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  for (Operation *view : views)
    if (view->isBeforeInBlock(alloc))
      view->moveBefore(at);
  arg.replaceUsesWithIf(alloc, [&](OpOperand &use) {
    Operation *top = entry.findAncestorOpInBlock(*use.getOwner());
    return top && alloc->isBeforeInBlock(top);
  });
  return success();
}

struct CpuLazyOutputsPass : impl::CpuLazyOutputsPassBase<CpuLazyOutputsPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    for (BlockArgument arg : fn.getArguments()) {
      auto index = fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), kLazyOutputAttr);
      if (index && failed(placeAlloc(fn, arg, index)))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlir::kiln

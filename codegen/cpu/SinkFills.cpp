//===- SinkFills.cpp - fills moved down to their buffer's next use ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements SinkFills.h (used by kiln-cpu-fuse-rows and
// kiln-cpu-plan-memory).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/SinkFills.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::kiln {

namespace {

/// The values that alias `root`: itself and its views, transitively.
llvm::SmallPtrSet<Value, 8> aliasesOf(Value root) {
  llvm::SmallPtrSet<Value, 8> aliases{root};
  SmallVector<Value> worklist{root};
  while (!worklist.empty())
    for (Operation *user : worklist.pop_back_val().getUsers())
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        for (Value r : user->getResults())
          if (aliases.contains(view.getViewSource()) && aliases.insert(r).second)
            worklist.push_back(r);
  return aliases;
}

/// The buffer `op` initializes from nothing but constants: the output of
/// a `linalg.fill` on buffers, the target of a `memref.copy` from a
/// constant global (a pad's borders); null for any other op.
Value initializedBuffer(Operation *op) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.hasPureBufferSemantics() ? fill.getDpsInits()[0] : Value();
  auto copy = dyn_cast<memref::CopyOp>(op);
  if (!copy)
    return Value();
  auto global = copy.getSource().getDefiningOp<memref::GetGlobalOp>();
  auto module = op->getParentOfType<ModuleOp>();
  auto decl = global && module ? module.lookupSymbol<memref::GlobalOp>(global.getNameAttr())
                               : memref::GlobalOp();
  return decl && decl.getConstant() ? copy.getTarget() : Value();
}

/// An output argument of the function whose body is `block`, other than
/// one sharing an input's memory (kiln.in_place_input): nothing else
/// touches its memory, so its fill may move (a backward's hoisted zero
/// fills of weight gradients, which kiln-cpu-lazy-outputs then allocates
/// where the fill is, not all at the top).
bool isSinkableArgument(Value root, Block &block) {
  auto arg = dyn_cast<BlockArgument>(root);
  auto fn = dyn_cast_or_null<FunctionOpInterface>(block.getParentOp());
  return arg && fn && arg.getOwner() == &block && block.isEntryBlock() &&
         !fn.getArgAttr(arg.getArgNumber(), "kiln.in_place_input");
}

} // namespace

/// Moves each `linalg.fill` of an allocation (or a view of it), and each
/// copy of a constant global into one, down to just before the next op
/// that touches that memory (making a view does not). Bufferization
/// leaves the zero fills of GEMM outputs and the constant borders of
/// padded inputs hoisted to the top of the function
/// (kiln-cpu-linalg-to-blas later folds the zero fills into beta = 0);
/// where they stand they would make every GEMM output and padded buffer
/// live from the function's start. Such an op reads only constants defined
/// above it, so the move is legal as long as nothing in between reads or
/// writes the buffer.
void sinkFills(Block &block) {
  SmallVector<Operation *> inits;
  for (Operation &op : block)
    if (initializedBuffer(&op))
      inits.push_back(&op);
  // Last first: initializers of one buffer's pieces (a pad's borders) then
  // move down together, each to just before the one after it.
  for (Operation *fill : llvm::reverse(inits)) {
    Value root = initializedBuffer(fill);
    while (auto view = root.getDefiningOp<ViewLikeOpInterface>())
      root = view.getViewSource();
    if (!root.getDefiningOp<memref::AllocOp>() && !isSinkableArgument(root, block))
      continue;
    llvm::SmallPtrSet<Value, 8> aliases = aliasesOf(root);
    Operation *next = nullptr;
    for (Operation *op = fill->getNextNode(); op && !next; op = op->getNextNode()) {
      if (isa<ViewLikeOpInterface>(op))
        continue;
      op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          if (aliases.contains(v))
            next = op;
        return next ? WalkResult::interrupt() : WalkResult::advance();
      });
    }
    if (next && next != fill->getNextNode() && !next->hasTrait<OpTrait::IsTerminator>())
      fill->moveBefore(next);
  }
}

} // namespace mlir::kiln

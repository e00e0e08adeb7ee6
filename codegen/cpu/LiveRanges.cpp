//===- LiveRanges.cpp - where a buffer is used in a function's block ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements LiveRanges.h.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/LiveRanges.h"
#include "codegen/cpu/CallAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::kiln {

BlockPositions positionsOf(Block &block) {
  BlockPositions p;
  for (Operation &op : block) {
    p.index[&op] = p.ops.size();
    p.ops.push_back(&op);
  }
  return p;
}

bool isPlainBufferUse(Operation *user) {
  // A call of a run-time function declared to only access its buffer
  // arguments during the call (kiln-cpu-convs-to-dnnl's oneDNN shim).
  if (auto call = dyn_cast<func::CallOp>(user)) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
    if (callee && callee->hasAttr(kBufferArgsOnlyAttr))
      return true;
  }
  if (isa<CallOpInterface, RegionBranchOpInterface, RegionBranchTerminatorOpInterface,
          memref::DeallocOp, memref::ExtractStridedMetadataOp>(user) ||
      user->hasTrait<OpTrait::IsTerminator>())
    return false;
  for (Type t : user->getResultTypes())
    if (isa<BaseMemRefType, TensorType>(t))
      return false;
  return true;
}

LogicalResult bufferLiveRange(Value root, Block &block,
                              const llvm::DenseMap<Operation *, unsigned> &position,
                              unsigned &first, unsigned &last, Operation *ignore) {
  SmallVector<Value> worklist{root};
  bool used = false;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == ignore)
        continue;
      Operation *top = block.findAncestorOpInBlock(*user);
      if (!top)
        return failure();
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      // extract_strided_metadata's base buffer aliases v like a view.
      if ((view && view.getViewSource() == v) || isa<memref::ExtractStridedMetadataOp>(user)) {
        // Making a view touches no memory: its uses count, not it.
        for (Value r : user->getResults())
          if (isa<BaseMemRefType>(r.getType()))
            worklist.push_back(r);
        continue;
      }
      if (!isPlainBufferUse(user))
        return failure();
      unsigned at = position.lookup(top);
      first = used ? std::min(first, at) : at;
      last = used ? std::max(last, at) : at;
      used = true;
    }
  }
  return success(used);
}

} // namespace mlir::kiln

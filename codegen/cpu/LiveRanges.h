//===- LiveRanges.h - where a buffer is used in a function's block -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The live range of a buffer among the top-level ops of a block, following
// its views, shared by kiln-cpu-plan-memory (which packs static buffers by
// these ranges), kiln-cpu-free-early (which frees each buffer after its
// range ends) and kiln-cpu-release-dead-inputs (which releases an input
// there).
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_LIVERANGES_H
#define KILN_CODEGEN_CPU_LIVERANGES_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::kiln {

/// The top-level ops of a block in order and each one's index there.
struct BlockPositions {
  llvm::DenseMap<Operation *, unsigned> index;
  SmallVector<Operation *> ops;
};
BlockPositions positionsOf(Block &block);

/// Whether `user` only reads or writes the memref it is given (no new
/// alias it does not declare as a view, no ownership transfer): not a
/// call (unless of a function declared kiln.buffer_args_only), region
/// branch, terminator, dealloc, or an op with a memref/tensor result.
bool isPlainBufferUse(Operation *user);

/// The live range of `root` in `block` (indices from `position`): the
/// first and last top-level op using it or a view of it (making a view is
/// not a use; a nested use counts as its top-level ancestor). `ignore` (a
/// dealloc of `root`, say) is not looked at. Fails when `root` is unused
/// or an alias escapes what isPlainBufferUse follows.
LogicalResult bufferLiveRange(Value root, Block &block,
                              const llvm::DenseMap<Operation *, unsigned> &position,
                              unsigned &first, unsigned &last, Operation *ignore = nullptr);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_LIVERANGES_H

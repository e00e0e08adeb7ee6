//===- Partition.h - what the backward saves and what it recomputes -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The partitioner of kiln-autodiff (transforms/Autodiff.cpp), in the spirit
// of AOTAutograd's min-cut rematerialization: the forward values the
// gradient rules read are either saved by the forward (a tensor kept alive
// until the backward) or recomputed in the backward from other saved
// values. The choice is a minimum s-t cut over the forward ops those values
// depend on, each value weighted by its bytes: expensive ops (matmul,
// convolutions, reductions, normalizations, pooling, anything not
// pointwise or data movement) are never recomputed at the default budget,
// random ops never. Implemented in Partition.cpp.
//===----------------------------------------------------------------------===//
#ifndef KILN_TRANSFORMS_AUTODIFF_PARTITION_H
#define KILN_TRANSFORMS_AUTODIFF_PARTITION_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::kiln {

struct PartitionOptions {
  /// The activation-memory budget in [0, 1] (AOTAutograd's
  /// activation_memory_budget): 1 is the min-cut with expensive ops banned
  /// from recomputation (fastest backward); 0 saves as few bytes as
  /// possible, recomputing every op but random ones; in between, expensive
  /// ops are allowed recomputation, cheapest compute per saved byte first,
  /// until the saved bytes are at most min + budget * (max - min).
  double memoryBudget = 1.0;
};

/// The partitioner's answer for one forward block.
struct Partition {
  /// The forward values the backward receives (program order, block
  /// arguments first).
  SmallVector<Value> saved;
  /// The forward ops the backward re-executes (program order), constants
  /// and stop-gradients among them.
  SmallVector<Operation *> recomputed;
  /// Bytes of the saved intermediates (inputs and results excluded: they
  /// are alive outside the graph anyway).
  int64_t savedBytes = 0;
};

/// Bytes of a ranked tensor of `type` (a dynamic dim counts 4096, bool 1
/// byte per element).
int64_t tensorBytes(Type type);

/// Whether `op` is cheap to recompute: pointwise arithmetic, comparisons,
/// casts, select, constants and data movement (permute, reshape,
/// broadcast_to, slice, concat).
bool isCheapToRecompute(Operation *op);

/// Chooses how the backward gets each of `required` (values of `body`, the
/// function's single block): `body`'s arguments and results cost nothing
/// to save, other values their bytes (doubled where the forward would not
/// otherwise materialize them: a pointwise op all of whose users are
/// pointwise), times 1.1 per op between the value and its use by the
/// backward (AOTAutograd's bias towards saving late values).
Partition partitionForBackward(Block &body, ArrayRef<Value> required,
                               const PartitionOptions &options);

} // namespace mlir::kiln

#endif // KILN_TRANSFORMS_AUTODIFF_PARTITION_H

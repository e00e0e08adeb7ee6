//===- Autodiff.h - reverse-mode autodiff on kiln IR ---------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The C++ entry of `kiln-autodiff` (transforms/Autodiff.cpp): splits a
// function into a forward that also returns the values its backward needs
// and a backward that maps result gradients to input gradients. The
// frontend uses it to compile a graph's backward (hook/CompiledGrad.cpp).
//===----------------------------------------------------------------------===//
#ifndef KILN_TRANSFORMS_AUTODIFF_H
#define KILN_TRANSFORMS_AUTODIFF_H

#include "transforms/autodiff/Partition.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace mlir::kiln {

/// The attribute marking an op whose results carry no gradient although an
/// operand does (computed under torch.no_grad(), a running statistic).
inline constexpr const char *kNoGradAttr = "kiln.no_grad";
/// Whether `op` is a stop-gradient: an identity `kiln.cast` (same type)
/// marked kNoGradAttr, what the capture makes of `x.detach()` and of
/// Python numbers read from tensors (`.item()`). Its result carries no
/// gradient; the backward reads its operand instead of saving it.
bool isStopGradient(Operation *op);
/// The argument attribute marking a differentiable input (kiln-opt).
inline constexpr const char *kRequiresGradAttr = "kiln.requires_grad";

/// What buildGradientFunctions made. The backward takes, in order: the
/// gradients of `gradResults`, the inputs `savedInputs`, the results
/// `savedResults`, then the forward's `numSaved` extra results; it returns
/// the gradients of `gradInputs`. The forward returns the original results
/// followed by the `numSaved` extra ones.
struct GradientFunctions {
  func::FuncOp forward, backward;
  SmallVector<int64_t> gradResults, gradInputs, savedInputs, savedResults;
  int64_t numSaved = 0;
  /// Bytes of those `numSaved` tensors (the activations a call keeps for
  /// its backward; the partitioner's cost).
  int64_t savedBytes = 0;
  /// Per entry of `gradInputs`: the positions in `gradResults` whose
  /// gradients reach it (an input only reached from results that got no
  /// gradient gets none, as in eager).
  SmallVector<SmallVector<int64_t>> inputDeps;
};

/// Builds `@<fn>_fwd` and `@<fn>_bwd` next to `fn` (left unchanged) for the
/// inputs `diffInputs` and results `diffResults` (one flag each). Fails,
/// building nothing, when a value on a gradient path comes from an op
/// without a gradient rule: `why` says which and why, `culprit` is the op.
/// `partition` sets the activation-memory budget of the choice between
/// saving and recomputing (autodiff/Partition.h).
FailureOr<GradientFunctions> buildGradientFunctions(func::FuncOp fn, ArrayRef<bool> diffInputs,
                                                    ArrayRef<bool> diffResults, std::string &why,
                                                    Operation *&culprit,
                                                    const PartitionOptions &partition = {});

} // namespace mlir::kiln

#endif // KILN_TRANSFORMS_AUTODIFF_H

//===- InputLayouts.h - caller's tensors passed in their own dim order -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A graph input that is dense in another dim order than row-major (a
// channels-last image, the weights of `model.to(memory_format=
// torch.channels_last)`, a transposed matrix) is passed as it is, not
// copied per call: the graph's argument holds its dims in memory order
// (row-major there) and a `kiln.permute` marked kInputLayoutAttr gives
// the tensor the code sees, which kiln-layout and canonicalization cancel
// against the permutes a channels-last region needs. The tensor guard
// checks the exact strides, so the order is fixed per entry. Only CPU
// graphs that need no gradients (grad mode off at the call) and are not
// recorded for kiln.export; other inputs that are not row-major are
// copied (GraphInput::makeContiguous).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_VALUES_INPUTLAYOUTS_H
#define KILN_FRONTEND_CAPTURE_VALUES_INPUTLAYOUTS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <vector>

namespace kiln {

struct Capture;
struct GraphInput;

/// On the `kiln.permute` of a graph argument held in memory order.
inline constexpr const char *kInputLayoutAttr = "kiln.input_layout";

/// The dims of a tensor with `sizes` and `strides` from outermost to
/// innermost in memory when it is dense and non-overlapping in that order
/// (size-1 dims first, in their order); empty otherwise (holes, overlaps,
/// no elements). chooseInputLayout asks only for tensors not row-major.
std::vector<int64_t> denseMemoryOrder(const std::vector<int64_t> &sizes,
                                      const std::vector<int64_t> &strides);

/// Sets how the caller's tensor with `sizes` and `strides` reaches the
/// graph: as it is (row-major up to size-1 dims), in its memory order
/// (`in.memoryOrder`, when dense and `passDense`), else copied
/// (`in.makeContiguous`).
void chooseInputLayout(GraphInput &in, const std::vector<int64_t> &sizes,
                       const std::vector<int64_t> &strides, bool passDense);

/// The value the code sees for graph argument `arg` of input `in`: `arg`
/// itself, or for an input held in memory order its permute to the
/// tensor's dims (marked kInputLayoutAttr, built at `b`'s insertion point).
mlir::Value inputValue(mlir::OpBuilder &b, mlir::Location loc, const GraphInput &in,
                       mlir::Value arg);

/// `sizes` (the tensor's) in the input's memory order (the graph
/// argument's shape); `sizes` itself for a row-major input.
std::vector<int64_t> memorySizes(const GraphInput &in, const std::vector<int64_t> &sizes);

/// `v`, or the graph argument it is the input-layout permute of.
mlir::Value throughInputLayout(mlir::Value v);

/// The values the capture's code sees for the graph's inputs: the entry
/// block's arguments, an input held in memory order as its permute.
std::vector<mlir::Value> inputValues(mlir::Block &entry);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_VALUES_INPUTLAYOUTS_H

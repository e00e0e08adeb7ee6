//===- EagerLayouts.h - eager's strides of the tensors a graph returns -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln's graph values are row-major; eager's tensors are not always: a
// convolution of a channels-last input is channels-last, an elementwise op
// follows its operands' strides (TensorIterator's order), a permute is a
// strided view. EagerLayouts.cpp models eager's strides through the graph
// (static shapes) and rewrites the result tree so that a tensor eager
// returns densely in another dim order is the graph's physical-order
// `kiln.permute` of it, handed back as `.permute(inverse)`: eager's sizes
// and strides, one transposing copy in the graph (which kiln-layout cancels
// where the value was computed in that order). Graphs with dynamic shapes
// return row-major results (the model needs static strides).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_VALUES_EAGERLAYOUTS_H
#define KILN_FRONTEND_CAPTURE_VALUES_EAGERLAYOUTS_H

#include "capture/Capture.h"

#include "mlir/IR/Block.h"

#include "llvm/ADT/DenseMap.h"

#include <vector>

namespace kiln {

/// On an identity `kiln.cast`: `x.contiguous()` (eager's strides are
/// row-major there, whatever x's were).
inline constexpr const char *kContiguousAttr = "kiln.contiguous";

/// Rewrites the Graph/GraphView slots of `out.outputs` (the Python result,
/// or the state at a break) whose tensor eager lays out densely in a
/// non-row-major order (channels-last): `results` gets the value in that
/// physical order (a `kiln.permute` appended to `entry`), the slot replays
/// the inverse permute on it. A graph that needs gradients keeps its
/// results (kiln._autograd lines them up with the eager recompute's by
/// position): a channels-last 4-D one gets a Graph slot whose steps copy
/// it to channels-last per call; other orders stay row-major there. Not
/// while kiln.export records (an artifact returns row-major results).
/// `sources`: values whose strides their ops do not show
/// (Interpreter::layoutSources).
void matchEagerLayouts(Capture &out, mlir::Block &entry, std::vector<mlir::Value> &results,
                       const LayoutSources &sources);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_VALUES_EAGERLAYOUTS_H

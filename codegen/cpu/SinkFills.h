//===- SinkFills.h - fills moved down to their buffer's next use -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Bufferization leaves the zero fills of GEMM outputs hoisted to the top of
// a function. kiln-cpu-fuse-rows (which would pull them into the first row
// loop) and kiln-cpu-plan-memory (which would make every GEMM output live
// from there) both sink them first.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_SINKFILLS_H
#define KILN_CODEGEN_CPU_SINKFILLS_H

#include "mlir/IR/Block.h"

namespace mlir::kiln {

/// Moves each `linalg.fill` of an allocation (or a view of it) in `block`
/// down to just before the next op that touches that memory.
void sinkFills(Block &block);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_SINKFILLS_H

//===- Registration.h - every dialect and pass kiln uses ----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The single place that registers dialects, interfaces, passes and named
// pipelines; used by kiln-opt and by the Python extension alike.
//===----------------------------------------------------------------------===//
#ifndef KILN_REGISTRATION_REGISTRATION_H
#define KILN_REGISTRATION_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::kiln {

/// Adds the kiln dialect, every upstream dialect the pipelines produce and
/// their bufferization / LLVM-translation interfaces to `registry`.
void registerAllDialects(DialectRegistry &registry);

/// Registers kiln's passes, the upstream passes its pipelines use, and the
/// named pipelines `kiln-optimize` and `kiln-cpu-lowering` (idempotent).
void registerAllPasses();

} // namespace mlir::kiln

#endif // KILN_REGISTRATION_REGISTRATION_H

//===- DebugDump.h - a compilation's debug folder -----------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What a compilation writes into its debug folder (CpuCompileOptions::
// debugDir): 00-input.mlir, the IR after every pass, repro.sh (the kiln-opt
// command that reproduces the pass pipeline) and, from the JIT driver,
// llvm-optimized.ll. docs/debugging.md shows how to use them.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_DEBUGDUMP_H
#define KILN_CODEGEN_CPU_DEBUGDUMP_H

#include <string>

namespace mlir {
class ModuleOp;
class PassManager;
} // namespace mlir

namespace mlir::kiln {

/// Prepares `dir` (created; an earlier run's pass files removed): writes
/// `module` as 00-input.mlir and repro.sh for `pm`'s pipeline, and makes
/// `pm` print the module after every pass into `dir` (which turns off the
/// context's multithreading: module-scope printing needs it).
void setUpDebugDir(const std::string &dir, ModuleOp module, PassManager &pm);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_DEBUGDUMP_H

//===- JitCompiler.h - kiln IR to JIT'd CPU code ------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Compiles a kiln-level module through the whole CPU pipeline (optimize,
// decompose, kiln→linalg, fusion, bufferization, BLAS calls, LLVM) and JITs
// it with ORC for the host CPU.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_JITCOMPILER_H
#define KILN_CODEGEN_CPU_JITCOMPILER_H

#include "runtime/CompiledFunction.h"

#include <string>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace mlir::kiln {

/// Options of one CPU compilation.
struct CpuCompileOptions {
  /// When non-empty, the IR after every pass is written into this folder
  /// (NN-<pass>.mlir), plus the kiln-opt command that reproduces the run.
  std::string debugDir;
};

/// Compiles `module`, whose public `func.func @<entry>` takes and returns
/// ranked tensors of static shape, into a runtime function. The compiled
/// entry takes one memref descriptor per input, then one per result
/// (caller-allocated, contiguous), and returns nothing. On failure returns a
/// null entry and sets `error` to the diagnostics (with locations).
/// `module` is modified in place (it is lowered).
::kiln::rt::CompiledFunction compileForCpu(ModuleOp module, const std::string &entry,
                                         const CpuCompileOptions &options,
                                         std::string &error);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_JITCOMPILER_H

//===- RuntimeSymbols.h - what JIT'd code calls in runtime/cpu ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The contract between generated CPU code and runtime/cpu: the names the
// JIT maps to kiln's own run-time functions (BLAS shims, memrefCopy, the
// buffer pool's malloc/free, the OpenMP shim) and the check that an LLVM
// module calls nothing else of OpenMP's ABI.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_RUNTIMESYMBOLS_H
#define KILN_CODEGEN_CPU_RUNTIMESYMBOLS_H

#include "llvm/Support/Error.h"

#include <utility>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir::kiln {

/// (name, address) of every run-time function generated code may call that
/// kiln provides, for the JIT to resolve before the process's own symbols.
std::vector<std::pair<const char *, void *>> runtimeSymbols();

/// Fails, saying what, when `module` calls an OpenMP entry point the shim
/// (runtime/cpu/OpenMPShim.cpp) does not implement or forks a parallel
/// region with more arguments than it supports.
llvm::Error checkRuntimeCalls(const llvm::Module &module);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_RUNTIMESYMBOLS_H

//===- ExportObject.h - run-time calls through an import table ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln.export links a graph's object code into a shared library that the
// standalone runtime (runtime/artifact) dlopens. The JIT resolves kiln's
// run-time functions (BLAS shims, the buffer pool's malloc/free, memrefCopy,
// the OpenMP shim: RuntimeSymbols.h) by name; a shared library would bind
// those names to whatever the process exports (libc's malloc, libgomp's
// __kmpc_*). So the exported code calls them through a table instead: the
// object defines `__kiln_imports`, an array of function pointers the loader
// fills (by name, from the table's name list stored in the artifact) before
// the first call.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_EXPORTOBJECT_H
#define KILN_CODEGEN_CPU_EXPORTOBJECT_H

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir::kiln {

/// The name of the import table an exported object defines.
inline constexpr const char *kImportTableName = "__kiln_imports";

/// Replaces every use of a declared function of `module` that is one of
/// kiln's run-time symbols by a load of its slot in a new global
/// `__kiln_imports` (external, zero-initialized) and removes the
/// declaration; `imports` receives the names in slot order. Fails when a
/// use is not an instruction (a constant expression).
llvm::Error indirectRuntimeCalls(llvm::Module &module, std::vector<std::string> &imports);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_EXPORTOBJECT_H

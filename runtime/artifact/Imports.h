//===- Imports.h - kiln's run-time functions by name --------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The one table of run-time functions compiled CPU code calls that kiln
// provides itself (runtime/cpu): the JIT resolves them by name before the
// process's symbols (codegen/cpu/RuntimeSymbols.h), and the artifact
// loader fills an exported library's import table from it (Model.cpp).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ARTIFACT_IMPORTS_H
#define KILN_RUNTIME_ARTIFACT_IMPORTS_H

#include <utility>
#include <vector>

namespace kiln::rt {

/// (name, address) of every run-time function generated CPU code may call
/// that kiln provides: BLAS shims, memrefCopy, __truncsfbf2, the buffer
/// pool's malloc/free, the OpenMP shim's entry points.
const std::vector<std::pair<const char *, void *>> &cpuRuntimeImports();

/// The address of run-time function `name`, or null when kiln has none.
void *findCpuRuntimeImport(const char *name);

} // namespace kiln::rt

#endif // KILN_RUNTIME_ARTIFACT_IMPORTS_H

//===- Imports.cpp - kiln's run-time functions by name ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Imports.h.
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Imports.h"

#include "runtime/cpu/BlasShims.h"
#include "runtime/cpu/BufferPool.h"
#include "runtime/cpu/Builtins.h"
#include "runtime/cpu/MemrefCopy.h"
#include "runtime/cpu/OpenMPShim.h"

#include <cstring>

namespace kiln::rt {

const std::vector<std::pair<const char *, void *>> &cpuRuntimeImports() {
  static const std::vector<std::pair<const char *, void *>> table = [] {
    std::vector<std::pair<const char *, void *>> symbols = blasShimSymbols();
    symbols.emplace_back("memrefCopy", reinterpret_cast<void *>(&kilnMemrefCopy));
    // f32 → bf16 on CPUs without AVX-512 BF16 (libgcc 12 lacks it).
    symbols.emplace_back("__truncsfbf2", reinterpret_cast<void *>(&kilnTruncSfBf2));
    symbols.emplace_back("__truncdfbf2", reinterpret_cast<void *>(&kilnTruncDfBf2));
    // Intermediate buffers come from kiln's pool (runtime/cpu/BufferPool.h).
    symbols.emplace_back("malloc", reinterpret_cast<void *>(&kilnPoolMalloc));
    symbols.emplace_back("free", reinterpret_cast<void *>(&kilnPoolFree));
    // Parallel loops: OpenMP entry points on torch's (or the system's) libgomp.
    for (auto symbol : openMPShimSymbols())
      symbols.push_back(symbol);
    return symbols;
  }();
  return table;
}

void *findCpuRuntimeImport(const char *name) {
  for (auto &[n, address] : cpuRuntimeImports())
    if (std::strcmp(n, name) == 0)
      return address;
  return nullptr;
}

} // namespace kiln::rt

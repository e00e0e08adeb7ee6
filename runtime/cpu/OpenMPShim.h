//===- OpenMPShim.h - OpenMP entry points of the generated CPU code -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The `__kmpc_*` functions MLIR's OpenMP translation calls, implemented on
// torch's libgomp (OpenMPShim.cpp), for the JIT's symbol table.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_OPENMPSHIM_H
#define KILN_RUNTIME_CPU_OPENMPSHIM_H

#include <utility>
#include <vector>

namespace kiln::rt {

/// Most pointer arguments an outlined parallel region may take.
constexpr int kMaxForkArgs = 8;

/// (name, address) of every `__kmpc_*` entry point kiln provides.
std::vector<std::pair<const char *, void *>> openMPShimSymbols();

/// Parallel loops run so far: on a team of threads, or inline because one
/// thread was asked for (or libgomp is missing).
struct ParallelRegionStats {
  long threaded = 0;
  long inlined = 0;
};
ParallelRegionStats parallelRegionStats();

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_OPENMPSHIM_H

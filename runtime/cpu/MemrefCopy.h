//===- MemrefCopy.h - strided memref copies at run time -----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// MLIR's `memrefCopy` runtime function (CRunnerUtils), which memref-to-llvm
// calls for a `memref.copy` between non-contiguous layouts (strided views
// from kiln.slice / kiln.concat after bufferization) that
// kiln-cpu-copies-to-loops left as copies. The JIT does not link MLIR's
// runtime libraries, so kiln provides it (mapped to the name `memrefCopy`).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_MEMREFCOPY_H
#define KILN_RUNTIME_CPU_MEMREFCOPY_H

#include <cstdint>

/// An unranked memref as MLIR's C interface passes it: the rank and a
/// pointer to the ranked descriptor (base, aligned, offset, sizes[rank],
/// strides[rank]).
struct UnrankedDescriptor {
  int64_t rank;
  void *descriptor;
};

extern "C" {
/// Copies every element of `src` into `dst` (same sizes, any strides);
/// `elemSize` bytes per element.
void kilnMemrefCopy(int64_t elemSize, UnrankedDescriptor *src, UnrankedDescriptor *dst);
}

#endif // KILN_RUNTIME_CPU_MEMREFCOPY_H

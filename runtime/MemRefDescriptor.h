//===- MemRefDescriptor.h - MLIR memref descriptors without MLIR --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Builds the strided memref descriptor MLIR's LLVM lowering expects
// ({allocated, aligned, offset, sizes[R], strides[R]}, all 64-bit words)
// for a tensor's data pointer, sizes and element strides.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_MEMREFDESCRIPTOR_H
#define KILN_RUNTIME_MEMREFDESCRIPTOR_H

#include <cstdint>
#include <cstring>
#include <vector>

namespace kiln::rt {

/// A ranked memref descriptor as MLIR's C interface passes it
/// (`_mlir_ciface_*` functions): the same layout as MLIR's
/// `StridedMemRefType<T, N>` (mlir/ExecutionEngine/CRunnerUtils.h), owned
/// here so that run-time code needs no MLIR header.
template <typename T, int N> struct StridedMemRef {
  T *basePtr;
  T *data;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

/// A rank-erased memref descriptor laid out exactly like
/// `StridedMemRefType<T, R>`; `data()` is what the compiled code receives.
class MemRefDescriptor {
public:
  MemRefDescriptor() = default;
  /// Describes `rank` dims at `ptr` (offset 0) with the given element
  /// sizes and strides.
  MemRefDescriptor(void *ptr, const int64_t *sizes, const int64_t *strides, int64_t rank) {
    reset(ptr, sizes, strides, rank);
  }
  /// Re-points the descriptor; reuses its storage.
  void reset(void *ptr, const int64_t *sizes, const int64_t *strides, int64_t rank) {
    words_.resize(3 + 2 * rank);
    int64_t p;
    std::memcpy(&p, &ptr, sizeof(p));
    words_[0] = p;
    words_[1] = p;
    words_[2] = 0;
    for (int64_t i = 0; i < rank; ++i) {
      words_[3 + i] = sizes[i];
      words_[3 + rank + i] = strides[i];
    }
  }
  /// The descriptor as the compiled code reads it.
  void *data() { return words_.data(); }

private:
  std::vector<int64_t> words_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_MEMREFDESCRIPTOR_H

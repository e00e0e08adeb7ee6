//===- DeviceMemory.h - device allocations and host copies ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What a program without torch needs to run a Plan (Plan.h): device
// memory for weights, arenas and staging buffers, and copies between host
// and device. The JIT path never uses it (torch's caching allocator owns
// its memory). The four driver entry points (cuMemAlloc_v2, cuMemFree_v2,
// cuMemcpyHtoD_v2, cuMemcpyDtoH_v2) are resolved from the same driver
// library driver() opened (dlopen returns its handle again), on first use.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_DEVICEMEMORY_H
#define KILN_RUNTIME_CUDA_DEVICEMEMORY_H

#include "runtime/cuda/CudaDriver.h"

#include <cstddef>
#include <string>

namespace kiln::rt::cuda {

/// One device allocation in the primary context of a device, freed with
/// it. Calls make that context current first.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  /// Allocates `bytes` (at least 1) on device ordinal `device`.
  bool allocate(int device, size_t bytes, std::string &error);
  void *data() const { return reinterpret_cast<void *>(ptr_); }
  size_t size() const { return bytes_; }

  /// A synchronous copy of host memory into this buffer at `offset`.
  bool upload(size_t offset, const void *src, size_t bytes, std::string &error);

private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
  CUcontext ctx_ = nullptr;
  CUdevice device_ = 0;
};

/// Makes device ordinal `device`'s primary context current on this thread
/// (retained once per process and device).
bool useDevice(int device, std::string &error);

/// Synchronous copies on device ordinal `device` (any device pointers,
/// e.g. a caller's tensors).
bool copyToDevice(int device, void *dst, const void *src, size_t bytes, std::string &error);
bool copyToHost(int device, void *dst, const void *src, size_t bytes, std::string &error);
/// A device-to-device copy queued on `stream` (not waited for).
bool copyOnDevice(int device, void *dst, const void *src, size_t bytes, CUstream stream,
                  std::string &error);

} // namespace kiln::rt::cuda

#endif // KILN_RUNTIME_CUDA_DEVICEMEMORY_H

//===- CudaRuntime.h - modules and kernel launches on the driver API -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The part of kiln's CUDA runtime that talks to the GPU: load a cubin/PTX
// image into the primary context of a device, look kernels up by name,
// launch them on a caller-given stream (torch's current stream, passed as
// its raw handle) with device pointers as arguments (torch's tensors'
// data_ptr: memory comes from torch's caching allocator), synchronize.
// Every failure returns false with a message that names the driver call,
// the kernel and the driver's error. Links no MLIR, no CUDA runtime.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_CUDARUNTIME_H
#define KILN_RUNTIME_CUDA_CUDARUNTIME_H

#include "runtime/cuda/CudaDriver.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace kiln::rt::cuda {

/// A kernel of a loaded module.
struct Kernel {
  CUfunction fn = nullptr;
  CUcontext ctx = nullptr; ///< the module's (primary) context
  std::string name;
};

/// A cubin or PTX image loaded into a device's primary context.
class Module {
public:
  /// Loads `image` (cubin bytes, or PTX text; a NUL is appended) on device
  /// `device`. Null with `error` set on failure.
  static std::unique_ptr<Module> load(int device, const void *image, size_t size,
                                      std::string &error);
  /// Unloads the module and releases the primary context.
  ~Module();
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// The kernel called `name` (looked up once, then cached); null with
  /// `error` set if the module has no such kernel.
  const Kernel *kernel(const std::string &name, std::string &error);

  int device() const { return device_; }

private:
  Module() = default;
  const DriverApi *api_ = nullptr;
  int device_ = 0;
  CUdevice handle_ = 0;
  CUcontext ctx_ = nullptr;
  CUmodule module_ = nullptr;
  std::map<std::string, Kernel> kernels_;
};

/// Launch geometry of one kernel.
struct LaunchDims {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0;
};

/// Launches `k` on `stream` with `numArgs` pointer arguments (each kernel
/// parameter of kiln's kernels is a device pointer). Makes the kernel's
/// context current first if it is not.
bool launch(const Kernel &k, const LaunchDims &dims, CUstream stream, void *const *ptrs,
            int numArgs, std::string &error);

/// cuStreamSynchronize; a kernel fault surfaces here.
bool synchronize(CUstream stream, std::string &error);

/// cuDeviceGetAttribute for device ordinal `device`.
bool deviceAttribute(int device, DeviceAttribute attr, int &value, std::string &error);

/// Number of devices the driver sees.
bool deviceCount(int &count, std::string &error);

/// cuDriverGetVersion (e.g. 13000).
bool driverVersion(int &version, std::string &error);

} // namespace kiln::rt::cuda

#endif // KILN_RUNTIME_CUDA_CUDARUNTIME_H

//===- CudaModel.h - an artifact's CUDA build, loaded on a device --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The CUDA half of Model (device "cuda" or "cuda:N"): the artifact's
// image for the device's compute capability (its cubin, else the PTX the
// driver compiles) loaded through runtime/cuda (libcuda by dlopen), the
// launch plan created on it (runtime/cuda/Plan.h: kernels and cuBLASLt
// GEMMs), the weights copied to device memory once, one scratch arena and
// staging buffers for host tensors. A call takes device tensors (kDLCUDA,
// used in place) or host tensors (copied to the device and back), runs the
// plan on the null stream and waits for it. Calls of one model are
// serialized (the plan and the arena are shared); Model has checked the
// tensors' shapes and dtypes before.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ARTIFACT_CUDAMODEL_H
#define KILN_RUNTIME_ARTIFACT_CUDAMODEL_H

#include "runtime/artifact/Artifact.h"
#include "runtime/cuda/DeviceMemory.h"
#include "runtime/cuda/Plan.h"

#include <mutex>

namespace kiln::rt::artifact {

class CudaModel {
public:
  /// Loads `a`'s CUDA build on device ordinal `device`; null with `error`
  /// set (KILN_ERROR_DRIVER without a usable driver or cuBLASLt).
  static std::unique_ptr<CudaModel> load(const Artifact &a, int device, Error &error);

  int device() const { return device_; }
  /// Runs on checked tensors (caller order; `symbols` bound by Model).
  Error run(const kiln_tensor *inputs, kiln_tensor *outputs, size_t numOutputs);

private:
  CudaModel() = default;
  Error upload(const Artifact &a);
  /// Gives each caller output its value from plan output `from` (device
  /// pointer), copying unless it is that memory.
  Error deliver(kiln_tensor *outputs, size_t numOutputs, const std::vector<void *> &out);

  const Artifact *artifact_ = nullptr;
  int device_ = 0;
  std::unique_ptr<cuda::Module> module_;
  std::unique_ptr<cuda::Plan> plan_;
  cuda::DeviceBuffer weights_, arena_;
  std::vector<std::unique_ptr<cuda::DeviceBuffer>> inputStage_, outputStage_;
  std::vector<size_t> inputBytes_, outputBytes_; ///< per caller input / plan output
  std::mutex lock_;
};

/// Parses "cuda" (device 0) or "cuda:N"; false for anything else.
bool parseCudaDevice(const std::string &device, int &ordinal);

} // namespace kiln::rt::artifact

#endif // KILN_RUNTIME_ARTIFACT_CUDAMODEL_H

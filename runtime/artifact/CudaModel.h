//===- CudaModel.h - an artifact's CUDA build, loaded on a device --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The CUDA half of Model (device "cuda" or "cuda:N"): the artifact's
// image for the device's compute capability (its cubin, else the PTX the
// driver compiles) loaded through runtime/cuda (libcuda by dlopen), the
// launch plan created on it (runtime/cuda/Plan.h: kernels and cuBLASLt
// GEMMs), the weights copied to device memory once, one scratch arena and
// per stream one arena and staging buffers. A call takes device tensors
// (kDLCUDA, used in place) or host tensors (copied to the device and
// back), launches the plan on the caller's stream (the legacy default
// stream for kiln_model_run) and waits for it, unless asked not to and
// every tensor is on the device and no index check needs reading. Launches
// of one model are serialized (the plan object is shared); the GPU work of
// runs on different streams may overlap (their scratch memory is their
// stream's). Model has checked the tensors' shapes and dtypes before.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ARTIFACT_CUDAMODEL_H
#define KILN_RUNTIME_ARTIFACT_CUDAMODEL_H

#include "runtime/artifact/Artifact.h"
#include "runtime/cuda/DeviceMemory.h"
#include "runtime/cuda/Plan.h"

#include <map>
#include <mutex>

namespace kiln::rt::artifact {

class CudaModel {
public:
  /// Loads `a`'s CUDA build on device ordinal `device`; null with `error`
  /// set (KILN_ERROR_DRIVER without a usable driver or cuBLASLt).
  static std::unique_ptr<CudaModel> load(const Artifact &a, int device, Error &error);

  int device() const { return device_; }
  /// Runs on checked tensors (caller order) on `stream`; waits for the
  /// GPU unless `async` (see the file comment).
  Error run(const kiln_tensor *inputs, kiln_tensor *outputs, size_t numOutputs,
            cuda::CUstream stream, bool async);

private:
  /// One stream's scratch memory: the arena and staging buffers for host
  /// inputs and for plan outputs the caller does not receive on the device.
  struct Scratch {
    cuda::DeviceBuffer arena;
    std::vector<std::unique_ptr<cuda::DeviceBuffer>> inputs, outputs;
  };
  CudaModel() = default;
  Error upload(const Artifact &a);
  /// `stream`'s scratch memory, allocated on its first run.
  Scratch *scratchFor(cuda::CUstream stream, Error &error);
  /// Gives each caller output its value from plan output `from` (device
  /// pointer), copying unless it is that memory.
  Error deliver(kiln_tensor *outputs, size_t numOutputs, const std::vector<void *> &out,
                cuda::CUstream stream);

  const Artifact *artifact_ = nullptr;
  int device_ = 0;
  std::unique_ptr<cuda::Module> module_;
  std::unique_ptr<cuda::Plan> plan_;
  cuda::DeviceBuffer weights_;
  std::map<cuda::CUstream, std::unique_ptr<Scratch>> scratch_;
  std::vector<size_t> inputBytes_, outputBytes_; ///< per caller input / plan output
  std::mutex lock_;
};

/// Parses "cuda" (device 0) or "cuda:N"; false for anything else.
bool parseCudaDevice(const std::string &device, int &ordinal);

} // namespace kiln::rt::artifact

#endif // KILN_RUNTIME_ARTIFACT_CUDAMODEL_H

//===- CudaDriver.h - the CUDA driver API, loaded with dlopen ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln never links libcuda (the toolkit's CUDA::cuda_driver is a stub that
// makes a binary fail to start on machines without a driver). The driver
// is opened with dlopen("libcuda.so.1") on first use and the few entry
// points the runtime needs are resolved by name; without a driver, loading
// fails with a message and nothing else changes. The handful of driver
// types used are declared here (ABI-compatible with cuda.h), so this
// library needs no CUDA headers.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_CUDADRIVER_H
#define KILN_RUNTIME_CUDA_CUDADRIVER_H

#include <cstddef>
#include <string>

namespace kiln::rt::cuda {

/// Driver types (cuda.h spells them CUresult, CUdevice, CUcontext, ...).
using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
using CUdeviceptr = unsigned long long;

/// cuStreamBeginCapture modes (CUstreamCaptureMode).
enum CaptureMode : int { kCaptureGlobal = 0, kCaptureThreadLocal = 1, kCaptureRelaxed = 2 };

/// cuDeviceGetAttribute attributes kiln reads.
enum DeviceAttribute : int {
  kMultiprocessorCount = 16,
  kComputeCapabilityMajor = 75,
  kComputeCapabilityMinor = 76,
};

/// The resolved driver entry points (cuda.h names; `_v2` where cuda.h maps
/// the plain name to it).
struct DriverApi {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);
  CUresult (*cuCtxGetCurrent)(CUcontext *ctx);
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);
  CUresult (*cuModuleLoadData)(CUmodule *module, const void *image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *fn, CUmodule module, const char *name);
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned gridX, unsigned gridY, unsigned gridZ,
                             unsigned blockX, unsigned blockY, unsigned blockZ,
                             unsigned sharedBytes, CUstream stream, void **params, void **extra);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  // Streams and CUDA graphs (runtime/cuda/Plan.cpp: capture and replay).
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode);
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph *graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                          unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);
};

/// Makes the driver library kiln opens `name` (a path or soname; "" restores
/// the default). Effective only before the first driver() call. The Python
/// binding (kiln/cuda/_driver.py) passes $KILN_CUDA_DRIVER, which tests point
/// at a fake or a missing file; C++ reads no environment.
void setDriverLibraryName(const std::string &name);

/// The driver library kiln opens: the one set by setDriverLibraryName, else
/// "libcuda.so.1".
std::string driverLibraryName();

/// Opens the driver and calls cuInit(0) once per process (thread-safe).
/// Null on failure with `error` set, e.g. "CUDA driver not found:
/// libcuda.so.1 (<dlerror>)"; the failure is remembered, not retried.
const DriverApi *driver(std::string &error);

/// "CUDA_ERROR_X: text" for a driver status (the code alone if the driver
/// cannot name it).
std::string errorText(const DriverApi &api, CUresult r);

} // namespace kiln::rt::cuda

#endif // KILN_RUNTIME_CUDA_CUDADRIVER_H

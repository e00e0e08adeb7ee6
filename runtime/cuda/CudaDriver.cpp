//===- CudaDriver.cpp - dlopen of libcuda and symbol resolution ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CudaDriver.h: one attempt per process to open the driver,
// resolve every entry point (a missing one is an error naming it) and run
// cuInit(0). The outcome, success or the error message, is cached.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDriver.h"

#include <cstdlib>
#include <mutex>

#include <dlfcn.h>

namespace kiln::rt::cuda {
namespace {

struct Loaded {
  DriverApi api{};
  bool ok = false;
  std::string error;
};

template <typename Fn> bool resolve(void *lib, const char *name, Fn &slot, std::string &error) {
  void *p = dlsym(lib, name);
  if (!p) {
    error = "CUDA driver " + driverLibraryName() + " has no symbol " + name + " (driver too old?)";
    return false;
  }
  slot = reinterpret_cast<Fn>(p);
  return true;
}

void load(Loaded &l) {
  std::string name = driverLibraryName();
  void *lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    l.error = "CUDA driver not found: " + name + " (" + (why ? why : "dlopen failed") +
              "); kiln's CUDA backend needs an NVIDIA driver";
    return;
  }
  DriverApi &a = l.api;
  std::string &e = l.error;
  bool ok = resolve(lib, "cuInit", a.cuInit, e) &&
            resolve(lib, "cuDriverGetVersion", a.cuDriverGetVersion, e) &&
            resolve(lib, "cuDeviceGetCount", a.cuDeviceGetCount, e) &&
            resolve(lib, "cuDeviceGet", a.cuDeviceGet, e) &&
            resolve(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, e) &&
            resolve(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain, e) &&
            resolve(lib, "cuDevicePrimaryCtxRelease_v2", a.cuDevicePrimaryCtxRelease, e) &&
            resolve(lib, "cuCtxGetCurrent", a.cuCtxGetCurrent, e) &&
            resolve(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent, e) &&
            resolve(lib, "cuModuleLoadData", a.cuModuleLoadData, e) &&
            resolve(lib, "cuModuleUnload", a.cuModuleUnload, e) &&
            resolve(lib, "cuModuleGetFunction", a.cuModuleGetFunction, e) &&
            resolve(lib, "cuLaunchKernel", a.cuLaunchKernel, e) &&
            resolve(lib, "cuStreamSynchronize", a.cuStreamSynchronize, e) &&
            resolve(lib, "cuStreamCreate", a.cuStreamCreate, e) &&
            resolve(lib, "cuStreamDestroy_v2", a.cuStreamDestroy, e) &&
            resolve(lib, "cuStreamBeginCapture_v2", a.cuStreamBeginCapture, e) &&
            resolve(lib, "cuStreamEndCapture", a.cuStreamEndCapture, e) &&
            resolve(lib, "cuGraphInstantiateWithFlags", a.cuGraphInstantiateWithFlags, e) &&
            resolve(lib, "cuGraphLaunch", a.cuGraphLaunch, e) &&
            resolve(lib, "cuGraphExecDestroy", a.cuGraphExecDestroy, e) &&
            resolve(lib, "cuGraphDestroy", a.cuGraphDestroy, e) &&
            resolve(lib, "cuMemcpyDtoDAsync_v2", a.cuMemcpyDtoDAsync, e) &&
            resolve(lib, "cuGetErrorName", a.cuGetErrorName, e) &&
            resolve(lib, "cuGetErrorString", a.cuGetErrorString, e);
  if (!ok)
    return; // the library stays open: harmless, and dlclose could run its finalizers
  CUresult r = a.cuInit(0);
  if (r != 0) {
    e = "CUDA driver " + name + ": cuInit failed: " + errorText(a, r) + " (no usable GPU?)";
    return;
  }
  l.ok = true;
}

} // namespace

namespace {
/// The driver library set by setDriverLibraryName ("" = the default).
std::string &driverLibraryOverride() {
  static std::string name;
  return name;
}
} // namespace

void setDriverLibraryName(const std::string &name) { driverLibraryOverride() = name; }

std::string driverLibraryName() {
  const std::string &name = driverLibraryOverride();
  return name.empty() ? "libcuda.so.1" : name;
}

const DriverApi *driver(std::string &error) {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] { load(loaded); });
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

std::string errorText(const DriverApi &api, CUresult r) {
  const char *name = nullptr, *text = nullptr;
  std::string s;
  if (api.cuGetErrorName && api.cuGetErrorName(r, &name) == 0 && name)
    s = name;
  else
    s = "CUresult " + std::to_string(r);
  if (api.cuGetErrorString && api.cuGetErrorString(r, &text) == 0 && text)
    s += std::string(": ") + text;
  return s;
}

} // namespace kiln::rt::cuda

//===- DeviceMemory.cpp - device allocations and host copies -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements DeviceMemory.h on the driver opened by CudaDriver.cpp.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/DeviceMemory.h"

#include <map>
#include <mutex>

#include <dlfcn.h>

namespace kiln::rt::cuda {
namespace {

struct MemoryApi {
  CUresult (*alloc)(CUdeviceptr *ptr, size_t bytes) = nullptr;
  CUresult (*free)(CUdeviceptr ptr) = nullptr;
  CUresult (*htod)(CUdeviceptr dst, const void *src, size_t bytes) = nullptr;
  CUresult (*dtoh)(void *dst, CUdeviceptr src, size_t bytes) = nullptr;
};

/// The driver and its memory entry points; null with `error` set.
const MemoryApi *memoryApi(const DriverApi *&api, std::string &error) {
  static MemoryApi mem;
  static std::string why;
  static std::once_flag once;
  api = driver(error);
  if (!api)
    return nullptr;
  std::call_once(once, [] {
    void *lib = dlopen(driverLibraryName().c_str(), RTLD_NOW | RTLD_LOCAL);
    const char *names[] = {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"};
    void *slots[4] = {};
    for (int i = 0; i < 4 && lib; ++i)
      if (!(slots[i] = dlsym(lib, names[i])))
        why = std::string("CUDA driver ") + driverLibraryName() + " has no symbol " + names[i];
    if (!lib)
      why = "cannot reopen the CUDA driver " + driverLibraryName();
    if (!why.empty())
      return;
    mem.alloc = reinterpret_cast<decltype(mem.alloc)>(slots[0]);
    mem.free = reinterpret_cast<decltype(mem.free)>(slots[1]);
    mem.htod = reinterpret_cast<decltype(mem.htod)>(slots[2]);
    mem.dtoh = reinterpret_cast<decltype(mem.dtoh)>(slots[3]);
  });
  if (!why.empty()) {
    error = why;
    return nullptr;
  }
  return &mem;
}

bool check(const DriverApi &api, CUresult r, const char *what, std::string &error) {
  if (r == 0)
    return true;
  error = std::string(what) + " failed: " + errorText(api, r);
  return false;
}

} // namespace

bool useDevice(int device, std::string &error) {
  const DriverApi *api = nullptr;
  if (!memoryApi(api, error))
    return false;
  static std::mutex lock;
  static std::map<int, CUcontext> contexts;
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> hold(lock);
    auto it = contexts.find(device);
    if (it == contexts.end()) {
      CUdevice handle = 0;
      if (!check(*api, api->cuDeviceGet(&handle, device), "cuDeviceGet", error) ||
          !check(*api, api->cuDevicePrimaryCtxRetain(&ctx, handle), "cuDevicePrimaryCtxRetain",
                 error))
        return false;
      it = contexts.emplace(device, ctx).first;
    }
    ctx = it->second;
  }
  CUcontext current = nullptr;
  if (api->cuCtxGetCurrent(&current) == 0 && current == ctx)
    return true;
  return check(*api, api->cuCtxSetCurrent(ctx), "cuCtxSetCurrent", error);
}

DeviceBuffer::~DeviceBuffer() {
  std::string ignored;
  const DriverApi *api = nullptr;
  const MemoryApi *mem = ptr_ ? memoryApi(api, ignored) : nullptr;
  if (mem && useDevice(device_, ignored))
    mem->free(ptr_);
}

bool DeviceBuffer::allocate(int device, size_t bytes, std::string &error) {
  const DriverApi *api = nullptr;
  const MemoryApi *mem = memoryApi(api, error);
  if (!mem || !useDevice(device, error))
    return false;
  device_ = device;
  bytes_ = bytes ? bytes : 1;
  return check(*api, mem->alloc(&ptr_, bytes_),
               ("cuMemAlloc(" + std::to_string(bytes_) + " bytes)").c_str(), error);
}

bool copyToDevice(int device, void *dst, const void *src, size_t bytes, std::string &error) {
  const DriverApi *api = nullptr;
  const MemoryApi *mem = memoryApi(api, error);
  return mem && useDevice(device, error) &&
         (bytes == 0 ||
          check(*api, mem->htod((CUdeviceptr)dst, src, bytes), "cuMemcpyHtoD", error));
}

bool copyToHost(int device, void *dst, const void *src, size_t bytes, std::string &error) {
  const DriverApi *api = nullptr;
  const MemoryApi *mem = memoryApi(api, error);
  return mem && useDevice(device, error) &&
         (bytes == 0 ||
          check(*api, mem->dtoh(dst, (CUdeviceptr)src, bytes), "cuMemcpyDtoH", error));
}

bool copyOnDevice(int device, void *dst, const void *src, size_t bytes, CUstream stream,
                  std::string &error) {
  const DriverApi *api = nullptr;
  const MemoryApi *mem = memoryApi(api, error);
  return mem && useDevice(device, error) &&
         (bytes == 0 ||
          check(*api, api->cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, bytes, stream),
                "cuMemcpyDtoDAsync", error));
}

bool DeviceBuffer::upload(size_t offset, const void *src, size_t bytes, std::string &error) {
  if (offset > bytes_ || bytes > bytes_ - offset) {
    error = "a host-to-device copy outside its buffer";
    return false;
  }
  return copyToDevice(device_, reinterpret_cast<char *>(ptr_) + offset, src, bytes, error);
}

} // namespace kiln::rt::cuda

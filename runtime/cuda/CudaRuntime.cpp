//===- CudaRuntime.cpp - modules and kernel launches on the driver API -----===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements CudaRuntime.h on the dlopen'ed driver (CudaDriver.h). Modules
// live in the device's primary context, the one the CUDA runtime (and so
// torch) uses, so kiln's kernels and torch's work share memory and streams.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaRuntime.h"

#include <vector>

namespace kiln::rt::cuda {
namespace {

bool check(const DriverApi &api, CUresult r, const std::string &what, std::string &error) {
  if (r == 0)
    return true;
  error = what + " failed: " + errorText(api, r);
  return false;
}

bool makeCurrent(const DriverApi &api, CUcontext ctx, std::string &error) {
  CUcontext cur = nullptr;
  if (!check(api, api.cuCtxGetCurrent(&cur), "cuCtxGetCurrent", error))
    return false;
  return cur == ctx || check(api, api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", error);
}

} // namespace

std::unique_ptr<Module> Module::load(int device, const void *image, size_t size,
                                     std::string &error) {
  const DriverApi *api = driver(error);
  if (!api)
    return nullptr;
  std::unique_ptr<Module> m(new Module());
  m->api_ = api;
  m->device_ = device;
  std::string dev = "device " + std::to_string(device);
  if (!check(*api, api->cuDeviceGet(&m->handle_, device), "cuDeviceGet(" + dev + ")", error))
    return nullptr;
  if (!check(*api, api->cuDevicePrimaryCtxRetain(&m->ctx_, m->handle_),
             "cuDevicePrimaryCtxRetain(" + dev + ")", error)) {
    m->ctx_ = nullptr;
    return nullptr;
  }
  if (!makeCurrent(*api, m->ctx_, error))
    return nullptr;
  // PTX must be NUL-terminated; a cubin is unaffected by a trailing NUL.
  std::vector<char> copy(static_cast<const char *>(image), static_cast<const char *>(image) + size);
  copy.push_back('\0');
  if (!check(*api, api->cuModuleLoadData(&m->module_, copy.data()),
             "cuModuleLoadData(" + dev + ", " + std::to_string(size) + " bytes)", error)) {
    m->module_ = nullptr;
    return nullptr;
  }
  return m;
}

Module::~Module() {
  if (!api_)
    return;
  std::string ignored;
  if (module_ && makeCurrent(*api_, ctx_, ignored))
    api_->cuModuleUnload(module_);
  if (ctx_)
    api_->cuDevicePrimaryCtxRelease(handle_);
}

const Kernel *Module::kernel(const std::string &name, std::string &error) {
  auto it = kernels_.find(name);
  if (it != kernels_.end())
    return &it->second;
  Kernel k;
  k.name = name;
  k.ctx = ctx_;
  if (!makeCurrent(*api_, ctx_, error) ||
      !check(*api_, api_->cuModuleGetFunction(&k.fn, module_, name.c_str()),
             "cuModuleGetFunction(" + name + ")", error))
    return nullptr;
  return &kernels_.emplace(name, std::move(k)).first->second;
}

bool launch(const Kernel &k, const LaunchDims &d, CUstream stream, void *const *ptrs, int numArgs,
            std::string &error) {
  const DriverApi *api = driver(error);
  if (!api || !makeCurrent(*api, k.ctx, error))
    return false;
  // cuLaunchKernel wants a pointer to each argument's value. The array is
  // NULL-terminated (the driver reads only the kernel's parameter count;
  // test/python/cuda_fake's driver reads up to the NULL).
  void *inline_[17];
  std::vector<void *> heap;
  void **params = inline_;
  if (numArgs > 16) {
    heap.resize(numArgs + 1);
    params = heap.data();
  }
  for (int i = 0; i < numArgs; ++i)
    params[i] = const_cast<void **>(ptrs + i);
  params[numArgs] = nullptr;
  CUresult r = api->cuLaunchKernel(k.fn, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1],
                                   d.block[2], d.sharedBytes, stream, params, nullptr);
  if (r == 0) // the message is built only on failure (launches are the hot path)
    return true;
  return check(*api, r,
               "cuLaunchKernel(" + k.name + ", grid " + std::to_string(d.grid[0]) + ", block " +
                   std::to_string(d.block[0]) + ")",
               error);
}

bool synchronize(CUstream stream, std::string &error) {
  const DriverApi *api = driver(error);
  return api && check(*api, api->cuStreamSynchronize(stream), "cuStreamSynchronize", error);
}

bool deviceAttribute(int device, DeviceAttribute attr, int &value, std::string &error) {
  const DriverApi *api = driver(error);
  CUdevice h = 0;
  return api && check(*api, api->cuDeviceGet(&h, device), "cuDeviceGet", error) &&
         check(*api, api->cuDeviceGetAttribute(&value, attr, h), "cuDeviceGetAttribute", error);
}

bool deviceCount(int &count, std::string &error) {
  const DriverApi *api = driver(error);
  return api && check(*api, api->cuDeviceGetCount(&count), "cuDeviceGetCount", error);
}

bool driverVersion(int &version, std::string &error) {
  const DriverApi *api = driver(error);
  return api && check(*api, api->cuDriverGetVersion(&version), "cuDriverGetVersion", error);
}

} // namespace kiln::rt::cuda

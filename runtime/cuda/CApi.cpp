//===- CApi.cpp - C entry points of libkiln_cuda (for ctypes) --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// libkiln_cuda.so exports a small C ABI over CudaRuntime.h so that Python
// calls it through ctypes: the same library and Python code work in the
// kiln package and on a machine where only this runtime is built (no MLIR,
// any Python version; tools/gpu-check.sh). Every function returns 0 on
// success, or -1 with a NUL-terminated message in `err` (`cap` bytes).
// Handles are opaque pointers owned by the caller (module_unload frees).
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/Plan.h"

#include <cstdint>
#include <cstring>
#include <vector>

using namespace kiln::rt::cuda;

namespace {

int fail(const std::string &msg, char *err, size_t cap) {
  if (err && cap) {
    size_t n = std::min(msg.size(), cap - 1);
    std::memcpy(err, msg.data(), n);
    err[n] = '\0';
  }
  return -1;
}

LaunchDims dimsAt(const uint32_t *d) {
  LaunchDims l;
  for (int i = 0; i < 3; ++i) {
    l.grid[i] = d[i];
    l.block[i] = d[3 + i];
  }
  l.sharedBytes = d[6];
  return l;
}

} // namespace

extern "C" {

/// Sets the CUDA driver library to open (path or soname; null or "" = the
/// default libcuda.so.1). Effective only before the first call that loads it.
__attribute__((visibility("default"))) void kiln_cuda_set_driver_library(const char *name) {
  setDriverLibraryName(name ? name : "");
}

/// Loads the driver and runs cuInit (0), or explains why it cannot.
__attribute__((visibility("default"))) int kiln_cuda_init(char *err, size_t cap) {
  std::string e;
  return driver(e) ? 0 : fail(e, err, cap);
}

__attribute__((visibility("default"))) int kiln_cuda_driver_version(int *version, char *err,
                                                                    size_t cap) {
  std::string e;
  return driverVersion(*version, e) ? 0 : fail(e, err, cap);
}

__attribute__((visibility("default"))) int kiln_cuda_device_count(int *count, char *err,
                                                                  size_t cap) {
  std::string e;
  return deviceCount(*count, e) ? 0 : fail(e, err, cap);
}

/// cuDeviceGetAttribute (16: SM count, 75/76: compute capability).
__attribute__((visibility("default"))) int
kiln_cuda_device_attribute(int device, int attr, int *value, char *err, size_t cap) {
  std::string e;
  return deviceAttribute(device, static_cast<DeviceAttribute>(attr), *value, e) ? 0
                                                                                : fail(e, err, cap);
}

__attribute__((visibility("default"))) int kiln_cuda_module_load(int device, const void *image,
                                                                 size_t size, void **module,
                                                                 char *err, size_t cap) {
  std::string e;
  std::unique_ptr<Module> m = Module::load(device, image, size, e);
  if (!m)
    return fail(e, err, cap);
  *module = m.release();
  return 0;
}

__attribute__((visibility("default"))) void kiln_cuda_module_unload(void *module) {
  delete static_cast<Module *>(module);
}

/// A kernel handle, valid while its module is loaded.
__attribute__((visibility("default"))) int
kiln_cuda_module_kernel(void *module, const char *name, void **kernel, char *err, size_t cap) {
  std::string e;
  const Kernel *k = static_cast<Module *>(module)->kernel(name, e);
  if (!k)
    return fail(e, err, cap);
  *kernel = const_cast<Kernel *>(k);
  return 0;
}

/// One launch: `dims` = grid x/y/z, block x/y/z, shared bytes; `ptrs` are
/// the kernel's pointer arguments; `stream` a CUstream (0: legacy default).
__attribute__((visibility("default"))) int kiln_cuda_launch(void *kernel, const uint32_t *dims,
                                                            void *stream, void *const *ptrs,
                                                            int numArgs, char *err, size_t cap) {
  std::string e;
  return launch(*static_cast<Kernel *>(kernel), dimsAt(dims), static_cast<CUstream>(stream), ptrs,
                numArgs, e)
             ? 0
             : fail(e, err, cap);
}

/// `n` launches in order on one stream in one call: kernel i has dims
/// `dims[7i..7i+6]` and the next `argCounts[i]` pointers of `ptrs`.
__attribute__((visibility("default"))) int
kiln_cuda_launch_many(int n, void *const *kernels, const uint32_t *dims, const int32_t *argCounts,
                      void *const *ptrs, void *stream, char *err, size_t cap) {
  std::string e;
  for (int i = 0; i < n; ++i) {
    if (!launch(*static_cast<Kernel *>(kernels[i]), dimsAt(dims + 7 * i),
                static_cast<CUstream>(stream), ptrs, argCounts[i], e))
      return fail(e, err, cap);
    ptrs += argCounts[i];
  }
  return 0;
}

__attribute__((visibility("default"))) int kiln_cuda_synchronize(void *stream, char *err,
                                                                 size_t cap) {
  std::string e;
  return synchronize(static_cast<CUstream>(stream), e) ? 0 : fail(e, err, cap);
}

/// Sets the cuBLASLt library to open (path or soname; "" = the default
/// sonames). kiln/cuda/_driver.py passes the copy torch loaded.
__attribute__((visibility("default"))) void kiln_cuda_set_cublaslt_library(const char *name) {
  setCublasLtLibraryName(name ? name : "");
}

/// The cuBLASLt call kiln makes for a row-major GEMM (Cublaslt.h), as text.
__attribute__((visibility("default"))) int
kiln_cuda_gemm_describe(int inType, int outType, int64_t batch, int64_t m, int64_t n, int64_t k,
                        int transB, int tf32, int epilogue, char *out, size_t outCap, char *err,
                        size_t cap) {
  GemmDesc g;
  g.inType = (DataType)inType;
  g.outType = (DataType)outType;
  g.batch = batch, g.m = m, g.n = n, g.k = k;
  g.transB = transB, g.tf32 = tf32, g.epilogue = (Epilogue)epilogue;
  LtCall call;
  std::string e;
  if (!lowerGemm(g, call, e))
    return fail(e, err, cap);
  fail(describe(call), out, outCap); // copies the text
  return 0;
}

/// A Plan (Plan.h) over `module`'s kernels; counts: kernels, GEMMs.
__attribute__((visibility("default"))) int kiln_cuda_plan_create(void *module, const char *spec,
                                                                 void **plan, int32_t *counts,
                                                                 char *err, size_t cap) {
  std::string e;
  std::unique_ptr<Plan> p = Plan::create(*static_cast<Module *>(module), spec, e);
  if (!p)
    return fail(e, err, cap);
  counts[0] = p->numKernels();
  counts[1] = p->numGemms();
  *plan = p.release();
  return 0;
}

__attribute__((visibility("default"))) void kiln_cuda_plan_destroy(void *plan) {
  delete static_cast<Plan *>(plan);
}

/// Runs the whole plan on `stream` (one call per graph execution).
__attribute__((visibility("default"))) int kiln_cuda_plan_run(void *plan, void *const *inputs,
                                                              void *const *outputs, void *arena,
                                                              void *stream, char *err, size_t cap) {
  std::string e;
  return static_cast<Plan *>(plan)->run(inputs, outputs, arena, static_cast<CUstream>(stream), e)
             ? 0
             : fail(e, err, cap);
}

/// Records one run of the plan into a CUDA graph with these addresses.
__attribute__((visibility("default"))) int kiln_cuda_plan_capture(void *plan, void *const *inputs,
                                                                  void *const *outputs, void *arena,
                                                                  void **graph, char *err,
                                                                  size_t cap) {
  std::string e;
  std::unique_ptr<CapturedPlan> g =
      CapturedPlan::capture(*static_cast<Plan *>(plan), inputs, outputs, arena, e);
  if (!g)
    return fail(e, err, cap);
  *graph = g.release();
  return 0;
}

/// Copies `n` inputs into the graph's static buffers, then replays it.
__attribute__((visibility("default"))) int
kiln_cuda_graph_replay(void *graph, int n, void *const *dst, void *const *src, const size_t *bytes,
                       void *stream, char *err, size_t cap) {
  std::string e;
  return static_cast<CapturedPlan *>(graph)->replay(n, dst, src, bytes,
                                                    static_cast<CUstream>(stream), e)
             ? 0
             : fail(e, err, cap);
}

__attribute__((visibility("default"))) void kiln_cuda_graph_destroy(void *graph) {
  delete static_cast<CapturedPlan *>(graph);
}

} // extern "C"

# SPDX-License-Identifier: Apache-2.0
"""Runs emitted CUDA kernels on the CPU, for numerics tests without a GPU.

The emitted source is compiled with the host C++ compiler (C++20) and a
shim: CUDA keywords defined away, blockIdx/threadIdx thread-local. Each
launch runs its blocks one after another; pointwise kernels (independent
threads) loop over the threads, row kernels run every thread of a block
as a std::thread, with __syncthreads a block barrier, __shfl_xor_sync a
per-warp exchange between two warp barriers and __shared__ variables
static (one block at a time); uint4/uint2 are plain aligned structs for the
128-bit loads/stores of vectorized kernels. f16/bf16 storage uses host bit-pattern
types with round-to-nearest-even conversions in place of cuda_fp16.h /
cuda_bf16.h. GEMM steps run through torch, as in CudaGraph.
"""
import ctypes
import os
import re
import shutil
import subprocess

SHIM = r"""
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>
struct kiln_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local kiln_dim3 blockIdx, threadIdx, blockDim, gridDim;
struct kiln_block {
  std::unique_ptr<std::barrier<>> all;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<double> slots;
};
static thread_local kiln_block *kiln_ctx;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(n)
#define __shared__ static
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
// 16-bit storage: bit patterns with CUDA's conversion functions
// (round to nearest even), so f16/bf16 kernels run on the host as well.
// float8 e4m3fn (cuda_fp8.h's __nv_fp8_e4m3): from float rounds to nearest
// even and saturates at ±448 (NaN stays NaN), to float is exact.
struct __nv_fp8_e4m3 {
  unsigned char __x = 0;
  __nv_fp8_e4m3() = default;
  explicit __nv_fp8_e4m3(float f) {
    unsigned char sign = std::signbit(f) ? 0x80 : 0;
    float a = std::fabs(f);
    if (std::isnan(f)) { __x = 0x7f | sign; return; }
    if (a >= 448.0f) { __x = 0x7e | sign; return; }
    int e;
    std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1): the normal exponent is e - 1
    int q;
    if (e - 1 < -6) {   // subnormal: units of 2^-9 (q = 8 is the smallest normal)
      q = (int)std::nearbyint(std::ldexp(a, 9));
    } else {
      q = (int)std::nearbyint(std::ldexp(a, 3 - (e - 1)));  // in [8, 16]
      q = ((e - 1 + 7) << 3) + (q - 8);                      // carries into the exponent
    }
    __x = (unsigned char)(q > 0x7e ? 0x7e : q) | sign;
  }
  operator float() const {
    int e = (__x >> 3) & 15, m = __x & 7;
    float v = (e == 15 && m == 7) ? NAN : e == 0 ? std::ldexp(m / 8.0f, -6)
                                                 : std::ldexp(1 + m / 8.0f, e - 7);
    return (__x & 0x80) ? -v : v;
  }
};
struct __half { unsigned short bits; };
struct __nv_bfloat16 { unsigned short bits; };
static inline float __half2float(__half h) { _Float16 f; std::memcpy(&f, &h.bits, 2); return (float)f; }
static inline __half __float2half_rn(float x) { _Float16 f = (_Float16)x; __half h; std::memcpy(&h.bits, &f, 2); return h; }
static inline float __bfloat162float(__nv_bfloat16 b) { unsigned u = unsigned(b.bits) << 16; float f; std::memcpy(&f, &u, 4); return f; }
static inline __nv_bfloat16 __float2bfloat16_rn(float x) {
  unsigned u; std::memcpy(&u, &x, 4);
  __nv_bfloat16 b;
  if ((u & 0x7fffffffu) > 0x7f800000u) { b.bits = (unsigned short)((u >> 16) | 0x40); return b; }
  u += 0x7fffu + ((u >> 16) & 1u);
  b.bits = (unsigned short)(u >> 16);
  return b;
}
// CUDA's 64/128-bit vector types, as reinterpreted by vectorized kernels.
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
static inline void __syncthreads() { kiln_ctx->all->arrive_and_wait(); }
template <typename T> static T __shfl_xor_sync(unsigned, T v, int o) {
  unsigned t = threadIdx.x, warp = t / 32, lane = t % 32;
  std::memcpy(&kiln_ctx->slots[t], &v, sizeof(T));
  kiln_ctx->warps[warp]->arrive_and_wait();
  T r;
  std::memcpy(&r, &kiln_ctx->slots[warp * 32 + (lane ^ o)], sizeof(T));
  kiln_ctx->warps[warp]->arrive_and_wait();
  return r;
}
// Runs one block of a cooperative kernel: every thread a std::thread.
static void kiln_run_block(unsigned b, unsigned grid, unsigned block,
                           const std::function<void()> &body) {
  kiln_block ctx;
  ctx.all = std::make_unique<std::barrier<>>(block);
  for (unsigned w = 0; w < (block + 31) / 32; ++w)
    ctx.warps.push_back(std::make_unique<std::barrier<>>(32));
  ctx.slots.resize(block);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < block; ++t)
    threads.emplace_back([&, t] {
      kiln_ctx = &ctx;
      gridDim.x = grid; blockDim.x = block; blockIdx.x = b; threadIdx.x = t;
      body();
    });
  for (auto &th : threads) th.join();
}
"""

_SIG = re.compile(r'extern "C" __global__ void __launch_bounds__\(\d+\) (\w+)\((.*)\) \{')


def emulable(emitted) -> bool:
    """Every kernel of the module can be emulated (kept for callers that
    filter; all of today's kernel kinds can)."""
    return all(k["kind"] in ("pointwise", "row_reduction") for k in emitted["kernels"])


def compile_host(emitted, folder):
    """Builds the kernels + one `run_<kernel>(void **ptrs, grid, block)`
    launcher each and loads them (None without a C++ compiler)."""
    lib = build_host_library(emitted, folder)
    return ctypes.CDLL(lib) if lib else None


def build_host_library(emitted, folder):
    """The path of the host kernel library (see compile_host), or None."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if not cxx:
        return None
    kinds = {k["name"]: k["kind"] for k in emitted["kernels"]}
    launchers = []
    for name, params in _SIG.findall(emitted["source"]):
        types = [p.rsplit(" ", 1)[0].replace("__restrict__", "").strip() for p in params.split(", ")]
        args = ", ".join(f"({t})ptrs[{i}]" for i, t in enumerate(types))
        if kinds.get(name) == "pointwise":
            launchers.append(
                f'extern "C" void run_{name}(void **ptrs, unsigned grid, unsigned block) {{\n'
                f"  gridDim.x = grid; blockDim.x = block;\n"
                f"  for (unsigned b = 0; b < grid; ++b) for (unsigned t = 0; t < block; ++t) {{\n"
                f"    blockIdx.x = b; threadIdx.x = t; {name}({args});\n  }}\n}}\n")
        else:
            launchers.append(
                f'extern "C" void run_{name}(void **ptrs, unsigned grid, unsigned block) {{\n'
                f"  for (unsigned b = 0; b < grid; ++b)\n"
                f"    kiln_run_block(b, grid, block, [&] {{ {name}({args}); }});\n}}\n")
    src = os.path.join(str(folder), "kernels.cpp")
    source = "\n".join(line for line in emitted["source"].splitlines()
                       if not line.startswith("#include <cuda_"))
    with open(src, "w") as f:
        f.write(SHIM + source + "\n" + "".join(launchers))
    lib = os.path.join(str(folder), "kernels.so")
    subprocess.run([cxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-o", lib,
                    src], check=True)
    return lib


def emulation_env(fake_driver, host_library=None):
    """Environment for a process that runs kiln's CUDA executors on the CPU:
    the fake driver + cuBLASLt (cuda_fake/) and, optionally, the host
    kernels of one module (CPU tensors stand in for device memory)."""
    env = {"KILN_CUDA_DRIVER": fake_driver, "KILN_CUBLASLT": fake_driver}
    if host_library:
        env["KILN_FAKE_CUDA_HOST_LIB"] = host_library
    return env


def run(graph, lib, inputs):
    """Runs a kiln.cuda.CudaGraph's plan on CPU tensors with the host kernels
    (a graph with dynamic dims: its plan for these inputs' sizes)."""
    from kiln.cuda.graph import kernel_args
    graph = graph.specialize(inputs)
    bufs = graph._allocate(inputs, inputs[0].device)
    for kind, item in graph.steps:
        if kind == "gemm":
            graph._gemm(item, bufs)
            continue
        for k in item:
            values = kernel_args(k, bufs)
            ptrs = (ctypes.c_void_p * max(1, len(values)))(*values)
            getattr(lib, "run_" + k["name"])(ptrs, k["grid"], k["block"])
    return graph._results(bufs)

# SPDX-License-Identifier: Apache-2.0
"""Runs emitted CUDA kernels on the CPU, for numerics tests without a GPU.

Kernels whose threads are independent (pointwise, transposes, fills,
one-thread-per-output reductions: kind "pointwise") are plain C++ once
the CUDA keywords are defined away: the emitted source is compiled with
the host C++ compiler and a shim (thread-local blockIdx/threadIdx), and
each launch loops over every (block, thread). Row kernels (warp shuffles,
__syncthreads) and 16-bit storage (cuda_fp16/bf16 headers) are not
emulated: ``emulable()`` says whether a module qualifies. GEMM steps run
through torch, as in CudaGraph.
"""
import ctypes
import os
import re
import shutil
import subprocess

SHIM = r"""
#include <cmath>
#include <cstdlib>
#include <cstring>
struct kiln_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local kiln_dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(n)
#define __shared__ static
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
template <typename T> static T __shfl_xor_sync(unsigned, T, int) { std::abort(); }
static inline void __syncthreads() { std::abort(); }
"""

_SIG = re.compile(r'extern "C" __global__ void __launch_bounds__\(\d+\) (\w+)\((.*)\) \{')


def emulable(emitted) -> bool:
    src = emitted["source"]
    return (all(k["kind"] == "pointwise" for k in emitted["kernels"])
            and "__half" not in src and "__nv_bfloat16" not in src)


def compile_host(emitted, folder):
    """Builds the kernels + one `run_<kernel>(void **ptrs, grid, block)` launcher each."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if not cxx:
        return None
    launchers = []
    for name, params in _SIG.findall(emitted["source"]):
        types = [p.rsplit(" ", 1)[0].replace("__restrict__", "").strip() for p in params.split(", ")]
        args = ", ".join(f"({t})ptrs[{i}]" for i, t in enumerate(types))
        launchers.append(
            f'extern "C" void run_{name}(void **ptrs, unsigned grid, unsigned block) {{\n'
            f"  gridDim.x = grid; blockDim.x = block;\n"
            f"  for (unsigned b = 0; b < grid; ++b) for (unsigned t = 0; t < block; ++t) {{\n"
            f"    blockIdx.x = b; threadIdx.x = t; {name}({args});\n  }}\n}}\n")
    src = os.path.join(str(folder), "kernels.cpp")
    with open(src, "w") as f:
        f.write(SHIM + emitted["source"] + "\n" + "".join(launchers))
    lib = os.path.join(str(folder), "kernels.so")
    subprocess.run([cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-o", lib, src],
                   check=True)
    return ctypes.CDLL(lib)


def run(graph, lib, inputs):
    """Runs a kiln.cuda.CudaGraph's plan on CPU tensors with the host kernels."""
    bufs = graph._allocate(inputs, inputs[0].device)
    for kind, item in graph.steps:
        if kind == "gemm":
            graph._gemm(item, bufs)
            continue
        for k in item:
            ptrs = (ctypes.c_void_p * len(k["args"]))(*[bufs[n].data_ptr() for n in k["args"]])
            getattr(lib, "run_" + k["name"])(ptrs, k["grid"], k["block"])
    return graph._results(bufs)

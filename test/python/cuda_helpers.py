# SPDX-License-Identifier: Apache-2.0
"""Helpers of the CUDA test files: which CUDA pieces this machine has, the
fake driver (cuda_fake/fake_libcuda.c) built on demand, and small IR
modules used by several tests."""
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def nvrtc_available():
    from kiln import _C
    return _C.nvrtc_available()


requires_nvrtc = pytest.mark.skipif("not __import__('cuda_helpers').nvrtc_available()",
                                    reason="kiln was built without NVRTC")


def gpu_available():
    """A CUDA device torch can use and a driver kiln can load."""
    import torch
    if not torch.cuda.is_available():
        return False
    import kiln.cuda
    return kiln.cuda.available()


def build_fake_driver(folder):
    """Compiles the fake libcuda into `folder`; skips the test without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler for the fake CUDA driver")
    out = os.path.join(str(folder), "libfakecuda.so")
    # One library holds the fake driver and the fake cuBLASLt (they share
    # stream capture): $KILN_CUDA_DRIVER and $KILN_CUBLASLT both name it.
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", out,
                    os.path.join(HERE, "cuda_fake", "fake_libcuda.c"),
                    os.path.join(HERE, "cuda_fake", "fake_cublaslt.c"), "-ldl", "-lm"],
                   check=True)
    return out


# gelu(x @ w.T + b) @ w2, softmax over rows: GEMM, pointwise kernel (bias +
# GELU), GEMM, row-group kernel (softmax).
MLP_SOFTMAX_IR = """
func.func @forward(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>, %w2: tensor<32x24xf32>) -> tensor<8x24xf32> {
  %t = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
  %0 = kiln.matmul %x, %t : tensor<8x16xf32>, tensor<16x32xf32>
  %1 = kiln.add %0, %b : tensor<8x32xf32>, tensor<32xf32>
  %2 = kiln.gelu %1 : tensor<8x32xf32>
  %3 = kiln.matmul %2, %w2 : tensor<8x32xf32>, tensor<32x24xf32>
  %4 = kiln.softmax %3 {dim = 1 : i64} : tensor<8x24xf32>
  return %4 : tensor<8x24xf32>
}
"""


def mlp_softmax_inputs(device="cpu"):
    import torch
    return [torch.randn(*s, device=device) for s in ((8, 16), (32, 16), (32,), (32, 24))]


def mlp_softmax_eager(x, w, b, w2):
    import torch
    return torch.softmax(torch.nn.functional.gelu(x @ w.T + b) @ w2, dim=1)


# An op the emitter refuses (argmax's two outputs over a `?` dim) between
# kernels it emits.
UNSUPPORTED_IR = """
func.func @forward(%x: tensor<?x16xf32>) -> tensor<?xf32> {
  %0 = kiln.argmax %x {dim = 1 : i64} : tensor<?x16xf32> -> tensor<?xi64>
  %1 = kiln.cast %0 : tensor<?xi64> -> tensor<?xf32>
  return %1 : tensor<?xf32>
}
"""

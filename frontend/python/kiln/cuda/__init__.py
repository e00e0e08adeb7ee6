# SPDX-License-Identifier: Apache-2.0
"""kiln's CUDA backend (issue 6), usable without a GPU up to the launch.

- ``kiln.cuda.emit(ir)``: kiln IR text → CUDA C++ + launch plan (the CUDA
  emitter, through kiln._C).
- ``kiln.cuda.compile_ir(ir)``: → a ``CudaGraph`` that runs on CUDA tensors
  (kernels through libkiln_cuda on torch's current stream, GEMMs through
  torch.matmul), with ``launches()`` as a dry run on any device (``meta``).
- ``kiln.cuda.nvrtc``: NVRTC compile checks of emitted or captured graphs.
- ``kiln.cuda.available()``: whether a CUDA driver is usable; without one,
  calls that need it raise ``CudaDriverError`` ("CUDA driver not found:
  libcuda.so.1 ...").

``import kiln`` does not import this package; importing it does not load
the driver or initialize CUDA.
"""
from __future__ import annotations

from ._driver import CudaDriverError, available, init
from .graph import DTYPES, CudaGraph, CudaUnsupportedError

__all__ = ["CudaDriverError", "CudaGraph", "CudaUnsupportedError", "DTYPES", "available",
           "compile_ir", "emit", "init"]


def emit(ir: str, fuse_rows: bool = True, collect_unsupported: bool = False,
         **options) -> dict:
    """The CUDA emitter's output for kiln IR text (see kiln._C.cuda_emit;
    `options`: one_pass_rows=, vectorize=, gemm_epilogues=, all True by
    default; codegen/cuda/README.md)."""
    from kiln import _C
    return _C.cuda_emit(ir, fuse_rows=fuse_rows, collect_unsupported=collect_unsupported,
                        **options)


def compile_ir(ir: str, function: str = "forward", fuse_rows: bool = True) -> CudaGraph:
    """A CudaGraph for `function` of `ir`; CudaUnsupportedError lists every
    op without a CUDA lowering (with its location and reason)."""
    return CudaGraph(emit(ir, fuse_rows=fuse_rows, collect_unsupported=True), function)

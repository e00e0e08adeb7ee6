# SPDX-License-Identifier: Apache-2.0
"""GEMM GFLOP/s of kiln's BLAS shim (OpenBLAS and oneMKL) vs torch.mm.

Calls `_mlir_ciface_kiln_blas_sgemm` (what compiled code calls) through
ctypes, switching the provider in-process with kilnSetBlasLibrary, and
interleaves the providers and torch.mm (best of 11 batches each, twice).
Usage: .venv/bin/python tools/bench_gemm.py [--threads N]
"""
from __future__ import annotations

import argparse
import ctypes
import time

import torch

from kiln import _C, _blas

SHAPES = [(32, 256, 512), (32, 512, 512), (256, 256, 1024), (512, 512, 512)]


class MemRef2(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("data", ctypes.c_void_p), ("offset", ctypes.c_int64),
                ("sizes", ctypes.c_int64 * 2), ("strides", ctypes.c_int64 * 2)]


def memref(t: torch.Tensor) -> MemRef2:
    m = MemRef2()
    m.base = m.data = t.data_ptr()
    m.sizes[:] = list(t.shape)
    m.strides[:] = list(t.stride())
    return m


def best(fn, reps: int) -> float:
    times = []
    for _ in range(11):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lib = ctypes.CDLL(_C.__file__)
    sgemm = lib._mlir_ciface_kiln_blas_sgemm
    sgemm.argtypes = [ctypes.POINTER(MemRef2)] * 3 + [ctypes.c_int32, ctypes.c_float]
    lib.kilnSetNumThreads(args.threads)
    providers = ["openblas"] + ([_blas.find_mkl()] if _blas.find_mkl() else [])
    print(f"threads {args.threads}; GFLOP/s (shim via ctypes, torch.mm with out=)")
    print("| M x K x N | OpenBLAS shim | MKL shim | torch.mm | MKL shim / torch.mm |")
    print("|---|---|---|---|---|")
    for m, k, n in SHAPES:
        a, b = torch.randn(m, k), torch.randn(k, n)
        c, c2 = torch.empty(m, n), torch.empty(m, n)
        ma, mb, mc = memref(a), memref(b), memref(c)
        flop = 2.0 * m * n * k
        reps = max(10, min(5000, int(4e8 / flop)))
        t = {}
        for p in providers * 2:
            lib.kilnSetBlasLibrary(p.encode())
            sgemm(ma, mb, mc, 0, 0.0)
            torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-3)
            t[p] = min(t.get(p, 1e9), best(lambda: sgemm(ma, mb, mc, 0, 0.0), reps))
            t["torch"] = min(t.get("torch", 1e9), best(lambda: torch.mm(a, b, out=c2), reps))
        gf = {p: flop / s * 1e-9 for p, s in t.items()}
        mkl = gf.get(providers[-1]) if len(providers) > 1 else None
        mkl_col = f"{mkl:.0f}" if mkl else "-"
        ratio = f"{mkl / gf['torch']:.2f}x" if mkl else "-"
        print(f"| {m}x{k}x{n} | {gf['openblas']:.0f} | {mkl_col} | {gf['torch']:.0f} | {ratio} |")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Composed ATen overloads against eager, for docs/performance.md ("ATen
overloads composed from kiln ops").

Sort, topk, scatter_add, index_put, integer bitwise_and and
max_pool2d_with_indices (kiln/_aten_sort.py, _aten_scatter.py,
_aten_pool.py build them from ops kiln lowers: pairwise ranks, one-hot
matches, unrolled windows) called as ``torch.ops.aten.*``: p50 single-call
latency of eager and of kiln's compiled graph (interleaved rounds in one
process, one thread), and kiln's compile time. Small sizes: what the
compositions cost relative to eager's dedicated kernels, not a model.

    .venv/bin/python tools/bench_aten.py [--rounds 5] [--calls 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "frontend", "python")]

import torch  # noqa: E402

import kiln  # noqa: E402

aten = torch.ops.aten


def _cases():
    rows = torch.randn(64, 256)
    img = torch.randn(1, 64, 56, 56)
    idx = torch.randint(0, 256, (64, 32))
    ints = torch.randint(-2**40, 2**40, (256, 256))
    return [
        ("sort, 64 rows of 256", lambda x: aten.sort.default(x, -1), (rows,)),
        ("topk k=8, 64 rows of 256", lambda x: aten.topk.default(x, 8), (rows,)),
        ("scatter_add, 64x256 from 64x32", lambda x, i, s: aten.scatter_add.default(x, 1, i, s),
         (rows, idx, torch.randn(64, 32))),
        ("index_put, 32 of 1024 rows x 64", lambda x, i, v: aten.index_put.default(x, [i], v),
         (torch.randn(1024, 64), torch.randint(0, 1024, (32,)), torch.randn(32, 64))),
        ("bitwise_and int64, 256x256", lambda a, b: aten.bitwise_and.Tensor(a, b),
         (ints, ints.flip(0))),
        ("max_pool2d_with_indices 3x3/2, 1x64x56x56",
         lambda x: aten.max_pool2d_with_indices.default(x, [3, 3], [2, 2], [1, 1]), (img,)),
    ]


def _p50(fn, args, calls):
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(*args)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    opts = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print("| overload (size) | eager p50 ms | kiln p50 ms | kiln compile s | fallback ops |")
    print("|---|---|---|---|---|")
    for name, fn, args in _cases():
        kiln.reset()
        compiled = kiln.compile(fn)
        compiled(*args)
        s = kiln.stats()
        times = {"eager": [], "kiln": []}
        for _ in range(opts.rounds):
            times["eager"] += _p50(fn, args, opts.calls)
            times["kiln"] += _p50(compiled, args, opts.calls)
        eager, ours = (statistics.median(times[k]) for k in ("eager", "kiln"))
        print(f"| {name} | {eager:.3f} | {ours:.3f} | {s['compile_time_us'] / 1e6:.2f} | "
              f"{s['fallback_ops']} |")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""kiln.export numbers for docs/performance.md ("Exported artifacts").

Per model (test/python/export_models.py: small, random init): p50 latency of
eager PyTorch, the JIT path (kiln.compile), the artifact through kiln.load
(ctypes + libkiln_runtime; host and x86-64 baseline builds) -- interleaved
in one process --
and through the kiln-run CLI (its own p50; oneMKL GEMMs when the venv has
libmkl_rt, like torch); the artifact's size against its
weights' and code's; kiln.load's time with the file in the page cache (warm)
and evicted from it with posix_fadvise(DONTNEED) (cold). One thread
everywhere (a shared 2-core machine). Prints a markdown table.

    .venv/bin/python tools/bench_export.py [--rounds 7] [--calls 50] [--resnet18] [--only TEXT]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "frontend", "python"), os.path.join(ROOT, "test", "python")]

import numpy as np  # noqa: E402
import torch  # noqa: E402

import kiln  # noqa: E402
from export_models import CNN, BertBlock, GPT2Block, mlp  # noqa: E402
from kiln import _artifact_file  # noqa: E402

# (row, model, example shape, dynamic_shapes, run shape when not the example's)
SEQ = ({0: ("batch", 2, 16), 1: ("seq", 2, 128)},)
MODELS = [("MLP 64-128-10, batch 8", mlp, (8, 64), None, None),
          ("MLP, dynamic batch [2, 64], run at 8", mlp, (8, 64), ({0: ("batch", 2, 64)},), None),
          ("ResNet-like CNN, 4x3x32x32", CNN, (4, 3, 32, 32), None, None),
          ("ResNet-like CNN, dynamic batch [2, 16] (example 5), run at 4", CNN, (5, 3, 32, 32),
           ({0: ("batch", 2, 16)},), (4, 3, 32, 32)),
          ("BERT block, 2x16x64", BertBlock, (2, 16, 64), None, None),
          ("BERT block, dynamic batch [2, 16] and seq [2, 128] (example 3x10), run at 2x16",
           BertBlock, (3, 10, 64), SEQ, (2, 16, 64)),
          ("BERT block, 8x64x64", BertBlock, (8, 64, 64), None, None),
          ("BERT block, dynamic as above, run at 8x64", BertBlock, (3, 10, 64), SEQ, (8, 64, 64)),
          ("GPT-2 block, 2x16x64", GPT2Block, (2, 16, 64), None, None),
          ("GPT-2 block, dynamic as above, run at 2x16", GPT2Block, (3, 10, 64), SEQ, (2, 16, 64)),
          ("GPT-2 block, 8x64x64", GPT2Block, (8, 64, 64), None, None),
          ("GPT-2 block, dynamic as above, run at 8x64", GPT2Block, (3, 10, 64), SEQ, (8, 64, 64))]


def resnet18():
    import torchvision
    return torchvision.models.resnet18()


RESNET18 = [("torchvision resnet18, 2x3x64x64", resnet18, (2, 3, 64, 64), None, None),
            ("torchvision resnet18, dynamic batch [2, 16] (example 5), run at 2", resnet18,
             (5, 3, 64, 64), ({0: ("batch", 2, 16)},), (2, 3, 64, 64))]


def call_ms(fn, x, calls):
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(x)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def latencies(variants, x, rounds, calls):
    """Each variant's median single-call time (p50, as kiln-run reports),
    rounds interleaved: preemption on a loaded machine hits outliers only."""
    times = {name: [] for name in variants}
    for fn in variants.values():
        fn(x)  # warm up (compiles the JIT path)
    for _ in range(rounds):
        for name, fn in variants.items():
            times[name] += call_ms(fn, x, calls)
    return {name: statistics.median(t) for name, t in times.items()}


def load_ms(path, cold, repeats=5):
    out = []
    for _ in range(repeats):
        if cold:
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)  # dirty pages (a fresh export) cannot be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        t0 = time.perf_counter()
        m = kiln.load(path)
        out.append((time.perf_counter() - t0) * 1e3)
        del m
    return statistics.median(out)


def kiln_run_p50(path, x, tmp, calls):
    """kiln-run's p50, with oneMKL for GEMMs when the venv has it (as torch
    and the JIT path in this process)."""
    tool = os.path.join(ROOT, "build", "bin", "kiln-run")
    npy = os.path.join(tmp, "x.npy")
    np.save(npy, x.numpy())
    mkl = os.path.join(ROOT, ".venv", "lib", "libmkl_rt.so.2")
    blas = ["--blas", mkl] if os.path.exists(mkl) else []
    out = subprocess.run([tool, path, "--inputs", npy, "--bench", str(calls * 4), "--threads",
                          "1", *blas], capture_output=True, text=True, check=True).stdout
    return float(out.split(" p50 ")[1].split()[0])


def bench_model(name, make, shape, dynamic, run_shape, tmp, rounds, calls):
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(shape)
    path = os.path.join(tmp, "model.kiln")
    kiln.export(model, (x,), path, dynamic_shapes=dynamic)
    loaded = kiln.load(path)
    jit = kiln.compile(model)

    def eager(t):
        with torch.no_grad():
            return model(t)

    def jit_call(t):
        with torch.no_grad():
            return jit(t)

    if dynamic:  # the JIT path compiles the export's symbolic dims, at its example sizes
        kiln.mark_dynamic(x, list(dynamic[0]))
        jit_call(x)
    if run_shape is not None:
        x = torch.randn(run_shape)

    baseline = kiln.load(path, device="cpu-baseline")
    lat = latencies({"eager": eager, "jit": jit_call, "load": loaded, "baseline": baseline}, x,
                    rounds, calls)
    data = open(path, "rb").read()
    sections = _artifact_file.sections(data)
    weights = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    return {"name": name, **lat, "kiln-run": kiln_run_p50(path, x, tmp, calls),
            "size": len(data), "weights": weights, "code": sections["cpu_code"][1],
            "code_baseline": sections["cpu_code_baseline"][1],
            "warm": load_ms(path, False), "cold": load_ms(path, True)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--resnet18", action="store_true",
                    help="also torchvision's resnet18 (random init; ~45 MiB of weights)")
    ap.add_argument("--only", default="", help="rows whose name contains this text")
    a = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kiln-bench-export-") as tmp:
        for name, make, shape, dynamic, run in MODELS + (RESNET18 if a.resnet18 else []):
            if a.only in name:
                rows.append(bench_model(name, make, shape, dynamic, run, tmp, a.rounds, a.calls))
    print("| model | eager ms | kiln JIT ms | kiln.load ms | kiln.load baseline ms "
          "| kiln-run p50 ms | artifact KiB | weights KiB | code KiB (host + baseline) "
          "| load warm ms | load cold ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['eager']:.3f} | {r['jit']:.3f} | {r['load']:.3f} "
              f"| {r['baseline']:.3f} | {r['kiln-run']:.3f} | {r['size'] / 1024:.0f} "
              f"| {r['weights'] / 1024:.0f} | {r['code'] / 1024:.0f} + "
              f"{r['code_baseline'] / 1024:.0f} | {r['warm']:.2f} | {r['cold']:.2f} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-call overhead: eager vs kiln vs torch.compile on tiny graphs.

Cases: a 1-input trivial function (`x + 1` on 4 floats), the sum of 10
4-float inputs (a 10-input graph whose kernel is negligible: nearly all of
its time is per-call overhead), a Sequential of 5 Linear(8, 8) (10
parameter inputs + x), the batch-1 MLP of tools/bench_models.py, and a ModuleList
of 4 / 32 ReLUs looped over whole and through a slice
(`self.layers[:n]`, HF LLaMA's decoder loop): the difference is what the
slice's guard costs per call.
All variants are timed interleaved in one process, 1 thread, under
torch.no_grad(); each reported number is the median over `--rounds` of the
median per-call time of a batch of `--calls` calls (µs).

  .venv/bin/python tools/bench_overhead.py [--no-inductor] [--calls N] [--rounds R]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kiln  # noqa: E402
from bench_models import MLP  # noqa: E402


def add_one(x):
    return x + 1


def sum10(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9):
    return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9


class Layers(nn.Module):
    """`n` ReLUs in a ModuleList, looped over whole or as `layers[:n]`."""

    def __init__(self, n, sliced):
        super().__init__()
        self.layers = nn.ModuleList(nn.ReLU() for _ in range(n))
        self.n, self.sliced = n, sliced

    def forward(self, x):
        for layer in (self.layers[: self.n] if self.sliced else self.layers):
            x = layer(x) + 1
        return x


def cases():
    torch.manual_seed(0)
    seq = nn.Sequential(*[nn.Linear(8, 8) for _ in range(5)]).eval()
    mlp = MLP().eval()
    return [
        ("f(x) = x + 1, 4 floats (1 input)", add_one, (torch.randn(4),)),
        ("sum of 10 inputs, 4 floats each (10 inputs)", sum10,
         tuple(torch.randn(4) for _ in range(10))),
        ("Sequential 5x Linear(8,8), batch 1 (11 inputs)", seq, (torch.randn(1, 8),)),
        ("MLP 256-512-512-10, batch 1 (7 inputs)", mlp, (torch.randn(1, 256),)),
    ] + [(f"ModuleList of {n} ReLU, {'layers[:n]' if sliced else 'whole'} (1 input)",
          Layers(n, sliced).eval(), (torch.randn(4),))
         for n in (4, 32) for sliced in (False, True)]


def time_batch(fn, args, calls):
    """Median of per-call times over `calls` calls, timed in groups of 10."""
    samples = []
    for _ in range(calls // 10):
        t0 = time.perf_counter_ns()
        fn(*args); fn(*args); fn(*args); fn(*args); fn(*args)  # noqa: E702
        fn(*args); fn(*args); fn(*args); fn(*args); fn(*args)  # noqa: E702
        samples.append((time.perf_counter_ns() - t0) / 10e3)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--no-inductor", action="store_true", help="skip torch.compile")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    with torch.no_grad():
        for name, model, inputs in cases():
            if args.only not in name:
                continue
            variants = {"eager": model}
            variants["kiln"] = kiln.compile(model)
            ref = model(*inputs)
            err = (variants["kiln"](*inputs) - ref).abs().max().item()
            if not args.no_inductor:
                try:
                    t0 = time.perf_counter()
                    tc = torch.compile(model, mode="default")
                    tc(*inputs)
                    variants["torch.compile"] = tc
                    print(f"  torch.compile of {name}: {time.perf_counter() - t0:.1f} s",
                          file=sys.stderr)
                except Exception as e:  # inductor needs a C++ toolchain
                    print(f"  torch.compile skipped for {name}: {type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
            for fn in variants.values():  # warm up
                for _ in range(200):
                    fn(*inputs)
            times = {k: [] for k in variants}
            for _ in range(args.rounds):
                for k, fn in variants.items():
                    times[k].append(time_batch(fn, inputs, args.calls))
            rows.append((name, err, {k: statistics.median(v) for k, v in times.items()}))
    cols = ["eager", "kiln", "torch.compile"]
    print("| case | max abs err | " + " | ".join(f"{c} µs" for c in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for name, err, t in rows:
        cells = [f"{t[c]:.1f}" if c in t else "n/a" for c in cols]
        print(f"| {name} | {err:.1e} | " + " | ".join(cells) + " |")
    print(f"\nkiln stats: {kiln.stats()}", file=sys.stderr)


if __name__ == "__main__":
    main()

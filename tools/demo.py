#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kiln demo: compile real PyTorch models, check them against eager, time both.

Run with `make demo`. Each model is compiled with kiln.compile, its output
compared with eager PyTorch, and both are timed interleaved in this process
(median of many calls, one thread for torch and kiln alike).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
from torch import nn

import kiln


class MLP(nn.Module):
    """A 3-layer perceptron classifier."""

    def __init__(self, d_in=256, hidden=512, d_out=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, d_out))

    def forward(self, x):
        return self.net(x)


class FFNBlock(nn.Module):
    """Pre-norm transformer feed-forward block with a residual connection."""

    def __init__(self, d_model=256, d_ff=1024, dropout=0.1):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.up = nn.Linear(d_model, d_ff)
        self.act = nn.GELU()
        self.down = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        h = self.down(self.act(self.up(self.norm(x))))
        return x + self.drop(h)


def gated_activation(x, w, mode: str = "swish", scale: float = 0.5):
    """Python control flow on constants: specialized away at capture."""
    y = x @ w
    if mode == "swish":
        y = y * torch.sigmoid(y)
    elif mode == "tanh":
        y = torch.tanh(y)
    for _ in range(2):
        y = y * scale + 0.25
    return torch.softmax(y, dim=-1).sum(dim=0)


def median_us(fn, args, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def run_case(name, eager, args, repeat, atol):
    kiln.reset()
    compiled = kiln.compile(eager)
    t0 = time.perf_counter()
    with torch.no_grad():
        out = compiled(*args)
    compile_ms = (time.perf_counter() - t0) * 1e3
    with torch.no_grad():
        ref = eager(*args)
    err = (out - ref).abs().max().item()
    ok = torch.allclose(out, ref, atol=atol, rtol=1e-4)
    stats = kiln.stats()
    ran_compiled = stats.get("compiled_calls", 0) >= 1 and stats.get("graph_breaks", 0) == 0
    with torch.no_grad():
        for _ in range(10):  # warm up both
            eager(*args), compiled(*args)
        # Interleave eager and kiln so machine noise hits both alike.
        e_times, k_times = [], []
        for _ in range(5):
            e_times.append(median_us(eager, args, repeat // 5))
            k_times.append(median_us(compiled, args, repeat // 5))
    e_us, k_us = statistics.median(e_times), statistics.median(k_times)
    print(f"{name:<34} {'ok' if ok and ran_compiled else 'FAIL':<5} {err:9.2e} "
          f"{e_us:10.1f} {k_us:10.1f} {e_us / k_us:7.2f}x {compile_ms:9.1f}")
    return ok and ran_compiled, e_us / k_us


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=100, help="timed calls per model")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cases = [
        ("MLP 256-512-512-10, batch 1", MLP().eval(), (torch.randn(1, 256),), 1e-4),
        ("MLP 256-512-512-10, batch 32", MLP().eval(), (torch.randn(32, 256),), 1e-4),
        ("FFN block (LN+GELU) [8,32,256]", FFNBlock().eval(), (torch.randn(8, 32, 256),), 1e-4),
        ("FFN block (LN+GELU) [1,16,256]", FFNBlock().eval(), (torch.randn(1, 16, 256),), 1e-4),
        ("gated activation w/ control flow", gated_activation,
         (torch.randn(64, 128), torch.randn(128, 128)), 1e-4),
    ]
    print(f"kiln {kiln.__version__}, torch {torch.__version__}, threads {torch.get_num_threads()}")
    print(f"{'model':<34} {'check':<5} {'max|err|':>9} {'eager us':>10} {'kiln us':>10} "
          f"{'speedup':>8} {'compile ms':>10}")
    results = [run_case(name, model, inputs, args.repeat, atol)
               for name, model, inputs, atol in cases]
    geo = statistics.geometric_mean([r for _, r in results])
    print(f"geomean speedup over eager: {geo:.2f}x")
    return 0 if all(ok for ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())

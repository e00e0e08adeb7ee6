#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-call cost of module guards: instances sharing one entry vs identity.

Modules are guarded by type (capture/interp/ModuleGuards.cpp), so
instances of one class share a compiled entry. This measures what a
compiled call costs (µs, small sizes: the kernels are a few µs, most of the
time is guards, input gathering and the call) in four variants, timed
interleaved in one process at 1 thread under torch.no_grad():

- eager: the module itself;
- kiln, type guards: kiln.compile(model), the default;
- kiln, identity guards: the same graph from a subclass whose forward
  compares `self is self` first, which pins the capture's module guards to
  identity (weakly held), as every module was guarded before instances
  shared entries;
- kiln, 12 instances in turn: twelve instances of the class, one compiled
  wrapper each, called round-robin (every call's instance differs from the
  previous one's; all hit the one shared entry), next to eager doing the
  same (the weights of 12 instances do not stay in cache).

Cases: an MLP (3x Linear(64, 64), batch 1; 6 parameter inputs) and a stack
of 12 pre-LayerNorm transformer blocks (4 heads, batch 1; 144 parameter
inputs) at d=64, seq 8 and at d=8, seq 2 (tiny: nearly all of a call is
per-call overhead, guards included). Medians over `--rounds` of the median per-call time
of `--calls` calls.

  .venv/bin/python tools/bench_instances.py [--calls N] [--rounds R]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "frontend",
                                "python"))
import kiln  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                                    nn.Linear(64, 64))

    def forward(self, x):
        return self.layers(x)


class Block(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Stack(nn.Module):
    def __init__(self, n=12, d=64):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d) for _ in range(n))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class TinyStack(Stack):
    def __init__(self):
        super().__init__(d=8)


def pinned(cls):
    """A subclass whose capture guards its modules by identity."""

    class Pinned(cls):
        def forward(self, x):
            if self is self:  # `is` between modules pins identity (ModuleGuards.cpp)
                return super().forward(x)
            return x

    return Pinned


def time_batch(fn, args, calls):
    samples = []
    for _ in range(calls // 10):
        t0 = time.perf_counter_ns()
        for _ in range(10):
            fn(*args)
        samples.append((time.perf_counter_ns() - t0) / 10e3)
    return statistics.median(samples)


def round_robin(fns):
    state = {"i": 0}

    def call(*args):
        state["i"] = (state["i"] + 1) % len(fns)
        return fns[state["i"]](*args)

    return call


def variants(cls, x):
    torch.manual_seed(0)
    model = cls().eval()
    pin = pinned(cls)().eval()
    pin.load_state_dict(model.state_dict())
    many = [cls().eval() for _ in range(12)]
    compiled = [kiln.compile(m) for m in many]
    out = {
        "eager": model,
        "kiln, type guards": kiln.compile(model),
        "kiln, identity guards": kiln.compile(pin),
        "eager, 12 instances in turn": round_robin(many),
        "kiln, 12 instances in turn": round_robin(compiled),
    }
    for m, c in [(model, out["kiln, type guards"]), (model, out["kiln, identity guards"])] + list(
            zip(many, compiled)):  # each instance's own result
        torch.testing.assert_close(c(x), m(x), rtol=1e-4, atol=1e-5)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cases = [("MLP 3x Linear(64,64), batch 1", MLP, torch.randn(1, 64)),
             ("12 transformer blocks, d=64, seq 8", Stack, torch.randn(1, 8, 64)),
             ("12 transformer blocks, d=8, seq 2", TinyStack, torch.randn(1, 2, 8))]
    rows = []
    with torch.no_grad():
        for name, cls, x in cases:
            kiln.reset()
            fns = variants(cls, x)
            for fn in fns.values():  # warm up
                for _ in range(100):
                    fn(x)
            times = {k: [] for k in fns}
            for _ in range(args.rounds):
                for k, fn in fns.items():
                    times[k].append(time_batch(fn, (x,), args.calls))
            s = kiln.stats()
            rows.append((name, {k: statistics.median(v) for k, v in times.items()},
                         s["graphs_compiled"], s["eager_calls"]))
    cols = list(rows[0][1])
    print("| case | " + " | ".join(f"{c} µs" for c in cols) + " | graphs |")
    print("|---|" + "---|" * (len(cols) + 1))
    for name, t, graphs, eager in rows:
        print(f"| {name} | " + " | ".join(f"{t[c]:.1f}" for c in cols) +
              f" | {graphs} (eager calls {eager}) |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Training-step benchmark: one forward + backward (loss = mean(out^2),
gradients set to None before each step) of small models at 1 thread (and
2 with --threads 1,2), eager vs kiln's compiled backward vs kiln's eager
recompute backward (KILN_COMPILED_BACKWARD=0) vs, for models with
convolutions, kiln with its own conv-gradient decomposition
(kiln.config.dnnl_conv_grads off) vs torch.compile (inductor, with
--inductor). Timed interleaved in this process: rounds of `--steps`
steps per mode, the median per-step time over rounds. Peak memory (unless
--no-memory) of one step after warm-up, as tools/bench_memory.py counts it:
torch's allocations during the step (activations, saved tensors,
gradients, backward temporaries) and kiln's compiled intermediates (its
buffer pool's blocks, on the same profiler timeline), counted from zero at
the step's start. Sizes are small
(CPU, seconds per run); random init. Part of `make bench`; prints a
Markdown table (paste it into docs/performance.md's training section).
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time

_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "frontend", "python")
sys.path.insert(0, _PACKAGE)

import torch  # noqa: E402
from torch import nn  # noqa: E402

import kiln  # noqa: E402
from bench_memory import call_peak_bytes  # noqa: E402  (torch + kiln intermediates)


def mlp():
    layers = []
    for _ in range(4):
        layers += [nn.Linear(512, 512), nn.GELU()]
    return nn.Sequential(*layers, nn.LayerNorm(512), nn.Linear(512, 10)), torch.randn(64, 512)


def encoder_layer():
    layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.0,
                                       batch_first=True)
    return layer, torch.randn(8, 64, 256)


def resnet18():
    import torchvision  # noqa: PLC0415 (optional: only this row needs it)
    return torchvision.models.resnet18(num_classes=10), torch.randn(8, 3, 64, 64)


MODELS = {"MLP 4x512 (batch 64)": mlp,
          "TransformerEncoderLayer d256 (8x64 tokens)": encoder_layer,
          "resnet18 (8x3x64x64, BatchNorm train)": resnet18}


def step_fn(model, params=None):
    params = list(model.parameters()) if params is None else params

    def step(x):
        for p in params:
            p.grad = None
        loss = model(x).square().mean()
        loss.backward()
        return loss
    return step


def build_mode(name, model, x):
    """The step function of mode `name` on `model`, compiled (first step run)."""
    if name == "eager":
        return step_fn(model)
    if name == "kiln":
        fn = step_fn(kiln.compile(model))
    elif name == "kiln (eager backward)":
        # Instances of one class share an entry: the old path's graph is
        # rooted in its own function so that it is a separate one.
        with kiln.config.patch(compiled_backward=False):
            fn = step_fn(kiln.compile(lambda t: model(t)), list(model.parameters()))
            fn(x)  # compiled here, under the flag
    elif name == "kiln (decomposed conv grads)":
        # the conv gradients as kiln's own decomposition (before oneDNN's
        # backward primitives: kiln.config.dnnl_conv_grads)
        with kiln.config.patch(dnnl_conv_grads=False):
            fn = step_fn(kiln.compile(lambda t: model(t)), list(model.parameters()))
            fn(x)
    else:
        fn = step_fn(torch.compile(model))
    fn(x)
    return fn


def make_modes(build, inductor):
    model, x = build()
    model.train()
    names = ["eager", "kiln", "kiln (eager backward)"]
    if any(isinstance(m, nn.Conv2d) for m in model.modules()):
        names.append("kiln (decomposed conv grads)")
    names += ["torch.compile"] if inductor else []
    modes = {name: build_mode(name, copy.deepcopy(model), x) for name in names}
    for fn in modes.values():
        fn(x)  # warm up
    return modes, x


def bench(modes, x, rounds, steps):
    times = {name: [] for name in modes}
    for _ in range(rounds):
        for name, fn in modes.items():
            t0 = time.perf_counter()
            for _ in range(steps):
                fn(x)
            times[name].append((time.perf_counter() - t0) / steps)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", default="1", help="comma-separated thread counts: 1,2")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--inductor", action="store_true")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory column")
    ap.add_argument("--models", default="", help="comma-separated substrings of row labels")
    args = ap.parse_args()
    print("| model | threads | mode | ms/step | vs eager | peak MiB |")
    print("|---|---|---|---|---|---|")
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        for label, build in MODELS.items():
            if args.models and not any(k in label for k in args.models.split(",")):
                continue
            torch.manual_seed(0)
            modes, x = make_modes(build, args.inductor)
            med = bench(modes, x, args.rounds, args.steps)
            for name, t in med.items():
                mem = ("-" if args.no_memory else
                       f"{call_peak_bytes(lambda: modes[name](x)) / 2**20:.1f}")
                print(f"| {label} | {threads} | {name} | {t * 1e3:.2f} | "
                      f"{med['eager'] / t:.2f}x | {mem} |", flush=True)
    s = kiln.stats()
    print(f"\nkiln.stats(): compiled_backwards={s['compiled_backwards']} "
          f"eager_backwards={s['eager_backwards']} backward_calls={s['backward_calls']} "
          f"saved_activation_bytes={s.get('saved_activation_bytes')}")


if __name__ == "__main__":
    main()

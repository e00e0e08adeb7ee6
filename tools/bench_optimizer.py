#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Optimizer-step benchmark: one SGD (momentum 0.9, weight decay) or AdamW
step over the parameter lists of torchvision resnet18 (11.7 M parameters,
62 tensors) and BERT-base (HF BertModel, 109 M, 199 tensors; shapes read
from a meta-device model, no weights), eager ``foreach`` vs
``kiln.compile(opt.step)`` (kiln/_optim.py) vs ``torch.compile(opt.step)``
(inductor, with --inductor). Gradients are fixed random tensors shared by
the modes; each mode has its own parameters and state. Timed interleaved in
this process at 1 thread (``--threads``): rounds of ``--steps`` steps per
mode, the median per-step time over rounds, as the process's CPU time
(``time.process_time``: on a shared, loaded machine wall time mostly
measures waiting for a core; at 1 thread CPU time is the step's own cost). Random init. Part of
``make bench``; prints a Markdown table (docs/performance.md, "Optimizer
steps").
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "frontend", "python")
sys.path.insert(0, _PACKAGE)

import torch  # noqa: E402

import kiln  # noqa: E402


def resnet18_shapes():
    import torchvision  # noqa: PLC0415 (optional: only this row needs it)
    with torch.device("meta"):
        return [tuple(p.shape) for p in torchvision.models.resnet18().parameters()]


def bert_base_shapes():
    import transformers  # noqa: PLC0415 (optional: only this row needs it)
    with torch.device("meta"):
        model = transformers.BertModel(transformers.BertConfig())
    return [tuple(p.shape) for p in model.parameters()]


SHAPES = {"resnet18": resnet18_shapes, "BERT-base": bert_base_shapes}
OPTIMIZERS = {
    "SGD": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, weight_decay=1e-4, foreach=True),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=1e-2, foreach=True),
}


def make_mode(kind, shapes, grads, make_opt):
    """(step function, params) of one mode: its own parameters and state."""
    gen = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(s, generator=gen)) for s in shapes]
    for p, g in zip(params, grads):
        p.grad = g
    opt = make_opt(params)
    opt.step()  # state created eagerly, as on a first training step
    if kind == "kiln":
        return kiln.compile(opt.step), params
    if kind == "torch.compile":
        return torch.compile(opt.step), params
    return opt.step, params


def bench_row(shapes, make_opt, kinds, steps, rounds):
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(s, generator=gen) * 1e-2 for s in shapes]
    modes = {k: make_mode(k, shapes, grads, make_opt) for k in kinds}
    for step, _ in modes.values():  # compile + warm up
        for _ in range(2):
            step()
    times = {k: [] for k in kinds}
    for _ in range(rounds):
        for k, (step, _) in modes.items():
            t0 = time.process_time()
            for _ in range(steps):
                step()
            times[k].append((time.process_time() - t0) / steps * 1e3)
    ref = modes["eager foreach"][1]
    for k, (_, params) in modes.items():  # same updates: same parameters
        err = max((p - q).abs().max().item() for p, q in zip(params, ref))
        assert err < 1e-3, (k, err)
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--inductor", action="store_true", help="also time torch.compile(opt.step)")
    ap.add_argument("--only", default="", help="a parameter list name (resnet18, BERT-base)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    kinds = ["eager foreach", "kiln"] + (["torch.compile"] if args.inductor else [])
    print(f"| parameters | optimizer | {' | '.join(k + ' ms (CPU)' for k in kinds)} "
          f"| kiln vs eager |{' kiln vs torch.compile |' if args.inductor else ''}")
    print("|---" * (len(kinds) + 3 + args.inductor) + "|")
    for name, shapes_fn in SHAPES.items():
        if args.only and args.only != name:
            continue
        try:
            shapes = shapes_fn()
        except ImportError as e:
            print(f"| {name} | skipped: {e} |")
            continue
        for opt_name, make_opt in OPTIMIZERS.items():
            t = bench_row(shapes, make_opt, kinds, args.steps, args.rounds)
            cells = " | ".join(f"{t[k]:.2f}" for k in kinds)
            ratio = f" {t['eager foreach'] / t['kiln']:.2f}x |"
            if args.inductor:
                ratio += f" {t['torch.compile'] / t['kiln']:.2f}x |"
            print(f"| {name} ({len(shapes)} tensors, {sum(_numel(s) for s in shapes) / 1e6:.1f} M)"
                  f" | {opt_name} | {cells} |{ratio}", flush=True)
    return 0


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compile-time benchmark: the first call of `kiln.compile(model)` (capture,
kiln's passes, LLVM, loading; for training rows the compiled forward and
backward of one `model(x).sum().backward()` step) in a fresh process per
row with the disk cache off, as CPU seconds of the process and wall
seconds, then the steady per-call time (median CPU ms of 7 rounds of 3
calls). 1 thread for the calls; the compile may use a second thread (a
training graph's backward). Random init, fp32. Prints a Markdown table
(docs/performance.md, "Compile time").
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "frontend", "python")

# name: (what it builds, training step?)
ROWS = {
    "mobilenet_v2 training step, 64 px, batch 2": ("mobilenet_v2", True),
    "resnet18 training step, 64 px, batch 4": ("resnet18", True),
    "resnet50 inference, 224 px": ("resnet50", False),
    "mobilenet_v3_large inference, 224 px": ("mobilenet_v3_large", False),
    "12-layer encoder inference (d768, seq 128)": ("encoder", False),
}


def build(name: str, train: bool):
    import torch
    torch.manual_seed(0)
    if name == "encoder":
        layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
        return model.eval(), torch.randn(1, 128, 768)
    import torchvision
    if train:
        model = getattr(torchvision.models, name)(num_classes=10).train()
        return model, torch.randn(2 if name == "mobilenet_v2" else 4, 3, 64, 64)
    return getattr(torchvision.models, name)().eval(), torch.randn(1, 3, 224, 224)


def measure(name: str, train: bool) -> dict:
    """One row, in this process (run by main() in a fresh one)."""
    sys.path.insert(0, _PACKAGE)
    import torch
    import kiln
    torch.set_num_threads(1)
    model, x = build(name, train)
    compiled = kiln.compile(model)
    step = (lambda: compiled(x).sum().backward()) if train else (lambda: compiled(x))
    with torch.set_grad_enabled(train):
        cpu, wall = time.process_time(), time.perf_counter()
        step()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        rounds = []
        for _ in range(7):
            t = time.process_time()
            for _ in range(3):
                step()
            rounds.append((time.process_time() - t) / 3 * 1e3)
    stats = kiln.stats()
    return {"compile_cpu_s": cpu, "compile_wall_s": wall, "run_ms": statistics.median(rounds),
            "graphs": stats["graphs_compiled"], "eager_calls": stats["eager_calls"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="substring of the rows to run")
    parser.add_argument("--row", help=argparse.SUPPRESS)  # internal: one row, JSON out
    args = parser.parse_args()
    if args.row:
        print(json.dumps(measure(*ROWS[args.row])))
        return 0
    print("| graph | compile CPU s | compile wall s | run ms | graphs | eager calls |")
    print("|---|---|---|---|---|---|")
    env = dict(os.environ, KILN_CACHE_DIR="off")
    for row in ROWS:
        if args.only not in row:
            continue
        out = subprocess.run([sys.executable, __file__, "--row", row], env=env, check=True,
                             capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"| {row} | {r['compile_cpu_s']:.1f} | {r['compile_wall_s']:.1f} | "
              f"{r['run_ms']:.1f} | {r['graphs']} | {r['eager_calls']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

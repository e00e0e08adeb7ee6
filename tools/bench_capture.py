#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Capture time: kiln's C++ bytecode interpreter vs TorchDynamo.

For each model of `bench_models.capture_cases()` (the real models of the
capture issue: torchvision, timm, transformers, nn.TransformerEncoderLayer),
one fp32 inference call under torch.no_grad():

* kiln: `kiln.stats()["capture_time_us"]` after one call from an empty
  in-memory cache: the time the interpreter spent turning the frame(s) into
  kiln IR with their guards (no pass, no LLVM);
* Dynamo: `torch.compile(model, backend="eager")`, whose backend runs the FX
  graph as is, so its first call is Dynamo's trace + guard building + one
  eager run; the eager run (timed separately, median) is subtracted.

Each is the median over `--repeats` fresh captures (kiln.reset() /
torch._dynamo.reset() between them). Graph and break counts are shown so
that a capture that stopped early is not mistaken for a fast one.
`python tools/bench_capture.py` prints the table; tools/bench.py includes
it in docs/performance.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

import kiln

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import capture_cases  # noqa: E402


def kiln_capture(model, inputs) -> tuple[float, int, int]:
    """(capture seconds, graphs, breaks) of one call from an empty cache."""
    kiln.reset()
    compiled = kiln.compile(model)
    compiled(*inputs)
    s = kiln.stats()
    return s["capture_time_us"] / 1e6, s["graphs_compiled"], s["graph_breaks"]


def dynamo_capture(model, inputs, eager_s: float) -> tuple[float, int, int]:
    """(trace seconds, graphs, breaks) of Dynamo with the eager backend."""
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model, backend="eager")
    t0 = time.perf_counter()
    compiled(*inputs)
    seconds = time.perf_counter() - t0 - eager_s
    graphs = int(counters["stats"]["unique_graphs"])
    breaks = int(sum(counters["graph_break"].values()))
    return max(seconds, 0.0), graphs, breaks


def eager_seconds(model, inputs, n: int = 5) -> float:
    model(*inputs)
    xs = []
    for _ in range(n):
        t0 = time.perf_counter()
        model(*inputs)
        xs.append(time.perf_counter() - t0)
    return statistics.median(xs)


def measure(repeats: int = 3, only: str = "") -> list[dict]:
    rows = []
    torch.set_num_threads(1)
    # Dynamo's one-time imports and set-up are in no row.
    torch.compile(lambda t: t + 1, backend="eager")(torch.randn(2))
    with torch.no_grad():
        for case in capture_cases():
            if only and only not in case.name:
                continue
            torch.manual_seed(0)
            row = {"name": case.name}
            try:
                model = case.make().eval()
                inputs = case.inputs(1)
                eager_s = eager_seconds(model, inputs)
                k = [kiln_capture(model, inputs) for _ in range(repeats)]
                d = [dynamo_capture(model, inputs, eager_s) for _ in range(repeats)]
                row.update(kiln_s=statistics.median(x[0] for x in k), kiln_graphs=k[-1][1],
                           kiln_breaks=k[-1][2], dynamo_s=statistics.median(x[0] for x in d),
                           dynamo_graphs=d[-1][1], dynamo_breaks=d[-1][2])
            except Exception as e:  # noqa: BLE001 - reported in the table
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
            rows.append(row)
            print(row, flush=True)
    kiln.reset()
    torch._dynamo.reset()
    return rows


def table(rows: list[dict]) -> list[str]:
    out = ["| model | kiln capture ms | graphs / breaks | Dynamo trace ms | graphs / breaks "
           "| kiln faster by |", "|---|---|---|---|---|---|"]
    ratios = []
    for r in rows:
        if "error" in r:
            out.append(f"| {r['name']} | error: {r['error']} | | | | |")
            continue
        ratio = r["dynamo_s"] / r["kiln_s"] if r["kiln_s"] > 0 else float("nan")
        complete = r["kiln_breaks"] == 0 and r["kiln_graphs"] == 1
        if complete:
            ratios.append(ratio)
        out.append(f"| {r['name']} | {r['kiln_s'] * 1e3:.1f} | {r['kiln_graphs']} / "
                   f"{r['kiln_breaks']} | {r['dynamo_s'] * 1e3:.1f} | {r['dynamo_graphs']} / "
                   f"{r['dynamo_breaks']} | {ratio:.1f}x{'' if complete else ' (partial capture)'} |")
    if ratios:
        geo = statistics.geometric_mean(ratios)
        out += ["", f"Geomean over the {len(ratios)} model{'s' * (len(ratios) > 1)} kiln captured as one graph "
                f"without breaks: kiln's capture is **{geo:.1f}x** faster than Dynamo's trace."]
    return out


def section(rows: list[dict], repeats: int) -> list[str]:
    return ["### Capture time: kiln's interpreter vs Dynamo (1 thread, batch 1)", "",
            "kiln: `capture_time_us` of one call from an empty cache (bytecode → kiln IR and "
            "guards; no pass, no LLVM). Dynamo: first call of `torch.compile(model, "
            "backend=\"eager\")` minus one eager call (trace → FX graph and guards; the eager "
            f"backend compiles nothing). Median of {repeats} fresh captures each.", ""] + \
        table(rows) + [""]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", default="", help="substring of model names")
    args = p.parse_args(argv)
    print("\n".join(section(measure(args.repeats, args.only), args.repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

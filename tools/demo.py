#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kiln demo: compile the models users run, check them against eager, time both.

Run with `make demo` (about a minute on a 2-core machine with a warm disk
cache; the first run compiles each model once, a few seconds each, with a
progress line). Each model — torchvision CNNs at 224 px, HF BERT-base and
GPT-2 at sequence 128 (random init, fp32, batch 1, eval, no_grad), and a
small MLP where per-call overhead dominates — is compiled with
kiln.compile, its output compared with eager PyTorch, what kiln ran itself
counted (graphs, graph breaks, ops run through torch, frames run eagerly:
a row that leaned on eager says so), and eager and kiln are timed
interleaved in this process (median of rounds) at torch's thread count.
Models come from tools/bench_models.py (the rows of `make bench`'s real
sizes table, where torch.compile is timed too).
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import MLP, Case, real_cases  # noqa: E402

import torch  # noqa: E402

import kiln  # noqa: E402

# The rows: a CNN and the two transformers of the real sizes table, a
# depthwise CNN, and a small MLP (per-call overhead).
ROWS = ("resnet50", "efficientnet_b0", "BERT-base", "GPT-2")


def cases() -> list[Case]:
    real = [c for c in real_cases()
            if c.batch == 1 and c.name.split(",")[0].split(" ")[0] in ROWS]
    return real + [Case("MLP 256-512-512-10, batch 1", MLP, lambda b: (torch.randn(b, 256),))]


class Progress:
    """Prints `compiling <name>: N s` while a first call takes more than a
    second (the compile releases the GIL, so this thread keeps time)."""

    def __init__(self, name: str):
        self.name, self.done = name, threading.Event()
        self.tty = sys.stdout.isatty()
        self.shown = False

    def __enter__(self):
        self.t0 = time.perf_counter()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self):
        if self.done.wait(1.0):
            return
        while True:
            s = time.perf_counter() - self.t0
            if self.tty:
                print(f"\r  compiling {self.name}: {s:4.0f} s", end="", flush=True)
            elif not self.shown:
                print(f"  compiling {self.name} (first call: capture + code generation) ...",
                      flush=True)
            self.shown = True
            if self.done.wait(0.5):
                return

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self.seconds = time.perf_counter() - self.t0
        if self.shown and self.tty:
            print("\r" + " " * 60 + "\r", end="", flush=True)


def timed_rounds(fns, args, rounds: int, round_s: float) -> list[float]:
    """Median seconds per call of each fn, interleaved round by round so
    that machine noise hits all alike."""
    calls = []
    for fn in fns:  # calls per round from one timed call
        t0 = time.perf_counter()
        fn(*args)
        calls.append(max(1, int(round_s / max(time.perf_counter() - t0, 1e-6))))
    samples = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(calls[i]):
                fn(*args)
            samples[i].append((time.perf_counter() - t0) / calls[i])
    return [statistics.median(s) for s in samples]


def run_case(case: Case, rounds: int, round_s: float) -> tuple[bool, float]:
    torch.manual_seed(0)
    model = case.make().eval()
    args = case.inputs(1)
    kiln.reset()
    compiled = kiln.compile(model)
    with torch.no_grad():
        with Progress(case.name) as p:
            out = compiled(*args)
        ref = model(*args)
        err = (out - ref).abs().max().item()
        ok = err <= 1e-3 * ref.abs().max().item() + 1e-4
        s = kiln.stats()
        own = (s["graphs_compiled"] >= 1 and s["graph_breaks"] == 0 and s["eager_calls"] == 0
               and s["fallback_ops"] == 0)
        e_s, k_s = timed_rounds([model, compiled], args, rounds, round_s)
    counts = f"{s['graphs_compiled']}/{s['graph_breaks']}/{s['fallback_ops']}/{s['eager_calls']}"
    check = "ok" if ok and own else ("FAIL" if not ok else "eager")
    print(f"{case.name:<30} {check:<5} {err:9.1e} {counts:>9} {e_s * 1e3:9.2f} {k_s * 1e3:9.2f} "
          f"{e_s / k_s:7.2f}x {p.seconds:8.1f}", flush=True)
    return ok and own, e_s / k_s


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="regex: the rows whose name matches")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per model")
    parser.add_argument("--round-s", type=float, default=0.4, help="seconds per round and model")
    args = parser.parse_args(argv)
    rows = [c for c in cases() if re.search(args.only, c.name)]
    print(f"kiln {kiln.__version__}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s), fp32, batch 1")
    print(f"{'model':<30} {'check':<5} {'max|err|':>9} {'g/b/f/e':>9} {'eager ms':>9} "
          f"{'kiln ms':>9} {'speedup':>8} {'1st call s':>8}")
    t0 = time.perf_counter()
    results = [run_case(c, args.rounds, args.round_s) for c in rows]
    geo = statistics.geometric_mean([r for _, r in results]) if results else 0.0
    print(f"geomean speedup over eager: {geo:.2f}x ({time.perf_counter() - t0:.0f} s)")
    print("g/b/f/e: graphs compiled / graph breaks / ops run through torch / frames run "
          "eagerly; 1st call: compile + run (a warm disk cache makes it fast); "
          "torch.compile side by side: `make bench` (docs/performance.md)")
    return 0 if all(ok for ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0
"""Int and float arguments that change on every call (a step counter, a
learning rate, a number read with .item() before a graph break): kiln with
automatic dynamic numbers on and off, torch.compile (default: automatic
dynamic shapes) and eager, side by side in one process.

For each case: wall time of the first N calls (compiles included), graphs
compiled and eager frames (kiln.stats()), and the steady per-call time
over later values (CPU time of the calling thread, median of rounds).

    python tools/bench_dynamic_numbers.py [--calls 50] [--rounds 5]
"""
import argparse
import statistics
import time
import warnings

import torch

import kiln


def step_counter(x, step):
    return (x * 0.9 + step).relu() * 2


def lr_update(p, g, lr):
    return p - lr * g


def item_across_break(x):
    s = x.sum().item()
    print(end="")
    return x * s


def cases(size):
    x = torch.randn(size, 256)
    g = torch.randn(size, 256)
    return [
        ("int step counter", step_counter, lambda i: (x, i)),
        ("float learning rate", lr_update, lambda i: (x, g, 0.1 * 0.97 ** i)),
        (".item() float across a break", item_across_break,
         lambda i: (x + i * 1e-3,)),
    ]


def timed_calls(fn, make, values):
    t0 = time.perf_counter()
    for v in values:
        fn(*make(v))
    return time.perf_counter() - t0


def per_call_us(fn, make, values, rounds):
    samples = []
    for _ in range(rounds):
        t0 = time.thread_time()
        for v in values:
            fn(*make(v))
        samples.append((time.thread_time() - t0) / len(values) * 1e6)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    first = range(args.calls)
    later = range(1000, 1200)
    print(f"{args.size}x256 float32, 1 thread; first {args.calls} calls, then 200 later values")
    print("| case | mode | first calls ms | graphs | eager frames | later µs/call | vs eager |")
    print("|---|---|---|---|---|---|---|")
    for name, fn, make in cases(args.size):
        eager_us = per_call_us(fn, make, later, args.rounds)
        rows = []
        rows_off = "kiln (automatic_dynamic_numbers=False)"
        for mode in ("kiln", rows_off, "torch.compile"):
            kiln.reset()
            torch._dynamo.reset()
            with kiln.config.patch(automatic_dynamic_numbers=mode != rows_off):
                cf = torch.compile(fn) if mode == "torch.compile" else kiln.compile(fn)
                ms = timed_calls(cf, make, first) * 1e3
                us = per_call_us(cf, make, later, args.rounds)
                s = kiln.stats()
            graphs, eager = ((s["graphs_compiled"], s["eager_calls"]) if mode != "torch.compile"
                             else ("–", "–"))
            rows.append(f"| {name} | {mode} | {ms:.0f} | {graphs} | {eager} | {us:.1f} | "
                        f"{eager_us / us:.2f}x |")
        rows.append(f"| {name} | eager | – | – | – | {eager_us:.1f} | 1.00x |")
        print("\n".join(rows))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs kiln's ahead-of-time CUDA graphs on a GPU: correctness and timing.

For tools/gpu-check.sh on a GPU machine without LLVM/MLIR: loads the
artifact tools/cuda_artifact.py built (emitted graphs + cubins), runs each
graph through libkiln_cuda ($KILN_CUDA_RUNTIME) on torch's current stream
with both executors — the whole plan in one C call (kernels + cuBLASLt
GEMMs, kiln/cuda/plan.py) and its CUDA graph (mode "reduce-overhead":
warm-up, capture, replays, a replay with a fresh input tensor) — compares
each with eager PyTorch, and times eager, torch.compile (default and
reduce-overhead) and kiln (both modes) per call (median of batches, CUDA
synchronized). kiln's Python package is imported without its MLIR
extension (only kiln.cuda is needed). Exit status 1 on any mismatch.

--emulate is the CPU rehearsal (no GPU): CPU tensors, the fake driver and
cuBLASLt of test/python/cuda_fake and each module's kernels compiled for
the host (test/python/cuda_host.py) run the same executors; use it with a
--small artifact (tools/cuda_artifact.py --small). No timings then.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))
# kiln/__init__ imports the MLIR extension; kiln.cuda does not need it.
_pkg = types.ModuleType("kiln")
_pkg.__path__ = [os.path.join(ROOT, "frontend", "python", "kiln")]
sys.modules.setdefault("kiln", _pkg)

import torch  # noqa: E402

import kiln.cuda  # noqa: E402
from kiln.cuda import artifact  # noqa: E402
from kiln.cuda.graph import CudaGraph  # noqa: E402
from cuda_cases import TOLERANCES, base_case, make_inputs  # noqa: E402


def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def per_call_ms(fn, inputs, iters, repeats=5):
    """Median over `repeats` batches of `iters` calls, in ms per call."""
    times = []
    for _ in range(repeats):
        _sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*inputs)
        _sync()
        times.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(times)


class Runner:
    """Calls a CudaGraph on the GPU, or on the CPU through the fake driver."""

    def __init__(self, entry, mode, emulate):
        self.g = CudaGraph(entry["emitted"], entry.get("function", "forward"), entry["images"],
                           mode=mode)
        self.emulate = emulate

    def __call__(self, *inputs):
        if self.emulate:
            self.g.specialize(inputs)._check_inputs(inputs)  # a `?` graph: its plan's sizes
            return self.g.run_on(inputs, inputs[0].device, 0, 0)
        return self.g(*inputs)

    def describe(self):
        # A `?` graph runs through its plans per sizes (CudaGraph.specialize).
        graphs = [self.g, *self.g._specialized.values()]
        ex = next((e for g in graphs for e in g._executors.values()), None)
        d = {"executor": self.g.executor}
        if self.g.symbols:
            d["plans"] = len(self.g._specialized)  # one per distinct sizes
        if self.g.fallback_reason:
            d["fallback"] = self.g.fallback_reason
        if ex is not None and hasattr(ex, "replays"):
            d.update(replays=ex.replays, plain_runs=ex.plain_runs, graphs=len(ex.graphs))
            if ex.capture_error:
                d["capture_error"] = ex.capture_error
        return d


def check(fn, runner, inputs, dtype):
    """Plain: one call. reduce-overhead: warm-up, capture, replay, then a
    replay with a fresh copy of input 0 (the copied-input path) and one
    after an in-place change of the last input (the captured-address path)."""
    rtol, atol = TOLERANCES[dtype]
    calls = 1 if runner.g.mode == "default" else 3
    for _ in range(calls):
        (got,) = runner(*inputs)
        torch.testing.assert_close(got, fn(*inputs), rtol=rtol, atol=atol)
    if runner.g.mode == "default":
        return
    fresh = list(inputs)
    fresh[0] = inputs[0] * 0.5
    (got,) = runner(*fresh)
    torch.testing.assert_close(got, fn(*fresh), rtol=rtol, atol=atol)
    inputs[-1].mul_(0.75)
    (got,) = runner(*inputs)
    torch.testing.assert_close(got, fn(*inputs), rtol=rtol, atol=atol)


def time_row(row, fn, runners, inputs, args, spent):
    """eager / torch.compile (default, reduce-overhead) / kiln (both modes)."""
    row["eager_ms"] = per_call_ms(fn, inputs, args.iters)
    for mode, r in runners.items():
        row[f"kiln_{mode}_ms"] = per_call_ms(r, inputs, args.iters)
    for mode in ("default", "reduce-overhead"):
        if args.no_compile or spent[mode] >= args.compile_budget_s:
            continue
        t0 = time.perf_counter()
        try:
            torch._dynamo.reset()
            compiled = torch.compile(fn, mode=mode)
            for _ in range(3):  # reduce-overhead records its graph on a later call
                compiled(*inputs)
            _sync()
            took = time.perf_counter() - t0
            row[f"inductor_{mode}_compile_s"] = took
            row[f"inductor_{mode}_ms"] = per_call_ms(compiled, inputs, args.iters)
        except Exception as e:  # noqa: BLE001 - a torch.compile failure is a result too
            took = time.perf_counter() - t0
            row[f"inductor_{mode}_error"] = f"{type(e).__name__}: {e}"[:500]
        spent[mode] += took


def run_entry(name, entry, args, spent):
    case, dtype = name.split("/")
    fn = base_case(case)[0]
    small = entry["meta"].get("small", False)
    # A dynamic (`?`) graph is checked at each of its sizes, timed at the last.
    sizes = entry["meta"].get("sizes", [None])
    device = "cpu" if args.emulate else "cuda"
    row = {"graph": name, **entry["meta"]}
    if args.emulate:
        import cuda_host
        folder = tempfile.mkdtemp(prefix="kiln-emulate-")
        os.environ["KILN_FAKE_CUDA_HOST_LIB"] = cuda_host.build_host_library(entry["emitted"],
                                                                             folder)
    runners = {}
    try:
        with torch.no_grad():
            for mode in ("default", "reduce-overhead"):
                runners[mode] = Runner(entry, mode, args.emulate)
                for size in sizes:
                    check(fn, runners[mode],
                          make_inputs(case, dtype, device, small=small, size=size), dtype)
        if device == "cuda":
            torch.cuda.synchronize()
        row["ok"] = True
    except Exception as e:  # noqa: BLE001 - report every graph
        row["ok"], row["error"] = False, f"{type(e).__name__}: {e}"
    for mode, r in runners.items():
        row[f"kiln_{mode}"] = r.describe()
    if row["ok"] and (not args.emulate or args.time_emulated):
        try:
            with torch.no_grad():
                time_row(row, fn, runners,
                         make_inputs(case, dtype, device, small=small, size=sizes[-1]), args,
                         spent)
        except Exception as e:  # noqa: BLE001 - keep the correctness result
            row["timing_error"] = f"{type(e).__name__}: {e}"[:500]
    return row


def summary_line(row):
    if not row["ok"]:
        return f"FAIL {row['graph']}: {row['error']}"
    if "eager_ms" not in row:
        return f"ok   {row['graph']:24s} {row['kiln_reduce-overhead']}"
    cells = [f"eager {row['eager_ms'] * 1e3:7.1f}"]
    for k in ("inductor_default", "inductor_reduce-overhead", "kiln_default",
              "kiln_reduce-overhead"):
        if f"{k}_ms" in row:
            cells.append(f"{k} {row[f'{k}_ms'] * 1e3:7.1f}")
    return f"ok   {row['graph']:24s} µs: " + "  ".join(cells)


def geomeans(rows):
    out = {}
    ok = [r for r in rows if r.get("ok") and "eager_ms" in r]
    for k in ("kiln_default", "kiln_reduce-overhead", "inductor_default",
              "inductor_reduce-overhead"):
        vals = [r["eager_ms"] / r[f"{k}_ms"] for r in ok if f"{k}_ms" in r]
        if vals:
            out[k] = statistics.geometric_mean(vals)
    return out


def setup(args):
    if args.emulate:
        import cuda_host  # noqa: F401 - checked here: the rehearsal needs a C++ compiler
        os.environ["KILN_CUDA_DRIVER"] = os.environ["KILN_CUBLASLT"] = args.fake_driver
        kiln.cuda.init()
        return "cpu (emulated: fake driver + host kernels)"
    if not torch.cuda.is_available():
        sys.exit("gpu_check: torch sees no CUDA device")
    kiln.cuda.init()
    dev = torch.cuda.get_device_name()
    print(f"device: {dev}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"driver {kiln.cuda._driver.driver_version()}, "
          f"SMs {kiln.cuda._driver.sm_count(torch.cuda.current_device())}, "
          f"TF32 {torch.backends.cuda.matmul.allow_tf32}")
    return dev


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--artifact", default=os.path.join(ROOT, "build", "gpu-check",
                                                      "cases.json.gz"))
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--compile-budget-s", type=float, default=60,
                   help="per torch.compile mode: stop timing it once its compiles took this long")
    p.add_argument("--emulate", action="store_true", help="CPU rehearsal (see above)")
    p.add_argument("--fake-driver", help="--emulate: the fake libcuda + cuBLASLt library")
    p.add_argument("--time-emulated", action="store_true",
                   help="--emulate: run the timing code too (CPU numbers, meaningless; a "
                        "rehearsal of the code path)")
    p.add_argument("--only", help="comma-separated graph names (case/dtype)")
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args()
    dev = setup(args)
    entries = artifact.load(args.artifact)
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": dev, "torch": torch.__version__, "rows": []}
    spent = {"default": 0.0, "reduce-overhead": 0.0}
    for name, entry in entries.items():
        if args.only and name not in args.only.split(","):
            continue
        row = run_entry(name, entry, args, spent)
        result["rows"].append(row)
        print(summary_line(row), flush=True)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
    rows = result["rows"]
    ok = sum(1 for r in rows if r["ok"])
    result["geomean_vs_eager"] = geomeans(rows)
    print(f"{ok}/{len(rows)} graphs match eager (both kiln modes); geomean speedup over eager: "
          + ", ".join(f"{k} {v:.2f}x" for k, v in result["geomean_vs_eager"].items()))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    sys.exit(0 if ok == len(rows) and rows else 1)


if __name__ == "__main__":
    main()

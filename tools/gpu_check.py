#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs kiln's ahead-of-time CUDA graphs on a GPU: correctness and timing.

For tools/gpu-check.sh on a GPU machine without LLVM/MLIR: loads the
artifact tools/cuda_artifact.py built (emitted graphs + cubins), runs each
graph through libkiln_cuda ($KILN_CUDA_RUNTIME) on torch's current stream,
compares with eager PyTorch on the same inputs, and times eager,
torch.compile (Inductor) and kiln per call (median of batches, CUDA
synchronized). kiln's Python package is imported without its MLIR
extension (only kiln.cuda is needed). Exit status 1 on any mismatch.
"""
import argparse
import json
import os
import statistics
import sys
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
from cuda_cases import CASES, TOLERANCES, make_inputs  # noqa: E402


def per_call_ms(fn, inputs, iters, repeats=5):
    """Median over `repeats` batches of `iters` calls, in ms per call."""
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*inputs)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--artifact", default=os.path.join(ROOT, "build", "gpu-check",
                                                      "cases.json.gz"))
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--compile-budget-s", type=float, default=60,
                   help="stop timing torch.compile once its compiles took this long")
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_check: torch sees no CUDA device")
    kiln.cuda.init()
    dev = torch.cuda.get_device_name()
    print(f"device: {dev}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"driver {kiln.cuda._driver.driver_version()}, "
          f"SMs {kiln.cuda._driver.sm_count(torch.cuda.current_device())}")
    entries = artifact.load(args.artifact)
    rows, failures, compile_spent = [], 0, 0.0
    for name, entry in entries.items():
        case, dtype = name.split("/")
        fn = CASES[case][0]
        inputs = make_inputs(case, dtype, device="cuda")
        row = {"graph": name, **entry["meta"]}
        try:
            g = artifact.graph(entry)
            with torch.no_grad():
                (got,) = g(*inputs)
                expected = fn(*inputs)
            torch.cuda.synchronize()
            rtol, atol = TOLERANCES[dtype]
            torch.testing.assert_close(got, expected, rtol=rtol, atol=atol)
            row["ok"] = True
        except Exception as e:  # noqa: BLE001 - report every graph
            row["ok"], row["error"] = False, f"{type(e).__name__}: {e}"
            failures += 1
            rows.append(row)
            print(f"FAIL {name}: {row['error']}")
            continue
        with torch.no_grad():
            row["eager_ms"] = per_call_ms(fn, inputs, args.iters)
            row["kiln_ms"] = per_call_ms(g, inputs, args.iters)
            if not args.no_compile and compile_spent < args.compile_budget_s:
                t0 = time.perf_counter()
                compiled = torch.compile(fn)
                compiled(*inputs)
                torch.cuda.synchronize()
                row["compile_s"] = time.perf_counter() - t0
                compile_spent += row["compile_s"]
                row["inductor_ms"] = per_call_ms(compiled, inputs, args.iters)
        rows.append(row)
        ind = f"{row['inductor_ms']:.4f}" if "inductor_ms" in row else "-"
        print(f"ok   {name:24s} eager {row['eager_ms']:.4f} ms  inductor {ind} ms  "
              f"kiln {row['kiln_ms']:.4f} ms  (kiln {row['eager_ms'] / row['kiln_ms']:.2f}x eager)")
    ok = [r for r in rows if r.get("ok")]
    if ok:
        geo = statistics.geometric_mean([r["eager_ms"] / r["kiln_ms"] for r in ok])
        print(f"{len(ok)}/{len(rows)} graphs match eager; kiln geomean {geo:.2f}x eager")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"device": dev, "torch": torch.__version__, "rows": rows}, f, indent=1)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Exported CUDA artifacts (kiln.export target="cuda:...") for the GPU check.

--build DIR (here: kiln's MLIR extension + NVRTC, no GPU): exports the MLP
and the BERT block of test/python/export_models.py (random init, small;
BERT with separate q/k/v projections: the CUDA emitter has no slices yet)
with target ["cpu", "cuda:sm_80,sm_90"], and saves each model's input and
eager output next to it (<name>.kiln, <name>.pt).

--run DIR (the GPU machine; imports only torch and kiln_runtime, whose
libkiln_runtime.so comes from $KILN_RUNTIME_LIB or the source tree):
loads each artifact on "cuda", runs it on CUDA tensors and on CPU tensors,
compares with the saved eager output (fp32: 1e-3) and times a call (CUDA
synchronized, median of batches) against the artifact's own CPU build.
Results as JSON (date, device) with --out. Exit status 1 on a mismatch.

--emulate (with --run, no GPU): the fake driver + cuBLASLt
(--fake-driver) and each artifact's kernels compiled for the host
(test/python/cuda_host.py, from the artifact's program section: needs
kiln's extension), CPU tensors only: the rehearsal of --run.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "frontend", "python"), os.path.join(ROOT, "test", "python")]

import torch  # noqa: E402


def build(out_dir):
    import kiln
    from export_models import BertBlock, mlp
    os.makedirs(out_dir, exist_ok=True)
    models = {"mlp": (mlp, (8, 64)), "bert_block": (lambda: BertBlock(fused_qkv=False),
                                                    (2, 16, 64))}
    for name, (make, shape) in models.items():
        torch.manual_seed(0)
        model, x = make().eval(), torch.randn(shape)
        kiln.export(model, (x,), os.path.join(out_dir, f"{name}.kiln"),
                    target=["cpu", "cuda:sm_80,sm_90"])
        with torch.no_grad():
            torch.save({"inputs": (x,), "expected": model(x)}, os.path.join(out_dir, f"{name}.pt"))
        print(f"exported {name}")


def per_call_ms(fn, args, iters=50, repeats=5):
    times = []
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*args)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(times)


def _host_kernels(path, folder):
    """--emulate: the host library of the artifact's kernels (needs kiln._C)."""
    import kiln.cuda
    from cuda_host import build_host_library
    from kiln import _artifact_file
    data = open(path, "rb").read()
    off, size = _artifact_file.sections(data)["program"]
    # The same emission as kiln.export (_export_cuda.py): the same kernels.
    return build_host_library(kiln.cuda.emit(data[off:off + size].decode(),
                                             collect_unsupported=True), folder)


def run_one(path, io, emulate):
    import kiln_runtime
    case = torch.load(io)
    inputs, want = case["inputs"], case["expected"]
    row = {"artifact": os.path.basename(path)}
    model = kiln_runtime.load(path, "cuda")
    variants = {"host tensors": inputs}
    if not emulate:
        variants["cuda tensors"] = tuple(t.cuda() for t in inputs)
    ok = True
    for label, args in variants.items():
        got = model(*args).cpu()
        err = (got - want).abs().max().item()
        row[f"max_err ({label})"] = err
        ok = ok and err <= 1e-3 * max(1.0, want.abs().max().item())
    if not emulate:
        row["kiln cuda ms"] = per_call_ms(model, variants["cuda tensors"])
        row["kiln cpu ms"] = per_call_ms(kiln_runtime.load(path), inputs)
    row["ok"] = ok
    return row


def run(dir_, args):
    rows = []
    for name in sorted(f[:-5] for f in os.listdir(dir_) if f.endswith(".kiln")):
        path = os.path.join(dir_, name + ".kiln")
        if args.emulate:  # one process per artifact: its own host kernels
            with tempfile.TemporaryDirectory(prefix="kiln-host-kernels-") as tmp:
                env = {**os.environ, "KILN_CUDA_DRIVER": args.fake_driver,
                       "KILN_CUBLASLT": args.fake_driver,
                       "KILN_FAKE_CUDA_HOST_LIB": _host_kernels(path, tmp)}
                r = subprocess.run([sys.executable, __file__, "--one", path], env=env,
                                   capture_output=True, text=True, check=False)
            row = json.loads(r.stdout) if r.returncode == 0 else {
                "artifact": name, "ok": False, "error": r.stderr[-2000:]}
        else:
            row = run_one(path, os.path.join(dir_, name + ".pt"), False)
        rows.append(row)
        print(json.dumps(row), flush=True)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "emulated (CPU)"
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": device, "rows": rows}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return all(r["ok"] for r in rows)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", metavar="DIR")
    p.add_argument("--run", metavar="DIR")
    p.add_argument("--emulate", action="store_true")
    p.add_argument("--fake-driver")
    p.add_argument("--out")
    p.add_argument("--one", help=argparse.SUPPRESS)  # --emulate's child
    args = p.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.one[:-5] + ".pt", True)))
        return
    if args.build:
        build(args.build)
    if args.run and not run(args.run, args):
        sys.exit(1)


if __name__ == "__main__":
    main()

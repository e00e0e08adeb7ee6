#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Whole models as exported CUDA artifacts for the GPU check (issue 21).

--build DIR (here: kiln's MLIR extension + NVRTC, no GPU): resnet50,
ViT-B/16, BERT-base and GPT-2 of tools/gpu_models.py (real sizes; --small
for the rehearsal's) in fp32 and bf16, exported with kiln.export
target="cuda:sm_80,sm_90" (the model's first output: HF models' last
hidden state). Weights make an artifact hundreds of MB, more than the GPU
machine can be sent: each model weight is zeroed and the artifact gzipped
(<model>-<dtype>.kiln.gz, a few MB of cubins, PTX and plan); build.json
lists what was exported and why a model was not.

--run DIR (the GPU machine: torch, torchvision, transformers and
kiln_runtime, no kiln._C): builds each model there (random init), writes
its weights into the artifact by name (kiln._artifact_file.rewrite_weights:
no weight is left zero, the CRCs are updated), loads it with
kiln_runtime on "cuda", compares with eager on the same weights (fp32:
1e-3 of the output's largest magnitude, TF32 off as torch's default;
bf16: 5e-2) and times kiln, eager, torch.compile default and max-autotune
(CUDA synchronized, median of batches). torch.compile compiles (bf16
rows first, both modes, then fp32) stop once they took --budget-s
together (rows say "not run"); every row is
written to --out (JSON with date, device, torch version) as soon as it is
done, so a run killed by the caller's timeout keeps what it measured.
Exit status 1 on a mismatch or an error.

--emulate (with --run, no GPU): the fake driver + cuBLASLt
(--fake-driver) and each artifact's kernels compiled for the host
(test/python/cuda_host.py: needs kiln's extension); CPU tensors; no
torch.compile rows. The rehearsal of --run (use --small sizes).
"""
import argparse
import datetime
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "frontend", "python"), os.path.join(ROOT, "test", "python"),
                os.path.join(ROOT, "tools")]

import torch  # noqa: E402

import gpu_models  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
TOLERANCE = {"fp32": 1e-3, "bf16": 5e-2}
TORCH_MODES = ("default", "max-autotune")


def _artifact_file():
    """kiln/_artifact_file.py without importing kiln (no kiln._C there)."""
    path = os.path.join(ROOT, "frontend", "python", "kiln", "_artifact_file.py")
    spec = importlib.util.spec_from_file_location("kiln_artifact_file", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Head(torch.nn.Module):
    """The model's first output (HF models return a ModelOutput)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        out = self.model(x)
        return out if isinstance(out, torch.Tensor) else out[0]


def make(name, dtype, small, device):
    """(Head model, inputs) of gpu_models' row `name`, random init."""
    build, inputs = gpu_models.models(small)[name]
    torch.manual_seed(0)
    model = Head(build()).eval().to(device=device, dtype=DTYPES[dtype])
    return model, inputs(device, DTYPES[dtype])


def _named(model):
    named = dict(model.named_parameters(remove_duplicate=False))
    named.update(model.named_buffers(remove_duplicate=False))
    return named


def build(out_dir, names, dtypes, small):
    import kiln
    af = _artifact_file()
    os.makedirs(out_dir, exist_ok=True)
    report = {"small": small, "models": {}}
    previous = os.path.join(out_dir, "build.json")
    if os.path.exists(previous):  # --only adds models to an earlier build of the same sizes
        with open(previous, encoding="utf-8") as f:
            old = json.load(f)
        if old.get("small") == small:
            report = old
    for name in names:
        for dt in dtypes:
            key, t0 = f"{name}-{dt}", time.perf_counter()
            try:
                model, inputs = make(name, dt, small, "cpu")
                path = os.path.join(out_dir, key + ".kiln")
                with torch.no_grad():
                    kiln.export(model, inputs, path, target="cuda:sm_80,sm_90")
                named = _named(model)
                data = bytearray(open(path, "rb").read())
                zeroed = af.rewrite_weights(
                    data, lambda n, _dt, _shape: bytes(named[n].nbytes) if n in named else None)
                with gzip.open(path + ".gz", "wb", compresslevel=1) as f:
                    f.write(data)
                os.remove(path)
                report["models"][key] = {"ok": True, "weights": len(zeroed),
                                         "bytes": len(data),
                                         "gz_bytes": os.path.getsize(path + ".gz"),
                                         "export_s": round(time.perf_counter() - t0, 1)}
            except Exception as e:  # noqa: BLE001 - report every model
                report["models"][key] = {"ok": False, "error": f"{type(e).__name__}: {e}"[:2000]}
            print(key, json.dumps(report["models"][key]), flush=True)
            with open(os.path.join(out_dir, "build.json"), "w", encoding="utf-8") as f:
                json.dump(report, f, indent=1)  # after each model: a partial build is usable


def filled_artifact(gz_path, model, folder):
    """The artifact of `gz_path` with `model`'s weights written in; its path."""
    af = _artifact_file()
    named = _named(model)
    data = bytearray(gzip.open(gz_path, "rb").read())

    def fill(name, dtype, shape):
        t = named.get(name)
        if t is None:
            return None
        if list(t.shape) != list(shape) or af._ST_DTYPES[str(t.dtype)[6:]] != dtype:
            raise ValueError(f"weight {name}: the artifact has {dtype} {shape}, the model "
                             f"{t.dtype} {list(t.shape)}")
        return af._tensor_bytes(t.cpu())
    done = af.rewrite_weights(data, fill)
    path = os.path.join(folder, os.path.basename(gz_path)[:-3])
    with open(path, "wb") as f:
        f.write(data)
    return path, len(done)


def _timed(fn, inputs, device, iters):
    return gpu_models.per_call_ms(fn, inputs, device, iters)


def run_one(gz_path, small, device, iters, folder):
    """One model's row: kiln vs eager (numbers and times)."""
    import kiln_runtime
    name, dt = os.path.basename(gz_path)[:-len(".kiln.gz")].rsplit("-", 1)
    row = {"model": name, "dtype": dt}
    model, inputs = make(name, dt, small, device)
    path, row["weights_filled"] = filled_artifact(gz_path, model, folder)
    t0 = time.perf_counter()
    kiln_model = kiln_runtime.load(path, "cuda")
    row["load_s"] = round(time.perf_counter() - t0, 2)
    with torch.no_grad():
        want = model(*inputs).float()
        got = kiln_model(*inputs).float()
        err = (got.to(want.device) - want).abs().max().item()
        scale = max(1.0, want.abs().max().item())
        row["max_err"], row["scale"] = err, scale
        row["ok"] = bool(err <= TOLERANCE[dt] * scale)
        if device == "cuda":
            row["eager_ms"] = _timed(model, inputs, device, iters)
            row["kiln_ms"] = _timed(kiln_model, inputs, device, iters)
            row["kiln_speedup"] = row["eager_ms"] / row["kiln_ms"]
    return row, model, inputs


def torch_compile_row(row, model, inputs, mode, iters):
    """torch.compile `mode` of the row's model: compile seconds and ms."""
    torch._dynamo.reset()
    t0 = time.perf_counter()
    with torch.no_grad():
        compiled = torch.compile(model, mode=mode)
        compiled(*inputs)
        torch.cuda.synchronize()
        row[f"inductor_{mode}_compile_s"] = round(time.perf_counter() - t0, 1)
        row[f"inductor_{mode}_ms"] = _timed(compiled, inputs, "cuda", iters)
    row[f"kiln_vs_inductor_{mode}"] = row[f"inductor_{mode}_ms"] / row["kiln_ms"]
    return time.perf_counter() - t0


def _host_kernels(gz_path, folder):
    """--emulate: the host library of the artifact's kernels (needs kiln._C)."""
    import kiln.cuda
    from cuda_host import build_host_library
    af = _artifact_file()
    data = gzip.open(gz_path, "rb").read()
    off, size = af.sections(data)["program"]
    # The same emission as kiln.export (_export_cuda.py): the same kernels.
    return build_host_library(kiln.cuda.emit(data[off:off + size].decode(),
                                             collect_unsupported=True), folder)


def _emulated_row(gz_path, args, small):
    """--emulate: run_one in a child process with the fake driver and the
    artifact's host kernels."""
    with tempfile.TemporaryDirectory(prefix="kiln-host-kernels-") as tmp:
        env = {**os.environ, "KILN_CUDA_DRIVER": args.fake_driver,
               "KILN_CUBLASLT": args.fake_driver,
               "KILN_FAKE_CUDA_HOST_LIB": _host_kernels(gz_path, tmp)}
        cmd = [sys.executable, __file__, "--one", gz_path] + (["--small"] if small else [])
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if r.returncode == 0:
        return json.loads(r.stdout.splitlines()[-1])
    return {"model": os.path.basename(gz_path), "ok": False, "error": r.stderr[-2000:]}


def run(dir_, args):
    device = "cpu" if args.emulate else "cuda"
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": "emulated (CPU)" if args.emulate else torch.cuda.get_device_name(),
              "torch": torch.__version__, "tf32": torch.backends.cuda.matmul.allow_tf32,
              "rows": []}

    def save(row=None):
        if row is not None:
            print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
    built = json.load(open(os.path.join(dir_, "build.json"), encoding="utf-8"))
    for key, b in built["models"].items():
        if not b["ok"]:
            result["rows"].append({"model": key, "ok": False, "error": "not exported: " + b["error"]})
            save(result["rows"][-1])
    kept = []  # (row, model, inputs) for the torch.compile rows
    for name in sorted(f for f in os.listdir(dir_) if f.endswith(".kiln.gz")):
        gz_path = os.path.join(dir_, name)
        if args.emulate:
            row = _emulated_row(gz_path, args, built["small"])
        else:
            try:
                with tempfile.TemporaryDirectory(prefix="kiln-filled-") as tmp:
                    row, model, inputs = run_one(gz_path, built["small"], device, args.iters, tmp)
                kept.append((row, model, inputs))
            except Exception as e:  # noqa: BLE001 - report every model
                row = {"model": name, "ok": False, "error": f"{type(e).__name__}: {e}"[:2000]}
        result["rows"].append(row)
        save(row)
    # bf16 rows first (the inference rows that matter on an H200), both
    # modes, then fp32: compiles stop once the budget is spent.
    order = [(dt, mode) for dt in ("bf16", "fp32") for mode in TORCH_MODES]
    spent = 0.0
    for dt, mode in order if not args.emulate else ():
        for row, model, inputs in kept:
            if row["dtype"] != dt or not row.get("ok"):
                continue
            if spent >= args.budget_s:
                row[f"inductor_{mode}"] = "not run: compile budget spent"
                continue
            try:
                spent += torch_compile_row(row, model, inputs, mode, args.iters)
            except Exception as e:  # noqa: BLE001 - a torch.compile failure is a row note
                row[f"inductor_{mode}"] = f"failed: {type(e).__name__}: {e}"[:500]
            save(row)
    save()
    return all(r.get("ok") for r in result["rows"]) and bool(result["rows"])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", metavar="DIR")
    p.add_argument("--run", metavar="DIR")
    p.add_argument("--only", help="comma-separated model names (--build)")
    p.add_argument("--dtypes", default="fp32,bf16", help="--build: fp32, bf16 or both")
    p.add_argument("--small", action="store_true", help="the rehearsal's sizes")
    p.add_argument("--emulate", action="store_true")
    p.add_argument("--fake-driver")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--budget-s", type=float, default=240,
                   help="stop starting torch.compile compiles once they took this long")
    p.add_argument("--out")
    p.add_argument("--one", help=argparse.SUPPRESS)  # --emulate's child
    args = p.parse_args()
    if args.one:
        with tempfile.TemporaryDirectory(prefix="kiln-filled-") as tmp:
            row, _, _ = run_one(args.one, args.small, "cpu", args.iters, tmp)
        print(json.dumps(row))
        return
    if args.build:
        names = args.only.split(",") if args.only else list(gpu_models.models(args.small))
        build(args.build, names, args.dtypes.split(","), args.small)
    if args.run and not run(args.run, args):
        sys.exit(1)


if __name__ == "__main__":
    main()

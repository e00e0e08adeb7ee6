#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds the CUDA artifact tools/gpu-check.sh runs on a GPU machine.

Runs here (kiln's MLIR extension + NVRTC, no GPU): each case of
test/python/cuda_cases.py, in fp32 and bf16, is compiled with kiln on the
CPU (fullgraph, checked against eager), its captured IR is emitted with
the CUDA emitter and compiled with NVRTC for sm_80 and sm_90 (+ PTX for
compute_90), and everything goes into one gzip'ed JSON file
(kiln/cuda/artifact.py). The dynamic cases (cuda_cases.DYNAMIC) are `?`
graphs: one plan source for every size, run at several sizes. The
quantized cases (cuda_cases.QUANTIZED: a kiln.quant int8 layer and an fp8
layer) are built in fp32 only, the fp8 one captured on `meta`. Cases the
emitter cannot fully handle are listed and left out.

    .venv/bin/python tools/cuda_artifact.py -o build/gpu-check/cases.json.gz

With --small, sizes above 64 are divided by 8: the artifact the CPU
rehearsal runs (tools/gpu_check.py --emulate, tools/gpu-check.sh
--rehearse).
"""
import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))

import torch  # noqa: E402

import kiln  # noqa: E402
import kiln.cuda  # noqa: E402
from kiln import _C  # noqa: E402
from kiln.cuda import artifact, nvrtc  # noqa: E402
from cuda_cases import (CASES, DTYPES, DYNAMIC, META_CAPTURE, QUANTIZED, TOLERANCES,  # noqa: E402
                        base_case, make_inputs)


def capture(name, dtype, small=False):
    """The IR kiln captures for case `name` (checked against eager on the
    CPU; a META_CAPTURE case is captured on `meta`, as a CUDA graph). A
    dynamic case is called at its first two sizes: the second call
    recompiles with the changed size symbolic, and that `?` graph is kept."""
    fn = base_case(name)[0]
    sizes = DYNAMIC[name][2][:2] if name in DYNAMIC else (None,)
    with tempfile.TemporaryDirectory() as d, kiln.config.patch(debug_dir=d):
        kiln.reset()
        compiled = kiln.compile(fn, fullgraph=True)
        for size in sizes:
            inputs = make_inputs(name, dtype, small=small, size=size)
            if name in META_CAPTURE:
                compiled(*[t.to("meta") for t in inputs])
                continue
            with torch.no_grad():
                got, expected = compiled(*inputs), fn(*inputs)
            rtol, atol = TOLERANCES[dtype]
            torch.testing.assert_close(got, expected, rtol=rtol, atol=atol)
        files = nvrtc.captured_files(d)
        if len(files) != len(sizes):
            raise RuntimeError(f"{name}/{dtype}: expected {len(sizes)} captured graph(s), "
                               f"got {len(files)}")
        irs = []
        for path in files:
            with open(path, encoding="utf-8") as f:
                irs.append(f.read())
        if name in DYNAMIC:  # the recompiled graph: the one with a `?` size
            irs = [ir for ir in irs if "?" in ir]
            if len(irs) != 1:
                raise RuntimeError(f"{name}/{dtype}: expected one graph with a symbolic size, "
                                   f"got {len(irs)}")
        return irs[0], inputs


def build(name, dtype, archs, small=False):
    ir, inputs = capture(name, dtype, small)
    emitted = kiln.cuda.emit(ir, collect_unsupported=True)
    if emitted["unsupported"]:
        return None, "; ".join(f"{u['op']}: {u['reason']}" for u in emitted["unsupported"])
    (fn,) = [f for f in emitted["functions"] if f["name"] == "forward"]
    buffers = {b["name"]: b for b in emitted["buffers"] if b["function"] == "forward"}
    # The graph's arguments must be the case's tensors in order.
    for i, (arg, t) in enumerate(zip(fn["inputs"], inputs)):
        b = buffers[arg]
        shape = tuple(t.shape)
        if (len(b["shape"]) != len(shape) or kiln.cuda.DTYPES[b["type"]] != t.dtype
                or any(d not in (-1, e) for d, e in zip(b["shape"], shape))):
            return None, f"graph argument {i} is {b['type']}{b['shape']}, not input {i}"
    if len(fn["inputs"]) != len(inputs):
        return None, f"graph has {len(fn['inputs'])} arguments for {len(inputs)} inputs"
    images = {a: nvrtc.compile_source(emitted["source"], a) for a in archs}
    images["ptx"] = nvrtc.compile_source(emitted["source"], max(archs), cubin=False)
    meta = {"case": name, "dtype": dtype, "kernels": len(emitted["kernels"]),
            "gemms": len(emitted["externs"]), "small": small}
    if name in DYNAMIC:
        meta["sizes"] = list(DYNAMIC[name][2])
    return {"emitted": emitted, "images": images, "meta": meta}, None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", default=os.path.join(ROOT, "build", "gpu-check",
                                                          "cases.json.gz"))
    p.add_argument("--arch", type=int, action="append", help="sm_ archs (default 80, 90)")
    p.add_argument("--small", action="store_true",
                   help="sizes > 64 divided by 8 (the artifact of the CPU rehearsal, "
                        "tools/gpu_check.py --emulate)")
    p.add_argument("--only", help="comma-separated case names (default: every case)")
    args = p.parse_args()
    archs = args.arch or [80, 90]
    if not _C.nvrtc_available():
        sys.exit("kiln was built without NVRTC: cannot build the CUDA artifact")
    entries, skipped = {}, []
    for name in (args.only.split(",") if args.only else [*CASES, *DYNAMIC]):
        for dtype in DTYPES:
            if name in QUANTIZED and dtype != "fp32":
                continue
            entry, why = build(name, dtype, archs, args.small)
            if entry is None:
                skipped.append(f"{name}/{dtype}: {why}")
                continue
            entries[f"{name}/{dtype}"] = entry
            m = entry["meta"]
            print(f"{name}/{dtype}: {m['kernels']} kernel(s), {m['gemms']} GEMM(s)")
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    artifact.save(args.output, entries, _C.nvrtc_version())
    for s in skipped:
        print("skipped (not supported by the CUDA emitter):", s)
    print(f"wrote {args.output}: {len(entries)} graphs, {os.path.getsize(args.output)} bytes")


if __name__ == "__main__":
    main()

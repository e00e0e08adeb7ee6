#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Whole real models on kiln's CUDA path without a GPU: what is left out.

Each model (torchvision resnet50, mobilenet_v3_large, ViT-B/16; HF
BERT-base, GPT-2; random init, eval) is built on the ``meta`` device and
called through ``kiln.compile``: the frame hook sends every graph to the
CUDA backend as a dry run (kiln/cuda/_frontend.py). The captured IR of
each graph is recorded, emitted with ``collect_unsupported`` and compiled
with NVRTC for sm_80 and sm_90 (kiln.cuda.nvrtc.check_ir); the report
lists, per model, graphs, kernels, GEMMs and the ops the emitter left
out, counted by (op, reason) — kiln.explain-style, with one location
each. Sizes are small (batch 1, 64 px images / 224 for ViT's fixed size,
16 tokens): the architectures are the real ones, shapes do not change
which ops appear.

    .venv/bin/python tools/cuda_models.py [--only resnet50,gpt2] [--no-nvrtc]
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import torch


def _vision(name, size):
    def make():
        import torchvision.models as tvm
        return getattr(tvm, name)()
    return make, lambda: (torch.empty(1, 3, size, size, device="meta"),)


def _text(config, model, seq, **kw):
    def make():
        import transformers
        return getattr(transformers, model)(getattr(transformers, config)(**kw))

    def inputs():
        return (torch.zeros(1, seq, dtype=torch.long, device="meta"),)
    return make, inputs


#: name -> (build the model, its meta inputs). Real configurations.
MODELS = {
    "resnet50": _vision("resnet50", 64),
    "mobilenet_v3_large": _vision("mobilenet_v3_large", 64),
    "vit_b_16": _vision("vit_b_16", 224),
    "bert_base": _text("BertConfig", "BertModel", 16),
    "gpt2": _text("GPT2Config", "GPT2Model", 16, use_cache=False),
}


def capture(name):
    """(IR texts of the graphs kiln sent to the CUDA backend, kiln.stats())."""
    import kiln
    import kiln.cuda._frontend as frontend
    make, inputs = MODELS[name]
    torch.manual_seed(0)
    with torch.device("meta"):
        model = make().eval()
    irs = []
    original = frontend.compile_graph

    def recording(ir, device):
        irs.append(ir)
        return original(ir, device)

    kiln.reset()
    frontend.compile_graph = recording
    try:
        with torch.no_grad():
            kiln.compile(model)(*inputs())
    finally:
        frontend.compile_graph = original
    return irs, kiln.stats()


def check_model(name, archs=(80, 90)):
    """Per-model summary: graphs, kernels, externs, unsupported (dicts),
    left_out (Counter of (op, reason)), seconds, stats."""
    from kiln.cuda import nvrtc
    t0 = time.perf_counter()
    irs, stats = capture(name)
    out = {"model": name, "graphs": len(irs), "kernels": 0, "externs": 0, "unsupported": [],
           "stats": stats}
    for ir in irs:
        r = nvrtc.check_ir(ir, archs=archs)
        out["kernels"] += len(r["kernels"])
        out["externs"] += len(r["externs"])
        out["unsupported"] += r["unsupported"]
    out["left_out"] = collections.Counter((u["op"], u["reason"].splitlines()[0])
                                          for u in out["unsupported"])
    out["seconds"] = time.perf_counter() - t0
    return out


#: cudaDataType codes of the plan's GEMM lines → torch dtypes.
_GEMM_DTYPES = {0: torch.float32, 1: torch.float64, 2: torch.float16, 14: torch.bfloat16}


def gemm_plans(irs, tf32=False):
    """Builds each graph's launch plan (kiln.cuda.plan.build_spec: every
    GEMM step gets its cuBLASLt call, or CudaUnsupportedError names it).
    Returns (plan specs, Counter of distinct GEMM calls as tuples
    (in type, out type, batch, m, n, k, trans_b, tf32, epilogue))."""
    from kiln import _C
    from kiln.cuda import plan
    from kiln.cuda.graph import DTYPES, CudaGraph
    specs, gemms = [], collections.Counter()
    for ir in irs:
        emitted = _C.cuda_emit(ir, collect_unsupported=True, fuse_rows=True)
        for fn in emitted["functions"]:
            spec, _ = plan.build_spec(CudaGraph(emitted, fn["name"]), DTYPES, tf32)
            specs.append(spec)
            gemms.update(tuple(int(f) for f in line.split()[1:10])
                         for line in spec.splitlines() if line.startswith("gemm "))
    return specs, gemms


def _gemm_reference(a, w, bias, trans_b, epilogue):
    """The GEMM step's meaning (kiln's row-major C = A x B + epilogue) in
    float64."""
    ref = a.double() @ (w.double().transpose(-1, -2) if trans_b else w.double())
    if epilogue:
        ref = ref + bias.double()
    if epilogue == 2:
        ref = ref.relu()
    if epilogue == 3:
        ref = torch.nn.functional.gelu(ref, approximate="tanh")
    return ref


def validate_gemms(gemms, seed=0):
    """Runs each GEMM call (a key of gemm_plans) as a one-step plan through
    libkiln_cuda's cuBLASLt lowering on random data and compares it with
    its float64 reference rounded to the result type. Runs in a process
    whose $KILN_CUDA_DRIVER/$KILN_CUBLASLT are the fake driver + cuBLASLt
    of test/python/cuda_fake (CPU tensors as device memory; the fake
    computes the column-major call cuBLASLt would, so a wrong lowering
    gives wrong numbers). Returns {key: max abs error}; raises
    AssertionError on a mismatch."""
    import ctypes
    from kiln.cuda import _driver as d
    d.init()
    if not os.environ.get("KILN_CUBLASLT"):
        raise RuntimeError("validate_gemms runs on the fake driver + cuBLASLt only")
    device = "cpu"
    module = d.Module(b"\x7fELF" + b"\0" * 80)  # the fake loads any image
    gen = torch.Generator().manual_seed(seed)
    errors = {}
    for key in gemms:
        it, ot, batch, m, n, k, trans_b, tf32, epi = key
        scale = k ** -0.25  # results of magnitude ~1

        def rand(*shape, dt):
            return (torch.randn(*shape, generator=gen) * scale).to(dt).to(device)
        a = rand(batch, m, k, dt=_GEMM_DTYPES[it])
        w = rand(batch, *((n, k) if trans_b else (k, n)), dt=_GEMM_DTYPES[it])
        bias = rand(n, dt=_GEMM_DTYPES[ot])
        out = torch.empty(batch, m, n, dtype=_GEMM_DTYPES[ot], device=device)
        spec = (f"kiln-plan 1 4 3 1\nbuf 0 in 0\nbuf 1 in 1\nbuf 2 in 2\nbuf 3 out 0\n"
                f"ws 0 {1 << 20}\ngemm {it} {ot} {batch} {m} {n} {k} {trans_b} {tf32} {epi} "
                f"0 1 3 {2 if epi else -1}\n")
        p = d.Plan(module, spec)
        arena = torch.empty(1 << 20, dtype=torch.uint8, device=device)
        ptrs = (ctypes.c_void_p * 3)(a.data_ptr(), w.data_ptr(), bias.data_ptr())
        p.run(ptrs, (ctypes.c_void_p * 1)(out.data_ptr()), arena.data_ptr(), 0)
        ref = _gemm_reference(a.cpu(), w.cpu(), bias.cpu(), trans_b, epi)
        tol = {0: 1e-5 if not tf32 else 5e-3, 1: 1e-12}.get(ot, 1e-2)
        got = out.cpu().double()
        torch.testing.assert_close(got, ref.to(out.dtype).double(), rtol=tol, atol=tol,
                                   msg=lambda s, key=key: f"GEMM {key}: {s}")
        errors[key] = float((got - ref).abs().max())
    return errors


def format_table(results):
    lines = ["| model | graphs | kernels | GEMMs | ops left out | graph breaks |",
             "|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['model']} | {r['graphs']} | {r['kernels']} | {r['externs']} | "
                     f"{len(r['unsupported'])} | {r['stats'].get('graph_breaks', 0)} |")
    for r in results:
        if r["left_out"]:
            lines.append(f"\n{r['model']}: ops left out")
            for (op, reason), n in r["left_out"].most_common():
                lines.append(f"  {n:4d} x {op}: {reason}")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated model names")
    p.add_argument("--no-nvrtc", action="store_true", help="emit only")
    args = p.parse_args()
    names = args.only.split(",") if args.only else list(MODELS)
    results = []
    for name in names:
        r = check_model(name, archs=() if args.no_nvrtc else (80, 90))
        print(f"{name}: {r['seconds']:.1f} s", file=sys.stderr, flush=True)
        results.append(r)
    print(format_table(results))


if __name__ == "__main__":
    main()

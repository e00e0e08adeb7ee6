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

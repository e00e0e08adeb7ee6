#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CPU autocast benchmark: models run under `torch.autocast("cpu",
dtype=torch.bfloat16)`, eager vs kiln (which captures the autocast casts
and sends the bf16 GEMMs to oneMKL's cblas_gemm_bf16bf16f32), with the
float32 runs of the same models beside them. The autocast block is entered
per call, as a training loop does (inside one block eager would reuse its
cast weights across calls). Rows: a BERT-base-like encoder layer
(HF BertModel, 1 layer, hidden 768, 12 heads, seq 128, batch 1, no_grad)
and training steps (forward + backward, loss = mean(out^2)) of a 4x512 MLP
and a TransformerEncoderLayer d256. Timed interleaved in this process:
rounds of `--steps` calls per mode, the median per-call time over rounds.
Random init; part of `make bench`; prints a Markdown table
(docs/performance.md's autocast section).
"""
from __future__ import annotations

import argparse
import copy
import os
import sys

_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "frontend", "python")
sys.path.insert(0, _PACKAGE)

import torch  # noqa: E402
from torch import nn  # noqa: E402

import kiln  # noqa: E402
from bench_training import bench  # noqa: E402  (interleaved rounds, medians)


def bert_layer():
    import transformers  # noqa: PLC0415 (optional: only this row needs it)
    config = transformers.BertConfig(hidden_size=768, num_hidden_layers=1,
                                     num_attention_heads=12, intermediate_size=3072,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.BertModel(config).eval()
    return model, torch.randint(0, 1000, (1, 128)), False


def mlp():
    layers = []
    for _ in range(4):
        layers += [nn.Linear(512, 512), nn.GELU()]
    model = nn.Sequential(*layers, nn.LayerNorm(512), nn.Linear(512, 10))
    return model, torch.randn(64, 512), True


def encoder_layer():
    layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.0,
                                       batch_first=True)
    return layer, torch.randn(8, 64, 256), True


MODELS = {"BERT-base layer, seq 128 (inference)": bert_layer,
          "MLP 4x512, batch 64 (training step)": mlp,
          "TransformerEncoderLayer d256, 8x64 (training step)": encoder_layer}


def call_fn(model, train, autocast):
    params = list(model.parameters())

    def run(x):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            if not train:
                with torch.no_grad():
                    return model(x)
            for p in params:
                p.grad = None
            out = model(x)
            out = out.last_hidden_state if hasattr(out, "last_hidden_state") else out
            loss = out.float().square().mean()
        loss.backward()
        return loss
    return run


def make_modes(build):
    model, x, train = build()
    model.train(train)
    modes = {}
    for autocast in (True, False):
        tag = "bf16 autocast" if autocast else "float32"
        modes[f"eager {tag}"] = call_fn(model, train, autocast)
        compiled = kiln.compile(copy.deepcopy(model))
        modes[f"kiln {tag}"] = call_fn(compiled, train, autocast)
    for fn in modes.values():
        fn(x)  # warm up / compile
    return modes, x


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--models", default="", help="comma-separated substrings of row labels")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"| model ({args.threads} thread{'s' if args.threads > 1 else ''}) | mode | "
          "ms/call | vs eager (same dtype) |")
    print("|---|---|---|---|")
    for label, build in MODELS.items():
        if args.models and not any(k in label for k in args.models.split(",")):
            continue
        modes, x = make_modes(build)
        med = bench(modes, x, args.rounds, args.steps)
        for name, t in med.items():
            base = med["eager " + name.split(" ", 1)[1]]
            print(f"| {label} | {name} | {t * 1e3:.2f} | {base / t:.2f}x |")
    s = kiln.stats()
    print(f"\nkiln.stats(): graphs_compiled={s['graphs_compiled']} "
          f"graph_breaks={s['graph_breaks']} eager_calls={s['eager_calls']} "
          f"compiled_backwards={s['compiled_backwards']} eager_backwards={s['eager_backwards']}")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Counts graphs/recompiles of models called with varying sizes under
kiln.compile(dynamic=None): GPT2Model (use_cache=False), BertModel,
nn.TransformerEncoderLayer (varying seq) and an MLP (varying batch).
Run with KILN_LOGS=dynamic to see why a frame specialized.
Usage: python tools/measure_dynamic.py [name ...]"""
import sys

import torch
from torch import nn

import kiln

SEQS = [8, 12, 16, 20, 24]


def hf(kind):
    import transformers
    torch.manual_seed(0)
    if kind == "gpt2":
        cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000,
                                      n_positions=64, use_cache=False)
        return transformers.GPT2Model(cfg).eval(), lambda s: (torch.randint(0, 1000, (2, s)),)
    cfg = transformers.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                  intermediate_size=128, vocab_size=1000,
                                  max_position_embeddings=64)
    return transformers.BertModel(cfg).eval(), lambda s: (torch.randint(0, 1000, (2, s)),)


def cases():
    torch.manual_seed(0)
    enc = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0).eval()
    mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)).eval()
    return {
        "gpt2": lambda: hf("gpt2"),
        "bert": lambda: hf("bert"),
        "encoder_layer": lambda: (enc, lambda s: (torch.randn(2, s, 64),)),
        "mlp": lambda: (mlp, lambda s: (torch.randn(s, 32),)),
    }


def first(out):
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state
    return out[0]


def measure(name, make):
    model, inputs = make()
    kiln.reset()
    compiled = kiln.compile(model)
    rows = []
    with torch.no_grad():
        for s in SEQS:
            args = inputs(s)
            got, want = first(compiled(*args)), first(model(*args))
            torch.testing.assert_close(got, want, rtol=1e-4, atol=2e-5)
            st = kiln.stats()
            rows.append((s, st["graphs_compiled"], st["recompiles"], st["dynamic_graphs"],
                         st["dynamic_specialized"], st["eager_calls"]))
    print(f"{name}: size graphs recompiles dynamic_graphs dynamic_specialized eager_calls")
    for r in rows:
        print("   ", *r)


if __name__ == "__main__":
    all_cases = cases()
    for name in sys.argv[1:] or list(all_cases):
        measure(name, all_cases[name])

# SPDX-License-Identifier: Apache-2.0
"""Capture probe for HuggingFace transformers models (random init from small
configs, eval, no downloads): for each model, two identical calls through
kiln.compile, then kiln.stats() (graphs, breaks, recompiles, eager calls,
fallback ops), whether the output matches eager, and the graph-break reasons
grouped by category (kiln.explain on a third, fresh run).

    .venv/bin/python tools/probe_transformers.py [--cache] [--no-mask] [--verbose] [NAME ...]

NAME is one of the keys of MODELS (default: all). --cache runs with
use_cache=True (the default DynamicCache path) instead of use_cache=False.
Not a test: the whole-graph assertions live in
test/python/test_models_transformers.py.
"""
import argparse
import sys
from collections import Counter

import torch
import transformers as tf

import kiln

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=128, vocab_size=128)


def decoder_only(cls, cfg_cls, **extra):
    return lambda cache: (cls(cfg_cls(**SMALL, use_cache=cache, **extra)), {})


def t5(cache):
    cfg = tf.T5Config(vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                      num_heads=4, use_cache=cache)
    return tf.T5Model(cfg), {"decoder_input_ids": torch.randint(0, 128, (2, 5))}


def bart(cache):
    cfg = tf.BartConfig(vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=4, decoder_attention_heads=4,
                        encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
                        use_cache=cache)
    return tf.BartModel(cfg), {"decoder_input_ids": torch.randint(0, 128, (2, 5))}


def distilbert(cache):
    cfg = tf.DistilBertConfig(vocab_size=128, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                              max_position_embeddings=64)
    return tf.DistilBertModel(cfg), {}


def gpt2(cache):
    cfg = tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64,
                        use_cache=cache)
    return tf.GPT2LMHeadModel(cfg), {}


def bert(cache):
    cfg = tf.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                        intermediate_size=128, vocab_size=128, max_position_embeddings=64)
    return tf.BertModel(cfg), {}


def opt(cache):
    cfg = tf.OPTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                       vocab_size=128, max_position_embeddings=64, word_embed_proj_dim=64,
                       use_cache=cache)
    return tf.OPTForCausalLM(cfg), {}


MODELS = {
    "llama": decoder_only(tf.LlamaForCausalLM, tf.LlamaConfig),
    "qwen2": decoder_only(tf.Qwen2ForCausalLM, tf.Qwen2Config, num_key_value_heads=2),
    "mistral": decoder_only(tf.MistralForCausalLM, tf.MistralConfig, num_key_value_heads=2),
    "t5": t5,
    "bart": bart,
    "distilbert": distilbert,
    "gpt2": gpt2,
    "bert": bert,
    "opt": opt,
}


def tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in tensors(o)]
    return []  # caches and other objects: not compared


def probe(name, cache, verbose, mask=True):
    torch.manual_seed(0)
    model, extra = MODELS[name](cache)
    model.eval()
    ids = torch.randint(0, 128, (2, 8))
    kw = dict(extra)
    if mask:  # left padding on the second row
        kw["attention_mask"] = torch.ones(2, 8, dtype=torch.long)
        kw["attention_mask"][1, :2] = 0
    kiln.reset()
    compiled = kiln.compile(model)
    with torch.no_grad():
        expected = model(ids, **kw)
        try:
            got = [compiled(ids, **kw) for _ in range(2)]
            ok = all(len(tensors(g)) == len(tensors(expected)) and all(
                torch.allclose(a, b, rtol=1e-4, atol=2e-5)
                for a, b in zip(tensors(g), tensors(expected))) for g in got)
        except Exception as e:  # noqa: BLE001 - a probe reports, never stops
            ok = f"raised {type(e).__name__}: {e}"
        s = kiln.stats()
        report = kiln.explain(model)(ids, **kw)
    print(f"{name:10s} graphs={s['graphs_compiled']:3d} breaks={s['graph_breaks']:3d} "
          f"recompiles={s['recompiles']:3d} eager_calls={s['eager_calls']:3d} "
          f"fallback_ops={s.get('fallback_ops', 0):3d} matches={ok}")
    width = 400 if verbose else 160
    reasons = Counter(f"{b.category}: {b.message[:width]}" + (f" [{b.function} at {b.location}]"
                                                             if verbose else "")
                      for b in report.break_records)
    for reason, n in reasons.most_common(None if verbose else 8):
        print(f"    {n:3d} x {reason}")
    if verbose:
        for r in report.recompiles:
            print("    recompile:", r[:300])
    return s


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=list(MODELS))
    ap.add_argument("--cache", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--no-mask", action="store_true", help="no attention_mask argument")
    args = ap.parse_args(argv)
    for name in args.names:
        probe(name, args.cache, args.verbose, mask=not args.no_mask)


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""HF GPT-2 `generate()` called repeatedly, eager vs
`model.forward = kiln.compile(model.forward)`: milliseconds per call and
kiln.stats() after the calls (each call builds a new KV cache; the compiled
forward should keep its graphs across calls). Random init, greedy decode,
1 thread.

    .venv/bin/python tools/bench_generate.py [--layers 2] [--calls 6] [--new 32]
"""
import argparse
import time

import torch

import kiln


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--new", type=int, default=32, help="new tokens per call")
    ap.add_argument("--calls", type=int, default=6)
    args = ap.parse_args()
    import transformers as tf

    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = tf.GPT2Config(n_layer=args.layers, n_embd=args.width, n_head=4, vocab_size=1024,
                        n_positions=args.prompt + args.new + 8)
    model = tf.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(1, 1024, (1, args.prompt))
    kw = dict(attention_mask=torch.ones_like(ids), max_new_tokens=args.new, do_sample=False,
              pad_token_id=0)

    def timed():
        out, ms = None, []
        for _ in range(args.calls):
            t = time.perf_counter()
            out = model.generate(ids, **kw)
            ms.append((time.perf_counter() - t) * 1e3)
        return out, ms

    want, eager = timed()
    model.forward = kiln.compile(model.forward)
    got, compiled = timed()
    assert torch.equal(got, want), "kiln's tokens differ from eager's"
    s = kiln.stats()
    print(f"eager ms per call: {' '.join(f'{t:.1f}' for t in eager)}")
    print(f"kiln  ms per call: {' '.join(f'{t:.1f}' for t in compiled)}")
    later = sorted(compiled[1:])[len(compiled[1:]) // 2] if len(compiled) > 1 else compiled[0]
    print(f"kiln's later calls (median) vs eager's: {sorted(eager)[len(eager) // 2] / later:.2f}x")
    print({k: s[k] for k in ("graphs_compiled", "recompiles", "eager_calls", "graph_breaks",
                             "compiled_calls")})


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Whole-model baseline for tools/gpu-check.sh: eager vs torch.compile.

Times resnet50, ViT-B/16, BERT-base and GPT-2 (random weights, real
sizes) in fp32 and bf16 inference, eager and torch.compile (Inductor,
default mode), on the GPU machine where kiln's MLIR extension is not
built. These are the rows kiln's CUDA path must beat (issue 21); kiln's
own whole-model column is added once those models stay on the CUDA path.
Compiles stop once they took --budget-s seconds together; the rows not
reached say so. Results go to --out as JSON, written after every row.

    python3 tools/gpu_models.py --out results.json [--device cpu --small]
"""
import argparse
import datetime
import json
import statistics
import time

import torch


def _vision(name, batch, size):
    import torchvision.models as tvm

    def make():
        return getattr(tvm, name)()

    return make, lambda device, dtype: (torch.randn(batch, 3, size, size, device=device,
                                                   dtype=dtype),)


def _text(config_name, model_name, batch, seq, **config):
    import transformers

    def make():
        cfg = getattr(transformers, config_name)(**config)
        return getattr(transformers, model_name)(cfg)

    def inputs(device, dtype):  # token ids: the dtype is the model's
        gen = torch.Generator().manual_seed(0)
        ids = torch.randint(0, 1000, (batch, seq), generator=gen)
        return (ids.to(device),)

    return make, inputs


def models(small):
    """name -> (make_model, make_inputs(device, dtype)); `small` for a CPU rehearsal."""
    b = 2 if small else 32
    img = 64 if small else 224
    seq = 32 if small else 128
    text = dict(num_hidden_layers=2) if small else {}
    gpt = dict(n_layer=2) if small else {}
    return {
        "resnet50": _vision("resnet50", b, img),
        "vit_b_16": _vision("vit_b_16", b, 224),
        "bert_base": _text("BertConfig", "BertModel", b, seq, **text),
        "gpt2": _text("GPT2Config", "GPT2Model", b // 2 or 1, 2 * seq, use_cache=False, **gpt),
    }


def per_call_ms(fn, inputs, device, iters, repeats=5):
    """Median over `repeats` batches of `iters` calls, in ms per call."""
    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    times = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*inputs)
        sync()
        times.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(times)


def run_row(name, make, make_inputs, dtype, args, spent):
    row = {"model": name, "dtype": str(dtype).replace("torch.", "")}
    model = make().eval().to(device=args.device, dtype=dtype)
    inputs = make_inputs(args.device, dtype)
    with torch.no_grad():
        model(*inputs)
        row["eager_ms"] = per_call_ms(model, inputs, args.device, args.iters)
        if spent >= args.budget_s:
            row["inductor"] = "not run: compile budget spent"
            return row, 0.0
        t0 = time.perf_counter()
        compiled = torch.compile(model, mode=args.mode)
        compiled(*inputs)
        if args.device == "cuda":
            torch.cuda.synchronize()
        row["compile_s"] = time.perf_counter() - t0
        row["inductor_ms"] = per_call_ms(compiled, inputs, args.device, args.iters)
    row["inductor_speedup"] = row["eager_ms"] / row["inductor_ms"]
    return row, row["compile_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--small", action="store_true", help="tiny sizes (a CPU rehearsal)")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--budget-s", type=float, default=200,
                   help="stop compiling once torch.compile took this long in total")
    p.add_argument("--only", help="comma-separated model names")
    p.add_argument("--mode", default="default",
                   help="torch.compile mode (default, reduce-overhead, max-autotune, ...)")
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args()
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else args.device
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": device_name, "torch": torch.__version__,
              "tf32": torch.backends.cuda.matmul.allow_tf32, "mode": args.mode, "rows": []}
    print(f"models on {device_name}, torch {torch.__version__}, torch.compile mode {args.mode}")
    spent = 0.0
    chosen = models(args.small)
    names = args.only.split(",") if args.only else list(chosen)
    # bf16 first: the rows people run on an H200; fp32 where the budget allows.
    for dtype in (torch.bfloat16, torch.float32):
        for name in names:
            make, make_inputs = chosen[name]
            try:
                row, took = run_row(name, make, make_inputs, dtype, args, spent)
                spent += took
            except Exception as e:  # noqa: BLE001 - report every row
                row = {"model": name, "dtype": str(dtype).replace("torch.", ""), "error": f"{type(e).__name__}: {e}"}
            result["rows"].append(row)
            print(json.dumps(row), flush=True)
            if args.out:
                with open(args.out, "w", encoding="utf-8") as f:
                    json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""The graphs kiln's CUDA path is checked and measured on (tools/gpu-check.sh).

Each case is a plain function of explicit tensors (parameters included, in
the order the function first reads them, which is the captured graph's
argument order) plus how to make its inputs. tools/cuda_artifact.py
captures each with kiln on the CPU, emits and compiles it ahead of time;
tools/gpu_check.py rebuilds the same inputs on the GPU and compares
kiln's result with eager. Only torch (and kiln.quant's pure-torch
references, importable without kiln's extension) is imported here.
"""
import math

import torch
import torch.nn.functional as F


def mlp(x, w1, b1, w2, b2):
    return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)


def mlp_relu(x, w1, b1, w2, b2):
    return F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)


def ffn_block(x, g, beta, w1, b1, w2, b2):
    h = F.layer_norm(x, (x.shape[-1],), g, beta)
    return x + F.linear(F.gelu(F.linear(h, w1, b1)), w2, b2)


def attention_scores(q, k, v):
    s = torch.softmax(q @ k.transpose(-1, -2) * (1.0 / math.sqrt(q.shape[-1])), dim=-1)
    return s @ v


def softmax_rows(x):
    return torch.softmax(x, dim=-1)


def layer_norm(x, g, beta):
    return F.layer_norm(x, (x.shape[-1],), g, beta)


def gelu_chain(x, b):
    return F.gelu(x * 2.0 + b).relu() - 0.5


def int8_linear(x, qw, s, b):
    """A kiln.quant dynamic int8 layer: per-token int8 activations, a
    cuBLASLt int8 GEMM (codegen/common/Quant.cpp)."""
    from kiln.quant import _ops
    return _ops.linear_int8(x, qw, s, b, "per_token")


def fp8_linear(x, qw, s, b):
    """A kiln.quant.fp8() layer: e4m3 activations and weights, a cuBLASLt
    fp8 GEMM (sm_89+)."""
    from kiln.quant import _ops
    return _ops.linear_fp8(x, qw, s, b, "per_token")


# name -> (function, [(shape, role)], rtol/atol per dtype). Roles: "x"
# (randn), "w" (randn / sqrt(fan-in)), "b" (small randn), "g" (1 + small);
# quantized layers (fp32 only, QUANTIZED): "q8" / "qf8" (int8 / e4m3
# values of a [N, K] weight as int32 words [N, K / 4]), "s" (their [N, 1]
# scales, float32).
CASES = {
    "mlp": (mlp, [((256, 1024), "x"), ((4096, 1024), "w"), ((4096,), "b"),
                  ((1024, 4096), "w"), ((1024,), "b")]),
    "mlp_relu": (mlp_relu, [((256, 1024), "x"), ((4096, 1024), "w"), ((4096,), "b"),
                            ((1024, 4096), "w"), ((1024,), "b")]),
    "ffn_block": (ffn_block, [((8, 128, 768), "x"), ((768,), "g"), ((768,), "b"),
                              ((3072, 768), "w"), ((3072,), "b"), ((768, 3072), "w"),
                              ((768,), "b")]),
    "attention_scores": (attention_scores, [((16, 256, 64), "x"), ((16, 256, 64), "x"),
                                            ((16, 256, 64), "x")]),
    "softmax_rows": (softmax_rows, [((4096, 1024), "x")]),
    "layer_norm": (layer_norm, [((4096, 1024), "x"), ((1024,), "g"), ((1024,), "b")]),
    "gelu_chain": (gelu_chain, [((4096, 1024), "x"), ((1024,), "b")]),
    "int8_linear": (int8_linear, [((256, 1024), "x"), ((4096, 1024), "q8"), ((4096, 1), "s"),
                                  ((4096,), "b")]),
    "fp8_linear": (fp8_linear, [((256, 1024), "x"), ((4096, 1024), "qf8"), ((4096, 1), "s"),
                                ((4096,), "b")]),
}

# Quantized cases: fp32 only; fp8 is captured on `meta` (a CUDA graph: on
# the CPU its layer runs the eager reference as a per-op fallback).
QUANTIZED = {"int8_linear", "fp8_linear"}
META_CAPTURE = {"fp8_linear"}

# Dynamic cases: a case of CASES with one size symbolic (one `?` graph
# for every size: codegen/cuda/README.md, "Dynamic dims"). name -> (case,
# the size in its shapes that varies, the sizes the check runs; the first
# two compile: static, then `?` when the size changed).
DYNAMIC = {
    "mlp_dyn": ("mlp", 256, (96, 256, 384)),
    "ffn_block_dyn": ("ffn_block", 128, (96, 128, 200)),
    "attention_scores_dyn": ("attention_scores", 256, (96, 256, 320)),
}

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
TOLERANCES = {"fp32": (1e-4, 1e-4), "bf16": (2e-2, 2e-2)}


def small_shape(shape):
    """`shape` with every size above 64 divided by 8 (the same size maps to
    the same size, so the case's tensors still fit together): the small
    artifact the CPU rehearsal of tools/gpu-check.sh emulates."""
    return tuple(d // 8 if d > 64 else d for d in shape)


def base_case(name):
    """The CASES entry a (dynamic) case name stands for."""
    return CASES[DYNAMIC[name][0] if name in DYNAMIC else name]


def _quantized(role, t):
    """A quantized weight's int32 words or its scales from randn `t`."""
    if role == "s":  # ~ max|w| / 127 of a randn / sqrt(K) weight
        return (0.03 * (1.0 + 0.1 * t)).abs().to(torch.float32)
    values = (t * 40.0).round().clamp(-127, 127).to(torch.int8) if role == "q8" \
        else (t * 64.0).clamp(-448, 448).to(torch.float8_e4m3fn)
    return values.contiguous().view(torch.int32)


def make_inputs(name, dtype, device="cpu", seed=0, small=False, size=None):
    """The inputs of case `name` (same values for a seed on any device);
    a dynamic case's varying size replaced by `size`."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for shape, role in base_case(name)[1]:
        if size is not None:
            shape = tuple(size if d == DYNAMIC[name][1] else d for d in shape)
        shape = small_shape(shape) if small else shape
        t = torch.randn(shape, generator=gen, dtype=torch.float32)
        if role in ("q8", "qf8", "s"):
            out.append(_quantized(role, t).to(device))
            continue
        if role == "w":
            t = t / math.sqrt(shape[-1])
        elif role == "b":
            t = t * 0.1
        elif role == "g":
            t = 1.0 + 0.1 * t
        out.append(t.to(device=device, dtype=DTYPES[dtype]))
    return out

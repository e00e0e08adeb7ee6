# SPDX-License-Identifier: Apache-2.0
"""Numerics of emitted CUDA kernels without a GPU: f32 graphs (pointwise
chains with broadcasting, transposes, fills, column/multi-dim reductions,
row reductions and the fused softmax / layer_norm row groups with their
warp shuffles and barriers) are emulated on the CPU (cuda_host.py)
through their launch plan, GEMM steps included, and compared with eager."""
import math

import pytest
import torch

import kiln
import kiln.cuda._frontend as frontend
from cuda_host import compile_host, emulable, run
from cuda_helpers import requires_nvrtc

CASES = {
    "bias_gelu_chain": (lambda x, b: torch.nn.functional.gelu(x * 2.0 + b).relu() - 0.5,
                        [(64, 33), (33,)]),
    "column_sum_relu": (lambda x: (x.sum(0) * 0.5).relu(), [(37, 19)]),
    "middle_mean": (lambda x: x.mean(1), [(3, 9, 5)]),
    "amax_all_dims": (lambda x: x.amax(dim=(0, 1)), [(6, 7)]),
    "transpose_out": (lambda x: x.permute(2, 0, 1).contiguous() + 0.0, [(4, 5, 6)]),
    "linear_sigmoid": (lambda x, w, b: torch.sigmoid(x @ w.T + b), [(8, 16), (12, 16), (12,)]),
    "where_compare": (lambda x, y: torch.where(x > y, x - y, y * 3.0), [(5, 7), (7,)]),
    "softmax_rows": (lambda x: torch.softmax(x * 2.0, dim=-1), [(6, 200)]),
    "layer_norm": (lambda x, g, b: torch.nn.functional.layer_norm(x, (48,), g, b),
                   [(5, 48), (48,), (48,)]),
    "row_sum_max": (lambda x: (x.sum(-1), x.amax(-1)), [(9, 130)]),
    "bf16_gelu_softmax": (lambda x, b: torch.softmax(torch.nn.functional.gelu(x + b), dim=-1),
                          [(4, 64), (64,)], torch.bfloat16),
    "f16_layer_norm": (lambda x, g, b: torch.nn.functional.layer_norm(x, (40,), g, b),
                       [(3, 40), (40,), (40,)], torch.float16),
    "bf16_column_mean": (lambda x: x.mean(0) * 3.0, [(17, 12)], torch.bfloat16),
    "round_tan_atan": (lambda x: torch.atan(torch.tan(torch.round(x * 2.5))), [(6, 9)]),
    # One-pass row statistics (online softmax, Welford layer_norm) on hard
    # inputs: large magnitudes, -inf (masked) entries and fully masked rows.
    "softmax_large": (lambda x: torch.softmax(x * 1000.0 + 1.0e4, dim=-1), [(7, 300)]),
    "softmax_masked": (lambda x: torch.softmax(x, dim=-1), [(6, 257)]),
    "log_softmax_masked": (lambda x: torch.log_softmax(x, dim=-1), [(6, 100)]),
    "layer_norm_offset": (lambda x, g, b: torch.nn.functional.layer_norm(x, (700,), g, b),
                          [(5, 700), (700,), (700,)]),
    # 128-bit vectorized pointwise kernels: bias rows, per-row operands,
    # 16-bit storage (8 per access), mixed widths, a tail, an unaligned view.
    "vec_bias_relu": (lambda x, b: (x + b).relu() * 1.5, [(16, 64), (64,)]),
    "vec_per_row": (lambda x, m: x - m, [(12, 32), (12, 1)]),
    "vec_tail": (lambda x: torch.sigmoid(x) * x, [(1001,)]),
    "vec_unaligned_view": (lambda x, b: (x + b).relu(), [(16, 64), (64,)]),
    "vec_bf16_bias_gelu": (lambda x, b: torch.nn.functional.gelu(x + b), [(8, 128), (128,)],
                           torch.bfloat16),
    "vec_f16_widen": (lambda x: x.float() * 2.0, [(4, 64)], torch.float16),
    # GEMM epilogues: bias and bias + ReLU run as one torch.addmm /
    # torch._addmm_activation step; GELU keeps matmul + the kernel.
    "linear_bias": (lambda x, w, b: torch.nn.functional.linear(x, w, b), [(8, 16), (12, 16), (12,)]),
    "linear_relu": (lambda x, w, b: torch.relu(x @ w.T + b), [(8, 16), (12, 16), (12,)]),
    "linear_gelu": (lambda x, w, b: torch.nn.functional.gelu(x @ w + b), [(8, 16), (16, 12), (12,)]),
    # GPT-2's NewGELUActivation (tanh GELU spelled out): cuBLASLt's GELU_BIAS.
    "linear_gelu_new": (lambda x, w, b: _gelu_new(x @ w + b),
                        [(8, 16), (16, 12), (12,)]),
    "linear3d_gelu_new": (lambda x, w, b: _gelu_new(x @ w + b), [(2, 5, 16), (16, 12), (12,)]),
    "linear3d_bias": (lambda x, w, b: torch.nn.functional.linear(x, w, b),
                      [(3, 4, 16), (12, 16), (12,)]),
    # 16-bit tanh GELU chains: cuBLASLt's GELU_BIAS in the input type, one
    # rounding at the store (eager rounds after the linear and each op);
    # the erf GELU (nn.GELU's default, BERT's) keeps GEMM + its exact kernel.
    "bf16_linear_gelu_tanh": (lambda x, w, b: torch.nn.functional.gelu(
        torch.nn.functional.linear(x, w, b), approximate="tanh"),
        [(8, 16), (12, 16), (12,)], torch.bfloat16),
    "bf16_linear3d_gelu_new": (lambda x, w, b: _gelu_new(x @ w + b),
                               [(2, 5, 16), (16, 12), (12,)], torch.bfloat16),
    "f16_linear_gelu_new": (lambda x, w, b: _gelu_new(x @ w + b),
                            [(8, 16), (16, 12), (12,)], torch.float16),
    "bf16_linear_gelu_erf": (lambda x, w, b: torch.nn.functional.gelu(x @ w.T + b),
                             [(8, 16), (12, 16), (12,)], torch.bfloat16),
    # Two-output reductions (argmax/argmin: value and index; over rows one
    # block per row, else one thread per output): ties and NaN (the first
    # extreme / first NaN wins, as eager).
    "argmax_rows": (lambda x: x.argmax(-1), [(7, 33)]),
    "argmin_middle_keepdim": (lambda x: x.argmin(1, keepdim=True), [(3, 6, 5)]),
    "argmax_bf16_then_cast": (lambda x: x.argmax(0).float() * 2.0, [(9, 12)], torch.bfloat16),
    # Long rows: one block per row, threads' (value, index) pairs merged.
    "argmax_long_rows": (lambda x: x.argmax(-1), [(6, 1500)]),
    "argmin_long_rows_bf16": (lambda x: x.argmin(-1), [(5, 700)], torch.bfloat16),
    "attention": (lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) * 0.25, dim=-1) @ v,
                  [(2, 8, 16), (2, 8, 16), (2, 8, 16)]),
    # any()/all(): bool or/and combiners (a row block's warp shuffles, a
    # column's serial loop).
    "any_rows": (lambda x: (x > 2.8).any(-1), [(6, 300)]),
    "all_columns": (lambda x: (x > -2.3).all(0), [(40, 9)]),
}


def _gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3.0))))


def _masked(x):
    """-inf in a row's first half, every other entry, one entry; a fully
    masked row (NaN in eager) and one finite row."""
    x = x.clone()
    x[0, : x.shape[1] // 2] = float("-inf")
    x[1, ::2] = float("-inf")
    x[2, 0] = float("-inf")
    x[3, :] = float("-inf")
    x[4, -1] = float("-inf")
    return x


def _ties_and_nans(x, far=False):
    """Rows with equal maxima (the first wins), a NaN after the maximum,
    two NaNs (the first wins), all -inf, and a random row; `far`: the
    equal entries also far apart (other threads of a row's block) and a
    row whose maximum is its last element."""
    x = x.clone()
    x[0, 3] = x[0, 20] = 100.0
    x[1, 5], x[1, 9] = 100.0, float("nan")
    x[2, 4] = x[2, 30] = float("nan")
    x[3, :] = float("-inf")
    if far:
        x[0, 700] = x[0, 1400] = 100.0
        x[2, 1000] = float("nan")
        x[4, 1201] = x[4, 77] = 50.0
        x[5, -1] = 1000.0
    return x


def _unaligned(x):
    """A contiguous view starting 4 bytes into its storage (the kernels'
    vector path needs 16-byte aligned pointers: this takes the scalar one)."""
    flat = torch.empty(x.numel() + 1, dtype=x.dtype)
    view = flat[1:].view(x.shape)
    view.copy_(x)
    assert view.is_contiguous() and view.data_ptr() % 16 != 0
    return view


# name -> inputs from the randn tensors, and its f32 tolerance (default 1e-5).
INPUTS = {
    "softmax_masked": lambda x: [_masked(x)],
    "log_softmax_masked": lambda x: [_masked(x)],
    "layer_norm_offset": lambda x, g, b: [x * 3.0 + 100.0, g, b],
    "vec_unaligned_view": lambda x, b: [_unaligned(x), b],
    "argmax_rows": lambda x: [_ties_and_nans(x)],
    "argmin_middle_keepdim": lambda x: [x.round()],  # many ties
    "argmax_bf16_then_cast": lambda x: [x.round()],
    "argmax_long_rows": lambda x: [_ties_and_nans(x, far=True)],
    "argmin_long_rows_bf16": lambda x: [x.round()],  # ties between threads
}
TOLERANCE = {"layer_norm_offset": 1e-4, "softmax_large": 1e-4}


@requires_nvrtc
@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_kernels_match_eager(name, tmp_path):
    fn, shapes, *dtype = CASES[name]
    dtype = dtype[0] if dtype else torch.float32
    compiled = kiln.compile(fn)
    meta = [torch.empty(s, device="meta", dtype=dtype) for s in shapes]
    before = frontend.compiled[-1] if frontend.compiled else None
    compiled(*meta)  # the CUDA path (dry run) builds the graph
    assert kiln.stats()["graphs_compiled"] == 1 and kiln.stats()["graph_breaks"] == 0
    graph = frontend.compiled[-1]
    assert graph is not before
    emitted = {"source": graph.source, "kernels": [k for kind, ks in graph.steps
                                                   if kind == "kernels" for k in ks]}
    assert emulable(emitted)
    if name.startswith("vec_"):
        assert "per thread (128-bit accesses)" in graph.source
    epilogues = [item["epilogue"] for kind, item in graph.steps if kind == "gemm"]
    expected_epilogue = {"linear_bias": ["bias"], "linear_relu": ["bias_relu"],
                         "linear_gelu_new": ["bias_gelu_tanh"],
                         "linear3d_gelu_new": ["bias_gelu_tanh"], "linear3d_bias": ["bias"],
                         "linear_gelu": ["none"], "linear_sigmoid": ["none"],
                         "bf16_linear_gelu_tanh": ["bias_gelu_tanh"],
                         "bf16_linear3d_gelu_new": ["bias_gelu_tanh"],
                         "f16_linear_gelu_new": ["bias_gelu_tanh"],
                         "bf16_linear_gelu_erf": ["none"]}
    if name in expected_epilogue:
        assert epilogues == expected_epilogue[name]
        assert bool(emitted["kernels"]) == (epilogues == ["none"])
    lib = compile_host(emitted, tmp_path)
    if lib is None:
        pytest.skip("no host C++ compiler")
    inputs = [torch.randn(s).to(dtype) for s in shapes]
    if name in INPUTS:
        inputs = INPUTS[name](*inputs)
    got = run(graph, lib, inputs)
    expected = fn(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected)
    # f32: the same math in another order; 16-bit: eager rounds each op,
    # kiln's fused kernels round once at the store (a few ulps apart).
    tol = {torch.float32: TOLERANCE.get(name, 1e-5), torch.float16: 4e-3,
           torch.bfloat16: 3e-2}[dtype]
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=tol, atol=tol, equal_nan=True)

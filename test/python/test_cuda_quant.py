# SPDX-License-Identifier: Apache-2.0
"""int8 layers on kiln's CUDA path (issue 19): kiln.quant's q/dq IR folded
into kiln.qlinear and lowered (codegen/common/Quant.cpp) to a quantize
kernel, an int8 x int8 -> int32 GEMM run by cuBLASLt (CUDA_R_8I,
CUBLAS_COMPUTE_32I, "TN") and an epilogue kernel; NVRTC compiles the
kernels, and without a GPU they run on the host (cuda_host.py) with the
GEMM through torch and, in the plan executor, through the fake cuBLASLt,
which refuses int8 calls cuBLASLt would refuse. Results are compared with
the CPU path (the same integers, the same f32 epilogue) and with kiln.quant's
eager reference."""
import os
import tempfile

import pytest
import torch

import kiln
import kiln.cuda
from conftest import stats
from cuda_helpers import requires_nvrtc
from kiln.cuda import nvrtc
from kiln.quant import _ops
from kiln.quant._modules import quantize_weight


def dynamic_mlp(x, qw1, s1, b1, qw2, s2, b2):
    h = _ops.linear_int8(x, qw1, s1, b1, "per_token")
    return _ops.linear_int8(torch.relu(h), qw2, s2, b2, "per_tensor")


def static_then_weight_only(x, qw1, s1, b1, qw2, s2):
    h = _ops.linear_static_int8(x, qw1, s1, b1, 0.05, 120)
    return _ops.linear_int8(torch.tanh(h), qw2, s2, None, "none")


def _layer(n, k, seed):
    g = torch.Generator().manual_seed(seed)
    q, scale = quantize_weight(torch.randn(n, k, generator=g) / k ** 0.5)
    return q.contiguous().view(torch.int32), scale, 0.1 * torch.randn(n, generator=g)


def _inputs(fn):
    x = torch.randn(2, 8, 64, generator=torch.Generator().manual_seed(0))
    qw1, s1, b1 = _layer(96, 64, 1)
    qw2, s2, b2 = _layer(32, 96, 2)
    if fn is dynamic_mlp:
        return [x, qw1, s1, b1, qw2, s2, b2]
    return [x, qw1, s1, b1, qw2, s2]


def _capture(fn, inputs):
    """The IR kiln captures for fn (one graph) and kiln's CPU result."""
    with tempfile.TemporaryDirectory() as d, kiln.config.patch(debug_dir=d):
        kiln.reset()
        got = kiln.compile(fn, fullgraph=True)(*inputs)
        (path,) = nvrtc.captured_files(d)
        with open(path, encoding="utf-8") as f:
            return f.read(), got


CASES = [dynamic_mlp, static_then_weight_only]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_int8_layers_emit_int8_gemms(fn):
    """Every op is emitted; each int8 layer is one int8 -> int32 GEMM step
    (the weight read as int8 through its int32 words), the weight-only one
    an f32 GEMM with the bias epilogue absent (no bias)."""
    ir, _ = _capture(fn, _inputs(fn))
    assert "kiln.int8_view" in ir and "kiln.dequantize" in ir
    emitted = kiln.cuda.emit(ir, collect_unsupported=True)
    assert emitted["unsupported"] == []
    gemms = [(g["input_type"], g["output_type"]) for g in emitted["externs"]]
    if fn is dynamic_mlp:
        assert gemms == [("signed char", "int")] * 2
    else:
        assert gemms == [("signed char", "int"), ("float", "float")]


@requires_nvrtc
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_int8_kernels_compile_with_nvrtc(fn):
    ir, _ = _capture(fn, _inputs(fn))
    for arch in (80, 90):
        assert nvrtc.compile_source(kiln.cuda.emit(ir)["source"], arch)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_host_emulation_matches_the_cpu_path(fn, tmp_path):
    """The emitted kernels on the host, GEMMs through torch: the CPU path's
    values (same integer products and epilogue order; 1e-5 allows an FMA
    contraction) and the eager reference's within int8 rounding."""
    from cuda_host import compile_host, run
    inputs = _inputs(fn)
    ir, cpu = _capture(fn, inputs)
    emitted = kiln.cuda.emit(ir)
    lib = compile_host(emitted, tmp_path)
    if lib is None:
        pytest.skip("no C++ compiler for the host kernels")
    graph = kiln.cuda.CudaGraph(emitted)
    (got,) = run(graph, lib, inputs)
    torch.testing.assert_close(got, cpu, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got, fn(*inputs), rtol=1e-4, atol=1e-4)


@requires_nvrtc
def test_plan_runs_int8_gemms_through_cublaslt(tmp_path):
    """The C++ plan executor's int8 GEMMs as cuBLASLt calls (fake cuBLASLt:
    int32 compute 72, "TN", exact integer sums): the CPU path's values."""
    from test_cuda_plan import emulate
    inputs = _inputs(dynamic_mlp)
    ir, cpu = _capture(dynamic_mlp, inputs)
    path = tmp_path / "graph.mlir"
    path.write_text(ir)
    torch.save({"inputs": inputs, "cpu": cpu}, tmp_path / "data.pt")
    out, log = emulate(tmp_path, f"""
        import torch, kiln.cuda
        data = torch.load({str(tmp_path / 'data.pt')!r})
        g = kiln.cuda.compile_ir(open({str(path)!r}).read())
        (got,) = g.run_on(data["inputs"], torch.device("cpu"), 0, 0)
        torch.testing.assert_close(got, data["cpu"], rtol=1e-5, atol=1e-5)
        print(g.executor)
        """, host_ir=ir)
    assert out.split() == ["plan"]
    int8 = [line for line in log if line.startswith("gemm compute=72 op=TN epilogue=1")]
    assert len(int8) == 2, log


def test_lowering_refuses_what_cublaslt_cannot_run():
    """cuBLASLt's int8 GEMM needs N a multiple of 4: such a layer is named
    as unsupported (its graph falls back) rather than emitted wrongly."""
    x = torch.randn(4, 16)
    qw, s, b = _layer(6, 16, 3)
    ir, _ = _capture(lambda x, qw, s, b: _ops.linear_int8(x, qw, s, b), [x, qw, s, b])
    emitted = kiln.cuda.emit(ir, collect_unsupported=True)
    reasons = [u["reason"] for u in emitted["unsupported"]]
    assert any("multiples of 4" in r for r in reasons), reasons


def test_quantized_model_on_meta_is_one_cuda_graph():
    """kiln.quant.prepare'd model moved to `meta` (the dry run of a CUDA
    device): one graph on the CUDA path, no eager fallback."""
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),
                                torch.nn.Linear(128, 32))
    prepared = kiln.quant.prepare(model, kiln.quant.dynamic_int8()).to("meta")
    kiln.reset()
    y = kiln.compile(prepared)(torch.empty(4, 64, device="meta"))
    assert y.shape == (4, 32) and y.device.type == "meta"
    s = stats()
    assert s["graphs_compiled"] == 1 and s["eager_calls"] == 0, s
    assert s.get("fallback_ops", 0) == 0, s

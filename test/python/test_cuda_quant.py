# SPDX-License-Identifier: Apache-2.0
"""int8 and fp8 layers on kiln's CUDA path (issue 19): kiln.quant's q/dq IR folded
into kiln.qlinear and lowered (codegen/common/Quant.cpp) to a quantize
kernel, an int8 x int8 -> int32 GEMM run by cuBLASLt (CUDA_R_8I,
CUBLAS_COMPUTE_32I, "TN") and an epilogue kernel; NVRTC compiles the
kernels, and without a GPU they run on the host (cuda_host.py) with the
GEMM through torch and, in the plan executor, through the fake cuBLASLt,
which refuses int8/fp8 calls cuBLASLt would refuse. int8 results are
compared with the CPU path (the same integers, the same f32 epilogue) and
with kiln.quant's eager reference; fp8 layers (kiln.quant.fp8(), CUDA only:
captured on `meta`, the dry run of a CUDA device) with the eager reference
(`kiln.quant._ops.linear_fp8`, torch's float8_e4m3fn rounding)."""
import os
import tempfile

import pytest
import torch

import kiln
import kiln.cuda
from conftest import stats
from cuda_helpers import nvrtc_available, requires_nvrtc
from kiln.cuda import nvrtc
from kiln.quant import _ops
from kiln.quant._modules import QuantizedLinearFP8, quantize_weight


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


def _capture(fn, inputs, device="cpu"):
    """The IR kiln captures for fn (one graph) on `device` and kiln's result."""
    with tempfile.TemporaryDirectory() as d, kiln.config.patch(debug_dir=d):
        kiln.reset()
        got = kiln.compile(fn, fullgraph=True)(*[t.to(device) for t in inputs])
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


# --- fp8 ---------------------------------------------------------------------


def fp8_layer(x, qw, s, b):
    return _ops.linear_fp8(x, qw, s, b, "per_token")


def fp8_mlp(x, qw1, s1, b1, qw2, s2, b2):
    h = _ops.linear_fp8(x, qw1, s1, b1, "per_token")
    return _ops.linear_fp8(torch.relu(h), qw2, s2, b2, "per_tensor")


def _fp8_layer(n, k, seed):
    g = torch.Generator().manual_seed(seed)
    linear = torch.nn.Linear(k, n)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(n, k, generator=g) / k ** 0.5)
        linear.bias.copy_(0.1 * torch.randn(n, generator=g))
    q = QuantizedLinearFP8.from_float(linear)
    return [q.qweight, q.weight_scale, q.bias]


def _fp8_inputs(fn):
    x = torch.randn(2, 8, 64, generator=torch.Generator().manual_seed(0))
    first = [x, *_fp8_layer(96, 64, 1)]
    return first if fn is fp8_layer else first + _fp8_layer(32, 96, 2)


@pytest.mark.parametrize("fn", [fp8_layer, fp8_mlp], ids=lambda f: f.__name__)
def test_fp8_layers_emit_fp8_gemms(fn):
    """On a CUDA (meta) graph each fp8 layer is one kiln.qlinear on a
    kiln.fp8_view, emitted as an e4m3 x e4m3 -> f32 GEMM reading the weight's
    int32 words directly (no unpacking kernel)."""
    ir, _ = _capture(fn, _fp8_inputs(fn), "meta")
    assert "kiln.fp8_view" in ir and "f8E4M3FN" in ir
    emitted = kiln.cuda.emit(ir, collect_unsupported=True)
    assert emitted["unsupported"] == []
    gemms = [(g["input_type"], g["output_type"], g["args"][1]) for g in emitted["externs"]]
    assert gemms == [("__nv_fp8_e4m3", "float", "arg1"), ("__nv_fp8_e4m3", "float", "arg4")][
        :len(gemms)] and len(gemms) == (1 if fn is fp8_layer else 2)


@requires_nvrtc
def test_fp8_kernels_compile_with_nvrtc():
    ir, _ = _capture(fp8_mlp, _fp8_inputs(fp8_mlp), "meta")
    source = kiln.cuda.emit(ir)["source"]
    assert "#include <cuda_fp8.h>" in source
    for arch in (80, 90):
        assert nvrtc.compile_source(source, arch)


def test_fp8_host_emulation_matches_the_reference(tmp_path):
    """One layer: the emitted kernels (e4m3 rounding as torch's) and an f32
    GEMM give the reference to f32 rounding. Two layers: the first layer's
    f32 roundoff may move the second's e4m3 rounding of an element by one
    step (1/16 of it), so only within fp8's resolution."""
    from cuda_host import compile_host, run
    for fn, tol in ((fp8_layer, 1e-5), (fp8_mlp, 1e-2)):
        inputs = _fp8_inputs(fn)
        ir, _ = _capture(fn, inputs, "meta")
        emitted = kiln.cuda.emit(ir)
        (tmp_path / fn.__name__).mkdir()
        lib = compile_host(emitted, tmp_path / fn.__name__)
        if lib is None:
            pytest.skip("no C++ compiler for the host kernels")
        (got,) = run(kiln.cuda.CudaGraph(emitted), lib, inputs)
        ref = fn(*inputs)
        assert (got - ref).abs().max() <= tol * ref.abs().max(), fn.__name__


@requires_nvrtc
def test_plan_runs_fp8_gemms_through_cublaslt(tmp_path):
    """The C++ plan executor's fp8 GEMMs as cuBLASLt calls (fake cuBLASLt:
    e4m3 operands, f32 compute 68, "TN")."""
    from test_cuda_plan import emulate
    inputs = _fp8_inputs(fp8_layer)
    ir, _ = _capture(fp8_layer, inputs, "meta")
    path = tmp_path / "graph.mlir"
    path.write_text(ir)
    torch.save({"inputs": inputs, "ref": fp8_layer(*inputs)}, tmp_path / "data.pt")
    out, log = emulate(tmp_path, f"""
        import torch, kiln.cuda
        data = torch.load({str(tmp_path / 'data.pt')!r})
        g = kiln.cuda.compile_ir(open({str(path)!r}).read())
        (got,) = g.run_on(data["inputs"], torch.device("cpu"), 0, 0)
        torch.testing.assert_close(got, data["ref"], rtol=1e-5, atol=1e-5)
        print(g.executor)
        """, host_ir=ir)
    assert out.split() == ["plan"]
    assert sum(line.startswith("gemm compute=68 op=TN epilogue=1") for line in log) == 1, log


def test_fp8_on_cpu_runs_the_eager_reference():
    """An fp8 model compiled on the CPU: its fp8 layers run their eager
    reference (per-op fallback naming why), the rest compiled; eager's values."""
    model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.ReLU(), torch.nn.Linear(96, 32))
    prepared = kiln.quant.prepare(model, kiln.quant.fp8())
    assert isinstance(prepared[0], QuantizedLinearFP8)
    x = torch.randn(4, 64)
    kiln.reset()
    got = kiln.compile(prepared)(x)
    torch.testing.assert_close(got, prepared(x), rtol=0, atol=0)
    assert stats()["fallback_ops"] >= 2


def test_fp8_layer_accuracy_and_meta_graph():
    """fp8 (3 mantissa bits) keeps a random layer's output within ~30 dB
    SQNR of fp32; the prepared model on `meta` is one CUDA graph."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                torch.nn.Linear(512, 128))
    x = torch.randn(16, 256)
    for act in ("per_token", "per_tensor"):
        prepared = kiln.quant.prepare(model, kiln.quant.fp8(activations=act))
        with torch.no_grad():
            ref, got = model(x), prepared(x)
        sqnr = 10 * torch.log10(ref.pow(2).mean() / (ref - got).pow(2).mean())
        assert sqnr > 25, (act, float(sqnr))
        meta = prepared.to("meta")
        kiln.reset()
        y = kiln.compile(meta)(torch.empty(16, 256, device="meta"))
        assert y.shape == (16, 128)
        s = stats()
        assert s["graphs_compiled"] == 1 and s["eager_calls"] == 0 and s["fallback_ops"] == 0, s


def test_fp8_gemm_shape_limits_are_named():
    """cuBLASLt's fp8 GEMM needs K and N multiples of 16: N = 8 is named as
    unsupported (the graph falls back) rather than emitted wrongly."""
    inputs = [torch.randn(4, 64), *_fp8_layer(8, 64, 3)]
    with tempfile.TemporaryDirectory() as d, kiln.config.patch(debug_dir=d):
        kiln.reset()
        kiln.compile(fp8_layer)(*[t.to("meta") for t in inputs])  # falls back: unsupported
        (path,) = nvrtc.captured_files(d)
        ir = open(path, encoding="utf-8").read()
    reasons = [u["reason"] for u in kiln.cuda.emit(ir, collect_unsupported=True)["unsupported"]]
    assert any("fp8 GEMM needs both multiples of 16" in r for r in reasons), reasons


# --- dynamic lengths ---------------------------------------------------------


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_int8_layers_keep_one_symbolic_graph_on_cpu(fn):
    """A changing sequence length: one `?` graph after the first (the
    quantization ops carry their input's symbolic dims), each call equal
    to the eager reference. They specialized every length before."""
    base = _inputs(fn)
    kiln.reset()
    compiled = kiln.compile(fn)
    for length in (5, 9, 17, 33):
        x = torch.randn(2, length, 64)
        torch.testing.assert_close(compiled(x, *base[1:]), fn(x, *base[1:]), rtol=1e-5,
                                   atol=1e-5)
    s = stats()
    assert (s["graphs_compiled"], s["dynamic_graphs"], s["eager_calls"]) == (2, 1, 0), s


@pytest.mark.parametrize("fn", [dynamic_mlp, static_then_weight_only, fp8_mlp],
                         ids=lambda f: f.__name__)
def test_symbolic_int8_and_fp8_graphs_on_cuda_host_emulation(fn, tmp_path):
    """The `?` graph emitted for CUDA (quantize kernels over a symbolic
    number of rows, GEMMs with a per-call M) at two lengths: int8 equal to
    the reference (to f32 rounding), fp8 within its resolution."""
    from cuda_host import compile_host, run
    base = (_fp8_inputs if fn is fp8_mlp else _inputs)(fn)
    device = "meta" if fn is fp8_mlp else "cpu"
    with tempfile.TemporaryDirectory() as d, kiln.config.patch(debug_dir=d):
        kiln.reset()
        args = [t.to(device) for t in base]
        kiln.mark_dynamic(args[0], 1)
        kiln.compile(fn)(*args)
        irs = [open(p, encoding="utf-8").read() for p in nvrtc.captured_files(d)]
    (ir,) = [i for i in irs if "?" in i]
    emitted = kiln.cuda.emit(ir, collect_unsupported=True)
    assert emitted["unsupported"] == []
    lib = compile_host(emitted, tmp_path)
    if lib is None:
        pytest.skip("no C++ compiler for the host kernels")
    graph = kiln.cuda.CudaGraph(emitted)
    tol = 1e-2 if fn is fp8_mlp else 1e-6
    for length in (5, 11):
        inputs = [torch.randn(2, length, 64)] + base[1:]
        (got,) = run(graph, lib, inputs)
        ref = fn(*inputs)
        assert (got - ref).abs().max() <= tol * ref.abs().max(), length


# --- int4 (weight-only, grouped) ------------------------------------------------


def int4_layer(x, qw, s, b):
    return _ops.linear_int4(x, qw, s, b, 32)


def test_int4_weight_only_on_cuda_host_emulation(tmp_path):
    """A weight_only_int4 layer (groups of 32) for CUDA: the nibbles unpacked
    by a kernel, each scaled by its group's scale, an f32 GEMM; equal to
    the CPU path and the eager reference to f32 rounding."""
    from cuda_host import compile_host, run
    from kiln.quant._modules import QuantizedLinearInt4
    torch.manual_seed(0)
    q = QuantizedLinearInt4.from_float(torch.nn.Linear(64, 48), 32)
    inputs = [torch.randn(2, 8, 64), q.qweight, q.weight_scale, q.bias]
    ir, cpu = _capture(int4_layer, inputs)
    assert "kiln.int4_view" in ir
    emitted = kiln.cuda.emit(ir, collect_unsupported=True)
    assert emitted["unsupported"] == []
    assert [(g["input_type"], g["output_type"]) for g in emitted["externs"]] == [("float", "float")]
    if nvrtc_available():
        assert nvrtc.compile_source(emitted["source"], 90)
    lib = compile_host(emitted, tmp_path)
    if lib is None:
        pytest.skip("no C++ compiler for the host kernels")
    (got,) = run(kiln.cuda.CudaGraph(emitted), lib, inputs)
    torch.testing.assert_close(got, cpu, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got, int4_layer(*inputs), rtol=1e-5, atol=1e-5)

# SPDX-License-Identifier: Apache-2.0
"""kiln.compile on CUDA tensors: the frame hook sends graphs whose inputs
are all on a CUDA device to the CUDA backend (frontend/csrc/CudaEntry.cpp,
kiln/cuda/_frontend.py). Without a GPU the same path runs on `meta`
tensors as a dry run (kernels planned, GEMMs shape-checked, results are
meta tensors), which is what these tests check, together with the device
guard and the fallbacks; execution on a GPU is the `cuda`-marked test.
"""
import pytest
import torch
from torch import nn

import kiln
import kiln.cuda._frontend as frontend
from conftest import assert_compiled, stats
from cuda_helpers import requires_nvrtc


def _mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8)).eval()


@requires_nvrtc
def test_meta_model_compiles_to_a_cuda_plan():
    model = _mlp().to("meta")
    compiled = kiln.compile(model)
    x = torch.empty(4, 16, device="meta")
    with torch.no_grad():
        y = compiled(x)
        expected = model(x)
    assert y.device.type == "meta" and y.shape == expected.shape and y.dtype == expected.dtype
    assert_compiled(graphs=1, calls=1)
    graph = frontend.compiled[-1]
    # Linear + GELU: GEMM, then the bias + GELU kernel; the last Linear's
    # bias add is the second GEMM's epilogue (no kernel after it).
    assert [kind for kind, _ in graph.steps] == ["gemm", "kernels", "gemm"]
    assert [g["epilogue"] for kind, g in graph.steps if kind == "gemm"] == ["none", "bias"]
    # Parameters are graph inputs: x, weight, bias, weight, bias.
    assert len(graph.inputs) == 5


@requires_nvrtc
def test_softmax_function_on_meta_is_one_row_kernel():
    f = kiln.compile(lambda x: torch.softmax(x * 2.0, dim=-1))
    y = f(torch.empty(8, 100, device="meta"))
    assert y.shape == (8, 100) and y.device.type == "meta"
    graph = frontend.compiled[-1]
    assert graph.kernel_names == ["forward_k0"]
    (kind, (k,)), = graph.steps
    assert k["kind"] == "row_reduction" and k["grid"] == 8
    assert_compiled(graphs=1, calls=1)


@requires_nvrtc
def test_device_is_guarded_cpu_and_meta_get_their_own_entries():
    f = kiln.compile(lambda x: (x + 1.0).relu())
    x = torch.randn(4, 8)
    torch.testing.assert_close(f(x), (x + 1.0).relu())
    frontend.compiled.clear()  # a bounded deque: count from empty
    y = f(torch.empty(4, 8, device="meta"))  # same dtype/shape/strides, other device
    assert y.device.type == "meta"
    assert len(frontend.compiled) == 1
    torch.testing.assert_close(f(x), (x + 1.0).relu())  # the CPU entry again
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1 and s["graph_breaks"] == 0


def _device_facts(x):
    return x + 1.0, x.device, x.is_cuda, x.is_meta


@requires_nvrtc
def test_device_attributes_are_the_inputs_device():
    f = kiln.compile(_device_facts)
    for device in ("meta", "cpu"):
        x = torch.empty(4, device=device)
        assert f(x)[1:] == _device_facts(x)[1:]
    s = stats()
    assert s["graphs_compiled"] == 2 and s["graph_breaks"] == 0, s


@requires_nvrtc
def test_mixed_devices_run_eagerly_like_eager():
    f = kiln.compile(lambda a, b: a + b)
    with pytest.raises(RuntimeError, match="not on the expected device"):
        f(torch.ones(3), torch.empty(3, device="meta"))
    assert stats()["graphs_compiled"] == 0 and stats()["graph_breaks"] == 1


@requires_nvrtc
def test_op_without_cuda_kernel_falls_back_with_reason(capfd):
    # A constant table with an infinity: the emitter has no initializer for
    # it (a `__device__` array of bit-pattern literals), so the frame runs
    # eagerly with the emitter's reason.
    def fn(x):
        return (x + torch.tensor([float("inf"), 1.0, 2.0, 3.0], device=x.device)) * 2.0
    with kiln.config.patch(logs=frozenset({"graph_breaks"})):
        y = kiln.compile(fn)(torch.empty(8, 4, device="meta"))
    assert y.shape == (8, 4) and y.device.type == "meta"
    assert stats()["graph_breaks"] >= 1 and stats()["eager_calls"] >= 1
    err = capfd.readouterr().err
    assert "CUDA backend: CudaUnsupportedError" in err
    assert "a constant tensor with non-finite or unsupported elements" in err


@pytest.mark.cuda
@pytest.mark.skipif("not __import__('cuda_helpers').gpu_available()",
                    reason="needs a CUDA GPU and driver")
@requires_nvrtc
def test_mlp_on_gpu_matches_eager():
    model = _mlp().cuda()
    compiled = kiln.compile(model)
    x = torch.randn(4, 16, device="cuda")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert_compiled(graphs=1, calls=2)

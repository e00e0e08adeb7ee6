# SPDX-License-Identifier: Apache-2.0
"""Dynamic (`?`) dims as CUDA kernel arguments (codegen/cuda/CudaSymbolic.cpp,
kiln/cuda/symbolic.py) without a GPU: one emitted module (one source, so one
cubin per arch) for pointwise, broadcast, row-reduction, softmax and bf16
layer_norm functions over `?` shapes compiles with NVRTC for sm_80 and
sm_90, and ONE CudaGraph per function runs at three sizes in host emulation
(cuda_host.py), each equal to eager; the C++ plan executor (runtime/cuda
Plan, fake driver) runs it with the sizes as `val` slots; inconsistent
sizes are an error, and ops the dynamic path cannot emit stay refused."""
import pytest
import torch

import kiln.cuda
from cuda_helpers import requires_nvrtc
from kiln.cuda import symbolic
from kiln.cuda.graph import CudaGraph, CudaUnsupportedError
from kiln.cuda.plan import build_spec
from test_cuda_plan import emulate

IR = """
func.func @bias_exp(%x: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.add %x, %b : tensor<?x8xf32>, tensor<8xf32>
  %1 = kiln.exp %0 : tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}
func.func @add2(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.add %x, %y : tensor<?x?xf32>, tensor<?x?xf32>
  %1 = kiln.relu %0 : tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}
func.func @row_sum(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  %0 = kiln.sum %x {dims = array<i64: 1>} : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @layer_norm(%x: tensor<?x?x96xbf16>, %g: tensor<96xbf16>, %b: tensor<96xbf16>)
    -> tensor<?x?x96xbf16> {
  %0 = kiln.layer_norm %x weight %g bias %b {num_dims = 1 : i64}
    : tensor<?x?x96xbf16>, tensor<96xbf16>, tensor<96xbf16>
  return %0 : tensor<?x?x96xbf16>
}
"""


def _layer_norm(x, g, b):
    return torch.nn.functional.layer_norm(x, (96,), g, b)


# name -> (eager, inputs for size n, tolerance)
CASES = {
    "bias_exp": (lambda x, b: torch.exp(x + b), lambda n: [torch.randn(n, 8), torch.randn(8)],
                 1e-5),
    "add2": (lambda x, y: torch.relu(x + y),
             lambda n: [torch.randn(n, n + 3), torch.randn(n, n + 3)], 1e-6),
    "row_sum": (lambda x: x.sum(1), lambda n: [torch.randn(n, 130 * n + 1)], 1e-4),
    "softmax": (lambda x: torch.softmax(x, 1), lambda n: [torch.randn(n, 2 * n + 5)], 1e-5),
    "layer_norm": (_layer_norm, lambda n: [torch.randn(n, n + 1, 96).bfloat16(),
                                           torch.randn(96).bfloat16(),
                                           torch.randn(96).bfloat16()], 3e-2),
}
# Sizes: one row, a few, and more elements than one pointwise block's 256
# threads (row_sum's rows of 5201: the row block at its cap of 1024). Small:
# the host runs each row block's threads as std::threads.
SIZES = (1, 7, 40)


@pytest.fixture(scope="module")
def emitted():
    return kiln.cuda.emit("module {\n" + IR + "\n}")


@pytest.fixture(scope="module")
def host_lib(emitted, tmp_path_factory):
    from cuda_host import compile_host
    lib = compile_host(emitted, tmp_path_factory.mktemp("dynamic"))
    if lib is None:
        pytest.skip("no host C++ compiler")
    return lib


def test_kernels_take_the_sizes(emitted):
    fns = {f["name"]: f for f in emitted["functions"]}
    assert fns["bias_exp"]["symbols"] == [(0, 0)]
    assert fns["add2"]["constraints"] == [("s0", "s2"), ("s1", "s3")]
    assert fns["layer_norm"]["result_dims"] == [["s0", "s1", "96"]]
    for k in emitted["kernels"]:
        if k["function"] == "bias_exp":
            assert (k["symbols"], k["work"], k["grid"]) == (1, "s0 * 8", 0)
            assert "long long s0)" in emitted["source"]
        if k["function"] == "row_sum":
            assert (k["work"], k["row_length"]) == ("s0", "s1")
    assert "128-bit" not in emitted["source"]  # scalar loads with symbolic extents


@requires_nvrtc
def test_one_source_compiles_for_sm80_and_sm90(emitted):
    from kiln.cuda.nvrtc import compile_source
    for arch in (80, 90):
        image = compile_source(emitted["source"], arch)
        for k in emitted["kernels"]:
            assert k["name"].encode() in image


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_plan_runs_every_size(name, emitted, host_lib):
    from cuda_host import run
    fn, make, tol = CASES[name]
    graph = CudaGraph(emitted, name)
    torch.manual_seed(0)
    for n in SIZES:
        inputs = make(n)
        (got,) = run(graph, host_lib, inputs)
        torch.testing.assert_close(got, fn(*inputs), rtol=tol, atol=tol)
    # One plan per distinct sizes, all from the one source / image set.
    assert len(graph._specialized) == len(SIZES)
    for g in graph._specialized.values():
        assert g.source is graph.source and g.images is graph.images
        assert all(k["scalars"] for kind, ks in g.steps if kind == "kernels" for k in ks)


def test_launch_rules_per_call(emitted):
    graph = CudaGraph(emitted, "row_sum")
    for rows, length, block in ((3, 10, 32), (70000, 5000, 1024), (2, 300, 128)):
        steps, (out,) = graph.launches(torch.empty(rows, length, device="meta"))
        (k,) = steps
        assert (k["grid"], k["block"]) == (min(rows, 65535), block)
        assert k["scalars"] == [rows, length] and out.shape == (rows,)
    steps, _ = CudaGraph(emitted, "bias_exp").launches(torch.empty(5000, 8, device="meta"),
                                                       torch.empty(8, device="meta"))
    assert (steps[0]["grid"], steps[0]["block"]) == (symbolic.pointwise_grid(40000), 256) == (157, 256)


def test_inconsistent_sizes_are_an_error(emitted):
    graph = CudaGraph(emitted, "add2")
    with pytest.raises(ValueError, match="sizes s1 and s3 must be equal"):
        graph.launches(torch.empty(4, 5, device="meta"), torch.empty(4, 6, device="meta"))


def test_plan_spec_passes_sizes_as_values(emitted):
    graph = CudaGraph(emitted, "row_sum").specialize([torch.empty(9, 130, device="meta")])
    spec, _ = build_spec(graph, {"float": torch.float32}, tf32=False)
    lines = spec.splitlines()
    assert lines[0] == "kiln-plan 1 4 1 1"  # 2 buffers + 2 values
    assert "buf 2 val 9" in lines and "buf 3 val 130" in lines
    assert lines[-1] == "kernel row_sum_k0 9 1 1 64 1 1 0 4 0 1 2 3"


@requires_nvrtc
def test_plan_executor_runs_several_sizes(tmp_path):
    """runtime/cuda's Plan (one C call) on the fake driver, host kernels."""
    ir = "module {\n" + IR + "\n}"
    out, log = emulate(tmp_path, f"""
        import torch, kiln.cuda
        g = kiln.cuda.compile_ir({ir!r}, "softmax")
        for n in (3, 50, 2):
            x = torch.randn(n, 2 * n + 1)
            (got,) = g.run_on([x], x.device, 0, 0)
            torch.testing.assert_close(got, torch.softmax(x, 1), rtol=1e-5, atol=1e-6)
        print(sorted(g._specialized), g.executor)
    """, host_ir=ir)
    assert out.strip() == "[(2, 5), (3, 7), (50, 101)] plan"
    launches = [line for line in log if line.startswith("launch softmax_k0")]
    assert [line.split()[2] for line in launches] == ["grid=3,1,1", "grid=50,1,1", "grid=2,1,1"]


def test_gemm_with_a_symbolic_dim_is_refused():
    ir = """func.func @forward(%x: tensor<?x16xf32>, %w: tensor<16x32xf32>) -> tensor<?x32xf32> {
      %0 = kiln.matmul %x, %w : tensor<?x16xf32>, tensor<16x32xf32>
      return %0 : tensor<?x32xf32>
    }"""
    with pytest.raises(CudaUnsupportedError, match="'linalg.matmul' with dynamic shapes"):
        kiln.cuda.compile_ir(ir)


def _dynamic_log(fn, shapes_per_call):
    """Calls kiln.compile(fn, dynamic=True) on meta inputs of each shape
    list; returns (results, the dynamic channel's log)."""
    logs = []
    kiln._C.set_log_sink(lambda ch, msg: logs.append(msg))
    try:
        with kiln.config.patch(logs=frozenset({"dynamic"})):
            f = kiln.compile(fn, dynamic=True)
            results = [f(*[torch.empty(s, device="meta") for s in shapes])
                       for shapes in shapes_per_call]
    finally:
        kiln._C.set_log_sink(None)
    return results, logs


@requires_nvrtc
def test_frontend_compiles_a_dynamic_graph_once():
    """kiln.compile(dynamic=True) on meta: one `?` graph for every size."""
    import kiln.cuda._frontend as frontend
    from conftest import stats

    def fn(x, b):
        return torch.softmax(torch.exp(x + b) * 0.5, dim=-1)

    calls = [[(n, 24), (24,)] for n in (4, 9, 33)]
    results, logs = _dynamic_log(fn, calls)
    assert [tuple(r.shape) for r in results] == [(4, 24), (9, 24), (33, 24)]
    s = stats()
    assert (s["graphs_compiled"], s["dynamic_graphs"], s["dynamic_specialized"]) == (1, 1, 0)
    assert s["compiled_calls"] == 3 and not logs
    graph = frontend.compiled[-1]
    assert graph.symbols and sorted(graph._specialized) == [(4, 24, 24), (9, 24, 24),
                                                            (33, 24, 24)]


@requires_nvrtc
def test_frontend_specializes_a_dynamic_gemm_with_the_reason():
    results, logs = _dynamic_log(lambda x, w: torch.relu(x @ w),
                                 [[(4, 8), (8, 5)], [(9, 8), (8, 5)]])
    assert [tuple(r.shape) for r in results] == [(4, 5), (9, 5)]
    assert kiln.stats()["dynamic_specialized"] >= 1
    assert any("sizes specialized" in m and "'linalg.matmul' with dynamic shapes" in m
               for m in logs)

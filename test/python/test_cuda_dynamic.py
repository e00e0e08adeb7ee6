# SPDX-License-Identifier: Apache-2.0
"""Dynamic (`?`) dims as CUDA kernel arguments (codegen/cuda/CudaSymbolic.cpp,
kiln/cuda/symbolic.py) without a GPU: one emitted module (one source, so one
cubin per arch) for pointwise, broadcast, row-reduction, softmax, bf16
layer_norm, GEMM (sizes per call), transpose, column-sum, slice and concat
functions over `?` shapes compiles with NVRTC for sm_80 and
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
func.func @linear_relu(%x: tensor<?x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>)
    -> tensor<?x32xf32> {
  %t = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
  %0 = kiln.matmul %x, %t : tensor<?x16xf32>, tensor<16x32xf32>
  %1 = kiln.add %0, %b : tensor<?x32xf32>, tensor<32xf32>
  %2 = kiln.relu %1 : tensor<?x32xf32>
  return %2 : tensor<?x32xf32>
}
func.func @linear3d(%x: tensor<?x?x16xf32>, %w: tensor<16x24xf32>) -> tensor<?x?x24xf32> {
  %0 = kiln.matmul %x, %w : tensor<?x?x16xf32>, tensor<16x24xf32>
  %1 = kiln.tanh %0 : tensor<?x?x24xf32>
  return %1 : tensor<?x?x24xf32>
}
func.func @attention(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>)
    -> tensor<?x?x8xf32> {
  %kt = kiln.permute %k {dims = array<i64: 0, 2, 1>} : tensor<?x?x8xf32> -> tensor<?x8x?xf32>
  %s = kiln.matmul %q, %kt : tensor<?x?x8xf32>, tensor<?x8x?xf32>
  %p = kiln.softmax %s {dim = 2 : i64} : tensor<?x?x?xf32>
  %o = kiln.matmul %p, %v : tensor<?x?x?xf32>, tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}
func.func @heads(%x: tensor<?x?x4x8xf32>) -> tensor<?x4x?x8xf32> {
  %0 = kiln.permute %x {dims = array<i64: 0, 2, 1, 3>} : tensor<?x?x4x8xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}
func.func @col_sum(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  %0 = kiln.sum %x {dims = array<i64: 0>} : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @first_token(%x: tensor<?x?x8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.slice %x {end = array<i64: -1, 1, -1>, start = array<i64: 0, 0, 0>,
                      step = array<i64: 1, 1, 1>} : tensor<?x?x8xf32> -> tensor<?x1x8xf32>
  %1 = kiln.reshape %0 : tensor<?x1x8xf32> -> tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}
func.func @concat(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x16xf32> {
  %0 = kiln.concat %x, %y {dim = 1 : i64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}
func.func @prepend(%x: tensor<?x8xf32>, %y: tensor<1x8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.concat %y, %x {dim = 0 : i64} : tensor<1x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %1 = kiln.exp %0 : tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
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
    # GEMMs with symbolic M/N/K/batch (plus the epilogue and reshapes around
    # them), transposes, column sums, slices and concats over `?` dims.
    "linear_relu": (lambda x, w, b: torch.relu(x @ w.T + b),
                    lambda n: [torch.randn(n, 16), torch.randn(32, 16), torch.randn(32)], 1e-4),
    "linear3d": (lambda x, w: torch.tanh(x @ w),
                 lambda n: [torch.randn(n, n + 2, 16), torch.randn(16, 24)], 1e-4),
    "attention": (lambda q, k, v: torch.softmax(q @ k.transpose(1, 2), 2) @ v,
                  lambda n: [torch.randn(n + 1, n, 8) for _ in range(3)], 1e-4),
    "heads": (lambda x: x.permute(0, 2, 1, 3), lambda n: [torch.randn(n, n + 3, 4, 8)], 0),
    "col_sum": (lambda x: x.sum(0), lambda n: [torch.randn(3 * n, n + 5)], 1e-4),
    "first_token": (lambda x: x[:, 0], lambda n: [torch.randn(n, n + 1, 8)], 0),
    "concat": (lambda x, y: torch.cat([x, y], 1), lambda n: [torch.randn(n, 8), torch.randn(n, 8)],
               0),
    "prepend": (lambda x, y: torch.exp(torch.cat([y, x], 0)),
                lambda n: [torch.randn(n, 8), torch.randn(1, 8)], 1e-5),
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
        # Kernels over `?` sizes take them (static ones, a concat's `1x8`
        # piece, keep their launch), GEMM steps got numbers.
        kernels = [k for kind, ks in g.steps if kind == "kernels" for k in ks]
        assert all(k.get("scalars") or k["grid"] > 0 for k in kernels)
        assert all(isinstance(e["m"], int) and e["m"] > 0 for kind, e in g.steps if kind == "gemm")


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


@requires_nvrtc
def test_plan_executor_runs_symbolic_gemms(tmp_path):
    """runtime/cuda's Plan with the fake cuBLASLt: the GEMM steps of one `?`
    graph get their sizes per call (batched scores, softmax, batched
    output; a Linear with its bias+ReLU epilogue)."""
    ir = "module {\n" + IR + "\n}"
    out, log = emulate(tmp_path, f"""
        import torch, kiln.cuda
        att = kiln.cuda.compile_ir({ir!r}, "attention")
        lin = kiln.cuda.compile_ir({ir!r}, "linear_relu")
        for n in (3, 10, 2):
            q, k, v = (torch.randn(n + 1, n, 8) for _ in range(3))
            (got,) = att.run_on([q, k, v], q.device, 0, 0)
            want = torch.softmax(q @ k.transpose(1, 2), 2) @ v
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
            x, w, b = torch.randn(4 * n, 16), torch.randn(32, 16), torch.randn(32)
            (got,) = lin.run_on([x, w, b], x.device, 0, 0)
            torch.testing.assert_close(got, torch.relu(x @ w.T + b), rtol=1e-4, atol=1e-5)
        print(len(att._specialized), len(lin._specialized), att.executor)
    """, host_ir=ir)
    assert out.strip() == "3 3 plan"
    # The fake cuBLASLt's log: one call per GEMM step, its sizes per call
    # (the attention's batch is n + 1).
    batches = {f for line in log if line.startswith("gemm ") for f in line.split()
               if f.startswith("batch=")}
    assert {"batch=4", "batch=11", "batch=3"} <= batches


def test_symbolic_gemm_steps_and_checks(emitted):
    """GEMM sizes are text evaluated per call; the operands' shared dims,
    a concat's other dims and a slice's end are checked per call."""
    ext = {e["function"]: e for e in emitted["externs"]}
    assert ext["linear_relu"]["dims"] == {"batch": "1", "m": "s0", "n": "32", "k": "16"}
    assert ext["linear_relu"]["epilogue"] == "bias_relu"  # N static: the bias epilogue stays
    assert ext["linear3d"]["dims"]["m"] == "s0 * s1"
    fns = {f["name"]: f for f in emitted["functions"]}
    assert ("s0", "s2") in fns["attention"]["constraints"]  # batch of q and k
    assert fns["concat"]["constraints"] == [("s1", "s0")]  # rows of x and y
    assert fns["first_token"]["bounds"] == [("1", "s1")]
    assert fns["prepend"]["constraints"] == [] and fns["prepend"]["bounds"] == []
    assert "s0 + 1" in [d for b in emitted["buffers"] if b["function"] == "prepend"
                        for d in b.get("dims", ())]
    g = CudaGraph(emitted, "linear3d").specialize([torch.empty(3, 5, 16, device="meta"),
                                                   torch.empty(16, 24, device="meta")])
    (gemm,) = [item for kind, item in g.steps if kind == "gemm"]
    assert (gemm["m"], gemm["n"], gemm["k"]) == (15, 24, 16)
    with pytest.raises(ValueError, match="sizes s1 and s0 must be equal"):
        CudaGraph(emitted, "concat").launches(torch.empty(4, 8, device="meta"),
                                              torch.empty(5, 8, device="meta"))


def test_evaluate_reads_polynomials():
    assert symbolic.evaluate("s0 * s1 * 4", (2, 3)) == 24
    assert symbolic.evaluate("s0 * 2 - 3 + s1", (5, 1)) == 8
    with pytest.raises(ValueError, match="not a size expression"):
        symbolic.evaluate("__import__('os')", ())


def test_multi_output_reduction_with_a_symbolic_dim_is_refused():
    ir = """func.func @forward(%x: tensor<?x?xf32>) -> tensor<?xi64> {
      %0 = kiln.argmax %x {dim = 1 : i64} : tensor<?x?xf32> -> tensor<?xi64>
      return %0 : tensor<?xi64>
    }"""
    with pytest.raises(CudaUnsupportedError, match="single-output reductions only"):
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
def test_frontend_specializes_a_refused_dynamic_op_with_the_reason():
    results, logs = _dynamic_log(lambda x: torch.argmax(x * 2, 1), [[(4, 8)], [(9, 8)]])
    assert [tuple(r.shape) for r in results] == [(4,), (9,)]
    assert kiln.stats()["dynamic_specialized"] >= 1
    assert any("sizes specialized" in m and "single-output reductions only" in m for m in logs)


@requires_nvrtc
def test_frontend_keeps_a_dynamic_mlp_and_attention():
    """A Linear stack over `?` rows and attention over `?` lengths: one `?`
    graph each on the CUDA path (they specialized before GEMMs took sizes)."""
    mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                              torch.nn.Linear(32, 8)).to("meta")

    def attention(q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) * 0.25, -1) @ v

    for fn, calls in ((mlp, [[(n, 16)] for n in (4, 9, 13)]),
                      (attention, [[(2, n, 8)] * 3 for n in (5, 7, 11)])):
        kiln.reset()
        results, logs = _dynamic_log(fn, calls)
        s = kiln.stats()
        assert (s["graphs_compiled"], s["dynamic_graphs"], s["dynamic_specialized"]) == (1, 1, 0)
        assert not [m for m in logs if "specialized" in m]

# SPDX-License-Identifier: Apache-2.0
"""kiln's C++ launch plans, cuBLASLt GEMMs and CUDA graphs without a GPU.

The fake driver + cuBLASLt (cuda_fake/) run them on the CPU: CPU tensors
stand in for device memory, kernels are the module's source compiled for
the host (cuda_host.py), the fake cuBLASLt computes exactly the
column-major call kiln makes (so a wrong lowering gives wrong numbers) and
stream capture records graph nodes that cuGraphLaunch replays. The driver
is loaded once per process, so each test runs in a subprocess. GPU tests
(marker cuda) run the same on a real device.
"""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import kiln.cuda
from conftest import run_python
from cuda_helpers import (MLP_SOFTMAX_IR, build_fake_driver, mlp_softmax_eager,
                          mlp_softmax_inputs, requires_nvrtc)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def emulate(tmp_path, code, host_ir=None, extra_env=None):
    """Runs `code` in a process with the fake driver/cuBLASLt (and the host
    kernels of `host_ir`'s module); returns stdout, the fake's log lines."""
    from cuda_host import build_host_library, emulation_env
    fake = build_fake_driver(tmp_path)
    host = None
    if host_ir is not None:
        host = build_host_library(kiln.cuda.emit(host_ir), tmp_path)
        if host is None:
            pytest.skip("no C++ compiler for the host kernels")
    log = tmp_path / "fake.log"
    env = {**emulation_env(fake, host), "KILN_FAKE_CUDA_LOG": str(log), "PYTHONPATH": HERE,
           **(extra_env or {})}
    r = run_python(textwrap.dedent(code), env)
    assert r.returncode == 0, r.stderr
    return r.stdout, (log.read_text().splitlines() if log.exists() else [])


def test_gemm_lowering_is_the_column_major_transpose():
    """C[m,n] = A[m,k] B^T: cuBLASLt's A is kiln's B ([n,k] row-major =
    col-major k x n, used transposed), its B is kiln's A (k x m), D is n x m."""
    from kiln.cuda import _driver
    text = _driver.gemm_call(0, 0, 1, 4, 8, 16, True, False, 2)
    assert text == ("cublasLt compute 68 scale 0 op TN epilogue 6 batch 1 "
                    "A[t0 16x8 ld 16 stride 128] B[t0 16x4 ld 16 stride 64] "
                    "D[t0 8x4 ld 8 stride 32]")
    # TF32 compute type only when asked; bf16 in, f32 out: f32 compute.
    assert "compute 77" in _driver.gemm_call(0, 0, 1, 4, 8, 16, False, True, 0)
    bf16 = _driver.gemm_call(14, 0, 3, 4, 8, 16, False, False, 0)
    assert bf16.startswith("cublasLt compute 68 scale 0 op NN epilogue 1 batch 3 A[t14 8x16 ld 8")
    assert "D[t0 8x4 ld 8 stride 32]" in bf16
    with pytest.raises(_driver.CudaDriverError, match="no GEMM for input type 0 and output type 14"):
        _driver.gemm_call(0, 14, 1, 2, 2, 2, False, False, 0)


GEMM_SPEC_CODE = """
    import ctypes, torch
    from kiln.cuda import _driver as d
    d.init()
    m = d.Module(b"\\x7fELF" + b"\\0" * 80)
    torch.manual_seed(0)
    ptrs = lambda ts: (ctypes.c_void_p * len(ts))(*[t.data_ptr() for t in ts])
    codes = {torch.float32: 0, torch.float16: 2, torch.bfloat16: 14}
    for dt, tol in ((torch.float32, 1e-5), (torch.bfloat16, 2e-2), (torch.float16, 2e-3)):
        for transb in (0, 1):
            for epi in (0, 1, 2, 3):
                M, N, K = 5, 7, 3
                x = torch.randn(M, K, dtype=dt)
                w = torch.randn(*((N, K) if transb else (K, N)), dtype=dt)
                b, out = torch.randn(N, dtype=dt), torch.empty(M, N, dtype=dt)
                c = codes[dt]
                p = d.Plan(m, f"kiln-plan 1 4 3 1\\nbuf 0 in 0\\nbuf 1 in 1\\nbuf 2 in 2\\n"
                              f"buf 3 out 0\\nws 0 256\\ngemm {c} {c} 1 {M} {N} {K} {transb} 0 "
                              f"{epi} 0 1 3 {2 if epi else -1}\\n")
                assert (p.kernels, p.gemms) == (0, 1)
                arena = torch.empty(512, dtype=torch.uint8)
                p.run(ptrs([x, w, b]), ptrs([out]), arena.data_ptr(), 0)
                ref = x.float() @ (w.float().T if transb else w.float())
                ref = ref + b.float() if epi else ref
                ref = ref.relu() if epi == 2 else ref
                if epi == 3:
                    ref = torch.nn.functional.gelu(ref, approximate="tanh")
                torch.testing.assert_close(out.float(), ref.to(dt).float(), rtol=tol, atol=tol)
    # Batched, bf16 inputs with an f32 result (kiln's 16-bit accumulator).
    B, M, N, K = 3, 4, 5, 6
    a, bb = torch.randn(B, M, K, dtype=torch.bfloat16), torch.randn(B, N, K, dtype=torch.bfloat16)
    c = torch.empty(B, M, N)
    p = d.Plan(m, f"kiln-plan 1 3 2 1\\nbuf 0 in 0\\nbuf 1 in 1\\nbuf 2 out 0\\n"
                  f"gemm 14 0 {B} {M} {N} {K} 1 0 0 0 1 2 -1\\n")
    p.run(ptrs([a, bb]), ptrs([c]), 0, 0)
    torch.testing.assert_close(c, a.float() @ bb.float().transpose(1, 2))
    # A misaligned view: the algorithm is chosen again for its alignment.
    flat = torch.randn(B * M * K + 1, dtype=torch.bfloat16)
    a2 = flat[1:].view(B, M, K)
    p.run(ptrs([a2, bb]), ptrs([c]), 0, 0)
    torch.testing.assert_close(c, a2.float() @ bb.float().transpose(1, 2))
    for bad in ("kiln-plan 1 1 1 0\\nbuf 0 in 0\\ngemm 0 0 1 2 2 2 0 0 1 0 0 0 -1\\n",
                "kiln-plan 1 1 1 0\\nbuf 0 in 3\\n",
                "kiln-plan 1 1 1 0\\nbuf 0 in 0\\nkernel missing_kernel 1 1 1 32 1 1 0 1 0\\n",
                "kiln-plan 2 0 0 0\\n", "kiln-plan 1 1 1 0\\nfrobnicate\\n"):
        try:
            d.Plan(m, bad)
        except d.CudaDriverError as e:
            print(e)
"""


def test_plan_gemms_through_the_fake_cublaslt(tmp_path):
    """fp32/bf16/f16 x transB x every epilogue, batched bf16 → f32, a
    misaligned operand, and spec errors (with their line)."""
    out, log = emulate(tmp_path, GEMM_SPEC_CODE)
    errors = out.splitlines()
    assert errors == [
        "kiln plan line 3 (gemm 0 0 1 2 2 2 0 0 1 0 0 0 -1): gemm bias buffer does not match "
        "its epilogue",
        "kiln plan line 2 (buf 0 in 3): buffer position out of range",
        "kiln plan line 3 (kernel missing_kernel 1 1 1 32 1 1 0 1 0): cuModuleGetFunction"
        "(missing_kernel) failed: CUDA_ERROR_NOT_FOUND: named symbol not found",
        "kiln plan line 1 (kiln-plan 2 0 0 0): expected `kiln-plan 1 <buffers> <inputs> "
        "<outputs>`",
        "kiln plan line 2 (frobnicate): unknown step `frobnicate`"]
    assert "gemm compute=68 op=TN epilogue=36 batch=1 m=7 n=5 k=3" in log  # bias + tanh GELU
    assert sum(line.startswith("gemm compute=68 op=TN epilogue=1 batch=3") for line in log) == 2


@requires_nvrtc
def test_plan_runs_a_whole_function_in_one_call(tmp_path):
    """GEMM (cuBLASLt), bias + GELU kernel, GEMM, softmax kernel: one C call,
    the right numbers, steps in plan order."""
    out, log = emulate(tmp_path, """
        import torch, kiln.cuda
        from cuda_helpers import MLP_SOFTMAX_IR, mlp_softmax_eager, mlp_softmax_inputs
        g = kiln.cuda.compile_ir(MLP_SOFTMAX_IR)
        inputs = mlp_softmax_inputs()
        for _ in range(2):
            (got,) = g.run_on(inputs, inputs[0].device, 0, 0)
            torch.testing.assert_close(got, mlp_softmax_eager(*inputs), rtol=1e-5, atol=1e-6)
        ex = g._executors[(0, False, g.mode)]
        print(type(ex).__name__, g.executor, ex.plan.kernels, ex.plan.gemms, ex.arena_bytes)
    """, host_ir=MLP_SOFTMAX_IR)
    name, executor, kernels, gemms, arena = out.split()
    assert (name, executor, kernels, gemms) == ("PlanExecutor", "plan", "2", "2")
    assert int(arena) > 32 << 20  # temporaries + the cuBLASLt workspace
    kinds = [line.split()[0] + ("" if line.startswith("gemm") else " " + line.split()[1])
             for line in log]
    assert kinds == ["gemm", "launch forward_k0", "gemm", "launch forward_k1"] * 2
    assert log[0] == "gemm compute=68 op=TN epilogue=1 batch=1 m=32 n=8 k=16"


@requires_nvrtc
def test_reduce_overhead_captures_replays_and_guards(tmp_path):
    """Warm-up run, capture on the second call, replays after; inputs that
    kept their address are captured by address (in-place changes show),
    others copied in; a guarded input at a new address records another
    graph; past MAX_GRAPHS the plan runs without one."""
    out, log = emulate(tmp_path, """
        import torch, kiln.cuda
        from kiln.cuda import plan
        from cuda_helpers import MLP_SOFTMAX_IR, mlp_softmax_eager, mlp_softmax_inputs
        g = kiln.cuda.CudaGraph(kiln.cuda.emit(MLP_SOFTMAX_IR, collect_unsupported=True),
                                mode="reduce-overhead")
        def call(*inputs):
            (out,) = g.run_on(inputs, inputs[0].device, 0, 0)
            torch.testing.assert_close(out, mlp_softmax_eager(*inputs), rtol=1e-5, atol=1e-6)
            return out
        x, w, b, w2 = mlp_softmax_inputs()
        call(x, w, b, w2)                       # warm-up: plain run
        call(x.clone(), w, b, w2)               # capture: x copied, weights by address
        r1 = call(torch.randn_like(x), w, b, w2)  # replay
        b.mul_(3.0)
        r2 = call(x, w, b, w2)                  # replay sees the in-place change
        print(r1.data_ptr() == r2.data_ptr())   # static results
        ex = g._executors[(0, False, g.mode)]
        print(ex.replays, ex.plain_runs, len(ex.graphs), ex.graphs[0].stable)
        # A new graph copies the input that moved; the others stay guarded.
        # Each of these misses every graph so far (kept alive: new addresses).
        keep = [(x, w.clone(), b, w2), (x, w, b.clone(), w2), (x, w, b, w2.clone()),
                (x, w.clone(), b.clone(), w2)]
        for inputs in keep:
            call(*inputs)
        print(ex.replays, ex.plain_runs, len(ex.graphs), plan.MAX_GRAPHS)
        call(x, keep[0][1], b, w2)  # graph 2 copies w: any w matches
        print(ex.replays, ex.plain_runs)
    """, host_ir=MLP_SOFTMAX_IR)
    lines = out.splitlines()
    assert lines[0] == "True"
    assert lines[1] == "3 1 1 [False, True, True, True]"
    assert lines[2] == "6 2 4 4"  # 3 more graphs, then a plain run (MAX_GRAPHS)
    assert lines[3] == "7 2"
    assert sum(line.startswith("graph launch") for line in log) == 7


@requires_nvrtc
def test_without_cublaslt_the_python_executor_runs(tmp_path):
    out, _ = emulate(tmp_path, """
        import torch, kiln.cuda
        from cuda_helpers import MLP_SOFTMAX_IR, mlp_softmax_eager, mlp_softmax_inputs
        g = kiln.cuda.compile_ir(MLP_SOFTMAX_IR)
        inputs = mlp_softmax_inputs()
        (got,) = g.run_on(inputs, inputs[0].device, 0, 0)
        torch.testing.assert_close(got, mlp_softmax_eager(*inputs), rtol=1e-5, atol=1e-6)
        print(g.executor)
        print(g.fallback_reason)
    """, host_ir=MLP_SOFTMAX_IR, extra_env={"KILN_CUBLASLT": "/nonexistent/libcublasLt.so.13"})
    executor, reason = out.splitlines()
    assert executor == "python"
    assert reason.startswith("cuBLASLt not found: /nonexistent/libcublasLt.so.13 (")


@requires_nvrtc
def test_gpu_check_rehearsal_on_a_small_artifact(tmp_path):
    """tools/gpu-check.sh's Python half, emulated: a --small artifact of
    one case, of its dynamic form (one `?` graph checked at three sizes)
    and of the int8 and fp8 layers (cuBLASLt int8 / fp8 GEMMs) through
    tools/gpu_check.py --emulate (both kiln modes)."""
    art = tmp_path / "small.json.gz"
    env = dict(os.environ, PYTHONPATH=HERE)
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "cuda_artifact.py"), "--small",
                    "--only", "mlp,mlp_dyn,int8_linear,fp8_linear", "-o", str(art)], check=True,
                   env=env,
                   capture_output=True)
    fake = build_fake_driver(tmp_path)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_check.py"), "--emulate",
                        "--fake-driver", fake, "--artifact", str(art),
                        "--out", str(tmp_path / "r.json")],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6/6 graphs match eager (both kiln modes)" in r.stdout
    assert "ok   int8_linear/fp32" in r.stdout and "ok   fp8_linear/fp32" in r.stdout
    assert "'executor': 'plan', 'replays': 4, 'plain_runs': 1, 'graphs': 2" in r.stdout
    # The `?` graph: one plan per size, each checked (and captured as a CUDA
    # graph in reduce-overhead mode).
    assert "ok   mlp_dyn/fp32" in r.stdout and "'plans': 3" in r.stdout


gpu = pytest.mark.skipif("not __import__('cuda_helpers').gpu_available()",
                         reason="needs a CUDA GPU and driver")


@pytest.mark.cuda
@gpu
@requires_nvrtc
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_plan_on_gpu_matches_eager(mode):
    g = kiln.cuda.CudaGraph(kiln.cuda.emit(MLP_SOFTMAX_IR, collect_unsupported=True), mode=mode)
    inputs = mlp_softmax_inputs("cuda")
    for _ in range(4):
        (out,) = g(*inputs)
        torch.testing.assert_close(out, mlp_softmax_eager(*inputs), rtol=1e-4, atol=1e-5)
    assert g.executor == "plan", g.fallback_reason
    if mode == "reduce-overhead":
        ex = next(iter(g._executors.values()))
        assert ex.capture_error is None and ex.replays == 3


def test_compile_mode_reduce_overhead_is_accepted_and_scoped():
    """kiln.compile(mode="reduce-overhead"): CUDA graphs' calls see the
    mode (kiln.cuda.graph.call_mode) only while the compiled callable runs;
    CPU graphs are unaffected."""
    import kiln
    from kiln.cuda.graph import call_mode
    seen = []

    def f(x):
        return x * 2 + 1

    compiled = kiln.compile(f, mode="reduce-overhead")
    torch.testing.assert_close(compiled(torch.ones(3)), torch.full((3,), 3.0))
    module = kiln.compile(torch.nn.Linear(4, 2), mode="reduce-overhead")
    assert type(module).__name__ == "_ReduceOverheadModule"
    module(torch.ones(1, 4))
    wrapped = kiln.api._reduce_overhead(lambda: seen.append(call_mode.get()))
    wrapped()
    assert seen == ["reduce-overhead"] and call_mode.get() is None
    with pytest.raises(ValueError, match="unknown mode 'max-autotune'"):
        kiln.compile(f, mode="max-autotune")


@pytest.mark.cuda
@gpu
@requires_nvrtc
def test_kiln_compile_reduce_overhead_on_gpu():
    import kiln
    import kiln.cuda._frontend as frontend
    f = kiln.compile(mlp_softmax_eager, mode="reduce-overhead")
    inputs = mlp_softmax_inputs("cuda")
    for _ in range(4):
        torch.testing.assert_close(f(*inputs), mlp_softmax_eager(*inputs), rtol=1e-4, atol=1e-5)
    g = frontend.compiled[-1]
    (ex,) = [e for key, e in g._executors.items() if key[2] == "reduce-overhead"]
    assert ex.capture_error is None and ex.replays >= 2

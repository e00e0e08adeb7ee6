# SPDX-License-Identifier: Apache-2.0
"""kiln's CUDA runtime and executor without a GPU: the driver is optional
(clear errors without one, `import kiln` unaffected), the launch plan is
built and dry-run on meta tensors, and a fake driver (cuda_fake/) checks
that every kernel is launched in plan order with the right buffers, grid,
block and stream. Execution on a real GPU: test_cuda_gpu.py (marker cuda).
"""
import os
import re
import textwrap

import pytest
import torch

import kiln.cuda
from conftest import run_python
from cuda_helpers import (UNSUPPORTED_IR, MLP_SOFTMAX_IR, build_fake_driver, mlp_softmax_eager,
                          mlp_softmax_inputs, requires_nvrtc)


def test_import_kiln_loads_no_cuda_library():
    code = textwrap.dedent("""
        import sys, kiln, torch
        f = kiln.compile(lambda x: x * 2 + 1)
        assert torch.equal(f(torch.ones(3)), torch.full((3,), 3.0))
        maps = open('/proc/self/maps').read()
        print('kiln.cuda' in sys.modules, 'libkiln_cuda' in maps, 'libcuda.so' in maps)
    """)
    r = run_python(code, {})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "False"]


def test_missing_driver_is_a_clear_python_error():
    code = textwrap.dedent("""
        import kiln.cuda
        print(kiln.cuda.available())
        try:
            kiln.cuda.init()
        except kiln.cuda.CudaDriverError as e:
            print(e)
    """)
    r = run_python(code, {"KILN_CUDA_DRIVER": "/nonexistent/libcuda.so.1"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "False"
    assert lines[1].startswith("CUDA driver not found: /nonexistent/libcuda.so.1 (")
    assert "needs an NVIDIA driver" in lines[1]


def test_failing_cuinit_names_the_driver_error(tmp_path):
    fake = build_fake_driver(tmp_path)
    r = run_python("import kiln.cuda\ntry:\n kiln.cuda.init()\nexcept RuntimeError as e:\n print(e)",
                   {"KILN_CUDA_DRIVER": fake, "KILN_FAKE_CUDA_FAIL": "init"})
    assert r.returncode == 0, r.stderr
    assert "cuInit failed: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected" in r.stdout


def test_fake_driver_device_queries_and_missing_kernel(tmp_path):
    fake = build_fake_driver(tmp_path)
    code = textwrap.dedent("""
        from kiln.cuda import _driver as d
        d.init()
        print(d.device_count(), d.sm_count(0), d.compute_capability(0), d.driver_version())
        m = d.Module(b"\\x7fELF....my_kernel\\x00" + b"\\x00" * 80)
        m.kernel("my_kernel")
        try:
            m.kernel("other_kernel")
        except d.CudaDriverError as e:
            print(e)
        try:
            d.Module(b"x", device=3)
        except d.CudaDriverError as e:
            print(e)
    """)
    r = run_python(code, {"KILN_CUDA_DRIVER": fake})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "1 132 (9, 0) 13000"
    assert lines[1] == ("cuModuleGetFunction(other_kernel) failed: CUDA_ERROR_NOT_FOUND: "
                        "named symbol not found")
    assert lines[2].startswith("cuDeviceGet(device 3) failed")


@requires_nvrtc
def test_plan_of_mlp_softmax():
    emitted = kiln.cuda.emit(MLP_SOFTMAX_IR)
    (fn,) = emitted["functions"]
    assert [k for k, _ in fn["steps"]] == ["extern", "kernel", "extern", "kernel"]
    g0, g1 = emitted["externs"]
    assert (g0["m"], g0["n"], g0["k"], g0["trans_b"], g0["batched"]) == (8, 32, 16, True, False)
    assert (g1["m"], g1["n"], g1["k"], g1["trans_b"]) == (8, 24, 32, False)
    assert g0["args"][:2] == ["arg0", "arg1"] and g1["args"][1] == "arg3"
    k0, k1 = emitted["kernels"]
    assert k0["kind"] == "pointwise" and k0["args"][0] == g0["args"][2]
    assert g1["args"][0] == k0["args"][-1]  # the second GEMM reads the GELU
    assert k1["kind"] == "row_reduction" and k1["grid"] == 8  # one block per row
    assert fn["inputs"] == ["arg0", "arg1", "arg2", "arg3"]
    assert fn["results"] == [k1["args"][-1]]
    assert fn["result_shapes"] == [[8, 24]] and fn["result_types"] == ["float"]
    assert not emitted["unsupported"]


@requires_nvrtc
def test_dry_run_on_meta_tensors():
    g = kiln.cuda.compile_ir(MLP_SOFTMAX_IR)
    steps, (out,) = g.launches(*mlp_softmax_inputs("meta"))
    assert [s["kind"] for s in steps] == ["gemm", "kernel", "gemm", "kernel"]
    assert [tuple(t.shape) for t in steps[0]["args"]] == [(8, 16), (32, 16), (8, 32)]
    assert steps[1]["args"][0] is steps[0]["args"][2]  # the kernel reads the GEMM's result
    assert steps[2]["args"][0] is steps[1]["args"][-1]
    assert steps[3]["grid"] == 8 and steps[3]["block"] == 32
    assert out.shape == (8, 24) and out.device.type == "meta"


@requires_nvrtc
def test_dry_run_gemms_on_cpu_match_torch():
    """On CPU tensors the dry run executes the GEMM segments (torch.matmul):
    the first GEMM's buffer holds x @ w.T."""
    g = kiln.cuda.compile_ir(MLP_SOFTMAX_IR)
    x, w, b, w2 = mlp_softmax_inputs()
    steps, _ = g.launches(x, w, b, w2)
    torch.testing.assert_close(steps[0]["args"][2], x @ w.T)


@requires_nvrtc
def test_input_checks_and_cpu_inputs_are_errors():
    g = kiln.cuda.compile_ir(MLP_SOFTMAX_IR)
    x, w, b, w2 = mlp_softmax_inputs("meta")
    with pytest.raises(ValueError, match=r"input 1 must be torch.float32 \(32, 16\)"):
        g.launches(x, w.T, b, w2)
    with pytest.raises(ValueError, match=r"input 0 must be torch.float32"):
        g.launches(x.double(), w, b, w2)
    with pytest.raises(TypeError, match="takes 4 tensors, got 1"):
        g.launches(x)
    with pytest.raises(ValueError, match="inputs must be CUDA tensors"):
        g(*mlp_softmax_inputs())


@requires_nvrtc
def test_unsupported_graph_lists_each_op_with_its_reason():
    with pytest.raises(kiln.cuda.CudaUnsupportedError) as e:
        kiln.cuda.compile_ir(UNSUPPORTED_IR)
    msg = str(e.value)
    assert "1 op(s) of forward have no CUDA lowering" in msg
    assert "linalg.generic at" in msg and "single-output reductions only" in msg
    # Collecting still emits the rest: the cast after the argmax.
    emitted = kiln.cuda.emit(UNSUPPORTED_IR, collect_unsupported=True)
    assert len(emitted["kernels"]) == 1 and len(emitted["unsupported"]) == 1
    assert emitted["unsupported"][0]["results"] == ["buf0", "buf1"]  # values, indices
    assert emitted["kernels"][0]["args"][0] == "buf1"


@requires_nvrtc
def test_launches_through_the_fake_driver(tmp_path):
    """Plan → libkiln_cuda → driver: each kernel launched in order on the
    given stream with the data pointers of its buffers."""
    fake = build_fake_driver(tmp_path)
    log = tmp_path / "launches.log"
    code = textwrap.dedent(f"""
        import torch, kiln.cuda
        from cuda_helpers import MLP_SOFTMAX_IR, mlp_softmax_inputs
        g = kiln.cuda.compile_ir(MLP_SOFTMAX_IR)
        x, w, b, w2 = mlp_softmax_inputs()
        bufs = g._allocate((x, w, b, w2), x.device)
        g._execute(bufs, device_index=0, stream=0x1234)
        for k in g.kernel_names:
            print(k, *[hex(bufs[n].data_ptr()) for n in g.kernel_args[k]])
        # The GEMMs ran through torch (on the CPU here) between the launches.
        gemm = g.steps[0][1]
        torch.testing.assert_close(bufs[gemm["args"][2]], x @ w.T)
    """)
    r = run_python(code, {"KILN_CUDA_DRIVER": fake, "KILN_FAKE_CUDA_LOG": str(log),
                          "PYTHONPATH": os.path.dirname(os.path.abspath(__file__))})
    assert r.returncode == 0, r.stderr
    expected = [line.split() for line in r.stdout.splitlines()]
    launches = log.read_text().splitlines()
    assert len(launches) == len(expected) == 2
    for (name, *ptrs), line in zip(expected, launches):
        m = re.match(r"launch (\S+) grid=(\d+),1,1 block=(\d+),1,1 stream=(\S+) args=(\S+)$", line)
        assert m, line
        assert m.group(1) == name and m.group(4) == "0x1234"
        assert [int(p, 16) for p in m.group(5).split(",")] == [int(p, 16) for p in ptrs]
    assert "grid=8,1,1 block=32,1,1" in launches[1]  # softmax: one block per row


@pytest.mark.cuda
@pytest.mark.skipif("not __import__('cuda_helpers').gpu_available()",
                    reason="needs a CUDA GPU and driver")
@requires_nvrtc
def test_mlp_softmax_on_gpu_matches_eager():
    g = kiln.cuda.compile_ir(MLP_SOFTMAX_IR)
    inputs = mlp_softmax_inputs("cuda")
    (out,) = g(*inputs)
    torch.testing.assert_close(out, mlp_softmax_eager(*inputs), rtol=1e-4, atol=1e-5)


@requires_nvrtc
def test_artifact_round_trip_runs_the_same_plan(tmp_path):
    """What tools/cuda_artifact.py writes and tools/gpu_check.py reads: the
    plan and cubins survive the file, and the loaded graph dry-runs."""
    from kiln.cuda import artifact, nvrtc
    emitted = kiln.cuda.emit(MLP_SOFTMAX_IR)
    images = {90: nvrtc.compile_source(emitted["source"], 90),
              "ptx": nvrtc.compile_source(emitted["source"], 90, cubin=False)}
    path = str(tmp_path / "cases.json.gz")
    artifact.save(path, {"mlp_softmax/fp32": {"emitted": emitted, "images": images,
                                              "meta": {"kernels": 2}}}, "13.0")
    (name, entry), = artifact.load(path).items()
    assert name == "mlp_softmax/fp32" and entry["meta"] == {"kernels": 2}
    assert entry["images"][90] == images[90] and entry["images"]["ptx"].startswith(b"//")
    g = artifact.graph(entry)
    assert g.image_for(90) is entry["images"][90]
    steps, (out,) = g.launches(*mlp_softmax_inputs("meta"))
    assert [s["name"] for s in steps] == ["forward_gemm0", "forward_k0", "forward_gemm1",
                                          "forward_k1"]
    assert out.shape == (8, 24)


@requires_nvrtc
def test_artifact_runs_where_kiln_has_no_mlir_extension(tmp_path):
    """The GPU machine of tools/gpu-check.sh has no kiln._C: kiln.cuda and
    an artifact must load without it, and cubins come from the artifact."""
    from kiln.cuda import artifact, nvrtc
    emitted = kiln.cuda.emit(MLP_SOFTMAX_IR)
    path = str(tmp_path / "a.json.gz")
    artifact.save(path, {"g": {"emitted": emitted,
                               "images": {90: nvrtc.compile_source(emitted["source"], 90)}}},
                  "13.0")
    code = textwrap.dedent(f"""
        import os, sys, types
        sys.modules["kiln._C"] = None  # importing it now fails, as on the GPU machine
        pkg = types.ModuleType("kiln")
        pkg.__path__ = [os.path.join({repr(os.path.dirname(kiln.cuda.__file__))}, "..")]
        sys.modules["kiln"] = pkg
        import torch
        from kiln.cuda import artifact
        g = artifact.graph(artifact.load({path!r})["g"])
        assert g.image_for(90)[:4] == b"\\x7fELF"
        try:
            g.image_for(80)
        except RuntimeError as e:
            print("no sm_80:", e)
        steps, (out,) = g.launches(*[torch.empty(s, device="meta")
                                     for s in ((8, 16), (32, 16), (32,), (32, 24))])
        print(len(steps), tuple(out.shape))
    """)
    r = run_python(code, {})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("no sm_80: kiln.cuda: no cubin for sm_80 and no NVRTC")
    assert lines[1] == "4 (8, 24)"

# SPDX-License-Identifier: Apache-2.0
"""kiln.export -> .kiln artifact -> kiln.load (libkiln_runtime, no compiler).

Each model is exported from random init, loaded through the light loader and
compared with the JIT path (kiln.compile: the same graph compiled in
process, tight tolerance) and with eager (dtype tolerance). Models are small
(batch <= 8, 32x32 images, hidden 64) so the file runs in about a minute.
Damaged files, spec violations, threads and the process's loaded libraries
are covered here and, in C++, by test/artifact (ctest).
"""
import os
import subprocess
import sys
import threading
import warnings

import pytest
import torch

import kiln
from conftest import assert_close
from kiln import _artifact_file
from kiln_runtime import KilnRuntimeError
from export_models import CNN, BertBlock, GPT2Block, mlp


def _roundtrip(tmp_path, model, args, dynamic_shapes=None, name="m.kiln"):
    path = str(tmp_path / name)
    kiln.export(model, args, path, dynamic_shapes=dynamic_shapes)
    return kiln.load(path), path


def _check(loaded, model, args):
    """The artifact's result equals the JIT path's and is close to eager's."""
    got = loaded(*args)
    with torch.no_grad():
        jit = kiln.compile(model)(*args)
        eager = model(*args)
    assert_close(got, jit, rtol=1e-5, atol=1e-5)
    assert_close(got, eager)
    return got


@pytest.mark.parametrize("make,shape", [(mlp, (8, 64)), (CNN, (4, 3, 32, 32))])
def test_static_models(tmp_path, make, shape):
    model = make().eval()
    x = torch.randn(shape)
    loaded, _ = _roundtrip(tmp_path, model, (x,))
    _check(loaded, model, (x,))


@pytest.mark.parametrize("block", [BertBlock, GPT2Block])
def test_transformer_blocks(tmp_path, block):
    model = block().eval()
    x = torch.randn(2, 16, 64)
    loaded, _ = _roundtrip(tmp_path, model, (x,))
    _check(loaded, model, (x,))


def test_index_out_of_range_raises_like_eager(tmp_path):
    # The graph's index flag travels in the plan: the runtime fails the run
    # with KILN_ERROR_INDEX (an IndexError) instead of clamped rows.
    model = torch.nn.Sequential(torch.nn.Embedding(20, 8), torch.nn.Linear(8, 4)).eval()
    ids = torch.randint(0, 20, (2, 5))
    loaded, _ = _roundtrip(tmp_path, model, (ids,))
    _check(loaded, model, (ids,))
    bad = ids.clone()
    bad[1, 3] = 20
    with pytest.raises(IndexError, match="KILN_ERROR_INDEX"):
        loaded(bad)
    _check(loaded, model, (ids,))


def test_dynamic_batch(tmp_path):
    model, shape = mlp().eval(), (5, 64)
    batch = torch.export.Dim("batch", min=2, max=16)
    loaded, _ = _roundtrip(tmp_path, model, (torch.randn(shape),), ({0: batch},))
    for n in (2, 7, 16):
        _check(loaded, model, (torch.randn(n, *shape[1:]),))
    with pytest.raises(KilnRuntimeError, match=r"input 0 \('x'\) dim 0 \(symbolic 'batch'\): "
                                               r"size 17 outside its range \[2, 16\]"):
        loaded(torch.randn(17, *shape[1:]))


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = mlp()

    def forward(self, x, bias):
        return torch.tanh(self.mlp(x)) + bias


def test_dynamic_dim_shared_by_two_inputs(tmp_path):
    model, batch = TwoInputs().eval(), torch.export.Dim("batch", min=2, max=32)
    args = (torch.randn(6, 64), torch.randn(6, 10))
    loaded, _ = _roundtrip(tmp_path, model, args, {"x": {0: batch}, "bias": {0: batch}})
    _check(loaded, model, (torch.randn(9, 64), torch.randn(9, 10)))
    with pytest.raises(KilnRuntimeError, match=r"input 1 \('bias'\) dim 0 \(symbolic 'batch'\): "
                                               r"size 8 but input 0 \('x'\) dim 0 is 9"):
        loaded(torch.randn(9, 64), torch.randn(8, 10))


def test_dynamic_dim_kiln_specializes_is_an_error(tmp_path):
    """A dim kiln's capture cannot keep symbolic (here: merged with another
    symbolic size by a view) is refused, naming the dim and why."""
    batch = torch.export.Dim("batch", min=2, max=16)
    with pytest.raises(kiln.ExportError, match="dynamic dim 'batch' .* specialized.*reshape that "
                                               "moves, merges or splits symbolic sizes"):
        kiln.export(lambda x: torch.relu(x).view(-1, x.shape[1] * 8) * 2, (torch.randn(5, 6, 8),),
                    str(tmp_path / "c.kiln"), dynamic_shapes=({0: batch, 1: ("seq", 2, 32)},))


def test_baseline_build(tmp_path):
    """The x86-64 baseline build (device 'cpu-baseline') gives the host build's results."""
    model, x = BertBlock().eval(), torch.randn(2, 16, 64)
    host, path = _roundtrip(tmp_path, model, (x,))
    assert "cpu_code_baseline" in _artifact_file.sections(open(path, "rb").read())
    assert_close(kiln.load(path, device="cpu-baseline")(x), host(x), rtol=1e-5, atol=1e-5)
    p = str(tmp_path / "host-only.kiln")
    kiln.export(model, (x,), p, baseline=False)
    with pytest.raises(KilnRuntimeError, match="KILN_ERROR_UNSUPPORTED.*no baseline build"):
        kiln.load(p, device="cpu-baseline")
    with pytest.raises(KilnRuntimeError, match="KILN_ERROR_UNSUPPORTED.*no CUDA build"):
        kiln.load(p, device="cuda")


def test_bf16_model(tmp_path):
    """bf16 in both builds: the baseline CPU has no AVX-512 BF16, so LLVM calls
    __truncsfbf2, which the library defines over its import table."""
    model = torch.nn.Linear(32, 16).to(torch.bfloat16).eval()
    x = torch.randn(4, 32, dtype=torch.bfloat16)
    path = str(tmp_path / "bf16.kiln")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no build left out
        kiln.export(model, (x,), path)
    with torch.no_grad():
        jit = kiln.compile(model)(x)
    for device in ("cpu", "cpu-baseline"):
        assert_close(kiln.load(path, device)(x), jit, rtol=1e-2, atol=1e-2)


def test_spec_violations_name_input_and_dim(tmp_path):
    loaded, _ = _roundtrip(tmp_path, mlp().eval(), (torch.randn(8, 64),))
    cases = [(torch.randn(8, 63), "KILN_ERROR_SHAPE: input 0 ('x') dim 1: size 63 but the model "
                                  "takes 64"),
             (torch.randn(8, 64, dtype=torch.float64), "KILN_ERROR_DTYPE: input 0 ('x'): dtype "
                                                       "f64 but the model takes f32"),
             (torch.randn(8), "KILN_ERROR_SHAPE: input 0 ('x'): 1 dims but the model takes 2"),
             (torch.randn(8, 64, device="meta"), "KILN_ERROR_DEVICE")]
    for x, message in cases:
        with pytest.raises(KilnRuntimeError) as e:
            loaded(x)
        assert message in str(e.value)
    with pytest.raises(KilnRuntimeError, match="takes 1 inputs, got 2"):
        loaded(torch.randn(8, 64), torch.randn(8, 64))
    # A non-contiguous input is copied by the loader, as the JIT path does.
    x = torch.randn(64, 8).t()
    assert_close(loaded(x), loaded(x.contiguous()), rtol=0, atol=0)


def test_profiler_range(tmp_path):
    loaded, _ = _roundtrip(tmp_path, mlp().eval(), (torch.randn(8, 64),), name="mlp.kiln")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        loaded(torch.randn(8, 64))
    assert any(e.name == "kiln::mlp.kiln" for e in prof.events())


def test_weights_are_safetensors(tmp_path):
    safetensors = pytest.importorskip("safetensors.torch")
    model = mlp().eval()
    _, path = _roundtrip(tmp_path, model, (torch.randn(8, 64),))
    data = open(path, "rb").read()
    off, size = _artifact_file.sections(data)["weights"]
    tensors = safetensors.load(data[off:off + size])
    for name, t in model.state_dict().items():
        assert torch.equal(tensors[name], t), name
    assert all(n.startswith("__kiln_pad") for n in set(tensors) - set(model.state_dict()))


def test_threads_match(tmp_path):
    model = CNN().eval()
    x = torch.randn(4, 3, 32, 32)
    loaded, _ = _roundtrip(tmp_path, model, (x,))
    base = loaded(x)
    bad = []

    def worker():
        for _ in range(20):
            if not torch.equal(loaded(x.clone()), base):
                bad.append(1)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_two_models_in_one_process(tmp_path):
    a, b = mlp().eval(), mlp().eval()
    x = torch.randn(8, 64)
    la, _ = _roundtrip(tmp_path, a, (x,), name="a.kiln")
    lb, _ = _roundtrip(tmp_path, b, (x,), name="b.kiln")
    del la  # freed: its descriptor number may come back for the next load
    lc, _ = _roundtrip(tmp_path, a, (x,), name="c.kiln")
    _check(lb, b, (x,))
    _check(lc, a, (x,))


def _damaged(tmp_path, data, name):
    p = tmp_path / name
    p.write_bytes(bytes(data))
    with pytest.raises(KilnRuntimeError) as e:
        kiln.load(str(p))
    return str(e.value)


def test_damaged_artifacts(tmp_path):
    _, path = _roundtrip(tmp_path, mlp().eval(), (torch.randn(8, 64),))
    good = open(path, "rb").read()
    assert "truncated" in _damaged(tmp_path, good[:40], "t1")
    assert "KILN_ERROR_FORMAT" in _damaged(tmp_path, good[:len(good) // 2], "t2")
    bad = bytearray(good)
    bad[8] = 7
    assert "format version 7; this runtime reads version 1" in _damaged(tmp_path, bad, "v")
    for kind, (off, size) in _artifact_file.sections(good).items():
        bad = bytearray(good)
        bad[off + size // 2] ^= 0x10
        assert "checksum mismatch" in _damaged(tmp_path, bad, kind), kind
    assert "bad magic" in _damaged(tmp_path, b"PK" + good[2:], "zip")
    with pytest.raises(KilnRuntimeError, match="KILN_ERROR_IO"):
        kiln.load(str(tmp_path / "missing.kiln"))


def test_export_refuses_what_an_artifact_cannot_hold(tmp_path):
    def breaks(x):
        print("side effect")  # noqa: T201
        return x + 1

    def random(x):
        return x + torch.rand_like(x)

    def returns_input(x):
        return x, x * 2

    def fallback(x):
        return torch.special.erfcx(x * 2) + 1

    p = str(tmp_path / "r.kiln")
    with pytest.raises(kiln.ExportError, match="not one graph"):
        kiln.export(breaks, (torch.randn(4),), p)
    with pytest.raises(kiln.ExportError, match=r"torch.special.erfcx at .* \(per-op fallback"):
        kiln.export(fallback, (torch.randn(4),), p)
    with pytest.raises(kiln.ExportError, match="random"):
        kiln.export(random, (torch.randn(4),), p)
    with pytest.raises(kiln.ExportError, match="output 0 is not a tensor the graph computes"):
        kiln.export(returns_input, (torch.randn(4),), p)
    with pytest.raises(kiln.ExportError, match="only tensors"):
        kiln.export(mlp(), (3,), p)
    assert not os.path.exists(p)


def test_exported_program_input(tmp_path):
    """A torch.export.ExportedProgram is exported through its ATen graph; where
    kiln's capture lacks an ATen op the error names it."""
    model, x = mlp().eval(), torch.randn(8, 64)
    ep = torch.export.export(model, (x,))
    try:
        loaded, _ = _roundtrip(tmp_path, ep, (x,))
    except kiln.ExportError as e:
        assert "aten." in str(e)
        return
    _check(loaded, model, (x,))


def test_loader_process_has_no_compiler(tmp_path):
    """kiln_runtime alone: libMLIR/libLLVM and kiln._C never enter the process."""
    loaded, path = _roundtrip(tmp_path, mlp().eval(), (torch.randn(8, 64),))
    expected = loaded(torch.ones(8, 64)).sum().item()
    code = (f"import torch, kiln_runtime\n"
            f"m = kiln_runtime.load({path!r})\n"
            f"print(m(torch.ones(8, 64)).sum().item())\n"
            f"maps = open('/proc/self/maps').read()\n"
            f"print([w for w in ('libMLIR', 'libLLVM', 'kiln/_C') if w in maps])\n"
            f"print('libkiln_runtime' in maps)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert abs(float(out[0]) - expected) < 1e-4
    assert out[1] == "[]" and out[2] == "True"


def test_kiln_run_cli(tmp_path):
    np = pytest.importorskip("numpy")
    tool = os.path.join(os.path.dirname(kiln.__file__), "..", "..", "..", "build", "bin",
                        "kiln-run")
    if not os.path.exists(tool):
        pytest.skip("build/bin/kiln-run not built")
    model = mlp().eval()
    x = torch.randn(8, 64)
    loaded, path = _roundtrip(tmp_path, model, (x,))
    np.save(tmp_path / "x.npy", x.numpy())
    out = subprocess.run([tool, path, "--inputs", str(tmp_path / "x.npy"), "--bench", "5"],
                         capture_output=True, text=True, check=True).stdout
    assert "output 0 'output0': shape [8, 10]" in out and "p50" in out
    total = float(out.split(" sum ")[1].split()[0])
    assert abs(total - loaded(x).sum().item()) < 1e-3
    # A header whose shape overflows the byte count, or is negative, is a
    # clear error (it passed the size check and crashed kiln-run).
    for i, shape in enumerate(["(4611686018427387904, 16)", "(-8, 64)", "(8, 64, 2)"]):
        header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}".ljust(118)
        bad = tmp_path / f"bad{i}.npy"
        bad.write_bytes(b"\x93NUMPY\x01\x00" + bytes([len(header) + 1, 0]) + header.encode()
                        + b"\n" + x.numpy().tobytes())
        res = subprocess.run([tool, path, "--inputs", str(bad)], capture_output=True, text=True)
        assert res.returncode == 1, res
        assert "bad shape" in res.stderr or "truncated data" in res.stderr, res.stderr


class Rotary(torch.nn.Module):
    """Rotary position embedding: sin/cos of positions up to 4096 times
    frequencies (glibc's vector forms, codegen/cpu/VectorMath.h)."""

    def forward(self, x, pos):
        freqs = pos[:, None] * (10000.0 ** (-torch.arange(0, 64, 2.0) / 64))
        cos, sin = torch.cos(freqs).repeat(1, 2), torch.sin(freqs).repeat(1, 2)
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def test_vector_math_in_a_fresh_loader_process(tmp_path):
    """An artifact whose code calls libmvec links it as a needed library, so
    a process with only kiln_runtime loads it (host and baseline builds)."""
    model = Rotary()
    x, pos = torch.randn(512, 64), torch.arange(3584.0, 4096.0)
    path = str(tmp_path / "rotary.kiln")
    kiln.export(model, (x, pos), path)
    want = model(x, pos)
    for device in ("cpu", "cpu-baseline"):
        got = kiln.load(path, device=device)(x, pos)
        assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.save((x, pos), str(tmp_path / "args.pt"))
    code = (f"import torch, kiln_runtime\n"
            f"x, pos = torch.load({str(tmp_path / 'args.pt')!r})\n"
            f"torch.save(kiln_runtime.load({path!r})(x, pos), {str(tmp_path / 'out.pt')!r})\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert_close(torch.load(str(tmp_path / "out.pt")), want, rtol=1e-5, atol=1e-5)


def test_copies_of_a_loaded_model_share_it(tmp_path):
    import copy
    import gc

    model = mlp().eval()
    x = torch.randn(8, 64)
    loaded, _ = _roundtrip(tmp_path, model, (x,))
    expected = loaded(x)
    copies = [copy.copy(loaded), copy.deepcopy(loaded), copy.deepcopy({"m": loaded})["m"]]
    del loaded
    gc.collect()
    for c in copies:  # the original's name is gone; the model is not freed
        torch.testing.assert_close(c(x), expected)

# SPDX-License-Identifier: Apache-2.0
"""The on-disk compile cache (KILN_CACHE_DIR, runtime/CompileCache.h).

Each test uses its own temporary cache folder. Processes are real
subprocesses: a second process must load every graph from disk (no pass or
LLVM runs: ``cache_misses_disk`` stays 0) and compute what eager computes;
truncated, corrupted or foreign entries are reported, recompiled and
replaced, never loaded; concurrent writers leave one valid entry.
"""
import glob
import json
import os
import subprocess
import sys

import pytest
import torch

import kiln
from conftest import assert_close, run_python, stats

# A model whose code uses a BLAS call, fused elementwise code, a row
# reduction and a strided copy (concat of a slice): every kind of symbol
# the loaded object must resolve. Prints counters and the max error.
SCRIPT = r"""
import json, sys, time, torch, kiln
torch.manual_seed(0)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.norm = torch.nn.LayerNorm(64)
        self.fc2 = torch.nn.Linear(64, 16)
    def forward(self, x):
        h = torch.nn.functional.gelu(self.norm(self.fc1(x)))
        y = self.fc2(h).softmax(-1)
        return torch.cat([y[:, :4], x[:, :3]], dim=1)
m = M().eval()
x = torch.randn(8, 32)
t0 = time.perf_counter()
with torch.no_grad():
    got = kiln.compile(m)(x)
    want = m(x)
ms = (time.perf_counter() - t0) * 1e3
s = kiln.stats()
print(json.dumps({"err": (got - want).abs().max().item(), "ms": ms,
                  **{k: s[k] for k in ("graphs_compiled", "cache_hits_disk",
                                       "cache_misses_disk", "cache_corrupt_disk")}}))
"""


def f(x, y):
    return torch.relu(x @ y) * 2 - 1


def run(cache_dir, extra=None):
    env = {"KILN_CACHE_DIR": str(cache_dir), **(extra or {})}
    r = run_python(SCRIPT, env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def entries(cache_dir):
    return sorted(glob.glob(os.path.join(str(cache_dir), "*.kc")))


def test_second_process_compiles_nothing(tmp_path):
    cold, _ = run(tmp_path)
    assert cold["graphs_compiled"] == 1 and cold["cache_misses_disk"] == 1, cold
    assert cold["cache_hits_disk"] == 0 and cold["err"] < 1e-5, cold
    assert len(entries(tmp_path)) == 1
    warm, _ = run(tmp_path)
    assert warm["cache_hits_disk"] == 1 and warm["cache_misses_disk"] == 0, warm
    assert warm["err"] < 1e-5, warm
    assert os.listdir(tmp_path) == [os.path.basename(entries(tmp_path)[0])]


def damage_file(path, how):
    data = bytearray(open(path, "rb").read())
    if how == "flip":
        data[len(data) * 3 // 4] ^= 0x10
    elif how == "truncate":
        data = data[: len(data) // 2]
    elif how == "header":
        data = data[:20]
    elif how == "empty":
        data = b""
    else:
        data = b"not a kiln cache entry" * 10
    open(path, "wb").write(bytes(data))
    return {"flip": "checksum mismatch", "truncate": "length mismatch",
            "header": "truncated header", "empty": "truncated header",
            "garbage": "bad magic"}[how]


def test_truncated_entry_is_rebuilt_in_a_new_process(tmp_path):
    run(tmp_path)
    (path,) = entries(tmp_path)
    why = damage_file(path, "truncate")
    rebuilt, err = run(tmp_path)
    assert rebuilt["cache_corrupt_disk"] == 1 and rebuilt["cache_hits_disk"] == 0, rebuilt
    assert rebuilt["cache_misses_disk"] == 1 and rebuilt["err"] < 1e-5, rebuilt
    assert "invalid compile-cache entry" in err and path in err and why in err, err
    # The rebuilt entry replaced the damaged one and is used next time.
    assert entries(tmp_path) == [path]
    again, err = run(tmp_path)
    assert again["cache_hits_disk"] == 1 and again["cache_corrupt_disk"] == 0, again
    assert "warning" not in err


@pytest.mark.parametrize("how", ["flip", "truncate", "header", "empty", "garbage"])
def test_damaged_entry_is_detected_and_rebuilt(tmp_path, capfd, how):
    x, y = torch.randn(5, 7), torch.randn(7, 3)
    with kiln.config.patch(cache_dir=str(tmp_path)):
        kiln.compile(f)(x, y)
        (path,) = entries(tmp_path)
        why = damage_file(path, how)
        capfd.readouterr()
        kiln.reset()
        assert_close(kiln.compile(f)(x, y), f(x, y))
        s = stats()
        assert s["cache_corrupt_disk"] == 1 and s["cache_hits_disk"] == 0, s
        err = capfd.readouterr().err
        assert "invalid compile-cache entry" in err and path in err and why in err, err
        assert entries(tmp_path) == [path]
        kiln.reset()
        assert_close(kiln.compile(f)(x, y), f(x, y))
        assert stats()["cache_hits_disk"] == 1 and stats()["cache_corrupt_disk"] == 0


def test_concurrent_writers_leave_one_valid_entry(tmp_path):
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        result = json.loads(out.strip().splitlines()[-1])
        assert result["err"] < 1e-5 and result["cache_corrupt_disk"] == 0, result
        assert "warning" not in err, err
    assert len(entries(tmp_path)) == 1
    assert not glob.glob(os.path.join(str(tmp_path), "*.tmp.*"))
    after, _ = run(tmp_path)
    assert after["cache_hits_disk"] == 1 and after["err"] < 1e-5, after


def test_cache_off_in_a_new_process(tmp_path):
    result, _ = run("off", {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert result["cache_hits_disk"] == result["cache_misses_disk"] == 0, result
    assert result["err"] < 1e-5
    assert not list(tmp_path.rglob("*.kc"))


@pytest.mark.parametrize("value", ["off", "OFF", "0", "none", "", None])
def test_cache_can_be_disabled(tmp_path, value):
    x, y = torch.randn(5, 7), torch.randn(7, 3)
    with kiln.config.patch(cache_dir=value):
        assert_close(kiln.compile(f)(x, y), f(x, y))
    s = stats()
    assert s["cache_hits_disk"] == s["cache_misses_disk"] == 0, s


def test_default_folder_follows_xdg_cache_home(tmp_path):
    code = "import kiln; print(kiln.config.cache_dir)"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    env.pop("KILN_CACHE_DIR")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str(tmp_path / "xdg" / "kiln"), out.stderr
    env.pop("XDG_CACHE_HOME")
    env["HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str(tmp_path / ".cache" / "kiln"), out.stderr


def test_config_knob_in_process(tmp_path):
    x, y = torch.randn(5, 7), torch.randn(7, 3)
    with kiln.config.patch(cache_dir=str(tmp_path)):
        assert_close(kiln.compile(f)(x, y), f(x, y))
        assert stats()["cache_misses_disk"] == 1
        kiln.reset()
        assert_close(kiln.compile(f)(x, y), f(x, y))
        assert stats()["cache_hits_disk"] == 1 and stats()["cache_misses_disk"] == 0
        # Another shape is another graph, hence another entry.
        x2 = torch.randn(6, 7)
        assert_close(kiln.compile(f)(x2, y), f(x2, y))
        assert stats()["cache_misses_disk"] == 1
    assert len(entries(tmp_path)) == 2
    with kiln.config.patch(cache_dir="off"):
        kiln.reset()
        assert_close(kiln.compile(f)(x, y), f(x, y))
        assert stats()["cache_hits_disk"] == stats()["cache_misses_disk"] == 0


def test_debug_dir_bypasses_reading(tmp_path):
    x, y = torch.randn(5, 7), torch.randn(7, 3)
    cache, debug = tmp_path / "cache", tmp_path / "debug"
    with kiln.config.patch(cache_dir=str(cache)):
        kiln.compile(f)(x, y)
        kiln.reset()
        with kiln.config.patch(debug_dir=str(debug)):
            assert_close(kiln.compile(f)(x, y), f(x, y))
        # Every pass ran (and was dumped) although an entry existed.
        assert stats()["cache_hits_disk"] == 0 and stats()["cache_misses_disk"] == 1
    assert list(debug.rglob("*-input.mlir")) and list(debug.rglob("repro.sh"))


def test_test_suite_uses_a_private_cache():
    # conftest points the whole session at a fresh temporary folder.
    assert kiln.config.cache_dir == os.environ["KILN_CACHE_DIR"]
    assert "kiln-test-cache-" in kiln.config.cache_dir

# SPDX-License-Identifier: Apache-2.0
"""The on-disk compile cache (KILN_CACHE_DIR, runtime/CompileCache.h).

Each test uses its own temporary cache folder. Processes are real
subprocesses: a second process must load every graph from disk (no pass or
LLVM runs: ``cache_misses_disk`` stays 0) and compute what eager computes;
truncated, corrupted or foreign entries are reported, recompiled and
replaced, never loaded; concurrent writers leave one valid entry.

Crafted entries (each run in a subprocess with a timeout, so a hang or a
crash fails the test instead of the suite): an object damaged under a valid
HMAC (re-signed with the user's own secret), payloads swapped between two
entries, whole entries swapped, a FIFO, a sparse 1 TiB file, a symlink to
elsewhere, an entry signed with another secret, an unreadable entry, and
folders that are group/world-writable or owned by someone else.
"""
import hashlib
import hmac
import glob
import json
import os
import subprocess
import sys

import pytest
import torch

import kiln
from conftest import assert_close, interpreter_status, run_python, stats

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
    assert sorted(os.listdir(tmp_path)) == sorted([os.path.basename(entries(tmp_path)[0]),
                                                   "secret.key"])


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
    return {"flip": "HMAC mismatch", "truncate": "length mismatch",
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
        r = interpreter_status(subprocess.CompletedProcess(p.args, p.returncode, out, err))
        out, err = r.stdout, r.stderr
        assert r.returncode == 0, err
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
    out = run_python(code, env=env)
    assert out.stdout.strip() == str(tmp_path / "xdg" / "kiln"), out.stderr
    env.pop("XDG_CACHE_HOME")
    env["HOME"] = str(tmp_path)
    out = run_python(code, env=env)
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


# ---------------------------------------------------------------------------
# Crafted entries. The layout is runtime/CompileCache.cpp's: a 32-byte head
# (magic, version, reserved, key and payload lengths), the HMAC-SHA256 of
# head + key + payload under <folder>/secret.key, then key and payload.

def read_entry(path):
    data = open(path, "rb").read()
    key_len = int.from_bytes(data[16:24], "little")
    return data[:16], data[64:64 + key_len], data[64 + key_len:]


def write_entry(path, prefix, key, payload, secret):
    head = prefix + len(key).to_bytes(8, "little") + len(payload).to_bytes(8, "little")
    mac = hmac.new(secret, head + key + payload, hashlib.sha256).digest()
    with open(path, "wb") as out:
        out.write(head + mac + key + payload)


def secret_of(folder):
    return open(os.path.join(str(folder), "secret.key"), "rb").read()


def assert_rebuilt(cache_dir, expect_in_err, corrupt=1):
    """A new process must recompile (not load, not hang, not crash), warn
    with `expect_in_err` and compute what eager computes."""
    result, err = run(cache_dir)
    assert result["err"] < 1e-5, result
    assert result["cache_hits_disk"] == 0 and result["graphs_compiled"] == 1, result
    assert result["cache_corrupt_disk"] == corrupt, (result, err)
    assert expect_in_err in err, err
    return result, err


def test_damaged_object_under_a_valid_hmac_is_rejected(tmp_path):
    run(tmp_path)
    (path,) = entries(tmp_path)
    prefix, key, payload = read_entry(path)
    assert payload[:4] == b"\x7fELF"
    # Section headers pointing past the end of the object, re-signed with the
    # user's own secret: only the structural check can catch it (RuntimeDyld
    # would die with "LLVM ERROR: Invalid data was encountered...").
    bad = bytearray(payload)
    bad[0x28:0x30] = (len(payload) * 16).to_bytes(8, "little")  # e_shoff
    write_entry(path, prefix, key, bytes(bad), secret_of(tmp_path))
    assert_rebuilt(tmp_path, "cannot load")
    again, _ = run(tmp_path)
    assert again["cache_hits_disk"] == 1, again


def _structural_damage(payload):
    """(name, damaged object) pairs that break the ELF structure RuntimeDyld
    relies on: each must be rejected by the structural check. (Damage to
    code bytes under a valid HMAC is not detectable: the HMAC is what keeps
    anyone but the user from writing it.)"""
    shoff = int.from_bytes(payload[0x28:0x30], "little")
    shnum = int.from_bytes(payload[0x3c:0x3e], "little")
    out = []

    def put(name, at, value, width):
        bad = bytearray(payload)
        bad[at:at + width] = value.to_bytes(width, "little")
        out.append((name, bytes(bad)))

    put("e_shnum past the end", 0x3c, shnum + 200, 2)
    put("e_shstrndx out of range", 0x3e, 0xfff0, 2)
    put("e_machine", 0x12, 0x28, 2)  # ARM
    for i in range(1, min(shnum, 3)):
        put(f"section {i} sh_offset", shoff + i * 64 + 0x18, 1 << 40, 8)
        put(f"section {i} sh_size", shoff + i * 64 + 0x20, 1 << 40, 8)
    return out


def test_structurally_damaged_objects_are_rejected(tmp_path):
    """Structural damage, each re-signed with the user's secret: the process
    never crashes or aborts; the entry is rejected and rebuilt."""
    run(tmp_path)
    (path,) = entries(tmp_path)
    prefix, key, payload = read_entry(path)
    secret = secret_of(tmp_path)
    for name, bad in _structural_damage(payload):
        write_entry(path, prefix, key, bad, secret)
        r = run_python(SCRIPT, {"KILN_CACHE_DIR": str(tmp_path)})
        assert r.returncode == 0, (name, r.returncode, r.stderr[-2000:])
        result = json.loads(r.stdout.strip().splitlines()[-1])
        assert result["err"] < 1e-5 and result["cache_corrupt_disk"] == 1, (name, result)
        assert "cannot load" in r.stderr and "LLVM ERROR" not in r.stderr, (name, r.stderr)


def test_swapped_payloads_are_rejected(tmp_path):
    code = SCRIPT.replace("x = torch.randn(8, 32)", "x = torch.randn(int(sys.argv[1]), 32)")
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path))
    for rows in (8, 12):
        r = run_python(code, env=env, args=[rows])
        assert r.returncode == 0, r.stderr
    a, b = entries(tmp_path)
    (pa, ka, xa), (pb, kb, xb) = read_entry(a), read_entry(b)
    # Payloads exchanged under the original HMACs (a plain checksum over the
    # payload alone would still match): rejected.
    for path, (prefix, key, payload) in ((a, (pa, ka, xb)), (b, (pb, kb, xa))):
        head = prefix + len(key).to_bytes(8, "little") + len(payload).to_bytes(8, "little")
        mac = open(path, "rb").read()[32:64]
        open(path, "wb").write(head + mac + key + payload)
    r = run_python(code, env=env, args=[8])
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["cache_corrupt_disk"] == 1 and result["cache_hits_disk"] == 0, result
    assert result["err"] < 1e-5 and "HMAC mismatch" in r.stderr, r.stderr
    # Whole entries swapped: each file holds another key, a plain miss.
    os.rename(b, b + ".x")
    os.rename(a, b)
    os.rename(b + ".x", a)
    r = run_python(code, env=env, args=[12])
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["cache_hits_disk"] == 0 and result["err"] < 1e-5, result


def test_entry_signed_by_another_key_is_rejected(tmp_path):
    run(tmp_path)
    (path,) = entries(tmp_path)
    prefix, key, payload = read_entry(path)
    write_entry(path, prefix, key, payload, b"another user's secret".ljust(32, b"!"))
    assert_rebuilt(tmp_path, "HMAC mismatch")


def test_fifo_entry_does_not_hang(tmp_path):
    run(tmp_path)
    (path,) = entries(tmp_path)
    os.unlink(path)
    os.mkfifo(path, 0o600)
    assert_rebuilt(tmp_path, "a FIFO")
    assert os.path.isfile(path) and not os.path.islink(path)


def test_sparse_huge_entry_is_skipped(tmp_path):
    run(tmp_path)
    (path,) = entries(tmp_path)
    with open(path, "r+b") as f:
        f.truncate(1 << 40)  # 1 TiB, sparse
    assert_rebuilt(tmp_path, "more than the")
    assert os.path.getsize(path) < (1 << 30)


def test_symlink_entry_is_not_followed(tmp_path):
    cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    cache.mkdir(mode=0o700)
    run(cache)
    (path,) = entries(cache)
    os.rename(path, elsewhere)
    os.symlink(elsewhere, path)
    assert_rebuilt(cache, "a symbolic link")
    assert not os.path.islink(path) and os.path.isfile(elsewhere)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_entry_is_skipped(tmp_path):
    run(tmp_path)
    (path,) = entries(tmp_path)
    os.chmod(path, 0)
    assert_rebuilt(tmp_path, "unreadable")


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_shared_folder_is_refused(tmp_path, mode):
    cache = tmp_path / "shared"
    cache.mkdir()
    os.chmod(cache, mode)
    result, err = run(cache)
    assert result["err"] < 1e-5 and result["graphs_compiled"] == 1, result
    assert result["cache_hits_disk"] == result["cache_misses_disk"] == 0, result
    assert "compile cache disabled" in err and "writable by other users" in err, err
    assert not entries(cache) and not (cache / "secret.key").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the folder away")
def test_folder_of_another_user_is_refused(tmp_path):
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    result, err = run(cache)
    assert result["err"] < 1e-5 and result["cache_misses_disk"] == 0, result
    assert "is owned by uid 65534" in err, err


def test_secret_is_private_and_stable(tmp_path):
    run(tmp_path)
    st = os.stat(tmp_path / "secret.key")
    assert st.st_mode & 0o777 == 0o600 and st.st_size == 32
    secret = secret_of(tmp_path)
    again, _ = run(tmp_path)
    assert again["cache_hits_disk"] == 1 and secret_of(tmp_path) == secret


def test_cache_max_mb_is_read_from_the_environment(tmp_path):
    code = "import kiln; print(kiln.config.cache_max_mb)"
    r = run_python(code, {"KILN_CACHE_MAX_MB": "3"})
    assert r.stdout.strip() == "3", r.stderr
    r = run_python(code, {"KILN_CACHE_MAX_MB": "lots"})
    assert r.returncode != 0 and "KILN_CACHE_MAX_MB must be a whole number" in r.stderr

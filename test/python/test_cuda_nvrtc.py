# SPDX-License-Identifier: Apache-2.0
"""Every kernel the test suites generate compiles under NVRTC for sm_80 and
sm_90 (no GPU needed).

The representative suites (SUITES) run in a child pytest with
KILN_DEBUG_DIR set, so every graph kiln compiles leaves its captured IR
(captured.mlir); each distinct graph then goes through the CUDA emitter
with ``collect_unsupported`` and NVRTC (kiln.cuda.nvrtc.check_dir). A
kernel NVRTC rejects, or one missing from its cubin, fails the test; ops
the emitter has no kernel for are not skipped silently: they are counted
and listed with their reason in the report (printed, and written to
$KILN_CUDA_REPORT when set). KILN_CUDA_CHECK_SUITES=all checks every
test file of test/python instead.
"""
import glob
import os
import subprocess
import sys

import pytest

from cuda_helpers import HERE, MLP_SOFTMAX_IR, requires_nvrtc
from kiln.cuda import nvrtc

SUITES = ["test_models.py", "test_functions.py", "test_decompose_numerics.py"]


def _suites():
    if os.environ.get("KILN_CUDA_CHECK_SUITES") == "all":
        return sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, "test_*.py"))
                      if not os.path.basename(p).startswith("test_cuda"))
    return SUITES


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("captured")
    env = dict(os.environ, KILN_DEBUG_DIR=str(folder))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        *_suites()], cwd=HERE, env=env, capture_output=True, text=True,
                       timeout=1800)
    # The suites' own failures are theirs; the compile check needs their graphs.
    assert r.returncode in (0, 1), r.stdout[-4000:] + r.stderr[-4000:]
    return str(folder)


@requires_nvrtc
def test_every_captured_kernel_compiles_for_sm80_and_sm90(captured):
    summary = nvrtc.check_dir(captured, archs=(80, 90))
    report = nvrtc.format_summary(summary)
    print(report)
    if os.environ.get("KILN_CUDA_REPORT"):
        with open(os.environ["KILN_CUDA_REPORT"], "w", encoding="utf-8") as f:
            f.write(report + "\n")
    # The suites really produced graphs and kernels (not a vacuous pass).
    assert summary["graphs"] >= 50, report
    assert summary["kernels"] >= 100, report
    # Graphs the emitter cannot even start on would be silent gaps; a
    # source NVRTC rejects is a kiln bug.
    assert not summary["failed"], report
    assert not summary["nvrtc_failed"], report
    # Every unsupported op carries where and why.
    for u in summary["unsupported"]:
        assert u["op"] and u["location"] and u["reason"] != "(no diagnostic)", u


@requires_nvrtc
def test_check_ir_reports_kernels_externs_and_binaries():
    r = nvrtc.check_ir(MLP_SOFTMAX_IR, archs=(80, 90))
    assert r["kernels"] == ["forward_k0", "forward_k1"]
    assert r["externs"] == ["forward_gemm0", "forward_gemm1"]
    assert set(r["binaries"]) == {80, 90}
    assert all(b"forward_k1" in b for b in r["binaries"].values())


@requires_nvrtc
def test_nvrtc_error_carries_log_and_source():
    with pytest.raises(RuntimeError) as e:
        nvrtc.compile_source('extern "C" __global__ void k() { undefined_thing(); }', 90)
    msg = str(e.value)
    assert "undefined_thing" in msg and "NVRTC" in msg.upper()


@requires_nvrtc
def test_cubins_are_cached_per_source_arch_and_kind(tmp_path):
    import kiln
    src = kiln.cuda.emit(MLP_SOFTMAX_IR)["source"]
    with kiln.config.patch(cache_dir=str(tmp_path)):
        first = nvrtc.compile_source_info(src, 90)
        again = nvrtc.compile_source_info(src, 90)
        other_arch = nvrtc.compile_source_info(src, 80)
        ptx = nvrtc.compile_source_info(src, 90, cubin=False)
        changed = nvrtc.compile_source_info(src + "\n// changed\n", 90)
    assert first[3] is False and again[3] is True and again[0] == first[0]
    assert other_arch[3] is False and other_arch[0] != first[0]
    assert ptx[3] is False and ptx[0].startswith(b"//")
    assert changed[3] is False
    assert len(glob.glob(str(tmp_path / "cuda" / "*.kc"))) == 4
    # No cache folder: nothing written, nothing read.
    with kiln.config.patch(cache_dir=""):
        assert nvrtc.compile_source_info(src, 90)[3] is False


@requires_nvrtc
@pytest.mark.parametrize("damage", ["truncate", "flip_payload_byte", "garbage", "empty"])
def test_corrupted_cubin_entries_are_detected_and_rebuilt(tmp_path, damage):
    """A damaged cache entry is never returned: the cubin is recompiled,
    equal to the original, and the entry is rewritten so the next call hits."""
    import kiln
    src = kiln.cuda.emit(MLP_SOFTMAX_IR)["source"]
    with kiln.config.patch(cache_dir=str(tmp_path)):
        first = nvrtc.compile_source_info(src, 80)
        (entry,) = list((tmp_path / "cuda").glob("*.kc"))
        data = entry.read_bytes()
        # The key (stored in the entry) names the NVRTC version and the arch.
        assert f"nvrtc {kiln._C.nvrtc_version()}\narch 80 cubin".encode() in data
        if damage == "truncate":
            entry.write_bytes(data[: len(data) // 2])
        elif damage == "flip_payload_byte":
            entry.write_bytes(data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:])
        elif damage == "garbage":
            entry.write_bytes(b"not a kiln cache entry" * 10)
        else:
            entry.write_bytes(b"")
        rebuilt = nvrtc.compile_source_info(src, 80)
        again = nvrtc.compile_source_info(src, 80)
    assert first[3] is False and rebuilt[3] is False and again[3] is True
    assert rebuilt[0] == first[0] and again[0] == first[0]
    assert entry.read_bytes() == data
    # Only complete entries: no temporary files left behind.
    assert sorted(p.name for p in (tmp_path / "cuda").iterdir()) == [entry.name, "secret.key"]


@requires_nvrtc
def test_unwritable_cubin_cache_only_costs_a_compile(tmp_path):
    import kiln
    src = kiln.cuda.emit(MLP_SOFTMAX_IR)["source"]
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with kiln.config.patch(cache_dir=str(blocker)):
        a = nvrtc.compile_source_info(src, 90)
        b = nvrtc.compile_source_info(src, 90)
    assert a[3] is False and b[3] is False and a[0] == b[0]

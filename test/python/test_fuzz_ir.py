# SPDX-License-Identifier: Apache-2.0
"""No input crashes kiln's IR tools: a bounded run of tools/fuzz_ir.py.

The fuzzer mutates the lit inputs (attribute values and types, element
types, shapes, numbers, operands) and runs kiln-opt / kiln-translate with
each file's own passes; a signal, an "LLVM ERROR" or a hang fails it. The
seed is fixed so a failure reproduces; the time budget (60 s) bounds how far
it gets. Its inputs land in the test's temporary folder, printed on failure
with the command that reproduces each. The generated negative cases that
pin every verifier are in test/ir/invalid-attributes.mlir.
"""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINDIR = pathlib.Path(os.environ.get("KILN_OPT", ROOT / "build" / "bin" / "kiln-opt")).parent
SECONDS = float(os.environ.get("KILN_FUZZ_SECONDS", "60"))


def test_fuzz_ir_tools_never_crash(tmp_path):
    if not (BINDIR / "kiln-opt").exists() or not (BINDIR / "kiln-translate").exists():
        pytest.skip("kiln-opt / kiln-translate not built")
    cmd = [sys.executable, str(ROOT / "tools" / "fuzz_ir.py"), "--seconds", str(SECONDS),
           "--seed", "20261203", "--bindir", str(BINDIR), "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=SECONDS + 240)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    # The run did real work (a broken seed list would pass vacuously).
    summary = proc.stdout.strip().splitlines()[-1]
    assert int(summary.split()[1]) >= 50, summary


def test_fuzz_ir_detects_a_crash(tmp_path):
    """The crash detector itself: a tool that dies by a signal is reported."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for tool in ("kiln-opt", "kiln-translate"):
        script = fake / tool
        script.write_text("#!/bin/sh\nkill -SEGV $$\n")
        script.chmod(0o755)
    cmd = [sys.executable, str(ROOT / "tools" / "fuzz_ir.py"), "--seconds", "30", "--max-cases",
           "3", "--seed", "1", "--bindir", str(fake), "--out", str(tmp_path / "out")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout
    assert "killed by signal 11" in proc.stdout
    assert len(list((tmp_path / "out").glob("crash-*.mlir"))) == 3

# SPDX-License-Identifier: Apache-2.0
"""tools/lsan_tracer_deaths.py decides whether `make test-asan` reruns its
failures: only when every failure is LeakSanitizer's tracer dying, never for
a leak report or any other failure. Checked on JUnit files written by real
pytest runs of a made-up test file."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "lsan_tracer_deaths.py"

TESTS = textwrap.dedent('''
    import os
    def test_passes():
        pass
    def test_tracer_died():
        if os.environ.get("TRACER"):
            raise AssertionError("==1==Tracer caught signal 11 ... "
                                 "LeakSanitizer has encountered a fatal error")
    def test_other_failure():
        if os.environ.get("OTHER"):
            raise AssertionError(os.environ["OTHER"])
''')


def verdict(tmp_path, **env):
    (tmp_path / "test_made_up.py").write_text(TESTS)
    junit = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={junit}", str(tmp_path / "test_made_up.py")],
                   env={**os.environ, **env}, capture_output=True, check=False)
    return subprocess.run([sys.executable, str(TOOL), str(junit)],
                          capture_output=True, check=False).returncode


@pytest.mark.parametrize("env, rerun", [
    ({"TRACER": "1"}, True),
    ({}, False),  # nothing failed: nothing to rerun
    ({"TRACER": "1", "OTHER": "boom"}, False),
    ({"OTHER": "LeakSanitizer: detected memory leaks"}, False),
    ({"OTHER": "Tracer caught signal 11; LeakSanitizer: detected memory leaks"}, False),
])
def test_reruns_only_tracer_deaths(tmp_path, env, rerun):
    assert (verdict(tmp_path, **env) == 0) == rerun

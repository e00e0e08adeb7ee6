# SPDX-License-Identifier: Apache-2.0
"""What `make test-asan` makes of LeakSanitizer's tracer dying at a process's
exit (not a leak report): tools/lsan_tracer_deaths.py reruns tests that
failed only that way and passes a run whose tests all passed, never for a
leak report or any other failure (checked on JUnit files written by real
pytest runs of a made-up test file); conftest.interpreter_status gives a
child python's own exit status back (checked on real tracer output)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import interpreter_status

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


# The tail of a child python whose LSan tracer died (from a CI log).
TRACER_DEATH = ("Tracer caught signal 11: addr=0x1fae0 pc=0x7f57d5ae80f0 sp=0x7f57201ffd10\n"
                "==13289==LeakSanitizer has encountered a fatal error.\n"
                "==13289==HINT: For debugging, try setting environment variable "
                "LSAN_OPTIONS=verbosity=1:log_threads=1\n"
                "==13289==HINT: LeakSanitizer does not work under ptrace (strace, gdb, etc)\n")
LEAK_REPORT = ("==13289==ERROR: LeakSanitizer: detected memory leaks\n\n"
               "Direct leak of 8 byte(s) in 1 object(s) allocated from:\n")


def verdict(tmp_path, log="", **env):
    (tmp_path / "test_made_up.py").write_text(TESTS)
    junit = tmp_path / "junit.xml"
    (tmp_path / "log").write_text(log)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={junit}", str(tmp_path / "test_made_up.py")],
                   env={**os.environ, **env}, capture_output=True, check=False)
    return subprocess.run([sys.executable, str(TOOL), str(junit), str(tmp_path / "log")],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("env, expected", [
    ({"TRACER": "1"}, "rerun"),
    ({}, "failed"),  # nothing failed and nothing explains the nonzero exit
    ({"TRACER": "1", "OTHER": "boom"}, "failed"),
    ({"OTHER": "LeakSanitizer: detected memory leaks"}, "failed"),
    ({"OTHER": "Tracer caught signal 11; LeakSanitizer: detected memory leaks"}, "failed"),
])
def test_reruns_only_tracer_deaths(tmp_path, env, expected):
    assert verdict(tmp_path, **env) == expected


@pytest.mark.parametrize("log, expected", [
    ("1 passed in 2.0s\n" + TRACER_DEATH, "passed"),
    ("1 passed in 2.0s\n" + LEAK_REPORT + TRACER_DEATH, "failed"),
    ("1 passed in 2.0s\nSegmentation fault\n", "failed"),
])
def test_runner_dying_after_every_test_passed(tmp_path, log, expected):
    assert verdict(tmp_path, log=log) == expected


def completed(returncode, stderr):
    return subprocess.CompletedProcess(["python"], returncode, "out\n", stderr)


@pytest.mark.parametrize("returncode, stderr, status", [
    (1, "warning: cache entry rebuilt\n" + TRACER_DEATH, 0),  # the script ran to its end
    (1, "Traceback (most recent call last):\n  ...\nValueError: x\n" + TRACER_DEATH, 1),
    (1, LEAK_REPORT + "SUMMARY: AddressSanitizer: 8 byte(s) leaked\n", 1),  # a leak stays one
    (1, TRACER_DEATH + "more output\n", 1),  # not at the end: not the exit scan
    (-11, "", -11),
])
def test_child_interpreter_status_under_asan(monkeypatch, returncode, stderr, status):
    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/gcc/x86_64-linux-gnu/12/libasan.so libstdc++.so.6")
    r = interpreter_status(completed(returncode, stderr))
    assert r.returncode == status
    assert "Tracer caught" not in r.stderr or status == 1


def test_child_status_untouched_without_asan(monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    assert interpreter_status(completed(1, TRACER_DEATH)).returncode == 1

# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures and helpers of kiln's Python behaviour suite.

Every test runs on a fresh kiln (caches and counters reset) with a fixed
seed, compares against eager PyTorch with dtype-appropriate tolerances and
checks through kiln.stats() that compiled code really ran (or that the
expected fallback happened).
"""
import os
import re
import subprocess
import sys
import tempfile

import pytest
import torch

# Test this checkout's package (and let the subprocesses tests start do
# the same), whatever the venv's kiln.pth points at: worktrees sharing one
# venv would otherwise test each other's builds.
# $KILN_TEST_PACKAGE_DIR (tools/sanitize.sh) tests a sanitizer build's package.
_PACKAGE = os.environ.get("KILN_TEST_PACKAGE_DIR") or os.path.join(os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "frontend", "python")
sys.path.insert(0, _PACKAGE)
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (_PACKAGE, os.environ.get("PYTHONPATH")) if p)

# A fresh on-disk compile cache per test session (and for the subprocesses
# it starts): the suite never reads a user's cache, and entries written by
# an earlier build or run can never hide a compile bug. Set before kiln is
# imported, since kiln/config.py reads the environment once.
_SESSION_CACHE = tempfile.TemporaryDirectory(prefix="kiln-test-cache-")
os.environ["KILN_CACHE_DIR"] = _SESSION_CACHE.name

import kiln  # noqa: E402

COUNTERS = ("frames", "graphs_compiled", "compiled_calls", "cache_hits", "recompiles",
            "graph_breaks", "eager_calls", "compile_time_us", "capture_time_us", "cache_hits_disk",
            "cache_misses_disk", "cache_corrupt_disk")

# Tolerances per dtype (rtol, atol).
TOL = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-10, 1e-12)}


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU and driver (skips cleanly without)")


@pytest.fixture(autouse=True)
def fresh_kiln():
    kiln.reset()
    torch.manual_seed(0)
    yield
    kiln.reset()


def stats():
    """kiln.stats() (every counter is always present)."""
    return kiln.stats()


def assert_close(actual, expected, rtol=None, atol=None):
    """Recursively compares tensors (and tuples/lists of them) to eager's."""
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected), (type(actual), type(expected))
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol, atol)
        return
    if not isinstance(expected, torch.Tensor):
        assert actual == expected
        return
    assert isinstance(actual, torch.Tensor), type(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    r, a = TOL.get(expected.dtype, (0, 0))
    torch.testing.assert_close(actual, expected, rtol=rtol if rtol is not None else r,
                               atol=atol if atol is not None else a, equal_nan=True)


def assert_compiled(graphs=1, calls=None, breaks=0, **counts):
    """The calls so far ran compiled code: `graphs` graphs were compiled,
    `calls` compiled calls ran (at least one if not given), no graph break,
    and each other kiln.stats() count named (eager_calls=0, ...) as given."""
    s = stats()
    assert s["graphs_compiled"] == graphs, s
    if calls is None:
        assert s["compiled_calls"] >= 1, s
    else:
        assert s["compiled_calls"] == calls, s
    assert s["graph_breaks"] == breaks, s
    for name, expected in counts.items():
        assert s[name] == expected, (name, s)
    return s


def run_python(code, env_extra=None, timeout=120, args=(), env=None):
    """Runs `code` in a fresh interpreter (argv `args`) with the environment
    `env` (default: this process's) updated by `env_extra`; the result as
    the interpreter ended (see interpreter_status)."""
    env = dict(os.environ if env is None else env)
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=timeout)
    return interpreter_status(r)


# Under `make test-asan` LeakSanitizer scans for leaks when a process exits,
# after the interpreter has finished. gcc 12's runtime sometimes records a
# bogus dynamic-TLS range for a thread (LSAN_OPTIONS=verbosity=1 shows e.g.
# "DTLS 9 at 0x00000001fa6e-0x002800020b70"); its stop-the-world tracer then
# takes signal 11 reading it and the process exits 1: not a leak report, and
# the script itself ran to its end. About one exit in 20 on this machine.
_TRACER_DEATH = re.compile(r"Tracer caught signal \d+:[^\n]*\n==\d+==LeakSanitizer has encountered "
                           r"a fatal error\.\n(?:==\d+==HINT:[^\n]*\n?)*\Z")


def interpreter_status(r):
    """`r` (a child python's CompletedProcess) with the exit status its
    interpreter ended with when LeakSanitizer's exit scan died after it:
    1 if the child printed a Python traceback (an uncaught exception, or a
    script reporting its threads' ones, as test_threads.py does), else 0 —
    true of every script this suite runs. Any other result is `r` itself;
    a leak report stays a failure."""
    m = _TRACER_DEATH.search(r.stderr or "") if r.returncode else None
    if m is None or "libasan" not in os.environ.get("LD_PRELOAD", ""):
        return r
    stderr = r.stderr[:m.start()]
    status = 1 if "Traceback (most recent call last)" in stderr else 0
    sys.stderr.write(f"[conftest] LeakSanitizer's exit scan died in a child python (its "
                     f"tracer, not a leak report); the interpreter's own status: {status}\n")
    return subprocess.CompletedProcess(r.args, status, r.stdout, stderr)


def run_whole_graph(fn, *args, calls=2, compare=None):
    """Calls `fn` eagerly and compiled `calls` times, comparing each call's
    results with `compare` when given, and checks that one graph ran with no
    break and no eager frame; returns the last (compiled, eager) results."""
    compiled = kiln.compile(fn)
    for _ in range(calls):
        expected, got = fn(*args), compiled(*args)
        if compare is not None:
            compare(got, expected)
    assert_compiled(graphs=1, eager_calls=0)
    return got, expected


def whole_graph(fn, *args, calls=2, compare=assert_close):
    """run_whole_graph comparing with `compare`; returns the compiled result."""
    return run_whole_graph(fn, *args, calls=calls, compare=compare)[0]

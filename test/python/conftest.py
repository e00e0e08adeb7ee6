# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures and helpers of kiln's Python behaviour suite.

Every test runs on a fresh kiln (caches and counters reset) with a fixed
seed, compares against eager PyTorch with dtype-appropriate tolerances and
checks through kiln.stats() that compiled code really ran (or that the
expected fallback happened).
"""
import os
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


def run_python(code, env_extra, timeout=120):
    """Runs `code` in a fresh interpreter with extra environment variables."""
    env = dict(os.environ)
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=timeout)


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

# SPDX-License-Identifier: Apache-2.0
"""Results of at least 64 KiB (or with a symbolic size) are allocated when
the compiled code first writes them, not before the call
(frontend/csrc/CallResources.h, codegen/cpu/LazyOutputs.cpp): the
caller's tensor no longer sits next to intermediates that die before it,
and kiln-cpu-plan-memory leaves out of the arena what is still live there,
so the arena is freed first (kiln-cpu-free-early). Peaks are byte counts
from the profiler's memory events (tools/bench_memory.py), the same on
every run."""
import os
import sys
import threading

import torch

import kiln
from conftest import assert_close, assert_compiled

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from bench_memory import call_peak_bytes  # noqa: E402

MiB = 2**20


def head_then_big_result(x, w):
    h = torch.relu(x @ w)
    h = torch.relu(h @ w)
    s = h.sum(0, keepdim=True)  # small, read by the result's op
    return (x * s).exp()        # the big result, written last


def test_big_result_allocated_after_the_intermediates_die():
    # 1024x1024 f32: 4 MiB each. Eager holds at most two 4 MiB tensors
    # plus the result at its end (12 MiB). Before, kiln allocated the
    # result before the call and kept the arena (both GEMM outputs and the
    # small sum) until the end: 12 MiB as well. Now the arena (8 MiB) dies
    # before the result is allocated: 8 MiB.
    torch.manual_seed(0)
    x, w = torch.randn(1024, 1024), torch.randn(1024, 1024) / 32
    compiled = kiln.compile(head_then_big_result)
    for _ in range(2):
        assert_close(compiled(x, w), head_then_big_result(x, w), rtol=1e-4, atol=1e-4)
    assert_compiled(graphs=1, eager_calls=0)
    peak = call_peak_bytes(lambda: compiled(x, w))
    assert peak <= 8 * MiB + MiB // 4, f"kiln {peak / MiB:.2f} MiB"
    assert peak < call_peak_bytes(lambda: head_then_big_result(x, w))


def test_fresh_tensors_per_call_with_eager_metadata():
    def f(x):
        y = torch.sigmoid(x) * 2
        return y, y.reshape(-1), (x + 1).to(torch.float64), x.sum()
    x = torch.randn(256, 128)
    compiled = kiln.compile(f)
    a = compiled(x)
    b = compiled(x)
    assert_close(b, f(x))
    assert a[0].data_ptr() != b[0].data_ptr()
    assert a[1].data_ptr() == a[0].data_ptr()  # the view shares the result's storage
    assert b[2].dtype == torch.float64 and b[2].is_contiguous()
    b[0].add_(1)  # the caller owns its results
    assert_close(a[0], f(x)[0])
    assert_compiled(graphs=1, eager_calls=0)


def test_symbolic_sizes():
    # A symbolic size makes a result lazy whatever its size; with no
    # elements the code never writes it (its allocation is dead code) and
    # the frontend allocates it after the call.
    def f(x):
        return torch.tanh(x) + x
    compiled = kiln.compile(f, dynamic=True)
    for n in (300, 301, 7, 0):
        x = torch.randn(n, 256)
        assert_close(compiled(x), f(x))
    assert kiln.stats()["dynamic_graphs"] == 2  # the empty batch is a graph of its own
    assert kiln.stats()["eager_calls"] == 0


def test_training_gradients():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                torch.nn.Linear(512, 256))
    x = torch.randn(64, 256)
    model(x).square().mean().backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    compiled = kiln.compile(model)
    for _ in range(2):
        model.zero_grad(set_to_none=True)
        compiled(x).square().mean().backward()
    for p, g in zip(model.parameters(), want):
        assert_close(p.grad, g, rtol=1e-4, atol=1e-5)
    assert kiln.stats()["compiled_backwards"] == 1


def test_threads_call_concurrently():
    # The allocation takes the GIL again from inside the compiled code
    # (which runs without it): several threads at once must neither
    # deadlock nor mix up their results.
    def f(x):
        return torch.exp(x) * 3 - x
    compiled = kiln.compile(f)
    inputs = [torch.randn(128, 256) + i for i in range(4)]
    want = [f(x) for x in inputs]
    compiled(inputs[0])
    errors = []

    def work(i):
        try:
            for _ in range(25):
                torch.testing.assert_close(compiled(inputs[i]), want[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors

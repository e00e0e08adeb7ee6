# SPDX-License-Identifier: Apache-2.0
"""Small constructs that used to break graphs in real model code: torch's
API-usage logging (torchvision's `_log_api_usage_once`), `Tensor.cpu()` and
`.to(own dtype)` on a CPU graph (the tensor itself), `torch.set_grad_enabled`
as a call and as a with-block (the caller's grad mode after the call is
eager's), `Tensor.grad` reads, and `torch.tensor` of values the graph
computed. Each compares with eager and checks the graph/break counters."""
import pytest
import torch

import kiln
from conftest import assert_close, stats


def counts():
    s = stats()
    return s["graphs_compiled"], s["graph_breaks"], s["recompiles"]


def run_twice(fn, *args):
    cf = kiln.compile(fn)
    for _ in range(2):
        assert_close(cf(*args), fn(*args))


def test_api_usage_logging_is_dropped():
    def f(x):
        torch._C._log_api_usage_once("kiln.test")
        return x + 1

    run_twice(f, torch.randn(3))
    assert counts() == (1, 0, 0)


def test_torchvision_stochastic_depth_in_eval_is_one_graph():
    torchvision = pytest.importorskip("torchvision")

    def f(x, y):
        r = torchvision.ops.stochastic_depth(x * 2, 0.2, "row", training=False)
        r += y
        return r

    run_twice(f, torch.randn(2, 3), torch.randn(2, 3))
    assert counts() == (1, 0, 0)


def test_cpu_and_to_own_dtype_return_the_tensor_itself():
    def f(x):
        y = x.cpu()
        z = x.to(torch.float32)
        return y is x, z is x, y * 2 + z

    run_twice(f, torch.randn(4))
    assert counts() == (1, 0, 0)


@pytest.mark.parametrize("mode", [False, True])
def test_set_grad_enabled_as_a_call_leaves_eager_mode(mode):
    def f(x):
        torch.set_grad_enabled(mode)
        return x * 2, torch.is_grad_enabled()

    cf = kiln.compile(f)
    for _ in range(2):
        with torch.no_grad() if mode else torch.enable_grad():
            got = cf(torch.ones(2))
            after = torch.is_grad_enabled()
        assert got[1] is mode and after is mode
        assert_close(got[0], torch.full((2,), 2.0))
    assert stats()["graph_breaks"] == 0


def test_set_grad_enabled_as_a_with_block():
    def f(x):
        with torch.set_grad_enabled(False):
            inside = torch.is_grad_enabled()
            y = x * 3
        return y, inside, torch.is_grad_enabled()

    cf = kiln.compile(f)
    for _ in range(2):
        assert torch.is_grad_enabled()
        y, inside, outside = cf(torch.ones(2))
        assert inside is False and outside is True and torch.is_grad_enabled()
        assert_close(y, torch.full((2,), 3.0))
    assert counts() == (1, 0, 0)


def test_grad_read():
    def f(p, x):
        g = p.grad
        if g is None:
            return x * 2
        return x * g

    p = torch.zeros(3, requires_grad=True)
    with torch.no_grad():
        run_twice(f, p, torch.randn(3))
        p.grad = torch.full((3,), 5.0)
        run_twice(f, p, torch.randn(3))
    assert stats()["graph_breaks"] == 0


def test_tensor_of_graph_values_is_a_stack():
    def f(x):
        a = x.sum()
        b = x.max()
        return torch.tensor([a, b, 1.5]) * 2, torch.as_tensor([a, b])

    run_twice(f, torch.randn(5))
    assert counts() == (1, 0, 0)

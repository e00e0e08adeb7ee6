# SPDX-License-Identifier: Apache-2.0
"""In-place ops on graph inputs (`x.add_`, `+=`, `copy_`, `fill_`, `zero_`,
`out=`, a module buffer updated in place): compiled functionally, with the
final value copied back into the caller's tensor after the graph
(frontend/csrc/capture/ops/InPlace.cpp) and its version counter advanced as
eager's. Each case runs the function on twin inputs eagerly and compiled,
twice, comparing results, the mutated inputs and their `_version`, and
checks one graph with no break or recompile. Inputs that share storage are
refused at capture and guarded per call (never a silently wrong answer)."""
import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats


def counts():
    s = stats()
    return s["graphs_compiled"], s["graph_breaks"], s["recompiles"]


def twin_run(fn, *make_args):
    """Calls `fn` eagerly and compiled on fresh twins of the inputs built
    by `make_args` (callables), twice; compares results, the inputs after
    the call, their versions and the identity of a returned input."""
    cf = kiln.compile(fn)
    for _ in range(2):
        base = [m() for m in make_args]
        eager_in = [t.clone() for t in base]
        comp_in = [t.clone() for t in base]
        expected = fn(*eager_in)
        got = cf(*comp_in)
        assert_close(got, expected)
        for c, e in zip(comp_in, eager_in):
            assert_close(c, e)
            assert c._version == e._version, (c._version, e._version)
        if isinstance(expected, torch.Tensor):
            for c, e in zip(comp_in, eager_in):
                assert (got is c) == (expected is e)


def randn(*shape):
    return lambda: torch.randn(*shape)


def add_(x, y):
    x.add_(y)
    return x * 2


def iadd_returns_input(x, y):
    x += y
    x.mul_(0.5)
    return x


def copy_broadcast(x, y):
    x.copy_(y.sum(0) + 1)
    return x.sum()


def fill_and_zero(x, y):
    x.fill_(3.0)
    y.zero_()
    return x + y


def out_kwarg(x, y, z):
    torch.add(x, y, out=z)
    return z * 2


def relu_then_read(x):
    y = x.relu_()
    return y + x


CASES = [
    (add_, (randn(3, 4), randn(3, 4))),
    (iadd_returns_input, (randn(3, 4), randn(4))),
    (copy_broadcast, (randn(3, 4), randn(2, 4))),
    (fill_and_zero, (randn(2, 3), randn(2, 3))),
    (out_kwarg, (randn(5), randn(5), randn(5))),
    (relu_then_read, (randn(6),)),
]


@pytest.mark.parametrize("fn,inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_inplace_on_inputs_is_one_graph(fn, inputs):
    twin_run(fn, *inputs)
    assert counts() == (1, 0, 0)
    assert stats()["compiled_calls"] == 2


def test_float_result_into_int_input_breaks_like_eager():
    def f(x):
        x.add_(0.5)  # eager: result type Float can't be cast to Long
        return x

    with pytest.raises(RuntimeError):
        f(torch.ones(3, dtype=torch.int64))
    with pytest.raises(RuntimeError):
        kiln.compile(f)(torch.ones(3, dtype=torch.int64))


def test_int_result_into_float_input_is_cast():
    twin_run(lambda x, i: x.add_(i), randn(4), lambda: torch.arange(4))
    assert counts() == (1, 0, 0)


class RunningMean(nn.Module):
    """A buffer updated in place (a running statistic)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(4))

    def forward(self, x):
        self.mean.mul_(0.9)
        self.mean += 0.1 * x.mean(0)
        return x - self.mean


def test_buffer_updated_in_place():
    torch.manual_seed(0)
    eager, comp = RunningMean(), RunningMean()
    cf = kiln.compile(comp)
    for _ in range(3):
        x = torch.randn(5, 4)
        assert_close(cf(x), eager(x))
        assert_close(comp.mean, eager.mean)
        assert comp.mean._version == eager.mean._version
    assert counts() == (1, 0, 0)


def test_aliased_inputs_fall_back_and_stay_right():
    def f(x, y):
        x.add_(1)
        return y * 2  # y aliases x: eager sees the update

    cf = kiln.compile(f)
    # Distinct inputs: compiled.
    a, b = torch.zeros(3), torch.zeros(3)
    assert_close(cf(a, b), torch.zeros(3))
    assert_close(a, torch.ones(3))
    assert counts() == (1, 0, 0)
    # The same tensor twice: the alias guard fails, the capture refuses
    # the update (a break), and the answer is eager's.
    t = torch.zeros(3)
    assert_close(cf(t, t), torch.full((3,), 2.0))
    assert_close(t, torch.ones(3))
    # A view of the same storage too.
    base = torch.zeros(2, 3)
    assert_close(cf(base[0], base[0]), torch.full((3,), 2.0))
    assert stats()["graph_breaks"] >= 1
    # Distinct again: the first entry still serves.
    a, b = torch.zeros(3), torch.ones(3)
    assert_close(cf(a, b), torch.full((3,), 2.0))
    assert_close(a, torch.ones(3))


def test_update_of_a_viewed_input_rebuilds_the_view():
    def f(x):
        v = x.view(2, 2)
        x.add_(1)
        return v * 1

    x1, x2 = torch.zeros(4), torch.zeros(4)
    expected = f(x1)
    got = kiln.compile(f)(x2)
    assert_close(got, expected)
    assert_close(x2, x1)
    assert stats()["graph_breaks"] == 0  # the view rebuilt (ViewWrites.cpp)


def test_inplace_in_a_graph_that_needs_gradients_breaks():
    w = torch.randn(3, requires_grad=True)

    def f(x):
        x.add_(1)
        return x * w

    x1, x2 = torch.zeros(3), torch.zeros(3)
    expected = f(x1)
    got = kiln.compile(f)(x2)
    assert_close(got, expected)
    assert_close(x2, x1)
    assert got.requires_grad


def test_returned_view_of_updated_input_aliases_it():
    def f(x):
        x.mul_(2)
        return x.view(2, 2)

    x = torch.ones(4)
    r = kiln.compile(f)(x)
    assert_close(r, torch.full((2, 2), 2.0))
    r.add_(1)  # a view of x, as in eager
    assert_close(x, torch.full((4,), 3.0))
    assert counts() == (1, 0, 0)


def test_inplace_after_graph_break_writes_back_before_resume():
    def f(x):
        x.add_(1)
        print("break")  # a graph break after the update
        return x.clone()

    x1, x2 = torch.zeros(3), torch.zeros(3)
    expected = f(x1)
    got = kiln.compile(f)(x2)
    assert_close(got, expected)
    assert_close(x2, x1)


def setitem_slice_scalar(x):
    x[:, 1:3] = 0.0
    return x.sum(1)


def setitem_int_tensor_value(x, v):
    x[1] = v
    return x * 1


def setitem_broadcast_region(x, v):
    x[0, ::2] = v[:1]
    x[..., -1] += 1  # a read-modify-write through __getitem__/__setitem__
    return x.clone()


def setitem_mask(x):
    x[x < 0] = 0
    return x + 1


def setitem_on_computed(x):
    y = x * 2
    y[0] = -1.0
    y[:, 0] = torch.arange(3.0)
    return y


SETITEM = [
    (setitem_slice_scalar, (randn(3, 4),)),
    (setitem_int_tensor_value, (randn(3, 4), randn(4))),
    (setitem_broadcast_region, (randn(2, 6), randn(3))),
    (setitem_mask, (randn(4, 5),)),
    (setitem_on_computed, (randn(3, 4),)),
]


@pytest.mark.parametrize("fn,inputs", SETITEM, ids=[c[0].__name__ for c in SETITEM])
def test_index_assignment_is_one_graph(fn, inputs):
    twin_run(fn, *inputs)
    assert counts() == (1, 0, 0)


def test_index_assignment_with_tensor_indices_breaks_and_stays_right():
    def f(x, i):
        x[i] = 1.0
        return x * 2

    x1, x2 = torch.zeros(5), torch.zeros(5)
    i = torch.tensor([0, 3])
    assert_close(kiln.compile(f)(x2, i), f(x1, i))
    assert_close(x2, x1)


def test_inplace_update_of_an_input_whose_elements_share_memory_runs_eagerly():
    # An unfolded (overlapping windows) or expanded input: eager writes
    # through every alias; kiln's write-back of a functional result lost
    # updates (unfold) or raised (expand). Such an update is a break.
    def windows(w):
        w[0] = 7.0
        w[:, 1] += 3.0
        return w.sum()

    def fill(x):
        x.fill_(2.0)
        return x.sum()

    def strided(x):  # a strided slice does not overlap: stays compiled
        x.mul_(2.0)
        return x + 1

    for fn, make in ((windows, lambda: torch.arange(5.0).unfold(0, 3, 1)),
                     (fill, lambda: torch.arange(4.0).expand(3, 4)),
                     (strided, lambda: torch.arange(12.0).view(3, 4)[:, ::2])):
        results = []
        for f in (fn, kiln.compile(fn)):
            x = make()
            out = f(x)
            results.append((out, x._base.clone() if x._base is not None else x.clone()))
        torch.testing.assert_close(results[1], results[0])

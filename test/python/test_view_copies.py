# SPDX-License-Identifier: Apache-2.0
"""Views that are copies in eager, and tensor identity of inputs.

`x.t().contiguous()`, `x.t().reshape(-1)`, `x.expand(...).reshape(...)` make
a new tensor in eager, while the same calls on a contiguous input return a
view. kiln decides at capture from the input's guarded strides
(capture/values/ViewSteps.h): a copying step gives a fresh tensor, so later
in-place updates of the copy do not reach the input, updates of the input
do not reach the copy, and one copy held in several places (a local and the
stack at a graph break) stays one object. Before, such "views" were
replayed from the input after the graph: an in-place update of the copy
was lost at a break, and a copy taken before an update of its input came
back with the update applied.

Identity: the same tensor passed twice is one object in eager (`a is b`,
`id(a) == id(b)`, `a in [b]`); kiln cannot know that at capture for every
call, so those comparisons between two input tensors break the graph (eager
answers them) instead of answering from the first call."""
import pytest
import torch

import kiln
from conftest import assert_close, stats


def twin(fn, *makers, calls=2):
    """Runs `fn` eagerly and compiled on twin inputs `calls` times and
    compares the results and the inputs after the call."""
    compiled = kiln.compile(fn)
    for _ in range(calls):
        base = [m() for m in makers]
        e_in = [t.clone() for t in base]
        k_in = [t.clone() for t in base]
        expected = fn(*e_in)
        got = compiled(*k_in)
        assert_close(got, expected)
        for k, e in zip(k_in, e_in):
            assert_close(k, e)
    return stats()


def rand(*shape):
    return lambda: torch.randn(*shape)


def contiguous_copy_updated(x):
    y = x.t().contiguous()
    y.mul_(0)
    return x, y


def reshape_copy_updated(x):
    y = x.t().reshape(-1)
    y.add_(1)
    return x, y


def expand_reshape_updated(x):
    y = x.unsqueeze(0).expand(2, 3, 4).reshape(6, 4)
    y.add_(1)
    return x, y


def slice_contiguous_updated(x):
    y = x[::2].contiguous()
    y.mul_(3)
    return x, y


def flatten_transposed_updated(x):
    y = x.transpose(0, 1).flatten()
    y.add_(1)
    return x, y


def copy_then_input_updated(x):
    y = x.t()
    x.add_(1)
    z = y.contiguous()
    x.add_(1)
    return z


def copy_read_then_updated(x):
    y = x.t().contiguous()
    s = y.sum()
    y.add_(1)
    return x, y, s


def one_copy_two_names(x):
    y = x.t().contiguous()
    z = y
    z.add_(1)
    return y, z, y is z


def view_of_a_copy_updated(x):
    y = x.T.contiguous()
    w = y.view(-1)
    w.add_(1)
    return x, y


def view_of_a_clone_updated(x):
    y = x.clone()
    w = y.view(-1)
    w.add_(1)
    return x, y


@pytest.mark.parametrize("fn", [
    contiguous_copy_updated, reshape_copy_updated, expand_reshape_updated,
    slice_contiguous_updated, flatten_transposed_updated, copy_then_input_updated,
    copy_read_then_updated, one_copy_two_names, view_of_a_copy_updated,
    view_of_a_clone_updated,
])
def test_copying_view_steps_match_eager(fn):
    shape = (4, 3) if fn is slice_contiguous_updated else (3, 4)
    twin(fn, rand(*shape))


@pytest.mark.parametrize("fn", [contiguous_copy_updated, reshape_copy_updated,
                                expand_reshape_updated, flatten_transposed_updated])
def test_an_update_of_a_copy_needs_no_break(fn):
    # The copy is a tensor the graph computed: its update is functional.
    s = twin(fn, rand(3, 4))
    assert s["graph_breaks"] == 0 and s["graphs_compiled"] == 1, s


def test_reshape_of_a_contiguous_input_still_aliases_it():
    def f(x):
        y = x.reshape(-1)
        y.add_(1)
        return x, y

    s = twin(f, rand(3, 4))
    assert s["graph_breaks"] == 0, s


def test_a_returned_copy_is_not_the_input():
    def f(x):
        return x.t().contiguous()

    x = torch.randn(3, 4)
    r = kiln.compile(f)(x)
    assert r.is_contiguous() and r.data_ptr() != x.data_ptr()
    r.add_(1)
    assert_close(x.t() + 1, r)


def identity(a, b):
    return a is b, a + b


def ids_equal(a, b):
    return id(a) == id(b), a * 2


def contains(a, b):
    return a in [b], a - 1


@pytest.mark.parametrize("fn", [identity, ids_equal, contains])
def test_identity_of_two_inputs_follows_the_call(fn):
    t, u = torch.ones(3), torch.ones(3)
    cf = kiln.compile(fn)
    got, expected = cf(t, t), fn(t, t)
    assert got[0] is expected[0] is True
    assert_close(got[1], expected[1])
    if fn is contains:  # eager compares different tensors with == (ambiguous)
        with pytest.raises(RuntimeError):
            cf(t, u)
        return
    assert cf(t, u)[0] is False
    assert cf(t, t)[0] is True


def test_view_that_eager_refuses_raises_like_eager():
    """`view` where the input's strides allow no view: eager raises (use
    reshape); kiln did the reshape's copy and returned a result."""
    def flat(x):
        return x.view(-1) * 2

    compiled = kiln.compile(flat)
    x = torch.randn(3, 4)
    assert_close(compiled(x), flat(x))
    t = torch.randn(4, 3).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        flat(t)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        compiled(t)
    # reshape of the same input is the copy, in one graph
    reshaped = kiln.compile(lambda x: x.reshape(-1) * 2)
    assert_close(reshaped(t), t.reshape(-1) * 2)


def test_returned_contiguous_of_a_strided_input_is_contiguous():
    # A copy in eager: kiln returned a clone keeping the input's strides,
    # so the user's `.view(-1)` raised.
    xt = torch.randn(5, 4).t()
    out = kiln.compile(lambda a: a.contiguous())(xt)
    assert out.is_contiguous() and out.stride() == (5, 1)
    assert out.data_ptr() != xt.data_ptr()
    torch.testing.assert_close(out, xt)
    out.view(-1)


def test_contiguous_channels_last_is_a_copy():
    # kiln ignored memory_format and returned the input itself: writes
    # through the result reached the input.
    x = torch.zeros(2, 3, 4, 5)
    out = kiln.compile(lambda a: a.contiguous(memory_format=torch.channels_last))(x)
    out.add_(1)
    assert x.sum().item() == 0.0

    def in_graph(a):
        y = a.contiguous(memory_format=torch.channels_last)
        y.add_(1)
        return a

    x = torch.zeros(2, 3, 4, 5)
    kiln.compile(in_graph)(x)
    assert x.sum().item() == 0.0

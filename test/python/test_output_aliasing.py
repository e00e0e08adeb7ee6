# SPDX-License-Identifier: Apache-2.0
"""Returned views of tensors the graph computed alias them as in eager.

A function that returns a computed tensor together with views of it (or
only a view: `(x + 1).t()`) gives the caller tensors that share storage in
eager: an in-place update of one is seen through the others, and a view's
strides are the view's, not a fresh contiguous copy's. kiln returns the
computed tensor as a graph result and rebuilds each view from it by
replaying the view ops (OutputSlot::GraphView), also for values live at a
graph break. Each case mutates every returned tensor in turn, eagerly and
compiled, and compares all of them, their strides and their `_base` links,
and checks that one graph ran with no break.
"""
import pytest
import torch

import kiln
from conftest import assert_close, stats

VIEWS = {
    "t": lambda y: y.t(),
    "T": lambda y: y.T,
    "transpose": lambda y: y.transpose(0, 1),
    "permute": lambda y: y.permute(1, 0),
    "view": lambda y: y.view(-1),
    "view2": lambda y: y.view(2, 6),
    "reshape": lambda y: y.reshape(6, 2),
    "flatten": lambda y: y.flatten(),
    "unsqueeze": lambda y: y.unsqueeze(1),
    "squeeze": lambda y: y.unsqueeze(0).squeeze(0),
    "expand": lambda y: y[:1].expand(3, 4),
    "slice": lambda y: y[:, 1:3],
    "step_slice": lambda y: y[::2, ::3],
    "select": lambda y: y[1],
    "select_col": lambda y: y[:, 2],
    "narrow": lambda y: y.narrow(1, 1, 2),
    "chunk": lambda y: y.chunk(2, dim=1)[1],
    "split": lambda y: y.split(1, dim=0)[2],
    "unbind": lambda y: y.unbind(0)[1],
    "movedim": lambda y: y.movedim(0, 1),
    "view_as": lambda y: y.view_as(torch.empty(4, 3)),
    "chain": lambda y: y.t()[1:].reshape(-1),
}


def _run(fn, x):
    outs = fn(x)
    return list(outs) if isinstance(outs, tuple) else [outs]


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_returned_view_of_computed_tensor_aliases_it(name):
    view = VIEWS[name]

    def f(x):
        y = x * 2 + 1
        return y, view(y)

    x = torch.randn(3, 4)
    compiled = kiln.compile(f)
    for which in range(2):  # update the base, then the view, in place
        eager, got = _run(f, x), _run(compiled, x)
        assert [t.stride() for t in got] == [t.stride() for t in eager]
        assert (got[1]._base is got[0]) == (eager[1]._base is eager[0])
        raised = []
        for outs in (eager, got):  # eager refuses to write through an expand
            try:
                outs[which].add_(10)
                raised.append(None)
            except RuntimeError as e:
                raised.append(type(e))
        assert raised[0] == raised[1]
        for g, e in zip(got, eager):
            assert_close(g, e)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, s
    assert s["compiled_calls"] == 2 and s["eager_calls"] == 0, s


@pytest.mark.parametrize("name", ["t", "slice", "select", "expand", "chain"])
def test_view_alone_has_eager_strides(name):
    view = VIEWS[name]

    def f(x):
        return view(torch.relu(x) + 1)

    x = torch.randn(3, 4)
    got, eager = kiln.compile(f)(x), f(x)
    assert_close(got, eager)
    assert got.stride() == eager.stride() and got.is_contiguous() == eager.is_contiguous()
    assert stats()["graphs_compiled"] == 1


def test_views_live_at_a_graph_break_alias_their_base():
    def f(x):
        y = x.sin() + 1
        v = y.t()
        w = y[1:]
        print("break")  # a graph break with y and its views live
        y.mul_(2)
        return y, v, w

    x = torch.randn(3, 4)
    eager, got = f(x), kiln.compile(f)(x)
    for g, e in zip(got, eager):
        assert_close(g, e)
        assert g.stride() == e.stride()
    assert got[1]._base is got[0] and got[2]._base is got[0]
    s = stats()
    # the print, then y.mul_ on a tensor with live views (a break of its own)
    assert s["graph_breaks"] == 2 and s["compiled_calls"] >= 1, s


def test_view_of_computed_tensor_under_autograd_is_still_right():
    # The autograd recompute path keeps views as copies (values and
    # gradients stay eager's; aliasing there is not rebuilt yet).
    def f(x):
        y = x * 2
        return y, y.t()

    x = torch.randn(3, 4, requires_grad=True)
    y, v = kiln.compile(f)(x)
    (y.sum() + (v * v).sum()).backward()
    x2 = x.detach().clone().requires_grad_()
    ye, ve = f(x2)
    (ye.sum() + (ve * ve).sum()).backward()
    assert_close(x.grad, x2.grad)
    assert_close(v, ve)


@pytest.mark.parametrize("base", ["computed", "input"])
def test_view_with_two_symbolic_dims_is_returned_correctly(base):
    # reshape/unsqueeze of a tensor with two symbolic dims cannot be replayed
    # as reshape(-1, -1, ...): such a view is returned as a copy instead.
    def f(x):
        y = x * 2 if base == "computed" else x
        return y.unsqueeze(0)

    compiled = kiln.compile(f, dynamic=True)
    for shape in ((4, 6), (8, 10), (5, 3)):
        x = torch.randn(*shape)
        assert torch.equal(compiled(x), f(x))
    s = stats()  # (the copied output specializes the sizes: a recompile per shape)
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


# Views made by torch functions kiln runs through the fallback or a Python
# decomposition: a returned one is rebuilt from the caller's tensor (a
# same-name Tensor method replayed, and the result's index for several
# results), so writes through it reach the input as in eager (they were
# copies: the input stayed unchanged).
INPUT_VIEWS = {
    "tensor_split": lambda b: b.tensor_split(2, 0)[1],
    "hsplit": lambda b: torch.hsplit(b, 2)[1],
    "vsplit": lambda b: torch.vsplit(b, [1])[1],
    "unsafe_chunk": lambda b: b.unsafe_chunk(3, 0)[2],
    "split_with_sizes": lambda b: b.split_with_sizes([1, 2], 0)[1],
    "diagonal": lambda b: torch.diagonal(b, 0, 0, 1),
    "as_strided": lambda b: torch.as_strided(b, (2, 2), (1, 2)),
    "detach": lambda b: torch.detach(b),
    "positive": lambda b: torch.positive(b),
    "atleast_1d": lambda b: torch.atleast_1d(b),
    "atleast_2d": lambda b: torch.atleast_2d(b),
    "atleast_3d": lambda b: torch.atleast_3d(b),
    "atleast_3d_of_1d": lambda b: torch.atleast_3d(b[0]),
    "atleast_2d_pair": lambda b: torch.atleast_2d(b[0], b)[0],
}


@pytest.mark.parametrize("name", sorted(INPUT_VIEWS))
def test_returned_view_of_an_input_made_by_a_torch_function_aliases_it(name):
    view = INPUT_VIEWS[name]
    results = []
    for fn in (view, kiln.compile(view)):
        a = torch.arange(12.0).view(3, 4)
        out = fn(a)
        out.mul_(-1)
        results.append((a.clone(), out.shape, out.stride(), out is a))
    assert torch.equal(results[0][0], results[1][0])
    assert results[0][1:] == results[1][1:]

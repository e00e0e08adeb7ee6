# SPDX-License-Identifier: Apache-2.0
"""Unsupported code runs eagerly (correctly), is counted and logged;
fullgraph=True turns the graph break into an error. A break mid-frame
compiles the graph before it and resumes after it (test_resume.py has the
resume cases); these tests check what runs eagerly and the counters."""
import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats

LOG_BREAKS = dict(logs=frozenset({"graph_breaks"}))


def with_print(x):
    y = x * 2
    print("inside with_print")
    return y + 1


def test_print_breaks_and_resumes(capfd):
    f = kiln.compile(with_print)
    x = torch.randn(3)
    with kiln.config.patch(**LOG_BREAKS):
        assert_close(f(x), x * 2 + 1)
    out, err = capfd.readouterr()
    assert out.count("inside with_print") == 1
    assert "graph break in with_print" in err and "print" in err
    s = stats()
    # the graph before print and the resume function's graph after it
    assert s["graph_breaks"] == 1 and s["compiled_calls"] == 2 and s["graphs_compiled"] == 2, s
    # Later calls do not retry the capture: both graphs hit, print runs once.
    assert_close(f(x), x * 2 + 1)
    out, _ = capfd.readouterr()
    assert out.count("inside with_print") == 1
    s = stats()
    assert s["graph_breaks"] == 1 and s["eager_calls"] == 0 and s["cache_hits"] == 2, s


def test_no_log_without_channel(capfd):
    f = kiln.compile(with_print)
    with kiln.config.patch(logs=frozenset()):
        f(torch.randn(2))
    _, err = capfd.readouterr()
    assert "[kiln:graph_breaks]" not in err
    assert stats()["graph_breaks"] == 1


def data_dependent(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def test_data_dependent_branch_resumes_in_either_branch(capfd):
    f = kiln.compile(data_dependent)
    pos, neg = torch.ones(3), -torch.ones(3)
    with kiln.config.patch(**LOG_BREAKS):
        assert_close(f(pos), pos * 2)
        assert_close(f(neg), neg - 1)
    _, err = capfd.readouterr()
    assert "data-dependent" in err
    s = stats()
    # the condition's graph, then one resume function per branch
    assert s["graph_breaks"] == 1 and s["graphs_compiled"] == 3 and s["eager_calls"] == 0, s


def test_item_breaks(capfd):
    # .item() itself is a Python number of the graph; `//` on it breaks
    def f(x):
        return x * (x.sum().item() // 0.5)

    cf = kiln.compile(f)
    x = torch.randn(4)
    with kiln.config.patch(**LOG_BREAKS):
        assert_close(cf(x), f(x))
    _, err = capfd.readouterr()
    assert "read from a tensor" in err
    s = stats()
    assert s["graph_breaks"] == 1 and s["graphs_compiled"] == 2 and s["eager_calls"] == 0, s


def test_unsupported_torch_op_breaks(capfd):
    def f(x):
        return torch.nonzero(x * 2).sum() + 1   # data-dependent output shape

    cf = kiln.compile(f)
    x = torch.randn(5, 2)
    with kiln.config.patch(**LOG_BREAKS):
        assert_close(cf(x), f(x))
    _, err = capfd.readouterr()
    assert "nonzero" in err
    assert stats()["graph_breaks"] == 1 and stats()["eager_calls"] == 0


def test_bool_mask_indexing_breaks():
    # Integer index tensors are captured (TorchIndexing.cpp's advancedIndex);
    # a bool mask's result shape depends on data: the graph breaks (its meta
    # run fails, so it is no per-op fallback either).
    def f(x, i):
        return x[i] * 2 + x[x > 0].sum()

    cf = kiln.compile(f)
    x = torch.randn(4, 3)
    i = torch.tensor([0, 2])
    assert_close(cf(x, i), f(x, i))
    assert stats()["graph_breaks"] == 1 and stats()["graphs_compiled"] == 2
    assert stats()["fallback_ops"] == 0 and stats()["fallback_calls"] == 0


@pytest.mark.parametrize("fn,construct", [
    (with_print, "print"),
    (data_dependent, "data-dependent"),
])
def test_fullgraph_raises_naming_construct(fn, construct):
    f = kiln.compile(fn, fullgraph=True)
    with pytest.raises(RuntimeError, match=construct):
        f(torch.ones(3))
    assert stats()["graph_breaks"] == 1


def test_fullgraph_raises_on_unsupported_op():
    def f(x):
        return torch.nonzero(x)

    with pytest.raises(RuntimeError, match="nonzero"):
        kiln.compile(f, fullgraph=True)(torch.ones(3))


def test_fullgraph_module():
    class M(nn.Module):
        def forward(self, x):
            print("side effect")
            return x

    with pytest.raises(RuntimeError, match="print"):
        kiln.compile(M(), fullgraph=True)(torch.ones(2))


class Helper(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2


def test_frames_after_a_break_are_compiled(capfd):
    helper = Helper().eval()

    def outer(x):
        print("outer runs eagerly")
        y = helper(x)
        return y + 1

    f = kiln.compile(outer)
    x = torch.randn(3, 4)
    with torch.no_grad():
        expected = helper(x) + 1
        assert_close(f(x), expected)
        assert_close(f(x), expected)
    out, _ = capfd.readouterr()
    assert out.count("outer runs eagerly") == 2
    s = stats()
    # outer breaks once at print; its resume function inlines Helper.forward:
    # two graphs, each run twice
    assert s["graph_breaks"] == 1, s
    assert s["graphs_compiled"] == 2 and s["compiled_calls"] == 4 and s["cache_hits"] == 2, s


def inplace_add(x):
    x += 1
    return x * 2


def test_inplace_on_input_is_compiled_and_mutates():
    f = kiln.compile(inplace_add)
    x = torch.zeros(3)
    x_eager = torch.zeros(3)
    out = f(x)
    expected = inplace_add(x_eager)
    assert_close(out, expected)
    assert_close(x, x_eager)  # the caller's tensor was mutated, as in eager
    assert_close(x, torch.ones(3))
    # `x += 1` is in the graph, its value written back into the caller's tensor
    assert stats()["graph_breaks"] == 0 and stats()["graphs_compiled"] == 1


def test_inplace_method_on_input_is_compiled_and_mutates():
    def f(x):
        x.mul_(3)
        return x + 1

    cf = kiln.compile(f)
    x = torch.ones(2)
    out = cf(x)
    assert_close(x, torch.full((2,), 3.0))
    assert_close(out, torch.full((2,), 4.0))
    assert stats()["graph_breaks"] == 0


def test_inplace_on_fresh_intermediate_is_compiled():
    def f(x):
        y = x * 2
        y += 1
        y *= x
        return y

    cf = kiln.compile(f)
    x = torch.randn(5)
    assert_close(cf(x), f(x.clone()))
    s = stats()
    assert s["graph_breaks"] == 0 and s["compiled_calls"] == 1, s


def test_inplace_through_view_of_intermediate_falls_back():
    def f(x):
        y = x * 2
        v = y.view(-1)
        y += 1          # also visible through v in eager
        return v

    cf = kiln.compile(f)
    x = torch.randn(2, 3)
    assert_close(cf(x), f(x))
    assert stats()["graph_breaks"] == 1


def test_dropout_training_compiles():
    # Dropout in training mode is a kiln.random graph (test_random.py).
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    compiled = kiln.compile(model)
    torch.manual_seed(1)
    with torch.no_grad():
        out = compiled(torch.ones(2, 4))
    assert out.shape == (2, 4)
    assert stats()["graph_breaks"] == 0 and stats()["compiled_calls"] == 1


def test_exception_in_compiled_function_propagates():
    def f(x):
        if x.shape[0] == 3:
            raise ValueError("bad size")
        return x

    cf = kiln.compile(f)
    with pytest.raises(ValueError, match="bad size"):
        cf(torch.ones(3))
    # ValueError(...) is built at capture time (a built-in exception); the
    # raise is the one (user-error) break
    assert stats()["graph_breaks"] == 1


def test_shape_error_matches_eager():
    def f(x, y):
        return x @ y

    cf = kiln.compile(f)
    with pytest.raises(RuntimeError):
        cf(torch.ones(2, 3), torch.ones(4, 5))
    # the capture breaks at `@`, which then raises eagerly
    assert stats()["graph_breaks"] == 1


@pytest.mark.parametrize("op", [
    lambda x: torch.softmax(x, -1),
    lambda x: torch.nn.functional.gelu(x),
    lambda x: torch.nn.functional.silu(x),
])
def test_integer_input_eager_rejects_is_not_compiled(op):
    # eager raises for these on int64; kiln must not quietly return numbers
    x = torch.arange(4)
    with pytest.raises(NotImplementedError):
        op(x)
    with pytest.raises(NotImplementedError):
        kiln.compile(op)(x)
    # The capture tries the call on one-element int64 tensors first
    # (capture/ops/EagerDTypeChecks.cpp): eager's refusal is a user-error
    # break, so the frame runs eagerly and raises there.
    s = stats()
    assert s["graph_breaks"] == 1 and s["fallback_ops"] == 0 and s["fallback_calls"] == 0, s


def test_inplace_methods_on_fresh_intermediates_are_compiled():
    def f(x, y):
        h = x * 2
        alias = h
        before = h + 0
        h.add_(y, alpha=0.5).relu_()
        h.clamp_(max=1.0)
        return alias, before, torch.nn.functional.relu(x - 1, inplace=True)

    x, y = torch.randn(6), torch.randn(6)
    xe = x.clone()
    expected = f(xe, y)
    got = kiln.compile(f)(x, y)
    assert_close(got, expected)
    assert_close(x, xe)
    s = stats()
    assert s["graph_breaks"] == 0 and s["compiled_calls"] == 1, s


def test_relu_inplace_module_is_compiled():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 2)).eval()
    compiled = kiln.compile(model)
    x = torch.randn(3, 4)
    x_copy = x.clone()
    with torch.no_grad():
        assert_close(compiled(x), model(x))
    assert_close(x, x_copy)
    assert stats()["graph_breaks"] == 0 and stats()["compiled_calls"] == 1


@pytest.mark.parametrize("fn,breaks", [
    (lambda x: x.relu_() + 1, 0),  # on the input: written back after the graph
    (lambda x: torch.nn.functional.relu(x, inplace=True) * 2, 0),
    (lambda x: x.view(-1).mul_(2), 0),  # through a view op: written through
])
def test_inplace_on_input_or_view_mutates(fn, breaks):
    x = torch.randn(2, 3)
    x_eager = x.clone()
    expected = fn(x_eager)
    assert_close(kiln.compile(fn)(x), expected)
    assert_close(x, x_eager)
    assert stats()["graph_breaks"] == breaks


def test_inplace_changing_dtype_falls_back_like_eager():
    def f(x):
        return (x * 1).add_(0.5)

    with pytest.raises(RuntimeError):
        f(torch.arange(3))
    with pytest.raises(RuntimeError):
        kiln.compile(f)(torch.arange(3))
    assert stats()["graph_breaks"] == 1


class PrintLayer(nn.Module):
    def forward(self, x):
        print("eager layer")
        return x + 1


def test_graph_break_is_per_guarded_state_not_per_code():
    # Both models run nn.Sequential.forward (one code object); only the one
    # with an unsupported layer may fall back.
    bad = nn.Sequential(nn.Linear(3, 3), PrintLayer()).eval()
    good = nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval()
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert_close(kiln.compile(bad)(x), bad(x))
        s = stats()
        # Sequential.forward breaks inside its loop over the layers (runs
        # eagerly), then PrintLayer.forward (run eagerly by it) breaks at
        # print and resumes: two graphs
        assert s["graph_breaks"] == 2 and s["eager_calls"] == 1, s
        assert s["graphs_compiled"] == 2 and s["compiled_calls"] == 2, s
        assert_close(kiln.compile(good)(x), good(x))
        assert_close(kiln.compile(bad)(x), bad(x))
    s = stats()
    assert s["graphs_compiled"] == 3 and s["compiled_calls"] == 5 and s["graph_breaks"] == 2, s
    assert s["eager_calls"] == 2, s


def test_shape_dependent_break_does_not_disable_other_shapes(capfd):
    def f(x):
        if x.shape[0] > 2:
            print("big input")
        return x * 2

    cf = kiln.compile(f)
    big, small = torch.ones(4), torch.ones(2)
    assert_close(cf(big), big * 2)
    assert_close(cf(small), small * 2)
    assert_close(cf(big), big * 2)
    assert_close(cf(small), small * 2)
    out, _ = capfd.readouterr()
    assert out.count("big input") == 2
    s = stats()
    # big: the graph before print + the resume's graph; small: one graph
    assert s["graph_breaks"] == 1 and s["eager_calls"] == 0, s
    assert s["graphs_compiled"] == 3 and s["compiled_calls"] == 6, s


def test_fullgraph_raises_on_a_known_break():
    f = kiln.compile(with_print)
    strict = kiln.compile(with_print, fullgraph=True)
    x = torch.ones(3)
    assert_close(f(x), x * 2 + 1)
    with pytest.raises(RuntimeError, match="print"):
        strict(x)


class FreshProperty(nn.Module):
    @property
    def opts(self):
        return object()  # a new object on every access: an identity guard never holds again

    def forward(self, x):
        o = self.opts
        print("breaks after reading", type(o).__name__)
        return x * 2


def test_break_with_unrecheckable_assumption_is_cached():
    model = FreshProperty()
    compiled = kiln.compile(model)
    x = torch.ones(2)
    for _ in range(3):
        assert_close(compiled(x), x * 2)
    s = stats()
    # forward cannot resume after its break (the guard on the property's
    # value never holds): it runs eagerly without recapturing. The property
    # getter (a frame of its own once forward runs eagerly) breaks at
    # object() and resumes.
    assert s["graph_breaks"] == 2 and s["eager_calls"] == 3, s

# SPDX-License-Identifier: Apache-2.0
"""Graph breaks that keep going: the graph before an unsupported construct
is compiled, the construct runs eagerly, and the rest of the function is
captured again in a generated resume function (kiln/_resume.py). Each case
compares with eager and checks the graphs/breaks counters."""
import sys
import traceback

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats


def counts():
    s = stats()
    return s["graphs_compiled"], s["graph_breaks"], s["eager_calls"]


def run_twice(fn, *args):
    """Compiled twice (capture, then cache hits) vs eager; the results."""
    cf = kiln.compile(fn)
    expected = fn(*args)
    got = cf(*args)
    assert_close(got, expected)
    assert_close(cf(*args), expected)
    return got


# --- the basic breaks -----------------------------------------------------

def test_print_mid_function(capfd):
    def f(x):
        y = torch.relu(x) * 2
        print("between")
        return y.sum(0) + x

    x = torch.randn(3, 4)
    run_twice(f, x)
    out, _ = capfd.readouterr()
    assert out.count("between") == 3  # eager + 2 compiled calls
    assert counts() == (2, 1, 0)
    assert stats()["compiled_calls"] == 4 and stats()["cache_hits"] == 2


def test_item_mid_function():
    # .item() is a Python number inside the graph (test_scalars_capture.py);
    # floor division of it is not compiled: a break, s passed on as a float
    def f(x):
        s = x.abs().sum().item() // 0.5
        return x * s + 1

    run_twice(f, torch.randn(5))
    assert counts() == (2, 1, 0)


def test_item_value_changes_between_calls():
    def f(x):
        return x * x.max().item()

    cf = kiln.compile(f)
    for x in (torch.randn(4), torch.randn(4) + 3):
        assert_close(cf(x), f(x))
    # the scalar is a value of the graph: no break, no recompile
    assert stats()["graph_breaks"] == 0 and stats()["recompiles"] == 0


def test_tolist_mid_function():
    def f(x):
        vals = (x * 2).tolist()
        return x + len(vals), vals

    run_twice(f, torch.arange(4.0))
    assert counts()[1] == 0  # a list of Python floats read inside the graph


def test_if_on_tensor_both_branches():
    def f(x):
        y = x * 3
        if y.sum() > 0:
            z = y + 1
        else:
            z = y - 1
        return z * 2

    cf = kiln.compile(f)
    for x in (torch.ones(3), -torch.ones(3), torch.ones(3), -torch.ones(3)):
        assert_close(cf(x), f(x))
    # the condition's graph, one resume per branch, each reused
    assert counts() == (3, 1, 0)
    assert stats()["cache_hits"] == 5


def test_if_not_on_tensor():
    def f(x):
        if not (x > 0).all():
            return x.abs()
        return x

    cf = kiln.compile(f)
    for x in (torch.randn(6), torch.rand(6)):
        assert_close(cf(x), f(x))
    assert stats()["graph_breaks"] == 1


def test_return_inside_branch_after_break():
    def f(x):
        if x.mean() > 0.5:
            return x * 10
        y = x + 1
        return y, y * 2

    cf = kiln.compile(f)
    for x in (torch.ones(2), torch.zeros(2)):
        assert_close(cf(x), f(x))


def test_several_breaks_in_one_function(capfd):
    def f(x):
        a = x * 2
        print("one")
        b = a + x.sum().item() // 0.25
        print("two")
        if b.sum() > 0:
            return b - 1
        return b + 1

    x = torch.randn(4)
    run_twice(f, x)
    out, _ = capfd.readouterr()
    assert out.count("one") == 3 and out.count("two") == 3
    graphs, breaks, eager = counts()
    assert breaks == 4 and eager == 0 and graphs == 5


def test_discarded_result_does_not_specialize_the_resume():
    import time

    def f(x):
        y = x * 2
        time.perf_counter()  # a new float each call, popped at once
        return y + 1

    cf = kiln.compile(f)
    x = torch.randn(3)
    for _ in range(4):
        assert_close(cf(x), f(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 0 and s["cache_hits"] == 6, s


def test_break_at_first_instruction():
    def f(x):
        print("first")
        return x + 1

    run_twice(f, torch.randn(2))
    assert counts() == (2, 1, 0)


def test_break_at_return_value_expression():
    def f(x):
        return (x * 2).sum().item()

    got = run_twice(f, torch.arange(3.0))
    assert got == 6.0 and type(got) is float
    assert counts()[1] == 0


def test_unsupported_op_mid_function():
    def f(x):
        idx = torch.nonzero(x > 0)  # data-dependent shape
        return idx.sum() + x.sum()

    run_twice(f, torch.randn(6))
    assert counts()[1:] == (1, 0)


# --- state carried across the break ------------------------------------------

def test_locals_of_every_kind_live_across_the_break():
    def f(x, n, scale=2.0, *rest, flag=True, **extra):
        s = "label"
        t = (n, scale)
        y = x * scale
        print(s)
        out = y + n + len(rest) + len(extra)
        return (out if flag else -out), t, s

    cf = kiln.compile(f)
    x = torch.randn(3)
    assert_close(cf(x, 3, 1.5, 7, 8, flag=False, k=1), f(x, 3, 1.5, 7, 8, flag=False, k=1))
    assert_close(cf(x, 3), f(x, 3))


def test_unread_argument_passes_through():
    def f(x, unused):
        print("hi")
        return x + 1, unused

    marker = object()
    cf = kiln.compile(f)
    out, m = cf(torch.ones(2), marker)
    assert m is marker
    out, m = cf(torch.ones(2), marker)
    assert m is marker


def test_closure_and_cells_across_the_break():
    k = torch.tensor([1.0, 2.0, 3.0])

    def f(x):
        c = x * 2

        def inner(v):
            return v + c + k

        print("break")
        return inner(x)

    run_twice(f, torch.randn(3))
    assert counts()[1] == 1


def test_cell_argument_across_the_break():
    def f(x, w):
        def g():
            return x * w

        print("break")
        return g() + 1

    run_twice(f, torch.randn(3), 2.5)
    assert counts()[1] == 1


def test_free_variable_of_the_compiled_function():
    scale = 3.0

    def f(x):
        y = x * scale
        print("break")
        return y + scale

    run_twice(f, torch.randn(4))


def test_list_side_effects_in_order():
    log = []

    def f(x, out):
        out.append("before")
        y = x * 2
        out.append("middle")
        return y + 1

    cf = kiln.compile(f)
    x = torch.randn(3)
    assert_close(cf(x, log), x * 2 + 1)
    assert log == ["before", "middle"]
    assert_close(cf(x, log), x * 2 + 1)
    assert log == ["before", "middle"] * 2


def test_list_built_in_frame_is_fresh_per_call():
    def f(x):
        acc = list(range(2))
        print("break")
        acc.append(3)
        return x + len(acc), acc

    cf = kiln.compile(f)
    x = torch.zeros(1)
    assert cf(x)[1] == [0, 1, 3]
    assert cf(x)[1] == [0, 1, 3]


def test_attribute_side_effects_before_the_break():
    class Box:
        pass

    box = Box()

    def f(x):
        box.calls = getattr(box, "calls", 0) + 1
        y = x * 2
        box.last = y
        return y + box.calls

    cf = kiln.compile(f)
    x = torch.randn(2)
    assert_close(cf(x), x * 2 + 1)
    assert_close(box.last, x * 2)
    assert_close(cf(x), x * 2 + 2)
    assert box.calls == 2


def test_global_side_effect():
    def f(x):
        global _COUNTER
        _COUNTER = _COUNTER + 1
        return x + _COUNTER

    global _COUNTER
    _COUNTER = 0
    cf = kiln.compile(f)
    assert_close(cf(torch.zeros(1)), torch.ones(1))
    assert_close(cf(torch.zeros(1)), torch.full((1,), 2.0))
    assert _COUNTER == 2


def test_inplace_on_input_runs_eagerly_and_mutates():
    def f(x):
        y = x + 1
        x.mul_(2)
        return x + y

    x, xe = torch.ones(3), torch.ones(3)
    assert_close(kiln.compile(f)(x), f(xe))
    assert_close(x, xe)


def test_view_of_input_keeps_aliasing():
    def f(x):
        v = x.view(-1)
        v.add_(1)        # breaks: mutates x through the view, eagerly
        return x * 2

    x, xe = torch.zeros(2, 2), torch.zeros(2, 2)
    assert_close(kiln.compile(f)(x), f(xe))
    assert_close(x, xe)


def test_live_view_of_intermediate_keeps_aliasing():
    def f(x):
        y = x * 2
        v = y.view(-1)
        print("break")
        y.add_(1)
        return v

    x = torch.randn(2, 2)
    assert_close(kiln.compile(f)(x), f(x))
    # v is rebuilt after the break as a view of y (OutputSlot::GraphView),
    # so y.add_(1) shows through it; the prefix runs compiled.
    graphs, breaks, eager_calls = counts()
    assert graphs >= 1 and breaks >= 1 and eager_calls == 0, counts()


# --- calls and modules ----------------------------------------------------

class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        print("inner break")
        return torch.relu(h)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        h = x * 2
        h = self.inner(h)
        return self.head(h) + 1


def test_break_in_nested_module_forward(capfd):
    model = Outer().eval()
    compiled = kiln.compile(model)
    x = torch.randn(3, 4)
    with torch.no_grad():
        expected = model(x)
        assert_close(compiled(x), expected)
        assert_close(compiled(x), expected)
    out, _ = capfd.readouterr()
    assert out.count("inner break") == 3
    # Outer.forward runs the call of inner eagerly and continues compiled;
    # Inner.forward, a frame of its own, breaks and resumes too.
    graphs, breaks, eager = counts()
    assert breaks == 2 and eager == 0 and graphs == 4


def test_break_in_helper_function():
    def helper(v):
        return v.max().item()

    def f(x):
        m = helper(x)
        return x / m

    run_twice(f, torch.rand(5) + 1)
    assert counts()[2] == 0


def test_keyword_call_breaks():
    def f(x):
        y = torch.nonzero(x, as_tuple=False)
        return y.float().sum() + x

    run_twice(f, torch.randn(4))


def test_method_call_on_module_breaks():
    class M(nn.Module):
        def forward(self, x):
            y = x + 1
            n = self.count(y)
            return y * n

        def count(self, y):
            return int((y > 1).sum())

    model = M()
    x = torch.randn(5)
    assert_close(kiln.compile(model)(x), model(x))


# --- errors ------------------------------------------------------------------

def test_exception_in_eager_part_points_at_the_line():
    def f(x):
        y = x * 2
        raise_here = y.sum().item() / 0  # ZeroDivisionError in the eager part
        return raise_here

    cf = kiln.compile(f)
    with pytest.raises(ZeroDivisionError) as info:
        cf(torch.ones(2))
    frames = traceback.extract_tb(info.value.__traceback__)
    line = f.__code__.co_firstlineno + 2
    assert any(fr.name == "f" and fr.lineno == line for fr in frames), frames


def test_exception_after_the_break_propagates():
    def f(x):
        print("break")
        if x.shape[0] == 3:
            raise ValueError("bad size")
        return x

    cf = kiln.compile(f)
    with pytest.raises(ValueError, match="bad size"):
        cf(torch.ones(3))
    assert_close(cf(torch.ones(2)), torch.ones(2))


def test_fullgraph_names_construct_and_line():
    def f(x):
        y = x + 1
        print("no")
        return y

    with pytest.raises(RuntimeError, match=r"print.*test_resume.py:\d+"):
        kiln.compile(f, fullgraph=True)(torch.ones(2))


def test_fullgraph_after_a_resumed_break_still_raises():
    def f(x):
        return x * int(x.sum())  # int() of a float tensor breaks

    x = torch.ones(2)
    assert_close(kiln.compile(f)(x), f(x))
    with pytest.raises(RuntimeError, match=r"int\(\) of a float"):
        kiln.compile(f, fullgraph=True)(x)


# --- guards, loops, training ------------------------------------------------

def test_recompiles_on_new_shapes():
    def f(x):
        y = x.sum(0)
        print("break")
        return y * x.shape[0]

    cf = kiln.compile(f)
    for shape in ((2, 3), (4, 3), (2, 3)):
        x = torch.randn(*shape)
        assert_close(cf(x), f(x))
    s = stats()
    assert s["graph_breaks"] == 2 and s["recompiles"] == 2 and s["eager_calls"] == 0, s


def test_break_inside_loop_falls_back_for_the_frame(capfd):
    def f(x):
        for i in range(3):
            x = x + i
            print(i)
        return x * 2

    x = torch.randn(2)
    assert_close(kiln.compile(f)(x), f(x))
    # documented limit: a break with a loop iterator live runs the frame eagerly
    assert counts() == (0, 1, 1)


def test_break_after_loop_resumes():
    def f(x):
        for i in range(3):
            x = x + i
        print("after")
        return x * 2

    run_twice(f, torch.randn(2))
    assert counts() == (2, 1, 0)


def test_training_grads_through_partial_graphs():
    lin = nn.Linear(4, 3)

    def f(x):
        h = torch.tanh(lin(x))
        print("break")
        s = h.sum().item() // 0.5
        return (h * h).sum() + s

    x = torch.randn(2, 4, requires_grad=True)
    xe = x.detach().clone().requires_grad_()
    out = kiln.compile(f)(x)
    out.backward()
    gx, gw = x.grad.clone(), lin.weight.grad.clone()
    lin.weight.grad = None
    f(xe).backward()
    assert_close(out.detach(), f(xe.detach()).detach())
    assert_close(gx, xe.grad, rtol=1e-4, atol=1e-5)
    assert_close(gw, lin.weight.grad, rtol=1e-4, atol=1e-5)
    assert stats()["graph_breaks"] == 2


def test_training_module_with_data_dependent_branch():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = nn.Linear(3, 1)

        def forward(self, x):
            h = self.a(x)
            if h.mean() > 0:
                h = h * 2
            return self.b(torch.relu(h)).sum()

    torch.manual_seed(3)
    model = M()
    compiled = kiln.compile(model)
    x = torch.randn(4, 3)
    compiled(x).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).backward()
    for g, p in zip(grads, model.parameters()):
        assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
    assert stats()["graph_breaks"] == 1


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11 bytecode checks")
def test_resume_functions_are_cached_per_code_and_offset():
    from kiln import _resume

    def f(x):
        print("x")
        return x + 1

    cf = kiln.compile(f)
    cf(torch.ones(1))
    n = len(_resume._cache)
    kiln.reset()
    cf(torch.ones(1))
    assert len(_resume._cache) == n


# --- *args / **kwargs calls (captured without a break) ---------------------

def _inner_kw(x, scale=1.0, *rest, shift=0.0, **extra):
    out = x * scale + shift + sum(rest)
    for k in sorted(extra):
        out = out + extra[k]
    return out


@pytest.mark.parametrize("call", [
    lambda x, kw: _inner_kw(x, **kw),
    lambda x, kw: _inner_kw(x, 2.0, 3.0, 4.0, **kw),
    lambda x, kw: _inner_kw(*(x, 0.5), **{"a": x, **kw}),
    lambda x, kw: _inner_kw(x, scale=3.0, z=x * 2),
])
def test_kwargs_calls_are_captured(call):
    def f(x):
        return call(x, {"shift": 2.0, "b": x + 1})

    x = torch.randn(3)
    assert_close(kiln.compile(f)(x), f(x))
    assert stats()["graph_breaks"] == 0 and stats()["compiled_calls"] == 1


def test_root_kwargs_of_tensors_are_graph_inputs():
    def f(x, **kw):
        return _inner_kw(x, **kw) + kw["w"] * 2

    cf = kiln.compile(f)
    for _ in range(2):
        x, w = torch.randn(3), torch.randn(3)
        assert_close(cf(x, w=w, shift=1.0), f(x, w=w, shift=1.0))
    s = stats()
    assert s["graph_breaks"] == 0 and s["graphs_compiled"] == 1 and s["cache_hits"] == 1, s
    # a new key set recompiles
    assert_close(cf(x, w=w, v=w), f(x, w=w, v=w))
    assert stats()["recompiles"] == 1


def test_repeated_keyword_raises_like_eager():
    def f(x, kw):
        return _inner_kw(x, **kw, **{"shift": 1.0})

    x = torch.randn(2)
    with pytest.raises(TypeError):
        f(x, {"shift": 2.0})
    with pytest.raises(TypeError):
        kiln.compile(f)(x, {"shift": 2.0})


# --- grad-mode with-blocks (captured without a break) ---------------------

def test_no_grad_block_is_captured():
    def f(x):
        with torch.no_grad():
            y = x * 2
        return y + 1

    x = torch.randn(3)
    assert_close(kiln.compile(f)(x), f(x))
    assert stats()["graph_breaks"] == 0 and stats()["compiled_calls"] == 1


def test_nested_grad_blocks_in_inference():
    w = torch.randn(3, 3)  # no input requires grad: one rule fits all regions

    def f(x):
        with torch.no_grad():
            h = x @ w
            with torch.enable_grad():
                pass
        with torch.no_grad() as ctx:
            h = h * 2
        return h, ctx

    x = torch.randn(2, 3)
    expected = f(x)
    got = kiln.compile(f)(x)
    assert_close(got[0], expected[0])
    assert got[1] is None
    assert stats()["graph_breaks"] == 0 and stats()["compiled_calls"] == 1


def test_no_grad_block_with_grad_inputs_is_one_graph():
    # The target computed under no_grad has no requires_grad (GradFlow.cpp):
    # one graph; the backward's eager recompute stops at the block as eager.
    lin = nn.Linear(3, 3)

    def f(x):
        with torch.no_grad():
            target = lin(x)
        return ((lin(x) - target) ** 2).sum(), target

    x = torch.randn(2, 3)
    out, target = kiln.compile(f)(x)
    assert not target.requires_grad and out.requires_grad
    out.backward()
    g = lin.weight.grad.clone()
    lin.weight.grad = None
    f(x)[0].backward()
    assert_close(g, lin.weight.grad)
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0 and s["graphs_compiled"] == 1, s


def test_other_with_blocks_run_eagerly():
    import contextlib

    def f(x):
        with contextlib.nullcontext():
            y = x + 1
        return y

    x = torch.randn(2)
    assert_close(kiln.compile(f)(x), f(x))
    # nullcontext() is a plain Python class: the capture builds the object
    # (capture/values/UserObjects.cpp) and inlines its Python
    # __enter__/__exit__, so the whole function is one graph
    assert stats()["graph_breaks"] == 0 and stats()["eager_calls"] == 0, stats()


def test_grad_mode_guarded_after_no_grad_block():
    def f(x):
        with torch.no_grad():
            y = x * 3
        return y

    cf = kiln.compile(f)
    x = torch.randn(2)
    assert_close(cf(x), f(x))
    with torch.no_grad():
        assert_close(cf(x), f(x))
    assert torch.is_grad_enabled()
    assert stats()["recompiles"] == 1


class _SuperBase(nn.Module):
    def forward(self, x):
        return x * 2


class _SuperChild(_SuperBase):
    def forward(self, x):
        y = super().forward(x)
        if y.sum() > 0:
            return y
        return y + 1


def test_zero_argument_super_is_not_resumed_and_matches_eager():
    # super() reads the frame's first local and __class__ cell, which a
    # stub or resume function does not have: the frame runs eagerly.
    m = _SuperChild()
    c = kiln.compile(m)
    for x in (torch.ones(3), -torch.ones(3)):
        assert_close(c(x), m(x))
    s = stats()
    assert s["graph_breaks"] == 1 and s["eager_calls"] == 2, s


def test_clone_held_twice_at_a_break_is_one_tensor():
    """`y = x.clone(); y[i] = ...`: at the item-store break `y` is both a
    local and on the stack. Both must be the same tensor, or the store is
    lost (it used to return 2*x silently). An integer-tensor index keeps the
    store a break (constant indices are captured: test_inplace_inputs.py)."""
    def f(x):
        y = x.clone()
        y[torch.tensor([0])] = 3.0
        return y * 2

    x = torch.ones(3)
    got = run_twice(f, x)
    assert_close(got, torch.tensor([6.0, 2.0, 2.0]))
    assert torch.equal(x, torch.ones(3))  # the input is not the clone
    graphs, breaks, _ = counts()
    assert breaks >= 1 and graphs >= 1


def test_returned_clone_keeps_identity():
    """The same clone returned twice is one object (eager: `a is b`); two
    clones of one input are two tensors."""
    x = torch.randn(4)

    def same(x):
        y = x.clone()
        return y, y

    def two(x):
        return x.clone(), x.clone()

    a, b = kiln.compile(same)(x)
    assert a is b and torch.equal(a, x) and a.data_ptr() != x.data_ptr()
    c, d = kiln.compile(two)(x)
    assert c is not d and c.data_ptr() != d.data_ptr()
    c.add_(1)
    assert torch.equal(d, x)

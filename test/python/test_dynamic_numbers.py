# SPDX-License-Identifier: Apache-2.0
"""Automatic dynamic ints (capture/values/DynamicNumbers.cpp): under
kiln.compile's default dynamic=None, an int argument of a compiled frame
whose value changes between calls becomes a symbolic int in the next
compilation (Dynamo's automatic dynamic for ints), instead of one graph
per value (8, then eager).

Each case compares with eager on every call AND asserts the counters
(graphs, recompiles, dynamic graphs, specialized captures, eager calls,
ints made dynamic). Values are chosen not to equal static sizes of the
graph unless a case is about that (such a value stays static).
"""
import enum
import warnings

import pytest
import torch
import torch.nn.functional as F

import kiln

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(autouse=True)
def _fresh():
    kiln.reset()
    yield
    kiln.reset()


KEYS = ("graphs_compiled", "recompiles", "dynamic_graphs", "dynamic_specialized",
        "eager_calls", "dynamic_numbers")


def _counts():
    s = kiln.stats()
    return tuple(s[k] for k in KEYS)


def _same(got, want):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want, equal_nan=True)
    else:
        assert type(got) is type(want) and got == want, (got, want)


def _run(fn, make, values, **compile_kw):
    """Calls compiled `fn` on make(v) for each value; checks eager parity
    on every call and returns the counters after each."""
    cf = kiln.compile(fn, **compile_kw)
    seen = []
    for v in values:
        args = make(v)
        want = fn(*make(v))
        _same(cf(*args), want)
        seen.append(_counts())
    return seen


X = torch.randn(3, 5)
STATIC_THEN_ONE = (2, 1, 1, 0, 0, 1)  # a static graph, then one `?` graph


def _one_dynamic(seen):
    assert seen[0] == (1, 0, 0, 0, 0, 0), seen
    assert all(s == STATIC_THEN_ONE for s in seen[1:]), seen


# --- one symbolic graph after the first static one --------------------------

def test_int_as_tensor_operand():
    _one_dynamic(_run(lambda x, n: x * n, lambda n: (X, n), [6, 7, 9, 10, 12, 13]))


def test_step_counter_loop_no_recompile_limit():
    x = torch.randn(4, 16)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        seen = _run(lambda x, step: x + step, lambda s: (x, s), range(20))
    # 0 and 1 stay static (as tensor dims), then one `?` graph for 2..19
    assert seen[-1] == (3, 2, 1, 0, 0, 1), seen
    assert not [m for m in w if "recompile" in str(m.message)]


def test_slice_by_int():
    buf = torch.arange(64.).view(1, 64)
    seen = _run(lambda b, n: b[:, :n] * 2, lambda n: (buf, n), [10, 20, 30, 40, 70])
    _one_dynamic(seen[:4])
    # 70 > 64: the clamp's guard fails, a second `?` graph (to the end)
    assert seen[4] == (3, 2, 2, 0, 0, 1), seen


@pytest.mark.parametrize("factory", [
    lambda x, n: torch.arange(n).float().sum() + x,
    lambda x, n: torch.zeros(n, 4).sum() + x,
    lambda x, n: x.new_ones(n).sum() + x,
    lambda x, n: torch.full((n,), 2.0).sum() + x,
    lambda x, n: torch.arange(2, n + 2).float().mean() * x,
], ids=["arange", "zeros", "new_ones", "full", "arange_range"])
def test_int_as_factory_size(factory):
    _one_dynamic(_run(factory, lambda n: (X, n), [6, 7, 9, 11]))


def test_branch_on_int_guarded_per_branch():
    def f(x, n):
        if n > 10:
            return x * 2
        return x - 1
    seen = _run(f, lambda n: (X, n), [6, 7, 9, 12, 13, 8])
    _one_dynamic(seen[:3])
    assert seen[3:] == [(3, 2, 2, 0, 0, 1)] * 3, seen


def test_int_used_for_shape_and_value():
    x = torch.randn(4, 32)
    _one_dynamic(_run(lambda x, n: x[:, :n] * n, lambda n: (x, n), [9, 10, 11, 17]))


def test_expression_of_int_is_not_baked_in():
    """`m = n * 2` is evaluated lazily at capture; once n is symbolic the
    expression must follow n (a constant 2 * n at capture would be wrong
    for every other n)."""
    def times(x, n):
        m = n * 2
        return x * m

    def plus(x, n):
        m = n + 1
        return torch.arange(m).float() + 0 * x.sum()

    _one_dynamic(_run(times, lambda n: (X, n), [3, 4, 5, 7]))
    kiln.reset()
    _one_dynamic(_run(plus, lambda n: (X, n), [3, 4, 5, 7]))


def test_int_returned_stays_int():
    _one_dynamic(_run(lambda x, n: (x * 2, n + 1, n), lambda n: (X, n), [5, 6, 7]))


def test_module_forward_int_argument():
    class Crop(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(16, 16)

        def forward(self, x, length):
            return self.proj(x[:, :length]) * length

    m = Crop().eval()
    x = torch.randn(2, 40, 16)
    with torch.no_grad():
        _one_dynamic(_run(m, lambda n: (x, n), [9, 10, 11, 23, 37]))


def test_int_counter_side_effect():
    class Acc:
        total = 0

    eager_obj, compiled_obj = Acc(), Acc()

    def f(x, n, obj):
        obj.total += n
        return x * n

    cf = kiln.compile(f)
    for n in [5, 6, 7, 9]:
        _same(cf(X, n, compiled_obj), f(X, n, eager_obj))
        assert compiled_obj.total == eager_obj.total
    assert _counts() == STATIC_THEN_ONE


@pytest.mark.parametrize("values,after", [([4, 6, 7], (2, 1, 1, 0, 0, 1)),
                                          ([0.5, 0.7, 1.5], (2, 1, 0, 0, 0, 1))],
                         ids=["int", "float"])
def test_gradients_through_number_scale(values, after):
    # An entry that needs autograd takes the numbers as tensors (gatherInputs).
    cf = kiln.compile(lambda x, n: (x * n).sum())
    for n in values:
        a = torch.randn(3, 5, requires_grad=True)
        b = a.detach().clone().requires_grad_()
        cf(a, n).backward()
        (b * n).sum().backward()
        torch.testing.assert_close(a.grad, b.grad)
    assert _counts() == after


def test_int_equal_to_symbolic_dim_is_shared_and_checked():
    def f(x, n):
        return x[:n] + n

    cf = kiln.compile(f)
    for rows, n in [(10, 10), (12, 12), (14, 14), (14, 9)]:
        x = torch.randn(rows, 4)
        kiln.mark_dynamic(x, 0)
        _same(cf(x, n), f(x, n))
    s = kiln.stats()
    assert s["dynamic_numbers"] == 1 and s["eager_calls"] == 0
    assert s["dynamic_graphs"] >= 1


def test_graph_break_keeps_int_symbolic():
    def f(x, n):
        y = x * n
        print(end="")
        return y + n

    seen = _run(f, lambda n: (X, n), [5, 6, 7, 9, 11])
    assert seen[-1][4] == 0  # never eager
    assert seen[-1] == seen[2], seen  # no graph after the third call
    assert seen[-1][5] >= 1


# --- stays static (and right) ----------------------------------------------

def test_range_of_int_specializes():
    def f(x, n):
        for _ in range(n):
            x = x + 1
        return x
    seen = _run(f, lambda n: (X, n), [3, 4, 5, 6])
    # n is pinned constant after the first failed dynamic capture: later
    # values compile statically at once (one specialization, not one each)
    assert seen[-1] == (4, 3, 0, 1, 0, 1), seen


def test_pinned_int_keeps_symbolic_sizes():
    """An int a use needs as a constant (`range(n)`) is pinned; the frame's
    symbolic sizes stay symbolic (not every size specialized with it)."""
    def f(x, n):
        for _ in range(n):
            x = x + 1
        return x * 2

    calls = [(8, 3), (12, 3), (16, 4), (20, 4), (24, 4), (28, 3)]
    xs = {rows: torch.randn(rows, 3) for rows, _ in calls}
    seen = _run(f, lambda c: (xs[c[0]], c[1]), calls)
    assert seen[-1][4] == 0 and seen[-1][3] == 1, seen  # never eager, one pin
    assert seen[-1][0] == 3 and seen[-1][2] == 2, seen  # static, `?` for n=3, `?` for n=4


@pytest.mark.parametrize("fn", [
    lambda x, n: x.reshape(n, -1),
    lambda x, n: F.pad(x, (n, n)),
    lambda x, n: x.sum(dim=n - 3),
    lambda x, n: x.view(-1)[n],
], ids=["view", "pad", "dim", "index"])
def test_uses_needing_the_value_specialize(fn):
    x = torch.randn(2, 3, 4, 4, 3)
    seen = _run(fn, lambda n: (x, n), [3, 4, 6])
    assert seen[-1][4] == 0, seen


def test_small_and_negative_values_after_symbolic():
    seen = _run(lambda x, n: x * n, lambda n: (X, n), [6, 7, 1, -3, 0, 8])
    # 1, -3 and 0 each miss the `?` graph's n >= 2 and compile statically
    assert seen[-1] == (5, 4, 1, 0, 0, 1), seen


def test_ints_beyond_int64():
    x = torch.randn(3, dtype=torch.float64)
    f = lambda x, n: x * n  # noqa: E731
    seen = _run(f, lambda n: (x, n), [5, 6, 2**40, -2**40])
    assert seen[2] == STATIC_THEN_ONE, seen  # no n-element buffer for the value
    # Outside int64 (eager raises OverflowError for x * 2**70): misses the
    # `?` graph's int64 range and compiles statically (kiln's static graphs
    # multiply by the float value, as x * float(n)).
    torch.testing.assert_close(kiln.compile(f)(x, 2**70), x * float(2**70))
    assert _counts()[0] == 4  # 5, `?` (6, 2**40), -2**40, 2**70


def test_value_equal_to_static_size_stays_static():
    x = torch.randn(2, 8)
    seen = _run(lambda x, n: x * n, lambda n: (x, n), [3, 8, 9])
    # 8 equals a static dim of x: specialized; 9 gets the `?` graph
    assert seen[1] == (2, 1, 0, 1, 0, 1), seen
    assert seen[2] == (3, 2, 1, 1, 0, 1), seen


def test_bool_flag_is_not_an_int():
    def f(x, flag):
        return x * 2 if flag else x - 1
    seen = _run(f, lambda b: (X, b), [True, False, True, False])
    assert seen[-1] == (2, 1, 0, 0, 0, 0), seen


class Mode(enum.IntEnum):
    A = 5
    B = 6


def test_int_enum_stays_static():
    seen = _run(lambda x, m: x * int(m), lambda m: (X, m), [Mode.A, Mode.B, Mode.A])
    assert seen[-1][2] == 0 and seen[-1][5] == 0, seen


SCALE = 5


def test_global_int_stays_static():
    def f(x):
        return x * SCALE

    def make(v):
        global SCALE
        SCALE = v
        return (X,)

    seen = _run(f, make, [5, 6, 7])
    assert seen[-1] == (3, 2, 0, 0, 0, 0), seen


def test_module_int_attribute_stays_static():
    class M(torch.nn.Module):
        k = 5

        def forward(self, x):
            return x * self.k

    m = M()

    def make(v):
        m.k = v
        return (X,)

    seen = _run(m, make, [5, 6, 7])
    assert seen[-1][2] == 0 and seen[-1][5] == 0, seen


STATIC_THEN_INPUT = (2, 1, 0, 0, 0, 1)  # a static graph, then one with the float as an input


def test_float_argument_becomes_graph_input():
    seen = _run(lambda x, a: x * a + a * 2.0, lambda a: (X, a), [0.5, 0.7, 0.9, -1.25, 3e10])
    assert seen[0] == (1, 0, 0, 0, 0, 0), seen
    assert all(s == STATIC_THEN_INPUT for s in seen[1:]), seen


def test_learning_rate_schedule_one_graph():
    def step(p, g, lr):
        return p - lr * g, lr * 0.5

    p, g = torch.randn(8, 8), torch.randn(8, 8)
    seen = _run(step, lambda lr: (p, g, lr), [0.1 * 0.9 ** i for i in range(12)])
    assert seen[-1] == STATIC_THEN_INPUT, seen


@pytest.mark.parametrize("fn", [
    lambda x, a: F.leaky_relu(x, a),
    lambda x, a: x * 2 if a > 0.6 else x,
    lambda x, a: torch.full((2,), a) + x.sum(),
    lambda x, a: x.clamp(min=a),
], ids=["constant_arg", "branch", "fill", "clamp"])
def test_float_uses_needing_the_value_specialize(fn):
    seen = _run(fn, lambda a: (X, a), [0.5, 0.7, 0.9])
    assert seen[-1][4] == 0, seen  # never eager; static graphs as before


def test_float_expression_is_not_baked_in():
    """`m = a * 2` is lazy at capture; once `a` is a graph input the
    expression must follow it (its value at capture is wrong for others)."""
    def f(x, a):
        m = a * 2 + 1
        return x * m

    seen = _run(f, lambda a: (X, a), [0.5, 0.7, 0.9, 1.5])
    assert seen[-1] == STATIC_THEN_INPUT, seen


def test_float_special_values():
    seen = _run(lambda x, a: x * a, lambda a: (X, a),
                [0.5, 0.7, float("inf"), float("nan"), -0.0, 0.0])
    assert seen[-1] == STATIC_THEN_INPUT, seen


def test_float_from_item_across_break_resumes_in_one_graph():
    """A float read with .item() and live across a graph break reaches the
    resume function as a float argument: one resume graph for every value
    (it was one per value, 8, then eager)."""
    def f(x):
        s = x.sum().item()
        print(end="")
        return x * s

    seen = _run(f, lambda i: (torch.full((2, 3), i + 0.5),), range(12))
    assert seen[-1][:5] == (3, 1, 0, 0, 0), seen


def test_dynamic_false_keeps_one_graph_per_value():
    seen = _run(lambda x, n: x * n, lambda n: (X, n), [5, 6, 7], dynamic=False)
    assert seen[-1] == (3, 2, 0, 0, 0, 0), seen


def test_config_off_keeps_one_graph_per_value():
    with kiln.config.patch(automatic_dynamic_numbers=False):
        seen = _run(lambda x, n: x * n, lambda n: (X, n), [5, 6, 7])
    assert seen[-1] == (3, 2, 0, 0, 0, 0), seen


def test_reset_forgets():
    cf = kiln.compile(lambda x, n: x * n)
    cf(X, 5)
    cf(X, 6)
    assert kiln.stats()["dynamic_numbers"] == 1
    kiln.reset()
    _same(cf(X, 7), X * 7)
    assert _counts() == (1, 0, 0, 0, 0, 0)


def test_logs_name_the_int():
    lines = []
    kiln._C.set_log_sink(lambda ch, msg: lines.append(msg))
    try:
        with kiln.config.patch(logs={"dynamic", "recompiles", "guards"}):
            cf = kiln.compile(lambda x, n: x * n)
            for n in [5, 6, 1]:
                cf(X, n)
    finally:
        kiln._C.set_log_sink(None)
    text = "\n".join(lines)
    assert "L['n'] changed from 5 to 6; it is a symbolic int" in text, text
    assert "L['n'] >= 2 (symbolic int s0" in text, text



@pytest.mark.parametrize("fn", [
    lambda x, n: x * int(n),
    lambda x, n: x * float(n),
    lambda x, n: x * (1 if isinstance(n, int) else 2),
    lambda x, n: x * (1 if type(n) is int else 2),
    lambda x, n: x * abs(n - 20),
    lambda x, n: x * 2 if bool(n % 2) else x,
], ids=["int", "float", "isinstance", "type", "abs", "bool"])
def test_builtins_on_int(fn):
    seen = _run(fn, lambda n: (X, n), [6, 7, 9, 11, 12])
    assert seen[-1][4] == 0 and seen[-1][3] == 0, seen  # no eager, no specialization
    assert seen[-1][2] >= 1, seen


def test_item_as_factory_size_resumes_with_symbolic_int():
    """`.item()` used as a size breaks the graph; the resume function gets
    the number as an int argument, which becomes symbolic after it changes:
    3 graphs for 10 lengths (was one per length, then eager)."""
    def f(x, lengths):
        n = int(lengths.max().item())
        return x[:, :n] * 2 + torch.arange(n).float()

    x = torch.randn(2, 64)
    seen = _run(f, lambda n: (x, torch.tensor([n, 2])), [5, 9, 13, 17, 21, 30, 40, 50, 60, 33])
    assert seen[-1][:5] == (3, 1, 1, 0, 0), seen


def test_int_in_float_arithmetic():
    _one_dynamic(_run(lambda x, n: x * (n / 4) + n * 0.5 - 2.0 * n, lambda n: (X, n),
                      [6, 7, 9, 11]))


def test_int_and_float_arguments_together():
    seen = _run(lambda x, step, lr: x - lr * step * x, lambda i: (X, i + 6, 0.1 * 0.9 ** i),
                range(8))
    assert seen[-1] == (2, 1, 1, 0, 0, 2), seen


def test_numbers_in_a_graph_break_prefix():
    def f(x, step, lr):
        y = x * (1.0 + 0.0 * step) * lr
        print(end="")
        return y + step

    seen = _run(f, lambda i: (X, i + 6, 0.1 * 0.9 ** i), range(10))
    assert seen[-1][4] == 0, seen  # never eager
    assert seen[-1] == seen[3], seen  # no graph after the fourth call



@pytest.mark.parametrize("fn", [
    lambda x, n: x + torch.tensor(n),
    lambda x, n: x * torch.tensor([n, 2.0, n * 0.5]).sum(),
    lambda x, n: x * torch.as_tensor(n, dtype=torch.float32),
    lambda x, n: x.masked_fill(x > 0, n),
    lambda x, n: x.long().masked_fill(x > 0, n),
], ids=["tensor", "tensor_list", "as_tensor", "masked_fill", "masked_fill_long"])
@pytest.mark.parametrize("values", [[6, 7, 9, 11], [0.5, 0.7, 0.9]], ids=["int", "float"])
def test_tensor_of_numbers(fn, values):
    seen = _run(fn, lambda v: (X, v), values)
    assert seen[-1][0] == 2 and seen[-1][3:5] == (0, 0), seen  # one graph after the first


def test_tensor_of_item_number_in_graph():
    def f(x):
        s = x.sum().item()
        return x * torch.tensor(s)

    seen = _run(f, lambda i: (torch.full((2, 3), i + 0.5),), range(4))
    assert seen[-1][:5] == (1, 0, 0, 0, 0), seen

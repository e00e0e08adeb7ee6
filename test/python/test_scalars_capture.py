# SPDX-License-Identifier: Apache-2.0
"""Python numbers read from tensors inside the graph (ops/Scalars.cpp):
`.item()`, `.tolist()`, `int()/float()/bool()` of a tensor are Scalars of
the graph, used in Python arithmetic, comparisons and as operands of tensor
ops, and returned (or stored, or live at a break) as the Python number of
eager's type and value. Each case compares values AND types with eager and
checks the graphs/breaks counters; the negative cases must still break."""
import math

import pytest
import torch

import kiln
from conftest import assert_close, stats

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
          torch.int32, torch.bool]


def counts():
    s = stats()
    return s["graphs_compiled"], s["graph_breaks"], s["eager_calls"]


def same(got, want, exact=False):
    """Equal values of the same Python types (tensors: equal, same dtype).
    Floats computed from float reductions may differ in the last bits of
    the reduction (kiln's summation order); `exact` requires equality."""
    assert type(got) is type(want), (got, want)
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, exact)
    elif isinstance(want, torch.Tensor):
        assert_close(got, want)  # dtype, shape and the dtype's tolerance
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got)
    elif isinstance(want, float) and not exact and not math.isinf(want):
        assert math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6), (got, want)
    else:
        assert got == want, (got, want)
        if isinstance(want, float):  # -0.0 vs 0.0
            assert math.copysign(1, got) == math.copysign(1, want)


def check(fn, *inputs, exact=False):
    cf = kiln.compile(fn)
    for args in inputs:
        want = fn(*args)
        same(cf(*args), want, exact)
    return cf


def sample(dtype, n=4, sign=1):
    if dtype == torch.bool:
        return torch.tensor([True, False, True, True][:n])
    if dtype.is_floating_point:
        return (torch.randn(n) * 3 * sign).to(dtype)
    return (torch.arange(n) * 7 - 11).to(dtype) * sign


# --- whole graphs ------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_item_type_and_value(dtype):
    def f(x):
        return x[1].item(), x[0].item()

    check(f, (sample(dtype),), (sample(dtype, sign=-1),), exact=True)
    assert counts() == (1, 0, 0)


def test_item_in_arithmetic_and_tensor_operand():
    def f(x):
        m = x.mean().item()
        return x - m, type(m).__name__, m * 2 + 1, isinstance(m, float)

    check(f, (torch.randn(3, 8),), (torch.randn(3, 8) - 5,))
    assert counts() == (1, 0, 0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int32,
                                   torch.int64], ids=str)
def test_scalar_operand_promotes_like_a_python_number(dtype):
    # The float read is exact in f16 (a Python-number operand of an f16/bf16
    # op is rounded to f16 first, as kiln does for constants; eager rounds
    # the product from f32 opmath).
    def f(x, y):
        s = y[2].item()  # a Python float
        k = y.argmax().item()  # a Python int
        return x * s, x + k, x > s, torch.where(x > 0, x, s), s - x

    x = sample(dtype, 6)
    y = torch.tensor([0.5, -1.25, 2.75, 3.0, -0.375])
    check(f, (x, y), (x, -y))
    assert counts() == (1, 0, 0)


def test_int_float_bool_of_tensor():
    def f(x):
        s = x.sum()
        return int(s > 0), float(s), bool(s < 0), int(x.argmax()), float(x.argmin()), \
            bool(x.max() != 0)

    check(f, (torch.randn(3, 8),), (-torch.rand(3, 8),), (torch.zeros(3, 8),))
    assert counts() == (1, 0, 0)


def test_int_float_bool_of_int_and_bool_tensors():
    def f(i, b):
        return float(i), int(b), bool(i), float(b), int(i) + 1, bool(b)

    check(f, (torch.tensor(-3), torch.tensor(True)), (torch.tensor(0), torch.tensor(False)))
    assert counts() == (1, 0, 0)


def test_python_arithmetic_semantics():
    def f(x, i):
        a = x.sum().item()  # float
        k = i.sum().item()  # int
        b = (x > 0).all().item()  # bool
        return (a + k, k + 1, k * 3 - 2, k / 4, a / 2, -k, -b, b + b, k < a, a == a,
                abs(k), abs(-a), float(k), bool(k), int(b), k >= 2.5, 2 - a, 3 * k)

    check(f, (torch.randn(4), torch.tensor([3, -8])), (torch.rand(4), torch.tensor([5, 2])))
    assert counts() == (1, 0, 0)


def test_tolist_of_small_tensor():
    def f(x, i):
        vals = x[0, :3].tolist()
        return vals, sum(vals), i.tolist(), x[1, 1].tolist(), (x[:2, :2] > 0).tolist()

    check(f, (torch.randn(3, 4), torch.tensor([[1, -2], [3, 4]])),
          (torch.randn(3, 4), torch.tensor([[0, 0], [7, -9]])))
    assert counts() == (1, 0, 0)


def test_tolist_unpacked():
    def f(x):
        a, b = x[:2].tolist()
        return a * b, x * a

    check(f, (torch.randn(4),), (torch.randn(4),))
    assert counts() == (1, 0, 0)


def test_values_change_without_recompile():
    def f(x):
        return x.max().item() + 1

    cf = kiln.compile(f)
    for _ in range(12):
        x = torch.randn(5)
        same(cf(x), f(x))
    assert stats()["recompiles"] == 0 and counts() == (1, 0, 0)


def test_scalar_stored_to_attribute():
    class Box:
        pass

    box = Box()

    def f(x):
        box.peak = x.max().item()
        box.count = int((x > 0).sum())
        return x * 2

    cf = kiln.compile(f)
    x = torch.randn(6)
    cf(x)
    got = (box.peak, box.count)
    f(x)
    same(got, (box.peak, box.count))
    assert counts()[1] == 0


def test_nan_and_negative_zero():
    def f(x):
        a = x[0].item()
        b = x[1].item()
        return a, b, a == a, bool(a), -b

    check(f, (torch.tensor([float("nan"), -0.0]),), (torch.tensor([float("inf"), 0.0]),),
          exact=True)
    assert counts() == (1, 0, 0)


# --- breaks (Scalars used where kiln cannot be exact) ---------------------

def test_branch_on_item_breaks_and_resumes():
    def f(x):
        if x[0, 0].item() > 0:
            return x + 1
        return x - 1

    check(f, (torch.ones(2, 2),), (-torch.ones(2, 2),))
    graphs, breaks, eager = counts()
    assert breaks == 1 and eager == 0 and graphs == 3


def test_scalar_live_at_break_passed_as_number():
    def f(x):
        s = x.sum().item()
        print("between")  # a break: s crosses it as the Python float
        return x * s, s

    check(f, (torch.randn(4),))
    assert counts()[1] == 1


@pytest.mark.parametrize("body", [
    lambda x, s: x[:int(s)],            # a size from tensor data
    lambda x, s: torch.zeros(int(s)),   # a factory size
    lambda x, s: [x[0] * i for i in range(int(s))],
    lambda x, s: x * (1 / s),           # division by a number that may be 0
    lambda x, s: x * (s // 2),          # floor division
    lambda x, s: x * (s % 2),           # modulo
    lambda x, s: x * (s ** 2),          # power
    lambda x, s: x * round(s, 1),       # round with ndigits
    lambda x, s: x * math.sqrt(s),      # math on a number read from a tensor
], ids=["slice", "zeros", "range", "div", "floordiv", "mod", "pow", "round", "sqrt"])
def test_unsupported_uses_break(body):
    def f(x):
        s = x.abs().sum().item() + 1.0
        return body(x, s)

    check(f, (torch.rand(5) + 1,))
    assert counts()[1] >= 1


def test_int_of_float_scalar_breaks():
    def f(x):
        return int(x.sum())

    check(f, (torch.tensor([2.7, 0.1]),), (torch.tensor([-2.7, 0.0]),))
    assert counts()[1] >= 1


def test_int_of_nan_raises_like_eager():
    def f(x):
        return int(x.sum())

    with pytest.raises(ValueError):
        kiln.compile(f)(torch.tensor([float("nan")]))


def test_item_of_many_elements_raises_like_eager():
    def f(x):
        return x.item()

    with pytest.raises(RuntimeError):
        kiln.compile(f)(torch.randn(3))


def test_scalar_zero_division_raises_like_eager():
    def f(x):
        return 1.0 / x.sum().item()

    with pytest.raises(ZeroDivisionError):
        kiln.compile(f)(torch.zeros(3))


def test_item_in_a_graph_that_needs_gradients():
    w = torch.randn(4, requires_grad=True)

    def f(x):
        h = torch.tanh(x * w)
        s = h.sum().item()  # a number: no gradient flows through it
        return (h * h).sum() * s, s

    x = torch.randn(4)
    out, s = kiln.compile(f)(x)
    out.backward()
    g = w.grad.clone()
    w.grad = None
    out_e, s_e = f(x)
    out_e.backward()
    same(s, s_e)
    assert_close(out.detach(), out_e.detach(), rtol=1e-5, atol=1e-6)
    assert_close(g, w.grad, rtol=1e-4, atol=1e-5)
    assert counts()[1] == 0


def test_scalar_assigned_into_a_tensor_breaks():
    def f(x):
        y = x * 2
        y[0] = x[1].item()  # index assignment takes constants and tensors only
        return y

    check(f, (torch.randn(4),), exact=True)
    assert counts()[1] == 1


def test_attribute_of_a_scalar_breaks():
    def f(x):
        s = x.sum().item()
        return x * s, s.is_integer()

    check(f, (torch.ones(4),), (torch.rand(4),))
    assert counts()[1] >= 1


def test_scalar_used_in_a_comprehension_retries_with_the_read_as_break():
    # In 3.11 the comprehension is a function call: a break inside it cannot
    # resume, so the frame is captured again with .tolist() as the break.
    def f(x):
        vals = x[0, :3].tolist()
        return [round(v, 3) for v in vals], sum(vals)

    check(f, (torch.randn(3, 4),), (torch.randn(3, 4),))
    graphs, breaks, eager = counts()
    assert breaks >= 1 and graphs >= 2


def test_scalar_through_a_helper_and_a_lazy_counter():
    class State:
        total = 0.0

    st = State()

    def peak(v):
        return v.abs().max().item()

    def f(x):
        m = peak(x)
        st.total += m
        return x / (m + 1.0)

    cf = kiln.compile(f)
    x = torch.randn(5)
    got = cf(x)
    t_kiln = st.total
    st.total = 0.0
    want = f(x)
    assert_close(got, want)
    same(t_kiln, st.total)
    assert counts()[1] == 0


def test_scalar_first_argument_rejected_like_eager():
    def f(x):
        return torch.eq(x.sum().item(), x)  # eager: TypeError (a number as input)

    with pytest.raises(TypeError):
        kiln.compile(f)(torch.randn(3))


def test_is_with_a_scalar():
    def f(x):
        b = bool(x.sum() > 0)
        return b is True, b is None, b is b

    check(f, (torch.ones(3),), (-torch.ones(3),))
    assert counts()[1] >= 1  # `b is True` depends on the value: a break


def test_scalars_appended_and_stored_in_caller_containers():
    losses, seen = [], {}

    def f(x):
        loss = (x * x).mean()
        losses.append(loss.item())
        seen["argmax"] = int(x.argmax())
        return loss

    cf = kiln.compile(f)
    x = torch.randn(5)
    cf(x)
    got = (list(losses), dict(seen))
    losses.clear()
    seen.clear()
    f(x)
    same(got, (losses, seen))
    assert counts()[1] == 0

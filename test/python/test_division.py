# SPDX-License-Identifier: Apache-2.0
"""Python's // and % on tensors, floor_divide, remainder, fmod and
div(rounding_mode=...) compiled as kiln.floor_div / kiln.fmod, bit-exact
with eager (negative operands, zero and infinite divisors, int and float
dtypes), and the cases kiln leaves to torch."""
import pytest
import torch

import kiln
from conftest import assert_compiled, stats


def same(actual, expected):
    """Exact equality: dtype, values (NaN where eager has NaN) and the sign
    of zeros and infinities."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    nan = expected.isnan() if expected.is_floating_point() else torch.zeros_like(expected, dtype=torch.bool)
    if expected.is_floating_point():
        assert torch.equal(actual.isnan(), nan), (actual, expected)
        assert torch.equal(actual.signbit() & ~nan, expected.signbit() & ~nan), (actual, expected)
    assert torch.equal(actual[~nan], expected[~nan]), (actual, expected)


def whole_graph(graphs=1):
    assert_compiled(graphs, fallback_ops=0, eager_calls=0)


def float_operands(dtype):
    x = (torch.arange(-60, 60) * 0.1).to(dtype)
    x[:6] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1.0])
    y = torch.tensor([0.1, -0.1, 0.3, -2.0, 0.0, -0.0, float("inf"), 7.0], dtype=dtype)
    return x.reshape(15, 1, 8), y


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_float_floor_division_and_remainder_exact(dtype):
    def f(x, y):
        return (x // y, x % y, torch.fmod(x, y), torch.floor_divide(x, 0.1),
                torch.remainder(x, -0.3), x.fmod(0.3), torch.div(x, 0.3, rounding_mode="floor"),
                torch.div(x, y, rounding_mode="trunc"), 1.0 // y, 2.5 % y)

    x, y = float_operands(dtype)
    for a, e in zip(kiln.compile(f)(x, y), f(x, y)):
        same(a, e)
    whole_graph()


def test_one_floor_div_tenth_is_nine():
    # floor(1.0 / 0.1) is 10; Python and eager say 9.
    def f(x):
        return x // 0.1, torch.div(x * 2, 0.1, rounding_mode="floor")

    x = torch.tensor([1.0, 5.3, -1.0, 7.0, 0.3])
    r = kiln.compile(f)(x)
    same(r[0], f(x)[0])
    same(r[1], f(x)[1])
    assert r[0][0].item() == 9.0
    whole_graph()


def test_trunc_of_scalar_quotient_is_exact():
    # x * (1/c) would round some quotients to the other side of an integer:
    # a quotient rounded in the graph (trunc, floor, ceil) must be exact.
    def f(x):
        return (torch.div(x, 0.3, rounding_mode="trunc"), (x / 0.3).floor() + 1,
                (x / 1.1).ceil() * 2)

    x = torch.arange(-2000, 2000, dtype=torch.float32) * 0.1
    for a, e in zip(kiln.compile(f)(x), f(x)):
        same(a, e)
    whole_graph()


@pytest.mark.parametrize("divisor", ["scalar", "row", "column"])
def test_quotient_is_bitwise_eager_when_rounded_outside_the_graph(divisor):
    # The quotient leaves the graph and the user rounds it: a last-bit
    # difference from eager (x * (1/c) for x / c) moved 15% of
    # `(x / 1.1).long()` by one.
    x = torch.arange(0, 4000, dtype=torch.float32).reshape(40, 100) * 1.1
    d = {"scalar": 1.1, "row": torch.full((40, 1), 1.1), "column": torch.full((100,), 1.1)}

    def f(x):
        return x / d[divisor]

    got = kiln.compile(f)(x)
    same(got, f(x))
    assert torch.equal(got.long(), f(x).long())
    whole_graph()


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_integer_division_by_constants(dtype):
    def f(x):
        return (x // 3, x % 3, x // -4, x % -4, torch.fmod(x, -4), torch.remainder(x, 4),
                torch.div(x, 3, rounding_mode="floor"), torch.div(x, -3, rounding_mode="trunc"),
                x // -1, x % -1, x // 2.5, x % 2.5)

    x = torch.arange(-13, 13, dtype=dtype).reshape(2, 13)
    x[0, 0] = torch.iinfo(dtype).min
    x[1, 0] = torch.iinfo(dtype).max
    for a, e in zip(kiln.compile(f)(x), f(x)):
        same(a, e)
    whole_graph()


def test_inplace_and_reversed_operators():
    def f(x, i):
        x = x.clone()
        x //= 0.7
        x %= 2
        i = i.clone()
        i //= 3
        return x, i, 7 // x.abs().clamp(min=1), 5 % x.abs().clamp(min=1)

    x, i = torch.randn(4, 8) * 10, torch.randint(-20, 20, (4, 8))
    for a, e in zip(kiln.compile(f)(x, i), f(x, i)):
        same(a, e)
    whole_graph()


def test_integer_tensor_divisor_runs_through_torch():
    # An integer divisor tensor may hold 0 (eager raises): kiln does not
    # compile it, the call runs through torch.
    def f(x, y):
        return (x + 1) // y, (x + 1) % y

    x, y = torch.randint(-9, 9, (8,)), torch.randint(1, 5, (8,))
    for a, e in zip(kiln.compile(f)(x, y), f(x, y)):
        same(a, e)
    s = stats()
    assert s["fallback_ops"] == 2 and s["graph_breaks"] == 0, s
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        kiln.compile(f)(x, torch.zeros(8, dtype=torch.int64))


def test_integer_division_by_zero_raises_like_eager():
    def f(x):
        return x // 0

    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(torch.arange(4))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        kiln.compile(f)(torch.arange(4))


def test_half_precision_runs_through_torch():
    def f(x):
        return x // 0.1, x % 0.3

    x = torch.randn(16).half() * 10
    for a, e in zip(kiln.compile(f)(x), f(x)):
        same(a, e)
    s = stats()
    assert s["fallback_ops"] == 2 and s["graph_breaks"] == 0, s

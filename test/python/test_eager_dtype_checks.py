# SPDX-License-Identifier: Apache-2.0
"""Ops eager refuses for bool or integer tensors raise under kiln too
(capture/ops/EagerDTypeChecks.cpp): kiln's lowering accepted every dtype,
so `-mask`, `mask.abs()`, `relu(mask)`, `floor(mask)`, `frac(idx)` ...
returned a result where eager raises. Supported dtypes still compile in one
graph."""
import pytest
import torch
import torch.nn.functional as F

import kiln
from conftest import assert_close, stats

BOOL = torch.tensor([True, False, True])
LONG = torch.arange(3)

REFUSED = [
    ("neg", lambda x: -x, BOOL),
    ("abs", torch.abs, BOOL),
    ("relu", torch.relu, BOOL),
    ("F.relu", F.relu, BOOL),
    ("floor", torch.floor, BOOL),
    ("ceil", lambda x: x.ceil(), BOOL),
    ("round", torch.round, BOOL),
    ("trunc", torch.trunc, BOOL),
    ("frac bool", torch.frac, BOOL),
    ("frac int", lambda x: x.frac(), LONG),
    ("addcmul", lambda x: torch.addcmul(x, x, x), BOOL),
]


@pytest.mark.parametrize("name,fn,x", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_dtype_raises_like_eager(name, fn, x):
    with pytest.raises(Exception) as eager:
        fn(x)
    with pytest.raises(type(eager.value)):
        kiln.compile(fn)(x)


def test_supported_integer_and_bool_ops_stay_one_graph():
    def f(idx, mask, x):
        shifted = (idx + 1) * 2 - idx.abs()
        keep = mask & ~mask.logical_not()
        return x * keep + shifted.float(), torch.clamp(idx, 0, 1), idx.neg()

    args = (LONG, BOOL, torch.randn(3))
    compiled = kiln.compile(f)
    for _ in range(2):
        for got, want in zip(compiled(*args), f(*args)):
            assert got.dtype == want.dtype
            assert_close(got, want)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


@pytest.mark.parametrize("p", [1.25, -0.1, float("nan")])
def test_dropout_probability_out_of_range_raises_like_eager(p):
    # F.dropout checks p in eval mode too; kiln's eval-mode dropout returned
    # the input (found by test_dynamic_numbers' battery of float uses).
    f = lambda x: F.dropout(x, p=p, training=False)  # noqa: E731
    x = torch.randn(3)
    with pytest.raises(Exception, match="dropout probability") as eager:
        f(x)
    with pytest.raises(eager.type, match="dropout probability"):  # NaN: ATen's RuntimeError
        kiln.compile(f)(x)

# SPDX-License-Identifier: Apache-2.0
"""Subtraction as eager does it: any operand of bool dtype (a bool tensor or
a Python bool) raises RuntimeError in eager, so kiln refuses it at capture
(eager then raises); every other operand mix, Python numbers included, is
compiled by kiln itself (no per-op fallback). torch.rsub is sub with its
operands swapped."""
import pytest
import torch

import kiln
from conftest import assert_close, stats

ALLOWED = [
    lambda x: x - 1,
    lambda x: 1 - x,
    lambda x: x.float() - 1.5,
    lambda x: x - x,
    lambda x: torch.sub(x, 2, alpha=3),
    lambda x: torch.rsub(x, 2),
    lambda x: torch.rsub(x.float(), 2.0, alpha=0.5),
    lambda x: x[:, :1] - 1,
]


@pytest.mark.parametrize("fn", ALLOWED)
def test_subtraction_is_compiled(fn):
    x = torch.arange(12).view(3, 4)
    assert_close(kiln.compile(fn)(x), fn(x))
    s = stats()
    assert s["fallback_ops"] == 0 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


@pytest.mark.parametrize("fn", [
    lambda x: x - True,
    lambda x: True - x,
    lambda x: (x > 2) - x,
    lambda x: x.float() - (x > 2),
    lambda x: torch.rsub(x > 2, 1),
])
def test_subtraction_with_a_bool_raises_as_in_eager(fn):
    x = torch.arange(12).view(3, 4)
    with pytest.raises(RuntimeError):
        fn(x)
    with pytest.raises(RuntimeError):
        kiln.compile(fn)(x)

# SPDX-License-Identifier: Apache-2.0
"""Guards on the functions a graph inlined: their code, defaults and keyword
defaults can be reassigned after compiling (Jupyter's autoreload swaps
`__code__` in place, tests patch `__defaults__`); the compiled graph must
follow eager, never keep running the old body."""
import torch
from torch import nn

import kiln
from conftest import assert_close, assert_compiled


def scale(x):
    return x * 2


def shift(x, k=1.0):
    return x + k


def shift_kw(x, *, k=1.0):
    return x + k


def uses_scale(x):
    return scale(x) + 1


def uses_shift(x):
    return shift(x)


def uses_shift_kw(x):
    return shift_kw(x)


def test_inlined_function_code_patched_after_compiling():
    c = kiln.compile(uses_scale)
    x = torch.randn(3)
    assert_close(c(x), uses_scale(x))
    old = scale.__code__
    try:
        scale.__code__ = (lambda x: x - 5).__code__
        assert_close(c(x), x - 5 + 1)
    finally:
        scale.__code__ = old
    assert_close(c(x), uses_scale(x))
    assert_compiled(graphs=2, calls=3, eager_calls=0)


def test_unchanged_function_does_not_recompile():
    c = kiln.compile(uses_scale)
    x = torch.randn(3)
    for _ in range(3):
        assert_close(c(x), uses_scale(x))
    assert_compiled(graphs=1, calls=3, recompiles=0, eager_calls=0)


def test_defaults_reassigned_after_compiling():
    c = kiln.compile(uses_shift)
    x = torch.randn(3)
    assert_close(c(x), x + 1.0)
    old = shift.__defaults__
    try:
        shift.__defaults__ = (10.0,)
        assert_close(c(x), x + 10.0)
    finally:
        shift.__defaults__ = old
    assert_close(c(x), x + 1.0)


def test_keyword_defaults_mutated_in_place_after_compiling():
    c = kiln.compile(uses_shift_kw)
    x = torch.randn(3)
    assert_close(c(x), x + 1.0)
    try:
        shift_kw.__kwdefaults__["k"] = -3.0
        assert_close(c(x), x - 3.0)
    finally:
        shift_kw.__kwdefaults__["k"] = 1.0
    assert_close(c(x), x + 1.0)


def test_tensor_default_is_read_each_call():
    bias = torch.ones(3)

    def add_bias(x, b=bias):
        return x + b

    def f(x):
        return add_bias(x)

    c = kiln.compile(f)
    x = torch.randn(3)
    assert_close(c(x), x + 1)
    bias.fill_(4.0)  # in place: the same tensor, a new value
    assert_close(c(x), x + 4)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def act(self, x):
        return torch.relu(x)

    def forward(self, x):
        return self.act(self.fc(x))


def test_method_code_patched_after_compiling():
    m = Block()
    c = kiln.compile(m)
    x = torch.randn(2, 4)
    with torch.no_grad():
        assert_close(c(x), m(x))
        old = Block.act.__code__
        try:
            Block.act.__code__ = (lambda self, x: torch.sigmoid(x)).__code__
            assert_close(c(x), torch.sigmoid(m.fc(x)))
        finally:
            Block.act.__code__ = old
        assert_close(c(x), m(x))

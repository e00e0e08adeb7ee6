# SPDX-License-Identifier: Apache-2.0
"""Lists and dicts read from the frame are guarded by value (Guards.h
sameValue): instances with equal ones share a graph, and what the value
guard cannot stand for is never silently wrong — a nested list mutated in
place, 1 vs 1.0 vs True, -0.0 vs 0.0, a dict's order, and the object's own
identity (`is`, returning it) each recompile or follow eager."""
import torch
import torch.nn as nn

import kiln
from conftest import assert_close, stats


class Holder:
    pass


def test_modules_with_equal_config_dicts_share_one_graph():
    class Scaled(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.lin = nn.Linear(8, 8)
            self.cfg = {"k": k, "dims": [1]}

        def forward(self, x):
            return self.lin(x).sum(self.cfg["dims"][0]) * self.cfg["k"]

    x = torch.randn(4, 8)
    for _ in range(10):  # was one graph per instance, eager from the 8th
        m = Scaled(2)
        assert_close(kiln.compile(m)(x), m(x))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["recompiles"] == 0 and s["eager_calls"] == 0, s
    m = Scaled(3)  # an unequal dict recompiles
    assert_close(kiln.compile(m)(x), m(x))
    assert stats()["graphs_compiled"] == 2


def test_nested_list_mutated_in_place_recompiles():
    o = Holder()
    o.rows = [[1, 2]]

    def f(x):
        return x + torch.tensor(o.rows)

    c = kiln.compile(f)
    x = torch.zeros(2)
    assert_close(c(x), f(x))
    o.rows[0][0] = 5  # the guard's copy is deep: this is seen
    assert_close(c(x), f(x))
    assert stats()["graphs_compiled"] == 2


def test_numbers_of_another_type_in_a_list_recompile():
    o = Holder()
    o.vals = [1, 2]

    def f(x):
        return x * torch.tensor(o.vals)

    c = kiln.compile(f)
    x = torch.ones(2, dtype=torch.int64)
    for vals in ([1, 2], [1.0, 2.0], [True, 2]):  # equal under ==, not the same program
        o.vals = vals
        r, e = c(x), f(x)
        assert r.dtype == e.dtype
        assert_close(r, e)
    assert stats()["graphs_compiled"] == 3


SIGN = 0.0


def test_negative_zero_is_not_zero():
    def f(x):
        return x.copysign(torch.tensor(SIGN))

    global SIGN
    c = kiln.compile(f)
    x = torch.ones(3)
    assert_close(c(x), f(x))
    SIGN = -0.0
    assert_close(c(x), f(x))
    assert c(x)[0].item() == -1.0
    SIGN = 0.0


def test_dict_order_is_part_of_the_value():
    o = Holder()
    o.weights = {"a": 1.0, "b": 2.0}

    def f(x):
        return torch.stack([x * w for w in o.weights.values()])

    c = kiln.compile(f)
    x = torch.ones(2)
    assert_close(c(x), f(x))
    o.weights = {"b": 2.0, "a": 1.0}  # equal dicts, other order
    assert_close(c(x), f(x))


def test_returned_list_is_the_callers_own():
    def f(x, o):
        return x + 1, o.dims

    c = kiln.compile(f)
    x = torch.zeros(2)
    for _ in range(3):
        o = Holder()
        o.dims = [1, 2]
        _, dims = c(x, o)
        assert dims is o.dims


def test_is_between_lists_follows_identity():
    def f(x, o):
        return x * 2 if o.dims is o.other else x

    c = kiln.compile(f)
    x = torch.ones(2)
    a, b = Holder(), Holder()
    a.dims = [1]
    a.other = a.dims
    b.dims = [1]
    b.other = [1]
    for o in (a, b, a):
        assert_close(c(x, o), f(x, o))


def test_dict_mutated_by_the_compiled_code_is_the_callers():
    def f(x, o):
        o.cfg["calls"] += 1
        return x * o.cfg["scale"]

    c = kiln.compile(f)
    x = torch.ones(2)
    p, q = Holder(), Holder()
    p.cfg = {"calls": 0, "scale": 2.0}
    q.cfg = {"calls": 0, "scale": 2.0}
    for _ in range(2):
        assert_close(c(x, p), x * 2)
    assert_close(c(x, q), x * 2)
    assert p.cfg["calls"] == 2 and q.cfg["calls"] == 1


ALLOWED = {"a"}


def test_set_mutated_in_place_recompiles():
    def f(x):
        return x * 2 if "b" in ALLOWED else x

    c = kiln.compile(f)
    x = torch.ones(2)
    assert_close(c(x), f(x))
    ALLOWED.add("b")  # was guarded by identity: the first answer stayed
    try:
        assert_close(c(x), f(x))
        assert_close(c(x), x * 2)
    finally:
        ALLOWED.discard("b")

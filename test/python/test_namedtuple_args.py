# SPDX-License-Identifier: Apache-2.0
"""Namedtuples of tensors passed in (a batch record, collections.namedtuple
or typing.NamedTuple) are read like tuples: each field through its own
source, the instance guarded by its exact class, not its identity, so a new
record per call (a data loader's batches) shares one graph instead of
recompiling every call and running eagerly from the 9th. Another class with
the same fields recompiles; a namedtuple that overrides how it is indexed
keeps the identity guard. Each case matches eager."""
import collections
import typing

import torch

import kiln
from conftest import assert_close, stats

Pair = collections.namedtuple("Pair", "x w")


class Batch(typing.NamedTuple):
    x: torch.Tensor
    y: torch.Tensor
    scale: float = 2.0

    @property
    def centered(self):
        return self.x - self.x.mean()


def test_new_record_per_call_shares_one_graph():
    def f(p):
        return (p.x @ p.w).relu() + p[0].sum()

    cf = kiln.compile(f)
    for _ in range(10):
        p = Pair(torch.randn(3, 4), torch.randn(4, 2))
        assert_close(cf(p), f(p))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["recompiles"] == 0 and s["eager_calls"] == 0, s


def test_typing_namedtuple_fields_defaults_properties_and_unpacking():
    def f(b):
        x, y, scale = b
        return b.centered * b.scale + y * scale + x

    cf = kiln.compile(f)
    for scale in (2.0, 2.0, 3.0):
        b = Batch(torch.randn(5), torch.randn(5), scale)
        assert_close(cf(b), f(b))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["eager_calls"] == 0, s  # scale is guarded by value


def test_returned_and_replaced_records_have_eager_types():
    def f(b):
        return b, b._replace(x=b.x * 2), Pair(b.y, b.x)

    cf = kiln.compile(f)
    for _ in range(2):
        b = Batch(torch.randn(3), torch.randn(3))
        got, want = cf(b), f(b)
        assert [type(g) for g in got] == [type(w) for w in want]
        assert got[0] is b or got[0] == b
        assert_close(list(got[1]), list(want[1]))
        assert_close(list(got[2]), list(want[2]))
    assert stats()["eager_calls"] == 0


def test_records_in_a_list_and_another_class_with_the_same_fields():
    Other = collections.namedtuple("Other", "x w")

    def f(records):
        return sum((r.x * r.w).sum() for r in records)

    cf = kiln.compile(f)
    for _ in range(3):
        rs = [Pair(torch.randn(2), torch.randn(2)) for _ in range(3)]
        assert_close(cf(rs), f(rs))
    assert stats()["graphs_compiled"] == 1
    rs = [Other(torch.randn(2), torch.randn(2)) for _ in range(3)]
    assert_close(cf(rs), f(rs))
    assert stats()["graphs_compiled"] == 2


def test_namedtuple_with_own_getitem_keeps_its_semantics():
    class Reversed(collections.namedtuple("Base", "a b")):
        def __getitem__(self, i):
            return tuple.__getitem__(self, 1 - i)

    def f(r):
        return r[0] * 10 + r.b

    cf = kiln.compile(f)
    for _ in range(2):
        r = Reversed(torch.randn(3), torch.randn(3))
        assert_close(cf(r), f(r))

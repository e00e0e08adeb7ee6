# SPDX-License-Identifier: Apache-2.0
"""Guards on what a container argument or global is, beyond its items
(frontend/csrc/capture/interp/Interpreter.cpp fromSource/subscript,
Operators.cpp containsOp): a dict item under a key that is a type, a
function-free plain object or a dtype is read through its own source, so a
value stored under it after compiling is seen (it was baked in); `k in d`
on a caller's dict guards its keys; a tuple passed where a list was (or an
OrderedDict where a dict was) recompiles instead of answering `type(seq)`
and `isinstance` from the first call's type."""
from collections import OrderedDict

import torch

import kiln


class Key:
    pass


TABLE = {list: 2.0, dict: 3.0, torch.float32: 4.0}


def test_dict_item_under_a_type_or_object_key_follows_the_dict():
    x = torch.ones(2)

    def by_type(x):
        return x * TABLE[list] + TABLE[torch.float32]

    compiled = kiln.compile(by_type)
    torch.testing.assert_close(compiled(x), by_type(x))
    TABLE[list] = 5.0
    TABLE[torch.float32] = -1.0
    torch.testing.assert_close(compiled(x), by_type(x))

    k = Key()

    def by_object(x, d):
        return x * d[k]

    compiled = kiln.compile(by_object)
    arg = {k: 2.0}
    torch.testing.assert_close(compiled(x, arg), by_object(x, arg))
    arg[k] = 10.0
    torch.testing.assert_close(compiled(x, arg), by_object(x, arg))


def test_membership_of_an_object_key_sees_a_key_added_later():
    k1, k2 = Key(), Key()
    table = {k1: 1}
    fn = lambda x: x + (k2 in table)  # noqa: E731
    compiled = kiln.compile(fn)
    x = torch.ones(2)
    torch.testing.assert_close(compiled(x), fn(x))
    table[k2] = 5
    torch.testing.assert_close(compiled(x), fn(x))


def test_tuple_where_a_list_was_and_ordered_dict_where_a_dict_was():
    def rebuild(seq):
        a, b = seq
        return type(seq)([a + 1, b + 2]), isinstance(seq, tuple)

    compiled = kiln.compile(rebuild)
    x, y = torch.zeros(2), torch.zeros(2)
    for seq in ([x, y], (x, y), [x, y]):
        got, want = compiled(seq), rebuild(seq)
        assert type(got[0]) is type(want[0]) and got[1] == want[1]

    def name(d):
        return type(d).__name__, d["a"] + 1

    compiled = kiln.compile(name)
    od = OrderedDict(a=torch.zeros(1))
    for d in (dict(od), od):
        assert compiled(d)[0] == name(d)[0]

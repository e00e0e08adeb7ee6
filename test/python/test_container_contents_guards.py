# SPDX-License-Identifier: Apache-2.0
"""Mutable containers the compiled code reads as a whole at capture (a
deque, array.array, bytearray, memoryview, mappingproxy, dict views,
list/set/dict subclasses) are guarded on their contents next to their
identity (Guard::Kind::Contents): they were guarded by identity only, so an
append or item write between calls kept the first call's values (a rolling
history deque passed to a step function). Contents that are not plain data
(tensors) break instead. A builtin read by name is guarded against a global
of that name defined later."""
import array
import collections
import types

import pytest
import torch

import kiln


class History(list):
    pass


class Tags(set):
    pass


def _check(fn, state, mutate, calls=3):
    x = torch.ones(3)
    compiled = kiln.compile(fn)
    for i in range(calls):
        torch.testing.assert_close(compiled(x, state), fn(x, state))
        mutate(state, i)


CASES = {
    "deque": (lambda x, h: x * h[-1] + len(h), lambda: collections.deque([1.0], maxlen=3),
              lambda h, i: h.append(float(i + 2))),
    "array": (lambda x, a: x * sum(a), lambda: array.array("d", [1.0, 2.0]),
              lambda a, i: a.append(3.0 * i)),
    "bytearray": (lambda x, b: x * b[0] + len(b), lambda: bytearray(b"\x01\x02"),
                  lambda b, i: b.__setitem__(0, 7 + i)),
    "memoryview": (lambda x, m: x * m[1], lambda: memoryview(bytearray(b"\x01\x02")),
                   lambda m, i: m.__setitem__(1, 9 + i)),
    "list subclass": (lambda x, h: x * h[-1] * len(h), lambda: History([1.0, 2.0]),
                      lambda h, i: h.append(4.0 + i)),
    "set subclass": (lambda x, s: x * (3.0 if "b" in s else 1.0) + len(s), lambda: Tags({"a"}),
                     lambda s, i: s.add("b" if i == 0 else f"c{i}")),
    "mappingproxy": (lambda x, p: x * p["k"], lambda: types.MappingProxyType({"k": 2.0}),
                     None),
    "dict values": (lambda x, v: x * sum(v), lambda: {"a": 1.0, "b": 2.0}, None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_contents_changed_between_calls(name):
    fn, make, mutate = CASES[name]
    state = make()
    if name == "mappingproxy":
        backing = {"k": 2.0}
        state = types.MappingProxyType(backing)
        mutate = lambda p, i: backing.__setitem__("k", 5.0 + i)  # noqa: E731
    elif name == "dict values":
        backing = state
        state = backing.values()
        mutate = lambda v, i: backing.__setitem__("a", 10.0 + i)  # noqa: E731
    _check(fn, state, mutate)
    assert kiln.stats()["recompiles"] >= 1


def test_deque_of_tensors_breaks_instead_of_baking():
    hist = collections.deque([torch.ones(3)], maxlen=2)

    def step(x):
        return x + hist[-1]

    f = kiln.compile(step)
    x = torch.zeros(3)
    torch.testing.assert_close(f(x), step(x))
    hist.append(torch.full((3,), 5.0))
    torch.testing.assert_close(f(x), step(x))


def test_unchanged_contents_share_the_graph():
    h = collections.deque([1.0, 2.0])
    f = kiln.compile(lambda x, h: x * h[0])
    for _ in range(3):
        f(torch.ones(2), h)
    assert kiln.stats()["graphs_compiled"] == 1


def test_builtin_shadowed_by_a_later_global():
    code = compile("def f(x):\n    return abs(x) * 2\n", "<shadow>", "exec")
    env = {}
    exec(code, env)
    f = kiln.compile(env["f"])
    x = torch.tensor([-1.0, 2.0])
    torch.testing.assert_close(f(x), torch.tensor([2.0, 4.0]))
    env["abs"] = lambda t: t * 100
    torch.testing.assert_close(f(x), env["f"](x))
    del env["abs"]
    torch.testing.assert_close(f(x), torch.tensor([2.0, 4.0]))

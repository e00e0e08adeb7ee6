# SPDX-License-Identifier: Apache-2.0
"""collections.deque built in compiled code (issue 15): append/appendleft/
pop/popleft/extend/extendleft/rotate/reverse/clear/copy/count/index/remove/
insert, maxlen (a full bounded deque drops from the other end), len(),
truth, `in`, `d[i]` and iteration run at capture as CPython's deque does
(frontend/csrc/capture/values/Deques.cpp): one graph, compared with eager.
A deque that escapes the frame, is mutated after being iterated, or is used
in a way kiln does not model breaks with a category; results match eager."""
from collections import deque

import pytest
import torch

import kiln
from conftest import assert_close, stats, whole_graph


def test_queue_methods_are_one_graph():
    def f(x):
        d = deque()
        d.append(x)
        d.append(x * 2)
        d.appendleft(x + 1)
        a, b = d.pop(), d.popleft()
        d.extend([x * 3, x * 4])
        d.extendleft([x - 1, x - 2])  # reversed onto the left
        d.rotate(2)
        d.rotate(-1)
        s = 0
        for t in d:
            s = s + t
        out = a + b + s * len(d) + d[0] - d[-1]
        if d and x is not None and len(d.copy()) == 5:
            out = out + 1
        return out
    whole_graph(f, torch.randn(3))


def test_bounded_deque_slides_a_window():
    def f(x):
        window = deque(maxlen=3)
        outs = []
        for i in range(5):
            window.append(x * i)
            outs.append(torch.stack(list(window)).sum(0))  # list(d) does not end the window
        window.appendleft(x - 10)  # drops the right end
        return torch.stack(outs), window[-1], window.maxlen, len(window)
    whole_graph(f, torch.randn(2))


def test_deque_of_constants_and_search():
    def f(x):
        d = deque([1, 2, 3, 2], 10)
        d.remove(2)
        d.insert(1, 7)
        d.reverse()
        k = d.count(2) + d.index(7) + (5 if 3 in d else 0) + (1 if x in deque([x]) else 0)
        d.clear()
        return x * k + len(d)
    whole_graph(f, torch.randn(3))


def breaks_of(fn, *args):
    report = kiln.explain(fn)(*args)
    return [(b.category, b.message) for b in report.break_records]


@pytest.mark.parametrize("case", ["returned", "mutated_in_loop", "pop_empty", "slice", "add"])
def test_what_a_deque_cannot_do_breaks(case):
    def f(x):
        d = deque([x, x + 1])
        if case == "returned":
            return d
        if case == "mutated_in_loop":  # eager: RuntimeError (deque mutated during iteration)
            try:
                for t in d:
                    d.append(t)
            except RuntimeError:
                return x - 1
            return x
        if case == "pop_empty":
            try:
                deque().pop()
            except IndexError:
                return x * 3
            return x
        if case == "slice":
            try:
                return d[0:1]
            except TypeError:
                return x * 5
        return (d + d)[0]

    x = torch.randn(3)
    compiled = kiln.compile(f)
    for _ in range(2):
        got, expected = compiled(x), f(x)
        if case == "returned":
            assert isinstance(got, deque) and len(got) == 2
            assert_close(list(got), list(expected))
        else:
            assert_close(got, expected)
    reasons = breaks_of(f, x)
    assert reasons, case
    category = {"returned": "python-builtin", "mutated_in_loop": "python-builtin",
                "pop_empty": "user-error", "slice": "user-error", "add": "python-builtin"}[case]
    assert reasons[0][0] == category, reasons
    assert stats()["graph_breaks"] >= 1

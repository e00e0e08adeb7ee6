# SPDX-License-Identifier: Apache-2.0
"""Side effects that do not specialize the compiled code (LazyValues.cpp):
a counter (`self.calls += 1`), a global or dict counter, a logging list
that grows every call are replayed as "value at the call's start + 1" /
"append to the list object", with only type guards, so the frame compiles
once and every later call hits the cache. A value the graph does depend on
(tensor math, a branch) keeps its value guard: correct, recompiling per
value. Each case runs >= 10 calls against an eager twin and checks the
graphs/breaks/recompiles counters."""
import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats

CALLS = 12


def counts():
    s = stats()
    return s["graphs_compiled"], s["graph_breaks"], s["recompiles"]


def run_twins(make, state, args_for, calls=CALLS, **compile_kw):
    """Calls an eager twin and a compiled twin `calls` times with
    `args_for(i)`, comparing results and `state(twin)` after each call."""
    eager, comp = make(), make()
    cf = kiln.compile(comp, **compile_kw)
    for i in range(calls):
        args = args_for(i)
        assert_close(cf(*args), eager(*args))
        assert state(comp) == state(eager), f"call {i}: {state(comp)} != {state(eager)}"
    return eager, comp


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * 2 + 1


def test_attribute_counter_compiles_once():
    eager, comp = run_twins(Counter, lambda m: m.calls, lambda i: (torch.randn(3),))
    assert comp.calls == eager.calls == CALLS
    assert counts() == (1, 0, 0)
    assert stats()["cache_hits"] == CALLS - 1


def test_counter_replay_reads_the_value_at_call_time():
    # Changed from outside between calls: the replay adds to the new value.
    m = Counter()
    cf = kiln.compile(m)
    x = torch.randn(3)
    for i in range(CALLS):
        if i == 5:
            m.calls = 100
        assert_close(cf(x), x * 2 + 1)
    assert m.calls == 100 + CALLS - 5
    assert counts() == (1, 0, 0)


def test_counter_type_change_recompiles_by_type_guard():
    m = Counter()
    cf = kiln.compile(m)
    x = torch.randn(3)
    for _ in range(3):
        cf(x)
    m.calls = 0.5  # a float now: `+ 1` means float addition
    for _ in range(3):
        cf(x)
    assert m.calls == 3.5 and type(m.calls) is float
    assert counts() == (2, 0, 1)


TOTAL = 0


def test_global_counter():
    def make():
        def f(x):
            global TOTAL
            TOTAL += 2
            return x.sin()
        return f

    global TOTAL
    TOTAL = 0
    cf = kiln.compile(make())
    x = torch.randn(3)
    for _ in range(CALLS):
        assert_close(cf(x), x.sin())
    assert TOTAL == 2 * CALLS
    assert counts() == (1, 0, 0)


class Logger(nn.Module):
    def __init__(self):
        super().__init__()
        self.log = []

    def forward(self, x):
        h = torch.relu(x) * 3
        self.log.append(h)
        return h.sum()


def test_logging_list_grows_one_tensor_per_call():
    xs = [torch.randn(4) for _ in range(CALLS)]
    eager, comp = run_twins(Logger, lambda m: len(m.log), lambda i: (xs[i],))
    assert len(comp.log) == CALLS
    for got, want in zip(comp.log, eager.log):
        assert_close(got, want)
    assert counts() == (1, 0, 0)


def test_logging_list_of_python_values_and_pop_at_end():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.events = ["init"]
            self.popped = []

        def forward(self, x):
            self.events.append("fwd")
            self.events.extend(("a", "b"))
            self.events.insert(0, "first")
            self.events.append("tmp")
            self.popped.append(self.events.pop())  # an item appended here
            return x - 1

    eager, comp = run_twins(M, lambda m: (list(m.events), list(m.popped)),
                            lambda i: (torch.randn(2),))
    assert len(comp.events) == 1 + 4 * CALLS
    assert counts() == (1, 0, 0)


def test_dict_counter():
    def make():
        d = {"n": 0, "tokens": 0}

        def f(x):
            d["n"] += 1
            d["tokens"] += x.shape[0]
            return x.exp()
        f.d = d
        return f

    eager, comp = run_twins(make, lambda f: dict(f.d), lambda i: (torch.randn(3),))
    assert comp.d == {"n": CALLS, "tokens": 3 * CALLS}
    assert counts() == (1, 0, 0)


def test_augmented_assignment_on_float_and_str():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.total = 0.0
            self.trace = ""

        def forward(self, x):
            self.total += 0.5
            self.total *= 2
            self.trace += "x"
            return x.abs()

    run_twins(M, lambda m: (m.total, m.trace), lambda i: (torch.randn(3),))
    assert counts() == (1, 0, 0)


def test_two_increments_in_one_frame_read_the_pending_value():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = 0
            self.b = 0

        def forward(self, x):
            self.a += 1
            self.a += 1            # reads the pending a (start + 1)
            self.b = self.a * 10   # reads the pending a (start + 2)
            return x + 1

    eager, comp = run_twins(M, lambda m: (m.a, m.b), lambda i: (torch.randn(3),))
    assert (comp.a, comp.b) == (2 * CALLS, 20 * CALLS)
    assert counts() == (1, 0, 0)


def test_counter_used_by_the_graph_keeps_its_value_guard():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.step = 0

        def forward(self, x):
            self.step += 1
            return x * self.step  # the graph depends on the value

    calls = 6  # below the recompile limit
    run_twins(M, lambda m: m.step, lambda i: (torch.ones(3),), calls=calls)
    assert counts() == (calls, 0, calls - 1)


def test_counter_branch_keeps_its_value_guard():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            if self.calls % 2 == 0:
                return x * 2
            return x * 3

    run_twins(M, lambda m: m.calls, lambda i: (torch.ones(3),), calls=6)
    g, b, r = counts()
    assert b == 0 and g == 6 and r == 5


def test_replay_order_across_two_objects():
    class Box:
        def __init__(self):
            self.v = 0
            self.seen = []

    def make():
        a, b = Box(), Box()

        def f(x):
            a.v += 1
            b.v = a.v * 100  # a's pending value, then stored on b
            a.seen.append(b.v)
            b.seen.append(a.v)
            a.v += 1
            return x + 1
        f.a, f.b = a, b
        return f

    eager, comp = run_twins(make, lambda f: (f.a.v, f.b.v, list(f.a.seen), list(f.b.seen)),
                            lambda i: (torch.randn(2),))
    assert comp.a.v == 2 * CALLS
    assert comp.a.seen[:2] == [100, 300] and comp.b.seen[:2] == [1, 3]
    assert counts() == (1, 0, 0)


def test_mutation_then_graph_break_and_resume(capfd):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.log = []

        def forward(self, x):
            self.calls += 1
            self.log.append(x * 2)
            y = x * 2
            print("mid")  # graph break: the replay runs before it
            self.calls += 10  # the resume function's own capture
            self.log.append(y + 1)
            return y + 1

    xs = [torch.randn(3) for _ in range(CALLS)]
    eager, comp = run_twins(M, lambda m: (m.calls, len(m.log)), lambda i: (xs[i],))
    for got, want in zip(comp.log, eager.log):
        assert_close(got, want)
    g, b, r = counts()
    assert (g, b, r) == (2, 1, 0)  # the prefix and the resume function, once each
    out, _ = capfd.readouterr()
    assert out.count("mid") == 2 * CALLS


def test_stored_list_keeps_identity():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.items = []
            self.alias = None

        def forward(self, x):
            self.items.append(1)
            self.alias = self.items  # the caller's list object itself
            return x + 1

    m = M()
    cf = kiln.compile(m)
    for _ in range(CALLS):
        cf(torch.randn(2))
    assert m.alias is m.items and m.items == [1] * CALLS
    assert counts() == (1, 0, 0)


@pytest.mark.parametrize("limit_calls", [10])
def test_counter_does_not_hit_the_recompile_limit(limit_calls):
    # Before lazy guards the 9th call ran eagerly (recompile limit 8).
    m = Counter()
    cf = kiln.compile(m)
    x = torch.randn(3)
    for _ in range(limit_calls):
        cf(x)
    s = stats()
    assert s["eager_calls"] == 0 and s["recompiles"] == 0
    assert m.calls == limit_calls


def test_reading_a_list_after_pending_mutations_sees_them():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.events = [1]

        def forward(self, x):
            self.events.insert(0, 5)
            self.events.extend((7, 8))
            self.events.append(9)
            # The read materializes the list: its length and items are
            # guarded (so this recompiles per call), the pending items seen.
            return x * sum(self.events) + len(self.events)

    calls = 5  # below the recompile limit
    run_twins(M, lambda m: list(m.events), lambda i: (torch.ones(2),), calls=calls)
    g, b, r = counts()
    assert b == 0 and r == calls - 1


def test_pop_of_an_existing_item_and_tensor_item_store():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.queue = [float(i) for i in range(20)]
            self.scale = 3.0

        def forward(self, x):
            y = x * 1.0
            y[0] = self.scale       # a tensor item store (a break) uses the value
            return y * self.queue.pop()  # reads the list (guarded)

    calls = 5
    run_twins(M, lambda m: list(m.queue), lambda i: (torch.ones(3),), calls=calls)

# SPDX-License-Identifier: Apache-2.0
"""Side effects: mutations of Python state that existed before the frame
(attributes, globals, dict/list items, list.append/extend/insert) are
recorded during capture and replayed in order after the compiled graph runs
(frontend/csrc/capture/SideEffects.cpp) instead of breaking the graph. Each
case compares the result and the Python state after one and two calls with
eager's (on a twin object) and checks the graph/break/recompile counters."""
import copy

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats


def counts():
    s = stats()
    return s["graphs_compiled"], s["graph_breaks"], s["recompiles"]


def twin_calls(make, state, *args, **compile_kw):
    """Builds two twins with `make()`; calls the eager one and the compiled
    one twice, comparing results and `state(twin)` after each call."""
    eager, comp = make(), make()
    cf = kiln.compile(comp, **compile_kw)
    for _ in range(2):
        expected = eager(*args)
        got = cf(*args)
        assert_close(got, expected)
        assert_close(state(comp), state(eager))
    return comp


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.log = []

    def forward(self, x):
        self.calls += 1
        y = x * 2
        self.log.append("fwd")
        return y + 1


def test_attribute_counter_and_list_append_on_module():
    twin_calls(Counter, lambda m: (m.calls, list(m.log)), torch.randn(3))
    # Neither the counter's value nor the list's length is guarded (the
    # graph does not use them; test_side_effects_lazy.py): one graph.
    assert counts() == (1, 0, 0)


def test_counter_read_after_increment_sees_new_value():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.step = 0

        def forward(self, x):
            self.step = self.step + 1
            return x * self.step

    twin_calls(M, lambda m: m.step, torch.randn(4))
    assert counts()[1] == 0


def test_list_append_tensor_output():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.acts = []

        def forward(self, x):
            h = torch.relu(x) * 3
            self.acts.append(h)
            return h.sum()

    m = twin_calls(M, lambda m: [a.clone() for a in m.acts], torch.randn(5))
    assert len(m.acts) == 2 and counts()[1] == 0


def test_attribute_store_of_tensor_output_then_read():
    class M(nn.Module):
        def forward(self, x):
            self.last = x.sin()
            return self.last + 1

    twin_calls(M, lambda m: m.last, torch.randn(3))
    assert counts() == (1, 0, 0)
    assert stats()["cache_hits"] == 1


STATE = {"n": 0}
FLAG = None


def test_global_assignment():
    def make():
        def f(x):
            global FLAG
            FLAG = "seen"
            return x.cos()
        return f

    global FLAG
    FLAG = None
    cf = kiln.compile(make())
    x = torch.randn(3)
    assert_close(cf(x), x.cos())
    assert FLAG == "seen"
    FLAG = None
    assert_close(cf(x), x.cos())
    assert FLAG == "seen"
    assert counts() == (1, 0, 0)


def test_dict_item_store():
    def make():
        d = {}

        def f(x):
            d["y"] = x + 1
            d["tag"] = 3
            return x * 2
        f.d = d
        return f

    twin_calls(make, lambda f: (sorted(f.d), f.d["y"], f.d["tag"]), torch.randn(2))
    # The dict's length and items read at capture are guarded: the second
    # call (two keys now) recompiles once.
    assert counts() == (2, 0, 1)


def test_list_item_store_and_extend_insert():
    def make():
        lst = [0, 1, 2]

        def f(x):
            lst[1] = 10
            lst.extend((7, 8))
            lst.insert(0, -1)
            return x - 1
        f.lst = lst
        return f

    twin_calls(make, lambda f: list(f.lst), torch.randn(2))
    assert counts()[1] == 0


def test_mutation_then_graph_break_keeps_order(capfd):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.events = []

        def forward(self, x):
            self.events.append("before")
            y = x * 2
            print("break", len(self.events))  # reads the list: after the replay
            self.events.append("after")
            return y + 1

    twin_calls(M, lambda m: list(m.events), torch.randn(3))
    out, _ = capfd.readouterr()
    assert out.splitlines() == ["break 1", "break 1", "break 3", "break 3"]
    assert counts()[1] >= 1


def test_mutation_inside_inlined_callee():
    class Sub(nn.Module):
        def __init__(self):
            super().__init__()
            self.hits = 0

        def forward(self, x):
            self.hits += 1
            return x.tanh()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = Sub()
            self.trace = []

        def note(self, what):
            self.trace.append(what)

        def forward(self, x):
            self.note("start")
            y = self.sub(x)
            self.note("end")
            return y * 2

    twin_calls(M, lambda m: (m.sub.hits, list(m.trace)), torch.randn(3))
    assert counts()[1] == 0


def test_mutation_of_object_created_in_frame_needs_no_replay():
    def make():
        def f(x):
            acc = []
            acc.append(x + 1)
            acc.append(x * 2)
            d = {}
            d["k"] = acc[0]
            return d["k"] + acc[1]
        return f

    twin_calls(make, lambda f: None, torch.randn(3))
    assert counts() == (1, 0, 0)


def test_parameter_assignment_stays_a_break():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))

        def forward(self, x):
            with torch.no_grad():
                y = x * 2
            self.w = nn.Parameter(torch.full((3,), 2.0))
            return y

    with pytest.raises(Exception, match="parameter"):
        kiln.compile(M(), fullgraph=True)(torch.randn(3))
    kiln.reset()
    twin_calls(M, lambda m: m.w.detach(), torch.randn(3))
    assert counts()[1] >= 1


def test_fullgraph_accepts_mutations():
    twin_calls(Counter, lambda m: (m.calls, list(m.log)), torch.randn(3), fullgraph=True)
    assert counts()[1] == 0


def test_read_after_list_mutation_sees_new_items():
    def make():
        seen = []

        def f(x):
            seen.append(1)
            n = len(seen)  # the list as mutated so far, tracked symbolically
            return x * n
        f.seen = seen
        return f

    twin_calls(make, lambda f: list(f.seen), torch.randn(3))
    assert counts() == (2, 0, 1)  # len(seen) is guarded: one recompile


def test_property_setter_stays_a_break():
    class Obj:
        def __init__(self):
            self._v = 0

        @property
        def v(self):
            return self._v

        @v.setter
        def v(self, value):
            self._v = value * 10

    def make():
        o = Obj()

        def f(x):
            o.v = 2
            return x + 1
        f.o = o
        return f

    twin_calls(make, lambda f: f.o._v, torch.randn(3))
    assert counts()[1] >= 1


def test_side_effects_with_gradients_fall_back_to_breaks():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return self.lin(x).sum()

    eager, comp = M(), M()
    comp.load_state_dict(eager.state_dict())
    cf = kiln.compile(comp)
    x = torch.randn(2, 3)
    for _ in range(2):
        e, c = eager(x), cf(x)
        assert_close(c, e)
        e.backward()
        c.backward()
        assert comp.calls == eager.calls
    assert_close(comp.lin.weight.grad, eager.lin.weight.grad)


def test_local_alias_of_mutated_list_across_a_break(capfd):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.log = []

        def forward(self, x):
            log = self.log
            log.append(len(log))
            y = x + 1
            print("n", len(log))
            log.append("end")
            return y

    twin_calls(M, lambda m: list(m.log), torch.randn(2))
    out, _ = capfd.readouterr()
    assert out.splitlines() == ["n 1", "n 1", "n 3", "n 3"]


def test_returning_a_mutated_caller_list_keeps_identity():
    holder = {"lst": [1]}

    def f(x):
        lst = holder["lst"]
        lst.append(2)
        return lst, x * 2

    cf = kiln.compile(f)
    lst, y = cf(torch.ones(2))
    assert lst is holder["lst"] and lst == [1, 2]
    assert_close(y, torch.ones(2) * 2)


SCALE = 1.0


def test_global_store_then_read_in_same_frame():
    def f(x):
        global SCALE
        SCALE = 3.0
        return x * SCALE  # the stored value, not the old global

    global SCALE
    SCALE = 1.0
    cf = kiln.compile(f)
    x = torch.randn(3)
    assert_close(cf(x), x * 3.0)
    assert SCALE == 3.0
    SCALE = 1.0
    assert_close(cf(x), x * 3.0)
    assert SCALE == 3.0
    assert counts() == (1, 0, 0)


def test_append_to_caller_list_of_tensors():
    def make():
        bank = [torch.zeros(2)]

        def f(x):
            bank.append(x * 2)
            return sum(t.sum() for t in bank)  # sees the appended tensor
        f.bank = bank
        return f

    twin_calls(make, lambda f: [t.clone() for t in f.bank], torch.ones(2))
    assert counts()[1] == 0


class _Holder:
    pass


def test_instance_dict_read_around_attribute_stores():
    # The frame's attribute stores replay after the graph; `obj.__dict__`
    # read at capture is the caller's dict, so a read before or after a
    # store in the same frame breaks (it used to give the old value).
    def store_then_read(x, a):
        a.k = 5
        return x * a.__dict__["k"]

    def read_then_store(x, a):
        d = a.__dict__
        a.k = 5
        return x * d["k"]

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 1.0

        def forward(self, x):
            self.scale = 3.0
            return x * self.__dict__["scale"]

    x = torch.randn(3)
    for fn in (store_then_read, read_then_store):
        a, b = _Holder(), _Holder()
        a.k = b.k = 1
        assert_close(kiln.compile(fn)(x, a), fn(x, b))
        assert a.k == b.k == 5
    assert_close(kiln.compile(Scaled())(x), x * 3.0)


def test_instance_dict_read_alone_is_guarded():
    def f(x, a):
        return x * a.__dict__["k"]

    a = _Holder()
    a.k = 2
    cf = kiln.compile(f)
    x = torch.randn(3)
    assert_close(cf(x, a), x * 2)
    a.k = 4
    assert_close(cf(x, a), x * 4)
    assert stats()["graph_breaks"] == 0


def test_side_effects_before_an_op_that_raises_at_run_time_happen():
    # The graph raises (an index out of range at run time): eager's side
    # effects before the error (a log append, an input updated in place)
    # happen and eager's exception is raised (kiln lost them).
    log = []

    def f(x, idx):
        log.append("called")
        return x[idx] * 2

    def g(x, idx):
        x.add_(1.0)
        return x[idx]

    compiled_f, compiled_g = kiln.compile(f), kiln.compile(g)
    compiled_f(torch.arange(5.0), torch.tensor([0, 1]))
    compiled_g(torch.zeros(5), torch.tensor([0]))
    for fn, ref in ((compiled_f, f), (compiled_g, g)):
        outcomes = []
        for call in (ref, fn):
            log.clear()
            x = torch.zeros(5)
            with pytest.raises(IndexError) as err:
                call(x, torch.tensor([1, 7]))
            outcomes.append((list(log), x.tolist(), str(err.value)))
        assert outcomes[0] == outcomes[1]

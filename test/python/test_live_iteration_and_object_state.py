# SPDX-License-Identifier: Apache-2.0
"""State that changes while or after the compiled code reads it
(frontend/csrc/capture/interp/LiveIterators.cpp, CaptureTimeCalls.cpp):

- a list iterated while the loop appends to it, shortens it or stores ahead
  of the iterator; dict views read the dict as it is; a dict or set that
  changes size during the loop raises as in eager;
- any()/all()/`in` stop consuming a generator at the first answer, so its
  side effects (and in-place updates) after it do not happen;
- builtins, operators and f-strings on the caller's objects whose class
  defines __len__/__bool__/__str__/__eq__/__contains__ in Python follow the
  object's state when the same object is changed and passed again;
- a list/dict reached through two names (one argument passed twice, a
  global passed as an argument) that the code mutates through one name.

Every case compares with eager on fresh inputs and the second call runs the
same object changed after compiling."""
import torch

import kiln


def _run(fn, make_args, x=None):
    """(kiln result, eager result, kiln args, eager args) on fresh arguments."""
    x = torch.ones(1) if x is None else x
    ka, ea = make_args(), make_args()
    return kiln.compile(fn)(x, *ka), fn(x, *ea), ka, ea


def test_list_iterated_while_it_grows_or_shrinks():
    def grow(x, queue):  # a work queue: items appended while iterating are visited
        for v in queue:
            if v < 3:
                queue.append(v + 2)
            x = x + v
        return x

    def shrink(x, items):
        for i, v in enumerate(items):
            if i == 0:
                items.pop()
            x = x * v
        return x

    def local_queue(x):
        queue = [1.0, 2.0]
        for v in queue:
            if v < 3:
                queue.append(v + 2)
            x = x + v
        return x

    for fn, make in [(grow, lambda: ([1.0, 2.0],)), (shrink, lambda: ([2.0, 3.0, 4.0],)),
                     (local_queue, lambda: ())]:
        k, e, ka, ea = _run(fn, make)
        assert k.item() == e.item(), fn.__name__
        assert ka == ea, fn.__name__


def test_items_stored_ahead_and_lazy_iterators_see_the_list():
    def prefix(x):
        arr = [1.0, 1.0, 1.0, 1.0]
        for i, v in enumerate(arr):
            if i + 1 < len(arr):
                arr[i + 1] += v
            x = x + v
        return x

    def lazy_iter(x):
        l = [1.0, 2.0, 3.0]
        it = iter(l)
        next(it)
        l[1] = 50.0
        return x + next(it)

    def lazy_genexpr(x):
        l = [1.0, 2.0]
        g = (v * 2 for v in l)
        l.append(10.0)
        return x + sum(g)

    def lazy_map(x):
        l = [1.0, 2.0]
        m = map(lambda v: v * 10, l)
        l[0] = 5.0
        return x + sum(m)

    def dict_values(x):
        d = {"a": 1.0, "b": 2.0}
        for k, v in d.items():
            if k == "a":
                d["b"] = 100.0
            x = x + v
        return x

    for fn, make in [(prefix, lambda: ()), (lazy_iter, lambda: ()), (lazy_genexpr, lambda: ()),
                     (lazy_map, lambda: ()), (dict_values, lambda: ())]:
        k, e, ka, ea = _run(fn, make, torch.zeros(1))
        assert k.item() == e.item(), fn.__name__
        assert ka == ea, fn.__name__


def test_dict_or_set_changing_size_during_loop_raises_like_eager():
    def dict_grow(x, d):
        for k in d:
            if k == "a":
                d["new"] = 1.0
            x = x + d[k]
        return x

    def local_dict_grow(x):
        d = {"a": 1.0, "b": 2.0}
        for k in d:
            d[k + "!"] = 0.0
            x = x + d[k]
        return x

    def set_grow(x):
        s = {1, 2}
        for v in s:
            s.add(v + 10)
            x = x + v
        return x

    for fn, make in [(dict_grow, lambda: ({"a": 1.0, "b": 2.0},)), (local_dict_grow, lambda: ()),
                     (set_grow, lambda: ())]:
        messages = []
        for f in (kiln.compile(fn), fn):
            try:
                f(torch.ones(1), *make())
                messages.append(None)
            except RuntimeError as err:
                messages.append(str(err))
        assert messages[1] is not None and "changed size during iteration" in messages[1]
        assert messages[0] == messages[1], fn.__name__


GLOBAL_TABLE = {}


class _TableModule(torch.nn.Module):
    def __init__(self, table):
        super().__init__()
        self.table = table

    def forward(self, x):
        for k, v in self.table.items():
            if k == "a":
                self.table["b"] = x * 100 if torch.is_tensor(v) else 10
            x = x + v
        return x


def _global_table_loop(x):
    for k, v in GLOBAL_TABLE.items():
        if k == "a":
            GLOBAL_TABLE["b"] = x * 100
        x = x + v
    return x


def test_items_of_an_attribute_or_global_dict_stored_into_during_the_loop():
    """The view iterated a snapshot of the dict when the store went through
    another read of the same attribute/global: 4 instead of eager's 102."""
    for table in ({"a": torch.ones(2), "b": torch.ones(2) * 2}, {"a": 1, "b": 2}):
        eager, compiled = _TableModule(dict(table)), _TableModule(dict(table))
        want, got = eager(torch.ones(2)), kiln.compile(compiled)(torch.ones(2))
        torch.testing.assert_close(got, want)
        assert compiled.table.keys() == eager.table.keys()
    results = []
    for f in (_global_table_loop, kiln.compile(_global_table_loop)):
        GLOBAL_TABLE.clear()
        GLOBAL_TABLE.update(a=torch.ones(2), b=torch.ones(2) * 2)
        results.append((f(torch.ones(2)), GLOBAL_TABLE["b"]))
    torch.testing.assert_close(results[1], results[0])


def test_loop_over_a_list_of_tensors_stays_one_graph():
    def f(x, ws):
        out = []
        for w in ws:
            out.append(x * w)
        for y in out:
            x = x + y
        return x

    ws = [torch.randn(3) for _ in range(3)]
    before = kiln.stats()
    compiled = kiln.compile(f)
    for _ in range(2):
        torch.testing.assert_close(compiled(torch.ones(3), ws), f(torch.ones(3), ws))
    after = kiln.stats()
    assert after["graph_breaks"] == before["graph_breaks"]
    assert after["eager_calls"] == before["eager_calls"]


LOG = []


def _gen(n):
    for i in range(n):
        LOG.append(i)
        yield i


def test_any_all_in_stop_consuming_a_generator_at_the_answer():
    cases = {
        "any": lambda x: x + any(v > 0 for v in _gen(6)),
        "all": lambda x: x + all(v < 1 for v in _gen(6)),
        "in": lambda x: x + (2 in _gen(6)),
        "any(map)": lambda x: x + any(map(lambda v: v > 0, _gen(6))),
        "none found": lambda x: x + any(v > 10 for v in _gen(4)),
    }
    for name, fn in cases.items():
        LOG.clear()
        k = kiln.compile(fn)(torch.ones(2))
        k_log = list(LOG)
        LOG.clear()
        e = fn(torch.ones(2))
        assert k_log == LOG, name
        torch.testing.assert_close(k, e)


def test_any_over_a_generator_that_updates_inputs_in_place():
    def f(a, b, c):
        def scale_all():
            for t in (a, b, c):
                t.mul_(2)
                yield t.dim() == 1

        found = any(scale_all())  # stops after a
        return a + b + c, found

    results = []
    for fn in (f, kiln.compile(f)):
        a, b, c = torch.ones(2), torch.ones(2), torch.ones(2)
        out, found = fn(a, b, c)
        results.append((out.tolist(), b.tolist(), c.tolist(), found))
    assert results[0] == results[1]


class Buffer:
    """A user container whose dunders read its state."""

    def __init__(self):
        self.items = []
        self.name = "warmup"

    def __len__(self):
        return len(self.items)

    def __str__(self):
        return self.name

    def __eq__(self, other):
        return self.name == other

    __hash__ = object.__hash__

    def __contains__(self, k):
        return k in self.items

    def __iter__(self):
        return iter(list(self.items))


def test_builtins_on_a_user_object_follow_its_state():
    cases = {
        "len": lambda x, buf: x * len(buf),
        "truth": lambda x, buf: x + 1 if buf else x - 1,
        "f-string": lambda x, buf: x * {"warmup": 1.0, "train": 2.0}[f"{buf}"],
        "str": lambda x, buf: x * {"warmup": 1.0, "train": 2.0}[str(buf)],
        "==": lambda x, buf: x * (2.0 if buf == "train" else 1.0),
        "in": lambda x, buf: x + 1 if 2 in buf else x - 1,
        "list": lambda x, buf: x * len(list(buf)),
    }
    x = torch.ones(1)
    for name, fn in cases.items():
        buf = Buffer()
        compiled = kiln.compile(fn)
        assert compiled(x, buf).item() == fn(x, buf).item(), name
        buf.items += [1, 2, 3]  # the same object, changed after compiling
        buf.name = "train"
        assert compiled(x, buf).item() == fn(x, buf).item(), name
        buf.items.clear()
        assert compiled(x, buf).item() == fn(x, buf).item(), name


class Node:
    def __init__(self):
        self.items = [1.0]


G = []


def test_container_mutated_through_one_name_read_through_another():
    def objects(x, a, b):
        b.items.append(3.0)
        return x * len(a.items)

    def lists(x, la, lb):
        lb.append(3.0)
        return x * len(la)

    def dicts(x, da, db):
        db["k"] = 5.0
        return x * da.get("k", 1.0)

    def global_and_arg(x, l):
        G.append(1.0)
        return x * len(l)

    x = torch.ones(1)
    for fn, distinct, same in [
        (objects, lambda: (Node(), Node()), lambda: (lambda n: (n, n))(Node())),
        (lists, lambda: ([1.0], [1.0]), lambda: (lambda l: (l, l))([1.0])),
        (dicts, lambda: ({}, {}), lambda: (lambda d: (d, d))({})),
    ]:
        compiled = kiln.compile(fn)
        assert compiled(x, *distinct()).item() == fn(x, *distinct()).item(), fn.__name__
        assert compiled(x, *same()).item() == fn(x, *same()).item(), fn.__name__
        assert compiled(x, *distinct()).item() == fn(x, *distinct()).item(), fn.__name__
    compiled = kiln.compile(global_and_arg)
    compiled(x, [])
    G.clear()
    k = compiled(x, G).item()
    G.clear()
    assert k == global_and_arg(x, G).item()


class CountingDescriptor:
    def __init__(self):
        self.n = 0

    def __get__(self, obj, typ=None):
        self.n += 1
        return float(self.n)


class WithDescriptor:
    d = CountingDescriptor()


class WithProperty:
    def __init__(self):
        self.n = 0

    @property
    def p(self):
        self.n += 1
        return float(self.n)


def test_properties_and_descriptors_run_once_per_call():
    # Their getters are inlined: evaluated at capture (and by every guard
    # check) they ran 4 times per call and each call saw another value.
    x = torch.ones(3)
    counter = WithDescriptor.__dict__["d"]
    compiled = kiln.compile(lambda o, x: x * o.d)
    counter.n = 0
    assert [compiled(WithDescriptor(), x)[0].item() for _ in range(3)] == [1.0, 2.0, 3.0]
    assert counter.n == 3
    obj = WithProperty()
    compiled = kiln.compile(lambda o, x: x * o.p)
    assert [compiled(obj, x)[0].item() for _ in range(3)] == [1.0, 2.0, 3.0]
    assert obj.n == 3


def test_parametrization_with_state_runs_once_per_call():
    import copy

    import torch.nn.utils.parametrize as P

    class RunningScale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("n", torch.zeros(()))

        def forward(self, w):
            if self.training:
                with torch.no_grad():
                    self.n += 1
            return w * self.n

    m = torch.nn.Linear(2, 2)
    P.register_parametrization(m, "weight", RunningScale())
    reference = copy.deepcopy(m)
    compiled = kiln.compile(m)
    x = torch.ones(1, 2)
    for _ in range(3):
        torch.testing.assert_close(compiled(x), reference(x))
        assert m.parametrizations.weight[0].n.item() == reference.parametrizations.weight[0].n.item()


def test_isinstance_after_abc_register_and_sorted_after_item_change():
    import abc

    class Plugin(abc.ABC):
        pass

    class Impl:
        pass

    class Prio:
        def __init__(self, p):
            self.p = p

        def __lt__(self, other):
            return self.p < other.p

    x = torch.ones(1)
    f_isinstance = kiln.compile(lambda x, o: x + 1 if isinstance(o, Plugin) else x - 1)
    f_issubclass = kiln.compile(lambda x, t: x + 1 if issubclass(t, Plugin) else x - 1)
    o = Impl()
    assert f_isinstance(x, o).item() == 0.0 and f_issubclass(x, Impl).item() == 0.0
    Plugin.register(Impl)  # the ABC's registry changes after compiling
    assert f_isinstance(x, o).item() == 2.0 and f_issubclass(x, Impl).item() == 2.0
    a, b = Prio(1.0), Prio(2.0)
    f_sorted = kiln.compile(lambda x, items: x * sorted(items)[0].p)
    assert f_sorted(x, [a, b]).item() == 1.0
    a.p = 5.0
    assert f_sorted(x, [a, b]).item() == 2.0


def test_callable_follows_the_class_gaining_or_losing_call():
    """callable(obj) was answered at capture with only a type guard: a class
    that gains __call__ after compiling kept the old answer."""
    class Base:
        pass

    class Child(Base):
        pass

    def f(x, o):
        return x + 1 if callable(o) else x - 1

    o, compiled = Child(), kiln.compile(f)
    answers = []
    for change in (None, "add", "remove"):
        if change == "add":
            Base.__call__ = lambda self: 1
        elif change == "remove":
            del Base.__call__
        answers.append((compiled(torch.zeros(1), o).item(), f(torch.zeros(1), o).item()))
    assert all(k == e for k, e in answers), answers
    assert [e for _, e in answers] == [-1.0, 1.0, -1.0]

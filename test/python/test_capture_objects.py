# SPDX-License-Identifier: Apache-2.0
"""User-defined objects inside the compiled code
(frontend/csrc/capture/values/UserObjects.cpp): calling a plain Python class
(config objects, dataclasses, namedtuples, helpers with properties,
classmethods and a Python __getattr__/__setattr__) is captured in the graph;
objects that escape are rebuilt with their final attributes, class state a
constructor updates is replayed, and what is not plain Python is a break
with a category. Each case compares with eager and asserts kiln.stats()."""
import collections
import dataclasses
import typing

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, run_whole_graph, stats


def break_categories(fn, *args):
    report = kiln.explain(fn)(*args)
    assert_close(report.out, fn(*args))
    return report.break_counts()


class Config:
    """A model config object built inside forward (timm/HF style)."""
    eps = 1e-5

    def __init__(self, hidden, scale=2.0, *, act="gelu"):
        self.hidden = hidden
        self.scale = scale
        self.act = act

    @property
    def head_dim(self):
        return self.hidden // 4

    @classmethod
    def small(cls):
        return cls(8, scale=0.5)

    @staticmethod
    def activation(name):
        return torch.nn.functional.gelu if name == "gelu" else torch.relu

    def apply(self, x):
        return self.activation(self.act)(x * self.scale) + self.eps


def test_config_object_with_property_classmethod_staticmethod():
    def f(x):
        cfg = Config(16)
        small = Config.small()
        return cfg.apply(x) * cfg.head_dim + small.apply(x) * small.hidden

    got, expected = run_whole_graph(f, torch.randn(4, 16))
    assert_close(got, expected)


@dataclasses.dataclass
class ModelOutputLike:
    """An HF ModelOutput-like plain dataclass (not an OrderedDict)."""
    logits: torch.Tensor
    loss: typing.Optional[torch.Tensor] = None
    hidden_states: typing.Optional[tuple] = None

    def __post_init__(self):
        self.num_items = 1 if self.loss is None else 2


def test_dataclass_returned_is_rebuilt_with_final_fields():
    def f(x):
        out = ModelOutputLike(logits=x * 2)
        out.loss = out.logits.pow(2).mean()
        out.hidden_states = (x, x + 1)
        return out

    got, expected = run_whole_graph(f, torch.randn(3, 5))
    assert type(got) is ModelOutputLike
    assert_close(got.logits, expected.logits)
    assert_close(got.loss, expected.loss)
    assert_close(got.hidden_states, expected.hidden_states)
    assert got.num_items == expected.num_items == 1  # __post_init__ ran before loss was set


@dataclasses.dataclass(frozen=True)
class FrozenSpec:
    kernel: int
    stride: int = 1

    @property
    def padding(self):
        return self.kernel // 2


def test_frozen_dataclass_and_slots():
    class Pair:
        __slots__ = ("a", "b")

        def __init__(self, a, b):
            self.a, self.b = a, b

    def f(x):
        spec = FrozenSpec(3)
        p = Pair(x, spec.padding)
        return p.a * p.b + spec.kernel * spec.stride

    got, expected = run_whole_graph(f, torch.randn(4))
    assert_close(got, expected)


Point = collections.namedtuple("Point", ["x", "y"])


class Shapes(typing.NamedTuple):
    feats: torch.Tensor
    mask: torch.Tensor
    depth: int = 2

    def masked(self):
        return self.feats * self.mask


def test_namedtuples_built_read_and_returned():
    def f(x):
        p = Point(x, x + 1)
        s = Shapes(x * 3, x > 0)
        return Point(p.x + p[1] + s.masked() * s.depth, s.mask), isinstance(p, tuple)

    got, expected = run_whole_graph(f, torch.randn(5))
    assert type(got[0]) is Point
    assert_close(tuple(got[0]), tuple(expected[0]))
    assert got[1] is True


class Counted:
    instances = 0

    def __init__(self, value):
        Counted.instances += 1
        self.id = Counted.instances
        self.value = value


def test_constructor_updates_class_state_replayed():
    def f(x):
        a, b = Counted(x), Counted(x * 2)
        return a.value + b.value * b.id

    Counted.instances = 0
    expected = f(torch.ones(3))
    assert Counted.instances == 2
    Counted.instances = 0
    compiled = kiln.compile(f)
    for call in range(1, 3):
        got = compiled(torch.ones(3))
        assert Counted.instances == 2 * call
    assert stats()["graph_breaks"] == 0 and stats()["graphs_compiled"] >= 1
    Counted.instances = 0
    assert_close(compiled(torch.ones(3)), expected)


def test_object_stored_on_module_escapes_with_fields():
    class Cache:
        def __init__(self, key, value):
            self.key = key
            self.value = value

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.cache = None

        def forward(self, x):
            y = self.proj(x)
            self.cache = Cache(y.sum(-1), y * 2)
            self.cache.value = self.cache.value + 1
            return y

    eager, comp = Block(), Block()
    comp.load_state_dict(eager.state_dict())
    compiled = kiln.compile(comp)
    x = torch.randn(2, 4)
    for _ in range(2):
        with torch.no_grad():  # state mutation in a graph that needs gradients still breaks
            assert_close(compiled(x), eager(x))
        assert type(comp.cache) is Cache
        assert_close(comp.cache.key, eager.cache.key)
        assert_close(comp.cache.value, eager.cache.value)
    assert stats()["graph_breaks"] == 0


def test_methods_building_new_instances():
    class Box:
        def __init__(self, lo, hi):
            self.lo, self.hi = lo, hi

        def scaled(self, k):
            return Box(self.lo * k, self.hi * k)

        def width(self):
            return self.hi - self.lo

    def f(x):
        b = Box(x, x + 2).scaled(3)
        return b.width(), b

    got, expected = run_whole_graph(f, torch.randn(3))
    assert_close(got[0], expected[0])
    assert_close(got[1].lo, expected[1].lo) and assert_close(got[1].hi, expected[1].hi)


def test_python_getattr_setattr_and_new():
    class Namespace:
        def __init__(self, **kw):
            object.__setattr__(self, "_d", dict(kw))

        def __getattr__(self, name):
            return self._d[name]

        def __setattr__(self, name, value):
            self._d[name] = value

    class Tagged:
        def __new__(cls, value):
            obj = super().__new__(cls)
            obj.tag = "made"
            return obj

        def __init__(self, value):
            self.value = value

    def f(x):
        ns = Namespace(alpha=2.0)
        ns.beta = x
        t = Tagged(x)
        return ns.alpha * ns.beta + t.value, t.tag, isinstance(t, Tagged), type(t) is Tagged

    got, expected = run_whole_graph(f, torch.randn(4))
    assert_close(got, expected)


def test_callable_object_and_enumerate_modulelist():
    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, t):
            return t * self.k

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

        def forward(self, x):
            fns = [Scale(i + 1) for i in range(3)]
            for i, layer in enumerate(self.layers):
                x = fns[i](layer(x))
            return x

    net = Net()
    got, expected = run_whole_graph(net, torch.randn(2, 4))
    assert_close(got, expected)


def test_object_returned_twice_keeps_identity_or_breaks():
    class Holder:
        def __init__(self, v):
            self.v = v

    def f(x):
        h = Holder(x + 1)
        return h, h

    got = kiln.compile(f)(torch.ones(2))
    assert got[0] is got[1]  # eager's identity (the frame runs eagerly when it cannot keep it)


def test_negative_c_new_and_metaclass_break_with_category():
    class Meta(type):
        def __call__(cls, *args):
            return super().__call__(*args) if args else None

    class WithMeta(metaclass=Meta):
        def __init__(self, v):
            self.v = v

    class FromDict(dict):
        pass

    def f(x):
        return WithMeta(x).v * 2

    def g(x):
        d = FromDict(a=1)
        return x + d["a"]

    assert "python-builtin" in break_categories(f, torch.randn(3))
    assert break_categories(g, torch.randn(3))  # a C base class: a break, never a wrong object


def test_negative_missing_attribute_is_user_error():
    class Empty:
        pass

    def f(x):
        e = Empty()
        return x + e.missing

    compiled = kiln.compile(f)
    with pytest.raises(AttributeError):
        compiled(torch.randn(2))
    assert stats()["graph_breaks"] >= 1


def test_object_returned_and_stored_keeps_identity():
    class State:
        def __init__(self, h):
            self.h = h

    class Holder:
        last = None

    holder = Holder()

    def f(x):
        s = State(x * 2)
        holder.last = s
        return s

    got = kiln.compile(f)(torch.ones(2))
    assert holder.last is got  # eager's identity: one object, stored and returned
    assert_close(got.h, torch.full((2,), 2.0))


def test_class_attributes_read_through_instances_and_isinstance_hierarchy():
    class Base:
        scale = 3

        def __init__(self, w):
            self.w = w

        def run(self, x):
            return x * self.w * self.scale

    class Child(Base):
        scale = 5

        def __init__(self, w):
            super().__init__(w + 1)
            self.tag = "child"

        def run(self, x):
            return super().run(x) + 1

    def f(x):
        c = Child(2)
        return c.run(x), isinstance(c, Base), c.tag, getattr(c, "missing", 7), hasattr(c, "w")

    got, expected = run_whole_graph(f, torch.randn(3))
    assert_close(got, expected)

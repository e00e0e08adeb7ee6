# SPDX-License-Identifier: Apache-2.0
"""Python objects in model code: user classes built per call, dataclasses
(frozen, with defaults, ``replace``), namedtuples, ``@property``,
``__slots__``, class attributes and class state, classmethods and
staticmethods, inheritance with ``super()``, ``__call__`` objects, a
submodule shadowing a base-class method, ``isinstance`` dispatch."""
from __future__ import annotations

import dataclasses
from collections import namedtuple
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import nn

from capture_corpus._case import case, randn


def _x(n):
    return (randn(n, 8),)


class Scaler:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, x):
        return x * self.factor


class Box:
    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    @property
    def width(self):
        return self.hi - self.lo

    def clip(self, x):
        return x.clamp(self.lo, self.hi)


class Counter:
    instances = 0

    def __init__(self, x):
        Counter.instances += 1
        self.x = x
        self.id = Counter.instances


@dataclass
class Batch:
    x: torch.Tensor
    mask: torch.Tensor | None = None
    meta: dict = field(default_factory=dict)

    def masked(self):
        return self.x if self.mask is None else self.x * self.mask


@dataclass(frozen=True)
class Hparams:
    scale: float = 2.0
    shift: float = -1.0
    act: str = "relu"


class Pair(NamedTuple):
    first: torch.Tensor
    second: torch.Tensor


Point = namedtuple("Point", ["x", "y"])


class Vec:
    def __init__(self, data):
        self.data = data

    def __add__(self, other):
        return Vec(self.data + other.data)

    def __mul__(self, k):
        return Vec(self.data * k)

    def norm(self):
        return self.data.norm()

    @classmethod
    def zeros_like(cls, other):
        return cls(torch.zeros_like(other.data))

    @staticmethod
    def dot(a, b):
        return (a.data * b.data).sum()


@case("objects", _x)
def callable_object(x):
    s = Scaler(3.0)
    return s(x) + Scaler(0.5)(x)


@case("objects", _x)
def slots_and_property(x):
    b = Box(-0.5, 0.5)
    return b.clip(x) * b.width


@case("objects", _x, setup=lambda: setattr(Counter, "instances", 0),
      after=lambda: Counter.instances)
def class_state_in_init(x):
    a, b = Counter(x), Counter(x * 2)
    return a.x + b.x * b.id, a.id


@case("objects", _x)
def dataclass_build_and_method(x):
    batch = Batch(x, mask=(x > 0).float())
    batch.meta["n"] = x.shape[0]
    return batch.masked(), batch.meta


@case("objects", _x)
def dataclass_returned(x):
    return Batch(x * 2, meta={"kind": "train"})


@case("objects", _x)
def frozen_dataclass_replace(x):
    hp = Hparams()
    hp2 = dataclasses.replace(hp, scale=3.0)
    y = x * hp2.scale + hp.shift
    return torch.relu(y) if hp.act == "relu" else y


@case("objects", _x)
def dataclass_asdict(x):
    hp = Hparams(scale=0.5)
    d = dataclasses.asdict(hp)
    return x * d["scale"], sorted(d)


@case("objects", _x)
def typed_namedtuple(x):
    p = Pair(x, x + 1)
    a, b = p
    return p.first * b, p._replace(second=a)


@case("objects", _x)
def collections_namedtuple(x):
    pt = Point(x.sum(0), x.mean(0))
    return pt.x - pt.y, pt._asdict()["y"], len(pt)


@case("objects", _x)
def operator_overloading(x):
    v = Vec(x) + Vec(x) * 2
    return v.norm(), Vec.dot(v, v), Vec.zeros_like(v).data


@case("objects", _x)
def methods_build_new_instances(x):
    v = Vec(x)
    for _ in range(3):
        v = v + v * 0.5
    return v.data


@case("objects", _x)
def isinstance_dispatch(x):
    def to_tensor(v):
        if isinstance(v, torch.Tensor):
            return v
        if isinstance(v, (list, tuple)):
            return torch.stack([to_tensor(e) for e in v])
        return torch.tensor(v)
    return to_tensor([x[0], x[1]]) + to_tensor(2.0)


@case("objects", _x)
def hasattr_getattr_default(x):
    hp = Hparams()
    eps = getattr(hp, "eps", 1e-5)
    act = getattr(torch, hp.act)
    return act(x) + eps, hasattr(hp, "scale")


@case("objects", _x)
def setattr_on_object(x):
    class State:
        pass
    s = State()
    setattr(s, "value", x)
    s.count = 1
    s.count += 1
    return s.value * s.count, vars(s).keys() == {"value", "count"}


@case("objects", _x)
class InheritsSuperForward(nn.Linear):
    def __init__(self):
        super().__init__(8, 4)

    def forward(self, x):
        return super().forward(x).relu()


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def norm(self, x):
        return x / x.norm(dim=-1, keepdim=True)

    def forward(self, x):
        return self.norm(self.proj(x))


@case("objects", _x)
class SubmoduleShadowsMethod(Base):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)


@case("objects", _x)
class MixinMethods(Base):
    def extra(self, x):
        return x + 1

    def forward(self, x):
        return self.extra(super().forward(x))


@case("objects", _x)
class ClassAttributeConfig(nn.Module):
    scale = 0.5
    use_bias = True

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8, bias=self.use_bias)

    def forward(self, x):
        return self.lin(x) * type(self).scale


@case("objects", _x)
class PropertyOnModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    def forward(self, x):
        return self.lin(x.to(self.dtype))


@case("objects", _x)
class ModuleWithPlainAttrs(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.cfg = Hparams(scale=1.5)
        self.names = ["a", "b"]

    def forward(self, x):
        return self.lin(x) * self.cfg.scale * len(self.names)


@case("objects", _x)
class CallCountingModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * self.calls


@case("objects", _x)
class CachesTensorOnSelf(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = None

    def forward(self, x):
        if self.cache is None or self.cache.shape != x.shape:
            self.cache = torch.zeros_like(x)
        self.cache = self.cache + x
        return self.cache * 1


@case("objects", _x)
class RegistersBufferLazily(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return x * self.scale + self.get_buffer("scale")


@case("objects", _x)
class GetattrFallbackModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(8, 8)

    def forward(self, x):
        layer = getattr(self, "inner")
        extra = getattr(self, "missing", None)
        return layer(x) if extra is None else extra(x)


class Registry:
    _fns = {}

    @classmethod
    def register(cls, name):
        def deco(fn):
            cls._fns[name] = fn
            return fn
        return deco

    @classmethod
    def get(cls, name):
        return cls._fns[name]


@Registry.register("swish")
def _swish(x):
    return x * torch.sigmoid(x)


@case("objects", _x)
def registry_lookup(x):
    return Registry.get("swish")(x)


@case("objects", _x)
def enum_like_constants(x):
    import enum

    class Mode(enum.Enum):
        SUM = "sum"
        MEAN = "mean"
    mode = Mode("mean")
    return x.mean() if mode is Mode.MEAN else x.sum(), mode.value


@case("objects", _x)
def object_identity_checks(x):
    a = x
    b = x.view_as(x)
    return a is b, a is x, id(a) == id(x)


@case("objects", _x)
def tensor_subclass_parameter(x):
    p = nn.Parameter(torch.ones(8))
    return x * p, isinstance(p, nn.Parameter), type(x * p).__name__


@case("objects", _x)
def user_iterable_class(x):
    class Chunks:
        def __init__(self, t, k):
            self.t, self.k = t, k

        def __iter__(self):
            return iter(self.t.chunk(self.k))

        def __len__(self):
            return self.k
    c = Chunks(x, 2)
    return sum(t.sum() for t in c), len(c)


@case("objects", _x)
def dunder_getitem_class(x):
    class Table:
        def __init__(self, data):
            self.data = data

        def __getitem__(self, key):
            return self.data[key] * 2

        def __contains__(self, key):
            return key < self.data.shape[0]
    t = Table(x)
    return t[0] + t[1:3].sum(0), 2 in t

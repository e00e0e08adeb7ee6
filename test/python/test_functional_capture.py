# SPDX-License-Identifier: Apache-2.0
"""Functional-programming idioms inside the compiled code
(frontend/csrc/capture/interp/Functional.cpp and its hooks): the operator
module, functools.reduce/partial/lru_cache, sorted/min/max with a key,
itertools.combinations/permutations, operators on user objects (their
dunder methods), nested functions whose defaults are values of the frame,
*args/**kwargs forwarding, iterating over a tensor, and
nn.Module.parameters()/named_parameters()/buffers() with arguments. Each
case compares with eager and asserts kiln.stats(); what cannot be kept
exact (a cached function with side effects, a partial of tensors) breaks."""
import functools
import itertools
import operator

import torch
import torch.nn.functional as F
from torch import nn

import kiln
from conftest import assert_close, stats, whole_graph


def breaks(fn, *args, calls=2):
    """Runs `fn` compiled `calls` times, each result equal to eager's, and
    returns kiln.stats() (the caller asserts there was a break)."""
    compiled = kiln.compile(fn)
    for _ in range(calls):
        assert_close(compiled(*args), fn(*args))
    return stats()


def test_operator_module_on_tensors_and_constants():
    def f(x):
        ops = [operator.mul, operator.sub, operator.truediv, operator.add, operator.pow]
        outs = [op(x, 2.0) for op in ops]
        return outs, operator.getitem(x, 0), operator.neg(x), operator.matmul(x, x.t()), \
            operator.lt(3, 4) + operator.floordiv(7, 2)

    whole_graph(f, torch.randn(3, 3))


def test_operator_iadd_on_a_fresh_tensor_is_in_place():
    def f(x):
        y = x * 1
        z = operator.iadd(y, 1)
        return y, z is y

    got = whole_graph(f, torch.randn(4))
    assert got[1] is True


def test_functools_reduce_with_and_without_initial():
    def f(x):
        parts = [x * i for i in range(1, 4)]
        a = functools.reduce(operator.add, parts)
        b = functools.reduce(lambda acc, t: acc * 0.5 + t, parts, torch.zeros_like(x))
        c = functools.reduce(operator.mul, [2, 3, 4], 1)
        return a, b * c

    whole_graph(f, torch.randn(5))


def test_reduce_of_empty_without_initial_raises_like_eager():
    def f(x):
        return functools.reduce(operator.add, [t for t in [] if t]) + x

    compiled = kiln.compile(f)
    try:
        compiled(torch.randn(2))
    except TypeError as e:
        assert "empty" in str(e)
    else:
        raise AssertionError("expected TypeError")
    assert stats()["graph_breaks"] >= 1


def test_functools_partial_of_constants_built_and_called():
    act = functools.partial(F.leaky_relu, negative_slope=0.3)

    def f(x):
        local = functools.partial(torch.clamp, min=-0.5)
        return local(x, max=0.5), act(x), functools.partial(torch.add, alpha=2)(x, x)

    whole_graph(f, torch.randn(6))


def test_partial_of_a_tensor_breaks():
    def f(x):
        p = functools.partial(torch.add, x)
        return p(1.0)

    s = breaks(f, torch.randn(3))
    assert s["graph_breaks"] >= 1


@functools.lru_cache(maxsize=None)
def _freq(n):
    return torch.arange(n).float() / n


_CALLS = []


@functools.lru_cache(maxsize=None)
def _logged(n):
    _CALLS.append(n)
    return n * 2


def test_lru_cache_pure_helper_is_inlined():
    def f(x):
        return x * _freq(x.shape[1])[None]

    whole_graph(f, torch.randn(2, 8))


def test_lru_cache_with_side_effects_breaks_and_runs_once_per_key():
    _logged.cache_clear()
    _CALLS.clear()

    def f(x):
        return x * _logged(3)

    s = breaks(f, torch.randn(4), calls=3)
    assert s["graph_breaks"] >= 1
    # Eager (3 calls) plus the compiled calls: one miss for key 3.
    assert _CALLS == [3], _CALLS


def test_sorted_min_max_with_key_functions():
    def f(x):
        rows = [x[i] for i in range(x.shape[0])]
        order = sorted(range(len(rows)), key=lambda i: -i)
        by_len = sorted([x[:2], x, x[:1]], key=lambda t: t.shape[0], reverse=True)
        shortest = min([x[:3], x[:1], x[:2]], key=lambda t: t.shape[0])
        longest = max([(1, "a"), (3, "b"), (3, "c")], key=lambda p: p[0])
        stable = sorted([(1, "x"), (0, "y"), (1, "z")], key=lambda p: p[0], reverse=True)
        return torch.stack([rows[i] for i in order]), by_len, shortest, longest, stable

    whole_graph(f, torch.randn(4, 3))


def test_itertools_combinations_and_permutations():
    def f(x):
        parts = list(x.unbind(0))
        pairs = [a * b for a, b in itertools.combinations(parts, 2)]
        perms = [a - b for a, b in itertools.permutations(parts[:3], 2)]
        n = len(list(itertools.permutations(range(4)))) + len(list(itertools.combinations("abcd", 5)))
        return torch.stack(pairs), torch.stack(perms), n

    whole_graph(f, torch.randn(4, 3))


class Vec:
    def __init__(self, data):
        self.data = data

    def __add__(self, other):
        if not isinstance(other, Vec):
            return NotImplemented
        return Vec(self.data + other.data)

    def __radd__(self, other):
        return Vec(self.data + other)

    def __mul__(self, k):
        return Vec(self.data * k)

    __rmul__ = __mul__

    def __eq__(self, other):
        return isinstance(other, Vec) and self.data.shape == other.data.shape

    def __lt__(self, other):
        return self.data.numel() < other.data.numel()


def test_user_object_operator_overloading():
    def f(x):
        v = Vec(x) + Vec(x) * 2
        w = 3 * v
        u = 1.5 + w  # int/float + Vec: Vec.__radd__
        for _ in range(2):
            u = u + u * 0.5
        return u.data, v == w, v != Vec(x[:1]), Vec(x[:1]) < v, Vec(x) > Vec(x[:2])

    whole_graph(f, torch.randn(3))


def test_user_object_without_operator_raises_like_eager():
    class Plain:
        pass

    def f(x):
        return Plain() - Plain(), x

    compiled = kiln.compile(f)
    try:
        compiled(torch.randn(2))
    except TypeError:
        pass
    else:
        raise AssertionError("expected TypeError")
    assert stats()["graph_breaks"] >= 1


def test_user_object_equality_defaults_to_identity():
    class Plain:
        pass

    def f(x):
        a, b = Plain(), Plain()
        return x + 1, a == a, a == b, a != b

    whole_graph(f, torch.randn(2))


def test_nested_function_defaults_from_the_frame():
    def f(x):
        def g(t, k=x.shape[0], bias=x.mean(), *, scale=x.sum()):
            return t * k + bias + scale

        return g(x), g(x, 2), g(x, scale=1.0)

    whole_graph(f, torch.randn(4))


def test_args_kwargs_forwarding_with_keyword_defaults():
    def f(x):
        def inner(a, b=1.0, *rest, scale=1.0, **extra):
            return (a + b + sum(rest)) * scale + extra.get("shift", 0.0)

        def outer(*args, **kwargs):
            return inner(*args, **kwargs)

        return outer(x, 2.0, 3.0, scale=0.5, shift=1.0), outer(x)

    whole_graph(f, torch.randn(3))


def test_iterating_over_a_tensor_unbinds_rows():
    def f(x):
        out = [row * i for i, row in enumerate(x)]
        total = sum(r.sum() for r in x)
        return torch.stack(out), total, [len(r) for r in x]

    whole_graph(f, torch.randn(3, 5))


def test_iterating_over_a_0d_tensor_raises_like_eager():
    def f(x):
        return [t for t in x.sum()]

    compiled = kiln.compile(f)
    try:
        compiled(torch.randn(3))
    except TypeError:
        pass
    else:
        raise AssertionError("expected TypeError")


def test_module_parameters_and_buffers_with_arguments():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.BatchNorm1d(4)
            self.b.eval()

        def forward(self, x):
            reg = sum(p.pow(2).sum() for p in self.parameters())
            names = [n for n, _ in self.named_parameters(prefix="net")]
            own = list(self.a.parameters(recurse=False))
            bufs = [b.float().sum() for _, b in self.named_buffers()]
            mods = [n for n, _ in self.named_modules(prefix="root")]
            return self.b(self.a(x)) + reg, names, len(own), sum(bufs), mods

    whole_graph(Net(), torch.randn(3, 4))


def test_parameters_read_per_call_after_an_update():
    net = nn.Linear(3, 3)

    def f(x):
        return sum(p.sum() for p in net.parameters()) + x

    compiled = kiln.compile(f)
    x = torch.randn(3)
    assert_close(compiled(x), f(x))
    with torch.no_grad():
        net.weight.add_(1.0)
    assert_close(compiled(x), f(x))
    s = stats()
    assert (s["graphs_compiled"], s["graph_breaks"]) == (1, 0), s


def test_broadcast_shapes_is_a_constant():
    def f(x):
        return x + 1, torch.broadcast_shapes(x.shape, (1, 8)), torch.Size([2, 3])

    whole_graph(f, torch.randn(4, 8))


def test_keyword_order_is_the_call_order():
    # kwargs are kept in sorted maps inside the capture: dict(b=..., a=...)
    # and a function's **kwargs must still iterate in the call's order.
    def collect(**kw):
        return kw

    def f(x):
        d = dict(b=x, a=x + 1)
        kw = collect(c=1, b=x, a=2)
        return list(d), list(kw), list(collect(**kw)), d["b"] + kw["b"]

    whole_graph(f, torch.ones(2))
    assert kiln.compile(f)(torch.ones(2))[:3] == (["b", "a"], ["c", "b", "a"], ["c", "b", "a"])

# SPDX-License-Identifier: Apache-2.0
"""Iteration: zip/enumerate/reversed/range, itertools (chain, product,
accumulate, islice, count, repeat, pairwise, starmap), generators and
generator expressions driven by ``next()`` and to completion, ``iter()``
over tensors, ``any``/``all``/``sum`` over generators, StopIteration."""
from __future__ import annotations

import itertools

import torch
from torch import nn

from capture_corpus._case import case, randn


def _x(n):
    return (randn(n, 8),)


def _xs(n):
    return (randn(n, 8), randn(n, 8), randn(n, 8))


@case("iteration", _xs)
def zip_two_lists(a, b, c):
    ws = [1.0, 2.0, 3.0]
    return sum(w * t for w, t in zip(ws, [a, b, c]))


@case("iteration", _xs)
def enumerate_start(a, b, c):
    out = a
    for i, t in enumerate([b, c], start=1):
        out = out + i * t
    return out


@case("iteration", _xs)
def reversed_list(a, b, c):
    acc = []
    for t in reversed([a, b, c]):
        acc.append(t.sum())
    return torch.stack(acc)


@case("iteration", _x)
def iterate_tensor_rows(x):
    return [row.max() for row in x]


@case("iteration", _x)
def range_step_negative(x):
    out = []
    for i in range(x.shape[0] - 1, -1, -2):
        out.append(x[i])
    return torch.stack(out)


@case("iteration", _xs)
def itertools_chain(a, b, c):
    return torch.cat(list(itertools.chain([a], (b, c))), 0)


@case("iteration", _x)
def itertools_product_grid(x):
    acc = x
    for i, j in itertools.product(range(2), range(3)):
        acc = acc + i * j
    return acc


@case("iteration", _xs)
def itertools_accumulate(a, b, c):
    return list(itertools.accumulate([a, b, c]))


@case("iteration", _x)
def itertools_islice_count(x):
    out = [x * k for k in itertools.islice(itertools.count(1), 3)]
    return torch.stack(out)


@case("iteration", _x)
def itertools_repeat(x):
    return sum(itertools.repeat(x, 3))


@case("iteration", _xs)
def itertools_pairwise(a, b, c):
    return [q - p for p, q in itertools.pairwise([a, b, c])]


@case("iteration", _x)
def itertools_starmap(x):
    return list(itertools.starmap(torch.add, [(x, 1.0), (x, 2.0)]))


@case("iteration", _xs)
def itertools_combinations(a, b, c):
    return [(p * q).sum() for p, q in itertools.combinations([a, b, c], 2)]


@case("iteration", _x)
def generator_function_consumed(x):
    def gen(t, k):
        for i in range(k):
            yield t * i
    return torch.stack(list(gen(x, 3)))


@case("iteration", _x)
def generator_next_step(x):
    def gen(t):
        yield t + 1
        yield t * 2
        yield t - 3
    g = gen(x)
    first = next(g)
    second = next(g)
    return first + second


@case("iteration", _x)
def generator_next_default(x):
    it = iter([x])
    a = next(it)
    b = next(it, None)
    return a if b is None else b


@case("iteration", _x)
def iter_stop_iteration(x):
    it = iter(x.unbind(0)[:2])
    out = []
    while True:
        try:
            out.append(next(it))
        except StopIteration:
            break
    return torch.stack(out)


@case("iteration", _x)
def genexpr_any_all(x):
    rows = x.unbind(0)
    return any(r.shape[0] == 8 for r in rows), all(r.ndim == 1 for r in rows)


@case("iteration", _x)
def genexpr_sum_tensors(x):
    return sum(r * i for i, r in enumerate(x))


@case("iteration", _x)
def yield_from_generator(x):
    def inner(t):
        yield t
        yield t + 1

    def outer(t):
        yield from inner(t)
        yield t * 10
    return list(outer(x))


@case("iteration", _x)
def dict_items_loop(x):
    scales = {"a": 1.0, "b": 2.0, "c": 0.5}
    return {k: x * v for k, v in scales.items()}


@case("iteration", _x)
def zip_strict_lengths(x):
    names = ["q", "k"]
    parts = x.chunk(2, dim=1)
    return {n: p for n, p in zip(names, parts, strict=True)}


@case("iteration", _x)
def nested_comprehension(x):
    return [[x[i, j] for j in range(2)] for i in range(2)]


@case("iteration", _x)
def dict_comprehension_filter(x):
    d = {f"row{i}": x[i] for i in range(x.shape[0]) if i % 2 == 0}
    return sorted(d), sum(d.values())


@case("iteration", _x)
def set_comprehension(x):
    shapes = {tuple(t.shape) for t in (x, x[0], x[:1])}
    return len(shapes), x.sum()


@case("iteration", _x)
def enumerate_with_modulelist_zip(x):
    layers = [torch.nn.functional.relu, torch.tanh, torch.sigmoid]
    scales = [1.0, 0.5, 0.25]
    for idx, (layer, s) in enumerate(zip(layers, scales)):
        x = layer(x) * s + idx
    return x


@case("iteration", _x)
class ZipModuleLists(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.norms = nn.ModuleList([nn.LayerNorm(8) for _ in range(3)])

    def forward(self, x):
        for conv, norm in zip(self.convs, self.norms):
            x = norm(conv(x)) + x
        return x


@case("iteration", _x)
class IterOverParameters(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        reg = sum(p.pow(2).sum() for p in self.parameters())
        n = sum(p.numel() for p in self.parameters())
        return self.b(self.a(x)), reg / n


@case("iteration", _x)
class ReversedModuleList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

    def forward(self, x):
        for layer in reversed(self.layers):
            x = layer(x)
        return x


@case("iteration", _x)
def while_with_counter_iterator(x):
    it = iter(range(3))
    total = x
    for i in it:
        total = total + i
        if i == 1:
            next(it, None)
    return total


@case("iteration", _x)
def map_with_two_iterables(x):
    return list(map(torch.mul, x.unbind(0)[:3], [1.0, 2.0, 3.0]))


@case("iteration", _x)
def sorted_by_norm(x):
    rows = list(x.unbind(0))
    rows.sort(key=lambda r: r.norm().item())
    return torch.stack(rows)

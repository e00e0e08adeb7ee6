# SPDX-License-Identifier: Apache-2.0
"""Slices of module containers (`self.layers[:n]`, HF LLaMA's decoder loop;
`self.seq[1:]` called as a module) read per call through an Item source
whose slice is kept while the parent and its `_modules` are unchanged
(frontend/csrc/Guards.cpp, ItemCache): eager builds a new container per
call (35-157 us for 4-32 layers); kiln rebuilds it only when a layer is
replaced, added or removed. Each test compares with eager and asserts the
graph counts."""
import torch
from torch import nn

import kiln
from conftest import assert_close, stats


class CountingList(nn.ModuleList):
    """A ModuleList counting its constructions (each slice builds one)."""
    built = 0

    def __init__(self, modules=None):
        type(self).built += 1
        super().__init__(modules)


class Stack(nn.Module):
    def __init__(self, n_layers, n, tail=False):
        super().__init__()
        self.layers = CountingList(nn.Linear(4, 4) for _ in range(n_layers))
        self.n, self.tail = n, tail

    def forward(self, x):
        for layer in (self.layers[-2:] if self.tail else self.layers[: self.n]):
            x = torch.tanh(layer(x))
        return x


def test_slice_is_not_rebuilt_per_call():
    m, x = Stack(4, 3), torch.randn(2, 4)
    compiled = kiln.compile(m)
    with torch.no_grad():
        for _ in range(2):
            assert_close(compiled(x), m(x))
        before = CountingList.built
        for _ in range(5):
            compiled(x)
        assert CountingList.built == before  # the guard check built no slice
        assert_close(compiled(x), m(x))
    s = stats()
    assert (s["graphs_compiled"], s["graph_breaks"], s["recompiles"]) == (1, 0, 0), s
    assert s["eager_calls"] == 0, s


def test_replaced_layer_inside_and_outside_the_slice():
    m, x = Stack(4, 2), torch.randn(2, 4)
    compiled = kiln.compile(m)
    with torch.no_grad():
        assert_close(compiled(x), m(x))
        m.layers[1] = nn.Linear(4, 4)  # inside the slice: new weights
        assert_close(compiled(x), m(x))
        m.layers[3] = nn.Linear(4, 4)  # outside: the same slice
        assert_close(compiled(x), m(x))
        m.layers[0] = nn.Sequential(nn.Linear(4, 4), nn.ReLU())  # structure changed
        assert_close(compiled(x), m(x))
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_appended_and_removed_layers_move_a_tail_slice():
    m, x = Stack(3, 0, tail=True), torch.randn(2, 4)
    compiled = kiln.compile(m)
    with torch.no_grad():
        assert_close(compiled(x), m(x))
        m.layers.append(nn.Linear(4, 4))  # layers[-2:] now ends with the new one
        assert_close(compiled(x), m(x))
        del m.layers[3]
        del m.layers[2]
        assert_close(compiled(x), m(x))
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_instances_of_one_class_alternate():
    a, b, x = Stack(3, 2), Stack(3, 2), torch.randn(2, 4)
    ca, cb = kiln.compile(a), kiln.compile(b)
    with torch.no_grad():
        for _ in range(3):
            assert_close(ca(x), a(x))
            assert_close(cb(x), b(x))
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_sequential_slice_called_as_module():
    seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.Tanh())

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = seq

        def forward(self, x):
            return self.seq[1:](x) + self.seq[:2](x)

    m, x = Head(), torch.randn(2, 4)
    compiled = kiln.compile(m)
    with torch.no_grad():
        for _ in range(2):
            assert_close(compiled(x), m(x))
        m.seq[2] = nn.Linear(4, 4)
        assert_close(compiled(x), m(x))
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s

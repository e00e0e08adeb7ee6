# SPDX-License-Identifier: Apache-2.0
"""Tensor factories with a `device=` (capture/ops/Factories.cpp).

A factory on the graph's device is captured: `device=` as a string, a
torch.device or the device of a graph tensor (`x.device`), on CPU graphs
and on meta graphs (the CUDA backend's dry run, where HF models build
their masks and positions with `device=input_ids.device`). A factory on
another device than the graph's, including a default-device (CPU)
factory in a meta/CUDA graph, breaks the graph: its result keeps eager's
device (a graph value would be on the graph's device).
"""
import pytest
import torch

import kiln
from conftest import assert_close, assert_compiled, stats, whole_graph

CPU_DEVICES = ["cpu", torch.device("cpu"), "same"]


def _factories(x, device):
    d = x.device if device == "same" else device
    n = x.shape[-1]
    return (x + torch.ones(n, device=d) + torch.zeros(x.shape, device=d),
            torch.arange(n, device=d) * 2, torch.full((2, n), 3.0, device=d),
            torch.zeros_like(x, device=d), x.new_ones(2, device=d), x.new_zeros(3),
            torch.eye(n, device=d), torch.linspace(0, 1, n, device=d),
            torch.empty(0, device=d).shape)


@pytest.mark.parametrize("device", CPU_DEVICES, ids=str)
def test_cpu_factories_on_the_cpu_graph_are_captured(device):
    x = torch.randn(2, 4)
    got = whole_graph(lambda x: _factories(x, device), x)
    assert all(t.device.type == "cpu" for t in got[:-1])


@pytest.mark.parametrize("device", ["meta", torch.device("meta"), "same"], ids=str)
def test_meta_factories_on_the_meta_graph_are_captured(device):
    """The CUDA dry run: factories on the inputs' device stay in the graph."""
    x = torch.empty(2, 4, device="meta")
    f = kiln.compile(lambda x: _factories(x, device))
    for _ in range(2):
        got, expected = f(x), _factories(x, device)
        for g, e in zip(got[:-1], expected[:-1]):
            assert (g.device, g.shape, g.dtype) == (e.device, e.shape, e.dtype)
        assert got[-1] == expected[-1]
    assert_compiled(graphs=1, eager_calls=0)


def _bert_mask(ids):
    mask = torch.ones(ids.shape, device=ids.device)
    positions = torch.arange(ids.shape[1], dtype=torch.long, device=ids.device)
    return (1.0 - mask[:, None, None, :]) * -10000.0, ids + positions


def test_hf_style_mask_and_positions_on_meta_are_one_graph():
    ids = torch.zeros(1, 16, dtype=torch.long, device="meta")
    f = kiln.compile(_bert_mask)
    mask, pos = f(ids)
    assert mask.device.type == "meta" and mask.shape == (1, 1, 1, 16) and pos.shape == (1, 16)
    assert_compiled(graphs=1, eager_calls=0)


def test_cpu_factory_in_a_meta_graph_breaks_and_stays_on_the_cpu():
    """Eager's torch.zeros(3) is a CPU tensor even in a meta (CUDA) frame:
    captured, it would be a graph value on the graph's device."""
    def f(x):
        return x * 2, torch.zeros(3), torch.ones(2, device="cpu")
    x = torch.empty(3, device="meta")
    got = kiln.compile(f)(x)
    assert [t.device.type for t in got] == ["meta", "cpu", "cpu"]
    assert_close(got[1:], f(x)[1:])
    assert stats()["graph_breaks"] >= 1


def test_meta_factory_in_a_cpu_graph_breaks_and_stays_on_meta():
    def f(x):
        return x + 1, torch.arange(4, device="meta"), torch.ones(2, device=torch.device("meta"))
    x = torch.randn(3)
    got = kiln.compile(f)(x)
    assert [t.device.type for t in got] == ["cpu", "meta", "meta"]
    assert_close(got[0], x + 1)
    assert stats()["graph_breaks"] >= 1


def test_factory_before_any_tensor_input_keeps_eagers_device():
    """Before the first graph tensor is read the graph's device is not
    known: a non-CPU factory there breaks (its device is eager's)."""
    def f(x):
        m = torch.ones(4, device="meta")
        return m, x * 2
    x = torch.empty(4, device="meta")
    m, y = kiln.compile(f)(x)
    assert m.device.type == "meta" and y.device.type == "meta"


def test_bad_device_raises_like_eager():
    def f(x):
        return x + torch.ones(2, device="nonsense")
    with pytest.raises(RuntimeError) as eager:
        f(torch.randn(2))
    with pytest.raises(RuntimeError) as compiled:
        kiln.compile(f)(torch.randn(2))
    assert str(compiled.value) == str(eager.value)

# SPDX-License-Identifier: Apache-2.0
"""Tensor.is_contiguous() and stride() answered at capture as guarded
constants for graph inputs and their views (eager's answer, from a meta
tensor with the input's strides), and the whole frame run eagerly where
kiln's layout is not eager's (tensors the graph computes); torch.relu_ on an
input and torch.tensor/as_tensor of graph values and lists built in the
frame."""
import torch

import kiln
from conftest import stats


def test_is_contiguous_of_input_and_views():
    def f(x):
        y = x.t()
        return (x.is_contiguous(), y.is_contiguous(), y.contiguous().is_contiguous(),
                x[:, 1:].is_contiguous(), x[1:].is_contiguous(), y.stride(), y.contiguous().stride(),
                x.is_contiguous(memory_format=torch.contiguous_format))

    x = torch.randn(6, 8)
    assert kiln.compile(f)(x) == f(x)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, s


def test_is_contiguous_branch_recompiles_on_new_layout():
    def f(x):
        return x.view(-1) if x.is_contiguous() else x.reshape(-1) * 2

    g = kiln.compile(f)
    a = torch.randn(6, 8)
    b = torch.randn(8, 6).t()
    assert torch.equal(g(a), f(a))
    assert torch.equal(g(b), f(b))  # not contiguous: the other branch
    assert torch.equal(g(a), f(a))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["graph_breaks"] == 0 and s["recompiles"] == 1, s


def test_size_one_dims_follow_eager():
    # (8, 1).t() has shape (1, 8), strides (1, 1): contiguous in eager, and
    # .contiguous() returns it unchanged (strides (1, 1), not (8, 1)).
    def f(x):
        y = x.t()
        return y.is_contiguous(), y.contiguous().stride()

    x = torch.randn(8, 1)
    assert kiln.compile(f)(x) == f(x)
    assert stats()["graph_breaks"] == 0


def test_layout_of_computed_tensor_breaks():
    # Eager gives x.t() * 2 the permuted strides of its operand; kiln's
    # result layout may differ, so the question is not answered in the graph.
    def f(x):
        y = x.t() * 2
        return y.is_contiguous(), y.stride(), y + 1

    x = torch.randn(4, 6)
    r, e = kiln.compile(f)(x), f(x)
    assert r[:2] == e[:2] == (False, (1, 6)) and torch.allclose(r[2], e[2])
    # Resuming after the break would ask kiln's contiguous result (True):
    # the whole frame runs eagerly instead.
    s = stats()
    assert s["graph_breaks"] == 1 and s["eager_calls"] == 1 and s["graphs_compiled"] == 0, s


def test_torch_relu_inplace_on_input():
    def f(x):
        return torch.relu_(x)

    x = torch.randn(4, 6)
    x2 = x.clone()
    r = kiln.compile(f)(x)
    assert r is x and torch.equal(x, f(x2))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, s


def test_torch_tensor_of_graph_values_and_frame_lists():
    def f(x):
        a, b = x.shape
        ws = [0.1 * i for i in range(6)]
        return torch.tensor([a, b, a * b]), torch.tensor([x.sum(), x.mean()]), x * torch.as_tensor(ws)

    x = torch.randn(4, 6)
    for r, e in zip(kiln.compile(f)(x), f(x)):
        assert r.dtype == e.dtype and torch.allclose(r, e)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_torch_tensor_of_empty_data_and_legacy_cat():
    # HF's DynamicLayer starts its keys as torch.tensor([], dtype=...) and
    # concatenates along dim -2: a 1-d empty tensor is skipped by cat.
    def f(x):
        keys = torch.tensor([], dtype=x.dtype, device=x.device)
        return (torch.cat([keys, x], dim=-2), torch.tensor([]), torch.tensor([[], []]),
                torch.tensor([], dtype=torch.int64))

    x = torch.randn(2, 3, 4, 5)
    for r, e in zip(kiln.compile(f)(x), f(x)):
        assert (r.shape, r.dtype) == (e.shape, e.dtype) and torch.equal(r, e)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s

# SPDX-License-Identifier: Apache-2.0
"""Indexed in-place writes (scatter_, index_put_(accumulate=True),
index_add_, index_fill_, index_copy_, masked_scatter_ ...) captured as their
out-of-place forms with the tensor rebound (and written back into a graph
input), and torch.randperm / torch.multinomial run inside the graph on a
generator seeded from the graph's seed: one graph, no break, eager's values
(the random ones: eager's distributions, reproducible under manual_seed)."""
import pytest
import torch
import torch.nn.functional as F

import kiln
from conftest import assert_close, stats, whole_graph


def test_scatter_value_on_local():
    def f(x):
        out = torch.zeros(x.shape[0], 8)
        idx = torch.arange(x.shape[0]).unsqueeze(1) % 8
        out.scatter_(1, idx, 1.0)
        return out + x

    whole_graph(f, torch.randn(5, 8))


def test_scatter_src_reduce_and_scatter_add():
    def f(x, idx):
        a = torch.zeros(3, 5).scatter_(0, idx, x)
        b = torch.ones(3, 5)
        b.scatter_(0, idx, 3.0, reduce="multiply")
        c = torch.zeros(3, 5)
        c.scatter_add_(0, idx, x)
        d = torch.zeros(3, 5).scatter_reduce_(0, idx, x, reduce="amax", include_self=False)
        return a, b, c, d, torch.scatter(torch.zeros(3, 5), 0, idx, 2.0)

    idx = torch.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])  # duplicates across rows
    whole_graph(f, torch.randn(2, 5), idx)


def test_index_put_accumulate_adds_duplicates():
    def f(x):
        out = torch.zeros(4, 8)
        idx = torch.arange(x.shape[0]) % 4
        out.index_put_((idx,), x, accumulate=True)
        return out

    r = whole_graph(f, torch.ones(10, 8))
    assert r[0, 0].item() == 3.0  # rows 0, 4, 8 accumulated


def test_index_add_fill_copy_masked_scatter():
    def f(x):
        acc = torch.zeros(2, 8)
        a = acc.index_add_(0, torch.arange(x.shape[0]) % 2, x, alpha=2.0)
        b = x.clone().index_fill_(1, torch.tensor([0, 3]), -1.0)
        c = torch.zeros(6, 8)
        c.index_copy_(0, torch.tensor([5, 1, 0, 2]), x[:4])
        m = x > 0
        d = torch.zeros_like(x).masked_scatter_(m, x * 10)
        return a, b, c, d, acc

    whole_graph(f, torch.randn(4, 8))


def test_index_put_on_graph_input_written_back():
    def f(buf, rows, v):
        buf.index_put_((rows,), v, accumulate=True)
        buf.scatter_(1, torch.zeros(4, 1, dtype=torch.long), 7.0)
        return buf * 2

    rows, v = torch.tensor([0, 2, 0]), torch.ones(3, 5)
    compiled = kiln.compile(f)
    for _ in range(2):
        eager_buf, kiln_buf = torch.randn(4, 5), None
        kiln_buf = eager_buf.clone()
        v0 = kiln_buf._version
        expected = f(eager_buf, rows, v)
        got = compiled(kiln_buf, rows, v)
        assert_close(got, expected)
        assert_close(kiln_buf, eager_buf)  # the caller sees the writes
        assert kiln_buf._version > v0
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_torch_function_form():
    def f(x):
        out = torch.zeros(3, 4)
        torch.index_put_(out, (torch.tensor([0, 0, 2]),), x, accumulate=True)
        return out

    whole_graph(f, torch.randn(3, 4))


def test_wrong_dtype_still_raises_like_eager():
    def f(x):
        out = torch.zeros(3, 4, dtype=torch.float64)
        out.index_put_((torch.tensor([0, 1, 2]),), x)
        return out

    x = torch.randn(3, 4)
    with pytest.raises(RuntimeError):
        f(x)
    with pytest.raises(RuntimeError):
        kiln.compile(f)(x)


def test_scatter_on_live_view_reaches_it():
    def f(x):
        y = x * 1
        v = y[0]  # a live view of y: the update must reach it
        y.scatter_(1, torch.zeros(4, 1, dtype=torch.long), 5.0)
        return v + 0, y

    x = torch.randn(4, 3)
    assert_close(kiln.compile(f)(x), f(x))
    # v replays as y[0], so the update is written through in the graph (it
    # was a break while v's steps were a slice and a reshape)
    assert stats()["graph_breaks"] == 0


def test_gumbel_softmax_hard():
    def f(x):
        return F.gumbel_softmax(x, tau=0.5, hard=True)

    x = torch.randn(64, 10)
    compiled = kiln.compile(f)
    torch.manual_seed(0)
    r = compiled(x)
    assert ((r == 0) | (r == 1)).all() and (r.sum(-1) == 1).all()
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_randperm_is_a_permutation_and_reproducible():
    def f(x):
        perm = torch.randperm(x.shape[0])
        return x[perm], perm, torch.randperm(7, dtype=torch.int32)

    x = torch.arange(50.0)
    compiled = kiln.compile(f)
    torch.manual_seed(3)
    a, p, q = compiled(x)
    torch.manual_seed(3)
    a2, p2, q2 = compiled(x)
    a3, p3, _ = compiled(x)
    assert torch.equal(p.sort().values, torch.arange(50)) and torch.equal(a, x[p])
    assert q.dtype == torch.int32 and torch.equal(q.sort().values, torch.arange(7, dtype=torch.int32))
    assert torch.equal(p, p2) and torch.equal(q, q2) and not torch.equal(p, p3)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_multinomial_distribution_and_seed():
    def f(probs):
        return (torch.multinomial(probs, 4000, replacement=True),
                probs.multinomial(3), torch.multinomial(probs, 1).shape)

    probs = torch.tensor([[0.1, 0.0, 0.6, 0.3], [0.25, 0.25, 0.25, 0.25]])
    compiled = kiln.compile(f)
    torch.manual_seed(1)
    a, b, shape = compiled(probs)
    torch.manual_seed(1)
    a2, b2, _ = compiled(probs)
    assert torch.equal(a, a2) and torch.equal(b, b2) and shape == torch.Size([2, 1])
    freq = torch.stack([(a[0] == k).float().mean() for k in range(4)])
    assert torch.allclose(freq, probs[0], atol=0.03) and (a[0] != 1).all()
    assert all(len(set(row.tolist())) == 3 for row in b)  # without replacement
    assert (b[0] != 1).all()  # zero-probability category never drawn
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_multinomial_invalid_raises_like_eager():
    def f(probs):
        return torch.multinomial(probs, 2)  # eager's kernel checks the weights

    probs = torch.tensor([0.5, -0.5, 1.0])
    with pytest.raises(RuntimeError):
        f(probs)
    with pytest.raises(RuntimeError):
        kiln.compile(f)(probs)


def test_randperm_with_grad_replays_in_backward():
    def f(x):
        perm = torch.randperm(x.shape[0])
        return (x[perm] * torch.arange(6.0)).sum(), perm

    x = torch.randn(6, requires_grad=True)
    torch.manual_seed(5)
    loss, perm = kiln.compile(f)(x)
    loss.backward()
    expected = torch.empty(6)
    expected[perm] = torch.arange(6.0)  # d loss / d x[perm[i]] = i
    assert_close(x.grad, expected)


def test_scatter_add_of_a_src_that_requires_grad():
    def f(x, idx):
        out = torch.zeros(3, 4)
        out.scatter_add_(0, idx, x * 2)
        return out.sum(0)

    idx = torch.tensor([[0, 1, 1, 2], [1, 1, 0, 0]])
    x = torch.randn(2, 4, requires_grad=True)
    xe = x.detach().clone().requires_grad_(True)
    got = kiln.compile(f)(x, idx)
    expected = f(xe, idx)
    assert_close(got, expected)
    got.sum().backward()
    expected.sum().backward()
    assert_close(x.grad, xe.grad)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, s


def test_index_add_on_input_that_requires_grad_breaks():
    def f(w, x):
        w.index_add_(0, torch.tensor([0, 1]), x)
        return w * 2

    w = torch.randn(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError):  # a leaf that requires grad: eager raises
        f(w, torch.ones(2, 4))
    with pytest.raises(RuntimeError):
        kiln.compile(f)(w, torch.ones(2, 4))
    assert stats()["graph_breaks"] >= 1

# SPDX-License-Identifier: Apache-2.0
"""Training-mode semantics inside graphs that need gradients: BatchNorm's
batch statistics and running-stat updates, Python state mutated by the
forward (a call counter), torch.no_grad() blocks, a parameter updated under
no_grad, in-place dropout on a view. The backward recomputes the frame
eagerly (kiln._autograd): the mutations must happen once, as in eager, and
the recompute must see the state the forward saw. Each test compares with
eager and asserts kiln.stats()."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln
from conftest import assert_close, assert_compiled, stats


def whole_graph(calls=2):
    assert_compiled(1, calls, recompiles=0, eager_calls=0)


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn(self.conv(x)).relu()


@pytest.mark.parametrize("momentum", [0.1, 0.5])
def test_batchnorm_training_updates_buffers_and_grads(momentum):
    model = ConvBN()
    model.bn.momentum = momentum
    ref = copy.deepcopy(model)
    versions = [b._version for b in model.buffers()]
    ref_versions = [b._version for b in ref.buffers()]
    compiled = kiln.compile(model)
    for _ in range(2):
        x = torch.randn(2, 3, 8, 8)
        got, expected = compiled(x), ref(x)
        assert got.requires_grad and got.grad_fn is not None
        assert_close(got.detach(), expected.detach(), rtol=1e-4, atol=1e-5)
        got.sum().backward()
        expected.sum().backward()
    for b, r in zip(model.buffers(), ref.buffers()):
        assert not b.requires_grad
        assert_close(b, r, rtol=1e-5, atol=1e-6)
    assert model.bn.num_batches_tracked.item() == 2
    # Eager's kernel writes the running stats through their data (no version
    # bump); num_batches_tracked.add_(1) bumps once per call. The backward's
    # recompute leaves no trace.
    assert ([b._version - v for b, v in zip(model.buffers(), versions)]
            == [b._version - v for b, v in zip(ref.buffers(), ref_versions)])
    for p, r in zip(model.parameters(), ref.parameters()):
        assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-5)
    whole_graph()


def test_batchnorm_training_under_no_grad():
    model = ConvBN()
    ref = copy.deepcopy(model)
    compiled = kiln.compile(model)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        for _ in range(2):
            assert_close(compiled(x), ref(x), rtol=1e-4, atol=1e-5)
    for b, r in zip(model.buffers(), ref.buffers()):
        assert_close(b, r, rtol=1e-5, atol=1e-6)
    whole_graph()


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * self.calls


def test_counter_in_graph_that_needs_gradients():
    model = Counter()
    ref = copy.deepcopy(model)
    compiled = kiln.compile(model)
    x = torch.randn(3, 4)
    outs = [compiled(x), compiled(x)]
    expected = [ref(x), ref(x)]
    # Both backwards after both forwards: each recompute must see the counter
    # its forward saw (1, then 2), and leave it at 2.
    (outs[0].sum() + outs[1].sum()).backward()
    (expected[0].sum() + expected[1].sum()).backward()
    assert model.calls == ref.calls == 2
    for o, e in zip(outs, expected):
        assert_close(o.detach(), e.detach())
    assert_close(model.lin.weight.grad, ref.lin.weight.grad)
    s = stats()
    # The counter's value is used by the graph: each value is guarded (one
    # graph per value, as Dynamo specializes ints).
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


class LazyCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1  # only stored: replayed, not guarded
        return self.lin(x)


def test_lazy_counter_one_graph_and_retain_graph():
    model = LazyCounter()
    compiled = kiln.compile(model)
    x = torch.randn(3, 4)
    y = compiled(x)
    compiled(x)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert model.calls == 2
    ref = copy.deepcopy(model)
    ref.lin.weight.grad = None
    r = ref(x)
    r.sum().backward()
    assert_close(model.lin.weight.grad, 2 * ref.lin.weight.grad)
    whole_graph()


class Target(nn.Module):
    def __init__(self):
        super().__init__()
        self.online = nn.Linear(4, 4)
        self.target = nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            t = self.target(x)
        o = self.online(x)
        return o, t, (o - t).pow(2).mean()


def test_no_grad_block_in_graph_that_needs_gradients():
    model = Target()
    ref = copy.deepcopy(model)
    compiled = kiln.compile(model)
    x = torch.randn(3, 4)
    for _ in range(2):
        got, expected = compiled(x), ref(x)
        for g, e in zip(got, expected):
            assert g.requires_grad == e.requires_grad
            assert_close(g.detach(), e.detach())
        got[2].backward()
        expected[2].backward()
    assert model.target.weight.grad is None
    assert_close(model.online.weight.grad, ref.online.weight.grad)
    whole_graph()


class NoGradUpdate(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x):
        y = x + 1
        with torch.no_grad():
            self.w.mul_(0.5)
        return y * self.w


def test_parameter_updated_under_no_grad():
    model = NoGradUpdate()
    ref = copy.deepcopy(model)
    compiled = kiln.compile(model)
    x = torch.randn(3, 4, requires_grad=True)
    xr = x.detach().clone().requires_grad_()
    for _ in range(2):
        got, expected = compiled(x), ref(xr)
        assert_close(got.detach(), expected.detach())
        assert_close(model.w.detach(), ref.w.detach())
        got.sum().backward()
        expected.sum().backward()
    assert_close(model.w.grad, ref.w.grad)
    assert_close(x.grad, xr.grad)
    whole_graph()


def test_in_place_dropout_on_a_flatten_view():
    def f(x):
        h = x * 2
        h = torch.flatten(h, 1)
        return F.dropout(h, 0.5, training=True, inplace=True)

    compiled = kiln.compile(f)
    x = torch.randn(64, 4, 4, requires_grad=True)
    y = compiled(x)
    y.sum().backward()
    kept = y.detach() != 0
    assert 0.35 < kept.float().mean().item() < 0.65
    # The backward replays the forward's mask: d/dx = 2 * mask / (1 - p).
    assert_close(x.grad.flatten(1), kept.float() * 4)
    assert_close(y.detach()[kept], (x.detach() * 4).flatten(1)[kept])
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, s


class StoresGradTensor(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("last", torch.zeros(3, 4))

    def forward(self, x):
        y = self.lin(x)
        self.last.copy_(y)  # eager: the buffer now requires grad (CopyBackwards)
        return y.sum()


def test_storing_a_value_that_needs_gradients_breaks():
    model = StoresGradTensor()
    ref = copy.deepcopy(model)
    x = torch.randn(3, 4)
    got, expected = kiln.compile(model)(x), ref(x)
    assert_close(got.detach(), expected.detach())
    assert model.last.requires_grad == ref.last.requires_grad
    assert stats()["graph_breaks"] >= 1


class AppendsLog(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.log = []

    def forward(self, x):
        self.log.append(1)  # a list mutation is not undone around the recompute
        return self.lin(x)


def test_list_mutation_in_graph_that_needs_gradients_breaks():
    model = AppendsLog()
    y = kiln.compile(model)(torch.randn(3, 4))
    y.sum().backward()
    assert model.log == [1]
    assert stats()["graph_breaks"] >= 1

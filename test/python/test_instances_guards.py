# SPDX-License-Identifier: Apache-2.0
"""What instances of one module class may and may not share (issue 15,
items 8 and 9; test_instances.py has the basic sharing and lifetime cases).
Twelve instances compile once, each with its own results; anything read at
capture that differs between two instances (a LayerNorm's eps, the class
of an activation submodule, the hook set, the training flag, a class
attribute shadowed on one instance, a bias that is None, a function held as
an attribute, a plain attribute object's values, submodules in another
order) gives another entry, never the first instance's answer. The compiled backward, optimizer steps
(in-place parameter updates) and the freezing path (packed weights keyed
per tensor) stay per instance, and compiled code keeps no dropped instance
alive on any of these paths."""
import ctypes
import gc
import weakref

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln
from conftest import assert_close, stats


class Block(nn.Module):
    def __init__(self, eps=1e-5, act=None, bias=True):
        super().__init__()
        self.fc = nn.Linear(8, 8, bias=bias)
        self.norm = nn.LayerNorm(8, eps=eps)
        self.act = act if act is not None else nn.GELU()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.act(self.norm(self.fc(x)))) + x


def run(models, x, grad=False):
    """Each model through its own kiln.compile; results compared to eager."""
    outs = []
    with torch.set_grad_enabled(grad):
        for m in models:
            out = kiln.compile(m)(x)
            assert_close(out, m(x))
            outs.append(out)
    return outs


def counts():
    s = stats()
    return s["graphs_compiled"], s["recompiles"], s["eager_calls"], s["graph_breaks"]


def test_twelve_instances_compile_once():
    x = torch.randn(3, 8)
    models = [Block().eval() for _ in range(12)]
    outs = run(models, x)
    assert not torch.allclose(outs[0], outs[1])  # each instance's own weights
    assert counts() == (1, 0, 0, 0), stats()
    assert stats()["compiled_calls"] == 12, stats()


def one_hook(block):
    block.fc.register_forward_hook(lambda m, i, o: o * 2)
    return block


def other_hook(block):
    block.fc.register_forward_hook(lambda m, i, o: o - 1)
    return block


def shadowed_scale(block):
    block.scale = 3.0  # shadows the class attribute on this instance only
    return block


class Scaled(Block):
    scale = 1.0

    def forward(self, x):
        return super().forward(x) * self.scale


@pytest.mark.parametrize("make_other", [
    pytest.param(lambda: Block(eps=10.0).eval(), id="eps"),
    pytest.param(lambda: Block(act=nn.Tanh()).eval(), id="activation-class"),
    pytest.param(lambda: Block(bias=False).eval(), id="bias-none"),
    pytest.param(lambda: Block().train(), id="training-flag"),
    pytest.param(lambda: one_hook(Block().eval()), id="forward-hook"),
])
def test_what_differs_between_instances_is_guarded(make_other):
    x = torch.randn(3, 8)
    models = [Block().eval(), make_other(), Block().eval()]
    for m in models:
        m.drop.p = 0.0  # dropout's randomness is not the subject here
    run(models + [models[1]], x)
    graphs, recompiles, eager, breaks = counts()
    assert graphs == 2 and recompiles == 1 and eager == 0, stats()


def test_a_different_hook_function_is_another_entry():
    x = torch.randn(3, 8)
    a, b, c = Block().eval(), one_hook(Block().eval()), other_hook(Block().eval())
    run([a, b, c, a, b, c], x)
    graphs, recompiles, eager, _ = counts()
    assert graphs == 3 and eager == 0, stats()


def test_a_class_attribute_shadowed_on_one_instance():
    x = torch.randn(3, 8)
    a, b = Scaled().eval(), shadowed_scale(Scaled().eval())
    outs = run([a, b, a], x)
    assert not torch.allclose(outs[0], outs[1])
    assert counts()[:3] == (2, 1, 0), stats()


class Holder(nn.Module):
    """Reads a plain Python object's fields (like HF's `self.config`)."""

    def __init__(self, k, fn=F.relu):
        super().__init__()
        self.cfg = Cfg(k)
        self.fn = fn
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fn(self.fc(x)) * self.cfg.k


class Cfg:
    def __init__(self, k):
        self.k = k


def test_plain_object_attributes_and_function_attributes():
    x = torch.randn(3, 8)
    a, b, c = Holder(1.0), Holder(2.0), Holder(1.0, fn=torch.tanh)
    outs = run([a, b, c, a], x)
    assert not torch.allclose(outs[0], outs[1]) and not torch.allclose(outs[0], outs[2])
    assert stats()["eager_calls"] == 0, stats()


def test_tied_and_untied_weights_share_the_graph():
    class Tied(nn.Module):
        def __init__(self, tie):
            super().__init__()
            self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)
            if tie:
                self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    run([Tied(True), Tied(False), Tied(True)], torch.randn(3, 8))
    assert counts() == (1, 0, 0, 0), stats()


def test_training_steps_on_many_instances_share_forward_and_backward():
    # The compiled backward per instance, with SGD's in-place updates
    # between calls, against an eager twin of each instance.
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    pairs = []
    for _ in range(6):
        m = Block(act=nn.Tanh()).eval()
        twin = Block(act=nn.Tanh()).eval()
        twin.load_state_dict(m.state_dict())
        pairs.append((m, twin))
    compiled = [kiln.compile(m) for m, _ in pairs]
    for _ in range(2):
        for (m, twin), c in zip(pairs, compiled):
            for model, fn in ((m, c), (twin, twin)):
                model.zero_grad()
                F.mse_loss(fn(x), y).backward()
            for p, q in zip(m.parameters(), twin.parameters()):
                assert_close(p.grad, q.grad)
            with torch.no_grad():
                for model in (m, twin):
                    for p in model.parameters():
                        p.sub_(0.1 * p.grad)
    with torch.no_grad():
        for (m, twin), c in zip(pairs, compiled):
            assert_close(c(x), twin(x))
    # One entry for the training calls, one for the no_grad calls.
    assert counts() == (2, 1, 0, 0), stats()
    assert stats()["backward_calls"] == 12, stats()


@pytest.mark.parametrize("grad", [False, True])
def test_dropped_instances_are_collected(grad):
    x = torch.randn(3, 8)
    refs = []
    for _ in range(10):
        m = Block().eval()
        c = kiln.compile(m)
        with torch.set_grad_enabled(grad):
            out = c(x)
            if grad:
                out.sum().backward()
        refs.append(weakref.ref(m))
        del m, c, out
        gc.collect()
    assert sum(r() is not None for r in refs) == 0
    assert counts() == (1, 0, 0, 0), stats()


_LIB = ctypes.CDLL(kiln._C.__file__)
for _name in ("kilnDnnlConvCalls", "kilnDnnlWeightPacks", "kilnDnnlPackedBytes"):
    getattr(_LIB, _name).restype = ctypes.c_int64


@pytest.mark.skipif(_LIB.kilnDnnlConvCalls() < 0, reason="built without oneDNN")
def test_frozen_weights_are_packed_per_instance():
    def make():
        return nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.Conv2d(8, 4, 3, padding=1)).eval()

    x = torch.randn(1, 4, 10, 10)
    with kiln.config.patch(dnnl_convs=True, freeze_weights=True), torch.no_grad():
        models = [make() for _ in range(4)]
        for m in models:
            m[1].running_mean.normal_()
        compiled = [kiln.compile(m) for m in models]
        for _ in range(2):  # the first run learns that the graph packs weights
            for m, c in zip(models, compiled):
                assert_close(c(x), m(x), rtol=1e-4, atol=1e-4)
        packs = _LIB.kilnDnnlWeightPacks()
        for m, c in zip(models, compiled):
            assert_close(c(x), m(x), rtol=1e-4, atol=1e-4)
        assert _LIB.kilnDnnlWeightPacks() == packs  # every instance's own cached packs
        models[2][0].weight.mul_(-1)  # one instance updated in place
        models[1][1].running_var.mul_(4)  # the BN scale folded into another's packs
        for m, c in zip(models, compiled):
            assert_close(c(x), m(x), rtol=1e-4, atol=1e-4)
        assert _LIB.kilnDnnlWeightPacks() == packs + 2  # only those two repacked
        held = _LIB.kilnDnnlPackedBytes()
        ref = weakref.ref(models[3])
        del models[3], compiled[3], m, c
        gc.collect()
        assert ref() is None and _LIB.kilnDnnlPackedBytes() < held
    assert counts() == (1, 0, 0, 0), stats()


class Ordered(nn.Module):
    """A Sequential whose names are the same in every instance, added in an
    order given at construction: iteration follows `_modules`' order."""

    def __init__(self, order):
        super().__init__()
        self.seq = nn.Sequential()
        for name in order:
            self.seq.add_module(name, nn.Linear(4, 4) if name == "p" else nn.Tanh())

    def forward(self, x):
        for m in self.seq:
            x = m(x)
        return x


def test_submodules_in_another_order_do_not_share():
    x = torch.randn(2, 4)
    a, b = Ordered("pq"), Ordered("qp")
    outs = run([a, b, a, b, Ordered("pq")], x)
    assert not torch.allclose(outs[0], outs[1])
    assert counts() == (2, 1, 0, 0), stats()


def test_a_dict_of_tensors_in_another_order_recompiles():
    def f(d, x):
        for k, v in d.items():
            x = x * v if k == "m" else x + v
        return x

    compiled = kiln.compile(f)
    x = torch.randn(3)
    first = {"m": torch.tensor(2.0), "a": torch.tensor(1.0)}
    second = {"a": torch.tensor(1.0), "m": torch.tensor(2.0)}
    for d in (first, second, first):
        assert_close(compiled(d, x), f(d, x))
    assert counts() == (2, 1, 0, 0), stats()

# SPDX-License-Identifier: Apache-2.0
"""Instances of one module class share one compiled graph (issue 15, items 8
and 9): modules are guarded by type and by what the capture read from them
(parameters and buffers are graph inputs, plain attributes by value,
submodules by type), not by identity; results stay each instance's own,
structure changes recompile, in-place weight updates are seen, uses that
depend on identity (`a is b`, modules reached by a call at capture) fall
back to identity guards, and compiled code keeps no instance alive."""
import subprocess
import sys

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats


class MLP(nn.Module):
    def __init__(self, hidden=16, act=None, scale=2.0):
        super().__init__()
        self.fc1 = nn.Linear(8, hidden)
        self.act = act if act is not None else nn.ReLU()
        self.fc2 = nn.Linear(hidden, 4)
        self.register_buffer("shift", torch.randn(4))
        self.scale = scale

    def helper(self, x):
        return x + self.shift

    def forward(self, x):
        return self.helper(self.fc2(self.act(self.fc1(x)))) * self.scale


class SubMLP(MLP):
    pass


def run_instances(models, x):
    outs = []
    with torch.no_grad():
        for m in models:
            out = kiln.compile(m)(x)
            assert_close(out, m(x))
            outs.append(out)
    return outs


def test_twenty_instances_share_one_graph():
    x = torch.randn(3, 8)
    models = [MLP().eval() for _ in range(20)]
    outs = run_instances(models, x)
    # Each instance's own weights: no two results agree.
    assert not torch.allclose(outs[0], outs[1])
    s = stats()
    assert s["graphs_compiled"] == 1 and s["recompiles"] == 0, s
    assert s["compiled_calls"] == 20 and s["eager_calls"] == 0, s


def test_instances_passed_to_a_compiled_function_share_one_graph():
    def f(m, x):
        return m(x).relu() + 1

    cf = kiln.compile(f)
    x = torch.randn(3, 8)
    with torch.no_grad():
        for _ in range(12):
            m = MLP()
            assert_close(cf(m, x), f(m, x))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["recompiles"] == 0 and s["eager_calls"] == 0, s


@pytest.mark.parametrize("other", [
    lambda: MLP(hidden=32),
    lambda: MLP(act=nn.Tanh()),
    lambda: MLP(scale=3.0),
    lambda: SubMLP(),
])
def test_a_different_structure_recompiles(other):
    x = torch.randn(3, 8)
    run_instances([MLP(), other(), MLP(), other()], x)
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1, s
    assert s["compiled_calls"] == 4 and s["eager_calls"] == 0, s


def test_a_patched_instance_method_misses():
    x = torch.randn(3, 8)
    a, b = MLP(), MLP()
    b.helper = lambda y: y - 1  # shadows the class's method on this instance only
    run_instances([a, b, a], x)
    s = stats()
    assert s["graphs_compiled"] == 2 and s["compiled_calls"] == 3, s


def test_weights_updated_in_place_give_eager_results():
    x = torch.randn(3, 8)
    m = MLP()
    c = kiln.compile(m)
    with torch.no_grad():
        assert_close(c(x), m(x))
    m.fc1.weight.data.add_(0.5)
    with torch.no_grad():
        m.fc2.weight.copy_(torch.randn_like(m.fc2.weight))
        m.shift.mul_(3)
        assert_close(c(x), m(x))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["compiled_calls"] == 2, s


def test_an_optimizer_step_between_calls_is_seen():
    x, y = torch.randn(3, 8), torch.randn(3, 4)
    m = MLP()
    ref = MLP()
    ref.load_state_dict(m.state_dict())
    c = kiln.compile(m)
    opt, ref_opt = (torch.optim.SGD(p.parameters(), lr=0.1) for p in (m, ref))
    for _ in range(3):
        for model, o, fn in ((m, opt, c), (ref, ref_opt, ref)):
            o.zero_grad()
            nn.functional.mse_loss(fn(x), y).backward()
            o.step()
    with torch.no_grad():
        assert_close(c(x), ref(x))
    assert stats()["graphs_compiled"] >= 1


def test_module_double_after_compiling_raises_like_eager():
    x = torch.randn(3, 8)
    m = MLP()
    c = kiln.compile(m)
    with torch.no_grad():
        c(x)
        m.double()
        with pytest.raises(RuntimeError):
            m(x)
        with pytest.raises(RuntimeError):
            c(x)
        assert_close(c(x.double()), m(x.double()))


def test_parameter_replaced_by_another_dtype_raises_like_eager():
    x = torch.randn(3, 8)
    a, b = MLP(), MLP()
    b.fc1.weight = nn.Parameter(b.fc1.weight.detach().double())
    with torch.no_grad():
        kiln.compile(a)(x)
        with pytest.raises(RuntimeError):
            b(x)
        with pytest.raises(RuntimeError):
            kiln.compile(b)(x)


class Children(nn.Module):
    """Reaches its submodules through a call at capture (children())."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        for m in self.children():
            x = m(x)
        return x


class Shared(nn.Module):
    """Branches on module identity."""

    def __init__(self, share):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = self.a if share else nn.Linear(4, 4)

    def forward(self, x):
        return self.a(x) * 2 if self.a is self.b else self.b(self.a(x))


def test_modules_reached_through_a_call_keep_per_instance_results():
    x = torch.randn(2, 4)
    run_instances([Children(), Children(), Children()], x)
    s = stats()
    assert s["compiled_calls"] == 3 and s["eager_calls"] == 0, s


def test_identity_comparison_of_modules_is_guarded():
    x = torch.randn(2, 4)
    run_instances([Shared(True), Shared(False), Shared(True), Shared(False)], x)
    s = stats()
    assert s["compiled_calls"] == 4 and s["eager_calls"] == 0, s


def test_len_of_module_list_shares_the_graph():
    class Stack(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(n))

        def forward(self, x):
            for i in range(len(self.layers)):
                x = self.layers[i](x)
            return x

    x = torch.randn(2, 4)
    run_instances([Stack(2), Stack(2), Stack(3), Stack(2)], x)
    s = stats()
    assert s["graphs_compiled"] == 2 and s["compiled_calls"] == 4, s


def test_two_torchvision_resnet18_instances_share_one_graph():
    torchvision = pytest.importorskip("torchvision")
    x = torch.randn(1, 3, 32, 32)
    models = [torchvision.models.resnet18().eval() for _ in range(2)]
    run_instances(models, x)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["recompiles"] == 0 and s["eager_calls"] == 0, s


def test_dropped_instances_are_freed_and_share_one_entry():
    # In a subprocess: a leak would keep memory for the rest of the session.
    code = r"""
import gc, resource, weakref, torch, kiln
from torch import nn

class Big(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(1024, 1024)
        self.fc2 = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20

refs, rss = [], []
x = torch.randn(2, 1024)
with torch.no_grad():
    for i in range(12):
        m = Big()
        c = kiln.compile(m)
        torch.testing.assert_close(c(x), m(x))
        refs.append(weakref.ref(m))
        del m, c
        gc.collect()
        rss.append(rss_mib())
alive = sum(r() is not None for r in refs)
s = kiln.stats()
assert alive == 0, alive
assert s["graphs_compiled"] == 1 and s["recompiles"] == 0 and s["eager_calls"] == 0, s
# Each instance holds 8 MiB of weights: RSS must not grow with the count.
assert rss[-1] - rss[3] < 16, rss
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]


def test_an_entry_pinned_to_a_dead_module_is_dropped():
    x = torch.randn(2, 4)
    with torch.no_grad():
        for _ in range(12):  # each pins identity (`is`), more than the recompile limit
            m = Shared(True)
            assert_close(kiln.compile(m)(x), m(x))
            del m
    s = stats()
    assert s["compiled_calls"] == 12 and s["eager_calls"] == 0, s


class Sliced(nn.Module):
    """`for layer in self.layers[:n]` (HF LLaMA's decoder loop) and a
    Sequential slice called as a module (timm/torchvision feature stages)."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))

    def forward(self, x):
        for layer in self.layers[: self.n]:
            x = layer(x)
        return self.seq[1:](x) + len(self.layers[1:])


def test_slices_of_module_containers_are_one_graph_and_read_per_call():
    # A slice is a new container per call: read again through its source,
    # not held (weakly) as the temporary of the capture, which dies.
    m, x = Sliced(2), torch.randn(2, 4)
    compiled = kiln.compile(m)
    with torch.no_grad():
        for _ in range(2):
            assert_close(compiled(x), m(x))
        assert stats()["graphs_compiled"] == 1 and stats()["graph_breaks"] == 0, stats()
        assert stats()["eager_calls"] == 0 and stats()["recompiles"] == 0, stats()
        m.layers[1] = nn.Linear(4, 4)  # a layer inside the slice replaced
        m.seq[2] = nn.Linear(4, 4)
        assert_close(compiled(x), m(x))
        m.layers[0] = nn.Sequential(nn.Linear(4, 4), nn.Tanh())  # structure changed
        assert_close(compiled(x), m(x))
        m.n = 3
        assert_close(compiled(x), m(x))
    assert stats()["graph_breaks"] == 0 and stats()["eager_calls"] == 0, stats()

# SPDX-License-Identifier: Apache-2.0
"""Python control flow: resolved at capture time, guarded, recompiled."""
import torch
from torch import nn

import kiln
from conftest import assert_close, assert_compiled, stats

USE_TANH = True  # a module-level constant read by a compiled function


def branch_on_global(x):
    if USE_TANH:
        return torch.tanh(x)
    return torch.sigmoid(x)


def test_branch_on_python_constant_global():
    global USE_TANH
    x = torch.randn(4, 4)
    f = kiln.compile(branch_on_global)
    assert_close(f(x), torch.tanh(x))
    assert_close(f(x), torch.tanh(x))
    assert_compiled(graphs=1, calls=2)
    USE_TANH = False
    try:
        # The global is guarded: changing it recompiles and takes the other branch.
        assert_close(f(x), torch.sigmoid(x))
    finally:
        USE_TANH = True
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1 and s["compiled_calls"] == 3


def act(x, kind, scale=1.0):
    if kind == "relu":
        y = torch.relu(x)
    elif kind == "gelu":
        y = torch.nn.functional.gelu(x)
    else:
        y = x
    if scale != 1.0:
        y = y * scale
    return y


def test_flag_argument_recompiles_once_per_value():
    f = kiln.compile(act)
    x = torch.randn(3, 5)
    kinds = ["relu", "gelu", "none"]
    for _ in range(3):
        for k in kinds:
            assert_close(f(x, k), act(x, k))
    s = stats()
    assert s["graphs_compiled"] == 3, s
    assert s["recompiles"] == 2, s
    assert s["compiled_calls"] == 9 and s["cache_hits"] == 6, s
    assert s["graph_breaks"] == 0, s


def test_bool_flag_and_float_argument():
    f = kiln.compile(act)
    x = torch.randn(6)
    assert_close(f(x, "relu", 2.0), act(x, "relu", 2.0))
    assert_close(f(x, "relu", 3.0), act(x, "relu", 3.0))  # float value is guarded
    assert_close(f(x, "relu", 2.0), act(x, "relu", 2.0))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["cache_hits"] == 1 and s["compiled_calls"] == 3


def test_shape_change_recompiles_exactly_once():
    def f(x, w):
        return torch.relu(x @ w).sum(-1)

    cf = kiln.compile(f)
    w = torch.randn(8, 3)
    a, b = torch.randn(4, 8), torch.randn(9, 8)
    assert_close(cf(a, w), f(a, w))
    assert_close(cf(b, w), f(b, w))
    s = stats()
    assert s["recompiles"] == 1 and s["graphs_compiled"] == 2, s
    for _ in range(2):
        assert_close(cf(a, w), f(a, w))
        assert_close(cf(b, w), f(b, w))
    s = stats()
    assert s["recompiles"] == 1 and s["graphs_compiled"] == 2, s
    assert s["cache_hits"] == 4 and s["compiled_calls"] == 6, s


class TrainAware(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        y = self.lin(x)
        if self.training:
            return y * 0.5
        return y + 1.0


def test_if_self_training():
    model = TrainAware()
    compiled = kiln.compile(model)
    x = torch.randn(2, 6)
    with torch.no_grad():
        model.eval()
        assert_close(compiled(x), model(x))
        model.train()
        assert_close(compiled(x), model(x))
        model.eval()
        assert_close(compiled(x), model(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1 and s["cache_hits"] == 1, s


def loop_range(x, n):
    for i in range(n):
        x = x * 0.9 + i
    return x


def test_loop_over_range_unrolled():
    f = kiln.compile(loop_range)
    x = torch.randn(5)
    assert_close(f(x, 4), loop_range(x, 4))
    assert_compiled(graphs=1, calls=1)
    assert_close(f(x, 2), loop_range(x, 2))  # trip count is guarded
    assert stats()["graphs_compiled"] == 2


def loop_list(x, scales):
    outs = []
    for s in scales:
        outs.append(x * s)
    total = outs[0]
    for o in outs[1:]:
        total = total + o
    return total, len(outs)


def test_loop_over_list_and_enumerate_zip():
    def f(x, ws):
        acc = x
        for i, w in enumerate(ws):
            acc = acc + w * (i + 1)
        for a, b in zip(ws, ws[1:]):
            acc = acc - a * b
        return acc

    x = torch.randn(3)
    ws = [torch.randn(3) for _ in range(3)]
    assert_close(kiln.compile(f)(x, ws), f(x, ws))
    assert_compiled(graphs=1, calls=1)


def test_loop_over_python_list_of_floats():
    f = kiln.compile(loop_list)
    x = torch.randn(4)
    got = f(x, [0.5, 2.0, -1.0])
    assert_close(got, loop_list(x, [0.5, 2.0, -1.0]))
    assert_compiled(graphs=1, calls=1)


class Stack(nn.Module):
    def __init__(self, depth, dim):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(dim, 2))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = torch.tanh(layer(x)) + (x if i % 2 else 0.0)
        for m in self.head:
            x = m(x)
        return x


def test_loop_over_modulelist_and_sequential():
    model = Stack(4, 10).eval()
    compiled = kiln.compile(model)
    x = torch.randn(3, 10)
    with torch.no_grad():
        assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
        assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert_compiled(graphs=1, calls=2)


def test_none_default_branch():
    def f(x, bias=None):
        y = x * 2
        if bias is not None:
            y = y + bias
        return y

    cf = kiln.compile(f)
    x, b = torch.randn(3), torch.randn(3)
    assert_close(cf(x), f(x))
    assert_close(cf(x, b), f(x, b))
    assert_close(cf(x), f(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["cache_hits"] == 1 and s["graph_breaks"] == 0, s


def test_branch_on_static_shape():
    def f(x):
        if x.shape[0] > 2 and x.dim() == 2:
            return x.sum(0)
        return x.sum(-1)

    cf = kiln.compile(f)
    a, b = torch.randn(4, 3), torch.randn(2, 3)
    assert_close(cf(a), f(a))
    assert_close(cf(b), f(b))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["compiled_calls"] == 2 and s["recompiles"] == 1, s


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(6, 3) for _ in range(4)])

    def forward(self, x):
        outs = [torch.relu(h(x)) for h in self.heads]
        return sum(outs[1:], outs[0]), outs[-1]


def test_list_comprehension_over_modulelist():
    model = MultiHead().eval()
    compiled = kiln.compile(model)
    x = torch.randn(2, 6)
    with torch.no_grad():
        assert_close(compiled(x), model(x))
        del model.heads[3]  # one head fewer: the guard on the child count fails
        assert_close(compiled(x), model(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1 and s["graph_breaks"] == 0, s

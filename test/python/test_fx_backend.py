# SPDX-License-Identifier: Apache-2.0
"""torch.fx entry points: torch.compile(m, backend=kiln.backend) and
kiln.from_fx(graph_module) run the GraphModule's forward through kiln; a
graph kiln cannot capture runs eagerly (correct, logged)."""
import operator

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats

LOG_BREAKS = dict(logs=frozenset({"graph_breaks"}))


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class FFN(nn.Module):
    """Pre-norm transformer feed-forward block with a residual."""

    def __init__(self, d=16, hidden=64):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.ln(x))))


@pytest.mark.parametrize("model_cls,shape", [(MLP, (4, 16)), (FFN, (2, 5, 16))])
def test_torch_compile_backend_matches_eager(model_cls, shape):
    m = model_cls().eval()
    c = torch.compile(m, backend=kiln.backend)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(shape)
            assert_close(c(x), m(x))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["compiled_calls"] == 3, s
    assert s["graph_breaks"] == 0 and s["cache_hits"] == 2, s


def test_torch_compile_backend_grad_mode():
    # Dynamo passes the parameters as graph inputs (requires_grad): the call
    # runs compiled, and gradients are eager's.
    m = FFN()
    c = torch.compile(m, backend=kiln.backend)
    x = torch.randn(3, 16)
    before = stats()["compiled_calls"]
    y = c(x)
    assert stats()["compiled_calls"] == before + 1
    assert_close(y, m(x).detach())
    y.sum().backward()
    got = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m(x).sum().backward()
    for g, p in zip(got, m.parameters()):
        assert_close(g, p.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("model_cls,shape", [(MLP, (4, 16)), (FFN, (2, 5, 16))])
def test_from_fx_symbolic_trace(model_cls, shape):
    m = model_cls().eval()
    gm = torch.fx.symbolic_trace(m)
    f = kiln.from_fx(gm)
    with torch.no_grad():
        x = torch.randn(shape)
        assert_close(f(x), m(x))
        assert_close(f(x), m(x))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["compiled_calls"] == 2 and s["graph_breaks"] == 0, s


def test_from_fx_rejects_non_graph_module():
    with pytest.raises(TypeError, match="GraphModule"):
        kiln.from_fx(MLP())


def with_operators(a, b):
    return operator.truediv(operator.sub(a, b), operator.add(2, 3)), \
        operator.neg(operator.matmul(a, operator.mul(b, 2.0).t()))


def test_operator_functions_are_mapped():
    a, b = torch.randn(3, 3), torch.randn(3, 3)
    assert_close(kiln.compile(with_operators)(a, b), with_operators(a, b))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["compiled_calls"] == 1 and s["graph_breaks"] == 0, s


class WithLogcumsumexp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.logcumsumexp(self.fc(x), dim=-1) * 2


def test_unmapped_op_in_graph_module_runs_through_torch_in_the_graph(capfd):
    m = WithLogcumsumexp().eval()
    c = torch.compile(m, backend=kiln.backend)
    with torch.no_grad(), kiln.config.patch(logs=frozenset({"fallbacks"})):
        for _ in range(2):
            x = torch.randn(4, 8)
            assert_close(c(x), m(x))
    _, err = capfd.readouterr()
    assert "torch.logcumsumexp runs through torch" in err
    s = stats()
    # Per-op fallback: the GraphModule's forward is one graph; the unmapped
    # op runs through torch inside it, once per call.
    assert s["graph_breaks"] == 0 and s["graphs_compiled"] == 1, s
    assert s["fallback_ops"] == 1 and s["fallback_calls"] == 2, s
    assert s["compiled_calls"] == 2 and s["eager_calls"] == 0, s
    # from_fx falls back the same way.
    f = kiln.from_fx(torch.fx.symbolic_trace(m))
    with torch.no_grad():
        x = torch.randn(4, 8)
        assert_close(f(x), m(x))

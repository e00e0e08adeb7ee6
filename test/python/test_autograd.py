# SPDX-License-Identifier: Apache-2.0
"""Training-mode calls: compiled forward, gradients identical to eager's."""
import copy

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats


def make_mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 16), nn.Tanh(),
                         nn.LayerNorm(16), nn.Linear(16, 3))


def grads(model):
    return [p.grad.clone() for p in model.parameters()]


def test_mlp_backward_matches_eager():
    model = make_mlp().train()
    ref = copy.deepcopy(model)
    compiled = kiln.compile(model)
    x = torch.randn(5, 8)
    target = torch.randn(5, 3)

    loss = ((compiled(x) - target) ** 2).mean()
    loss.backward()
    ref_loss = ((ref(x) - target) ** 2).mean()
    ref_loss.backward()

    assert_close(loss, ref_loss)
    for g, rg in zip(grads(model), grads(ref)):
        assert_close(g, rg)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["compiled_calls"] == 1 and s["graph_breaks"] == 0, s


def test_input_gradient_matches_eager():
    model = make_mlp().train()
    ref = copy.deepcopy(model)
    compiled = kiln.compile(model)
    x = torch.randn(4, 8, requires_grad=True)
    xr = x.detach().clone().requires_grad_(True)

    out = compiled(x)
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    ref(xr).sum().backward()
    assert_close(x.grad, xr.grad)
    for g, rg in zip(grads(model), grads(ref)):
        assert_close(g, rg)
    assert stats()["compiled_calls"] == 1


def test_training_loop_steps_match_eager():
    model = make_mlp().train()
    ref = copy.deepcopy(model)
    compiled = kiln.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    x, target = torch.randn(6, 8), torch.randn(6, 3)
    for _ in range(3):
        for m, o in ((compiled, opt), (ref, ref_opt)):
            o.zero_grad()
            ((m(x) - target) ** 2).mean().backward()
            o.step()
    for p, rp in zip(model.parameters(), ref.parameters()):
        assert_close(p, rp, rtol=1e-4, atol=1e-5)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["compiled_calls"] == 3 and s["cache_hits"] == 2, s


def test_function_gradients_of_inputs():
    def f(x, w):
        return torch.softmax(x @ w, -1).sum(0), (x * 2).mean()

    cf = kiln.compile(f)
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 5, requires_grad=True)
    a, b = cf(x, w)
    (a * torch.arange(5.0)).sum().backward(retain_graph=True)
    b.backward()
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    a2, b2 = f(x2, w2)
    (a2 * torch.arange(5.0)).sum().backward()
    b2.backward()
    assert_close(a, a2)
    assert_close(x.grad, x2.grad)
    assert_close(w.grad, w2.grad)
    assert stats()["compiled_calls"] == 1


def test_no_grad_path_has_no_graph():
    model = make_mlp()
    compiled = kiln.compile(model)
    x = torch.randn(2, 8)
    with torch.no_grad():
        out = compiled(x)
        expected = model(x)
    assert not out.requires_grad and out.grad_fn is None
    assert_close(out, expected)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["compiled_calls"] == 1, s


def test_grad_mode_switch_recompiles():
    model = make_mlp().eval()
    compiled = kiln.compile(model)
    x = torch.randn(2, 8)
    with torch.no_grad():
        assert_close(compiled(x), model(x))
    out = compiled(x)
    assert out.requires_grad
    with torch.no_grad():
        assert_close(compiled(x), model(x))
    out2 = compiled(x)
    assert out2.requires_grad
    assert_close(out2.detach(), model(x).detach())
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1 and s["cache_hits"] == 2, s


def test_no_requires_grad_inputs_under_grad_mode():
    def f(x, y):
        return x * y + 1

    cf = kiln.compile(f)
    x, y = torch.randn(3), torch.randn(3)
    out = cf(x, y)
    assert not out.requires_grad
    assert_close(out, f(x, y))
    assert stats()["compiled_calls"] == 1


def test_integer_outputs_do_not_require_grad():
    def f(x):
        return x * 2, x > 0

    cf = kiln.compile(f)
    x = torch.randn(4, requires_grad=True)
    a, m = cf(x)
    assert a.requires_grad and not m.requires_grad and m.dtype == torch.bool
    a.sum().backward()
    assert_close(x.grad, torch.full((4,), 2.0))
    assert stats()["compiled_calls"] == 1


def test_same_tensor_passed_twice_gradient():
    def f(a, b):
        return (a * b).sum()

    x = torch.randn(3, requires_grad=True)
    kiln.compile(f)(x, x).backward()
    assert_close(x.grad, 2 * x.detach())
    assert stats()["compiled_calls"] == 1


class Tied(nn.Module):
    def __init__(self, dim=5):
        super().__init__()
        self.a = nn.Linear(dim, dim)
        self.b = nn.Linear(dim, dim)
        self.b.weight = self.a.weight  # tied: one Parameter, two module paths

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


def test_tied_weights_gradient():
    model = Tied()
    ref = copy.deepcopy(model)
    assert ref.a.weight is ref.b.weight
    x = torch.randn(3, 5)
    kiln.compile(model)(x).pow(2).sum().backward()
    ref(x).pow(2).sum().backward()
    for p, rp in zip(model.parameters(), ref.parameters()):
        assert_close(p.grad, rp.grad)
    assert stats()["compiled_calls"] == 1


def test_varargs_function_backward():
    def f(*xs):
        return torch.tanh(xs[0] * xs[1]).sum()

    x = torch.randn(4, requires_grad=True)
    y = torch.randn(4)
    kiln.compile(f)(x, y).backward()
    xr = x.detach().clone().requires_grad_(True)
    f(xr, y).backward()
    assert_close(x.grad, xr.grad)
    assert stats()["compiled_calls"] == 1


def test_gradients_with_input_constant_and_nested_results():
    def f(x, w):
        return x, 3, (x * w, [torch.exp(x)])

    x = torch.randn(4, requires_grad=True)
    w = torch.randn(4)
    same, three, (p, [q]) = kiln.compile(f)(x, w)
    assert same is x and three == 3
    (p.sum() + 2 * q.sum()).backward()
    assert_close(x.grad, w + 2 * torch.exp(x.detach()))
    s = stats()
    assert s["compiled_calls"] == 1 and s["graph_breaks"] == 0, s


def test_double_backward():
    def f(x, w):
        return (torch.tanh(x * w) ** 2).sum()

    x = torch.randn(5, requires_grad=True)
    w = torch.randn(5)
    (g,) = torch.autograd.grad(kiln.compile(f)(x, w), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    xr = x.detach().clone().requires_grad_(True)
    (gr,) = torch.autograd.grad(f(xr, w), xr, create_graph=True)
    (hr,) = torch.autograd.grad(gr.sum(), xr)
    assert_close(g, gr)
    assert_close(h, hr)
    assert stats()["compiled_calls"] == 1


def test_input_modified_before_backward_raises_like_eager():
    def f(x, w):
        return (x * w).sum()

    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    y = f(x, w)
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    y = kiln.compile(f)(x, w)
    assert stats()["compiled_calls"] == 1
    x.add_(1.0)  # the recompute would see the new values: must not give wrong grads
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_dict_output_gradients():
    def f(x, w):
        return {"p": x * w, "q": (x + w).sum()}

    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    out = kiln.compile(f)(x, w)
    (out["p"].sum() + 3 * out["q"]).backward()
    assert_close(w.grad, x + 3)
    assert stats()["compiled_calls"] == 1


def test_view_of_input_output_gradient():
    def f(x):
        return x.t().reshape(-1), (x * 2).sum()

    x = torch.randn(2, 3, requires_grad=True)
    v, s = kiln.compile(f)(x)
    (v * torch.arange(6.0)).sum().backward(retain_graph=True)
    s.backward()
    xr = x.detach().clone().requires_grad_(True)
    vr, sr = f(xr)
    (vr * torch.arange(6.0)).sum().backward(retain_graph=True)
    sr.backward()
    assert_close(x.grad, xr.grad)
    assert stats()["compiled_calls"] == 1


def _set_requires_grad(x, w):
    x.requires_grad_()
    return torch.tanh(x * w).sum()


def _clear_requires_grad(x, w):
    x.requires_grad_(False)
    return torch.tanh(x * w).sum()


def _input_gradient(x, w):
    x = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(torch.tanh(x * w).sum(), x)
    return g


@pytest.mark.parametrize("fn,grad_in", [(_set_requires_grad, False), (_clear_requires_grad, True),
                                        (_input_gradient, False)])
def test_requires_grad_set_inside_compiled_code_matches_eager(fn, grad_in):
    """`x.requires_grad_()` ran as a per-op fallback view (a gather of x) and
    the flag was dropped: the result had no gradient and x kept its old
    requires_grad. It breaks the graph now (the rest runs in a new frame)."""
    w = torch.randn(5)
    x_eager = torch.randn(5, requires_grad=grad_in)
    x_kiln = x_eager.detach().clone().requires_grad_(grad_in)
    want = fn(x_eager, w)
    got = kiln.compile(fn)(x_kiln, w)
    assert_close(got, want)
    assert got.requires_grad == want.requires_grad
    assert x_kiln.requires_grad == x_eager.requires_grad
    if want.requires_grad:
        want.backward()
        got.backward()
        assert_close(x_kiln.grad, x_eager.grad)
    assert stats()["graph_breaks"] >= 1


@pytest.mark.parametrize("linear", [False, True])
def test_gradient_of_a_product_over_zero_columns(linear):
    # K == 0: the weight's gradient flattened the rows as numel / K (SIGFPE).
    a = torch.randn(2, 0)
    w = torch.randn(3, 0) if linear else torch.randn(0, 3)
    f = (lambda a, w: torch.nn.functional.linear(a, w)) if linear else (lambda a, w: a @ w)
    we, wk = w.clone().requires_grad_(), w.clone().requires_grad_()
    f(a, we).sum().backward()
    out = kiln.compile(f)(a, wk)
    out.sum().backward()
    torch.testing.assert_close(out, torch.zeros(2, 3))
    assert wk.grad.shape == we.grad.shape

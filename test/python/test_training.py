# SPDX-License-Identifier: Apache-2.0
"""Compiled backward (kiln-autodiff): gradients of training steps match eager,
and kiln.stats() proves the backward ran compiled (``backward_calls``), not
the eager recompute (``eager_backwards`` counts graphs that keep it)."""
import copy

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats


def assert_compiled_backward(graphs=1, backward_calls=None):
    s = stats()
    assert s["compiled_backwards"] == graphs and s["eager_backwards"] == 0, s
    assert s["backward_calls"] >= 1 if backward_calls is None else \
        s["backward_calls"] == backward_calls, s
    return s


def make_mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 16), nn.Tanh(),
                         nn.LayerNorm(16), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3),
                         nn.Sigmoid())


def step(model, x, target):
    loss = ((model(x) - target) ** 2).mean()
    loss.backward()
    return loss


def assert_same_grads(model, ref, rtol=None, atol=None):
    for (name, p), rp in zip(model.named_parameters(), ref.parameters()):
        assert (p.grad is None) == (rp.grad is None), name
        if p.grad is not None:
            assert_close(p.grad, rp.grad, rtol, atol)


def test_mlp_parameter_and_input_gradients():
    model = make_mlp().train()
    ref = copy.deepcopy(model)
    x = torch.randn(6, 8, requires_grad=True)
    xr = x.detach().clone().requires_grad_(True)
    target = torch.randn(6, 3)
    loss = step(kiln.compile(model), x, target)
    ref_loss = step(ref, xr, target)
    assert_close(loss, ref_loss)
    assert_close(x.grad, xr.grad)
    assert_same_grads(model, ref)
    assert_compiled_backward(backward_calls=1)


def test_gradient_accumulation_over_two_steps():
    model = make_mlp().train()
    ref = copy.deepcopy(model)
    compiled = kiln.compile(model)
    for _ in range(2):
        x, target = torch.randn(6, 8), torch.randn(6, 3)
        step(compiled, x, target)
        step(ref, x, target)
    assert_same_grads(model, ref)
    assert_compiled_backward(backward_calls=2)


def test_retain_graph_and_autograd_grad():
    model = make_mlp().train()
    ref = copy.deepcopy(model)
    x = torch.randn(6, 8, requires_grad=True)
    out = kiln.compile(model)(x).sum()
    ref_out = ref(x).sum()
    got = torch.autograd.grad(out, [x, *model.parameters()], retain_graph=True)
    want = torch.autograd.grad(ref_out, [x, *ref.parameters()], retain_graph=True)
    assert_close(list(got), list(want))
    out.backward()  # the saved tensors are still there
    ref_out.backward()
    assert_same_grads(model, ref)
    assert_compiled_backward(backward_calls=2)


def test_transformer_encoder_layer_gradients():
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0,
                                       batch_first=True).train()
    ref = copy.deepcopy(layer)
    x = torch.randn(2, 10, 32, requires_grad=True)
    xr = x.detach().clone().requires_grad_(True)
    target = torch.randn(2, 10, 32)
    loss = step(kiln.compile(layer), x, target)
    ref_loss = step(ref, xr, target)
    assert_close(loss, ref_loss)
    assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-5)
    assert_same_grads(layer, ref, rtol=1e-4, atol=1e-5)
    assert_compiled_backward(backward_calls=1)


def test_bert_model_gradients():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=32, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    model = transformers.BertModel(config).train()
    ref = copy.deepcopy(model)
    ids = torch.randint(0, 64, (2, 12))
    loss = kiln.compile(model)(ids).last_hidden_state.square().mean()
    loss.backward()
    ref_loss = ref(ids).last_hidden_state.square().mean()
    ref_loss.backward()
    assert_close(loss, ref_loss)
    assert_same_grads(model, ref, rtol=1e-3, atol=1e-5)
    assert stats()["backward_calls"] >= 1, stats()


def test_saved_tensor_modified_in_place_raises_like_eager():
    def f(x, w):
        return torch.tanh(x @ w)

    x, w = torch.randn(4, 5), torch.randn(5, 3, requires_grad=True)
    y = kiln.compile(f)(x, w)
    x.add_(1.0)  # matmul saved x for w's gradient
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_op_without_rule_keeps_the_eager_backward():
    def f(x):
        return torch.amax(x, dim=1) * 2.0  # kiln.max has no gradient rule

    x = torch.randn(4, 6, requires_grad=True)
    xr = x.detach().clone().requires_grad_(True)
    kiln.compile(f)(x).sum().backward()
    f(xr).sum().backward()
    assert_close(x.grad, xr.grad)
    s = stats()
    assert s["eager_backwards"] == 1 and s["compiled_backwards"] == 0, s
    assert s["backward_calls"] == 0, s


def test_config_flag_selects_the_eager_backward():
    model = make_mlp().train()
    ref = copy.deepcopy(model)
    x, target = torch.randn(6, 8), torch.randn(6, 3)
    with kiln.config.patch(compiled_backward=False):
        step(kiln.compile(model), x, target)
    step(ref, x, target)
    assert_same_grads(model, ref)
    s = stats()
    assert s["eager_backwards"] == 1 and s["backward_calls"] == 0, s


def test_create_graph_double_backward_matches_eager():
    def f(x):
        return (torch.tanh(x) * x).sum()

    x = torch.randn(5, requires_grad=True)
    (g,) = torch.autograd.grad(kiln.compile(f)(x), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    xr = x.detach().clone().requires_grad_(True)
    (rg,) = torch.autograd.grad(f(xr), xr, create_graph=True)
    (rgg,) = torch.autograd.grad(rg.sum(), xr)
    assert_close(g.detach(), rg.detach())
    assert_close(gg, rgg)


def test_no_grad_region_stops_gradients():
    def f(x, w):
        with torch.no_grad():
            m = (x @ w).mean()
        return torch.tanh(x @ w - m)

    x, w = torch.randn(4, 5), torch.randn(5, 3, requires_grad=True)
    wr = w.detach().clone().requires_grad_(True)
    kiln.compile(f)(x, w).sum().backward()
    f(x, wr).sum().backward()
    assert_close(w.grad, wr.grad)
    assert_compiled_backward(backward_calls=1)


def _unary(op):
    return lambda x: op(x)


# One float64 function per op with a gradient rule, through the torch call
# kiln captures as that op; inputs kept where the op is smooth.
GRADCHECK_CASES = {
    "add": (lambda a, b: a + b, [(3, 4), (4,)]),
    "sub": (lambda a, b: a - b, [(3, 4), (3, 1)]),
    "mul": (lambda a, b: a * b, [(3, 4), (4,)]),
    "div": (lambda a, b: a / (b.abs() + 1.0), [(3, 4), (3, 4)]),
    "neg": (_unary(torch.neg), [(3, 4)]),
    "pow": (lambda a: (a.abs() + 0.5) ** 3, [(3, 4)]),
    "pow_exponent": (lambda a, b: (a.abs() + 0.5) ** b, [(3, 4), (4,)]),
    "exp2": (_unary(torch.exp2), [(3, 4)]),
    "matmul": (lambda a, b: torch.matmul(a, b), [(2, 3, 4), (4, 5)]),
    "broadcast_to": (lambda a: a.expand(3, 2, 4) * 1.0, [(2, 1)]),
    "reshape": (lambda a: a.reshape(6, 2) * 2.0, [(3, 4)]),
    "permute": (lambda a: a.permute(2, 0, 1) * 2.0, [(2, 3, 4)]),
    "slice": (lambda a: a[1:3, :2] * 2.0, [(4, 5)]),
    "concat": (lambda a, b: torch.cat([a, b], dim=1) * 2.0, [(3, 2), (3, 4)]),
    "sum": (lambda a: a.sum(dim=1), [(3, 4)]),
    "mean": (lambda a: a.mean(dim=(0, 2), keepdim=True), [(3, 4, 2)]),
    "exp": (_unary(torch.exp), [(3, 4)]),
    "log": (lambda a: torch.log(a.abs() + 0.5), [(3, 4)]),
    "tanh": (_unary(torch.tanh), [(3, 4)]),
    "sigmoid": (_unary(torch.sigmoid), [(3, 4)]),
    "relu": (_unary(torch.relu), [(3, 4)]),
    "gelu": (_unary(nn.functional.gelu), [(3, 4)]),
    "gelu_tanh": (lambda a: nn.functional.gelu(a, approximate="tanh"), [(3, 4)]),
    "silu": (_unary(nn.functional.silu), [(3, 4)]),
    "sqrt": (lambda a: torch.sqrt(a.abs() + 0.5), [(3, 4)]),
    "rsqrt": (lambda a: torch.rsqrt(a.abs() + 0.5), [(3, 4)]),
    "sin": (_unary(torch.sin), [(3, 4)]),
    "cos": (_unary(torch.cos), [(3, 4)]),
    "erf": (_unary(torch.erf), [(3, 4)]),
    "softmax": (lambda a: torch.softmax(a, dim=1), [(3, 4)]),
    "layer_norm": (lambda a, w, b: nn.functional.layer_norm(a, (4,), w, b), [(3, 4), (4,), (4,)]),
    "where": (lambda a, b: torch.where(a > 0, a, b), [(3, 4), (4,)]),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK_CASES))
def test_gradcheck_float64(name):
    fn, shapes = GRADCHECK_CASES[name]
    inputs = [torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in shapes]
    assert torch.autograd.gradcheck(kiln.compile(fn), inputs, eps=1e-6, atol=1e-5, rtol=1e-4)
    assert_compiled_backward()


def test_pow_exponent_gradient_masks_zero_bases_like_eager():
    """d/db a^b = a^b log(a), which torch sets to 0 where a == 0 and b >= 0
    (not -inf * 0 = NaN); a negative b at a zero base gives -inf there."""
    a = torch.tensor([0.0, 0.0, 0.0, 2.0, 0.5], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([2.0, 0.0, -1.0, 0.5, -2.0], dtype=torch.float64, requires_grad=True)
    want = torch.autograd.grad(torch.pow(a, b).sum(), (a, b))
    got = torch.autograd.grad(kiln.compile(lambda a, b: torch.pow(a, b) * 1)(a, b).sum(), (a, b))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, equal_nan=True)
    assert_compiled_backward()


def test_cast_gradient_is_cast_back():
    def f(x):
        return (x.double() * 3.0).sum()

    x = torch.randn(4, requires_grad=True)
    kiln.compile(f)(x).backward()
    assert x.grad.dtype == torch.float32
    assert_close(x.grad, torch.full((4,), 3.0))
    assert_compiled_backward()


def test_gradcheck_embedding():
    weight = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    ids = torch.tensor([[0, 3, 3], [6, 1, 0]])
    fn = kiln.compile(lambda w: nn.functional.embedding(ids, w))
    assert torch.autograd.gradcheck(fn, (weight,))
    assert_compiled_backward()


def test_graph_break_in_one_loss():
    lin1, lin2 = nn.Linear(6, 6), nn.Linear(6, 3)

    def f(x):
        h = torch.tanh(lin1(x))
        if h.sum() > 0:  # data-dependent: a graph break, two compiled regions
            h = h * 2.0
        return lin2(h).softmax(dim=-1)

    x = torch.randn(4, 6, requires_grad=True)
    xr = x.detach().clone().requires_grad_(True)
    kiln.compile(f)(x).square().sum().backward()
    got = [x.grad] + [p.grad.clone() for p in (*lin1.parameters(), *lin2.parameters())]
    for p in (*lin1.parameters(), *lin2.parameters()):
        p.grad = None
    f(xr).square().sum().backward()
    want = [xr.grad] + [p.grad for p in (*lin1.parameters(), *lin2.parameters())]
    assert_close(got, want)
    s = stats()
    assert s["graph_breaks"] >= 1 and s["backward_calls"] >= 2, s


def test_dropout_masks_agree_with_the_eager_backward_path():
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3)).train()
    x = torch.randn(16, 8)
    grads = []
    for compiled_backward in (True, False):
        kiln.reset()
        model.zero_grad(set_to_none=True)
        with kiln.config.patch(compiled_backward=compiled_backward):
            torch.manual_seed(1)
            kiln.compile(model)(x).square().mean().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        if compiled_backward:
            assert_compiled_backward(backward_calls=1)
    assert_close(grads[0], grads[1])


@pytest.mark.parametrize("how", ["detach", "item", "float"])
def test_stop_gradients_use_the_compiled_backward(how):
    # detach() and numbers read from a tensor carry no gradient in eager:
    # the capture puts them behind a stop-gradient that kiln-autodiff
    # respects, so the backward is compiled and gives eager's gradients.
    w = torch.randn(4, requires_grad=True)

    def f(x):
        h = torch.tanh(x * w)
        if how == "detach":
            k = h.detach()
        elif how == "item":
            k = h.sum().item()
        else:
            k = float(h[0])
        return (h * k).sum() + (h.detach() * 0.0).sum() * (how == "detach")

    x = torch.randn(4)
    kiln.compile(f)(x).backward()
    got, w.grad = w.grad.clone(), None
    f(x).backward()
    assert_close(got, w.grad, rtol=1e-5, atol=1e-6)
    assert_compiled_backward()


def test_detached_result_has_no_grad_like_eager():
    w = torch.randn(4, requires_grad=True)

    def f(x):
        h = torch.sigmoid(x * w)
        return h.square().sum(), h.detach() * 2.0

    loss, d = kiln.compile(f)(torch.randn(4))
    assert loss.requires_grad and not d.requires_grad
    loss.backward()
    assert w.grad is not None
    assert_compiled_backward()


def test_parameter_updated_under_no_grad_keeps_the_eager_backward():
    # Eager's leaf updated in place under no_grad keeps requires_grad and
    # gets the gradient of its new value; kiln-autodiff has no such edge
    # (capture/ops/StopGradient.h, gradThrough): the eager recompute, which
    # updates the parameter once, as eager.
    p = torch.randn(4, requires_grad=True)
    pr = p.detach().clone().requires_grad_(True)

    def f(x, p):
        with torch.no_grad():
            p.mul_(0.5)
            p.add_(x)
        return (x * p).sum()

    x = torch.randn(4)
    kiln.compile(f)(x, p).backward()
    f(x, pr).backward()
    assert_close([p, p.grad], [pr, pr.grad])
    s = stats()
    assert s["compiled_backwards"] == 0 and s["eager_backwards"] == 1, s
    assert s["graph_breaks"] == 0, s


@pytest.mark.parametrize("update", ["mul_", "clamp_", "setitem"])
def test_activation_updated_under_no_grad_passes_the_gradient_straight_through(update):
    # Eager: `y` keeps its history; the gradient of its later uses reaches
    # `w` through it as if the update were not there. kiln differentiated
    # through the update (a 3x wrong gradient) before.
    def f(x, w):
        y = torch.exp(x) * w
        with torch.no_grad():
            if update == "mul_":
                y.mul_(3.0)
            elif update == "clamp_":
                y.clamp_(max=0.1)
            else:
                y[1:] = 0.0
        return (y * w).sum()

    x, w = torch.randn(4), torch.randn(4, requires_grad=True)
    wr = w.detach().clone().requires_grad_(True)
    kiln.compile(f)(x, w).backward()
    f(x, wr).backward()
    assert_close(w.grad, wr.grad)
    s = stats()
    assert s["eager_backwards"] == 1 and s["graph_breaks"] == 0, s


def test_saved_activation_updated_under_no_grad_raises_like_eager():
    def f(x, w):
        y = torch.tanh(x * w)  # tanh's backward reads y
        with torch.no_grad():
            y.copy_(x)
        return (y * y).sum()

    x, w = torch.randn(4), torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f(x, w.detach().clone().requires_grad_(True)).backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        kiln.compile(f)(x, w).backward()


def test_running_stats_write_back_with_compiled_backward():
    bn = nn.BatchNorm1d(3).train()
    ref = copy.deepcopy(bn)
    x = torch.randn(8, 3)
    kiln.compile(bn)(x).square().sum().backward()
    ref(x).square().sum().backward()
    assert_close([bn.weight.grad, bn.bias.grad], [ref.weight.grad, ref.bias.grad])
    assert_close([bn.running_mean, bn.running_var], [ref.running_mean, ref.running_var])
    assert bn.num_batches_tracked.item() == 1
    assert_compiled_backward()

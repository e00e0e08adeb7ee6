# SPDX-License-Identifier: Apache-2.0
"""Gradients at ties and zeros. Where a maximum/minimum's operands tie (kiln.tie_grad,
transforms/autodiff/NNGrads.cpp) match eager's backward: torch.maximum
splits the tie even against a constant, clamp keeps the gradient at its
bounds, hardtanh/relu6 give none, and the composed formulas of logsigmoid
and BCE-with-logits are smooth at 0. kiln gave 0 at x == 0 for logsigmoid and
BCE-with-logits: a zero-initialised classifier head got no gradient.
A norm or std that is 0 has gradient 0 (kiln.grad_at_zero on its sqrt), as
eager's backward masks it: an all-zero row gave NaN gradients through
norm, F.normalize and cosine_similarity, a constant row through std."""
import pytest
import torch
import torch.nn.functional as F

import kiln

CASES = {
    "logsigmoid": lambda x: F.logsigmoid(x).sum(),
    "bce_with_logits_t1": lambda x: F.binary_cross_entropy_with_logits(x, torch.ones(4)),
    "bce_with_logits_t0": lambda x: F.binary_cross_entropy_with_logits(x, torch.zeros(4)),
    "bce_with_logits_pos_weight": lambda x: F.binary_cross_entropy_with_logits(
        x, torch.tensor([1.0, 0.0, 1.0, 0.0]), pos_weight=torch.full((4,), 3.0)),
    "multilabel_soft_margin": lambda x: F.multilabel_soft_margin_loss(x[None], torch.ones(1, 4)),
    "maximum_zero": lambda x: torch.maximum(x, torch.zeros(())).sum(),
    "minimum_zero": lambda x: torch.minimum(x, torch.zeros(4)).sum(),
    "clamp_min": lambda x: x.clamp(min=0).sum(),
    "clamp_both": lambda x: x.clamp(-1, 0).sum(),
    "clamp_min_method": lambda x: x.clamp_min(0).sum(),
    "fmax": lambda x: torch.fmax(x, torch.zeros(4)).sum(),
    "relu6": lambda x: F.relu6(x).sum(),
    "hardtanh": lambda x: F.hardtanh(x, 0.0, 1.0).sum(),
    "relu": lambda x: F.relu(x).sum(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_at_ties_matches_eager(name):
    f = CASES[name]
    x = torch.tensor([0.0, 0.0, -1.0, 1.0])
    a = x.clone().requires_grad_()
    f(a).backward()
    b = x.clone().requires_grad_()
    kiln.compile(f)(b).backward()
    torch.testing.assert_close(b.grad, a.grad)
    assert kiln.stats()["compiled_backwards"] == 1, kiln.stats()


def test_tie_between_two_differentiable_operands():
    def f(x, y):
        return (torch.maximum(x, y) + x.clamp(min=y)).sum()

    x = torch.tensor([1.0, 2.0, 3.0])
    y = torch.tensor([1.0, 0.0, 4.0])
    xs = [x.clone().requires_grad_(), y.clone().requires_grad_()]
    f(*xs).backward()
    ks = [x.clone().requires_grad_(), y.clone().requires_grad_()]
    kiln.compile(f)(*ks).backward()
    for e, k in zip(xs, ks):
        torch.testing.assert_close(k.grad, e.grad)


ZERO_CASES = {
    "norm": lambda x: x.norm(dim=1).sum(),
    "vector_norm": lambda x: torch.linalg.vector_norm(x, dim=1).sum(),
    "normalize": lambda x: F.normalize(x, dim=1).sum(),
    "cosine_similarity": lambda x: F.cosine_similarity(x, torch.ones_like(x)).sum(),
    "std": lambda x: x.std(1).sum(),
}


@pytest.mark.parametrize("name", sorted(ZERO_CASES))
def test_gradient_at_a_zero_norm_matches_eager(name):
    f = ZERO_CASES[name]
    rows = [[1.0, 1.0], [1.0, 3.0]] if name == "std" else [[0.0, 0.0], [3.0, 4.0]]
    a = torch.tensor(rows, requires_grad=True)
    f(a).backward()
    b = torch.tensor(rows, requires_grad=True)
    kiln.compile(f)(b).backward()
    assert b.grad.isfinite().all()
    torch.testing.assert_close(b.grad, a.grad)


def test_sign_result_requires_grad_with_zero_gradient():
    # Eager's sign has a zero gradient: its result requires grad and a loss
    # made only of it backpropagates zeros (kiln's result had no grad, so
    # backward raised); values at ±0, NaN and infinities are eager's.
    def f(x):
        return (x.sign() * 2).sum(), torch.sign(x)

    x = torch.tensor([float("nan"), -0.0, 0.0, 2.0, -3.0, float("inf"), float("-inf")])
    results = []
    for fn in (f, kiln.compile(f)):
        xi = x.clone().requires_grad_(True)
        loss, s = fn(xi)
        assert loss.requires_grad and s.requires_grad
        loss.backward()
        results.append((s.detach(), torch.signbit(s.detach()), xi.grad))
    for e, k in zip(*results):
        assert torch.equal(e, k), (e, k)


SATURATING = {
    "softplus": torch.nn.Softplus(),
    "softplus_beta": torch.nn.Softplus(beta=2.0, threshold=10.0),
    "mish": torch.nn.Mish(),
    "elu": torch.nn.ELU(alpha=1.0),
    "celu": torch.nn.CELU(alpha=0.5),
    "selu": torch.nn.SELU(),
}


@pytest.mark.parametrize("name", sorted(SATURATING))
def test_activation_gradient_where_the_other_branch_overflows(name):
    """The branch a select does not take was still differentiated: exp of a
    float32 input >= 89 is inf and 0 * inf gave NaN gradients (softplus and
    mish above the threshold, the ELU family for large positive inputs)."""
    m = SATURATING[name]
    x = torch.tensor([-3.0, 0.0, 0.5, 10.0, 20.0, 89.0, 100.0, 1000.0])
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    m(a).sum().backward()
    kiln.compile(m)(b).sum().backward()
    torch.testing.assert_close(b.grad, a.grad)
    assert kiln.stats()["compiled_backwards"] == 1, kiln.stats()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_gradient_at_saturated_probabilities(dtype, weighted):
    """Eager's BCE backward is (p - t) / max(p (1 - p), 1e-12); kiln
    differentiated its clamped logs, NaN at p = 0 or 1 (sigmoid(z) is 1.0 in
    float32 from z of about 17: a GAN discriminator) and the unclamped
    gradient where p (1 - p) < 1e-12."""
    z = torch.tensor([-40.0, -30.0, -5.0, 0.0, 5.0, 18.0, 30.0, 40.0], dtype=dtype)
    t = torch.tensor([0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 0.0, 1.0], dtype=dtype)
    w = torch.linspace(0.5, 2.0, 8, dtype=dtype) if weighted else None

    def f(z, t):
        return F.binary_cross_entropy(torch.sigmoid(z), t, weight=w)

    grads = []
    for fn in (f, kiln.compile(f)):
        a, b = z.clone().requires_grad_(), t.clone().requires_grad_()
        loss = fn(a, b)
        loss.backward()
        grads.append((loss.detach(), a.grad, b.grad))
    for got, want in zip(grads[1][:2], grads[0][:2]):
        torch.testing.assert_close(got, want)
    # The target's gradient -logit(p) is -inf in eager where p is exactly 1
    # (kiln: the clamped logs' -100 difference); elsewhere equal.
    finite = torch.isfinite(grads[0][2])
    torch.testing.assert_close(grads[1][2][finite], grads[0][2][finite])
    assert kiln.stats()["compiled_backwards"] == 1, kiln.stats()
    p = torch.tensor([0.0, 0.3, 1.0], dtype=dtype, requires_grad=True)
    kiln.compile(F.binary_cross_entropy)(p, torch.tensor([0.0, 1.0, 1.0], dtype=dtype)).backward()
    assert torch.isfinite(p.grad).all(), p.grad
